package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mnemo-dev/mnemo/internal/ftstoken"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
)

// BM25's parameters: the SQLite store's (k1 1.2; b 0.75 for the content
// and the context, which vary in length, 0 for a name and a date).
const bm25K1 = 1.2

var fieldBs = [numFields]float64{fieldContent: 0.75, fieldActor: 0, fieldTime: 0, fieldContext: 0.75}

// Lexical implements store.Store: BM25(F) over the profile's memories with
// the profile's own statistics, as the SQLite store ranks (higher is
// better; ties in insertion order). The postings of the query's tokens
// are read through their key (lex.go), and the rows scored in Go; a term
// of several tokens (a phrase) is counted from its candidates' text.
//
// An OR query with a limit whose terms are partly common scores only the
// rows matching a rare term, as the SQLite store does (see there), with
// the full query's scores; the common terms' postings are read for the
// best of them only, as many as it takes for the rest to be unable to
// reach the top (each term adds at most idf × (k1 + 1)).
//
// The whole call reads one snapshot (a repeatable-read transaction), so
// the statistics are exact for the rows it ranks.
func (s *Store) Lexical(ctx context.Context, p store.LexicalParams) ([]mnemotype.Hit, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	q := &lexQuery{s: s, sc: p.Scope, all: p.Match.All}
	if err := q.setFields(p.Fields); err != nil {
		return nil, err
	}
	var tk ftstoken.Tokenizer
	for _, t := range p.Match.Terms {
		if slices.Contains(q.terms, t) {
			continue
		}
		toks := termTokens(&tk, t)
		if len(toks) == 0 {
			continue // no token: ignored, as FTS5 ignores it
		}
		q.terms, q.phrases = append(q.terms, t), append(q.phrases, toks)
	}
	if len(q.terms) == 0 || (p.Only != nil && len(p.Only) == 0) {
		return nil, nil
	}
	tx, err := s.reader(ctx).BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("lexical search: %w", err)
	}
	defer tx.Rollback(ctx)
	q.tx = tx
	err = tx.QueryRow(ctx, `SELECT seq, docs, content_tokens, actor_tokens, time_tokens, context_tokens,
			(SELECT greatest(value::int, 0) FROM meta WHERE key = 'context_turns') FROM profiles WHERE name = $1`,
		p.Scope.Profile).Scan(&q.seq, &q.docs, &q.tokens[fieldContent], &q.tokens[fieldActor], &q.tokens[fieldTime], &q.tokens[fieldContext],
		&q.turns)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("lexical search: read profile: %w", err)
	}
	if q.docs == 0 {
		return nil, nil
	}
	hits, err := q.run(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("lexical search: %w", err)
	}
	return hits, nil
}

// lexQuery is one Lexical call.
type lexQuery struct {
	s       *Store
	tx      pgx.Tx
	sc      mnemotype.Scope
	all     bool
	terms   []string
	phrases [][]string // each term's tokens
	// the profile's statistics, and the context turns the index holds
	seq, docs int64
	turns     int
	tokens    [numFields]int64
	weights   [numFields]float64
	// mask selects the weighted fields' packed counts.
	mask int64
	// rids and allowed are the rows the query may return (LexicalParams.Only
	// and the scope, resolved), nil for any of the profile's; excluded are
	// Scope.Exclude's rows.
	rids              []int64
	allowed, excluded map[int64]bool
	idf               []float64
	// tokDF is each one-token term's document frequency, by token (how a
	// read chooses between a token's whole list and some of its blocks).
	tokDF map[string]int64
	// vers are the query's tokens' versions (postingCache), read with the
	// document frequencies; nil until then.
	vers  map[string]int64
	avgdl [numFields]float64
	tk    ftstoken.Tokenizer
}

// setFields resolves the field weights of a query.
func (q *lexQuery) setFields(w store.FieldWeights) error {
	if w.IsZero() {
		w.Content = 1
	}
	q.weights = [numFields]float64{fieldContent: w.Content, fieldActor: w.Actor, fieldTime: w.Time, fieldContext: w.Context}
	n := 0
	for c, x := range q.weights {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return mnemotype.Invalidf("%s field weight = %v: must be a finite number ≥ 0", fieldNames[c], x)
		}
		if x > 0 {
			n++
		}
	}
	if n == 0 {
		return mnemotype.Invalidf("field weights are all 0: no field to search")
	}
	q.mask = fieldMask(q.weights)
	return nil
}

