package dense

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/textindex"
	"github.com/mnemo-dev/mnemo/vector"
)

// Store is what a Catalog reads: the change feed it catches up from, and
// the scope of memories for the part of a scope its indexes cannot
// evaluate (metadata filters).
type Store interface {
	Changes(ctx context.Context, p store.ChangesParams) (store.ChangeSet, error)
	Sequence(ctx context.Context, profile string) (int64, error)
	Instance(ctx context.Context) (string, error)
	MarkWatermark(ctx context.Context, profile string, seq int64) (string, error)
	WatermarkMarked(ctx context.Context, profile string, seq int64, mark string) (bool, error)
	Sync(ctx context.Context) error
	InScope(ctx context.Context, scope mnemotype.Scope, ids []string) ([]string, error)
	Count(ctx context.Context, profile string) (int, error)
}

// Defaults of Options.
const (
	// DefaultBudget bounds the bytes a Catalog's indexes hold: about a
	// million memories of 100 dimensions.
	DefaultBudget = 1 << 30
	// DefaultPageSize is how many memories one read of the change feed
	// returns while an index loads.
	DefaultPageSize = 4096
	// DefaultSaveEvery is how many changes an index applies from the store
	// before its snapshot is written again.
	DefaultSaveEvery = 4096
)

// Options configure a Catalog.
type Options struct {
	// Dim is the embeddings' dimension (the embedder's): a memory embedded
	// with another dimension is held without its embedding, so an index
	// follows a profile re-embedded to Dim. 0 takes the first embedding's.
	Dim int
	// Budget bounds the bytes the indexes hold (vector.Index.Bytes); beyond
	// it the least recently used profiles are dropped, to be loaded again
	// when next asked for. A profile larger than the budget alone is still
	// held. 0 means DefaultBudget.
	Budget int64
	// PageSize is how many memories one read of the change feed returns;
	// 0 means DefaultPageSize.
	PageSize int
	// Dir is the folder of the indexes' snapshots ("" keeps none): a
	// profile's index is written there once it has applied SaveEvery
	// changes from the store since its last snapshot, and a new Catalog
	// (a new process) reads it and catches up from its watermark instead
	// of reading every memory from the store. See snapshot.go.
	Dir string
	// SaveEvery is how many changes from the store an index applies before
	// its snapshot is written again; 0 means DefaultSaveEvery.
	SaveEvery int
	// GraphMin is how many embedded memories a profile's index holds
	// before it gets a graph (vector.Index.GrowGraph), built in the
	// background and walked by searches of large scopes; 0 means
	// DefaultGraphMin, a negative value never.
	GraphMin int
	// ANN tells the indexes when to walk their graph.
	ANN vector.ANN
	// NoBackground is for a short-lived process: it grows no graph in the
	// background (BuildGraph still does, at once), restores snapshots
	// without their graphs (vector.DecodeOptions.NoGraph), and does not
	// write a snapshot over one whose graph it left out. Without Text, it
	// restores the embeddings' int8 codes alone (vector.DecodeOptions.Codes,
	// Stats.Coded): a search reads its best candidates' float32s from the
	// snapshot file, which stays open while the index is held.
	NoBackground bool
	// Text makes each index keep its profile's full-text index too (read
	// from the change feed with the memories' text), so that Lexical
	// answers lexical searches in process. Snapshots then carry it.
	Text bool
	// SnapshotText is for a short-lived process that keeps no text
	// otherwise: a profile whose snapshot holds its full-text index keeps
	// it, read lazily from the snapshot file (vector.Index.OpenText: each
	// token's postings when a search first needs them), so that Lexical
	// answers in process without reading every posting. The file stays
	// open while the index is held. A profile without such a snapshot
	// keeps no text, as without the option.
	SnapshotText bool
	// TextOnly, with Text, keeps no embeddings: for a store that ranks
	// them itself (pgvector), the catalog answers the other reads alone.
	TextOnly bool
	// Logger receives evictions and snapshot problems; nil discards them.
	Logger *slog.Logger
}

// DefaultGraphMin is Options.GraphMin's default: an index smaller than the
// scopes it scans exactly has no use for a graph.
const DefaultGraphMin = vector.DefaultExactBelow

