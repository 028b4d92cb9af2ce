package eval

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/store/postgres"
	"github.com/mnemo-dev/mnemo/store/sqlitestore"
)

// Defaults of Options.
const (
	// DefaultBaseline is the configuration every other one is compared with.
	DefaultBaseline = "lexical"
	// DefaultSeed seeds the bootstrap and the randomization test.
	DefaultSeed = 1
	// Profile is the profile the evaluation store holds its memories in.
	Profile = "eval"
	// ingestBatch is the number of memories embedded and stored per batch.
	ingestBatch = 1000
)

// DefaultKs are the recall cutoffs reported by default.
var DefaultKs = []int{5, 10}

// DefaultLimit is the recall limit of every query when Options.Limit is 0:
// the engine's own default, what an agent asking for its top memories gets.
const DefaultLimit = mnemo.DefaultLimit

// Options configure Run. The zero value plus an Embedder is ready to use.
type Options struct {
	// Embedder embeds the corpus and the queries; required. Wrap a remote
	// embedder in the on-disk cache of package embed/cache to make reruns
	// cheap.
	Embedder embed.Embedder
	// Configs are the configurations to evaluate, in report order. Defaults
	// to the presets named by DefaultConfigNames.
	Configs []Config
	// Baseline names the configuration the others are compared with. When
	// it is a preset missing from Configs, it is evaluated too (listed
	// first). Defaults to DefaultBaseline.
	Baseline string
	// Limit is the number of memories every query asks for, the same for
	// every configuration whatever cutoffs are reported: a recall's results
	// depend on its limit (each leg fetches limit × fetch_multiplier, and the
	// lexical leg broadens AND to OR when AND finds fewer than limit), so
	// the figures at one cutoff must not move with the other cutoffs asked
	// for. Defaults to DefaultLimit; at least MetricsK.
	Limit int
	// Ks are the recall cutoffs, each at most Limit. Defaults to DefaultKs.
	Ks []int
	// Ingest chooses how the corpus is stored (what is indexed and
	// embedded); every configuration runs on the same store.
	Ingest IngestOptions
	// ExcludeCategories are left out of the "overall excluding" figures and
	// comparisons (e.g. LoCoMo's adversarial questions, which ask about
	// things that never happened).
	ExcludeCategories []string
	// Sweeps vary one setting each over values, on top of every
	// configuration named in SweepBases.
	Sweeps []Sweep
	// SweepBases name the configurations the sweeps apply to. Defaults to
	// every configuration but the baseline.
	SweepBases []string
	// Resamples is the number of bootstrap resamples and of randomization
	// permutations. Defaults to DefaultResamples.
	Resamples int
	// Seed seeds the resampling; results are reproducible for a seed.
	// Defaults to DefaultSeed.
	Seed uint64
	// LimitQueries, when > 0, evaluates only the first LimitQueries judged
	// queries (in file order).
	LimitQueries int
	// NoAnswer, when > 0, also asks every configuration NoAnswer queries
	// that have no relevant memory in scope (NoAnswerQueries with Seed) and
	// reports the share it answers with nothing (ConfigResult.NoAnswer):
	// what a relevance floor is for.
	NoAnswer int
	// Workers is the number of queries run concurrently. Defaults to
	// GOMAXPROCS.
	Workers int
	// TempDir is where the throwaway store is created (and removed).
	// Defaults to os.TempDir().
	TempDir string
	// Postgres, when set, is the URL of a PostgreSQL database the
	// throwaway stores are created in instead, each in a schema of its own
	// (dropped at the end).
	Postgres string
	// EngineOrder scores runs exactly in the order the engine returns them.
	// By default, hits with equal scores count as one tied group whose
	// metrics are averaged over its orders (so the engine's tie-break on id
	// neither helps nor hurts a configuration).
	EngineOrder bool
	// Progress, when set, is called as work advances (from one goroutine at
	// a time).
	Progress func(p Progress)
}

// Progress reports how far a stage is.
type Progress struct {
	// Stage is "embed", "ingest", or the name of the configuration whose
	// queries run.
	Stage       string
	Done, Total int
}

