package mnemo

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mnemo-dev/mnemo/dense"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/recall"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/store/postgres"
)

// List limits.
const (
	// DefaultListLimit is the page size List uses when ListQuery.Limit is 0.
	DefaultListLimit = 100
	// MaxListLimit bounds ListQuery.Limit.
	MaxListLimit = 1000
)

// ListQuery selects a page of a profile's memories.
type ListQuery struct {
	// Profile is required.
	Profile string
	// Project and Session, when set, restrict the listing.
	Project string
	Session string
	// Actors, After, Before and Metadata, when set, restrict the listing
	// as they restrict a recall (see Query).
	Actors        []string
	After, Before time.Time
	Metadata      map[string]any
	// Kinds, when set, restricts the listing to memories of these kinds.
	Kinds []Kind
	// Limit is the page size in [1, MaxListLimit]. Defaults to
	// DefaultListLimit.
	Limit int
	// Cursor is the NextCursor of the previous page, or "" for the first.
	Cursor string
	// WithEmbeddings includes each memory's embedding.
	WithEmbeddings bool
	// Total also counts every memory the filters select (Page.Total), on
	// any page.
	Total bool
}

// Page is one page of List.
type Page struct {
	Memories []Memory
	// NextCursor is "" on the last page.
	NextCursor string
	// Total is the number of memories the filters select, with
	// ListQuery.Total (else 0).
	Total int
}

// List pages through a profile's memories in a stable order (creation
// time, then id): a memory written while paging never shifts the pages
// already read. Embeddings are included when asked for. A malformed
// cursor is an ErrInvalid error.
func (e *Engine) List(ctx context.Context, q ListQuery) (Page, error) {
	done, err := e.enter()
	if err != nil {
		return Page{}, err
	}
	defer done()
	if err := mnemotype.CheckProfile(q.Profile); err != nil {
		return Page{}, err
	}
	if q.Limit == 0 {
		q.Limit = DefaultListLimit
	}
	if q.Limit < 1 || q.Limit > MaxListLimit {
		return Page{}, mnemotype.Invalidf("limit = %d: must be an integer in [1, %d]", q.Limit, MaxListLimit)
	}
	// The recall query's checks of the same fields.
	md, err := (Query{Profile: q.Profile, Project: q.Project, Sessions: []string{q.Session}, Actors: q.Actors,
		After: q.After, Before: q.Before, Metadata: q.Metadata, Kinds: q.Kinds}).validateScope()
	if err != nil {
		return Page{}, err
	}
	p, err := e.st.List(ctx, store.ListParams{Profile: q.Profile, Project: q.Project, Session: q.Session,
		Actors: q.Actors, After: q.After, Before: q.Before, Metadata: md, Kinds: q.Kinds,
		Limit: q.Limit, Cursor: q.Cursor, WithEmbedding: q.WithEmbeddings, Total: q.Total})
	if err != nil {
		return Page{}, err
	}
	return Page{Memories: p.Memories, NextCursor: p.NextCursor, Total: p.Total}, nil
}

// Patch changes some fields of a memory; nil fields are left as they are.
type Patch struct {
	Content *string
	// Kind is episodic, semantic or identity.
	Kind    *string
	Project *string
	// Session moves the memory to another session; without Seq it becomes
	// that session's last turn.
	Session *string
	// Actor is who said or did it; "" clears it.
	Actor *string
	// Seq is the memory's place in its session; 0 makes it the last turn.
	Seq *int64
	// OccurredAt is when it happened.
	OccurredAt *time.Time
	// Importance in [0, 1].
	Importance *float64
	// Metadata replaces the metadata (a JSON object); an empty value or
	// JSON null clears it.
	Metadata *json.RawMessage
}

