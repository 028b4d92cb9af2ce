// Package mnemo is long-term memory for AI agents: store what happened as
// memories, recall the few that matter with hybrid retrieval (BM25 full
// text, dense embeddings, recency, access frequency) fused by a configurable
// strategy, scoped per profile, project and session.
//
// The Engine is the library's entry point and the only place where the
// parts are wired: the store (SQLite by default), the embedder, the
// in-memory vector index and the recall pipeline. The CLI and the servers
// are thin layers over it.
package mnemo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/mnemo-dev/mnemo/dense"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/embed/glove"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/recall"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/store/postgres"
	"github.com/mnemo-dev/mnemo/store/sqlitestore"
	"github.com/mnemo-dev/mnemo/vector"
)

// Re-exported leaf types, so users of the library need one import.
type (
	// Memory is one stored memory.
	Memory = mnemotype.Memory
	// Kind is a memory's kind: episodic, semantic or identity.
	Kind = mnemotype.Kind
	// LegDetail is one leg's part in a result's score.
	LegDetail = mnemotype.LegDetail
	// Hit is one entry of a leg's ranked list.
	Hit = mnemotype.Hit
	// Trace explains a recall.
	Trace = recall.Trace
)

// Sentinel errors (see package mnemotype).
var (
	ErrNotFound          = mnemotype.ErrNotFound
	ErrClosed            = mnemotype.ErrClosed
	ErrDimensionMismatch = mnemotype.ErrDimensionMismatch
	ErrInvalid           = mnemotype.ErrInvalid
	ErrExists            = mnemotype.ErrExists
	// ErrNoEmbedder: the engine has no embedder (Config.Embedder unset and
	// the built-in model not installed), so nothing is embedded.
	ErrNoEmbedder = errors.New("no embedder")
)

// Defaults.
const (
	// DefaultLimit is the number of memories Recall returns when Query.Limit is 0.
	DefaultLimit = 10
	// MaxLimit bounds Query.Limit.
	MaxLimit = 1000
	// DefaultAccessFlushInterval is how often access statistics are written.
	DefaultAccessFlushInterval = time.Second
	// MaxContentBytes is the largest memory content accepted.
	MaxContentBytes = mnemotype.MaxContentBytes
	// MaxListItems bounds each list of a Query's scope (Exclude,
	// Sessions, Kinds): longer lists are refused.
	MaxListItems = 100_000
	// DefaultWriteEmbedTimeout is Config.WriteEmbedTimeout's default.
	DefaultWriteEmbedTimeout = time.Second
	// DefaultQueryEmbedTimeout is Config.QueryEmbedTimeout's default.
	DefaultQueryEmbedTimeout = time.Second
	// WriteEmbedTimeoutTexts is the number of texts one
	// Config.WriteEmbedTimeout covers: a larger batch may wait once more
	// for every further WriteEmbedTimeoutTexts texts (or part of them).
	WriteEmbedTimeoutTexts = 100
)

// Config configures an Engine. The zero value (or nil) is ready to use.
type Config struct {
	// Embedder embeds memories and queries. Defaults to the built-in
	// embedder (GloVe-SIF) when its model is installed under Home (`mnemo
	// models pull`), else to none: memories are stored without embeddings
	// and recall runs without the dense leg, its trace saying why. The
	// hashing embedder (embed.NewHash) is never a default: it is not
	// semantic.
	Embedder embed.Embedder
	// Home is mnemo's data directory, where the built-in model is looked up
	// when Embedder is unset. Defaults to $MNEMO_HOME, else
	// $XDG_DATA_HOME/mnemo, else ~/.local/share/mnemo.
	Home string
	// Store replaces the SQLite store Open would create at path (e.g. a
	// Postgres store); the Engine takes ownership and closes it.
	Store store.Store
	// Defaults are the settings of a profile that has stored none.
	// Defaults to DefaultSettings().
	Defaults *Settings
	// AccessFlushInterval is how often access statistics are written in the
	// background. Defaults to DefaultAccessFlushInterval; a negative value
	// writes them only on Close.
	AccessFlushInterval time.Duration
	// Logger receives warnings (e.g. an embedder failure). Defaults to
	// discarding.
	Logger *slog.Logger
	// WriteEmbedTimeout bounds how long a write (Write, Remember,
	// RememberBatch, Update) waits for the embedder, per
	// WriteEmbedTimeoutTexts texts. Past it the embedder's call is
	// cancelled and the memories are stored at once without embeddings, as
	// when the embedder fails: a warning is logged, WriteResult.Deferred
	// counts them, and Reembed (the background backfill of `mnemo serve`)
	// embeds them later. Defaults to DefaultWriteEmbedTimeout; a negative
	// value waits as long as the caller's context allows.
	WriteEmbedTimeout time.Duration
	// QueryEmbedTimeout bounds how long Recall waits for the embedding of
	// its query. Past it the embedder's call is cancelled, the dense leg
	// is skipped (the trace says it timed out) and the other legs answer.
	// Defaults to DefaultQueryEmbedTimeout; a negative value waits as long
	// as the caller's context allows.
	QueryEmbedTimeout time.Duration
	// ContextTurns is how many previous turns of its session the SQLite
	// store indexes with each memory, for the context_field_weight setting
	// (sqlitestore.Options.ContextTurns): 0 keeps what the database is
	// indexed with (a new database: sqlitestore.DefaultContextTurns), -1 none; another number than
	// the database's rebuilds its full-text index on Open. Ignored with
	// Store.
	ContextTurns int
	// MustExist makes Open fail with an ErrNotFound error naming the path
	// when there is no database there, instead of creating one. Ignored
	// with Store.
	MustExist bool
	// IndexBudget bounds the bytes of the in-memory dense indexes Recall
	// keeps per profile; beyond it the least recently used profiles are
	// dropped and loaded again when next recalled. Defaults to
	// dense.DefaultBudget.
	IndexBudget int64
	// LexicalInStore keeps the lexical leg in the store (SQLite's FTS5, or
	// the Postgres store's index). Otherwise the in-process indexes keep
	// each profile's full-text index too and answer it (package
	// textindex): the same ranking, without the store's shortcut for OR
	// queries with common terms. One-shot processes (ANN.OneShot) and a
	// Postgres store with read replicas leave it to the store anyway. With
	// the Postgres store's SQL dense leg, the in-process indexes keep the
	// text alone (no embeddings).
	LexicalInStore bool
	// IndexDir is the folder where the dense indexes' snapshots are kept,
	// so that a new process reads a profile's index from one file and
	// catches up from the database instead of reading every memory (see
	// package dense). "" means beside the database file, at
	// <database>.index (none with Store); "-" keeps no snapshots. The
	// snapshots are a cache: deleting them loses nothing.
	IndexDir string
	// ANN configures the in-process dense indexes' graphs (HNSW): a
	// profile of at least ANN.GraphMin embedded memories gets one, built
	// in the background; searches of scopes of at least ANN.ExactBelow
	// memories walk it. Zero values take package dense's and vector's
	// defaults; a negative GraphMin keeps every search exact.
	ANN ANNOptions
	// Replicas are URLs of streaming replicas of a Postgres database:
	// recalls read from them, writes go to the primary (see
	// Engine.Consistency for read-your-writes). Ignored with Store and on
	// SQLite.
	Replicas []string
}

