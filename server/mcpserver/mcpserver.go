// Package mcpserver exposes a mnemo Engine as a Model Context Protocol
// server (official Go SDK, github.com/modelcontextprotocol/go-sdk) with
// three tools: memory_store, memory_recall and memory_forget. It calls the
// Engine in process; the transport (stdio for `mnemo mcp`, streamable HTTP
// at /mcp for `mnemo serve`) is the caller's choice.
//
// Every tool call acts on one profile, named by a ProfileFunc from the
// call's optional profile argument: a fixed profile on stdio, over HTTP the
// profile of the request's API key, or the one a service key's call names.
package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/mnemotype"
)

// Tool names.
const (
	ToolStore  = "memory_store"
	ToolRecall = "memory_recall"
	ToolForget = "memory_forget"
)

// DefaultRecallLimit is memory_recall's limit when the call gives none.
const DefaultRecallLimit = 5

// ProfileFunc names the profile a tool call acts on, given the profile
// the call's arguments name ("" when none). An error refuses the call (e.g.
// no API key, or a profile the caller may not act on); its message is
// shown to the client as it is, so it must not carry internal details.
type ProfileFunc func(ctx context.Context, req *mcp.CallToolRequest, named string) (string, error)

// Fixed returns a ProfileFunc that always names profile, and refuses a
// call that names another.
func Fixed(profile string) ProfileFunc {
	return func(_ context.Context, _ *mcp.CallToolRequest, named string) (string, error) {
		if named != "" && named != profile {
			return "", fmt.Errorf("profile %q: this server acts on profile %q only", named, profile)
		}
		return profile, nil
	}
}

// Options configures New. The zero value (or nil) is ready to use.
type Options struct {
	// Version is reported to clients. Defaults to "dev".
	Version string
	// Logger receives the SDK's log and the details of internal errors
	// (clients see only "internal error (see server log)"). Defaults to
	// discarding.
	Logger *slog.Logger
	// OnCall, when set, is called after every tool call with its duration
	// and error (nil on success), e.g. for metrics. It must be safe for
	// concurrent use.
	OnCall func(tool string, d time.Duration, err error)
}

// StoreInput is memory_store's input.
type StoreInput struct {
	Profile    string         `json:"profile,omitempty" jsonschema:"the profile (end user) to act on: required with a service key; other keys and the stdio server act on their own profile"`
	Content    string         `json:"content" jsonschema:"the text to remember"`
	Session    string         `json:"session,omitempty" jsonschema:"the session it belongs to"`
	Project    string         `json:"project,omitempty" jsonschema:"the project it belongs to"`
	Kind       string         `json:"kind,omitempty" jsonschema:"episodic (default), semantic or identity"`
	Actor      string         `json:"actor,omitempty" jsonschema:"who said or did it: a speaker's name, user or assistant"`
	OccurredAt string         `json:"occurred_at,omitempty" jsonschema:"when it happened, an RFC 3339 time such as 2023-05-08T13:56:00Z (default: now)"`
	Seq        int64          `json:"seq,omitempty" jsonschema:"its place in the session, an integer of 1 or more (default, or 0: after the session's last memory)"`
	Importance *float64       `json:"importance,omitempty" jsonschema:"how much it matters, a number in [0, 1] (default 0.5)"`
	Metadata   map[string]any `json:"metadata,omitempty" jsonschema:"a JSON object stored with the memory"`
	// ID and IdempotencyKey make a retried call store the memory once.
	ID             string `json:"id,omitempty" jsonschema:"the memory's id, to store it once when the call is retried (default: a new id)"`
	IdempotencyKey string `json:"idempotency_key,omitempty" jsonschema:"a name for this call: a retry with the same key and content stores the memory once"`
}

