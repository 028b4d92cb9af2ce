package mnemo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/embed/glove"
	"github.com/mnemo-dev/mnemo/internal/pgtest"
	"github.com/mnemo-dev/mnemo/internal/sqlitedb"
	"github.com/mnemo-dev/mnemo/internal/testenv"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/store/sqlitestore"
)

type testBundle struct {
	path string
}

// setup opens an engine on a fresh SQLite file with the hashing embedder
// and background access flushing off.
func setup(t *testing.T) (*mnemo.Engine, *testBundle) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	e, err := mnemo.Open(path, &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e, &testBundle{path: path}
}

func remember(t *testing.T, e *mnemo.Engine, in mnemo.Input) mnemo.Memory {
	t.Helper()
	m, err := e.Remember(context.Background(), in)
	if err != nil {
		t.Fatalf("remember %q: %v", in.Content, err)
	}
	return m
}

func ids(res *mnemo.RecallResult) []string {
	out := make([]string, len(res.Results))
	for i, r := range res.Results {
		out[i] = r.ID
	}
	return out
}

func ptr[T any](v T) *T { return &v }

func TestEngine_RememberRecallForget(t *testing.T) {
	t.Parallel()
	e, _ := setup(t)
	ctx := context.Background()
	a := remember(t, e, mnemo.Input{Profile: "me", Session: "s1", Content: "Deployed Threadline v2.3 with the JWT auth fix"})
	b := remember(t, e, mnemo.Input{Profile: "me", Session: "s2", Content: "bought groceries for the weekend"})
	if a.Kind != mnemotype.KindEpisodic || a.Importance != 0.5 || a.EmbeddingModel != embed.HashModel || a.EmbeddingDim() != 256 {
		t.Fatalf("defaults not applied: %+v", a)
	}
	res, err := e.Recall(ctx, mnemo.Query{Profile: "me", Text: "Threadline JWT", Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) == 0 || res.Results[0].ID != a.ID {
		t.Fatalf("want %s first, got %v", a.ID, ids(res))
	}
	top := res.Results[0]
	if top.Content != a.Content || top.Legs["lexical"].Rank != 1 || top.Legs["dense"].Rank != 1 {
		t.Fatalf("unexpected top result %+v", top)
	}
	// The default convex combination: the best hit of both legs normalises
	// to 1, so (1·1 + 0.5·1)/(1 + 0.5) = 1, times the importance prior
	// 0.7+0.3·0.5.
	if want := (1.0*1 + 0.5*1) / 1.5 * 0.85; abs(top.Score-want) > 1e-12 {
		t.Fatalf("score = %v, want %v", top.Score, want)
	}
	if res.Trace == nil || res.Trace.Timings["total"] <= 0 || len(res.Trace.Legs["lexical"]) == 0 {
		t.Fatalf("trace incomplete: %+v", res.Trace)
	}
	if err := e.Forget(ctx, "me", a.ID); err != nil {
		t.Fatal(err)
	}
	res, err = e.Recall(ctx, mnemo.Query{Profile: "me", Text: "Threadline JWT"})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ids(res), a.ID) {
		t.Fatalf("forgotten memory recalled: %v", ids(res))
	}
	if _, err := e.Get(ctx, "me", a.ID); !errors.Is(err, mnemo.ErrNotFound) {
		t.Fatalf("get forgotten: %v", err)
	}
	if got, err := e.Get(ctx, "me", b.ID); err != nil || got.Content != b.Content {
		t.Fatalf("get: %v %+v", err, got)
	}
}

func abs(f float64) float64 {
	if f < 0 {
		return -f
	}
	return f
}

