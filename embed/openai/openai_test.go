package openai

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

// fakeServer speaks POST /v1/embeddings. By default it answers each text
// with a dim-d vector derived from the text; respond, when set, answers
// instead (call is 1-based).
type fakeServer struct {
	t       *testing.T
	dim     int
	respond func(w http.ResponseWriter, r *http.Request, call int, req request) bool
	calls   atomic.Int64
	mu      sync.Mutex
	reqs    []request
	headers []http.Header
}

func newServer(t *testing.T, dim int) (*fakeServer, *httptest.Server) {
	t.Helper()
	f := &fakeServer{t: t, dim: dim}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	call := int(f.calls.Add(1))
	if r.Method != http.MethodPost || r.URL.Path != "/v1/embeddings" {
		http.Error(w, `{"error":{"message":"no route"}}`, http.StatusNotFound)
		return
	}
	var req request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.reqs = append(f.reqs, req)
	f.headers = append(f.headers, r.Header.Clone())
	f.mu.Unlock()
	if f.respond != nil && f.respond(w, r, call, req) {
		return
	}
	writeVectors(w, req.Input, f.dim, true)
}

// vectorFor is an unnormalised vector depending on text.
func vectorFor(text string, dim int) []float32 {
	v := make([]float32, dim)
	for i := range v {
		v[i] = float32(len(text)+i+1) * 0.5
	}
	return v
}

