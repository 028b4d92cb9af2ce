// Package mnemotype holds mnemo's leaf domain types and sentinel errors.
//
// It imports only the standard library so that every other package (fusion,
// store implementations, the recall pipeline, servers) can share these types
// without import cycles. The root package re-exports them with type aliases.
package mnemotype

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Sentinel errors. Store implementations translate driver errors into these at
// their boundary so callers can use errors.Is.
var (
	// ErrNotFound is returned when a memory id does not exist in the caller's profile.
	ErrNotFound = errors.New("not found")
	// ErrClosed is returned by operations on a closed engine or store.
	ErrClosed = errors.New("closed")
	// ErrDimensionMismatch is returned when a vector's dimension differs from the
	// dimension already used in the same profile.
	ErrDimensionMismatch = errors.New("embedding dimension mismatch")
	// ErrInvalid wraps every validation failure; the wrapping message names the
	// field and its allowed range.
	ErrInvalid = errors.New("invalid input")
	// ErrExists is returned, wrapped together with ErrInvalid, when an id
	// that must be new is already taken (a memory's id in its profile, an
	// API key's id or hash).
	ErrExists = errors.New("already exists")
	// ErrConflict is returned by a conditional write whose condition no
	// longer holds (another writer changed the memory first); nothing was
	// written.
	ErrConflict = errors.New("conflict")
	// ErrReadOnly is returned by writes to a store opened for reading only
	// (a database file the process may not write, say).
	ErrReadOnly = errors.New("read-only")
	// ErrStorageFull is returned when the disk or the database is full: the
	// write was not made (nothing of it is stored), and nothing stored before
	// is lost.
	ErrStorageFull = errors.New("storage full")
)

// Invalidf returns an error wrapping ErrInvalid with a message naming what was wrong.
func Invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

// Kind classifies a memory.
type Kind string

// Memory kinds.
const (
	KindEpisodic Kind = "episodic"
	KindSemantic Kind = "semantic"
	KindIdentity Kind = "identity"
)

// Kinds lists every valid kind, in a stable order.
var Kinds = []Kind{KindEpisodic, KindSemantic, KindIdentity}

// ParseKind validates s as a Kind. The empty string yields KindEpisodic.
func ParseKind(s string) (Kind, error) {
	switch k := Kind(strings.ToLower(strings.TrimSpace(s))); k {
	case "":
		return KindEpisodic, nil
	case KindEpisodic, KindSemantic, KindIdentity:
		return k, nil
	default:
		return "", Invalidf("kind %q: must be one of episodic, semantic, identity", s)
	}
}

// DefaultImportance is the importance given to a memory that does not set one.
const DefaultImportance = 0.5

// Leg names. A leg is one ranked retrieval signal fed into fusion.
const (
	LegLexical = "lexical"
	LegDense   = "dense"
	LegRecency = "recency"
	LegAccess  = "access"
)

// LegNeighbor names the part of a result's score lent by the turns
// around it (recall-time neighbour expansion). It is not a leg: it ranks
// nothing of its own, and has no weight.
const LegNeighbor = "neighbor"

// Legs lists the built-in legs in a stable order.
var Legs = []string{LegLexical, LegDense, LegRecency, LegAccess}

// Memory is one stored memory.
type Memory struct {
	ID      string `json:"id"`
	Content string `json:"content"`
	Kind    Kind   `json:"kind"`
	Profile string `json:"profile"`
	Project string `json:"project,omitempty"`
	Session string `json:"session,omitempty"`
	// Actor is who said or did it: a speaker's name or a role such as
	// user or assistant; "" when unknown.
	Actor string `json:"actor,omitempty"`
	// Seq orders the memory inside its session: the turn before it has
	// the next lower Seq. Stores assign the next one when it is 0.
	Seq int64 `json:"seq,omitempty"`
	// OccurredAt is when it happened; CreatedAt is when it was stored.
	// Defaults to CreatedAt. Recency ranks by it.
	OccurredAt  time.Time       `json:"occurred_at"`
	Importance  float64         `json:"importance"`
	CreatedAt   time.Time       `json:"created_at"`
	AccessedAt  time.Time       `json:"accessed_at"`
	AccessCount int64           `json:"access_count"`
	Metadata    json.RawMessage `json:"metadata,omitempty"`
	// Embedding is the memory's vector, L2-normalised; nil when the memory has
	// not been embedded (yet).
	Embedding      []float32 `json:"-"`
	EmbeddingModel string    `json:"embedding_model,omitempty"`
}

