package fusion

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// Property tests: many seeded random cases per invariant.

const propertyCases = 400

var propertyLegs = []string{mnemotype.LegLexical, mnemotype.LegDense, mnemotype.LegRecency, mnemotype.LegAccess}

// randScore draws from a mix of scales: small reals, integers (ties), BM25-like
// negatives, and occasional extremes.
func randScore(rng *rand.Rand, scale int) float64 {
	switch scale {
	case 0:
		return rng.Float64()*2 - 1
	case 1:
		return float64(rng.IntN(4)) // many ties
	case 2:
		return -rng.Float64() * 20
	default:
		switch rng.IntN(6) {
		case 0:
			return math.MaxFloat64 * (rng.Float64()*2 - 1)
		case 1:
			return math.SmallestNonzeroFloat64 * float64(rng.IntN(3))
		case 2:
			return -math.MaxFloat64
		default:
			return rng.NormFloat64() * 1e150
		}
	}
}

// randLegs returns 1–4 legs of 0–12 hits over a pool of 15 ids, ranked densely.
func randLegs(rng *rand.Rand) map[string][]mnemotype.Hit {
	legs := map[string][]mnemotype.Hit{}
	for _, name := range propertyLegs[:1+rng.IntN(len(propertyLegs))] {
		n := rng.IntN(13)
		scale := rng.IntN(4)
		perm := rng.Perm(15)[:n]
		hits := make([]mnemotype.Hit, n)
		for i, id := range perm {
			hits[i] = mnemotype.Hit{ID: fmt.Sprintf("m%02d", id), Score: randScore(rng, scale)}
		}
		legs[name] = DenseRanks(hits)
	}
	return legs
}

func randParams(rng *rand.Rand, legs map[string][]mnemotype.Hit) Params {
	pick := func(n int) int { return rng.IntN(n) }
	p := Params{
		Strategy:       Strategies()[pick(len(Strategies()))],
		Normalization:  Normalizations()[pick(len(Normalizations()))],
		Missing:        MissingPolicies()[pick(len(MissingPolicies()))],
		Counterfactual: pick(2) == 0,
	}
	if pick(2) == 0 {
		p.K = []float64{1, 10, 60, 1e-9, 1e300}[pick(5)]
		p.BordaK = []float64{1, 60, 0.5}[pick(3)]
		p.KParam = []float64{0.1, 1, 5, 1e6}[pick(4)]
	}
	if pick(2) == 0 {
		p.Weights = map[string]float64{}
		for leg := range legs {
			p.Weights[leg] = []float64{0, 0.3, 1, 2.5, 1e300}[pick(5)]
		}
	}
	if pick(4) == 0 {
		p.LowerBounds = map[string]float64{mnemotype.LegDense: rng.Float64() - 0.5}
	}
	if pick(4) == 0 {
		p.Bounds = map[string]Range{mnemotype.LegLexical: {Min: -20, Max: 0}}
	}
	if pick(3) == 0 {
		p.HighConfidence = true
		p.HighConfidenceThreshold = rng.Float64()
	}
	if pick(3) == 0 {
		p.AdaptiveWeights = true
		p.Query = []string{"what is JWT", "Threadline v2.3", "how do I deploy", "memories about cats", ""}[pick(5)]
	}
	if pick(3) == 0 {
		p.ExactMatchBonus = rng.Float64()
		p.Query = `"m0" m1x`
		p.Contents = func(id string) string { return id + " m1x" }
	}
	return p
}

func forCases(t *testing.T, seed uint64, f func(t *testing.T, rng *rand.Rand)) {
	t.Helper()
	for i := range propertyCases {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		f(t, rng)
		if t.Failed() {
			t.Fatalf("failed at case %d (seed %d)", i, seed)
		}
	}
}

func mustExplain(t *testing.T, legs map[string][]mnemotype.Hit, p Params) Outcome {
	t.Helper()
	out, err := FuseExplain(legs, p)
	if err != nil {
		t.Fatalf("FuseExplain: %v", err)
	}
	return out
}

func cloneLegs(legs map[string][]mnemotype.Hit) map[string][]mnemotype.Hit {
	out := make(map[string][]mnemotype.Hit, len(legs))
	for k, v := range legs {
		out[k] = append([]mnemotype.Hit(nil), v...)
	}
	return out
}

func TestProperty_ZeroWeightEqualsAbsentLeg(t *testing.T) {
	t.Parallel()
	forCases(t, 1, func(t *testing.T, rng *rand.Rand) {
		legs := randLegs(rng)
		p := randParams(rng, legs)
		var drop string
		for _, name := range propertyLegs {
			if _, ok := legs[name]; ok {
				drop = name
			}
		}
		zeroed := p
		zeroed.Weights = map[string]float64{}
		for k, v := range p.Weights {
			zeroed.Weights[k] = v
		}
		zeroed.Weights[drop] = 0
		absent := zeroed
		absent.Weights = map[string]float64{}
		for k, v := range zeroed.Weights {
			if k != drop {
				absent.Weights[k] = v
			}
		}
		without := cloneLegs(legs)
		delete(without, drop)
		a := mustExplain(t, legs, zeroed)
		b := mustExplain(t, without, absent)
		if !reflect.DeepEqual(a.Results, b.Results) {
			t.Errorf("weight 0 on %s differs from the leg being absent:\n%+v\n%+v", drop, a.Results, b.Results)
		}
		if a.Strategy != b.Strategy || !reflect.DeepEqual(a.Switches, b.Switches) {
			t.Errorf("switches differ: %s %v vs %s %v", a.Strategy, a.Switches, b.Strategy, b.Switches)
		}
	})
}