// StoreOutput is memory_store's structured output.
type StoreOutput struct {
	ID string `json:"id" jsonschema:"the memory's id"`
	// Replayed reports a retried call: the memory was already stored.
	Replayed bool `json:"replayed,omitempty" jsonschema:"true when the memory was already stored by an earlier call (nothing changed)"`
	// EmbeddingDeferred reports a memory stored without an embedding.
	EmbeddingDeferred bool `json:"embedding_deferred,omitempty" jsonschema:"true when the memory was stored without an embedding (embedded later)"`
}

// RecallInput is memory_recall's input.
type RecallInput struct {
	Profile string               `json:"profile,omitempty" jsonschema:"the profile (end user) to act on: required with a service key; other keys and the stdio server act on their own profile"`
	Query   string               `json:"query" jsonschema:"what to recall"`
	Session mnemotype.StringList `json:"session,omitempty" jsonschema:"restrict to this session, or these sessions"`
	Project string               `json:"project,omitempty" jsonschema:"restrict to this project"`
	Actor   mnemotype.StringList `json:"actor,omitempty" jsonschema:"restrict to memories of this actor (speaker), or these actors"`
	// Actors is the deprecated spelling of Actor (until the next release).
	Actors []string `json:"actors,omitempty" jsonschema:"deprecated: use actor"`
	After  string   `json:"after,omitempty" jsonschema:"restrict to memories that occurred at or after this RFC 3339 time"`
	Before string   `json:"before,omitempty" jsonschema:"restrict to memories that occurred before this RFC 3339 time"`
	// Metadata is an equality filter on the memories' metadata.
	Metadata map[string]any `json:"metadata,omitempty" jsonschema:"restrict to memories whose metadata has each of these top-level members equal to the given string, number, boolean or null (null: the member is null or absent)"`
	// Limit is nil when the call gives none (DefaultRecallLimit).
	Limit *int `json:"limit,omitempty" jsonschema:"how many memories to return at most, an integer in [1, 1000] (default 5)"`
	// MinRelevance overrides the profile's min_relevance setting.
	MinRelevance *float64 `json:"min_relevance,omitempty" jsonschema:"leave out memories whose relevance is below this, a number in [0, 1] (default the profile's setting, 0.2); 0 returns the best matches however weak"`
}

// Recalled is one memory in memory_recall's structured output.
type Recalled struct {
	ID         string    `json:"id"`
	Content    string    `json:"content"`
	Rank       int       `json:"rank"`
	Score      float64   `json:"score"`
	Relevance  float64   `json:"relevance"`
	Kind       string    `json:"kind"`
	Project    string    `json:"project,omitempty"`
	Session    string    `json:"session,omitempty"`
	Actor      string    `json:"actor,omitempty"`
	Seq        int64     `json:"seq,omitempty"`
	OccurredAt time.Time `json:"occurred_at"`
	Importance float64   `json:"importance"`
	CreatedAt  time.Time `json:"created_at"`
	// Legs maps each retrieval leg that found the memory to its rank there.
	Legs map[string]int `json:"legs,omitempty"`
}

// RecallOutput is memory_recall's structured output.
type RecallOutput struct {
	Results []Recalled `json:"results"`
}

// ForgetInput is memory_forget's input.
type ForgetInput struct {
	Profile string `json:"profile,omitempty" jsonschema:"the profile (end user) to act on: required with a service key; other keys and the stdio server act on their own profile"`
	ID      string `json:"id,omitempty" jsonschema:"the id of the memory to forget"`
	Session string `json:"session,omitempty" jsonschema:"forget every memory of this session instead (give id or session)"`
}

// ForgetOutput is memory_forget's structured output.
type ForgetOutput struct {
	// Forgotten is the id forgotten, "" for a session.
	Forgotten string `json:"forgotten,omitempty"`
	// Count is the number of memories forgotten.
	Count int `json:"count"`
}

