package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mnemo-dev/mnemo/embed/cache"
	"github.com/mnemo-dev/mnemo/eval"
	"github.com/mnemo-dev/mnemo/store/postgres"
)

// repeatFlag collects a repeatable flag whose values are kept whole (a
// config SPEC contains commas).
type repeatFlag []string

func (r *repeatFlag) String() string { return strings.Join(*r, " ") }
func (r *repeatFlag) Set(s string) error {
	*r = append(*r, s)
	return nil
}

const evalUsage = `usage: mnemo eval DATASET_DIR [flags]

Measures recall quality on a dataset folder: corpus.jsonl (or .jsonl.gz),
queries.jsonl and qrels.tsv. The corpus is stored in a throwaway store, every
judged query runs under each configuration, and recall@K, nDCG@10 and MRR@10
are reported overall and per category, with each configuration's paired
bootstrap 95%% interval and randomization-test p-value against the baseline.

configurations (--config, repeatable):
  NAME           a preset: %s
  NAME=SPEC      your own: comma-separated key=value on top of the defaults, e.g.
                 mine=strategy=rrf,lexical=1,dense=0.5,k=60; a preset name in
                 SPEC starts from that preset (mine=cc,dense=0.5)
  keys: lexical dense recency access (weights), k (rrf_k), kparam, normalization,
        missing (missing_leg), strategy, or any settings key
  default set: %s

examples:
  mnemo eval ../shared/datasets/locomo-dev --exclude-category adversarial --report r.md --chart r.svg
  mnemo eval ../shared/datasets/scifact --config lexical --config rrf --sweep dense=0.25,0.5,1,2

flags:
`