// EmbeddingDim is the dimension of the memory's embedding, 0 when it has none.
func (m *Memory) EmbeddingDim() int { return len(m.Embedding) }

// MaxContentBytes bounds a memory's content; larger content is rejected.
const MaxContentBytes = 256 << 10

// MaxIDBytes bounds a memory's id.
const MaxIDBytes = 256

// CheckID reports an ErrInvalid error naming field unless id can name a
// memory: 1 to MaxIDBytes bytes of valid UTF-8, printable (letters, marks,
// numbers, punctuation, symbols and the ASCII space; no control, format or
// other separator characters) and not "." or ".." (which URL paths would
// resolve away), so that every id reads the same in a terminal and, with
// its "/" percent-encoded, names one memory in a URL path
// (/v1/memories/{id}).
func CheckID(field, id string) error {
	switch {
	case id == "":
		return Invalidf("%s is empty", field)
	case len(id) > MaxIDBytes:
		return Invalidf("%s is %d bytes: at most %d allowed", field, len(id), MaxIDBytes)
	case !utf8.ValidString(id):
		return Invalidf("%s is not valid UTF-8", field)
	case id == "." || id == "..":
		return Invalidf("%s %q: . and .. cannot be ids", field, id)
	case strings.Contains(id, "/") && slices.ContainsFunc(strings.Split(id, "/"), func(part string) bool {
		return part == "" || part == "." || part == ".."
	}):
		// A URL path holding such an id is cleaned into another one.
		return Invalidf("%s %q: the parts of an id between slashes cannot be empty, . or ..", field, id)
	}
	for _, r := range id {
		if !unicode.IsPrint(r) {
			return Invalidf("%s %q: must be printable (no control, format or line characters)", field, id)
		}
	}
	return nil
}

// MaxProfileBytes bounds a profile's name.
const MaxProfileBytes = 256

// CheckProfile reports an ErrInvalid error naming the profile unless name
// can name one: 1 to MaxProfileBytes bytes of valid UTF-8, printable
// (letters, marks, numbers, punctuation, symbols and the ASCII space; no
// control, format, line or other space characters) and neither beginning
// nor ending with a space. A profile is a tenant: a name is never trimmed
// or otherwise altered on its way in, so every path that takes one (a
// header, a query parameter, a body, an MCP argument, a flag) either names
// exactly the profile it reads and writes or is refused.
func CheckProfile(name string) error {
	switch {
	case name == "":
		return Invalidf("profile is required")
	case len(name) > MaxProfileBytes:
		return Invalidf("profile is %d bytes: at most %d allowed", len(name), MaxProfileBytes)
	case !utf8.ValidString(name):
		return Invalidf("profile is not valid UTF-8")
	case name[0] == ' ' || name[len(name)-1] == ' ':
		return Invalidf("profile %q begins or ends with a space", name)
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return Invalidf("profile %q: must be printable (no control, format, line or space characters but the ASCII space)", name)
		}
	}
	return nil
}

// CheckText reports an ErrInvalid error naming field unless s is valid
// UTF-8. Text is stored and returned as it was given, never with invalid
// bytes silently replaced.
func CheckText(field, s string) error {
	if !utf8.ValidString(s) {
		return Invalidf("%s is not valid UTF-8", field)
	}
	return nil
}

