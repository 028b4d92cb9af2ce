package sqlitestore

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
)

// dfCache remembers how many memories match each query term, and how many
// memories there are, for the common-term test of OR queries (Lexical).
// Counting on every query cost 0.3 ms for the terms and 0.4 ms for the
// total at 10k memories, against a 2 ms recall budget. The test only
// compares a count with a threshold of several percent of all memories, so
// a count stays valid while few memories changed since it was taken: each
// write advances the change sequence (counters.seq) by the memories it
// touched, and a count is reused while the sequence moved by at most 1% of
// all memories (16 at least). Writes by other processes advance the same
// sequence, so they are seen too. Ranking (Store.rank) needs counts exact
// as of the current sequence and takes them again after any write; it
// also caches how many memories each scope holds (Store.scopeShare).
type dfCache struct {
	mu       sync.Mutex
	totalSeq int64
	total    int64
	haveTot  bool
	terms    map[string]dfEntry
	scopes   map[string]dfEntry // memories per scope (limit unused)
}

// dfEntry is one term's count: n is exact when n ≤ limit, else the term
// matches more than limit memories.
type dfEntry struct {
	n, limit, seq int64
}

// maxCachedTerms bounds the cache; past it, the cache starts afresh.
const maxCachedTerms = 50_000

// maxCachedScopes bounds the scope counts likewise.
const maxCachedScopes = 10_000

func (c *dfCache) fresh(seq, at, total int64) bool {
	d := seq - at
	if d < 0 {
		d = -d
	}
	return d <= max(16, total/100)
}

// rareTerms returns the terms that occur in at most max(commonMin,
// commonRatio × all memories) memories. Each count stops one row past that
// threshold, so a common term costs no more than a rare one, unless the
// store ranks with cached counts and needs them exact anyway. (An fts5vocab
// table would need the porter-stemmed term and counts the whole doclist:
// no cheaper, measured.) The counting runs outside the cache's lock, so
// concurrent recalls do not wait on each other's counts (two may count the
// same term; both store the same figure).
func (s *Store) rareTerms(ctx context.Context, terms []string, seq int64) ([]string, error) {
	total, err := s.memoryTotal(ctx, seq)
	if err != nil {
		return nil, err
	}
	c := &s.df
	th := max(int64(s.commonMin), int64(float64(total)*s.commonRatio))
	known := make(map[string]dfEntry, len(terms))
	var missing []string
	c.mu.Lock()
	for _, t := range terms {
		e, ok := c.terms[t]
		if !ok || !c.fresh(seq, e.seq, total) || (e.n > e.limit && e.limit < th) {
			missing = append(missing, t)
		} else {
			known[t] = e
		}
	}
	c.mu.Unlock()
	if len(missing) > 0 {
		limit := th
		if s.rankFn != "" {
			limit = unbounded // the ranking needs the exact count anyway
		}
		counts, err := s.countTerms(ctx, missing, limit, seq)
		if err != nil {
			return nil, err
		}
		for i, t := range missing {
			known[t] = dfEntry{n: counts[i], limit: limit, seq: seq}
		}
	}
	var out []string
	for _, t := range terms {
		if e := known[t]; e.n <= th && e.n <= e.limit {
			out = append(out, t)
		}
	}
	if s.rareBudget > 0 && len(out) > 1 {
		// Rarest first while the matches fit the budget (see
		// DefaultRareTermBudget); the rarest term always stays.
		budget := max(int64(s.rareBudget), int64(float64(total)*RareTermBudgetRatio))
		byCount := slices.Clone(out)
		slices.SortStableFunc(byCount, func(a, b string) int { return cmp.Compare(known[a].n, known[b].n) })
		sum := known[byCount[0]].n
		for i := 1; i < len(byCount); i++ {
			if sum += known[byCount[i]].n; sum > budget {
				dropped := byCount[i:]
				out = slices.DeleteFunc(out, func(t string) bool { return slices.Contains(dropped, t) })
				break
			}
		}
	}
	return out, nil
}

