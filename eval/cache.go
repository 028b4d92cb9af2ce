package eval

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mnemo-dev/mnemo/embed"
)

// Cache is an embed.Embedder that remembers the embeddings of another one
// on disk, keyed by (model, sha256(text)), so that re-embedding a corpus
// costs a file read. Each model has one file in the cache directory: a
// header naming the model and dimension, then appended fixed-size records
// (key, little-endian float32 vector, CRC-32C of both). A damaged or
// truncated tail — a crash mid-append, or two processes appending at once —
// is detected by the checksums and dropped when the file is next opened;
// a vector is never read from a record that fails its checksum.
//
// A Cache is safe for concurrent use. Close it to release the file.
type Cache struct {
	inner embed.Embedder
	path  string

	mu  sync.Mutex
	mem map[[sha256.Size]byte][]float32
	f   *os.File
	err error // the first write error; later writes are skipped

	hits, misses atomic.Int64
}

var _ embed.Embedder = (*Cache)(nil)

const (
	cacheMagic   = "MNEMOEMB"
	cacheVersion = 1
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// CachePath returns the file that caches the embeddings of model under dir.
func CachePath(dir, model string) string {
	safe := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, model)
	if len(safe) > 64 {
		safe = safe[:64]
	}
	sum := sha256.Sum256([]byte(model))
	return filepath.Join(dir, safe+"-"+hex.EncodeToString(sum[:4])+".emb")
}

// OpenCache opens (creating dir and the file if needed) the cache of inner's
// model in dir and loads it. A file of another format, model or dimension
// is replaced.
func OpenCache(dir string, inner embed.Embedder) (*Cache, error) {
	if inner == nil {
		return nil, errors.New("open embedding cache: embedder is nil")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open embedding cache: %w", err)
	}
	c := &Cache{inner: inner, path: CachePath(dir, inner.Model()), mem: map[[sha256.Size]byte][]float32{}}
	header := c.header()
	good, err := c.load(header)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(c.path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open embedding cache: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open embedding cache: %w", err)
	}
	if good < int64(len(header)) {
		// New, or not ours: start over.
		if err := f.Truncate(0); err == nil {
			_, err = f.Write(header)
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("open embedding cache %s: %w", c.path, err)
		}
	} else if good < st.Size() {
		// A damaged tail: cut it so appended records stay aligned.
		if err := f.Truncate(good); err != nil {
			f.Close()
			return nil, fmt.Errorf("open embedding cache %s: %w", c.path, err)
		}
	}
	c.f = f
	return c, nil
}

func (c *Cache) header() []byte {
	model := c.inner.Model()
	b := make([]byte, 0, len(cacheMagic)+12+len(model))
	b = append(b, cacheMagic...)
	b = binary.LittleEndian.AppendUint32(b, cacheVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(c.inner.Dim()))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(model)))
	return append(b, model...)
}

func (c *Cache) recordSize() int { return sha256.Size + 4*c.inner.Dim() + 4 }

// load reads the file's valid records into memory and returns the length of
// its valid prefix (0 when the header does not match or there is no file).
func (c *Cache) load(header []byte) (int64, error) {
	data, err := os.ReadFile(c.path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("open embedding cache: %w", err)
	}
	if !bytes.HasPrefix(data, header) {
		return 0, nil
	}
	dim, size := c.inner.Dim(), c.recordSize()
	off := len(header)
	for ; off+size <= len(data); off += size {
		rec := data[off : off+size]
		body, sum := rec[:size-4], binary.LittleEndian.Uint32(rec[size-4:])
		if crc32.Checksum(body, crcTable) != sum {
			break
		}
		var key [sha256.Size]byte
		copy(key[:], body)
		v := make([]float32, dim)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(body[sha256.Size+4*i:]))
		}
		c.mem[key] = v
	}
	return int64(off), nil
}

// Model implements embed.Embedder: the inner embedder's model.
func (c *Cache) Model() string { return c.inner.Model() }

// Dim implements embed.Embedder.
func (c *Cache) Dim() int { return c.inner.Dim() }

// Len returns the number of cached embeddings.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.mem)
}

// Stats returns how many texts were served from the cache and how many were
// embedded by the inner embedder since the cache was opened.
func (c *Cache) Stats() (hits, misses int64) { return c.hits.Load(), c.misses.Load() }

// Path returns the cache file.
func (c *Cache) Path() string { return c.path }

// Embed implements embed.Embedder: cached texts are answered from memory,
// the others embedded in one call of the inner embedder and appended to the
// file. A failure to write the file is not an error of Embed (the vectors
// are still returned); Close reports it.
func (c *Cache) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	keys := make([][sha256.Size]byte, len(texts))
	var missIdx []int
	missByKey := map[[sha256.Size]byte][]int{}
	c.mu.Lock()
	for i, t := range texts {
		keys[i] = sha256.Sum256([]byte(t))
		if v, ok := c.mem[keys[i]]; ok {
			out[i] = append([]float32(nil), v...)
			continue
		}
		if _, pending := missByKey[keys[i]]; !pending {
			missIdx = append(missIdx, i)
		}
		missByKey[keys[i]] = append(missByKey[keys[i]], i)
	}
	c.mu.Unlock()
	c.hits.Add(int64(len(texts) - len(missIdx)))
	if len(missIdx) == 0 {
		return out, nil
	}
	c.misses.Add(int64(len(missIdx)))
	miss := make([]string, len(missIdx))
	for j, i := range missIdx {
		miss[j] = texts[i]
	}
	vecs, err := c.inner.Embed(ctx, miss)
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(miss) {
		return nil, fmt.Errorf("embedder %s returned %d vectors for %d texts", c.inner.Model(), len(vecs), len(miss))
	}
	dim := c.inner.Dim()
	buf := make([]byte, 0, len(miss)*c.recordSize())
	c.mu.Lock()
	defer c.mu.Unlock()
	for j, i := range missIdx {
		v := vecs[j]
		if len(v) != dim {
			return nil, fmt.Errorf("embedder %s returned a %d-d vector, want %d", c.inner.Model(), len(v), dim)
		}
		for _, idx := range missByKey[keys[i]] {
			out[idx] = append([]float32(nil), v...)
		}
		if _, dup := c.mem[keys[i]]; dup {
			continue // embedded meanwhile by a concurrent call
		}
		c.mem[keys[i]] = append([]float32(nil), v...)
		start := len(buf)
		buf = append(buf, keys[i][:]...)
		for _, x := range v {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(x))
		}
		buf = binary.LittleEndian.AppendUint32(buf, crc32.Checksum(buf[start:], crcTable))
	}
	if c.f != nil && c.err == nil && len(buf) > 0 {
		// One appending write per batch, so records of concurrent writers
		// (even other processes) do not interleave.
		if _, err := c.f.Write(buf); err != nil {
			c.err = fmt.Errorf("write embedding cache %s: %w", c.path, err)
		}
	}
	return out, nil
}

// Close closes the file and reports the first write error, if any.
func (c *Cache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f == nil {
		return c.err
	}
	err := c.f.Close()
	c.f = nil
	return errors.Join(c.err, err)
}

// newMemo returns a Cache that keeps embeddings in memory only: within one
// evaluation, each query is embedded once whatever the number of
// configurations.
func newMemo(inner embed.Embedder) *Cache {
	return &Cache{inner: inner, mem: map[[sha256.Size]byte][]float32{}}
}
