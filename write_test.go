package mnemo_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo"
)

// TestEngine_WriteIsIdempotentByID: a write repeating a stored id with the
// same memory is a replay (nothing written, the stored memory returned);
// the same id with anything else is a conflict naming the field, and
// nothing of the write is stored.
func TestEngine_WriteIsIdempotentByID(t *testing.T) {
	t.Parallel()
	e, _ := setup(t)
	ctx := t.Context()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	first := mnemo.Input{ID: "m1", Profile: "me", Content: "kayaks on the lake", Kind: "semantic", Project: "p", Session: "s",
		Importance: ptr(0.8), Metadata: json.RawMessage(`{"a": 1, "b": [1, 2]}`)}
	stored := remember(t, e, first)
	timed := remember(t, e, mnemo.Input{ID: "m2", Profile: "me", Content: "canoes", CreatedAt: at})

	replays := []struct {
		name string
		ins  []mnemo.Input
		want []bool
	}{
		{"SameInput", []mnemo.Input{first}, []bool{true}},
		{"MetadataSpacing", []mnemo.Input{func() mnemo.Input { in := first; in.Metadata = json.RawMessage(`{"a":1,"b":[1,2]}`); return in }()}, []bool{true}},
		{"IDWithSpaces", []mnemo.Input{func() mnemo.Input { in := first; in.ID = " m1 "; return in }()}, []bool{true}},
		{"CreationTimeGiven", []mnemo.Input{{ID: "m2", Profile: "me", Content: "canoes", CreatedAt: at}}, []bool{true}},
		{"CreationTimeDefaulted", []mnemo.Input{{ID: "m2", Profile: "me", Content: "canoes"}}, []bool{true}},
		{"OtherProfileIsNew", []mnemo.Input{func() mnemo.Input { in := first; in.Profile = "you"; return in }()}, []bool{false}},
		{"BatchWithANewOne", []mnemo.Input{first, {ID: "m3", Profile: "me", Content: "sailing"}}, []bool{true, false}},
	}
	for _, c := range replays {
		t.Run(c.name, func(t *testing.T) {
			res, err := e.Write(ctx, c.ins)
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
			created := 0
			for i, r := range res.Replayed {
				if r != c.want[i] {
					t.Errorf("Replayed = %v, want %v", res.Replayed, c.want)
				}
				if !r {
					created++
				}
			}
			if res.Created != created || res.AllReplayed() != (created == 0) {
				t.Errorf("Created = %d AllReplayed = %v, want %d created", res.Created, res.AllReplayed(), created)
			}
			for i, r := range res.Replayed {
				if !r {
					continue
				}
				want := stored
				if res.Memories[i].ID == "m2" {
					want = timed
				}
				if got := res.Memories[i]; got.ID != want.ID || !got.CreatedAt.Equal(want.CreatedAt) || got.Content != want.Content {
					t.Errorf("replayed memory %d = %+v, want the stored %+v", i, got, want)
				}
			}
		})
	}
	if n, _ := e.Count(ctx, "me"); n != 3 {
		t.Fatalf("replays wrote memories: count %d, want 3", n)
	}

	conflicts := []struct {
		name  string
		ins   []mnemo.Input
		field string
	}{
		{"Content", []mnemo.Input{{ID: "m1", Profile: "me", Content: "something else"}}, "content"},
		{"Kind", []mnemo.Input{func() mnemo.Input { in := first; in.Kind = "episodic"; return in }()}, "kind"},
		{"Project", []mnemo.Input{func() mnemo.Input { in := first; in.Project = "q"; return in }()}, "project"},
		{"Session", []mnemo.Input{func() mnemo.Input { in := first; in.Session = ""; return in }()}, "session"},
		{"Importance", []mnemo.Input{func() mnemo.Input { in := first; in.Importance = nil; return in }()}, "importance"},
		{"Metadata", []mnemo.Input{func() mnemo.Input { in := first; in.Metadata = json.RawMessage(`{"a": 2}`); return in }()}, "metadata"},
		{"CreationTime", []mnemo.Input{{ID: "m2", Profile: "me", Content: "canoes", CreatedAt: at.Add(time.Second)}}, "creation time"},
		{"InABatch", []mnemo.Input{{ID: "m9", Profile: "me", Content: "new"}, {ID: "m1", Profile: "me", Content: "other"}}, "memory 1: "},
	}
	for _, c := range conflicts {
		t.Run("Conflict"+c.name, func(t *testing.T) {
			_, err := e.Write(ctx, c.ins)
			if !errors.Is(err, mnemo.ErrExists) || !errors.Is(err, mnemo.ErrInvalid) {
				t.Fatalf("err = %v, want ErrExists and ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), c.field) || !strings.Contains(err.Error(), `"m`) {
				t.Errorf("err = %q, want it to name the id and %q", err, c.field)
			}
		})
	}
	if n, _ := e.Count(ctx, "me"); n != 3 {
		t.Fatalf("conflicting writes wrote memories: count %d, want 3", n)
	}
}

// TestEngine_ConcurrentRetries: retries of one write racing each other
// (each looks for the id before any has stored it) store it once, and each
// gets the memory.
func TestEngine_ConcurrentRetries(t *testing.T) {
	t.Parallel()
	stub := newStub("stub", 8)
	var gate sync.WaitGroup
	const n = 6
	gate.Add(n)
	stub.setEmbed(func(ctx context.Context, texts []string) ([][]float32, error) {
		gate.Done()
		gate.Wait() // every writer has looked for the id before any inserts it
		return stubVectors(texts, 8), nil
	})
	e, err := mnemo.Open(filepath.Join(t.TempDir(), "mnemo.db"), &mnemo.Config{Embedder: stub, AccessFlushInterval: -1,
		WriteEmbedTimeout: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var wg sync.WaitGroup
	results := make([]*mnemo.WriteResult, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			results[i], errs[i] = e.Write(t.Context(), []mnemo.Input{{ID: "retried", Profile: "me", Content: "once only"}})
		})
	}
	wg.Wait()
	created := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("writer %d: %v", i, errs[i])
		}
		created += results[i].Created
		if m := results[i].Memories[0]; m.ID != "retried" || m.Content != "once only" {
			t.Errorf("writer %d got %+v", i, m)
		}
	}
	if created != 1 {
		t.Errorf("%d writers created the memory, want 1", created)
	}
	if c, _ := e.Count(t.Context(), "me"); c != 1 {
		t.Errorf("count = %d, want 1", c)
	}
}

// TestEngine_PrepareThenCommit: a write prepared (validated, embedded) is
// stored by Commit as Write stores it; a memory another writer stored
// under one of its ids in between is a replay, or a conflict when it
// differs; a prepared write is committed once; nothing is committed after
// Close.
func TestEngine_PrepareThenCommit(t *testing.T) {
	t.Parallel()
	e, _ := setup(t)
	ctx := t.Context()
	ins := []mnemo.Input{{ID: "a", Profile: "me", Content: "first"}, {ID: "b", Profile: "me", Content: "second"}}
	p, err := e.Prepare(ctx, ins)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := e.Count(ctx, "me"); n != 0 {
		t.Fatalf("Prepare stored %d memories", n)
	}
	remember(t, e, ins[1]) // another writer, in between
	res, err := e.Commit(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Created != 1 || !res.Replayed[1] || res.Replayed[0] || len(res.Memories[0].Embedding) == 0 {
		t.Errorf("Commit = created %d, replayed %v, embedding of a %d", res.Created, res.Replayed, len(res.Memories[0].Embedding))
	}
	if _, err := e.Commit(ctx, p); !errors.Is(err, mnemo.ErrInvalid) {
		t.Errorf("second Commit = %v, want ErrInvalid", err)
	}
	if _, err := e.Commit(ctx, nil); !errors.Is(err, mnemo.ErrInvalid) {
		t.Errorf("Commit(nil) = %v, want ErrInvalid", err)
	}

	p, err = e.Prepare(ctx, []mnemo.Input{{ID: "c", Profile: "me", Content: "third"}})
	if err != nil {
		t.Fatal(err)
	}
	remember(t, e, mnemo.Input{ID: "c", Profile: "me", Content: "something else"})
	if _, err := e.Commit(ctx, p); !errors.Is(err, mnemo.ErrExists) || !strings.Contains(err.Error(), "content") {
		t.Errorf("Commit over a different memory = %v, want ErrExists naming the content", err)
	}

	if _, err := e.Prepare(ctx, []mnemo.Input{{Profile: "me"}}); !errors.Is(err, mnemo.ErrInvalid) {
		t.Errorf("Prepare without content = %v, want ErrInvalid", err)
	}
	p, err = e.Prepare(ctx, []mnemo.Input{{ID: "d", Profile: "me", Content: "fourth"}})
	if err != nil {
		t.Fatal(err)
	}
	e.Close()
	if _, err := e.Commit(ctx, p); !errors.Is(err, mnemo.ErrClosed) {
		t.Errorf("Commit after Close = %v, want ErrClosed", err)
	}
}

// TestEngine_RememberReturnsTheMemoryAsStored: a turn written without a
// seq comes back with the seq the store gave it, as Get reads it, from
// Remember, RememberBatch and a replayed Write alike.
func TestEngine_RememberReturnsTheMemoryAsStored(t *testing.T) {
	t.Parallel()
	e, _ := setup(t)
	ctx := t.Context()
	first := remember(t, e, mnemo.Input{Profile: "me", Session: "s1", Content: "the first turn"})
	batch, err := e.RememberBatch(ctx, []mnemo.Input{{Profile: "me", Session: "s1", Content: "the second turn"},
		{Profile: "me", Session: "s1", Content: "a turn given its place", Seq: 7},
		{Profile: "me", Session: "s1", Content: "the turn after it"},
		{Profile: "me", Content: "a memory of no session", ID: "loose"}})
	if err != nil {
		t.Fatal(err)
	}
	got := append([]mnemo.Memory{first}, batch...)
	for i, want := range []int64{1, 2, 7, 8, 1} {
		stored, err := e.Get(ctx, "me", got[i].ID)
		if err != nil {
			t.Fatal(err)
		}
		if got[i].Seq != want || stored.Seq != want {
			t.Errorf("%q: returned seq %d, stored %d, want %d", got[i].Content, got[i].Seq, stored.Seq, want)
		}
	}
	res, err := e.Write(ctx, []mnemo.Input{{Profile: "me", Content: "a memory of no session", ID: "loose"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Replayed[0] || res.Memories[0].Seq != 1 {
		t.Errorf("replayed write: replayed %v, seq %d, want true and 1", res.Replayed[0], res.Memories[0].Seq)
	}
}
