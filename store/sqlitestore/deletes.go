package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
)

// DeleteMatching implements store.Store in one write transaction: the rows
// go, each leaves the index as Delete's does (its profile's statistics
// follow, and the turns after it are indexed with their new context), and
// each gets a tombstone for other processes' change feeds.
func (s *Store) DeleteMatching(ctx context.Context, p store.DeleteParams) (int, error) {
	if p.Unfiltered() {
		return 0, mnemotype.Invalidf("delete: give a project, a session, actors, kinds, a time range or a metadata filter (deleting a whole profile is DeleteProfile)")
	}
	w, err := s.writer()
	if err != nil {
		return 0, err
	}
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("delete memories: %w", err)
	}
	defer tx.Rollback()
	sc := mnemotype.Scope{Profile: p.Profile, Project: p.Project, Actors: p.Actors, After: p.After, Before: p.Before, Metadata: p.Metadata, Kinds: p.Kinds}
	if p.Session != "" {
		sc.Sessions = []string{p.Session}
	}
	cond, args := scopeSQL("m", sc)
	rows, err := tx.QueryContext(ctx, `DELETE FROM memories AS m WHERE `+cond+` RETURNING rid, id, session, session_seq`, args...)
	if err != nil {
		return 0, fmt.Errorf("delete memories: %w", mapErr(err))
	}
	type gone struct {
		rid int64
		m   mnemotype.Memory
	}
	var deleted []gone
	for rows.Next() {
		g := gone{m: mnemotype.Memory{Profile: p.Profile}}
		if err := rows.Scan(&g.rid, &g.m.ID, &g.m.Session, &g.m.Seq); err != nil {
			rows.Close()
			return 0, fmt.Errorf("delete memories: %w", err)
		}
		deleted = append(deleted, g)
	}
	if err := rows.Close(); err != nil {
		return 0, fmt.Errorf("delete memories: %w", mapErr(err))
	}
	if len(deleted) == 0 {
		return 0, nil
	}
	ix, err := s.newWriteIndexer(ctx, tx)
	if err != nil {
		return 0, fmt.Errorf("delete memories: %w", err)
	}
	for i := range deleted {
		if err := ix.remove(ctx, deleted[i].rid, &deleted[i].m); err != nil {
			return 0, fmt.Errorf("delete memory %s: %w", deleted[i].m.ID, err)
		}
	}
	if err := ix.flush(ctx); err != nil {
		return 0, fmt.Errorf("delete memories: %w", err)
	}
	first, err := nextSeq(ctx, tx, len(deleted))
	if err != nil {
		return 0, err
	}
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO tombstones(seq, profile, id) VALUES (?,?,?)`)
	if err != nil {
		return 0, fmt.Errorf("delete memories: %w", err)
	}
	defer stmt.Close()
	for i, g := range deleted {
		if _, err := stmt.ExecContext(ctx, first+int64(i), p.Profile, g.m.ID); err != nil {
			return 0, fmt.Errorf("delete memories: %w", mapErr(err))
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("delete memories: commit: %w", mapErr(err))
	}
	s.ids.learn(ix)
	return len(deleted), nil
}

// deletedProfileName is the name a deleted profile's row of table profiles
// keeps: no profile can be named so (names are printable), and keeping the
// row keeps its number from ever being given to another profile, whose
// statistics another process may still hold cached under that number.
func deletedProfileName(id int64) string { return "\x00deleted\x00" + strconv.FormatInt(id, 10) }

// DeleteProfile implements store.Store in one write transaction. The API
// keys are revoked rather than removed: as long as any key exists the
// server requires keys, and deleting a profile must not reopen it.
func (s *Store) DeleteProfile(ctx context.Context, profile string) (store.ProfileDeletion, error) {
	var out store.ProfileDeletion
	w, err := s.writer()
	if err != nil {
		return out, err
	}
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return out, fmt.Errorf("delete profile: %w", err)
	}
	defer tx.Rollback()
	var pid int64
	switch err := tx.QueryRowContext(ctx, `SELECT id FROM profiles WHERE name = ?`, profile).Scan(&pid); {
	case errors.Is(err, sql.ErrNoRows):
		pid = 0 // never indexed a memory
	case err != nil:
		return out, fmt.Errorf("delete profile: %w", err)
	}
	var n int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM memories WHERE profile = ?`, profile).Scan(&n); err != nil {
		return out, fmt.Errorf("delete profile: count memories: %w", err)
	}
	out.Memories = int(n)
	steps := []struct {
		what string
		q    string
		args []any
	}{
		{"unindex memories", `DELETE FROM memories_lex WHERE rowid IN (SELECT rid FROM memories WHERE profile = ?)`, []any{profile}},
		{"delete memories", `DELETE FROM memories WHERE profile = ?`, []any{profile}},
		{"delete names", `DELETE FROM scope_names WHERE profile_id = ?`, []any{pid}},
		{"retire statistics", `UPDATE profiles SET name = ?, seq = seq + 1, docs = 0, content_tokens = 0, actor_tokens = 0, time_tokens = 0,
			context_tokens = 0 WHERE id = ?`, []any{deletedProfileName(pid), pid}},
		{"count the deletion", `INSERT INTO counters(name, value) VALUES ('profile_deletions', 1)
			ON CONFLICT(name) DO UPDATE SET value = value + 1`, nil},
	}
	if n > 0 {
		first, err := nextSeq(ctx, tx, int(n))
		if err != nil {
			return out, err
		}
		// Before the rows go: one tombstone per memory, in rowid order.
		steps = append([]struct {
			what string
			q    string
			args []any
		}{{"write tombstones", `INSERT INTO tombstones(seq, profile, id)
			SELECT ? + row_number() OVER (ORDER BY rid) - 1, profile, id FROM memories WHERE profile = ?`, []any{first, profile}}}, steps...)
	}
	for _, st := range steps {
		if _, err := tx.ExecContext(ctx, st.q, st.args...); err != nil {
			return out, fmt.Errorf("delete profile: %s: %w", st.what, mapErr(err))
		}
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM settings WHERE profile = ?`, profile)
	if err != nil {
		return out, fmt.Errorf("delete profile: delete settings: %w", mapErr(err))
	}
	settings, _ := res.RowsAffected()
	res, err = tx.ExecContext(ctx, `UPDATE api_keys SET profile = ?, name = '', revoked_at = coalesce(revoked_at, ?) WHERE profile = ?`,
		deletedProfileName(pid), time.Now().UnixNano(), profile)
	if err != nil {
		return out, fmt.Errorf("delete profile: revoke keys: %w", mapErr(err))
	}
	keys, _ := res.RowsAffected()
	out.Settings, out.Keys = int(settings), int(keys)
	if err := tx.Commit(); err != nil {
		return out, fmt.Errorf("delete profile: commit: %w", mapErr(err))
	}
	return out, nil
}