// graphBatch is how many memories a builder links into a graph at a time,
// its links written under the index's write lock (about a millisecond).
const graphBatch = 32

// Catalog is the dense port over per-profile in-memory indexes kept in sync
// with a store. Before each call it compares the store's change sequence
// with the index's watermark and applies the changes since (writes by any
// process), so a call sees every write committed before it began; an index
// is a cache of the store, never written to directly. It is safe for
// concurrent use.
type Catalog struct {
	st  Store
	opt Options

	mu       sync.Mutex
	profiles map[string]*entry
	lru      list.List // of *entry, most recently used first
	bytes    int64     // the held entries' sizes
	evicted  int64
	instance string // the store's Instance, once read
	closed   bool
	saves    sync.WaitGroup // snapshots being written
	builders sync.WaitGroup // graphs being grown
	// saveFails counts the snapshot writes that failed in a row; none is
	// written in the background before saveAfter (see saveRetryMin).
	saveFails int
	saveAfter time.Time
	now       func() time.Time
}

// entry is one profile's index.
type entry struct {
	profile string
	x       atomic.Pointer[vector.Index]
	// turn holds one token: its holder catches x up with the store (or
	// writes its snapshot), so a profile loads once however many callers
	// wait.
	turn chan struct{}
	// seq is the store change sequence x reflects.
	seq atomic.Int64
	// growing is set while a builder links x's new memories into its graph;
	// saving while its snapshot is being written (builders pause).
	growing, saving atomic.Bool

	// Under turn: whether the snapshot was looked for, and the changes
	// applied since it was read or written.
	restored bool
	unsaved  int
	// snapshotSeq is the watermark of the snapshot x was restored from, -1
	// when it was built from the store alone; refused why the snapshot
	// found was not used ("" when none was found).
	snapshotSeq int64
	refused     string
	// graphLeft is set when x was restored without the snapshot's graph
	// (Options.NoBackground): its snapshot is then not written over.
	graphLeft bool

	// Under Catalog.mu:
	elem *list.Element // nil once evicted
	size int64         // bytes, as last accounted
}

