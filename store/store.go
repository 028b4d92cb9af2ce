// Package store defines mnemo's storage port: the operations the engine and
// the recall pipeline need from a backend (SQLite now, Postgres next). The
// pipeline never sees SQL; implementations translate driver errors into the
// sentinels of package mnemotype at this boundary.
package store

import (
	"context"
	"slices"
	"time"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// Store is a memory backend. Implementations are safe for concurrent use by
// many goroutines and, for file-backed stores, by several processes.
//
// Every method taking a profile confines itself to that profile: a row of
// another profile is never read, changed or reported as existing
// (ErrNotFound instead).
type Store interface {
	// Insert stores memories atomically: all of them or none. Memories must
	// be valid and carry ids and timestamps. A profile never mixes
	// embedding dimensions: an embedding whose dimension differs from the
	// profile's (that of its most recently accessed embedded memory, as
	// EmbeddingDim reads it, checked in the same transaction) is an
	// ErrDimensionMismatch error naming both. Ids are unique per profile, and
	// an id the profile already holds (or that repeats in mems) is an error
	// wrapping ErrInvalid and ErrExists, naming it. A full disk or database
	// is an ErrStorageFull error; nothing of mems is stored then. A memory
	// without a Seq becomes the next turn of its session, and once the
	// insert succeeds mems hold the memories as stored, that Seq
	// included; after an error mems are as given.
	Insert(ctx context.Context, mems []mnemotype.Memory) error
	// Get returns the memories with the given ids in p.Profile, in the order
	// asked, skipping ids that do not exist. Embeddings are included only if
	// p.WithEmbedding.
	Get(ctx context.Context, p GetParams) ([]mnemotype.Memory, error)
	// Update changes the fields set in p of one memory and re-indexes it
	// (and the turns whose context it is). A Seq of 0, or a new Session
	// without a Seq, makes it its session's next turn. Returns ErrNotFound
	// if the id is not in the profile, ErrConflict if p's condition fails,
	// an ErrInvalid error naming the field if the result is invalid.
	Update(ctx context.Context, p UpdateParams) (mnemotype.Memory, error)
	// Delete removes one memory. Returns ErrNotFound if the id is not in the
	// profile.
	Delete(ctx context.Context, profile, id string) error
	// DeleteMatching removes the memories of p.Profile that p's filters
	// select (one filter at least, else an ErrInvalid error), re-indexes
	// the turns whose context they were, and returns how many it removed
	// (0 when none matched). Other processes' change feeds see each removal.
	DeleteMatching(ctx context.Context, p DeleteParams) (int, error)
	// DeleteProfile removes a profile: its memories, its settings, and the
	// names it used (sessions, projects, actors); its API keys are revoked
	// and no longer name it. Its statistics start afresh, so a profile of
	// the same name created later shares nothing with it. Returns the
	// counts; a profile with nothing stored gives zeros, not an error.
	DeleteProfile(ctx context.Context, profile string) (ProfileDeletion, error)
	// List pages through a profile's memories in a stable order (creation
	// time, then id).
	List(ctx context.Context, p ListParams) (ListPage, error)
	// Lexical runs a full-text query inside a scope. Scores are "higher is
	// better" (the negated BM25 of SQLite); hits come best first with Rank
	// unset. An OR query with a Limit may skip the rows that match only
	// terms common in the store, as Lucene's CommonTermsQuery does, when
	// at least Limit rows match the others; every score returned is still
	// the full query's.
	Lexical(ctx context.Context, p LexicalParams) ([]mnemotype.Hit, error)
	// Neighbors returns the turns around each of ids: the memories of its
	// session (not the empty session) whose Seq is within radius of its
	// own, itself aside, that are in scope. Each comes once per memory of
	// ids it neighbours, with the distance in Seq, ordered by that memory's
	// id (byte order), then distance, then Seq.
	Neighbors(ctx context.Context, scope mnemotype.Scope, ids []string, radius int) ([]Neighbor, error)
	// RecentlyAccessed returns the ids of the n most recently accessed
	// memories in the scope that have an embedding (vector pool).
	RecentlyAccessed(ctx context.Context, scope mnemotype.Scope, n int) ([]string, error)
	// InScope returns the ids of the memories in the scope (every field of
	// Scope honoured), in no particular order: for an index that cannot
	// evaluate part of a scope (a metadata filter) itself. When ids is not
	// nil, only those of ids are considered.
	InScope(ctx context.Context, scope mnemotype.Scope, ids []string) ([]string, error)
	// Changes reports what changed in a profile after sequence number
	// p.Since, for in-memory indexes to catch up with writes by any
	// process: one consistent page of at most p.Limit upserts (0: no limit),
	// in sequence order. When More is set, the page stopped at Seq and the
	// caller continues from there.
	Changes(ctx context.Context, p ChangesParams) (ChangeSet, error)
	// Sequence returns profile's current change sequence number: a cheap
	// check of whether Changes has anything new. It is at least the Seq of
	// every ChangeSet of profile read before, and a change to profile
	// committed after the call makes it larger. A store may number all
	// profiles' changes in one sequence (SQLite) or each profile's apart
	// (Postgres, whose writers to different profiles do not wait for each
	// other); numbers of different profiles are not comparable.
	Sequence(ctx context.Context, profile string) (int64, error)
	// Versions reads, in one round trip, what a recall checks its caches
	// against: profile's change sequence (as Sequence) and the settings
	// version, which a committed change to any stored settings (any
	// profile's or the server-wide, by any process or by hand) makes
	// larger. Settings read after the call may be kept while the version
	// stays the same.
	Versions(ctx context.Context, profile string) (Versions, error)
	// Instance identifies the database: fixed when it was created, shared
	// by its copies and backups, different for another database. A cache
	// of the store kept outside it (a dense index's snapshot) records it
	// with the sequence number it reflects, so it is never applied to
	// another database.
	Instance(ctx context.Context) (string, error)
	// MarkWatermark records in the database that a cache of profile kept
	// outside it (a dense index's snapshot) reflects profile's changes up
	// to seq, and returns the record's mark, a random token the cache keeps
	// beside seq. The cache is applied only while WatermarkMarked finds the
	// mark: a copy of the database (a file copy, a backup, a dump restored)
	// holds the marks made before it was taken and none made after, so a
	// cache written by one copy after they diverged is never applied to
	// another (nor to the database restored from a backup older than the
	// cache). The store keeps the KeptWatermarks most recent marks of each
	// profile. It advances no change sequence.
	MarkWatermark(ctx context.Context, profile string, seq int64) (string, error)
	// WatermarkMarked reports whether mark is one MarkWatermark returned
	// for profile and seq on this database, or on the one it is a copy of
	// before the copy was taken, and is still kept.
	WatermarkMarked(ctx context.Context, profile string, seq int64, mark string) (bool, error)
	// Sync makes every change committed so far durable: no crash or power
	// loss can undo it afterwards. A cache kept outside the store calls it
	// before it records a sequence number as its watermark, so that the
	// store never comes back behind it.
	Sync(ctx context.Context) error
	// Signals returns what the recency and access legs and the importance
	// prior read of the memories of profile with the given ids; ids that do
	// not exist are left out.
	Signals(ctx context.Context, profile string, ids []string) (map[string]Signals, error)
	// RecordAccess adds each access to its memory's access_count and raises
	// accessed_at; memories deleted meanwhile are skipped.
	RecordAccess(ctx context.Context, acc []Access) error
	// Settings returns the stored settings of profile ("" holds server-wide
	// defaults).
	Settings(ctx context.Context, profile string) (map[string]string, error)
	// SetSettings stores key/value pairs for profile atomically.
	SetSettings(ctx context.Context, profile string, kv map[string]string) error
	// SettingsProfiles returns the profiles that have stored settings
	// ("" aside), by name, whether or not they hold memories.
	SettingsProfiles(ctx context.Context) ([]string, error)
	// DeleteSettings removes keys from profile's stored settings
	// atomically; keys not stored are ignored.
	DeleteSettings(ctx context.Context, profile string, keys []string) error
	// Count returns the number of memories in profile.
	Count(ctx context.Context, profile string) (int, error)
	// Profiles returns every profile that holds memories, with how many,
	// by name.
	Profiles(ctx context.Context) ([]ProfileCount, error)
	// EmbeddingCounts counts memories by profile, embedding model and
	// embedding dimension: profile's, or every profile's when profile is
	// "". Memories without an embedding count under model "" and dimension
	// 0. Rows are ordered by profile, model, then dimension.
	EmbeddingCounts(ctx context.Context, profile string) ([]EmbeddingCount, error)
	// EmbeddingDim returns the dimension of profile's embeddings, read from
	// its most recently accessed embedded memory (0 when none has one). The
	// engine never mixes dimensions in a profile, so one row answers, at
	// the cost of one index lookup whatever the profile's size.
	EmbeddingDim(ctx context.Context, profile string) (int, error)
	// Close releases the store. Later calls return ErrClosed.
	Close() error

	// CreateKey stores a new API key. Its ID and Hash must be new; a
	// repeated one is an ErrInvalid error.
	CreateKey(ctx context.Context, k APIKey) error
	// KeyByHash returns the active (not revoked) key whose Hash is hash.
	// Returns ErrNotFound if there is none.
	KeyByHash(ctx context.Context, hash string) (APIKey, error)
	// ListKeys returns API keys, oldest first (creation time, then id).
	ListKeys(ctx context.Context, p ListKeysParams) ([]APIKey, error)
	// RevokeKey marks the active key with this id revoked at at. Returns
	// ErrNotFound if no active key has the id.
	RevokeKey(ctx context.Context, id string, at time.Time) error
}

// KeptWatermarks is how many of a profile's most recent watermarks a store
// keeps (Store.MarkWatermark): a cache whose mark was dropped since is
// rebuilt, so it is far more than the processes that may write a cache of
// one profile in turn.
const KeptWatermarks = 16

// GetParams selects memories by id.
type GetParams struct {
	Profile       string
	IDs           []string
	WithEmbedding bool
}

// UpdateParams changes a memory; nil fields are left as they are.
type UpdateParams struct {
	Profile    string
	ID         string
	Content    *string
	Kind       *mnemotype.Kind
	Project    *string
	Session    *string
	Actor      *string
	Seq        *int64
	OccurredAt *time.Time
	Importance *float64
	Metadata   *[]byte
	// Embedding replaces the embedding when EmbeddingModel is not empty.
	Embedding      []float32
	EmbeddingModel string
	// IfContent and IfEmbeddingModel, when set, make the update
	// conditional, atomically: it is made only if the memory's content
	// (embedding model, "" for none) is still this; otherwise Update
	// returns an ErrConflict error and changes nothing.
	IfContent        *string
	IfEmbeddingModel *string
}

// ListParams pages through memories.
type ListParams struct {
	Profile string
	Project string
	Session string
	// Actors, After, Before and Metadata restrict the listing as the
	// fields of mnemotype.Scope do.
	Actors        []string
	After, Before time.Time
	Metadata      []mnemotype.MetadataMatch
	// Kinds, when non-empty, restricts the listing to memories of these
	// kinds.
	Kinds []mnemotype.Kind
	Limit int
	// Cursor is the NextCursor of the previous page, or "" for the first.
	Cursor string
	// WithEmbedding also reads each memory's embedding.
	WithEmbedding bool
	// Total also counts every memory the filters select (ListPage.Total),
	// whatever the cursor.
	Total bool
}

// ProfileCount is a profile and its number of memories.
type ProfileCount struct {
	Profile  string `json:"profile"`
	Memories int    `json:"memories"`
}

// DeleteParams selects the memories DeleteMatching removes.
type DeleteParams struct {
	Profile string
	Project string
	Session string
	// Actors, After, Before and Metadata select as the fields of
	// mnemotype.Scope do. At least one field besides Profile is required.
	Actors        []string
	After, Before time.Time
	Metadata      []mnemotype.MetadataMatch
	// Kinds, when non-empty, selects the memories of these kinds.
	Kinds []mnemotype.Kind
}

// Unfiltered reports whether p selects by nothing but its profile
// (which DeleteMatching refuses: deleting a whole profile is DeleteProfile).
func (p DeleteParams) Unfiltered() bool {
	return p.Project == "" && p.Session == "" && len(p.Actors) == 0 && p.After.IsZero() && p.Before.IsZero() &&
		len(p.Metadata) == 0 && len(p.Kinds) == 0
}

// ProfileDeletion is what DeleteProfile removed.
type ProfileDeletion struct {
	Memories int `json:"memories"`
	Settings int `json:"settings"`
	Keys     int `json:"keys"`
}

// ListPage is one page of List.
type ListPage struct {
	Memories []mnemotype.Memory
	// NextCursor is "" on the last page.
	NextCursor string
	// Total is the number of memories the filters select, on every page
	// (only with ListParams.Total; else 0).
	Total int
}

// LexicalParams is one full-text query.
type LexicalParams struct {
	Scope mnemotype.Scope
	// Match is a query in the backend's full-text syntax, built by the
	// pipeline from quoted tokens (never raw user text).
	Match MatchQuery
	// Limit caps the hits; 0 means no cap (used with Only).
	Limit int
	// Only, when not nil, restricts the query to these ids (scoring another
	// leg's candidates).
	Only []string
	// MinHits, when > 0, asks for no hits at all unless at least MinHits
	// memories match: the caller broadens the query then, and counting
	// matches costs less than scoring them.
	MinHits int
	// Fields weighs the fields a memory is searched by (BM25F); the zero
	// value searches the content alone, scored as plain BM25.
	Fields FieldWeights
}

// FieldWeights weighs the fields of the lexical leg, each in [0, 5]: a
// term's frequencies in the fields are weighted and summed (BM25F), and a
// field of weight 0 is not searched. Content is the memory's text, Actor
// who said or did it, Time when it occurred in words ("Monday 8 May
// 2023"), Context the previous turns of its session.
type FieldWeights struct {
	Content, Actor, Time, Context float64
}

// IsZero reports whether w is the zero value (the content alone).
func (w FieldWeights) IsZero() bool { return w == FieldWeights{} }

// MatchQuery is a backend-neutral full-text query: documents containing all
// Terms (All) or any of them.
type MatchQuery struct {
	Terms []string
	All   bool
}

// Neighbor is a memory near another in its session (Store.Neighbors).
type Neighbor struct {
	// ID is the neighbour, Of the memory it is near, Distance the
	// difference of their Seq (≥ 1).
	ID, Of   string
	Distance int
}

// ChangesParams selects a page of a profile's change feed.
type ChangesParams struct {
	Profile string
	// Since: changes with a sequence number above it are reported.
	Since int64
	// Limit caps the upserts of the page; 0 reports every change.
	Limit int
	// Text asks for what the store's full-text index holds of each upsert:
	// its content (in the memory) and ChangeSet.Texts. The feed then also
	// lists the memories whose indexed context changed because a turn
	// before them in their session was written or deleted.
	Text bool
}

// IndexedText is what a store's full-text index holds of a memory besides
// its content, actor and occurred_at.
type IndexedText struct {
	// ID is the memory's.
	ID string
	// Context is the previous turns of its session the index holds with
	// it (the store's context turns), oldest first, one per line.
	Context string
	// Order is its place in the store's order of ties (lexical hits of
	// equal scores come in this order, lowest first).
	Order int64
}

// ChangeSet lists what changed in a profile between two sequence numbers
// (ChangesParams.Since, Seq], read as one snapshot. An id deleted and then
// inserted again appears in both lists: apply Deleted first, then Upserts
// (which reflect the rows as they are now).
type ChangeSet struct {
	// Upserts are memories inserted or changed, with embeddings, without
	// content (unless ChangesParams.Text), in sequence order.
	Upserts []mnemotype.Memory
	// Texts, with ChangesParams.Text, holds each upsert's indexed text:
	// Texts[i] is Upserts[i]'s.
	Texts []IndexedText
	// Deleted are ids removed.
	Deleted []string
	// Seq is the sequence number the set is complete up to.
	Seq int64
	// More is set when the page reached ChangesParams.Limit: changes after
	// Seq may remain.
	More bool
}

// Versions are the numbers Store.Versions reads.
type Versions struct {
	// Changes is the profile's change sequence (Store.Sequence).
	Changes int64
	// Settings advances with every committed change to stored settings.
	Settings int64
}

// Signals are a memory's values that rank it apart from its text.
type Signals struct {
	// OccurredAt is when it happened (recency ranks by it).
	OccurredAt  time.Time
	AccessedAt  time.Time
	AccessCount int64
	Importance  float64
}

// Access is one memory returned by a recall.
type Access struct {
	Profile string
	ID      string
	At      time.Time
	Count   int64
}

// Key roles. A profile key acts on its one profile; a service key acts on
// the profile each request names, any profile or one of a list; an admin
// key reads the server's operational endpoints (metrics) and acts on no
// profile's memories.
const (
	RoleProfile = ""
	RoleService = "service"
	RoleAdmin   = "admin"
)

// APIKey is a stored API key: a bearer token bound to one profile, to the
// profiles a service names, or (an admin key) to none. The token itself is
// never stored, only its hash.
type APIKey struct {
	// ID names the key publicly (for listing and revoking).
	ID string
	// Profile is the profile a profile key acts on; "" for the other roles.
	Profile string
	// Profiles lists the profiles a service key may act on; empty: any.
	// Empty for the other roles.
	Profiles []string
	// Role is RoleProfile, RoleService or RoleAdmin.
	Role string
	// Name is a free-form label.
	Name string
	// Hash is the hex SHA-256 of the token.
	Hash string
	// Prefix is the token's first characters, to recognise it by.
	Prefix    string
	CreatedAt time.Time
	// RevokedAt is zero while the key is active.
	RevokedAt time.Time
}

// ActsOn reports whether the key may act on profile's memories.
func (k APIKey) ActsOn(profile string) bool {
	switch k.Role {
	case RoleProfile:
		return profile != "" && profile == k.Profile
	case RoleService:
		return profile != "" && (len(k.Profiles) == 0 || slices.Contains(k.Profiles, profile))
	}
	return false
}

// EmbeddingCount is one row of Store.EmbeddingCounts: how many memories of
// Profile are embedded by Model with Dim dimensions (Model "", Dim 0: how
// many have no embedding).
type EmbeddingCount struct {
	Profile string `json:"profile"`
	Model   string `json:"model"`
	Dim     int    `json:"dim"`
	Count   int    `json:"count"`
}

// ListKeysParams selects API keys.
type ListKeysParams struct {
	// Profile, when set, restricts to the keys that may act on that
	// profile: its profile keys and the service keys that list it or act
	// on any profile.
	Profile string
	// IncludeRevoked also returns revoked keys.
	IncludeRevoked bool
}
