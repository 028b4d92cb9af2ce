package dense

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store/sqlitestore"
)

// TestEvict_QueuedSnapshot: a snapshot queued before Evict (a profile
// deleted while its index loaded) is not written after it, whichever of
// the two takes the profile's turn first.
func TestEvict_QueuedSnapshot(t *testing.T) {
	t.Parallel()
	st, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "mnemo.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Insert(t.Context(), []mnemotype.Memory{{ID: "a", Profile: "alice", Content: "x", Kind: mnemotype.KindEpisodic,
		Importance: mnemotype.DefaultImportance, Embedding: []float32{1, 0}, EmbeddingModel: "m"}}); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		dir := t.TempDir()
		c := NewCatalog(st, Options{Dir: dir, SaveEvery: 1})
		if _, err := c.index(t.Context(), "alice"); err != nil { // loads, and writes a first snapshot
			t.Fatal(err)
		}
		c.saves.Wait()
		e := c.use("alice")
		if err := e.take(t.Context()); err != nil { // a catch-up in progress
			t.Fatal(err)
		}
		e.unsaved = 1
		c.maybeSave(t.Context(), e) // queued behind the catch-up
		done := make(chan struct{})
		go func() { c.Evict("alice"); close(done) }()
		if i%2 == 0 {
			// Evict has dropped the entry and waits for the turn, which
			// the queued writer may take first.
			for dropped := false; !dropped; {
				c.mu.Lock()
				dropped = c.profiles["alice"] == nil
				c.mu.Unlock()
			}
		}
		e.release()
		<-done
		c.Close()
		if _, err := os.Stat(SnapshotPath(dir, "alice")); !os.IsNotExist(err) {
			t.Fatalf("round %d: a snapshot exists after Evict: %v", i, err)
		}
	}
}
