package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/fusion"
	"github.com/mnemo-dev/mnemo/mnemotype"
)

const fuseUsage = `usage: mnemo fuse [flags] [FILE]

Fuses ranked lists read from FILE (or stdin, also with FILE "-"):

  {"legs": {"dense":   [{"id": "a", "score": 0.91}, {"id": "b", "score": 0.80}],
            "lexical": [{"id": "b", "score": 7.2},  {"id": "a", "score": 3.1}]}}

Each list is in rank order, best first. Per hit: "id" (string or number,
required), "score" (number, higher is better; optional for the rank-only
strategies rrf and borda_rank), "rank" (integer ≥ 1; optional: by default
ranks are dense positions, equal consecutive scores sharing a rank) and
"content" (string, optional, read by --exact-bonus).

Prints every result with its per-leg rank, contribution (and normalised score
for score-based strategies) and its rank under every other strategy.

flags:
`

// cmdFuse implements "mnemo fuse": the fusion math on its own, over ranked
// lists from anywhere.
func cmdFuse(_ context.Context, a *app, args []string) error {
	fs := newFlags(a, "fuse")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), fuseUsage)
		fs.PrintDefaults()
	}
	var (
		strategy  = fs.String("strategy", mnemo.DefaultSettings().Strategy, "fusion strategy (default: the engine's; rrf when a hit has no score): "+fuseNames(fusion.Strategies()))
		weights   = fs.String("weights", "", "leg weights, `leg=w,...` (w ≥ 0; unlisted legs weigh 1)")
		k         = fs.Float64("k", fusion.DefaultK, "rrf constant k in Σ w/(k + rank) (> 0)")
		bordaK    = fs.Float64("borda-k", fusion.DefaultBordaK, "borda_rank constant k (> 0)")
		kParam    = fs.Float64("kparam", fusion.DefaultKParam, "score_weighted_rrf offset in Σ w·norm/(rank + kparam) (> 0)")
		norm      = fs.String("normalization", string(fusion.NormMinMax), "score normalization: "+fuseNames(fusion.Normalizations()))
		missing   = fs.String("missing", string(fusion.MissingZero), "missing-leg policy: "+fuseNames(fusion.MissingPolicies()))
		lower     = fs.String("lower-bound", "", "per-leg lower bound of the normalised range, `leg=x,...`")
		bounds    = fs.String("bounds", "", "per-leg theoretical bounds for tmm, `leg=min:max,...` (dense defaults to -1:1)")
		highConf  = fs.Bool("high-confidence", false, "switch to max_confidence when the top dense score ≥ --high-confidence-threshold")
		threshold = fs.Float64("high-confidence-threshold", fusion.DefaultHighConfidenceThreshold, "threshold of --high-confidence")
		adaptive  = fs.Bool("adaptive", false, "set the dense/lexical weight split from --query's intent")
		query     = fs.String("query", "", "the query text, for --adaptive and --exact-bonus")
		exact     = fs.Float64("exact-bonus", 0, "exact-match bonus in [0, 1] (fraction of the strongest one-leg contribution) for hits whose content contains a quoted phrase or identifier of --query")
		asJSON    = fs.Bool("json", false, "print JSON")
	)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("at most one input file, got %d arguments", len(pos))
	}

	p := fusion.Params{
		HighConfidence: *highConf, AdaptiveWeights: *adaptive, Query: *query,
		Counterfactual: true,
	}
	if p.Strategy, err = fusion.ParseStrategy(*strategy); err != nil {
		return err
	}
	if p.Normalization, err = fusion.ParseNormalization(*norm); err != nil {
		return err
	}
	if p.Missing, err = fusion.ParseMissing(*missing); err != nil {
		return err
	}
	for _, c := range []struct {
		name string
		v    float64
		dst  *float64
	}{{"k", *k, &p.K}, {"borda-k", *bordaK, &p.BordaK}, {"kparam", *kParam, &p.KParam}} {
		if math.IsNaN(c.v) || math.IsInf(c.v, 0) || c.v <= 0 {
			return usagef("--%s %v: must be a finite number > 0", c.name, c.v)
		}
		*c.dst = c.v
	}
	if math.IsNaN(*threshold) || math.IsInf(*threshold, 0) {
		return usagef("--high-confidence-threshold %v: must be a finite number", *threshold)
	}
	p.HighConfidenceThreshold = *threshold
	if p.HighConfidenceThreshold == 0 {
		p.HighConfidenceThreshold = -math.SmallestNonzeroFloat64 // 0 would mean the default
	}
	if math.IsNaN(*exact) || *exact < 0 || *exact > 1 {
		return usagef("--exact-bonus %v: must be a number in [0, 1]", *exact)
	}
	p.ExactMatchBonus = *exact
	if p.Weights, err = fuseLegFloats("weights", *weights, func(v float64) bool { return v >= 0 }, "a finite number ≥ 0"); err != nil {
		return err
	}
	if p.LowerBounds, err = fuseLegFloats("lower-bound", *lower, func(float64) bool { return true }, "a finite number"); err != nil {
		return err
	}
	if p.Bounds, err = fuseBounds(*bounds); err != nil {
		return err
	}

	in, err := a.readFuseInput(pos)
	if err != nil {
		return err
	}
	legs, err := parseFuseInput(in)
	if err != nil {
		return err
	}
	for _, flagLegs := range []map[string]float64{p.Weights, p.LowerBounds} {
		for leg := range flagLegs {
			if _, ok := legs.hits[leg]; !ok {
				return usagef("no leg named %q in the input (legs: %s)", leg, strings.Join(legs.names(), ", "))
			}
		}
	}
	if p.ExactMatchBonus > 0 {
		p.Contents = func(id string) string { return legs.content[id] }
	}
	if !legs.allScored && !flagGiven(fs, "strategy") && p.Strategy.UsesScores() {
		fmt.Fprintf(a.stderr, "mnemo fuse: %s; fusing by rrf (the engine's default, %s, reads scores)\n", legs.unscored, p.Strategy)
		p.Strategy = fusion.RRF
	}
	if !legs.allScored {
		if p.Strategy.UsesScores() {
			return usagef("strategy %s reads scores, but %s; give every hit a score or use rrf or borda_rank", p.Strategy, legs.unscored)
		}
		if p.HighConfidence {
			return usagef("--high-confidence reads scores, but %s", legs.unscored)
		}
		p.CounterfactualStrategies = []fusion.Strategy{fusion.RRF, fusion.BordaRank}
	}

	out, err := fusion.FuseExplain(legs.hits, p)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeFuseJSON(a.stdout, out, legs)
	}
	return writeFuseTable(a.stdout, out, legs)
}

