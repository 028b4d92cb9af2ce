package mnemo

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/mnemo-dev/mnemo/fusion"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/recall"
	"github.com/mnemo-dev/mnemo/store"
)

// MaxWeight is the largest weight a leg may have.
const MaxWeight = 5.0

// Settings are the live, per-profile tunables of recall. Stored settings of
// a profile override the engine's defaults key by key; a request may
// override them again. JSON names are snake_case; the camelCase
// (semanticWeight, keywordWeight), which earlier releases used, is a
// deprecated alias (SettingKey).
type Settings struct {
	// KeywordWeight is the lexical (BM25) leg's weight in [0, 5]. 0 skips the leg.
	KeywordWeight float64 `json:"keyword_weight"`
	// SemanticWeight is the dense (embedding) leg's weight in [0, 5].
	// Defaults to 0.5: half the lexical weight, the middle of a plateau
	// (0.4–0.7) where the default strategy beats BM25 alone on locomo-dev
	// and stays level with it on scifact, whose technical vocabulary the
	// built-in GloVe embedder handles poorly (docs/eval/README.md).
	SemanticWeight float64 `json:"semantic_weight"`
	// RecencyWeight is the recency leg's weight in [0, 5].
	RecencyWeight float64 `json:"recency_weight"`
	// AccessWeight is the access-frequency leg's weight in [0, 5].
	AccessWeight float64 `json:"access_weight"`
	// RRFK is RRF's k, in [1, 1000].
	RRFK float64 `json:"rrf_k"`
	// Strategy is the fusion strategy. Defaults to weighted_average (a
	// convex combination of minmax-normalised scores): with the default
	// weights it beats rrf on both evaluation datasets, significantly —
	// locomo-dev nDCG@10 0.464 vs 0.454, scifact 0.701 vs 0.600 — and it is
	// the only one that is never below the better single leg on either
	// (docs/eval/README.md). Rank-only rrf lets a weak leg's rank 1 weigh
	// as much as a strong leg's, however flat the weak leg's scores are.
	Strategy string `json:"strategy"`
	// FetchMultiplier: each leg fetches limit × fetch_multiplier, in [1, 20].
	FetchMultiplier int `json:"fetch_multiplier"`
	// ImportanceMode is multiplier, boost or off.
	ImportanceMode string `json:"importance_mode"`
	// CandidatePolicy is scope (exact search over the scope) or pool.
	CandidatePolicy string `json:"candidate_policy"`
	// LexicalCap is the pool policy's lexical hit cap, in [1, 10000].
	LexicalCap int `json:"lexical_cap"`
	// PoolSize is the pool policy's recently-accessed window, in [1, 100000].
	PoolSize int `json:"pool_size"`
	// Normalization maps scores to [0, 1] for the score-based strategies:
	// minmax, zscore, none, tmm or dbsf. Defaults to minmax, the best of
	// them under weighted_average on both evaluation datasets.
	Normalization string `json:"normalization"`
	// KParam is score_weighted_rrf's rank offset, in (0, 1000].
	KParam float64 `json:"k_param"`
	// BordaK is borda_rank's k, in (0, 1000].
	BordaK float64 `json:"borda_k"`
	// MissingLeg is what a leg contributes for a candidate it did not list:
	// zero, renormalize, impute_min or impute_rank.
	MissingLeg string `json:"missing_leg"`
	// HighConfidence turns on the shortcut to max_confidence when the
	// top dense score reaches HighConfidenceThreshold.
	HighConfidence bool `json:"high_confidence"`
	// HighConfidenceThreshold is that threshold, in [-1, 1].
	HighConfidenceThreshold float64 `json:"high_confidence_threshold"`
	// AdaptiveWeights splits the lexical and dense weights by the query's
	// detected intent (table).
	AdaptiveWeights bool `json:"adaptive_weights"`
	// ExactMatchBonus, in [0, 1], rewards memories containing the query's
	// quoted phrase or identifier; 0 is off.
	ExactMatchBonus float64 `json:"exact_match_bonus"`
	// ActorFieldWeight, TimeFieldWeight and ContextFieldWeight, each in
	// [0, 5], weigh fields of the lexical leg against the content's 1
	// (BM25F): who said it, when it happened in words ("Monday 8 May
	// 2023"), and the previous turn of its session. 0 leaves the field
	// out of the search.
	ActorFieldWeight   float64 `json:"actor_field_weight"`
	TimeFieldWeight    float64 `json:"time_field_weight"`
	ContextFieldWeight float64 `json:"context_field_weight"`
	// NeighborRadius, in [0, 10], and NeighborShare, in [0, 1]: each of the
	// best fused candidates lends NeighborShare/distance of its score to
	// the turns of its session within NeighborRadius (the answer is often
	// the turn after the question that matches). 0 is off.
	NeighborRadius int     `json:"neighbor_radius"`
	NeighborShare  float64 `json:"neighbor_share"`
	// CollapseDuplicates keeps, of memories whose contents are the same
	// but for case, punctuation and spacing, the best-ranked alone; the
	// others are listed on it (Recalled.Duplicates) and the next results
	// take their places.
	CollapseDuplicates bool `json:"collapse_duplicates"`
	// MinRelevance, in [0, 1], drops results whose relevance estimate
	// (package relevance: the fitted probability that the query has an
	// answer in scope, times the result's share of the best score) is below
	// it; 0 keeps every result. A recall where nothing is relevant returns
	// nothing.
	MinRelevance float64 `json:"min_relevance"`
	// Autocut, in [0, 10], ends the results before their Autocut-th large
	// gap in relevance (relevance.Autocut: a drop of at least 0.1 and at
	// least twice the mean of the other drops); 0 is off.
	Autocut int `json:"autocut"`
	// RelevanceMargin, in [0, 1]: the importance prior reorders two results
	// only when their relevance differs by at most this much.
	RelevanceMargin float64 `json:"relevance_margin"`
}

