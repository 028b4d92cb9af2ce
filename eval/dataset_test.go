package eval

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const tinyDir = "testdata/tiny"

func TestLoad_Tiny(t *testing.T) {
	t.Parallel()
	ds, err := Load(tinyDir, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Name != "tiny" || ds.ScopeField != "conversation" || len(ds.Docs) != 12 || len(ds.Queries) != 7 {
		t.Fatalf("got name %q scope %q, %d docs, %d queries", ds.Name, ds.ScopeField, len(ds.Docs), len(ds.Queries))
	}
	if d := ds.Docs[11]; d.Text != "Release notes\nThreadline v2.4 adds dark mode" || d.Scope != "c2" {
		t.Errorf("title not prepended: %+v", d)
	}
	if got, want := ds.Docs[0].Time, time.Date(2024, 1, 1, 10, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Errorf("timestamp = %v, want %v", got, want)
	}
	if got := ds.Docs[5].Time; !got.Equal(time.Unix(1704448800, 0)) {
		t.Errorf("unix timestamp = %v", got)
	}
	if !ds.Docs[8].Time.IsZero() {
		t.Errorf("missing timestamp = %v, want zero", ds.Docs[8].Time)
	}
	q3 := ds.Queries[2]
	if q3.Category != "multi-hop" || q3.Scope != "c1" || strings.Join(q3.Relevant, ",") != "c1/3,c1/4" {
		t.Errorf("q3 = %+v", q3)
	}
	if j := ds.Judged(); len(j) != 6 || j[5].ID != "q6" {
		t.Errorf("judged = %d queries (q7's only judgment has score 0)", len(j))
	}
	ds, err = Load(tinyDir, LoadOptions{NoScope: true})
	if err != nil || ds.ScopeField != "" || ds.Queries[0].Scope != "" || ds.Docs[0].Scope != "" {
		t.Fatalf("NoScope: %v %+v", err, ds)
	}
}

// writeDataset writes a dataset folder from its three files' contents.
func writeDataset(t *testing.T, corpus, queries, qrels string, gz bool) string {
	t.Helper()
	dir := t.TempDir()
	if gz {
		f, err := os.Create(filepath.Join(dir, "corpus.jsonl.gz"))
		if err != nil {
			t.Fatal(err)
		}
		w := gzip.NewWriter(f)
		w.Write([]byte(corpus))
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	} else if err := os.WriteFile(filepath.Join(dir, "corpus.jsonl"), []byte(corpus), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"queries.jsonl": queries, "qrels.tsv": qrels} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoad_GzipNumericIDsAndTREC(t *testing.T) {
	t.Parallel()
	dir := writeDataset(t,
		`{"id": 10, "title": "Aspirin", "text": "Aspirin lowers fever."}`+"\n\n"+`{"id": 11, "text": "Unrelated."}`+"\n",
		`{"id": 1, "text": "does aspirin lower fever", "category": "claim", "team": "x"}`+"\n",
		"1 0 10 1\n1 0 99 2\n1 0 11 0\n", true)
	ds, err := Load(dir, LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Docs) != 2 || ds.Docs[0].ID != "10" || ds.Docs[0].Text != "Aspirin\nAspirin lowers fever." {
		t.Fatalf("docs = %+v", ds.Docs)
	}
	if q := ds.Queries[0]; q.ID != "1" || strings.Join(q.Relevant, ",") != "10,99" || ds.MissingRelevant != 1 {
		t.Fatalf("query = %+v, missing %d", q, ds.MissingRelevant)
	}
	if _, err := Load(dir, LoadOptions{ScopeField: "team"}); err != nil {
		t.Fatalf("scope field only in queries: %v", err)
	}
}

func TestLoad_Errors(t *testing.T) {
	t.Parallel()
	okCorpus := `{"id": "d1", "text": "hello"}` + "\n"
	okQueries := `{"id": "q1", "text": "hello"}` + "\n"
	okQrels := "q\td\ts\nq1\td1\t1\n"
	tests := []struct {
		name                   string
		corpus, queries, qrels string
		opts                   LoadOptions
		want                   string
	}{
		{"malformed query", okCorpus, "{nope\n", okQrels, LoadOptions{}, "queries.jsonl: line 1: not a JSON object"},
		{"query without id", okCorpus, `{"text": "x"}` + "\n", okQrels, LoadOptions{}, "line 1: id is missing"},
		{"duplicate query", okCorpus, okQueries + okQueries, okQrels, LoadOptions{}, `line 2: id "q1" repeats line 1`},
		{"no queries", okCorpus, "\n", okQrels, LoadOptions{}, "no queries"},
		{"unknown scope field", okCorpus, okQueries, okQrels, LoadOptions{ScopeField: "conv"}, `no query has the scope field "conv"`},
		{"query without scope", okCorpus, `{"id": "q1", "text": "a", "conversation": "c"}` + "\n" + `{"id": "q2", "text": "b"}` + "\n",
			okQrels, LoadOptions{}, `line 2: scope field "conversation" is missing`},
		{"duplicate doc", okCorpus + okCorpus, okQueries, okQrels, LoadOptions{}, `corpus.jsonl: line 2: id "d1" repeats line 1`},
		{"empty doc", `{"id": "d1", "text": " "}` + "\n", okQueries, okQrels, LoadOptions{}, "line 1: text is empty"},
		{"bad timestamp", `{"id": "d1", "text": "a", "timestamp": "yesterday"}` + "\n", okQueries, okQrels, LoadOptions{}, `timestamp "yesterday"`},
		{"text not a string", `{"id": "d1", "text": ["a"]}` + "\n", okQueries, okQrels, LoadOptions{}, "field text: must be a string"},
		{"bad qrels", okCorpus, okQueries, "q1\td1\n", LoadOptions{}, "qrels.tsv: line 1: want query-id, corpus-id and score"},
		{"bad score", okCorpus, okQueries, "q\td\ts\nq1\td1\thigh\n", LoadOptions{}, `qrels.tsv: line 2: score "high"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := writeDataset(t, tt.corpus, tt.queries, tt.qrels, false)
			_, err := Load(dir, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	if _, err := Load(t.TempDir(), LoadOptions{}); err == nil || !strings.Contains(err.Error(), "queries.jsonl") {
		t.Fatalf("empty folder: %v", err)
	}
}
