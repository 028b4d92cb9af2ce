package dense_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/dense"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/store/sqlitestore"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// memories returns n memories of profile with random 16-d embeddings by
// model "m".
func memories(profile string, n int, seed uint64) []mnemotype.Memory {
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]mnemotype.Memory, n)
	for i := range out {
		v := make([]float32, 16)
		for j := range v {
			v[j] = float32(r.NormFloat64())
		}
		out[i] = mnemotype.Memory{ID: fmt.Sprintf("%s-%05d", profile, i), Profile: profile, Content: "text",
			Session: fmt.Sprintf("s%d", i%20), Kind: mnemotype.KindEpisodic, Importance: mnemotype.DefaultImportance,
			CreatedAt: t0, OccurredAt: t0, AccessedAt: t0, Embedding: v, EmbeddingModel: "m"}
	}
	return out
}

func query(profile string) dense.Query {
	v := make([]float32, 16)
	v[0], v[3] = 1, -0.5
	return dense.Query{Vector: v, Model: "m", Scope: mnemotype.Scope{Profile: profile}, K: 10}
}

// countingStore counts the catalog's reads of the change feed and can hold
// them until released.
type countingStore struct {
	*sqlitestore.Store
	pages   atomic.Int64
	hold    chan struct{} // when not nil, Changes waits for it to close
	entered chan struct{} // receives once per Changes call while held
}

func (c *countingStore) Changes(ctx context.Context, p store.ChangesParams) (store.ChangeSet, error) {
	c.pages.Add(1)
	if c.hold != nil {
		c.entered <- struct{}{}
		<-c.hold
	}
	return c.Store.Changes(ctx, p)
}

func TestCatalog_LoadsInPagesOnce(t *testing.T) {
	t.Parallel()
	st := &countingStore{Store: openStore(t), hold: make(chan struct{}), entered: make(chan struct{}, 100)}
	if err := st.Insert(t.Context(), memories("alice", 1000, 1)); err != nil {
		t.Fatal(err)
	}
	c := dense.NewCatalog(st, dense.Options{PageSize: 100})
	// Eight callers ask for the profile at once; one loads it, the others
	// wait, and one who gives up waiting gets its context's error.
	var wg sync.WaitGroup
	results := make([][]mnemotype.Hit, 8)
	for i := range results {
		wg.Go(func() {
			h, err := c.Search(t.Context(), query("alice"))
			if err != nil {
				t.Error(err)
			}
			results[i] = h
		})
	}
	<-st.entered // the load has begun
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	if _, err := c.Search(ctx, query("alice")); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a caller waiting past its deadline: %v, want DeadlineExceeded", err)
	}
	go func() {
		for range st.entered {
		}
	}()
	close(st.hold)
	wg.Wait()
	close(st.entered)
	// 1000 memories in pages of 100: ten full pages and one that ends the
	// feed.
	if got := st.pages.Load(); got != 11 {
		t.Errorf("the load read %d pages, want 11 (one load for every caller)", got)
	}
	for i := range results {
		if fmt.Sprint(results[i]) != fmt.Sprint(results[0]) || len(results[i]) != 10 {
			t.Fatalf("caller %d got %v, caller 0 %v", i, results[i], results[0])
		}
	}
	// Caught up: the next search reads no page at all.
	before := st.pages.Load()
	if _, err := c.Search(t.Context(), query("alice")); err != nil {
		t.Fatal(err)
	}
	if st.pages.Load() != before {
		t.Errorf("a search with nothing new read the change feed")
	}
}

