package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/server/httpapi"
	"github.com/mnemo-dev/mnemo/server/mcpserver"
)

// bundle is one test's server: a fresh engine (hashing embedder), the API
// on a real listener on 127.0.0.1, and two API keys for profiles alice and
// bob (unless single-user).
type bundle struct {
	t     *testing.T
	e     *mnemo.Engine
	srv   *httpapi.Server
	ts    *httptest.Server
	path  string
	alice string
	bob   string
	// as maps a service key to the profile its requests name in the
	// X-Mnemo-Profile header (unless the request sets one).
	as map[string]string
}

type opts struct {
	singleUser bool
	cfg        func(*httpapi.Config)
	engine     func(*mnemo.Config)
}

func setup(t *testing.T, o opts) *bundle {
	t.Helper()
	t.Parallel()
	path := filepath.Join(t.TempDir(), "mnemo.db")
	ecfg := mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1}
	if o.engine != nil {
		o.engine(&ecfg)
	}
	e, err := mnemo.Open(path, &ecfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	b := &bundle{t: t, e: e, path: path}
	if !o.singleUser {
		if b.alice, _, err = e.CreateKey(t.Context(), "alice", "test"); err != nil {
			t.Fatal(err)
		}
		if b.bob, _, err = e.CreateKey(t.Context(), "bob", "test"); err != nil {
			t.Fatal(err)
		}
	}
	cfg := httpapi.Config{Engine: e, RequireKeys: !o.singleUser}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	if b.srv, err = httpapi.New(cfg); err != nil {
		t.Fatal(err)
	}
	b.ts = httptest.NewServer(b.srv)
	t.Cleanup(b.ts.Close)
	return b
}

// resp is a decoded response.
type resp struct {
	status int
	body   []byte
	header http.Header
}

func (r resp) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

func (r resp) errMsg(t *testing.T) string {
	t.Helper()
	var e struct{ Error, Code string }
	r.json(t, &e)
	if e.Error == "" || e.Code == "" {
		t.Fatalf("error body %s lacks error or code", r.body)
	}
	return e.Error
}

// do sends a request with key (none if ""); body is sent raw if it is a
// string, else as JSON.
func (b *bundle) do(method, path, key string, body any) resp {
	b.t.Helper()
	return b.doWith(method, path, key, body, nil)
}

