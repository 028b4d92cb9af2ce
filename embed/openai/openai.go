package openai

import (
	"context"
	"encoding/json"
	"errors"
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
	// DefaultBaseURL is OpenAI's API.
	DefaultBaseURL = "https://api.openai.com"
	// DefaultMaxBatch is the number of texts sent per request.
	DefaultMaxBatch = 96
	// DefaultTimeout bounds one HTTP attempt.
	DefaultTimeout = 30 * time.Second
	// DefaultMaxRetries is the number of retries after a first failed attempt.
	DefaultMaxRetries = 4
	// DefaultMinBackoff is the wait before the first retry (before jitter).
	DefaultMinBackoff = 500 * time.Millisecond
	// DefaultMaxBackoff caps the wait between attempts.
	DefaultMaxBackoff = 30 * time.Second
)

// ModelPrefix starts the name Model returns.
const ModelPrefix = "openai:"

// Config configures an Embedder. Only Model is required.
type Config struct {
	// Model is the server's model name, e.g. "text-embedding-3-small".
	Model string
	// BaseURL is the server's root URL; "/v1/embeddings" is appended (a
	// trailing "/v1" is accepted and dropped). Defaults to DefaultBaseURL.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer <APIKey>" when not empty
	// (local servers usually need none).
	APIKey string
	// Dimensions is the vector dimension when known in advance; every
	// answer is checked against it. Defaults to 0: Dim is discovered by the
	// first successful call.
	Dimensions int
	// SendDimensions asks the server for Dimensions-d vectors (the
	// "dimensions" request field of OpenAI's text-embedding-3 models; many
	// compatible servers reject it). The model name then ends in
	// "@<Dimensions>", since the vectors differ from the full-size ones.
	SendDimensions bool
	// MaxBatch is the largest number of texts per request. Defaults to
	// DefaultMaxBatch.
	MaxBatch int
	// Timeout bounds each HTTP attempt, reading the answer included.
	// Defaults to DefaultTimeout.
	Timeout time.Duration
	// MaxRetries is how many times a failed attempt is retried. Defaults to
	// DefaultMaxRetries; a negative value disables retries.
	MaxRetries int
	// MinBackoff and MaxBackoff bound the exponential backoff between
	// attempts. A Retry-After longer than MaxBackoff is not waited for: the
	// call fails with the server's answer. Default to DefaultMinBackoff and
	// DefaultMaxBackoff.
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
		return mnemotype.Invalidf("openai embedder: model is required")
	}
	if c.Dimensions < 0 {
		return mnemotype.Invalidf("openai embedder: dimensions = %d: must be ≥ 0", c.Dimensions)
	}
	if c.SendDimensions && c.Dimensions == 0 {
		return mnemotype.Invalidf("openai embedder: SendDimensions needs Dimensions")
	}
	if !strings.HasPrefix(c.BaseURL, "http://") && !strings.HasPrefix(c.BaseURL, "https://") {
		return mnemotype.Invalidf("openai embedder: base URL %q: must start with http:// or https://", c.BaseURL)
	}
	return nil
}

// Embedder embeds texts with an OpenAI-compatible server. It is safe for
// concurrent use.
type Embedder struct {
	cfg  Config
	name string
	dim  atomic.Int64
	http *remote.Client
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
	base := strings.TrimRight(c.BaseURL, "/")
	base = strings.TrimSuffix(base, "/v1")
	name := ModelPrefix + c.Model
	if c.SendDimensions {
		name += fmt.Sprintf("@%d", c.Dimensions)
	}
	e := &Embedder{cfg: c, name: name}
	e.dim.Store(int64(c.Dimensions))
	e.http = &remote.Client{
		URL: base + "/v1/embeddings", APIKey: c.APIKey, HTTP: c.HTTPClient, Timeout: c.Timeout,
		MaxRetries: c.MaxRetries, MinBackoff: c.MinBackoff, MaxBackoff: c.MaxBackoff, Sleep: remote.SleepCtx,
	}
	return e, nil
}

// Model implements embed.Embedder: "openai:" followed by Config.Model (and
// "@<Dimensions>" with Config.SendDimensions).
func (e *Embedder) Model() string { return e.name }

// Dim implements embed.Embedder: Config.Dimensions, else the dimension of
// the first successful answer, 0 before it.
func (e *Embedder) Dim() int { return int(e.dim.Load()) }

// request is the body of POST /v1/embeddings.
type request struct {
	Model          string   `json:"model"`
	Input          []string `json:"input"`
	EncodingFormat string   `json:"encoding_format"`
	Dimensions     int      `json:"dimensions,omitempty"`
}

// response is the part of the answer read.
type response struct {
	Data []struct {
		Index     *int      `json:"index"`
		Embedding []float32 `json:"embedding"`
	} `json:"data"`
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
	req := request{Model: e.cfg.Model, Input: texts, EncodingFormat: "float"}
	if e.cfg.SendDimensions {
		req.Dimensions = e.cfg.Dimensions
	}
	body, err := json.Marshal(req)
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
	if len(resp.Data) != len(texts) {
		return nil, fmt.Errorf("server returned %d vectors for %d texts", len(resp.Data), len(texts))
	}
	vecs := make([][]float32, len(texts))
	positional := true // servers that omit "index" answer in input order
	for _, d := range resp.Data {
		if d.Index != nil && *d.Index != 0 {
			positional = false
		}
	}
	for i, d := range resp.Data {
		j := i
		if !positional {
			if d.Index == nil || *d.Index < 0 || *d.Index >= len(texts) || vecs[*d.Index] != nil {
				return nil, errors.New("server returned vectors with missing, repeated or out-of-range indexes")
			}
			j = *d.Index
		}
		if len(d.Embedding) == 0 {
			return nil, fmt.Errorf("server returned an empty vector for text %d", j)
		}
		vecs[j] = d.Embedding
	}
	if err := remote.CheckDim(&e.dim, vecs); err != nil {
		return nil, err
	}
	for _, v := range vecs {
		embed.Normalize(v)
	}
	return vecs, nil
}
