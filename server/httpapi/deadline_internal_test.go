package httpapi

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestWithDeadline(t *testing.T) {
	t.Parallel()
	const timeout = 50 * time.Millisecond
	late := make(chan error, 1)
	cases := []struct {
		name     string
		h        http.HandlerFunc
		code     int
		body     string
		header   string // Mnemo-Test's value
		atMost   time.Duration
		lateSays error // what the handler's write after the deadline returned
	}{
		{"passes an answer through", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Mnemo-Test", "yes")
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"id":"m1"}`)
		}, http.StatusCreated, `{"id":"m1"}`, "yes", time.Second, nil},
		{"a handler that writes nothing", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Mnemo-Test", "kept")
		}, http.StatusOK, "", "kept", time.Second, nil},
		{"a handler that ignores its context", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Mnemo-Test", "lost")
			time.Sleep(6 * timeout)
			_, err := io.WriteString(w, `{"too":"late"}`)
			late <- err
		}, http.StatusServiceUnavailable, timeoutBody, "", 4 * timeout, http.ErrHandlerTimeout},
		{"a handler that honours its context", func(w http.ResponseWriter, r *http.Request) {
			<-r.Context().Done()
			w.WriteHeader(http.StatusServiceUnavailable)
		}, http.StatusServiceUnavailable, "", "", time.Second, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(withDeadline(c.h, timeout))
			defer srv.Close()
			start := time.Now()
			res, err := http.Get(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(res.Body)
			res.Body.Close()
			took := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatusCode != c.code || (c.body != "" && string(body) != c.body) || res.Header.Get("Mnemo-Test") != c.header {
				t.Errorf("answer %d %q, Mnemo-Test %q; want %d %q, %q", res.StatusCode, body, res.Header.Get("Mnemo-Test"), c.code, c.body, c.header)
			}
			if took > c.atMost {
				t.Errorf("answered after %v, want at most %v", took, c.atMost)
			}
			if c.lateSays != nil {
				if err := <-late; !errors.Is(err, c.lateSays) {
					t.Errorf("the handler's write after the deadline returned %v, want %v", err, c.lateSays)
				}
			}
		})
	}
}
