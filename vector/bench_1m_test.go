//go:build bench1m

package vector_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/vector"
)

// The benchmarks at a million rows are behind the bench1m build tag (the
// index alone takes 400 MB and a while to build):
//
//	go test -tags bench1m -run '^$' -bench 1M -benchtime 20x ./vector

// index1M is a million 100-d rows in sessions of 1,000 (as the ladder's).
func index1M(b *testing.B) (*vector.Index, []float32) {
	b.Helper()
	const n, dim = 1_000_000, 100
	r := rand.New(rand.NewPCG(1, 1))
	x := vector.NewDim(dim)
	batch := make([]mnemotype.Memory, 0, 10_000)
	for i := range n {
		batch = append(batch, mem(fmt.Sprintf("m%08d", i), emb("m", randUnit(r, dim)...), session(fmt.Sprintf("s%06d", i/1000))))
		if len(batch) == cap(batch) {
			if err := x.Upsert(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	return x, randUnit(r, dim)
}

func BenchmarkSearch_1M(b *testing.B) {
	x, q := index1M(b)
	for _, tc := range []struct {
		name   string
		f      vector.Filter
		serial bool
	}{
		{"all", vector.Filter{}, false},
		{"all-serial", vector.Filter{}, true},
		{"session", vector.Filter{Sessions: []string{"s000500"}}, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if tc.serial {
					sinkHits, err = x.SearchSerial(q, "m", tc.f, 30)
				} else {
					sinkHits, err = x.Search(q, "m", tc.f, 30)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkDecode_1M is a new process's cost of reading an index snapshot
// (from memory here: the file's read is the page cache's copy on top).
func BenchmarkDecode_1M(b *testing.B) {
	x, _ := index1M(b)
	var buf bytes.Buffer
	if err := x.Encode(&buf); err != nil {
		b.Fatal(err)
	}
	enc := buf.Bytes()
	b.SetBytes(int64(len(enc)))
	b.ResetTimer()
	for b.Loop() {
		y, err := vector.Decode(bytes.NewReader(enc), int64(len(enc)))
		if err != nil || y.Len() != x.Len() {
			b.Fatalf("Decode: %v", err)
		}
	}
}

func BenchmarkEncode_1M(b *testing.B) {
	x, _ := index1M(b)
	var buf bytes.Buffer
	b.ResetTimer()
	for b.Loop() {
		buf.Reset()
		if err := x.Encode(&buf); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(buf.Len()))
}