func cmdEval(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "eval")
	var configs, sweeps, excludes repeatFlag
	fs.Var(&configs, "config", "configuration NAME or NAME=SPEC (repeatable; default: "+strings.Join(eval.DefaultConfigNames, ", ")+")")
	fs.Var(&sweeps, "sweep", "sweep a setting, e.g. k=10,20,40,60,100 or dense=0.25,0.5,1,2 (repeatable); applies to the --config configurations but the baseline (default: the default config)")
	fs.Var(&excludes, "exclude-category", "also report overall figures without this query category (repeatable, e.g. adversarial)")
	embedder := fs.String("embedder", "", "embedder: "+strings.Join(embedderNames, ", ")+" (default $MNEMO_EMBEDDER, else "+defaultEmbedder+")")
	baseline := fs.String("baseline", eval.DefaultBaseline, "configuration the others are compared with")
	ks := fs.String("k", "5,10", "recall cutoffs, comma-separated, each at most --limit")
	contextTurns := fs.Int("context-turns", 0, "previous turns of its session indexed with each memory (0: the default of a new database, -1: none)")
	embedActor := fs.Bool("embed-actor", false, "embed \"actor: content\" instead of the content alone")
	captions := fs.Bool("captions", false, "append each document's image_caption to its content")
	embedContext := fs.Bool("embed-context", false, "embed each document with the previous turn of its session")
	annMin := fs.Int("ann-min", 0, "give profiles of at least N embedded memories an HNSW graph, built before the queries, and walk it for scopes of N or more (default: the engine's, 20000)")
	lexicalInStore := fs.Bool("lexical-in-store", false, "rank the lexical leg in the store (FTS5, or Postgres) instead of the in-process full-text index")
	limit := fs.Int("limit", eval.DefaultLimit, "memories every query recalls, whatever the cutoffs (at least 10; figures at one limit are not comparable with another's)")
	scopeField := fs.String("scope-field", "", "query and corpus field scoping each query (default: conversation when the queries have it; none: no scoping)")
	jsonOut := fs.String("json", "", "write the results as JSON to this file")
	reportOut := fs.String("report", "", "write a Markdown report to this file")
	chartOut := fs.String("chart", "", "write an SVG chart to this file")
	runsOut := fs.String("runs", "", "write every configuration's ranked results to this file (TREC run format)")
	limitQueries := fs.Int("limit-queries", 0, "evaluate only the first N judged queries (0: all)")
	noAnswer := fs.Int("no-answer", 0, "also ask N queries that have no relevant memory in scope (a quarter made-up words, the rest questions asked of another conversation) and report the share answered with nothing")
	seed := fs.Uint64("seed", eval.DefaultSeed, "seed of the bootstrap and randomization test")
	resamples := fs.Int("resamples", eval.DefaultResamples, "bootstrap resamples and randomization permutations")
	workers := fs.Int("workers", 0, "queries run concurrently (default: GOMAXPROCS)")
	ties := fs.String("ties", "average", "tied scores: average (mean over their orders) or engine (the engine's order)")
	pgURL := fs.String("postgres", "", "run on this PostgreSQL database (a postgres:// URL), in throwaway schemas, instead of a SQLite file")
	noCache := fs.Bool("no-cache", false, "do not use the on-disk embedding cache of remote embedders ($MNEMO_HOME/cache/embeddings.db)")
	fs.Usage = func() {
		fmt.Fprintf(a.stderr, evalUsage, strings.Join(eval.PresetNames(), ", "), strings.Join(eval.DefaultConfigNames, ", "))
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("usage: mnemo eval DATASET_DIR [flags] (see mnemo eval -h)")
	}
	opts := eval.Options{Baseline: *baseline, Limit: *limit, LimitQueries: *limitQueries, NoAnswer: *noAnswer, Seed: *seed, Resamples: *resamples, Workers: *workers,
		Ingest: eval.IngestOptions{ContextTurns: *contextTurns, EmbedActor: *embedActor, Captions: *captions, EmbedContext: *embedContext,
			ANNMin: *annMin, LexicalInStore: *lexicalInStore},
		Postgres: *pgURL}
	if *pgURL != "" && !postgres.IsDSN(*pgURL) {
		return usagef("--postgres %q: want a postgres:// URL", *pgURL)
	}
	if *seed == 0 {
		return usagef("--seed must be > 0")
	}
	if *resamples < 1 {
		return usagef("--resamples must be ≥ 1")
	}
	if *limitQueries < 0 {
		return usagef("--limit-queries must be ≥ 0")
	}
	if *noAnswer < 0 {
		return usagef("--no-answer must be ≥ 0")
	}
	if *annMin < 0 {
		return usagef("--ann-min must be ≥ 0")
	}
	switch *ties {
	case "average":
	case "engine":
		opts.EngineOrder = true
	default:
		return usagef("--ties %q: must be average or engine", *ties)
	}
	for _, s := range strings.Split(*ks, ",") {
		k, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || k < 1 {
			return usagef("--k %q: want positive integers separated by commas", *ks)
		}
		opts.Ks = append(opts.Ks, k)
	}
	var explicit []string
	for _, c := range configs {
		cs, err := eval.ParseConfig(c)
		if err != nil {
			return err
		}
		for _, x := range cs {
			explicit = append(explicit, x.Name)
		}
		opts.Configs = append(opts.Configs, cs...)
	}
	for _, s := range sweeps {
		sw, err := eval.ParseSweep(s)
		if err != nil {
			return err
		}
		opts.Sweeps = append(opts.Sweeps, sw)
	}
	if len(opts.Sweeps) > 0 {
		for _, n := range explicit {
			if n != *baseline {
				opts.SweepBases = append(opts.SweepBases, n)
			}
		}
		if len(explicit) == 0 {
			opts.SweepBases = []string{"default"}
		}
		if len(opts.SweepBases) == 0 {
			return usagef("--sweep: give a --config other than the baseline %q to sweep over", *baseline)
		}
	}
	for _, e := range excludes {
		for c := range strings.SplitSeq(e, ",") {
			if c = strings.TrimSpace(c); c != "" {
				opts.ExcludeCategories = append(opts.ExcludeCategories, c)
			}
		}
	}
	lo := eval.LoadOptions{ScopeField: *scopeField}
	if strings.EqualFold(*scopeField, "none") {
		lo = eval.LoadOptions{NoScope: true}
	}
	ds, err := eval.Load(pos[0], lo)
	if err != nil {
		return usageError{err}
	}

	// Remote embedders come wrapped in the on-disk embedding cache, so a
	// rerun does not pay for the corpus again; the built-in ones are
	// faster than the cache would be.
	emb, err := a.openEmbedderCache(a.embedderName(*embedder), !*noCache)
	if err != nil {
		return err
	}
	cached, _ := emb.(*cache.Cache)
	opts.Embedder = emb
	bar := newEvalProgress(a.stderr)
	opts.Progress = bar.update
	rep, err := eval.Run(ctx, ds, opts)
	bar.done()
	if err != nil {
		return err
	}

	if err := rep.WriteText(a.stdout); err != nil {
		return err
	}
	in := rep.Info
	fmt.Fprintf(a.stdout, "\n%d distinct settings; ingest %.1fs, queries %.1fs, total %.1fs", in.Runs,
		in.IngestTime.Seconds(), in.QueryTime.Seconds(), in.Elapsed.Seconds())
	if cached != nil {
		st := cached.Stats()
		fmt.Fprintf(a.stdout, "; embedding cache: %d hits, %d embedded", st.Hits, st.Misses)
	}
	fmt.Fprintln(a.stdout)
	for _, note := range in.AccessOrdered {
		fmt.Fprintf(a.stderr, "note: config %q weights the access leg, which counts the accesses of earlier queries: its queries ran in file order on a fresh store\n", note)
	}
	write := func(path string, fn func(io.Writer) error) error {
		if path == "" {
			return nil
		}
		if err := writeFileAtomic(path, fn); err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "wrote %s\n", path)
		return nil
	}
	chartRef := ""
	if *chartOut != "" && *reportOut != "" {
		if rel, err := filepath.Rel(filepath.Dir(*reportOut), *chartOut); err == nil {
			chartRef = filepath.ToSlash(rel)
		}
	}
	return errors.Join(
		write(*jsonOut, rep.WriteJSON),
		write(*reportOut, func(w io.Writer) error { return rep.WriteMarkdown(w, chartRef) }),
		write(*chartOut, rep.WriteSVG),
		write(*runsOut, rep.WriteRuns),
	)
}

