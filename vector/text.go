package vector

import (
	"hash/fnv"
	"math/bits"
	"slices"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/textindex"
)

// An index may also hold its memories' full-text index (EnableText): each
// row's document in a textindex.Index, so that a lexical search filters by
// the same scope data and postings as a dense one. Documents are numbered
// by the text index; docSlot maps them back to rows.

// EnableText makes an empty index keep its memories' full-text index;
// from then on every memory must come with its text (UpsertText). It
// panics on an index that holds memories.
func (x *Index) EnableText() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.rows) > 0 {
		panic("vector: EnableText on an index holding memories")
	}
	x.text = textindex.New()
	x.textBroken = false
}

// HasText reports whether the index holds a complete full-text index.
func (x *Index) HasText() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.textComplete()
}

// textComplete reports, under the lock, whether the index holds a
// complete full-text index whose postings could all be read.
func (x *Index) textComplete() bool {
	return x.text != nil && !x.textBroken && x.text.Err() == nil
}

// KeepsText reports whether the index keeps a full-text index, complete
// or not (HasText): its memories then come with their text (UpsertText).
func (x *Index) KeepsText() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.text != nil
}

// TextLeftOut reports whether the index was decoded without the text
// index its encoding held (DecodeOptions.NoText).
func (x *Index) TextLeftOut() bool { return x.textLeftOut }

