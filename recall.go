package mnemo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/mnemo-dev/mnemo/dense"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/recall"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/store/postgres"
)

// Query is one recall request.
type Query struct {
	// Text is what to recall; it must not be blank.
	Text    string
	Profile string
	// Project, when set, restricts recall to the project.
	Project string
	// Sessions, when set, restricts recall to these sessions.
	Sessions []string
	// Kinds, when set, restricts recall to these kinds.
	Kinds []Kind
	// Exclude lists ids not to return (e.g. those already in the prompt).
	Exclude []string
	// Actors, when set, restricts recall to memories of these actors (""
	// for memories without one).
	Actors []string
	// After and Before, when not zero, restrict recall to memories that
	// occurred at or after After, and before Before.
	After, Before time.Time
	// Metadata, when set, restricts recall to memories whose metadata has
	// each key (a top-level member) equal to its value: a string, a number
	// (float64 or int), a bool, or nil for a member that is null or absent
	// (see mnemotype.MetadataMatch).
	Metadata map[string]any
	// Limit is the number of memories to return, in [1, MaxLimit].
	// Defaults to DefaultLimit.
	Limit int
	// Overrides changes settings for this request only (same keys as
	// Settings, e.g. "semantic_weight": "0.5", "strategy": "rrf").
	Overrides map[string]string
	// Trace asks for the per-leg lists and per-stage timings, and every
	// result's rank under the other strategies (Recalled.Counterfactual),
	// which costs one extra fusion per strategy.
	Trace bool
	// Timings asks for the trace without the counterfactual ranks: what a
	// caller that only records per-stage timings and leg sizes (metrics)
	// needs, without the extra fusions. Trace implies it.
	Timings bool
	// NoTouch leaves the returned memories' access statistics
	// (accessed_at, access_count) as they were: for measuring recall
	// (mnemo bench) without changing what the access leg ranks.
	NoTouch bool
}

// Recalled is one recalled memory.
type Recalled struct {
	Memory
	// Score is the fused score after the importance prior, capped at the
	// Score of the result ranked above it (the prior reorders results
	// only within Settings.RelevanceMargin), so that the results come in
	// non-increasing Score order; higher is better.
	Score float64
	// Relevance is the estimate, in [0, 1], that this memory is relevant:
	// comparable across queries and stores, unlike Score (package
	// relevance; Settings.MinRelevance cuts below it).
	Relevance float64
	// Rank is the 1-based position.
	Rank int
	// Legs holds each leg's rank, raw score and contribution.
	Legs map[string]LegDetail
	// Counterfactual maps other strategies to this memory's rank under them.
	Counterfactual map[string]int
	// Duplicates are the ids of the memories of the same content ranked
	// below this one, left out of the results (Settings.CollapseDuplicates),
	// among those read to fill the results.
	Duplicates []string
}

// RecallResult is the answer to a Query.
type RecallResult struct {
	Results []Recalled
	// Trace is set when Query.Trace or Query.Timings was.
	Trace *Trace
}

// Recall returns the memories of q's scope that best match q.Text.
func (e *Engine) Recall(ctx context.Context, q Query) (*RecallResult, error) {
	done, err := e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	return e.recall(ctx, q, e.vec, e.dense)
}

