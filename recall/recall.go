// Package recall runs one recall request: the retrieval legs concurrently
// inside the request's scope, the pre-compute pass that scores every
// candidate in every leg it can, fusion, and the importance prior. It knows
// nothing about SQL or indexes: it consumes two ports, Source (the store's
// full text, turns and signals) and Dense (dense retrieval).
package recall

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mnemo-dev/mnemo/dense"
	"github.com/mnemo-dev/mnemo/fusion"
	"github.com/mnemo-dev/mnemo/internal/ftstoken"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/relevance"
	"github.com/mnemo-dev/mnemo/store"
)

// Source is what the pipeline needs from storage; the methods are
// store.Store's, with its contracts.
type Source interface {
	Lexical(ctx context.Context, p store.LexicalParams) ([]mnemotype.Hit, error)
	RecentlyAccessed(ctx context.Context, scope mnemotype.Scope, n int) ([]string, error)
	Neighbors(ctx context.Context, scope mnemotype.Scope, ids []string, radius int) ([]store.Neighbor, error)
	// Signals may add what the store has not yet recorded (accesses
	// batched in the caller's process).
	Signals(ctx context.Context, profile string, ids []string) (map[string]store.Signals, error)
}

// EitherSource is a Source that can answer the lexical leg's AND query and
// its OR fallback in one call, reading the postings once: LexicalEither
// returns, for p (the AND query, with MinHits), Lexical's answer to p when
// it holds at least p.MinHits memories (all true), else Lexical's answer
// to p as an OR query without MinHits; ok false when it cannot, and the
// leg asks Lexical for each in turn.
type EitherSource interface {
	LexicalEither(ctx context.Context, p store.LexicalParams) (hits []mnemotype.Hit, all, ok bool, err error)
}

// Dense is the dense-retrieval port: cosine similarity between a query
// embedding and the stored embeddings of one profile. Implementations
// (package dense's Catalog and Scan; a store that ranks embeddings itself)
// run package densetest's conformance suite, which checks this contract:
//
//   - Search returns the top q.K memories of q.Scope (every field
//     honoured, metadata included) among those embedded by q.Model, most
//     similar first, ties by id, Rank unset: exactly, except that an
//     implementation may walk an approximate index for scopes above a
//     size it documents (the Postgres store's HNSW indexes: about 98% of
//     the exact top 10 at 100k memories), never returning a memory
//     outside the scope nor fewer than q.K when the scope holds them;
//   - Score returns the similarity of each of ids that belongs to
//     q.Scope.Profile and is embedded by q.Model, best first, and leaves out
//     the rest; the rest of the scope is not read;
//   - a call sees every write the store committed before it began, by any
//     process;
//   - a query of another dimension than the profile's embeddings is an
//     error wrapping mnemotype.ErrDimensionMismatch; ctx's end, an error
//     wrapping its cause.
//
// Both are safe for concurrent use.
type Dense interface {
	Search(ctx context.Context, q dense.Query) ([]mnemotype.Hit, error)
	Score(ctx context.Context, q dense.Query, ids []string) ([]mnemotype.Hit, error)
}

var (
	_ Dense = (*dense.Catalog)(nil)
	_ Dense = (*dense.Scan)(nil)
)

// CandidatePolicy chooses which memories the dense leg considers.
type CandidatePolicy string

// Candidate policies.
const (
	// PolicyScope searches every embedded memory in the scope (see Dense)
	// and the lexical leg's top limit×fetch_multiplier. The default.
	PolicyScope CandidatePolicy = "scope"
	// PolicyPool is the two-stage pool: the lexical leg's top
	// LexicalCap over the scope plus the PoolSize most recently accessed
	// memories with embeddings; the dense leg scores that pool only.
	PolicyPool CandidatePolicy = "pool"
)

// ParsePolicy validates s; "" yields PolicyScope.
func ParsePolicy(s string) (CandidatePolicy, error) {
	switch p := CandidatePolicy(s); p {
	case "":
		return PolicyScope, nil
	case PolicyScope, PolicyPool:
		return p, nil
	}
	return "", mnemotype.Invalidf("candidate_policy %q: must be one of scope, pool", s)
}

// Defaults.
const (
	DefaultFetchMultiplier = 3
	DefaultLexicalCap      = 50
	DefaultPoolSize        = 200
)

