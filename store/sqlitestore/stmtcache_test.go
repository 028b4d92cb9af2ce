package sqlitestore

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/store/storetest"
)

// TestStmtCache_NoPoolDeadlock: full-text searches, each holding a read
// transaction, run with every connection of the pool held; a statement
// they miss must not wait for a connection of its own (it deadlocked so:
// eight concurrent recalls on four connections).
func TestStmtCache_NoPoolDeadlock(t *testing.T) {
	t.Parallel()
	for _, readers := range []int{1, 2} {
		t.Run(fmt.Sprint("readers=", readers), func(t *testing.T) {
			t.Parallel()
			s, err := Open(t.Context(), filepath.Join(t.TempDir(), "mnemo.db"), Options{Readers: readers})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Insert(t.Context(), storetest.GenerateMemories(1, "p", 300, 0)); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					// Shapes that differ in their SQL: limits, exclusions,
					// scopes, AND and OR.
					p := store.LexicalParams{Scope: mnemotype.Scope{Profile: "p"}, Match: store.MatchQuery{Terms: []string{"the", "deploy", "auth"}, All: i%2 == 0}, Limit: 5 + i}
					if i%3 == 0 {
						p.Scope.Exclude = []string{"x"}
					}
					if i%4 == 0 {
						p.Scope.Sessions = []string{"s1"}
					}
					for range 20 {
						if _, err := s.Lexical(ctx, p); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			if ctx.Err() != nil {
				t.Fatal("searches did not finish: the statement cache waited for a connection the searches held")
			}
		})
	}
}
