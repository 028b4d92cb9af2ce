package postgres_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store/sqlitestore"

	"github.com/mnemo-dev/mnemo/internal/pgtest"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/store/postgres"
	"github.com/mnemo-dev/mnemo/store/storetest"
)

// opener returns an OpenFunc handing out stores in fresh schemas of one
// throw-away cluster.
func opener(t *testing.T, opt postgres.Options) storetest.OpenFunc {
	c := pgtest.Start(t)
	dsn := c.DSN("postgres")
	var n atomic.Int64
	return func(t *testing.T) store.Store {
		t.Helper()
		o := opt
		o.Schema = fmt.Sprintf("t%d", n.Add(1))
		if o.MaxConns == 0 {
			o.MaxConns = 4
		}
		s, err := postgres.Open(t.Context(), dsn, o)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
}

func TestStore_Conformance(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t, opener(t, postgres.Options{}))
}

func TestStore_Context(t *testing.T) {
	storetest.ExerciseContext(t, opener(t, postgres.Options{ContextTurns: 1}))
}

// TestLexical_SameAsSQLite: the same memories, written to both stores in
// the same batches, rank the same under every kind of query — ids in the
// same order, scores equal to 1e-9 — so that quality measured on one store
// holds on the other.
func TestLexical_SameAsSQLite(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pg := opener(t, postgres.Options{})(t)
	lite, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "mnemo.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lite.Close() })
	actors := []string{"Caroline", "Melanie", ""}
	ms := storetest.GenerateMemories(7, "alice", 3000, 0)
	for i := range ms {
		ms[i].Actor = actors[i%len(actors)]
		ms[i].Seq = 0
	}
	for batch := range slices.Chunk(ms, 500) {
		for _, s := range []store.Store{pg, lite} {
			if err := s.Insert(ctx, slices.Clone(batch)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Edits and deletions move the statistics and the contexts.
	for _, s := range []store.Store{pg, lite} {
		if _, err := s.Update(ctx, store.UpdateParams{Profile: "alice", ID: ms[10].ID, Content: ptr("merge conflict in the rebase branch")}); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, "alice", ms[11].ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DeleteMatching(ctx, store.DeleteParams{Profile: "alice", Project: "hermes", Session: "session-4"}); err != nil {
			t.Fatal(err)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	nonEmpty := 0
	words := strings.Fields(ms[0].Content + " " + ms[1].Content + " " + ms[2].Content + " pull request caroline melanie monday january 2025")
	weights := []store.FieldWeights{{}, {Content: 1, Actor: 1, Time: 1, Context: 0.5}, {Content: 1, Actor: 1}, {Actor: 1}, {Content: 0.5, Time: 2}}
	scopes := []mnemotype.Scope{
		{Profile: "alice"},
		{Profile: "alice", Sessions: []string{"session-1"}},
		{Profile: "alice", Project: "zeus", Actors: []string{"Caroline"}},
		{Profile: "alice", Exclude: []string{ms[0].ID, ms[1].ID}},
		{Profile: "alice", Kinds: []mnemotype.Kind{mnemotype.KindSemantic}},
	}
	for i := range 300 {
		terms := make([]string, 1+r.IntN(5))
		for j := range terms {
			terms[j] = words[r.IntN(len(words))]
		}
		if i%7 == 0 {
			terms = append(terms, "pull request")
		}
		p := store.LexicalParams{
			Scope:  scopes[r.IntN(len(scopes))],
			Match:  store.MatchQuery{Terms: terms, All: r.IntN(4) == 0},
			Limit:  []int{0, 10, 50}[r.IntN(3)],
			Fields: weights[r.IntN(len(weights))],
		}
		if i%11 == 0 {
			p.Only = []string{ms[3].ID, ms[4].ID, ms[5].ID, ms[6].ID, ms[100].ID}
			p.Limit = 0
		}
		want, err := lite.Lexical(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pg.Lexical(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) > 0 {
			nonEmpty++
		}
		if !sameHits(got, want) {
			t.Errorf("query %d %+v:\npostgres %v\nsqlite   %v", i, p, got, want)
		}
	}
	if nonEmpty < 150 {
		t.Errorf("only %d of 300 queries found anything: the comparison proves little", nonEmpty)
	}
}

func sameHits(a, b []mnemotype.Hit) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ID != b[i].ID || math.Abs(a[i].Score-b[i].Score) > 1e-9*max(1, math.Abs(b[i].Score)) {
			return false
		}
	}
	return true
}

func ptr[T any](v T) *T { return &v }

// TestLead: one process at a time holds a task's lease; another task's is
// free; releasing it, or the holder's connection ending (a process that
// ends), frees it.
func TestLead(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t)
	ctx := t.Context()
	open := func() *postgres.Store {
		s, err := postgres.Open(ctx, c.DSN("postgres"), postgres.Options{Schema: "lead"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	a, b := open(), open()
	release, ok, err := a.Lead(ctx, "backfill")
	if err != nil || !ok {
		t.Fatalf("a.Lead = %v, %v; want the lease", ok, err)
	}
	if _, ok, err := b.Lead(ctx, "backfill"); err != nil || ok {
		t.Fatalf("b.Lead while a holds it = %v, %v; want refused", ok, err)
	}
	relOther, ok, err := b.Lead(ctx, "prune")
	if err != nil || !ok {
		t.Fatalf("b.Lead of another task = %v, %v; want the lease", ok, err)
	}
	relOther()
	release()
	if _, ok, err := b.Lead(ctx, "backfill"); err != nil || !ok {
		t.Fatalf("b.Lead after a released = %v, %v; want the lease", ok, err)
	}
	// b's lease is never released: its holder's session ends instead, as
	// when a server is killed.
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, ok, err := a.Lead(ctx, "backfill")
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the lease of a terminated session is still held")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
