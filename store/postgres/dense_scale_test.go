package postgres_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/dense"
	"github.com/mnemo-dev/mnemo/embed/glove"
	"github.com/mnemo-dev/mnemo/internal/testenv"
	"github.com/mnemo-dev/mnemo/mnemotype"
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
	exact := dense.NewCatalog(s, dense.Options{Dim: model.Dim()})
	defer exact.Close()
	f, err := os.Open(filepath.Join(testenv.Dataset(t, "locomo-dev"), "queries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var texts []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var q struct{ Text string }
		if err := json.Unmarshal(sc.Bytes(), &q); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, q.Text)
	}
	vecs, err := model.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{10, 30} {
		found, total := 0, 0
		var tSQL, tExact time.Duration
		for _, v := range vecs {
			q := dense.Query{Vector: v, Model: model.Model(), K: k, Scope: mnemotype.Scope{Profile: profile}}
			start := time.Now()
			want, err := exact.Search(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			tExact += time.Since(start)
			start = time.Now()
			got, err := sql.Search(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			tSQL += time.Since(start)
			for _, h := range got {
				if slices.ContainsFunc(want, func(w mnemotype.Hit) bool { return w.ID == h.ID }) {
					found++
				}
			}
			total += len(want)
		}
		n := time.Duration(len(vecs))
		t.Logf("k %d, %d questions: the SQL leg finds %.4f of the exact top k; mean %v (SQL) against %v (in process, exact)",
			k, len(vecs), float64(found)/float64(total), tSQL/n, tExact/n)
	}
}