func (c *Config) withDefaults() Config {
	var out Config
	if c != nil {
		out = *c
	}
	if out.Defaults == nil {
		d := DefaultSettings()
		out.Defaults = &d
	}
	if out.AccessFlushInterval == 0 {
		out.AccessFlushInterval = DefaultAccessFlushInterval
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if out.WriteEmbedTimeout == 0 {
		out.WriteEmbedTimeout = DefaultWriteEmbedTimeout
	}
	if out.QueryEmbedTimeout == 0 {
		out.QueryEmbedTimeout = DefaultQueryEmbedTimeout
	}
	return out
}

// Engine is a memory engine. It is safe for concurrent use.
type Engine struct {
	cfg    Config
	st     store.Store
	emb    embed.Embedder
	log    *slog.Logger
	access *tracker
	// dense holds the profiles' dense indexes, caught up with the store
	// before each recall.
	dense *dense.Catalog
	// kept holds settings read, by profile and settings version.
	kept keptSettings
	// vec is Recall's dense leg: dense, or the store's own (pgvector).
	vec     recall.Dense
	closeMu sync.RWMutex
	closed  bool
}

// Open opens the engine on the SQLite file at path (created if missing),
// on the PostgreSQL database path names when it is a postgres:// URL (its
// query parameter schema names the schema, "mnemo" by default), or on
// cfg.Store when set. On Postgres with pgvector, recalls rank embeddings
// in SQL (postgres.Store.Dense) unless the URL says dense=process; else
// in this process's dense indexes.
func Open(path string, cfg *Config) (*Engine, error) {
	c := cfg.withDefaults()
	if _, err := c.Defaults.options(); err != nil {
		return nil, fmt.Errorf("open: default settings: %w", err)
	}
	if c.Embedder == nil {
		emb, err := defaultEmbedder(c.Home)
		if err != nil {
			return nil, fmt.Errorf("open: %w", err)
		}
		c.Embedder = emb
	}
	st := c.Store
	indexDir := c.IndexDir
	if st == nil {
		if indexDir == "" {
			// A Postgres database is the only state: no snapshots beside
			// it unless Config.IndexDir names a folder.
			indexDir = "-"
			if !postgres.IsDSN(path) {
				indexDir = IndexDir(path)
			}
		}
		s, err := OpenStore(context.Background(), path, StoreOptions{ContextTurns: c.ContextTurns, MustExist: c.MustExist, Replicas: c.Replicas,
			OneShot: c.ANN.OneShot, Logger: c.Logger})
		if err != nil {
			return nil, err
		}
		st = s
	}
	if indexDir == "-" {
		indexDir = ""
	}
	var sqlDense recall.Dense
	// A one-shot engine keeps the text of the snapshots it reads; without
	// a folder of snapshots (Postgres by default) it would build a text
	// index from the store to answer one recall: the store answers.
	text, snapshotText := !c.LexicalInStore && !c.ANN.OneShot, !c.LexicalInStore && c.ANN.OneShot && indexDir != ""
	if ps, ok := st.(*postgres.Store); ok {
		if d := ps.Dense(); d != nil {
			sqlDense = d
		}
		// Recalls read the replicas, the in-process indexes the primary:
		// a text index would answer with memories a replica has not
		// replayed yet.
		text = text && !ps.HasReplicas()
		snapshotText = snapshotText && !ps.HasReplicas()
	}
	e := &Engine{cfg: c, st: st, emb: c.Embedder, log: c.Logger,
		dense: dense.NewCatalog(st, dense.Options{Dim: c.Embedder.Dim(), Budget: c.IndexBudget, Dir: indexDir, Logger: c.Logger,
			GraphMin: c.ANN.GraphMin, ANN: vector.ANN{ExactBelow: c.ANN.ExactBelow, Ef: c.ANN.Ef}, NoBackground: c.ANN.OneShot,
			Text: text, SnapshotText: snapshotText, TextOnly: sqlDense != nil})}
	e.vec = e.dense
	if sqlDense != nil {
		e.vec = sqlDense
	}
	e.access = newTracker(st, c.Logger, c.AccessFlushInterval)
	return e, nil
}

// StoreOptions tunes OpenStore.
type StoreOptions struct {
	// ContextTurns, MustExist and Replicas are Config's.
	ContextTurns int
	MustExist    bool
	Replicas     []string
	// OneShot is Config.ANN.OneShot: a SQLite store starts no background
	// work that only a long-running process gains from (a Postgres store
	// has none such).
	OneShot bool
	// Logger hears when opening a SQLite database re-indexes every memory
	// (a migration, or another ContextTurns: sqlitestore.Options.Logger);
	// nil discards.
	Logger *slog.Logger
}

// OpenStore opens the store db names, without an engine (mnemo copy,
// mnemo migrate): a postgres:// URL (its query parameter schema names the
// schema), else a SQLite file, created if needed and migrated to the
// current schema.
func OpenStore(ctx context.Context, db string, o StoreOptions) (store.Store, error) {
	if postgres.IsDSN(db) {
		return postgres.Open(ctx, db, postgres.Options{ContextTurns: o.ContextTurns, MustExist: o.MustExist, Replicas: o.Replicas})
	}
	if db == "" {
		return nil, mnemotype.Invalidf("database path is empty")
	}
	if len(o.Replicas) > 0 {
		return nil, mnemotype.Invalidf("read replicas need a postgres:// database, not the SQLite file %s", db)
	}
	return sqlitestore.Open(ctx, db, sqlitestore.Options{ContextTurns: o.ContextTurns, MustExist: o.MustExist, OneShot: o.OneShot, Logger: o.Logger})
}

// ANNOptions configure the in-process dense indexes' graphs (Config.ANN).
type ANNOptions struct {
	// GraphMin: embedded memories a profile holds before its index gets a
	// graph (dense.DefaultGraphMin when 0; never when negative).
	GraphMin int
	// ExactBelow: scopes estimated smaller are scanned exactly
	// (vector.DefaultExactBelow when 0).
	ExactBelow int
	// Ef: candidates a walk keeps, at least the recall's fetch
	// (vector.DefaultEf when 0).
	Ef int
	// OneShot is for a process that answers a call or two and exits (the
	// CLI's recall and recollect): it grows no graph in the background,
	// restores snapshots without their graphs (decoding a large one costs
	// more than a walk or two saves: its searches scan exactly), and
	// writes no snapshot over one that holds a graph.
	OneShot bool
}

// IndexDir is where an engine on the database file at path keeps its
// dense indexes' snapshots by default (Config.IndexDir).
func IndexDir(path string) string { return path + ".index" }

// Close flushes access statistics, finishes writing the dense indexes'
// snapshots, and closes the store. It is idempotent.
func (e *Engine) Close() error {
	e.closeMu.Lock()
	if e.closed {
		e.closeMu.Unlock()
		return nil
	}
	e.closed = true
	e.closeMu.Unlock()
	e.dense.Close()
	return errors.Join(e.access.close(context.Background()), e.st.Close())
}

// enter guards an operation against a concurrent Close.
func (e *Engine) enter() (func(), error) {
	e.closeMu.RLock()
	if e.closed {
		e.closeMu.RUnlock()
		return nil, ErrClosed
	}
	return e.closeMu.RUnlock, nil
}

// Embedder returns the engine's embedder.
func (e *Engine) Embedder() embed.Embedder { return e.emb }

// Input is a memory to remember. Only Profile and Content are required.
type Input struct {
	// ID defaults to a new UUIDv7.
	ID      string `json:"id,omitempty"`
	Content string `json:"content"`
	Kind    string `json:"kind,omitempty"`
	Profile string `json:"profile,omitempty"`
	Project string `json:"project,omitempty"`
	Session string `json:"session,omitempty"`
	// Actor is who said or did it (a speaker's name, user, assistant).
	Actor string `json:"actor,omitempty"`
	// Seq orders the memory in its session; 0: the next one.
	Seq int64 `json:"seq,omitempty"`
	// OccurredAt is when it happened; defaults to CreatedAt.
	OccurredAt time.Time `json:"occurred_at,omitzero"`
	// Importance in [0, 1]; nil means DefaultImportance (0.5).
	Importance *float64 `json:"importance,omitempty"`
	// CreatedAt defaults to now.
	CreatedAt time.Time       `json:"created_at,omitzero"`
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	// Embedding, when set, is used instead of embedding Content; it must
	// have the embedder's dimension. EmbeddingModel defaults to the
	// embedder's model name.
	Embedding      []float32 `json:"embedding,omitempty"`
	EmbeddingModel string    `json:"embedding_model,omitempty"`
	// AccessedAt and AccessCount restore a memory's access statistics (an
	// import of an export); they default to CreatedAt and 0.
	AccessedAt  time.Time `json:"accessed_at,omitzero"`
	AccessCount int64     `json:"access_count,omitempty"`
}

// idempotencyNamespace is the UUIDv5 namespace of IdempotentID's ids.
const idempotencyNamespace = "a116ed81-4ea6-4b80-a5df-2bd424af4ddd"

// IdempotentID returns the id of the memory at index in a write named by
// an idempotency key (index 0 for a single memory): a UUIDv5 of profile,
// key and index. A retried write that derives its ids this way maps to the
// memories of its first attempt, and Write stores them once.
func IdempotentID(profile, key string, index int) string {
	name := profile + "\x00" + key + "\x00" + strconv.Itoa(index)
	return uuid.NewSHA1(uuid.MustParse(idempotencyNamespace), []byte(name)).String()
}

// memory validates in and turns it into a Memory (without embedding).
func (in *Input) memory(now time.Time) (mnemotype.Memory, error) {
	kind, err := mnemotype.ParseKind(in.Kind)
	if err != nil {
		return mnemotype.Memory{}, err
	}
	m := mnemotype.Memory{
		ID: strings.TrimSpace(in.ID), Content: in.Content, Kind: kind, Profile: in.Profile,
		Project: in.Project, Session: in.Session, Actor: in.Actor, Seq: in.Seq, Importance: mnemotype.DefaultImportance,
		CreatedAt: in.CreatedAt.UTC(), OccurredAt: in.OccurredAt.UTC(), Metadata: in.Metadata,
	}
	if in.Importance != nil {
		m.Importance = *in.Importance
	}
	if m.ID == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return m, fmt.Errorf("generate id: %w", err)
		}
		m.ID = id.String()
	}
	if in.CreatedAt.IsZero() {
		m.CreatedAt = now
	}
	m.AccessedAt = m.CreatedAt
	if !in.AccessedAt.IsZero() {
		m.AccessedAt = in.AccessedAt.UTC()
		if err := mnemotype.CheckTime("accessed_at", m.AccessedAt); err != nil {
			return m, err
		}
	}
	if in.AccessCount < 0 {
		return m, mnemotype.Invalidf("access_count = %d: must be ≥ 0", in.AccessCount)
	}
	m.AccessCount = in.AccessCount
	if in.OccurredAt.IsZero() {
		m.OccurredAt = m.CreatedAt
	}
	if err := mnemotype.CheckTime("created_at", m.CreatedAt); err != nil {
		return m, err
	}
	if err := m.Validate(); err != nil {
		return m, err
	}
	return m, nil
}

