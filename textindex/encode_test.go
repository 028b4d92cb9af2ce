package textindex

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
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

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.ReaderAt
	n atomic.Int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.n.Add(int64(len(p)))
	return c.r.ReadAt(p, off)
}

// TestOpen_Lazy: an index read lazily searches as the one encoded,
// concurrently, reading the postings of the tokens searched alone, and
// takes writes and encodes as a decoded one.
func TestOpen_Lazy(t *testing.T) {
	t.Parallel()
	for seed := range uint64(3) {
		x, qs := randomIndex(seed, 2000)
		enc := x.AppendBinary(nil)
		r := &countingReader{r: bytes.NewReader(enc)}
		y, err := Open(r, int64(len(enc)))
		if err != nil {
			t.Fatal(err)
		}
		if y.Len() != x.Len() || y.Docs() != x.Docs() || y.Dead() != x.Dead() || y.Totals() != x.Totals() {
			t.Fatalf("opened: %d/%d/%d %v, want %d/%d/%d %v", y.Len(), y.Docs(), y.Dead(), y.Totals(), x.Len(), x.Docs(), x.Dead(), x.Totals())
		}
		opened := r.n.Load()
		q := qs[0]
		if got, want := y.Search(q, Filter{}), x.Search(q, Filter{}); !slices.Equal(got, want) {
			t.Fatalf("%+v: opened %v, want %v", q, got, want)
		}
		// The blocks read are those of the query's tokens: each at most
		// what the token's postings take.
		most := int64(0)
		for _, tok := range q.Tokens {
			if id, ok := x.ids[tok]; ok {
				most += int64(len(x.terms[id].docs))*(binary.MaxVarintLen32+binary.MaxVarintLen16) + 64
			}
		}
		if read := r.n.Load() - opened; read > most {
			t.Fatalf("a search of %d tokens read %d bytes of postings, more than the %d they can take", len(q.Tokens), read, most)
		}
		var wg sync.WaitGroup
		for _, q := range qs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if got, want := y.Search(q, Filter{}), x.Search(q, Filter{}); !slices.Equal(got, want) {
					t.Errorf("%+v: opened %v, want %v", q, got, want)
				}
				if got, want := y.Count(q, Filter{}, 0), x.Count(q, Filter{}, 0); got != want {
					t.Errorf("%+v: opened counts %d, want %d", q, got, want)
				}
			}()
		}
		wg.Wait()
		if r.n.Load() >= int64(len(enc)) {
			t.Fatalf("searches read %d of %d bytes", r.n.Load(), len(enc))
		}
		for _, idx := range []*Index{x, y} {
			idx.Add(Doc{Fields: [NumFields]string{"caroline paint " + q.Tokens[0]}})
			idx.Delete(3)
		}
		if got, want := y.AppendBinary(nil), x.AppendBinary(nil); !bytes.Equal(got, want) {
			t.Fatal("an opened index after writes encodes otherwise than the original")
		}
		x.Compact()
		y.Compact()
		for _, q := range qs {
			if got, want := y.Search(q, Filter{}), x.Search(q, Filter{}); !slices.Equal(got, want) {
				t.Fatalf("%+v after compaction: opened %v, want %v", q, got, want)
			}
		}
		if err := y.Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOpen_Corrupt: every byte changed in an encoding is found — Open
// fails, or reading the postings sets Err — and a search of a corrupt
// token neither panics nor returns its postings.
func TestOpen_Corrupt(t *testing.T) {
	t.Parallel()
	x, qs := randomIndex(11, 30)
	enc := x.AppendBinary(nil)
	for i := range enc {
		for _, flip := range []byte{1, 0xff} {
			b := slices.Clone(enc)
			b[i] ^= flip
			y, err := Open(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				if !errors.Is(err, errCorrupt) {
					t.Fatalf("byte %d: %v, not a corruption", i, err)
				}
				continue
			}
			for _, q := range qs[:3] {
				y.Search(q, Filter{})
			}
			y.AppendBinary(nil) // reads every token
			if y.Err() == nil {
				t.Fatalf("byte %d changed (^%#x): not found", i, flip)
			}
			if _, err := Decode(b); err == nil {
				t.Fatalf("byte %d changed (^%#x): decoded", i, flip)
			}
		}
	}
	// A reader that fails: at once, Open fails; past the head (three
	// reads), the tokens searched are not found and Err says why.
	if _, err := Open(&failingReader{enc: enc, after: 1}, int64(len(enc))); err == nil {
		t.Fatal("opened with a failing reader")
	}
	y, err := Open(&failingReader{enc: enc, after: 3}, int64(len(enc)))
	if err != nil {
		t.Fatal(err)
	}
	if hits := y.Search(qs[0], Filter{}); len(hits) != 0 || y.Err() == nil {
		t.Fatalf("a search with a failing reader: %v, Err %v", hits, y.Err())
	}
}

// failingReader fails every read after the first few.
type failingReader struct {
	enc   []byte
	after int
	n     int
}

func (f *failingReader) ReadAt(p []byte, off int64) (int, error) {
	if f.n++; f.n > f.after {
		return 0, errors.New("disk on fire")
	}
	return copy(p, f.enc[off:]), nil
}
