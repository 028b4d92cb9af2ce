package vector

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
	"unsafe"
)

// An index decoded from its codes alone (DecodeOptions.Codes) holds each
// embedding as int8 codes and a scale instead of float32s: a quarter of
// the memory, and a quarter of the bytes to read, for a one-shot process.
// A search ranks the rows in scope by the codes, then scores the best
// candidates again with their float32 embeddings, read from the encoding
// (the rows decoded; each row's CRC-32C is among the codes) or held (the
// rows written since). A code is within half a step of its value, which
// bounds how far a row's score by the codes is from its score: when a row
// left out could still reach the k-th score found, the scope is scanned
// again for every such row, so the hits and scores are exactly those of an
// index holding float32s.

// quant holds a coded index's embeddings.
type quant struct {
	codes []int8    // slot s: codes[s*dim : (s+1)*dim]
	scale []float32 // slot s: its embedding ≈ codes × scale[s]
	sums  []uint32  // slot s: the CRC-32C of its float32s in src
	// orig is each slot's row in src's float32s, -1 for a row written
	// since the index was decoded, whose embedding is in fresh.
	orig  []int32
	fresh map[string][]float32
	src   io.ReaderAt
	off   int64 // where src's float32s start
}

// A coded search scores k × rescoreFactor + rescoreExtra candidates again.
const (
	rescoreFactor = 4
	rescoreExtra  = 32
)

// candidates returns how many candidates a coded search of k keeps.
func candidates(k int) int {
	if k > (math.MaxInt32-rescoreExtra)/rescoreFactor {
		return math.MaxInt32
	}
	return k*rescoreFactor + rescoreExtra
}

// codeError bounds how far a row's dot product with q by its codes is
// from its dot product: half a step per value, weighed by |q| (l1 is q's
// l1 norm), and a margin for float32 rounding. Times the row's inverse
// norm and q's, it bounds the cosine's error.
func codeError(scale, l1 float32) float32 { return 0.502 * scale * l1 }

// bound is the most the score of slot s (a cosine: its dot product times
// norms, the product of its inverse norm and q's) can be: its score by the
// codes plus their error (l1 is q's l1 norm).
func (q *quant) bound(v []float32, s int, norms, l1 float32) float64 {
	dim := len(v)
	si := q.scale[s] * norms
	return float64(dot8(v, q.codes[s*dim:(s+1)*dim])*si) + float64(codeError(si, l1))
}

// l1 returns the sum of q's magnitudes.
func l1(q []float32) float32 {
	s := float32(0)
	for _, f := range q {
		s += float32(math.Abs(float64(f)))
	}
	return s * (1 + 1e-5)
}

// quantize writes v's codes into codes and returns its scale: the largest
// magnitude maps to ±127.
func quantize(v []float32, codes []int8) float32 {
	m := float32(0)
	for _, f := range v {
		m = max(m, float32(math.Abs(float64(f))))
	}
	if m == 0 || math.IsInf(float64(m), 0) || math.IsNaN(float64(m)) {
		clear(codes)
		return 0
	}
	s := m / 127
	for i, f := range v {
		codes[i] = int8(max(-127, min(127, math.Round(float64(f)/float64(s)))))
	}
	return s
}

