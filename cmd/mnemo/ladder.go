package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/internal/sqlitedb"
	"github.com/mnemo-dev/mnemo/store/postgres"
)

// ladderProfile is the profile the ladder's databases hold their corpus in.
const ladderProfile = "bench"

// ladderReport is what mnemo bench ladder measured; --json prints it.
type ladderReport struct {
	Corpus      []string    `json:"corpus"`
	QuerySource string      `json:"query_source"`
	Queries     int         `json:"queries"`
	SessionSize int         `json:"session_size"`
	Embedder    string      `json:"embedder"`
	SQLite      string      `json:"sqlite_driver"`
	CPUs        int         `json:"cpus"`
	GOOS        string      `json:"goos"`
	GOARCH      string      `json:"goarch"`
	Rungs       []ladderRow `json:"rungs"`
}

// ladderRow is one size's figures. Latencies exclude the query's
// embedding; the new-process figures are the median of three runs.
type ladderRow struct {
	Memories int    `json:"memories"`
	Database string `json:"database"`
	DBBytes  int64  `json:"database_bytes"`
	// Import is the import's rate (memories/s, embedding included); 0
	// when an existing database was reused.
	Import        float64 `json:"import_per_s"`
	ImportSeconds float64 `json:"import_s"`
	// VectorIndexSeconds is how long the ANN index took to build after the
	// import (Postgres with pgvector: Engine.IndexVectors; else the
	// in-process index's graph, Engine.BuildGraph); 0 when there is none
	// or it was there.
	VectorIndexSeconds float64            `json:"vector_index_s,omitempty"`
	Unscoped           latencyStats       `json:"unscoped_ms"`
	UnscopedStage      map[string]float64 `json:"unscoped_stages_mean_ms"`
	// Scoped recalls inside one session of SessionSize memories.
	Scoped      latencyStats       `json:"session_ms"`
	ScopedStage map[string]float64 `json:"session_stages_mean_ms"`
	// FirstRecall is a new `mnemo recall` process's wall time, start to
	// exit, query embedding and model load included, and its peak RSS,
	// with the dense index's snapshot in place; Unsnapshotted is the same
	// without it (the process reads every memory from the database, and
	// writes the snapshot before it exits).
	FirstRecall      float64 `json:"first_recall_ms"`
	FirstRecallRSS   float64 `json:"first_recall_peak_rss_mb"`
	Unsnapshotted    float64 `json:"first_recall_without_snapshot_ms"`
	UnsnapshottedRSS float64 `json:"first_recall_without_snapshot_peak_rss_mb"`
	// Recollect is the same for `mnemo recollect` scoped to one session.
	Recollect    float64 `json:"recollect_ms"`
	RecollectRSS float64 `json:"recollect_peak_rss_mb"`
}

// Bounds of the ladder's flags.
const (
	maxLadderSize    = 10_000_000
	ladderImportSize = importBatch // memories per Write, as mnemo import
	newProcessRuns   = 3
)

