package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/internal/jsonutf8"
	"github.com/mnemo-dev/mnemo/mnemotype"
)

// importBatch is the number of memories per transaction: large enough to
// amortise the commit (on Postgres each batch also rewrites the last posting
// block and the statistics of every term it holds, so fewer, larger batches
// write less), small enough to bound memory and keep progress visible.
const importBatch = 4000

// importBatchBytes ends a batch before importBatch lines when its lines
// reach this size: a batch of the longest contents would hold a GiB.
const importBatchBytes = 16 << 20

// importGCPercent is the garbage collector's target during an import
// (unless GOGC is set).
const importGCPercent = 200

// maxImportLine bounds a line of an import file: six times the content
// limit, the longest JSON escaping of any content (a control character, or
// "<" as Go's encoder writes it, takes 6 bytes as \u003c), plus 64 KiB for
// the other fields. A longer line is rejected without being held in memory.
const maxImportLine = 6*mnemo.MaxContentBytes + 64<<10

// Reporting bounds: rejected lines are each reported on stderr up to
// maxLineMessages, and the summary lists up to maxListedLines numbers.
const (
	maxLineMessages = 100
	maxListedLines  = 20
)

// exitSomeRejected is import's exit code when some lines were rejected and
// every other line is stored.
const exitSomeRejected = 3

// importNamespace is the UUID namespace of the ids import derives for
// lines without one (see importer.lineID).
var importNamespace = uuid.MustParse("7a0f3c52-4c1e-4b8e-9d2a-6a1f0e5b9c31")

// The fields an import line may name the actor and the time it happened
// by, the first found winning.
var (
	actorImportFields    = []string{"actor", "speaker", "role", "name"}
	occurredImportFields = []string{"occurred_at", "timestamp", "date"}
)

// knownImportFields are mapped onto memory fields, as is the field an
// actor, an occurrence time or a turn number is taken from; any other field
// of a line is kept in the memory's metadata.
var knownImportFields = map[string]bool{
	"id": true, "text": true, "content": true, "profile": true, "project": true, "session": true, "kind": true,
	"importance": true, "created_at": true, "metadata": true,
	// What mnemo export writes besides.
	"embedding": true, "embedding_model": true, "accessed_at": true, "access_count": true,
}

const importUsage = "usage: mnemo import FILE.jsonl [--profile P] [--session-field NAME] [--strict]"

