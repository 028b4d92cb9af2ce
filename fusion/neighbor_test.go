package fusion

import (
	"math"
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
			out := LendToNeighbors(in, tc.lends, tc.share, 0)
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
	out := LendToNeighbors(res, []Lend{{ID: "a", Of: "q", Distance: 1}, {ID: "b", Of: "y", Distance: 1}}, 0.5, 0.2)
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