// Remember stores one memory and returns it as stored (see Write).
func (e *Engine) Remember(ctx context.Context, in Input) (Memory, error) {
	res, err := e.Write(ctx, []Input{in})
	if err != nil {
		return Memory{}, err
	}
	return res.Memories[0], nil
}

// RememberBatch stores memories atomically (all or none) and returns them
// as stored, in input order (see Write).
func (e *Engine) RememberBatch(ctx context.Context, ins []Input) ([]Memory, error) {
	res, err := e.Write(ctx, ins)
	if err != nil {
		return nil, err
	}
	return res.Memories, nil
}

// WriteResult is what Write did.
type WriteResult struct {
	// Memories are the memories as stored, in input order; a replayed one
	// as it was already stored.
	Memories []Memory
	// Replayed[i] reports that memory i was already stored under its id
	// with the same content: nothing was written for it (a retried write).
	Replayed []bool
	// Created is the number of memories written (the others were replayed).
	Created int
	// Deferred is the number of memories written without an embedding
	// because the embedder failed or did not answer within
	// Config.WriteEmbedTimeout; Reembed embeds them later.
	Deferred int
	// EmbedErr is the embedder's error when Deferred > 0, else nil.
	EmbedErr error
}

// AllReplayed reports whether every memory was already stored, so that the
// write changed nothing.
func (r *WriteResult) AllReplayed() bool { return r.Created == 0 && len(r.Memories) > 0 }

