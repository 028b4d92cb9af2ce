package dense_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mnemo-dev/mnemo/dense"
	"github.com/mnemo-dev/mnemo/dense/densetest"
	"github.com/mnemo-dev/mnemo/internal/testenv"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/store/sqlitestore"
	"github.com/mnemo-dev/mnemo/textindex"
)

// rowStore counts the memories the change feed hands out, and can report
// another sequence number than the store's.
type rowStore struct {
	*sqlitestore.Store
	rows    atomic.Int64
	seqLies atomic.Int64 // when > 0, what Sequence reports
}

func (r *rowStore) Changes(ctx context.Context, p store.ChangesParams) (store.ChangeSet, error) {
	cs, err := r.Store.Changes(ctx, p)
	r.rows.Add(int64(len(cs.Upserts)))
	return cs, err
}

func (r *rowStore) Sequence(ctx context.Context, profile string) (int64, error) {
	if v := r.seqLies.Load(); v > 0 {
		return v, nil
	}
	return r.Store.Sequence(ctx, profile)
}

func openPath(t *testing.T, path string) *rowStore {
	t.Helper()
	st, err := sqlitestore.Open(t.Context(), path, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &rowStore{Store: st}
}

// scopes are the searches compared between catalogs.
var scopes = []mnemotype.Scope{
	{Profile: "alice"},
	{Profile: "alice", Sessions: []string{"s3"}},
	{Profile: "alice", Sessions: []string{"s4", "s7"}, Exclude: []string{"alice-00004"}},
	{Profile: "alice", Kinds: []mnemotype.Kind{mnemotype.KindSemantic}},
}

// sameAsStore fails unless c answers every scope as a catalog built from
// st alone does.
func sameAsStore(t *testing.T, what string, c *dense.Catalog, st dense.Store) {
	t.Helper()
	fresh := dense.NewCatalog(st, dense.Options{})
	for _, sc := range scopes {
		q := query("alice")
		q.Scope, q.K = sc, 15
		got, err := c.Search(t.Context(), q)
		if err != nil {
			t.Fatalf("%s: Search(%+v): %v", what, sc, err)
		}
		want, err := fresh.Search(t.Context(), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) == 0 || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("%s: Search(%+v) = %v, want %v", what, sc, got, want)
		}
	}
}

