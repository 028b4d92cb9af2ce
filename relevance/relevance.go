// Package relevance estimates how relevant recalled memories are on a scale
// that means the same whatever the query, the strategy or the store, so
// that a caller can set a floor ("nothing below 0.4") instead of taking
// whatever the top of a ranked list happens to hold.
//
// A fused score says which memory matches best, not whether any matches:
// normalisation stretches every candidate list to the same range, so the
// best match of a nonsense query scores as high as the best match of a good
// one. The estimate has two parts:
//
//   - Answerable: the probability that the query has a relevant memory in
//     scope at all, from evidence that does mean the same across queries —
//     the best raw BM25 score of the lexical leg, the number of query terms
//     it sums over, and the largest share of the query's terms one of the
//     top results holds (or, when the lexical leg found nothing, the best
//     raw cosine of the dense leg, for the embedders it was fitted on). It
//     is a logistic model fitted on the judged queries of the evaluation
//     data (docs/eval/relevance.md has the data, the fit and the command
//     that refits it).
//   - Share: how close a result's fused score is to the best one's, the
//     square root of their ratio (1 for the best result).
//
// A result's relevance is Answerable × Share.
package relevance

import (
	"math"
	"slices"
	"strings"
)

// Evidence is what a recall knows, after fusion, about how well its query
// matched the scope.
type Evidence struct {
	// Terms is the number of query terms the lexical leg searched.
	Terms int `json:"terms"`
	// Lexical reports that the lexical leg ran; LexicalBest is its best raw
	// BM25 score (0 when it found nothing).
	Lexical     bool    `json:"lexical"`
	LexicalBest float64 `json:"lexical_best"`
	// Memories is the number of memories in the profile, whose statistics
	// the BM25 scores are computed with.
	Memories int `json:"memories"`
	// Coverage is the largest share of the query's terms found in the
	// content and actor of one of the top results, in [0, 1].
	Coverage float64 `json:"coverage"`
	// Dense reports that the dense leg ran; DenseBest is its best raw
	// cosine; Model the embedder it ran with.
	Dense     bool    `json:"dense"`
	DenseBest float64 `json:"dense_best"`
	Model     string  `json:"model,omitempty"`
}

// Basis names the model an Estimate came from.
type Basis string

// Bases.
const (
	// BasisLexical: the lexical leg found something; the lexical model.
	BasisLexical Basis = "lexical"
	// BasisSmall: the lexical leg found something in a profile of fewer
	// than SmallProfile memories, whose BM25 statistics say little (a word
	// in one of two memories has an IDF of about 0) and which is too small
	// for the fitted models: a top result that holds one of the query's
	// words makes the query answerable (1), none makes it not (0).
	BasisSmall Basis = "small_profile"
	// BasisDense: the lexical leg did not run or found nothing, the dense
	// leg ran with an embedder the dense model was fitted for.
	BasisDense Basis = "dense"
	// BasisNone: no evidence the models were fitted on (the dense leg alone
	// with an embedder other than the built-in one; the hashing embedder's
	// when the lexical leg did not run): Answerable is 1, so a floor cuts
	// on the results' shares alone, and the trace says so.
	BasisNone Basis = "uncalibrated"
)

// Estimate is the answerability of one query.
type Estimate struct {
	Answerable float64 `json:"answerable"`
	Basis      Basis   `json:"basis"`
}

// ReferenceSize is the profile size the lexical model reads BM25 scores
// at: a score is scaled by ln(1+ReferenceSize)/ln(1+Memories), the ratio
// of a rare term's IDF at the reference size to its IDF in the profile, so
// that a match in a profile of ten memories counts as it would among a
// thousand (BM25's IDF, and so every score, shrinks with the collection).
const ReferenceSize = 1000

// SmallProfile is the profile size below which BasisSmall stands in for
// the lexical model.
const SmallProfile = 200

// ScaledBM25 is e.LexicalBest at ReferenceSize.
func (e Evidence) ScaledBM25() float64 {
	return e.LexicalBest * math.Log1p(ReferenceSize) / math.Log1p(float64(max(e.Memories, 1)))
}

// The fitted models (docs/eval/relevance.md: `go test -tags 'relfit
// sqlite_fts5' -run TestRelevanceFit ./eval/` prints them). The lexical
// model reads log(1+ScaledBM25), ln(Terms) and Coverage; the dense model
// DenseBest.
const (
	lexIntercept = -19.36
	lexBest      = 7.37
	lexTerms     = -0.35
	lexCoverage  = 9.42

	denseIntercept = -5.12
	denseBest      = 9.07
)

