package sqlitedb

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestOpen(t *testing.T) {
	t.Parallel()
	// A directory name with URI metacharacters must not cut the path short.
	dir := filepath.Join(t.TempDir(), "a#b?c%d")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "x.db")
	db, err := Open(path, Options{Immediate: true, Pragmas: []string{
		"busy_timeout=1234", "journal_mode=WAL", "mmap_size=1048576", "cache_size=-4096",
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(2) // pragmas must hold on every connection, not just the first
	want := map[string]string{"busy_timeout": "1234", "journal_mode": "wal", "mmap_size": "1048576", "cache_size": "-4096"}
	for name, v := range want {
		var got string
		if err := db.QueryRow("PRAGMA " + name).Scan(&got); err != nil {
			t.Fatalf("%s (%s): %v", name, Driver, err)
		}
		if got != v {
			t.Errorf("PRAGMA %s = %s, want %s (%s)", name, got, v, Driver)
		}
	}
	var fts int
	if err := db.QueryRow(`SELECT sqlite_compileoption_used('ENABLE_FTS5')`).Scan(&fts); err != nil || fts != 1 {
		t.Errorf("FTS5 compiled in = %d (%v), want 1 (%s)", fts, err, Driver)
	}
	if _, err := db.Exec(`CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61')`); err != nil {
		t.Fatalf("create FTS5 table: %v", err)
	}
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`INSERT INTO t(body) VALUES ('running dogs')`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM t WHERE t MATCH 'run'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("porter MATCH: %d rows (%v), want 1", n, err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("database not at %s: %v", path, err)
	}
}

func TestOpen_BadPragma(t *testing.T) {
	t.Parallel()
	db, err := Open(filepath.Join(t.TempDir(), "x.db"), Options{Pragmas: []string{"journal_mode=WAL", "no_such(("}})
	if err == nil {
		err = db.Ping()
		db.Close()
	}
	if err == nil {
		t.Fatalf("a malformed pragma opened without error (%s)", Driver)
	}
}

// TestEnableWAL: the switch waits out another connection's lock (within
// the timeout) instead of failing at once, and reports a lock held past it.
func TestEnableWAL(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "x.db")
	holder, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	lock := func() *sql.Conn {
		t.Helper()
		c, err := holder.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ExecContext(ctx, `BEGIN EXCLUSIVE`); err != nil {
			t.Fatal(err)
		}
		return c
	}
	// A short busy timeout: the retries, not SQLite's busy handler, must
	// do the waiting.
	db, err := Open(path, Options{Pragmas: []string{"busy_timeout=20"}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Connect before the lock is taken: opening a connection reads the
	// schema, which an exclusive lock in rollback mode blocks as well.
	db.SetMaxOpenConns(1)
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}

	c := lock()
	if err := EnableWAL(ctx, db, 100*time.Millisecond); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Errorf("EnableWAL under a lock held past the timeout = %v, want a lock error", err)
	}
	go func() {
		time.Sleep(150 * time.Millisecond)
		c.ExecContext(ctx, `ROLLBACK`)
		c.Close()
	}()
	if err := EnableWAL(ctx, db, 10*time.Second); err != nil {
		t.Fatalf("EnableWAL after the lock is released: %v (%s)", err, Driver)
	}
	other, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	var mode string
	if err := other.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("a new connection sees journal_mode %q (%v), want wal", mode, err)
	}
}

func TestVarint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   []byte
		v    uint64
		size int
	}{
		{[]byte{0x05}, 5, 1},
		{[]byte{0x7F, 0xFF}, 127, 1},
		{[]byte{0x81, 0x00}, 128, 2},
		{[]byte{0x82, 0x80, 0x01}, 1<<15 | 1, 3},
		{[]byte{0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}, 1<<64 - 1, 9},
		{[]byte{0x81}, 0, 0}, // cut short
		{nil, 0, 0},
	} {
		if v, n := varint(tc.in); v != tc.v || n != tc.size {
			t.Errorf("varint(% x) = %d, %d; want %d, %d", tc.in, v, n, tc.v, tc.size)
		}
	}
}

// TestDocLengths: per rowid, the whole row's length or each column's
// asked for, in their order, as FTS5 counts tokens (porter stemming,
// punctuation dropped), 0xFFFF for rowids without a row.
func TestDocLengths(t *testing.T) {
	t.Parallel()
	db, err := Open(filepath.Join(t.TempDir(), "x.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if got, err := DocLengths(t.Context(), db, "nope"); err == nil {
		t.Errorf("DocLengths of a missing table = %v, want an error", got)
	}
	if _, err := db.Exec(`CREATE VIRTUAL TABLE t USING fts5(body, tag, tokenize='porter unicode61')`); err != nil {
		t.Fatal(err)
	}
	if got, err := DocLengths(t.Context(), db, "t"); err != nil || got != nil {
		t.Errorf("DocLengths of an empty table = %v, %v; want nil", got, err)
	}
	for id, body := range map[int]string{1: "rivers flow, and flow!", 2: "x", 4: strings.Repeat("word ", 300)} {
		if _, err := db.Exec(`INSERT INTO t(rowid, body, tag) VALUES (?, ?, 'p1 s2')`, id, body); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		columns []int
		want    []uint16
	}{
		{nil, []uint16{0xFFFF, 6, 3, 0xFFFF, 302}},
		{[]int{0}, []uint16{0xFFFF, 4, 1, 0xFFFF, 300}},
		{[]int{1}, []uint16{0xFFFF, 2, 2, 0xFFFF, 2}},
		{[]int{1, 0}, []uint16{0xFFFF, 0xFFFF, 2, 4, 2, 1, 0xFFFF, 0xFFFF, 2, 300}},
	} {
		got, err := DocLengths(t.Context(), db, "t", tc.columns...)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2*len(tc.want) {
			t.Fatalf("columns %v: DocLengths = % x, want %d lengths", tc.columns, got, len(tc.want))
		}
		for i, w := range tc.want {
			if g := uint16(got[2*i]) | uint16(got[2*i+1])<<8; g != w {
				t.Errorf("columns %v: length %d: %d, want %d", tc.columns, i, g, w)
			}
		}
	}
}
