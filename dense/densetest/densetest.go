// Package densetest is the conformance suite of the dense-retrieval port
// (recall.Dense): every implementation runs Exercise. It checks the port's
// contract against a brute-force reference computed from the memories the
// suite writes:
//
//   - Search returns the exact top K of the scope by cosine similarity to
//     the query among the memories embedded by the query's model, best
//     first (the suite's scopes are small: an implementation walking an
//     approximate index above a size scans them exactly); ties by id,
//     except that scores equal to 1e-6 may come in either order (an
//     implementation may compute cosines in another precision); every field of the scope is honoured (project,
//     sessions, kinds, actors, time range, exclusions, metadata), and no
//     memory of another profile is ever returned;
//   - Score returns the cosine of each id of the profile embedded by the
//     model and leaves out the rest (unknown, another profile's, without an
//     embedding, another model's);
//   - a call sees every write the store committed before it began;
//   - a query of another dimension than the profile's embeddings is an
//     error wrapping mnemotype.ErrDimensionMismatch; a cancelled context
//     is an error wrapping context.Canceled.
package densetest

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/dense"
	"github.com/mnemo-dev/mnemo/internal/testenv"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/vector"
)

// Port is the dense-retrieval port under test.
type Port interface {
	Search(ctx context.Context, q dense.Query) ([]mnemotype.Hit, error)
	Score(ctx context.Context, q dense.Query, ids []string) ([]mnemotype.Hit, error)
}

// OpenFunc returns a fresh, empty store and the port under test over it.
type OpenFunc func(t *testing.T) (store.Store, Port)

// Exercise runs the suite.
func Exercise(t *testing.T, open OpenFunc) {
	t.Helper()
	for _, g := range []struct {
		name string
		run  func(*testing.T, OpenFunc)
	}{
		{"ExactTopK", exerciseTopK},
		{"Score", exerciseScore},
		{"SeesWrites", exerciseWrites},
		{"Errors", exerciseErrors},
		{"Concurrent", exerciseConcurrent},
	} {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			g.run(t, open)
		})
	}
}

