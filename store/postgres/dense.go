package postgres

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mnemo-dev/mnemo/dense"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
)

// This file holds the dense leg in SQL, on pgvector: a column vec of type
// vector beside each memory's embedding (kept from the same write), an
// exact scan of the scope's rows for small scopes, and a partial HNSW
// index per large profile (IndexVectors) searched with iterative scans.

// Thresholds of the dense leg in SQL.
const (
	// DefaultExactBelow is the size of scope below which the dense leg
	// scans the scope's rows exactly instead of walking an HNSW graph,
	// and the number of embedded memories from which IndexVectors gives
	// a profile an HNSW index.
	DefaultExactBelow = 5000
	// DefaultEfSearch is the least hnsw.ef_search of an HNSW search (it
	// is raised to twice the hits asked for).
	DefaultEfSearch = 200
	// hnswM and hnswEfConstruction build the HNSW indexes: pgvector's m,
	// and twice its ef_construction (docs/bench.md has the trade-off).
	hnswM, hnswEfConstruction = 16, 128
)

// vectors is what the store knows of pgvector in its database.
type vectors struct {
	// schema is the extension's schema, quoted; typ the vector type's
	// qualified name, op the cosine-distance operator's: the extension
	// may live in any schema.
	schema, typ, op string
}

// vectorSchema returns the schema the vector extension is installed in,
// or "" when it is not.
func vectorSchema(ctx context.Context, q querier) (string, error) {
	var ns string
	err := q.QueryRow(ctx, `SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
		WHERE e.extname = 'vector'`).Scan(&ns)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return ns, err
}