// NewCatalog returns an empty catalog over st.
func NewCatalog(st Store, opt Options) *Catalog {
	if opt.Budget <= 0 {
		opt.Budget = DefaultBudget
	}
	if opt.PageSize <= 0 {
		opt.PageSize = DefaultPageSize
	}
	if opt.SaveEvery <= 0 {
		opt.SaveEvery = DefaultSaveEvery
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opt.GraphMin == 0 {
		opt.GraphMin = DefaultGraphMin
	}
	c := &Catalog{st: st, opt: opt, profiles: map[string]*entry{}, now: time.Now}
	if opt.Dir != "" {
		removeStaleTemps(opt.Dir, opt.Logger)
	}
	return c
}

// newIndex returns an empty index as the catalog configures them.
func (c *Catalog) newIndex() *vector.Index {
	// A text-only index holds no embeddings: without a dimension it keeps
	// no (zero) floats for its rows either.
	x := vector.New()
	if !c.opt.TextOnly {
		x = vector.NewDim(c.opt.Dim)
	}
	x.SetANN(c.opt.ANN)
	if c.opt.Text {
		x.EnableText()
	}
	return x
}

// Search implements the dense port: the exact top q.K of the scope.
func (c *Catalog) Search(ctx context.Context, q Query) ([]mnemotype.Hit, error) {
	hits, err := c.search(ctx, q)
	if c.corrupt(q.Scope.Profile, err) {
		hits, err = c.search(ctx, q)
	}
	return hits, err
}

// corrupt reports whether err is a corrupt snapshot found by a search: a
// coded index (Stats.Coded) reads float32s from its snapshot as it
// searches. It then drops the index and the snapshot, so that the next
// call builds the index from the store, as a snapshot found corrupt when
// read is ignored.
func (c *Catalog) corrupt(profile string, err error) bool {
	if !errors.Is(err, vector.ErrCorrupt) {
		return false
	}
	c.opt.Logger.Warn("dense index snapshot corrupt: dropped, the index is built from the store", "profile", profile, "err", err)
	c.Evict(profile)
	return true
}

func (c *Catalog) search(ctx context.Context, q Query) ([]mnemotype.Hit, error) {
	x, err := c.index(ctx, q.Scope.Profile)
	if err != nil {
		return nil, err
	}
	search := func(f vector.Filter, k int) ([]mnemotype.Hit, error) {
		hits, how, err := x.SearchHow(q.Vector, q.Model, f, k, q.Serial)
		q.Tell(how)
		return hits, err
	}
	f := vector.FilterOf(q.Scope)
	if len(q.Scope.Metadata) == 0 {
		return search(f, q.K)
	}
	return metadataSearch(ctx, c.st, search, q.Scope, f, q.K)
}

// Score implements the dense port.
func (c *Catalog) Score(ctx context.Context, q Query, ids []string) ([]mnemotype.Hit, error) {
	for try := 0; ; try++ {
		x, err := c.index(ctx, q.Scope.Profile)
		if err != nil {
			return nil, err
		}
		hits, err := x.Score(q.Vector, q.Model, ids)
		if try > 0 || !c.corrupt(q.Scope.Profile, err) {
			return hits, err
		}
	}
}

// Stats describe one profile's index.
type Stats struct {
	// Memories held, and of them those with an embedding of the index's
	// dimension (Embedded) or of another (Foreign, the last one met being
	// ForeignDim).
	Memories, Embedded, Foreign, ForeignDim int
	Bytes                                   int64
	// Linked is how many memories the index's graph holds, Unlinked how
	// many embedded ones it does not yet (scanned exactly by every search
	// until the builder links them).
	Linked, Unlinked int
	// Coded is set when the index holds its embeddings as int8 codes,
	// read from a snapshot by a one-shot process (Options.NoBackground;
	// vector.DecodeOptions.Codes).
	Coded bool
}

// Profile returns the stats of profile's index, caught up with the store.
func (c *Catalog) Profile(ctx context.Context, profile string) (Stats, error) {
	x, err := c.index(ctx, profile)
	if err != nil {
		return Stats{}, err
	}
	return statsOf(x), nil
}

func statsOf(x *vector.Index) Stats {
	n, d := x.Foreign()
	g := x.Graph()
	return Stats{Memories: x.Len(), Embedded: x.Embedded(), Foreign: n, ForeignDim: d, Bytes: x.Bytes(),
		Linked: g.Linked, Unlinked: g.Unlinked, Coded: x.Coded()}
}

// Walks returns how many searches of the indexes held walked a graph
// instead of scanning.
func (c *Catalog) Walks() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, e := range c.profiles {
		n += e.x.Load().Walks()
	}
	return n
}

// Usage reports the profiles held, the bytes they hold, and how many
// evictions the budget has caused.
func (c *Catalog) Usage() (profiles int, bytes, evictions int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.profiles), c.bytes, c.evicted
}

// Evict drops profile's index (its memories are gone, or it is not needed
// soon) and its snapshot; the next call loads it again. A snapshot being
// written is waited for, and one queued is not written (see maybeSave).
func (c *Catalog) Evict(profile string) {
	c.mu.Lock()
	e := c.profiles[profile]
	if e != nil {
		c.remove(e)
	}
	c.mu.Unlock()
	if e != nil {
		<-e.turn
		defer e.release()
	}
	c.removeSnapshot(profile)
}

// remove drops e; c.mu is held.
func (c *Catalog) remove(e *entry) {
	c.lru.Remove(e.elem)
	e.elem = nil
	delete(c.profiles, e.profile)
	c.bytes -= e.size
}

// use returns profile's entry, created if needed, as the most recently
// used.
func (c *Catalog) use(profile string) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.profiles[profile]
	if e == nil {
		e = &entry{profile: profile, turn: make(chan struct{}, 1), snapshotSeq: -1}
		e.x.Store(c.newIndex())
		e.turn <- struct{}{}
		e.elem = c.lru.PushFront(e)
		c.profiles[profile] = e
		return e
	}
	c.lru.MoveToFront(e.elem)
	return e
}