func TestProperty_ReorderingTiedInputsChangesNothing(t *testing.T) {
	t.Parallel()
	forCases(t, 2, func(t *testing.T, rng *rand.Rand) {
		legs := randLegs(rng)
		p := randParams(rng, legs)
		want := mustExplain(t, legs, p)
		shuffled := cloneLegs(legs)
		for _, hits := range shuffled {
			// Shuffle inside each run of equal ranks.
			for i := 0; i < len(hits); {
				j := i
				for j < len(hits) && hits[j].Rank == hits[i].Rank {
					j++
				}
				run := hits[i:j]
				rng.Shuffle(len(run), func(x, y int) { run[x], run[y] = run[y], run[x] })
				i = j
			}
		}
		got := mustExplain(t, shuffled, p)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("reordering tied hits changed the outcome:\n%+v\n%+v", got.Results, want.Results)
		}
	})
}

func TestProperty_RRFImprovingARankNeverLowersFusedRank(t *testing.T) {
	t.Parallel()
	forCases(t, 3, func(t *testing.T, rng *rand.Rand) {
		legs := randLegs(rng)
		p := Params{Weights: randParams(rng, legs).Weights, K: []float64{0, 1, 60}[rng.IntN(3)]}
		if rng.IntN(2) == 0 {
			p.Missing = MissingRenormalize
		}
		var leg string
		for name, hits := range legs {
			if len(hits) > 1 && p.Weight(name) > 0 {
				leg = name
			}
		}
		if leg == "" {
			return
		}
		hits := legs[leg]
		i := 1 + rng.IntN(len(hits)-1)
		id := hits[i].ID
		before := rankOf(mustExplain(t, legs, p).Results, id)
		better := cloneLegs(legs)
		better[leg][i].Rank = 1 + rng.IntN(hits[i].Rank)
		after := rankOf(mustExplain(t, better, p).Results, id)
		if after > before {
			t.Errorf("%s: rank in %s %d → %d moved its fused rank %d → %d", id, leg, hits[i].Rank, better[leg][i].Rank, before, after)
		}
	})
}

func rankOf(res []Result, id string) int {
	for _, r := range res {
		if r.ID == id {
			return r.Rank
		}
	}
	return 0
}

func TestProperty_RRFIgnoresScoreScale(t *testing.T) {
	t.Parallel()
	forCases(t, 4, func(t *testing.T, rng *rand.Rand) {
		legs := randLegs(rng)
		p := randParams(rng, legs)
		p.Strategy, p.HighConfidence, p.Counterfactual = RRF, false, false
		scaled := cloneLegs(legs)
		for _, hits := range scaled {
			a, b := rng.Float64()*100+0.01, rng.NormFloat64()*100
			for i := range hits {
				hits[i].Score = hits[i].Score*a + b // ranks untouched
				if !isFinite(hits[i].Score) {
					hits[i].Score = 0
				}
			}
		}
		x, y := mustExplain(t, legs, p).Results, mustExplain(t, scaled, p).Results
		if len(x) != len(y) {
			t.Fatalf("lengths differ")
		}
		for i := range x {
			if x[i].ID != y[i].ID || x[i].Score != y[i].Score {
				t.Errorf("position %d: %s %v vs %s %v", i, x[i].ID, x[i].Score, y[i].ID, y[i].Score)
			}
			for leg, d := range x[i].Legs {
				if e := y[i].Legs[leg]; e.Rank != d.Rank || e.Contribution != d.Contribution {
					t.Errorf("%s %s: %+v vs %+v", x[i].ID, leg, d, e)
				}
			}
		}
	})
}

func TestProperty_NormalizedWithinUnitInterval(t *testing.T) {
	t.Parallel()
	forCases(t, 5, func(t *testing.T, rng *rand.Rand) {
		legs := randLegs(rng)
		p := randParams(rng, legs)
		for p.Normalization == NormNone {
			p.Normalization = Normalizations()[rng.IntN(len(Normalizations()))]
		}
		for !p.Strategy.UsesScores() {
			p.Strategy = Strategies()[rng.IntN(len(Strategies()))]
		}
		out := mustExplain(t, legs, p)
		for _, r := range out.Results {
			for leg, d := range r.Legs {
				if !(d.Normalized >= NormFloor && d.Normalized <= 1) {
					t.Errorf("%s in %s normalised to %v (%s/%s)", r.ID, leg, d.Normalized, out.Strategy, out.Normalization)
				}
			}
			for leg, d := range r.Imputed {
				if !(d.Normalized >= 0 && d.Normalized <= 1) {
					t.Errorf("%s imputed in %s normalised to %v", r.ID, leg, d.Normalized)
				}
			}
		}
	})
}

