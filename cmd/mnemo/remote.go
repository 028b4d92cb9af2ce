package main

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/embed/cache"
	"github.com/mnemo-dev/mnemo/embed/ollama"
	"github.com/mnemo-dev/mnemo/embed/openai"
)

// Environment variables of the remote embedders.
const (
	envOpenAIBaseURL = "MNEMO_OPENAI_BASE_URL"
	envOpenAIKey     = "MNEMO_OPENAI_API_KEY"
	envOpenAIKeyStd  = "OPENAI_API_KEY"
	envOllamaURL     = "MNEMO_OLLAMA_URL"
	envOllamaKey     = "MNEMO_OLLAMA_API_KEY"
	envEmbedderDim   = "MNEMO_EMBEDDER_DIM"
	envEmbedTimeout  = "MNEMO_EMBEDDER_TIMEOUT"
	envEmbedRetries  = "MNEMO_EMBEDDER_RETRIES"
)

// embedderHelp documents --embedder and the environment of the remote
// embedders; `mnemo help` and the commands' usage print it.
const embedderHelp = `embedders (--embedder NAME, or MNEMO_EMBEDDER):
  glove               built-in, offline GloVe+SIF (default; mnemo models pull)
  hash                deterministic hashing, not semantic (tests)
  openai:MODEL        an OpenAI-compatible server, POST {base}/v1/embeddings
                      (OpenAI, vLLM, TEI, LM Studio, llama.cpp), e.g.
                      openai:text-embedding-3-small
  openai:MODEL@DIM    the same, asking for DIM-d vectors (text-embedding-3)
  ollama:MODEL        Ollama, POST {base}/api/embed, e.g. ollama:nomic-embed-text
remote embedders read:
  MNEMO_OPENAI_BASE_URL   default https://api.openai.com
  OPENAI_API_KEY          or MNEMO_OPENAI_API_KEY; required for api.openai.com
  MNEMO_OLLAMA_URL        default http://127.0.0.1:11434
  MNEMO_OLLAMA_API_KEY    optional (a server behind an authenticating proxy)
  MNEMO_EMBEDDER_DIM      expected dimension, checked on every answer (optional)
  MNEMO_EMBEDDER_TIMEOUT  per attempt, e.g. 30s (default: provider's)
  MNEMO_EMBEDDER_RETRIES  retries on 429/5xx/network errors (default: provider's)
and cache their vectors in $MNEMO_HOME/cache/embeddings.db (safe to delete).
A write waits at most --write-embed-timeout (MNEMO_WRITE_EMBED_TIMEOUT, 1s)
for its embedding and a recall --query-embed-timeout (MNEMO_QUERY_EMBED_TIMEOUT,
1s) for its query's; 0 waits for the provider's own timeout. After 3 failed
or timed-out calls in a row a provider is not called again (writes store at
once, recalls skip the dense leg) until a background probe sees it answer.
Memories added while the provider fails or is too slow are stored without an
embedding: mnemo reembed (and mnemo serve, every minute) embeds them later.`

// remoteConfig is what the remote embedders share, read from the
// environment.
type remoteConfig struct {
	dim     int
	timeout time.Duration
	retries int // 0: the provider's default; -1: none
}

func (a *app) remoteConfig() (remoteConfig, error) {
	var rc remoteConfig
	if v := strings.TrimSpace(a.getenv(envEmbedderDim)); v != "" {
		d, err := strconv.Atoi(v)
		if err != nil || d < 1 {
			return rc, usagef("%s=%q: must be a positive integer", envEmbedderDim, v)
		}
		rc.dim = d
	}
	if v := strings.TrimSpace(a.getenv(envEmbedTimeout)); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return rc, usagef("%s=%q: must be a positive duration such as 30s", envEmbedTimeout, v)
		}
		rc.timeout = d
	}
	if v := strings.TrimSpace(a.getenv(envEmbedRetries)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return rc, usagef("%s=%q: must be an integer ≥ 0", envEmbedRetries, v)
		}
		rc.retries = n
		if n == 0 {
			rc.retries = -1
		}
	}
	return rc, nil
}