// Write stores memories atomically (all or none), embedding those without
// a precomputed embedding in one batch, and reports what it did.
//
// The embedder never holds a write up for long: if it fails, or does not
// answer within Config.WriteEmbedTimeout, the memories are stored at once
// without embeddings (the other legs still find them, and Reembed embeds
// them later), a warning is logged and WriteResult.Deferred counts them.
//
// Writes are idempotent by id, so a client may retry a write whose answer
// it lost: a memory whose id (given by the caller) its profile already
// holds with the same content, kind, project, session, importance,
// metadata and, when given, creation time is not written again; it is
// returned as stored and flagged in WriteResult.Replayed. The same id with
// anything else different is an error wrapping both ErrInvalid and
// ErrExists that names the id and the field.
//
// An invalid input is an ErrInvalid error naming its index and field.
// Nothing is written when Write returns an error.
func (e *Engine) Write(ctx context.Context, ins []Input) (*WriteResult, error) {
	p, err := e.Prepare(ctx, ins)
	if err != nil {
		return nil, err
	}
	return e.Commit(ctx, p)
}

// A PreparedWrite is a batch of inputs made ready to store by Prepare.
type PreparedWrite struct {
	ins  []Input
	mems []mnemotype.Memory
	res  *WriteResult
}

// Prepare does what Write does before it stores: it validates ins, finds
// those already stored under their ids (replays) and embeds the others.
// Commit stores what it prepared. Write is Prepare then Commit; a bulk
// writer (mnemo import) prepares a batch while the batch before it is
// being stored, committing them in order. ins must not change until
// Commit returns.
func (e *Engine) Prepare(ctx context.Context, ins []Input) (*PreparedWrite, error) {
	done, err := e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	now := time.Now().UTC()
	mems := make([]mnemotype.Memory, len(ins))
	seen := make(map[string]int, len(ins))
	for i := range ins {
		m, err := ins[i].memory(now)
		if err != nil {
			return nil, batchErr(len(ins), i, err)
		}
		if j, dup := seen[m.ID]; dup {
			return nil, batchErr(len(ins), i, mnemotype.Invalidf("id %q repeats memory %d", m.ID, j))
		}
		seen[m.ID] = i
		if len(ins[i].Embedding) > 0 {
			if len(ins[i].Embedding) != e.emb.Dim() && e.noEmbedding() == nil {
				return nil, batchErr(len(ins), i, fmt.Errorf("%w: embedding has %d dimensions, the embedder %s has %d",
					ErrDimensionMismatch, len(ins[i].Embedding), e.emb.Model(), e.emb.Dim()))
			}
			if err := e.checkGivenEmbedding(ins[i]); err != nil {
				return nil, batchErr(len(ins), i, err)
			}
			m.Embedding = ins[i].Embedding
			m.EmbeddingModel = ins[i].EmbeddingModel
			if m.EmbeddingModel == "" {
				m.EmbeddingModel = e.emb.Model()
			}
		}
		mems[i] = m
	}
	res := &WriteResult{Memories: mems, Replayed: make([]bool, len(mems))}
	if _, err := e.replay(ctx, ins, res); err != nil {
		return nil, err
	}
	var toEmbed []int
	for i := range mems {
		if !res.Replayed[i] && len(ins[i].Embedding) == 0 && e.noEmbedding() == nil {
			toEmbed = append(toEmbed, i)
		}
	}
	if len(toEmbed) > 0 {
		texts := make([]string, len(toEmbed))
		for j, i := range toEmbed {
			texts[j] = mems[i].Content
		}
		vecs, err := e.embedWrite(ctx, texts)
		if err == nil && len(vecs) != len(texts) {
			err = fmt.Errorf("embedder %s returned %d vectors for %d texts", e.emb.Model(), len(vecs), len(texts))
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			res.EmbedErr = err
			e.log.Log(ctx, embedFailureLevel(err), "embedding failed; storing memories without embeddings (the backfill embeds them later)",
				"model", e.emb.Model(), "count", len(texts), "err", err)
		} else {
			for j, i := range toEmbed {
				mems[i].Embedding, mems[i].EmbeddingModel = vecs[j], e.emb.Model()
			}
		}
	}
	return &PreparedWrite{ins: ins, mems: mems, res: res}, nil
}