// TestEngine_ScopeIsolation checks every leg alone and fused: profile A
// never sees B, a session filter never leaks other sessions, project and
// kind filters and exclude hold.
func TestEngine_ScopeIsolation(t *testing.T) {
	t.Parallel()
	e, _ := setup(t)
	ctx := context.Background()
	text := "the deploy of the billing service failed on tuesday"
	mk := func(profile, project, session, kind, md string) mnemo.Memory {
		in := mnemo.Input{Profile: profile, Project: project, Session: session, Kind: kind, Content: text}
		if md != "" {
			in.Metadata = json.RawMessage(md)
		}
		return remember(t, e, in)
	}
	a1 := mk("A", "p1", "s1", "episodic", `{"speaker": "Caroline", "n": 1}`)
	a2 := mk("A", "p1", "s2", "semantic", `{"speaker": "Melanie", "n": 2, "pinned": true}`)
	a3 := mk("A", "p2", "s3", "episodic", "")
	b1 := mk("B", "p1", "s1", "episodic", `{"speaker": "Caroline"}`)
	// The memories share their text: duplicates are not collapsed here.
	legs := map[string]map[string]string{
		"lexical only": {"semantic_weight": "0", "collapse_duplicates": "false"},
		"dense only":   {"keyword_weight": "0", "collapse_duplicates": "false"},
		"all legs":     {"recency_weight": "1", "access_weight": "1", "collapse_duplicates": "false"},
		"pool policy":  {"candidate_policy": "pool", "recency_weight": "1", "access_weight": "1", "collapse_duplicates": "false"},
	}
	cases := []struct {
		name string
		q    mnemo.Query
		want []string
	}{
		{"profile A", mnemo.Query{Profile: "A"}, []string{a1.ID, a2.ID, a3.ID}},
		{"profile B", mnemo.Query{Profile: "B"}, []string{b1.ID}},
		{"unknown profile", mnemo.Query{Profile: "C"}, nil},
		{"session s1", mnemo.Query{Profile: "A", Sessions: []string{"s1"}}, []string{a1.ID}},
		{"sessions s1 s3", mnemo.Query{Profile: "A", Sessions: []string{"s1", "s3"}}, []string{a1.ID, a3.ID}},
		{"unknown session", mnemo.Query{Profile: "A", Sessions: []string{"nope"}}, nil},
		{"project p1", mnemo.Query{Profile: "A", Project: "p1"}, []string{a1.ID, a2.ID}},
		{"kind semantic", mnemo.Query{Profile: "A", Kinds: []mnemo.Kind{"semantic"}}, []string{a2.ID}},
		{"exclude", mnemo.Query{Profile: "A", Exclude: []string{a1.ID, b1.ID}}, []string{a2.ID, a3.ID}},
		{"metadata string", mnemo.Query{Profile: "A", Metadata: map[string]any{"speaker": "Caroline"}}, []string{a1.ID}},
		{"metadata number", mnemo.Query{Profile: "A", Metadata: map[string]any{"n": 2}}, []string{a2.ID}},
		{"metadata bool", mnemo.Query{Profile: "A", Metadata: map[string]any{"pinned": true}}, []string{a2.ID}},
		{"metadata absent", mnemo.Query{Profile: "A", Metadata: map[string]any{"speaker": nil}}, []string{a3.ID}},
		{"metadata and project", mnemo.Query{Profile: "A", Project: "p2", Metadata: map[string]any{"speaker": "Caroline"}}, nil},
		{"metadata of profile B", mnemo.Query{Profile: "B", Metadata: map[string]any{"speaker": "Melanie"}}, nil},
	}
	for legName, over := range legs {
		for _, c := range cases {
			t.Run(legName+"/"+c.name, func(t *testing.T) {
				q := c.q
				q.Text = "billing deploy failed"
				q.Overrides = over
				res, err := e.Recall(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				got := ids(res)
				slices.Sort(got)
				want := slices.Clone(c.want)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Fatalf("got %v, want %v", got, want)
				}
			})
		}
	}
}

func TestEngine_QueriesNeverBreakFTS(t *testing.T) {
	t.Parallel()
	e, _ := setup(t)
	ctx := context.Background()
	m := remember(t, e, mnemo.Input{Profile: "me", Content: "near the column x: we use AND and OR gates, price 5* with -x flag (see) café Zürich 東京"})
	queries := []string{
		"AND", "OR NEAR(", `"unbalanced`, `unbalanced"quote"`, "*", "-x", "col:x", ")(", "NEAR(a b, 3)", "a AND b OR c NOT d",
		"^start", "x*y", "{col1 col2}: x", "'single'", `\"escaped\"`, "café", "CAFE", "zürich", "東京", "🙂 emoji", "%_%", "\x00",
		"content:x", "memories_lex", "memories_fts", "'); DROP TABLE memories; --",
	}
	for _, q := range queries {
		t.Run(fmt.Sprintf("%q", q), func(t *testing.T) {
			if _, err := e.Recall(ctx, mnemo.Query{Profile: "me", Text: q}); err != nil {
				t.Fatalf("recall %q: %v", q, err)
			}
		})
	}
	// Plain-word semantics: the words are found, operators are not applied.
	for _, q := range []string{"café", "cafe", "Zürich", "東京", "column", "gates"} {
		res, err := e.Recall(ctx, mnemo.Query{Profile: "me", Text: q, Overrides: map[string]string{"semantic_weight": "0"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Results) != 1 || res.Results[0].ID != m.ID {
			t.Errorf("lexical %q: got %v", q, ids(res))
		}
	}
}

func TestEngine_InvalidInput(t *testing.T) {
	t.Parallel()
	e, _ := setup(t)
	ctx := context.Background()
	remember(t, e, mnemo.Input{Profile: "me", Content: "something"})
	nan := 0.0
	nan = nan / nan
	rememberCases := []struct {
		name string
		in   mnemo.Input
		want string
	}{
		{"no profile", mnemo.Input{Content: "x"}, "profile"},
		{"empty content", mnemo.Input{Profile: "me", Content: "  \n"}, "content"},
		{"importance NaN", mnemo.Input{Profile: "me", Content: "x", Importance: &nan}, "importance"},
		{"importance <0", mnemo.Input{Profile: "me", Content: "x", Importance: ptr(-0.1)}, "importance"},
		{"importance >1", mnemo.Input{Profile: "me", Content: "x", Importance: ptr(1.5)}, "importance"},
		{"bad kind", mnemo.Input{Profile: "me", Content: "x", Kind: "dream"}, "kind"},
		{"bad metadata", mnemo.Input{Profile: "me", Content: "x", Metadata: []byte(`[1]`)}, "metadata"},
		{"wrong dimension", mnemo.Input{Profile: "me", Content: "x", Embedding: make([]float32, 3)}, "dimension"},
		{"oversize", mnemo.Input{Profile: "me", Content: strings.Repeat("x", mnemo.MaxContentBytes+1)}, "bytes"},
	}
	for _, c := range rememberCases {
		t.Run("remember/"+c.name, func(t *testing.T) {
			_, err := e.Remember(ctx, c.in)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want mention of %q", err, c.want)
			}
			if !errors.Is(err, mnemo.ErrInvalid) && !errors.Is(err, mnemo.ErrDimensionMismatch) {
				t.Fatalf("err = %v is not ErrInvalid", err)
			}
		})
	}
	if n, _ := e.Count(ctx, "me"); n != 1 {
		t.Fatalf("invalid input wrote something: count %d", n)
	}
	dup := remember(t, e, mnemo.Input{Profile: "me", Content: "dup"})
	if _, err := e.RememberBatch(ctx, []mnemo.Input{{Profile: "me", Content: "new"}, {Profile: "me", ID: dup.ID, Content: "again"}}); !errors.Is(err, mnemo.ErrInvalid) {
		t.Fatalf("duplicate id: %v", err)
	}
	if n, _ := e.Count(ctx, "me"); n != 2 {
		t.Fatalf("a failed batch wrote something: count %d", n)
	}
	recallCases := []struct {
		name string
		q    mnemo.Query
		want string
	}{
		{"no profile", mnemo.Query{Text: "x"}, "profile"},
		{"empty", mnemo.Query{Profile: "me", Text: ""}, "query"},
		{"whitespace", mnemo.Query{Profile: "me", Text: " \t\n"}, "query"},
		{"negative limit", mnemo.Query{Profile: "me", Text: "x", Limit: -1}, "limit"},
		{"huge limit", mnemo.Query{Profile: "me", Text: "x", Limit: 1 << 20}, "limit"},
		{"weight above 5", mnemo.Query{Profile: "me", Text: "x", Overrides: map[string]string{"keyword_weight": "5.5"}}, "keyword_weight"},
		{"weight NaN", mnemo.Query{Profile: "me", Text: "x", Overrides: map[string]string{"semantic_weight": "NaN"}}, "semantic_weight"},
		{"unknown setting", mnemo.Query{Profile: "me", Text: "x", Overrides: map[string]string{"bogus": "1"}}, "bogus"},
		{"bad strategy", mnemo.Query{Profile: "me", Text: "x", Overrides: map[string]string{"strategy": "magic"}}, "strategy"},
		{"bad kind", mnemo.Query{Profile: "me", Text: "x", Kinds: []mnemo.Kind{"dream"}}, "kinds"},
	}
	for _, c := range recallCases {
		t.Run("recall/"+c.name, func(t *testing.T) {
			_, err := e.Recall(ctx, c.q)
			if !errors.Is(err, mnemo.ErrInvalid) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrInvalid mentioning %q", err, c.want)
			}
		})
	}
}

