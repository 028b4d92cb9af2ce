package mnemo_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/store/sqlitestore"
)

// stubEmbedder is a fake embed.Embedder: Embed calls EmbedFunc (settable at
// run time with setEmbed) and records the batches it is asked for. New
// stubs embed with the hashing embedder under their own model name.
type stubEmbedder struct {
	model string
	dim   int

	mu        sync.Mutex
	embedFunc func(ctx context.Context, texts []string) ([][]float32, error)
	batches   [][]string
}

var _ embed.Embedder = (*stubEmbedder)(nil)

func newStub(model string, dim int) *stubEmbedder {
	s := &stubEmbedder{model: model, dim: dim}
	s.embedFunc = embed.NewHash(dim).Embed
	return s
}

// down makes the stub fail like an unreachable provider.
func (s *stubEmbedder) down() {
	s.setEmbed(func(context.Context, []string) ([][]float32, error) {
		return nil, errors.New("provider down: connection refused")
	})
}

// up makes the stub embed with the hashing embedder again.
func (s *stubEmbedder) up() { s.setEmbed(embed.NewHash(s.dim).Embed) }

func (s *stubEmbedder) setEmbed(f func(ctx context.Context, texts []string) ([][]float32, error)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.embedFunc = f
}

func (s *stubEmbedder) calls() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.batches)
}

func (s *stubEmbedder) Model() string { return s.model }
func (s *stubEmbedder) Dim() int      { return s.dim }

func (s *stubEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	s.mu.Lock()
	s.batches = append(s.batches, slices.Clone(texts))
	f := s.embedFunc
	s.mu.Unlock()
	return f(ctx, texts)
}

