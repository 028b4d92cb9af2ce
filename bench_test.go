package mnemo_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/embed/glove"
	"github.com/mnemo-dev/mnemo/internal/testenv"
)

func readTexts(tb testing.TB, file string) []string {
	tb.Helper()
	f, err := os.Open(file)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var v struct{ Text string }
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			tb.Fatal(err)
		}
		out = append(out, v.Text)
	}
	return out
}

// cachedEmbedder serves precomputed query vectors so benchmarks measure
// recall without query embedding (DESIGN §9).
type cachedEmbedder struct {
	embed.Embedder
	mu    sync.RWMutex
	cache map[string][]float32
}

func (c *cachedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 1 {
		c.mu.RLock()
		v, ok := c.cache[texts[0]]
		c.mu.RUnlock()
		if ok {
			return [][]float32{v}, nil
		}
	}
	vs, err := c.Embedder.Embed(ctx, texts)
	if err == nil && len(texts) == 1 {
		c.mu.Lock()
		c.cache[texts[0]] = vs[0]
		c.mu.Unlock()
	}
	return vs, err
}

// benchEmbedder is the default embedder, the built-in GloVe model (100
// dimensions), which is what recall runs with on the embedded defaults;
// benchmarks skip without it unless MNEMO_REQUIRE_MODEL=1.
func benchEmbedder(tb testing.TB) embed.Embedder {
	return testenv.Model(tb, glove.DefaultPath, glove.Load, glove.ErrModelMissing)
}

// benchCorpus builds n memories from LoCoMo dialogue turns: each memory
// joins two random turns, so texts are realistic and rarely repeat. The
// embeddings are the built-in model's.
func benchCorpus(tb testing.TB, n int) (inputs []mnemo.Input, queries []string) {
	dir := testenv.Dataset(tb, "locomo-dev")
	turns := readTexts(tb, filepath.Join(dir, "corpus.jsonl"))
	queries = readTexts(tb, filepath.Join(dir, "queries.jsonl"))
	rng := rand.New(rand.NewPCG(1, 2))
	emb := benchEmbedder(tb)
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	inputs = make([]mnemo.Input, n)
	texts := make([]string, n)
	for i := range inputs {
		texts[i] = turns[rng.IntN(len(turns))] + " " + turns[rng.IntN(len(turns))]
	}
	vecs, err := emb.Embed(context.Background(), texts)
	if err != nil {
		tb.Fatal(err)
	}
	for i := range inputs {
		inputs[i] = mnemo.Input{ID: fmt.Sprintf("m%07d", i), Profile: "bench", Session: fmt.Sprintf("s%d", i%50),
			Content: texts[i], CreatedAt: start.Add(time.Duration(i) * time.Minute), Embedding: vecs[i]}
	}
	return inputs, queries
}

// benchEngine opens an engine on a database of n memories, built once per
// size and process; mod, when given, changes each memory first.
func benchEngine(b *testing.B, n int, mod ...func(i int, in *mnemo.Input)) (*mnemo.Engine, []string) {
	b.Helper()
	inputs, queries := benchCorpus(b, n)
	for i := range inputs {
		for _, m := range mod {
			m(i, &inputs[i])
		}
	}
	path := filepath.Join(b.TempDir(), "bench.db")
	emb := &cachedEmbedder{Embedder: benchEmbedder(b), cache: map[string][]float32{}}
	e, err := mnemo.Open(path, &mnemo.Config{Embedder: emb, AccessFlushInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	for i := 0; i < n; i += 5000 {
		if _, err := e.RememberBatch(context.Background(), inputs[i:min(i+5000, n)]); err != nil {
			b.Fatal(err)
		}
	}
	// Link the dense index's graph now rather than while recalls are timed
	// (the background builder's work).
	if _, err := e.BuildGraph(context.Background(), "bench"); err != nil {
		b.Fatal(err)
	}
	// Warm: load the index and touch the FTS pages. (Query embeddings are
	// cached on first use; hashing one costs microseconds.)
	for _, q := range queries[:50] {
		if _, err := e.Recall(context.Background(), mnemo.Query{Profile: "bench", Text: q}); err != nil {
			b.Fatal(err)
		}
	}
	return e, queries
}

var sinkResult *mnemo.RecallResult

func benchmarkRecall(b *testing.B, n int, over map[string]string) {
	e, queries := benchEngine(b, n)
	timeRecalls(b, e, queries, mnemo.Query{Overrides: over}, nil)
}

// BenchmarkRecallMetadata_100k recalls with a metadata filter that keeps
// a tenth of the profile (each memory's metadata holds bucket = i mod 10):
// the store finds the memories in scope before the dense leg searches them.
func BenchmarkRecallMetadata_100k(b *testing.B) {
	e, queries := benchEngine(b, 100_000, func(i int, in *mnemo.Input) {
		in.Metadata = json.RawMessage(fmt.Sprintf(`{"bucket": %d}`, i%10))
	})
	timeRecalls(b, e, queries, mnemo.Query{Metadata: map[string]any{"bucket": 3}}, nil)
}

// BenchmarkRecallMetadataBaseline_100k is BenchmarkRecallMetadata_100k's
// corpus recalled without the filter.
func BenchmarkRecallMetadataBaseline_100k(b *testing.B) {
	e, queries := benchEngine(b, 100_000, func(i int, in *mnemo.Input) {
		in.Metadata = json.RawMessage(fmt.Sprintf(`{"bucket": %d}`, i%10))
	})
	timeRecalls(b, e, queries, mnemo.Query{}, nil)
}

// timeRecalls times b.N recalls on e of the queries in turn, scoped and
// tuned as base (its text and profile aside), each after before(i)
// (untimed) when given, and reports the p50 and p95 latencies and the mean
// per stage.
func timeRecalls(b *testing.B, e *mnemo.Engine, queries []string, base mnemo.Query, before func(i int)) {
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	stages := map[string]float64{}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if before != nil {
			b.StopTimer()
			before(i)
			b.StartTimer()
		}
		t := time.Now()
		// Timings is the trace without counterfactual ranks (what the HTTP
		// API asks for its metrics): it costs little, the lists exist
		// anyway, and yields the per-stage breakdown reported below.
		q := base
		q.Profile, q.Text, q.Timings = "bench", queries[i%len(queries)], true
		res, err := e.Recall(ctx, q)
		if err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t))
		for k, v := range res.Trace.Timings {
			stages[k] += v
		}
		sinkResult = res
	}
	b.StopTimer()
	for _, k := range []string{"index_sync", "lexical", "dense", "lexical_cross", "cross_score", "signals", "fusion", "neighbors", "fetch"} {
		b.ReportMetric(stages[k]/float64(b.N), k+"-ms")
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
}

