package recall_test

import (
	"context"
	"errors"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/dense"
	"github.com/mnemo-dev/mnemo/fusion"
	"github.com/mnemo-dev/mnemo/internal/ftstoken"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/recall"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/vector"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// query is the query embedding of every test; the corpus's dense order for
// it is a, b, c, …, h.
var query = []float32{1, 0, 0, 0}

const model = "m"

// fakeSource is a recall.Source whose methods call the function fields and
// record their arguments. A nil field fails the test when called.
type fakeSource struct {
	t                    *testing.T
	LexicalFunc          func(ctx context.Context, p store.LexicalParams) ([]mnemotype.Hit, error)
	RecentlyAccessedFunc func(ctx context.Context, scope mnemotype.Scope, n int) ([]string, error)
	NeighborsFunc        func(ctx context.Context, scope mnemotype.Scope, ids []string, radius int) ([]store.Neighbor, error)
	SignalsFunc          func(profile string, ids []string) (map[string]store.Signals, error)

	mu           sync.Mutex
	lexCalls     []store.LexicalParams
	recentScopes []mnemotype.Scope
	recentNs     []int
}

func (f *fakeSource) Lexical(ctx context.Context, p store.LexicalParams) ([]mnemotype.Hit, error) {
	f.mu.Lock()
	f.lexCalls = append(f.lexCalls, p)
	f.mu.Unlock()
	if f.LexicalFunc == nil {
		f.t.Errorf("unexpected Lexical call: %+v", p)
		return nil, nil
	}
	return f.LexicalFunc(ctx, p)
}

func (f *fakeSource) RecentlyAccessed(ctx context.Context, scope mnemotype.Scope, n int) ([]string, error) {
	f.mu.Lock()
	f.recentScopes = append(f.recentScopes, scope)
	f.recentNs = append(f.recentNs, n)
	f.mu.Unlock()
	if f.RecentlyAccessedFunc == nil {
		f.t.Errorf("unexpected RecentlyAccessed call: n = %d", n)
		return nil, nil
	}
	return f.RecentlyAccessedFunc(ctx, scope, n)
}

func (f *fakeSource) Neighbors(ctx context.Context, scope mnemotype.Scope, ids []string, radius int) ([]store.Neighbor, error) {
	if f.NeighborsFunc == nil {
		f.t.Errorf("unexpected Neighbors call: %v", ids)
		return nil, nil
	}
	return f.NeighborsFunc(ctx, scope, ids, radius)
}

// fakeVectors is a recall.Dense recording its calls, and holds the
// memories' signals (sourceOf serves them). newVectors makes one that
// delegates to a real index; a nil field fails the test when called.
type fakeVectors struct {
	t          *testing.T
	SearchFunc func(q dense.Query) ([]mnemotype.Hit, error)
	ScoreFunc  func(q dense.Query, ids []string) ([]mnemotype.Hit, error)
	signals    map[string]store.Signals

	mu          sync.Mutex
	searchCalls []dense.Query
	scoreCalls  [][]string
}

var _ recall.Dense = (*fakeVectors)(nil)

// testIndex is a vector index and the signals of its memories.
type testIndex struct {
	x   *vector.Index
	sig map[string]store.Signals
}

func newVectors(t *testing.T, ti *testIndex) *fakeVectors {
	return &fakeVectors{t: t, signals: ti.sig,
		SearchFunc: func(q dense.Query) ([]mnemotype.Hit, error) {
			return ti.x.Search(q.Vector, q.Model, vector.FilterOf(q.Scope), q.K)
		},
		ScoreFunc: func(q dense.Query, ids []string) ([]mnemotype.Hit, error) { return ti.x.Score(q.Vector, q.Model, ids) },
	}
}

func (v *fakeVectors) Search(_ context.Context, q dense.Query) ([]mnemotype.Hit, error) {
	v.mu.Lock()
	v.searchCalls = append(v.searchCalls, q)
	v.mu.Unlock()
	if v.SearchFunc == nil {
		v.t.Errorf("unexpected Search call: k = %d", q.K)
		return nil, nil
	}
	return v.SearchFunc(q)
}

func (v *fakeVectors) Score(_ context.Context, q dense.Query, ids []string) ([]mnemotype.Hit, error) {
	v.mu.Lock()
	v.scoreCalls = append(v.scoreCalls, slices.Clone(ids))
	v.mu.Unlock()
	if v.ScoreFunc == nil {
		v.t.Errorf("unexpected Score call: %v", ids)
		return nil, nil
	}
	return v.ScoreFunc(q, ids)
}

// withSignals is a recall.Source: src's methods, and the signals v holds.
type withSignals struct {
	*fakeSource
	v *fakeVectors
}

func (w withSignals) Signals(_ context.Context, profile string, ids []string) (map[string]store.Signals, error) {
	if w.SignalsFunc != nil {
		return w.SignalsFunc(profile, ids)
	}
	out := map[string]store.Signals{}
	for _, id := range ids {
		if s, ok := w.v.signals[id]; ok {
			out[id] = s
		}
	}
	return out, nil
}

// sourceOf is src serving v's signals.
func sourceOf(src *fakeSource, v *fakeVectors) recall.Source { return withSignals{src, v} }

// hits returns ids as a ranked list with falling scores 10, 9, …
func hits(ids ...string) []mnemotype.Hit {
	out := make([]mnemotype.Hit, len(ids))
	for i, id := range ids {
		out[i] = mnemotype.Hit{ID: id, Score: float64(10 - i)}
	}
	return out
}

// canned answers Lexical from two fixed lists, like a store would: the AND
// list for All queries, the OR list otherwise, restricted to Only and cut
// to Limit.
func canned(and, or []mnemotype.Hit) func(context.Context, store.LexicalParams) ([]mnemotype.Hit, error) {
	return func(_ context.Context, p store.LexicalParams) ([]mnemotype.Hit, error) {
		l := or
		if p.Match.All {
			l = and
		}
		var out []mnemotype.Hit
		for _, h := range l {
			if p.Only == nil || slices.Contains(p.Only, h.ID) {
				out = append(out, h)
			}
		}
		if p.Limit > 0 && len(out) > p.Limit {
			out = out[:p.Limit]
		}
		return out, nil
	}
}

type memSpec struct {
	id          string
	angle       float64 // the embedding is (cos, sin, 0, 0); NaN = no embedding
	created     time.Duration
	accessCount int64
	importance  float64
}

func newIndex(t *testing.T, specs ...memSpec) *testIndex {
	t.Helper()
	mems := make([]mnemotype.Memory, len(specs))
	for i, s := range specs {
		m := mnemotype.Memory{
			ID: s.id, Profile: "p", Kind: mnemotype.KindEpisodic, Importance: s.importance,
			CreatedAt: t0.Add(s.created), AccessedAt: t0.Add(s.created), AccessCount: s.accessCount,
		}
		if !math.IsNaN(s.angle) {
			m.Embedding = []float32{float32(math.Cos(s.angle)), float32(math.Sin(s.angle)), 0, 0}
			m.EmbeddingModel = model
		}
		mems[i] = m
	}
	x := vector.New()
	if err := x.Upsert(mems); err != nil {
		t.Fatalf("Upsert: %v", err)
	}
	sig := map[string]store.Signals{}
	for _, m := range mems {
		sig[m.ID] = store.Signals{OccurredAt: m.CreatedAt, AccessedAt: m.AccessedAt, AccessCount: m.AccessCount, Importance: m.Importance}
	}
	return &testIndex{x: x, sig: sig}
}

// corpus holds a…h in falling dense order for query, and n without an
// embedding. Later letters are newer; access counts cycle 0, 1, 2.
func corpus(t *testing.T) *testIndex {
	t.Helper()
	var specs []memSpec
	for i, id := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		specs = append(specs, memSpec{id: id, angle: 0.15 * float64(i), created: time.Duration(i) * time.Hour,
			accessCount: int64(i % 3), importance: mnemotype.DefaultImportance})
	}
	specs = append(specs, memSpec{id: "n", angle: math.NaN(), created: 30 * time.Minute, importance: mnemotype.DefaultImportance})
	return newIndex(t, specs...)
}

