// Package textindex holds one profile's full-text index in process: each
// memory's fields tokenized as SQLite's FTS5 tokenizes them (package
// ftstoken), a posting list per token, and BM25F ranking with the index's
// own statistics — the SQLite store's arithmetic, operation for operation,
// so that a search returns the scores the store returns for the same
// memories. A top-k search skips the documents that cannot reach the top
// (MaxScore); a search confined to a small set of documents visits those
// alone.
//
// Documents are numbered in the order they are added; Delete leaves a
// tombstone, and Compact drops the tombstones and renumbers. AppendBinary
// and Decode write and read an index whole (for a snapshot); Open reads
// one from a file lazily, each token's postings on first use. An Index is
// not synchronised: searches may run concurrently with each other, not
// with a write.
package textindex

import (
	"math"
	"slices"
	"sync"
	"time"
	"unsafe"

	"github.com/mnemo-dev/mnemo/internal/ftstoken"
)

// The fields of a document, in the SQLite store's column order.
const (
	Content = iota
	Actor
	Time
	Context
	NumFields
)

// FieldB are the fields' length normalisations (BM25's b): the content
// and the previous turns vary in length; a name and a date hardly do.
var FieldB = [NumFields]float64{Content: 0.75, Actor: 0, Time: 0, Context: 0.75}

// K1 is BM25's term-frequency saturation.
const K1 = 1.2

// TimeWords renders when a memory occurred as its time field holds it:
// the words a question may name — weekday, day, month and year ("Monday 8
// May 2023"), in UTC.
func TimeWords(t time.Time) string {
	return t.UTC().Format("Monday 2 January 2006")
}

// Doc is a document to index.
type Doc struct {
	Fields [NumFields]string
	// Order breaks ties between equal scores, lowest first (the store's
	// row order).
	Order int64
}

// A posting's counts are packed 4 bits a field; laneMax in a field marks
// a count that did not fit, and the posting's counts are then in its
// term's over.
const (
	laneBits = 4
	laneMax  = 1<<laneBits - 1
)

// Index is a full-text index. The zero value is not usable: call New.
type Index struct {
	ids   map[string]int32 // token → term
	terms []term
	docs  []doc
	// norms packs each document's lengths of the fields BM25 normalises
	// (content in the low 16 bits, context in the high; normMax in either:
	// see docs), and deadBits marks its tombstones: what a search reads of
	// every candidate, kept small so that fewer reads miss the cache.
	norms    []uint32
	deadBits []uint64
	// postings counts the postings held in memory, overs the overflowing
	// counts (Bytes).
	postings, overs int
	live            int
	totals          [NumFields]int64 // the live documents' field lengths, summed
	dead            int
	// lazy, when not nil, holds the terms not yet read of an index Open
	// read lazily.
	lazy *lazy
	// version changes with every write, deletes with every Delete (the
	// document-frequency cache's keys).
	version, deletes uint64
	// dfs caches counts for df; searches share it.
	dfMu sync.Mutex
	dfs  map[dfKey]dfCount
	tk   ftstoken.Tokenizer
	// scratch of Add
	counts map[string]int
	tmp    [][NumFields]uint32
	order  []string
}

type dfKey struct {
	term int32
	mask uint8
}

// dfCount is a cached count: for every field (mask all), the tombstones
// in a term's postings as of a number of deletes; for other fields, the
// live postings holding the term in them as of a version.
type dfCount struct {
	version uint64
	n       int
}

// doc is one document's statistics.
type doc struct {
	order int64
	lens  [NumFields]uint32
	dead  bool
}

// term is one token's posting list: the documents holding it, ascending,
// and their counts in each field, packed (see laneBits), with the counts
// that do not fit by document in over. maxTF and minLen bound every
// posting ever added: the highest count in each field, the shortest
// length of each field. The term of a lazily read index whose postings
// are not read yet has them in its block, pending.
type term struct {
	docs   []uint32
	tfs    []uint16
	over   map[uint32][NumFields]uint32
	maxTF  [NumFields]uint32
	minLen [NumFields]uint32
	block  block
}

