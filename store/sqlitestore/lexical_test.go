package sqlitestore

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/internal/sqlitedb"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
)

// lexicalVocabulary mixes stems, plurals, accents and words common in one
// profile and rare in another.
var lexicalVocabulary = strings.Fields(`river rivers running runs run café cafe résumé stone dune quartz basalt
	cedar ember fjord garnet heath zebra migration walrus e-mail near the a of`)

// profileCorpus returns n memories of profile whose words are drawn with
// frequencies skewed by the profile's own offset into the vocabulary, so
// that a word common in one profile is rare in another.
func profileCorpus(rng *rand.Rand, profile string, offset, n int) []mnemotype.Memory {
	at := time.Date(2024, 5, 8, 13, 56, 0, 0, time.UTC)
	ms := make([]mnemotype.Memory, n)
	for i := range ms {
		var words []string
		for range 1 + rng.IntN(10) {
			k := (offset + int(rng.ExpFloat64()*5)) % len(lexicalVocabulary)
			words = append(words, lexicalVocabulary[k])
		}
		ms[i] = mnemotype.Memory{ID: fmt.Sprintf("%s-%d-%d", profile, offset, i), Profile: profile, Content: strings.Join(words, " ") + ".",
			Kind: mnemotype.Kinds[rng.IntN(3)], Session: fmt.Sprintf("s%d", rng.IntN(4)), Project: []string{"", "apollo", "zeus"}[rng.IntN(3)],
			Importance: 0.5, CreatedAt: at.Add(time.Duration(i) * time.Second), AccessedAt: at}
		if rng.IntN(5) == 0 {
			ms[i].Session = ""
		}
	}
	return ms
}

// openScoringEveryMatch opens a new store that scores every match of an
// OR query (CommonTermRatio -1): the comparisons are with exact lists.
func openScoringEveryMatch(t *testing.T) *Store {
	t.Helper()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "mnemo.db"), Options{CommonTermRatio: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// reference scores queries as FTS5's own bm25() does over a table that
// holds one profile's memories alone, in insertion order.
type reference struct {
	t    *testing.T
	db   *sql.DB
	mems []mnemotype.Memory // by rowid - 1
}

func newReference(t *testing.T, mems []mnemotype.Memory) *reference {
	t.Helper()
	db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "reference.db"), sqlitedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE VIRTUAL TABLE ref USING fts5(content, tokenize='porter unicode61')`); err != nil {
		t.Fatal(err)
	}
	for i, m := range mems {
		if _, err := db.Exec(`INSERT INTO ref(rowid, content) VALUES (?, ?)`, i+1, m.Content); err != nil {
			t.Fatal(err)
		}
	}
	return &reference{t: t, db: db, mems: mems}
}

// rawMatchExpr is the FTS5 query of terms for a table that tokenizes
// them itself, as the reference's does: each term quoted as it is (quotes
// doubled, a NUL, which would cut the query, made a space).
func rawMatchExpr(terms []string, all bool) string {
	parts := make([]string, len(terms))
	for i, t := range terms {
		parts[i] = `"` + strings.ReplaceAll(strings.ReplaceAll(t, "\x00", " "), `"`, `""`) + `"`
	}
	if all {
		return strings.Join(parts, " ")
	}
	return strings.Join(parts, " OR ")
}

