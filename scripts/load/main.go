// Command load is mnemo's HTTP load generator: N concurrent clients mixing
// writes (POST /v1/memories) and recalls (POST /v1/recall, and some
// GET /v1/search/lexical) for a fixed time, then a report of throughput,
// latency percentiles per operation and errors. It exits 1 if any request
// failed.
//
// By default it starts its own server in process on 127.0.0.1 (a fresh
// database in a temporary directory, an API key, the hashing embedder or
// the built-in GloVe model) so that one command measures the whole HTTP
// stack:
//
//	go run ./scripts/load --clients 50 --duration 30s
//	go run ./scripts/load --embedder glove --seed 10000
//
// With --url it loads a running `mnemo serve` instead (loopback only):
//
//	go run ./scripts/load --url http://127.0.0.1:7077 --key "$KEY"
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/embed/glove"
	"github.com/mnemo-dev/mnemo/server/httpapi"
)

// config is one load run.
type config struct {
	URL        string        // target; "" starts a server in process
	Key        string        // API key for URL
	Clients    int           // concurrent clients
	Duration   time.Duration // how long to send requests
	WriteRatio float64       // share of requests that write
	SearchRate float64       // share of reads that are single-leg searches
	Seed       int           // memories stored before the run (in-process server only)
	Embedder   string        // hash or glove (in-process server only)
	Home       string        // MNEMO_HOME holding the GloVe model
	Corpus     string        // dataset folder (corpus.jsonl, queries.jsonl) for real text; "" for synthetic
}

// opStats collects one operation's latencies.
type opStats struct {
	Count  int     `json:"count"`
	Errors int     `json:"errors"`
	P50MS  float64 `json:"p50_ms"`
	P90MS  float64 `json:"p90_ms"`
	P99MS  float64 `json:"p99_ms"`
	MaxMS  float64 `json:"max_ms"`
	lat    []time.Duration
}

// report is a run's outcome.
type report struct {
	Clients    int                 `json:"clients"`
	Seconds    float64             `json:"seconds"`
	Requests   int                 `json:"requests"`
	Errors     int                 `json:"errors"`
	Throughput float64             `json:"requests_per_second"`
	All        *opStats            `json:"all"`
	Ops        map[string]*opStats `json:"ops"`
	Memories   int                 `json:"memories_at_end"`
	FirstError string              `json:"first_error,omitempty"`
	Embedder   string              `json:"embedder"`
	Target     string              `json:"target"`
	Text       string              `json:"text"`
}

