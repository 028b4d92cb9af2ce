package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
)

// A write runs in one transaction that first takes its profiles' rows of
// table profiles (in name order, so that two writers never wait for each
// other in a circle): writers to one profile take turns, so the change
// numbers they draw commit in order (a change feed read at number n has
// seen every change up to n), turns are numbered without gaps or repeats,
// and the BM25 statistics they update stay exact. Writers to different
// profiles do not wait for each other.

// lockProfiles creates the profiles' rows if needed and locks them for
// the rest of tx.
func lockProfiles(ctx context.Context, tx pgx.Tx, names ...string) error {
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	if _, err := tx.Exec(ctx, `INSERT INTO profiles AS p (name) SELECT unnest($1::text[]) ORDER BY 1
		ON CONFLICT (name) DO UPDATE SET name = p.name`, names); err != nil {
		return fmt.Errorf("lock profiles: %w", mapErr(err))
	}
	return nil
}

// finish advances the change sequence of the profiles a write changed to
// the last number it drew, then commits.
func finish(ctx context.Context, tx pgx.Tx, profiles ...string) error {
	if _, err := tx.Exec(ctx, `UPDATE profiles SET seq = currval('changes') WHERE name = ANY($1)`, profiles); err != nil {
		return fmt.Errorf("advance change sequence: %w", mapErr(err))
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", mapErr(err))
	}
	return nil
}

// Insert implements store.Store. The memories are numbered (Seq) and
// given their default times in place, as the SQLite store does.
func (s *Store) Insert(ctx context.Context, mems []mnemotype.Memory) error {
	if err := s.check(); err != nil {
		return err
	}
	if len(mems) == 0 {
		return nil
	}
	return retry(ctx, func() error {
		try := slices.Clone(mems) // an aborted attempt's numbering is not kept
		if err := s.insert(ctx, try); err != nil {
			return err
		}
		copy(mems, try)
		return nil
	})
}

