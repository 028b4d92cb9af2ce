package main

import (
	"log/slog"
	"path/filepath"
	"strings"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/embed/glove"
	"github.com/mnemo-dev/mnemo/embed/ollama"
	"github.com/mnemo-dev/mnemo/embed/openai"
)

// home returns mnemo's data directory: $MNEMO_HOME, else
// $XDG_DATA_HOME/mnemo, else ~/.local/share/mnemo. Models live under
// home/models and the default database is home/mnemo.db.
func (a *app) home() (string, error) { return mnemo.HomeFrom(a.getenv) }

// dbPath resolves the database file: the --db flag, else $MNEMO_DB, else
// home/mnemo.db.
func (a *app) dbPath(flagValue string) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if p := a.getenv("MNEMO_DB"); p != "" {
		return p, nil
	}
	h, err := a.home()
	if err != nil {
		return "", err
	}
	return filepath.Join(h, "mnemo.db"), nil
}

// embedderName resolves the embedder name: the --embedder flag, else
// $MNEMO_EMBEDDER, else the default.
func (a *app) embedderName(flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if e := a.getenv("MNEMO_EMBEDDER"); e != "" {
		return e
	}
	return defaultEmbedder
}

// defaultEmbedder is used when neither --embedder nor MNEMO_EMBEDDER is set.
const defaultEmbedder = "glove"

// embedderNames lists the accepted --embedder values.
var embedderNames = []string{"glove", "hash", "openai:MODEL[@DIM]", "ollama:MODEL"}

// openEmbedder returns the embedder called name: "glove" (the model file
// installed by `mnemo models pull`; without it the error wraps
// glove.ErrModelMissing and says to run that command), "hash", or a remote
// provider, "openai:MODEL" or "ollama:MODEL" (see remoteEmbedder), behind a
// circuit breaker (embed.Breaker) and the on-disk embedding cache: cached
// vectors are served even while the provider is down, and probes reach the
// provider itself.
func (a *app) openEmbedder(name string) (embed.Embedder, error) {
	return a.openEmbedderCache(name, true)
}

// openEmbedderCache is openEmbedder with the embedding cache of remote
// embedders optional.
func (a *app) openEmbedderCache(name string, cached bool) (embed.Embedder, error) {
	switch {
	case name == "glove":
		home, err := a.home()
		if err != nil {
			return nil, err
		}
		m, err := glove.Load(glove.DefaultPath(home))
		if err != nil {
			return nil, err
		}
		return m, nil
	case name == "hash":
		return embed.NewHash(embed.DefaultHashDim), nil
	case strings.HasPrefix(name, openai.ModelPrefix), strings.HasPrefix(name, ollama.ModelPrefix):
		emb, err := a.remoteEmbedder(name)
		if err != nil {
			return nil, err
		}
		b := embed.NewBreaker(emb, &embed.BreakerConfig{
			Logger: slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))})
		a.onExit(b.Close)
		if !cached {
			return b, nil
		}
		return a.cached(b)
	default:
		return nil, usagef("embedder %q: must be one of %s", name, strings.Join(embedderNames, ", "))
	}
}