// classic reports whether the query scores the content alone with weight
// 1: plain BM25.
func (q *lexQuery) classic() bool {
	return q.weights == [numFields]float64{fieldContent: 1}
}

func (q *lexQuery) run(ctx context.Context, p store.LexicalParams) ([]mnemotype.Hit, error) {
	if err := q.resolveIDs(ctx, p.Only); err != nil {
		return nil, err
	}
	if q.rids != nil && len(q.rids) == 0 {
		return nil, nil // nothing in scope
	}
	df, err := q.docFreqs(ctx)
	if err != nil {
		return nil, err
	}
	q.tokDF = map[string]int64{}
	for i, ph := range q.phrases {
		if len(ph) == 1 {
			q.tokDF[ph[0]] = max(q.tokDF[ph[0]], df[i])
		}
	}
	if p.MinHits > 0 && p.Only == nil {
		n, err := q.countMatches(ctx, p.MinHits, df)
		if err != nil || n < p.MinHits {
			return nil, err
		}
	}
	q.setIDF(df)
	if p.Only == nil && !q.all && p.Limit > 0 && len(q.terms) > 1 && q.s.commonRatio > 0 {
		if rare := q.rareTerms(df); len(rare) > 0 && len(rare) < len(q.terms) {
			hits, err := q.rankedRare(ctx, p.Limit, rare)
			if err != nil || len(hits) == p.Limit {
				return hits, err
			}
		}
	}
	cands := newCandidates(len(q.terms))
	if err := q.readAll(ctx, cands, df); err != nil {
		return nil, err
	}
	every := q.every()
	var out []*candidate
	for _, c := range cands.all {
		if c.score, c.ok = q.score(c, every); c.ok {
			out = append(out, c)
		}
	}
	return q.hits(ctx, out, p.Limit)
}

// resolveIDs resolves LexicalParams.Only, Scope.Exclude and the rest of
// the scope to row ids: the rows the query may return are those of only
// (when not nil), in scope (every row of the profile when the scope is
// the whole profile), not excluded.
func (q *lexQuery) resolveIDs(ctx context.Context, only []string) error {
	sc := q.sc
	sc.Exclude = nil
	whole := sc.Project == "" && len(sc.Sessions) == 0 && len(sc.Kinds) == 0 && len(sc.Actors) == 0 && sc.After.IsZero() && sc.Before.IsZero() &&
		len(sc.Metadata) == 0
	var a args
	cond := `m.profile = ` + a.add(q.sc.Profile)
	if !whole {
		a = nil
		cond = scopeSQL(&a, "m", sc)
	}
	if only != nil {
		cond += ` AND m.id = ANY(` + a.add(only) + `)`
	}
	if only != nil || !whole {
		rids, err := q.ridsWhere(ctx, cond, a)
		if err != nil {
			return err
		}
		q.rids, q.allowed = rids, map[int64]bool{}
		for _, r := range rids {
			q.allowed[r] = true
		}
	}
	if len(q.sc.Exclude) > 0 {
		rids, err := q.ridsWhere(ctx, `m.profile = $1 AND m.id = ANY($2)`, args{q.sc.Profile, q.sc.Exclude})
		if err != nil {
			return err
		}
		q.excluded = map[int64]bool{}
		for _, r := range rids {
			q.excluded[r] = true
		}
	}
	return nil
}

func (q *lexQuery) ridsWhere(ctx context.Context, cond string, a args) ([]int64, error) {
	rows, err := q.tx.Query(ctx, `SELECT m.rid FROM memories m WHERE `+cond, a...)
	if err != nil {
		return nil, fmt.Errorf("resolve the scope: %w", err)
	}
	rids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("resolve the scope: %w", err)
	}
	if rids == nil {
		rids = []int64{}
	}
	return rids, nil
}

// keeps reports whether the query may return row rid.
func (q *lexQuery) keeps(rid int64) bool {
	return (q.allowed == nil || q.allowed[rid]) && !q.excluded[rid]
}

// restrict returns the row ids a read is limited to: rids, else the
// scope's when it has them and they are few enough for their blocks to be
// read instead of the tokens' whole lists (nil: no limit).
func (q *lexQuery) restrict(rids []int64) []int64 {
	if rids != nil {
		return rids
	}
	if q.rids != nil && len(q.rids) <= restrictMax {
		return q.rids
	}
	return nil
}