func main() {
	var cfg config
	flag.StringVar(&cfg.URL, "url", "", "base URL of a running mnemo serve on loopback (default: start one in process)")
	flag.StringVar(&cfg.Key, "key", os.Getenv("MNEMO_KEY"), "API key for --url (default $MNEMO_KEY)")
	flag.IntVar(&cfg.Clients, "clients", 50, "concurrent clients")
	flag.DurationVar(&cfg.Duration, "duration", 30*time.Second, "how long to send requests")
	flag.Float64Var(&cfg.WriteRatio, "write-ratio", 0.3, "share of requests that store a memory")
	flag.Float64Var(&cfg.SearchRate, "search-ratio", 0.2, "share of reads that are GET /v1/search/lexical instead of recall")
	flag.IntVar(&cfg.Seed, "seed", 2000, "memories stored before the run (in-process server)")
	flag.StringVar(&cfg.Embedder, "embedder", "hash", "embedder of the in-process server: hash or glove")
	flag.StringVar(&cfg.Home, "home", defaultHome(), "mnemo home holding the GloVe model (default $MNEMO_HOME, else ~/.local/share/mnemo)")
	flag.StringVar(&cfg.Corpus, "corpus", "", "dataset folder with corpus.jsonl and queries.jsonl (e.g. ../shared/datasets/locomo-dev): real text for memories and recalls instead of synthetic text; the whole corpus is seeded")
	asJSON := flag.Bool("json", false, "print the report as JSON")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the run (client and in-process server) to this file")
	flag.Parse()
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := run(ctx, cfg, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.Encode(rep)
	} else {
		printReport(os.Stdout, rep)
	}
	if rep.Errors > 0 {
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func defaultHome() string {
	if h := os.Getenv("MNEMO_HOME"); h != "" {
		return h
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "mnemo")
	}
	u, _ := os.UserHomeDir()
	return filepath.Join(u, ".local", "share", "mnemo")
}

// run executes one load run; progress goes to log.
func run(ctx context.Context, cfg config, log io.Writer) (*report, error) {
	if cfg.Clients < 1 || cfg.Duration <= 0 || cfg.WriteRatio < 0 || cfg.WriteRatio > 1 {
		return nil, errors.New("want --clients ≥ 1, --duration > 0 and --write-ratio in [0, 1]")
	}
	rep := &report{Clients: cfg.Clients, Embedder: cfg.Embedder, Ops: map[string]*opStats{}, Text: "synthetic (Zipf)"}
	var text textSource = synthetic{}
	if cfg.Corpus != "" {
		c, err := loadCorpus(cfg.Corpus)
		if err != nil {
			return nil, err
		}
		text, rep.Text = c, fmt.Sprintf("%s (%d memories, %d queries)", cfg.Corpus, len(c.docs), len(c.queries))
		cfg.Seed = len(c.docs)
	}
	base, key := cfg.URL, cfg.Key
	var e *mnemo.Engine
	if base == "" {
		var stop func()
		var err error
		e, base, key, stop, err = startServer(cfg, text, log)
		if err != nil {
			return nil, err
		}
		defer stop()
	} else {
		u, err := url.Parse(base)
		if err != nil {
			return nil, fmt.Errorf("--url %q: %w", base, err)
		}
		host := u.Hostname()
		if ip := net.ParseIP(host); !(host == "localhost" || (ip != nil && ip.IsLoopback())) {
			return nil, fmt.Errorf("--url %s: load only a server on this machine's loopback", base)
		}
		rep.Embedder = "(server's)"
	}
	rep.Target = base
	tr := &http.Transport{MaxIdleConns: cfg.Clients * 2, MaxIdleConnsPerHost: cfg.Clients * 2, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}

	fmt.Fprintf(log, "load: %d clients for %v against %s\n", cfg.Clients, cfg.Duration, base)
	var (
		mu       sync.Mutex
		firstErr string
		wg       sync.WaitGroup
		sent     atomic.Int64
	)
	stats := make([]map[string]*opStats, cfg.Clients)
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()
	start := time.Now()
	for c := range cfg.Clients {
		stats[c] = map[string]*opStats{}
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c)+1, 42))
			gen := text.generator(rng)
			for runCtx.Err() == nil {
				op, method, path, body := nextRequest(rng, gen, cfg, c)
				t0 := time.Now()
				err := send(client, method, base+path, key, body)
				d := time.Since(t0)
				if runCtx.Err() != nil && err != nil && errors.Is(err, context.DeadlineExceeded) {
					break // cut by the end of the run, not a failure
				}
				s := stats[c][op]
				if s == nil {
					s = &opStats{}
					stats[c][op] = s
				}
				s.Count++
				s.lat = append(s.lat, d)
				sent.Add(1)
				if err != nil {
					s.Errors++
					mu.Lock()
					if firstErr == "" {
						firstErr = fmt.Sprintf("%s %s: %v", method, path, err)
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	rep.Seconds = time.Since(start).Seconds()
	all := &opStats{}
	for _, per := range stats {
		for op, s := range per {
			agg := rep.Ops[op]
			if agg == nil {
				agg = &opStats{}
				rep.Ops[op] = agg
			}
			agg.Count += s.Count
			agg.Errors += s.Errors
			agg.lat = append(agg.lat, s.lat...)
			all.Count += s.Count
			all.Errors += s.Errors
			all.lat = append(all.lat, s.lat...)
		}
	}
	for _, s := range rep.Ops {
		s.summarize()
	}
	all.summarize()
	rep.All, rep.Requests, rep.Errors, rep.FirstError = all, all.Count, all.Errors, firstErr
	rep.Throughput = float64(all.Count) / rep.Seconds
	if e != nil {
		rep.Memories, _ = e.Count(context.Background(), "load")
	}
	return rep, nil
}

func (s *opStats) summarize() {
	if len(s.lat) == 0 {
		return
	}
	slices.Sort(s.lat)
	q := func(p float64) float64 {
		i := int(p*float64(len(s.lat))+0.5) - 1
		i = min(max(i, 0), len(s.lat)-1)
		return float64(s.lat[i].Microseconds()) / 1000
	}
	s.P50MS, s.P90MS, s.P99MS = q(0.50), q(0.90), q(0.99)
	s.MaxMS = float64(s.lat[len(s.lat)-1].Microseconds()) / 1000
	s.lat = nil
}

// startServer opens a fresh engine, creates an API key, stores cfg.Seed
// memories and serves the API on 127.0.0.1.
func startServer(cfg config, text textSource, log io.Writer) (*mnemo.Engine, string, string, func(), error) {
	dir, err := os.MkdirTemp("", "mnemo-load-*")
	if err != nil {
		return nil, "", "", nil, err
	}
	var emb embed.Embedder
	switch cfg.Embedder {
	case "hash":
		emb = embed.NewHash(embed.DefaultHashDim)
	case "glove":
		m, err := glove.Load(glove.DefaultPath(cfg.Home))
		if err != nil {
			os.RemoveAll(dir)
			return nil, "", "", nil, fmt.Errorf("load GloVe (run mnemo models pull): %w", err)
		}
		emb = m
	default:
		os.RemoveAll(dir)
		return nil, "", "", nil, fmt.Errorf("--embedder %q: want hash or glove", cfg.Embedder)
	}
	e, err := mnemo.Open(filepath.Join(dir, "mnemo.db"), &mnemo.Config{Embedder: emb,
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", "", nil, err
	}
	cleanup := func() { e.Close(); os.RemoveAll(dir) }
	key, _, err := e.CreateKey(context.Background(), "load", "load test")
	if err != nil {
		cleanup()
		return nil, "", "", nil, err
	}
	rng := rand.New(rand.NewPCG(7, 7))
	gen := text.generator(rng)
	for done := 0; done < cfg.Seed; {
		n := min(500, cfg.Seed-done)
		ins := make([]mnemo.Input, n)
		for i := range ins {
			ins[i] = mnemo.Input{Profile: "load", Content: gen.seed(done + i), Session: fmt.Sprintf("s%d", rng.IntN(20))}
		}
		if _, err := e.RememberBatch(context.Background(), ins); err != nil {
			cleanup()
			return nil, "", "", nil, fmt.Errorf("seed memories: %w", err)
		}
		done += n
	}
	api, err := httpapi.New(httpapi.Config{Engine: e, RequireKeys: true})
	if err != nil {
		cleanup()
		return nil, "", "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cleanup()
		return nil, "", "", nil, err
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 40 * time.Second, IdleTimeout: 2 * time.Minute}
	go srv.Serve(ln)
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		api.Drain()
		srv.Shutdown(ctx)
		cleanup()
	}
	fmt.Fprintf(log, "load: in-process server on %s, %d memories seeded, embedder %s\n", ln.Addr(), cfg.Seed, emb.Model())
	return e, "http://" + ln.Addr().String(), key, stop, nil
}

// The generator's text: a vocabulary of domain words followed by a few
// thousand pseudo-words, drawn with a Zipf law as natural text is, so that
// common words match many memories and rare ones few.
var vocabulary = func() []string {
	v := strings.Fields(`deploy auth token database staging cluster release payment service
		user login session bug fix review meeting friday weekly report migration schema index query
		cache latency memory agent prompt project threadline version upgrade rollback incident alert
		customer invoice email backup restore server network config secret key rotate test build
		pipeline docker kubernetes node disk cpu quota budget plan roadmap design decision note`)
	syl := []string{"ka", "lo", "mi", "ne", "ru", "sa", "te", "vo", "zi", "bra", "cor", "dex", "fen", "gal", "hux", "jor"}
	for _, a := range syl {
		for _, b := range syl {
			for _, c := range syl[:12] {
				v = append(v, a+b+c)
			}
		}
	}
	return v
}()

// textSource makes the text of memories and queries.
type textSource interface {
	generator(rng *rand.Rand) generator
}

// generator is one goroutine's text maker.
type generator interface {
	seed(i int) string // the i-th memory stored before the run
	doc() string       // a memory to write
	query() string     // a recall query
}

// synthetic draws words from vocabulary with a Zipf law (rank r with
// probability ∝ 1/(r+1)^1.1).
type synthetic struct{}

type zipfGen struct {
	rng *rand.Rand
	z   *rand.Zipf
}

func (synthetic) generator(rng *rand.Rand) generator {
	return zipfGen{rng, rand.NewZipf(rng, 1.1, 1, uint64(len(vocabulary)-1))}
}

func (g zipfGen) words(n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = vocabulary[g.z.Uint64()]
	}
	return strings.Join(w, " ")
}

func (g zipfGen) seed(int) string { return g.doc() }
func (g zipfGen) doc() string     { return g.words(8 + g.rng.IntN(16)) }
func (g zipfGen) query() string   { return g.words(1 + g.rng.IntN(4)) }

// corpus is a dataset's real text: its documents are seeded and written
// again, its queries recalled.
type corpus struct{ docs, queries []string }

func loadCorpus(dir string) (*corpus, error) {
	read := func(name string) ([]string, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, fmt.Errorf("--corpus: %w", err)
		}
		var out []string
		for i, line := range bytes.Split(b, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var rec struct{ Text, Title string }
			if err := json.Unmarshal(line, &rec); err != nil {
				return nil, fmt.Errorf("--corpus: %s line %d: %w", name, i+1, err)
			}
			if t := strings.TrimSpace(strings.TrimSpace(rec.Title + " " + rec.Text)); t != "" {
				out = append(out, t)
			}
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("--corpus: %s has no text", name)
		}
		return out, nil
	}
	docs, err := read("corpus.jsonl")
	if err != nil {
		return nil, err
	}
	queries, err := read("queries.jsonl")
	if err != nil {
		return nil, err
	}
	return &corpus{docs: docs, queries: queries}, nil
}