func cmdImport(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "import")
	var ef engineFlags
	ef.register(fs)
	profile := fs.String("profile", a.getenv("MNEMO_PROFILE"), "import every line into this profile, whatever profile the line names (without it: each line into its own profile field, else $MNEMO_PROFILE)")
	sessionField := fs.String("session-field", "", "take each memory's session from this field (e.g. conversation)")
	strict := fs.Bool("strict", false, "abort on the first bad line, writing nothing")
	fs.Usage = func() {
		fmt.Fprintf(a.stderr, `%s

Lines: {id?, text|content, profile?, project?, session?, kind?, importance?,
actor|speaker|role|name?, occurred_at|timestamp|date?, seq|turn?, created_at?,
metadata?, embedding?, embedding_model?, accessed_at?, access_count?} (what mnemo
export writes), other fields kept in metadata (the first of each | list is taken;
created_at defaults to the time it occurred); FILE - reads stdin. A line is at
most %d bytes.

An import waits for its embeddings unless --write-embed-timeout (or
MNEMO_WRITE_EMBED_TIMEOUT) is given; a provider that keeps failing is no
longer called (its memories are stored without embeddings for mnemo reembed).
Lines are written in batches of %d (fewer when they reach %d MiB), one
transaction each, in file order; the next batch is embedded while one is
written. Unless GOGC is set, an import runs Go's garbage collector at GOGC=%d
(more memory, less CPU).

A bad line (malformed, invalid, too long) is reported with its number and
skipped; --strict aborts at the first one with nothing written. A line
without an id gets one derived from its profile, its bytes and how many
identical lines precede it, so running the same file again (after a crash)
stores only what is missing: ids already stored are counted, not rejected.

Exit codes: 0 every line stored (now or before), %d some lines rejected and
the others stored, 2 nothing written (usage error, --strict with a bad line,
or every line bad), 1 internal error.
`, importUsage, maxImportLine, importBatch, importBatchBytes>>20, importGCPercent, exitSomeRejected)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("%s", importUsage)
	}
	var r io.Reader = a.stdin
	var size int64
	if pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			return usagef("open %s: %v", pos[0], err)
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		r = f
	}
	if *profile != "" {
		if err := checkProfileFlag(*profile); err != nil {
			return err
		}
	}
	if ef.writeTimeout == "" && a.getenv(envWriteEmbedTimeout) == "" {
		// A bulk job waits for its embeddings (a hung provider still
		// stops being called: the circuit breaker).
		ef.writeTimeout = "0"
	}
	if a.getenv("GOGC") == "" {
		// A bulk job's live heap is a batch or two: collecting less often
		// costs some memory and saves a tenth of the CPU.
		defer debug.SetGCPercent(debug.SetGCPercent(importGCPercent))
	}
	e, err := ef.open(a)
	if err != nil {
		return err
	}
	im := &importer{a: a, e: e, profile: *profile, override: flagGiven(fs, "profile"), sessionField: *sessionField, strict: *strict,
		progress: newProgress(a.stderr, size), occurrences: map[[sha256.Size]byte]int{}, ids: map[string]int{}}
	ierr := im.run(ctx, r)
	im.settle()
	cerr := e.Close()
	im.progress.done()
	if ierr != nil {
		if im.stored > 0 {
			ierr = fmt.Errorf("%w (%d memories were stored before; run the same command again to import the rest: "+
				"lines already stored are skipped)", ierr, im.stored)
		}
		return ierr
	}
	if cerr != nil {
		return cerr
	}
	fmt.Fprintln(a.stdout, im.summary())
	switch {
	case len(im.rejected) == 0:
		return nil
	case im.stored+im.already == 0:
		return usagef("every line was rejected (see above): nothing was written")
	default:
		return exitErrorf(exitSomeRejected, "%d lines were rejected (see above); the other lines are stored", len(im.rejected))
	}
}

type importer struct {
	a *app
	e *mnemo.Engine
	// profile is the profile of lines that name none or, with override
	// (--profile given on the command line), of every line.
	profile      string
	override     bool
	sessionField string
	strict       bool
	progress     *progress

	// occurrences counts, per hash of (profile, line), the lines without
	// an id seen so far; ids maps each explicit "profile\x00id" to its line.
	occurrences map[[sha256.Size]byte]int
	ids         map[string]int

	stored, already int
	rejected        []int // line numbers
	// moved counts the lines stored (now or before) in profile although
	// they named another; reembedded, those whose embedding, of another
	// model than the engine's or all zeros, was replaced by the engine's.
	moved, reembedded int

	// inflight is the batch being stored, if any.
	inflight *commit
}

type pending struct {
	line int
	in   mnemo.Input
	// moved: the line named another profile than --profile's;
	// reembedded: its embedding, of another model or all zeros, was left out.
	moved, reembedded bool
}

// summary is the run's one-line report.
func (im *importer) summary() string {
	s := fmt.Sprintf("imported %d memories, %d already stored, %d lines rejected", im.stored, im.already, len(im.rejected))

	if len(im.rejected) > 0 {
		slices.Sort(im.rejected) // a batch's invalid lines are found after the malformed ones
		nums := make([]string, 0, maxListedLines)
		for _, n := range im.rejected[:min(len(im.rejected), maxListedLines)] {
			nums = append(nums, strconv.Itoa(n))
		}
		more := ""
		if len(im.rejected) > maxListedLines {
			more = ", …"
		}
		s += fmt.Sprintf(" (lines %s%s)", strings.Join(nums, ", "), more)
	}
	if im.moved > 0 {
		s += fmt.Sprintf("; %d lines naming another profile went into %q (--profile)", im.moved, im.profile)
	}
	if im.reembedded > 0 {
		s += fmt.Sprintf("; %d embeddings of another model than %s, or of zeros only, were left out and the memories embedded again", im.reembedded, im.e.Embedder().Model())
	}
	return s
}

