package fusion

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

const tol = 1e-6

func approx(a, b float64) bool { return math.Abs(a-b) < tol }

// ranked builds a leg from (id, score) pairs in rank order, with dense ranks
// by position (equal consecutive scores share a rank).
func ranked(pairs ...any) []mnemotype.Hit {
	var hits []mnemotype.Hit
	for i := 0; i < len(pairs); i += 2 {
		hits = append(hits, mnemotype.Hit{ID: pairs[i].(string), Score: toFloat(pairs[i+1])})
	}
	for i := range hits {
		switch {
		case i == 0:
			hits[i].Rank = 1
		case hits[i].Score == hits[i-1].Score:
			hits[i].Rank = hits[i-1].Rank
		default:
			hits[i].Rank = hits[i-1].Rank + 1
		}
	}
	return hits
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case float64:
		return x
	}
	panic("bad score")
}

// rankOnly builds a leg of ids at ranks 1, 2, 3, … without scores.
func rankOnly(ids ...string) []mnemotype.Hit {
	hits := make([]mnemotype.Hit, len(ids))
	for i, id := range ids {
		hits[i] = mnemotype.Hit{ID: id, Rank: i + 1}
	}
	return hits
}

// small is the hand-computed case used below:
//
//	dense:   a 0.9 (#1), b 0.5 (#2), c 0.1 (#3)
//	lexical: b 10 (#1),  d 6 (#2),   a 2 (#3)
//
// minmax: dense a=1, b=0.5, c=0.001 (floor); lexical b=1, d=0.5, a=0.001.
// dbsf: μ ± 3σ with σ = √(0.32/3)·… gives top 0.704124, middle 0.5, bottom
// 0.295876 in both legs.
func small() map[string][]mnemotype.Hit {
	return map[string][]mnemotype.Hit{
		mnemotype.LegDense:   ranked("a", 0.9, "b", 0.5, "c", 0.1),
		mnemotype.LegLexical: ranked("b", 10, "d", 6, "a", 2),
	}
}

func scoresOf(res []Result) map[string]float64 {
	m := map[string]float64{}
	for _, r := range res {
		m[r.ID] = r.Score
	}
	return m
}

func idsOf(res []Result) string {
	ids := make([]string, len(res))
	for i, r := range res {
		ids[i] = r.ID
	}
	return strings.Join(ids, ",")
}