func TestEngine_QueryWithoutSearchableWords(t *testing.T) {
	t.Parallel()
	e, _ := setup(t)
	remember(t, e, mnemo.Input{Profile: "me", Content: "something"})
	res, err := e.Recall(context.Background(), mnemo.Query{Profile: "me", Text: "?!", Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Trace.Skipped["lexical"] == "" {
		t.Fatalf("lexical leg should be skipped and say why: %+v", res.Trace.Skipped)
	}
}

func TestEngine_Settings(t *testing.T) {
	t.Parallel()
	e, _ := setup(t)
	ctx := context.Background()
	s, err := e.Settings(ctx, "me")
	if err != nil || s != mnemo.DefaultSettings() {
		t.Fatalf("defaults: %v %+v", err, s)
	}
	s, err = e.UpdateSettings(ctx, "me", map[string]string{"semanticweight": "0.5", "rrf_k": "20"})
	if err != nil || s.SemanticWeight != 0.5 || s.RRFK != 20 {
		t.Fatalf("update: %v %+v", err, s)
	}
	if _, err := e.UpdateSettings(ctx, "me", map[string]string{"rrf_k": "30", "keyword_weight": "-1"}); !errors.Is(err, mnemo.ErrInvalid) {
		t.Fatalf("invalid update accepted: %v", err)
	}
	if s, _ := e.Settings(ctx, "me"); s.RRFK != 20 {
		t.Fatalf("a rejected update changed rrf_k to %v", s.RRFK)
	}
	if s, _ := e.Settings(ctx, "other"); s != mnemo.DefaultSettings() {
		t.Fatalf("settings leaked across profiles: %+v", s)
	}
	if _, err := e.UpdateSettings(ctx, "", map[string]string{"fetch_multiplier": "5"}); err != nil {
		t.Fatal(err)
	}
	if s, _ := e.Settings(ctx, "other"); s.FetchMultiplier != 5 {
		t.Fatalf("server-wide default not inherited: %+v", s)
	}
	// Live: the next recall uses the new weights (lexical off → no lexical leg).
	remember(t, e, mnemo.Input{Profile: "me", Content: "alpha beta"})
	if _, err := e.UpdateSettings(ctx, "me", map[string]string{"keyword_weight": "0"}); err != nil {
		t.Fatal(err)
	}
	res, err := e.Recall(ctx, mnemo.Query{Profile: "me", Text: "alpha", Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, ran := res.Trace.Legs["lexical"]; ran || res.Trace.Skipped["lexical"] == "" {
		t.Fatalf("lexical leg ran with weight 0: %+v", res.Trace)
	}
}

// TestEngine_SettingsOfAnotherWriter: an engine keeps the settings it read
// while the store's settings version stays the same; a change by another
// process, or by hand in SQL, is in force for its next recall.
func TestEngine_SettingsOfAnotherWriter(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "m.db")
	ctx := context.Background()
	open := func() *mnemo.Engine {
		e, err := mnemo.Open(path, &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.Close() })
		return e
	}
	a, b := open(), open()
	remember(t, a, mnemo.Input{Profile: "me", Content: "alpha beta"})
	weights := func(what string) map[string]float64 {
		t.Helper()
		// Twice: the second recall answers from what the first kept.
		var res *mnemo.RecallResult
		for range 2 {
			var err error
			if res, err = a.Recall(ctx, mnemo.Query{Profile: "me", Text: "alpha", Trace: true}); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		return res.Trace.Weights
	}
	if w := weights("defaults"); w[mnemotype.LegLexical] != 1 || w[mnemotype.LegDense] != 0.5 {
		t.Fatalf("default weights %v", w)
	}
	if _, err := b.UpdateSettings(ctx, "me", map[string]string{"keyword_weight": "0.25"}); err != nil {
		t.Fatal(err)
	}
	if w := weights("after another engine's update"); w[mnemotype.LegLexical] != 0.25 {
		t.Errorf("lexical weight %v after another engine set 0.25", w[mnemotype.LegLexical])
	}
	if _, err := b.UpdateSettings(ctx, "", map[string]string{"semantic_weight": "0.75"}); err != nil {
		t.Fatal(err)
	}
	if w := weights("after a server-wide update"); w[mnemotype.LegDense] != 0.75 {
		t.Errorf("dense weight %v after another engine set 0.75 server-wide", w[mnemotype.LegDense])
	}
	db, err := sqlitedb.Open(path, sqlitedb.Options{Pragmas: []string{"busy_timeout=10000"}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `UPDATE settings SET value = '0.5' WHERE profile = 'me' AND key = 'keyword_weight'`); err != nil {
		t.Fatal(err)
	}
	if w := weights("after an update by hand"); w[mnemotype.LegLexical] != 0.5 {
		t.Errorf("lexical weight %v after an UPDATE set 0.5", w[mnemotype.LegLexical])
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM settings`); err != nil {
		t.Fatal(err)
	}
	if s, err := a.Settings(ctx, "me"); err != nil || s != mnemo.DefaultSettings() {
		t.Errorf("settings after every stored one went = %+v, %v; want the defaults", s, err)
	}
}

func TestEngine_AccessTracking(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "m.db")
	ctx := context.Background()
	e, err := mnemo.Open(path, &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	m := remember(t, e, mnemo.Input{Profile: "me", Content: "tracked memory", CreatedAt: time.Now().Add(-time.Hour)})
	for i := 0; i < 3; i++ {
		if _, err := e.Recall(ctx, mnemo.Query{Profile: "me", Text: "tracked"}); err != nil {
			t.Fatal(err)
		}
	}
	// NoTouch recalls are not accesses. The accesses not yet written
	// count in the access leg already.
	for i := 0; i < 2; i++ {
		res, err := e.Recall(ctx, mnemo.Query{Profile: "me", Text: "tracked", NoTouch: true, Trace: true,
			Overrides: map[string]string{"access_weight": "0.2"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Results) != 1 {
			t.Fatalf("NoTouch recall returned %d memories, want 1", len(res.Results))
		}
		if l := res.Trace.Legs[mnemotype.LegAccess]; len(l) != 1 || l[0].Score != 3 {
			t.Errorf("access leg before the statistics are written = %+v, want count 3", l)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = mnemo.Open(path, &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim)})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	got, err := e.Get(ctx, "me", m.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.AccessCount != 3 || !got.AccessedAt.After(m.CreatedAt) {
		t.Fatalf("access not flushed on close: count %d accessed %v", got.AccessCount, got.AccessedAt)
	}
}

// TestEngine_SeesOtherWriters checks that an engine's in-memory index
// catches up with writes made through another engine on the same file (as
// another process would).
func TestEngine_SeesOtherWriters(t *testing.T) {
	t.Parallel()
	e1, b := setup(t)
	ctx := context.Background()
	remember(t, e1, mnemo.Input{Profile: "me", Content: "first memory about kayaks"})
	if _, err := e1.Recall(ctx, mnemo.Query{Profile: "me", Text: "kayaks"}); err != nil {
		t.Fatal(err)
	}
	e2, err := mnemo.Open(b.path, &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	m2 := remember(t, e2, mnemo.Input{Profile: "me", Content: "second memory about canoes"})
	res, err := e1.Recall(ctx, mnemo.Query{Profile: "me", Text: "canoes", Overrides: map[string]string{"keyword_weight": "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) == 0 || res.Results[0].ID != m2.ID {
		t.Fatalf("dense leg did not see the other writer's memory: %v", ids(res))
	}
	if err := e2.Forget(ctx, "me", m2.ID); err != nil {
		t.Fatal(err)
	}
	res, err = e1.Recall(ctx, mnemo.Query{Profile: "me", Text: "canoes"})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ids(res), m2.ID) {
		t.Fatal("deleted memory still recalled by the other engine")
	}
}

func TestEngine_Closed(t *testing.T) {
	t.Parallel()
	e, _ := setup(t)
	e.Close()
	if _, err := e.Recall(context.Background(), mnemo.Query{Profile: "me", Text: "x"}); !errors.Is(err, mnemo.ErrClosed) {
		t.Fatalf("recall after close: %v", err)
	}
	if _, err := e.Remember(context.Background(), mnemo.Input{Profile: "me", Content: "x"}); !errors.Is(err, mnemo.ErrClosed) {
		t.Fatalf("remember after close: %v", err)
	}
}

func TestLegWeightKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		leg, want string
		ok        bool
	}{
		{"lexical", "keyword_weight", true}, {" BM25 ", "keyword_weight", true}, {"keyword", "keyword_weight", true},
		{"dense", "semantic_weight", true}, {"Semantic", "semantic_weight", true}, {"vector", "semantic_weight", true},
		{"recency", "recency_weight", true}, {"access", "access_weight", true},
		{"graph", "", false}, {"", "", false},
	} {
		if got, ok := mnemo.LegWeightKey(tc.leg); got != tc.want || ok != tc.ok {
			t.Errorf("LegWeightKey(%q) = %q, %v; want %q, %v", tc.leg, got, ok, tc.want, tc.ok)
		}
	}
}

// TestEngine_TraceLevels: Trace explains fully, counterfactual ranks
// included; Timings gives the trace (timings, leg lists) without the extra
// fusions behind the counterfactuals; neither gives no trace.
func TestEngine_TraceLevels(t *testing.T) {
	t.Parallel()
	e, _ := setup(t)
	remember(t, e, mnemo.Input{Profile: "me", Content: "Deployed Threadline v2.3 with the JWT auth fix"})
	remember(t, e, mnemo.Input{Profile: "me", Content: "Threadline login uses JWT tokens now"})
	for _, tc := range []struct {
		name              string
		q                 mnemo.Query
		trace, counterfac bool
	}{
		{"Trace", mnemo.Query{Trace: true}, true, true},
		{"Timings", mnemo.Query{Timings: true}, true, false},
		{"Both", mnemo.Query{Trace: true, Timings: true}, true, true},
		{"Neither", mnemo.Query{}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.q
			q.Profile, q.Text = "me", "Threadline JWT"
			res, err := e.Recall(t.Context(), q)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.Trace != nil; got != tc.trace {
				t.Fatalf("trace present = %v, want %v", got, tc.trace)
			}
			if tc.trace && res.Trace.Timings["total"] <= 0 {
				t.Errorf("trace without a total time: %v", res.Trace.Timings)
			}
			if len(res.Results) == 0 {
				t.Fatal("no results")
			}
			if got := len(res.Results[0].Counterfactual) > 0; got != tc.counterfac {
				t.Errorf("counterfactual present = %v (%v), want %v", got, res.Results[0].Counterfactual, tc.counterfac)
			}
		})
	}
}

// TestEngine_TenantScoresArePrivate: whatever other profiles store,
// update or delete — the same words, many times over — every recall of
// alice (all legs, traced) returns the same memories in the same order
// with bit-identical fused scores and per-leg raw scores: one tenant
// cannot probe another's vocabulary through its own scores.
func TestEngine_TenantScoresArePrivate(t *testing.T) {
	t.Parallel()
	e, _ := setup(t)
	tenantScoresArePrivate(t, e)
}

// TestEngine_TenantScoresArePrivate_Postgres runs the same on the Postgres
// store.
func TestEngine_TenantScoresArePrivate_Postgres(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t)
	e, err := mnemo.Open(c.DSN("postgres")+"&schema=tenants", &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	tenantScoresArePrivate(t, e)
}

func tenantScoresArePrivate(t *testing.T, e *mnemo.Engine) {
	ctx := t.Context()
	words := strings.Fields("zebra migration river stone walrus quartz cedar ember fjord jwt login database staging deploy")
	sentence := func(i, n int) string {
		var w []string
		for j := range n {
			w = append(w, words[(i*7+j*j+j)%len(words)])
		}
		return strings.Join(w, " ")
	}
	var ins []mnemo.Input
	for i := range 120 {
		ins = append(ins, mnemo.Input{Profile: "alice", Session: fmt.Sprintf("s%d", i%3), Content: sentence(i, 3+i%6)})
	}
	if _, err := e.RememberBatch(ctx, ins); err != nil {
		t.Fatal(err)
	}
	queries := []string{"zebra migration", "river stone walrus", "jwt login", "how did the staging deploy go", "quartz"}
	type snapshot struct {
		ids    []string
		scores []float64
		legs   []map[string]mnemo.LegDetail
	}
	recallAll := func() []snapshot {
		t.Helper()
		var out []snapshot
		for _, q := range queries {
			for _, sessions := range [][]string{nil, {"s1"}} {
				res, err := e.Recall(ctx, mnemo.Query{Profile: "alice", Text: q, Sessions: sessions, Limit: 8, NoTouch: true,
					Overrides: map[string]string{"recency_weight": "0.3", "access_weight": "0.2"}})
				if err != nil {
					t.Fatal(err)
				}
				var s snapshot
				for _, r := range res.Results {
					s.ids, s.scores, s.legs = append(s.ids, r.ID), append(s.scores, r.Score), append(s.legs, r.Legs)
				}
				out = append(out, s)
			}
		}
		return out
	}
	base := recallAll()
	for round := range 5 {
		var others []mnemo.Input
		for i := range 150 {
			others = append(others, mnemo.Input{Profile: []string{"bob", "carol"}[i%2], Session: "s1",
				Content: strings.Repeat("zebra migration ", 1+i%4) + sentence(i+round, 2)})
		}
		ms, err := e.RememberBatch(ctx, others)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Forget(ctx, ms[0].Profile, ms[0].ID); err != nil {
			t.Fatal(err)
		}
		got := recallAll()
		for i := range base {
			if !slices.Equal(got[i].ids, base[i].ids) || !slices.Equal(got[i].scores, base[i].scores) {
				t.Fatalf("round %d, query %d: alice's results moved after other profiles wrote:\n was %v %v\n now %v %v",
					round, i, base[i].ids, base[i].scores, got[i].ids, got[i].scores)
			}
			for j := range base[i].legs {
				for leg, d := range base[i].legs[j] {
					if got[i].legs[j][leg].Score != d.Score || got[i].legs[j][leg].Rank != d.Rank {
						t.Fatalf("round %d, query %d, result %d: leg %s moved: %+v -> %+v", round, i, j, leg, d, got[i].legs[j][leg])
					}
				}
			}
		}
	}
	remember(t, e, mnemo.Input{Profile: "alice", Content: "zebra zebra migration migration"})
	if got := recallAll(); slices.Equal(got[0].scores, base[0].scores) {
		t.Fatal("a memory of alice's own left her scores unchanged: the comparison is blind")
	}
}

// TestEngine_LongExcludeList: a recall may leave out up to MaxListItems
// ids (the ids already in an agent's prompt); one more is refused with an
// error naming the field.
func TestEngine_LongExcludeList(t *testing.T) {
	t.Parallel()
	e, _ := setup(t)
	ctx := t.Context()
	a := remember(t, e, mnemo.Input{Profile: "me", Content: "the walrus migrates north"})
	b := remember(t, e, mnemo.Input{Profile: "me", Content: "a walrus on the ice"})
	exclude := []string{a.ID}
	for i := len(exclude); i < mnemo.MaxListItems; i++ {
		exclude = append(exclude, fmt.Sprintf("%036d", i))
	}
	res, err := e.Recall(ctx, mnemo.Query{Profile: "me", Text: "walrus", Exclude: exclude})
	if err != nil {
		t.Fatalf("recall excluding %d ids: %v", len(exclude), err)
	}
	if got := ids(res); !slices.Equal(got, []string{b.ID}) {
		t.Errorf("recall excluding %s: %v, want [%s]", a.ID, got, b.ID)
	}
	_, err = e.Recall(ctx, mnemo.Query{Profile: "me", Text: "walrus", Exclude: append(exclude, "one-more")})
	if !errors.Is(err, mnemo.ErrInvalid) || !strings.Contains(err.Error(), "exclude") {
		t.Errorf("recall excluding %d ids: %v, want ErrInvalid naming exclude", len(exclude)+1, err)
	}
}

// TestEngine_ReadOnlyStore: on a store opened for reading, recall works
// and Close succeeds (access statistics are dropped, not retried), and a
// write fails with ErrReadOnly.
func TestEngine_ReadOnlyStore(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e, b := setup(t)
	remember(t, e, mnemo.Input{Profile: "me", Content: "the walrus migrates north"})
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := sqlitestore.Open(ctx, b.path, sqlitestore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ro, err := mnemo.Open("", &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), Store: st, AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	res, err := ro.Recall(ctx, mnemo.Query{Profile: "me", Text: "walrus"})
	if err != nil || len(res.Results) != 1 {
		t.Fatalf("recall on a read-only store: %v, %v", res, err)
	}
	if _, err := ro.Remember(ctx, mnemo.Input{Profile: "me", Content: "another"}); !errors.Is(err, mnemotype.ErrReadOnly) {
		t.Errorf("remember on a read-only store: %v, want ErrReadOnly", err)
	}
	if err := ro.Close(); err != nil {
		t.Errorf("Close after a recall on a read-only store: %v", err)
	}
}

// TestEngine_TimesRoundTripExactly: any creation time in years 0001-9999
// reads back to the nanosecond (nanoseconds since 1970 in an int64 covered
// 1678-2262: year 3000 came back as 1830); other years are refused naming
// the field, and nothing is written.
func TestEngine_TimesRoundTripExactly(t *testing.T) {
	t.Parallel()
	e, _ := setup(t)
	ctx := t.Context()
	for i, at := range []time.Time{
		time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(1500, 6, 15, 12, 0, 0, 123456789, time.UTC),
		time.Date(2023, 5, 8, 13, 56, 0, 0, time.FixedZone("CEST", 2*3600)),
	} {
		m := remember(t, e, mnemo.Input{Profile: "me", Content: fmt.Sprintf("memory %d", i), CreatedAt: at})
		got, err := e.Get(ctx, "me", m.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !got.CreatedAt.Equal(at) || got.CreatedAt.Location() != time.UTC {
			t.Errorf("created %s, read back %s", at.Format(time.RFC3339Nano), got.CreatedAt.Format(time.RFC3339Nano))
		}
	}
	for _, at := range []time.Time{time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)} {
		_, err := e.Remember(ctx, mnemo.Input{Profile: "me", Content: "out of range", CreatedAt: at})
		if !errors.Is(err, mnemo.ErrInvalid) || !strings.Contains(err.Error(), "created_at") {
			t.Errorf("created %v: %v, want ErrInvalid naming created_at", at, err)
		}
	}
	if n, err := e.Count(ctx, "me"); err != nil || n != 5 {
		t.Errorf("Count = %d, %v; want 5", n, err)
	}
}

// TestOpen_DefaultEmbedder: without Config.Embedder, the engine uses the
// built-in model when it is installed under Home, and otherwise embeds
// nothing: memories are stored without embeddings (not counted as
// deferred), recall skips the dense leg and says why, reembed refuses —
// never the hashing embedder.
func TestOpen_DefaultEmbedder(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	t.Run("NotInstalled", func(t *testing.T) {
		t.Parallel()
		e, err := mnemo.Open(filepath.Join(t.TempDir(), "mnemo.db"), &mnemo.Config{Home: t.TempDir(), AccessFlushInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if m := e.Embedder().Model(); m != "none" {
			t.Fatalf("default embedder without a model: %s", m)
		}
		res, err := e.Write(ctx, []mnemo.Input{{Profile: "me", Content: "the walrus migrates north"}, {Profile: "me", Content: "given a vector",
			Embedding: []float32{1, 0, 0}, EmbeddingModel: "mine"}})
		if err != nil || res.Deferred != 0 || res.EmbedErr != nil || res.Memories[0].Embedding != nil || len(res.Memories[1].Embedding) != 3 {
			t.Fatalf("Write = %+v, %v; want the first stored without an embedding, nothing deferred", res, err)
		}
		got, err := e.Recall(ctx, mnemo.Query{Profile: "me", Text: "walrus", Trace: true})
		if err != nil || len(got.Results) == 0 || got.Results[0].ID != res.Memories[0].ID {
			t.Fatalf("Recall = %+v, %v", got, err)
		}
		if why := got.Trace.Skipped["dense"]; !strings.Contains(why, "not installed") {
			t.Errorf("the trace says the dense leg was skipped because %q", why)
		}
		if _, err := e.Reembed(ctx, mnemo.ReembedParams{Profile: "me"}); !errors.Is(err, mnemo.ErrNoEmbedder) {
			t.Errorf("Reembed: %v, want ErrNoEmbedder", err)
		}
		c := "the walrus migrates south"
		m, err := e.Update(ctx, "me", res.Memories[1].ID, mnemo.Patch{Content: &c})
		if err != nil || m.Embedding != nil {
			t.Errorf("Update of the content: %+v, %v; want the stale vector cleared", m, err)
		}
	})
	t.Run("Installed", func(t *testing.T) {
		t.Parallel()
		home := testenv.Home(t)
		testenv.Model(t, glove.DefaultPath, glove.Load, glove.ErrModelMissing) // skips without the model, unless CI
		e, err := mnemo.Open(filepath.Join(t.TempDir(), "mnemo.db"), &mnemo.Config{Home: home, AccessFlushInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if m := e.Embedder().Model(); m != glove.DefaultName {
			t.Errorf("default embedder with the model installed: %s, want %s", m, glove.DefaultName)
		}
	})
}

// TestEngine_CollapseDuplicates: copies of one content (but for case,
// punctuation and spacing) come back as their best-ranked copy listing the
// others, and the next results take their places; the setting turns it
// off.
func TestEngine_CollapseDuplicates(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e, _ := setup(t)
	var copies []string
	for i, c := range []string{"The deploy failed!", "the deploy  FAILED", "The deploy failed.", "The deploy failed"} {
		copies = append(copies, remember(t, e, mnemo.Input{Profile: "me", Session: fmt.Sprintf("s%d", i), Content: c}).ID)
	}
	other := remember(t, e, mnemo.Input{Profile: "me", Content: "the deploy of the billing service"}).ID
	third := remember(t, e, mnemo.Input{Profile: "me", Content: "deploy notes"}).ID
	res, err := e.Recall(ctx, mnemo.Query{Profile: "me", Text: "deploy failed", Limit: 3, Overrides: map[string]string{"min_relevance": "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(res); len(got) != 3 || !slices.Contains(copies, got[0]) || !slices.Contains(got, other) || !slices.Contains(got, third) {
		t.Fatalf("collapsed recall = %v; want one copy first, then %s and %s", got, other, third)
	}
	dups := append([]string{res.Results[0].ID}, res.Results[0].Duplicates...)
	slices.Sort(dups)
	if want := slices.Sorted(slices.Values(copies)); !slices.Equal(dups, want) {
		t.Errorf("the first result and its duplicates = %v, want %v", dups, want)
	}
	for i, r := range res.Results {
		if r.Rank != i+1 {
			t.Errorf("result %d has rank %d", i, r.Rank)
		}
	}
	res, err = e.Recall(ctx, mnemo.Query{Profile: "me", Text: "deploy failed", Limit: 3, Overrides: map[string]string{"collapse_duplicates": "false"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(res); len(got) != 3 || !slices.Contains(copies, got[1]) || res.Results[0].Duplicates != nil {
		t.Errorf("collapse_duplicates=false: %v", got)
	}
}

// feedCounting counts the reads of the change feed.
type feedCounting struct {
	*sqlitestore.Store
	pages atomic.Int64
}

func (s *feedCounting) Changes(ctx context.Context, p store.ChangesParams) (store.ChangeSet, error) {
	s.pages.Add(1)
	return s.Store.Changes(ctx, p)
}

// TestEngine_CatalogReadOnlyWhenUsed: a recall reads the in-process
// indexes (and so loads them) only when a step of it asks them: not with
// the dense leg off and the lexical leg in the store; with the lexical leg
// in process, yes. The trace says where the lexical leg ranked.
func TestEngine_CatalogReadOnlyWhenUsed(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	for _, inStore := range []bool{true, false} {
		st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "mnemo.db"), sqlitestore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		fc := &feedCounting{Store: st}
		e, err := mnemo.Open("", &mnemo.Config{Store: fc, Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1,
			LexicalInStore: inStore})
		if err != nil {
			t.Fatal(err)
		}
		var ins []mnemo.Input
		for i := range 50 {
			ins = append(ins, mnemo.Input{Profile: "alice", Content: fmt.Sprintf("deploy note %d", i)})
		}
		if _, err := e.RememberBatch(ctx, ins); err != nil {
			t.Fatal(err)
		}
		fc.pages.Store(0)
		res, err := e.Recall(ctx, mnemo.Query{Profile: "alice", Text: "deploy", Limit: 3, Overrides: map[string]string{"semantic_weight": "0"},
			Trace: true})
		if err != nil || len(res.Results) == 0 {
			t.Fatalf("recall: %v, %v", res, err)
		}
		if n := fc.pages.Load(); (n == 0) != inStore {
			t.Errorf("lexical leg in the store %v, dense leg off: the catalog read %d pages of the change feed", inStore, n)
		}
		want := map[bool]string{true: "the store's full-text index", false: "the in-process full-text index"}[inStore]
		if got := res.Trace.LexicalSearch; got != want {
			t.Errorf("lexical leg in the store %v: the trace says it ranked in %q, want %q", inStore, got, want)
		}
		e.Close()
	}
}

// TestEngine_CoverageFromTheTextIndex: the relevance estimate reads which
// query words the top results hold from the in-process full-text index,
// and finds what tokenizing their texts finds (an engine whose store
// answers the lexical leg reads the texts): the same coverage, results,
// scores and relevance.
func TestEngine_CoverageFromTheTextIndex(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	cfg := mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1}
	inProcess, err := mnemo.Open(path, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer inProcess.Close()
	words := strings.Fields("Café running runs lakes Lake hiking photos Pottery class Müller naïve 2023 adoption")
	actors := []string{"", "Melanie", "Caroline", "Jürgen"}
	var ins []mnemo.Input
	for i := range 400 {
		ins = append(ins, mnemo.Input{Profile: "alice", Session: fmt.Sprintf("s%d", i%4), Actor: actors[i%len(actors)],
			Content: fmt.Sprintf("%s %s, %s! note %d", words[i%len(words)], words[(i/3)%len(words)], words[(i/7)%len(words)], i)})
	}
	if _, err := inProcess.RememberBatch(ctx, ins); err != nil {
		t.Fatal(err)
	}
	inStoreCfg := cfg
	inStoreCfg.LexicalInStore = true
	inStore, err := mnemo.Open(path, &inStoreCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer inStore.Close()
	var partial int
	for _, q := range []mnemo.Query{
		{Text: "cafe lake melanie"},
		{Text: "running jurgen pottery zzzunknown"},
		{Text: "naive hikes caroline photo", Sessions: []string{"s2"}},
		{Text: "muller adopted 2023"},
		{Text: "zzzunknown yyyunknown"},
	} {
		q.Profile, q.Limit, q.Trace, q.NoTouch = "alice", 5, true, true
		q.Overrides = map[string]string{"min_relevance": "0"}
		got, err := inProcess.Recall(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		want, err := inStore.Recall(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if got.Trace.LexicalSearch != "the in-process full-text index" || want.Trace.LexicalSearch != "the store's full-text index" {
			t.Fatalf("%q: lexical legs in %q and %q", q.Text, got.Trace.LexicalSearch, want.Trace.LexicalSearch)
		}
		g, w := got.Trace.Relevance.Evidence.Coverage, want.Trace.Relevance.Evidence.Coverage
		if g != w {
			t.Errorf("%q: coverage %v by the text index, %v by the texts", q.Text, g, w)
		}
		if g > 0 && g < 1 {
			partial++
		}
		if len(got.Results) != len(want.Results) {
			t.Fatalf("%q: %d results against %d", q.Text, len(got.Results), len(want.Results))
		}
		for i := range got.Results {
			// The two full-text indexes sum BM25 in their own order: the
			// last bits of a score may differ.
			near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-12*max(1, math.Abs(x)) }
			if a, b := got.Results[i], want.Results[i]; a.ID != b.ID || !near(a.Score, b.Score) || !near(a.Relevance, b.Relevance) {
				t.Errorf("%q #%d: %s %v %v against %s %v %v", q.Text, i+1, a.ID, a.Score, a.Relevance, b.ID, b.Score, b.Relevance)
			}
		}
	}
	if partial == 0 {
		t.Error("no query covered part of its words: the case tests little")
	}
}
