package vector

import (
	"cmp"
	"hash/fnv"
	"math"
	"slices"
	"sync"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// The graph is a hierarchical navigable small world (Malkov and Yashunin,
// 2016) over an Index's embedded rows, so that a search of a large scope
// visits a few thousand rows instead of all of them. It is built behind
// the writes: Upsert puts a new or re-embedded row on the index's tail
// (rows not yet in the graph), and GrowGraph moves rows from the tail into
// the graph, a batch at a time, on a caller's goroutine (package dense
// runs it in the background). A search walks the graph and scans the tail
// exactly, so every row is found whatever the graph's progress.
//
// Nodes are numbered in insertion order and never renumbered: a node
// points to its row's slot (rows move when others are deleted) and a row
// to its node. A deleted or re-embedded row leaves its node behind as a
// tombstone, still walked through (its vector kept, unit length, in
// graph.ghosts) but never returned; once tombstones are a fifth of the
// nodes, GrowGraph starts the graph again from the rows.

// Graph parameters.
const (
	graphM              = 16  // links per node above layer 0
	graphM0             = 32  // links per node at layer 0
	graphEfConstruction = 128 // candidates kept while linking a node
	graphMaxLevel       = 24
)

// Defaults of ANN.
const (
	// DefaultExactBelow is the size of a scope (estimated, in memories)
	// below which a search scans it exactly even when the graph exists.
	DefaultExactBelow = 20_000
	// DefaultEf is how many candidates a walk of the graph keeps (at least
	// the k asked for).
	DefaultEf = 256
)

// ANN configures how an Index uses its graph.
type ANN struct {
	// ExactBelow: scopes estimated to hold fewer memories are scanned
	// exactly; 0 means DefaultExactBelow.
	ExactBelow int
	// Ef is the walk's candidate list (at least k); 0 means DefaultEf.
	Ef int
}

func (a ANN) exactBelow() int {
	if a.ExactBelow > 0 {
		return a.ExactBelow
	}
	return DefaultExactBelow
}

func (a ANN) ef(k int) int {
	ef := a.Ef
	if ef <= 0 {
		ef = DefaultEf
	}
	return max(ef, k)
}

// gnode is one node of the graph.
type gnode struct {
	slot  int32 // the row's slot; -1 for a tombstone
	level uint8 // the top layer the node is linked in
	// inv makes the node's vector unit length (the slot's entry in
	// Index.norms, kept here so that a walk need not read it; 1 for a
	// tombstone, whose vector is kept unit length).
	inv float32
}

// graph is an Index's HNSW graph; the Index's lock guards it.
type graph struct {
	nodes []gnode
	// l0 holds every node's layer-0 links: graphM0+1 int32s per node, a
	// count then the links.
	l0 []int32
	// up holds the links of the nodes above layer 0: for a node of level
	// L, L runs of graphM+1 int32s (layers 1..L), each a count then links.
	up     map[int32][]int32
	entry  int32 // -1 while empty
	top    int   // entry's level
	dead   int   // tombstones
	ghosts map[int32][]float32
}

func newGraph() *graph {
	return &graph{entry: -1, up: map[int32][]int32{}, ghosts: map[int32][]float32{}}
}

// links returns node n's links at layer l (count then links, backed by
// the graph's storage).
func (g *graph) links(n int32, l int) []int32 {
	if l == 0 {
		return g.l0[int(n)*(graphM0+1) : int(n+1)*(graphM0+1)]
	}
	return g.up[n][(l-1)*(graphM+1) : l*(graphM+1)]
}

// levelOf draws a node's level from its memory's id (a hash, so that the
// graph does not depend on a random source): P(level ≥ l) = M^-l.
func levelOf(id string) int {
	h := fnv.New64a()
	h.Write([]byte(id))
	v := h.Sum64()
	v ^= v >> 33 // fnv's high bits mix poorly for short keys
	v *= 0xff51afd7ed558ccd
	v ^= v >> 33
	u := (float64(v>>11) + 0.5) / (1 << 53)
	l := int(-math.Log(u) / math.Log(graphM))
	return min(l, graphMaxLevel)
}

// nodeVec returns node n's vector and the factor that makes it unit length.
func (x *Index) nodeVec(n int32) ([]float32, float32) {
	gn := x.graph.nodes[n]
	if gn.slot < 0 {
		return x.graph.ghosts[n], 1
	}
	return x.vecs[int(gn.slot)*x.dim : int(gn.slot+1)*x.dim], gn.inv
}

// sim is the cosine of unit-length q with node n.
func (x *Index) sim(q []float32, n int32) float32 {
	v, inv := x.nodeVec(n)
	return dot(q, v) * inv
}

// toTail puts the embedded row at slot s on the tail.
func (x *Index) toTail(s int) {
	x.rows[s].tail = int32(len(x.tail))
	x.tail = append(x.tail, int32(s))
}

// offTail takes the row at slot s off the tail.
func (x *Index) offTail(s int) {
	r := &x.rows[s]
	i, last := r.tail, x.tail[len(x.tail)-1]
	x.tail[i] = last
	x.rows[last].tail = i
	x.tail = x.tail[:len(x.tail)-1]
	r.tail = -1
}

// unlink detaches the row at slot s from the graph and the tail: its node,
// if any, becomes a tombstone keeping a unit-length copy of its vector.
func (x *Index) unlink(s int) {
	r := &x.rows[s]
	if r.tail >= 0 {
		x.offTail(s)
	}
	if r.node < 0 {
		return
	}
	g := x.graph
	v := make([]float32, x.dim)
	for i, f := range x.vecs[s*x.dim : (s+1)*x.dim] {
		v[i] = f * x.norms[s]
	}
	g.ghosts[r.node] = v
	g.nodes[r.node].slot, g.nodes[r.node].inv = -1, 1
	g.dead++
	r.node = -1
}

// GraphStats describe an Index's graph at one moment.
type GraphStats struct {
	// Linked memories are in the graph; Unlinked embedded ones are not yet
	// (searches scan them exactly); Tombstones are nodes of memories since
	// deleted or re-embedded, walked through but never returned.
	Linked, Unlinked, Tombstones int
}

// Graph returns the graph's stats.
func (x *Index) Graph() GraphStats {
	x.mu.RLock()
	defer x.mu.RUnlock()
	st := GraphStats{Unlinked: len(x.tail)}
	if x.graph != nil {
		st.Linked, st.Tombstones = len(x.graph.nodes)-x.graph.dead, x.graph.dead
	}
	return st
}

// GrowGraph links up to n rows of the tail into the graph (creating it
// first; starting it again when tombstones are a fifth of its nodes) and
// returns how many rows the tail still holds. Once the graph has a
// thousand nodes it works in two phases: it finds each row's candidate
// neighbours under the read lock, on up to workers goroutines, while
// searches go on; then it links the rows under the write lock (a row
// written meanwhile waits for the next call). Callers keep n small (tens
// of rows) so that writers wait little.
func (x *Index) GrowGraph(n, workers int) (left int) {
	x.mu.Lock()
	// A coded index reads its float32 embeddings first; when it cannot,
	// it grows no graph (its searches report why).
	if x.dim == 0 || x.readFloats() != nil {
		defer x.mu.Unlock()
		return len(x.tail)
	}
	if x.graph == nil || (x.graph.dead > 0 && x.graph.dead*5 >= len(x.graph.nodes)) {
		x.resetGraph()
	}
	if len(x.graph.nodes) < parallelFrom || n < 2 {
		defer x.mu.Unlock()
		q := make([]float32, x.dim)
		for ; n > 0 && len(x.tail) > 0; n-- {
			s := int(x.tail[len(x.tail)-1])
			x.offTail(s)
			x.unit(s, q)
			x.attach(s, q, x.linkCandidates(q, levelOf(x.rows[s].id)), nil)
		}
		return len(x.tail)
	}
	x.mu.Unlock()

	x.mu.RLock()
	g := x.graph
	items := make([]pending, min(n, len(x.tail)))
	for i := range items {
		s := int(x.tail[len(x.tail)-1-i])
		it := &items[i]
		it.id, it.level = x.rows[s].id, levelOf(x.rows[s].id)
		it.raw = slices.Clone(x.vecs[s*x.dim : (s+1)*x.dim])
		it.q = make([]float32, x.dim)
		x.unit(s, it.q)
	}
	var wg sync.WaitGroup
	workers = max(1, min(workers, len(items)))
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(items); i += workers {
				items[i].cands = x.linkCandidates(items[i].q, items[i].level)
			}
		}()
	}
	wg.Wait()
	x.mu.RUnlock()

	x.mu.Lock()
	defer x.mu.Unlock()
	if x.graph != g {
		return len(x.tail) // started again meanwhile
	}
	mates := make([]int32, 0, len(items))
	for _, it := range items {
		s, ok := x.slot[it.id]
		if !ok || x.rows[s].tail < 0 || !sameBits(x.vecs[s*x.dim:(s+1)*x.dim], it.raw) {
			continue // deleted, linked by another call, or re-embedded
		}
		x.offTail(s)
		x.attach(s, it.q, it.cands, mates)
		mates = append(mates, x.rows[s].node)
	}
	return len(x.tail)
}

