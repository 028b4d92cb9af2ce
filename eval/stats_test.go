package eval

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestQuantile(t *testing.T) {
	t.Parallel()
	xs := []float64{1, 2, 3, 4, 5}
	for _, tt := range []struct{ q, want float64 }{{0, 1}, {0.5, 3}, {1, 5}, {0.25, 2}, {0.1, 1.4}} {
		approx(t, "quantile", quantile(xs, tt.q), tt.want)
	}
	if !math.IsNaN(quantile(nil, 0.5)) {
		t.Error("quantile of nothing is not NaN")
	}
}

func TestBootstrapCI(t *testing.T) {
	t.Parallel()
	t.Run("constant series", func(t *testing.T) {
		t.Parallel()
		ci := BootstrapCI([][]float64{{0.5, 0.5, 0.5}}, 200, rng(1, "x"))
		approx(t, "low", ci[0].Low, 0.5)
		approx(t, "high", ci[0].High, 0.5)
	})
	t.Run("width matches the normal approximation", func(t *testing.T) {
		t.Parallel()
		r := rand.New(rand.NewPCG(7, 7))
		xs := make([]float64, 1000)
		for i := range xs {
			xs[i] = r.Float64()
		}
		mean := Mean(xs)
		var ss float64
		for _, x := range xs {
			ss += (x - mean) * (x - mean)
		}
		se := math.Sqrt(ss/float64(len(xs))) / math.Sqrt(float64(len(xs)))
		ci := BootstrapCI([][]float64{xs}, DefaultResamples, rng(1, "w"))
		if ci[0].Low >= mean || ci[0].High <= mean {
			t.Fatalf("interval %+v does not hold the mean %v", ci[0], mean)
		}
		if w, want := ci[0].High-ci[0].Low, 2*1.96*se; math.Abs(w-want) > 0.1*want {
			t.Fatalf("width %.5f, want about %.5f", w, want)
		}
	})
	t.Run("reproducible for a seed", func(t *testing.T) {
		t.Parallel()
		xs := [][]float64{{0, 1, 0, 1, 1}, {1, 0, 0, 0, 1}}
		a := BootstrapCI(xs, 500, rng(3, "s"))
		b := BootstrapCI(xs, 500, rng(3, "s"))
		if a[0] != b[0] || a[1] != b[1] {
			t.Fatalf("%v != %v", a, b)
		}
	})
	t.Run("no queries", func(t *testing.T) {
		t.Parallel()
		if ci := BootstrapCI([][]float64{{}}, 100, rng(1)); ci[0] != (Interval{}) {
			t.Fatalf("got %+v", ci[0])
		}
	})
}

func TestRandomizationP(t *testing.T) {
	t.Parallel()
	const perms = 2000
	zeros := make([]float64, 50)
	same := make([]float64, 50)
	alternating := make([]float64, 50)
	for i := range same {
		same[i] = 0.1
		alternating[i] = 0.1 * float64(1-2*(i%2))
	}
	// A small, noisy, real effect: 60 queries improve by 0.2, 40 lose 0.1.
	noisy := make([]float64, 100)
	for i := range noisy {
		noisy[i] = 0.2
		if i%5 < 2 {
			noisy[i] = -0.1
		}
	}
	ps := RandomizationP([][]float64{zeros, same, alternating}, perms, rng(1, "p"))
	approx(t, "p(zeros)", ps[0], 1)
	approx(t, "p(all +0.1)", ps[1], 1.0/(perms+1))
	approx(t, "p(mean 0)", ps[2], 1)
	p := RandomizationP([][]float64{noisy}, perms, rng(1, "n"))[0]
	if p > 0.01 {
		t.Errorf("p(noisy real effect) = %v, want < 0.01", p)
	}
	// Under the null hypothesis p-values are roughly uniform: about 5% of
	// random sign patterns fall below 0.05.
	r := rand.New(rand.NewPCG(11, 11))
	below := 0
	const trials = 200
	for i := range trials {
		d := make([]float64, 40)
		for j := range d {
			d[j] = r.NormFloat64()
		}
		if RandomizationP([][]float64{d}, 500, rng(uint64(i+1), "null"))[0] < 0.05 {
			below++
		}
	}
	if below < 2 || below > 25 {
		t.Errorf("%d of %d null trials had p < 0.05, want about 10", below, trials)
	}
}
