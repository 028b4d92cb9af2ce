package sqlitestore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/internal/sqlitedb"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/store/storetest"
)

// openTest opens a store on a fresh file in tb's temporary directory and
// closes it when tb ends.
func openTest(tb testing.TB) *Store {
	tb.Helper()
	return openPath(tb, filepath.Join(tb.TempDir(), "mnemo.db"))
}

func openPath(tb testing.TB, path string) *Store {
	tb.Helper()
	s, err := Open(tb.Context(), path, Options{})
	if err != nil {
		tb.Fatalf("Open(%s): %v", path, err)
	}
	tb.Cleanup(func() { _ = s.Close() })
	return s
}

// rawDB opens path with the driver directly, for inspecting or tampering
// with the file behind the store's back.
func rawDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sqlitedb.Open(path, sqlitedb.Options{Pragmas: []string{"busy_timeout=10000"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func TestStore_Conformance(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t, func(t *testing.T) store.Store { return openTest(t) })
}

func TestOpen_FTS5CompiledIn(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	var fts int
	var version string
	if err := s.r.QueryRowContext(t.Context(), `SELECT sqlite_compileoption_used('ENABLE_FTS5'), sqlite_version()`).Scan(&fts, &version); err != nil {
		t.Fatal(err)
	}
	if fts != 1 {
		t.Fatalf("SQLite %s was built without FTS5", version)
	}
	var ddl string
	if err := s.r.QueryRowContext(t.Context(), `SELECT sql FROM sqlite_master WHERE name = 'memories_fts'`).Scan(&ddl); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ddl, "fts5") || !strings.Contains(ddl, "porter unicode61") {
		t.Errorf("memories_fts is not an FTS5 table with the porter unicode61 tokenizer:\n%s", ddl)
	}
}

// schemaSnapshot lists every schema object with its DDL.
func schemaSnapshot(t *testing.T, db interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) []string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `SELECT type, name, coalesce(sql, '') FROM sqlite_master ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var typ, name, ddl string
		if err := rows.Scan(&typ, &name, &ddl); err != nil {
			t.Fatal(err)
		}
		out = append(out, typ+" "+name+": "+ddl)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestOpen_Reopen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ms := storetest.GenerateMemories(1, "alice", 20, 8)
	if err := s.Insert(ctx, ms); err != nil {
		t.Fatal(err)
	}
	if err := s.SetSettings(ctx, "alice", map[string]string{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	seq, err := s.Sequence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	schema := schemaSnapshot(t, s.r)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	for round := range 2 {
		s, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatalf("reopen #%d: %v", round+1, err)
		}
		if v, err := s.SchemaVersion(ctx); err != nil || v != len(migrations) {
			t.Errorf("reopen #%d: SchemaVersion = %d, %v; want %d", round+1, v, err, len(migrations))
		}
		var rows int
		if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM schema_version`).Scan(&rows); err != nil || rows != 1 {
			t.Errorf("schema_version holds %d rows (%v), want 1", rows, err)
		}
		if got := schemaSnapshot(t, s.r); !slices.Equal(got, schema) {
			t.Errorf("reopen #%d changed the schema:\n%s\nwas\n%s", round+1, strings.Join(got, "\n"), strings.Join(schema, "\n"))
		}
		if got, err := s.Sequence(ctx); err != nil || got != seq {
			t.Errorf("reopen #%d: Sequence = %d, %v; want %d", round+1, got, err, seq)
		}
		got, err := s.Get(ctx, store.GetParams{Profile: "alice", IDs: []string{ms[0].ID, ms[19].ID}, WithEmbedding: true})
		if err != nil || len(got) != 2 || !slices.Equal(got[1].Embedding, ms[19].Embedding) || got[0].Content != ms[0].Content {
			t.Errorf("reopen #%d: Get = %d memories, %v", round+1, len(got), err)
		}
		word := strings.Fields(ms[3].Content)[0]
		hits, err := s.Lexical(ctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: store.MatchQuery{Terms: []string{word}}})
		if err != nil || !slices.ContainsFunc(hits, func(h mnemotype.Hit) bool { return h.ID == ms[3].ID }) {
			t.Errorf("reopen #%d: Lexical %q = %v, %v; want it to find %s", round+1, word, hits, err, ms[3].ID)
		}
		if kv, err := s.Settings(ctx, "alice"); err != nil || kv["k"] != "v" {
			t.Errorf("reopen #%d: Settings = %v, %v", round+1, kv, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpen_AppliesOnlyMissingMigrations builds a database at every older
// schema version from the migrations themselves, with a memory and a key
// in it: opening it must run the missing migrations and none of the
// applied ones (which would fail on existing tables), end with the schema
// of a new database, and keep the rows.
func TestOpen_AppliesOnlyMissingMigrations(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	fresh := openPath(t, filepath.Join(t.TempDir(), "fresh.db"))
	want := schemaSnapshot(t, fresh.r)
	for from := 4; from < len(migrations); from++ {
		t.Run(fmt.Sprintf("from=%d", from), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mnemo.db")
			db := rawDB(t, path)
			stmts := append([]string{`CREATE TABLE schema_version (version INTEGER NOT NULL)`,
				fmt.Sprintf(`INSERT INTO schema_version(version) VALUES (%d)`, from)}, migrations[:from]...)
			stmts = append(stmts,
				`INSERT INTO memories(id, profile, kind, content, importance, created_at, accessed_at, seq)
					VALUES ('m1', 'alice', 'episodic', 'the walrus migrates', 0.5, 1715176560000000000, 1715176560000000000, 1)`,
				`UPDATE counters SET value = 1 WHERE name = 'seq'`,
				`INSERT INTO api_keys(id, profile, hash, created_at) VALUES ('k1', 'alice', 'hash-k1', 1715176560000000000)`)
			for _, q := range stmts {
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			db.Close()

			s := openPath(t, path)
			if v, err := s.SchemaVersion(ctx); err != nil || v != len(migrations) {
				t.Errorf("SchemaVersion = %d, %v; want %d", v, err, len(migrations))
			}
			if got := schemaSnapshot(t, s.r); !slices.Equal(got, want) {
				t.Errorf("schema after migrating:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			ms, err := s.Get(ctx, store.GetParams{Profile: "alice", IDs: []string{"m1"}})
			if err != nil || len(ms) != 1 || ms[0].Content != "the walrus migrates" {
				t.Errorf("Get(m1) after migrating = %+v, %v", ms, err)
			}
			hits, err := s.Lexical(ctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: store.MatchQuery{Terms: []string{"walrus"}}, Limit: 3})
			if err != nil || len(hits) != 1 || hits[0].ID != "m1" {
				t.Errorf("Lexical(walrus) after migrating = %v, %v", hits, err)
			}
			if k, err := s.KeyByHash(ctx, "hash-k1"); err != nil || k.Profile != "alice" || k.Role != store.RoleProfile {
				t.Errorf("KeyByHash after migrating = %+v, %v", k, err)
			}
		})
	}
}

func TestOpen_RefusesNewerSchema(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	if err := openPath(t, path).Close(); err != nil {
		t.Fatal(err)
	}
	db := rawDB(t, path)
	if _, err := db.ExecContext(t.Context(), `UPDATE schema_version SET version = ?`, len(migrations)+1); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := Open(t.Context(), path, Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open accepted a schema newer than its migrations")
	}
	if !strings.Contains(err.Error(), "newer") {
		t.Errorf("error %q does not say the schema is newer", err)
	}
}

// TestOpen_PathWithURICharacters opens stores under directory names that
// mean something in a URI.
func TestOpen_PathWithURICharacters(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"a#b", "a?b", "100%", "50%41", "with space"} {
		dir := filepath.Join(t.TempDir(), name)
		path := filepath.Join(dir, "mnemo.db")
		s, err := Open(t.Context(), path, Options{})
		if err != nil {
			t.Errorf("Open(%s): %v", path, err)
			continue
		}
		s.Close()
		if _, err := os.Stat(path); err != nil {
			t.Errorf("Open(%s) did not create the file: %v", path, err)
		}
		if stray, _ := filepath.Glob(filepath.Join(filepath.Dir(dir), "*")); len(stray) != 1 {
			t.Errorf("Open(%s) created %v", path, stray)
		}
	}
}

func TestOpen_WAL(t *testing.T) {
	t.Parallel()
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "mnemo.db"), Options{BusyTimeout: 1500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, db := range map[string]*sql.DB{"writer": s.w, "reader": s.r} {
		var mode string
		var busy, fk int
		if err := db.QueryRowContext(t.Context(), `SELECT * FROM pragma_journal_mode, pragma_busy_timeout, pragma_foreign_keys`).Scan(&mode, &busy, &fk); err != nil {
			t.Fatal(err)
		}
		if mode != "wal" {
			t.Errorf("%s: journal_mode = %s, want wal", name, mode)
		}
		if busy != 1500 {
			t.Errorf("%s: busy_timeout = %d ms, want 1500", name, busy)
		}
		if fk != 1 {
			t.Errorf("%s: foreign_keys = %d", name, fk)
		}
	}
	// No memory map (see DefaultMmapSize): a write elsewhere would unmap it.
	var mmap int64
	if err := s.r.QueryRowContext(t.Context(), `PRAGMA mmap_size`).Scan(&mmap); err != nil || mmap != 0 {
		t.Errorf("reader pool: mmap_size = %d, %v; want 0", mmap, err)
	}
	var qo int
	if err := s.r.QueryRowContext(t.Context(), `PRAGMA query_only`).Scan(&qo); err != nil || qo != 1 {
		t.Errorf("reader pool: query_only = %d, %v; want 1", qo, err)
	}
}

// recentlyAccessedSQL rebuilds the query of RecentlyAccessed for scope.
// Keep in step with Store.RecentlyAccessed.
func recentlyAccessedSQL(scope mnemotype.Scope) (string, []any) {
	cond, args := scopeSQL("m", scope)
	return `SELECT m.id FROM memories m WHERE ` + cond + ` AND m.embedding IS NOT NULL ORDER BY m.accessed_at DESC, m.id LIMIT ?`, append(args, 10)
}

func TestRecentlyAccessed_UsesPartialIndex(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTest(t)
	for seed := range uint64(4) {
		dim := 8
		if seed%2 == 1 {
			dim = 0 // half the memories have no embedding
		}
		if err := s.Insert(ctx, storetest.GenerateMemories(seed, "alice", 250, dim)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Insert(ctx, storetest.GenerateMemories(9, "bob", 100, 8)); err != nil {
		t.Fatal(err)
	}

	var ddl string
	if err := s.r.QueryRowContext(ctx, `SELECT sql FROM sqlite_master WHERE type = 'index' AND name = 'memories_recent_embedded'`).Scan(&ddl); err != nil {
		t.Fatalf("index memories_recent_embedded: %v", err)
	}
	if !strings.Contains(ddl, "WHERE embedding IS NOT NULL") || !strings.Contains(ddl, "accessed_at DESC") {
		t.Errorf("memories_recent_embedded is not the partial (profile, accessed_at DESC) index:\n%s", ddl)
	}

	// The query must match the real method's results, or this test checks
	// the plan of some other query.
	q, args := recentlyAccessedSQL(mnemotype.Scope{Profile: "alice"})
	ids, err := s.RecentlyAccessed(ctx, mnemotype.Scope{Profile: "alice"}, 10)
	if err != nil {
		t.Fatal(err)
	}
	var mirrored []string
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		mirrored = append(mirrored, id)
	}
	rows.Close()
	if !slices.Equal(ids, mirrored) {
		t.Fatalf("recentlyAccessedSQL is out of step with RecentlyAccessed: %v vs %v", mirrored, ids)
	}

	for _, scope := range []mnemotype.Scope{
		{Profile: "alice"},
		{Profile: "alice", Project: "apollo"},
		{Profile: "alice", Sessions: []string{"session-1", "session-2"}},
		{Profile: "alice", Project: "zeus", Kinds: []mnemotype.Kind{mnemotype.KindSemantic}, Exclude: []string{"x", "y"}},
	} {
		q, args := recentlyAccessedSQL(scope)
		plan := queryPlan(t, s.r, q, args...)
		if !strings.Contains(plan, "USING INDEX memories_recent_embedded") && !strings.Contains(plan, "USING COVERING INDEX memories_recent_embedded") {
			t.Errorf("%+v: RecentlyAccessed does not use memories_recent_embedded:\n%s", scope, plan)
		}
		if strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("%+v: RecentlyAccessed sorts instead of walking the index:\n%s", scope, plan)
		}
	}
}

func queryPlan(t *testing.T, db *sql.DB, q string, args ...any) string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// TestStore_TwoInstances opens the same file twice, as two processes
// would: each sees the other's writes.
func TestStore_TwoInstances(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "mnemo.db")

	// Both create and migrate the new file at the same time.
	var a, b *Store
	var errA, errB error
	var wg sync.WaitGroup
	wg.Go(func() { a, errA = Open(ctx, path, Options{}) })
	wg.Go(func() { b, errB = Open(ctx, path, Options{}) })
	wg.Wait()
	if errA != nil || errB != nil {
		t.Fatalf("concurrent Open: %v, %v", errA, errB)
	}
	defer a.Close()
	defer b.Close()

	seq0, err := b.Sequence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ms := storetest.GenerateMemories(1, "alice", 3, 8)
	ms[0].Content = "the platypus lays eggs"
	if err := a.Insert(ctx, ms); err != nil {
		t.Fatal(err)
	}
	cs, err := b.Changes(ctx, "alice", seq0)
	if err != nil || len(cs.Upserts) != 3 {
		t.Fatalf("b.Changes after a.Insert: %d upserts, %v", len(cs.Upserts), err)
	}
	hits, err := b.Lexical(ctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: store.MatchQuery{Terms: []string{"platypus"}}})
	if err != nil || len(hits) != 1 || hits[0].ID != ms[0].ID {
		t.Errorf("b.Lexical(platypus) = %v, %v", hits, err)
	}

	if _, err := b.Update(ctx, store.UpdateParams{Profile: "alice", ID: ms[1].ID, Content: ptrTo("an echidna too")}); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "alice", ms[2].ID); err != nil {
		t.Fatal(err)
	}
	cs2, err := a.Changes(ctx, "alice", cs.Seq)
	if err != nil || len(cs2.Upserts) != 1 || cs2.Upserts[0].ID != ms[1].ID || !slices.Equal(cs2.Deleted, []string{ms[2].ID}) {
		t.Errorf("a.Changes after b's writes = %v / %v, %v", cs2.Upserts, cs2.Deleted, err)
	}
	hits, err = a.Lexical(ctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: store.MatchQuery{Terms: []string{"echidna"}}})
	if err != nil || len(hits) != 1 || hits[0].ID != ms[1].ID {
		t.Errorf("a.Lexical(echidna) = %v, %v", hits, err)
	}
	sa, errA := a.Sequence(ctx)
	sb, errB := b.Sequence(ctx)
	if errA != nil || errB != nil || sa != sb || sa != cs2.Seq {
		t.Errorf("Sequence: a %d (%v), b %d (%v), Changes %d", sa, errA, sb, errB, cs2.Seq)
	}

	// Both write at once: the busy timeout and immediate transactions make
	// them take turns instead of failing with SQLITE_BUSY.
	const batches = 15
	for i, s := range []*Store{a, b} {
		wg.Go(func() {
			for j := range batches {
				if err := s.Insert(ctx, storetest.GenerateMemories(uint64(100+i*batches+j), "bob", 20, 8)); err != nil {
					t.Errorf("store %d: Insert: %v", i, err)
					return
				}
				if _, err := s.Changes(ctx, "bob", 0); err != nil {
					t.Errorf("store %d: Changes: %v", i, err)
				}
			}
		})
	}
	wg.Wait()
	for i, s := range []*Store{a, b} {
		if n, err := s.Count(ctx, "bob"); err != nil || n != 2*batches*20 {
			t.Errorf("store %d: Count = %d, %v; want %d", i, n, err, 2*batches*20)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestEncodeVector(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		v    []float32
	}{
		{"Nil", nil},
		{"One", []float32{1}},
		{"Specials", []float32{0, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, math.MaxFloat32,
			-math.MaxFloat32, math.Float32frombits(0x007fffff), float32(math.Inf(1)), float32(math.Inf(-1))}},
		{"NaNPayload", []float32{math.Float32frombits(0x7fc00001), math.Float32frombits(0xffbfffff)}},
		{"Dim1536", storetest.GenerateMemories(1, "p", 1, 1536)[0].Embedding},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := EncodeVector(tc.v)
			if len(b) != 4*len(tc.v) {
				t.Fatalf("EncodeVector: %d bytes for %d values", len(b), len(tc.v))
			}
			got, err := DecodeVector(b)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.v) {
				t.Fatalf("DecodeVector: %d values, want %d", len(got), len(tc.v))
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(tc.v[i]) {
					t.Errorf("value %d: %08x, want %08x", i, math.Float32bits(got[i]), math.Float32bits(tc.v[i]))
				}
			}
		})
	}

	t.Run("LittleEndian", func(t *testing.T) {
		got := EncodeVector([]float32{1, -2})
		want := []byte{0x00, 0x00, 0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0}
		if !slices.Equal(got, want) {
			t.Errorf("EncodeVector(1, -2) = % x, want % x", got, want)
		}
	})

	for _, n := range []int{1, 2, 3, 5, 7, 1023} {
		t.Run(fmt.Sprintf("DecodeRejects%dBytes", n), func(t *testing.T) {
			if v, err := DecodeVector(make([]byte, n)); err == nil {
				t.Errorf("DecodeVector(%d bytes) = %v, want an error", n, v)
			}
		})
	}
}

