package postgres_test

import (
	"os"
	"strconv"
	"testing"

	"github.com/mnemo-dev/mnemo/dense"
	"github.com/mnemo-dev/mnemo/dense/densetest"
	"github.com/mnemo-dev/mnemo/embed/glove"
	"github.com/mnemo-dev/mnemo/internal/testenv"
	"github.com/mnemo-dev/mnemo/store/postgres"
)

// TestDense_RecallAtScale measures the dense leg in SQL on an existing
// store — MNEMO_PG_DENSE_URL, e.g. a rung of mnemo bench ladder --postgres
// (schema=ladder_100000), its HNSW indexes built; profile
// MNEMO_PG_DENSE_PROFILE, default "bench"; hnsw.ef_search at least
// MNEMO_PG_DENSE_EF, default postgres.DefaultEfSearch — against an exact search (the
// in-process index) for LoCoMo's questions: the share of the exact top k
// it finds, and both searches' mean time. A measurement for docs/bench.md,
// not a test the suite runs.
func TestDense_RecallAtScale(t *testing.T) {
	url := os.Getenv("MNEMO_PG_DENSE_URL")
	if url == "" {
		t.Skip("MNEMO_PG_DENSE_URL is not set: a measurement, run by hand")
	}
	profile := os.Getenv("MNEMO_PG_DENSE_PROFILE")
	if profile == "" {
		profile = "bench"
	}
	ctx := t.Context()
	model := testenv.Model(t, glove.DefaultPath, glove.Load, glove.ErrModelMissing)
	ef, _ := strconv.Atoi(os.Getenv("MNEMO_PG_DENSE_EF")) // 0: the default
	s, err := postgres.Open(ctx, url, postgres.Options{MustExist: true, EfSearch: ef})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sql := s.Dense()
	if sql == nil {
		_, why := s.Vectors()
		t.Fatal(why)
	}
	exact := dense.NewCatalog(s, dense.Options{Dim: model.Dim(), GraphMin: -1})
	defer exact.Close()
	vecs, err := model.Embed(ctx, densetest.Questions(t))
	if err != nil {
		t.Fatal(err)
	}
	densetest.MeasureAgainstExact(t, sql, exact, model.Model(), profile, vecs)
}