func request(q string, limit int) recall.Request {
	return recall.Request{Query: q, Scope: mnemotype.Scope{Profile: "p"}, Limit: limit, Vector: query, Model: model, Trace: true}
}

func run(t *testing.T, src *fakeSource, vec *fakeVectors, req recall.Request) *recall.Response {
	t.Helper()
	resp, err := recall.Run(context.Background(), sourceOf(src, vec), vec, req)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return resp
}

func resultIDs(rs []recall.Result) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.ID
	}
	return out
}

func hitIDs(hs []mnemotype.Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.ID
	}
	return out
}

func sortedCopy(s []string) []string { return slices.Sorted(slices.Values(s)) }

func weights(kv ...any) fusion.Params {
	p := fusion.Params{Weights: map[string]float64{}}
	for i := 0; i < len(kv); i += 2 {
		p.Weights[kv[i].(string)] = kv[i+1].(float64)
	}
	return p
}

func TestRun_InvalidRequest(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		limit  int
		fusion fusion.Params
	}{
		{"LimitZero", 0, fusion.Params{}},
		{"LimitNegative", -5, fusion.Params{}},
		{"NegativeK", 3, fusion.Params{K: -1}},
		{"NaNK", 3, fusion.Params{K: math.NaN()}},
		{"NegativeWeight", 3, weights(mnemotype.LegDense, -1.0)},
		{"InfWeight", 3, weights(mnemotype.LegLexical, math.Inf(1))},
		{"UnknownStrategy", 3, fusion.Params{Strategy: "nope"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := request("alpha beta", tc.limit)
			req.Options.Fusion = tc.fusion
			// Neither fake has functions: any call fails the test.
			resp, err := recall.Run(context.Background(), sourceOf(&fakeSource{t: t}, &fakeVectors{t: t}), &fakeVectors{t: t}, req)
			if !errors.Is(err, mnemotype.ErrInvalid) {
				t.Fatalf("Run error = %v, want ErrInvalid", err)
			}
			if resp != nil {
				t.Errorf("Run returned a response with its error: %+v", resp)
			}
		})
	}
}

func TestRun_ZeroWeightLeg(t *testing.T) {
	t.Parallel()

	t.Run("Lexical", func(t *testing.T) {
		t.Parallel()
		src := &fakeSource{t: t} // Lexical must not be called
		resp := run(t, src, newVectors(t, corpus(t)), withFusion(request("alpha beta", 3),
			weights(mnemotype.LegLexical, 0.0, mnemotype.LegRecency, 0.0, mnemotype.LegAccess, 0.0)))
		if got := resultIDs(resp.Results); !slices.Equal(got, []string{"a", "b", "c"}) {
			t.Errorf("results = %v, want [a b c]", got)
		}
		if _, ok := resp.Trace.Legs[mnemotype.LegLexical]; ok {
			t.Errorf("trace lists a lexical leg: %v", resp.Trace.Legs)
		}
		if got := resp.Trace.Skipped[mnemotype.LegLexical]; got != "weight is 0" {
			t.Errorf("Skipped[lexical] = %q, want %q", got, "weight is 0")
		}
		for _, r := range resp.Results {
			if _, ok := r.Legs[mnemotype.LegLexical]; ok {
				t.Errorf("result %s has lexical detail %+v", r.ID, r.Legs)
			}
		}
	})

	t.Run("Dense", func(t *testing.T) {
		t.Parallel()
		x := corpus(t)
		// Search and Score fail the test; only Signals is allowed.
		vec := &fakeVectors{t: t, signals: x.sig}
		src := &fakeSource{t: t, LexicalFunc: canned(hits("e", "n", "c"), nil)}
		resp := run(t, src, vec, withFusion(request("alpha beta", 3), weights(mnemotype.LegDense, 0.0)))
		// a is the best dense match but the dense leg admits nothing.
		if got := sortedCopy(resultIDs(resp.Results)); !slices.Equal(got, []string{"c", "e", "n"}) {
			t.Errorf("results = %v, want c, e, n", got)
		}
		if n := len(src.lexCalls); n != 1 {
			t.Errorf("%d Lexical calls, want 1 (no cross-scoring without dense candidates): %+v", n, src.lexCalls)
		}
		if got := resp.Trace.Skipped[mnemotype.LegDense]; got != "weight is 0" {
			t.Errorf("Skipped[dense] = %q, want %q", got, "weight is 0")
		}
	})

	t.Run("SignalLegs", func(t *testing.T) {
		t.Parallel()
		src := &fakeSource{t: t, LexicalFunc: canned(hits("e", "c"), nil)}
		resp := run(t, src, newVectors(t, corpus(t)),
			withFusion(request("alpha beta", 3), weights(mnemotype.LegRecency, 0.0, mnemotype.LegAccess, 0.0)))
		for _, leg := range []string{mnemotype.LegRecency, mnemotype.LegAccess} {
			if _, ok := resp.Trace.Legs[leg]; ok {
				t.Errorf("trace lists the %s leg", leg)
			}
			if got := resp.Trace.Skipped[leg]; got != "weight is 0" {
				t.Errorf("Skipped[%s] = %q, want %q", leg, got, "weight is 0")
			}
			for _, r := range resp.Results {
				if _, ok := r.Legs[leg]; ok {
					t.Errorf("result %s has %s detail", r.ID, leg)
				}
			}
		}
	})

	t.Run("All", func(t *testing.T) {
		t.Parallel()
		x := corpus(t)
		vec := &fakeVectors{t: t, signals: x.sig}
		resp := run(t, &fakeSource{t: t}, vec, withFusion(request("alpha beta", 3), weights(
			mnemotype.LegLexical, 0.0, mnemotype.LegDense, 0.0, mnemotype.LegRecency, 0.0, mnemotype.LegAccess, 0.0)))
		if len(resp.Results) != 0 {
			t.Errorf("results = %v, want none", resultIDs(resp.Results))
		}
	})
}

func withFusion(req recall.Request, p fusion.Params) recall.Request {
	req.Options.Fusion = p
	return req
}

func TestRun_LexicalBroadening(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		query   string
		and, or []mnemotype.Hit
		limit   int
		wantOp  string
		want    []string // the lexical leg in the trace
		wantAll []bool   // Match.All of each call
	}{
		{"AndEnough", "alpha beta", hits("a", "b", "c"), hits("a", "b", "c", "d"), 3, "and", []string{"a", "b", "c"}, []bool{true}},
		{"AndShort", "alpha beta", hits("a"), hits("a", "b", "c", "d"), 3, "or", []string{"a", "b", "c", "d"}, []bool{true, false}},
		{"AndEmpty", "alpha beta gamma", nil, hits("d", "e"), 2, "or", []string{"d", "e"}, []bool{true, false}},
		{"OneTerm", "alpha", hits("a"), hits("a", "b", "c"), 3, "and", []string{"a"}, []bool{true}},
		{"OneTermAfterStopwords", "the alpha of", nil, hits("a", "b"), 3, "and", nil, []bool{true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := &fakeSource{t: t, LexicalFunc: canned(tc.and, tc.or)}
			req := request(tc.query, tc.limit)
			req.Vector = nil // lexical only
			resp := run(t, src, newVectors(t, corpus(t)), req)
			if resp.Trace.LexicalOp != tc.wantOp {
				t.Errorf("LexicalOp = %q, want %q", resp.Trace.LexicalOp, tc.wantOp)
			}
			if got := hitIDs(resp.Trace.Legs[mnemotype.LegLexical]); !slices.Equal(got, tc.want) {
				t.Errorf("lexical leg = %v, want %v", got, tc.want)
			}
			if len(src.lexCalls) != len(tc.wantAll) {
				t.Fatalf("%d Lexical calls, want %d: %+v", len(src.lexCalls), len(tc.wantAll), src.lexCalls)
			}
			terms := recall.Terms(tc.query)
			for i, p := range src.lexCalls {
				if p.Match.All != tc.wantAll[i] || !slices.Equal(p.Match.Terms, terms) || p.Limit != resp.Trace.Fetch || p.Only != nil {
					t.Errorf("Lexical call %d = %+v, want All %v, terms %v, limit %d, no Only",
						i, p, tc.wantAll[i], terms, resp.Trace.Fetch)
				}
			}
		})
	}
}

