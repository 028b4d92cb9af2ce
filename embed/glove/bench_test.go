package glove

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/internal/testenv"
)

// Benchmarks use the installed model and skip without it. Run them on one
// core for the per-core figures:
//
//	go test -run '^$' -bench . -cpu 1 ./embed/glove

var benchSink [][]float32

var shortTexts = []string{
	"Deployed Threadline v2.3 with the JWT auth fix",
	"how did I handle authentication?",
	"switched the login flow to JWT tokens",
	"bought groceries for the weekend",
	"Melanie painted a sunrise over the lake last year",
	"I'm looking for a new job in software engineering",
	"The build failed because the cache directory was read-only",
	"Caroline went to an LGBTQ support group yesterday",
	"remind me to call the dentist on Monday",
	"We moved the meeting with the design team to Thursday afternoon",
	"my dog loves running on the beach",
	"use pgvector with an HNSW index for the embeddings table",
	"She can't make it to the concert, her flight got cancelled",
	"refactored the parser to stream tokens instead of buffering",
	"the quarterly tax filing is due next week",
	"Jon opened a dance studio downtown after losing his job",
}

// passage300 returns a 300-word passage.
func passage300() string {
	const para = "The committee reviewed the proposal for the new community garden and agreed that the site near the old library " +
		"would receive more sunlight than the alternatives. Volunteers will build raised beds in the spring, and the city has " +
		"offered to connect a water line before the first planting. Several residents asked whether the garden could include " +
		"a small orchard; the planners said fruit trees would need a longer lease, which they expect to negotiate next year. "
	words := strings.Fields(strings.Repeat(para, 8))
	return strings.Join(words[:300], " ")
}

func benchTexts(b *testing.B, m *Model, texts []string) {
	b.Helper()
	ctx := context.Background()
	bytes := 0
	for _, t := range texts {
		bytes += len(t)
	}
	b.SetBytes(int64(bytes))
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		v, err := m.Embed(ctx, texts)
		if err != nil {
			b.Fatal(err)
		}
		benchSink = v
	}
	b.ReportMetric(float64(b.N*len(texts))/time.Since(start).Seconds(), "texts/s")
}

func BenchmarkLoad(b *testing.B) {
	path := testModelPath(b)
	loadTestModel(b)
	b.ReportAllocs()
	start := time.Now()
	for b.Loop() {
		m, err := Load(path)
		if err != nil {
			b.Fatal(err)
		}
		benchSink = [][]float32{m.component}
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/load")
}

func BenchmarkEmbed_Short(b *testing.B) {
	m := loadTestModel(b)
	texts := make([]string, 0, 256)
	for len(texts) < 256 {
		texts = append(texts, shortTexts...)
	}
	benchTexts(b, m, texts)
}

func BenchmarkEmbed_300Words(b *testing.B) {
	m := loadTestModel(b)
	benchTexts(b, m, []string{passage300()})
}

func BenchmarkEmbed_LoCoMoCorpus(b *testing.B) {
	m := loadTestModel(b)
	ds := loadDataset(b, testenv.Dataset(b, "locomo-dev"))
	texts := make([]string, len(ds.docs))
	for i, d := range ds.docs {
		texts[i] = d.Text
	}
	benchTexts(b, m, texts)
}

func BenchmarkEmbed_SciFactCorpus(b *testing.B) {
	m := loadTestModel(b)
	ds := loadDataset(b, testenv.Dataset(b, "scifact"))
	texts := make([]string, len(ds.docs))
	for i, d := range ds.docs {
		texts[i] = d.Title + " " + d.Text
	}
	benchTexts(b, m, texts)
}