func TestMatchExpr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		q    store.MatchQuery
		want string
	}{
		{"OneTerm", store.MatchQuery{Terms: []string{"apple"}}, `"apple"`},
		{"Any", store.MatchQuery{Terms: []string{"red", "apple"}}, `"red" OR "apple"`},
		{"All", store.MatchQuery{Terms: []string{"red", "apple"}, All: true}, `"red" "apple"`},
		{"Operators", store.MatchQuery{Terms: []string{"AND", "NEAR(", "*"}, All: true}, `"AND" "NEAR(" "*"`},
		{"QuotesDoubled", store.MatchQuery{Terms: []string{`a"b`, `"`}}, `"a""b" OR """"`},
		{"NULBecomesSpace", store.MatchQuery{Terms: []string{"salt\x00pepper", "\x00"}}, `"salt pepper" OR " "`},
		{"Empty", store.MatchQuery{}, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MatchExpr(tc.q); got != tc.want {
				t.Errorf("MatchExpr(%q, all=%v) = %s, want %s", tc.q.Terms, tc.q.All, got, tc.want)
			}
		})
	}
}

// FuzzMatchExpr checks that no input, split into terms any way, makes the
// FTS5 query built by MatchExpr fail, and that results stay in scope and
// best first.
func FuzzMatchExpr(f *testing.F) {
	for _, seed := range []string{
		"AND", "OR", "NOT", "salt AND pepper", "NEAR(", "NEAR(salt pepper, 2)", "*", "salt*", "-x", "+x", "^x",
		"col:x", "content:apple", "{content}:apple", "{content id}: x", ")(", "(", ")", `"`, `"unbalanced`, `a"b`,
		`""`, `'x'`, "", " ", "café 東京 naïve", "CAFÉ", "running runs", "\x00", "a\x00b", "\xff\xfe", "a,b,,c",
		"'); DROP TABLE memories; --", strings.Repeat("(", 100), strings.Repeat(`"`, 99),
	} {
		f.Add(seed)
	}
	ctx := f.Context()
	s := openTest(f)
	docs := []string{
		"salt and pepper or vinegar near the table", "x marks the spot", "col x row y", "content apple",
		"this is NOT a drill", "a café in 東京", "a naive question", "she runs every morning",
	}
	var ms []mnemotype.Memory
	for i, d := range docs {
		profile := "alice"
		if i%4 == 3 {
			profile = "bob"
		}
		ms = append(ms, mnemotype.Memory{ID: fmt.Sprintf("%s-%d", profile, i), Profile: profile, Content: d,
			Kind: mnemotype.KindEpisodic, Importance: 0.5, CreatedAt: time.Unix(0, 0), AccessedAt: time.Unix(0, 0)})
	}
	if err := s.Insert(ctx, ms); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, in string) {
		for _, terms := range [][]string{strings.Fields(in), {in}, strings.Split(in, ",")} {
			for _, all := range []bool{false, true} {
				q := store.MatchQuery{Terms: terms, All: all}
				hits, err := s.Lexical(t.Context(), store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: q, Limit: 20})
				if err != nil {
					t.Fatalf("terms %q all=%v: MATCH %s: %v", terms, all, MatchExpr(q), err)
				}
				for i, h := range hits {
					if !strings.HasPrefix(h.ID, "alice-") {
						t.Errorf("hit %s is outside the scope", h.ID)
					}
					if i > 0 && h.Score > hits[i-1].Score {
						t.Errorf("hits not best first: %v", hits)
					}
				}
			}
		}
	})
}

