package vector_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/vector"
)

// TestIndex_Coded: an index decoded from its codes (DecodeOptions.Codes)
// searches and scores as the index encoded — the same hits, the same
// scores — in every scope, after writes too; it encodes the same bytes,
// grows a graph after reading its float32s, and finds a corrupt
// embedding or code.
func TestIndex_Coded(t *testing.T) {
	t.Parallel()
	const dim = 24
	r := rand.New(rand.NewPCG(5, 6))
	random := func(id string) mnemotype.Memory {
		opts := []memOpt{session(fmt.Sprint("s", r.IntN(12))), project([]string{"", "apollo", "zeus"}[r.IntN(3)]),
			kind(mnemotype.Kinds[r.IntN(3)])}
		if r.IntN(20) > 0 {
			opts = append(opts, emb("m", gaussian(r, dim)...))
		}
		return mem(id, opts...)
	}
	x := vector.NewDim(dim)
	var mems []mnemotype.Memory
	for i := range 3000 {
		mems = append(mems, random(fmt.Sprint("m", i)))
	}
	if err := x.Upsert(mems); err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		x.Delete(fmt.Sprint("m", i*7))
	}
	var enc bytes.Buffer
	if err := x.EncodeIndex(&enc); err != nil {
		t.Fatal(err)
	}
	floats := enc.Len() - 4 - 4*dim*x.Len() // where the float32s start: after them, a graph of no node (4 bytes)
	const at = 9                            // the encoding's place in its file
	file := append(make([]byte, at), enc.Bytes()...)
	decode := func(file []byte) (*vector.Index, error) {
		return vector.DecodeIndex(bytes.NewReader(file[at:]), int64(enc.Len()),
			vector.DecodeOptions{Codes: &vector.Source{R: bytes.NewReader(file), Off: at}})
	}
	y, err := decode(file)
	if err != nil {
		t.Fatal(err)
	}
	if !y.Coded() || y.Len() != x.Len() || y.Bytes() >= x.Bytes() {
		t.Fatalf("decoded: coded %v, %d memories of %d, %d bytes against %d", y.Coded(), y.Len(), x.Len(), y.Bytes(), x.Bytes())
	}
	filters := []vector.Filter{{}, {Sessions: []string{"s3"}}, {Project: "apollo"}, {Kinds: []mnemotype.Kind{mnemotype.KindSemantic}},
		{Sessions: []string{"s1", "s2"}, Exclude: []string{"m1", "m2", "m3"}}}
	compare := func(what string) {
		t.Helper()
		for i := range 60 {
			q, f, k := gaussian(r, dim), filters[i%len(filters)], []int{1, 10, 50}[i%3]
			got, err := y.Search(q, "m", f, k)
			if err != nil {
				t.Fatal(err)
			}
			want, err := x.Search(q, "m", f, k)
			if err != nil {
				t.Fatal(err)
			}
			if len(want) == 0 || !slices.Equal(got, want) {
				t.Fatalf("%s: Search(k %d, %+v):\n got %v\nwant %v", what, k, f, got, want)
			}
			ids := []string{"m5", "m7", "m100", "m2999", "nobody"}
			got, err = y.Score(q, "m", ids)
			if err != nil {
				t.Fatal(err)
			}
			if want, _ := x.Score(q, "m", ids); !slices.Equal(got, want) {
				t.Fatalf("%s: Score:\n got %v\nwant %v", what, got, want)
			}
		}
	}
	compare("decoded")
	// Writes: new memories, new embeddings of decoded ones, embeddings
	// taken away, deletions (which move the last rows).
	for i := range 400 {
		var m mnemotype.Memory
		switch i % 4 {
		case 0:
			m = random(fmt.Sprint("new", i))
		case 1, 2:
			m = random(fmt.Sprint("m", r.IntN(3000)))
		default:
			id := fmt.Sprint("m", r.IntN(3000))
			x.Delete(id)
			y.Delete(id)
			continue
		}
		if err := errors.Join(x.Upsert([]mnemotype.Memory{m}), y.Upsert([]mnemotype.Memory{m})); err != nil {
			t.Fatal(err)
		}
	}
	compare("after writes")
	if d := vector.Diff(x, y, 5); len(d) > 0 {
		t.Fatalf("Diff: %v", d)
	}
	var ex, ey bytes.Buffer
	if err := errors.Join(x.EncodeIndex(&ex), y.EncodeIndex(&ey)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ex.Bytes(), ey.Bytes()) {
		t.Error("a coded index encodes other bytes than the index it was decoded from, after the same writes")
	}
	y.GrowGraph(10000, 2)
	if y.Coded() || y.Graph().Linked == 0 {
		t.Fatalf("after GrowGraph: coded %v, graph %+v", y.Coded(), y.Graph())
	}
	if d := vector.Diff(x, y, 5); len(d) > 0 {
		t.Fatalf("Diff after GrowGraph read the float32s: %v", d)
	}

	// A changed byte: in the rows or codes, DecodeIndex fails; in an
	// embedding's float32s, the searches that rescore it do.
	rowsEnd := bytes.LastIndex(enc.Bytes(), []byte("m2999")) // the last row's id
	for _, i := range []int{20, rowsEnd + 40, floats - 2, floats + 4*dim*2000 + 3, floats + 4*dim*1500} {
		b := slices.Clone(file)
		b[at+i] ^= 0x41 // in a float32, its exponent, or the lowest bit of its mantissa
		z, err := decode(b)
		if i < floats {
			if !errors.Is(err, vector.ErrCorrupt) {
				t.Errorf("byte %d changed: DecodeIndex = %v, want ErrCorrupt", i, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		failed := false
		for range 200 {
			if _, err := z.Search(gaussian(r, dim), "m", vector.Filter{}, 50); err != nil {
				if !errors.Is(err, vector.ErrCorrupt) {
					t.Fatal(err)
				}
				failed = true
				break
			}
		}
		if !failed {
			t.Errorf("byte %d changed: no search found it", i)
		}
	}
}

func gaussian(r *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// TestIndex_CodedNearDuplicates: rows closer to each other than a code's
// step are ranked by their float32s all the same — the scan goes again
// for the rows the codes cannot tell apart.
func TestIndex_CodedNearDuplicates(t *testing.T) {
	t.Parallel()
	const dim = 16
	r := rand.New(rand.NewPCG(7, 7))
	base := gaussian(r, dim)
	x := vector.NewDim(dim)
	var mems []mnemotype.Memory
	for i := range 300 {
		v := slices.Clone(base)
		v[3] += float32(i) * 1e-5
		mems = append(mems, mem(fmt.Sprintf("m%03d", i), session(fmt.Sprint("s", i%3)), emb("m", v...)))
	}
	for i := range 300 {
		mems = append(mems, mem(fmt.Sprint("other", i), emb("m", gaussian(r, dim)...)))
	}
	if err := x.Upsert(mems); err != nil {
		t.Fatal(err)
	}
	var enc bytes.Buffer
	if err := x.EncodeIndex(&enc); err != nil {
		t.Fatal(err)
	}
	y, err := vector.DecodeIndex(bytes.NewReader(enc.Bytes()), int64(enc.Len()),
		vector.DecodeOptions{Codes: &vector.Source{R: bytes.NewReader(enc.Bytes())}})
	if err != nil || !y.Coded() {
		t.Fatalf("decoded: coded %v, %v", y.Coded(), err)
	}
	for i, q := range [][]float32{base, gaussian(r, dim), {0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}} {
		for _, k := range []int{1, 3, 40} {
			for _, f := range []vector.Filter{{}, {Sessions: []string{"s1"}}} {
				got, how, err := y.SearchHow(q, "m", f, k, false)
				if err != nil {
					t.Fatal(err)
				}
				want, _ := x.Search(q, "m", f, k)
				if !slices.Equal(got, want) || !how.Coded {
					t.Fatalf("query %d, k %d, %+v (%s):\n got %v\nwant %v", i, k, f, how, got, want)
				}
			}
		}
	}
}
