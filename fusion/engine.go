package fusion

import (
	"hash/maphash"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// engine holds one fusion's candidates in flat arrays so that a strategy can
// be scored (and re-scored for the counterfactual trace) without maps. It is
// built to allocate little: fusing 3 legs of 300 hits should take well under
// 50 µs, and on small heaps the garbage collector's share of that grows with
// every byte allocated.
type engine struct {
	p     Params
	names []string // active legs, sorted
	legs  []legData
	wmax  float64
	ids   []string
	// at[d*L+li] is the position in leg li's list of candidate d's kept hit,
	// or -1 when the leg did not list d.
	at []int32
	// norm and contrib[d*L+li] are the normalised score read and the term
	// of the last run with details (nil until then).
	norm, contrib []float64
	best          []int // best rank per candidate
	// moments says whether stats hold mean and sd yet (computed on demand).
	moments bool
	exact   []bool
	bonus   float64 // exact-match bonus of the last run
	score   []float64
	tie     []float64
	keys    []sortKey
}

// legData is one active leg.
type legData struct {
	w     float64 // weight (> 0)
	hits  []mnemotype.Hit
	stats legStats
	// maxRank is the worst kept rank; window = max(kept hits, maxRank).
	maxRank, window int
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

// prepare validates the active legs' hits and lays them out in e.
func (e *engine) prepare(legs map[string][]mnemotype.Hit, p Params, weight func(string) float64) error {
	e.p = p
	total := 0
	for name, hits := range legs {
		if len(hits) > 0 && weight(name) > 0 {
			e.names = append(e.names, name)
			total += len(hits)
		}
	}
	slices.Sort(e.names)
	L := len(e.names)
	if L == 0 {
		return nil
	}
	e.legs = make([]legData, L)
	longest := 0
	for li, name := range e.names {
		lg := &e.legs[li]
		lg.w = weight(name)
		e.wmax = max(e.wmax, lg.w)
		lg.hits = legs[name]
		longest = max(longest, len(lg.hits))
	}

	// One pass validates the hits, gives every distinct id a candidate
	// index d and places the hits; a repeated id keeps its best (then
	// first) rank. Ids are looked up in an open-addressing table of d + 1
	// (0: empty) at most half full: 4 bytes a slot where a map[string]int32
	// holds a string header and an int32, and no growth. The longest list
	// is a lower bound of the number of candidates.
	size := 16
	for size < 2*total {
		size <<= 1
	}
	slots := make([]int32, size)
	mask := uint64(size - 1)
	seed := maphash.MakeSeed()
	e.ids = make([]string, 0, longest)
	e.at = make([]int32, 0, longest*L)
	e.best = make([]int, 0, longest)
	for li, name := range e.names {
		lg := &e.legs[li]
		for pos := range lg.hits {
			h := &lg.hits[pos]
			if h.ID == "" {
				return mnemotype.Invalidf("leg %s: hit %d has an empty id", name, pos+1)
			}
			if h.Rank < 1 {
				return mnemotype.Invalidf("leg %s: hit %s has rank %d: must be ≥ 1", name, h.ID, h.Rank)
			}
			if !isFinite(h.Score) {
				return mnemotype.Invalidf("leg %s: hit %s has score %v: must be a finite number", name, h.ID, h.Score)
			}
			var d int32
			j := maphash.String(seed, h.ID) & mask
			for {
				s := slots[j]
				if s == 0 {
					d = int32(len(e.ids))
					slots[j] = d + 1
					e.ids = append(e.ids, h.ID)
					e.best = append(e.best, math.MaxInt)
					for range L {
						e.at = append(e.at, -1)
					}
					break
				}
				if e.ids[s-1] == h.ID {
					d = s - 1
					break
				}
				j = (j + 1) & mask
			}
			c := &e.at[int(d)*L+li]
			if *c >= 0 && lg.hits[*c].Rank <= h.Rank {
				continue
			}
			*c = int32(pos)
			e.best[d] = min(e.best[d], h.Rank)
		}
	}
	C := len(e.ids)

	// Each leg's statistics, over its kept hits.
	for li, name := range e.names {
		lg := &e.legs[li]
		st := legStats{min: math.Inf(1), max: math.Inf(-1)}
		n := 0
		for d := range C {
			if at := e.at[d*L+li]; at >= 0 {
				h := &lg.hits[at]
				n++
				st.min, st.max = min(st.min, h.Score), max(st.max, h.Score)
				lg.maxRank = max(lg.maxRank, h.Rank)
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
		lg.stats = st
		lg.window = max(n, lg.maxRank)
	}
	return nil
}

// ensureMoments computes each leg's mean and standard deviation (of s/scale)
// over its kept hits, in list order so that swapping tied hits, which have
// equal scores, changes no rounding.
func (e *engine) ensureMoments() {
	if e.moments {
		return
	}
	e.moments = true
	// kept[li][pos] says whether hit pos of leg li is its candidate's kept hit.
	L, total := len(e.legs), 0
	for li := range e.legs {
		total += len(e.legs[li].hits)
	}
	flags := make([]bool, total)
	kept := make([][]bool, L)
	for li := range e.legs {
		kept[li], flags = flags[:len(e.legs[li].hits)], flags[len(e.legs[li].hits):]
	}
	for i, at := range e.at {
		if at >= 0 {
			kept[i%L][at] = true
		}
	}
	for li := range e.legs {
		lg := &e.legs[li]
		st := &lg.stats
		if !(st.scale > 0) || st.n < 2 || st.max == st.min {
			continue // no spread: sd stays 0
		}
		sum := 0.0
		for pos := range lg.hits {
			if kept[li][pos] {
				sum += lg.hits[pos].Score / st.scale
			}
		}
		st.mean = sum / float64(st.n)
		ss := 0.0
		for pos := range lg.hits {
			if kept[li][pos] {
				dv := lg.hits[pos].Score/st.scale - st.mean
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
// normalised score and term in e.norm and e.contrib (an absent cell with a
// non-zero term is imputed).
func (e *engine) run(s Strategy, details bool) {
	L, C := len(e.names), len(e.ids)
	if e.score == nil {
		f := make([]float64, 2*C)
		e.score, e.tie = f[:C:C], f[C:]
	}
	if details && e.norm == nil {
		f := make([]float64, 2*C*L)
		e.norm, e.contrib = f[:C*L:C*L], f[C*L:]
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
	for li := range e.legs {
		w := e.legs[li].w
		rels = append(rels, w/e.wmax)
		sumRel += w / e.wmax
	}
	for li := range e.legs {
		switch s {
		case WeightedAverage:
			as = append(as, rels[li]/sumRel)
		case MaxConfidence:
			as = append(as, rels[li])
		default:
			as = append(as, e.legs[li].w)
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
	missing := e.p.Missing
	legs := e.legs[:L]
	as, rels = as[:L], rels[:L]

	for d := range C {
		row := e.at[d*L : d*L+L]
		sum, best, tie, relSeen := 0.0, math.Inf(-1), 0.0, 0.0
		for li, at := range row {
			lg := &legs[li]
			var r int
			var n float64
			switch {
			case at >= 0:
				h := &lg.hits[at]
				r = h.Rank
				if usesScores {
					n = lg.stats.normalize(kind, h.Score)
				}
				relSeen += rels[li]
				tie += n
			case missing == MissingImputeMin:
				r = lg.maxRank
				if usesScores {
					n = lg.stats.normalize(kind, lg.stats.min)
				}
			case missing == MissingImputeRank && rankOnly:
				r = lg.window + 1
			default:
				if details {
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

// sortKey is one candidate's position in the total order; the rest of the
// key (tie, best rank, id) is read through d on the rare equal scores.
type sortKey struct {
	score float64
	d     int32
}

// before reports whether candidate x precedes candidate y, with equal
// scores: tie-breaker descending, best rank ascending, id ascending.
func (e *engine) before(x, y int32) bool {
	if tx, ty := e.tie[x], e.tie[y]; tx != ty {
		return tx > ty
	}
	if bx, by := e.best[x], e.best[y]; bx != by {
		return bx < by
	}
	return e.ids[x] < e.ids[y]
}

// less reports whether key x precedes key y.
func (e *engine) less(x, y sortKey) bool {
	if x.score != y.score {
		return x.score > y.score
	}
	return x.d != y.d && e.before(x.d, y.d)
}

// sortKeys sorts keys by e.less: a quicksort with a median-of-three pivot
// and insertion sort for short runs, which calls less directly where
// slices.SortFunc calls a closure (a third of the sort's time), and hands
// a range to slices.SortFunc when depth runs out, so it stays O(n log n).
func (e *engine) sortKeys(keys []sortKey, depth int) {
	for len(keys) > 12 {
		if depth == 0 {
			slices.SortFunc(keys, func(x, y sortKey) int {
				switch {
				case x.d == y.d:
					return 0
				case e.less(x, y):
					return -1
				}
				return 1
			})
			return
		}
		depth--
		// Median of first, middle and last to keys[0], then partition.
		m, l := len(keys)/2, len(keys)-1
		if e.less(keys[m], keys[0]) {
			keys[m], keys[0] = keys[0], keys[m]
		}
		if e.less(keys[l], keys[m]) {
			keys[l], keys[m] = keys[m], keys[l]
			if e.less(keys[m], keys[0]) {
				keys[m], keys[0] = keys[0], keys[m]
			}
		}
		keys[0], keys[m] = keys[m], keys[0]
		pivot := keys[0]
		i, j := 1, l
		for {
			for i <= j && e.less(keys[i], pivot) {
				i++
			}
			for i <= j && e.less(pivot, keys[j]) {
				j--
			}
			if i >= j {
				break
			}
			keys[i], keys[j] = keys[j], keys[i]
			i++
			j--
		}
		keys[0], keys[j] = keys[j], keys[0]
		// Recurse into the shorter side, loop on the longer.
		if j < len(keys)-j {
			e.sortKeys(keys[:j], depth)
			keys = keys[j+1:]
		} else {
			e.sortKeys(keys[j+1:], depth)
			keys = keys[:j]
		}
	}
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && e.less(keys[j], keys[j-1]); j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
}

// sortOrder returns the candidates in fused order (e.keys): score
// descending, tie-breaker descending, best rank ascending, id ascending.
func (e *engine) sortOrder() []sortKey {
	C := len(e.ids)
	if e.keys == nil {
		e.keys = make([]sortKey, C)
	}
	keys := e.keys
	for d := range keys {
		keys[d] = sortKey{score: e.score[d], d: int32(d)}
	}
	e.sortKeys(keys, 2*bits.Len(uint(len(keys))))
	return keys
}

// results builds the Results of the last run of strategy s.
func (e *engine) results(s Strategy) []Result {
	L := len(e.names)
	order := e.sortOrder()
	res := make([]Result, len(order))
	usesScores := s.UsesScores()
	for pos, k := range order {
		d := int(k.d)
		r := &res[pos]
		r.ID, r.Score, r.Rank, r.BestRank = e.ids[d], e.score[d], pos+1, e.best[d]
		if e.exact != nil && e.exact[d] {
			r.Bonus = e.bonus
		}
		if e.p.NoDetails || (e.p.DetailsTop > 0 && pos >= e.p.DetailsTop && !e.p.DetailsFor[r.ID]) {
			continue
		}
		row := e.at[d*L : d*L+L]
		n := 0
		for _, at := range row {
			if at >= 0 {
				n++
			}
		}
		r.Legs = make(map[string]mnemotype.LegDetail, n)
		for li, at := range row {
			lg := &e.legs[li]
			det := mnemotype.LegDetail{Contribution: e.contrib[d*L+li]}
			if usesScores {
				det.Normalized = e.norm[d*L+li]
			}
			if at >= 0 {
				det.Rank, det.Score = lg.hits[at].Rank, lg.hits[at].Score
				r.Legs[e.names[li]] = det
				continue
			}
			if det.Contribution == 0 {
				continue // absent, and the missing policy gave it nothing
			}
			// Imputed: run gives a non-zero term to an absent cell only
			// under these two policies, and never rescales it.
			if e.p.Missing == MissingImputeMin {
				det.Rank, det.Score = lg.maxRank, lg.stats.min
			} else {
				det.Rank = lg.window + 1
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
	at := make([]int32, len(e.ids)) // candidate → position in res
	for pos := range res {
		res[pos].Counterfactual = make(map[string]int, len(strategies))
	}
	for pos, k := range e.keys {
		at[k.d] = int32(pos)
	}
	for _, s := range strategies {
		if s == used {
			continue
		}
		e.run(s, false)
		for rank, k := range e.sortOrder() {
			res[at[k.d]].Counterfactual[string(s)] = rank + 1
		}
	}
}
