package storetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
)

// OpenFunc returns a fresh, empty store for one test. It may register
// cleanups on t; Exercise closes the store itself when the test ends (Close
// must be idempotent).
type OpenFunc func(t *testing.T) store.Store

// Exercise runs the conformance suite against the stores returned by open.
// Every subtest runs in parallel with the others and opens its own store, so
// open must hand out independent stores (a fresh file, schema or database).
func Exercise(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	groups := []struct {
		name string
		run  func(*testing.T, OpenFunc)
	}{
		{"Insert", exerciseInsert},
		{"Get", exerciseGet},
		{"Update", exerciseUpdate},
		{"Delete", exerciseDelete},
		{"List", exerciseList},
		{"Lexical", ExerciseLexical},
		{"Conversation", exerciseConversation},
		{"RecentlyAccessed", exerciseRecentlyAccessed},
		{"Changes", exerciseChanges},
		{"RecordAccess", exerciseRecordAccess},
		{"Signals", exerciseSignals},
		{"Instance", exerciseInstance},
		{"Settings", exerciseSettings},
		{"Count", exerciseCount},
		{"EmbeddingCounts", exerciseEmbeddingCounts},
		{"EmbeddingDim", exerciseEmbeddingDim},
		{"Keys", ExerciseKeys},
		{"Close", exerciseClose},
		{"Concurrent", exerciseConcurrent},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			g.run(t, open)
		})
	}
}

// ---------------------------------------------------------------------------
// Test bundle and fixtures.

// bundle is what every subtest works with: its own store and a context that
// is cancelled when the subtest ends.
type bundle struct {
	t   *testing.T
	s   store.Store
	ctx context.Context
}

// setup marks t parallel and opens a fresh store closed at the end of t.
func setup(t *testing.T, open OpenFunc) *bundle {
	t.Helper()
	t.Parallel()
	return another(t, open)
}

// another opens one more fresh store for t, closed at the end of t.
func another(t *testing.T, open OpenFunc) *bundle {
	t.Helper()
	s := open(t)
	if s == nil {
		t.Fatal("open returned a nil store")
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return &bundle{t: t, s: s, ctx: t.Context()}
}

func (b *bundle) insert(ms ...mnemotype.Memory) {
	b.t.Helper()
	if err := b.s.Insert(b.t.Context(), ms); err != nil {
		b.t.Fatalf("Insert: %v", err)
	}
}

// get returns memories of profile with their embeddings.
func (b *bundle) get(profile string, ids ...string) []mnemotype.Memory {
	b.t.Helper()
	ms, err := b.s.Get(b.t.Context(), store.GetParams{Profile: profile, IDs: ids, WithEmbedding: true})
	if err != nil {
		b.t.Fatalf("Get(%s, %v): %v", profile, ids, err)
	}
	return ms
}

// getOne returns one memory, failing the test if it is missing.
func (b *bundle) getOne(profile, id string) mnemotype.Memory {
	b.t.Helper()
	ms := b.get(profile, id)
	if len(ms) != 1 {
		b.t.Fatalf("Get(%s, %s) returned %d memories, want 1", profile, id, len(ms))
	}
	return ms[0]
}

func (b *bundle) seq() int64 {
	b.t.Helper()
	n, err := b.s.Sequence(b.t.Context(), "alice")
	if err != nil {
		b.t.Fatalf("Sequence: %v", err)
	}
	return n
}

func (b *bundle) count(profile string) int {
	b.t.Helper()
	n, err := b.s.Count(b.t.Context(), profile)
	if err != nil {
		b.t.Fatalf("Count(%s): %v", profile, err)
	}
	return n
}

// lexical runs p, checks the invariants every result must meet and returns
// the ids best first.
func (b *bundle) lexical(p store.LexicalParams) []string {
	b.t.Helper()
	hits, err := b.s.Lexical(b.t.Context(), p)
	if err != nil {
		b.t.Fatalf("Lexical(%q, all=%v): %v", p.Match.Terms, p.Match.All, err)
	}
	checkHits(b.t, hits)
	return hitIDs(hits)
}

// search is lexical over a whole profile.
func (b *bundle) search(profile string, all bool, terms ...string) []string {
	b.t.Helper()
	return b.lexical(store.LexicalParams{Scope: mnemotype.Scope{Profile: profile}, Match: store.MatchQuery{Terms: terms, All: all}})
}

// lexicalScores returns the lexical scores of profile's memories matching
// any of terms, by id.
func (b *bundle) lexicalScores(profile string, terms ...string) map[string]float64 {
	b.t.Helper()
	hits, err := b.s.Lexical(b.ctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: profile}, Match: store.MatchQuery{Terms: terms}})
	if err != nil {
		b.t.Fatal(err)
	}
	out := map[string]float64{}
	for _, h := range hits {
		out[h.ID] = h.Score
	}
	return out
}

func (b *bundle) changes(profile string, since int64) store.ChangeSet {
	b.t.Helper()
	cs, err := b.s.Changes(b.t.Context(), store.ChangesParams{Profile: profile, Since: since})
	if err != nil {
		b.t.Fatalf("Changes(%s, %d): %v", profile, since, err)
	}
	return cs
}

func (b *bundle) recent(scope mnemotype.Scope, n int) []string {
	b.t.Helper()
	ids, err := b.s.RecentlyAccessed(b.t.Context(), scope, n)
	if err != nil {
		b.t.Fatalf("RecentlyAccessed: %v", err)
	}
	return ids
}

// listAll pages through p with limit and returns every memory, checking that
// only the last page has no cursor.
func (b *bundle) listAll(p store.ListParams) (all []mnemotype.Memory, sizes []int) {
	b.t.Helper()
	for range 1000 {
		page, err := b.s.List(b.t.Context(), p)
		if err != nil {
			b.t.Fatalf("List(%+v): %v", p, err)
		}
		all = append(all, page.Memories...)
		sizes = append(sizes, len(page.Memories))
		if page.NextCursor == "" {
			return all, sizes
		}
		if page.NextCursor == p.Cursor {
			b.t.Fatalf("List returned the cursor it was given: %q", p.Cursor)
		}
		p.Cursor = page.NextCursor
	}
	b.t.Fatal("List did not reach its last page after 1000 pages")
	return nil, nil
}

// t0 is the fixtures' reference time: an odd nanosecond count, so that
// truncation to micro- or milliseconds shows.
var t0 = time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)

type memOpt func(*mnemotype.Memory)

// at sets both timestamps to t0+d.
func at(d time.Duration) memOpt {
	return func(m *mnemotype.Memory) { m.CreatedAt, m.AccessedAt = t0.Add(d), t0.Add(d) }
}

func accessedAt(d time.Duration) memOpt {
	return func(m *mnemotype.Memory) { m.AccessedAt = t0.Add(d) }
}

func project(p string) memOpt      { return func(m *mnemotype.Memory) { m.Project = p } }
func session(s string) memOpt      { return func(m *mnemotype.Memory) { m.Session = s } }
func kind(k mnemotype.Kind) memOpt { return func(m *mnemotype.Memory) { m.Kind = k } }
func importance(v float64) memOpt  { return func(m *mnemotype.Memory) { m.Importance = v } }
func metadata(js string) memOpt {
	return func(m *mnemotype.Memory) { m.Metadata = json.RawMessage(js) }
}
func accessCount(n int64) memOpt  { return func(m *mnemotype.Memory) { m.AccessCount = n } }
func embedded(seed uint64) memOpt { return embedding("test-model", vec(seed, 8)) }
func embedding(model string, v []float32) memOpt {
	return func(m *mnemotype.Memory) { m.Embedding, m.EmbeddingModel = v, model }
}

// mem builds a valid memory.
func mem(profile, id, content string, opts ...memOpt) mnemotype.Memory {
	m := mnemotype.Memory{
		ID: id, Profile: profile, Content: content, Kind: mnemotype.KindEpisodic,
		Importance: mnemotype.DefaultImportance, CreatedAt: t0, AccessedAt: t0,
	}
	for _, o := range opts {
		o(&m)
	}
	return m
}

// vec returns a deterministic L2-normalised vector.
func vec(seed uint64, dim int) []float32 {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	v := make([]float32, dim)
	var sum float64
	for i := range v {
		v[i] = float32(r.NormFloat64())
		sum += float64(v[i]) * float64(v[i])
	}
	norm := float32(math.Sqrt(sum))
	for i := range v {
		v[i] /= norm
	}
	return v
}

// awkwardVector holds float32 values a lossy encoding would damage: signed
// zero, subnormals, extremes and values with no short decimal form.
func awkwardVector() []float32 {
	v := []float32{
		0, float32(math.Copysign(0, -1)), 1, -1,
		math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
		math.Float32frombits(0x007fffff), // largest subnormal
		math.MaxFloat32, -math.MaxFloat32,
		0.1, 1.0 / 3, math.Float32frombits(0x3f800001), math.Pi,
	}
	return append(v, vec(7, 371)...)
}

func ptr[T any](v T) *T { return &v }

func hitIDs(hits []mnemotype.Hit) []string {
	ids := make([]string, len(hits))
	for i, h := range hits {
		ids[i] = h.ID
	}
	return ids
}

// checkHits checks what every lexical result must satisfy: best first by
// a finite Score, Rank unset, no id twice.
func checkHits(t testing.TB, hits []mnemotype.Hit) {
	t.Helper()
	seen := map[string]bool{}
	for i, h := range hits {
		if math.IsNaN(h.Score) || math.IsInf(h.Score, 0) {
			t.Errorf("hit %d (%s) has score %v", i, h.ID, h.Score)
		}
		if h.Rank != 0 {
			t.Errorf("hit %d (%s) has Rank %d, want it unset", i, h.ID, h.Rank)
		}
		if i > 0 && h.Score > hits[i-1].Score {
			t.Errorf("hits not best first: %s (%v) after %s (%v)", h.ID, h.Score, hits[i-1].ID, hits[i-1].Score)
		}
		if seen[h.ID] {
			t.Errorf("hit %s returned twice", h.ID)
		}
		seen[h.ID] = true
	}
}

func sorted(ids []string) []string { return slices.Sorted(slices.Values(ids)) }

func memIDs(ms []mnemotype.Memory) []string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	return ids
}

// sameSet reports whether got and want hold the same ids, ignoring order.
func sameSet(got, want []string) bool {
	return slices.Equal(sorted(got), sorted(want))
}

type embCheck int

const (
	embIgnore embCheck = iota // embedding not compared
	embNone                   // embedding must be absent
	embExact                  // embedding and model must match bit for bit
)

// diffMemory lists the fields where got differs from want. Timestamps must
// be equal to the nanosecond and in UTC; metadata is compared as JSON (a
// backend may normalise whitespace or key order).
func diffMemory(got, want mnemotype.Memory, ec embCheck) []string {
	var d []string
	diff := func(field string, g, w any) { d = append(d, fmt.Sprintf("%s = %#v, want %#v", field, g, w)) }
	if got.ID != want.ID {
		diff("ID", got.ID, want.ID)
	}
	if got.Profile != want.Profile {
		diff("Profile", got.Profile, want.Profile)
	}
	if got.Project != want.Project {
		diff("Project", got.Project, want.Project)
	}
	if got.Session != want.Session {
		diff("Session", got.Session, want.Session)
	}
	if got.Kind != want.Kind {
		diff("Kind", got.Kind, want.Kind)
	}
	if got.Actor != want.Actor {
		diff("Actor", got.Actor, want.Actor)
	}
	// A store numbers a memory stored without Seq (the want of a test
	// that gave none is 0): any positive number will do.
	if (want.Seq != 0 && got.Seq != want.Seq) || (want.Seq == 0 && got.Seq <= 0) {
		diff("Seq", got.Seq, want.Seq)
	}
	occurred := want.OccurredAt
	if occurred.IsZero() {
		occurred = want.CreatedAt // the default
	}
	if got.Content != want.Content {
		diff("Content", got.Content, want.Content)
	}
	if math.Float64bits(got.Importance) != math.Float64bits(want.Importance) {
		diff("Importance", got.Importance, want.Importance)
	}
	for _, tt := range []struct {
		name      string
		got, want time.Time
	}{{"OccurredAt", got.OccurredAt, occurred}, {"CreatedAt", got.CreatedAt, want.CreatedAt}, {"AccessedAt", got.AccessedAt, want.AccessedAt}} {
		if !tt.got.Equal(tt.want) {
			diff(tt.name, tt.got.Format(time.RFC3339Nano), tt.want.Format(time.RFC3339Nano))
		}
		if tt.got.Location() != time.UTC {
			diff(tt.name+".Location()", tt.got.Location().String(), "UTC")
		}
	}
	if got.AccessCount != want.AccessCount {
		diff("AccessCount", got.AccessCount, want.AccessCount)
	}
	if !jsonEqual(got.Metadata, want.Metadata) {
		diff("Metadata", string(got.Metadata), string(want.Metadata))
	}
	switch ec {
	case embNone:
		if got.Embedding != nil {
			diff("Embedding (not asked for)", fmt.Sprintf("%d values", len(got.Embedding)), "nil")
		}
	case embExact:
		if !store.SameVector(got.Embedding, want.Embedding) {
			diff("Embedding", describeVector(got.Embedding), describeVector(want.Embedding))
		}
		if got.EmbeddingModel != want.EmbeddingModel {
			diff("EmbeddingModel", got.EmbeddingModel, want.EmbeddingModel)
		}
	}
	return d
}

func checkMemory(t testing.TB, got, want mnemotype.Memory, ec embCheck) {
	t.Helper()
	if d := diffMemory(got, want, ec); len(d) > 0 {
		t.Errorf("memory %s:\n\t%s", want.ID, strings.Join(d, "\n\t"))
	}
}

func describeVector(v []float32) string {
	if len(v) <= 4 {
		return fmt.Sprint(v)
	}
	return fmt.Sprintf("%d values %v…", len(v), v[:4])
}

func jsonEqual(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	decode := func(raw []byte) (any, bool) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		var v any
		return v, dec.Decode(&v) == nil
	}
	va, okA := decode(a)
	vb, okB := decode(b)
	return okA && okB && reflect.DeepEqual(va, vb)
}

// ---------------------------------------------------------------------------
// Insert.