// openAt opens an engine on path with emb.
func openAt(t *testing.T, path string, emb embed.Embedder) *mnemo.Engine {
	t.Helper()
	e, err := mnemo.Open(path, &mnemo.Config{Embedder: emb, AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// denseOnly recalls text with the dense leg alone.
func denseOnly(t *testing.T, e *mnemo.Engine, profile, text string) *mnemo.RecallResult {
	t.Helper()
	res, err := e.Recall(t.Context(), mnemo.Query{Profile: profile, Text: text, Trace: true,
		Overrides: map[string]string{"keyword_weight": "0", "semantic_weight": "1", "min_relevance": "0"}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func embeddingModel(t *testing.T, e *mnemo.Engine, profile, id string) string {
	t.Helper()
	m, err := e.Get(t.Context(), profile, id)
	if err != nil {
		t.Fatal(err)
	}
	return m.EmbeddingModel
}

// TestEngine_ReembedAfterEmbedderFailure walks a provider outage: memories
// are kept without embeddings, recall degrades to the other legs and says
// so, and Reembed repairs the profile once the provider is back.
func TestEngine_ReembedAfterEmbedderFailure(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	emb := newStub("stub", 64)
	emb.down()
	e := openAt(t, filepath.Join(t.TempDir(), "mnemo.db"), emb)

	m, err := e.Remember(ctx, mnemo.Input{Profile: "me", Content: "Deployed Threadline v2.3 with the JWT auth fix"})
	if err != nil {
		t.Fatalf("Remember with a failing embedder: %v", err)
	}
	if m.Embedding != nil || m.EmbeddingModel != "" || embeddingModel(t, e, "me", m.ID) != "" {
		t.Fatalf("memory stored with embedding model %q", m.EmbeddingModel)
	}

	res, err := e.Recall(ctx, mnemo.Query{Profile: "me", Text: "Threadline JWT auth", Trace: true})
	if err != nil {
		t.Fatalf("Recall with a failing embedder: %v", err)
	}
	if len(res.Results) != 1 || res.Results[0].ID != m.ID {
		t.Fatalf("Recall = %v, want the memory through the lexical leg", ids(res))
	}
	if _, ok := res.Results[0].Legs[mnemotype.LegLexical]; !ok {
		t.Errorf("legs %v: want the lexical leg", res.Results[0].Legs)
	}
	if _, ok := res.Results[0].Legs[mnemotype.LegDense]; ok {
		t.Errorf("legs %v: the dense leg cannot have run", res.Results[0].Legs)
	}
	if why := res.Trace.Skipped[mnemotype.LegDense]; !strings.Contains(why, "query embedding failed") || !strings.Contains(why, "provider down") {
		t.Errorf("Trace.Skipped[dense] = %q, want the embedder's failure", why)
	}

	emb.up()
	other, err := e.Remember(ctx, mnemo.Input{Profile: "me", Content: "bought groceries for the weekend"})
	if err != nil || other.EmbeddingModel != "stub" {
		t.Fatalf("Remember with the embedder back: model %q, %v", other.EmbeddingModel, err)
	}
	st, err := e.Reembed(ctx, mnemo.ReembedParams{Profile: "me"})
	if err != nil {
		t.Fatalf("Reembed: %v", err)
	}
	if want := (mnemo.ReembedStats{Model: "stub", Scanned: 2, Embedded: 1, Current: 1}); !equalStats(st, want) {
		t.Errorf("Reembed = %+v, want %+v", st, want)
	}
	if got := embeddingModel(t, e, "me", m.ID); got != "stub" {
		t.Errorf("after Reembed the memory's embedding model is %q", got)
	}
	res = denseOnly(t, e, "me", "Deployed Threadline v2.3 with the JWT auth fix")
	if len(res.Results) == 0 || res.Results[0].ID != m.ID {
		t.Fatalf("dense recall = %v, want %s first", ids(res), m.ID)
	}
	if d, ok := res.Results[0].Legs[mnemotype.LegDense]; !ok || d.Score < 0.99 {
		t.Errorf("dense leg of the re-embedded memory = %+v (present %v), want a cosine of 1", d, ok)
	}
	if why, skipped := res.Trace.Skipped[mnemotype.LegDense]; skipped {
		t.Errorf("dense leg skipped after Reembed: %s", why)
	}

	st, err = e.Reembed(ctx, mnemo.ReembedParams{Profile: "me"})
	if err != nil || st.Embedded != 0 || st.Current != 2 {
		t.Errorf("second Reembed = %+v, %v; want nothing to do", st, err)
	}
}

func equalStats(a, b mnemo.ReembedStats) bool { return reflect.DeepEqual(a, b) }

// TestEngine_ReembedAll_NewDimension migrates a profile to a model of
// another dimension in an engine whose index already holds the old one.
func TestEngine_ReembedAll_NewDimension(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	old := openAt(t, path, newStub("small", 8))
	texts := []string{"the staging database lives on host db-7", "Melanie painted a sunrise over the lake", "my dog loves running on the beach"}
	var mems []mnemo.Memory
	for _, s := range texts {
		mems = append(mems, remember(t, old, mnemo.Input{Profile: "me", Content: s}))
	}
	remember(t, old, mnemo.Input{Profile: "you", Content: "another profile is left alone"})
	old.Close()

	e := openAt(t, path, newStub("big", 32))
	res := denseOnly(t, e, "me", texts[1])
	if why := res.Trace.Skipped[mnemotype.LegDense]; !strings.Contains(why, "dimension") {
		t.Errorf("before migration Skipped[dense] = %q, want a dimension mismatch", why)
	}

	st, err := e.Reembed(ctx, mnemo.ReembedParams{Profile: "me"})
	if err != nil || st.Embedded != 0 || st.Other["small"] != 3 || st.OtherCount() != 3 {
		t.Fatalf("Reembed without All = %+v, %v; want nothing embedded and 3 of model small", st, err)
	}
	st, err = e.Reembed(ctx, mnemo.ReembedParams{Profile: "me", All: true})
	if want := (mnemo.ReembedStats{Model: "big", Scanned: 3, Embedded: 3}); err != nil || !equalStats(st, want) {
		t.Fatalf("Reembed All = %+v, %v; want %+v", st, err, want)
	}
	for i, s := range texts {
		res := denseOnly(t, e, "me", s)
		if len(res.Results) == 0 || res.Results[0].ID != mems[i].ID {
			t.Errorf("dense recall of %q after migration = %v (skipped: %q)", s, ids(res), res.Trace.Skipped[mnemotype.LegDense])
		}
	}
	if st, err := e.Reembed(ctx, mnemo.ReembedParams{Profile: "you"}); err != nil || st.Other["small"] != 1 {
		t.Errorf("profile you = %+v, %v: another profile was touched", st, err)
	}
}

// TestEngine_ReembedAll_SameDimension shows the dense leg during a model
// change of one dimension: it compares only memories of the current model.
func TestEngine_ReembedAll_SameDimension(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	old := openAt(t, path, newStub("a", 64))
	x := remember(t, old, mnemo.Input{Profile: "me", Content: "refactored the parser to stream tokens"})
	old.Close()

	e := openAt(t, path, newStub("b", 64))
	z := remember(t, e, mnemo.Input{Profile: "me", Content: "the quarterly tax filing is due next week"})
	if got := ids(denseOnly(t, e, "me", "refactored the parser to stream tokens")); !slices.Equal(got, []string{z.ID}) {
		t.Errorf("dense recall mid-migration = %v, want only %s (model b)", got, z.ID)
	}
	if _, err := e.Reembed(ctx, mnemo.ReembedParams{Profile: "me", All: true}); err != nil {
		t.Fatal(err)
	}
	if got := ids(denseOnly(t, e, "me", "refactored the parser to stream tokens")); len(got) != 2 || got[0] != x.ID {
		t.Errorf("dense recall after migration = %v, want %s first", got, x.ID)
	}
}

func TestEngine_Reembed_BatchesAndProgress(t *testing.T) {
	t.Parallel()
	emb := newStub("stub", 16)
	emb.down()
	e := openAt(t, filepath.Join(t.TempDir(), "mnemo.db"), emb)
	for _, s := range []string{"one", "two", "three", "four", "five"} {
		remember(t, e, mnemo.Input{Profile: "me", Content: s})
	}
	emb.up()
	before := len(emb.calls())
	var progress []int
	st, err := e.Reembed(t.Context(), mnemo.ReembedParams{Profile: "me", BatchSize: 2,
		Progress: func(s mnemo.ReembedStats) { progress = append(progress, s.Embedded) }})
	if err != nil || st.Embedded != 5 {
		t.Fatalf("Reembed = %+v, %v", st, err)
	}
	var sizes []int
	for _, b := range emb.calls()[before:] {
		sizes = append(sizes, len(b))
	}
	if !slices.Equal(sizes, []int{2, 2, 1}) || !slices.Equal(progress, []int{2, 4, 5}) {
		t.Errorf("batches of %v, progress %v; want [2 2 1] and [2 4 5]", sizes, progress)
	}
}

func TestEngine_Reembed_EmbedderFailures(t *testing.T) {
	t.Parallel()

	t.Run("StopsWhenDown", func(t *testing.T) {
		t.Parallel()
		emb := newStub("stub", 16)
		emb.down()
		e := openAt(t, filepath.Join(t.TempDir(), "mnemo.db"), emb)
		for _, s := range []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8"} {
			remember(t, e, mnemo.Input{Profile: "me", Content: s})
		}
		before := len(emb.calls())
		st, err := e.Reembed(t.Context(), mnemo.ReembedParams{Profile: "me", BatchSize: 2})
		if err == nil || !strings.Contains(err.Error(), "provider down") || st.Failed != 6 || st.Embedded != 0 {
			t.Errorf("Reembed = %+v, %v; want a stop after 3 failed batches", st, err)
		}
		if n := len(emb.calls()) - before; n != 3 {
			t.Errorf("%d embedder calls, want 3", n)
		}
	})

	t.Run("StopsAtOnceWhenUnavailable", func(t *testing.T) {
		t.Parallel()
		emb := newStub("stub", 16)
		emb.down()
		e := openAt(t, filepath.Join(t.TempDir(), "mnemo.db"), emb)
		for _, s := range []string{"u1", "u2", "u3", "u4"} {
			remember(t, e, mnemo.Input{Profile: "me", Content: s})
		}
		emb.setEmbed(func(context.Context, []string) ([][]float32, error) {
			return nil, fmt.Errorf("%w: stub: circuit open", embed.ErrUnavailable)
		})
		before := len(emb.calls())
		st, err := e.Reembed(t.Context(), mnemo.ReembedParams{Profile: "me", BatchSize: 2})
		if !errors.Is(err, embed.ErrUnavailable) || st.Failed != 2 || st.Embedded != 0 {
			t.Errorf("Reembed = %+v, %v; want a stop after the first batch", st, err)
		}
		if n := len(emb.calls()) - before; n != 1 {
			t.Errorf("%d embedder calls, want 1", n)
		}
	})

	t.Run("OneBadBatch", func(t *testing.T) {
		t.Parallel()
		emb := newStub("stub", 16)
		emb.down()
		e := openAt(t, filepath.Join(t.TempDir(), "mnemo.db"), emb)
		var poisoned mnemo.Memory
		for _, s := range []string{"b1", "b2", "poison", "b4", "b5"} {
			m := remember(t, e, mnemo.Input{Profile: "me", Content: s})
			if s == "poison" {
				poisoned = m
			}
		}
		hash := embed.NewHash(16)
		emb.setEmbed(func(ctx context.Context, texts []string) ([][]float32, error) {
			if slices.Contains(texts, "poison") {
				return nil, errors.New("HTTP 400: input too long")
			}
			return hash.Embed(ctx, texts)
		})
		st, err := e.Reembed(t.Context(), mnemo.ReembedParams{Profile: "me", BatchSize: 2})
		if err == nil || !strings.Contains(err.Error(), "input too long") || st.Failed != 2 || st.Embedded != 3 {
			t.Errorf("Reembed = %+v, %v; want 2 failed, 3 embedded and an error", st, err)
		}
		if got := embeddingModel(t, e, "me", poisoned.ID); got != "" {
			t.Errorf("the failed memory has embedding model %q", got)
		}
	})

	t.Run("MalformedOutput", func(t *testing.T) {
		t.Parallel()
		emb := newStub("stub", 16)
		emb.down()
		e := openAt(t, filepath.Join(t.TempDir(), "mnemo.db"), emb)
		remember(t, e, mnemo.Input{Profile: "me", Content: "c1"})
		emb.setEmbed(func(ctx context.Context, texts []string) ([][]float32, error) {
			return [][]float32{make([]float32, 3)}, nil
		})
		st, err := e.Reembed(t.Context(), mnemo.ReembedParams{Profile: "me"})
		if !errors.Is(err, mnemo.ErrDimensionMismatch) || st.Failed != 1 {
			t.Errorf("Reembed = %+v, %v; want ErrDimensionMismatch", st, err)
		}
	})
}

func TestEngine_Reembed_LeavesConcurrentEditsAlone(t *testing.T) {
	t.Parallel()
	emb := newStub("stub", 16)
	emb.down()
	e := openAt(t, filepath.Join(t.TempDir(), "mnemo.db"), emb)
	a := remember(t, e, mnemo.Input{Profile: "me", Content: "old text"})
	b := remember(t, e, mnemo.Input{Profile: "me", Content: "other text"})
	hash := embed.NewHash(16)
	var edited atomic.Bool
	emb.setEmbed(func(ctx context.Context, texts []string) ([][]float32, error) {
		// A writer edits a while Reembed waits for the provider; the edit's
		// own embedding call comes back here and must not edit again.
		if edited.CompareAndSwap(false, true) {
			if _, err := e.Update(ctx, "me", a.ID, mnemo.Patch{Content: ref("new text")}); err != nil {
				t.Errorf("Update: %v", err)
			}
		}
		return hash.Embed(ctx, texts)
	})
	st, err := e.Reembed(t.Context(), mnemo.ReembedParams{Profile: "me"})
	if err != nil || st.Embedded != 1 || st.Changed != 1 {
		t.Fatalf("Reembed = %+v, %v; want 1 embedded, 1 changed", st, err)
	}
	res := denseOnly(t, e, "me", "new text")
	if len(res.Results) == 0 || res.Results[0].ID != a.ID || res.Results[0].Legs[mnemotype.LegDense].Score < 0.99 {
		t.Errorf("dense recall of the edited text = %v: its embedding must describe the new text", ids(res))
	}
	if got := embeddingModel(t, e, "me", b.ID); got != "stub" {
		t.Errorf("b's embedding model = %q", got)
	}
}

func TestEngine_Reembed_Invalid(t *testing.T) {
	t.Parallel()
	e := openAt(t, filepath.Join(t.TempDir(), "mnemo.db"), embed.NewHash(16))
	for _, p := range []mnemo.ReembedParams{{}, {Profile: " "}, {Profile: "me", BatchSize: -1}, {Profile: "me", BatchSize: mnemo.MaxListLimit + 1}} {
		if _, err := e.Reembed(t.Context(), p); !errors.Is(err, mnemo.ErrInvalid) {
			t.Errorf("Reembed(%+v) = %v, want ErrInvalid", p, err)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := e.Reembed(ctx, mnemo.ReembedParams{Profile: "me"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Reembed with a cancelled context = %v", err)
	}
	e.Close()
	if _, err := e.Reembed(t.Context(), mnemo.ReembedParams{Profile: "me"}); !errors.Is(err, mnemo.ErrClosed) {
		t.Errorf("Reembed on a closed engine = %v, want ErrClosed", err)
	}
}

// TestEngine_Reembed_NeverMixesDimensions checks that Reembed refuses, with
// nothing written, vectors whose dimension differs from the profile's
// embeddings of the same model, or of other models unless All is set.
func TestEngine_Reembed_NeverMixesDimensions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		old     string // model the embedded memory was stored with (8-d)
		model   string // model of the run, 16-d
		all     bool
		wantErr string // "" when the run must succeed
	}{
		{"same model, new dimension", "m", "m", false, "another model behind the same name"},
		{"same model, new dimension, all", "m", "m", true, "another model behind the same name"},
		{"other model, new dimension", "old", "m", false, "--all"},
		{"other model, new dimension, all", "old", "m", true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "mnemo.db")
			old := openAt(t, path, newStub(tc.old, 8))
			embedded := remember(t, old, mnemo.Input{Profile: "me", Content: "embedded with 8 dimensions"})
			old.Close()

			emb := newStub(tc.model, 16)
			emb.down()
			e := openAt(t, path, emb)
			bare := remember(t, e, mnemo.Input{Profile: "me", Content: "stored while the provider was down"})
			emb.up()
			st, err := e.Reembed(t.Context(), mnemo.ReembedParams{Profile: "me", All: tc.all})
			counts, cerr := e.EmbeddingCounts(t.Context(), "me")
			if cerr != nil {
				t.Fatal(cerr)
			}
			if tc.wantErr == "" {
				want := []mnemo.EmbeddingCount{{Profile: "me", Model: "m", Dim: 16, Count: 2}}
				if err != nil || st.Embedded != 2 || !reflect.DeepEqual(counts, want) {
					t.Fatalf("Reembed = %+v, %v; counts %+v, want both memories 16-d", st, err, counts)
				}
				return
			}
			if !errors.Is(err, mnemo.ErrDimensionMismatch) || !strings.Contains(err.Error(), tc.wantErr) || st.Embedded != 0 {
				t.Fatalf("Reembed = %+v, %v; want ErrDimensionMismatch mentioning %q", st, err, tc.wantErr)
			}
			want := []mnemo.EmbeddingCount{{Profile: "me", Count: 1}, {Profile: "me", Model: tc.old, Dim: 8, Count: 1}}
			if !reflect.DeepEqual(counts, want) {
				t.Errorf("after the refused run counts = %+v, want %+v (nothing written)", counts, want)
			}
			if got := embeddingModel(t, e, "me", bare.ID); got != "" {
				t.Errorf("memory %s embedded by %q", bare.ID, got)
			}
			if got := embeddingModel(t, e, "me", embedded.ID); got != tc.old {
				t.Errorf("memory %s now embedded by %q", embedded.ID, got)
			}
		})
	}
}

// TestEngine_RememberNeverMixesDimensions: after a model change to another
// dimension, new memories of a profile that holds the old vectors are
// refused, naming the fix, with nothing written; other profiles, and the
// same profile after a migration, take them.
func TestEngine_RememberNeverMixesDimensions(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	old := openAt(t, path, newStub("small", 8))
	remember(t, old, mnemo.Input{Profile: "me", Content: "embedded with the small model"})
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	e := openAt(t, path, newStub("large", 16))
	pre, err := embed.NewHash(16).Embed(ctx, []string{"precomputed"})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range [][]mnemo.Input{
		{{Profile: "me", Content: "embedded with the large model"}},
		{{Profile: "fresh", Content: "fine"}, {Profile: "me", Content: "refused"}},
		{{Profile: "me", Content: "precomputed", Embedding: pre[0]}},
	} {
		_, err := e.RememberBatch(ctx, in)
		if !errors.Is(err, mnemo.ErrDimensionMismatch) || !strings.Contains(err.Error(), "holds 8-d") ||
			!strings.Contains(err.Error(), "reembed --all") {
			t.Errorf("RememberBatch(%d inputs) = %v; want a dimension mismatch naming 8-d and reembed --all", len(in), err)
		}
	}
	for p, want := range map[string]int{"me": 1, "fresh": 0} {
		if n, err := e.Count(ctx, p); err != nil || n != want {
			t.Errorf("Count(%s) = %d, %v; want %d: a refused batch writes nothing", p, n, err, want)
		}
	}
	remember(t, e, mnemo.Input{Profile: "other", Content: "a profile without vectors takes any dimension"})
	if _, err := e.Reembed(ctx, mnemo.ReembedParams{Profile: "me", All: true}); err != nil {
		t.Fatal(err)
	}
	remember(t, e, mnemo.Input{Profile: "me", Content: "after the migration"})
}

// slowUpdates is a store whose updates wait a little before they run,
// widening the window between a writer's reading of a memory and its write.
type slowUpdates struct {
	store.Store
}

func (s slowUpdates) Update(ctx context.Context, p store.UpdateParams) (mnemo.Memory, error) {
	time.Sleep(200 * time.Microsecond)
	return s.Store.Update(ctx, p)
}

// TestEngine_Reembed_ConcurrentUpdatesLeaveNoStaleVector runs Reembed
// while other calls rewrite the memories' content: every memory that ends
// with an embedding has the embedding of its current content. (Reembed's
// write is conditional on the content it embedded, inside the store's
// transaction; a check before the write left stale vectors.)
func TestEngine_Reembed_ConcurrentUpdatesLeaveNoStaleVector(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	stub := newStub("stub", 32)
	stub.down()
	st, err := sqlitestore.Open(ctx, path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := mnemo.Open("", &mnemo.Config{Store: slowUpdates{st}, Embedder: stub, AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	var ins []mnemo.Input
	for i := range 400 {
		ins = append(ins, mnemo.Input{ID: fmt.Sprintf("m%03d", i), Profile: "me", Content: fmt.Sprintf("memory number %d", i)})
	}
	if _, err := e.RememberBatch(ctx, ins); err != nil {
		t.Fatal(err)
	}
	stub.up()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			c := fmt.Sprintf("rewritten %d", i)
			if _, err := e.Update(ctx, "me", fmt.Sprintf("m%03d", (i*37)%400), mnemo.Patch{Content: &c}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	stats, err := e.Reembed(ctx, mnemo.ReembedParams{Profile: "me", BatchSize: 16})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	hash := embed.NewHash(32)
	stale := 0
	for i := range 400 {
		ms, err := st.Get(ctx, store.GetParams{Profile: "me", IDs: []string{fmt.Sprintf("m%03d", i)}, WithEmbedding: true})
		if err != nil || len(ms) != 1 {
			t.Fatal(ms, err)
		}
		if ms[0].Embedding == nil {
			continue
		}
		want, _ := hash.Embed(ctx, []string{ms[0].Content})
		if !slices.Equal(ms[0].Embedding, want[0]) {
			stale++
		}
	}
	if stale > 0 {
		t.Errorf("%d memories hold the embedding of a content they no longer have (reembed stats %+v)", stale, stats)
	}
	if stats.Changed == 0 {
		t.Logf("no update raced with the reembed this time (stats %+v)", stats)
	}
}

// TestEngine_RunningEngineFollowsAMigration: an engine running with a new
// embedder skips the dense leg (saying why) while the profile holds only
// vectors of the old dimension, and uses it again — without a restart —
// once another process has re-embedded the profile with All.
func TestEngine_RunningEngineFollowsAMigration(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	old, err := mnemo.Open(path, &mnemo.Config{Embedder: newStub("old", 16), AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	var ins []mnemo.Input
	for i := range 30 {
		ins = append(ins, mnemo.Input{Profile: "me", Content: fmt.Sprintf("note %d about the walrus migration", i)})
	}
	if _, err := old.RememberBatch(ctx, ins); err != nil {
		t.Fatal(err)
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	server, err := mnemo.Open(path, &mnemo.Config{Embedder: newStub("new", 32), AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	recall := func() *mnemo.RecallResult {
		t.Helper()
		res, err := server.Recall(ctx, mnemo.Query{Profile: "me", Text: "walrus", Timings: true})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := recall(); !strings.Contains(res.Trace.Skipped[mnemotype.LegDense], "16-d") {
		t.Fatalf("before the migration: skipped = %v, want the dense leg skipped naming the old 16-d vectors", res.Trace.Skipped)
	}
	cli, err := mnemo.Open(path, &mnemo.Config{Embedder: newStub("new", 32), AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Reembed(ctx, mnemo.ReembedParams{Profile: "me", All: true}); err != nil {
		t.Fatal(err)
	}
	if err := cli.Close(); err != nil {
		t.Fatal(err)
	}
	res := recall()
	if reason, skipped := res.Trace.Skipped[mnemotype.LegDense]; skipped {
		t.Fatalf("after the migration by another process: dense leg skipped (%s)", reason)
	}
	if len(res.Trace.Legs[mnemotype.LegDense]) == 0 {
		t.Fatal("after the migration: the dense leg found nothing")
	}
}