// restrictMax is the most row ids whose blocks a read looks up one by one.
const restrictMax = 2048

// countMatches counts the rows in scope that match the query, up to limit.
func (q *lexQuery) countMatches(ctx context.Context, limit int, df []int64) (int, error) {
	cands := newCandidates(len(q.terms))
	if err := q.readAll(ctx, cands, df); err != nil {
		return 0, err
	}
	every := q.every()
	n := 0
	for _, c := range cands.all {
		if q.matches(c, every) {
			if n++; n >= limit {
				break
			}
		}
	}
	return n, nil
}

// every lists every term's index.
func (q *lexQuery) every() []int {
	out := make([]int, len(q.terms))
	for i := range out {
		out[i] = i
	}
	return out
}

// readAll adds to cands every row in scope matching a term, with its
// counts of every term. An AND query reads its rarest term's list first,
// then the others' for the rows it found only.
func (q *lexQuery) readAll(ctx context.Context, cands *candidates, df []int64) error {
	if !q.all || len(q.terms) == 1 {
		return q.read(ctx, cands, q.every(), nil, true)
	}
	rarest := 0
	for i := range q.terms {
		if df[i] < df[rarest] {
			rarest = i
		}
	}
	if err := q.read(ctx, cands, []int{rarest}, nil, true); err != nil {
		return err
	}
	if len(cands.all) == 0 {
		return nil
	}
	rids := make([]int64, 0, len(cands.all))
	for _, c := range cands.all {
		rid := c.rid
		rids = append(rids, rid)
	}
	var others []int
	for i := range q.terms {
		if i != rarest {
			others = append(others, i)
		}
	}
	return q.read(ctx, cands, others, rids, false)
}

// rareTerms returns the indexes of the terms of an OR query that occur in
// at most max(commonMin, commonRatio × the profile's memories) of them,
// rarest first while their matches add up to the rare-term budget, in the
// query's order; the rarest always stays (the SQLite store's rule).
func (q *lexQuery) rareTerms(df []int64) []int {
	s := q.s
	th := max(int64(s.commonMin), int64(float64(q.docs)*s.commonRatio))
	var out []int
	for i := range q.terms {
		if df[i] <= th {
			out = append(out, i)
		}
	}
	if s.rareBudget > 0 && len(out) > 1 {
		budget := max(int64(s.rareBudget), int64(float64(q.docs)*RareTermBudgetRatio))
		byCount := slices.Clone(out)
		slices.SortStableFunc(byCount, func(a, b int) int { return cmp.Compare(df[a], df[b]) })
		sum := df[byCount[0]]
		for i := 1; i < len(byCount); i++ {
			if sum += df[byCount[i]]; sum > budget {
				dropped := byCount[i:]
				out = slices.DeleteFunc(out, func(t int) bool { return slices.Contains(dropped, t) })
				break
			}
		}
	}
	return out
}

