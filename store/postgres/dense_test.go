package postgres_test

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"sync/atomic"
	"testing"

	"github.com/mnemo-dev/mnemo/dense"
	"github.com/mnemo-dev/mnemo/dense/densetest"
	"github.com/mnemo-dev/mnemo/internal/pgtest"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/store/postgres"
	"github.com/mnemo-dev/mnemo/vector"
)

// TestDense_Conformance runs the dense port's conformance suite on the
// dense leg in SQL (exact scans: the suite's scopes are small).
func TestDense_Conformance(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t)
	var n atomic.Int64
	densetest.Exercise(t, func(t *testing.T) (store.Store, densetest.Port) {
		s, err := postgres.Open(t.Context(), c.DSN("postgres"), postgres.Options{Schema: fmt.Sprintf("d%d", n.Add(1)), MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		d := s.Dense()
		if d == nil {
			_, why := s.Vectors()
			t.Fatalf("Dense() = nil: %s", why)
		}
		return s, d
	})
}

// TestDense_ConformanceHNSW runs the conformance suite with every
// profile indexed and every scope of one memory or more walking its HNSW
// index (ExactBelow 1): on the suite's small corpora (at most a few
// hundred memories; ef_search at least 200) a walk is exact, so the suite
// checks that the HNSW path honours every field of the scope, the model,
// exclusions and other profiles as the exact path does.
func TestDense_ConformanceHNSW(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t)
	var n atomic.Int64
	densetest.Exercise(t, func(t *testing.T) (store.Store, densetest.Port) {
		s, err := postgres.Open(t.Context(), c.DSN("postgres"), postgres.Options{Schema: fmt.Sprintf("h%d", n.Add(1)), MaxConns: 4, ExactBelow: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s, indexing{s, s.Dense()}
	})
}

// indexing is the SQL leg with the store's HNSW indexes built before each
// search (IndexVectors builds only what is missing).
type indexing struct {
	s *postgres.Store
	*postgres.Dense
}

func (x indexing) Search(ctx context.Context, q dense.Query) ([]mnemotype.Hit, error) {
	if _, err := x.s.IndexVectors(ctx, 1, nil); err != nil && ctx.Err() == nil {
		return nil, err
	}
	return x.Dense.Search(ctx, q)
}

// TestDense_AccessLeavesVectors: recording accesses, and editing a
// memory's text, do not rewrite its row of memory_vectors (whose HNSW
// index is costly to write); changing its embedding does.
func TestDense_AccessLeavesVectors(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t)
	ctx := t.Context()
	s, err := postgres.Open(ctx, c.DSN("postgres"), postgres.Options{Schema: "acc"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := mnemotype.Memory{ID: "a", Profile: "p", Content: "first", Kind: mnemotype.KindEpisodic, Importance: 0.5,
		CreatedAt: t0, OccurredAt: t0, AccessedAt: t0, Embedding: []float32{1, 2, 3}, EmbeddingModel: "m"}
	if err := s.Insert(ctx, []mnemotype.Memory{m}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	version := func() string {
		t.Helper()
		var x string
		if err := conn.QueryRow(ctx, `SELECT xmin::text FROM acc.memory_vectors WHERE profile = 'p' AND id = 'a'`).Scan(&x); err != nil {
			t.Fatal(err)
		}
		return x
	}
	before := version()
	if err := s.RecordAccess(ctx, []store.Access{{Profile: "p", ID: "a", At: t0.Add(time.Hour), Count: 3}}); err != nil {
		t.Fatal(err)
	}
	text := "second"
	if _, err := s.Update(ctx, store.UpdateParams{Profile: "p", ID: "a", Content: &text}); err != nil {
		t.Fatal(err)
	}
	if after := version(); after != before {
		t.Fatalf("memory_vectors' row rewritten (xmin %s, then %s) by an access and an edit of the text", before, after)
	}
	if _, err := s.Update(ctx, store.UpdateParams{Profile: "p", ID: "a", Embedding: []float32{3, 2, 1}, EmbeddingModel: "m"}); err != nil {
		t.Fatal(err)
	}
	if after := version(); after == before {
		t.Fatal("memory_vectors' row left as it was by a new embedding")
	}
	got, err := s.Dense().Score(ctx, dense.Query{Vector: []float32{3, 2, 1}, Model: "m", Scope: mnemotype.Scope{Profile: "p"}}, []string{"a"})
	if err != nil || len(got) != 1 || math.Abs(got[0].Score-1) > 1e-6 {
		t.Fatalf("Score after the new embedding = %v, %v; want cosine 1", got, err)
	}
}

// TestDense_DeletesTakeVectors: deleting memories (by id, by scope, a
// whole profile) deletes their rows of memory_vectors in the same
// transaction, and nobody else's.
func TestDense_DeletesTakeVectors(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t)
	ctx := t.Context()
	s, err := postgres.Open(ctx, c.DSN("postgres"), postgres.Options{Schema: "del"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewPCG(9, 9))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mems []mnemotype.Memory
	for _, p := range []string{"a", "b"} {
		for i := range 20 {
			mems = append(mems, mnemotype.Memory{ID: fmt.Sprintf("m%02d", i), Profile: p, Session: fmt.Sprintf("s%d", i%2),
				Content: "x", Kind: mnemotype.KindEpisodic, Importance: 0.5, CreatedAt: t0, OccurredAt: t0, AccessedAt: t0,
				Embedding: gauss(r, nil, 1), EmbeddingModel: "m"})
		}
	}
	if err := s.Insert(ctx, mems); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// check compares each profile's vectors with its memories, all
	// embedded.
	check := func(step string, want map[string]int) {
		t.Helper()
		rows, err := conn.Query(ctx, `SELECT coalesce(m.profile, v.profile), count(m.id), count(v.id) FROM del.memories m
			FULL JOIN del.memory_vectors v ON v.profile = m.profile AND v.id = m.id GROUP BY 1 ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for rows.Next() {
			var p string
			var nm, nv int
			if err := rows.Scan(&p, &nm, &nv); err != nil {
				t.Fatal(err)
			}
			if nm != nv {
				t.Errorf("%s: profile %s has %d memories and %d vectors", step, p, nm, nv)
			}
			got[p] = nv
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got, want) {
			t.Errorf("%s: vectors per profile %v, want %v", step, got, want)
		}
	}
	check("inserted", map[string]int{"a": 20, "b": 20})
	if err := s.Delete(ctx, "a", "m03"); err != nil {
		t.Fatal(err)
	}
	check("one deleted", map[string]int{"a": 19, "b": 20})
	if n, err := s.DeleteMatching(ctx, store.DeleteParams{Profile: "a", Session: "s0"}); err != nil || n != 10 {
		t.Fatalf("DeleteMatching = %d, %v; want 10", n, err)
	}
	check("a session deleted", map[string]int{"a": 9, "b": 20})
	if _, err := s.DeleteProfile(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	check("a profile deleted", map[string]int{"a": 9})
	// A vector an older mnemo left behind when it deleted its memory is
	// replaced when a memory of that id is written again.
	if _, err := conn.Exec(ctx, `INSERT INTO del.memory_vectors (profile, id, model, dim, vec)
		SELECT profile, 'm03', model, dim, vec FROM del.memory_vectors WHERE profile = 'a' AND id = 'm01'`); err != nil {
		t.Fatal(err)
	}
	again := mems[3]
	again.Embedding = gauss(r, nil, 1)
	if err := s.Insert(ctx, []mnemotype.Memory{again}); err != nil {
		t.Fatal(err)
	}
	check("an id written again", map[string]int{"a": 10})
	got, err := s.Dense().Score(ctx, dense.Query{Vector: again.Embedding, Model: "m", Scope: mnemotype.Scope{Profile: "a"}}, []string{"m03"})
	if err != nil || len(got) != 1 || math.Abs(got[0].Score-1) > 1e-6 {
		t.Fatalf("Score of the id written again = %v, %v; want cosine 1 with its new embedding", got, err)
	}
}

// annCorpus writes n memories of profile "big" (32-d vectors around 40
// centres, 12 sessions, projects p0 and p1 alternating) and 300 of
// "small", all near the centres (so that a leak between profiles shows),
// and returns big's.
func annCorpus(t *testing.T, s *postgres.Store, n int) []mnemotype.Memory {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 7))
	centres := make([][]float32, 40)
	for i := range centres {
		centres[i] = gauss(r, nil, 1)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mem := func(profile string, i int, v []float32) mnemotype.Memory {
		return mnemotype.Memory{ID: fmt.Sprintf("%s%05d", profile[:1], i), Profile: profile, Content: "memory", Kind: mnemotype.KindEpisodic,
			Project: fmt.Sprintf("p%d", i%2), Session: fmt.Sprintf("s%02d", i%12), Importance: mnemotype.DefaultImportance,
			CreatedAt: t0, OccurredAt: t0, AccessedAt: t0, Embedding: v, EmbeddingModel: "m"}
	}
	var big []mnemotype.Memory
	for i := range n {
		big = append(big, mem("big", i, gauss(r, centres[r.IntN(len(centres))], 0.35)))
	}
	var small []mnemotype.Memory
	for i := range 300 {
		small = append(small, mem("small", i, gauss(r, centres[i%len(centres)], 0.05)))
	}
	for batch := range slices.Chunk(append(slices.Clone(big), small...), 1000) {
		if err := s.Insert(t.Context(), batch); err != nil {
			t.Fatal(err)
		}
	}
	return big
}

// gauss returns centre plus Gaussian noise of deviation sd (centre nil:
// the origin), 32-d.
func gauss(r *rand.Rand, centre []float32, sd float64) []float32 {
	v := make([]float32, 32)
	for i := range v {
		v[i] = float32(r.NormFloat64() * sd)
		if centre != nil {
			v[i] += centre[i]
		}
	}
	return v
}

// exactTop is the brute-force top k of mems in scope (project and
// sessions only) for v.
func exactTop(mems []mnemotype.Memory, v []float32, project string, sessions []string, k int) []string {
	var hits []mnemotype.Hit
	for _, m := range mems {
		if (project != "" && m.Project != project) || (len(sessions) > 0 && !slices.Contains(sessions, m.Session)) {
			continue
		}
		if sc, ok := vector.Cosine(v, m.Embedding); ok {
			hits = append(hits, mnemotype.Hit{ID: m.ID, Score: sc})
		}
	}
	slices.SortFunc(hits, func(a, b mnemotype.Hit) int {
		if a.Score != b.Score {
			if a.Score > b.Score {
				return -1
			}
			return 1
		}
		return strings.Compare(a.ID, b.ID)
	})
	out := make([]string, 0, k)
	for _, h := range hits[:min(k, len(hits))] {
		out = append(out, h.ID)
	}
	return out
}

// TestDense_HNSW: a profile above the threshold gets an HNSW index
// (IndexVectors), broad scopes walk it — finding ≥ 98% of the exact top
// 10, only in scope, never short of k under a filter — narrow scopes are
// still scanned exactly, and the index goes with its profile.
func TestDense_HNSW(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t)
	ctx := t.Context()
	s, err := postgres.Open(ctx, c.DSN("postgres"), postgres.Options{Schema: "ann", ExactBelow: 1000})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := annCorpus(t, s, 6000)
	if ix, err := s.IndexVectors(ctx, 1000, func(p string, _, _ int) bool { return p != "big" }); err != nil || len(ix) != 0 {
		t.Fatalf("IndexVectors building none = %+v, %v", ix, err)
	}
	ix, err := s.IndexVectors(ctx, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ix) != 1 || ix[0].Profile != "big" || ix[0].Dim != 32 || !ix[0].Built {
		t.Fatalf("IndexVectors = %+v, want one index built, of big's 32-d embeddings", ix)
	}
	if again, err := s.IndexVectors(ctx, 1000, nil); err != nil || len(again) != 1 || again[0].Built || again[0].Name != ix[0].Name {
		t.Fatalf("IndexVectors again = %+v, %v; want the same index, not built again", again, err)
	}
	d := s.Dense()
	r := rand.New(rand.NewPCG(3, 3))
	type scope struct {
		name      string
		project   string
		sessions  []string
		k         int
		minRecall float64
	}
	for _, sc := range []scope{
		{"Profile", "", nil, 10, 0.98},
		{"Project", "p0", nil, 10, 0.95},                      // 3,000 rows: the graph, filtered
		{"TwoSessions", "", []string{"s03", "s07"}, 50, 0.95}, // 1,000 rows: the graph, a sixth of it
		{"Session", "", []string{"s05"}, 10, 1},               // 500 rows: exact
	} {
		t.Run(sc.name, func(t *testing.T) {
			found, total := 0, 0
			for range 40 {
				v := gauss(r, big[r.IntN(len(big))].Embedding, 0.3)
				q := dense.Query{Vector: v, Model: "m", K: sc.k,
					Scope: mnemotype.Scope{Profile: "big", Project: sc.project, Sessions: sc.sessions}}
				got, err := d.Search(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != sc.k {
					t.Fatalf("%d hits, want %d (a filtered walk must not starve)", len(got), sc.k)
				}
				want := exactTop(big, v, sc.project, sc.sessions, sc.k)
				for i, h := range got {
					if i > 0 && h.Score > got[i-1].Score {
						t.Fatalf("hits not best first: %v", got)
					}
					if !strings.HasPrefix(h.ID, "b") {
						t.Fatalf("hit %s of another profile", h.ID)
					}
					n, _ := strconv.Atoi(h.ID[1:])
					m := big[n]
					if (sc.project != "" && m.Project != sc.project) || (len(sc.sessions) > 0 && !slices.Contains(sc.sessions, m.Session)) {
						t.Fatalf("hit %s (%s, %s) outside the scope", h.ID, m.Project, m.Session)
					}
					if want, _ := vector.Cosine(v, m.Embedding); math.Abs(want-h.Score) > 1e-5 {
						t.Fatalf("hit %s scored %v, its cosine is %v", h.ID, h.Score, want)
					}
					if slices.Contains(want, h.ID) {
						found++
					}
				}
				total += len(want)
			}
			recall := float64(found) / float64(total)
			t.Logf("recall@%d against the exact search: %.3f", sc.k, recall)
			if recall < sc.minRecall {
				t.Fatalf("recall@%d against the exact search = %.3f, want ≥ %.2f", sc.k, recall, sc.minRecall)
			}
		})
	}
	// The broad searches walked the index (its scans are counted once the
	// searching connections report their statistics, within a second or so).
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var scans int64
	for deadline := time.Now().Add(15 * time.Second); scans == 0 && time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err := conn.QueryRow(ctx, `SELECT coalesce(sum(idx_scan), 0) FROM pg_stat_user_indexes WHERE schemaname = 'ann' AND indexrelname = $1`,
			ix[0].Name).Scan(&scans); err != nil {
			t.Fatal(err)
		}
	}
	if scans == 0 {
		t.Errorf("the HNSW index %s was never scanned", ix[0].Name)
	}
	// Exclusions hold on the graph's path too.
	q := dense.Query{Vector: big[0].Embedding, Model: "m", K: 10, Scope: mnemotype.Scope{Profile: "big"}}
	top, err := d.Search(ctx, q)
	if err != nil || len(top) == 0 || top[0].ID != "b00000" {
		t.Fatalf("search for b00000's own vector = %v, %v", top, err)
	}
	q.Scope.Exclude = []string{"b00000"}
	if got, err := d.Search(ctx, q); err != nil || len(got) != 10 || slices.ContainsFunc(got, func(h mnemotype.Hit) bool { return h.ID == "b00000" }) {
		t.Fatalf("search excluding b00000 = %v, %v", got, err)
	}
	// The index goes with its profile, without waiting for IndexVectors
	// (left, it would slow the writes of a profile of that name made
	// again), and the other profiles' stay.
	if ix, err := s.IndexVectors(ctx, 100, nil); err != nil || len(ix) != 2 {
		t.Fatalf("IndexVectors at 100 rows = %+v, %v; want big's and small's", ix, err)
	}
	if _, err := s.DeleteProfile(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	indexes := func() []string {
		t.Helper()
		rows, err := conn.Query(ctx, `SELECT indexname FROM pg_indexes WHERE schemaname = 'ann' AND indexname LIKE 'memory\_vectors\_hnsw%' ORDER BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		names, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		return names
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		left := indexes()
		if len(left) == 1 && left[0] != ix[0].Name {
			break // small's
		}
		if time.Now().After(deadline) {
			t.Fatalf("HNSW indexes 30 s after big's deletion: %v; want small's alone (big's was %s)", left, ix[0].Name)
		}
	}
	if ix, err := s.IndexVectors(ctx, 1000, nil); err != nil || len(ix) != 0 {
		t.Fatalf("IndexVectors after deleting the profile = %+v, %v; want none", ix, err)
	}
	if left := indexes(); len(left) != 0 {
		t.Fatalf("HNSW indexes left below the threshold: %v", left)
	}
}

// TestDense_VectorTable: a store opened with NoVectors ranks in process
// and creates no table of vectors; opened again without, it creates it,
// filled from the stored embeddings; a process that opened the store
// before (with NoVectors) still writes its vectors; RepairVectors adds
// those missing; and a role that may not create the extension gets a
// store without it, saying why.
func TestDense_VectorTable(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t)
	ctx := t.Context()
	plain, err := postgres.Open(ctx, c.DSN("postgres"), postgres.Options{Schema: "col", NoVectors: true})
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := plain.Vectors(); ok || plain.Dense() != nil || why == "" {
		t.Fatalf("NoVectors: Vectors() = %v, %q; Dense() = %v", ok, why, plain.Dense())
	}
	r := rand.New(rand.NewPCG(5, 5))
	var mems []mnemotype.Memory
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 50 {
		mems = append(mems, mnemotype.Memory{ID: fmt.Sprintf("b%05d", i), Profile: "big", Content: "x", Kind: mnemotype.KindEpisodic,
			Importance: 0.5, CreatedAt: t0, OccurredAt: t0, AccessedAt: t0, Embedding: gauss(r, nil, 1), EmbeddingModel: "m"})
	}
	if err := plain.Insert(ctx, mems[:40]); err != nil {
		t.Fatal(err)
	}
	withVec, err := postgres.Open(ctx, c.DSN("postgres"), postgres.Options{Schema: "col"})
	if err != nil {
		t.Fatal(err)
	}
	defer withVec.Close()
	d := withVec.Dense()
	if d == nil {
		_, why := withVec.Vectors()
		t.Fatalf("Dense() = nil after migrating: %s", why)
	}
	// The process that opened the store without vectors writes the rest.
	if err := plain.Insert(ctx, mems[40:]); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Update(ctx, store.UpdateParams{Profile: "big", ID: "b00001", Embedding: mems[45].Embedding, EmbeddingModel: "m"}); err != nil {
		t.Fatal(err)
	}
	mems[1].Embedding = mems[45].Embedding
	plain.Close()
	for _, m := range []int{0, 1, 45, 49} {
		q := dense.Query{Vector: mems[m].Embedding, Model: "m", K: 50, Scope: mnemotype.Scope{Profile: "big"}}
		got, err := d.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		want := exactTop(mems, mems[m].Embedding, "", nil, 50)
		if len(got) != len(want) {
			t.Fatalf("query %d: %d hits, want %d", m, len(got), len(want))
		}
		sameTop(t, got, want, mems, mems[m].Embedding)
	}
	// A memory whose vector a process of an older mnemo did not write
	// (it knew nothing of the table) is found again after RepairVectors.
	admin, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `DELETE FROM col.memory_vectors WHERE profile = 'big' AND id = 'b00007'`); err != nil {
		t.Fatal(err)
	}
	q := dense.Query{Vector: mems[7].Embedding, Model: "m", K: 1, Scope: mnemotype.Scope{Profile: "big"}}
	if got, err := d.Search(ctx, q); err != nil || len(got) != 1 || got[0].ID == "b00007" {
		t.Fatalf("search for b00007's vector without its row = %v, %v", got, err)
	}
	// And one whose vector an older process left stale (it changed the
	// embedding only).
	if _, err := admin.Exec(ctx, `UPDATE col.memory_vectors SET vec = (SELECT vec FROM col.memory_vectors WHERE id = 'b00010')
		WHERE profile = 'big' AND id = 'b00009'`); err != nil {
		t.Fatal(err)
	}
	// And one an older process left behind when it deleted its memory
	// (the table has no foreign key to memories since schema version 4).
	if _, err := admin.Exec(ctx, `INSERT INTO col.memory_vectors (profile, id, model, dim, vec)
		SELECT profile, 'gone', model, dim, vec FROM col.memory_vectors WHERE profile = 'big' AND id = 'b00010'`); err != nil {
		t.Fatal(err)
	}
	if n, err := withVec.RepairVectors(ctx); err != nil || n != 4 {
		t.Fatalf("RepairVectors = %d, %v; want 4 (b00007 added, b00009 removed and added, gone removed)", n, err)
	}
	if got, err := d.Search(ctx, q); err != nil || len(got) != 1 || got[0].ID != "b00007" {
		t.Fatalf("search for b00007's vector after the repair = %v, %v", got, err)
	}
	q.Vector = mems[9].Embedding
	if got, err := d.Search(ctx, q); err != nil || len(got) != 1 || got[0].ID != "b00009" || math.Abs(got[0].Score-1) > 1e-6 {
		t.Fatalf("search for b00009's vector after the repair = %v, %v", got, err)
	}
	if n, err := withVec.RepairVectors(ctx); err != nil || n != 0 {
		t.Fatalf("RepairVectors again = %d, %v; want 0", n, err)
	}
	// A role that may not create the extension, in a database without it.
	for _, q := range []string{`CREATE ROLE plain LOGIN`, `CREATE DATABASE plaindb OWNER plain`} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	dsn := strings.Replace(c.DSN("plaindb"), "mnemo@", "plain@", 1)
	s, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatalf("Open as a role that may not create extensions: %v", err)
	}
	defer s.Close()
	if ok, why := s.Vectors(); ok || !strings.Contains(why, "CREATE EXTENSION") {
		t.Fatalf("Vectors() = %v, %q; want false, saying to CREATE EXTENSION", ok, why)
	}
	if err := s.Insert(ctx, mems[:3]); err != nil {
		t.Fatalf("Insert without pgvector: %v", err)
	}
}

// sameTop fails t unless got holds the exact top of want's length (ids
// want, from mems' vectors and v), in order up to ties within 1e-6.
func sameTop(t *testing.T, got []mnemotype.Hit, want []string, mems []mnemotype.Memory, v []float32) {
	t.Helper()
	cos := map[string]float64{}
	for _, m := range mems {
		cos[m.ID], _ = vector.Cosine(v, m.Embedding)
	}
	if len(got) != len(want) {
		t.Fatalf("%d hits, want %d", len(got), len(want))
	}
	for i, h := range got {
		if math.Abs(h.Score-cos[h.ID]) > 1e-5 || (h.ID != want[i] && math.Abs(cos[h.ID]-cos[want[i]]) > 1e-6) {
			t.Fatalf("hit %d = %s (%v), want %s (%v)", i, h.ID, h.Score, want[i], cos[want[i]])
		}
	}
}

// TestDense_IndexVectorsSkipsDeletedProfiles: a profile deleted after
// IndexVectors counted it (here, by its build callback, called just
// before the build) gets no index, and the others still do.
func TestDense_IndexVectorsSkipsDeletedProfiles(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t)
	ctx := t.Context()
	s, err := postgres.Open(ctx, c.DSN("postgres"), postgres.Options{Schema: "annskip"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewPCG(5, 5))
	if err := s.Insert(ctx, append(embedded(r, "gone", 60), embedded(r, "kept", 60)...)); err != nil {
		t.Fatal(err)
	}
	ix, err := s.IndexVectors(ctx, 50, func(p string, _, _ int) bool {
		if p == "gone" {
			if _, err := s.DeleteProfile(ctx, p); err != nil {
				t.Error(err)
			}
		}
		return true
	})
	if err != nil || len(ix) != 1 || ix[0].Profile != "kept" || !ix[0].Built {
		t.Fatalf("IndexVectors = %+v, %v; want kept's index alone, built", ix, err)
	}
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var names []string
	rows, err := conn.Query(ctx, `SELECT indexname FROM pg_indexes WHERE schemaname = 'annskip' AND indexname LIKE 'memory\_vectors\_hnsw%'`)
	if err == nil {
		names, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil || len(names) != 1 || names[0] != ix[0].Name {
		t.Fatalf("HNSW indexes = %v, %v; want %s alone", names, err, ix[0].Name)
	}
}

// TestDense_DeletedProfileIndexGoes: deleting a profile while another
// profile's index is being built leaves the build to finish (the drop
// waits for IndexVectors' lease: a DROP INDEX CONCURRENTLY beside a build
// made PostgreSQL cancel the build as a deadlock), and the deleted
// profile's index is gone once the store is closed, as after mnemo delete.
func TestDense_DeletedProfileIndexGoes(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t)
	ctx := t.Context()
	s, err := postgres.Open(ctx, c.DSN("postgres"), postgres.Options{Schema: "anndel"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewPCG(11, 11))
	for batch := range slices.Chunk(append(embedded(r, "a", 300), embedded(r, "b", 12000)...), 4000) {
		if err := s.Insert(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	if ix, err := s.IndexVectors(ctx, 100, func(p string, _, _ int) bool { return p == "a" }); err != nil || len(ix) != 1 || !ix[0].Built {
		t.Fatalf("IndexVectors of a = %+v, %v", ix, err)
	}
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	type built struct {
		ix  []postgres.VectorIndex
		err error
	}
	done := make(chan built, 1)
	go func() {
		ix, err := s.IndexVectors(ctx, 100, nil)
		done <- built{ix, err}
	}()
	// a is deleted once b's build is under way.
	for building := false; !building; time.Sleep(10 * time.Millisecond) {
		if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_progress_create_index WHERE command = 'CREATE INDEX CONCURRENTLY')`).Scan(&building); err != nil {
			t.Fatal(err)
		}
		select {
		case b := <-done:
			t.Fatalf("b's index was built (%+v, %v) before the test saw the build", b.ix, b.err)
		default:
		}
	}
	if _, err := s.DeleteProfile(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	b := <-done
	if b.err != nil || !slices.ContainsFunc(b.ix, func(x postgres.VectorIndex) bool { return x.Profile == "b" && x.Built }) {
		t.Fatalf("IndexVectors building b's index while a is deleted = %+v, %v", b.ix, b.err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var names []string
	rows, err := conn.Query(ctx, `SELECT indexname FROM pg_indexes WHERE schemaname = 'anndel' AND indexname LIKE 'memory\_vectors\_hnsw%'`)
	if err == nil {
		names, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	var want []string
	for _, x := range b.ix {
		if x.Profile == "b" {
			want = append(want, x.Name)
		}
	}
	if err != nil || !slices.Equal(names, want) {
		t.Fatalf("HNSW indexes after a's deletion and Close = %v, %v; want b's alone, %v", names, err, want)
	}
}

// embedded returns n memories of profile with random 32-d embeddings.
func embedded(r *rand.Rand, profile string, n int) []mnemotype.Memory {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mems := make([]mnemotype.Memory, n)
	for i := range mems {
		mems[i] = mnemotype.Memory{ID: fmt.Sprintf("m%05d", i), Profile: profile, Content: "x", Kind: mnemotype.KindEpisodic,
			Importance: 0.5, CreatedAt: t0, OccurredAt: t0, AccessedAt: t0, Embedding: gauss(r, nil, 1), EmbeddingModel: "m"}
	}
	return mems
}
