package vector_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/vector"
)

// TestNear_MatchesScan: after random writes (turns out of order, moves
// between sessions, turn changes, deletions) and a round trip through the
// encoding, Near returns what a scan of the memories finds.
func TestNear_MatchesScan(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	x := vector.New()
	held := map[string]mnemotype.Memory{}
	check := func(step int, x *vector.Index) {
		t.Helper()
		ids := []string{"nobody"}
		for range 1 + r.IntN(6) {
			ids = append(ids, fmt.Sprintf("m%03d", r.IntN(300)))
		}
		radius := 1 + r.IntN(3)
		got, ok := x.Near(vector.Filter{}, ids, radius)
		if !ok {
			t.Fatalf("step %d: Near not answered", step)
		}
		var want []vector.NearRow
		seen := map[string]bool{}
		for _, id := range ids {
			m, ok := held[id]
			if !ok || seen[id] || m.Session == "" {
				continue
			}
			seen[id] = true
			for _, o := range held {
				d := o.Seq - m.Seq
				if o.ID != id && o.Session == m.Session && max(d, -d) <= int64(radius) {
					want = append(want, vector.NearRow{ID: o.ID, Of: id, Abs: max(d, -d), Seq: o.Seq})
				}
			}
		}
		order := func(a, b vector.NearRow) int { return strings.Compare(a.Of+"/"+a.ID, b.Of+"/"+b.ID) }
		slices.SortFunc(got, order)
		slices.SortFunc(want, order)
		if !slices.Equal(got, want) {
			t.Fatalf("step %d: Near(%v, %d):\n got %v\nwant %v", step, ids, radius, got, want)
		}
	}
	for step := range 3000 {
		id := fmt.Sprintf("m%03d", r.IntN(300))
		if r.IntN(5) == 0 {
			x.Delete(id)
			delete(held, id)
		} else {
			m := mem(id)
			m.Session, m.Seq = []string{"", "a", "b", "c"}[r.IntN(4)], int64(r.IntN(200))
			if err := x.Upsert([]mnemotype.Memory{m}); err != nil {
				t.Fatal(err)
			}
			held[id] = m
		}
		if step%10 == 0 {
			check(step, x)
		}
		if step%500 == 499 {
			x = reencode(t, x, vector.DecodeOptions{})
			check(step, x)
		}
	}
}
