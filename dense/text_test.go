package dense_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/dense"
	"github.com/mnemo-dev/mnemo/internal/ftstoken"
	"github.com/mnemo-dev/mnemo/internal/pgtest"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/store/postgres"
	"github.com/mnemo-dev/mnemo/store/sqlitestore"
)

var lexWords = strings.Fields(`caroline melanie support group painting paint camping lake beach school pottery class dog horse museum
	book guitar concert friend summer may june 2023 wedding bracelet hike photo sunset bike e-mail pride parade`)

// conversation returns n turns of profile in a few sessions, with actors,
// times, projects and metadata.
func conversation(r *rand.Rand, profile string, from, n int) []mnemotype.Memory {
	out := make([]mnemotype.Memory, n)
	for i := range out {
		words := make([]string, 2+r.IntN(12))
		for j := range words {
			words[j] = lexWords[int(r.ExpFloat64()*6)%len(lexWords)]
		}
		at := time.Date(2023, time.Month(1+r.IntN(12)), 1+r.IntN(28), r.IntN(24), 0, 0, 0, time.UTC)
		out[i] = mnemotype.Memory{ID: fmt.Sprintf("%s-%04d", profile, from+i), Profile: profile, Content: strings.Join(words, " "),
			Actor: []string{"Caroline", "Melanie", ""}[r.IntN(3)], Session: fmt.Sprintf("s%d", r.IntN(5)),
			Project: []string{"", "apollo"}[r.IntN(2)], Kind: mnemotype.Kinds[r.IntN(3)], Importance: mnemotype.DefaultImportance,
			CreatedAt: at, OccurredAt: at, AccessedAt: at,
			Metadata:  json.RawMessage(fmt.Sprintf(`{"topic":%q}`, []string{"art", "travel"}[r.IntN(2)])),
			Embedding: []float32{float32(r.NormFloat64()), float32(r.NormFloat64()), 1}, EmbeddingModel: "m"}
	}
	return out
}

// TestCatalog_Lexical: a catalog keeping text answers lexical searches,
// neighbour lookups, signals (access statistics aside) and counts as the
// store does — the same memories in the same order, the same scores
// (within 1e-12: the store's C ranking function takes C's logarithm) —
// for every weighting and scope, Only and MinHits, after writes that
// change other memories' context, and restored from its snapshot.
func TestCatalog_Lexical(t *testing.T) {
	t.Parallel()
	st, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "mnemo.db"), sqlitestore.Options{CommonTermRatio: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	catalogLexical(t, st, false)
}

