package fusion

import (
	"math"
	"testing"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

func approx(a, b float64) bool { return math.Abs(a-b) < 1e-4 }

func TestFuse_RRFSeed003WorkedExample(t *testing.T) {
	t.Parallel()
	legs := map[string][]mnemotype.Hit{
		"dense":   {{ID: "a", Rank: 1}, {ID: "b", Rank: 2}},
		"lexical": {{ID: "x", Rank: 1}, {ID: "y", Rank: 2}, {ID: "z", Rank: 3}, {ID: "w", Rank: 4}, {ID: "a", Rank: 5}},
	}
	res, err := Fuse(legs, Params{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, r := range res {
		got[r.ID] = r.Score
	}
	if !approx(got["a"], 0.0318) {
		t.Errorf("a = %.4f, want 0.0318 (1/61 + 1/65)", got["a"])
	}
	if !approx(got["b"], 1.0/62) {
		t.Errorf("b = %.4f, want 1/62", got["b"])
	}
	if res[0].ID != "a" {
		t.Errorf("top = %s, want a", res[0].ID)
	}
}

func TestFuse_ZeroWeightAdmitsNothing(t *testing.T) {
	t.Parallel()
	legs := map[string][]mnemotype.Hit{
		"dense":   {{ID: "a", Rank: 1}},
		"lexical": {{ID: "x", Rank: 1}},
	}
	res, err := Fuse(legs, Params{Weights: map[string]float64{"lexical": 0}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || res[0].ID != "a" {
		t.Fatalf("got %+v, want only a", res)
	}
}

func TestDenseRanks_Ties(t *testing.T) {
	t.Parallel()
	got := DenseRanks([]mnemotype.Hit{{ID: "c", Score: 1}, {ID: "a", Score: 3}, {ID: "b", Score: 3}})
	want := []mnemotype.Hit{{ID: "a", Score: 3, Rank: 1}, {ID: "b", Score: 3, Rank: 1}, {ID: "c", Score: 1, Rank: 2}}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %+v, want %+v", got, want)
		}
	}
}