// checkGivenEmbedding refuses an embedding a caller gives with in that
// recall could not use: a non-finite value, or a model other than the
// engine's (a vector of another model is not comparable with the query's).
// An engine that embeds nothing keeps what it is given, labelled as given.
// All zeros is accepted: the built-in model gives it to a text none of
// whose words it knows (the dense leg scores it 0 against every query).
func (e *Engine) checkGivenEmbedding(in Input) error {
	for _, f := range in.Embedding {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return mnemotype.Invalidf("embedding contains a non-finite value")
		}
	}
	if e.noEmbedding() == nil && in.EmbeddingModel != "" && in.EmbeddingModel != e.emb.Model() {
		return mnemotype.Invalidf("embedding_model %q: this engine embeds with %q, and recall compares vectors of one model only; "+
			"leave the embedding out to have the memory embedded, or open the database with that model's embedder", in.EmbeddingModel, e.emb.Model())
	}
	return nil
}

// Commit stores the memories p prepared, as Write does (all or none), and
// reports what it did. A memory another writer stored under the same id
// since Prepare is a replay as Write's. p is used up: commit it once,
// from one goroutine.
func (e *Engine) Commit(ctx context.Context, p *PreparedWrite) (*WriteResult, error) {
	done, err := e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	if p == nil || p.res == nil {
		return nil, fmt.Errorf("%w: no prepared write (nil, or committed already)", ErrInvalid)
	}
	ins, mems, res := p.ins, p.mems, p.res
	p.ins, p.mems, p.res = nil, nil, nil
	for attempt := 1; ; attempt++ {
		fresh := make([]mnemotype.Memory, 0, len(mems))
		for i, m := range mems {
			if !res.Replayed[i] {
				fresh = append(fresh, m)
			}
		}
		if len(fresh) == 0 {
			break
		}
		err := e.st.Insert(ctx, fresh)
		if err == nil {
			// The memories as stored: the store numbered the turns
			// given without a seq.
			j := 0
			for i := range mems {
				if !res.Replayed[i] {
					mems[i] = fresh[j]
					j++
				}
			}
			break
		}
		if errors.Is(err, ErrDimensionMismatch) {
			// The store checks inside its transaction, so a concurrent
			// migration or writer cannot slip another dimension in.
			return nil, fmt.Errorf("%w; switch the embedder back, or migrate the profile with `mnemo reembed --all` (Engine.Reembed with All)", err)
		}
		if !errors.Is(err, ErrExists) || attempt == 3 {
			return nil, err
		}
		// A concurrent write of the same id committed after replay looked:
		// compare with it as with any earlier write.
		n, rerr := e.replay(ctx, ins, res)
		if rerr != nil {
			return nil, rerr
		}
		if n == 0 {
			return nil, err
		}
	}
	for i, m := range mems {
		if res.Replayed[i] {
			continue
		}
		res.Created++
		if len(m.Embedding) == 0 && e.noEmbedding() == nil {
			res.Deferred++ // without an embedder nothing is embedded later either
		}
	}
	if res.Deferred == 0 {
		res.EmbedErr = nil
	}
	return res, nil
}

// replay looks up the ids the caller gave that are not yet known to be
// replayed, and marks those the profile already holds as replayed,
// replacing their memory with the stored one; it returns how many it
// marked. A stored memory that differs from the input is an error wrapping
// ErrInvalid and ErrExists.
func (e *Engine) replay(ctx context.Context, ins []Input, res *WriteResult) (int, error) {
	byProfile := map[string][]int{}
	for i, m := range res.Memories {
		if !res.Replayed[i] && strings.TrimSpace(ins[i].ID) != "" {
			byProfile[m.Profile] = append(byProfile[m.Profile], i)
		}
	}
	marked := 0
	for profile, idx := range byProfile {
		ids := make([]string, len(idx))
		pos := make(map[string]int, len(idx))
		for j, i := range idx {
			ids[j] = res.Memories[i].ID
			pos[ids[j]] = i
		}
		stored, err := e.st.Get(ctx, store.GetParams{Profile: profile, IDs: ids})
		if err != nil {
			return 0, err
		}
		for _, s := range stored {
			i := pos[s.ID]
			if field := differs(&ins[i], &res.Memories[i], &s); field != "" {
				return 0, batchErr(len(ins), i, fmt.Errorf("%w: memory %q %w with a different %s "+
					"(a retried write must repeat the first one; store another memory under a new id, or change this one with an update)",
					ErrInvalid, s.ID, ErrExists, field))
			}
			res.Memories[i], res.Replayed[i] = s, true
			marked++
		}
	}
	return marked, nil
}

