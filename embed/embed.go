// Package embed defines the Embedder port and mnemo's embedders: the
// deterministic hashing embedder ("hash") and, in subpackages, the built-in
// and remote providers; and Breaker, a circuit breaker that stops calling a
// remote provider that keeps failing.
package embed

import (
	"context"
	"math"
)

// Embedder turns texts into vectors. Implementations must be safe for
// concurrent use and return one L2-normalised vector of length Dim() per
// input text, in input order.
type Embedder interface {
	// Model names the model; stored with every embedding it produces.
	Model() string
	// Dim is the vector dimension.
	Dim() int
	// Embed embeds a batch of texts.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Normalize scales v to unit L2 norm in place; a zero vector stays zero.
func Normalize(v []float32) {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	if s == 0 {
		return
	}
	inv := float32(1 / math.Sqrt(s))
	for i := range v {
		v[i] *= inv
	}
}
