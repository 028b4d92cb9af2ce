package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const evalTiny = "../../eval/testdata/tiny"

func TestEval_Outputs(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	out := t.TempDir()
	js, md, svg, runs := filepath.Join(out, "r.json"), filepath.Join(out, "r.md"), filepath.Join(out, "r.svg"), filepath.Join(out, "runs.txt")
	stdout := c.ok("eval", evalTiny, "--exclude-category", "adversarial", "--resamples", "200",
		"--json", js, "--report", md, "--chart", svg, "--runs", runs)
	for _, want := range []string{"tiny: 6 queries over 12 memories, embedder hash", "all queries (Δ vs lexical", "without adversarial",
		"default", "lexical", "dense", "rrf", "cc", "wrote " + js} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}

	// The JSON has exactly the documented shape.
	var rep map[string]json.RawMessage
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if got := evalKeys(rep); strings.Join(got, ",") != "comparisons,comparisons_excluding,configs,dataset,exclude_categories,queries" {
		t.Fatalf("top-level keys %v", got)
	}
	var configs []map[string]json.RawMessage
	json.Unmarshal(rep["configs"], &configs)
	if len(configs) != 5 || strings.Join(evalKeys(configs[0]), ",") != "by_category,ci,ci_by_category,ci_excluding,name,overall,overall_excluding,spec" {
		t.Fatalf("configs: %d, keys %v", len(configs), evalKeys(configs[0]))
	}
	var overall map[string]float64
	json.Unmarshal(configs[0]["overall"], &overall)
	if strings.Join(evalKeys(overall), ",") != "mrr@10,n,ndcg@10,recall@10,recall@5" || overall["n"] != 6 {
		t.Fatalf("overall = %v", overall)
	}
	var cmps []map[string]any
	json.Unmarshal(rep["comparisons"], &cmps)
	if len(cmps) != 16 || strings.Join(evalKeys(cmps[0]), ",") != "baseline,ci_high,ci_low,config,delta,metric,p" {
		t.Fatalf("comparisons: %d, %v", len(cmps), cmps[0])
	}

	mdText, _ := os.ReadFile(md)
	if !strings.Contains(string(mdText), "## Overall without adversarial: 5 queries") || !strings.Contains(string(mdText), "![metrics per configuration](r.svg)") {
		t.Errorf("report:\n%s", mdText)
	}
	svgText, _ := os.ReadFile(svg)
	if !strings.HasPrefix(string(svgText), "<svg ") {
		t.Errorf("chart is not an SVG: %.100s", svgText)
	}
	runsText, _ := os.ReadFile(runs)
	if !strings.Contains(string(runsText), " Q0 c1/1 1 ") {
		t.Errorf("runs: %.300s", runsText)
	}

	// The built-in embedders are not cached.
	if strings.Contains(stdout, "embedding cache") {
		t.Errorf("the hash embedder went through the cache:\n%s", stdout)
	}
}

// TestEval_RemoteEmbeddingsCached: a rerun with a remote embedder reads
// every embedding from the cache under MNEMO_HOME, with the same figures.
func TestEval_RemoteEmbeddingsCached(t *testing.T) {
	t.Parallel()
	c, srv := newRemoteCLI(t, 16)
	args := []string{"eval", evalTiny, "--config", "lexical", "--config", "dense", "--resamples", "50"}
	first := c.ok(args...)
	if !strings.Contains(first, "embedding cache: 0 hits, 18 embedded") || srv.embedded() != 18 {
		t.Fatalf("first run: server embedded %d texts, stdout:\n%s", srv.embedded(), first)
	}
	again := c.ok(args...)
	if !strings.Contains(again, "embedding cache: 18 hits, 0 embedded") || srv.embedded() != 18 {
		t.Errorf("rerun did not use the cache (server embedded %d texts):\n%s", srv.embedded(), again)
	}
	if figures(first) != figures(again) {
		t.Errorf("the rerun reports other figures:\n%s\n%s", first, again)
	}
	noCache := c.ok(append(args, "--no-cache")...)
	if strings.Contains(noCache, "embedding cache") || srv.embedded() != 36 {
		t.Errorf("--no-cache (server embedded %d texts in all):\n%s", srv.embedded(), noCache)
	}
}

// figures drops the timing line of eval's output.
func figures(out string) string {
	i := strings.Index(out, "distinct settings;")
	if i < 0 {
		return out
	}
	return out[:i]
}

func evalKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func TestEval_SweepAndCustomConfig(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	out := c.ok("eval", evalTiny, "--config", "half=cc,dense=0.5", "--config", "lexical", "--sweep", "dense=0.25,1",
		"--k", "1,5,10", "--resamples", "50", "--limit-queries", "4")
	for _, want := range []string{"4 queries", "recall@1", "sweep dense over half", "0.25", "half"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sweep dense over lexical") {
		t.Error("the baseline was swept")
	}
}

func TestEval_Errors(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"eval"}, "usage: mnemo eval DATASET_DIR"},
		{[]string{"eval", t.TempDir()}, "queries.jsonl"},
		{[]string{"eval", evalTiny, "--config", "nosuch"}, `config "nosuch": not a preset`},
		{[]string{"eval", evalTiny, "--config", "x=dense=9"}, `config "x": dense=9`},
		{[]string{"eval", evalTiny, "--sweep", "k=0"}, "sweep k=0"},
		{[]string{"eval", evalTiny, "--k", "five"}, "--k"},
		{[]string{"eval", evalTiny, "--ties", "random"}, "--ties"},
		{[]string{"eval", evalTiny, "--baseline", "nope"}, `baseline "nope"`},
		{[]string{"eval", evalTiny, "--scope-field", "team"}, `no query has the scope field "team"`},
		{[]string{"eval", evalTiny, "--config", "lexical", "--sweep", "k=10"}, "give a --config other than the baseline"},
		{[]string{"eval", evalTiny, "--embedder", "nope"}, `embedder "nope"`},
	}
	for _, tt := range tests {
		code, _, errs := c.run("", tt.args...)
		if code != 2 || !strings.Contains(errs, tt.want) {
			t.Errorf("mnemo %v: exit %d, stderr %q; want exit 2 and %q", tt.args, code, errs, tt.want)
		}
	}
	if code, _, _ := c.run("", "eval", "-h"); code != 0 {
		t.Errorf("eval -h: exit %d", code)
	}
}