// differs names the first field in which a write's memory m (validated
// from in) differs from the stored memory s, or returns "" when the write
// repeats it. A field in defaults to (the creation time) is compared only
// when in sets it; a precomputed embedding is not compared.
func differs(in *Input, m, s *Memory) string {
	switch {
	case m.Content != s.Content:
		return "content"
	case m.Kind != s.Kind:
		return "kind"
	case m.Project != s.Project:
		return "project"
	case m.Session != s.Session:
		return "session"
	case m.Actor != s.Actor:
		return "actor"
	case in.Seq != 0 && m.Seq != s.Seq:
		return "seq"
	case !in.OccurredAt.IsZero() && !m.OccurredAt.Equal(s.OccurredAt):
		return "occurred_at"
	case m.Importance != s.Importance:
		return "importance"
	case !sameJSON(m.Metadata, s.Metadata):
		return "metadata"
	case !in.CreatedAt.IsZero() && !m.CreatedAt.Equal(s.CreatedAt):
		return "creation time"
	}
	return ""
}

// sameJSON reports whether a and b are the same JSON text up to
// insignificant white space ("" and null both meaning none).
func sameJSON(a, b json.RawMessage) bool {
	norm := func(r json.RawMessage) string {
		var buf bytes.Buffer
		if err := json.Compact(&buf, r); err != nil {
			return string(r)
		}
		if s := buf.String(); s != "null" {
			return s
		}
		return ""
	}
	return norm(a) == norm(b)
}

// embedWrite embeds the texts of a write within Config.WriteEmbedTimeout
// per WriteEmbedTimeoutTexts texts.
func (e *Engine) embedWrite(ctx context.Context, texts []string) ([][]float32, error) {
	d := e.cfg.WriteEmbedTimeout
	if d > 0 {
		d *= time.Duration((len(texts) + WriteEmbedTimeoutTexts - 1) / WriteEmbedTimeoutTexts)
	}
	return e.embedWithin(ctx, d, texts)
}

// embedWithin calls the embedder with a deadline d from now (none when
// d ≤ 0), so that its call, and the request it makes to a provider, is
// cancelled when d has passed. A call cut by d returns an
// *EmbedTimeoutError.
func (e *Engine) embedWithin(ctx context.Context, d time.Duration, texts []string) ([][]float32, error) {
	if d <= 0 {
		return e.emb.Embed(ctx, texts)
	}
	ectx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	vecs, err := e.emb.Embed(ectx, texts)
	if err != nil && ctx.Err() == nil && errors.Is(ectx.Err(), context.DeadlineExceeded) {
		return nil, &EmbedTimeoutError{Model: e.emb.Model(), After: d, Err: err}
	}
	return vecs, err
}