func cmdBenchLadder(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "bench ladder")
	ef := engineFlags{keepGraphs: true}
	ef.register(fs)
	sizes := fs.String("sizes", "10k,100k,1M", "corpus sizes to measure, comma-separated (k and M suffixes)")
	corpus := fs.String("corpus", "", "dataset folders whose corpus.jsonl texts make the memories, comma-separated (required)")
	queries := fs.String("queries", "", "queries (as mnemo bench --queries; default: the first corpus folder's queries.jsonl)")
	dir := fs.String("dir", "", "folder for the databases, ladder-N.db (required)")
	reuse := fs.Bool("reuse", false, "keep a database already holding the rung's corpus instead of importing it again")
	sessionSize := fs.Int("session-size", 1000, "memories per session: the scoped recalls search one session")
	n := fs.Int("n", 500, "recalls to time per rung and scope")
	warmup := fs.Int("warmup", 50, "recalls run first, untimed")
	seed := fs.Uint64("seed", 1, "seed of the corpus draw")
	exe := fs.String("mnemo", "", "mnemo binary the new-process figures run (default: this one)")
	asJSON := fs.Bool("json", false, "print JSON")
	pgURL := fs.String("postgres", "", "build the rungs in this PostgreSQL database (a postgres:// URL), schema ladder_N each, instead of SQLite files in --dir")
	fs.Usage = func() {
		fmt.Fprintln(a.stderr, `usage: mnemo bench ladder --corpus DIR[,DIR] --dir WORKDIR [--postgres URL] [--sizes 10k,100k,1M] [--n 500] [--json]

For each size N, builds a reproducible corpus of N memories (each joins two
sentences drawn from the texts of the corpus folders' corpus.jsonl or
corpus.jsonl.gz, in sessions of --session-size), imports
it into WORKDIR/ladder-N.db with the engine's embedder and reports: import
rate, warm recall latency unscoped and inside one session (p50/p95/p99,
query embedding excluded), the mean per stage, and the wall time and peak
RSS of a new process's first recall (without the dense index's snapshot,
then with it) and of mnemo recollect. With --postgres, each rung is a
schema of that database (there are no snapshots: both first-recall
figures read the database); --dir still holds recollect's output.`)
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q", pos[0])
	}
	ns, err := parseSizes(*sizes)
	if err != nil {
		return err
	}
	if strings.TrimSpace(*corpus) == "" {
		return usagef("--corpus is required: a dataset folder holding corpus.jsonl")
	}
	if strings.TrimSpace(*dir) == "" {
		return usagef("--dir is required: where the ladder's databases go")
	}
	if *sessionSize < 1 || *sessionSize > maxLadderSize {
		return usagef("--session-size = %d: must be an integer in [1, %d]", *sessionSize, maxLadderSize)
	}
	if *n < 1 || *n > maxBenchRecalls {
		return usagef("--n = %d: must be an integer in [1, %d]", *n, maxBenchRecalls)
	}
	if *warmup < 0 || *warmup > maxBenchRecalls {
		return usagef("--warmup = %d: must be an integer in [0, %d]", *warmup, maxBenchRecalls)
	}
	if ef.db != "" {
		return usagef("--db is not used: the ladder's databases go in --dir (or --postgres)")
	}
	if *pgURL != "" && !postgres.IsDSN(*pgURL) {
		return usagef("--postgres %q: want a postgres:// URL", *pgURL)
	}
	dirs := splitList(*corpus)
	var texts []string
	for _, d := range dirs {
		t, err := readCorpusTexts(d)
		if err != nil {
			return err
		}
		texts = append(texts, t...)
	}
	if len(texts) == 0 {
		return usagef("--corpus %s holds no texts", *corpus)
	}
	qpath := *queries
	if qpath == "" {
		qpath = filepath.Join(dirs[0], "queries.jsonl")
	}
	qs, source, err := readQueries(a, qpath)
	if err != nil {
		return err
	}
	if *exe == "" {
		if *exe, err = os.Executable(); err != nil {
			return fmt.Errorf("find the mnemo binary (--mnemo names it): %w", err)
		}
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return fmt.Errorf("--dir: %w", err)
	}
	rep := &ladderReport{Corpus: dirs, QuerySource: source, Queries: len(qs), SessionSize: *sessionSize,
		SQLite: sqlitedb.Driver, CPUs: runtime.GOMAXPROCS(0), GOOS: runtime.GOOS, GOARCH: runtime.GOARCH}
	l := &ladder{a: a, ef: ef, texts: texts, queries: qs, seed: *seed, sessionSize: *sessionSize, n: *n, warmup: *warmup,
		exe: *exe, reuse: *reuse, rep: rep, dir: *dir}
	if *pgURL != "" {
		rep.SQLite = "" // PostgreSQL: printed so
	}
	for _, size := range ns {
		db := filepath.Join(*dir, fmt.Sprintf("ladder-%d.db", size))
		if *pgURL != "" {
			db = withSchema(*pgURL, fmt.Sprintf("ladder_%d", size))
		}
		row, err := l.rung(ctx, db, size)
		if err != nil {
			return fmt.Errorf("%d memories: %w", size, err)
		}
		rep.Rungs = append(rep.Rungs, row)
		if !*asJSON {
			fmt.Fprintf(a.stderr, "mnemo bench ladder: %d memories done\n", size)
		}
	}
	if *asJSON {
		return writeJSON(a, rep)
	}
	printLadder(a.stdout, rep)
	return nil
}

