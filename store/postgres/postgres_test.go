package postgres_test

import (
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/mnemo-dev/mnemo/internal/pgtest"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/store/postgres"
	"github.com/mnemo-dev/mnemo/store/storetest"
)

// opener returns an OpenFunc handing out stores in fresh schemas of one
// throw-away cluster.
func opener(t *testing.T, opt postgres.Options) storetest.OpenFunc {
	c := pgtest.Start(t)
	dsn := c.DSN("postgres")
	var n atomic.Int64
	return func(t *testing.T) store.Store {
		t.Helper()
		o := opt
		o.Schema = fmt.Sprintf("t%d", n.Add(1))
		if o.MaxConns == 0 {
			o.MaxConns = 4
		}
		s, err := postgres.Open(t.Context(), dsn, o)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
}

func TestStore_Conformance(t *testing.T) {
	t.Parallel()
	storetest.Exercise(t, opener(t, postgres.Options{}))
}

func TestStore_Context(t *testing.T) {
	storetest.ExerciseContext(t, opener(t, postgres.Options{ContextTurns: 1}))
}
