package dense_test

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/dense"
	"github.com/mnemo-dev/mnemo/internal/testenv"
	"github.com/mnemo-dev/mnemo/vector"
)

// TestCatalog_Graph: a profile past GraphMin gets its graph in the
// background (searches meanwhile scan what is not yet linked), its snapshot
// is written with the graph once it is whole, and a new process restores
// the graph instead of building it; it links only the memories written
// after the snapshot. Answers stay those of an exact catalog throughout.
func TestCatalog_Graph(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path, dir := filepath.Join(t.TempDir(), "mnemo.db"), t.TempDir()
	var logs testenv.SyncBuffer
	opt := dense.Options{Dir: dir, PageSize: 128, GraphMin: 500, ANN: vector.ANN{ExactBelow: 10, Ef: 2000},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	st1 := openPath(t, path)
	if err := st1.Insert(ctx, mixedKinds(memories("alice", 1000, 5))); err != nil {
		t.Fatal(err)
	}
	c1 := dense.NewCatalog(st1, opt)
	sameAsStore(t, "while the graph grows", c1, st1)
	stats := waitLinked(t, c1, "alice")
	if stats.Linked != 1000 {
		t.Fatalf("graph holds %d memories, want 1000: %+v", stats.Linked, stats)
	}
	sameAsStore(t, "with the graph", c1, st1)
	if c1.Walks() == 0 {
		t.Fatal("no search walked the graph")
	}
	// The search says how it searched.
	for _, tc := range []struct {
		scope []string
		want  string
	}{
		{nil, "walked the HNSW graph (ef 2000)"},
		{[]string{"s3"}, "scanned 50 memories exactly"},
	} {
		var how dense.How
		q := query("alice")
		q.Scope.Sessions, q.How = tc.scope, &how
		if _, err := c1.Search(ctx, q); err != nil {
			t.Fatal(err)
		}
		if how.String() != tc.want {
			t.Errorf("sessions %v: How %q, want %q", tc.scope, how, tc.want)
		}
	}
	waitLog(t, &logs, "snapshot written")
	c1.Close()

	if err := st1.Insert(ctx, memories("alice", 1030, 5)[1000:]); err != nil {
		t.Fatal(err)
	}
	st2 := openPath(t, path)
	c2 := dense.NewCatalog(st2, dense.Options{Dir: dir, GraphMin: -1, ANN: opt.ANN})
	defer c2.Close()
	s2, err := c2.Profile(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if s2.Linked != 1000 || s2.Unlinked != 30 {
		t.Fatalf("restored: %d linked, %d unlinked; want 1000 and the 30 written since", s2.Linked, s2.Unlinked)
	}
	sameAsStore(t, "restored graph and a tail", c2, st2.Store)

	// A one-shot process leaves the graph out, scans, and does not write
	// its snapshot over the one with the graph, however far it caught up.
	before, err := os.ReadFile(dense.SnapshotPath(dir, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	if err := st1.Insert(ctx, memories("alice", 1300, 5)[1030:]); err != nil {
		t.Fatal(err)
	}
	c3 := dense.NewCatalog(openPath(t, path), dense.Options{Dir: dir, SaveEvery: 10, NoBackground: true, ANN: opt.ANN})
	s3, err := c3.Profile(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if s3.Linked != 0 || s3.Unlinked != 1300 {
		t.Fatalf("one-shot restore: %d linked, %d unlinked; want 0 and 1300", s3.Linked, s3.Unlinked)
	}
	sameAsStore(t, "one-shot restore", c3, st1.Store)
	c3.Close()
	if after, _ := os.ReadFile(dense.SnapshotPath(dir, "alice")); !bytes.Equal(before, after) {
		t.Fatal("the one-shot process wrote over the snapshot holding the graph")
	}
}

// TestCatalog_CloseStopsBuilder: Close returns with a graph half built.
func TestCatalog_CloseStopsBuilder(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	if err := st.Insert(t.Context(), memories("alice", 3000, 1)); err != nil {
		t.Fatal(err)
	}
	c := dense.NewCatalog(st, dense.Options{GraphMin: 1})
	s, err := c.Profile(t.Context(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	after, _ := c.Profile(t.Context(), "alice")
	time.Sleep(50 * time.Millisecond)
	later, _ := c.Profile(t.Context(), "alice")
	if after.Linked != later.Linked || later.Unlinked == 0 {
		t.Fatalf("after Close the graph went on growing (%d, then %d linked of %d)", after.Linked, later.Linked, s.Embedded)
	}
}

// waitLinked waits for profile's graph to hold every embedded memory.
func waitLinked(t *testing.T, c *dense.Catalog, profile string) dense.Stats {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		s, err := c.Profile(t.Context(), profile)
		if err != nil {
			t.Fatal(err)
		}
		if s.Unlinked == 0 || time.Now().After(deadline) {
			return s
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitLog waits for the log to hold what.
func waitLog(t *testing.T, logs *testenv.SyncBuffer, what string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(logs.String(), what); {
		if time.Now().After(deadline) {
			t.Fatalf("no %q logged:\n%s", what, logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestCatalog_SmallBuildsLeaveTheSnapshot: once the graph is whole, a few
// writes linked by the builder count as that many changes toward the next
// snapshot instead of rewriting it each (found by review: every write to a
// large profile rewrote its whole snapshot).
func TestCatalog_SmallBuildsLeaveTheSnapshot(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path, dir := filepath.Join(t.TempDir(), "mnemo.db"), t.TempDir()
	var logs testenv.SyncBuffer
	st := openPath(t, path)
	all := memories("alice", 1010, 5)
	if err := st.Insert(ctx, all[:1000]); err != nil {
		t.Fatal(err)
	}
	c := dense.NewCatalog(st, dense.Options{Dir: dir, GraphMin: 500, SaveEvery: 1 << 20,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	defer c.Close()
	if _, err := c.Search(ctx, query("alice")); err != nil {
		t.Fatal(err)
	}
	waitLinked(t, c, "alice")
	waitLog(t, &logs, "snapshot written")
	for i := 1000; i < 1010; i++ {
		if err := st.Insert(ctx, all[i:i+1]); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Search(ctx, query("alice")); err != nil {
			t.Fatal(err)
		}
		if s := waitLinked(t, c, "alice"); s.Linked != i+1 {
			t.Fatalf("graph holds %d, want %d", s.Linked, i+1)
		}
	}
	c.Close()
	if n := strings.Count(logs.String(), "snapshot written"); n != 1 {
		t.Fatalf("the snapshot was written %d times, want once (for the whole graph):\n%s", n, logs.String())
	}
}