// ladder measures the rungs of one mnemo bench ladder run.
type ladder struct {
	a           *app
	ef          engineFlags
	texts       []string
	queries     []string
	seed        uint64
	sessionSize int
	n, warmup   int
	exe         string
	reuse       bool
	rep         *ladderReport
	dir         string
}

// withSchema returns the postgres:// URL u naming schema (its other
// parameters, dense= among them, kept).
func withSchema(u, schema string) string {
	p, err := url.Parse(u)
	if err != nil {
		return u
	}
	q := p.Query()
	q.Set("schema", schema)
	p.RawQuery = q.Encode()
	return p.String()
}

// rung builds (or reuses) the database of size memories at path and
// measures it.
func (l *ladder) rung(ctx context.Context, path string, size int) (ladderRow, error) {
	row := ladderRow{Memories: size, Database: path}
	ef := l.ef
	ef.db = path
	e, err := ef.open(l.a)
	if err != nil {
		return row, err
	}
	defer func() {
		if e != nil {
			e.Close()
		}
	}()
	l.rep.Embedder = e.Embedder().Model()
	have, err := e.Count(ctx, ladderProfile)
	if err != nil {
		return row, err
	}
	if have != size || !l.reuse {
		if have > 0 {
			if _, err := e.DeleteProfile(ctx, ladderProfile); err != nil {
				return row, err
			}
		}
		t := time.Now()
		if err := l.importCorpus(ctx, e, size); err != nil {
			return row, err
		}
		d := time.Since(t)
		row.ImportSeconds, row.Import = d.Seconds(), float64(size)/d.Seconds()
	}
	t := time.Now()
	ix, _, err := e.IndexVectors(ctx, nil)
	if err != nil {
		return row, err
	}
	linked, err := e.BuildGraph(ctx, ladderProfile)
	if err != nil {
		return row, err
	}
	if linked > 0 || slices.ContainsFunc(ix, func(x mnemo.VectorIndex) bool { return x.Built }) {
		row.VectorIndexSeconds = time.Since(t).Seconds()
	}
	if err := e.Close(); err != nil {
		return row, err
	}
	e = nil
	pg := postgres.IsDSN(path)
	if fi, err := os.Stat(path); err == nil && !pg {
		row.DBBytes = fi.Size()
	}
	session := l.sessionOf(size / 2)
	query := l.queries[0]
	recall := []string{"recall", "--profile", ladderProfile, query}
	// The first process runs without the index snapshot (BuildGraph wrote
	// it, with the graph); it writes one of its own without the graph (it
	// exits first), which the kept one then replaces.
	index, kept := mnemo.IndexDir(path), mnemo.IndexDir(path)+".kept"
	if !pg {
		if err := os.RemoveAll(kept); err != nil {
			return row, err
		}
		if err := os.Rename(index, kept); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return row, err
		}
	}
	if row.Unsnapshotted, row.UnsnapshottedRSS, err = l.newProcess(ctx, path, 1, recall...); err != nil {
		return row, err
	}
	if !pg {
		if err := os.RemoveAll(index); err != nil {
			return row, err
		}
		if err := os.Rename(kept, index); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return row, err
		}
	}
	if row.FirstRecall, row.FirstRecallRSS, err = l.newProcess(ctx, path, newProcessRuns, recall...); err != nil {
		return row, err
	}
	out := filepath.Join(l.dir, "recollection.md")
	if row.Recollect, row.RecollectRSS, err = l.newProcess(ctx, path, newProcessRuns, "recollect", "--profile", ladderProfile,
		"--session", session, "--out", out, query); err != nil {
		return row, err
	}
	if e, err = ef.openExisting(l.a); err != nil {
		return row, err
	}
	p := benchParams{profile: ladderProfile, texts: l.queries, n: l.n, warmup: l.warmup, limit: mnemo.DefaultLimit}
	rep, err := runBench(ctx, e, p)
	if err != nil {
		return row, err
	}
	row.Unscoped, row.UnscopedStage = rep.Latency, rep.Stages
	p.sessions = []string{session}
	if rep, err = runBench(ctx, e, p); err != nil {
		return row, err
	}
	row.Scoped, row.ScopedStage = rep.Latency, rep.Stages
	err = e.Close()
	e = nil
	return row, err
}

