// Package remote holds what mnemo's HTTP embedding providers share: JSON
// posts with per-attempt timeouts, retries with jittered exponential
// backoff on temporary failures (network errors, 408, 429, 5xx; honouring
// Retry-After), readable server errors, and the dimension check of answers.
package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// maxResponseBytes bounds an answer read into memory (96 vectors of 3072
// floats in JSON take about 6 MiB).
const maxResponseBytes = 256 << 20

// APIError is a server's refusal: an HTTP status other than 2xx.
type APIError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Message is the server's error message, or the start of its body.
	Message string
	// RetryAfter is the wait the server asked for, 0 when it did not.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	msg := fmt.Sprintf("HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Message != "" {
		msg += ": " + e.Message
	}
	return msg
}

// Temporary reports whether retrying later may succeed (408, 429, 5xx).
func (e *APIError) Temporary() bool { return retryableStatus(e.StatusCode) }

func retryableStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500
}

// Client posts JSON with per-attempt timeouts and retries.
type Client struct {
	// URL is the endpoint posted to.
	URL string
	// APIKey, when set, is sent as a bearer token.
	APIKey string
	// HTTP sends the requests.
	HTTP *http.Client
	// Timeout bounds each attempt, reading the answer included.
	Timeout time.Duration
	// MaxRetries is the number of retries after the first attempt.
	MaxRetries int
	// MinBackoff and MaxBackoff bound the waits between attempts.
	MinBackoff, MaxBackoff time.Duration
	// Sleep waits d or until ctx is done (SleepCtx); tests replace it.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Post sends body and returns the 2xx answer's body. Temporary failures
// are retried; the error of the last attempt is returned, saying how many
// attempts were made.
func (c *Client) Post(ctx context.Context, body []byte) ([]byte, error) {
	for attempt := 0; ; attempt++ {
		data, retry, err := c.attempt(ctx, body)
		if err == nil {
			return data, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !retry {
			return nil, err
		}
		if attempt >= c.MaxRetries {
			return nil, fmt.Errorf("giving up after %d attempts: %w", attempt+1, err)
		}
		wait := Backoff(attempt, c.MinBackoff, c.MaxBackoff)
		var apiErr *APIError
		if errors.As(err, &apiErr) && apiErr.RetryAfter > 0 {
			if apiErr.RetryAfter > c.MaxBackoff {
				return nil, fmt.Errorf("server asks to retry after %v (more than the %v allowed): %w", apiErr.RetryAfter, c.MaxBackoff, err)
			}
			wait = apiErr.RetryAfter
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			return nil, fmt.Errorf("no time left to retry after %v: %w", wait, err)
		}
		if err := c.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// attempt makes one request. retry reports whether a failure is temporary.
func (c *Client) attempt(ctx context.Context, body []byte) (data []byte, retry bool, err error) {
	actx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, c.URL, bytes.NewReader(body))
	if err != nil {
		return nil, false, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.APIKey)
	}
	resp, err := c.HTTP.Do(req)
	if err != nil {
		// A network error or this attempt's timeout: worth another try.
		return nil, true, fmt.Errorf("post %s: %w", c.URL, err)
	}
	defer resp.Body.Close()
	data, err = io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))
	if err != nil {
		return nil, true, fmt.Errorf("read answer of %s: %w", c.URL, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, retryableStatus(resp.StatusCode), &APIError{
			StatusCode: resp.StatusCode, Message: serverMessage(data), RetryAfter: RetryAfter(resp.Header, time.Now()),
		}
	}
	return data, false, nil
}

// Backoff returns the wait before retry number attempt+1: a random
// duration in [d/2, d] with d = min·2^attempt capped at max.
func Backoff(attempt int, lo, hi time.Duration) time.Duration {
	d := hi
	if attempt < 32 {
		if x := lo << attempt; x > 0 && x < hi {
			d = x
		}
	}
	return d/2 + rand.N(d/2+1)
}

// RetryAfter reads the wait a server asks for: retry-after-ms (OpenAI) or
// Retry-After in seconds or as an HTTP date. It returns 0 when there is none.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 && s < 1e9 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

// serverMessage extracts the error message of an error answer: OpenAI's
// {"error":{"message":...}}, {"error":"..."}, {"message":...} or
// {"detail":...}, else the start of the body.
func serverMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message json.RawMessage `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		var nested struct {
			Message string `json:"message"`
		}
		if len(v.Error) > 0 && json.Unmarshal(v.Error, &nested) == nil && nested.Message != "" {
			return nested.Message
		}
		for _, raw := range []json.RawMessage{v.Error, v.Message, v.Detail} {
			var s string
			if len(raw) > 0 && json.Unmarshal(raw, &s) == nil && s != "" {
				return s
			}
		}
		for _, raw := range []json.RawMessage{v.Error, v.Detail} {
			if len(raw) > 0 && string(raw) != "null" {
				return Snippet(raw)
			}
		}
	}
	return Snippet(body)
}

// Snippet returns the start of b as printable text.
func Snippet(b []byte) string {
	const n = 300
	s := strings.TrimSpace(string(b))
	if len(s) > n {
		s = s[:n]
		for len(s) > 0 && !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return s
}

// SleepCtx waits d or until ctx is done.
func SleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// CheckDim checks that vecs share one dimension and that it is dim's (which
// it sets when still 0).
func CheckDim(dim *atomic.Int64, vecs [][]float32) error {
	d := len(vecs[0])
	for i, v := range vecs {
		if len(v) != d {
			return fmt.Errorf("server returned vectors of mixed dimensions (%d for text 0, %d for text %d): %w",
				d, len(v), i, mnemotype.ErrDimensionMismatch)
		}
	}
	if dim.CompareAndSwap(0, int64(d)) {
		return nil
	}
	if want := dim.Load(); want != int64(d) {
		return fmt.Errorf("server returned %d-d vectors, want %d-d: %w", d, want, mnemotype.ErrDimensionMismatch)
	}
	return nil
}