// sameBits reports whether a and b hold the same float32s bit for bit (a
// NaN equals itself: a row holding one is linked all the same).
func sameBits(a, b []float32) bool {
	return slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) })
}

// parallelFrom is the graph size from which GrowGraph finds candidates in
// a first phase: a row then misses only the others of its batch as
// candidates, which attach adds.
const parallelFrom = 1024

// pending is a row GrowGraph links in two phases.
type pending struct {
	id    string
	level int
	raw   []float32 // its embedding when its candidates were found
	q     []float32 // the same, unit length
	cands [][]cand  // by layer
}

// unit writes the unit-length embedding of the row at slot s to q.
func (x *Index) unit(s int, q []float32) {
	inv := x.norms[s]
	for i, f := range x.vecs[s*x.dim : (s+1)*x.dim] {
		q[i] = f * inv
	}
}

// resetGraph drops the graph and puts every embedded row on the tail.
func (x *Index) resetGraph() {
	x.graph = newGraph()
	x.tail = x.tail[:0]
	for s := range x.rows {
		r := &x.rows[s]
		r.node, r.tail = -1, -1
		if r.model >= 0 {
			x.toTail(s)
		}
	}
}

// linkCandidates finds, for unit-length q to be linked up to layer level,
// the candidate neighbours in each layer it shares with the graph (best
// first): the search of the HNSW paper's insertion, which only reads the
// graph.
func (x *Index) linkCandidates(q []float32, level int) [][]cand {
	g := x.graph
	if g.entry < 0 {
		return nil
	}
	ep := g.entry
	epSim := x.sim(q, ep)
	for l := g.top; l > level; l-- {
		ep, epSim = x.greedy(q, ep, epSim, l)
	}
	vs := x.visits()
	defer x.visitPool.Put(vs)
	var w walk
	out := make([][]cand, min(level, g.top)+1)
	for l := len(out) - 1; l >= 0; l-- {
		vs.clear()
		w.reset(graphEfConstruction)
		x.searchLayer(q, ep, epSim, l, &w, vs, nil)
		out[l] = w.sorted()
		if len(out[l]) > 0 {
			ep, epSim = out[l][0].node, out[l][0].sim
		}
	}
	return out
}

