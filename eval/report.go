package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the outcome of Run. Its JSON form (WriteJSON) is
//
//	{"dataset", "queries",
//	 "configs": [{"name", "spec", "overall": {"recall@5", ..., "n"}, "by_category": {"<cat>": {..., "n"}},
//	              "ci": {"recall@5": [low, high], ...}, "ci_by_category": {"<cat>": {"recall@5": [low, high], ...}}}],
//	 "comparisons": [{"config", "baseline", "metric", "delta", "ci_low", "ci_high", "p"}]}
//
// plus, only when asked for, "exclude_categories" with each config's
// "overall_excluding" and the "comparisons_excluding" on those queries, and
// "sweeps".
type Report struct {
	Dataset string `json:"dataset"`
	// Queries is the number of judged queries evaluated.
	Queries     int            `json:"queries"`
	Configs     []ConfigResult `json:"configs"`
	Comparisons []Comparison   `json:"comparisons"`

	ExcludeCategories    []string      `json:"exclude_categories,omitempty"`
	ComparisonsExcluding []Comparison  `json:"comparisons_excluding,omitempty"`
	Sweeps               []SweepResult `json:"sweeps,omitempty"`

	// Info describes how the figures were obtained (not part of the JSON).
	Info Info `json:"-"`

	queryIDs []string // the evaluated queries, in order
}

// Info describes a run.
type Info struct {
	Memories   int
	Embedder   string
	ScopeField string
	// Metrics are the metric names, in report order.
	Metrics   []string
	Baseline  string
	Resamples int
	Seed      uint64
	// EngineOrder: ties were not averaged (Options.EngineOrder).
	EngineOrder bool
	// Limit is the number of memories each query asked for.
	Limit int
	// Unjudged is the number of queries skipped for having no relevant id.
	Unjudged int
	// MissingRelevant counts relevant ids absent from the corpus.
	MissingRelevant int
	// AccessOrdered names the configurations whose access leg made results
	// depend on the order of queries (run in file order on their own store).
	AccessOrdered []string
	// Runs is the number of distinct settings evaluated.
	Runs int
	// Elapsed is the whole Run; IngestTime and QueryTime its two parts.
	Elapsed, IngestTime, QueryTime time.Duration
}

// ConfigResult holds one configuration's figures.
type ConfigResult struct {
	Name       string             `json:"name"`
	Spec       string             `json:"spec"`
	Overall    Metrics            `json:"overall"`
	ByCategory map[string]Metrics `json:"by_category"`
	// OverallExcluding leaves out Report.ExcludeCategories.
	OverallExcluding *Metrics `json:"overall_excluding,omitempty"`
	// CI and CIExcluding are the bootstrap 95% intervals of the means;
	// CIByCategory those of each category's, by category and metric.
	CI           map[string]Interval            `json:"ci,omitempty"`
	CIExcluding  map[string]Interval            `json:"ci_excluding,omitempty"`
	CIByCategory map[string]map[string]Interval `json:"ci_by_category,omitempty"`
	// NoAnswer is set when the run asked queries without an answer
	// (Options.NoAnswer).
	NoAnswer *NoAnswerResult `json:"no_answer,omitempty"`

	hits [][]Hit // per evaluated query
}

// Metrics are metric means over N queries. In JSON it is one object: the
// metrics in report order, then "n".
type Metrics struct {
	N      int
	Values map[string]float64
}

// MarshalJSON implements json.Marshaler.
func (m Metrics) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for _, k := range sortMetrics(m.Values) {
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.WriteString(formatJSONFloat(m.Values[k]))
		b.WriteByte(',')
	}
	b.WriteString(`"n":` + strconv.Itoa(m.N) + "}")
	return b.Bytes(), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (m *Metrics) UnmarshalJSON(b []byte) error {
	var raw map[string]float64
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	m.N = int(raw["n"])
	delete(raw, "n")
	m.Values = raw
	return nil
}

// formatJSONFloat rounds to 6 decimals, enough for any figure here and
// stable across platforms.
func formatJSONFloat(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "null"
	}
	return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64)
}