func fuseNames[T ~string](xs []T) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = string(x)
	}
	return strings.Join(parts, ", ")
}

// parseLegFloats parses "leg=x,leg=y" into a map; ok says which finite
// values are allowed and want describes them.
func fuseLegFloats(flagName, s string, ok func(float64) bool, want string) (map[string]float64, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	m := map[string]float64{}
	for part := range strings.SplitSeq(s, ",") {
		leg, val, found := strings.Cut(strings.TrimSpace(part), "=")
		leg = strings.TrimSpace(leg)
		if !found || leg == "" {
			return nil, usagef("--%s %q: want leg=value pairs separated by commas", flagName, part)
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || !ok(v) {
			return nil, usagef("--%s %s=%s: must be %s", flagName, leg, val, want)
		}
		if _, dup := m[leg]; dup {
			return nil, usagef("--%s: leg %q given twice", flagName, leg)
		}
		m[leg] = v
	}
	return m, nil
}

// parseBounds parses "leg=min:max,...".
func fuseBounds(s string) (map[string]fusion.Range, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	m := map[string]fusion.Range{}
	for part := range strings.SplitSeq(s, ",") {
		leg, val, found := strings.Cut(strings.TrimSpace(part), "=")
		lo, hi, found2 := strings.Cut(val, ":")
		leg = strings.TrimSpace(leg)
		if !found || !found2 || leg == "" {
			return nil, usagef("--bounds %q: want leg=min:max pairs separated by commas", part)
		}
		a, err1 := strconv.ParseFloat(strings.TrimSpace(lo), 64)
		b, err2 := strconv.ParseFloat(strings.TrimSpace(hi), 64)
		if err1 != nil || err2 != nil || math.IsNaN(a) || math.IsInf(a, 0) || math.IsNaN(b) || math.IsInf(b, 0) || a >= b {
			return nil, usagef("--bounds %s=%s: must be finite numbers min:max with min < max", leg, val)
		}
		m[leg] = fusion.Range{Min: a, Max: b}
	}
	return m, nil
}

func (a *app) readFuseInput(pos []string) ([]byte, error) {
	if len(pos) == 0 || pos[0] == "-" {
		b, err := io.ReadAll(a.stdin)
		if err != nil {
			return nil, fmt.Errorf("read stdin: %w", err)
		}
		return b, nil
	}
	b, err := os.ReadFile(pos[0])
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, usagef("input file %s does not exist", pos[0])
		}
		return nil, fmt.Errorf("read %s: %w", pos[0], err)
	}
	return b, nil
}

