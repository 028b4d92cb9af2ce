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
	"encoding/binary"
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
	// ReadOnly opens the file for reading only (SQLite's mode=ro): it must
	// exist, and no connection can write it.
	ReadOnly bool
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

// Querier is what DocLengths reads through: a pool, a connection or a
// transaction.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// MaxDocLengthRowid bounds the rowids DocLengths covers, at 2 bytes per
// rowid and column: SQLite copies a bound BLOB, so the lengths cost a copy
// per statement (8 MiB per column at this bound; 200 KB at 100k
// memories).
const MaxDocLengthRowid = 4 << 20

// DocLengths reads the length in tokens of every row of the FTS5 table
// (from its %_docsize table, so the table must keep column sizes, FTS5's
// default) into the lengths BLOB of RankFunction: per rowid up to the
// largest, one little-endian uint16 per column of columns (0-based), in
// that order, or the whole row's length when columns is empty; 0xFFFF for
// rowids without a row and for lengths past 65,534. It returns nil when
// the largest rowid passes MaxDocLengthRowid.
func DocLengths(ctx context.Context, q Querier, table string, columns ...int) ([]byte, error) {
	name := `"` + strings.ReplaceAll(table+"_docsize", `"`, `""`) + `"`
	var maxID sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT max(id) FROM `+name).Scan(&maxID); err != nil {
		return nil, fmt.Errorf("read %s row lengths: %w", table, err)
	}
	if !maxID.Valid || maxID.Int64 < 0 || maxID.Int64 >= MaxDocLengthRowid {
		return nil, nil
	}
	per := max(1, len(columns))
	out := make([]byte, 2*per*int(maxID.Int64+1))
	for i := range out {
		out[i] = 0xFF
	}
	rows, err := q.QueryContext(ctx, `SELECT id, sz FROM `+name)
	if err != nil {
		return nil, fmt.Errorf("read %s row lengths: %w", table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var sz []byte
		if err := rows.Scan(&id, &sz); err != nil {
			return nil, fmt.Errorf("read %s row lengths: %w", table, err)
		}
		if id < 0 || id > maxID.Int64 {
			continue // written since max(id) was read
		}
		// sz holds one varint per column; the row's length is their sum.
		var n uint64
		var cols [16]uint64
		for c := 0; len(sz) > 0; c++ {
			v, k := varint(sz)
			if k == 0 {
				return nil, fmt.Errorf("read %s row lengths: row %d: malformed size record", table, id)
			}
			n += v
			if c < len(cols) {
				cols[c] = v
			}
			sz = sz[k:]
		}
		at := 2 * per * int(id)
		if len(columns) == 0 {
			if n < 0xFFFF {
				binary.LittleEndian.PutUint16(out[at:], uint16(n))
			}
			continue
		}
		for i, c := range columns {
			if c >= 0 && c < len(cols) && cols[c] < 0xFFFF {
				binary.LittleEndian.PutUint16(out[at+2*i:], uint16(cols[c]))
			}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %s row lengths: %w", table, err)
	}
	return out, nil
}

// ColumnSize returns the length in tokens of column (0-based) from an
// FTS5 %_docsize record (one varint per column); ok is false when the
// record is malformed or has no such column.
func ColumnSize(sz []byte, column int) (n uint64, ok bool) {
	for c := 0; len(sz) > 0; c++ {
		v, k := varint(sz)
		if k == 0 {
			return 0, false
		}
		if c == column {
			return v, true
		}
		sz = sz[k:]
	}
	return 0, false
}

// varint decodes SQLite's variable-length integer (big-endian groups of
// seven bits, the ninth byte whole) at the start of b, returning its value
// and size, or size 0 when b ends first.
func varint(b []byte) (uint64, int) {
	var v uint64
	for i := 0; i < len(b) && i < 9; i++ {
		if i == 8 {
			return v<<8 | uint64(b[i]), 9
		}
		v = v<<7 | uint64(b[i]&0x7F)
		if b[i]&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}