// memoryTotal returns the number of memories (all profiles), cached as a
// term count is.
func (s *Store) memoryTotal(ctx context.Context, seq int64) (int64, error) {
	c := &s.df
	c.mu.Lock()
	total, ok := c.total, c.haveTot && c.fresh(seq, c.totalSeq, c.total)
	c.mu.Unlock()
	if ok {
		return total, nil
	}
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM memories`).Scan(&total); err != nil {
		return 0, fmt.Errorf("count memories: %w", err)
	}
	c.mu.Lock()
	c.total, c.totalSeq, c.haveTot = total, seq, true
	c.mu.Unlock()
	return total, nil
}

// scopeShare returns the fraction of all memories that are in scope
// (Exclude aside), from counts cached as a term count is.
func (s *Store) scopeShare(ctx context.Context, sc mnemotype.Scope, seq int64) (float64, error) {
	total, err := s.memoryTotal(ctx, seq)
	if err != nil || total == 0 {
		return 0, err
	}
	sc.Exclude = nil
	key := fmt.Sprintf("%q %q %q %q", sc.Profile, sc.Project, sc.Sessions, sc.Kinds)
	c := &s.df
	c.mu.Lock()
	e, ok := c.scopes[key]
	c.mu.Unlock()
	if !ok || !c.fresh(seq, e.seq, total) {
		cond, args := scopeSQL("m", sc)
		if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM memories m WHERE `+cond, args...).Scan(&e.n); err != nil {
			return 0, fmt.Errorf("count memories in scope: %w", err)
		}
		e.seq = seq
		c.mu.Lock()
		if c.scopes == nil || len(c.scopes) > maxCachedScopes {
			c.scopes = make(map[string]dfEntry)
		}
		c.scopes[key] = e
		c.mu.Unlock()
	}
	return min(1, float64(e.n)/float64(total)), nil
}

// fewerThan reports whether the cached counts prove that fewer than n
// memories match one of terms, and so every term: a count taken k changes
// ago may have grown by k since.
func (c *dfCache) fewerThan(terms []string, n int, seq int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range terms {
		if e, ok := c.terms[t]; ok && e.n <= e.limit && e.n+max(0, seq-e.seq) < int64(n) {
			return true
		}
	}
	return false
}

// unbounded is the limit of an exact count.
const unbounded = math.MaxInt64

// countTerms counts the memories matching each term, stopping at limit+1
// (not at all when limit is unbounded), and caches the counts as of seq.
func (s *Store) countTerms(ctx context.Context, terms []string, limit, seq int64) ([]int64, error) {
	stop := limit + 1
	if limit == unbounded {
		stop = -1 // SQLite: no limit
	}
	cols := make([]string, len(terms))
	args := make([]any, 0, 2*len(terms))
	for i, t := range terms {
		cols[i] = `(SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?))`
		args = append(args, MatchExpr(store.MatchQuery{Terms: []string{t}}), stop)
	}
	counts := make([]int64, len(terms))
	dst := make([]any, len(terms))
	for i := range counts {
		dst[i] = &counts[i]
	}
	if err := s.r.QueryRowContext(ctx, `SELECT `+strings.Join(cols, ", "), args...).Scan(dst...); err != nil {
		return nil, fmt.Errorf("count term frequencies: %w", err)
	}
	c := &s.df
	c.mu.Lock()
	if c.terms == nil || len(c.terms) > maxCachedTerms {
		c.terms = make(map[string]dfEntry)
	}
	for i, t := range terms {
		c.terms[t] = dfEntry{n: counts[i], limit: limit, seq: seq}
	}
	c.mu.Unlock()
	return counts, nil
}

