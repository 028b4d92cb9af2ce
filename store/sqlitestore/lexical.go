package sqlitestore

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mnemo-dev/mnemo/internal/ftstoken"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
)

// Lexical implements store.Store: BM25 over the profile's memories, with
// the profile's own statistics (see lexindex.go), negated so that higher
// is better. Ties are broken by insertion order.
//
// An OR query with a limit whose terms are partly common (in more than
// CommonTermRatio of the profile's memories) and partly rare scores only
// the rows that match a rare term, as Lucene's CommonTermsQuery does: the
// rows matching only common terms can hardly outrank a rare-term match,
// and scoring them was most of an OR query's cost. The scores are still
// those of the full OR query; when fewer than Limit rows match a rare
// term, the full query runs, so a row matching only common terms can
// still be returned.
//
// The whole call reads one snapshot of the database (a read transaction),
// so the statistics and document frequencies it ranks with are exact for
// the rows it ranks.
func (s *Store) Lexical(ctx context.Context, p store.LexicalParams) ([]mnemotype.Hit, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	terms := searchable(p.Match.Terms)
	if len(terms) == 0 || (p.Only != nil && len(p.Only) == 0) {
		return nil, nil
	}
	p.Match.Terms = terms
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("lexical search: %w", err)
	}
	defer tx.Rollback()
	q, ok, err := s.newLexQuery(ctx, cachedTx{tx, s.rc}, p.Scope)
	if err != nil || !ok {
		return nil, err
	}
	if err := q.setFields(p.Fields); err != nil {
		return nil, err
	}
	hits, err := q.run(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("lexical search: %w", err)
	}
	return hits, nil
}

// hasToken reports whether the tokenizer finds a token in t.
func hasToken(t string) bool {
	return len(ftstoken.Tokens(t)) > 0
}

