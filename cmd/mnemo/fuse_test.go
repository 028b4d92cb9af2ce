package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runFuse runs "mnemo fuse args..." in process with stdin.
func runFuse(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(string) string { return "" }}
	code = run(context.Background(), a, append([]string{"fuse"}, args...))
	return code, out.String(), errb.String()
}

type fuseOut struct {
	Strategy      string
	Switches      []string
	Normalization string
	Missing       string
	Weights       map[string]float64
	Results       []struct {
		ID    string
		Score float64
		Rank  int
		Legs  map[string]struct {
			Rank         int
			Score        *float64
			Normalized   *float64
			Contribution float64
		}
		Counterfactual map[string]int
	}
}

func fuseJSONOut(t *testing.T, stdin string, args ...string) fuseOut {
	t.Helper()
	code, out, errs := runFuse(t, stdin, append(args, "--json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var o fuseOut
	if err := json.Unmarshal([]byte(out), &o); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	return o
}

// rankOnly is a worked example of two legs ranked without scores.
const rankOnly = `{"legs": {"dense": [{"id": "a"}, {"id": "b"}],
  "lexical": [{"id": "x"}, {"id": "y"}, {"id": "z"}, {"id": "w"}, {"id": "a"}]}}`

func TestFuse_WorkedExampleRankOnly(t *testing.T) {
	t.Parallel()
	o := fuseJSONOut(t, rankOnly)
	if o.Strategy != "rrf" || len(o.Results) != 6 {
		t.Fatalf("got %+v", o)
	}
	top := o.Results[0]
	if top.ID != "a" || math.Abs(top.Score-0.0318) > 5e-5 || math.Abs(top.Score-(1.0/61+1.0/65)) > 1e-12 {
		t.Errorf("top = %s %v, want a 0.0318", top.ID, top.Score)
	}
	if d := top.Legs["lexical"]; d.Rank != 5 || math.Abs(d.Contribution-1.0/65) > 1e-12 || d.Score != nil || d.Normalized != nil {
		t.Errorf("a lexical = %+v, want rank 5, contribution 1/65, no score, no normalized", d)
	}
	// Without scores only the rank-only strategies can be counterfactuals.
	if cf := top.Counterfactual; len(cf) != 1 || cf["borda_rank"] != 1 {
		t.Errorf("counterfactual = %v, want only borda_rank", cf)
	}
}

const scored = `{"legs": {
  "dense":   [{"id": "a", "score": 0.9}, {"id": "b", "score": 0.5}, {"id": "c", "score": 0.1}],
  "lexical": [{"id": "b", "score": 10},  {"id": "d", "score": 6},   {"id": "a", "score": 2}]}}`

func TestFuse_WeightedAverageAndCounterfactual(t *testing.T) {
	t.Parallel()
	o := fuseJSONOut(t, scored, "--strategy", "weighted_average", "--weights", "dense=3,lexical=1")
	want := map[string]float64{"a": 0.75025, "b": 0.625, "d": 0.125, "c": 0.00075}
	order := []string{"a", "b", "d", "c"}
	for i, r := range o.Results {
		if r.ID != order[i] || math.Abs(r.Score-want[r.ID]) > 1e-9 || r.Rank != i+1 {
			t.Errorf("result %d = %s %v, want %s %v", i+1, r.ID, r.Score, order[i], want[order[i]])
		}
		if len(r.Counterfactual) != 5 {
			t.Errorf("%s counterfactual = %v, want the 5 other strategies", r.ID, r.Counterfactual)
		}
	}
	if d := o.Results[0].Legs["dense"]; d.Normalized == nil || *d.Normalized != 1 || d.Score == nil || *d.Score != 0.9 {
		t.Errorf("a dense = %+v", d)
	}
	if o.Normalization != "minmax" || o.Missing != "zero" || o.Weights["dense"] != 3 {
		t.Errorf("header = %+v", o)
	}
	// Under rrf (3/(60+r) + 1/(60+r)) c (3/63) overtakes d (1/62).
	if d, c := o.Results[2].Counterfactual["rrf"], o.Results[3].Counterfactual["rrf"]; d != 4 || c != 3 {
		t.Errorf("under rrf d = %d, c = %d; want 4, 3", d, c)
	}
}

// TestFuse_DefaultIsTheEngines: without --strategy, fuse uses the
// engine's default strategy (weighted_average), and rrf for input without
// scores, saying so.
func TestFuse_DefaultIsTheEngines(t *testing.T) {
	t.Parallel()
	if o := fuseJSONOut(t, scored); o.Strategy != "weighted_average" {
		t.Errorf("scored input: strategy %s, want weighted_average", o.Strategy)
	}
	code, out, errs := runFuse(t, rankOnly, "--json")
	if code != 0 || !strings.Contains(out, `"strategy": "rrf"`) || !strings.Contains(errs, "fusing by rrf") {
		t.Errorf("rank-only input: exit %d, %s, stderr %q", code, out, errs)
	}
	if code, _, errs := runFuse(t, rankOnly, "--strategy", "weighted_average"); code != 2 || !strings.Contains(errs, "reads scores") {
		t.Errorf("rank-only input with --strategy weighted_average: exit %d, %q", code, errs)
	}
}

func TestFuse_FlagsReachTheMath(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want map[string]float64
	}{
		{"k", []string{"--strategy", "rrf", "--k", "10"}, map[string]float64{"a": 1.0/11 + 1.0/13, "d": 1.0 / 12}},
		{"kparam", []string{"--strategy", "score_weighted_rrf", "--kparam", "1"}, map[string]float64{"b": 0.5/3 + 1.0/2, "d": 0.5 / 3}},
		{"missing", []string{"--strategy", "rrf", "--missing", "impute_rank"}, map[string]float64{"c": 1.0/63 + 1.0/64}},
		{"normalization", []string{"--strategy", "weighted_average", "--normalization", "tmm"}, map[string]float64{"a": 0.4755, "c": 0.275}},
		{"lower bound", []string{"--strategy", "weighted_average", "--lower-bound", "dense=0"}, map[string]float64{"c": 0.5 * 0.1 / 0.9}},
		{"bounds", []string{"--strategy", "weighted_average", "--normalization", "tmm", "--bounds", "dense=0:1"}, map[string]float64{"c": 0.05 + 0}},
		{"borda k", []string{"--strategy", "borda_rank", "--borda-k", "10"}, map[string]float64{"a": 1.0/11 + 1.0/13}},
		{"high confidence", []string{"--strategy", "rrf", "--high-confidence"}, map[string]float64{"a": 1, "b": 1, "d": 0.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := fuseJSONOut(t, scored, tt.args...)
			got := map[string]float64{}
			for _, r := range o.Results {
				got[r.ID] = r.Score
			}
			for id, w := range tt.want {
				if math.Abs(got[id]-w) > 1e-6 {
					t.Errorf("%s = %v, want %v", id, got[id], w)
				}
			}
		})
	}
}

func TestFuse_ExactBonusAndAdaptive(t *testing.T) {
	t.Parallel()
	in := `{"legs": {"dense": [{"id": "a", "score": 0.9, "content": "no match"}, {"id": "b", "score": 0.5, "content": "fixed in v2.3"}],
	  "lexical": [{"id": "b", "score": 3}, {"id": "a", "score": 1}]}}`
	o := fuseJSONOut(t, in, "--strategy", "rrf", "--query", "what is new in v2.3", "--exact-bonus", "0.1", "--adaptive")
	if o.Results[0].ID != "b" || len(o.Switches) != 1 || o.Switches[0] != "adaptive_weights" {
		t.Errorf("got %+v", o)
	}
	// Definition intent: 0.5/0.5 of the total 2; b = 1/62 + 1/61 + 0.1/61.
	if w := 1.0/62 + 1.0/61 + 0.1/61; math.Abs(o.Results[0].Score-w) > 1e-12 {
		t.Errorf("b = %v, want %v", o.Results[0].Score, w)
	}
}

func TestFuse_TableOutput(t *testing.T) {
	t.Parallel()
	code, out, errs := runFuse(t, scored, "--strategy", "dbsf", "--missing", "impute_min")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"strategy       dbsf", "normalization  dbsf", "missing        impute_min",
		"RANK", "if rrf", "#1 n=0.704124", "~#3", "imputed"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestFuse_FileArgument(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "in.json")
	if err := os.WriteFile(path, []byte(rankOnly), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runFuse(t, "", path, "--json")
	if code != 0 || !strings.Contains(out, `"id": "a"`) {
		t.Fatalf("exit %d: %s %s", code, out, errs)
	}
}

func TestFuse_Exit2(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		stdin string
		args  []string
		want  string
	}{
		{"unknown strategy", scored, []string{"--strategy", "cc"}, `strategy "cc"`},
		{"unknown normalization", scored, []string{"--normalization", "l2"}, `normalization "l2"`},
		{"unknown missing", scored, []string{"--missing", "worst"}, `missing policy "worst"`},
		{"negative k", scored, []string{"--k", "-1"}, "--k -1"},
		{"zero k", scored, []string{"--k", "0"}, "--k 0"},
		{"nan kparam", scored, []string{"--kparam", "NaN"}, "--kparam NaN"},
		{"inf borda k", scored, []string{"--borda-k", "Inf"}, "--borda-k +Inf"},
		{"negative weight", scored, []string{"--weights", "dense=-1"}, "--weights dense=-1"},
		{"inf weight", scored, []string{"--weights", "dense=Inf"}, "--weights dense=Inf"},
		{"malformed weights", scored, []string{"--weights", "dense"}, "leg=value"},
		{"unknown leg weight", scored, []string{"--weights", "lexcal=0"}, `no leg named "lexcal"`},
		{"bad bounds", scored, []string{"--bounds", "dense=1:1"}, "min < max"},
		{"bad bonus", scored, []string{"--exact-bonus", "-0.1"}, "--exact-bonus"},
		{"nan threshold", scored, []string{"--high-confidence-threshold", "NaN"}, "threshold"},
		{"non-numeric flag", scored, []string{"--k", "abc"}, "invalid value"},
		{"two files", scored, []string{"a", "b"}, "at most one input file"},
		{"missing file", "", []string{"/nonexistent/in.json"}, "does not exist"},
		{"malformed json", `{"legs": {"dense": [`, nil, "not valid JSON"},
		{"empty input", ``, nil, "input is empty"},
		{"array input", `[]`, nil, "JSON array"},
		{"no legs", `{"lists": {}}`, nil, `no "legs"`},
		{"legs not object", `{"legs": []}`, nil, `"legs" must be an object`},
		{"leg not list", `{"legs": {"dense": {}}}`, nil, `leg "dense" must be a list`},
		{"hit not object", `{"legs": {"dense": [1]}}`, nil, "hit 1: must be an object"},
		{"missing id", `{"legs": {"dense": [{"score": 1}]}}`, nil, `missing "id"`},
		{"string score", `{"legs": {"dense": [{"id": "a", "score": "0.9"}]}}`, nil, `score "0.9" is not a number`},
		{"bool score", `{"legs": {"dense": [{"id": "a", "score": true}]}}`, nil, "score true is not a number"},
		{"huge score", `{"legs": {"dense": [{"id": "a", "score": 1e999}]}}`, nil, "not a finite number"},
		{"bad rank", `{"legs": {"dense": [{"id": "a", "rank": 0}]}}`, nil, "rank 0: must be an integer ≥ 1"},
		{"some ranks", `{"legs": {"dense": [{"id": "a", "rank": 1}, {"id": "b"}]}}`, nil, "every hit or to none"},
		{"decreasing ranks", `{"legs": {"dense": [{"id": "a", "rank": 2}, {"id": "b", "rank": 1}]}}`, nil, "ranks must not decrease"},
		{"increasing scores", `{"legs": {"dense": [{"id": "a", "score": 1}, {"id": "b", "score": 2}]}}`, nil, "scores must not increase"},
		{"duplicate id", `{"legs": {"dense": [{"id": "a", "score": 2}, {"id": "a", "score": 1}]}}`, nil, "listed twice"},
		{"trailing data", `{"legs": {}} {}`, nil, "data after"},
		{"scores needed", rankOnly, []string{"--strategy", "max_confidence"}, "reads scores"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out, errs := runFuse(t, tt.stdin, tt.args...)
			if code != 2 || !strings.Contains(errs, tt.want) || out != "" {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit 2 naming %q", code, out, errs, tt.want)
			}
		})
	}
}

func TestFuse_EmptyLegs(t *testing.T) {
	t.Parallel()
	o := fuseJSONOut(t, `{"legs": {}}`)
	if o.Results == nil || len(o.Results) != 0 {
		t.Errorf("results = %v, want []", o.Results)
	}
}
