package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo/internal/pgtest"
	"github.com/mnemo-dev/mnemo/store/postgres"
)

// TestCLI_CopyAndMigrate: mnemo migrate creates a database at the current
// schema; mnemo copy copies a store into another, skips what is there on a
// second run, and refuses bad flags with exit 2.
func TestCLI_CopyAndMigrate(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("add", "--profile", "me", "--session", "s1", "--actor", "Caroline", "I adopted a cat named Miso")
	c.ok("add", "--profile", "me", "--session", "s1", "Does Miso like the new flat?")
	c.ok("settings", "set", "--profile", "me", "keyword_weight=1.5")
	to := filepath.Join(t.TempDir(), "copy.db")
	if out := c.ok("migrate", "--db", to); !strings.Contains(out, "schema version") {
		t.Errorf("migrate printed %q", out)
	}
	if out := c.ok("copy", "--to", to); !strings.Contains(out, "copied 2 memories (0 there already), 1 settings") {
		t.Errorf("copy printed %q", out)
	}
	if out := c.ok("copy", "--to", to); !strings.Contains(out, "copied 0 memories (2 there already)") {
		t.Errorf("copy run again printed %q", out)
	}
	out := c.ok("recall", "--db", to, "--profile", "me", "--min-relevance", "0", "cat Miso")
	if !strings.Contains(out, "adopted a cat") {
		t.Errorf("recall on the copy: %q", out)
	}
	if out := c.ok("settings", "get", "--db", to, "--profile", "me"); !strings.Contains(out, "1.5") {
		t.Errorf("settings of the copy: %q", out)
	}
	for _, args := range [][]string{{"copy"}, {"copy", "--to", to, "extra"}, {"copy", "--to", to, "--batch", "0"}} {
		if code, _, errs := c.run("", args...); code != 2 {
			t.Errorf("mnemo %v: exit %d, want 2: %s", args, code, errs)
		}
	}
	if code, _, errs := c.run("", "copy", "--from", filepath.Join(t.TempDir(), "none.db"), "--to", to); code == 0 {
		t.Errorf("copy from a missing database: exit 0: %s", errs)
	}
}

// TestCLI_MigratePostgres: mnemo migrate on Postgres says where the dense
// leg runs — in SQL with pgvector, in each process with dense=process —
// and recalls answer either way; an unknown dense= is refused.
func TestCLI_MigratePostgres(t *testing.T) {
	t.Parallel()
	cl := pgtest.Start(t)
	c := newCLI(t)
	db := cl.DSN("postgres") + "&schema=m"
	c.ok("add", "--db", db, "--profile", "me", "--session", "s1", "I adopted a cat named Miso")
	c.ok("add", "--db", db, "--profile", "me", "--session", "s1", "Does Miso like the new flat?")
	version := fmt.Sprintf("schema version %d\n", postgres.CurrentSchemaVersion())
	if out := c.ok("migrate", "--db", db); !strings.Contains(out, version) || !strings.Contains(out, "dense leg: in SQL (pgvector)") {
		t.Errorf("migrate printed %q", out)
	}
	if out := c.ok("migrate", "--db", db+"&dense=process"); !strings.Contains(out, "dense leg: in each process") {
		t.Errorf("migrate with dense=process printed %q", out)
	}
	for _, d := range []string{"", "&dense=process", "&dense=sql"} {
		out := c.ok("recall", "--db", db+d, "--profile", "me", "--min-relevance", "0", "--weights", "lexical=0,dense=1,recency=0,access=0", "kitten adoption")
		if !strings.Contains(out, "adopted a cat") {
			t.Errorf("dense-only recall (%q): %q", d, out)
		}
	}
	if code, _, errs := c.run("", "migrate", "--db", db+"&dense=gpu"); code == 0 || !strings.Contains(errs, "dense=") {
		t.Errorf("dense=gpu: exit %d: %s", code, errs)
	}
}