// Options are the tunables of one recall, already validated and merged
// from settings and per-request overrides.
type Options struct {
	Fusion fusion.Params
	// FetchMultiplier: each leg fetches Limit × FetchMultiplier. Defaults to
	// DefaultFetchMultiplier.
	FetchMultiplier int
	Importance      fusion.ImportanceMode
	Policy          CandidatePolicy
	// LexicalCap and PoolSize size PolicyPool; default 50 and 200.
	LexicalCap int
	PoolSize   int
	// Fields weighs the fields the lexical leg searches (BM25F); the zero
	// value searches the content alone.
	Fields store.FieldWeights
	// NeighborRadius and NeighborShare: each of the fused top
	// limit × FetchMultiplier lends NeighborShare/distance of its fused
	// score to the turns of its session within NeighborRadius (see
	// fusion.LendToNeighbors). 0 is off.
	NeighborRadius int
	NeighborShare  float64
	// MinRelevance drops results whose relevance (package relevance) is
	// below it; 0 keeps them all.
	MinRelevance float64
	// Autocut, when > 0, ends the results before their Autocut-th large
	// gap in relevance (relevance.Autocut).
	Autocut int
	// RelevanceMargin: the importance prior reorders only results whose
	// relevance differs by at most this much (relevance.Group).
	RelevanceMargin float64
}

// Request is one recall.
type Request struct {
	Query string
	Scope mnemotype.Scope
	Limit int
	// ProfileSize is the number of memories in the profile (the relevance
	// estimate reads BM25 scores by it).
	ProfileSize int
	// Spare asks for up to Spare more results ranked after the first Limit,
	// for a caller that may drop some of them (duplicates); the legs'
	// fetch size and every score are Limit's.
	Spare int
	// Vector is the query embedding by Model; nil when the dense leg cannot
	// run (VectorErr says why, and the trace reports it).
	Vector    []float32
	Model     string
	VectorErr error
	Options   Options
	Trace     bool
	// Counterfactual asks for every result's rank under the other
	// strategies (one extra fusion each).
	Counterfactual bool
	// Texts returns the content and actor of memories by id (a missing id
	// was deleted meanwhile). The exact-match bonus reads the candidates'
	// content, the relevance estimate the top results' content and actor
	// when Holds cannot say. Nil: no bonus, and, without Holds, the
	// estimate's coverage is 0.
	Texts func(ctx context.Context, ids []string) (map[string]Text, error)
	// Holds, when not nil, reports which of tokens (ftstoken's) each of
	// ids holds in its content or actor: held[i][j] for ids[i] and
	// tokens[j], all false for a memory deleted meanwhile; ok false when it
	// cannot say. The relevance estimate's coverage then reads no text.
	Holds func(ctx context.Context, ids, tokens []string) (held [][]bool, ok bool, err error)
}

// Text is what the pipeline reads of a memory besides its scores.
type Text struct{ Content, Actor string }

// Result is one recalled memory id with its fused score and per-leg detail.
type Result struct {
	ID    string
	Score float64
	Rank  int
	// Relevance is the result's relevance estimate in [0, 1]
	// (relevance.Of).
	Relevance float64
	Legs      map[string]mnemotype.LegDetail
	// Counterfactual maps other strategies to the rank this memory would
	// have had under them on the same lists (fusion ranks, before the
	// importance prior); filled when the request is traced.
	Counterfactual map[string]int
}

// Trace explains a recall: what each leg returned and what each stage cost.
type Trace struct {
	Terms     []string `json:"terms"`
	LexicalOp string   `json:"lexical_operator,omitempty"` // "and" or "or"
	Policy    string   `json:"candidate_policy"`
	// Strategy is the strategy used; Requested the one asked for (they
	// differ when an automatic switch fired, named in Switches).
	Strategy      string   `json:"strategy"`
	Requested     string   `json:"requested_strategy"`
	Switches      []string `json:"switches,omitempty"`
	Intent        string   `json:"intent,omitempty"`
	Normalization string   `json:"normalization,omitempty"`
	Missing       string   `json:"missing_leg"`
	Importance    string   `json:"importance_mode"`
	// Weights are the weights in force per leg (after adaptive weights).
	Weights    map[string]float64 `json:"weights"`
	K          float64            `json:"k"`
	KParam     float64            `json:"kparam"`
	BordaK     float64            `json:"borda_k"`
	ExactTerms []string           `json:"exact_terms,omitempty"`
	Fetch      int                `json:"fetch"`
	Candidates int                `json:"candidates"`
	// DenseSearch says how the dense leg searched the scope: walking an
	// approximate (HNSW) index, or scoring every embedding in it.
	DenseSearch string `json:"dense_search,omitempty"`
	// LexicalSearch says where the lexical leg ranked: in the full-text
	// index the process keeps, or in the store's (set by the engine).
	LexicalSearch string `json:"lexical_search,omitempty"`
	// Legs holds each executed leg's full ranked list (after the
	// cross-scoring pass), with raw scores.
	Legs map[string][]mnemotype.Hit `json:"legs"`
	// Skipped names legs not executed and why.
	Skipped map[string]string `json:"skipped,omitempty"`
	// Relevance is what the relevance estimate read and what it cut.
	Relevance *RelevanceTrace `json:"relevance,omitempty"`
	// Timings per stage in milliseconds.
	Timings map[string]float64 `json:"timings_ms"`
}

