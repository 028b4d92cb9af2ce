package eval

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// DefaultScopeField is the query and corpus field that scopes a query to
// the memories sharing its value, when the queries carry it (LoCoMo's
// conversation: each conversation is one agent's memory).
const DefaultScopeField = "conversation"

// Doc is one corpus document, stored as one memory.
type Doc struct {
	ID string
	// Text is the memory's content: the document's title, a newline and its
	// text (or the text alone when there is no title).
	Text string
	// Scope is the value of the scope field ("" when unscoped).
	Scope string
	// Time is when it happened: the first of the fields occurred_at,
	// timestamp, date (zero when absent).
	Time time.Time
	// Actor is who said it: the first of the fields actor, speaker, role,
	// name.
	Actor string
	// Session is the document's session inside its scope: the field
	// session ("" when absent).
	Session string
	// Seq is its order in the session: the number after the last ":" of
	// dia_id (LoCoMo's "D1:3"), else the field seq or turn, else 0 (the
	// order of the file).
	Seq int64
	// Caption describes an image shared with it (LoCoMo's image_caption).
	Caption string
}

// Field names the loader maps to a memory's actor and time, the first
// found winning (as mnemo import maps them).
var (
	actorFields = []string{"actor", "speaker", "role", "name"}
	timeFields  = []string{"occurred_at", "timestamp", "date"}
)

// first returns the first of fields r has (non-empty).
func (r rawLine) first(fields []string) (string, error) {
	for _, f := range fields {
		v, err := r.str(f)
		if err != nil || v != "" {
			return v, err
		}
	}
	return "", nil
}

// Query is one evaluation query with its judgments.
type Query struct {
	ID       string
	Text     string
	Category string
	Scope    string
	// Relevant holds the ids judged relevant (qrels score > 0), sorted.
	Relevant []string
}

// Dataset is a loaded evaluation folder.
type Dataset struct {
	// Name is the folder's base name.
	Name string
	Dir  string
	// ScopeField is the field scoping queries, "" when they are unscoped.
	ScopeField string
	Docs       []Doc
	// Queries are in file order, judged or not.
	Queries []Query
	// MissingRelevant counts qrels naming an id absent from the corpus: they
	// stay relevant (no run can find them) and lower recall.
	MissingRelevant int
}

// LoadOptions configure Load.
type LoadOptions struct {
	// ScopeField names the field that scopes each query to the documents
	// with the same value. Defaults to DefaultScopeField when the queries
	// carry it; a field the queries lack is an error.
	ScopeField string
	// NoScope evaluates every query against the whole corpus, even when the
	// queries carry a scope field.
	NoScope bool
}

