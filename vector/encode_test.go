package vector

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// randomIndex is an index of n rows over a few projects, sessions, actors,
// kinds and models, some rows without or with a foreign embedding, some
// deleted (so slots were reused).
func randomIndex(t testing.TB, seed uint64, n, dim int) *Index {
	r := rand.New(rand.NewPCG(seed, 9))
	x := NewDim(dim)
	at := time.Date(2024, 2, 3, 4, 5, 6, 7, time.UTC)
	for i := range n {
		m := mnemotype.Memory{ID: fmt.Sprintf("m%d", i), Project: fmt.Sprint("p", r.IntN(3)), Session: fmt.Sprint("s", r.IntN(7)),
			Actor: fmt.Sprint("a", r.IntN(2)), Kind: mnemotype.Kinds[r.IntN(len(mnemotype.Kinds))],
			CreatedAt: at.Add(time.Duration(r.IntN(1e9)) * time.Millisecond)}
		switch c := r.IntN(10); {
		case c < 7:
			m.Embedding, m.EmbeddingModel = make([]float32, dim), fmt.Sprint("model", r.IntN(2))
			for j := range m.Embedding {
				m.Embedding[j] = float32(r.NormFloat64())
			}
		case c < 8:
			m.Embedding, m.EmbeddingModel = []float32{1, 2}, "other" // another dimension
		}
		if err := x.Upsert([]mnemotype.Memory{m}); err != nil && !errors.Is(err, mnemotype.ErrDimensionMismatch) {
			t.Fatal(err)
		}
		if r.IntN(5) == 0 {
			x.Delete(fmt.Sprintf("m%d", r.IntN(i+1)))
		}
	}
	return x
}

func encode(t testing.TB, x *Index) []byte {
	var buf bytes.Buffer
	if err := x.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestEncode_RoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ n, dim int }{{0, 0}, {0, 8}, {1, 8}, {300, 8}, {2000, 33}} {
		t.Run(fmt.Sprintf("n=%d/dim=%d", tc.n, tc.dim), func(t *testing.T) {
			t.Parallel()
			x := randomIndex(t, uint64(tc.n), tc.n, tc.dim)
			b := encode(t, x)
			y, err := Decode(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatal(err)
			}
			checkPostings(t, y)
			fx, dx := x.Foreign()
			fy, dy := y.Foreign()
			if y.Len() != x.Len() || y.Dim() != x.Dim() || y.Embedded() != x.Embedded() || fx != fy || dx != dy || y.Bytes() > x.Bytes() {
				t.Fatalf("decoded: len %d dim %d embedded %d foreign %d/%d bytes %d; want %d %d %d %d/%d, at most %d",
					y.Len(), y.Dim(), y.Embedded(), fy, dy, y.Bytes(), x.Len(), x.Dim(), x.Embedded(), fx, dx, x.Bytes())
			}
			if !bytes.Equal(encode(t, y), b) {
				t.Fatal("re-encoding the decoded index differs")
			}
			if tc.dim == 0 || tc.n == 0 {
				return
			}
			r := rand.New(rand.NewPCG(1, 2))
			for i := range 50 {
				q := make([]float32, tc.dim)
				for j := range q {
					q[j] = float32(r.NormFloat64())
				}
				f := Filter{Project: []string{"", "p1"}[i%2], Sessions: [][]string{nil, {"s2"}, {"s3", "s5"}}[i%3],
					Actors: [][]string{nil, {"a1"}}[i%2], After: time.Date(2024, 2, 3, 10, 0, 0, 0, time.UTC)}
				if i%4 == 0 {
					f.After = time.Time{}
				}
				want, err1 := x.Search(q, "model1", f, 10)
				got, err2 := y.Search(q, "model1", f, 10)
				if err1 != nil || err2 != nil || !slices.Equal(got, want) {
					t.Fatalf("Search(%+v) on the decoded index = %v, %v; want %v, %v", f, got, err2, want, err1)
				}
			}
		})
	}
}