// noLength is the bound of lengths of a term without postings.
var noLength = [NumFields]uint32{math.MaxUint32, math.MaxUint32, math.MaxUint32, math.MaxUint32}

// New returns an empty index.
func New() *Index {
	return &Index{ids: map[string]int32{}, dfs: map[dfKey]dfCount{}, counts: map[string]int{}}
}

// Len returns the number of live documents.
func (x *Index) Len() int { return x.live }

// Docs returns the number of document numbers given, tombstones included:
// the next Add returns it.
func (x *Index) Docs() int { return len(x.docs) }

// Dead returns the number of tombstones.
func (x *Index) Dead() int { return x.dead }

// Totals returns the live documents' field lengths, summed, in tokens.
func (x *Index) Totals() [NumFields]int64 { return x.totals }

// Live reports whether document d is in the index (added, not deleted).
func (x *Index) Live(d uint32) bool { return int(d) < len(x.docs) && !x.docs[d].dead }

// Order returns the order of document d.
func (x *Index) Order(d uint32) int64 { return x.docs[d].order }

// Bytes estimates the memory the index holds.
func (x *Index) Bytes() int64 {
	x.dfMu.Lock()
	cached := len(x.dfs)
	x.dfMu.Unlock()
	if l := x.lazy; l != nil { // searches read terms
		l.mu.Lock()
		defer l.mu.Unlock()
	}
	b := int64(cap(x.docs))*int64(unsafe.Sizeof(doc{})) + int64(cap(x.norms))*4 + int64(cap(x.deadBits))*8 +
		int64(cap(x.terms))*int64(unsafe.Sizeof(term{})) + int64(len(x.ids))*64 + int64(x.overs)*48 +
		int64(cached)*56 + int64(len(x.counts))*48 + int64(cap(x.tmp))*16 + int64(cap(x.order))*16
	// Postings as held: 6 bytes each, and the slack of the lists'
	// doubling (a quarter on average).
	return b + int64(x.postings)*6*5/4
}

// normMax marks a length norms cannot hold.
const normMax = 0xFFFF

// packNorms packs the lengths norms keeps.
func packNorms(lens [NumFields]uint32) uint32 {
	return min(lens[Content], normMax) | min(lens[Context], normMax)<<16
}

// setNorms computes norms and deadBits from docs.
func (x *Index) setNorms() {
	x.norms = make([]uint32, len(x.docs))
	x.deadBits = make([]uint64, (len(x.docs)+63)/64)
	for d := range x.docs {
		x.norms[d] = packNorms(x.docs[d].lens)
		if x.docs[d].dead {
			x.deadBits[d/64] |= 1 << (d % 64)
		}
	}
}

// isDead reports whether document d is a tombstone.
func (x *Index) isDead(d uint32) bool {
	return x.dead > 0 && x.deadBits[d/64]&(1<<(d%64)) != 0
}

// lengths returns document d's lengths of the fields BM25 normalises
// (FieldB not 0: content and context; the others read 0).
func (x *Index) lengths(d uint32) [NumFields]uint32 {
	n := x.norms[d]
	c, cx := n&normMax, n>>16
	if c == normMax || cx == normMax {
		return x.docs[d].lens
	}
	return [NumFields]uint32{Content: c, Context: cx}
}

