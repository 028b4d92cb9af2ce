package httpapi

import (
	"errors"
	"io"
	"log"
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

// TestWithDeadline_Panic: a handler that panics (or aborts) is recovered
// by net/http as before, and its deadline writes nothing afterwards: the
// server answers the next request.
func TestWithDeadline_Panic(t *testing.T) {
	t.Parallel()
	mux := http.NewServeMux()
	mux.HandleFunc("/panic", func(w http.ResponseWriter, r *http.Request) { panic("boom") })
	mux.HandleFunc("/abort", func(w http.ResponseWriter, r *http.Request) { panic(http.ErrAbortHandler) })
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	srv := httptest.NewUnstartedServer(withDeadline(mux, 20*time.Millisecond))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the recovered panics
	srv.Start()
	defer srv.Close()
	for range 20 {
		for _, path := range []string{"/panic", "/abort"} {
			if res, err := http.Get(srv.URL + path); err == nil {
				res.Body.Close()
				t.Fatalf("GET %s answered %d; want the connection closed", path, res.StatusCode)
			}
		}
	}
	time.Sleep(50 * time.Millisecond) // past every request's deadline
	res, err := http.Get(srv.URL + "/ok")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || string(body) != "ok" {
		t.Errorf("after the panics: %d %q", res.StatusCode, body)
	}
}
