package remote

import (
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"None", http.Header{}, 0},
		{"Seconds", http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{"FractionalSeconds", http.Header{"Retry-After": {"0.5"}}, 500 * time.Millisecond},
		{"Date", http.Header{"Retry-After": {now.Add(90 * time.Second).Format(http.TimeFormat)}}, 90 * time.Second},
		{"PastDate", http.Header{"Retry-After": {now.Add(-time.Hour).Format(http.TimeFormat)}}, 0},
		{"Garbage", http.Header{"Retry-After": {"soon"}}, 0},
		{"Negative", http.Header{"Retry-After": {"-3"}}, 0},
		{"Milliseconds", http.Header{"Retry-After-Ms": {"250"}}, 250 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := RetryAfter(tc.h, now); got != tc.want {
				t.Errorf("RetryAfter(%v) = %v, want %v", tc.h, got, tc.want)
			}
		})
	}
}

func TestBackoff(t *testing.T) {
	t.Parallel()
	lo, hi := 100*time.Millisecond, time.Second
	for attempt := range 70 {
		d := min(lo<<min(attempt, 20), hi)
		for range 50 {
			if w := Backoff(attempt, lo, hi); w < d/2 || w > d {
				t.Fatalf("Backoff(%d) = %v, want in [%v, %v]", attempt, w, d/2, d)
			}
		}
	}
}
