package sqlitedb

import (
	"os"
	"path/filepath"
	"testing"
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
