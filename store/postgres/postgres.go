// Package postgres implements store.Store on PostgreSQL (pgx v5, a
// connection pool): the production store. Several mnemo processes
// may share one database; every change is numbered so that their dense
// indexes catch up from the change feed, and writers to one profile take
// turns on its row of table profiles, so that the profile's change numbers
// are committed in order and its BM25 statistics stay exact.
//
// Every table is keyed by profile first, so that the schema can be
// distributed by profile (Citus-style co-location: every statement of a
// write names one profile, and a recall reads one profile's rows).
//
// The lexical leg ranks with BM25(F) as the SQLite store does, with the
// same tokenizer (package ftstoken) and the same arithmetic: the store
// tokenizes in Go and keeps an inverted index in a table (a posting per
// memory and token, with the token's count in each field), whose key
// finds a query's candidates and whose rows hold all that scoring them
// needs; the profile's statistics (documents, field lengths, document
// frequencies) are kept in tables on write.
package postgres

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/textindex"
)

// Options tunes a Store. The zero value is ready to use.
type Options struct {
	// Schema is the PostgreSQL schema the store's tables live in, created
	// if needed; "" is "mnemo". Several stores may share a database under
	// different schemas.
	Schema string
	// MaxConns caps the connection pool; 0 is pgxpool's default
	// (max(4, the number of CPUs)).
	MaxConns int32
	// ContextTurns is how many previous turns of its session a memory's
	// context field holds in the full-text index; -1 for none; 0 keeps what
	// the database is indexed with (a new database: DefaultContextTurns).
	// Opening a database with another number re-indexes it.
	ContextTurns int
	// MustExist makes Open fail, with an error wrapping ErrNotFound, when
	// the schema holds no mnemo store yet, instead of creating one.
	MustExist bool
	// CommonTermRatio, CommonTermMinDocs and RareTermBudget bound the rows
	// an OR query scores, as the SQLite store's options of the same names
	// do (see Store.Lexical); zero values take the same defaults.
	CommonTermRatio   float64
	CommonTermMinDocs int
	RareTermBudget    int
	// Replicas are URLs of streaming replicas of the database: recalls
	// read from them (in turn), writes go to the primary. A read carrying
	// a consistency token (store.WithConsistency: a write's Position) is
	// served by a replica that has replayed it, waiting up to ReplicaWait
	// (default DefaultReplicaWait), else by the primary.
	Replicas    []string
	ReplicaWait time.Duration
	// NoVectors leaves pgvector unused for ranking (Store.Dense is nil:
	// the engine ranks embeddings in process) and, on a database without
	// the store's table of vectors, does not create it. By default Open
	// creates the vector extension when the server has it and the role may
	// (a superuser on stock PostgreSQL 15), and keeps each memory's vector
	// in table memory_vectors (see Dense).
	NoVectors bool
	// ExactBelow is the size of scope below which the dense leg in SQL
	// scans exactly (default DefaultExactBelow); EfSearch is the least
	// hnsw.ef_search of its HNSW searches (default DefaultEfSearch).
	ExactBelow int
	EfSearch   int
	// PostingCache is the byte budget of the decoded posting lists the
	// store keeps between full-text queries (validated by the terms'
	// versions in the database, so never stale); 0 is DefaultPostingCache,
	// negative keeps none.
	PostingCache int64
}

// DefaultContextTurns is how many previous turns of its session a memory
// is indexed with in a new database.
const DefaultContextTurns = 1

// Common-term thresholds and the rare-term budget of OR queries: the
// SQLite store's, measured there (sqlitestore.DefaultCommonTermRatio).
const (
	DefaultCommonTermRatio   = 0.075
	DefaultCommonTermMinDocs = 250
	DefaultRareTermBudget    = 1000
	RareTermBudgetRatio      = 0.1
)