// Validate checks the fields a caller sets and returns an ErrInvalid error
// naming the first offending field: the id (see CheckID), text that is not
// valid UTF-8, and each field's own range.
func (m *Memory) Validate() error {
	if err := CheckProfile(m.Profile); err != nil {
		return err
	}
	if err := CheckID("id", m.ID); err != nil {
		return err
	}
	for _, f := range []struct{ name, v string }{
		{"content", m.Content}, {"kind", string(m.Kind)}, {"project", m.Project},
		{"session", m.Session}, {"actor", m.Actor}, {"embedding_model", m.EmbeddingModel},
	} {
		if err := CheckText(f.name, f.v); err != nil {
			return err
		}
	}
	if !utf8.Valid(m.Metadata) {
		return Invalidf("metadata is not valid UTF-8")
	}
	if strings.TrimSpace(m.Content) == "" {
		return Invalidf("content is empty")
	}
	if len(m.Content) > MaxContentBytes {
		return Invalidf("content is %d bytes: at most %d allowed", len(m.Content), MaxContentBytes)
	}
	if _, err := ParseKind(string(m.Kind)); err != nil {
		return err
	}
	if err := CheckUnit("importance", m.Importance); err != nil {
		return err
	}
	if len(m.Actor) > MaxActorBytes {
		return Invalidf("actor is %d bytes: at most %d allowed", len(m.Actor), MaxActorBytes)
	}
	if m.Seq < 0 {
		return Invalidf("seq = %d: must be ≥ 0 (0: the next in the session)", m.Seq)
	}
	if !m.OccurredAt.IsZero() {
		if err := CheckTime("occurred_at", m.OccurredAt); err != nil {
			return err
		}
	}
	if len(m.Metadata) > 0 {
		var obj map[string]any
		if err := json.Unmarshal(m.Metadata, &obj); err != nil || obj == nil {
			return Invalidf("metadata must be a JSON object")
		}
	}
	for _, f := range m.Embedding {
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return Invalidf("embedding contains a non-finite value")
		}
	}
	return nil
}

// MinYear and MaxYear bound the years of the timestamps mnemo stores: every
// RFC 3339 time in years 0001–9999 round-trips exactly, to the nanosecond.
const (
	MinYear = 1
	MaxYear = 9999
)

// CheckTime reports an ErrInvalid error naming field unless t's year, in
// UTC, is in [MinYear, MaxYear].
func CheckTime(field string, t time.Time) error {
	if y := t.UTC().Year(); y < MinYear || y > MaxYear {
		return Invalidf("%s = %s: must be a time in years %04d-%04d", field, t.UTC().Format(time.RFC3339Nano), MinYear, MaxYear)
	}
	return nil
}

// CheckUnit reports an ErrInvalid error unless v is a finite number in [0, 1].
func CheckUnit(field string, v float64) error {
	return CheckRange(field, v, 0, 1)
}

// CheckRange reports an ErrInvalid error unless v is a finite number in [lo, hi].
func CheckRange(field string, v, lo, hi float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < lo || v > hi {
		return Invalidf("%s = %v: must be a number in [%g, %g]", field, v, lo, hi)
	}
	return nil
}

// Scope restricts a query to part of one profile's memories. Scope is enforced
// inside every leg's query, never by filtering afterwards.
type Scope struct {
	// Profile is the tenant; required.
	Profile string
	// Project, when set, restricts to memories of that project.
	Project string
	// Sessions, when non-empty, restricts to memories of those sessions.
	Sessions []string
	// Kinds, when non-empty, restricts to memories of those kinds.
	Kinds []Kind
	// Exclude lists memory ids that must not be returned (e.g. ids already in the prompt).
	Exclude []string
	// Actors, when non-empty, restricts to memories of those actors (""
	// for memories without one).
	Actors []string
	// After and Before, when not zero, restrict to memories that occurred
	// at or after After, and before Before.
	After, Before time.Time
	// Metadata, when non-empty, restricts to memories whose metadata
	// matches every entry.
	Metadata []MetadataMatch
}

// MetadataMatch keeps the memories whose metadata (a JSON object) has the
// top-level member Key equal to Value: a string, a number (float64; 2 and
// 2.0 are equal), a bool, or nil, which matches a member that is null and a
// memory without the member. A string never equals a number ("2" is not 2).
type MetadataMatch struct {
	Key   string
	Value any
}

// StringList is a list of strings that JSON may also give as one string:
// "s1" reads as ["s1"], ["s1", "s2"] as itself; null and "" read as nil
// (no filter: clients, and models calling tools, fill optional fields
// with ""; [""] is the filter on the empty value). It is written as an
// array. Filters take it, so that "session": "s1" and "session": ["s1",
// "s2"] both work.
type StringList []string

