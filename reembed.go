package mnemo

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"

	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
)

// DefaultReembedBatch is the number of memories Reembed embeds per
// embedder call when ReembedParams.BatchSize is 0.
const DefaultReembedBatch = 64

// reembedMaxFailedBatches is how many failed batches in a row make Reembed
// give up: the embedder is down, not choking on one text.
const reembedMaxFailedBatches = 3

// ReembedParams selects the memories Reembed embeds.
type ReembedParams struct {
	// Profile is required.
	Profile string
	// All also re-embeds the memories embedded by another model than the
	// engine's embedder (after a model change). By default only memories
	// without an embedding are embedded.
	All bool
	// BatchSize is the number of memories per embedder call, in
	// [1, MaxListLimit]. Defaults to DefaultReembedBatch.
	BatchSize int
	// Progress, when set, is called after each batch with the totals so
	// far, on Reembed's goroutine.
	Progress func(ReembedStats)
}

// ReembedStats counts what Reembed did.
type ReembedStats struct {
	// Model is the embedder's model, the one memories were embedded with.
	Model string `json:"model"`
	// Scanned is the number of memories examined.
	Scanned int `json:"scanned"`
	// Embedded is the number of memories given an embedding by Model.
	Embedded int `json:"embedded"`
	// Current is the number already embedded by Model, left as they were.
	Current int `json:"current"`
	// Other counts, per model, the memories embedded by another model and
	// left as they were (ReembedParams.All unset).
	Other map[string]int `json:"other,omitempty"`
	// Failed is the number of memories the embedder failed on; they are
	// left as they were.
	Failed int `json:"failed"`
	// Changed is the number of memories deleted, edited or embedded by
	// another writer while Reembed embedded them; they are left to it.
	Changed int `json:"changed"`
}

// EmbeddingCount counts the memories of a profile embedded by one model
// with one dimension (Model "" and Dim 0: without an embedding). See
// Engine.EmbeddingCounts.
type EmbeddingCount = store.EmbeddingCount

// EmbeddingCounts counts memories by profile, embedding model and
// dimension: profile's, or every profile's when profile is "". Memories
// without an embedding (stored while the embedder failed) count under
// model "" and dimension 0. Rows are ordered by profile, model, then
// dimension.
func (e *Engine) EmbeddingCounts(ctx context.Context, profile string) ([]EmbeddingCount, error) {
	done, err := e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	if err := checkProfileOrAll(profile); err != nil {
		return nil, err
	}
	return e.st.EmbeddingCounts(ctx, profile)
}

// OtherCount is the number of memories embedded by other models.
func (s ReembedStats) OtherCount() int {
	n := 0
	for _, c := range s.Other {
		n += c
	}
	return n
}

