// Package fakeprovider is an embedding provider for tests: a real HTTP
// server on 127.0.0.1 (httptest) speaking the OpenAI embeddings protocol,
// POST /v1/embeddings. Its vectors are the hashing embedder's, so a query
// that repeats a memory's text has cosine 1 with it. At any time it can be
// told to answer normally, to fail with an HTTP status, or to accept
// requests and never answer (a hung provider): such a request ends only
// when its client gives up or the test ends.
package fakeprovider

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mnemo-dev/mnemo/embed"
)

// Mode is how the server answers.
type Mode int

// Modes.
const (
	// OK answers with vectors.
	OK Mode = iota
	// Fail answers the status set by SetFail (503 by default).
	Fail
	// Hang reads the request and never answers.
	Hang
)

// Server is a fake OpenAI-compatible embedding server. It is safe for
// concurrent use.
type Server struct {
	// URL is the server's base URL, for openai.Config.BaseURL or
	// MNEMO_OPENAI_BASE_URL.
	URL string

	srv     *httptest.Server
	release chan struct{}

	mu     sync.Mutex
	mode   Mode
	status int
	dim    int
	seen   map[string]int // requests per input text

	requests, texts, hung, abandoned atomic.Int64
}

// New starts a server answering dim-dimensional vectors, closed when the
// test ends (hung requests are released first).
func New(tb testing.TB, dim int) *Server {
	tb.Helper()
	s := &Server{dim: dim, status: http.StatusServiceUnavailable, release: make(chan struct{}), seen: map[string]int{}}
	s.srv = httptest.NewServer(s)
	s.URL = s.srv.URL
	tb.Cleanup(s.srv.Close)
	tb.Cleanup(func() { close(s.release) }) // runs before Close
	return s
}

// Set switches the server's mode.
func (s *Server) Set(m Mode) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode = m
}

// SetFail makes the server answer status to every request.
func (s *Server) SetFail(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mode, s.status = Fail, status
}

// Requests is the number of embedding requests received, in any mode.
func (s *Server) Requests() int { return int(s.requests.Load()) }

// Texts is the number of texts answered with vectors.
func (s *Server) Texts() int { return int(s.texts.Load()) }

// Seen is the number of requests, in any mode, whose input held text.
func (s *Server) Seen(text string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[text]
}

// Hung is the number of requests currently held without an answer.
func (s *Server) Hung() int { return int(s.hung.Load()) }

// Abandoned is the number of held requests whose client went away (it
// cancelled the request, so the server saw the connection close).
func (s *Server) Abandoned() int { return int(s.abandoned.Load()) }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.requests.Add(1)
	s.mu.Lock()
	mode, status, dim := s.mode, s.status, s.dim
	counted := map[string]bool{}
	for _, t := range req.Input {
		if !counted[t] {
			s.seen[t]++
			counted[t] = true
		}
	}
	s.mu.Unlock()
	switch mode {
	case Fail:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write([]byte(`{"error":{"message":"the fake provider is failing"}}`))
		return
	case Hang:
		s.hung.Add(1)
		defer s.hung.Add(-1)
		select {
		case <-r.Context().Done():
			s.abandoned.Add(1)
		case <-s.release:
		}
		return
	}
	vecs, _ := embed.NewHash(dim).Embed(r.Context(), req.Input)
	s.texts.Add(int64(len(req.Input)))
	type item struct {
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	out := struct {
		Data  []item `json:"data"`
		Model string `json:"model"`
	}{Model: req.Model}
	for i, v := range vecs {
		out.Data = append(out.Data, item{Index: i, Embedding: v})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}