// writeVectors answers texts, in reverse order with explicit indexes when
// shuffle is set (servers may answer out of order).
func writeVectors(w http.ResponseWriter, texts []string, dim int, shuffle bool) {
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	data := make([]item, 0, len(texts))
	for i, t := range texts {
		data = append(data, item{"embedding", i, vectorFor(t, dim)})
	}
	if shuffle {
		for i, j := 0, len(data)-1; i < j; i, j = i+1, j-1 {
			data[i], data[j] = data[j], data[i]
		}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": "m"})
}

// newTest returns an embedder on srv with fast retries whose waits are
// recorded instead of slept.
func newTest(t *testing.T, srv *httptest.Server, cfg Config) (*Embedder, *[]time.Duration) {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = "test-model"
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

func norm(v []float32) float64 {
	s := 0.0
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func TestNew_Validation(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]Config{
		"NoModel":            {},
		"NegativeDimensions": {Model: "m", Dimensions: -1},
		"SendWithoutDims":    {Model: "m", SendDimensions: true},
		"BaseURLWithoutHTTP": {Model: "m", BaseURL: "api.openai.com"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := New(cfg); !errors.Is(err, mnemotype.ErrInvalid) {
				t.Errorf("New(%+v) = %v, want ErrInvalid", cfg, err)
			}
		})
	}
	e, err := New(Config{Model: "text-embedding-3-large", Dimensions: 256, SendDimensions: true, BaseURL: "http://x/v1/"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Model() != "openai:text-embedding-3-large@256" || e.Dim() != 256 || e.http.URL != "http://x/v1/embeddings" {
		t.Errorf("model %q dim %d url %q", e.Model(), e.Dim(), e.http.URL)
	}
}

func TestEmbedder_Embed(t *testing.T) {
	t.Parallel()
	f, srv := newServer(t, 8)
	e, _ := newTest(t, srv, Config{MaxBatch: 2, APIKey: "sk-test"})
	if e.Dim() != 0 || e.Model() != "openai:test-model" {
		t.Fatalf("before any call: model %q dim %d", e.Model(), e.Dim())
	}
	texts := []string{"a", "bb", "ccc", "dddd", "eeeee"}
	vecs, err := e.Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	if len(vecs) != len(texts) || e.Dim() != 8 {
		t.Fatalf("got %d vectors, dim %d", len(vecs), e.Dim())
	}
	for i, v := range vecs {
		if math.Abs(norm(v)-1) > 1e-6 {
			t.Errorf("vector %d has norm %v", i, norm(v))
		}
		want := vectorFor(texts[i], 8)
		if r := float64(v[0]) / float64(v[7]); math.Abs(r-float64(want[0]/want[7])) > 1e-6 {
			t.Errorf("vector %d is not text %d's (out of order?)", i, i)
		}
	}
	if n := f.calls.Load(); n != 3 {
		t.Errorf("%d requests for 5 texts in batches of 2, want 3", n)
	}
	for i, r := range f.reqs {
		if r.Model != "test-model" || r.EncodingFormat != "float" || r.Dimensions != 0 || len(r.Input) > 2 {
			t.Errorf("request %d = %+v", i, r)
		}
		if h := f.headers[i]; h.Get("Authorization") != "Bearer sk-test" || h.Get("Content-Type") != "application/json" {
			t.Errorf("request %d headers: Authorization %q, Content-Type %q", i, h.Get("Authorization"), h.Get("Content-Type"))
		}
	}
	if vecs, err := e.Embed(t.Context(), nil); err != nil || len(vecs) != 0 || f.calls.Load() != 3 {
		t.Errorf("Embed(nil) = %d vectors, %v after %d calls", len(vecs), err, f.calls.Load())
	}
}

func TestEmbedder_NoKeyNoAuthHeader(t *testing.T) {
	t.Parallel()
	f, srv := newServer(t, 4)
	e, _ := newTest(t, srv, Config{})
	if _, err := e.Embed(t.Context(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if h := f.headers[0].Get("Authorization"); h != "" {
		t.Errorf("Authorization %q sent without a key", h)
	}
}

func TestEmbedder_SendDimensions(t *testing.T) {
	t.Parallel()
	f, srv := newServer(t, 4)
	e, _ := newTest(t, srv, Config{Dimensions: 4, SendDimensions: true})
	if _, err := e.Embed(t.Context(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
	if f.reqs[0].Dimensions != 4 {
		t.Errorf("dimensions sent = %d, want 4", f.reqs[0].Dimensions)
	}
}

func TestEmbedder_RetryThenSuccess(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		header   map[string]string
		status   int
		wantWait time.Duration // 0: a jittered backoff in [MinBackoff/2, MinBackoff]
	}{
		{"429RetryAfterSeconds", map[string]string{"Retry-After": "2"}, 429, 2 * time.Second},
		{"429RetryAfterMs", map[string]string{"Retry-After-Ms": "150", "Retry-After": "9"}, 429, 150 * time.Millisecond},
		{"429NoHeader", nil, 429, 0},
		{"503", nil, 503, 0},
		{"408", nil, 408, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, srv := newServer(t, 4)
			f.respond = func(w http.ResponseWriter, r *http.Request, call int, req request) bool {
				if call > 1 {
					return false
				}
				for k, v := range tc.header {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tc.status)
				fmt.Fprint(w, `{"error":{"message":"slow down"}}`)
				return true
			}
			e, waits := newTest(t, srv, Config{MinBackoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second})
			vecs, err := e.Embed(t.Context(), []string{"x", "y"})
			if err != nil || len(vecs) != 2 {
				t.Fatalf("Embed = %d vectors, %v", len(vecs), err)
			}
			if f.calls.Load() != 2 || len(*waits) != 1 {
				t.Fatalf("%d calls, waits %v; want 2 calls, 1 wait", f.calls.Load(), *waits)
			}
			w := (*waits)[0]
			if tc.wantWait != 0 && w != tc.wantWait {
				t.Errorf("waited %v, want %v", w, tc.wantWait)
			}
			if tc.wantWait == 0 && (w < 50*time.Millisecond || w > 100*time.Millisecond) {
				t.Errorf("waited %v, want a backoff in [50ms, 100ms]", w)
			}
		})
	}
}

func TestEmbedder_RetriesExhausted(t *testing.T) {
	t.Parallel()
	f, srv := newServer(t, 4)
	f.respond = func(w http.ResponseWriter, r *http.Request, call int, req request) bool {
		w.WriteHeader(500)
		fmt.Fprint(w, `{"error":{"message":"the model is overloaded","type":"server_error"}}`)
		return true
	}
	e, waits := newTest(t, srv, Config{MaxRetries: 3, MinBackoff: 10 * time.Millisecond, MaxBackoff: 25 * time.Millisecond})
	_, err := e.Embed(t.Context(), []string{"x"})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 500 || !apiErr.Temporary() {
		t.Fatalf("Embed = %v, want an *APIError 500", err)
	}
	for _, want := range []string{"openai:test-model", "4 attempts", "HTTP 500", "the model is overloaded"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if f.calls.Load() != 4 || len(*waits) != 3 {
		t.Errorf("%d calls and waits %v, want 4 calls and 3 waits", f.calls.Load(), *waits)
	}
	for i, w := range *waits {
		if hi := min(10*time.Millisecond<<i, 25*time.Millisecond); w < hi/2 || w > hi {
			t.Errorf("wait %d = %v, want in [%v, %v]", i, w, hi/2, hi)
		}
	}
}

func TestEmbedder_RetryAfterTooLong(t *testing.T) {
	t.Parallel()
	f, srv := newServer(t, 4)
	f.respond = func(w http.ResponseWriter, r *http.Request, call int, req request) bool {
		w.Header().Set("Retry-After", "3600")
		w.WriteHeader(429)
		fmt.Fprint(w, `{"error":{"message":"quota"}}`)
		return true
	}
	e, waits := newTest(t, srv, Config{MaxBackoff: time.Second})
	_, err := e.Embed(t.Context(), []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "retry after 1h0m0s") || f.calls.Load() != 1 || len(*waits) != 0 {
		t.Errorf("Embed = %v after %d calls, waits %v", err, f.calls.Load(), *waits)
	}
}

func TestEmbedder_NoRetryOnClientError(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body, want string
		status           int
	}{
		{"401OpenAI", `{"error":{"message":"Incorrect API key provided: sk-te***","type":"invalid_request_error","code":"invalid_api_key"}}`,
			"Incorrect API key provided", 401},
		{"400StringError", `{"error":"input is too long"}`, "input is too long", 400},
		{"422Detail", `{"detail":"Input validation error: inputs cannot be empty"}`, "inputs cannot be empty", 422},
		{"404Plain", `not found here`, "not found here", 404},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, srv := newServer(t, 4)
			f.respond = func(w http.ResponseWriter, r *http.Request, call int, req request) bool {
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
				return true
			}
			e, waits := newTest(t, srv, Config{})
			_, err := e.Embed(t.Context(), []string{"x"})
			var apiErr *APIError
			if !errors.As(err, &apiErr) || apiErr.StatusCode != tc.status || apiErr.Temporary() {
				t.Fatalf("Embed = %v, want an *APIError %d", err, tc.status)
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "attempts") {
				t.Errorf("error %q: want the server's message %q and no retry", err, tc.want)
			}
			if f.calls.Load() != 1 || len(*waits) != 0 {
				t.Errorf("%d calls, waits %v: a %d must not be retried", f.calls.Load(), *waits, tc.status)
			}
		})
	}
}

func TestEmbedder_BadAnswers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		body    string
		want    string
		wantDim bool // wraps ErrDimensionMismatch
	}{
		{"MalformedJSON", `{"data": [{"embedding": [0.1, 0.2`, "decode response", false},
		{"NotAList", `{"data": {"embedding": [1]}}`, "decode response", false},
		{"StringVector", `{"data": [{"index": 0, "embedding": "AAAA"}, {"index": 1, "embedding": "AAAA"}]}`, "decode response", false},
		{"TooFewVectors", `{"data": [{"index": 0, "embedding": [1, 2]}]}`, "1 vectors for 2 texts", false},
		{"TooManyVectors", `{"data": [{"index": 0, "embedding": [1]}, {"index": 1, "embedding": [1]}, {"index": 2, "embedding": [1]}]}`,
			"3 vectors for 2 texts", false},
		{"RepeatedIndex", `{"data": [{"index": 1, "embedding": [1, 2]}, {"index": 1, "embedding": [1, 2]}]}`, "indexes", false},
		{"EmptyVector", `{"data": [{"index": 0, "embedding": []}, {"index": 1, "embedding": [1]}]}`, "empty vector", false},
		{"MixedDimensions", `{"data": [{"index": 0, "embedding": [1, 2, 3]}, {"index": 1, "embedding": [1, 2]}]}`, "mixed dimensions", true},
		{"WrongDimension", `{"data": [{"index": 0, "embedding": [1, 2]}, {"index": 1, "embedding": [1, 2]}]}`, "2-d vectors, want 4-d", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, srv := newServer(t, 4)
			f.respond = func(w http.ResponseWriter, r *http.Request, call int, req request) bool {
				fmt.Fprint(w, tc.body)
				return true
			}
			e, _ := newTest(t, srv, Config{Dimensions: 4})
			vecs, err := e.Embed(t.Context(), []string{"x", "y"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Embed = %d vectors, %v; want an error mentioning %q", len(vecs), err, tc.want)
			}
			if got := errors.Is(err, mnemotype.ErrDimensionMismatch); got != tc.wantDim {
				t.Errorf("errors.Is(%v, ErrDimensionMismatch) = %v", err, got)
			}
			if f.calls.Load() != 1 {
				t.Errorf("%d calls: a bad answer must not be retried", f.calls.Load())
			}
		})
	}
}

func TestEmbedder_DimensionDiscoveredThenFixed(t *testing.T) {
	t.Parallel()
	f, srv := newServer(t, 6)
	e, _ := newTest(t, srv, Config{})
	if _, err := e.Embed(t.Context(), []string{"x"}); err != nil || e.Dim() != 6 {
		t.Fatalf("first call: dim %d, %v", e.Dim(), err)
	}
	f.dim = 3 // the server switched models behind the same name
	_, err := e.Embed(t.Context(), []string{"x"})
	if !errors.Is(err, mnemotype.ErrDimensionMismatch) || e.Dim() != 6 {
		t.Errorf("second call: dim %d, %v; want ErrDimensionMismatch", e.Dim(), err)
	}
}

func TestEmbedder_IndexlessAnswerIsPositional(t *testing.T) {
	t.Parallel()
	f, srv := newServer(t, 2)
	f.respond = func(w http.ResponseWriter, r *http.Request, call int, req request) bool {
		fmt.Fprint(w, `{"data": [{"embedding": [1, 0]}, {"embedding": [0, 2]}]}`)
		return true
	}
	e, _ := newTest(t, srv, Config{})
	vecs, err := e.Embed(t.Context(), []string{"x", "y"})
	if err != nil || vecs[0][0] != 1 || vecs[1][1] != 1 {
		t.Errorf("Embed = %v, %v", vecs, err)
	}
}

func TestEmbedder_ContextTimeout(t *testing.T) {
	t.Parallel()
	f, srv := newServer(t, 4)
	f.respond = func(w http.ResponseWriter, r *http.Request, call int, req request) bool {
		<-r.Context().Done() // hang until the client gives up
		return true
	}
	e, waits := newTest(t, srv, Config{})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := e.Embed(ctx, []string{"x"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Embed = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Embed took %v after its context expired", d)
	}
	if len(*waits) != 0 {
		t.Errorf("retried after the caller's context expired: waits %v", *waits)
	}
}

func TestEmbedder_AttemptTimeoutIsRetried(t *testing.T) {
	t.Parallel()
	f, srv := newServer(t, 4)
	f.respond = func(w http.ResponseWriter, r *http.Request, call int, req request) bool {
		if call == 1 {
			<-r.Context().Done()
			return true
		}
		return false
	}
	e, waits := newTest(t, srv, Config{Timeout: 50 * time.Millisecond, MinBackoff: time.Millisecond})
	if _, err := e.Embed(t.Context(), []string{"x"}); err != nil {
		t.Fatalf("Embed = %v, want success on the second attempt", err)
	}
	if f.calls.Load() != 2 || len(*waits) != 1 {
		t.Errorf("%d calls, waits %v", f.calls.Load(), *waits)
	}
}

func TestEmbedder_NetworkErrorRetried(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	e, waits := newTest(t, srv, Config{MaxRetries: 2, MinBackoff: time.Millisecond})
	srv.Close() // connections are now refused
	_, err := e.Embed(t.Context(), []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "3 attempts") || len(*waits) != 2 {
		t.Errorf("Embed = %v, waits %v; want 3 attempts", err, *waits)
	}
}

func TestEmbedder_Concurrent(t *testing.T) {
	t.Parallel()
	_, srv := newServer(t, 16)
	e, _ := newTest(t, srv, Config{MaxBatch: 3})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			texts := []string{strings.Repeat("x", i+1), "y", "zz", "w", "v"}
			vecs, err := e.Embed(t.Context(), texts)
			if err == nil && len(vecs) != len(texts) {
				err = fmt.Errorf("%d vectors", len(vecs))
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