func TestFuse_HandComputed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		p     Params
		want  map[string]float64
		order string
	}{
		{"rrf default k 60", Params{},
			map[string]float64{"a": 1.0/61 + 1.0/63, "b": 1.0/62 + 1.0/61, "c": 1.0 / 63, "d": 1.0 / 62}, "b,a,d,c"},
		{"rrf k 10 weighted", Params{K: 10, Weights: map[string]float64{"dense": 2, "lexical": 0.5}},
			map[string]float64{"a": 2.0/11 + 0.5/13, "b": 2.0/12 + 0.5/11, "c": 2.0 / 13, "d": 0.5 / 12}, "a,b,c,d"},
		{"borda_rank own k", Params{Strategy: BordaRank, K: 1000, BordaK: 10},
			map[string]float64{"a": 1.0/11 + 1.0/13, "b": 1.0/12 + 1.0/11, "c": 1.0 / 13, "d": 1.0 / 12}, "b,a,d,c"},
		{"weighted_average minmax", Params{Strategy: WeightedAverage},
			map[string]float64{"a": 0.5005, "b": 0.75, "c": 0.0005, "d": 0.25}, "b,a,d,c"},
		{"weighted_average weights renormalised", Params{Strategy: WeightedAverage, Weights: map[string]float64{"dense": 3, "lexical": 1}},
			map[string]float64{"a": 0.75 + 0.25*0.001, "b": 0.375 + 0.25, "c": 0.75 * 0.001, "d": 0.125}, "a,b,d,c"},
		{"weighted_average zscore", Params{Strategy: WeightedAverage, Normalization: NormZScore},
			map[string]float64{"a": 0.5, "b": 0.6364487, "c": 0.1135513, "d": 0.25}, "b,a,d,c"},
		{"weighted_average tmm", Params{Strategy: WeightedAverage, Normalization: NormTMM},
			// dense on [-1, 1]: 0.95, 0.75, 0.55; lexical has no bounds: minmax.
			map[string]float64{"a": 0.4755, "b": 0.875, "c": 0.275, "d": 0.25}, "b,a,c,d"},
		{"weighted_average none", Params{Strategy: WeightedAverage, Normalization: NormNone},
			map[string]float64{"a": 1.45, "b": 5.25, "c": 0.05, "d": 3}, "b,d,a,c"},
		{"weighted_average dense lower bound", Params{Strategy: WeightedAverage, LowerBounds: map[string]float64{"dense": 0}},
			map[string]float64{"a": 0.5005, "b": 0.5*0.5/0.9 + 0.5, "c": 0.5 * 0.1 / 0.9, "d": 0.25}, "b,a,d,c"},
		{"score_weighted_rrf kparam 5", Params{Strategy: ScoreWeightedRRF},
			map[string]float64{"a": 1.0/6 + 0.001/8, "b": 0.5/7 + 1.0/6, "c": 0.001 / 8, "d": 0.5 / 7}, "b,a,d,c"},
		{"score_weighted_rrf kparam 1", Params{Strategy: ScoreWeightedRRF, KParam: 1},
			map[string]float64{"a": 1.0/2 + 0.001/4, "b": 0.5/3 + 1.0/2, "c": 0.001 / 4, "d": 0.5 / 3}, "b,a,d,c"},
		{"max_confidence tie broken on normalised sum", Params{Strategy: MaxConfidence},
			// a and b both reach 1; b's normalised sum 1.5 beats a's 1.001.
			map[string]float64{"a": 1, "b": 1, "c": 0.001, "d": 0.5}, "b,a,d,c"},
		{"max_confidence weighted", Params{Strategy: MaxConfidence, Weights: map[string]float64{"dense": 1, "lexical": 0.5}},
			map[string]float64{"a": 1, "b": 0.5, "c": 0.001, "d": 0.25}, "a,b,d,c"},
		{"dbsf", Params{Strategy: DBSF},
			map[string]float64{"a": 1, "b": 1.2041241, "c": 0.2958759, "d": 0.5}, "b,a,d,c"},
		{"rrf renormalize", Params{Missing: MissingRenormalize},
			map[string]float64{"a": 1.0/61 + 1.0/63, "b": 1.0/62 + 1.0/61, "c": 2.0 / 63, "d": 2.0 / 62}, "b,a,d,c"},
		{"rrf impute_min", Params{Missing: MissingImputeMin},
			map[string]float64{"a": 1.0/61 + 1.0/63, "b": 1.0/62 + 1.0/61, "c": 2.0 / 63, "d": 1.0/62 + 1.0/63}, "b,a,d,c"},
		{"rrf impute_rank", Params{Missing: MissingImputeRank},
			// window 3: an absent item is imputed rank 4.
			map[string]float64{"a": 1.0/61 + 1.0/63, "b": 1.0/62 + 1.0/61, "c": 1.0/63 + 1.0/64, "d": 1.0/62 + 1.0/64}, "b,a,d,c"},
		{"weighted_average renormalize", Params{Strategy: WeightedAverage, Missing: MissingRenormalize},
			map[string]float64{"a": 0.5005, "b": 0.75, "c": 0.001, "d": 0.5}, "b,a,d,c"},
		{"weighted_average impute_min", Params{Strategy: WeightedAverage, Missing: MissingImputeMin},
			map[string]float64{"a": 0.5005, "b": 0.75, "c": 0.001, "d": 0.2505}, "b,a,d,c"},
		{"weighted_average impute_rank is zero", Params{Strategy: WeightedAverage, Missing: MissingImputeRank},
			map[string]float64{"a": 0.5005, "b": 0.75, "c": 0.0005, "d": 0.25}, "b,a,d,c"},
		{"score_weighted_rrf impute_min", Params{Strategy: ScoreWeightedRRF, Missing: MissingImputeMin},
			map[string]float64{"a": 1.0/6 + 0.001/8, "b": 0.5/7 + 1.0/6, "c": 0.001/8 + 0.001/8, "d": 0.5/7 + 0.001/8}, "b,a,d,c"},
		{"max_confidence renormalize is zero", Params{Strategy: MaxConfidence, Missing: MissingRenormalize},
			map[string]float64{"a": 1, "b": 1, "c": 0.001, "d": 0.5}, "b,a,d,c"},
		{"dbsf impute_min", Params{Strategy: DBSF, Missing: MissingImputeMin},
			map[string]float64{"a": 1, "b": 1.2041241, "c": 0.2958759 * 2, "d": 0.5 + 0.2958759}, "b,a,d,c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res, err := Fuse(small(), tt.p)
			if err != nil {
				t.Fatal(err)
			}
			got := scoresOf(res)
			for id, w := range tt.want {
				if !approx(got[id], w) {
					t.Errorf("%s = %.7f, want %.7f", id, got[id], w)
				}
			}
			if len(res) != len(tt.want) {
				t.Errorf("got %d results, want %d", len(res), len(tt.want))
			}
			if o := idsOf(res); o != tt.order {
				t.Errorf("order %s, want %s", o, tt.order)
			}
			for i, r := range res {
				if r.Rank != i+1 {
					t.Errorf("%s has rank %d at position %d", r.ID, r.Rank, i+1)
				}
			}
		})
	}
}