// DefaultSettings returns the settings a new profile starts with.
func DefaultSettings() Settings {
	return Settings{
		KeywordWeight:   1,
		SemanticWeight:  0.5,
		RecencyWeight:   0,
		AccessWeight:    0,
		RRFK:            fusion.DefaultK,
		Strategy:        string(fusion.WeightedAverage),
		FetchMultiplier: recall.DefaultFetchMultiplier,
		ImportanceMode:  string(fusion.ImportanceMultiplier),
		CandidatePolicy: string(recall.PolicyScope),
		LexicalCap:      recall.DefaultLexicalCap,
		PoolSize:        recall.DefaultPoolSize,
		Normalization:   string(fusion.NormMinMax),
		KParam:          fusion.DefaultKParam,
		BordaK:          fusion.DefaultBordaK,
		MissingLeg:      string(fusion.MissingZero),

		HighConfidenceThreshold: fusion.DefaultHighConfidenceThreshold,

		ActorFieldWeight:   DefaultActorFieldWeight,
		TimeFieldWeight:    DefaultTimeFieldWeight,
		ContextFieldWeight: DefaultContextFieldWeight,
		NeighborRadius:     DefaultNeighborRadius,
		NeighborShare:      DefaultNeighborShare,
		CollapseDuplicates: true,
		MinRelevance:       DefaultMinRelevance,
		RelevanceMargin:    DefaultRelevanceMargin,
	}
}

// Defaults of the relevance floor and margin, chosen by the evaluation on
// locomo-dev and scifact (docs/eval/relevance.md has the figures): the
// floor answers 85% of queries without an answer in scope with nothing for
// 0.016 of recall@10; below the margin, the order of two results' relevance
// agrees with the judgments about as often as a coin.
const (
	DefaultMinRelevance    = 0.2
	DefaultRelevanceMargin = 0.02
)

// Defaults of the conversation-aware settings, chosen by the evaluation on
// locomo-dev (docs/eval/README.md, which has the figures). The context
// field scores only in a store that indexes context (sqlitestore's
// Options.ContextTurns; one turn in a new database).
const (
	DefaultActorFieldWeight   = 1.0
	DefaultTimeFieldWeight    = 1.0
	DefaultContextFieldWeight = 0.5
	DefaultNeighborRadius     = 1
	DefaultNeighborShare      = 0.6
)

