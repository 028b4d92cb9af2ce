package postgres

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
)

// The full-text index is table lex_blocks: a profile's postings of one
// token, 256 row ids to a row (block = rid >> 8), packed in data. A
// posting is the memory's row id, the token's count in each field and the
// lengths of the memory's content and context (the fields BM25 normalises
// by length), so that scoring a query reads its tokens' blocks and never
// the memories' rows. A row per posting cost some 100 bytes of table and
// index each (70 postings a memory: 11 KB per memory) and a write per
// posting; a block costs about 8 bytes a posting and a write per token of
// a batch.
//
// Writers to a profile take turns (its row of table profiles), so the
// blocks are read, changed in Go and written back inside the write's
// transaction.

// blockShift is the number of row-id bits a block spans.
const blockShift = 8

// posting is one memory's entry in a token's list.
type posting struct {
	rid              int64
	tf               int64 // packTF
	content, context uint32
}

// encodeBlock packs postings (sorted by rid, all of one block).
func encodeBlock(ps []posting) []byte {
	b := make([]byte, 0, 8*len(ps))
	for _, p := range ps {
		b = append(b, byte(p.rid))
		u := uint64(p.tf)
		for range numFields {
			b = binary.AppendUvarint(b, u&tfMax)
			u >>= 16
		}
		b = binary.AppendUvarint(b, uint64(p.content))
		b = binary.AppendUvarint(b, uint64(p.context))
	}
	return b
}

var errBadBlock = errors.New("malformed posting block")

// decodeBlock unpacks a block's postings, appending them to dst.
func decodeBlock(dst []posting, block int64, data []byte) ([]posting, error) {
	base := block << blockShift
	for len(data) > 0 {
		p := posting{rid: base | int64(data[0])}
		data = data[1:]
		var tf uint64
		for c := range numFields {
			v, n := binary.Uvarint(data)
			if n <= 0 || v > tfMax {
				return dst, errBadBlock
			}
			tf |= v << (16 * c)
			data = data[n:]
		}
		p.tf = int64(tf)
		for _, dst := range []*uint32{&p.content, &p.context} {
			v, n := binary.Uvarint(data)
			if n <= 0 || v > 1<<32-1 {
				return nil, errBadBlock
			}
			*dst = uint32(v)
			data = data[n:]
		}
		dst = append(dst, p)
	}
	return dst, nil
}

// blockRows are rows of lex_blocks to write, as columns.
type blockRows struct {
	terms  []string
	blocks []int64
	data   [][]byte
}

func (r *blockRows) add(k blockKey, data []byte) {
	r.terms, r.blocks, r.data = append(r.terms, k.term), append(r.blocks, k.block), append(r.data, data)
}

// blockList is a block's postings being changed, and the change of its
// term's document frequencies (shared by the term's blocks).
type blockList struct {
	ps []posting
	n  *dfChange
}

// dfChange is a change of a term's document frequencies: of the memories
// holding it anywhere, and in their content.
type dfChange struct{ content, docs int64 }

// blockKey is a row of lex_blocks.
type blockKey struct {
	term  string
	block int64
}

// indexChange is what a write does to a profile's index: memories taken
// out (row id and the tokens they were indexed with) and entries added.
type indexChange struct {
	removed map[int64][]string
	added   []doc
}