func TestCatalog_Snapshot(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path, dir := filepath.Join(t.TempDir(), "mnemo.db"), t.TempDir()
	var logs testenv.SyncBuffer
	opt := dense.Options{Dir: dir, SaveEvery: 100, PageSize: 128, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	snap := dense.SnapshotPath(dir, "alice")

	// A first process loads the profile from the store and writes its
	// snapshot; Close waits for it.
	st1 := openPath(t, path)
	if err := st1.Insert(ctx, mixedKinds(memories("alice", 1000, 5))); err != nil {
		t.Fatal(err)
	}
	c1 := dense.NewCatalog(st1, opt)
	sameAsStore(t, "first process", c1, st1)
	c1.Close()
	if _, err := os.Stat(snap); err != nil {
		t.Fatalf("no snapshot after the first process: %v\n%s", err, logs.String())
	}

	// Writes the snapshot does not hold: new memories, an update that moves
	// one to another session, deletions one by one and by session.
	watermark, err := st1.Sequence(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if err := st1.Insert(ctx, memories("alice", 1050, 5)[1000:]); err != nil {
		t.Fatal(err)
	}
	if _, err := st1.Update(ctx, store.UpdateParams{Profile: "alice", ID: "alice-00010", Session: ptr("s3")}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := st1.Delete(ctx, "alice", fmt.Sprintf("alice-%05d", 100+i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st1.DeleteMatching(ctx, store.DeleteParams{Profile: "alice", Session: "s4"}); err != nil {
		t.Fatal(err)
	}

	// A second process restores the snapshot and reads only the changes
	// after its watermark.
	st2 := openPath(t, path)
	c2 := dense.NewCatalog(st2, opt)
	sameAsStore(t, "a process restoring the snapshot", c2, st2.Store)
	// The 50 new memories but the 3 of them in session s4, the updated one,
	// and the turns after those deleted or moved (their context changed).
	cs, err := st1.Changes(ctx, store.ChangesParams{Profile: "alice", Since: watermark})
	if err != nil {
		t.Fatal(err)
	}
	if n := st2.rows.Load(); n != int64(len(cs.Upserts)) || n < 48 || n > 100 {
		t.Errorf("restoring process read %d memories from the store, want the %d written after the snapshot", n, len(cs.Upserts))
	}
	if !strings.Contains(logs.String(), "restored from its snapshot") {
		t.Errorf("no restore logged:\n%s", logs.String())
	}
	c2.Close()

	// Snapshots that must be ignored: the profile is then read whole from
	// the store, and answers stay exact.
	good, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	other := openPath(t, filepath.Join(t.TempDir(), "other.db"))
	if err := other.Insert(ctx, mixedKinds(memories("alice", 300, 9))); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		file func() []byte
		st   *rowStore
		opt  func(*dense.Options)
		log  string
	}{
		{name: "ByteFlipped", file: func() []byte {
			b := bytes.Clone(good)
			b[len(b)/2] ^= 0x40
			return b
		}, log: "checksum"},
		{name: "Truncated", file: func() []byte { return good[:len(good)-9] }, log: "corrupt"},
		{name: "Garbage", file: func() []byte { return []byte("not a snapshot") }, log: "not a snapshot"},
		{name: "AnotherDatabase", st: other, log: "another database"},
		{name: "AheadOfTheStore", st: func() *rowStore { s := openPath(t, path); s.seqLies.Store(3); return s }(), log: "ahead"},
		{name: "AnotherDimension", opt: func(o *dense.Options) { o.Dim = 8 }, log: "dimensional"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			b := good
			if tc.file != nil {
				b = tc.file()
			}
			if err := os.WriteFile(dense.SnapshotPath(dir, "alice"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			st := tc.st
			if st == nil {
				st = openPath(t, path)
			}
			var logs testenv.SyncBuffer
			o := opt
			o.Dir, o.Logger = dir, slog.New(slog.NewTextHandler(&logs, nil))
			if tc.opt != nil {
				tc.opt(&o)
			}
			c := dense.NewCatalog(st, o)
			defer c.Close()
			if o.Dim == 8 { // the profile's 16-d embeddings are foreign then
				s, err := c.Profile(ctx, "alice")
				if err != nil || s.Embedded != 0 || s.Foreign == 0 {
					t.Fatalf("Profile = %+v, %v", s, err)
				}
			} else if tc.st != nil && tc.name == "AheadOfTheStore" {
				if _, err := c.Search(ctx, query("alice")); err != nil {
					t.Fatal(err)
				}
			} else {
				sameAsStore(t, tc.name, c, st.Store)
			}
			if !strings.Contains(logs.String(), "snapshot ignored") || !strings.Contains(logs.String(), tc.log) {
				t.Errorf("log lacks the ignored snapshot (%q):\n%s", tc.log, logs.String())
			}
			if st.rows.Load() < 300 {
				t.Errorf("read %d memories from the store: the snapshot was used", st.rows.Load())
			}
		})
	}

	// Evict (the profile was deleted) removes the snapshot.
	c3 := dense.NewCatalog(st1, opt)
	c3.Evict("alice")
	if _, err := os.Stat(snap); !os.IsNotExist(err) {
		t.Errorf("snapshot after Evict: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// mixedKinds makes every third memory semantic.
func mixedKinds(mems []mnemotype.Memory) []mnemotype.Memory {
	for i := range mems {
		if i%3 == 0 {
			mems[i].Kind = mnemotype.KindSemantic
		}
	}
	return mems
}

// TestCatalog_SnapshotConformance runs the dense port's conformance suite on
// a catalog that writes a snapshot after every change and holds one profile
// at a time: every profile it answers for after another is restored from
// its snapshot and caught up.
func TestCatalog_SnapshotConformance(t *testing.T) {
	t.Parallel()
	densetest.Exercise(t, func(t *testing.T) (store.Store, densetest.Port) {
		st := openStore(t)
		c := dense.NewCatalog(st, dense.Options{PageSize: 7, Budget: 1, SaveEvery: 1, Dir: t.TempDir()})
		t.Cleanup(c.Close)
		return st, c
	})
}

// TestCatalog_VerifyRebuild: a database restored from an older copy of
// itself and written past the snapshot's watermark has the instance, and a
// sequence as far, but not the snapshot's mark: the snapshot is refused
// (the index built from the store), Verify says so, and Rebuild replaces
// it.
func TestCatalog_VerifyRebuild(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	tmp := t.TempDir()
	pathA, pathB, dir := filepath.Join(tmp, "a.db"), filepath.Join(tmp, "b.db"), filepath.Join(tmp, "index")
	var logs testenv.SyncBuffer
	opt := dense.Options{Dir: dir, SaveEvery: 100, PageSize: 128, Logger: slog.New(slog.NewTextHandler(&logs, nil))}

	a, err := sqlitestore.Open(ctx, pathA, sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mems := mixedKinds(memories("alice", 600, 2))
	if err := a.Insert(ctx, mems[:300]); err != nil {
		t.Fatal(err)
	}
	a.Close()
	older, err := os.ReadFile(pathA)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pathB, older, 0o600); err != nil {
		t.Fatal(err)
	}
	sa := openPath(t, pathA)
	if err := sa.Insert(ctx, mems[300:]); err != nil {
		t.Fatal(err)
	}
	ca := dense.NewCatalog(sa, opt)
	v, err := ca.Verify(ctx, "alice")
	if err != nil || v.SnapshotSeq != -1 || v.Refused != "" || v.Memories != 600 || len(v.Differences) != 0 {
		t.Fatalf("Verify before any snapshot = %+v, %v", v, err)
	}
	sameAsStore(t, "database a", ca, sa)
	ca.Close()
	if v, err = ca.Verify(ctx, "alice"); err != nil || v.SnapshotSeq <= 0 || v.Refused != "" || len(v.Differences) != 0 ||
		v.Snapshot != dense.SnapshotPath(dir, "alice") {
		t.Fatalf("Verify of a good snapshot = %+v, %v", v, err)
	}

	// b is a's older copy, written past a's snapshot with other memories.
	sb := openPath(t, pathB)
	other := memories("alice", 700, 3)[300:]
	for i := range other {
		other[i].ID = fmt.Sprintf("beta-%05d", i)
	}
	if err := sb.Insert(ctx, other); err != nil {
		t.Fatal(err)
	}
	seqA, errA := sa.Sequence(ctx, "alice")
	seqB, errB := sb.Sequence(ctx, "alice")
	if errA != nil || errB != nil || seqB < seqA {
		t.Fatalf("b's sequence %d (%v) is behind a's %d (%v): the header alone would refuse a's snapshot", seqB, errB, seqA, errA)
	}
	cb := dense.NewCatalog(sb, opt)
	defer cb.Close()
	v, err = cb.Verify(ctx, "alice")
	if err != nil || v.SnapshotSeq != -1 || v.Memories != 700 || len(v.Differences) != 0 || !strings.Contains(v.Refused, "not in the database's history") {
		t.Fatalf("Verify of a snapshot of a's history on b = %+v, %v; want it refused", v, err)
	}
	sb.rows.Store(0)
	sameAsStore(t, "database b", cb, sb)
	if n := sb.rows.Load(); n < 700 || !strings.Contains(logs.String(), "snapshot ignored") {
		t.Fatalf("b's catalog read %d memories from the store:\n%s", n, logs.String())
	}
	st, err := cb.Rebuild(ctx, "alice")
	if err != nil || st.Memories != 700 {
		t.Fatalf("Rebuild = %+v, %v; want b's 700 memories", st, err)
	}
	if v, err = cb.Verify(ctx, "alice"); err != nil || v.SnapshotSeq <= 0 || v.Refused != "" || len(v.Differences) != 0 {
		t.Fatalf("Verify after Rebuild = %+v, %v", v, err)
	}
	sameAsStore(t, "database b after Rebuild", cb, sb)
}

// TestCatalog_VerifyDuringWrites: writes landing while Verify loads its two
// indexes are not reported as differences.
func TestCatalog_VerifyDuringWrites(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := openPath(t, filepath.Join(t.TempDir(), "mnemo.db"))
	mems := memories("alice", 3000, 8)
	if err := st.Insert(ctx, mems[:2000]); err != nil {
		t.Fatal(err)
	}
	c := dense.NewCatalog(st, dense.Options{Dir: t.TempDir(), SaveEvery: 100, PageSize: 64})
	if _, err := c.Rebuild(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 2000; i < len(mems); i++ {
			select {
			case <-stop:
				return
			default:
			}
			if err := st.Insert(ctx, mems[i:i+1]); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for range 5 {
		v, err := c.Verify(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Differences) != 0 {
			t.Errorf("Verify during writes: %v", v.Differences)
		}
	}
	close(stop)
	wg.Wait()
	c.Close()
}

// syncStore fails Sync when told to, and counts the calls.
type syncStore struct {
	*sqlitestore.Store
	fail  atomic.Bool
	syncs atomic.Int64
}

func (s *syncStore) Sync(ctx context.Context) error {
	s.syncs.Add(1)
	if s.fail.Load() {
		return errInjected
	}
	return s.Store.Sync(ctx)
}

// TestCatalog_SnapshotAfterSync: a snapshot is written only once the store
// has made its watermark durable; when it cannot, none is.
func TestCatalog_SnapshotAfterSync(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st := &syncStore{Store: openStore(t)}
	if err := st.Insert(ctx, memories("alice", 300, 4)); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	st.fail.Store(true)
	var logs testenv.SyncBuffer
	c := dense.NewCatalog(st, dense.Options{Dir: dir, SaveEvery: 10, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if _, err := c.Search(ctx, query("alice")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := os.Stat(dense.SnapshotPath(dir, "alice")); !os.IsNotExist(err) || st.syncs.Load() == 0 {
		t.Fatalf("with Sync failing: snapshot %v, %d syncs", err, st.syncs.Load())
	}
	if !strings.Contains(logs.String(), "durable") {
		t.Errorf("the unwritten snapshot was not logged:\n%s", logs.String())
	}
	if _, err := c.Rebuild(ctx, "alice"); !errors.Is(err, errInjected) {
		t.Errorf("Rebuild with Sync failing = %v", err)
	}
	st.fail.Store(false)
	if _, err := c.Rebuild(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dense.SnapshotPath(dir, "alice")); err != nil {
		t.Errorf("no snapshot after a Rebuild with Sync working: %v", err)
	}
}

// snapshotted returns a store holding alice's 500 memories of mixed kinds,
// and the folder, path and bytes of the snapshot a catalog keeping text
// wrote of them.
func snapshotted(t *testing.T) (st *rowStore, dir, snap string, b []byte) {
	t.Helper()
	ctx := t.Context()
	dir = t.TempDir()
	st = openPath(t, filepath.Join(t.TempDir(), "mnemo.db"))
	if err := st.Insert(ctx, mixedKinds(memories("alice", 500, 5))); err != nil {
		t.Fatal(err)
	}
	c := dense.NewCatalog(st, dense.Options{Dir: dir, Text: true})
	if _, err := c.Rebuild(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	snap = dense.SnapshotPath(dir, "alice")
	b, err := os.ReadFile(snap)
	if err != nil {
		t.Fatal(err)
	}
	return st, dir, snap, b
}

// TestCatalog_SnapshotTextUnread: a catalog keeping no text (a one-shot
// command) restores a snapshot written with the full-text index from its
// index part alone: with the text section damaged it still restores
// (reading nothing from the store), while a catalog keeping text finds the
// damage and builds from the store.
func TestCatalog_SnapshotTextUnread(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, dir, snap, b := snapshotted(t)
	// The file ends with the text section and the two sections' lengths.
	textLen := int(binary.LittleEndian.Uint64(b[len(b)-8:]))
	if textLen < 1000 || textLen > len(b)/2 {
		t.Fatalf("a text section of %d bytes in a snapshot of %d", textLen, len(b))
	}
	b[len(b)-16-textLen/2] ^= 0x5a
	if err := os.WriteFile(snap, b, 0o600); err != nil {
		t.Fatal(err)
	}

	var logs testenv.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	st.rows.Store(0)
	oneShot := dense.NewCatalog(st, dense.Options{Dir: dir, NoBackground: true, Logger: logger})
	sameAsStore(t, "one-shot", oneShot, st.Store)
	if stats, err := oneShot.Profile(ctx, "alice"); err != nil || !stats.Coded {
		t.Fatalf("the one-shot catalog's index: %+v, %v; want it coded", stats, err)
	}
	oneShot.Close()
	if n := st.rows.Load(); n != 0 || !strings.Contains(logs.String(), "restored from its snapshot") {
		t.Fatalf("the one-shot catalog read %d memories from the store:\n%s", n, logs.String())
	}
	if after, err := os.ReadFile(snap); err != nil || !bytes.Equal(after, b) {
		t.Fatalf("the one-shot catalog rewrote the snapshot (%v)", err)
	}

	// A one-shot catalog reading the text lazily restores too, and finds
	// the damage when a search reads the postings: the store answers.
	lazy := dense.NewCatalog(st, dense.Options{Dir: dir, NoBackground: true, SnapshotText: true, Logger: logger})
	sameAsStore(t, "one-shot, lazy text", lazy, st.Store)
	// Each token of the memories' fields (content, time, the previous
	// turn's content) alone, then all of them: the damaged one's search is
	// not answered, and from then on none is.
	terms := append(strings.Fields(strings.ToLower(textindex.TimeWords(t0))), "text")
	answered := 0
	for _, terms := range append(slices.Collect(slices.Chunk(terms, 1)), terms) {
		p := store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: store.MatchQuery{Terms: terms}, Limit: 10,
			Fields: store.FieldWeights{Content: 1, Time: 1, Context: 1}}
		got, ok, err := lazy.Lexical(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			want, err := st.Lexical(ctx, p)
			if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%v: lazily read %v, the store %v (%v)", terms, got, want, err)
			}
			answered++
		}
	}
	if answered == len(terms)+1 {
		t.Fatal("every search of a lazily read text index with damaged postings answered")
	}
	lazy.Close()
	if n := st.rows.Load(); n != 0 {
		t.Fatalf("the one-shot catalogs read %d memories from the store", n)
	}

	withText := dense.NewCatalog(st, dense.Options{Dir: dir, Text: true, Logger: logger})
	defer withText.Close()
	if _, err := withText.Profile(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if n := st.rows.Load(); n < 500 || !strings.Contains(logs.String(), "snapshot ignored") {
		t.Fatalf("the catalog keeping text read %d memories from the store:\n%s", n, logs.String())
	}
}

// TestCatalog_CodedCorruptFloats: a one-shot catalog reads float32s from
// the snapshot as it searches; a corrupt one drops the snapshot, and the
// search is answered from the store, as for a snapshot found corrupt when
// read.
func TestCatalog_CodedCorruptFloats(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, dir, snap, b := snapshotted(t)
	// The header (magic, profile, instance, mark, watermark, checksum),
	// then the index, whose float32s end 4 bytes before it does (a graph
	// of no node): one bit changed in each of the last 100 rows' float32s.
	profileLen := int(binary.LittleEndian.Uint32(b[8:]))
	instanceLen := int(binary.LittleEndian.Uint32(b[12+profileLen:]))
	markLen := int(binary.LittleEndian.Uint32(b[16+profileLen+instanceLen:]))
	header := 8 + 4 + profileLen + 4 + instanceLen + 4 + markLen + 8 + 4
	indexLen := int(binary.LittleEndian.Uint64(b[len(b)-16:]))
	floatsEnd := header + indexLen - 4
	for i := 1; i <= 100; i++ {
		b[floatsEnd-i*16*4+5] ^= 0x01
	}
	if err := os.WriteFile(snap, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var logs testenv.SyncBuffer
	st.rows.Store(0)
	oneShot := dense.NewCatalog(st, dense.Options{Dir: dir, NoBackground: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	defer oneShot.Close()
	if stats, err := oneShot.Profile(ctx, "alice"); err != nil || !stats.Coded {
		t.Fatalf("the one-shot catalog's index: %+v, %v; want it coded", stats, err)
	}
	sameAsStore(t, "one-shot, corrupt float32s", oneShot, st.Store)
	if _, err := os.Stat(snap); !errors.Is(err, os.ErrNotExist) || !strings.Contains(logs.String(), "snapshot corrupt") || st.rows.Load() < 500 {
		t.Fatalf("after a corrupt float32: snapshot %v, %d memories read from the store, logs:\n%s", err, st.rows.Load(), logs.String())
	}
}
