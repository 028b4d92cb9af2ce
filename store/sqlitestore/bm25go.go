package sqlitestore

import (
	"cmp"
	"context"
	"math"
	"slices"

	"github.com/mnemo-dev/mnemo/internal/ftstoken"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
)

// BM25 in Go, for the build without the C ranking functions (the pure-Go
// driver): FTS5 finds the rows in scope that match, and each is scored
// from its text, tokenized as FTS5 tokenizes it (package ftstoken), with
// the arithmetic of sqlitedb's mnemo_bm25, operation for operation.

const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// goScorer scores texts against one query.
type goScorer struct {
	phrases [][]string // each term's tokens
	idf     []float64
	avgdl   float64
	all     bool
}

func newGoScorer(terms []string, counts []int64, docs, tokens int64, all bool) *goScorer {
	g := &goScorer{phrases: make([][]string, len(terms)), idf: make([]float64, len(terms)),
		avgdl: float64(tokens) / float64(docs), all: all}
	for i, t := range terms {
		g.phrases[i] = ftstoken.Tokens(t)
		idf := math.Log((float64(docs) - float64(counts[i]) + 0.5) / (float64(counts[i]) + 0.5))
		if idf <= 0 {
			idf = 1e-6
		}
		g.idf[i] = idf
	}
	return g
}

// score returns the text's BM25 (lower is better, as FTS5's), or ok false
// when the text does not match the query.
func (g *goScorer) score(text string) (float64, bool) {
	doc := ftstoken.Tokens(text)
	freq := make([]float64, len(g.phrases))
	matched, missing := 0, 0
	for i, ph := range g.phrases {
		if len(ph) == 0 {
			continue
		}
		for p := 0; p+len(ph) <= len(doc); p++ {
			if slices.Equal(doc[p:p+len(ph)], ph) {
				freq[i]++
			}
		}
		if freq[i] > 0 {
			matched++
		} else {
			missing++
		}
	}
	if matched == 0 || (g.all && missing > 0) {
		return 0, false
	}
	D := float64(len(doc))
	score := 0.0
	for i := range g.phrases {
		score += g.idf[i] * ((freq[i] * (bm25K1 + 1.0)) / (freq[i] + bm25K1*(1-bm25B+bm25B*D/g.avgdl)))
	}
	return -1.0 * score, true
}

// scoredRow is a row scored in Go.
type scoredRow struct {
	rid   int64
	id    string
	score float64 // lower is better
}

// rankedInGo is ranked for the pure-Go build: every row matching expr in
// scope is read and scored.
func (q *lexQuery) rankedInGo(ctx context.Context, p store.LexicalParams, expr string, df map[string]int64) ([]mnemotype.Hit, error) {
	excl, exclArgs := q.excludeSQL()
	rows, err := q.tx.QueryContext(ctx, `SELECT m.rid, m.id, m.content FROM memories m WHERE m.rid IN
		(SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?`+excl+`)`, append([]any{expr}, exclArgs...)...)
	if err != nil {
		return nil, err
	}
	counts := make([]int64, len(p.Match.Terms))
	for i, t := range p.Match.Terms {
		counts[i] = df[t]
	}
	return q.scoreRows(rows, newGoScorer(p.Match.Terms, counts, q.prof.docs, q.prof.tokens, p.Match.All), p.Limit)
}

// scoreOnlyInGo is scoreOnly for the pure-Go build.
func (q *lexQuery) scoreOnlyInGo(ctx context.Context, p store.LexicalParams, counts []int64, cond string, scopeArgs []any, only string) ([]mnemotype.Hit, error) {
	rows, err := q.tx.QueryContext(ctx, `SELECT m.rid, m.id, m.content FROM memories m
		WHERE m.id IN (SELECT value FROM json_each(?)) AND `+cond, append([]any{only}, scopeArgs...)...)
	if err != nil {
		return nil, err
	}
	return q.scoreRows(rows, newGoScorer(p.Match.Terms, counts, q.prof.docs, q.prof.tokens, p.Match.All), p.Limit)
}

// scoreRows scores rows of (rid, id, content), keeps those that match,
// best first (ties in rowid order), up to limit when limit > 0.
func (q *lexQuery) scoreRows(rows interface {
	Next() bool
	Scan(...any) error
	Err() error
	Close() error
}, g *goScorer, limit int) ([]mnemotype.Hit, error) {
	defer rows.Close()
	var scored []scoredRow
	for rows.Next() {
		var r scoredRow
		var content string
		if err := rows.Scan(&r.rid, &r.id, &content); err != nil {
			return nil, err
		}
		if sc, ok := g.score(content); ok {
			r.score = sc
			scored = append(scored, r)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(scored, func(a, b scoredRow) int {
		if c := cmp.Compare(a.score, b.score); c != 0 {
			return c
		}
		return cmp.Compare(a.rid, b.rid)
	})
	if limit > 0 && len(scored) > limit {
		scored = scored[:limit]
	}
	hits := make([]mnemotype.Hit, len(scored))
	for i, r := range scored {
		hits[i] = mnemotype.Hit{ID: r.id, Score: -r.score}
	}
	return hits, nil
}
