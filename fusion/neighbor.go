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
//
// A result of res without details (nil Legs: fusion's Params.DetailsTop)
// that receives a lend keeps nil Legs: a neighbour's detail alone would
// hide its legs'. With detailsTop > 0, only the first detailsTop results
// of the copy get their neighbour's detail: one lent to after them has nil
// Legs too, as fusion leaves the results after its window (each detail is
// a map of its own).
func LendToNeighbors(res []Result, lends []Lend, share, floor float64, detailsTop int) []Result {
	if share <= 0 {
		lends = nil
	}
	out := make([]Result, len(res), len(res)+len(lends)) // room for every neighbour that joins
	copy(out, res)
	at := make(map[string]int, len(out))
	for i := range out {
		at[out[i].ID] = i
	}
	best := make(map[string]float64, len(lends))
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
	if len(order) == 0 {
		Sort(out)
		return out
	}
	for _, id := range order {
		if i, ok := at[id]; ok {
			out[i].Score += best[id]
		} else {
			out = append(out, Result{ID: id, Score: best[id], BestRank: math.MaxInt32})
		}
	}
	Sort(out)
	for i := range out {
		r := &out[i]
		v, lent := best[r.ID]
		if !lent {
			continue
		}
		if _, fused := at[r.ID]; (fused && r.Legs == nil) || (detailsTop > 0 && i >= detailsTop) {
			// Fusion left it without details, or it is past the window:
			// nil, so that a caller needing its details fuses again.
			r.Legs = nil
			continue
		}
		legs := make(map[string]mnemotype.LegDetail, len(r.Legs)+1)
		for k, d := range r.Legs {
			legs[k] = d
		}
		legs[mnemotype.LegNeighbor] = mnemotype.LegDetail{Contribution: v}
		r.Legs = legs
	}
	return out
}
