package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
)

// fakeOpenAI speaks the OpenAI embeddings protocol. Its vectors are the
// hashing embedder's, so an exact-text query has cosine 1 with its memory.
// It can fail (answer a status) or change its dimension at any time.
type fakeOpenAI struct {
	mu     sync.Mutex
	status int // answered instead of vectors when not 0
	dim    int
	texts  int // texts embedded
	models map[string]int
}

func newFakeOpenAI(t *testing.T, dim int) (*fakeOpenAI, *httptest.Server) {
	f := &fakeOpenAI{dim: dim, models: map[string]int{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeOpenAI) set(status, dim int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.dim = status, dim
}

func (f *fakeOpenAI) embedded() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.texts
}

func (f *fakeOpenAI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	status, dim := f.status, f.dim
	if status == 0 {
		f.texts += len(req.Input)
		f.models[req.Model] += len(req.Input)
	}
	f.mu.Unlock()
	if status != 0 {
		http.Error(w, `{"error":{"message":"overloaded"}}`, status)
		return
	}
	vecs, _ := embed.NewHash(dim).Embed(r.Context(), req.Input)
	type item struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	out := struct {
		Data  []item `json:"data"`
		Model string `json:"model"`
	}{Model: req.Model}
	for i, v := range vecs {
		out.Data = append(out.Data, item{Index: i, Embedding: v})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// newRemoteCLI is a CLI whose embedder is openai:test-model on a fake
// server of dimension dim, without retries.
func newRemoteCLI(t *testing.T, dim int) (*cli, *fakeOpenAI) {
	c := newCLI(t)
	f, srv := newFakeOpenAI(t, dim)
	c.env["MNEMO_EMBEDDER"] = "openai:test-model"
	c.env["MNEMO_OPENAI_BASE_URL"] = srv.URL
	c.env["MNEMO_EMBEDDER_RETRIES"] = "0"
	return c, f
}

type denseRecallOut struct {
	Results []struct {
		ID   string
		Legs map[string]struct{ Rank int }
	}
	Trace *struct {
		Skipped map[string]string `json:"skipped"`
	}
}

// denseRecall runs a dense-only recall and returns its results and trace.
func (c *cli) denseRecall(profile, query string) denseRecallOut {
	c.t.Helper()
	out := c.ok("recall", "--profile", profile, "--weights", "lexical=0,dense=1,recency=0,access=0", "--json", "--trace", query)
	var r denseRecallOut
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		c.t.Fatalf("recall --json: %v\n%s", err, out)
	}
	return r
}

func (c *cli) embeddingModel(profile, id string) string {
	c.t.Helper()
	var m mnemo.Memory
	if err := json.Unmarshal([]byte(c.ok("get", "--profile", profile, id)), &m); err != nil {
		c.t.Fatal(err)
	}
	return m.EmbeddingModel
}

func (c *cli) reembed(args ...string) reembedReport {
	c.t.Helper()
	out := c.ok(append([]string{"reembed", "--json"}, args...)...)
	var r reembedReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		c.t.Fatalf("reembed --json: %v\n%s", err, out)
	}
	return r
}

func TestCLI_ReembedAfterProviderOutage(t *testing.T) {
	t.Parallel()
	c, srv := newRemoteCLI(t, 16)
	srv.set(http.StatusServiceUnavailable, 16)
	texts := []string{"switched the login flow to JWT tokens", "the staging database lives on host db-7"}
	var ids []string
	for _, s := range texts {
		code, out, errs := c.run("", "add", "--profile", "me", s)
		if code != 0 || !strings.Contains(errs, "embedding failed") || !strings.Contains(errs, "503") {
			t.Fatalf("add while the provider answers 503: exit %d, stderr %q; want success with a warning", code, errs)
		}
		ids = append(ids, strings.TrimSpace(out))
	}
	for _, id := range ids {
		if m := c.embeddingModel("me", id); m != "" {
			t.Fatalf("memory %s stored with embedding model %q while the provider was down", id, m)
		}
	}
	if r := c.denseRecall("me", texts[0]); !strings.Contains(r.Trace.Skipped["dense"], "503") {
		t.Errorf("dense recall while down: skipped = %q, want the provider's failure", r.Trace.Skipped["dense"])
	}

	srv.set(0, 16)
	r := c.reembed("--profile", "me")
	if r.Profile != "me" || r.Model != "openai:test-model" || r.Scanned != 2 || r.Embedded != 2 || r.Failed != 0 {
		t.Fatalf("reembed = %+v, want 2 embedded by openai:test-model", r)
	}
	for i, s := range texts {
		if m := c.embeddingModel("me", ids[i]); m != "openai:test-model" {
			t.Errorf("memory %s embedding model %q after reembed", ids[i], m)
		}
		res := c.denseRecall("me", s)
		if len(res.Results) == 0 || res.Results[0].ID != ids[i] || res.Results[0].Legs["dense"].Rank != 1 {
			t.Errorf("dense recall of %q = %+v, want %s first by the dense leg", s, res.Results, ids[i])
		}
		if why, skipped := res.Trace.Skipped["dense"]; skipped {
			t.Errorf("dense leg skipped after reembed: %s", why)
		}
	}
	if r := c.reembed("--profile", "me"); r.Embedded != 0 || r.Current != 2 {
		t.Errorf("second reembed = %+v, want nothing to do", r)
	}
	// Every text went to the server once: the queries, which repeat the
	// memories' texts, came from the on-disk cache.
	if n := srv.embedded(); n != 2 {
		t.Errorf("the server embedded %d texts, want 2", n)
	}
	if _, err := os.Stat(filepath.Join(c.env["MNEMO_HOME"], "cache", "embeddings.db")); err != nil {
		t.Errorf("embedding cache: %v", err)
	}
	// Plain output.
	if out := c.ok("reembed", "--profile", "me"); !strings.Contains(out, "embedded 0 of 2 memories; 2 already current") {
		t.Errorf("plain reembed output: %q", out)
	}
}

func TestCLI_ReembedAllAfterModelChange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		newDim int
	}{
		{"same dimension", 16},
		{"new dimension", 32},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, srv := newRemoteCLI(t, 16)
			texts := []string{"switched the login flow to JWT tokens", "my dog loves running on the beach"}
			var ids []string
			for _, s := range texts {
				ids = append(ids, strings.TrimSpace(c.ok("add", "--profile", "me", s)))
			}
			c.ok("add", "--profile", "you", "another profile is left alone")

			srv.set(0, tc.newDim)
			c.env["MNEMO_EMBEDDER"] = "openai:new-model"
			r := c.reembed("--profile", "me")
			if r.Embedded != 0 || r.Other["openai:test-model"] != 2 {
				t.Fatalf("reembed without --all = %+v, want 2 left to openai:test-model", r)
			}
			if out := c.ok("reembed", "--profile", "me"); !strings.Contains(out, "--all re-embeds them") {
				t.Errorf("plain output does not suggest --all: %q", out)
			}
			r = c.reembed("--profile", "me", "--all", "--batch", "1")
			if r.Embedded != 2 || r.Model != "openai:new-model" {
				t.Fatalf("reembed --all = %+v, want 2 embedded by openai:new-model", r)
			}
			for i, s := range texts {
				if m := c.embeddingModel("me", ids[i]); m != "openai:new-model" {
					t.Errorf("memory %s embedding model %q after --all", ids[i], m)
				}
				res := c.denseRecall("me", s)
				if len(res.Results) == 0 || res.Results[0].ID != ids[i] {
					t.Errorf("dense recall of %q after --all = %+v (skipped %q)", s, res.Results, res.Trace.Skipped["dense"])
				}
			}
			if r := c.reembed("--profile", "you"); r.Other["openai:test-model"] != 1 {
				t.Errorf("profile you = %+v: touched by another profile's reembed", r)
			}
		})
	}
}

