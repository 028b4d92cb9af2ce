package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

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
// better; ties in insertion order). The GIN index on the tsvector finds
// the rows matching the query in the weighted fields; their positions of
// the query's tokens are read, and each row is scored in Go.
//
// An OR query with a limit whose terms are partly common scores only the
// rows matching a rare term first, as the SQLite store does (see there);
// the scores are the full query's.
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
		toks, ok := termTokens(&tk, t)
		if len(toks) == 0 {
			continue // no token: ignored, as FTS5 ignores it
		}
		if !ok {
			if q.all {
				return nil, nil // a token too long to index: matches nothing
			}
			continue
		}
		q.terms, q.phrases = append(q.terms, t), append(q.phrases, toks)
	}
	if len(q.terms) == 0 || (p.Only != nil && len(p.Only) == 0) {
		return nil, nil
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return nil, fmt.Errorf("lexical search: %w", err)
	}
	defer tx.Rollback(ctx)
	q.tx = tx
	err = tx.QueryRow(ctx, `SELECT seq, docs, content_tokens, actor_tokens, time_tokens, context_tokens FROM profiles WHERE name = $1`,
		p.Scope.Profile).Scan(&q.seq, &q.docs, &q.tokens[fieldContent], &q.tokens[fieldActor], &q.tokens[fieldTime], &q.tokens[fieldContext])
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
	// the profile's statistics
	seq, docs int64
	tokens    [numFields]int64
	weights   [numFields]float64
	// labels are the weighted fields' labels, "" when every field is.
	labels string
}

// setFields resolves the field weights of a query.
func (q *lexQuery) setFields(w store.FieldWeights) error {
	if w.IsZero() {
		w.Content = 1
	}
	q.weights = [numFields]float64{fieldContent: w.Content, fieldActor: w.Actor, fieldTime: w.Time, fieldContext: w.Context}
	var labels []byte
	for c, x := range q.weights {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return mnemotype.Invalidf("%s field weight = %v: must be a finite number ≥ 0", fieldNames[c], x)
		}
		if x > 0 {
			labels = append(labels, fieldLabels[c])
		}
	}
	if len(labels) == 0 {
		return mnemotype.Invalidf("field weights are all 0: no field to search")
	}
	if len(labels) < numFields {
		q.labels = string(labels)
	}
	return nil
}

// classic reports whether the query scores the content alone with weight
// 1: plain BM25.
func (q *lexQuery) classic() bool {
	return q.weights == [numFields]float64{fieldContent: 1}
}

func (q *lexQuery) run(ctx context.Context, p store.LexicalParams) ([]mnemotype.Hit, error) {
	if p.MinHits > 0 && p.Only == nil {
		n, err := q.countMatches(ctx, p.MinHits)
		if err != nil || n < p.MinHits {
			return nil, err
		}
	}
	df, err := q.docFreqs(ctx)
	if err != nil {
		return nil, err
	}
	if p.Only == nil && !q.all && p.Limit > 0 && len(q.terms) > 1 && q.s.commonRatio > 0 {
		if rare := q.rareTerms(df); len(rare) > 0 && len(rare) < len(q.terms) {
			hits, err := q.ranked(ctx, p, rare, df)
			if err != nil || len(hits) == p.Limit {
				return hits, err
			}
		}
	}
	return q.ranked(ctx, p, nil, df)
}

// match returns the tsquery of the query (restricted to the rows matching
// one of the terms rare, unless nil).
func (q *lexQuery) match(rare []int) string {
	if rare == nil {
		return tsquery(q.phrases, q.all, q.labels)
	}
	phrases := make([][]string, len(rare))
	for i, t := range rare {
		phrases[i] = q.phrases[t]
	}
	return tsquery(phrases, false, q.labels)
}