func TestFuse_WorkedExample(t *testing.T) {
	t.Parallel()
	legs := map[string][]mnemotype.Hit{
		"dense":   rankOnly("a", "b"),
		"lexical": rankOnly("x", "y", "z", "w", "a"),
	}
	res, err := Fuse(legs, Params{})
	if err != nil {
		t.Fatal(err)
	}
	got := scoresOf(res)
	// 1/(1+60) + 1/(5+60) = 0.0164 + 0.0154 = 0.0318.
	if math.Abs(got["a"]-0.0318) > 5e-5 || !approx(got["a"], 1.0/61+1.0/65) {
		t.Errorf("a = %.5f, want 0.0318", got["a"])
	}
	// Dense rank 1 only: 1/61 = 0.0164.
	only, err := Fuse(map[string][]mnemotype.Hit{"dense": rankOnly("a"), "lexical": rankOnly("q")}, Params{})
	if err != nil {
		t.Fatal(err)
	}
	if s := scoresOf(only)["a"]; math.Abs(s-0.0164) > 5e-5 {
		t.Errorf("dense-only a = %.5f, want 0.0164", s)
	}
	if res[0].ID != "a" {
		t.Errorf("top = %s, want a", res[0].ID)
	}
	d := res[0].Legs["lexical"]
	if d.Rank != 5 || !approx(d.Contribution, 1.0/65) {
		t.Errorf("a's lexical detail = %+v, want rank 5, contribution 1/65", d)
	}
}

func TestFuse_ZeroWeightAdmitsNothing(t *testing.T) {
	t.Parallel()
	for _, s := range Strategies() {
		t.Run(string(s), func(t *testing.T) {
			t.Parallel()
			res, err := Fuse(small(), Params{Strategy: s, Weights: map[string]float64{"lexical": 0}})
			if err != nil {
				t.Fatal(err)
			}
			if o := idsOf(res); o != "a,b,c" {
				t.Fatalf("got %s, want only the dense leg's a,b,c", o)
			}
			for _, r := range res {
				if _, ok := r.Legs["lexical"]; ok {
					t.Errorf("%s has a lexical detail", r.ID)
				}
			}
		})
	}
}

