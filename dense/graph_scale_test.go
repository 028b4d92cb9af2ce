package dense_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/dense"
	"github.com/mnemo-dev/mnemo/dense/densetest"
	"github.com/mnemo-dev/mnemo/embed/glove"
	"github.com/mnemo-dev/mnemo/internal/testenv"
	"github.com/mnemo-dev/mnemo/store/sqlitestore"
	"github.com/mnemo-dev/mnemo/vector"
)

// TestGraph_RecallAtScale measures the in-process index's graph on an
// existing SQLite database — MNEMO_DENSE_DB, e.g. a rung of mnemo bench
// ladder (profile MNEMO_DENSE_PROFILE, default "bench"; the walk's
// candidate list MNEMO_DENSE_EF, default vector.DefaultEf) — against the
// exact scan, for LoCoMo's questions: the share of the exact top k the
// walk finds, and both searches' mean time. A measurement for
// docs/bench.md, not a test the suite runs.
func TestGraph_RecallAtScale(t *testing.T) {
	path := os.Getenv("MNEMO_DENSE_DB")
	if path == "" {
		t.Skip("MNEMO_DENSE_DB is not set: a measurement, run by hand")
	}
	profile := os.Getenv("MNEMO_DENSE_PROFILE")
	if profile == "" {
		profile = "bench"
	}
	ctx := t.Context()
	model := testenv.Model(t, glove.DefaultPath, glove.Load, glove.ErrModelMissing)
	ef, _ := strconv.Atoi(os.Getenv("MNEMO_DENSE_EF"))
	s, err := sqlitestore.Open(ctx, path, sqlitestore.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	walk := dense.NewCatalog(s, dense.Options{Dim: model.Dim(), ANN: vector.ANN{Ef: ef}})
	defer walk.Close()
	t0 := time.Now()
	linked, err := walk.BuildGraph(ctx, profile)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("graph: %d memories linked in %v", linked, time.Since(t0))
	exact := dense.NewCatalog(s, dense.Options{Dim: model.Dim(), GraphMin: -1})
	defer exact.Close()
	vecs, err := model.Embed(ctx, densetest.Questions(t))
	if err != nil {
		t.Fatal(err)
	}
	densetest.MeasureAgainstExact(t, walk, exact, model.Model(), profile, vecs)
}