func TestRun_CrossScoring(t *testing.T) {
	t.Parallel()
	x := corpus(t)
	vec := newVectors(t, x)
	// The AND list fills the window, so there is no OR query; its "e" is
	// embedded, "n" is not. The cross-scoring call uses the leg's own
	// (AND) query: "a" matches it beyond the window, "b" does not.
	and := []mnemotype.Hit{{ID: "e", Score: 10}, {ID: "n", Score: 9}, {ID: "a", Score: 3}}
	src := &fakeSource{t: t, LexicalFunc: canned(and, and)}
	req := request("alpha beta", 2)
	req.Scope = mnemotype.Scope{Profile: "p", Exclude: []string{"zz"}}
	req.Options.FetchMultiplier = 1 // the dense leg fetches a, b only
	resp := run(t, src, vec, req)

	t.Run("LexicalScoresDenseOnly", func(t *testing.T) {
		if len(src.lexCalls) != 2 {
			t.Fatalf("%d Lexical calls, want 2: %+v", len(src.lexCalls), src.lexCalls)
		}
		p := src.lexCalls[1]
		if !slices.Equal(p.Only, []string{"a", "b"}) {
			t.Errorf("cross-scoring Only = %v, want exactly the dense-only ids [a b]", p.Only)
		}
		if p.Limit != 0 || !p.Match.All || !slices.Equal(p.Match.Terms, resp.Trace.Terms) || !sameScope(p.Scope, req.Scope) {
			t.Errorf("cross-scoring call = %+v, want no limit, the leg's AND of %v, scope %+v", p, resp.Trace.Terms, req.Scope)
		}
		want := []mnemotype.Hit{{ID: "e", Score: 10, Rank: 1}, {ID: "n", Score: 9, Rank: 2}, {ID: "a", Score: 3, Rank: 3}}
		if got := resp.Trace.Legs[mnemotype.LegLexical]; !slices.Equal(got, want) {
			t.Errorf("lexical leg = %v, want %v", got, want)
		}
	})

	t.Run("DenseScoresLexicalOnly", func(t *testing.T) {
		if len(vec.searchCalls) != 1 || vec.searchCalls[0].K != 2 {
			t.Fatalf("Search calls = %+v, want one with k = 2", vec.searchCalls)
		}
		if len(vec.scoreCalls) != 1 || !slices.Equal(vec.scoreCalls[0], []string{"e", "n"}) {
			t.Fatalf("Score calls = %v, want one for the lexical-only ids [e n]", vec.scoreCalls)
		}
		want, err := x.x.Score(query, model, []string{"a", "b", "e"})
		if err != nil {
			t.Fatal(err)
		}
		want = fusion.DenseRanks(want)
		if got := resp.Trace.Legs[mnemotype.LegDense]; !slices.Equal(got, want) {
			t.Errorf("dense leg = %v, want %v", got, want)
		}
	})

	t.Run("Candidates", func(t *testing.T) {
		if resp.Trace.Candidates != 4 {
			t.Errorf("Candidates = %d, want 4 (a, b, e, n)", resp.Trace.Candidates)
		}
		if len(resp.Results) != 2 {
			t.Fatalf("results = %v, want 2", resultIDs(resp.Results))
		}
		for _, r := range resp.Results {
			if r.ID == "a" {
				if _, ok := r.Legs[mnemotype.LegLexical]; !ok {
					t.Errorf("a has no lexical detail: %+v", r.Legs)
				}
			}
		}
	})
}

func sameScope(a, b mnemotype.Scope) bool {
	return a.Profile == b.Profile && a.Project == b.Project && slices.Equal(a.Sessions, b.Sessions) &&
		slices.Equal(a.Kinds, b.Kinds) && slices.Equal(a.Exclude, b.Exclude)
}

func TestRun_DenseFilter(t *testing.T) {
	t.Parallel()
	vec := newVectors(t, corpus(t))
	src := &fakeSource{t: t, LexicalFunc: canned(hits("a", "b", "c"), nil)}
	req := request("alpha beta", 3)
	req.Scope = mnemotype.Scope{Profile: "p", Project: "proj", Sessions: []string{"s1", "s2"},
		Kinds: []mnemotype.Kind{mnemotype.KindSemantic}, Exclude: []string{"x", "y"}}
	run(t, src, vec, req)
	if len(vec.searchCalls) != 1 {
		t.Fatalf("Search calls = %+v, want 1", vec.searchCalls)
	}
	if c := vec.searchCalls[0]; c.Model != model || !sameScope(c.Scope, req.Scope) || !slices.Equal(c.Vector, req.Vector) {
		t.Errorf("Search(model %q, %+v), want model %q, %+v", c.Model, c.Scope, model, req.Scope)
	}
	if len(src.lexCalls) == 0 || !sameScope(src.lexCalls[0].Scope, req.Scope) {
		t.Errorf("Lexical scope = %+v, want %+v", src.lexCalls, req.Scope)
	}
}

func TestRun_SignalLegs(t *testing.T) {
	t.Parallel()
	x := newIndex(t,
		memSpec{id: "a", angle: 0, created: 3 * time.Hour, accessCount: 1},
		memSpec{id: "b", angle: 0.1, created: 1 * time.Hour, accessCount: 5},
		memSpec{id: "c", angle: 0.2, created: 3 * time.Hour, accessCount: 5},
		memSpec{id: "d", angle: math.NaN(), created: 2 * time.Hour},
		memSpec{id: "e", angle: 0.3, created: 9 * time.Hour, accessCount: 9}, // in no leg: never ranked
	)
	src := &fakeSource{t: t, LexicalFunc: canned(hits("d", "ghost", "b"), nil)}
	req := request("alpha beta", 3)
	req.Options.FetchMultiplier = 1 // the dense leg fetches a, b, c
	resp := run(t, src, newVectors(t, x), req)
	ns := func(d time.Duration) float64 {
		at := t0.Add(d)
		return float64(at.Unix()) + float64(at.Nanosecond())/1e9
	}
	for _, tc := range []struct {
		leg  string
		want []mnemotype.Hit
	}{
		{mnemotype.LegRecency, []mnemotype.Hit{
			{ID: "a", Score: ns(3 * time.Hour), Rank: 1}, {ID: "c", Score: ns(3 * time.Hour), Rank: 1},
			{ID: "d", Score: ns(2 * time.Hour), Rank: 2}, {ID: "b", Score: ns(time.Hour), Rank: 3},
		}},
		{mnemotype.LegAccess, []mnemotype.Hit{
			{ID: "b", Score: 5, Rank: 1}, {ID: "c", Score: 5, Rank: 1},
			{ID: "a", Score: 1, Rank: 2}, {ID: "d", Score: 0, Rank: 3},
		}},
	} {
		t.Run(tc.leg, func(t *testing.T) {
			if got := resp.Trace.Legs[tc.leg]; !slices.Equal(got, tc.want) {
				t.Errorf("%s leg = %v, want %v", tc.leg, got, tc.want)
			}
		})
	}
	t.Run("OnlyCandidates", func(t *testing.T) {
		// e is newest and most accessed but in no retrieval leg; ghost is
		// a lexical hit the index does not hold (no signals).
		if resp.Trace.Candidates != 5 {
			t.Errorf("Candidates = %d, want 5 (a, b, c, d, ghost)", resp.Trace.Candidates)
		}
	})
}

