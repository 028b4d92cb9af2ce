package cache

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/internal/sqlitedb"
	"github.com/mnemo-dev/mnemo/mnemotype"
)

// DefaultFile is the cache's file name inside mnemo's cache directory.
const DefaultFile = "embeddings.db"

// DefaultBusyTimeout is how long an access waits for another process's
// write before giving up (and being bypassed).
const DefaultBusyTimeout = 5 * time.Second

// schemaVersion is stored in PRAGMA user_version.
const schemaVersion = 1

// lookupChunk is the number of keys per SELECT.
const lookupChunk = 500

const schema = `
CREATE TABLE IF NOT EXISTS embeddings (
	model TEXT NOT NULL,
	key   BLOB NOT NULL,    -- SHA-256 of the text
	vec   BLOB NOT NULL,    -- little-endian float32
	sum   INTEGER NOT NULL, -- CRC-32C of model, key and vec
	PRIMARY KEY (model, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS models (
	model TEXT PRIMARY KEY,
	dim   INTEGER NOT NULL
) WITHOUT ROWID;`

var crcTable = crc32.MakeTable(crc32.Castagnoli)

// Options tunes a Cache. The zero value (or nil) is ready to use.
type Options struct {
	// BusyTimeout is how long an access waits for a lock held by another
	// process. Defaults to DefaultBusyTimeout.
	BusyTimeout time.Duration
	// Logger receives a warning when the cache cannot be read or written.
	// Defaults to discarding.
	Logger *slog.Logger
}

// Stats counts what a Cache did since it was opened.
type Stats struct {
	// Hits and Misses count texts served from the file and by the inner
	// embedder.
	Hits, Misses int64
	// Errors counts failed reads and writes of the file (each bypassed).
	Errors int64
}

// Cache is an embed.Embedder that serves vectors from a file and asks its
// inner embedder for the rest. It is safe for concurrent use, and several
// processes may open the same file.
type Cache struct {
	inner  embed.Embedder
	db     *sql.DB
	path   string
	log    *slog.Logger
	dim    atomic.Int64 // the dimension recorded for inner.Model()
	closed atomic.Bool

	hits, misses, errs atomic.Int64
}

var _ embed.Embedder = (*Cache)(nil)

// Open opens (creating if needed) the cache file at path in front of inner.
// Returns an error if the file cannot be opened or is not a cache; the
// caller may then use inner directly.
func Open(path string, inner embed.Embedder, opt *Options) (*Cache, error) {
	var o Options
	if opt != nil {
		o = *opt
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if inner == nil {
		return nil, mnemotype.Invalidf("embedding cache: no inner embedder")
	}
	if err := createPrivate(path); err != nil {
		return nil, fmt.Errorf("open embedding cache: %w", err)
	}
	db, err := sqlitedb.Open(path, sqlitedb.Options{Immediate: true, Pragmas: []string{
		fmt.Sprintf("busy_timeout=%d", o.BusyTimeout.Milliseconds()), "synchronous=NORMAL",
	}})
	if err != nil {
		return nil, fmt.Errorf("embedding cache: %w", err)
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	if err := sqlitedb.EnableWAL(context.Background(), db, o.BusyTimeout); err != nil {
		db.Close()
		return nil, fmt.Errorf("embedding cache %s: %w", path, err)
	}
	c := &Cache{inner: inner, db: db, path: path, log: o.Logger}
	if err := c.migrate(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open embedding cache %s: %w", path, err)
	}
	var dim int64
	err = db.QueryRow(`SELECT dim FROM models WHERE model = ?`, inner.Model()).Scan(&dim)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		db.Close()
		return nil, fmt.Errorf("open embedding cache %s: %w", path, err)
	}
	c.dim.Store(dim)
	return c, nil
}

// createPrivate makes sure the cache file exists readable by its owner
// only, in a directory created 0700 if missing: the vectors describe the
// user's memories. SQLite gives the -wal and -shm files the main file's
// mode. A file left 0644 by an older version is narrowed to 0600; an
// existing directory is left as it is (it may be shared, such as /tmp).
func createPrivate(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.Mode().Perm()&0o077 != 0 {
		if err := f.Chmod(st.Mode().Perm() &^ 0o077); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cache) migrate() error {
	var v int
	if err := c.db.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		return err
	}
	if v == schemaVersion {
		return nil
	}
	if v > schemaVersion {
		return fmt.Errorf("cache schema version %d is newer than this mnemo's %d", v, schemaVersion)
	}
	tx, err := c.db.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(schema); err != nil {
		return err
	}
	if _, err := tx.Exec(fmt.Sprintf(`PRAGMA user_version = %d`, schemaVersion)); err != nil {
		return err
	}
	return tx.Commit()
}

// Close closes the file. Later calls to Embed go straight to the inner
// embedder. It is idempotent.
func (c *Cache) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	if err := c.db.Close(); err != nil {
		return fmt.Errorf("close embedding cache %s: %w", c.path, err)
	}
	return nil
}