// Update applies p to one memory of profile and returns it as stored. When
// the content changes the memory is embedded again (if the embedder fails,
// or does not answer within Config.WriteEmbedTimeout, it is kept without
// an embedding, as Write does, so a stale vector never describes new
// text). Returns ErrNotFound if the id is not in the profile and an
// ErrInvalid error naming the field if p is invalid (out of range, or text
// that is not valid UTF-8); nothing is written then.
func (e *Engine) Update(ctx context.Context, profile, id string, p Patch) (Memory, error) {
	done, err := e.enter()
	if err != nil {
		return Memory{}, err
	}
	defer done()
	if err := mnemotype.CheckProfile(profile); err != nil {
		return Memory{}, err
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"content", p.Content}, {"kind", p.Kind}, {"project", p.Project}, {"session", p.Session}, {"actor", p.Actor}} {
		if f.v != nil {
			if err := mnemotype.CheckText(f.name, *f.v); err != nil {
				return Memory{}, err
			}
		}
	}
	if p.Metadata != nil && !utf8.Valid(*p.Metadata) {
		return Memory{}, mnemotype.Invalidf("metadata is not valid UTF-8")
	}
	up := store.UpdateParams{Profile: profile, ID: id, Content: p.Content, Project: p.Project, Session: p.Session,
		Actor: p.Actor, Seq: p.Seq, Importance: p.Importance}
	if p.OccurredAt != nil {
		at := p.OccurredAt.UTC()
		if err := mnemotype.CheckTime("occurred_at", at); err != nil {
			return Memory{}, err
		}
		up.OccurredAt = &at
	}
	if p.Kind != nil {
		k, err := mnemotype.ParseKind(*p.Kind)
		if err != nil {
			return Memory{}, err
		}
		up.Kind = &k
	}
	if p.Importance != nil {
		if err := mnemotype.CheckUnit("importance", *p.Importance); err != nil {
			return Memory{}, err
		}
	}
	if p.Metadata != nil {
		md := []byte(*p.Metadata)
		if s := strings.TrimSpace(string(md)); s == "" || s == "null" {
			md = []byte{}
		}
		up.Metadata = &md
	}
	if p.Content != nil {
		if strings.TrimSpace(*p.Content) == "" {
			return Memory{}, mnemotype.Invalidf("content is empty")
		}
		if len(*p.Content) > MaxContentBytes {
			return Memory{}, mnemotype.Invalidf("content is %d bytes: at most %d allowed", len(*p.Content), MaxContentBytes)
		}
		cur, err := e.st.Get(ctx, store.GetParams{Profile: profile, IDs: []string{id}})
		if err != nil {
			return Memory{}, err
		}
		if len(cur) == 0 {
			return Memory{}, fmt.Errorf("update memory %s: %w", id, ErrNotFound)
		}
		if cur[0].Content != *p.Content && e.noEmbedding() != nil {
			up.EmbeddingModel = noEmbedderModel // clears the stale embedding
		} else if cur[0].Content != *p.Content {
			// A model name with no vector clears the embedding.
			up.EmbeddingModel = e.emb.Model()
			vecs, err := e.embedWrite(ctx, []string{*p.Content})
			if err == nil && (len(vecs) != 1 || len(vecs[0]) != e.emb.Dim()) {
				err = fmt.Errorf("embedder %s returned a malformed vector", e.emb.Model())
			}
			if err != nil {
				if ctx.Err() != nil {
					return Memory{}, ctx.Err()
				}
				e.log.Log(ctx, embedFailureLevel(err), "embedding failed; keeping the updated memory without an embedding",
					"id", id, "model", e.emb.Model(), "err", err)
			} else {
				up.Embedding = vecs[0]
			}
		}
	}
	m, err := e.st.Update(ctx, up)
	if err != nil {
		return Memory{}, err
	}
	if len(m.Embedding) == 0 {
		m.EmbeddingModel = "" // as stored: no vector, no model
	}
	m.Embedding = nil
	return m, nil
}

// WarmIndexes loads now, caught up with the database, the in-process
// dense index of each profile holding enough embedded memories for a graph
// (Config.ANN), instead of at its first recall, so that its graph starts
// growing in the background (unless the engine is OneShot). It returns
// the profiles loaded, and does nothing when the dense leg is the store's
// own (pgvector).
func (e *Engine) WarmIndexes(ctx context.Context) ([]string, error) {
	done, err := e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	if e.vec != recall.Dense(e.dense) {
		return nil, nil
	}
	counts, err := e.st.EmbeddingCounts(ctx, "")
	if err != nil {
		return nil, err
	}
	var warmed []string
	for _, c := range counts {
		if c.Dim == 0 || c.Count < e.dense.GraphMin() || (len(warmed) > 0 && warmed[len(warmed)-1] == c.Profile) {
			continue
		}
		if _, err := e.dense.Profile(ctx, c.Profile); err != nil {
			return warmed, err
		}
		warmed = append(warmed, c.Profile)
	}
	return warmed, nil
}

