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
	"github.com/mnemo-dev/mnemo/vector"
)

// This file holds the dense leg in SQL, on pgvector: table memory_vectors
// holds each embedded memory's vector (written with the memory, deleted
// with it by its foreign key), apart from memories so that the frequent
// updates of a memory's access statistics never touch an HNSW index; an
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

// vectorExtension returns the schema the vector extension is installed
// in and its version, or "" when it is not installed.
func vectorExtension(ctx context.Context, q querier) (schema, version string, err error) {
	err = q.QueryRow(ctx, `SELECT n.nspname, e.extversion FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace
		WHERE e.extname = 'vector'`).Scan(&schema, &version)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", "", nil
	}
	return schema, version, err
}

// minVectorVersion is the oldest pgvector the SQL leg runs on: 0.8 brought
// iterative index scans, without which a filtered HNSW search can return
// a handful of rows instead of k.
var minVectorVersion = [2]int{0, 8}

// versionAtLeast reports whether a version such as "0.8.0" is at least
// want (major, minor).
func versionAtLeast(v string, want [2]int) bool {
	parts := strings.Split(v, ".")
	if len(parts) < 2 {
		return false
	}
	var got [2]int
	for i := range got {
		n, err := strconv.Atoi(parts[i])
		if err != nil {
			return false
		}
		got[i] = n
	}
	return got[0] > want[0] || (got[0] == want[0] && got[1] >= want[1])
}

// setupVectors gives the store its table of pgvector vectors when the
// extension (0.8 or later) is installed or can be, filling it from the
// stored embeddings; s.vec is set when the table exists. CREATE EXTENSION
// needs a superuser on stock PostgreSQL 15, and the table a role that may
// create it in the schema and reference memories (the owner; building its
// HNSW indexes needs the owner too): without them the store runs without
// the SQL leg and says why (Vectors), and a later migrate by a role that
// may completes it. It runs inside migrate's transaction, under its lock.
func (s *Store) setupVectors(ctx context.Context, tx pgx.Tx, opt Options) error {
	ns, version, err := vectorExtension(ctx, tx)
	if err != nil {
		return fmt.Errorf("migrate: find pgvector: %w", err)
	}
	if ns == "" && !opt.NoVectors {
		var available, super bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_available_extensions WHERE name = 'vector'),
			coalesce((SELECT rolsuper FROM pg_roles WHERE rolname = current_user), false)`).Scan(&available, &super); err != nil {
			return fmt.Errorf("migrate: find pgvector: %w", err)
		}
		if !available {
			s.noVectors = "the vector extension (pgvector) is not installed on the server"
		} else {
			// Tried whatever the role: managed services let roles that are
			// not superusers create it.
			err := savepoint(ctx, tx, func(sp pgx.Tx) error {
				_, err := sp.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS vector SCHEMA public`)
				return err
			})
			switch {
			case err != nil && !super:
				s.noVectors = fmt.Sprintf("CREATE EXTENSION vector: %v (on stock PostgreSQL only a superuser may: run CREATE EXTENSION vector as one, then mnemo migrate)", err)
			case err != nil:
				s.noVectors = fmt.Sprintf("CREATE EXTENSION vector: %v", err)
			}
			if ns, version, err = vectorExtension(ctx, tx); err != nil {
				return fmt.Errorf("migrate: find pgvector: %w", err)
			}
		}
	}
	if ns == "" {
		return nil
	}
	if !versionAtLeast(version, minVectorVersion) {
		s.noVectors = fmt.Sprintf("pgvector %s is older than 0.8 (iterative index scans): ALTER EXTENSION vector UPDATE", version)
		return nil
	}
	schema := pgx.Identifier{ns}.Sanitize()
	v := &vectors{schema: schema, typ: schema + ".vector", op: "OPERATOR(" + schema + ".<=>)"}
	var has bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass(quote_ident($1) || '.memory_vectors') IS NOT NULL`, s.schema).Scan(&has); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if !has {
		if opt.NoVectors {
			return nil
		}
		err := savepoint(ctx, tx, func(sp pgx.Tx) error {
			// Writers wait until the table is there and full: one that
			// read no vector type before it existed would leave its
			// memories out, or the fill would copy an embedding it
			// replaces.
			if _, err := sp.Exec(ctx, `LOCK TABLE profiles, memories IN EXCLUSIVE MODE`); err != nil {
				return err
			}
			if _, err := sp.Exec(ctx, `CREATE TABLE memory_vectors (
				profile text COLLATE "C" NOT NULL,
				id      text COLLATE "C" NOT NULL,
				model   text NOT NULL,
				dim     integer NOT NULL,
				vec     `+v.typ+` NOT NULL,
				PRIMARY KEY (profile, id)
			);
			CREATE INDEX memory_vectors_model ON memory_vectors (profile, model, dim)`); err != nil {
				return err
			}
			_, err := addMissingVectors(ctx, sp, v)
			return err
		})
		if sqlState(err) == codeInsufficientPrivilege {
			s.noVectors = fmt.Sprintf("creating table memory_vectors: %v (run mnemo migrate as a role that may create tables in the schema and reference memories: its owner)", err)
			return nil
		}
		if err != nil {
			return fmt.Errorf("migrate: create the vectors' table: %w", err)
		}
		// Planned without statistics, a lookup in the new table scanned it.
		if _, err := tx.Exec(ctx, `ANALYZE memory_vectors`); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE meta SET value = $1 WHERE key = 'vector_type' AND value IS DISTINCT FROM $1`, v.typ); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	s.vec = v
	return nil
}