// Store is a PostgreSQL-backed store.Store, safe for concurrent use by
// many goroutines and many processes.
type Store struct {
	pool        *pgxpool.Pool
	schema      string
	closed      atomic.Bool
	commonRatio float64
	commonMin   int
	rareBudget  int
	terms       termCache
	postings    *postingCache
	closeOnce   sync.Once
	// analyzeMu guards inserted, the memories this store inserted since
	// it last analyzed the tables, analyzed, how many there were then,
	// analyzing, set while an analysis runs (in the background: bg), and
	// bgClosed, set by Close (no background work starts after).
	analyzeMu           sync.Mutex
	inserted, analyzed  int64
	analyzing, bgClosed bool
	// bg runs the store's background work, which Close cancels (stop)
	// and waits for.
	bg sync.WaitGroup
	// drops are the background drops of deleted profiles' indexes (in
	// bg), which Close waits for up to dropGrace before it cancels them.
	drops       sync.WaitGroup
	bgCtx       context.Context
	stopBg      context.CancelFunc
	replicas    []*replica
	nextReplica atomic.Uint32
	replicaWait time.Duration
	// vec is set when the store has its table of vectors (see dense.go),
	// which every write then keeps; noSearch (Options.NoVectors) leaves it
	// unused for ranking; noVectors says why there is none.
	vec                  *vectors
	ann                  annCache
	noSearch             bool
	noVectors            string
	exactBelow, efSearch int
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at dsn (a postgres:// URL or a key=value
// connection string) and migrates the store's schema to the current
// version. A URL's query parameter schema names the schema when
// Options.Schema does not; dense=process sets Options.NoVectors.
func Open(ctx context.Context, dsn string, opt Options) (*Store, error) {
	dsn, params, err := splitParams(dsn)
	if err != nil {
		return nil, err
	}
	schema := params.schema
	if params.dense == "process" {
		opt.NoVectors = true
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, mnemotype.Invalidf("postgres connection string: %v", err)
	}
	if opt.Schema == "" {
		opt.Schema = schema
	}
	if opt.Schema == "" {
		opt.Schema = "mnemo"
	}
	if opt.MaxConns > 0 {
		cfg.MaxConns = opt.MaxConns
	}
	// The store's schema first: its tables and sequence; then public, where
	// extensions such as pgvector usually live.
	cfg.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{opt.Schema}.Sanitize() + ", public"
	// Every execution planned with its parameters: a generic plan of a
	// prepared statement cannot see how selective a full-text query or a
	// scope is, and chose to recheck every row of a scope (2.2 ms where
	// the custom plan takes 0.1).
	cfg.ConnConfig.RuntimeParams["plan_cache_mode"] = "force_custom_plan"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to postgres: %w", err)
	}
	s := &Store{pool: pool, schema: opt.Schema, commonRatio: opt.CommonTermRatio, commonMin: opt.CommonTermMinDocs, rareBudget: opt.RareTermBudget}
	s.bgCtx, s.stopBg = context.WithCancel(context.WithoutCancel(ctx))
	if s.commonRatio == 0 {
		s.commonRatio = DefaultCommonTermRatio
	}
	if s.commonMin == 0 {
		s.commonMin = DefaultCommonTermMinDocs
	}
	if s.rareBudget == 0 {
		s.rareBudget = DefaultRareTermBudget
	}
	s.postings = newPostingCache(cmp.Or(opt.PostingCache, DefaultPostingCache))
	s.noSearch, s.exactBelow, s.efSearch = opt.NoVectors, cmp.Or(max(opt.ExactBelow, 0), DefaultExactBelow), cmp.Or(max(opt.EfSearch, 0), DefaultEfSearch)
	if err := s.migrate(ctx, opt); err != nil {
		pool.Close()
		return nil, err
	}
	s.replicaWait = opt.ReplicaWait
	if s.replicaWait <= 0 {
		s.replicaWait = DefaultReplicaWait
	}
	if err := s.openReplicas(ctx, opt.Replicas, opt.MaxConns); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// IsDSN reports whether db names a PostgreSQL database (a postgres:// or
// postgresql:// URL) rather than a file.
func IsDSN(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// SplitSchema takes mnemo's own query parameters (schema, dense) out of a
// postgres:// URL and returns the URL without them and the schema ("" when
// absent). Other connection strings are returned as they are.
func SplitSchema(dsn string) (string, string, error) {
	dsn, p, err := splitParams(dsn)
	return dsn, p.schema, err
}

// urlParams are mnemo's own query parameters of a postgres:// URL: schema
// (Options.Schema) and dense ("sql", the default, or "process":
// Options.NoVectors).
type urlParams struct {
	schema, dense string
}

func splitParams(dsn string) (string, urlParams, error) {
	var p urlParams
	if !IsDSN(dsn) {
		return dsn, p, nil
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", p, mnemotype.Invalidf("postgres URL: %v", err)
	}
	q := u.Query()
	if !q.Has("schema") && !q.Has("dense") {
		return dsn, p, nil
	}
	if q.Has("schema") {
		if p.schema = q.Get("schema"); p.schema == "" {
			return "", p, mnemotype.Invalidf("postgres URL: schema is empty")
		}
	}
	if q.Has("dense") {
		if p.dense = q.Get("dense"); p.dense != "sql" && p.dense != "process" {
			return "", p, mnemotype.Invalidf("postgres URL: dense=%q: want sql (rank embeddings in PostgreSQL with pgvector) or process (in each mnemo process)", p.dense)
		}
	}
	q.Del("schema")
	q.Del("dense")
	u.RawQuery = q.Encode()
	return u.String(), p, nil
}

// DropSchema removes a store's schema and everything in it (an evaluation's
// or a test's throwaway store). dsn may carry a schema parameter; schema
// names the one dropped.
func DropSchema(ctx context.Context, dsn, schema string) error {
	dsn, _, err := SplitSchema(dsn)
	if err != nil {
		return err
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("drop schema %q: %w", schema, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{schema}.Sanitize()+` CASCADE`); err != nil {
		return fmt.Errorf("drop schema %q: %w", schema, err)
	}
	return nil
}

// leadPoll is how often lead asks again for a lease it waits for.
const leadPoll = 100 * time.Millisecond

// Close closes the pool. It is idempotent.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.analyzeMu.Lock()
		s.bgClosed = true
		s.analyzeMu.Unlock()
		// The indexes of profiles just deleted are dropped before a
		// command exits (mnemo delete --all), unless that takes too long.
		dropped := make(chan struct{})
		go func() { s.drops.Wait(); close(dropped) }()
		select {
		case <-dropped:
		case <-time.After(dropGrace):
		}
		s.stopBg()
		s.bg.Wait()
		s.pool.Close()
		for _, r := range s.replicas {
			r.pool.Close()
		}
	})
	return nil
}

func (s *Store) check() error {
	if s.closed.Load() {
		return mnemotype.ErrClosed
	}
	return nil
}

// SQLSTATEs the store maps (never by message text).
const (
	codeUniqueViolation       = "23505"
	codeDiskFull              = "53100"
	codeOutOfMemory           = "53200"
	codeTooManyConns          = "53300"
	codeReadOnlyTx            = "25006"
	codeInvalidSchema         = "3F000"
	codeUndefinedTable        = "42P01"
	codeDeadlock              = "40P01"
	codeSerialization         = "40001"
	codeInsufficientPrivilege = "42501"
)

// retry runs a write transaction, f, again when PostgreSQL aborted it to
// break a deadlock (or a serialization failure): a write that takes memory
// rows in one order can meet the access statistics' flush, or another
// writer, taking them in another. Up to 5 attempts, a few milliseconds
// apart.
func retry(ctx context.Context, f func() error) error {
	for attempt := 1; ; attempt++ {
		err := f()
		if c := sqlState(err); (c == codeDeadlock || c == codeSerialization) && attempt < 5 && ctx.Err() == nil {
			time.Sleep(time.Duration(attempt) * 5 * time.Millisecond)
			continue
		}
		return err
	}
}

// mapErr maps a driver error to mnemo's sentinels by SQLSTATE: a full disk
// is ErrStorageFull, a write to a read-only server (a replica)
// ErrReadOnly. Other errors are returned as they are.
func mapErr(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	switch pe.Code {
	case codeDiskFull:
		return fmt.Errorf("%w: %w", mnemotype.ErrStorageFull, err)
	case codeReadOnlyTx:
		return fmt.Errorf("%w: %w", mnemotype.ErrReadOnly, err)
	}
	return err
}

func sqlState(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// migrations are applied in order; meta's schema_version records how many
// ran. Never edit a released migration: append a new one.
var migrations = []string{
	// 1: memories with their full-text fields as a tsvector, per-profile
	// statistics, the change feed's sequence and tombstones, settings and
	// API keys.
	//  - Times are timestamptz (microseconds) with the nanoseconds below
	//    them in *_ns, so that every time of years 0001-9999 round-trips
	//    to the nanosecond and orders as (time, ns).
	//  - The full-text index is lex_blocks (see blocks.go); terms lists a
	//    memory's distinct tokens (to take it out of the index), lens its
	//    fields' lengths in tokens: content, actor, when it occurred in
	//    words, the previous turns.
	//  - seq numbers the memory's last change (the sequence changes, drawn
	//    while the writer holds its profile's row, so that a profile's
	//    numbers commit in order); rid only breaks ties, in insertion order.
	`CREATE SEQUENCE changes;
	CREATE TABLE meta (
		key   text COLLATE "C" PRIMARY KEY,
		value text NOT NULL
	);
	CREATE TABLE profiles (
		name           text COLLATE "C"   PRIMARY KEY,
		seq            bigint NOT NULL DEFAULT 0,
		docs           bigint NOT NULL DEFAULT 0,
		content_tokens bigint NOT NULL DEFAULT 0,
		actor_tokens   bigint NOT NULL DEFAULT 0,
		time_tokens    bigint NOT NULL DEFAULT 0,
		context_tokens bigint NOT NULL DEFAULT 0
	);
	CREATE TABLE memories (
		profile         text COLLATE "C"        NOT NULL,
		id              text COLLATE "C"        NOT NULL,
		rid             bigint      GENERATED ALWAYS AS IDENTITY,
		project         text COLLATE "C"        NOT NULL DEFAULT '',
		session         text COLLATE "C"        NOT NULL DEFAULT '',
		session_seq     bigint      NOT NULL DEFAULT 0,
		actor           text COLLATE "C"        NOT NULL DEFAULT '',
		kind            text        NOT NULL,
		content         text        NOT NULL,
		importance      float8      NOT NULL,
		occurred_at     timestamptz NOT NULL,
		occurred_ns     smallint    NOT NULL DEFAULT 0,
		created_at      timestamptz NOT NULL,
		created_ns      smallint    NOT NULL DEFAULT 0,
		accessed_at     timestamptz NOT NULL,
		accessed_ns     smallint    NOT NULL DEFAULT 0,
		access_count    bigint      NOT NULL DEFAULT 0,
		metadata        json,
		embedding       bytea,
		embedding_model text,
		embedding_dim   integer,
		seq             bigint      NOT NULL DEFAULT nextval('changes'),
		terms           text[]      NOT NULL DEFAULT '{}',
		lens            integer[]   NOT NULL DEFAULT '{0,0,0,0}',
		PRIMARY KEY (profile, id)
	);
	CREATE INDEX memories_seq      ON memories (profile, seq);
	CREATE INDEX memories_created  ON memories (profile, created_at, created_ns, id);
	CREATE INDEX memories_turns    ON memories (profile, session, session_seq);
	CREATE INDEX memories_project  ON memories (profile, project);
	CREATE INDEX memories_occurred ON memories (profile, occurred_at, occurred_ns);
	CREATE INDEX memories_recent_embedded ON memories (profile, accessed_at DESC, accessed_ns DESC, id) WHERE embedding IS NOT NULL;
	CREATE INDEX memories_rid      ON memories (profile, rid);
	CREATE TABLE lex_blocks (
		profile text COLLATE "C" NOT NULL,
		term    text COLLATE "C" NOT NULL,
		block   bigint NOT NULL,
		data    bytea  NOT NULL,
		PRIMARY KEY (profile, term, block)
	);
	CREATE TABLE lex_terms (
		profile      text COLLATE "C"   NOT NULL,
		term         text COLLATE "C"   NOT NULL,
		content_docs bigint NOT NULL,
		docs         bigint NOT NULL,
		PRIMARY KEY (profile, term)
	);
	CREATE TABLE tombstones (
		profile text COLLATE "C"   NOT NULL,
		seq     bigint NOT NULL,
		id      text COLLATE "C"   NOT NULL,
		PRIMARY KEY (profile, seq)
	);
	CREATE TABLE settings (
		profile text COLLATE "C" NOT NULL,
		key     text COLLATE "C" NOT NULL,
		value   text NOT NULL,
		PRIMARY KEY (profile, key)
	);
	CREATE TABLE api_keys (
		id         text COLLATE "C"   PRIMARY KEY,
		profile    text COLLATE "C"   NOT NULL,
		name       text COLLATE "C"   NOT NULL DEFAULT '',
		hash       text   NOT NULL UNIQUE,
		prefix     text   NOT NULL DEFAULT '',
		role       text   NOT NULL DEFAULT '',
		profiles   text[],
		created_at bigint NOT NULL,
		revoked_at bigint
	);
	CREATE INDEX api_keys_profile ON api_keys (profile, created_at, id);
	INSERT INTO meta (key, value) VALUES ('context_turns', '-1');`,
	// 2: the type of the vectors of table memory_vectors, which pgvector's
	// dense leg adds (see dense.go), '' while there is none; every writer
	// reads it. The table itself is created when the extension is there.
	`INSERT INTO meta (key, value) VALUES ('vector_type', '');`,
	// 3: each term's version, drawn from lex_versions by every write that
	// changes one of its posting blocks, so that a process may keep
	// decoded lists (postingCache).
	`CREATE SEQUENCE lex_versions;
	ALTER TABLE lex_terms ADD COLUMN ver bigint NOT NULL DEFAULT 0;
	UPDATE lex_terms SET ver = nextval('lex_versions');`,
	// 4: memory_vectors without its foreign key to memories, checked row
	// by row: most of what writing the table cost an import. The store
	// deletes a memory's vector with the memory, and RepairVectors
	// removes any an older mnemo left.
	`ALTER TABLE IF EXISTS memory_vectors DROP CONSTRAINT IF EXISTS memory_vectors_profile_id_fkey;`,
	// 5: the settings version (Store.Versions), which every statement
	// writing table settings advances in its own transaction, whoever
	// runs it, so that a process may keep settings it read while the
	// version stays the same. The function names table meta by the schema
	// of the table that fired it, whatever the session's search_path and
	// the schema's name now.
	`INSERT INTO meta (key, value) VALUES ('settings_version', '0');
	CREATE FUNCTION settings_version_advance() RETURNS trigger LANGUAGE plpgsql AS $$
	BEGIN
		EXECUTE format('UPDATE %I.meta SET value = (value::bigint + 1)::text WHERE key = %L', TG_TABLE_SCHEMA, 'settings_version');
		RETURN NULL;
	END $$;
	CREATE TRIGGER settings_version AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON settings
		FOR EACH STATEMENT EXECUTE FUNCTION settings_version_advance();`,
	// 6: the watermarks of the caches kept outside the database (the
	// dense indexes' snapshots, with Config.IndexDir), each with a random
	// mark (Store.MarkWatermark): a copy of the database (CREATE DATABASE
	// … TEMPLATE, a dump restored) keeps its instance and sequences, not
	// the marks made after it.
	`CREATE TABLE watermarks (
		id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
		profile text COLLATE "C" NOT NULL,
		seq     bigint NOT NULL,
		mark    text COLLATE "C" NOT NULL UNIQUE
	);
	CREATE INDEX watermarks_profile ON watermarks (profile, id);`,
}

// migrate creates the schema if needed and applies the migrations it
// lacks, one process at a time (an advisory lock), then rebuilds the
// full-text index if it was built with another number of context turns.
func (s *Store) migrate(ctx context.Context, opt Options) error {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('mnemo migrate ' || $1))`, s.schema); err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT to_regclass(quote_ident($1) || '.meta') IS NOT NULL`, s.schema).Scan(&exists); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	version := 0
	if !exists {
		if opt.MustExist {
			return fmt.Errorf("postgres schema %q holds no mnemo store: %w", s.schema, mnemotype.ErrNotFound)
		}
		if _, err := tx.Exec(ctx, `CREATE SCHEMA IF NOT EXISTS `+pgx.Identifier{s.schema}.Sanitize()); err != nil {
			return fmt.Errorf("migrate: create schema %q: %w", s.schema, err)
		}
	} else {
		var v string
		if err := tx.QueryRow(ctx, `SELECT value FROM meta WHERE key = 'schema_version'`).Scan(&v); err != nil {
			return fmt.Errorf("migrate: read schema version: %w", err)
		}
		if _, err := fmt.Sscan(v, &version); err != nil {
			return fmt.Errorf("migrate: schema version %q: %w", v, err)
		}
	}
	if version > len(migrations) {
		return fmt.Errorf("postgres schema %q is at version %d, newer than this mnemo (%d): upgrade mnemo", s.schema, version, len(migrations))
	}
	for i := version; i < len(migrations); i++ {
		if _, err := tx.Exec(ctx, migrations[i]); err != nil {
			return fmt.Errorf("migrate to version %d: %w", i+1, err)
		}
	}
	if version < len(migrations) {
		instance := make([]byte, 16)
		if _, err := rand.Read(instance); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO meta (key, value) VALUES ('schema_version', $1), ('instance', $2)
			ON CONFLICT (key) DO UPDATE SET value = CASE WHEN meta.key = 'instance' THEN meta.value ELSE excluded.value END`,
			fmt.Sprint(len(migrations)), hex.EncodeToString(instance)); err != nil {
			return fmt.Errorf("migrate: record version: %w", err)
		}
	}
	turns := opt.ContextTurns
	var built int
	if err := tx.QueryRow(ctx, `SELECT value::int FROM meta WHERE key = 'context_turns'`).Scan(&built); err != nil {
		return fmt.Errorf("migrate: read context turns: %w", err)
	}
	switch {
	case turns == 0 && built < 0:
		turns = DefaultContextTurns
	case turns == 0:
		turns = built
	case turns < 0:
		turns = 0
	}
	if built != turns {
		if err := s.rebuildIndex(ctx, tx, turns); err != nil {
			return err
		}
	}
	if err := s.setupVectors(ctx, tx, opt); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}

// CurrentSchemaVersion is the schema version this mnemo migrates a store
// to.
func CurrentSchemaVersion() int { return len(migrations) }

// SchemaVersion returns the number of migrations applied.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.pool.QueryRow(ctx, `SELECT value::int FROM meta WHERE key = 'schema_version'`).Scan(&v)
	return v, err
}

// Instance implements store.Store: a random number drawn when the schema
// was created.
func (s *Store) Instance(ctx context.Context) (string, error) {
	if err := s.check(); err != nil {
		return "", err
	}
	var v string
	if err := s.pool.QueryRow(ctx, `SELECT value FROM meta WHERE key = 'instance'`).Scan(&v); err != nil {
		return "", fmt.Errorf("read the database's instance: %w", err)
	}
	return v, nil
}

// MarkWatermark implements store.Store.
func (s *Store) MarkWatermark(ctx context.Context, profile string, seq int64) (string, error) {
	if err := s.check(); err != nil {
		return "", err
	}
	mark := rand.Text()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO watermarks (profile, seq, mark) VALUES ($1, $2, $3)`, profile, seq, mark); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM watermarks WHERE profile = $1 AND id <=
			(SELECT id FROM watermarks WHERE profile = $1 ORDER BY id DESC OFFSET $2 LIMIT 1)`, profile, store.KeptWatermarks)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("record a watermark: %w", mapErr(err))
	}
	return mark, nil
}

// WatermarkMarked implements store.Store.
func (s *Store) WatermarkMarked(ctx context.Context, profile string, seq int64, mark string) (bool, error) {
	if err := s.check(); err != nil {
		return false, err
	}
	var ok bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM watermarks WHERE mark = $1 AND profile = $2 AND seq = $3)`,
		mark, profile, seq).Scan(&ok); err != nil {
		return false, fmt.Errorf("read a watermark: %w", err)
	}
	return ok, nil
}

