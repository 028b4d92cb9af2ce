package relevance

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestAnswerable(t *testing.T) {
	t.Parallel()
	strong := Evidence{Terms: 3, Lexical: true, LexicalBest: 25, Memories: 3000, Coverage: 1, Dense: true, DenseBest: 0.8, Model: "glove-sif-100d"}
	for _, tc := range []struct {
		name      string
		edit      func(*Evidence)
		basis     Basis
		lo, hi    float64 // the range Answerable must fall in
		lowerThan string  // a case it must be below, "" for none
	}{
		{"StrongMatch", func(*Evidence) {}, BasisLexical, 0.9, 1, ""},
		{"HalfTheWords", func(e *Evidence) { e.Coverage = 1.0 / 3 }, BasisLexical, 0, 1, "StrongMatch"},
		{"WeakScore", func(e *Evidence) { e.LexicalBest = 2 }, BasisLexical, 0, 0.5, "StrongMatch"},
		{"NothingMatched", func(e *Evidence) { e.LexicalBest, e.Coverage, e.DenseBest = 0, 0, 0.2 }, BasisDense, 0, 0.05, ""},
		{"DenseOnlyClose", func(e *Evidence) { e.Lexical, e.LexicalBest = false, 0; e.DenseBest = 0.9 }, BasisDense, 0.9, 1, ""},
		{"DenseOnlyOtherModel", func(e *Evidence) { e.Lexical, e.LexicalBest, e.Model = false, 0, "text-embedding-3-small" }, BasisNone, 1, 1, ""},
		{"HashNoWords", func(e *Evidence) { e.LexicalBest, e.Model = 0, "hash" }, BasisDense, 0, 0, ""},
		{"HashDenseOnly", func(e *Evidence) { e.Lexical, e.LexicalBest, e.Model = false, 0, "hash" }, BasisNone, 1, 1, ""},
		{"SmallProfileAWord", func(e *Evidence) { e.Memories, e.LexicalBest, e.Coverage = 3, 1e-6, 0.5 }, BasisSmall, 1, 1, ""},
		{"SmallProfileNoWord", func(e *Evidence) { e.Memories, e.LexicalBest, e.Coverage = 3, 1e-6, 0 }, BasisSmall, 0, 0, ""},
		{"NoLegs", func(e *Evidence) { *e = Evidence{Terms: 2} }, BasisLexical, 0, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := strong
			tc.edit(&e)
			got := Answerable(e)
			if got.Basis != tc.basis || got.Answerable < tc.lo || got.Answerable > tc.hi {
				t.Errorf("Answerable(%+v) = %+v, want basis %s in [%g, %g]", e, got, tc.basis, tc.lo, tc.hi)
			}
			if tc.lowerThan != "" && got.Answerable >= Answerable(strong).Answerable {
				t.Errorf("%+v not below the strong match's %+v", got, Answerable(strong))
			}
		})
	}
}

// TestAnswerable_Monotone: more of the query's words, a higher score or a
// closer embedding never lowers the estimate.
func TestAnswerable_Monotone(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		e := Evidence{Terms: 1 + rng.IntN(8), Lexical: true, LexicalBest: rng.Float64() * 30, Memories: rng.IntN(100000),
			Coverage: rng.Float64(), Dense: true, DenseBest: rng.Float64()*2 - 1, Model: "glove-sif-100d"}
		up := e
		up.LexicalBest += rng.Float64() * 5
		up.Coverage = math.Min(1, up.Coverage+rng.Float64()*0.3)
		up.DenseBest = math.Min(1, up.DenseBest+rng.Float64()*0.3)
		if a, b := Answerable(e), Answerable(up); b.Answerable < a.Answerable && a.Basis == b.Basis {
			t.Fatalf("stronger evidence %+v gives %v < %v for %+v", up, b, a, e)
		}
		if a := Answerable(e).Answerable; a < 0 || a > 1 || math.IsNaN(a) {
			t.Fatalf("Answerable(%+v) = %v", e, a)
		}
	}
}

func TestShareAndOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ score, best, floor, want float64 }{
		{1, 1, 0, 1},
		{0.25, 1, 0, 0.5},
		{0, 1, 0, 0},
		{-1, 1, -1, 0},
		{0, 1, -1, math.Sqrt(0.5)},
		{0.5, 0.5, 0.5, 1}, // every score equal
		{2, 1, 0, 1},       // clamped
	} {
		if got := Share(tc.score, tc.best, tc.floor); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("Share(%v, %v, %v) = %v, want %v", tc.score, tc.best, tc.floor, got, tc.want)
		}
	}
	if got := Of(0.5, 0.5); got != 0.25 {
		t.Errorf("Of(0.5, 0.5) = %v", got)
	}
	if got := Of(math.NaN(), 1); got != 0 {
		t.Errorf("Of(NaN, 1) = %v", got)
	}
}

// TestGroup_NeverFlipsBeyondTheMargin is the prior's contract: whatever the
// prior scores, two items whose relevance differs by more than the margin
// keep their relevance order, and the order is a permutation.
func TestGroup_NeverFlipsBeyondTheMargin(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		n := rng.IntN(30)
		rel := make([]float64, n)
		prior := make([]float64, n)
		for i := range rel {
			rel[i] = rng.Float64()
			prior[i] = rng.Float64()
		}
		slices.SortFunc(rel, func(a, b float64) int { return -cmpFloat(a, b) })
		margin := []float64{0, 0.02, 0.1, 1}[rng.IntN(4)]
		order := Group(rel, prior, margin)
		if got := slices.Sorted(slices.Values(order)); len(got) != n || (n > 0 && (got[0] != 0 || got[n-1] != n-1)) {
			t.Fatalf("order %v is not a permutation of %d", order, n)
		}
		for i := range order {
			for j := i + 1; j < len(order); j++ {
				if a, b := order[i], order[j]; rel[b]-rel[a] > margin {
					t.Fatalf("margin %v: %d (relevance %v) placed above %d (relevance %v)", margin, a, rel[a], b, rel[b])
				}
			}
		}
	}
	// Within the margin the prior decides; beyond it, it does not.
	if got := Group([]float64{0.9, 0.89, 0.5}, []float64{0.1, 0.2, 0.9}, 0.02); !slices.Equal(got, []int{1, 0, 2}) {
		t.Errorf("Group = %v, want [1 0 2]", got)
	}
	if got := Group([]float64{0.9, 0.89, 0.5}, []float64{0.1, 0.2, 0.9}, 0); !slices.Equal(got, []int{0, 1, 2}) {
		t.Errorf("Group with margin 0 = %v, want [0 1 2]", got)
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func TestAutocut(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		rel   []float64
		jumps int
		want  int
	}{
		{"Off", []float64{0.9, 0.2, 0.1}, 0, 3},
		{"OneKnee", []float64{0.9, 0.88, 0.86, 0.3, 0.28, 0.27}, 1, 3},
		{"SecondKnee", []float64{0.9, 0.88, 0.5, 0.48, 0.1, 0.09}, 2, 4},
		{"SmoothDecline", []float64{0.9, 0.8, 0.7, 0.6, 0.5}, 1, 5},
		{"AllEqual", []float64{0.5, 0.5, 0.5}, 1, 3},
		{"Two", []float64{0.9, 0.1}, 1, 2},
		{"Three", []float64{0.99, 0.91, 0.03}, 1, 2},
		{"SmallKnee", []float64{0.5, 0.49, 0.45, 0.449}, 1, 4},
		{"One", []float64{0.9}, 1, 1},
		{"Empty", nil, 1, 0},
	} {
		if got := Autocut(tc.rel, tc.jumps); got != tc.want {
			t.Errorf("%s: Autocut(%v, %d) = %d, want %d", tc.name, tc.rel, tc.jumps, got, tc.want)
		}
	}
}