// savepoint runs f in a savepoint of tx, rolled back when f fails (the
// transaction goes on).
func savepoint(ctx context.Context, tx pgx.Tx, f func(pgx.Tx) error) error {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	if err := f(sp); err != nil {
		_ = sp.Rollback(ctx)
		return err
	}
	return sp.Commit(ctx)
}

// addMissingVectors adds to memory_vectors the vector of every embedded
// memory that has none there, in pages; it returns how many it added.
func addMissingVectors(ctx context.Context, tx pgx.Tx, v *vectors) (int, error) {
	const page = 2000
	var afterProfile, afterID string
	added := 0
	for {
		rows, err := tx.Query(ctx, `SELECT m.profile, m.id, m.embedding, m.embedding_model FROM memories m
			WHERE m.embedding IS NOT NULL AND (m.profile, m.id) > ($1, $2)
				AND NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.profile = m.profile AND v.id = m.id)
			ORDER BY m.profile, m.id LIMIT `+strconv.Itoa(page)+` FOR KEY SHARE OF m`, afterProfile, afterID)
		if err != nil {
			return added, fmt.Errorf("fill the vectors' table: %w", err)
		}
		var mems []mnemotype.Memory
		for rows.Next() {
			var m mnemotype.Memory
			var blob []byte
			var model *string
			if err := rows.Scan(&m.Profile, &m.ID, &blob, &model); err != nil {
				rows.Close()
				return added, fmt.Errorf("fill the vectors' table: %w", err)
			}
			if m.Embedding, err = store.DecodeVector(blob); err != nil {
				rows.Close()
				return added, fmt.Errorf("fill the vectors' table: memory %s of profile %q: %w", m.ID, m.Profile, err)
			}
			if model != nil {
				m.EmbeddingModel = *model
			}
			mems = append(mems, m)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return added, fmt.Errorf("fill the vectors' table: %w", err)
		}
		if len(mems) == 0 {
			return added, nil
		}
		ix := &indexer{tx: tx, vecType: v.typ}
		if err := ix.insertVectors(ctx, mems, false); err != nil {
			return added, err
		}
		added += len(mems)
		last := mems[len(mems)-1]
		afterProfile, afterID = last.Profile, last.ID
	}
}

// RepairVectors brings memory_vectors in step with the memories'
// embeddings — a process of an older mnemo, which knew nothing of the
// table, may have written during an upgrade: it removes the rows whose
// memory has no embedding now, or another (by model, dimension or value),
// and adds the vectors of embedded memories without a row. It returns how
// many rows it added or removed. mnemo migrate runs it.
func (s *Store) RepairVectors(ctx context.Context) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	if s.vec == nil {
		return 0, nil
	}
	var n int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		removed, err := removeStaleVectors(ctx, tx)
		if err != nil {
			return err
		}
		added, err := addMissingVectors(ctx, tx, s.vec)
		n = removed + added
		return err
	})
	if err != nil {
		return n, fmt.Errorf("repair vectors: %w", err)
	}
	return n, nil
}