// doWith is do with extra request headers.
func (b *bundle) doWith(method, path, key string, body any, header http.Header) resp {
	b.t.Helper()
	var rd io.Reader
	if body != nil {
		if s, ok := body.(string); ok {
			rd = strings.NewReader(s)
		} else {
			js, err := json.Marshal(body)
			if err != nil {
				b.t.Fatal(err)
			}
			rd = bytes.NewReader(js)
		}
	}
	req, err := http.NewRequestWithContext(b.t.Context(), method, b.ts.URL+path, rd)
	if err != nil {
		b.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if p := b.as[key]; p != "" {
		req.Header.Set("X-Mnemo-Profile", p)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	out, err := io.ReadAll(res.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp{status: res.StatusCode, body: out, header: res.Header}
}

// must sends a request and fails unless it gets status; it decodes the
// body into v when v is not nil.
func (b *bundle) must(status int, method, path, key string, body, v any) resp {
	b.t.Helper()
	r := b.do(method, path, key, body)
	if r.status != status {
		b.t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.status, status, r.body)
	}
	if v != nil {
		r.json(b.t, v)
	}
	return r
}

func (b *bundle) create(key string, m map[string]any) string {
	b.t.Helper()
	var out struct{ ID string }
	b.must(201, "POST", "/v1/memories", key, m, &out)
	return out.ID
}

type result struct {
	ID        string
	Content   string
	Session   string
	Rank      int
	Score     float64
	Relevance float64
	Legs      map[string]struct {
		Rank  int
		Score float64
	}
}

type recallOut struct {
	Results []result
	Trace   *struct {
		Strategy string
		Legs     map[string][]struct{ ID string }
		Skipped  map[string]string
		Timings  map[string]float64 `json:"timings_ms"`
	}
}

func resultIDs(rs []result) []string {
	out := []string{}
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func TestServe_MemoriesCRUD(t *testing.T) {
	b := setup(t, opts{})
	var one struct{ ID string }
	r := b.must(201, "POST", "/v1/memories", b.alice, map[string]any{"content": "Deployed Threadline v2.3 with the JWT auth fix",
		"session": "s1", "project": "threadline", "kind": "semantic", "importance": 0.8, "metadata": map[string]any{"by": "ci"},
		"created_at": "2026-01-02T03:04:05Z"}, &one)
	if one.ID == "" || r.header.Get("Location") != "/v1/memories/"+one.ID {
		t.Fatalf("POST one: id %q, Location %q", one.ID, r.header.Get("Location"))
	}
	var many struct{ IDs []string }
	b.must(201, "POST", "/v1/memories", b.alice, map[string]any{"memories": []map[string]any{
		{"content": "bought groceries for the weekend", "session": "s2"},
		{"id": "custom-id", "content": "the staging database lives on host db-7", "session": "s1"},
	}}, &many)
	if len(many.IDs) != 2 || many.IDs[1] != "custom-id" {
		t.Fatalf("POST batch: ids %v", many.IDs)
	}

	var m mnemo.Memory
	b.must(200, "GET", "/v1/memories/"+one.ID, b.alice, nil, &m)
	if m.Content != "Deployed Threadline v2.3 with the JWT auth fix" || m.Kind != "semantic" || m.Profile != "alice" ||
		m.Session != "s1" || m.Project != "threadline" || m.Importance != 0.8 || string(m.Metadata) != `{"by":"ci"}` ||
		!m.CreatedAt.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("GET = %+v", m)
	}

	b.must(200, "PATCH", "/v1/memories/custom-id", b.alice, map[string]any{"content": "the staging database moved to host db-9",
		"importance": 1, "metadata": nil}, &m)
	if m.Content != "the staging database moved to host db-9" || m.Importance != 1 || m.Session != "s1" {
		t.Errorf("PATCH = %+v", m)
	}
	var rec recallOut
	b.must(200, "POST", "/v1/recall", b.alice, map[string]any{"query": "db-9"}, &rec)
	if len(rec.Results) == 0 || rec.Results[0].ID != "custom-id" {
		t.Errorf("recall after PATCH: %v", resultIDs(rec.Results))
	}

	// Pagination: stable, complete, in creation order.
	var seen []string
	cursor := ""
	for page := 0; ; page++ {
		var lr struct {
			Memories   []mnemo.Memory
			NextCursor string `json:"next_cursor"`
		}
		b.must(200, "GET", "/v1/memories?limit=2&cursor="+cursor, b.alice, nil, &lr)
		for _, m := range lr.Memories {
			seen = append(seen, m.ID)
		}
		if lr.NextCursor == "" {
			break
		}
		if page > 5 {
			t.Fatal("pagination does not end")
		}
		cursor = lr.NextCursor
	}
	if want := []string{one.ID, many.IDs[0], many.IDs[1]}; !sameSet(seen, want) || len(seen) != 3 || seen[0] != one.ID {
		t.Errorf("paged ids %v, want %v (the backdated one first)", seen, want)
	}
	var lr struct{ Memories []mnemo.Memory }
	b.must(200, "GET", "/v1/memories?session=s1&project=threadline", b.alice, nil, &lr)
	if len(lr.Memories) != 1 || lr.Memories[0].ID != one.ID {
		t.Errorf("filtered list = %v", lr.Memories)
	}

	b.must(204, "DELETE", "/v1/memories/"+one.ID, b.alice, nil, nil)
	b.must(404, "GET", "/v1/memories/"+one.ID, b.alice, nil, nil)
	b.must(404, "DELETE", "/v1/memories/"+one.ID, b.alice, nil, nil)
	b.must(404, "PATCH", "/v1/memories/"+one.ID, b.alice, map[string]any{"importance": 0.1}, nil)
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	sort.Strings(a)
	sort.Strings(b)
	return slices.Equal(a, b)
}

// TestServe_Isolation checks every endpoint with two keys: bob never sees,
// changes or learns the existence of alice's memories, whether bob's
// requests carry bob's profile key, a service key for bob alone, or a
// service key for any profile naming bob.
func TestServe_Isolation(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"ProfileKey", "ServiceKeyForBob", "ServiceKeyForAny"} {
		t.Run(mode, func(t *testing.T) { testIsolation(t, mode) })
	}
}

func testIsolation(t *testing.T, mode string) {
	b := setup(t, opts{})
	if mode != "ProfileKey" {
		var only []string
		if mode == "ServiceKeyForBob" {
			only = []string{"bob"}
		}
		svc, _, err := b.e.CreateServiceKey(t.Context(), "backend", only)
		if err != nil {
			t.Fatal(err)
		}
		b.bob, b.as = svc, map[string]string{svc: "bob"}
	}
	var aliceIDs []string
	for i, c := range []string{"Threadline auth secret for alice", "alice's Threadline deploy notes", "alice shared memory"} {
		aliceIDs = append(aliceIDs, b.create(b.alice, map[string]any{"content": c, "session": "s1", "project": "p",
			"id": fmt.Sprintf("a%d", i)}))
	}
	bobID := b.create(b.bob, map[string]any{"content": "bob's Threadline memory", "session": "s1", "project": "p"})
	// The same id in two profiles is two memories.
	b.create(b.bob, map[string]any{"id": "a2", "content": "bob's own a2"})

	noLeak := func(where string, ids []string) {
		t.Helper()
		for _, id := range ids {
			if id != "a2" && slices.Contains(aliceIDs, id) {
				t.Errorf("%s: bob sees alice's %s", where, id)
			}
		}
	}
	t.Run("GetPatchDelete404", func(t *testing.T) {
		missing := b.must(404, "GET", "/v1/memories/does-not-exist", b.bob, nil, nil).errMsg(t)
		for _, id := range aliceIDs[:2] {
			for _, c := range []struct {
				method string
				body   any
			}{{"GET", nil}, {"PATCH", map[string]any{"content": "hijacked"}}, {"DELETE", nil}} {
				r := b.must(404, c.method, "/v1/memories/"+id, b.bob, c.body, nil)
				if got := strings.Replace(r.errMsg(t), id, "does-not-exist", 1); got != missing {
					t.Errorf("%s %s: message %q differs from a missing id's %q", c.method, id, got, missing)
				}
			}
		}
		var m mnemo.Memory
		b.must(200, "GET", "/v1/memories/a2", b.bob, nil, &m)
		if m.Content != "bob's own a2" {
			t.Errorf("bob's a2 = %q", m.Content)
		}
		for _, id := range aliceIDs {
			b.must(200, "GET", "/v1/memories/"+id, b.alice, nil, &m)
			if strings.Contains(m.Content, "hijacked") || m.Profile != "alice" {
				t.Errorf("alice's %s changed: %+v", id, m)
			}
		}
	})
	t.Run("List", func(t *testing.T) {
		var lr struct{ Memories []mnemo.Memory }
		b.must(200, "GET", "/v1/memories?limit=1000", b.bob, nil, &lr)
		var ids []string
		for _, m := range lr.Memories {
			ids = append(ids, m.ID)
			if m.Profile != "bob" {
				t.Errorf("bob's list holds a memory of %s", m.Profile)
			}
		}
		noLeak("list", ids)
		if len(ids) != 2 {
			t.Errorf("bob lists %v", ids)
		}
	})
	t.Run("RecallEveryLeg", func(t *testing.T) {
		var rec recallOut
		b.must(200, "POST", "/v1/recall", b.bob, map[string]any{"query": "Threadline auth secret alice", "trace": true, "limit": 50, "min_relevance": 0,
			"weights": map[string]float64{"lexical": 1, "dense": 1, "recency": 1, "access": 1}}, &rec)
		noLeak("recall", resultIDs(rec.Results))
		if rec.Trace == nil || len(rec.Trace.Legs) < 2 {
			t.Fatalf("trace = %+v", rec.Trace)
		}
		for leg, hits := range rec.Trace.Legs {
			for _, h := range hits {
				noLeak("trace leg "+leg, []string{h.ID})
			}
		}
		if !slices.Contains(resultIDs(rec.Results), bobID) {
			t.Errorf("bob's own memory not recalled: %v", resultIDs(rec.Results))
		}
	})
	t.Run("SearchLegs", func(t *testing.T) {
		for _, leg := range []string{"lexical", "dense"} {
			var sr struct{ Results []result }
			b.must(200, "GET", "/v1/search/"+leg+"?q=Threadline+auth+secret+alice&limit=50", b.bob, nil, &sr)
			noLeak("search "+leg, resultIDs(sr.Results))
			if len(sr.Results) == 0 {
				t.Errorf("search %s found nothing of bob's", leg)
			}
		}
	})
	t.Run("Settings", func(t *testing.T) {
		var before, after map[string]any
		b.must(200, "GET", "/v1/settings", b.alice, nil, &before)
		b.must(200, "PATCH", "/v1/settings", b.bob, map[string]any{"keyword_weight": 0, "strategy": "dbsf"}, nil)
		b.must(200, "GET", "/v1/settings", b.alice, nil, &after)
		if fmt.Sprint(before) != fmt.Sprint(after) {
			t.Errorf("bob's PATCH changed alice's settings: %v → %v", before, after)
		}
		var bobs map[string]any
		b.must(200, "GET", "/v1/settings", b.bob, nil, &bobs)
		if bobs["keyword_weight"] != 0.0 || bobs["strategy"] != "dbsf" {
			t.Errorf("bob's settings = %v", bobs)
		}
	})
	t.Run("NamingAliceRefused", func(t *testing.T) {
		// A profile key naming another profile, or a service key naming
		// alice while its header names bob: 400.
		const want = 400
		r := b.must(want, "POST", "/v1/memories", b.bob, map[string]any{"content": "x", "profile": "alice"}, nil)
		if msg := r.errMsg(t); !strings.Contains(msg, "alice") {
			t.Errorf("message %q does not name the profile", msg)
		}
		b.must(want, "POST", "/v1/memories", b.bob, map[string]any{"memories": []map[string]any{{"content": "x", "profile": "alice"}}}, nil)
		b.must(want, "POST", "/v1/recall", b.bob, map[string]any{"query": "x", "profile": "alice"}, nil)
		b.must(want, "PATCH", "/v1/memories/"+aliceIDs[0], b.bob, map[string]any{"profile": "alice", "content": "hijacked"}, nil)
		b.must(want, "PATCH", "/v1/settings", b.bob, map[string]any{"profile": "alice", "keyword_weight": 0}, nil)
		for _, path := range []string{"/v1/memories?profile=alice", "/v1/search/lexical?q=x&profile=alice", "/v1/settings?profile=alice",
			"/v1/memories/" + aliceIDs[0] + "?profile=alice"} {
			b.must(want, "GET", path, b.bob, nil, nil)
		}
		b.must(want, "DELETE", "/v1/profile?profile=alice", b.bob, nil, nil)
		b.must(want, "DELETE", "/v1/memories?profile=alice&session=s1", b.bob, nil, nil)
		if mode != "ProfileKey" {
			// Without the header that names bob: a key for bob alone is
			// refused alice (403), a key for any profile is not.
			h := header("X-Mnemo-Profile", "alice")
			if mode == "ServiceKeyForBob" {
				for _, c := range []struct{ method, path string }{{"GET", "/v1/memories"}, {"GET", "/v1/memories/" + aliceIDs[0]},
					{"GET", "/v1/settings"}, {"DELETE", "/v1/profile"}, {"GET", "/v1/search/dense?q=x"}} {
					if r := b.doWith(c.method, c.path, b.bob, nil, h); r.status != 403 {
						t.Errorf("%s %s naming alice: %d %s, want 403", c.method, c.path, r.status, r.body)
					}
				}
			}
		}
		if n, _ := b.e.Count(t.Context(), "alice"); n != 3 {
			t.Errorf("alice holds %d memories, want 3", n)
		}
		if m, err := b.e.Get(t.Context(), "alice", aliceIDs[0]); err != nil || strings.Contains(m.Content, "hijacked") {
			t.Errorf("alice's memory after the attempts: %+v, %v", m, err)
		}
	})
}

func TestServe_Search(t *testing.T) {
	b := setup(t, opts{})
	ids := map[string]string{}
	for _, m := range []struct{ session, content string }{
		// groceries in a session of its own: after the JWT fix in session
		// 1, it would be found by "auth" through its context field.
		{"1", "JWT auth fix deployed"}, {"2", "auth tokens rotate weekly"}, {"3", "auth for the staging cluster"}, {"4", "groceries"},
	} {
		ids[m.content] = b.create(b.alice, map[string]any{"content": m.content, "session": m.session, "importance": 1})
	}
	type searchOut struct {
		Leg     string
		Results []result
		Skipped string
	}
	var sr searchOut
	search := func(path string) {
		t.Helper()
		sr = searchOut{}
		b.must(200, "GET", path, b.alice, nil, &sr)
	}
	search("/v1/search/lexical?q=auth&sessions=1,2")
	if sr.Leg != "lexical" || len(sr.Results) != 2 {
		t.Fatalf("lexical search = %+v", sr)
	}
	for i, r := range sr.Results {
		if r.Session == "3" || len(r.Legs) != 1 || r.Legs["lexical"].Rank < 1 || (i > 0 && r.Legs["lexical"].Rank < sr.Results[i-1].Legs["lexical"].Rank) {
			t.Errorf("result %d = %+v: want only the lexical leg, in its order, sessions 1 and 2", i, r)
		}
	}
	// the parameter name works too.
	search("/v1/search/lexical?q=auth&sessionIds=3")
	if len(sr.Results) != 1 || sr.Results[0].ID != ids["auth for the staging cluster"] {
		t.Errorf("sessionIds=3: %v", resultIDs(sr.Results))
	}
	// The lexical leg runs even when the profile turned it off.
	b.must(200, "PATCH", "/v1/settings", b.alice, map[string]any{"keyword_weight": 0}, nil)
	search("/v1/search/lexical?q=groceries")
	if len(sr.Results) != 1 || sr.Results[0].ID != ids["groceries"] {
		t.Errorf("lexical search with keyword_weight 0: %v", sr)
	}
	search("/v1/search/dense?q=groceries&limit=2")
	if sr.Leg != "dense" || len(sr.Results) != 2 || sr.Results[0].ID != ids["groceries"] {
		t.Fatalf("dense search = %+v", sr)
	}
	for _, r := range sr.Results {
		if _, ok := r.Legs["dense"]; !ok || len(r.Legs) != 1 {
			t.Errorf("dense result legs = %v", r.Legs)
		}
	}
	search("/v1/search/lexical?q=%21%21%21")
	if len(sr.Results) != 0 || sr.Skipped == "" {
		t.Errorf("a query without words: %+v", sr)
	}
	for _, bad := range []string{"?q=", "?q=x&limit=0", "?q=x&limit=1001", "?q=x&limit=ten", "?q=x&kinds=dream", "?q=x&sesions=1"} {
		b.must(400, "GET", "/v1/search/lexical"+bad, b.alice, nil, nil)
	}
}

func TestServe_Recall(t *testing.T) {
	b := setup(t, opts{})
	a := b.create(b.alice, map[string]any{"content": "Deployed Threadline v2.3 with the JWT auth fix", "session": "s1", "kind": "semantic"})
	c := b.create(b.alice, map[string]any{"content": "Threadline onboarding checklist", "session": "s2"})
	var rec recallOut
	// The checklist holds one of the two words: below the default floor.
	b.must(200, "POST", "/v1/recall", b.alice, map[string]any{"query": "Threadline JWT"}, &rec)
	if len(rec.Results) != 1 || rec.Results[0].ID != a || rec.Trace != nil || rec.Results[0].Relevance < mnemo.DefaultMinRelevance {
		t.Fatalf("recall = %+v", rec)
	}
	b.must(200, "POST", "/v1/recall", b.alice, map[string]any{"query": "Threadline JWT", "min_relevance": 0}, &rec)
	if len(rec.Results) != 2 || rec.Results[0].ID != a || rec.Results[1].Relevance >= rec.Results[0].Relevance {
		t.Fatalf("recall with min_relevance 0 = %+v", rec)
	}
	var none recallOut
	b.must(200, "POST", "/v1/recall", b.alice, map[string]any{"query": "zorblat quindle"}, &none)
	if len(none.Results) != 0 {
		t.Errorf("a nonsense query recalled %+v", none.Results)
	}
	if l := rec.Results[0].Legs["lexical"]; l.Rank != 1 || l.Score <= 0 {
		t.Errorf("lexical leg detail = %+v", l)
	}
	if _, ok := rec.Results[0].Legs["dense"]; !ok {
		t.Errorf("no dense leg detail: %+v", rec.Results[0].Legs)
	}
	b.must(200, "POST", "/v1/recall", b.alice, map[string]any{"query": "Threadline", "sessions": []string{"s2"}, "trace": true,
		"strategy": "weighted_average", "k": 10, "weights": map[string]float64{"dense": 0}}, &rec)
	if len(rec.Results) != 1 || rec.Results[0].ID != c || rec.Trace == nil || rec.Trace.Strategy != "weighted_average" ||
		rec.Trace.Skipped["dense"] == "" || rec.Trace.Timings["total"] <= 0 {
		t.Errorf("scoped recall with overrides = %+v %+v", rec.Results, rec.Trace)
	}
	b.must(200, "POST", "/v1/recall", b.alice, map[string]any{"query": "Threadline", "kinds": []string{"semantic"}, "exclude": []string{c}}, &rec)
	if len(rec.Results) != 1 || rec.Results[0].ID != a {
		t.Errorf("kinds+exclude = %v", resultIDs(rec.Results))
	}
	b.must(200, "POST", "/v1/recall", b.alice, map[string]any{"query": "Threadline", "settings": map[string]any{"keyword_weight": 0, "importance_mode": "off"},
		"trace": true}, &rec)
	if rec.Trace.Skipped["lexical"] == "" {
		t.Errorf("settings override ignored: %+v", rec.Trace)
	}
	for name, body := range map[string]any{
		"NoQuery":        map[string]any{},
		"BlankQuery":     map[string]any{"query": "  "},
		"LimitHigh":      map[string]any{"query": "x", "limit": 1001},
		"LimitNegative":  map[string]any{"query": "x", "limit": -1},
		"BadStrategy":    map[string]any{"query": "x", "strategy": "best"},
		"WeightHigh":     map[string]any{"query": "x", "weights": map[string]float64{"dense": 6}},
		"UnknownLeg":     map[string]any{"query": "x", "weights": map[string]float64{"graph": 1}},
		"BadK":           map[string]any{"query": "x", "k": 0},
		"BadKind":        map[string]any{"query": "x", "kinds": []string{"dream"}},
		"RelevanceHigh":  map[string]any{"query": "x", "min_relevance": 1.5},
		"RelevanceText":  map[string]any{"query": "x", "min_relevance": "high"},
		"AutocutHigh":    map[string]any{"query": "x", "autocut": 11},
		"AutocutNeg":     map[string]any{"query": "x", "autocut": -1},
		"UnknownField":   map[string]any{"query": "x", "topK": 3},
		"BadSetting":     map[string]any{"query": "x", "settings": map[string]any{"rrf_k": "sixty"}},
		"UnknownSetting": map[string]any{"query": "x", "settings": map[string]any{"nope": 1}},
	} {
		r := b.do("POST", "/v1/recall", b.alice, body)
		if r.status != 400 {
			t.Errorf("%s: status %d: %s", name, r.status, r.body)
		}
	}
}

// settingCase is one PATCH /v1/settings case.
type settingCase struct {
	name  string
	body  string
	ok    bool
	field string // named in the 400 message
	rng   string // the range named in the 400 message
}

func rangeCases(field string, lo, hi, below, above string, integer bool) []settingCase {
	kind := "number"
	if integer {
		kind = "integer"
	}
	rng := fmt.Sprintf("[%s, %s]", lo, hi)
	body := func(v string) string { return fmt.Sprintf(`{%q: %s}`, field, v) }
	cs := []settingCase{
		{field + "/Below", body(below), false, field, rng},
		{field + "/AtLow", body(lo), true, "", ""},
		{field + "/AtHigh", body(hi), true, "", ""},
		{field + "/Above", body(above), false, field, rng},
		{field + "/String", body(`"abc"`), false, field, rng},
		{field + "/NumericString", body(`"` + lo + `"`), false, field, rng},
		{field + "/Bool", body(`true`), false, field, rng},
		{field + "/Null", body(`null`), true, "", ""}, // a reset to the default
		{field + "/Object", body(`{}`), false, field, kind},
	}
	if integer {
		cs = append(cs, settingCase{field + "/Fraction", body(lo + ".5"), false, field, rng})
	}
	return cs
}

func enumCases(field, good, bad string) []settingCase {
	body := func(v string) string { return fmt.Sprintf(`{%q: %s}`, field, v) }
	return []settingCase{
		{field + "/Valid", body(`"` + good + `"`), true, "", ""},
		{field + "/Invalid", body(`"` + bad + `"`), false, field, "must be one of"},
		{field + "/Number", body(`5`), false, field, "must be one of"},
		{field + "/Bool", body(`false`), false, field, "must be one of"},
	}
}

func TestServe_SettingsValidation(t *testing.T) {
	b := setup(t, opts{})
	var cases []settingCase
	for _, w := range []string{"keyword_weight", "semantic_weight", "recency_weight", "access_weight"} {
		cases = append(cases, rangeCases(w, "0", "5", "-0.001", "5.001", false)...)
	}
	cases = append(cases, rangeCases("rrf_k", "1", "1000", "0.5", "1000.5", false)...)
	cases = append(cases, rangeCases("fetch_multiplier", "1", "20", "0", "21", true)...)
	cases = append(cases, rangeCases("lexical_cap", "1", "10000", "0", "10001", true)...)
	cases = append(cases, rangeCases("pool_size", "1", "100000", "0", "100001", true)...)
	cases = append(cases, enumCases("strategy", "dbsf", "best")...)
	cases = append(cases, settingCase{"strategy/Empty", `{"strategy": ""}`, false, "strategy", ""})
	cases = append(cases, enumCases("importance_mode", "boost", "always")...)
	cases = append(cases, enumCases("candidate_policy", "pool", "everything")...)
	// Settings added with the fusion strategies; each runs only if this
	// engine knows it.
	body := func(k, v string) string { return fmt.Sprintf(`{%q: %s}`, k, v) }
	for _, f := range []string{"k_param", "borda_k"} {
		cases = append(cases,
			settingCase{f + "/Below", body(f, "0"), false, f, "(0, 1000]"},
			settingCase{f + "/AtLow", body(f, "0.001"), true, "", ""},
			settingCase{f + "/AtHigh", body(f, "1000"), true, "", ""},
			settingCase{f + "/Above", body(f, "1000.5"), false, f, "1000]"}, // the engine says [0, 1000] here
			settingCase{f + "/String", body(f, `"5"`), false, f, "number"},
		)
	}
	cases = append(cases, rangeCases("high_confidence_threshold", "-1", "1", "-1.01", "1.01", false)...)
	cases = append(cases, rangeCases("exact_match_bonus", "0", "1", "-0.01", "1.01", false)...)
	cases = append(cases, enumCases("normalization", "zscore", "l2")...)
	cases = append(cases, enumCases("missing_leg", "renormalize", "worst")...)
	for _, f := range []string{"high_confidence", "adaptive_weights"} {
		cases = append(cases,
			settingCase{f + "/True", body(f, "true"), true, "", ""},
			settingCase{f + "/False", body(f, "false"), true, "", ""},
			settingCase{f + "/String", body(f, `"true"`), false, f, "true or false"},
			settingCase{f + "/Number", body(f, "1"), false, f, "true or false"},
		)
	}
	cases = append(cases,
		settingCase{"Unknown", `{"keywordWieght": 1}`, false, "keywordWieght", "known settings"},
		settingCase{"Empty", `{}`, false, "", "no settings"},
		settingCase{"Array", `[1]`, false, "", "offset"},
		settingCase{"Malformed", `{"keyword_weight": }`, false, "", "offset"},
		settingCase{"OneBadOfTwo", `{"keyword_weight": 2, "semantic_weight": 9}`, false, "semantic_weight", "[0, 5]"},
		settingCase{"CaseInsensitive", `{"KEYWORDWEIGHT": 2}`, true, "", ""},
		settingCase{"Several", `{"semantic_weight": 0.5, "keyword_weight": 2.0}`, true, "", ""},
	)
	// Every setting the engine knows gets a wrong-type case, including
	// those added after this test was written.
	var cur map[string]any
	b.must(200, "GET", "/v1/settings", b.alice, nil, &cur)
	for _, name := range mnemo.SettingNames() {
		v, ok := cur[name]
		if !ok {
			t.Errorf("GET /v1/settings lacks %s", name)
			continue
		}
		wrong := `"x"`
		if _, isString := v.(string); isString {
			wrong = `[]`
		}
		cases = append(cases, settingCase{name + "/WrongType", fmt.Sprintf(`{%q: %s}`, name, wrong), false, name, ""})
	}

	known := map[string]bool{}
	for _, n := range mnemo.SettingNames() {
		known[n] = true
	}
	for _, c := range cases {
		if field, _, _ := strings.Cut(c.name, "/"); strings.Contains(c.name, "/") && !known[field] {
			continue // a setting this engine does not have (yet)
		}
		t.Run(c.name, func(t *testing.T) {
			var before, after map[string]any
			b.must(200, "GET", "/v1/settings", b.alice, nil, &before)
			r := b.do("PATCH", "/v1/settings", b.alice, c.body)
			b.must(200, "GET", "/v1/settings", b.alice, nil, &after)
			if c.ok {
				if r.status != 200 {
					t.Fatalf("status %d: %s", r.status, r.body)
				}
				var got map[string]any
				r.json(t, &got)
				if fmt.Sprint(got) != fmt.Sprint(after) {
					t.Errorf("PATCH answered %v, GET then says %v", got, after)
				}
				return
			}
			if r.status != 400 {
				t.Fatalf("status %d, want 400: %s", r.status, r.body)
			}
			msg := r.errMsg(t)
			if !strings.Contains(msg, c.field) || !strings.Contains(msg, c.rng) {
				t.Errorf("message %q should name %q and %q", msg, c.field, c.rng)
			}
			if fmt.Sprint(before) != fmt.Sprint(after) {
				t.Errorf("a rejected PATCH changed the settings: %v → %v", before, after)
			}
		})
	}
}

func TestServe_LiveSettings(t *testing.T) {
	b := setup(t, opts{})
	b.create(b.alice, map[string]any{"content": "Threadline JWT auth fix"})
	trace := func() recallOut {
		var rec recallOut
		b.must(200, "POST", "/v1/recall", b.alice, map[string]any{"query": "Threadline", "trace": true}, &rec)
		return rec
	}
	if rec := trace(); rec.Trace.Skipped["lexical"] != "" || rec.Trace.Strategy != mnemo.DefaultSettings().Strategy {
		t.Fatalf("default trace = %+v", rec.Trace)
	}
	// the examples.
	b.must(200, "PATCH", "/v1/settings", b.alice, `{"keyword_weight": 0}`, nil)
	if rec := trace(); rec.Trace.Skipped["lexical"] == "" {
		t.Errorf("keyword_weight 0 not in force on the next request: %+v", rec.Trace)
	}
	b.must(200, "PATCH", "/v1/settings", b.alice, `{"semantic_weight": 0.5, "keyword_weight": 2.0, "strategy": "score_weighted_rrf"}`, nil)
	if rec := trace(); rec.Trace.Skipped["lexical"] != "" || rec.Trace.Strategy != "score_weighted_rrf" {
		t.Errorf("second PATCH not in force: %+v", rec.Trace)
	}
	// Persisted: another engine on the same file sees them.
	e2, err := mnemo.Open(b.path, &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	s, err := e2.Settings(t.Context(), "alice")
	if err != nil || s.KeywordWeight != 2 || s.SemanticWeight != 0.5 || s.Strategy != "score_weighted_rrf" {
		t.Errorf("settings after reopening = %+v, %v", s, err)
	}
}

func TestServe_RequestErrors(t *testing.T) {
	b := setup(t, opts{cfg: func(c *httpapi.Config) { c.MaxBodyBytes, c.MaxRecallBodyBytes = 1024, 1536 }})
	id := b.create(b.alice, map[string]any{"content": "x"})

	t.Run("413", func(t *testing.T) {
		big := fmt.Sprintf(`{"content": %q}`, strings.Repeat("x", 2000))
		for _, c := range []struct{ method, path string }{{"POST", "/v1/memories"}, {"PATCH", "/v1/memories/" + id},
			{"POST", "/v1/recall"}, {"PATCH", "/v1/settings"}} {
			r := b.do(c.method, c.path, b.alice, big)
			limit := "1024"
			if c.path == "/v1/recall" {
				limit = "1536" // room for long id lists
			}
			if r.status != 413 || !strings.Contains(r.errMsg(t), limit) {
				t.Errorf("%s %s with 2 KB: status %d %s", c.method, c.path, r.status, r.body)
			}
		}
		if n, _ := b.e.Count(t.Context(), "alice"); n != 1 {
			t.Errorf("an oversize body was stored: %d memories", n)
		}
	})
	t.Run("400", func(t *testing.T) {
		for _, c := range []struct {
			name, body, want string
		}{
			{"Syntax", `{"content": "x",}`, "offset 17"},
			{"Truncated", `{"content": "x"`, "offset 15"},
			{"Empty", ``, "empty"},
			{"WrongType", `{"content": 5}`, "content must be a string"},
			{"UnknownField", `{"content": "x", "colour": "red"}`, `unknown field "colour"`},
			{"Trailing", `{"content": "x"} {"content": "y"}`, "after the JSON value"},
			{"NotObject", `"x"`, "offset"},
			{"BothShapes", `{"content": "x", "memories": [{"content": "y"}]}`, "either one memory"},
			{"EmptyBatch", `{"memories": []}`, "memories is empty"},
			{"BatchItemInvalid", `{"memories": [{"content": "ok"}, {"content": ""}]}`, "memories[1]: content is empty"},
			{"BadImportance", `{"content": "x", "importance": 2}`, "importance"},
			{"BadKind", `{"content": "x", "kind": "dream"}`, "kind"},
			{"BadTime", `{"content": "x", "created_at": "yesterday"}`, `created_at = "yesterday": must be an RFC 3339 time`},
			{"BadTimeInBatch", `{"memories": [{"content": "x"}, {"content": "y", "occurred_at": "May 2023"}]}`, `memories[1].occurred_at = "May 2023"`},
			{"ImportanceNotNumber", `{"content": "x", "importance": "high"}`, "offset 37: importance must be a number, not string"},
			{"BatchImportanceNotNumber", `{"memories": [{"content": "x", "importance": "high"}]}`, "memories[0].importance must be a number"},
		} {
			r := b.do("POST", "/v1/memories", b.alice, c.body)
			if r.status != 400 || !strings.Contains(r.errMsg(t), c.want) {
				t.Errorf("%s: status %d %s; want 400 mentioning %q", c.name, r.status, r.body, c.want)
			}
		}
		if n, _ := b.e.Count(t.Context(), "alice"); n != 1 {
			t.Errorf("rejected bodies stored memories: %d", n)
		}
		for _, body := range []string{`{}`, `{"content": ""}`, `{"kind": "dream"}`, `{"importance": -1}`, `{"metadata": [1]}`, `{"id": "new"}`} {
			if r := b.do("PATCH", "/v1/memories/"+id, b.alice, body); r.status != 400 {
				t.Errorf("PATCH %s: status %d %s", body, r.status, r.body)
			}
		}
		for _, q := range []string{"limit=0", "limit=1001", "limit=x", "cursor=bogus", "sesion=s1"} {
			if r := b.do("GET", "/v1/memories?"+q, b.alice, nil); r.status != 400 {
				t.Errorf("GET /v1/memories?%s: status %d", q, r.status)
			}
		}
	})
	t.Run("415", func(t *testing.T) {
		req, _ := http.NewRequest("POST", b.ts.URL+"/v1/memories", strings.NewReader(`{"content": "x"}`))
		req.Header.Set("Content-Type", "text/plain")
		req.Header.Set("Authorization", "Bearer "+b.alice)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 415 {
			t.Errorf("text/plain body: status %d", res.StatusCode)
		}
	})
	t.Run("401", func(t *testing.T) {
		_, revoked, err := b.e.CreateKey(t.Context(), "alice", "old")
		if err != nil {
			t.Fatal(err)
		}
		tok, _, _ := b.e.CreateKey(t.Context(), "alice", "to revoke")
		k, _ := b.e.Authenticate(t.Context(), tok)
		if err := b.e.RevokeKey(t.Context(), k.ID); err != nil {
			t.Fatal(err)
		}
		_ = revoked
		for name, hdr := range map[string]string{"None": "", "Unknown": "Bearer mnemo_nope", "Revoked": "Bearer " + tok,
			"Basic": "Basic YTpi", "NoToken": "Bearer ", "HashInstead": "Bearer " + k.Hash} {
			for _, c := range []struct{ method, path string }{{"GET", "/v1/memories/" + id}, {"GET", "/v1/memories"},
				{"POST", "/v1/recall"}, {"GET", "/v1/settings"}, {"GET", "/v1/search/lexical?q=x"}, {"POST", "/mcp"}} {
				req, _ := http.NewRequest(c.method, b.ts.URL+c.path, strings.NewReader(`{"query":"x"}`))
				req.Header.Set("Content-Type", "application/json")
				if hdr != "" {
					req.Header.Set("Authorization", hdr)
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if res.StatusCode != 401 || !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") {
					t.Errorf("%s: %s %s: status %d %s", name, c.method, c.path, res.StatusCode, body)
				}
			}
		}
		// Health and the API description need no key; metrics need an
		// admin key (TestServe_MetricsNeedAnAdminKey).
		for _, p := range []string{"/healthz", "/readyz", "/openapi.json"} {
			b.must(200, "GET", p, "", nil, nil)
		}
	})
	t.Run("404And405", func(t *testing.T) {
		b.must(404, "GET", "/v1/memories/nope", b.alice, nil, nil)
		r := b.must(404, "GET", "/v2/everything", b.alice, nil, nil)
		if !strings.Contains(r.errMsg(t), "no route") {
			t.Errorf("unknown route: %s", r.body)
		}
		if r := b.do("PUT", "/v1/memories/"+id, b.alice, `{}`); r.status != 405 {
			t.Errorf("PUT: status %d", r.status)
		}
	})
	t.Run("Timeout", func(t *testing.T) {
		slow := setup(t, opts{cfg: func(c *httpapi.Config) { c.HandlerTimeout = time.Nanosecond }})
		r := slow.do("POST", "/v1/recall", slow.alice, map[string]any{"query": "x"})
		if r.status != 503 || !strings.Contains(string(r.body), "timeout") {
			t.Errorf("status %d %s", r.status, r.body)
		}
	})
	t.Run("CrossSite", func(t *testing.T) {
		req, _ := http.NewRequest("POST", b.ts.URL+"/v1/memories", strings.NewReader(`{"content": "csrf"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+b.alice)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 403 {
			t.Errorf("cross-site POST: status %d", res.StatusCode)
		}
	})
}

func TestServe_SingleUserMode(t *testing.T) {
	b := setup(t, opts{singleUser: true, cfg: func(c *httpapi.Config) { c.Profile = "me" }})
	id := b.create("", map[string]any{"content": "single user memory"})
	if m, err := b.e.Get(t.Context(), "me", id); err != nil || m.Profile != "me" {
		t.Fatalf("memory stored as %+v, %v", m, err)
	}
	// DNS rebinding: a foreign Host header is refused.
	req, _ := http.NewRequest("GET", b.ts.URL+"/v1/memories/"+id, nil)
	req.Host = "evil.example:7077"
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Errorf("foreign Host: status %d", res.StatusCode)
	}
	req.Host = "localhost:7077"
	if res, err = http.DefaultClient.Do(req); err != nil || res.StatusCode != 200 {
		t.Errorf("Host localhost: %v %v", res.StatusCode, err)
	}
	res.Body.Close()

	// Once a key exists, keys are required.
	tok, _, err := b.e.CreateKey(t.Context(), "me", "")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := b.do("GET", "/v1/memories/"+id, "", nil)
		if r.status == 401 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("still served without a key after creating one: %d", r.status)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.must(200, "GET", "/v1/memories/"+id, tok, nil, nil)

	// RequireKeys with no key at all: nothing is served.
	t.Run("RequireKeys", func(t *testing.T) {
		strict := setup(t, opts{singleUser: true, cfg: func(c *httpapi.Config) { c.RequireKeys = true }})
		strict.must(401, "GET", "/v1/settings", "", nil, nil)
	})
}

var metricLine = regexp.MustCompile(`^(mnemo_[a-z_]+)(\{.*\})? ([0-9.eE+-]+|\+Inf|NaN)$`)

func TestServe_Metrics(t *testing.T) {
	b := setup(t, opts{})
	b.create(b.alice, map[string]any{"content": "Threadline JWT auth fix"})
	b.create(b.bob, map[string]any{"content": "bob"})
	b.must(200, "POST", "/v1/recall", b.alice, map[string]any{"query": "Threadline auth"}, nil)
	b.must(200, "GET", "/v1/search/lexical?q=Threadline", b.alice, nil, nil)
	b.must(404, "GET", "/v1/memories/nope", b.alice, nil, nil)
	admin, _, err := b.e.CreateAdminKey(t.Context(), "metrics")
	if err != nil {
		t.Fatal(err)
	}
	r := b.must(200, "GET", "/metrics", admin, nil, nil)
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("Content-Type %q", ct)
	}
	text := string(r.body)
	for _, want := range []string{
		`mnemo_http_requests_total{route="POST /v1/memories",method="POST",code="201"} 2`,
		`mnemo_http_requests_total{route="GET /v1/memories/{id}",method="GET",code="404"} 1`,
		`mnemo_http_request_duration_seconds_count{route="POST /v1/recall"} 1`,
		`mnemo_http_request_duration_seconds_bucket{route="POST /v1/recall",le="+Inf"} 1`,
		`mnemo_recalls_total{endpoint="recall"} 1`,
		`mnemo_recalls_total{endpoint="search_lexical"} 1`,
		`mnemo_recall_stage_duration_seconds_count{stage="total"} 2`,
		`mnemo_recall_stage_duration_seconds_count{stage="lexical"} 2`,
		`mnemo_recall_stage_duration_seconds_count{stage="embed"} 1`,
		`mnemo_recall_leg_hits_total{leg="lexical"} 2`,
		`mnemo_recall_leg_results_total{leg="dense"} 1`,
		`mnemo_memories_written_total 2`,
		"\nmnemo_memories 2\n",
		"\nmnemo_api_keys 3\n",
		"\nmnemo_ready 1\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	typed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if strings.HasPrefix(line, "# TYPE ") {
			typed[strings.Fields(line)[2]] = true
			continue
		}
		if strings.HasPrefix(line, "# HELP ") {
			continue
		}
		m := metricLine.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("not a Prometheus sample line: %q", line)
			continue
		}
		base := regexp.MustCompile(`_(bucket|sum|count)$`).ReplaceAllString(m[1], "")
		if !typed[m[1]] && !typed[base] {
			t.Errorf("sample %s has no # TYPE before it", m[1])
		}
	}
	b.srv.Drain()
	b.must(503, "GET", "/readyz", "", nil, nil)
	if r := b.must(200, "GET", "/metrics", admin, nil, nil); !strings.Contains(string(r.body), "\nmnemo_ready 0\n") {
		t.Error("mnemo_ready stays 1 while draining")
	}
}

func TestServe_OpenAPI(t *testing.T) {
	b := setup(t, opts{})
	var spec struct {
		OpenAPI string `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage
	}
	b.must(200, "GET", "/openapi.json", "", nil, &spec)
	if !strings.HasPrefix(spec.OpenAPI, "3.") {
		t.Errorf("openapi = %q", spec.OpenAPI)
	}
	documented := map[string]bool{}
	for path, ops := range spec.Paths {
		for method := range ops {
			switch method {
			case "get", "post", "patch", "put", "delete":
				documented[strings.ToUpper(method)+" "+path] = true
			}
		}
	}
	served := map[string]bool{}
	for _, rt := range b.srv.Routes() {
		served[rt] = true
		if !documented[rt] {
			t.Errorf("route %s is not in openapi.json", rt)
		}
	}
	for op := range documented {
		if !served[op] {
			t.Errorf("openapi.json documents %s, which is not served", op)
		}
	}
	// Each documented operation answers something other than 404/405.
	for op := range documented {
		method, path, _ := strings.Cut(op, " ")
		if strings.HasPrefix(path, "/mcp") {
			continue
		}
		path = strings.ReplaceAll(path, "{id}", "x")
		r := b.do(method, path+"?", b.alice, nil)
		if r.status == 405 || (r.status == 404 && !strings.Contains(path, "/x")) {
			t.Errorf("%s answers %d", op, r.status)
		}
	}
}

// bearer adds an API key to every request.
type bearer struct {
	key  string
	base http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.base.RoundTrip(r)
}

func (b *bundle) mcpClient(key string) *mcp.ClientSession {
	b.t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(b.t.Context(), &mcp.StreamableClientTransport{Endpoint: b.ts.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{key: key, base: http.DefaultTransport}}}, nil)
	if err != nil {
		b.t.Fatalf("MCP connect: %v", err)
	}
	b.t.Cleanup(func() { cs.Close() })
	return cs
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if out != nil && !res.IsError {
		js, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(js, out); err != nil {
			t.Fatal(err)
		}
	}
	return res
}

func TestServe_MCPStreamableHTTP(t *testing.T) {
	b := setup(t, opts{})
	alice, bob := b.mcpClient(b.alice), b.mcpClient(b.bob)
	var st mcpserver.StoreOutput
	if res := callTool(t, alice, mcpserver.ToolStore, map[string]any{"content": "Threadline JWT auth fix, alice only", "session": "s1"}, &st); res.IsError {
		t.Fatalf("memory_store: %+v", res.Content)
	}
	// Stored in alice's profile, visible through the HTTP API with her key.
	var m mnemo.Memory
	b.must(200, "GET", "/v1/memories/"+st.ID, b.alice, nil, &m)
	if m.Profile != "alice" || m.Session != "s1" {
		t.Errorf("stored as %+v", m)
	}
	b.must(404, "GET", "/v1/memories/"+st.ID, b.bob, nil, nil)

	var rc mcpserver.RecallOutput
	callTool(t, alice, mcpserver.ToolRecall, map[string]any{"query": "Threadline JWT"}, &rc)
	if len(rc.Results) != 1 || rc.Results[0].ID != st.ID {
		t.Errorf("alice's recall = %+v", rc)
	}
	rc = mcpserver.RecallOutput{}
	callTool(t, bob, mcpserver.ToolRecall, map[string]any{"query": "Threadline JWT alice"}, &rc)
	if len(rc.Results) != 0 {
		t.Errorf("bob recalls alice's memories: %+v", rc)
	}
	if res := callTool(t, bob, mcpserver.ToolForget, map[string]any{"id": st.ID}, nil); !res.IsError {
		t.Error("bob forgot alice's memory")
	}
	b.must(200, "GET", "/v1/memories/"+st.ID, b.alice, nil, nil)

	// A session belongs to its key's profile: bob cannot ride alice's.
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	post := func(key, session, body string) *http.Response {
		req, _ := http.NewRequest("POST", b.ts.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+key)
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	res := post(b.alice, "", init)
	sid := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != 200 || sid == "" {
		t.Fatalf("initialize: %d, session %q", res.StatusCode, sid)
	}
	list := `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`
	if res := post(b.bob, sid, list); res.StatusCode != http.StatusForbidden {
		t.Errorf("bob on alice's session: status %d, want 403", res.StatusCode)
	}
}

func TestServe_MCPSingleUser(t *testing.T) {
	b := setup(t, opts{singleUser: true, cfg: func(c *httpapi.Config) { c.Profile = "me" }})
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: b.ts.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var st mcpserver.StoreOutput
	callTool(t, cs, mcpserver.ToolStore, map[string]any{"content": "single-user MCP memory"}, &st)
	if m, err := b.e.Get(t.Context(), "me", st.ID); err != nil || m.Content != "single-user MCP memory" {
		t.Errorf("stored %+v, %v", m, err)
	}
	// Single-user mode acts on the profile a call names, by its argument
	// or the connection's header.
	callTool(t, cs, mcpserver.ToolStore, map[string]any{"content": "for a tester", "profile": "tester"}, &st)
	if _, err := b.e.Get(t.Context(), "tester", st.ID); err != nil {
		t.Errorf("the profile argument: %v", err)
	}
	hc := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	hs, err := hc.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: b.ts.URL + "/mcp",
		HTTPClient: &http.Client{Transport: withHeader{"X-Mnemo-Profile", "other", http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	callTool(t, hs, mcpserver.ToolStore, map[string]any{"content": "for other"}, &st)
	if _, err := b.e.Get(t.Context(), "other", st.ID); err != nil {
		t.Errorf("the header: %v", err)
	}
	if res := callTool(t, hs, mcpserver.ToolStore, map[string]any{"content": "x", "profile": "me"}, nil); !res.IsError || !strings.Contains(textOf(res), "differs") {
		t.Errorf("argument me, header other: %v %q", res.IsError, textOf(res))
	}
}

// TestServe_TimesRoundTrip: created_at in any year 0001-9999 reads back as
// sent, to the nanosecond; a year outside is a 400 naming the field and
// stores nothing.
func TestServe_TimesRoundTrip(t *testing.T) {
	b := setup(t, opts{})
	for _, at := range []string{"3000-01-01T00:00:00Z", "0001-01-01T00:00:00.000000001Z", "9999-12-31T23:59:59.999999999Z", "1830-11-23T08:00:00.5Z"} {
		id := b.create(b.alice, map[string]any{"content": "a memory from " + at, "created_at": at})
		var got struct {
			CreatedAt string `json:"created_at"`
		}
		b.must(200, "GET", "/v1/memories/"+id, b.alice, nil, &got)
		if got.CreatedAt != at {
			t.Errorf("created_at %s read back as %s", at, got.CreatedAt)
		}
	}
	r := b.do("POST", "/v1/memories", b.alice, map[string]any{"content": "year zero", "created_at": "0000-06-01T00:00:00Z"})
	if r.status != 400 || !strings.Contains(r.errMsg(t), "created_at") {
		t.Errorf("year 0: status %d, %s; want 400 naming created_at", r.status, r.body)
	}
	var page struct{ Memories []struct{ ID string } }
	b.must(200, "GET", "/v1/memories?limit=100", b.alice, nil, &page)
	if len(page.Memories) != 4 {
		t.Errorf("%d memories stored, want 4", len(page.Memories))
	}
}

// TestServe_IDWithSlash: an id holding "/" (dataset ids such as
// conv-26/D1:3) is stored, and read, changed and deleted through its
// percent-encoded path segment.
func TestServe_IDWithSlash(t *testing.T) {
	b := setup(t, opts{})
	id := b.create(b.alice, map[string]any{"id": "conv-26/D1:3", "content": "a turn with a slashed id"})
	if id != "conv-26/D1:3" {
		t.Fatalf("created id %q", id)
	}
	var got struct{ ID, Content string }
	b.must(200, "GET", "/v1/memories/conv-26%2FD1:3", b.alice, nil, &got)
	if got.ID != id {
		t.Errorf("GET by the encoded id: %+v", got)
	}
	b.must(200, "PATCH", "/v1/memories/conv-26%2FD1:3", b.alice, map[string]any{"importance": 0.9}, nil)
	b.must(204, "DELETE", "/v1/memories/conv-26%2FD1:3", b.alice, nil, nil)
	b.must(404, "GET", "/v1/memories/conv-26%2FD1:3", b.alice, nil, nil)
	// Every id a POST accepts is reachable at its escaped path; those a
	// URL path would be cleaned into another are refused.
	for _, id := range []string{"a/b/c", "a b/ü", "a%2Fb", "a?b#c", "...", "a/.b", "a/..b"} {
		b.create(b.alice, map[string]any{"id": id, "content": "x"})
		b.must(200, "GET", "/v1/memories/"+url.PathEscape(id), b.alice, nil, nil)
	}
	for _, id := range []string{"/", "a/", "/a", "a//b", "a/./b", "a/../b", "./a", "a/.."} {
		if r := b.do("POST", "/v1/memories", b.alice, map[string]any{"id": id, "content": "x"}); r.status != 400 || !strings.Contains(r.errMsg(t), "between slashes") {
			t.Errorf("id %q: %d %s", id, r.status, r.body)
		}
	}
}

// TestServe_ConversationFields: actor, occurred_at and seq are stored by
// POST, changed by PATCH, returned by GET, list and recall, and filter
// recall and search (actors, after, before); bad values are a 400 naming
// the field with nothing written.
func TestServe_ConversationFields(t *testing.T) {
	b := setup(t, opts{})
	type turn struct {
		ID         string `json:"id"`
		Actor      string `json:"actor"`
		Seq        int64  `json:"seq"`
		OccurredAt string `json:"occurred_at"`
		CreatedAt  string `json:"created_at"`
	}
	var ids struct{ IDs []string }
	b.must(201, "POST", "/v1/memories", b.alice, map[string]any{"memories": []map[string]any{
		{"content": "I went to the support group yesterday", "session": "c1", "actor": "Caroline", "occurred_at": "2023-05-08T13:56:00Z"},
		{"content": "How was the support group?", "session": "c1", "actor": "Melanie", "occurred_at": "2023-05-08T13:57:00+02:00"},
		{"content": "The support group met again in June", "session": "c1", "actor": "Caroline", "occurred_at": "2023-06-09T10:00:00Z", "seq": 10},
	}}, &ids)
	var got turn
	b.must(200, "GET", "/v1/memories/"+ids.IDs[1], b.alice, nil, &got)
	if got.Actor != "Melanie" || got.Seq != 2 || got.OccurredAt != "2023-05-08T11:57:00Z" || got.CreatedAt == got.OccurredAt {
		t.Errorf("GET = %+v", got)
	}
	var page struct{ Memories []turn }
	b.must(200, "GET", "/v1/memories?session=c1", b.alice, nil, &page)
	if len(page.Memories) != 3 || page.Memories[2].Seq != 10 && page.Memories[0].Seq != 10 {
		t.Errorf("list = %+v", page.Memories)
	}
	recall := func(body map[string]any) []string {
		t.Helper()
		body["query"] = "support group"
		var rec recallOut
		b.must(200, "POST", "/v1/recall", b.alice, body, &rec)
		return resultIDs(rec.Results)
	}
	if r := recall(map[string]any{"actors": []string{"Caroline"}}); !sameIDs(r, ids.IDs[0], ids.IDs[2]) {
		t.Errorf("actors Caroline = %v", r)
	}
	if r := recall(map[string]any{"after": "2023-06-01T00:00:00Z"}); !sameIDs(r, ids.IDs[2]) {
		t.Errorf("after June = %v", r)
	}
	if r := recall(map[string]any{"before": "2023-05-08T12:00:00Z", "actors": []string{"Caroline", "Melanie"}}); !sameIDs(r, ids.IDs[1]) {
		t.Errorf("before 12:00 = %v", r)
	}
	var search struct{ Results []httpapi.RecallResult }
	b.must(200, "GET", "/v1/search/lexical?q=support&actors=Melanie&after=2023-05-01T00:00:00Z", b.alice, nil, &search)
	if len(search.Results) != 1 || search.Results[0].ID != ids.IDs[1] || search.Results[0].Actor != "Melanie" {
		t.Errorf("search by actor = %+v", search.Results)
	}
	b.must(200, "PATCH", "/v1/memories/"+ids.IDs[1], b.alice, map[string]any{"actor": "Mel", "occurred_at": "2024-01-01T00:00:00Z", "seq": 7}, &got)
	if got.Actor != "Mel" || got.Seq != 7 || got.OccurredAt != "2024-01-01T00:00:00Z" {
		t.Errorf("PATCH = %+v", got)
	}
	if r := recall(map[string]any{"actors": []string{"Mel"}, "after": "2023-12-31T00:00:00Z"}); !sameIDs(r, ids.IDs[1]) {
		t.Errorf("after the PATCH = %v", r)
	}
	for _, c := range []struct {
		name, method, path string
		body               map[string]any
		field              string
	}{
		{"LongActor", "POST", "/v1/memories", map[string]any{"content": "x", "actor": strings.Repeat("a", 257)}, "actor"},
		{"OccurredYear0", "POST", "/v1/memories", map[string]any{"content": "x", "occurred_at": "0000-01-01T00:00:00Z"}, "occurred_at"},
		{"OccurredNotATime", "POST", "/v1/memories", map[string]any{"content": "x", "occurred_at": "May 2023"}, "occurred_at"},
		{"NegativeSeq", "POST", "/v1/memories", map[string]any{"content": "x", "seq": -1}, "seq"},
		{"SeqNotANumber", "POST", "/v1/memories", map[string]any{"content": "x", "seq": "first"}, "seq"},
		{"PatchLongActor", "PATCH", "/v1/memories/" + ids.IDs[0], map[string]any{"actor": strings.Repeat("a", 257)}, "actor"},
		{"PatchOccurredYear10000", "PATCH", "/v1/memories/" + ids.IDs[0], map[string]any{"occurred_at": "+10000-01-01T00:00:00Z"}, "occurred_at"},
		{"RecallAfterNotATime", "POST", "/v1/recall", map[string]any{"query": "x", "after": "yesterday"}, "after"},
		{"RecallActorsNotAList", "POST", "/v1/recall", map[string]any{"query": "x", "actors": "Caroline"}, "actors"},
		{"RecallBeforeYear0", "POST", "/v1/recall", map[string]any{"query": "x", "before": "0000-01-01T00:00:00Z"}, "before"},
	} {
		r := b.do(c.method, c.path, b.alice, c.body)
		if r.status != 400 || !strings.Contains(r.errMsg(t), c.field) {
			t.Errorf("%s: status %d, %s; want 400 naming %s", c.name, r.status, r.body, c.field)
		}
	}
	if r := b.do("GET", "/v1/search/lexical?q=x&before=yesterday", b.alice, nil); r.status != 400 || !strings.Contains(r.errMsg(t), "before") {
		t.Errorf("search before=yesterday: %d %s", r.status, r.body)
	}
	b.must(200, "GET", "/v1/memories?limit=100", b.alice, nil, &page)
	b.must(200, "GET", "/v1/memories/"+ids.IDs[0], b.alice, nil, &got)
	if len(page.Memories) != 3 || got.Actor != "Caroline" {
		t.Errorf("after the refused requests: %d memories, first actor %q", len(page.Memories), got.Actor)
	}
}

// sameIDs reports whether got holds exactly want, in any order.
func sameIDs(got []string, want ...string) bool {
	if len(got) != len(want) {
		return false
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			return false
		}
	}
	return true
}

// TestServe_DeleteSessionAndProfile: DELETE /v1/memories deletes a session
// of the caller's profile alone and says how many; DELETE /v1/profile
// deletes the caller's profile and revokes its keys, the one used
// included; the other profile is untouched, and the server keeps requiring
// keys although it no longer has to by configuration.
func TestServe_DeleteSessionAndProfile(t *testing.T) {
	b := setup(t, opts{cfg: func(c *httpapi.Config) { c.RequireKeys = false }})
	for i, sess := range []string{"s1", "s1", "s2"} {
		b.create(b.alice, map[string]any{"id": fmt.Sprintf("a%d", i), "content": "zebra note", "session": sess})
	}
	b.create(b.bob, map[string]any{"id": "b1", "content": "zebra of bob", "session": "s1"})
	if r := b.do("DELETE", "/v1/memories", b.alice, nil); r.status != http.StatusBadRequest {
		t.Errorf("DELETE /v1/memories without a filter: %d %s", r.status, r.body)
	}
	if r := b.do("DELETE", "/v1/memories?session=s1&color=red", b.alice, nil); r.status != http.StatusBadRequest {
		t.Errorf("DELETE /v1/memories with an unknown parameter: %d %s", r.status, r.body)
	}
	var del struct{ Deleted int }
	b.must(http.StatusOK, "DELETE", "/v1/memories?session=s1", b.alice, nil, &del)
	if del.Deleted != 2 {
		t.Errorf("deleted %d of session s1, want 2", del.Deleted)
	}
	var list struct{ Memories []mnemo.Memory }
	b.must(http.StatusOK, "GET", "/v1/memories", b.bob, nil, &list)
	if len(list.Memories) != 1 {
		t.Errorf("bob has %d memories after alice deleted her s1, want 1", len(list.Memories))
	}
	var pd struct {
		Profile                  string
		Memories, Settings, Keys int
	}
	b.must(http.StatusOK, "DELETE", "/v1/profile", b.alice, nil, &pd)
	if pd.Profile != "alice" || pd.Memories != 1 || pd.Keys != 1 {
		t.Errorf("DELETE /v1/profile = %+v", pd)
	}
	if r := b.do("GET", "/v1/memories", b.alice, nil); r.status != http.StatusUnauthorized {
		t.Errorf("alice's key after DELETE /v1/profile: %d", r.status)
	}
	if r := b.do("GET", "/v1/memories", "", nil); r.status != http.StatusUnauthorized {
		t.Errorf("no key after the profile's deletion: %d, want 401 (the server keeps requiring keys)", r.status)
	}
	b.must(http.StatusOK, "GET", "/v1/memories", b.bob, nil, &list)
	if len(list.Memories) != 1 {
		t.Errorf("bob has %d memories after alice's deletion, want 1", len(list.Memories))
	}
}

// TestServe_SettingsReset: PATCH with nulls resets those settings to the
// default; mixing resets and values, or an unknown name, is a 400 that
// changes nothing.
func TestServe_SettingsReset(t *testing.T) {
	b := setup(t, opts{})
	var s mnemo.Settings
	b.must(http.StatusOK, "PATCH", "/v1/settings", b.alice, map[string]any{"semantic_weight": 0.7, "rrf_k": 20}, &s)
	for _, body := range []map[string]any{{"semantic_weight": nil, "rrf_k": 30}, {"colour": nil}} {
		if r := b.do("PATCH", "/v1/settings", b.alice, body); r.status != http.StatusBadRequest {
			t.Errorf("PATCH %v: %d %s", body, r.status, r.body)
		}
	}
	b.must(http.StatusOK, "PATCH", "/v1/settings", b.alice, map[string]any{"semantic_weight": nil}, &s)
	if def := mnemo.DefaultSettings(); s.SemanticWeight != def.SemanticWeight || s.RRFK != 20 {
		t.Errorf("after resetting semantic_weight: %+v", s)
	}
	b.must(http.StatusOK, "GET", "/v1/settings", b.alice, nil, &s)
	if s.RRFK != 20 || s.SemanticWeight != mnemo.DefaultSettings().SemanticWeight {
		t.Errorf("stored after the reset: %+v", s)
	}
}

// TestServe_ListKindAndTotal: GET /v1/memories filters by kind and, with
// total=true, counts what the filters select on every page (what a client
// shows before DELETE /v1/memories with the same filters); bad values are
// 400s naming the parameter.
func TestServe_ListKindAndTotal(t *testing.T) {
	b := setup(t, opts{})
	for i, k := range []string{"episodic", "semantic", "semantic", "identity", "semantic"} {
		b.create(b.alice, map[string]any{"id": fmt.Sprintf("a%d", i), "content": "zebra note", "kind": k, "session": fmt.Sprint("s", i%2)})
	}
	b.create(b.bob, map[string]any{"id": "b1", "content": "zebra of bob", "kind": "semantic"})
	type page struct {
		Memories   []mnemo.Memory
		NextCursor string `json:"next_cursor"`
		Total      *int
	}
	var p page
	b.must(200, "GET", "/v1/memories?kind=semantic&limit=2&total=true", b.alice, nil, &p)
	if p.Total == nil || *p.Total != 3 || len(p.Memories) != 2 || p.NextCursor == "" {
		t.Fatalf("kind=semantic, first page: %d memories, total %v, cursor %q; want 2 of 3 and a cursor", len(p.Memories), p.Total, p.NextCursor)
	}
	var p2 page
	b.must(200, "GET", "/v1/memories?kind=semantic&limit=2&total=true&cursor="+url.QueryEscape(p.NextCursor), b.alice, nil, &p2)
	if p2.Total == nil || *p2.Total != 3 || len(p2.Memories) != 1 {
		t.Errorf("kind=semantic, second page: %d memories, total %v; want 1, total 3", len(p2.Memories), p2.Total)
	}
	b.must(200, "GET", "/v1/memories?kind=semantic,identity&session=s1&total=true", b.alice, nil, &p)
	if got := len(p.Memories); got != 2 || *p.Total != 2 {
		t.Errorf("kind=semantic,identity&session=s1: %d memories, total %d; want 2", got, *p.Total)
	}
	var plain page
	b.must(200, "GET", "/v1/memories", b.alice, nil, &plain)
	if plain.Total != nil {
		t.Errorf("total without total=true: %d", *plain.Total)
	}
	for _, c := range []struct{ path, want string }{
		{"/v1/memories?kind=opinion", `kind[0] = "opinion": must be one of episodic, semantic, identity`},
		{"/v1/memories?total=maybe", `total = "maybe": must be true or false`},
	} {
		r := b.do("GET", c.path, b.alice, nil)
		if msg := r.errMsg(t); r.status != 400 || !strings.Contains(msg, c.want) {
			t.Errorf("GET %s: %d %q, want 400 %q", c.path, r.status, msg, c.want)
		}
	}
	var del struct{ Deleted int }
	b.must(200, "DELETE", "/v1/memories?kind=semantic&session=s0", b.alice, nil, &del)
	if del.Deleted != 2 {
		t.Errorf("DELETE kind=semantic&session=s0 deleted %d, want 2 (a2, a4)", del.Deleted)
	}
	b.must(200, "GET", "/v1/memories?total=true", b.alice, nil, &p)
	if *p.Total != 3 {
		t.Errorf("alice has %d memories after the deletion, want 3", *p.Total)
	}
	b.must(200, "GET", "/v1/memories?total=true", b.bob, nil, &p)
	if *p.Total != 1 {
		t.Errorf("bob has %d memories after alice's deletion by kind, want 1", *p.Total)
	}
	if r := b.do("DELETE", "/v1/memories?kind=opinion", b.alice, nil); r.status != 400 {
		t.Errorf("DELETE kind=opinion: %d, want 400", r.status)
	}
}