var benchSink int

func BenchmarkInsert(b *testing.B) {
	for _, bc := range []struct{ batch, dim int }{{1000, 256}} {
		b.Run(fmt.Sprintf("batch=%d/dim=%d", bc.batch, bc.dim), func(b *testing.B) {
			s := openTest(b)
			batches := make([][]mnemotype.Memory, b.N)
			for i := range batches {
				batches[i] = storetest.GenerateMemories(uint64(i), "bench", bc.batch, bc.dim)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if err := s.Insert(b.Context(), batches[i]); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*bc.batch)/b.Elapsed().Seconds(), "memories/s")
		})
	}
}

func BenchmarkLexical(b *testing.B) {
	for _, size := range []struct {
		name string
		n    int
	}{{"1k", 1_000}, {"10k", 10_000}} {
		b.Run(size.name, func(b *testing.B) {
			ctx := b.Context()
			s := openTest(b)
			for i := range size.n / 1000 {
				if err := s.Insert(ctx, storetest.GenerateMemories(uint64(i), "bench", 1000, 0)); err != nil {
					b.Fatal(err)
				}
			}
			// Queries: two or three words of stored memories, as the
			// pipeline would build them from a recall.
			var queries [][]string
			for _, m := range storetest.GenerateMemories(999, "q", 64, 0) {
				w := strings.Fields(m.Content)
				queries = append(queries, w[:2+len(queries)%2])
			}
			for _, all := range []bool{false, true} {
				name := "any"
				if all {
					name = "all"
				}
				b.Run(name, func(b *testing.B) {
					b.ReportAllocs()
					i := 0
					for b.Loop() {
						hits, err := s.Lexical(ctx, store.LexicalParams{
							Scope: mnemotype.Scope{Profile: "bench"},
							Match: store.MatchQuery{Terms: queries[i%len(queries)], All: all},
							Limit: 50,
						})
						if err != nil {
							b.Fatal(err)
						}
						benchSink += len(hits)
						i++
					}
				})
			}
		})
	}
}

