package httpapi_test

import (
	"strings"
	"testing"
)

// TestServe_AllZeroWeightsRefused checks that a recall whose weights would
// all be 0 (per request or by a settings change) is a 400 naming the
// weights, not a 200 with no results.
func TestServe_AllZeroWeightsRefused(t *testing.T) {
	b := setup(t, opts{})
	b.create(b.alice, map[string]any{"content": "alpha beta"})
	for name, body := range map[string]map[string]any{
		"weights":  {"query": "alpha", "weights": map[string]float64{"lexical": 0, "dense": 0, "recency": 0, "access": 0}},
		"settings": {"query": "alpha", "settings": map[string]any{"keywordWeight": 0, "semanticWeight": 0}},
		"both":     {"query": "alpha", "weights": map[string]float64{"lexical": 0}, "settings": map[string]any{"semanticWeight": 0}},
	} {
		r := b.do("POST", "/v1/recall", b.alice, body)
		if msg := r.errMsg(t); r.status != 400 || !strings.Contains(msg, "weights") || !strings.Contains(msg, "all 0") {
			t.Errorf("recall with all-zero %s: %d %s", name, r.status, r.body)
		}
	}
	r := b.do("PATCH", "/v1/settings", b.alice, map[string]any{"keywordWeight": 0, "semanticWeight": 0})
	if msg := r.errMsg(t); r.status != 400 || !strings.Contains(msg, "weights") {
		t.Errorf("PATCH all-zero weights: %d %s", r.status, r.body)
	}
	// The single-leg searches zero the other legs, never their own.
	b.must(200, "GET", "/v1/search/lexical?q=alpha", b.alice, nil, nil)
}