func (s *Store) insert(ctx context.Context, mems []mnemotype.Memory) error {
	byProfile := map[string][]int{}
	seen := map[[2]string]bool{}
	for i := range mems {
		m := &mems[i]
		if m.ID == "" {
			return mnemotype.Invalidf("memory %d has no id", i)
		}
		if seen[[2]string{m.Profile, m.ID}] {
			return batchErr(len(mems), i, fmt.Errorf("%w: id %q %w", mnemotype.ErrInvalid, m.ID, mnemotype.ErrExists))
		}
		seen[[2]string{m.Profile, m.ID}] = true
		if m.AccessedAt.IsZero() {
			m.AccessedAt = m.CreatedAt
		}
		if m.OccurredAt.IsZero() {
			m.OccurredAt = m.CreatedAt
		}
		for _, t := range []struct {
			field string
			at    time.Time
		}{{"created_at", m.CreatedAt}, {"accessed_at", m.AccessedAt}, {"occurred_at", m.OccurredAt}} {
			if err := mnemotype.CheckTime(t.field, t.at); err != nil {
				return batchErr(len(mems), i, err)
			}
		}
		byProfile[m.Profile] = append(byProfile[m.Profile], i)
	}
	profiles := make([]string, 0, len(byProfile))
	for p := range byProfile {
		profiles = append(profiles, p)
	}
	slices.Sort(profiles)
	// The contents are tokenized before the transaction, which holds the
	// profiles' lock: their entries and the contexts that hold them are
	// built from these.
	var eb entryBuilder
	contents := make([]string, len(mems))
	for i := range mems {
		contents[i] = mems[i].Content
	}
	eb.tokenizeAll(contents)

	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("insert memories: %w", err)
	}
	defer tx.Rollback(ctx)
	if err := lockProfiles(ctx, tx, profiles...); err != nil {
		return err
	}
	for _, p := range profiles {
		if err := s.checkNew(ctx, tx, mems, byProfile[p]); err != nil {
			return err
		}
	}
	stored, err := numberTurns(ctx, tx, mems)
	if err != nil {
		return fmt.Errorf("insert memories: number turns: %w", err)
	}
	lastRID := map[string]int64{}
	for _, p := range profiles {
		var last int64
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(rid), 0) FROM memories WHERE profile = $1`, p).Scan(&last); err != nil {
			return fmt.Errorf("insert memories: %w", err)
		}
		lastRID[p] = last
	}
	ix, err := s.newIndexer(ctx, tx)
	if err != nil {
		return fmt.Errorf("insert memories: %w", err)
	}
	ix.eb = eb
	docs, err := ix.newDocs(ctx, mems, stored)
	if err != nil {
		return fmt.Errorf("insert memories: %w", err)
	}
	// The row ids are drawn first, so that the posting blocks are built
	// while the server inserts the rows (apply's overlap).
	rids, err := drawRIDs(ctx, tx, len(mems))
	if err != nil {
		return fmt.Errorf("insert memories: %w", err)
	}
	for i := range docs {
		docs[i].rid = rids[i]
	}
	var rowsErr error // insertRows's, returned as it is
	insertRows := func(ctx context.Context) error {
		// COPY (which writes the identity column as given), in row id
		// order.
		i := 0
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"memories"}, memoryCopyCols, pgx.CopyFromFunc(func() ([]any, error) {
			if i == len(mems) {
				return nil, nil
			}
			row := memoryCopyRow(&mems[i], &docs[i])
			i++
			return row, nil
		})); err != nil {
			if sqlState(err) == codeUniqueViolation {
				rowsErr = fmt.Errorf("%w: an id of the batch %w", mnemotype.ErrInvalid, mnemotype.ErrExists)
			} else {
				rowsErr = fmt.Errorf("insert memories: %w", mapErr(err))
			}
			return rowsErr
		}
		if err := ix.insertVectors(ctx, mems, true); err != nil {
			rowsErr = fmt.Errorf("insert memories: %w", err)
			return rowsErr
		}
		return nil
	}
	for _, p := range profiles {
		added := make([]doc, 0, len(byProfile[p]))
		for _, i := range byProfile[p] {
			added = append(added, docs[i])
		}
		if err := ix.apply(ctx, p, indexChange{added: added}, nil, len(added), lastRID[p], insertRows); err != nil {
			if rowsErr != nil {
				return rowsErr
			}
			return fmt.Errorf("insert memories: %w", err)
		}
		insertRows = nil // the first profile's apply inserted every row
		// Stored turns after a new one (an insertion out of order) hold it
		// in their context now.
		var turns []turn
		for _, i := range byProfile[p] {
			m := &mems[i]
			if m.Session != "" && m.Seq < stored[sessionKey{p, m.Session}] {
				turns = append(turns, turn{m.Session, m.Seq})
			}
		}
		if err := ix.reindexAfter(ctx, p, turns, byProfile[p], mems); err != nil {
			return fmt.Errorf("insert memories: %w", err)
		}
	}
	if err := finish(ctx, tx, profiles...); err != nil {
		return fmt.Errorf("insert memories: %w", err)
	}
	s.grew(len(mems))
	return nil
}

// memoryCopyCols are the columns an insert copies into memories (seq takes
// its default, a change number each).
var memoryCopyCols = []string{"rid", "profile", "id", "project", "session", "session_seq", "actor", "kind", "content", "importance",
	"occurred_at", "occurred_ns", "created_at", "created_ns", "accessed_at", "accessed_ns", "access_count", "metadata",
	"embedding", "embedding_model", "embedding_dim", "lens", "terms"}

// memoryCopyRow is m's row of memoryCopyCols, d its index entry (and row
// id).
func memoryCopyRow(m *mnemotype.Memory, d *doc) []any {
	occ, occNS := splitTime(m.OccurredAt)
	cre, creNS := splitTime(m.CreatedAt)
	acc, accNS := splitTime(m.AccessedAt)
	var meta, blob, model, dim any // NULL unless set
	if len(m.Metadata) > 0 {
		meta = string(m.Metadata)
	}
	if len(m.Embedding) > 0 {
		blob, model, dim = store.EncodeVector(m.Embedding), m.EmbeddingModel, int32(len(m.Embedding))
	}
	terms := d.lexemes
	if terms == nil {
		terms = []string{}
	}
	return []any{d.rid, m.Profile, m.ID, m.Project, m.Session, m.Seq, m.Actor, string(m.Kind), m.Content, m.Importance,
		occ, occNS, cre, creNS, acc, accNS, m.AccessCount, meta, blob, model, dim, d.lens[:], terms}
}

// drawRIDs draws n row ids for new memories from the sequence of
// memories.rid, in increasing order: past every row id of the profiles
// whose rows the transaction has locked (their writers take turns). The
// role needs USAGE on the sequence, as on the schema's other sequences.
func drawRIDs(ctx context.Context, tx pgx.Tx, n int) ([]int64, error) {
	// The sequence's name is looked up once, not once a row.
	rows, err := tx.Query(ctx, `SELECT nextval(q.s) FROM (SELECT pg_get_serial_sequence('memories', 'rid')::regclass AS s) q,
		generate_series(1, $1)`, n)
	if err != nil {
		return nil, fmt.Errorf("draw row ids: %w", mapErr(err))
	}
	rids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("draw row ids: %w", mapErr(err))
	}
	if len(rids) != n {
		return nil, fmt.Errorf("draw row ids: %d of %d", len(rids), n)
	}
	slices.Sort(rids)
	return rids, nil
}

// grew counts n memories inserted, and analyzes the tables once those
// inserted since the last analysis reach as many as there were then (at
// least analyzeMin): a table loaded faster than autovacuum looks at it
// would otherwise be planned without statistics (a neighbour query of a
// few rows then walked a whole conversation: 90 ms, against 0.5 ms
// analyzed). Later growth is autovacuum's. The analysis runs in the
// background, one at a time: the writer does not wait for it; one that
// fails (see analyze) leaves its count to the next write.
func (s *Store) grew(n int) {
	s.analyzeMu.Lock()
	defer s.analyzeMu.Unlock()
	s.inserted += int64(n)
	if s.analyzing || s.bgClosed || s.inserted < max(analyzeMin, s.analyzed) {
		return
	}
	pending := s.inserted
	s.analyzing, s.inserted = true, 0
	tables := "memories, lex_blocks"
	if s.vec != nil {
		tables += ", memory_vectors"
	}
	s.bg.Go(func() {
		ctx := s.bgCtx
		analyzed := int64(-1)
		if err := s.analyze(ctx, tables); err == nil {
			_ = s.pool.QueryRow(ctx, `SELECT greatest(reltuples, 0)::bigint FROM pg_class WHERE oid = 'memories'::regclass`).Scan(&analyzed)
		}
		s.analyzeMu.Lock()
		defer s.analyzeMu.Unlock()
		s.analyzing = false
		if analyzed >= 0 {
			s.analyzed = analyzed
		} else {
			s.inserted += pending // the next write tries again
		}
	})
}

// analyze analyzes tables (a list) in one transaction, once it holds the
// lock ANALYZE takes on each, without waiting for any. An ANALYZE waiting
// for a table's lock holds a snapshot, and the CREATE INDEX CONCURRENTLY
// holding that lock (IndexVectors, in this process or another) waits
// before it ends for every snapshot older than its own: PostgreSQL cancels
// the build as a deadlock. A table another holds the lock of (a build, a
// drop of an index, autovacuum) fails the analysis, without waiting.
func (s *Store) analyze(ctx context.Context, tables string) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `LOCK TABLE `+tables+` IN SHARE UPDATE EXCLUSIVE MODE NOWAIT`); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `ANALYZE `+tables)
		return err
	})
}

// analyzeMin is the least number of memories inserted before a store
// analyzes its tables.
const analyzeMin = 1000

// checkNew checks, under its profile's lock, that the memories of mems at
// idx (one profile's) are new and of its embeddings' dimension.
func (s *Store) checkNew(ctx context.Context, tx pgx.Tx, mems []mnemotype.Memory, idx []int) error {
	profile := mems[idx[0]].Profile
	ids := make([]string, len(idx))
	for j, i := range idx {
		ids[j] = mems[i].ID
	}
	var dup string
	err := tx.QueryRow(ctx, `SELECT id FROM memories WHERE profile = $1 AND id = ANY($2) LIMIT 1`, profile, ids).Scan(&dup)
	switch {
	case err == nil:
		i := idx[slices.Index(ids, dup)]
		return batchErr(len(mems), i, fmt.Errorf("%w: id %q %w", mnemotype.ErrInvalid, dup, mnemotype.ErrExists))
	case !errors.Is(err, pgx.ErrNoRows):
		return fmt.Errorf("insert memories: %w", err)
	}
	dim := -1
	for _, i := range idx {
		m := &mems[i]
		if len(m.Embedding) == 0 {
			continue
		}
		if dim < 0 {
			if dim, err = embeddingDim(ctx, tx, profile); err != nil {
				return err
			}
		}
		if dim != 0 && dim != len(m.Embedding) {
			return batchErr(len(mems), i, fmt.Errorf("%w: profile %q holds %d-d embeddings, this one (%s) has %d",
				mnemotype.ErrDimensionMismatch, profile, dim, m.EmbeddingModel, len(m.Embedding)))
		}
		dim = len(m.Embedding)
	}
	return nil
}

// sessionKey is a session of a profile.
type sessionKey struct{ profile, session string }

// numberTurns gives each memory without a Seq the next turn of its
// session (after the stored turns and those before it in mems), and
// returns the highest turn each session of mems had stored before.
func numberTurns(ctx context.Context, tx pgx.Tx, mems []mnemotype.Memory) (map[sessionKey]int64, error) {
	stored := map[sessionKey]int64{}
	var ps, ss []string
	for i := range mems {
		k := sessionKey{mems[i].Profile, mems[i].Session}
		if _, ok := stored[k]; !ok {
			stored[k] = 0
			ps, ss = append(ps, k.profile), append(ss, k.session)
		}
	}
	rows, err := tx.Query(ctx, `SELECT k.profile, k.session, (SELECT coalesce(max(m.session_seq), 0) FROM memories m
			WHERE m.profile = k.profile AND m.session = k.session)
		FROM unnest($1::text[], $2::text[]) AS k(profile, session)`, ps, ss)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var k sessionKey
		var n int64
		if err := rows.Scan(&k.profile, &k.session, &n); err != nil {
			rows.Close()
			return nil, err
		}
		stored[k] = n
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	last := maps.Clone(stored)
	for i := range mems {
		m := &mems[i]
		k := sessionKey{m.Profile, m.Session}
		if m.Seq == 0 {
			m.Seq = last[k] + 1
		}
		last[k] = max(last[k], m.Seq)
	}
	return stored, nil
}

// Update implements store.Store.
func (s *Store) Update(ctx context.Context, p store.UpdateParams) (mnemotype.Memory, error) {
	if err := s.check(); err != nil {
		return mnemotype.Memory{}, err
	}
	var m mnemotype.Memory
	err := retry(ctx, func() error {
		var err error
		m, err = s.update(ctx, p)
		return err
	})
	return m, err
}

func (s *Store) update(ctx context.Context, p store.UpdateParams) (mnemotype.Memory, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return mnemotype.Memory{}, fmt.Errorf("update memory %s: %w", p.ID, err)
	}
	defer tx.Rollback(ctx)
	// The profile's row first, as every writer takes it, then the memory:
	// an unknown profile must not be created by a failed update.
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM profiles WHERE name = $1)`, p.Profile).Scan(&exists); err != nil {
		return mnemotype.Memory{}, fmt.Errorf("update memory %s: %w", p.ID, err)
	}
	if !exists {
		return mnemotype.Memory{}, fmt.Errorf("update memory %s: %w", p.ID, mnemotype.ErrNotFound)
	}
	if err := lockProfiles(ctx, tx, p.Profile); err != nil {
		return mnemotype.Memory{}, err
	}
	var blob []byte
	var a args
	q := `SELECT ` + memoryCols + `, m.embedding FROM memories m WHERE m.profile = ` + a.add(p.Profile) + ` AND m.id = ` + a.add(p.ID)
	m, err := scanMemory(tx.QueryRow(ctx, q, a...), &blob)
	if errors.Is(err, pgx.ErrNoRows) {
		return mnemotype.Memory{}, fmt.Errorf("update memory %s: %w", p.ID, mnemotype.ErrNotFound)
	}
	if err != nil {
		return mnemotype.Memory{}, fmt.Errorf("update memory %s: %w", p.ID, err)
	}
	if len(blob) > 0 {
		if m.Embedding, err = store.DecodeVector(blob); err != nil {
			return mnemotype.Memory{}, fmt.Errorf("update memory %s: %w", p.ID, err)
		}
	}
	if (p.IfContent != nil && m.Content != *p.IfContent) || (p.IfEmbeddingModel != nil && m.EmbeddingModel != *p.IfEmbeddingModel) {
		return mnemotype.Memory{}, fmt.Errorf("update memory %s: it changed since it was read: %w", p.ID, mnemotype.ErrConflict)
	}
	old := m
	if err := p.Apply(&m); err != nil {
		return mnemotype.Memory{}, err
	}
	if m.Seq == 0 || (m.Session != old.Session && p.Seq == nil) {
		// Seq 0, or a move to another session without a seq: the
		// session's next turn, as Insert numbers it.
		if err := tx.QueryRow(ctx, `SELECT coalesce(max(session_seq), 0) + 1 FROM memories WHERE profile = $1 AND session = $2 AND id <> $3`,
			m.Profile, m.Session, m.ID).Scan(&m.Seq); err != nil {
			return mnemotype.Memory{}, fmt.Errorf("update memory %s: number its turn: %w", p.ID, err)
		}
	}
	var newBlob []byte
	var model *string
	var dim *int32
	if len(m.Embedding) > 0 {
		newBlob, model = store.EncodeVector(m.Embedding), &m.EmbeddingModel
		d := int32(len(m.Embedding))
		dim = &d
	}
	var meta *string
	if len(m.Metadata) > 0 {
		ms := string(m.Metadata)
		meta = &ms
	}
	occ, occNS := splitTime(m.OccurredAt)
	if _, err := tx.Exec(ctx, `UPDATE memories SET content = $3, kind = $4, project = $5, session = $6, session_seq = $7, actor = $8,
			occurred_at = $9, occurred_ns = $10, importance = $11, metadata = $12::json, embedding = $13, embedding_model = $14,
			embedding_dim = $15, seq = nextval('changes')
		WHERE profile = $1 AND id = $2`,
		p.Profile, p.ID, m.Content, string(m.Kind), m.Project, m.Session, m.Seq, m.Actor, occ, occNS, m.Importance, meta,
		newBlob, model, dim); err != nil {
		return mnemotype.Memory{}, fmt.Errorf("update memory %s: %w", p.ID, mapErr(err))
	}
	ix, err := s.newIndexer(ctx, tx)
	if err != nil {
		return mnemotype.Memory{}, fmt.Errorf("update memory %s: %w", p.ID, err)
	}
	// The vector's row changes only with the embedding: its HNSW index is
	// costly to write.
	if m.EmbeddingModel != old.EmbeddingModel || !slices.Equal(m.Embedding, old.Embedding) {
		if err := ix.replaceVector(ctx, m); err != nil {
			return mnemotype.Memory{}, fmt.Errorf("update memory %s: %w", p.ID, err)
		}
	}
	if m.Content != old.Content || m.Kind != old.Kind || m.Project != old.Project || m.Session != old.Session ||
		m.Actor != old.Actor || m.Seq != old.Seq || !m.OccurredAt.Equal(old.OccurredAt) {
		var turns []turn
		for _, t := range []mnemotype.Memory{old, m} {
			if t.Session != "" {
				turns = append(turns, turn{t.Session, t.Seq})
			}
		}
		if err := ix.reindex(ctx, p.Profile, []string{p.ID}, turns); err != nil {
			return mnemotype.Memory{}, fmt.Errorf("update memory %s: %w", p.ID, err)
		}
	}
	if err := finish(ctx, tx, p.Profile); err != nil {
		return mnemotype.Memory{}, fmt.Errorf("update memory %s: %w", p.ID, err)
	}
	return m, nil
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, profile, id string) error {
	n, err := s.deleteWhere(ctx, mnemotype.Scope{Profile: profile}, []string{id})
	if err != nil {
		return fmt.Errorf("delete memory %s: %w", id, err)
	}
	if n == 0 {
		return fmt.Errorf("delete memory %s: %w", id, mnemotype.ErrNotFound)
	}
	return nil
}

