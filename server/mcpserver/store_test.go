package mcpserver_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed/openai"
	"github.com/mnemo-dev/mnemo/internal/fakeprovider"
	"github.com/mnemo-dev/mnemo/server/mcpserver"
)

// TestMCP_StoreWithHungEmbedder: against a provider that accepts requests
// and never answers (the real OpenAI client, its default timeout and
// retries), memory_store returns after the engine's write deadline with
// the memory stored without an embedding, and a client retrying it with an
// id or an idempotency_key leaves exactly one memory.
func TestMCP_StoreWithHungEmbedder(t *testing.T) {
	t.Parallel()
	fake := fakeprovider.New(t, 16)
	fake.Set(fakeprovider.Hang)
	emb, err := openai.New(openai.Config{Model: "test-model", BaseURL: fake.URL, Dimensions: 16})
	if err != nil {
		t.Fatal(err)
	}
	e, err := mnemo.Open(filepath.Join(t.TempDir(), "mnemo.db"), &mnemo.Config{Embedder: emb, AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	cs := connect(t, mcpserver.New(e, mcpserver.Fixed("alice"), nil))

	store := func(args map[string]any) (mcpserver.StoreOutput, string) {
		t.Helper()
		var out mcpserver.StoreOutput
		start := time.Now()
		res := call(t, cs, mcpserver.ToolStore, args, &out)
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("memory_store took %v", took)
		}
		if res.IsError {
			return out, "error: " + textOf(res)
		}
		return out, textOf(res)
	}

	first, txt := store(map[string]any{"content": "the deploy key rotates monthly", "idempotency_key": "call-1"})
	if first.ID == "" || first.Replayed || !first.EmbeddingDeferred {
		t.Fatalf("first store: %+v %q", first, txt)
	}
	for i := range 2 {
		again, txt := store(map[string]any{"content": "the deploy key rotates monthly", "idempotency_key": "call-1"})
		if again.ID != first.ID || !again.Replayed || !strings.Contains(txt, "already stored") {
			t.Fatalf("retry %d: %+v %q", i, again, txt)
		}
	}
	if _, txt := store(map[string]any{"content": "another text", "idempotency_key": "call-1"}); !strings.Contains(txt, "error: ") ||
		!strings.Contains(txt, first.ID) || !strings.Contains(txt, "content") {
		t.Errorf("same key, other content: %q; want an error naming the id and the field", txt)
	}

	byID, _ := store(map[string]any{"content": "standup moved to 10:00", "id": "note-7", "session": "s1"})
	again, _ := store(map[string]any{"content": "standup moved to 10:00", "id": "note-7", "session": "s1"})
	if byID.ID != "note-7" || byID.Replayed || again.ID != "note-7" || !again.Replayed {
		t.Errorf("store by id: %+v then %+v", byID, again)
	}
	if _, txt := store(map[string]any{"content": "standup moved to 10:00", "id": "note-7", "session": "s2"}); !strings.Contains(txt, "session") {
		t.Errorf("same id, other session: %q", txt)
	}

	if n, _ := e.Count(t.Context(), "alice"); n != 2 {
		t.Errorf("alice holds %d memories, want 2", n)
	}
	m, err := e.Get(t.Context(), "alice", first.ID)
	if err != nil || m.EmbeddingModel != "" {
		t.Errorf("stored memory %+v, %v; want it without an embedding", m, err)
	}
}

// TestMCP_ConversationFields: memory_store keeps actor, occurred_at and
// seq; memory_recall filters by actors, after and before and returns the
// fields; a time that is not RFC 3339 is refused naming the argument,
// with nothing stored.
func TestMCP_ConversationFields(t *testing.T) {
	t.Parallel()
	e := openEngine(t)
	cs := connect(t, mcpserver.New(e, mcpserver.Fixed("alice"), nil))
	var a, b mcpserver.StoreOutput
	call(t, cs, mcpserver.ToolStore, map[string]any{"content": "I adopted a puppy named Oscar", "session": "c1",
		"actor": "Caroline", "occurred_at": "2023-05-08T13:56:00Z"}, &a)
	call(t, cs, mcpserver.ToolStore, map[string]any{"content": "Oscar the puppy chewed my shoes", "session": "c1",
		"actor": "Melanie", "occurred_at": "2023-07-01T09:00:00Z", "seq": 5}, &b)
	m, err := e.Get(t.Context(), "alice", b.ID)
	if err != nil || m.Actor != "Melanie" || m.Seq != 5 || !m.OccurredAt.Equal(time.Date(2023, 7, 1, 9, 0, 0, 0, time.UTC)) {
		t.Fatalf("stored %+v, %v", m, err)
	}
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"actors": []string{"Caroline"}}, a.ID},
		{map[string]any{"after": "2023-06-01T00:00:00Z"}, b.ID},
		{map[string]any{"before": "2023-06-01T00:00:00Z"}, a.ID},
	} {
		c.args["query"] = "puppy Oscar"
		var out mcpserver.RecallOutput
		res := call(t, cs, mcpserver.ToolRecall, c.args, &out)
		if len(out.Results) != 1 || out.Results[0].ID != c.want {
			t.Errorf("recall %v = %+v, want only %s", c.args, out.Results, c.want)
			continue
		}
		if r := out.Results[0]; r.Actor == "" || r.OccurredAt.IsZero() || r.Seq == 0 || !strings.Contains(textOf(res), "by "+r.Actor) {
			t.Errorf("recall result %+v, text %q: want its actor, time and seq", r, textOf(res))
		}
	}
	for _, c := range []struct {
		tool  string
		args  map[string]any
		field string
	}{
		{mcpserver.ToolStore, map[string]any{"content": "x", "occurred_at": "May 2023"}, "occurred_at"},
		{mcpserver.ToolStore, map[string]any{"content": "x", "occurred_at": "0000-01-01T00:00:00Z"}, "occurred_at"},
		{mcpserver.ToolStore, map[string]any{"content": "x", "actor": strings.Repeat("a", 300)}, "actor"},
		{mcpserver.ToolRecall, map[string]any{"query": "x", "after": "yesterday"}, "after"},
	} {
		res := call(t, cs, c.tool, c.args, nil)
		if !res.IsError || !strings.Contains(textOf(res), c.field) {
			t.Errorf("%s %v: %q, want an error naming %s", c.tool, c.args, textOf(res), c.field)
		}
	}
	if n, _ := e.Count(t.Context(), "alice"); n != 2 {
		t.Errorf("alice holds %d memories, want 2", n)
	}
}