// sortMetrics orders metric names: recall@K by K, then ndcg, then mrr, then
// any other by name.
func sortMetrics[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	rank := func(name string) (int, int) {
		kind, k, err := parseMetric(name)
		if err != nil {
			return 3, 0
		}
		return map[string]int{"recall": 0, "ndcg": 1, "mrr": 2}[kind], k
	}
	slices.SortFunc(keys, func(a, b string) int {
		ka, na := rank(a)
		kb, nb := rank(b)
		if ka != kb {
			return ka - kb
		}
		if na != nb {
			return na - nb
		}
		return strings.Compare(a, b)
	})
	return keys
}

// Comparison is a paired comparison of a configuration with the baseline on
// one metric: Delta is the mean per-query difference (config − baseline),
// [CILow, CIHigh] its paired bootstrap 95% interval, P the two-sided paired
// randomization-test p-value.
type Comparison struct {
	Config   string  `json:"config"`
	Baseline string  `json:"baseline"`
	Metric   string  `json:"metric"`
	Delta    float64 `json:"delta"`
	CILow    float64 `json:"ci_low"`
	CIHigh   float64 `json:"ci_high"`
	P        float64 `json:"p"`
}

// MarshalJSON rounds the figures like Metrics.
func (c Comparison) MarshalJSON() ([]byte, error) {
	type plain struct {
		Config   string          `json:"config"`
		Baseline string          `json:"baseline"`
		Metric   string          `json:"metric"`
		Delta    json.RawMessage `json:"delta"`
		CILow    json.RawMessage `json:"ci_low"`
		CIHigh   json.RawMessage `json:"ci_high"`
		P        json.RawMessage `json:"p"`
	}
	f := func(v float64) json.RawMessage { return json.RawMessage(formatJSONFloat(v)) }
	return json.Marshal(plain{c.Config, c.Baseline, c.Metric, f(c.Delta), f(c.CILow), f(c.CIHigh), f(c.P)})
}

// SweepResult is one swept setting.
type SweepResult struct {
	// Key is the setting as written; Setting the settings key it maps to.
	Key     string        `json:"key"`
	Setting string        `json:"setting"`
	Values  []string      `json:"values"`
	Series  []SweepSeries `json:"series"`
}

// SweepSeries is a sweep over one base configuration.
type SweepSeries struct {
	Config string       `json:"config"`
	Points []SweepPoint `json:"points"`
}

// SweepPoint is the base configuration with the setting at Value.
type SweepPoint struct {
	Value            string   `json:"value"`
	Overall          Metrics  `json:"overall"`
	OverallExcluding *Metrics `json:"overall_excluding,omitempty"`
	// Comparisons are with the baseline, on all queries.
	Comparisons []Comparison        `json:"comparisons"`
	CI          map[string]Interval `json:"ci,omitempty"`
}

// Comparison returns the comparison of config on metric, excluding or not.
func (r *Report) Comparison(config, metric string, excluding bool) (Comparison, bool) {
	list := r.Comparisons
	if excluding {
		list = r.ComparisonsExcluding
	}
	for _, c := range list {
		if c.Config == config && c.Metric == metric {
			return c, true
		}
	}
	return Comparison{}, false
}

// WriteJSON writes the report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// metricLabel is a metric's display name.
func metricLabel(m string) string {
	switch {
	case strings.HasPrefix(m, "ndcg@"):
		return "nDCG@" + m[5:]
	case strings.HasPrefix(m, "mrr@"):
		return "MRR@" + m[4:]
	}
	return m
}

func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

func signed(v float64) string {
	s := strconv.FormatFloat(v, 'f', 3, 64)
	if s == "-0.000" {
		s = "0.000"
	}
	if !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	return s
}

// formatP prints a p-value with two significant digits, "<0.001" below.
func formatP(p float64) string {
	switch {
	case p < 0.001:
		return "<0.001"
	case p < 0.01:
		return strconv.FormatFloat(p, 'f', 3, 64)
	}
	return strconv.FormatFloat(p, 'f', 2, 64)
}