// BuildGraph links every embedded memory of profile into its in-process
// dense index's graph (HNSW) now, when the profile is large enough for one
// (Config.ANN), instead of leaving it to the background builder, and
// writes the index's snapshot; it returns how many memories it linked. It
// does nothing when the dense leg is the store's own (pgvector: see
// IndexVectors).
func (e *Engine) BuildGraph(ctx context.Context, profile string) (int, error) {
	done, err := e.enter()
	if err != nil {
		return 0, err
	}
	defer done()
	if err := mnemotype.CheckProfile(profile); err != nil {
		return 0, err
	}
	if e.vec != recall.Dense(e.dense) {
		return 0, nil
	}
	return e.dense.BuildGraph(ctx, profile)
}

// VectorIndex is a profile's ANN index in a store that ranks embeddings
// itself (see Engine.IndexVectors).
type VectorIndex = postgres.VectorIndex

// IndexVectors gives every profile large enough for one (5,000 embedded
// memories) an ANN index, when the engine's dense leg is its store's own
// (Postgres with pgvector: an HNSW index per profile), and drops those of
// profiles that no longer need one; below that size, and until an index
// is built, the store scans a scope's embeddings exactly. build, when not
// nil, chooses the profiles that get a new index now (rows: the embedded
// memories of dimension dim the index would hold). It returns the indexes
// and reports whether the store has them at all: false, and nothing done,
// on SQLite, and on Postgres without pgvector or with dense=process, whose
// dense index is this process's.
// Building an index takes a while (about half a second per thousand
// memories here) without blocking writes; keeping one makes each write of
// its profile's embeddings slower (docs/postgres.md).
func (e *Engine) IndexVectors(ctx context.Context, build func(profile string, dim, rows int) bool) ([]VectorIndex, bool, error) {
	done, err := e.enter()
	if err != nil {
		return nil, false, err
	}
	defer done()
	if _, own := e.vec.(*postgres.Dense); !own {
		return nil, false, nil
	}
	ix, err := e.st.(*postgres.Store).IndexVectors(ctx, 0, build)
	return ix, true, err
}

// leader is a store shared by processes that elects one of them to run a
// background task (the Postgres store: an advisory lock).
type leader interface {
	Lead(ctx context.Context, name string) (release func(), ok bool, err error)
}

// Lead takes the lease of background task name (such as the embedding
// backfill of mnemo serve) among the processes sharing the engine's store,
// so that several servers on one database run it one at a time. ok is
// false when another process holds it; call release when the run ends. A
// store that no other server shares (SQLite) always grants it.
func (e *Engine) Lead(ctx context.Context, name string) (release func(), ok bool, err error) {
	done, err := e.enter()
	if err != nil {
		return nil, false, err
	}
	defer done()
	l, shared := e.st.(leader)
	if !shared {
		return func() {}, true, nil
	}
	return l.Lead(ctx, name)
}

// Consistency returns a token for every write the engine's store has
// acknowledged so far, "" when every read sees every write anyway (no read
// replicas). A recall whose context carries it (WithConsistency) sees
// those writes: hand it to a client after its write, and take it back with
// its next recall.
func (e *Engine) Consistency(ctx context.Context) (string, error) {
	done, err := e.enter()
	if err != nil {
		return "", err
	}
	defer done()
	p, ok := e.st.(store.Positioner)
	if !ok {
		return "", nil
	}
	return p.Position(ctx)
}

// WithConsistency returns ctx carrying a token Engine.Consistency
// returned: recalls under it see the writes it stands for.
func WithConsistency(ctx context.Context, token string) context.Context {
	return store.WithConsistency(ctx, token)
}

