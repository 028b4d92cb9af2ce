package mnemo_test

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo"
)

// TestRecall_ResultsFollowTheirScores is a property test: for random
// memories (sessions of turns, importances, repeated contents), queries and
// settings (every strategy, importance mode and normalization, neighbour
// lending, relevance margins, duplicates collapsed or not), a recall's
// results come in non-increasing score order, ranked 1 to n.
func TestRecall_ResultsFollowTheirScores(t *testing.T) {
	t.Parallel()
	e, _ := setup(t)
	ctx := t.Context()
	rng := rand.New(rand.NewPCG(7, 11))
	words := strings.Fields("deploy threadline auth token jwt fix release database migration postgres sqlite " +
		"index vector recall memory session user assistant coffee paris trip budget invoice meeting friday")
	phrase := func(n int) string {
		ws := make([]string, n)
		for i := range ws {
			ws[i] = words[rng.IntN(len(words))]
		}
		return strings.Join(ws, " ")
	}
	var ins []mnemo.Input
	var contents []string
	for i := range 120 {
		c := phrase(3 + rng.IntN(8))
		if len(contents) > 0 && rng.IntN(8) == 0 {
			c = strings.ToUpper(contents[rng.IntN(len(contents))]) // a duplicate but for case
		}
		contents = append(contents, c)
		in := mnemo.Input{Profile: "me", Content: c, Session: "s" + strconv.Itoa(rng.IntN(6)),
			Importance: ptr(float64(rng.IntN(11)) / 10)}
		if i%7 == 0 {
			in.Session = ""
		}
		ins = append(ins, in)
	}
	if _, err := e.RememberBatch(ctx, ins); err != nil {
		t.Fatal(err)
	}
	strategies := []string{"rrf", "borda_rank", "weighted_average", "score_weighted_rrf", "max_confidence", "dbsf"}
	normalizations := []string{"minmax", "zscore", "none", "tmm", "dbsf"}
	modes := []string{"multiplier", "boost", "off"}
	for i := range 150 {
		over := map[string]string{
			"strategy":            strategies[rng.IntN(len(strategies))],
			"normalization":       normalizations[rng.IntN(len(normalizations))],
			"importance_mode":     modes[rng.IntN(len(modes))],
			"neighbor_radius":     strconv.Itoa(rng.IntN(4)),
			"neighbor_share":      strconv.FormatFloat(rng.Float64(), 'f', 2, 64),
			"relevance_margin":    strconv.FormatFloat([]float64{0, 0.02, 0.1, 0.5, 1}[rng.IntN(5)], 'g', -1, 64),
			"collapse_duplicates": strconv.FormatBool(rng.IntN(2) == 0),
			"min_relevance":       strconv.FormatFloat([]float64{0, 0, 0.2}[rng.IntN(3)], 'g', -1, 64),
			"recency_weight":      strconv.FormatFloat(rng.Float64(), 'f', 2, 64),
			"access_weight":       strconv.FormatFloat(rng.Float64()/2, 'f', 2, 64),
		}
		q := mnemo.Query{Text: phrase(1 + rng.IntN(4)), Profile: "me", Limit: 1 + rng.IntN(30), Overrides: over}
		if rng.IntN(4) == 0 {
			q.Sessions = []string{"s" + strconv.Itoa(rng.IntN(6))}
		}
		res, err := e.Recall(ctx, q)
		if err != nil {
			t.Fatalf("recall %d %q %v: %v", i, q.Text, over, err)
		}
		for j, r := range res.Results {
			what := fmt.Sprintf("recall %d %q (limit %d, %v): result %d", i, q.Text, q.Limit, over, j)
			if r.Rank != j+1 {
				t.Errorf("%s has rank %d", what, r.Rank)
			}
			if j > 0 && r.Score > res.Results[j-1].Score {
				t.Errorf("%s scores %v, above the %v of the result ranked before it", what, r.Score, res.Results[j-1].Score)
			}
		}
	}
}
