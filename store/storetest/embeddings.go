package storetest

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
)

func exerciseEmbeddingCounts(t *testing.T, open OpenFunc) {
	t.Run("EmptyStore", func(t *testing.T) {
		b := setup(t, open)
		for _, p := range []string{"", "alice"} {
			got, err := b.s.EmbeddingCounts(b.ctx, p)
			if err != nil {
				t.Fatalf("EmbeddingCounts(%q): %v", p, err)
			}
			if len(got) != 0 {
				t.Errorf("EmbeddingCounts(%q) = %+v on a fresh store, want none", p, got)
			}
		}
	})

	t.Run("ByProfileModelAndDimension", func(t *testing.T) {
		b := setup(t, open)
		b.insert(
			mem("alice", "a1", "no embedding"),
			mem("alice", "a2", "no embedding either"),
			mem("alice", "a3", "eight", embedding("m1", vec(1, 8))),
			mem("alice", "a4", "eight too", embedding("m1", vec(2, 8))),
			mem("alice", "a5", "sixteen"),
			mem("alice", "a6", "another model"),
			mem("bob", "b1", "bob's", embedding("m1", vec(5, 8))),
			mem("bob", "b2", "bob's without"),
		)
		// A profile's dimensions mix only while it is re-embedded, by
		// updates: an insert refuses another dimension.
		for id, e := range map[string]struct {
			model string
			v     []float32
		}{"a5": {"m1", vec(3, 16)}, "a6": {"m0", vec(4, 4)}} {
			if _, err := b.s.Update(b.ctx, store.UpdateParams{Profile: "alice", ID: id, Embedding: e.v, EmbeddingModel: e.model}); err != nil {
				t.Fatal(err)
			}
		}
		// Updates move a memory between rows: embedded later, re-embedded
		// by another model; a deleted memory is no longer counted.
		if _, err := b.s.Update(b.ctx, store.UpdateParams{Profile: "alice", ID: "a2", Embedding: vec(6, 8), EmbeddingModel: "m1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.Update(b.ctx, store.UpdateParams{Profile: "bob", ID: "b1", Embedding: vec(7, 4), EmbeddingModel: "m0"}); err != nil {
			t.Fatal(err)
		}
		if err := b.s.Delete(b.ctx, "alice", "a4"); err != nil {
			t.Fatal(err)
		}
		alice := []store.EmbeddingCount{
			{Profile: "alice", Model: "", Dim: 0, Count: 1},
			{Profile: "alice", Model: "m0", Dim: 4, Count: 1},
			{Profile: "alice", Model: "m1", Dim: 8, Count: 2},
			{Profile: "alice", Model: "m1", Dim: 16, Count: 1},
		}
		bob := []store.EmbeddingCount{
			{Profile: "bob", Model: "", Dim: 0, Count: 1},
			{Profile: "bob", Model: "m0", Dim: 4, Count: 1},
		}
		for _, tc := range []struct {
			profile string
			want    []store.EmbeddingCount
		}{
			{"alice", alice},
			{"bob", bob},
			{"carol", nil},
			{"", append(append([]store.EmbeddingCount(nil), alice...), bob...)},
		} {
			got, err := b.s.EmbeddingCounts(b.ctx, tc.profile)
			if err != nil {
				t.Fatalf("EmbeddingCounts(%q): %v", tc.profile, err)
			}
			if len(got) == 0 && len(tc.want) == 0 {
				continue
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("EmbeddingCounts(%q) =\n  %+v\nwant\n  %+v", tc.profile, got, tc.want)
			}
		}
	})
}

func exerciseEmbeddingDim(t *testing.T, open OpenFunc) {
	t.Run("FollowsWrites", func(t *testing.T) {
		exerciseEmbeddingDimFollowsWrites(t, open)
	})
	t.Run("InsertRefusesAnotherDimension", func(t *testing.T) {
		b := setup(t, open)
		b.insert(mem("alice", "a1", "eight", embedding("m1", vec(1, 8))), mem("bob", "b1", "sixteen", embedding("m1", vec(2, 16))))
		for name, batch := range map[string][]mnemotype.Memory{
			"Alone":       {mem("alice", "a2", "sixteen", embedding("m2", vec(3, 16)))},
			"InBatch":     {mem("alice", "a3", "eight", embedding("m1", vec(4, 8))), mem("alice", "a4", "four", embedding("m1", vec(5, 4)))},
			"NewProfile":  {mem("carol", "c1", "eight", embedding("m1", vec(6, 8))), mem("carol", "c2", "four", embedding("m1", vec(7, 4)))},
			"AfterOthers": {mem("bob", "b2", "fine", embedding("m1", vec(8, 16))), mem("alice", "a5", "not fine", embedding("m1", vec(9, 16)))},
		} {
			err := b.s.Insert(b.ctx, batch)
			if !errors.Is(err, mnemotype.ErrDimensionMismatch) {
				t.Errorf("%s: Insert = %v, want ErrDimensionMismatch", name, err)
			}
			for _, m := range batch {
				if got := b.get(m.Profile, m.ID); len(got) != 0 {
					t.Errorf("%s: %s was stored from a refused batch", name, m.ID)
				}
			}
		}
		b.insert(mem("alice", "a6", "no embedding is fine"), mem("alice", "a7", "eight is fine", embedding("m2", vec(10, 8))))
	})
	t.Run("ConcurrentFirstInserts", func(t *testing.T) {
		// Two writers race to give an empty profile its first embeddings,
		// of two dimensions: the check and the insert are one transaction,
		// so one dimension wins and the other insert is refused.
		for round := range 10 {
			t.Run(fmt.Sprintf("Round%d", round), func(t *testing.T) { raceFirstInserts(t, open, round) })
		}
	})
}

// raceFirstInserts races two inserts of first embeddings of two
// dimensions into an empty profile.
func raceFirstInserts(t *testing.T, open OpenFunc, round int) {
	b := setup(t, open)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, dim := range []int{8, 16} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.s.Insert(b.ctx, []mnemotype.Memory{mem("alice", fmt.Sprintf("d%d", dim), "racing", embedding("m", vec(uint64(dim), dim)))})
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, mnemotype.ErrDimensionMismatch):
			t.Fatalf("round %d: Insert = %v", round, err)
		}
	}
	counts, err := b.s.EmbeddingCounts(b.ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if ok != 1 || len(counts) != 1 {
		t.Fatalf("round %d: %d inserts succeeded, dimensions stored %+v: want exactly one", round, ok, counts)
	}
}

