package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
)

// ExerciseKeys is the API-key conformance group: CreateKey, KeyByHash,
// ListKeys and RevokeKey. Exercise runs it as the "Keys" group.
func ExerciseKeys(t *testing.T, open OpenFunc) {
	t.Helper()
	key := func(id, profile string, d time.Duration) store.APIKey {
		return store.APIKey{ID: id, Profile: profile, Name: "label " + id, Hash: "hash-" + id, Prefix: "mnemo_" + id,
			CreatedAt: t0.Add(d)}
	}
	create := func(b *bundle, ks ...store.APIKey) {
		b.t.Helper()
		for _, k := range ks {
			if err := b.s.CreateKey(b.ctx, k); err != nil {
				b.t.Fatalf("CreateKey(%s): %v", k.ID, err)
			}
		}
	}
	list := func(b *bundle, p store.ListKeysParams) []store.APIKey {
		b.t.Helper()
		ks, err := b.s.ListKeys(b.ctx, p)
		if err != nil {
			b.t.Fatalf("ListKeys(%+v): %v", p, err)
		}
		return ks
	}
	keyIDs := func(ks []store.APIKey) []string {
		out := []string{}
		for _, k := range ks {
			out = append(out, k.ID)
		}
		return out
	}

	t.Run("RoundTrip", func(t *testing.T) {
		b := setup(t, open)
		want := key("k1", "alice", 0)
		create(b, want)
		got, err := b.s.KeyByHash(b.ctx, want.Hash)
		if err != nil {
			t.Fatalf("KeyByHash: %v", err)
		}
		if got.ID != want.ID || got.Profile != want.Profile || got.Name != want.Name || got.Hash != want.Hash ||
			got.Prefix != want.Prefix || !got.CreatedAt.Equal(want.CreatedAt) || !got.RevokedAt.IsZero() {
			t.Errorf("KeyByHash = %+v, want %+v", got, want)
		}
	})

	t.Run("AdminRoundTrip", func(t *testing.T) {
		b := setup(t, open)
		want := key("adm", "", 0)
		want.Role = store.RoleAdmin
		create(b, want)
		got, err := b.s.KeyByHash(b.ctx, want.Hash)
		if err != nil {
			t.Fatalf("KeyByHash: %v", err)
		}
		if got.Role != store.RoleAdmin || got.Profile != "" {
			t.Errorf("KeyByHash = %+v, want an admin key without a profile", got)
		}
		profileKey := key("k1", "alice", time.Second)
		create(b, profileKey)
		if got, _ := b.s.KeyByHash(b.ctx, profileKey.Hash); got.Role != store.RoleProfile {
			t.Errorf("a profile key reads back with role %q, want %q", got.Role, store.RoleProfile)
		}
		for name, k := range map[string]store.APIKey{
			"AdminWithProfile": {ID: "a2", Profile: "alice", Role: store.RoleAdmin, Hash: "h-a2", CreatedAt: t0},
			"UnknownRole":      {ID: "a3", Profile: "alice", Role: "root", Hash: "h-a3", CreatedAt: t0},
		} {
			if err := b.s.CreateKey(b.ctx, k); !errors.Is(err, mnemotype.ErrInvalid) {
				t.Errorf("%s: CreateKey error = %v, want ErrInvalid", name, err)
			}
		}
	})

	t.Run("ServiceRoundTrip", func(t *testing.T) {
		b := setup(t, open)
		anyProfile := key("svc-any", "", 0)
		anyProfile.Role = store.RoleService
		listed := key("svc-ab", "", time.Second)
		listed.Role, listed.Profiles = store.RoleService, []string{"alice", "bob"}
		create(b, anyProfile, listed, key("k-carol", "carol", 2*time.Second))
		for _, c := range []struct {
			k       store.APIKey
			acts    []string
			actsNot []string
		}{
			{anyProfile, []string{"alice", "bob", "carol"}, []string{""}},
			{listed, []string{"alice", "bob"}, []string{"carol", "", "Alice"}},
		} {
			got, err := b.s.KeyByHash(b.ctx, c.k.Hash)
			if err != nil {
				t.Fatalf("KeyByHash(%s): %v", c.k.ID, err)
			}
			if got.Role != store.RoleService || got.Profile != "" || !slices.Equal(got.Profiles, c.k.Profiles) {
				t.Errorf("KeyByHash(%s) = %+v, want %+v", c.k.ID, got, c.k)
			}
			for _, p := range c.acts {
				if !got.ActsOn(p) {
					t.Errorf("%s does not act on %q", c.k.ID, p)
				}
			}
			for _, p := range c.actsNot {
				if got.ActsOn(p) {
					t.Errorf("%s acts on %q", c.k.ID, p)
				}
			}
		}
		// Listing a profile's keys lists every key that may act on it.
		for p, want := range map[string][]string{
			"alice": {"svc-any", "svc-ab"}, "carol": {"svc-any", "k-carol"}, "dave": {"svc-any"},
		} {
			if got := keyIDs(list(b, store.ListKeysParams{Profile: p})); !slices.Equal(got, want) {
				t.Errorf("ListKeys(%s) = %v, want %v", p, got, want)
			}
		}
		for name, k := range map[string]store.APIKey{
			"ServiceWithProfile": {ID: "s2", Profile: "alice", Role: store.RoleService, Hash: "h-s2", CreatedAt: t0},
			"ProfileKeyWithList": {ID: "s3", Profile: "alice", Profiles: []string{"bob"}, Hash: "h-s3", CreatedAt: t0},
			"AdminWithList":      {ID: "s4", Role: store.RoleAdmin, Profiles: []string{"bob"}, Hash: "h-s4", CreatedAt: t0},
			"EmptyListedProfile": {ID: "s5", Role: store.RoleService, Profiles: []string{"bob", " "}, Hash: "h-s5", CreatedAt: t0},
		} {
			if err := b.s.CreateKey(b.ctx, k); !errors.Is(err, mnemotype.ErrInvalid) {
				t.Errorf("%s: CreateKey error = %v, want ErrInvalid", name, err)
			}
		}
	})

	t.Run("UnknownHashNotFound", func(t *testing.T) {
		b := setup(t, open)
		create(b, key("k1", "alice", 0))
		for _, h := range []string{"", "hash-k2", "HASH-K1", "hash-k1 ", "%"} {
			if _, err := b.s.KeyByHash(b.ctx, h); !errors.Is(err, mnemotype.ErrNotFound) {
				t.Errorf("KeyByHash(%q) error = %v, want ErrNotFound", h, err)
			}
		}
	})

	t.Run("DuplicatesRejected", func(t *testing.T) {
		b := setup(t, open)
		create(b, key("k1", "alice", 0))
		dupID := key("k1", "bob", time.Second)
		dupID.Hash = "other"
		dupHash := key("k2", "bob", time.Second)
		dupHash.Hash = "hash-k1"
		for name, k := range map[string]store.APIKey{"id": dupID, "hash": dupHash} {
			if err := b.s.CreateKey(b.ctx, k); !errors.Is(err, mnemotype.ErrInvalid) || !errors.Is(err, mnemotype.ErrExists) {
				t.Errorf("CreateKey with a repeated %s: error = %v, want ErrInvalid and ErrExists", name, err)
			}
		}
		if got := keyIDs(list(b, store.ListKeysParams{IncludeRevoked: true})); !slices.Equal(got, []string{"k1"}) {
			t.Errorf("keys after rejected creates = %v, want [k1]", got)
		}
		if k, err := b.s.KeyByHash(b.ctx, "hash-k1"); err != nil || k.Profile != "alice" {
			t.Errorf("KeyByHash(hash-k1) = %+v, %v: the original key must be untouched", k, err)
		}
	})

	t.Run("InvalidRejected", func(t *testing.T) {
		b := setup(t, open)
		for name, mod := range map[string]func(*store.APIKey){
			"NoID":      func(k *store.APIKey) { k.ID = "" },
			"NoProfile": func(k *store.APIKey) { k.Profile = " " },
			"NoHash":    func(k *store.APIKey) { k.Hash = "" },
		} {
			k := key("k1", "alice", 0)
			mod(&k)
			if err := b.s.CreateKey(b.ctx, k); !errors.Is(err, mnemotype.ErrInvalid) {
				t.Errorf("%s: CreateKey error = %v, want ErrInvalid", name, err)
			}
		}
		if ks := list(b, store.ListKeysParams{IncludeRevoked: true}); len(ks) != 0 {
			t.Errorf("invalid keys were stored: %v", keyIDs(ks))
		}
	})

	t.Run("ListOrderAndFilter", func(t *testing.T) {
		b := setup(t, open)
		// Created out of order, two with the same time: order is by
		// creation time, then id.
		create(b, key("k3", "alice", 2*time.Second), key("k2", "bob", time.Second), key("k1b", "alice", 0), key("k1a", "alice", 0))
		if got := keyIDs(list(b, store.ListKeysParams{})); !slices.Equal(got, []string{"k1a", "k1b", "k2", "k3"}) {
			t.Errorf("ListKeys(all) = %v", got)
		}
		if got := keyIDs(list(b, store.ListKeysParams{Profile: "alice"})); !slices.Equal(got, []string{"k1a", "k1b", "k3"}) {
			t.Errorf("ListKeys(alice) = %v", got)
		}
		if got := keyIDs(list(b, store.ListKeysParams{Profile: "carol"})); len(got) != 0 {
			t.Errorf("ListKeys(carol) = %v, want none", got)
		}
	})

	t.Run("Revoke", func(t *testing.T) {
		b := setup(t, open)
		create(b, key("k1", "alice", 0), key("k2", "alice", time.Second))
		at := t0.Add(time.Hour)
		if err := b.s.RevokeKey(b.ctx, "k1", at); err != nil {
			t.Fatalf("RevokeKey: %v", err)
		}
		if _, err := b.s.KeyByHash(b.ctx, "hash-k1"); !errors.Is(err, mnemotype.ErrNotFound) {
			t.Errorf("KeyByHash of a revoked key: error = %v, want ErrNotFound", err)
		}
		if _, err := b.s.KeyByHash(b.ctx, "hash-k2"); err != nil {
			t.Errorf("KeyByHash of the other key: %v", err)
		}
		if got := keyIDs(list(b, store.ListKeysParams{Profile: "alice"})); !slices.Equal(got, []string{"k2"}) {
			t.Errorf("active keys = %v, want [k2]", got)
		}
		all := list(b, store.ListKeysParams{Profile: "alice", IncludeRevoked: true})
		if got := keyIDs(all); !slices.Equal(got, []string{"k1", "k2"}) {
			t.Fatalf("all keys = %v, want [k1 k2]", got)
		}
		if !all[0].RevokedAt.Equal(at) || !all[1].RevokedAt.IsZero() {
			t.Errorf("RevokedAt = %v, %v; want %v and zero", all[0].RevokedAt, all[1].RevokedAt, at)
		}
		if err := b.s.RevokeKey(b.ctx, "k1", at.Add(time.Hour)); !errors.Is(err, mnemotype.ErrNotFound) {
			t.Errorf("revoking twice: error = %v, want ErrNotFound", err)
		}
		if all := list(b, store.ListKeysParams{Profile: "alice", IncludeRevoked: true}); !all[0].RevokedAt.Equal(at) {
			t.Errorf("a second revoke moved RevokedAt to %v", all[0].RevokedAt)
		}
		if err := b.s.RevokeKey(b.ctx, "nope", at); !errors.Is(err, mnemotype.ErrNotFound) {
			t.Errorf("revoking an unknown id: error = %v, want ErrNotFound", err)
		}
	})

	t.Run("IndependentOfMemories", func(t *testing.T) {
		b := setup(t, open)
		create(b, key("k1", "alice", 0))
		b.insert(mem("alice", "m1", "a memory"))
		if err := b.s.Delete(b.ctx, "alice", "m1"); err != nil {
			t.Fatal(err)
		}
		if b.count("alice") != 0 {
			t.Error("keys count as memories")
		}
		if _, err := b.s.KeyByHash(b.ctx, "hash-k1"); err != nil {
			t.Errorf("KeyByHash after memory churn: %v", err)
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		b := setup(t, open)
		var wg sync.WaitGroup
		errs := make(chan error, 40)
		for i := range 20 {
			wg.Go(func() {
				k := key(fmt.Sprintf("k%02d", i), "alice", time.Duration(i)*time.Millisecond)
				if err := b.s.CreateKey(b.ctx, k); err != nil {
					errs <- err
					return
				}
				if _, err := b.s.KeyByHash(b.ctx, k.Hash); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if n := len(list(b, store.ListKeysParams{})); n != 20 {
			t.Errorf("ListKeys returned %d keys, want 20", n)
		}
	})

	t.Run("Closed", func(t *testing.T) {
		b := setup(t, open)
		create(b, key("k1", "alice", 0))
		if err := b.s.Close(); err != nil {
			t.Fatal(err)
		}
		calls := map[string]error{
			"CreateKey": b.s.CreateKey(b.ctx, key("k2", "alice", 0)),
			"RevokeKey": b.s.RevokeKey(b.ctx, "k1", t0),
		}
		_, calls["KeyByHash"] = b.s.KeyByHash(b.ctx, "hash-k1")
		_, calls["ListKeys"] = b.s.ListKeys(b.ctx, store.ListKeysParams{})
		for name, err := range calls {
			if !errors.Is(err, mnemotype.ErrClosed) {
				t.Errorf("%s after Close: error = %v, want ErrClosed", name, err)
			}
		}
	})
}
