package fusion

import (
	"strings"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// Strategy names a fusion formula. The zero value means RRF.
type Strategy string

// Strategies. In the formulas, for an item d and an active leg i: wᵢ is the
// leg's weight, rᵢ(d) its dense rank, nᵢ(d) its normalised score (see
// Normalization), W = Σ wᵢ and w_max = max wᵢ over the active legs; a leg that
// did not list d contributes as the MissingPolicy says (0 by default).
const (
	// RRF is weighted Reciprocal Rank Fusion, the default:
	//
	//	score(d) = Σᵢ wᵢ / (k + rᵢ(d)),  k = Params.K (DefaultK = 60).
	//
	// It reads ranks only, so it is insensitive to the legs' score scales.
	RRF Strategy = "rrf"
	// BordaRank is the legacy rank-only RRF, kept for comparison and
	// rollback with its own constant so tuning RRF's k does not move it:
	//
	//	score(d) = Σᵢ wᵢ / (k_borda + rᵢ(d)),  k_borda = Params.BordaK (DefaultBordaK = 60).
	BordaRank Strategy = "borda_rank"
	// WeightedAverage is the convex combination of normalised scores, with the
	// weights renormalised over the active legs so they sum to 1:
	//
	//	score(d) = Σᵢ (wᵢ / W) · nᵢ(d).
	WeightedAverage Strategy = "weighted_average"
	// ScoreWeightedRRF weights each normalised score by a mild rank discount
	//:
	//
	//	score(d) = Σᵢ wᵢ · nᵢ(d) / (rᵢ(d) + kParam),  kParam = Params.KParam (DefaultKParam = 5).
	ScoreWeightedRRF Strategy = "score_weighted_rrf"
	// MaxConfidence keeps the strongest single signal:
	//
	//	score(d) = maxᵢ (wᵢ / w_max) · nᵢ(d).
	//
	// With equal weights this is maxᵢ nᵢ(d). Ties on the maximum are broken
	// by the raw normalised scores, Σᵢ nᵢ(d) over the legs listing d (higher
	// first), then by best rank and id. An absent leg adds nothing to a
	// maximum, so MissingZero and MissingRenormalize agree here.
	MaxConfidence Strategy = "max_confidence"
	// DBSF is distribution-based score fusion (Qdrant): each leg's scores are
	// scaled over mean ± 3 standard deviations and clipped, then summed with
	// the weights:
	//
	//	dᵢ(d) = clip((sᵢ(d) − (μᵢ − 3σᵢ)) / 6σᵢ, 0.001, 1),  score(d) = Σᵢ wᵢ · dᵢ(d),
	//
	// where μᵢ, σᵢ are the mean and population standard deviation of the
	// leg's returned scores (σᵢ = 0 gives dᵢ = 1). It ignores
	// Params.Normalization (its scaling is NormDBSF).
	DBSF Strategy = "dbsf"
)

// Strategies returns every strategy in a stable order (the default first).
// The slice is new on every call.
func Strategies() []Strategy {
	return []Strategy{RRF, BordaRank, WeightedAverage, ScoreWeightedRRF, MaxConfidence, DBSF}
}

// UsesScores reports whether s reads the legs' scores (every strategy but
// RRF and BordaRank, which read ranks only).
func (s Strategy) UsesScores() bool {
	switch s {
	case RRF, BordaRank, "":
		return false
	}
	return true
}

func (s Strategy) valid() bool {
	for _, x := range Strategies() {
		if s == x {
			return true
		}
	}
	return false
}

// ParseStrategy validates s (case-insensitive, surrounding space ignored);
// the empty string yields RRF. It returns an ErrInvalid error naming the
// allowed values otherwise.
func ParseStrategy(s string) (Strategy, error) {
	v := Strategy(strings.ToLower(strings.TrimSpace(s)))
	if v == "" {
		return RRF, nil
	}
	if !v.valid() {
		return "", mnemotype.Invalidf("strategy %q: must be one of %s", s, joinNames(Strategies()))
	}
	return v, nil
}

func joinNames[T ~string](xs []T) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = string(x)
	}
	return strings.Join(parts, ", ")
}
