package httpapi_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/server/httpapi"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/store/sqlitestore"
)

// TestServe_AllZeroWeightsRefused checks that a recall whose weights would
// all be 0 (per request or by a settings change) is a 400 naming the
// weights, not a 200 with no results.
func TestServe_AllZeroWeightsRefused(t *testing.T) {
	b := setup(t, opts{})
	b.create(b.alice, map[string]any{"content": "alpha beta"})
	for name, body := range map[string]map[string]any{
		"weights":  {"query": "alpha", "weights": map[string]float64{"lexical": 0, "dense": 0, "recency": 0, "access": 0}},
		"settings": {"query": "alpha", "settings": map[string]any{"keyword_weight": 0, "semantic_weight": 0}},
		"both":     {"query": "alpha", "weights": map[string]float64{"lexical": 0}, "settings": map[string]any{"semantic_weight": 0}},
	} {
		r := b.do("POST", "/v1/recall", b.alice, body)
		if msg := r.errMsg(t); r.status != 400 || !strings.Contains(msg, "weights") || !strings.Contains(msg, "all 0") {
			t.Errorf("recall with all-zero %s: %d %s", name, r.status, r.body)
		}
	}
	r := b.do("PATCH", "/v1/settings", b.alice, map[string]any{"keyword_weight": 0, "semantic_weight": 0})
	if msg := r.errMsg(t); r.status != 400 || !strings.Contains(msg, "weights") {
		t.Errorf("PATCH all-zero weights: %d %s", r.status, r.body)
	}
	// The single-leg searches zero the other legs, never their own.
	b.must(200, "GET", "/v1/search/lexical?q=alpha", b.alice, nil, nil)
}

// TestServe_InvalidUTF8Refused checks that invalid UTF-8 anywhere in a
// request (a body's strings and keys, a path id, a query parameter, an MCP
// call) is a 400 naming the field, never text stored with U+FFFD.
func TestServe_InvalidUTF8Refused(t *testing.T) {
	b := setup(t, opts{})
	id := b.create(b.alice, map[string]any{"content": "a fine memory"})
	for _, c := range []struct {
		name, method, path, body, want string
	}{
		{"content", "POST", "/v1/memories", "{\"content\":\"caf\xe9\"}", "content is not valid UTF-8"},
		{"batch", "POST", "/v1/memories", "{\"memories\":[{\"content\":\"ok\"},{\"content\":\"\xff\"}]}", "memories[1].content is not valid UTF-8"},
		{"metadata value", "POST", "/v1/memories", "{\"content\":\"ok\",\"metadata\":{\"note\":\"\xc3\"}}", "metadata.note is not valid UTF-8"},
		{"metadata key", "POST", "/v1/memories", "{\"content\":\"ok\",\"metadata\":{\"\xff\":1}}", "a key of metadata is not valid UTF-8"},
		{"id", "POST", "/v1/memories", "{\"id\":\"\xff\",\"content\":\"ok\"}", "id is not valid UTF-8"},
		{"patch", "PATCH", "/v1/memories/" + id, "{\"session\":\"\xff\"}", "session is not valid UTF-8"},
		{"recall query", "POST", "/v1/recall", "{\"query\":\"\xff\"}", "query is not valid UTF-8"},
		{"recall sessions", "POST", "/v1/recall", "{\"query\":\"ok\",\"sessions\":[\"\xff\"]}", "sessions[0] is not valid UTF-8"},
		{"settings", "PATCH", "/v1/settings", "{\"strategy\":\"\xff\"}", "strategy is not valid UTF-8"},
		{"path id", "GET", "/v1/memories/%FF", "", "id is not valid UTF-8"},
		{"delete path id", "DELETE", "/v1/memories/a%FF", "", "id is not valid UTF-8"},
		{"search q", "GET", "/v1/search/lexical?q=%FF", "", "query parameter q is not valid UTF-8"},
		{"list session", "GET", "/v1/memories?session=%C3", "", "query parameter session is not valid UTF-8"},
		{"not JSON", "POST", "/v1/recall", "\xff", "request body is not valid UTF-8"},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		r := b.do(c.method, c.path, b.alice, body)
		if r.status != 400 || !strings.Contains(r.errMsg(t), c.want) {
			t.Errorf("%s: %d %s, want 400 with %q", c.name, r.status, r.body, c.want)
		}
	}
	var page struct {
		Memories []struct{ ID, Content, Session string }
	}
	b.must(200, "GET", "/v1/memories", b.alice, nil, &page)
	if len(page.Memories) != 1 || page.Memories[0].Session != "" {
		t.Errorf("refused requests wrote something: %+v", page.Memories)
	}

	// MCP: the JSON-RPC body is checked before the SDK decodes it.
	r := b.do("POST", "/mcp", b.alice, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"memory_store\",\"arguments\":{\"content\":\"\xff\"}}}")
	if r.status != 400 || !strings.Contains(r.errMsg(t), "params.arguments.content is not valid UTF-8") {
		t.Errorf("MCP call with invalid UTF-8: %d %s", r.status, r.body)
	}
}

