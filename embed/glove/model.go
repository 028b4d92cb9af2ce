package glove

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/mnemo-dev/mnemo/embed"
)

// DefaultName is the model name of the model file Convert builds by default;
// it is stored with every embedding the model produces.
const DefaultName = "glove-sif-100d"

// DefaultFile is the model file's name inside mnemo's models directory.
const DefaultFile = "glove-sif-100d.bin"

// ErrModelMissing is returned (wrapped) by Load when the model file does not
// exist. Its message tells the user how to install it.
var ErrModelMissing = errors.New("glove model not installed; run `mnemo models pull` to fetch and build it")

// ErrModelInvalid is returned (wrapped) by Load and Verify when the file exists
// but is not a valid model file (damaged, truncated or from another format
// version).
var ErrModelInvalid = errors.New("glove model file is invalid; run `mnemo models pull` to rebuild it")

// DefaultPath returns where mnemo keeps the model file under its home (data)
// directory: home/models/glove-sif-100d.bin.
func DefaultPath(home string) string {
	return filepath.Join(home, "models", DefaultFile)
}

// Model is a loaded GloVe-SIF model. It implements embed.Embedder, is
// immutable and safe for concurrent use.
type Model struct {
	name        string
	dim         int
	vocab       int
	precision   Precision
	titleWeight float32 // weight multiplier of capitalised words inside a sentence
	size        int64

	data      []byte    // the whole file, mapped or read
	component []float32 // unit common component, removed from every sentence vector
	weights   []byte    // vocab × float32 SIF weights
	scales    []byte    // vocab × float32 dequantisation scales
	vectors   []byte    // vocab × dim, int8 or little-endian float32
	offsets   []byte    // (vocab+1) × uint32 into blob
	blob      []byte    // words
	table     []byte    // slots × uint32, index+1 or 0
	mask      uint64    // slots-1
}

var _ embed.Embedder = (*Model)(nil)

// Load opens the model file at path. It maps the file read-only where the
// platform allows (reads it whole elsewhere), checks its header and size and
// touches nothing else, so it takes well under a millisecond; pages are read
// as words are first looked up. Lookups never read outside the file, whatever
// it holds; Verify checks its checksum. Load returns an error wrapping
// ErrModelMissing if the file does not exist and ErrModelInvalid if it is not
// a model file of this version.
func Load(path string) (*Model, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("load glove model %s: %w", path, ErrModelMissing)
	}
	if err != nil {
		return nil, fmt.Errorf("load glove model %s: %w", path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("load glove model %s: %w", path, err)
	}
	if st.Size() < headerSize || st.Size() > math.MaxInt32 {
		return nil, fmt.Errorf("load glove model %s: %w (file is %d bytes)", path, ErrModelInvalid, st.Size())
	}
	b, unmap, err := mapFile(f, int(st.Size()))
	if err != nil {
		return nil, fmt.Errorf("load glove model %s: %w", path, err)
	}
	m, err := parse(b)
	if err != nil {
		unmap()
		return nil, fmt.Errorf("load glove model %s: %w (%v)", path, ErrModelInvalid, err)
	}
	runtime.AddCleanup(m, func(unmap func()) { unmap() }, unmap)
	return m, nil
}

// Verify loads the model file at path and checks its checksum and internal
// consistency, reading all of it. It returns the model, or an error wrapping
// ErrModelMissing or ErrModelInvalid.
func Verify(path string) (*Model, error) {
	m, err := Load(path)
	if err != nil {
		return nil, err
	}
	if err := m.verify(); err != nil {
		return nil, fmt.Errorf("verify glove model %s: %w (%v)", path, ErrModelInvalid, err)
	}
	return m, nil
}

// parse checks b's header and size and returns a Model reading b in place.
func parse(b []byte) (*Model, error) {
	var h header
	if err := h.unmarshal(b); err != nil {
		return nil, err
	}
	l := h.layout()
	if len(b) != l.size {
		return nil, fmt.Errorf("file is %d bytes, header implies %d", len(b), l.size)
	}
	m := &Model{
		name:        h.name,
		dim:         int(h.dim),
		vocab:       int(h.vocab),
		precision:   h.precision,
		titleWeight: h.titleWeight,
		size:        int64(len(b)),
		data:        b,
		component:   make([]float32, h.dim),
		weights:     b[l.weights:l.scales],
		scales:      b[l.scales:l.vectors],
		vectors:     b[l.vectors:l.offsets],
		offsets:     b[l.offsets:l.blob],
		blob:        b[l.blob:l.table],
		table:       b[l.table:l.crc],
		mask:        uint64(h.slots - 1),
	}
	for i := range m.component {
		m.component[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[l.component+4*i:]))
	}
	return m, nil
}