// Sync implements store.Store: a commit PostgreSQL acknowledged is durable
// (unless the server runs with synchronous_commit off or fsync off, which
// is its operator's choice), so there is nothing to do but check the
// server answers.
func (s *Store) Sync(ctx context.Context) error {
	if err := s.check(); err != nil {
		return err
	}
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	return nil
}

// Sequence implements store.Store: each profile's changes are numbered
// apart (from one sequence, so a profile deleted and created again keeps
// counting up).
func (s *Store) Sequence(ctx context.Context, profile string) (int64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	var v int64
	err := s.pool.QueryRow(ctx, `SELECT coalesce((SELECT seq FROM profiles WHERE name = $1), 0)`, profile).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("read change sequence: %w", err)
	}
	return v, nil
}

// Versions implements store.Store.
func (s *Store) Versions(ctx context.Context, profile string) (store.Versions, error) {
	if err := s.check(); err != nil {
		return store.Versions{}, err
	}
	var v store.Versions
	err := s.pool.QueryRow(ctx, `SELECT coalesce((SELECT seq FROM profiles WHERE name = $1), 0),
		(SELECT value::bigint FROM meta WHERE key = 'settings_version')`, profile).Scan(&v.Changes, &v.Settings)
	if err != nil {
		return v, fmt.Errorf("read change sequence and settings version: %w", err)
	}
	return v, nil
}

