package eval

import (
	"testing"

	"github.com/mnemo-dev/mnemo/embed/glove"
	"github.com/mnemo-dev/mnemo/internal/testenv"
)

// TestQualityGate_LoCoMo is issue 4's gate through the real engine and the
// built-in embedder: on locomo-dev, conversation-scoped, dense alone reaches
// recall@10 ≥ 0.50, and both weighted RRF (dense weight 0.5) and the
// defaults beat BM25 alone on recall@10 and nDCG@10.
//
// It takes seconds normally and minutes under the race detector, so
// scripts/test.sh runs it in a pass of its own without -race.
func TestQualityGate_LoCoMo(t *testing.T) {
	if raceEnabled {
		t.Skip("runs without -race (scripts/test.sh runs it in its own pass)")
	}
	model := testenv.Model(t, glove.DefaultPath, glove.Load, glove.ErrModelMissing)
	ds, err := Load(testenv.Dataset(t, "locomo-dev"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cfgs []Config
	for _, spec := range []string{"default", "lexical", "dense", "rrf_dense0.5=strategy=rrf,lexical=1,dense=0.5,recency=0,access=0,k=60"} {
		cs, err := ParseConfig(spec)
		if err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, cs...)
	}
	rep, err := Run(t.Context(), ds, Options{Embedder: model, Configs: cfgs, Resamples: 200, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) (r10, n10 float64) {
		c := configByName(t, rep, name)
		return c.Overall.Values["recall@10"], c.Overall.Values["ndcg@10"]
	}
	lexR, lexN := get("lexical")
	denR, denN := get("dense")
	t.Logf("locomo-dev (n=%d) recall@10 / nDCG@10: lexical %.3f / %.3f, dense %.3f / %.3f", rep.Queries, lexR, lexN, denR, denN)
	if denR < 0.50 {
		t.Errorf("dense alone recall@10 %.3f < 0.50", denR)
	}
	for _, name := range []string{"rrf_dense0.5", "default"} {
		r, n := get(name)
		t.Logf("%s %.3f / %.3f", name, r, n)
		if r <= lexR || n <= lexN {
			t.Errorf("%s %.3f / %.3f does not beat lexical alone %.3f / %.3f", name, r, n, lexR, lexN)
		}
	}
	// DESIGN §10: the default beats BM25 alone significantly, on every
	// headline metric (measured: the 95% intervals start at +0.008 or more).
	for _, metric := range []string{"recall@10", MetricNDCG, MetricMRR} {
		c := comparison(t, rep.Comparisons, "default", metric)
		if c.CILow <= 0 {
			t.Errorf("default − lexical %s = %+.3f [%+.3f, %+.3f]: not significantly above lexical", metric, c.Delta, c.CILow, c.CIHigh)
		}
	}
}

// TestQualityGate_SciFact guards the other side of the default's
// trade-off: on scifact's technical claims the built-in dense leg is weak
// (nDCG@10 0.30 against BM25's 0.70), and the default hybrid must not pay
// for LoCoMo's gain there. It fails when the default's nDCG@10 is
// significantly below lexical alone (the bootstrap interval of the
// difference lies below 0) or more than 0.005 below it at all; it also
// checks that BM25 stays near Anserini's (0.679 on BEIR's test split; these
// are the 809 train claims, measured 0.700). rrf, the former default,
// fails it (−0.100).
//
// About 20 s (5,183 abstracts, two configurations); skipped under -race
// like the LoCoMo gate.
func TestQualityGate_SciFact(t *testing.T) {
	if raceEnabled {
		t.Skip("runs without -race (scripts/test.sh runs it in its own pass)")
	}
	model := testenv.Model(t, glove.DefaultPath, glove.Load, glove.ErrModelMissing)
	ds, err := Load(testenv.Dataset(t, "scifact"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cfgs, err := ParseConfig("default")
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(t.Context(), ds, Options{Embedder: model, Configs: cfgs, Baseline: "lexical", Resamples: 200, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	lex := configByName(t, rep, "lexical").Overall.Values[MetricNDCG]
	def := configByName(t, rep, "default").Overall.Values[MetricNDCG]
	c := comparison(t, rep.Comparisons, "default", MetricNDCG)
	t.Logf("scifact (n=%d) nDCG@10: lexical %.3f, default %.3f, Δ %+.3f [%+.3f, %+.3f] p=%.3f",
		rep.Queries, lex, def, c.Delta, c.CILow, c.CIHigh, c.P)
	if lex < 0.66 || lex > 0.74 {
		t.Errorf("BM25 alone nDCG@10 %.3f is far from Anserini's 0.679 (measured 0.700 on these claims)", lex)
	}
	if c.CIHigh < 0 {
		t.Errorf("default nDCG@10 %.3f is significantly below lexical alone %.3f: Δ %+.3f [%+.3f, %+.3f]", def, lex, c.Delta, c.CILow, c.CIHigh)
	}
	if def < lex-0.005 {
		t.Errorf("default nDCG@10 %.3f is below lexical alone %.3f by more than 0.005", def, lex)
	}
}

// comparison returns the comparison of config with the baseline on metric.
func comparison(t *testing.T, cs []Comparison, config, metric string) Comparison {
	t.Helper()
	for _, c := range cs {
		if c.Config == config && c.Metric == metric {
			return c
		}
	}
	t.Fatalf("no comparison of %q on %s", config, metric)
	return Comparison{}
}