func (im *importer) run(ctx context.Context, r io.Reader) error {
	lr := newLineReader(r, maxImportLine)
	var batch []pending
	var batchBytes int
	var all []pending // strict mode: everything goes in one transaction
	for {
		raw, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		var tooLong *lineTooLongError
		switch {
		case errors.As(err, &tooLong):
		case err != nil:
			return fmt.Errorf("read input: %w", err)
		}
		line := lr.line
		var p pending
		if tooLong == nil {
			raw = bytes.TrimSpace(raw)
			if len(raw) == 0 {
				continue
			}
			p, err = im.parse(raw, line)
		}
		if err != nil {
			if im.strict {
				return usagef("line %d: %v (nothing was written)", line, err)
			}
			im.reject(line, err)
			continue
		}
		if im.strict {
			all = append(all, p)
			continue
		}
		batch = append(batch, p)
		batchBytes += len(raw)
		if len(batch) == importBatch || batchBytes >= importBatchBytes {
			if err := im.submit(ctx, batch); err != nil {
				return err
			}
			batch, batchBytes = nil, 0 // the batch is being stored
			im.progress.update(lr.read, im.stored+im.already)
		}
	}
	if im.strict {
		return im.flushStrict(ctx, all)
	}
	if err := im.submit(ctx, batch); err != nil {
		return err
	}
	if err := im.wait(ctx); err != nil {
		return err
	}
	im.progress.update(lr.read, im.stored+im.already)
	return nil
}

// commit is a batch being stored in the background while the next is
// read and prepared.
type commit struct {
	batch []pending
	done  chan struct{}
	res   *mnemo.WriteResult
	err   error
}

// submit prepares batch (validation, embeddings) while the batch before it
// is stored, waits for that one, then starts storing batch: batches are
// stored in order, one at a time.
func (im *importer) submit(ctx context.Context, batch []pending) error {
	if len(batch) == 0 {
		return nil
	}
	p, perr := im.e.Prepare(ctx, inputs(batch))
	if err := im.wait(ctx); err != nil {
		return err
	}
	if perr != nil {
		return im.retry(ctx, batch, perr)
	}
	c := &commit{batch: batch, done: make(chan struct{})}
	im.inflight = c
	go func() {
		defer close(c.done)
		c.res, c.err = im.e.Commit(ctx, p)
	}()
	return nil
}

// wait waits for the batch being stored, if any, and counts it (or
// retries it line by line).
func (im *importer) wait(ctx context.Context) error {
	c := im.inflight
	if c == nil {
		return nil
	}
	im.inflight = nil
	<-c.done
	if c.err != nil {
		return im.retry(ctx, c.batch, c.err)
	}
	im.count(c.batch, c.res)
	return nil
}

// settle waits for the batch being stored, if any, after the import
// failed: it is counted if it was stored.
func (im *importer) settle() {
	if c := im.inflight; c != nil {
		im.inflight = nil
		<-c.done
		if c.err == nil {
			im.count(c.batch, c.res)
		}
	}
}

func inputs(batch []pending) []mnemo.Input {
	ins := make([]mnemo.Input, len(batch))
	for i, p := range batch {
		ins[i] = p.in
	}
	return ins
}

// write stores batch in one transaction and counts what was created and
// what was already stored (a replayed line: a re-run after a crash).
func (im *importer) write(ctx context.Context, batch []pending) error {
	res, err := im.e.Write(ctx, inputs(batch))
	if err != nil {
		return err
	}
	im.count(batch, res)
	return nil
}

// count counts a stored batch.
func (im *importer) count(batch []pending, res *mnemo.WriteResult) {
	im.stored += res.Created
	im.already += len(batch) - res.Created
	for _, p := range batch {
		im.moved += b2i(p.moved)
		im.reembedded += b2i(p.reembedded)
	}
}

