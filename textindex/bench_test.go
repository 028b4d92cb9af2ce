package textindex

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// benchCorpus builds an index of n documents of Zipf-distributed words
// from a vocabulary of 50,000, as turns with a previous turn for context.
func benchCorpus(b *testing.B, n int) (*Index, *rand.Rand, *rand.Zipf) {
	b.Helper()
	r := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(r, 1.07, 1, 49_999)
	word := func() string { return fmt.Sprintf("w%x", z.Uint64()) }
	x := New()
	prev := ""
	for i := range n {
		words := make([]string, 5+r.IntN(30))
		for j := range words {
			words[j] = word()
		}
		content := strings.Join(words, " ")
		x.Add(Doc{Order: int64(i), Fields: [NumFields]string{content, []string{"Caroline", "Melanie"}[i%2], "Monday 8 May 2023", prev}})
		prev = content
	}
	return x, r, z
}

// benchQueries makes 256 OR queries of 3-8 of the corpus's words for the
// top k, every field weighted (the default weights).
func benchQueries(r *rand.Rand, z *rand.Zipf, k int) []Query {
	queries := make([]Query, 256)
	for i := range queries {
		q := Query{Weights: [NumFields]float64{1, 1, 1, 0.5}, K: k}
		for range 3 + r.IntN(6) {
			q.Tokens = append(q.Tokens, fmt.Sprintf("w%x", z.Uint64()))
		}
		queries[i] = q
	}
	return queries
}

// BenchmarkSearch: top 50 of OR queries of 3-8 terms over 100,000
// documents, every field weighted (the default weights).
func BenchmarkSearch(b *testing.B) {
	x, r, z := benchCorpus(b, 100_000)
	queries := benchQueries(r, z, 50)
	for i := 0; b.Loop(); i++ {
		x.Search(queries[i%len(queries)], Filter{})
	}
	b.ReportMetric(float64(x.Bytes())/float64(x.Len()), "bytes/doc")
}

// BenchmarkAdd: indexing documents of 5-35 words with a previous turn.
func BenchmarkAdd(b *testing.B) {
	for b.Loop() {
		benchCorpus(b, 10_000)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/10_000, "ns/doc")
}

// BenchmarkCountScoped: how many documents of a scope of 1% of the
// documents (every 100th) hold every term of a query of 3-8 terms, up to
// 10: the lexical leg's AND query.
func BenchmarkCountScoped(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			x, r, z := benchCorpus(b, n)
			var docs []uint32
			for d := uint32(37); int(d) < n; d += 100 {
				docs = append(docs, d)
			}
			queries := benchQueries(r, z, 30)
			for i := range queries {
				queries[i].All = true
			}
			for i := 0; b.Loop(); i++ {
				x.Count(queries[i%len(queries)], Filter{Docs: docs}, 10)
			}
		})
	}
}

// BenchmarkSearchScoped: the top 30 of OR queries of 3-8 terms inside a
// scope of 1% of the documents (every 100th, as a session of sbs.py's
// corpus holds), listed and accepted as vector.Index's filters give them.
func BenchmarkSearchScoped(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			x, r, z := benchCorpus(b, n)
			var docs []uint32
			in := map[uint32]bool{}
			for d := uint32(37); int(d) < n; d += 100 {
				docs = append(docs, d)
				in[d] = true
			}
			f := Filter{Docs: docs, Accept: func(d uint32) bool { return in[d] }}
			queries := benchQueries(r, z, 30)
			for i := 0; b.Loop(); i++ {
				x.Search(queries[i%len(queries)], f)
			}
		})
	}
}
