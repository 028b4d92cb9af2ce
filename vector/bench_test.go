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

// benchmarkSearch times a top-30 search of n rows in 1,000 sessions (of
// n/1,000 rows each), unscoped and scoped to one session.
func benchmarkSearch(b *testing.B, n int) {
	for _, dim := range []int{100, 256} {
		r := rand.New(rand.NewPCG(uint64(n), uint64(dim)))
		mems := make([]mnemotype.Memory, n)
		for i := range mems {
			mems[i] = mem(fmt.Sprintf("m%06d", i), emb("m", randUnit(r, dim)...), session(fmt.Sprintf("s%d", i%1000)))
		}
		for _, scope := range []struct {
			name string
			f    vector.Filter
		}{{"all", vector.Filter{}}, {"session", vector.Filter{Sessions: []string{"s7"}}}} {
			b.Run(fmt.Sprintf("dim=%d/%s", dim, scope.name), func(b *testing.B) {
				x := vector.New()
				if err := x.Upsert(mems); err != nil {
					b.Fatal(err)
				}
				q := randUnit(r, dim)
				b.ReportAllocs()
				for b.Loop() {
					hits, err := x.Search(q, "m", scope.f, 30)
					if err != nil {
						b.Fatal(err)
					}
					sinkHits = hits
				}
			})
		}
	}
}

func BenchmarkSearch_10k(b *testing.B)  { benchmarkSearch(b, 10_000) }
func BenchmarkSearch_100k(b *testing.B) { benchmarkSearch(b, 100_000) }

// embedded returns a memory embedded by model "m" for each of vecs.
func embedded(vecs [][]float32) []mnemotype.Memory {
	mems := make([]mnemotype.Memory, len(vecs))
	for i, v := range vecs {
		mems[i] = mem(fmt.Sprintf("m%06d", i), emb("m", v...))
	}
	return mems
}

// BenchmarkGrowGraph links 20,000 clustered 100-d rows into a graph, on
// one goroutine and on two.
func BenchmarkGrowGraph(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 7))
	mems := embedded(clustered(r, 20_000, 100, 200, 0.1))
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			for b.Loop() {
				x := newIndex(b, mems...)
				for x.GrowGraph(256, workers) > 0 {
				}
			}
			b.ReportMetric(float64(len(mems)*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// BenchmarkSearchGraph_100k times an unscoped top-30 search that walks the
// graph of 100,000 clustered 100-d rows (40 MB of vectors, more than most
// caches hold: the walk waits on memory more than it computes).
func BenchmarkSearchGraph_100k(b *testing.B) {
	r := rand.New(rand.NewPCG(100_000, 100))
	x := newIndex(b, embedded(clustered(r, 100_000, 100, 500, 0.1))...)
	growAll(x)
	qs := clustered(r, 256, 100, 500, 0.1)
	walks := x.Walks()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		hits, err := x.Search(qs[i%len(qs)], "m", vector.Filter{}, 30)
		if err != nil {
			b.Fatal(err)
		}
		sinkHits = hits
		i++
	}
	if x.Walks() == walks {
		b.Fatal("the searches scanned: no walk to time")
	}
}