// New returns an MCP server whose tools act on e, in the profile profile
// names for each call. The server may be connected to any number of
// transports.
func New(e *mnemo.Engine, profile ProfileFunc, opts *Options) *mcp.Server {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "mnemo", Title: "mnemo long-term memory", Version: o.Version},
		&mcp.ServerOptions{
			Logger: o.Logger,
			Instructions: "mnemo is long-term memory. Call memory_recall with the user's request to find relevant " +
				"memories before answering; call memory_store to keep facts, decisions and events worth remembering; " +
				"memory_forget deletes one memory by id, or a whole session.",
		})
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &handlers{e: e, profile: profile, onCall: o.OnCall, log: log}
	mcp.AddTool(s, &mcp.Tool{
		Name:         ToolStore,
		InputSchema:  schemaFor[StoreInput](),
		OutputSchema: schemaFor[StoreOutput](),
		Title:        "Store a memory",
		Description:  "Remember a piece of text (an event, a fact, a decision) for later recall. Give an id or an idempotency_key to make a retried call store it once.",
	}, observe(h, ToolStore, h.store))
	mcp.AddTool(s, &mcp.Tool{
		Name:         ToolRecall,
		InputSchema:  schemaFor[RecallInput](),
		OutputSchema: schemaFor[RecallOutput](),
		Title:        "Recall memories",
		Description:  "Find the stored memories that best match a query (hybrid full-text and semantic search).",
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, observe(h, ToolRecall, h.recall))
	mcp.AddTool(s, &mcp.Tool{
		Name:         ToolForget,
		InputSchema:  schemaFor[ForgetInput](),
		OutputSchema: schemaFor[ForgetOutput](),
		Title:        "Forget a memory or a session",
		Description:  "Delete one memory by id, or every memory of a session.",
		Annotations:  &mcp.ToolAnnotations{DestructiveHint: ref(true), IdempotentHint: true},
	}, observe(h, ToolForget, h.forget))
	return s
}

func ref[T any](v T) *T { return &v }

// schemaFor is the JSON schema of a tool's input or output type T, with a
// mnemotype.StringList field taking a string or an array of strings. An
// optional number, slice or map (a pointer, nil when absent) is described
// by its plain type, not as that type or null: clients such as the MCP
// Inspector offer a text box for a type that may be null and send what is
// typed as a string. Defaults and ranges are in the descriptions.
func schemaFor[T any]() *jsonschema.Schema {
	sc, err := jsonschema.ForType(reflect.TypeFor[T](), &jsonschema.ForOptions{TypeSchemas: map[reflect.Type]*jsonschema.Schema{
		reflect.TypeFor[mnemotype.StringList](): {Types: []string{"string", "array"}, Items: &jsonschema.Schema{Type: "string"}},
	}})
	if err != nil {
		panic(fmt.Sprintf("mcpserver: the schema of %T: %v", *new(T), err)) // a static type: a bug, found by every test
	}
	notNull(sc)
	return sc
}

// notNull replaces every ["null", T] type in sc with T.
func notNull(sc *jsonschema.Schema) {
	if sc == nil {
		return
	}
	if len(sc.Types) == 2 && slices.Contains(sc.Types, "null") {
		sc.Type = sc.Types[0]
		if sc.Type == "null" {
			sc.Type = sc.Types[1]
		}
		sc.Types = nil
	}
	for _, p := range sc.Properties {
		notNull(p)
	}
	notNull(sc.Items)
	notNull(sc.AdditionalProperties)
}

type handlers struct {
	e       *mnemo.Engine
	profile ProfileFunc
	onCall  func(string, time.Duration, error)
	log     *slog.Logger
}

// observe wraps a tool handler: it resolves nothing itself, only logs an
// internal error's details (the client sees a stable message) and reports
// the call's duration and outcome.
func observe[In, Out any](h *handlers, tool string, f mcp.ToolHandlerFor[In, Out]) mcp.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		start := time.Now()
		res, out, err := f(ctx, req, in)
		var ie *internalError
		if errors.As(err, &ie) {
			h.log.Error("tool call failed", "tool", tool, "err", ie.cause)
		}
		if h.onCall != nil {
			h.onCall(tool, time.Since(start), err)
		}
		return res, out, err
	}
}

