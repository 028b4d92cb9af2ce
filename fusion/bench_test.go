package fusion

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// benchSink keeps results alive so the compiler cannot drop the work.
var benchSink []Result

// benchLegs builds nLegs ranked lists of perLeg hits drawn from a pool of
// pool ids (pool == perLeg: every leg ranks the same candidates, as the
// recency and access legs do; pool > perLeg: partial overlap).
func benchLegs(seed uint64, nLegs, perLeg, pool int) map[string][]mnemotype.Hit {
	rng := rand.New(rand.NewPCG(seed, 1))
	names := []string{mnemotype.LegLexical, mnemotype.LegDense, mnemotype.LegRecency, mnemotype.LegAccess}
	legs := make(map[string][]mnemotype.Hit, nLegs)
	for l := 0; l < nLegs; l++ {
		perm := rng.Perm(pool)[:perLeg]
		hits := make([]mnemotype.Hit, perLeg)
		for i, id := range perm {
			hits[i] = mnemotype.Hit{ID: fmt.Sprintf("mem-%06d", id), Score: rng.NormFloat64()}
		}
		legs[names[l%len(names)]] = DenseRanks(hits)
	}
	return legs
}

func benchmarkFuse(b *testing.B, legs map[string][]mnemotype.Hit, p Params) {
	b.ReportAllocs()
	for b.Loop() {
		res, err := Fuse(legs, p)
		if err != nil {
			b.Fatal(err)
		}
		benchSink = res
	}
}

// BenchmarkFuse_3x300 is the design target: 3 legs × 300 candidates in
// under 50 µs.
func BenchmarkFuse_3x300(b *testing.B) {
	for _, s := range Strategies() {
		b.Run(string(s), func(b *testing.B) {
			benchmarkFuse(b, benchLegs(1, 3, 300, 300), Params{Strategy: s})
		})
	}
}

// BenchmarkFuse_3x300_Overlap draws each leg's 300 hits from 600 ids.
func BenchmarkFuse_3x300_Overlap(b *testing.B) {
	benchmarkFuse(b, benchLegs(2, 3, 300, 600), Params{})
}

func BenchmarkFuse_3x300_Counterfactual(b *testing.B) {
	benchmarkFuse(b, benchLegs(3, 3, 300, 300), Params{Counterfactual: true})
}

func BenchmarkFuse_Ladder(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("3x%d", n), func(b *testing.B) {
			benchmarkFuse(b, benchLegs(4, 3, n, n), Params{})
		})
	}
}

// BenchmarkFuse_3x300_NoDetails fuses without any per-leg details.
func BenchmarkFuse_3x300_NoDetails(b *testing.B) {
	benchmarkFuse(b, benchLegs(1, 3, 300, 300), Params{NoDetails: true})
}

// BenchmarkFuse_3x300_DetailsTop20 is the hot path of a recall of 10: the
// pipeline asks for details of twice the limit.
func BenchmarkFuse_3x300_DetailsTop20(b *testing.B) {
	benchmarkFuse(b, benchLegs(1, 3, 300, 300), Params{DetailsTop: 20})
}

// BenchmarkLendToNeighbors is a recall's lending: 2 legs of 100 hits from
// 150 ids fused with details for the first 25, and the turns on either
// side of the first 30 results lent to (60 lends, half of them to ids the
// legs did not return).
func BenchmarkLendToNeighbors(b *testing.B) {
	res, err := Fuse(benchLegs(5, 2, 100, 150), Params{DetailsTop: 25})
	if err != nil {
		b.Fatal(err)
	}
	var lends []Lend
	for i, r := range res[:30] {
		next := res[(i+40)%len(res)].ID // a result further down
		if i%2 == 1 {
			next = fmt.Sprintf("turn-%06d", i) // a turn the legs did not return
		}
		lends = append(lends, Lend{ID: next, Of: r.ID, Distance: 1}, Lend{ID: fmt.Sprintf("prev-%06d", i), Of: r.ID, Distance: 1})
	}
	floor := res[29].Score
	b.ReportAllocs()
	for b.Loop() {
		benchSink = LendToNeighbors(res, lends, 0.25, floor, 25)
	}
}