func exerciseInsert(t *testing.T, open OpenFunc) {
	t.Run("RoundTripsEveryField", func(t *testing.T) {
		b := setup(t, open)
		loc := time.FixedZone("IST", 5*3600+1800)
		created := time.Date(2024, 2, 29, 23, 59, 59, 999999999, loc)
		full := mnemotype.Memory{
			ID: "rt-full", Profile: "alice", Project: "apollo", Session: "s-42", Kind: mnemotype.KindSemantic,
			Actor: "Caroline Ø'Brien", Seq: 17, OccurredAt: time.Date(3000, 1, 1, 0, 0, 0, 1, loc),
			Content:    "The café on Rue Cler serves a naïve espresso — 東京 style ☕ with \"quotes\" and 'apostrophes'",
			Importance: 0.1, CreatedAt: created, AccessedAt: created.Add(36*time.Hour + 1), AccessCount: 7,
			Metadata:       json.RawMessage(`{"source":"chat","tags":["a","b"],"n":3.5,"nested":{"ok":true}}`),
			Embedding:      awkwardVector(),
			EmbeddingModel: "text-embedding-3-small@2024-01",
		}
		// time.Now carries a monotonic reading and a local zone; neither
		// may leak into what is stored.
		now := time.Now().Add(time.Nanosecond)
		plain := mem("alice", "rt-plain", "no embedding, no metadata", func(m *mnemotype.Memory) {
			m.CreatedAt, m.AccessedAt = now, now
			m.Importance = 1
		})
		b.insert(full, plain)
		got := b.get("alice", full.ID, plain.ID)
		if len(got) != 2 {
			t.Fatalf("Get returned %v, want both memories", memIDs(got))
		}
		checkMemory(t, got[0], full, embExact)
		checkMemory(t, got[1], plain, embExact)
		if got[1].Embedding != nil || got[1].EmbeddingModel != "" {
			t.Errorf("memory inserted without embedding came back with %d values, model %q", len(got[1].Embedding), got[1].EmbeddingModel)
		}
	})

	t.Run("RoundTripsMetadata", func(t *testing.T) {
		for _, tc := range []struct{ name, meta string }{
			{"None", ""},
			{"EmptyObject", `{}`},
			{"Nested", `{"a":1,"nested":{"b":[1,2,"x",null,false]},"z":{}}`},
			{"UnicodeAndEscapes", `{"s":"caf\u00e9 \"quoted\" \\ 東京\n","emoji":"🧠"}`},
			{"BigNumbers", `{"big":12345678901234567890,"tiny":1e-300,"neg":-0.5}`},
			{"Whitespace", "{ \"k\" :\t\"v\" }"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				b := setup(t, open)
				m := mem("alice", "meta-1", "memory with metadata", metadata(tc.meta))
				b.insert(m)
				checkMemory(t, b.getOne("alice", m.ID), m, embExact)
				page, err := b.s.List(b.ctx, store.ListParams{Profile: "alice", Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Memories) != 1 || !jsonEqual(page.Memories[0].Metadata, m.Metadata) {
					t.Errorf("List lost the metadata: %+v", page.Memories)
				}
			})
		}
	})

	t.Run("DuplicateInBatchInsertsNothing", func(t *testing.T) {
		b := setup(t, open)
		b.insert(mem("alice", "before", "an earlier memory"))
		seq := b.seq()
		batch := []mnemotype.Memory{
			mem("alice", "dup-a7f3", "walrus first copy", embedded(1)),
			mem("alice", "fresh-b", "walrus second", embedded(2)),
			mem("alice", "dup-a7f3", "walrus third copy", embedded(3)),
		}
		err := b.s.Insert(b.ctx, batch)
		if !errors.Is(err, mnemotype.ErrInvalid) || !errors.Is(err, mnemotype.ErrExists) {
			t.Fatalf("Insert with a duplicate id: err = %v, want ErrInvalid and ErrExists", err)
		}
		if !strings.Contains(err.Error(), "dup-a7f3") {
			t.Errorf("error %q does not name the duplicate id", err)
		}
		if n := b.count("alice"); n != 1 {
			t.Errorf("Count = %d after a failed batch, want 1", n)
		}
		if got := b.get("alice", "dup-a7f3", "fresh-b"); len(got) != 0 {
			t.Errorf("Get found %v from a failed batch", memIDs(got))
		}
		if got := b.search("alice", false, "walrus"); len(got) != 0 {
			t.Errorf("Lexical found %v from a failed batch", got)
		}
		if s := b.seq(); s != seq {
			t.Errorf("Sequence moved from %d to %d on a failed batch", seq, s)
		}
		if cs := b.changes("alice", seq); len(cs.Upserts)+len(cs.Deleted) != 0 {
			t.Errorf("Changes lists %v / %v after a failed batch", memIDs(cs.Upserts), cs.Deleted)
		}
	})

	t.Run("DuplicateOfStoredInsertsNothing", func(t *testing.T) {
		b := setup(t, open)
		old := mem("alice", "old-9c2e", "original content")
		b.insert(old)
		err := b.s.Insert(b.ctx, []mnemotype.Memory{
			mem("alice", "new-1", "brand new"),
			mem("alice", "old-9c2e", "replacement content"),
		})
		if !errors.Is(err, mnemotype.ErrInvalid) || !errors.Is(err, mnemotype.ErrExists) {
			t.Fatalf("Insert of a stored id: err = %v, want ErrInvalid and ErrExists", err)
		}
		if !strings.Contains(err.Error(), "old-9c2e") {
			t.Errorf("error %q does not name the duplicate id", err)
		}
		if got := b.get("alice", "new-1"); len(got) != 0 {
			t.Error("the valid memory of a failed batch was stored")
		}
		checkMemory(t, b.getOne("alice", old.ID), old, embExact)
	})

	t.Run("EmptyBatch", func(t *testing.T) {
		b := setup(t, open)
		for _, batch := range [][]mnemotype.Memory{nil, {}} {
			if err := b.s.Insert(b.ctx, batch); err != nil {
				t.Errorf("Insert(%#v) = %v", batch, err)
			}
		}
		if n := b.count("alice"); n != 0 {
			t.Errorf("Count = %d", n)
		}
	})

	t.Run("SameIDInTwoProfiles", func(t *testing.T) {
		// Ids are unique per profile: another tenant's id is neither
		// rejected (which would leak its existence) nor shared.
		b := setup(t, open)
		b.insert(mem("alice", "shared-id", "alice owns this"))
		b.insert(mem("bob", "shared-id", "bob owns this"))
		if got := b.getOne("alice", "shared-id"); got.Content != "alice owns this" {
			t.Errorf("alice sees %q", got.Content)
		}
		if got := b.getOne("bob", "shared-id"); got.Content != "bob owns this" {
			t.Errorf("bob sees %q", got.Content)
		}
		if err := b.s.Delete(b.ctx, "bob", "shared-id"); err != nil {
			t.Fatal(err)
		}
		if got := b.getOne("alice", "shared-id"); got.Content != "alice owns this" {
			t.Errorf("deleting bob's row touched alice's: %q", got.Content)
		}
	})

	t.Run("ManyInOneBatch", func(t *testing.T) {
		b := setup(t, open)
		ms := GenerateMemories(1, "alice", 500, 16)
		b.insert(ms...)
		if n := b.count("alice"); n != len(ms) {
			t.Fatalf("Count = %d, want %d", n, len(ms))
		}
		ids := memIDs(ms)
		got := b.get("alice", ids...)
		if len(got) != len(ms) {
			t.Fatalf("Get returned %d memories, want %d", len(got), len(ms))
		}
		for i := range ms {
			checkMemory(t, got[i], ms[i], embExact)
		}
	})
}

// ---------------------------------------------------------------------------
// Get.

func exerciseGet(t *testing.T, open OpenFunc) {
	fixture := func(b *bundle) {
		b.insert(
			mem("alice", "g-a", "alpha", embedded(1)),
			mem("alice", "g-b", "bravo", embedded(2)),
			mem("alice", "g-c", "charlie"),
			mem("bob", "g-bob", "bob's memory", embedded(3)),
		)
	}
	for _, tc := range []struct {
		name    string
		profile string
		ids     []string
		want    []string
	}{
		{"OrderAsked", "alice", []string{"g-c", "g-a", "g-b"}, []string{"g-c", "g-a", "g-b"}},
		{"ReverseOrder", "alice", []string{"g-b", "g-a"}, []string{"g-b", "g-a"}},
		{"MissingSkipped", "alice", []string{"nope", "g-b", "gone", "g-a"}, []string{"g-b", "g-a"}},
		{"OnlyMissing", "alice", []string{"nope"}, nil},
		{"OtherProfileHidden", "alice", []string{"g-bob", "g-a"}, []string{"g-a"}},
		{"OtherProfileSeesOwn", "bob", []string{"g-a", "g-bob"}, []string{"g-bob"}},
		{"UnknownProfile", "carol", []string{"g-a", "g-bob"}, nil},
		{"NoIDs", "alice", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t, open)
			fixture(b)
			got := b.get(tc.profile, tc.ids...)
			if ids := memIDs(got); !slices.Equal(ids, tc.want) && len(ids)+len(tc.want) > 0 {
				t.Errorf("Get(%s, %v) = %v, want %v", tc.profile, tc.ids, ids, tc.want)
			}
		})
	}

	t.Run("WithEmbedding", func(t *testing.T) {
		b := setup(t, open)
		m := mem("alice", "g-emb", "embedded memory", embedding("model-x", awkwardVector()))
		bare := mem("alice", "g-bare", "memory without embedding")
		b.insert(m, bare)
		for _, with := range []bool{false, true} {
			got, err := b.s.Get(b.ctx, store.GetParams{Profile: "alice", IDs: []string{m.ID, bare.ID}, WithEmbedding: with})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 2 {
				t.Fatalf("WithEmbedding=%v: got %v", with, memIDs(got))
			}
			ec := embNone
			if with {
				ec = embExact
			}
			checkMemory(t, got[0], m, ec)
			checkMemory(t, got[1], bare, ec)
		}
	})
}

// ---------------------------------------------------------------------------
// Update.

func exerciseUpdate(t *testing.T, open OpenFunc) {
	base := func() mnemotype.Memory {
		return mem("alice", "u-1", "the quick brown fox jumps", project("apollo"), session("s1"),
			kind(mnemotype.KindEpisodic), importance(0.25), metadata(`{"v":1}`), accessCount(3),
			accessedAt(time.Hour), embedding("model-a", vec(1, 16)))
	}
	for _, tc := range []struct {
		name  string
		p     store.UpdateParams
		apply func(*mnemotype.Memory)
	}{
		{"Content", store.UpdateParams{Content: ptr("a lazy dog sleeps")}, func(m *mnemotype.Memory) { m.Content = "a lazy dog sleeps" }},
		{"Kind", store.UpdateParams{Kind: ptr(mnemotype.KindIdentity)}, func(m *mnemotype.Memory) { m.Kind = mnemotype.KindIdentity }},
		{"Project", store.UpdateParams{Project: ptr("zeus")}, func(m *mnemotype.Memory) { m.Project = "zeus" }},
		{"ProjectCleared", store.UpdateParams{Project: ptr("")}, func(m *mnemotype.Memory) { m.Project = "" }},
		{"Session", store.UpdateParams{Session: ptr("s9")}, func(m *mnemotype.Memory) { m.Session = "s9" }},
		{"Importance", store.UpdateParams{Importance: ptr(0.875)}, func(m *mnemotype.Memory) { m.Importance = 0.875 }},
		{"ImportanceZero", store.UpdateParams{Importance: ptr(0.0)}, func(m *mnemotype.Memory) { m.Importance = 0 }},
		{"Metadata", store.UpdateParams{Metadata: ptr([]byte(`{"v":2,"new":["x"]}`))}, func(m *mnemotype.Memory) { m.Metadata = json.RawMessage(`{"v":2,"new":["x"]}`) }},
		{"MetadataCleared", store.UpdateParams{Metadata: ptr([]byte(nil))}, func(m *mnemotype.Memory) { m.Metadata = nil }},
		{"Embedding", store.UpdateParams{Embedding: awkwardVector(), EmbeddingModel: "model-b"}, func(m *mnemotype.Memory) {
			m.Embedding, m.EmbeddingModel = awkwardVector(), "model-b"
		}},
		{"EmbeddingWithoutModelIgnored", store.UpdateParams{Embedding: vec(99, 16)}, func(*mnemotype.Memory) {}},
		{"Several", store.UpdateParams{Content: ptr("renamed fox"), Importance: ptr(1.0), Session: ptr("")}, func(m *mnemotype.Memory) {
			m.Content, m.Importance, m.Session = "renamed fox", 1, ""
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t, open)
			m := base()
			other := mem("alice", "u-2", "an untouched neighbour", embedding("test-model", vec(5, 16)))
			b.insert(m, other)
			want := base()
			tc.apply(&want)
			p := tc.p
			p.Profile, p.ID = "alice", m.ID
			got, err := b.s.Update(b.ctx, p)
			if err != nil {
				t.Fatalf("Update: %v", err)
			}
			checkMemory(t, got, want, embIgnore)
			checkMemory(t, b.getOne("alice", m.ID), want, embExact)
			checkMemory(t, b.getOne("alice", other.ID), other, embExact)
		})
	}

	t.Run("Conditional", func(t *testing.T) {
		b := setup(t, open)
		m := base()
		b.insert(m)
		for name, p := range map[string]store.UpdateParams{
			"ContentChanged": {IfContent: ptr("what it said before"), Embedding: vec(9, 16), EmbeddingModel: "model-b"},
			"ModelChanged":   {IfEmbeddingModel: ptr(""), Embedding: vec(9, 16), EmbeddingModel: "model-b"},
			"BothOneChanged": {IfContent: ptr(m.Content), IfEmbeddingModel: ptr("model-z"), Importance: ptr(0.9)},
		} {
			p.Profile, p.ID = "alice", m.ID
			if _, err := b.s.Update(b.ctx, p); !errors.Is(err, mnemotype.ErrConflict) {
				t.Errorf("%s: Update = %v, want ErrConflict", name, err)
			}
			checkMemory(t, b.getOne("alice", m.ID), m, embExact)
		}
		got, err := b.s.Update(b.ctx, store.UpdateParams{Profile: "alice", ID: m.ID, IfContent: ptr(m.Content), IfEmbeddingModel: ptr("model-a"),
			Embedding: vec(9, 16), EmbeddingModel: "model-b"})
		if err != nil {
			t.Fatalf("Update whose condition holds: %v", err)
		}
		m.Embedding, m.EmbeddingModel = vec(9, 16), "model-b"
		checkMemory(t, got, m, embIgnore)
		checkMemory(t, b.getOne("alice", m.ID), m, embExact)
	})

	for _, tc := range []struct {
		name, profile, id string
	}{
		{"MissingID", "alice", "no-such-id"},
		{"OtherProfile", "bob", "u-1"},
		{"UnknownProfile", "carol", "u-1"},
	} {
		t.Run("NotFound"+tc.name, func(t *testing.T) {
			b := setup(t, open)
			m := base()
			b.insert(m, mem("bob", "u-bob", "bob's"))
			seq := b.seq()
			_, err := b.s.Update(b.ctx, store.UpdateParams{Profile: tc.profile, ID: tc.id, Content: ptr("hijacked")})
			if !errors.Is(err, mnemotype.ErrNotFound) {
				t.Fatalf("Update(%s, %s): err = %v, want ErrNotFound", tc.profile, tc.id, err)
			}
			checkMemory(t, b.getOne("alice", m.ID), m, embExact)
			if s := b.seq(); s != seq {
				t.Errorf("Sequence moved from %d to %d on a failed update", seq, s)
			}
		})
	}

	for _, tc := range []struct {
		name string
		p    store.UpdateParams
	}{
		{"EmptyContent", store.UpdateParams{Content: ptr("  ")}},
		{"ImportanceAboveOne", store.UpdateParams{Importance: ptr(1.5)}},
		{"ImportanceNaN", store.UpdateParams{Importance: ptr(math.NaN())}},
		{"UnknownKind", store.UpdateParams{Kind: ptr(mnemotype.Kind("dream"))}},
		{"MetadataNotObject", store.UpdateParams{Metadata: ptr([]byte(`[1,2]`))}},
	} {
		t.Run("Invalid"+tc.name, func(t *testing.T) {
			b := setup(t, open)
			m := base()
			b.insert(m)
			p := tc.p
			p.Profile, p.ID = "alice", m.ID
			if _, err := b.s.Update(b.ctx, p); !errors.Is(err, mnemotype.ErrInvalid) {
				t.Fatalf("Update: err = %v, want ErrInvalid", err)
			}
			checkMemory(t, b.getOne("alice", m.ID), m, embExact)
		})
	}

	t.Run("ContentReflectedInLexical", func(t *testing.T) {
		b := setup(t, open)
		m := base()
		b.insert(m, mem("alice", "u-filler", "an unrelated memory about tea"))
		if got := b.search("alice", false, "fox"); !slices.Equal(got, []string{m.ID}) {
			t.Fatalf("before update: fox -> %v", got)
		}
		if _, err := b.s.Update(b.ctx, store.UpdateParams{Profile: "alice", ID: m.ID, Content: ptr("a lazy dog sleeps")}); err != nil {
			t.Fatal(err)
		}
		if got := b.search("alice", false, "fox"); len(got) != 0 {
			t.Errorf("after update: old word fox still matches %v", got)
		}
		if got := b.search("alice", false, "dog"); !slices.Equal(got, []string{m.ID}) {
			t.Errorf("after update: new word dog -> %v", got)
		}
		// Updating another field must not disturb the full-text index.
		if _, err := b.s.Update(b.ctx, store.UpdateParams{Profile: "alice", ID: m.ID, Importance: ptr(0.9)}); err != nil {
			t.Fatal(err)
		}
		if got := b.search("alice", false, "dog"); !slices.Equal(got, []string{m.ID}) {
			t.Errorf("after importance update: dog -> %v", got)
		}
	})

	t.Run("AdvancesSequence", func(t *testing.T) {
		b := setup(t, open)
		m := base()
		b.insert(m, mem("alice", "u-2", "neighbour"))
		before := b.seq()
		if _, err := b.s.Update(b.ctx, store.UpdateParams{Profile: "alice", ID: m.ID, Importance: ptr(0.75)}); err != nil {
			t.Fatal(err)
		}
		after := b.seq()
		if after <= before {
			t.Fatalf("Sequence %d -> %d after Update, want it to advance", before, after)
		}
		cs := b.changes("alice", before)
		if !slices.Equal(memIDs(cs.Upserts), []string{m.ID}) || len(cs.Deleted) != 0 {
			t.Fatalf("Changes(since before update) = %v / %v, want [%s] / []", memIDs(cs.Upserts), cs.Deleted, m.ID)
		}
		if cs.Upserts[0].Importance != 0.75 {
			t.Errorf("Changes reports importance %v, want 0.75", cs.Upserts[0].Importance)
		}
		if cs.Seq != after {
			t.Errorf("ChangeSet.Seq = %d, Sequence = %d", cs.Seq, after)
		}
	})
}

