package main

import (
	"context"
	"fmt"

	"github.com/mnemo-dev/mnemo"
)

// cmdMigrate creates a database or brings its schema to this mnemo's
// version, and prints the version.
func cmdMigrate(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "migrate")
	db := fs.String("db", "", "database: a SQLite file or a postgres:// URL (default $MNEMO_DB, else $MNEMO_HOME/mnemo.db)")
	fs.Usage = func() {
		fmt.Fprintln(a.stderr, `usage: mnemo migrate [--db DB]

Creates the database (or, on Postgres, the schema) if there is none, and
applies the schema migrations it lacks, one process at a time. Every
command does so when it opens a database; run it to upgrade before
starting servers.`)
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
	st, err := mnemo.OpenStore(ctx, path, mnemo.StoreOptions{})
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
	return nil
}
