package fusion

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// FuzzFuse drives Fuse with arbitrary legs, weights and parameters. Each 10
// bytes of data make one hit: leg (byte 0 mod 4), id (byte 1 mod 24) and a
// float64 score (bytes 2–9, any bit pattern, NaN and ±Inf included). Ranks
// are dense ranks by score. Whatever the input, Fuse either returns an
// ErrInvalid error or a result satisfying checkOutcome's invariants.
func FuzzFuse(f *testing.F) {
	hit := func(leg, id byte, score float64) []byte {
		b := []byte{leg, id, 0, 0, 0, 0, 0, 0, 0, 0}
		binary.LittleEndian.PutUint64(b[2:], math.Float64bits(score))
		return b
	}
	cat := func(parts ...[]byte) []byte {
		var out []byte
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	rankOnly := cat(hit(1, 0, 0.9), hit(1, 1, 0.8), hit(0, 2, 5), hit(0, 3, 4), hit(0, 4, 3), hit(0, 5, 2), hit(0, 0, 1))
	f.Add(rankOnly, uint8(0), uint8(0), uint8(0), 60.0, 5.0, 1.0, 1.0, 0.0, uint8(0))
	f.Add(rankOnly, uint8(2), uint8(1), uint8(1), 1.0, 1.0, 0.7, 0.3, 0.1, uint8(7))
	f.Add(cat(hit(1, 0, 1e308), hit(2, 0, -1e308), hit(3, 1, 5e-324)), uint8(3), uint8(2), uint8(2), 1e-300, 1e300, 1e300, 0.0, 1.0, uint8(3))
	f.Add(cat(hit(1, 0, math.NaN())), uint8(5), uint8(3), uint8(3), 0.0, 0.0, 1.0, 1.0, 0.0, uint8(1))
	f.Add(cat(hit(0, 1, 2), hit(0, 2, 2), hit(1, 3, -1)), uint8(4), uint8(4), uint8(0), -1.0, math.Inf(1), -2.0, math.NaN(), 2.0, uint8(255))
	f.Add([]byte{}, uint8(1), uint8(0), uint8(1), 0.0, 0.0, 0.0, 0.0, 0.0, uint8(0))

	f.Fuzz(func(t *testing.T, data []byte, strategy, norm, missing uint8, k, kParam, wDense, wLexical, bonus float64, flags uint8) {
		legs := map[string][]mnemotype.Hit{}
		finiteScores := true
		for i := 0; i+10 <= len(data) && i < 10*200; i += 10 {
			leg := propertyLegs[int(data[i])%len(propertyLegs)]
			score := math.Float64frombits(binary.LittleEndian.Uint64(data[i+2:]))
			finiteScores = finiteScores && isFinite(score)
			legs[leg] = append(legs[leg], mnemotype.Hit{ID: fmt.Sprintf("m%d", data[i+1]%24), Score: score})
		}
		for name, hits := range legs {
			if finiteScores {
				legs[name] = DenseRanks(hits)
			} else {
				for i := range hits {
					hits[i].Rank = i + 1
				}
			}
		}
		p := Params{
			Strategy:        strategyByte(strategy),
			Normalization:   Normalizations()[int(norm)%len(Normalizations())],
			Missing:         MissingPolicies()[int(missing)%len(MissingPolicies())],
			K:               k,
			BordaK:          k,
			KParam:          kParam,
			Weights:         map[string]float64{mnemotype.LegDense: wDense, mnemotype.LegLexical: wLexical},
			ExactMatchBonus: bonus,
			HighConfidence:  flags&1 != 0,
			AdaptiveWeights: flags&2 != 0,
			Counterfactual:  flags&4 != 0,
			NoDetails:       flags&8 != 0,
			Query:           `what is "m1"`,
			Contents:        func(id string) string { return id },
		}
		if flags&16 != 0 {
			p.LowerBounds = map[string]float64{mnemotype.LegDense: wLexical}
		}
		out, err := FuseExplain(legs, p)
		if err != nil {
			if !errors.Is(err, mnemotype.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			if p.Validate() == nil && finiteScores {
				t.Fatalf("valid params and finite scores rejected: %v", err)
			}
			return
		}
		if !finiteScores {
			// A non-finite score may only pass when its leg is inactive.
			for name, hits := range legs {
				for _, h := range hits {
					if !isFinite(h.Score) && out.Weights[name] > 0 {
						t.Fatalf("non-finite score in active leg %s accepted", name)
					}
				}
			}
		}
		checkOutcome(t, legs, p, out)
	})
}

// strategyByte maps a byte to a strategy, with some invalid names.
func strategyByte(b uint8) Strategy {
	all := append(Strategies(), "", "bogus")
	return all[int(b)%len(all)]
}
