package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/mnemotype"
)

// memoryIn is one memory in a POST /v1/memories body.
type memoryIn struct {
	ID      string `json:"id,omitempty"`
	Content string `json:"content"`
	// Text is the deprecated spelling of Content (until the next release).
	Text       *string         `json:"text,omitempty"`
	Kind       string          `json:"kind,omitempty"`
	Project    string          `json:"project,omitempty"`
	Session    string          `json:"session,omitempty"`
	Actor      string          `json:"actor,omitempty"`
	Seq        int64           `json:"seq,omitempty"`
	OccurredAt *time.Time      `json:"occurred_at,omitempty"`
	Importance *float64        `json:"importance,omitempty"`
	CreatedAt  *time.Time      `json:"created_at,omitempty"`
	Metadata   json.RawMessage `json:"metadata,omitempty"`
	Embedding  []float32       `json:"embedding,omitempty"`
	// Profile names the profile (see bodyProfile); in a batch, it must
	// be the batch's.
	Profile *string `json:"profile,omitempty"`
}

// content folds the deprecated text into Content.
func (m *memoryIn) content(w http.ResponseWriter) error {
	if m.Text == nil {
		return nil
	}
	if m.Content != "" {
		return badRequest("give content or its deprecated spelling text, not both")
	}
	deprecated(w, "text", "content")
	m.Content, m.Text = *m.Text, nil
	return nil
}

func (m *memoryIn) input(profile string) (mnemo.Input, error) {
	if m.Profile != nil && *m.Profile != profile {
		return mnemo.Input{}, badRequest("profile %q: a batch's memories are all of its profile (%q)", *m.Profile, profile)
	}
	in := mnemo.Input{ID: m.ID, Content: m.Content, Kind: m.Kind, Profile: profile, Project: m.Project,
		Session: m.Session, Actor: m.Actor, Seq: m.Seq, Importance: m.Importance, Embedding: m.Embedding}
	if m.CreatedAt != nil {
		in.CreatedAt = *m.CreatedAt
	}
	if m.OccurredAt != nil {
		in.OccurredAt = *m.OccurredAt
	}
	if md := strings.TrimSpace(string(m.Metadata)); md != "" && md != "null" {
		in.Metadata = m.Metadata
	}
	return in, nil
}

// createRequest is POST /v1/memories: one memory, or {"memories": [...]}.
type createRequest struct {
	memoryIn
	Memories []memoryIn `json:"memories,omitempty"`
}

type createdOne struct {
	ID string `json:"id"`
	// EmbeddingDeferred reports that the memory was stored without an
	// embedding (the embedder failed or was too slow); the server embeds it
	// in the background.
	EmbeddingDeferred bool `json:"embedding_deferred,omitempty"`
}

type createdMany struct {
	IDs []string `json:"ids"`
	// EmbeddingDeferred reports that the memories were stored without
	// embeddings (see createdOne).
	EmbeddingDeferred bool `json:"embedding_deferred,omitempty"`
}

// Idempotent writes (an IETF httpapi draft's header names).
const (
	// headerIdempotencyKey names a write so that its retries store it once.
	headerIdempotencyKey = "Idempotency-Key"
	// headerReplayed marks an answer to a write that was already stored.
	headerReplayed = "Idempotent-Replayed"
	// maxIdempotencyKey bounds the key's length.
	maxIdempotencyKey = 255
)

// idempotencyKey returns the request's Idempotency-Key ("" when absent).
func idempotencyKey(r *http.Request) (string, error) {
	vs := r.Header.Values(headerIdempotencyKey)
	if len(vs) == 0 {
		return "", nil
	}
	k := strings.TrimSpace(vs[0])
	ok := len(vs) == 1 && k != "" && len(k) <= maxIdempotencyKey
	for i := 0; ok && i < len(k); i++ {
		ok = k[i] >= 0x20 && k[i] < 0x7f
	}
	if !ok {
		return "", badRequest("%s header: must be given once, as 1 to %d printable ASCII characters", headerIdempotencyKey, maxIdempotencyKey)
	}
	return k, nil
}

