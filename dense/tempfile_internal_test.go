//go:build linux || darwin || dragonfly || freebsd || netbsd || openbsd

package dense

import (
	"bufio"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/internal/testenv"
)

// writerEnv names the folder a snapshot writer process (TestWriterProcess)
// creates its temporary file in.
const writerEnv = "MNEMO_DENSE_SNAPSHOT_WRITER"

// TestWriterProcess is not a test: run by TestCatalog_StaleTemporaries as
// another process, it creates a temporary snapshot file as a writer does,
// writes a megabyte to it, prints its name and waits to be killed.
func TestWriterProcess(t *testing.T) {
	dir := os.Getenv(writerEnv)
	if dir == "" {
		t.Skip("run by TestCatalog_StaleTemporaries as a snapshot writer")
	}
	f, err := createTemp(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString(f.Name() + "\n")
	io.Copy(io.Discard, os.Stdin) // until the test kills it
}

// startWriter starts a snapshot writer process in dir and returns it and
// its temporary file.
func startWriter(t *testing.T, dir string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriterProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), writerEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	name, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(filepath.Base(name), ".snapshot-") {
		t.Fatalf("the writer process printed %q, %v", name, err)
	}
	return cmd, strings.TrimSpace(name)
}

func kill(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no cleanup of its own
		t.Fatal(err)
	}
	cmd.Wait()
}

func exists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}

// TestCatalog_StaleTemporaries: the temporary files of snapshot writers
// killed mid-write (kill -9) are removed when a catalog opens the folder,
// and before each write; a live writer's, however old, is left alone.
func TestCatalog_StaleTemporaries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// Four writers at once (each removes the dead writers' files as it
	// starts, not the others'), three of them killed.
	var cmds []*exec.Cmd
	var killed []string
	for range 3 {
		cmd, name := startWriter(t, dir)
		cmds, killed = append(cmds, cmd), append(killed, name)
	}
	live, liveName := startWriter(t, dir)
	for _, cmd := range cmds {
		kill(t, cmd)
	}
	// A writer of an older mnemo, which locked nothing.
	unlocked := filepath.Join(dir, ".snapshot-unlocked")
	if err := os.WriteFile(unlocked, make([]byte, 100), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour) // age says nothing of a writer
	if err := os.Chtimes(liveName, old, old); err != nil {
		t.Fatal(err)
	}
	for _, name := range append(killed, unlocked, liveName) {
		if !exists(name) {
			t.Fatalf("%s is not there to begin with", name)
		}
	}

	var logs testenv.SyncBuffer
	st := oneMemoryStore(t)
	c := NewCatalog(st, Options{Dir: dir, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for _, name := range append(killed, unlocked) {
		if exists(name) {
			t.Errorf("a dead writer's temporary file %s is still there after the catalog opened the folder", filepath.Base(name))
		}
	}
	if !exists(liveName) {
		t.Fatalf("the live writer's temporary file was removed")
	}
	if !strings.Contains(logs.String(), "files=4") || !strings.Contains(logs.String(), "bytes=3145828") {
		t.Errorf("the removal is not logged with what it removed:\n%s", logs.String())
	}
	if _, err := c.Rebuild(t.Context(), "alice"); err != nil { // writes beside the live writer
		t.Fatal(err)
	}
	c.Close()
	if !exists(liveName) || !exists(SnapshotPath(dir, "alice")) {
		t.Fatalf("after a snapshot written beside a live writer: its file kept %v, the snapshot written %v",
			exists(liveName), exists(SnapshotPath(dir, "alice")))
	}

	// Killed in its turn: the next catalog to open the folder removes it.
	kill(t, live)
	NewCatalog(st, Options{Dir: dir}).Close()
	if exists(liveName) {
		t.Errorf("the killed writer's temporary file is still there")
	}
	names, _ := filepath.Glob(filepath.Join(dir, tempPattern))
	if len(names) != 0 {
		t.Errorf("temporary files left: %v", names)
	}
}

// TestCatalog_FolderPrivate: the folder of snapshots is created 0700 and
// the snapshots 0600: they hold the memories' text.
func TestCatalog_FolderPrivate(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "mnemo.db.index")
	c := NewCatalog(oneMemoryStore(t), Options{Dir: dir, Text: true})
	defer c.Close()
	if _, err := c.Rebuild(t.Context(), "alice"); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]os.FileMode{dir: 0o700, SnapshotPath(dir, "alice"): 0o600} {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %o, want %o", name, got, want)
		}
	}
}
