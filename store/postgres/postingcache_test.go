package postgres_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/internal/pgtest"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/store/postgres"
)

// TestPostingCache_SeesEveryWrite: a process that keeps posting lists
// between queries answers, after every kind of write by another process
// (a new memory, an edit that changes a term's count but not its document
// frequency, a deletion, a profile deleted and made again), what a
// process without the cache answers.
func TestPostingCache_SeesEveryWrite(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t)
	ctx := t.Context()
	open := func(cache int64) *postgres.Store {
		t.Helper()
		s, err := postgres.Open(ctx, c.DSN("postgres"), postgres.Options{Schema: "pc", PostingCache: cache, NoVectors: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	cached, writer, plain := open(0), open(-1), open(-1)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	mem := func(id, content string) mnemotype.Memory {
		return mnemotype.Memory{ID: id, Profile: "p", Content: content, Kind: mnemotype.KindEpisodic, Importance: 0.5,
			CreatedAt: t0, OccurredAt: t0, AccessedAt: t0}
	}
	var mems []mnemotype.Memory
	for i := range 600 { // more than two blocks of row ids
		words := "pie"
		if i%3 == 0 {
			words = "apple pie"
		}
		mems = append(mems, mem(fmt.Sprintf("m%04d", i), fmt.Sprintf("%s number %d", words, i)))
	}
	if err := writer.Insert(ctx, mems); err != nil {
		t.Fatal(err)
	}
	queries := []store.LexicalParams{
		{Scope: mnemotype.Scope{Profile: "p"}, Match: store.MatchQuery{Terms: []string{"apple", "pie"}}, Limit: 20},
		{Scope: mnemotype.Scope{Profile: "p"}, Match: store.MatchQuery{Terms: []string{"apple"}}, Limit: 50},
		{Scope: mnemotype.Scope{Profile: "p"}, Match: store.MatchQuery{Terms: []string{"apple"}}, Only: []string{"m0003", "m0300", "m0597", "m0598"}},
	}
	check := func(step string) {
		t.Helper()
		for qi, q := range queries {
			for range 2 { // the second query of a list reads the cache
				got, err := cached.Lexical(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				want, err := plain.Lexical(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				if !sameHits(got, want) {
					t.Fatalf("%s, query %d: with the cache %v, without %v", step, qi, got, want)
				}
			}
		}
	}
	check("first")
	if err := writer.Insert(ctx, []mnemotype.Memory{mem("n1", "apple apple apple")}); err != nil {
		t.Fatal(err)
	}
	check("after an insert")
	text := "apple apple apple apple pie number 3"
	if _, err := writer.Update(ctx, store.UpdateParams{Profile: "p", ID: "m0003", Content: &text}); err != nil {
		t.Fatal(err)
	}
	check("after an edit of a count")
	if err := writer.Delete(ctx, "p", "m0300"); err != nil {
		t.Fatal(err)
	}
	check("after a deletion")
	if _, err := writer.DeleteProfile(ctx, "p"); err != nil {
		t.Fatal(err)
	}
	check("after the profile's deletion")
	if err := writer.Insert(ctx, []mnemotype.Memory{mem("m0003", "apple tart"), mem("m0597", "apple")}); err != nil {
		t.Fatal(err)
	}
	check("after the profile was made again")
}