// RelevanceTrace explains the relevance estimate of a recall.
type RelevanceTrace struct {
	Evidence relevance.Evidence `json:"evidence"`
	relevance.Estimate
	MinRelevance float64 `json:"min_relevance"`
	Autocut      int     `json:"autocut,omitempty"`
	Margin       float64 `json:"margin"`
	// BelowMin and AutoCut count the results the floor and autocut dropped
	// from the top limit.
	BelowMin int `json:"below_min"`
	AutoCut  int `json:"autocut_dropped,omitempty"`
}

// Response is the outcome of Run.
type Response struct {
	Results []Result
	Trace   *Trace // nil unless Request.Trace
}

// Run executes req.
func Run(ctx context.Context, src Source, vec Dense, req Request) (*Response, error) {
	start := time.Now()
	o := req.Options
	if o.FetchMultiplier <= 0 {
		o.FetchMultiplier = DefaultFetchMultiplier
	}
	if o.LexicalCap <= 0 {
		o.LexicalCap = DefaultLexicalCap
	}
	if o.PoolSize <= 0 {
		o.PoolSize = DefaultPoolSize
	}
	if o.Policy == "" {
		o.Policy = PolicyScope
	}
	if o.Importance == "" {
		o.Importance = fusion.ImportanceMultiplier
	}
	if req.Limit <= 0 {
		return nil, mnemotype.Invalidf("limit = %d: must be ≥ 1", req.Limit)
	}
	if err := o.Fusion.Validate(); err != nil {
		return nil, err
	}
	fetch := req.Limit * o.FetchMultiplier
	w := o.Fusion.Weight
	tr := &Trace{
		Terms:      Terms(req.Query),
		Policy:     string(o.Policy),
		Importance: string(o.Importance),
		Fetch:      fetch,
		Legs:       map[string][]mnemotype.Hit{},
		Skipped:    map[string]string{},
		Timings:    map[string]float64{},
		Weights:    map[string]float64{},
	}
	for _, l := range mnemotype.Legs {
		tr.Weights[l] = w(l)
		if w(l) == 0 {
			tr.Skipped[l] = "weight is 0"
		}
	}
	runLexical := w(mnemotype.LegLexical) > 0 && len(tr.Terms) > 0
	if w(mnemotype.LegLexical) > 0 && len(tr.Terms) == 0 {
		tr.Skipped[mnemotype.LegLexical] = "query has no searchable words"
	}
	runDense := w(mnemotype.LegDense) > 0 && req.Vector != nil
	if w(mnemotype.LegDense) > 0 && req.Vector == nil {
		reason := "no query embedding"
		if req.VectorErr != nil {
			reason = "query embedding failed: " + req.VectorErr.Error()
		}
		tr.Skipped[mnemotype.LegDense] = reason
	}
	dq := dense.Query{Vector: req.Vector, Model: req.Model, Scope: req.Scope}

	var (
		mu        sync.Mutex
		lexical   []mnemotype.Hit
		denseHits []mnemotype.Hit
		recent    []string
		errs      []error
		wg        sync.WaitGroup
		lexLimit  = fetch
	)
	if o.Policy == PolicyPool {
		lexLimit = max(o.LexicalCap, fetch)
	}
	// Each leg reads its hits' signals as soon as it has them, on its own
	// goroutine, so that the read overlaps the other leg instead of
	// following both; the signals stage then reads only what is missing.
	var early []map[string]store.Signals
	readSignals := func(hits []mnemotype.Hit) error {
		if len(hits) == 0 {
			return nil
		}
		sig, err := src.Signals(ctx, req.Scope.Profile, ids(hits))
		if err != nil {
			return fmt.Errorf("signals: %w", err)
		}
		mu.Lock()
		early = append(early, sig)
		mu.Unlock()
		return nil
	}
	timed := func(stage string, f func() error) {
		t0 := time.Now()
		err := f()
		mu.Lock()
		tr.Timings[stage] = ms(time.Since(t0))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s leg: %w", stage, err))
		}
		mu.Unlock()
	}
	// With the scope policy and both legs, the legs score each other's
	// candidates concurrently: while the lexical leg runs AND and, when AND
	// finds too little, the OR query, the dense leg searches and then has
	// its hits scored by FTS5 under the lexical leg's operator (known once
	// AND is done, which is sooner than the dense search). On two cores
	// this keeps the dense search and that scoring off the critical path
	// (10k memories, p50 over three alternated runs: 2.35-2.98 ms against
	// 3.09-3.47 ms when the OR query waited for the dense hits to score
	// them in the same pass).
	//
	// Side by side, the dense leg (the longer) and that scoring run on the
	// caller's goroutine, the lexical leg on one other: a goroutine started
	// waits for a thread to wake and take it (about 0.1 ms on an idle
	// machine), which the longer leg need not wait for.
	crossConcurrent := runLexical && runDense && o.Policy == PolicyScope
	var (
		opReady  = make(chan string, 1) // the lexical operator, or "" when the leg failed
		denseLex []mnemotype.Hit        // lexical scores of the dense hits
		crossErr error                  // from scoring them
	)
	// Inside sessions (a few hundred or thousand memories) the legs are
	// short enough that handing one to another thread costs about what
	// running them side by side saves, more on a machine that was idle:
	// they run one after the other there.
	apart := runDense && o.Policy == PolicyScope && len(req.Scope.Sessions) == 0
	denseLeg := func() {
		searched := false
		timed("dense", func() error {
			q := dq
			// Beside the lexical leg (apart), the search keeps to one CPU:
			// the lexical leg has the other.
			q.K, q.Serial = fetch, crossConcurrent && apart
			var how dense.How
			q.How = &how
			var err error
			if denseHits, err = vec.Search(ctx, q); err != nil {
				return err
			}
			mu.Lock()
			tr.DenseSearch = how.String()
			mu.Unlock()
			if err := readSignals(denseHits); err != nil {
				return err
			}
			searched = true
			return nil
		})
		if searched && crossConcurrent {
			timed("lexical_cross", func() error {
				if op := <-opReady; op != "" && len(denseHits) > 0 {
					denseLex, crossErr = src.Lexical(ctx, store.LexicalParams{
						Scope: req.Scope, Match: store.MatchQuery{Terms: tr.Terms, All: op == "and"}, Only: ids(denseHits), Fields: o.Fields,
					})
				}
				return nil
			})
		}
	}
	if runDense && o.Policy == PolicyPool {
		wg.Add(1)
		go func() {
			defer wg.Done()
			timed("pool", func() error {
				var err error
				recent, err = src.RecentlyAccessed(ctx, req.Scope, o.PoolSize)
				return err
			})
		}()
	}
	lexicalLeg := func() {
		decided := false
		defer func() {
			if !decided {
				opReady <- "" // the leg panicked: the cross-scoring must not wait for it
			}
		}()
		timed("lexical", func() error {
			// Beside the dense leg, the operator is wanted as soon as the
			// AND query decides it; in turn, the two queries may be one.
			hits, op, err := lexicalSearch(ctx, src, req.Scope, o.Fields, tr.Terms, lexLimit, req.Limit, !apart,
				func(op string) { opReady <- op; decided = true })
			if err != nil {
				return err
			}
			mu.Lock()
			lexical, tr.LexicalOp = hits, op
			mu.Unlock()
			return readSignals(hits)
		})
	}
	var lexicalPanic any // a panic of the lexical leg on its goroutine, raised again on the caller's
	switch {
	case apart && runLexical:
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { lexicalPanic = recover() }()
			lexicalLeg()
		}()
		func() {
			// A panicking dense leg waits for the lexical leg before the
			// panic goes on, so that no leg outlives Run.
			denseDone := false
			defer func() {
				if !denseDone {
					wg.Wait()
				}
			}()
			denseLeg()
			denseDone = true
		}()
	default:
		if runLexical {
			lexicalLeg()
		}
		if runDense && o.Policy == PolicyScope {
			denseLeg()
		}
	}
	wg.Wait()
	if lexicalPanic != nil {
		panic(lexicalPanic) // the value raised again: its stack is the caller's
	}
	if crossErr != nil {
		errs = append(errs, fmt.Errorf("lexical leg: scoring the dense hits: %w", crossErr))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}

	// Pre-compute pass: every candidate is scored in every leg
	// that can score it, so none is penalised for falling outside one
	// leg's window.
	t0 := time.Now()
	var err error
	lexicalScored := false // the dense hits already carry their lexical scores
	if crossConcurrent {
		// A document's bm25 is the same in both queries (same terms, same
		// operator), so the dense hits' rows simply join the list.
		in := make(map[string]bool, len(lexical))
		for _, h := range lexical {
			in[h.ID] = true
		}
		for _, h := range denseLex {
			if !in[h.ID] {
				lexical = append(lexical, h)
			}
		}
		lexicalScored = true
	}
	if runDense && o.Policy == PolicyPool {
		pool := union(recent, ids(lexical))
		if denseHits, err = vec.Score(ctx, dq, pool); err != nil {
			return nil, fmt.Errorf("dense leg: %w", err)
		}
	}
	if runDense {
		if missing := minus(ids(lexical), denseHits); len(missing) > 0 {
			extra, err := vec.Score(ctx, dq, missing)
			if err != nil {
				return nil, fmt.Errorf("dense leg: %w", err)
			}
			denseHits = append(denseHits, extra...)
		}
	}
	if runLexical && !lexicalScored {
		if missing := minus(ids(denseHits), lexical); len(missing) > 0 {
			extra, err := src.Lexical(ctx, store.LexicalParams{
				Scope: req.Scope, Match: store.MatchQuery{Terms: tr.Terms, All: tr.LexicalOp == "and"}, Only: missing, Fields: o.Fields,
			})
			if err != nil {
				return nil, fmt.Errorf("lexical leg: %w", err)
			}
			lexical = append(lexical, extra...)
		}
	}
	tr.Timings["cross_score"] = ms(time.Since(t0))

	legs := map[string][]mnemotype.Hit{}
	if runLexical {
		legs[mnemotype.LegLexical] = fusion.DenseRanks(lexical)
	}
	if runDense {
		legs[mnemotype.LegDense] = fusion.DenseRanks(denseHits)
	}
	cands := union(ids(lexical), ids(denseHits))
	tr.Candidates = len(cands)
	t0 = time.Now()
	room := len(cands) // and the neighbours': up to 2·radius around each lender, as many again at most
	if o.NeighborRadius > 0 && o.NeighborShare > 0 {
		room += min(2*o.NeighborRadius*min(len(cands), fetch), len(cands))
	}
	sig := make(map[string]store.Signals, room)
	for _, m := range early {
		maps.Copy(sig, m)
	}
	var missing []string
	for _, id := range cands {
		if _, ok := sig[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		more, err := src.Signals(ctx, req.Scope.Profile, missing)
		if err != nil {
			return nil, fmt.Errorf("signals: %w", err)
		}
		maps.Copy(sig, more)
	}
	if w(mnemotype.LegRecency) > 0 {
		legs[mnemotype.LegRecency] = signalLeg(cands, sig, func(s store.Signals) float64 { return unixSeconds(s.OccurredAt) })
	}
	if w(mnemotype.LegAccess) > 0 {
		legs[mnemotype.LegAccess] = signalLeg(cands, sig, func(s store.Signals) float64 { return float64(s.AccessCount) })
	}
	tr.Timings["signals"] = ms(time.Since(t0))

	fp := o.Fusion
	fp.Query = req.Query
	fp.Counterfactual = req.Counterfactual
	if fp.ExactMatchBonus > 0 && req.Texts != nil {
		t0 = time.Now()
		texts, err := req.Texts(ctx, cands)
		if err != nil {
			return nil, fmt.Errorf("exact-match bonus: %w", err)
		}
		fp.Contents = func(id string) string { return texts[id].Content }
		tr.Timings["contents"] = ms(time.Since(t0))
	}
	t0 = time.Now()
	importance := func(id string) float64 {
		if s, ok := sig[id]; ok {
			return s.Importance
		}
		return mnemotype.DefaultImportance
	}
	// Per-leg details cost two maps per candidate; only returned results
	// need them. The importance prior or a neighbour's lend can lift a
	// result from beyond the detailed top, in which case fusion runs again
	// with its details too (and, should that not do, with every detail).
	fp.DetailsTop = 2*req.Limit + req.Spare
	lendTop := fp.DetailsTop // LendToNeighbors' detail window
	var out fusion.Outcome
	var fused []fusion.Result
	var rels []float64 // fused's relevance
	var lends []fusion.Lend
	lendersAt := -1 // the fused results lends were read for
	var est *relevance.Estimate
	rt := &RelevanceTrace{MinRelevance: o.MinRelevance, Autocut: o.Autocut, Margin: o.RelevanceMargin}
	for pass := 0; ; pass++ {
		var err error
		if out, err = fusion.FuseExplain(legs, fp); err != nil {
			return nil, err
		}
		fusedList := out.Results
		if o.NeighborRadius > 0 && o.NeighborShare > 0 && len(fusedList) > 0 {
			top := fusedList[:min(len(fusedList), fetch)]
			if lendersAt != len(top) {
				t1 := time.Now()
				if lends, err = neighbors(ctx, src, req.Scope, top, o.NeighborRadius); err != nil {
					return nil, fmt.Errorf("neighbours: %w", err)
				}
				if err := addSignals(ctx, src, req.Scope.Profile, sig, lends); err != nil {
					return nil, err
				}
				lendersAt = len(top)
				tr.Timings["neighbors"] = ms(time.Since(t1))
			}
			fusedList = fusion.LendToNeighbors(fusedList, lends, o.NeighborShare, top[len(top)-1].Score, lendTop)
		}
		if est == nil {
			// The scores do not depend on the details asked for, so a
			// second pass reuses the estimate.
			t1 := time.Now()
			rt.Evidence = evidence(tr.Terms, lexical, denseHits, runLexical, runDense, req.Model)
			rt.Evidence.Memories = req.ProfileSize
			if rt.Evidence.Coverage, err = coverage(ctx, req, tr.Terms, fusedList[:min(len(fusedList), req.Limit)]); err != nil {
				return nil, fmt.Errorf("relevance: %w", err)
			}
			e := relevance.Answerable(rt.Evidence)
			est = &e
			rt.Estimate = e
			tr.Timings["relevance"] = ms(time.Since(t1))
		}
		fused, rels = prioritise(fusedList, importance, o, out.K, est.Answerable)
		fused, rels, rt.BelowMin, rt.AutoCut = cut(fused, rels, o, req.Limit)
		if len(fused) > req.Limit+req.Spare {
			fused, rels = fused[:req.Limit+req.Spare], rels[:req.Limit+req.Spare]
		}
		var missing map[string]bool
		for _, r := range fused {
			if r.Legs == nil {
				if missing == nil {
					missing = map[string]bool{}
				}
				missing[r.ID] = true
			}
		}
		if missing == nil || fp.DetailsTop == 0 {
			break
		}
		if pass == 0 {
			fp.DetailsFor, lendTop = missing, 0
		} else {
			fp.DetailsTop, fp.DetailsFor = 0, nil
		}
	}
	tr.Relevance = rt
	tr.Timings["fusion"] = ms(time.Since(t0))
	tr.Strategy, tr.Requested, tr.Switches = string(out.Strategy), string(out.Requested), out.Switches
	tr.Intent, tr.Normalization, tr.Missing = string(out.Intent), string(out.Normalization), string(out.Missing)
	tr.K, tr.KParam, tr.BordaK, tr.ExactTerms = out.K, out.KParam, out.BordaK, out.ExactTerms
	for leg, w := range out.Weights {
		tr.Weights[leg] = w
	}

	resp := &Response{Results: make([]Result, len(fused))}
	for i, f := range fused {
		resp.Results[i] = Result{ID: f.ID, Score: f.Score, Rank: f.Rank, Relevance: rels[i], Legs: f.Legs, Counterfactual: f.Counterfactual}
	}
	tr.Timings["pipeline"] = ms(time.Since(start))
	if req.Trace {
		tr.Legs = legs
		resp.Trace = tr
	}
	return resp, nil
}