// setupVectors gives the store its column of pgvector vectors when the
// extension is installed or can be (CREATE EXTENSION needs a superuser on
// PostgreSQL 15: without one, a DBA creates it and the next migrate adds
// the column), filling it from the stored embeddings; s.vec is set when
// the column exists. It runs inside migrate's transaction, under its lock.
func (s *Store) setupVectors(ctx context.Context, tx pgx.Tx, opt Options) error {
	ns, err := vectorSchema(ctx, tx)
	if err != nil {
		return fmt.Errorf("migrate: find pgvector: %w", err)
	}
	if ns == "" && !opt.NoVectors {
		var available bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector')`).Scan(&available); err != nil {
			return fmt.Errorf("migrate: find pgvector: %w", err)
		}
		if !available {
			s.noVectors = "the vector extension (pgvector) is not installed on the server"
		} else {
			sp, err := tx.Begin(ctx)
			if err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
			if _, err := sp.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS vector SCHEMA public`); err != nil {
				_ = sp.Rollback(ctx)
				s.noVectors = fmt.Sprintf("CREATE EXTENSION vector: %v (a superuser can create it; then run mnemo migrate)", err)
			} else if err := sp.Commit(ctx); err != nil {
				return fmt.Errorf("migrate: %w", err)
			}
			if ns, err = vectorSchema(ctx, tx); err != nil {
				return fmt.Errorf("migrate: find pgvector: %w", err)
			}
		}
	}
	if ns == "" {
		return nil
	}
	schema := pgx.Identifier{ns}.Sanitize()
	v := &vectors{schema: schema, typ: schema + ".vector", op: "OPERATOR(" + schema + ".<=>)"}
	var has bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'memories'::regclass
		AND attname = 'vec' AND NOT attisdropped)`).Scan(&has); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if !has {
		if opt.NoVectors {
			return nil
		}
		if _, err := tx.Exec(ctx, `ALTER TABLE memories ADD COLUMN vec `+v.typ); err != nil {
			return fmt.Errorf("migrate: add the vector column: %w", err)
		}
		if err := fillVectors(ctx, tx, v); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE meta SET value = $1 WHERE key = 'vector_type' AND value IS DISTINCT FROM $1`, v.typ); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	s.vec = v
	return nil
}

// fillVectors sets the vector column of every embedded memory from its
// embedding, in pages.
func fillVectors(ctx context.Context, tx pgx.Tx, v *vectors) error {
	const page = 2000
	var afterProfile, afterID string
	for {
		rows, err := tx.Query(ctx, `SELECT profile, id, embedding FROM memories
			WHERE embedding IS NOT NULL AND (profile, id) > ($1, $2) ORDER BY profile, id LIMIT `+strconv.Itoa(page), afterProfile, afterID)
		if err != nil {
			return fmt.Errorf("migrate: fill the vector column: %w", err)
		}
		var profiles, ids []string
		var texts []*string
		for rows.Next() {
			var p, id string
			var blob []byte
			if err := rows.Scan(&p, &id, &blob); err != nil {
				rows.Close()
				return fmt.Errorf("migrate: fill the vector column: %w", err)
			}
			vec, err := store.DecodeVector(blob)
			if err != nil {
				rows.Close()
				return fmt.Errorf("migrate: memory %s of profile %q: %w", id, p, err)
			}
			profiles, ids, texts = append(profiles, p), append(ids, id), append(texts, vectorText(vec))
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("migrate: fill the vector column: %w", err)
		}
		if len(ids) == 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, `UPDATE memories m SET vec = u.v::`+v.typ+`
			FROM unnest($1::text[], $2::text[], $3::text[]) AS u(p, i, v) WHERE m.profile = u.p AND m.id = u.i`,
			profiles, ids, texts); err != nil {
			return fmt.Errorf("migrate: fill the vector column: %w", err)
		}
		afterProfile, afterID = profiles[len(profiles)-1], ids[len(ids)-1]
	}
}

// vectorText is v in pgvector's text form, every float32 written so that
// it reads back to the same bits; nil for no vector.
func vectorText(v []float32) *string {
	if len(v) == 0 {
		return nil
	}
	b := make([]byte, 0, 12*len(v)+2)
	b = append(b, '[')
	for i, f := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendFloat(b, float64(f), 'g', -1, 32)
	}
	b = append(b, ']')
	s := string(b)
	return &s
}

// Vectors reports whether the store ranks embeddings itself (pgvector is
// installed and the store's vector column exists), and when not, why.
func (s *Store) Vectors() (ok bool, why string) {
	if s.vec != nil && !s.noSearch {
		return true, ""
	}
	if s.vec != nil {
		return false, "Options.NoVectors"
	}
	if s.noVectors == "" {
		return false, "the database has no vector column (Options.NoVectors when it was migrated)"
	}
	return false, s.noVectors
}

// Dense is the dense-retrieval port (recall.Dense) in SQL, on pgvector:
// nil when the store cannot rank embeddings itself (see Vectors); the
// engine then ranks them in process.
//
// A profile without an HNSW index (IndexVectors gives one to each profile
// of ExactBelow embedded memories or more), or a scope of it holding fewer
// than ExactBelow, is scanned exactly: an index on the scope's fields
// finds its rows, every cosine is computed. A larger scope walks its
// profile's HNSW index with iterative scans, so that a filtered scope
// still fills its k; a search the walk cannot fill falls back to the
// exact scan. Each query's form pins its plan: the
// exact scan orders by an expression no index holds, the HNSW search by
// the indexed expression with sorting disabled.
func (s *Store) Dense() *Dense {
	if ok, _ := s.Vectors(); !ok {
		return nil
	}
	return &Dense{s: s}
}

// Dense ranks a profile's embeddings in SQL; see Store.Dense.
type Dense struct {
	s *Store
}

// Search implements the dense-retrieval port: the top q.K memories of
// q.Scope by cosine similarity to q.Vector among those embedded by
// q.Model, best first, ties by id.
func (d *Dense) Search(ctx context.Context, q dense.Query) ([]mnemotype.Hit, error) {
	s := d.s
	if err := s.check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if q.K <= 0 || len(q.Vector) == 0 {
		return nil, nil
	}
	db := s.reader(ctx)
	indexed, err := s.hasANN(ctx, db, q.Scope.Profile, len(q.Vector))
	if err != nil {
		return nil, err
	}
	if indexed {
		broad, err := s.broadScope(ctx, db, q)
		if err != nil {
			return nil, err
		}
		if broad {
			hits, err := s.annSearch(ctx, db, q)
			if err != nil || len(hits) == q.K {
				return hits, err
			}
			// Fewer than asked: the scope may hold fewer, or the walk
			// ended (hnsw.max_scan_tuples) before finding them; the exact
			// scan says.
		}
	}
	hits, err := s.exactSearch(ctx, db, q)
	if err != nil {
		return nil, err
	}
	if len(hits) == 0 {
		return nil, s.checkDim(ctx, db, q)
	}
	return hits, nil
}

// broadScope reports whether q's scope, in a profile with an HNSW index,
// holds at least ExactBelow embedded memories of its dimension: the whole
// profile does (it got the index for its size); another scope is counted,
// up to that number.
func (s *Store) broadScope(ctx context.Context, db *pgxpool.Pool, q dense.Query) (bool, error) {
	if wholeProfile(q.Scope) {
		return true, nil
	}
	var a args
	var n int64
	cond := scopeSQL(&a, "m", q.Scope)
	err := db.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 FROM memories m WHERE `+cond+` AND m.embedding_dim = `+
		a.add(len(q.Vector))+` LIMIT `+a.add(s.exactBelow)+`) x`, a...).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("dense search: size of scope: %w", err)
	}
	return n >= int64(s.exactBelow), nil
}

