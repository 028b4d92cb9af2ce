// Package sqlitestore implements store.Store on one SQLite file (opened by
// internal/sqlitedb: the cgo driver when built with -tags sqlite_fts5, else
// the pure-Go one): a contentless FTS5 index the store writes beside every
// change, given the tokens of FTS5's porter unicode61 tokenizer made in Go
// (lexindex.go), for the lexical leg; embeddings as little-endian float32
// BLOBs; WAL, one writer connection and a pool of readers.
package sqlitestore

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/mnemo-dev/mnemo/internal/ftstoken"
	"github.com/mnemo-dev/mnemo/internal/sqlitedb"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
)

// DefaultBusyTimeout is how long a connection waits for a lock held by
// another connection or process before failing.
const DefaultBusyTimeout = 10 * time.Second

// Page cache and memory map sizes per connection. No memory map: SQLite
// unmaps it whenever another connection has written (every add, every
// flush of access statistics), and the page faults that follow made a
// recall right after an add take 9.3 ms instead of 3.7 ms at 10k memories
// (RecallAfterWrite_10k, median of 2 alternated runs); warm, recall took
// 1.63 ms mapped and 1.47 ms not at 10k (median of 3), 5.40 and 5.67 ms at
// 100k (median of 4), where the cache holds less of the working set.
const (
	DefaultMmapSize = 0
	DefaultCacheKiB = 32 << 10
)

// Options tunes a Store. The zero value is ready to use.
type Options struct {
	// Readers is the size of the reader pool. Defaults to max(4, GOMAXPROCS).
	Readers int
	// BusyTimeout defaults to DefaultBusyTimeout.
	BusyTimeout time.Duration
	// CommonTermRatio is the fraction of all memories above which a term
	// of an OR query counts as common (see Store.Lexical). Defaults to
	// DefaultCommonTermRatio; negative scores every OR match.
	CommonTermRatio float64
	// CommonTermMinDocs is the least number of memories a common term
	// occurs in, whatever the ratio. Defaults to DefaultCommonTermMinDocs.
	CommonTermMinDocs int
	// ContextTurns is how many previous turns of its session a memory's
	// context field holds in the full-text index (see lexindex.go); -1 for
	// none; 0 keeps what the database is indexed with (a new database:
	// DefaultContextTurns). The number is kept in the database; opening it
	// with another number rebuilds its index. A context field makes a turn
	// findable by the words of the turn before it, and makes every query
	// read the context's matches too (docs/eval, docs/bench.md).
	ContextTurns int
	// MustExist makes Open fail, with an error wrapping ErrNotFound, when
	// there is no database at the path, instead of creating one (and its
	// directories).
	MustExist bool
	// ReadOnly opens the database for reading only: it must exist and be
	// at the current schema version, and every write fails with ErrReadOnly.
	// A database file the process may not write is opened so even without
	// it.
	ReadOnly bool
	// RareTermBudget bounds the rows an OR query scores: its rare terms
	// are taken rarest first while their matches add up to at most
	// max(RareTermBudget, RareTermBudgetRatio × all memories), the rarest
	// always. Defaults to DefaultRareTermBudget; negative lifts the bound.
	RareTermBudget int
	// Logger hears, before Open re-indexes every memory (a migration that
	// does, or another ContextTurns: about a minute per million), how
	// many: a warning from 50,000 memories, a note below; and a note when
	// the migration or rebuild is committed. Nil discards them.
	Logger *slog.Logger
	// OneShot is for a process that makes a call or two and exits (the
	// CLI's commands but serve, mcp, bench and index): the store keeps no
	// copy of the rows' lengths for the ranking function (see
	// docLengths), whose load reads every row's and would run beside the
	// query for nothing; its queries look the lengths up.
	OneShot bool
}

// Common-term thresholds of OR queries, measured with LoCoMo questions
// over LoCoMo turns: at 7.5% the OR query takes 0.58 of its time at 10k
// memories and 0.43 at 100k, and keeps 99.8% of the exact top 10 (the
// exact list for 96% of the queries at 10k, 99% at 100k); 5% was faster
// (0.49, 0.37) but moved scifact's hybrid recall@10 by -0.0025, 10%
// slower (0.71, 0.65). Under 250 memories a term costs too little to set
// apart: at 1k memories counting cost more than it saved (BenchmarkLexical
// 1k/any 1.52 ms against 1.34).
const (
	DefaultCommonTermRatio   = 0.075
	DefaultCommonTermMinDocs = 250
)

// The rare-term budget. bm25() per matched row is the OR query's cost, and
// the rarest terms carry the most weight, so the best rows nearly always
// match them. Measured with LoCoMo questions over LoCoMo turns (cgo
// driver), against the exact OR list: at 10k memories (budget 1,000)
// 556 rows scored instead of 774, 22% less time, top 10 the same for
// 99.88% of entries (99.77% without the budget); at 100k (budget 10,000)
// 5,940 rows instead of 6,728, 7.5% less time, top 10 identical. A budget
// of 1,000 at 100k kept only 81% of the top 10. locomo-dev and scifact are
// too small for the budget to change a result.
const (
	DefaultRareTermBudget = 1000
	RareTermBudgetRatio   = 0.1
)