// TestStore_ConformanceCommonTerms runs the Lexical conformance tests with
// thresholds low enough for their small fixtures to take the common-terms
// plan of OR queries.
func TestStore_ConformanceCommonTerms(t *testing.T) {
	t.Parallel()
	storetest.ExerciseLexical(t, func(t *testing.T) store.Store {
		s, err := Open(t.Context(), filepath.Join(t.TempDir(), "mnemo.db"), Options{CommonTermRatio: 0.1, CommonTermMinDocs: 2})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

func TestStore_RareTerms(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "mnemo.db"), Options{CommonTermRatio: 0.1, CommonTermMinDocs: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	// 40 memories; the threshold is max(2, 10% of 40) = 4 memories, over
	// every profile (BM25's document frequencies are the whole index's).
	var ms []mnemotype.Memory
	for i := range 40 {
		m := storetest.GenerateMemories(uint64(i), "p", 1, 0)[0]
		m.Profile = []string{"p", "q"}[i%2]
		m.Content = "filler"
		switch {
		case i < 5:
			m.Content = "rivers flow" // river: 5 memories, common
		case i < 9:
			m.Content = "a river stone" // stone: 4 memories, rare
		case i < 10:
			m.Content = "zircon"
		}
		ms = append(ms, m)
	}
	if err := s.Insert(ctx, ms); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		terms, want []string
	}{
		{[]string{"river", "stone", "zircon", "absent"}, []string{"stone", "zircon", "absent"}},
		{[]string{"rivers", "flowing", "stones"}, []string{"stones"}}, // stemmed like the index
		{[]string{"filler", "river"}, nil},
		{[]string{"\"", "*", "NEAR(", "zircon"}, []string{"\"", "*", "NEAR(", "zircon"}},
	} {
		got, err := s.rareTerms(ctx, tc.terms, seqOf(t, s))
		if err != nil {
			t.Fatalf("rareTerms(%q): %v", tc.terms, err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("rareTerms(%q) = %q, want %q", tc.terms, got, tc.want)
		}
	}
}

// TestStore_RareTermsCache: counts are reused while few memories changed
// and taken again once more than max(16, 1%) did, by this store or another
// process writing the same file.
func TestStore_RareTermsCache(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	s, other, insert := twoWriters(t, path)
	check := func(step string, want ...string) {
		t.Helper()
		got, err := s.rareTerms(ctx, []string{"quartz", "basalt"}, seqOf(t, s))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: rareTerms = %q, want %q", step, got, want)
		}
	}
	insert(s, 40, "filler")
	insert(s, 3, "quartz")
	insert(s, 10, "basalt")
	check("53 memories, threshold 5", "quartz")
	// Two more quartz memories: within tolerance, the cached count (3)
	// stands although quartz now matches 5.
	insert(other, 2, "quartz")
	check("2 changes later", "quartz")
	if e := s.df.terms["quartz"]; e.n != 3 {
		t.Errorf("cached quartz count = %d, want the stale 3 (reused)", e.n)
	}
	// 20 more quartz memories from the other writer: past max(16, 1%), so
	// quartz is counted again (25 > threshold 7) and basalt stays 10 > 7.
	insert(other, 20, "quartz")
	check("22 changes later")
	// Counted to the end when the build ranks with cached counts, else
	// stopped one past the threshold.
	if e := s.df.terms["quartz"]; (e.limit == unbounded && e.n != 25) || (e.limit != unbounded && e.n <= e.limit) {
		t.Errorf("quartz recounted as %d (limit %d), want 25 or past the limit", e.n, e.limit)
	}
	if s.df.total != 75 {
		t.Errorf("cached total = %d, want 75", s.df.total)
	}
	// 200 memories of filler: the threshold rises to 27 and both terms are
	// rare again; a count capped under the old threshold is not reused.
	insert(s, 200, "filler")
	check("threshold 27", "quartz", "basalt")
}

// TestStore_MinHitsFromCachedCounts: an AND query's MinHits is settled
// from cached term counts when they prove too few matches, and the
// changes since a count are allowed for, so a grown term is never missed.
func TestStore_MinHitsFromCachedCounts(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	s, other, insert := twoWriters(t, path)
	insert(s, 40, "filler")
	insert(s, 3, "quartz basalt")
	insert(s, 10, "basalt")
	if _, err := s.rareTerms(ctx, []string{"quartz", "basalt"}, seqOf(t, s)); err != nil { // caches quartz = 3
		t.Fatal(err)
	}
	and := func(min int) int {
		t.Helper()
		hits, err := s.Lexical(ctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "p"},
			Match: store.MatchQuery{Terms: []string{"quartz", "basalt"}, All: true}, Limit: 10, MinHits: min})
		if err != nil {
			t.Fatal(err)
		}
		return len(hits)
	}
	seq, err := s.Sequence(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !s.df.fewerThan([]string{"quartz", "basalt"}, 4, seq) || s.df.fewerThan([]string{"quartz", "basalt"}, 3, seq) {
		t.Fatal("fewerThan does not follow the cached count of quartz (3)")
	}
	if got := and(3); got != 3 {
		t.Errorf("MinHits 3: %d hits, want 3", got)
	}
	if got := and(4); got != 0 {
		t.Errorf("MinHits 4: %d hits, want none (3 match)", got)
	}
	insert(other, 2, "quartz basalt") // quartz now matches 5; its cached count says 3
	if got := and(4); got != 5 {
		t.Errorf("MinHits 4 after two more matches: %d hits, want 5 (the stale count must not settle it)", got)
	}
}

// TestStore_RareTermBudget: an OR query's rare terms are kept rarest first
// while their matches fit max(RareTermBudget, 10% of all memories).
func TestStore_RareTermBudget(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, tc := range []struct {
		budget int
		want   []string
	}{
		{5, []string{"alpha", "beta"}},           // budget max(5, 10% of 60) = 6: alpha 2 + beta 3 fit, + gamma 4 = 9 does not
		{8, []string{"alpha", "beta"}},           // 9 > 8 still
		{9, []string{"gamma", "alpha", "beta"}},  // 9 fits; the query's order is kept
		{-1, []string{"gamma", "alpha", "beta"}}, // no bound
	} {
		s, err := Open(ctx, filepath.Join(t.TempDir(), "mnemo.db"), Options{CommonTermRatio: 0.1, CommonTermMinDocs: 2, RareTermBudget: tc.budget})
		if err != nil {
			t.Fatal(err)
		}
		ms := storetest.GenerateMemories(9, "p", 60, 0)
		for i := range ms {
			switch {
			case i < 2:
				ms[i].Content = "alpha"
			case i < 5:
				ms[i].Content = "beta"
			case i < 9:
				ms[i].Content = "gamma"
			default:
				ms[i].Content = "filler"
			}
		}
		if err := s.Insert(ctx, ms); err != nil {
			t.Fatal(err)
		}
		got, err := s.rareTerms(ctx, []string{"gamma", "alpha", "beta"}, seqOf(t, s))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("budget %d: rareTerms = %q, want %q", tc.budget, got, tc.want)
		}
		s.Close()
	}
}

