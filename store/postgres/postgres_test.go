package postgres_test

import (
	"context"
	"encoding/json"
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

// TestCopy_RoundTrip: SQLite → Postgres → SQLite loses nothing (every
// field of every memory, embeddings to the bit, settings, keys, a deleted
// profile's revoked key), and a copy run again after an interruption
// writes only what is missing.
func TestCopy_RoundTrip(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	openLite := func() store.Store {
		s, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "mnemo.db"), sqlitestore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	src, pg, back := openLite(), opener(t, postgres.Options{})(t), openLite()
	ms := append(storetest.GenerateMemories(3, "alice", 700, 16), storetest.GenerateMemories(4, "bob", 300, 16)...)
	for i := range ms {
		ms[i].Actor = []string{"", "Caroline"}[i%2]
		ms[i].OccurredAt = ms[i].CreatedAt.Add(-time.Duration(i) * time.Hour)
	}
	if err := src.Insert(ctx, ms); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(src.SetSettings(ctx, "alice", map[string]string{"keyword_weight": "1.5"}))
	must(src.SetSettings(ctx, "", map[string]string{"limit": "7"}))
	must(src.SetSettings(ctx, "dora", map[string]string{"semantic_weight": "0.2"})) // settings, no memories
	must(src.CreateKey(ctx, store.APIKey{ID: "k1", Profile: "alice", Name: "a", Hash: "h1", Prefix: "mn_1", CreatedAt: time.Unix(1, 0)}))
	must(src.CreateKey(ctx, store.APIKey{ID: "k2", Profile: "carol", Name: "c", Hash: "h2", Prefix: "mn_2", CreatedAt: time.Unix(2, 0)}))
	if _, err := src.DeleteProfile(ctx, "carol"); err != nil { // revokes k2, which then names no profile
		t.Fatal(err)
	}
	// An interrupted copy: bob's memories went over, not alice's.
	if _, err := store.Copy(ctx, pg, src, store.CopyParams{Profiles: []string{"bob"}, BatchSize: 64}); err != nil {
		t.Fatal(err)
	}
	st, err := store.Copy(ctx, pg, src, store.CopyParams{BatchSize: 64})
	if err != nil {
		t.Fatal(err)
	}
	if st.Memories != 700 || st.Skipped != 300 || st.Keys != 2 {
		t.Errorf("the copy run again: %+v; want 700 written, 300 skipped, 2 keys", st)
	}
	if _, err := store.Copy(ctx, back, pg, store.CopyParams{BatchSize: 100}); err != nil {
		t.Fatal(err)
	}
	for _, profile := range []string{"alice", "bob"} {
		want := listAll(t, src, profile)
		got := listAll(t, back, profile)
		if len(got) != len(want) {
			t.Fatalf("%s: %d memories back, want %d", profile, len(got), len(want))
		}
		for i := range want {
			if d := cmpMemory(got[i], want[i]); d != "" {
				t.Fatalf("%s: memory %s came back changed: %s", profile, want[i].ID, d)
			}
		}
	}
	for _, p := range []string{"alice", "", "dora"} {
		a, _ := src.Settings(ctx, p)
		b, _ := back.Settings(ctx, p)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("settings of %q: %v, want %v", p, b, a)
		}
	}
	keys, err := back.ListKeys(ctx, store.ListKeysParams{IncludeRevoked: true})
	if err != nil || len(keys) != 2 || keys[0].ID != "k1" || keys[0].Profile != "alice" || keys[1].RevokedAt.IsZero() {
		t.Errorf("keys back: %+v, %v", keys, err)
	}
	// The copy's index ranks as the original's.
	for _, q := range []string{"merge conflict", "laptop battery charger", "python"} {
		p := store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: store.MatchQuery{Terms: strings.Fields(q)}, Limit: 10,
			Fields: store.FieldWeights{Content: 1, Actor: 1, Time: 1, Context: 0.5}}
		want, _ := src.Lexical(ctx, p)
		got, err := pg.Lexical(ctx, p)
		if err != nil || !sameHits(got, want) {
			t.Errorf("%q on the copy: %v, %v; want %v", q, got, err, want)
		}
	}
}