// apply writes c to profile's blocks and statistics, with docsDelta more
// documents: the blocks c touches are read, changed and written back, the
// document frequencies and field lengths follow. lens are the field
// lengths of the removed memories (by row id). Blocks past row id last
// (the profile's highest before the write's new rows) do not exist yet:
// a batch of new memories reads only the block it starts in. overlap, when
// not nil, is work of the write's on the transaction that runs while the
// blocks are changed and encoded (an insert's rows), before they are
// written; its error is apply's.
func (ix *indexer) apply(ctx context.Context, profile string, c indexChange, lens map[int64][numFields]int32, docsDelta int, last int64,
	overlap func(context.Context) error) error {
	// lists holds the postings of every block c touches, each with its
	// term's change of document frequencies; at is the list of each
	// posting added, in c.added's order (an import's batch adds some 70
	// postings a memory: each is keyed once).
	added := 0
	for _, d := range c.added {
		added += len(d.lexemes)
	}
	lists := make(map[blockKey]*blockList, added/2)
	df := map[string]*dfChange{}
	list := func(k blockKey) *blockList {
		l := lists[k]
		if l == nil {
			n := df[k.term]
			if n == nil {
				n = &dfChange{}
				df[k.term] = n
			}
			l = &blockList{n: n}
			lists[k] = l
		}
		return l
	}
	// The blocks that exist (at or before last's) are keyed first, to be
	// read; the others are keyed below, while overlap runs.
	for rid, terms := range c.removed {
		for _, t := range terms {
			list(blockKey{t, rid >> blockShift})
		}
	}
	for _, d := range c.added {
		if d.rid>>blockShift <= last>>blockShift {
			for _, t := range d.lexemes {
				list(blockKey{t, d.rid >> blockShift})
			}
		}
	}
	if added == 0 && len(lists) == 0 && docsDelta == 0 {
		if overlap != nil {
			return overlap(ctx)
		}
		return nil
	}
	terms := make([]string, 0, len(lists))
	blocks := make([]int64, 0, len(lists))
	for k := range lists {
		if k.block <= last>>blockShift {
			terms, blocks = append(terms, k.term), append(blocks, k.block)
		}
	}
	if len(terms) > 0 {
		// One probe of the key per block (a lateral join that OFFSET 0
		// keeps from being flattened): planned as a hash join, it read the
		// profile's whole index.
		rows, err := ix.tx.Query(ctx, `SELECT k.term, k.block, b.data FROM unnest($2::text[], $3::bigint[]) AS k(term, block)
			CROSS JOIN LATERAL (SELECT data FROM lex_blocks b WHERE b.profile = $1 AND b.term = k.term AND b.block = k.block OFFSET 0) b`,
			profile, terms, blocks)
		if err != nil {
			return fmt.Errorf("read postings: %w", err)
		}
		for rows.Next() {
			var k blockKey
			var data []byte
			if err := rows.Scan(&k.term, &k.block, &data); err != nil {
				rows.Close()
				return fmt.Errorf("read postings: %w", err)
			}
			ps, err := decodeBlock(nil, k.block, data)
			if err != nil {
				rows.Close()
				return fmt.Errorf("read postings of %q: %w", k.term, err)
			}
			list(k).ps = ps
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("read postings: %w", err)
		}
	}
	// The transaction is overlap's until it returns: nothing below uses
	// it before then.
	var overlapErr error
	var overlapping sync.WaitGroup
	if overlap != nil {
		overlapping.Go(func() { overlapErr = overlap(ctx) })
	}
	at := make([]*blockList, 0, added)
	for _, d := range c.added {
		for _, t := range d.lexemes {
			at = append(at, list(blockKey{t, d.rid >> blockShift}))
		}
	}
	var tokens [numFields]int64
	for rid, ts := range c.removed {
		for _, t := range ts {
			l := lists[blockKey{t, rid >> blockShift}]
			i, found := slices.BinarySearchFunc(l.ps, rid, func(p posting, rid int64) int { return cmp.Compare(p.rid, rid) })
			if !found {
				continue
			}
			l.n.docs--
			if l.ps[i].tf&tfMax != 0 {
				l.n.content--
			}
			l.ps = slices.Delete(l.ps, i, i+1)
		}
		for f, l := range lens[rid] {
			tokens[f] -= int64(l)
		}
	}
	for _, d := range c.added {
		for f, l := range d.lens {
			tokens[f] += int64(l)
		}
		for j := range d.lexemes {
			p := posting{rid: d.rid, tf: d.tf[j], content: uint32(d.lens[fieldContent]), context: uint32(d.lens[fieldContext])}
			l := at[0]
			at = at[1:]
			var i int
			found := false
			if n := len(l.ps); n == 0 || l.ps[n-1].rid < d.rid {
				i = n // a new memory's row id is past the block's
			} else {
				i, found = slices.BinarySearchFunc(l.ps, d.rid, func(p posting, rid int64) int { return cmp.Compare(p.rid, rid) })
			}
			if found {
				l.ps[i] = p
			} else {
				l.ps = slices.Insert(l.ps, i, p)
				l.n.docs++
				if d.inContent(j) {
					l.n.content++
				}
			}
		}
	}
	// Blocks past last are new: a plain insert (an upsert costs twice as
	// much per row, and an import's blocks are nearly all new).
	var w, n blockRows
	var dTerms []string
	var dBlocks []int64
	for k, l := range lists {
		switch ps := l.ps; {
		case len(ps) == 0:
			dTerms, dBlocks = append(dTerms, k.term), append(dBlocks, k.block)
		case k.block > last>>blockShift:
			n.add(k, encodeBlock(ps))
		default:
			w.add(k, encodeBlock(ps))
		}
	}
	order := make([]int, len(n.terms))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(strings.Compare(n.terms[a], n.terms[b]), cmp.Compare(n.blocks[a], n.blocks[b]))
	})
	// Every term whose blocks changed gets a new version (postingCache),
	// its document frequencies their change, if any: df holds each.
	dfTerms := slices.Sorted(maps.Keys(df))
	contents, all := make([]int64, 0, len(dfTerms)), make([]int64, 0, len(dfTerms))
	for _, t := range dfTerms {
		contents, all = append(contents, df[t].content), append(all, df[t].docs)
	}
	overlapping.Wait()
	if overlapErr != nil {
		return overlapErr
	}
	if len(w.terms) > 0 {
		if _, err := ix.tx.Exec(ctx, `INSERT INTO lex_blocks AS b (profile, term, block, data)
			SELECT $1, term, block, data FROM unnest($2::text[], $3::bigint[], $4::bytea[]) AS u(term, block, data) ORDER BY term, block
			ON CONFLICT (profile, term, block) DO UPDATE SET data = excluded.data`, profile, w.terms, w.blocks, w.data); err != nil {
			return fmt.Errorf("write postings: %w", mapErr(err))
		}
	}
	if len(n.terms) > 0 {
		// COPY, in key order (order): no executor per row, and the index
		// is written from left to right.
		i := 0
		if _, err := ix.tx.CopyFrom(ctx, pgx.Identifier{"lex_blocks"}, []string{"profile", "term", "block", "data"},
			pgx.CopyFromFunc(func() ([]any, error) {
				if i == len(order) {
					return nil, nil
				}
				j := order[i]
				i++
				return []any{profile, n.terms[j], n.blocks[j], n.data[j]}, nil
			})); err != nil {
			return fmt.Errorf("write new postings: %w", mapErr(err))
		}
	}
	if len(dTerms) > 0 {
		if _, err := ix.tx.Exec(ctx, `DELETE FROM lex_blocks b USING unnest($2::text[], $3::bigint[]) AS k(term, block)
			WHERE b.profile = $1 AND b.term = k.term AND b.block = k.block`, profile, dTerms, dBlocks); err != nil {
			return fmt.Errorf("delete postings: %w", mapErr(err))
		}
	}
	if len(dfTerms) > 0 {
		// One version for all of the write's terms: a version is compared
		// with the term's own earlier one only.
		if _, err := ix.tx.Exec(ctx, `WITH v AS MATERIALIZED (SELECT nextval('lex_versions') AS ver)
			INSERT INTO lex_terms AS t (profile, term, content_docs, docs, ver)
			SELECT $1, term, c, d, v.ver FROM unnest($2::text[], $3::bigint[], $4::bigint[]) AS u(term, c, d), v
			ON CONFLICT (profile, term) DO UPDATE SET content_docs = t.content_docs + excluded.content_docs, docs = t.docs + excluded.docs,
				ver = excluded.ver`,
			profile, dfTerms, contents, all); err != nil {
			return fmt.Errorf("count terms: %w", mapErr(err))
		}
	}
	if _, err := ix.tx.Exec(ctx, `UPDATE profiles SET docs = docs + $2, content_tokens = content_tokens + $3, actor_tokens = actor_tokens + $4,
		time_tokens = time_tokens + $5, context_tokens = context_tokens + $6 WHERE name = $1`,
		profile, docsDelta, tokens[fieldContent], tokens[fieldActor], tokens[fieldTime], tokens[fieldContext]); err != nil {
		return fmt.Errorf("update profile statistics: %w", mapErr(err))
	}
	return nil
}