func TestRun_PoolPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		limit, mult     int
		lexCap, pool    int
		wantLex, wantPN int
	}{
		{"CapAboveFetch", 2, 3, 50, 4, 50, 4},
		{"FetchAboveCap", 5, 2, 4, 4, 10, 4},
		{"Defaults", 2, 0, 0, 0, recall.DefaultLexicalCap, recall.DefaultPoolSize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			x := corpus(t)
			vec := newVectors(t, x)
			vec.SearchFunc = nil // the pool policy never searches the whole scope
			src := &fakeSource{
				t:           t,
				LexicalFunc: canned(hits("c", "n"), hits("c", "n", "g")),
				RecentlyAccessedFunc: func(_ context.Context, _ mnemotype.Scope, n int) ([]string, error) {
					return []string{"f", "g", "h", "zz"}, nil
				},
			}
			req := request("alpha beta", tc.limit)
			req.Scope.Project = "proj"
			req.Options = recall.Options{Policy: recall.PolicyPool, FetchMultiplier: tc.mult, LexicalCap: tc.lexCap, PoolSize: tc.pool}
			resp := run(t, src, vec, req)

			if len(src.recentNs) != 1 || src.recentNs[0] != tc.wantPN || !sameScope(src.recentScopes[0], req.Scope) {
				t.Errorf("RecentlyAccessed calls n = %v, scopes %+v; want one with n = %d, scope %+v", src.recentNs, src.recentScopes, tc.wantPN, req.Scope)
			}
			if len(src.lexCalls) == 0 || src.lexCalls[0].Limit != tc.wantLex {
				t.Errorf("first Lexical call = %+v, want limit %d", src.lexCalls, tc.wantLex)
			}
			if len(vec.scoreCalls) == 0 {
				t.Fatal("dense leg never called Score")
			}
			if got := sortedCopy(vec.scoreCalls[0]); !slices.Equal(got, []string{"c", "f", "g", "h", "n", "zz"}) {
				t.Errorf("pool scored = %v, want the recent ids ∪ lexical hits", vec.scoreCalls[0])
			}
			// "a" is the best dense match in the index but not in the pool.
			if got := sortedCopy(hitIDs(resp.Trace.Legs[mnemotype.LegDense])); !slices.Equal(got, []string{"c", "f", "g", "h"}) {
				t.Errorf("dense leg = %v, want c, f, g, h", got)
			}
			// "g" matches only the OR form: it is cross-scored when the leg
			// broadened to OR, and rightly absent when AND sufficed.
			want := []string{"c", "g", "n"}
			if resp.Trace.LexicalOp == "and" {
				want = []string{"c", "n"}
			}
			if got := sortedCopy(hitIDs(resp.Trace.Legs[mnemotype.LegLexical])); !slices.Equal(got, want) {
				t.Errorf("lexical leg = %v (%s), want %v", got, resp.Trace.LexicalOp, want)
			}
			if resp.Trace.Policy != string(recall.PolicyPool) {
				t.Errorf("trace policy = %q", resp.Trace.Policy)
			}
			if _, ok := resp.Trace.Timings["pool"]; !ok {
				t.Errorf("timings %v lack pool", resp.Trace.Timings)
			}
		})
	}
}

func TestRun_PoolPolicy_NoVector(t *testing.T) {
	t.Parallel()
	src := &fakeSource{t: t, LexicalFunc: canned(hits("c", "n"), nil)} // RecentlyAccessed fails the test
	req := request("alpha beta", 2)
	req.Vector = nil
	req.Options.Policy = recall.PolicyPool
	resp := run(t, src, &fakeVectors{t: t, signals: corpus(t).sig}, req)
	if got := sortedCopy(resultIDs(resp.Results)); !slices.Equal(got, []string{"c", "n"}) {
		t.Errorf("results = %v, want c, n", got)
	}
}

func TestRun_ImportancePrior(t *testing.T) {
	t.Parallel()
	// a is first lexically and second densely, b the reverse: their fused
	// scores tie, and so do their best ranks, so only the prior (or the id)
	// separates them.
	x := newIndex(t,
		memSpec{id: "a", angle: 0.5, importance: 0.1},
		memSpec{id: "b", angle: 0, importance: 0.9},
	)
	for _, tc := range []struct {
		mode fusion.ImportanceMode
		want []string
	}{
		{fusion.ImportanceOff, []string{"a", "b"}},
		{"", []string{"b", "a"}}, // defaults to the multiplier
		{fusion.ImportanceMultiplier, []string{"b", "a"}},
		{fusion.ImportanceBoost, []string{"b", "a"}},
	} {
		t.Run("mode="+string(tc.mode), func(t *testing.T) {
			t.Parallel()
			src := &fakeSource{t: t, LexicalFunc: canned(hits("a", "b"), nil)}
			req := request("alpha beta", 2)
			req.Options.Importance = tc.mode
			req.Options.Fusion = weights(mnemotype.LegRecency, 0.0, mnemotype.LegAccess, 0.0)
			resp := run(t, src, newVectors(t, x), req)
			if got := resultIDs(resp.Results); !slices.Equal(got, tc.want) {
				t.Errorf("results = %v, want %v", got, tc.want)
			}
			for i, r := range resp.Results {
				if r.Rank != i+1 {
					t.Errorf("result %d has Rank %d", i, r.Rank)
				}
			}
			if tc.mode == fusion.ImportanceOff && resp.Results[0].Score != resp.Results[1].Score {
				t.Errorf("scores %v, %v should tie without the prior", resp.Results[0].Score, resp.Results[1].Score)
			}
			wantMode := tc.mode
			if wantMode == "" {
				wantMode = fusion.ImportanceMultiplier
			}
			if resp.Trace.Importance != string(wantMode) {
				t.Errorf("trace importance = %q, want %q", resp.Trace.Importance, wantMode)
			}
		})
	}
}

func TestRun_Limit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		limit, want int
	}{{1, 1}, {3, 3}, {4, 4}, {100, 9}} {
		t.Run("limit="+strconv.Itoa(tc.limit), func(t *testing.T) {
			t.Parallel()
			src := &fakeSource{t: t, LexicalFunc: canned(hits("h", "g", "n", "f", "e", "d"), hits("h", "g", "n", "f", "e", "d", "c"))}
			resp := run(t, src, newVectors(t, corpus(t)), request("alpha beta", tc.limit))
			if len(resp.Results) != tc.want {
				t.Fatalf("%d results %v, want %d", len(resp.Results), resultIDs(resp.Results), tc.want)
			}
			for i, r := range resp.Results {
				if r.Rank != i+1 {
					t.Errorf("result %d (%s) has Rank %d", i, r.ID, r.Rank)
				}
				if i > 0 && r.Score > resp.Results[i-1].Score {
					t.Errorf("result %d (%s) scores above its predecessor", i, r.ID)
				}
			}
		})
	}
}