// exerciseInstance: a store names its database the same way on every
// call and through writes; another store names another.
func exerciseInstance(t *testing.T, open OpenFunc) {
	t.Run("StableAndDistinct", func(t *testing.T) {
		b := setup(t, open)
		id, err := b.s.Instance(b.ctx)
		if err != nil || id == "" {
			t.Fatalf("Instance = %q, %v", id, err)
		}
		b.insert(mem("alice", "u-1", "a write"))
		if again, err := b.s.Instance(b.ctx); again != id || err != nil {
			t.Errorf("Instance after a write = %q, %v; was %q", again, err, id)
		}
		other := open(t)
		if o, err := other.Instance(b.ctx); o == id || err != nil {
			t.Errorf("another store's Instance = %q, %v; this one's is %q", o, err, id)
		}
	})
	t.Run("Watermarks", func(t *testing.T) {
		b := setup(t, open)
		b.insert(mem("alice", "u-1", "a write"))
		seq := b.seq()
		mark, err := b.s.MarkWatermark(b.ctx, "alice", seq)
		if err != nil || mark == "" {
			t.Fatalf("MarkWatermark = %q, %v", mark, err)
		}
		if after := b.seq(); after != seq {
			t.Errorf("MarkWatermark moved the change sequence from %d to %d", seq, after)
		}
		marked := func(s store.Store, profile string, seq int64, mark string) bool {
			t.Helper()
			ok, err := s.WatermarkMarked(b.ctx, profile, seq, mark)
			if err != nil {
				t.Fatalf("WatermarkMarked(%q, %d, %q): %v", profile, seq, mark, err)
			}
			return ok
		}
		if !marked(b.s, "alice", seq, mark) {
			t.Fatalf("the mark MarkWatermark returned is not found")
		}
		for _, tc := range []struct {
			profile string
			seq     int64
			mark    string
		}{{"bob", seq, mark}, {"alice", seq + 1, mark}, {"alice", seq, mark + "x"}, {"alice", seq, ""}} {
			if marked(b.s, tc.profile, tc.seq, tc.mark) {
				t.Errorf("WatermarkMarked(%q, %d, %q) = true; only (alice, %d, %q) was marked", tc.profile, tc.seq, tc.mark, seq, mark)
			}
		}
		other := open(t)
		if marked(other, "alice", seq, mark) {
			t.Errorf("another store holds this one's mark")
		}
		// The most recent marks of a profile are kept, another's apart.
		bob, err := b.s.MarkWatermark(b.ctx, "bob", 1)
		if err != nil {
			t.Fatal(err)
		}
		marks := []string{mark}
		for i := range store.KeptWatermarks {
			m, err := b.s.MarkWatermark(b.ctx, "alice", seq+int64(i))
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(marks, m) {
				t.Fatalf("MarkWatermark returned %q twice", m)
			}
			marks = append(marks, m)
		}
		if marked(b.s, "alice", seq, mark) {
			t.Errorf("the oldest of %d marks is kept: want the %d most recent", len(marks), store.KeptWatermarks)
		}
		for i, m := range marks[1:] {
			if !marked(b.s, "alice", seq+int64(i), m) {
				t.Errorf("mark %d of %d is not kept", i+2, len(marks))
			}
		}
		if !marked(b.s, "bob", 1, bob) {
			t.Errorf("bob's mark was dropped with alice's")
		}
		if err := b.s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := b.s.MarkWatermark(b.ctx, "alice", seq); !errors.Is(err, mnemotype.ErrClosed) {
			t.Errorf("MarkWatermark on a closed store = %v, want ErrClosed", err)
		}
		if _, err := b.s.WatermarkMarked(b.ctx, "alice", seq, mark); !errors.Is(err, mnemotype.ErrClosed) {
			t.Errorf("WatermarkMarked on a closed store = %v, want ErrClosed", err)
		}
	})
	t.Run("Sync", func(t *testing.T) {
		b := setup(t, open)
		b.insert(mem("alice", "u-1", "a write"))
		if err := b.s.Sync(b.ctx); err != nil {
			t.Fatalf("Sync: %v", err)
		}
		if got := b.getOne("alice", "u-1"); got.Content != "a write" {
			t.Errorf("after Sync: %+v", got)
		}
		if err := b.s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := b.s.Sync(b.ctx); !errors.Is(err, mnemotype.ErrClosed) {
			t.Errorf("Sync on a closed store = %v, want ErrClosed", err)
		}
	})
}

// ---------------------------------------------------------------------------
// Delete.