// removeStaleVectors deletes the rows of memory_vectors that differ from
// their memory's embedding or have no memory, in pages.
func removeStaleVectors(ctx context.Context, tx pgx.Tx) (int, error) {
	const page = 2000
	var afterProfile, afterID string
	removed := 0
	for {
		rows, err := tx.Query(ctx, `SELECT v.profile, v.id, m.embedding, m.embedding_model, v.model, v.vec::real[]
			FROM memory_vectors v LEFT JOIN memories m ON m.profile = v.profile AND m.id = v.id
			WHERE (v.profile, v.id) > ($1, $2) ORDER BY v.profile, v.id LIMIT `+strconv.Itoa(page), afterProfile, afterID)
		if err != nil {
			return removed, fmt.Errorf("compare vectors: %w", err)
		}
		var stale [2][]string
		n := 0
		var emb []float32
		for rows.Next() {
			var p, id, vmodel string
			var blob []byte
			var model *string
			var vec []float32
			if err := rows.Scan(&p, &id, &blob, &model, &vmodel, &vec); err != nil {
				rows.Close()
				return removed, fmt.Errorf("compare vectors: %w", err)
			}
			n++
			afterProfile, afterID = p, id
			if emb, err = store.DecodeVectorInto(emb[:0], blob); err != nil {
				rows.Close()
				return removed, fmt.Errorf("compare vectors: memory %s of profile %q: %w", id, p, err)
			}
			if len(blob) == 0 || model == nil || *model != vmodel || !store.SameVector(emb, vec) {
				stale[0], stale[1] = append(stale[0], p), append(stale[1], id)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return removed, fmt.Errorf("compare vectors: %w", err)
		}
		if len(stale[1]) > 0 {
			if _, err := tx.Exec(ctx, `DELETE FROM memory_vectors v USING unnest($1::text[], $2::text[]) AS u(p, i)
				WHERE v.profile = u.p AND v.id = u.i`, stale[0], stale[1]); err != nil {
				return removed, fmt.Errorf("remove stale vectors: %w", err)
			}
			removed += len(stale[1])
		}
		if n < page {
			return removed, nil
		}
	}
}

// Vectors reports whether the store ranks embeddings itself (pgvector 0.8
// or later is installed and the store's table of vectors exists), and
// when not, why.
func (s *Store) Vectors() (ok bool, why string) {
	switch {
	case s.vec != nil && !s.noSearch:
		return true, ""
	case s.vec != nil:
		return false, "dense=process (Options.NoVectors)"
	case s.noVectors != "":
		return false, s.noVectors
	}
	return false, "the store has no table of vectors (it was migrated with dense=process)"
}

// Dense is the dense-retrieval port (recall.Dense) in SQL, on pgvector:
// nil when the store cannot rank embeddings itself (see Vectors); the
// engine then ranks them in process.
//
// A profile without an HNSW index (IndexVectors gives one to each profile
// of ExactBelow embedded memories or more) is searched exactly in SQL
// (exactSearch). In a profile with one, a scope holding fewer than
// ExactBelow has its embeddings read and scored here (exactScoped, which
// stops reading at ExactBelow); a larger one walks the profile's HNSW
// index with iterative scans, so that a filtered scope still fills its k,
// and a search the walk cannot fill falls back to the exact search. Each query's form pins its plan: the exact scan orders
// by an expression no index holds, the HNSW search by the indexed
// expression with sorts and hash and merge joins disabled.
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
		if !wholeProfile(q.Scope) {
			// Read the scope's embeddings, unless it holds ExactBelow or
			// more: one round trip settles a narrow scope.
			hits, all, err := exactScoped(ctx, db, q, s.exactBelow)
			if err != nil {
				return nil, err
			}
			if all {
				q.Tell(dense.How{Scanned: -1})
				if len(hits) == 0 {
					return nil, s.checkDim(ctx, db, q)
				}
				return hits, nil
			}
		}
		hits, err := s.annSearch(ctx, db, q)
		if err != nil || len(hits) == q.K {
			q.Tell(dense.How{Walked: true, Ef: s.efFor(q.K)})
			return hits, err
		}
		// Fewer than asked: the scope may hold fewer, or the walk ended
		// (hnsw.max_scan_tuples) before finding them; the exact scan says.
	}
	hits, err := s.exactSearch(ctx, db, q)
	if err != nil {
		return nil, err
	}
	q.Tell(dense.How{Scanned: -1})
	if len(hits) == 0 {
		return nil, s.checkDim(ctx, db, q)
	}
	return hits, nil
}

// efFor is hnsw.ef_search for a search of the top k.
func (s *Store) efFor(k int) int {
	return min(max(s.efSearch, 2*k), 1000) // pgvector's bounds: 1-1000
}

