package postgres

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
)

// args collects a statement's parameters, numbering them.
type args []any

// add appends v and returns its placeholder.
func (a *args) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// memoryCols are a memory's columns on alias m, in scanMemory's order.
const memoryCols = `m.id, m.profile, m.project, m.session, m.session_seq, m.actor, m.kind, m.content, m.importance,
	m.occurred_at, m.occurred_ns, m.created_at, m.created_ns, m.accessed_at, m.accessed_ns, m.access_count,
	m.metadata::text, m.embedding_model`

func scanMemory(row pgx.Row, extra ...any) (mnemotype.Memory, error) {
	var m mnemotype.Memory
	var kind string
	var occurred, created, accessed time.Time
	var occNS, creNS, accNS int16
	var meta, model *string
	dest := append([]any{&m.ID, &m.Profile, &m.Project, &m.Session, &m.Seq, &m.Actor, &kind, &m.Content, &m.Importance,
		&occurred, &occNS, &created, &creNS, &accessed, &accNS, &m.AccessCount, &meta, &model}, extra...)
	if err := row.Scan(dest...); err != nil {
		return m, err
	}
	m.Kind = mnemotype.Kind(kind)
	m.OccurredAt, m.CreatedAt, m.AccessedAt = joinTime(occurred, occNS), joinTime(created, creNS), joinTime(accessed, accNS)
	if meta != nil {
		m.Metadata = json.RawMessage(*meta)
	}
	if model != nil {
		m.EmbeddingModel = *model
	}
	return m, nil
}