// index returns profile's index, caught up with every change the store
// committed before the call.
func (c *Catalog) index(ctx context.Context, profile string) (*vector.Index, error) {
	e, err := c.caughtUp(ctx, profile)
	if err != nil {
		return nil, err
	}
	return e.x.Load(), nil
}

// syncedKey is the context key of Synced's note.
type syncedKey struct{}

// synced notes that a catalog caught a profile's index up with the store's
// sequence seq during the call a context belongs to.
type synced struct {
	c       *Catalog
	profile string
	seq     int64
}

// Synced catches profile's index up with the store and returns ctx noting
// so: the catalog's later calls with it (or a context derived from it)
// need not read the store's sequence again, since every write committed
// before the call began is within the one read now. A recall's several
// reads of one profile pay for one.
func (c *Catalog) Synced(ctx context.Context, profile string) (context.Context, error) {
	e, err := c.caughtUp(ctx, profile)
	if err != nil {
		return ctx, err
	}
	return context.WithValue(ctx, syncedKey{}, synced{c, profile, e.seq.Load()}), nil
}

// SyncedAt is Synced with the store's sequence of profile already read
// (store.Store.Versions, at the start of the call), by a caller that reads
// it with other numbers in one round trip.
func (c *Catalog) SyncedAt(ctx context.Context, profile string, seq int64) (context.Context, error) {
	return c.Synced(context.WithValue(ctx, syncedKey{}, synced{c, profile, seq}), profile)
}

// KeepsText reports whether the catalog keeps full-text indexes
// (Options.Text, or SnapshotText: those of snapshots).
func (c *Catalog) KeepsText() bool { return c.opt.Text || c.opt.SnapshotText }