// recall answers q with vec as the dense leg: the engine's (its catalog of
// in-memory indexes, or the store's own), or (RecallPool) a scan of the
// store. text, when not nil, is the catalog that answers the other reads
// it can in process (the engine's, unless a one-shot RecallPool must not
// load its index).
func (e *Engine) recall(ctx context.Context, q Query, vec recall.Dense, text *dense.Catalog) (*RecallResult, error) {
	start := time.Now()
	md, err := q.validate()
	if err != nil {
		return nil, err
	}
	if q.Limit == 0 {
		q.Limit = DefaultLimit
	}
	// One read says whether the settings and the catalog's indexes kept
	// in process are current.
	vers, err := e.st.Versions(ctx, q.Profile)
	if err != nil {
		return nil, err
	}
	set, err := e.settingsAt(ctx, q.Profile, vers.Settings)
	if err != nil {
		return nil, err
	}
	if len(q.Overrides) > 0 {
		if set, err = set.Apply(q.Overrides); err != nil {
			return nil, err
		}
	}
	opts, err := set.options()
	if err != nil {
		return nil, err
	}
	if _, explicit := canonical(q.Overrides)["strategy"]; explicit {
		// An explicit per-request strategy is honoured, not switched.
		opts.Fusion.HighConfidence = false
	}
	timings := map[string]float64{}
	denseRuns := opts.Fusion.Weight(mnemotype.LegDense) > 0 && e.noEmbedding() == nil
	keepsText := text != nil && text.KeepsText()
	if keepsText || (vec == recall.Dense(e.dense) && denseRuns) {
		// The recall's reads of the catalog see the store as of now: one
		// read of its sequence for all of them.
		t0 := time.Now()
		if ctx, err = e.dense.SyncedAt(ctx, q.Profile, vers.Changes); err != nil {
			return nil, err
		}
		timings["index_sync"] = msSince(t0)
	}
	var size int
	if keepsText {
		size, err = e.dense.Count(ctx, q.Profile)
	} else {
		size, err = e.st.Count(ctx, q.Profile)
	}
	if err != nil {
		return nil, err
	}

	// Memories the pipeline read (for the exact-match bonus, or for the
	// relevance estimate when the text index cannot say) are kept for the
	// results.
	byID := map[string]Memory{}
	var readMu sync.Mutex
	req := recall.Request{
		Query: q.Text,
		Scope: mnemotype.Scope{Profile: q.Profile, Project: q.Project, Sessions: q.Sessions, Kinds: q.Kinds, Exclude: q.Exclude,
			Actors: q.Actors, After: q.After, Before: q.Before, Metadata: md},
		Limit:          q.Limit,
		ProfileSize:    size,
		Options:        opts,
		Spare:          spareFor(set, q.Limit),
		Trace:          q.Trace || q.Timings,
		Counterfactual: q.Trace,
		Model:          e.emb.Model(),
		Texts: func(ctx context.Context, ids []string) (map[string]recall.Text, error) {
			ms, err := e.st.Get(ctx, store.GetParams{Profile: q.Profile, IDs: ids})
			if err != nil {
				return nil, err
			}
			out := make(map[string]recall.Text, len(ms))
			for _, m := range ms {
				out[m.ID] = recall.Text{Content: m.Content, Actor: m.Actor}
				readMu.Lock()
				byID[m.ID] = m // the results read below need not be read again
				readMu.Unlock()
			}
			return out, nil
		},
	}
	if keepsText {
		req.Holds = func(ctx context.Context, ids, tokens []string) ([][]bool, bool, error) {
			return text.Holds(ctx, q.Profile, ids, tokens)
		}
	}
	if err := e.noEmbedding(); err != nil && opts.Fusion.Weight(mnemotype.LegDense) > 0 {
		req.VectorErr = err // the dense leg is skipped, and the trace says why
	} else if opts.Fusion.Weight(mnemotype.LegDense) > 0 {
		t0 := time.Now()
		// Catching the index up first keeps the load of a profile out of
		// the dense leg's timing, and says whether it can answer at all.
		foreign, err := e.foreignDim(ctx, q.Profile, vec)
		if err != nil {
			return nil, err
		}
		timings["index_sync"] += msSince(t0)
		t0 = time.Now()
		req.Vector, req.VectorErr = e.embedQuery(ctx, q.Text)
		if req.VectorErr == nil && foreign != 0 {
			req.Vector, req.VectorErr = nil, fmt.Errorf("%w: memories hold %d-d embeddings, embedder %s gives %d-d (re-embed with `mnemo reembed --all` or switch the embedder back)",
				ErrDimensionMismatch, foreign, e.emb.Model(), e.emb.Dim())
		}
		timings["embed"] = msSince(t0)
		if req.VectorErr != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			e.log.Log(ctx, embedFailureLevel(req.VectorErr), "query embedding unavailable; recalling without the dense leg", "err", req.VectorErr)
		}
	}
	src := source{e.st, e.access, text, opts.Fusion.Weight(mnemotype.LegAccess) > 0, &lexicalWhere{}}
	resp, err := recall.Run(ctx, src, vec, req)
	if err != nil {
		return nil, err
	}
	if resp.Trace != nil {
		resp.Trace.LexicalSearch = src.where.said()
	}

	t0 := time.Now()
	ids := make([]string, len(resp.Results))
	for i, r := range resp.Results {
		ids[i] = r.ID
	}
	// The spare results are read only when duplicates left places to fill.
	read := 0
	readUpTo := func(n int) error {
		if n <= read {
			return nil
		}
		var missing []string
		for _, id := range ids[read:n] {
			if _, ok := byID[id]; !ok {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 {
			read = n
			return nil
		}
		mems, err := e.st.Get(ctx, store.GetParams{Profile: q.Profile, IDs: missing})
		if err != nil {
			return err
		}
		for _, m := range mems {
			byID[m.ID] = m
		}
		read = n
		return nil
	}
	if err := readUpTo(min(len(ids), q.Limit)); err != nil {
		return nil, err
	}
	out := &RecallResult{Results: make([]Recalled, 0, min(len(resp.Results), q.Limit))}
	kept := map[uint64][]int{} // a content's hash → its results
	for i, r := range resp.Results {
		if i == read {
			if len(out.Results) == q.Limit {
				break // full, no duplicate among them: the spares are not needed
			}
			if err := readUpTo(len(ids)); err != nil {
				return nil, err
			}
		}
		m, ok := byID[r.ID]
		if !ok {
			continue // deleted between the legs and now
		}
		if set.CollapseDuplicates {
			h := contentHash(m.Content)
			same := func(k int) bool { return contentKey(out.Results[k].Content) == contentKey(m.Content) }
			if at := slices.IndexFunc(kept[h], same); at >= 0 {
				k := kept[h][at]
				out.Results[k].Duplicates = append(out.Results[k].Duplicates, m.ID)
				continue
			}
			if len(out.Results) == q.Limit {
				continue // only a duplicate of a result could still count
			}
			kept[h] = append(kept[h], len(out.Results))
		}
		out.Results = append(out.Results, Recalled{Memory: m, Score: r.Score, Relevance: r.Relevance, Rank: len(out.Results) + 1, Legs: r.Legs,
			Counterfactual: r.Counterfactual})
	}
	timings["fetch"] = msSince(t0)
	if !q.NoTouch {
		now := time.Now().UTC()
		touched := make([]string, len(out.Results))
		for i, r := range out.Results {
			touched[i] = r.ID
		}
		e.access.record(q.Profile, now, touched)
	}
	if resp.Trace != nil {
		for k, v := range timings {
			resp.Trace.Timings[k] = v
		}
		resp.Trace.Timings["total"] = msSince(start)
		out.Trace = resp.Trace
	}
	return out, nil
}

// embedQuery embeds the query text within Config.QueryEmbedTimeout,
// checking the embedder's output.
func (e *Engine) embedQuery(ctx context.Context, text string) ([]float32, error) {
	vs, err := e.embedWithin(ctx, e.cfg.QueryEmbedTimeout, []string{text})
	var timeout *EmbedTimeoutError
	if errors.As(err, &timeout) {
		return nil, err // it names the model and the deadline
	}
	if err != nil {
		return nil, fmt.Errorf("embed query with %s: %w", e.emb.Model(), err)
	}
	if len(vs) != 1 || len(vs[0]) != e.emb.Dim() {
		return nil, fmt.Errorf("embed query with %s: malformed output: %w", e.emb.Model(), ErrDimensionMismatch)
	}
	for _, f := range vs[0] {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil, fmt.Errorf("embed query with %s: non-finite output", e.emb.Model())
		}
	}
	return vs[0], nil
}