// evidence gathers what the relevance estimate reads from the legs' lists
// (every candidate scored in every leg that ran).
func evidence(terms []string, lexical, dense []mnemotype.Hit, runLexical, runDense bool, model string) relevance.Evidence {
	e := relevance.Evidence{Terms: len(terms), Lexical: runLexical, Dense: runDense, Model: model}
	for _, h := range lexical {
		e.LexicalBest = max(e.LexicalBest, h.Score)
	}
	for i, h := range dense {
		if i == 0 || h.Score > e.DenseBest {
			e.DenseBest = h.Score // cosines may all be negative
		}
	}
	return e
}

// coverage is the largest share of terms found in the content and actor of
// one of top: by the full-text index (req.Holds) when it can say, else by
// the texts (req.Texts) tokenized again.
func coverage(ctx context.Context, req Request, terms []string, top []fusion.Result) (float64, error) {
	if (req.Holds == nil && req.Texts == nil) || len(terms) == 0 || len(top) == 0 {
		return 0, nil
	}
	// Words are compared as the lexical leg compares them: FTS5's tokens
	// (case and diacritics folded, Porter-stemmed).
	want := make([][]int, len(terms)) // each term's tokens, as indexes into toks
	var toks []string
	at := map[string]int{}
	for i, term := range terms {
		for _, tok := range ftstoken.Tokens(term) {
			j, ok := at[tok]
			if !ok {
				j = len(toks)
				at[tok] = j
				toks = append(toks, tok)
			}
			want[i] = append(want[i], j)
		}
	}
	ids := fusionIDs(top)
	held, ok, err := holds(ctx, req, ids, toks)
	if err != nil || !ok {
		return 0, err
	}
	best := 0.0
	for _, h := range held {
		n := 0
		for _, js := range want {
			if len(js) > 0 && !slices.ContainsFunc(js, func(j int) bool { return !h[j] }) {
				n++
			}
		}
		best = max(best, float64(n)/float64(len(terms)))
	}
	return best, nil
}

