package fusion

import (
	"math"
	"strings"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// Normalization names how score-based strategies map one leg's raw scores to
// [0, 1] before combining them. Statistics (min, max, mean, standard
// deviation) are taken over the leg's own returned hits only. The zero value
// means NormMinMax.
//
// Safeguards, for every normalization but NormNone:
//   - a leg with one hit, or whose hits all have the same score, gives each
//     hit 1.0 (a lone or undifferentiated hit is that leg's best);
//   - values are clipped to [NormFloor, 1], so the weakest returned hit
//     (NormFloor = 0.001) still differs from an item the leg did not return
//     (0 under MissingZero);
//   - Params.LowerBounds can fix the low end of a leg's range, so a leg whose
//     hits are all weak is not stretched to the full [0, 1] range.
type Normalization string

// Normalizations. s is a raw score, [lo, hi] the leg's range.
const (
	// NormMinMax, the default: n = (s − lo) / (hi − lo) with lo, hi the leg's
	// lowest and highest returned scores. A lower bound L
	// (Params.LowerBounds) replaces lo; scores below L get NormFloor, and a
	// leg whose best score is ≤ L gives NormFloor to every hit.
	NormMinMax Normalization = "minmax"
	// NormZScore: n = 1 / (1 + e^(−z)), z = (s − μ) / σ, with μ, σ the
	// mean and population standard deviation of the leg's scores. The
	// logistic squashing keeps n in [0, 1] (raw z-scores are unbounded and
	// can be negative) while preserving the order and spacing near the mean.
	NormZScore Normalization = "zscore"
	// NormNone uses the raw scores as they are: no floor, no clipping, no
	// safeguard. Only meaningful when every leg already scores on one scale;
	// a negative raw score then ranks below an absent one.
	NormNone Normalization = "none"
	// NormTMM is theoretical min-max: n = (s − lo) / (hi − lo) with [lo, hi]
	// the leg's known score bounds (Params.Bounds over DefaultBounds: dense
	// cosine is [−1, 1]), clipped to [NormFloor, 1]; it needs no "one hit"
	// safeguard because the range does not depend on the hits. A lower bound
	// L replaces lo. A leg without known bounds (e.g. lexical BM25, which is
	// unbounded) falls back to NormMinMax.
	NormTMM Normalization = "tmm"
	// NormDBSF is the distribution-based scaling of the DBSF strategy:
	// n = (s − (μ − 3σ)) / 6σ clipped to [NormFloor, 1] (σ = 0 gives 1).
	// Selecting it with WeightedAverage gives a convex DBSF.
	NormDBSF Normalization = "dbsf"
)

// NormFloor is the smallest normalised score a returned hit can get (for
// every normalization but NormNone), so it still differs from an absent one.
const NormFloor = 0.001

// Normalizations returns every normalization in a stable order (the default
// first). The slice is new on every call.
func Normalizations() []Normalization {
	return []Normalization{NormMinMax, NormZScore, NormNone, NormTMM, NormDBSF}
}

func (n Normalization) valid() bool {
	for _, x := range Normalizations() {
		if n == x {
			return true
		}
	}
	return false
}

// ParseNormalization validates s (case-insensitive); the empty string yields
// NormMinMax. It returns an ErrInvalid error naming the allowed values
// otherwise.
func ParseNormalization(s string) (Normalization, error) {
	v := Normalization(strings.ToLower(strings.TrimSpace(s)))
	if v == "" {
		return NormMinMax, nil
	}
	if !v.valid() {
		return "", mnemotype.Invalidf("normalization %q: must be one of %s", s, joinNames(Normalizations()))
	}
	return v, nil
}

// Range is a closed score interval [Min, Max], used by NormTMM.
type Range struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// DefaultBounds returns the known theoretical score bounds of the built-in
// legs: dense (cosine similarity) is [−1, 1]. The lexical leg (negated BM25),
// recency and access have no fixed bounds. The map is new on every call.
func DefaultBounds() map[string]Range {
	return map[string]Range{mnemotype.LegDense: {Min: -1, Max: 1}}
}

// MissingPolicy says what a leg contributes for an item it did not list. The
// zero value means MissingZero.
type MissingPolicy string

// Missing-leg policies. For an item d absent from active leg i:
const (
	// MissingZero, the default: leg i contributes 0 (seeds 000, 001, 004:
	// never a worst rank).
	MissingZero MissingPolicy = "zero"
	// MissingRenormalize: leg i contributes 0 and d's score is rescaled by
	// W / W_d, where W_d sums the weights of the legs that listed d, so the
	// weights are renormalised over the legs that saw d (an item is judged
	// by the evidence it has). No effect on MaxConfidence.
	MissingRenormalize MissingPolicy = "renormalize"
	// MissingImputeMin: d is scored as if leg i had listed it at the leg's
	// worst returned value: its worst rank and the normalised score of its
	// lowest returned score.
	MissingImputeMin MissingPolicy = "impute_min"
	// MissingImputeRank: d is scored as if leg i had ranked it just past its
	// window, rank = window + 1, where window = max(hits listed, worst rank).
	// It has no score there, so score-based strategies get 0 from the leg
	// (as under MissingZero); it matters for RRF and BordaRank.
	MissingImputeRank MissingPolicy = "impute_rank"
)

// MissingPolicies returns every missing-leg policy in a stable order (the
// default first). The slice is new on every call.
func MissingPolicies() []MissingPolicy {
	return []MissingPolicy{MissingZero, MissingRenormalize, MissingImputeMin, MissingImputeRank}
}

func (m MissingPolicy) valid() bool {
	for _, x := range MissingPolicies() {
		if m == x {
			return true
		}
	}
	return false
}

// ParseMissing validates s (case-insensitive); the empty string yields
// MissingZero. It returns an ErrInvalid error naming the allowed values
// otherwise.
func ParseMissing(s string) (MissingPolicy, error) {
	v := MissingPolicy(strings.ToLower(strings.TrimSpace(s)))
	if v == "" {
		return MissingZero, nil
	}
	if !v.valid() {
		return "", mnemotype.Invalidf("missing policy %q: must be one of %s", s, joinNames(MissingPolicies()))
	}
	return v, nil
}

// legStats holds what normalization needs about one leg's returned scores.
type legStats struct {
	n        int // kept hits
	min, max float64
	// scale = max(|min|, |max|); mean and sd are of s/scale so that no
	// intermediate overflows for any finite input.
	scale, mean, sd float64
	// lower is the leg's lower bound when hasLower.
	lower    float64
	hasLower bool
	// bounds are the leg's theoretical bounds when hasBounds.
	bounds    Range
	hasBounds bool
}

// ratio returns (s − lo) / (hi − lo) clipped to [NormFloor, 1], or 1 when
// the range is empty, computed on halves so finite inputs never overflow.
func ratio(s, lo, hi float64) float64 {
	den := hi*0.5 - lo*0.5
	if !(den > 0) {
		return 1
	}
	return clip((s*0.5 - lo*0.5) / den)
}

// clip bounds a normalised value to [NormFloor, 1].
func clip(v float64) float64 {
	if !(v >= NormFloor) { // also catches NaN
		return NormFloor
	}
	if v > 1 {
		return 1
	}
	return v
}

// normalize maps the raw score s of a hit of a leg with statistics st.
func (st *legStats) normalize(kind Normalization, s float64) float64 {
	switch kind {
	case NormNone:
		return s
	case NormZScore:
		if !(st.sd > 0) {
			return 1
		}
		z := (s/st.scale - st.mean) / st.sd
		return clip(1 / (1 + math.Exp(-z)))
	case NormDBSF:
		if !(st.sd > 0) {
			return 1
		}
		return clip((s/st.scale - st.mean + 3*st.sd) / (6 * st.sd))
	case NormTMM:
		if st.hasBounds {
			lo := st.bounds.Min
			if st.hasLower {
				lo = st.lower
			}
			if st.bounds.Max <= lo {
				return NormFloor
			}
			return ratio(s, lo, st.bounds.Max)
		}
	}
	// NormMinMax, and NormTMM without known bounds.
	if st.hasLower {
		if st.max <= st.lower {
			return NormFloor
		}
		return ratio(s, st.lower, st.max)
	}
	return ratio(s, st.min, st.max)
}
