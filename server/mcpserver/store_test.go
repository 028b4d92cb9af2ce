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