// lexical is what Store.Lexical must answer for p, ranked by bm25() over
// the profile alone: the rows in p's scope (and in p.Only when set), best
// first, ties in insertion order.
func (r *reference) lexical(p store.LexicalParams) []mnemotype.Hit {
	r.t.Helper()
	terms := searchable(p.Match.Terms)
	if len(terms) == 0 {
		return nil
	}
	rows, err := r.db.Query(`SELECT rowid, bm25(ref) FROM ref WHERE ref MATCH ? ORDER BY bm25(ref), rowid`,
		rawMatchExpr(terms, p.Match.All))
	if err != nil {
		r.t.Fatal(err)
	}
	defer rows.Close()
	var hits []mnemotype.Hit
	for rows.Next() {
		var rid int
		var score float64
		if err := rows.Scan(&rid, &score); err != nil {
			r.t.Fatal(err)
		}
		m := r.mems[rid-1]
		if !inScope(m, p.Scope) || (p.Only != nil && !slices.Contains(p.Only, m.ID)) {
			continue
		}
		hits = append(hits, mnemotype.Hit{ID: m.ID, Score: -score})
	}
	if p.Limit > 0 && len(hits) > p.Limit {
		hits = hits[:p.Limit]
	}
	return hits
}

func inScope(m mnemotype.Memory, sc mnemotype.Scope) bool {
	return m.Profile == sc.Profile && (sc.Project == "" || m.Project == sc.Project) &&
		(len(sc.Sessions) == 0 || slices.Contains(sc.Sessions, m.Session)) &&
		(len(sc.Kinds) == 0 || slices.Contains(sc.Kinds, m.Kind)) && !slices.Contains(sc.Exclude, m.ID)
}

// sameHits compares hit lists: ids and order exactly; scores to the bit
// when exact, else to 1e-12 relative (the pure-Go build computes BM25 in
// Go, whose logarithm may differ from C's in the last bit).
func sameHits(got, want []mnemotype.Hit, exact bool) bool {
	return slices.EqualFunc(got, want, func(a, b mnemotype.Hit) bool {
		if a.ID != b.ID {
			return false
		}
		if exact {
			return a.Score == b.Score
		}
		return math.Abs(a.Score-b.Score) <= 1e-12*math.Max(1, math.Abs(b.Score))
	})
}

// lexicalQueries draws n queries of 1-4 terms from the vocabulary, some
// with a term repeated or without a token.
func lexicalQueries(rng *rand.Rand, n int) []store.MatchQuery {
	qs := make([]store.MatchQuery, n)
	for i := range qs {
		var terms []string
		for range 1 + rng.IntN(4) {
			terms = append(terms, lexicalVocabulary[rng.IntN(len(lexicalVocabulary))])
		}
		switch rng.IntN(8) {
		case 0:
			terms = append(terms, terms[0]) // repeated
		case 1:
			terms = append(terms, "*") // no token
		}
		qs[i] = store.MatchQuery{Terms: terms, All: rng.IntN(3) == 0}
	}
	return qs
}

