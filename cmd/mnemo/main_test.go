package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/server/httpapi"
)

// TestMain lets the test binary act as the mnemo binary when re-executed
// with MNEMO_TEST_MAIN=1, so crash tests can kill a real process.
func TestMain(m *testing.M) {
	if os.Getenv("MNEMO_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

type cli struct {
	t   *testing.T
	env map[string]string
}

func newCLI(t *testing.T) *cli {
	dir := t.TempDir()
	return &cli{t: t, env: map[string]string{"MNEMO_HOME": dir, "MNEMO_DB": filepath.Join(dir, "mnemo.db"), "MNEMO_EMBEDDER": "hash"}}
}

// run executes mnemo in process and returns exit code, stdout, stderr.
func (c *cli) run(stdin string, args ...string) (int, string, string) {
	c.t.Helper()
	var out, errb bytes.Buffer
	a := &app{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(k string) string { return c.env[k] }}
	code := run(context.Background(), a, args)
	return code, out.String(), errb.String()
}

func (c *cli) ok(args ...string) string {
	c.t.Helper()
	code, out, errs := c.run("", args...)
	if code != 0 {
		c.t.Fatalf("mnemo %v: exit %d: %s", args, code, errs)
	}
	return out
}

// fail runs mnemo, wants exit code want, and returns its stderr.
func (c *cli) fail(want int, args ...string) string {
	c.t.Helper()
	code, out, errs := c.run("", args...)
	if code != want {
		c.t.Fatalf("mnemo %v: exit %d, want %d: %s%s", args, code, want, out, errs)
	}
	return errs
}

func TestCLI_EndToEnd(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	id1 := strings.TrimSpace(c.ok("add", "--profile", "me", "--session", "s1", "Deployed Threadline v2.3 with the JWT auth fix"))
	var added struct{ ID string }
	if err := json.Unmarshal([]byte(c.ok("add", "--profile", "me", "--session", "s2", "--kind", "semantic", "--importance", "0.9",
		"--at", "2026-01-02T03:04:05Z", "--json", "--metadata", `{"source":"test"}`, "the staging database lives on host db-7")), &added); err != nil || added.ID == "" {
		t.Fatalf("add --json: %v %+v", err, added)
	}
	c.ok("add", "--profile", "other", "Threadline secrets of another tenant")

	out := c.ok("recall", "--profile", "me", "Threadline JWT", "--json", "--trace")
	var res struct {
		Results []struct {
			ID      string
			Content string
			Score   float64
			Rank    int
			Legs    map[string]struct {
				Rank  int
				Score float64
			}
		}
		Trace *struct {
			Legs    map[string][]mnemo.Hit `json:"legs"`
			Timings map[string]float64     `json:"timings_ms"`
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("recall --json: %v\n%s", err, out)
	}
	if len(res.Results) == 0 || res.Results[0].ID != id1 || res.Results[0].Legs["lexical"].Rank != 1 || res.Results[0].Rank != 1 {
		t.Fatalf("unexpected recall: %s", out)
	}
	for _, r := range res.Results {
		if strings.Contains(r.Content, "another tenant") {
			t.Fatal("profile isolation broken in the CLI")
		}
	}
	if res.Trace == nil || len(res.Trace.Legs["lexical"]) == 0 || res.Trace.Timings["total"] <= 0 {
		t.Fatalf("trace missing: %s", out)
	}
	// Session filter.
	out = c.ok("recall", "--profile", "me", "--session", "s2", "staging database host", "--json")
	if strings.Contains(out, id1) || !strings.Contains(out, added.ID) {
		t.Fatalf("session filter: %s", out)
	}
	// Plain output names the rank and id.
	if out := c.ok("recall", "--profile", "me", "--limit", "1", "database"); !strings.Contains(out, added.ID) {
		t.Fatalf("plain recall: %s", out)
	}
	// get / delete.
	var got mnemo.Memory
	if err := json.Unmarshal([]byte(c.ok("get", "--profile", "me", added.ID)), &got); err != nil || got.Importance != 0.9 ||
		got.Kind != "semantic" || !got.CreatedAt.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) || compact(got.Metadata) != `{"source":"test"}` {
		t.Fatalf("get: %v %+v", err, got)
	}
	c.ok("delete", "--profile", "me", added.ID)
	if code, _, errs := c.run("", "get", "--profile", "me", added.ID); code != exitNotFound || !strings.Contains(errs, "not found") {
		t.Fatalf("get deleted: exit %d %s", code, errs)
	}
	// MNEMO_PROFILE stands in for --profile.
	c.env["MNEMO_PROFILE"] = "me"
	if out := c.ok("get", id1); !strings.Contains(out, "Threadline") {
		t.Fatalf("get with MNEMO_PROFILE: %s", out)
	}
	delete(c.env, "MNEMO_PROFILE")
	// settings.
	if out := c.ok("settings", "set", "--profile", "me", "semantic_weight=0.5", "rrf_k=20"); !strings.Contains(out, "rrf_k=20") {
		t.Fatalf("settings set: %s", out)
	}
	if out := c.ok("settings", "get", "--profile", "me", "--json"); !strings.Contains(out, `"semantic_weight": 0.5`) {
		t.Fatalf("settings get: %s", out)
	}
}

func TestCLI_BadInputExit2NothingWritten(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("add", "--profile", "me", "seed memory")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"add without profile", []string{"add", "text"}, "--profile"},
		{"add importance NaN", []string{"add", "--profile", "me", "--importance", "NaN", "x"}, "importance"},
		{"add importance negative", []string{"add", "--profile", "me", "--importance", "-0.5", "x"}, "importance"},
		{"add importance above 1", []string{"add", "--profile", "me", "--importance", "1.01", "x"}, "importance"},
		{"add importance not a number", []string{"add", "--profile", "me", "--importance", "high", "x"}, "importance"},
		{"add empty content", []string{"add", "--profile", "me", "   "}, "content"},
		{"add no content", []string{"add", "--profile", "me"}, "content"},
		{"add bad kind", []string{"add", "--profile", "me", "--kind", "dream", "x"}, "kind"},
		{"add bad time", []string{"add", "--profile", "me", "--at", "yesterday", "x"}, "--at"},
		{"add bad metadata", []string{"add", "--profile", "me", "--metadata", "[1,2]", "x"}, "metadata"},
		{"add unknown flag", []string{"add", "--profile", "me", "--bogus", "x"}, "bogus"},
		{"recall without profile", []string{"recall", "x"}, "--profile"},
		{"recall zero limit", []string{"recall", "--profile", "me", "--limit", "0", "x"}, "limit"},
		{"recall negative limit", []string{"recall", "--profile", "me", "--limit", "-3", "x"}, "limit"},
		{"recall weight above 5", []string{"recall", "--profile", "me", "--weights", "lexical=5.5", "x"}, "lexical"},
		{"recall weight negative", []string{"recall", "--profile", "me", "--weights", "dense=-1", "x"}, "dense"},
		{"recall weight NaN", []string{"recall", "--profile", "me", "--weights", "dense=NaN", "x"}, "dense"},
		{"recall unknown leg", []string{"recall", "--profile", "me", "--weights", "graph=1", "x"}, "graph"},
		{"recall k zero", []string{"recall", "--profile", "me", "--k", "0", "x"}, "rrf_k"},
		{"recall empty query", []string{"recall", "--profile", "me", " "}, "query"},
		{"recall unknown strategy", []string{"recall", "--profile", "me", "--strategy", "magic", "x"}, "strategy"},
		{"settings out of range", []string{"settings", "set", "--profile", "me", "keyword_weight=6"}, "keyword_weight"},
		{"settings unknown key", []string{"settings", "set", "--profile", "me", "bogus=1"}, "bogus"},
		{"unknown command", []string{"frobnicate"}, "unknown command"},
		{"unknown embedder", []string{"add", "--profile", "me", "--embedder", "nope", "x"}, "embedder"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := c.run("", tc.args...)
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 mentioning %q", code, errs, tc.want)
			}
		})
	}
	out := c.ok("recall", "--profile", "me", "--json", "--limit", "50", "x seed memory")
	if n := strings.Count(out, `"id"`); n != 1 {
		t.Fatalf("bad input wrote memories: %d results\n%s", n, out)
	}
	if s := c.ok("settings", "get", "--profile", "me"); !strings.Contains(s, "keyword_weight=1") {
		t.Fatalf("rejected settings changed something: %s", s)
	}
}

