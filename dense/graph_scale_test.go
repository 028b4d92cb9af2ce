package dense_test

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
		var tWalk, tExact time.Duration
		for _, v := range vecs {
			q := dense.Query{Vector: v, Model: model.Model(), K: k, Scope: mnemotype.Scope{Profile: profile}, Serial: true}
			start := time.Now()
			want, err := exact.Search(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			tExact += time.Since(start)
			start = time.Now()
			got, err := walk.Search(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			tWalk += time.Since(start)
			for _, h := range got {
				if slices.ContainsFunc(want, func(w mnemotype.Hit) bool { return w.ID == h.ID }) {
					found++
				}
			}
			total += len(want)
		}
		n := time.Duration(len(vecs))
		t.Logf("k %d, %d questions: the walk finds %.4f of the exact top k; mean %v (walk) against %v (exact, one CPU)",
			k, len(vecs), float64(found)/float64(total), tWalk/n, tExact/n)
	}
}