// AllowReplica lets the recall made under ctx read from a read replica of
// a Postgres store (Config.Replicas), all its reads from the same one;
// with WithConsistency, one that has replayed the token's writes. Without
// it, a recall reads the primary.
func AllowReplica(ctx context.Context) context.Context {
	return store.AllowReplica(ctx)
}

// Ping checks that the engine is open and its store answers.
func (e *Engine) Ping(ctx context.Context) error {
	done, err := e.enter()
	if err != nil {
		return err
	}
	defer done()
	_, err = e.st.Sequence(ctx, "")
	return err
}

// APIKey is a stored API key (without its token). See Engine.CreateKey.
type APIKey = store.APIKey

// ErrUnknownKey is returned by Authenticate for a token that is not an
// active API key.
var ErrUnknownKey = errors.New("unknown or revoked API key")

// KeyTokenPrefix starts every API key token, so that leaked tokens are
// recognisable (e.g. by secret scanners).
const KeyTokenPrefix = "mnemo_"

// HashKey returns the hex SHA-256 of an API key token: the form keys are
// stored in.
func HashKey(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// API key roles (APIKey.Role).
const (
	// KeyRoleProfile is a profile key's role: it acts on its profile's
	// memories and settings, and nothing else.
	KeyRoleProfile = store.RoleProfile
	// KeyRoleService is a service's key: it acts on the profile each
	// request names, any profile or one of the key's list (APIKey.Profiles),
	// for a backend that serves many end users with one key.
	KeyRoleService = store.RoleService
	// KeyRoleAdmin is an operator's key: it reads server-wide data such
	// as metrics and acts on no profile's memories.
	KeyRoleAdmin = store.RoleAdmin
)

// CreateKey creates an API key bound to profile and returns its token (32
// random bytes, base64url, after KeyTokenPrefix). Only the token's SHA-256
// is stored: the token cannot be shown again.
func (e *Engine) CreateKey(ctx context.Context, profile, name string) (token string, key APIKey, err error) {
	if err := mnemotype.CheckProfile(profile); err != nil {
		return "", APIKey{}, err
	}
	return e.createKey(ctx, APIKey{Profile: profile, Role: KeyRoleProfile, Name: name})
}

// CreateServiceKey creates a service API key (role KeyRoleService) and
// returns its token, as CreateKey does. The key acts on the profile each
// request names: any profile when profiles is empty, else one of profiles.
func (e *Engine) CreateServiceKey(ctx context.Context, name string, profiles []string) (token string, key APIKey, err error) {
	var ps []string
	for _, p := range profiles {
		if err := mnemotype.CheckProfile(p); err != nil {
			return "", APIKey{}, fmt.Errorf("a service key's profiles: %w", err)
		}
		if !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	return e.createKey(ctx, APIKey{Profiles: ps, Role: KeyRoleService, Name: name})
}

// CreateAdminKey creates an admin API key (role KeyRoleAdmin, no profile)
// and returns its token, as CreateKey does.
func (e *Engine) CreateAdminKey(ctx context.Context, name string) (token string, key APIKey, err error) {
	return e.createKey(ctx, APIKey{Role: KeyRoleAdmin, Name: name})
}

// createKey stores key, given its profile(s), role and name, with a new id
// and token.
func (e *Engine) createKey(ctx context.Context, key APIKey) (token string, _ APIKey, err error) {
	done, err := e.enter()
	if err != nil {
		return "", APIKey{}, err
	}
	defer done()
	if err := mnemotype.CheckText("name", key.Name); err != nil {
		return "", APIKey{}, err
	}
	var secret [32]byte
	var idb [8]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return "", APIKey{}, fmt.Errorf("create key: %w", err)
	}
	if _, err := rand.Read(idb[:]); err != nil {
		return "", APIKey{}, fmt.Errorf("create key: %w", err)
	}
	token = KeyTokenPrefix + base64.RawURLEncoding.EncodeToString(secret[:])
	key.ID, key.Hash, key.Prefix, key.CreatedAt = "key_"+hex.EncodeToString(idb[:]), HashKey(token), token[:len(KeyTokenPrefix)+6], time.Now().UTC()
	if err := e.st.CreateKey(ctx, key); err != nil {
		return "", APIKey{}, err
	}
	return token, key, nil
}

// Keys lists API keys, oldest first: those that may act on profile (its
// profile keys and the service keys that may), or every key (admin keys
// too) when profile is "". Revoked keys are kept, and listed with
// includeRevoked.
func (e *Engine) Keys(ctx context.Context, profile string, includeRevoked bool) ([]APIKey, error) {
	done, err := e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	if err := checkProfileOrAll(profile); err != nil {
		return nil, err
	}
	return e.st.ListKeys(ctx, store.ListKeysParams{Profile: profile, IncludeRevoked: includeRevoked})
}

// RevokeKey revokes the active API key with this id; requests bearing it
// are refused from then on. Returns ErrNotFound if no active key has the id.
func (e *Engine) RevokeKey(ctx context.Context, id string) error {
	done, err := e.enter()
	if err != nil {
		return err
	}
	defer done()
	return e.st.RevokeKey(ctx, strings.TrimSpace(id), time.Now().UTC())
}

// Authenticate returns the active API key whose token is token. Returns an
// error wrapping ErrUnknownKey if there is none (unknown or revoked).
func (e *Engine) Authenticate(ctx context.Context, token string) (APIKey, error) {
	done, err := e.enter()
	if err != nil {
		return APIKey{}, err
	}
	defer done()
	if token == "" {
		return APIKey{}, fmt.Errorf("authenticate: %w", ErrUnknownKey)
	}
	k, err := e.st.KeyByHash(ctx, HashKey(token))
	if errors.Is(err, ErrNotFound) {
		return APIKey{}, fmt.Errorf("authenticate: %w", ErrUnknownKey)
	}
	if err != nil {
		return APIKey{}, err
	}
	return k, nil
}

// RecallPool answers q like Recall with the candidate_policy "pool" (seed
// 001's two-stage pool: the lexical leg's top LexicalCap plus the PoolSize
// most recently accessed memories), reading the pool's embeddings from the
// store instead of loading the profile's in-memory index (dense.Scan). It
// is for one-shot processes such as `mnemo recollect`, where loading every
// embedding of a large profile would cost more than the recall itself; a
// long-running process should call Recall, whose index stays warm.
func (e *Engine) RecallPool(ctx context.Context, q Query) (*RecallResult, error) {
	done, err := e.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	over := make(map[string]string, len(q.Overrides)+1)
	for k, v := range q.Overrides {
		over[k] = v
	}
	over["candidate_policy"] = string(recall.PolicyPool)
	q.Overrides = over
	// A one-shot process's catalog would load the profile's index (its
	// snapshot) to answer the other reads: the store answers them.
	text := e.dense
	if e.cfg.ANN.OneShot {
		text = nil
	}
	if own, ok := e.vec.(*postgres.Dense); ok {
		return e.recall(ctx, q, own, text) // scores the pool in SQL
	}
	return e.recall(ctx, q, dense.NewScan(e.st), text)
}

// IndexVerification is what VerifyIndex found (see dense.Catalog.Verify).
type IndexVerification = dense.Verification

// IndexStats describe a profile's dense index (see dense.Stats).
type IndexStats = dense.Stats

// VerifyIndex restores profile's dense index as a new process would, from
// its snapshot and the changes after it, and compares it with one built
// from the database alone: any difference means the snapshot must be
// rebuilt (RebuildIndex).
func (e *Engine) VerifyIndex(ctx context.Context, profile string) (IndexVerification, error) {
	done, err := e.enter()
	if err != nil {
		return IndexVerification{}, err
	}
	defer done()
	if err := mnemotype.CheckProfile(profile); err != nil {
		return IndexVerification{}, err
	}
	return e.dense.Verify(ctx, profile)
}

// RebuildIndex drops profile's dense index and snapshot, builds the index
// from the database and writes its snapshot.
func (e *Engine) RebuildIndex(ctx context.Context, profile string) (IndexStats, error) {
	done, err := e.enter()
	if err != nil {
		return IndexStats{}, err
	}
	defer done()
	if err := mnemotype.CheckProfile(profile); err != nil {
		return IndexStats{}, err
	}
	return e.dense.Rebuild(ctx, profile)
}
