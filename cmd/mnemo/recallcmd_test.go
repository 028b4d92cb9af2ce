package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo"
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
	code, _, errs = c.run("", "settings", "set", "--profile", "me", "keyword_weight=0", "semantic_weight=0")
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

// TestAdd_ConversationFields: mnemo add --actor, --occurred-at and --seq
// store the fields; a bad value exits 2 naming the flag, storing nothing.
func TestAdd_ConversationFields(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	id := strings.TrimSpace(c.ok("add", "--profile", "me", "--session", "s1", "--actor", "Caroline", "--occurred-at", "2023-05-08", "--seq", "4", "I adopted a puppy"))
	var m struct {
		Actor      string `json:"actor"`
		Seq        int64  `json:"seq"`
		OccurredAt string `json:"occurred_at"`
	}
	if err := json.Unmarshal([]byte(c.ok("get", "--profile", "me", id)), &m); err != nil {
		t.Fatal(err)
	}
	if m.Actor != "Caroline" || m.Seq != 4 || m.OccurredAt != "2023-05-08T00:00:00Z" {
		t.Errorf("stored %+v", m)
	}
	for _, bad := range [][]string{
		{"--occurred-at", "last tuesday"},
		{"--occurred-at", "10000-01-01"},
		{"--seq", "-1"},
		{"--actor", strings.Repeat("a", 257)},
	} {
		field := strings.TrimPrefix(bad[0], "--")
		if field == "occurred-at" {
			field = "occurred"
		}
		args := append([]string{"add", "--profile", "me"}, bad...)
		if code, _, errs := c.run("", append(args, "text")...); code != 2 || !strings.Contains(errs, field) {
			t.Errorf("add %v: exit %d, %s; want 2 naming %s", bad, code, errs, field)
		}
	}
	if out := c.ok("recall", "--profile", "me", "--json", "text"); strings.Contains(out, `"content":"text"`) {
		t.Errorf("a refused add stored its memory: %s", out)
	}
}

// TestCLI_ContextTurns: a new database indexes each turn with the one
// before it (the answer is then in the lexical leg of a recall naming the
// question's words); --context-turns 0 turns that off, the number stays
// with the database, 1 turns it back on; a bad value exits 2 naming the
// flag or the variable.
func TestCLI_ContextTurns(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	lines := []string{
		`{"id":"q","text":"Will you come to the zumba lesson?","session":"s1","speaker":"Caroline"}`,
		`{"id":"a","text":"Sure, on Friday","session":"s1","speaker":"Melanie"}`,
	}
	c.ok("import", writeLines(t, lines), "--profile", "me")
	lexical := func(args ...string) []string {
		t.Helper()
		var out struct {
			Trace struct {
				Legs map[string][]mnemo.Hit `json:"legs"`
			}
		}
		if err := json.Unmarshal([]byte(c.ok(append([]string{"recall", "--profile", "me", "--json", "--trace"}, append(args, "zumba")...)...)), &out); err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, h := range out.Trace.Legs["lexical"] {
			ids = append(ids, h.ID)
		}
		return ids
	}
	for _, step := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"q", "a"}},
		{[]string{"--context-turns", "0"}, []string{"q"}},
		{nil, []string{"q"}},
		{[]string{"--context-turns", "1"}, []string{"q", "a"}},
	} {
		if got := lexical(step.args...); !slices.Equal(got, step.want) {
			t.Errorf("recall %v: lexical leg %v, want %v", step.args, got, step.want)
		}
	}
	for _, bad := range []string{"-1", "11", "one"} {
		if code, _, errs := c.run("", "recall", "--profile", "me", "--context-turns", bad, "zumba"); code != 2 || !strings.Contains(errs, "--context-turns") {
			t.Errorf("--context-turns %s: exit %d, %s", bad, code, errs)
		}
	}
	c.env["MNEMO_CONTEXT_TURNS"] = "x"
	if code, _, errs := c.run("", "recall", "--profile", "me", "zumba"); code != 2 || !strings.Contains(errs, "MNEMO_CONTEXT_TURNS") {
		t.Errorf("MNEMO_CONTEXT_TURNS=x: exit %d, %s", code, errs)
	}
}
