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

// BM25 in Go: the build without the C ranking function (the pure-Go
// driver) ranks every row FTS5 finds in scope this way, and every build
// scores another leg's candidates (LexicalParams.Only) so, reading their
// fields instead of every term's whole list of matches. Each field is
// tokenized as FTS5 tokenizes it (package ftstoken), and the arithmetic is
// sqlitedb's mnemo_bm25's, operation for operation.

const bm25K1 = 1.2

// goScorer scores rows' fields against one query.
type goScorer struct {
	phrases [][]string // each term's tokens
	idf     []float64
	avgdl   [ftsFields]float64
	weights [ftsFields]float64
	classic bool
	all     bool
	// scratch, reused from row to row
	doc  docTokens
	freq [][ftsFields]float64
}

func (q *lexQuery) newGoScorer(terms []string, df map[string]int64, all bool) *goScorer {
	g := &goScorer{phrases: make([][]string, len(terms)), idf: make([]float64, len(terms)), weights: q.weights, classic: q.classic(), all: all}
	docs := q.prof.docs
	for c, n := range q.prof.tokens {
		g.avgdl[c] = float64(n) / float64(docs)
	}
	for i, t := range terms {
		g.phrases[i] = ftstoken.Tokens(t)
		n := df[t]
		idf := math.Log((float64(docs-n) + 0.5) / (float64(n) + 0.5))
		if idf <= 0 {
			idf = 1e-6
		}
		g.idf[i] = idf
	}
	return g
}

// docTokens holds one field's tokens in a reused arena: token i is
// arena[ends[i-1]:ends[i]].
type docTokens struct {
	tk    ftstoken.Tokenizer
	arena []byte
	ends  []int
}

func (d *docTokens) load(text string) {
	d.arena, d.ends = d.arena[:0], d.ends[:0]
	d.tk.Tokenize(text, func(tok []byte, _ int) {
		d.arena = append(d.arena, tok...)
		d.ends = append(d.ends, len(d.arena))
	})
}

func (d *docTokens) token(i int) []byte {
	start := 0
	if i > 0 {
		start = d.ends[i-1]
	}
	return d.arena[start:d.ends[i]]
}

// count returns how many times ph occurs at consecutive positions.
func (d *docTokens) count(ph []string) float64 {
	n := 0.0
	for p := 0; p+len(ph) <= len(d.ends); p++ {
		j := 0
		for j < len(ph) && string(d.token(p+j)) == ph[j] {
			j++
		}
		if j == len(ph) {
			n++
		}
	}
	return n
}

// score returns the BM25(F) of a row's fields (lower is better, as FTS5's),
// or ok false when the row does not match the query in a weighted field.
func (g *goScorer) score(fields [ftsFields]string) (float64, bool) {
	if len(g.freq) != len(g.phrases) {
		g.freq = make([][ftsFields]float64, len(g.phrases))
	}
	freq := g.freq
	var length [ftsFields]float64
	for c, text := range fields {
		for i := range freq {
			freq[i][c] = 0
		}
		if g.weights[c] == 0 {
			continue
		}
		g.doc.load(text)
		length[c] = float64(len(g.doc.ends))
		for i, ph := range g.phrases {
			if len(ph) > 0 {
				freq[i][c] = g.doc.count(ph)
			}
		}
	}
	matched, missing := 0, 0
	for i, ph := range g.phrases {
		if len(ph) == 0 {
			continue
		}
		any := false
		for c := range ftsFields {
			any = any || freq[i][c] > 0
		}
		if any {
			matched++
		} else {
			missing++
		}
	}
	if matched == 0 || (g.all && missing > 0) {
		return 0, false
	}
	score := 0.0
	if g.classic {
		D := length[ftsContent]
		for i := range g.phrases {
			f := freq[i][ftsContent]
			score += g.idf[i] * ((f * (bm25K1 + 1.0)) / (f + bm25K1*(1-0.75+0.75*D/g.avgdl[ftsContent])))
		}
		return -1.0 * score, true
	}
	var norm [ftsFields]float64
	for c := range ftsFields {
		norm[c] = 1.0
		if g.weights[c] != 0 && fieldBs[c] != 0 && g.avgdl[c] > 0 { // an empty field everywhere: no length to normalise
			norm[c] = 1 - fieldBs[c] + fieldBs[c]*length[c]/g.avgdl[c]
		}
	}
	for i := range g.phrases {
		tf := 0.0
		for c := range ftsFields {
			if g.weights[c] != 0 {
				tf += g.weights[c] * freq[i][c] / norm[c]
			}
		}
		score += g.idf[i] * (tf * (bm25K1 + 1.0)) / (tf + bm25K1)
	}
	return -1.0 * score, true
}

