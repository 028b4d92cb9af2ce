package eval

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/mnemo-dev/mnemo/embed/glove"
)

// loadGlove loads the built-in model the way the CLI does; it skips without
// the model unless MNEMO_REQUIRE_MODEL=1 (CI).
func loadGlove(t testing.TB) *glove.Model {
	t.Helper()
	home := os.Getenv("MNEMO_HOME")
	if home == "" {
		h, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		home = filepath.Join(h, ".local", "share", "mnemo")
	}
	m, err := glove.Load(glove.DefaultPath(home))
	if errors.Is(err, glove.ErrModelMissing) && os.Getenv("MNEMO_REQUIRE_MODEL") != "1" {
		t.Skipf("built-in model missing (run ./scripts/setup.sh): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// sharedDataset finds ../shared/datasets/NAME walking up from the package
// directory; the test skips when it is absent.
func sharedDataset(t testing.TB, name string) string {
	t.Helper()
	dir, _ := os.Getwd()
	for {
		p := filepath.Join(dir, "..", "shared", "datasets", name)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skipf("dataset %s not found next to the repository", name)
		}
		dir = parent
	}
}

// TestQualityGate_LoCoMo is issue 4's gate through the real engine and the
// built-in embedder: on locomo-dev, conversation-scoped, dense alone reaches
// recall@10 ≥ 0.50, and both weighted RRF (dense weight 0.5) and the
// defaults beat BM25 alone on recall@10 and nDCG@10.
//
// It takes seconds normally and minutes under the race detector, so
// scripts/test.sh runs it in a pass of its own without -race.
func TestQualityGate_LoCoMo(t *testing.T) {
	if raceEnabled {
		t.Skip("runs without -race (scripts/test.sh runs it in its own pass)")
	}
	model := loadGlove(t)
	ds, err := Load(sharedDataset(t, "locomo-dev"), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var cfgs []Config
	for _, spec := range []string{"default", "lexical", "dense", "rrf_dense0.5=strategy=rrf,lexical=1,dense=0.5,recency=0,access=0,k=60"} {
		cs, err := ParseConfig(spec)
		if err != nil {
			t.Fatal(err)
		}
		cfgs = append(cfgs, cs...)
	}
	rep, err := Run(t.Context(), ds, Options{Embedder: model, Configs: cfgs, Resamples: 200, TempDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) (r10, n10 float64) {
		c := configByName(t, rep, name)
		return c.Overall.Values["recall@10"], c.Overall.Values["ndcg@10"]
	}
	lexR, lexN := get("lexical")
	denR, denN := get("dense")
	t.Logf("locomo-dev (n=%d) recall@10 / nDCG@10: lexical %.3f / %.3f, dense %.3f / %.3f", rep.Queries, lexR, lexN, denR, denN)
	if denR < 0.50 {
		t.Errorf("dense alone recall@10 %.3f < 0.50", denR)
	}
	for _, name := range []string{"rrf_dense0.5", "default"} {
		r, n := get(name)
		t.Logf("%s %.3f / %.3f", name, r, n)
		if r <= lexR || n <= lexN {
			t.Errorf("%s %.3f / %.3f does not beat lexical alone %.3f / %.3f", name, r, n, lexR, lexN)
		}
	}
}
