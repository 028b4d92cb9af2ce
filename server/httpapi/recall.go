package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/mnemotype"
)

// recallRequest is POST /v1/recall. The filters take the memory fields'
// names, each a string or a list (session, kind, actor).
type recallRequest struct {
	Query   string               `json:"query"`
	Project string               `json:"project,omitempty"`
	Session mnemotype.StringList `json:"session,omitempty"`
	Kind    mnemotype.StringList `json:"kind,omitempty"`
	Exclude []string             `json:"exclude,omitempty"`
	// Actor restricts recall to these actors ("" for memories without one).
	Actor mnemotype.StringList `json:"actor,omitempty"`
	// Sessions, Kinds and Actors are the deprecated plural spellings of
	// Session, Kind and Actor (until the next release).
	Sessions []string `json:"sessions,omitempty"`
	Kinds    []string `json:"kinds,omitempty"`
	Actors   []string `json:"actors,omitempty"`
	// After and Before restrict recall to memories that occurred in
	// [after, before).
	After  *time.Time `json:"after,omitempty"`
	Before *time.Time `json:"before,omitempty"`
	// Metadata restricts recall to memories whose metadata has each
	// top-level member equal to the given JSON scalar.
	Metadata map[string]any `json:"metadata,omitempty"`
	Limit    int            `json:"limit,omitempty"`
	// MinRelevance and Autocut override the settings min_relevance and
	// autocut for this request.
	MinRelevance *float64 `json:"min_relevance,omitempty"`
	Autocut      *int     `json:"autocut,omitempty"`
	// Strategy, Weights and K override the profile's settings for this
	// request; Settings overrides any setting by name.
	Strategy string                     `json:"strategy,omitempty"`
	Weights  map[string]float64         `json:"weights,omitempty"`
	K        *float64                   `json:"k,omitempty"`
	Settings map[string]json.RawMessage `json:"settings,omitempty"`
	Trace    bool                       `json:"trace,omitempty"`
	Profile  *string                    `json:"profile,omitempty"`
}

// RecallResult is one memory of a recall answer, as POST /v1/recall and
// `mnemo recall --json` render it.
type RecallResult struct {
	ID             string                     `json:"id"`
	Content        string                     `json:"content"`
	Score          float64                    `json:"score"`
	Relevance      float64                    `json:"relevance"`
	Rank           int                        `json:"rank"`
	Kind           string                     `json:"kind"`
	Project        string                     `json:"project,omitempty"`
	Session        string                     `json:"session,omitempty"`
	Actor          string                     `json:"actor,omitempty"`
	Seq            int64                      `json:"seq,omitempty"`
	OccurredAt     time.Time                  `json:"occurred_at"`
	Importance     float64                    `json:"importance"`
	CreatedAt      time.Time                  `json:"created_at"`
	Metadata       json.RawMessage            `json:"metadata,omitempty"`
	Legs           map[string]mnemo.LegDetail `json:"legs"`
	Counterfactual map[string]int             `json:"counterfactual,omitempty"`
	// Duplicates are the ids of the memories of the same content this
	// result stands for (setting collapse_duplicates).
	Duplicates []string `json:"duplicates,omitempty"`
}

// RecallResponse is the body of POST /v1/recall and the output of
// `mnemo recall --json`: the results, and the trace when asked for.
type RecallResponse struct {
	Results []RecallResult `json:"results"`
	Trace   *mnemo.Trace   `json:"trace,omitempty"`
}

// NewRecallResponse renders res. Counterfactual ranks (computed for traces)
// are included only with the trace.
func NewRecallResponse(res *mnemo.RecallResult) RecallResponse {
	return RecallResponse{Results: results(res, res.Trace != nil), Trace: res.Trace}
}

// searchResponse is GET /v1/search/{leg}: the leg's own ranking.
type searchResponse struct {
	Leg     string         `json:"leg"`
	Results []RecallResult `json:"results"`
	// Skipped says why the leg could not run (e.g. the query embedding
	// failed, or the query has no searchable words).
	Skipped string `json:"skipped,omitempty"`
}

// results renders res; counterfactual ranks (computed for traces) only
// when the client asked for the trace.
func results(res *mnemo.RecallResult, counterfactual bool) []RecallResult {
	out := make([]RecallResult, 0, len(res.Results))
	for _, r := range res.Results {
		if r.Legs == nil {
			r.Legs = map[string]mnemo.LegDetail{} // legs is always an object
		}
		out = append(out, RecallResult{ID: r.ID, Content: r.Content, Score: r.Score, Relevance: r.Relevance, Rank: r.Rank, Kind: string(r.Kind),
			Project: r.Project, Session: r.Session, Actor: r.Actor, Seq: r.Seq, OccurredAt: r.OccurredAt,
			Importance: r.Importance, CreatedAt: r.CreatedAt, Metadata: r.Metadata,
			Legs: r.Legs, Duplicates: r.Duplicates})
		if counterfactual {
			out[len(out)-1].Counterfactual = r.Counterfactual
		}
	}
	return out
}

