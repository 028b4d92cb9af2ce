package eval

import (
	"math"
	"testing"

	"github.com/mnemo-dev/mnemo/embed/glove"
	"github.com/mnemo-dev/mnemo/internal/pgtest"
	"github.com/mnemo-dev/mnemo/internal/testenv"
)

// TestQualityGate_Postgres: the default configuration and the lexical leg
// alone measure the same on the Postgres store as on SQLite (within
// 0.01; the store ranks with the same arithmetic, so the figures
// are in fact equal), on locomo-dev and SciFact.
func TestQualityGate_Postgres(t *testing.T) {
	if raceEnabled {
		t.Skip("runs without -race (scripts/test.sh runs it in its own pass)")
	}
	model := testenv.Model(t, glove.DefaultPath, glove.Load, glove.ErrModelMissing)
	c := pgtest.Start(t)
	for _, name := range []string{"locomo-dev", "scifact"} {
		ds, err := Load(testenv.Dataset(t, name), LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var cfgs []Config
		for _, spec := range []string{"default", "lexical"} {
			cs, err := ParseConfig(spec)
			if err != nil {
				t.Fatal(err)
			}
			cfgs = append(cfgs, cs...)
		}
		run := func(pg string) *Report {
			t.Helper()
			rep, err := Run(t.Context(), ds, Options{Embedder: model, Configs: cfgs, Baseline: "lexical", Resamples: 50, TempDir: t.TempDir(), Postgres: pg})
			if err != nil {
				t.Fatal(err)
			}
			return rep
		}
		lite, pg := run(""), run(c.DSN("postgres"))
		for _, cfg := range []string{"default", "lexical"} {
			for _, metric := range []string{"recall@10", MetricNDCG} {
				a := configByName(t, lite, cfg).Overall.Values[metric]
				b := configByName(t, pg, cfg).Overall.Values[metric]
				t.Logf("%s %s %s: SQLite %.4f, Postgres %.4f", name, cfg, metric, a, b)
				if math.Abs(a-b) > 0.01 {
					t.Errorf("%s %s %s: Postgres %.4f, SQLite %.4f: more than 0.01 apart", name, cfg, metric, b, a)
				}
			}
		}
	}
}
