package vector_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/vector"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

type memOpt func(*mnemotype.Memory)

func project(p string) memOpt      { return func(m *mnemotype.Memory) { m.Project = p } }
func session(s string) memOpt      { return func(m *mnemotype.Memory) { m.Session = s } }
func kind(k mnemotype.Kind) memOpt { return func(m *mnemotype.Memory) { m.Kind = k } }
func emb(model string, v ...float32) memOpt {
	return func(m *mnemotype.Memory) { m.Embedding, m.EmbeddingModel = v, model }
}

// mem returns a memory with the default kind and timestamps; without an
// emb option it has no embedding.
func actor(a string) memOpt        { return func(m *mnemotype.Memory) { m.Actor = a } }
func occurred(at time.Time) memOpt { return func(m *mnemotype.Memory) { m.OccurredAt = at } }

func mem(id string, opts ...memOpt) mnemotype.Memory {
	m := mnemotype.Memory{
		ID: id, Profile: "p", Kind: mnemotype.KindEpisodic, Importance: mnemotype.DefaultImportance,
		CreatedAt: t0, AccessedAt: t0,
	}
	for _, o := range opts {
		o(&m)
	}
	return m
}

func newIndex(t testing.TB, mems ...mnemotype.Memory) *vector.Index {
	t.Helper()
	x := vector.New()
	if err := x.Upsert(mems); err != nil {
		t.Fatalf("Upsert: %v", err)
	}
	return x
}

// reencode encodes x and decodes it with opt.
func reencode(t testing.TB, x *vector.Index, opt vector.DecodeOptions) *vector.Index {
	t.Helper()
	var buf bytes.Buffer
	if err := x.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	y, err := vector.DecodeWith(bytes.NewReader(buf.Bytes()), int64(buf.Len()), opt)
	if err != nil {
		t.Fatal(err)
	}
	return y
}

func hitIDs(hits []mnemotype.Hit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.ID
	}
	return out
}

func search(t testing.TB, x *vector.Index, q []float32, model string, f vector.Filter, k int) []mnemotype.Hit {
	t.Helper()
	hits, err := x.Search(q, model, f, k)
	if err != nil {
		t.Fatalf("Search: %v", err)
	}
	return hits
}

// checkSorted fails unless hits are best first, ties by id, ids distinct,
// no score NaN and Rank unset.
func checkSorted(t testing.TB, hits []mnemotype.Hit) {
	t.Helper()
	seen := map[string]bool{}
	for i, h := range hits {
		if math.IsNaN(h.Score) {
			t.Errorf("hit %d (%s) has score NaN", i, h.ID)
		}
		if h.Rank != 0 {
			t.Errorf("hit %d (%s) has Rank %d, want unset", i, h.ID, h.Rank)
		}
		if seen[h.ID] {
			t.Errorf("hit %d: id %s listed twice", i, h.ID)
		}
		seen[h.ID] = true
		if i > 0 {
			p := hits[i-1]
			if p.Score < h.Score || (p.Score == h.Score && p.ID >= h.ID) {
				t.Errorf("hits %d, %d out of order: %s %v then %s %v", i-1, i, p.ID, p.Score, h.ID, h.Score)
			}
		}
	}
}

// cosine64 is the reference cosine in float64.
func cosine64(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return d / math.Sqrt(na*nb)
}

func randUnit(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	var n float64
	for i := range v {
		v[i] = float32(r.NormFloat64())
		n += float64(v[i]) * float64(v[i])
	}
	inv := 1 / math.Sqrt(n)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
	return v
}

// The reference model below ranks by exact integer dot products: every row
// vector is a signed permutation of the same small integers (so all rows
// have one norm and cosine order is integer dot order), and every dot
// product is exact in float32. Ties are therefore frequent and exact, which
// makes the id tie-break checkable, and the reference shares no arithmetic
// with the index.

// intBase is the multiset each row is a signed permutation of; norm² = 15.
var intBase = []float32{3, 2, 1, 1, 0, 0, 0, 0}

func intRow(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		if i < len(intBase) {
			v[i] = intBase[i]
		}
		if r.IntN(2) == 0 {
			v[i] = -v[i]
		}
	}
	r.Shuffle(dim, func(i, j int) { v[i], v[j] = v[j], v[i] })
	return v
}

