package glove

import "math"

// Word weights and word-vector post-processing, fixed at conversion time.

// zipfP returns p(w) for the word of 1-based frequency rank r in a vocabulary
// of n words under Zipf's law: 1 / (r · H_n).
func zipfP(r, n int) float64 {
	return 1 / (float64(r) * harmonic(n))
}

// harmonic returns the n'th harmonic number.
func harmonic(n int) float64 {
	if n < 10 {
		h := 0.0
		for i := 1; i <= n; i++ {
			h += 1 / float64(i)
		}
		return h
	}
	// H_n ≈ ln n + γ + 1/(2n) − 1/(12n²), exact to 1e-7 for n ≥ 10.
	x := float64(n)
	return math.Log(x) + 0.5772156649015329 + 1/(2*x) - 1/(12*x*x)
}

// registerWords are frequent in conversation and rare in the news and
// encyclopedia text GloVe's frequency ranks come from, so Zipf on those ranks
// underestimates their probability in what mnemo stores (chat turns, agent
// notes): pronouns of dialogue, greetings, reactions and intensifiers. They
// carry little of what a memory is about; each gets registerP added to p(w).
var registerWords = []string{
	"you", "your", "yours", "me", "my", "mine", "we", "our", "us",
	"hi", "hey", "hello", "bye", "thanks", "thank", "please", "sorry",
	"yes", "yeah", "yep", "no", "nope", "oh", "wow", "ok", "okay",
	"great", "awesome", "amazing", "cool", "nice", "glad", "sure", "fun",
	"really", "so", "just", "totally", "definitely", "super", "pretty", "lot",
	"love", "appreciate", "sounds", "know", "think", "feel", "good",
}

var registerSet = func() map[string]bool {
	m := make(map[string]bool, len(registerWords))
	for _, w := range registerWords {
		m[w] = true
	}
	return m
}()

// sifWeight returns a/(a + p(w)) for word w of 1-based source rank r among n.
func sifWeight(w string, r, n int, cfg ConvertConfig) float64 {
	p := zipfP(r, n)
	if registerSet[w] {
		p += cfg.registerP
	}
	return cfg.SIFA / (cfg.SIFA + p)
}

// allButTheTop post-processes word vectors in place as Mu and Viswanath
// ("All-but-the-Top: Simple and Effective Postprocessing for Word
// Representations", ICLR 2018): subtract the mean of the n most frequent
// words' vectors, then remove from every vector its projection on their d
// top principal components. Those directions encode word frequency more than
// meaning, and they dominate averages of word vectors.
func allButTheTop(vectors []float32, dim, n, d int) {
	mean := make([]float64, dim)
	for i := range n {
		for j, x := range vectors[i*dim : (i+1)*dim] {
			mean[j] += float64(x)
		}
	}
	for j := range mean {
		mean[j] /= float64(n)
	}
	cov := make([]float64, dim*dim)
	c := make([]float64, dim)
	for i := range n {
		for j, x := range vectors[i*dim : (i+1)*dim] {
			c[j] = float64(x) - mean[j]
		}
		for a := range dim {
			row := cov[a*dim : (a+1)*dim]
			for b, y := range c {
				row[b] += c[a] * y
			}
		}
	}
	pcs := topEigenvectors(cov, dim, d)
	total := len(vectors) / dim
	for i := range total {
		v := vectors[i*dim : (i+1)*dim]
		for j := range v {
			c[j] = float64(v[j]) - mean[j]
		}
		for _, u := range pcs {
			p := 0.0
			for j, x := range c {
				p += x * float64(u[j])
			}
			for j := range c {
				c[j] -= p * float64(u[j])
			}
		}
		for j := range v {
			v[j] = float32(c[j])
		}
	}
}
