package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo"
)

// copyFile copies a closed database (or a snapshot) for the test.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestCLI_Index(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	db := c.env["MNEMO_DB"]
	for _, text := range []string{"one memory", "two memories", "three memories"} {
		c.ok("add", "--profile", "me", text)
	}
	c.ok("add", "--profile", "other", "another tenant")
	if out := c.ok("index", "verify", "--profile", "me"); !strings.Contains(out, "me: ok, 3 memories (no usable snapshot") {
		t.Errorf("verify without a snapshot: %s", out)
	}
	// An older copy of the database, taken now.
	db2 := filepath.Join(t.TempDir(), "copy.db")
	copyFile(t, db, db2)

	c.ok("add", "--profile", "me", "four memories")
	out := c.ok("index", "rebuild", "--all")
	for _, want := range []string{"me: rebuilt from the database, 4 memories", "other: rebuilt from the database, 1 memories"} {
		if !strings.Contains(out, want) {
			t.Errorf("rebuild --all lacks %q:\n%s", want, out)
		}
	}
	snap := func(db string) string {
		entries, err := os.ReadDir(mnemo.IndexDir(db))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".vec") {
				return filepath.Join(mnemo.IndexDir(db), e.Name())
			}
		}
		t.Fatalf("no snapshot in %s", mnemo.IndexDir(db))
		return ""
	}
	var reps []indexReport
	if err := json.Unmarshal([]byte(c.ok("index", "verify", "--profile", "me", "--json")), &reps); err != nil {
		t.Fatal(err)
	}
	if len(reps) != 1 || !reps[0].OK || reps[0].SnapshotSeq == nil || reps[0].Memories != 4 || !strings.HasPrefix(reps[0].Snapshot, mnemo.IndexDir(db)) {
		t.Fatalf("verify --json after rebuild = %+v", reps)
	}

	// The older copy gets this database's snapshots, then is written past
	// their watermark: the snapshot of "me" is refused (this database
	// wrote it after the copy was taken), verify reports it, rebuild
	// replaces it. "other" was not written since: its snapshot is as
	// refused, its mark being as unknown to the copy.
	entries, err := os.ReadDir(mnemo.IndexDir(db))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		copyFile(t, filepath.Join(mnemo.IndexDir(db), e.Name()), filepath.Join(mnemo.IndexDir(db2), e.Name()))
	}
	_ = snap(db2)
	c.env["MNEMO_DB"] = db2
	for _, text := range []string{"five", "six", "seven"} {
		c.ok("add", "--profile", "me", text)
	}
	code, stdout, stderr := c.run("", "index", "verify", "--all")
	if code != 1 || !strings.Contains(stdout, "me: snapshot REFUSED, 6 memories read from the database instead") ||
		!strings.Contains(stdout, "not in the database's history") || !strings.Contains(stdout, "other: snapshot REFUSED") ||
		!strings.Contains(stderr, "2 of 2 profiles") {
		t.Fatalf("verify of the diverged copy: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, _ = c.run("", "index", "verify", "--profile", "me", "--json")
	reps = nil
	if err := json.Unmarshal([]byte(stdout), &reps); err != nil || code != 1 {
		t.Fatalf("verify --json of the diverged copy: exit %d, %v\n%s", code, err, stdout)
	}
	if len(reps) != 1 || reps[0].OK || reps[0].SnapshotSeq != nil || reps[0].Memories != 6 || !strings.Contains(reps[0].Refused, "copy of the database") {
		t.Fatalf("verify --json of the diverged copy = %+v", reps)
	}
	c.ok("index", "rebuild", "--all")
	if out := c.ok("index", "verify", "--all"); !strings.Contains(out, "me: ok, 6 memories (snapshot at change") ||
		!strings.Contains(out, "other: ok, 1 memories (snapshot at change") {
		t.Errorf("verify after rebuild: %s", out)
	}
}

func TestCLI_IndexBadInput(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	c.ok("add", "--profile", "me", "one memory")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"index"}, "needs verify or rebuild"},
		{[]string{"index", "repair"}, `unknown index command "repair"`},
		{[]string{"index", "verify"}, "give --profile P or --all"},
		{[]string{"index", "rebuild", "--profile", "me", "--all"}, "give --profile P or --all"},
		{[]string{"index", "verify", "--profile", "me", "stray"}, `unexpected argument "stray"`},
	} {
		code, _, errs := c.run("", tc.args...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("mnemo %q: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errs, tc.want)
		}
	}
	c.env["MNEMO_DB"] = filepath.Join(t.TempDir(), "none.db")
	if code, _, errs := c.run("", "index", "verify", "--all"); code == 0 || !strings.Contains(errs, "no database") {
		t.Errorf("index verify on no database: exit %d, %s", code, errs)
	}
}