func TestRun_Fetch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		limit, mult int
		want        int
	}{
		{"Default", 2, 0, 2 * recall.DefaultFetchMultiplier},
		{"Negative", 2, -1, 2 * recall.DefaultFetchMultiplier},
		{"Set", 4, 5, 20},
		{"One", 1, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			vec := newVectors(t, corpus(t))
			src := &fakeSource{t: t, LexicalFunc: canned(nil, hits("a", "b"))}
			req := request("alpha beta", tc.limit)
			req.Options.FetchMultiplier = tc.mult
			resp := run(t, src, vec, req)
			if resp.Trace.Fetch != tc.want {
				t.Errorf("trace Fetch = %d, want %d", resp.Trace.Fetch, tc.want)
			}
			if len(vec.searchCalls) != 1 || vec.searchCalls[0].K != tc.want {
				t.Errorf("Search calls = %+v, want k = %d", vec.searchCalls, tc.want)
			}
			for _, p := range src.lexCalls {
				if p.Only == nil && p.Limit != tc.want {
					t.Errorf("Lexical limit = %d, want %d", p.Limit, tc.want)
				}
			}
		})
	}
}

func TestRun_Trace(t *testing.T) {
	t.Parallel()
	stages := func(s ...string) []string {
		return sortedCopy(append(s, "cross_score", "signals", "fusion", "relevance", "pipeline"))
	}
	for _, tc := range []struct {
		name        string
		edit        func(*recall.Request)
		wantSkipped map[string]string
		wantLegs    []string
		wantTimings []string
	}{
		{"AllLegs", func(*recall.Request) {},
			map[string]string{},
			[]string{"access", "dense", "lexical", "recency"}, stages("lexical", "dense", "lexical_cross")},
		{"NoWords", func(r *recall.Request) { r.Query = `!!! ( ) "" *` },
			map[string]string{"lexical": "query has no searchable words"},
			[]string{"access", "dense", "recency"}, stages("dense")},
		{"NoVector", func(r *recall.Request) { r.Vector = nil },
			map[string]string{"dense": "no query embedding"},
			[]string{"access", "lexical", "recency"}, stages("lexical")},
		{"VectorErr", func(r *recall.Request) { r.Vector, r.VectorErr = nil, errors.New("embedder down: 503") },
			map[string]string{"dense": "query embedding failed: embedder down: 503"},
			[]string{"access", "lexical", "recency"}, stages("lexical")},
		{"ZeroWeights", func(r *recall.Request) {
			r.Options.Fusion = weights(mnemotype.LegDense, 0.0, mnemotype.LegAccess, 0.0)
		},
			map[string]string{"dense": "weight is 0", "access": "weight is 0"},
			[]string{"lexical", "recency"}, stages("lexical")},
		{"Pool", func(r *recall.Request) { r.Options.Policy = recall.PolicyPool },
			map[string]string{},
			[]string{"access", "dense", "lexical", "recency"}, stages("lexical", "pool")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := &fakeSource{t: t, LexicalFunc: canned(hits("b", "n"), nil),
				RecentlyAccessedFunc: func(context.Context, mnemotype.Scope, int) ([]string, error) { return []string{"c"}, nil }}
			req := request("alpha beta", 2)
			tc.edit(&req)
			resp := run(t, src, newVectors(t, corpus(t)), req)
			tr := resp.Trace
			if tr == nil {
				t.Fatal("no trace")
			}
			if len(tr.Skipped) != len(tc.wantSkipped) {
				t.Errorf("Skipped = %v, want %v", tr.Skipped, tc.wantSkipped)
			}
			for leg, why := range tc.wantSkipped {
				if tr.Skipped[leg] != why {
					t.Errorf("Skipped[%s] = %q, want %q", leg, tr.Skipped[leg], why)
				}
			}
			var legs, timings []string
			for l := range tr.Legs {
				legs = append(legs, l)
			}
			for s, ms := range tr.Timings {
				timings = append(timings, s)
				if ms < 0 || math.IsNaN(ms) {
					t.Errorf("Timings[%s] = %v", s, ms)
				}
			}
			if slices.Sort(legs); !slices.Equal(legs, tc.wantLegs) {
				t.Errorf("Legs = %v, want %v", legs, tc.wantLegs)
			}
			if slices.Sort(timings); !slices.Equal(timings, tc.wantTimings) {
				t.Errorf("Timings keys = %v, want %v", timings, tc.wantTimings)
			}
			if !slices.Equal(tr.Terms, recall.Terms(req.Query)) {
				t.Errorf("Terms = %v, want %v", tr.Terms, recall.Terms(req.Query))
			}
			if tr.Strategy != string(fusion.RRF) || tr.K != fusion.DefaultK {
				t.Errorf("Strategy, K = %q, %v; want rrf, %v", tr.Strategy, tr.K, fusion.DefaultK)
			}
			for _, l := range mnemotype.Legs {
				want := 1.0
				if tc.wantSkipped[l] == "weight is 0" {
					want = 0
				}
				if w, ok := tr.Weights[l]; !ok || w != want {
					t.Errorf("Weights[%s] = %v, %v; want %v", l, w, ok, want)
				}
			}
		})
	}

	t.Run("Off", func(t *testing.T) {
		t.Parallel()
		src := &fakeSource{t: t, LexicalFunc: canned(hits("b", "n"), nil)}
		req := request("alpha beta", 2)
		req.Trace = false
		resp := run(t, src, newVectors(t, corpus(t)), req)
		if resp.Trace != nil {
			t.Errorf("Trace = %+v, want nil", resp.Trace)
		}
		if len(resp.Results) != 2 {
			t.Errorf("results = %v", resultIDs(resp.Results))
		}
	})
}

func TestRun_Errors(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	fail := func(context.Context, store.LexicalParams) ([]mnemotype.Hit, error) { return nil, boom }
	for _, tc := range []struct {
		name    string
		src     func(*fakeSource)
		vec     func(*fakeVectors)
		req     func(*recall.Request)
		wantErr error
		wantLeg string
	}{
		{"LexicalAnd", func(s *fakeSource) { s.LexicalFunc = fail }, nil, nil, boom, "lexical leg"},
		{"LexicalOr", func(s *fakeSource) {
			s.LexicalFunc = func(_ context.Context, p store.LexicalParams) ([]mnemotype.Hit, error) {
				if p.Match.All {
					return nil, nil
				}
				return nil, boom
			}
		}, nil, nil, boom, "lexical leg"},
		{"LexicalCrossScore", func(s *fakeSource) {
			s.LexicalFunc = func(_ context.Context, p store.LexicalParams) ([]mnemotype.Hit, error) {
				if p.Only != nil {
					return nil, boom
				}
				return hits("b", "c"), nil
			}
		}, nil, nil, boom, "lexical leg"},
		{"Pool", func(s *fakeSource) {
			s.RecentlyAccessedFunc = func(context.Context, mnemotype.Scope, int) ([]string, error) { return nil, boom }
		}, nil, func(r *recall.Request) { r.Options.Policy = recall.PolicyPool }, boom, "pool leg"},
		{"DenseSearch", nil, func(v *fakeVectors) {
			v.SearchFunc = func(dense.Query) ([]mnemotype.Hit, error) { return nil, boom }
		}, nil, boom, "dense leg"},
		{"DenseCrossScore", nil, func(v *fakeVectors) {
			v.ScoreFunc = func(dense.Query, []string) ([]mnemotype.Hit, error) { return nil, boom }
		}, nil, boom, "dense leg"},
		{"DensePoolScore", nil, func(v *fakeVectors) {
			v.ScoreFunc = func(dense.Query, []string) ([]mnemotype.Hit, error) { return nil, boom }
		}, func(r *recall.Request) { r.Options.Policy = recall.PolicyPool }, boom, "dense leg"},
		{"DimensionMismatch", nil, nil, func(r *recall.Request) { r.Vector = []float32{1, 0} },
			mnemotype.ErrDimensionMismatch, "dense leg"},
		{"Canceled", func(s *fakeSource) {
			s.LexicalFunc = func(ctx context.Context, _ store.LexicalParams) ([]mnemotype.Hit, error) { return nil, ctx.Err() }
		}, nil, nil, context.Canceled, "lexical leg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := &fakeSource{t: t, LexicalFunc: canned(hits("b", "n", "c"), nil),
				RecentlyAccessedFunc: func(context.Context, mnemotype.Scope, int) ([]string, error) { return []string{"c"}, nil }}
			if tc.src != nil {
				tc.src(src)
			}
			vec := newVectors(t, corpus(t))
			if tc.vec != nil {
				tc.vec(vec)
			}
			req := request("alpha beta", 2)
			if tc.req != nil {
				tc.req(&req)
			}
			ctx, cancel := context.WithCancel(context.Background())
			if tc.wantErr == context.Canceled {
				cancel()
			}
			defer cancel()
			resp, err := recall.Run(ctx, sourceOf(src, vec), vec, req)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Run error = %v, want %v", err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantLeg) {
				t.Errorf("error %q does not name the %s", err, tc.wantLeg)
			}
			if resp != nil {
				t.Errorf("Run returned a response with its error")
			}
		})
	}
}