// TestCLI_ReembedDimensionMismatch: the server now answers another
// dimension than the profile's vectors of the same model; reembed is a
// clear error and writes nothing.
func TestCLI_ReembedDimensionMismatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"checked against the store", nil, "holds 1 memories it embedded with 16 dimensions"},
		{"checked by the provider", map[string]string{"MNEMO_EMBEDDER_DIM": "16"}, "want 16-d"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, srv := newRemoteCLI(t, 16)
			embedded := strings.TrimSpace(c.ok("add", "--profile", "me", "embedded with 16 dimensions"))
			srv.set(http.StatusTooManyRequests, 16)
			bare := strings.TrimSpace(c.ok("add", "--profile", "me", "stored while rate limited"))
			srv.set(0, 24)
			for k, v := range tc.env {
				c.env[k] = v
			}
			code, out, errs := c.run("", "reembed", "--profile", "me", "--json")
			if code != 2 || !strings.Contains(errs, "dimension") || !strings.Contains(errs, tc.want) {
				t.Fatalf("reembed: exit %d, stderr %q; want exit 2 naming the mismatch (%q)", code, errs, tc.want)
			}
			var r reembedReport
			if err := json.Unmarshal([]byte(out), &r); err != nil || r.Embedded != 0 || r.Failed != 1 {
				t.Errorf("reembed output %q (%v): want 1 failed, 0 embedded", out, err)
			}
			if m := c.embeddingModel("me", bare); m != "" {
				t.Errorf("memory %s was embedded by %q", bare, m)
			}
			if m := c.embeddingModel("me", embedded); m != "openai:test-model" {
				t.Errorf("memory %s now embedded by %q", embedded, m)
			}
			if !strings.Contains(errs, "MNEMO_EMBEDDER_DIM") || !strings.Contains(errs, "embeddings.db") {
				t.Errorf("stderr %q does not say how to recover", errs)
			}
			// Once the server is fixed, the dimension set as the hint says
			// keeps the cached vectors of the wrong one out.
			srv.set(0, 16)
			c.env["MNEMO_EMBEDDER_DIM"] = "16"
			if r := c.reembed("--profile", "me"); r.Embedded != 1 {
				t.Errorf("reembed after the fix = %+v, want 1 embedded", r)
			}
		})
	}
}

