package dense_test

import (
	"path/filepath"
	"testing"

	"github.com/mnemo-dev/mnemo/dense"
	"github.com/mnemo-dev/mnemo/dense/densetest"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/store/sqlitestore"
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

func TestScan_Conformance(t *testing.T) {
	t.Parallel()
	densetest.Exercise(t, func(t *testing.T) (store.Store, densetest.Port) {
		st := openStore(t)
		return st, dense.NewScan(st)
	})
}