func intQuery(r *rand.Rand, dim int) []float32 {
	for {
		q := make([]float32, dim)
		nz := false
		for i := range q {
			q[i] = float32(r.IntN(7) - 3)
			nz = nz || q[i] != 0
		}
		if nz {
			return q
		}
	}
}

type refIndex struct {
	dim  int
	rows map[string]mnemotype.Memory // Embedding nil when the index dropped it
}

func newRef() *refIndex { return &refIndex{rows: map[string]mnemotype.Memory{}} }

// upsert applies mems and reports whether the index should report a
// dimension mismatch.
func (r *refIndex) upsert(mems []mnemotype.Memory) (mismatch bool) {
	for _, m := range mems {
		if r.dim == 0 && len(m.Embedding) > 0 {
			r.dim = len(m.Embedding)
		}
	}
	for _, m := range mems {
		if len(m.Embedding) > 0 && len(m.Embedding) != r.dim {
			mismatch = true
			m.Embedding = nil
		}
		m.Embedding = slices.Clone(m.Embedding)
		r.rows[m.ID] = m
	}
	return mismatch
}

func (r *refIndex) in(m mnemotype.Memory, f vector.Filter) bool {
	if f.Project != "" && m.Project != f.Project {
		return false
	}
	if len(f.Sessions) > 0 && !slices.Contains(f.Sessions, m.Session) {
		return false
	}
	if len(f.Kinds) > 0 && !slices.Contains(f.Kinds, m.Kind) {
		return false
	}
	if f.Only != nil && !slices.Contains(f.Only, m.ID) {
		return false
	}
	return !slices.Contains(f.Exclude, m.ID)
}

func intDot(a, b []float32) int {
	s := 0
	for i := range a {
		s += int(a[i]) * int(b[i])
	}
	return s
}

func isZero(v []float32) bool {
	for _, f := range v {
		if f != 0 {
			return false
		}
	}
	return true
}

type refHit struct {
	id  string
	dot int
	cos float64
}

func (r *refIndex) scored(q []float32, model string, keep func(mnemotype.Memory) bool) []refHit {
	var out []refHit
	for _, m := range r.rows {
		if m.Embedding == nil || m.EmbeddingModel != model || isZero(m.Embedding) || !keep(m) {
			continue
		}
		out = append(out, refHit{m.ID, intDot(q, m.Embedding), cosine64(q, m.Embedding)})
	}
	slices.SortFunc(out, func(a, b refHit) int {
		if a.dot != b.dot {
			return b.dot - a.dot
		}
		return strings.Compare(a.id, b.id)
	})
	return out
}

func (r *refIndex) search(q []float32, model string, f vector.Filter, k int) []refHit {
	if k <= 0 {
		return nil
	}
	out := r.scored(q, model, func(m mnemotype.Memory) bool { return r.in(m, f) })
	return out[:min(k, len(out))]
}

func (r *refIndex) score(q []float32, model string, ids []string) []refHit {
	return r.scored(q, model, func(m mnemotype.Memory) bool { return slices.Contains(ids, m.ID) })
}

// compare fails unless got lists exactly want's ids in want's order with
// scores equal to the float64 cosine within 1e-6.
func compare(t testing.TB, what string, got []mnemotype.Hit, want []refHit) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d hits %v, want %d %v", what, len(got), hitIDs(got), len(want), want)
	}
	for i := range want {
		if got[i].ID != want[i].id || math.Abs(got[i].Score-want[i].cos) > 1e-6 {
			t.Fatalf("%s: hit %d = %s %v, want %s %v (dot %d)\ngot  %v\nwant %v",
				what, i, got[i].ID, got[i].Score, want[i].id, want[i].cos, want[i].dot, got, want)
		}
	}
}

