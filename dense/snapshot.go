package dense

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/vector"
)

// A snapshot is one profile's index written to Options.Dir, so that a new
// process reads one file instead of every memory of the profile from the
// store. It is a cache of the store, never trusted over it: its header
// names the profile, the store's Instance, the change sequence it reflects
// (its watermark) and the mark the store recorded for that watermark
// (Store.MarkWatermark), and a restored index catches up from the
// watermark like any other, so a snapshot older than the store loses
// nothing. A snapshot is refused (logged, and the index built from the
// store) when it is unreadable or fails its checksum, belongs to another
// database or profile, is ahead of the store, holds another dimension than
// Options.Dim, or its mark is not in the store (WatermarkMarked): a copy of
// the database (cp of the file, CREATE DATABASE … TEMPLATE, a backup)
// shares its instance and sequence numbers, but the marks of each copy's
// snapshots written after the copy are its own, so a snapshot one copy
// wrote is never applied to another, nor to the database restored from a
// backup older than the snapshot. A snapshot is written only after the
// store has made its mark and watermark durable (Store.Sync), so a crash
// cannot take the database back behind it. Deleting the folder loses
// nothing.
//
// The folder is created 0700, its files 0600 (they hold the memories'
// text). A snapshot is written to a temporary file, locked by its writer
// (tempfile_*.go), then renamed over the last one; the temporaries that
// writers killed mid-write left are removed when a Catalog opens the
// folder and before each write, never a live writer's. A write that fails
// (a full disk, a folder that cannot be written) is tried again after a
// pause that doubles with each failure (saveRetryMin to saveRetryMax), not
// at every catch-up.
//
// Layout: snapshotMagic, the profile, the instance, the mark (each a
// little-endian uint32 length and its bytes), the watermark (int64), the
// CRC-32C of these (a reader of the index's codes alone reads no other
// checksum covering them: vector.DecodeOptions.Codes), the index
// (vector.Index.EncodeIndex), the CRC-32C of everything before it, the
// text section (vector.Index.EncodeText, which carries its own
// checksums), then the lengths of the index and of the text section
// (int64 each). A process that keeps no text reads the first part only,
// and a one-shot one (Options.SnapshotText) the text section's postings
// as its searches need them: at a million memories the text section is
// almost half the file.
var snapshotMagic = [8]byte{'m', 'n', 'e', 'm', 'o', 'd', 'x', 5}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// SnapshotPath is the file of profile's snapshot in dir.
func SnapshotPath(dir, profile string) string {
	sum := sha256.Sum256([]byte(profile))
	return filepath.Join(dir, hex.EncodeToString(sum[:16])+".vec")
}

// storeInstance returns the store's Instance, read once.
func (c *Catalog) storeInstance(ctx context.Context) (string, error) {
	c.mu.Lock()
	id := c.instance
	c.mu.Unlock()
	if id != "" {
		return id, nil
	}
	id, err := c.st.Instance(ctx)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.instance = id
	c.mu.Unlock()
	return id, nil
}

// restore replaces e's empty index with its snapshot when there is a
// usable one; storeSeq is the store's sequence. Problems are logged: the
// index is then built from the store. The caller holds e's turn.
func (c *Catalog) restore(ctx context.Context, e *entry, storeSeq int64) {
	if c.opt.Dir == "" {
		return
	}
	t0 := time.Now()
	path := SnapshotPath(c.opt.Dir, e.profile)
	x, seq, err := c.readSnapshot(ctx, path, e.profile, storeSeq)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err != nil {
		e.refused = err.Error()
		c.opt.Logger.Warn("dense index snapshot ignored: the index is built from the store", "profile", e.profile, "path", path, "err", err)
		return
	}
	if c.opt.Text && !x.HasText() {
		c.opt.Logger.Info("dense index snapshot without the full-text index ignored: the index is built from the store", "profile", e.profile, "path", path)
		return
	}
	x.SetANN(c.opt.ANN)
	e.x.Store(x)
	e.seq.Store(seq)
	e.snapshotSeq = seq
	// A one-shot process leaves the snapshot it read past parts of alone;
	// a server keeping no text (LexicalInStore) writes its own over it.
	e.graphLeft = x.GraphLeftOut() || (x.TextLeftOut() && c.opt.NoBackground)
	c.opt.Logger.Info("dense index restored from its snapshot", "profile", e.profile, "memories", x.Len(), "seq", seq,
		"behind", storeSeq-seq, "took", time.Since(t0))
}