func (s *Server) createMemories(w http.ResponseWriter, r *http.Request, profile string) error {
	key, err := idempotencyKey(r)
	if err != nil {
		return err
	}
	var req createRequest
	if err := decodeJSON(r, &req); err != nil {
		return err
	}
	batch := req.Memories != nil
	if batch {
		one := req.memoryIn
		if one.Content != "" || one.Text != nil || one.ID != "" || one.Kind != "" || one.Project != "" || one.Session != "" ||
			one.Actor != "" || one.Seq != 0 || one.OccurredAt != nil ||
			one.Importance != nil || one.CreatedAt != nil || len(one.Metadata) > 0 || len(one.Embedding) > 0 {
			return badRequest("send either one memory or {\"memories\": [...]}, not both")
		}
		if len(req.Memories) == 0 {
			return badRequest("memories is empty")
		}
		if req.Profile == nil { // the batch's profile may be named by its first memory
			req.Profile = req.Memories[0].Profile
		}
	} else {
		req.Memories = []memoryIn{req.memoryIn}
	}
	if profile, err = bodyProfile(r, profile, req.Profile); err != nil {
		return err
	}
	ins := make([]mnemo.Input, len(req.Memories))
	for i := range req.Memories {
		if err := req.Memories[i].content(w); err != nil {
			if batch {
				return badRequest("memories[%d]: %s", i, err.Error())
			}
			return err
		}
		in, err := req.Memories[i].input(profile)
		if err != nil {
			if batch {
				return badRequest("memories[%d]: %s", i, err.Error())
			}
			return err
		}
		if key != "" && strings.TrimSpace(in.ID) == "" {
			in.ID = mnemo.IdempotentID(profile, key, i)
		}
		ins[i] = in
	}
	res, err := s.e.Write(r.Context(), ins)
	var i int
	if err != nil && batch && errors.Is(err, mnemo.ErrInvalid) && !errors.Is(err, mnemotype.ErrExists) {
		if _, serr := fmt.Sscanf(err.Error(), "memory %d:", &i); serr == nil && i >= 0 && i < len(ins) {
			// Name the memory as the body does.
			msg := strings.TrimPrefix(err.Error(), fmt.Sprintf("memory %d: ", i))
			return badRequest("memories[%d]: %s", i, strings.TrimPrefix(msg, mnemo.ErrInvalid.Error()+": "))
		}
	}
	if err != nil {
		return err
	}
	s.m.wrote(res.Created)
	status := http.StatusCreated
	if res.AllReplayed() {
		status = http.StatusOK
		w.Header().Set(headerReplayed, "true")
	}
	deferred := res.Deferred > 0
	if !batch {
		w.Header().Set("Location", "/v1/memories/"+url.PathEscape(res.Memories[0].ID))
		writeJSON(w, status, createdOne{ID: res.Memories[0].ID, EmbeddingDeferred: deferred})
		return nil
	}
	out := createdMany{IDs: make([]string, len(res.Memories)), EmbeddingDeferred: deferred}
	for i := range res.Memories {
		out.IDs[i] = res.Memories[i].ID
	}
	writeJSON(w, status, out)
	return nil
}

func (s *Server) getMemory(w http.ResponseWriter, r *http.Request, profile string) error {
	m, err := s.e.Get(r.Context(), profile, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, m)
	return nil
}

// patchRequest is PATCH /v1/memories/{id}: the fields to change.
type patchRequest struct {
	Content *string `json:"content,omitempty"`
	// Text is the deprecated spelling of Content (until the next release).
	Text       *string    `json:"text,omitempty"`
	Kind       *string    `json:"kind,omitempty"`
	Project    *string    `json:"project,omitempty"`
	Session    *string    `json:"session,omitempty"`
	Actor      *string    `json:"actor,omitempty"`
	Seq        *int64     `json:"seq,omitempty"`
	OccurredAt *time.Time `json:"occurred_at,omitempty"`
	Importance *float64   `json:"importance,omitempty"`
	// Metadata replaces the metadata; null clears it. A RawMessage sees
	// the null that a pointer would swallow.
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// Profile names the memory's profile (see bodyProfile); a memory
	// never changes profile.
	Profile *string `json:"profile,omitempty"`
}