// docFreqs returns how many of the profile's memories match each term in
// the weighted fields. A one-token term searched in every field, or in the
// content alone, is read from lex_terms; another is counted, and the count
// cached until the profile's next change.
func (q *lexQuery) docFreqs(ctx context.Context) ([]int64, error) {
	df := make([]int64, len(q.terms))
	contentOnly := q.mask == fieldMask([numFields]float64{fieldContent: 1})
	var table []string
	var count []int
	for i, ph := range q.phrases {
		if n, ok := q.s.terms.get(q.sc.Profile, q.seq, q.mask, q.terms[i]); ok {
			df[i] = n
			continue
		}
		if len(ph) == 1 && (q.mask == fieldMask([numFields]float64{1, 1, 1, 1}) || contentOnly) {
			table = append(table, ph[0])
		} else {
			count = append(count, i)
		}
	}
	// One read of lex_terms: the document frequencies it holds, and every
	// token's version, which the posting cache goes by (scanBlocks).
	var toks []string
	for _, ph := range q.phrases {
		for _, t := range ph {
			if !slices.Contains(toks, t) {
				toks = append(toks, t)
			}
		}
	}
	if len(table) > 0 || (q.s.postings != nil && len(toks) > 0) {
		col := "docs"
		if contentOnly {
			col = "content_docs"
		}
		rows, err := q.tx.Query(ctx, `SELECT term, `+col+`, ver FROM lex_terms WHERE profile = $1 AND term = ANY($2)`, q.sc.Profile, toks)
		if err != nil {
			return nil, fmt.Errorf("read document frequencies: %w", err)
		}
		got := map[string]int64{}
		q.vers = make(map[string]int64, len(toks))
		for _, t := range toks {
			q.vers[t] = 0 // not in the index: no list to cache
		}
		for rows.Next() {
			var t string
			var n, ver int64
			if err := rows.Scan(&t, &n, &ver); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read document frequencies: %w", err)
			}
			got[t], q.vers[t] = n, ver
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read document frequencies: %w", err)
		}
		for i, ph := range q.phrases {
			if n, ok := got[ph[0]]; ok && len(ph) == 1 && slices.Contains(table, ph[0]) {
				df[i] = n
			}
		}
	}
	for _, i := range count {
		// Counted in the whole profile.
		whole := &lexQuery{s: q.s, tx: q.tx, sc: mnemotype.Scope{Profile: q.sc.Profile}, phrases: q.phrases, terms: q.terms,
			weights: q.weights, mask: q.mask, turns: q.turns}
		cands := newCandidates(len(q.terms))
		if err := whole.read(ctx, cands, []int{i}, nil, true); err != nil {
			return nil, err
		}
		df[i] = int64(len(cands.all))
		q.s.terms.put(q.sc.Profile, q.seq, q.mask, q.terms[i], df[i])
	}
	return df, nil
}

// setIDF computes the terms' IDFs and the fields' mean lengths.
func (q *lexQuery) setIDF(df []int64) {
	for c, n := range q.tokens {
		q.avgdl[c] = float64(n) / float64(q.docs)
	}
	q.idf = make([]float64, len(df))
	for i, n := range df {
		idf := math.Log((float64(q.docs-n) + 0.5) / (float64(n) + 0.5))
		if idf <= 0 {
			idf = 1e-6
		}
		q.idf[i] = idf
	}
}

// candidate is a row being scored: each term's counts in its weighted
// fields (unweighted ones left 0), the lengths BM25 normalises by.
type candidate struct {
	rid              int64
	tf               [][numFields]float64
	content, context float64
	score, partial   float64
	ok               bool
}

// candidates are the rows a query scores, by row id. They are allocated
// in chunks: a query at 100k memories scores thousands of them. They are
// found by the block of their row id (postings come in blocks, in row id
// order: one map lookup per block, not per posting), and listed in all.
type candidates struct {
	blocks    map[int64]*[1 << blockShift]*candidate
	all       []*candidate
	lastBlock int64
	last      *[1 << blockShift]*candidate
	terms     int
	free      []candidate
	tfs       [][numFields]float64
}

func newCandidates(terms int) *candidates {
	return &candidates{blocks: map[int64]*[1 << blockShift]*candidate{}, terms: terms, lastBlock: -1}
}

const candidateChunk = 512

// slots returns the candidates of rid's block, creating them with create.
func (cs *candidates) slots(rid int64, create bool) *[1 << blockShift]*candidate {
	b := rid >> blockShift
	if b == cs.lastBlock && cs.last != nil {
		return cs.last
	}
	arr := cs.blocks[b]
	if arr == nil {
		if !create {
			return nil
		}
		arr = new([1 << blockShift]*candidate)
		cs.blocks[b] = arr
	}
	cs.lastBlock, cs.last = b, arr
	return arr
}

// lookup returns rid's candidate, or nil.
func (cs *candidates) lookup(rid int64) *candidate {
	arr := cs.slots(rid, false)
	if arr == nil {
		return nil
	}
	return arr[rid&(1<<blockShift-1)]
}

// get returns rid's candidate, made if it is not one yet.
func (cs *candidates) get(rid int64) *candidate {
	arr := cs.slots(rid, true)
	c := arr[rid&(1<<blockShift-1)]
	if c == nil {
		if len(cs.free) == 0 {
			cs.free = make([]candidate, candidateChunk)
			cs.tfs = make([][numFields]float64, candidateChunk*cs.terms)
		}
		c = &cs.free[0]
		cs.free = cs.free[1:]
		c.rid, c.tf = rid, cs.tfs[:cs.terms:cs.terms]
		cs.tfs = cs.tfs[cs.terms:]
		arr[rid&(1<<blockShift-1)] = c
		cs.all = append(cs.all, c)
	}
	return c
}

