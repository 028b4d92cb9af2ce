package cache

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/internal/sqlitedb"
	"github.com/mnemo-dev/mnemo/mnemotype"
)

// fakeEmbedder embeds with the hashing embedder unless EmbedFunc is set,
// records the batches it is asked for, and reports a Dim of 0 until its
// first call when lazyDim is set (as remote providers do).
type fakeEmbedder struct {
	model     string
	hash      *embed.Hash
	lazyDim   bool
	called    atomic.Bool
	EmbedFunc func(ctx context.Context, texts []string) ([][]float32, error)

	mu    sync.Mutex
	calls [][]string
}

var _ embed.Embedder = (*fakeEmbedder)(nil)

func newFake(dim int) *fakeEmbedder {
	return &fakeEmbedder{model: "fake", hash: embed.NewHash(dim), lazyDim: true}
}

func (f *fakeEmbedder) Model() string { return f.model }

func (f *fakeEmbedder) Dim() int {
	if f.lazyDim && !f.called.Load() {
		return 0
	}
	return f.hash.Dim()
}

func (f *fakeEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	f.mu.Lock()
	f.calls = append(f.calls, slices.Clone(texts))
	f.mu.Unlock()
	if f.EmbedFunc != nil {
		return f.EmbedFunc(ctx, texts)
	}
	f.called.Store(true)
	return f.hash.Embed(ctx, texts)
}