// TestStore_LexicalIsTheProfilesBM25: in a store shared by three profiles
// with different word frequencies, every lexical query of one profile
// (AND and OR, every scope, with and without a limit, scoring listed ids)
// returns what FTS5's bm25() returns over a table holding that profile's
// memories alone: the same ids, order and scores.
func TestStore_LexicalIsTheProfilesBM25(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	// Every OR match scored: the comparison is with the exact lists.
	s := openScoringEveryMatch(t)
	rng := rand.New(rand.NewPCG(1, 2))
	alice := profileCorpus(rng, "alice", 0, 300)
	for _, batch := range [][]mnemotype.Memory{alice[:100], profileCorpus(rng, "bob", 7, 400), alice[100:], profileCorpus(rng, "carol", 14, 200)} {
		if err := s.Insert(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	ref := newReference(t, alice)
	exact := s.rankFn != ""
	scopes := []mnemotype.Scope{
		{Profile: "alice"},
		{Profile: "alice", Sessions: []string{"s1", "s2"}},
		{Profile: "alice", Sessions: []string{""}},
		{Profile: "alice", Project: "apollo", Kinds: []mnemotype.Kind{mnemotype.KindSemantic, mnemotype.KindEpisodic}},
		{Profile: "alice", Exclude: []string{alice[0].ID, alice[5].ID, alice[17].ID, "bob-7-1"}},
	}
	var only []string
	for i := 0; i < len(alice); i += 9 {
		only = append(only, alice[i].ID)
	}
	only = append(only, "bob-7-3", "no-such-id")
	compared := 0
	for _, m := range lexicalQueries(rng, 60) {
		for _, sc := range scopes {
			for _, p := range []store.LexicalParams{
				{Scope: sc, Match: m},
				{Scope: sc, Match: m, Limit: 3},
				{Scope: sc, Match: m, Limit: 10},
				{Scope: sc, Match: m, Only: only},
			} {
				got, err := s.Lexical(ctx, p)
				if err != nil {
					t.Fatalf("%+v: %v", p, err)
				}
				want := ref.lexical(p)
				if !sameHits(got, want, exact) {
					t.Fatalf("%q all=%v scope %+v limit %d only %v:\n got %v\nwant %v", m.Terms, m.All, sc, p.Limit, p.Only != nil, got, want)
				}
				compared += len(want)
			}
		}
	}
	if compared < 1000 {
		t.Fatalf("only %d hits compared: the queries hardly match", compared)
	}
}

// TestStore_ProfileIsolation is the property that one tenant's scores do
// not depend on another's memories: any sequence of writes in other
// profiles (inserts of the same words, updates, deletes, new sessions and
// profiles) leaves every lexical query of alice bit-identical: ids, order
// and raw scores. A write to alice then changes her scores, so the
// comparison can fail.
func TestStore_ProfileIsolation(t *testing.T) {
	t.Parallel()
	for _, opt := range []Options{{}, {CommonTermRatio: 0.1, CommonTermMinDocs: 2, RareTermBudget: 5}} {
		t.Run(fmt.Sprintf("ratio=%v", opt.CommonTermRatio), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			path := filepath.Join(t.TempDir(), "mnemo.db")
			s, err := Open(ctx, path, opt)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			other := openPath(t, path) // another process writing the same file
			rng := rand.New(rand.NewPCG(3, 4))
			alice := profileCorpus(rng, "alice", 0, 250)
			if err := s.Insert(ctx, alice); err != nil {
				t.Fatal(err)
			}
			var params []store.LexicalParams
			for _, m := range lexicalQueries(rng, 40) {
				params = append(params,
					store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: m, Limit: 10},
					store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice", Sessions: []string{"s1", "s3"}}, Match: m, Limit: 5},
					store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: m, Limit: 10, MinHits: 4},
					store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: m, Only: []string{alice[1].ID, alice[2].ID, alice[30].ID}},
				)
			}
			run := func() [][]mnemotype.Hit {
				out := make([][]mnemotype.Hit, len(params))
				for i, p := range params {
					hits, err := s.Lexical(ctx, p)
					if err != nil {
						t.Fatal(err)
					}
					out[i] = hits
				}
				return out
			}
			base := run()
			var others []mnemotype.Memory
			for round := range 12 {
				w := s
				if round%2 == 1 {
					w = other
				}
				profile := []string{"bob", "carol", fmt.Sprintf("new-%d", round)}[rng.IntN(3)]
				batch := profileCorpus(rng, profile, rng.IntN(len(lexicalVocabulary)), 1+rng.IntN(60))
				for i := range batch {
					batch[i].ID = fmt.Sprintf("%s-r%d-%d", profile, round, i)
					if rng.IntN(2) == 0 {
						batch[i].Content += " zebra river river the " + alice[rng.IntN(len(alice))].Content
					}
				}
				if err := w.Insert(ctx, batch); err != nil {
					t.Fatal(err)
				}
				others = append(others, batch...)
				for range 3 {
					m := others[rng.IntN(len(others))]
					switch rng.IntN(3) {
					case 0:
						content := strings.Repeat("quartz cafe ", 1+rng.IntN(5))
						session := fmt.Sprintf("s%d", rng.IntN(9))
						if _, err := w.Update(ctx, store.UpdateParams{Profile: m.Profile, ID: m.ID, Content: &content, Session: &session}); err != nil && !isNotFound(err) {
							t.Fatal(err)
						}
					case 1:
						if err := w.Delete(ctx, m.Profile, m.ID); err != nil && !isNotFound(err) {
							t.Fatal(err)
						}
					case 2:
						imp := rng.Float64()
						if _, err := w.Update(ctx, store.UpdateParams{Profile: m.Profile, ID: m.ID, Importance: &imp}); err != nil && !isNotFound(err) {
							t.Fatal(err)
						}
					}
				}
				got := run()
				for i := range params {
					if !sameHits(got[i], base[i], true) {
						t.Fatalf("round %d: %+v changed after writes to other profiles:\n was %v\n now %v", round, params[i], base[i], got[i])
					}
				}
				checkProfileStats(t, s)
			}
			// A write to alice herself does move her scores.
			if err := s.Insert(ctx, profileCorpus(rng, "alice", 3, 40)); err != nil {
				t.Fatal(err)
			}
			got := run()
			changed := 0
			for i := range params {
				if !sameHits(got[i], base[i], true) {
					changed++
				}
			}
			if changed == 0 {
				t.Fatal("40 more memories of alice changed none of her results: the comparison is blind")
			}
		})
	}
}