// read adds to cands the rows matching one of the terms (indexes) in a
// weighted field, with their counts of those terms, among the rows the
// query may return (of rids, when not nil). Without create, it only fills
// in the counts of rows already in cands.
func (q *lexQuery) read(ctx context.Context, cands *candidates, terms []int, rids []int64, create bool) error {
	limit := rids
	rids = q.restrict(rids)
	var only map[int64]bool
	if limit != nil {
		only = make(map[int64]bool, len(limit))
		for _, r := range limit {
			only[r] = true
		}
	}
	tokTerms := map[string][]int{}
	var toks []string
	for _, i := range terms {
		ph := q.phrases[i]
		if len(ph) > 1 {
			if err := q.readPhrase(ctx, cands, i, rids, only, create); err != nil {
				return err
			}
			continue
		}
		if tokTerms[ph[0]] == nil {
			toks = append(toks, ph[0])
		}
		tokTerms[ph[0]] = append(tokTerms[ph[0]], i)
	}
	if len(toks) == 0 {
		return nil
	}
	return scanBlocks(ctx, q.tx, q.s.postings, q.vers, q.sc.Profile, q.docs, toks, q.tokDF, rids, func(tok string, ps []posting) {
		for _, p := range ps {
			if p.tf&q.mask == 0 || !q.keeps(p.rid) || (only != nil && !only[p.rid]) {
				continue
			}
			var c *candidate
			if create {
				c = cands.get(p.rid)
			} else if c = cands.lookup(p.rid); c == nil {
				continue
			}
			c.content, c.context = float64(p.content), float64(p.context)
			counts := unpackTF(p.tf)
			for f := range numFields {
				if q.weights[f] == 0 {
					counts[f] = 0
				}
			}
			for _, i := range tokTerms[tok] {
				c.tf[i] = counts
			}
		}
	})
}

