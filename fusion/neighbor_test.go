package fusion

import (
	"math"
	"slices"
	"testing"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

func TestLendToNeighbors(t *testing.T) {
	t.Parallel()
	res := func() []Result {
		return []Result{
			{ID: "q", Score: 1.0, BestRank: 1, Legs: map[string]mnemotype.LegDetail{mnemotype.LegLexical: {Rank: 1, Contribution: 1}}},
			{ID: "x", Score: 0.5, BestRank: 2, Legs: map[string]mnemotype.LegDetail{mnemotype.LegLexical: {Rank: 2, Contribution: 0.5}}},
			{ID: "y", Score: 0.2, BestRank: 3},
		}
	}
	for _, tc := range []struct {
		name  string
		lends []Lend
		share float64
		want  map[string]float64 // id -> score
		order []string
	}{
		{"None", nil, 0.5, map[string]float64{"q": 1, "x": 0.5, "y": 0.2}, []string{"q", "x", "y"}},
		{"ShareZero", []Lend{{ID: "a", Of: "q", Distance: 1}}, 0, map[string]float64{"q": 1, "x": 0.5, "y": 0.2}, []string{"q", "x", "y"}},
		{"NewNeighbour", []Lend{{ID: "a", Of: "q", Distance: 1}}, 0.6, map[string]float64{"q": 1, "a": 0.6, "x": 0.5, "y": 0.2}, []string{"q", "a", "x", "y"}},
		{"ByDistance", []Lend{{ID: "a", Of: "q", Distance: 2}}, 0.6, map[string]float64{"a": 0.3}, []string{"q", "x", "a", "y"}},
		{"ExistingResultGrows", []Lend{{ID: "y", Of: "q", Distance: 1}}, 0.5, map[string]float64{"y": 0.7, "x": 0.5}, []string{"q", "y", "x"}},
		{"LargestLendWins", []Lend{{ID: "a", Of: "x", Distance: 1}, {ID: "a", Of: "q", Distance: 1}, {ID: "a", Of: "y", Distance: 1}}, 0.5,
			map[string]float64{"a": 0.5}, []string{"q", "x", "a", "y"}},
		{"NoCompounding", []Lend{{ID: "x", Of: "q", Distance: 1}, {ID: "z", Of: "x", Distance: 1}}, 0.5,
			map[string]float64{"x": 1.0, "z": 0.25}, []string{"q", "x", "z", "y"}},
		{"UnknownLenderIgnored", []Lend{{ID: "a", Of: "nope", Distance: 1}, {ID: "b", Of: "q", Distance: 0}}, 0.5,
			map[string]float64{"q": 1}, []string{"q", "x", "y"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			in := res()
			out := LendToNeighbors(in, tc.lends, tc.share, 0, 0)
			got := map[string]Result{}
			var order []string
			for i, r := range out {
				got[r.ID] = r
				order = append(order, r.ID)
				if r.Rank != i+1 {
					t.Errorf("%s: Rank %d at position %d", r.ID, r.Rank, i+1)
				}
			}
			for id, w := range tc.want {
				if math.Abs(got[id].Score-w) > 1e-12 {
					t.Errorf("%s: score %v, want %v", id, got[id].Score, w)
				}
			}
			if len(order) != len(tc.order) {
				t.Fatalf("order %v, want %v", order, tc.order)
			}
			for i := range order {
				if order[i] != tc.order[i] {
					t.Fatalf("order %v, want %v", order, tc.order)
				}
			}
			if in[0].Score != 1 || len(in[0].Legs) != 1 || len(in) != 3 {
				t.Error("the input was modified")
			}
			if in[0].Score != 1 {
				t.Error("the input was modified")
			}
			for _, l := range tc.lends {
				if r, ok := got[l.ID]; ok && tc.share > 0 && tc.want[l.ID] != 0 {
					if _, ok := r.Legs[mnemotype.LegNeighbor]; !ok && r.Legs != nil {
						t.Errorf("%s: no %s contribution in %v", l.ID, mnemotype.LegNeighbor, r.Legs)
					}
				}
			}
		})
	}
}

// TestLendToNeighbors_Floor: a lend measures its lender above the floor
// (the score of the window's last result): the floor's own result lends
// nothing.
func TestLendToNeighbors_Floor(t *testing.T) {
	t.Parallel()
	res := []Result{{ID: "q", Score: 1, BestRank: 1}, {ID: "x", Score: 0.5, BestRank: 2}, {ID: "y", Score: 0.2, BestRank: 3}}
	out := LendToNeighbors(res, []Lend{{ID: "a", Of: "q", Distance: 1}, {ID: "b", Of: "y", Distance: 1}}, 0.5, 0.2, 0)
	got := map[string]float64{}
	for _, r := range out {
		got[r.ID] = r.Score
	}
	if math.Abs(got["a"]-0.4) > 1e-12 {
		t.Errorf("a scores %v, want 0.5 × (1 - 0.2) = 0.4", got["a"])
	}
	if _, ok := got["b"]; ok {
		t.Errorf("b got a lend from the floor's result: %v", out)
	}
}

// TestLendToNeighbors_DetailsTop: with detailsTop, the results placed
// within it show their lends in Legs; a lent-to result after it has nil
// Legs (the caller fuses again with every detail if it needs them), and
// a result lent nothing keeps its Legs.
func TestLendToNeighbors_DetailsTop(t *testing.T) {
	t.Parallel()
	legs := func(rank int) map[string]mnemotype.LegDetail {
		return map[string]mnemotype.LegDetail{mnemotype.LegLexical: {Rank: rank, Contribution: 1}}
	}
	res := []Result{
		{ID: "q", Score: 1, BestRank: 1, Legs: legs(1)},
		{ID: "x", Score: 0.5, BestRank: 2, Legs: legs(2)},
		{ID: "y", Score: 0.2, BestRank: 3, Legs: legs(3)},
		{ID: "z", Score: 0.1, BestRank: 4, Legs: legs(4)},
	}
	lends := []Lend{{ID: "a", Of: "q", Distance: 1}, {ID: "b", Of: "y", Distance: 1}, {ID: "z", Of: "x", Distance: 4}}
	out := LendToNeighbors(res, lends, 0.6, 0, 2)
	var order []string
	for _, r := range out {
		order = append(order, r.ID)
	}
	// a 0.6, b 0.12, z 0.1 + 0.075.
	if want := []string{"q", "a", "x", "y", "z", "b"}; !slices.Equal(order, want) {
		t.Fatalf("order %v, want %v", order, want)
	}
	if d, ok := out[1].Legs[mnemotype.LegNeighbor]; !ok || math.Abs(d.Contribution-0.6) > 1e-12 || len(out[1].Legs) != 1 {
		t.Errorf("a, second: legs %v, want its lend of 0.6", out[1].Legs)
	}
	if len(out[2].Legs) != 1 || len(out[3].Legs) != 1 {
		t.Errorf("x and y, lent nothing: legs %v and %v, want theirs", out[2].Legs, out[3].Legs)
	}
	if out[4].Legs != nil || out[5].Legs != nil {
		t.Errorf("z and b, lent to after the top 2: legs %v and %v, want nil", out[4].Legs, out[5].Legs)
	}
	if len(res[3].Legs) != 1 || res[3].Score != 0.1 {
		t.Error("the input was modified")
	}
	all := LendToNeighbors(res, lends, 0.6, 0, 0)
	for _, r := range all {
		if _, ok := r.Legs[mnemotype.LegNeighbor]; ok != (r.ID == "a" || r.ID == "b" || r.ID == "z") {
			t.Errorf("%s, every detail asked for: legs %v", r.ID, r.Legs)
		}
	}
}

// TestLendToNeighbors_UndetailedStaysNil: a result fusion left without
// details keeps nil Legs when a lend lifts it, even inside the window
// (a neighbour's detail alone would hide its legs'), while a neighbour
// that was not among the results gets its lend as its only detail.
func TestLendToNeighbors_UndetailedStaysNil(t *testing.T) {
	t.Parallel()
	res := []Result{
		{ID: "q", Score: 1, BestRank: 1, Legs: map[string]mnemotype.LegDetail{mnemotype.LegLexical: {Rank: 1, Contribution: 1}}},
		{ID: "x", Score: 0.5, BestRank: 2, Legs: map[string]mnemotype.LegDetail{mnemotype.LegLexical: {Rank: 2, Contribution: 0.5}}},
		{ID: "j", Score: 0.1, BestRank: 10}, // past fusion's window
	}
	out := LendToNeighbors(res, []Lend{{ID: "j", Of: "q", Distance: 1}, {ID: "n", Of: "q", Distance: 2}}, 0.6, 0, 4)
	got := map[string]Result{}
	for _, r := range out {
		got[r.ID] = r
	}
	if j := got["j"]; j.Rank != 2 || j.Legs != nil {
		t.Errorf("j lifted to rank %d with legs %v, want rank 2 and nil legs", j.Rank, j.Legs)
	}
	if n := got["n"]; len(n.Legs) != 1 || n.Legs[mnemotype.LegNeighbor].Contribution != 0.3 {
		t.Errorf("n, a neighbour only: legs %v, want its lend of 0.3 alone", n.Legs)
	}
}