// countMatches counts the rows in scope that match the query, up to limit.
func (q *lexQuery) countMatches(ctx context.Context, limit int) (int, error) {
	var a args
	cond := scopeSQL(&a, "m", q.sc)
	var n int
	err := q.tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM memories m WHERE `+cond+` AND m.lex @@ `+a.add(q.match(nil))+
		`::tsquery LIMIT `+a.add(limit)+`) x`, a...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count matches: %w", err)
	}
	return n, nil
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
	var table []string
	var count []int
	for i, ph := range q.phrases {
		if n, ok := q.s.terms.get(q.sc.Profile, q.seq, q.labels, q.terms[i]); ok {
			df[i] = n
			continue
		}
		if len(ph) == 1 && (q.labels == "" || q.labels == "A") {
			table = append(table, ph[0])
		} else {
			count = append(count, i)
		}
	}
	if len(table) > 0 {
		col := "docs"
		if q.labels == "A" {
			col = "content_docs"
		}
		rows, err := q.tx.Query(ctx, `SELECT term, `+col+` FROM lex_terms WHERE profile = $1 AND term = ANY($2)`, q.sc.Profile, table)
		if err != nil {
			return nil, fmt.Errorf("read document frequencies: %w", err)
		}
		got := map[string]int64{}
		for rows.Next() {
			var t string
			var n int64
			if err := rows.Scan(&t, &n); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read document frequencies: %w", err)
			}
			got[t] = n
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read document frequencies: %w", err)
		}
		for i, ph := range q.phrases {
			if n, ok := got[ph[0]]; ok && len(ph) == 1 {
				df[i] = n
			}
		}
	}
	for _, i := range count {
		err := q.tx.QueryRow(ctx, `SELECT count(*) FROM memories WHERE profile = $1 AND lex @@ $2::tsquery`,
			q.sc.Profile, tsquery(q.phrases[i:i+1], false, q.labels)).Scan(&df[i])
		if err != nil {
			return nil, fmt.Errorf("count document frequencies: %w", err)
		}
		q.s.terms.put(q.sc.Profile, q.seq, q.labels, q.terms[i], df[i])
	}
	return df, nil
}

// ranked scores the rows in scope that match the query (and one of rare,
// unless nil), and returns the best p.Limit (every row when 0).
func (q *lexQuery) ranked(ctx context.Context, p store.LexicalParams, rare []int, df []int64) ([]mnemotype.Hit, error) {
	var a args
	cond := scopeSQL(&a, "m", q.sc)
	if p.Only != nil {
		cond += ` AND m.id = ANY(` + a.add(p.Only) + `)`
	}
	var toks []string
	for _, ph := range q.phrases {
		for _, t := range ph {
			if !slices.Contains(toks, t) {
				toks = append(toks, t)
			}
		}
	}
	rows, err := q.tx.Query(ctx, `SELECT m.rid, m.id, m.lens, u.lexeme, u.positions, u.weights
		FROM memories m CROSS JOIN LATERAL unnest(m.lex) u
		WHERE `+cond+` AND m.lex @@ `+a.add(q.match(rare))+`::tsquery AND u.lexeme = ANY(`+a.add(toks)+`)
		ORDER BY m.rid`, a...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	sc := q.newScorer(df)
	type scored struct {
		rid   int64
		id    string
		score float64
	}
	var out []scored
	var cur scored
	var curLens []int32
	flush := func() {
		if cur.id == "" {
			return
		}
		if v, ok := sc.score(curLens); ok {
			cur.score = v
			out = append(out, cur)
		}
		sc.reset()
	}
	for rows.Next() {
		var rid int64
		var id, lexeme string
		var lens []int32
		var positions []int16
		var weights []string
		if err := rows.Scan(&rid, &id, &lens, &lexeme, &positions, &weights); err != nil {
			return nil, err
		}
		if rid != cur.rid || cur.id == "" {
			flush()
			cur, curLens = scored{rid: rid, id: id}, lens
		}
		sc.add(lexeme, positions, weights)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	flush()
	slices.SortFunc(out, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.rid, b.rid)
	})
	if p.Limit > 0 && len(out) > p.Limit {
		out = out[:p.Limit]
	}
	hits := make([]mnemotype.Hit, len(out))
	for i, r := range out {
		hits[i] = mnemotype.Hit{ID: r.id, Score: r.score}
	}
	return hits, nil
}

// scorer scores one row at a time from the positions of the query's
// tokens in its fields: the SQLite store's arithmetic (bm25go.go there),
// higher is better.
type scorer struct {
	q     *lexQuery
	idf   []float64
	avgdl [numFields]float64
	// occ holds the current row's occurrences of each token.
	occ map[string][]occurrence
}

func (q *lexQuery) newScorer(df []int64) *scorer {
	sc := &scorer{q: q, idf: make([]float64, len(q.terms)), occ: map[string][]occurrence{}}
	for c, n := range q.tokens {
		sc.avgdl[c] = float64(n) / float64(q.docs)
	}
	for i, n := range df {
		idf := math.Log((float64(q.docs-n) + 0.5) / (float64(n) + 0.5))
		if idf <= 0 {
			idf = 1e-6
		}
		sc.idf[i] = idf
	}
	return sc
}

func (sc *scorer) reset() { clear(sc.occ) }

// add records a token's positions in the current row.
func (sc *scorer) add(lexeme string, positions []int16, weights []string) {
	os := sc.occ[lexeme][:0]
	for i, p := range positions {
		f := fieldContext // D, the default weight
		if i < len(weights) && len(weights[i]) == 1 {
			if k := strings.IndexByte("ABCD", weights[i][0]); k >= 0 {
				f = k
			}
		}
		os = append(os, occurrence{int(p), f})
	}
	sc.occ[lexeme] = os
}

// freq returns how often phrase ph occurs in each field of the current row.
func (sc *scorer) freq(ph []string) [numFields]float64 {
	var out [numFields]float64
	first := sc.occ[ph[0]]
	for _, o := range first {
		ok := true
		for j := 1; j < len(ph) && ok; j++ {
			ok = slices.Contains(sc.occ[ph[j]], occurrence{o.pos + j, o.field})
		}
		if ok {
			out[o.field]++
		}
	}
	return out
}

// score returns the current row's BM25(F), or ok false when it does not
// match the query in a weighted field.
func (sc *scorer) score(lens []int32) (float64, bool) {
	q := sc.q
	freq := make([][numFields]float64, len(q.phrases))
	matched, missing := 0, 0
	for i, ph := range q.phrases {
		freq[i] = sc.freq(ph)
		any := false
		for c := range numFields {
			if q.weights[c] == 0 {
				freq[i][c] = 0
			}
			any = any || freq[i][c] > 0
		}
		if any {
			matched++
		} else {
			missing++
		}
	}
	if matched == 0 || (q.all && missing > 0) {
		return 0, false
	}
	var length [numFields]float64
	for c := range numFields {
		if c < len(lens) {
			length[c] = float64(lens[c])
		}
	}
	score := 0.0
	if q.classic() {
		D := length[fieldContent]
		for i := range q.phrases {
			f := freq[i][fieldContent]
			score += sc.idf[i] * ((f * (bm25K1 + 1.0)) / (f + bm25K1*(1-0.75+0.75*D/sc.avgdl[fieldContent])))
		}
		return score, true
	}
	var norm [numFields]float64
	for c := range numFields {
		norm[c] = 1.0
		if q.weights[c] != 0 && fieldBs[c] != 0 && sc.avgdl[c] > 0 {
			norm[c] = 1 - fieldBs[c] + fieldBs[c]*length[c]/sc.avgdl[c]
		}
	}
	for i := range q.phrases {
		tf := 0.0
		for c := range numFields {
			if q.weights[c] != 0 {
				tf += q.weights[c] * freq[i][c] / norm[c]
			}
		}
		score += sc.idf[i] * (tf * (bm25K1 + 1.0)) / (tf + bm25K1)
	}
	return score, true
}

// termCache remembers how many memories of a profile match a term that
// lex_terms cannot answer (a phrase, or some of the fields), with the
// profile's change number it is exact for.
type termCache struct {
	mu sync.Mutex
	m  map[termKey]termCount
}

type termKey struct{ profile, labels, term string }

type termCount struct{ n, seq int64 }

// maxCachedTerms bounds the cache; past it, the cache starts afresh.
const maxCachedTerms = 100_000

func (c *termCache) get(profile string, seq int64, labels, term string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[termKey{profile, labels, term}]
	return e.n, ok && e.seq == seq
}

func (c *termCache) put(profile string, seq int64, labels, term string, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m) >= maxCachedTerms {
		c.m = map[termKey]termCount{}
	}
	c.m[termKey{profile, labels, term}] = termCount{n, seq}
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
