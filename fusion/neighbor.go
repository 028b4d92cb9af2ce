package fusion

import (
	"math"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// Lend is a neighbour relation for LendToNeighbors: ID lies Distance (≥ 1)
// turns away from Of in their session.
type Lend struct {
	ID, Of   string
	Distance int
}

// LendToNeighbors returns a copy of res in which each result lends
// share/distance of its score above floor to the turns around it (lends):
// the answer to a question is often the turn after the one that matches
// it. floor is the score of the last result of the lending window (what
// no lender scores below), so that a lend measures how far its lender
// stands out, whatever base the legs' normalisation put the scores on. A
// neighbour's score grows by the largest lend it receives, shown as
// Legs[mnemotype.LegNeighbor].Contribution; a neighbour not in res joins
// with that lend as its score, ranked after the results it ties with.
// Lends are computed from res's scores, so they never compound. The copy
// is re-sorted (see Sort); res is not modified.
func LendToNeighbors(res []Result, lends []Lend, share, floor float64) []Result {
	out := make([]Result, len(res))
	copy(out, res)
	if share <= 0 {
		lends = nil
	}
	at := make(map[string]int, len(out))
	for i := range out {
		at[out[i].ID] = i
	}
	best := map[string]float64{}
	var order []string
	for _, l := range lends {
		i, ok := at[l.Of]
		if !ok || l.Distance < 1 || l.ID == l.Of {
			continue
		}
		v := share * (out[i].Score - floor) / float64(l.Distance)
		if v <= 0 {
			continue
		}
		if _, seen := best[l.ID]; !seen {
			order = append(order, l.ID)
		}
		best[l.ID] = math.Max(best[l.ID], v)
	}
	for _, id := range order {
		v := best[id]
		i, ok := at[id]
		if !ok {
			out = append(out, Result{ID: id, BestRank: math.MaxInt32, Legs: map[string]mnemotype.LegDetail{}})
			i = len(out) - 1
			at[id] = i
		} else {
			legs := make(map[string]mnemotype.LegDetail, len(out[i].Legs)+1)
			for k, d := range out[i].Legs {
				legs[k] = d
			}
			out[i].Legs = legs
		}
		out[i].Score += v
		if out[i].Legs != nil {
			out[i].Legs[mnemotype.LegNeighbor] = mnemotype.LegDetail{Contribution: v}
		}
	}
	Sort(out)
	return out
}