// writeFileAtomic writes path through a temporary file in the same folder.
func writeFileAtomic(path string, fn func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	if err := fn(f); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// evalProgress draws one progress line per stage on a terminal; elsewhere
// it is silent.
type evalProgress struct {
	w     io.Writer
	tty   bool
	stage string
	start time.Time
	last  time.Time
	drawn bool
}

func newEvalProgress(w io.Writer) *evalProgress {
	p := &evalProgress{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.tty = true
		}
	}
	return p
}

func (p *evalProgress) update(pr eval.Progress) {
	if !p.tty {
		return
	}
	if pr.Stage != p.stage {
		p.done()
		p.stage, p.start = pr.Stage, time.Now()
	} else if time.Since(p.last) < 100*time.Millisecond && pr.Done < pr.Total {
		return
	}
	p.last = time.Now()
	frac := 0.0
	if pr.Total > 0 {
		frac = min(float64(pr.Done)/float64(pr.Total), 1)
	}
	bar := strings.Repeat("█", int(frac*30)) + strings.Repeat("░", 30-int(frac*30))
	rate := float64(pr.Done) / max(time.Since(p.start).Seconds(), 1e-3)
	fmt.Fprintf(p.w, "\r\033[K%-20s %s %3.0f%%  %d/%d  %.0f/s", pr.Stage, bar, frac*100, pr.Done, pr.Total, rate)
	p.drawn = true
}

func (p *evalProgress) done() {
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}
