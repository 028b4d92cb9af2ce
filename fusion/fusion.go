// Package fusion merges ranked lists from several retrieval legs into one
// ranking. It is pure: no I/O, no context, no logging; it never mutates its
// inputs and every ordering it produces is total (deterministic).
package fusion

import (
	"fmt"
	"math"
	"sort"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// Strategy names a fusion strategy.
type Strategy string

// Strategies.
const (
	// RRF is weighted Reciprocal Rank Fusion: score(d) = Σᵢ wᵢ / (k + rankᵢ(d)).
	RRF Strategy = "rrf"
)

// Defaults.
const (
	// DefaultK is RRF's smoothing constant (Cormack et al. 2009; seeds 000, 001, 003).
	DefaultK = 60.0
	// DefaultWeight is the weight of a leg that Params.Weights does not mention.
	DefaultWeight = 1.0
)

// Params configures one fusion.
type Params struct {
	// Strategy selects the formula. Defaults to RRF.
	Strategy Strategy
	// Weights maps a leg name to its weight (≥ 0, finite). A leg absent from
	// the map gets DefaultWeight; a leg with weight 0 contributes nothing and
	// admits nothing (seed 000).
	Weights map[string]float64
	// K is RRF's constant (> 0). Defaults to DefaultK.
	K float64
}

func (p Params) withDefaults() Params {
	if p.Strategy == "" {
		p.Strategy = RRF
	}
	if p.K == 0 {
		p.K = DefaultK
	}
	return p
}

// Validate reports an error naming the first invalid parameter.
func (p Params) Validate() error {
	p = p.withDefaults()
	switch p.Strategy {
	case RRF:
	default:
		return mnemotype.Invalidf("strategy %q: must be one of rrf", p.Strategy)
	}
	if math.IsNaN(p.K) || math.IsInf(p.K, 0) || p.K <= 0 {
		return mnemotype.Invalidf("k = %v: must be a finite number > 0", p.K)
	}
	for leg, w := range p.Weights {
		if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
			return mnemotype.Invalidf("weight %s = %v: must be a finite number ≥ 0", leg, w)
		}
	}
	return nil
}

// Weight returns the weight of leg under p.
func (p Params) Weight(leg string) float64 {
	if w, ok := p.Weights[leg]; ok {
		return w
	}
	return DefaultWeight
}

// Result is one fused item.
type Result struct {
	ID string
	// Score is the fused score; higher is better.
	Score float64
	// Rank is the 1-based position in the fused output.
	Rank int
	// Legs holds, for every leg that listed the item, its rank, raw score and
	// contribution to Score.
	Legs map[string]mnemotype.LegDetail
}

// Fuse merges legs (leg name → hits in rank order, Rank filled, see
// DenseRanks) into one list sorted by fused score, best first. Ties are broken
// by the best rank the item has in any leg, then by id, so the output is
// deterministic. Fuse returns an ErrInvalid error for invalid parameters.
func Fuse(legs map[string][]mnemotype.Hit, p Params) ([]Result, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	p = p.withDefaults()
	byID := make(map[string]*Result)
	var out []*Result
	// Iterate legs in name order so that map iteration cannot change results.
	names := make([]string, 0, len(legs))
	for name := range legs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, leg := range names {
		w := p.Weight(leg)
		if w == 0 {
			continue // a zero-weight leg adds nothing and admits nothing
		}
		for _, h := range legs[leg] {
			if h.Rank < 1 {
				return nil, fmt.Errorf("fuse: leg %s: hit %s has rank %d: %w", leg, h.ID, h.Rank, mnemotype.ErrInvalid)
			}
			contrib := w / (p.K + float64(h.Rank))
			r := byID[h.ID]
			if r == nil {
				r = &Result{ID: h.ID, Legs: make(map[string]mnemotype.LegDetail, len(legs))}
				byID[h.ID] = r
				out = append(out, r)
			}
			if _, dup := r.Legs[leg]; dup {
				continue // a leg lists an id once; keep its best (first) rank
			}
			r.Score += contrib
			r.Legs[leg] = mnemotype.LegDetail{Rank: h.Rank, Score: h.Score, Contribution: contrib}
		}
	}
	res := make([]Result, len(out))
	for i, r := range out {
		res[i] = *r
	}
	Sort(res)
	return res, nil
}

// bestRank is the smallest rank an item holds in any leg.
func bestRank(r *Result) int {
	best := math.MaxInt
	for _, d := range r.Legs {
		if d.Rank < best {
			best = d.Rank
		}
	}
	return best
}

// Sort orders results by Score descending, then best leg rank, then id, and
// renumbers Rank from 1.
func Sort(res []Result) {
	sort.SliceStable(res, func(i, j int) bool {
		a, b := &res[i], &res[j]
		if a.Score != b.Score {
			return a.Score > b.Score
		}
		if ra, rb := bestRank(a), bestRank(b); ra != rb {
			return ra < rb
		}
		return a.ID < b.ID
	})
	for i := range res {
		res[i].Rank = i + 1
	}
}

// DenseRanks assigns 1-based dense ranks to hits sorted best first by Score
// (higher is better): equal scores share a rank and ranks have no gaps
// (seed 001). It returns a new slice sorted by Score descending, then id.
func DenseRanks(hits []mnemotype.Hit) []mnemotype.Hit {
	out := append([]mnemotype.Hit(nil), hits...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].ID < out[j].ID
	})
	rank := 0
	for i := range out {
		if i == 0 || out[i].Score != out[i-1].Score {
			rank++
		}
		out[i].Rank = rank
	}
	return out
}
