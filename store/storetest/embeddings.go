package storetest

import (
	"reflect"
	"testing"

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
			mem("alice", "a5", "sixteen", embedding("m1", vec(3, 16))),
			mem("alice", "a6", "another model", embedding("m0", vec(4, 4))),
			mem("bob", "b1", "bob's", embedding("m1", vec(5, 8))),
			mem("bob", "b2", "bob's without"),
		)
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