func TestIndex_UpsertDeleteSearch_MatchesReference(t *testing.T) {
	t.Parallel()
	const dim = 8
	projects := []string{"", "p0", "p1"}
	sessions := []string{"", "s0", "s1", "s2"}
	models := []string{"m1", "m2"}
	for seed := range uint64(40) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(seed, 0x5eed))
			x, ref := vector.New(), newRef()
			pick := func(l []string) string { return l[r.IntN(len(l))] }
			id := func() string { return fmt.Sprintf("m%02d", r.IntN(60)) }
			randMem := func(first bool) mnemotype.Memory {
				m := mem(id(), project(pick(projects)), session(pick(sessions)),
					kind(mnemotype.Kinds[r.IntN(len(mnemotype.Kinds))]))
				m.CreatedAt = t0.Add(time.Duration(r.IntN(1000)) * time.Second)
				m.AccessedAt = m.CreatedAt
				m.AccessCount = int64(r.IntN(5))
				m.Importance = r.Float64()
				switch c := r.IntN(20); {
				case first: // rows before the first embedding exist
				case c < 14:
					emb(pick(models), intRow(r, dim)...)(&m)
				case c < 16:
					emb(pick(models), make([]float32, dim)...)(&m) // zero vector: unsearchable
				case c < 18:
					emb(pick(models), intRow(r, dim-3)...)(&m) // another dimension
				}
				return m
			}
			randFilter := func() vector.Filter {
				var f vector.Filter
				if r.IntN(3) == 0 {
					f.Project = pick(append(projects[1:], "nope"))
				}
				for _, s := range append(sessions, "nos") {
					if r.IntN(4) == 0 {
						f.Sessions = append(f.Sessions, s)
					}
				}
				for _, k := range mnemotype.Kinds {
					if r.IntN(3) == 0 {
						f.Kinds = append(f.Kinds, k)
					}
				}
				for range r.IntN(4) {
					f.Exclude = append(f.Exclude, id())
				}
				if r.IntN(4) == 0 {
					f.Only = []string{}
					for range r.IntN(30) {
						f.Only = append(f.Only, id())
					}
				}
				return f
			}
			for round := range 300 {
				switch op := r.IntN(10); {
				case op < 5 || round == 0:
					batch := make([]mnemotype.Memory, 1+r.IntN(4))
					for i := range batch {
						batch[i] = randMem(round == 0)
					}
					wantErr := ref.upsert(batch)
					err := x.Upsert(batch)
					if wantErr != errors.Is(err, mnemotype.ErrDimensionMismatch) {
						t.Fatalf("round %d: Upsert error = %v, want mismatch %v", round, err, wantErr)
					}
					if !wantErr && err != nil {
						t.Fatalf("round %d: Upsert: %v", round, err)
					}
				default:
					ids := []string{id(), id(), "unknown"}
					x.Delete(ids...)
					for _, id := range ids {
						delete(ref.rows, id)
					}
				}
				if x.Len() != len(ref.rows) || x.Dim() != ref.dim {
					t.Fatalf("round %d: Len, Dim = %d, %d; want %d, %d", round, x.Len(), x.Dim(), len(ref.rows), ref.dim)
				}
				if ref.dim == 0 {
					continue
				}
				q, model, f, k := intQuery(r, ref.dim), pick(append(models, "m3")), randFilter(), r.IntN(12)
				got := search(t, x, q, model, f, k)
				compare(t, fmt.Sprintf("round %d: Search(model %s, %+v, k %d)", round, model, f, k), got, ref.search(q, model, f, k))

				ids := []string{id(), id(), id(), id(), "unknown"}
				scored, err := x.Score(q, model, slices.Compact(slices.Sorted(slices.Values(ids))))
				if err != nil {
					t.Fatalf("round %d: Score: %v", round, err)
				}
				compare(t, fmt.Sprintf("round %d: Score(%v)", round, ids), scored, ref.score(q, model, ids))
			}
		})
	}
}

func TestIndex_Search_Accuracy(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 7))
	const n, dim = 500, 100
	vecs := map[string][]float32{}
	var mems []mnemotype.Memory
	for i := range n {
		id := fmt.Sprintf("m%03d", i)
		v := randUnit(r, dim)
		if i%3 == 0 { // not every stored vector is unit length
			for j := range v {
				v[j] *= 3.5
			}
		}
		vecs[id] = v
		mems = append(mems, mem(id, emb("m", v...)))
	}
	x := newIndex(t, mems...)
	for range 20 {
		q := randUnit(r, dim)
		q[0] += 0.25
		hits := search(t, x, q, "m", vector.Filter{}, n)
		if len(hits) != n {
			t.Fatalf("got %d hits, want %d", len(hits), n)
		}
		checkSorted(t, hits)
		for _, h := range hits {
			if want := cosine64(q, vecs[h.ID]); math.Abs(h.Score-want) > 1e-5 {
				t.Fatalf("%s: score %v, want %v", h.ID, h.Score, want)
			}
		}
	}
}

