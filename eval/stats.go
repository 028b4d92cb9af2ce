package eval

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
)

// DefaultResamples is the number of bootstrap resamples and of
// randomization-test permutations.
const DefaultResamples = 10000

// Mean returns the mean of xs (0 for none).
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Interval is a two-sided 95% confidence interval. In JSON it is the pair
// [low, high], rounded like the figures (formatJSONFloat).
type Interval struct{ Low, High float64 }

// MarshalJSON implements json.Marshaler.
func (iv Interval) MarshalJSON() ([]byte, error) {
	return []byte("[" + formatJSONFloat(iv.Low) + "," + formatJSONFloat(iv.High) + "]"), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (iv *Interval) UnmarshalJSON(b []byte) error {
	var pair []float64
	if err := json.Unmarshal(b, &pair); err != nil {
		return err
	}
	if len(pair) != 2 {
		return fmt.Errorf("an interval is [low, high], not %d numbers", len(pair))
	}
	iv.Low, iv.High = pair[0], pair[1]
	return nil
}

// rng returns a generator seeded by seed and the labels, so that every
// comparison has its own reproducible stream whatever else a run computes.
func rng(seed uint64, labels ...string) *rand.Rand {
	h := fnv.New64a()
	for _, l := range labels {
		h.Write([]byte(l))
		h.Write([]byte{0})
	}
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}

// BootstrapCI returns, for each series of xs (all of the same length n, one
// per metric), the percentile bootstrap 95% interval of its mean: resamples
// draws of n indices with replacement, shared by every series so that they
// stay paired. For a paired comparison pass the per-query differences.
func BootstrapCI(xs [][]float64, resamples int, r *rand.Rand) []Interval {
	out := make([]Interval, len(xs))
	if len(xs) == 0 {
		return out
	}
	n := len(xs[0])
	if n == 0 || resamples <= 0 {
		return out
	}
	means := make([][]float64, len(xs))
	for m := range xs {
		means[m] = make([]float64, resamples)
	}
	sums := make([]float64, len(xs))
	for b := range resamples {
		clear(sums)
		for range n {
			j := r.IntN(n)
			for m := range xs {
				sums[m] += xs[m][j]
			}
		}
		for m := range xs {
			means[m][b] = sums[m] / float64(n)
		}
	}
	for m := range xs {
		slices.Sort(means[m])
		out[m] = Interval{Low: quantile(means[m], 0.025), High: quantile(means[m], 0.975)}
	}
	return out
}

// quantile interpolates linearly between the order statistics of sorted xs
// (Hyndman and Fan's type 7, R's default).
func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	h := q * float64(len(sorted)-1)
	lo := int(math.Floor(h))
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// RandomizationP returns, for each series of per-query differences d, the
// two-sided p-value of the paired randomization (sign-flip) test of "no
// difference": the share of permutations — each flipping the sign of every
// query's difference with probability ½, shared by every series — whose
// mean is at least as far from 0 as the observed one, counting the observed
// assignment itself: p = (1 + hits) / (1 + permutations). A series of zeros
// gets p = 1.
func RandomizationP(ds [][]float64, permutations int, r *rand.Rand) []float64 {
	out := make([]float64, len(ds))
	if len(ds) == 0 {
		return out
	}
	n := len(ds[0])
	obs := make([]float64, len(ds))
	for m, d := range ds {
		var s float64
		for _, x := range d {
			s += x
		}
		obs[m] = math.Abs(s)
	}
	if n == 0 || permutations <= 0 {
		for m := range out {
			out[m] = 1
		}
		return out
	}
	hits := make([]int, len(ds))
	sums := make([]float64, len(ds))
	for range permutations {
		clear(sums)
		var signs uint64
		for i := range n {
			if i%64 == 0 {
				signs = r.Uint64()
			}
			neg := signs&1 == 1
			signs >>= 1
			for m := range ds {
				if neg {
					sums[m] -= ds[m][i]
				} else {
					sums[m] += ds[m][i]
				}
			}
		}
		for m := range ds {
			// A relative tolerance keeps exact ties (e.g. all-zero
			// differences) counted despite rounding in the sums.
			if math.Abs(sums[m]) >= obs[m]-1e-9*(1+obs[m]) {
				hits[m]++
			}
		}
	}
	for m := range ds {
		out[m] = float64(1+hits[m]) / float64(1+permutations)
	}
	return out
}
