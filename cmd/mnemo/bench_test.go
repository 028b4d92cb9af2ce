package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo"
)

func TestCLI_Bench(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	for _, text := range []string{
		"Deployed Threadline v2.3 with the JWT auth fix",
		"the staging database lives on host db-7",
		"Melanie adopted a puppy last spring",
		"the quarterly report is due on Friday",
	} {
		c.ok("add", "--profile", "me", text)
	}
	id := strings.TrimSpace(c.ok("add", "--profile", "me", "deploy notes for the auth service"))
	c.ok("add", "--profile", "other", "another tenant's memory")

	var rep benchReport
	out := c.ok("bench", "--profile", "me", "--n", "40", "--warmup", "3", "--json")
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, out)
	}
	l := rep.Latency
	if rep.Recalls != 40 || rep.Warmup != 3 || rep.Memories != 5 || rep.Queries != 5 || rep.Embedder != "hash" ||
		rep.SQLite == "" || rep.CPUs < 1 || !strings.Contains(rep.QuerySource, "memories") {
		t.Errorf("report header = %+v", rep)
	}
	if !(l.P50 > 0 && l.P50 <= l.P90 && l.P90 <= l.P95 && l.P95 <= l.P99 && l.P99 <= l.Max && l.Mean > 0) {
		t.Errorf("latency percentiles out of order: %+v", l)
	}
	// Each recall's time with its embedding is at least its time without,
	// so every order statistic is too.
	if w := rep.WithEmbedding; w.P50 < l.P50 || w.P95 < l.P95 || w.Max < l.Max || w.Mean < l.Mean {
		t.Errorf("latency with embedding %+v below latency without %+v", w, l)
	}
	for _, stage := range []string{"lexical", "dense", "fusion", "fetch", "embed"} {
		if _, ok := rep.Stages[stage]; !ok {
			t.Errorf("stage %s missing from %v", stage, rep.Stages)
		}
	}
	// The recalls were not accesses.
	var m mnemo.Memory
	if err := json.Unmarshal([]byte(c.ok("get", "--profile", "me", id)), &m); err != nil || m.AccessCount != 0 {
		t.Errorf("after bench: access_count %d (%v), want 0", m.AccessCount, err)
	}

	// Queries from a file: JSONL and plain lines; the text report.
	qf := filepath.Join(t.TempDir(), "q.jsonl")
	if err := os.WriteFile(qf, []byte("{\"text\": \"auth deploy\", \"answer\": \"x\"}\n\n{\"query\": \"staging host\"}\nwhere is the puppy\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = c.ok("bench", "--profile", "me", "--queries", qf, "--n", "6", "--warmup", "0", "--weights", "lexical=1,dense=0")
	for _, want := range []string{"6 recalls", "3 from " + qf, "query embedding excluded", "mean per stage", "lexical"} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
	if _, stdout, _ := c.run("where is the puppy\n", "bench", "--profile", "me", "--queries", "-", "--n", "2", "--json"); !strings.Contains(stdout, `"queries": 1`) {
		t.Errorf("--queries - did not read stdin: %s", stdout)
	}
}

func TestCLI_BenchBadInput(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("add", "--profile", "me", "one memory")
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench"}, "--profile is required"},
		{[]string{"bench", "--profile", "me", "--n", "0"}, "--n = 0"},
		{[]string{"bench", "--profile", "me", "--warmup", "-1"}, "--warmup = -1"},
		{[]string{"bench", "--profile", "me", "--limit", "0"}, "--limit = 0"},
		{[]string{"bench", "--profile", "me", "--weights", "lexical=NaN"}, "weight lexical"},
		{[]string{"bench", "--profile", "nobody"}, `profile "nobody" has no memories`},
		{[]string{"bench", "--profile", "me", "stray"}, `unexpected argument "stray"`},
		{[]string{"bench", "--profile", "me", "--queries", filepath.Join(dir, "missing.jsonl")}, "--queries"},
		{[]string{"bench", "--profile", "me", "--queries", write("bad.jsonl", "ok query\n{\"text\": 3}\n")}, "line 2"},
		{[]string{"bench", "--profile", "me", "--queries", write("nofield.jsonl", "{\"answer\": \"x\"}\n")}, `needs "text" or "query"`},
		{[]string{"bench", "--profile", "me", "--queries", write("blank.jsonl", "{\"text\": \"  \"}\n")}, "blank"},
		{[]string{"bench", "--profile", "me", "--queries", write("empty.txt", "\n\n")}, "holds no queries"},
	} {
		code, _, errs := c.run("", tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("mnemo %q: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errs, tc.want)
		}
	}
}

// FuzzReadQueries: any --queries input is read or refused with a usage
// error, never a panic, and no query read is blank.
func FuzzReadQueries(f *testing.F) {
	for _, s := range []string{"q one\nq two\n", `{"text": "a"}` + "\n" + `{"query": "b"}`, `{"text": 3}`, "{", "\n\n", `{"text": "  "}`, "\x00\xff{\"query\":\"\\u0000\"}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		a := &app{stdin: strings.NewReader(in)}
		qs, _, err := readQueries(a, "-")
		if err != nil {
			if !errorsAsUsage(err) {
				t.Fatalf("error %v is not a usage error", err)
			}
			return
		}
		if len(qs) == 0 {
			t.Fatal("no queries and no error")
		}
		for _, q := range qs {
			if strings.TrimSpace(q) == "" {
				t.Fatalf("blank query read from %q", in)
			}
		}
	})
}

func errorsAsUsage(err error) bool {
	var ue usageError
	return errors.As(err, &ue)
}