// TestDecode_Corrupt: every truncation and a byte flipped anywhere are
// refused or decode to a consistent index; none panics.
func TestDecode_Corrupt(t *testing.T) {
	t.Parallel()
	b := encode(t, randomIndex(t, 5, 40, 4))
	for n := range len(b) {
		if _, err := Decode(bytes.NewReader(b[:n]), int64(n)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("Decode of the first %d of %d bytes = %v, want ErrCorrupt", n, len(b), err)
		}
	}
	if _, err := Decode(bytes.NewReader(b), int64(len(b))-1); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Decode with a size bound short of the encoding = %v, want ErrCorrupt", err)
	}
	if _, err := Decode(bytes.NewReader(append(slices.Clone(b), 1, 2, 3)), int64(len(b))+3); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Decode of the encoding and 3 more bytes = %v, want ErrCorrupt", err)
	}
	r := rand.New(rand.NewPCG(7, 7))
	for range 2000 {
		c := slices.Clone(b)
		c[r.IntN(len(c))] ^= byte(1 + r.IntN(255))
		if x, err := Decode(bytes.NewReader(c), int64(len(c))); err == nil {
			checkPostings(t, x)
		}
	}
}

// graphIndex is randomIndex with a graph holding most rows, tombstones
// among its nodes, and rows on its tail.
func graphIndex(t testing.TB, seed uint64, n, dim int) *Index {
	x := randomIndex(t, seed, n, dim)
	for x.GrowGraph(64, 2) > 0 {
	}
	for s := 0; s < n; s += 7 {
		x.Delete(x.rows[0].id)
	}
	r := rand.New(rand.NewPCG(seed, 3))
	if err := x.Upsert([]mnemotype.Memory{{ID: "late", Embedding: randVec(r, dim), EmbeddingModel: "m"}}); err != nil {
		t.Fatal(err)
	}
	return x
}

func randVec(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// checkGraph fails unless every embedded row of x is in its graph or on
// its tail, once.
func checkGraph(t *testing.T, x *Index) {
	t.Helper()
	if g := x.Graph(); g.Linked+g.Unlinked != x.Embedded() {
		t.Fatalf("graph %+v, %d embedded rows", g, x.Embedded())
	}
}

// TestDecode_CorruptGraph flips bytes of an encoding with a graph: Decode
// refuses it or returns an index whose graph and tail hold every embedded
// row once and which walks and grows without a panic.
func TestDecode_CorruptGraph(t *testing.T) {
	t.Parallel()
	x := graphIndex(t, 4, 80, 3)
	if g := x.Graph(); g.Tombstones == 0 || g.Unlinked == 0 || g.Linked == 0 {
		t.Fatalf("graph %+v: want nodes, tombstones and a tail", g)
	}
	b := encode(t, x)
	r := rand.New(rand.NewPCG(8, 8))
	decoded := 0
	for range 3000 {
		c := slices.Clone(b)
		c[r.IntN(len(c))] ^= byte(1 + r.IntN(255))
		y, err := Decode(bytes.NewReader(c), int64(len(c)))
		if err != nil {
			continue
		}
		decoded++
		checkGraph(t, y)
		y.SetANN(ANN{ExactBelow: 1})
		if _, err := y.Search([]float32{1, 0, 0}, "model0", Filter{}, 5); err != nil {
			t.Fatal(err)
		}
		y.GrowGraph(100, 2)
		checkGraph(t, y)
	}
	t.Logf("%d of 3000 corrupted encodings decoded", decoded)
}

func FuzzDecode(f *testing.F) {
	f.Add(encode(f, randomIndex(f, 1, 5, 3)))
	f.Add(encode(f, NewDim(2)))
	f.Add(encode(f, graphIndex(f, 2, 60, 3)))
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := Decode(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			return
		}
		checkPostings(t, x)
		checkGraph(t, x)
		x.SetANN(ANN{ExactBelow: 1})
		for _, f := range []Filter{{Sessions: []string{"s"}}, {}} {
			if _, err := x.Search(make([]float32, x.Dim()), "model0", f, 3); err != nil {
				t.Fatal(err)
			}
			if x.Dim() > 0 {
				q := make([]float32, x.Dim())
				q[0] = 1
				if _, err := x.Search(q, "model0", f, 3); err != nil {
					t.Fatal(err)
				}
			}
		}
		x.GrowGraph(4, 2)
		checkGraph(t, x)
		fuzzCoded(t, b)
	})
}

