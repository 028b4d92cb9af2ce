package mnemo_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/embed/openai"
	"github.com/mnemo-dev/mnemo/internal/fakeprovider"
)

// hungEngine opens an engine whose embedder is the real OpenAI client (its
// default timeout and retries) on a fake provider that accepts requests and
// never answers; the engine's embedding deadlines are the defaults.
func hungEngine(t *testing.T) (*mnemo.Engine, *fakeprovider.Server) {
	t.Helper()
	fake := fakeprovider.New(t, 16)
	fake.Set(fakeprovider.Hang)
	emb, err := openai.New(openai.Config{Model: "test-model", BaseURL: fake.URL, Dimensions: 16})
	if err != nil {
		t.Fatal(err)
	}
	return openAt(t, filepath.Join(t.TempDir(), "mnemo.db"), emb), fake
}

// within runs f and fails the test if it has not returned after d. f keeps
// running in the background then (the fake provider releases it when the
// test ends).
func within(t *testing.T, d time.Duration, what string, f func()) time.Duration {
	t.Helper()
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		return time.Since(start)
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
		return 0
	}
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not the case after 10s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestEngine_RememberWithHungEmbedder: a provider that never answers holds a
// write up for about WriteEmbedTimeout, not for the client's 30 s per
// attempt and its retries; the memory is stored without an embedding, the
// provider's request is cancelled (no request is left waiting), and Reembed
// embeds the memory once the provider answers again.
func TestEngine_RememberWithHungEmbedder(t *testing.T) {
	t.Parallel()
	e, fake := hungEngine(t)
	ctx := t.Context()
	var m mnemo.Memory
	var err error
	took := within(t, 5*time.Second, "Remember", func() {
		m, err = e.Remember(ctx, mnemo.Input{Profile: "me", Content: "stored while the provider hangs"})
	})
	if err != nil {
		t.Fatalf("Remember: %v", err)
	}
	t.Logf("Remember returned after %v", took)
	if m.EmbeddingModel != "" || len(m.Embedding) != 0 {
		t.Errorf("memory stored with model %q while the provider hangs", m.EmbeddingModel)
	}
	got, err := e.Get(ctx, "me", m.ID)
	if err != nil || got.Content != m.Content || got.EmbeddingModel != "" {
		t.Fatalf("Get after a hung embedding: %+v, %v", got, err)
	}
	waitFor(t, "the hung provider request is abandoned", func() bool { return fake.Abandoned() == 1 && fake.Hung() == 0 })

	fake.Set(fakeprovider.OK)
	st, err := e.Reembed(ctx, mnemo.ReembedParams{Profile: "me"})
	if err != nil || st.Embedded != 1 {
		t.Fatalf("Reembed once the provider answers: %+v, %v", st, err)
	}
	if got, _ := e.Get(ctx, "me", m.ID); got.EmbeddingModel != "openai:test-model" {
		t.Errorf("after Reembed the memory's model is %q", got.EmbeddingModel)
	}
}

// TestEngine_UpdateWithHungEmbedder: a new content is stored after the
// write deadline without an embedding (never with the old text's vector).
func TestEngine_UpdateWithHungEmbedder(t *testing.T) {
	t.Parallel()
	e, fake := hungEngine(t)
	fake.Set(fakeprovider.OK)
	m := remember(t, e, mnemo.Input{Profile: "me", Content: "the old text"})
	if m.EmbeddingModel == "" {
		t.Fatal("memory not embedded while the provider answers")
	}
	fake.Set(fakeprovider.Hang)
	var got mnemo.Memory
	var err error
	within(t, 5*time.Second, "Update", func() {
		got, err = e.Update(t.Context(), "me", m.ID, mnemo.Patch{Content: ptr("the new text")})
	})
	if err != nil || got.Content != "the new text" || got.EmbeddingModel != "" {
		t.Fatalf("Update with a hung provider: %+v, %v", got, err)
	}
}

// TestEngine_RecallWithHungEmbedder: the query's embedding is given up after
// QueryEmbedTimeout; the other legs answer and the trace says why the dense
// leg is missing.
func TestEngine_RecallWithHungEmbedder(t *testing.T) {
	t.Parallel()
	e, fake := hungEngine(t)
	ctx := t.Context()
	fake.Set(fakeprovider.OK)
	want := remember(t, e, mnemo.Input{Profile: "me", Content: "the staging database lives on host db-7"})
	remember(t, e, mnemo.Input{Profile: "me", Content: "bought groceries for the weekend"})
	fake.Set(fakeprovider.Hang)

	var res *mnemo.RecallResult
	var err error
	took := within(t, 5*time.Second, "Recall", func() {
		res, err = e.Recall(ctx, mnemo.Query{Profile: "me", Text: "which host runs the staging database", Trace: true})
	})
	if err != nil {
		t.Fatalf("Recall: %v", err)
	}
	t.Logf("Recall returned after %v", took)
	if len(res.Results) == 0 || res.Results[0].ID != want.ID || res.Results[0].Legs["lexical"].Rank != 1 {
		t.Fatalf("recall without the dense leg: %+v", res.Results)
	}
	if _, ok := res.Results[0].Legs["dense"]; ok && res.Results[0].Legs["dense"].Rank > 0 {
		t.Errorf("dense leg ranked a result although the query was not embedded: %+v", res.Results[0].Legs)
	}
	if why := res.Trace.Skipped["dense"]; !strings.Contains(why, "timed out after 1s") {
		t.Errorf("trace skipped.dense = %q, want it to say the query embedding timed out after 1s", why)
	}
	waitFor(t, "the hung provider request is abandoned", func() bool { return fake.Hung() == 0 })
}