// Reembed embeds, with the engine's embedder, the memories of a profile
// that have no embedding (stored while the embedder was failing) and, with
// p.All, those embedded by another model. It pages through the profile in
// creation order and writes each batch through the store as soon as it is
// embedded, so an interrupted run keeps its progress and a second run
// resumes where it stopped. Memories written or edited meanwhile by other
// writers are left to them.
//
// A batch the embedder fails on is counted in Failed and skipped; after
// three failed batches in a row Reembed stops, and at once when the
// embedder is unavailable (embed.ErrUnavailable: its circuit breaker is
// open).
//
// Dimensions are never mixed within a model in a profile: if the embedder
// returns vectors of another dimension than the profile's embeddings of
// the same model name (another model behind the same name), or than the
// profile's embeddings of other models while p.All is unset, Reembed stops
// before writing them with an ErrDimensionMismatch error naming both. Returns the counts so far
// with an error if any memory could not be embedded, ctx's error if it is
// done, ErrClosed if the engine closes meanwhile (between batches: Reembed
// does not hold up Close).
//
// Until a model change is complete, recall's dense leg compares the query
// only with memories of the current model (the in-memory index filters by
// model name); when the new model has another dimension, the dense leg is
// skipped (the trace says why) until the profile holds no embedding of the
// old dimension. Reembed with All migrates the profile fully.
//
// Reembed is safe to run alongside other operations, including in the
// background of a server.
func (e *Engine) Reembed(ctx context.Context, p ReembedParams) (ReembedStats, error) {
	st := ReembedStats{Model: e.emb.Model()}
	if err := e.noEmbedding(); err != nil {
		return st, fmt.Errorf("reembed: %w", err)
	}
	if err := mnemotype.CheckProfile(p.Profile); err != nil {
		return st, err
	}
	if p.BatchSize == 0 {
		p.BatchSize = DefaultReembedBatch
	}
	if p.BatchSize < 1 || p.BatchSize > MaxListLimit {
		return st, mnemotype.Invalidf("batch size = %d: must be an integer in [1, %d]", p.BatchSize, MaxListLimit)
	}
	r := &reembedder{e: e, p: p, st: &st}
	if err := r.loadDims(ctx); err != nil {
		return st, err
	}
	var pending []Memory
	cursor := ""
	for {
		page, err := r.list(ctx, cursor)
		if err != nil {
			return st, err
		}
		for _, m := range page.Memories {
			st.Scanned++
			switch {
			case m.EmbeddingModel == st.Model:
				st.Current++
			case m.EmbeddingModel == "" || p.All:
				pending = append(pending, m)
			default:
				if st.Other == nil {
					st.Other = map[string]int{}
				}
				st.Other[m.EmbeddingModel]++
			}
			if len(pending) == p.BatchSize {
				if err := r.batch(ctx, pending); err != nil {
					return st, err
				}
				pending = pending[:0]
			}
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if len(pending) > 0 {
		if err := r.batch(ctx, pending); err != nil {
			return st, err
		}
	}
	if st.Failed > 0 {
		return st, fmt.Errorf("reembed profile %s: %d memories could not be embedded by %s (left as they were; run again later): %w",
			p.Profile, st.Failed, st.Model, r.lastErr)
	}
	return st, nil
}

// reembedder is one Reembed run.
type reembedder struct {
	e        *Engine
	p        ReembedParams
	st       *ReembedStats
	failures int // failed batches in a row
	lastErr  error
	// counts are the profile's embeddings by model and dimension when the
	// run started; dim is the dimension of the vectors written so far.
	counts []EmbeddingCount
	dim    int
}

// loadDims reads the dimensions the profile's embeddings have.
func (r *reembedder) loadDims(ctx context.Context) error {
	done, err := r.e.enter()
	if err != nil {
		return err
	}
	defer done()
	cs, err := r.e.st.EmbeddingCounts(ctx, r.p.Profile)
	if err != nil {
		return fmt.Errorf("reembed profile %s: %w", r.p.Profile, err)
	}
	r.counts = cs
	return nil
}

// checkDim refuses vectors of dimension d that would mix dimensions in the
// profile.
func (r *reembedder) checkDim(d int) error {
	if r.dim != 0 && d != r.dim {
		return fmt.Errorf("reembed profile %s: %s returned %d-d vectors after %d-d ones: %w",
			r.p.Profile, r.st.Model, d, r.dim, ErrDimensionMismatch)
	}
	for _, c := range r.counts {
		switch {
		case c.Dim == 0 || c.Dim == d:
		case c.Model == r.st.Model:
			return fmt.Errorf("reembed profile %s: %s returns %d-d vectors but the profile holds %d memories it embedded "+
				"with %d dimensions (another model behind the same name?); left as they were: %w",
				r.p.Profile, r.st.Model, d, c.Count, c.Dim, ErrDimensionMismatch)
		case !r.p.All:
			return fmt.Errorf("reembed profile %s: %s returns %d-d vectors but the profile holds %d memories embedded by %s "+
				"with %d dimensions, and a profile never mixes dimensions; left as they were "+
				"(re-embed every memory with All, mnemo reembed --all): %w",
				r.p.Profile, r.st.Model, d, c.Count, c.Model, c.Dim, ErrDimensionMismatch)
		}
	}
	r.dim = d
	return nil
}

func (r *reembedder) list(ctx context.Context, cursor string) (store.ListPage, error) {
	done, err := r.e.enter()
	if err != nil {
		return store.ListPage{}, err
	}
	defer done()
	return r.e.st.List(ctx, store.ListParams{Profile: r.p.Profile, Limit: r.p.BatchSize, Cursor: cursor})
}

// batch embeds mems and stores their embeddings. It returns an error only
// when the run must stop.
func (r *reembedder) batch(ctx context.Context, mems []Memory) error {
	e := r.e
	texts := make([]string, len(mems))
	for i, m := range mems {
		texts[i] = m.Content
	}
	vecs, err := e.emb.Embed(ctx, texts)
	if err == nil {
		err = checkVectors(vecs, len(texts), e.emb.Dim())
	}
	if err == nil && len(vecs) > 0 {
		if err := r.checkDim(len(vecs[0])); err != nil {
			r.st.Failed += len(mems)
			return err
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, ErrDimensionMismatch) {
			// Not an outage: trying again will not help.
			r.st.Failed += len(mems)
			return fmt.Errorf("reembed profile %s: %w", r.p.Profile, err)
		}
		r.st.Failed += len(mems)
		r.failures++
		r.lastErr = err
		if errors.Is(err, embed.ErrUnavailable) {
			// The embedder's circuit is open: no batch will get through
			// until its probe sees the provider answer.
			return fmt.Errorf("reembed profile %s: stopping: %w", r.p.Profile, err)
		}
		e.log.Warn("reembed: embedding failed; memories left as they were", "profile", r.p.Profile, "model", r.st.Model,
			"count", len(mems), "err", err)
		if r.failures >= reembedMaxFailedBatches {
			return fmt.Errorf("reembed profile %s: embedder %s failed %d batches in a row, stopping: %w",
				r.p.Profile, r.st.Model, r.failures, err)
		}
		r.progress()
		return nil
	}
	r.failures = 0
	done, err := e.enter()
	if err != nil {
		return err
	}
	defer done()
	for i, m := range mems {
		// Written only if the memory is still what was embedded, checked
		// in the store's transaction: if another writer got there first
		// (deleted, edited or embedded it), its version stands.
		_, err := e.st.Update(ctx, store.UpdateParams{Profile: r.p.Profile, ID: m.ID, Embedding: vecs[i], EmbeddingModel: r.st.Model,
			IfContent: &m.Content, IfEmbeddingModel: &m.EmbeddingModel})
		if errors.Is(err, ErrNotFound) || errors.Is(err, mnemotype.ErrConflict) {
			r.st.Changed++
			continue
		}
		if err != nil {
			return err
		}
		r.st.Embedded++
	}
	r.progress()
	return nil
}

func (r *reembedder) progress() {
	if r.p.Progress != nil {
		st := *r.st
		st.Other = maps.Clone(st.Other)
		r.p.Progress(st)
	}
}

// checkVectors checks an embedder's answer for n texts: n finite vectors,
// all of dimension dim (of the first vector when dim is 0).
func checkVectors(vecs [][]float32, n, dim int) error {
	if len(vecs) != n {
		return fmt.Errorf("embedder returned %d vectors for %d texts", len(vecs), n)
	}
	if n > 0 && dim == 0 {
		dim = len(vecs[0])
	}
	for i, v := range vecs {
		if len(v) != dim || dim == 0 {
			return fmt.Errorf("embedder returned a %d-d vector for text %d, want %d-d: %w", len(v), i, dim, ErrDimensionMismatch)
		}
		for _, f := range v {
			if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
				return fmt.Errorf("embedder returned a non-finite value for text %d", i)
			}
		}
	}
	return nil
}