func isNotFound(err error) bool { return errors.Is(err, mnemotype.ErrNotFound) }

// checkProfileStats recounts every profile's statistics from the index
// and compares them with what the store keeps.
func checkProfileStats(t *testing.T, s *Store) {
	t.Helper()
	rows, err := s.r.Query(`SELECT m.profile, d.sz FROM memories m JOIN memories_lex_docsize d ON d.id = m.rid`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]profileStats{}
	for rows.Next() {
		var p string
		var sz []byte
		if err := rows.Scan(&p, &sz); err != nil {
			t.Fatal(err)
		}
		w := want[p]
		w.docs++
		for c := range ftsFields {
			n, ok := sqlitedb.ColumnSize(sz, c)
			if !ok {
				t.Fatal("malformed size record")
			}
			w.tokens[c] += int64(n)
		}
		want[p] = w
	}
	rows.Close()
	rows, err = s.r.Query(`SELECT name, ` + profileCols + ` FROM profiles`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		var got profileStats
		if err := rows.Scan(append([]any{&p}, got.dest()...)...); err != nil {
			t.Fatal(err)
		}
		if w := want[p]; w.docs != got.docs || w.tokens != got.tokens {
			t.Errorf("profile %s keeps docs %d, tokens %v; the index holds %d, %v", p, got.docs, got.tokens, w.docs, w.tokens)
		}
		delete(want, p)
	}
	for p := range want {
		t.Errorf("profile %s has indexed memories but no statistics", p)
	}
}