// DeleteMatching implements store.Store in one transaction: the rows go,
// each leaves the index (its profile's statistics follow, and the turns
// after it are indexed with their new context), and each gets a tombstone
// for other processes' change feeds.
func (s *Store) DeleteMatching(ctx context.Context, p store.DeleteParams) (int, error) {
	if p.Unfiltered() {
		return 0, mnemotype.Invalidf("delete: give a project, a session, actors, kinds, a time range or a metadata filter (deleting a whole profile is DeleteProfile)")
	}
	sc := mnemotype.Scope{Profile: p.Profile, Project: p.Project, Actors: p.Actors, After: p.After, Before: p.Before, Metadata: p.Metadata, Kinds: p.Kinds}
	if p.Session != "" {
		sc.Sessions = []string{p.Session}
	}
	n, err := s.deleteWhere(ctx, sc, nil)
	if err != nil {
		return 0, fmt.Errorf("delete memories: %w", err)
	}
	return n, nil
}

// deleteWhere deletes the memories in sc (those of ids only, when not
// nil) and returns how many.
func (s *Store) deleteWhere(ctx context.Context, sc mnemotype.Scope, ids []string) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	var n int
	err := retry(ctx, func() error {
		var err error
		n, err = s.deleteOnce(ctx, sc, ids)
		return err
	})
	return n, err
}