// TestEngine_EmbedTimeouts: the deadlines are settings; a negative one
// waits for the caller's context, and Write reports the deferred
// embeddings.
func TestEngine_EmbedTimeouts(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	stub := newStub("stub", 8)
	slow := func(d time.Duration) func(context.Context, []string) ([][]float32, error) {
		return func(ctx context.Context, texts []string) ([][]float32, error) {
			select {
			case <-time.After(d):
				return stubVectors(texts, 8), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	stub.setEmbed(slow(300 * time.Millisecond))
	cases := []struct {
		name         string
		write, query time.Duration
		wantDeferred int
		wantSkipped  bool
	}{
		{"ShorterThanTheEmbedder", 50 * time.Millisecond, 50 * time.Millisecond, 1, true},
		{"LongerThanTheEmbedder", 5 * time.Second, 5 * time.Second, 0, false},
		{"Unbounded", -1, -1, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e, err := mnemo.Open(filepath.Join(t.TempDir(), "mnemo.db"), &mnemo.Config{Embedder: stub, AccessFlushInterval: -1,
				WriteEmbedTimeout: c.write, QueryEmbedTimeout: c.query})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			res, err := e.Write(ctx, []mnemo.Input{{Profile: "me", Content: "kayaks on the lake"}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Deferred != c.wantDeferred || res.Created != 1 || (res.EmbedErr != nil) != (c.wantDeferred > 0) {
				t.Errorf("Write: deferred %d created %d err %v; want deferred %d", res.Deferred, res.Created, res.EmbedErr, c.wantDeferred)
			}
			if c.wantDeferred > 0 && !strings.Contains(res.EmbedErr.Error(), "timed out after 50ms") {
				t.Errorf("EmbedErr = %v, want it to name the deadline", res.EmbedErr)
			}
			rr, err := e.Recall(ctx, mnemo.Query{Profile: "me", Text: "kayaks", Trace: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, skipped := rr.Trace.Skipped["dense"]; skipped != c.wantSkipped {
				t.Errorf("skipped = %v, want dense skipped %v", rr.Trace.Skipped, c.wantSkipped)
			}
		})
	}
}

// stubVectors embeds texts with the hashing embedder.
func stubVectors(texts []string, dim int) [][]float32 {
	vecs, _ := embed.NewHash(dim).Embed(context.Background(), texts)
	return vecs
}

// TestEngine_WithOpenBreaker: once the breaker in front of a hung provider
// opens, writes store without an embedding and recalls skip the dense leg
// at once, the trace saying the embedder is unavailable; when a probe sees
// the provider answer, writes are embedded again.
func TestEngine_WithOpenBreaker(t *testing.T) {
	t.Parallel()
	fake := fakeprovider.New(t, 16)
	fake.Set(fakeprovider.Hang)
	emb, err := openai.New(openai.Config{Model: "test-model", BaseURL: fake.URL, Dimensions: 16})
	if err != nil {
		t.Fatal(err)
	}
	b := embed.NewBreaker(emb, &embed.BreakerConfig{MinProbeInterval: 50 * time.Millisecond, ProbeTimeout: 200 * time.Millisecond})
	defer b.Close()
	e, err := mnemo.Open(filepath.Join(t.TempDir(), "mnemo.db"), &mnemo.Config{Embedder: b, AccessFlushInterval: -1,
		WriteEmbedTimeout: 100 * time.Millisecond, QueryEmbedTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := t.Context()
	for i := range embed.DefaultBreakerFailures {
		res, err := e.Write(ctx, []mnemo.Input{{Profile: "me", Content: fmt.Sprintf("memory %d about kayaks", i)}})
		if err != nil || res.Deferred != 1 {
			t.Fatalf("write %d: %+v, %v", i, res, err)
		}
	}
	if !b.State().Open {
		t.Fatal("breaker closed after three timed-out writes")
	}
	sent := fake.Requests() - fake.Seen(embed.DefaultProbeText)
	res, err := e.Write(ctx, []mnemo.Input{{Profile: "me", Content: "written while the circuit is open"}})
	if err != nil || res.Deferred != 1 || !errors.Is(res.EmbedErr, embed.ErrUnavailable) {
		t.Fatalf("write while open: %+v, %v", res, err)
	}
	rr, err := e.Recall(ctx, mnemo.Query{Profile: "me", Text: "kayaks", Trace: true})
	if err != nil || len(rr.Results) == 0 {
		t.Fatalf("recall while open: %+v, %v", rr, err)
	}
	if why := rr.Trace.Skipped["dense"]; !strings.Contains(why, "embedder unavailable") || !strings.Contains(why, "circuit open since") {
		t.Errorf("skipped.dense = %q, want it to say the circuit is open", why)
	}
	if n := fake.Requests() - fake.Seen(embed.DefaultProbeText); n != sent {
		t.Errorf("%d calls reached the provider while the circuit was open", n-sent)
	}
	fake.Set(fakeprovider.OK)
	waitFor(t, "a probe closes the circuit", func() bool { return !b.State().Open })
	if res, err := e.Write(ctx, []mnemo.Input{{Profile: "me", Content: "written after recovery"}}); err != nil || res.Deferred != 0 {
		t.Fatalf("write after recovery: %+v, %v", res, err)
	}
}