// wholeProfile reports whether sc names a profile and nothing more.
func wholeProfile(sc mnemotype.Scope) bool {
	return sc.Project == "" && len(sc.Sessions) == 0 && len(sc.Kinds) == 0 && len(sc.Exclude) == 0 && len(sc.Actors) == 0 &&
		sc.After.IsZero() && sc.Before.IsZero() && len(sc.Metadata) == 0
}

// exactSearch computes the cosine of every embedded memory of q's scope.
// It orders by vec's distance, an expression no HNSW index holds (those
// hold vec cast to its dimension), so no plan can walk a graph.
func (s *Store) exactSearch(ctx context.Context, db *pgxpool.Pool, q dense.Query) ([]mnemotype.Hit, error) {
	var a args
	cond := scopeSQL(&a, "m", q.Scope)
	qv := a.add(q.Vector) + `::real[]::` + s.vec.typ
	sql := `SELECT m.id, 1 - (m.vec ` + s.vec.op + ` ` + qv + `) AS score FROM memories m WHERE ` + cond +
		` AND m.embedding_model = ` + a.add(q.Model) + ` AND m.embedding_dim = ` + a.add(len(q.Vector)) + ` AND m.vec IS NOT NULL
		ORDER BY m.vec ` + s.vec.op + ` ` + qv + `, m.id LIMIT ` + a.add(q.K)
	return denseHits(ctx, db, sql, a, "dense search")
}

// annSearch walks q's profile's HNSW index (IndexVectors), in one round
// trip: a transaction whose settings pin the plan (no sort: the index's
// order) and let the walk go on until q.K rows of the scope are found
// (iterative scan, relaxed order: the hits are sorted here). Without an
// index for the profile the plan sorts after all, an exact scan.
func (s *Store) annSearch(ctx context.Context, db *pgxpool.Pool, q dense.Query) ([]mnemotype.Hit, error) {
	var a args
	typ := s.vec.schema + ".vector(" + strconv.Itoa(len(q.Vector)) + ")"
	qv := a.add(q.Vector) + `::real[]::` + typ
	cond := scopeSQL(&a, "m", q.Scope)
	sql := `SELECT m.id, 1 - (m.vec::` + typ + ` ` + s.vec.op + ` ` + qv + `) AS score
		FROM memories m WHERE ` + cond + ` AND m.embedding_dim = ` + strconv.Itoa(len(q.Vector)) + ` AND m.embedding_model = ` + a.add(q.Model) + `
		ORDER BY m.vec::` + typ + ` ` + s.vec.op + ` ` + qv + ` LIMIT ` + a.add(q.K)
	ef := min(max(s.efSearch, 2*q.K), 1000) // pgvector's bounds: 1-1000
	// One round trip: the transaction, its settings, the search. A batch
	// that fails leaves its connection in a transaction, and the pool
	// closes such a connection instead of reusing it.
	b := &pgx.Batch{}
	b.Queue(`BEGIN READ ONLY`)
	b.Queue(`SELECT set_config('enable_sort', 'off', true), set_config('hnsw.iterative_scan', 'relaxed_order', true),
		set_config('hnsw.ef_search', $1, true)`, strconv.Itoa(ef))
	b.Queue(sql, a...)
	b.Queue(`COMMIT`)
	br := db.SendBatch(ctx, b)
	defer br.Close()
	hits, err := func() ([]mnemotype.Hit, error) {
		for range 2 {
			if _, err := br.Exec(); err != nil {
				return nil, err
			}
		}
		rows, err := br.Query()
		if err != nil {
			return nil, err
		}
		hits, err := scanHits(rows)
		if err != nil {
			return nil, err
		}
		if _, err := br.Exec(); err != nil {
			return nil, err
		}
		return hits, br.Close()
	}()
	if err != nil {
		return nil, fmt.Errorf("dense search (hnsw): %w", err)
	}
	sortHits(hits)
	return hits, nil
}

// annCacheFor is how long a store trusts its list of HNSW indexes: an
// index another process builds is used within that time.
const annCacheFor = 5 * time.Second

// annCache holds the names of the valid HNSW indexes, as last read.
type annCache struct {
	mu    sync.Mutex
	at    time.Time
	valid map[string]bool
}