type corpusGen struct {
	c   *corpus
	rng *rand.Rand
}

func (c *corpus) generator(rng *rand.Rand) generator { return corpusGen{c, rng} }
func (g corpusGen) seed(i int) string                { return g.c.docs[i%len(g.c.docs)] }
func (g corpusGen) doc() string                      { return g.c.docs[g.rng.IntN(len(g.c.docs))] }
func (g corpusGen) query() string                    { return g.c.queries[g.rng.IntN(len(g.c.queries))] }

// nextRequest draws one request: a write, a recall or a lexical search.
func nextRequest(rng *rand.Rand, gen generator, cfg config, client int) (op, method, path string, body []byte) {
	session := fmt.Sprintf("s%d", rng.IntN(20))
	switch r := rng.Float64(); {
	case r < cfg.WriteRatio:
		b, _ := json.Marshal(map[string]any{"content": gen.doc(), "session": session,
			"importance": float64(rng.IntN(11)) / 10, "metadata": map[string]any{"client": client}})
		return "write", "POST", "/v1/memories", b
	case r < cfg.WriteRatio+(1-cfg.WriteRatio)*cfg.SearchRate:
		q := url.Values{"q": {gen.query()}, "limit": {"10"}}
		if rng.IntN(2) == 0 {
			q.Set("sessions", session+",s"+fmt.Sprint(rng.IntN(20)))
		}
		return "search_lexical", "GET", "/v1/search/lexical?" + q.Encode(), nil
	default:
		req := map[string]any{"query": gen.query(), "limit": 10}
		if rng.IntN(4) == 0 {
			req["sessions"] = []string{session}
		}
		b, _ := json.Marshal(req)
		return "recall", "POST", "/v1/recall", b
	}
}

