package textindex

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// randomIndex returns an index of n random documents, some deleted, and
// queries over it.
func randomIndex(seed uint64, n int) (*Index, []Query) {
	r := rand.New(rand.NewPCG(seed, 3))
	z := rand.NewZipf(r, 1.1, 2, uint64(len(vocabulary)-1))
	x := New()
	for i := range n {
		x.Add(randomDoc(r, z, int64(i)))
		if r.IntN(6) == 0 {
			x.Delete(uint32(r.IntN(x.Docs())))
		}
	}
	qs := make([]Query, 40)
	for i := range qs {
		qs[i] = randomQuery(r, z)
	}
	return x, qs
}

// TestEncode_RoundTrip: a decoded index searches as the one encoded, and
// its statistics are the same.
func TestEncode_RoundTrip(t *testing.T) {
	t.Parallel()
	for seed := range uint64(4) {
		x, qs := randomIndex(seed, 500)
		y, err := Decode(x.AppendBinary(nil))
		if err != nil {
			t.Fatal(err)
		}
		if y.Len() != x.Len() || y.Docs() != x.Docs() || y.Dead() != x.Dead() || y.Totals() != x.Totals() {
			t.Fatalf("decoded: %d/%d/%d %v, want %d/%d/%d %v", y.Len(), y.Docs(), y.Dead(), y.Totals(), x.Len(), x.Docs(), x.Dead(), x.Totals())
		}
		for _, q := range qs {
			if got, want := y.Search(q, Filter{}), x.Search(q, Filter{}); !slices.Equal(got, want) {
				t.Fatalf("%+v: decoded %v, want %v", q, got, want)
			}
		}
		// The decoded index takes writes as the original does.
		x.Add(Doc{Fields: [NumFields]string{"caroline paint"}})
		y.Add(Doc{Fields: [NumFields]string{"caroline paint"}})
		x.Compact()
		y.Compact()
		for _, q := range qs {
			if got, want := y.Search(q, Filter{}), x.Search(q, Filter{}); !slices.Equal(got, want) {
				t.Fatalf("%+v after writes: decoded %v, want %v", q, got, want)
			}
		}
	}
}

// TestDecode_Corrupt: every truncation is an error, and flipped bytes
// either decode to an index that searches without panicking or are an
// error.
func TestDecode_Corrupt(t *testing.T) {
	t.Parallel()
	x, qs := randomIndex(9, 120)
	enc := x.AppendBinary(nil)
	for n := range len(enc) {
		if _, err := Decode(enc[:n]); err == nil {
			t.Fatalf("a truncation to %d of %d bytes decoded", n, len(enc))
		}
	}
	r := rand.New(rand.NewPCG(1, 1))
	for range 2000 {
		b := slices.Clone(enc)
		for range 1 + r.IntN(3) {
			b[r.IntN(len(b))] ^= byte(1 + r.IntN(255))
		}
		if y, err := Decode(b); err == nil {
			for _, q := range qs[:5] {
				y.Search(q, Filter{})
			}
		}
	}
}

// FuzzDecode: Decode never panics, and what it accepts searches, takes
// writes and encodes again.
func FuzzDecode(f *testing.F) {
	x, qs := randomIndex(2, 30)
	f.Add(x.AppendBinary(nil))
	f.Add(New().AppendBinary(nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		y, err := Decode(data)
		if err != nil {
			return
		}
		for _, q := range qs[:4] {
			y.Search(q, Filter{})
			y.Count(q, Filter{}, 3)
		}
		y.Add(Doc{Fields: [NumFields]string{"caroline"}})
		y.Delete(0)
		y.Compact()
		if _, err := Decode(y.AppendBinary(nil)); err != nil {
			t.Fatalf("re-encoding does not decode: %v", err)
		}
	})
}