// readMemories runs q, which selects memoryCols and, with embeddings, the
// embedding, and returns the memories.
func readMemories(ctx context.Context, db querier, q string, withEmbedding bool, a args) ([]mnemotype.Memory, error) {
	rows, err := db.Query(ctx, q, a...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []mnemotype.Memory
	for rows.Next() {
		var blob []byte
		var extra []any
		if withEmbedding {
			extra = []any{&blob}
		}
		m, err := scanMemory(rows, extra...)
		if err != nil {
			return nil, err
		}
		if len(blob) > 0 {
			if m.Embedding, err = store.DecodeVector(blob); err != nil {
				return nil, fmt.Errorf("memory %s: %w", m.ID, err)
			}
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// querier is a pool, a connection or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, p store.GetParams) ([]mnemotype.Memory, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if len(p.IDs) == 0 {
		return nil, nil
	}
	cols := memoryCols
	if p.WithEmbedding {
		cols += ", m.embedding"
	}
	var a args
	q := `SELECT ` + cols + ` FROM memories m WHERE m.profile = ` + a.add(p.Profile) + ` AND m.id = ANY(` + a.add(p.IDs) + `)`
	ms, err := readMemories(ctx, s.reader(ctx), q, p.WithEmbedding, a)
	if err != nil {
		return nil, fmt.Errorf("get memories: %w", err)
	}
	byID := make(map[string]mnemotype.Memory, len(ms))
	for _, m := range ms {
		byID[m.ID] = m
	}
	out := make([]mnemotype.Memory, 0, len(byID))
	for _, id := range p.IDs {
		if m, ok := byID[id]; ok {
			out = append(out, m)
			delete(byID, id) // an id asked twice is returned once
		}
	}
	return out, nil
}

// List implements store.Store.
func (s *Store) List(ctx context.Context, p store.ListParams) (store.ListPage, error) {
	if err := s.check(); err != nil {
		return store.ListPage{}, err
	}
	if p.Limit <= 0 {
		p.Limit = 100
	}
	sc := mnemotype.Scope{Profile: p.Profile, Project: p.Project, Actors: p.Actors, After: p.After, Before: p.Before, Metadata: p.Metadata, Kinds: p.Kinds}
	if p.Session != "" {
		sc.Sessions = []string{p.Session}
	}
	var a args
	cond := scopeSQL(&a, "m", sc)
	var total int
	if p.Total {
		if err := s.reader(ctx).QueryRow(ctx, `SELECT count(*) FROM memories m WHERE `+cond, a...).Scan(&total); err != nil {
			return store.ListPage{}, fmt.Errorf("count memories: %w", err)
		}
	}
	if p.Cursor != "" {
		at, id, err := decodeCursor(p.Cursor)
		if err != nil {
			return store.ListPage{}, err
		}
		t, ns := splitTime(at)
		cond += ` AND (m.created_at, m.created_ns, m.id) > (` + a.add(t) + `, ` + a.add(ns) + `, ` + a.add(id) + `)`
	}
	cols := memoryCols
	if p.WithEmbedding {
		cols += ", m.embedding"
	}
	q := `SELECT ` + cols + ` FROM memories m WHERE ` + cond + ` ORDER BY m.created_at, m.created_ns, m.id LIMIT ` + a.add(p.Limit+1)
	ms, err := readMemories(ctx, s.reader(ctx), q, p.WithEmbedding, a)
	if err != nil {
		return store.ListPage{}, fmt.Errorf("list memories: %w", err)
	}
	page := store.ListPage{Memories: ms, Total: total}
	if len(ms) > p.Limit {
		page.Memories = ms[:p.Limit]
		last := page.Memories[p.Limit-1]
		page.NextCursor = encodeCursor(last.CreatedAt, last.ID)
	}
	return page, nil
}

// cursorLayout is the creation time's form in a cursor: the SQLite
// store's, so a cursor reads the same on both.
const cursorLayout = "2006-01-02T15:04:05.000000000Z"

// A cursor is the last row's creation time and id, base64url encoded.
func encodeCursor(at time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(at.UTC().Format(cursorLayout) + "|" + id))
}

func decodeCursor(c string) (time.Time, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil {
		if at, id, ok := strings.Cut(string(b), "|"); ok {
			if t, err := time.Parse(cursorLayout, at); err == nil {
				return t, id, nil
			}
		}
	}
	return time.Time{}, "", mnemotype.Invalidf("cursor %q: not a cursor returned by a previous page", c)
}

// scopeSQL returns the conditions enforcing sc on table alias t.
func scopeSQL(a *args, t string, sc mnemotype.Scope) string {
	conds := []string{t + ".profile = " + a.add(sc.Profile)}
	if sc.Project != "" {
		conds = append(conds, t+".project = "+a.add(sc.Project))
	}
	if len(sc.Sessions) > 0 {
		conds = append(conds, t+".session = ANY("+a.add(sc.Sessions)+")")
	}
	if len(sc.Kinds) > 0 {
		kinds := make([]string, len(sc.Kinds))
		for i, k := range sc.Kinds {
			kinds[i] = string(k)
		}
		conds = append(conds, t+".kind = ANY("+a.add(kinds)+")")
	}
	if len(sc.Exclude) > 0 {
		conds = append(conds, "NOT ("+t+".id = ANY("+a.add(sc.Exclude)+"))")
	}
	if len(sc.Actors) > 0 {
		conds = append(conds, t+".actor = ANY("+a.add(sc.Actors)+")")
	}
	if !sc.After.IsZero() {
		at, ns := splitTime(sc.After)
		conds = append(conds, "("+t+".occurred_at, "+t+".occurred_ns) >= ("+a.add(at)+", "+a.add(ns)+")")
	}
	if !sc.Before.IsZero() {
		at, ns := splitTime(sc.Before)
		conds = append(conds, "("+t+".occurred_at, "+t+".occurred_ns) < ("+a.add(at)+", "+a.add(ns)+")")
	}
	for _, m := range sc.Metadata {
		conds = append(conds, metadataSQL(a, t, m))
	}
	return strings.Join(conds, " AND ")
}

// metadataSQL is the condition keeping the memories of alias t whose
// metadata matches m (see mnemotype.MetadataMatch). The key is a
// parameter, never part of the SQL; numbers compare as numeric, so 2 and
// 2.0 are equal and no stored number overflows.
func metadataSQL(a *args, t string, m mnemotype.MetadataMatch) string {
	member := t + ".metadata -> " + a.add(m.Key)
	typ := "json_typeof(" + member + ")"
	switch v := m.Value.(type) {
	case string:
		return "(" + typ + " = 'string' AND (" + t + ".metadata ->> " + a.add(m.Key) + ") = " + a.add(v) + ")"
	case float64:
		return "(" + typ + " = 'number' AND (" + t + ".metadata ->> " + a.add(m.Key) + ")::numeric = " + a.add(strconv.FormatFloat(v, 'g', -1, 64)) + "::numeric)"
	case bool:
		return "(" + typ + " = 'boolean' AND (" + t + ".metadata ->> " + a.add(m.Key) + ") = '" + strconv.FormatBool(v) + "')"
	default: // nil: null or absent
		return "coalesce(" + typ + ", 'null') = 'null'"
	}
}

// RecentlyAccessed implements store.Store through the partial index
// memories_recent_embedded.
func (s *Store) RecentlyAccessed(ctx context.Context, scope mnemotype.Scope, n int) ([]string, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	var a args
	cond := scopeSQL(&a, "m", scope)
	return s.ids(ctx, `SELECT m.id FROM memories m WHERE `+cond+` AND m.embedding IS NOT NULL
		ORDER BY m.accessed_at DESC, m.accessed_ns DESC, m.id LIMIT `+a.add(n), a, "recently accessed")
}

// ids runs q, which selects one text column, and returns its values.
func (s *Store) ids(ctx context.Context, q string, a args, what string) ([]string, error) {
	rows, err := s.reader(ctx).Query(ctx, q, a...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// InScope implements store.Store.
func (s *Store) InScope(ctx context.Context, scope mnemotype.Scope, ids []string) ([]string, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var a args
	cond := scopeSQL(&a, "m", scope)
	if ids != nil {
		cond += ` AND m.id = ANY(` + a.add(ids) + `)`
	}
	out, err := s.ids(ctx, `SELECT m.id FROM memories m WHERE `+cond, a, "memories in scope")
	if out == nil && err == nil {
		out = []string{}
	}
	return out, err
}

// Neighbors implements store.Store through the index on (profile,
// session, session_seq).
func (s *Store) Neighbors(ctx context.Context, sc mnemotype.Scope, ids []string, radius int) ([]store.Neighbor, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if len(ids) == 0 || radius <= 0 {
		return nil, nil
	}
	var a args
	r := a.add(radius)
	// Driven from the hits, an index probe each (a lateral join that
	// OFFSET 0 keeps from being flattened): flattened, it was planned as a
	// hash join of the hits' sessions, 300,000 pairs for 300 hits in
	// sessions of 1,000 (14 ms instead of 1.5).
	q := `SELECT n.id, h.id, abs(n.session_seq - h.session_seq), n.session_seq FROM memories h
		CROSS JOIN LATERAL (SELECT n.id, n.session_seq FROM memories n WHERE n.profile = h.profile AND n.session = h.session
			AND n.session_seq BETWEEN h.session_seq - ` + r + ` AND h.session_seq + ` + r + ` AND n.rid <> h.rid
			AND ` + scopeSQL(&a, "n", sc) + ` OFFSET 0) n
		WHERE h.profile = ` + a.add(sc.Profile) + ` AND h.id = ANY(` + a.add(ids) + `) AND h.session <> ''`
	rows, err := s.reader(ctx).Query(ctx, q, a...)
	if err != nil {
		return nil, fmt.Errorf("neighbours: %w", err)
	}
	defer rows.Close()
	return store.ReadNeighbors(rows)
}

// Changes implements store.Store. Each page is read in one repeatable-read
// transaction: a consistent snapshot.
func (s *Store) Changes(ctx context.Context, p store.ChangesParams) (store.ChangeSet, error) {
	var cs store.ChangeSet
	if err := s.check(); err != nil {
		return cs, err
	}
	if p.Limit < 0 {
		return cs, mnemotype.Invalidf("changes: limit = %d: must be ≥ 0", p.Limit)
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		return cs, fmt.Errorf("read changes: %w", err)
	}
	defer tx.Rollback(ctx)
	if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT seq FROM profiles WHERE name = $1), 0)`, p.Profile).Scan(&cs.Seq); err != nil {
		return cs, fmt.Errorf("read changes: %w", err)
	}
	if cs.Seq <= p.Since {
		return cs, nil
	}
	var a args
	content := `''`
	if p.Text {
		content = `m.content`
	}
	q := `SELECT m.id, m.profile, m.project, m.session, m.session_seq, m.actor, m.kind, ` + content + `, m.importance,
		m.occurred_at, m.occurred_ns, m.created_at, m.created_ns, m.accessed_at, m.accessed_ns, m.access_count,
		NULL::text, m.embedding_model, m.embedding, m.seq FROM memories m
		WHERE m.profile = ` + a.add(p.Profile) + ` AND m.seq > ` + a.add(p.Since) + ` ORDER BY m.seq`
	if p.Limit > 0 {
		q += ` LIMIT ` + a.add(p.Limit)
	}
	rows, err := tx.Query(ctx, q, a...)
	if err != nil {
		return cs, fmt.Errorf("read changes: %w", err)
	}
	var last int64
	for rows.Next() {
		var blob []byte
		m, err := scanMemory(rows, &blob, &last)
		if err != nil {
			rows.Close()
			return cs, fmt.Errorf("read changes: %w", err)
		}
		if len(blob) > 0 {
			if m.Embedding, err = store.DecodeVector(blob); err != nil {
				rows.Close()
				return cs, fmt.Errorf("read memory %s: %w", m.ID, err)
			}
		}
		cs.Upserts = append(cs.Upserts, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return cs, fmt.Errorf("read changes: %w", err)
	}
	if p.Limit > 0 && len(cs.Upserts) == p.Limit {
		cs.Seq, cs.More = last, true
	}
	if p.Text && len(cs.Upserts) > 0 {
		if cs.Texts, err = indexedTexts(ctx, tx, p.Profile, p.Since, last, len(cs.Upserts)); err != nil {
			return cs, fmt.Errorf("read changes: %w", err)
		}
	}
	drows, err := tx.Query(ctx, `SELECT id FROM tombstones WHERE profile = $1 AND seq > $2 AND seq <= $3 ORDER BY seq`,
		p.Profile, p.Since, cs.Seq)
	if err != nil {
		return cs, fmt.Errorf("read changes: %w", err)
	}
	if cs.Deleted, err = pgx.CollectRows(drows, pgx.RowTo[string]); err != nil {
		return cs, fmt.Errorf("read changes: %w", err)
	}
	return cs, nil
}

// indexedTexts reads the indexed texts of the n memories of profile whose
// seq is in (since, upTo], in seq order: the page Changes just read, in
// the same transaction.
func indexedTexts(ctx context.Context, tx pgx.Tx, profile string, since, upTo int64, n int) ([]store.IndexedText, error) {
	rows, err := tx.Query(ctx, `SELECT m.id, m.rid, `+contextSQL("t.turns")+` FROM memories m,
		(SELECT greatest(value::int, 0) AS turns FROM meta WHERE key = 'context_turns') t
		WHERE m.profile = $1 AND m.seq > $2 AND m.seq <= $3 ORDER BY m.seq`, profile, since, upTo)
	if err != nil {
		return nil, err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.IndexedText, error) {
		var t store.IndexedText
		err := r.Scan(&t.ID, &t.Order, &t.Context)
		return t, err
	})
	if err != nil {
		return nil, err
	}
	if len(out) != n {
		return nil, fmt.Errorf("read %d indexed texts for %d memories", len(out), n)
	}
	return out, nil
}

// Signals implements store.Store.
func (s *Store) Signals(ctx context.Context, profile string, ids []string) (map[string]store.Signals, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	out := make(map[string]store.Signals, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := s.reader(ctx).Query(ctx, `SELECT id, occurred_at, occurred_ns, accessed_at, accessed_ns, access_count, importance
		FROM memories WHERE profile = $1 AND id = ANY($2)`, profile, ids)
	if err != nil {
		return nil, fmt.Errorf("read signals: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var occurred, accessed time.Time
		var occNS, accNS int16
		var sig store.Signals
		if err := rows.Scan(&id, &occurred, &occNS, &accessed, &accNS, &sig.AccessCount, &sig.Importance); err != nil {
			return nil, fmt.Errorf("read signals: %w", err)
		}
		sig.OccurredAt, sig.AccessedAt = joinTime(occurred, occNS), joinTime(accessed, accNS)
		out[id] = sig
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read signals: %w", err)
	}
	return out, nil
}

// RecordAccess implements store.Store in one statement. Access statistics
// do not advance the change sequence: they are signals, not content.
func (s *Store) RecordAccess(ctx context.Context, acc []store.Access) error {
	if err := s.check(); err != nil {
		return err
	}
	if len(acc) == 0 {
		return nil
	}
	n := len(acc)
	profiles, ids := make([]string, n), make([]string, n)
	counts := make([]int64, n)
	ats := make([]time.Time, n)
	nss := make([]int16, n)
	for i, a := range acc {
		if err := mnemotype.CheckTime("accessed_at", a.At); err != nil {
			return err
		}
		profiles[i], ids[i], counts[i] = a.Profile, a.ID, a.Count
		ats[i], nss[i] = splitTime(a.At)
	}
	// Summed per memory first (an UPDATE changes a row once); run again
	// when PostgreSQL breaks a deadlock with a writer taking the same rows
	// in another order (retry).
	err := retry(ctx, func() error {
		_, err := s.pool.Exec(ctx, `UPDATE memories m SET access_count = m.access_count + a.n,
			accessed_at = CASE WHEN (a.at, a.ns) > (m.accessed_at, m.accessed_ns) THEN a.at ELSE m.accessed_at END,
			accessed_ns = CASE WHEN (a.at, a.ns) > (m.accessed_at, m.accessed_ns) THEN a.ns ELSE m.accessed_ns END
		FROM (SELECT profile, id, sum(n)::bigint AS n,
				(array_agg(at ORDER BY at DESC, ns DESC))[1] AS at, (array_agg(ns ORDER BY at DESC, ns DESC))[1] AS ns
			FROM unnest($1::text[], $2::text[], $3::bigint[], $4::timestamptz[], $5::smallint[]) AS u(profile, id, n, at, ns)
			GROUP BY profile, id) a
		WHERE m.profile = a.profile AND m.id = a.id`, profiles, ids, counts, ats, nss)
		return err
	})
	if err != nil {
		return fmt.Errorf("record access: %w", mapErr(err))
	}
	return nil
}

// Settings implements store.Store.
func (s *Store) Settings(ctx context.Context, profile string) (map[string]string, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT key, value FROM settings WHERE profile = $1`, profile)
	if err != nil {
		return nil, fmt.Errorf("read settings: %w", err)
	}
	defer rows.Close()
	kv := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, fmt.Errorf("read settings: %w", err)
		}
		kv[k] = v
	}
	return kv, rows.Err()
}