// twoWriters opens two stores on path with small common-term thresholds
// (the second stands for another process) and returns an insert that adds
// n memories of one content through either.
func twoWriters(t *testing.T, path string) (s, other *Store, insert func(st *Store, n int, content string)) {
	t.Helper()
	s, err := Open(t.Context(), path, Options{CommonTermRatio: 0.1, CommonTermMinDocs: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	other = openPath(t, path)
	batch := 0
	insert = func(st *Store, n int, content string) {
		t.Helper()
		ms := storetest.GenerateMemories(uint64(batch), "p", n, 0)
		batch++
		for i := range ms {
			ms[i].ID = fmt.Sprintf("m%d-%d", batch, i)
			ms[i].Content = content
		}
		if err := st.Insert(t.Context(), ms); err != nil {
			t.Fatal(err)
		}
	}
	return s, other, insert
}

// TestStore_TopFirstMatchesJoined: ranking before reading the scope gives
// the joined query's hits, order and scores whenever it claims a result,
// and declines when the rows it read cannot settle the cut (too few in
// scope, or a tie with the rows left unread); and the store's ranking
// (with cached document frequencies when the build has a ranking
// function) gives FTS5's bm25() to the bit. Contents come from a small
// vocabulary, so many rows tie.
func TestStore_TopFirstMatchesJoined(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTest(t)
	words := []string{"amber", "basalt", "cedar", "dune", "ember", "fjord", "garnet", "heath"}
	ms := storetest.GenerateMemories(7, "big", 800, 0)
	for i := range ms {
		if i%4 == 3 {
			ms[i].Profile = "small"
		}
		ms[i].Session = fmt.Sprintf("s%d", i%5)
		// Ids run against insertion order: among tied rows, those FTS5
		// reads first are the last by id.
		ms[i].ID = fmt.Sprintf("m%04d", len(ms)-i)
		n := 1 + (i*7)%4
		var text []string
		for j := range n {
			text = append(text, words[(i*(j+3)+j*j)%len(words)])
		}
		ms[i].Content = strings.Join(text, " ")
	}
	if err := s.Insert(ctx, ms); err != nil {
		t.Fatal(err)
	}
	scopes := []mnemotype.Scope{
		{Profile: "big"},
		{Profile: "big", Exclude: []string{ms[0].ID, ms[1].ID, ms[5].ID}},
		{Profile: "big", Sessions: []string{"s1", "s2"}},
		{Profile: "small"},
	}
	var claimed, declined int
	for qi := range 60 {
		terms := []string{words[qi%len(words)], words[(qi*3+1)%len(words)]}
		if qi%3 == 0 {
			terms = append(terms, words[(qi*5+2)%len(words)])
		}
		if qi%5 == 4 {
			terms = append(terms, "*", `"`, "NEAR(") // phrases without a token
		}
		for _, sc := range scopes {
			share, err := s.scopeShare(ctx, sc, seqOf(t, s))
			if err != nil {
				t.Fatal(err)
			}
			for _, limit := range []int{1, 3, 10, 30, 200} {
				p := store.LexicalParams{Scope: sc, Match: store.MatchQuery{Terms: terms, All: qi%2 == 0}, Limit: limit}
				var rare []string
				if qi%4 == 1 {
					rare = terms[:1]
				}
				// The reference: one joined query ranked by FTS5's own bm25().
				want, _, err := s.lexicalJoined(ctx, p, rare, rankExpr{})
				if err != nil {
					t.Fatal(err)
				}
				rank, err := s.rank(ctx, terms, seqOf(t, s))
				if err != nil {
					t.Fatal(err)
				}
				got, ok, err := s.lexicalTopFirst(ctx, p, rare, rank, share)
				if err != nil {
					t.Fatal(err)
				}
				if !ok {
					declined++
				} else {
					claimed++
					if !slices.Equal(got, want) {
						t.Fatalf("%q scope %+v limit %d: top first %v, joined %v", terms, sc, limit, got, want)
					}
				}
				got, _, err = s.lexical(ctx, p, rare, seqOf(t, s))
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%q scope %+v limit %d: lexical %v, joined %v", terms, sc, limit, got, want)
				}
			}
		}
	}
	if claimed == 0 || declined == 0 {
		t.Errorf("top first claimed %d results and declined %d: both paths must be exercised", claimed, declined)
	}
	t.Logf("top first claimed %d, declined %d", claimed, declined)
}

func TestStore_ScopeShare(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := openTest(t)
	ms := storetest.GenerateMemories(3, "a", 40, 0)
	for i := range ms {
		ms[i].Session = fmt.Sprintf("s%d", i%4)
		if i >= 30 {
			ms[i].Profile = "b"
		}
	}
	if err := s.Insert(ctx, ms); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sc   mnemotype.Scope
		want float64
	}{
		{mnemotype.Scope{Profile: "a"}, 0.75},
		{mnemotype.Scope{Profile: "a", Exclude: []string{ms[0].ID}}, 0.75}, // Exclude is left to the query
		{mnemotype.Scope{Profile: "b"}, 0.25},
		{mnemotype.Scope{Profile: "a", Sessions: []string{"s0"}}, 8.0 / 40},
		{mnemotype.Scope{Profile: "nobody"}, 0},
	} {
		got, err := s.scopeShare(ctx, tc.sc, seqOf(t, s))
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("scopeShare(%+v) = %v, want %v", tc.sc, got, tc.want)
		}
	}
}

