package eval

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/embed/cache"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

func loadTiny(t *testing.T) *Dataset {
	t.Helper()
	ds, err := Load(tinyDir, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// tinyOptions are fast options over the deterministic hashing embedder.
func tinyOptions(t *testing.T) Options {
	return Options{
		Embedder:          embed.NewHash(embed.DefaultHashDim),
		Resamples:         300,
		ExcludeCategories: []string{"adversarial"},
		TempDir:           t.TempDir(),
	}
}

func configByName(t *testing.T, rep *Report, name string) ConfigResult {
	t.Helper()
	for _, c := range rep.Configs {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no config %q in the report", name)
	return ConfigResult{}
}

func TestRun_Tiny(t *testing.T) {
	t.Parallel()
	ds := loadTiny(t)
	ctx := context.Background()
	var stages []string
	opts := tinyOptions(t)
	opts.Progress = func(p Progress) {
		if len(stages) == 0 || stages[len(stages)-1] != p.Stage {
			stages = append(stages, p.Stage)
		}
	}
	rep, err := Run(ctx, ds, opts)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Dataset != "tiny" || rep.Queries != 6 || rep.Info.Unjudged != 1 || rep.Info.Memories != 12 || rep.Info.Limit != 10 {
		t.Fatalf("report header: %+v / %+v", rep, rep.Info)
	}
	if got := configNamesOf(rep); strings.Join(got, ",") != "default,lexical,dense,rrf,cc" {
		t.Fatalf("configs = %v", got)
	}
	if strings.Join(stages, ",") != "ingest,default,lexical,dense,rrf,cc" {
		t.Errorf("progress stages = %v", stages)
	}
	for _, c := range rep.Configs {
		if c.Overall.N != 6 || c.OverallExcluding == nil || c.OverallExcluding.N != 5 {
			t.Errorf("%s: n = %d, excluding %+v", c.Name, c.Overall.N, c.OverallExcluding)
		}
		for cat, n := range map[string]int{"single-hop": 3, "multi-hop": 2, "adversarial": 1} {
			if c.ByCategory[cat].N != n {
				t.Errorf("%s: %s n = %d, want %d", c.Name, cat, c.ByCategory[cat].N, n)
			}
		}
		// Scope: each query sees only its own conversation.
		for qi, hits := range c.hits {
			for _, h := range hits {
				if want := ds.Judged()[qi].Scope + "/"; !strings.HasPrefix(h.ID, want) {
					t.Errorf("%s: query %s got %s from another conversation", c.Name, rep.queryIDs[qi], h.ID)
				}
			}
		}
	}
	lex := configByName(t, rep, "lexical")
	for qi, want := range map[int]string{0: "c1/1", 1: "c1/2", 4: "c2/4"} {
		if len(lex.hits[qi]) == 0 || lex.hits[qi][0].ID != want {
			t.Errorf("lexical, query %s: top hit %v, want %s", rep.queryIDs[qi], lex.hits[qi], want)
		}
	}
	if len(rep.Comparisons) != 4*4 || len(rep.ComparisonsExcluding) != 4*4 {
		t.Errorf("%d comparisons, %d excluding; want 16 each", len(rep.Comparisons), len(rep.ComparisonsExcluding))
	}
	for _, c := range rep.Comparisons {
		if c.Baseline != "lexical" || c.P <= 0 || c.P > 1 || c.CILow > c.Delta+1e-9 || c.CIHigh < c.Delta-1e-9 {
			t.Errorf("comparison %+v", c)
		}
	}

	// Reproducible: a second run gives the same JSON.
	rep2, err := Run(ctx, ds, tinyOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	rep.WriteJSON(&a)
	rep2.WriteJSON(&b)
	if a.String() != b.String() {
		t.Fatalf("two runs differ:\n%s\n%s", a.String(), b.String())
	}
}

func configNamesOf(rep *Report) []string {
	var out []string
	for _, c := range rep.Configs {
		out = append(out, c.Name)
	}
	return out
}

func TestRun_SweepsShareIdenticalSettings(t *testing.T) {
	t.Parallel()
	ds := loadTiny(t)
	opts := tinyOptions(t)
	cc, _ := Preset("cc")
	opts.Configs = []Config{cc}
	sk, err := ParseSweep("k=60,10")
	if err != nil {
		t.Fatal(err)
	}
	sd, err := ParseSweep("dense=0,1")
	if err != nil {
		t.Fatal(err)
	}
	opts.Sweeps = []Sweep{sk, sd}
	rep, err := Run(context.Background(), ds, opts)
	if err != nil {
		t.Fatal(err)
	}
	// lexical (the baseline, added) = cc[dense=0] (the default strategy is
	// weighted_average with minmax, k 60); cc = cc[k=60] = cc[dense=1];
	// cc[k=10] (k changes the settings, not cc's figures).
	if rep.Info.Runs != 3 {
		t.Errorf("%d distinct settings run, want 3", rep.Info.Runs)
	}
	if got := configNamesOf(rep); strings.Join(got, ",") != "lexical,cc" {
		t.Errorf("configs = %v (the baseline preset is added first)", got)
	}
	if len(rep.Sweeps) != 2 || rep.Sweeps[0].Setting != "rrf_k" || len(rep.Sweeps[0].Series) != 1 || len(rep.Sweeps[0].Series[0].Points) != 2 {
		t.Fatalf("sweeps = %+v", rep.Sweeps)
	}
	p := rep.Sweeps[0].Series[0].Points[0]
	if p.Value != "60" || p.Overall.Values[MetricNDCG] != configByName(t, rep, "cc").Overall.Values[MetricNDCG] {
		t.Errorf("cc[k=60] = %+v, want cc's figures", p.Overall)
	}
	if len(p.Comparisons) != 4 || p.Comparisons[0].Config != "cc[k=60]" {
		t.Errorf("point comparisons = %+v", p.Comparisons)
	}
}

func TestRun_AccessLegRunsAlone(t *testing.T) {
	t.Parallel()
	ds := loadTiny(t)
	opts := tinyOptions(t)
	cs, err := ParseConfig("acc=access=1")
	if err != nil {
		t.Fatal(err)
	}
	opts.Configs = cs
	rep, err := Run(context.Background(), ds, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Info.AccessOrdered, []string{"acc"}) {
		t.Fatalf("AccessOrdered = %v", rep.Info.AccessOrdered)
	}
	rep2, err := Run(context.Background(), ds, opts)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := configByName(t, rep, "acc").Overall, configByName(t, rep2, "acc").Overall; a.Values[MetricMRR] != b.Values[MetricMRR] {
		t.Fatalf("access-weighted runs differ: %v vs %v", a, b)
	}
}

func TestRun_Errors(t *testing.T) {
	t.Parallel()
	ds := loadTiny(t)
	ctx := context.Background()
	tests := []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"no embedder", func(o *Options) { o.Embedder = nil }, "Embedder is required"},
		{"bad value", func(o *Options) {
			o.Configs = []Config{{Name: "heavy", Overrides: map[string]string{"semantic_weight": "9"}}}
		}, `config "heavy": dense=9`},
		{"unknown baseline", func(o *Options) { o.Baseline = "nope" }, `baseline "nope"`},
		{"duplicate config", func(o *Options) {
			c, _ := Preset("rrf")
			o.Configs = []Config{c, c}
		}, `config "rrf" is given twice`},
		{"bad k", func(o *Options) { o.Ks = []int{0} }, "k = 0"},
		{"bad sweep base", func(o *Options) {
			o.Sweeps = []Sweep{{Key: "k", Values: []string{"1"}}}
			o.SweepBases = []string{"nope"}
		}, `sweep base "nope"`},
		{"bad sweep value", func(o *Options) {
			o.Sweeps = []Sweep{{Key: "dense", Values: []string{"-1"}}}
		}, `dense=-1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := tinyOptions(t)
			tt.edit(&o)
			_, err := Run(ctx, ds, o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
			if tt.name != "no embedder" && !errors.Is(err, mnemo.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
		})
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Run(cancelled, ds, tinyOptions(t)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestRun_CachedEmbeddings(t *testing.T) {
	t.Parallel()
	ds := loadTiny(t)
	path := filepath.Join(t.TempDir(), cache.DefaultFile)
	var reports [2]*Report
	var counts []int64
	for i := range 2 {
		inner := newCounting()
		c, err := cache.Open(path, inner, nil)
		if err != nil {
			t.Fatal(err)
		}
		opts := tinyOptions(t)
		opts.Embedder = c
		if reports[i], err = Run(context.Background(), ds, opts); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		counts = append(counts, inner.texts.Load())
	}
	// The first run embeds the 12 memories and 6 queries; the rerun is
	// served from the file, with the same results.
	if counts[0] != 12+6 || counts[1] != 0 {
		t.Fatalf("embedded %v texts in the two runs, want [18 0]", counts)
	}
	a, b := reports[0].Configs, reports[1].Configs
	if !reflect.DeepEqual(a, b) {
		t.Errorf("the rerun from the cache reports other figures:\n%+v\n%+v", a, b)
	}
}

// countingEmbedder wraps an embedder and counts the texts it embeds.
type countingEmbedder struct {
	embed.Embedder
	texts atomic.Int64
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.texts.Add(int64(len(texts)))
	return c.Embedder.Embed(ctx, texts)
}

func newCounting() *countingEmbedder { return &countingEmbedder{Embedder: embed.NewHash(16)} }

// golden compares got with testdata/golden/name, rewriting it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it); got:\n%s", name, got)
	}
}

// tinyReport evaluates the hand-written runs of testdata/tiny/runs.txt.
func tinyReport(t *testing.T) *Report {
	t.Helper()
	ds := loadTiny(t)
	f, err := os.Open(filepath.Join(tinyDir, "runs.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	runs, err := ReadRuns(f)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Evaluate(ds, runs, Options{
		Configs: []Config{
			{Name: "lexical", Spec: "lexical=1,dense=0"},
			{Name: "dense", Spec: "lexical=0,dense=1"},
			{Name: "hybrid", Spec: "strategy=rrf,lexical=1,dense=1"},
		},
		ExcludeCategories: []string{"adversarial"},
		Resamples:         1000,
	})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestEvaluate_Golden(t *testing.T) {
	t.Parallel()
	rep := tinyReport(t)
	hybrid := configByName(t, rep, "hybrid").Overall.Values
	// Hand-computed over the 6 judged queries (q7 has no relevant id):
	// recall@5 per query 1, 1, 1, 1, 1, 1 (q1 repeats c1/1, which earns once).
	approx(t, "hybrid recall@5", hybrid["recall@5"], 1)
	// MRR@10: q2..q5 = 1; q1 ties c1/1 with its own repeat, which earns
	// nothing, and q6 ties c1/5 with c1/1: ½·1 + ½·½ = ¾ each.
	approx(t, "hybrid mrr@10", hybrid[MetricMRR], (4+0.75+0.75)/6)
	lex := configByName(t, rep, "lexical").Overall.Values
	// lexical: q1 1, q2 1, q3 c1/4 at 1 of {c1/3, c1/4}: ½, q4 ½, q5 1, q6 0.
	approx(t, "lexical recall@10", lex["recall@10"], (1+1+0.5+0.5+1+0)/6)

	var js, md, chart bytes.Buffer
	if err := rep.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteMarkdown(&md, "tiny.svg"); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteSVG(&chart); err != nil {
		t.Fatal(err)
	}
	golden(t, "tiny.json", js.Bytes())
	golden(t, "tiny.md", md.Bytes())
	golden(t, "tiny.svg", chart.Bytes())
}

func TestEvaluate_SweepChartGolden(t *testing.T) {
	t.Parallel()
	rep := tinyReport(t)
	// A sweep over the hybrid, its points borrowed from the three runs, to
	// pin the line chart.
	sw := SweepResult{Key: "dense", Setting: "semantic_weight", Values: []string{"0", "0.5", "1"}}
	ser := SweepSeries{Config: "hybrid"}
	for i, name := range []string{"lexical", "dense", "hybrid"} {
		c := configByName(t, rep, name)
		ser.Points = append(ser.Points, SweepPoint{Value: sw.Values[i], Overall: c.Overall, CI: c.CI})
	}
	sw.Series = []SweepSeries{ser}
	rep.Sweeps = []SweepResult{sw}
	var chart bytes.Buffer
	if err := rep.WriteSVG(&chart); err != nil {
		t.Fatal(err)
	}
	golden(t, "tiny-sweep.svg", chart.Bytes())
}

func TestReport_RunsRoundTrip(t *testing.T) {
	t.Parallel()
	ds := loadTiny(t)
	rep, err := Run(context.Background(), ds, tinyOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := rep.WriteRuns(&buf); err != nil {
		t.Fatal(err)
	}
	runs, err := ReadRuns(&buf)
	if err != nil {
		t.Fatal(err)
	}
	opts := tinyOptions(t)
	opts.Configs = nil
	for _, c := range rep.Configs {
		opts.Configs = append(opts.Configs, Config{Name: c.Name, Spec: c.Spec})
	}
	again, err := Evaluate(ds, runs, opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range rep.Configs {
		for _, m := range rep.Info.Metrics {
			approx(t, c.Name+" "+m, again.Configs[i].Overall.Values[m], c.Overall.Values[m])
		}
	}
	if _, err := ReadRuns(strings.NewReader("q1 Q0 d1 x 1 run\n")); err == nil {
		t.Fatal("a bad rank was accepted")
	}
	if _, err := ReadRuns(strings.NewReader("q1 Q0 d1 1\n")); err == nil {
		t.Fatal("a short line was accepted")
	}
}

// TestRun_CutoffsDoNotMoveFigures: every query recalls Options.Limit
// memories whatever cutoffs are reported, so recall@10 is the same asked
// alone or with other cutoffs; a cutoff beyond the limit is refused
// (it needs a run with a larger limit, whose figures may all differ).
func TestRun_CutoffsDoNotMoveFigures(t *testing.T) {
	t.Parallel()
	ds := loadTiny(t)
	ctx := context.Background()
	run := func(limit int, ks ...int) (*Report, error) {
		o := tinyOptions(t)
		o.Ks, o.Limit = ks, limit
		return Run(ctx, ds, o)
	}
	alone, err := run(0, 10)
	if err != nil {
		t.Fatal(err)
	}
	with, err := run(0, 1, 5, 10)
	if err != nil {
		t.Fatal(err)
	}
	if alone.Info.Limit != DefaultLimit || with.Info.Limit != DefaultLimit {
		t.Errorf("limits %d and %d, want %d for both", alone.Info.Limit, with.Info.Limit, DefaultLimit)
	}
	for _, c := range alone.Configs {
		w := configByName(t, with, c.Name)
		if got, want := w.Overall.Values["recall@10"], c.Overall.Values["recall@10"]; got != want {
			t.Errorf("%s: recall@10 %v with cutoffs 1,5,10, %v alone", c.Name, got, want)
		}
	}
	if _, err := run(0, 10, 50); err == nil || !errors.Is(err, mnemo.ErrInvalid) || !strings.Contains(err.Error(), "recall limit") {
		t.Errorf("k = 50 at the default limit: %v, want ErrInvalid naming the recall limit", err)
	}
	if rep, err := run(50, 10, 50); err != nil || rep.Info.Limit != 50 {
		t.Errorf("k = 50 at limit 50: %v", err)
	}
}

// TestRun_ANNMin: with a graph for every profile and a walk for every
// scope (Ingest.ANNMin 1), the tiny dataset's figures are those of the
// exact scan (its profiles are smaller than a walk's candidate list).
func TestRun_ANNMin(t *testing.T) {
	t.Parallel()
	ds := loadTiny(t)
	ctx := context.Background()
	exact, err := Run(ctx, ds, tinyOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	o := tinyOptions(t)
	o.Ingest.ANNMin = 1
	walked, err := Run(ctx, ds, o)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range exact.Configs {
		w := configByName(t, walked, c.Name)
		for k, v := range c.Overall.Values {
			if w.Overall.Values[k] != v {
				t.Errorf("%s: %s %v with graphs, %v without", c.Name, k, w.Overall.Values[k], v)
			}
		}
	}
}
