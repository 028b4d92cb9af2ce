package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/server/httpapi"
)

// listFlag collects a repeatable flag whose values may also be
// comma-separated.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

// parseWeights parses "lexical=1,dense=0.5" into settings overrides.
func parseWeights(s string, into map[string]string) error {
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		leg, val, ok := strings.Cut(part, "=")
		if !ok {
			return usagef("--weights %q: want leg=weight pairs such as lexical=1,dense=0.5", s)
		}
		key, ok := mnemo.LegWeightKey(leg)
		if !ok {
			return usagef("--weights: unknown leg %q: must be one of %s", leg, strings.Join(mnemotype.Legs, ", "))
		}
		w, err := parseFloat(val)
		if err != nil {
			return usagef("--weights: weight %s = %q: must be a number in [0, %g]", leg, val, mnemo.MaxWeight)
		}
		if err := mnemotype.CheckRange("weight "+strings.TrimSpace(leg), w, 0, mnemo.MaxWeight); err != nil {
			return err
		}
		into[key] = strconv.FormatFloat(w, 'g', -1, 64)
	}
	return nil
}

func cmdRecall(ctx context.Context, a *app, args []string) error {
	fs := newFlags(a, "recall")
	var ef engineFlags
	ef.register(fs)
	profile := fs.String("profile", a.getenv("MNEMO_PROFILE"), "profile to recall from (required) (default $MNEMO_PROFILE)")
	project := fs.String("project", "", "restrict to a project")
	var sessions, kinds, exclude listFlag
	fs.Var(&sessions, "session", "restrict to a session (repeatable, or comma-separated)")
	fs.Var(&kinds, "kind", "restrict to a kind: episodic, semantic, identity (repeatable)")
	fs.Var(&exclude, "exclude", "ids not to return, comma-separated")
	var actors listFlag
	fs.Var(&actors, "actor", "restrict to memories of this actor (repeatable, or comma-separated)")
	after := fs.String("after", "", "restrict to memories that occurred at or after this time (RFC 3339 or a date)")
	before := fs.String("before", "", "restrict to memories that occurred before this time (RFC 3339 or a date)")
	var meta metaFlag
	fs.Var(&meta, "meta", `restrict to memories whose metadata has KEY equal to VALUE (repeatable; VALUE 2 is a number, '"2"' a string, null also matches an absent KEY)`)
	limit := fs.Int("limit", mnemo.DefaultLimit, "number of memories to return")
	weights := fs.String("weights", "", "leg weights, e.g. lexical=1,dense=1,recency=0,access=0 (each in [0, 5])")
	var k optFloat
	fs.Var(&k, "k", "RRF k (default from settings, 60)")
	strategy := fs.String("strategy", "", "fusion strategy: rrf, borda_rank, weighted_average, score_weighted_rrf, max_confidence, dbsf (default from settings)")
	normalization := fs.String("normalization", "", "score normalization for score-based strategies: minmax, zscore, none, tmm, dbsf")
	missing := fs.String("missing", "", "missing-leg policy: zero, renormalize, impute_min, impute_rank")
	var kparam optFloat
	fs.Var(&kparam, "kparam", "score_weighted_rrf rank offset (default from settings, 5)")
	var minRel optFloat
	fs.Var(&minRel, "min-relevance", "drop results whose relevance is below this, in [0, 1]; 0 returns every result (default from settings, 0.2)")
	var autocut optInt
	fs.Var(&autocut, "autocut", "end the results before their n-th large gap in relevance, in [0, 10]; 0 is off (default from settings, 0)")
	trace := fs.Bool("trace", false, "explain: each leg's list, per-result contributions, per-stage timings")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprintln(a.stderr, "usage: mnemo recall --profile P [--project X] [--session S]... [--kind K] [--actor A]... [--after T] [--before T] [--meta KEY=VALUE]... [--limit N] [--exclude ID,...] [--weights lexical=1,dense=1,recency=0,access=0] [--k 60] [--min-relevance R] [--autocut N] [--trace] [--json] QUERY")
		fs.PrintDefaults()
	}
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if err := requireProfile(*profile); err != nil {
		return err
	}
	query := strings.Join(pos, " ")
	if strings.TrimSpace(query) == "" {
		return usagef("query is empty: pass what to recall as the argument")
	}
	if *limit < 1 || *limit > mnemo.MaxLimit {
		return usagef("--limit = %d: must be an integer in [1, %d]", *limit, mnemo.MaxLimit)
	}
	over := map[string]string{}
	if err := parseWeights(*weights, over); err != nil {
		return err
	}
	if k.set {
		over["rrf_k"] = strconv.FormatFloat(k.v, 'g', -1, 64)
	}
	if *strategy != "" {
		over["strategy"] = *strategy
	}
	if *normalization != "" {
		over["normalization"] = *normalization
	}
	if *missing != "" {
		over["missing_leg"] = *missing
	}
	if kparam.set {
		over["k_param"] = strconv.FormatFloat(kparam.v, 'g', -1, 64)
	}
	if minRel.set {
		if err := mnemotype.CheckRange("--min-relevance", minRel.v, 0, 1); err != nil {
			return usagef("%v", err)
		}
		over["min_relevance"] = strconv.FormatFloat(minRel.v, 'g', -1, 64)
	}
	if autocut.set {
		if autocut.v < 0 || autocut.v > 10 {
			return usagef("--autocut = %d: must be an integer in [0, 10]", autocut.v)
		}
		over["autocut"] = strconv.FormatInt(autocut.v, 10)
	}
	// The timings come with what the relevance floor dropped, which an
	// empty answer explains.
	q := mnemo.Query{Text: query, Profile: *profile, Project: *project, Sessions: sessions, Exclude: exclude, Actors: actors,
		Metadata: meta, Limit: *limit, Overrides: over, Trace: *trace, Timings: true}
	for _, b := range []struct {
		flag, v string
		into    *time.Time
	}{{"--after", *after, &q.After}, {"--before", *before, &q.Before}} {
		if b.v != "" {
			t, err := parseTime(b.flag, b.v)
			if err != nil {
				return err
			}
			*b.into = t
		}
	}
	for _, s := range kinds {
		kd, err := mnemotype.ParseKind(s)
		if err != nil {
			return err
		}
		q.Kinds = append(q.Kinds, kd)
	}
	if err := q.Validate(); err != nil {
		return err
	}
	e, err := ef.openExisting(a)
	if err != nil {
		return err
	}
	res, rerr := e.Recall(ctx, q)
	if rerr == nil && len(res.Results) == 0 {
		if res.Trace != nil && res.Trace.Relevance != nil && res.Trace.Relevance.BelowMin > 0 {
			rt := res.Trace.Relevance
			fmt.Fprintf(a.stderr, "mnemo: nothing relevant enough: %d result(s) below the minimum relevance %g (answerable %.3f, by %s); --min-relevance 0 shows them\n",
				rt.BelowMin, rt.MinRelevance, rt.Answerable, rt.Basis)
		} else {
			emptyProfileHint(ctx, a, e, ef.db, q.Profile)
		}
	}
	if rerr == nil && !*trace {
		res.Trace = nil
	}
	if err := e.Close(); rerr == nil && err != nil {
		return err
	}
	if rerr != nil {
		return rerr
	}
	if *asJSON {
		return writeJSON(a, httpapi.NewRecallResponse(res))
	}
	return printRecall(a.stdout, res)
}

