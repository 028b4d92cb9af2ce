package ftstoken_test

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo/internal/testenv"
)

// ciTB turns a skip into a failure: under CI=true a missing dataset must
// not pass unnoticed.
type ciTB struct{ testing.TB }

func (c ciTB) Skipf(format string, args ...any) {
	c.TB.Helper()
	c.TB.Fatalf("CI=true: "+format, args...)
}

// dataset locates a shared dataset, skipping without it (failing under
// CI=true).
func dataset(tb testing.TB, name string) string {
	tb.Helper()
	if os.Getenv("CI") == "true" {
		return testenv.Dataset(ciTB{tb}, name)
	}
	return testenv.Dataset(tb, name)
}

// readTexts returns the texts of a dataset: docs holds each corpus
// document as mnemo stores it (the title, a newline and the text, as
// eval.Load joins them); more holds each title and text alone, each image
// caption and each query.
func readTexts(tb testing.TB, dir string) (docs, more []string) {
	tb.Helper()
	corpus := filepath.Join(dir, "corpus.jsonl")
	if _, err := os.Stat(corpus); err != nil {
		corpus += ".gz"
	}
	readJSONL(tb, corpus, func(rec map[string]any) {
		title, _ := rec["title"].(string)
		text, _ := rec["text"].(string)
		if t := strings.TrimSpace(title); t != "" {
			docs = append(docs, t+"\n"+text)
			more = append(more, title, text)
		} else {
			docs = append(docs, text)
		}
		if c, ok := rec["image_caption"].(string); ok {
			more = append(more, c)
		}
	})
	readJSONL(tb, filepath.Join(dir, "queries.jsonl"), func(rec map[string]any) {
		if q, ok := rec["text"].(string); ok {
			more = append(more, q)
		}
	})
	return docs, more
}

// readJSONL calls fn with each record of a JSON-lines file, gzipped when
// its name ends in .gz.
func readJSONL(tb testing.TB, path string, fn func(map[string]any)) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		defer zr.Close()
		r = zr
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<24)
	for line := 1; sc.Scan(); line++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			tb.Fatalf("%s:%d: %v", path, line, err)
		}
		fn(rec)
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
}

// TestTokenize_Corpora: on every text of the shared evaluation datasets,
// every token at every position is FTS5's.
func TestTokenize_Corpora(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"locomo-dev", "scifact"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			docs, more := readTexts(t, dataset(t, name))
			ref := reference(t)
			nd := compare(t.Context(), t, ref, docs)
			nm := compare(t.Context(), t, ref, more)
			if nd == 0 || nm == 0 {
				t.Fatal("no tokens compared")
			}
			t.Logf("%s: %d documents (%d tokens) and %d other texts (%d tokens) compared with FTS5 (%s)", name, len(docs), nd, len(more), nm, ref.Driver())
		})
	}
}
