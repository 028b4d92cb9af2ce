package glove

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo/internal/testenv"
)

// The quality gate runs on ../shared/datasets/locomo-dev with the installed
// model. Without the model it skips, unless MNEMO_REQUIRE_MODEL=1 (CI), when
// it fails.

func testModelPath(t testing.TB) string { return DefaultPath(testenv.Home(t)) }

// loadTestModel loads the installed model or skips (fails when
// MNEMO_REQUIRE_MODEL=1).
func loadTestModel(t testing.TB) *Model {
	t.Helper()
	return testenv.Model(t, DefaultPath, Load, ErrModelMissing)
}

type doc struct {
	ID           string `json:"id"`
	Title        string `json:"title"`
	Text         string `json:"text"`
	Conversation string `json:"conversation"`
	Speaker      string `json:"speaker"`
	ImageCaption string `json:"image_caption"`
}

type query struct {
	ID           string `json:"id"`
	Text         string `json:"text"`
	Category     string `json:"category"`
	Conversation string `json:"conversation"`
}

type dataset struct {
	docs    []doc
	queries []query
	qrels   map[string]map[string]bool // query id → relevant doc ids
}

func readJSONL[T any](t testing.TB, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	}
	var out []T
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func loadDataset(t testing.TB, dir string) *dataset {
	t.Helper()
	ds := &dataset{qrels: map[string]map[string]bool{}}
	corpus := filepath.Join(dir, "corpus.jsonl")
	if _, err := os.Stat(corpus); err != nil {
		corpus += ".gz"
	}
	ds.docs = readJSONL[doc](t, corpus)
	ds.queries = readJSONL[query](t, filepath.Join(dir, "queries.jsonl"))
	b, err := os.ReadFile(filepath.Join(dir, "qrels.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, "\t")
		if i == 0 || len(f) < 3 || f[2] == "0" {
			continue
		}
		if ds.qrels[f[0]] == nil {
			ds.qrels[f[0]] = map[string]bool{}
		}
		ds.qrels[f[0]][f[1]] = true
	}
	return ds
}

// metrics accumulates recall@10, nDCG@10 and MRR over queries.
type metrics struct {
	n                   int
	recall, ndcg, rrank float64
}

func (m *metrics) add(ranked []string, rel map[string]bool) {
	const k = 10
	hits, dcg := 0, 0.0
	first := 0.0
	for i, id := range ranked {
		if !rel[id] {
			continue
		}
		if first == 0 {
			first = 1 / float64(i+1)
		}
		if i < k {
			hits++
			dcg += 1 / math.Log2(float64(i+2))
		}
	}
	idcg := 0.0
	for i := 0; i < min(k, len(rel)); i++ {
		idcg += 1 / math.Log2(float64(i+2))
	}
	m.n++
	m.recall += float64(hits) / float64(len(rel))
	m.ndcg += dcg / idcg
	m.rrank += first
}

func (m metrics) Recall() float64 { return m.recall / float64(m.n) }
func (m metrics) NDCG() float64   { return m.ndcg / float64(m.n) }
func (m metrics) MRR() float64    { return m.rrank / float64(m.n) }

// scoredDoc is one candidate's score; ties break on corpus order.
type scoredDoc struct {
	i     int
	score float64
}

func rankDocs(s []scoredDoc, docs []doc) []string {
	sort.Slice(s, func(a, b int) bool {
		if s[a].score != s[b].score {
			return s[a].score > s[b].score
		}
		return s[a].i < s[b].i
	})
	out := make([]string, len(s))
	for k, d := range s {
		out[k] = docs[d.i].ID
	}
	return out
}

// denseRuns returns, per query with relevant documents, the dense ranking of
// its conversation's documents by cosine similarity.
func denseRuns(t testing.TB, m *Model, ds *dataset) map[string][]string {
	t.Helper()
	ctx := context.Background()
	texts := make([]string, len(ds.docs))
	for i, d := range ds.docs {
		texts[i] = docText(d)
	}
	dv, err := m.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	qtexts := make([]string, len(ds.queries))
	for i, q := range ds.queries {
		qtexts[i] = q.Text
	}
	qv, err := m.Embed(ctx, qtexts)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string][]string{}
	for qi, q := range ds.queries {
		if len(ds.qrels[q.ID]) == 0 {
			continue
		}
		var s []scoredDoc
		for di, d := range ds.docs {
			if d.Conversation != q.Conversation {
				continue
			}
			s = append(s, scoredDoc{di, float64(dot(qv[qi], dv[di]))})
		}
		runs[q.ID] = rankDocs(s, ds.docs)
	}
	return runs
}

