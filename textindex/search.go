package textindex

import (
	"cmp"
	"math"
	"math/bits"
	"slices"
	"sort"
)

// Query is one search.
type Query struct {
	// Tokens are the query's terms, one token each (see Token), in the
	// query's order: a score adds up the terms' contributions in this
	// order, as the store's ranking function does.
	Tokens []string
	// All keeps the documents holding every term; otherwise any.
	All bool
	// Weights are the fields' weights, each finite and ≥ 0, not all 0: a
	// term counts only in the weighted fields, and the content alone with
	// weight 1 ranks by plain BM25.
	Weights [NumFields]float64
	// K is how many hits a search returns at most, 0 for every match.
	K int
}

// Filter confines a search.
type Filter struct {
	// Accept, when not nil, decides whether a live document may be
	// returned.
	Accept func(d uint32) bool
	// Docs, when not nil, lists every document Accept may keep (and
	// perhaps others; without Accept, exactly those it keeps): a search
	// then visits these alone when that costs less than reading the terms'
	// postings.
	Docs []uint32
}

// Hit is a document and its score (higher is better).
type Hit struct {
	Doc   uint32
	Score float64
}

// slack widens every bound, so that a bound never falls below a score
// computed in another order of operations.
const slack = 1 + 1e-9

// scorer holds one query's statistics.
type scorer struct {
	x       *Index
	q       Query
	classic bool
	ids     []int32 // each term's id, -1 when no document holds it
	idf     []float64
	avgdl   [NumFields]float64
}

// newScorer returns the query's scorer, or nil when nothing can match.
func (x *Index) newScorer(q Query) *scorer {
	if x.live == 0 || len(q.Tokens) == 0 {
		return nil
	}
	s := &scorer{x: x, q: q, classic: q.Weights == [NumFields]float64{Content: 1},
		ids: make([]int32, len(q.Tokens)), idf: make([]float64, len(q.Tokens))}
	var mask uint8
	for c, w := range q.Weights {
		if math.IsNaN(w) || math.IsInf(w, 0) || w < 0 {
			return nil // no field weighs that: the caller validates weights
		}
		if w != 0 {
			mask |= 1 << c
		}
	}
	if mask == 0 {
		return nil
	}
	docs := int64(x.live)
	for c, n := range x.totals {
		s.avgdl[c] = float64(n) / float64(docs)
	}
	found := 0
	for i, tok := range q.Tokens {
		id, ok := x.ids[tok]
		var n int64
		if ok {
			n = int64(x.df(id, mask))
		}
		if n == 0 {
			id = -1
		} else {
			found++
		}
		s.ids[i] = id
		idf := math.Log((float64(docs-n) + 0.5) / (float64(n) + 0.5))
		if idf <= 0 {
			idf = 1e-6
		}
		s.idf[i] = idf
	}
	if found == 0 || (q.All && found < len(q.Tokens)) {
		return nil
	}
	return s
}

// contrib returns term i's contribution to the score of a document with
// counts tf and lengths lens, and whether the term is in a weighted field:
// the store's arithmetic (sqlitedb's mnemo_bm25).
func (s *scorer) contrib(i int, tf [NumFields]uint32, lens [NumFields]uint32) (float64, bool) {
	if s.classic {
		f := float64(tf[Content])
		if f == 0 {
			return 0, false
		}
		D := float64(lens[Content])
		return s.idf[i] * ((f * (K1 + 1.0)) / (f + K1*(1-0.75+0.75*D/s.avgdl[Content]))), true
	}
	w := &s.q.Weights
	tfw, matched := 0.0, false
	for c := range NumFields {
		if w[c] == 0 || tf[c] == 0 {
			continue // adds nothing: w × 0 / norm
		}
		norm := 1.0
		if FieldB[c] != 0 && s.avgdl[c] > 0 {
			norm = 1 - FieldB[c] + FieldB[c]*float64(lens[c])/s.avgdl[c]
		}
		tfw += w[c] * float64(tf[c]) / norm
		matched = true
	}
	if !matched {
		return 0, false
	}
	return s.idf[i] * (tfw * (K1 + 1.0)) / (tfw + K1), true
}