func (h *handlers) store(ctx context.Context, req *mcp.CallToolRequest, in StoreInput) (*mcp.CallToolResult, StoreOutput, error) {
	profile, err := h.profile(ctx, req, in.Profile)
	if err != nil {
		return nil, StoreOutput{}, err
	}
	var md json.RawMessage
	if in.Metadata != nil {
		if md, err = json.Marshal(in.Metadata); err != nil {
			return nil, StoreOutput{}, fmt.Errorf("metadata: %w", err)
		}
	}
	id := strings.TrimSpace(in.ID)
	if key := strings.TrimSpace(in.IdempotencyKey); id == "" && key != "" {
		id = mnemo.IdempotentID(profile, key, 0)
	}
	occurred, err := parseTime("occurred_at", in.OccurredAt)
	if err != nil {
		return nil, StoreOutput{}, err
	}
	res, err := h.e.Write(ctx, []mnemo.Input{{ID: id, Profile: profile, Content: in.Content, Session: in.Session,
		Project: in.Project, Kind: in.Kind, Actor: in.Actor, Seq: in.Seq, OccurredAt: occurred, Importance: in.Importance, Metadata: md}})
	if err != nil {
		return nil, StoreOutput{}, toolError(err)
	}
	out := StoreOutput{ID: res.Memories[0].ID, Replayed: res.AllReplayed(), EmbeddingDeferred: res.Deferred > 0}
	if out.Replayed {
		return text("Memory " + out.ID + " was already stored with this content; nothing changed."), out, nil
	}
	return text("Stored memory " + out.ID + "."), out, nil
}

func (h *handlers) recall(ctx context.Context, req *mcp.CallToolRequest, in RecallInput) (*mcp.CallToolResult, RecallOutput, error) {
	profile, err := h.profile(ctx, req, in.Profile)
	if err != nil {
		return nil, RecallOutput{}, err
	}
	limit := DefaultRecallLimit
	if in.Limit != nil {
		if limit = *in.Limit; limit < 1 || limit > mnemo.MaxLimit {
			return nil, RecallOutput{}, fmt.Errorf("limit = %d: must be an integer in [1, %d]", limit, mnemo.MaxLimit)
		}
	}
	if in.Actors != nil {
		if in.Actor != nil {
			return nil, RecallOutput{}, errors.New("give actor or its deprecated spelling actors, not both")
		}
		in.Actor = in.Actors
	}
	q := mnemo.Query{Text: in.Query, Profile: profile, Project: in.Project, Sessions: in.Session, Actors: in.Actor,
		Metadata: in.Metadata, Limit: limit}
	if in.MinRelevance != nil {
		if err := mnemotype.CheckRange("min_relevance", *in.MinRelevance, 0, 1); err != nil {
			return nil, RecallOutput{}, err
		}
		q.Overrides = map[string]string{"min_relevance": strconv.FormatFloat(*in.MinRelevance, 'g', -1, 64)}
	}
	if q.After, err = parseTime("after", in.After); err != nil {
		return nil, RecallOutput{}, err
	}
	if q.Before, err = parseTime("before", in.Before); err != nil {
		return nil, RecallOutput{}, err
	}
	res, err := h.e.Recall(ctx, q)
	if err != nil {
		return nil, RecallOutput{}, toolError(err)
	}
	out := RecallOutput{Results: make([]Recalled, 0, len(res.Results))}
	var b strings.Builder
	if len(res.Results) == 0 {
		b.WriteString("No relevant memories.")
	} else {
		fmt.Fprintf(&b, "%d memories, best first:\n", len(res.Results))
	}
	for _, r := range res.Results {
		legs := map[string]int{}
		for name, d := range r.Legs {
			if d.Rank > 0 {
				legs[name] = d.Rank
			}
		}
		out.Results = append(out.Results, Recalled{ID: r.ID, Content: r.Content, Rank: r.Rank, Score: r.Score, Relevance: r.Relevance,
			Kind: string(r.Kind), Project: r.Project, Session: r.Session, Actor: r.Actor, Seq: r.Seq,
			OccurredAt: r.OccurredAt, Importance: r.Importance, CreatedAt: r.CreatedAt, Legs: legs})
		scope := []string{r.OccurredAt.Format("2006-01-02"), string(r.Kind)}
		if r.Actor != "" {
			scope = append(scope, "by "+r.Actor)
		}
		if r.Project != "" {
			scope = append(scope, "project "+r.Project)
		}
		if r.Session != "" {
			scope = append(scope, "session "+r.Session)
		}
		scope = append(scope, fmt.Sprintf("relevance %.2f", r.Relevance))
		fmt.Fprintf(&b, "\n%d. [%s] (%s)\n%s\n", r.Rank, r.ID, strings.Join(scope, ", "), r.Content)
	}
	return text(b.String()), out, nil
}

