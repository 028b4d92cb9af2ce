package dense

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/internal/testenv"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store/sqlitestore"
)

func oneMemoryStore(t *testing.T) *sqlitestore.Store {
	t.Helper()
	st, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "mnemo.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	insertOne(t, st, "m0")
	return st
}

func insertOne(t *testing.T, st *sqlitestore.Store, id string) {
	t.Helper()
	if err := st.Insert(t.Context(), []mnemotype.Memory{{ID: id, Profile: "alice", Content: "x " + id, Kind: mnemotype.KindEpisodic,
		Importance: mnemotype.DefaultImportance, Embedding: []float32{1, 0}, EmbeddingModel: "m"}}); err != nil {
		t.Fatal(err)
	}
}

// TestCatalog_SnapshotBackoff: a snapshot write that fails (its folder
// cannot be created: a file is in the way) is not tried again at every
// catch-up, but after a pause that doubles with each failure up to
// saveRetryMax; one that succeeds ends the pauses.
func TestCatalog_SnapshotBackoff(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := oneMemoryStore(t)
	blocker := filepath.Join(t.TempDir(), "not-a-folder")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(blocker, "mnemo.db.index")
	var logs testenv.SyncBuffer
	c := NewCatalog(st, Options{Dir: dir, SaveEvery: 1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	defer c.Close()
	var clock atomic.Int64
	clock.Store(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	c.now = func() time.Time { return time.Unix(0, clock.Load()) }
	advance := func(d time.Duration) { clock.Add(int64(d)) }
	n := 0
	// change writes a memory and catches the index up, which writes a
	// snapshot when it may; it returns the failed writes so far.
	change := func() int {
		t.Helper()
		n++
		insertOne(t, st, "m"+strings.Repeat("x", n))
		if _, err := c.index(ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		c.saves.Wait()
		return strings.Count(logs.String(), "dense index snapshot not written")
	}
	if got := change(); got != 1 {
		t.Fatalf("%d failed writes after the first catch-up, want 1:\n%s", got, logs.String())
	}
	for range 20 {
		change()
	}
	if got := change(); got != 1 {
		t.Fatalf("%d failed writes after 22 catch-ups within the pause, want 1", got)
	}
	advance(saveRetryMin)
	if got := change(); got != 2 {
		t.Fatalf("%d failed writes once the first pause is over, want 2", got)
	}
	advance(saveRetryMin) // the second pause is twice as long
	if got := change(); got != 2 {
		t.Fatalf("%d failed writes halfway through the second pause, want 2", got)
	}
	advance(saveRetryMin)
	if got := change(); got != 3 {
		t.Fatalf("%d failed writes after the second pause, want 3", got)
	}
	// The pauses grow to saveRetryMax and no further.
	for want := 4; want < 30; want++ {
		advance(saveRetryMax)
		if got := change(); got != want {
			t.Fatalf("%d failed writes, want %d: a pause grew past saveRetryMax", got, want)
		}
	}
	c.mu.Lock()
	pause := c.saveAfter.Sub(c.now())
	c.mu.Unlock()
	if pause != saveRetryMax {
		t.Errorf("the pause after %d failures is %v, want saveRetryMax (%v)", 29, pause, saveRetryMax)
	}
	if !strings.Contains(logs.String(), "retry_after=10m0s") {
		t.Errorf("the failures do not log their pause:\n%s", logs.String())
	}

	// The folder can be made: the next write after the pause succeeds,
	// and a failure after it pauses saveRetryMin again.
	if err := os.Remove(blocker); err != nil {
		t.Fatal(err)
	}
	advance(saveRetryMax)
	if got := change(); got != 29 {
		t.Fatalf("%d failed writes with the folder possible, want 29", got)
	}
	if _, err := os.Stat(SnapshotPath(dir, "alice")); err != nil {
		t.Fatalf("no snapshot once the folder can be made: %v", err)
	}
	c.mu.Lock()
	fails := c.saveFails
	c.mu.Unlock()
	if fails != 0 {
		t.Errorf("%d failures in a row counted after a write that succeeded", fails)
	}
}
