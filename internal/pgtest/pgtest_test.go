package pgtest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mnemo-dev/mnemo/internal/pgtest"
)

// TestStart: a cluster answers on its port, is PostgreSQL 15, and has
// pgvector, whose cosine distance it computes; its server's log is read.
func TestStart(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var version int
	if err := conn.QueryRow(ctx, `SELECT current_setting('server_version_num')::int`).Scan(&version); err != nil || version/10000 != 15 {
		t.Fatalf("server version %d, %v; want 15", version, err)
	}
	if _, err := conn.Exec(ctx, `CREATE EXTENSION vector`); err != nil {
		t.Fatalf("pgvector: %v", err)
	}
	var d float64
	if err := conn.QueryRow(ctx, `SELECT '[1,0,0]'::vector <=> '[0,1,0]'::vector`).Scan(&d); err != nil || d != 1 {
		t.Fatalf("cosine distance of orthogonal vectors = %v, %v; want 1", d, err)
	}
	if log, err := c.ServerLog(); err != nil || !strings.Contains(log, "ready to accept connections") {
		t.Fatalf("server log = %q, %v; want the server's start", log, err)
	}
}

// TestStart_Independent: two clusters run side by side.
func TestStart_Independent(t *testing.T) {
	t.Parallel()
	a, b := pgtest.Start(t), pgtest.Start(t)
	if a.Port == b.Port || a.Dir == b.Dir {
		t.Fatalf("clusters share a port or folder: %+v %+v", a, b)
	}
	ctx := context.Background()
	for i, c := range []*pgtest.Cluster{a, b} {
		conn, err := pgx.Connect(ctx, c.DSN("postgres"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, `CREATE TABLE t (n int)`); err != nil {
			t.Fatalf("cluster %d: %v", i, err)
		}
		conn.Close(ctx)
	}
}