func printRecall(w io.Writer, res *mnemo.RecallResult) error {
	if len(res.Results) == 0 {
		fmt.Fprintln(w, "no memories found")
	}
	for _, r := range res.Results {
		names := make([]string, 0, len(r.Legs))
		for n := range r.Legs {
			names = append(names, n)
		}
		sort.Strings(names)
		var legs []string
		for _, n := range names {
			legs = append(legs, fmt.Sprintf("%s#%d", n, r.Legs[n].Rank))
		}
		fmt.Fprintf(w, "%2d. %.5f  relevance %.2f  %s  [%s]\n    %s\n", r.Rank, r.Score, r.Relevance, r.ID, strings.Join(legs, " "), oneLine(r.Content, 200))
		if res.Trace != nil && len(r.Counterfactual) > 0 {
			strats := make([]string, 0, len(r.Counterfactual))
			for st := range r.Counterfactual {
				strats = append(strats, st)
			}
			sort.Strings(strats)
			var cf []string
			for _, st := range strats {
				cf = append(cf, fmt.Sprintf("%s#%d", st, r.Counterfactual[st]))
			}
			fmt.Fprintf(w, "    under other strategies: %s\n", strings.Join(cf, " "))
		}
	}
	if t := res.Trace; t != nil {
		fmt.Fprintf(w, "\ntrace: strategy=%s (requested %s) k=%g normalization=%s missing=%s policy=%s terms=%q lexical=%s candidates=%d\n",
			t.Strategy, t.Requested, t.K, t.Normalization, t.Missing, t.Policy, t.Terms, t.LexicalOp, t.Candidates)
		if len(t.Switches) > 0 {
			fmt.Fprintf(w, "  switches fired: %s (intent %s)\n", strings.Join(t.Switches, ", "), t.Intent)
		}
		for leg, why := range t.Skipped {
			fmt.Fprintf(w, "  %s skipped: %s\n", leg, why)
		}
		stages := make([]string, 0, len(t.Timings))
		for s := range t.Timings {
			stages = append(stages, s)
		}
		sort.Strings(stages)
		for _, s := range stages {
			fmt.Fprintf(w, "  %-12s %8.3f ms\n", s, t.Timings[s])
		}
	}
	return nil
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// emptyProfileHint tells, on stderr, when a recall found nothing because
// its profile holds no memories in the database it opened, naming the
// profiles there closest to the one asked for (a typo, most likely).
func emptyProfileHint(ctx context.Context, a *app, e *mnemo.Engine, db, profile string) {
	if n, err := e.Count(ctx, profile); err != nil || n > 0 {
		return
	}
	path, _ := a.dbPath(db)
	msg := fmt.Sprintf("mnemo recall: profile %q holds no memories in %s", profile, path)
	ps, err := e.Profiles(ctx)
	if err != nil || len(ps) == 0 {
		fmt.Fprintln(a.stderr, msg+" (nor does any other profile)")
		return
	}
	slices.SortStableFunc(ps, func(x, y mnemo.ProfileCount) int {
		return cmp.Compare(editDistance(profile, x.Profile), editDistance(profile, y.Profile))
	})
	var names []string
	for _, p := range ps[:min(5, len(ps))] {
		names = append(names, fmt.Sprintf("%s (%d)", p.Profile, p.Memories))
	}
	fmt.Fprintf(a.stderr, "%s; profiles there, closest first: %s\n", msg, strings.Join(names, ", "))
}

// editDistance is the Levenshtein distance between a and b, in runes.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	prev := make([]int, len(y)+1)
	cur := make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(y)]
}
