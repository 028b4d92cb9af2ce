package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/internal/sqlitedb"
	"github.com/mnemo-dev/mnemo/store/postgres"
)

// benchReport is what mnemo bench measured; --json prints it as is.
type benchReport struct {
	Profile  string   `json:"profile"`
	Sessions []string `json:"sessions,omitempty"` // the recalls' scope, when given
	Memories int      `json:"memories"`
	Recalls  int      `json:"recalls"`
	Warmup   int      `json:"warmup"`
	Limit    int      `json:"limit"`
	Queries  int      `json:"queries"`
	// QuerySource says where the queries came from.
	QuerySource string `json:"query_source"`
	Embedder    string `json:"embedder"`
	// Store is the store measured: "SQLite <driver>" or "PostgreSQL".
	Store string `json:"store"`
	CPUs  int    `json:"cpus"`
	// GraphLinked is how many memories the in-process dense index linked
	// into its graph before the recalls (Engine.BuildGraph), and
	// GraphSeconds how long that took.
	GraphLinked  int     `json:"graph_linked,omitempty"`
	GraphSeconds float64 `json:"graph_s,omitempty"`
	// Latency is the wall time of each recall minus its query embedding
	// (DESIGN §9's figure); WithEmbedding includes it.
	Latency       latencyStats `json:"latency_ms"`
	WithEmbedding latencyStats `json:"latency_with_embedding_ms"`
	// Stages are the mean milliseconds of each pipeline stage.
	Stages map[string]float64 `json:"stages_mean_ms"`
}

type latencyStats struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// maxBenchRecalls bounds --n and --warmup.
const maxBenchRecalls = 1_000_000

func cmdBench(ctx context.Context, a *app, args []string) error {
	if len(args) > 0 && args[0] == "ladder" {
		return cmdBenchLadder(ctx, a, args[1:])
	}
	fs := newFlags(a, "bench")
	ef := engineFlags{keepGraphs: true}
	ef.register(fs)
	profile := fs.String("profile", a.getenv("MNEMO_PROFILE"), "profile to recall from (required) (default $MNEMO_PROFILE)")
	queries := fs.String("queries", "", `queries: a JSONL file ({"text": ...} or {"query": ...} per line) or one query per line; - reads stdin (default: queries made of the profile's own memories)`)
	n := fs.Int("n", 500, "recalls to time")
	warmup := fs.Int("warmup", 50, "recalls run first, untimed")
	limit := fs.Int("limit", mnemo.DefaultLimit, "memories per recall")
	weights := fs.String("weights", "", "leg weights, e.g. lexical=1,dense=0.5 (default from settings)")
	asJSON := fs.Bool("json", false, "print JSON")
	var sessions listFlag
	fs.Var(&sessions, "session", "recall inside this session (repeatable, or comma-separated)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the timed recalls to this file (go tool pprof reads it)")
	fs.Usage = func() {
		fmt.Fprintln(a.stderr, "usage: mnemo bench --profile P [--session S] [--queries FILE|-] [--n 500] [--warmup 50] [--limit 10] [--weights ...] [--cpuprofile FILE] [--json]\n"+
			"       mnemo bench ladder --corpus DIR --dir WORKDIR [--sizes 10k,100k,1M] (see mnemo bench ladder -h)")
		fmt.Fprintln(a.stderr, "\nTimes recall on the database as it is (warm, one query at a time) and prints latency percentiles,\n"+
			"query embedding excluded, and the mean time of each pipeline stage. The recalls do not count as\n"+
			"accesses: the memories' access statistics are left alone.")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("unexpected argument %q: queries come from --queries", pos[0])
	}
	if err := requireProfile(*profile); err != nil {
		return err
	}
	if *n < 1 || *n > maxBenchRecalls {
		return usagef("--n = %d: must be an integer in [1, %d]", *n, maxBenchRecalls)
	}
	if *warmup < 0 || *warmup > maxBenchRecalls {
		return usagef("--warmup = %d: must be an integer in [0, %d]", *warmup, maxBenchRecalls)
	}
	if *limit < 1 || *limit > mnemo.MaxLimit {
		return usagef("--limit = %d: must be an integer in [1, %d]", *limit, mnemo.MaxLimit)
	}
	over := map[string]string{}
	if err := parseWeights(*weights, over); err != nil {
		return err
	}
	var texts []string
	source := ""
	if *queries != "" {
		if texts, source, err = readQueries(a, *queries); err != nil {
			return err
		}
	}
	e, err := ef.openExisting(a)
	if err != nil {
		return err
	}
	rep, berr := runBench(ctx, e, benchParams{profile: *profile, texts: texts, source: source, n: *n, warmup: *warmup,
		limit: *limit, overrides: over, sessions: sessions, cpuProfile: *cpuProfile})
	if db, _ := a.dbPath(ef.db); rep != nil && postgres.IsDSN(db) {
		rep.Store = "PostgreSQL"
	}
	if err := e.Close(); berr == nil && err != nil {
		return err
	}
	if berr != nil {
		return berr
	}
	if *asJSON {
		return writeJSON(a, rep)
	}
	printBench(a.stdout, rep)
	return nil
}

