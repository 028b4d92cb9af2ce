package ollama

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// fakeServer speaks POST /api/embed. By default it answers each text with a
// dim-d vector derived from the text; respond, when set, answers instead
// (call is 1-based) unless it returns false.
type fakeServer struct {
	dim     int
	respond func(w http.ResponseWriter, r *http.Request, call int) bool
	calls   atomic.Int64
	mu      sync.Mutex
	reqs    []request
	headers []http.Header
}

func newServer(t *testing.T, dim int) (*fakeServer, *httptest.Server) {
	t.Helper()
	f := &fakeServer{dim: dim}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	call := int(f.calls.Add(1))
	if r.Method != http.MethodPost || r.URL.Path != "/api/embed" {
		http.Error(w, `{"error":"no route"}`, http.StatusNotFound)
		return
	}
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":"bad json"}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.headers = append(f.headers, r.Header.Clone())
	f.mu.Unlock()
	if f.respond != nil && f.respond(w, r, call) {
		return
	}
	embs := make([][]float32, len(req.Input))
	for i, t := range req.Input {
		embs[i] = vectorFor(t, f.dim)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"model": req.Model, "embeddings": embs, "prompt_eval_count": 3})
}

func vectorFor(text string, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(len(text)+i+1) * 0.5
	}
	return v
}

func newTest(t *testing.T, srv *httptest.Server, cfg Config) (*Embedder, *[]time.Duration) {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = "nomic-embed-text"
	}
	cfg.BaseURL = srv.URL
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	waits := &[]time.Duration{}
	e.http.Sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		*waits = append(*waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	return e, waits
}

func TestNew_ModelName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"nomic-embed-text":               "ollama:nomic-embed-text:latest",
		"nomic-embed-text:v1.5":          "ollama:nomic-embed-text:v1.5",
		"hf.co/user/repo":                "ollama:hf.co/user/repo:latest",
		"localhost:5000/team/embedder":   "ollama:localhost:5000/team/embedder:latest",
		"localhost:5000/team/embedder:q": "ollama:localhost:5000/team/embedder:q",
	} {
		e, err := New(Config{Model: in})
		if err != nil {
			t.Fatal(err)
		}
		if e.Model() != want {
			t.Errorf("Model(%q) = %q, want %q", in, e.Model(), want)
		}
	}
	for _, cfg := range []Config{{}, {Model: "m", Dimensions: -2}, {Model: "m", BaseURL: "localhost:11434"}} {
		if _, err := New(cfg); !errors.Is(err, mnemotype.ErrInvalid) {
			t.Errorf("New(%+v) = %v, want ErrInvalid", cfg, err)
		}
	}
}

func TestEmbedder_Embed(t *testing.T) {
	t.Parallel()
	f, srv := newServer(t, 5)
	e, _ := newTest(t, srv, Config{MaxBatch: 2, KeepAlive: "10m", APIKey: "tok"})
	texts := []string{"a", "bb", "ccc"}
	vecs, err := e.Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != 3 || e.Dim() != 5 || f.calls.Load() != 2 {
		t.Fatalf("%d vectors, dim %d, %d calls", len(vecs), e.Dim(), f.calls.Load())
	}
	for i, v := range vecs {
		s := 0.0
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		if math.Abs(s-1) > 1e-5 {
			t.Errorf("vector %d: squared norm %v", i, s)
		}
		want := vectorFor(texts[i], 5)
		if r := v[0] / v[4]; math.Abs(float64(r-want[0]/want[4])) > 1e-6 {
			t.Errorf("vector %d is not text %d's", i, i)
		}
	}
	for i, r := range f.reqs {
		if r.Model != "nomic-embed-text:latest" || r.KeepAlive != "10m" || len(r.Input) > 2 {
			t.Errorf("request %d = %+v", i, r)
		}
		if got := f.headers[i].Get("Authorization"); got != "Bearer tok" {
			t.Errorf("request %d: Authorization %q", i, got)
		}
	}
}