// readPhrase adds to cands the rows where term i, a phrase, occurs in a
// weighted field, with its counts: its candidates hold every one of its
// tokens, and are counted from their fields' text.
func (q *lexQuery) readPhrase(ctx context.Context, cands *candidates, i int, rids []int64, only map[int64]bool, create bool) error {
	ph := q.phrases[i]
	var toks []string
	for _, t := range ph {
		if !slices.Contains(toks, t) {
			toks = append(toks, t)
		}
	}
	holds := map[int64]int{}
	err := scanBlocks(ctx, q.tx, q.s.postings, q.vers, q.sc.Profile, q.docs, toks, q.tokDF, rids, func(_ string, ps []posting) {
		for _, p := range ps {
			if q.keeps(p.rid) && (only == nil || only[p.rid]) && (create || cands.lookup(p.rid) != nil) {
				holds[p.rid]++
			}
		}
	})
	if err != nil {
		return err
	}
	var found []int64
	for rid, n := range holds {
		if n == len(toks) {
			found = append(found, rid)
		}
	}
	if len(found) == 0 {
		return nil
	}
	var a args
	turns := a.add(q.turns)
	// The statement first: Go leaves unspecified whether a... is read
	// before or after the a.add calls of the same argument list.
	sqlQ := `SELECT m.rid, m.content, m.actor, m.occurred_at, m.occurred_ns, ` + contextSQL(turns) + `, m.lens
		FROM memories m WHERE m.profile = ` + a.add(q.sc.Profile) + ` AND m.rid = ANY(` + a.add(found) + `)`
	rows, err := q.tx.Query(ctx, sqlQ, a...)
	if err != nil {
		return fmt.Errorf("read phrase candidates: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var rid int64
		var f [numFields]string
		var occurred time.Time
		var ns int16
		var lens []int32
		if err := rows.Scan(&rid, &f[fieldContent], &f[fieldActor], &occurred, &ns, &f[fieldContext], &lens); err != nil {
			return fmt.Errorf("read phrase candidates: %w", err)
		}
		f[fieldTime] = timeWords(joinTime(occurred, ns))
		counts := phraseCounts(&q.tk, f, ph)
		matched := false
		for c := range numFields {
			if q.weights[c] == 0 {
				counts[c] = 0
			}
			matched = matched || counts[c] > 0
		}
		if !matched {
			continue
		}
		var c *candidate
		if create {
			c = cands.get(rid)
		} else if c = cands.lookup(rid); c == nil {
			continue
		}
		if len(lens) == numFields {
			c.content, c.context = float64(lens[fieldContent]), float64(lens[fieldContext])
		}
		c.tf[i] = counts
	}
	return rows.Err()
}

// matches reports whether c matches the query through terms: one of them
// at least, every one for an AND query.
func (q *lexQuery) matches(c *candidate, terms []int) bool {
	matched := 0
	for _, i := range terms {
		if c.tf[i] != ([numFields]float64{}) {
			matched++
		}
	}
	return matched > 0 && (!q.all || matched == len(terms))
}

// score returns c's BM25(F) over terms (the SQLite store's arithmetic,
// operation for operation), or ok false when it does not match.
func (q *lexQuery) score(c *candidate, terms []int) (float64, bool) {
	if !q.matches(c, terms) {
		return 0, false
	}
	score := 0.0
	if q.classic() {
		D := c.content
		for _, i := range terms {
			f := c.tf[i][fieldContent]
			score += q.idf[i] * ((f * (bm25K1 + 1.0)) / (f + bm25K1*(1-0.75+0.75*D/q.avgdl[fieldContent])))
		}
		return score, true
	}
	length := [numFields]float64{fieldContent: c.content, fieldContext: c.context}
	var norm [numFields]float64
	for f := range numFields {
		norm[f] = 1.0
		if q.weights[f] != 0 && fieldBs[f] != 0 && q.avgdl[f] > 0 {
			norm[f] = 1 - fieldBs[f] + fieldBs[f]*length[f]/q.avgdl[f]
		}
	}
	for _, i := range terms {
		tf := 0.0
		for f := range numFields {
			if q.weights[f] != 0 {
				tf += q.weights[f] * c.tf[i][f] / norm[f]
			}
		}
		score += q.idf[i] * (tf * (bm25K1 + 1.0)) / (tf + bm25K1)
	}
	return score, true
}

// rankedRare returns the best limit rows among those matching a term of
// rare, scored by the whole query: the common terms are read for the rows
// whose score on the rare terms may still place them.
func (q *lexQuery) rankedRare(ctx context.Context, limit int, rare []int) ([]mnemotype.Hit, error) {
	var common []int
	for i := range q.terms {
		if !slices.Contains(rare, i) {
			common = append(common, i)
		}
	}
	cands := newCandidates(len(q.terms))
	if err := q.read(ctx, cands, rare, nil, true); err != nil {
		return nil, err
	}
	order := make([]*candidate, 0, len(cands.all))
	for _, c := range cands.all {
		if v, ok := q.score(c, rare); ok {
			c.partial = v
			order = append(order, c)
		}
	}
	byScore := func(a, b *candidate, s func(*candidate) float64) int {
		if c := cmp.Compare(s(b), s(a)); c != 0 {
			return c
		}
		return cmp.Compare(a.rid, b.rid)
	}
	partialOf := func(c *candidate) float64 { return c.partial }
	byPartial := func(a, b *candidate) int { return byScore(a, b, partialOf) }
	bound := 0.0 // the most the common terms can add
	for _, i := range common {
		bound += q.idf[i] * (bm25K1 + 1)
	}
	done, sorted := 0, 0
	for n := min(len(order), max(4*limit, 64)); ; n = min(len(order), 4*n) {
		// order[:n+1] best first: the rows scored this round, and the
		// best of the rest, which bounds what is left.
		sorted = sortPrefix(order, sorted, n+1, byPartial)
		rids := make([]int64, 0, n-done)
		for _, c := range order[done:n] {
			rids = append(rids, c.rid)
		}
		if err := q.read(ctx, cands, common, rids, false); err != nil {
			return nil, err
		}
		every := append(slices.Clone(rare), common...)
		slices.Sort(every)
		for _, c := range order[done:n] {
			c.score, c.ok = q.score(c, every)
		}
		done = n
		if n == len(order) {
			break
		}
		top := slices.Clone(order[:n])
		slices.SortFunc(top, func(a, b *candidate) int { return byScore(a, b, func(c *candidate) float64 { return c.score }) })
		if len(top) >= limit && top[limit-1].score > order[n].partial+bound {
			break
		}
	}
	return q.hits(ctx, order[:done], limit)
}

// sortPrefix orders xs so that xs[:k] are its k first elements by cmp, in
// order, given that xs[:from] already are; it returns min(k, len(xs)).
// Only the new prefix is sorted: a selection finds it in the rest.
func sortPrefix[T any](xs []T, from, k int, cmp func(a, b T) int) int {
	k = min(k, len(xs))
	if k <= from {
		return from
	}
	rest := xs[from:]
	selectFirst(rest, k-from, cmp)
	slices.SortFunc(rest[:k-from], cmp)
	return k
}

// selectFirst moves the k first elements of xs by cmp (a total order) to
// xs[:k], in no order (quickselect).
func selectFirst[T any](xs []T, k int, cmp func(a, b T) int) {
	lo, hi := 0, len(xs)-1
	for lo < hi && k > lo && k <= hi {
		// The median of three as the pivot, moved to the end.
		mid := lo + (hi-lo)/2
		if cmp(xs[mid], xs[lo]) < 0 {
			xs[mid], xs[lo] = xs[lo], xs[mid]
		}
		if cmp(xs[hi], xs[lo]) < 0 {
			xs[hi], xs[lo] = xs[lo], xs[hi]
		}
		if cmp(xs[mid], xs[hi]) < 0 {
			xs[mid], xs[hi] = xs[hi], xs[mid]
		}
		pivot := xs[hi]
		i := lo
		for j := lo; j < hi; j++ {
			if cmp(xs[j], pivot) < 0 {
				xs[i], xs[j] = xs[j], xs[i]
				i++
			}
		}
		xs[i], xs[hi] = xs[hi], xs[i]
		switch {
		case i == k || i == k-1:
			return
		case i > k:
			hi = i - 1
		default:
			lo = i + 1
		}
	}
}

// hits sorts the scored candidates, best first (ties in insertion
// order), keeps limit (all when 0), and reads their ids.
func (q *lexQuery) hits(ctx context.Context, cs []*candidate, limit int) ([]mnemotype.Hit, error) {
	cs = slices.DeleteFunc(slices.Clone(cs), func(c *candidate) bool { return !c.ok })
	slices.SortFunc(cs, func(a, b *candidate) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.rid, b.rid)
	})
	if limit > 0 && len(cs) > limit {
		cs = cs[:limit]
	}
	if len(cs) == 0 {
		return nil, nil
	}
	rids := make([]int64, len(cs))
	for i, c := range cs {
		rids[i] = c.rid
	}
	rows, err := q.tx.Query(ctx, `SELECT rid, id FROM memories WHERE profile = $1 AND rid = ANY($2)`, q.sc.Profile, rids)
	if err != nil {
		return nil, fmt.Errorf("read ids: %w", err)
	}
	ids := map[int64]string{}
	for rows.Next() {
		var rid int64
		var id string
		if err := rows.Scan(&rid, &id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read ids: %w", err)
		}
		ids[rid] = id
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read ids: %w", err)
	}
	hits := make([]mnemotype.Hit, 0, len(cs))
	for _, c := range cs {
		hits = append(hits, mnemotype.Hit{ID: ids[c.rid], Score: c.score})
	}
	return hits, nil
}

// termCache remembers how many memories of a profile match a term that
// lex_terms cannot answer (a phrase, or some of the fields), with the
// profile's change number it is exact for.
type termCache struct {
	mu sync.Mutex
	m  map[termKey]termCount
}

type termKey struct {
	profile string
	mask    int64
	term    string
}

type termCount struct{ n, seq int64 }

// maxCachedTerms bounds the cache; past it, the cache starts afresh.
const maxCachedTerms = 100_000

func (c *termCache) get(profile string, seq, mask int64, term string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[termKey{profile, mask, term}]
	return e.n, ok && e.seq == seq
}

func (c *termCache) put(profile string, seq, mask int64, term string, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedTerms {
		c.m = map[termKey]termCount{}
	}
	c.m[termKey{profile, mask, term}] = termCount{n, seq}
}

// forget drops a deleted profile's counts.
func (c *termCache) forget(profile string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if k.profile == profile {
			delete(c.m, k)
		}
	}
}