// send performs one request; any transport error or non-2xx status is an
// error.
func send(c *http.Client, method, u, key string, body []byte) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("status %d: %s", res.StatusCode, bytes.TrimSpace(b))
	}
	return nil
}

func printReport(w io.Writer, r *report) {
	fmt.Fprintf(w, "target %s, embedder %s, text %s, %d clients, %.1f s\n", r.Target, r.Embedder, r.Text, r.Clients, r.Seconds)
	fmt.Fprintf(w, "requests %d, errors %d, throughput %.0f req/s\n", r.Requests, r.Errors, r.Throughput)
	fmt.Fprintf(w, "%-16s %8s %7s %9s %9s %9s %9s\n", "op", "count", "errors", "p50 ms", "p90 ms", "p99 ms", "max ms")
	ops := make([]string, 0, len(r.Ops))
	for op := range r.Ops {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	line := func(name string, s *opStats) {
		fmt.Fprintf(w, "%-16s %8d %7d %9.2f %9.2f %9.2f %9.2f\n", name, s.Count, s.Errors, s.P50MS, s.P90MS, s.P99MS, s.MaxMS)
	}
	for _, op := range ops {
		line(op, r.Ops[op])
	}
	line("all", r.All)
	if r.Memories > 0 {
		fmt.Fprintf(w, "memories at the end: %d\n", r.Memories)
	}
	if r.FirstError != "" {
		fmt.Fprintf(w, "first error: %s\n", r.FirstError)
	}
}
