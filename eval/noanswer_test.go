package eval

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// TestNoAnswerQueries: reproducible by seed; a quarter made-up words; the
// rest judged non-adversarial questions asked in another scope than their
// own; no relevant ids.
func TestNoAnswerQueries(t *testing.T) {
	t.Parallel()
	ds := loadTiny(t)
	own := map[string]string{}
	for _, q := range ds.Judged() {
		own[q.Text] = q.Scope
	}
	qs := NoAnswerQueries(ds, 8, 1)
	if !reflect.DeepEqual(qs, NoAnswerQueries(ds, 8, 1)) {
		t.Fatal("not reproducible for a seed")
	}
	if reflect.DeepEqual(qs, NoAnswerQueries(ds, 8, 2)) {
		t.Error("the seed changes nothing")
	}
	kinds := map[string]int{}
	for _, q := range qs {
		kinds[q.Category]++
		if len(q.Relevant) != 0 || q.Scope == "" {
			t.Errorf("%+v: want a scope and no relevant ids", q)
		}
		if q.Category == NoAnswerOther && (own[q.Text] == "" || own[q.Text] == q.Scope) {
			t.Errorf("%+v asked in its own scope %q", q, own[q.Text])
		}
	}
	// The tiny dataset has 5 judged non-adversarial questions, fewer than
	// the 6 asked for: made-up words make up the rest.
	if len(qs) != 8 || kinds[NoAnswerNonsense] != 3 || kinds[NoAnswerOther] != 5 {
		t.Errorf("kinds = %v, want 3 nonsense and every one of the 5 other-scope questions", kinds)
	}
}

// TestRun_NoAnswer: every configuration answers the no-answer queries, and
// the reports show the share answered with nothing.
func TestRun_NoAnswer(t *testing.T) {
	t.Parallel()
	o := tinyOptions(t)
	o.NoAnswer = 8
	o.Configs = []Config{mustConfig(t, "default"), mustConfig(t, "nofloor=min_relevance=0")}
	o.Baseline = "nofloor"
	rep, err := Run(t.Context(), loadTiny(t), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rep.Configs {
		if c.NoAnswer == nil || c.NoAnswer.N != 8 || c.NoAnswer.ByKind[NoAnswerNonsense].N != 3 {
			t.Fatalf("%s: no-answer result %+v", c.Name, c.NoAnswer)
		}
	}
	def, nofloor := configByName(t, rep, "default"), configByName(t, rep, "nofloor")
	if def.NoAnswer.Empty < nofloor.NoAnswer.Empty {
		t.Errorf("the floor answers fewer no-answer queries with nothing: %v < %v", def.NoAnswer.Empty, nofloor.NoAnswer.Empty)
	}
	var md, txt bytes.Buffer
	if err := rep.WriteMarkdown(&md, ""); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "## Queries without an answer") || !strings.Contains(md.String(), "other-scope (n=5)") ||
		!strings.Contains(txt.String(), "8 queries without an answer") {
		t.Errorf("reports lack the no-answer section:\n%s\n%s", md.String(), txt.String())
	}
	o.NoAnswer = -1
	if _, err := Run(t.Context(), loadTiny(t), o); err == nil {
		t.Error("a negative NoAnswer was accepted")
	}
}

func mustConfig(t *testing.T, spec string) Config {
	t.Helper()
	cs, err := ParseConfig(spec)
	if err != nil || len(cs) != 1 {
		t.Fatalf("ParseConfig(%q) = %v, %v", spec, cs, err)
	}
	return cs[0]
}