// errSnapshotMismatch reports a readable snapshot that does not belong
// here.
var errSnapshotMismatch = errors.New("snapshot does not match")

func (c *Catalog) readSnapshot(ctx context.Context, path, profile string, storeSeq int64) (_ *vector.Index, _ int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	lazy := false // the index reads f after this returns (OpenText, DecodeOptions.Codes)
	defer func() {
		if !lazy || err != nil {
			f.Close()
		}
	}()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	instance, err := c.storeInstance(ctx)
	if err != nil {
		return nil, 0, err
	}
	sum := crc32.New(castagnoli)
	br := bufio.NewReaderSize(f, 1<<20)
	r := io.TeeReader(br, sum)
	var magic [8]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil || magic != snapshotMagic {
		return nil, 0, fmt.Errorf("%w: not a snapshot of this version", vector.ErrCorrupt)
	}
	var lens [16]byte
	if _, err := f.ReadAt(lens[:], fi.Size()-int64(len(lens))); err != nil {
		return nil, 0, fmt.Errorf("%w: truncated: %w", vector.ErrCorrupt, err)
	}
	indexLen, textLen := int64(binary.LittleEndian.Uint64(lens[:])), int64(binary.LittleEndian.Uint64(lens[8:]))
	gotProfile, err1 := readString(r)
	gotInstance, err2 := readString(r)
	mark, err3 := readString(r)
	var seqb [8]byte
	_, err4 := io.ReadFull(r, seqb[:])
	if err := errors.Join(err1, err2, err3, err4); err != nil {
		return nil, 0, fmt.Errorf("%w: header: %w", vector.ErrCorrupt, err)
	}
	seq := int64(binary.LittleEndian.Uint64(seqb[:]))
	var hsum [4]byte
	if _, err := io.ReadFull(r, hsum[:]); err != nil {
		return nil, 0, fmt.Errorf("%w: header: %w", vector.ErrCorrupt, err)
	}
	if crc32.Checksum(snapshotHeader(gotProfile, gotInstance, mark, seq), castagnoli) != binary.LittleEndian.Uint32(hsum[:]) {
		return nil, 0, fmt.Errorf("%w: header checksum mismatch", vector.ErrCorrupt)
	}
	switch {
	case gotProfile != profile:
		return nil, 0, fmt.Errorf("%w: it is profile %q's", errSnapshotMismatch, gotProfile)
	case gotInstance != instance:
		return nil, 0, fmt.Errorf("%w: it is another database's (instance %s, this one's %s)", errSnapshotMismatch, gotInstance, instance)
	case seq > storeSeq:
		return nil, 0, fmt.Errorf("%w: its watermark %d is ahead of the database's sequence %d (a database restored from an older copy?)",
			errSnapshotMismatch, seq, storeSeq)
	}
	switch marked, err := c.st.WatermarkMarked(ctx, profile, seq, mark); {
	case err != nil:
		return nil, 0, fmt.Errorf("look its watermark up in the database: %w", err)
	case !marked:
		return nil, 0, fmt.Errorf("%w: its watermark (change %d, mark %s) is not in the database's history: "+
			"a copy of the database wrote it, or the database was restored from a backup older than it", errSnapshotMismatch, seq, mark)
	}
	header := int64(8 + 4 + len(gotProfile) + 4 + len(gotInstance) + 4 + len(mark) + 8 + 4)
	if indexLen < 0 || textLen < 1 || indexLen > fi.Size() || textLen > fi.Size() ||
		header+indexLen+4+textLen+int64(len(lens)) != fi.Size() {
		return nil, 0, fmt.Errorf("%w: sections of %d and %d bytes in a snapshot of %d", vector.ErrCorrupt, indexLen, textLen, fi.Size())
	}
	textAt := header + indexLen + 4
	opt := vector.DecodeOptions{NoGraph: c.opt.NoBackground}
	if c.opt.NoBackground && !c.opt.Text {
		// A one-shot process reads the embeddings' int8 codes, and the
		// float32s of each search's best candidates from f.
		opt.Codes = &vector.Source{R: f, Off: header}
		if c.opt.SnapshotText {
			opt.Text = &vector.Source{R: f, Off: textAt, Size: textLen}
		}
	}
	x, err := vector.DecodeIndex(r, indexLen, opt)
	if err != nil {
		return nil, 0, err
	}
	if x.Coded() {
		// The rest of the index is not read, nor its checksum: the
		// encoding checks its rows and codes, and each float32 read
		// against its own checksum (among the codes).
		lazy = true
	} else {
		var tail [4]byte
		if _, err := io.ReadFull(br, tail[:]); err != nil {
			return nil, 0, fmt.Errorf("%w: no checksum", vector.ErrCorrupt)
		}
		if binary.LittleEndian.Uint32(tail[:]) != sum.Sum32() {
			return nil, 0, fmt.Errorf("%w: checksum mismatch", vector.ErrCorrupt)
		}
	}
	switch {
	case c.opt.Text:
		err = x.DecodeText(br, textLen, false)
	case c.opt.SnapshotText && x.KeepsText(): // opened with the codes
	case c.opt.SnapshotText:
		lazy = true
		err = x.OpenText(f, textAt, textLen)
	default:
		// The section's first byte says whether it holds text; the rest
		// is not read.
		err = x.DecodeText(io.NewSectionReader(f, textAt, textLen), textLen, true)
	}
	if err != nil {
		return nil, 0, err
	}
	if d := x.Dim(); c.opt.Dim > 0 && d != 0 && d != c.opt.Dim {
		return nil, 0, fmt.Errorf("%w: it holds %d-dimensional embeddings, the embedder's have %d", errSnapshotMismatch, d, c.opt.Dim)
	}
	return x, seq, nil
}