// settingField binds one settings key to its field.
type settingField struct {
	name string
	get  func(*Settings) string
	set  func(*Settings, string) error
}

func floatField(name string, p func(*Settings) *float64, lo, hi float64) settingField {
	return settingField{
		name: name,
		get:  func(s *Settings) string { return strconv.FormatFloat(*p(s), 'g', -1, 64) },
		set: func(s *Settings, v string) error {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				return mnemotype.Invalidf("%s = %q: must be a number in [%g, %g]", name, v, lo, hi)
			}
			if err := mnemotype.CheckRange(name, f, lo, hi); err != nil {
				return err
			}
			*p(s) = f
			return nil
		},
	}
}

func intField(name string, p func(*Settings) *int, lo, hi int) settingField {
	return settingField{
		name: name,
		get:  func(s *Settings) string { return strconv.Itoa(*p(s)) },
		set: func(s *Settings, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < lo || n > hi {
				return mnemotype.Invalidf("%s = %q: must be an integer in [%d, %d]", name, v, lo, hi)
			}
			*p(s) = n
			return nil
		},
	}
}

func boolField(name string, p func(*Settings) *bool) settingField {
	return settingField{
		name: name,
		get:  func(s *Settings) string { return strconv.FormatBool(*p(s)) },
		set: func(s *Settings, v string) error {
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return mnemotype.Invalidf("%s = %q: must be true or false", name, v)
			}
			*p(s) = b
			return nil
		},
	}
}

// positiveField is a float in (0, hi].
func positiveField(name string, p func(*Settings) *float64, hi float64) settingField {
	f := floatField(name, p, 0, hi)
	set := f.set
	f.set = func(s *Settings, v string) error {
		if n, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && n <= 0 {
			return mnemotype.Invalidf("%s = %q: must be a number in (0, %g]", name, v, hi)
		}
		return set(s, v)
	}
	return f
}

func enumField(name string, p func(*Settings) *string, parse func(string) (string, error)) settingField {
	return settingField{
		name: name,
		get:  func(s *Settings) string { return *p(s) },
		set: func(s *Settings, v string) error {
			c, err := parse(strings.TrimSpace(v))
			if err != nil {
				return err
			}
			*p(s) = c
			return nil
		},
	}
}

func settingFields() []settingField {
	return []settingField{
		floatField("keyword_weight", func(s *Settings) *float64 { return &s.KeywordWeight }, 0, MaxWeight),
		floatField("semantic_weight", func(s *Settings) *float64 { return &s.SemanticWeight }, 0, MaxWeight),
		floatField("recency_weight", func(s *Settings) *float64 { return &s.RecencyWeight }, 0, MaxWeight),
		floatField("access_weight", func(s *Settings) *float64 { return &s.AccessWeight }, 0, MaxWeight),
		floatField("rrf_k", func(s *Settings) *float64 { return &s.RRFK }, 1, 1000),
		enumField("strategy", func(s *Settings) *string { return &s.Strategy }, func(v string) (string, error) {
			if v == "" {
				return "", mnemotype.Invalidf("strategy is empty: must be one of %s", strategyNames())
			}
			st, err := fusion.ParseStrategy(v)
			return string(st), err
		}),
		intField("fetch_multiplier", func(s *Settings) *int { return &s.FetchMultiplier }, 1, 20),
		enumField("importance_mode", func(s *Settings) *string { return &s.ImportanceMode }, func(v string) (string, error) {
			m, err := fusion.ParseImportanceMode(v)
			return string(m), err
		}),
		enumField("candidate_policy", func(s *Settings) *string { return &s.CandidatePolicy }, func(v string) (string, error) {
			p, err := recall.ParsePolicy(v)
			return string(p), err
		}),
		intField("lexical_cap", func(s *Settings) *int { return &s.LexicalCap }, 1, 10000),
		intField("pool_size", func(s *Settings) *int { return &s.PoolSize }, 1, 100000),
		enumField("normalization", func(s *Settings) *string { return &s.Normalization }, func(v string) (string, error) {
			n, err := fusion.ParseNormalization(v)
			return string(n), err
		}),
		positiveField("k_param", func(s *Settings) *float64 { return &s.KParam }, 1000),
		positiveField("borda_k", func(s *Settings) *float64 { return &s.BordaK }, 1000),
		enumField("missing_leg", func(s *Settings) *string { return &s.MissingLeg }, func(v string) (string, error) {
			m, err := fusion.ParseMissing(v)
			return string(m), err
		}),
		boolField("high_confidence", func(s *Settings) *bool { return &s.HighConfidence }),
		floatField("high_confidence_threshold", func(s *Settings) *float64 { return &s.HighConfidenceThreshold }, -1, 1),
		boolField("adaptive_weights", func(s *Settings) *bool { return &s.AdaptiveWeights }),
		floatField("exact_match_bonus", func(s *Settings) *float64 { return &s.ExactMatchBonus }, 0, 1),
		floatField("actor_field_weight", func(s *Settings) *float64 { return &s.ActorFieldWeight }, 0, MaxWeight),
		floatField("time_field_weight", func(s *Settings) *float64 { return &s.TimeFieldWeight }, 0, MaxWeight),
		floatField("context_field_weight", func(s *Settings) *float64 { return &s.ContextFieldWeight }, 0, MaxWeight),
		intField("neighbor_radius", func(s *Settings) *int { return &s.NeighborRadius }, 0, 10),
		floatField("neighbor_share", func(s *Settings) *float64 { return &s.NeighborShare }, 0, 1),
		boolField("collapse_duplicates", func(s *Settings) *bool { return &s.CollapseDuplicates }),
		floatField("min_relevance", func(s *Settings) *float64 { return &s.MinRelevance }, 0, 1),
		intField("autocut", func(s *Settings) *int { return &s.Autocut }, 0, 10),
		floatField("relevance_margin", func(s *Settings) *float64 { return &s.RelevanceMargin }, 0, 1),
	}
}