// fuseLegs is the parsed input.
type fuseLegs struct {
	hits map[string][]mnemotype.Hit
	// scored[leg][id] says whether the input gave that hit a score.
	scored    map[string]map[string]bool
	allScored bool
	unscored  string // describes the first hit without a score
	content   map[string]string
}

func (l *fuseLegs) names() []string {
	ns := make([]string, 0, len(l.hits))
	for n := range l.hits {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	return ns
}

// parseFuseInput decodes {"legs": {"<leg>": [{"id", "score", "rank", "content"}, ...]}}.
func parseFuseInput(in []byte) (*fuseLegs, error) {
	dec := json.NewDecoder(bytes.NewReader(in))
	var top map[string]json.RawMessage
	if err := dec.Decode(&top); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, usagef("input is empty: want {\"legs\": {\"<leg>\": [{\"id\": ..., \"score\": ...}, ...]}}")
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, usagef("input is a JSON %s: want an object {\"legs\": {...}}", te.Value)
		}
		return nil, usagef("input is not valid JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, usagef("input has data after the JSON object")
	}
	rawLegs, ok := top["legs"]
	if !ok {
		return nil, usagef("input has no \"legs\" object")
	}
	var legMap map[string]json.RawMessage
	if err := json.Unmarshal(rawLegs, &legMap); err != nil || legMap == nil {
		return nil, usagef("input \"legs\" must be an object mapping leg names to lists of hits")
	}
	out := &fuseLegs{
		hits: map[string][]mnemotype.Hit{}, scored: map[string]map[string]bool{},
		allScored: true, content: map[string]string{},
	}
	legNames := make([]string, 0, len(legMap))
	for n := range legMap {
		legNames = append(legNames, n)
	}
	slices.Sort(legNames)
	for _, leg := range legNames {
		if strings.TrimSpace(leg) == "" {
			return nil, usagef("input: a leg has an empty name")
		}
		var items []json.RawMessage
		if err := json.Unmarshal(legMap[leg], &items); err != nil {
			return nil, usagef("input: leg %q must be a list of hits", leg)
		}
		hits, scored, err := parseFuseLeg(leg, items, out)
		if err != nil {
			return nil, err
		}
		out.hits[leg], out.scored[leg] = hits, scored
	}
	return out, nil
}

func parseFuseLeg(leg string, items []json.RawMessage, out *fuseLegs) ([]mnemotype.Hit, map[string]bool, error) {
	hits := make([]mnemotype.Hit, len(items))
	scored := make(map[string]bool, len(items))
	hasScore := make([]bool, len(items))
	withRank := 0
	for i, raw := range items {
		where := fmt.Sprintf("input: leg %q, hit %d", leg, i+1)
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			return nil, nil, usagef("%s: must be an object with an \"id\"", where)
		}
		id, err := fuseParseID(obj["id"])
		if err != nil {
			return nil, nil, usagef("%s: %v", where, err)
		}
		where = fmt.Sprintf("input: leg %q, hit %d (id %q)", leg, i+1, id)
		if _, dup := scored[id]; dup {
			return nil, nil, usagef("%s: id listed twice in the leg", where)
		}
		hits[i].ID = id
		if s, ok := obj["score"]; ok && !fuseIsNull(s) {
			v, err := fuseParseNumber(s)
			if err != nil {
				return nil, nil, usagef("%s: score %s %v", where, s, err)
			}
			hits[i].Score, hasScore[i] = v, true
		} else if out.allScored {
			out.allScored = false
			out.unscored = fmt.Sprintf("leg %q hit %d (id %q) has no score", leg, i+1, id)
		}
		scored[id] = hasScore[i]
		if r, ok := obj["rank"]; ok && !fuseIsNull(r) {
			v, err := fuseParseNumber(r)
			if err != nil || v < 1 || v != math.Trunc(v) || v > math.MaxInt32 {
				return nil, nil, usagef("%s: rank %s: must be an integer ≥ 1", where, r)
			}
			hits[i].Rank = int(v)
			withRank++
		}
		if c, ok := obj["content"]; ok && !fuseIsNull(c) {
			var text string
			if err := json.Unmarshal(c, &text); err != nil {
				return nil, nil, usagef("%s: content must be a string", where)
			}
			if _, seen := out.content[id]; !seen {
				out.content[id] = text
			}
		}
	}
	switch {
	case withRank == len(hits):
		for i := 1; i < len(hits); i++ {
			if hits[i].Rank < hits[i-1].Rank {
				return nil, nil, usagef("input: leg %q: ranks must not decrease down the list (hit %d has rank %d after rank %d)", leg, i+1, hits[i].Rank, hits[i-1].Rank)
			}
		}
	case withRank > 0:
		return nil, nil, usagef("input: leg %q: give a rank to every hit or to none", leg)
	default:
		// Dense positions: equal consecutive scores share a rank.
		prev := -1
		for i := range hits {
			switch {
			case i == 0:
				hits[i].Rank = 1
			case hasScore[i] && hasScore[i-1] && hits[i].Score == hits[i-1].Score:
				hits[i].Rank = hits[i-1].Rank
			default:
				hits[i].Rank = hits[i-1].Rank + 1
			}
			if hasScore[i] {
				if prev >= 0 && hits[i].Score > hits[prev].Score {
					return nil, nil, usagef("input: leg %q: scores must not increase down the list (hit %d scores %v after %v): lists are in rank order and a higher score is better", leg, i+1, hits[i].Score, hits[prev].Score)
				}
				prev = i
			}
		}
	}
	return hits, scored, nil
}

func fuseIsNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// parseID accepts a non-empty string or a number (kept as written).
func fuseParseID(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || fuseIsNull(raw) {
		return "", errors.New("missing \"id\"")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		if strings.TrimSpace(s) == "" {
			return "", errors.New("\"id\" is empty")
		}
		return s, nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err == nil {
		return n.String(), nil
	}
	return "", fmt.Errorf("\"id\" %s: must be a string or a number", raw)
}

// parseNumber decodes a JSON number that fits a finite float64.
func fuseParseNumber(raw json.RawMessage) (float64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || (raw[0] != '-' && (raw[0] < '0' || raw[0] > '9')) {
		return 0, errors.New("is not a number") // json.Number would accept "1.5" quoted
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, errors.New("is not a number")
	}
	v, err := strconv.ParseFloat(n.String(), 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, errors.New("is not a finite number")
	}
	return v, nil
}

// JSON output shapes.
type fuseJSON struct {
	Strategy      fusion.Strategy      `json:"strategy"`
	Requested     fusion.Strategy      `json:"requested_strategy"`
	Switches      []string             `json:"switches"`
	Intent        fusion.Intent        `json:"intent,omitempty"`
	Weights       map[string]float64   `json:"weights"`
	K             float64              `json:"k"`
	BordaK        float64              `json:"borda_k"`
	KParam        float64              `json:"kparam"`
	Normalization fusion.Normalization `json:"normalization,omitempty"`
	Missing       fusion.MissingPolicy `json:"missing"`
	ExactTerms    []string             `json:"exact_terms,omitempty"`
	Results       []fuseResultJSON     `json:"results"`
}

type fuseResultJSON struct {
	ID             string                 `json:"id"`
	Score          float64                `json:"score"`
	Rank           int                    `json:"rank"`
	Legs           map[string]fuseLegJSON `json:"legs"`
	Imputed        map[string]fuseLegJSON `json:"imputed,omitempty"`
	Bonus          float64                `json:"bonus,omitempty"`
	Counterfactual map[string]int         `json:"counterfactual"`
}

type fuseLegJSON struct {
	Rank         int      `json:"rank"`
	Score        *float64 `json:"score,omitempty"`
	Normalized   *float64 `json:"normalized,omitempty"`
	Contribution float64  `json:"contribution"`
}

func fuseLegDetail(d mnemotype.LegDetail, hasScore, usesScores bool) fuseLegJSON {
	j := fuseLegJSON{Rank: d.Rank, Contribution: d.Contribution}
	if hasScore {
		j.Score = &d.Score
	}
	if usesScores {
		j.Normalized = &d.Normalized
	}
	return j
}

func writeFuseJSON(w io.Writer, out fusion.Outcome, legs *fuseLegs) error {
	j := fuseJSON{
		Strategy: out.Strategy, Requested: out.Requested, Switches: out.Switches, Intent: out.Intent,
		Weights: out.Weights, K: out.K, BordaK: out.BordaK, KParam: out.KParam,
		Normalization: out.Normalization, Missing: out.Missing, ExactTerms: out.ExactTerms,
		Results: make([]fuseResultJSON, len(out.Results)),
	}
	if j.Switches == nil {
		j.Switches = []string{}
	}
	uses := out.Strategy.UsesScores()
	for i, r := range out.Results {
		rj := fuseResultJSON{
			ID: r.ID, Score: r.Score, Rank: r.Rank, Bonus: r.Bonus,
			Legs: make(map[string]fuseLegJSON, len(r.Legs)), Counterfactual: r.Counterfactual,
		}
		for leg, d := range r.Legs {
			rj.Legs[leg] = fuseLegDetail(d, legs.scored[leg][r.ID], uses)
		}
		for leg, d := range r.Imputed {
			if rj.Imputed == nil {
				rj.Imputed = map[string]fuseLegJSON{}
			}
			rj.Imputed[leg] = fuseLegDetail(d, out.Missing == fusion.MissingImputeMin && legs.allScored, uses)
		}
		if rj.Counterfactual == nil {
			rj.Counterfactual = map[string]int{}
		}
		j.Results[i] = rj
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(j)
}

func fuseNum(v float64) string { return strconv.FormatFloat(v, 'g', 6, 64) }

func writeFuseTable(w io.Writer, out fusion.Outcome, legs *fuseLegs) error {
	var b strings.Builder
	param := ""
	switch out.Strategy {
	case fusion.RRF:
		param = " (k=" + fuseNum(out.K) + ")"
	case fusion.BordaRank:
		param = " (k=" + fuseNum(out.BordaK) + ")"
	case fusion.ScoreWeightedRRF:
		param = " (kparam=" + fuseNum(out.KParam) + ")"
	}
	fmt.Fprintf(&b, "strategy       %s%s", out.Strategy, param)
	if out.Requested != out.Strategy {
		fmt.Fprintf(&b, " (requested %s)", out.Requested)
	}
	b.WriteString("\n")
	if out.Normalization != "" {
		fmt.Fprintf(&b, "normalization  %s\n", out.Normalization)
	}
	fmt.Fprintf(&b, "missing        %s\n", out.Missing)
	legNames := legs.names()
	ws := make([]string, len(legNames))
	for i, n := range legNames {
		ws[i] = n + "=" + fuseNum(out.Weights[n])
	}
	fmt.Fprintf(&b, "weights        %s\n", strings.Join(ws, " "))
	sw := "none"
	if len(out.Switches) > 0 {
		sw = strings.Join(out.Switches, ", ")
		if out.Intent != "" {
			sw += " (intent " + string(out.Intent) + ")"
		}
	}
	fmt.Fprintf(&b, "switches       %s\n", sw)
	if len(out.ExactTerms) > 0 {
		fmt.Fprintf(&b, "exact terms    %s\n", strings.Join(out.ExactTerms, ", "))
	}
	b.WriteString("\n")

	var cf []string
	for _, s := range fusion.Strategies() {
		if len(out.Results) > 0 {
			if _, ok := out.Results[0].Counterfactual[string(s)]; ok {
				cf = append(cf, string(s))
			}
		}
	}
	hasBonus, hasImputed := false, false
	for _, r := range out.Results {
		hasBonus = hasBonus || r.Bonus != 0
		hasImputed = hasImputed || len(r.Imputed) > 0
	}
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', 0)
	head := []string{"RANK", "ID", "SCORE"}
	for _, n := range legNames {
		head = append(head, n)
	}
	if hasBonus {
		head = append(head, "bonus")
	}
	for _, s := range cf {
		head = append(head, "if "+s)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t"))
	uses := out.Strategy.UsesScores()
	for _, r := range out.Results {
		row := []string{strconv.Itoa(r.Rank), r.ID, fuseNum(r.Score)}
		for _, n := range legNames {
			cell := "-"
			if d, ok := r.Legs[n]; ok {
				cell = "#" + strconv.Itoa(d.Rank)
				if uses {
					cell += " n=" + fuseNum(d.Normalized)
				}
				cell += " +" + fuseNum(d.Contribution)
			} else if d, ok := r.Imputed[n]; ok {
				cell = "~#" + strconv.Itoa(d.Rank)
				if uses {
					cell += " n=" + fuseNum(d.Normalized)
				}
				cell += " +" + fuseNum(d.Contribution)
			}
			row = append(row, cell)
		}
		if hasBonus {
			bonus := "-"
			if r.Bonus != 0 {
				bonus = "+" + fuseNum(r.Bonus)
			}
			row = append(row, bonus)
		}
		for _, s := range cf {
			row = append(row, strconv.Itoa(r.Counterfactual[s]))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(out.Results) == 0 {
		b.WriteString("(no results)\n")
	}
	b.WriteString("\nleg cells: #rank")
	if uses {
		b.WriteString(" n=normalised score")
	}
	b.WriteString(" +contribution")
	if hasImputed {
		b.WriteString("; ~ marks a value imputed by the missing policy")
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
