package fusion

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// engine holds one fusion's candidates in flat arrays so that a strategy can
// be scored (and re-scored for the counterfactual trace) without maps.
type engine struct {
	p     Params
	names []string  // active legs, sorted
	w     []float64 // their weights (> 0)
	wmax  float64
	stats []legStats
	// maxRank is a leg's worst kept rank; window = max(kept hits, maxRank).
	maxRank, window []int
	ids             []string
	// cells[d*L+li] is candidate d in leg li.
	cells []cell
	// norm and contrib[d*L+li] are the normalised score read and the term
	// of the last run with details (nil until then).
	norm, contrib []float64
	best          []int // best rank per candidate
	// hits[li] is leg li's list and idx[li] its hits' candidate indices
	// (-1 for a repeated id that was not kept).
	hits [][]mnemotype.Hit
	idx  [][]int32
	// moments says whether stats hold mean and sd yet (computed on demand).
	moments bool
	exact   []bool
	bonus   float64 // exact-match bonus of the last run
	score   []float64
	tie     []float64
	order   []int32
	keys    []sortKey
}

type cell struct {
	present bool
	imputed bool  // absent, but the missing policy gave it a non-zero term
	pos     int32 // position of the kept hit in its leg's list
	rank    int
	score   float64 // raw score (present), or imputed raw score
}

// finite clamps ±Inf to ±MaxFloat64 and NaN to 0, so no score is ever
// non-finite even for extreme (but finite) inputs.
func finite(v float64) float64 {
	switch {
	case v > math.MaxFloat64:
		return math.MaxFloat64
	case v < -math.MaxFloat64:
		return -math.MaxFloat64
	case v != v:
		return 0
	}
	return v
}

func (e *engine) leg(name string) int {
	for i, n := range e.names {
		if n == name {
			return i
		}
	}
	return -1
}

// prepare validates the active legs' hits and lays them out.
func prepare(legs map[string][]mnemotype.Hit, p Params, weight func(string) float64) (*engine, error) {
	e := &engine{p: p}
	total, longest := 0, 0
	for name, hits := range legs {
		if len(hits) > 0 && weight(name) > 0 {
			e.names = append(e.names, name)
			total += len(hits)
			longest = max(longest, len(hits))
		}
	}
	sort.Strings(e.names)
	L := len(e.names)
	e.w = make([]float64, L)
	e.hits = make([][]mnemotype.Hit, L)
	e.idx = make([][]int32, L)
	for li, name := range e.names {
		e.w[li] = weight(name)
		e.wmax = max(e.wmax, e.w[li])
		e.hits[li] = legs[name]
	}

	// Pass 1: validate and give every distinct id an index. The longest
	// list is a lower bound of the number of candidates.
	index := make(map[string]int32, longest)
	e.ids = make([]string, 0, longest)
	hitIdx := make([]int32, total)
	off := 0
	for li, name := range e.names {
		e.idx[li] = hitIdx[off : off+len(e.hits[li])]
		off += len(e.hits[li])
		for i, h := range e.hits[li] {
			if h.ID == "" {
				return nil, mnemotype.Invalidf("leg %s: hit %d has an empty id", name, i+1)
			}
			if h.Rank < 1 {
				return nil, mnemotype.Invalidf("leg %s: hit %s has rank %d: must be ≥ 1", name, h.ID, h.Rank)
			}
			if !isFinite(h.Score) {
				return nil, mnemotype.Invalidf("leg %s: hit %s has score %v: must be a finite number", name, h.ID, h.Score)
			}
			d, ok := index[h.ID]
			if !ok {
				d = int32(len(e.ids))
				index[h.ID] = d
				e.ids = append(e.ids, h.ID)
			}
			e.idx[li][i] = d
		}
	}
	C := len(e.ids)

	// Pass 2: fill the cells; a repeated id keeps its best (then first) rank.
	e.cells = make([]cell, C*L)
	e.best = make([]int, C)
	for d := range e.best {
		e.best[d] = math.MaxInt
	}
	e.stats = make([]legStats, L)
	e.maxRank = make([]int, L)
	e.window = make([]int, L)
	for li, name := range e.names {
		idx := e.idx[li]
		st := legStats{min: math.Inf(1), max: math.Inf(-1)}
		for pos, h := range e.hits[li] {
			d := idx[pos]
			c := &e.cells[int(d)*L+li]
			if c.present {
				if c.rank <= h.Rank {
					idx[pos] = -1
					continue
				}
				idx[c.pos] = -1
			}
			*c = cell{present: true, pos: int32(pos), rank: h.Rank, score: h.Score}
			e.best[d] = min(e.best[d], h.Rank)
		}
		n := 0
		for pos, h := range e.hits[li] {
			if idx[pos] >= 0 {
				n++
				st.min, st.max = min(st.min, h.Score), max(st.max, h.Score)
				e.maxRank[li] = max(e.maxRank[li], h.Rank)
			}
		}
		st.n = n
		st.scale = max(math.Abs(st.min), math.Abs(st.max))
		st.lower, st.hasLower = p.LowerBounds[name]
		if b, ok := p.Bounds[name]; ok {
			st.bounds, st.hasBounds = b, true
		} else if name == mnemotype.LegDense { // DefaultBounds, without allocating it
			st.bounds, st.hasBounds = Range{Min: -1, Max: 1}, true
		}
		e.stats[li] = st
		e.window[li] = max(n, e.maxRank[li])
	}
	return e, nil
}