func (o Options) withDefaults() (Options, error) {
	if o.Embedder == nil {
		return o, errors.New("eval: Options.Embedder is required")
	}
	if len(o.Configs) == 0 {
		for _, n := range DefaultConfigNames {
			c, _ := Preset(n)
			o.Configs = append(o.Configs, c)
		}
	}
	if o.Baseline == "" {
		o.Baseline = DefaultBaseline
	}
	if len(o.Ks) == 0 {
		o.Ks = DefaultKs
	}
	if o.Limit == 0 {
		o.Limit = DefaultLimit
	}
	if o.Limit < MetricsK || o.Limit > mnemo.MaxLimit {
		return o, invalidf("limit = %d: must be in [%d, %d]", o.Limit, MetricsK, mnemo.MaxLimit)
	}
	for _, k := range o.Ks {
		if k < 1 || k > o.Limit {
			return o, invalidf("k = %d: must be in [1, %d], the recall limit (a cutoff beyond it needs a run with a larger limit, whose figures at every cutoff may differ)", k, o.Limit)
		}
	}
	if o.Resamples == 0 {
		o.Resamples = DefaultResamples
	}
	if o.Resamples < 0 {
		return o, invalidf("resamples = %d: must be ≥ 1", o.Resamples)
	}
	if o.Seed == 0 {
		o.Seed = DefaultSeed
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.NoAnswer < 0 {
		return o, invalidf("no-answer = %d: must be ≥ 0", o.NoAnswer)
	}
	if o.LimitQueries < 0 {
		return o, invalidf("limit-queries = %d: must be ≥ 0", o.LimitQueries)
	}
	seen := map[string]bool{}
	for _, c := range o.Configs {
		if seen[c.Name] {
			return o, invalidf("config %q is given twice", c.Name)
		}
		seen[c.Name] = true
		if err := c.Validate(); err != nil {
			return o, err
		}
	}
	if !seen[o.Baseline] {
		b, ok := Preset(o.Baseline)
		if !ok {
			return o, invalidf("baseline %q: not among the configs (%s) nor a preset", o.Baseline, strings.Join(configNames(o.Configs), ", "))
		}
		o.Configs = append([]Config{b}, o.Configs...)
	}
	if len(o.Sweeps) > 0 {
		if len(o.SweepBases) == 0 {
			for _, c := range o.Configs {
				if c.Name != o.Baseline {
					o.SweepBases = append(o.SweepBases, c.Name)
				}
			}
		}
		for _, b := range o.SweepBases {
			if !slices.Contains(configNames(o.Configs), b) {
				return o, invalidf("sweep base %q is not among the configs", b)
			}
		}
	}
	return o, nil
}

func configNames(cs []Config) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

// limit is the number of memories each query asks for.
func (o Options) limit() int { return o.Limit }

// run is one distinct set of effective settings and its per-query results.
type run struct {
	cfg    Config
	hits   [][]Hit              // per query
	noAns  [][]Hit              // per no-answer query
	values map[string][]float64 // metric → per-query value
}

// Run evaluates opts.Configs (and opts.Sweeps) on ds: it ingests the corpus
// into a throwaway store in a temporary directory, runs every judged query
// under each configuration, and computes the metrics, their confidence
// intervals and the paired comparisons with the baseline. Configurations
// that resolve to the same settings are run once. It returns an ErrInvalid
// error for invalid options or configurations (naming the configuration).
func Run(ctx context.Context, ds *Dataset, opts Options) (*Report, error) {
	start := time.Now()
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	queries := judged(ds, o)
	if len(queries) == 0 {
		return nil, invalidf("dataset %s has no judged queries", ds.Name)
	}
	if len(ds.Docs) == 0 {
		return nil, invalidf("dataset %s has an empty corpus", ds.Name)
	}

	// Every configuration and sweep point, each distinct setting run once.
	var runs []*run
	byKey := map[string]*run{}
	need := func(c Config) *run {
		k := c.settingsKey()
		if r, ok := byKey[k]; ok {
			return r
		}
		r := &run{cfg: c}
		byKey[k] = r
		runs = append(runs, r)
		return r
	}
	cfgRuns := make([]*run, len(o.Configs))
	for i, c := range o.Configs {
		cfgRuns[i] = need(c)
	}
	var points []sweepPoint
	for si, sw := range o.Sweeps {
		for bi, bn := range o.SweepBases {
			base := o.Configs[slices.Index(configNames(o.Configs), bn)]
			for vi, v := range sw.Values {
				c := base.with(fmt.Sprintf("%s[%s=%s]", bn, sw.Key, v), sw.Key, v)
				if err := c.Validate(); err != nil {
					return nil, err
				}
				points = append(points, sweepPoint{si, bi, vi, need(c)})
			}
		}
	}

	tmp, err := os.MkdirTemp(o.TempDir, "mnemo-eval-")
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	defer os.RemoveAll(tmp)
	where := o.place(tmp, "eval")
	defer where.drop(ctx)
	t0 := time.Now()
	if err := ingest(ctx, ds, where, o); err != nil {
		return nil, err
	}
	ingestTime := time.Since(t0)

	var noAnswer []Query
	if o.NoAnswer > 0 {
		noAnswer = NoAnswerQueries(ds, o.NoAnswer, o.Seed)
	}
	// Queries are embedded once, whatever the number of configurations.
	memo, err := warm(ctx, o.Embedder, append(slices.Clone(queries), noAnswer...))
	if err != nil {
		return nil, err
	}
	pristine := place{}
	for _, r := range runs {
		if r.cfg.accessWeighted() && where.dsn == "" {
			pristine = o.place(tmp, "pristine")
			if err := copyFile(where.path, pristine.path); err != nil {
				return nil, fmt.Errorf("eval: %w", err)
			}
			break
		}
	}
	eng, err := openEngine(where, memo, o.Ingest)
	if err != nil {
		return nil, err
	}
	defer eng.Close()

	t0 = time.Now()
	limit := o.limit()
	var accessNote []string
	for i, r := range runs {
		e, workers := eng, o.Workers
		if r.cfg.accessWeighted() {
			// Each recall counts an access of what it returns, which the
			// access leg reads: give the configuration its own copy of the
			// store and run its queries in file order, so the result does
			// not depend on other configurations nor on scheduling. A
			// Postgres schema is not copied but ingested again.
			own := o.place(tmp, "access-"+strconv.Itoa(i))
			if own.dsn == "" {
				if err := copyFile(pristine.path, own.path); err != nil {
					return nil, fmt.Errorf("eval: %w", err)
				}
			} else if err := ingest(ctx, ds, own, o); err != nil {
				return nil, err
			}
			defer own.drop(ctx)
			if e, err = openEngine(own, memo, o.Ingest); err != nil {
				return nil, err
			}
			workers = 1
			accessNote = append(accessNote, r.cfg.Name)
		}
		r.hits, err = recallAll(ctx, e, queries, r.cfg, limit, workers, o.Progress)
		if err == nil && len(noAnswer) > 0 {
			r.noAns, err = recallAll(ctx, e, noAnswer, r.cfg, limit, workers, nil)
		}
		if e != eng {
			err = errors.Join(err, e.Close())
		}
		if err != nil {
			return nil, err
		}
	}
	queryTime := time.Since(t0)

	rep, err := evaluate(ds, queries, o, cfgRuns, points)
	if err != nil {
		return nil, err
	}
	if len(noAnswer) > 0 {
		for i := range rep.Configs {
			rep.Configs[i].NoAnswer = noAnswerResult(noAnswer, cfgRuns[i].noAns, o, rep.Configs[i].Name)
		}
	}
	rep.Info.Embedder = o.Embedder.Model()
	rep.Info.Limit = limit
	rep.Info.AccessOrdered = accessNote
	rep.Info.Runs = len(runs)
	rep.Info.IngestTime, rep.Info.QueryTime = ingestTime, queryTime
	rep.Info.Elapsed = time.Since(start)
	return rep, nil
}

// sweepPoint is one value of one sweep over one base configuration.
type sweepPoint struct {
	sweep, base, value int
	r                  *run
}

// Evaluate scores ready-made runs instead of querying a store: runs maps a
// configuration name to each query's ranked hits by query id (a query
// missing from a run counts as retrieving nothing). opts.Configs, when set,
// orders the configurations and gives their specs; otherwise every run is
// reported, by name. opts.Embedder, Sweeps and Workers are ignored.
func Evaluate(ds *Dataset, runs map[string]map[string][]Hit, opts Options) (*Report, error) {
	if len(opts.Configs) == 0 {
		for _, name := range sortedNames(runs) {
			opts.Configs = append(opts.Configs, Config{Name: name})
		}
	}
	if opts.Baseline == "" {
		if _, ok := runs[DefaultBaseline]; !ok && len(opts.Configs) > 0 {
			opts.Baseline = opts.Configs[0].Name
		}
	}
	opts.Sweeps, opts.SweepBases = nil, nil
	opts.Embedder = noEmbedder{}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	queries := judged(ds, o)
	if len(queries) == 0 {
		return nil, invalidf("dataset %s has no judged queries", ds.Name)
	}
	cfgRuns := make([]*run, len(o.Configs))
	for i, c := range o.Configs {
		byQuery, ok := runs[c.Name]
		if !ok {
			return nil, invalidf("no run for config %q", c.Name)
		}
		r := &run{cfg: c, hits: make([][]Hit, len(queries))}
		for qi, q := range queries {
			r.hits[qi] = byQuery[q.ID]
		}
		cfgRuns[i] = r
	}
	rep, err := evaluate(ds, queries, o, cfgRuns, nil)
	if err != nil {
		return nil, err
	}
	rep.Info.Runs = len(cfgRuns)
	return rep, nil
}

// noEmbedder stands in for the embedder when Evaluate needs none.
type noEmbedder struct{}

func (noEmbedder) Model() string { return "" }
func (noEmbedder) Dim() int      { return 0 }
func (noEmbedder) Embed(context.Context, []string) ([][]float32, error) {
	return nil, errors.New("eval: no embedder")
}

// judged returns the judged queries Run evaluates (the first
// o.LimitQueries, when set).
func judged(ds *Dataset, o Options) []Query {
	qs := ds.Judged()
	if o.LimitQueries > 0 && o.LimitQueries < len(qs) {
		qs = qs[:o.LimitQueries]
	}
	return qs
}

// evaluate scores the runs' hits and builds the report: per configuration
// the overall, per-category and excluding figures with their intervals and
// comparisons with the baseline, then the sweeps.
func evaluate(ds *Dataset, queries []Query, o Options, cfgRuns []*run, points []sweepPoint) (*Report, error) {
	metrics := MetricNames(o.Ks)
	seen := map[*run]bool{}
	for _, r := range append(slices.Clone(cfgRuns), pointRuns(points)...) {
		if seen[r] {
			continue
		}
		seen[r] = true
		r.values = make(map[string][]float64, len(metrics))
		for _, m := range metrics {
			vs := make([]float64, len(queries))
			for qi, q := range queries {
				rel := make(map[string]bool, len(q.Relevant))
				for _, id := range q.Relevant {
					rel[id] = true
				}
				var err error
				if vs[qi], err = Score(m, r.hits[qi], rel, len(q.Relevant), !o.EngineOrder); err != nil {
					return nil, err
				}
			}
			r.values[m] = vs
		}
	}

	rep := &Report{
		Dataset: ds.Name,
		Queries: len(queries),
		Info: Info{
			Memories: len(ds.Docs), ScopeField: ds.ScopeField, Metrics: metrics,
			Baseline: o.Baseline, Resamples: o.Resamples, Seed: o.Seed, EngineOrder: o.EngineOrder, Limit: o.limit(),
			Unjudged: len(ds.Queries) - len(ds.Judged()), MissingRelevant: ds.MissingRelevant,
		},
	}
	rep.queryIDs = make([]string, len(queries))
	for i, q := range queries {
		rep.queryIDs[i] = q.ID
	}
	all := make([]int, len(queries))
	for i := range all {
		all[i] = i
	}
	var kept []int
	excluded := map[string]bool{}
	for _, c := range o.ExcludeCategories {
		excluded[c] = true
	}
	if len(excluded) > 0 {
		rep.ExcludeCategories = sortedNames(excluded)
		for i, q := range queries {
			if !excluded[q.Category] {
				kept = append(kept, i)
			}
		}
	}
	byCat := map[string][]int{}
	for i, q := range queries {
		cat := q.Category
		if cat == "" {
			cat = "uncategorized"
		}
		byCat[cat] = append(byCat[cat], i)
	}

	baseRun := cfgRuns[slices.Index(configNames(o.Configs), o.Baseline)]
	for i, c := range o.Configs {
		r := cfgRuns[i]
		cr := ConfigResult{
			Name: c.Name, Spec: c.Spec,
			Overall:      aggregate(r, metrics, all),
			ByCategory:   map[string]Metrics{},
			CI:           meanCIs(r, metrics, all, o, "ci", c.Name),
			CIByCategory: map[string]map[string]Interval{},
			hits:         r.hits,
		}
		for cat, idx := range byCat {
			cr.ByCategory[cat] = aggregate(r, metrics, idx)
			cr.CIByCategory[cat] = meanCIs(r, metrics, idx, o, "ci-category", cat, c.Name)
		}
		if len(excluded) > 0 {
			m := aggregate(r, metrics, kept)
			cr.OverallExcluding = &m
			cr.CIExcluding = meanCIs(r, metrics, kept, o, "ci-excluding", c.Name)
		}
		rep.Configs = append(rep.Configs, cr)
		if c.Name == o.Baseline {
			continue
		}
		rep.Comparisons = append(rep.Comparisons, compare(r, baseRun, c.Name, o.Baseline, metrics, all, o, "all")...)
		if len(excluded) > 0 {
			rep.ComparisonsExcluding = append(rep.ComparisonsExcluding, compare(r, baseRun, c.Name, o.Baseline, metrics, kept, o, "excluding")...)
		}
	}

	for si, sw := range o.Sweeps {
		sr := SweepResult{Key: sw.Key, Setting: SettingKey(sw.Key), Values: sw.Values}
		for bi, bn := range o.SweepBases {
			ss := SweepSeries{Config: bn}
			for _, p := range points {
				if p.sweep != si || p.base != bi {
					continue
				}
				name := fmt.Sprintf("%s[%s=%s]", bn, sw.Key, sw.Values[p.value])
				sp := SweepPoint{
					Value:       sw.Values[p.value],
					Overall:     aggregate(p.r, metrics, all),
					CI:          meanCIs(p.r, metrics, all, o, "ci", name),
					Comparisons: compare(p.r, baseRun, name, o.Baseline, metrics, all, o, "all"),
				}
				if len(excluded) > 0 {
					m := aggregate(p.r, metrics, kept)
					sp.OverallExcluding = &m
				}
				ss.Points = append(ss.Points, sp)
			}
			sr.Series = append(sr.Series, ss)
		}
		rep.Sweeps = append(rep.Sweeps, sr)
	}
	return rep, nil
}

func pointRuns(ps []sweepPoint) []*run {
	out := make([]*run, len(ps))
	for i, p := range ps {
		out[i] = p.r
	}
	return out
}

// aggregate averages r's metrics over the queries idx.
func aggregate(r *run, metrics []string, idx []int) Metrics {
	m := Metrics{N: len(idx), Values: make(map[string]float64, len(metrics))}
	for _, name := range metrics {
		m.Values[name] = Mean(pick(r.values[name], idx))
	}
	return m
}

func pick(xs []float64, idx []int) []float64 {
	out := make([]float64, len(idx))
	for i, j := range idx {
		out[i] = xs[j]
	}
	return out
}

// meanCIs is the bootstrap 95% interval of each metric's mean over idx.
func meanCIs(r *run, metrics []string, idx []int, o Options, labels ...string) map[string]Interval {
	xs := make([][]float64, len(metrics))
	for i, m := range metrics {
		xs[i] = pick(r.values[m], idx)
	}
	ci := BootstrapCI(xs, o.Resamples, rng(o.Seed, labels...))
	out := make(map[string]Interval, len(metrics))
	for i, m := range metrics {
		out[m] = ci[i]
	}
	return out
}

// compare is the paired comparison of r with base over the queries idx.
func compare(r, base *run, name, baseName string, metrics []string, idx []int, o Options, subset string) []Comparison {
	ds := make([][]float64, len(metrics))
	for i, m := range metrics {
		a, b := pick(r.values[m], idx), pick(base.values[m], idx)
		for j := range a {
			a[j] -= b[j]
		}
		ds[i] = a
	}
	ci := BootstrapCI(ds, o.Resamples, rng(o.Seed, "bootstrap", subset, name, baseName))
	ps := RandomizationP(ds, o.Resamples, rng(o.Seed, "randomization", subset, name, baseName))
	out := make([]Comparison, len(metrics))
	for i, m := range metrics {
		out[i] = Comparison{Config: name, Baseline: baseName, Metric: m, Delta: Mean(ds[i]), CILow: ci[i].Low, CIHigh: ci[i].High, P: ps[i]}
	}
	return out
}

// IngestOptions choose how a corpus becomes memories.
type IngestOptions struct {
	// ContextTurns is how many previous turns of its session each memory
	// is indexed with (its lexical context field; the store's
	// Options.ContextTurns: 0 its default, -1 none).
	ContextTurns int
	// EmbedActor embeds "actor: content" instead of the content alone.
	EmbedActor bool
	// Captions appends a document's image caption to its content (LoCoMo
	// turns sharing a picture).
	Captions bool
	// EmbedContext embeds the previous turn of the session with the
	// content.
	EmbedContext bool
	// ANNMin, when > 0, gives every profile of at least ANNMin embedded
	// memories an HNSW graph, built before the queries, and walks it for
	// every scope of at least ANNMin memories (Config.ANN's GraphMin and
	// ExactBelow): the evaluation then measures the approximate dense
	// leg on corpora smaller than its default threshold.
	ANNMin int
	// LexicalInStore ranks the lexical leg in the store instead of the
	// in-process full-text index (Config.LexicalInStore).
	LexicalInStore bool
}

// content is the memory content of d.
func (o IngestOptions) content(d Doc) string {
	if o.Captions && d.Caption != "" {
		return d.Text + "\n[image: " + d.Caption + "]"
	}
	return d.Text
}

// embedText is the text embedded for d.
func (o IngestOptions) embedText(d Doc) string {
	if o.EmbedActor && d.Actor != "" {
		return d.Actor + ": " + o.content(d)
	}
	return o.content(d)
}

// place is where an evaluation store lives: a SQLite file, or a schema of
// a PostgreSQL database (Options.Postgres).
type place struct {
	path        string
	dsn, schema string
}

// place returns the place of the store called name: a file of folder tmp,
// or a schema of Options.Postgres named after tmp's random suffix.
func (o Options) place(tmp, name string) place {
	if o.Postgres == "" {
		return place{path: filepath.Join(tmp, name+".db")}
	}
	suffix := strings.ToLower(strings.TrimPrefix(filepath.Base(tmp), "mnemo-eval-"))
	return place{dsn: o.Postgres, schema: "mnemo_eval_" + suffix + "_" + strings.ReplaceAll(name, "-", "_")}
}

// drop removes a Postgres store's schema (a file goes with its folder).
func (p place) drop(ctx context.Context) {
	if p.dsn != "" {
		_ = postgres.DropSchema(context.WithoutCancel(ctx), p.dsn, p.schema)
	}
}

// openEngine opens the evaluation store. Access statistics are written only
// on Close (AccessFlushInterval < 0), so queries never write to the store.
// The embedding deadlines are off: a measurement must never lose its dense
// leg to a slow moment.
func openEngine(at place, emb embed.Embedder, in IngestOptions) (*mnemo.Engine, error) {
	var st store.Store
	var err error
	if at.dsn != "" {
		st, err = postgres.Open(context.Background(), at.dsn, postgres.Options{Schema: at.schema, ContextTurns: in.ContextTurns})
	} else {
		st, err = sqlitestore.Open(context.Background(), at.path, sqlitestore.Options{ContextTurns: in.ContextTurns})
	}
	if err != nil {
		return nil, fmt.Errorf("eval: open store: %w", err)
	}
	cfg := &mnemo.Config{
		Embedder: emb, AccessFlushInterval: -1, Store: st, IndexDir: "-", WriteEmbedTimeout: -1, QueryEmbedTimeout: -1,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), LexicalInStore: in.LexicalInStore,
	}
	if in.ANNMin > 0 {
		cfg.ANN = mnemo.ANNOptions{GraphMin: in.ANNMin, ExactBelow: in.ANNMin}
	}
	e, err := mnemo.Open(at.path, cfg)
	if err != nil {
		return nil, fmt.Errorf("eval: open store: %w", err)
	}
	if in.ANNMin > 0 {
		ctx := context.Background()
		profiles, err := e.WarmIndexes(ctx)
		for _, p := range profiles {
			if err == nil {
				_, err = e.BuildGraph(ctx, p)
			}
		}
		if err != nil {
			e.Close()
			return nil, fmt.Errorf("eval: build the dense graphs: %w", err)
		}
	}
	return e, nil
}