func TestCLI_Import(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	dir := t.TempDir()
	lines := []string{
		`{"id":"m1","text":"first line about kayaks","profile":"me","session":1,"timestamp":"2023-05-08T13:56:00","speaker":"Ann"}`,
		`{"content":"second line about canoes","importance":0.8,"kind":"semantic","created_at":"2024-01-01T00:00:00Z","metadata":{"k":"v"}}`,
		`not json`,
		`{"text":""}`,
		`{"text":"bad importance","importance":3}`,
		``,
		`{"text":"bad kind","kind":"dream"}`,
		`{"id":"m1","text":"duplicate id"}`,
		`{"text":"third line","conversation":"conv-1"}`,
	}
	file := filepath.Join(dir, "in.jsonl")
	os.WriteFile(file, []byte(strings.Join(lines, "\n")+"\n"), 0o644)

	// --strict: the first bad line aborts with nothing written.
	code, _, errs := c.run("", "import", file, "--profile", "me", "--strict")
	if code != 2 || !strings.Contains(errs, "line 3") {
		t.Fatalf("strict import: exit %d %s", code, errs)
	}
	if out := c.ok("recall", "--profile", "me", "line", "--json"); strings.Contains(out, `"id"`) {
		t.Fatalf("strict import wrote something: %s", out)
	}

	code, out, errs := c.run("", "import", file, "--profile", "me", "--session-field", "conversation")
	if code != 3 {
		t.Fatalf("import with bad lines should exit 3, got %d: %s", code, errs)
	}
	for _, want := range []string{"line 3:", "line 4:", "line 5:", "line 7:", "line 8:"} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr does not report %q:\n%s", want, errs)
		}
	}
	if !strings.Contains(out, "imported 3 memories, 0 already stored, 5 lines rejected (lines 3, 4, 5, 7, 8)") {
		t.Fatalf("summary: %q", out)
	}
	var m mnemo.Memory
	json.Unmarshal([]byte(c.ok("get", "--profile", "me", "m1")), &m)
	// speaker is the actor; timestamp when it occurred (and, without
	// created_at, when it was stored).
	if m.Content != "first line about kayaks" || !m.CreatedAt.Equal(time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)) ||
		!m.OccurredAt.Equal(m.CreatedAt) || m.Actor != "Ann" || strings.Contains(compact(m.Metadata), `speaker`) || m.Session != "1" {
		t.Fatalf("imported memory: %+v", m)
	}
	out = c.ok("recall", "--profile", "me", "--session", "conv-1", "line", "--json")
	if !strings.Contains(out, "third line") || strings.Contains(out, "kayaks") {
		t.Fatalf("--session-field: %s", out)
	}
}