// Load reads the dataset folder dir: corpus.jsonl (or corpus.jsonl.gz),
// queries.jsonl and qrels.tsv. Corpus lines are {"id", "text", "title"?,
// "timestamp"?, ...}; query lines {"id", "text", "category"?, ...}; qrels
// lines "query-id<TAB>corpus-id<TAB>score" (a header line is skipped; the
// four-column TREC form "qid 0 docid score" is accepted too). Errors name the
// file and line.
func Load(dir string, opts LoadOptions) (*Dataset, error) {
	ds := &Dataset{Name: filepath.Base(filepath.Clean(dir)), Dir: dir}
	qpath := filepath.Join(dir, "queries.jsonl")
	var queries []rawLine
	if err := readJSONL(qpath, func(line int, r rawLine) error {
		queries = append(queries, r)
		return nil
	}); err != nil {
		return nil, err
	}
	if len(queries) == 0 {
		return nil, fmt.Errorf("load %s: no queries", qpath)
	}
	if !opts.NoScope {
		field := opts.ScopeField
		has := func(f string) bool {
			for _, q := range queries {
				if _, ok := q.obj[f]; ok {
					return true
				}
			}
			return false
		}
		switch {
		case field != "" && !has(field):
			return nil, fmt.Errorf("load %s: no query has the scope field %q", qpath, field)
		case field == "" && has(DefaultScopeField):
			field = DefaultScopeField
		}
		ds.ScopeField = field
	}
	seenQ := map[string]int{}
	for _, r := range queries {
		q := Query{}
		var err error
		if q.ID, err = r.str("id"); err == nil && q.ID == "" {
			err = errors.New("id is missing")
		}
		if err == nil {
			q.Text, err = r.str("text")
		}
		if err == nil {
			q.Category, err = r.str("category")
		}
		if err == nil && ds.ScopeField != "" {
			if q.Scope, err = r.str(ds.ScopeField); err == nil && q.Scope == "" {
				err = fmt.Errorf("scope field %q is missing", ds.ScopeField)
			}
		}
		if err == nil {
			if prev, dup := seenQ[q.ID]; dup {
				err = fmt.Errorf("id %q repeats line %d", q.ID, prev)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("load %s: line %d: %w", qpath, r.line, err)
		}
		seenQ[q.ID] = r.line
		ds.Queries = append(ds.Queries, q)
	}

	cpath := filepath.Join(dir, "corpus.jsonl")
	if _, err := os.Stat(cpath); errors.Is(err, os.ErrNotExist) {
		if _, gzErr := os.Stat(cpath + ".gz"); gzErr == nil {
			cpath += ".gz"
		}
	}
	seenD := map[string]int{}
	if err := readJSONL(cpath, func(line int, r rawLine) error {
		var d Doc
		var title, ts string
		var err error
		if d.ID, err = r.str("id"); err == nil && d.ID == "" {
			err = errors.New("id is missing")
		}
		if err == nil {
			d.Text, err = r.str("text")
		}
		if err == nil {
			title, err = r.str("title")
		}
		if err == nil && ds.ScopeField != "" {
			d.Scope, err = r.str(ds.ScopeField)
		}
		if err == nil {
			ts, err = r.first(timeFields)
		}
		if err == nil && ts != "" {
			d.Time, err = parseTime(ts)
		}
		if err == nil {
			d.Actor, err = r.first(actorFields)
		}
		if err == nil {
			d.Session, err = r.str("session")
		}
		if err == nil {
			d.Caption, err = r.str("image_caption")
		}
		if err == nil {
			d.Seq, err = r.seq()
		}
		if err == nil {
			if prev, dup := seenD[d.ID]; dup {
				err = fmt.Errorf("id %q repeats line %d", d.ID, prev)
			}
		}
		if err != nil {
			return err
		}
		// Title and text are indexed together (BEIR's convention); the
		// newline ends the title as a sentence for the embedder.
		if t := strings.TrimSpace(title); t != "" {
			d.Text = t + "\n" + d.Text
		}
		if strings.TrimSpace(d.Text) == "" {
			return errors.New("text is empty")
		}
		seenD[d.ID] = line
		ds.Docs = append(ds.Docs, d)
		return nil
	}); err != nil {
		return nil, err
	}

	rpath := filepath.Join(dir, "qrels.tsv")
	rel := map[string]map[string]bool{}
	if err := readLines(rpath, func(line int, text string) error {
		f := strings.Fields(text)
		if len(f) == 0 {
			return nil
		}
		if len(f) == 4 { // TREC: qid iteration docid relevance
			f = []string{f[0], f[2], f[3]}
		}
		if len(f) != 3 {
			return fmt.Errorf("want query-id, corpus-id and score separated by tabs, got %d fields", len(f))
		}
		score, err := strconv.ParseFloat(f[2], 64)
		if err != nil {
			if line == 1 {
				return nil // header
			}
			return fmt.Errorf("score %q: must be a number", f[2])
		}
		if _, ok := seenQ[f[0]]; !ok {
			return nil // judgments of queries not in queries.jsonl (another split)
		}
		if score > 0 {
			if rel[f[0]] == nil {
				rel[f[0]] = map[string]bool{}
			}
			rel[f[0]][f[1]] = true
		}
		return nil
	}); err != nil {
		return nil, err
	}
	for i := range ds.Queries {
		q := &ds.Queries[i]
		for id := range rel[q.ID] {
			q.Relevant = append(q.Relevant, id)
			if _, ok := seenD[id]; !ok {
				ds.MissingRelevant++
			}
		}
		slices.Sort(q.Relevant)
	}
	return ds, nil
}

// Judged returns the queries with at least one relevant id, in file order.
func (d *Dataset) Judged() []Query {
	var out []Query
	for _, q := range d.Queries {
		if len(q.Relevant) > 0 && strings.TrimSpace(q.Text) != "" {
			out = append(out, q)
		}
	}
	return out
}

// rawLine is one decoded JSON line.
type rawLine struct {
	line int
	obj  map[string]json.RawMessage
}

// str returns field key as a string; numbers are given in their JSON
// spelling (LoCoMo's numeric session ids, SciFact's numeric ids). A missing
// or null field is "".
func (r rawLine) str(key string) (string, error) {
	v, ok := r.obj[key]
	if !ok || string(v) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err == nil {
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(v, &n); err == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf("field %s: must be a string or a number", key)
}

// seq reads a document's order in its session: the number after the
// last ":" of dia_id, else the field seq or turn; 0 when there is none.
func (r rawLine) seq() (int64, error) {
	if id, err := r.str("dia_id"); err != nil || id != "" {
		if err != nil {
			return 0, err
		}
		v, perr := strconv.ParseInt(id[strings.LastIndex(id, ":")+1:], 10, 64)
		if perr != nil || v < 1 {
			return 0, fmt.Errorf("field dia_id %q: want a turn number after its last ':'", id)
		}
		return v, nil
	}
	v, err := r.first([]string{"seq", "turn"})
	if err != nil || v == "" {
		return 0, err
	}
	n, perr := strconv.ParseInt(v, 10, 64)
	if perr != nil || n < 1 {
		return 0, fmt.Errorf("field seq %q: must be a positive integer", v)
	}
	return n, nil
}

// readJSONL calls fn with every non-blank line of path decoded as a JSON
// object. A path ending in .gz is decompressed.
func readJSONL(path string, fn func(line int, r rawLine) error) error {
	return readLines(path, func(line int, text string) error {
		text = strings.TrimSpace(text)
		if text == "" {
			return nil
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.UseNumber()
		var obj map[string]json.RawMessage
		if err := dec.Decode(&obj); err != nil || obj == nil {
			return fmt.Errorf("not a JSON object: %v", err)
		}
		return fn(line, rawLine{line: line, obj: obj})
	})
}

// readLines calls fn with every line of path (1-based numbers); errors are
// prefixed with the file and line.
func readLines(path string, fn func(line int, text string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("load %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("load %s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	br := bufio.NewReaderSize(r, 1<<20)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(b) > 0 {
			if ferr := fn(line, string(bytes.TrimRight(b, "\r\n"))); ferr != nil {
				return fmt.Errorf("load %s: line %d: %w", path, line, ferr)
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("load %s: %w", path, err)
		}
	}
}

// parseTime accepts RFC 3339, RFC 3339 without a zone (taken as UTC), a
// date, or Unix seconds.
func parseTime(s string) (time.Time, error) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !isInfOrNaN(f) {
		sec := int64(f)
		return time.Unix(sec, int64((f-float64(sec))*1e9)).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("timestamp %q: must be RFC 3339 (2023-05-08T13:56:00Z) or Unix seconds", s)
}

func isInfOrNaN(f float64) bool { return f != f || f > 1e300 || f < -1e300 }