// ensureMoments computes each leg's mean and standard deviation (of s/scale)
// over its kept hits, in list order so that swapping tied hits, which have
// equal scores, changes no rounding.
func (e *engine) ensureMoments() {
	if e.moments {
		return
	}
	e.moments = true
	for li := range e.stats {
		st := &e.stats[li]
		if !(st.scale > 0) || st.n < 2 || st.max == st.min {
			continue // no spread: sd stays 0
		}
		sum := 0.0
		for pos, h := range e.hits[li] {
			if e.idx[li][pos] >= 0 {
				sum += h.Score / st.scale
			}
		}
		st.mean = sum / float64(st.n)
		ss := 0.0
		for pos, h := range e.hits[li] {
			if e.idx[li][pos] >= 0 {
				dv := h.Score/st.scale - st.mean
				ss += dv * dv
			}
		}
		st.sd = math.Sqrt(ss / float64(st.n))
	}
}

// markExact flags the candidates whose content contains one of terms.
func (e *engine) markExact(terms []string, contents func(string) string) {
	if len(terms) == 0 {
		return
	}
	lower := make([]string, len(terms))
	for i, t := range terms {
		lower[i] = strings.ToLower(t)
	}
	e.exact = make([]bool, len(e.ids))
	for d, id := range e.ids {
		text := strings.ToLower(contents(id))
		for _, t := range lower {
			if containsTerm(text, t) {
				e.exact[d] = true
				break
			}
		}
	}
}

// run scores every candidate under strategy s into e.score (and e.tie, the
// MaxConfidence tie-breaker). With details it also records each cell's
// normalised score and term in e.norm and e.contrib, and marks imputed cells.
func (e *engine) run(s Strategy, details bool) {
	L, C := len(e.names), len(e.ids)
	if cap(e.score) < C {
		e.score, e.tie = make([]float64, C), make([]float64, C)
	}
	e.score, e.tie = e.score[:C], e.tie[:C]
	if details && e.norm == nil {
		e.norm, e.contrib = make([]float64, C*L), make([]float64, C*L)
	}
	if L == 0 {
		return
	}
	kind := e.p.Normalization
	if s == DBSF {
		kind = NormDBSF
	}
	usesScores := s.UsesScores()
	if usesScores && (kind == NormZScore || kind == NormDBSF) {
		e.ensureMoments()
	}

	// The term of leg li for rank r and normalised score n is
	//   rank-only:           a[li] / (k + r)
	//   score_weighted_rrf:  a[li] · n / (r + k)
	//   others:              a[li] · n
	var a, rel [8]float64 // rel: wᵢ / w_max, for renormalisation
	as, rels := a[:0], rel[:0]
	sumRel := 0.0
	for _, w := range e.w {
		rels = append(rels, w/e.wmax)
		sumRel += w / e.wmax
	}
	for li, w := range e.w {
		switch s {
		case WeightedAverage:
			as = append(as, rels[li]/sumRel)
		case MaxConfidence:
			as = append(as, rels[li])
		default:
			as = append(as, w)
		}
	}
	var k, unit float64 // unit: strongest single-leg contribution (bonus scale)
	switch s {
	case RRF:
		k, unit = e.p.K, e.wmax/(e.p.K+1)
	case BordaRank:
		k, unit = e.p.BordaK, e.wmax/(e.p.BordaK+1)
	case ScoreWeightedRRF:
		k, unit = e.p.KParam, e.wmax/(1+e.p.KParam)
	case WeightedAverage:
		unit = 1 / sumRel
	case MaxConfidence:
		unit = 1
	case DBSF:
		unit = e.wmax
	}
	e.bonus = finite(e.p.ExactMatchBonus * unit)
	rankOnly := !usesScores
	sw := s == ScoreWeightedRRF
	isMax := s == MaxConfidence
	renorm := e.p.Missing == MissingRenormalize && !isMax

	for d := range C {
		row := e.cells[d*L : d*L+L]
		sum, best, tie, relSeen := 0.0, math.Inf(-1), 0.0, 0.0
		for li := range row {
			c := &row[li]
			var r int
			var n float64
			switch {
			case c.present:
				r = c.rank
				if usesScores {
					n = e.stats[li].normalize(kind, c.score)
				}
				relSeen += rels[li]
				tie += n
			case e.p.Missing == MissingImputeMin:
				r = e.maxRank[li]
				if usesScores {
					n = e.stats[li].normalize(kind, e.stats[li].min)
				}
			case e.p.Missing == MissingImputeRank && rankOnly:
				r = e.window[li] + 1
			default:
				if details {
					c.imputed = false
					e.norm[d*L+li], e.contrib[d*L+li] = 0, 0
				}
				continue
			}
			var t float64
			switch {
			case rankOnly:
				t = finite(as[li] / (k + float64(r)))
			case sw:
				t = finite(as[li] * n / (float64(r) + k))
			default:
				t = finite(as[li] * n)
			}
			sum = finite(sum + t)
			best = max(best, t)
			if details {
				e.norm[d*L+li], e.contrib[d*L+li] = n, t
				if !c.present {
					c.rank, c.imputed = r, t != 0
					c.score = 0
					if e.p.Missing == MissingImputeMin {
						c.score = e.stats[li].min
					}
				}
			}
		}
		score := sum
		switch {
		case isMax:
			score = best
		case renorm && relSeen > 0 && relSeen < sumRel:
			f := sumRel / relSeen
			score = finite(score * f)
			if details {
				for li := range row {
					e.contrib[d*L+li] = finite(e.contrib[d*L+li] * f)
				}
			}
		}
		if e.exact != nil && e.exact[d] {
			score = finite(score + e.bonus)
		}
		e.score[d] = score
		if isMax {
			e.tie[d] = finite(tie)
		} else {
			e.tie[d] = 0
		}
	}
}

