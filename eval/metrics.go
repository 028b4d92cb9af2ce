package eval

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Hit is one entry of a ranked run: an id and the score it was ranked by
// (higher is better).
type Hit struct {
	ID    string
	Score float64
}

// MetricsK is the cutoff of nDCG and MRR (nDCG@10, MRR@10).
const MetricsK = 10

// Metric names: "recall@K" for each K of Options.Ks, then these two.
const (
	MetricNDCG = "ndcg@10"
	MetricMRR  = "mrr@10"
)

// MetricNames returns the metric names for the recall cutoffs ks (sorted,
// duplicates dropped): recall@K for each K, then ndcg@10 and mrr@10.
func MetricNames(ks []int) []string {
	ks = slices.Clone(ks)
	slices.Sort(ks)
	ks = slices.Compact(ks)
	out := make([]string, 0, len(ks)+2)
	for _, k := range ks {
		out = append(out, "recall@"+strconv.Itoa(k))
	}
	return append(out, MetricNDCG, MetricMRR)
}

// parseMetric splits a metric name into its kind ("recall", "ndcg", "mrr")
// and cutoff.
func parseMetric(name string) (kind string, k int, err error) {
	kind, ks, ok := strings.Cut(name, "@")
	if ok {
		k, err = strconv.Atoi(ks)
	}
	if !ok || err != nil || k < 1 || (kind != "recall" && kind != "ndcg" && kind != "mrr") {
		return "", 0, fmt.Errorf("metric %q: want recall@K, ndcg@K or mrr@K", name)
	}
	return kind, k, nil
}

// group is a run of tied positions [start, end) holding rel relevant ids.
type group struct{ start, end, rel int }

// judge splits run into tie groups and counts the relevant ids in each.
// Consecutive hits with equal scores form one group when ties is true;
// otherwise every position is its own group. An id repeated in run counts
// only at its first position: later copies keep their slot but earn nothing.
func judge(run []Hit, relevant map[string]bool, ties bool) []group {
	seen := make(map[string]bool, len(run))
	var out []group
	for i, h := range run {
		rel := 0
		if relevant[h.ID] && !seen[h.ID] {
			rel = 1
		}
		seen[h.ID] = true
		if ties && len(out) > 0 && i > 0 && sameScore(run[i-1].Score, h.Score) {
			out[len(out)-1].end++
			out[len(out)-1].rel += rel
			continue
		}
		out = append(out, group{start: i, end: i + 1, rel: rel})
	}
	return out
}

func sameScore(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }

// overlap is the number of positions of g before cutoff k.
func (g group) overlap(k int) int { return max(0, min(g.end, k)-g.start) }

// RecallAt is the fraction of the nRel relevant ids found in the top k of
// run; relevant holds the relevant ids (nRel may exceed len(relevant) when
// some relevant ids cannot be retrieved at all). With ties, each tied group
// that the cutoff splits counts its expected share (McSherry and Najork,
// ECIR 2008: the mean over every order of the tied hits). It returns 0 when
// nRel is 0.
func RecallAt(run []Hit, relevant map[string]bool, nRel, k int, ties bool) float64 {
	if nRel == 0 {
		return 0
	}
	var found float64
	for _, g := range judge(run, relevant, ties) {
		if g.rel > 0 {
			found += float64(g.rel) * float64(g.overlap(k)) / float64(g.end-g.start)
		}
	}
	return found / float64(nRel)
}

// NDCGAt is nDCG@k with binary gains and the log2(rank+1) discount; the
// ideal ranking puts all nRel relevant ids first. Ties count their expected
// gain, as in RecallAt. It returns 0 when nRel is 0.
func NDCGAt(run []Hit, relevant map[string]bool, nRel, k int, ties bool) float64 {
	if nRel == 0 {
		return 0
	}
	var dcg float64
	for _, g := range judge(run, relevant, ties) {
		if g.rel == 0 {
			continue
		}
		gain := float64(g.rel) / float64(g.end-g.start)
		for p := g.start; p < min(g.end, k); p++ {
			dcg += gain / math.Log2(float64(p+2))
		}
	}
	var ideal float64
	for p := range min(nRel, k) {
		ideal += 1 / math.Log2(float64(p+2))
	}
	return dcg / ideal
}

// MRRAt is the reciprocal rank of the first relevant id within the top k
// (0 when there is none). When that id is tied, it is the expectation over
// the orders of the tied group.
func MRRAt(run []Hit, relevant map[string]bool, k int, ties bool) float64 {
	for _, g := range judge(run, relevant, ties) {
		if g.rel == 0 {
			continue
		}
		// X, the number of non-relevant hits of the group before its first
		// relevant one, has P(X = j) = Π_{i<j} (n−r−i)/(n−i) · r/(n−j).
		n, r := g.end-g.start, g.rel
		var rr float64
		q := 1.0 // P(the first j hits of the group are all non-relevant)
		for j := 0; j <= n-r && g.start+j < k; j++ {
			rr += q * float64(r) / float64(n-j) / float64(g.start+j+1)
			q *= float64(n-r-j) / float64(n-j)
		}
		return rr
	}
	return 0
}

// Score computes metric (recall@K, ndcg@K or mrr@K) for one query.
func Score(metric string, run []Hit, relevant map[string]bool, nRel int, ties bool) (float64, error) {
	kind, k, err := parseMetric(metric)
	if err != nil {
		return 0, err
	}
	switch kind {
	case "recall":
		return RecallAt(run, relevant, nRel, k, ties), nil
	case "ndcg":
		return NDCGAt(run, relevant, nRel, k, ties), nil
	default:
		return MRRAt(run, relevant, k, ties), nil
	}
}
