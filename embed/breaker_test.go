package embed_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/embed/openai"
	"github.com/mnemo-dev/mnemo/internal/fakeprovider"
)

const probeText = "probe"

// breakerBundle is a Breaker in front of the real OpenAI client (no
// retries) on a fake provider, with fast probes.
type breakerBundle struct {
	fake *fakeprovider.Server
	b    *embed.Breaker
}

func setupBreaker(t *testing.T) *breakerBundle {
	t.Helper()
	fake := fakeprovider.New(t, 8)
	emb, err := openai.New(openai.Config{Model: "test-model", BaseURL: fake.URL, MaxRetries: -1, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b := embed.NewBreaker(emb, &embed.BreakerConfig{Failures: 3, ProbeTimeout: 100 * time.Millisecond,
		MinProbeInterval: 20 * time.Millisecond, MaxProbeInterval: 100 * time.Millisecond, ProbeText: probeText})
	t.Cleanup(func() { b.Close() })
	return &breakerBundle{fake: fake, b: b}
}

// call embeds one text with a deadline of 200 ms (a hung provider's
// calls end with it).
func (bb *breakerBundle) call(t *testing.T) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := bb.b.Embed(ctx, []string{"a memory"})
	return err
}

// calls is the number of requests the provider got from callers (probes
// excluded).
func (bb *breakerBundle) calls() int { return bb.fake.Requests() - bb.fake.Seen(probeText) }

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not the case after 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestBreaker_OpensProbesCloses: failures and timeouts in a row open the
// circuit; while open no call reaches the provider and each fails at once
// with ErrUnavailable; one probe at a time runs in the background, and the
// first the provider answers closes the circuit.
func TestBreaker_OpensProbesCloses(t *testing.T) {
	t.Parallel()
	bb := setupBreaker(t)
	if err := bb.call(t); err != nil {
		t.Fatalf("healthy provider: %v", err)
	}
	bb.fake.SetFail(http.StatusInternalServerError)
	for i := range 2 {
		if err := bb.call(t); err == nil || errors.Is(err, embed.ErrUnavailable) {
			t.Fatalf("failing call %d: err = %v, want the provider's error", i, err)
		}
	}
	if st := bb.b.State(); st.Open || st.Failures != 2 {
		t.Fatalf("after 2 failures: %+v, want closed with 2 failures", st)
	}
	bb.fake.Set(fakeprovider.Hang)
	if err := bb.call(t); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung call: err = %v, want the deadline", err)
	}
	if st := bb.b.State(); !st.Open || st.Since.IsZero() {
		t.Fatalf("after 2 failures and a timeout: %+v, want open", st)
	}

	before := bb.calls()
	for range 20 {
		start := time.Now()
		err := bb.call(t)
		if !errors.Is(err, embed.ErrUnavailable) || !strings.Contains(err.Error(), "circuit open since") {
			t.Fatalf("call while open: err = %v, want ErrUnavailable saying since when", err)
		}
		if d := time.Since(start); d > 150*time.Millisecond {
			t.Fatalf("call while open took %v; it must fail at once", d)
		}
	}
	// Probes hang and time out; at most one is in flight at any time (once
	// the provider has seen the hung call go).
	waitUntil(t, "the hung call's request is cancelled", func() bool { return bb.fake.Abandoned() >= 1 })
	waitUntil(t, "three probes", func() bool {
		if h := bb.fake.Hung(); h > 1 {
			t.Fatalf("%d requests in flight while open, want at most the one probe", h)
		}
		return bb.fake.Seen(probeText) >= 3
	})
	if n := bb.calls(); n != before {
		t.Fatalf("%d calls reached the provider while the circuit was open", n-before)
	}
	if !bb.b.State().Open {
		t.Fatal("circuit closed although every probe timed out")
	}

	bb.fake.Set(fakeprovider.OK)
	waitUntil(t, "a probe closes the circuit", func() bool { return !bb.b.State().Open })
	if err := bb.call(t); err != nil {
		t.Fatalf("after recovery: %v", err)
	}
	if n := bb.calls(); n != before+1 {
		t.Fatalf("after recovery %d calls reached the provider, want 1", n-before)
	}
	if st := bb.b.State(); st.Failures != 0 || st.LastErr != nil {
		t.Errorf("after recovery: %+v", st)
	}
}