// sortKey is one candidate's position in the total order.
type sortKey struct {
	score, tie float64
	best       int
	d          int32
}

// sortOrder fills e.order with the candidates in fused order: score
// descending, tie-breaker descending, best rank ascending, id ascending.
func (e *engine) sortOrder() []int32 {
	C := len(e.ids)
	if cap(e.keys) < C {
		e.keys, e.order = make([]sortKey, C), make([]int32, C)
	}
	keys := e.keys[:C]
	for d := range keys {
		keys[d] = sortKey{score: e.score[d], tie: e.tie[d], best: e.best[d], d: int32(d)}
	}
	slices.SortFunc(keys, func(x, y sortKey) int {
		switch {
		case x.score > y.score:
			return -1
		case x.score < y.score:
			return 1
		case x.tie > y.tie:
			return -1
		case x.tie < y.tie:
			return 1
		case x.best != y.best:
			return x.best - y.best
		}
		return strings.Compare(e.ids[x.d], e.ids[y.d])
	})
	e.order = e.order[:C]
	for i, k := range keys {
		e.order[i] = k.d
	}
	return e.order
}

// results builds the Results of the last run of strategy s.
func (e *engine) results(s Strategy) []Result {
	L := len(e.names)
	order := e.sortOrder()
	res := make([]Result, len(order))
	usesScores := s.UsesScores()
	for pos, d := range order {
		row := e.cells[int(d)*L : int(d)*L+L]
		r := &res[pos]
		r.ID, r.Score, r.Rank, r.BestRank = e.ids[d], e.score[d], pos+1, e.best[d]
		if e.exact != nil && e.exact[d] {
			r.Bonus = e.bonus
		}
		if e.p.NoDetails {
			continue
		}
		n := 0
		for li := range row {
			if row[li].present {
				n++
			}
		}
		r.Legs = make(map[string]mnemotype.LegDetail, n)
		for li := range row {
			c := &row[li]
			if !c.present && !c.imputed {
				continue
			}
			det := mnemotype.LegDetail{Rank: c.rank, Score: c.score, Contribution: e.contrib[int(d)*L+li]}
			if usesScores {
				det.Normalized = e.norm[int(d)*L+li]
			}
			if c.present {
				r.Legs[e.names[li]] = det
				continue
			}
			if r.Imputed == nil {
				r.Imputed = make(map[string]mnemotype.LegDetail, L-n)
			}
			r.Imputed[e.names[li]] = det
		}
	}
	return res
}

// counterfactual ranks the candidates under every other strategy and records
// each result's rank there.
func (e *engine) counterfactual(used Strategy, res []Result) {
	strategies := e.p.CounterfactualStrategies
	if len(strategies) == 0 {
		strategies = Strategies()
	}
	at := make([]int, len(e.ids)) // candidate → position in res
	for pos := range res {
		res[pos].Counterfactual = make(map[string]int, len(strategies))
	}
	for pos, d := range e.order {
		at[d] = pos
	}
	for _, s := range strategies {
		if s == used {
			continue
		}
		e.run(s, false)
		for rank, d := range e.sortOrder() {
			res[at[d]].Counterfactual[string(s)] = rank + 1
		}
	}
}