func (s *Store) deleteOnce(ctx context.Context, sc mnemotype.Scope, ids []string) (int, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback(ctx)
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM profiles WHERE name = $1)`, sc.Profile).Scan(&exists); err != nil || !exists {
		return 0, err
	}
	if err := lockProfiles(ctx, tx, sc.Profile); err != nil {
		return 0, err
	}
	var a args
	cond := scopeSQL(&a, "m", sc)
	if ids != nil {
		cond += ` AND m.id = ANY(` + a.add(ids) + `)`
	}
	rows, err := tx.Query(ctx, `SELECT m.id, m.session, m.session_seq FROM memories m WHERE `+cond+` ORDER BY m.rid FOR UPDATE`, a...)
	if err != nil {
		return 0, err
	}
	var gone []string
	var turns []turn
	for rows.Next() {
		var id string
		var t turn
		if err := rows.Scan(&id, &t.session, &t.seq); err != nil {
			rows.Close()
			return 0, err
		}
		gone = append(gone, id)
		if t.session != "" {
			turns = append(turns, t)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if len(gone) == 0 {
		return 0, nil
	}
	ix, err := s.newIndexer(ctx, tx)
	if err != nil {
		return 0, err
	}
	removed, lens, err := ix.indexed(ctx, sc.Profile, gone)
	if err != nil {
		return 0, err
	}
	if err := ix.apply(ctx, sc.Profile, indexChange{removed: removed}, lens, -len(gone), math.MaxInt64, nil); err != nil {
		return 0, err
	}
	if _, err := tx.Exec(ctx, `INSERT INTO tombstones (profile, seq, id)
		SELECT $1, nextval('changes'), id FROM unnest($2::text[]) WITH ORDINALITY AS u(id, ord) ORDER BY ord`, sc.Profile, gone); err != nil {
		return 0, fmt.Errorf("write tombstones: %w", mapErr(err))
	}
	if _, err := tx.Exec(ctx, `DELETE FROM memories WHERE profile = $1 AND id = ANY($2)`, sc.Profile, gone); err != nil {
		return 0, mapErr(err)
	}
	if err := ix.deleteVectors(ctx, sc.Profile, gone); err != nil {
		return 0, err
	}
	if err := ix.reindex(ctx, sc.Profile, nil, turns); err != nil {
		return 0, err
	}
	if err := finish(ctx, tx, sc.Profile); err != nil {
		return 0, err
	}
	return len(gone), nil
}

// DeleteProfile implements store.Store in one transaction. Its row of
// table profiles stays (statistics zeroed), so that its change numbers
// keep counting up: another process's index of the profile catches up
// through the tombstones. The API keys are revoked rather than removed: as
// long as any key exists the server requires keys, and deleting a profile
// must not reopen it.
func (s *Store) DeleteProfile(ctx context.Context, profile string) (store.ProfileDeletion, error) {
	if err := s.check(); err != nil {
		return store.ProfileDeletion{}, err
	}
	var out store.ProfileDeletion
	err := retry(ctx, func() error {
		var err error
		out, err = s.deleteProfile(ctx, profile)
		return err
	})
	if err != nil {
		return out, err
	}
	s.dropVectorIndexesLater(profile)
	return out, nil
}

func (s *Store) deleteProfile(ctx context.Context, profile string) (store.ProfileDeletion, error) {
	var out store.ProfileDeletion
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return out, fmt.Errorf("delete profile: %w", err)
	}
	defer tx.Rollback(ctx)
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM profiles WHERE name = $1)`, profile).Scan(&exists); err != nil {
		return out, fmt.Errorf("delete profile: %w", err)
	}
	if exists {
		if err := lockProfiles(ctx, tx, profile); err != nil {
			return out, err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO tombstones (profile, seq, id)
			SELECT profile, nextval('changes'), id FROM (SELECT profile, id FROM memories WHERE profile = $1 ORDER BY rid) m`, profile)
		if err != nil {
			return out, fmt.Errorf("delete profile: write tombstones: %w", mapErr(err))
		}
		out.Memories = int(tag.RowsAffected())
		for _, st := range []struct{ what, q string }{
			{"delete memories", `DELETE FROM memories WHERE profile = $1`},
			{"delete postings", `DELETE FROM lex_blocks WHERE profile = $1`},
			{"delete term statistics", `DELETE FROM lex_terms WHERE profile = $1`},
			{"reset statistics", `UPDATE profiles SET docs = 0, content_tokens = 0, actor_tokens = 0, time_tokens = 0, context_tokens = 0
				WHERE name = $1`},
		} {
			if _, err := tx.Exec(ctx, st.q, profile); err != nil {
				return out, fmt.Errorf("delete profile: %s: %w", st.what, mapErr(err))
			}
		}
		ix, err := s.newIndexer(ctx, tx)
		if err != nil {
			return out, fmt.Errorf("delete profile: %w", err)
		}
		if err := ix.deleteVectors(ctx, profile, nil); err != nil {
			return out, fmt.Errorf("delete profile: %w", err)
		}
		if out.Memories > 0 {
			if _, err := tx.Exec(ctx, `UPDATE profiles SET seq = currval('changes') WHERE name = $1`, profile); err != nil {
				return out, fmt.Errorf("delete profile: %w", mapErr(err))
			}
		}
	}
	tag, err := tx.Exec(ctx, `DELETE FROM settings WHERE profile = $1`, profile)
	if err != nil {
		return out, fmt.Errorf("delete profile: delete settings: %w", mapErr(err))
	}
	out.Settings = int(tag.RowsAffected())
	// A revoked key keeps no trace of the profile's name: it names no
	// profile (store.DeletedProfile is not a valid name).
	tag, err = tx.Exec(ctx, `UPDATE api_keys SET profile = $3, name = '', revoked_at = coalesce(revoked_at, $2) WHERE profile = $1`,
		profile, time.Now().UnixNano(), store.DeletedProfile)
	if err != nil {
		return out, fmt.Errorf("delete profile: revoke keys: %w", mapErr(err))
	}
	out.Keys = int(tag.RowsAffected())
	if err := tx.Commit(ctx); err != nil {
		return out, fmt.Errorf("delete profile: commit: %w", mapErr(err))
	}
	s.terms.forget(profile)
	return out, nil
}

// ---------------------------------------------------------------------------
// The full-text index, written by the store inside each write.

// turn is a place in a session.
type turn struct {
	session string
	seq     int64
}

// indexer writes index rows inside one write transaction.
type indexer struct {
	tx    pgx.Tx
	turns int
	eb    entryBuilder
	// vecType is the type of memory_vectors' vectors ("" when the store
	// has no such table).
	vecType string
}

// newIndexer returns the indexer of write transaction tx, with what the
// database is indexed with now, whatever this process opened it with: the
// number of context turns (another process may have rebuilt the index
// with another) and the type of the vectors of table memory_vectors
// (another process may have created it; every writer must then fill it).
func (s *Store) newIndexer(ctx context.Context, tx pgx.Tx) (*indexer, error) {
	ix := &indexer{tx: tx}
	if err := tx.QueryRow(ctx, `SELECT greatest(value::int, 0), (SELECT value FROM meta WHERE key = 'vector_type')
		FROM meta WHERE key = 'context_turns'`).Scan(&ix.turns, &ix.vecType); err != nil {
		return nil, fmt.Errorf("read how the index is built: %w", err)
	}
	return ix, nil
}

// doc is a memory's index entry (lex.go) and its row id.
type doc struct {
	entry
	rid int64
}

// newDocs builds the index entries of memories about to be inserted, mems
// numbered (numberTurns, which returned stored: each session's highest
// stored turn). A memory's context is the turns of its session within
// ix.turns before it: those stored (read back only when its window reaches
// them) then those of mems, each group in insertion order.
func (ix *indexer) newDocs(ctx context.Context, mems []mnemotype.Memory, stored map[sessionKey]int64) ([]doc, error) {
	type place struct {
		sessionKey
		seq int64
	}
	storedAt := map[place][]string{}
	if ix.turns > 0 {
		var ps, ss []string
		var los []int64
		asked := map[place]bool{}
		for i := range mems {
			m := &mems[i]
			k := sessionKey{m.Profile, m.Session}
			lo := m.Seq - int64(ix.turns)
			if m.Session == "" || lo > stored[k] || asked[place{k, lo}] {
				continue
			}
			asked[place{k, lo}] = true
			ps, ss, los = append(ps, k.profile), append(ss, k.session), append(los, lo)
		}
		if len(ps) > 0 {
			rows, err := ix.tx.Query(ctx, `SELECT DISTINCT t.profile, t.session, f.session_seq, f.rid, f.content
				FROM unnest($1::text[], $2::text[], $3::bigint[]) AS t(profile, session, lo)
				CROSS JOIN LATERAL (SELECT session_seq, rid, content FROM memories f WHERE f.profile = t.profile AND f.session = t.session
					AND f.session_seq >= t.lo AND f.session_seq < t.lo + $4 OFFSET 0) f
				ORDER BY 1, 2, 3, 4`, ps, ss, los, ix.turns)
			if err != nil {
				return nil, fmt.Errorf("read the turns before: %w", err)
			}
			for rows.Next() {
				var pl place
				var rid int64
				var content string
				if err := rows.Scan(&pl.profile, &pl.session, &pl.seq, &rid, &content); err != nil {
					rows.Close()
					return nil, fmt.Errorf("read the turns before: %w", err)
				}
				storedAt[pl] = append(storedAt[pl], content)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return nil, fmt.Errorf("read the turns before: %w", err)
			}
		}
	}
	added := map[place][]string{}
	if ix.turns > 0 {
		for i := range mems {
			m := &mems[i]
			if m.Session != "" {
				pl := place{sessionKey{m.Profile, m.Session}, m.Seq}
				added[pl] = append(added[pl], m.Content)
			}
		}
	}
	fields := make([][numFields][]string, len(mems))
	for i := range mems {
		m := &mems[i]
		var parts []string
		if ix.turns > 0 && m.Session != "" {
			for s := m.Seq - int64(ix.turns); s < m.Seq; s++ {
				pl := place{sessionKey{m.Profile, m.Session}, s}
				parts = append(append(parts, storedAt[pl]...), added[pl]...)
			}
		}
		fields[i] = [numFields][]string{{m.Content}, {m.Actor}, {timeWords(m.OccurredAt)}, parts}
	}
	docs := make([]doc, len(mems))
	for i, e := range ix.eb.buildAll(fields) {
		docs[i].entry = e
	}
	return docs, nil
}

// reindexAfter re-indexes the stored turns whose context holds one of
// turns, leaving out the memories mems[i] (i in idx) just inserted, whose
// entries are already right.
func (ix *indexer) reindexAfter(ctx context.Context, profile string, turns []turn, idx []int, mems []mnemotype.Memory) error {
	if ix.turns <= 0 || len(turns) == 0 {
		return nil
	}
	after, err := ix.turnsAfter(ctx, profile, turns)
	if err != nil {
		return err
	}
	after = slices.DeleteFunc(after, func(id string) bool {
		return slices.ContainsFunc(idx, func(i int) bool { return mems[i].ID == id })
	})
	return ix.reindex(ctx, profile, after, nil)
}

// turnsAfter returns the ids of the memories whose context holds one of
// turns (each probed through the index on the session's turns).
func (ix *indexer) turnsAfter(ctx context.Context, profile string, turns []turn) ([]string, error) {
	ss := make([]string, len(turns))
	qs := make([]int64, len(turns))
	for i, t := range turns {
		ss[i], qs[i] = t.session, t.seq
	}
	rows, err := ix.tx.Query(ctx, `SELECT DISTINCT f.id FROM unnest($2::text[], $3::bigint[]) AS t(session, seq)
		CROSS JOIN LATERAL (SELECT f.id FROM memories f WHERE f.profile = $1 AND f.session = t.session
			AND f.session_seq > t.seq AND f.session_seq <= t.seq + $4 OFFSET 0) f`, profile, ss, qs, ix.turns)
	if err != nil {
		return nil, fmt.Errorf("find the turns after: %w", err)
	}
	after, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("find the turns after: %w", err)
	}
	return after, nil
}

// contextSQL is the context field of memory m: the content of the turns
// of its session within turns (a placeholder) before it, oldest first,
// one per line.
func contextSQL(turns string) string {
	return `CASE WHEN m.session = '' OR ` + turns + ` = 0 THEN '' ELSE coalesce((SELECT string_agg(c.content, E'\n' ORDER BY c.session_seq, c.rid)
		FROM memories c WHERE c.profile = m.profile AND c.session = m.session
		AND c.session_seq >= m.session_seq - ` + turns + ` AND c.session_seq < m.session_seq), '') END`
}

// reindex indexes the memories of profile with ids and the turns whose
// context holds one of turns (the places of memories written), with their
// context as it is now.
func (ix *indexer) reindex(ctx context.Context, profile string, ids []string, turns []turn) error {
	all := slices.Clone(ids)
	if ix.turns > 0 && len(turns) > 0 {
		after, err := ix.turnsAfter(ctx, profile, turns)
		if err != nil {
			return err
		}
		for _, id := range after {
			if !slices.Contains(ids, id) {
				all = append(all, id)
			}
		}
	}
	if len(all) == 0 {
		return nil
	}
	removed, lens, err := ix.indexed(ctx, profile, all)
	if err != nil {
		return err
	}
	rows, err := ix.tx.Query(ctx, `SELECT m.rid, m.content, m.actor, m.occurred_at, m.occurred_ns, `+contextSQL("$3")+`
		FROM memories m WHERE m.profile = $1 AND m.id = ANY($2)`, profile, all, ix.turns)
	if err != nil {
		return fmt.Errorf("read the fields: %w", err)
	}
	var docs []doc
	var fields [][numFields][]string
	for rows.Next() {
		var d doc
		var f [numFields]string
		var occurred time.Time
		var ns int16
		if err := rows.Scan(&d.rid, &f[fieldContent], &f[fieldActor], &occurred, &ns, &f[fieldContext]); err != nil {
			rows.Close()
			return fmt.Errorf("read the fields: %w", err)
		}
		f[fieldTime] = timeWords(joinTime(occurred, ns))
		fields = append(fields, [numFields][]string{{f[fieldContent]}, {f[fieldActor]}, {f[fieldTime]}, {f[fieldContext]}})
		docs = append(docs, d)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the fields: %w", err)
	}
	for i, e := range ix.eb.buildAll(fields) {
		docs[i].entry = e
	}
	if err := ix.apply(ctx, profile, indexChange{removed: removed, added: docs}, lens, 0, math.MaxInt64, nil); err != nil {
		return err
	}
	// The entries as the rows keep them, to take them out later.
	rids := make([]int64, len(docs))
	terms := make([]string, len(docs))
	var ls [numFields][]int32
	for i, d := range docs {
		rids[i], terms[i] = d.rid, strings.Join(d.lexemes, " ")
		for c := range numFields {
			ls[c] = append(ls[c], d.lens[c])
		}
	}
	// A new change number each: what the index holds of them changed
	// (store.ChangesParams.Text), so the change feed lists them again.
	if _, err := ix.tx.Exec(ctx, `UPDATE memories m SET terms = string_to_array(u.terms, ' '), lens = ARRAY[u.c, u.a, u.t, u.x],
		seq = nextval('changes')
		FROM unnest($2::bigint[], $3::text[], $4::int[], $5::int[], $6::int[], $7::int[]) AS u(rid, terms, c, a, t, x)
		WHERE m.profile = $1 AND m.rid = u.rid`, profile, rids, terms, ls[0], ls[1], ls[2], ls[3]); err != nil {
		return fmt.Errorf("write index entries: %w", mapErr(err))
	}
	return nil
}

// rebuildIndex indexes every memory again with turns context turns, inside
// tx (Open, when the number changed).
func (s *Store) rebuildIndex(ctx context.Context, tx pgx.Tx, turns int) error {
	// Writers of other processes wait for the rebuild (a writer already
	// running finishes first): what they write is indexed with the new
	// number of turns, which they read from meta.
	if _, err := tx.Exec(ctx, `LOCK TABLE profiles, memories, lex_blocks, lex_terms IN EXCLUSIVE MODE`); err != nil {
		return fmt.Errorf("rebuild the full-text index: %w", err)
	}
	for _, q := range []string{
		`DELETE FROM lex_terms`,
		`DELETE FROM lex_blocks`,
		`UPDATE memories SET terms = '{}', lens = '{0,0,0,0}'`,
		// A new change number each: caches of the statistics (document
		// frequencies counted per profile and change number) start afresh.
		`UPDATE profiles SET content_tokens = 0, actor_tokens = 0, time_tokens = 0, context_tokens = 0, seq = nextval('changes')`,
	} {
		if _, err := tx.Exec(ctx, q); err != nil {
			return fmt.Errorf("rebuild the full-text index: %w", err)
		}
	}
	rows, err := tx.Query(ctx, `SELECT profile, array_agg(id) FROM memories GROUP BY profile`)
	if err != nil {
		return fmt.Errorf("rebuild the full-text index: %w", err)
	}
	type group struct {
		profile string
		ids     []string
	}
	groups, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (group, error) {
		var g group
		err := r.Scan(&g.profile, &g.ids)
		return g, err
	})
	if err != nil {
		return fmt.Errorf("rebuild the full-text index: %w", err)
	}
	ix := &indexer{tx: tx, turns: turns}
	for _, g := range groups {
		for ids := range slices.Chunk(g.ids, 5000) {
			if err := ix.reindex(ctx, g.profile, ids, nil); err != nil {
				return fmt.Errorf("rebuild the full-text index: %w", err)
			}
		}
	}
	if len(groups) > 0 {
		// The memories' new change numbers are the profiles' feeds' too.
		if _, err := tx.Exec(ctx, `UPDATE profiles SET seq = currval('changes')`); err != nil {
			return fmt.Errorf("rebuild the full-text index: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE meta SET value = $1 WHERE key = 'context_turns'`, fmt.Sprint(turns)); err != nil {
		return fmt.Errorf("rebuild the full-text index: %w", err)
	}
	return nil
}