// UnmarshalJSON implements json.Unmarshaler.
func (l *StringList) UnmarshalJSON(b []byte) error {
	if strings.TrimSpace(string(b)) == "null" {
		*l = nil
		return nil
	}
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*l = nil
		if one != "" {
			*l = StringList{one}
		}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		kind := "array of non-strings"
		switch t := strings.TrimSpace(string(b)); {
		case strings.HasPrefix(t, "{"):
			kind = "object"
		case t == "true" || t == "false":
			kind = "bool"
		case !strings.HasPrefix(t, "["):
			kind = "number"
		}
		return &json.UnmarshalTypeError{Value: kind, Type: reflect.TypeFor[StringList]()}
	}
	*l = many
	return nil
}

// Limits of a metadata filter.
const (
	MaxMetadataKeys       = 32
	MaxMetadataKeyBytes   = 256
	MaxMetadataValueBytes = 4096
)

// MetadataFilter validates the metadata equality filter m (as a JSON
// object decodes: values string, float64, bool or nil) under field, and
// returns it as matches sorted by key.
func MetadataFilter(field string, m map[string]any) ([]MetadataMatch, error) {
	if len(m) > MaxMetadataKeys {
		return nil, Invalidf("%s has %d keys: at most %d allowed", field, len(m), MaxMetadataKeys)
	}
	out := make([]MetadataMatch, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		switch {
		case k == "":
			return nil, Invalidf("%s: a key is empty", field)
		case len(k) > MaxMetadataKeyBytes:
			return nil, Invalidf("%s: a key is %d bytes: at most %d allowed", field, len(k), MaxMetadataKeyBytes)
		case !utf8.ValidString(k):
			return nil, Invalidf("%s: a key is not valid UTF-8", field)
		}
		switch x := v.(type) {
		case string:
			if !utf8.ValidString(x) {
				return nil, Invalidf("%s.%s is not valid UTF-8", field, k)
			}
			if len(x) > MaxMetadataValueBytes {
				return nil, Invalidf("%s.%s is %d bytes: at most %d allowed", field, k, len(x), MaxMetadataValueBytes)
			}
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, Invalidf("%s.%s is not a finite number", field, k)
			}
		case int:
			v = float64(x)
		case int64:
			v = float64(x)
		case json.Number:
			f, err := x.Float64()
			if err != nil || math.IsInf(f, 0) {
				return nil, Invalidf("%s.%s is not a finite number", field, k)
			}
			v = f
		case bool, nil:
		default:
			kind := "an object"
			if reflect.TypeOf(v).Kind() == reflect.Slice {
				kind = "an array"
			}
			return nil, Invalidf("%s.%s: must be a string, a number, true, false or null (equality with a JSON scalar), not %s", field, k, kind)
		}
		out = append(out, MetadataMatch{Key: k, Value: v})
	}
	return out, nil
}

// ParseMetadataValue reads a metadata filter value given as text (a query
// parameter, a command-line flag): a JSON number, true, false, null or a
// "quoted string" as JSON reads it, any other text as itself.
func ParseMetadataValue(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err == nil {
		switch v.(type) {
		case string, float64, bool, nil:
			return v
		}
	}
	return s
}

// MaxActorBytes bounds a memory's actor.
const MaxActorBytes = 256

// Hit is one entry of a leg's ranked list.
type Hit struct {
	ID string `json:"id"`
	// Score is the leg's raw score, oriented so that higher is better
	// (the lexical leg negates FTS5's bm25()).
	Score float64 `json:"score"`
	// Rank is the 1-based dense rank (ties share a rank, no gaps).
	Rank int `json:"rank"`
}

// CompareHits orders hits by Score descending, then by id: the order of a
// leg's list (for slices.SortFunc).
func CompareHits(a, b Hit) int {
	switch {
	case a.Score > b.Score:
		return -1
	case a.Score < b.Score:
		return 1
	}
	return strings.Compare(a.ID, b.ID)
}

// LegDetail is one leg's view of one fused result.
type LegDetail struct {
	Rank         int     `json:"rank"`
	Score        float64 `json:"score"`
	Normalized   float64 `json:"normalized,omitempty"`
	Contribution float64 `json:"contribution"`
}