func TestProperty_Deterministic(t *testing.T) {
	t.Parallel()
	forCases(t, 6, func(t *testing.T, rng *rand.Rand) {
		legs := randLegs(rng)
		p := randParams(rng, legs)
		a := mustExplain(t, legs, p)
		for range 3 {
			if b := mustExplain(t, cloneLegs(legs), p); !reflect.DeepEqual(a, b) {
				t.Fatalf("two runs differ:\n%+v\n%+v", a, b)
			}
		}
	})
}

func TestProperty_NoNaNOrInf(t *testing.T) {
	t.Parallel()
	forCases(t, 7, func(t *testing.T, rng *rand.Rand) {
		legs := randLegs(rng)
		p := randParams(rng, legs)
		checkOutcome(t, legs, p, mustExplain(t, legs, p))
	})
}

// checkOutcome asserts the invariants every successful fusion must hold.
func checkOutcome(t *testing.T, legs map[string][]mnemotype.Hit, p Params, out Outcome) {
	t.Helper()
	union := map[string]bool{}
	for name, hits := range legs {
		if out.Weights[name] > 0 {
			for _, h := range hits {
				union[h.ID] = true
			}
		}
	}
	if len(out.Results) != len(union) {
		t.Errorf("%d results, want the %d candidates of the active legs", len(out.Results), len(union))
	}
	seen := map[string]bool{}
	for i, r := range out.Results {
		if !union[r.ID] || seen[r.ID] {
			t.Errorf("result %s unexpected or repeated", r.ID)
		}
		seen[r.ID] = true
		if r.Rank != i+1 {
			t.Errorf("%s at position %d has rank %d", r.ID, i+1, r.Rank)
		}
		if i > 0 && out.Results[i-1].Score < r.Score {
			t.Errorf("not sorted: %v before %v", out.Results[i-1].Score, r.Score)
		}
		vals := []float64{r.Score, r.Bonus}
		for _, d := range r.Legs {
			vals = append(vals, d.Score, d.Normalized, d.Contribution)
		}
		for _, d := range r.Imputed {
			vals = append(vals, d.Score, d.Normalized, d.Contribution)
		}
		for _, v := range vals {
			if !isFinite(v) {
				t.Errorf("%s: non-finite value %v in %+v", r.ID, v, r)
			}
		}
	}
	if p.Counterfactual {
		for _, s := range Strategies() {
			if s == out.Strategy {
				continue
			}
			ranks := map[int]bool{}
			for _, r := range out.Results {
				k := r.Counterfactual[string(s)]
				if k < 1 || k > len(out.Results) || ranks[k] {
					t.Errorf("counterfactual %s of %s = %d: not a permutation", s, r.ID, k)
				}
				ranks[k] = true
			}
		}
	}
}

func TestFuse_ExtremeValuesStayFinite(t *testing.T) {
	t.Parallel()
	legs := map[string][]mnemotype.Hit{
		mnemotype.LegDense:   {{ID: "a", Rank: 1, Score: math.MaxFloat64}, {ID: "b", Rank: 2, Score: -math.MaxFloat64}},
		mnemotype.LegLexical: {{ID: "b", Rank: 1, Score: math.MaxFloat64}, {ID: "c", Rank: 2, Score: math.SmallestNonzeroFloat64}, {ID: "d", Rank: 1 << 30, Score: -math.MaxFloat64}},
		mnemotype.LegRecency: {{ID: "c", Rank: 1, Score: 5e-324}, {ID: "a", Rank: 2, Score: 0}},
	}
	for _, s := range Strategies() {
		for _, n := range Normalizations() {
			for _, m := range MissingPolicies() {
				for _, w := range []float64{1, 1e300, math.MaxFloat64} {
					p := Params{
						Strategy: s, Normalization: n, Missing: m, Counterfactual: true,
						Weights: map[string]float64{"dense": w, "lexical": w, "recency": 1e-300},
						K:       math.SmallestNonzeroFloat64, KParam: math.SmallestNonzeroFloat64,
						LowerBounds:     map[string]float64{"dense": -math.MaxFloat64},
						Bounds:          map[string]Range{"lexical": {Min: -math.MaxFloat64, Max: math.MaxFloat64}},
						AdaptiveWeights: true, Query: `what is "x"`,
						ExactMatchBonus: 1, Contents: func(string) string { return "x" },
					}
					out, err := FuseExplain(legs, p)
					if err != nil {
						t.Fatal(err)
					}
					checkOutcome(t, legs, p, out)
					if t.Failed() {
						t.Fatalf("%s/%s/%s/w=%g", s, n, m, w)
					}
				}
			}
		}
	}
}
