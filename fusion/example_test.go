package fusion_test

import (
	"fmt"

	"github.com/mnemo-dev/mnemo/fusion"
	"github.com/mnemo-dev/mnemo/mnemotype"
)

// The worked example: a memory ranked 1st by the dense leg and 5th by
// the lexical leg scores 1/(1+60) + 1/(5+60) = 0.0318.
func ExampleFuse() {
	legs := map[string][]mnemotype.Hit{
		mnemotype.LegDense:   {{ID: "auth-fix", Rank: 1}, {ID: "jwt-notes", Rank: 2}},
		mnemotype.LegLexical: {{ID: "a", Rank: 1}, {ID: "b", Rank: 2}, {ID: "c", Rank: 3}, {ID: "d", Rank: 4}, {ID: "auth-fix", Rank: 5}},
	}
	res, err := fusion.Fuse(legs, fusion.Params{})
	if err != nil {
		panic(err)
	}
	top := res[0]
	fmt.Printf("%s %.4f = dense %.4f + lexical %.4f\n", top.ID, top.Score,
		top.Legs[mnemotype.LegDense].Contribution, top.Legs[mnemotype.LegLexical].Contribution)
	// Output: auth-fix 0.0318 = dense 0.0164 + lexical 0.0154
}

// The counterfactual trace shows each result's rank under the other
// strategies before switching.
func ExampleFuseExplain() {
	legs := map[string][]mnemotype.Hit{
		mnemotype.LegDense:   {{ID: "a", Rank: 1, Score: 0.9}, {ID: "b", Rank: 2, Score: 0.5}, {ID: "c", Rank: 3, Score: 0.1}},
		mnemotype.LegLexical: {{ID: "b", Rank: 1, Score: 10}, {ID: "d", Rank: 2, Score: 6}, {ID: "a", Rank: 3, Score: 2}},
	}
	out, err := fusion.FuseExplain(legs, fusion.Params{
		Normalization:  fusion.NormTMM,
		Counterfactual: true, CounterfactualStrategies: []fusion.Strategy{fusion.WeightedAverage},
	})
	if err != nil {
		panic(err)
	}
	for _, r := range out.Results {
		fmt.Printf("%d %s %.4f  weighted_average would rank it %d\n", r.Rank, r.ID, r.Score, r.Counterfactual["weighted_average"])
	}
	// Output:
	// 1 b 0.0325  weighted_average would rank it 1
	// 2 a 0.0323  weighted_average would rank it 2
	// 3 d 0.0161  weighted_average would rank it 4
	// 4 c 0.0159  weighted_average would rank it 3
}