// bound returns the most term i can contribute to a document whose counts
// are at most maxTF and lengths at least minLen (every contribution grows
// with the counts and shrinks with the lengths).
func (s *scorer) bound(i int, maxTF, minLen [NumFields]uint32) float64 {
	if s.classic {
		f := float64(maxTF[Content])
		D := float64(minLen[Content])
		return slack * s.idf[i] * ((f * (K1 + 1.0)) / (f + K1*(1-0.75+0.75*D/s.avgdl[Content])))
	}
	w := &s.q.Weights
	tfw := 0.0
	for c := range NumFields {
		if w[c] == 0 {
			continue
		}
		norm := 1.0
		if FieldB[c] != 0 && s.avgdl[c] > 0 {
			norm = 1 - FieldB[c] + FieldB[c]*float64(minLen[c])/s.avgdl[c]
		}
		tfw += w[c] * float64(maxTF[c]) / norm
	}
	return slack * s.idf[i] * (tfw * (K1 + 1.0)) / (tfw + K1)
}

// cursor walks one term's postings.
type cursor struct {
	t  *term
	qi int // the term's place in the query
	i  int // the current posting
	ub float64
}

const endDoc = math.MaxUint32

func (c *cursor) doc() uint32 {
	if c.i < len(c.t.docs) {
		return c.t.docs[c.i]
	}
	return endDoc
}

// advance moves to the first posting of a document ≥ target, galloping
// then bisecting.
func (c *cursor) advance(target uint32) {
	docs := c.t.docs
	if c.i >= len(docs) || docs[c.i] >= target {
		return
	}
	lo, step := c.i+1, 1
	hi := lo
	for hi < len(docs) && docs[hi] < target {
		lo = hi + 1
		hi += step
		step *= 2
	}
	hi = min(hi, len(docs))
	c.i = lo + sort.Search(hi-lo, func(k int) bool { return docs[lo+k] >= target })
}

// sink receives a search's matches.
type sink interface {
	// add offers a match; it returns false to stop the search.
	add(d uint32, score float64) bool
	// threshold is the score a match must reach to be kept (ties decided
	// by order), -Inf while anything is kept.
	threshold() float64
}

// Search returns the best q.K documents (every match when 0) that match q
// and pass f, best first; equal scores by order, then number.
func (x *Index) Search(q Query, f Filter) []Hit {
	top := &topK{x: x, k: q.K}
	x.run(q, f, top)
	return top.sorted()
}

// Count returns how many documents match q and pass f, counting up to
// limit (≤ 0: every one).
func (x *Index) Count(q Query, f Filter, limit int) int {
	n := &counter{limit: limit}
	q.K = 0
	x.run(q, f, n)
	return n.n
}

func (x *Index) run(q Query, f Filter, out sink) {
	w := x.plan(q, f)
	if w == nil {
		return
	}
	w.out = out
	switch w.way {
	case byDoc:
		w.docs()
	case byTerm:
		w.terms(nil)
	case byPostings:
		if q.All {
			w.all()
		} else {
			w.any()
		}
	}
}

// SearchEither returns the best q.K documents that pass f and hold every
// term of q when at least min of them do (all true), else the best q.K
// that hold any (q.All is not read): what Count of the AND query, then
// Search of the AND or the OR query, return. Where the OR query reads a
// listed scope term by term, one reading of the postings answers both.
func (x *Index) SearchEither(q Query, f Filter, min int) (hits []Hit, all bool) {
	q.All = false
	if w := x.plan(q, f); w != nil && w.way == byTerm {
		and, or := &topK{x: x, k: q.K}, &topK{x: x, k: q.K}
		w.out = or
		if w.terms(and) >= min {
			return and.sorted(), true
		}
		return or.sorted(), false
	}
	q.All = true
	if x.Count(q, f, min) >= min {
		return x.Search(q, f), true
	}
	q.All = false
	return x.Search(q, f), false
}

// way is how a search reads the postings.
type way int

const (
	// byPostings walks the terms' postings together (all, any), a listed
	// scope a bitmap beside them.
	byPostings way = iota
	// byDoc visits a listed scope's documents one by one (docs).
	byDoc
	// byTerm reads each term's postings in turn, summing per listed
	// document (terms).
	byTerm
)

