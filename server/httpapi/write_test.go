package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed/openai"
	"github.com/mnemo-dev/mnemo/internal/fakeprovider"
	"github.com/mnemo-dev/mnemo/server/httpapi"
)

// hungProvider makes the engine embed with the real OpenAI client (its
// default timeout and retries) on a fake provider that accepts requests
// and never answers.
func hungProvider(t *testing.T) (func(*mnemo.Config), *fakeprovider.Server) {
	fake := fakeprovider.New(t, 16)
	fake.Set(fakeprovider.Hang)
	emb, err := openai.New(openai.Config{Model: "test-model", BaseURL: fake.URL, Dimensions: 16})
	if err != nil {
		t.Fatal(err)
	}
	return func(c *mnemo.Config) { c.Embedder = emb }, fake
}

// timed runs f and fails the test if it took longer than d.
func timed(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	start := time.Now()
	f()
	if took := time.Since(start); took > d {
		t.Errorf("%s took %v, want at most %v", what, took, d)
	}
}

// TestServe_HungEmbedder: with a provider that never answers, a write is
// stored at once without an embedding (201, not 503 after the handler
// timeout) and says so; a recall answers from the other legs, its trace
// naming the timeout.
func TestServe_HungEmbedder(t *testing.T) {
	eng, _ := hungProvider(t)
	b := setup(t, opts{engine: eng})
	var created struct {
		ID                string
		EmbeddingDeferred bool `json:"embedding_deferred"`
	}
	timed(t, 5*time.Second, "POST /v1/memories", func() {
		b.must(201, "POST", "/v1/memories", b.alice, map[string]any{"content": "the staging database lives on host db-7"}, &created)
	})
	if created.ID == "" || !created.EmbeddingDeferred {
		t.Errorf("created %+v, want an id and embedding_deferred", created)
	}
	var m mnemo.Memory
	b.must(200, "GET", "/v1/memories/"+created.ID, b.alice, nil, &m)
	if m.EmbeddingModel != "" {
		t.Errorf("memory stored with model %q while the provider hangs", m.EmbeddingModel)
	}
	var batch struct {
		IDs               []string
		EmbeddingDeferred bool `json:"embedding_deferred"`
	}
	timed(t, 5*time.Second, "POST /v1/memories (batch)", func() {
		b.must(201, "POST", "/v1/memories", b.alice, map[string]any{"memories": []map[string]any{{"content": "a"}, {"content": "b"}}}, &batch)
	})
	if len(batch.IDs) != 2 || !batch.EmbeddingDeferred {
		t.Errorf("batch created %+v", batch)
	}

	var out recallOut
	timed(t, 5*time.Second, "POST /v1/recall", func() {
		b.must(200, "POST", "/v1/recall", b.alice, map[string]any{"query": "staging database host", "trace": true}, &out)
	})
	if len(out.Results) == 0 || out.Results[0].ID != created.ID || out.Trace == nil ||
		!strings.Contains(out.Trace.Skipped["dense"], "timed out after 1s") {
		t.Errorf("recall with a hung provider: %+v %+v", out.Results, out.Trace)
	}
}