// holds reports which of toks each of ids holds in its content or actor:
// by req.Holds when it can say, else by tokenizing req.Texts' texts (ok
// false when neither can).
func holds(ctx context.Context, req Request, ids, toks []string) ([][]bool, bool, error) {
	if req.Holds != nil {
		held, ok, err := req.Holds(ctx, ids, toks)
		if err != nil || ok {
			return held, ok, err
		}
	}
	if req.Texts == nil {
		return nil, false, nil
	}
	byID, err := req.Texts(ctx, ids)
	if err != nil {
		return nil, false, err
	}
	held := make([][]bool, len(ids))
	for i, id := range ids {
		held[i] = make([]bool, len(toks))
		t, ok := byID[id]
		if !ok {
			continue // deleted meanwhile
		}
		has := map[string]bool{}
		ftstoken.Tokenize(t.Content+" "+t.Actor, func(tok string, _ int) { has[tok] = true })
		for j, tok := range toks {
			held[i][j] = has[tok]
		}
	}
	return held, true, nil
}

// prioritise applies the importance prior to list (in fused order, before
// the prior) under the relevance margin, and returns the new order with
// each result's relevance. Each result's Score is its score after the
// prior, capped at the Score of the result ranked above it: the margin
// keeps a result below those of much higher relevance however much the
// prior lifts it, and the Scores then still say the order (non-increasing
// down the list; a capped result ties with the one above it).
func prioritise(list []fusion.Result, importance func(string) float64, o Options, k, answerable float64) ([]fusion.Result, []float64) {
	if len(list) == 0 {
		return nil, nil
	}
	floor := min(0, list[len(list)-1].Score)
	rel := make([]float64, len(list))
	for i, r := range list {
		rel[i] = relevance.Of(answerable, relevance.Share(r.Score, list[0].Score, floor))
	}
	ps := make([]float64, len(list)) // the scores after the importance prior
	for i, r := range list {
		ps[i] = fusion.Prior(r.Score, importance(r.ID), o.Importance, k)
	}
	order := relevance.Group(rel, ps, o.RelevanceMargin)
	out := make([]fusion.Result, len(list))
	rels := make([]float64, len(list))
	for i, j := range order {
		out[i], rels[i] = list[j], rel[j]
		out[i].Score, out[i].Rank = ps[j], i+1
		if i > 0 && out[i].Score > out[i-1].Score {
			out[i].Score = out[i-1].Score
		}
	}
	return out, rels
}

