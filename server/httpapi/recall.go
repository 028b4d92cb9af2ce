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

// recallRequest is POST /v1/recall.
type recallRequest struct {
	Query    string   `json:"query"`
	Project  string   `json:"project,omitempty"`
	Sessions []string `json:"sessions,omitempty"`
	Kinds    []string `json:"kinds,omitempty"`
	Exclude  []string `json:"exclude,omitempty"`
	// Actors restricts recall to these actors ("" for memories without one).
	Actors []string `json:"actors,omitempty"`
	// After and Before restrict recall to memories that occurred in
	// [after, before).
	After  *time.Time `json:"after,omitempty"`
	Before *time.Time `json:"before,omitempty"`
	// Metadata restricts recall to memories whose metadata has each
	// top-level member equal to the given JSON scalar.
	Metadata map[string]any `json:"metadata,omitempty"`
	Limit    int            `json:"limit,omitempty"`
	// MinRelevance and Autocut override the settings minRelevance and
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
	// result stands for (setting collapseDuplicates).
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
		if over, err = settingStrings(cur, req.Settings, "settings."); err != nil {
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
		over["rrfK"] = strconv.FormatFloat(*req.K, 'g', -1, 64)
	}
	if req.Strategy != "" {
		over["strategy"] = req.Strategy
	}
	if req.MinRelevance != nil {
		if err := mnemotype.CheckRange("min_relevance", *req.MinRelevance, 0, 1); err != nil {
			return err
		}
		over["minRelevance"] = strconv.FormatFloat(*req.MinRelevance, 'g', -1, 64)
	}
	if req.Autocut != nil {
		if *req.Autocut < 0 || *req.Autocut > 10 {
			return badRequest("autocut = %d: must be an integer in [0, 10]", *req.Autocut)
		}
		over["autocut"] = strconv.Itoa(*req.Autocut)
	}
	q := mnemo.Query{Text: req.Query, Profile: profile, Project: req.Project, Sessions: req.Sessions,
		Exclude: req.Exclude, Actors: req.Actors, Metadata: req.Metadata, Limit: req.Limit, Overrides: over, Trace: req.Trace, Timings: true}
	if req.After != nil {
		q.After = *req.After
	}
	if req.Before != nil {
		q.Before = *req.Before
	}
	for i, k := range req.Kinds {
		kd, err := mnemotype.ParseKind(k)
		if err != nil || k == "" {
			return badRequest("kinds[%d] = %q: must be one of episodic, semantic, identity", i, k)
		}
		q.Kinds = append(q.Kinds, kd)
	}
	res, err := s.e.Recall(r.Context(), q)
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

// searchLeg serves GET /v1/search/{leg}: one leg alone, as a recall whose
// other legs weigh 0, fused by plain RRF with no importance prior and no
// automatic switches, over the whole scope, so the order is the leg's own.
func (s *Server) searchLeg(leg string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, profile string) error {
		q := r.URL.Query()
		if err := onlyParams(q, "q", "sessions", "sessionIds", "project", "kinds", "exclude", "actors", "after", "before", "limit", metadataParams); err != nil {
			return err
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
		query := mnemo.Query{Text: text, Profile: profile, Project: q.Get("project"), Sessions: listParam(q, "sessions", "sessionIds"),
			Exclude: listParam(q, "exclude"), Actors: listParam(q, "actors"), Limit: limit, Overrides: singleLeg(cur, leg), Timings: true}
		if query.Metadata, err = metadataParam(q); err != nil {
			return err
		}
		if query.After, err = timeParam(q, "after"); err != nil {
			return err
		}
		if query.Before, err = timeParam(q, "before"); err != nil {
			return err
		}
		for i, k := range listParam(q, "kinds") {
			kd, err := mnemotype.ParseKind(k)
			if err != nil {
				return badRequest("kinds[%d] = %q: must be one of episodic, semantic, identity", i, k)
			}
			query.Kinds = append(query.Kinds, kd)
		}
		res, err := s.e.Recall(r.Context(), query)
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
	over := map[string]string{"keywordWeight": "0", "semanticWeight": "0", "recencyWeight": "0", "accessWeight": "0",
		"strategy": "rrf", "importanceMode": "off", "candidatePolicy": "scope", "neighborRadius": "0"}
	// No relevance floor: the leg's list as it ranks it.
	for _, k := range []string{"minRelevance", "autocut"} {
		if _, err := cur.Apply(map[string]string{k: "0"}); err == nil {
			over[k] = "0"
		}
	}
	if key, ok := mnemo.LegWeightKey(leg); ok {
		over[key] = "1"
	}
	types := settingTypes(cur)
	for _, sw := range []string{"highConfidence", "adaptiveWeights", "exactMatchBonus"} {
		var v string
		switch types[strings.ToLower(sw)] {
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