// Add indexes a document and returns its number.
func (x *Index) Add(d Doc) uint32 {
	n := uint32(len(x.docs))
	clear(x.counts)
	x.tmp, x.order = x.tmp[:0], x.order[:0]
	var lens [NumFields]uint32
	for c, text := range d.Fields {
		x.tk.Tokenize(text, func(tok []byte, _ int) {
			lens[c]++
			i, ok := x.counts[string(tok)]
			if !ok {
				s := string(tok)
				i = len(x.tmp)
				x.counts[s] = i
				x.tmp = append(x.tmp, [NumFields]uint32{})
				x.order = append(x.order, s)
			}
			x.tmp[i][c]++
		})
	}
	x.docs = append(x.docs, doc{order: d.Order, lens: lens})
	x.norms = append(x.norms, packNorms(lens))
	if int(n)/64 >= len(x.deadBits) {
		x.deadBits = append(x.deadBits, 0)
	}
	for i, s := range x.order {
		id, ok := x.ids[s]
		if !ok {
			id = int32(len(x.terms))
			x.ids[s] = id
			x.terms = append(x.terms, term{minLen: noLength})
		}
		x.post(x.term(id), n, x.tmp[i], lens)
	}
	x.live++
	for c := range NumFields {
		x.totals[c] += int64(lens[c])
	}
	x.version++
	return n
}

// post appends document n, with counts tf and lengths lens, to t's list.
func (x *Index) post(t *term, n uint32, tf, lens [NumFields]uint32) {
	var packed uint16
	for c, f := range tf {
		packed |= uint16(min(f, laneMax)) << (laneBits * c)
		t.maxTF[c] = max(t.maxTF[c], f)
		t.minLen[c] = min(t.minLen[c], lens[c])
	}
	if overflows(packed) {
		if t.over == nil {
			t.over = map[uint32][NumFields]uint32{}
		}
		t.over[n] = tf
		x.overs++
	}
	t.docs = append(t.docs, n)
	t.tfs = append(t.tfs, packed)
	x.postings++
}

// overflows reports whether a packed count did not fit.
func overflows(p uint16) bool {
	for c := range NumFields {
		if p>>(laneBits*c)&laneMax == laneMax {
			return true
		}
	}
	return false
}

// counts returns the counts of t's posting i.
func (t *term) counts(i int) [NumFields]uint32 {
	p := t.tfs[i]
	if overflows(p) {
		return t.over[t.docs[i]]
	}
	return [NumFields]uint32{uint32(p & laneMax), uint32(p >> laneBits & laneMax), uint32(p >> (2 * laneBits) & laneMax), uint32(p >> (3 * laneBits))}
}

// Delete removes document d (a tombstone until Compact); a deleted or
// unknown document is ignored.
func (x *Index) Delete(d uint32) {
	if !x.Live(d) {
		return
	}
	dc := &x.docs[d]
	dc.dead = true
	x.deadBits[d/64] |= 1 << (d % 64)
	for c := range NumFields {
		x.totals[c] -= int64(dc.lens[c])
	}
	x.live--
	x.dead++
	x.version++
	x.deletes++
}

// Compact drops the tombstones: the live documents are renumbered in their
// order, and remap gives each old number's new one (-1 for a tombstone).
func (x *Index) Compact() (remap []int32) {
	remap = make([]int32, len(x.docs))
	docs := make([]doc, 0, x.live)
	for d := range x.docs {
		if x.docs[d].dead {
			remap[d] = -1
			continue
		}
		remap[d] = int32(len(docs))
		docs = append(docs, x.docs[d])
	}
	// Terms left without a live posting go; the others are renumbered.
	for id := range x.terms {
		x.term(int32(id)) // every term read before the counts start again
	}
	termMap := make([]int32, len(x.terms))
	terms := make([]term, 0, len(x.terms))
	x.overs = 0
	for id := range x.terms {
		t := x.term(int32(id))
		n := 0
		for _, d := range t.docs {
			if remap[d] >= 0 {
				n++
			}
		}
		if n == 0 {
			termMap[id] = -1
			continue
		}
		termMap[id] = int32(len(terms))
		// The bounds are those of the postings kept.
		nt := term{docs: make([]uint32, 0, n), tfs: make([]uint16, 0, n), minLen: noLength}
		for i, d := range t.docs {
			if r := remap[d]; r >= 0 {
				tf := t.counts(i)
				if overflows(t.tfs[i]) {
					if nt.over == nil {
						nt.over = map[uint32][NumFields]uint32{}
					}
					nt.over[uint32(r)] = tf
					x.overs++
				}
				for c := range NumFields {
					nt.maxTF[c] = max(nt.maxTF[c], tf[c])
					nt.minLen[c] = min(nt.minLen[c], x.docs[d].lens[c])
				}
				nt.docs = append(nt.docs, uint32(r))
				nt.tfs = append(nt.tfs, t.tfs[i])
			}
		}
		terms = append(terms, nt)
	}
	ids := make(map[string]int32, len(terms)) // a new map: Go's maps never shrink
	for s, id := range x.ids {
		if termMap[id] >= 0 {
			ids[s] = termMap[id]
		}
	}
	x.ids = ids
	x.docs, x.terms, x.dead = docs, terms, 0
	if x.lazy != nil && x.Err() == nil {
		x.lazy = nil // every term is read
	}
	x.setNorms()
	x.postings = 0
	for i := range terms {
		x.postings += len(terms[i].docs)
	}
	clear(x.dfs)
	x.version++
	return remap
}