func listAll(t *testing.T, s store.Store, profile string) []mnemotype.Memory {
	t.Helper()
	var out []mnemotype.Memory
	cursor := ""
	for {
		page, err := s.List(t.Context(), store.ListParams{Profile: profile, Limit: 500, Cursor: cursor, WithEmbedding: true})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Memories...)
		if cursor = page.NextCursor; cursor == "" {
			return out
		}
	}
}

// cmpMemory describes how got differs from want ("" when it does not).
func cmpMemory(got, want mnemotype.Memory) string {
	g, w := got, want
	g.Embedding, w.Embedding = nil, nil
	g.Metadata, w.Metadata = nil, nil
	if !g.CreatedAt.Equal(w.CreatedAt) || !g.OccurredAt.Equal(w.OccurredAt) || !g.AccessedAt.Equal(w.AccessedAt) {
		return fmt.Sprintf("times %v %v %v, want %v %v %v", g.CreatedAt, g.OccurredAt, g.AccessedAt, w.CreatedAt, w.OccurredAt, w.AccessedAt)
	}
	g.CreatedAt, g.OccurredAt, g.AccessedAt = w.CreatedAt, w.OccurredAt, w.AccessedAt
	if fmt.Sprintf("%+v", g) != fmt.Sprintf("%+v", w) {
		return fmt.Sprintf("%+v, want %+v", g, w)
	}
	if len(got.Embedding) != len(want.Embedding) {
		return "embedding length"
	}
	for i := range want.Embedding {
		if math.Float32bits(got.Embedding[i]) != math.Float32bits(want.Embedding[i]) {
			return "embedding bits"
		}
	}
	var a, b any
	_ = json.Unmarshal(got.Metadata, &a)
	_ = json.Unmarshal(want.Metadata, &b)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		return fmt.Sprintf("metadata %s, want %s", got.Metadata, want.Metadata)
	}
	return ""
}