// wholeProfile reports whether sc names a profile and nothing more.
func wholeProfile(sc mnemotype.Scope) bool {
	return sc.Project == "" && len(sc.Sessions) == 0 && len(sc.Kinds) == 0 && len(sc.Exclude) == 0 && len(sc.Actors) == 0 &&
		sc.After.IsZero() && sc.Before.IsZero() && len(sc.Metadata) == 0
}

// exactSearch computes the cosine of every embedded memory of q's scope
// in SQL (joined to their memories for a scope narrower than the profile)
// and returns the best q.K. It orders by the vectors' distance, an
// expression no HNSW index holds (those hold the vectors cast to their
// dimension), so no plan can walk a graph.
func (s *Store) exactSearch(ctx context.Context, db *pgxpool.Pool, q dense.Query) ([]mnemotype.Hit, error) {
	var a args
	qv := a.add(q.Vector) + `::real[]::` + s.vec.typ
	from, cond := s.vectorsIn(&a, q)
	sql := `SELECT v.id, 1 - (v.vec ` + s.vec.op + ` ` + qv + `) AS score FROM ` + from + ` WHERE ` + cond + `
		ORDER BY v.vec ` + s.vec.op + ` ` + qv + `, v.id LIMIT ` + a.add(q.K)
	return denseHits(ctx, db, sql, a, "dense search")
}