// ---------------------------------------------------------------------------
// Times: timestamptz holds microseconds; the nanoseconds below them are
// kept apart.

// splitTime returns t truncated to the microsecond and the nanoseconds it
// dropped.
func splitTime(t time.Time) (time.Time, int16) {
	t = t.UTC()
	ns := t.Nanosecond() % 1000
	return t.Add(-time.Duration(ns)), int16(ns)
}

// joinTime is the inverse of splitTime, in UTC.
func joinTime(t time.Time, ns int16) time.Time {
	return t.UTC().Add(time.Duration(ns))
}

// timeWords renders when a memory occurred as its time field holds it.
func timeWords(t time.Time) string { return textindex.TimeWords(t) }

// batchErr names memory i of a batch of n in err.
func batchErr(n, i int, err error) error {
	if n == 1 {
		return err
	}
	return fmt.Errorf("memory %d: %w", i, err)
}

// Lead takes the lease of background task name among every process on
// the store's schema: a session-level advisory lock on a connection of
// its own (outside the pool), so that it ends with the process however it
// ends. ok is false when another process holds it; release ends it.
func (s *Store) Lead(ctx context.Context, name string) (release func(), ok bool, err error) {
	if err := s.check(); err != nil {
		return nil, false, err
	}
	return s.lead(ctx, name, false)
}

