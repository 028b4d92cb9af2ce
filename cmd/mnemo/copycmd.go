package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/store"
)

// cmdCopy copies memories, settings and keys between two stores.
func cmdCopy(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "copy")
	from := fs.String("from", "", "database to copy from: a SQLite file or a postgres:// URL (default $MNEMO_DB, else $MNEMO_HOME/mnemo.db)")
	to := fs.String("to", "", "database to copy to, created if needed: a SQLite file or a postgres:// URL (required)")
	var profiles repeatFlag
	fs.Var(&profiles, "profile", "copy this profile only (repeatable; default: every profile, the server-wide settings and every API key)")
	batch := fs.Int("batch", store.DefaultCopyBatch, "most memories read and written at a time (fewer when they are long: a batch holds about 16 MiB)")
	fs.Usage = func() {
		fmt.Fprintln(a.stderr, `usage: mnemo copy --from DB --to DB [--profile P]... [--batch N]

Copies memories (with their embeddings, times, turns, access statistics and
metadata as they are), settings and API keys between any two stores: SQLite
to Postgres and back. Run it again after an interruption: what the
destination holds already is skipped, and each batch is written whole.`)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("mnemo copy takes no arguments, got %q", pos)
	}
	if *to == "" {
		return usagef("--to is required")
	}
	if *batch < 1 {
		return usagef("--batch %d: must be ≥ 1", *batch)
	}
	for _, p := range profiles {
		if err := checkProfileFlag(p); err != nil {
			return err
		}
	}
	src, err := a.dbPath(*from)
	if err != nil {
		return err
	}
	if src == *to {
		return usagef("--from and --to name the same database %s", redact(src))
	}
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := mnemo.OpenStore(ctx, src, mnemo.StoreOptions{MustExist: true, Logger: log})
	if err != nil {
		return fmt.Errorf("open %s: %w", redact(src), err)
	}
	defer s.Close()
	d, err := mnemo.OpenStore(ctx, *to, mnemo.StoreOptions{Logger: log})
	if err != nil {
		return fmt.Errorf("open %s: %w", redact(*to), err)
	}
	defer d.Close()
	last := ""
	st, err := store.Copy(ctx, d, s, store.CopyParams{Profiles: profiles, BatchSize: *batch, Progress: func(profile string, copied, skipped int) {
		if profile != last {
			last = profile
		}
		fmt.Fprintf(a.stderr, "\rcopy: profile %q: %d memories copied, %d there already", profile, copied, skipped)
	}})
	fmt.Fprintln(a.stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "copied %d memories (%d there already), %d settings, %d keys from %s to %s\n",
		st.Memories, st.Skipped, st.Settings, st.Keys, redact(src), redact(*to))
	return nil
}

// redact hides the password of a postgres:// URL.
func redact(db string) string {
	if i := strings.Index(db, "://"); i >= 0 {
		if at := strings.Index(db[i+3:], "@"); at >= 0 {
			if colon := strings.Index(db[i+3:i+3+at], ":"); colon >= 0 {
				return db[:i+3+colon] + ":…" + db[i+3+at:]
			}
		}
	}
	return db
}