// plan returns the walk of q in f, its way chosen (and its list sorted,
// for the ways that read it in order), or nil when nothing can match.
func (x *Index) plan(q Query, f Filter) *walk {
	s := x.newScorer(q)
	if s == nil {
		return nil
	}
	var cs []*cursor
	postings, fewest := 0, math.MaxInt
	for i, id := range s.ids {
		if id < 0 {
			continue
		}
		t := x.term(id)
		cs = append(cs, &cursor{t: t, qi: i})
		postings += len(t.docs)
		fewest = min(fewest, len(t.docs))
	}
	w := &walk{s: s, cs: cs, contrib: make([]float64, len(q.Tokens))}
	// A list of documents (a scope's, or the ids asked for) is read one of
	// three ways. In an OR query, a list of at most an eighth of the
	// documents is scored term by term (terms: each term's postings read in
	// turn, a bit deciding whether a posting counts, or its cursor moved
	// from one listed document to the next when it has far more postings
	// than the list has documents). Otherwise, a list short against the
	// postings a walk would read (an AND query's walk reads the rarest
	// term's) is visited document by document, a cursor move per term and
	// document costing about what reading eight postings does; and a
	// longer one is a bitmap beside the walk of the postings (where
	// MaxScore skips what cannot reach the top k).
	listCost, walkCost := len(f.Docs)*len(cs), postings
	if q.All {
		walkCost = fewest
	}
	switch {
	case f.Docs != nil && !q.All && len(f.Docs) <= maxTermAtATime && len(f.Docs)*8 <= len(x.docs):
		w.way = byTerm
	case f.Docs != nil && listCost*8 < walkCost:
		w.way = byDoc
	}
	if w.way != byPostings && !slices.IsSorted(f.Docs) {
		f.Docs = slices.Sorted(slices.Values(f.Docs))
	}
	w.f = f
	if f.Docs != nil && w.way != byDoc {
		// Walking the postings, a document outside the list is turned
		// away by a bit, before Accept (which reads its memory: a cache
		// miss per posting in a large index).
		w.listed = make([]uint64, (len(x.docs)+63)/64)
		for _, d := range f.Docs {
			if int(d) < len(x.docs) {
				w.listed[d>>6] |= 1 << (d & 63)
			}
		}
	}
	return w
}

// maxTermAtATime is the longest list of documents terms keeps a sum for.
const maxTermAtATime = 1 << 16

// gallopAbove: terms moves a term's cursor from one listed document to the
// next, rather than read every posting, when the term has more than
// gallopAbove postings per listed document (a move costs about what
// reading that many postings does).
const gallopAbove = 16

// walk is one search's state.
type walk struct {
	s       *scorer
	cs      []*cursor
	f       Filter
	way     way
	out     sink
	contrib []float64
	// listed, when not nil, holds a bit for each document of f.Docs.
	listed []uint64
}

// past returns the document a cursor may move to once document d is
// turned away: the next listed document when d is not listed (every one
// between cannot be returned), else d+1.
func (w *walk) past(d uint32) uint32 {
	if w.listed == nil || w.listed[d>>6]&(1<<(d&63)) != 0 {
		return d + 1
	}
	i := int(d>>6) + 1
	word := w.listed[d>>6] &^ (1<<(d&63+1) - 1) // listed documents after d
	for word == 0 {
		if i >= len(w.listed) {
			return endDoc
		}
		word, i = w.listed[i], i+1
	}
	return uint32((i-1)<<6 + bits.TrailingZeros64(word))
}

// accept reports whether document d may be returned.
func (w *walk) accept(d uint32) bool {
	if w.listed != nil && w.listed[d>>6]&(1<<(d&63)) == 0 {
		return false
	}
	return !w.s.x.isDead(d) && (w.f.Accept == nil || w.f.Accept(d))
}

// score reads the contributions of the cursors standing on d (moving them
// past it) and returns d's score, and whether d matches.
func (w *walk) score(d uint32, cs []*cursor) (float64, bool) {
	x := w.s.x
	lens := x.lengths(d)
	matched := 0
	for _, c := range cs {
		if c.doc() != d {
			continue
		}
		v, ok := w.s.contrib(c.qi, c.t.counts(c.i), lens)
		c.i++
		if ok {
			w.contrib[c.qi] = v
			matched++
		}
	}
	return w.total(matched)
}

