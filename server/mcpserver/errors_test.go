package mcpserver_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/internal/testenv"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/server/mcpserver"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/store/sqlitestore"
)

// failingStore is the SQLite store with Insert and Lexical failing as
// InsertErr and LexicalErr say (when set).
type failingStore struct {
	store.Store
	InsertErr, LexicalErr error
}

func (f *failingStore) Insert(ctx context.Context, mems []mnemotype.Memory) error {
	if f.InsertErr != nil {
		return f.InsertErr
	}
	return f.Store.Insert(ctx, mems)
}

func (f *failingStore) Lexical(ctx context.Context, p store.LexicalParams) ([]mnemotype.Hit, error) {
	if f.LexicalErr != nil {
		return nil, f.LexicalErr
	}
	return f.Store.Lexical(ctx, p)
}

// TestTools_StableErrorMessages checks that a tool call failing inside the
// engine shows the client a stable message, never the internal error's
// text, which goes to the log; a full disk and validation errors keep
// messages of their own.
func TestTools_StableErrorMessages(t *testing.T) {
	t.Parallel()
	st, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "mnemo.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	secret := errors.New("disk I/O error reading /var/lib/secret/mnemo.db page 4711")
	fs := &failingStore{Store: st, InsertErr: fmt.Errorf("insert memories: %w", secret), LexicalErr: secret}
	// The lexical leg in the store, whose failure this test injects.
	e, err := mnemo.Open("", &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), Store: fs, AccessFlushInterval: -1, LexicalInStore: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	var logs testenv.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	cs := connect(t, mcpserver.New(e, mcpserver.Fixed("me"), &mcpserver.Options{Logger: log}))

	for _, tool := range []struct {
		name string
		args map[string]any
	}{
		{mcpserver.ToolStore, map[string]any{"content": "a memory"}},
		{mcpserver.ToolRecall, map[string]any{"query": "memory"}},
	} {
		res := call(t, cs, tool.name, tool.args, nil)
		if msg := textOf(res); !res.IsError || msg != "internal error (see server log)" {
			t.Errorf("%s: IsError %v, message %q", tool.name, res.IsError, msg)
		}
	}
	if l := logs.String(); !strings.Contains(l, "page 4711") || !strings.Contains(l, "tool="+mcpserver.ToolStore) ||
		!strings.Contains(l, "tool="+mcpserver.ToolRecall) {
		t.Errorf("the log lacks the internal errors:\n%s", l)
	}

	fs.InsertErr = fmt.Errorf("insert memories: %w", mnemotype.ErrStorageFull)
	res := call(t, cs, mcpserver.ToolStore, map[string]any{"content": "a memory"}, nil)
	if msg := textOf(res); !res.IsError || msg != "storage full: nothing was written" {
		t.Errorf("storage full: IsError %v, message %q", res.IsError, msg)
	}
	res = call(t, cs, mcpserver.ToolStore, map[string]any{"content": "x", "importance": 3}, nil)
	if msg := textOf(res); !res.IsError || !strings.Contains(msg, "importance") || strings.Contains(msg, "invalid input") {
		t.Errorf("validation error: IsError %v, message %q", res.IsError, msg)
	}
}