// verify checks the checksum, the word offsets and the hash table.
func (m *Model) verify() error {
	le := binary.LittleEndian
	end := len(m.data) - 4
	if got, want := crc32.Checksum(m.data[:end], castagnoli), le.Uint32(m.data[end:]); got != want {
		return fmt.Errorf("checksum mismatch")
	}
	prev := uint32(0)
	for i := 0; i <= m.vocab; i++ {
		o := le.Uint32(m.offsets[4*i:])
		if o < prev || int(o) > len(m.blob) || (i == 0 && o != 0) || (i == m.vocab && int(o) != len(m.blob)) {
			return fmt.Errorf("word offset %d out of order", i)
		}
		prev = o
	}
	empty := false
	for s := 0; s < len(m.table); s += 4 {
		e := le.Uint32(m.table[s:])
		if int(e) > m.vocab {
			return fmt.Errorf("hash table entry %d out of range", s/4)
		}
		empty = empty || e == 0
	}
	if !empty {
		return fmt.Errorf("hash table full")
	}
	for i := range m.vocab {
		if m.lookup([]byte(m.word(i))) != i {
			return fmt.Errorf("word %d %q not found in the hash table", i, m.word(i))
		}
	}
	runtime.KeepAlive(m)
	return nil
}

// Model implements embed.Embedder: the name stored in the model file,
// DefaultName for files built with Convert's defaults.
func (m *Model) Model() string { return m.name }

// Dim implements embed.Embedder.
func (m *Model) Dim() int { return m.dim }

// Vocab returns the number of words in the model's vocabulary.
func (m *Model) Vocab() int { return m.vocab }

// Precision returns how the model file stores vectors.
func (m *Model) Precision() Precision { return m.precision }

// Size returns the model file's size in bytes.
func (m *Model) Size() int64 { return m.size }

// Embed implements embed.Embedder. Each text yields one L2-normalised vector;
// a text with no known word yields the zero vector. It fails only when ctx is
// done. The returned vectors share one backing array. A batch of at least
// parallelBatch texts is split across the CPUs (an import's batches of
// 1,000 spent a seventh of their time here).
func (m *Model) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	all := make([]float32, len(texts)*m.dim)
	parts := 1
	if len(texts) >= parallelBatch {
		parts = min(runtime.GOMAXPROCS(0), len(texts)/(parallelBatch/2))
	}
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := p*len(texts)/parts, (p+1)*len(texts)/parts
		embed := func() {
			var buf []byte
			for i := lo; i < hi; i++ {
				if (i-lo)%256 == 0 {
					if err := ctx.Err(); err != nil {
						errs[p] = err
						return
					}
				}
				v := all[i*m.dim : (i+1)*m.dim : (i+1)*m.dim]
				buf = m.embedOne(texts[i], v, buf)
				out[i] = v
			}
		}
		if parts == 1 {
			embed()
			break
		}
		wg.Go(embed)
	}
	wg.Wait()
	// The sections point into a mapping that m's cleanup unmaps: m must stay
	// reachable until the last read.
	runtime.KeepAlive(m)
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// parallelBatch is the batch size from which Embed uses several CPUs.
const parallelBatch = 128

// embedOne writes text's sentence vector into acc (zeroed, length dim) and
// returns the scratch buffer for reuse.
func (m *Model) embedOne(text string, acc []float32, buf []byte) []byte {
	found := false
	buf = scanWords(text, buf, func(word []byte, s shape) {
		w := float32(1)
		if s == shapeTitle {
			w = m.titleWeight
		}
		if m.addWord(word, w, acc) {
			found = true
		}
	})
	if !found {
		return buf
	}
	var dot float32
	for j, c := range m.component {
		dot += acc[j] * c
	}
	for j, c := range m.component {
		acc[j] -= dot * c
	}
	embed.Normalize(acc)
	return buf
}

// lookup returns the vocabulary index of word, or -1. It stays inside the
// file's sections even if they are damaged.
func (m *Model) lookup(word []byte) int {
	le := binary.LittleEndian
	s := fnv1a(word) & m.mask
	for range len(m.table) / 4 {
		e := le.Uint32(m.table[4*s:])
		if e == 0 || int(e) > m.vocab {
			return -1
		}
		i := int(e - 1)
		lo, hi := le.Uint32(m.offsets[4*i:]), le.Uint32(m.offsets[4*i+4:])
		if lo <= hi && int(hi) <= len(m.blob) && string(m.blob[lo:hi]) == string(word) {
			return i
		}
		s = (s + 1) & m.mask
	}
	return -1
}

// word returns the i'th vocabulary word, or "" if the file is damaged.
func (m *Model) word(i int) string {
	le := binary.LittleEndian
	lo, hi := le.Uint32(m.offsets[4*i:]), le.Uint32(m.offsets[4*i+4:])
	if lo > hi || int(hi) > len(m.blob) {
		return ""
	}
	return string(m.blob[lo:hi])
}

// add adds word i's weighted vector, times w, to acc.
func (m *Model) add(i int, w float32, acc []float32) {
	le := binary.LittleEndian
	c := w * math.Float32frombits(le.Uint32(m.weights[4*i:])) * math.Float32frombits(le.Uint32(m.scales[4*i:]))
	if m.precision == Int8 {
		row := m.vectors[i*m.dim : (i+1)*m.dim]
		acc = acc[:len(row)]
		for j, q := range row {
			acc[j] += c * float32(int8(q))
		}
		return
	}
	row := m.vectors[4*i*m.dim : 4*(i+1)*m.dim]
	for j := range acc {
		acc[j] += c * math.Float32frombits(binary.LittleEndian.Uint32(row[4*j:]))
	}
}