func TestCLI_Import10k(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	var b strings.Builder
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango")
	for i := 0; i < 10000; i++ {
		fmt.Fprintf(&b, `{"id":"m%05d","text":"memory %d mentions %s and %s","session":"s%d"}`+"\n", i, i, words[i%20], words[(i*7)%20], i%10)
	}
	file := filepath.Join(t.TempDir(), "10k.jsonl")
	os.WriteFile(file, []byte(b.String()), 0o644)
	start := time.Now()
	out := c.ok("import", file, "--profile", "bulk")
	if !strings.Contains(out, "imported 10000 memories") {
		t.Fatalf("import: %s", out)
	}
	t.Logf("10k import took %v", time.Since(start))
	out = c.ok("recall", "--profile", "bulk", "--session", "s3", "--limit", "5", "memory 4243 mentions", "--json")
	if !strings.Contains(out, `"m04243"`) {
		t.Fatalf("recall after 10k import did not find m04243 first: %s", out)
	}
}

// TestCLI_AddSurvivesKill9 runs real mnemo processes against one file: a
// writer adds memories one process at a time (an add is acknowledged when
// the process exits 0 having printed the id) while other add processes are
// killed with SIGKILL at random points of their write. Every acknowledged
// memory must be there afterwards and the file must pass an integrity check.
func TestCLI_AddSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "mnemo.db")
	env := append(os.Environ(), "MNEMO_TEST_MAIN=1", "MNEMO_DB="+db, "MNEMO_HOME="+dir, "MNEMO_EMBEDDER=hash")
	add := func(text string) *exec.Cmd {
		cmd := exec.Command(os.Args[0], "add", "--profile", "p", text)
		cmd.Env = env
		return cmd
	}
	var acked []string
	done := make(chan struct{})
	go func() { // the writer whose adds are acknowledged
		defer close(done)
		for i := 0; i < 30; i++ {
			out, err := add(fmt.Sprintf("acknowledged memory %d", i)).Output()
			if err != nil {
				t.Errorf("add %d: %v", i, err)
				return
			}
			acked = append(acked, strings.TrimSpace(string(out)))
		}
	}()
	killed := 0
	for i := 0; ; i++ {
		select {
		case <-done:
		default:
			cmd := add(fmt.Sprintf("victim memory %d", i))
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Duration(i%15) * 3 * time.Millisecond)
			cmd.Process.Signal(syscall.SIGKILL)
			cmd.Wait()
			killed++
			time.Sleep(20 * time.Millisecond) // let the acknowledged writer make progress
			continue
		}
		break
	}
	if t.Failed() {
		return
	}
	t.Logf("%d acknowledged adds, %d writers killed", len(acked), killed)
	e, err := mnemo.Open(db, &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim)})
	if err != nil {
		t.Fatalf("reopen after kill -9: %v", err)
	}
	defer e.Close()
	for _, id := range acked {
		if _, err := e.Get(context.Background(), "p", id); err != nil {
			t.Fatalf("acknowledged memory %s lost after kill -9: %v", id, err)
		}
	}
	// No relevance floor: the question is whether the writes are there and
	// indexed. The killed writers' committed rows make "acknowledged" and
	// "memory" common, and a run with many of them fell under the default
	// floor (answerable 0.19 < 0.2): no results, though all 30 were found.
	noFloor := map[string]string{"min_relevance": "0"}
	res, err := e.Recall(context.Background(), mnemo.Query{Profile: "p", Text: "acknowledged memory", Limit: 100, Overrides: noFloor})
	if err != nil {
		t.Fatal(err)
	}
	if n := countPrefix(res, "acknowledged"); n != len(acked) {
		// What the recall saw, to tell a lost write from a ranking or
		// relevance cut.
		tr, err := e.Recall(context.Background(), mnemo.Query{Profile: "p", Text: "acknowledged memory", Limit: 100, Trace: true, Overrides: noFloor})
		if err != nil {
			t.Fatalf("recall finds %d acknowledged memories, want %d; traced again: %v", n, len(acked), err)
		}
		var got []string
		for _, r := range tr.Results[:min(5, len(tr.Results))] {
			got = append(got, r.Content)
		}
		trace, _ := json.Marshal(tr.Trace)
		t.Fatalf("recall finds %d acknowledged memories, want %d; %d results, first %q; traced again: %d results; trace %s",
			n, len(acked), len(res.Results), got, len(tr.Results), trace)
	}
}

