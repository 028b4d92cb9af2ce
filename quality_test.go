package mnemo_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed/glove"
)

// loadGlove loads the built-in model the way the CLI does; it skips without
// the model unless MNEMO_REQUIRE_MODEL=1 (CI).
func loadGlove(t testing.TB) *glove.Model {
	t.Helper()
	home := os.Getenv("MNEMO_HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		home = filepath.Join(h, ".local", "share", "mnemo")
	}
	m, err := glove.Load(glove.DefaultPath(home))
	if errors.Is(err, glove.ErrModelMissing) && os.Getenv("MNEMO_REQUIRE_MODEL") != "1" {
		t.Skipf("built-in model missing (run ./scripts/setup.sh): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

type locomoQuery struct {
	ID           string `json:"id"`
	Text         string `json:"text"`
	Conversation string `json:"conversation"`
	Category     string `json:"category"`
}

func readJSONL[T any](t testing.TB, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

// TestQualityGate_LoCoMo is issue 4's gate through the real engine: on
// locomo-dev, conversation-scoped, weighted RRF of FTS5 BM25 and the
// built-in dense leg must beat BM25 alone on recall@10 and nDCG@10.
func TestQualityGate_LoCoMo(t *testing.T) {
	model := loadGlove(t)
	dir := datasetDir(t, "locomo-dev")
	type doc struct {
		ID           string `json:"id"`
		Text         string `json:"text"`
		Conversation string `json:"conversation"`
	}
	docs := readJSONL[doc](t, filepath.Join(dir, "corpus.jsonl"))
	queries := readJSONL[locomoQuery](t, filepath.Join(dir, "queries.jsonl"))
	qrels := map[string]map[string]bool{}
	raw, err := os.ReadFile(filepath.Join(dir, "qrels.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Split(line, "\t")
		if i == 0 || len(f) < 3 || f[2] == "0" {
			continue
		}
		if qrels[f[0]] == nil {
			qrels[f[0]] = map[string]bool{}
		}
		qrels[f[0]][f[1]] = true
	}
	e, err := mnemo.Open(filepath.Join(t.TempDir(), "q.db"), &mnemo.Config{Embedder: model, AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ins := make([]mnemo.Input, len(docs))
	for i, d := range docs {
		ins[i] = mnemo.Input{ID: d.ID, Profile: "eval", Session: d.Conversation, Content: d.Text}
	}
	if _, err := e.RememberBatch(context.Background(), ins); err != nil {
		t.Fatal(err)
	}
	run := func(over map[string]string) (recall10, ndcg10 float64) {
		n := 0
		for _, q := range queries {
			rel := qrels[q.ID]
			if len(rel) == 0 {
				continue
			}
			res, err := e.Recall(context.Background(), mnemo.Query{Profile: "eval", Sessions: []string{q.Conversation},
				Text: q.Text, Limit: 10, Overrides: over})
			if err != nil {
				t.Fatal(err)
			}
			found, dcg := 0, 0.0
			for i, r := range res.Results {
				if rel[r.ID] {
					found++
					dcg += 1 / math.Log2(float64(i+2))
				}
			}
			ideal := 0.0
			for i := 0; i < min(len(rel), 10); i++ {
				ideal += 1 / math.Log2(float64(i+2))
			}
			recall10 += float64(found) / float64(len(rel))
			ndcg10 += dcg / ideal
			n++
		}
		return recall10 / float64(n), ndcg10 / float64(n)
	}
	// Access statistics must not leak between configurations: the access
	// leg is off in all of them, and the importance prior does not read them.
	lexR, lexN := run(map[string]string{"semanticWeight": "0"})
	denR, denN := run(map[string]string{"keywordWeight": "0"})
	hybR, hybN := run(map[string]string{"semanticWeight": "0.5"})
	defR, defN := run(nil)
	t.Logf("locomo-dev (n=%d queries) recall@10 / nDCG@10: lexical %.3f / %.3f, dense %.3f / %.3f, "+
		"rrf dense=0.5 %.3f / %.3f, default %.3f / %.3f", len(queries), lexR, lexN, denR, denN, hybR, hybN, defR, defN)
	if hybR <= lexR || hybN <= lexN {
		t.Errorf("weighted RRF (dense 0.5) %.3f / %.3f does not beat lexical alone %.3f / %.3f", hybR, hybN, lexR, lexN)
	}
	if defR <= lexR || defN <= lexN {
		t.Errorf("default hybrid %.3f / %.3f does not beat lexical alone %.3f / %.3f", defR, defN, lexR, lexN)
	}
	if denR < 0.50 {
		t.Errorf("dense alone recall@10 %.3f < 0.50 through the engine", denR)
	}
}