func TestIndex_Upsert_Dimension(t *testing.T) {
	t.Parallel()

	t.Run("FirstEmbeddingFixesDim", func(t *testing.T) {
		t.Parallel()
		x := vector.New()
		if err := x.Upsert([]mnemotype.Memory{mem("a")}); err != nil {
			t.Fatalf("Upsert without embedding: %v", err)
		}
		if x.Dim() != 0 {
			t.Fatalf("Dim = %d before any embedding, want 0", x.Dim())
		}
		if hits := search(t, x, []float32{1, 0}, "m", vector.Filter{}, 5); len(hits) != 0 {
			t.Fatalf("Search before any embedding = %v, want none", hits)
		}
		err := x.Upsert([]mnemotype.Memory{
			mem("b", emb("m", 1, 0, 0)),
			mem("c", emb("m", 1, 0, 0, 0)),
			mem("d", emb("m", 0, 1, 0)),
		})
		if !errors.Is(err, mnemotype.ErrDimensionMismatch) {
			t.Fatalf("Upsert error = %v, want ErrDimensionMismatch", err)
		}
		if !strings.Contains(err.Error(), "c") {
			t.Errorf("error %q does not name the memory", err)
		}
		if x.Dim() != 3 || x.Len() != 4 {
			t.Fatalf("Dim, Len = %d, %d; want 3, 4", x.Dim(), x.Len())
		}
		// c is kept (counted as foreign) but has no vector.
		if n, d := x.Foreign(); n != 1 || d != 4 {
			t.Fatalf("Foreign = %d, %d; want 1, 4", n, d)
		}
		hits := search(t, x, []float32{1, 1, 1}, "m", vector.Filter{}, 10)
		if got := hitIDs(hits); !slices.Equal(got, []string{"b", "d"}) {
			t.Fatalf("Search = %v, want [b d]", got)
		}
		if got, _ := x.Score([]float32{1, 1, 1}, "m", []string{"a", "b", "c", "d"}); !slices.Equal(hitIDs(got), []string{"b", "d"}) {
			t.Fatalf("Score = %v, want [b d]", got)
		}
	})

	t.Run("MismatchReplacesVector", func(t *testing.T) {
		t.Parallel()
		x := newIndex(t, mem("a", emb("m", 1, 0)), mem("b", emb("m", 0, 1)))
		err := x.Upsert([]mnemotype.Memory{mem("a", emb("m", 1, 0, 0))})
		if !errors.Is(err, mnemotype.ErrDimensionMismatch) {
			t.Fatalf("Upsert error = %v, want ErrDimensionMismatch", err)
		}
		if got := hitIDs(search(t, x, []float32{1, 0}, "m", vector.Filter{}, 10)); !slices.Equal(got, []string{"b"}) {
			t.Fatalf("Search = %v, want [b]: a's old vector must be gone", got)
		}
		if err := x.Upsert([]mnemotype.Memory{mem("a", emb("m", 1, 0))}); err != nil {
			t.Fatalf("Upsert with the right dimension: %v", err)
		}
		if got := hitIDs(search(t, x, []float32{1, 0}, "m", vector.Filter{}, 10)); !slices.Equal(got, []string{"a", "b"}) {
			t.Fatalf("Search = %v, want [a b]", got)
		}
	})

	t.Run("RowsBeforeFirstEmbedding", func(t *testing.T) {
		t.Parallel()
		x := newIndex(t, mem("a"), mem("b"), mem("c"))
		if err := x.Upsert([]mnemotype.Memory{mem("d", emb("m", 0, 1)), mem("b", emb("m", 1, 0))}); err != nil {
			t.Fatalf("Upsert: %v", err)
		}
		x.Delete("a") // moves the last row into slot 0
		if got := hitIDs(search(t, x, []float32{1, 0.5}, "m", vector.Filter{}, 10)); !slices.Equal(got, []string{"b", "d"}) {
			t.Fatalf("Search = %v, want [b d]", got)
		}
	})

	for _, tc := range []struct {
		name string
		q    []float32
	}{
		{"Shorter", []float32{1}},
		{"Longer", []float32{1, 0, 0}},
		{"Empty", []float32{}},
	} {
		t.Run("QueryDim"+tc.name, func(t *testing.T) {
			t.Parallel()
			x := newIndex(t, mem("a", emb("m", 1, 0)))
			if _, err := x.Search(tc.q, "m", vector.Filter{}, 5); !errors.Is(err, mnemotype.ErrDimensionMismatch) {
				t.Errorf("Search error = %v, want ErrDimensionMismatch", err)
			}
			if _, err := x.Score(tc.q, "m", []string{"a"}); !errors.Is(err, mnemotype.ErrDimensionMismatch) {
				t.Errorf("Score error = %v, want ErrDimensionMismatch", err)
			}
		})
	}
}

