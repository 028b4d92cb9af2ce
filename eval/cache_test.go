package eval

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mnemo-dev/mnemo/embed"
)

// countingEmbedder wraps an embedder and counts the texts it embeds.
type countingEmbedder struct {
	embed.Embedder
	model string
	texts atomic.Int64
	fail  error
}

func (c *countingEmbedder) Model() string {
	if c.model != "" {
		return c.model
	}
	return c.Embedder.Model()
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if c.fail != nil {
		return nil, c.fail
	}
	c.texts.Add(int64(len(texts)))
	return c.Embedder.Embed(ctx, texts)
}

func newCounting() *countingEmbedder { return &countingEmbedder{Embedder: embed.NewHash(16)} }

func TestCache_ServesRepeatsFromDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	inner := newCounting()
	c, err := OpenCache(dir, inner)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"alpha", "beta", "alpha", "gamma"}
	first, err := c.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	if n := inner.texts.Load(); n != 3 {
		t.Fatalf("inner embedded %d texts, want 3 (one per distinct text)", n)
	}
	if !slices.Equal(first[0], first[2]) {
		t.Fatal("the same text got two vectors")
	}
	want, _ := embed.NewHash(16).Embed(ctx, texts)
	for i := range texts {
		if !slices.Equal(first[i], want[i]) {
			t.Fatalf("vector %d differs from the inner embedder's", i)
		}
	}
	first[0][0] = 42 // callers may modify what they get
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	inner2 := newCounting()
	c2, err := OpenCache(dir, inner2)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if c2.Len() != 3 {
		t.Fatalf("reopened cache holds %d embeddings, want 3", c2.Len())
	}
	again, err := c2.Embed(ctx, append(texts, "delta"))
	if err != nil {
		t.Fatal(err)
	}
	if n := inner2.texts.Load(); n != 1 {
		t.Fatalf("after reopening, inner embedded %d texts, want 1 (delta)", n)
	}
	for i := range texts {
		if !slices.Equal(again[i], want[i]) {
			t.Fatalf("cached vector %d differs", i)
		}
	}
	if hits, misses := c2.Stats(); hits != 4 || misses != 1 {
		t.Fatalf("stats = %d hits, %d misses; want 4, 1", hits, misses)
	}
}

func TestCache_KeyedByModel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	a := &countingEmbedder{Embedder: embed.NewHash(16), model: "model/a"}
	b := &countingEmbedder{Embedder: embed.NewHash(16), model: "model/b"}
	ca, err := OpenCache(dir, a)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := OpenCache(dir, b)
	if err != nil {
		t.Fatal(err)
	}
	if ca.Path() == cb.Path() {
		t.Fatal("two models share a file")
	}
	for _, c := range []*Cache{ca, cb} {
		if _, err := c.Embed(ctx, []string{"same text"}); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	if a.texts.Load() != 1 || b.texts.Load() != 1 {
		t.Fatalf("each model must embed the text once: %d, %d", a.texts.Load(), b.texts.Load())
	}
}

func TestCache_DamagedTailIsDropped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	c, err := OpenCache(dir, newCounting())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Embed(ctx, []string{"one", "two", "three"}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	path := c.Path()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := c.recordSize()
	// Flip a byte of the last record and append half a record, as a crash
	// mid-write would leave.
	data[len(data)-5] ^= 0xff
	data = append(data, make([]byte, rec/2)...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	inner := newCounting()
	c2, err := OpenCache(dir, inner)
	if err != nil {
		t.Fatal(err)
	}
	if c2.Len() != 2 {
		t.Fatalf("loaded %d embeddings, want the 2 intact ones", c2.Len())
	}
	if _, err := c2.Embed(ctx, []string{"one", "two", "three", "four"}); err != nil {
		t.Fatal(err)
	}
	c2.Close()
	if inner.texts.Load() != 2 {
		t.Fatalf("re-embedded %d texts, want 2 (three, four)", inner.texts.Load())
	}
	c3, err := OpenCache(dir, newCounting())
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if c3.Len() != 4 {
		t.Fatalf("after repair the file holds %d embeddings, want 4", c3.Len())
	}
}

func TestCache_ForeignFileIsReplaced(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	inner := newCounting()
	path := CachePath(dir, inner.Model())
	if err := os.WriteFile(path, []byte("not a cache file at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := OpenCache(dir, inner)
	if err != nil {
		t.Fatal(err)
	}
	if c.Len() != 0 {
		t.Fatalf("len = %d", c.Len())
	}
	if _, err := c.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	c2, err := OpenCache(dir, newCounting())
	if err != nil {
		t.Fatal(err)
	}
	if c2.Len() != 1 {
		t.Fatalf("len = %d, want 1", c2.Len())
	}
	// The same model name with another dimension must not read those vectors.
	c2.Close()
	c3, err := OpenCache(dir, &countingEmbedder{Embedder: embed.NewHash(8), model: inner.Model()})
	if err != nil {
		t.Fatal(err)
	}
	defer c3.Close()
	if c3.Path() != path || c3.Len() != 0 {
		t.Fatalf("another dimension: path %s (want %s), %d embeddings (want 0)", c3.Path(), path, c3.Len())
	}
}

func TestCache_ErrorsAndConcurrency(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	boom := errors.New("provider down")
	c, err := OpenCache(t.TempDir(), &countingEmbedder{Embedder: embed.NewHash(16), fail: boom})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Embed(ctx, []string{"x"}); !errors.Is(err, boom) {
		t.Fatalf("error = %v, want the inner one", err)
	}
	c.Close()

	inner := newCounting()
	c, err = OpenCache(t.TempDir(), inner)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if _, err := c.Embed(ctx, []string{fmt.Sprint(i), fmt.Sprint(g, i)}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2, err := OpenCache(filepath.Dir(c.Path()), newCounting())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if c2.Len() != 50+8*50 {
		t.Fatalf("file holds %d embeddings, want %d", c2.Len(), 50+8*50)
	}
	if _, err := OpenCache(t.TempDir(), nil); err == nil {
		t.Fatal("nil embedder accepted")
	}
}