// Inner returns the decorated embedder.
func (c *Cache) Inner() embed.Embedder { return c.inner }

// Stats returns the cache's counters.
func (c *Cache) Stats() Stats {
	return Stats{Hits: c.hits.Load(), Misses: c.misses.Load(), Errors: c.errs.Load()}
}

// Model implements embed.Embedder: the inner embedder's model.
func (c *Cache) Model() string { return c.inner.Model() }

// Dim implements embed.Embedder: the inner embedder's dimension, or while
// that is unknown (0), the dimension recorded in the file for its model.
func (c *Cache) Dim() int {
	if d := c.inner.Dim(); d > 0 {
		return d
	}
	return int(c.dim.Load())
}

// Embed implements embed.Embedder. Texts found in the file are served from
// it; the others (each distinct text once) are embedded by the inner
// embedder in one call and written to the file. The inner embedder's error
// is returned as is; the file's errors never are.
func (c *Cache) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if c.closed.Load() {
		return c.inner.Embed(ctx, texts)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	model := c.inner.Model()
	// Distinct texts, each with the positions it fills.
	keys := make([][sha256.Size]byte, 0, len(texts))
	pos := make(map[[sha256.Size]byte][]int, len(texts))
	for i, t := range texts {
		k := sha256.Sum256([]byte(t))
		if _, ok := pos[k]; !ok {
			keys = append(keys, k)
		}
		pos[k] = append(pos[k], i)
	}
	want := c.Dim()
	hits := c.lookup(ctx, model, keys, want)
	out := make([][]float32, len(texts))
	var missKeys, hitKeys [][sha256.Size]byte
	for _, k := range keys {
		if _, ok := hits[k]; ok {
			hitKeys = append(hitKeys, k)
		} else {
			missKeys = append(missKeys, k)
		}
	}
	if len(missKeys) > 0 {
		fresh, err := c.embedKeys(ctx, texts, pos, missKeys)
		if err != nil {
			return nil, err
		}
		d := len(fresh[missKeys[0]])
		if len(hitKeys) > 0 && len(hits[hitKeys[0]]) != d {
			// The model's dimension changed (another model behind the same
			// name): the cached vectors are stale.
			again, err := c.embedKeys(ctx, texts, pos, hitKeys)
			if err != nil {
				return nil, err
			}
			for k, v := range again {
				fresh[k] = v
			}
			missKeys = append(missKeys, hitKeys...)
			hits, hitKeys = nil, nil
		}
		c.store(ctx, model, d, fresh)
		for _, k := range missKeys {
			c.misses.Add(int64(len(pos[k])))
			fill(out, pos[k], fresh[k])
		}
	}
	for _, k := range hitKeys {
		c.hits.Add(int64(len(pos[k])))
		fill(out, pos[k], hits[k])
	}
	return out, nil
}

// fill puts v at the positions ps of out, each position its own copy.
func fill(out [][]float32, ps []int, v []float32) {
	for j, p := range ps {
		if j == 0 {
			out[p] = v
		} else {
			out[p] = slices.Clone(v)
		}
	}
}

// embedKeys embeds the texts of keys with the inner embedder and checks
// its output: one vector per text, all of one non-zero dimension.
func (c *Cache) embedKeys(ctx context.Context, texts []string, pos map[[sha256.Size]byte][]int,
	keys [][sha256.Size]byte) (map[[sha256.Size]byte][]float32, error) {
	batch := make([]string, len(keys))
	for i, k := range keys {
		batch[i] = texts[pos[k][0]]
	}
	vecs, err := c.inner.Embed(ctx, batch)
	if err != nil {
		return nil, err
	}
	if len(vecs) != len(batch) {
		return nil, fmt.Errorf("embedder %s returned %d vectors for %d texts", c.inner.Model(), len(vecs), len(batch))
	}
	out := make(map[[sha256.Size]byte][]float32, len(keys))
	for i, v := range vecs {
		if len(v) == 0 || len(v) != len(vecs[0]) {
			return nil, fmt.Errorf("embedder %s returned vectors of mixed dimensions (%d and %d): %w",
				c.inner.Model(), len(vecs[0]), len(v), mnemotype.ErrDimensionMismatch)
		}
		out[keys[i]] = v
	}
	return out, nil
}