// docText is what gets embedded for a document.
var docText = func(d doc) string { return strings.TrimSpace(d.Title + " " + d.Text) }

func dot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// evaluate scores runs overall, without adversarial queries, and per category.
func evaluate(ds *dataset, runs map[string][]string) (all, nonAdv metrics, byCat map[string]*metrics) {
	byCat = map[string]*metrics{}
	for _, q := range ds.queries {
		ranked, ok := runs[q.ID]
		if !ok {
			continue
		}
		rel := ds.qrels[q.ID]
		all.add(ranked, rel)
		if q.Category != "adversarial" {
			nonAdv.add(ranked, rel)
		}
		if byCat[q.Category] == nil {
			byCat[q.Category] = &metrics{}
		}
		byCat[q.Category].add(ranked, rel)
	}
	return all, nonAdv, byCat
}

func logMetrics(t testing.TB, label string, all, nonAdv metrics, byCat map[string]*metrics) {
	t.Helper()
	t.Logf("%-22s all (n=%d): recall@10 %.3f nDCG@10 %.3f MRR %.3f | non-adversarial (n=%d): recall@10 %.3f nDCG@10 %.3f MRR %.3f",
		label, all.n, all.Recall(), all.NDCG(), all.MRR(), nonAdv.n, nonAdv.Recall(), nonAdv.NDCG(), nonAdv.MRR())
	cats := make([]string, 0, len(byCat))
	for c := range byCat {
		cats = append(cats, c)
	}
	sort.Strings(cats)
	for _, c := range cats {
		m := byCat[c]
		t.Logf("%-22s   %-12s (n=%3d): recall@10 %.3f nDCG@10 %.3f MRR %.3f", "", c, m.n, m.Recall(), m.NDCG(), m.MRR())
	}
}

// TestQuality_LoCoMo is the quality gate: dense-only retrieval with the
// installed model, each query scoped to its conversation.
func TestQuality_LoCoMo(t *testing.T) {
	m := loadTestModel(t)
	ds := loadDataset(t, testenv.Dataset(t, "locomo-dev"))
	all, nonAdv, byCat := evaluate(ds, denseRuns(t, m, ds))
	logMetrics(t, m.Model()+" dense", all, nonAdv, byCat)
	if all.n < 900 {
		t.Fatalf("evaluated %d queries, want ≥ 900: dataset changed?", all.n)
	}
	if got := all.Recall(); got < 0.50 {
		t.Errorf("dense recall@10 = %.3f, want ≥ 0.50", got)
	}
}

// TestQuality_Paraphrase checks that paraphrases are closer than unrelated
// texts.
func TestQuality_Paraphrase(t *testing.T) {
	m := loadTestModel(t)
	tests := []struct {
		name                          string
		anchor, paraphrase, unrelated string
	}{
		{"auth", "how did I handle authentication?", "switched the login flow to JWT tokens", "bought groceries for the weekend"},
		{"deploy", "Deployed Threadline v2.3 with the JWT auth fix", "released the new version of the app to production", "my sister adopted a puppy last month"},
		{"pet", "my dog loves running on the beach", "the puppy enjoys playing by the sea", "the quarterly tax filing is due next week"},
		{"hobby", "Melanie painted a sunrise over the lake", "she made an artwork of the morning sky above the water", "the database migration failed on the server"},
		{"job", "I'm looking for a new job in software engineering", "searching for developer positions at tech companies", "we had pasta with tomato sauce for dinner"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := m.Embed(context.Background(), []string{tt.anchor, tt.paraphrase, tt.unrelated})
			if err != nil {
				t.Fatal(err)
			}
			para, unrel := dot(v[0], v[1]), dot(v[0], v[2])
			t.Logf("%q: paraphrase %.3f, unrelated %.3f", tt.anchor, para, unrel)
			if para <= unrel {
				t.Errorf("paraphrase cosine %.3f ≤ unrelated cosine %.3f", para, unrel)
			}
		})
	}
}