func (s *Server) updateMemory(w http.ResponseWriter, r *http.Request, profile string) error {
	var req patchRequest
	err := decodeJSON(r, &req)
	if err != nil {
		return err
	}
	if profile, err = bodyProfile(r, profile, req.Profile); err != nil {
		return err
	}
	if req.Text != nil {
		if req.Content != nil {
			return badRequest("give content or its deprecated spelling text, not both")
		}
		deprecated(w, "text", "content")
		req.Content = req.Text
	}
	p := mnemo.Patch{Content: req.Content, Kind: req.Kind, Project: req.Project, Session: req.Session, Actor: req.Actor,
		Seq: req.Seq, OccurredAt: req.OccurredAt, Importance: req.Importance}
	if req.Metadata != nil {
		md := req.Metadata
		p.Metadata = &md
	}
	if p == (mnemo.Patch{}) {
		return badRequest("nothing to change: give at least one of content, kind, project, session, actor, seq, occurred_at, importance, metadata")
	}
	m, err := s.e.Update(r.Context(), profile, r.PathValue("id"), p)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, m)
	return nil
}

func (s *Server) deleteMemory(w http.ResponseWriter, r *http.Request, profile string) error {
	if err := s.e.Forget(r.Context(), profile, r.PathValue("id")); err != nil {
		return err
	}
	s.m.forgot()
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// deletedResponse is DELETE /v1/memories.
type deletedResponse struct {
	Deleted int `json:"deleted"`
}

// deleteMemories deletes the memories the filters select (all of them must
// match): session, project, actor, time range, metadata.
func (s *Server) deleteMemories(w http.ResponseWriter, r *http.Request, profile string) error {
	q := r.URL.Query()
	fq := mnemo.ForgetQuery{Profile: profile, Project: q.Get("project"), Session: q.Get("session"), Actors: listParam(q, "actor")}
	var err error
	if fq.Kinds, err = kindParam(q); err != nil {
		return err
	}
	if fq.After, err = timeParam(q, "after"); err != nil {
		return err
	}
	if fq.Before, err = timeParam(q, "before"); err != nil {
		return err
	}
	if fq.Metadata, err = metadataParam(q); err != nil {
		return err
	}
	if fq.Project == "" && fq.Session == "" && len(fq.Actors) == 0 && len(fq.Kinds) == 0 && fq.After.IsZero() && fq.Before.IsZero() && len(fq.Metadata) == 0 {
		return mnemotype.Invalidf("give session, project, actor, kind, after, before or metadata.KEY=VALUE to delete their memories (DELETE /v1/profile deletes the whole profile)")
	}
	n, err := s.e.ForgetMatching(r.Context(), fq)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, deletedResponse{Deleted: n})
	return nil
}

// profileDeletedResponse is DELETE /v1/profile.
type profileDeletedResponse struct {
	Profile string `json:"profile"`
	mnemo.ProfileDeletion
}

// deleteProfile deletes the caller's profile: its memories, settings and
// keys (the key of this request included).
func (s *Server) deleteProfile(w http.ResponseWriter, r *http.Request, profile string) error {
	d, err := s.e.DeleteProfile(r.Context(), profile)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, profileDeletedResponse{Profile: profile, ProfileDeletion: d})
	return nil
}

// listResponse is GET /v1/memories.
type listResponse struct {
	Memories   []mnemo.Memory `json:"memories"`
	NextCursor string         `json:"next_cursor,omitempty"`
	// Total is the number of memories the filters select, on every page
	// (only with total=true).
	Total *int `json:"total,omitempty"`
}

