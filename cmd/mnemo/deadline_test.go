package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/internal/fakeprovider"
)

// newHungCLI is a CLI whose embedder is openai:test-model, with the
// client's default timeout and retries, on a fake provider that accepts
// requests and never answers.
func newHungCLI(t *testing.T) (*cli, *fakeprovider.Server) {
	c := newCLI(t)
	fake := fakeprovider.New(t, 16)
	fake.Set(fakeprovider.Hang)
	c.env["MNEMO_EMBEDDER"] = "openai:test-model"
	c.env["MNEMO_OPENAI_BASE_URL"] = fake.URL
	return c, fake
}

// runWithin runs mnemo and fails the test if it has not exited after d.
func (c *cli) runWithin(d time.Duration, args ...string) (int, string, string) {
	c.t.Helper()
	type result struct {
		code        int
		out, stderr string
	}
	done := make(chan result, 1)
	go func() {
		code, out, errs := c.run("", args...)
		done <- result{code, out, errs}
	}()
	select {
	case r := <-done:
		return r.code, r.out, r.stderr
	case <-time.After(d):
		c.t.Fatalf("mnemo %v did not exit within %v", args, d)
		return 0, "", ""
	}
}

// TestCLI_HungProvider: with a provider that never answers, mnemo add
// stores the memory without an embedding after the write deadline, mnemo
// recall answers from the other legs after the query deadline, and both
// deadlines are settings.
func TestCLI_HungProvider(t *testing.T) {
	t.Parallel()
	c, fake := newHungCLI(t)
	code, out, errs := c.runWithin(5*time.Second, "add", "--profile", "me", "the staging database lives on host db-7")
	if code != 0 {
		t.Fatalf("add: exit %d: %s", code, errs)
	}
	id := strings.TrimSpace(out)
	if !strings.Contains(errs, "timed out after 1s") {
		t.Errorf("add's warning does not name the deadline: %s", errs)
	}
	if m := c.embeddingModel("me", id); m != "" {
		t.Errorf("memory stored with model %q while the provider hangs", m)
	}

	code, out, errs = c.runWithin(5*time.Second, "recall", "--profile", "me", "--json", "--trace", "staging database host")
	if code != 0 {
		t.Fatalf("recall: exit %d: %s", code, errs)
	}
	var r denseRecallOut
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("recall --json: %v\n%s", err, out)
	}
	if len(r.Results) == 0 || r.Results[0].ID != id || r.Trace == nil || !strings.Contains(r.Trace.Skipped["dense"], "timed out after 1s") {
		t.Errorf("recall with a hung provider: %s", out)
	}

	for _, tc := range []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"WriteFlag", []string{"add", "--profile", "me", "--write-embed-timeout", "200ms", "flag"}, "", "timed out after 200ms"},
		{"WriteEnv", []string{"add", "--profile", "me", "env"}, "MNEMO_WRITE_EMBED_TIMEOUT=300ms", "timed out after 300ms"},
		{"QueryFlag", []string{"recall", "--profile", "me", "--query-embed-timeout", "250ms", "--trace", "--json", "host"}, "", "timed out after 250ms"},
		{"QueryEnv", []string{"recall", "--profile", "me", "--trace", "--json", "host"}, "MNEMO_QUERY_EMBED_TIMEOUT=150ms", "timed out after 150ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := &cli{t: t, env: map[string]string{}}
			for k, v := range c.env {
				cc.env[k] = v
			}
			if k, v, ok := strings.Cut(tc.env, "="); ok {
				cc.env[k] = v
			}
			code, out, errs := cc.runWithin(5*time.Second, tc.args...)
			if code != 0 || !strings.Contains(out+errs, tc.want) {
				t.Errorf("exit %d, want 0 and %q in:\n%s%s", code, tc.want, out, errs)
			}
		})
	}

	fake.Set(fakeprovider.OK)
	if rep := c.reembed("--profile", "me"); rep.Embedded != 3 {
		t.Errorf("reembed once the provider answers: %+v", rep)
	}
	if m := c.embeddingModel("me", id); m != "openai:test-model" {
		t.Errorf("after reembed the memory's model is %q", m)
	}
}

// TestCLI_EmbedTimeoutErrors: a malformed deadline is a usage error naming
// the flag or the variable, and nothing is written.
func TestCLI_EmbedTimeoutErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"NegativeFlag", []string{"add", "--profile", "me", "--write-embed-timeout", "-1s", "x"}, "", "--write-embed-timeout"},
		{"NotADuration", []string{"recall", "--profile", "me", "--query-embed-timeout", "soon", "x"}, "", "--query-embed-timeout"},
		{"BadEnv", []string{"add", "--profile", "me", "x"}, "MNEMO_WRITE_EMBED_TIMEOUT=1", "MNEMO_WRITE_EMBED_TIMEOUT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCLI(t)
			if k, v, ok := strings.Cut(tc.env, "="); ok {
				c.env[k] = v
			}
			code, _, errs := c.run("", tc.args...)
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Errorf("exit %d, want 2 naming %s: %s", code, tc.want, errs)
			}
			delete(c.env, "MNEMO_WRITE_EMBED_TIMEOUT")
			// Nothing stored: not even a database, or none in it.
			if code, out, errs := c.run("", "recall", "--profile", "me", "--json", "x"); code != exitNotFound && (code != 0 || strings.Contains(out, `"id"`)) {
				t.Errorf("after a refused command, recall: exit %d: %s %s", code, out, errs)
			}
		})
	}
}

// TestCLI_AddRetriedID: adding the same memory under its id again reports
// the stored one (exit 0, nothing changed); another memory under that id is
// refused (exit 2) naming the id and the field.
func TestCLI_AddRetriedID(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	args := []string{"add", "--profile", "me", "--id", "m1", "--session", "s1", "kayaks on the lake"}
	if out := strings.TrimSpace(c.ok(args...)); out != "m1" {
		t.Fatalf("first add printed %q", out)
	}
	code, out, errs := c.run("", args...)
	if code != 0 || strings.TrimSpace(out) != "m1" || !strings.Contains(errs, "already stored") {
		t.Fatalf("add again: exit %d, %q, %q", code, out, errs)
	}
	var js added
	if err := json.Unmarshal([]byte(c.ok(append(args, "--json")...)), &js); err != nil || js.ID != "m1" || !js.Replayed {
		t.Fatalf("add again --json: %+v, %v", js, err)
	}
	code, _, errs = c.run("", "add", "--profile", "me", "--id", "m1", "--session", "s1", "canoes on the river")
	if code != 2 || !strings.Contains(errs, `"m1"`) || !strings.Contains(errs, "content") {
		t.Fatalf("another memory under m1: exit %d, %q", code, errs)
	}
	if out := c.ok("recall", "--profile", "me", "--json", "--min-relevance", "0", "kayaks canoes"); strings.Count(out, `"id"`) != 1 || !strings.Contains(out, "kayaks") {
		t.Errorf("after the retries: %s", out)
	}
}