// exactScoped reads the embeddings of q's scope through the scope's
// indexes on memories and scores them here, as the in-process index
// scores them — looking each memory's vector up in memory_vectors cost
// more than reading its embedding — and returns the best q.K, with all
// true, when the scope holds fewer than limit; else it stops reading at
// limit and returns all false.
func exactScoped(ctx context.Context, db *pgxpool.Pool, q dense.Query, limit int) (hits []mnemotype.Hit, all bool, err error) {
	var a args
	cond := scopeSQL(&a, "m", q.Scope)
	rows, err := db.Query(ctx, `SELECT m.id, m.embedding FROM memories m WHERE `+cond+` AND m.embedding_model = `+a.add(q.Model)+
		` AND m.embedding_dim = `+strconv.Itoa(len(q.Vector))+` LIMIT `+a.add(limit), a...)
	if err != nil {
		return nil, false, fmt.Errorf("dense search: %w", err)
	}
	defer rows.Close()
	var emb []float32
	n := 0
	for rows.Next() {
		var id string
		var blob []byte
		if err := rows.Scan(&id, &blob); err != nil {
			return nil, false, fmt.Errorf("dense search: %w", err)
		}
		n++
		if emb, err = store.DecodeVectorInto(emb[:0], blob); err != nil {
			return nil, false, fmt.Errorf("dense search: memory %s: %w", id, err)
		}
		if sc, ok := vector.Cosine(q.Vector, emb); ok {
			hits = append(hits, mnemotype.Hit{ID: id, Score: sc})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("dense search: %w", err)
	}
	if n >= limit {
		return nil, false, nil
	}
	sortHits(hits)
	return hits[:min(len(hits), q.K)], true, nil
}

// vectorsIn returns the FROM list and the conditions selecting the rows
// of memory_vectors (alias v) in q's scope, of q's model and dimension:
// memory_vectors alone for a whole profile, joined to memories (alias m)
// for a narrower scope.
func (s *Store) vectorsIn(a *args, q dense.Query) (from, cond string) {
	cond = `v.profile = ` + a.add(q.Scope.Profile) + ` AND v.dim = ` + strconv.Itoa(len(q.Vector)) + ` AND v.model = ` + a.add(q.Model)
	if wholeProfile(q.Scope) {
		return `memory_vectors v`, cond
	}
	return `memory_vectors v JOIN memories m ON m.profile = v.profile AND m.id = v.id`, cond + ` AND ` + scopeSQL(a, "m", q.Scope)
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
	from, cond := s.vectorsIn(&a, q)
	sql := `SELECT v.id, 1 - (v.vec::` + typ + ` ` + s.vec.op + ` ` + qv + `) AS score FROM ` + from + ` WHERE ` + cond + `
		ORDER BY v.vec::` + typ + ` ` + s.vec.op + ` ` + qv + ` LIMIT ` + a.add(q.K)
	ef := s.efFor(q.K)
	// One round trip: the transaction, its settings, the search. A batch
	// that fails leaves its connection in a transaction, and the pool
	// closes such a connection instead of reusing it.
	b := &pgx.Batch{}
	b.Queue(`BEGIN READ ONLY`)
	// No sort, and for a scope that joins memories no hash or merge join:
	// the index's order, each row's memory looked up in turn.
	b.Queue(`SELECT set_config('enable_sort', 'off', true), set_config('enable_hashjoin', 'off', true),
		set_config('enable_mergejoin', 'off', true), set_config('hnsw.iterative_scan', 'relaxed_order', true),
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
		all, err := vectorIndexes(ctx, db, s.schema)
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
	sql := `SELECT v.id, 1 - (v.vec ` + s.vec.op + ` ` + a.add(q.Vector) + `::real[]::` + s.vec.typ + `) FROM memory_vectors v
		WHERE v.profile = ` + a.add(q.Scope.Profile) + ` AND v.id = ANY(` + a.add(ids) + `) AND v.model = ` + a.add(q.Model) +
		` AND v.dim = ` + strconv.Itoa(len(q.Vector))
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

// ForeignDim returns the dimension of profile's embeddings when none of
// them has dim dimensions (the profile was embedded by another model and
// not re-embedded: the dense leg cannot answer), else 0.
func (d *Dense) ForeignDim(ctx context.Context, profile string, dim int) (int, error) {
	s := d.s
	if err := s.check(); err != nil {
		return 0, err
	}
	db := s.reader(ctx)
	var some bool
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM memory_vectors WHERE profile = $1 AND dim = $2)`, profile, dim).Scan(&some); err != nil {
		return 0, fmt.Errorf("embedding dimension of profile %q: %w", profile, err)
	}
	if some {
		return 0, nil
	}
	other, err := embeddingDim(ctx, db, profile)
	if err != nil || other == dim {
		return 0, err
	}
	return other, nil
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
	return "memory_vectors_hnsw_" + hex.EncodeToString(h[:8]) + "_" + strconv.Itoa(dim)
}

// maxHNSWDim is the most dimensions pgvector indexes a vector with:
// larger embeddings are always scanned exactly.
const maxHNSWDim = 2000

// IndexVectors gives every profile holding at least minRows embedded
// memories of one dimension (0: the store's ExactBelow) for which build
// returns true (nil: every one; rows is how many it holds of dimension
// dim) an HNSW index of
// those embeddings (cosine; m = 16, ef_construction = 128), built without
// blocking writes (CREATE INDEX CONCURRENTLY: it takes a while, and waits
// for transactions in flight), and drops the indexes of profiles that no
// longer hold minRows. It returns the profiles' indexes. One process at a
// time builds and drops them (an advisory lock: another process's call
// returns the valid indexes at once); an index left invalid by an
// interrupted build is built again. A profile's failure does not stop the
// others': the errors are joined. Embeddings of more than 2,000 dimensions
// (pgvector's limit) get no index.
func (s *Store) IndexVectors(ctx context.Context, minRows int, build func(profile string, dim, rows int) bool) ([]VectorIndex, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if s.vec == nil {
		_, why := s.Vectors()
		return nil, fmt.Errorf("index vectors: %s", why)
	}
	if minRows <= 0 {
		minRows = s.exactBelow
	}
	defer func() { // the next search reads the list again
		s.ann.mu.Lock()
		s.ann.valid = nil
		s.ann.mu.Unlock()
	}()
	type want struct {
		profile   string
		dim, rows int
	}
	var wants []want
	// Only profiles that large may need an index: the others' rows are
	// not counted.
	profiles, err := s.ids(ctx, `SELECT name FROM profiles WHERE docs >= $1 ORDER BY name`, args{minRows}, "index vectors")
	if err != nil {
		return nil, err
	}
	for _, p := range profiles {
		rows, err := s.pool.Query(ctx, `SELECT dim, count(*) FROM memory_vectors WHERE profile = $1 GROUP BY dim HAVING count(*) >= $2 ORDER BY dim`, p, minRows)
		if err != nil {
			return nil, fmt.Errorf("index vectors: %w", err)
		}
		for rows.Next() {
			w := want{profile: p}
			if err := rows.Scan(&w.dim, &w.rows); err != nil {
				rows.Close()
				return nil, fmt.Errorf("index vectors: %w", err)
			}
			if w.dim <= maxHNSWDim {
				wants = append(wants, w)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("index vectors: %w", err)
		}
	}
	release, lead, err := s.Lead(ctx, "index vectors")
	if err != nil {
		return nil, err
	}
	if lead {
		defer release()
	}
	existing, err := vectorIndexes(ctx, s.pool, s.schema)
	if err != nil {
		return nil, fmt.Errorf("index vectors: %w", err)
	}
	var out []VectorIndex
	var errs []error
	keep := map[string]bool{}
	for _, w := range wants {
		name := vectorIndexName(w.profile, w.dim)
		keep[name] = true
		valid, ok := existing[name]
		if ok && valid {
			out = append(out, VectorIndex{Profile: w.profile, Dim: w.dim, Name: name})
			continue
		}
		if !lead || (build != nil && !build(w.profile, w.dim, w.rows)) {
			continue
		}
		// The profile may have been deleted since it was counted: an
		// index built for it now would slow its next writes.
		var still bool
		if err := s.pool.QueryRow(ctx, `SELECT count(*) >= $3 FROM (SELECT 1 FROM memory_vectors WHERE profile = $1 AND dim = $2 LIMIT $3) v`,
			w.profile, w.dim, minRows).Scan(&still); err != nil {
			errs = append(errs, fmt.Errorf("index vectors of profile %q: %w", w.profile, mapErr(err)))
			continue
		}
		if !still {
			delete(keep, name) // dropped below, if it is there
			continue
		}
		if ok {
			if err := s.dropIndex(ctx, name); err != nil {
				errs = append(errs, err)
				continue
			}
		}
		d := strconv.Itoa(w.dim)
		ddl := `CREATE INDEX CONCURRENTLY ` + pgx.Identifier{name}.Sanitize() + ` ON memory_vectors
			USING hnsw ((vec::` + s.vec.typ + `(` + d + `)) ` + s.vec.schema + `.vector_cosine_ops)
			WITH (m = ` + strconv.Itoa(hnswM) + `, ef_construction = ` + strconv.Itoa(hnswEfConstruction) + `)
			WHERE profile = ` + quoteLiteral(w.profile) + ` AND dim = ` + d
		if _, err := s.pool.Exec(ctx, ddl); err != nil {
			errs = append(errs, fmt.Errorf("index vectors of profile %q: %w", w.profile, mapErr(err)))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		out = append(out, VectorIndex{Profile: w.profile, Dim: w.dim, Name: name, Built: true})
	}
	if lead && ctx.Err() == nil {
		for name := range existing {
			if !keep[name] {
				if err := s.dropIndex(ctx, name); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	return out, errors.Join(errs...)
}

// vectorIndexes returns the store's HNSW indexes by name, and whether
// each is valid (an interrupted concurrent build leaves an invalid one).
func vectorIndexes(ctx context.Context, db querier, schema string) (map[string]bool, error) {
	rows, err := db.Query(ctx, `SELECT c.relname, i.indisvalid FROM pg_index i
		JOIN pg_class c ON c.oid = i.indexrelid
		WHERE i.indrelid = (quote_ident($1) || '.memory_vectors')::regclass AND c.relname LIKE 'memory\_vectors\_hnsw\_%'`, schema)
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

// dropGrace is how long Close waits for the drops of deleted profiles'
// indexes still running.
const dropGrace = 10 * time.Second

// dropVectorIndexesLater drops the HNSW indexes of profile (one per
// dimension), just deleted, in the background: left in place, an index
// would make every embedding written to the profile again walk its graph
// (re-importing 100k memories took 50 times as long) until IndexVectors
// dropped it. The drop holds IndexVectors' lease ("index vectors"), so it
// never runs beside a build (a DROP INDEX CONCURRENTLY waiting for a
// build's lock holds a snapshot the build then waits for: PostgreSQL
// cancels the build as a deadlock); it also waits for the transactions in
// flight on memory_vectors. The deletion does not wait for it; Close does,
// up to dropGrace. One that fails or is cancelled (a role that does not
// own the indexes, Close) leaves the index to IndexVectors, which drops
// the indexes of profiles below its threshold.
func (s *Store) dropVectorIndexesLater(profile string) {
	if s.vec == nil {
		return
	}
	s.analyzeMu.Lock()
	defer s.analyzeMu.Unlock()
	if s.bgClosed {
		return
	}
	s.drops.Add(1)
	s.bg.Go(func() {
		defer s.drops.Done()
		ctx := s.bgCtx
		release, _, err := s.lead(ctx, "index vectors", true)
		if err != nil {
			return
		}
		defer release()
		existing, err := vectorIndexes(ctx, s.pool, s.schema)
		if err != nil {
			return
		}
		prefix := strings.TrimSuffix(vectorIndexName(profile, 0), "0")
		for name := range existing {
			if strings.HasPrefix(name, prefix) {
				_ = s.dropIndex(ctx, name)
			}
		}
	})
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
