package vector

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// checkNorms fails unless x.norms is in step with x.rows: one entry a
// slot, 1/‖embedding‖ of the slot's own embedding (0 without one), the
// graph's live nodes carrying their slot's entry and its tombstones a
// unit-length vector.
func checkNorms(t *testing.T, what string, x *Index) {
	t.Helper()
	if len(x.norms) != len(x.rows) {
		t.Fatalf("%s: %d norms for %d rows", what, len(x.norms), len(x.rows))
	}
	buf := make([]float32, x.dim)
	for s := range x.rows {
		want := float32(0)
		if x.rows[s].model >= 0 {
			v, err := x.vector(s, buf)
			if err != nil {
				t.Fatal(err)
			}
			want = invNorm(v)
		}
		if x.norms[s] != want {
			t.Fatalf("%s: slot %d (%s): norm %v, want %v", what, s, x.rows[s].id, x.norms[s], want)
		}
	}
	g := x.graph
	if g == nil {
		return
	}
	for n, gn := range g.nodes {
		if gn.slot < 0 {
			var ss float64
			for _, f := range g.ghosts[int32(n)] {
				ss += float64(f) * float64(f)
			}
			if gn.inv != 1 || math.Abs(ss-1) > 1e-4 {
				t.Fatalf("%s: tombstone %d: inv %v, |ghost|² %v", what, n, gn.inv, ss)
			}
			continue
		}
		if x.rows[gn.slot].node != int32(n) || gn.inv != x.norms[gn.slot] {
			t.Fatalf("%s: node %d at slot %d (node %d): inv %v, norm %v", what, n, gn.slot, x.rows[gn.slot].node, gn.inv, x.norms[gn.slot])
		}
	}
}

