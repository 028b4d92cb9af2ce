package main

import (
	"encoding/json"
	"slices"
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

// TestRecall_ActorAndTimeFilters: --actor, --after and --before restrict a
// recall to who said it and when it happened; a bad time exits 2 naming
// the flag.
func TestRecall_ActorAndTimeFilters(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	lines := []string{
		`{"id":"c1","text":"the walrus in May","speaker":"Caroline","timestamp":"2023-05-08T13:56:00Z"}`,
		`{"id":"c2","text":"the walrus in June","speaker":"Caroline","timestamp":"2023-06-08T13:56:00Z"}`,
		`{"id":"m1","text":"a walrus painting","speaker":"Melanie","timestamp":"2023-05-20T10:00:00Z"}`,
	}
	c.ok("import", writeLines(t, lines), "--profile", "me")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--actor", "Caroline"}, []string{"c1", "c2"}},
		{[]string{"--actor", "Melanie,Caroline", "--before", "2023-06-01"}, []string{"c1", "m1"}},
		{[]string{"--after", "2023-05-10", "--before", "2023-06-01T00:00:00Z"}, []string{"m1"}},
	} {
		var out struct{ Results []struct{ ID string } }
		args := append([]string{"recall", "--profile", "me", "--json"}, tc.args...)
		if err := json.Unmarshal([]byte(c.ok(append(args, "walrus")...)), &out); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range out.Results {
			got = append(got, r.ID)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%v: %v, want %v", tc.args, got, tc.want)
		}
	}
	if code, _, errs := c.run("", "recall", "--profile", "me", "--after", "last tuesday", "walrus"); code != 2 || !strings.Contains(errs, "--after") {
		t.Errorf("--after 'last tuesday': exit %d, %s", code, errs)
	}
	if code, _, errs := c.run("", "recall", "--profile", "me", "--after", "2023-06-01", "--before", "2023-05-01", "walrus"); code != 2 || !strings.Contains(errs, "after") {
		t.Errorf("an empty range: exit %d, %s", code, errs)
	}
}