// remoteEmbedder returns the provider embedder called name,
// "openai:MODEL[@DIM]" or "ollama:MODEL", configured from the environment.
// It does not contact the server. A malformed name or a missing API key is
// a usage error.
func (a *app) remoteEmbedder(name string) (embed.Embedder, error) {
	rc, err := a.remoteConfig()
	if err != nil {
		return nil, err
	}
	if model, ok := strings.CutPrefix(name, openai.ModelPrefix); ok {
		cfg := openai.Config{Model: model, Dimensions: rc.dim, Timeout: rc.timeout, MaxRetries: rc.retries,
			BaseURL: strings.TrimSpace(a.getenv(envOpenAIBaseURL))}
		if m, dim, ok := strings.Cut(model, "@"); ok {
			d, err := strconv.Atoi(dim)
			if err != nil || d < 1 || m == "" {
				return nil, usagef("embedder %q: want openai:MODEL@DIM with DIM a positive integer, e.g. openai:text-embedding-3-small@512", name)
			}
			if rc.dim != 0 && rc.dim != d {
				return nil, usagef("embedder %q asks for %d dimensions but %s=%d", name, d, envEmbedderDim, rc.dim)
			}
			cfg.Model, cfg.Dimensions, cfg.SendDimensions = m, d, true
		}
		if strings.TrimSpace(cfg.Model) == "" {
			return nil, usagef("embedder %q: name the model, e.g. openai:text-embedding-3-small", name)
		}
		cfg.APIKey = strings.TrimSpace(a.getenv(envOpenAIKey))
		if cfg.APIKey == "" {
			cfg.APIKey = strings.TrimSpace(a.getenv(envOpenAIKeyStd))
		}
		if cfg.APIKey == "" && (cfg.BaseURL == "" || strings.Contains(cfg.BaseURL, "api.openai.com")) {
			return nil, usagef("embedder %q: no API key: set %s (or %s), or point %s at a server that needs none",
				name, envOpenAIKeyStd, envOpenAIKey, envOpenAIBaseURL)
		}
		emb, err := openai.New(cfg)
		if err != nil {
			return nil, usageError{fmt.Errorf("embedder %q: %w", name, err)}
		}
		return emb, nil
	}
	model, _ := strings.CutPrefix(name, ollama.ModelPrefix)
	if strings.TrimSpace(model) == "" {
		return nil, usagef("embedder %q: name the model, e.g. ollama:nomic-embed-text", name)
	}
	emb, err := ollama.New(ollama.Config{Model: model, Dimensions: rc.dim, Timeout: rc.timeout, MaxRetries: rc.retries,
		BaseURL: strings.TrimSpace(a.getenv(envOllamaURL)), APIKey: strings.TrimSpace(a.getenv(envOllamaKey))})
	if err != nil {
		return nil, usageError{fmt.Errorf("embedder %q: %w", name, err)}
	}
	return emb, nil
}

// cachePath is the embedding cache of remote embedders.
func (a *app) cachePath() (string, error) {
	home, err := a.home()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, "cache", cache.DefaultFile), nil
}

// cached wraps emb in the on-disk embedding cache, closed when the command
// ends. A cache that cannot be opened is skipped with a warning: it saves
// calls, it is never needed.
func (a *app) cached(emb embed.Embedder) (embed.Embedder, error) {
	path, err := a.cachePath()
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	c, err := cache.Open(path, emb, &cache.Options{Logger: log})
	if err != nil {
		log.Warn("embedding cache unavailable; embedding without it", "err", err)
		return emb, nil
	}
	a.onExit(c.Close)
	return c, nil
}

// onExit registers f to run when the command returns (after it has closed
// its engine), in reverse order of registration.
func (a *app) onExit(f func() error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.closers = append(a.closers, f)
}

// runExit runs the functions registered with onExit.
func (a *app) runExit() error {
	a.mu.Lock()
	fs := a.closers
	a.closers = nil
	a.mu.Unlock()
	var errs []error
	for i := len(fs) - 1; i >= 0; i-- {
		errs = append(errs, fs[i]())
	}
	return errors.Join(errs...)
}
