package fusion

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// Defaults. A zero value in Params means the matching default.
const (
	// DefaultK is RRF's smoothing constant k in Σ wᵢ / (k + rᵢ) (Cormack et
	// al. 2009; seeds 000, 001, 003).
	DefaultK = 60.0
	// DefaultBordaK is BordaRank's constant, the legacy k.
	DefaultBordaK = 60.0
	// DefaultKParam is ScoreWeightedRRF's rank offset kParam in
	// Σ wᵢ · nᵢ / (rᵢ + kParam).
	DefaultKParam = 5.0
	// DefaultWeight is the weight of a leg that Params.Weights does not mention.
	DefaultWeight = 1.0
	// DefaultHighConfidenceThreshold is the top dense score at or above which
	// the high-confidence shortcut switches to MaxConfidence.
	DefaultHighConfidenceThreshold = 0.75
	// DefaultExactMatchBonus is a suggested Params.ExactMatchBonus for callers
	// that turn the bonus on: a tenth of the strongest single-leg
	// contribution. Under RRF with k = 60 that is 0.1/61 ≈ 0.0016, about
	// what moving from rank 7 to rank 1 in one leg is worth.
	DefaultExactMatchBonus = 0.1
)

// Names of the automatic switches, as reported in Outcome.Switches.
const (
	// SwitchHighConfidence fired: the top dense score reached
	// Params.HighConfidenceThreshold, so MaxConfidence was used.
	SwitchHighConfidence = "high_confidence"
	// SwitchAdaptiveWeights fired: the dense and lexical weights were set from
	// the query's intent (see IntentWeights).
	SwitchAdaptiveWeights = "adaptive_weights"
)

// Params configures one fusion. The zero value is valid and means weighted RRF
// with k = 60 and every leg weighted 1. Settings hold the defaults; a request
// overrides any field. Params is read-only to Fuse.
type Params struct {
	// Strategy selects the formula (see Strategy). Defaults to RRF.
	Strategy Strategy
	// Weights maps a leg name to its weight (finite, ≥ 0). A leg absent from
	// the map gets DefaultWeight; a leg with weight 0 contributes nothing and
	// admits nothing, exactly as if it were absent.
	Weights map[string]float64
	// K is RRF's constant (finite, > 0). Defaults to DefaultK.
	K float64
	// BordaK is BordaRank's constant (finite, > 0). Defaults to DefaultBordaK.
	BordaK float64
	// KParam is ScoreWeightedRRF's rank offset (finite, > 0). Defaults to
	// DefaultKParam.
	KParam float64
	// Normalization maps raw scores to [0, 1] for the score-based strategies
	// WeightedAverage, ScoreWeightedRRF and MaxConfidence (RRF and BordaRank
	// read no scores; DBSF has its own). Defaults to NormMinMax.
	Normalization Normalization
	// Missing says what a leg contributes for an item it did not list.
	// Defaults to MissingZero.
	Missing MissingPolicy
	// LowerBounds optionally fixes, per leg, the low end of the range used by
	// NormMinMax and NormTMM (finite): n = (s − L) / (max − L), scores below
	// L get NormFloor. Use it so a leg whose hits are all weak (say cosine
	// 0.10 to 0.12) is not stretched to the full [0, 1] range.
	LowerBounds map[string]float64
	// Bounds gives, per leg, the theoretical score range used by NormTMM
	// (finite, Min < Max), over DefaultBounds (dense: [−1, 1]). A leg with
	// no known bounds falls back to NormMinMax.
	Bounds map[string]Range
	// HighConfidence turns on the high-confidence shortcut: when the
	// dense leg's top raw score is ≥ HighConfidenceThreshold, MaxConfidence
	// is used instead of Strategy (Outcome.Switches then holds
	// SwitchHighConfidence). Off by default; callers honouring an explicit
	// per-request strategy should leave it off for that request. (An intent-gated
	// variant at 0.70 is also possible; mnemo keeps a single
	// threshold so the switch stays predictable.)
	HighConfidence bool
	// HighConfidenceThreshold is the shortcut's threshold on the dense leg's
	// raw score (finite). Defaults to DefaultHighConfidenceThreshold.
	HighConfidenceThreshold float64
	// AdaptiveWeights turns on query-adaptive weights: the intent of Query
	// (DetectIntent) sets the split of the dense and lexical weights by seed
	// 002's table (IntentWeights), keeping the pair's total:
	//
	//	w_dense' = (w_dense + w_lexical) · share_dense(intent)
	//	w_lexical' = (w_dense + w_lexical) · share_lexical(intent)
	//
	// Keeping the total keeps the pair's balance with the other legs
	// (recency, access). It applies only when both legs are active (weight
	// > 0 and at least one hit: a disabled leg stays disabled, and a split
	// means nothing with one leg) and Query is not blank. Off by default.
	AdaptiveWeights bool
	// Query is the request's text, read by AdaptiveWeights and ExactMatchBonus.
	Query string
	// ExactMatchBonus, in [0, 1], adds to the fused score of every item whose
	// content (Contents) contains one of the query's ExactTerms (a quoted
	// phrase or an identifier, case-insensitive, on word boundaries) a bonus
	// of ExactMatchBonus × the strongest single-leg contribution possible
	// under the strategy used:
	//
	//	rrf: w_max/(k+1)   borda_rank: w_max/(k_borda+1)   weighted_average: w_max/W
	//	score_weighted_rrf: w_max/(1+kParam)   max_confidence: 1   dbsf: w_max
	//
	// so the bonus means the same under every strategy (an
	// exact-match rank bonus; with NormNone the score unit is the raw one). The bonus is added once per item however
	// many terms match. 0 (the default) turns it off; DefaultExactMatchBonus
	// is a reasonable value.
	ExactMatchBonus float64
	// Contents returns a candidate's content for the exact-match bonus; it is
	// called at most once per candidate, from the calling goroutine, and only
	// when ExactMatchBonus > 0 and the query has exact terms. Nil disables
	// the bonus.
	Contents func(id string) string
	// Counterfactual asks FuseExplain (and Fuse) to fill
	// Result.Counterfactual: each result's rank under every other strategy
	// (or under CounterfactualStrategies) on the same lists and parameters,
	// automatic switches aside. It costs one extra fusion per strategy.
	Counterfactual bool
	// NoDetails leaves Result.Legs and Result.Imputed nil, which saves two
	// allocations per candidate on the hot path of callers that do not trace;
	// scores and order are unchanged.
	NoDetails bool
	// DetailsTop, when > 0, builds Legs and Imputed only for the first
	// DetailsTop results (the rest are left nil, as with NoDetails): a
	// caller that returns a few results need not pay two maps for each of
	// hundreds of candidates. Scores and order are unchanged.
	DetailsTop int
	// DetailsFor builds Legs and Imputed for these ids too, wherever they
	// rank (a caller that found some results it returns without details
	// fuses again for them alone).
	DetailsFor map[string]bool
	// CounterfactualStrategies restricts the counterfactual trace to these
	// strategies (the one used is always skipped). Empty means Strategies().
	CounterfactualStrategies []Strategy
}