func (h *handlers) forget(ctx context.Context, req *mcp.CallToolRequest, in ForgetInput) (*mcp.CallToolResult, ForgetOutput, error) {
	profile, err := h.profile(ctx, req, in.Profile)
	if err != nil {
		return nil, ForgetOutput{}, err
	}
	hasID, hasSession := strings.TrimSpace(in.ID) != "", strings.TrimSpace(in.Session) != ""
	switch {
	case hasID && hasSession:
		return nil, ForgetOutput{}, errors.New("give id or session, not both")
	case hasSession:
		n, err := h.e.ForgetMatching(ctx, mnemo.ForgetQuery{Profile: profile, Session: in.Session})
		if err != nil {
			return nil, ForgetOutput{}, toolError(err)
		}
		return text(fmt.Sprintf("Forgot %d memories of session %s.", n, in.Session)), ForgetOutput{Count: n}, nil
	case !hasID:
		return nil, ForgetOutput{}, errors.New("id is empty: give the id of a memory, or a session")
	}
	if err := h.e.Forget(ctx, profile, in.ID); err != nil {
		return nil, ForgetOutput{}, toolError(err)
	}
	return text("Forgot memory " + in.ID + "."), ForgetOutput{Forgotten: in.ID, Count: 1}, nil
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// toolError turns an engine error into the stable message the model sees:
// a validation message without its sentinel prefix (it names the field), a
// not-found that never says whether the id exists in another profile, a
// fixed sentence for a full disk, a closed engine or a deadline, and
// "internal error (see server log)" for anything else, whose details
// observe logs.
// parseTime parses an RFC 3339 argument; "" is the zero time.
func parseTime(field, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s = %q: must be an RFC 3339 time such as 2023-05-08T13:56:00Z", field, v)
	}
	return t, nil
}

func toolError(err error) error {
	switch {
	case errors.Is(err, mnemotype.ErrInvalid): // also an id stored with another memory (ErrExists)
		return errors.New(strings.TrimPrefix(err.Error(), mnemotype.ErrInvalid.Error()+": "))
	case errors.Is(err, mnemotype.ErrDimensionMismatch):
		return err // names the dimensions and the migration command
	case errors.Is(err, mnemotype.ErrNotFound):
		return errors.New("memory not found")
	case errors.Is(err, mnemotype.ErrStorageFull):
		return errors.New("storage full: nothing was written")
	case errors.Is(err, mnemotype.ErrClosed):
		return errors.New("the server is shutting down")
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return errors.New("the call was cancelled or took too long")
	default:
		return &internalError{cause: err}
	}
}

// internalError is what the client sees of an unexpected error; observe
// logs its cause.
type internalError struct{ cause error }

func (e *internalError) Error() string { return "internal error (see server log)" }