// snapshotHeader returns a snapshot's header but its checksum.
func snapshotHeader(profile, instance, mark string, seq int64) []byte {
	h := append([]byte(nil), snapshotMagic[:]...)
	for _, s := range []string{profile, instance, mark} {
		h = binary.LittleEndian.AppendUint32(h, uint32(len(s)))
		h = append(h, s...)
	}
	return binary.LittleEndian.AppendUint64(h, uint64(seq))
}

func readString(r io.Reader) (string, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return "", err
	}
	l := binary.LittleEndian.Uint32(n[:])
	if l > 1<<16 {
		return "", fmt.Errorf("a string of %d bytes", l)
	}
	b := make([]byte, l)
	_, err := io.ReadFull(r, b)
	return string(b), err
}

// maybeSave writes e's snapshot in the background once it has applied
// SaveEvery changes, or an eighth of its size, since its last one. The
// caller holds e's turn; the writer takes it after the caller, so the index
// does not change while it is written (searches go on; a catch-up of the
// profile waits), and does not write once e was dropped (Evict).
func (c *Catalog) maybeSave(ctx context.Context, e *entry) {
	if c.opt.Dir == "" || e.graphLeft || e.unsaved < max(c.opt.SaveEvery, e.x.Load().Len()/8) {
		return
	}
	instance, err := c.storeInstance(ctx)
	if err != nil {
		c.opt.Logger.Warn("dense index snapshot not written", "profile", e.profile, "err", err)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.now().Before(c.saveAfter) {
		return // the last write failed: tried again after a pause
	}
	e.unsaved = 0
	c.saves.Add(1)
	go func() {
		defer c.saves.Done()
		<-e.turn
		defer e.release()
		c.mu.Lock()
		dropped := e.elem == nil
		c.mu.Unlock()
		if dropped {
			return // evicted: its snapshot may be gone on purpose
		}
		t0 := time.Now()
		x, seq := e.x.Load(), e.seq.Load()
		e.saving.Store(true)
		err := c.save(context.Background(), e.profile, instance, seq, x)
		e.saving.Store(false)
		if err != nil {
			// Tried again at the first catch-up after the pause.
			e.unsaved += max(c.opt.SaveEvery, x.Len()/8)
			c.mu.Lock()
			pause := c.saveAfter.Sub(c.now())
			c.mu.Unlock()
			level := slog.LevelWarn
			if errors.Is(err, mnemotype.ErrReadOnly) {
				level = slog.LevelInfo // no mark can be recorded: expected
			}
			c.opt.Logger.Log(context.Background(), level, "dense index snapshot not written", "profile", e.profile, "err", err,
				"retry_after", pause.Round(time.Second))
			return
		}
		c.opt.Logger.Info("dense index snapshot written", "profile", e.profile, "memories", x.Len(), "seq", seq, "took", time.Since(t0))
	}()
}

// Pauses after a failed snapshot write: a background write is not tried
// again before saveRetryMin has passed, twice that after a second failure
// in a row, and so on up to saveRetryMax (a full disk costs a snapshot's
// size in writes each time). A write that succeeds, in the background or
// by Rebuild or BuildGraph (which are never paused), ends the pauses.
const (
	saveRetryMin = 10 * time.Second
	saveRetryMax = 10 * time.Minute
)

// save writes profile's snapshot: it creates the temporary file, has the
// store record a mark for the watermark and make it durable up to there,
// then writes the snapshot. Were the store to come back behind the
// watermark after a crash, the snapshot would hold changes it no longer
// has, and miss those renumbered after; without its mark in the store, it
// is refused.
func (c *Catalog) save(ctx context.Context, profile, instance string, seq int64, x *vector.Index) error {
	err := c.write(ctx, profile, instance, seq, x)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil {
		c.saveFails, c.saveAfter = 0, time.Time{}
		return nil
	}
	c.saveFails++
	pause := saveRetryMax
	if c.saveFails < 32 {
		pause = min(saveRetryMin<<(c.saveFails-1), saveRetryMax)
	}
	c.saveAfter = c.now().Add(pause)
	return err
}

func (c *Catalog) write(ctx context.Context, profile, instance string, seq int64, x *vector.Index) (err error) {
	f, err := createTemp(c.opt.Dir, c.opt.Logger)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	mark, err := c.st.MarkWatermark(ctx, profile, seq)
	if err != nil {
		return fmt.Errorf("record its watermark in the database: %w", err)
	}
	if err := c.st.Sync(ctx); err != nil {
		return fmt.Errorf("make the database durable first: %w", err)
	}
	return writeSnapshot(f, SnapshotPath(c.opt.Dir, profile), profile, instance, mark, seq, x)
}

// createTemp creates and locks a temporary snapshot file in dir (created
// if needed), first removing the temporary files dead writers left.
func createTemp(dir string, log *slog.Logger) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	removeStaleTemps(dir, log)
	for range 3 {
		f, err := os.CreateTemp(dir, tempPattern) // 0600
		if err != nil {
			return nil, err
		}
		if err := lockTemp(f); err == nil {
			if fi, err := f.Stat(); err == nil && stillAt(fi, f.Name()) {
				return f, nil
			}
		}
		// Another process's cleanup took it before it was locked (and
		// removes it).
		f.Close()
	}
	return nil, fmt.Errorf("create a temporary file in %s: other processes removed each as it was created", dir)
}

