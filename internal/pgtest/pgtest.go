// Package pgtest starts throw-away PostgreSQL clusters for tests: Debian's
// PostgreSQL 15 with pgvector (scripts/postgres.sh installs both), one
// cluster per call, on a free port of 127.0.0.1, in a fresh folder that is
// removed with it. PostgreSQL refuses to run as root, so under root the
// cluster runs as the postgres user. Without the server a test skips,
// unless CI=true, where it fails: CI must not pass by skipping.
package pgtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// BinDir is where Debian installs PostgreSQL 15's programs; the
// environment variable MNEMO_PG_BIN names another.
const BinDir = "/usr/lib/postgresql/15/bin"

// Cluster is a running throw-away cluster.
type Cluster struct {
	// Dir is its data folder; Port its TCP port on 127.0.0.1.
	Dir  string
	Port int
	bin  string
	as   *user.User // nil: the current user
	log  string     // the server's log file
}

// ServerLog returns what the cluster's server has logged so far: among
// it the statements of a deadlock PostgreSQL broke (DETAIL lines), and
// the lock waits longer than deadlock_timeout (log_lock_waits is on).
func (c *Cluster) ServerLog() (string, error) {
	b, err := os.ReadFile(c.log)
	return string(b), err
}

// DSN is the connection string of database db on the cluster, as the
// superuser "mnemo" (trust authentication, loopback only).
func (c *Cluster) DSN(db string) string {
	return fmt.Sprintf("postgres://mnemo@127.0.0.1:%d/%s?sslmode=disable", c.Port, db)
}

// Start starts a cluster for t, stopped and removed when t ends.
func Start(t testing.TB) *Cluster {
	t.Helper()
	bin := os.Getenv("MNEMO_PG_BIN")
	if bin == "" {
		bin = BinDir
	}
	if _, err := os.Stat(filepath.Join(bin, "postgres")); err != nil {
		msg := fmt.Sprintf("PostgreSQL 15 is not installed (%v): scripts/postgres.sh installs it with pgvector", err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	c := &Cluster{bin: bin}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, PostgreSQL needs another user, and there is no postgres user: %v", err)
		}
		c.as = u
	}
	dir := c.workDir(t, "mnemo-pg-")
	if out, err := c.run("initdb", "-D", c.Dir, "-U", "mnemo", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale", "C"); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	c.serve(t, dir)
	return c
}

// serve starts the cluster's server on a free port, logging to dir, and
// stops it when t ends; a test that failed gets the end of the log.
func (c *Cluster) serve(t testing.TB, dir string) {
	t.Helper()
	c.log = filepath.Join(dir, "server.log")
	// A port can be taken between choosing it and the server binding it:
	// try a few.
	for attempt := 0; ; attempt++ {
		var err error
		if c.Port, err = freePort(); err != nil {
			t.Fatal(err)
		}
		out, err := c.run("pg_ctl", "-D", c.Dir, "-w", "-t", "60", "-l", c.log, "-o",
			fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -k %s -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c log_lock_waits=on", c.Port, dir),
			"start")
		if err == nil {
			break
		}
		if attempt == 3 {
			log, _ := c.ServerLog()
			t.Fatalf("pg_ctl start: %v\n%s\n%s", err, out, log)
		}
	}
	t.Cleanup(func() {
		if t.Failed() {
			if log, err := c.ServerLog(); err == nil {
				t.Logf("the end of the server's log (%s):\n%s", c.log, log[max(0, len(log)-logTail):])
			}
		}
		if out, err := c.run("pg_ctl", "-D", c.Dir, "-m", "immediate", "-w", "stop"); err != nil {
			t.Logf("pg_ctl stop: %v\n%s", err, out)
		}
	})
}

// logTail is how much of its server's log a failed test gets.
const logTail = 16 << 10

// StartReplica starts a streaming replica of primary for t (a base backup
// of it, following its WAL), stopped and removed when t ends. Hot standby:
// it answers reads.
func StartReplica(t testing.TB, primary *Cluster) *Cluster {
	t.Helper()
	c := &Cluster{bin: primary.bin, as: primary.as}
	dir := c.workDir(t, "mnemo-pg-replica-")
	if out, err := c.run("pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(primary.Port), "-U", "mnemo", "-D", c.Dir,
		"-R", "-X", "stream", "--no-sync"); err != nil {
		t.Fatalf("pg_basebackup: %v\n%s", err, out)
	}
	c.serve(t, dir)
	return c
}

// workDir makes the cluster's folder (removed when t ends), owned by its
// user, and sets Dir to its data folder inside.
func (c *Cluster) workDir(t testing.TB, prefix string) string {
	t.Helper()
	// Not t.TempDir: its parents are private to the test's user.
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := c.own(dir); err != nil {
		t.Fatal(err)
	}
	c.Dir = filepath.Join(dir, "data")
	return dir
}

// own gives dir to the cluster's user.
func (c *Cluster) own(dir string) error {
	if c.as == nil {
		return nil
	}
	uid, err1 := strconv.Atoi(c.as.Uid)
	gid, err2 := strconv.Atoi(c.as.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	return os.Chown(dir, uid, gid)
}

// run runs one of the cluster's programs as its user.
func (c *Cluster) run(prog string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := filepath.Join(c.bin, prog)
	var cmd *exec.Cmd
	if c.as != nil {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", c.as.Username, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
