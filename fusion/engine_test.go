package fusion

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestEngine_sortKeys checks the hand-written quicksort, and its fallback
// when depth runs out, against slices.SortFunc on keys with many tied scores.
func TestEngine_sortKeys(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	for _, n := range []int{0, 1, 2, 13, 50, 300, 1000} {
		for _, depth := range []int{0, 1, 64} {
			t.Run(fmt.Sprintf("n%d_depth%d", n, depth), func(t *testing.T) {
				e := &engine{ids: make([]string, n), score: make([]float64, n), tie: make([]float64, n), best: make([]int, n)}
				keys := make([]sortKey, n)
				for d := range n {
					e.ids[d] = fmt.Sprintf("m%04d", rng.IntN(10*n+1))
					e.ids[d] += fmt.Sprint(d) // unique
					e.score[d] = float64(rng.IntN(5))
					e.tie[d] = float64(rng.IntN(2))
					e.best[d] = 1 + rng.IntN(3)
					keys[d] = sortKey{score: e.score[d], d: int32(d)}
				}
				want := slices.Clone(keys)
				slices.SortFunc(want, func(x, y sortKey) int {
					switch {
					case x.d == y.d:
						return 0
					case e.less(x, y):
						return -1
					}
					return 1
				})
				e.sortKeys(keys, depth)
				if !slices.Equal(keys, want) {
					t.Fatalf("sortKeys order differs from slices.SortFunc")
				}
			})
		}
	}
}
