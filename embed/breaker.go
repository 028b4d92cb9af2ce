package embed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/mnemo-dev/mnemo/embed/internal/remote"
	"github.com/mnemo-dev/mnemo/mnemotype"
)

// ErrUnavailable is returned, wrapped, by a Breaker whose circuit is open:
// its provider kept failing, and it is not called again until a background
// probe sees it answer.
var ErrUnavailable = errors.New("embedder unavailable")

// Defaults of BreakerConfig.
const (
	// DefaultBreakerFailures is the number of failed calls in a row that
	// opens the circuit.
	DefaultBreakerFailures = 3
	// DefaultProbeTimeout bounds one probe of an open circuit's provider.
	DefaultProbeTimeout = 10 * time.Second
	// DefaultMinProbeInterval is the wait before the first probe.
	DefaultMinProbeInterval = time.Second
	// DefaultMaxProbeInterval caps the wait between probes.
	DefaultMaxProbeInterval = time.Minute
	// DefaultProbeText is the text probes embed.
	DefaultProbeText = "mnemo health probe"
)

// BreakerConfig configures a Breaker. The zero value (or nil) is ready to
// use.
type BreakerConfig struct {
	// Failures is the number of failed calls in a row that opens the
	// circuit. Defaults to DefaultBreakerFailures.
	Failures int
	// ProbeTimeout bounds one probe. Defaults to DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// MinProbeInterval is the wait between the circuit opening and the
	// first probe; it doubles after each failed probe, up to
	// MaxProbeInterval. They default to DefaultMinProbeInterval and
	// DefaultMaxProbeInterval.
	MinProbeInterval, MaxProbeInterval time.Duration
	// ProbeText is the text probes embed. Defaults to DefaultProbeText.
	ProbeText string
	// Logger receives the circuit's changes (opened at Warn, closed at
	// Info). Defaults to discarding.
	Logger *slog.Logger
}

func (c *BreakerConfig) withDefaults() BreakerConfig {
	var o BreakerConfig
	if c != nil {
		o = *c
	}
	if o.Failures <= 0 {
		o.Failures = DefaultBreakerFailures
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = DefaultProbeTimeout
	}
	if o.MinProbeInterval <= 0 {
		o.MinProbeInterval = DefaultMinProbeInterval
	}
	if o.MaxProbeInterval <= 0 {
		o.MaxProbeInterval = DefaultMaxProbeInterval
	}
	if o.MaxProbeInterval < o.MinProbeInterval {
		o.MaxProbeInterval = o.MinProbeInterval
	}
	if o.ProbeText == "" {
		o.ProbeText = DefaultProbeText
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}

// Breaker is an Embedder that stops calling a provider that keeps failing
// (a circuit breaker), so that callers learn at once that it is down
// instead of each waiting for its timeout.
//
// After BreakerConfig.Failures failed calls in a row the circuit opens:
// every call then fails at once with an error wrapping ErrUnavailable, and
// one background goroutine probes the provider, one call at a time, on an
// exponential schedule; the first probe the provider answers closes the
// circuit. A failure is an error of the provider or the network, or a call
// cut by its context's deadline; a call its caller cancelled counts for
// nothing, and a provider's refusal of the request itself (an HTTP status
// that retrying cannot change, such as 400 or 401, or vectors of an
// unexpected dimension) shows that it answers, as a success does.
//
// Breaker is meant for remote providers; it is safe for concurrent use.
// Close stops the probes.
type Breaker struct {
	inner  Embedder
	cfg    BreakerConfig
	ctx    context.Context // ends with Close, and the probe with it
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	fails   int // failed calls in a row
	open    bool
	since   time.Time // when the circuit opened
	lastErr error
	closed  bool
}

var _ Embedder = (*Breaker)(nil)

// NewBreaker returns a Breaker in front of inner, its circuit closed.
func NewBreaker(inner Embedder, cfg *BreakerConfig) *Breaker {
	ctx, cancel := context.WithCancel(context.Background())
	return &Breaker{inner: inner, cfg: cfg.withDefaults(), ctx: ctx, cancel: cancel}
}

// Model implements Embedder: the inner embedder's model.
func (b *Breaker) Model() string { return b.inner.Model() }

// Dim implements Embedder: the inner embedder's dimension.
func (b *Breaker) Dim() int { return b.inner.Dim() }

// Inner returns the guarded embedder.
func (b *Breaker) Inner() Embedder { return b.inner }

// BreakerState is a snapshot of a Breaker.
type BreakerState struct {
	// Open reports whether calls are refused.
	Open bool
	// Since is when the circuit opened (zero while closed).
	Since time.Time
	// Failures is the number of failed calls in a row.
	Failures int
	// LastErr is the last failure, nil when there was none since the
	// circuit last closed.
	LastErr error
}

// State returns the breaker's current state.
func (b *Breaker) State() BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	return BreakerState{Open: b.open, Since: b.since, Failures: b.fails, LastErr: b.lastErr}
}

