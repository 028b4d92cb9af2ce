package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mnemo-dev/mnemo"
)

// importBatch is the number of memories per transaction: large enough to
// amortise the commit, small enough to bound memory and keep progress
// visible.
const importBatch = 1000

// knownImportFields are mapped onto memory fields; any other field of a line
// is kept in the memory's metadata.
var knownImportFields = map[string]bool{
	"id": true, "text": true, "content": true, "profile": true, "project": true, "session": true, "kind": true,
	"importance": true, "created_at": true, "timestamp": true, "metadata": true,
}

func cmdImport(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "import")
	var ef engineFlags
	ef.register(fs)
	profile := fs.String("profile", a.getenv("MNEMO_PROFILE"), "profile for lines that carry none (default $MNEMO_PROFILE)")
	sessionField := fs.String("session-field", "", "take each memory's session from this field (e.g. conversation)")
	strict := fs.Bool("strict", false, "abort on the first bad line, writing nothing")
	fs.Usage = func() {
		fmt.Fprintln(a.stderr, "usage: mnemo import FILE.jsonl [--profile P] [--session-field NAME] [--strict]\n"+
			"lines: {id?, text|content, profile?, project?, session?, kind?, importance?, created_at|timestamp?, metadata?}; FILE - reads stdin")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("usage: mnemo import FILE.jsonl [--profile P] [--session-field NAME] [--strict]")
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
	e, err := ef.open(a)
	if err != nil {
		return err
	}
	im := &importer{a: a, e: e, profile: *profile, sessionField: *sessionField, strict: *strict,
		progress: newProgress(a.stderr, size)}
	ierr := im.run(ctx, r)
	cerr := e.Close()
	im.progress.done()
	if ierr != nil {
		return ierr
	}
	if cerr != nil {
		return cerr
	}
	fmt.Fprintf(a.stdout, "imported %d memories", im.imported)
	if im.skipped > 0 {
		fmt.Fprintf(a.stdout, ", skipped %d bad lines", im.skipped)
	}
	fmt.Fprintln(a.stdout)
	if im.skipped > 0 {
		return usagef("%d lines were skipped (see above)", im.skipped)
	}
	return nil
}

type importer struct {
	a            *app
	e            *mnemo.Engine
	profile      string
	sessionField string
	strict       bool
	progress     *progress

	imported, skipped int
}

type pending struct {
	line int
	in   mnemo.Input
}

func (im *importer) run(ctx context.Context, r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 2*mnemo.MaxContentBytes+64<<10)
	var batch []pending
	var all []pending // strict mode: everything goes in one transaction
	line := 0
	var read int64
	for sc.Scan() {
		line++
		read += int64(len(sc.Bytes())) + 1
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		in, err := im.parse(raw)
		if err != nil {
			if im.strict {
				return usagef("line %d: %v (nothing was written)", line, err)
			}
			im.skip(line, err)
			continue
		}
		if im.strict {
			all = append(all, pending{line, in})
			continue
		}
		batch = append(batch, pending{line, in})
		if len(batch) == importBatch {
			if err := im.flush(ctx, batch); err != nil {
				return err
			}
			batch = batch[:0]
			im.progress.update(read, im.imported)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return usagef("line %d: longer than %d bytes", line+1, 2*mnemo.MaxContentBytes+64<<10)
		}
		return fmt.Errorf("read input: %w", err)
	}
	if im.strict {
		ins := make([]mnemo.Input, len(all))
		for i, p := range all {
			ins[i] = p.in
		}
		if _, err := im.e.RememberBatch(ctx, ins); err != nil {
			return fmt.Errorf("%w (nothing was written)", lineErr(err, all))
		}
		im.imported = len(all)
		return nil
	}
	if err := im.flush(ctx, batch); err != nil {
		return err
	}
	im.progress.update(read, im.imported)
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

// flush writes a batch in one transaction. If the batch is rejected (e.g.
// an id already stored), it is retried line by line so only the bad lines
// are skipped.
func (im *importer) flush(ctx context.Context, batch []pending) error {
	if len(batch) == 0 {
		return nil
	}
	ins := make([]mnemo.Input, len(batch))
	for i, p := range batch {
		ins[i] = p.in
	}
	_, err := im.e.RememberBatch(ctx, ins)
	if err == nil {
		im.imported += len(batch)
		return nil
	}
	if !errors.Is(err, mnemo.ErrInvalid) && !errors.Is(err, mnemo.ErrDimensionMismatch) {
		return err
	}
	for _, p := range batch {
		if _, err := im.e.Remember(ctx, p.in); err != nil {
			if !errors.Is(err, mnemo.ErrInvalid) && !errors.Is(err, mnemo.ErrDimensionMismatch) {
				return err
			}
			im.skip(p.line, err)
			continue
		}
		im.imported++
	}
	return nil
}

func (im *importer) skip(line int, err error) {
	im.skipped++
	im.progress.clear()
	fmt.Fprintf(im.a.stderr, "line %d: skipped: %v\n", line, err)
}

// parse turns one JSON line into an Input.
func (im *importer) parse(raw []byte) (mnemo.Input, error) {
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		return mnemo.Input{}, fmt.Errorf("malformed JSON: %v", err)
	}
	if obj == nil {
		return mnemo.Input{}, errors.New("line is not a JSON object")
	}
	var in mnemo.Input
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
	in.Profile = str("profile")
	in.Project = str("project")
	in.Session = str("session")
	if im.sessionField != "" {
		if v := str(im.sessionField); v != "" {
			in.Session = v
		}
	}
	in.Kind = str("kind")
	ts := str("created_at")
	if ts == "" {
		ts = str("timestamp")
	}
	if err != nil {
		return in, err
	}
	if in.Profile == "" {
		in.Profile = im.profile
	}
	if strings.TrimSpace(in.Profile) == "" {
		return in, errors.New("profile is required: give the line a profile field or pass --profile")
	}
	if strings.TrimSpace(in.Content) == "" {
		return in, errors.New("text (or content) is empty")
	}
	if v, ok := obj["importance"]; ok && string(v) != "null" {
		var f float64
		if err := json.Unmarshal(v, &f); err != nil {
			return in, fmt.Errorf("field importance: must be a number in [0, 1]")
		}
		in.Importance = &f
	}
	if ts != "" {
		t, err := parseTime(ts)
		if err != nil {
			return in, err
		}
		in.CreatedAt = t
	}
	meta := map[string]json.RawMessage{}
	if v, ok := obj["metadata"]; ok && string(v) != "null" {
		if err := json.Unmarshal(v, &meta); err != nil {
			return in, errors.New("field metadata: must be a JSON object")
		}
	}
	for k, v := range obj {
		if !knownImportFields[k] {
			if _, taken := meta[k]; !taken {
				meta[k] = v
			}
		}
	}
	if len(meta) > 0 {
		b, err := json.Marshal(meta)
		if err != nil {
			return in, fmt.Errorf("metadata: %v", err)
		}
		in.Metadata = b
	}
	return in, nil
}

// parseTime accepts RFC 3339, RFC 3339 without a zone (taken as UTC), a
// date, or Unix seconds.
func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		sec := int64(f)
		return time.Unix(sec, int64((f-float64(sec))*1e9)).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("timestamp %q: must be RFC 3339 (2023-05-08T13:56:00Z) or Unix seconds", s)
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