// embedFailureLevel is the level an embedder's failure is logged at:
// Warn, but Info while its circuit breaker is open (the breaker warned once
// when it opened; each refused call is expected until it closes).
func embedFailureLevel(err error) slog.Level {
	if errors.Is(err, embed.ErrUnavailable) {
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

// EmbedTimeoutError reports an embedder that did not answer within the
// engine's deadline (Config.WriteEmbedTimeout or QueryEmbedTimeout). It
// unwraps to the embedder's error, itself wrapping
// context.DeadlineExceeded.
type EmbedTimeoutError struct {
	// Model is the embedder's model.
	Model string
	// After is the deadline that passed.
	After time.Duration
	// Err is the embedder's error.
	Err error
}

func (e *EmbedTimeoutError) Error() string {
	return fmt.Sprintf("embedder %s timed out after %v", e.Model, e.After)
}

// Unwrap returns the embedder's error.
func (e *EmbedTimeoutError) Unwrap() error { return e.Err }

func batchErr(n, i int, err error) error {
	if n == 1 {
		return err
	}
	return fmt.Errorf("memory %d: %w", i, err)
}

// Get returns one memory of profile. Returns ErrNotFound if the id is not in
// the profile.
func (e *Engine) Get(ctx context.Context, profile, id string) (Memory, error) {
	done, err := e.enter()
	if err != nil {
		return Memory{}, err
	}
	defer done()
	if err := mnemotype.CheckProfile(profile); err != nil {
		return Memory{}, err
	}
	ms, err := e.st.Get(ctx, store.GetParams{Profile: profile, IDs: []string{id}})
	if err != nil {
		return Memory{}, err
	}
	if len(ms) == 0 {
		return Memory{}, fmt.Errorf("memory %s: %w", id, ErrNotFound)
	}
	return ms[0], nil
}

// Forget deletes one memory of profile. Returns ErrNotFound if the id is not
// in the profile.
func (e *Engine) Forget(ctx context.Context, profile, id string) error {
	done, err := e.enter()
	if err != nil {
		return err
	}
	defer done()
	if err := mnemotype.CheckProfile(profile); err != nil {
		return err
	}
	return e.st.Delete(ctx, profile, id)
}

// ForgetQuery selects the memories ForgetMatching deletes: those of
// Profile that match every field given (one at least besides Profile).
type ForgetQuery struct {
	Profile string
	Project string
	Session string
	// Actors, After, Before and Metadata select as they scope a recall
	// (see Query).
	Actors        []string
	After, Before time.Time
	Metadata      map[string]any
	// Kinds, when set, selects the memories of these kinds.
	Kinds []Kind
}

// ForgetMatching deletes the memories q selects (all its fields must
// match) and returns how many it deleted (0 when none matched). With no
// field but the profile it is an ErrInvalid error: deleting a whole
// profile is DeleteProfile.
func (e *Engine) ForgetMatching(ctx context.Context, q ForgetQuery) (int, error) {
	done, err := e.enter()
	if err != nil {
		return 0, err
	}
	defer done()
	if err := mnemotype.CheckProfile(q.Profile); err != nil {
		return 0, err
	}
	if q.Project == "" && q.Session == "" && len(q.Actors) == 0 && q.After.IsZero() && q.Before.IsZero() && len(q.Metadata) == 0 && len(q.Kinds) == 0 {
		return 0, mnemotype.Invalidf("give a project, a session, actors, kinds, a time range or a metadata filter to delete (a whole profile: DeleteProfile)")
	}
	md, err := (Query{Profile: q.Profile, Project: q.Project, Sessions: []string{q.Session}, Actors: q.Actors,
		After: q.After, Before: q.Before, Metadata: q.Metadata, Kinds: q.Kinds}).validateScope()
	if err != nil {
		return 0, err
	}
	return e.st.DeleteMatching(ctx, store.DeleteParams{Profile: q.Profile, Project: q.Project, Session: q.Session,
		Actors: q.Actors, After: q.After, Before: q.Before, Metadata: md, Kinds: q.Kinds})
}

// ProfileDeletion is what DeleteProfile removed.
type ProfileDeletion = store.ProfileDeletion

// DeleteProfile deletes a profile ("forget this user"): its memories, its
// settings and the names it used; its API keys are revoked (they stay
// listed by no profile, so that a server keeps requiring keys). A profile
// of the same name created later starts afresh. Deleting a profile that
// holds nothing deletes nothing and is not an error.
func (e *Engine) DeleteProfile(ctx context.Context, profile string) (ProfileDeletion, error) {
	done, err := e.enter()
	if err != nil {
		return ProfileDeletion{}, err
	}
	defer done()
	if profile == "" {
		return ProfileDeletion{}, mnemotype.Invalidf("profile is required (the server-wide settings are not a profile)")
	}
	if err := mnemotype.CheckProfile(profile); err != nil {
		return ProfileDeletion{}, err
	}
	out, err := e.st.DeleteProfile(ctx, profile)
	if err != nil {
		return out, err
	}
	e.dense.Evict(profile) // its memories are gone: no need to hold its index
	return out, nil
}

// ProfileCount is a profile and its number of memories.
type ProfileCount = store.ProfileCount

// Profiles returns every profile that holds memories, with how many, by
// name.
func (e *Engine) Profiles(ctx context.Context) ([]ProfileCount, error) {
	done, err := e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	return e.st.Profiles(ctx)
}

// Count returns the number of memories in profile.
func (e *Engine) Count(ctx context.Context, profile string) (int, error) {
	done, err := e.enter()
	if err != nil {
		return 0, err
	}
	defer done()
	if err := mnemotype.CheckProfile(profile); err != nil {
		return 0, err
	}
	return e.st.Count(ctx, profile)
}

// Settings returns profile's effective settings: the engine defaults,
// overridden by the server-wide stored settings (profile ""), overridden by
// the profile's own.
func (e *Engine) Settings(ctx context.Context, profile string) (Settings, error) {
	done, err := e.enter()
	if err != nil {
		return Settings{}, err
	}
	defer done()
	if err := checkProfileOrAll(profile); err != nil {
		return Settings{}, err
	}
	return e.settings(ctx, profile)
}

// checkProfileOrAll is mnemotype.CheckProfile, but for "": where a
// profile is optional, "" names the server-wide settings or every profile.
func checkProfileOrAll(profile string) error {
	if profile == "" {
		return nil
	}
	return mnemotype.CheckProfile(profile)
}

// settings returns profile's effective settings as the store holds them
// now.
func (e *Engine) settings(ctx context.Context, profile string) (Settings, error) {
	v, err := e.st.Versions(ctx, profile)
	if err != nil {
		return Settings{}, err
	}
	return e.settingsAt(ctx, profile, v.Settings)
}

// settingsAt returns profile's effective settings at settings version
// version, read (store.Versions) before the call: those kept from a read
// at that version, else read now. Settings read after the version was are
// at least as new as it, so keeping them under it is never stale for
// longer than the next change, which moves the version.
func (e *Engine) settingsAt(ctx context.Context, profile string, version int64) (Settings, error) {
	if s, ok := e.kept.get(profile, version); ok {
		return s, nil
	}
	s, err := e.readSettings(ctx, profile)
	if err != nil {
		return s, err
	}
	e.kept.put(profile, version, s)
	return s, nil
}

// keptSettings holds each profile's effective settings with the settings
// version they were read at, for at most maxKeptSettings profiles.
type keptSettings struct {
	mu sync.Mutex
	m  map[string]versionedSettings
}

// maxKeptSettings bounds keptSettings; past it, every kept profile is
// dropped and read again when next asked for.
const maxKeptSettings = 4096

type versionedSettings struct {
	version int64
	s       Settings
}

func (k *keptSettings) get(profile string, version int64) (Settings, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[profile]
	if !ok || v.version != version {
		return Settings{}, false
	}
	return v.s, true
}

func (k *keptSettings) put(profile string, version int64, s Settings) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil || len(k.m) >= maxKeptSettings {
		k.m = make(map[string]versionedSettings)
	}
	k.m[profile] = versionedSettings{version, s}
}

// readSettings reads profile's effective settings from the store.
func (e *Engine) readSettings(ctx context.Context, profile string) (Settings, error) {
	s := *e.cfg.Defaults
	scopes := []string{""}
	if profile != "" {
		scopes = append(scopes, profile)
	}
	for _, p := range scopes {
		kv, err := e.st.Settings(ctx, p)
		if err != nil {
			return s, err
		}
		if s, err = s.Apply(kv); err != nil {
			// A stored value this version rejects must not break recall:
			// report it and keep the defaults for that profile.
			return s, fmt.Errorf("stored settings of profile %q: %w", p, err)
		}
	}
	return s, nil
}

// UpdateSettings validates kv against profile's current settings and
// stores it; on any error nothing changes. It returns the new effective
// settings, in force for the next recall of any process.
func (e *Engine) UpdateSettings(ctx context.Context, profile string, kv map[string]string) (Settings, error) {
	done, err := e.enter()
	if err != nil {
		return Settings{}, err
	}
	defer done()
	if err := checkProfileOrAll(profile); err != nil {
		return Settings{}, err
	}
	cur, err := e.settings(ctx, profile)
	if err != nil {
		return Settings{}, err
	}
	if err := oneSpelling(slices.Sorted(maps.Keys(kv))); err != nil {
		return cur, err
	}
	kv = canonical(kv)
	next, err := cur.Apply(kv)
	if err != nil {
		return cur, err
	}
	if _, err := next.options(); err != nil {
		return cur, err
	}
	if err := e.st.SetSettings(ctx, profile, kv); err != nil {
		return cur, err
	}
	return next, nil
}

// ResetSettings removes keys from profile's stored settings (profile "":
// the server-wide ones), so that the next level's value applies again: the
// server-wide one, else the engine default. It returns the new effective
// settings. An unknown key, or a reset that would leave invalid settings
// (every weight 0), is an ErrInvalid error and changes nothing.
func (e *Engine) ResetSettings(ctx context.Context, profile string, keys []string) (Settings, error) {
	done, err := e.enter()
	if err != nil {
		return Settings{}, err
	}
	defer done()
	if err := checkProfileOrAll(profile); err != nil {
		return Settings{}, err
	}
	if len(keys) == 0 {
		return Settings{}, mnemotype.Invalidf("no setting to reset: known settings are %s", strings.Join(SettingNames(), ", "))
	}
	asked := make(map[string]string, len(keys))
	for _, k := range keys {
		asked[k] = ""
	}
	names := canonical(asked)
	known := SettingNames()
	var reset []string
	for k := range names {
		if !slices.Contains(known, k) {
			return Settings{}, mnemotype.Invalidf("unknown setting %q: known settings are %s", k, strings.Join(known, ", "))
		}
		reset = append(reset, k)
	}
	slices.Sort(reset)
	// The settings as they will be: the levels above profile, then what
	// profile keeps stored.
	next := *e.cfg.Defaults
	levels := []string{""}
	if profile != "" {
		levels = append(levels, profile)
	}
	for _, p := range levels {
		kv, err := e.st.Settings(ctx, p)
		if err != nil {
			return Settings{}, err
		}
		if p == profile {
			for _, k := range reset {
				delete(kv, k)
			}
		}
		if next, err = next.Apply(kv); err != nil {
			return Settings{}, fmt.Errorf("stored settings of profile %q: %w", p, err)
		}
	}
	if _, err := next.options(); err != nil {
		return Settings{}, err
	}
	if err := e.st.DeleteSettings(ctx, profile, reset); err != nil {
		return Settings{}, err
	}
	return next, nil
}

// DefaultHome is mnemo's data directory: $MNEMO_HOME, else
// $XDG_DATA_HOME/mnemo, else ~/.local/share/mnemo.
func DefaultHome() (string, error) { return HomeFrom(os.Getenv) }

// HomeFrom is DefaultHome with the environment read through getenv.
func HomeFrom(getenv func(string) string) (string, error) {
	if h := getenv("MNEMO_HOME"); h != "" {
		return h, nil
	}
	if x := getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "mnemo"), nil
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("locate home directory (set MNEMO_HOME): %w", err)
	}
	return filepath.Join(u, ".local", "share", "mnemo"), nil
}