func exerciseDelete(t *testing.T, open OpenFunc) {
	t.Run("ProfilesFollowDeletions", func(t *testing.T) {
		b := setup(t, open)
		if ps, err := b.s.Profiles(b.ctx); err != nil || len(ps) != 0 {
			t.Errorf("Profiles of an empty store = %v, %v", ps, err)
		}
		b.insert(mem("bob", "b-1", "one"), mem("alice", "a-1", "one"), mem("alice", "a-2", "two"), mem("carol", "c-1", "one"))
		if err := b.s.Delete(b.ctx, "carol", "c-1"); err != nil {
			t.Fatal(err)
		}
		want := []store.ProfileCount{{Profile: "alice", Memories: 2}, {Profile: "bob", Memories: 1}}
		if ps, err := b.s.Profiles(b.ctx); err != nil || !slices.Equal(ps, want) {
			t.Errorf("Profiles = %v, %v; want %v", ps, err, want)
		}
		if _, err := b.s.DeleteProfile(b.ctx, "alice"); err != nil {
			t.Fatal(err)
		}
		if ps, err := b.s.Profiles(b.ctx); err != nil || !slices.Equal(ps, want[1:]) {
			t.Errorf("Profiles after deleting alice = %v, %v", ps, err)
		}
	})

	t.Run("MatchingSessionOrProject", func(t *testing.T) {
		b := setup(t, open)
		b.insert(
			mem("alice", "s1-a", "walrus one", session("s1"), project("p"), embedded(1)),
			mem("alice", "s1-b", "walrus two", session("s1"), embedded(2)),
			mem("alice", "s2-a", "walrus three", session("s2"), project("p"), embedded(3)),
			mem("alice", "none", "walrus four", embedded(4)),
			mem("bob", "s1-bob", "walrus of bob", session("s1"), project("p"), embedded(5)),
		)
		seq := b.seq()
		if _, err := b.s.DeleteMatching(b.ctx, store.DeleteParams{Profile: "alice"}); !errors.Is(err, mnemotype.ErrInvalid) {
			t.Errorf("DeleteMatching without project or session: %v, want ErrInvalid", err)
		}
		n, err := b.s.DeleteMatching(b.ctx, store.DeleteParams{Profile: "alice", Session: "s1"})
		if err != nil || n != 2 {
			t.Fatalf("DeleteMatching session s1 = %d, %v; want 2", n, err)
		}
		if got := b.search("alice", false, "walrus"); !sameSet(got, []string{"s2-a", "none"}) {
			t.Errorf("Lexical after deleting s1 = %v", got)
		}
		if got := b.search("bob", false, "walrus"); !slices.Equal(got, []string{"s1-bob"}) {
			t.Errorf("bob's s1 after deleting alice's = %v", got)
		}
		if cs := b.changes("alice", seq); !sameSet(cs.Deleted, []string{"s1-a", "s1-b"}) {
			t.Errorf("Changes after DeleteMatching: deleted %v", cs.Deleted)
		}
		if n, err := b.s.DeleteMatching(b.ctx, store.DeleteParams{Profile: "alice", Project: "p"}); err != nil || n != 1 {
			t.Errorf("DeleteMatching project p = %d, %v; want 1", n, err)
		}
		if n, err := b.s.DeleteMatching(b.ctx, store.DeleteParams{Profile: "alice", Session: "s9"}); err != nil || n != 0 {
			t.Errorf("DeleteMatching of an empty session = %d, %v; want 0, nil", n, err)
		}
		if got := b.count("alice"); got != 1 {
			t.Errorf("Count after the deletions = %d, want 1", got)
		}
	})

	t.Run("MatchingKinds", func(t *testing.T) {
		b := setup(t, open)
		b.insert(
			mem("alice", "k-ep", "walrus one", session("s1"), embedded(1)),
			mem("alice", "k-sem", "walrus two", session("s1"), kind(mnemotype.KindSemantic), embedded(2)),
			mem("alice", "k-id", "walrus three", session("s2"), kind(mnemotype.KindIdentity), embedded(3)),
			mem("bob", "k-bob", "walrus of bob", kind(mnemotype.KindSemantic), embedded(4)),
		)
		n, err := b.s.DeleteMatching(b.ctx, store.DeleteParams{Profile: "alice", Session: "s1", Kinds: []mnemotype.Kind{mnemotype.KindSemantic, mnemotype.KindIdentity}})
		if err != nil || n != 1 {
			t.Fatalf("DeleteMatching session s1, kinds semantic and identity = %d, %v; want 1", n, err)
		}
		if n, err := b.s.DeleteMatching(b.ctx, store.DeleteParams{Profile: "alice", Kinds: []mnemotype.Kind{mnemotype.KindIdentity}}); err != nil || n != 1 {
			t.Errorf("DeleteMatching kind identity = %d, %v; want 1", n, err)
		}
		if got := b.search("alice", false, "walrus"); !slices.Equal(got, []string{"k-ep"}) {
			t.Errorf("Lexical after deleting by kind = %v, want [k-ep]", got)
		}
		if got := b.count("bob"); got != 1 {
			t.Errorf("bob's memories after deleting alice's by kind = %d, want 1", got)
		}
	})

	t.Run("Profile", func(t *testing.T) {
		b := setup(t, open)
		b.insert(
			mem("alice", "a-1", "zebra crossing", session("s1"), actor("Caroline"), embedded(1)),
			mem("alice", "a-2", "zebra migration", session("s1"), embedded(2)),
			mem("bob", "b-1", "zebra of bob", session("s1"), embedded(3)),
		)
		for _, p := range []string{"alice", "bob"} {
			if err := b.s.SetSettings(b.ctx, p, map[string]string{"semantic_weight": "0.7"}); err != nil {
				t.Fatal(err)
			}
			if err := b.s.CreateKey(b.ctx, store.APIKey{ID: "key-" + p, Profile: p, Role: store.RoleProfile, Name: p + "'s", Hash: "hash-" + p, CreatedAt: t0}); err != nil {
				t.Fatal(err)
			}
		}
		bobBefore := b.lexicalScores("bob", "zebra")
		seq := b.seq()
		got, err := b.s.DeleteProfile(b.ctx, "alice")
		if err != nil || got != (store.ProfileDeletion{Memories: 2, Settings: 1, Keys: 1}) {
			t.Fatalf("DeleteProfile = %+v, %v; want 2 memories, 1 setting, 1 key", got, err)
		}
		if n := b.count("alice"); n != 0 {
			t.Errorf("Count after DeleteProfile = %d", n)
		}
		if got := b.search("alice", false, "zebra"); len(got) != 0 {
			t.Errorf("Lexical after DeleteProfile = %v", got)
		}
		if kv, err := b.s.Settings(b.ctx, "alice"); err != nil || len(kv) != 0 {
			t.Errorf("settings after DeleteProfile = %v, %v", kv, err)
		}
		if k, err := b.s.ListKeys(b.ctx, store.ListKeysParams{Profile: "alice", IncludeRevoked: true}); err != nil || len(k) != 0 {
			t.Errorf("alice's keys after DeleteProfile = %+v, %v", k, err)
		}
		if _, err := b.s.KeyByHash(b.ctx, "hash-alice"); err == nil {
			t.Error("alice's key still authenticates")
		}
		if cs := b.changes("alice", seq); !sameSet(cs.Deleted, []string{"a-1", "a-2"}) {
			t.Errorf("Changes after DeleteProfile: deleted %v", cs.Deleted)
		}
		// bob is untouched, to the score.
		if after := b.lexicalScores("bob", "zebra"); !maps.Equal(after, bobBefore) {
			t.Errorf("bob's scores moved: %v -> %v", bobBefore, after)
		}
		if kv, err := b.s.Settings(b.ctx, "bob"); err != nil || kv["semantic_weight"] != "0.7" {
			t.Errorf("bob's settings = %v, %v", kv, err)
		}
		if _, err := b.s.KeyByHash(b.ctx, "hash-bob"); err != nil {
			t.Errorf("bob's key: %v", err)
		}
		// A new alice starts afresh: her statistics are those of her new
		// memories alone.
		b.insert(mem("alice", "n-1", "zebra again", session("s1")), mem("alice", "n-2", "nothing else"))
		fresh := another(t, open)
		fresh.insert(mem("alice", "n-1", "zebra again", session("s1")), mem("alice", "n-2", "nothing else"))
		if got, want := b.lexicalScores("alice", "zebra"), fresh.lexicalScores("alice", "zebra"); !maps.Equal(got, want) {
			t.Errorf("the new alice scores %v, a fresh store %v", got, want)
		}
		if got, err := b.s.DeleteProfile(b.ctx, "carol"); err != nil || got != (store.ProfileDeletion{}) {
			t.Errorf("DeleteProfile of an unknown profile = %+v, %v", got, err)
		}
	})

	t.Run("GoneEverywhere", func(t *testing.T) {
		b := setup(t, open)
		b.insert(
			mem("alice", "d-1", "apple to delete", embedded(1), at(time.Hour)),
			mem("alice", "d-2", "apple to keep", embedded(2)),
		)
		seq := b.seq()
		if err := b.s.Delete(b.ctx, "alice", "d-1"); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		if got := memIDs(b.get("alice", "d-1", "d-2")); !slices.Equal(got, []string{"d-2"}) {
			t.Errorf("Get after delete = %v", got)
		}
		if all, _ := b.listAll(store.ListParams{Profile: "alice", Limit: 10}); !slices.Equal(memIDs(all), []string{"d-2"}) {
			t.Errorf("List after delete = %v", memIDs(all))
		}
		if got := b.search("alice", false, "apple"); !slices.Equal(got, []string{"d-2"}) {
			t.Errorf("Lexical after delete = %v", got)
		}
		if got := b.search("alice", false, "delete"); len(got) != 0 {
			t.Errorf("Lexical still finds the deleted memory's own word: %v", got)
		}
		if got := b.recent(mnemotype.Scope{Profile: "alice"}, 10); !slices.Equal(got, []string{"d-2"}) {
			t.Errorf("RecentlyAccessed after delete = %v", got)
		}
		if n := b.count("alice"); n != 1 {
			t.Errorf("Count after delete = %d", n)
		}
		if s := b.seq(); s <= seq {
			t.Errorf("Sequence %d -> %d after Delete, want it to advance", seq, s)
		}
		cs := b.changes("alice", seq)
		if !slices.Equal(cs.Deleted, []string{"d-1"}) || len(cs.Upserts) != 0 {
			t.Errorf("Changes after delete = %v / %v, want [] / [d-1]", memIDs(cs.Upserts), cs.Deleted)
		}
		if err := b.s.Delete(b.ctx, "alice", "d-1"); !errors.Is(err, mnemotype.ErrNotFound) {
			t.Errorf("second Delete: err = %v, want ErrNotFound", err)
		}
	})

	for _, tc := range []struct{ name, profile, id string }{
		{"MissingID", "alice", "no-such-id"},
		{"OtherProfile", "bob", "d-1"},
		{"EmptyProfile", "", "d-1"},
	} {
		t.Run("NotFound"+tc.name, func(t *testing.T) {
			b := setup(t, open)
			m := mem("alice", "d-1", "keep me", embedded(1))
			b.insert(m, mem("bob", "d-bob", "bob's"))
			seq := b.seq()
			if err := b.s.Delete(b.ctx, tc.profile, tc.id); !errors.Is(err, mnemotype.ErrNotFound) {
				t.Fatalf("Delete(%q, %q): err = %v, want ErrNotFound", tc.profile, tc.id, err)
			}
			checkMemory(t, b.getOne("alice", m.ID), m, embExact)
			if s := b.seq(); s != seq {
				t.Errorf("Sequence moved from %d to %d on a failed delete", seq, s)
			}
			if cs := b.changes(tc.profile, seq); len(cs.Deleted) != 0 {
				t.Errorf("failed delete reported in Changes: %v", cs.Deleted)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// List.

// listFixture inserts n memories into alice in shuffled order, three at a
// time sharing a creation time so that the id breaks ties, plus a few of
// bob's. It returns alice's memories in list order.
func listFixture(b *bundle, n int) []mnemotype.Memory {
	r := rand.New(rand.NewPCG(uint64(n), 42))
	var ms []mnemotype.Memory
	for i := range n {
		// ids in reverse of time order within a timestamp group
		ms = append(ms, mem("alice", fmt.Sprintf("l-%02d", n-i), fmt.Sprintf("list memory %d", i),
			at(time.Duration(i/3)*time.Second)))
	}
	want := slices.Clone(ms)
	slices.SortFunc(want, func(a, c mnemotype.Memory) int {
		if d := a.CreatedAt.Compare(c.CreatedAt); d != 0 {
			return d
		}
		return strings.Compare(a.ID, c.ID)
	})
	r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
	for i := range 5 {
		ms = append(ms, mem("bob", fmt.Sprintf("l-bob-%d", i), "bob's list memory", at(time.Duration(i)*time.Second)))
	}
	// Insert in several batches, so insertion order is not list order.
	for chunk := range slices.Chunk(ms, 7) {
		b.insert(chunk...)
	}
	return want
}

func exerciseList(t *testing.T, open OpenFunc) {
	for _, tc := range []struct {
		name      string
		n, limit  int
		wantSizes []int
	}{
		{"ThreePages", 25, 10, []int{10, 10, 5}},
		{"ExactMultiple", 20, 10, []int{10, 10}},
		{"OnePage", 7, 10, []int{7}},
		{"LimitOne", 4, 1, []int{1, 1, 1, 1}},
		{"Empty", 0, 10, []int{0}},
	} {
		t.Run("Paginates"+tc.name, func(t *testing.T) {
			b := setup(t, open)
			want := listFixture(b, tc.n)
			got, sizes := b.listAll(store.ListParams{Profile: "alice", Limit: tc.limit})
			if !slices.Equal(sizes, tc.wantSizes) {
				t.Errorf("page sizes = %v, want %v", sizes, tc.wantSizes)
			}
			if !slices.Equal(memIDs(got), memIDs(want)) {
				t.Errorf("listed\n\t%v\nwant (created_at, id) order\n\t%v", memIDs(got), memIDs(want))
			}
			for i := range min(len(got), len(want)) {
				checkMemory(t, got[i], want[i], embIgnore)
			}
		})
	}

	t.Run("WithEmbedding", func(t *testing.T) {
		b := setup(t, open)
		b.insert(mem("alice", "e-1", "with a vector", embedded(1)), mem("alice", "e-2", "without one", at(time.Second)))
		for _, with := range []bool{false, true} {
			got, _ := b.listAll(store.ListParams{Profile: "alice", Limit: 10, WithEmbedding: with})
			if len(got) != 2 {
				t.Fatalf("WithEmbedding %v: %d memories, want 2", with, len(got))
			}
			if want := vec(1, 8); with && !slices.Equal(got[0].Embedding, want) || !with && got[0].Embedding != nil {
				t.Errorf("WithEmbedding %v: e-1's embedding %v", with, got[0].Embedding)
			}
			if got[0].EmbeddingModel != "test-model" || got[1].Embedding != nil || got[1].EmbeddingModel != "" {
				t.Errorf("WithEmbedding %v: models %q %q, e-2's embedding %v", with, got[0].EmbeddingModel, got[1].EmbeddingModel, got[1].Embedding)
			}
		}
	})

	t.Run("Total", func(t *testing.T) {
		b := setup(t, open)
		listFixture(b, 25)
		b.insert(mem("alice", "t-sem", "a semantic one", kind(mnemotype.KindSemantic), at(time.Minute)))
		for _, tc := range []struct {
			p    store.ListParams
			want int
		}{
			{store.ListParams{Profile: "alice", Limit: 10, Total: true}, 26},
			{store.ListParams{Profile: "alice", Limit: 10, Total: true, Kinds: []mnemotype.Kind{mnemotype.KindSemantic}}, 1},
			{store.ListParams{Profile: "bob", Limit: 2, Total: true}, 5},
			{store.ListParams{Profile: "carol", Limit: 2, Total: true}, 0},
			{store.ListParams{Profile: "alice", Limit: 10}, 0}, // not asked for
		} {
			p := tc.p
			for page := 0; ; page++ {
				got, err := b.s.List(b.ctx, p)
				if err != nil {
					t.Fatal(err)
				}
				if got.Total != tc.want {
					t.Errorf("List(%+v) page %d: Total = %d, want %d", tc.p, page, got.Total, tc.want)
				}
				if got.NextCursor == "" {
					break
				}
				p.Cursor = got.NextCursor
			}
		}
	})

	t.Run("CursorSurvivesWrites", func(t *testing.T) {
		b := setup(t, open)
		want := listFixture(b, 25)
		page, err := b.s.List(b.ctx, store.ListParams{Profile: "alice", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		// Delete the last memory of page one and the first of page two,
		// and add one that sorts last.
		for _, id := range []string{want[9].ID, want[10].ID} {
			if err := b.s.Delete(b.ctx, "alice", id); err != nil {
				t.Fatal(err)
			}
		}
		late := mem("alice", "l-late", "added while paging", at(time.Hour))
		b.insert(late)
		rest, _ := b.listAll(store.ListParams{Profile: "alice", Limit: 10, Cursor: page.NextCursor})
		wantRest := append(memIDs(want[11:]), late.ID)
		if !slices.Equal(memIDs(rest), wantRest) {
			t.Errorf("after writes, remaining pages = %v, want %v", memIDs(rest), wantRest)
		}
	})

	fixture := func(b *bundle) {
		b.insert(
			mem("alice", "f-1", "one", project("apollo"), session("s1")),
			mem("alice", "f-2", "two", project("apollo"), session("s2"), at(time.Second), kind(mnemotype.KindSemantic)),
			mem("alice", "f-3", "three", project("zeus"), session("s1"), at(2*time.Second)),
			mem("alice", "f-4", "four", at(3*time.Second), kind(mnemotype.KindIdentity)),
			mem("bob", "f-bob", "bob's", project("apollo"), session("s1")),
		)
	}
	for _, tc := range []struct {
		name string
		p    store.ListParams
		want []string
	}{
		{"AllOfProfile", store.ListParams{Profile: "alice"}, []string{"f-1", "f-2", "f-3", "f-4"}},
		{"OtherProfile", store.ListParams{Profile: "bob"}, []string{"f-bob"}},
		{"UnknownProfile", store.ListParams{Profile: "carol"}, nil},
		{"Project", store.ListParams{Profile: "alice", Project: "apollo"}, []string{"f-1", "f-2"}},
		{"Session", store.ListParams{Profile: "alice", Session: "s1"}, []string{"f-1", "f-3"}},
		{"ProjectAndSession", store.ListParams{Profile: "alice", Project: "apollo", Session: "s1"}, []string{"f-1"}},
		{"NoMatch", store.ListParams{Profile: "alice", Project: "hermes"}, nil},
		{"FilteredPages", store.ListParams{Profile: "alice", Project: "apollo", Limit: 1}, []string{"f-1", "f-2"}},
		{"Kinds", store.ListParams{Profile: "alice", Kinds: []mnemotype.Kind{mnemotype.KindSemantic, mnemotype.KindIdentity}}, []string{"f-2", "f-4"}},
		{"KindAndProject", store.ListParams{Profile: "alice", Project: "apollo", Kinds: []mnemotype.Kind{mnemotype.KindSemantic}}, []string{"f-2"}},
	} {
		t.Run("Filter"+tc.name, func(t *testing.T) {
			b := setup(t, open)
			fixture(b)
			p := tc.p
			if p.Limit == 0 {
				p.Limit = 50
			}
			got, _ := b.listAll(p)
			if ids := memIDs(got); !slices.Equal(ids, tc.want) && len(ids)+len(tc.want) > 0 {
				t.Errorf("List(%+v) = %v, want %v", tc.p, ids, tc.want)
			}
		})
	}

	for _, tc := range []struct{ name, cursor string }{
		{"Garbage", "!!! not a cursor !!!"},
		{"Percent", "%%%"},
		{"Binary", "\x00\xff\xfe"},
		{"Base64OfWord", "Zm9vYmFy"},
	} {
		t.Run("InvalidCursor"+tc.name, func(t *testing.T) {
			b := setup(t, open)
			listFixture(b, 3)
			_, err := b.s.List(b.ctx, store.ListParams{Profile: "alice", Limit: 10, Cursor: tc.cursor})
			if !errors.Is(err, mnemotype.ErrInvalid) {
				t.Errorf("List with cursor %q: err = %v, want ErrInvalid", tc.cursor, err)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Lexical.

// fillers are documents without the test terms, so that every term is rare
// and BM25's inverse document frequency stays positive.
func fillers(profile string, n int) []mnemotype.Memory {
	words := []string{"lantern", "harbor", "meadow", "quartz", "violin", "glacier", "copper", "saffron"}
	ms := make([]mnemotype.Memory, n)
	for i := range ms {
		ms[i] = mem(profile, fmt.Sprintf("filler-%s-%d", profile, i),
			fmt.Sprintf("%s %s %s", words[i%len(words)], words[(i+3)%len(words)], words[(i+5)%len(words)]))
	}
	return ms
}

// ExerciseLexical runs the Lexical group of the conformance suite alone,
// for backends that choose among query plans by options (a store forcing
// its common-terms plan on tiny fixtures, say).
func ExerciseLexical(t *testing.T, open OpenFunc) {
	exerciseCommonTerms(t, open)
	t.Run("MinHits", func(t *testing.T) {
		b := setup(t, open)
		b.insert(
			mem("alice", "a1", "orange peel"),
			mem("alice", "a2", "an orange and its peel"),
			mem("alice", "a3", "orange juice"),
			mem("bob", "b1", "orange peel"),
			mem("bob", "b2", "orange peel again"),
		)
		for _, tc := range []struct {
			min  int
			want []string
		}{
			{0, []string{"a1", "a2"}}, {1, []string{"a1", "a2"}}, {2, []string{"a1", "a2"}},
			{3, nil}, // bob's matches do not count
		} {
			hits, err := b.s.Lexical(b.ctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"},
				Match: store.MatchQuery{Terms: []string{"orange", "peel"}, All: true}, Limit: 10, MinHits: tc.min})
			if err != nil {
				t.Fatal(err)
			}
			checkHits(t, hits)
			got := hitIDs(hits)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("MinHits %d: %v, want %v", tc.min, got, tc.want)
			}
		}
	})

	t.Run("OnlyScoresCandidatesOfTheProfile", func(t *testing.T) {
		b := setup(t, open)
		b.insert(
			mem("alice", "best", "orange orange orange"),
			mem("alice", "second", "orange orange peel and more words here"),
			mem("alice", "weak", "an orange among many many other words in a long sentence here"),
			mem("alice", "none", "apple"),
			mem("bob", "bob-weak", "an orange among many many other words in a long sentence here"),
		)
		hits, err := b.s.Lexical(b.ctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"},
			Match: store.MatchQuery{Terms: []string{"orange", "pear"}}, Only: []string{"weak", "none", "bob-weak", "missing"}})
		if err != nil {
			t.Fatal(err)
		}
		checkHits(t, hits)
		if got := hitIDs(hits); !slices.Equal(got, []string{"weak"}) {
			t.Errorf("Lexical with Only = %v, want [weak]: the Only ids that match, in the profile", got)
		}
	})

	scopeFixture := func(b *bundle) {
		b.insert(fillers("alice", 8)...)
		b.insert(fillers("bob", 4)...)
		b.insert(
			mem("alice", "a1", "orange juice recipe", project("apollo"), session("s1"), kind(mnemotype.KindEpisodic)),
			mem("alice", "a2", "orange marmalade", project("apollo"), session("s2"), kind(mnemotype.KindSemantic)),
			mem("alice", "a3", "orange cat named Tom", project("zeus"), session("s1"), kind(mnemotype.KindIdentity)),
			mem("alice", "a4", "orange sunset", kind(mnemotype.KindEpisodic)),
			mem("bob", "b1", "orange bike", project("apollo"), session("s1")),
		)
	}
	for _, tc := range []struct {
		name  string
		scope mnemotype.Scope
		want  []string
	}{
		{"ProfileA", mnemotype.Scope{Profile: "alice"}, []string{"a1", "a2", "a3", "a4"}},
		{"ProfileB", mnemotype.Scope{Profile: "bob"}, []string{"b1"}},
		{"UnknownProfile", mnemotype.Scope{Profile: "carol"}, nil},
		{"EmptyProfile", mnemotype.Scope{Profile: ""}, nil},
		{"Project", mnemotype.Scope{Profile: "alice", Project: "apollo"}, []string{"a1", "a2"}},
		{"ProjectOfOtherProfile", mnemotype.Scope{Profile: "bob", Project: "zeus"}, nil},
		{"OneSession", mnemotype.Scope{Profile: "alice", Sessions: []string{"s1"}}, []string{"a1", "a3"}},
		{"TwoSessions", mnemotype.Scope{Profile: "alice", Sessions: []string{"s1", "s2"}}, []string{"a1", "a2", "a3"}},
		{"NoSession", mnemotype.Scope{Profile: "alice", Sessions: []string{""}}, []string{"a4"}},
		{"Kinds", mnemotype.Scope{Profile: "alice", Kinds: []mnemotype.Kind{mnemotype.KindSemantic, mnemotype.KindIdentity}}, []string{"a2", "a3"}},
		{"Exclude", mnemotype.Scope{Profile: "alice", Exclude: []string{"a1", "a4", "b1"}}, []string{"a2", "a3"}},
		{"Combined", mnemotype.Scope{Profile: "alice", Project: "apollo", Sessions: []string{"s1", "s9"}, Kinds: []mnemotype.Kind{mnemotype.KindEpisodic}}, []string{"a1"}},
		{"CombinedExcluded", mnemotype.Scope{Profile: "alice", Project: "apollo", Sessions: []string{"s1"}, Exclude: []string{"a1"}}, nil},
	} {
		t.Run("Scope"+tc.name, func(t *testing.T) {
			b := setup(t, open)
			scopeFixture(b)
			for _, all := range []bool{false, true} {
				got := b.lexical(store.LexicalParams{Scope: tc.scope, Match: store.MatchQuery{Terms: []string{"orange"}, All: all}})
				if !sameSet(got, tc.want) {
					t.Errorf("all=%v: %+v -> %v, want %v", all, tc.scope, got, tc.want)
				}
			}
		})
	}

	t.Run("ScopeLongLists", func(t *testing.T) {
		b := setup(t, open)
		scopeFixture(b)
		// Far more ids and sessions than a backend may bind as statement
		// arguments one by one (SQLite: 32,766).
		exclude := []string{"a1", "a4"}
		sessions := []string{"s1", "s2"}
		for i := range 120_000 {
			exclude = append(exclude, fmt.Sprintf("absent-%06d", i))
		}
		for i := range 40_000 {
			sessions = append(sessions, fmt.Sprintf("no-session-%05d", i))
		}
		sc := mnemotype.Scope{Profile: "alice", Sessions: sessions, Exclude: exclude}
		for _, all := range []bool{false, true} {
			if got := b.lexical(store.LexicalParams{Scope: sc, Match: store.MatchQuery{Terms: []string{"orange"}, All: all}}); !sameSet(got, []string{"a2", "a3"}) {
				t.Errorf("all=%v: %v, want [a2 a3]", all, got)
			}
		}
		got := b.lexical(store.LexicalParams{Scope: sc, Match: store.MatchQuery{Terms: []string{"orange"}}, Only: append(exclude[2:], "a1", "a2", "a3")})
		if !sameSet(got, []string{"a2", "a3"}) {
			t.Errorf("Only with a long list: %v, want [a2 a3]", got)
		}
		if got := b.get("alice", append(exclude[2:], "a2")...); len(got) != 1 || got[0].ID != "a2" {
			t.Errorf("Get of 120,001 ids: %v, want [a2]", memIDs(got))
		}
	})

	t.Run("AllVersusAny", func(t *testing.T) {
		b := setup(t, open)
		b.insert(fillers("alice", 6)...)
		b.insert(
			mem("alice", "r1", "red apple pie"),
			mem("alice", "r2", "red sports car"),
			mem("alice", "r3", "green apple tree"),
			mem("alice", "r4", "blue sky"),
		)
		if got := b.search("alice", true, "red", "apple"); !slices.Equal(got, []string{"r1"}) {
			t.Errorf("All: red apple -> %v, want [r1]", got)
		}
		got := b.search("alice", false, "red", "apple")
		if !sameSet(got, []string{"r1", "r2", "r3"}) || got[0] != "r1" {
			t.Errorf("Any: red apple -> %v, want r1 first, then r2 and r3", got)
		}
		if got := b.search("alice", true, "red", "sky"); len(got) != 0 {
			t.Errorf("All: red sky -> %v, want none", got)
		}
		if got := b.search("alice", false, "red", "sky"); !sameSet(got, []string{"r1", "r2", "r4"}) {
			t.Errorf("Any: red sky -> %v", got)
		}
		if got := b.search("alice", true, "apple"); !sameSet(got, []string{"r1", "r3"}) {
			t.Errorf("All with one term -> %v", got)
		}
	})

	t.Run("RanksBestFirst", func(t *testing.T) {
		b := setup(t, open)
		b.insert(fillers("alice", 10)...)
		b.insert(
			// Same length, more occurrences.
			mem("alice", "tf-hi", "zebra zebra zebra grass"),
			mem("alice", "tf-lo", "zebra lion grass river"),
			// Same occurrences, shorter document.
			mem("alice", "len-short", "yak grass"),
			mem("alice", "len-long", "yak grass lion river tree stone water cloud"),
		)
		for _, tc := range []struct {
			term string
			want []string
		}{
			{"zebra", []string{"tf-hi", "tf-lo"}},
			{"yak", []string{"len-short", "len-long"}},
		} {
			hits, err := b.s.Lexical(b.ctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: store.MatchQuery{Terms: []string{tc.term}}})
			if err != nil {
				t.Fatal(err)
			}
			checkHits(t, hits)
			if !slices.Equal(hitIDs(hits), tc.want) {
				t.Errorf("%s -> %v, want %v", tc.term, hitIDs(hits), tc.want)
				continue
			}
			if !(hits[0].Score > hits[1].Score) {
				t.Errorf("%s: scores %v, %v: the better hit must score strictly higher", tc.term, hits[0].Score, hits[1].Score)
			}
		}
	})

	t.Run("Limit", func(t *testing.T) {
		b := setup(t, open)
		b.insert(fillers("alice", 10)...)
		for i := range 8 {
			b.insert(mem("alice", fmt.Sprintf("k-%d", i), strings.Repeat("kiwi ", i+1)+strings.Repeat("pear ", 8-i)))
		}
		all := b.search("alice", false, "kiwi")
		if len(all) != 8 {
			t.Fatalf("no limit: %d hits, want 8", len(all))
		}
		for _, limit := range []int{1, 3, 8, 20} {
			got := b.lexical(store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: store.MatchQuery{Terms: []string{"kiwi"}}, Limit: limit})
			if want := all[:min(limit, len(all))]; !slices.Equal(got, want) {
				t.Errorf("Limit %d -> %v, want %v", limit, got, want)
			}
		}
	})

	onlyFixture := func(b *bundle) {
		b.insert(fillers("alice", 6)...)
		b.insert(
			mem("alice", "o1", "plum plum plum"),
			mem("alice", "o2", "plum jam and toast"),
			mem("alice", "o3", "a plum tree in the garden of the house"),
			mem("alice", "o4", "no fruit here"),
			mem("bob", "o-bob", "plum"),
		)
	}
	for _, tc := range []struct {
		name  string
		only  []string
		limit int
		want  []string // in rank order
	}{
		{"Nil", nil, 0, []string{"o1", "o2", "o3"}},
		{"Subset", []string{"o3", "o1"}, 0, []string{"o1", "o3"}},
		{"SubsetWithLimit", []string{"o3", "o2", "o1"}, 2, []string{"o1", "o2"}},
		{"Empty", []string{}, 0, nil},
		{"NonMatchingID", []string{"o4"}, 0, nil},
		{"MissingAndOtherProfile", []string{"nope", "o-bob"}, 0, nil},
		{"ExcludedByScope", []string{"o1", "filler-alice-0"}, 0, []string{"o1"}},
	} {
		t.Run("Only"+tc.name, func(t *testing.T) {
			b := setup(t, open)
			onlyFixture(b)
			got := b.lexical(store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: store.MatchQuery{Terms: []string{"plum"}}, Only: tc.only, Limit: tc.limit})
			if !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 {
				t.Errorf("Only %#v -> %v, want %v", tc.only, got, tc.want)
			}
		})
	}

	t.Run("NoTerms", func(t *testing.T) {
		b := setup(t, open)
		onlyFixture(b)
		for _, terms := range [][]string{nil, {}} {
			for _, all := range []bool{false, true} {
				if got := b.search("alice", all, terms...); len(got) != 0 {
					t.Errorf("Terms %#v all=%v -> %v, want none", terms, all, got)
				}
			}
		}
	})

	// Terms are plain words: the query language of the backend (FTS5 here,
	// tsquery for Postgres) must never see them as operators.
	syntaxFixture := func(b *bundle) {
		b.insert(fillers("alice", 8)...)
		b.insert(
			mem("alice", "s1", "salt and pepper or vinegar near the table"),
			mem("alice", "s2", "x marks the spot"),
			mem("alice", "s3", "col x row y"),
			mem("alice", "s4", "content apple"),
			mem("alice", "s5", "this is NOT a drill"),
		)
	}
	none := []string{}
	for _, tc := range []struct {
		name  string
		terms []string
		all   bool
		want  []string // nil: only "no error" is required
	}{
		{"AND", []string{"AND"}, false, []string{"s1"}},
		{"OR", []string{"OR"}, false, []string{"s1"}},
		{"NOT", []string{"NOT"}, false, []string{"s5"}},
		{"LowercaseAnd", []string{"and"}, false, []string{"s1"}},
		{"OperatorsAsAllTerms", []string{"AND", "OR"}, true, []string{"s1"}},
		{"OperatorBetweenTerms", []string{"salt", "OR", "spot"}, true, none},
		{"NEAROpen", []string{"NEAR("}, false, []string{"s1"}},
		{"NEARCall", []string{"NEAR(salt pepper, 2)"}, false, none},
		{"Star", []string{"*"}, false, none},
		{"PrefixStar", []string{"salt*"}, false, []string{"s1"}},
		{"Minus", []string{"-x"}, false, []string{"s2", "s3"}},
		{"Plus", []string{"+salt"}, false, []string{"s1"}},
		{"Caret", []string{"^salt"}, false, []string{"s1"}},
		{"ColumnFilter", []string{"col:x"}, false, []string{"s3"}},
		{"RealColumnFilter", []string{"content:apple"}, false, []string{"s4"}},
		{"BraceColumnFilter", []string{"{content}:apple"}, false, []string{"s4"}},
		{"Parens", []string{")("}, false, none},
		{"ParensAroundWord", []string{"(salt)"}, false, []string{"s1"}},
		{"LoneQuote", []string{`"`}, false, none},
		{"OpenQuote", []string{`"salt`}, false, []string{"s1"}},
		{"CloseQuote", []string{`pepper"`}, false, []string{"s1"}},
		{"QuotedPhrase", []string{`"marks the"`}, false, []string{"s2"}},
		{"QuoteInside", []string{`x"marks`}, false, []string{"s2"}},
		{"SingleQuotes", []string{`'salt'`}, false, []string{"s1"}},
		{"EmptyTerm", []string{""}, false, none},
		{"BlankTerm", []string{"   "}, false, none},
		{"PunctuationOnly", []string{`!@#$%^&*()_+=[]{};:'",.<>/?\|~` + "`"}, false, none},
		{"NUL", []string{"\x00"}, false, nil},
		{"NULInsideWord", []string{"salt\x00pepper"}, false, nil},
		{"InvalidUTF8", []string{"\xff\xfe\xfd"}, false, nil},
		{"WordWithPunctuationOnlyAny", []string{"*", "salt"}, false, []string{"s1"}},
		{"WordWithPunctuationOnlyAll", []string{"salt", "*"}, true, []string{"s1"}},
		{"WordWithEmptyAll", []string{"salt", ""}, true, []string{"s1"}},
		{"SQLInjection", []string{"'); DROP TABLE memories; --"}, false, none},
		{"LongTerm", []string{strings.Repeat("salt ", 200)}, false, none},
	} {
		t.Run("PlainWords"+tc.name, func(t *testing.T) {
			b := setup(t, open)
			syntaxFixture(b)
			got := b.search("alice", tc.all, tc.terms...)
			if tc.want != nil && !sameSet(got, tc.want) {
				t.Errorf("%q all=%v -> %v, want %v", tc.terms, tc.all, got, tc.want)
			}
			if n := b.count("alice"); n != 13 {
				t.Errorf("Count = %d after the query, want 13", n)
			}
		})
	}

	// Unicode terms: unicode61 (and any reasonable Postgres configuration)
	// folds case and removes diacritics.
	unicodeFixture := func(b *bundle) {
		b.insert(fillers("alice", 8)...)
		b.insert(
			mem("alice", "u1", "a café on the corner"),
			mem("alice", "u2", "the cafe is closed"),
			mem("alice", "u3", "trip to 東京 in spring"),
			mem("alice", "u4", "a naive question"),
			mem("alice", "u5", "CAFÉ SOCIETY"),
			mem("alice", "u6", "Ünïcödé everywhere"),
		)
	}
	for _, tc := range []struct {
		name string
		term string
		want []string
	}{
		{"Accented", "café", []string{"u1", "u2", "u5"}},
		{"Unaccented", "cafe", []string{"u1", "u2", "u5"}},
		{"UpperAccented", "CAFÉ", []string{"u1", "u2", "u5"}},
		{"CJK", "東京", []string{"u3"}},
		{"Diaeresis", "naïve", []string{"u4"}},
		{"DiaeresisCapital", "Naïve", []string{"u4"}},
		{"AllDiacritics", "unicode", []string{"u6"}},
		{"Decomposed", "cafe\u0301", []string{"u1", "u2", "u5"}},
	} {
		t.Run("Unicode"+tc.name, func(t *testing.T) {
			b := setup(t, open)
			unicodeFixture(b)
			if got := b.search("alice", false, tc.term); !sameSet(got, tc.want) {
				t.Errorf("%q -> %v, want %v", tc.term, got, tc.want)
			}
		})
	}

	for _, tc := range []struct {
		term string
		want []string
	}{
		{"running", []string{"st1", "st2"}},
		{"runs", []string{"st1", "st2"}},
		{"run", []string{"st1", "st2"}},
		{"memories", []string{"st3", "st4"}},
		{"memory", []string{"st3", "st4"}},
	} {
		t.Run("Stemming"+tc.term, func(t *testing.T) {
			b := setup(t, open)
			b.insert(fillers("alice", 8)...)
			b.insert(
				mem("alice", "st1", "she runs every morning"),
				mem("alice", "st2", "running shoes for sale"),
				mem("alice", "st3", "old memories fade"),
				mem("alice", "st4", "a memory of summer"),
			)
			if got := b.search("alice", false, tc.term); !sameSet(got, tc.want) {
				t.Errorf("%q -> %v, want %v", tc.term, got, tc.want)
			}
		})
	}
}

// commonTermsFixture holds one common term (river, in 34 of 100 memories)
// and two rare ones (zircon in 4, obsidian in 1) so that every memory
// matching a rare term outscores every memory matching only river: a
// backend skipping the rows that match only common terms (Lucene's
// CommonTermsQuery) must still return the exact results below.
func commonTermsFixture(b *bundle) {
	b.insert(fillers("alice", 60)...)
	b.insert(fillers("bob", 4)...)
	var ms []mnemotype.Memory
	for i := range 30 {
		ms = append(ms, mem("alice", fmt.Sprintf("river-%02d", i), strings.Repeat("river ", 1+i%3)+fillers("x", 30)[i].Content))
	}
	b.insert(ms...)
	b.insert(
		mem("alice", "zircon-1", "zircon zircon river"),
		mem("alice", "zircon-2", "zircon river"),
		mem("alice", "zircon-3", "zircon"),
		mem("alice", "zircon-4", "zircon lantern meadow quartz"),
		mem("alice", "obsidian-1", "obsidian river meadow"),
		mem("bob", "bob-river", "river river river"),
	)
}

func exerciseCommonTerms(t *testing.T, open OpenFunc) {
	alice := mnemotype.Scope{Profile: "alice"}
	terms := []string{"zircon", "obsidian", "river"}
	// full is the unlimited OR query: every match with its score.
	full := func(b *bundle) ([]string, map[string]float64) {
		hits, err := b.s.Lexical(b.ctx, store.LexicalParams{Scope: alice, Match: store.MatchQuery{Terms: terms}})
		if err != nil {
			b.t.Fatal(err)
		}
		checkHits(b.t, hits)
		if len(hits) != 35 {
			b.t.Fatalf("unlimited OR query: %d hits, want 35", len(hits))
		}
		scores := map[string]float64{}
		for _, h := range hits {
			scores[h.ID] = h.Score
		}
		return hitIDs(hits), scores
	}
	checkScores := func(t *testing.T, hits []mnemotype.Hit, want map[string]float64) {
		t.Helper()
		checkHits(t, hits)
		for _, h := range hits {
			w, ok := want[h.ID]
			if !ok || math.Abs(h.Score-w) > 1e-9*math.Max(1, math.Abs(w)) {
				t.Errorf("%s scores %v, want %v: the full OR query's score", h.ID, h.Score, w)
			}
		}
	}
	for _, limit := range []int{1, 3, 5, 6, 8, 40} {
		t.Run(fmt.Sprintf("CommonTermsLimit%d", limit), func(t *testing.T) {
			b := setup(t, open)
			commonTermsFixture(b)
			ids, scores := full(b)
			hits, err := b.s.Lexical(b.ctx, store.LexicalParams{Scope: alice, Match: store.MatchQuery{Terms: terms}, Limit: limit})
			if err != nil {
				t.Fatal(err)
			}
			checkScores(t, hits, scores)
			// Beyond the 5 rare-term matches the best river-only
			// memories fill the list.
			if want := ids[:min(limit, len(ids))]; !slices.Equal(hitIDs(hits), want) {
				t.Errorf("Limit %d -> %v, want %v", limit, hitIDs(hits), want)
			}
		})
	}
	t.Run("CommonTermsOnlyMatchingOnlyCommonTerms", func(t *testing.T) {
		b := setup(t, open)
		commonTermsFixture(b)
		ids, scores := full(b)
		weakest := ids[len(ids)-1] // a river-only memory
		hits, err := b.s.Lexical(b.ctx, store.LexicalParams{Scope: alice, Match: store.MatchQuery{Terms: terms},
			Only: []string{ids[0], weakest, "filler-alice-0", "bob-river", "missing"}})
		if err != nil {
			t.Fatal(err)
		}
		checkScores(t, hits, scores)
		if want := []string{ids[0], weakest}; !slices.Equal(hitIDs(hits), want) {
			t.Errorf("Only -> %v, want %v: the Only ids that match, scored by the whole query, in the profile", hitIDs(hits), want)
		}
	})
	t.Run("CommonTermsOnly", func(t *testing.T) {
		b := setup(t, open)
		commonTermsFixture(b)
		hits, err := b.s.Lexical(b.ctx, store.LexicalParams{Scope: alice, Match: store.MatchQuery{Terms: []string{"river", "lantern"}}, Limit: 3})
		if err != nil {
			t.Fatal(err)
		}
		checkHits(t, hits)
		all := b.lexical(store.LexicalParams{Scope: alice, Match: store.MatchQuery{Terms: []string{"river", "lantern"}}})
		if !slices.Equal(hitIDs(hits), all[:3]) {
			t.Errorf("common terms only, Limit 3 -> %v, want %v", hitIDs(hits), all[:3])
		}
	})
	t.Run("CommonTermsScope", func(t *testing.T) {
		b := setup(t, open)
		commonTermsFixture(b)
		got := b.lexical(store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice", Exclude: []string{"zircon-1", "zircon-2", "zircon-3"}},
			Match: store.MatchQuery{Terms: terms}, Limit: 3})
		if len(got) != 3 || got[0] != "zircon-4" && got[0] != "obsidian-1" || slices.Contains(got, "zircon-1") {
			t.Errorf("Limit 3 excluding three zircon memories -> %v, want the other two rare-term matches first, then a river-only memory", got)
		}
	})
}

// ---------------------------------------------------------------------------
// RecentlyAccessed.

func exerciseRecentlyAccessed(t *testing.T, open OpenFunc) {
	fixture := func(b *bundle) {
		b.insert(
			mem("alice", "e1", "one", embedded(1), accessedAt(1*time.Hour), project("apollo")),
			mem("alice", "e2", "two", embedded(2), accessedAt(3*time.Hour), project("apollo"), session("s1")),
			mem("alice", "e3", "three", embedded(3), accessedAt(2*time.Hour), kind(mnemotype.KindSemantic), session("s1")),
			mem("alice", "e4", "four", embedded(4), accessedAt(4*time.Hour+time.Nanosecond), kind(mnemotype.KindIdentity)),
			mem("alice", "n1", "no embedding, most recent", accessedAt(5*time.Hour)),
			mem("alice", "n2", "no embedding either", accessedAt(6*time.Hour), project("apollo")),
			mem("bob", "b1", "bob's", embedded(5), accessedAt(7*time.Hour)),
		)
	}
	for _, tc := range []struct {
		name  string
		scope mnemotype.Scope
		n     int
		want  []string
	}{
		{"OnlyEmbeddedNewestFirst", mnemotype.Scope{Profile: "alice"}, 10, []string{"e4", "e2", "e3", "e1"}},
		{"N", mnemotype.Scope{Profile: "alice"}, 2, []string{"e4", "e2"}},
		{"OtherProfile", mnemotype.Scope{Profile: "bob"}, 10, []string{"b1"}},
		{"UnknownProfile", mnemotype.Scope{Profile: "carol"}, 10, nil},
		{"Project", mnemotype.Scope{Profile: "alice", Project: "apollo"}, 10, []string{"e2", "e1"}},
		{"Sessions", mnemotype.Scope{Profile: "alice", Sessions: []string{"s1"}}, 10, []string{"e2", "e3"}},
		{"Kinds", mnemotype.Scope{Profile: "alice", Kinds: []mnemotype.Kind{mnemotype.KindIdentity, mnemotype.KindSemantic}}, 10, []string{"e4", "e3"}},
		{"Exclude", mnemotype.Scope{Profile: "alice", Exclude: []string{"e4", "e3", "b1"}}, 10, []string{"e2", "e1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t, open)
			fixture(b)
			if got := b.recent(tc.scope, tc.n); !slices.Equal(got, tc.want) && len(got)+len(tc.want) > 0 {
				t.Errorf("RecentlyAccessed(%+v, %d) = %v, want %v", tc.scope, tc.n, got, tc.want)
			}
		})
	}

	t.Run("RecordAccessReorders", func(t *testing.T) {
		b := setup(t, open)
		fixture(b)
		err := b.s.RecordAccess(b.ctx, []store.Access{
			{Profile: "alice", ID: "e1", At: t0.Add(10 * time.Hour), Count: 1},
			{Profile: "alice", ID: "e3", At: t0.Add(9 * time.Hour), Count: 1},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := b.recent(mnemotype.Scope{Profile: "alice"}, 10), []string{"e1", "e3", "e4", "e2"}; !slices.Equal(got, want) {
			t.Errorf("after RecordAccess: %v, want %v", got, want)
		}
	})

	t.Run("EmbeddingAddedByUpdate", func(t *testing.T) {
		b := setup(t, open)
		fixture(b)
		if _, err := b.s.Update(b.ctx, store.UpdateParams{Profile: "alice", ID: "n1", Embedding: vec(9, 8), EmbeddingModel: "test-model"}); err != nil {
			t.Fatal(err)
		}
		if got, want := b.recent(mnemotype.Scope{Profile: "alice"}, 2), []string{"n1", "e4"}; !slices.Equal(got, want) {
			t.Errorf("after embedding n1: %v, want %v", got, want)
		}
	})
}

// ---------------------------------------------------------------------------
// Changes and Sequence.

func exerciseChanges(t *testing.T, open OpenFunc) {
	// checkUpserts compares a change set's upserts with want: embeddings
	// included bit for bit, content left out.
	checkUpserts := func(t *testing.T, got []mnemotype.Memory, want ...mnemotype.Memory) {
		t.Helper()
		if !sameSet(memIDs(got), memIDs(want)) {
			t.Errorf("Upserts = %v, want %v", memIDs(got), memIDs(want))
			return
		}
		byID := map[string]mnemotype.Memory{}
		for _, m := range got {
			byID[m.ID] = m
		}
		for _, w := range want {
			g := byID[w.ID]
			w.Content = ""
			g.Metadata, w.Metadata = nil, nil
			checkMemory(t, g, w, embExact)
		}
	}

	t.Run("FromZero", func(t *testing.T) {
		b := setup(t, open)
		c1 := mem("alice", "c1", "first", embedding("m", awkwardVector()), project("apollo"), session("s1"), metadata(`{"a":1}`))
		c2 := mem("alice", "c2", "second", embedding("test-model", vec(2, len(awkwardVector()))), kind(mnemotype.KindSemantic), at(time.Second))
		c3 := mem("alice", "c3", "third, without embedding", at(2*time.Second))
		c4 := mem("bob", "c4", "bob's", embedded(4))
		b.insert(c1, c2, c3)
		b.insert(c4)
		cs := b.changes("alice", 0)
		checkUpserts(t, cs.Upserts, c1, c2, c3)
		if len(cs.Deleted) != 0 {
			t.Errorf("Deleted = %v", cs.Deleted)
		}
		if s := b.seq(); cs.Seq != s || s <= 0 {
			t.Errorf("ChangeSet.Seq = %d, Sequence = %d, want equal and positive", cs.Seq, s)
		}
		checkUpserts(t, b.changes("bob", 0).Upserts, c4)
	})

	t.Run("EmptyStore", func(t *testing.T) {
		b := setup(t, open)
		cs := b.changes("alice", 0)
		if len(cs.Upserts)+len(cs.Deleted) != 0 {
			t.Errorf("fresh store: %v / %v", memIDs(cs.Upserts), cs.Deleted)
		}
		if s := b.seq(); cs.Seq != s {
			t.Errorf("ChangeSet.Seq = %d, Sequence = %d", cs.Seq, s)
		}
	})

	t.Run("Incremental", func(t *testing.T) {
		b := setup(t, open)
		c1 := mem("alice", "c1", "first", embedded(1))
		c2 := mem("alice", "c2", "second", embedded(2))
		c3 := mem("alice", "c3", "third", embedded(3))
		b.insert(c1, c2, c3)
		since := b.seq()

		c5 := mem("alice", "c5", "fifth", embedded(5), at(time.Minute))
		b.insert(c5)
		if _, err := b.s.Update(b.ctx, store.UpdateParams{Profile: "alice", ID: "c1", Importance: ptr(0.9), Embedding: vec(11, 8), EmbeddingModel: "m2"}); err != nil {
			t.Fatal(err)
		}
		c1.Importance, c1.Embedding, c1.EmbeddingModel = 0.9, vec(11, 8), "m2"
		if err := b.s.Delete(b.ctx, "alice", "c2"); err != nil {
			t.Fatal(err)
		}
		b.insert(mem("bob", "c-bob", "bob's", embedded(6)))
		if err := b.s.Delete(b.ctx, "bob", "c-bob"); err != nil {
			t.Fatal(err)
		}

		cs := b.changes("alice", since)
		checkUpserts(t, cs.Upserts, c5, c1)
		if !slices.Equal(cs.Deleted, []string{"c2"}) {
			t.Errorf("Deleted = %v, want [c2]", cs.Deleted)
		}
		if s := b.seq(); cs.Seq != s || s <= since {
			t.Errorf("ChangeSet.Seq = %d, Sequence = %d, since = %d", cs.Seq, s, since)
		}
		again := b.changes("alice", cs.Seq)
		if len(again.Upserts)+len(again.Deleted) != 0 || again.Seq != cs.Seq {
			t.Errorf("Changes(since=Seq) = %v / %v / %d, want nothing new", memIDs(again.Upserts), again.Deleted, again.Seq)
		}
		// Catching up in two steps sees the same as in one.
		mid := b.changes("alice", since+1)
		if slices.Contains(memIDs(mid.Upserts), "c5") {
			t.Errorf("Changes(since=%d) still lists c5 inserted at or before %d", since+1, since+1)
		}
		bob := b.changes("bob", since)
		if len(bob.Upserts) != 0 || !slices.Equal(bob.Deleted, []string{"c-bob"}) {
			t.Errorf("bob's Changes = %v / %v, want [] / [c-bob]", memIDs(bob.Upserts), bob.Deleted)
		}
	})

	t.Run("Pages", func(t *testing.T) {
		b := setup(t, open)
		since := b.seq()
		var want []string
		for i := range 7 {
			id := fmt.Sprintf("p%d", i)
			b.insert(mem("alice", id, "paged", embedded(uint64(i))))
			want = append(want, id)
		}
		b.insert(mem("bob", "p-bob", "bob's"))
		if err := b.s.Delete(b.ctx, "alice", "p1"); err != nil { // after p6: in the last page
			t.Fatal(err)
		}
		want = slices.DeleteFunc(want, func(id string) bool { return id == "p1" })
		// Pages of 2 upserts each, applied in turn, end where one call does.
		held := map[string]bool{}
		pos, pages := since, 0
		for {
			cs, err := b.s.Changes(b.ctx, store.ChangesParams{Profile: "alice", Since: pos, Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			if len(cs.Upserts) > 2 {
				t.Fatalf("page of %d upserts, limit 2", len(cs.Upserts))
			}
			if cs.Seq < pos {
				t.Fatalf("page from %d ends at %d", pos, cs.Seq)
			}
			for _, id := range cs.Deleted {
				delete(held, id)
			}
			for _, m := range cs.Upserts {
				if len(m.Embedding) != 8 {
					t.Errorf("paged upsert %s has %d-d embedding, want 8", m.ID, len(m.Embedding))
				}
				held[m.ID] = true
			}
			pos, pages = cs.Seq, pages+1
			if !cs.More {
				break
			}
			if pages > 10 {
				t.Fatal("paging does not end")
			}
		}
		if got := slices.Sorted(maps.Keys(held)); !slices.Equal(got, want) {
			t.Errorf("after paging: %v, want %v", got, want)
		}
		if pages < 3 {
			t.Errorf("%d pages for 6 upserts by 2, want ≥ 3", pages)
		}
		if s := b.seq(); pos != s {
			t.Errorf("paging ended at %d, Sequence = %d", pos, s)
		}
		// A full page reports only the deletions up to its last upsert.
		first, err := b.s.Changes(b.ctx, store.ChangesParams{Profile: "alice", Since: since, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !first.More || len(first.Upserts) != 1 || len(first.Deleted) != 0 || first.Seq >= b.seq() {
			t.Errorf("first page of 1 = %v / %v / seq %d more %v", memIDs(first.Upserts), first.Deleted, first.Seq, first.More)
		}
		if _, err := b.s.Changes(b.ctx, store.ChangesParams{Profile: "alice", Limit: -1}); !errors.Is(err, mnemotype.ErrInvalid) {
			t.Errorf("Limit -1: %v, want ErrInvalid", err)
		}
	})

	t.Run("FutureSince", func(t *testing.T) {
		b := setup(t, open)
		b.insert(mem("alice", "c1", "first"))
		s := b.seq()
		cs := b.changes("alice", s+100)
		if len(cs.Upserts)+len(cs.Deleted) != 0 {
			t.Errorf("Changes(since in the future) = %v / %v", memIDs(cs.Upserts), cs.Deleted)
		}
	})

	t.Run("SequenceMonotonic", func(t *testing.T) {
		b := setup(t, open)
		last := b.seq()
		step := func(what string, write func() error) {
			t.Helper()
			if err := write(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			s := b.seq()
			if s <= last {
				t.Errorf("%s: Sequence %d -> %d, want it to advance", what, last, s)
			}
			last = s
		}
		for i := range 5 {
			id := fmt.Sprintf("seq-%d", i)
			step("Insert "+id, func() error {
				return b.s.Insert(b.ctx, []mnemotype.Memory{mem("alice", id, "memory", embedded(uint64(i)))})
			})
			step("Update "+id, func() error {
				_, err := b.s.Update(b.ctx, store.UpdateParams{Profile: "alice", ID: id, Content: ptr("changed")})
				return err
			})
		}
		step("Delete", func() error { return b.s.Delete(b.ctx, "alice", "seq-0") })
		step("Insert batch", func() error { return b.s.Insert(b.ctx, GenerateMemories(3, "alice", 10, 8)) })

		// Reads leave it alone.
		_ = b.get("alice", "seq-1")
		_ = b.search("alice", false, "changed")
		_ = b.count("alice")
		_ = b.changes("alice", 0)
		_ = b.recent(mnemotype.Scope{Profile: "alice"}, 5)
		if s := b.seq(); s != last {
			t.Errorf("reads moved Sequence from %d to %d", last, s)
		}
	})
}

// ---------------------------------------------------------------------------
// RecordAccess.

func exerciseRecordAccess(t *testing.T, open OpenFunc) {
	for _, tc := range []struct {
		name         string
		acc          []store.Access
		wantCount    int64
		wantAccessed time.Time
	}{
		{"AddsCount", []store.Access{{ID: "ra-1", At: t0.Add(time.Hour), Count: 3}}, 5, t0.Add(time.Hour)},
		{"SeveralForOneMemory", []store.Access{
			{ID: "ra-1", At: t0.Add(2 * time.Hour), Count: 1},
			{ID: "ra-1", At: t0.Add(time.Hour), Count: 4},
		}, 7, t0.Add(2 * time.Hour)},
		{"NeverBackwards", []store.Access{{ID: "ra-1", At: t0.Add(-time.Hour), Count: 1}}, 3, t0},
		{"NanosecondPrecision", []store.Access{{ID: "ra-1", At: t0.Add(time.Hour + time.Nanosecond), Count: 1}}, 3, t0.Add(time.Hour + time.Nanosecond)},
		{"NonUTCZone", []store.Access{{ID: "ra-1", At: t0.Add(time.Hour).In(time.FixedZone("X", -7*3600)), Count: 1}}, 3, t0.Add(time.Hour)},
		{"DeletedAndMissingIgnored", []store.Access{
			{ID: "ra-gone", At: t0.Add(time.Hour), Count: 1},
			{ID: "never-existed", At: t0.Add(time.Hour), Count: 1},
			{ID: "ra-1", At: t0.Add(time.Hour), Count: 1},
		}, 3, t0.Add(time.Hour)},
		{"OtherProfileIgnored", []store.Access{{Profile: "bob", ID: "ra-1", At: t0.Add(time.Hour), Count: 10}}, 2, t0},
		{"Empty", nil, 2, t0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := setup(t, open)
			m := mem("alice", "ra-1", "accessed memory", accessCount(2), embedded(1))
			b.insert(m, mem("alice", "ra-gone", "soon deleted"), mem("bob", "ra-bob", "bob's"))
			if err := b.s.Delete(b.ctx, "alice", "ra-gone"); err != nil {
				t.Fatal(err)
			}
			acc := slices.Clone(tc.acc)
			for i := range acc {
				if acc[i].Profile == "" {
					acc[i].Profile = "alice"
				}
			}
			if err := b.s.RecordAccess(b.ctx, acc); err != nil {
				t.Fatalf("RecordAccess: %v", err)
			}
			want := m
			want.AccessCount, want.AccessedAt = tc.wantCount, tc.wantAccessed
			checkMemory(t, b.getOne("alice", m.ID), want, embExact)
			if got := b.get("alice", "ra-gone"); len(got) != 0 {
				t.Error("RecordAccess resurrected a deleted memory")
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Signals.

func exerciseSignals(t *testing.T, open OpenFunc) {
	t.Run("ReadsTheRows", func(t *testing.T) { checkSignals(t, open) })
}

func checkSignals(t *testing.T, open OpenFunc) {
	b := setup(t, open)
	happened := t0.Add(-48 * time.Hour)
	b.insert(
		mem("alice", "s1", "one", accessCount(3), importance(0.8), occurred(happened), embedded(1)),
		mem("alice", "s2", "two", at(time.Hour)),
		mem("bob", "s3", "bob's", accessCount(9)),
	)
	if err := b.s.RecordAccess(b.ctx, []store.Access{{Profile: "alice", ID: "s2", At: t0.Add(3 * time.Hour), Count: 2}}); err != nil {
		t.Fatal(err)
	}
	got, err := b.s.Signals(b.ctx, "alice", []string{"s1", "s2", "s3", "missing"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("Signals = %v, want s1 and s2 alone (s3 is bob's)", got)
	}
	s1, s2 := b.getOne("alice", "s1"), b.getOne("alice", "s2")
	for _, c := range []struct {
		id   string
		m    mnemotype.Memory
		want store.Signals
	}{
		{"s1", s1, store.Signals{OccurredAt: happened, AccessedAt: s1.AccessedAt, AccessCount: 3, Importance: 0.8}},
		{"s2", s2, store.Signals{OccurredAt: s2.CreatedAt, AccessedAt: t0.Add(3 * time.Hour), AccessCount: 2, Importance: s2.Importance}},
	} {
		g := got[c.id]
		if !g.OccurredAt.Equal(c.want.OccurredAt) || !g.AccessedAt.Equal(c.want.AccessedAt) || g.AccessCount != c.want.AccessCount ||
			g.Importance != c.want.Importance {
			t.Errorf("Signals[%s] = %+v, want %+v", c.id, g, c.want)
		}
		if !g.AccessedAt.Equal(c.m.AccessedAt) || g.AccessCount != c.m.AccessCount || !g.OccurredAt.Equal(c.m.OccurredAt) {
			t.Errorf("Signals[%s] = %+v, Get reads %v / %d / %v", c.id, g, c.m.AccessedAt, c.m.AccessCount, c.m.OccurredAt)
		}
	}
	if got, err := b.s.Signals(b.ctx, "alice", nil); err != nil || len(got) != 0 {
		t.Errorf("Signals(no ids) = %v, %v", got, err)
	}
}

// ---------------------------------------------------------------------------
// Settings.

func exerciseSettings(t *testing.T, open OpenFunc) {
	t.Run("SettingsProfiles", func(t *testing.T) {
		b := setup(t, open)
		for _, p := range []string{"zed", "", "amy"} {
			if err := b.s.SetSettings(b.ctx, p, map[string]string{"k": "v"}); err != nil {
				t.Fatal(err)
			}
		}
		b.insert(mem("bob", "m1", "bob has memories and no settings"))
		got, err := b.s.SettingsProfiles(b.ctx)
		if err != nil || !slices.Equal(got, []string{"amy", "zed"}) {
			t.Fatalf("SettingsProfiles = %v, %v; want [amy zed]", got, err)
		}
		if err := b.s.DeleteSettings(b.ctx, "zed", []string{"k"}); err != nil {
			t.Fatal(err)
		}
		if got, err := b.s.SettingsProfiles(b.ctx); err != nil || !slices.Equal(got, []string{"amy"}) {
			t.Fatalf("SettingsProfiles after zed's last setting went = %v, %v; want [amy]", got, err)
		}
	})
	settings := func(b *bundle, profile string) map[string]string {
		b.t.Helper()
		kv, err := b.s.Settings(b.ctx, profile)
		if err != nil {
			b.t.Fatalf("Settings(%q): %v", profile, err)
		}
		return kv
	}
	set := func(b *bundle, profile string, kv map[string]string) {
		b.t.Helper()
		if err := b.s.SetSettings(b.ctx, profile, kv); err != nil {
			b.t.Fatalf("SetSettings(%q): %v", profile, err)
		}
	}

	t.Run("Delete", func(t *testing.T) {
		b := setup(t, open)
		set(b, "alice", map[string]string{"a": "1", "b": "2", "c": "3"})
		set(b, "bob", map[string]string{"a": "1"})
		if err := b.s.DeleteSettings(b.ctx, "alice", []string{"a", "c", "never-set"}); err != nil {
			t.Fatal(err)
		}
		if kv := settings(b, "alice"); !maps.Equal(kv, map[string]string{"b": "2"}) {
			t.Errorf("alice's settings after deleting a and c = %v", kv)
		}
		if kv := settings(b, "bob"); !maps.Equal(kv, map[string]string{"a": "1"}) {
			t.Errorf("bob's settings = %v", kv)
		}
	})

	t.Run("EmptyStore", func(t *testing.T) {
		b := setup(t, open)
		for _, p := range []string{"alice", ""} {
			if kv := settings(b, p); len(kv) != 0 {
				t.Errorf("Settings(%q) = %v on a fresh store", p, kv)
			}
		}
	})

	t.Run("OverwriteMerges", func(t *testing.T) {
		b := setup(t, open)
		set(b, "alice", map[string]string{"theme": "dark", "k": "10"})
		set(b, "alice", map[string]string{"k": "20", "new": "x"})
		want := map[string]string{"theme": "dark", "k": "20", "new": "x"}
		if kv := settings(b, "alice"); !maps.Equal(kv, want) {
			t.Errorf("Settings = %v, want %v", kv, want)
		}
	})

	t.Run("ProfileIsolation", func(t *testing.T) {
		b := setup(t, open)
		set(b, "alice", map[string]string{"k": "alice", "only-alice": "1"})
		set(b, "bob", map[string]string{"k": "bob"})
		set(b, "", map[string]string{"k": "server", "default": "yes"})
		for p, want := range map[string]map[string]string{
			"alice": {"k": "alice", "only-alice": "1"},
			"bob":   {"k": "bob"},
			"":      {"k": "server", "default": "yes"},
			"carol": {},
		} {
			if kv := settings(b, p); !maps.Equal(kv, want) {
				t.Errorf("Settings(%q) = %v, want %v", p, kv, want)
			}
		}
	})

	t.Run("Values", func(t *testing.T) {
		b := setup(t, open)
		want := map[string]string{
			"empty":   "",
			"unicode": "café 東京 🧠",
			"quotes":  `'single' "double" \back`,
			"long":    strings.Repeat("0123456789", 1000),
			"weights": `{"lexical":1,"dense":0.5}`,
		}
		set(b, "alice", want)
		if kv := settings(b, "alice"); !maps.Equal(kv, want) {
			t.Errorf("Settings did not round-trip: %d keys, want %d", len(kv), len(want))
		}
	})

	t.Run("Versions", func(t *testing.T) {
		b := setup(t, open)
		versions := func(profile string) store.Versions {
			t.Helper()
			v, err := b.s.Versions(b.ctx, profile)
			if err != nil {
				t.Fatalf("Versions(%q): %v", profile, err)
			}
			return v
		}
		// Every change to stored settings, of any profile, advances the
		// settings version that every profile reads.
		changes := []struct {
			what   string
			change func()
		}{
			{"alice's first setting", func() { set(b, "alice", map[string]string{"k": "1"}) }},
			{"alice's setting overwritten", func() { set(b, "alice", map[string]string{"k": "2"}) }},
			{"another profile's setting", func() { set(b, "bob", map[string]string{"k": "1"}) }},
			{"a server-wide setting", func() { set(b, "", map[string]string{"k": "1"}) }},
			{"alice's setting deleted", func() {
				if err := b.s.DeleteSettings(b.ctx, "alice", []string{"k"}); err != nil {
					t.Fatal(err)
				}
			}},
		}
		before := map[string]store.Versions{"alice": versions("alice"), "carol": versions("carol")}
		for _, c := range changes {
			c.change()
			for p, was := range before {
				now := versions(p)
				if now.Settings <= was.Settings {
					t.Errorf("after %s, %s's settings version = %d, want > %d", c.what, p, now.Settings, was.Settings)
				}
				before[p] = now
			}
		}
		// Changes is the change sequence, and a memory's write advances it.
		b.insert(mem("alice", "m1", "a memory"))
		v := versions("alice")
		if seq := b.seq(); v.Changes != seq || v.Changes <= before["alice"].Changes {
			t.Errorf("after an insert, Versions(alice).Changes = %d, Sequence = %d, before %d", v.Changes, seq, before["alice"].Changes)
		}
	})

	t.Run("EmptyMap", func(t *testing.T) {
		b := setup(t, open)
		set(b, "alice", map[string]string{"k": "v"})
		set(b, "alice", nil)
		set(b, "alice", map[string]string{})
		if kv := settings(b, "alice"); !maps.Equal(kv, map[string]string{"k": "v"}) {
			t.Errorf("Settings = %v", kv)
		}
	})
}

// ---------------------------------------------------------------------------
// Count.

func exerciseCount(t *testing.T, open OpenFunc) {
	t.Run("PerProfile", func(t *testing.T) {
		b := setup(t, open)
		for _, p := range []string{"alice", "bob", ""} {
			if n := b.count(p); n != 0 {
				t.Errorf("Count(%q) = %d on a fresh store", p, n)
			}
		}
		b.insert(GenerateMemories(1, "alice", 12, 0)...)
		b.insert(GenerateMemories(2, "bob", 5, 4)...)
		if err := b.s.Delete(b.ctx, "alice", GenerateMemories(1, "alice", 1, 0)[0].ID); err != nil {
			t.Fatal(err)
		}
		for p, want := range map[string]int{"alice": 11, "bob": 5, "carol": 0, "": 0} {
			if n := b.count(p); n != want {
				t.Errorf("Count(%q) = %d, want %d", p, n, want)
			}
		}
	})
}

// ---------------------------------------------------------------------------
// Close.

func exerciseClose(t *testing.T, open OpenFunc) {
	t.Run("Idempotent", func(t *testing.T) {
		b := setup(t, open)
		b.insert(mem("alice", "x", "something"))
		for i := range 3 {
			if err := b.s.Close(); err != nil {
				t.Errorf("Close #%d: %v", i+1, err)
			}
		}
	})

	calls := []struct {
		name string
		call func(b *bundle) error
	}{
		{"Insert", func(b *bundle) error { return b.s.Insert(b.ctx, []mnemotype.Memory{mem("alice", "new", "new")}) }},
		{"Get", func(b *bundle) error {
			_, err := b.s.Get(b.ctx, store.GetParams{Profile: "alice", IDs: []string{"x"}})
			return err
		}},
		{"Update", func(b *bundle) error {
			_, err := b.s.Update(b.ctx, store.UpdateParams{Profile: "alice", ID: "x", Content: ptr("changed")})
			return err
		}},
		{"Delete", func(b *bundle) error { return b.s.Delete(b.ctx, "alice", "x") }},
		{"List", func(b *bundle) error {
			_, err := b.s.List(b.ctx, store.ListParams{Profile: "alice", Limit: 10})
			return err
		}},
		{"Lexical", func(b *bundle) error {
			_, err := b.s.Lexical(b.ctx, store.LexicalParams{Scope: mnemotype.Scope{Profile: "alice"}, Match: store.MatchQuery{Terms: []string{"something"}}})
			return err
		}},
		{"RecentlyAccessed", func(b *bundle) error {
			_, err := b.s.RecentlyAccessed(b.ctx, mnemotype.Scope{Profile: "alice"}, 10)
			return err
		}},
		{"InScope", func(b *bundle) error {
			_, err := b.s.InScope(b.ctx, mnemotype.Scope{Profile: "alice"}, nil)
			return err
		}},
		{"Changes", func(b *bundle) error {
			_, err := b.s.Changes(b.ctx, store.ChangesParams{Profile: "alice"})
			return err
		}},
		{"Sequence", func(b *bundle) error {
			_, err := b.s.Sequence(b.ctx, "alice")
			return err
		}},
		{"RecordAccess", func(b *bundle) error {
			return b.s.RecordAccess(b.ctx, []store.Access{{Profile: "alice", ID: "x", At: t0, Count: 1}})
		}},
		{"Settings", func(b *bundle) error {
			_, err := b.s.Settings(b.ctx, "alice")
			return err
		}},
		{"SetSettings", func(b *bundle) error { return b.s.SetSettings(b.ctx, "alice", map[string]string{"k": "v"}) }},
		{"DeleteSettings", func(b *bundle) error { return b.s.DeleteSettings(b.ctx, "alice", []string{"k"}) }},
		{"Profiles", func(b *bundle) error {
			_, err := b.s.Profiles(b.ctx)
			return err
		}},
		{"DeleteMatching", func(b *bundle) error {
			_, err := b.s.DeleteMatching(b.ctx, store.DeleteParams{Profile: "alice", Session: "s1"})
			return err
		}},
		{"DeleteProfile", func(b *bundle) error {
			_, err := b.s.DeleteProfile(b.ctx, "alice")
			return err
		}},
		{"Count", func(b *bundle) error {
			_, err := b.s.Count(b.ctx, "alice")
			return err
		}},
		{"EmbeddingCounts", func(b *bundle) error {
			_, err := b.s.EmbeddingCounts(b.ctx, "")
			return err
		}},
		{"EmbeddingDim", func(b *bundle) error {
			_, err := b.s.EmbeddingDim(b.ctx, "alice")
			return err
		}},
	}
	for _, c := range calls {
		t.Run(c.name+"AfterClose", func(t *testing.T) {
			b := setup(t, open)
			b.insert(mem("alice", "x", "something", embedded(1)))
			if err := c.call(b); err != nil {
				t.Fatalf("%s before Close: %v", c.name, err)
			}
			if err := b.s.Close(); err != nil {
				t.Fatal(err)
			}
			if err := c.call(b); !errors.Is(err, mnemotype.ErrClosed) {
				t.Errorf("%s after Close: err = %v, want ErrClosed", c.name, err)
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Concurrency.

func exerciseConcurrent(t *testing.T, open OpenFunc) {
	t.Run("InsertAndRead", func(t *testing.T) {
		b := setup(t, open)
		const workers, batches, perBatch = 8, 10, 5
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range batches {
					ms := GenerateMemories(uint64(w*batches+i), "alice", perBatch, 8)
					if err := b.s.Insert(b.ctx, ms); err != nil {
						t.Errorf("worker %d: Insert: %v", w, err)
						return
					}
					got, err := b.s.Get(b.ctx, store.GetParams{Profile: "alice", IDs: memIDs(ms), WithEmbedding: true})
					if err != nil || len(got) != perBatch {
						t.Errorf("worker %d: Get own batch: %d memories, %v", w, len(got), err)
					}
					hits, err := b.s.Lexical(b.ctx, store.LexicalParams{
						Scope: mnemotype.Scope{Profile: "alice"},
						Match: store.MatchQuery{Terms: strings.Fields(ms[0].Content)[:2]}, Limit: 20,
					})
					if err != nil || len(hits) == 0 {
						t.Errorf("worker %d: Lexical: %d hits, %v", w, len(hits), err)
					}
					if _, err := b.s.Count(b.ctx, "alice"); err != nil {
						t.Errorf("worker %d: Count: %v", w, err)
					}
					if _, err := b.s.Changes(b.ctx, store.ChangesParams{Profile: "alice"}); err != nil {
						t.Errorf("worker %d: Changes: %v", w, err)
					}
					if _, err := b.s.RecentlyAccessed(b.ctx, mnemotype.Scope{Profile: "alice"}, 10); err != nil {
						t.Errorf("worker %d: RecentlyAccessed: %v", w, err)
					}
					if err := b.s.RecordAccess(b.ctx, []store.Access{{Profile: "alice", ID: ms[0].ID, At: t0.Add(time.Duration(i) * time.Hour), Count: 1}}); err != nil {
						t.Errorf("worker %d: RecordAccess: %v", w, err)
					}
				}
			})
		}
		wg.Wait()
		const total = workers * batches * perBatch
		if n := b.count("alice"); n != total {
			t.Errorf("Count = %d, want %d", n, total)
		}
		all, _ := b.listAll(store.ListParams{Profile: "alice", Limit: 97})
		if ids := memIDs(all); len(ids) != total || len(slices.Compact(sorted(ids))) != total {
			t.Errorf("List returned %d memories (%d distinct), want %d", len(ids), len(slices.Compact(sorted(ids))), total)
		}
		if cs := b.changes("alice", 0); len(cs.Upserts) != total {
			t.Errorf("Changes(0) lists %d upserts, want %d", len(cs.Upserts), total)
		}
	})
}

// ---------------------------------------------------------------------------
// Bulk data.

// vocabulary is the word list of GenerateMemories: everyday nouns, verbs and
// adjectives of the kind agent memories are made of.
var vocabulary = strings.Fields(`
	user prefers dark mode editor vim emacs keyboard shortcut meeting tuesday morning coffee tea project deadline
	release database migration postgres sqlite index query latency cache memory agent prompt context window token
	budget invoice customer support ticket bug crash stack trace deploy kubernetes cluster node pod container image
	build pipeline test flaky retry timeout network proxy certificate password rotate secret vault backup restore
	snapshot schedule weekly daily report dashboard metric alert incident postmortem design review document draft
	email calendar reminder birthday anniversary daughter son partner dog cat vacation flight hotel train ticket
	paris tokyo berlin london kitchen recipe pasta garlic tomato basil allergy peanut gluten doctor appointment
	dentist gym running marathon yoga bicycle commute weather rain sunny cold warm book novel author chapter music
	guitar piano playlist podcast episode language spanish french german lesson grammar vocabulary travel visa
	passport insurance tax refund salary raise promotion manager team hiring interview candidate onboarding laptop
	monitor battery charger phone android iphone update version golang python rust typescript react component
	function variable refactor rename lint format commit branch merge conflict rebase pull request approve
	likes dislikes wants needs asked remembered forgot mentioned decided planned finished started blocked urgent
	important quick slow new old favourite usual weird broken fixed green blue red large small early late
`)

// GenerateMemories returns n valid memories of profile, deterministic for a
// given seed: content of 6 to 40 words drawn from a fixed vocabulary with a
// Zipf distribution, a few projects, sessions and kinds, distinct creation
// times and, when dim > 0, L2-normalised dim-dimensional embeddings. Ids are
// unique per (profile, seed, i), so batches from different seeds never
// collide.
func GenerateMemories(seed uint64, profile string, n, dim int) []mnemotype.Memory {
	r := rand.New(rand.NewPCG(seed, 0x6d6e656d6f))
	zipf := rand.NewZipf(r, 1.07, 2, uint64(len(vocabulary)-1))
	projects := []string{"", "apollo", "zeus", "hermes"}
	ms := make([]mnemotype.Memory, n)
	var sb strings.Builder
	for i := range ms {
		sb.Reset()
		for w := range 6 + r.IntN(35) {
			if w > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(vocabulary[zipf.Uint64()])
		}
		created := t0.Add(time.Duration(seed)*time.Hour + time.Duration(i)*time.Second + time.Duration(r.IntN(1e9)))
		m := mnemotype.Memory{
			ID:          fmt.Sprintf("%s-%d-%06d", profile, seed, i),
			Profile:     profile,
			Project:     projects[r.IntN(len(projects))],
			Session:     fmt.Sprintf("session-%d", r.IntN(5)),
			Kind:        mnemotype.Kinds[r.IntN(len(mnemotype.Kinds))],
			Content:     sb.String(),
			Importance:  float64(r.IntN(101)) / 100,
			CreatedAt:   created,
			AccessedAt:  created.Add(time.Duration(r.IntN(3600)) * time.Second),
			AccessCount: int64(r.IntN(10)),
		}
		if r.IntN(3) == 0 {
			m.Metadata = json.RawMessage(fmt.Sprintf(`{"source":"gen","n":%d}`, i))
		}
		if dim > 0 {
			m.Embedding, m.EmbeddingModel = vec(r.Uint64(), dim), "gen-model"
		}
		ms[i] = m
	}
	return ms
}
