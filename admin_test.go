package mnemo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/store/sqlitestore"
)

// openAdmin opens an engine on a fresh file with emb (nil: the hashing
// embedder).
func openAdmin(t *testing.T, emb embed.Embedder) *mnemo.Engine {
	t.Helper()
	if emb == nil {
		emb = embed.NewHash(embed.DefaultHashDim)
	}
	e, err := mnemo.Open(filepath.Join(t.TempDir(), "mnemo.db"), &mnemo.Config{Embedder: emb, AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func addAdmin(t *testing.T, e *mnemo.Engine, in mnemo.Input) mnemo.Memory {
	t.Helper()
	m, err := e.Remember(t.Context(), in)
	if err != nil {
		t.Fatalf("Remember(%q): %v", in.Content, err)
	}
	return m
}

func ref[T any](v T) *T { return &v }

// flakyEmbedder is the hashing embedder that fails while fail is set.
type flakyEmbedder struct {
	*embed.Hash
	fail atomic.Bool
}

func (f *flakyEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if f.fail.Load() {
		return nil, errors.New("provider down")
	}
	return f.Hash.Embed(ctx, texts)
}

func TestEngine_List(t *testing.T) {
	t.Parallel()
	e := openAdmin(t, nil)
	ctx := t.Context()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var want []string
	for i := range 7 {
		m := addAdmin(t, e, mnemo.Input{Profile: "alice", Project: "p", Session: fmt.Sprintf("s%d", i%2),
			Content: fmt.Sprintf("memory %d", i), CreatedAt: base.Add(time.Duration(i) * time.Minute)})
		want = append(want, m.ID)
	}
	addAdmin(t, e, mnemo.Input{Profile: "bob", Project: "p", Content: "bob's memory"})

	t.Run("PagesInCreationOrder", func(t *testing.T) {
		var got []string
		cursor := ""
		for range 10 {
			page, err := e.List(ctx, mnemo.ListQuery{Profile: "alice", Limit: 3, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range page.Memories {
				got = append(got, m.ID)
				if m.Profile != "alice" {
					t.Errorf("List(alice) returned a memory of %s", m.Profile)
				}
			}
			if cursor = page.NextCursor; cursor == "" {
				break
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("paged ids = %v, want %v", got, want)
		}
	})

	t.Run("StableWhileWriting", func(t *testing.T) {
		e := openAdmin(t, nil)
		for i := range 4 {
			addAdmin(t, e, mnemo.Input{Profile: "alice", Content: fmt.Sprintf("m %d", i), CreatedAt: base.Add(time.Duration(i) * time.Minute)})
		}
		p1, err := e.List(ctx, mnemo.ListQuery{Profile: "alice", Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		// A memory created before the cursor does not shift later pages.
		addAdmin(t, e, mnemo.Input{Profile: "alice", Content: "backdated", CreatedAt: base.Add(-time.Hour)})
		p2, err := e.List(ctx, mnemo.ListQuery{Profile: "alice", Limit: 2, Cursor: p1.NextCursor})
		if err != nil {
			t.Fatal(err)
		}
		if len(p2.Memories) != 2 || p2.Memories[0].Content != "m 2" || p2.NextCursor != "" {
			t.Errorf("second page = %+v", p2)
		}
	})

	t.Run("Filters", func(t *testing.T) {
		page, err := e.List(ctx, mnemo.ListQuery{Profile: "alice", Session: "s1"})
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Memories) != 3 {
			t.Errorf("session s1 has %d memories, want 3", len(page.Memories))
		}
		page, err = e.List(ctx, mnemo.ListQuery{Profile: "alice", Project: "other"})
		if err != nil || len(page.Memories) != 0 {
			t.Errorf("project other: %d memories, %v", len(page.Memories), err)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		for name, q := range map[string]mnemo.ListQuery{
			"NoProfile":   {},
			"LimitLow":    {Profile: "alice", Limit: -1},
			"LimitHigh":   {Profile: "alice", Limit: mnemo.MaxListLimit + 1},
			"BadCursor":   {Profile: "alice", Cursor: "not a cursor"},
			"ForgedCursr": {Profile: "alice", Cursor: "Zm9v"},
		} {
			if _, err := e.List(ctx, q); !errors.Is(err, mnemo.ErrInvalid) {
				t.Errorf("%s: error = %v, want ErrInvalid", name, err)
			}
		}
	})
}

// denseTop recalls text with the dense leg alone and returns the top
// result and its dense score.
func denseTop(t *testing.T, e *mnemo.Engine, profile, text string) (string, float64) {
	t.Helper()
	res, err := e.Recall(t.Context(), mnemo.Query{Profile: profile, Text: text, Limit: 1,
		Overrides: map[string]string{"keyword_weight": "0", "semantic_weight": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Results) == 0 {
		return "", 0
	}
	return res.Results[0].ID, res.Results[0].Legs[mnemotype.LegDense].Score
}

func TestEngine_Update(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("ChangesFieldsAndReembeds", func(t *testing.T) {
		e := openAdmin(t, nil)
		m := addAdmin(t, e, mnemo.Input{Profile: "alice", Project: "p", Session: "s", Content: "the cat sat on the mat",
			Metadata: json.RawMessage(`{"a":1}`)})
		addAdmin(t, e, mnemo.Input{Profile: "alice", Content: "quantum chromodynamics lecture notes"})
		if id, _ := denseTop(t, e, "alice", "the cat sat on the mat"); id != m.ID {
			t.Fatalf("before update, dense top = %s", id)
		}
		got, err := e.Update(ctx, "alice", m.ID, mnemo.Patch{Content: ref("deployed the payment service to production"),
			Kind: ref("semantic"), Project: ref(""), Importance: ref(0.9), Metadata: ref(json.RawMessage(`{"b":2}`))})
		if err != nil {
			t.Fatal(err)
		}
		if got.Content != "deployed the payment service to production" || got.Kind != mnemotype.KindSemantic ||
			got.Project != "" || got.Session != "s" || got.Importance != 0.9 || string(got.Metadata) != `{"b":2}` {
			t.Errorf("Update returned %+v", got)
		}
		stored, err := e.Get(ctx, "alice", m.ID)
		if err != nil || stored.Content != got.Content || stored.Kind != got.Kind || !stored.CreatedAt.Equal(m.CreatedAt) {
			t.Errorf("Get after Update = %+v, %v", stored, err)
		}
		id, score := denseTop(t, e, "alice", "deployed the payment service to production")
		if id != m.ID || score < 0.999 {
			t.Errorf("dense top for the new content = %s (score %g), want %s with cosine 1: not re-embedded", id, score, m.ID)
		}
		// The old text no longer matches by embedding.
		if _, score := denseTop(t, e, "alice", "the cat sat on the mat"); score > 0.9 {
			t.Errorf("the old content still scores %g in the dense leg", score)
		}
		// The lexical index follows the content too.
		res, err := e.Recall(ctx, mnemo.Query{Profile: "alice", Text: "payment", Overrides: map[string]string{"semantic_weight": "0"}})
		if err != nil || len(res.Results) != 1 || res.Results[0].ID != m.ID {
			t.Errorf("lexical recall of the new content: %v %v", res, err)
		}
	})

	t.Run("ConversationFields", func(t *testing.T) {
		e := openAdmin(t, nil)
		m := addAdmin(t, e, mnemo.Input{Profile: "alice", Session: "s", Actor: "Caroline", Content: "I adopted a puppy"})
		addAdmin(t, e, mnemo.Input{Profile: "alice", Session: "s", Content: "what is its name?"})
		when := time.Date(2023, 5, 8, 13, 56, 0, 0, time.FixedZone("", 2*3600))
		got, err := e.Update(ctx, "alice", m.ID, mnemo.Patch{Actor: ref("Melanie"), OccurredAt: &when, Seq: ref(int64(5))})
		if err != nil {
			t.Fatal(err)
		}
		if got.Actor != "Melanie" || !got.OccurredAt.Equal(when) || got.OccurredAt.Location() != time.UTC || got.Seq != 5 {
			t.Errorf("Update returned actor %q occurred_at %v seq %d", got.Actor, got.OccurredAt, got.Seq)
		}
		res, err := e.Recall(ctx, mnemo.Query{Profile: "alice", Text: "puppy", Actors: []string{"Melanie"}, Before: when.Add(time.Second)})
		if err != nil || len(res.Results) != 1 || res.Results[0].ID != m.ID {
			t.Errorf("recall by the new actor and time: %+v, %v", res, err)
		}
		res, err = e.Recall(ctx, mnemo.Query{Profile: "alice", Text: "puppy", Actors: []string{"Caroline"}})
		if err != nil || len(res.Results) != 0 {
			t.Errorf("recall by the old actor: %+v, %v", res, err)
		}
	})

	t.Run("ClearsMetadata", func(t *testing.T) {
		e := openAdmin(t, nil)
		m := addAdmin(t, e, mnemo.Input{Profile: "alice", Content: "x", Metadata: json.RawMessage(`{"a":1}`)})
		got, err := e.Update(ctx, "alice", m.ID, mnemo.Patch{Metadata: ref(json.RawMessage("null"))})
		if err != nil || len(got.Metadata) != 0 {
			t.Errorf("Update(metadata null) = %s, %v", got.Metadata, err)
		}
	})

	t.Run("SameContentKeepsEmbedding", func(t *testing.T) {
		f := &flakyEmbedder{Hash: embed.NewHash(embed.DefaultHashDim)}
		e := openAdmin(t, f)
		m := addAdmin(t, e, mnemo.Input{Profile: "alice", Content: "unchanged words here"})
		f.fail.Store(true)
		if _, err := e.Update(ctx, "alice", m.ID, mnemo.Patch{Content: ref("unchanged words here"), Importance: ref(0.1)}); err != nil {
			t.Fatal(err)
		}
		f.fail.Store(false)
		if id, score := denseTop(t, e, "alice", "unchanged words here"); id != m.ID || score < 0.999 {
			t.Errorf("dense top = %s (%g): the embedding was dropped", id, score)
		}
	})

	t.Run("EmbedderDownDropsStaleVector", func(t *testing.T) {
		f := &flakyEmbedder{Hash: embed.NewHash(embed.DefaultHashDim)}
		e := openAdmin(t, f)
		m := addAdmin(t, e, mnemo.Input{Profile: "alice", Content: "old text about cats"})
		f.fail.Store(true)
		got, err := e.Update(ctx, "alice", m.ID, mnemo.Patch{Content: ref("new text about dogs")})
		if err != nil {
			t.Fatalf("Update with the embedder down: %v", err)
		}
		if got.EmbeddingModel != "" {
			t.Errorf("EmbeddingModel = %q, want none", got.EmbeddingModel)
		}
		f.fail.Store(false)
		if id, _ := denseTop(t, e, "alice", "old text about cats"); id != "" {
			t.Errorf("the stale vector of the old text still finds %s", id)
		}
	})

	t.Run("Errors", func(t *testing.T) {
		e := openAdmin(t, nil)
		m := addAdmin(t, e, mnemo.Input{Profile: "alice", Content: "mine"})
		cases := []struct {
			name    string
			profile string
			id      string
			p       mnemo.Patch
			want    error
		}{
			{"OtherProfile", "bob", m.ID, mnemo.Patch{Content: ref("stolen")}, mnemo.ErrNotFound},
			{"OtherProfileNoContent", "bob", m.ID, mnemo.Patch{Importance: ref(1.0)}, mnemo.ErrNotFound},
			{"Missing", "alice", "nope", mnemo.Patch{Importance: ref(1.0)}, mnemo.ErrNotFound},
			{"NoProfile", "", m.ID, mnemo.Patch{}, mnemo.ErrInvalid},
			{"EmptyContent", "alice", m.ID, mnemo.Patch{Content: ref("  ")}, mnemo.ErrInvalid},
			{"HugeContent", "alice", m.ID, mnemo.Patch{Content: ref(strings.Repeat("x", mnemo.MaxContentBytes+1))}, mnemo.ErrInvalid},
			{"BadKind", "alice", m.ID, mnemo.Patch{Kind: ref("dream")}, mnemo.ErrInvalid},
			{"ImportanceHigh", "alice", m.ID, mnemo.Patch{Importance: ref(1.5)}, mnemo.ErrInvalid},
			{"MetadataNotObject", "alice", m.ID, mnemo.Patch{Metadata: ref(json.RawMessage(`[1]`))}, mnemo.ErrInvalid},
			{"ActorTooLong", "alice", m.ID, mnemo.Patch{Actor: ref(strings.Repeat("a", mnemotype.MaxActorBytes+1))}, mnemo.ErrInvalid},
			{"ActorNotUTF8", "alice", m.ID, mnemo.Patch{Actor: ref("\xff")}, mnemo.ErrInvalid},
			{"SeqNegative", "alice", m.ID, mnemo.Patch{Seq: ref(int64(-2))}, mnemo.ErrInvalid},
			{"OccurredAtYear10000", "alice", m.ID, mnemo.Patch{OccurredAt: ref(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))}, mnemo.ErrInvalid},
		}
		for _, c := range cases {
			if _, err := e.Update(ctx, c.profile, c.id, c.p); !errors.Is(err, c.want) {
				t.Errorf("%s: error = %v, want %v", c.name, err, c.want)
			}
		}
		if got, err := e.Get(ctx, "alice", m.ID); err != nil || got.Content != "mine" || got.Importance != 0.5 {
			t.Errorf("after rejected updates: %+v, %v", got, err)
		}
	})
}

func TestEngine_Keys(t *testing.T) {
	t.Parallel()
	e := openAdmin(t, nil)
	ctx := t.Context()
	tokA, ka, err := e.CreateKey(ctx, "alice", "laptop")
	if err != nil {
		t.Fatal(err)
	}
	tokB, kb, err := e.CreateKey(ctx, "bob", "")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tokA, mnemo.KeyTokenPrefix) || len(tokA) < 40 || tokA == tokB || ka.ID == kb.ID {
		t.Fatalf("tokens %q %q, ids %s %s", tokA, tokB, ka.ID, kb.ID)
	}
	if ka.Hash != mnemo.HashKey(tokA) || strings.Contains(ka.Hash, tokA) || !strings.HasPrefix(tokA, ka.Prefix) {
		t.Errorf("key record %+v does not hash the token", ka)
	}
	for tok, want := range map[string]string{tokA: "alice", tokB: "bob"} {
		k, err := e.Authenticate(ctx, tok)
		if err != nil || k.Profile != want {
			t.Errorf("Authenticate = %+v, %v; want profile %s", k, err, want)
		}
	}
	for _, bad := range []string{"", tokA + "x", tokA[:len(tokA)-1], ka.Hash, ka.ID} {
		if _, err := e.Authenticate(ctx, bad); !errors.Is(err, mnemo.ErrUnknownKey) {
			t.Errorf("Authenticate(%q) error = %v, want ErrUnknownKey", bad, err)
		}
	}
	if ks, err := e.Keys(ctx, "alice", false); err != nil || len(ks) != 1 || ks[0].ID != ka.ID || ks[0].Name != "laptop" {
		t.Errorf("Keys(alice) = %+v, %v", ks, err)
	}
	if ks, err := e.Keys(ctx, "", false); err != nil || len(ks) != 2 {
		t.Errorf("Keys(all) = %d keys, %v", len(ks), err)
	}
	if err := e.RevokeKey(ctx, ka.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Authenticate(ctx, tokA); !errors.Is(err, mnemo.ErrUnknownKey) {
		t.Errorf("revoked key authenticates: %v", err)
	}
	if err := e.RevokeKey(ctx, ka.ID); !errors.Is(err, mnemo.ErrNotFound) {
		t.Errorf("revoking twice: %v", err)
	}
	if ks, err := e.Keys(ctx, "alice", true); err != nil || len(ks) != 1 || ks[0].RevokedAt.IsZero() {
		t.Errorf("Keys(alice, revoked) = %+v, %v", ks, err)
	}
	if _, _, err := e.CreateKey(ctx, " ", ""); !errors.Is(err, mnemo.ErrInvalid) {
		t.Errorf("CreateKey without a profile: %v", err)
	}
	if err := e.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
	e.Close()
	if err := e.Ping(ctx); !errors.Is(err, mnemo.ErrClosed) {
		t.Errorf("Ping after Close: %v", err)
	}
	if _, err := e.Authenticate(ctx, tokB); !errors.Is(err, mnemo.ErrClosed) {
		t.Errorf("Authenticate after Close: %v", err)
	}
}

func TestEngine_RecallPool(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	e, err := mnemo.Open(path, &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := t.Context()
	words := strings.Fields("deploy auth token database staging cluster release payment service login session bug fix review")
	var ins []mnemo.Input
	for i := range 400 {
		ins = append(ins, mnemo.Input{Profile: "alice", Session: fmt.Sprintf("s%d", i%3), Importance: ref(float64(i%10) / 10),
			Content: fmt.Sprintf("%s %s %s note %d", words[i%len(words)], words[(i/3)%len(words)], words[(i/7)%len(words)], i),
			Actor:   fmt.Sprintf("A%d", i%2), Metadata: json.RawMessage(fmt.Sprintf(`{"n": %d}`, i%4))})
	}
	if _, err := e.RememberBatch(ctx, ins); err != nil {
		t.Fatal(err)
	}
	addAdmin(t, e, mnemo.Input{Profile: "bob", Content: "deploy auth token of bob"})
	for _, q := range []mnemo.Query{
		{Profile: "alice", Text: "deploy auth token", Limit: 3},
		{Profile: "alice", Text: "staging cluster review", Limit: 10, Sessions: []string{"s1"}},
		{Profile: "alice", Text: "payment", Limit: 5, Overrides: map[string]string{"recency_weight": "0.6", "access_weight": "0.4", "importance_mode": "boost"}},
		{Profile: "alice", Text: "nothing matches zzz", Limit: 3},
		{Profile: "bob", Text: "deploy auth token", Limit: 3},
		{Profile: "alice", Text: "deploy auth token", Limit: 5, Metadata: map[string]any{"n": 1}, Overrides: map[string]string{"min_relevance": "0"}},
		{Profile: "alice", Text: "release payment", Limit: 5, Actors: []string{"A1"}, Metadata: map[string]any{"n": 3},
			Overrides: map[string]string{"min_relevance": "0"}},
	} {
		full := q
		full.Overrides = map[string]string{"candidate_policy": "pool"}
		for k, v := range q.Overrides {
			full.Overrides[k] = v
		}
		got, err := e.RecallPool(ctx, q) // first: fresh's Close below flushes its accesses
		if err != nil {
			t.Fatal(err)
		}
		// A fresh engine: the access counts its index holds are the
		// store's, untouched by e's recalls (they flush only on Close).
		fresh, err := mnemo.Open(path, &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		want, err := fresh.Recall(ctx, full)
		fresh.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Results) != len(want.Results) {
			t.Fatalf("%q: RecallPool returned %d results, Recall(pool) %d", q.Text, len(got.Results), len(want.Results))
		}
		if q.Metadata != nil && len(got.Results) == 0 {
			t.Errorf("%q with metadata %v: no results", q.Text, q.Metadata)
		}
		for i := range want.Results {
			g, w := got.Results[i], want.Results[i]
			if q.Metadata != nil && !strings.Contains(string(g.Metadata), fmt.Sprintf(`"n":%v`, q.Metadata["n"])) &&
				!strings.Contains(string(g.Metadata), fmt.Sprintf(`"n": %v`, q.Metadata["n"])) {
				t.Errorf("%q: RecallPool returned %s with metadata %s", q.Text, g.ID, g.Metadata)
			}
			if g.ID != w.ID || g.Profile != q.Profile || fmt.Sprintf("%.12f %v", g.Score, g.Legs) != fmt.Sprintf("%.12f %v", w.Score, w.Legs) {
				t.Errorf("%q #%d: RecallPool %s %.6f %v, Recall(pool) %s %.6f %v", q.Text, i+1, g.ID, g.Score, g.Legs, w.ID, w.Score, w.Legs)
			}
		}
	}
	if _, err := e.RecallPool(ctx, mnemo.Query{Profile: "alice", Text: " "}); !errors.Is(err, mnemo.ErrInvalid) {
		t.Errorf("blank query: %v", err)
	}
	if _, err := e.RecallPool(ctx, mnemo.Query{Text: "x"}); !errors.Is(err, mnemo.ErrInvalid) {
		t.Errorf("no profile: %v", err)
	}
}

func TestEngine_AdminKeys(t *testing.T) {
	t.Parallel()
	e := openAdmin(t, nil)
	ctx := t.Context()
	tok, k, err := e.CreateAdminKey(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	if k.Role != mnemo.KeyRoleAdmin || k.Profile != "" || k.Name != "ops" || !strings.HasPrefix(tok, mnemo.KeyTokenPrefix) {
		t.Fatalf("admin key %+v", k)
	}
	got, err := e.Authenticate(ctx, tok)
	if err != nil || got.Role != mnemo.KeyRoleAdmin || got.Profile != "" {
		t.Fatalf("Authenticate(admin) = %+v, %v", got, err)
	}
	_, pk, err := e.CreateKey(ctx, "alice", "")
	if err != nil || pk.Role != mnemo.KeyRoleProfile {
		t.Fatalf("profile key %+v, %v", pk, err)
	}
	if ks, err := e.Keys(ctx, "", false); err != nil || len(ks) != 2 || ks[0].Role != mnemo.KeyRoleAdmin {
		t.Errorf("Keys(all) = %+v, %v", ks, err)
	}
	if ks, err := e.Keys(ctx, "alice", false); err != nil || len(ks) != 1 {
		t.Errorf("Keys(alice) lists admin keys: %+v, %v", ks, err)
	}
	if _, _, err := e.CreateAdminKey(ctx, "bad \xff name"); !errors.Is(err, mnemo.ErrInvalid) {
		t.Errorf("a name that is not UTF-8: %v", err)
	}
}

// TestEngine_DeleteProfile: deleting a profile removes what every leg finds
// of it (the dense leg's catalog too), its settings and the use of its
// keys, and nothing of another profile; a new memory under the same name is
// found afterwards. ForgetMatching deletes a session's memories alone.
func TestEngine_DeleteProfile(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	e := openAdmin(t, nil)
	recall := func(profile string) []string {
		t.Helper()
		res, err := e.Recall(ctx, mnemo.Query{Profile: profile, Text: "zebra"})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range res.Results {
			ids = append(ids, r.ID)
		}
		return ids
	}
	for _, in := range []mnemo.Input{
		{ID: "a1", Profile: "alice", Session: "s1", Content: "zebra crossing"},
		{ID: "a2", Profile: "alice", Session: "s2", Content: "zebra migration"},
		{ID: "a3", Profile: "alice", Session: "s2", Content: "zebra stripes"},
		{ID: "b1", Profile: "bob", Session: "s1", Content: "zebra of bob"},
	} {
		addAdmin(t, e, in)
	}
	token, _, err := e.CreateKey(ctx, "alice", "laptop")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.UpdateSettings(ctx, "alice", map[string]string{"semantic_weight": "0.7"}); err != nil {
		t.Fatal(err)
	}
	if got := recall("alice"); len(got) != 3 {
		t.Fatalf("alice recalls %v before", got)
	}
	bobBefore := recall("bob")

	if _, err := e.ForgetMatching(ctx, mnemo.ForgetQuery{Profile: "alice"}); !errors.Is(err, mnemotype.ErrInvalid) {
		t.Errorf("ForgetMatching without project or session: %v, want ErrInvalid", err)
	}
	if n, err := e.ForgetMatching(ctx, mnemo.ForgetQuery{Profile: "alice", Session: "s2"}); err != nil || n != 2 {
		t.Fatalf("ForgetMatching session s2 = %d, %v; want 2", n, err)
	}
	if got := recall("alice"); !slices.Equal(got, []string{"a1"}) {
		t.Errorf("alice recalls %v after forgetting s2, want [a1]", got)
	}

	if _, err := e.DeleteProfile(ctx, ""); !errors.Is(err, mnemotype.ErrInvalid) {
		t.Errorf("DeleteProfile(\"\"): %v, want ErrInvalid", err)
	}
	del, err := e.DeleteProfile(ctx, "alice")
	if err != nil || del != (mnemo.ProfileDeletion{Memories: 1, Settings: 1, Keys: 1}) {
		t.Fatalf("DeleteProfile = %+v, %v", del, err)
	}
	if got := recall("alice"); len(got) != 0 {
		t.Errorf("alice recalls %v after DeleteProfile", got)
	}
	if _, err := e.Authenticate(ctx, token); !errors.Is(err, mnemo.ErrUnknownKey) {
		t.Errorf("alice's key after DeleteProfile: %v, want ErrUnknownKey", err)
	}
	if s, err := e.Settings(ctx, "alice"); err != nil || s.SemanticWeight != mnemo.DefaultSettings().SemanticWeight {
		t.Errorf("alice's settings after DeleteProfile: %+v, %v", s, err)
	}
	if got := recall("bob"); !slices.Equal(got, bobBefore) {
		t.Errorf("bob recalls %v, before %v", got, bobBefore)
	}
	addAdmin(t, e, mnemo.Input{ID: "a9", Profile: "alice", Content: "a new zebra"})
	if got := recall("alice"); !slices.Equal(got, []string{"a9"}) {
		t.Errorf("the new alice recalls %v, want [a9]", got)
	}
}

// lexCountingStore records the query of every full-text search that ranks
// (not the scoring of given ids).
type lexCountingStore struct {
	store.Store
	mu    sync.Mutex
	calls []string
}

func (s *lexCountingStore) Lexical(ctx context.Context, p store.LexicalParams) ([]mnemotype.Hit, error) {
	if p.Only == nil {
		s.mu.Lock()
		s.calls = append(s.calls, fmt.Sprintf("terms %q all %v", p.Match.Terms, p.Match.All))
		s.mu.Unlock()
	}
	return s.Store.Lexical(ctx, p)
}

// TestEngine_RecallPoolSearchesOnce: RecallPool's preload and the
// pipeline share each full-text search: none runs twice.
func TestEngine_RecallPoolSearchesOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := sqlitestore.Open(ctx, filepath.Join(t.TempDir(), "mnemo.db"), sqlitestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	counting := &lexCountingStore{Store: st}
	// The lexical leg in the store, which this test counts the calls of.
	e, err := mnemo.Open("", &mnemo.Config{Store: counting, Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1,
		LexicalInStore: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var ins []mnemo.Input
	for i := range 300 {
		ins = append(ins, mnemo.Input{Profile: "alice", Content: fmt.Sprintf("deploy note %d about the auth token", i)})
	}
	if _, err := e.RememberBatch(ctx, ins); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"deploy auth token", "deploy zzzunknown", "token"} {
		counting.calls = nil
		if _, err := e.RecallPool(ctx, mnemo.Query{Profile: "alice", Text: text, Limit: 3}); err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, c := range counting.calls {
			if seen[c] {
				t.Errorf("%q: the same full-text search ran twice: %s", text, c)
			}
			seen[c] = true
		}
		if len(counting.calls) == 0 {
			t.Errorf("%q: no full-text search", text)
		}
	}
}

// TestEngine_Graphs: WarmIndexes loads the indexes of the profiles large
// enough for a graph (and only those), BuildGraph links a profile's
// memories at once, and recall's trace then says the dense leg walked it.
func TestEngine_Graphs(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	e, err := mnemo.Open(path, &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1,
		ANN: mnemo.ANNOptions{GraphMin: 100, ExactBelow: 50, OneShot: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := t.Context()
	var ins []mnemo.Input
	for i := range 300 {
		ins = append(ins, mnemo.Input{Profile: "big", Content: fmt.Sprintf("note %d about topic %d", i, i%17)})
	}
	for i := range 20 {
		ins = append(ins, mnemo.Input{Profile: "small", Content: fmt.Sprintf("note %d", i)})
	}
	if _, err := e.RememberBatch(ctx, ins); err != nil {
		t.Fatal(err)
	}
	warmed, err := e.WarmIndexes(ctx)
	if err != nil || !slices.Equal(warmed, []string{"big"}) {
		t.Fatalf("WarmIndexes = %v, %v; want [big]", warmed, err)
	}
	res, err := e.Recall(ctx, mnemo.Query{Profile: "big", Text: "topic 3", Trace: true})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Trace.DenseSearch, "scanned") {
		t.Fatalf("before the graph (a one-shot engine grows none): dense_search %q", res.Trace.DenseSearch)
	}
	if n, err := e.BuildGraph(ctx, "big"); err != nil || n != 300 {
		t.Fatalf("BuildGraph = %d, %v; want 300", n, err)
	}
	if res, err = e.Recall(ctx, mnemo.Query{Profile: "big", Text: "topic 3", Trace: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Trace.DenseSearch, "walked the HNSW graph") {
		t.Fatalf("after BuildGraph: dense_search %q", res.Trace.DenseSearch)
	}
}

// TestEngine_OneShotReadsSnapshot: a one-shot engine answers from the
// profile's snapshot — the embeddings' codes, the full-text index read
// lazily — exactly as a long-running engine does; its RecallPool reads no
// index (the store answers).
func TestEngine_OneShotReadsSnapshot(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	cfg := mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1}
	server, err := mnemo.Open(path, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	ctx := t.Context()
	words := strings.Fields("deploy auth token database staging cluster release payment service login session bug fix review")
	var ins []mnemo.Input
	for i := range 300 {
		ins = append(ins, mnemo.Input{Profile: "alice", Session: fmt.Sprintf("s%d", i%3),
			Content: fmt.Sprintf("%s %s %s note %d", words[i%len(words)], words[(i/3)%len(words)], words[(i/7)%len(words)], i)})
	}
	if _, err := server.RememberBatch(ctx, ins); err != nil {
		t.Fatal(err)
	}
	if _, err := server.RebuildIndex(ctx, "alice"); err != nil { // writes the snapshot
		t.Fatal(err)
	}
	oneShotCfg := cfg
	oneShotCfg.ANN.OneShot = true
	open := func() *mnemo.Engine {
		e, err := mnemo.Open(path, &oneShotCfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e
	}
	pool := open()
	all := map[string]string{"min_relevance": "0"}
	q := mnemo.Query{Profile: "alice", Text: "staging cluster payment", Limit: 10, Trace: true, Overrides: all}
	got, err := pool.RecallPool(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if got.Trace.LexicalSearch != "the store's full-text index" {
		t.Errorf("a one-shot RecallPool ranked the lexical leg in %q", got.Trace.LexicalSearch)
	}
	oneShot := open()
	for _, q := range []mnemo.Query{q, {Profile: "alice", Text: "auth token review", Sessions: []string{"s1"}, Limit: 5, Trace: true, Overrides: all}} {
		got, err := oneShot.Recall(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		want, err := server.Recall(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if got.Trace.LexicalSearch != "the in-process full-text index" || !strings.Contains(got.Trace.DenseSearch, "int8 codes") {
			t.Errorf("%q, one-shot: lexical leg %q, dense leg %q", q.Text, got.Trace.LexicalSearch, got.Trace.DenseSearch)
		}
		if len(got.Results) == 0 || len(got.Results) != len(want.Results) {
			t.Fatalf("%q: one-shot %d results, long-running %d", q.Text, len(got.Results), len(want.Results))
		}
		for i := range got.Results {
			if g, w := got.Results[i], want.Results[i]; g.ID != w.ID || g.Score != w.Score {
				t.Errorf("%q #%d: one-shot %s %v, long-running %s %v", q.Text, i+1, g.ID, g.Score, w.ID, w.Score)
			}
		}
	}
}