func allZero(v []float32) bool {
	for _, f := range v {
		if f != 0 {
			return false
		}
	}
	return true
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// flushStrict writes every line in one transaction, or nothing.
func (im *importer) flushStrict(ctx context.Context, all []pending) error {
	if len(all) == 0 {
		return nil
	}
	if err := im.write(ctx, all); err != nil {
		return fmt.Errorf("%w (nothing was written)", lineErr(err, all))
	}
	return nil
}

// lineErr rewrites a batch error "memory N: ..." to name the input line.
func lineErr(err error, batch []pending) error {
	var n int
	if _, scanErr := fmt.Sscanf(err.Error(), "memory %d:", &n); scanErr == nil && n >= 0 && n < len(batch) {
		return fmt.Errorf("line %d: %w", batch[n].line, err)
	}
	return err
}

// retry handles the error of a batch written in one transaction (lines
// already stored as they are count as such): if the batch was rejected (an
// invalid line, or an id stored with other content), it is written line
// by line so only the bad lines are rejected.
func (im *importer) retry(ctx context.Context, batch []pending, err error) error {
	if !errors.Is(err, mnemo.ErrInvalid) && !errors.Is(err, mnemo.ErrDimensionMismatch) {
		return err
	}
	for _, p := range batch {
		err := im.write(ctx, []pending{p})
		switch {
		case err == nil:
		case errors.Is(err, mnemo.ErrInvalid), errors.Is(err, mnemo.ErrDimensionMismatch):
			im.reject(p.line, err)
		default:
			return err
		}
	}
	return nil
}

func (im *importer) reject(line int, err error) {
	im.rejected = append(im.rejected, line)
	if len(im.rejected) > maxLineMessages {
		return
	}
	im.progress.clear()
	msg := strings.TrimPrefix(err.Error(), mnemo.ErrInvalid.Error()+": ")
	fmt.Fprintf(im.a.stderr, "line %d: rejected: %s\n", line, msg)
	if len(im.rejected) == maxLineMessages {
		fmt.Fprintln(im.a.stderr, "(further rejected lines are counted, not shown)")
	}
}

// lineID derives the id of a line without one from its profile, its bytes
// and its occurrence among identical lines, so that every run over the
// same file gives each line the same id.
func (im *importer) lineID(profile string, raw []byte) string {
	h := sha256.New()
	h.Write([]byte(profile))
	h.Write([]byte{0})
	h.Write(raw)
	var key [sha256.Size]byte
	h.Sum(key[:0])
	im.occurrences[key]++
	return uuid.NewSHA1(importNamespace, fmt.Appendf(key[:], "#%d", im.occurrences[key])).String()
}

// parse turns one JSON line into the Input it stores, with its id.
func (im *importer) parse(raw []byte, line int) (pending, error) {
	in, moved, err := im.input(raw, line)
	p := pending{line: line, in: in, moved: moved}
	if err == nil && len(in.Embedding) > 0 && im.e.Embedder().Dim() > 0 &&
		(in.EmbeddingModel != "" && in.EmbeddingModel != im.e.Embedder().Model() || allZero(in.Embedding)) {
		// A vector of another model cannot be compared with this
		// engine's queries, and one of zeros with none: the memory is
		// embedded again.
		p.in.Embedding, p.in.EmbeddingModel, p.reembedded = nil, "", true
	}
	return p, err
}

// input parses one JSON line into an Input with its id; moved reports
// that --profile replaced the profile the line named.
func (im *importer) input(raw []byte, line int) (in mnemo.Input, moved bool, _ error) {
	if !utf8.Valid(raw) {
		field, off := jsonutf8.FirstInvalid(raw)
		if field == "" {
			return in, false, fmt.Errorf("not valid UTF-8 (at byte %d)", off)
		}
		return in, false, fmt.Errorf("field %s is not valid UTF-8", field)
	}
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		return in, false, fmt.Errorf("malformed JSON: %v", err)
	}
	if obj == nil {
		return in, false, errors.New("line is not a JSON object")
	}
	var err error
	str := func(key string) string {
		if err != nil {
			return ""
		}
		v, ok := obj[key]
		if !ok || string(v) == "null" {
			return ""
		}
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
		var n json.Number
		if json.Unmarshal(v, &n) == nil {
			return n.String() // e.g. LoCoMo's numeric session ids
		}
		err = fmt.Errorf("field %s: must be a string", key)
		return ""
	}
	in.ID = str("id")
	in.Content = str("content")
	if in.Content == "" {
		in.Content = str("text")
	}
	if v, ok := obj["profile"]; ok && string(v) != "null" {
		if json.Unmarshal(v, &in.Profile) != nil {
			return in, false, errors.New("field profile: must be a string")
		}
	}
	in.Project = str("project")
	in.Session = str("session")
	if im.sessionField != "" {
		if v := str(im.sessionField); v != "" {
			in.Session = v
		}
	}
	in.Kind = str("kind")
	used := map[string]bool{}
	first := func(keys ...string) (string, string) {
		for _, k := range keys {
			if v := str(k); v != "" {
				used[k] = true
				return k, v
			}
		}
		return "", ""
	}
	_, in.Actor = first(actorImportFields...)
	occField, occ := first(occurredImportFields...)
	seqField, seq := first("seq", "turn")
	created := str("created_at")
	accessed := str("accessed_at")
	in.EmbeddingModel = str("embedding_model")
	if err != nil {
		return in, false, err
	}
	if accessed != "" {
		t, err := parseTime("accessed_at", accessed)
		if err != nil {
			return in, false, err
		}
		in.AccessedAt = t
	}
	if v, ok := obj["access_count"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &in.AccessCount); err != nil || in.AccessCount < 0 {
			return in, false, errors.New("field access_count: must be a whole number ≥ 0")
		}
	}
	if v, ok := obj["embedding"]; ok && string(v) != "null" {
		var xs []float64
		if err := json.Unmarshal(v, &xs); err != nil || len(xs) == 0 {
			return in, false, errors.New("field embedding: must be a non-empty array of numbers")
		}
		in.Embedding = make([]float32, len(xs))
		for i, x := range xs {
			f := float32(x)
			if math.IsNaN(x) || math.IsInf(float64(f), 0) {
				return in, false, fmt.Errorf("field embedding[%d] = %v: must be a finite float32", i, x)
			}
			in.Embedding[i] = f
		}
	}
	if seq != "" {
		n, err := strconv.ParseInt(seq, 10, 64)
		if err != nil || n < 1 {
			return in, false, fmt.Errorf("field %s = %q: must be a positive integer", seqField, seq)
		}
		in.Seq = n
	}
	if occ != "" {
		t, err := parseTime(occField, occ)
		if err != nil {
			return in, false, err
		}
		in.OccurredAt = t
	}
	// Without created_at, a memory is taken as stored when it happened (as
	// imports of histories did before occurred_at existed).
	tsField, ts := "created_at", created
	if ts == "" {
		tsField, ts = occField, occ
	}
	switch {
	case im.override:
		moved = in.Profile != "" && in.Profile != im.profile
		in.Profile = im.profile
	case in.Profile == "":
		if in.Profile = im.profile; in.Profile == "" {
			return in, false, errors.New("profile is required: give the line a profile field or pass --profile")
		}
	}
	if err := mnemotype.CheckProfile(in.Profile); err != nil {
		return in, false, err
	}
	if strings.TrimSpace(in.Content) == "" {
		return in, false, errors.New("text (or content) is empty")
	}
	if v, ok := obj["importance"]; ok && string(v) != "null" {
		var f float64
		if err := json.Unmarshal(v, &f); err != nil {
			return in, false, fmt.Errorf("field importance: must be a number in [0, 1]")
		}
		in.Importance = &f
	}
	if ts != "" {
		t, err := parseTime(tsField, ts)
		if err != nil {
			return in, false, err
		}
		in.CreatedAt = t
	}
	meta := map[string]json.RawMessage{}
	if v, ok := obj["metadata"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &meta); err != nil {
			return in, false, errors.New("field metadata: must be a JSON object")
		}
	}
	for k, v := range obj {
		if !knownImportFields[k] && !used[k] {
			if _, taken := meta[k]; !taken {
				meta[k] = v
			}
		}
	}
	if len(meta) > 0 {
		b, err := json.Marshal(meta)
		if err != nil {
			return in, false, fmt.Errorf("metadata: %v", err)
		}
		in.Metadata = b
	}
	if in.ID == "" {
		in.ID = im.lineID(in.Profile, raw)
		return in, moved, nil
	}
	in.ID = strings.TrimSpace(in.ID)
	if err := mnemotype.CheckID("field id", in.ID); err != nil {
		return in, false, err
	}
	key := in.Profile + "\x00" + in.ID
	if prev, dup := im.ids[key]; dup {
		return in, false, fmt.Errorf("id %q repeats line %d", in.ID, prev)
	}
	im.ids[key] = line
	return in, moved, nil
}