type benchParams struct {
	profile   string
	texts     []string // nil: made from the profile's memories
	source    string
	n, warmup int
	limit     int
	overrides map[string]string
	sessions  []string // the scope: these sessions (nil: the whole profile)
	// cpuProfile, when not "", is the file a CPU profile of the timed
	// recalls goes to.
	cpuProfile string
}

func runBench(ctx context.Context, e *mnemo.Engine, p benchParams) (*benchReport, error) {
	count, err := e.Count(ctx, p.profile)
	if err != nil {
		return nil, err
	}
	if count == 0 {
		return nil, usagef("profile %q has no memories to recall", p.profile)
	}
	if p.texts == nil {
		if p.texts, err = memoryQueries(ctx, e, p.profile, min(p.n, 2000)); err != nil {
			return nil, err
		}
		p.source = "the profile's memories (their first 8 words: every query matches, a best case for the lexical leg)"
	}
	rep := &benchReport{Profile: p.profile, Sessions: p.sessions, Memories: count, Recalls: p.n, Warmup: p.warmup, Limit: p.limit,
		Queries: len(p.texts), QuerySource: p.source, Embedder: e.Embedder().Model(), Store: "SQLite " + sqlitedb.Driver,
		CPUs: runtime.GOMAXPROCS(0), Stages: map[string]float64{}}
	t0 := time.Now()
	if rep.GraphLinked, err = e.BuildGraph(ctx, p.profile); err != nil {
		return nil, err
	}
	if rep.GraphLinked > 0 {
		rep.GraphSeconds = time.Since(t0).Seconds()
	}
	recallOne := func(i int) (wall, embed time.Duration, timings map[string]float64, err error) {
		q := mnemo.Query{Profile: p.profile, Sessions: p.sessions, Text: p.texts[i%len(p.texts)], Limit: p.limit,
			Overrides: p.overrides, Timings: true, NoTouch: true}
		t := time.Now()
		res, err := e.Recall(ctx, q)
		wall = time.Since(t)
		if err != nil {
			return 0, 0, nil, fmt.Errorf("recall %q: %w", q.Text, err)
		}
		timings = res.Trace.Timings
		return wall, time.Duration(timings["embed"] * float64(time.Millisecond)), timings, nil
	}
	for i := range p.warmup {
		if _, _, _, err := recallOne(i); err != nil {
			return nil, err
		}
	}
	lat := make([]float64, 0, p.n)
	withEmb := make([]float64, 0, p.n)
	if p.cpuProfile != "" {
		f, err := os.Create(p.cpuProfile)
		if err != nil {
			return nil, usagef("--cpuprofile: %v", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, fmt.Errorf("--cpuprofile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	for i := range p.n {
		wall, embed, timings, err := recallOne(p.warmup + i)
		if err != nil {
			return nil, err
		}
		lat = append(lat, ms(wall-embed))
		withEmb = append(withEmb, ms(wall))
		for k, v := range timings {
			if k != "total" {
				rep.Stages[k] += v / float64(p.n)
			}
		}
	}
	rep.Latency, rep.WithEmbedding = summarize(lat), summarize(withEmb)
	return rep, nil
}

// memoryQueries makes up to n queries from the profile's memories, spread
// over the whole profile: the first 8 words of each.
func memoryQueries(ctx context.Context, e *mnemo.Engine, profile string, n int) ([]string, error) {
	var all []string
	for cursor := ""; ; {
		page, err := e.List(ctx, mnemo.ListQuery{Profile: profile, Limit: mnemo.MaxListLimit, Cursor: cursor})
		if err != nil {
			return nil, err
		}
		for _, m := range page.Memories {
			words := strings.Fields(m.Content)
			all = append(all, strings.Join(words[:min(len(words), 8)], " "))
		}
		if cursor = page.NextCursor; cursor == "" {
			break
		}
	}
	if len(all) <= n {
		return all, nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = all[i*len(all)/n]
	}
	return out, nil
}

// readQueries reads --queries: JSONL lines with "text" or "query", or plain
// lines, blank lines skipped.
func readQueries(a *app, path string) ([]string, string, error) {
	var r io.Reader = a.stdin
	source := "stdin"
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, "", usagef("--queries: %v", err)
		}
		defer f.Close()
		r, source = f, path
	}
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		if strings.HasPrefix(s, "{") {
			var v struct {
				Text  *string `json:"text"`
				Query *string `json:"query"`
			}
			if err := json.Unmarshal([]byte(s), &v); err != nil {
				return nil, "", usagef("--queries %s line %d: %v", source, line, err)
			}
			switch {
			case v.Text != nil:
				s = *v.Text
			case v.Query != nil:
				s = *v.Query
			default:
				return nil, "", usagef(`--queries %s line %d: a JSON line needs "text" or "query"`, source, line)
			}
			if strings.TrimSpace(s) == "" {
				return nil, "", usagef("--queries %s line %d: the query is blank", source, line)
			}
		}
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, "", usagef("--queries %s: %v", source, err)
	}
	if len(out) == 0 {
		return nil, "", usagef("--queries %s holds no queries", source)
	}
	return out, fmt.Sprintf("%s, in order, repeated as needed", source), nil
}