// lead is Lead; with wait, it waits for the lease (until ctx ends)
// instead of returning ok false. It asks again every leadPoll rather than
// waiting in pg_advisory_lock: a session waiting there holds a snapshot,
// which a CREATE INDEX CONCURRENTLY run by the lease's holder would wait
// for, a deadlock PostgreSQL cannot see.
func (s *Store) lead(ctx context.Context, name string, wait bool) (release func(), ok bool, err error) {
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, false, fmt.Errorf("lead %s: %w", name, err)
	}
	key := "mnemo lead " + s.schema + " " + name
	for {
		err = conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtext($1))`, key).Scan(&ok)
		if err != nil || ok || !wait {
			break
		}
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(leadPoll):
			continue
		}
		break
	}
	if err != nil || !ok {
		_ = conn.Close(context.WithoutCancel(ctx))
		if err != nil {
			return nil, false, fmt.Errorf("lead %s: %w", name, err)
		}
		return nil, false, nil
	}
	// The lock is released before the connection closes: a closed
	// connection's session ends (and its locks with it) only when its
	// backend has exited, after Close returns, so another process asking
	// at once could be refused. Closing alone still ends a lease whose
	// unlock fails, as a killed holder's does.
	return func() {
		bg := context.WithoutCancel(ctx)
		_, _ = conn.Exec(bg, `SELECT pg_advisory_unlock(hashtext($1))`, key)
		_ = conn.Close(bg)
	}, true, nil
}