// total adds up the contributions in the query's order, clearing them,
// given how many terms matched.
func (w *walk) total(matched int) (float64, bool) {
	score := 0.0
	for i, v := range w.contrib {
		score += v
		w.contrib[i] = 0
	}
	if matched == 0 || (w.s.q.All && matched < len(w.s.q.Tokens)) {
		return 0, false
	}
	return score, true
}

// docs visits the filter's documents one by one.
func (w *walk) docs() {
	for _, d := range w.f.Docs {
		if int(d) >= len(w.s.x.docs) || !w.accept(d) {
			continue
		}
		for _, c := range w.cs {
			c.advance(d)
		}
		if score, ok := w.score(d, w.cs); ok && !w.out.add(d, score) {
			return
		}
	}
}

// terms scores the listed documents (f.Docs, sorted; an OR query) a term
// at a time: it reads each term's postings in full, a bit telling whether
// a posting's document is listed (or, for a term with far more postings
// than the list has documents, moves its cursor from one listed document
// to the next), and adds the term's contribution to that document's sum.
// The terms are taken in the query's order, so that a sum adds what the
// document-at-a-time walks add, in the same order. Each listed document
// holding a term goes to w.out; those holding every term also to and, when
// not nil (SearchEither). It returns how many hold every term.
func (w *walk) terms(and sink) int {
	s, x, docs := w.s, w.s.x, w.f.Docs
	sums := make([]float64, len(docs))
	matched := make([]int32, len(docs)) // terms held, in weighted fields
	// The cursors are in the query's order (plan).
	for _, c := range w.cs {
		if len(c.t.docs) > len(docs)*gallopAbove {
			// Far more postings than listed documents: the cursor
			// gallops from one listed document to the next.
			for j, d := range docs {
				if j > 0 && docs[j-1] == d {
					continue
				}
				if c.advance(d); c.i >= len(c.t.docs) {
					break
				}
				if c.t.docs[c.i] != d {
					continue
				}
				if v, ok := s.contrib(c.qi, c.t.counts(c.i), x.lengths(d)); ok {
					sums[j] += v
					matched[j]++
				}
			}
			continue
		}
		j := 0
		for i, d := range c.t.docs {
			if w.listed[d>>6]&(1<<(d&63)) == 0 {
				continue
			}
			for docs[j] < d {
				j++
			}
			if v, ok := s.contrib(c.qi, c.t.counts(i), x.lengths(d)); ok {
				sums[j] += v
				matched[j]++
			}
		}
	}
	every, orDone := 0, false
	for j, d := range docs {
		if matched[j] == 0 || (j > 0 && docs[j-1] == d) || !w.accept(d) {
			continue
		}
		if int(matched[j]) == len(s.q.Tokens) { // as total: every token, absent ones too
			every++
			if and != nil {
				and.add(d, sums[j])
			}
		}
		if !orDone && !w.out.add(d, sums[j]) {
			if and == nil {
				return every
			}
			orDone = true
		}
	}
	return every
}

// all visits the documents of the rarest term and checks the others.
func (w *walk) all() {
	drive := slices.MinFunc(w.cs, func(a, b *cursor) int { return cmp.Compare(len(a.t.docs), len(b.t.docs)) })
	for d := drive.doc(); d != endDoc; d = drive.doc() {
		if !w.accept(d) {
			drive.advance(w.past(d))
			continue
		}
		every := true
		for _, c := range w.cs {
			if c.advance(d); c.doc() != d {
				every = false
			}
		}
		if !every {
			drive.i++
			continue
		}
		if score, ok := w.score(d, w.cs); ok && !w.out.add(d, score) {
			return
		}
	}
}

