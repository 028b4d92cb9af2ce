package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/store/postgres"
)

// cmdMigrate creates a database or brings its schema to this mnemo's
// version, and prints the version.
func cmdMigrate(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "migrate")
	db := fs.String("db", "", "database: a SQLite file or a postgres:// URL (default $MNEMO_DB, else $MNEMO_HOME/mnemo.db)")
	index := fs.Bool("index-vectors", true, "on Postgres with pgvector, build the HNSW index of every profile of 5,000 embedded memories or more")
	fs.Usage = func() {
		fmt.Fprintln(a.stderr, `usage: mnemo migrate [--db DB] [--index-vectors=false]

Creates the database (or, on Postgres, the schema) if there is none, and
applies the schema migrations it lacks, one process at a time. Every
command does so when it opens a database; run it to upgrade before
starting servers. On Postgres it also creates the vector extension
(pgvector) when the server has it and the role may, so that recalls rank
embeddings in SQL, and builds the HNSW index of each profile of 5,000
embedded memories or more (mnemo serve does so too, in the background).`)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("mnemo migrate takes no arguments, got %q", pos)
	}
	path, err := a.dbPath(*db)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	st, err := mnemo.OpenStore(ctx, path, mnemo.StoreOptions{Logger: log})
	if err != nil {
		return err
	}
	defer st.Close()
	v, ok := st.(interface {
		SchemaVersion(context.Context) (int, error)
	})
	if !ok {
		return fmt.Errorf("migrate: the store of %s reports no schema version", redact(path))
	}
	n, err := v.SchemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	fmt.Fprintf(a.stdout, "%s: schema version %d\n", redact(path), n)
	ps, ok := st.(*postgres.Store)
	if !ok {
		return nil
	}
	repaired, err := ps.RepairVectors(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if repaired > 0 {
		fmt.Fprintf(a.stdout, "memory_vectors: %d rows added or removed to match the memories' embeddings (written by an older mnemo)\n", repaired)
	}
	if ok, why := ps.Vectors(); !ok {
		fmt.Fprintf(a.stdout, "dense leg: in each process (pgvector unused: %s)\n", why)
		return nil
	}
	fmt.Fprintln(a.stdout, "dense leg: in SQL (pgvector)")
	if !*index {
		return nil
	}
	ix, err := ps.IndexVectors(ctx, 0, nil)
	for _, x := range ix {
		verb := "has"
		if x.Built {
			verb = "built"
		}
		fmt.Fprintf(a.stdout, "profile %q: %s HNSW index %s (%d-d)\n", x.Profile, verb, x.Name, x.Dim)
	}
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}