// insertVectors adds the vectors of mems to memory_vectors (when the store
// has it), one row per embedding. They go as one float4[] (pgx's binary
// form: no float is printed or parsed) that each row slices and casts. For
// memories just inserted (fresh), a row already there is replaced: its
// memory is gone (an older mnemo deleted it, the foreign key that deleted
// its vector gone). A repair's (not fresh) leaves a row already there
// alone: a writer that changed the memory's embedding since the repair
// read it wrote it.
func (ix *indexer) insertVectors(ctx context.Context, mems []mnemotype.Memory, fresh bool) error {
	if ix.vecType == "" {
		return nil
	}
	var profiles, ids, models []string
	var dims, starts []int32
	n := 0
	for i := range mems {
		n += len(mems[i].Embedding)
	}
	if n == 0 {
		return nil
	}
	flat := make([]float32, 0, n)
	for i := range mems {
		m := &mems[i]
		if len(m.Embedding) == 0 {
			continue
		}
		profiles, ids, models = append(profiles, m.Profile), append(ids, m.ID), append(models, m.EmbeddingModel)
		dims, starts = append(dims, int32(len(m.Embedding))), append(starts, int32(len(flat)+1))
		flat = append(flat, m.Embedding...)
	}
	conflict := `DO NOTHING`
	if fresh {
		conflict = `DO UPDATE SET model = excluded.model, dim = excluded.dim, vec = excluded.vec`
	}
	if _, err := ix.tx.Exec(ctx, `INSERT INTO memory_vectors (profile, id, model, dim, vec)
		SELECT p, i, mo, d, ($6::real[])[s:s+d-1]::`+ix.vecType+` FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::int[]) AS u(p, i, mo, d, s)
		ON CONFLICT (profile, id) `+conflict,
		profiles, ids, models, dims, starts, flat); err != nil {
		return fmt.Errorf("write vectors: %w", mapErr(err))
	}
	return nil
}

