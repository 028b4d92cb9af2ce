package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo/internal/testenv"
)

func TestRecollect_WritesTopThreeAtomically(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	for _, m := range []struct{ session, text string }{
		{"s1", "Deployed Threadline v2.3 with the JWT auth fix"},
		{"s1", "Threadline auth tokens now rotate weekly"},
		{"s2", "The Threadline auth service runs on host auth-3\nsecond line of the note"},
		{"s2", "Threadline auth review scheduled for Friday"},
		{"s3", "bought groceries for the weekend"},
	} {
		c.ok("add", "--profile", "me", "--session", m.session, "--project", "threadline", m.text)
	}
	c.ok("add", "--profile", "other", "Threadline auth secret of another tenant")
	dir := t.TempDir()
	out := filepath.Join(dir, "sub", "recollection.md")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, []byte("stale recollection"), 0o644); err != nil {
		t.Fatal(err)
	}
	c.ok("recollect", "--profile", "me", "--out", out, "how", "did", "I", "handle", "Threadline", "auth?")
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	md := string(b)
	if strings.Contains(md, "stale") || strings.Contains(md, "another tenant") || strings.Contains(md, "groceries") {
		t.Errorf("recollection:\n%s", md)
	}
	for _, want := range []string{"## Recollection", "\n1. ", "\n2. ", "\n3. ", "project threadline", "Threadline"} {
		if !strings.Contains(md, want) {
			t.Errorf("recollection lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "\n4. ") {
		t.Errorf("more than 3 memories:\n%s", md)
	}
	if strings.Contains(md, "second line") && !strings.Contains(md, "\n   second line of the note") {
		t.Errorf("a multi-line memory is not indented under its item:\n%s", md)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("file mode %v, %v", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(out))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}

	// Scoped to a session and with a limit.
	c.ok("recollect", "--profile", "me", "--session", "s2", "--limit", "1", "--out", out, "Threadline auth")
	b, _ = os.ReadFile(out)
	if md := string(b); !strings.Contains(md, "session s2") || strings.Contains(md, "session s1") || strings.Contains(md, "\n2. ") {
		t.Errorf("session-scoped recollection:\n%s", md)
	}

	// A prompt nothing matches empties the file.
	c.ok("recollect", "--profile", "me", "--project", "nope", "--out", out, "Threadline")
	if b, _ := os.ReadFile(out); len(b) != 0 {
		t.Errorf("no match should empty the file, got:\n%s", b)
	}
	// So does a prompt nothing in scope is relevant to (the relevance
	// floor), though the profile has memories to pad the file with.
	c.ok("add", "--profile", "me", "--session", "s9", "the walrus sleeps")
	c.ok("recollect", "--profile", "me", "--out", out, "zorblat quindle vexmo")
	if b, _ := os.ReadFile(out); len(b) != 0 {
		t.Errorf("an irrelevant prompt should empty the file, got:\n%s", b)
	}
}

func TestRecollect_PromptSources(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("add", "--profile", "me", "the staging database lives on host db-7")
	out := filepath.Join(t.TempDir(), "r.md")

	// Claude Code's UserPromptSubmit hook JSON on stdin.
	hook := `{"session_id": "abc", "transcript_path": "/tmp/t.jsonl", "cwd": "/repo", "hook_event_name": "UserPromptSubmit", "prompt": "where is the staging database?"}`
	if code, _, stderr := c.run(hook, "recollect", "--profile", "me", "--hook", "--out", out); code != 0 {
		t.Fatalf("--hook: exit %d: %s", code, stderr)
	}
	if b, _ := os.ReadFile(out); !strings.Contains(string(b), "db-7") {
		t.Errorf("--hook recollection: %q", b)
	}
	// "-" reads the prompt from stdin; --out - prints to stdout.
	code, stdout, stderr := c.run("staging database host", "recollect", "--profile", "me", "--out", "-", "-")
	if code != 0 || !strings.Contains(stdout, "db-7") {
		t.Errorf("stdin prompt to stdout: exit %d %q %s", code, stdout, stderr)
	}
	// An empty prompt writes an empty file without opening the database.
	if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := c.run(`{"prompt": "  "}`, "recollect", "--profile", "me", "--hook", "--out", out); code != 0 {
		t.Errorf("empty hook prompt: exit %d %s", code, stderr)
	}
	if b, _ := os.ReadFile(out); len(b) != 0 {
		t.Errorf("empty prompt left %q", b)
	}
}

func TestRecollect_UsageErrors(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	out := filepath.Join(t.TempDir(), "r.md")
	for _, tc := range []struct {
		stdin string
		args  []string
	}{
		{"", []string{"recollect", "--out", out, "x"}},
		{"", []string{"recollect", "--profile", "me", "x"}},
		{"", []string{"recollect", "--profile", "me", "--out", out, "--limit", "0", "x"}},
	} {
		if code, _, stderr := c.run(tc.stdin, tc.args...); code != 2 {
			t.Errorf("%v: exit %d: %s", tc.args, code, stderr)
		}
	}
	// With --hook a failure exits 1: exit 2 would block the user's prompt.
	for _, tc := range []struct {
		stdin string
		args  []string
	}{
		{"not json", []string{"recollect", "--profile", "me", "--out", out, "--hook"}},
		{"{}", []string{"recollect", "--profile", "me", "--out", out, "--hook", "extra"}},
		{`{"prompt": "x"}`, []string{"recollect", "--out", out, "--hook"}},
		{`{"prompt": "x"}`, []string{"recollect", "--profile", "me", "--out", out, "--hook", "--embedder", "nope"}},
	} {
		if code, _, stderr := c.run(tc.stdin, tc.args...); code != 1 || stderr == "" {
			t.Errorf("%v: exit %d (want 1): %s", tc.args, code, stderr)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed recollect wrote %s", out)
	}
}

// BenchmarkRecollect_Process measures what an agent hook waits for: a new
// mnemo process that opens the database, loads the embedder, embeds the
// prompt, recalls and writes the file. The store holds locomo-dev's 2,760
// turns in one profile (one session per conversation); the embedder is the
// built-in model when installed ($MNEMO_HOME or ~/.local/share/mnemo), else
// the hashing one (reported as a metric: glove=1 or 0).
func BenchmarkRecollect_Process(b *testing.B) {
	corpus := filepath.Join(testenv.Dataset(b, "locomo-dev"), "corpus.jsonl")
	home := testenv.Home(b)
	embedder, glove := "hash", 0.0
	if _, err := os.Stat(filepath.Join(home, "models", "glove-sif-100d.bin")); err == nil {
		embedder, glove = "glove", 1
	}
	dir := b.TempDir()
	env := append(os.Environ(), "MNEMO_TEST_MAIN=1", "MNEMO_DB="+filepath.Join(dir, "mnemo.db"),
		"MNEMO_HOME="+home, "MNEMO_EMBEDDER="+embedder)
	run := func(args ...string) {
		cmd := exec.Command(os.Args[0], args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("mnemo %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	run("import", "--profile", "me", "--session-field", "conversation", corpus)
	out := filepath.Join(dir, "recollection.md")
	prompt := "When did Caroline go to the adoption agency, and what did Melanie say about it?"
	run("recollect", "--profile", "me", "--session", "conv-26", "--out", out, prompt) // warm the page cache
	b.ResetTimer()
	for b.Loop() {
		run("recollect", "--profile", "me", "--session", "conv-26", "--out", out, prompt)
	}
	b.ReportMetric(glove, "glove")
}