func exerciseEmbeddingDimFollowsWrites(t *testing.T, open OpenFunc) {
	b := setup(t, open)
	dim := func(profile string) int {
		t.Helper()
		d, err := b.s.EmbeddingDim(b.ctx, profile)
		if err != nil {
			t.Fatalf("EmbeddingDim(%q): %v", profile, err)
		}
		return d
	}
	if d := dim("alice"); d != 0 {
		t.Errorf("EmbeddingDim on a fresh store = %d, want 0", d)
	}
	b.insert(mem("alice", "a1", "no embedding"), mem("bob", "b1", "bob's", embedding("m1", vec(1, 4))))
	if d := dim("alice"); d != 0 {
		t.Errorf("EmbeddingDim without embedded memories = %d, want 0", d)
	}
	b.insert(mem("alice", "a2", "eight", embedding("m1", vec(2, 8))))
	if d, other := dim("alice"), dim("bob"); d != 8 || other != 4 {
		t.Errorf("EmbeddingDim = %d (alice), %d (bob); want 8, 4", d, other)
	}
	if err := b.s.Delete(b.ctx, "alice", "a2"); err != nil {
		t.Fatal(err)
	}
	if d := dim("alice"); d != 0 {
		t.Errorf("EmbeddingDim after deleting the embedded memory = %d, want 0", d)
	}
}