// indexed reads the tokens and field lengths the memories of profile with
// ids are indexed with, by row id.
func (ix *indexer) indexed(ctx context.Context, profile string, ids []string) (map[int64][]string, map[int64][numFields]int32, error) {
	rows, err := ix.tx.Query(ctx, `SELECT rid, terms, lens FROM memories WHERE profile = $1 AND id = ANY($2)`, profile, ids)
	if err != nil {
		return nil, nil, fmt.Errorf("read index entries: %w", err)
	}
	defer rows.Close()
	terms := map[int64][]string{}
	lens := map[int64][numFields]int32{}
	for rows.Next() {
		var rid int64
		var ts []string
		var ls []int32
		if err := rows.Scan(&rid, &ts, &ls); err != nil {
			return nil, nil, fmt.Errorf("read index entries: %w", err)
		}
		terms[rid] = ts
		var l [numFields]int32
		copy(l[:], ls)
		lens[rid] = l
	}
	return terms, lens, rows.Err()
}

// scanBlocks calls fn with the postings of each of profile's tokens toks'
// blocks (of the blocks of rids only, when not nil; a token whose list
// spans few more blocks than that, by its document frequency df and the
// profile's docs, is read whole: one index range instead of a probe per
// block). fn must not keep nor change ps. Lists cache holds at the terms'
// current versions (known holds those read in tx already) are not read
// again (cache may be nil); lists read whole are put in it.
func scanBlocks(ctx context.Context, tx pgx.Tx, cache *postingCache, known map[string]int64, profile string, docs int64, toks []string,
	df map[string]int64, rids []int64, fn func(term string, ps []posting)) error {
	vers := known
	if cache != nil && slices.ContainsFunc(toks, func(t string) bool { _, ok := known[t]; return !ok }) {
		var err error
		if vers, err = termVersions(ctx, tx, profile, toks); err != nil {
			return err
		}
	}
	whole, probe := toks, []string(nil)
	var blocks []int64
	if rids != nil {
		seen := make(map[int64]bool, len(rids))
		for _, r := range rids {
			if b := r >> blockShift; !seen[b] {
				seen[b] = true
				blocks = append(blocks, b)
			}
		}
		whole = nil
		for _, t := range toks {
			// A list of n postings of a profile of docs memories spans
			// about span × (1 - (1 - n/docs)^256) blocks: probing more
			// than a quarter of them costs more than reading it whole.
			n, ok := df[t]
			span := float64(docs)/(1<<blockShift) + 1
			spanned := span * (1 - math.Pow(1-min(1, float64(n)/float64(max(docs, 1))), 1<<blockShift))
			if ok && float64(len(blocks)) >= spanned/4 {
				whole = append(whole, t)
			} else {
				probe = append(probe, t)
			}
		}
	}
	// Cached lists first: whole, or the postings of rids' blocks.
	cached := func(ts []string) []string {
		left := ts[:0:0]
		for _, t := range ts {
			ps, ok := cache.get(profile, t, vers[t])
			if !ok {
				left = append(left, t)
				continue
			}
			if rids == nil {
				fn(t, ps)
				continue
			}
			// The list is in row id order: each block's postings are a
			// range of it.
			var in []posting
			for _, b := range blocks {
				lo, _ := slices.BinarySearchFunc(ps, b<<blockShift, func(p posting, rid int64) int { return cmp.Compare(p.rid, rid) })
				hi, _ := slices.BinarySearchFunc(ps, (b+1)<<blockShift, func(p posting, rid int64) int { return cmp.Compare(p.rid, rid) })
				in = append(in, ps[lo:hi]...)
			}
			fn(t, in)
		}
		return left
	}
	whole, probe = cached(whole), cached(probe)
	var buf []posting
	var lists map[string][]posting // whole lists read, for the cache
	scan := func(rows pgx.Rows, keep bool) error {
		defer rows.Close()
		var term string
		var block int64
		var data []byte
		for rows.Next() {
			if err := rows.Scan(&term, &block, &data); err != nil {
				return fmt.Errorf("read postings: %w", err)
			}
			var err error
			if buf, err = decodeBlock(buf[:0], block, data); err != nil {
				return fmt.Errorf("read postings of %q: %w", term, err)
			}
			fn(term, buf)
			if keep {
				lists[term] = append(lists[term], buf...)
			}
		}
		return rows.Err()
	}
	if len(whole) > 0 {
		rows, err := tx.Query(ctx, `SELECT term, block, data FROM lex_blocks WHERE profile = $1 AND term = ANY($2)`, profile, whole)
		if err != nil {
			return fmt.Errorf("read postings: %w", err)
		}
		keep := cache != nil
		if keep {
			lists = make(map[string][]posting, len(whole))
		}
		if err := scan(rows, keep); err != nil {
			return err
		}
		for t, ps := range lists {
			slices.SortFunc(ps, func(a, b posting) int { return cmp.Compare(a.rid, b.rid) })
			cache.put(profile, t, vers[t], ps)
		}
	}
	if len(probe) > 0 {
		rows, err := tx.Query(ctx, `SELECT t.term, k.block, b.data FROM unnest($2::text[]) AS t(term) CROSS JOIN unnest($3::bigint[]) AS k(block)
			CROSS JOIN LATERAL (SELECT data FROM lex_blocks b WHERE b.profile = $1 AND b.term = t.term AND b.block = k.block OFFSET 0) b`,
			profile, probe, blocks)
		if err != nil {
			return fmt.Errorf("read postings: %w", err)
		}
		if err := scan(rows, false); err != nil {
			return err
		}
	}
	return nil
}

// termVersions reads the versions of profile's tokens toks (absent: 0).
func termVersions(ctx context.Context, tx pgx.Tx, profile string, toks []string) (map[string]int64, error) {
	rows, err := tx.Query(ctx, `SELECT term, ver FROM lex_terms WHERE profile = $1 AND term = ANY($2)`, profile, toks)
	if err != nil {
		return nil, fmt.Errorf("read term versions: %w", err)
	}
	defer rows.Close()
	vers := make(map[string]int64, len(toks))
	for rows.Next() {
		var t string
		var v int64
		if err := rows.Scan(&t, &v); err != nil {
			return nil, fmt.Errorf("read term versions: %w", err)
		}
		vers[t] = v
	}
	return vers, rows.Err()
}