// textHash identifies a document's text and order.
func textHash(d *textindex.Doc) uint64 {
	h := fnv.New64a()
	for _, f := range d.Fields {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	var b [8]byte
	for i := range b {
		b[i] = byte(d.Order >> (8 * i))
	}
	h.Write(b[:])
	return h.Sum64()
}

// setText gives the row at slot s the document d (kept when unchanged),
// under the write lock. With d nil the row's text is unknown: the
// full-text index is no longer complete (textBroken).
func (x *Index) setText(s int, d *textindex.Doc, old int32, oldHash uint64) {
	r := &x.rows[s]
	r.doc = -1
	if d == nil {
		if old >= 0 {
			x.dropDoc(old)
		}
		x.textBroken = true
		return
	}
	h := textHash(d)
	if old >= 0 && h == oldHash {
		r.doc, r.textHash = old, h
		return
	}
	if old >= 0 {
		x.dropDoc(old)
	}
	n := x.text.Add(*d)
	r.doc, r.textHash = int32(n), h
	x.docSlot = append(x.docSlot, int32(s))
}

// dropDoc takes document d out of the text index.
func (x *Index) dropDoc(d int32) {
	x.text.Delete(uint32(d))
	x.docSlot[d] = -1
}

// compactText drops the text index's tombstones once they are a quarter of
// its documents, renumbering the rows' documents.
func (x *Index) compactText() {
	t := x.text
	if t == nil || t.Dead() < 1024 || t.Dead() < t.Docs()/4 {
		return
	}
	remap := t.Compact()
	x.docSlot = make([]int32, t.Docs())
	for s := range x.rows {
		r := &x.rows[s]
		if r.doc >= 0 {
			r.doc = remap[r.doc]
			x.docSlot[r.doc] = int32(s)
		}
	}
}

// UpsertText is Upsert for an index keeping text (EnableText): docs[i] is
// mems[i]'s document (its fields and order).
func (x *Index) UpsertText(mems []mnemotype.Memory, docs []textindex.Doc) error {
	if len(docs) != len(mems) {
		panic("vector: UpsertText with a document count unlike the memories'")
	}
	return x.upsert(mems, docs)
}

// TextQuery is a lexical search of the full-text index.
type TextQuery struct {
	textindex.Query
	Filter Filter
}

// SearchText runs a lexical search of the full-text index inside the
// filter: hits best first, scores as textindex's. ok is false when the
// index holds no complete full-text index.
func (x *Index) SearchText(q TextQuery) (hits []mnemotype.Hit, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	f, ok := x.textFilter(q.Filter)
	if !ok || f == nil {
		return nil, ok
	}
	found := x.text.Search(q.Query, *f)
	if x.text.Err() != nil {
		return nil, false // a token's postings could not be read (OpenText)
	}
	return x.textHits(found), true
}

// SearchTextEither is SearchText of q's AND query when at least min
// documents of the filter match it (all true), else of its OR query
// (textindex.Index.SearchEither: one reading of the postings where it can);
// q.All is not read. ok as for SearchText.
func (x *Index) SearchTextEither(q TextQuery, min int) (hits []mnemotype.Hit, all, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	f, ok := x.textFilter(q.Filter)
	if !ok || f == nil {
		return nil, min <= 0, ok
	}
	found, all := x.text.SearchEither(q.Query, *f, min)
	if x.text.Err() != nil {
		return nil, false, false
	}
	return x.textHits(found), all, true
}

// textHits returns the memories of the text index's hits, in order.
func (x *Index) textHits(found []textindex.Hit) []mnemotype.Hit {
	hits := make([]mnemotype.Hit, len(found))
	for i, h := range found {
		hits[i] = mnemotype.Hit{ID: x.rows[x.docSlot[h.Doc]].id, Score: h.Score}
	}
	return hits
}

// CountText counts the documents matching q inside its filter, up to limit
// (textindex.Index.Count); ok as for SearchText.
func (x *Index) CountText(q TextQuery, limit int) (n int, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	f, ok := x.textFilter(q.Filter)
	if !ok || f == nil {
		return 0, ok
	}
	n = x.text.Count(q.Query, *f, limit)
	return n, x.text.Err() == nil
}

// textFilter compiles f for the text index (nil when nothing can pass),
// under the read lock; ok is false without a complete text index.
func (x *Index) textFilter(f Filter) (*textindex.Filter, bool) {
	if !x.textComplete() {
		return nil, false
	}
	c := x.compile(f)
	if c.none {
		return nil, true
	}
	if c.keepsAll() {
		// Every live document is a row's: no row need be read.
		return &textindex.Filter{}, true
	}
	tf := &textindex.Filter{}
	if !c.exact {
		tf.Accept = func(d uint32) bool {
			s := x.docSlot[d]
			return s >= 0 && c.match(int(s), &x.rows[s])
		}
	}
	if c.slots != nil {
		tf.Docs = x.sortedDocs(c.slots)
	}
	return tf, true
}

// sortedDocs returns the text index's documents of slots, in order. A list
// from several postings (sessions, kinds) comes in no order: when it holds
// more than one document in 64, a bitmap of the documents, read in order,
// sorts it in one pass.
func (x *Index) sortedDocs(slots []int32) []uint32 {
	docs := make([]uint32, 0, len(slots))
	n := x.text.Docs()
	if len(slots) <= n/64 {
		for _, s := range slots {
			if d := x.rows[s].doc; d >= 0 {
				docs = append(docs, uint32(d))
			}
		}
		slices.Sort(docs)
		return docs
	}
	set := make([]uint64, (n+63)/64)
	for _, s := range slots {
		if d := x.rows[s].doc; d >= 0 {
			set[d>>6] |= 1 << (d & 63)
		}
	}
	for i, w := range set {
		for ; w != 0; w &= w - 1 {
			docs = append(docs, uint32(i<<6+bits.TrailingZeros64(w)))
		}
	}
	return docs
}

// HoldsText reports, for each of ids, which of tokens its document holds
// in a field of mask (textindex.Index.Holds): held[i][j] for ids[i] and
// tokens[j], all false for an id the index does not hold. ok is false when
// the index holds no complete full-text index.
func (x *Index) HoldsText(ids, tokens []string, mask uint8) (held [][]bool, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if !x.textComplete() {
		return nil, false
	}
	held = make([][]bool, len(ids))
	for i, id := range ids {
		held[i] = make([]bool, len(tokens))
		s, found := x.slot[id]
		if !found || x.rows[s].doc < 0 {
			continue
		}
		for j, tok := range tokens {
			held[i][j] = x.text.Holds(uint32(x.rows[s].doc), tok, mask)
		}
	}
	return held, x.text.Err() == nil
}