const (
	dim   = 8
	model = "test-model"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// corpus writes the suite's memories: n of alice's, in 3 projects, 10
// sessions, 2 kinds, 3 actors, one per hour, with metadata; one in ten
// without an embedding and one in ten embedded by another model; and 40 of
// bob's, all very close to every query's direction (so a leak shows).
func corpus(t *testing.T, st store.Store, n int) []mnemotype.Memory {
	t.Helper()
	r := rand.New(rand.NewPCG(11, uint64(n)))
	var mems []mnemotype.Memory
	for i := range n {
		m := mnemotype.Memory{
			ID: fmt.Sprintf("a%04d", i), Profile: "alice", Content: fmt.Sprintf("memory %d", i),
			Project: fmt.Sprintf("p%d", i%3), Session: fmt.Sprintf("s%d", i%10), Actor: fmt.Sprintf("actor%d", i%3),
			Kind: mnemotype.KindEpisodic, Importance: mnemotype.DefaultImportance,
			CreatedAt: t0.Add(time.Duration(i) * time.Hour), OccurredAt: t0.Add(time.Duration(i) * time.Hour),
			AccessedAt: t0.Add(time.Duration(i) * time.Hour),
		}
		if i%4 == 1 {
			m.Kind = mnemotype.KindSemantic
		}
		tag := "common"
		if i%50 == 7 {
			tag = "rare"
		}
		m.Metadata = json.RawMessage(fmt.Sprintf(`{"tag":%q,"n":%d}`, tag, i%5))
		switch i % 10 {
		case 3: // no embedding
		case 6:
			m.Embedding, m.EmbeddingModel = randVec(r), "other-model"
		default:
			m.Embedding, m.EmbeddingModel = randVec(r), model
		}
		mems = append(mems, m)
	}
	for i := range 40 {
		m := mnemotype.Memory{ID: fmt.Sprintf("b%04d", i), Profile: "bob", Content: "bob's", Project: "p0", Session: "s0",
			Kind: mnemotype.KindEpisodic, Importance: mnemotype.DefaultImportance, CreatedAt: t0, OccurredAt: t0, AccessedAt: t0,
			Embedding: randVec(r), EmbeddingModel: model}
		mems = append(mems, m)
	}
	insert(t, st, mems...)
	return mems
}

func randVec(r *rand.Rand) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

func insert(t *testing.T, st store.Store, mems ...mnemotype.Memory) {
	t.Helper()
	if err := st.Insert(t.Context(), mems); err != nil {
		t.Fatalf("Insert: %v", err)
	}
}

// in is the reference of a scope: whether m is in sc.
func in(m mnemotype.Memory, sc mnemotype.Scope) bool {
	if m.Profile != sc.Profile || (sc.Project != "" && m.Project != sc.Project) ||
		(len(sc.Sessions) > 0 && !slices.Contains(sc.Sessions, m.Session)) ||
		(len(sc.Kinds) > 0 && !slices.Contains(sc.Kinds, m.Kind)) ||
		(len(sc.Actors) > 0 && !slices.Contains(sc.Actors, m.Actor)) ||
		slices.Contains(sc.Exclude, m.ID) ||
		(!sc.After.IsZero() && m.OccurredAt.Before(sc.After)) ||
		(!sc.Before.IsZero() && !m.OccurredAt.Before(sc.Before)) {
		return false
	}
	if len(sc.Metadata) > 0 {
		var md map[string]any
		if err := json.Unmarshal(m.Metadata, &md); err != nil {
			return false
		}
		for _, c := range sc.Metadata {
			if v, ok := md[c.Key]; !ok || fmt.Sprint(v) != fmt.Sprint(c.Value) {
				return false
			}
		}
	}
	return true
}

// ranking is the brute-force answer of a search: every hit of its scope,
// best first, and how many the search returns.
type ranking struct {
	all []mnemotype.Hit
	k   int
}

// hits ranks hits (a complete answer: k is all of them).
func hits(h []mnemotype.Hit) ranking { return ranking{all: h, k: len(h)} }

func (r ranking) top() []mnemotype.Hit { return r.all[:min(len(r.all), r.k)] }

// reference is the brute-force answer of a search.
func reference(mems []mnemotype.Memory, q dense.Query) ranking {
	var out []mnemotype.Hit
	for _, m := range mems {
		if m.EmbeddingModel != q.Model || !in(m, q.Scope) {
			continue
		}
		if sc, ok := vector.Cosine(q.Vector, m.Embedding); ok {
			out = append(out, mnemotype.Hit{ID: m.ID, Score: sc})
		}
	}
	sortHits(out)
	return ranking{all: out, k: q.K}
}

// sortHits orders hits best first, ties by id.
func sortHits(h []mnemotype.Hit) {
	slices.SortFunc(h, func(a, b mnemotype.Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}

// same reports how got differs from want: the same number of hits, each
// one's score within 1e-5 of the reference's, and at each position the
// reference's hit or one whose reference score ties with it to 1e-6 (an
// implementation may compute cosines in another precision, which orders
// near-ties its own way).
func same(got []mnemotype.Hit, want ranking) string {
	top := want.top()
	if len(got) != len(top) {
		return fmt.Sprintf("%d hits %v, want %d %v", len(got), ids(got), len(top), ids(top))
	}
	score := make(map[string]float64, len(want.all))
	for _, h := range want.all {
		score[h.ID] = h.Score
	}
	seen := map[string]bool{}
	for i, h := range got {
		s, ok := score[h.ID]
		if !ok || seen[h.ID] || math.Abs(h.Score-s) > 1e-5 || (h.ID != top[i].ID && math.Abs(s-top[i].Score) > 1e-6) {
			return fmt.Sprintf("hit %d = %s %.6f, want %s %.6f (got %v, want %v)", i, h.ID, h.Score, top[i].ID, top[i].Score,
				ids(got), ids(top))
		}
		seen[h.ID] = true
	}
	return ""
}

func ids(h []mnemotype.Hit) []string {
	out := make([]string, len(h))
	for i := range h {
		out[i] = h[i].ID
	}
	return out
}

func exerciseTopK(t *testing.T, open OpenFunc) {
	st, port := open(t)
	mems := corpus(t, st, 400)
	alice := func(f func(*mnemotype.Scope)) mnemotype.Scope {
		sc := mnemotype.Scope{Profile: "alice"}
		if f != nil {
			f(&sc)
		}
		return sc
	}
	meta := func(kv ...any) []mnemotype.MetadataMatch {
		var out []mnemotype.MetadataMatch
		for i := 0; i+1 < len(kv); i += 2 {
			out = append(out, mnemotype.MetadataMatch{Key: kv[i].(string), Value: kv[i+1]})
		}
		return out
	}
	scopes := []struct {
		name  string
		scope mnemotype.Scope
	}{
		{"Profile", alice(nil)},
		{"Project", alice(func(s *mnemotype.Scope) { s.Project = "p1" })},
		{"OneSession", alice(func(s *mnemotype.Scope) { s.Sessions = []string{"s4"} })},
		{"Sessions", alice(func(s *mnemotype.Scope) { s.Sessions = []string{"s1", "s2", "nope"} })},
		{"UnknownSession", alice(func(s *mnemotype.Scope) { s.Sessions = []string{"nope"} })},
		{"UnknownProject", alice(func(s *mnemotype.Scope) { s.Project = "nope" })},
		{"Kind", alice(func(s *mnemotype.Scope) { s.Kinds = []mnemotype.Kind{mnemotype.KindSemantic} })},
		{"Actors", alice(func(s *mnemotype.Scope) { s.Actors = []string{"actor0", "actor2"} })},
		{"TimeRange", alice(func(s *mnemotype.Scope) { s.After, s.Before = t0.Add(50*time.Hour), t0.Add(120*time.Hour) })},
		{"Exclude", alice(func(s *mnemotype.Scope) { s.Exclude = []string{"a0000", "a0001", "a0002", "a0004", "a0005"} })},
		{"Combined", alice(func(s *mnemotype.Scope) {
			s.Project, s.Sessions, s.Actors, s.After = "p0", []string{"s0", "s3", "s6"}, []string{"actor0"}, t0.Add(30*time.Hour)
		})},
		{"MetadataCommon", alice(func(s *mnemotype.Scope) { s.Metadata = meta("tag", "common") })},
		{"MetadataNumber", alice(func(s *mnemotype.Scope) { s.Metadata = meta("n", 2.0, "tag", "common") })},
		// Few memories keep the filter: the widening search must still
		// find every one of them.
		{"MetadataRare", alice(func(s *mnemotype.Scope) { s.Metadata = meta("tag", "rare") })},
		{"MetadataNone", alice(func(s *mnemotype.Scope) { s.Metadata = meta("tag", "absent") })},
		{"OtherProfile", mnemotype.Scope{Profile: "bob"}},
		{"EmptyProfile", mnemotype.Scope{Profile: "carol"}},
	}
	r := rand.New(rand.NewPCG(5, 8))
	for _, sc := range scopes {
		t.Run(sc.name, func(t *testing.T) {
			for qi := range 4 {
				for _, k := range []int{1, 7, 30, 1000} {
					q := dense.Query{Vector: randVec(r), Model: model, Scope: sc.scope, K: k, Serial: qi%2 == 1}
					got, err := port.Search(t.Context(), q)
					if err != nil {
						t.Fatalf("Search(k %d): %v", k, err)
					}
					if d := same(got, reference(mems, q)); d != "" {
						t.Fatalf("query %d, k %d: %s", qi, k, d)
					}
				}
			}
		})
	}
	t.Run("OtherModel", func(t *testing.T) {
		q := dense.Query{Vector: randVec(r), Model: "other-model", Scope: alice(nil), K: 10}
		got, err := port.Search(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		if d := same(got, reference(mems, q)); d != "" || len(got) == 0 {
			t.Fatalf("%s (%d hits)", d, len(got))
		}
	})
	t.Run("UnknownModel", func(t *testing.T) {
		got, err := port.Search(t.Context(), dense.Query{Vector: randVec(r), Model: "never", Scope: alice(nil), K: 10})
		if err != nil || len(got) != 0 {
			t.Fatalf("Search(unknown model) = %v, %v; want nothing", ids(got), err)
		}
	})
	t.Run("ZeroK", func(t *testing.T) {
		got, err := port.Search(t.Context(), dense.Query{Vector: randVec(r), Model: model, Scope: alice(nil)})
		if err != nil || len(got) != 0 {
			t.Fatalf("Search(K 0) = %v, %v; want nothing", ids(got), err)
		}
	})
}

func exerciseScore(t *testing.T, open OpenFunc) {
	st, port := open(t)
	mems := corpus(t, st, 100)
	r := rand.New(rand.NewPCG(6, 6))
	q := dense.Query{Vector: randVec(r), Model: model, Scope: mnemotype.Scope{Profile: "alice"}}
	// a0000-a0002 embedded by the model, a0003 without an embedding, a0006
	// by another model, b0001 bob's, and an unknown id.
	ask := []string{"a0002", "a0000", "a0003", "a0006", "b0001", "missing", "a0001"}
	got, err := port.Score(t.Context(), q, ask)
	if err != nil {
		t.Fatal(err)
	}
	var want []mnemotype.Hit
	for _, m := range mems {
		if sc, ok := vector.Cosine(q.Vector, m.Embedding); ok && m.Profile == "alice" && m.EmbeddingModel == model && slices.Contains(ask, m.ID) {
			want = append(want, mnemotype.Hit{ID: m.ID, Score: sc})
		}
	}
	sortHits(want)
	if len(want) != 3 {
		t.Fatalf("the suite's corpus changed: %d of %v scoreable, want 3", len(want), ask)
	}
	if d := same(got, hits(want)); d != "" {
		t.Errorf("Score(%v): %s", ask, d)
	}
	// Score reads only the profile of the scope.
	q.Scope.Sessions = []string{"s9"}
	if again, err := port.Score(t.Context(), q, ask); err != nil || same(again, hits(want)) != "" {
		t.Errorf("Score with a session filter = %v, %v; want %v (only the profile counts)", ids(again), err, ids(want))
	}
	if none, err := port.Score(t.Context(), q, nil); err != nil || len(none) != 0 {
		t.Errorf("Score(no ids) = %v, %v", ids(none), err)
	}
}

func exerciseWrites(t *testing.T, open OpenFunc) {
	st, port := open(t)
	mems := corpus(t, st, 100)
	ctx := t.Context()
	q := dense.Query{Vector: []float32{1, 2, 3, 4, 5, 6, 7, 8}, Model: model, Scope: mnemotype.Scope{Profile: "alice"}, K: 3}
	search := func() []mnemotype.Hit {
		t.Helper()
		got, err := port.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	before := search()
	if d := same(before, reference(mems, q)); d != "" {
		t.Fatal(d)
	}
	twin := mnemotype.Memory{ID: "twin", Profile: "alice", Content: "the query's twin", Session: "s1", Kind: mnemotype.KindEpisodic,
		Importance: mnemotype.DefaultImportance, CreatedAt: t0, OccurredAt: t0, AccessedAt: t0,
		Embedding: slices.Clone(q.Vector), EmbeddingModel: model}
	insert(t, st, twin)
	if got := search(); len(got) == 0 || got[0].ID != "twin" || math.Abs(got[0].Score-1) > 1e-5 {
		t.Fatalf("after inserting the query's twin: %v", ids(got))
	}
	away := []float32{-1, -2, -3, -4, -5, -6, -7, -8}
	if _, err := st.Update(ctx, store.UpdateParams{Profile: "alice", ID: "twin", Embedding: away, EmbeddingModel: model}); err != nil {
		t.Fatal(err)
	}
	if got := search(); slices.Contains(ids(got), "twin") {
		t.Fatalf("after turning the twin away: %v", ids(got))
	}
	if s, err := port.Score(ctx, q, []string{"twin"}); err != nil || len(s) != 1 || math.Abs(s[0].Score+1) > 1e-5 {
		t.Fatalf("Score(twin) after the update = %v, %v; want cosine -1", s, err)
	}
	if err := st.Delete(ctx, "alice", "twin"); err != nil {
		t.Fatal(err)
	}
	if s, err := port.Score(ctx, q, []string{"twin"}); err != nil || len(s) != 0 {
		t.Fatalf("Score(twin) after its deletion = %v, %v", s, err)
	}
	// A deleted session leaves every search.
	top := search()[0]
	var session string
	for _, m := range mems {
		if m.ID == top.ID {
			session = m.Session
		}
	}
	if _, err := st.DeleteMatching(ctx, store.DeleteParams{Profile: "alice", Session: session}); err != nil {
		t.Fatal(err)
	}
	mems = slices.DeleteFunc(mems, func(m mnemotype.Memory) bool { return m.Profile == "alice" && m.Session == session })
	q.K = 50
	if d := same(search(), reference(mems, q)); d != "" {
		t.Fatalf("after deleting session %s: %s", session, d)
	}
}

func exerciseErrors(t *testing.T, open OpenFunc) {
	st, port := open(t)
	corpus(t, st, 30)
	scope := mnemotype.Scope{Profile: "alice"}
	short := dense.Query{Vector: []float32{1, 0, 0, 0}, Model: model, Scope: scope, K: 5}
	if _, err := port.Search(t.Context(), short); !errors.Is(err, mnemotype.ErrDimensionMismatch) {
		t.Errorf("Search(4-d query, 8-d memories) = %v, want ErrDimensionMismatch", err)
	}
	if _, err := port.Score(t.Context(), short, []string{"a0000"}); !errors.Is(err, mnemotype.ErrDimensionMismatch) {
		t.Errorf("Score(4-d query, 8-d memories) = %v, want ErrDimensionMismatch", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	q := dense.Query{Vector: make([]float32, dim), Model: model, Scope: scope, K: 5}
	q.Vector[0] = 1
	if _, err := port.Search(ctx, q); !errors.Is(err, context.Canceled) {
		t.Errorf("Search(cancelled) = %v, want context.Canceled", err)
	}
	if _, err := port.Score(ctx, q, []string{"a0000"}); !errors.Is(err, context.Canceled) {
		t.Errorf("Score(cancelled) = %v, want context.Canceled", err)
	}
}

func exerciseConcurrent(t *testing.T, open OpenFunc) {
	st, port := open(t)
	corpus(t, st, 200)
	ctx := t.Context()
	var wg sync.WaitGroup
	wg.Go(func() {
		r := rand.New(rand.NewPCG(1, 2))
		for i := range 40 {
			m := mnemotype.Memory{ID: fmt.Sprintf("w%03d", i), Profile: "alice", Content: "written meanwhile", Session: "s1",
				Kind: mnemotype.KindEpisodic, Importance: mnemotype.DefaultImportance, CreatedAt: t0, OccurredAt: t0, AccessedAt: t0,
				Embedding: randVec(r), EmbeddingModel: model}
			if err := st.Insert(ctx, []mnemotype.Memory{m}); err != nil {
				t.Error(err)
				return
			}
			if i%3 == 0 {
				if err := st.Delete(ctx, "alice", fmt.Sprintf("a%04d", i)); err != nil {
					t.Error(err)
					return
				}
			}
		}
	})
	for w := range 3 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 3))
			for range 40 {
				q := dense.Query{Vector: randVec(r), Model: model, Scope: mnemotype.Scope{Profile: "alice", Sessions: []string{"s1", "s2"}}, K: 10}
				hits, err := port.Search(ctx, q)
				if err != nil {
					t.Error(err)
					return
				}
				if !slices.IsSortedFunc(hits, func(a, b mnemotype.Hit) int { return cmp.Compare(b.Score, a.Score) }) {
					t.Errorf("hits out of order: %v", hits)
				}
				if _, err := port.Score(ctx, q, ids(hits)); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	// Once the writers are done, a search sees all they wrote.
	final, err := st.List(ctx, store.ListParams{Profile: "alice", Limit: 1000, WithEmbedding: true})
	if err != nil {
		t.Fatal(err)
	}
	written := final.Memories
	q := dense.Query{Vector: randVec(rand.New(rand.NewPCG(9, 9))), Model: model, Scope: mnemotype.Scope{Profile: "alice"}, K: 25}
	got, err := port.Search(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if d := same(got, reference(written, q)); d != "" {
		t.Errorf("after the writers: %s", d)
	}
}

// Questions returns the questions of the locomo-dev dataset (../shared/
// datasets), the queries the scale measurements of the dense port use.
func Questions(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(testenv.Dataset(t, "locomo-dev"), "queries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var texts []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var q struct{ Text string }
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, q.Text)
	}
	return texts
}

// MeasureAgainstExact searches profile with each query vector (made by
// model) through approx, an approximate implementation, and through
// exact, for the top 10 and the top 30, and logs the share of the exact
// top k that approx found and both mean times.
func MeasureAgainstExact(t *testing.T, approx, exact Port, model, profile string, vecs [][]float32) {
	t.Helper()
	ctx := t.Context()
	for _, k := range []int{10, 30} {
		found, total := 0, 0
		var tApprox, tExact time.Duration
		for _, v := range vecs {
			q := dense.Query{Vector: v, Model: model, K: k, Scope: mnemotype.Scope{Profile: profile}, Serial: true}
			start := time.Now()
			want, err := exact.Search(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			tExact += time.Since(start)
			start = time.Now()
			got, err := approx.Search(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			tApprox += time.Since(start)
			for _, h := range got {
				if slices.ContainsFunc(want, func(w mnemotype.Hit) bool { return w.ID == h.ID }) {
					found++
				}
			}
			total += len(want)
		}
		n := time.Duration(max(1, len(vecs)))
		t.Logf("k %d, %d questions: finds %.4f of the exact top k; mean %v against %v (exact, in process, one CPU)",
			k, len(vecs), float64(found)/float64(max(1, total)), tApprox/n, tExact/n)
	}
}