// SettingNames lists the settings keys in a stable order.
func SettingNames() []string {
	f := settingFields()
	out := make([]string, len(f))
	for i := range f {
		out[i] = f[i].name
	}
	return out
}

// SettingKey returns the canonical (snake_case) name of a settings key
// given in any accepted spelling: the canonical one, or the camelCase one
// of earlier releases (keywordWeight for keyword_weight), a deprecated
// alias kept for one release; letter case is ignored. ok is false for an
// unknown key.
func SettingKey(key string) (name string, ok bool) {
	k := foldKey(key)
	for _, f := range settingFields() {
		if foldKey(f.name) == k {
			return f.name, true
		}
	}
	return "", false
}

// foldKey is key lower-cased without underscores: the form every accepted
// spelling of a settings key shares.
func foldKey(key string) string {
	return strings.ToLower(strings.ReplaceAll(strings.TrimSpace(key), "_", ""))
}

// Apply returns s with the key=value pairs of kv applied, validated as a
// whole: on any error (an unknown key, a value out of range) s is returned
// unchanged with an ErrInvalid error naming the key and its allowed range.
// Keys may be spelled as SettingKey accepts.
func (s Settings) Apply(kv map[string]string) (Settings, error) {
	byName := map[string]settingField{}
	for _, f := range settingFields() {
		byName[foldKey(f.name)] = f
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if err := oneSpelling(keys); err != nil {
		return s, err
	}
	out := s
	for _, k := range keys {
		f, ok := byName[foldKey(k)]
		if !ok {
			return s, mnemotype.Invalidf("unknown setting %q: known settings are %s", k, strings.Join(SettingNames(), ", "))
		}
		if err := f.set(&out, kv[k]); err != nil {
			return s, err
		}
	}
	return out, nil
}

// Map renders s as key → value strings (the form settings are stored in).
func (s Settings) Map() map[string]string {
	out := map[string]string{}
	for _, f := range settingFields() {
		out[f.name] = f.get(&s)
	}
	return out
}

// oneSpelling refuses two keys that name the same setting
// (keywordWeight and keyword_weight): which one won would be chance.
func oneSpelling(keys []string) error {
	seen := map[string]string{}
	for _, k := range keys {
		if prev, ok := seen[foldKey(k)]; ok {
			return mnemotype.Invalidf("%s and %s name the same setting: give one of them", prev, k)
		}
		seen[foldKey(k)] = k
	}
	return nil
}

// canonical maps user-typed keys to their canonical spelling (SettingKey);
// unknown keys are kept as they are. Keys naming the same setting must
// have been refused (oneSpelling).
func canonical(kv map[string]string) map[string]string {
	out := make(map[string]string, len(kv))
	for k, v := range kv {
		if n, ok := SettingKey(k); ok {
			k = n
		}
		out[k] = v
	}
	return out
}

// weights returns the legs' weights as fusion expects them.
func (s Settings) weights() map[string]float64 {
	return map[string]float64{
		mnemotype.LegLexical: s.KeywordWeight,
		mnemotype.LegDense:   s.SemanticWeight,
		mnemotype.LegRecency: s.RecencyWeight,
		mnemotype.LegAccess:  s.AccessWeight,
	}
}

// checkWeights refuses settings under which every leg weighs 0: no leg
// would run and every recall would answer nothing.
func (s Settings) checkWeights() error {
	for _, w := range s.weights() {
		if w != 0 {
			return nil
		}
	}
	return mnemotype.Invalidf("weights: keyword_weight, semantic_weight, recency_weight and access_weight are all 0: " +
		"at least one must be > 0, or recall finds nothing")
}

// options converts s into the pipeline's options. It is the last check of
// every settings change and of every recall's effective settings (stored
// ones with the request's overrides): a combination each of whose values
// is valid alone, such as all-zero weights, is refused here.
func (s Settings) options() (recall.Options, error) {
	if err := s.checkWeights(); err != nil {
		return recall.Options{}, err
	}
	imp, err := fusion.ParseImportanceMode(s.ImportanceMode)
	if err != nil {
		return recall.Options{}, err
	}
	pol, err := recall.ParsePolicy(s.CandidatePolicy)
	if err != nil {
		return recall.Options{}, err
	}
	norm, err := fusion.ParseNormalization(s.Normalization)
	if err != nil {
		return recall.Options{}, err
	}
	miss, err := fusion.ParseMissing(s.MissingLeg)
	if err != nil {
		return recall.Options{}, err
	}
	o := recall.Options{
		Fusion: fusion.Params{
			Strategy: fusion.Strategy(s.Strategy), Weights: s.weights(), K: s.RRFK, BordaK: s.BordaK, KParam: s.KParam,
			Normalization: norm, Missing: miss, HighConfidence: s.HighConfidence,
			HighConfidenceThreshold: s.HighConfidenceThreshold, AdaptiveWeights: s.AdaptiveWeights,
			ExactMatchBonus: s.ExactMatchBonus,
		},
		FetchMultiplier: s.FetchMultiplier,
		Importance:      imp,
		Policy:          pol,
		LexicalCap:      s.LexicalCap,
		PoolSize:        s.PoolSize,
		Fields:          store.FieldWeights{Content: 1, Actor: s.ActorFieldWeight, Time: s.TimeFieldWeight, Context: s.ContextFieldWeight},
		NeighborRadius:  s.NeighborRadius,
		NeighborShare:   s.NeighborShare,
		MinRelevance:    s.MinRelevance,
		Autocut:         s.Autocut,
		RelevanceMargin: s.RelevanceMargin,
	}
	if err := o.Fusion.Validate(); err != nil {
		return o, fmt.Errorf("settings: %w", err)
	}
	return o, nil
}

func strategyNames() string {
	var names []string
	for _, st := range fusion.Strategies() {
		names = append(names, string(st))
	}
	return strings.Join(names, ", ")
}

// LegWeightKey maps a leg name, as users write it in weights (--weights,
// "weights" in a request), to the settings key of its weight. The leg names
// and their common synonyms are accepted, case-insensitively.
func LegWeightKey(leg string) (string, bool) {
	switch strings.ToLower(strings.TrimSpace(leg)) {
	case mnemotype.LegLexical, "keyword", "bm25":
		return "keyword_weight", true
	case mnemotype.LegDense, "semantic", "vector":
		return "semantic_weight", true
	case mnemotype.LegRecency:
		return "recency_weight", true
	case mnemotype.LegAccess:
		return "access_weight", true
	}
	return "", false
}