func TestFuseExplain_Trace(t *testing.T) {
	t.Parallel()
	out, err := FuseExplain(small(), Params{Strategy: WeightedAverage, Counterfactual: true})
	if err != nil {
		t.Fatal(err)
	}
	if out.Strategy != WeightedAverage || out.Requested != WeightedAverage || out.Normalization != NormMinMax ||
		out.Missing != MissingZero || out.Switches != nil {
		t.Errorf("outcome header = %+v", out)
	}
	if !reflect.DeepEqual(out.Weights, map[string]float64{"dense": 1, "lexical": 1}) {
		t.Errorf("weights = %v", out.Weights)
	}
	a := out.Results[1]
	if a.ID != "a" {
		t.Fatalf("second = %s, want a", a.ID)
	}
	wantDense := mnemotype.LegDetail{Rank: 1, Score: 0.9, Normalized: 1, Contribution: 0.5}
	if got := a.Legs["dense"]; !approx(got.Normalized, 1) || !approx(got.Contribution, 0.5) || got.Rank != 1 || got.Score != 0.9 {
		t.Errorf("a dense = %+v, want %+v", got, wantDense)
	}
	if got := a.Legs["lexical"]; got.Rank != 3 || !approx(got.Normalized, NormFloor) || !approx(got.Contribution, 0.0005) {
		t.Errorf("a lexical = %+v", got)
	}
	// Contributions add up to the score.
	for _, r := range out.Results {
		sum := 0.0
		for _, d := range r.Legs {
			sum += d.Contribution
		}
		if !approx(sum, r.Score) {
			t.Errorf("%s: contributions sum to %v, score %v", r.ID, sum, r.Score)
		}
	}
	// Counterfactual: every other strategy, each a permutation of 1..n.
	for _, s := range Strategies() {
		seen := map[int]bool{}
		for _, r := range out.Results {
			rank, ok := r.Counterfactual[string(s)]
			if s == WeightedAverage {
				if ok {
					t.Errorf("counterfactual lists the strategy used")
				}
				continue
			}
			if !ok || rank < 1 || rank > len(out.Results) || seen[rank] {
				t.Errorf("%s: counterfactual %s rank %d invalid", r.ID, s, rank)
			}
			seen[rank] = true
		}
	}
	// Under tmm, c overtakes d: the counterfactual must agree with a real run.
	for _, s := range []Strategy{RRF, DBSF, MaxConfidence} {
		res, err := Fuse(small(), Params{Strategy: s})
		if err != nil {
			t.Fatal(err)
		}
		byID := map[string]int{}
		for _, r := range res {
			byID[r.ID] = r.Rank
		}
		for _, r := range out.Results {
			if r.Counterfactual[string(s)] != byID[r.ID] {
				t.Errorf("%s: counterfactual %s = %d, real run %d", r.ID, s, r.Counterfactual[string(s)], byID[r.ID])
			}
		}
	}
}