// TestBreaker_WhatCounts: only the provider's failures and timeouts count;
// a caller's cancellation counts for nothing, and a refusal of the request
// (HTTP 400) shows the provider is up.
func TestBreaker_WhatCounts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		outcome func(t *testing.T, bb *breakerBundle) error
		want    int // failures in a row after one failure and this call
	}{
		{"ServerError", func(t *testing.T, bb *breakerBundle) error {
			bb.fake.SetFail(http.StatusServiceUnavailable)
			return bb.call(t)
		}, 2},
		{"Timeout", func(t *testing.T, bb *breakerBundle) error {
			bb.fake.Set(fakeprovider.Hang)
			return bb.call(t)
		}, 2},
		{"CallerCancelled", func(t *testing.T, bb *breakerBundle) error {
			bb.fake.Set(fakeprovider.Hang)
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(50*time.Millisecond, cancel)
			_, err := bb.b.Embed(ctx, []string{"a memory"})
			return err
		}, 1},
		{"BadRequest", func(t *testing.T, bb *breakerBundle) error {
			bb.fake.SetFail(http.StatusBadRequest)
			return bb.call(t)
		}, 0},
		{"Success", func(t *testing.T, bb *breakerBundle) error {
			bb.fake.Set(fakeprovider.OK)
			return bb.call(t)
		}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			bb := setupBreaker(t)
			bb.fake.SetFail(http.StatusBadGateway)
			if err := bb.call(t); err == nil {
				t.Fatal("failing provider answered")
			}
			c.outcome(t, bb)
			if st := bb.b.State(); st.Failures != c.want || st.Open {
				t.Errorf("state %+v, want %d failures in a row, closed", st, c.want)
			}
		})
	}
}

// TestBreaker_ConcurrentFailuresOpenOnce: many callers failing together
// open the circuit once, with one probe.
func TestBreaker_ConcurrentFailuresOpenOnce(t *testing.T) {
	t.Parallel()
	bb := setupBreaker(t)
	bb.fake.Set(fakeprovider.Hang)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() { bb.call(t) })
	}
	wg.Wait()
	if !bb.b.State().Open {
		t.Fatal("circuit closed after 16 timeouts")
	}
	waitUntil(t, "the callers' requests are cancelled", func() bool { return bb.fake.Abandoned() >= 16 })
	waitUntil(t, "two probes", func() bool {
		if h := bb.fake.Hung(); h > 1 {
			t.Fatalf("%d requests in flight while open, want at most the one probe", h)
		}
		return bb.fake.Seen(probeText) >= 2
	})
}

// TestBreaker_CloseStopsProbes: Close cancels a probe in flight and waits
// for the probing goroutine; later calls reach the provider.
func TestBreaker_CloseStopsProbes(t *testing.T) {
	t.Parallel()
	bb := setupBreaker(t)
	bb.fake.Set(fakeprovider.Hang)
	for range 3 {
		bb.call(t)
	}
	waitUntil(t, "a probe in flight", func() bool { return bb.fake.Hung() == 1 })
	done := make(chan struct{})
	go func() {
		bb.b.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	probes := bb.fake.Seen(probeText)
	waitUntil(t, "the probe's request is cancelled", func() bool { return bb.fake.Hung() == 0 })
	time.Sleep(300 * time.Millisecond)
	if n := bb.fake.Seen(probeText); n != probes {
		t.Errorf("%d probes after Close", n-probes)
	}
	bb.fake.Set(fakeprovider.OK)
	if err := bb.call(t); err != nil {
		t.Errorf("call after Close: %v", err)
	}
	if err := bb.b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