// Store is a SQLite-backed store.Store. It is safe for concurrent use, and
// several processes may open the same file (SQLite's locking serialises
// writers; the busy timeout makes them wait instead of failing).
type Store struct {
	w      *sql.DB // exactly one connection: SQLite allows one writer
	r      *sql.DB
	rc     *stmtCache // r's statements, prepared once
	path   string
	closed atomic.Bool
	// commonRatio and commonMin are Options.CommonTermRatio and
	// CommonTermMinDocs with defaults applied; commonRatio ≤ 0 is off.
	commonRatio float64
	commonMin   int
	rareBudget  int // ≤ 0: no bound
	terms       termCache
	// setTurns is the number of context turns Options.ContextTurns asks
	// the index to be built with, -1 to keep the database's.
	setTurns int
	// rankFn is sqlitedb.RankFunction: BM25 in C from the profile's
	// statistics. Empty (the pure-Go build): the store scores rows in Go
	// from their text.
	rankFn string
	// oneShot is Options.OneShot.
	oneShot bool
	log     *slog.Logger
	// ids are the numbers of the profiles and scope names committed.
	ids    *scopeIDs
	lensMu sync.Mutex
	lens   docLengths
	// bgCtx ends at Close, which waits for bg: background loads.
	bgCtx  context.Context
	stopBG context.CancelFunc
	bg     sync.WaitGroup
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database at path and migrates it to the
// current schema.
func Open(ctx context.Context, path string, opt Options) (*Store, error) {
	if opt.Readers <= 0 {
		opt.Readers = max(4, runtime.GOMAXPROCS(0))
	}
	if opt.BusyTimeout <= 0 {
		opt.BusyTimeout = DefaultBusyTimeout
	}
	if opt.CommonTermRatio == 0 {
		opt.CommonTermRatio = DefaultCommonTermRatio
	}
	if opt.CommonTermMinDocs <= 0 {
		opt.CommonTermMinDocs = DefaultCommonTermMinDocs
	}
	if opt.RareTermBudget == 0 {
		opt.RareTermBudget = DefaultRareTermBudget
	}
	switch _, err := os.Stat(path); {
	case errors.Is(err, fs.ErrNotExist) && (opt.MustExist || opt.ReadOnly):
		return nil, fmt.Errorf("open %s: no database at this path: %w", path, mnemotype.ErrNotFound)
	case errors.Is(err, fs.ErrNotExist):
		if err := createPrivate(path); err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
	case err != nil:
		return nil, fmt.Errorf("open %s: %w", path, err)
	case !opt.ReadOnly && !writable(path):
		opt.ReadOnly = true
	}
	// A larger page cache keeps FTS5 doclists and row lookups off
	// the read syscall path: with SQLite's 2 MiB default cache, recall at
	// 10k memories spent most of its time in pread.
	pragmas := []string{
		fmt.Sprintf("busy_timeout=%d", opt.BusyTimeout.Milliseconds()), "synchronous=NORMAL",
		"foreign_keys=1", fmt.Sprintf("mmap_size=%d", DefaultMmapSize), fmt.Sprintf("cache_size=-%d", DefaultCacheKiB),
	}
	setTurns := opt.ContextTurns
	switch {
	case setTurns == 0:
		setTurns = -1
	case setTurns < 0:
		setTurns = 0
	}
	s := &Store{path: path, commonRatio: opt.CommonTermRatio, commonMin: opt.CommonTermMinDocs, rareBudget: opt.RareTermBudget,
		rankFn: sqlitedb.RankFunction, oneShot: opt.OneShot, setTurns: setTurns, ids: newScopeIDs(), log: opt.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if opt.ReadOnly {
		return s, s.openReadOnly(ctx, pragmas, opt.Readers)
	}
	// Immediate: the writer takes the write lock at BEGIN, so a transaction
	// never fails half-way on a lock upgrade (SQLITE_BUSY without waiting).
	w, err := sqlitedb.Open(path, sqlitedb.Options{Pragmas: pragmas, Immediate: true})
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	if err := sqlitedb.EnableWAL(ctx, w, opt.BusyTimeout); err != nil {
		w.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	s.w = w
	if err := s.migrate(ctx); err != nil {
		w.Close()
		return nil, err
	}
	r, err := sqlitedb.Open(path, sqlitedb.Options{Pragmas: append(pragmas, "query_only=1")})
	if err != nil {
		w.Close()
		return nil, err
	}
	r.SetMaxOpenConns(opt.Readers)
	r.SetMaxIdleConns(opt.Readers)
	r.SetConnMaxLifetime(0)
	s.r, s.rc = r, newStmtCache(r)
	s.bgCtx, s.stopBG = context.WithCancel(context.Background())
	return s, nil
}

// openReadOnly opens the reader pool alone, on a database that must be at
// the current schema version.
func (s *Store) openReadOnly(ctx context.Context, pragmas []string, readers int) error {
	r, err := sqlitedb.Open(s.path, sqlitedb.Options{Pragmas: append(pragmas, "query_only=1"), ReadOnly: true})
	if err != nil {
		return err
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers)
	r.SetConnMaxLifetime(0)
	var v int
	if err := r.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v); err != nil {
		r.Close()
		return fmt.Errorf("open %s read-only: read schema version: %w", s.path, err)
	}
	if v != len(migrations) {
		r.Close()
		return fmt.Errorf("open %s read-only: its schema is version %d, this mnemo needs %d: open it once with write access to migrate it",
			s.path, v, len(migrations))
	}
	s.r, s.rc = r, newStmtCache(r)
	s.bgCtx, s.stopBG = context.WithCancel(context.Background())
	return nil
}

// createPrivate creates an empty database file readable by its owner
// alone (SQLite gives its -wal and -shm files the same mode), and its
// missing directories likewise.
func createPrivate(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create database directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil // another process created it meanwhile
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// writable reports whether this process may write the file at path.
func writable(path string) bool {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return !errors.Is(err, fs.ErrPermission) && !errors.Is(err, syscall.EROFS)
	}
	f.Close()
	return true
}

// writer returns the writer pool, or an ErrReadOnly error.
func (s *Store) writer() (*sql.DB, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if s.w == nil {
		return nil, fmt.Errorf("%s is open read-only: %w", s.path, mnemotype.ErrReadOnly)
	}
	return s.w, nil
}

func (s *Store) migrate(ctx context.Context) error {
	var fts int
	if err := s.w.QueryRowContext(ctx, `SELECT sqlite_compileoption_used('ENABLE_FTS5')`).Scan(&fts); err != nil {
		return fmt.Errorf("open %s: %w", s.path, err)
	}
	if fts != 1 {
		return fmt.Errorf("open %s: this SQLite build lacks FTS5", s.path)
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if code, ok := sqlitedb.Code(err); ok && sqlitedb.Primary(code) == sqlitedb.CodeBusy {
		return fmt.Errorf("open %s: another process held the database's write lock for longer than the busy timeout "+
			"(a process migrating the database, or rebuilding its full-text index, holds it until done): %w", s.path, err)
	}
	if err != nil {
		return fmt.Errorf("migrate %s: %w", s.path, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var v int
	err = tx.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version(version) VALUES (0)`); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	case err != nil:
		return fmt.Errorf("migrate: read schema version: %w", err)
	}
	if v > len(migrations) {
		return fmt.Errorf("open %s: schema version %d is newer than this mnemo (%d): upgrade mnemo", s.path, v, len(migrations))
	}
	announced, err := s.announceMigration(ctx, tx, v)
	if err != nil {
		return err
	}
	began := time.Now()
	if err := applyMigrations(ctx, tx, v, len(migrations)); err != nil {
		return err
	}
	turns := s.setTurns
	if turns < 0 {
		// The database's number; -1 (never built) for a new database, or
		// one written before the context field existed.
		if err := tx.QueryRowContext(ctx, `SELECT value FROM counters WHERE name = 'context_turns'`).Scan(&turns); err != nil {
			return fmt.Errorf("open %s: read the index's context turns: %w", s.path, err)
		}
		if turns < 0 {
			turns = DefaultContextTurns
		}
	}
	rebuilt := false
	if !announced {
		if rebuilt, err = s.announceRebuild(ctx, tx, turns); err != nil {
			return err
		}
	}
	if err := ensureIndex(ctx, tx, turns); err != nil {
		return fmt.Errorf("open %s: %w", s.path, err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = ?`, len(migrations)); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate %s: %w", s.path, err)
	}
	if v > 0 && v < len(migrations) {
		s.log.Info("migrated the database", "path", s.path, "from_version", v, "to_version", len(migrations), "seconds", time.Since(began).Seconds())
	}
	if rebuilt {
		s.log.Info("rebuilt the full-text index", "path", s.path, "context_turns", turns, "seconds", time.Since(began).Seconds())
	}
	return nil
}

// announceMigration warns, before migrating a database from version v,
// that a migration to come re-indexes every memory (reindexingMigrations):
// the process holds the write lock meanwhile, and other processes wait for
// it. It reports whether it did.
func (s *Store) announceMigration(ctx context.Context, tx *sql.Tx, v int) (bool, error) {
	if v == 0 || !slices.ContainsFunc(reindexingMigrations, func(m int) bool { return m > v && m <= len(migrations) }) {
		return false, nil
	}
	return s.announceRebuilding(ctx, tx, "migrating the database: re-indexing every memory for full-text search, once; other processes wait for it",
		"from_version", v, "to_version", len(migrations))
}

// announceRebuild warns, before ensureIndex rebuilds the full-text index
// for another number of context turns (Options.ContextTurns), that it
// re-indexes every memory, and reports whether it did.
func (s *Store) announceRebuild(ctx context.Context, tx *sql.Tx, turns int) (bool, error) {
	var built int
	if err := tx.QueryRowContext(ctx, `SELECT value FROM counters WHERE name = 'context_turns'`).Scan(&built); err != nil {
		return false, fmt.Errorf("open %s: read the index's context turns: %w", s.path, err)
	}
	if built == turns {
		return false, nil
	}
	return s.announceRebuilding(ctx, tx, "rebuilding the full-text index for another number of context turns: re-indexing every memory, once; other processes wait for it",
		"from_context_turns", built, "to_context_turns", turns)
}

// announceRebuilding logs msg with attrs and the number of memories, a
// warning from warnFrom of them, nothing when there is none; it reports
// whether it logged.
func (s *Store) announceRebuilding(ctx context.Context, tx *sql.Tx, msg string, attrs ...any) (bool, error) {
	var n int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM memories`).Scan(&n); err != nil {
		return false, fmt.Errorf("open %s: %w", s.path, err)
	}
	if n == 0 {
		return false, nil
	}
	level := slog.LevelInfo
	if n >= warnFrom {
		level = slog.LevelWarn
	}
	s.log.Log(ctx, level, msg, append([]any{"path", s.path}, append(attrs, "memories", n)...)...)
	return true, nil
}

// warnFrom is the number of memories from which re-indexing them is a
// warning rather than a note (tens of thousands take a second or two).
const warnFrom = 50_000

// SchemaVersion returns the number of migrations applied.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.rc.QueryRowContext(ctx, `SELECT version FROM schema_version`).Scan(&v)
	return v, err
}

// Close checkpoints the WAL and closes the database. It is idempotent.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.stopBG()
	s.bg.Wait()
	s.rc.close()
	if s.w == nil {
		if err := s.r.Close(); err != nil {
			return fmt.Errorf("close %s: %w", s.path, err)
		}
		return nil
	}
	// Best effort: fold the WAL into the main file so a copied .db is whole.
	_, _ = s.w.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	err := errors.Join(s.r.Close(), s.w.Close())
	if err != nil {
		return fmt.Errorf("close %s: %w", s.path, err)
	}
	return nil
}

func (s *Store) check() error {
	if s.closed.Load() {
		return mnemotype.ErrClosed
	}
	return nil
}

// mapErr maps a driver error to mnemo's sentinels by SQLite's result code
// (never by message text): a full disk or database is ErrStorageFull.
// Other errors are returned as they are.
func mapErr(err error) error {
	code, ok := sqlitedb.Code(err)
	if !ok {
		return err
	}
	switch sqlitedb.Primary(code) {
	case sqlitedb.CodeFull:
		return fmt.Errorf("%w: %w", mnemotype.ErrStorageFull, err)
	}
	return err
}

// isUnique reports whether err is a UNIQUE or PRIMARY KEY constraint
// violation.
func isUnique(err error) bool {
	code, ok := sqlitedb.Code(err)
	return ok && (code == sqlitedb.CodeConstraintUnique || code == sqlitedb.CodeConstraintPK)
}

// rowContext returns ctx without its cancellation, for the statements of
// a write transaction begun with ctx: the transaction stays bound to ctx
// (database/sql rolls it back once ctx is done, and its next statement
// fails), and the caller checks ctx between rows. go-sqlite3 runs a
// statement under a cancellable context on a goroutine of its own, a
// thread handoff per row that costs more than a row's insert.
func rowContext(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// reportEnd replaces *err, when ctx has ended, by ctx's error: a statement
// run under rowContext fails with database/sql's ErrTxDone (or a closed
// statement) once the transaction was rolled back for ctx.
func reportEnd(ctx context.Context, what string, err *error) {
	if *err != nil && ctx.Err() != nil && !errors.Is(*err, ctx.Err()) {
		*err = fmt.Errorf("%s: %w", what, ctx.Err())
	}
}

// nextSeq advances the change counter by n inside tx and returns the first
// new value.
func nextSeq(ctx context.Context, tx *sql.Tx, n int) (int64, error) {
	var last int64
	if err := tx.QueryRowContext(ctx, `UPDATE counters SET value = value + ? WHERE name = 'seq' RETURNING value`, n).Scan(&last); err != nil {
		return 0, fmt.Errorf("advance change sequence: %w", err)
	}
	return last - int64(n) + 1, nil
}

const insertSQL = `INSERT INTO memories
	(id, profile, project, session, session_seq, actor, kind, content, importance, occurred_at, created_at, accessed_at, access_count,
	 metadata, embedding, embedding_model, embedding_dim, seq)
	VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`

// Insert implements store.Store.
func (s *Store) Insert(ctx context.Context, mems []mnemotype.Memory) (err error) {
	w, err := s.writer()
	if err != nil {
		return err
	}
	if len(mems) == 0 {
		return nil
	}
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("insert memories: %w", err)
	}
	defer tx.Rollback()
	live := ctx
	ctx = rowContext(ctx)
	defer reportEnd(live, "insert memories", &err)
	given := mems
	mems = slices.Clone(mems) // the caller sees the turns given only once committed
	seq, err := nextSeq(ctx, tx, len(mems))
	if err != nil {
		return err
	}
	stmt, err := tx.PrepareContext(ctx, insertSQL)
	if err != nil {
		return fmt.Errorf("insert memories: %w", err)
	}
	defer stmt.Close()
	ix, err := s.newWriteIndexer(ctx, tx)
	if err != nil {
		return fmt.Errorf("insert memories: %w", err)
	}
	stop := make(chan struct{})
	defer close(stop)
	contents := pretokenize(mems, stop)
	dims := map[string]int{}
	for i := range mems {
		if err := live.Err(); err != nil {
			return fmt.Errorf("insert memories: %w", err)
		}
		m := &mems[i]
		if m.ID == "" {
			return mnemotype.Invalidf("memory %d has no id", i)
		}
		if len(m.Embedding) > 0 {
			dim, ok := dims[m.Profile]
			if !ok {
				if dim, err = embeddingDim(ctx, tx, m.Profile); err != nil {
					return err
				}
			}
			if dim != 0 && dim != len(m.Embedding) {
				return batchErr(len(mems), i, fmt.Errorf("%w: profile %q holds %d-d embeddings, this one (%s) has %d",
					mnemotype.ErrDimensionMismatch, m.Profile, dim, m.EmbeddingModel, len(m.Embedding)))
			}
			dims[m.Profile] = len(m.Embedding)
		}
		var blob []byte
		var model any
		var dim any
		if len(m.Embedding) > 0 {
			blob = EncodeVector(m.Embedding)
			model, dim = m.EmbeddingModel, len(m.Embedding)
		}
		accessed := m.AccessedAt
		if accessed.IsZero() {
			accessed = m.CreatedAt
		}
		if m.OccurredAt.IsZero() {
			m.OccurredAt = m.CreatedAt
		}
		for _, t := range []struct {
			field string
			at    time.Time
		}{{"created_at", m.CreatedAt}, {"accessed_at", accessed}, {"occurred_at", m.OccurredAt}} {
			if err := mnemotype.CheckTime(t.field, t.at); err != nil {
				return batchErr(len(mems), i, err)
			}
		}
		if err := ix.numberTurn(ctx, m); err != nil {
			return fmt.Errorf("insert memory %s: number its turn: %w", m.ID, err)
		}
		// Exec, not a query with RETURNING: database/sql watches every
		// query's context in a goroutine of its own, which costs more than
		// the insert.
		res, err := stmt.ExecContext(ctx, m.ID, m.Profile, m.Project, m.Session, m.Seq, m.Actor, string(m.Kind), m.Content,
			m.Importance, formatTime(m.OccurredAt), formatTime(m.CreatedAt), formatTime(accessed), m.AccessCount,
			nullJSON(m.Metadata), blob, model, dim, seq+int64(i))
		var rid int64
		if err == nil {
			rid, err = res.LastInsertId()
		}
		if err != nil {
			if isUnique(err) {
				return fmt.Errorf("%w: id %q %w", mnemotype.ErrInvalid, m.ID, mnemotype.ErrExists)
			}
			return fmt.Errorf("insert memory %s: %w", m.ID, mapErr(err))
		}
		if err := ix.addNew(ctx, rid, m, <-contents); err != nil {
			return err
		}
	}
	if err := ix.flush(ctx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("insert memories: commit: %w", mapErr(err))
	}
	s.ids.learn(ix)
	copy(given, mems)
	return nil
}

func nullJSON(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

// EncodeVector and DecodeVector are the embedding column's form
// (store's).
var (
	EncodeVector = store.EncodeVector
	DecodeVector = store.DecodeVector
)

const memoryCols = `id, profile, project, session, session_seq, actor, kind, content, importance, occurred_at, created_at, accessed_at,
	access_count, metadata, embedding_model`

type scanner interface{ Scan(...any) error }

func scanMemory(sc scanner, extra ...any) (mnemotype.Memory, error) {
	var m mnemotype.Memory
	var kind string
	var occurred, created, accessed string
	var meta, model sql.NullString
	dest := append([]any{&m.ID, &m.Profile, &m.Project, &m.Session, &m.Seq, &m.Actor, &kind, &m.Content, &m.Importance,
		&occurred, &created, &accessed, &m.AccessCount, &meta, &model}, extra...)
	if err := sc.Scan(dest...); err != nil {
		return m, err
	}
	m.Kind = mnemotype.Kind(kind)
	var err error
	if m.OccurredAt, err = parseTime(occurred); err != nil {
		return m, fmt.Errorf("memory %s: occurred_at: %w", m.ID, err)
	}
	if m.CreatedAt, err = parseTime(created); err != nil {
		return m, fmt.Errorf("memory %s: created_at: %w", m.ID, err)
	}
	if m.AccessedAt, err = parseTime(accessed); err != nil {
		return m, fmt.Errorf("memory %s: accessed_at: %w", m.ID, err)
	}
	if meta.Valid {
		m.Metadata = json.RawMessage(meta.String)
	}
	m.EmbeddingModel = model.String
	return m, nil
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
		cols += ", embedding"
	}
	q := `SELECT ` + cols + ` FROM memories WHERE profile = ? AND id IN (SELECT value FROM json_each(?))`
	if len(p.IDs) <= maxPointReadIDs {
		var err error
		if ctx, err = pointRead(ctx); err != nil {
			return nil, fmt.Errorf("get memories: %w", err)
		}
	}
	rows, err := s.rc.QueryContext(ctx, q, p.Profile, jsonList(p.IDs))
	if err != nil {
		return nil, fmt.Errorf("get memories: %w", err)
	}
	defer rows.Close()
	byID := make(map[string]mnemotype.Memory, len(p.IDs))
	for rows.Next() {
		var blob []byte
		var extra []any
		if p.WithEmbedding {
			extra = []any{&blob}
		}
		m, err := scanMemory(rows, extra...)
		if err != nil {
			return nil, fmt.Errorf("get memories: %w", err)
		}
		if len(blob) > 0 {
			if m.Embedding, err = DecodeVector(blob); err != nil {
				return nil, fmt.Errorf("get memory %s: %w", m.ID, err)
			}
		}
		byID[m.ID] = m
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("get memories: %w", err)
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

// Update implements store.Store.
func (s *Store) Update(ctx context.Context, p store.UpdateParams) (mnemotype.Memory, error) {
	w, err := s.writer()
	if err != nil {
		return mnemotype.Memory{}, err
	}
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return mnemotype.Memory{}, fmt.Errorf("update memory %s: %w", p.ID, err)
	}
	defer tx.Rollback()
	var blob []byte
	var rid int64
	m, err := scanMemory(tx.QueryRowContext(ctx, `SELECT `+memoryCols+`, embedding, rid FROM memories WHERE profile = ? AND id = ?`,
		p.Profile, p.ID), &blob, &rid)
	if errors.Is(err, sql.ErrNoRows) {
		return mnemotype.Memory{}, fmt.Errorf("update memory %s: %w", p.ID, mnemotype.ErrNotFound)
	}
	if err != nil {
		return mnemotype.Memory{}, fmt.Errorf("update memory %s: %w", p.ID, err)
	}
	if len(blob) > 0 {
		if m.Embedding, err = DecodeVector(blob); err != nil {
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
		if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(session_seq), 0) + 1 FROM memories WHERE profile = ? AND session = ? AND rid <> ?`,
			m.Profile, m.Session, rid).Scan(&m.Seq); err != nil {
			return mnemotype.Memory{}, fmt.Errorf("update memory %s: number its turn: %w", p.ID, err)
		}
	}
	seq, err := nextSeq(ctx, tx, 1)
	if err != nil {
		return mnemotype.Memory{}, err
	}
	var newBlob []byte
	var model, dim any
	if len(m.Embedding) > 0 {
		newBlob, model, dim = EncodeVector(m.Embedding), m.EmbeddingModel, len(m.Embedding)
	}
	_, err = tx.ExecContext(ctx, `UPDATE memories SET content = ?, kind = ?, project = ?, session = ?, session_seq = ?, actor = ?,
		occurred_at = ?, importance = ?, metadata = ?, embedding = ?, embedding_model = ?, embedding_dim = ?, seq = ?
		WHERE profile = ? AND id = ?`,
		m.Content, string(m.Kind), m.Project, m.Session, m.Seq, m.Actor, formatTime(m.OccurredAt), m.Importance, nullJSON(m.Metadata),
		newBlob, model, dim, seq, p.Profile, p.ID)
	if err != nil {
		return mnemotype.Memory{}, fmt.Errorf("update memory %s: %w", p.ID, mapErr(err))
	}
	ix, err := s.newWriteIndexer(ctx, tx)
	if err != nil {
		return mnemotype.Memory{}, fmt.Errorf("update memory %s: %w", p.ID, err)
	}
	if m.Content != old.Content || m.Kind != old.Kind || m.Project != old.Project || m.Session != old.Session ||
		m.Actor != old.Actor || m.Seq != old.Seq || !m.OccurredAt.Equal(old.OccurredAt) {
		// After the row's update, so that the turns re-indexed around it
		// read its new content.
		if err := ix.remove(ctx, rid, &old); err != nil {
			return mnemotype.Memory{}, fmt.Errorf("update memory %s: %w", p.ID, err)
		}
		if err := ix.add(ctx, rid, &m); err != nil {
			return mnemotype.Memory{}, fmt.Errorf("update memory %s: %w", p.ID, err)
		}
		if err := ix.flush(ctx); err != nil {
			return mnemotype.Memory{}, fmt.Errorf("update memory %s: %w", p.ID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return mnemotype.Memory{}, fmt.Errorf("update memory %s: commit: %w", p.ID, mapErr(err))
	}
	s.ids.learn(ix)
	return m, nil
}

// Delete implements store.Store.
func (s *Store) Delete(ctx context.Context, profile, id string) error {
	w, err := s.writer()
	if err != nil {
		return err
	}
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("delete memory %s: %w", id, err)
	}
	defer tx.Rollback()
	m := mnemotype.Memory{ID: id, Profile: profile}
	var rid int64
	err = tx.QueryRowContext(ctx, `DELETE FROM memories WHERE profile = ? AND id = ? RETURNING rid, session, session_seq`, profile, id).
		Scan(&rid, &m.Session, &m.Seq)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("delete memory %s: %w", id, mnemotype.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("delete memory %s: %w", id, mapErr(err))
	}
	ix, err := s.newWriteIndexer(ctx, tx)
	if err != nil {
		return fmt.Errorf("delete memory %s: %w", id, err)
	}
	if err := ix.remove(ctx, rid, &m); err != nil {
		return fmt.Errorf("delete memory %s: %w", id, err)
	}
	if err := ix.flush(ctx); err != nil {
		return fmt.Errorf("delete memory %s: %w", id, err)
	}
	seq, err := nextSeq(ctx, tx, 1)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO tombstones(seq, profile, id) VALUES (?,?,?)`, seq, profile, id); err != nil {
		return fmt.Errorf("delete memory %s: %w", id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("delete memory %s: commit: %w", id, mapErr(err))
	}
	s.ids.learn(ix)
	return nil
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
	cond, args := scopeSQL("m", sc)
	var page store.ListPage
	if p.Total {
		if err := s.rc.QueryRowContext(ctx, `SELECT count(*) FROM memories m WHERE `+cond, args...).Scan(&page.Total); err != nil {
			return store.ListPage{}, fmt.Errorf("count memories: %w", err)
		}
	}
	if p.Cursor != "" {
		at, id, err := decodeCursor(p.Cursor)
		if err != nil {
			return store.ListPage{}, err
		}
		cond, args = cond+" AND (m.created_at, m.id) > (?, ?)", append(args, at, id)
	}
	cols := memoryCols
	if p.WithEmbedding {
		cols += ", embedding"
	}
	q := `SELECT ` + cols + ` FROM memories m WHERE ` + cond + ` ORDER BY m.created_at, m.id LIMIT ?`
	rows, err := s.rc.QueryContext(ctx, q, append(args, p.Limit+1)...)
	if err != nil {
		return store.ListPage{}, fmt.Errorf("list memories: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var blob []byte
		var extra []any
		if p.WithEmbedding {
			extra = []any{&blob}
		}
		m, err := scanMemory(rows, extra...)
		if err != nil {
			return store.ListPage{}, fmt.Errorf("list memories: %w", err)
		}
		if len(blob) > 0 {
			if m.Embedding, err = DecodeVector(blob); err != nil {
				return store.ListPage{}, fmt.Errorf("list memory %s: %w", m.ID, err)
			}
		}
		page.Memories = append(page.Memories, m)
	}
	if err := rows.Err(); err != nil {
		return store.ListPage{}, fmt.Errorf("list memories: %w", err)
	}
	if len(page.Memories) > p.Limit {
		page.Memories = page.Memories[:p.Limit]
		last := page.Memories[p.Limit-1]
		page.NextCursor = encodeCursor(formatTime(last.CreatedAt), last.ID)
	}
	return page, nil
}

// A cursor is the last row's creation time (timeLayout) and id, base64url
// encoded.
func encodeCursor(at, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(at + "|" + id))
}

func decodeCursor(c string) (string, string, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil {
		if at, id, ok := strings.Cut(string(b), "|"); ok {
			if _, err := parseTime(at); err == nil {
				return at, id, nil
			}
		}
	}
	return "", "", mnemotype.Invalidf("cursor %q: not a cursor returned by a previous page", c)
}

// scopeSQL returns the WHERE conditions enforcing scope on table alias a.
func scopeSQL(a string, sc mnemotype.Scope) (string, []any) {
	conds := []string{a + ".profile = ?"}
	args := []any{sc.Profile}
	if sc.Project != "" {
		conds, args = append(conds, a+".project = ?"), append(args, sc.Project)
	}
	if len(sc.Sessions) > 0 {
		conds = append(conds, a+".session IN (SELECT value FROM json_each(?))")
		args = append(args, jsonList(sc.Sessions))
	}
	if len(sc.Kinds) > 0 {
		conds = append(conds, a+".kind IN (SELECT value FROM json_each(?))")
		args = append(args, jsonList(sc.Kinds))
	}
	if len(sc.Exclude) > 0 {
		conds = append(conds, a+".id NOT IN (SELECT value FROM json_each(?))")
		args = append(args, jsonList(sc.Exclude))
	}
	if len(sc.Actors) > 0 {
		conds = append(conds, a+".actor IN (SELECT value FROM json_each(?))")
		args = append(args, jsonList(sc.Actors))
	}
	cond, targs := rangeAndMetadataSQL(a, sc)
	return strings.Join(conds, " AND ") + cond, append(args, targs...)
}

// rangeAndMetadataSQL returns the conditions (each preceded by AND)
// keeping the memories of table alias a in sc's time range and matching
// its metadata filter.
func rangeAndMetadataSQL(a string, sc mnemotype.Scope) (string, []any) {
	cond, args := timeRangeSQL(a, sc)
	for _, m := range sc.Metadata {
		c, margs := metadataSQL(a, m)
		cond, args = cond+" AND "+c, append(args, margs...)
	}
	return cond, args
}

// metadataSQL is the condition keeping the memories of table alias a whose
// metadata matches m (see mnemotype.MetadataMatch), through the JSON path
// $."key"; a key holding a double quote, a backslash or a control
// character, which such a path cannot quote, is compared as data through
// json_each instead (slower).
func metadataSQL(a string, m mnemotype.MetadataMatch) (string, []any) {
	col := a + `.metadata`
	if strings.ContainsFunc(m.Key, func(r rune) bool { return r == '"' || r == '\\' || r < 0x20 || r == 0x7f }) {
		member := `SELECT 1 FROM json_each(` + col + `) WHERE key = ?`
		switch v := m.Value.(type) {
		case string:
			return `EXISTS (` + member + ` AND type = 'text' AND value = ?)`, []any{m.Key, v}
		case float64:
			return `EXISTS (` + member + ` AND type IN ('integer', 'real') AND value = ?)`, []any{m.Key, v}
		case bool:
			return `EXISTS (` + member + ` AND type = '` + strconv.FormatBool(v) + `')`, []any{m.Key}
		default: // nil: null or absent
			return `NOT EXISTS (` + member + ` AND type != 'null')`, []any{m.Key}
		}
	}
	path := `$."` + m.Key + `"`
	switch v := m.Value.(type) {
	case string:
		return `(json_type(` + col + `, ?) = 'text' AND json_extract(` + col + `, ?) = ?)`, []any{path, path, v}
	case float64:
		return `(json_type(` + col + `, ?) IN ('integer', 'real') AND json_extract(` + col + `, ?) = ?)`, []any{path, path, v}
	case bool:
		return `json_type(` + col + `, ?) = '` + strconv.FormatBool(v) + `'`, []any{path}
	default: // nil: null or absent
		return `coalesce(json_type(` + col + `, ?), 'null') = 'null'`, []any{path}
	}
}

// timeRangeSQL returns the conditions (each preceded by AND) keeping the
// memories of table alias a that occurred in sc's time range.
func timeRangeSQL(a string, sc mnemotype.Scope) (string, []any) {
	var cond string
	var args []any
	if !sc.After.IsZero() {
		cond, args = cond+" AND "+a+".occurred_at >= ?", append(args, formatTime(sc.After))
	}
	if !sc.Before.IsZero() {
		cond, args = cond+" AND "+a+".occurred_at < ?", append(args, formatTime(sc.Before))
	}
	return cond, args
}

// jsonList renders a list for json_each: one statement argument however
// long the list (SQLite bounds the number of arguments, not their size).
func jsonList[T any](xs []T) string {
	b, err := json.Marshal(xs)
	if err != nil {
		panic(err) // strings and integers always marshal
	}
	return string(b)
}

// MatchExpr renders q in FTS5 syntax: every term the quoted phrase of its
// tokens, joined by implicit AND or by OR. User text therefore never
// reaches the FTS5 query language as operators.
func MatchExpr(q store.MatchQuery) string {
	parts := make([]string, len(q.Terms))
	for i, t := range q.Terms {
		// The index holds tokens (see ftsText): a term is the phrase of
		// its tokens. They hold no quote and no NUL.
		parts[i] = `"` + strings.Join(ftstoken.Tokens(t), " ") + `"`
	}
	if q.All {
		return strings.Join(parts, " ")
	}
	return strings.Join(parts, " OR ")
}

// RecentlyAccessed implements store.Store using the partial index
// memories_recent_embedded.
func (s *Store) RecentlyAccessed(ctx context.Context, scope mnemotype.Scope, n int) ([]string, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	if n <= 0 {
		return nil, nil
	}
	q, args := recentSQL(scope, n)
	rows, err := s.rc.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("recently accessed: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("recently accessed: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// recentSQL is RecentlyAccessed's query. Inside sessions, the sessions'
// rows are found by their index and sorted (the unary + keeps the planner
// off the recency index, whose walk for a small session's rows crosses
// the whole profile: 344 ms against 3 ms for a session of 1,000 in 1M);
// for a whole profile or a project, the recency index is the order itself.
func recentSQL(scope mnemotype.Scope, n int) (string, []any) {
	cond, args := scopeSQL("m", scope)
	order := `m.accessed_at`
	if len(scope.Sessions) > 0 {
		order = `+m.accessed_at`
	}
	return `SELECT m.id FROM memories m WHERE ` + cond + ` AND m.embedding IS NOT NULL ORDER BY ` + order + ` DESC, m.id LIMIT ?`,
		append(args, n)
}

// InScope implements store.Store.
func (s *Store) InScope(ctx context.Context, scope mnemotype.Scope, ids []string) ([]string, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	cond, args := scopeSQL("m", scope)
	if ids != nil {
		cond, args = cond+` AND m.id IN (SELECT value FROM json_each(?))`, append(args, jsonList(ids))
	}
	rows, err := s.rc.QueryContext(ctx, `SELECT m.id FROM memories m WHERE `+cond, args...)
	if err != nil {
		return nil, fmt.Errorf("memories in scope: %w", err)
	}
	defer rows.Close()
	out := []string{}
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("memories in scope: %w", err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("memories in scope: %w", err)
	}
	return out, nil
}

// Sequence implements store.Store: one sequence numbers every profile's
// changes (SQLite has one writer at a time).
func (s *Store) Sequence(ctx context.Context, _ string) (int64, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	var v int64
	ctx, err := pointRead(ctx)
	if err != nil {
		return 0, fmt.Errorf("read change sequence: %w", err)
	}
	if err := s.rc.QueryRowContext(ctx, `SELECT value FROM counters WHERE name = 'seq'`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read change sequence: %w", err)
	}
	return v, nil
}

// pointRead returns ctx for a read of a bounded handful of rows (by key,
// or a counter), which ends in microseconds: without its cancellation,
// since a cancellable context costs each query two goroutines (one of
// database/sql watching the rows, one of the driver to interrupt it),
// and a recall's hand-overs between threads with them. A context already
// done stops the read before it starts.
func pointRead(ctx context.Context) (context.Context, error) {
	if err := ctx.Err(); err != nil {
		return ctx, err
	}
	return context.WithoutCancel(ctx), nil
}

// maxPointReadIDs is the most ids Get reads as a point read (pointRead);
// a longer list stays cancellable.
const maxPointReadIDs = 1000

// Versions implements store.Store.
func (s *Store) Versions(ctx context.Context, _ string) (store.Versions, error) {
	if err := s.check(); err != nil {
		return store.Versions{}, err
	}
	var v store.Versions
	ctx, err := pointRead(ctx)
	if err != nil {
		return v, fmt.Errorf("read change sequence and settings version: %w", err)
	}
	if err := s.rc.QueryRowContext(ctx, `SELECT (SELECT value FROM counters WHERE name = 'seq'),
		(SELECT value FROM counters WHERE name = 'settings')`).Scan(&v.Changes, &v.Settings); err != nil {
		return v, fmt.Errorf("read change sequence and settings version: %w", err)
	}
	return v, nil
}

// Instance implements store.Store: a random number drawn when the
// database was created (or migrated to schema 9), in base 36.
func (s *Store) Instance(ctx context.Context) (string, error) {
	if err := s.check(); err != nil {
		return "", err
	}
	var v int64
	if err := s.rc.QueryRowContext(ctx, `SELECT value FROM counters WHERE name = 'instance'`).Scan(&v); err != nil {
		return "", fmt.Errorf("read the database's instance: %w", err)
	}
	return strconv.FormatInt(v, 36), nil
}

// MarkWatermark implements store.Store.
func (s *Store) MarkWatermark(ctx context.Context, profile string, seq int64) (string, error) {
	w, err := s.writer()
	if err != nil {
		return "", err
	}
	mark := rand.Text()
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("record a watermark: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO watermarks(profile, seq, mark) VALUES (?,?,?)`, profile, seq, mark); err != nil {
		return "", fmt.Errorf("record a watermark: %w", mapErr(err))
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM watermarks WHERE profile = ? AND id <=
		(SELECT id FROM watermarks WHERE profile = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`, profile, profile, store.KeptWatermarks); err != nil {
		return "", fmt.Errorf("record a watermark: %w", mapErr(err))
	}
	if err := tx.Commit(); err != nil {
		return "", fmt.Errorf("record a watermark: commit: %w", mapErr(err))
	}
	return mark, nil
}

// WatermarkMarked implements store.Store.
func (s *Store) WatermarkMarked(ctx context.Context, profile string, seq int64, mark string) (bool, error) {
	if err := s.check(); err != nil {
		return false, err
	}
	var ok bool
	if err := s.rc.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM watermarks WHERE mark = ? AND profile = ? AND seq = ?)`,
		mark, profile, seq).Scan(&ok); err != nil {
		return false, fmt.Errorf("read a watermark: %w", err)
	}
	return ok, nil
}

// Sync implements store.Store: a passive checkpoint, which syncs the WAL
// first (commits are not synced one by one: synchronous=NORMAL). A store
// opened read-only cannot checkpoint; it syncs nothing.
func (s *Store) Sync(ctx context.Context) error {
	if err := s.check(); err != nil {
		return err
	}
	if s.w == nil {
		return nil
	}
	if _, err := s.w.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err != nil {
		return fmt.Errorf("sync %s: %w", s.path, err)
	}
	return nil
}

// Changes implements store.Store. Each page is read in one transaction, so
// it is a consistent snapshot.
func (s *Store) Changes(ctx context.Context, p store.ChangesParams) (store.ChangeSet, error) {
	if err := s.check(); err != nil {
		return store.ChangeSet{}, err
	}
	var cs store.ChangeSet
	if p.Limit < 0 {
		return cs, mnemotype.Invalidf("changes: limit = %d: must be ≥ 0", p.Limit)
	}
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return cs, fmt.Errorf("read changes: %w", err)
	}
	defer tx.Rollback()
	if err := tx.QueryRowContext(ctx, `SELECT value FROM counters WHERE name = 'seq'`).Scan(&cs.Seq); err != nil {
		return cs, fmt.Errorf("read changes: %w", err)
	}
	if cs.Seq <= p.Since {
		return cs, nil
	}
	limit := int64(-1) // SQLite: no limit
	if p.Limit > 0 {
		limit = int64(p.Limit)
	}
	content := `''`
	if p.Text {
		content = `content`
	}
	rows, err := tx.QueryContext(ctx, `SELECT id, profile, project, session, session_seq, actor, kind, `+content+`, importance, occurred_at,
		created_at, accessed_at, access_count, NULL, embedding_model, embedding, seq FROM memories WHERE profile = ? AND seq > ?
		ORDER BY seq LIMIT ?`, p.Profile, p.Since, limit)
	if err != nil {
		return cs, fmt.Errorf("read changes: %w", err)
	}
	defer rows.Close()
	var last int64
	for rows.Next() {
		var blob []byte
		m, err := scanMemory(rows, &blob, &last)
		if err != nil {
			return cs, fmt.Errorf("read changes: %w", err)
		}
		if len(blob) > 0 {
			if m.Embedding, err = DecodeVector(blob); err != nil {
				return cs, fmt.Errorf("read memory %s: %w", m.ID, err)
			}
		}
		cs.Upserts = append(cs.Upserts, m)
	}
	if err := rows.Err(); err != nil {
		return cs, fmt.Errorf("read changes: %w", err)
	}
	if p.Limit > 0 && len(cs.Upserts) == p.Limit {
		// The page ends at its last row: the deletions up to it belong to
		// it, the rest to the next page.
		cs.Seq, cs.More = last, true
	}
	if p.Text {
		if cs.Texts, err = indexedTexts(ctx, tx, p.Profile, p.Since, cs.Seq, len(cs.Upserts)); err != nil {
			return cs, fmt.Errorf("read changes: %w", err)
		}
	}
	drows, err := tx.QueryContext(ctx, `SELECT id FROM tombstones WHERE profile = ? AND seq > ? AND seq <= ? ORDER BY seq`,
		p.Profile, p.Since, cs.Seq)
	if err != nil {
		return cs, fmt.Errorf("read changes: %w", err)
	}
	defer drows.Close()
	for drows.Next() {
		var id string
		if err := drows.Scan(&id); err != nil {
			return cs, fmt.Errorf("read changes: %w", err)
		}
		cs.Deleted = append(cs.Deleted, id)
	}
	return cs, drows.Err()
}

// indexedTexts reads the indexed texts of the n memories of profile whose
// seq is in (since, upTo], in seq order: the page Changes just read, in
// the same transaction.
func indexedTexts(ctx context.Context, tx *sql.Tx, profile string, since, upTo int64, n int) ([]store.IndexedText, error) {
	var turns int
	if err := tx.QueryRowContext(ctx, `SELECT max(0, value) FROM counters WHERE name = 'context_turns'`).Scan(&turns); err != nil {
		return nil, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT m.id, m.rid, `+contextSQLOf("m")+` FROM memories m
		WHERE m.profile = ? AND m.seq > ? AND m.seq <= ? ORDER BY m.seq`, turns, turns, profile, since, upTo)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]store.IndexedText, 0, n)
	for rows.Next() {
		var t store.IndexedText
		if err := rows.Scan(&t.ID, &t.Order, &t.Context); err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
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
	rows, err := s.rc.QueryContext(ctx, `SELECT id, occurred_at, accessed_at, access_count, importance FROM memories
		WHERE profile = ? AND id IN (SELECT value FROM json_each(?))`, profile, jsonList(ids))
	if err != nil {
		return nil, fmt.Errorf("read signals: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, occurred, accessed string
		var sig store.Signals
		if err := rows.Scan(&id, &occurred, &accessed, &sig.AccessCount, &sig.Importance); err != nil {
			return nil, fmt.Errorf("read signals: %w", err)
		}
		if sig.OccurredAt, err = parseTime(occurred); err != nil {
			return nil, fmt.Errorf("memory %s: occurred_at: %w", id, err)
		}
		if sig.AccessedAt, err = parseTime(accessed); err != nil {
			return nil, fmt.Errorf("memory %s: accessed_at: %w", id, err)
		}
		out[id] = sig
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read signals: %w", err)
	}
	return out, nil
}

// RecordAccess implements store.Store. Access statistics do not advance the
// change sequence: they are signals, not content.
func (s *Store) RecordAccess(ctx context.Context, acc []store.Access) (err error) {
	w, err := s.writer()
	if err != nil {
		return err
	}
	if len(acc) == 0 {
		return nil
	}
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("record access: %w", err)
	}
	defer tx.Rollback()
	defer reportEnd(ctx, "record access", &err)
	stmt, err := tx.PrepareContext(ctx, `UPDATE memories SET access_count = access_count + ?,
		accessed_at = max(accessed_at, ?) WHERE profile = ? AND id = ?`)
	if err != nil {
		return fmt.Errorf("record access: %w", err)
	}
	defer stmt.Close()
	rows := rowContext(ctx)
	for _, a := range acc {
		if err := mnemotype.CheckTime("accessed_at", a.At); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("record access: %w", err)
		}
		if _, err := stmt.ExecContext(rows, a.Count, formatTime(a.At), a.Profile, a.ID); err != nil {
			return fmt.Errorf("record access %s: %w", a.ID, mapErr(err))
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("record access: commit: %w", err)
	}
	return nil
}

// Settings implements store.Store.
func (s *Store) Settings(ctx context.Context, profile string) (map[string]string, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	ctx, err := pointRead(ctx)
	if err != nil {
		return nil, fmt.Errorf("read settings: %w", err)
	}
	rows, err := s.rc.QueryContext(ctx, `SELECT key, value FROM settings WHERE profile = ?`, profile)
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

// SetSettings implements store.Store.
func (s *Store) SetSettings(ctx context.Context, profile string, kv map[string]string) error {
	w, err := s.writer()
	if err != nil {
		return err
	}
	tx, err := w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("write settings: %w", err)
	}
	defer tx.Rollback()
	for k, v := range kv {
		if _, err := tx.ExecContext(ctx, `INSERT INTO settings(profile, key, value) VALUES (?,?,?)
			ON CONFLICT(profile, key) DO UPDATE SET value = excluded.value`, profile, k, v); err != nil {
			return fmt.Errorf("write setting %s: %w", k, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("write settings: commit: %w", err)
	}
	return nil
}

// Profiles implements store.Store.
func (s *Store) Profiles(ctx context.Context) ([]store.ProfileCount, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	rows, err := s.rc.QueryContext(ctx, `SELECT profile, count(*) FROM memories GROUP BY profile ORDER BY profile`)
	if err != nil {
		return nil, fmt.Errorf("list profiles: %w", err)
	}
	defer rows.Close()
	var out []store.ProfileCount
	for rows.Next() {
		var p store.ProfileCount
		if err := rows.Scan(&p.Profile, &p.Memories); err != nil {
			return nil, fmt.Errorf("list profiles: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// SettingsProfiles implements store.Store.
func (s *Store) SettingsProfiles(ctx context.Context) ([]string, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	rows, err := s.rc.QueryContext(ctx, `SELECT DISTINCT profile FROM settings WHERE profile <> '' ORDER BY profile`)
	if err != nil {
		return nil, fmt.Errorf("list profiles with settings: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, fmt.Errorf("list profiles with settings: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// DeleteSettings implements store.Store.
func (s *Store) DeleteSettings(ctx context.Context, profile string, keys []string) error {
	w, err := s.writer()
	if err != nil {
		return err
	}
	if _, err := w.ExecContext(ctx, `DELETE FROM settings WHERE profile = ? AND key IN (SELECT value FROM json_each(?))`,
		profile, jsonList(keys)); err != nil {
		return fmt.Errorf("delete settings: %w", mapErr(err))
	}
	return nil
}

// Count implements store.Store.
func (s *Store) Count(ctx context.Context, profile string) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	// The profile's document count, kept with its BM25 statistics, is its
	// number of memories (TestIndex_WritesEqualARebuild checks it).
	var n int
	err := s.rc.QueryRowContext(ctx, `SELECT docs FROM profiles WHERE name = ?`, profile).Scan(&n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("count memories: %w", err)
	}
	return n, nil
}

// timeLayout is how timestamps are stored: RFC 3339 in UTC with nine
// fractional digits and a four-digit year, so that every time in years
// 0001-9999 round-trips to the nanosecond and text order is time order.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

// formatTime renders t in timeLayout, as t.UTC().Format would but several
// times faster (every memory written stores three).
func formatTime(t time.Time) string {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.Format(timeLayout) // not a stored time: CheckTime refuses it
	}
	hour, minute, sec := t.Clock()
	b := []byte(timeLayout)
	put := func(at, width, v int) {
		for i := at + width - 1; i >= at; i-- {
			b[i] = byte('0' + v%10)
			v /= 10
		}
	}
	put(0, 4, year)
	put(5, 2, int(month))
	put(8, 2, day)
	put(11, 2, hour)
	put(14, 2, minute)
	put(17, 2, sec)
	put(20, 9, t.Nanosecond())
	return string(b)
}

func parseTime(s string) (time.Time, error) {
	if t, ok := parseStored(s); ok {
		return t, nil
	}
	t, err := time.Parse(timeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("stored time %q is malformed", s)
	}
	return t, nil
}

// parseStored parses a time in exactly timeLayout's form, as time.Parse
// would but several times faster (a recall reads a few hundred, loading
// an index three per memory); ok is false for anything else, which
// time.Parse then judges.
func parseStored(s string) (t time.Time, ok bool) {
	if len(s) != len(timeLayout) || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[19] != '.' || s[29] != 'Z' {
		return time.Time{}, false
	}
	num := func(from, to int) int {
		n := 0
		for i := from; i < to; i++ {
			c := s[i]
			if c < '0' || c > '9' {
				ok = false
				return 0
			}
			n = n*10 + int(c-'0')
		}
		return n
	}
	ok = true
	y, mo, d, h, mi, sec, ns := num(0, 4), num(5, 7), num(8, 10), num(11, 13), num(14, 16), num(17, 19), num(20, 29)
	if !ok || y < 1 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 59 {
		return time.Time{}, false
	}
	t = time.Date(y, time.Month(mo), d, h, mi, sec, ns, time.UTC)
	if t.Day() != d { // the 31st of a 30-day month, and so on
		return time.Time{}, false
	}
	return t, true
}

// batchErr names memory i of a batch of n in err.
func batchErr(n, i int, err error) error {
	if n == 1 {
		return err
	}
	return fmt.Errorf("memory %d: %w", i, err)
}
