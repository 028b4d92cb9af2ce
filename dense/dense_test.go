package dense_test

import (
	"path/filepath"
	"sync"
	"testing"

	"github.com/mnemo-dev/mnemo/dense"
	"github.com/mnemo-dev/mnemo/dense/densetest"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/store/sqlitestore"
	"github.com/mnemo-dev/mnemo/vector"
)

func openStore(t *testing.T) *sqlitestore.Store {
	t.Helper()
	st, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "mnemo.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func TestCatalog_Conformance(t *testing.T) {
	t.Parallel()
	densetest.Exercise(t, func(t *testing.T) (store.Store, densetest.Port) {
		st := openStore(t)
		// Pages of 7 so that every load reads several.
		return st, dense.NewCatalog(st, dense.Options{PageSize: 7})
	})
}

// TestCatalog_ConformanceGraph runs the suite with every index growing a
// graph from its first memory and every scope the walk accepts walking it,
// while the background builder links the writes (the race detector
// watches the two).
func TestCatalog_ConformanceGraph(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		cats []*dense.Catalog
	)
	t.Cleanup(func() {
		var walks int64
		for _, c := range cats {
			walks += c.Walks()
		}
		if walks == 0 {
			t.Error("no search walked a graph")
		}
		t.Logf("%d searches walked a graph", walks)
	})
	densetest.Exercise(t, func(t *testing.T) (store.Store, densetest.Port) {
		st := openStore(t)
		c := dense.NewCatalog(st, dense.Options{PageSize: 7, GraphMin: 1, ANN: vector.ANN{ExactBelow: 1}})
		mu.Lock()
		cats = append(cats, c)
		mu.Unlock()
		t.Cleanup(c.Close)
		return st, c
	})
}

func TestScan_Conformance(t *testing.T) {
	t.Parallel()
	densetest.Exercise(t, func(t *testing.T) (store.Store, densetest.Port) {
		st := openStore(t)
		return st, dense.NewScan(st)
	})
}