// Embed implements Embedder. While the circuit is open it returns at once
// an error wrapping ErrUnavailable that says since when and why; otherwise
// it returns the inner embedder's answer.
func (b *Breaker) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	b.mu.Lock()
	if b.open && !b.closed {
		err := fmt.Errorf("%w: %s: circuit open since %s after %d failed calls in a row (last: %v); probing it in the background",
			ErrUnavailable, b.inner.Model(), b.since.UTC().Format(time.RFC3339), b.fails, describe(b.lastErr))
		b.mu.Unlock()
		return nil, err
	}
	b.mu.Unlock()
	vecs, err := b.inner.Embed(ctx, texts)
	b.record(ctx, err)
	return vecs, err
}

// record counts a call's outcome and opens the circuit on the last
// failure allowed.
func (b *Breaker) record(ctx context.Context, err error) {
	failed, answered := classify(ctx, err)
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case answered:
		b.fails = 0
	case failed:
		b.fails++
		b.lastErr = err
		if b.fails >= b.cfg.Failures && !b.open && !b.closed {
			b.open, b.since = true, time.Now()
			b.cfg.Logger.Warn("embedder unavailable: circuit open; calls fail at once until a probe succeeds",
				"model", b.inner.Model(), "failures", b.fails, "err", err)
			b.wg.Add(1)
			go b.probe()
		}
	}
}

// classify sorts a call's outcome: failed (the provider is down or too
// slow) or answered (it is up), or neither (the caller cancelled).
func classify(ctx context.Context, err error) (failed, answered bool) {
	var refused *remote.APIError
	switch {
	case err == nil:
		return false, true
	case errors.Is(ctx.Err(), context.Canceled):
		return false, false
	case errors.Is(err, mnemotype.ErrDimensionMismatch), errors.Is(err, mnemotype.ErrInvalid):
		return false, true
	case errors.As(err, &refused) && !refused.Temporary():
		return false, true
	}
	return true, false
}

// describe shortens a failure for the open circuit's error.
func describe(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return "no answer before the deadline"
	}
	return fmt.Sprint(err)
}

// probe calls the provider on a backoff schedule until it answers, which
// closes the circuit, or until Close.
func (b *Breaker) probe() {
	defer b.wg.Done()
	wait := b.cfg.MinProbeInterval
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-b.ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(b.ctx, b.cfg.ProbeTimeout)
		_, err := b.inner.Embed(pctx, []string{b.cfg.ProbeText})
		failed, _ := classify(pctx, err)
		cancel()
		if b.ctx.Err() != nil {
			return
		}
		b.mu.Lock()
		if !failed {
			b.open, b.fails, b.lastErr, b.since = false, 0, nil, time.Time{}
			b.mu.Unlock()
			b.cfg.Logger.Info("embedder available again: circuit closed", "model", b.inner.Model())
			return
		}
		b.lastErr = err
		b.mu.Unlock()
		wait = min(2*wait, b.cfg.MaxProbeInterval)
		t.Reset(wait)
	}
}

// Close stops the background probe, waiting for a probe in flight to be
// cancelled. Later calls go straight to the inner embedder. It does not
// close the inner embedder, and is idempotent.
func (b *Breaker) Close() error {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
	return nil
}