func TestIndex_Search_Model(t *testing.T) {
	t.Parallel()
	x := newIndex(t,
		mem("a", emb("m1", 1, 0)),
		mem("b", emb("m2", 1, 0)),
		mem("c", emb("m1", 0, 1)),
		mem("d", emb("p1", 1, 0)),
		mem("e", project("m1"), session("m1")), // the model's name as project and session
	)
	for _, tc := range []struct {
		model string
		want  []string
	}{
		{"m1", []string{"a", "c"}},
		{"m2", []string{"b"}},
		{"m3", nil},
		{"", nil},
	} {
		t.Run("model="+tc.model, func(t *testing.T) {
			t.Parallel()
			got := hitIDs(search(t, x, []float32{1, 0.1}, tc.model, vector.Filter{}, 10))
			if !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 {
				t.Errorf("Search = %v, want %v", got, tc.want)
			}
			scored, err := x.Score([]float32{1, 0.1}, tc.model, []string{"a", "b", "c", "d", "e"})
			if err != nil {
				t.Fatal(err)
			}
			if got := hitIDs(scored); !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 {
				t.Errorf("Score = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIndex_Search_Filter(t *testing.T) {
	t.Parallel()
	e, s := mnemotype.KindEpisodic, mnemotype.KindSemantic
	// Scores fall from a to h, so results are in id order.
	x := newIndex(t,
		mem("a", project("p1"), session("s1"), kind(e), emb("m", 1, 0), actor("Caroline"), occurred(t0.Add(time.Hour))),
		mem("b", project("p1"), session("s2"), kind(s), emb("m", 0.9, 0.1), actor("Melanie"), occurred(t0.Add(time.Hour+1))),
		mem("c", project("p2"), session("s1"), kind(e), emb("m", 0.8, 0.2), actor("Caroline"), occurred(time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC))),
		mem("d", project("p2"), session("s3"), kind(s), emb("m", 0.7, 0.3)),
		mem("e", session("s1"), kind(mnemotype.KindIdentity), emb("m", 0.6, 0.4)),
		mem("f", project("p1"), kind(e), emb("m", 0.5, 0.5)),
		mem("g", project("p3"), session("s4")), // in scope but without embedding
		mem("h", project("p1"), session("s1"), kind(e), emb("other", 1, 0)),
	)
	for _, tc := range []struct {
		name string
		f    vector.Filter
		want []string
	}{
		{"Any", vector.Filter{}, []string{"a", "b", "c", "d", "e", "f"}},
		{"Project", vector.Filter{Project: "p1"}, []string{"a", "b", "f"}},
		{"ProjectWithoutEmbeddings", vector.Filter{Project: "p3"}, nil},
		{"UnknownProject", vector.Filter{Project: "nope"}, nil},
		{"ProjectNamedLikeSession", vector.Filter{Project: "s1"}, nil},
		{"Session", vector.Filter{Sessions: []string{"s1"}}, []string{"a", "c", "e"}},
		{"Sessions", vector.Filter{Sessions: []string{"s3", "s2"}}, []string{"b", "d"}},
		{"EmptySession", vector.Filter{Sessions: []string{""}}, []string{"f"}},
		{"UnknownSession", vector.Filter{Sessions: []string{"nope"}}, nil},
		{"KnownAndUnknownSession", vector.Filter{Sessions: []string{"nope", "s2"}}, []string{"b"}},
		{"Kinds", vector.Filter{Kinds: []mnemotype.Kind{s, mnemotype.KindIdentity}}, []string{"b", "d", "e"}},
		{"EmptyKinds", vector.Filter{Kinds: []mnemotype.Kind{}}, []string{"a", "b", "c", "d", "e", "f"}},
		{"EmptySessions", vector.Filter{Sessions: []string{}}, []string{"a", "b", "c", "d", "e", "f"}},
		{"Exclude", vector.Filter{Exclude: []string{"a", "d", "unknown", "g"}}, []string{"b", "c", "e", "f"}},
		{"All", vector.Filter{Project: "p1", Sessions: []string{"s1", "s2"}, Kinds: []mnemotype.Kind{e}, Exclude: []string{"b"}}, []string{"a"}},
		{"ExcludeEverything", vector.Filter{Exclude: []string{"a", "b", "c", "d", "e", "f"}}, nil},
		{"Only", vector.Filter{Only: []string{"b", "e", "unknown"}}, []string{"b", "e"}},
		{"OnlyAndProject", vector.Filter{Only: []string{"a", "b", "e"}, Project: "p1", Exclude: []string{"a"}}, []string{"b"}},
		{"OnlyNone", vector.Filter{Only: []string{}}, nil},
		{"OnlyUnknown", vector.Filter{Only: []string{"unknown"}}, nil},
		{"Actor", vector.Filter{Actors: []string{"Caroline"}}, []string{"a", "c"}},
		{"Actors", vector.Filter{Actors: []string{"Melanie", "Caroline"}}, []string{"a", "b", "c"}},
		{"NoActor", vector.Filter{Actors: []string{""}}, []string{"d", "e", "f"}},
		{"UnknownActor", vector.Filter{Actors: []string{"Bob"}}, nil},
		{"ActorNamedLikeSession", vector.Filter{Actors: []string{"s1"}}, nil},
		{"After", vector.Filter{After: t0.Add(time.Hour)}, []string{"a", "b", "c"}},
		{"AfterToTheNanosecond", vector.Filter{After: t0.Add(time.Hour + 1)}, []string{"b", "c"}},
		{"Before", vector.Filter{Before: t0.Add(time.Hour + 1)}, []string{"a", "d", "e", "f"}},
		{"Between", vector.Filter{After: t0.Add(time.Hour), Before: t0.Add(time.Hour + 1)}, []string{"a"}},
		{"FarFuture", vector.Filter{After: time.Date(2999, 12, 31, 0, 0, 0, 0, time.UTC)}, []string{"c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := hitIDs(search(t, x, []float32{1, 0}, "m", tc.f, 10))
			if !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 {
				t.Errorf("Search(%+v) = %v, want %v", tc.f, got, tc.want)
			}
		})
	}
}

func TestIndex_Search_Limits(t *testing.T) {
	t.Parallel()
	x := newIndex(t, mem("a", emb("m", 1, 0)), mem("b", emb("m", 0, 1)), mem("c", emb("m", -1, 0)))
	for _, tc := range []struct {
		name string
		q    []float32
		k    int
		want []string
	}{
		{"KZero", []float32{1, 0}, 0, nil},
		{"KNegative", []float32{1, 0}, -3, nil},
		{"KOne", []float32{1, 0}, 1, []string{"a"}},
		{"KBeyondRows", []float32{1, 0}, 100, []string{"a", "b", "c"}},
		{"ZeroQuery", []float32{0, 0}, 5, nil},
		{"NaNQuery", []float32{float32(math.NaN()), 1}, 5, nil},
		{"InfQuery", []float32{float32(math.Inf(1)), 0}, 5, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hits := search(t, x, tc.q, "m", vector.Filter{}, tc.k)
			if got := hitIDs(hits); !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 {
				t.Errorf("Search = %v, want %v", hits, tc.want)
			}
			checkSorted(t, hits)
		})
	}
	t.Run("UnusableQuery", func(t *testing.T) {
		t.Parallel()
		const huge = 3e38
		x := newIndex(t, mem("a", emb("m", 0.6, -0.6, 0, 0, 0.6, -0.6, 0, 0)), mem("b", emb("m", 1, 0, 0, 0, 0, 0, 0, 0)))
		for _, q := range [][]float32{
			{math.SmallestNonzeroFloat32, 0, 0, 0, 0, 0, 0, 0}, // 1/‖q‖ overflows float32
			{1e-30, 1e-30, 0, 0, 0, 0, 0, 0},
			{huge, huge, huge, huge, huge, huge, huge, huge}, // dot products overflow
		} {
			hits := search(t, x, q, "m", vector.Filter{}, 5)
			checkSorted(t, hits)
			scored, err := x.Score(q, "m", []string{"a", "b"})
			if err != nil {
				t.Fatal(err)
			}
			checkSorted(t, scored)
			for _, h := range append(hits, scored...) {
				if math.IsInf(h.Score, 0) && q[0] < 1 {
					t.Errorf("query %v: %s scores %v", q, h.ID, h.Score)
				}
			}
		}
	})
	t.Run("TinyEmbedding", func(t *testing.T) {
		t.Parallel()
		// A stored vector whose 1/‖v‖ overflows float32 is no embedding.
		x := newIndex(t, mem("a", emb("m", math.SmallestNonzeroFloat32, 0)), mem("b", emb("m", 1, 1)))
		if got := hitIDs(search(t, x, []float32{1, 0}, "m", vector.Filter{}, 5)); !slices.Equal(got, []string{"b"}) {
			t.Errorf("Search = %v, want [b]", got)
		}
	})
	t.Run("ScoreZeroQuery", func(t *testing.T) {
		t.Parallel()
		if hits, err := x.Score([]float32{0, 0}, "m", []string{"a", "b"}); err != nil || len(hits) != 0 {
			t.Errorf("Score = %v, %v; want no hits", hits, err)
		}
	})
	t.Run("EmptyIndex", func(t *testing.T) {
		t.Parallel()
		if hits, err := vector.New().Search([]float32{1}, "m", vector.Filter{}, 5); err != nil || len(hits) != 0 {
			t.Errorf("Search = %v, %v; want no hits", hits, err)
		}
	})
}

func TestIndex_Search_TiesByID(t *testing.T) {
	t.Parallel()
	// Insertion order differs from id order; deletes move rows around.
	ids := []string{"e", "c", "a", "f", "d", "b", "g"}
	var mems []mnemotype.Memory
	for _, id := range ids {
		mems = append(mems, mem(id, emb("m", 1, 0)))
	}
	mems = append(mems, mem("z", emb("m", 0.6, 0.8)))
	x := newIndex(t, mems...)
	for _, tc := range []struct {
		name   string
		delete []string
		k      int
		want   []string
	}{
		{"Top4", nil, 4, []string{"z", "a", "b", "c"}},
		{"All", nil, 10, []string{"z", "a", "b", "c", "d", "e", "f", "g"}},
		{"AfterDelete", []string{"a", "z"}, 3, []string{"b", "c", "d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x.Delete(tc.delete...)
			hits := search(t, x, []float32{3, 4}, "m", vector.Filter{}, tc.k)
			if got := hitIDs(hits); !slices.Equal(got, tc.want) {
				t.Errorf("Search = %v, want %v", got, tc.want)
			}
			checkSorted(t, hits)
		})
	}
}

// TestIndex_Search_Parallel compares the split search (≥ 8192 rows) with
// the serial one and with the reference; it sets GOMAXPROCS, so it does not
// run in parallel with other tests.
func TestIndex_Search_Parallel(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	const dim = 8
	for _, n := range []int{8191, 8192, 10007} {
		r := rand.New(rand.NewPCG(uint64(n), 1))
		x, ref := vector.New(), newRef()
		mems := make([]mnemotype.Memory, n)
		perm := r.Perm(100_000) // ids in no particular slot order
		for i := range mems {
			mems[i] = mem(fmt.Sprintf("m%05d", perm[i]), project([]string{"p0", "p1"}[r.IntN(2)]),
				emb([]string{"m1", "m2"}[r.IntN(5)/4], intRow(r, dim)...))
		}
		ref.upsert(mems)
		if err := x.Upsert(mems); err != nil {
			t.Fatal(err)
		}
		if x.Len() != n {
			t.Fatalf("Len = %d, want %d", x.Len(), n)
		}
		queries := make([][]float32, 8)
		for i := range queries {
			queries[i] = intQuery(r, dim)
		}
		var serial [][]mnemotype.Hit
		for _, procs := range []int{1, 2, 3, 8} {
			t.Run(fmt.Sprintf("n=%d/procs=%d", n, procs), func(t *testing.T) {
				runtime.GOMAXPROCS(procs)
				for i, q := range queries {
					f := vector.Filter{}
					if i%2 == 1 {
						f.Project = "p1"
					}
					k := []int{1, 7, 50, 400}[i%4]
					got := search(t, x, q, "m1", f, k)
					compare(t, fmt.Sprintf("query %d", i), got, ref.search(q, "m1", f, k))
					one, err := x.SearchSerial(q, "m1", f, k)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, one) {
						t.Fatalf("query %d: SearchSerial differs from Search", i)
					}
					if procs == 1 {
						serial = append(serial, got)
					} else if !slices.Equal(got, serial[i]) {
						t.Fatalf("query %d: parallel result differs from serial", i)
					}
				}
			})
		}
	}
}

func TestIndex_Bytes(t *testing.T) {
	t.Parallel()
	x := vector.New()
	if x.Bytes() != 0 {
		t.Errorf("empty index: %d bytes", x.Bytes())
	}
	r := rand.New(rand.NewPCG(5, 5))
	var mems []mnemotype.Memory
	for i := range 1000 {
		mems = append(mems, mem(fmt.Sprintf("m%04d", i), emb("m", randUnit(r, 100)...)))
	}
	if err := x.Upsert(mems); err != nil {
		t.Fatal(err)
	}
	// The embeddings alone are 1000 × 100 × 4 bytes; rows and ids add to it.
	if b := x.Bytes(); b < 400_000 || b > 800_000 {
		t.Errorf("1000 memories of 100 dimensions: %d bytes, want 400k-800k", b)
	}
	before := x.Bytes()
	x.Delete("m0001", "m0002")
	if after := x.Bytes(); after >= before {
		t.Errorf("Bytes after a delete = %d, before %d: want fewer (the ids are gone)", after, before)
	}
}

func TestIndex_Concurrent(t *testing.T) {
	t.Parallel()
	const dim = 16
	r := rand.New(rand.NewPCG(3, 3))
	var mems []mnemotype.Memory
	for i := range 300 {
		mems = append(mems, mem(fmt.Sprintf("m%03d", i), emb("m", randUnit(r, dim)...)))
	}
	x := newIndex(t, mems...)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 9))
			for i := range 300 {
				id := fmt.Sprintf("m%03d", r.IntN(400))
				switch i % 3 {
				case 0:
					if err := x.Upsert([]mnemotype.Memory{mem(id, emb("m", randUnit(r, dim)...))}); err != nil {
						t.Error(err)
					}
				case 1:
					x.Delete(id)
				default:
					_ = x.Bytes()
				}
			}
		})
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 10))
			for range 300 {
				q := randUnit(r, dim)
				hits, err := x.Search(q, "m", vector.Filter{Exclude: []string{"m001"}}, 10)
				if err != nil {
					t.Error(err)
					return
				}
				checkSorted(t, hits)
				if _, err := x.Score(q, "m", hitIDs(hits)); err != nil {
					t.Error(err)
				}
				_ = x.Len()
			}
		})
	}
	wg.Wait()
}