// ingest stores ds's corpus at path: embedded in batches through
// o.Embedder, one memory per document in profile Profile, its project the
// document's scope value (a conversation), its session that scope's
// session, with its actor, time and order.
func ingest(ctx context.Context, ds *Dataset, at place, o Options) error {
	e, err := openEngine(at, o.Embedder, o.Ingest)
	if err != nil {
		return err
	}
	prev := map[turn]Doc{} // each turn's previous turn
	if o.Ingest.EmbedContext {
		bySeq := map[turn]Doc{}
		for _, d := range ds.Docs {
			bySeq[turnOf(d)] = d
		}
		for _, d := range ds.Docs {
			k := turnOf(d)
			if p, ok := bySeq[turn{k.session, k.seq - 1}]; ok && d.Seq > 1 {
				prev[k] = p
			}
		}
	}
	for start := 0; start < len(ds.Docs); start += ingestBatch {
		docs := ds.Docs[start:min(start+ingestBatch, len(ds.Docs))]
		texts := make([]string, len(docs))
		for i, d := range docs {
			texts[i] = o.Ingest.embedText(d)
			if o.Ingest.EmbedContext {
				if p, ok := prev[turnOf(d)]; ok {
					texts[i] = o.Ingest.embedText(p) + "\n" + texts[i]
				}
			}
		}
		vecs, err := o.Embedder.Embed(ctx, texts)
		if err == nil && len(vecs) != len(texts) {
			err = fmt.Errorf("embedder %s returned %d vectors for %d texts", o.Embedder.Model(), len(vecs), len(texts))
		}
		if err != nil {
			e.Close()
			return fmt.Errorf("eval: embed corpus: %w", err)
		}
		ins := make([]mnemo.Input, len(docs))
		for i, d := range docs {
			ins[i] = mnemo.Input{ID: d.ID, Content: o.Ingest.content(d), Profile: Profile, Project: d.Scope, Session: sessionOf(d),
				Actor: d.Actor, Seq: d.Seq, CreatedAt: d.Time, OccurredAt: d.Time, Embedding: vecs[i], EmbeddingModel: o.Embedder.Model()}
		}
		if _, err := e.RememberBatch(ctx, ins); err != nil {
			e.Close()
			if n, ok := batchIndex(err); ok && n < len(docs) {
				return fmt.Errorf("eval: ingest document %q: %w", docs[n].ID, err)
			}
			return fmt.Errorf("eval: ingest: %w", err)
		}
		if o.Progress != nil {
			o.Progress(Progress{Stage: "ingest", Done: start + len(docs), Total: len(ds.Docs)})
		}
	}
	// As a deployment would (mnemo migrate, mnemo serve): a store that
	// ranks embeddings itself gets its ANN indexes, which the evaluation
	// then measures.
	if _, _, err := e.IndexVectors(ctx, nil); err != nil {
		e.Close()
		return fmt.Errorf("eval: index vectors: %w", err)
	}
	return e.Close()
}