// sessionOf names the session of the i-th memory.
func (l *ladder) sessionOf(i int) string { return fmt.Sprintf("s%06d", i/l.sessionSize) }

// importCorpus writes the rung's corpus: memory i joins two texts drawn by
// a generator seeded with the seed and the size, so a rung is the same
// corpus on every run.
func (l *ladder) importCorpus(ctx context.Context, e *mnemo.Engine, size int) error {
	rng := rand.New(rand.NewPCG(l.seed, uint64(size)))
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	batch := make([]mnemo.Input, 0, ladderImportSize)
	for i := range size {
		batch = append(batch, mnemo.Input{
			ID: fmt.Sprintf("m%08d", i), Profile: ladderProfile, Session: l.sessionOf(i),
			Content:   l.texts[rng.IntN(len(l.texts))] + " " + l.texts[rng.IntN(len(l.texts))],
			CreatedAt: start.Add(time.Duration(i) * time.Minute),
		})
		if len(batch) == ladderImportSize || i == size-1 {
			res, err := e.Write(ctx, batch)
			if err != nil {
				return fmt.Errorf("import: %w", err)
			}
			if res.Deferred > 0 {
				return fmt.Errorf("import: %d memories stored without an embedding: %w", res.Deferred, res.EmbedErr)
			}
			batch = batch[:0]
		}
	}
	return nil
}

// newProcess runs mnemo args against the database at path runs times and
// returns the median wall time (ms) and peak RSS (MB).
func (l *ladder) newProcess(ctx context.Context, path string, runs int, args ...string) (wallMS, rssMB float64, err error) {
	var walls, rsss []float64
	for range runs {
		cmd := exec.CommandContext(ctx, l.exe, args...)
		cmd.Env = append(os.Environ(), "MNEMO_DB="+path)
		if name := l.a.embedderName(l.ef.embedder); name != "" {
			cmd.Env = append(cmd.Env, "MNEMO_EMBEDDER="+name)
		}
		if home := l.a.getenv("MNEMO_HOME"); home != "" {
			cmd.Env = append(cmd.Env, "MNEMO_HOME="+home)
		}
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = io.Discard, &stderr
		t := time.Now()
		rss, err := runPeakRSS(cmd)
		if err != nil {
			return 0, 0, fmt.Errorf("mnemo %s: %w: %s", args[0], err, strings.TrimSpace(stderr.String()))
		}
		walls = append(walls, ms(time.Since(t)))
		rsss = append(rsss, float64(rss)/(1<<20))
	}
	slices.Sort(walls)
	slices.Sort(rsss)
	return walls[len(walls)/2], rsss[len(rsss)/2], nil
}

// parseSizes parses --sizes: positive counts with an optional k (×1,000)
// or M (×1,000,000) suffix.
func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		mult, num := 1, f
		switch {
		case strings.HasSuffix(f, "k"), strings.HasSuffix(f, "K"):
			mult, num = 1000, f[:len(f)-1]
		case strings.HasSuffix(f, "M"):
			mult, num = 1_000_000, f[:len(f)-1]
		}
		v, err := strconv.Atoi(num)
		if err != nil || v < 1 || v > maxLadderSize/mult {
			return nil, usagef("--sizes: %q is not a size in [1, %d] (e.g. 10k, 1M)", f, maxLadderSize)
		}
		out = append(out, v*mult)
	}
	if len(out) == 0 {
		return nil, usagef("--sizes names no size")
	}
	return out, nil
}