func TestEmbedder_429ThenSuccess(t *testing.T) {
	t.Parallel()
	f, srv := newServer(t, 3)
	f.respond = func(w http.ResponseWriter, r *http.Request, call int) bool {
		if call > 1 {
			return false
		}
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(429)
		fmt.Fprint(w, `{"error":"server busy, please try again. maximum pending requests exceeded"}`)
		return true
	}
	e, waits := newTest(t, srv, Config{})
	if _, err := e.Embed(t.Context(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if f.calls.Load() != 2 || len(*waits) != 1 || (*waits)[0] != time.Second {
		t.Errorf("%d calls, waits %v; want 2 calls after waiting 1s", f.calls.Load(), *waits)
	}
}

func TestEmbedder_500Exhausted(t *testing.T) {
	t.Parallel()
	f, srv := newServer(t, 3)
	f.respond = func(w http.ResponseWriter, r *http.Request, call int) bool {
		w.WriteHeader(500)
		fmt.Fprint(w, `{"error":"llama runner process has terminated"}`)
		return true
	}
	e, waits := newTest(t, srv, Config{MaxRetries: 2, MinBackoff: time.Millisecond})
	_, err := e.Embed(t.Context(), []string{"x"})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || !strings.Contains(err.Error(), "llama runner process has terminated") ||
		!strings.Contains(err.Error(), "3 attempts") {
		t.Errorf("Embed = %v", err)
	}
	if f.calls.Load() != 3 || len(*waits) != 2 {
		t.Errorf("%d calls, waits %v", f.calls.Load(), *waits)
	}
}

func TestEmbedder_ModelNotPulled(t *testing.T) {
	t.Parallel()
	f, srv := newServer(t, 3)
	f.respond = func(w http.ResponseWriter, r *http.Request, call int) bool {
		w.WriteHeader(404)
		fmt.Fprint(w, `{"error":"model \"nomic-embed-text:latest\" not found, try pulling it first"}`)
		return true
	}
	e, waits := newTest(t, srv, Config{})
	_, err := e.Embed(t.Context(), []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "try pulling it first") || f.calls.Load() != 1 || len(*waits) != 0 {
		t.Errorf("Embed = %v after %d calls; want the server's message and no retry", err, f.calls.Load())
	}
}

func TestEmbedder_BadAnswers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body, want string
		wantDim          bool
	}{
		{"MalformedJSON", `{"embeddings": [[0.1, 0.2]`, "decode response", false},
		{"WrongCount", `{"embeddings": [[0.1, 0.2, 0.3]]}`, "1 vectors for 2 texts", false},
		{"NullVector", `{"embeddings": [[0.1, 0.2, 0.3], null]}`, "empty vector", false},
		{"MixedDimensions", `{"embeddings": [[0.1, 0.2, 0.3], [0.1, 0.2]]}`, "mixed dimensions", true},
		{"WrongDimension", `{"embeddings": [[0.1, 0.2], [0.1, 0.2]]}`, "want 3-d", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, srv := newServer(t, 3)
			f.respond = func(w http.ResponseWriter, r *http.Request, call int) bool {
				fmt.Fprint(w, tc.body)
				return true
			}
			e, _ := newTest(t, srv, Config{Dimensions: 3})
			_, err := e.Embed(t.Context(), []string{"x", "y"})
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "ollama:nomic-embed-text:latest") {
				t.Fatalf("Embed = %v, want an error naming the model and mentioning %q", err, tc.want)
			}
			if errors.Is(err, mnemotype.ErrDimensionMismatch) != tc.wantDim {
				t.Errorf("errors.Is(%v, ErrDimensionMismatch) != %v", err, tc.wantDim)
			}
			if f.calls.Load() != 1 {
				t.Errorf("%d calls: a bad answer must not be retried", f.calls.Load())
			}
		})
	}
}

func TestEmbedder_ContextTimeout(t *testing.T) {
	t.Parallel()
	f, srv := newServer(t, 3)
	f.respond = func(w http.ResponseWriter, r *http.Request, call int) bool {
		<-r.Context().Done()
		return true
	}
	e, waits := newTest(t, srv, Config{})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := e.Embed(ctx, []string{"x"}); !errors.Is(err, context.DeadlineExceeded) || len(*waits) != 0 {
		t.Errorf("Embed = %v, waits %v; want context.DeadlineExceeded without retries", err, *waits)
	}
}