type turn struct {
	session string
	seq     int64
}

func turnOf(d Doc) turn { return turn{d.Scope + "\x00" + d.Session, d.Seq} }

// sessionOf is the session of d's memory: its scope's session ("" when
// the document has none; the scope alone when unscoped).
func sessionOf(d Doc) string {
	switch {
	case d.Session == "":
		return ""
	case d.Scope == "":
		return d.Session
	}
	return d.Scope + "/" + d.Session
}

// batchIndex reads the index from RememberBatch's "memory N: ..." errors.
func batchIndex(err error) (int, bool) {
	var n int
	if _, scanErr := fmt.Sscanf(err.Error(), "memory %d:", &n); scanErr == nil {
		return n, true
	}
	return 0, false
}

// warm embeds the queries' texts once, in one batch, and returns an
// embedder that answers them from memory.
func warm(ctx context.Context, emb embed.Embedder, qs []Query) (*memo, error) {
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = q.Text
	}
	vecs, err := emb.Embed(ctx, texts)
	if err == nil && len(vecs) != len(texts) {
		err = fmt.Errorf("embedder %s returned %d vectors for %d texts", emb.Model(), len(vecs), len(texts))
	}
	if err != nil {
		return nil, fmt.Errorf("eval: embed queries: %w", err)
	}
	m := &memo{Embedder: emb, vecs: make(map[string][]float32, len(texts))}
	for i, t := range texts {
		m.vecs[t] = vecs[i]
	}
	return m, nil
}

