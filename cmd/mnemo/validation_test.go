package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// TestCLI_InvalidTextRefused checks that text that is not valid UTF-8 and
// ids that cannot name a memory exit 2 naming the field, writing nothing.
func TestCLI_InvalidTextRefused(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"add content", []string{"add", "--profile", "me", "caf\xe9"}, "content is not valid UTF-8"},
		{"add session", []string{"add", "--profile", "me", "--session", "\xff", "ok"}, "session is not valid UTF-8"},
		{"add metadata", []string{"add", "--profile", "me", "--metadata", "{\"k\":\"\xff\"}", "ok"}, "metadata is not valid UTF-8"},
		{"add id dot", []string{"add", "--profile", "me", "--id", ".", "ok"}, ". and .."},
		{"recall query", []string{"recall", "--profile", "me", "caf\xe9"}, "query is not valid UTF-8"},
		{"recall session", []string{"recall", "--profile", "me", "--session", "\xff", "ok"}, "sessions[0] is not valid UTF-8"},
		{"get id", []string{"get", "--profile", "me", "\xff"}, "id is not valid UTF-8"},
		{"delete id", []string{"delete", "--profile", "me", "\xff"}, "id is not valid UTF-8"},
	} {
		code, _, errs := c.run("", tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 with %q", tc.name, code, errs, tc.want)
		}
	}
	if out := c.ok("recall", "--profile", "me", "ok", "--json"); strings.Contains(out, `"id"`) {
		t.Errorf("refused commands wrote something: %s", out)
	}
}

// TestExitCode_StorageFull checks that a write refused by a full disk
// exits 1 with a message saying so and that nothing was written.
func TestExitCode_StorageFull(t *testing.T) {
	t.Parallel()
	var stderr strings.Builder
	err := fmt.Errorf("insert memories: %w", fmt.Errorf("%w: database or disk is full", mnemotype.ErrStorageFull))
	if code := exitCode(&stderr, "add", err); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if msg := stderr.String(); !strings.HasPrefix(msg, "mnemo add: storage full: nothing was written; free disk space") {
		t.Errorf("message %q", msg)
	}
}