// denseModels are the embedders the dense model was fitted with: the
// built-in GloVe-SIF model (by its name's prefix).
var denseModels = []string{"glove-sif-"}

// hashModel is the hashing embedder's name: its cosine counts shared
// (hashed) words, so where the lexical leg ran and found no word in common
// it has no evidence either.
const hashModel = "hash"

// Answerable estimates the probability that the query behind e has a
// relevant memory in scope.
func Answerable(e Evidence) Estimate {
	switch {
	case e.Lexical && e.LexicalBest > 0 && e.Terms > 0 && e.Memories < SmallProfile:
		if e.Coverage > 0 {
			return Estimate{Answerable: 1, Basis: BasisSmall}
		}
		return Estimate{Answerable: 0, Basis: BasisSmall}
	case e.Lexical && e.LexicalBest > 0 && e.Terms > 0:
		z := lexIntercept + lexBest*math.Log1p(e.ScaledBM25()) + lexTerms*math.Log(float64(e.Terms)) +
			lexCoverage*clamp01(e.Coverage)
		return Estimate{Answerable: sigmoid(z), Basis: BasisLexical}
	case e.Dense && e.Model == hashModel && e.Lexical:
		return Estimate{Answerable: 0, Basis: BasisDense}
	case e.Dense && calibrated(e.Model):
		return Estimate{Answerable: sigmoid(denseIntercept + denseBest*e.DenseBest), Basis: BasisDense}
	case e.Dense:
		return Estimate{Answerable: 1, Basis: BasisNone}
	}
	// Neither leg found anything to go on.
	return Estimate{Answerable: 0, Basis: BasisLexical}
}

func calibrated(model string) bool {
	return slices.ContainsFunc(denseModels, func(p string) bool { return strings.HasPrefix(model, p) })
}

// Share is how close score is to best, the best of a list whose lowest
// score is floor: the square root of (score−floor)/(best−floor), in [0, 1]
// (1 when every score is equal).
func Share(score, best, floor float64) float64 {
	if best <= floor {
		return 1
	}
	return math.Sqrt(clamp01((score - floor) / (best - floor)))
}

// Of is the relevance of a result: answerable × share.
func Of(answerable, share float64) float64 { return clamp01(answerable) * clamp01(share) }

// Group orders items so that a prior cannot flip two whose relevance
// differs by more than margin. rel holds the items' relevance in
// non-increasing order (the order before the prior) and prior their
// scores after it. Walking down rel, each group is an item and every
// following one within margin of it; groups keep their order, and inside
// a group items are ordered by prior score (higher first; ties keep their
// relevance order). It returns the new order as indices into rel.
func Group(rel, prior []float64, margin float64) []int {
	order := make([]int, 0, len(rel))
	for start := 0; start < len(rel); {
		end := start + 1
		for end < len(rel) && rel[end] >= rel[start]-margin {
			end++
		}
		g := make([]int, 0, end-start)
		for i := start; i < end; i++ {
			g = append(g, i)
		}
		slices.SortStableFunc(g, func(a, b int) int {
			switch {
			case prior[a] > prior[b]:
				return -1
			case prior[a] < prior[b]:
				return 1
			}
			return 0
		})
		order = append(order, g...)
		start = end
	}
	return order
}

// MinGap is the smallest drop in relevance Autocut counts as a gap.
const MinGap = 0.1

// Autocut returns how many of rel (non-increasing) to keep so that the
// list ends before its jumps-th large gap; jumps ≤ 0 keeps them all. A gap
// is large where the drop from one item to the next is at least MinGap and
// at least twice the mean of the list's other drops: a knee in the curve,
// not a step of a steady decline.
func Autocut(rel []float64, jumps int) int {
	if jumps <= 0 || len(rel) < 3 {
		return len(rel)
	}
	total := rel[0] - rel[len(rel)-1]
	seen := 0
	for i := 1; i < len(rel); i++ {
		d := rel[i-1] - rel[i]
		others := (total - d) / float64(len(rel)-2)
		if d >= MinGap && d >= 2*others {
			if seen++; seen == jumps {
				return i
			}
		}
	}
	return len(rel)
}

func sigmoid(z float64) float64 { return 1 / (1 + math.Exp(-z)) }

func clamp01(x float64) float64 {
	switch {
	case x > 1:
		return 1
	case x > 0:
		return x
	}
	return 0 // negative and NaN
}
