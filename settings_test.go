package mnemo_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/store/sqlitestore"
)

// TestEngine_AllZeroWeightsRefused checks that settings under which every
// leg weighs 0 are refused, stored or per request, with an ErrInvalid error
// naming the weights, and that nothing is stored then.
func TestEngine_AllZeroWeightsRefused(t *testing.T) {
	t.Parallel()
	e, _ := setup(t)
	ctx := context.Background()
	remember(t, e, mnemo.Input{Profile: "me", Content: "alpha beta"})
	zero := map[string]string{"keyword_weight": "0", "semantic_weight": "0", "recency_weight": "0", "access_weight": "0"}
	check := func(name string, err error) {
		t.Helper()
		if !errors.Is(err, mnemo.ErrInvalid) || !strings.Contains(err.Error(), "keyword_weight") ||
			!strings.Contains(err.Error(), "all 0") {
			t.Errorf("%s: err = %v, want an ErrInvalid error naming the weights", name, err)
		}
	}
	_, err := e.Recall(ctx, mnemo.Query{Profile: "me", Text: "alpha", Overrides: zero})
	check("Recall with overrides", err)
	_, err = e.RecallPool(ctx, mnemo.Query{Profile: "me", Text: "alpha", Overrides: zero})
	check("RecallPool with overrides", err)
	_, err = e.UpdateSettings(ctx, "me", zero)
	check("UpdateSettings", err)
	if s, _ := e.Settings(ctx, "me"); s != mnemo.DefaultSettings() {
		t.Errorf("a refused update changed the settings: %+v", s)
	}
	// Weights that reach zero in two steps: the second step is refused.
	if _, err := e.UpdateSettings(ctx, "me", map[string]string{"semantic_weight": "0"}); err != nil {
		t.Fatal(err)
	}
	_, err = e.UpdateSettings(ctx, "me", map[string]string{"keyword_weight": "0"})
	check("UpdateSettings to the last non-zero weight", err)
	// One weight left is enough.
	if _, err := e.Recall(ctx, mnemo.Query{Profile: "me", Text: "alpha", Overrides: map[string]string{"keyword_weight": "0", "recency_weight": "1"}}); err != nil {
		t.Errorf("recall with only the recency leg: %v", err)
	}
	d := mnemo.DefaultSettings()
	d.KeywordWeight, d.SemanticWeight = 0, 0
	_, err = mnemo.Open(t.TempDir()+"/x.db", &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), Defaults: &d})
	check("Open with all-zero default weights", err)
}

// TestEngine_StoredAllZeroWeights checks that a profile whose stored
// settings (written before all-zero weights were refused) weigh every leg
// 0 gets an error naming the weights from Recall, and can be repaired.
func TestEngine_StoredAllZeroWeights(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "mnemo.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.SetSettings(ctx, "me", map[string]string{"keyword_weight": "0", "semantic_weight": "0"}); err != nil {
		t.Fatal(err)
	}
	e, err := mnemo.Open("", &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), Store: st, AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	remember(t, e, mnemo.Input{Profile: "me", Content: "alpha beta"})
	if _, err := e.Recall(ctx, mnemo.Query{Profile: "me", Text: "alpha"}); !errors.Is(err, mnemo.ErrInvalid) || !strings.Contains(err.Error(), "all 0") {
		t.Errorf("recall under stored all-zero weights: %v", err)
	}
	if _, err := e.UpdateSettings(ctx, "me", map[string]string{"keyword_weight": "1"}); err != nil {
		t.Fatalf("repairing the weights: %v", err)
	}
	if res, err := e.Recall(ctx, mnemo.Query{Profile: "me", Text: "alpha"}); err != nil || len(res.Results) != 1 {
		t.Errorf("recall after the repair: %v, %v", res, err)
	}
}

// TestSettingKey: every setting has a snake_case name; the camelCase
// spelling of earlier releases and any letter case name the same setting,
// and Apply takes them.
func TestSettingKey(t *testing.T) {
	t.Parallel()
	for _, n := range mnemo.SettingNames() {
		if n != strings.ToLower(n) || strings.ContainsAny(n, "- ") {
			t.Errorf("setting %q is not snake_case", n)
		}
		camel := n
		for i := strings.Index(camel, "_"); i >= 0; i = strings.Index(camel, "_") {
			camel = camel[:i] + strings.ToUpper(camel[i+1:i+2]) + camel[i+2:]
		}
		for _, k := range []string{n, camel, strings.ToUpper(n), " " + camel + " "} {
			if got, ok := mnemo.SettingKey(k); !ok || got != n {
				t.Errorf("SettingKey(%q) = %q, %v; want %q", k, got, ok, n)
			}
		}
	}
	for _, k := range []string{"", "keyword", "keyword__weightx", "semantic-weight"} {
		if got, ok := mnemo.SettingKey(k); ok {
			t.Errorf("SettingKey(%q) = %q, want unknown", k, got)
		}
	}
	s, err := mnemo.DefaultSettings().Apply(map[string]string{"keywordWeight": "0.3", "neighbor_radius": "2", "MinRelevance": "0.5"})
	if err != nil || s.KeywordWeight != 0.3 || s.NeighborRadius != 2 || s.MinRelevance != 0.5 {
		t.Errorf("Apply with mixed spellings = %+v, %v", s, err)
	}
}