// cut drops the results below o.MinRelevance and those after the autocut,
// reporting how many of the top limit each dropped. It filters list and
// rels in place: they must be the caller's to change.
func cut(list []fusion.Result, rels []float64, o Options, limit int) ([]fusion.Result, []float64, int, int) {
	keep, kept := list[:0], rels[:0] // filtered in place: each is written at or before where it is read
	below := 0
	for i, r := range list {
		if rels[i] < o.MinRelevance {
			if i < limit {
				below++
			}
			continue
		}
		keep, kept = append(keep, r), append(kept, rels[i])
	}
	auto := 0
	if o.Autocut > 0 {
		sorted := slices.Clone(kept[:min(len(kept), limit)])
		slices.SortFunc(sorted, func(a, b float64) int { return cmp.Compare(b, a) })
		if c := relevance.Autocut(sorted, o.Autocut); c < len(sorted) {
			// What ranks at or above the c-th relevance stays, spares
			// included (duplicates may take places).
			floor := sorted[c-1]
			var k2 []fusion.Result
			var r2 []float64
			for i, r := range keep {
				if kept[i] >= floor {
					k2, r2 = append(k2, r), append(r2, kept[i])
				}
			}
			auto = min(len(keep), limit) - min(len(k2), limit)
			keep, kept = k2, r2
		}
	}
	for i := range keep {
		keep[i].Rank = i + 1
	}
	return keep, kept, below, auto
}