// Token returns the single token FTS5 makes of a query term, and false
// when it makes none or several (a phrase, which this index does not
// search).
func Token(term string) (string, bool) {
	toks := ftstoken.Tokens(term)
	if len(toks) != 1 {
		return "", false
	}
	return toks[0], true
}

// maxCachedCounts bounds the document-frequency cache; past it, the cache
// starts afresh.
const maxCachedCounts = 1 << 16

// allFields is the mask of every field.
const allFields = 1<<NumFields - 1

// df returns how many live documents hold term id in a field of mask
// (bit c: field c). Every posting counts while the index has no
// tombstone; otherwise the postings are counted once per number of
// deletes (for every field) or version (for some), and the count cached.
func (x *Index) df(id int32, mask uint8) int {
	t := x.term(id)
	if mask == allFields && x.dead == 0 {
		return len(t.docs)
	}
	k, ver := dfKey{id, mask}, x.version
	if mask == allFields {
		ver = x.deletes
	}
	x.dfMu.Lock()
	e, ok := x.dfs[k]
	x.dfMu.Unlock()
	if !ok || e.version != ver {
		var lanes uint16
		for c := range NumFields {
			if mask&(1<<c) != 0 {
				lanes |= laneMax << (laneBits * c)
			}
		}
		e = dfCount{version: ver}
		for i, d := range t.docs {
			if mask == allFields {
				if x.docs[d].dead {
					e.n++ // tombstones
				}
			} else if t.tfs[i]&lanes != 0 && !x.docs[d].dead {
				e.n++
			}
		}
		x.dfMu.Lock()
		if len(x.dfs) >= maxCachedCounts {
			clear(x.dfs)
		}
		x.dfs[k] = e
		x.dfMu.Unlock()
	}
	if mask == allFields {
		return len(t.docs) - e.n
	}
	return e.n
}

// DocFreq returns how many live documents hold token in a field of mask
// (bit c: field c).
func (x *Index) DocFreq(token string, mask uint8) int {
	id, ok := x.ids[token]
	if !ok {
		return 0
	}
	return x.df(id, mask)
}

// Holds reports whether live document d holds token in a field of mask
// (bit c: field c), from token's postings: no text is tokenized again.
func (x *Index) Holds(d uint32, token string, mask uint8) bool {
	id, ok := x.ids[token]
	if !ok || int(d) >= len(x.docs) || x.isDead(d) {
		return false
	}
	t := x.term(id)
	i, found := slices.BinarySearch(t.docs, d)
	if !found {
		return false
	}
	for c := range NumFields {
		if mask&(1<<c) != 0 && t.tfs[i]>>(laneBits*c)&laneMax != 0 {
			return true
		}
	}
	return false
}