// memo is an embed.Embedder that answers the texts embedded by warm from
// memory and sends anything else to the embedder it wraps. It is read-only
// after warm, hence safe for concurrent use.
type memo struct {
	embed.Embedder
	vecs map[string][]float32
}

// Embed implements embed.Embedder.
func (m *memo) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v, ok := m.vecs[t]
		if !ok {
			return m.Embedder.Embed(ctx, texts)
		}
		out[i] = slices.Clone(v)
	}
	return out, nil
}

// recallAll stores c as the profile's settings, runs every query with
// workers goroutines and returns each query's ranked hits.
func recallAll(ctx context.Context, e *mnemo.Engine, qs []Query, c Config, limit, workers int, progress func(Progress)) ([][]Hit, error) {
	// The configuration becomes the profile's stored settings, every key
	// set so nothing of the previous one remains: recall then behaves as for
	// a user who chose these settings. (Per-request overrides would differ:
	// an explicit per-request strategy turns the automatic switches off.)
	full, err := mnemo.DefaultSettings().Apply(c.Overrides)
	if err == nil {
		_, err = e.UpdateSettings(ctx, Profile, full.Map())
	}
	if err != nil {
		return nil, fmt.Errorf("config %q: %w", c.Name, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make([][]Hit, len(qs))
	next := make(chan int)
	var (
		mu       sync.Mutex
		firstErr error
		done     int
		wg       sync.WaitGroup
	)
	for range min(workers, len(qs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				q := qs[i]
				mq := mnemo.Query{Text: q.Text, Profile: Profile, Limit: limit, Project: q.Scope}
				res, err := e.Recall(ctx, mq)
				mu.Lock()
				if err != nil {
					if firstErr == nil {
						firstErr = fmt.Errorf("config %q: query %s: %w", c.Name, q.ID, err)
						cancel()
					}
					mu.Unlock()
					continue
				}
				hits := make([]Hit, len(res.Results))
				for j, rr := range res.Results {
					hits[j] = Hit{ID: rr.ID, Score: rr.Score}
				}
				out[i] = hits
				done++
				if progress != nil && (done%50 == 0 || done == len(qs)) {
					progress(Progress{Stage: c.Name, Done: done, Total: len(qs)})
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for i := range qs {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func copyFile(src, dst string) error {
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(src + suffix)
		if suffix != "" && errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := os.WriteFile(dst+suffix, b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// sortedNames returns m's keys in order.
func sortedNames[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp.Compare)
	return keys
}

// NoAnswerResult is how a configuration answers queries that have no
// relevant memory in scope: the share it answers with nothing.
type NoAnswerResult struct {
	N int `json:"n"`
	// Empty is the share of the queries answered with no memory, and CI
	// its bootstrap 95% interval.
	Empty float64  `json:"empty"`
	CI    Interval `json:"-"`
	// ByKind splits them by kind (NoAnswerOther, NoAnswerNonsense).
	ByKind map[string]NoAnswerKind `json:"by_kind"`
}

// NoAnswerKind is NoAnswerResult for one kind of query.
type NoAnswerKind struct {
	N     int     `json:"n"`
	Empty float64 `json:"empty"`
}

func noAnswerResult(qs []Query, hits [][]Hit, o Options, config string) *NoAnswerResult {
	empty := make([]float64, len(qs))
	res := &NoAnswerResult{N: len(qs), ByKind: map[string]NoAnswerKind{}}
	for i, q := range qs {
		k := res.ByKind[q.Category]
		k.N++
		if len(hits[i]) == 0 {
			empty[i] = 1
			k.Empty++
		}
		res.ByKind[q.Category] = k
	}
	for name, k := range res.ByKind {
		k.Empty /= float64(k.N)
		res.ByKind[name] = k
	}
	res.Empty = Mean(empty)
	res.CI = BootstrapCI([][]float64{empty}, o.Resamples, rng(o.Seed, "no-answer", config))[0]
	return res
}
