// Package fts5ref asks SQLite's FTS5 how it tokenizes text: it indexes
// documents in an FTS5 table and reads back, through an fts5vocab table of
// type 'instance', the term stored at each position of each document, and
// each document's length in tokens from the table's %_docsize records. It
// is the reference that ftstoken's tests and table generator compare with.
package fts5ref

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/mnemo-dev/mnemo/internal/sqlitedb"
)

// Doc is what FTS5 stored for one document.
type Doc struct {
	// Tokens holds the term stored at each position, 0 to Len-1.
	Tokens []string
	// Len is the document's length in tokens as FTS5 counts it for BM25.
	Len int
}

// DB is an SQLite database holding one FTS5 table per tokenizer asked
// about, contentless (the index alone). It is not safe for concurrent use.
type DB struct {
	db     *sql.DB
	tables map[string]string // tokenize argument → table name
	rowid  int64             // the last rowid used
}

// Open opens (creating) the database file at path with the driver of this
// build.
func Open(path string) (*DB, error) {
	db, err := sqlitedb.Open(path, sqlitedb.Options{Pragmas: []string{"journal_mode=OFF", "synchronous=OFF"}})
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return &DB{db: db, tables: map[string]string{}}, nil
}

// Close closes the database.
func (d *DB) Close() error { return d.db.Close() }

// Driver names the SQLite driver that answers.
func (d *DB) Driver() string { return sqlitedb.Driver }

// Version returns the version of the SQLite library that answers.
func (d *DB) Version(ctx context.Context) (string, error) {
	var v string
	if err := d.db.QueryRowContext(ctx, `SELECT sqlite_version()`).Scan(&v); err != nil {
		return "", fmt.Errorf("read SQLite version: %w", err)
	}
	return v, nil
}

// table returns the FTS5 table tokenizing with tokenize (an FTS5 tokenize
// option such as "porter unicode61"), creating it and its instance
// vocabulary table on first use.
func (d *DB) table(ctx context.Context, tokenize string) (string, error) {
	if name, ok := d.tables[tokenize]; ok {
		return name, nil
	}
	name := fmt.Sprintf("f%d", len(d.tables))
	for _, q := range []string{
		fmt.Sprintf(`CREATE VIRTUAL TABLE %s USING fts5(body, content='', tokenize='%s')`, name, strings.ReplaceAll(tokenize, "'", "''")),
		fmt.Sprintf(`CREATE VIRTUAL TABLE %s_v USING fts5vocab(%s, 'instance')`, name, name),
	} {
		if _, err := d.db.ExecContext(ctx, q); err != nil {
			return "", fmt.Errorf("create table for tokenize=%q: %w", tokenize, err)
		}
	}
	d.tables[tokenize] = name
	return name, nil
}

// Tokenize indexes docs with the FTS5 tokenizer tokenize and returns what
// FTS5 stored for each, in order. The rows are deleted again before it
// returns. It fails if a position below a document's length holds no term
// or two terms, or a position past it a term.
func (d *DB) Tokenize(ctx context.Context, tokenize string, docs []string) ([]Doc, error) {
	name, err := d.table(ctx, tokenize)
	if err != nil {
		return nil, err
	}
	first := d.rowid + 1
	d.rowid += int64(len(docs))
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it does nothing
	ins, err := tx.PrepareContext(ctx, `INSERT INTO `+name+`(rowid, body) VALUES (?, ?)`)
	if err != nil {
		return nil, fmt.Errorf("prepare insert: %w", err)
	}
	defer ins.Close()
	for i, doc := range docs {
		if _, err := ins.ExecContext(ctx, first+int64(i), doc); err != nil {
			return nil, fmt.Errorf("insert document %d: %w", i, err)
		}
	}
	out := make([]Doc, len(docs))
	if err := readSizes(ctx, tx, name, first, out); err != nil {
		return nil, err
	}
	if err := readTerms(ctx, tx, name, first, out); err != nil {
		return nil, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO `+name+`(`+name+`) VALUES ('delete-all')`); err != nil {
		return nil, fmt.Errorf("delete documents: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	return out, nil
}

// readTerms sets the tokens of each document from the table's instance
// vocabulary, checking that each position below the document's length
// holds exactly one term. The terms come concatenated, one row per
// document (a term never holds a NUL byte: the tokenizer drops it), which
// spares the driver a row per term.
func readTerms(ctx context.Context, tx *sql.Tx, name string, first int64, out []Doc) error {
	rows, err := tx.QueryContext(ctx, `SELECT doc, count(*), count(DISTINCT offset), min(offset), max(offset),
		group_concat(term, char(0) ORDER BY offset) FROM `+name+`_v GROUP BY doc`)
	if err != nil {
		return fmt.Errorf("read instances: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var doc int64
		var n, distinct, lo, hi int
		var terms string
		if err := rows.Scan(&doc, &n, &distinct, &lo, &hi, &terms); err != nil {
			return fmt.Errorf("read instances: %w", err)
		}
		i := doc - first
		if i < 0 || i >= int64(len(out)) {
			return fmt.Errorf("read instances: unexpected rowid %d", doc)
		}
		if n != out[i].Len || distinct != n || lo != 0 || hi != n-1 {
			return fmt.Errorf("document %d of length %d: %d terms at %d positions from %d to %d", i, out[i].Len, n, distinct, lo, hi)
		}
		out[i].Tokens = strings.Split(terms, "\x00")
		if len(out[i].Tokens) != n {
			return fmt.Errorf("document %d: %d terms read as %d", i, n, len(out[i].Tokens))
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read instances: %w", err)
	}
	for i := range out {
		if out[i].Len > 0 && out[i].Tokens == nil {
			return fmt.Errorf("document %d of length %d: no terms", i, out[i].Len)
		}
	}
	return nil
}

// readSizes sets the length of each document from the table's %_docsize
// records (one varint per column; the table has one column).
func readSizes(ctx context.Context, tx *sql.Tx, name string, first int64, out []Doc) error {
	rows, err := tx.QueryContext(ctx, `SELECT id, sz FROM `+name+`_docsize`)
	if err != nil {
		return fmt.Errorf("read sizes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var sz []byte
		if err := rows.Scan(&id, &sz); err != nil {
			return fmt.Errorf("read sizes: %w", err)
		}
		i := id - first
		if i < 0 || i >= int64(len(out)) {
			return fmt.Errorf("read sizes: unexpected rowid %d", id)
		}
		n, k := varint(sz)
		if k == 0 || k != len(sz) {
			return fmt.Errorf("read sizes: row %d: malformed size record %x", id, sz)
		}
		out[i].Len = int(n)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read sizes: %w", err)
	}
	return nil
}

// varint decodes SQLite's variable-length integer at the start of b,
// returning its value and size, or size 0 when b ends first.
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