func (c Comparison) cell() string {
	return fmt.Sprintf("%s [%s, %s] %s", signed(c.Delta), signed(c.CILow), signed(c.CIHigh), pLabel(c.P))
}

// pLabel is "p=0.04" or "p<0.001".
func pLabel(p float64) string {
	if s := formatP(p); strings.HasPrefix(s, "<") {
		return "p" + s
	}
	return "p=" + formatP(p)
}

func specLabel(s string) string {
	if s == "" {
		return "(engine defaults)"
	}
	return s
}

func (r *Report) excludedLabel() string { return strings.Join(r.ExcludeCategories, ", ") }

// WriteMarkdown writes the report as Markdown: how it was measured, the
// configurations, the overall tables, the comparisons with the baseline,
// the per-category tables and the sweeps. chart, when not empty, is linked
// as an image.
func (r *Report) WriteMarkdown(w io.Writer, chart string) error {
	var b strings.Builder
	in := r.Info
	fmt.Fprintf(&b, "# mnemo eval: %s\n\n", r.Dataset)
	scope := "every query searches the whole corpus"
	if in.ScopeField != "" {
		scope = fmt.Sprintf("each query searches only the memories sharing its `%s`", in.ScopeField)
	}
	fmt.Fprintf(&b, "- Dataset `%s`: %d memories, %d judged queries; %s.\n", r.Dataset, in.Memories, r.Queries, scope)
	if in.Unjudged > 0 {
		fmt.Fprintf(&b, "- %s without a relevant id skipped.\n", plural(in.Unjudged, "query", "queries"))
	}
	if in.MissingRelevant > 0 {
		fmt.Fprintf(&b, "- %s not in the corpus (counted as not found).\n", plural(in.MissingRelevant, "relevant id", "relevant ids"))
	}
	if in.Embedder != "" {
		fmt.Fprintf(&b, "- Embedder `%s`; every query asks for %d memories; each configuration is stored as the profile's settings.\n", in.Embedder, in.Limit)
	}
	ties := "tied scores count as the mean over their orders"
	if in.EngineOrder {
		ties = "runs are scored in the engine's order"
	}
	fmt.Fprintf(&b, "- Metrics: recall@K = share of a query's relevant ids in its top K, averaged over queries; "+
		"nDCG@10 with binary gains; MRR@10; %s.\n", ties)
	fmt.Fprintf(&b, "- Significance versus `%s`, per metric: paired bootstrap 95%% interval of the mean difference "+
		"(%d resamples, seed %d) and two-sided paired randomization test (%d sign flips).\n", in.Baseline, in.Resamples, in.Seed, in.Resamples)
	if len(in.AccessOrdered) > 0 {
		fmt.Fprintf(&b, "- The access leg of %s counts the accesses of earlier queries: run in file order on a fresh store.\n",
			strings.Join(in.AccessOrdered, ", "))
	}
	if in.Elapsed > 0 {
		fmt.Fprintf(&b, "- Wall time %.1f s (ingest %.1f s, queries %.1f s for %d distinct settings).\n",
			in.Elapsed.Seconds(), in.IngestTime.Seconds(), in.QueryTime.Seconds(), in.Runs)
	}
	b.WriteString("\n## Configurations\n\n| config | settings |\n|---|---|\n")
	for _, c := range r.Configs {
		fmt.Fprintf(&b, "| %s | `%s` |\n", c.Name, specLabel(c.Spec))
	}

	overall := func(title string, get func(ConfigResult) *Metrics) {
		fmt.Fprintf(&b, "\n## %s\n\n| config |", title)
		for _, m := range in.Metrics {
			fmt.Fprintf(&b, " %s |", metricLabel(m))
		}
		b.WriteString(" n |\n|---|")
		b.WriteString(strings.Repeat("---:|", len(in.Metrics)+1) + "\n")
		best := map[string]float64{}
		for _, c := range r.Configs {
			for _, m := range in.Metrics {
				best[m] = max(best[m], get(c).Values[m])
			}
		}
		for _, c := range r.Configs {
			fmt.Fprintf(&b, "| %s |", c.Name)
			for _, m := range in.Metrics {
				v := get(c).Values[m]
				if f3(v) == f3(best[m]) {
					fmt.Fprintf(&b, " **%s** |", f3(v))
				} else {
					fmt.Fprintf(&b, " %s |", f3(v))
				}
			}
			fmt.Fprintf(&b, " %d |\n", get(c).N)
		}
	}
	versus := func(title string, list []Comparison) {
		fmt.Fprintf(&b, "\n## %s\n\nΔ = config − %s, mean over queries, [95%% CI], p.\n\n| config |", title, in.Baseline)
		for _, m := range in.Metrics {
			fmt.Fprintf(&b, " %s |", metricLabel(m))
		}
		b.WriteString("\n|---|" + strings.Repeat("---|", len(in.Metrics)) + "\n")
		for _, c := range r.Configs {
			if c.Name == in.Baseline {
				continue
			}
			fmt.Fprintf(&b, "| %s |", c.Name)
			for _, m := range in.Metrics {
				for _, x := range list {
					if x.Config == c.Name && x.Metric == m {
						fmt.Fprintf(&b, " %s |", x.cell())
					}
				}
			}
			b.WriteString("\n")
		}
	}

	overall(fmt.Sprintf("Overall: all %d queries", r.Queries), func(c ConfigResult) *Metrics { return &c.Overall })
	if len(r.ExcludeCategories) > 0 && len(r.Configs) > 0 && r.Configs[0].OverallExcluding != nil {
		overall(fmt.Sprintf("Overall without %s: %d queries", r.excludedLabel(), r.Configs[0].OverallExcluding.N),
			func(c ConfigResult) *Metrics { return c.OverallExcluding })
	}
	versus(fmt.Sprintf("Versus %s: all queries", in.Baseline), r.Comparisons)
	if len(r.ExcludeCategories) > 0 {
		versus(fmt.Sprintf("Versus %s: without %s", in.Baseline, r.excludedLabel()), r.ComparisonsExcluding)
	}

	if len(r.Configs) > 0 && r.Configs[0].NoAnswer != nil {
		na := r.Configs[0].NoAnswer
		kinds := sortedNames(na.ByKind)
		fmt.Fprintf(&b, "\n## Queries without an answer\n\n%d queries with no relevant memory in scope (seed %d): "+
			"the share each configuration answers with nothing, [95%% CI].\n\n| config | answered with nothing |", na.N, in.Seed)
		for _, k := range kinds {
			fmt.Fprintf(&b, " %s (n=%d) |", k, na.ByKind[k].N)
		}
		b.WriteString("\n|---|---:|" + strings.Repeat("---:|", len(kinds)) + "\n")
		for _, c := range r.Configs {
			fmt.Fprintf(&b, "| %s | %s [%s, %s] |", c.Name, f3(c.NoAnswer.Empty), f3(c.NoAnswer.CI.Low), f3(c.NoAnswer.CI.High))
			for _, k := range kinds {
				fmt.Fprintf(&b, " %s |", f3(c.NoAnswer.ByKind[k].Empty))
			}
			b.WriteString("\n")
		}
	}

	if len(r.Configs) > 0 && len(r.Configs[0].ByCategory) > 0 {
		cats := sortedNames(r.Configs[0].ByCategory)
		b.WriteString("\n## By category\n\nMeans with their bootstrap 95% intervals.\n")
		for _, m := range in.Metrics {
			fmt.Fprintf(&b, "\n### %s\n\n| config |", metricLabel(m))
			for _, cat := range cats {
				fmt.Fprintf(&b, " %s (n=%d) |", cat, r.Configs[0].ByCategory[cat].N)
			}
			b.WriteString("\n|---|" + strings.Repeat("---:|", len(cats)) + "\n")
			for _, c := range r.Configs {
				fmt.Fprintf(&b, "| %s |", c.Name)
				for _, cat := range cats {
					v := f3(c.ByCategory[cat].Values[m])
					if ci, ok := c.CIByCategory[cat][m]; ok {
						v += fmt.Sprintf(" [%s, %s]", f3(ci.Low), f3(ci.High))
					}
					fmt.Fprintf(&b, " %s |", v)
				}
				b.WriteString("\n")
			}
		}
	}

	if len(r.Sweeps) > 0 {
		b.WriteString("\n## Sweeps\n")
		for _, s := range r.Sweeps {
			fmt.Fprintf(&b, "\n### %s", s.Key)
			if s.Setting != s.Key {
				fmt.Fprintf(&b, " (%s)", s.Setting)
			}
			b.WriteString("\n")
			for _, ser := range s.Series {
				fmt.Fprintf(&b, "\n%s with %s = each value; Δ and p versus %s on all queries.\n\n| %s |", ser.Config, s.Key, in.Baseline, s.Key)
				for _, m := range in.Metrics {
					fmt.Fprintf(&b, " %s |", metricLabel(m))
				}
				if len(r.ExcludeCategories) > 0 {
					fmt.Fprintf(&b, " nDCG@10 w/o %s |", r.excludedLabel())
				}
				fmt.Fprintf(&b, " Δ nDCG@10 | p |\n|---|%s\n", strings.Repeat("---:|", len(in.Metrics)+2+btoi(len(r.ExcludeCategories) > 0)))
				for _, p := range ser.Points {
					fmt.Fprintf(&b, "| %s |", p.Value)
					for _, m := range in.Metrics {
						fmt.Fprintf(&b, " %s |", f3(p.Overall.Values[m]))
					}
					if p.OverallExcluding != nil {
						fmt.Fprintf(&b, " %s |", f3(p.OverallExcluding.Values[MetricNDCG]))
					}
					for _, c := range p.Comparisons {
						if c.Metric == MetricNDCG {
							fmt.Fprintf(&b, " %s | %s |", signed(c.Delta), formatP(c.P))
						}
					}
					b.WriteString("\n")
				}
			}
		}
	}
	if chart != "" {
		fmt.Fprintf(&b, "\n![metrics per configuration](%s)\n", chart)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// WriteText writes the terminal summary: the overall table (and the one
// without the excluded categories) with each figure's difference from the
// baseline and its p-value, then the sweeps.
func (r *Report) WriteText(w io.Writer) error {
	in := r.Info
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "%s: %d queries over %d memories, embedder %s", r.Dataset, r.Queries, in.Memories, in.Embedder)
	if in.ScopeField != "" {
		fmt.Fprintf(w, ", scoped by %s", in.ScopeField)
	}
	fmt.Fprintln(w)
	table := func(title string, get func(ConfigResult) *Metrics, excluding bool) {
		fmt.Fprintf(w, "\n%s (Δ vs %s, * p < 0.05)\n", title, in.Baseline)
		fmt.Fprint(tw, "config\t")
		for _, m := range in.Metrics {
			fmt.Fprintf(tw, "%s\t\t", metricLabel(m))
		}
		fmt.Fprint(tw, "n\t\n")
		for _, c := range r.Configs {
			fmt.Fprintf(tw, "%s\t", c.Name)
			for _, m := range in.Metrics {
				d := ""
				if x, ok := r.Comparison(c.Name, m, excluding); ok {
					d = signed(x.Delta)
					if x.P < 0.05 {
						d += "*"
					} else {
						d += " "
					}
				}
				fmt.Fprintf(tw, "%s\t%s\t", f3(get(c).Values[m]), d)
			}
			fmt.Fprintf(tw, "%d\t\n", get(c).N)
		}
		tw.Flush()
	}
	table("all queries", func(c ConfigResult) *Metrics { return &c.Overall }, false)
	if len(r.ExcludeCategories) > 0 && len(r.Configs) > 0 && r.Configs[0].OverallExcluding != nil {
		table("without "+r.excludedLabel(), func(c ConfigResult) *Metrics { return c.OverallExcluding }, true)
	}
	if len(r.Configs) > 0 && r.Configs[0].NoAnswer != nil {
		kinds := sortedNames(r.Configs[0].NoAnswer.ByKind)
		fmt.Fprintf(w, "\n%d queries without an answer: share answered with nothing\n", r.Configs[0].NoAnswer.N)
		fmt.Fprint(tw, "config\tall\t95% CI\t")
		for _, k := range kinds {
			fmt.Fprintf(tw, "%s\t", k)
		}
		fmt.Fprint(tw, "\n")
		for _, c := range r.Configs {
			fmt.Fprintf(tw, "%s\t%s\t[%s, %s]\t", c.Name, f3(c.NoAnswer.Empty), f3(c.NoAnswer.CI.Low), f3(c.NoAnswer.CI.High))
			for _, k := range kinds {
				fmt.Fprintf(tw, "%s\t", f3(c.NoAnswer.ByKind[k].Empty))
			}
			fmt.Fprint(tw, "\n")
		}
		tw.Flush()
	}
	for _, s := range r.Sweeps {
		for _, ser := range s.Series {
			fmt.Fprintf(w, "\nsweep %s over %s (Δ nDCG@10 vs %s)\n", s.Key, ser.Config, in.Baseline)
			fmt.Fprintf(tw, "%s\t", s.Key)
			for _, m := range in.Metrics {
				fmt.Fprintf(tw, "%s\t", metricLabel(m))
			}
			fmt.Fprint(tw, "Δ nDCG@10\tp\t\n")
			for _, p := range ser.Points {
				fmt.Fprintf(tw, "%s\t", p.Value)
				for _, m := range in.Metrics {
					fmt.Fprintf(tw, "%s\t", f3(p.Overall.Values[m]))
				}
				for _, c := range p.Comparisons {
					if c.Metric == MetricNDCG {
						fmt.Fprintf(tw, "%s\t%s\t", signed(c.Delta), formatP(c.P))
					}
				}
				fmt.Fprint(tw, "\n")
			}
			tw.Flush()
		}
	}
	return nil
}

// WriteRuns writes every configuration's ranked hits in the TREC run format
// read by trec_eval and ReadRuns: "query-id Q0 doc-id rank score config",
// one line per hit.
func (r *Report) WriteRuns(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, c := range r.Configs {
		tag := strings.Join(strings.Fields(c.Name), "_")
		for qi, hits := range c.hits {
			for i, h := range hits {
				fmt.Fprintf(bw, "%s Q0 %s %d %s %s\n", r.queryIDs[qi], h.ID, i+1, strconv.FormatFloat(h.Score, 'g', -1, 64), tag)
			}
		}
	}
	return bw.Flush()
}

// ReadRuns reads runs in the TREC run format ("query-id Q0 doc-id rank
// score tag", whitespace-separated; ids must not contain spaces) into tag →
// query id → hits ordered by rank, for Evaluate.
func ReadRuns(rd io.Reader) (map[string]map[string][]Hit, error) {
	type ranked struct {
		rank int
		hit  Hit
	}
	tmp := map[string]map[string][]ranked{}
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != 6 {
			return nil, fmt.Errorf("read runs: line %d: want 6 fields (query-id Q0 doc-id rank score tag), got %d", line, len(f))
		}
		rank, err := strconv.Atoi(f[3])
		if err != nil {
			return nil, fmt.Errorf("read runs: line %d: rank %q: must be an integer", line, f[3])
		}
		score, err := strconv.ParseFloat(f[4], 64)
		if err != nil {
			return nil, fmt.Errorf("read runs: line %d: score %q: must be a number", line, f[4])
		}
		if tmp[f[5]] == nil {
			tmp[f[5]] = map[string][]ranked{}
		}
		tmp[f[5]][f[0]] = append(tmp[f[5]][f[0]], ranked{rank, Hit{ID: f[2], Score: score}})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read runs: %w", err)
	}
	out := make(map[string]map[string][]Hit, len(tmp))
	for tag, qs := range tmp {
		out[tag] = make(map[string][]Hit, len(qs))
		for q, rs := range qs {
			slices.SortStableFunc(rs, func(a, b ranked) int { return a.rank - b.rank })
			hits := make([]Hit, len(rs))
			for i, x := range rs {
				hits[i] = x.hit
			}
			out[tag][q] = hits
		}
	}
	return out, nil
}