// rankExpr ranks the rows of an FTS5 query: FTS5's bm25(), or the
// ranking function fed the terms' document frequencies.
type rankExpr struct {
	fn     string  // sqlitedb.RankFunction; "" for bm25()
	counts []int64 // matches per term, for fn
	lens   []byte  // rows' lengths for fn (docLengths); nil: fn looks them up
}

// ftsMatch is the FTS5 part of a lexical query: the ranking column (lower
// is better) and the WHERE condition, each with its arguments.
type ftsMatch struct {
	rank      string
	rankArgs  []any
	where     string
	whereArgs []any
}

// match returns the FTS5 part of a query of q, restricted to the rows that
// match one of rare unless rare is nil; every row scores as under q alone.
// With the ranking function the restriction is FTS5's own: ("rare" OR
// ...) AND (q), the leading phrases left out of the score; FTS5 then skips
// through the common terms' lists to the rare terms' rows instead of
// reading them whole (OR queries of LoCoMo questions with a rare-term
// restriction, ranked by bm25(), min of 3: 10k memories 0.95 ms as a rowid
// filter, 0.80 ms so; 100k 7.24 and 5.16 ms). bm25() would score the
// repeated phrases, so it keeps the filter: the unary + keeps that rowid
// test out of FTS5's index, as "rowid IN" offered to FTS5 runs the MATCH
// once per id (104 ms for 150 ids at 10k memories, against 2 ms as a
// filter on the OR scan).
func (r rankExpr) match(q store.MatchQuery, rare []string) ftsMatch {
	m := ftsMatch{rank: "bm25(memories_fts)", where: "memories_fts MATCH ?", whereArgs: []any{MatchExpr(q)}}
	if r.fn == "" {
		if rare != nil {
			m.where += ` AND +memories_fts.rowid IN (SELECT f.rowid FROM memories_fts f WHERE f.memories_fts MATCH ?)`
			m.whereArgs = append(m.whereArgs, MatchExpr(store.MatchQuery{Terms: rare}))
		}
		return m
	}
	counts := r.counts
	if rare != nil {
		m.whereArgs[0] = "(" + MatchExpr(store.MatchQuery{Terms: rare}) + ") AND (" + MatchExpr(q) + ")"
		counts = append(slices.Repeat([]int64{-1}, len(rare)), counts...)
	}
	blob := countsBlob(counts)
	m.rank, m.rankArgs = r.fn+"(memories_fts, ?)", []any{blob}
	if r.lens != nil {
		m.rank, m.rankArgs = r.fn+"(memories_fts, ?, ?)", []any{blob, r.lens}
	}
	return m
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

// rank returns the ranking for a query of terms: with a ranking function
// (sqlitedb.RankFunction), bm25()'s scores from the terms' document
// frequencies, exact as of seq, counted where the cache has none. bm25()
// counts them itself in every statement, reading each term's whole list
// of matches: at 100k memories that was 1.3 ms per statement, against a
// cached count's nothing. A write landing between the reading of seq and
// the query (by another recall's process or this one) can leave a count,
// or an updated row's length, one write behind for that query.
func (s *Store) rank(ctx context.Context, terms []string, seq int64) (rankExpr, error) {
	if s.rankFn == "" {
		return rankExpr{}, nil
	}
	counts := make([]int64, len(terms))
	var missing []string
	var at []int
	c := &s.df
	c.mu.Lock()
	for i, t := range terms {
		if e, ok := c.terms[t]; ok && e.seq == seq && e.limit == unbounded {
			counts[i] = e.n
		} else {
			missing, at = append(missing, t), append(at, i)
		}
	}
	c.mu.Unlock()
	if len(missing) > 0 {
		got, err := s.countTerms(ctx, missing, unbounded, seq)
		if err != nil {
			return rankExpr{}, err
		}
		for j, i := range at {
			counts[i] = got[j]
		}
	}
	return rankExpr{fn: s.rankFn, counts: counts, lens: s.lengths(seq)}, nil
}