// TestIndex_NormsInStep: embeddings of widely different lengths, written,
// re-embedded (before and after linking), dropped and deleted (which moves
// the last row), a graph grown in both phases, Reserve, and every decoding
// (with and without the graph, coded, then written to): the norms stay in
// step with the rows, and Search and Score give each row its own cosine.
func TestIndex_NormsInStep(t *testing.T) {
	t.Parallel()
	const dim, nIDs = 12, 3000
	r := rand.New(rand.NewPCG(17, 3))
	vec := func() []float32 {
		v := make([]float32, dim)
		sc := math.Exp(r.Float64()*8 - 4) // lengths from 0.02 to 55 times
		for i := range v {
			v[i] = float32(r.NormFloat64() * sc)
		}
		return v
	}
	embs := map[string][]float32{} // each id's embedding ("m" model only)
	random := func(id string) mnemotype.Memory {
		m := mnemotype.Memory{ID: id, Session: fmt.Sprint("s", r.IntN(4))}
		switch c := r.IntN(20); {
		case c < 16:
			m.Embedding, m.EmbeddingModel = vec(), "m"
		case c < 17:
			m.Embedding, m.EmbeddingModel = []float32{1, 2, 3}, "m" // foreign
		case c < 18:
			m.Embedding, m.EmbeddingModel = make([]float32, dim), "m" // zero
		}
		if len(m.Embedding) == dim && invNorm(m.Embedding) > 0 {
			embs[id] = m.Embedding
		} else {
			delete(embs, id)
		}
		return m
	}
	write := func(x *Index, n int) {
		for range n {
			id := fmt.Sprint("m", r.IntN(nIDs))
			switch c := r.IntN(10); {
			case c < 3:
				x.Delete(id, fmt.Sprint("m", r.IntN(nIDs)), "nobody")
				delete(embs, id)
			case c < 4: // the same embedding again: the row keeps its node
				if v, ok := embs[id]; ok {
					if err := x.Upsert([]mnemotype.Memory{{ID: id, Embedding: v, EmbeddingModel: "m"}}); err != nil {
						t.Fatal(err)
					}
					continue
				}
				fallthrough
			default:
				if err := x.Upsert([]mnemotype.Memory{random(id)}); err != nil && !errors.Is(err, mnemotype.ErrDimensionMismatch) {
					t.Fatal(err)
				}
			}
		}
		// A Delete names a second id that embs still holds: drop those.
		for id := range embs {
			if _, ok := x.slot[id]; !ok {
				delete(embs, id)
			}
		}
	}
	verify := func(what string, x *Index) {
		t.Helper()
		checkNorms(t, what, x)
		for range 5 {
			q := vec()
			qn := float64(invNorm(q))
			cos := func(id string) float64 {
				v := embs[id]
				var d float64
				for i := range v {
					d += float64(q[i]) * float64(v[i])
				}
				return d * qn * float64(invNorm(v))
			}
			for _, f := range []Filter{{}, {Sessions: []string{"s1"}}} {
				hits, err := x.Search(q, "m", f, 20)
				if err != nil {
					t.Fatal(err)
				}
				if len(hits) == 0 {
					t.Fatalf("%s: no hits", what)
				}
				for _, h := range hits {
					if want := cos(h.ID); math.Abs(h.Score-want) > 1e-5 {
						t.Fatalf("%s: Search(%+v): %s scores %v, its cosine is %v", what, f, h.ID, h.Score, want)
					}
				}
			}
			var ids []string
			for range 20 {
				ids = append(ids, fmt.Sprint("m", r.IntN(nIDs)))
			}
			scored, err := x.Score(q, "m", ids)
			if err != nil {
				t.Fatal(err)
			}
			for _, h := range scored {
				if want := cos(h.ID); math.Abs(h.Score-want) > 1e-5 {
					t.Fatalf("%s: Score: %s scores %v, its cosine is %v", what, h.ID, h.Score, want)
				}
			}
		}
	}

	x := NewDim(dim)
	x.SetANN(ANN{ExactBelow: 1, Ef: 1 << 20})
	x.Reserve(100)
	write(x, 4000)
	verify("written", x)
	for x.GrowGraph(64, 2) > 0 { // past parallelFrom (1024 nodes): both phases
	}
	if g := x.Graph(); g.Linked <= parallelFrom { // 1024 is 16 batches of 64: the next ran in two phases
		t.Fatalf("graph %+v: the two-phase growth was not reached", g)
	}
	verify("linked", x)
	write(x, 600) // deletes and re-embeddings of linked rows: tombstones
	if x.graph.dead == 0 {
		t.Fatal("no tombstones")
	}
	verify("written after linking", x)
	b := encode(t, x) // with its tombstones
	x.GrowGraph(50, 2)
	x.Reserve(500)
	verify("grown again", x)

	y, err := Decode(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	y.SetANN(ANN{ExactBelow: 1, Ef: 1 << 20})
	verify("decoded", y)
	write(y, 300)
	verify("decoded, then written", y)
	y.GrowGraph(100, 2)
	verify("decoded, written, grown", y)

	b = encode(t, y)
	z, err := DecodeWith(bytes.NewReader(b), int64(len(b)), DecodeOptions{NoGraph: true})
	if err != nil {
		t.Fatal(err)
	}
	verify("decoded without graph", z)

	var enc bytes.Buffer
	if err := y.EncodeIndex(&enc); err != nil {
		t.Fatal(err)
	}
	c, err := DecodeIndex(bytes.NewReader(enc.Bytes()), int64(enc.Len()), DecodeOptions{Codes: &Source{R: bytes.NewReader(enc.Bytes())}})
	if err != nil {
		t.Fatal(err)
	}
	if !c.Coded() {
		t.Fatal("not coded")
	}
	verify("coded", c)
	write(c, 300)
	verify("coded, then written", c)
	c.GrowGraph(2000, 2) // reads the float32s
	if c.Coded() {
		t.Fatal("still coded after GrowGraph")
	}
	verify("coded, float32s read and linked", c)
}