// BenchmarkRecall_10k measures warm hybrid recall (lexical + dense, the
// default fusion) of 10 memories in one scope of n, query embedding
// excluded (DESIGN §9).
func BenchmarkRecall_10k(b *testing.B)  { benchmarkRecall(b, 10_000, nil) }
func BenchmarkRecall_100k(b *testing.B) { benchmarkRecall(b, 100_000, nil) }

// BenchmarkRecallSession_100k recalls inside one session of the 50 (2,000
// memories), as an agent mostly does: both legs should cost what the
// session holds, not what the profile holds.
func BenchmarkRecallSession_100k(b *testing.B) {
	e, queries := benchEngine(b, 100_000)
	timeRecalls(b, e, queries, mnemo.Query{Sessions: []string{"s7"}}, nil)
}

// BenchmarkRecallPool_100k uses the two-stage candidate pool.
func BenchmarkRecallPool_100k(b *testing.B) {
	benchmarkRecall(b, 100_000, map[string]string{"candidate_policy": "pool"})
}

// BenchmarkRecallAllLegs_10k adds the recency and access legs.
func BenchmarkRecallAllLegs_10k(b *testing.B) {
	benchmarkRecall(b, 10_000, map[string]string{"recency_weight": "0.6", "access_weight": "0.4"})
}

// BenchmarkRecallAfterWrite_10k times each recall right after a memory is
// added (the add untimed), as an agent storing and recalling in turn
// would: every recall then syncs the in-memory index, recounts its
// terms' document frequencies and looks up the rows' lengths, the cached
// ones being a write old.
func BenchmarkRecallAfterWrite_10k(b *testing.B) {
	e, queries := benchEngine(b, 10_000)
	extra, _ := benchCorpus(b, 2_000)
	timeRecalls(b, e, queries, mnemo.Query{}, func(i int) {
		in := extra[i%len(extra)]
		in.ID = fmt.Sprintf("w%07d", i)
		if _, err := e.Remember(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkImport measures ingest with precomputed embeddings in batches of
// 4,000 (the CLI import's batch size), under a context that can be
// cancelled, as the CLI's is.
func BenchmarkImport(b *testing.B) {
	const n = 20_000
	inputs, _ := benchCorpus(b, n)
	emb := benchEmbedder(b)
	b.ResetTimer()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		path := filepath.Join(b.TempDir(), fmt.Sprintf("import%d.db", i))
		e, err := mnemo.Open(path, &mnemo.Config{Embedder: emb, AccessFlushInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t := time.Now()
		for j := 0; j < n; j += 4000 {
			if _, err := e.RememberBatch(b.Context(), inputs[j:j+4000]); err != nil {
				b.Fatal(err)
			}
		}
		total += time.Since(t)
		b.StopTimer()
		e.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n*b.N)/total.Seconds(), "memories/s")
}
