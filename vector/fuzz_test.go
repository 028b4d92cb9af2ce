package vector_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/vector"
)

func f32bytes(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// FuzzSearch builds an index from seed (unit rows, some shared so that
// scores tie, some without embedding or of another model) and searches it
// with a query read from qraw as float32 bits, so NaN, ±Inf, huge and
// subnormal components all occur. Invariants: results sorted best first
// (ties by id), at most k, all inside the filter and of the model, no NaN;
// for a finite query of sane norm, scores match the float64 cosine and
// the result holds min(k, eligible) hits. Score over every id is sorted and
// NaN-free too.
func FuzzSearch(f *testing.F) {
	f.Add(uint64(1), uint16(50), uint8(8), 5, uint8(0), f32bytes(1, 0, 0, 0, 0, 0, 0, 0))
	f.Add(uint64(2), uint16(300), uint8(3), 1000, uint8(0xff), f32bytes(0.1, -0.2, 0.3))
	f.Add(uint64(3), uint16(10), uint8(4), 3, uint8(0x0f), f32bytes(0, 0, 0, 0))
	f.Add(uint64(4), uint16(10), uint8(4), 3, uint8(0), f32bytes(float32(math.NaN()), 1, 1, 1))
	f.Add(uint64(5), uint16(10), uint8(2), 3, uint8(0), f32bytes(float32(math.Inf(-1)), 1))
	f.Add(uint64(6), uint16(99), uint8(5), 7, uint8(0x33), f32bytes(1e30, -1e30, 1e-40, 3e38, 1))
	f.Add(uint64(7), uint16(0), uint8(1), -1, uint8(0), []byte{})
	// Found by fuzzing: a subnormal query made 1/‖q‖ overflow to +Inf, so
	// Score returned NaN and Search ±Inf.
	f.Add(uint64(103), uint16(33), uint8('J'), 7, uint8('3'), []byte("\x01\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, seed uint64, n uint16, dim uint8, k int, filterBits uint8, qraw []byte) {
		r := rand.New(rand.NewPCG(seed, 42))
		d := 1 + int(dim)%32
		n %= 400
		palette := [][]float32{randUnit(r, d), randUnit(r, d), randUnit(r, d)}
		projects := []string{"", "p1", "p2"}
		sessions := []string{"", "s1", "s2"}
		mems := make([]mnemotype.Memory, n)
		for i := range mems {
			m := mem(fmt.Sprintf("m%03d", i), project(projects[r.IntN(3)]), session(sessions[r.IntN(3)]),
				kind(mnemotype.Kinds[r.IntN(3)]))
			switch c := r.IntN(10); {
			case c < 3:
				emb("m", palette[r.IntN(len(palette))]...)(&m) // shared vectors: exact ties
			case c < 8:
				emb("m", randUnit(r, d)...)(&m)
			case c < 9:
				emb("other", randUnit(r, d)...)(&m)
			}
			mems[i] = m
		}
		x := vector.New()
		if err := x.Upsert(mems); err != nil {
			t.Fatal(err)
		}

		var flt vector.Filter
		if filterBits&1 != 0 {
			flt.Project = projects[1+int(filterBits>>4)%2]
		}
		if filterBits&2 != 0 {
			flt.Sessions = []string{sessions[int(filterBits>>5)%3], "nope"}
		}
		if filterBits&4 != 0 {
			flt.Kinds = []mnemotype.Kind{mnemotype.Kinds[int(filterBits>>6)%3]}
		}
		if filterBits&8 != 0 {
			for i := 0; i < int(n); i += 3 {
				flt.Exclude = append(flt.Exclude, fmt.Sprintf("m%03d", i))
			}
		}
		in := func(m mnemotype.Memory) bool {
			return (flt.Project == "" || m.Project == flt.Project) &&
				(len(flt.Sessions) == 0 || slices.Contains(flt.Sessions, m.Session)) &&
				(len(flt.Kinds) == 0 || slices.Contains(flt.Kinds, m.Kind)) &&
				!slices.Contains(flt.Exclude, m.ID)
		}

		q := make([]float32, d)
		for i := range q {
			if 4*i+4 <= len(qraw) {
				q[i] = math.Float32frombits(binary.LittleEndian.Uint32(qraw[4*i:]))
			}
		}
		hits, err := x.Search(q, "m", flt, k)
		if err != nil {
			if n == 0 { // the index has no dimension yet
				return
			}
			t.Fatalf("Search: %v", err)
		}
		if len(hits) > max(k, 0) {
			t.Fatalf("%d hits for k = %d", len(hits), k)
		}
		checkSorted(t, hits)
		byID := make(map[string]mnemotype.Memory, len(mems))
		eligible := 0
		for _, m := range mems {
			byID[m.ID] = m
			if m.EmbeddingModel == "m" && in(m) {
				eligible++
			}
		}
		for _, h := range hits {
			m, ok := byID[h.ID]
			if !ok || m.EmbeddingModel != "m" || !in(m) {
				t.Fatalf("hit %s (model %q) is outside the filter %+v", h.ID, m.EmbeddingModel, flt)
			}
		}

		// Score over every id obeys the same invariants.
		all := make([]string, len(mems))
		for i, m := range mems {
			all[i] = m.ID
		}
		scored, err := x.Score(q, "m", all)
		if err != nil {
			t.Fatalf("Score: %v", err)
		}
		checkSorted(t, scored)
		for _, h := range scored {
			if byID[h.ID].EmbeddingModel != "m" {
				t.Fatalf("Score lists %s of model %q", h.ID, byID[h.ID].EmbeddingModel)
			}
		}

		var qn float64
		for _, f := range q {
			qn += float64(f) * float64(f)
		}
		if qn < 1e-12 || qn > 1e12 || math.IsNaN(qn) {
			return // no sane query: the invariants above are all that hold
		}
		if want := min(max(k, 0), eligible); len(hits) != want {
			t.Fatalf("%d hits, want min(k=%d, eligible=%d)", len(hits), k, eligible)
		}
		for _, h := range hits {
			if want := cosine64(q, byID[h.ID].Embedding); math.Abs(h.Score-want) > 1e-4 {
				t.Fatalf("%s: score %v, want cosine %v", h.ID, h.Score, want)
			}
		}
	})
}