// stillAt reports whether path names the file fi describes.
func stillAt(fi os.FileInfo, path string) bool {
	at, err := os.Stat(path)
	return err == nil && os.SameFile(fi, at)
}

// writeSnapshot writes a snapshot to f, a temporary file, syncs it and
// renames it to path, so a reader finds the old snapshot or the new one,
// whole.
func writeSnapshot(f *os.File, path, profile, instance, mark string, seq int64, x *vector.Index) error {
	sum := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(f, 1<<20)
	w := io.MultiWriter(bw, sum)
	h := snapshotHeader(profile, instance, mark, seq)
	h = binary.LittleEndian.AppendUint32(h, crc32.Checksum(h, castagnoli))
	if _, err := w.Write(h); err != nil {
		return err
	}
	index, text := &countingWriter{w: w}, &countingWriter{w: bw}
	if err := x.EncodeIndex(index); err != nil {
		return err
	}
	if _, err := bw.Write(binary.LittleEndian.AppendUint32(nil, sum.Sum32())); err != nil {
		return err
	}
	if err := x.EncodeText(text); err != nil {
		return err
	}
	lens := binary.LittleEndian.AppendUint64(nil, uint64(index.n))
	if _, err := bw.Write(binary.LittleEndian.AppendUint64(lens, uint64(text.n))); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return commitTemp(f, path)
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// tempPattern names the temporary files snapshots are written to.
const tempPattern = ".snapshot-*"

// staleTemp is the age past which an unlocked temporary snapshot file is
// taken for a crashed writer's where the file system has no flock (see
// tempfile_*.go).
const staleTemp = time.Hour

// removeStaleTemps removes dir's temporary snapshot files that no live
// writer holds (removeIfStale), and logs what it removed.
func removeStaleTemps(dir string, log *slog.Logger) {
	names, _ := filepath.Glob(filepath.Join(dir, tempPattern))
	n, bytes := 0, int64(0)
	for _, name := range names {
		if removed, size := removeIfStale(name); removed {
			n, bytes = n+1, bytes+size
		}
	}
	if n > 0 {
		log.Info("dense index: removed the temporary files of snapshot writers that stopped mid-write", "dir", dir, "files", n, "bytes", bytes)
	}
}

// removeSnapshot deletes profile's snapshot, if any.
func (c *Catalog) removeSnapshot(profile string) {
	if c.opt.Dir == "" {
		return
	}
	if err := os.Remove(SnapshotPath(c.opt.Dir, profile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		c.opt.Logger.Warn("dense index snapshot not removed", "profile", profile, "err", err)
	}
}

// Close stops the graph builders, waits for the snapshots being written
// and writes no more. The Catalog still answers (it is a cache; its store
// decides when it is closed).
func (c *Catalog) Close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.builders.Wait()
	c.saves.Wait()
}

// Verification is what Verify found.
type Verification struct {
	// Snapshot is the snapshot's path ("" when the Catalog keeps none);
	// SnapshotSeq its watermark when it was used, else -1 (none, or one
	// that was refused).
	Snapshot    string
	SnapshotSeq int64
	// Refused says why the snapshot there was refused (the index then
	// built from the store alone): unreadable, another database's or
	// another copy's of this one, ahead of the database. "" when it was
	// used, or there is none.
	Refused string
	// Memories is how many the caught-up index holds.
	Memories int
	// Differences between it and an index built from the store alone (at
	// most 20); none means they answer every search alike.
	Differences []string
}

// Verify restores profile's index as a new process would (from its
// snapshot, then the store's changes after its watermark) and compares it
// with one built from the store alone. Its own indexes are left alone.
func (c *Catalog) Verify(ctx context.Context, profile string) (Verification, error) {
	v := Verification{SnapshotSeq: -1}
	if c.opt.Dir != "" {
		v.Snapshot = SnapshotPath(c.opt.Dir, profile)
	}
	opt := c.opt
	opt.SaveEvery, opt.Budget, opt.GraphMin = math.MaxInt, math.MaxInt64, -1
	if opt.SnapshotText { // verify reads every posting
		opt.Text, opt.SnapshotText = true, false
	}
	restored := NewCatalog(c.st, opt)
	opt.Dir = ""
	fresh := NewCatalog(c.st, opt)
	// Both must reflect one sequence number: a write between their loads
	// would show as a difference. The one behind catches up again.
	var a, b *entry
	for range 10 {
		var err error
		if a == nil || a.seq.Load() < b.seq.Load() {
			if a, err = restored.caughtUp(ctx, profile); err != nil {
				return v, err
			}
		}
		if b == nil || b.seq.Load() < a.seq.Load() {
			if b, err = fresh.caughtUp(ctx, profile); err != nil {
				return v, err
			}
		}
		if a.seq.Load() == b.seq.Load() {
			v.SnapshotSeq, v.Refused = a.snapshotSeq, a.refused
			v.Memories = a.x.Load().Len()
			v.Differences = vector.Diff(a.x.Load(), b.x.Load(), 20)
			return v, nil
		}
	}
	return v, fmt.Errorf("dense index of profile %q: the database kept changing while it was verified; try again", profile)
}

// Rebuild drops profile's index and snapshot, builds the index from the
// store, with its graph when it is large enough for one, and writes its
// snapshot at once (when the Catalog keeps them).
func (c *Catalog) Rebuild(ctx context.Context, profile string) (Stats, error) {
	c.Evict(profile)
	linked, err := c.BuildGraph(ctx, profile) // writes the snapshot when it builds
	if err != nil {
		return Stats{}, err
	}
	e, err := c.caughtUp(ctx, profile)
	if err != nil {
		return Stats{}, err
	}
	if err := e.take(ctx); err != nil {
		return Stats{}, fmt.Errorf("dense index of profile %q: %w", profile, err)
	}
	defer e.release()
	if c.opt.Dir != "" && linked == 0 {
		instance, err := c.storeInstance(ctx)
		if err != nil {
			return Stats{}, err
		}
		e.saving.Store(true)
		err = c.save(ctx, profile, instance, e.seq.Load(), e.x.Load())
		e.saving.Store(false)
		if err != nil {
			return Stats{}, fmt.Errorf("dense index of profile %q: write its snapshot: %w", profile, err)
		}
		e.unsaved = 0
	}
	return statsOf(e.x.Load()), nil
}
