package storetest

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
)

func actor(a string) memOpt { return func(m *mnemotype.Memory) { m.Actor = a } }
func seq(n int64) memOpt    { return func(m *mnemotype.Memory) { m.Seq = n } }
func occurred(at time.Time) memOpt {
	return func(m *mnemotype.Memory) { m.OccurredAt = at }
}

// metaScope is profile's scope with the metadata filter of the key, value
// pairs kv.
func metaScope(profile string, kv ...any) mnemotype.Scope {
	sc := mnemotype.Scope{Profile: profile}
	for i := 0; i+1 < len(kv); i += 2 {
		sc.Metadata = append(sc.Metadata, mnemotype.MetadataMatch{Key: kv[i].(string), Value: kv[i+1]})
	}
	return sc
}

// exerciseConversation is the conformance group of the memory model of
// conversations: who said it (Actor), when it happened (OccurredAt), its
// order in the session (Seq), the fields the lexical leg searches, and the
// turns around a memory (Neighbors).
func exerciseConversation(t *testing.T, open OpenFunc) {
	t.Run("SeqInArrivalOrder", func(t *testing.T) {
		b := setup(t, open)
		b.insert(mem("alice", "a1", "one", session("s1")), mem("alice", "a2", "two", session("s1")))
		b.insert(mem("alice", "b1", "other session", session("s2")), mem("alice", "a3", "three", session("s1")))
		b.insert(mem("alice", "a9", "given", session("s1"), seq(9)), mem("alice", "a10", "after the given", session("s1")))
		b.insert(mem("bob", "c1", "bob's first", session("s1")))
		want := map[string]int64{"a1": 1, "a2": 2, "a3": 3, "b1": 1, "a9": 9, "a10": 10}
		for id, w := range want {
			if got := b.getOne("alice", id).Seq; got != w {
				t.Errorf("%s: Seq %d, want %d", id, got, w)
			}
		}
		if got := b.getOne("bob", "c1").Seq; got != 1 {
			t.Errorf("bob's first memory of s1: Seq %d, want 1 (sessions are per profile)", got)
		}
	})

	t.Run("InsertReturnsTheSeqItGives", func(t *testing.T) {
		b := setup(t, open)
		b.insert(mem("alice", "a1", "one", session("s1")))
		ms := []mnemotype.Memory{mem("alice", "a2", "two", session("s1")), mem("alice", "a7", "given", session("s1"), seq(7)),
			mem("alice", "a8", "after the given", session("s1")), mem("alice", "n1", "no session")}
		if err := b.s.Insert(b.ctx, ms); err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if stored := b.getOne("alice", m.ID).Seq; m.Seq != stored || stored <= 0 {
				t.Errorf("%s: Insert left Seq %d in its argument, the store holds %d", m.ID, m.Seq, stored)
			}
		}
		if ms[0].Seq != 2 || ms[2].Seq != 8 {
			t.Errorf("Seqs %d and %d, want 2 and 8", ms[0].Seq, ms[2].Seq)
		}
		// A failed insert leaves its argument as given.
		bad := []mnemotype.Memory{mem("alice", "a9", "nine", session("s1")), mem("alice", "a1", "a taken id", session("s1"))}
		if err := b.s.Insert(b.ctx, bad); !errors.Is(err, mnemotype.ErrExists) {
			t.Fatalf("Insert of a stored id: %v, want ErrExists", err)
		}
		if bad[0].Seq != 0 || bad[1].Seq != 0 {
			t.Errorf("a failed Insert numbered its argument: Seqs %d, %d", bad[0].Seq, bad[1].Seq)
		}
	})

	t.Run("OccurredAtDefaultsToCreatedAt", func(t *testing.T) {
		b := setup(t, open)
		b.insert(mem("alice", "a1", "stored now", at(time.Hour)))
		if got := b.getOne("alice", "a1").OccurredAt; !got.Equal(t0.Add(time.Hour)) {
			t.Errorf("OccurredAt = %v, want the creation time %v", got, t0.Add(time.Hour))
		}
	})

	scoped := func(b *bundle) {
		b.insert(fillers("alice", 6)...)
		b.insert(
			mem("alice", "c1", "a walrus by the sea", actor("Caroline"), occurred(time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)), embedded(1),
				metadata(`{"speaker": "Caroline", "n": 2, "pinned": true, "the \"key\".$[0]": "odd"}`)),
			mem("alice", "c2", "the walrus again", actor("Caroline"), occurred(time.Date(2023, 6, 1, 0, 0, 0, 0, time.UTC)), embedded(2),
				metadata(`{"speaker": "Caroline", "n": 2.0, "pinned": false, "nested": {"speaker": "Melanie"}, "a.b[0]": "dot", "\\": "\\"}`)),
			mem("alice", "m1", "a walrus painting", actor("Melanie"), occurred(time.Date(2023, 5, 31, 23, 59, 59, 999999999, time.UTC)), embedded(3),
				metadata(`{"speaker": "Melanie", "n": "2", "tag": null}`)),
			mem("alice", "n1", "walrus, no actor", occurred(time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)), embedded(4)),
			mem("bob", "b1", "bob's walrus", actor("Caroline"), occurred(time.Date(2023, 5, 9, 0, 0, 0, 0, time.UTC)), embedded(5),
				metadata(`{"speaker": "Melanie"}`)),
		)
	}
	may := time.Date(2023, 5, 1, 0, 0, 0, 0, time.UTC)
	june := time.Date(2023, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		scope mnemotype.Scope
		want  []string
	}{
		{"Actor", mnemotype.Scope{Profile: "alice", Actors: []string{"Caroline"}}, []string{"c1", "c2"}},
		{"Actors", mnemotype.Scope{Profile: "alice", Actors: []string{"Caroline", "Melanie"}}, []string{"c1", "c2", "m1"}},
		{"NoActor", mnemotype.Scope{Profile: "alice", Actors: []string{""}}, []string{"n1"}},
		{"UnknownActor", mnemotype.Scope{Profile: "alice", Actors: []string{"Zed"}}, nil},
		{"ActorOfAnotherProfile", mnemotype.Scope{Profile: "bob", Actors: []string{"Melanie"}}, nil},
		{"After", mnemotype.Scope{Profile: "alice", After: june}, []string{"c2", "n1"}},
		{"Before", mnemotype.Scope{Profile: "alice", Before: june}, []string{"c1", "m1"}},
		{"May", mnemotype.Scope{Profile: "alice", After: may, Before: june}, []string{"c1", "m1"}},
		{"MayByCaroline", mnemotype.Scope{Profile: "alice", After: may, Before: june, Actors: []string{"Caroline"}}, []string{"c1"}},
		{"ToTheNanosecond", mnemotype.Scope{Profile: "alice", After: time.Date(2023, 5, 31, 23, 59, 59, 999999999, time.UTC), Before: june}, []string{"m1"}},
		{"MetaString", metaScope("alice", "speaker", "Caroline"), []string{"c1", "c2"}},
		{"MetaNumber", metaScope("alice", "n", 2.0), []string{"c1", "c2"}},
		{"MetaStringIsNotANumber", metaScope("alice", "n", "2"), []string{"m1"}},
		{"MetaTrue", metaScope("alice", "pinned", true), []string{"c1"}},
		{"MetaFalse", metaScope("alice", "pinned", false), []string{"c2"}},
		{"MetaNullOrAbsent", metaScope("alice", "tag", nil), []string{"c1", "c2", "m1", "n1"}},
		{"MetaKeyTakenLiterally", metaScope("alice", `the "key".$[0]`, "odd"), []string{"c1"}},
		{"MetaTopLevelOnly", metaScope("alice", "speaker", "Melanie"), []string{"m1"}},
		{"MetaPathCharactersInKey", metaScope("alice", "a.b[0]", "dot"), []string{"c2"}},
		{"MetaBackslash", metaScope("alice", `\`, `\`), []string{"c2"}},
		{"MetaEvery", metaScope("alice", "speaker", "Caroline", "pinned", true), []string{"c1"}},
		{"MetaUnknownKey", metaScope("alice", "mood", "calm"), nil},
		{"MetaOfAnotherProfile", metaScope("bob", "speaker", "Caroline"), nil},
		{"MetaActorAndTime", func() mnemotype.Scope {
			sc := metaScope("alice", "speaker", "Caroline")
			sc.Actors, sc.Before = []string{"Caroline"}, june
			return sc
		}(), []string{"c1"}},
	} {
		t.Run("Scope"+tc.name, func(t *testing.T) {
			b := setup(t, open)
			scoped(b)
			for _, all := range []bool{false, true} {
				if got := b.lexical(store.LexicalParams{Scope: tc.scope, Match: store.MatchQuery{Terms: []string{"walrus"}, All: all}}); !sameSet(got, tc.want) {
					t.Errorf("Lexical all=%v: %v, want %v", all, got, tc.want)
				}
			}
			got := b.lexical(store.LexicalParams{Scope: tc.scope, Match: store.MatchQuery{Terms: []string{"walrus"}},
				Only: []string{"c1", "c2", "m1", "n1", "b1", "filler-alice-0"}})
			if !sameSet(got, tc.want) {
				t.Errorf("Lexical with Only: %v, want %v", got, tc.want)
			}
			if got := b.recent(tc.scope, 10); !sameSet(got, tc.want) {
				t.Errorf("RecentlyAccessed: %v, want %v", got, tc.want)
			}
			in, err := b.s.InScope(b.ctx, tc.scope, nil)
			if err != nil {
				t.Fatalf("InScope: %v", err)
			}
			in = slices.DeleteFunc(in, func(id string) bool { return strings.HasPrefix(id, "filler-") })
			if !sameSet(in, tc.want) {
				t.Errorf("InScope (fillers aside): %v, want %v", in, tc.want)
			}
			among := []string{"c1", "m1", "b1", "nope", "filler-alice-0"}
			if in, err = b.s.InScope(b.ctx, tc.scope, among); err != nil {
				t.Fatalf("InScope among %v: %v", among, err)
			}
			var want []string
			for _, id := range tc.want {
				if slices.Contains(among, id) {
					want = append(want, id)
				}
			}
			if in = slices.DeleteFunc(in, func(id string) bool { return strings.HasPrefix(id, "filler-") }); !sameSet(in, want) {
				t.Errorf("InScope among %v (fillers aside): %v, want %v", among, in, want)
			}
			if in, err = b.s.InScope(b.ctx, tc.scope, []string{}); err != nil || len(in) != 0 {
				t.Errorf("InScope among none: %v, %v", in, err)
			}

			// DeleteMatching with the same filters deletes exactly the
			// memories in scope.
			d := another(t, open)
			scoped(d)
			before, err := d.s.InScope(d.ctx, tc.scope, nil)
			if err != nil {
				t.Fatal(err)
			}
			total := d.count("alice") + d.count("bob")
			n, err := d.s.DeleteMatching(d.ctx, store.DeleteParams{Profile: tc.scope.Profile, Actors: tc.scope.Actors,
				After: tc.scope.After, Before: tc.scope.Before, Metadata: tc.scope.Metadata})
			if err != nil || n != len(before) {
				t.Errorf("DeleteMatching = %d, %v; want the %d memories in scope", n, err, len(before))
			}
			if left, _ := d.s.InScope(d.ctx, tc.scope, nil); len(left) != 0 {
				t.Errorf("after DeleteMatching, in scope: %v", left)
			}
			if got := d.count("alice") + d.count("bob"); got != total-len(before) {
				t.Errorf("after DeleteMatching: %d memories, want %d", got, total-len(before))
			}
		})
	}

	t.Run("FieldActor", func(t *testing.T) {
		b := setup(t, open)
		b.insert(fillers("alice", 6)...)
		b.insert(
			mem("alice", "own", "I bought a new bike", actor("Caroline")),
			mem("alice", "about", "Caroline told me about her bike", actor("Melanie")),
		)
		if got := search(b, store.FieldWeights{}, "caroline"); !slices.Equal(got, []string{"about"}) {
			t.Errorf("content alone: %v, want [about]", got)
		}
		if got := search(b, store.FieldWeights{Content: 1, Actor: 1}, "caroline"); !sameSet(got, []string{"own", "about"}) {
			t.Errorf("content and actor: %v, want both", got)
		}
		if got := search(b, store.FieldWeights{Actor: 1}, "caroline"); !slices.Equal(got, []string{"own"}) {
			t.Errorf("actor alone: %v, want [own]", got)
		}
	})
	t.Run("FieldTime", func(t *testing.T) {
		b := setup(t, open)
		b.insert(fillers("alice", 6)...)
		b.insert(mem("alice", "may", "went hiking", occurred(time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC))))
		for _, word := range []string{"may", "2023", "monday"} {
			if got := search(b, store.FieldWeights{}, word); len(got) != 0 {
				t.Errorf("content alone, %q: %v, want none", word, got)
			}
			if got := search(b, store.FieldWeights{Content: 1, Time: 1}, word); !slices.Equal(got, []string{"may"}) {
				t.Errorf("content and time, %q: %v, want [may]", word, got)
			}
		}
	})
	t.Run("UpdateConversationFields", func(t *testing.T) {
		b := setup(t, open)
		b.insert(fillers("alice", 6)...)
		b.insert(mem("alice", "t1", "the first turn", session("s1"), actor("A")), mem("alice", "t2", "the second turn", session("s1"), actor("B")))
		b.insert(mem("alice", "u1", "another session's turn", session("s2")))
		when := time.Date(2024, 2, 29, 10, 0, 0, 0, time.UTC)
		m, err := b.s.Update(b.ctx, store.UpdateParams{Profile: "alice", ID: "t1", Actor: ptr("Zoe"), OccurredAt: &when})
		if err != nil {
			t.Fatal(err)
		}
		if m.Actor != "Zoe" || !m.OccurredAt.Equal(when) || m.Seq != 1 {
			t.Errorf("Update returned actor %q, occurred_at %v, seq %d; want Zoe, %v, 1", m.Actor, m.OccurredAt, m.Seq, when)
		}
		if got := b.getOne("alice", "t1"); got.Actor != "Zoe" || !got.OccurredAt.Equal(when) {
			t.Errorf("stored actor %q, occurred_at %v; want Zoe, %v", got.Actor, got.OccurredAt, when)
		}
		if got := search(b, store.FieldWeights{Actor: 1}, "zoe"); !slices.Equal(got, []string{"t1"}) {
			t.Errorf("actor field after the update: %v, want [t1]", got)
		}
		if got := search(b, store.FieldWeights{Actor: 1}, "a"); len(got) != 0 {
			t.Errorf("the old actor still indexed: %v", got)
		}
		if got := search(b, store.FieldWeights{Time: 1}, "february"); !slices.Equal(got, []string{"t1"}) {
			t.Errorf("time field after the update: %v, want [t1]", got)
		}
		// Moved to another session without a seq: it becomes that session's last turn.
		if m, err = b.s.Update(b.ctx, store.UpdateParams{Profile: "alice", ID: "t2", Session: ptr("s2")}); err != nil {
			t.Fatal(err)
		}
		if m.Session != "s2" || m.Seq != 2 {
			t.Errorf("moved turn: session %q seq %d, want s2 2", m.Session, m.Seq)
		}
		if m, err = b.s.Update(b.ctx, store.UpdateParams{Profile: "alice", ID: "t1", Seq: ptr(int64(7))}); err != nil || m.Seq != 7 {
			t.Errorf("given seq: %d, %v; want 7", m.Seq, err)
		}
		got, err := b.s.Neighbors(b.ctx, mnemotype.Scope{Profile: "alice"}, []string{"u1"}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if want := []store.Neighbor{{ID: "t2", Of: "u1", Distance: 1}}; !sameNeighbors(got, want) {
			t.Errorf("Neighbors after the move = %v, want %v", got, want)
		}
		for _, bad := range []store.UpdateParams{
			{Profile: "alice", ID: "t1", Actor: ptr(strings.Repeat("x", mnemotype.MaxActorBytes+1))},
			{Profile: "alice", ID: "t1", Seq: ptr(int64(-1))},
			{Profile: "alice", ID: "t1", OccurredAt: ptr(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))},
		} {
			if _, err := b.s.Update(b.ctx, bad); !errors.Is(err, mnemotype.ErrInvalid) {
				t.Errorf("Update %+v: %v, want ErrInvalid", bad, err)
			}
		}
		if got := b.getOne("alice", "t1"); got.Actor != "Zoe" || got.Seq != 7 {
			t.Errorf("a refused update changed the memory: %+v", got)
		}
	})
	t.Run("Neighbors", func(t *testing.T) {
		b := setup(t, open)
		for i := 1; i <= 6; i++ {
			b.insert(mem("alice", "t"+string(rune('0'+i)), "turn", session("s1"), actor([]string{"A", "B"}[i%2])))
		}
		b.insert(mem("alice", "x1", "other session", session("s2")), mem("alice", "loose", "no session"), mem("alice", "loose2", "no session"))
		b.insert(mem("bob", "bob1", "bob's turn", session("s1")))
		got, err := b.s.Neighbors(b.ctx, mnemotype.Scope{Profile: "alice"}, []string{"t3", "t6", "loose", "bob1", "nope"}, 2)
		if err != nil {
			t.Fatal(err)
		}
		want := []store.Neighbor{{ID: "t2", Of: "t3", Distance: 1}, {ID: "t4", Of: "t3", Distance: 1}, {ID: "t1", Of: "t3", Distance: 2}, {ID: "t5", Of: "t3", Distance: 2}, {ID: "t5", Of: "t6", Distance: 1}, {ID: "t4", Of: "t6", Distance: 2}}
		if !sameNeighbors(got, want) {
			t.Errorf("Neighbors = %v, want %v", got, want)
		} else if !slices.Equal(got, want) {
			t.Errorf("Neighbors in the order %v, want %v (by memory id, distance, then seq)", got, want)
		}
		got, err = b.s.Neighbors(b.ctx, mnemotype.Scope{Profile: "alice", Actors: []string{"A"}, Exclude: []string{"t4"}}, []string{"t3"}, 2)
		if err != nil {
			t.Fatal(err)
		}
		if want := []store.Neighbor{{ID: "t2", Of: "t3", Distance: 1}}; !sameNeighbors(got, want) {
			t.Errorf("Neighbors in scope = %v, want %v", got, want)
		}
	})

	t.Run("NeighborsSharingASeq", func(t *testing.T) {
		// Two turns given the same number: the other is nearest (its
		// distance reported as 1), before the turns one away.
		b := setup(t, open)
		b.insert(mem("alice", "a", "turn", session("s"), seq(5)), mem("alice", "b", "turn", session("s"), seq(5)),
			mem("alice", "c", "turn", session("s"), seq(6)), mem("alice", "d", "turn", session("s"), seq(4)))
		got, err := b.s.Neighbors(b.ctx, mnemotype.Scope{Profile: "alice"}, []string{"a"}, 1)
		if err != nil {
			t.Fatal(err)
		}
		want := []store.Neighbor{{ID: "b", Of: "a", Distance: 1}, {ID: "d", Of: "a", Distance: 1}, {ID: "c", Of: "a", Distance: 1}}
		if !slices.Equal(got, want) {
			t.Errorf("Neighbors = %v, want %v", got, want)
		}
	})
}

// sameNeighbors compares neighbour lists as sets.
func sameNeighbors(got, want []store.Neighbor) bool {
	if len(got) != len(want) {
		return false
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			return false
		}
	}
	return true
}

// ExerciseContext is the conformance group of the context field, for
// stores configured to index each memory with the turn before it in its
// session: open must return such stores. A turn is then found by the words
// of the turn before it (weighted by FieldWeights.Context), below that
// turn, whatever order the turns arrive in, and follows that turn's edits
// and deletion.
func ExerciseContext(t *testing.T, open OpenFunc) {
	b := setup(t, open)
	b.insert(fillers("alice", 6)...)
	// Out of order: the answer first, then the question before it.
	b.insert(mem("alice", "answer", "Yes, last Tuesday!", session("s1"), seq(2)), mem("alice", "later", "unrelated", session("s1"), seq(3)))
	b.insert(mem("alice", "question", "Did you go to the support group?", session("s1"), seq(1)))
	withContext := store.FieldWeights{Content: 1, Context: 0.5}
	if got := search(b, store.FieldWeights{}, "support", "group"); !slices.Equal(got, []string{"question"}) {
		t.Errorf("content alone: %v, want [question]", got)
	}
	if got := search(b, withContext, "support", "group"); !slices.Equal(got, []string{"question", "answer"}) {
		t.Errorf("with context: %v, want [question answer]: the answer is found by the turn before it, below it", got)
	}
	// In one batch, out of order: the answer's context is the question
	// inserted after it.
	b.insert(mem("alice", "answer2", "Sure, on Friday", session("s2"), seq(2)), mem("alice", "question2", "Will you come to the zumba lesson?", session("s2"), seq(1)))
	if got := search(b, withContext, "zumba"); !slices.Equal(got, []string{"question2", "answer2"}) {
		t.Errorf("a batch out of order: %v, want [question2 answer2]", got)
	}
	if _, err := b.s.Update(b.ctx, store.UpdateParams{Profile: "alice", ID: "question", Content: ptr("Did you visit the pottery class?")}); err != nil {
		t.Fatal(err)
	}
	if got := search(b, withContext, "support", "group"); len(got) != 0 {
		t.Errorf("after the question changed: %v, want none", got)
	}
	if got := search(b, withContext, "pottery"); !slices.Equal(got, []string{"question", "answer"}) {
		t.Errorf("the new question: %v, want [question answer]", got)
	}
	if err := b.s.Delete(b.ctx, "alice", "question"); err != nil {
		t.Fatal(err)
	}
	if got := search(b, withContext, "pottery"); len(got) != 0 {
		t.Errorf("after the question was deleted: %v, want none", got)
	}
	t.Run("TextFeed", func(t *testing.T) { exerciseTextFeed(t, open) })
	t.Run("TextFeedFollowsWrites", func(t *testing.T) { exerciseTextFeedFollowsWrites(t, open) })
}

// exerciseTextFeedFollowsWrites: through random writes of every kind that
// moves turns (inserts out of order, content, session, seq and actor
// updates, deletions one by one and by session), the texts of an index
// kept by applying each change set read with Text are always those of the
// whole feed read afresh.
func exerciseTextFeedFollowsWrites(t *testing.T, open OpenFunc) {
	b := setup(t, open)
	r := rand.New(rand.NewPCG(3, 4))
	type text struct {
		content, actor, context string
		order                   int64
	}
	read := func(since int64) store.ChangeSet {
		t.Helper()
		cs, err := b.s.Changes(b.ctx, store.ChangesParams{Profile: "alice", Since: since, Text: true})
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	apply := func(state map[string]text, cs store.ChangeSet) {
		for _, id := range cs.Deleted {
			delete(state, id)
		}
		for i, m := range cs.Upserts {
			state[m.ID] = text{m.Content, m.Actor, cs.Texts[i].Context, cs.Texts[i].Order}
		}
	}
	kept, since := map[string]text{}, int64(0)
	n := 0
	sessions := []string{"s1", "s2", ""}
	for step := range 60 {
		switch k := r.IntN(8); {
		case k < 3 || n < 5:
			var batch []mnemotype.Memory
			for range 1 + r.IntN(3) {
				n++
				m := mem("alice", fmt.Sprint("m", n), fmt.Sprint("turn ", n), session(sessions[r.IntN(3)]))
				if r.IntN(3) == 0 {
					m.Seq = int64(1 + r.IntN(n))
				}
				batch = append(batch, m)
			}
			b.insert(batch...)
		case k == 3:
			_, err := b.s.Update(b.ctx, store.UpdateParams{Profile: "alice", ID: fmt.Sprint("m", 1+r.IntN(n)), Content: ptr(fmt.Sprint("changed ", step))})
			ignoreNotFound(t, err)
		case k == 4:
			_, err := b.s.Update(b.ctx, store.UpdateParams{Profile: "alice", ID: fmt.Sprint("m", 1+r.IntN(n)), Session: ptr(sessions[r.IntN(3)])})
			ignoreNotFound(t, err)
		case k == 5:
			_, err := b.s.Update(b.ctx, store.UpdateParams{Profile: "alice", ID: fmt.Sprint("m", 1+r.IntN(n)), Seq: ptr(int64(1 + r.IntN(n)))})
			ignoreNotFound(t, err)
		case k == 6:
			ignoreNotFound(t, b.s.Delete(b.ctx, "alice", fmt.Sprint("m", 1+r.IntN(n))))
		default:
			if _, err := b.s.DeleteMatching(b.ctx, store.DeleteParams{Profile: "alice", Session: sessions[r.IntN(2)]}); err != nil {
				t.Fatal(err)
			}
		}
		cs := read(since)
		apply(kept, cs)
		since = cs.Seq
		fresh := map[string]text{}
		apply(fresh, read(0))
		if !maps.Equal(kept, fresh) {
			t.Fatalf("step %d: the texts kept from the feed differ from the feed read afresh:\n kept %v\nfresh %v", step, kept, fresh)
		}
	}
}

func ignoreNotFound(t *testing.T, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, mnemotype.ErrNotFound) {
		t.Fatal(err)
	}
}

// exerciseTextFeed: the change feed read with Text carries each memory's
// content, its context (the previous turn: the store indexes one) and its
// order, and lists again the memories whose context a write changed.
func exerciseTextFeed(t *testing.T, open OpenFunc) {
	b := setup(t, open)
	b.insert(mem("alice", "a", "Alpha", session("s")), mem("alice", "b", "Bravo", session("s")), mem("alice", "c", "Charlie", session("s")),
		mem("alice", "z", "Zulu"))
	b.insert(mem("bob", "x", "X-ray", session("s")))
	type text struct{ content, context string }
	feed := func(since int64) (map[string]text, store.ChangeSet) {
		t.Helper()
		cs, err := b.s.Changes(b.ctx, store.ChangesParams{Profile: "alice", Since: since, Text: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(cs.Texts) != len(cs.Upserts) {
			t.Fatalf("%d texts for %d upserts", len(cs.Texts), len(cs.Upserts))
		}
		got := map[string]text{}
		for i, m := range cs.Upserts {
			got[m.ID] = text{m.Content, cs.Texts[i].Context}
		}
		return got, cs
	}
	got, cs := feed(0)
	want := map[string]text{"a": {"Alpha", ""}, "b": {"Bravo", "Alpha"}, "c": {"Charlie", "Bravo"}, "z": {"Zulu", ""}}
	if !maps.Equal(got, want) {
		t.Errorf("the feed from 0: %v, want %v", got, want)
	}
	order := map[string]int64{}
	for i, m := range cs.Upserts {
		order[m.ID] = cs.Texts[i].Order
	}
	if !(order["a"] < order["b"] && order["b"] < order["c"] && order["c"] < order["z"]) {
		t.Errorf("orders %v: want the insertion order", order)
	}
	// Without Text, no content and no texts.
	if plain := b.changes("alice", 0); len(plain.Texts) != 0 || plain.Upserts[0].Content != "" {
		t.Errorf("the feed without Text: %d texts, content %q", len(plain.Texts), plain.Upserts[0].Content)
	}
	// A page of the feed carries its own upserts' texts.
	page, err := b.s.Changes(b.ctx, store.ChangesParams{Profile: "alice", Text: true, Limit: 2})
	if err != nil || len(page.Upserts) != 2 || len(page.Texts) != 2 || !page.More {
		t.Fatalf("a page of 2: %d upserts, %d texts, more %v, err %v", len(page.Upserts), len(page.Texts), page.More, err)
	}
	since := cs.Seq
	if _, err := b.s.Update(b.ctx, store.UpdateParams{Profile: "alice", ID: "b", Content: ptr("Bingo")}); err != nil {
		t.Fatal(err)
	}
	got, cs = feed(since)
	if want := map[string]text{"b": {"Bingo", "Alpha"}, "c": {"Charlie", "Bingo"}}; !maps.Equal(got, want) {
		t.Errorf("after b's content changed: %v, want %v (c's context changed with it)", got, want)
	}
	since = cs.Seq
	if err := b.s.Delete(b.ctx, "alice", "a"); err != nil {
		t.Fatal(err)
	}
	got, cs = feed(since)
	if want := map[string]text{"b": {"Bingo", ""}}; !maps.Equal(got, want) || !slices.Equal(cs.Deleted, []string{"a"}) {
		t.Errorf("after a was deleted: %v / deleted %v, want %v / [a] (b lost its context)", got, cs.Deleted, want)
	}
	since = cs.Seq
	// A turn written before stored ones: the one after it is listed again.
	b.insert(mem("alice", "a2", "Again", session("s"), seq(1)))
	got, _ = feed(since)
	if want := map[string]text{"a2": {"Again", ""}, "b": {"Bingo", "Again"}}; !maps.Equal(got, want) {
		t.Errorf("after a turn was inserted before b: %v, want %v", got, want)
	}
}

// search returns the ids of alice's memories matching any of terms in the
// fields weighted by w, best first.
func search(b *bundle, w store.FieldWeights, terms ...string) []string {
	b.t.Helper()
	return b.lexical(store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: store.MatchQuery{Terms: terms}, Fields: w})
}