// TestServe_BodyWithoutContentType checks that every route reading a body
// answers 415 to one sent without a Content-Type, writing nothing.
func TestServe_BodyWithoutContentType(t *testing.T) {
	b := setup(t, opts{})
	id := b.create(b.alice, map[string]any{"content": "a fine memory"})
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/memories", `{"content": "no content type"}`},
		{"PATCH", "/v1/memories/" + id, `{"importance": 1}`},
		{"POST", "/v1/recall", `{"query": "memory"}`},
		{"PATCH", "/v1/settings", `{"keyword_weight": 2}`},
	} {
		req, err := http.NewRequestWithContext(t.Context(), c.method, b.ts.URL+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+b.alice)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != 415 || !strings.Contains(string(body), "Content-Type is missing") {
			t.Errorf("%s %s without Content-Type: %d %s", c.method, c.path, res.StatusCode, body)
		}
	}
	var set struct {
		KeywordWeight float64 `json:"keyword_weight"`
	}
	b.must(200, "GET", "/v1/settings", b.alice, nil, &set)
	var page struct {
		Memories []struct{ Importance float64 }
	}
	b.must(200, "GET", "/v1/memories", b.alice, nil, &page)
	if set.KeywordWeight != 1 || len(page.Memories) != 1 || page.Memories[0].Importance != 0.5 {
		t.Errorf("requests without Content-Type changed something: %+v %+v", set, page)
	}
}

// fullStore is the SQLite store answering every write as a full disk does
// (SQLITE_FULL, mapped to ErrStorageFull) once Full is set.
type fullStore struct {
	store.Store
	Full atomic.Bool
}

var errDiskFull = fmt.Errorf("%w: database or disk is full (/srv/mnemo/mnemo.db)", mnemotype.ErrStorageFull)

func (f *fullStore) Insert(ctx context.Context, mems []mnemotype.Memory) error {
	if f.Full.Load() {
		return fmt.Errorf("insert memories: %w", errDiskFull)
	}
	return f.Store.Insert(ctx, mems)
}

func (f *fullStore) Update(ctx context.Context, p store.UpdateParams) (mnemotype.Memory, error) {
	if f.Full.Load() {
		return mnemotype.Memory{}, fmt.Errorf("update memory %s: %w", p.ID, errDiskFull)
	}
	return f.Store.Update(ctx, p)
}

func (f *fullStore) SetSettings(ctx context.Context, profile string, kv map[string]string) error {
	if f.Full.Load() {
		return fmt.Errorf("set settings: %w", errDiskFull)
	}
	return f.Store.SetSettings(ctx, profile, kv)
}