// TestServe_HandlerTimeout: a request still waiting on a dependency when
// the handler timeout passes is answered 503 "timeout" then, and the wait
// is given up (the provider sees its request abandoned).
func TestServe_HandlerTimeout(t *testing.T) {
	hung, fake := hungProvider(t)
	b := setup(t, opts{
		engine: func(c *mnemo.Config) {
			hung(c)
			c.QueryEmbedTimeout, c.WriteEmbedTimeout = -1, -1 // as long as the request may take
		},
		cfg: func(c *httpapi.Config) { c.HandlerTimeout = 300 * time.Millisecond },
	})
	for _, req := range []struct {
		method, path string
		body         map[string]any
	}{
		{"POST", "/v1/recall", map[string]any{"query": "staging database"}},
		{"POST", "/v1/memories", map[string]any{"content": "the staging database lives on host db-7"}},
	} {
		var r resp
		timed(t, 5*time.Second, req.method+" "+req.path, func() { r = b.do(req.method, req.path, b.alice, req.body) })
		if r.status != 503 || !strings.Contains(string(r.body), `"code":"timeout"`) {
			t.Errorf("%s %s with a hung provider past the handler timeout: %d %s", req.method, req.path, r.status, r.body)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for fake.Abandoned() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := fake.Abandoned(); n < 2 {
		t.Errorf("the provider saw %d requests abandoned, want 2", n)
	}
	if n, err := b.e.Count(t.Context(), "alice"); err != nil || n != 0 {
		t.Errorf("Count = %d, %v after a write answered 503; want 0", n, err)
	}
}

// in returns b reporting to t (a subtest).
func (b *bundle) in(t *testing.T) *bundle {
	c := *b
	c.t = t
	return &c
}

// TestServe_IdempotentWrites: a POST retried with the same Idempotency-Key
// or the same id stores one memory and answers 200 with
// Idempotent-Replayed; the same key or id with another memory is 409.
func TestServe_IdempotentWrites(t *testing.T) {
	b := setup(t, opts{})
	withKey := func(k string) http.Header { return http.Header{"Idempotency-Key": {k}} }
	count := func(t *testing.T, profile string) int {
		t.Helper()
		n, err := b.e.Count(t.Context(), profile)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("IdempotencyKey", func(t *testing.T) {
		b := b.in(t)
		body := map[string]any{"content": "deployed v2.3", "session": "s1"}
		first := b.doWith("POST", "/v1/memories", b.alice, body, withKey("req-1"))
		if first.status != 201 || first.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("first POST: %d %v %s", first.status, first.header, first.body)
		}
		var a, c struct{ ID string }
		first.json(t, &a)
		for i := range 3 {
			again := b.doWith("POST", "/v1/memories", b.alice, body, withKey("req-1"))
			if again.status != 200 || again.header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("retry %d: %d %v %s", i, again.status, again.header, again.body)
			}
			again.json(t, &c)
			if c.ID != a.ID {
				t.Fatalf("retry %d answered id %s, first %s", i, c.ID, a.ID)
			}
		}
		if n := count(t, "alice"); n != 1 {
			t.Fatalf("%d memories after retries, want 1", n)
		}
		// The key is the profile's: bob's same key is another memory.
		b.must(201, "POST", "/v1/memories", b.bob, body, nil)
		r := b.doWith("POST", "/v1/memories", b.bob, body, withKey("req-1"))
		var bobs struct{ ID string }
		r.json(t, &bobs)
		if r.status != 201 || bobs.ID == a.ID {
			t.Errorf("bob's POST with alice's key: %d %s", r.status, r.body)
		}
		conflict := b.doWith("POST", "/v1/memories", b.alice, map[string]any{"content": "another text"}, withKey("req-1"))
		if conflict.status != 409 || !strings.Contains(conflict.errMsg(t), a.ID) || !strings.Contains(conflict.errMsg(t), "content") {
			t.Errorf("same key, other content: %d %s; want 409 naming the id and the field", conflict.status, conflict.body)
		}
		if n := count(t, "alice"); n != 1 {
			t.Errorf("the conflicting POST stored something: %d memories", n)
		}
	})

	t.Run("Batch", func(t *testing.T) {
		b := b.in(t)
		before := count(t, "alice")
		body := map[string]any{"memories": []map[string]any{{"content": "one"}, {"content": "two"}, {"id": "own-id", "content": "three"}}}
		var first, again struct{ IDs []string }
		b.must(201, "POST", "/v1/memories", b.alice, body, &first)
		// Without a key only the memory with its own id is recognised: the
		// others get new ids, so they are stored again.
		b.must(201, "POST", "/v1/memories", b.alice, body, &again)
		if again.IDs[2] != "own-id" || again.IDs[0] == first.IDs[0] {
			t.Errorf("the batch again without a key: ids %v, first %v", again.IDs, first.IDs)
		}
		r := b.doWith("POST", "/v1/memories", b.alice, map[string]any{"memories": []map[string]any{{"content": "four"}, {"content": "five"}}}, withKey("batch-1"))
		if r.status != 201 {
			t.Fatalf("batch with a key: %d %s", r.status, r.body)
		}
		r.json(t, &first)
		r = b.doWith("POST", "/v1/memories", b.alice, map[string]any{"memories": []map[string]any{{"content": "four"}, {"content": "five"}}}, withKey("batch-1"))
		if r.status != 200 || r.header.Get("Idempotent-Replayed") != "true" {
			t.Fatalf("batch retry: %d %v %s", r.status, r.header, r.body)
		}
		r.json(t, &again)
		if fmt.Sprint(first.IDs) != fmt.Sprint(again.IDs) || len(first.IDs) != 2 || first.IDs[0] == first.IDs[1] {
			t.Errorf("batch ids %v, retry's %v", first.IDs, again.IDs)
		}
		if n := count(t, "alice") - before; n != 7 {
			t.Errorf("%d memories stored, want 7 (3, 2 again, then 2 with a key)", n)
		}
	})

	t.Run("BodyID", func(t *testing.T) {
		b := b.in(t)
		body := map[string]any{"id": "client-1", "content": "bought groceries", "importance": 0.7}
		b.must(201, "POST", "/v1/memories", b.alice, body, nil)
		r := b.must(200, "POST", "/v1/memories", b.alice, body, nil)
		if r.header.Get("Idempotent-Replayed") != "true" || r.header.Get("Location") != "/v1/memories/client-1" {
			t.Errorf("retry by id: headers %v", r.header)
		}
		r = b.do("POST", "/v1/memories", b.alice, map[string]any{"id": "client-1", "content": "bought groceries", "importance": 0.9})
		if r.status != 409 || !strings.Contains(r.errMsg(t), `"client-1"`) || !strings.Contains(r.errMsg(t), "importance") {
			t.Errorf("same id, other importance: %d %s", r.status, r.body)
		}
		var e struct{ Code string }
		r.json(t, &e)
		if e.Code != "conflict" {
			t.Errorf("code %q, want conflict", e.Code)
		}
	})

	t.Run("BadKey", func(t *testing.T) {
		b := b.in(t)
		before := count(t, "alice")
		for name, h := range map[string]http.Header{
			"TooLong":  withKey(strings.Repeat("k", 256)),
			"Blank":    withKey("  "),
			"Twice":    {"Idempotency-Key": {"a", "b"}},
			"NotASCII": withKey("clé"),
		} {
			r := b.doWith("POST", "/v1/memories", b.alice, map[string]any{"content": "x"}, h)
			if r.status != 400 || !strings.Contains(r.errMsg(t), "Idempotency-Key") {
				t.Errorf("%s: %d %s; want 400 naming the header", name, r.status, r.body)
			}
		}
		if n := count(t, "alice"); n != before {
			t.Errorf("refused POSTs stored %d memories", n-before)
		}
	})
}

// TestServe_ContentLength: an answer longer than net/http's 2 KiB buffer
// says its length (it is not sent in chunks).
func TestServe_ContentLength(t *testing.T) {
	b := setup(t, opts{})
	var mems []map[string]any
	for i := range 20 {
		mems = append(mems, map[string]any{"content": fmt.Sprintf("the staging database number %d lives on host db-%d in the eastern rack", i, i)})
	}
	b.must(201, "POST", "/v1/memories", b.alice, map[string]any{"memories": mems}, nil)
	r := b.must(200, "POST", "/v1/recall", b.alice, map[string]any{"query": "staging database host", "limit": 20, "min_relevance": 0}, nil)
	if len(r.body) <= 2048 || r.header.Get("Content-Length") != fmt.Sprint(len(r.body)) {
		t.Errorf("an answer of %d bytes said Content-Length %q", len(r.body), r.header.Get("Content-Length"))
	}
}