// any visits the union of the postings by MaxScore: the terms are ordered
// by the most they can add; those whose bounds together cannot reach the
// threshold are non-essential, and a document is visited only when an
// essential term holds it; the non-essential terms are read for it only
// while it can still reach the threshold.
func (w *walk) any() {
	s, cs := w.s, w.cs
	for _, c := range cs {
		c.ub = s.bound(c.qi, c.t.maxTF, c.t.minLen)
	}
	slices.SortStableFunc(cs, func(a, b *cursor) int { return cmp.Compare(a.ub, b.ub) })
	prefix := make([]float64, len(cs)) // prefix[j]: the bounds of cs[:j+1]
	sum := 0.0
	for j, c := range cs {
		sum += c.ub
		prefix[j] = sum
	}
	x := s.x
	nonEss := 0
	theta := math.Inf(-1)
	for {
		d := uint32(endDoc)
		for _, c := range cs[nonEss:] {
			d = min(d, c.doc())
		}
		if d == endDoc {
			return
		}
		if !w.accept(d) {
			next := w.past(d)
			for _, c := range cs[nonEss:] {
				if c.doc() < next {
					c.advance(next)
				}
			}
			continue
		}
		lens := x.lengths(d)
		matched := 0
		partial := 0.0
		for _, c := range cs[nonEss:] {
			if c.doc() != d {
				continue
			}
			v, ok := s.contrib(c.qi, c.t.counts(c.i), lens)
			c.i++
			if ok {
				w.contrib[c.qi] = v
				partial += v
				matched++
			}
		}
		pruned := false
		for j := nonEss - 1; j >= 0; j-- {
			if (partial+prefix[j])*slack < theta {
				pruned = true
				break
			}
			c := cs[j]
			if c.advance(d); c.doc() != d {
				continue
			}
			v, ok := s.contrib(c.qi, c.t.counts(c.i), lens)
			if ok {
				w.contrib[c.qi] = v
				partial += v
				matched++
			}
		}
		if pruned {
			clear(w.contrib)
			continue
		}
		score, ok := w.total(matched)
		if !ok {
			continue
		}
		if !w.out.add(d, score) {
			return
		}
		if t := w.out.threshold(); t > theta {
			theta = t
			for nonEss < len(cs) && prefix[nonEss]*slack < theta {
				nonEss++
			}
		}
	}
}

// topK keeps the best k matches (every match when k is 0) in a heap whose
// root is the worst kept.
type topK struct {
	x *Index
	k int
	h []Hit
}

// worse reports whether a ranks below b: a lower score, then a later order,
// then a higher number.
func (t *topK) worse(a, b Hit) bool {
	if c := cmp.Compare(a.Score, b.Score); c != 0 {
		return c < 0
	}
	oa, ob := t.x.docs[a.Doc].order, t.x.docs[b.Doc].order
	if oa != ob {
		return oa > ob
	}
	return a.Doc > b.Doc
}

func (t *topK) add(d uint32, score float64) bool {
	h := Hit{Doc: d, Score: score}
	if t.k <= 0 {
		t.h = append(t.h, h)
		return true
	}
	if len(t.h) < t.k {
		t.h = append(t.h, h)
		for i := len(t.h) - 1; i > 0; {
			p := (i - 1) / 2
			if !t.worse(t.h[i], t.h[p]) {
				break
			}
			t.h[i], t.h[p] = t.h[p], t.h[i]
			i = p
		}
		return true
	}
	if !t.worse(t.h[0], h) {
		return true
	}
	t.h[0] = h
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(t.h) && t.worse(t.h[l], t.h[m]) {
			m = l
		}
		if r < len(t.h) && t.worse(t.h[r], t.h[m]) {
			m = r
		}
		if m == i {
			break
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
	return true
}

func (t *topK) threshold() float64 {
	if t.k <= 0 || len(t.h) < t.k {
		return math.Inf(-1)
	}
	return t.h[0].Score
}

// sorted returns the kept matches, best first.
func (t *topK) sorted() []Hit {
	slices.SortFunc(t.h, func(a, b Hit) int {
		switch {
		case t.worse(b, a):
			return -1
		case t.worse(a, b):
			return 1
		}
		return 0
	})
	return t.h
}

// counter counts matches up to a limit.
type counter struct{ n, limit int }

func (c *counter) add(uint32, float64) bool {
	c.n++
	return c.limit <= 0 || c.n < c.limit
}

func (c *counter) threshold() float64 { return math.Inf(-1) }