// TestServe_StorageFull checks that a write refused by a full disk is a 507
// with a stable message (the details only in the log), for every route
// that writes.
func TestServe_StorageFull(t *testing.T) {
	t.Parallel()
	st, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "mnemo.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fs := &fullStore{Store: st}
	e, err := mnemo.Open("", &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), Store: fs, AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	var logs bytes.Buffer
	var mu sync.Mutex
	srv, err := httpapi.New(httpapi.Config{Engine: e, Logger: slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	b := &bundle{t: t, e: e, srv: srv, ts: ts}
	id := b.create("", map[string]any{"content": "written before the disk filled"})
	fs.Full.Store(true)
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/memories", map[string]any{"content": "one more"}},
		{"POST", "/v1/memories", map[string]any{"memories": []map[string]any{{"content": "a"}, {"content": "b"}}}},
		{"PATCH", "/v1/memories/" + id, map[string]any{"importance": 1}},
		{"PATCH", "/v1/settings", map[string]any{"keyword_weight": 2}},
	} {
		r := b.do(c.method, c.path, "", c.body)
		var eb struct{ Error, Code string }
		r.json(t, &eb)
		if r.status != 507 || eb.Code != "storage_full" || eb.Error != "storage full: nothing was written" {
			t.Errorf("%s %s on a full disk: %d %s", c.method, c.path, r.status, r.body)
		}
	}
	mu.Lock()
	l := logs.String()
	mu.Unlock()
	if !strings.Contains(l, "/srv/mnemo/mnemo.db") {
		t.Errorf("the log lacks the storage error:\n%s", l)
	}
	fs.Full.Store(false)
	var page struct {
		Memories []struct{ Importance float64 }
	}
	b.must(200, "GET", "/v1/memories", "", nil, &page)
	if len(page.Memories) != 1 || page.Memories[0].Importance != 0.5 {
		t.Errorf("memories after the refused writes: %+v", page.Memories)
	}
}

// writerFunc adapts a function to io.Writer.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestServe_MetricsNeedAnAdminKey checks that once keys are required,
// /metrics (server-wide counts) answers only an admin key — 401 without a
// key, 403 to a profile key — and that an admin key acts on no profile's
// memories, over HTTP or MCP; in single-user mode /metrics stays open on
// loopback.
func TestServe_MetricsNeedAnAdminKey(t *testing.T) {
	b := setup(t, opts{})
	admin, _, err := b.e.CreateAdminKey(t.Context(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	b.create(b.alice, map[string]any{"content": "alice's memory"})
	b.create(b.bob, map[string]any{"content": "bob's memory"})

	r := b.do("GET", "/metrics", "", nil)
	if msg := r.errMsg(t); r.status != 401 || !strings.Contains(msg, "keys create --admin") {
		t.Errorf("/metrics without a key: %d %s", r.status, r.body)
	}
	r = b.do("GET", "/metrics", b.alice, nil)
	if msg := r.errMsg(t); r.status != 403 || !strings.Contains(msg, "admin key") {
		t.Errorf("/metrics with a profile key: %d %s", r.status, r.body)
	}
	r = b.must(200, "GET", "/metrics", admin, nil, nil)
	if !strings.Contains(string(r.body), "\nmnemo_memories 2\n") || !strings.Contains(string(r.body), "\nmnemo_api_keys 3\n") {
		t.Errorf("/metrics with the admin key:\n%s", r.body)
	}

	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/memories", nil},
		{"POST", "/v1/memories", map[string]any{"content": "written by an admin"}},
		{"POST", "/v1/recall", map[string]any{"query": "memory"}},
		{"GET", "/v1/search/lexical?q=memory", nil},
		{"GET", "/v1/settings", nil},
		{"PATCH", "/v1/settings", map[string]any{"keyword_weight": 2}},
		{"POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`},
	} {
		r := b.do(c.method, c.path, admin, c.body)
		if msg := r.errMsg(t); r.status != 403 || !strings.Contains(msg, "profile key") {
			t.Errorf("%s %s with the admin key: %d %s", c.method, c.path, r.status, r.body)
		}
	}
	if n, _ := b.e.Count(t.Context(), ""); n != 0 {
		t.Errorf("the admin key wrote %d memories", n)
	}

	t.Run("SingleUser", func(t *testing.T) {
		single := setup(t, opts{singleUser: true})
		single.must(200, "GET", "/metrics", "", nil, nil)
		req, _ := http.NewRequestWithContext(t.Context(), "GET", single.ts.URL+"/metrics", nil)
		req.Host = "evil.example"
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 403 {
			t.Errorf("single-user /metrics for a foreign Host: %d", res.StatusCode)
		}
	})
}

// TestServe_RevokingTheLastKeyKeepsKeysMode checks that a server whose
// keys are all revoked keeps requiring keys (revoked keys count), unless
// IgnoreRevokedKeys asks for single-user mode back.
func TestServe_RevokingTheLastKeyKeepsKeysMode(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		t.Run(fmt.Sprintf("IgnoreRevokedKeys=%v", ignore), func(t *testing.T) {
			b := setup(t, opts{singleUser: true, cfg: func(c *httpapi.Config) { c.IgnoreRevokedKeys = ignore }})
			_, k, err := b.e.CreateKey(t.Context(), "me", "")
			if err != nil {
				t.Fatal(err)
			}
			waitStatus(t, b, 401) // the new key is noticed
			if err := b.e.RevokeKey(t.Context(), k.ID); err != nil {
				t.Fatal(err)
			}
			if ignore {
				waitStatus(t, b, 200)
				return
			}
			// Longer than the server reuses its answer to "do keys exist?".
			for end := time.Now().Add(2500 * time.Millisecond); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
				if r := b.do("GET", "/v1/settings", "", nil); r.status != 401 {
					t.Fatalf("served without a key after the last key was revoked: %d %s", r.status, r.body)
				}
			}
		})
	}
}

// waitStatus polls GET /v1/settings without a key until it answers status.
func waitStatus(t *testing.T, b *bundle, status int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := b.do("GET", "/v1/settings", "", nil)
		if r.status == status {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET /v1/settings without a key: %d, want %d", r.status, status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
