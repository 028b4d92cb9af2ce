package ollama

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/embed/internal/remote"
	"github.com/mnemo-dev/mnemo/mnemotype"
)

// Defaults.
const (
	// DefaultBaseURL is a local Ollama server.
	DefaultBaseURL = "http://127.0.0.1:11434"
	// DefaultMaxBatch is the number of texts sent per request.
	DefaultMaxBatch = 32
	// DefaultTimeout bounds one HTTP attempt; generous, since Ollama loads
	// the model on its first request.
	DefaultTimeout = 2 * time.Minute
	// DefaultMaxRetries is the number of retries after a first failed attempt.
	DefaultMaxRetries = 3
	// DefaultMinBackoff is the wait before the first retry (before jitter).
	DefaultMinBackoff = 500 * time.Millisecond
	// DefaultMaxBackoff caps the wait between attempts.
	DefaultMaxBackoff = 15 * time.Second
)

// ModelPrefix starts the name Model returns.
const ModelPrefix = "ollama:"

// Config configures an Embedder. Only Model is required.
type Config struct {
	// Model is the Ollama model, e.g. "nomic-embed-text"; a name without a
	// tag means its ":latest" tag, as in Ollama.
	Model string
	// BaseURL is the server's root URL; "/api/embed" is appended. Defaults
	// to DefaultBaseURL.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <APIKey>" when not empty
	// (for a server behind an authenticating proxy).
	APIKey string
	// Dimensions is the vector dimension when known in advance; every
	// answer is checked against it. Defaults to 0: Dim is discovered by the
	// first successful call.
	Dimensions int
	// KeepAlive is sent as keep_alive (how long Ollama keeps the model
	// loaded, e.g. "10m") when not empty.
	KeepAlive string
	// MaxBatch is the largest number of texts per request. Defaults to
	// DefaultMaxBatch.
	MaxBatch int
	// Timeout bounds each HTTP attempt. Defaults to DefaultTimeout.
	Timeout time.Duration
	// MaxRetries is how many times a failed attempt is retried. Defaults to
	// DefaultMaxRetries; a negative value disables retries.
	MaxRetries int
	// MinBackoff and MaxBackoff bound the exponential backoff between
	// attempts. A Retry-After longer than MaxBackoff is not waited for.
	// Default to DefaultMinBackoff and DefaultMaxBackoff.
	MinBackoff time.Duration
	MaxBackoff time.Duration
	// HTTPClient sends the requests. Defaults to a client without a global
	// timeout (Timeout applies per attempt).
	HTTPClient *http.Client
}

func (c Config) withDefaults() Config {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	if c.MaxBatch <= 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	} else if c.MaxRetries < 0 {
		c.MaxRetries = 0
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = DefaultMinBackoff
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = DefaultMaxBackoff
	}
	if c.MaxBackoff < c.MinBackoff {
		c.MaxBackoff = c.MinBackoff
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{}
	}
	return c
}

func (c Config) validate() error {
	if strings.TrimSpace(c.Model) == "" {
		return mnemotype.Invalidf("ollama embedder: model is required")
	}
	if c.Dimensions < 0 {
		return mnemotype.Invalidf("ollama embedder: dimensions = %d: must be ≥ 0", c.Dimensions)
	}
	if !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://") {
		return mnemotype.Invalidf("ollama embedder: base URL %q: must start with http:// or https://", c.BaseURL)
	}
	return nil
}

// Embedder embeds texts with an Ollama server. It is safe for concurrent
// use.
type Embedder struct {
	cfg   Config
	model string // Config.Model with its tag
	name  string
	dim   atomic.Int64
	http  *remote.Client
}

var _ embed.Embedder = (*Embedder)(nil)

// APIError is a server's refusal: an HTTP status other than 2xx.
type APIError = remote.APIError

// New returns an embedder for cfg. It does not contact the server. Returns
// an ErrInvalid error if cfg is invalid.
func New(cfg Config) (*Embedder, error) {
	c := cfg.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	model := withTag(strings.TrimSpace(c.Model))
	e := &Embedder{cfg: c, model: model, name: ModelPrefix + model}
	e.dim.Store(int64(c.Dimensions))
	e.http = &remote.Client{
		URL: strings.TrimRight(c.BaseURL, "/") + "/api/embed", APIKey: c.APIKey, HTTP: c.HTTPClient, Timeout: c.Timeout,
		MaxRetries: c.MaxRetries, MinBackoff: c.MinBackoff, MaxBackoff: c.MaxBackoff, Sleep: remote.SleepCtx,
	}
	return e, nil
}

// withTag appends ":latest" to a model name without a tag, so that
// "nomic-embed-text" and "nomic-embed-text:latest" name the same vectors.
func withTag(model string) string {
	last := model[strings.LastIndex(model, "/")+1:]
	if strings.Contains(last, ":") {
		return model
	}
	return model + ":latest"
}

// Model implements embed.Embedder: "ollama:" followed by the model name
// with its tag (e.g. "ollama:nomic-embed-text:latest").
func (e *Embedder) Model() string { return e.name }

// Dim implements embed.Embedder: Config.Dimensions, else the dimension of
// the first successful answer, 0 before it.
func (e *Embedder) Dim() int { return int(e.dim.Load()) }

// request is the body of POST /api/embed.
type request struct {
	Model     string   `json:"model"`
	Input     []string `json:"input"`
	KeepAlive string   `json:"keep_alive,omitempty"`
}

// response is the part of the answer read.
type response struct {
	Embeddings [][]float32 `json:"embeddings"`
}

// Embed implements embed.Embedder. Texts are sent in batches of at most
// Config.MaxBatch, one after the other. An error names the model; a
// server's refusal is an *APIError (errors.As), a vector of the wrong
// dimension wraps mnemotype.ErrDimensionMismatch, and a cancelled or
// expired ctx returns ctx's error.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.cfg.MaxBatch {
		batch := texts[start:min(start+e.cfg.MaxBatch, len(texts))]
		vecs, err := e.embedBatch(ctx, batch)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("embed with %s: %w", e.name, err)
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (e *Embedder) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	body, err := json.Marshal(request{Model: e.model, Input: texts, KeepAlive: e.cfg.KeepAlive})
	if err != nil {
		return nil, fmt.Errorf("encode request: %w", err)
	}
	data, err := e.http.Post(ctx, body)
	if err != nil {
		return nil, err
	}
	var resp response
	if err := json.Unmarshal(data, &resp); err != nil {
		return nil, fmt.Errorf("decode response: %w (body starts %q)", err, remote.Snippet(data))
	}
	if len(resp.Embeddings) != len(texts) {
		return nil, fmt.Errorf("server returned %d vectors for %d texts", len(resp.Embeddings), len(texts))
	}
	for i, v := range resp.Embeddings {
		if len(v) == 0 {
			return nil, fmt.Errorf("server returned an empty vector for text %d", i)
		}
	}
	if err := remote.CheckDim(&e.dim, resp.Embeddings); err != nil {
		return nil, err
	}
	for _, v := range resp.Embeddings {
		embed.Normalize(v)
	}
	return resp.Embeddings, nil
}