// dot8 is the dot product of q with codes, four accumulators wide.
func dot8(q []float32, c []int8) float32 {
	c = c[:len(q)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(q); i += 4 {
		s0 += q[i] * float32(c[i])
		s1 += q[i+1] * float32(c[i+1])
		s2 += q[i+2] * float32(c[i+2])
		s3 += q[i+3] * float32(c[i+3])
	}
	for ; i < len(q); i++ {
		s0 += q[i] * float32(c[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// vector returns slot s's float32 embedding: x.vecs' row, or for a coded
// index the row written since it was decoded, or read from the encoding
// into buf (of x.dim) and checked against its CRC-32C (among the codes,
// which their own checksum covers): a mismatch is ErrCorrupt.
func (x *Index) vector(s int, buf []float32) ([]float32, error) {
	q := x.q
	if q == nil {
		return x.vecs[s*x.dim : (s+1)*x.dim], nil
	}
	if q.orig[s] < 0 {
		return q.fresh[x.rows[s].id], nil
	}
	b := make([]byte, 4*x.dim)
	if _, err := q.src.ReadAt(b, q.off+int64(q.orig[s])*int64(len(b))); err != nil {
		return nil, fmt.Errorf("dense index: reading an embedding: %w", err)
	}
	if crc32.Checksum(b, castagnoli) != q.sums[s] {
		return nil, fmt.Errorf("%w: row %q's embedding does not match its checksum", ErrCorrupt, x.rows[s].id)
	}
	for i := range buf[:x.dim] {
		buf[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return buf[:x.dim], nil
}

// floatSum is the CRC-32C of v as the encoding lays it out.
func floatSum(v []float32) uint32 {
	if littleEndian && len(v) > 0 {
		return crc32.Checksum(unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*4), castagnoli)
	}
	var b [4]byte
	sum := uint32(0)
	for _, f := range v {
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(f))
		sum = crc32.Update(sum, castagnoli, b[:])
	}
	return sum
}

// setCoded stores emb (nil: none) as slot s's embedding in a coded index:
// its codes, and the float32s themselves in fresh.
func (x *Index) setCoded(s int, emb []float32) {
	q := x.q
	codes := q.codes[s*x.dim : (s+1)*x.dim]
	q.orig[s] = -1
	id := x.rows[s].id
	if emb == nil {
		clear(codes)
		q.scale[s], q.sums[s] = 0, 0
		delete(q.fresh, id)
		return
	}
	q.scale[s] = quantize(emb, codes)
	q.fresh[id] = slices.Clone(emb)
}

// readFloats reads every float32 embedding into x.vecs and drops the
// codes: for what walks every embedding (a graph). Under the write lock.
func (x *Index) readFloats() error {
	if x.q == nil {
		return nil
	}
	vecs := make([]float32, len(x.rows)*x.dim)
	for s := range x.rows {
		if x.rows[s].model < 0 {
			continue
		}
		dst := vecs[s*x.dim : (s+1)*x.dim]
		v, err := x.vector(s, dst)
		if err != nil {
			return err
		}
		copy(dst, v) // a fresh row's embedding is returned, not copied
	}
	x.vecs, x.q = vecs, nil
	return nil
}

// ReadFloats reads a coded index's float32 embeddings (Coded is false
// after it), for what walks them all (GrowGraph, which does so itself but
// cannot say why it failed).
func (x *Index) ReadFloats() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.readFloats()
}

// Coded reports whether the index holds its embeddings as codes
// (DecodeOptions.Codes).
func (x *Index) Coded() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.q != nil
}

// rescore scores the candidates of a coded scan again with their float32
// embeddings and keeps the best k. A candidate's score is the most its
// score can be (by the codes, plus their error); full is set when the
// scan left rows out. When one of those could reach the k-th score found —
// the lowest candidate's bound is not below it — rescore calls again for
// each row of the scope whose bound reaches the k-th score (the codes'
// second pass), so that the hits are exactly the float32 index's.
func (x *Index) rescore(q []float32, qn float32, cands []entry, full bool,
	again func(floor float64, keep func(s int)), k int) (topK, error) {
	h := topK{k: k}
	buf := make([]float32, x.dim)
	score := func(s int) error {
		v, err := x.vector(s, buf)
		if err != nil {
			return err
		}
		h.offer(s, float64(dot(q, v)*x.norms[s]*qn), x.rows)
		return nil
	}
	lowest := math.Inf(1)
	seen := make(map[int]bool, len(cands))
	for _, e := range cands {
		lowest = min(lowest, e.score)
		seen[e.slot] = true
		if err := score(e.slot); err != nil {
			return h, err
		}
	}
	if !full || len(h.items) < k {
		return h, nil // every row in scope was a candidate
	}
	kth := h.items[0].score // the heap's root is its worst
	for _, e := range h.items {
		kth = min(kth, e.score)
	}
	if lowest < kth {
		return h, nil
	}
	var err error
	again(kth, func(s int) {
		if err == nil && !seen[s] {
			seen[s] = true
			err = score(s)
		}
	})
	return h, err
}
