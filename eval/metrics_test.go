package eval

import (
	"math"
	"slices"
	"testing"
)

func approx(t *testing.T, name string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-6 {
		t.Errorf("%s = %.6f, want %.6f", name, got, want)
	}
}

// ranked gives ids strictly decreasing scores.
func ranked(ids ...string) []Hit {
	out := make([]Hit, len(ids))
	for i, id := range ids {
		out[i] = Hit{ID: id, Score: float64(len(ids) - i)}
	}
	return out
}

func set(ids ...string) map[string]bool {
	m := map[string]bool{}
	for _, id := range ids {
		m[id] = true
	}
	return m
}

func lg(p int) float64 { return 1 / math.Log2(float64(p+1)) } // discount of 1-based rank p

func TestMetrics(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		run      []Hit
		rel      map[string]bool
		nRel     int
		ties     bool
		recall5  float64
		recall2  float64
		ndcg10   float64
		mrr10    float64
		mrrAtTwo float64
	}{
		{
			name: "one relevant at rank 1", run: ranked("a", "b", "c"), rel: set("a"), nRel: 1,
			recall5: 1, recall2: 1, ndcg10: 1, mrr10: 1, mrrAtTwo: 1,
		},
		{
			name: "one relevant at rank 3", run: ranked("x", "y", "a"), rel: set("a"), nRel: 1,
			recall5: 1, recall2: 0, ndcg10: lg(3), mrr10: 1.0 / 3, mrrAtTwo: 0,
		},
		{
			name: "several relevant ids", run: ranked("a", "b", "c", "d", "e", "f"), rel: set("a", "c", "e"), nRel: 3,
			recall5: 1, recall2: 1.0 / 3,
			ndcg10: (lg(1) + lg(3) + lg(5)) / (lg(1) + lg(2) + lg(3)), mrr10: 1, mrrAtTwo: 1,
		},
		{
			name: "relevant id not retrievable", run: ranked("a", "b"), rel: set("a", "z"), nRel: 2,
			recall5: 0.5, recall2: 0.5, ndcg10: lg(1) / (lg(1) + lg(2)), mrr10: 1, mrrAtTwo: 1,
		},
		{
			name: "no hits", run: nil, rel: set("a"), nRel: 1,
		},
		{
			name: "no relevant hit", run: ranked("x", "y"), rel: set("a"), nRel: 1,
		},
		{
			name: "no judgments", run: ranked("a"), rel: set(), nRel: 0,
		},
		{
			name: "relevant beyond the cutoff of 10", run: ranked("1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "a"), rel: set("a"), nRel: 1,
		},
		{
			name: "duplicate ids earn once and keep their slot", run: ranked("a", "a", "b"), rel: set("a", "b"), nRel: 2,
			recall5: 1, recall2: 0.5, ndcg10: (lg(1) + lg(3)) / (lg(1) + lg(2)), mrr10: 1, mrrAtTwo: 1,
		},
		{
			name: "duplicate of an irrelevant id", run: ranked("x", "x", "a"), rel: set("a"), nRel: 1,
			recall5: 1, recall2: 0, ndcg10: lg(3), mrr10: 1.0 / 3,
		},
		{
			// b shares its score with a: either order is equally likely.
			name: "tie of a relevant and an irrelevant id", run: []Hit{{"x", 0.9}, {"a", 0.5}, {"b", 0.5}}, rel: set("b"), nRel: 1, ties: true,
			recall5: 1, recall2: 0.5, ndcg10: 0.5*lg(2) + 0.5*lg(3), mrr10: 0.5/2 + 0.5/3, mrrAtTwo: 0.5 / 2,
		},
		{
			name: "same tie scored in engine order", run: []Hit{{"x", 0.9}, {"a", 0.5}, {"b", 0.5}}, rel: set("b"), nRel: 1, ties: false,
			recall5: 1, recall2: 0, ndcg10: lg(3), mrr10: 1.0 / 3,
		},
		{
			// Two relevant among three tied at the top: the first relevant is
			// at rank 1 with probability 2/3, else at rank 2.
			name: "two relevant in a tie of three", run: []Hit{{"a", 1}, {"b", 1}, {"c", 1}}, rel: set("a", "c"), nRel: 2, ties: true,
			recall5: 1, recall2: 2.0 / 3, ndcg10: (2.0 / 3 * (lg(1) + lg(2) + lg(3))) / (lg(1) + lg(2)),
			mrr10: 2.0/3 + 1.0/3/2, mrrAtTwo: 2.0/3 + 1.0/3/2,
		},
		{
			// The cutoff splits a tie of four holding the relevant id.
			name: "tie split by the cutoff", run: []Hit{{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}}, rel: set("d"), nRel: 1, ties: true,
			recall5: 1, recall2: 0.5, ndcg10: 0.25 * (lg(1) + lg(2) + lg(3) + lg(4)),
			mrr10: 0.25 * (1 + 0.5 + 1.0/3 + 0.25), mrrAtTwo: 0.25 * (1 + 0.5),
		},
		{
			name: "duplicate inside a tie", run: []Hit{{"a", 1}, {"a", 1}}, rel: set("a"), nRel: 1, ties: true,
			recall5: 1, recall2: 1, ndcg10: 0.5 * (lg(1) + lg(2)), mrr10: 0.5 + 0.5/2, mrrAtTwo: 0.5 + 0.5/2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			approx(t, "recall@5", RecallAt(tt.run, tt.rel, tt.nRel, 5, tt.ties), tt.recall5)
			approx(t, "recall@2", RecallAt(tt.run, tt.rel, tt.nRel, 2, tt.ties), tt.recall2)
			approx(t, "ndcg@10", NDCGAt(tt.run, tt.rel, tt.nRel, 10, tt.ties), tt.ndcg10)
			approx(t, "mrr@10", MRRAt(tt.run, tt.rel, 10, tt.ties), tt.mrr10)
			approx(t, "mrr@2", MRRAt(tt.run, tt.rel, 2, tt.ties), tt.mrrAtTwo)
		})
	}
}

