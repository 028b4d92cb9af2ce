package vector_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/vector"
)

// clustered returns n unit vectors of dim around nc random centres (as
// text embeddings are: topics, not uniform noise).
func clustered(r *rand.Rand, n, dim, nc int, spread float64) [][]float32 {
	centres := make([][]float32, nc)
	for i := range centres {
		centres[i] = randUnit(r, dim)
	}
	out := make([][]float32, n)
	for i := range out {
		c := centres[r.IntN(nc)]
		v := make([]float32, dim)
		for j := range v {
			v[j] = c[j] + float32(r.NormFloat64()*spread)
		}
		out[i] = v
	}
	return out
}

// growAll links every row of x into its graph.
func growAll(x *vector.Index) {
	for x.GrowGraph(512, 2) > 0 {
	}
}

// overlap is the share of want's ids found in got.
func overlap(got, want []mnemotype.Hit) float64 {
	in := map[string]bool{}
	for _, h := range got {
		in[h.ID] = true
	}
	n := 0
	for _, h := range want {
		if in[h.ID] {
			n++
		}
	}
	return float64(n) / float64(max(1, len(want)))
}

// TestGraph_Recall checks the walk against the exact scan on 10,000
// clustered rows: unscoped, in a project of half the rows, and with a
// time filter the postings cannot evaluate, it finds at least 98% of the
// exact top 10 (of a top 30, as recall asks), never a row outside the
// scope, and always k rows. A small session is scanned exactly.
func TestGraph_Recall(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a 10,000-row graph")
	}
	const n, dim = 10_000, 32
	r := rand.New(rand.NewPCG(7, 7))
	vecs := clustered(r, n, dim, 200, 0.08)
	mems := make([]mnemotype.Memory, n)
	for i := range mems {
		p := "even"
		if i%2 == 1 {
			p = "odd"
		}
		mems[i] = mem(fmt.Sprintf("m%05d", i), emb("m", vecs[i]...), project(p), session(fmt.Sprintf("s%d", i/100)))
	}
	x := newIndex(t, mems...)
	exact := newIndex(t, mems...)
	exact.SetANN(vector.ANN{ExactBelow: 1 << 30})
	x.SetANN(vector.ANN{ExactBelow: 2000, Ef: 64})
	if got := x.Graph().Unlinked; got != n {
		t.Fatalf("unlinked before the graph: %d, want %d", got, n)
	}
	growAll(x)
	if g := x.Graph(); g.Linked != n || g.Tombstones != 0 || g.Unlinked != 0 {
		t.Fatalf("graph %+v; want %d linked", g, n)
	}
	scopes := []struct {
		name string
		f    vector.Filter
		in   func(i int) bool
	}{
		{"all", vector.Filter{}, func(int) bool { return true }},
		{"project", vector.Filter{Project: "odd"}, func(i int) bool { return i%2 == 1 }},
		{"time", vector.Filter{Before: mems[0].CreatedAt.Add(1)}, func(int) bool { return true }},
		{"session", vector.Filter{Sessions: []string{"s7"}}, func(i int) bool { return i/100 == 7 }},
		{"exclude", vector.Filter{Exclude: []string{"m00000", "m00001"}}, func(i int) bool { return i > 1 }},
	}
	for _, sc := range scopes {
		walks := x.Walks()
		var sum float64
		const queries = 100
		for range queries {
			q := vecs[r.IntN(n)]
			q = append([]float32(nil), q...)
			for j := range q {
				q[j] += float32(r.NormFloat64() * 0.05)
			}
			got := search(t, x, q, "m", sc.f, 30)
			want := search(t, exact, q, "m", sc.f, 30)
			if len(got) != len(want) {
				t.Fatalf("%s: %d hits, exact %d", sc.name, len(got), len(want))
			}
			for _, h := range got {
				var i int
				fmt.Sscanf(h.ID, "m%05d", &i)
				if !sc.in(i) {
					t.Fatalf("%s: %s is outside the scope", sc.name, h.ID)
				}
			}
			checkSorted(t, got)
			sum += overlap(got[:10], want[:10])
		}
		if walked := x.Walks() - walks; walked != queries && !(sc.name == "session" && walked == 0) {
			t.Errorf("%s: %d of %d searches walked the graph", sc.name, walked, queries)
		}
		if rec := sum / queries; rec < 0.98 || (sc.name == "session" && rec != 1) {
			t.Errorf("%s: recall@10 against exact %.3f", sc.name, rec)
		} else {
			t.Logf("%s: recall@10 against exact %.3f", sc.name, rec)
		}
	}
}