// attach adds the row at slot s (unit-length embedding q) to the graph as
// a node, linked in each of its layers to neighbours chosen among cands
// and mates (nodes of its batch, which its candidates' search could not
// see), and linked back from them.
func (x *Index) attach(s int, q []float32, cands [][]cand, mates []int32) {
	g := x.graph
	r := &x.rows[s]
	n := int32(len(g.nodes))
	level := levelOf(r.id)
	g.nodes = append(g.nodes, gnode{slot: int32(s), level: uint8(level), inv: x.norms[s]})
	g.l0 = append(g.l0, make([]int32, graphM0+1)...)
	if level > 0 {
		g.up[n] = make([]int32, level*(graphM+1))
	}
	r.node = n
	if g.entry < 0 {
		g.entry, g.top = n, level
		return
	}
	for l := level; l >= 0; l-- {
		var c []cand
		if l < len(cands) {
			c = cands[l]
		}
		if len(mates) > 0 {
			// Mates join the candidates in order, those that would make
			// the list only where it has room.
			c = slices.Clone(c)
			for _, mt := range mates {
				if int(g.nodes[mt].level) < l || g.nodes[mt].slot < 0 {
					continue
				}
				sm := x.sim(q, mt)
				if len(c) >= graphEfConstruction && sm <= c[len(c)-1].sim {
					continue
				}
				i, _ := slices.BinarySearchFunc(c, sm, func(e cand, t float32) int { return cmp.Compare(t, e.sim) })
				c = slices.Insert(c, i, cand{mt, sm})
			}
		}
		if len(c) == 0 {
			continue
		}
		// A new node chooses graphM neighbours in every layer (as hnswlib
		// does); layer 0's lists grow to graphM0 by the links back.
		maxLinks := graphM
		if l == 0 {
			maxLinks = graphM0
		}
		chosen := x.selectNeighbors(c, graphM, n)
		own := g.links(n, l)
		own[0] = int32(len(chosen))
		for i, ch := range chosen {
			own[1+i] = ch.node
			x.link(ch.node, n, ch.sim, l, maxLinks)
		}
	}
	if level > g.top {
		g.entry, g.top = n, level
	}
}