// TestRun_Concurrent runs many recalls against one index while it changes.
func TestRun_Concurrent(t *testing.T) {
	t.Parallel()
	x := corpus(t)
	vec := newVectors(t, x)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for range 50 {
				if err := x.x.Upsert([]mnemotype.Memory{{ID: "z" + strconv.Itoa(i), Profile: "p", Kind: mnemotype.KindEpisodic,
					CreatedAt: t0, AccessedAt: t0, Embedding: []float32{0, 1, 0, 0}, EmbeddingModel: model}}); err != nil {
					t.Error(err)
				}
			}
		})
		wg.Go(func() {
			for range 50 {
				src := &fakeSource{t: t, LexicalFunc: canned(hits("c", "n"), hits("c", "n", "h")),
					RecentlyAccessedFunc: func(context.Context, mnemotype.Scope, int) ([]string, error) { return []string{"b", "z0"}, nil }}
				req := request("alpha beta", 3)
				if i%2 == 1 {
					req.Options.Policy = recall.PolicyPool
				}
				if _, err := recall.Run(context.Background(), sourceOf(src, vec), vec, req); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestRun_CrossScoresDenseHits checks the scope policy's cross-scoring:
// the lexical leg runs AND, then OR when AND finds fewer than limit, while
// the dense hits are scored by FTS5 under the operator the lexical leg
// settled on (Only), so a dense hit far down the OR list keeps its score.
func TestRun_CrossScoresDenseHits(t *testing.T) {
	t.Parallel()
	x := corpus(t)
	vec := newVectors(t, x)
	// AND finds only "e"; OR finds e, n, then "a" (a dense hit) far down.
	or := []mnemotype.Hit{{ID: "e", Score: 10}, {ID: "n", Score: 9}, {ID: "c", Score: 8}, {ID: "a", Score: 1}}
	src := &fakeSource{t: t, LexicalFunc: canned(hits("e"), or)}
	req := request("alpha beta", 2)
	req.Options.FetchMultiplier = 1 // each leg fetches 2; the dense leg finds a, b
	resp := run(t, src, vec, req)
	if len(src.lexCalls) != 3 {
		t.Fatalf("%d Lexical calls, want AND, OR and the dense hits: %+v", len(src.lexCalls), src.lexCalls)
	}
	var and, orCall, only []store.LexicalParams
	for _, c := range src.lexCalls {
		switch {
		case c.Only != nil:
			only = append(only, c)
		case c.Match.All:
			and = append(and, c)
		default:
			orCall = append(orCall, c)
		}
	}
	if len(and) != 1 || len(orCall) != 1 || len(only) != 1 || and[0].Limit != 2 || orCall[0].Limit != 2 {
		t.Fatalf("calls = %+v; want AND and OR with limit 2, and one Only call", src.lexCalls)
	}
	if got := sortedCopy(only[0].Only); !slices.Equal(got, []string{"a", "b"}) || only[0].Match.All {
		t.Errorf("Only call = %+v, want the dense hits a, b under OR", only[0])
	}
	if resp.Trace.LexicalOp != "or" {
		t.Errorf("LexicalOp = %q, want or", resp.Trace.LexicalOp)
	}
	want := []mnemotype.Hit{{ID: "e", Score: 10, Rank: 1}, {ID: "n", Score: 9, Rank: 2}, {ID: "a", Score: 1, Rank: 3}}
	if got := resp.Trace.Legs[mnemotype.LegLexical]; !slices.Equal(got, want) {
		t.Errorf("lexical leg = %v, want %v (top 2 of OR plus the dense hit a)", got, want)
	}

	// When AND finds enough, the dense hits are scored under AND.
	src = &fakeSource{t: t, LexicalFunc: canned(hits("e", "a"), or)}
	resp = run(t, src, vec, req)
	for _, c := range src.lexCalls {
		if !c.Match.All {
			t.Errorf("call %+v under OR, want every call under AND", c)
		}
	}
	if resp.Trace.LexicalOp != "and" {
		t.Errorf("LexicalOp = %q, want and", resp.Trace.LexicalOp)
	}
}

// TestRun_DetailsOfLiftedResult: fusion builds per-leg details for twice the
// limit only; a result the importance prior lifts from beyond that still
// comes back with its legs.
func TestRun_DetailsOfLiftedResult(t *testing.T) {
	t.Parallel()
	x := newIndex(t,
		memSpec{id: "a", angle: 0, importance: 0},
		memSpec{id: "b", angle: 0.1, importance: 0},
		memSpec{id: "c", angle: 0.2, importance: 1},
	)
	src := &fakeSource{t: t, LexicalFunc: canned(hits("a", "b", "c"), nil)}
	req := request("alpha beta", 1)
	req.Options.Importance = fusion.ImportanceMultiplier
	req.Options.RelevanceMargin = 1 // the prior may reorder anything
	req.Options.Fusion = weights(mnemotype.LegRecency, 0.0, mnemotype.LegAccess, 0.0)
	resp := run(t, src, newVectors(t, x), req)
	if got := resultIDs(resp.Results); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("results = %v, want c (third by fusion, first after the prior)", got)
	}
	r := resp.Results[0]
	if r.Legs[mnemotype.LegLexical].Rank != 3 || r.Legs[mnemotype.LegDense].Rank != 3 {
		t.Errorf("c's legs = %+v, want lexical and dense rank 3", r.Legs)
	}
}

// TestRun_Relevance: every result carries its relevance; the floor and
// autocut drop what is below; the importance prior reorders only results
// within the margin of each other.
func TestRun_Relevance(t *testing.T) {
	t.Parallel()
	x := newIndex(t,
		memSpec{id: "a", angle: 0, importance: 0},
		memSpec{id: "b", angle: 0.6, importance: 1},
		memSpec{id: "c", angle: 1.4, importance: 1},
	)
	lex := []mnemotype.Hit{{ID: "a", Score: 10}, {ID: "b", Score: 9}, {ID: "c", Score: 1}}
	texts := map[string]recall.Text{"a": {Content: "alpha beta"}, "b": {Content: "alpha", Actor: "beta"}, "c": {Content: "gamma"}}
	base := func(edit func(*recall.Options)) *recall.Response {
		src := &fakeSource{t: t, LexicalFunc: canned(lex, lex)}
		req := request("alpha beta", 3)
		req.ProfileSize = 5000
		req.Texts = func(_ context.Context, ids []string) (map[string]recall.Text, error) {
			out := map[string]recall.Text{}
			for _, id := range ids {
				out[id] = texts[id]
			}
			return out, nil
		}
		req.Options.Importance = fusion.ImportanceMultiplier
		req.Options.Fusion = weights(mnemotype.LegRecency, 0.0, mnemotype.LegAccess, 0.0)
		req.Options.Fusion.Strategy = fusion.WeightedAverage
		edit(&req.Options)
		return run(t, src, newVectors(t, x), req)
	}
	rels := func(r *recall.Response) map[string]float64 {
		out := map[string]float64{}
		for _, res := range r.Results {
			out[res.ID] = res.Relevance
		}
		return out
	}

	free := base(func(o *recall.Options) { o.RelevanceMargin = 1 })
	if got := resultIDs(free.Results); !slices.Equal(got, []string{"b", "a", "c"}) {
		t.Fatalf("prior free of the margin: %v, want b (importance 1) above a", got)
	}
	rel := rels(free)
	if ev := free.Trace.Relevance; ev.Basis != "lexical" || ev.Evidence.Coverage != 1 || ev.Evidence.Memories != 5000 || ev.Answerable < 0.9 {
		t.Errorf("relevance trace = %+v", ev)
	}
	if !(rel["a"] > rel["b"] && rel["b"] > rel["c"]) || rel["a"] > 1 || rel["c"] < 0 {
		t.Errorf("relevance = %v, want a > b > c in [0, 1]", rel)
	}
	if d := rel["a"] - rel["b"]; d <= 0.02 {
		t.Fatalf("a and b differ by %v; the case needs more than the margin: %v %+v", d, rel, free.Trace.Relevance)
	}
	held := base(func(o *recall.Options) { o.RelevanceMargin = 0.02 })
	if got := resultIDs(held.Results); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("margin 0.02: %v, want the relevance order a, b, c", got)
	}
	within := base(func(o *recall.Options) { o.RelevanceMargin = rel["a"] - rel["b"] })
	if got := resultIDs(within.Results); got[0] != "b" {
		t.Errorf("margin %v: %v, want b first (a and b within it)", rel["a"]-rel["b"], got)
	}

	floor := (rel["b"] + rel["c"]) / 2
	cut := base(func(o *recall.Options) { o.RelevanceMargin, o.MinRelevance = 0.02, floor })
	if got := resultIDs(cut.Results); !slices.Equal(got, []string{"a", "b"}) || cut.Trace.Relevance.BelowMin != 1 {
		t.Errorf("min relevance %v: %v (%+v), want a, b and one below", floor, got, cut.Trace.Relevance)
	}
	none := base(func(o *recall.Options) { o.MinRelevance = 1 })
	if len(none.Results) != 0 || none.Trace.Relevance.BelowMin != 3 {
		t.Errorf("min relevance 1: %v (%+v), want nothing", resultIDs(none.Results), none.Trace.Relevance)
	}
	auto := base(func(o *recall.Options) { o.RelevanceMargin, o.Autocut = 0.02, 1 })
	if n := len(auto.Results); n == 3 || n == 0 || auto.Trace.Relevance.AutoCut != 3-n {
		t.Errorf("autocut 1 on %v: %v (%+v)", rel, resultIDs(auto.Results), auto.Trace.Relevance)
	}
}

// TestRun_CoverageByIndex: the relevance estimate's coverage reads the
// full-text index (Request.Holds) when it can say, the same as tokenizing
// the texts; it falls back to the texts when the index cannot say, and
// reports the index's error.
func TestRun_CoverageByIndex(t *testing.T) {
	t.Parallel()
	x := newIndex(t, memSpec{id: "a", angle: 0}, memSpec{id: "b", angle: 0.6}, memSpec{id: "c", angle: 1.4})
	lex := []mnemotype.Hit{{ID: "a", Score: 10}, {ID: "b", Score: 9}, {ID: "c", Score: 1}}
	texts := map[string]recall.Text{"a": {Content: "Running to the Lakes"}, "b": {Content: "lake", Actor: "Melanie"}, "c": {Content: "gamma"}}
	byTexts := func(_ context.Context, ids []string) (map[string]recall.Text, error) {
		out := map[string]recall.Text{}
		for _, id := range ids {
			if tx, ok := texts[id]; ok {
				out[id] = tx
			}
		}
		return out, nil
	}
	byTokens := func(_ context.Context, ids, tokens []string) ([][]bool, bool, error) {
		held := make([][]bool, len(ids))
		for i, id := range ids {
			held[i] = make([]bool, len(tokens))
			toks := ftstoken.Tokens(texts[id].Content + " " + texts[id].Actor)
			for j, tok := range tokens {
				held[i][j] = slices.Contains(toks, tok)
			}
		}
		return held, true, nil
	}
	allHeld := func(_ context.Context, ids, tokens []string) ([][]bool, bool, error) {
		held := make([][]bool, len(ids))
		for i := range held {
			held[i] = make([]bool, len(tokens))
			for j := range held[i] {
				held[i][j] = true
			}
		}
		return held, true, nil
	}
	cannot := func(context.Context, []string, []string) ([][]bool, bool, error) { return nil, false, nil }
	boom := errors.New("boom")
	failing := func(context.Context, []string, []string) ([][]bool, bool, error) { return nil, false, boom }
	for _, tc := range []struct {
		name, query string
		texts       func(context.Context, []string) (map[string]recall.Text, error)
		holds       func(context.Context, []string, []string) ([][]bool, bool, error)
		want        float64
		err         error
	}{
		{"texts", "lakes melanie nothing", byTexts, nil, 2.0 / 3, nil},
		{"index", "lakes melanie nothing", nil, byTokens, 2.0 / 3, nil},
		{"index over texts", "lakes melanie nothing", byTexts, allHeld, 1, nil},
		{"index cannot say", "lakes melanie nothing", byTexts, cannot, 2.0 / 3, nil},
		{"index fails", "lakes melanie nothing", byTexts, failing, 0, boom},
		{"two terms of one token", "lake lakes gamma", nil, byTokens, 2.0 / 3, nil},
		{"neither", "lakes", nil, nil, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req := request(tc.query, 3)
			req.ProfileSize = 5000
			req.Texts, req.Holds = tc.texts, tc.holds
			req.Options.Fusion = weights(mnemotype.LegRecency, 0.0, mnemotype.LegAccess, 0.0)
			vec := newVectors(t, x)
			resp, err := recall.Run(t.Context(), sourceOf(&fakeSource{t: t, LexicalFunc: canned(lex, lex)}, vec), vec, req)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("err = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Trace.Relevance.Evidence.Coverage; math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("coverage = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRun_LiftedNeighbourKeepsItsLegs: a candidate fused past the detail
// window that a neighbour's lend lifts into the results is returned with
// its legs' details, not with the lend's alone.
func TestRun_LiftedNeighbourKeepsItsLegs(t *testing.T) {
	t.Parallel()
	x := newIndex(t, memSpec{id: "a", angle: 0, importance: mnemotype.DefaultImportance})
	lex := hits("a", "b", "c", "d", "e", "f", "g", "h", "i", "j")
	req := request("alpha", 2)
	req.Options.Fusion = weights(mnemotype.LegLexical, 1.0, mnemotype.LegDense, 0.0, mnemotype.LegRecency, 0.0, mnemotype.LegAccess, 0.0)
	req.Options.NeighborRadius, req.Options.NeighborShare = 1, 5
	src := &fakeSource{t: t, LexicalFunc: func(context.Context, store.LexicalParams) ([]mnemotype.Hit, error) { return lex, nil },
		NeighborsFunc: func(context.Context, mnemotype.Scope, []string, int) ([]store.Neighbor, error) {
			return []store.Neighbor{{ID: "j", Of: "a", Distance: 1}}, nil
		}}
	resp := run(t, src, newVectors(t, x), req)
	if got := resultIDs(resp.Results); !slices.Contains(got, "j") {
		t.Fatalf("results %v: the case needs j (lexical rank 10) lifted among them", got)
	}
	for _, r := range resp.Results {
		if _, ok := r.Legs[mnemotype.LegLexical]; !ok {
			t.Errorf("%s: legs %v, want its lexical detail", r.ID, r.Legs)
		}
		if _, ok := r.Legs[mnemotype.LegNeighbor]; r.ID == "j" && !ok {
			t.Errorf("j: legs %v, want the lend it received", r.Legs)
		}
	}
}

// TestRun_LexicalPanicReachesTheCaller: a lexical leg that panics before
// it has decided its operator, on its own goroutine beside the dense leg
// (unscoped; the panic before or after the dense search ends) or on the
// caller's (in a session), leaves neither the dense leg waiting for that
// operator nor a goroutine behind, and Run panics with it. Not parallel: it
// counts the process's goroutines.
func TestRun_LexicalPanicReachesTheCaller(t *testing.T) {
	for _, tc := range []struct {
		name                string
		sessions            []string
		slowDense, slowLexi bool
	}{
		{name: "beside, dense still searching", slowDense: true},
		{name: "beside, dense waiting for the operator", slowLexi: true},
		{name: "in a session", sessions: []string{"s1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vec := newVectors(t, corpus(t))
			search := vec.SearchFunc
			vec.SearchFunc = func(q dense.Query) ([]mnemotype.Hit, error) {
				if tc.slowDense {
					time.Sleep(50 * time.Millisecond)
				}
				return search(q)
			}
			src := &fakeSource{t: t, LexicalFunc: func(context.Context, store.LexicalParams) ([]mnemotype.Hit, error) {
				if tc.slowLexi {
					time.Sleep(50 * time.Millisecond)
				}
				panic("boom")
			}}
			req := request("alpha beta", 3)
			req.Scope.Sessions = tc.sessions
			before := runtime.NumGoroutine()
			got := make(chan any, 1)
			go func() {
				defer func() { got <- recover() }()
				_, _ = recall.Run(context.Background(), sourceOf(src, vec), vec, req)
			}()
			select {
			case p := <-got:
				if p != "boom" {
					t.Errorf("Run panicked with %v, want the lexical leg's panic", p)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Run still runs 10 s after the lexical leg panicked")
			}
			for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			if n := runtime.NumGoroutine(); n > before {
				t.Errorf("%d goroutines after the panic, %d before: a leg still waits", n, before)
			}
		})
	}
}

// eitherSource is a recall.Source that can also answer the lexical leg's
// AND query and its OR fallback in one call (recall.EitherSource).
type eitherSource struct {
	withSignals
	answer func(p store.LexicalParams) (hits []mnemotype.Hit, all, ok bool)

	mu    sync.Mutex
	calls []store.LexicalParams
}

func (e *eitherSource) LexicalEither(_ context.Context, p store.LexicalParams) ([]mnemotype.Hit, bool, bool, error) {
	e.mu.Lock()
	e.calls = append(e.calls, p)
	e.mu.Unlock()
	hits, all, ok := e.answer(p)
	return hits, all, ok, nil
}

// TestRun_LexicalEither: in a session, where the legs run in turn, the
// lexical leg asks a source that can answer its AND query and the OR
// fallback in one call for both at once (the AND query, with MinHits) and
// reports the operator that answered; when the source cannot, it asks for
// each in turn, as it does unscoped, where the dense leg beside it waits
// for the operator the AND query decides.
func TestRun_LexicalEither(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		sessions   []string
		all, ok    bool
		wantEither int    // LexicalEither calls
		wantLex    int    // Lexical calls for the leg (not the cross-scoring)
		wantOp     string // the trace's operator
		wantFirst  string // the lexical leg's best
	}{
		{name: "session, AND answers", sessions: []string{"s1"}, all: true, ok: true, wantEither: 1, wantOp: "and", wantFirst: "d"},
		{name: "session, OR answers", sessions: []string{"s1"}, ok: true, wantEither: 1, wantOp: "or", wantFirst: "d"},
		{name: "session, the source cannot", sessions: []string{"s1"}, wantEither: 1, wantLex: 2, wantOp: "or", wantFirst: "a"},
		{name: "unscoped", all: true, ok: true, wantLex: 2, wantOp: "or", wantFirst: "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			vec := newVectors(t, corpus(t))
			src := &fakeSource{t: t, LexicalFunc: func(_ context.Context, p store.LexicalParams) ([]mnemotype.Hit, error) {
				switch {
				case p.Only != nil:
					return nil, nil // the cross-scoring: nothing more
				case p.Match.All:
					return nil, nil // fewer than MinHits hold every term
				}
				return hits("a", "b", "c"), nil
			}}
			es := &eitherSource{withSignals: withSignals{src, vec}, answer: func(p store.LexicalParams) ([]mnemotype.Hit, bool, bool) {
				if !p.Match.All || p.MinHits != 3 {
					t.Errorf("LexicalEither(%+v): want the AND query with MinHits 3", p)
				}
				if !tc.ok {
					return nil, false, false
				}
				return hits("d", "e", "f"), tc.all, true
			}}
			req := request("alpha beta", 3)
			req.Scope.Sessions = tc.sessions
			resp, err := recall.Run(context.Background(), es, vec, req)
			if err != nil {
				t.Fatal(err)
			}
			lex := 0
			for _, p := range src.lexCalls {
				if p.Only == nil {
					lex++
				}
			}
			if len(es.calls) != tc.wantEither || lex != tc.wantLex {
				t.Errorf("%d LexicalEither and %d Lexical calls, want %d and %d", len(es.calls), lex, tc.wantEither, tc.wantLex)
			}
			if resp.Trace.LexicalOp != tc.wantOp {
				t.Errorf("LexicalOp = %q, want %q", resp.Trace.LexicalOp, tc.wantOp)
			}
			if l := resp.Trace.Legs[mnemotype.LegLexical]; len(l) == 0 || l[0].ID != tc.wantFirst {
				t.Errorf("lexical leg %v, want %s first", l, tc.wantFirst)
			}
		})
	}
}

// TestRun_DensePanicWaitsForTheLexicalLeg: unscoped, a dense leg that
// panics on the caller's goroutine waits for the lexical leg on its own
// before the panic leaves Run, so that no leg outlives Run. Not parallel:
// it counts the process's goroutines.
func TestRun_DensePanicWaitsForTheLexicalLeg(t *testing.T) {
	vec := newVectors(t, corpus(t))
	vec.SearchFunc = func(dense.Query) ([]mnemotype.Hit, error) { panic("dense boom") }
	var lexicalDone atomic.Bool
	src := &fakeSource{t: t, LexicalFunc: func(context.Context, store.LexicalParams) ([]mnemotype.Hit, error) {
		time.Sleep(50 * time.Millisecond)
		lexicalDone.Store(true)
		return hits("a"), nil
	}}
	before := runtime.NumGoroutine()
	func() {
		defer func() {
			if p := recover(); p != "dense boom" {
				t.Errorf("recovered %v, want the dense leg's panic", p)
			}
		}()
		_, _ = recall.Run(context.Background(), sourceOf(src, vec), vec, request("alpha beta", 3))
	}()
	if !lexicalDone.Load() {
		t.Error("Run's panic left while the lexical leg still ran")
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("%d goroutines after the panic, %d before", n, before)
	}
}