// foreignDim is the dimension of profile's embeddings when none has the
// embedder's (the profile was embedded by another model and not
// re-embedded), else 0. Asked of the catalog, it also catches the
// profile's index up.
func (e *Engine) foreignDim(ctx context.Context, profile string, vec recall.Dense) (int, error) {
	if vec == recall.Dense(e.dense) {
		s, err := e.dense.Profile(ctx, profile)
		if err != nil || s.Embedded > 0 || s.Foreign == 0 {
			return 0, err
		}
		return s.ForeignDim, nil
	}
	if own, ok := vec.(*postgres.Dense); ok {
		return own.ForeignDim(ctx, profile, e.emb.Dim())
	}
	d, err := e.st.EmbeddingDim(ctx, profile)
	if err != nil || d == e.emb.Dim() {
		return 0, err
	}
	return d, nil
}

// source is the recall pipeline's view of the store: the signals include
// the accesses this process has recorded and not yet written.
type source struct {
	store.Store
	access *tracker
	// text answers the lexical leg, the neighbour lookup and the signals
	// in process when it can (dense.Catalog with Options.Text); the store
	// otherwise.
	text *dense.Catalog
	// accessStats is set when the recall reads the memories' access
	// statistics (the access leg), which only the store (and the
	// accesses this process has not written yet) holds.
	accessStats bool
	// where notes where the lexical leg ranked (for the trace).
	where *lexicalWhere
}

