// Package sqlitedb opens SQLite databases with the driver this build links.
//
// Built with cgo and the tag sqlite_fts5 (as scripts/setup.sh and
// scripts/test.sh do), it uses github.com/mattn/go-sqlite3, the SQLite C
// library compiled with FTS5: full-text queries run about twice as fast as
// under the pure-Go driver (BM25 over an OR query at 10k memories: 1.43 ms
// against 3.01 ms, measured). Without the tag it uses modernc.org/sqlite, a
// translation of the same C code to Go, so a plain `go build` or `go install`
// still works, without a C compiler.
package sqlitedb

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"
)

// Options are applied to every connection of the pool.
type Options struct {
	// Pragmas are "name=value" pairs run in order on each new connection.
	// Put busy_timeout first. (For WAL, call EnableWAL once instead.)
	Pragmas []string
	// Immediate makes BEGIN take the write lock at once (BEGIN IMMEDIATE),
	// so a transaction never fails half-way on a lock upgrade.
	Immediate bool
}

// Open opens the database file at path (created if missing).
func Open(path string, o Options) (*sql.DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	// The path goes into a file: URI; escape it so '#', '?' or '%' in a
	// directory name cannot cut it short.
	db, err := open((&url.URL{Scheme: "file", Path: abs}).String(), o)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}

// EnableWAL switches the database to write-ahead logging. The mode belongs
// to the file, so once per open is enough and later connections inherit
// it; as a per-connection pragma it failed now and then when two processes
// created the same file at once ("database is locked": SQLite reports the
// lock conflict of the switch without calling the busy handler), so the
// switch is retried here for up to timeout.
func EnableWAL(ctx context.Context, db *sql.DB, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		var mode string
		err := db.QueryRowContext(ctx, `PRAGMA journal_mode=WAL`).Scan(&mode)
		switch {
		case err == nil && strings.EqualFold(mode, "wal"):
			return nil
		case err == nil:
			return fmt.Errorf("enable WAL: the database stays in journal mode %q", mode)
		case !strings.Contains(err.Error(), "database is locked") || time.Now().After(deadline):
			return fmt.Errorf("enable WAL: %w", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("enable WAL: %w", ctx.Err())
		case <-time.After(wait):
		}
	}
}