// searchable drops the terms in which the tokenizer finds no token (FTS5
// would ignore them in an AND query and keep them as phrases that match
// nothing in an OR query) and the repeats.
func searchable(terms []string) []string {
	out := make([]string, 0, len(terms))
	for _, t := range terms {
		if hasToken(t) && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// lexQuery is one Lexical call: its snapshot, the profile's statistics
// and the scope as FTS5 filter phrases.
type lexQuery struct {
	s    *Store
	tx   queryer // a read transaction, through the statement cache
	prof profileStats
	// seq is the store's change sequence (the lengths BLOB's key).
	seq int64
	// turns is the number of context turns the index holds.
	turns int
	// scope is the FTS5 expression selecting the scope's rows ("" for the
	// whole table), made of nScope filter phrases.
	scope  string
	nScope int
	// profilePhrase is whether the profile's rows must be told from other
	// profiles' (it does not hold every indexed memory).
	profilePhrase bool
	// exclude lists the rowids of Scope.Exclude (a JSON array), "" for none.
	exclude string
	// within is the SQL condition (on memories_lex.rowid) of a time range
	// and a metadata filter, with its arguments; "" for none.
	within     string
	withinArgs []any
	sc         mnemotype.Scope
	// weights are the fields' weights (the content alone: 1, 0, 0, 0);
	// fields is the FTS5 column filter of those weighted.
	weights [ftsFields]float64
	fields  string
	// everyField is whether every field is weighted: the column filter
	// then only keeps the terms off the scope column (see match).
	everyField bool
}

// fieldBs are the fields' length normalisations: the content and the
// previous turns vary in length; a name and a date hardly do.
var fieldBs = [ftsFields]float64{ftsContent: 0.75, ftsActor: 0, ftsTime: 0, ftsContext: 0.75}

// setFields resolves the field weights of a query.
func (q *lexQuery) setFields(w store.FieldWeights) error {
	if w.IsZero() {
		w.Content = 1
	}
	q.weights = [ftsFields]float64{ftsContent: w.Content, ftsActor: w.Actor, ftsTime: w.Time, ftsContext: w.Context}
	var names []string
	for c, x := range q.weights {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return mnemotype.Invalidf("%s field weight = %v: must be a finite number ≥ 0", fieldNames[c], x)
		}
		if x > 0 {
			names = append(names, fieldNames[c])
		}
	}
	if len(names) == 0 {
		return mnemotype.Invalidf("field weights are all 0: no field to search")
	}
	q.fields = "{" + strings.Join(names, " ") + "}"
	q.everyField = len(names) == ftsFields
	return nil
}

// classic reports whether the query scores the content alone with weight
// 1: plain BM25, bm25()'s arithmetic.
func (q *lexQuery) classic() bool {
	return q.weights == [ftsFields]float64{ftsContent: 1}
}

// newLexQuery reads the profile's statistics and resolves the scope; ok is
// false when nothing can be in scope (an unknown profile, project or
// sessions).
func (s *Store) newLexQuery(ctx context.Context, tx queryer, sc mnemotype.Scope) (*lexQuery, bool, error) {
	q := &lexQuery{s: s, tx: tx, sc: sc}
	var total int64
	err := tx.QueryRowContext(ctx, `SELECT `+profileCols+`,
			(SELECT value FROM counters WHERE name = 'seq'), (SELECT coalesce(sum(docs), 0) FROM profiles),
			(SELECT max(0, value) FROM counters WHERE name = 'context_turns')
		FROM profiles WHERE name = ?`, sc.Profile).Scan(append(q.prof.dest(), &q.seq, &total, &q.turns)...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("lexical search: read profile: %w", err)
	}
	if q.prof.docs == 0 {
		return nil, false, nil
	}
	var parts []string
	if q.profilePhrase = q.prof.docs < total; q.profilePhrase {
		parts = append(parts, scopePhrases("p", []int64{q.prof.id}))
	}
	if sc.Project != "" {
		ids, err := s.nameIDs(ctx, tx, q.prof.id, fieldProject, []string{sc.Project})
		if err != nil || len(ids) == 0 {
			return nil, false, err
		}
		parts = append(parts, scopePhrases("j", ids))
	}
	if len(sc.Sessions) > 0 {
		ids, err := s.nameIDs(ctx, tx, q.prof.id, fieldSession, sc.Sessions)
		if err != nil || len(ids) == 0 {
			return nil, false, err
		}
		parts = append(parts, scopePhrases("s", ids))
	}
	if len(sc.Actors) > 0 {
		ids, err := s.nameIDs(ctx, tx, q.prof.id, fieldActor, sc.Actors)
		if err != nil || len(ids) == 0 {
			return nil, false, err
		}
		parts = append(parts, scopePhrases("a", ids))
	}
	if len(sc.Kinds) > 0 {
		var ks []int64
		for _, k := range sc.Kinds {
			if n, ok := kindNumbers[k]; ok && !slices.Contains(ks, int64(n)) {
				ks = append(ks, int64(n))
			}
		}
		if len(ks) == 0 {
			return nil, false, nil
		}
		parts = append(parts, scopePhrases("k", ks))
	}
	for _, part := range parts {
		q.nScope += strings.Count(part, `"`) / 2
	}
	q.scope = strings.Join(parts, " AND ")
	if !sc.After.IsZero() || !sc.Before.IsZero() {
		cond, args := timeRangeSQL("w", sc)
		q.within = ` AND +memories_lex.rowid IN (SELECT w.rid FROM memories w WHERE w.profile = ?` + cond + `)`
		q.withinArgs = append([]any{sc.Profile}, args...)
	}
	if len(sc.Metadata) > 0 {
		// Checked per matching row: a metadata filter has no index, and
		// the rows a query matches are fewer than the profile's.
		var conds []string
		for _, m := range sc.Metadata {
			c, args := metadataSQL("w", m)
			conds, q.withinArgs = append(conds, c), append(q.withinArgs, args...)
		}
		q.within += ` AND EXISTS (SELECT 1 FROM memories w WHERE w.rid = memories_lex.rowid AND ` + strings.Join(conds, " AND ") + `)`
	}
	if len(sc.Exclude) > 0 {
		rids, err := rowidsOf(ctx, tx, sc.Profile, sc.Exclude)
		if err != nil {
			return nil, false, fmt.Errorf("lexical search: %w", err)
		}
		if len(rids) > 0 {
			q.exclude = jsonList(rids)
		}
	}
	return q, true, nil
}

// scopePhrases is the FTS5 filter on the scope column for any of ids
// under prefix.
func scopePhrases(prefix string, ids []int64) string {
	ph := make([]string, len(ids))
	for i, id := range ids {
		ph[i] = `"` + prefix + strconv.FormatInt(id, 10) + `"`
	}
	if len(ph) == 1 {
		return "scope:" + ph[0]
	}
	return "scope:(" + strings.Join(ph, " OR ") + ")"
}

// nameIDs returns the numbers of the given project or session names of a
// profile that exist; the session "" (memories without one) is 0.
func (s *Store) nameIDs(ctx context.Context, q queryer, profile int64, field string, names []string) ([]int64, error) {
	var ids []int64
	var look []string
	for _, n := range names {
		if (field == fieldSession || field == fieldActor) && n == "" {
			ids = append(ids, 0)
		} else if n != "" {
			look = append(look, n)
		}
	}
	if len(look) == 0 {
		return ids, nil
	}
	rows, err := q.QueryContext(ctx, `SELECT id FROM scope_names WHERE profile_id = ? AND field = ? AND name IN (SELECT value FROM json_each(?))`,
		profile, field, jsonList(look))
	if err != nil {
		return nil, fmt.Errorf("lexical search: resolve %ss: %w", field, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("lexical search: resolve %ss: %w", field, err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// rowidsOf returns the rowids of the memories of profile with these ids
// (unknown ids are left out).
func rowidsOf(ctx context.Context, q queryer, profile string, ids []string) ([]int64, error) {
	rows, err := q.QueryContext(ctx, `SELECT rid FROM memories WHERE profile = ? AND id IN (SELECT value FROM json_each(?))`, profile, jsonList(ids))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var rid int64
		if err := rows.Scan(&rid); err != nil {
			return nil, err
		}
		out = append(out, rid)
	}
	return out, rows.Err()
}

// match renders the FTS5 query of terms (all: AND, else OR) inside the
// scope, restricted to the rows matching one of rare unless rare is nil,
// with the phrase counts of the ranking function: -1 (not scored) for the
// scope's and rare's filter phrases, each term's document frequency in the
// profile (df, in terms' order) for the others.
func (q *lexQuery) match(terms []string, all bool, rare []string, df map[string]int64) (string, []int64) {
	// A column filter makes FTS5 read each match's positions to check
	// their columns. With every field weighted it only keeps the terms off
	// the scope column, whose tokens a term can only meet by being one
	// (scopeToken); otherwise the terms match the same rows without it.
	filter := q.fields + ":"
	if q.everyField && !slices.ContainsFunc(terms, hasScopeToken) {
		filter = ""
	}
	var parts []string
	counts := make([]int64, 0, q.nScope+len(rare)+len(terms))
	if q.scope != "" {
		parts = append(parts, q.scope)
		counts = append(counts, slices.Repeat([]int64{-1}, q.nScope)...)
	}
	if rare != nil {
		parts = append(parts, filter+"("+MatchExpr(store.MatchQuery{Terms: rare})+")")
		counts = append(counts, slices.Repeat([]int64{-1}, len(rare))...)
	}
	parts = append(parts, filter+"("+MatchExpr(store.MatchQuery{Terms: terms, All: all})+")")
	for _, t := range terms {
		counts = append(counts, df[t])
	}
	return strings.Join(parts, " AND "), counts
}

// excludeSQL is the condition leaving out the excluded rows of an FTS5
// query, with its argument. The unary + keeps the rowid test out of FTS5's
// index: offered to FTS5, "rowid IN" runs the MATCH once per id.
func (q *lexQuery) excludeSQL() (string, []any) {
	sqlQ, args := q.within, slices.Clone(q.withinArgs)
	if q.exclude != "" {
		sqlQ += ` AND +memories_lex.rowid NOT IN (SELECT value FROM json_each(?))`
		args = append(args, q.exclude)
	}
	return sqlQ, args
}

// rankArgs are the ranking function's statistics, the fields' weights and
// their normalisations (fieldBs, which also lay out the lengths BLOB: see
// docLengths). The content alone with weight 1 is bm25()'s arithmetic.
func (q *lexQuery) rankArgs() (stats, weights, bs []byte) {
	stats = binary.LittleEndian.AppendUint64(nil, uint64(q.prof.docs))
	for _, n := range q.prof.tokens {
		stats = binary.LittleEndian.AppendUint64(stats, uint64(n))
	}
	for c := range ftsFields {
		weights = binary.LittleEndian.AppendUint64(weights, math.Float64bits(q.weights[c]))
		bs = binary.LittleEndian.AppendUint64(bs, math.Float64bits(fieldBs[c]))
	}
	return stats, weights, bs
}

func (q *lexQuery) run(ctx context.Context, p store.LexicalParams) ([]mnemotype.Hit, error) {
	terms := p.Match.Terms
	if p.Only != nil {
		df, err := q.docFreqs(ctx, terms)
		if err != nil {
			return nil, err
		}
		return q.scoreOnly(ctx, p, df)
	}
	if p.MinHits > 0 {
		// A term matching fewer than MinHits memories settles an AND query
		// without counting its matches.
		if p.Match.All && q.s.terms.fewerThan(q.prof, q.fields, terms, int64(p.MinHits)) {
			return nil, nil
		}
		n, err := q.countMatches(ctx, p.Match, p.MinHits)
		if err != nil || n < p.MinHits {
			return nil, err
		}
	}
	df, err := q.docFreqs(ctx, terms)
	if err != nil {
		return nil, err
	}
	if !p.Match.All && p.Limit > 0 && len(terms) > 1 && q.s.commonRatio > 0 {
		if rare := q.rareTerms(terms, df); len(rare) > 0 && len(rare) < len(terms) {
			hits, err := q.ranked(ctx, p, rare, df)
			if err != nil || len(hits) == p.Limit {
				return hits, err
			}
		}
	}
	return q.ranked(ctx, p, nil, df)
}

// countMatches counts the rows in scope that match m, up to limit.
func (q *lexQuery) countMatches(ctx context.Context, m store.MatchQuery, limit int) (int, error) {
	expr, _ := q.match(m.Terms, m.All, nil, nil)
	excl, args := q.excludeSQL()
	var n int
	err := q.tx.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM memories_lex WHERE memories_lex MATCH ?`+excl+` LIMIT ?)`,
		append(append([]any{expr}, args...), limit)...).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count matches: %w", err)
	}
	return n, nil
}

// rareTerms returns the terms of an OR query that occur in at most
// max(commonMin, commonRatio × the profile's memories) of them, rarest
// first while their matches add up to the rare-term budget (see
// DefaultRareTermBudget), in the query's order; the rarest always stays.
func (q *lexQuery) rareTerms(terms []string, df map[string]int64) []string {
	s := q.s
	th := max(int64(s.commonMin), int64(float64(q.prof.docs)*s.commonRatio))
	var out []string
	for _, t := range terms {
		if df[t] <= th {
			out = append(out, t)
		}
	}
	if s.rareBudget > 0 && len(out) > 1 {
		budget := max(int64(s.rareBudget), int64(float64(q.prof.docs)*RareTermBudgetRatio))
		byCount := slices.Clone(out)
		slices.SortStableFunc(byCount, func(a, b string) int { return cmp.Compare(df[a], df[b]) })
		sum := df[byCount[0]]
		for i := 1; i < len(byCount); i++ {
			if sum += df[byCount[i]]; sum > budget {
				dropped := byCount[i:]
				out = slices.DeleteFunc(out, func(t string) bool { return slices.Contains(dropped, t) })
				break
			}
		}
	}
	return out
}

// ranked runs the ranked query (restricted to rows matching one of rare,
// unless nil) and returns its best p.Limit rows (every row when 0).
func (q *lexQuery) ranked(ctx context.Context, p store.LexicalParams, rare []string, df map[string]int64) ([]mnemotype.Hit, error) {
	expr, counts := q.match(p.Match.Terms, p.Match.All, rare, df)
	if q.s.rankFn == "" {
		return q.rankedInGo(ctx, p, expr, df)
	}
	excl, exclArgs := q.excludeSQL()
	var lens any
	if l := q.s.lengths(q.seq); l != nil {
		lens = l
	}
	stats, weights, bs := q.rankArgs()
	inner := `SELECT rowid AS rid, ` + q.s.rankFn + `(memories_lex, ?, ?, ?, ?, ?) AS score FROM memories_lex
		WHERE memories_lex MATCH ?` + excl + ` ORDER BY score, rowid`
	args := []any{countsBlob(counts), lens, stats, weights, bs, expr}
	args = append(args, exclArgs...)
	if p.Limit > 0 {
		inner += ` LIMIT ?`
		args = append(args, p.Limit)
	}
	return q.hits(ctx, `SELECT m.id, r.score FROM (`+inner+`) r JOIN memories m ON m.rid = r.rid ORDER BY r.score, r.rid`, args)
}

// hits runs sqlQ, which selects (id, score: lower is better) in order, and
// returns the rows as hits (score negated).
func (q *lexQuery) hits(ctx context.Context, sqlQ string, args []any) ([]mnemotype.Hit, error) {
	rows, err := q.tx.QueryContext(ctx, sqlQ, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var hits []mnemotype.Hit
	for rows.Next() {
		var h mnemotype.Hit
		if err := rows.Scan(&h.ID, &h.Score); err != nil {
			return nil, err
		}
		h.Score = -h.Score
		hits = append(hits, h)
	}
	return hits, rows.Err()
}

// scoreOnly scores the memories of p.Only that are in scope and match,
// from their fields' text in Go (package ftstoken tokenizes as FTS5 does):
// the query's terms' whole lists of matches, which FTS5 would read to find
// them, are not read.
func (q *lexQuery) scoreOnly(ctx context.Context, p store.LexicalParams, df map[string]int64) ([]mnemotype.Hit, error) {
	cond, scopeArgs := scopeSQL("m", q.sc)
	return q.scoreRowsInGo(ctx, p, df, `m.id IN (SELECT value FROM json_each(?)) AND `+cond, append([]any{jsonList(p.Only)}, scopeArgs...))
}

// docFreqs returns how many of the profile's memories match each term,
// exact as of the profile's seq: from the cache, else counted (and
// cached).
func (q *lexQuery) docFreqs(ctx context.Context, terms []string) (map[string]int64, error) {
	df, missing := q.s.terms.get(q.prof, q.fields, terms)
	if len(missing) == 0 {
		return df, nil
	}
	cols := make([]string, len(missing))
	args := make([]any, len(missing))
	for i, t := range missing {
		cols[i] = `(SELECT count(*) FROM memories_lex WHERE memories_lex MATCH ?)`
		expr := q.fields + `:` + MatchExpr(store.MatchQuery{Terms: []string{t}})
		if q.profilePhrase {
			expr = scopePhrases("p", []int64{q.prof.id}) + " AND " + expr
		}
		args[i] = expr
	}
	got := make([]int64, len(missing))
	dst := make([]any, len(missing))
	for i := range got {
		dst[i] = &got[i]
	}
	if err := q.tx.QueryRowContext(ctx, `SELECT `+strings.Join(cols, ", "), args...).Scan(dst...); err != nil {
		return nil, fmt.Errorf("count term frequencies: %w", err)
	}
	for i, t := range missing {
		df[t] = got[i]
	}
	q.s.terms.put(q.prof, q.fields, missing, got)
	return df, nil
}

// countsBlob encodes counts for the ranking functions: one little-endian
// int64 each.
func countsBlob(counts []int64) []byte {
	blob := make([]byte, 8*len(counts))
	for i, n := range counts {
		binary.LittleEndian.PutUint64(blob[8*i:], uint64(n))
	}
	return blob
}

// termCache remembers how many memories of a profile match each term, and
// the profile's seq they are exact for: a write to the profile advances
// its seq, and the next query counts again; writes to other profiles
// leave the counts alone.
type termCache struct {
	mu sync.Mutex
	m  map[termKey]termCount
}

type termKey struct {
	profile      int64
	fields, term string
}

type termCount struct{ n, seq int64 }

// maxCachedTerms bounds the cache; past it, the cache starts afresh.
const maxCachedTerms = 100_000

// get returns the cached counts exact for p, and the terms without one.
func (c *termCache) get(p profileStats, fields string, terms []string) (map[string]int64, []string) {
	df := make(map[string]int64, len(terms))
	var missing []string
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range terms {
		if e, ok := c.m[termKey{p.id, fields, t}]; ok && e.seq == p.seq {
			df[t] = e.n
		} else {
			missing = append(missing, t)
		}
	}
	return df, missing
}

func (c *termCache) put(p profileStats, fields string, terms []string, counts []int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil || len(c.m)+len(terms) > maxCachedTerms {
		c.m = make(map[termKey]termCount)
	}
	for i, t := range terms {
		c.m[termKey{p.id, fields, t}] = termCount{counts[i], p.seq}
	}
}

// fewerThan reports whether a cached count exact for p proves that fewer
// than n memories match one of terms, and so all of them.
func (c *termCache) fewerThan(p profileStats, fields string, terms []string, n int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range terms {
		if e, ok := c.m[termKey{p.id, fields, t}]; ok && e.seq == p.seq && e.n < n {
			return true
		}
	}
	return false
}

// Neighbors implements store.Store through the index on (profile,
// session, session_seq).
func (s *Store) Neighbors(ctx context.Context, sc mnemotype.Scope, ids []string, radius int) ([]store.Neighbor, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if len(ids) == 0 || radius <= 0 {
		return nil, nil
	}
	cond, args := scopeSQL("n", sc)
	// Sorted here: SQLite's sort of these rows cost a quarter of the query.
	rows, err := s.rc.QueryContext(ctx, `SELECT n.id, h.id, abs(n.session_seq - h.session_seq), n.session_seq FROM memories h
		JOIN memories n ON n.profile = h.profile AND n.session = h.session
			AND n.session_seq BETWEEN h.session_seq - ? AND h.session_seq + ? AND n.rid <> h.rid
		WHERE h.profile = ? AND h.id IN (SELECT value FROM json_each(?)) AND h.session <> '' AND `+cond,
		append([]any{radius, radius, sc.Profile, jsonList(ids)}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("neighbours: %w", err)
	}
	defer rows.Close()
	return store.ReadNeighbors(rows)
}