func countPrefix(res *mnemo.RecallResult, prefix string) int {
	n := 0
	for _, r := range res.Results {
		if strings.HasPrefix(r.Content, prefix) {
			n++
		}
	}
	return n
}

func compact(b []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return string(b)
	}
	return buf.String()
}

// TestCLI_CommonFlags holds the README's promise: every command that
// opens a database takes --db and --embedder; embed and eval take
// --embedder; migrate takes --db; fuse, models, version, copy (--from,
// --to) and openapi take neither.
func TestCLI_CommonFlags(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	for name := range commands() {
		_, _, usage := c.run("", name, "-h")
		db, emb := strings.Contains(usage, "-db "), strings.Contains(usage, "-embedder ")
		wantDB, wantEmb := true, true
		switch name {
		case "fuse", "models", "version", "copy", "openapi":
			wantDB, wantEmb = false, false
		case "embed", "eval":
			wantDB = false
		case "migrate":
			wantEmb = false
		}
		if db != wantDB || emb != wantEmb {
			t.Errorf("mnemo %s -h: --db %v, --embedder %v; the README says %v, %v", name, db, emb, wantDB, wantEmb)
		}
	}
}

// TestCLI_OpenAPI: mnemo openapi prints the document mnemo serve serves,
// without a database.
func TestCLI_OpenAPI(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	out := c.ok("openapi")
	if out != string(httpapi.OpenAPI()) {
		t.Errorf("mnemo openapi printed %d bytes, not the served document's %d", len(out), len(httpapi.OpenAPI()))
	}
	if _, err := os.Stat(c.env["MNEMO_DB"]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("mnemo openapi touched the database: %v", err)
	}
	if code, _, _ := c.run("", "openapi", "extra"); code != 2 {
		t.Errorf("an argument: exit %d, want 2", code)
	}
}