// SetSettings implements store.Store in one statement.
func (s *Store) SetSettings(ctx context.Context, profile string, kv map[string]string) error {
	if err := s.check(); err != nil {
		return err
	}
	if len(kv) == 0 {
		return nil
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range kv {
			if !yield(k) {
				return
			}
		}
	})
	vals := make([]string, len(keys))
	for i, k := range keys {
		vals[i] = kv[k]
	}
	if _, err := s.pool.Exec(ctx, `INSERT INTO settings (profile, key, value) SELECT $1, k, v FROM unnest($2::text[], $3::text[]) AS u(k, v)
		ON CONFLICT (profile, key) DO UPDATE SET value = excluded.value`, profile, keys, vals); err != nil {
		return fmt.Errorf("write settings: %w", mapErr(err))
	}
	return nil
}

// SettingsProfiles implements store.Store.
func (s *Store) SettingsProfiles(ctx context.Context) ([]string, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	return s.ids(ctx, `SELECT DISTINCT profile FROM settings WHERE profile <> '' ORDER BY profile`, nil, "list profiles with settings")
}

// DeleteSettings implements store.Store.
func (s *Store) DeleteSettings(ctx context.Context, profile string, keys []string) error {
	if err := s.check(); err != nil {
		return err
	}
	if _, err := s.pool.Exec(ctx, `DELETE FROM settings WHERE profile = $1 AND key = ANY($2)`, profile, keys); err != nil {
		return fmt.Errorf("delete settings: %w", mapErr(err))
	}
	return nil
}

