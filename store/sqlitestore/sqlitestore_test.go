package sqlitestore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
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

// newDatabase creates a database at the current schema in a temporary
// directory, closed, and returns its path.
func newDatabase(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	if err := openPath(t, path).Close(); err != nil {
		t.Fatal(err)
	}
	return path
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
	if err := s.r.QueryRowContext(t.Context(), `SELECT sql FROM sqlite_master WHERE name = 'memories_lex'`).Scan(&ddl); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ddl, "fts5") || !strings.Contains(ddl, "tokenize='ascii'") {
		t.Errorf("memories_lex is not an FTS5 table with the ascii tokenizer (given tokens: see ftsText):\n%s", ddl)
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
	// The full-text index's options are part of its schema.
	cfg, err := db.QueryContext(t.Context(), `SELECT k, v FROM memories_lex_config ORDER BY k`)
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	for cfg.Next() {
		var k, v string
		if err := cfg.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, "memories_lex option "+k+" = "+v)
	}
	if err := cfg.Err(); err != nil {
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
	seq, err := s.Sequence(ctx, "")
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
		if got, err := s.Sequence(ctx, ""); err != nil || got != seq {
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
	for k, v := range map[string]string{"automerge": ftsAutomerge, "crisismerge": ftsCrisismerge, "hashsize": ftsHashsize} {
		if !slices.Contains(want, "memories_lex option "+k+" = "+v) {
			t.Errorf("a new database's full-text options: %q; want %s = %s", want, k, v)
		}
	}
	for from := 4; from < len(migrations); from++ {
		t.Run(fmt.Sprintf("from=%d", from), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "mnemo.db")
			var stmts []string
			if from < 6 {
				stmts = append([]string{`CREATE TABLE schema_version (version INTEGER NOT NULL)`,
					fmt.Sprintf(`INSERT INTO schema_version(version) VALUES (%d)`, from)}, migrations[:from]...)
				stmts = append(stmts,
					`INSERT INTO memories(id, profile, kind, content, importance, created_at, accessed_at, seq)
					VALUES ('m1', 'alice', 'episodic', 'the walrus migrates', 0.5, 1715176560000000000, 1715176560000000000, 1)`,
					`UPDATE counters SET value = 1 WHERE name = 'seq'`)
			} else {
				// From version 6 on, the store writes its own full-text
				// index: a current store writes the memory, then the
				// migrations after from are undone.
				s := openPath(t, path)
				at := time.Date(2024, 5, 8, 13, 56, 0, 0, time.UTC)
				m := mnemotype.Memory{ID: "m1", Profile: "alice", Kind: mnemotype.KindEpisodic, Content: "the walrus migrates",
					Importance: 0.5, CreatedAt: at, AccessedAt: at, OccurredAt: at}
				if err := s.Insert(ctx, []mnemotype.Memory{m}); err != nil {
					t.Fatal(err)
				}
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
				for v := len(migrations); v > from; v-- {
					undo, ok := undoMigration[v]
					if !ok {
						t.Fatalf("undoMigration has no entry for migration %d", v)
					}
					stmts = append(stmts, undo)
				}
				stmts = append(stmts, fmt.Sprintf(`UPDATE schema_version SET version = %d`, from))
			}
			stmts = append(stmts, `INSERT INTO api_keys(id, profile, hash, created_at) VALUES ('k1', 'alice', 'hash-k1', 1715176560000000000)`)
			db := rawDB(t, path)
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
			if id, err := s.Instance(ctx); id == "" || err != nil {
				t.Errorf("Instance after migrating = %q, %v", id, err)
			}
			if got := schemaSnapshot(t, s.r); !slices.Equal(got, want) {
				t.Errorf("schema after migrating:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			ms, err := s.Get(ctx, store.GetParams{Profile: "alice", IDs: []string{"m1"}})
			if err != nil || len(ms) != 1 || ms[0].Content != "the walrus migrates" {
				t.Fatalf("Get(m1) after migrating = %+v, %v", ms, err)
			}
			if at := time.Date(2024, 5, 8, 13, 56, 0, 0, time.UTC); !ms[0].CreatedAt.Equal(at) || !ms[0].AccessedAt.Equal(at) {
				t.Errorf("times after migrating: created %v, accessed %v; want %v", ms[0].CreatedAt, ms[0].AccessedAt, at)
			}
			checkProfileStats(t, s)
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

// undoMigration reverts migration v (from version 6 on), for
// TestOpen_AppliesOnlyMissingMigrations.
var undoMigration = map[int]string{
	7:  `ALTER TABLE api_keys DROP COLUMN profiles`,
	8:  `SELECT 1`, // its Go step renames the settings keys (TestMigration8_SnakeCaseSettings)
	9:  `DELETE FROM counters WHERE name = 'instance'`,
	10: `DELETE FROM memories_fts_config WHERE k = 'automerge'`,
	15: `DROP TABLE watermarks`,
	14: `DROP TRIGGER settings_ai; DROP TRIGGER settings_au; DROP TRIGGER settings_ad;
		DELETE FROM counters WHERE name = 'settings'`,
	13: `DELETE FROM memories_lex_config WHERE k = 'hashsize'`,
	12: `ALTER TABLE memories_lex RENAME TO memories_fts;
		DELETE FROM memories_fts_config WHERE k = 'crisismerge'`,
	11: `DROP TABLE memories_fts;
		CREATE VIRTUAL TABLE memories_fts USING fts5(
			content, actor, time, context, scope, content='', contentless_delete=1, tokenize='porter unicode61'
		);
		INSERT INTO memories_fts(memories_fts, rank) VALUES ('automerge', 16);`,
}

// TestInstance_SurvivesReopen: a database keeps its instance across
// processes; a migrated one gets one.
func TestInstance_SurvivesReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	s := openPath(t, path)
	id, err := s.Instance(t.Context())
	if err != nil || id == "" {
		t.Fatalf("Instance = %q, %v", id, err)
	}
	s.Close()
	if again, err := openPath(t, path).Instance(t.Context()); again != id || err != nil {
		t.Errorf("Instance after reopening = %q, %v; was %q", again, err, id)
	}
}

// TestMigration8_SnakeCaseSettings: a database of version 7 with settings
// stored under camelCase keys reads them back under snake_case keys, a key
// stored in both spellings keeping the snake_case value.
func TestMigration8_SnakeCaseSettings(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := newDatabase(t)
	db := rawDB(t, path)
	var undo []string
	for v := len(migrations); v > 7; v-- {
		q, ok := undoMigration[v]
		if !ok {
			t.Fatalf("undoMigration has no entry for migration %d", v)
		}
		undo = append(undo, q)
	}
	for _, q := range append(undo,
		`UPDATE schema_version SET version = 7`,
		`INSERT INTO settings(profile, key, value) VALUES ('alice', 'keywordWeight', '0.3'), ('alice', 'rrfK', '20'),
			('', 'minRelevance', '0.1'), ('bob', 'strategy', 'rrf'), ('bob', 'semanticWeight', '2'), ('bob', 'semantic_weight', '3')`,
	) {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()
	s := openPath(t, path)
	for p, want := range map[string]map[string]string{
		"alice": {"keyword_weight": "0.3", "rrf_k": "20"},
		"":      {"min_relevance": "0.1"},
		"bob":   {"strategy": "rrf", "semantic_weight": "3"},
	} {
		got, err := s.Settings(ctx, p)
		if err != nil || !maps.Equal(got, want) {
			t.Errorf("Settings(%q) = %v, %v; want %v", p, got, err, want)
		}
	}
}

// TestOpen_AnnouncesAReindexingMigration: opening a database from before
// a migration that re-indexes every memory says so first (how many, from
// which version), and when it is done; so does opening it with another
// number of context turns; a database already current says nothing.
func TestOpen_AnnouncesAReindexingMigration(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	s := openPath(t, path)
	at := time.Date(2024, 5, 8, 13, 56, 0, 0, time.UTC)
	var ms []mnemotype.Memory
	for i := range 3 {
		ms = append(ms, mnemotype.Memory{ID: fmt.Sprint("m", i), Profile: "alice", Kind: mnemotype.KindEpisodic, Content: "the walrus migrates",
			Importance: 0.5, CreatedAt: at, AccessedAt: at, OccurredAt: at})
	}
	if err := s.Insert(ctx, ms); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	open := func() string {
		t.Helper()
		var log bytes.Buffer
		s, err := Open(ctx, path, Options{Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		return log.String()
	}
	if got := open(); got != "" {
		t.Errorf("opening a current database logged %q", got)
	}
	db := rawDB(t, path)
	for v := len(migrations); v > 11; v-- {
		if _, err := db.ExecContext(ctx, undoMigration[v]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(ctx, `UPDATE schema_version SET version = 11`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	got := open()
	lines := strings.Split(strings.TrimSpace(got), "\n")
	want := fmt.Sprintf("from_version=11 to_version=%d memories=3", len(migrations))
	if len(lines) != 2 || !strings.Contains(lines[0], "level=INFO") || !strings.Contains(lines[0], "re-indexing every memory") ||
		!strings.Contains(lines[0], want) || !strings.Contains(lines[1], "migrated the database") {
		t.Errorf("opening a database of version 11 logged:\n%s\nwant a note with %q, then one that it is done", got, want)
	}
	if got := open(); got != "" {
		t.Errorf("opening it again logged %q", got)
	}
	// Another number of context turns rebuilds the index: announced too.
	var log bytes.Buffer
	s, err := Open(ctx, path, Options{ContextTurns: 2, Logger: slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "rebuilding the full-text index") || !strings.Contains(lines[0], "from_context_turns=1 to_context_turns=2 memories=3") ||
		!strings.Contains(lines[1], "rebuilt the full-text index") {
		t.Errorf("opening it with 2 context turns logged:\n%s\nwant a note that it re-indexes 3 memories, then one that it is done", log.String())
	}
}

// TestOpen_BusyNamesTheLock: a database whose write lock another process
// holds past the busy timeout fails to open with an error that says so,
// not SQLite's bare "database is locked".
func TestOpen_BusyNamesTheLock(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := newDatabase(t)
	db := rawDB(t, path)
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `ROLLBACK`)
	s, err := Open(ctx, path, Options{BusyTimeout: 100 * time.Millisecond})
	if err == nil {
		s.Close()
		t.Fatal("Open succeeded while another connection held the write lock")
	}
	code, ok := sqlitedb.Code(err)
	if !ok || sqlitedb.Primary(code) != sqlitedb.CodeBusy || !strings.Contains(err.Error(), "write lock") || !strings.Contains(err.Error(), path) {
		t.Errorf("Open = %v (code %d), want SQLITE_BUSY wrapped in an error naming the lock and %s", err, code, path)
	}
}

func TestOpen_RefusesNewerSchema(t *testing.T) {
	t.Parallel()
	path := newDatabase(t)
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

	seq0, err := b.Sequence(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	ms := storetest.GenerateMemories(1, "alice", 3, 8)
	ms[0].Content = "the platypus lays eggs"
	if err := a.Insert(ctx, ms); err != nil {
		t.Fatal(err)
	}
	cs, err := b.Changes(ctx, store.ChangesParams{Profile: "alice", Since: seq0})
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
	cs2, err := a.Changes(ctx, store.ChangesParams{Profile: "alice", Since: cs.Seq})
	if err != nil || len(cs2.Upserts) != 1 || cs2.Upserts[0].ID != ms[1].ID || !slices.Equal(cs2.Deleted, []string{ms[2].ID}) {
		t.Errorf("a.Changes after b's writes = %v / %v, %v", cs2.Upserts, cs2.Deleted, err)
	}
	hits, err = a.Lexical(ctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: store.MatchQuery{Terms: []string{"echidna"}}})
	if err != nil || len(hits) != 1 || hits[0].ID != ms[1].ID {
		t.Errorf("a.Lexical(echidna) = %v, %v", hits, err)
	}
	sa, errA := a.Sequence(ctx, "")
	sb, errB := b.Sequence(ctx, "")
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
				if _, err := s.Changes(ctx, store.ChangesParams{Profile: "bob"}); err != nil {
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
		{"OneTerm", store.MatchQuery{Terms: []string{"apples"}}, `"appl"`},
		{"Any", store.MatchQuery{Terms: []string{"Red", "apple"}}, `"red" OR "appl"`},
		{"All", store.MatchQuery{Terms: []string{"red", "apple"}, All: true}, `"red" "appl"`},
		{"Phrase", store.MatchQuery{Terms: []string{"New York's cafés"}}, `"new york s cafe"`},
		{"Operators", store.MatchQuery{Terms: []string{"AND", "NEAR(", "*"}, All: true}, `"and" "near" ""`},
		{"Quotes", store.MatchQuery{Terms: []string{`a"b`, `"`}}, `"a b" OR ""`},
		{"NUL", store.MatchQuery{Terms: []string{"salt\x00pepper", "\x00"}}, `"salt pepper" OR ""`},
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

// TestOpen_PrivateFiles: a new database, its -wal and -shm files are
// readable by their owner alone (0600), and the directories Open creates
// are 0700; an existing directory keeps its mode.
func TestOpen_PrivateFiles(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	path := filepath.Join(base, "new", "dir", "mnemo.db")
	s := openPath(t, path)
	if err := s.Insert(t.Context(), []mnemotype.Memory{testMemory("alice", "m1", "a private memory")}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if mode := st.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s: mode %o, want 600", filepath.Base(f), mode)
		}
	}
	for _, d := range []string{filepath.Join(base, "new"), filepath.Join(base, "new", "dir")} {
		st, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if mode := st.Mode().Perm(); mode != 0o700 {
			t.Errorf("%s: mode %o, want 700", d, mode)
		}
	}
}

// TestOpen_MustExist: with MustExist (and ReadOnly) a missing database is
// an ErrNotFound error naming the path, and nothing is created.
func TestOpen_MustExist(t *testing.T) {
	t.Parallel()
	for _, opt := range []Options{{MustExist: true}, {ReadOnly: true}} {
		path := filepath.Join(t.TempDir(), "typo", "mnemo.db")
		s, err := Open(t.Context(), path, opt)
		if err == nil {
			s.Close()
		}
		if !errors.Is(err, mnemotype.ErrNotFound) || !strings.Contains(err.Error(), path) {
			t.Errorf("%+v: Open of a missing file: %v, want ErrNotFound naming the path", opt, err)
		}
		if _, err := os.Stat(filepath.Dir(path)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%+v: Open created %s", opt, filepath.Dir(path))
		}
	}
}

// TestOpen_ReadOnlyFile: a database file this process may not write is
// opened for reading: everything reads as before, and a write fails with
// ErrReadOnly naming the file instead of a driver's message.
func TestOpen_ReadOnlyFile(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	s := openPath(t, path)
	if err := s.Insert(ctx, []mnemotype.Memory{testMemory("alice", "m1", "the walrus reads")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o400); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// root writes files whatever their mode; an immutable file it may not.
		if out, err := exec.Command("chattr", "+i", path).CombinedOutput(); err != nil {
			t.Skipf("running as root and chattr +i failed (%v: %s): no way to make the file read-only", err, out)
		}
		t.Cleanup(func() { _ = exec.Command("chattr", "-i", path).Run() })
	}
	if writable(path) {
		t.Fatal("the file is still writable")
	}
	ro, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatalf("Open of a read-only file: %v", err)
	}
	defer ro.Close()
	if got, err := ro.Get(ctx, store.GetParams{Profile: "alice", IDs: []string{"m1"}}); err != nil || len(got) != 1 {
		t.Errorf("Get = %v, %v", got, err)
	}
	hits, err := ro.Lexical(ctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: store.MatchQuery{Terms: []string{"walrus"}}, Limit: 3})
	if err != nil || len(hits) != 1 {
		t.Errorf("Lexical = %v, %v", hits, err)
	}
	err = ro.Insert(ctx, []mnemotype.Memory{testMemory("alice", "m2", "no room")})
	if !errors.Is(err, mnemotype.ErrReadOnly) || !strings.Contains(err.Error(), path) {
		t.Errorf("Insert into a read-only store: %v, want ErrReadOnly naming the file", err)
	}
	if err := ro.RecordAccess(ctx, []store.Access{{Profile: "alice", ID: "m1", At: time.Now(), Count: 1}}); !errors.Is(err, mnemotype.ErrReadOnly) {
		t.Errorf("RecordAccess on a read-only store: %v, want ErrReadOnly", err)
	}
}

// TestStore_ConformanceContext runs the context field's conformance group
// on a store indexing one previous turn.
func TestStore_ConformanceContext(t *testing.T) {
	storetest.ExerciseContext(t, func(t *testing.T) store.Store {
		s, err := Open(t.Context(), filepath.Join(t.TempDir(), "mnemo.db"), Options{ContextTurns: 1})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestOpen_ContextTurnsAreTheDatabases: a new database indexes
// DefaultContextTurns (1);
// the number asked for is kept in the database, so a store opened without
// one (another process, the next run) indexes as the database does, and
// asking for another number rebuilds the index.
func TestOpen_ContextTurnsAreTheDatabases(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	withContext := store.FieldWeights{Content: 1, Context: 1}
	found := func(s *Store) []string {
		t.Helper()
		hits, err := s.Lexical(ctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: store.MatchQuery{Terms: []string{"zumba"}}, Fields: withContext})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, h := range hits {
			ids = append(ids, h.ID)
		}
		return ids
	}
	open := func(turns int) *Store {
		t.Helper()
		s, err := Open(ctx, path, Options{ContextTurns: turns})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open(0)
	at := time.Date(2023, 5, 8, 0, 0, 0, 0, time.UTC)
	if err := s.Insert(ctx, []mnemotype.Memory{
		{ID: "q", Profile: "alice", Session: "s1", Content: "Will you come to the zumba lesson?", Kind: mnemotype.KindEpisodic, CreatedAt: at, AccessedAt: at, OccurredAt: at},
		{ID: "a", Profile: "alice", Session: "s1", Content: "Sure, on Friday", Kind: mnemotype.KindEpisodic, CreatedAt: at, AccessedAt: at, OccurredAt: at},
	}); err != nil {
		t.Fatal(err)
	}
	if got := found(s); !slices.Equal(got, []string{"q", "a"}) {
		t.Errorf("a new database: %v, want [q a] (one turn of context)", got)
	}
	s.Close()
	for _, step := range []struct {
		turns int
		want  []string
	}{{-1, []string{"q"}}, {0, []string{"q"}}, {2, []string{"q", "a"}}, {0, []string{"q", "a"}}} {
		s := open(step.turns)
		if got := found(s); !slices.Equal(got, step.want) {
			t.Errorf("opened with ContextTurns %d: %v, want %v", step.turns, got, step.want)
		}
		s.Close()
	}
}

// TestDeleteProfile_AnotherStoresNumbers: a store that numbered a profile
// before another store (another process) deleted it numbers the profile's
// next memories afresh, so both stores find them with the new profile's
// statistics, and the index stays equal to its rebuild.
func TestDeleteProfile_AnotherStoresNumbers(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	a, b := openPath(t, path), openPath(t, path)
	at := time.Date(2023, 5, 8, 0, 0, 0, 0, time.UTC)
	mem := func(id, content string) mnemotype.Memory {
		return mnemotype.Memory{ID: id, Profile: "alice", Session: "s1", Actor: "Caroline", Kind: mnemotype.KindEpisodic, Content: content,
			Importance: 0.5, CreatedAt: at, AccessedAt: at, OccurredAt: at}
	}
	if err := a.Insert(ctx, []mnemotype.Memory{mem("old-1", "zebra crossing"), mem("old-2", "zebra migration")}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.DeleteProfile(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := a.Insert(ctx, []mnemotype.Memory{mem("new-1", "zebra again"), mem("new-2", "nothing")}); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*Store{"a": a, "b": b} {
		hits, err := s.Lexical(ctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice", Sessions: []string{"s1"}, Actors: []string{"Caroline"}},
			Match: store.MatchQuery{Terms: []string{"zebra"}}})
		if err != nil || len(hits) != 1 || hits[0].ID != "new-1" {
			t.Errorf("store %s: %v, %v; want new-1 alone", name, hits, err)
		}
	}
	checkProfileStats(t, a)
	if p, ok, err := readProfile(ctx, a.w, "alice"); err != nil || !ok || p.docs != 2 {
		t.Errorf("the new alice's statistics: %+v, %v, %v; want 2 documents", p, ok, err)
	}
}

// TestRecentSQL_Plans: inside sessions the pool query finds the sessions'
// rows by their index; for a profile or a project it walks the recency
// index, which is its order.
func TestRecentSQL_Plans(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	for _, tc := range []struct {
		scope mnemotype.Scope
		index string
	}{
		{mnemotype.Scope{Profile: "p"}, "memories_recent_embedded"},
		{mnemotype.Scope{Profile: "p", Project: "x"}, "memories_recent_embedded"},
		{mnemotype.Scope{Profile: "p", Sessions: []string{"s1"}}, "memories_turns"},
		{mnemotype.Scope{Profile: "p", Project: "x", Sessions: []string{"s1", "s2"}}, "memories_"},
	} {
		q, args := recentSQL(tc.scope, 10)
		rows, err := s.r.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		joined := strings.Join(plan, "; ")
		if !strings.Contains(joined, "INDEX "+tc.index) {
			t.Errorf("%+v: plan %q does not use %s", tc.scope, joined, tc.index)
		}
		if len(tc.scope.Sessions) > 0 && strings.Contains(joined, "memories_recent_embedded") {
			t.Errorf("%+v: plan %q walks the recency index", tc.scope, joined)
		}
	}
}

// endingContext reports context.Canceled from its Err once it has been
// asked left times, without closing Done: a caller that stops only when it
// checks Err, between rows.
type endingContext struct {
	context.Context
	left atomic.Int64
}

func (c *endingContext) Err() error {
	if c.left.Add(-1) < 0 {
		return context.Canceled
	}
	return c.Context.Err()
}

// TestInsert_LeavesItsBatchWhenItReturns: Insert tokenizes its batch on
// another goroutine (pretokenize); once it returns, even with an error
// part-way, the caller may reuse the batch (a race under -race otherwise).
func TestInsert_LeavesItsBatchWhenItReturns(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	mems := make([]mnemotype.Memory, 200)
	for i := range mems {
		mems[i] = testMemory("p", fmt.Sprintf("m%04d", i), strings.Repeat(fmt.Sprintf("words of memory %d ", i), 500))
	}
	mems[100].ID = "" // refused after 100 rows, while the contents after it are being tokenized
	if err := s.Insert(t.Context(), mems); !errors.Is(err, mnemotype.ErrInvalid) {
		t.Fatalf("Insert with an empty id = %v, want ErrInvalid", err)
	}
	for i := range mems {
		mems[i].Content = "reused"
	}
}

// TestInsert_StopsWhenItsContextEnds: Insert's rows run without their
// context's cancellation (rowContext), so it must check the context
// between rows: a context that ends part-way stops the insert with
// context.Canceled and nothing stored, and so does one cancelled while the
// transaction runs (or the insert completes whole); the store then takes
// the same batch.
func TestInsert_StopsWhenItsContextEnds(t *testing.T) {
	t.Parallel()
	batch := func(n int) []mnemotype.Memory {
		mems := make([]mnemotype.Memory, n)
		for i := range mems {
			mems[i] = testMemory("p", fmt.Sprintf("m%04d", i), fmt.Sprintf("memory number %d of the batch", i))
		}
		return mems
	}
	t.Run("ends between rows", func(t *testing.T) {
		t.Parallel()
		s := openTest(t)
		ctx := &endingContext{Context: t.Context()}
		ctx.left.Store(40)
		if err := s.Insert(ctx, batch(200)); !errors.Is(err, context.Canceled) {
			t.Fatalf("Insert: %v, want context.Canceled", err)
		}
		if n, err := s.Count(t.Context(), "p"); err != nil || n != 0 {
			t.Fatalf("Count after the cancelled insert: %d, %v; want 0", n, err)
		}
		if err := s.Insert(t.Context(), batch(200)); err != nil {
			t.Fatal(err)
		}
		if n, err := s.Count(t.Context(), "p"); err != nil || n != 200 {
			t.Fatalf("Count: %d, %v; want 200", n, err)
		}
	})
	t.Run("cancelled while it runs", func(t *testing.T) {
		t.Parallel()
		cancelled := 0
		for _, after := range []time.Duration{0, time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond, 10 * time.Millisecond} {
			s := openTest(t)
			ctx, cancel := context.WithCancel(t.Context())
			timer := time.AfterFunc(after, cancel)
			err := s.Insert(ctx, batch(3000))
			timer.Stop()
			cancel()
			n, cerr := s.Count(t.Context(), "p")
			switch {
			case cerr != nil:
				t.Fatal(cerr)
			case err == nil && n != 3000, err != nil && n != 0:
				t.Fatalf("cancel after %v: Insert %v and %d memories stored", after, err, n)
			case err != nil && !errors.Is(err, context.Canceled):
				t.Fatalf("cancel after %v: Insert: %v, want context.Canceled", after, err)
			case err != nil:
				cancelled++
			}
			if err := s.Insert(t.Context(), batch(3000)); err != nil && n == 0 {
				t.Fatalf("cancel after %v: the same batch again: %v", after, err)
			}
		}
		if cancelled == 0 {
			t.Fatal("no insert was cancelled: the test did not test")
		}
	})
	t.Run("record access ends between rows", func(t *testing.T) {
		t.Parallel()
		s := openTest(t)
		if err := s.Insert(t.Context(), batch(20)); err != nil {
			t.Fatal(err)
		}
		at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		acc := make([]store.Access, 20)
		for i := range acc {
			acc[i] = store.Access{Profile: "p", ID: fmt.Sprintf("m%04d", i), Count: 1, At: at}
		}
		ctx := &endingContext{Context: t.Context()}
		ctx.left.Store(8)
		if err := s.RecordAccess(ctx, acc); !errors.Is(err, context.Canceled) {
			t.Fatalf("RecordAccess: %v, want context.Canceled", err)
		}
		sig, err := s.Signals(t.Context(), "p", []string{"m0000", "m0019"})
		if err != nil || len(sig) != 2 {
			t.Fatalf("Signals: %v, %v", sig, err)
		}
		for id, g := range sig {
			if g.AccessCount != 0 {
				t.Fatalf("%s: access count %d after a cancelled RecordAccess, want 0", id, g.AccessCount)
			}
		}
	})
}

// TestCopy_BatchesByBytes: store.Copy sizes its batches by what they hold
// (about 16 MiB), not by their count alone: long memories go in short
// batches, and every memory arrives.
func TestCopy_BatchesByBytes(t *testing.T) {
	t.Parallel()
	src, dst := openTest(t), openTest(t)
	const n, size = 300, 200 << 10
	mems := make([]mnemotype.Memory, n)
	for i := range mems {
		mems[i] = testMemory("p", fmt.Sprintf("m%03d", i), fmt.Sprintf("memory %d ", i)+strings.Repeat("x", size))
	}
	if err := src.Insert(t.Context(), mems); err != nil {
		t.Fatal(err)
	}
	var batches []int
	last := 0
	st, err := store.Copy(t.Context(), dst, src, store.CopyParams{BatchSize: 4000, Progress: func(_ string, copied, _ int) {
		batches = append(batches, copied-last)
		last = copied
	}})
	if err != nil || st.Memories != n {
		t.Fatalf("Copy: %+v, %v; want %d memories", st, err, n)
	}
	for _, b := range batches {
		if b*size > 17<<20 {
			t.Fatalf("batches %v: one holds %d memories of %d KiB, over 16 MiB", batches, b, size>>10)
		}
	}
	if got, err := dst.Count(t.Context(), "p"); err != nil || got != n {
		t.Fatalf("Count: %d, %v; want %d", got, err, n)
	}
}

// TestReportEnd: an error that came while ctx ended reports ctx's error
// (a statement fails with sql.ErrTxDone once database/sql rolled the
// transaction back for ctx); other errors, and any error under a live
// context, are left as they are.
func TestReportEnd(t *testing.T) {
	t.Parallel()
	ended, cancel := context.WithCancel(t.Context())
	cancel()
	other := errors.New("disk I/O error")
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want error
	}{
		{"ended, transaction done", ended, fmt.Errorf("insert memory m1: %w", sql.ErrTxDone), context.Canceled},
		{"ended, no error", ended, nil, nil},
		{"ended, its own error", ended, fmt.Errorf("insert memories: %w", context.Canceled), context.Canceled},
		{"live, transaction done", t.Context(), sql.ErrTxDone, sql.ErrTxDone},
		{"live, other", t.Context(), other, other},
	} {
		err := tc.err
		reportEnd(tc.ctx, "insert memories", &err)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestPointRead_ACancelledContextStops: the reads that run without their
// context's cancellation (pointRead) still refuse a context already done,
// and a Get of more ids than a point read takes stays cancellable.
func TestPointRead_ACancelledContextStops(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	if err := s.Insert(t.Context(), []mnemotype.Memory{testMemory("p", "m1", "a memory")}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	many := make([]string, maxPointReadIDs+1)
	for i := range many {
		many[i] = fmt.Sprint("m", i)
	}
	for name, read := range map[string]func(context.Context) error{
		"Versions": func(ctx context.Context) error { _, err := s.Versions(ctx, "p"); return err },
		"Sequence": func(ctx context.Context) error { _, err := s.Sequence(ctx, "p"); return err },
		"Settings": func(ctx context.Context) error { _, err := s.Settings(ctx, "p"); return err },
		"Get": func(ctx context.Context) error {
			_, err := s.Get(ctx, store.GetParams{Profile: "p", IDs: []string{"m1"}})
			return err
		},
		"GetMany": func(ctx context.Context) error {
			_, err := s.Get(ctx, store.GetParams{Profile: "p", IDs: many})
			return err
		},
	} {
		if err := read(t.Context()); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		if err := read(ctx); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v, want context.Canceled", name, err)
		}
	}
}
