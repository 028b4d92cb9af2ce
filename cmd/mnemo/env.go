package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/embed/glove"
)

// home returns mnemo's data directory: $MNEMO_HOME, else
// $XDG_DATA_HOME/mnemo, else ~/.local/share/mnemo. Models live under
// home/models and the default database is home/mnemo.db.
func (a *app) home() (string, error) {
	if h := a.getenv("MNEMO_HOME"); h != "" {
		return h, nil
	}
	if x := a.getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "mnemo"), nil
	}
	u, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("locate home directory (set MNEMO_HOME): %w", err)
	}
	return filepath.Join(u, ".local", "share", "mnemo"), nil
}

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
var embedderNames = []string{"glove", "hash"}

// openEmbedder returns the embedder called name. "glove" loads the model
// file installed by `mnemo models pull`; without it the error wraps
// glove.ErrModelMissing and says to run that command.
func (a *app) openEmbedder(name string) (embed.Embedder, error) {
	switch name {
	case "glove":
		home, err := a.home()
		if err != nil {
			return nil, err
		}
		m, err := glove.Load(glove.DefaultPath(home))
		if err != nil {
			return nil, err
		}
		return m, nil
	case "hash":
		return embed.NewHash(embed.DefaultHashDim), nil
	default:
		return nil, usagef("embedder %q: must be one of %s", name, strings.Join(embedderNames, ", "))
	}
}
