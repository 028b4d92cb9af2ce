package sqlitestore

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/mnemo-dev/mnemo/internal/sqlitedb"
	"github.com/mnemo-dev/mnemo/mnemotype"
)

// The full-text index (memories_fts) is contentless: the store writes it
// next to every change of a memory's content or scope, in the same
// transaction. Its first column is the content; its second, scope, holds
// the row's place as tokens that FTS5 matches like words:
//
//	p<profile id> k<kind number> s<session id, 0 without one> [j<project id>]
//
// with the ids of table profiles and scope_names. A query then selects one
// profile's rows, or one session's, inside FTS5, without reading other
// rows of the table. Every token ends in a digit, which the porter stemmer
// leaves alone, and user terms are confined to the content column, so a
// word such as "p7" in a memory or a query never meets them.
//
// Each profile keeps its own BM25 statistics in its row of profiles: docs
// (memories indexed) and tokens (their content's length in tokens, as
// FTS5 counts it), and seq, a counter advanced by every change of the
// profile's index. Document frequencies are counted per profile and
// cached by seq (see lexical.go): a profile's scores never depend on
// another profile's memories.

// Column numbers of memories_fts.
const (
	ftsContent = 0
	ftsScope   = 1
)

// kindNumbers numbers the kinds for the scope column.
var kindNumbers = map[mnemotype.Kind]int{mnemotype.KindEpisodic: 1, mnemotype.KindSemantic: 2, mnemotype.KindIdentity: 3}

// Scope-name fields of table scope_names.
const (
	fieldProject = "project"
	fieldSession = "session"
)

// queryer is what reading helpers run through: the reader pool, a read
// transaction or the writer's transaction.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// profileStats is a profile's row of table profiles.
type profileStats struct {
	id, seq, docs, tokens int64
}

// readProfile returns name's row; ok is false when the profile has never
// held a memory.
func readProfile(ctx context.Context, q queryer, name string) (p profileStats, ok bool, err error) {
	err = q.QueryRowContext(ctx, `SELECT id, seq, docs, tokens FROM profiles WHERE name = ?`, name).Scan(&p.id, &p.seq, &p.docs, &p.tokens)
	if err == sql.ErrNoRows {
		return p, false, nil
	}
	if err != nil {
		return p, false, fmt.Errorf("read profile %q: %w", name, err)
	}
	return p, true, nil
}

// indexer writes index rows inside one write transaction, numbering the
// profiles and scope names it meets (once each) and adding up each
// profile's change of statistics, which flush writes.
type indexer struct {
	tx       *sql.Tx
	profiles map[string]int64
	names    map[scopeKey]int64
	delta    map[int64]*statsDelta
}

type scopeKey struct {
	profile     int64
	field, name string
}

type statsDelta struct{ docs, tokens int64 }

func newIndexer(tx *sql.Tx) *indexer {
	return &indexer{tx: tx, profiles: map[string]int64{}, names: map[scopeKey]int64{}, delta: map[int64]*statsDelta{}}
}

// profileID returns name's number, creating its row if needed.
func (ix *indexer) profileID(ctx context.Context, name string) (int64, error) {
	if id, ok := ix.profiles[name]; ok {
		return id, nil
	}
	var id int64
	err := ix.tx.QueryRowContext(ctx, `INSERT INTO profiles(name) VALUES (?)
		ON CONFLICT(name) DO UPDATE SET name = excluded.name RETURNING id`, name).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("number profile %q: %w", name, mapErr(err))
	}
	ix.profiles[name] = id
	return id, nil
}

// nameID returns the number of a project or session name of a profile,
// creating its row if needed.
func (ix *indexer) nameID(ctx context.Context, profile int64, field, name string) (int64, error) {
	k := scopeKey{profile, field, name}
	if id, ok := ix.names[k]; ok {
		return id, nil
	}
	var id int64
	err := ix.tx.QueryRowContext(ctx, `INSERT INTO scope_names(profile_id, field, name) VALUES (?, ?, ?)
		ON CONFLICT(profile_id, field, name) DO UPDATE SET name = excluded.name RETURNING id`, profile, field, name).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("number %s %q: %w", field, name, mapErr(err))
	}
	ix.names[k] = id
	return id, nil
}

// scopeText renders the scope column of a memory of profile pid.
func (ix *indexer) scopeText(ctx context.Context, pid int64, m *mnemotype.Memory) (string, error) {
	var b strings.Builder
	b.WriteString("p" + strconv.FormatInt(pid, 10) + " k" + strconv.Itoa(kindNumbers[m.Kind]) + " s")
	if m.Session == "" {
		b.WriteString("0")
	} else {
		id, err := ix.nameID(ctx, pid, fieldSession, m.Session)
		if err != nil {
			return "", err
		}
		b.WriteString(strconv.FormatInt(id, 10))
	}
	if m.Project != "" {
		id, err := ix.nameID(ctx, pid, fieldProject, m.Project)
		if err != nil {
			return "", err
		}
		b.WriteString(" j" + strconv.FormatInt(id, 10))
	}
	return b.String(), nil
}