// Unix seconds of the first and last instants of years 0001–9999.
const (
	minUnixSeconds = -62135596800
	maxUnixSeconds = 253402300799
)

// parseTime parses the timestamp field named field: RFC 3339, RFC 3339
// without a zone (taken as UTC), a date, or Unix seconds; in years
// 0001–9999.
func parseTime(field, s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), mnemotype.CheckTime("field "+field, t)
		}
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if math.IsNaN(f) || math.IsInf(f, 0) || f < minUnixSeconds || f >= maxUnixSeconds+1 {
			return time.Time{}, mnemotype.Invalidf("field %s = %s: Unix seconds must be a finite number in [%d, %d] (years %04d-%04d)",
				field, s, int64(minUnixSeconds), int64(maxUnixSeconds), mnemotype.MinYear, mnemotype.MaxYear)
		}
		sec := math.Floor(f)
		return time.Unix(int64(sec), int64((f-sec)*1e9)).UTC(), nil
	}
	return time.Time{}, mnemotype.Invalidf("field %s = %q: must be RFC 3339 (2023-05-08T13:56:00Z), a date or Unix seconds", field, s)
}

// lineTooLongError reports a line longer than the reader's limit; the
// line was skipped.
type lineTooLongError struct{ limit int }

func (e *lineTooLongError) Error() string {
	return fmt.Sprintf("longer than %d bytes (a memory's content is at most %d bytes)", e.limit, mnemo.MaxContentBytes)
}

