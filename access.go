package mnemo

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
)

// tracker batches access statistics off the request path: Recall records
// what it returned in memory and a background loop writes the batch every
// interval; Close writes what is left, so nothing is lost on a clean
// shutdown.
type tracker struct {
	st       store.Store
	log      *slog.Logger
	interval time.Duration

	mu      sync.Mutex
	pending map[accessKey]*store.Access
	// writing is closed when the write in progress ends (nil when none);
	// written counts the writes ended. Readers of the signals use them to
	// tell whether the store's rows and pending, read at different times,
	// count a batch twice or not at all.
	writing chan struct{}
	written uint64
	// flushMu makes writes one at a time.
	flushMu sync.Mutex

	stop chan struct{}
	done chan struct{}
}

type accessKey struct{ profile, id string }

func newTracker(st store.Store, log *slog.Logger, interval time.Duration) *tracker {
	t := &tracker{st: st, log: log, interval: interval, pending: map[accessKey]*store.Access{},
		stop: make(chan struct{}), done: make(chan struct{})}
	if interval > 0 {
		go t.loop()
	} else {
		close(t.done)
	}
	return t
}

func (t *tracker) record(profile string, at time.Time, ids []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, id := range ids {
		k := accessKey{profile, id}
		a := t.pending[k]
		if a == nil {
			a = &store.Access{Profile: profile, ID: id}
			t.pending[k] = a
		}
		a.Count++
		if at.After(a.At) {
			a.At = at
		}
	}
}

func (t *tracker) loop() {
	defer close(t.done)
	tick := time.NewTicker(t.interval)
	defer tick.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-tick.C:
			if err := t.flush(context.Background()); err != nil {
				t.log.Warn("flush access statistics", "err", err)
			}
		}
	}
}

// signals reads ids' signals from st and adds the accesses recorded here
// and not yet written, so that a recall ranks by every access this process
// has made, written or not. A write of the batch that overlaps the read
// makes it read again, after the write.
func (t *tracker) signals(ctx context.Context, st store.Store, profile string, ids []string) (map[string]store.Signals, error) {
	for {
		t.mu.Lock()
		writing, written := t.writing, t.written
		t.mu.Unlock()
		if writing != nil {
			select {
			case <-writing:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		sig, err := st.Signals(ctx, profile, ids)
		if err != nil {
			return nil, err
		}
		t.mu.Lock()
		if t.writing != nil || t.written != written {
			t.mu.Unlock()
			continue
		}
		for _, id := range ids {
			a := t.pending[accessKey{profile, id}]
			s, ok := sig[id]
			if a == nil || !ok {
				continue
			}
			s.AccessCount += a.Count
			if a.At.After(s.AccessedAt) {
				s.AccessedAt = a.At
			}
			sig[id] = s
		}
		t.mu.Unlock()
		return sig, nil
	}
}

// flush writes the pending batch; on failure the batch is put back so a
// later flush retries it.
func (t *tracker) flush(ctx context.Context) error {
	t.flushMu.Lock()
	defer t.flushMu.Unlock()
	t.mu.Lock()
	if len(t.pending) == 0 {
		t.mu.Unlock()
		return nil
	}
	batch := make([]store.Access, 0, len(t.pending))
	for _, a := range t.pending {
		batch = append(batch, *a)
	}
	t.pending = map[accessKey]*store.Access{}
	writing := make(chan struct{})
	t.writing = writing
	t.mu.Unlock()
	err := t.st.RecordAccess(ctx, batch)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.writing, t.written = nil, t.written+1
	close(writing)
	if err != nil {
		if errors.Is(err, mnemotype.ErrReadOnly) {
			// A store opened for reading keeps no statistics: drop them
			// rather than hold them for a write that cannot come.
			t.log.Debug("access statistics not recorded: the store is read-only", "count", len(batch))
			return nil
		}
		for _, a := range batch {
			k := accessKey{a.Profile, a.ID}
			if p := t.pending[k]; p != nil {
				p.Count += a.Count
				if a.At.After(p.At) {
					p.At = a.At
				}
			} else {
				a := a
				t.pending[k] = &a
			}
		}
		return err
	}
	return nil
}

// close stops the loop and writes what is pending.
func (t *tracker) close(ctx context.Context) error {
	select {
	case <-t.stop:
	default:
		close(t.stop)
	}
	<-t.done
	return t.flush(ctx)
}