func TestFuseExplain_CounterfactualOffByDefault(t *testing.T) {
	t.Parallel()
	res, err := Fuse(small(), Params{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Counterfactual != nil {
			t.Fatalf("%s has a counterfactual without asking", r.ID)
		}
	}
	out, err := FuseExplain(small(), Params{Counterfactual: true, CounterfactualStrategies: []Strategy{RRF, DBSF}})
	if err != nil {
		t.Fatal(err)
	}
	if cf := out.Results[0].Counterfactual; len(cf) != 1 || cf["dbsf"] == 0 {
		t.Errorf("restricted counterfactual = %v, want only dbsf", cf)
	}
}

func TestFuseExplain_Imputed(t *testing.T) {
	t.Parallel()
	out, err := FuseExplain(small(), Params{Missing: MissingImputeRank})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Results {
		if r.ID != "c" {
			continue
		}
		d, ok := r.Imputed["lexical"]
		if !ok || d.Rank != 4 || !approx(d.Contribution, 1.0/64) {
			t.Errorf("c imputed = %+v, want lexical rank 4, contribution 1/64", r.Imputed)
		}
		if _, listed := r.Legs["lexical"]; listed {
			t.Errorf("c lists an imputed leg in Legs")
		}
	}
}

func TestFuse_SafeguardsOneHitAndEqualScores(t *testing.T) {
	t.Parallel()
	legs := map[string][]mnemotype.Hit{
		"dense":   ranked("a", 0.3),
		"lexical": ranked("a", 5, "b", 5, "c", 5),
	}
	for _, n := range []Normalization{NormMinMax, NormZScore, NormDBSF} {
		out, err := FuseExplain(legs, Params{Strategy: WeightedAverage, Normalization: n})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range out.Results {
			for leg, d := range r.Legs {
				if d.Normalized != 1 {
					t.Errorf("%s: %s in %s normalised to %v, want 1", n, r.ID, leg, d.Normalized)
				}
			}
		}
	}
}

func TestFuse_LowerBoundBelowAllScores(t *testing.T) {
	t.Parallel()
	// Every dense hit is below the bound: all get the floor, none is stretched to 1.
	out, err := FuseExplain(map[string][]mnemotype.Hit{"dense": ranked("a", 0.12, "b", 0.10)},
		Params{Strategy: WeightedAverage, LowerBounds: map[string]float64{"dense": 0.2}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Results {
		if r.Legs["dense"].Normalized != NormFloor {
			t.Errorf("%s normalised to %v, want the floor", r.ID, r.Legs["dense"].Normalized)
		}
	}
}

func TestFuseExplain_HighConfidence(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		p         Params
		want      Strategy
		switches  []string
		wantOrder string
	}{
		{"off by default", Params{}, RRF, nil, "b,a,d,c"},
		{"fires at 0.75", Params{HighConfidence: true}, MaxConfidence, []string{SwitchHighConfidence}, "b,a,d,c"},
		{"threshold above top", Params{HighConfidence: true, HighConfidenceThreshold: 0.95}, RRF, nil, "b,a,d,c"},
		{"dense disabled", Params{HighConfidence: true, Weights: map[string]float64{"dense": 0}}, RRF, nil, "b,d,a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := FuseExplain(small(), tt.p)
			if err != nil {
				t.Fatal(err)
			}
			if out.Strategy != tt.want || out.Requested != RRF || !reflect.DeepEqual(out.Switches, tt.switches) {
				t.Errorf("strategy %s (requested %s), switches %v; want %s, %v", out.Strategy, out.Requested, out.Switches, tt.want, tt.switches)
			}
			if o := idsOf(out.Results); o != tt.wantOrder {
				t.Errorf("order %s, want %s", o, tt.wantOrder)
			}
		})
	}
}

func TestFuseExplain_AdaptiveWeights(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		p       Params
		intent  Intent
		weights map[string]float64
	}{
		{"definition splits evenly", Params{Query: "what is JWT"}, IntentDefinition, map[string]float64{"dense": 1, "lexical": 1}},
		{"entity keeps the total", Params{Query: "Threadline v2.3", Weights: map[string]float64{"dense": 2, "lexical": 1}},
			IntentEntity, map[string]float64{"dense": 2.1, "lexical": 0.9}},
		{"exploratory", Params{Query: "thoughts on memory consolidation"}, IntentExploratory, map[string]float64{"dense": 1.4, "lexical": 0.6}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.p.AdaptiveWeights = true
			out, err := FuseExplain(small(), tt.p)
			if err != nil {
				t.Fatal(err)
			}
			if out.Intent != tt.intent || !reflect.DeepEqual(out.Switches, []string{SwitchAdaptiveWeights}) {
				t.Errorf("intent %s, switches %v", out.Intent, out.Switches)
			}
			for leg, w := range tt.weights {
				if !approx(out.Weights[leg], w) {
					t.Errorf("weight %s = %v, want %v", leg, out.Weights[leg], w)
				}
			}
		})
	}
	t.Run("disabled leg stays disabled", func(t *testing.T) {
		t.Parallel()
		out, err := FuseExplain(small(), Params{AdaptiveWeights: true, Query: "what is JWT", Weights: map[string]float64{"lexical": 0}})
		if err != nil {
			t.Fatal(err)
		}
		if out.Switches != nil || out.Weights["lexical"] != 0 || out.Weights["dense"] != 1 {
			t.Errorf("switches %v, weights %v", out.Switches, out.Weights)
		}
	})
}

func TestFuseExplain_ExactMatchBonus(t *testing.T) {
	t.Parallel()
	contents := map[string]string{
		"a": "Deployed Threadline v2.3 with the JWT auth fix",
		"b": "notes on authentication",
		"c": "jwt AUTH fix done",
		"d": "v2.30 released",
	}
	p := Params{Query: `the "JWT auth fix" in v2.3`, ExactMatchBonus: 0.1, Contents: func(id string) string { return contents[id] }}
	out, err := FuseExplain(small(), p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out.ExactTerms, []string{"JWT auth fix", "v2.3"}) {
		t.Errorf("exact terms = %q", out.ExactTerms)
	}
	bonus := 0.1 / 61
	want := map[string]float64{"a": 1.0/61 + 1.0/63 + bonus, "b": 1.0/62 + 1.0/61, "c": 1.0/63 + bonus, "d": 1.0 / 62}
	got := scoresOf(out.Results)
	for id, w := range want {
		if !approx(got[id], w) {
			t.Errorf("%s = %.7f, want %.7f", id, got[id], w)
		}
	}
	if o := idsOf(out.Results); o != "a,b,c,d" {
		t.Errorf("order %s, want a,b,c,d", o)
	}
	for _, r := range out.Results {
		if wantBonus := map[string]bool{"a": true, "c": true}[r.ID]; (r.Bonus != 0) != wantBonus || (wantBonus && !approx(r.Bonus, bonus)) {
			t.Errorf("%s bonus = %v", r.ID, r.Bonus)
		}
	}
	// Off by default: the same params without the bonus change nothing.
	p.ExactMatchBonus = 0
	res, err := Fuse(small(), p)
	if err != nil {
		t.Fatal(err)
	}
	if o := idsOf(res); o != "b,a,d,c" {
		t.Errorf("without bonus: order %s", o)
	}
}

