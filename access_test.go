package mnemo

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/store/sqlitestore"
)

// slowAccess holds RecordAccess until release is closed, once started is
// signalled.
type slowAccess struct {
	store.Store
	started chan struct{}
	release chan struct{}
}

func (s *slowAccess) RecordAccess(ctx context.Context, acc []store.Access) error {
	if s.release != nil {
		s.started <- struct{}{}
		<-s.release
	}
	return s.Store.RecordAccess(ctx, acc)
}

func accessStore(t *testing.T) store.Store {
	t.Helper()
	st, err := sqlitestore.Open(t.Context(), filepath.Join(t.TempDir(), "mnemo.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if err := st.Insert(t.Context(), []mnemotype.Memory{{ID: "m", Profile: "p", Content: "x", Kind: mnemotype.KindEpisodic,
		Importance: 0.5, CreatedAt: now, OccurredAt: now, AccessedAt: now}}); err != nil {
		t.Fatal(err)
	}
	return st
}

func count(t *testing.T, tr *tracker, st store.Store) int64 {
	t.Helper()
	sig, err := tr.signals(t.Context(), st, "p", []string{"m", "gone"})
	if err != nil {
		t.Fatal(err)
	}
	if len(sig) != 1 {
		t.Fatalf("signals = %v, want m alone", sig)
	}
	return sig["m"].AccessCount
}

// TestTracker_Signals: the signals a recall reads count every access of
// this process, written or pending, once.
func TestTracker_Signals(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := &slowAccess{Store: accessStore(t)}
	tr := newTracker(st, quiet, 0)
	at := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	tr.record("p", at, []string{"m", "m"})
	tr.record("other", at, []string{"m"})
	if got := count(t, tr, st); got != 2 {
		t.Fatalf("pending accesses: count %d, want 2", got)
	}
	sig, _ := tr.signals(t.Context(), st, "p", []string{"m"})
	if !sig["m"].AccessedAt.Equal(at) {
		t.Errorf("AccessedAt = %v, want the pending access's %v", sig["m"].AccessedAt, at)
	}
	if err := tr.flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := count(t, tr, st); got != 2 {
		t.Fatalf("after the write: count %d, want 2", got)
	}

	// While a write is in progress, a reader waits for it (it could not
	// tell whether its read of the store includes the batch), or gives up
	// with its context.
	st.started, st.release = make(chan struct{}), make(chan struct{})
	tr.record("p", at, []string{"m"})
	flushed := make(chan error)
	go func() { flushed <- tr.flush(context.Background()) }()
	<-st.started
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Millisecond)
	defer cancel()
	if _, err := tr.signals(ctx, st, "p", []string{"m"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("signals during a write, past its deadline: %v", err)
	}
	read := make(chan int64)
	go func() { read <- count(t, tr, st) }()
	time.Sleep(5 * time.Millisecond)
	close(st.release)
	if err := <-flushed; err != nil {
		t.Fatal(err)
	}
	if got := <-read; got != 3 {
		t.Errorf("read during the write: count %d, want 3", got)
	}
}

// hookedSignals runs hook after reading the store's signals, before
// returning them.
type hookedSignals struct {
	store.Store
	hook func()
}

func (h *hookedSignals) Signals(ctx context.Context, profile string, ids []string) (map[string]store.Signals, error) {
	sig, err := h.Store.Signals(ctx, profile, ids)
	if h.hook != nil {
		hook := h.hook
		h.hook = nil
		hook()
	}
	return sig, err
}

// TestTracker_WriteDuringRead: a batch written between the reader's read
// of the store and its read of what is pending is in neither; the reader
// notices and reads again.
func TestTracker_WriteDuringRead(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := accessStore(t)
	tr := newTracker(st, quiet, 0)
	tr.record("p", time.Now(), []string{"m", "m"})
	hooked := &hookedSignals{Store: st, hook: func() {
		if err := tr.flush(t.Context()); err != nil {
			t.Error(err)
		}
	}}
	if got := count(t, tr, hooked); got != 2 {
		t.Errorf("count %d, want 2 (the batch written during the read)", got)
	}
}

// TestTracker_SignalsNeverCountTwice: readers racing with writes of the
// batch see a count that never falls and ends exact.
func TestTracker_SignalsNeverCountTwice(t *testing.T) {
	t.Parallel()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st := accessStore(t)
	tr := newTracker(st, quiet, 0)
	const rounds = 60
	var wg sync.WaitGroup
	wg.Go(func() {
		for range rounds {
			tr.record("p", time.Now(), []string{"m"})
			if err := tr.flush(t.Context()); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 2 {
		wg.Go(func() {
			last := int64(0)
			for range rounds {
				sig, err := tr.signals(t.Context(), st, "p", []string{"m"})
				if err != nil {
					t.Error(err)
					return
				}
				n := sig["m"].AccessCount
				if n < last || n > rounds {
					t.Errorf("count went from %d to %d (%d recorded in all)", last, n, rounds)
					return
				}
				last = n
			}
		})
	}
	wg.Wait()
	if got := count(t, tr, st); got != rounds {
		t.Errorf("final count %d, want %d", got, rounds)
	}
}
