package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store/sqlitestore"
)

// engineFlags are the flags every command that opens the engine shares.
type engineFlags struct {
	db       string
	embedder string
	// writeTimeout and queryTimeout are the embedding deadlines as typed
	// ("" when not given).
	writeTimeout, queryTimeout string
	// contextTurns is --context-turns as typed ("" when not given).
	contextTurns string
	// keepGraphs opens the engine as a command that measures or builds the
	// dense indexes (bench, index) rather than a one-shot call: it
	// restores the snapshots' graphs (see Config.ANN.OneShot).
	keepGraphs bool
}

// Environment variables of the embedding deadlines.
const (
	envWriteEmbedTimeout = "MNEMO_WRITE_EMBED_TIMEOUT"
	envQueryEmbedTimeout = "MNEMO_QUERY_EMBED_TIMEOUT"
	envContextTurns      = "MNEMO_CONTEXT_TURNS"
)

// maxContextTurns bounds --context-turns.
const maxContextTurns = 10

func (f *engineFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.db, "db", "", "database file (default $MNEMO_DB, else $MNEMO_HOME/mnemo.db)")
	fs.StringVar(&f.embedder, "embedder", "", "embedder: "+strings.Join(embedderNames, ", ")+" (default $MNEMO_EMBEDDER, else "+defaultEmbedder+"; see mnemo help)")
	fs.StringVar(&f.writeTimeout, "write-embed-timeout", "", fmt.Sprintf("longest a write waits for its embedding, e.g. 2s; past it the memory is stored without one, "+
		"embedded later by mnemo reembed or serve; 0 waits for the provider (default $%s, else %v)", envWriteEmbedTimeout, mnemo.DefaultWriteEmbedTimeout))
	fs.StringVar(&f.queryTimeout, "query-embed-timeout", "", fmt.Sprintf("longest a recall waits for the query's embedding, e.g. 2s; past it the dense leg is skipped; "+
		"0 waits for the provider (default $%s, else %v)", envQueryEmbedTimeout, mnemo.DefaultQueryEmbedTimeout))
	fs.StringVar(&f.contextTurns, "context-turns", "", fmt.Sprintf("previous turns of its session the full-text index keeps with each memory, "+
		"scored by the context_field_weight setting; 0 for none; kept in the database, changing it rebuilds the index (default $%s, else the database's: %d for a new one)", envContextTurns, sqlitestore.DefaultContextTurns))
}

// config returns the engine configuration the flags and the environment
// describe, with its embedder.
func (f *engineFlags) config(a *app) (mnemo.Config, error) {
	var c mnemo.Config
	var err error
	if c.WriteEmbedTimeout, err = a.embedTimeout("--write-embed-timeout", f.writeTimeout, envWriteEmbedTimeout); err != nil {
		return c, err
	}
	if c.QueryEmbedTimeout, err = a.embedTimeout("--query-embed-timeout", f.queryTimeout, envQueryEmbedTimeout); err != nil {
		return c, err
	}
	if c.ContextTurns, err = a.contextTurns(f.contextTurns); err != nil {
		return c, err
	}
	c.Embedder, err = a.openEmbedder(a.embedderName(f.embedder))
	return c, err
}

// contextTurns resolves --context-turns: the flag's value, else the
// environment variable's, as the engine's Config.ContextTurns (0 when
// neither is given: the database's).
func (a *app) contextTurns(flagValue string) (int, error) {
	what, v := fmt.Sprintf("--context-turns %q", flagValue), strings.TrimSpace(flagValue)
	if v == "" {
		v = strings.TrimSpace(a.getenv(envContextTurns))
		what = fmt.Sprintf("%s=%q", envContextTurns, v)
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > maxContextTurns {
		return 0, usagef("%s: must be a whole number of turns in [0, %d]", what, maxContextTurns)
	}
	if n == 0 {
		return -1, nil
	}
	return n, nil
}

// embedTimeout resolves an embedding deadline: the flag's value, else the
// environment variable's, else 0 (the engine's default). A typed 0 means
// no deadline (the engine's negative).
func (a *app) embedTimeout(flagName, flagValue, env string) (time.Duration, error) {
	what, v := fmt.Sprintf("%s %q", flagName, flagValue), strings.TrimSpace(flagValue)
	if v == "" {
		v = strings.TrimSpace(a.getenv(env))
		what = fmt.Sprintf("%s=%q", env, v)
	}
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, usagef("%s: must be a duration such as 1s or 500ms, or 0 for none", what)
	}
	if d == 0 {
		return -1, nil
	}
	return d, nil
}

// open opens the engine the flags describe, creating its database if
// there is none (the commands that store something).
func (f *engineFlags) open(a *app) (*mnemo.Engine, error) {
	return f.openWith(a, false)
}

// openExisting opens the engine the flags describe on a database that
// must exist: a mistyped --db is an error naming the path (exit 4), not a
// new empty database.
func (f *engineFlags) openExisting(a *app) (*mnemo.Engine, error) {
	return f.openWith(a, true)
}

func (f *engineFlags) openWith(a *app, mustExist bool) (*mnemo.Engine, error) {
	path, err := a.dbPath(f.db)
	if err != nil {
		return nil, err
	}
	cfg, err := f.config(a)
	if err != nil {
		return nil, err
	}
	cfg.Logger = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg.AccessFlushInterval = -1
	cfg.MustExist = mustExist
	// A one-shot command exits before a graph of a large profile could
	// grow, and decoding one costs it more than walking it saves; mnemo
	// serve and mcp grow them (and write their snapshots).
	cfg.ANN.OneShot = !f.keepGraphs
	e, err := mnemo.Open(path, &cfg)
	if errors.Is(err, mnemotype.ErrNotFound) {
		return nil, noDatabase(path)
	}
	return e, err
}

// noDatabase is the error of a command that needs a database where there
// is none.
func noDatabase(path string) error {
	return fmt.Errorf("no database at %s (mnemo add or mnemo import creates one; --db or MNEMO_DB names another): %w", path, mnemotype.ErrNotFound)
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

// requireProfile rejects a missing --profile, and one that cannot name a
// profile (mnemotype.CheckProfile).
func requireProfile(p string) error {
	if p == "" {
		return usagef("--profile is required (or set MNEMO_PROFILE)")
	}
	return checkProfileFlag(p)
}

// checkProfileFlag rejects a --profile (or MNEMO_PROFILE) that cannot name
// a profile, with exit code 2.
func checkProfileFlag(p string) error {
	if err := mnemotype.CheckProfile(p); err != nil {
		return usagef("--profile: %v", err)
	}
	return nil
}