func TestFuse_DuplicateIDKeepsBestRank(t *testing.T) {
	t.Parallel()
	legs := map[string][]mnemotype.Hit{"dense": {{ID: "a", Rank: 3, Score: 1}, {ID: "b", Rank: 2}, {ID: "a", Rank: 1, Score: 2}}}
	res, err := Fuse(legs, Params{})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].ID != "a" || res[0].Legs["dense"].Rank != 1 || len(res) != 2 {
		t.Errorf("got %+v", res)
	}
}

func TestFuse_InvalidInput(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		legs map[string][]mnemotype.Hit
		p    Params
		want string
	}{
		{"unknown strategy", small(), Params{Strategy: "cc"}, `strategy "cc"`},
		{"unknown normalization", small(), Params{Normalization: "l2"}, `normalization "l2"`},
		{"unknown missing", small(), Params{Missing: "worst"}, `missing policy "worst"`},
		{"negative k", small(), Params{K: -1}, "k = -1"},
		{"nan kparam", small(), Params{KParam: math.NaN()}, "kparam = NaN"},
		{"inf borda k", small(), Params{BordaK: math.Inf(1)}, "borda k = +Inf"},
		{"negative weight", small(), Params{Weights: map[string]float64{"dense": -0.5}}, "weight dense = -0.5"},
		{"nan weight", small(), Params{Weights: map[string]float64{"dense": math.NaN()}}, "weight dense = NaN"},
		{"inf lower bound", small(), Params{LowerBounds: map[string]float64{"dense": math.Inf(-1)}}, "lower bound dense"},
		{"empty bounds", small(), Params{Bounds: map[string]Range{"lexical": {Min: 1, Max: 1}}}, "bounds lexical"},
		{"nan threshold", small(), Params{HighConfidenceThreshold: math.NaN()}, "high-confidence threshold"},
		{"bonus above 1", small(), Params{ExactMatchBonus: 2}, "exact-match bonus"},
		{"bad counterfactual", small(), Params{CounterfactualStrategies: []Strategy{"x"}}, `counterfactual strategy "x"`},
		{"rank zero", map[string][]mnemotype.Hit{"dense": {{ID: "a"}}}, Params{}, "rank 0"},
		{"nan score", map[string][]mnemotype.Hit{"dense": {{ID: "a", Rank: 1, Score: math.NaN()}}}, Params{}, "score NaN"},
		{"empty id", map[string][]mnemotype.Hit{"dense": {{Rank: 1}}}, Params{}, "empty id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Fuse(tt.legs, tt.p)
			if !errors.Is(err, mnemotype.ErrInvalid) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want ErrInvalid naming %q", err, tt.want)
			}
		})
	}
}

func TestFuse_EmptyAndDoesNotMutate(t *testing.T) {
	t.Parallel()
	res, err := Fuse(nil, Params{})
	if err != nil || res == nil || len(res) != 0 {
		t.Fatalf("Fuse(nil) = %v, %v; want an empty non-nil slice", res, err)
	}
	legs := small()
	before := small()
	w := map[string]float64{"dense": 2}
	if _, err := FuseExplain(legs, Params{Weights: w, Missing: MissingImputeMin, Counterfactual: true, AdaptiveWeights: true, Query: "what is x"}); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(legs, before) || !reflect.DeepEqual(w, map[string]float64{"dense": 2}) {
		t.Fatal("Fuse mutated its input")
	}
}