// TestReplicas_ReadYourWrites: with a streaming replica, a recall's reads
// carrying a write's position see that write, every time (1,000 trials);
// reads do go to the replica (with its replay paused, a read without a
// token misses a new write), and a token the replica has not replayed in
// time is served by the primary.
func TestReplicas_ReadYourWrites(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	primary := pgtest.Start(t)
	replica := pgtest.StartReplica(t, primary)
	// Commits synchronous (the test clusters run without): a commit is sent
	// to the replica as it is acknowledged, not up to 200 ms later.
	s, err := postgres.Open(ctx, primary.DSN("postgres")+"&synchronous_commit=on", postgres.Options{Schema: "rep", Replicas: []string{replica.DSN("postgres")},
		ReplicaWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	t0 := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	write := func(i int, word string) (string, string) {
		t.Helper()
		id := fmt.Sprintf("m%04d", i)
		if err := s.Insert(ctx, []mnemotype.Memory{{ID: id, Profile: "alice", Kind: mnemotype.KindEpisodic, Content: "note " + word,
			Importance: 0.5, CreatedAt: t0.Add(time.Duration(i) * time.Second)}}); err != nil {
			t.Fatal(err)
		}
		pos, err := s.Position(ctx)
		if err != nil || pos == "" {
			t.Fatalf("Position = %q, %v", pos, err)
		}
		return id, pos
	}
	found := func(rctx context.Context, id, word string) bool {
		t.Helper()
		hits, err := s.Lexical(rctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: store.MatchQuery{Terms: []string{word}}, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		return len(hits) > 0 && hits[0].ID == id
	}
	for i := range 1000 {
		word := fmt.Sprintf("w%dx", i)
		id, pos := write(i, word)
		rctx := store.AllowReplica(store.WithConsistency(ctx, pos))
		if !found(rctx, id, word) {
			t.Fatalf("trial %d: a recall carrying the write's position %s missed it", i, pos)
		}
		if ms, err := s.Get(rctx, store.GetParams{Profile: "alice", IDs: []string{id}}); err != nil || len(ms) != 1 {
			t.Fatalf("trial %d: Get = %d memories, %v", i, len(ms), err)
		}
	}
	conn, err := pgx.Connect(ctx, replica.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT pg_wal_replay_pause()`); err != nil {
		t.Fatal(err)
	}
	id, pos := write(5000, "paused")
	if found(store.AllowReplica(ctx), id, "paused") {
		t.Error("a recall without a token saw a write its replica has not replayed: reads do not go to the replica")
	}
	if !found(store.AllowReplica(store.WithConsistency(ctx, pos)), id, "paused") {
		t.Error("a recall carrying the position of a write the replica has not replayed missed it (the primary should serve it)")
	}
	if !found(ctx, id, "paused") {
		t.Error("a read not marked a recall's missed the write: it must go to the primary")
	}
	if _, err := conn.Exec(ctx, `SELECT pg_wal_replay_resume()`); err != nil {
		t.Fatal(err)
	}
}

// TestContextTurns_FollowTheDatabase: a store opened with another number
// of context turns re-indexes the database, and a store opened before it
// indexes its next writes, and reads phrases, with the database's new
// number, not the one it opened with.
func TestContextTurns_FollowTheDatabase(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t)
	ctx := t.Context()
	open := func(turns int) *postgres.Store {
		s, err := postgres.Open(ctx, c.DSN("postgres"), postgres.Options{Schema: "turns", ContextTurns: turns})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	old := open(1)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mem := func(id, content string, seq int64) mnemotype.Memory {
		return mnemotype.Memory{ID: id, Profile: "alice", Session: "s", Seq: seq, Kind: mnemotype.KindEpisodic, Content: content,
			Importance: 0.5, CreatedAt: t0.Add(time.Duration(seq) * time.Minute)}
	}
	if err := old.Insert(ctx, []mnemotype.Memory{mem("a", "the zumba lesson", 1), mem("b", "sounds fun", 2), mem("c", "see you there", 3)}); err != nil {
		t.Fatal(err)
	}
	byContext := func(s *postgres.Store) []string {
		t.Helper()
		hits, err := s.Lexical(ctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: store.MatchQuery{Terms: []string{"zumba"}},
			Fields: store.FieldWeights{Context: 1}})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, h := range hits {
			ids = append(ids, h.ID)
		}
		slices.Sort(ids)
		return ids
	}
	if got := byContext(old); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("one turn of context: %v, want [b]", got)
	}
	wide := open(2) // re-indexes with two turns
	if got := byContext(wide); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("two turns of context: %v, want [b c]", got)
	}
	if err := old.Insert(ctx, []mnemotype.Memory{mem("d", "zumba again", 4), mem("e", "ok", 5), mem("f", "fine", 6)}); err != nil {
		t.Fatal(err)
	}
	if got := byContext(old); !slices.Equal(got, []string{"b", "c", "e", "f"}) {
		t.Errorf("the store opened before writes with the database's two turns: %v, want [b c e f]", got)
	}
}

// TestSettingsVersion_AnySessionAndSchemaName: a settings write advances
// its store's settings version whatever the writing session's search_path,
// and after the schema is renamed; another store's version stays.
func TestSettingsVersion_AnySessionAndSchemaName(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t)
	ctx := t.Context()
	open := func(schema string) *postgres.Store {
		s, err := postgres.Open(ctx, c.DSN("postgres"), postgres.Options{Schema: schema})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	version := func(s *postgres.Store) int64 {
		t.Helper()
		v, err := s.Versions(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		return v.Settings
	}
	a, other := open("sv_a"), open("sv_other")
	otherWas := version(other)
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	exec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	was := version(a)
	exec(`SET search_path = sv_other, public`)
	exec(`INSERT INTO sv_a.settings (profile, key, value) VALUES ('alice', 'rrf_k', '20')`)
	if v := version(a); v <= was {
		t.Errorf("an insert from a session on another schema left the version at %d (was %d)", v, was)
	}
	if v := version(other); v != otherWas {
		t.Errorf("another store's version moved %d → %d", otherWas, v)
	}
	a.Close()
	exec(`ALTER SCHEMA sv_a RENAME TO sv_b`)
	b := open("sv_b")
	was = version(b)
	if err := b.SetSettings(ctx, "alice", map[string]string{"rrf_k": "30"}); err != nil {
		t.Fatalf("SetSettings after the schema was renamed: %v", err)
	}
	if v := version(b); v <= was {
		t.Errorf("a write after the schema was renamed left the version at %d (was %d)", v, was)
	}
}
