package vector

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
)

// An index decoded from its codes alone (DecodeOptions.Codes) holds each
// embedding as int8 codes and a scale instead of float32s: a quarter of
// the memory, and a quarter of the bytes to read, for a one-shot process.
// A search ranks the rows in scope by the codes, then scores the best
// candidates again with their float32 embeddings, read from the encoding
// (the rows decoded) or held (the rows written since), so its hits and
// scores are those of an index holding float32s whenever the true top k
// are among the candidates.

// quant holds a coded index's embeddings.
type quant struct {
	codes []int8    // slot s: codes[s*dim : (s+1)*dim]
	scale []float32 // slot s: its embedding ≈ codes × scale[s]
	// orig is each slot's row in src's float32s, -1 for a row written
	// since the index was decoded, whose embedding is in fresh.
	orig  []int32
	fresh map[string][]float32
	src   io.ReaderAt
	off   int64 // where src's float32s start
}

// rescoreOver is how many candidates, besides k, a coded search scores
// again per hit it returns (k × rescoreFactor + rescoreExtra in all).
const (
	rescoreFactor = 4
	rescoreExtra  = 32
)

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
		codes[i] = int8(math.Round(float64(f / s)))
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
// into buf (of x.dim) and checked against the codes, which a checksum
// covers: a value further from its code than rounding allows is
// corruption.
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
	codes, sc := q.codes[s*x.dim:(s+1)*x.dim], q.scale[s]
	for i := range buf[:x.dim] {
		f := math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		if d := math.Abs(float64(f) - float64(codes[i])*float64(sc)); !(d <= 0.5001*float64(sc)+1e-30) {
			return nil, fmt.Errorf("%w: row %q's embedding disagrees with its codes", ErrCorrupt, x.rows[s].id)
		}
		buf[i] = f
	}
	return buf[:x.dim], nil
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
		q.scale[s] = 0
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

// Coded reports whether the index holds its embeddings as codes
// (DecodeOptions.Codes).
func (x *Index) Coded() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.q != nil
}

// rescore scores the candidates again with their float32 embeddings and
// keeps the best k.
func (x *Index) rescore(q []float32, qn float32, cands []entry, k int) (topK, error) {
	h := topK{k: k}
	buf := make([]float32, x.dim)
	for _, e := range cands {
		v, err := x.vector(e.slot, buf)
		if err != nil {
			return h, err
		}
		h.offer(e.slot, float64(dot(q, v)*x.rows[e.slot].invNorm*qn), x.rows)
	}
	return h, nil
}