func TestCatalog_Budget(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	for i, p := range []string{"alice", "bob", "carol"} {
		if err := st.Insert(t.Context(), memories(p, 2000, uint64(i))); err != nil {
			t.Fatal(err)
		}
	}
	// Measure one profile's index, then allow a little more than two.
	probe := dense.NewCatalog(st, dense.Options{})
	s, err := probe.Profile(t.Context(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	if s.Memories != 2000 || s.Embedded != 2000 || s.Bytes < 2000*16*4 {
		t.Fatalf("alice's stats = %+v", s)
	}
	c := dense.NewCatalog(st, dense.Options{Budget: s.Bytes*2 + s.Bytes/2})
	want := map[string][]mnemotype.Hit{}
	for _, p := range []string{"alice", "bob"} {
		if want[p], err = c.Search(t.Context(), query(p)); err != nil {
			t.Fatal(err)
		}
	}
	if n, _, ev := c.Usage(); n != 2 || ev != 0 {
		t.Fatalf("two profiles within the budget: held %d, evicted %d", n, ev)
	}
	// alice is used again, so bob is the least recently used when carol
	// comes in.
	if _, err := c.Search(t.Context(), query("alice")); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Search(t.Context(), query("carol")); err != nil {
		t.Fatal(err)
	}
	n, bytes, ev := c.Usage()
	if n != 2 || ev != 1 || bytes > s.Bytes*2+s.Bytes/2 {
		t.Fatalf("after a third profile: held %d (%d bytes), evicted %d; want 2 within the budget, 1 evicted", n, bytes, ev)
	}
	// bob was evicted, not lost: asked again, it loads and answers the same.
	got, err := c.Search(t.Context(), query("bob"))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want["bob"]) {
		t.Errorf("bob after eviction: %v, want %v", got, want["bob"])
	}
	if _, _, ev := c.Usage(); ev != 2 {
		t.Errorf("reloading bob evicted %d in all, want 2 (alice now the least recent)", ev)
	}
	// A profile larger than the budget alone is still served.
	tiny := dense.NewCatalog(st, dense.Options{Budget: 1})
	if got, err := tiny.Search(t.Context(), query("alice")); err != nil || len(got) != 10 {
		t.Errorf("a profile over the budget: %d hits, %v", len(got), err)
	}
	c.Evict("bob")
	if n, _, _ := c.Usage(); n != 1 {
		t.Errorf("after Evict: %d profiles held, want 1", n)
	}
}

// TestCatalog_TwoProcesses: two stores opened on one file stand for two
// processes; each catalog sees the other's writes on its next call.
func TestCatalog_TwoProcesses(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	open := func() *sqlitestore.Store {
		st, err := sqlitestore.Open(t.Context(), path, sqlitestore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	a, b := open(), open()
	ca, cb := dense.NewCatalog(a, dense.Options{PageSize: 50}), dense.NewCatalog(b, dense.Options{PageSize: 50})
	mems := memories("alice", 300, 7)
	if err := a.Insert(t.Context(), mems[:200]); err != nil {
		t.Fatal(err)
	}
	for _, c := range []*dense.Catalog{ca, cb} {
		if s, err := c.Profile(t.Context(), "alice"); err != nil || s.Memories != 200 {
			t.Fatalf("after 200 writes through a: %+v, %v", s, err)
		}
	}
	// b writes and deletes; a sees both on its next call, and so does b.
	if err := b.Insert(t.Context(), mems[200:]); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(t.Context(), "alice", mems[0].ID); err != nil {
		t.Fatal(err)
	}
	twin := query("alice")
	for _, c := range []*dense.Catalog{ca, cb} {
		s, err := c.Profile(t.Context(), "alice")
		if err != nil || s.Memories != 299 {
			t.Fatalf("after b's writes: %+v, %v; want 299 memories", s, err)
		}
		hits, err := c.Score(t.Context(), twin, []string{mems[0].ID, mems[250].ID})
		if err != nil || len(hits) != 1 || hits[0].ID != mems[250].ID {
			t.Errorf("Score(deleted, written by b) = %v, %v", hits, err)
		}
	}
}

// TestCatalog_CatchesUpAfterAFailedLoad: a load that fails part way keeps
// the pages it applied, and the next call completes it; the index then
// equals one built in one go.
func TestCatalog_CatchesUpAfterAFailedLoad(t *testing.T) {
	t.Parallel()
	st := &failingStore{Store: openStore(t), failAt: 3}
	if err := st.Insert(t.Context(), memories("alice", 500, 3)); err != nil {
		t.Fatal(err)
	}
	c := dense.NewCatalog(st, dense.Options{PageSize: 100})
	if _, err := c.Search(t.Context(), query("alice")); !errors.Is(err, errInjected) {
		t.Fatalf("first search = %v, want the injected failure", err)
	}
	got, err := c.Search(t.Context(), query("alice"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := dense.NewCatalog(st.Store, dense.Options{}).Search(t.Context(), query("alice"))
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("after the failed load: %v, want %v", got, want)
	}
	// Two pages and the failure, then pages 3, 4, 5 and the empty end: the
	// two pages applied are not read again.
	if st.calls != 7 {
		t.Errorf("change feed read %d times, want 7", st.calls)
	}
}

var errInjected = errors.New("injected failure")

type failingStore struct {
	*sqlitestore.Store
	mu     sync.Mutex
	calls  int
	failAt int // the call that fails (1-based)
}

func (f *failingStore) Changes(ctx context.Context, p store.ChangesParams) (store.ChangeSet, error) {
	f.mu.Lock()
	f.calls++
	fail := f.calls == f.failAt
	f.mu.Unlock()
	if fail {
		return store.ChangeSet{}, errInjected
	}
	return f.Store.Changes(ctx, p)
}