// lexicalWhere notes where a recall's lexical searches ranked (the
// searches of a recall run concurrently).
type lexicalWhere struct {
	mu              sync.Mutex
	inProcess, inDB bool
}

func (w *lexicalWhere) note(inProcess bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if inProcess {
		w.inProcess = true
	} else {
		w.inDB = true
	}
}

// said describes where the searches ranked, "" when none ran.
func (w *lexicalWhere) said() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.inProcess && w.inDB:
		return "the in-process full-text index, and the store's for what it could not rank"
	case w.inProcess:
		return "the in-process full-text index"
	case w.inDB:
		return "the store's full-text index"
	}
	return ""
}

func (s source) Lexical(ctx context.Context, p store.LexicalParams) ([]mnemotype.Hit, error) {
	if s.text != nil {
		if hits, ok, err := s.text.Lexical(ctx, p); ok || err != nil {
			s.where.note(true)
			return hits, err
		}
	}
	s.where.note(false)
	return s.Store.Lexical(ctx, p)
}

var _ recall.EitherSource = source{}

// LexicalEither implements recall.EitherSource from the in-process
// full-text index; ok is false when the catalog cannot answer (the store
// is then asked each query in turn).
func (s source) LexicalEither(ctx context.Context, p store.LexicalParams) ([]mnemotype.Hit, bool, bool, error) {
	if s.text == nil {
		return nil, false, false, nil
	}
	hits, all, ok, err := s.text.LexicalEither(ctx, p)
	if ok || err != nil {
		s.where.note(true)
	}
	return hits, all, ok, err
}

func (s source) Neighbors(ctx context.Context, sc mnemotype.Scope, ids []string, radius int) ([]store.Neighbor, error) {
	if s.text != nil {
		if ns, ok, err := s.text.Neighbors(ctx, sc, ids, radius); ok || err != nil {
			return ns, err
		}
	}
	return s.Store.Neighbors(ctx, sc, ids, radius)
}

func (s source) Signals(ctx context.Context, profile string, ids []string) (map[string]store.Signals, error) {
	if s.text != nil && !s.accessStats {
		if sig, ok, err := s.text.Signals(ctx, profile, ids); ok || err != nil {
			return sig, err
		}
	}
	return s.access.signals(ctx, s.Store, profile, ids)
}

func msSince(t time.Time) float64 { return float64(time.Since(t).Microseconds()) / 1000 }

// spareFor is how many results beyond limit a recall asks for, to fill the
// places of collapsed duplicates.
func spareFor(s Settings, limit int) int {
	if !s.CollapseDuplicates {
		return 0
	}
	return min(limit, MaxLimit)
}

// contentHash is a hash of content's contentKey, computed without
// building the key: equal keys have equal hashes (a match is then checked
// on the keys).
func contentHash(content string) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211 // FNV-1a
	h := uint64(offset)
	add := func(r rune) { h = (h ^ uint64(r)) * prime }
	words, inWord := 0, false
	for _, r := range content {
		r = unicode.ToLower(r)
		if unicode.IsLetter(r) || unicode.IsNumber(r) {
			if !inWord && words > 0 {
				add(' ')
			}
			if !inWord {
				words++
			}
			inWord = true
			add(r)
			continue
		}
		inWord = false
	}
	if words == 0 {
		h = offset ^ 1
		for _, r := range strings.TrimSpace(content) {
			add(r)
		}
	}
	return h
}

// contentKey is what two memories' contents must share to be duplicates:
// their letters and digits, case folded, words in order.
// Contents without a letter or digit ("🙂", "!!!") are compared whole.
func contentKey(content string) string {
	k := strings.Join(strings.FieldsFunc(strings.ToLower(content), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r)
	}), " ")
	if k == "" {
		return "\x00" + strings.TrimSpace(content)
	}
	return k
}