// deleteVectors removes the rows of memory_vectors (when the store has it)
// of profile's memories with ids, or of all its memories when ids is nil.
func (ix *indexer) deleteVectors(ctx context.Context, profile string, ids []string) error {
	if ix.vecType == "" {
		return nil
	}
	var err error
	if ids == nil {
		_, err = ix.tx.Exec(ctx, `DELETE FROM memory_vectors WHERE profile = $1`, profile)
	} else {
		_, err = ix.tx.Exec(ctx, `DELETE FROM memory_vectors WHERE profile = $1 AND id = ANY($2)`, profile, ids)
	}
	if err != nil {
		return fmt.Errorf("delete vectors: %w", mapErr(err))
	}
	return nil
}

// replaceVector sets m's row of memory_vectors (when the store has it) to
// its embedding, or removes it when m has none.
func (ix *indexer) replaceVector(ctx context.Context, m mnemotype.Memory) error {
	if ix.vecType == "" {
		return nil
	}
	if len(m.Embedding) == 0 {
		if _, err := ix.tx.Exec(ctx, `DELETE FROM memory_vectors WHERE profile = $1 AND id = $2`, m.Profile, m.ID); err != nil {
			return fmt.Errorf("write vector: %w", mapErr(err))
		}
		return nil
	}
	if _, err := ix.tx.Exec(ctx, `INSERT INTO memory_vectors (profile, id, model, dim, vec) VALUES ($1, $2, $3, $4, $5::real[]::`+ix.vecType+`)
		ON CONFLICT (profile, id) DO UPDATE SET model = excluded.model, dim = excluded.dim, vec = excluded.vec`,
		m.Profile, m.ID, m.EmbeddingModel, len(m.Embedding), m.Embedding); err != nil {
		return fmt.Errorf("write vector: %w", mapErr(err))
	}
	return nil
}