// TestStore_LexicalWithLengths: ranking with the rows' lengths loaded
// gives the same hits and scores as looking them up, and a content update
// makes the loaded copy stale until a load as of the new sequence.
func TestStore_LexicalWithLengths(t *testing.T) {
	t.Parallel()
	if sqlitedb.RankFunction == "" {
		t.Skip("this build scores in Go: no lengths to load")
	}
	ctx := t.Context()
	s := openScoringEveryMatch(t)
	rng := rand.New(rand.NewPCG(5, 6))
	alice := profileCorpus(rng, "alice", 0, 300)
	if err := s.Insert(ctx, alice); err != nil {
		t.Fatal(err)
	}
	if err := s.Insert(ctx, profileCorpus(rng, "bob", 4, 100)); err != nil {
		t.Fatal(err)
	}
	queries := lexicalQueries(rng, 30)
	var all []string
	for _, m := range alice {
		all = append(all, m.ID)
	}
	loaded := func() []byte {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			seq, err := s.Sequence(ctx, "")
			if err != nil {
				t.Fatal(err)
			}
			if lens := s.lengths(seq); lens != nil {
				return lens
			}
			if time.Now().After(deadline) {
				t.Fatal("lengths not loaded within 10 s")
			}
			s.lensMu.Lock()
			s.lens.next = time.Time{} // no waiting between loads here
			s.lensMu.Unlock()
			time.Sleep(5 * time.Millisecond)
		}
	}
	check := func(step string) {
		t.Helper()
		ref := newReference(t, alice)
		for _, m := range queries {
			p := store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: m, Limit: 20}
			got, err := s.Lexical(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if want := ref.lexical(p); !sameHits(got, want, true) {
				t.Fatalf("%s: %q: %v, want %v", step, m.Terms, got, want)
			}
			// BM25F over every field, the context's length normalised too:
			// the ranking function's scores (lengths loaded or looked up)
			// are those scored in Go from the rows' text.
			p.Limit, p.Fields = 0, store.FieldWeights{Content: 1, Actor: 1, Time: 1, Context: 0.5}
			if got, err = s.Lexical(ctx, p); err != nil {
				t.Fatal(err)
			}
			p.Only = all
			inGo, err := s.Lexical(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			byID := func(h []mnemotype.Hit) []mnemotype.Hit {
				h = slices.Clone(h)
				slices.SortFunc(h, func(a, b mnemotype.Hit) int { return strings.Compare(a.ID, b.ID) })
				return h
			}
			if !sameHits(byID(got), byID(inGo), false) {
				t.Fatalf("%s: %q with fields: ranked %v, scored in Go %v", step, m.Terms, got, inGo)
			}
		}
	}
	loaded()
	check("loaded")
	long := strings.Repeat("river ", 40)
	if _, err := s.Update(ctx, store.UpdateParams{Profile: "alice", ID: alice[0].ID, Content: &long}); err != nil {
		t.Fatal(err)
	}
	alice[0].Content = long
	seq, err := s.Sequence(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if lens := s.lengths(seq); lens != nil {
		t.Fatal("lengths from before the update used after it")
	}
	check("after the update")
	lens := loaded()
	var rid int64
	if err := s.r.QueryRow(`SELECT rid FROM memories WHERE id = ?`, alice[0].ID).Scan(&rid); err != nil {
		t.Fatal(err)
	}
	at := 2 * rid * int64(len(normalisedFields())) // the content's is first
	if got := int(lens[at]) | int(lens[at+1])<<8; got != 40 {
		t.Errorf("reloaded length of the updated memory = %d, want 40", got)
	}
	check("reloaded")
}

// TestStore_OneShotLoadsNoLengths: a one-shot store ranks with lookups
// only (no background load of every row's lengths) and answers as a store
// that loads them.
func TestStore_OneShotLoadsNoLengths(t *testing.T) {
	t.Parallel()
	if sqlitedb.RankFunction == "" {
		t.Skip("this build scores in Go: no lengths to load")
	}
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(7, 8))
	alice := profileCorpus(rng, "alice", 0, 200)
	path := filepath.Join(t.TempDir(), "mnemo.db")
	s, err := Open(ctx, path, Options{CommonTermRatio: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Insert(ctx, alice); err != nil {
		t.Fatal(err)
	}
	one, err := Open(ctx, path, Options{CommonTermRatio: -1, OneShot: true})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	for i, m := range lexicalQueries(rng, 20) {
		p := store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: m, Limit: 10}
		want, err := s.Lexical(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := one.Lexical(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if !sameHits(got, want, true) {
			t.Fatalf("query %d %q: one-shot store %v, the other %v", i, m.Terms, got, want)
		}
	}
	one.bg.Wait()
	one.lensMu.Lock()
	defer one.lensMu.Unlock()
	if one.lens.blob != nil || one.lens.loading || !one.lens.next.IsZero() {
		t.Errorf("the one-shot store loaded the rows' lengths (%d bytes, loading %v, next %v)", len(one.lens.blob), one.lens.loading, one.lens.next)
	}
}

// TestLexQuery_RareTerms: an OR query's rare terms are those in at most
// max(commonMin, ratio × the profile's memories), kept rarest first while
// their matches fit max(budget, 10% of the profile's memories), in the
// query's order.
func TestLexQuery_RareTerms(t *testing.T) {
	t.Parallel()
	df := map[string]int64{"river": 30, "stone": 4, "zircon": 1, "absent": 0, "alpha": 2, "beta": 3, "gamma": 4}
	for _, tc := range []struct {
		docs   int64
		ratio  float64
		budget int
		terms  []string
		want   []string
	}{
		{60, 0.1, -1, []string{"river", "stone", "zircon", "absent"}, []string{"stone", "zircon", "absent"}},
		{600, 0.1, -1, []string{"river", "stone"}, []string{"river", "stone"}},      // a larger profile: river is rare
		{60, 0.1, 5, []string{"gamma", "alpha", "beta"}, []string{"alpha", "beta"}}, // budget 6: alpha 2 + beta 3 fit, + gamma 4 does not
		{60, 0.1, 1, []string{"zircon", "river"}, []string{"zircon"}},               // river is common
		{60, 0.1, 9, []string{"gamma", "alpha", "beta"}, []string{"gamma", "alpha", "beta"}},
		{60, 0.1, 1, []string{"gamma", "beta"}, []string{"beta"}}, // budget max(1, 6): beta 3 + gamma 4 > 6
	} {
		q := &lexQuery{s: &Store{commonRatio: tc.ratio, commonMin: 2, rareBudget: tc.budget}, prof: profileStats{docs: tc.docs}}
		if got := q.rareTerms(tc.terms, df); !slices.Equal(got, tc.want) {
			t.Errorf("%+v: rareTerms = %q, want %q", tc, got, tc.want)
		}
	}
}

// TestStore_MinHitsFromCachedCounts: an AND query's MinHits is settled
// from a cached count only while the count is exact for the profile: a
// write by another process to the profile makes it count again.
func TestStore_MinHitsFromCachedCounts(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	s := openPath(t, path)
	other := openPath(t, path)
	n := 0
	insert := func(st *Store, k int, content string) {
		t.Helper()
		var ms []mnemotype.Memory
		for range k {
			n++
			ms = append(ms, testMemory("p", fmt.Sprintf("m%d", n), content))
		}
		if err := st.Insert(ctx, ms); err != nil {
			t.Fatal(err)
		}
	}
	insert(s, 40, "filler")
	insert(s, 3, "quartz basalt")
	insert(s, 10, "basalt")
	and := func(min int) int {
		t.Helper()
		hits, err := s.Lexical(ctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "p"},
			Match: store.MatchQuery{Terms: []string{"quartz", "basalt"}, All: true}, Limit: 10, MinHits: min})
		if err != nil {
			t.Fatal(err)
		}
		return len(hits)
	}
	if got := and(3); got != 3 { // counts quartz (3) and basalt (13) on the way
		t.Errorf("MinHits 3: %d hits, want 3", got)
	}
	prof, _, err := readProfile(ctx, s.r, "p")
	if err != nil {
		t.Fatal(err)
	}
	if !s.terms.fewerThan(prof, "{content}", []string{"quartz", "basalt"}, 4) || s.terms.fewerThan(prof, "{content}", []string{"quartz", "basalt"}, 3) {
		t.Fatal("fewerThan does not follow the cached count of quartz (3)")
	}
	if got := and(4); got != 0 {
		t.Errorf("MinHits 4: %d hits, want none (3 match)", got)
	}
	insert(other, 2, "quartz basalt") // quartz now matches 5; the cached count says 3
	if got := and(4); got != 5 {
		t.Errorf("MinHits 4 after two more matches: %d hits, want 5 (the stale count must not settle it)", got)
	}
}

// TestOpen_MigratesAVersion5Database opens a copy of a database written by
// mnemo at schema version 5 (testdata/README.md): every memory reads back
// as it was imported — times to the nanosecond — with its embedding, the
// key and settings survive, the index holds each profile's statistics, and
// lexical queries rank as bm25() over each profile alone.
func TestOpen_MigratesAVersion5Database(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	src, err := os.ReadFile("testdata/v5.db")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "v5.db")
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, path, Options{CommonTermRatio: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if v, err := s.SchemaVersion(ctx); err != nil || v != len(migrations) {
		t.Fatalf("SchemaVersion = %d, %v; want %d", v, err, len(migrations))
	}
	f, err := os.Open("testdata/v5.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []mnemotype.Memory
	dec := json.NewDecoder(f)
	for dec.More() {
		var m mnemotype.Memory
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		if m.Kind == "" {
			m.Kind = mnemotype.KindEpisodic
		}
		want = append(want, m)
	}
	byProfile := map[string][]mnemotype.Memory{}
	for _, w := range want {
		got, err := s.Get(ctx, store.GetParams{Profile: w.Profile, IDs: []string{w.ID}, WithEmbedding: true})
		if err != nil || len(got) != 1 {
			t.Fatalf("Get(%s) = %v, %v", w.ID, got, err)
		}
		g := got[0]
		if g.Content != w.Content || g.Kind != w.Kind || g.Project != w.Project || g.Session != w.Session ||
			g.Importance != w.Importance || !g.CreatedAt.Equal(w.CreatedAt) || g.CreatedAt.Nanosecond() != 123456789 ||
			!jsonEqual(g.Metadata, w.Metadata) || len(g.Embedding) != 256 || g.EmbeddingModel == "" {
			t.Errorf("%s after migrating:\n got %+v\nwant %+v", w.ID, g, w)
		}
		byProfile[w.Profile] = append(byProfile[w.Profile], g)
	}
	if k, err := s.ListKeys(ctx, store.ListKeysParams{Profile: "alice"}); err != nil || len(k) != 1 || k[0].Role != store.RoleProfile {
		t.Errorf("alice's keys after migrating = %+v, %v", k, err)
	}
	if kv, err := s.Settings(ctx, "alice"); err != nil || kv["semantic_weight"] != "0.7" {
		t.Errorf("alice's settings after migrating = %v, %v", kv, err)
	}
	checkProfileStats(t, s)
	for profile, mems := range byProfile {
		ref := newReference(t, mems)
		for _, terms := range [][]string{{"walrus"}, {"jwt", "login"}, {"cafe", "running", "caroline"}, {"database", "staging"}} {
			for _, all := range []bool{false, true} {
				p := store.LexicalParams{Scope: mnemotype.Scope{Profile: profile}, Match: store.MatchQuery{Terms: terms, All: all}}
				got, err := s.Lexical(ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				if want := ref.lexical(p); !sameHits(got, want, s.rankFn != "") || (!all && len(want) == 0) {
					t.Errorf("%s %q all=%v: %v, want %v", profile, terms, all, got, want)
				}
			}
		}
	}
	cs, err := s.Changes(ctx, store.ChangesParams{Profile: "bob"})
	if err != nil || len(cs.Upserts) != 24 {
		t.Errorf("Changes(bob, 0) after migrating: %d upserts, %v; want 24", len(cs.Upserts), err)
	}
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return len(a) == 0 && len(b) == 0
	}
	return reflect.DeepEqual(x, y)
}

// TestStore_OnlyScoresAsRanked: scoring listed memories from their fields
// (Only) gives the scores the ranked query gives them — BM25F over
// content, actor, time and context included — so the two lists of one
// recall can be merged.
func TestStore_OnlyScoresAsRanked(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "mnemo.db"), Options{CommonTermRatio: -1, ContextTurns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	rng := rand.New(rand.NewPCG(21, 22))
	alice := profileCorpus(rng, "alice", 0, 300)
	actors := []string{"Caroline", "Melanie", "river", ""}
	for i := range alice {
		alice[i].Actor = actors[i%len(actors)]
		alice[i].OccurredAt = time.Date(2023, time.Month(1+i%12), 1+i%28, 10, 0, 0, 0, time.UTC)
	}
	if err := s.Insert(ctx, alice); err != nil {
		t.Fatal(err)
	}
	if err := s.Insert(ctx, profileCorpus(rng, "bob", 3, 100)); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range alice {
		ids = append(ids, m.ID)
	}
	compared := 0
	for _, w := range []store.FieldWeights{{}, {Content: 1, Actor: 1, Time: 1, Context: 0.5}, {Content: 0.5, Context: 2}} {
		for _, m := range lexicalQueries(rng, 40) {
			m.Terms = append(m.Terms, []string{"caroline", "may", "river", "2023"}[rng.IntN(4)])
			ranked, err := s.Lexical(ctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: m, Fields: w})
			if err != nil {
				t.Fatal(err)
			}
			only, err := s.Lexical(ctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: m, Fields: w, Only: ids})
			if err != nil {
				t.Fatal(err)
			}
			if !sameHits(only, ranked, false) {
				t.Fatalf("fields %+v, %q all=%v:\nranked %v\n  only %v", w, m.Terms, m.All, ranked, only)
			}
			compared += len(ranked)
		}
	}
	if compared < 500 {
		t.Fatalf("only %d hits compared", compared)
	}
}