// selectNeighbors picks up to m of cands (best first by similarity to the
// node being linked) by the heuristic of the HNSW paper: a candidate is
// kept unless a kept one is more similar to it than the node is, which
// keeps links between clusters instead of spending them all inside one.
// Tombstones and self are never chosen.
func (x *Index) selectNeighbors(cands []cand, m int, self int32) []cand {
	out := make([]cand, 0, m)
	for _, c := range cands {
		if len(out) == m {
			break
		}
		if c.node == self || x.graph.nodes[c.node].slot < 0 {
			continue
		}
		cv, cinv := x.nodeVec(c.node)
		keep := true
		for _, o := range out {
			ov, oinv := x.nodeVec(o.node)
			if dot(cv, ov)*cinv*oinv > c.sim {
				keep = false
				break
			}
		}
		if keep {
			out = append(out, c)
		}
	}
	return out
}

// link adds a link from node a to node b (of similarity s) at layer l;
// when a's list is full, the list is chosen again from its links and b by
// the same heuristic.
func (x *Index) link(a, b int32, s float32, l, m int) {
	ls := x.graph.links(a, l)
	cnt := int(ls[0])
	if cnt < m {
		ls[1+cnt] = b
		ls[0]++
		return
	}
	av, ainv := x.nodeVec(a)
	cands := make([]cand, 0, cnt+1)
	cands = append(cands, cand{b, s})
	for _, nb := range ls[1 : 1+cnt] {
		v, inv := x.nodeVec(nb)
		cands = append(cands, cand{nb, dot(av, v) * ainv * inv})
	}
	sortCands(cands)
	kept := x.selectNeighbors(cands, m, a)
	ls[0] = int32(len(kept))
	for i, c := range kept {
		ls[1+i] = c.node
	}
}

// greedy walks layer l from ep to the node most similar to q it can reach
// by always moving to a better neighbour.
func (x *Index) greedy(q []float32, ep int32, epSim float32, l int) (int32, float32) {
	for changed := true; changed; {
		changed = false
		ls := x.graph.links(ep, l)
		for _, nb := range ls[1 : 1+ls[0]] {
			if s := x.sim(q, nb); s > epSim {
				ep, epSim, changed = nb, s, true
			}
		}
	}
	return ep, epSim
}

// cand is a node and its similarity to the query.
type cand struct {
	node int32
	sim  float32
}

// walk is one layer search's state: the frontier (a max-heap by
// similarity) and the best ef nodes found that the search may return (a
// min-heap).
type walk struct {
	ef      int
	front   []cand
	results []cand
	sink    float32 // touch's sum, kept so that its loads are not dropped
}

func (w *walk) reset(ef int) {
	w.ef, w.front, w.results = ef, w.front[:0], w.results[:0]
}

// worst is the least similarity among the results (valid when full).
func (w *walk) worst() float32 { return w.results[0].sim }

func (w *walk) full() bool { return len(w.results) >= w.ef }

func (w *walk) pushFront(c cand) {
	w.front = append(w.front, c)
	h := w.front
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if h[p].sim >= h[i].sim {
			break
		}
		h[p], h[i] = h[i], h[p]
		i = p
	}
}

