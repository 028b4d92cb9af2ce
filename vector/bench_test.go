package vector_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/vector"
)

// sinkHits keeps the compiler from discarding benchmarked work.
var sinkHits []mnemotype.Hit

func benchmarkSearch(b *testing.B, n int) {
	for _, dim := range []int{100, 256} {
		b.Run(fmt.Sprintf("dim=%d", dim), func(b *testing.B) {
			r := rand.New(rand.NewPCG(uint64(n), uint64(dim)))
			mems := make([]mnemotype.Memory, n)
			for i := range mems {
				mems[i] = mem(fmt.Sprintf("m%06d", i), emb("m", randUnit(r, dim)...))
			}
			x := vector.New()
			if err := x.Upsert(mems); err != nil {
				b.Fatal(err)
			}
			q := randUnit(r, dim)
			b.ReportAllocs()
			for b.Loop() {
				hits, err := x.Search(q, "m", vector.Filter{}, 30)
				if err != nil {
					b.Fatal(err)
				}
				sinkHits = hits
			}
		})
	}
}

func BenchmarkSearch_10k(b *testing.B)  { benchmarkSearch(b, 10_000) }
func BenchmarkSearch_100k(b *testing.B) { benchmarkSearch(b, 100_000) }