func (p Params) withDefaults() Params {
	if p.Strategy == "" {
		p.Strategy = RRF
	}
	if p.K == 0 {
		p.K = DefaultK
	}
	if p.BordaK == 0 {
		p.BordaK = DefaultBordaK
	}
	if p.KParam == 0 {
		p.KParam = DefaultKParam
	}
	if p.Normalization == "" {
		p.Normalization = NormMinMax
	}
	if p.Missing == "" {
		p.Missing = MissingZero
	}
	if p.HighConfidenceThreshold == 0 {
		p.HighConfidenceThreshold = DefaultHighConfidenceThreshold
	}
	return p
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// Validate reports an ErrInvalid error naming the first invalid parameter
// and its allowed values or range; zero values are valid (they mean the
// defaults).
func (p Params) Validate() error {
	p = p.withDefaults()
	if !p.Strategy.valid() {
		return mnemotype.Invalidf("strategy %q: must be one of %s", p.Strategy, joinNames(Strategies()))
	}
	if !p.Normalization.valid() {
		return mnemotype.Invalidf("normalization %q: must be one of %s", p.Normalization, joinNames(Normalizations()))
	}
	if !p.Missing.valid() {
		return mnemotype.Invalidf("missing policy %q: must be one of %s", p.Missing, joinNames(MissingPolicies()))
	}
	for _, c := range []struct {
		name string
		v    float64
	}{{"k", p.K}, {"borda k", p.BordaK}, {"kparam", p.KParam}} {
		if !isFinite(c.v) || c.v <= 0 {
			return mnemotype.Invalidf("%s = %v: must be a finite number > 0", c.name, c.v)
		}
	}
	for _, leg := range sortedKeys(p.Weights) {
		if w := p.Weights[leg]; !isFinite(w) || w < 0 {
			return mnemotype.Invalidf("weight %s = %v: must be a finite number ≥ 0", leg, w)
		}
	}
	for _, leg := range sortedKeys(p.LowerBounds) {
		if v := p.LowerBounds[leg]; !isFinite(v) {
			return mnemotype.Invalidf("lower bound %s = %v: must be a finite number", leg, v)
		}
	}
	for _, leg := range sortedKeys(p.Bounds) {
		if b := p.Bounds[leg]; !isFinite(b.Min) || !isFinite(b.Max) || b.Min >= b.Max {
			return mnemotype.Invalidf("bounds %s = [%v, %v]: must be finite numbers with min < max", leg, b.Min, b.Max)
		}
	}
	if !isFinite(p.HighConfidenceThreshold) {
		return mnemotype.Invalidf("high-confidence threshold = %v: must be a finite number", p.HighConfidenceThreshold)
	}
	if p.DetailsTop < 0 {
		return mnemotype.Invalidf("details top = %d: must be ≥ 0", p.DetailsTop)
	}
	if err := mnemotype.CheckUnit("exact-match bonus", p.ExactMatchBonus); err != nil {
		return err
	}
	for _, s := range p.CounterfactualStrategies {
		if !s.valid() {
			return mnemotype.Invalidf("counterfactual strategy %q: must be one of %s", s, joinNames(Strategies()))
		}
	}
	return nil
}

// Weight returns the configured weight of leg under p: Weights[leg], else
// DefaultWeight. (Query-adaptive weights are applied by Fuse; see
// Outcome.Weights for the weights actually used.)
func (p Params) Weight(leg string) float64 {
	if w, ok := p.Weights[leg]; ok {
		return w
	}
	return DefaultWeight
}

// Result is one fused item.
type Result struct {
	ID string `json:"id"`
	// Score is the fused score; higher is better. It is the sum of the
	// contributions in Legs and Imputed (their maximum under MaxConfidence)
	// plus Bonus.
	Score float64 `json:"score"`
	// Rank is the 1-based position in the fused output.
	Rank int `json:"rank"`
	// BestRank is the smallest rank the item holds in any leg that listed
	// it, the tie-breaker after Score (0 when unknown: Sort then reads Legs).
	BestRank int `json:"best_rank"`
	// Legs holds, for every active leg that listed the item, its rank, raw
	// score, normalised score (score-based strategies only) and contribution
	// to Score (after MissingRenormalize's rescaling). Nil with
	// Params.NoDetails.
	Legs map[string]mnemotype.LegDetail `json:"legs"`
	// Imputed holds, for active legs that did not list the item but to which
	// the missing policy gave a non-zero contribution (MissingImputeMin,
	// MissingImputeRank), the imputed rank, raw score, normalised score and
	// contribution. Nil otherwise, and with Params.NoDetails.
	Imputed map[string]mnemotype.LegDetail `json:"imputed,omitempty"`
	// Bonus is the exact-match bonus included in Score (0 when none).
	Bonus float64 `json:"bonus,omitempty"`
	// Counterfactual maps another strategy's name to the item's rank under
	// it, when Params.Counterfactual is set; nil otherwise.
	Counterfactual map[string]int `json:"counterfactual,omitempty"`
}

// Outcome is a fusion with its explanation: what was actually computed.
type Outcome struct {
	// Strategy is the strategy used, after the automatic switches.
	Strategy Strategy `json:"strategy"`
	// Requested is Params.Strategy (with its default applied).
	Requested Strategy `json:"requested_strategy"`
	// Switches names the automatic switches that fired, in the order applied
	// (SwitchAdaptiveWeights, SwitchHighConfidence); nil when none.
	Switches []string `json:"switches,omitempty"`
	// Intent is the query's detected intent when AdaptiveWeights is on.
	Intent Intent `json:"intent,omitempty"`
	// Weights maps every input leg to the weight used (after adaptive
	// weights; 0 for disabled legs). WeightedAverage divides them by W.
	Weights map[string]float64 `json:"weights"`
	// K, BordaK and KParam are the constants in force.
	K      float64 `json:"k"`
	BordaK float64 `json:"borda_k"`
	KParam float64 `json:"kparam"`
	// Normalization is the normalization applied to scores: empty for the
	// rank-only strategies, NormDBSF for DBSF, Params.Normalization otherwise.
	Normalization Normalization `json:"normalization,omitempty"`
	// Missing is the missing-leg policy applied.
	Missing MissingPolicy `json:"missing"`
	// ExactTerms are the query terms the exact-match bonus looked for (when on).
	ExactTerms []string `json:"exact_terms,omitempty"`
	// Results are the fused items, best first.
	Results []Result `json:"results"`
}

// Fuse merges legs (leg name → hits, each with Rank ≥ 1 filled, see
// DenseRanks) into one list sorted best first, as FuseExplain does, and
// returns only the results. It returns an ErrInvalid error for invalid
// parameters or hits.
func Fuse(legs map[string][]mnemotype.Hit, p Params) ([]Result, error) {
	out, err := FuseExplain(legs, p)
	if err != nil {
		return nil, err
	}
	return out.Results, nil
}

// FuseExplain merges legs (leg name → hits; every hit needs a non-empty ID,
// Rank ≥ 1 and a finite Score, higher is better) into one list, best first,
// and explains it. The candidates are the union of the active legs' hits; a
// leg that lists an id more than once keeps its best rank. The order is total:
// fused score descending, then (MaxConfidence only) the sum of normalised
// scores, then the item's best rank in any leg, then id — so the output is
// deterministic and does not depend on map iteration or on the order of tied
// hits. Inputs are not modified.
//
// Steps: validate; apply adaptive weights (Params.AdaptiveWeights); apply the
// high-confidence shortcut (Params.HighConfidence); score every candidate by
// the strategy, the normalization and the missing-leg policy; add the
// exact-match bonus; sort; when Params.Counterfactual is set, rank the same
// candidates under the other strategies.
//
// It returns an ErrInvalid error naming the parameter or hit that is invalid.
func FuseExplain(legs map[string][]mnemotype.Hit, p Params) (Outcome, error) {
	if err := p.Validate(); err != nil {
		return Outcome{}, err
	}
	p = p.withDefaults()
	out := Outcome{
		Strategy: p.Strategy, Requested: p.Strategy, Missing: p.Missing,
		K: p.K, BordaK: p.BordaK, KParam: p.KParam,
	}

	// Adaptive weights: the pair's total is kept, the split follows the intent.
	weight := p.Weight
	if p.AdaptiveWeights {
		wd, wl := p.Weight(mnemotype.LegDense), p.Weight(mnemotype.LegLexical)
		both := wd > 0 && wl > 0 && len(legs[mnemotype.LegDense]) > 0 && len(legs[mnemotype.LegLexical]) > 0
		if both && strings.TrimSpace(p.Query) != "" {
			in := DetectIntent(p.Query)
			sd, sl := IntentWeights(in)
			nd, nl := finite((wd+wl)*sd), finite((wd+wl)*sl)
			weight = func(leg string) float64 {
				switch leg {
				case mnemotype.LegDense:
					return nd
				case mnemotype.LegLexical:
					return nl
				}
				return p.Weight(leg)
			}
			out.Intent = in
			out.Switches = append(out.Switches, SwitchAdaptiveWeights)
		}
	}
	out.Weights = make(map[string]float64, len(legs))
	for leg := range legs {
		out.Weights[leg] = weight(leg)
	}

	var e engine
	e.names = make([]string, 0, len(legs))
	if err := e.prepare(legs, p, weight); err != nil {
		return Outcome{}, err
	}

	if p.HighConfidence {
		if li := e.leg(mnemotype.LegDense); li >= 0 && e.legs[li].stats.max >= p.HighConfidenceThreshold {
			out.Strategy = MaxConfidence
			out.Switches = append(out.Switches, SwitchHighConfidence)
		}
	}

	if p.ExactMatchBonus > 0 && p.Contents != nil {
		out.ExactTerms = ExactTerms(p.Query)
		e.markExact(out.ExactTerms, p.Contents)
	}

	switch {
	case !out.Strategy.UsesScores():
	case out.Strategy == DBSF:
		out.Normalization = NormDBSF
	default:
		out.Normalization = p.Normalization
	}

	e.run(out.Strategy, !p.NoDetails)
	out.Results = e.results(out.Strategy)

	if p.Counterfactual {
		e.counterfactual(out.Strategy, out.Results)
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// bestRank is the smallest rank an item holds in any leg that listed it:
// r.BestRank when set, else the smallest rank in r.Legs.
func bestRank(r *Result) int {
	if r.BestRank > 0 {
		return r.BestRank
	}
	best := math.MaxInt
	for _, d := range r.Legs {
		if d.Rank < best {
			best = d.Rank
		}
	}
	return best
}

// Sort orders results by Score descending, then best leg rank (BestRank, or
// the smallest rank in Legs), then id, and renumbers Rank from 1. (FuseExplain's MaxConfidence tie-breaker on the sum
// of normalised scores is not available here: Sort sees only Results.)
func Sort(res []Result) {
	slices.SortStableFunc(res, func(a, b Result) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		if c := cmp.Compare(bestRank(&a), bestRank(&b)); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	for i := range res {
		res[i].Rank = i + 1
	}
}

// DenseRanks assigns 1-based dense ranks to hits by Score (higher is better):
// equal scores share a rank and ranks have no gaps. It returns a
// new slice sorted by Score descending, then id.
func DenseRanks(hits []mnemotype.Hit) []mnemotype.Hit {
	out := append([]mnemotype.Hit(nil), hits...)
	slices.SortStableFunc(out, mnemotype.CompareHits)
	rank := 0
	for i := range out {
		if i == 0 || out[i].Score != out[i-1].Score {
			rank++
		}
		out[i].Rank = rank
	}
	return out
}
