//go:build relfit

package eval

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed/glove"
	"github.com/mnemo-dev/mnemo/internal/testenv"
	"github.com/mnemo-dev/mnemo/relevance"
)

// fitQuery is one query of the relevance fit with what recall saw.
type fitQuery struct {
	ds, kind string // dataset; own, other (asked of another scope) or nonsense
	ev       relevance.Evidence
	scores   []float64 // the results' fused scores (no floor)
	rel      []bool    // which results are judged relevant
	nrel     int       // relevant ids of the query
}

// TestRelevanceFit refits the relevance models of package relevance on the
// evaluation datasets and prints their coefficients and the floor table of
// docs/eval/relevance.md:
//
//	go test -tags 'relfit sqlite_fts5' -run TestRelevanceFit -v ./eval/
func TestRelevanceFit(t *testing.T) {
	model := testenv.Model(t, glove.DefaultPath, glove.Load, glove.ErrModelMissing)
	var qs []fitQuery
	for _, name := range []string{"locomo-dev", "scifact"} {
		qs = append(qs, fitRun(t, model, name)...)
	}
	pos := func(q fitQuery) bool { return q.kind == "own" && slices.Contains(q.rel, true) }
	neg := func(q fitQuery) bool { return q.kind != "own" }

	lexX, lexY := [][]float64{}, []float64{}
	denX, denY := [][]float64{}, []float64{}

	for _, q := range qs {
		if !pos(q) && !neg(q) {
			continue
		}
		y := 0.0
		if pos(q) {
			y = 1
		}
		if q.ev.Lexical && q.ev.LexicalBest > 0 {
			lexX = append(lexX, []float64{math.Log1p(q.ev.ScaledBM25()), math.Log(float64(q.ev.Terms)), q.ev.Coverage})
			lexY = append(lexY, y)

		}
		if q.ev.Dense && len(q.scores) > 0 {
			denX = append(denX, []float64{q.ev.DenseBest})
			denY = append(denY, y)
		}
	}
	lw := logistic(lexX, lexY)
	dw := logistic(denX, denY)

	t.Logf("lexical model on %d queries: intercept %.2f, log1p(scaled bm25) %.2f, ln(terms) %.2f, coverage %.2f", len(lexX), lw[3], lw[0], lw[1], lw[2])
	t.Logf("dense model on %d queries: intercept %.2f, best cosine %.2f", len(denX), dw[1], dw[0])

	marginTable(t, qs)
	answerable := func(e relevance.Evidence) float64 { return relevance.Answerable(e).Answerable }
	t.Logf("with the coefficients compiled in (rerun after pasting the ones above):")
	t.Logf("%-6s %-24s %-12s %-12s %-12s", "floor", "locomo recall@10 lost", "other-scope", "nonsense", "scifact lost")
	for _, small := range []bool{false, true} {
		if small {
			t.Logf("as in a profile of fewer than %d memories:", relevance.SmallProfile)
		}
		for _, floor := range []float64{0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5} {
			lost := map[string]float64{}
			n := map[string]int{}
			empty, negs := map[string]int{}, map[string]int{}
			for _, q := range qs {
				ev := q.ev
				if small {
					ev.Memories = 1
				}
				a := answerable(ev)
				keep := 0
				kept := 0.0
				for i, s := range q.scores {
					r := relevance.Of(a, relevance.Share(s, q.scores[0], min(0, q.scores[len(q.scores)-1])))
					if r >= floor {
						keep++
						if q.rel[i] {
							kept++
						}
					}
				}
				switch {
				case q.kind == "own" && q.nrel > 0:
					found := 0.0
					for _, r := range q.rel {
						if r {
							found++
						}
					}
					lost[q.ds] += (found - kept) / float64(q.nrel)
					n[q.ds]++
				case neg(q):
					negs[q.kind]++
					if keep == 0 {
						empty[q.kind]++
					}
				}
			}
			t.Logf("%-6.2f %-24.4f %-12.3f %-12.3f %-12.4f", floor, lost["locomo-dev"]/float64(n["locomo-dev"]),
				float64(empty[NoAnswerOther])/float64(negs[NoAnswerOther]), float64(empty[NoAnswerNonsense])/float64(negs[NoAnswerNonsense]), lost["scifact"]/float64(n["scifact"]))
		}
	}
}