// lookup returns the valid cached vectors of keys. With want > 0 only
// vectors of that dimension are valid; with want == 0 (nothing known)
// vectors are used only if they all share one dimension.
func (c *Cache) lookup(ctx context.Context, model string, keys [][sha256.Size]byte, want int) map[[sha256.Size]byte][]float32 {
	out := make(map[[sha256.Size]byte][]float32, len(keys))
	bad := 0
	for start := 0; start < len(keys); start += lookupChunk {
		chunk := keys[start:min(start+lookupChunk, len(keys))]
		args := make([]any, 0, len(chunk)+1)
		args = append(args, model)
		for _, k := range chunk {
			args = append(args, k[:])
		}
		q := `SELECT key, vec, sum FROM embeddings WHERE model = ? AND key IN (?` + strings.Repeat(",?", len(chunk)-1) + `)`
		if err := c.query(ctx, q, args, func(key, vec []byte, sum int64) {
			var k [sha256.Size]byte
			if len(key) != len(k) {
				bad++
				return
			}
			copy(k[:], key)
			v, ok := decode(model, key, vec, sum)
			if !ok || (want > 0 && len(v) != want) {
				bad++
				return
			}
			out[k] = v
		}); err != nil {
			c.errs.Add(1)
			c.log.Warn("embedding cache unreadable; embedding without it", "path", c.path, "err", err)
			return nil
		}
	}
	if bad > 0 {
		c.log.Warn("embedding cache: ignoring invalid entries", "path", c.path, "model", model, "count", bad)
	}
	if want == 0 {
		d := -1
		for _, v := range out {
			if d >= 0 && len(v) != d {
				return nil
			}
			d = len(v)
		}
	}
	return out
}

func (c *Cache) query(ctx context.Context, q string, args []any, row func(key, vec []byte, sum int64)) error {
	rows, err := c.db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var key, vec []byte
		var sum int64
		if err := rows.Scan(&key, &vec, &sum); err != nil {
			return err
		}
		row(key, vec, sum)
	}
	return rows.Err()
}

// store writes fresh vectors of dimension dim in one transaction and
// records the model's dimension. Failures are logged, never returned: the
// caller has its vectors.
func (c *Cache) store(ctx context.Context, model string, dim int, fresh map[[sha256.Size]byte][]float32) {
	// The vectors are paid for: keep them even if the caller gives up now.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := func() error {
		tx, err := c.db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		stmt, err := tx.PrepareContext(ctx, `INSERT OR REPLACE INTO embeddings (model, key, vec, sum) VALUES (?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for k, v := range fresh {
			vec := encode(v)
			if _, err := stmt.ExecContext(ctx, model, k[:], vec, checksum(model, k[:], vec)); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO models (model, dim) VALUES (?, ?)
			ON CONFLICT (model) DO UPDATE SET dim = excluded.dim`, model, dim); err != nil {
			return err
		}
		return tx.Commit()
	}()
	if err != nil {
		c.errs.Add(1)
		c.log.Warn("embedding cache not written", "path", c.path, "model", model, "count", len(fresh), "err", err)
		return
	}
	c.dim.Store(int64(dim))
}

func encode(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func checksum(model string, key, vec []byte) int64 {
	h := crc32.New(crcTable)
	h.Write([]byte(model))
	h.Write([]byte{0})
	h.Write(key)
	h.Write(vec)
	return int64(h.Sum32())
}

// decode returns the vector of an entry, or false if the entry is corrupt.
func decode(model string, key, vec []byte, sum int64) ([]float32, bool) {
	if len(vec) == 0 || len(vec)%4 != 0 || checksum(model, key, vec) != sum {
		return nil, false
	}
	v := make([]float32, len(vec)/4)
	for i := range v {
		f := math.Float32frombits(binary.LittleEndian.Uint32(vec[4*i:]))
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil, false
		}
		v[i] = f
	}
	return v, true
}