func TestParse(t *testing.T) {
	t.Parallel()
	if s, err := ParseStrategy(""); s != RRF || err != nil {
		t.Errorf(`ParseStrategy("") = %q, %v`, s, err)
	}
	if s, err := ParseStrategy(" DBSF "); s != DBSF || err != nil {
		t.Errorf(`ParseStrategy(" DBSF ") = %q, %v`, s, err)
	}
	if n, err := ParseNormalization(""); n != NormMinMax || err != nil {
		t.Errorf(`ParseNormalization("") = %q, %v`, n, err)
	}
	if m, err := ParseMissing(""); m != MissingZero || err != nil {
		t.Errorf(`ParseMissing("") = %q, %v`, m, err)
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{second(ParseStrategy("cc")), "rrf, borda_rank, weighted_average, score_weighted_rrf, max_confidence, dbsf"},
		{second(ParseNormalization("l2")), "minmax, zscore, none, tmm, dbsf"},
		{second(ParseMissing("worst")), "zero, renormalize, impute_min, impute_rank"},
	} {
		if !errors.Is(c.err, mnemotype.ErrInvalid) || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("err = %v, want ErrInvalid listing %s", c.err, c.want)
		}
	}
	for _, s := range Strategies() {
		if got, err := ParseStrategy(string(s)); got != s || err != nil {
			t.Errorf("ParseStrategy(%q) = %q, %v", s, got, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func TestDenseRanks_Ties(t *testing.T) {
	t.Parallel()
	got := DenseRanks([]mnemotype.Hit{{ID: "c", Score: 1}, {ID: "a", Score: 3}, {ID: "b", Score: 3}})
	want := []mnemotype.Hit{{ID: "a", Score: 3, Rank: 1}, {ID: "b", Score: 3, Rank: 1}, {ID: "c", Score: 1, Rank: 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

func TestSort_UsesBestRankWithoutLegs(t *testing.T) {
	t.Parallel()
	res, err := Fuse(small(), Params{NoDetails: true})
	if err != nil {
		t.Fatal(err)
	}
	full, _ := Fuse(small(), Params{})
	if idsOf(res) != idsOf(full) || res[0].Legs != nil {
		t.Fatalf("NoDetails changed the order or kept details: %s vs %s", idsOf(res), idsOf(full))
	}
	// Without Legs, Sort breaks score ties on BestRank.
	tie := []Result{{ID: "z", Score: 1, BestRank: 1}, {ID: "a", Score: 1, BestRank: 2}}
	Sort(tie)
	if tie[0].ID != "z" {
		t.Errorf("Sort ignored BestRank: %+v", tie)
	}
}

func TestDetailsTop(t *testing.T) {
	t.Parallel()
	full, err := Fuse(small(), Params{})
	if err != nil {
		t.Fatal(err)
	}
	for _, top := range []int{1, 2, len(full), len(full) + 5} {
		res, err := Fuse(small(), Params{DetailsTop: top})
		if err != nil {
			t.Fatal(err)
		}
		if idsOf(res) != idsOf(full) {
			t.Fatalf("DetailsTop %d changed the order: %s vs %s", top, idsOf(res), idsOf(full))
		}
		for i, r := range res {
			if r.Score != full[i].Score {
				t.Errorf("DetailsTop %d: %s scores %v, want %v", top, r.ID, r.Score, full[i].Score)
			}
			if i < top && !reflect.DeepEqual(r.Legs, full[i].Legs) {
				t.Errorf("DetailsTop %d: result %d legs %v, want %v", top, i, r.Legs, full[i].Legs)
			}
			if i >= top && (r.Legs != nil || r.Imputed != nil) {
				t.Errorf("DetailsTop %d: result %d beyond the top has details", top, i)
			}
		}
	}
	if _, err := Fuse(small(), Params{DetailsTop: -1}); !errors.Is(err, mnemotype.ErrInvalid) {
		t.Errorf("DetailsTop -1: err = %v, want ErrInvalid", err)
	}
	// DetailsFor details its ids wherever they rank, as a full run does.
	last := full[len(full)-1]
	res, err := Fuse(small(), Params{DetailsTop: 1, DetailsFor: map[string]bool{last.ID: true}})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		want := i == 0 || r.ID == last.ID
		if got := r.Legs != nil; got != want {
			t.Errorf("DetailsTop 1, DetailsFor %s: result %d (%s) detailed %v, want %v", last.ID, i, r.ID, got, want)
		}
		if want && (!reflect.DeepEqual(r.Legs, full[i].Legs) || !reflect.DeepEqual(r.Imputed, full[i].Imputed)) {
			t.Errorf("DetailsFor: %s legs %v imputed %v, want %v %v", r.ID, r.Legs, r.Imputed, full[i].Legs, full[i].Imputed)
		}
	}
}