// rankedInGo is ranked for the pure-Go build: every row matching expr in
// scope is read and scored.
func (q *lexQuery) rankedInGo(ctx context.Context, p store.LexicalParams, expr string, df map[string]int64) ([]mnemotype.Hit, error) {
	excl, exclArgs := q.excludeSQL()
	return q.scoreRowsInGo(ctx, p, df, `m.rid IN (SELECT rowid FROM memories_lex WHERE memories_lex MATCH ?`+excl+`)`,
		append([]any{expr}, exclArgs...))
}

// fieldsSQL selects a memory m's fields as the index holds them: content,
// actor, occurred_at (rendered in Go) and the previous turns (?: the
// number of turns).
var fieldsSQL = `m.content, m.actor, m.occurred_at, ` + contextSQLOf("m")

// contextSQLOf selects a memory's context field as the index holds it
// (contextText): its previous turns (?: the number of turns, twice).
func contextSQLOf(m string) string {
	return `CASE WHEN ` + m + `.session = '' OR ? = 0 THEN '' ELSE coalesce((SELECT group_concat(c.content, char(10) ORDER BY c.session_seq, c.rid)
		FROM memories c WHERE c.profile = ` + m + `.profile AND c.session = ` + m + `.session
		AND c.session_seq >= ` + m + `.session_seq - ? AND c.session_seq < ` + m + `.session_seq), '') END`
}

// scoreRowsInGo scores the memories m matching the SQL condition where,
// keeps those that match the query, best first (ties in rowid order), up
// to p.Limit when it is > 0.
func (q *lexQuery) scoreRowsInGo(ctx context.Context, p store.LexicalParams, df map[string]int64, where string, args []any) ([]mnemotype.Hit, error) {
	turns := q.turns
	if q.weights[ftsContext] == 0 {
		turns = 0 // the context is not scored: not read
	}
	rows, err := q.tx.QueryContext(ctx, `SELECT m.rid, m.id, `+fieldsSQL+` FROM memories m WHERE `+where,
		append([]any{turns, turns}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	g := q.newGoScorer(p.Match.Terms, df, p.Match.All)
	type scored struct {
		rid   int64
		id    string
		score float64
	}
	var out []scored
	for rows.Next() {
		var r scored
		var f [ftsFields]string
		var occurred string
		if err := rows.Scan(&r.rid, &r.id, &f[ftsContent], &f[ftsActor], &occurred, &f[ftsContext]); err != nil {
			return nil, err
		}
		t, err := parseTime(occurred)
		if err != nil {
			return nil, err
		}
		f[ftsTime] = timeWords(t)
		if sc, ok := g.score(f); ok {
			r.score = sc
			out = append(out, r)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b scored) int {
		if c := cmp.Compare(a.score, b.score); c != 0 {
			return c
		}
		return cmp.Compare(a.rid, b.rid)
	})
	if p.Limit > 0 && len(out) > p.Limit {
		out = out[:p.Limit]
	}
	hits := make([]mnemotype.Hit, len(out))
	for i, r := range out {
		hits[i] = mnemotype.Hit{ID: r.id, Score: -r.score}
	}
	return hits, nil
}