func (f *fakeEmbedder) batches() [][]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func openTest(t *testing.T, path string, inner embed.Embedder) *Cache {
	t.Helper()
	c, err := Open(path, inner, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func want(t *testing.T, dim int, texts ...string) [][]float32 {
	t.Helper()
	v, err := embed.NewHash(dim).Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func equal(a, b [][]float32) bool {
	return slices.EqualFunc(a, b, func(x, y []float32) bool { return slices.Equal(x, y) })
}

func TestCache_OnlyMissesReachTheInnerEmbedder(t *testing.T) {
	t.Parallel()
	inner := newFake(16)
	c := openTest(t, filepath.Join(t.TempDir(), "cache", DefaultFile), inner)
	if c.Model() != "fake" || c.Dim() != 0 {
		t.Fatalf("empty cache: model %q dim %d", c.Model(), c.Dim())
	}
	got, err := c.Embed(t.Context(), []string{"alpha", "beta"})
	if err != nil || !equal(got, want(t, 16, "alpha", "beta")) {
		t.Fatalf("first Embed = %v, %v", got, err)
	}
	got, err = c.Embed(t.Context(), []string{"beta", "gamma", "alpha", "gamma"})
	if err != nil || !equal(got, want(t, 16, "beta", "gamma", "alpha", "gamma")) {
		t.Fatalf("second Embed = %v, %v", got, err)
	}
	if b := inner.batches(); len(b) != 2 || !slices.Equal(b[1], []string{"gamma"}) {
		t.Errorf("inner embedder got %q, want the misses only, each once", b)
	}
	got[1][0] = 42 // positions never share a vector
	if got[3][0] == 42 {
		t.Error("a repeated text's vectors are shared")
	}
	if s := c.Stats(); s != (Stats{Hits: 2, Misses: 4}) {
		t.Errorf("Stats = %+v", s)
	}
	if all, err := c.Embed(t.Context(), []string{"alpha"}); err != nil || len(all) != 1 || len(inner.batches()) != 2 {
		t.Errorf("all-hit Embed called the inner embedder: %v", err)
	}
	if got, err := c.Embed(t.Context(), nil); err != nil || len(got) != 0 {
		t.Errorf("Embed(nil) = %v, %v", got, err)
	}
}

func TestCache_PersistsAcrossOpens(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), DefaultFile)
	c := openTest(t, path, newFake(8))
	if _, err := c.Embed(t.Context(), []string{"one", "two"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	inner := newFake(8)
	c2 := openTest(t, path, inner)
	if c2.Dim() != 8 {
		t.Errorf("Dim of a reopened cache = %d, want the recorded 8 before any call", c2.Dim())
	}
	got, err := c2.Embed(t.Context(), []string{"two", "one"})
	if err != nil || !equal(got, want(t, 8, "two", "one")) || len(inner.batches()) != 0 {
		t.Errorf("reopened Embed = %v, %v after %d inner calls", got, err, len(inner.batches()))
	}
	other := newFake(8)
	other.model = "other"
	c3 := openTest(t, path, other)
	if _, err := c3.Embed(t.Context(), []string{"one"}); err != nil || len(other.batches()) != 1 || c3.Dim() != 8 {
		t.Errorf("another model shared entries: %v, %d calls", err, len(other.batches()))
	}
}

func TestCache_InnerErrorIsReturnedAndNothingCached(t *testing.T) {
	t.Parallel()
	inner := newFake(8)
	boom := errors.New("provider down")
	inner.EmbedFunc = func(ctx context.Context, texts []string) ([][]float32, error) { return nil, boom }
	c := openTest(t, filepath.Join(t.TempDir(), DefaultFile), inner)
	if _, err := c.Embed(t.Context(), []string{"x"}); !errors.Is(err, boom) {
		t.Fatalf("Embed = %v, want the inner error", err)
	}
	inner.EmbedFunc = nil
	if _, err := c.Embed(t.Context(), []string{"x"}); err != nil || len(inner.batches()) != 2 {
		t.Errorf("after a failure: %v, %d inner calls", err, len(inner.batches()))
	}
}

func TestCache_RejectsMalformedInnerOutput(t *testing.T) {
	t.Parallel()
	inner := newFake(8)
	inner.EmbedFunc = func(ctx context.Context, texts []string) ([][]float32, error) {
		return [][]float32{{1, 0}, {1, 0, 0}}, nil
	}
	c := openTest(t, filepath.Join(t.TempDir(), DefaultFile), inner)
	if _, err := c.Embed(t.Context(), []string{"x", "y"}); !errors.Is(err, mnemotype.ErrDimensionMismatch) {
		t.Errorf("mixed dimensions: %v", err)
	}
	inner.EmbedFunc = func(ctx context.Context, texts []string) ([][]float32, error) { return [][]float32{{1}}, nil }
	if _, err := c.Embed(t.Context(), []string{"x", "y"}); err == nil {
		t.Error("one vector for two texts was accepted")
	}
}

func TestCache_CorruptEntriesIgnored(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), DefaultFile)
	inner := newFake(8)
	c := openTest(t, path, inner)
	texts := []string{"flipped", "truncated", "badsum", "shortvec", "nan", "fine"}
	if _, err := c.Embed(t.Context(), texts); err != nil {
		t.Fatal(err)
	}
	db, err := sqlitedb.Open(path, sqlitedb.Options{Pragmas: []string{"busy_timeout=10000"}})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := func(s string) []byte { k := sha256.Sum256([]byte(s)); return k[:] }
	nanVec := encode([]float32{1, 2, 3, 4, 5, 6, 7, float32(math.NaN())})
	short := encode([]float32{1, 0})
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`UPDATE embeddings SET vec = zeroblob(32) WHERE key = ?`, []any{key("flipped")}},
		{`UPDATE embeddings SET vec = substr(vec, 1, 30) WHERE key = ?`, []any{key("truncated")}},
		{`UPDATE embeddings SET sum = sum + 1 WHERE key = ?`, []any{key("badsum")}},
		// Valid checksums, invalid vectors.
		{`UPDATE embeddings SET vec = ?, sum = ? WHERE key = ?`, []any{short, checksum("fake", key("shortvec"), short), key("shortvec")}},
		{`UPDATE embeddings SET vec = ?, sum = ? WHERE key = ?`, []any{nanVec, checksum("fake", key("nan"), nanVec), key("nan")}},
	} {
		if _, err := db.Exec(q.sql, q.args...); err != nil {
			t.Fatal(err)
		}
	}
	inner2 := newFake(8)
	c2 := openTest(t, path, inner2)
	got, err := c2.Embed(t.Context(), texts)
	if err != nil || !equal(got, want(t, 8, texts...)) {
		t.Fatalf("Embed over corrupt entries = %v", err)
	}
	if b := inner2.batches(); len(b) != 1 || !slices.Equal(b[0], texts[:5]) {
		t.Errorf("inner embedder got %q, want the 5 corrupt entries", b)
	}
	// They were overwritten: the next call is all hits.
	if _, err := c2.Embed(t.Context(), texts); err != nil || len(inner2.batches()) != 1 {
		t.Errorf("corrupt entries were not repaired: %v, %d calls", err, len(inner2.batches()))
	}
}

func TestCache_ModelDimensionChanged(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), DefaultFile)
	c := openTest(t, path, newFake(4))
	if _, err := c.Embed(t.Context(), []string{"old"}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	inner := newFake(12) // same model name, new dimension, unknown until called
	c2 := openTest(t, path, inner)
	got, err := c2.Embed(t.Context(), []string{"old", "new"})
	if err != nil || !equal(got, want(t, 12, "old", "new")) {
		t.Fatalf("Embed = %v, %v; want 12-d vectors for both", got, err)
	}
	if c2.Dim() != 12 {
		t.Errorf("Dim = %d, want 12", c2.Dim())
	}
	c2.Close()
	c3 := openTest(t, path, newFake(12))
	if c3.Dim() != 12 {
		t.Errorf("recorded Dim = %d, want 12", c3.Dim())
	}
}