// splitList splits a comma-separated list, dropping blank items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// readCorpusTexts reads the sentences of the "text" of each line of the
// folder's corpus.jsonl, or of its corpus.jsonl.gz.
func readCorpusTexts(dir string) ([]string, error) {
	path := filepath.Join(dir, "corpus.jsonl")
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		path += ".gz"
		f, err = os.Open(path)
	}
	if err != nil {
		return nil, usagef("--corpus: %s holds neither corpus.jsonl nor corpus.jsonl.gz: %v", dir, err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return nil, usagef("--corpus %s: %v", path, err)
		}
		defer zr.Close()
		r = zr
	}
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<24)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var v struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, usagef("--corpus %s line %d: %v", path, line, err)
		}
		out = append(out, sentences(v.Text)...)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--corpus %s: %w", path, err)
	}
	return out, nil
}

// sentences splits text after each '.', '?' or '!' followed by a space
// (a long document makes many memories, as an agent would store them).
func sentences(text string) []string {
	var out []string
	for text = strings.TrimSpace(text); text != ""; {
		i := strings.IndexFunc(text, func(r rune) bool { return r == '.' || r == '?' || r == '!' })
		for i >= 0 && i+1 < len(text) && text[i+1] != ' ' {
			j := strings.IndexFunc(text[i+1:], func(r rune) bool { return r == '.' || r == '?' || r == '!' })
			if j < 0 {
				i = -1
				break
			}
			i += 1 + j
		}
		if i < 0 || i+1 >= len(text) {
			out = append(out, text)
			break
		}
		out = append(out, text[:i+1])
		text = strings.TrimSpace(text[i+1:])
	}
	return out
}

// printLadder prints the ladder as a markdown table.
func printLadder(w io.Writer, r *ladderReport) {
	st := "SQLite " + r.SQLite
	if r.SQLite == "" {
		st = "PostgreSQL"
	}
	fmt.Fprintf(w, "mnemo bench ladder: embedder %s, %s, %d CPUs (%s/%s); corpus %s; %d queries from %s; sessions of %d\n\n",
		r.Embedder, st, r.CPUs, r.GOOS, r.GOARCH, strings.Join(r.Corpus, ", "), r.Queries, r.QuerySource, r.SessionSize)
	fmt.Fprintln(w, "| memories | import/s | recall p50 / p95 / p99 ms | session p50 / p95 / p99 ms | new process's first recall: ms, peak RSS MB | the same without the index snapshot | recollect ms, peak RSS MB | database MB |")
	fmt.Fprintln(w, "|---:|---:|---|---|---|---|---|---:|")
	for _, x := range r.Rungs {
		imp := "reused"
		if x.Import > 0 {
			imp = fmt.Sprintf("%.0f", x.Import)
		}
		fmt.Fprintf(w, "| %d | %s | %.2f / %.2f / %.2f | %.2f / %.2f / %.2f | %.0f, %.0f | %.0f, %.0f | %.0f, %.0f | %.0f |\n",
			x.Memories, imp, x.Unscoped.P50, x.Unscoped.P95, x.Unscoped.P99, x.Scoped.P50, x.Scoped.P95, x.Scoped.P99,
			x.FirstRecall, x.FirstRecallRSS, x.Unsnapshotted, x.UnsnapshottedRSS, x.Recollect, x.RecollectRSS, float64(x.DBBytes)/(1<<20))
	}
	for _, x := range r.Rungs {
		if x.VectorIndexSeconds > 0 {
			fmt.Fprintf(w, "\n%d: the HNSW index of the profile's embeddings took %.1f s to build after the import (or to catch up with it).\n", x.Memories, x.VectorIndexSeconds)
		}
	}
	fmt.Fprintln(w, "\nmean per stage (ms; legs run concurrently, so they overlap):")
	for _, x := range r.Rungs {
		fmt.Fprintf(w, "- %d unscoped: %s\n", x.Memories, stageList(x.UnscopedStage))
		fmt.Fprintf(w, "- %d session: %s\n", x.Memories, stageList(x.ScopedStage))
	}
}