// Profiles implements store.Store from the profiles' statistics (their
// document count is their number of memories).
func (s *Store) Profiles(ctx context.Context) ([]store.ProfileCount, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, `SELECT name, docs FROM profiles WHERE docs > 0`)
	if err != nil {
		return nil, fmt.Errorf("list profiles: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.ProfileCount, error) {
		var p store.ProfileCount
		err := r.Scan(&p.Profile, &p.Memories)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("list profiles: %w", err)
	}
	slices.SortFunc(out, func(a, b store.ProfileCount) int { return strings.Compare(a.Profile, b.Profile) })
	return out, nil
}

// Count implements store.Store: the profile's document count, kept with
// its BM25 statistics.
func (s *Store) Count(ctx context.Context, profile string) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	var n int
	err := s.pool.QueryRow(ctx, `SELECT coalesce((SELECT docs FROM profiles WHERE name = $1), 0)`, profile).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count memories: %w", err)
	}
	return n, nil
}

// EmbeddingCounts implements store.Store.
func (s *Store) EmbeddingCounts(ctx context.Context, profile string) ([]store.EmbeddingCount, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	q := `SELECT profile, coalesce(embedding_model, ''), coalesce(embedding_dim, 0), count(*) FROM memories`
	var a args
	if profile != "" {
		q += ` WHERE profile = ` + a.add(profile)
	}
	rows, err := s.pool.Query(ctx, q+` GROUP BY 1, 2, 3`, a...)
	if err != nil {
		return nil, fmt.Errorf("count embeddings: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (store.EmbeddingCount, error) {
		var c store.EmbeddingCount
		err := r.Scan(&c.Profile, &c.Model, &c.Dim, &c.Count)
		return c, err
	})
	if err != nil {
		return nil, fmt.Errorf("count embeddings: %w", err)
	}
	slices.SortFunc(out, func(a, b store.EmbeddingCount) int {
		return cmp.Or(strings.Compare(a.Profile, b.Profile), strings.Compare(a.Model, b.Model), cmp.Compare(a.Dim, b.Dim))
	})
	return out, nil
}

// EmbeddingDim implements store.Store through memories_recent_embedded.
func (s *Store) EmbeddingDim(ctx context.Context, profile string) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	return embeddingDim(ctx, s.pool, profile)
}

func embeddingDim(ctx context.Context, q querier, profile string) (int, error) {
	var dim int
	err := q.QueryRow(ctx, `SELECT coalesce(embedding_dim, 0) FROM memories WHERE profile = $1 AND embedding IS NOT NULL
		ORDER BY accessed_at DESC, accessed_ns DESC, id LIMIT 1`, profile).Scan(&dim)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("embedding dimension of profile %q: %w", profile, err)
	}
	return dim, nil
}