func fusionIDs(rs []fusion.Result) []string {
	out := make([]string, len(rs))
	for i := range rs {
		out[i] = rs[i].ID
	}
	return out
}

// lexicalSearch runs the AND query and, when it finds fewer than want hits
// and there is more than one term, broadens to OR. It calls
// decided exactly once, with the operator as soon as it is known, or ""
// when the AND query failed.
func lexicalSearch(ctx context.Context, src Source, scope mnemotype.Scope, fields store.FieldWeights, terms []string, limit, want int, together bool, decided func(op string)) ([]mnemotype.Hit, string, error) {
	p := store.LexicalParams{Scope: scope, Match: store.MatchQuery{Terms: terms, All: true}, Limit: limit, Fields: fields}
	if len(terms) > 1 {
		p.MinHits = want // an AND list shorter than want is dropped for the OR list
		if es, ok := src.(EitherSource); ok && together {
			hits, all, ok, err := es.LexicalEither(ctx, p)
			if err != nil {
				decided("")
				return nil, "", err
			}
			if ok {
				op := "or"
				if all {
					op = "and"
				}
				decided(op)
				return hits, op, nil
			}
		}
	}
	hits, err := src.Lexical(ctx, p)
	if err != nil {
		decided("")
		return nil, "", err
	}
	if len(hits) >= want || len(terms) < 2 {
		decided("and")
		return hits, "and", nil
	}
	decided("or")
	// A document's bm25 is the same under the AND and the OR form (both sum
	// the same phrases), so the OR list simply extends the AND list.
	hits, err = src.Lexical(ctx, store.LexicalParams{Scope: scope, Match: store.MatchQuery{Terms: terms}, Limit: limit, Fields: fields})
	return hits, "or", err
}