// TestCatalog_Lexical_Postgres runs the same on the Postgres store (its
// change feed, its ranking), keeping the text alone (Options.TextOnly, as
// beside the store's pgvector dense leg).
func TestCatalog_Lexical_Postgres(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t)
	st, err := postgres.Open(t.Context(), c.DSN("postgres"), postgres.Options{Schema: "lexical", CommonTermRatio: -1, NoVectors: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	catalogLexical(t, st, true)
}

// TestCatalog_TextOnlyHoldsNoFloats: a text-only catalog keeps no floats
// for its rows (its memories' embeddings are the store's to rank), where a
// catalog of the same dimension keeping embeddings holds them all.
func TestCatalog_TextOnlyHoldsNoFloats(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := openStore(t)
	const n, dim = 500, 3 // conversation's embeddings
	if err := st.Insert(ctx, conversation(rand.New(rand.NewPCG(3, 4)), "alice", 0, n)); err != nil {
		t.Fatal(err)
	}
	var bytes [2]int64
	for i, textOnly := range []bool{false, true} {
		c := dense.NewCatalog(st, dense.Options{Dim: dim, Text: true, TextOnly: textOnly})
		t.Cleanup(c.Close)
		stats, err := c.Profile(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if stats.Memories != n {
			t.Fatalf("text only %v: %d memories, want %d", textOnly, stats.Memories, n)
		}
		bytes[i] = stats.Bytes
	}
	if bytes[0]-bytes[1] < n*dim*4 {
		t.Errorf("text only: %d bytes, with the embeddings %d: the text-only index holds floats", bytes[1], bytes[0])
	}
}

func catalogLexical(t *testing.T, st store.Store, textOnly bool) {
	ctx := t.Context()
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(8, 9))
	if err := st.Insert(ctx, conversation(r, "alice", 0, 600)); err != nil {
		t.Fatal(err)
	}
	if err := st.Insert(ctx, conversation(r, "bob", 0, 200)); err != nil {
		t.Fatal(err)
	}
	opt := dense.Options{Text: true, TextOnly: textOnly, Dir: dir, SaveEvery: 50}
	c := dense.NewCatalog(st, opt)
	t.Cleanup(c.Close)
	if stats, err := c.Profile(ctx, "alice"); err != nil || (stats.Embedded > 0) == textOnly {
		t.Fatalf("text only %v: the index holds %d embeddings (%v)", textOnly, stats.Embedded, err)
	}
	scopes := []mnemotype.Scope{{Profile: "alice"}, {Profile: "alice", Sessions: []string{"s2"}}, {Profile: "alice", Sessions: []string{"s3", "s1"}},
		{Profile: "alice", Project: "apollo"},
		{Profile: "alice", Actors: []string{"Caroline"}, Kinds: []mnemotype.Kind{mnemotype.KindEpisodic}},
		{Profile: "alice", After: time.Date(2023, 6, 1, 0, 0, 0, 0, time.UTC), Exclude: []string{"alice-0001", "alice-0002"}},
		{Profile: "alice", Metadata: []mnemotype.MetadataMatch{{Key: "topic", Value: "art"}}}, {Profile: "nobody"}}
	weights := []store.FieldWeights{{}, {Content: 1, Actor: 1, Time: 1, Context: 0.5}, {Actor: 1, Context: 2}}
	// A one-shot catalog keeps the text of profiles with a snapshot alone
	// (alice's): the store answers for the others.
	unanswered := func(what string, sc mnemotype.Scope) bool {
		return strings.HasPrefix(what, "one-shot") && sc.Profile == "nobody"
	}
	eitherAll := map[bool]int{} // LexicalEither's answers compared, by all
	t.Cleanup(func() {
		if !t.Failed() && (eitherAll[true] < 3 || eitherAll[false] < 3) {
			t.Errorf("LexicalEither compared %d times with the AND list, %d with the OR list: want both", eitherAll[true], eitherAll[false])
		}
	})
	compare := func(what string, c *dense.Catalog) {
		t.Helper()
		compared := 0
		for range 60 {
			var terms []string
			for range 1 + r.IntN(4) {
				terms = append(terms, lexWords[r.IntN(len(lexWords))])
			}
			p := store.LexicalParams{Scope: scopes[r.IntN(len(scopes))], Match: store.MatchQuery{Terms: terms, All: r.IntN(4) == 0},
				Limit: []int{0, 10}[r.IntN(2)], Fields: weights[r.IntN(len(weights))]}
			switch r.IntN(5) {
			case 0:
				p.Only = []string{"alice-0003", "alice-0100", "alice-0200", "alice-0599", "bob-0001"}
				p.Limit = 0
			case 1:
				p.MinHits = 1 + r.IntN(40)
			case 2: // MinHits does not apply to listed ids
				p.Only = []string{"alice-0003", "alice-0100", "alice-0200", "alice-0599", "bob-0001"}
				p.Limit, p.MinHits = 0, 50
			}
			want, err := st.Lexical(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			got, ok, err := c.Lexical(ctx, p)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				if !slices.Contains(terms, "e-mail") && (len(p.Scope.Metadata) == 0 || p.Only != nil) && !unanswered(what, p.Scope) {
					t.Fatalf("%s: %+v not answered", what, p)
				}
				continue // a phrase, or a metadata filter on the whole scope: left to the store
			}
			same := func(got, want []mnemotype.Hit) bool {
				return slices.EqualFunc(got, want, func(a, b mnemotype.Hit) bool {
					return a.ID == b.ID && math.Abs(a.Score-b.Score) <= 1e-12*math.Max(1, math.Abs(b.Score))
				})
			}
			if !same(got, want) {
				t.Fatalf("%s: %+v:\n got %v\nwant %v", what, p, got, want)
			}
			compared++
			if p.MinHits == 0 || p.Only != nil {
				continue
			}
			// LexicalEither: the store's AND list when it holds MinHits,
			// else its OR list; at MinHits as drawn, and on either side
			// of the AND query's count.
			and, or, every := p, p, p
			and.Match.All, or.Match.All, or.MinHits = true, false, 0
			every.Match.All, every.MinHits, every.Limit = true, 0, 0
			matches, err := st.Lexical(ctx, every)
			if err != nil {
				t.Fatal(err)
			}
			for _, min := range []int{p.MinHits, len(matches), len(matches) + 1} {
				if min <= 0 {
					continue
				}
				and.MinHits = min
				wantEither, err := st.Lexical(ctx, and)
				if err != nil {
					t.Fatal(err)
				}
				wantAll := len(wantEither) > 0
				if !wantAll {
					if wantEither, err = st.Lexical(ctx, or); err != nil {
						t.Fatal(err)
					}
				}
				gotEither, all, ok, err := c.LexicalEither(ctx, and)
				if err != nil || !ok {
					t.Fatalf("%s: LexicalEither(%+v) not answered (%v) where Lexical was", what, and, err)
				}
				if all != wantAll || !same(gotEither, wantEither) {
					t.Fatalf("%s: LexicalEither(%+v):\n got %v (all %v)\nwant %v (all %v)", what, and, gotEither, all, wantEither, wantAll)
				}
				eitherAll[all]++
			}
		}
		if compared < 30 {
			t.Fatalf("%s: %d compared", what, compared)
		}
		for _, profile := range []string{"alice", "bob", "nobody"} {
			want, err := st.Count(ctx, profile)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := c.Count(ctx, profile); err != nil || got != want {
				t.Fatalf("%s: Count(%s) = %d, %v; want %d", what, profile, got, err, want)
			}
		}
		ids := []string{"nobody", "bob-0001", "alice-new", "alice-0010", "alice-0020", "alice-0599", "alice-0650"}
		wantSig, err := st.Signals(ctx, "alice", ids)
		if err != nil {
			t.Fatal(err)
		}
		gotSig, ok, err := c.Signals(ctx, "alice", ids)
		if err != nil || !ok || len(gotSig) != len(wantSig) {
			t.Fatalf("%s: Signals = %v, %v, %v; want %v", what, gotSig, ok, err, wantSig)
		}
		for id, w := range wantSig {
			if g := gotSig[id]; !g.OccurredAt.Equal(w.OccurredAt) || g.Importance != w.Importance {
				t.Fatalf("%s: Signals[%s] = %+v, want %+v (access statistics aside)", what, id, g, w)
			}
		}
		for range 40 {
			sc := scopes[r.IntN(len(scopes))]
			ids := []string{"nobody", "bob-0001", "alice-new", "alice-0010"}
			for range 1 + r.IntN(30) {
				ids = append(ids, fmt.Sprintf("alice-%04d", r.IntN(700)))
			}
			radius := r.IntN(4)
			want, err := st.Neighbors(ctx, sc, ids, radius)
			if err != nil {
				t.Fatal(err)
			}
			got, ok, err := c.Neighbors(ctx, sc, ids, radius)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				if len(sc.Metadata) == 0 && !unanswered(what, sc) {
					t.Fatalf("%s: Neighbors in %+v not answered", what, sc)
				}
				continue
			}
			if !slices.Equal(got, want) {
				t.Fatalf("%s: Neighbors(%+v, %v, %d):\n got %v\nwant %v", what, sc, ids, radius, got, want)
			}
		}
	}
	compare("loaded", c)
	// Writes: a new turn before stored ones, a changed content, deletions.
	if err := st.Insert(ctx, []mnemotype.Memory{{ID: "alice-new", Profile: "alice", Content: "caroline went to the pottery museum",
		Session: "s2", Seq: 3, Kind: mnemotype.KindEpisodic, CreatedAt: time.Now(), AccessedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update(ctx, store.UpdateParams{Profile: "alice", ID: "alice-0010", Content: ptr("melanie painted a sunset by the lake")}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update(ctx, store.UpdateParams{Profile: "alice", ID: "alice-0011", Session: ptr("s4")}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Update(ctx, store.UpdateParams{Profile: "alice", ID: "alice-0599", Importance: ptr(0.9)}); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if err := st.Delete(ctx, "alice", fmt.Sprintf("alice-%04d", 20+i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Insert(ctx, conversation(r, "alice", 600, 100)); err != nil {
		t.Fatal(err)
	}
	compare("after writes", c)
	c.Close()
	c2 := dense.NewCatalog(st, opt)
	t.Cleanup(c2.Close)
	compare("restored", c2)
	// A one-shot catalog reads the snapshot's text lazily, answers alike,
	// and catches up with writes after the snapshot and after its load.
	if err := st.Insert(ctx, conversation(r, "alice", 700, 20)); err != nil {
		t.Fatal(err)
	}
	oneShot := dense.NewCatalog(st, dense.Options{TextOnly: textOnly, Dir: dir, NoBackground: true, SnapshotText: true})
	t.Cleanup(oneShot.Close)
	compare("one-shot", oneShot)
	for i := range 10 {
		if err := st.Delete(ctx, "alice", fmt.Sprintf("alice-%04d", 100+i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Insert(ctx, conversation(r, "alice", 720, 20)); err != nil {
		t.Fatal(err)
	}
	compare("one-shot after writes", oneShot)
	// Without text, the catalog does not answer.
	if _, ok, _ := dense.NewCatalog(st, dense.Options{}).Lexical(ctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"},
		Match: store.MatchQuery{Terms: []string{"caroline"}}}); ok {
		t.Error("a catalog without text answered")
	}
}

// seqCounting counts the store's sequence reads.
type seqCounting struct {
	*sqlitestore.Store
	reads int
}

func (s *seqCounting) Sequence(ctx context.Context, profile string) (int64, error) {
	s.reads++
	return s.Store.Sequence(ctx, profile)
}

// TestCatalog_Synced: after Synced, the calls of the same context read
// the store's sequence no more, and a call without it reads it (and sees
// the writes since).
func TestCatalog_Synced(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := &seqCounting{Store: openStore(t)}
	r := rand.New(rand.NewPCG(1, 1))
	if err := st.Insert(ctx, conversation(r, "alice", 0, 50)); err != nil {
		t.Fatal(err)
	}
	c := dense.NewCatalog(st, dense.Options{Text: true})
	t.Cleanup(c.Close)
	sctx, err := c.Synced(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	before := st.reads
	p := store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: store.MatchQuery{Terms: []string{"caroline"}}}
	if _, _, err := c.Lexical(sctx, p); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Neighbors(sctx, p.Scope, []string{"alice-0001"}, 1); err != nil {
		t.Fatal(err)
	}
	if st.reads != before {
		t.Errorf("%d sequence reads after Synced, want none", st.reads-before)
	}
	if err := st.Insert(ctx, []mnemotype.Memory{{ID: "late", Profile: "alice", Content: "caroline zzlate", Kind: mnemotype.KindEpisodic,
		CreatedAt: time.Now(), AccessedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	late := store.LexicalParams{Scope: p.Scope, Match: store.MatchQuery{Terms: []string{"zzlate"}}}
	if hits, _, _ := c.Lexical(ctx, late); len(hits) != 1 {
		t.Errorf("a new call missed the write: %v", hits)
	}
	if _, err := c.Synced(ctx, "bob"); err != nil { // another profile's note is no help
		t.Fatal(err)
	}
	n := st.reads
	if _, _, err := c.Lexical(sctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "bob"}, Match: p.Match}); err != nil {
		t.Fatal(err)
	}
	if st.reads != n+1 {
		t.Errorf("a call on another profile read the sequence %d times, want once", st.reads-n)
	}
}

// textless is a store whose change feed ignores ChangesParams.Text.
type textless struct{ *sqlitestore.Store }

func (s textless) Changes(ctx context.Context, p store.ChangesParams) (store.ChangeSet, error) {
	cs, err := s.Store.Changes(ctx, p)
	cs.Texts = nil
	return cs, err
}

// TestCatalog_TextlessStore: a catalog keeping text over a store whose
// feed carries no texts fails its calls with an error, and applies
// nothing of the page.
func TestCatalog_TextlessStore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	sq := openStore(t)
	if err := sq.Insert(ctx, conversation(rand.New(rand.NewPCG(1, 2)), "alice", 0, 10)); err != nil {
		t.Fatal(err)
	}
	c := dense.NewCatalog(textless{sq}, dense.Options{Text: true})
	t.Cleanup(c.Close)
	_, _, err := c.Lexical(ctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: store.MatchQuery{Terms: []string{"caroline"}}})
	if err == nil || !strings.Contains(err.Error(), "0 texts for 10 memories") {
		t.Errorf("Lexical over a feed without texts: %v", err)
	}
}

// TestCatalog_Holds: a catalog keeping text says which tokens each memory
// holds in its content or actor — what tokenizing them says, for
// memories of the profile, all false for one of another profile or
// forgotten — and cannot say (ok false) without a text index.
func TestCatalog_Holds(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := openStore(t)
	r := rand.New(rand.NewPCG(5, 6))
	mems := conversation(r, "alice", 0, 200)
	if err := st.Insert(ctx, append(mems, conversation(r, "bob", 0, 20)...)); err != nil {
		t.Fatal(err)
	}
	if err := st.Delete(ctx, "alice", mems[7].ID); err != nil {
		t.Fatal(err)
	}
	var tokens []string
	for _, w := range append(lexWords, "absent") {
		tokens = append(tokens, ftstoken.Tokens(w)...)
	}
	ids := []string{mems[0].ID, mems[7].ID, "bob-0003", "nobody"}
	for i := range 40 {
		ids = append(ids, mems[10+i].ID)
	}
	c := dense.NewCatalog(st, dense.Options{Text: true})
	t.Cleanup(c.Close)
	held, ok, err := c.Holds(ctx, "alice", ids, tokens)
	if err != nil || !ok || len(held) != len(ids) {
		t.Fatalf("Holds = %d rows, %v, %v", len(held), ok, err)
	}
	content := map[string]mnemotype.Memory{}
	for _, m := range mems {
		content[m.ID] = m
	}
	for i, id := range ids {
		m, ofAlice := content[id]
		has := map[string]bool{}
		if ofAlice && id != mems[7].ID {
			for _, tok := range ftstoken.Tokens(m.Content + " " + m.Actor) {
				has[tok] = true
			}
		}
		for j, tok := range tokens {
			if held[i][j] != has[tok] {
				t.Errorf("%s holds %q: %v, want %v (%q, %q)", id, tok, held[i][j], has[tok], m.Content, m.Actor)
			}
		}
	}
	none := dense.NewCatalog(st, dense.Options{})
	t.Cleanup(none.Close)
	if held, ok, err := none.Holds(ctx, "alice", ids, tokens); ok || err != nil || held != nil {
		t.Errorf("a catalog without text: Holds = %v, %v, %v; want it unable to say", held, ok, err)
	}
}
