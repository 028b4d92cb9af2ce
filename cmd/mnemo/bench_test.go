package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/internal/pgtest"
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
		rep.Store == "" || rep.CPUs < 1 || !strings.Contains(rep.QuerySource, "memories") {
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

	// Inside a session, with a CPU profile of the timed recalls.
	c.ok("add", "--profile", "me", "--session", "s1", "the session's own deploy note")
	prof := filepath.Join(t.TempDir(), "cpu.pprof")
	out = c.ok("bench", "--profile", "me", "--session", "s1", "--queries", qf, "--n", "5", "--warmup", "0", "--cpuprofile", prof, "--json")
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Recalls != 5 || !slices.Equal(rep.Sessions, []string{"s1"}) {
		t.Fatalf("bench --session: %v\n%s", err, out)
	}
	if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
		t.Errorf("--cpuprofile wrote nothing: %v", err)
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

// ladderCorpus writes a small dataset folder (corpus.jsonl, queries.jsonl).
func ladderCorpus(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	var corpus, queries strings.Builder
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa")
	for i := range 40 {
		fmt.Fprintf(&corpus, "{\"_id\": \"d%d\", \"text\": \"%s %s went to %s\"}\n", i, words[i%len(words)], words[(i*7)%len(words)], words[(i*3)%len(words)])
	}
	for i := range 5 {
		fmt.Fprintf(&queries, "{\"_id\": \"q%d\", \"text\": \"where did %s go\"}\n", i, words[i])
	}
	for name, body := range map[string]string{"corpus.jsonl": corpus.String(), "queries.jsonl": queries.String()} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCLI_BenchLadder runs a two-rung ladder: its new-process figures
// re-execute the test binary as mnemo (so no t.Parallel: it sets the
// environment variable that makes it one).
func TestCLI_BenchLadder(t *testing.T) {
	t.Setenv("MNEMO_TEST_MAIN", "1")
	c := newCLI(t)
	corpus, work := ladderCorpus(t), t.TempDir()
	args := []string{"bench", "ladder", "--corpus", corpus, "--dir", work, "--sizes", "300,0.7k", "--session-size", "100",
		"--n", "20", "--warmup", "2", "--mnemo", os.Args[0]}
	if _, _, errs := c.run("", args...); !strings.Contains(errs, `"0.7k"`) {
		t.Fatalf("a fractional size was accepted: %s", errs)
	}
	args[7] = "300,1k"
	var rep ladderReport
	if err := json.Unmarshal([]byte(c.ok(append(args, "--json")...)), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Rungs) != 2 || rep.Embedder != "hash" || rep.Queries != 5 || rep.SessionSize != 100 || rep.CPUs < 1 {
		t.Fatalf("report = %+v", rep)
	}
	for i, want := range []int{300, 1000} {
		r := rep.Rungs[i]
		if r.Memories != want || r.Import <= 0 || r.ImportSeconds <= 0 || r.DBBytes <= 0 {
			t.Errorf("rung %d: %+v", i, r)
		}
		for name, l := range map[string]latencyStats{"unscoped": r.Unscoped, "session": r.Scoped} {
			if !(l.P50 > 0 && l.P50 <= l.P95 && l.P95 <= l.P99) {
				t.Errorf("rung %d %s latency = %+v", i, name, l)
			}
		}
		if _, ok := r.ScopedStage["lexical"]; !ok {
			t.Errorf("rung %d: session stages %v", i, r.ScopedStage)
		}
		if r.FirstRecall <= 0 || r.Unsnapshotted <= 0 || r.Recollect <= 0 || (runtime.GOOS == "linux" && (r.FirstRecallRSS <= 1 || r.RecollectRSS <= 1)) {
			t.Errorf("rung %d new process: %+v", i, r)
		}
		// The database holds the rung's corpus, in sessions of 100.
		c.env["MNEMO_DB"] = r.Database
		out := c.ok("list", "--profile", ladderProfile, "--session", "s000002", "--limit", "1000", "--json")
		if n := strings.Count(out, `"id"`); n != 100 {
			t.Errorf("rung %d: session s000002 holds %d memories, want 100", i, n)
		}
	}
	// The corpus is the same on every run: --reuse keeps the database.
	db := rep.Rungs[0].Database
	c.env["MNEMO_DB"] = db
	before := c.ok("get", "--profile", ladderProfile, "m00000123")
	var again ladderReport
	if err := json.Unmarshal([]byte(c.ok(append(args, "--json", "--reuse", "--sizes", "300")...)), &again); err != nil {
		t.Fatal(err)
	}
	if len(again.Rungs) != 1 || again.Rungs[0].Import != 0 {
		t.Errorf("--reuse imported again: %+v", again.Rungs)
	}
	if err := json.Unmarshal([]byte(c.ok(append(args, "--json", "--sizes", "300")...)), &again); err != nil {
		t.Fatal(err)
	}
	if again.Rungs[0].Import <= 0 {
		t.Errorf("without --reuse the rung was not imported again: %+v", again.Rungs[0])
	}
	if after := c.ok("get", "--profile", ladderProfile, "m00000123"); contentOf(t, after) != contentOf(t, before) {
		t.Errorf("the corpus changed between runs: %s, then %s", before, after)
	}
	// The text report is a markdown table.
	out := c.ok(append(args, "--reuse")...)
	for _, want := range []string{"| memories | import/s |", "| 300 | reused |", "| 1000 | reused |", "300 session: "} {
		if !strings.Contains(out, want) {
			t.Errorf("text report lacks %q:\n%s", want, out)
		}
	}
}

func contentOf(t *testing.T, getOut string) string {
	t.Helper()
	var m mnemo.Memory
	if err := json.Unmarshal([]byte(getOut), &m); err != nil || m.Content == "" {
		t.Fatalf("get: %v: %s", err, getOut)
	}
	return m.Content
}

func TestCLI_BenchLadderBadInput(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	corpus, work := ladderCorpus(t), t.TempDir()
	base := []string{"bench", "ladder", "--corpus", corpus, "--dir", work}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "ladder", "--dir", work}, "--corpus is required"},
		{[]string{"bench", "ladder", "--corpus", corpus}, "--dir is required"},
		{append(base, "--sizes", "0"), `"0" is not a size`},
		{append(base, "--sizes", "10x"), `"10x" is not a size`},
		{append(base, "--sizes", "20M"), `"20M" is not a size`},
		{append(base, "--sizes", ","), "names no size"},
		{append(base, "--session-size", "0"), "--session-size = 0"},
		{append(base, "--n", "0"), "--n = 0"},
		{append(base, "--db", filepath.Join(work, "x.db")), "--db is not used"},
		{[]string{"bench", "ladder", "--corpus", work, "--dir", work}, "corpus.jsonl"},
		{append(base, "stray"), `unexpected argument "stray"`},
	} {
		code, _, errs := c.run("", tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("mnemo %q: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errs, tc.want)
		}
	}
}