// seqOf returns s's change sequence.
func seqOf(t *testing.T, s *Store) int64 {
	t.Helper()
	seq, err := s.Sequence(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return seq
}

// TestStore_RankWithLengths: once the rows' lengths are loaded, ranking
// with them gives bm25()'s scores to the bit; after a write they are not
// used (a content update changes a row's length under the same rowid)
// until a load as of the new sequence.
func TestStore_RankWithLengths(t *testing.T) {
	t.Parallel()
	if sqlitedb.RankFunction == "" {
		t.Skip("this build ranks with bm25(): no lengths to load")
	}
	ctx := t.Context()
	s := openTest(t)
	words := strings.Fields("amber basalt cedar dune ember fjord garnet heath")
	ms := storetest.GenerateMemories(11, "p", 300, 0)
	for i := range ms {
		var text []string
		for j := range 1 + i%9 {
			text = append(text, words[(i*(j+2)+j)%len(words)])
		}
		ms[i].Content = strings.Join(text, " ")
	}
	if err := s.Insert(ctx, ms); err != nil {
		t.Fatal(err)
	}
	loaded := func() []byte {
		t.Helper()
		seq := seqOf(t, s)
		deadline := time.Now().Add(10 * time.Second)
		for {
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
		seq := seqOf(t, s)
		for _, terms := range [][]string{{"amber"}, {"cedar", "dune"}, {"ember", "fjord", "heath", "amber"}} {
			p := store.LexicalParams{Scope: mnemotype.Scope{Profile: "p"}, Match: store.MatchQuery{Terms: terms}, Limit: 20}
			got, want, rank := rankedBoth(t, s, p, seq)
			if !slices.Equal(got, want) {
				t.Fatalf("%s, %q (lengths given: %v): %v, bm25() %v", step, terms, rank.lens != nil, got, want)
			}
		}
	}
	loaded()
	check("loaded")
	// Longer content under the same rowid: the copy is stale now.
	long := strings.Repeat("amber ", 40)
	if _, err := s.Update(ctx, store.UpdateParams{Profile: "p", ID: ms[0].ID, Content: &long}); err != nil {
		t.Fatal(err)
	}
	if lens := s.lengths(seqOf(t, s)); lens != nil {
		t.Fatal("lengths from before the update used after it")
	}
	check("after the update")
	lens := loaded()
	var rid int64
	if err := s.r.QueryRow(`SELECT rid FROM memories WHERE id = ?`, ms[0].ID).Scan(&rid); err != nil {
		t.Fatal(err)
	}
	if got := int(lens[2*rid]) | int(lens[2*rid+1])<<8; got != 40 {
		t.Errorf("reloaded length of the updated memory = %d, want 40", got)
	}
	check("reloaded")
}

// TestOpen_NotADatabase: a file that is not SQLite is reported as such and
// left as it was.
func TestOpen_NotADatabase(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "notes.db")
	text := []byte(strings.Repeat("these are my notes, not a database. ", 20))
	if err := os.WriteFile(path, text, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(t.Context(), path, Options{})
	if err == nil {
		s.Close()
		t.Fatal("Open of a text file succeeded")
	}
	if !strings.Contains(err.Error(), "not a database") || !strings.Contains(err.Error(), path) {
		t.Errorf("Open of a text file: %v; want the path and \"not a database\"", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, text) {
		t.Error("Open changed the file")
	}
}

// TestStore_OnlyByTextMatchesFTS: scoring the listed memories by their text
// gives the FTS5 query's hits and scores (bm25(), to the bit), for AND and
// OR, across scopes, over stemmed, accented, punctuated and FTS-syntax
// terms.
func TestStore_OnlyByTextMatchesFTS(t *testing.T) {
	t.Parallel()
	if sqlitedb.TextRankFunction == "" {
		t.Skip("this build scores with FTS5 only")
	}
	ctx := t.Context()
	s := openTest(t)
	words := strings.Fields("rivers river running café résumé e-mail stone dune quartz basalt cedar NEAR the")
	ms := storetest.GenerateMemories(13, "big", 400, 0)
	for i := range ms {
		if i%5 == 4 {
			ms[i].Profile = "small"
		}
		ms[i].Session = fmt.Sprintf("s%d", i%3)
		var text []string
		for j := range 1 + i%7 {
			text = append(text, words[(i*(j+5)+j)%len(words)])
		}
		ms[i].Content = strings.Join(text, ", ") + "."
	}
	if err := s.Insert(ctx, ms); err != nil {
		t.Fatal(err)
	}
	seq := seqOf(t, s)
	var only []string
	for i := 0; i < len(ms); i += 7 {
		only = append(only, ms[i].ID)
	}
	only = append(only, "no-such-id")
	matched := 0
	for qi, terms := range [][]string{
		{"river"}, {"rivers", "cafe"}, {"resume", "e-mail", "quartz"}, {"near", "the", "stone"},
		{"*", "dune"}, {`"`, "basalt", "cedar"}, {"running", "river", "river"},
	} {
		for _, sc := range []mnemotype.Scope{{Profile: "big"}, {Profile: "big", Sessions: []string{"s1"}}, {Profile: "small", Exclude: only[:2]}} {
			p := store.LexicalParams{Scope: sc, Match: store.MatchQuery{Terms: terms, All: qi%2 == 1}, Only: only}
			got, want, rank := rankedBoth(t, s, p, seq)
			if !slices.Equal(got, want) {
				t.Fatalf("%q all=%v scope %+v: by text (%v) %v, FTS5 %v", terms, p.Match.All, sc, rank.fn, got, want)
			}
			matched += len(want)
		}
	}
	if matched == 0 {
		t.Fatal("no listed memory matched any query: the comparison proves nothing")
	}
}

// rankedBoth runs p through the joined query twice: ranked as the store
// ranks as of seq (got), and by FTS5's own bm25() (want).
func rankedBoth(t *testing.T, s *Store, p store.LexicalParams, seq int64) (got, want []mnemotype.Hit, rank rankExpr) {
	t.Helper()
	want, _, err := s.lexicalJoined(t.Context(), p, nil, rankExpr{})
	if err != nil {
		t.Fatal(err)
	}
	if rank, err = s.rank(t.Context(), p.Match.Terms, seq); err != nil {
		t.Fatal(err)
	}
	if got, _, err = s.lexicalJoined(t.Context(), p, nil, rank); err != nil {
		t.Fatal(err)
	}
	return got, want, rank
}

// TestStore_FullIsStorageFull fills the database to a page limit: the
// insert that does not fit fails with ErrStorageFull (mapped from SQLite's
// result code, not its message), stores nothing of its batch, and every
// memory stored before stays readable and searchable.
func TestStore_FullIsStorageFull(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := openTest(t)
	if err := s.Insert(ctx, []mnemotype.Memory{testMemory("alice", "kept", "the walrus stays")}); err != nil {
		t.Fatal(err)
	}
	var pages int64
	if err := s.w.QueryRowContext(ctx, `PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, fmt.Sprintf(`PRAGMA max_page_count = %d`, pages+2)); err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("filler text that takes pages ", 2000)
	var err error
	for i := 0; i < 20 && err == nil; i++ {
		err = s.Insert(ctx, []mnemotype.Memory{testMemory("alice", fmt.Sprintf("big-%d", i), big)})
	}
	if !errors.Is(err, mnemotype.ErrStorageFull) {
		t.Fatalf("insert into a full database: err = %v, want ErrStorageFull", err)
	}
	if _, err := s.w.ExecContext(ctx, `PRAGMA max_page_count = 1073741823`); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, store.GetParams{Profile: "alice", IDs: []string{"kept"}})
	if err != nil || len(got) != 1 || got[0].Content != "the walrus stays" {
		t.Fatalf("Get(kept) after the full insert = %v, %v", got, err)
	}
	hits, err := s.Lexical(ctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: store.MatchQuery{Terms: []string{"walrus"}}, Limit: 5})
	if err != nil || len(hits) != 1 {
		t.Fatalf("Lexical(walrus) after the full insert = %v, %v", hits, err)
	}
}

// testMemory is a valid memory of profile with an id and content.
func testMemory(profile, id, content string) mnemotype.Memory {
	at := time.Date(2024, 5, 8, 13, 56, 0, 0, time.UTC)
	return mnemotype.Memory{ID: id, Profile: profile, Content: content, Kind: mnemotype.KindEpisodic,
		Importance: mnemotype.DefaultImportance, CreatedAt: at, AccessedAt: at}
}