// neighbors reads the turns around the fused results top.
func neighbors(ctx context.Context, src Source, scope mnemotype.Scope, top []fusion.Result, radius int) ([]fusion.Lend, error) {
	ids := make([]string, len(top))
	for i := range top {
		ids[i] = top[i].ID
	}
	nbs, err := src.Neighbors(ctx, scope, ids, radius)
	if err != nil {
		return nil, err
	}
	out := make([]fusion.Lend, len(nbs))
	for i, n := range nbs {
		out[i] = fusion.Lend{ID: n.ID, Of: n.Of, Distance: n.Distance}
	}
	return out, nil
}

// addSignals adds the signals of lends' neighbours that sig lacks (the
// importance prior reads them).
func addSignals(ctx context.Context, src Source, profile string, sig map[string]store.Signals, lends []fusion.Lend) error {
	var missing []string
	for _, l := range lends {
		if _, ok := sig[l.ID]; !ok {
			missing = append(missing, l.ID)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	more, err := src.Signals(ctx, profile, missing)
	if err != nil {
		return fmt.Errorf("signals: %w", err)
	}
	for id, s := range more {
		sig[id] = s
	}
	return nil
}

// signalLeg ranks cands by value (higher first), dense ranks for ties.
func signalLeg(cands []string, sig map[string]store.Signals, value func(store.Signals) float64) []mnemotype.Hit {
	hits := make([]mnemotype.Hit, 0, len(cands))
	for _, id := range cands {
		if s, ok := sig[id]; ok {
			hits = append(hits, mnemotype.Hit{ID: id, Score: value(s)})
		}
	}
	return fusion.DenseRanks(hits)
}

func ids(h []mnemotype.Hit) []string {
	out := make([]string, len(h))
	for i := range h {
		out[i] = h[i].ID
	}
	return out
}

// union returns the distinct ids of a then b, in first-seen order.
func union(a, b []string) []string {
	seen := make(map[string]bool, len(a)+len(b))
	out := make([]string, 0, len(a)+len(b))
	for _, l := range [][]string{a, b} {
		for _, id := range l {
			if !seen[id] {
				seen[id] = true
				out = append(out, id)
			}
		}
	}
	return out
}

// minus returns the ids of want that are not in have, sorted.
func minus(want []string, have []mnemotype.Hit) []string {
	in := make(map[string]bool, len(have))
	for _, h := range have {
		in[h.ID] = true
	}
	var out []string
	for _, id := range want {
		if !in[id] {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// unixSeconds is t in Unix seconds, fractional (any year 0001-9999): the
// recency leg's score.
func unixSeconds(t time.Time) float64 {
	return float64(t.Unix()) + float64(t.Nanosecond())/1e9
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
