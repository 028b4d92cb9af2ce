package sqlitestore

import (
	"context"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/internal/sqlitedb"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/textindex"
)

// textIndexOf indexes a profile's memories in a textindex.Index with the
// fields the store indexes (the context as many turns back as the
// database holds), ordered by rowid; ids are the documents' memories.
func textIndexOf(t *testing.T, s *Store, profile string) (x *textindex.Index, ids []string, mems map[string]mnemotype.Memory) {
	t.Helper()
	ctx := context.Background()
	var turns int
	if err := s.r.QueryRow(`SELECT max(0, value) FROM counters WHERE name = 'context_turns'`).Scan(&turns); err != nil {
		t.Fatal(err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT m.rid, m.id, m.session, m.kind, m.project, `+fieldsSQL+` FROM memories m WHERE m.profile = ? ORDER BY m.rid`,
		turns, turns, profile)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	x, mems = textindex.New(), map[string]mnemotype.Memory{}
	for rows.Next() {
		var rid int64
		var m mnemotype.Memory
		var occurred string
		var f [textindex.NumFields]string
		if err := rows.Scan(&rid, &m.ID, &m.Session, &m.Kind, &m.Project, &f[textindex.Content], &f[textindex.Actor], &occurred, &f[textindex.Context]); err != nil {
			t.Fatal(err)
		}
		at, err := parseTime(occurred)
		if err != nil {
			t.Fatal(err)
		}
		f[textindex.Time] = timeWords(at)
		m.Profile = profile
		if d := x.Add(textindex.Doc{Fields: f, Order: rid}); int(d) != len(ids) {
			t.Fatalf("document %d, want %d", d, len(ids))
		}
		ids = append(ids, m.ID)
		mems[m.ID] = m
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return x, ids, mems
}

// TestTextIndex_RanksAsLexical: package textindex, given the fields the
// store indexes, ranks a profile's memories as Lexical does (every OR
// match scored) — the same ids in the same order, the same scores (to the
// bit when the store scores in Go; within 1e-12 relative of the C ranking
// function, whose logarithm is C's) — for every field weighting, AND and
// OR, scoped or not, with and without a limit.
func TestTextIndex_RanksAsLexical(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openScoringEveryMatch(t)
	rng := rand.New(rand.NewPCG(11, 12))
	alice := profileCorpus(rng, "alice", 0, 400)
	for i := range alice {
		alice[i].Actor = []string{"", "Caroline", "Melanie River"}[rng.IntN(3)]
		alice[i].OccurredAt = time.Date(2023, time.Month(1+rng.IntN(12)), 1+rng.IntN(28), 0, 0, 0, 0, time.UTC)
	}
	if err := s.Insert(ctx, alice); err != nil {
		t.Fatal(err)
	}
	if err := s.Insert(ctx, profileCorpus(rng, "bob", 4, 100)); err != nil {
		t.Fatal(err)
	}
	x, ids, mems := textIndexOf(t, s, "alice")
	weightings := []store.FieldWeights{{}, {Content: 1, Actor: 1, Time: 1, Context: 0.5}, {Content: 0.5, Context: 1}, {Actor: 2, Time: 0.25}}
	scopes := []mnemotype.Scope{{Profile: "alice"}, {Profile: "alice", Sessions: []string{"s1"}}, {Profile: "alice", Project: "zeus", Kinds: []mnemotype.Kind{mnemotype.KindSemantic}}}
	compared := 0
	for _, m := range lexicalQueries(rng, 80) {
		m.Terms = append(m.Terms, []string{"caroline", "may", "2023", "monday"}[rng.IntN(4)])
		terms := searchable(m.Terms)
		var toks []string
		phrase := false
		for _, term := range terms {
			tok, ok := textindex.Token(term)
			phrase = phrase || !ok
			toks = append(toks, tok)
		}
		if phrase {
			continue // "e-mail": a phrase, which the index leaves to the store
		}
		for _, w := range weightings {
			for _, sc := range scopes {
				for _, limit := range []int{0, 10} {
					p := store.LexicalParams{Scope: sc, Match: store.MatchQuery{Terms: terms, All: m.All}, Limit: limit, Fields: w}
					want, err := s.Lexical(ctx, p)
					if err != nil {
						t.Fatal(err)
					}
					ww := w
					if ww.IsZero() {
						ww.Content = 1
					}
					q := textindex.Query{Tokens: toks, All: m.All, K: limit, Weights: [textindex.NumFields]float64{ww.Content, ww.Actor, ww.Time, ww.Context}}
					var f textindex.Filter
					if len(sc.Sessions) > 0 || sc.Project != "" {
						f.Accept = func(d uint32) bool { return inScope(mems[ids[d]], sc) }
						for d := range ids {
							if f.Accept(uint32(d)) {
								f.Docs = append(f.Docs, uint32(d))
							}
						}
					}
					var got []mnemotype.Hit
					for _, h := range x.Search(q, f) {
						got = append(got, mnemotype.Hit{ID: ids[h.Doc], Score: h.Score})
					}
					if !sameHits(got, want, sqlitedb.RankFunction == "") {
						t.Fatalf("%q all=%v fields %+v scope %+v limit %d:\n got %v\nwant %v", terms, m.All, w, sc, limit, got, want)
					}
					if n := x.Count(q, f, 0); n != len(want) && limit == 0 {
						t.Fatalf("Count = %d, want %d", n, len(want))
					}
					compared++
				}
			}
		}
	}
	if compared < 500 {
		t.Fatalf("only %d comparisons", compared)
	}
}

// TestChanges_AfterContextTurnsChange: reopening a database with another
// number of context turns re-indexes every memory, and the change feed
// lists each again with its new context.
func TestChanges_AfterContextTurnsChange(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	s, err := Open(ctx, path, Options{ContextTurns: 1})
	if err != nil {
		t.Fatal(err)
	}
	var mems []mnemotype.Memory
	for i, c := range []string{"one", "two", "three"} {
		mems = append(mems, mnemotype.Memory{ID: c, Profile: "alice", Content: c, Session: "s", Kind: mnemotype.KindEpisodic,
			CreatedAt: time.Date(2024, 1, 1, 0, i, 0, 0, time.UTC)})
	}
	if err := s.Insert(ctx, mems); err != nil {
		t.Fatal(err)
	}
	seq, err := s.Sequence(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(ctx, path, Options{ContextTurns: 2}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cs, err := s.Changes(ctx, store.ChangesParams{Profile: "alice", Since: seq, Text: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for i, m := range cs.Upserts {
		got[m.ID] = cs.Texts[i].Context
	}
	if want := map[string]string{"one": "", "two": "one", "three": "one\ntwo"}; !maps.Equal(got, want) {
		t.Errorf("the feed after the rebuild: %v, want %v", got, want)
	}
}