// add indexes memory m stored under rowid rid.
func (ix *indexer) add(ctx context.Context, rid int64, m *mnemotype.Memory) error {
	pid, err := ix.profileID(ctx, m.Profile)
	if err != nil {
		return err
	}
	scope, err := ix.scopeText(ctx, pid, m)
	if err != nil {
		return err
	}
	if _, err := ix.tx.ExecContext(ctx, `INSERT INTO memories_fts(rowid, content, scope) VALUES (?, ?, ?)`, rid, m.Content, scope); err != nil {
		return fmt.Errorf("index memory %s: %w", m.ID, mapErr(err))
	}
	n, err := contentLength(ctx, ix.tx, rid)
	if err != nil {
		return fmt.Errorf("index memory %s: %w", m.ID, err)
	}
	ix.change(pid, 1, n)
	return nil
}

// remove takes rowid rid, a memory of profile, out of the index.
func (ix *indexer) remove(ctx context.Context, rid int64, profile string) error {
	pid, err := ix.profileID(ctx, profile)
	if err != nil {
		return err
	}
	n, err := contentLength(ctx, ix.tx, rid)
	if err != nil {
		return err
	}
	if _, err := ix.tx.ExecContext(ctx, `DELETE FROM memories_fts WHERE rowid = ?`, rid); err != nil {
		return fmt.Errorf("unindex row %d: %w", rid, mapErr(err))
	}
	ix.change(pid, -1, -n)
	return nil
}

func (ix *indexer) change(pid, docs, tokens int64) {
	d := ix.delta[pid]
	if d == nil {
		d = &statsDelta{}
		ix.delta[pid] = d
	}
	d.docs += docs
	d.tokens += tokens
}

// flush writes each touched profile's statistics and advances its seq.
func (ix *indexer) flush(ctx context.Context) error {
	for pid, d := range ix.delta {
		if _, err := ix.tx.ExecContext(ctx, `UPDATE profiles SET seq = seq + 1, docs = docs + ?, tokens = tokens + ? WHERE id = ?`,
			d.docs, d.tokens, pid); err != nil {
			return fmt.Errorf("update profile statistics: %w", mapErr(err))
		}
	}
	clear(ix.delta)
	return nil
}

// contentLength returns the length in tokens of the content of index row
// rid, as FTS5 recorded it (0 when the row is not indexed).
func contentLength(ctx context.Context, q queryer, rid int64) (int64, error) {
	var sz []byte
	err := q.QueryRowContext(ctx, `SELECT sz FROM memories_fts_docsize WHERE id = ?`, rid).Scan(&sz)
	if err == sql.ErrNoRows {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("read length of row %d: %w", rid, err)
	}
	n, ok := sqlitedb.ColumnSize(sz, ftsContent)
	if !ok {
		return 0, fmt.Errorf("read length of row %d: malformed size record", rid)
	}
	return int64(n), nil
}

// reindexAll fills an empty index from the memories table (migration 6),
// a page of rows at a time.
func reindexAll(ctx context.Context, tx *sql.Tx) error {
	ix := newIndexer(tx)
	for last := int64(-1 << 63); ; {
		page, err := reindexPage(ctx, tx, last)
		if err != nil {
			return fmt.Errorf("reindex: %w", err)
		}
		if len(page) == 0 {
			return ix.flush(ctx)
		}
		for i := range page {
			if err := ix.add(ctx, page[i].rid, &page[i].m); err != nil {
				return fmt.Errorf("reindex: %w", err)
			}
		}
		last = page[len(page)-1].rid
	}
}

type ridMemory struct {
	rid int64
	m   mnemotype.Memory
}

// reindexPage reads the memories after rowid last, in rowid order.
func reindexPage(ctx context.Context, tx *sql.Tx, last int64) ([]ridMemory, error) {
	rows, err := tx.QueryContext(ctx, `SELECT rid, id, profile, project, session, kind, content FROM memories
		WHERE rid > ? ORDER BY rid LIMIT 5000`, last)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var page []ridMemory
	for rows.Next() {
		var r ridMemory
		var kind string
		if err := rows.Scan(&r.rid, &r.m.ID, &r.m.Profile, &r.m.Project, &r.m.Session, &kind, &r.m.Content); err != nil {
			return nil, err
		}
		r.m.Kind = mnemotype.Kind(kind)
		page = append(page, r)
	}
	return page, rows.Err()
}