// fuzzCoded decodes b's codes alone (DecodeOptions.Codes): what decodes
// searches, takes writes and searches again, failing only with
// ErrCorrupt (a float32 that does not match its checksum).
func fuzzCoded(t *testing.T, b []byte) {
	x, err := DecodeIndex(bytes.NewReader(b), int64(len(b)), DecodeOptions{Codes: &Source{R: bytes.NewReader(b)}})
	if err != nil || !x.Coded() {
		return
	}
	search := func() {
		q := make([]float32, x.Dim())
		q[0] = 1
		for _, f := range []Filter{{Sessions: []string{"s"}}, {}} {
			if _, err := x.Search(q, "model0", f, 3); err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatal(err)
			}
		}
	}
	search()
	v := make([]float32, x.Dim())
	v[0] = 1
	if err := x.Upsert([]mnemotype.Memory{{ID: "fuzz", Embedding: v, EmbeddingModel: "model0"}}); err != nil {
		t.Fatal(err)
	}
	x.Delete(x.rows[0].id)
	search()
}

func TestDecode_DuplicateID(t *testing.T) {
	t.Parallel()
	x := NewDim(2)
	if err := x.Upsert([]mnemotype.Memory{
		{ID: "qa0", Embedding: []float32{1, 0}, EmbeddingModel: "m"},
		{ID: "qa1", Embedding: []float32{0, 1}, EmbeddingModel: "m"},
	}); err != nil {
		t.Fatal(err)
	}
	b := encode(t, x)
	i := bytes.Index(b, []byte("qa1"))
	if i < 0 {
		t.Fatal("id not in the encoding")
	}
	b[i+2] = '0'
	if _, err := Decode(bytes.NewReader(b), int64(len(b))); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("Decode of an encoding holding qa0 twice = %v", err)
	}
}

// TestGraph_NaNRowIsLinked: a decoded row whose embedding holds a NaN (a
// snapshot written by hand: Upsert never stores one) is linked like any
// other, so growing the graph ends (found by review: a comparison that
// found NaN unequal to itself left it on the tail forever).
func TestGraph_NaNRowIsLinked(t *testing.T) {
	t.Parallel()
	const dim = 4
	r := rand.New(rand.NewPCG(1, 1))
	x := NewDim(dim)
	var mems []mnemotype.Memory
	for i := range 1100 {
		mems = append(mems, mnemotype.Memory{ID: fmt.Sprintf("m%04d", i), Embedding: randVec(r, dim), EmbeddingModel: "a"})
	}
	if err := x.Upsert(mems); err != nil {
		t.Fatal(err)
	}
	for x.GrowGraph(256, 2) > 0 {
	}
	marker := float32(12345.678)
	if err := x.Upsert([]mnemotype.Memory{{ID: "z", Embedding: []float32{marker, 1, 1, 1}, EmbeddingModel: "a"}}); err != nil {
		t.Fatal(err)
	}
	b := encode(t, x)
	i := bytes.Index(b, binary.LittleEndian.AppendUint32(nil, math.Float32bits(marker)))
	binary.LittleEndian.PutUint32(b[i:], math.Float32bits(float32(math.NaN())))
	y, err := Decode(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	left := -1
	for n := 0; n < 10 && left != 0; n++ {
		left = y.GrowGraph(32, 1)
	}
	if left != 0 {
		t.Fatalf("%d rows still on the tail after 10 calls", left)
	}
}