// fitRun recalls every judged query of the dataset in its own scope and,
// when the dataset is scoped, in the next scope, plus nonsense queries, with
// no floor, and returns what each saw.
func fitRun(t *testing.T, model *glove.Model, name string) []fitQuery {
	ds, err := Load(testenv.Dataset(t, name), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "e.db")
	o, err := Options{Embedder: model}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if err := ingest(ctx, ds, db, o); err != nil {
		t.Fatal(err)
	}
	eng, err := openEngine(db, model, o.Ingest)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	var out []fitQuery
	ask := func(kind, text, scope string, relevant []string) {
		res, err := eng.Recall(ctx, mnemo.Query{Text: text, Profile: Profile, Project: scope, Limit: DefaultLimit, Timings: true,
			Overrides: map[string]string{"min_relevance": "0", "relevance_margin": "0"}})
		if err != nil {
			t.Fatal(err)
		}
		q := fitQuery{ds: name, kind: kind, ev: res.Trace.Relevance.Evidence, nrel: len(relevant)}
		for _, r := range res.Results {
			q.scores = append(q.scores, r.Score)
			q.rel = append(q.rel, slices.Contains(relevant, r.ID))
		}
		out = append(out, q)
	}
	for _, q := range ds.Judged() {
		ask("own", q.Text, q.Scope, q.Relevant)
	}
	for _, q := range NoAnswerQueries(ds, 0, DefaultSeed) {
		ask(q.Category, q.Text, q.Scope, nil)
	}
	return out
}

// logistic fits y ~ σ(w·x + b) by Newton's method with a small ridge and
// returns w followed by b.
func logistic(x [][]float64, y []float64) []float64 {
	d := len(x[0]) + 1
	w := make([]float64, d)
	row := func(i int) []float64 { return append(slices.Clone(x[i]), 1) }
	for range 50 {
		g := make([]float64, d)
		h := make([][]float64, d)
		for j := range h {
			h[j] = make([]float64, d)
			h[j][j] = 1e-3
		}
		for i := range x {
			r := row(i)
			z := 0.0
			for j := range r {
				z += w[j] * r[j]
			}
			p := 1 / (1 + math.Exp(-z))
			for j := range r {
				g[j] += (p - y[i]) * r[j]
				for k := range r {
					h[j][k] += p * (1 - p) * r[j] * r[k]
				}
			}
		}
		step := solve(h, g)
		for j := range w {
			w[j] -= step[j]
		}
	}
	return w
}

// solve solves a·x = b by Gaussian elimination with partial pivoting.
func solve(a [][]float64, b []float64) []float64 {
	n := len(b)
	m := make([][]float64, n)
	for i := range a {
		m[i] = append(slices.Clone(a[i]), b[i])
	}
	for c := range n {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[p][c]) {
				p = r
			}
		}
		m[c], m[p] = m[p], m[c]
		for r := c + 1; r < n; r++ {
			f := m[r][c] / m[c][c]
			for k := c; k <= n; k++ {
				m[r][k] -= f * m[c][k]
			}
		}
	}
	x := make([]float64, n)
	for i := n - 1; i >= 0; i-- {
		s := m[i][n]
		for k := i + 1; k < n; k++ {
			s -= m[i][k] * x[k]
		}
		x[i] = s / m[i][i]
	}
	return x
}

// marginTable reports, for pairs of results of one query of which exactly
// one is relevant, how often the one with the higher relevance is the
// relevant one, by the difference of their relevance.
func marginTable(t *testing.T, qs []fitQuery) {
	edges := []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.01}
	right, all := make([]int, len(edges)), make([]int, len(edges))
	for _, q := range qs {
		if q.kind != "own" || len(q.scores) == 0 {
			continue
		}
		a := relevance.Answerable(q.ev).Answerable
		rel := make([]float64, len(q.scores))
		for i, s := range q.scores {
			rel[i] = relevance.Of(a, relevance.Share(s, q.scores[0], min(0, q.scores[len(q.scores)-1])))
		}
		for i := range rel {
			for j := i + 1; j < len(rel); j++ {
				if q.rel[i] == q.rel[j] {
					continue
				}
				d := math.Abs(rel[i] - rel[j])
				b := 0
				for d >= edges[b] {
					b++
				}
				all[b]++
				if (rel[i] > rel[j]) == q.rel[i] {
					right[b]++
				}
			}
		}
	}
	lo := 0.0
	for b, e := range edges {
		t.Logf("relevance difference [%.2f, %.2f): %5d pairs, the more relevant one is the judged one in %.3f", lo, e, all[b], float64(right[b])/float64(max(1, all[b])))
		lo = e
	}
}

var _ = fmt.Sprint
