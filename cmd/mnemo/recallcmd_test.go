package main

import (
	"strings"
	"testing"
)

// TestRecall_AllZeroWeightsRefused checks that --weights leaving every leg
// at 0 exits 2 naming the weights instead of printing nothing.
func TestRecall_AllZeroWeightsRefused(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("add", "--profile", "me", "alpha beta")
	code, out, errs := c.run("", "recall", "--profile", "me", "--weights", "lexical=0,dense=0", "alpha")
	if code != 2 || !strings.Contains(errs, "weights") || !strings.Contains(errs, "all 0") {
		t.Errorf("recall --weights lexical=0,dense=0: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	code, _, errs = c.run("", "settings", "set", "--profile", "me", "keywordWeight=0", "semanticWeight=0")
	if code != 2 || !strings.Contains(errs, "weights") {
		t.Errorf("settings set with all-zero weights: exit %d, %s", code, errs)
	}
}