// caughtUp returns profile's entry, its index caught up with every change
// the store committed before the call (or before Synced noted ctx).
func (c *Catalog) caughtUp(ctx context.Context, profile string) (*entry, error) {
	if profile == "" {
		return nil, mnemotype.Invalidf("dense retrieval: profile is required")
	}
	var seq int64
	var err error
	s, noted := ctx.Value(syncedKey{}).(synced)
	if noted = noted && s.c == c && s.profile == profile; noted {
		seq = s.seq
	} else {
		if seq, err = c.st.Sequence(ctx, profile); err != nil {
			return nil, fmt.Errorf("dense index of profile %q: %w", profile, err)
		}
	}
	e := c.use(profile)
	if e.seq.Load() >= seq {
		return e, nil
	}
	if err := e.take(ctx); err != nil {
		return nil, fmt.Errorf("dense index of profile %q: waiting for its load: %w", profile, err)
	}
	defer e.release()
	if e.seq.Load() < seq {
		if !e.restored {
			e.restored = true
			storeSeq := seq
			if noted {
				// A snapshot written since the note may be ahead of it,
				// not of the store.
				if storeSeq, err = c.st.Sequence(ctx, profile); err != nil {
					return nil, fmt.Errorf("dense index of profile %q: %w", profile, err)
				}
			}
			c.restore(ctx, e, storeSeq)
		}
		err = c.catchUp(ctx, e)
		c.account(e)
		if err == nil {
			c.maybeSave(ctx, e)
			c.maybeGrow(e)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("dense index of profile %q: %w", profile, err)
	}
	return e, nil
}

// take waits for e's turn, or for ctx to end.
func (e *entry) take(ctx context.Context) error {
	select {
	case <-e.turn:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// release gives e's turn back.
func (e *entry) release() { e.turn <- struct{}{} }

// catchUp applies the store's changes after e's watermark, a page at a
// time, until the feed has no more. The caller holds e's turn. A failure
// leaves e consistent at the last page applied.
func (c *Catalog) catchUp(ctx context.Context, e *entry) error {
	if x := e.x.Load(); e.seq.Load() == 0 && x.Len() == 0 {
		// Loaded from nothing (no snapshot): room for every memory at
		// once. Best effort: a failed count only costs the copies.
		if n, err := c.st.Count(ctx, e.profile); err == nil {
			x.Reserve(n)
		}
	}
	for {
		x := e.x.Load()
		text := x.KeepsText() // Options.Text, or a snapshot's (SnapshotText)
		cs, err := c.st.Changes(ctx, store.ChangesParams{Profile: e.profile, Since: e.seq.Load(), Limit: c.opt.PageSize, Text: text})
		if err != nil {
			return err
		}
		var docs []textindex.Doc
		if text {
			if docs, err = textDocs(cs); err != nil {
				return err
			}
		}
		x.Delete(cs.Deleted...)
		if c.opt.TextOnly {
			for i := range cs.Upserts {
				cs.Upserts[i].Embedding, cs.Upserts[i].EmbeddingModel = nil, ""
			}
		}
		if text {
			err = x.UpsertText(cs.Upserts, docs)
		} else {
			err = x.Upsert(cs.Upserts)
		}
		// A memory of another dimension than the index's is held without
		// its embedding (counted by Foreign): not an error here.
		if err != nil && !errors.Is(err, mnemotype.ErrDimensionMismatch) {
			return err
		}
		e.unsaved += len(cs.Deleted) + len(cs.Upserts)
		e.seq.Store(cs.Seq)
		if !cs.More {
			return nil
		}
	}
}

// GraphMin returns how many embedded memories a profile holds before its
// index gets a graph (Options.GraphMin; no graph ever when negative).
func (c *Catalog) GraphMin() int {
	if c.opt.GraphMin < 0 {
		return math.MaxInt
	}
	return c.opt.GraphMin
}

// needsGraph reports whether x is large enough for a graph and holds
// memories not yet in it, or a graph a fifth tombstones (which
// GrowGraph starts again).
func (c *Catalog) needsGraph(x *vector.Index) bool {
	if c.opt.GraphMin <= 0 || x.Embedded() < c.opt.GraphMin {
		return false
	}
	g := x.Graph()
	return g.Unlinked > 0 || (g.Tombstones > 0 && g.Tombstones*4 >= g.Linked)
}

// maybeGrow starts a builder linking e's new memories into its index's
// graph, unless one runs or the index needs none. The builder stops when
// the graph holds them all (and looks again, for memories written as it
// stopped), the catalog closes, or e is dropped. A build that linked an
// eighth of the index or more has the snapshot written, so that a new
// process gets the graph; smaller ones count as that many changes toward
// the next snapshot (Options.SaveEvery).
func (c *Catalog) maybeGrow(e *entry) {
	x := e.x.Load()
	if c.opt.NoBackground || !c.needsGraph(x) || !e.growing.CompareAndSwap(false, true) {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		e.growing.Store(false)
		return
	}
	c.builders.Add(1)
	go func() {
		defer c.builders.Done()
		t0, linked := time.Now(), 0
		for {
			n, done := c.grow(context.Background(), e, x)
			linked += n
			e.growing.Store(false)
			if !done || !c.needsGraph(x) || !e.growing.CompareAndSwap(false, true) {
				if !done || linked == 0 {
					return
				}
				break
			}
		}
		c.opt.Logger.Info("dense index graph grown", "profile", e.profile, "memories", linked, "took", time.Since(t0))
		<-e.turn
		defer e.release()
		if linked >= x.Len()/8 {
			e.unsaved = max(e.unsaved, c.opt.SaveEvery, x.Len()/8)
		} else {
			e.unsaved += linked
		}
		c.maybeSave(context.Background(), e)
		c.account(e)
	}()
}

// growPause is how long a builder waits, between batches, for a snapshot
// of its index being written: a batch takes the index's write lock, which
// would wait for the encoding's read lock and hold every search back
// behind it.
const growPause = 5 * time.Millisecond

// grow links x's tail into its graph a batch at a time until none is left
// (done), or ctx ends, the catalog closes, or e no longer holds x; it
// returns how many memories it linked. Every 64 batches it accounts the
// index's size, so that a growing graph counts against the budget.
func (c *Catalog) grow(ctx context.Context, e *entry, x *vector.Index) (linked int, done bool) {
	for i := 1; ; i++ {
		c.mu.Lock()
		stop := c.closed || e.elem == nil || e.x.Load() != x
		c.mu.Unlock()
		if stop || ctx.Err() != nil {
			return linked, false
		}
		if e.saving.Load() {
			time.Sleep(growPause)
			continue
		}
		before := x.Graph().Unlinked
		left := x.GrowGraph(graphBatch, 1)
		linked += max(0, before-left)
		if left == 0 && !c.needsGraph(x) {
			return linked, true
		}
		if i%64 == 0 {
			c.account(e)
		}
	}
}

// BuildGraph catches profile's index up with the store and, when it is
// large enough for one (Options.GraphMin), links every memory into its
// graph before it returns (a background builder does so otherwise), then
// writes its snapshot when the catalog keeps them. It returns how many
// memories it linked.
func (c *Catalog) BuildGraph(ctx context.Context, profile string) (int, error) {
	e, err := c.caughtUp(ctx, profile)
	if err != nil {
		return 0, err
	}
	x := e.x.Load()
	if !c.needsGraph(x) {
		return 0, nil
	}
	if err := x.ReadFloats(); err != nil { // a coded index's
		return 0, err
	}
	n := x.Graph().Unlinked
	for x.Graph().Unlinked > 0 {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		x.GrowGraph(graphBatch*16, runtime.GOMAXPROCS(0))
	}
	if err := e.take(ctx); err != nil {
		return 0, err
	}
	defer e.release()
	c.mu.Lock()
	dropped := c.closed || e.elem == nil
	c.mu.Unlock()
	if c.opt.Dir != "" && e.x.Load() == x && !dropped {
		instance, err := c.storeInstance(ctx)
		if err != nil {
			return 0, err
		}
		e.saving.Store(true)
		err = c.save(ctx, profile, instance, e.seq.Load(), x)
		e.saving.Store(false)
		if err != nil {
			return 0, fmt.Errorf("dense index of profile %q: write its snapshot: %w", profile, err)
		}
		e.unsaved, e.graphLeft = 0, false
	}
	c.account(e)
	return n, nil
}

// account records e's size and evicts the least recently used other
// profiles while the budget is exceeded.
func (c *Catalog) account(e *entry) {
	size := e.x.Load().Bytes()
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.elem == nil {
		return // evicted meanwhile: not held
	}
	c.bytes += size - e.size
	e.size = size
	for c.bytes > c.opt.Budget && c.lru.Len() > 1 {
		last := c.lru.Back().Value.(*entry)
		if last == e {
			break
		}
		c.remove(last)
		c.evicted++
		c.opt.Logger.Info("dense index evicted", "profile", last.profile, "bytes", last.size, "budget", c.opt.Budget)
	}
}

// metadataWiden are how many times more hits than it needs the search
// takes, in turn, before the store applies a metadata filter to them.
var metadataWiden = [...]int{8, 64}

// metadataSearch is the search of a scope with a metadata filter, which
// the index cannot evaluate: it searches the rest of the scope for
// k × metadataWiden[i] hits, best first, and has the store keep those in
// scope. When at least k remain, or the search found every candidate,
// they are exactly the scope's top k; else it widens, and in the end (a
// filter keeping very few memories) the store lists the scope's memories
// and the index searches only them.
func metadataSearch(ctx context.Context, st Store, search func(vector.Filter, int) ([]mnemotype.Hit, error),
	scope mnemotype.Scope, f vector.Filter, k int) ([]mnemotype.Hit, error) {
	if k <= 0 {
		return nil, nil
	}
	for _, widen := range metadataWiden {
		hits, err := search(f, k*widen)
		if err != nil {
			return nil, err
		}
		keep, err := st.InScope(ctx, scope, hitIDs(hits))
		if err != nil {
			return nil, err
		}
		if len(keep) >= k || len(hits) < k*widen {
			in := make(map[string]bool, len(keep))
			for _, id := range keep {
				in[id] = true
			}
			hits = slices.DeleteFunc(hits, func(h mnemotype.Hit) bool { return !in[h.ID] })
			return hits[:min(len(hits), k)], nil
		}
	}
	only, err := st.InScope(ctx, scope, nil)
	if err != nil {
		return nil, err
	}
	f.Only = only
	return search(f, k)
}

func hitIDs(h []mnemotype.Hit) []string {
	out := make([]string, len(h))
	for i := range h {
		out[i] = h[i].ID
	}
	return out
}
