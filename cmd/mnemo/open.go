package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"strings"

	"github.com/mnemo-dev/mnemo"
)

// engineFlags are the flags every command that opens the engine shares.
type engineFlags struct {
	db       string
	embedder string
}

func (f *engineFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.db, "db", "", "database file (default $MNEMO_DB, else $MNEMO_HOME/mnemo.db)")
	fs.StringVar(&f.embedder, "embedder", "", "embedder: "+strings.Join(embedderNames, ", ")+" (default $MNEMO_EMBEDDER, else "+defaultEmbedder+"; see mnemo help)")
}

// open opens the engine the flags describe.
func (f *engineFlags) open(a *app) (*mnemo.Engine, error) {
	path, err := a.dbPath(f.db)
	if err != nil {
		return nil, err
	}
	emb, err := a.openEmbedder(a.embedderName(f.embedder))
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return mnemo.Open(path, &mnemo.Config{Embedder: emb, Logger: log, AccessFlushInterval: -1})
}

// writeJSON prints v as indented JSON.
func writeJSON(a *app, v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// requireProfile rejects a blank --profile.
func requireProfile(p string) error {
	if strings.TrimSpace(p) == "" {
		return usagef("--profile is required (or set MNEMO_PROFILE)")
	}
	return nil
}