// lineReader reads newline-terminated lines of at most max bytes; a longer
// line is skipped, never held whole in memory.
type lineReader struct {
	r    *bufio.Reader
	max  int
	buf  []byte
	line int   // the number of the line last returned
	read int64 // bytes read
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its newline, a *lineTooLongError for
// a line over the limit (skipped), or io.EOF after the last line. The
// returned bytes are valid until the next call.
func (lr *lineReader) next() ([]byte, error) {
	lr.buf = lr.buf[:0]
	tooLong := false
	for {
		chunk, err := lr.r.ReadSlice('\n')
		lr.read += int64(len(chunk))
		if !tooLong {
			n := len(lr.buf) + len(chunk)
			if bytes.HasSuffix(chunk, []byte("\n")) {
				n--
			}
			if n > lr.max {
				tooLong, lr.buf = true, lr.buf[:0]
			} else {
				lr.buf = append(lr.buf, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(chunk) == 0 && len(lr.buf) == 0 && !tooLong {
				return nil, io.EOF
			}
		case err != nil:
			return nil, err
		}
		lr.line++
		if tooLong {
			return nil, &lineTooLongError{limit: lr.max}
		}
		return bytes.TrimSuffix(lr.buf, []byte("\n")), nil
	}
}

// progress draws a one-line progress bar on a terminal; elsewhere it is
// silent.
type progress struct {
	w     io.Writer
	tty   bool
	total int64
	start time.Time
	last  time.Time
	drawn bool
}

func newProgress(w io.Writer, total int64) *progress {
	p := &progress{w: w, total: total, start: time.Now()}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *progress) update(read int64, n int) {
	if !p.tty || time.Since(p.last) < 100*time.Millisecond {
		return
	}
	p.last = time.Now()
	rate := float64(n) / time.Since(p.start).Seconds()
	if p.total > 0 {
		frac := min(float64(read)/float64(p.total), 1)
		bar := strings.Repeat("█", int(frac*30)) + strings.Repeat("░", 30-int(frac*30))
		fmt.Fprintf(p.w, "\r%s %3.0f%%  %d memories  %.0f/s", bar, frac*100, n, rate)
	} else {
		fmt.Fprintf(p.w, "\r%d memories  %.0f/s", n, rate)
	}
	p.drawn = true
}

func (p *progress) clear() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

func (p *progress) done() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}
