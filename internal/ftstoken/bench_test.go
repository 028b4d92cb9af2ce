package ftstoken_test

import (
	"testing"

	"github.com/mnemo-dev/mnemo/internal/ftstoken"
)

// sink keeps the benchmarks' results alive.
var sink int

// BenchmarkTokenizer tokenizes every document of each dataset per
// iteration with a reused Tokenizer, the way a scorer counts terms, and
// reports tokens/s.
func BenchmarkTokenizer(b *testing.B) {
	for _, name := range []string{"locomo-dev", "scifact"} {
		b.Run(name, func(b *testing.B) {
			docs, _ := readTexts(b, dataset(b, name))
			var tok ftstoken.Tokenizer
			var size int64
			tokens := 0
			for _, d := range docs {
				size += int64(len(d))
				tokens += tok.Count(d)
			}
			b.SetBytes(size)
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				for _, d := range docs {
					tok.Tokenize(d, func(token []byte, _ int) { n += len(token) })
				}
			}
			sink = n
			b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkTokens is BenchmarkTokenizer through Tokens, a string per token.
func BenchmarkTokens(b *testing.B) {
	for _, name := range []string{"locomo-dev", "scifact"} {
		b.Run(name, func(b *testing.B) {
			docs, _ := readTexts(b, dataset(b, name))
			var size int64
			tokens := 0
			for _, d := range docs {
				size += int64(len(d))
				tokens += len(ftstoken.Tokens(d))
			}
			b.SetBytes(size)
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				for _, d := range docs {
					n += len(ftstoken.Tokens(d))
				}
			}
			sink = n
			b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}