// TestLexical_ScopeTokensAreNotWords: a query term shaped like a scope
// token ("p1", "s1") finds the memories that contain it as a word, never
// those whose scope column holds it, whichever fields are weighted (with
// every field weighted the query runs without a column filter unless a
// term has that shape).
func TestLexical_ScopeTokensAreNotWords(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTest(t)
	at := time.Date(2023, 5, 8, 0, 0, 0, 0, time.UTC)
	mem := func(id, content string) mnemotype.Memory {
		return mnemotype.Memory{ID: id, Profile: "alice", Session: "x", Actor: "Caroline", Project: "apollo", Kind: mnemotype.KindEpisodic,
			Content: content, Importance: 0.5, CreatedAt: at, AccessedAt: at, OccurredAt: at}
	}
	if err := s.Insert(ctx, []mnemotype.Memory{mem("w", "fill in form p2"), mem("n", "nothing to see"), mem("m", "more of nothing")}); err != nil {
		t.Fatal(err)
	}
	for _, fields := range []store.FieldWeights{{}, {Content: 1, Actor: 1, Time: 1, Context: 0.5}} {
		search := func(terms ...string) []string {
			t.Helper()
			hits, err := s.Lexical(ctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: store.MatchQuery{Terms: terms}, Fields: fields})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range hits {
				got = append(got, h.ID)
			}
			slices.Sort(got)
			return got
		}
		for _, prefix := range "pksaj" {
			for id := range 4 {
				tok := fmt.Sprintf("%c%d", prefix, id)
				var want []string
				if tok == "p2" {
					want = []string{"w"}
					if fields.Context > 0 {
						want = []string{"n", "w"} // n's context is w
					}
				}
				if got := search(tok); !slices.Equal(got, want) {
					t.Errorf("fields %+v, %q: %v, want %v", fields, tok, got, want)
				}
				if got := search(tok, "nothing"); !slices.Equal(got, append([]string{"m", "n"}, slices.DeleteFunc(want, func(id string) bool { return id == "n" })...)) {
					t.Errorf("fields %+v, %q nothing: %v", fields, tok, got)
				}
			}
		}
	}
}

func TestHasScopeToken(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{"p1": true, "S12": true, "k3": true, "a0": true, "j77": true, "x1": false, "p": false, "p1x": false,
		"form p1": true, "p-1": false, "1p": false, "walrus": false} {
		if got := hasScopeToken(in); got != want {
			t.Errorf("hasScopeToken(%q) = %v, want %v", in, got, want)
		}
	}
}