func TestSentences(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"  one  ", []string{"one"}},
		{"One. Two? Three! Four", []string{"One.", "Two?", "Three!", "Four"}},
		{"v2.3 shipped. Done.", []string{"v2.3 shipped.", "Done."}},
		{"e.g. this...  and that.", []string{"e.g.", "this...", "and that."}},
		{"Ends with a dot.", []string{"Ends with a dot."}},
	} {
		if got := sentences(tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("sentences(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestCLI_BenchLadderPostgres: with --postgres, the rungs are schemas of
// the database, measured as the SQLite ones are.
func TestCLI_BenchLadderPostgres(t *testing.T) {
	t.Setenv("MNEMO_TEST_MAIN", "1")
	cl := pgtest.Start(t)
	c := newCLI(t)
	corpus, work := ladderCorpus(t), t.TempDir()
	out := c.ok("bench", "ladder", "--corpus", corpus, "--dir", work, "--postgres", cl.DSN("postgres"), "--sizes", "300",
		"--session-size", "100", "--n", "10", "--warmup", "2", "--mnemo", os.Args[0], "--json")
	var rep ladderReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Rungs) != 1 || rep.SQLite != "" {
		t.Fatalf("report = %+v", rep)
	}
	r := rep.Rungs[0]
	if r.Memories != 300 || r.Import <= 0 || r.Unscoped.P50 <= 0 || r.Scoped.P50 <= 0 || r.FirstRecall <= 0 || r.Recollect <= 0 ||
		!strings.Contains(r.Database, "schema=ladder_300") {
		t.Errorf("rung: %+v", r)
	}
	if code, _, errs := c.run("", "bench", "ladder", "--corpus", corpus, "--dir", work, "--postgres", "/not/a/url"); code != 2 {
		t.Errorf("--postgres with a path: exit %d: %s", code, errs)
	}
}