// TestGraph_Writes interleaves upserts (new rows, re-embedded rows, rows
// whose embedding is unchanged or dropped), deletes and partial growth of
// the graph, and checks after each step that a walk with a candidate list
// as large as the index returns exactly what the exact scan does: the
// rows, the tail and the tombstones stay consistent however rows move.
func TestGraph_Writes(t *testing.T) {
	t.Parallel()
	const dim = 8
	r := rand.New(rand.NewPCG(3, 9))
	x := vector.NewDim(dim)
	x.SetANN(vector.ANN{ExactBelow: 1, Ef: 1 << 20})
	ref := vector.NewDim(dim)
	ref.SetANN(vector.ANN{ExactBelow: 1 << 30})
	ids := func() string { return fmt.Sprintf("m%03d", r.IntN(600)) }
	for step := range 300 {
		var batch []mnemotype.Memory
		for range r.IntN(20) {
			m := mem(ids(), session(fmt.Sprintf("s%d", r.IntN(3))))
			switch c := r.IntN(10); {
			case c < 7:
				emb("m", randUnit(r, dim)...)(&m)
			case c < 8:
				emb("other", randUnit(r, dim)...)(&m)
			}
			batch = append(batch, m)
		}
		if r.IntN(4) == 0 && len(batch) > 0 { // an unchanged upsert keeps its node
			batch = append(batch, batch[0])
		}
		for _, y := range []*vector.Index{x, ref} {
			if err := y.Upsert(batch); err != nil {
				t.Fatal(err)
			}
		}
		var del []string
		for range r.IntN(8) {
			del = append(del, ids())
		}
		x.Delete(del...)
		ref.Delete(del...)
		if r.IntN(3) > 0 {
			x.GrowGraph(r.IntN(40), 1+r.IntN(3))
		}
		for _, f := range []vector.Filter{{}, {Sessions: []string{"s1"}}} {
			q := randUnit(r, dim)
			got, want := search(t, x, q, "m", f, 10), search(t, ref, q, "m", f, 10)
			if !slices.Equal(hitIDs(got), hitIDs(want)) {
				t.Fatalf("step %d, filter %+v: walk %v, exact %v", step, f, hitIDs(got), hitIDs(want))
			}
		}
	}
	g := x.Graph()
	if g.Linked+g.Unlinked != ref.Embedded() {
		t.Fatalf("graph %+v, %d rows embedded", g, ref.Embedded())
	}
	t.Logf("graph %+v", g)
}

// TestGraph_Reset: once a fifth of the nodes are tombstones, GrowGraph
// starts over from the rows.
func TestGraph_Reset(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 5))
	var mems []mnemotype.Memory
	for i := range 100 {
		mems = append(mems, mem(fmt.Sprintf("m%03d", i), emb("m", randUnit(r, 4)...)))
	}
	x := newIndex(t, mems...)
	growAll(x)
	var del []string
	for i := range 25 {
		del = append(del, mems[i].ID)
	}
	x.Delete(del...)
	if g := x.Graph(); g.Linked != 75 || g.Tombstones != 25 {
		t.Fatalf("after deletes: %+v", g)
	}
	if left := x.GrowGraph(10, 2); left != 65 {
		t.Fatalf("GrowGraph after the reset left %d on the tail, want 65", left)
	}
	if g := x.Graph(); g.Linked != 10 || g.Tombstones != 0 {
		t.Fatalf("after the reset: %+v", g)
	}
}