func (s *Server) listMemories(w http.ResponseWriter, r *http.Request, profile string) error {
	q := r.URL.Query()
	lq := mnemo.ListQuery{Profile: profile, Project: q.Get("project"), Session: q.Get("session"), Cursor: q.Get("cursor"),
		Actors: listParam(q, "actor")}
	var err error
	if lq.Kinds, err = kindParam(q); err != nil {
		return err
	}
	if v := q.Get("total"); v != "" {
		if lq.Total, err = strconv.ParseBool(v); err != nil {
			return badRequest("total = %q: must be true or false", v)
		}
	}
	if lq.Metadata, err = metadataParam(q); err != nil {
		return err
	}
	if lq.After, err = timeParam(q, "after"); err != nil {
		return err
	}
	if lq.Before, err = timeParam(q, "before"); err != nil {
		return err
	}
	if lq.Limit, err = intParam(q, "limit", mnemo.DefaultListLimit, 1, mnemo.MaxListLimit); err != nil {
		return err
	}
	page, err := s.e.List(r.Context(), lq)
	if err != nil {
		return err
	}
	out := listResponse{Memories: page.Memories, NextCursor: page.NextCursor}
	if lq.Total {
		out.Total = &page.Total
	}
	if out.Memories == nil {
		out.Memories = []mnemo.Memory{}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// The query parameters of the routes that read more than the profile.
var (
	deleteParams = []string{"project", "session", "actor", "kind", "after", "before", metadataParams}
	listParams   = []string{"project", "session", "actor", "kind", "after", "before", "limit", "cursor", "total", metadataParams}
	searchParams = []string{"q", "session", "project", "kind", "exclude", "actor", "after", "before", "limit", metadataParams,
		"sessions", "sessionIds", "kinds", "actors"}
)

// metadataParams is the prefix of the query parameters of a metadata
// filter: metadata.KEY=VALUE (a route whose params list it allows them all).
const metadataParams = "metadata."

// metadataParam is the metadata filter of q's metadata.KEY=VALUE
// parameters: VALUE as mnemotype.ParseMetadataValue reads it (2 a number,
// "2" with its quotes a string). nil when there is none; a key given
// twice is refused.
func metadataParam(q url.Values) (map[string]any, error) {
	var out map[string]any
	for k, vs := range q {
		if key, ok := strings.CutPrefix(k, metadataParams); ok {
			if len(vs) > 1 {
				return nil, badRequest("query parameter %s is given %d times: a member equals one value", k, len(vs))
			}
			if out == nil {
				out = map[string]any{}
			}
			out[key] = mnemotype.ParseMetadataValue(vs[0])
		}
	}
	return out, nil
}

// intParam parses an integer query parameter in [lo, hi]; absent gives def.
func intParam(q url.Values, name string, def, lo, hi int) (int, error) {
	v := q.Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, badRequest("%s = %q: must be an integer in [%d, %d]", name, v, lo, hi)
	}
	return n, nil
}

// kindParam parses the kind query parameter (comma-separated or
// repeated): nil when absent.
func kindParam(q url.Values) ([]mnemo.Kind, error) {
	return parseKinds("kind", listParam(q, "kind"))
}

// parseKinds parses the kinds a filter named field lists.
func parseKinds(field string, ks []string) ([]mnemo.Kind, error) {
	var out []mnemo.Kind
	for i, k := range ks {
		kd, err := mnemotype.ParseKind(k)
		if err != nil || k == "" {
			return nil, badRequest("%s[%d] = %q: must be one of episodic, semantic, identity", field, i, k)
		}
		out = append(out, kd)
	}
	return out, nil
}

// listParam splits a comma-separated query parameter (repeatable).
func listParam(q url.Values, names ...string) []string {
	var out []string
	for _, name := range names {
		for _, v := range q[name] {
			for _, p := range strings.Split(v, ",") {
				if p = strings.TrimSpace(p); p != "" {
					out = append(out, p)
				}
			}
		}
	}
	return out
}