// TestIndex_SearchScoresAreScores: a search's scores are Score's to the
// bit, whether its rows are scored a block at a time (most of a block in
// scope) or one by one (few), serially or in parallel, with rows of
// another model mixed in.
func TestIndex_SearchScoresAreScores(t *testing.T) {
	t.Parallel()
	const dim, n = 37, 3000
	r := rand.New(rand.NewPCG(3, 4))
	x := vector.New()
	var mems []mnemotype.Memory
	for i := range n {
		v := make([]float32, dim)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		model := "m1"
		if r.IntN(10) == 0 {
			model = "m2"
		}
		sess := "common"
		if r.IntN(40) == 0 {
			sess = "rare"
		}
		mems = append(mems, mem(fmt.Sprintf("m%04d", i), session(sess), emb(model, v...)))
	}
	if err := x.Upsert(mems); err != nil {
		t.Fatal(err)
	}
	q := make([]float32, dim)
	for j := range q {
		q[j] = float32(r.NormFloat64())
	}
	for _, f := range []vector.Filter{{}, {Sessions: []string{"rare"}}, {Sessions: []string{"common"}}} {
		for name, search := range map[string]func([]float32, string, vector.Filter, int) ([]mnemotype.Hit, error){"serial": x.SearchSerial, "parallel": x.Search} {
			hits, err := search(q, "m1", f, 200)
			if err != nil || len(hits) == 0 {
				t.Fatalf("%s %+v: %v, %v", name, f, hits, err)
			}
			ids := make([]string, len(hits))
			for i, h := range hits {
				ids[i] = h.ID
			}
			scored, err := x.Score(q, "m1", ids)
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]float64{}
			for _, h := range scored {
				want[h.ID] = h.Score
			}
			for _, h := range hits {
				if w, ok := want[h.ID]; !ok || w != h.Score {
					t.Fatalf("%s %+v: %s searched %v, scored %v", name, f, h.ID, h.Score, w)
				}
			}
		}
	}
}