func TestCLI_EmbedderUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"unknown", map[string]string{"MNEMO_EMBEDDER": "bert"}, "must be one of glove, hash, openai:MODEL"},
		{"openai without model", map[string]string{"MNEMO_EMBEDDER": "openai:", "OPENAI_API_KEY": "k"}, "name the model"},
		{"openai bad dimension", map[string]string{"MNEMO_EMBEDDER": "openai:m@big", "OPENAI_API_KEY": "k"}, "openai:MODEL@DIM"},
		{"openai dimension conflict", map[string]string{"MNEMO_EMBEDDER": "openai:m@512", "OPENAI_API_KEY": "k", "MNEMO_EMBEDDER_DIM": "256"}, "MNEMO_EMBEDDER_DIM=256"},
		{"openai without key", map[string]string{"MNEMO_EMBEDDER": "openai:text-embedding-3-small"}, "OPENAI_API_KEY"},
		{"openai bad base URL", map[string]string{"MNEMO_EMBEDDER": "openai:m", "MNEMO_OPENAI_BASE_URL": "localhost:8080"}, "http://"},
		{"ollama without model", map[string]string{"MNEMO_EMBEDDER": "ollama:"}, "name the model"},
		{"bad dimension env", map[string]string{"MNEMO_EMBEDDER": "ollama:nomic-embed-text", "MNEMO_EMBEDDER_DIM": "-3"}, "MNEMO_EMBEDDER_DIM"},
		{"bad timeout env", map[string]string{"MNEMO_EMBEDDER": "ollama:nomic-embed-text", "MNEMO_EMBEDDER_TIMEOUT": "soon"}, "MNEMO_EMBEDDER_TIMEOUT"},
		{"bad retries env", map[string]string{"MNEMO_EMBEDDER": "ollama:nomic-embed-text", "MNEMO_EMBEDDER_RETRIES": "x"}, "MNEMO_EMBEDDER_RETRIES"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCLI(t)
			for k, v := range tc.env {
				c.env[k] = v
			}
			code, _, errs := c.run("", "add", "--profile", "me", "some text")
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 mentioning %q", code, errs, tc.want)
			}
		})
	}
	// A key makes api.openai.com acceptable, and a local server needs none:
	// the names are valid (the add then fails to reach the server only at
	// embedding time, which is not a usage error).
	c := newCLI(t)
	for _, name := range []string{"openai:text-embedding-3-small", "ollama:nomic-embed-text"} {
		a := &app{getenv: func(k string) string {
			return map[string]string{"OPENAI_API_KEY": "sk-test", "MNEMO_HOME": c.env["MNEMO_HOME"]}[k]
		}}
		if _, err := a.remoteEmbedder(name); err != nil {
			t.Errorf("remoteEmbedder(%q): %v", name, err)
		}
	}
}

func TestCLI_ReembedFlagErrors(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no profile", []string{"reembed"}, "--profile"},
		{"zero batch", []string{"reembed", "--profile", "me", "--batch", "0"}, "--batch"},
		{"huge batch", []string{"reembed", "--profile", "me", "--batch", "100000"}, "--batch"},
		{"argument", []string{"reembed", "--profile", "me", "extra"}, "no arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := c.run("", tc.args...)
			if code != 2 || !strings.Contains(errs, tc.want) {
				t.Fatalf("exit %d, stderr %q; want exit 2 mentioning %q", code, errs, tc.want)
			}
		})
	}
	if code, _, errs := c.run("", "help"); code != 0 || !strings.Contains(errs, "MNEMO_OPENAI_BASE_URL") || !strings.Contains(errs, "reembed") {
		t.Errorf("mnemo help does not document the remote embedders: %s", errs)
	}
}
