package mnemo_test

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/internal/pgtest"
	"github.com/mnemo-dev/mnemo/internal/testenv"
)

// copyDB is one copy of a database in a test of copied databases: where
// it is, where its snapshots are, and the ids of the memories written to
// it alone (by the word they all hold).
type copyDB struct {
	name     string
	path     string
	indexDir string
	own      map[string][]string // word → ids
	logs     *testenv.SyncBuffer
}

func (d *copyDB) open(t *testing.T) *mnemo.Engine {
	t.Helper()
	d.logs = &testenv.SyncBuffer{}
	e, err := mnemo.Open(d.path, &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1,
		IndexDir: d.indexDir, Logger: slog.New(slog.NewTextHandler(d.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// write remembers n memories holding word in d's profile alice, and, with
// snapshot, rebuilds its index (which writes the snapshot).
func (d *copyDB) write(t *testing.T, word string, n int, snapshot bool) {
	t.Helper()
	e := d.open(t)
	defer e.Close()
	var ins []mnemo.Input
	for i := range n {
		ins = append(ins, mnemo.Input{Profile: "alice", Content: fmt.Sprintf("%s sighting number %d by the river", word, i)})
	}
	ms, err := e.RememberBatch(t.Context(), ins)
	if err != nil {
		t.Fatal(err)
	}
	if d.own == nil {
		d.own = map[string][]string{}
	}
	for _, m := range ms {
		d.own[word] = append(d.own[word], m.ID)
	}
	if snapshot {
		if _, err := e.RebuildIndex(t.Context(), "alice"); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

// recallsOwn reopens d and checks that both legs of its recall find
// exactly d's own memories of each word: those of words written to
// another copy after they diverged, none.
func (d *copyDB) recallsOwn(t *testing.T, words ...string) {
	t.Helper()
	e := d.open(t)
	defer e.Close()
	for _, w := range words {
		res, err := e.Recall(t.Context(), mnemo.Query{Profile: "alice", Text: w, Limit: 30, Trace: true, NoTouch: true,
			Overrides: map[string]string{"min_relevance": "0"}})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Trace.LexicalSearch; got != "the in-process full-text index" {
			t.Fatalf("%s: the lexical leg ranked in %q", d.name, got)
		}
		want := slices.Sorted(slices.Values(d.own[w]))
		held := map[string]bool{}
		for _, ids := range d.own {
			for _, id := range ids {
				held[id] = true
			}
		}
		var lexical, dense, foreign []string
		for _, h := range res.Trace.Legs["lexical"] {
			lexical = append(lexical, h.ID)
		}
		for i, h := range res.Trace.Legs["dense"] {
			if !held[h.ID] {
				foreign = append(foreign, h.ID)
			}
			if i < len(want) { // the word's memories rank first
				dense = append(dense, h.ID)
			}
		}
		if len(foreign) > 0 {
			t.Errorf("%s: the dense leg of %q found %d memories the database does not hold\nlog:\n%s", d.name, w, len(foreign), d.logs.String())
		}
		slices.Sort(lexical)
		slices.Sort(dense)
		if !slices.Equal(lexical, want) {
			t.Errorf("%s: the lexical leg of %q found %v, want its own %v\nlog:\n%s", d.name, w, lexical, want, d.logs.String())
		}
		if !slices.Equal(dense, want) {
			t.Errorf("%s: the dense leg of %q ranked %v first, want its own %v\nlog:\n%s", d.name, w, dense, want, d.logs.String())
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies the files of folder from into folder to (created).
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	if err := os.MkdirAll(to, 0o700); err != nil {
		t.Fatal(err)
	}
	err := filepath.WalkDir(from, func(p string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, de.Name()), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// snapshotFile returns the one snapshot in dir.
func snapshotFile(t *testing.T, dir string) string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.vec"))
	if err != nil || len(names) != 1 {
		t.Fatalf("snapshots in %s: %v, %v", dir, names, err)
	}
	return names[0]
}

// copiedDatabases: a database copied file by file (cp a.db b.db) keeps its
// history, instance and change sequence; written apart after, each copy
// must answer with its own memories alone, whichever copy's snapshot lies
// beside it. makeCopy copies database a to b (and its snapshots, when
// withIndex).
func copiedDatabases(t *testing.T, a, b, c *copyDB, makeCopy func(from, to *copyDB, withIndex bool)) {
	a.write(t, "heron", 40, true) // the common history, in a snapshot
	makeCopy(a, b, false)
	makeCopy(a, c, true) // c gets the snapshot of the common history
	// a writes past the copy and snapshots; its snapshots are copied
	// beside b only now (cp -r of a live database's folder); b writes as
	// many memories of its own.
	a.write(t, "aardvark", 12, true)
	copyTree(t, a.indexDir, b.indexDir)
	b.write(t, "bumblebee", 12, false)
	c.write(t, "cormorant", 12, false)
	for _, d := range []*copyDB{a, b, c} {
		d.own["heron"] = a.own["heron"]
	}
	words := []string{"heron", "aardvark", "bumblebee", "cormorant"}
	a.recallsOwn(t, words...)
	b.recallsOwn(t, words...)
	if !strings.Contains(b.logs.String(), "snapshot ignored") {
		t.Errorf("b: the refusal of a's snapshot was not logged:\n%s", b.logs.String())
	}
	c.recallsOwn(t, words...)
	if !strings.Contains(c.logs.String(), "restored from its snapshot") {
		t.Errorf("c: the snapshot of the history c shares with a was not used:\n%s", c.logs.String())
	}

	// b snapshots its own memories; that snapshot moved beside a (or c)
	// is refused there.
	b.write(t, "bumblebee", 3, true)
	for _, d := range []*copyDB{a, c} {
		snap := snapshotFile(t, b.indexDir)
		buf, err := os.ReadFile(snap)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d.indexDir, filepath.Base(snap)), buf, 0o600); err != nil {
			t.Fatal(err)
		}
		d.write(t, "aardvark", 3, false)
		d.recallsOwn(t, words...)
		if !strings.Contains(d.logs.String(), "snapshot ignored") {
			t.Errorf("%s: the refusal of b's snapshot was not logged:\n%s", d.name, d.logs.String())
		}
	}
	b.recallsOwn(t, words...)
}

// TestEngine_CopiedDatabaseSnapshots: copies of a SQLite file (cp).
func TestEngine_CopiedDatabaseSnapshots(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	db := func(name string) *copyDB {
		p := filepath.Join(tmp, name+".db")
		return &copyDB{name: name, path: p, indexDir: mnemo.IndexDir(p)}
	}
	a, b, c := db("a"), db("b"), db("c")
	copiedDatabases(t, a, b, c, func(from, to *copyDB, withIndex bool) {
		buf, err := os.ReadFile(from.path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to.path, buf, 0o600); err != nil {
			t.Fatal(err)
		}
		if withIndex {
			copyTree(t, from.indexDir, to.indexDir)
		}
	})
}

// TestEngine_CopiedDatabaseSnapshots_Postgres: copies of a Postgres
// database (CREATE DATABASE … TEMPLATE, a copy of its files), each with
// its snapshots in a folder (Config.IndexDir) and the dense leg in
// process.
func TestEngine_CopiedDatabaseSnapshots_Postgres(t *testing.T) {
	t.Parallel()
	cl := pgtest.Start(t)
	tmp := t.TempDir()
	ctx := t.Context()
	admin, err := pgx.Connect(ctx, cl.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	if _, err := admin.Exec(ctx, `CREATE DATABASE a`); err != nil {
		t.Fatal(err)
	}
	db := func(name string) *copyDB {
		return &copyDB{name: name, path: cl.DSN(name) + "&dense=process", indexDir: filepath.Join(tmp, name+".index")}
	}
	a, b, c := db("a"), db("b"), db("c")
	copiedDatabases(t, a, b, c, func(from, to *copyDB, withIndex bool) {
		if _, err := admin.Exec(ctx, fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s`, to.name, from.name)); err != nil {
			t.Fatal(err)
		}
		if withIndex {
			copyTree(t, from.indexDir, to.indexDir)
		}
	})
}