// defaultEmbedder is Config.Embedder's default: the built-in model if it
// is installed under home, else none. A model file that is there but
// unreadable is an error, not a silent fallback.
func defaultEmbedder(home string) (embed.Embedder, error) {
	if home == "" {
		h, err := DefaultHome()
		if err != nil {
			return noEmbedder{reason: err.Error()}, nil
		}
		home = h
	}
	path := glove.DefaultPath(home)
	m, err := glove.Load(path)
	if errors.Is(err, glove.ErrModelMissing) {
		return noEmbedder{reason: fmt.Sprintf("the built-in model is not installed at %s (mnemo models pull installs it), and Config.Embedder is unset", path)}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("load the built-in embedder: %w", err)
	}
	return m, nil
}

// noEmbedder stands for no embedder at all: it embeds nothing, and the
// engine stores memories without embeddings and recalls without the
// dense leg instead of calling it.
type noEmbedder struct{ reason string }

// noEmbedderModel is the embedding model an update records when it clears
// a stale embedding without an embedder.
const noEmbedderModel = "none"

func (noEmbedder) Model() string { return noEmbedderModel }
func (noEmbedder) Dim() int      { return 0 }
func (n noEmbedder) Embed(context.Context, []string) ([][]float32, error) {
	return nil, n.err()
}
func (n noEmbedder) err() error { return fmt.Errorf("%w: %s", ErrNoEmbedder, n.reason) }

// noEmbedding returns why the engine embeds nothing, or nil when it has
// an embedder.
func (e *Engine) noEmbedding() error {
	if n, ok := e.emb.(noEmbedder); ok {
		return n.err()
	}
	return nil
}