// summarize gives nearest-rank percentiles of xs (milliseconds).
func summarize(xs []float64) latencyStats {
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := func(q float64) float64 { return s[max(0, int(math.Ceil(q*float64(len(s))))-1)] }
	var sum float64
	for _, x := range s {
		sum += x
	}
	return latencyStats{P50: rank(0.50), P90: rank(0.90), P95: rank(0.95), P99: rank(0.99), Max: s[len(s)-1], Mean: sum / float64(len(s))}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func printBench(w io.Writer, r *benchReport) {
	fmt.Fprintf(w, "mnemo bench: %d recalls (after %d untimed) of up to %d memories, profile %q (%d memories)\n",
		r.Recalls, r.Warmup, r.Limit, r.Profile, r.Memories)
	fmt.Fprintf(w, "engine: embedder %s, %s, %d CPUs\n", r.Embedder, r.Store, r.CPUs)
	if r.GraphLinked > 0 {
		fmt.Fprintf(w, "dense index graph: linked %d memories in %.1f s before the recalls\n", r.GraphLinked, r.GraphSeconds)
	}
	fmt.Fprintf(w, "queries: %d from %s\n", r.Queries, r.QuerySource)
	if len(r.Sessions) > 0 {
		fmt.Fprintf(w, "scope: sessions %s\n", strings.Join(r.Sessions, ", "))
	}
	line := func(name string, l latencyStats) {
		fmt.Fprintf(w, "%-38s p50 %.2f  p90 %.2f  p95 %.2f  p99 %.2f  max %.2f  mean %.2f\n", name, l.P50, l.P90, l.P95, l.P99, l.Max, l.Mean)
	}
	line("latency, query embedding excluded (ms)", r.Latency)
	line("latency with query embedding (ms)", r.WithEmbedding)
	fmt.Fprintf(w, "mean per stage (ms; legs run concurrently, so they overlap): %s\n", stageList(r.Stages))
}

// stageList lists the stages' mean times, longest first.
func stageList(stages map[string]float64) string {
	names := make([]string, 0, len(stages))
	for k := range stages {
		names = append(names, k)
	}
	slices.SortFunc(names, func(x, y string) int {
		if c := cmp.Compare(stages[y], stages[x]); c != 0 {
			return c
		}
		return strings.Compare(x, y)
	})
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s %.3f", k, stages[k])
	}
	return strings.Join(parts, ", ")
}