func (w *walk) popFront() cand {
	h := w.front
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		c := 2*i + 1
		if c >= len(h) {
			break
		}
		if c+1 < len(h) && h[c+1].sim > h[c].sim {
			c++
		}
		if h[i].sim >= h[c].sim {
			break
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
	w.front = h
	return top
}

// offer adds c to the results, dropping the worst once there are ef.
func (w *walk) offer(c cand) {
	h := w.results
	if len(h) < w.ef {
		h = append(h, c)
		for i := len(h) - 1; i > 0; {
			p := (i - 1) / 2
			if h[p].sim <= h[i].sim {
				break
			}
			h[p], h[i] = h[i], h[p]
			i = p
		}
		w.results = h
		return
	}
	if c.sim <= h[0].sim {
		return
	}
	h[0] = c
	for i := 0; ; {
		k := 2*i + 1
		if k >= len(h) {
			break
		}
		if k+1 < len(h) && h[k+1].sim < h[k].sim {
			k++
		}
		if h[i].sim <= h[k].sim {
			break
		}
		h[i], h[k] = h[k], h[i]
		i = k
	}
}

// sorted returns the results best first (reordering them in place).
func (w *walk) sorted() []cand {
	h := w.results
	out := h[:0:0]
	out = append(out, h...)
	sortCands(out)
	return out
}

func sortCands(c []cand) {
	slices.SortFunc(c, func(a, b cand) int { return cmp.Compare(b.sim, a.sim) })
}

// visitSet marks the nodes one search has seen: a node is seen when its
// mark equals the set's epoch, so a reused set is cleared by counting.
type visitSet struct {
	marks []uint32
	epoch uint32
}

// visits returns a cleared visit set for the graph's nodes.
func (x *Index) visits() *visitSet {
	vs, _ := x.visitPool.Get().(*visitSet)
	if vs == nil {
		vs = &visitSet{}
	}
	if n := len(x.graph.nodes); len(vs.marks) < n {
		vs.marks = make([]uint32, n+n/4)
		vs.epoch = 0
	}
	vs.clear()
	return vs
}

// clear forgets every mark.
func (vs *visitSet) clear() {
	vs.epoch++
	if vs.epoch == 0 { // wrapped: clear for real
		clear(vs.marks)
		vs.epoch = 1
	}
}

// searchLayer is the layer search of the HNSW paper from entry point ep:
// every node reached is walked through, but only those keep accepts
// (nil: all) become results. It stops when the frontier's best is worse
// than the worst of ef results.
func (x *Index) searchLayer(q []float32, ep int32, epSim float32, l int, w *walk, vs *visitSet, keep func(int32) bool) {
	vs.marks[ep] = vs.epoch
	w.pushFront(cand{ep, epSim})
	if keep == nil || keep(ep) {
		w.offer(cand{ep, epSim})
	}
	for len(w.front) > 0 {
		c := w.popFront()
		if w.full() && c.sim < w.worst() {
			break
		}
		ls := x.graph.links(c.node, l)
		var fresh [graphM0]int32
		nf := 0
		for _, nb := range ls[1 : 1+ls[0]] {
			if vs.marks[nb] == vs.epoch {
				continue
			}
			vs.marks[nb] = vs.epoch
			fresh[nf] = nb
			nf++
		}
		x.touch(fresh[:nf], w)
		for _, nb := range fresh[:nf] {
			s := x.sim(q, nb)
			if w.full() && s <= w.worst() {
				continue
			}
			w.pushFront(cand{nb, s})
			if keep == nil || keep(nb) {
				w.offer(cand{nb, s})
			}
		}
	}
}

// touch reads a word of each cache line of the nodes' vectors before any
// is scored: a walk's vectors are scattered over the index, and loads that
// do not depend on each other wait for memory together, where a dot
// product at a time would wait for each vector in turn.
func (x *Index) touch(nodes []int32, w *walk) {
	var sink float32
	for _, nb := range nodes {
		v, _ := x.nodeVec(nb)
		for i := 0; i < len(v); i += 16 {
			sink += v[i]
		}
	}
	w.sink += sink
}

// walkGraph returns the graph's best ef nodes for unit-length q that keep
// accepts, in no order.
func (x *Index) walkGraph(q []float32, ef int, keep func(int32) bool) []cand {
	g := x.graph
	ep := g.entry
	epSim := x.sim(q, ep)
	for l := g.top; l > 0; l-- {
		ep, epSim = x.greedy(q, ep, epSim, l)
	}
	vs := x.visits()
	defer x.visitPool.Put(vs)
	var w walk
	w.reset(ef)
	x.searchLayer(q, ep, epSim, 0, &w, vs, keep)
	return w.results
}

// walkCost is about how many rows an unfiltered walk of the graph costs,
// in rows of an exact scan: a walk restricted to a share p of the profile
// visits about 1/p times as many nodes to fill its results, so it beats
// scanning the scope's p·N rows only when p·p·N exceeds this.
const walkCost = 4096

// sampleSize is how many rows estimate reads.
const sampleSize = 256

// estimate returns about how many of the n candidate rows (c.slots, or
// every row) c keeps with an embedding by model mid, from an evenly
// spaced sample.
func (x *Index) estimate(c *compiled, mid int32, n int) int {
	step := max(1, n/sampleSize)
	seen, kept := 0, 0
	for i := 0; i < n; i += step {
		s := i
		if c.slots != nil {
			s = int(c.slots[i])
		}
		seen++
		if r := &x.rows[s]; r.model == mid && c.match(s, r) {
			kept++
		}
	}
	return int(int64(kept) * int64(n) / int64(max(1, seen)))
}

// searchGraph is the search of a large scope: a walk of the graph for the
// rows in it, and an exact scan of the tail. It reports false when the
// scope is better scanned exactly (small, or a small share of the
// profile), or when the walk found fewer than k rows (a filter starving
// it): the caller then scans.
func (x *Index) searchGraph(q []float32, qn float32, mid int32, c *compiled, k int) ([]mnemotype.Hit, bool) {
	g := x.graph
	// A graph holding fewer memories than its tail (the first batches, or
	// one started again) is not worth a walk: the exact scan splits across
	// CPUs and visits only a scope's postings, the tail's scan neither.
	if g == nil || len(g.nodes)-g.dead < len(x.tail) {
		return nil, false
	}
	n := len(x.rows)
	if c.slots != nil {
		n = len(c.slots)
	}
	if n < x.ann.exactBelow() {
		return nil, false
	}
	// A walk's cost is capped at the exact scans it replaces, so that a
	// small ExactBelow (tests) walks small indexes too.
	est, cost := x.estimate(c, mid, n), min(walkCost, x.ann.exactBelow())
	if est < x.ann.exactBelow() || int64(est)*int64(est) < int64(cost)*int64(len(x.rows)) {
		return nil, false
	}
	qu := make([]float32, len(q))
	for i, f := range q {
		qu[i] = f * qn
	}
	keep := func(nd int32) bool {
		s := g.nodes[nd].slot
		if s < 0 {
			return false
		}
		r := &x.rows[s]
		return r.model == mid && c.match(int(s), r)
	}
	h := topK{k: k}
	// The walk ranks by its own arithmetic; hits carry the scores an exact
	// scan (and Score) gives.
	for _, cd := range x.walkGraph(qu, x.ann.ef(k), keep) {
		s := int(g.nodes[cd.node].slot)
		h.offer(s, float64(dot(q, x.vecs[s*x.dim:(s+1)*x.dim])*x.norms[s]*qn), x.rows)
	}
	for _, s32 := range x.tail {
		s := int(s32)
		if r := &x.rows[s]; r.model == mid && c.match(s, r) {
			h.offer(s, float64(dot(q, x.vecs[s*x.dim:(s+1)*x.dim])*x.norms[s]*qn), x.rows)
		}
	}
	if len(h.items) < k {
		return nil, false
	}
	out := make([]mnemotype.Hit, len(h.items))
	for i, e := range h.items {
		out[i] = mnemotype.Hit{ID: x.rows[e.slot].id, Score: e.score}
	}
	sortHits(out)
	x.walks.Add(1)
	return out, true
}

// GraphLeftOut reports whether x was decoded without the graph its
// encoding held (DecodeOptions.NoGraph).
func (x *Index) GraphLeftOut() bool { return x.graphLeftOut }

// Walks returns how many searches walked the graph (the rest scanned).
func (x *Index) Walks() int64 { return x.walks.Load() }
