package embed

import (
	"context"
	"hash/fnv"
	"strings"
	"unicode"
)

// HashModel is the model name of the hashing embedder.
const HashModel = "hash"

// DefaultHashDim is the hashing embedder's dimension.
const DefaultHashDim = 256

// Hash is a deterministic feature-hashing embedder: lowercase word unigrams
// and character trigrams of each word (with boundary marks) are hashed into a
// fixed number of signed buckets. It captures lexical overlap and spelling
// variants only; it is not a semantic model. It needs no model file.
type Hash struct {
	dim int
}

// NewHash returns a hashing embedder of dimension dim (DefaultHashDim when dim ≤ 0).
func NewHash(dim int) *Hash {
	if dim <= 0 {
		dim = DefaultHashDim
	}
	return &Hash{dim: dim}
}

// Model implements Embedder.
func (h *Hash) Model() string { return HashModel }

// Dim implements Embedder.
func (h *Hash) Dim() int { return h.dim }

// Embed implements Embedder. It never fails except on a cancelled context.
func (h *Hash) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out[i] = h.embedOne(t)
	}
	return out, nil
}

func (h *Hash) embedOne(text string) []float32 {
	v := make([]float32, h.dim)
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r)
	})
	for _, w := range words {
		h.add(v, "w:"+w, 1)
		padded := []rune("<" + w + ">")
		for j := 0; j+3 <= len(padded); j++ {
			h.add(v, "c:"+string(padded[j:j+3]), 0.5)
		}
	}
	Normalize(v)
	return v
}

func (h *Hash) add(v []float32, feature string, weight float32) {
	f := fnv.New64a()
	f.Write([]byte(feature))
	x := f.Sum64()
	idx := int(x % uint64(h.dim))
	if x&(1<<63) != 0 {
		weight = -weight
	}
	v[idx] += weight
}