func (s *Server) recall(w http.ResponseWriter, r *http.Request, profile string) error {
	var req recallRequest
	err := decodeJSON(r, &req)
	if err != nil {
		return err
	}
	if profile, err = bodyProfile(r, profile, req.Profile); err != nil {
		return err
	}
	over := map[string]string{}
	if len(req.Settings) > 0 {
		cur, err := s.e.Settings(r.Context(), profile)
		if err != nil {
			return err
		}
		if over, err = settingStrings(w, cur, req.Settings, "settings."); err != nil {
			return err
		}
		if _, err := cur.Apply(over); err != nil {
			return nameField(cur, over, err)
		}
	}
	for leg, wt := range req.Weights {
		key, ok := mnemo.LegWeightKey(leg)
		if !ok {
			return badRequest("weights: unknown leg %q: must be one of %s", leg, strings.Join(mnemotype.Legs, ", "))
		}
		if err := mnemotype.CheckRange("weights."+leg, wt, 0, mnemo.MaxWeight); err != nil {
			return err
		}
		over[key] = strconv.FormatFloat(wt, 'g', -1, 64)
	}
	if req.K != nil {
		over["rrf_k"] = strconv.FormatFloat(*req.K, 'g', -1, 64)
	}
	if req.Strategy != "" {
		over["strategy"] = req.Strategy
	}
	if req.MinRelevance != nil {
		if err := mnemotype.CheckRange("min_relevance", *req.MinRelevance, 0, 1); err != nil {
			return err
		}
		over["min_relevance"] = strconv.FormatFloat(*req.MinRelevance, 'g', -1, 64)
	}
	if req.Autocut != nil {
		if *req.Autocut < 0 || *req.Autocut > 10 {
			return badRequest("autocut = %d: must be an integer in [0, 10]", *req.Autocut)
		}
		over["autocut"] = strconv.Itoa(*req.Autocut)
	}
	kindField := "kind" // errors name the field as sent
	if req.Kinds != nil {
		kindField = "kinds"
	}
	for _, a := range []struct {
		name, old string
		cur       *mnemotype.StringList
		oldVal    []string
	}{{"session", "sessions", &req.Session, req.Sessions}, {"kind", "kinds", &req.Kind, req.Kinds}, {"actor", "actors", &req.Actor, req.Actors}} {
		if err := alias(w, a.name, a.cur, a.old, a.oldVal); err != nil {
			return err
		}
	}
	q := mnemo.Query{Text: req.Query, Profile: profile, Project: req.Project, Sessions: req.Session,
		Exclude: req.Exclude, Actors: req.Actor, Metadata: req.Metadata, Limit: req.Limit, Overrides: over, Trace: req.Trace, Timings: true}
	if req.After != nil {
		q.After = *req.After
	}
	if req.Before != nil {
		q.Before = *req.Before
	}
	if q.Kinds, err = parseKinds(kindField, req.Kind); err != nil {
		return err
	}
	res, err := s.e.Recall(mnemo.AllowReplica(r.Context()), q)
	if err != nil {
		return err
	}
	s.observeRecall("recall", res)
	out := RecallResponse{Results: results(res, req.Trace)}
	if req.Trace {
		out.Trace = res.Trace
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// observeRecall feeds a recall's trace into the metrics.
func (s *Server) observeRecall(endpoint string, res *mnemo.RecallResult) {
	if res.Trace == nil {
		return
	}
	hits := map[string]int{}
	for leg, l := range res.Trace.Legs {
		hits[leg] = len(l)
	}
	contrib := map[string]int{}
	for _, r := range res.Results {
		for leg, d := range r.Legs {
			if d.Rank > 0 {
				contrib[leg]++
			}
		}
	}
	s.m.recall(endpoint, res.Trace.Timings, hits, contrib)
}

// headerDeprecated lists the deprecated spellings a request used, each
// with the one to use instead, e.g. "sessions (use session)".
const headerDeprecated = "Mnemo-Deprecated"

// alias folds the deprecated spelling old (its value oldVal, nil when not
// given) into the current one, name: giving both is a 400; using old adds
// it to the answer's Mnemo-Deprecated header.
func alias(w http.ResponseWriter, name string, cur *mnemotype.StringList, old string, oldVal []string) error {
	if oldVal == nil {
		return nil
	}
	if *cur != nil {
		return badRequest("give %s or its deprecated spelling %s, not both", name, old)
	}
	deprecated(w, old, name)
	*cur = oldVal
	return nil
}

// deprecated notes in the answer's header that the request used the
// deprecated spelling old of name.
func deprecated(w http.ResponseWriter, old, name string) {
	w.Header().Add(headerDeprecated, old+" (use "+name+")")
}

// searchLeg serves GET /v1/search/{leg}: one leg alone, as a recall whose
// other legs weigh 0, fused by plain RRF with no importance prior and no
// automatic switches, over the whole scope, so the order is the leg's own.
func (s *Server) searchLeg(leg string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, profile string) error {
		q := r.URL.Query()
		session, kind, actor := mnemotype.StringList(listParam(q, "session")), mnemotype.StringList(listParam(q, "kind")),
			mnemotype.StringList(listParam(q, "actor"))
		for _, a := range []struct {
			name, old string
			cur       *mnemotype.StringList
		}{{"session", "sessions", &session}, {"session", "sessionIds", &session}, {"kind", "kinds", &kind}, {"actor", "actors", &actor}} {
			if err := alias(w, a.name, a.cur, a.old, listParam(q, a.old)); err != nil {
				return err
			}
		}
		text := q.Get("q")
		if strings.TrimSpace(text) == "" {
			return badRequest("q is empty: give the text to search for")
		}
		limit, err := intParam(q, "limit", mnemo.DefaultLimit, 1, mnemo.MaxLimit)
		if err != nil {
			return err
		}
		cur, err := s.e.Settings(r.Context(), profile)
		if err != nil {
			return err
		}
		query := mnemo.Query{Text: text, Profile: profile, Project: q.Get("project"), Sessions: session,
			Exclude: listParam(q, "exclude"), Actors: actor, Limit: limit, Overrides: singleLeg(cur, leg), Timings: true}
		if query.Metadata, err = metadataParam(q); err != nil {
			return err
		}
		if query.After, err = timeParam(q, "after"); err != nil {
			return err
		}
		if query.Before, err = timeParam(q, "before"); err != nil {
			return err
		}
		if query.Kinds, err = parseKinds("kind", kind); err != nil {
			return err
		}
		res, err := s.e.Recall(mnemo.AllowReplica(r.Context()), query)
		if err != nil {
			return err
		}
		s.observeRecall("search_"+leg, res)
		out := searchResponse{Leg: leg, Results: results(res, false)}
		if res.Trace != nil {
			out.Skipped = res.Trace.Skipped[leg]
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	}
}

// singleLeg returns the overrides that leave leg alone in the fusion. Keys
// this engine does not know (switches added in later versions) are left
// out; boolean switches are turned off and numeric bonuses set to 0 when
// the engine accepts it.
func singleLeg(cur mnemo.Settings, leg string) map[string]string {
	// One leg's own list: no importance prior, no switches, no neighbour
	// expansion (the lexical leg keeps its fields: they are how it searches).
	over := map[string]string{"keyword_weight": "0", "semantic_weight": "0", "recency_weight": "0", "access_weight": "0",
		"strategy": "rrf", "importance_mode": "off", "candidate_policy": "scope", "neighbor_radius": "0"}
	// No relevance floor: the leg's list as it ranks it.
	for _, k := range []string{"min_relevance", "autocut"} {
		if _, err := cur.Apply(map[string]string{k: "0"}); err == nil {
			over[k] = "0"
		}
	}
	if key, ok := mnemo.LegWeightKey(leg); ok {
		over[key] = "1"
	}
	types := settingTypes(cur)
	for _, sw := range []string{"high_confidence", "adaptive_weights", "exact_match_bonus"} {
		var v string
		switch types[sw] {
		case "boolean":
			v = "false"
		case "number":
			v = "0"
		default:
			continue
		}
		if _, err := cur.Apply(map[string]string{sw: v}); err == nil {
			over[sw] = v
		}
	}
	names := mnemo.SettingNames()
	for k := range over {
		if !slices.Contains(names, k) {
			delete(over, k)
		}
	}
	return over
}

// timeParam parses an RFC 3339 query parameter; absent gives the zero time.
func timeParam(q url.Values, name string) (time.Time, error) {
	v := q.Get(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, badRequest("%s = %q: must be an RFC 3339 time such as 2023-05-08T13:56:00Z", name, v)
	}
	return t, nil
}