// TestMetrics_TiesAreTheMeanOverOrders checks the closed forms against the
// brute-force mean over every order of a tied group.
func TestMetrics_TiesAreTheMeanOverOrders(t *testing.T) {
	t.Parallel()
	run := []Hit{{"x", 3}, {"a", 2}, {"b", 2}, {"c", 2}, {"d", 2}, {"y", 1}}
	rel := set("b", "d", "y", "gone")
	tied := []string{"a", "b", "c", "d"}
	var perms [][]string
	var permute func(prefix, rest []string)
	permute = func(prefix, rest []string) {
		if len(rest) == 0 {
			perms = append(perms, slices.Clone(prefix))
			return
		}
		for i := range rest {
			next := slices.Concat(rest[:i:i], rest[i+1:])
			permute(append(prefix, rest[i]), next)
		}
	}
	permute(nil, tied)
	for _, metric := range []string{"recall@2", "recall@4", "ndcg@3", "ndcg@10", "mrr@2", "mrr@10"} {
		var sum float64
		for _, p := range perms {
			order := append(append([]string{"x"}, p...), "y")
			v, err := Score(metric, ranked(order...), rel, 4, false)
			if err != nil {
				t.Fatal(err)
			}
			sum += v
		}
		got, err := Score(metric, run, rel, 4, true)
		if err != nil {
			t.Fatal(err)
		}
		approx(t, metric, got, sum/float64(len(perms)))
	}
}

func TestMetricNames(t *testing.T) {
	t.Parallel()
	got := MetricNames([]int{10, 5, 10, 20})
	want := []string{"recall@5", "recall@10", "recall@20", "ndcg@10", "mrr@10"}
	if !slices.Equal(got, want) {
		t.Fatalf("MetricNames = %v, want %v", got, want)
	}
	for _, bad := range []string{"recall", "recall@0", "map@10", "ndcg@x"} {
		if _, err := Score(bad, nil, nil, 1, true); err == nil {
			t.Errorf("Score(%q): no error", bad)
		}
	}
}