func TestCache_NotACacheFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), DefaultFile)
	if err := os.WriteFile(path, []byte("this is not a database, just text that is long enough to be read as a header......"), 0o644); err != nil {
		t.Fatal(err)
	}
	if c, err := Open(path, newFake(4), nil); err == nil {
		c.Close()
		t.Error("Open accepted a file that is not a cache")
	}
}

// TestCache_NoInnerEmbedder comes from eval's former file cache.
func TestCache_NoInnerEmbedder(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), DefaultFile)
	if c, err := Open(path, nil, nil); err == nil || !errors.Is(err, mnemotype.ErrInvalid) {
		if c != nil {
			c.Close()
		}
		t.Errorf("Open without an inner embedder = %v, want an ErrInvalid error", err)
	}
}

func TestCache_ClosedPassesThrough(t *testing.T) {
	t.Parallel()
	inner := newFake(4)
	c := openTest(t, filepath.Join(t.TempDir(), DefaultFile), inner)
	c.Close()
	if got, err := c.Embed(t.Context(), []string{"x"}); err != nil || len(got) != 1 {
		t.Errorf("Embed after Close = %v, %v", got, err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
}

func TestCache_Concurrent(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), DefaultFile)
	// Two Caches on one file stand for two processes' connection pools.
	caches := []*Cache{openTest(t, path, newFake(8)), openTest(t, path, newFake(8))}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Go(func() {
			c := caches[g%2]
			for i := range 20 {
				texts := []string{fmt.Sprint("t", i), fmt.Sprint("t", i+g), fmt.Sprint("g", g)}
				got, err := c.Embed(context.Background(), texts)
				if err == nil && !equal(got, want(t, 8, texts...)) {
					err = fmt.Errorf("goroutine %d: wrong vectors", g)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i, c := range caches {
		if s := c.Stats(); s.Errors != 0 {
			t.Errorf("cache %d: %d file errors", i, s.Errors)
		}
	}
}

// TestCache_TwoProcesses runs helper processes that fill one cache file at
// the same time.
func TestCache_TwoProcesses(t *testing.T) {
	if os.Getenv("MNEMO_CACHE_HELPER") != "" {
		return
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), DefaultFile)
	var cmds []*exec.Cmd
	for p := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCacheHelperProcess$")
		cmd.Env = append(os.Environ(), "MNEMO_CACHE_HELPER="+path, "MNEMO_CACHE_HELPER_ID="+strconv.Itoa(p))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("helper %d: %v", i, err)
		}
	}
	inner := newFake(8)
	c := openTest(t, path, inner)
	texts := make([]string, 300)
	for i := range texts {
		texts[i] = fmt.Sprint("shared ", i)
	}
	got, err := c.Embed(t.Context(), texts)
	if err != nil || !equal(got, want(t, 8, texts...)) || len(inner.batches()) != 0 {
		t.Errorf("after two writers: %v, %d inner calls", err, len(inner.batches()))
	}
}

func TestCacheHelperProcess(t *testing.T) {
	path := os.Getenv("MNEMO_CACHE_HELPER")
	if path == "" {
		t.Skip("helper process for TestCache_TwoProcesses")
	}
	id, _ := strconv.Atoi(os.Getenv("MNEMO_CACHE_HELPER_ID"))
	c, err := Open(path, newFake(8), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 30 {
		texts := make([]string, 0, 10)
		for j := range 10 {
			n := i*10 + j
			if id == 1 {
				n = 299 - n
			}
			texts = append(texts, fmt.Sprint("shared ", n))
		}
		got, err := c.Embed(context.Background(), texts)
		if err != nil || !equal(got, want(t, 8, texts...)) {
			t.Fatalf("Embed: %v", err)
		}
	}
	if s := c.Stats(); s.Errors != 0 {
		t.Fatalf("%d file errors", s.Errors)
	}
}

// TestCache_FilesArePrivate checks that the cache file, its WAL and shared
// memory files are readable by their owner only and that a directory the
// cache creates is 0700; a file an older version left 0644 is narrowed.
func TestCache_FilesArePrivate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cache")
	path := filepath.Join(dir, DefaultFile)
	c := openTest(t, path, newFake(8))
	if _, err := c.Embed(t.Context(), []string{"a private text"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if m := st.Mode().Perm(); m != 0o600 {
			t.Errorf("%s: mode %o, want 600", filepath.Base(p), m)
		}
	}
	if st, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	} else if m := st.Mode().Perm(); m != 0o700 {
		t.Errorf("cache directory: mode %o, want 700", m)
	}

	old := filepath.Join(t.TempDir(), DefaultFile)
	if err := os.WriteFile(old, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(old, 0o644); err != nil {
		t.Fatal(err)
	}
	openTest(t, old, newFake(8))
	if st, err := os.Stat(old); err != nil {
		t.Fatal(err)
	} else if m := st.Mode().Perm(); m != 0o600 {
		t.Errorf("older cache file: mode %o, want 600", m)
	}
}
