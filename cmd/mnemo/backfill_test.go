package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/internal/pgtest"
)

// TestServe_ReembedsInTheBackground: memories stored while the provider
// failed are embedded by mnemo serve, once at start and then periodically,
// in every profile; serve stops cleanly.
func TestServe_ReembedsInTheBackground(t *testing.T) {
	t.Parallel()
	c, srv := newRemoteCLI(t, 16)
	srv.set(http.StatusServiceUnavailable, 16)
	atStart := strings.TrimSpace(c.ok("add", "--profile", "me", "stored before serve started"))
	other := strings.TrimSpace(c.ok("add", "--profile", "you", "another profile's memory"))
	srv.set(0, 16)

	url, stop := startServe(t, c, "--profile", "me", "--reembed-every", "100ms")
	waitEmbedded := func(profile, id string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for c.embeddingModel(profile, id) != "openai:test-model" {
			if time.Now().After(deadline) {
				t.Fatalf("memory %s of %s not embedded in the background", id, profile)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitEmbedded("me", atStart)
	waitEmbedded("you", other)

	// An outage while serving: the memory is stored, then embedded once the
	// provider is back.
	srv.set(http.StatusBadGateway, 16)
	code, body := httpDo(t, "POST", url+"/v1/memories", "", `{"content": "stored while the provider was down"}`)
	if code != 201 {
		t.Fatalf("POST while the provider fails: %d %s", code, body)
	}
	var created struct{ ID string }
	json.Unmarshal([]byte(body), &created)
	if m := c.embeddingModel("me", created.ID); m != "" {
		t.Fatalf("memory stored with model %q while the provider failed", m)
	}
	srv.set(0, 16)
	waitEmbedded("me", created.ID)

	code, stderr := stop()
	if code != 0 || !strings.Contains(stderr, "reembed: embedded memories stored without an embedding") || !strings.Contains(stderr, "stopped") {
		t.Errorf("serve exited %d: %s", code, stderr)
	}
}

// TestBackfill_StopsCleanly: stopping waits for the loop, also while the
// embedder hangs in a call, and a disabled loop does nothing.
func TestBackfill_StopsCleanly(t *testing.T) {
	t.Parallel()
	blocked := make(chan struct{})
	emb := &hangingEmbedder{Embedder: embed.NewHash(8), called: blocked}
	e, err := mnemo.Open(filepath.Join(t.TempDir(), "mnemo.db"), &mnemo.Config{Embedder: emb, AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if _, err := e.Remember(t.Context(), mnemo.Input{Profile: "me", Content: "hanging"}); err != nil {
		t.Fatal(err) // stored without an embedding: the embedder fails while not hanging
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	startBackfill(e, 0, log)() // disabled: returns at once

	emb.hang.Store(true)
	stop := startBackfill(e, time.Hour, log)
	select {
	case <-blocked:
	case <-time.After(10 * time.Second):
		t.Fatal("the first run did not start at once")
	}
	done := make(chan struct{})
	go func() { stop(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("stop did not return while the embedder hung")
	}
}

// hangingEmbedder fails while hang is false, and blocks until its context
// is done while hang is true, closing called on the first such call.
type hangingEmbedder struct {
	embed.Embedder
	hang   atomic.Bool
	called chan struct{}
	once   sync.Once
}

func (h *hangingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if !h.hang.Load() {
		return nil, errors.New("provider down")
	}
	h.once.Do(func() { close(h.called) })
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestIndexVectors_WaitsForQuiet: mnemo serve's leader builds a profile's
// HNSW index (Postgres with pgvector) once the profile grows by less than
// 2% between two runs, not in the middle of an import.
func TestIndexVectors_WaitsForQuiet(t *testing.T) {
	t.Parallel()
	cl := pgtest.Start(t)
	ctx := t.Context()
	e, err := mnemo.Open(cl.DSN("postgres")+"&schema=quiet", &mnemo.Config{Embedder: embed.NewHash(32), AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	add := func(from, n int) {
		t.Helper()
		ins := make([]mnemo.Input, n)
		for i := range ins {
			ins[i] = mnemo.Input{ID: fmt.Sprintf("m%05d", from+i), Profile: "big", Content: fmt.Sprintf("memory number %d", from+i)}
		}
		if _, err := e.RememberBatch(ctx, ins); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 5000; i += 1000 {
		add(i, 1000)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	quiet := quietProfiles{}
	built := func() bool {
		t.Helper()
		ix, own, err := e.IndexVectors(ctx, func(string, int, int) bool { return false })
		if err != nil || !own {
			t.Fatalf("IndexVectors = %v, %v", own, err)
		}
		return len(ix) == 1
	}
	indexVectors(ctx, e, log, quiet) // first sight of the profile
	if built() {
		t.Fatal("the index was built at the first run")
	}
	add(5000, 1000)
	indexVectors(ctx, e, log, quiet) // an import goes on
	if built() {
		t.Fatal("the index was built while the profile grew by a sixth")
	}
	add(6000, 10)
	indexVectors(ctx, e, log, quiet) // trickling
	if !built() {
		t.Fatal("no index once the import was over")
	}
}

func TestQuietProfiles(t *testing.T) {
	t.Parallel()
	q := quietProfiles{}
	for i, c := range []struct {
		profile string
		rows    int
		want    bool
	}{
		{"a", 10000, false}, // first seen
		{"a", 10150, true},  // +150 < 2%
		{"a", 10500, false}, // +350 ≥ 2%
		{"a", 10599, true},  // +99 < 100
		{"b", 5000, false},
		{"b", 5200, false}, // +200 ≥ 2%
		{"b", 5200, true},
	} {
		if got := q.ready(c.profile, 100, c.rows); got != c.want {
			t.Errorf("step %d: ready(%s, %d) = %v, want %v", i, c.profile, c.rows, got, c.want)
		}
	}
	// Each dimension of a profile counts apart.
	if q.ready("a", 384, 10599) {
		t.Error("a profile's 384-d embeddings ready at their first sight")
	}
}