// hasANN reports whether profile has a valid HNSW index of dim-dimensional
// embeddings, from a list read at most annCacheFor ago.
func (s *Store) hasANN(ctx context.Context, db *pgxpool.Pool, profile string, dim int) (bool, error) {
	c := &s.ann
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.valid == nil || time.Since(c.at) > annCacheFor {
		all, err := vectorIndexes(ctx, db)
		if err != nil {
			return false, fmt.Errorf("dense search: %w", err)
		}
		c.valid = map[string]bool{}
		for name, ok := range all {
			if ok {
				c.valid[name] = true
			}
		}
		c.at = time.Now()
	}
	return c.valid[vectorIndexName(profile, dim)], nil
}

// Score implements the dense-retrieval port: the cosine of each of ids
// that belongs to q's profile and is embedded by q.Model, best first.
func (d *Dense) Score(ctx context.Context, q dense.Query, ids []string) ([]mnemotype.Hit, error) {
	s := d.s
	if err := s.check(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(ids) == 0 || len(q.Vector) == 0 {
		return nil, nil
	}
	db := s.reader(ctx)
	var a args
	sql := `SELECT m.id, 1 - (m.vec ` + s.vec.op + ` ` + a.add(q.Vector) + `::real[]::` + s.vec.typ + `) FROM memories m
		WHERE m.profile = ` + a.add(q.Scope.Profile) + ` AND m.id = ANY(` + a.add(ids) + `) AND m.embedding_model = ` + a.add(q.Model) +
		` AND m.embedding_dim = ` + a.add(len(q.Vector)) + ` AND m.vec IS NOT NULL`
	hits, err := denseHits(ctx, db, sql, a, "dense score")
	if err != nil {
		return nil, err
	}
	if len(hits) == 0 {
		return nil, s.checkDim(ctx, db, q)
	}
	sortHits(hits)
	return hits, nil
}

// checkDim returns an error wrapping ErrDimensionMismatch when q's
// profile holds embeddings of another dimension than q's vector (a search
// that matched nothing may have been filtered by dimension).
func (s *Store) checkDim(ctx context.Context, db *pgxpool.Pool, q dense.Query) error {
	d, err := embeddingDim(ctx, db, q.Scope.Profile)
	if err != nil {
		return err
	}
	if d != 0 && d != len(q.Vector) {
		return fmt.Errorf("%w: profile %q holds %d-d embeddings, the query has %d", mnemotype.ErrDimensionMismatch, q.Scope.Profile, d, len(q.Vector))
	}
	return nil
}

// denseHits runs sql, which selects an id and a cosine.
func denseHits(ctx context.Context, db *pgxpool.Pool, sql string, a args, what string) ([]mnemotype.Hit, error) {
	rows, err := db.Query(ctx, sql, a...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	hits, err := scanHits(rows)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return hits, nil
}

// scanHits reads (id, cosine) rows, leaving out the cosines pgvector
// cannot compute (a zero vector's: NaN), as the in-process index does.
func scanHits(rows pgx.Rows) ([]mnemotype.Hit, error) {
	defer rows.Close()
	var hits []mnemotype.Hit
	for rows.Next() {
		var h mnemotype.Hit
		var score *float64
		if err := rows.Scan(&h.ID, &score); err != nil {
			return nil, err
		}
		if score == nil || math.IsNaN(*score) {
			continue
		}
		h.Score = *score
		hits = append(hits, h)
	}
	return hits, rows.Err()
}

// sortHits orders hits best first, ties by id.
func sortHits(h []mnemotype.Hit) {
	slices.SortFunc(h, func(a, b mnemotype.Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// ---------------------------------------------------------------------------
// HNSW indexes, one per large profile.

// VectorIndex is one profile's HNSW index.
type VectorIndex struct {
	Profile string
	Dim     int
	// Name is the index's name in the store's schema.
	Name string
	// Built is true for an index IndexVectors built in this call.
	Built bool
}

// vectorIndexName is the name of profile's HNSW index of dim-dimensional
// embeddings: profile names are free text, so a hash of it.
func vectorIndexName(profile string, dim int) string {
	h := sha256.Sum256([]byte(profile))
	return "memories_hnsw_" + hex.EncodeToString(h[:8]) + "_" + strconv.Itoa(dim)
}

// IndexVectors gives every profile holding at least minRows embedded
// memories (0: DefaultExactBelow) for which build returns true (nil: every
// one) an HNSW index of its embeddings (cosine; m = 16, ef_construction =
// 128), built without
// blocking writes (CREATE INDEX CONCURRENTLY: it takes a while, and waits
// for transactions in flight), and drops the indexes of profiles that
// hold none of those embeddings any more. It returns the profiles' indexes.
// Run it from one process at a time (Engine.Lead); an index left invalid by
// an interrupted build is built again.
func (s *Store) IndexVectors(ctx context.Context, minRows int, build func(profile string) bool) ([]VectorIndex, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if s.vec == nil {
		_, why := s.Vectors()
		return nil, fmt.Errorf("index vectors: %s", why)
	}
	if minRows <= 0 {
		minRows = DefaultExactBelow
	}
	existing, err := vectorIndexes(ctx, s.pool)
	if err != nil {
		return nil, fmt.Errorf("index vectors: %w", err)
	}
	defer func() { // the next search reads the list again
		s.ann.mu.Lock()
		s.ann.valid = nil
		s.ann.mu.Unlock()
	}()
	rows, err := s.pool.Query(ctx, `SELECT profile, embedding_dim, count(*) FROM memories WHERE embedding_dim IS NOT NULL
		GROUP BY profile, embedding_dim HAVING count(*) >= $1 ORDER BY profile, embedding_dim`, minRows)
	if err != nil {
		return nil, fmt.Errorf("index vectors: %w", err)
	}
	type want struct {
		profile string
		dim     int
	}
	var wants []want
	for rows.Next() {
		var w want
		var n int64
		if err := rows.Scan(&w.profile, &w.dim, &n); err != nil {
			rows.Close()
			return nil, fmt.Errorf("index vectors: %w", err)
		}
		wants = append(wants, w)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("index vectors: %w", err)
	}
	var out []VectorIndex
	keep := map[string]bool{}
	for _, w := range wants {
		name := vectorIndexName(w.profile, w.dim)
		keep[name] = true
		valid, ok := existing[name]
		if ok && valid {
			out = append(out, VectorIndex{Profile: w.profile, Dim: w.dim, Name: name})
			continue
		}
		if build != nil && !build(w.profile) {
			continue
		}
		if ok {
			if err := s.dropIndex(ctx, name); err != nil {
				return out, err
			}
		}
		d := strconv.Itoa(w.dim)
		ddl := `CREATE INDEX CONCURRENTLY ` + pgx.Identifier{name}.Sanitize() + ` ON memories
			USING hnsw ((vec::` + s.vec.typ + `(` + d + `)) ` + s.vec.schema + `.vector_cosine_ops)
			WITH (m = ` + strconv.Itoa(hnswM) + `, ef_construction = ` + strconv.Itoa(hnswEfConstruction) + `)
			WHERE profile = ` + quoteLiteral(w.profile) + ` AND embedding_dim = ` + d
		if _, err := s.pool.Exec(ctx, ddl); err != nil {
			return out, fmt.Errorf("index vectors of profile %q: %w", w.profile, mapErr(err))
		}
		out = append(out, VectorIndex{Profile: w.profile, Dim: w.dim, Name: name, Built: true})
	}
	for name := range existing {
		if !keep[name] {
			if err := s.dropIndex(ctx, name); err != nil {
				return out, err
			}
		}
	}
	return out, nil
}

// vectorIndexes returns the store's HNSW indexes by name, and whether
// each is valid (an interrupted concurrent build leaves an invalid one).
func vectorIndexes(ctx context.Context, db querier) (map[string]bool, error) {
	rows, err := db.Query(ctx, `SELECT c.relname, i.indisvalid FROM pg_index i
		JOIN pg_class c ON c.oid = i.indexrelid
		WHERE i.indrelid = 'memories'::regclass AND c.relname LIKE 'memories\_hnsw\_%'`)
	if err != nil {
		return nil, fmt.Errorf("list HNSW indexes: %w", err)
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var name string
		var valid bool
		if err := rows.Scan(&name, &valid); err != nil {
			return nil, fmt.Errorf("list HNSW indexes: %w", err)
		}
		out[name] = valid
	}
	return out, rows.Err()
}

func (s *Store) dropIndex(ctx context.Context, name string) error {
	if _, err := s.pool.Exec(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+pgx.Identifier{s.schema, name}.Sanitize()); err != nil {
		return fmt.Errorf("index vectors: drop %s: %w", name, err)
	}
	return nil
}

// quoteLiteral is s as an SQL string literal, an escape string (E'…')
// whatever standard_conforming_strings says. DDL takes no parameters, and
// an index's predicate must name its profile.
func quoteLiteral(s string) string {
	return "E'" + strings.NewReplacer(`\`, `\\`, "'", "''").Replace(s) + "'"
}