// TestGraph_EncodeDecode: the graph, its tombstones and the tail survive
// an encoding, and the decoded index answers as the original.
func TestGraph_EncodeDecode(t *testing.T) {
	t.Parallel()
	const n, dim = 3000, 16
	r := rand.New(rand.NewPCG(11, 1))
	vecs := clustered(r, n, dim, 20, 0.1)
	var mems []mnemotype.Memory
	for i := range n {
		mems = append(mems, mem(fmt.Sprintf("m%04d", i), emb("m", vecs[i]...), session(fmt.Sprintf("s%d", i%7))))
	}
	x := newIndex(t, mems...)
	x.SetANN(vector.ANN{ExactBelow: 100})
	growAll(x)
	x.Delete("m0001", "m0002", "m0100")
	if err := x.Upsert([]mnemotype.Memory{mem("m0003", emb("m", randUnit(r, dim)...)), mem("new", emb("m", randUnit(r, dim)...))}); err != nil {
		t.Fatal(err)
	}
	x.GrowGraph(1, 2)
	var buf bytes.Buffer
	if err := x.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	y, err := vector.Decode(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	y.SetANN(vector.ANN{ExactBelow: 100})
	if d := vector.Diff(x, y, 5); len(d) > 0 {
		t.Fatalf("decoded index differs: %v", d)
	}
	if g1, g2 := x.Graph(), y.Graph(); g1 != g2 || g1.Tombstones == 0 || g1.Unlinked == 0 {
		t.Fatalf("graph %+v; decoded %+v", g1, g2)
	}
	for range 50 {
		q := randUnit(r, dim)
		a, b := search(t, x, q, "m", vector.Filter{}, 30), search(t, y, q, "m", vector.Filter{}, 30)
		if !slices.Equal(hitIDs(a), hitIDs(b)) {
			t.Fatalf("decoded index answers %v, original %v", hitIDs(b), hitIDs(a))
		}
	}
	// Without its graph: the same rows, every embedded one on the tail.
	z, err := vector.DecodeWith(bytes.NewReader(buf.Bytes()), int64(buf.Len()), vector.DecodeOptions{NoGraph: true})
	if err != nil {
		t.Fatal(err)
	}
	if d := vector.Diff(x, z, 5); len(d) > 0 {
		t.Fatalf("decoded index without its graph differs: %v", d)
	}
	if g := z.Graph(); g.Linked != 0 || g.Unlinked != z.Embedded() || !z.GraphLeftOut() || y.GraphLeftOut() {
		t.Fatalf("decoded without its graph: %+v, %d embedded", g, z.Embedded())
	}
	// Every truncation is refused, never a panic.
	for cut := buf.Len() - 1; cut > buf.Len()-160*1024 && cut > 0; cut -= 4099 {
		if _, err := vector.Decode(bytes.NewReader(buf.Bytes()[:cut]), int64(cut)); err == nil {
			t.Fatalf("a truncation at %d of %d decoded", cut, buf.Len())
		}
		if _, err := vector.DecodeWith(bytes.NewReader(buf.Bytes()[:cut]), int64(cut), vector.DecodeOptions{NoGraph: true}); err == nil {
			t.Fatalf("a truncation at %d of %d decoded without the graph", cut, buf.Len())
		}
	}
}

// TestGraph_GrowsDuringWrites grows a graph in two phases on two
// goroutines while another writes (new rows, re-embedded rows, deletes):
// rows changed between a batch's phases wait for the next, and in the end
// every embedded row is linked once and a walk as wide as the index finds
// what the exact scan does.
func TestGraph_GrowsDuringWrites(t *testing.T) {
	t.Parallel()
	const dim = 8
	r := rand.New(rand.NewPCG(21, 4))
	var mems []mnemotype.Memory
	for i := range 3000 {
		mems = append(mems, mem(fmt.Sprintf("m%04d", i), emb("m", randUnit(r, dim)...)))
	}
	x := newIndex(t, mems...)
	growAll(x)
	ref := newIndex(t, mems...)
	ref.SetANN(vector.ANN{ExactBelow: 1 << 30})
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := rand.New(rand.NewPCG(21, 5))
		for range 300 {
			var batch []mnemotype.Memory
			for range 10 {
				batch = append(batch, mem(fmt.Sprintf("m%04d", w.IntN(4000)), emb("m", randUnit(w, dim)...)))
			}
			del := fmt.Sprintf("m%04d", w.IntN(4000))
			for _, y := range []*vector.Index{x, ref} {
				if err := y.Upsert(batch); err != nil {
					panic(err)
				}
				y.Delete(del)
			}
		}
	}()
	for grown := false; !grown; {
		select {
		case <-done:
			grown = true
		default:
			x.GrowGraph(32, 2)
		}
	}
	growAll(x)
	if g := x.Graph(); g.Unlinked != 0 || g.Linked != ref.Embedded() {
		t.Fatalf("graph %+v, %d embedded", g, ref.Embedded())
	}
	x.SetANN(vector.ANN{ExactBelow: 1, Ef: 1 << 20})
	for range 50 {
		q := randUnit(r, dim)
		got, want := search(t, x, q, "m", vector.Filter{}, 10), search(t, ref, q, "m", vector.Filter{}, 10)
		if !slices.Equal(hitIDs(got), hitIDs(want)) {
			t.Fatalf("walk %v, exact %v", hitIDs(got), hitIDs(want))
		}
	}
}
