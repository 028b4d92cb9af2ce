package httpapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/server/httpapi"
	"github.com/mnemo-dev/mnemo/server/mcpserver"
)

// serviceKeys adds to b a service key for any profile and one for alice
// only.
func serviceKeys(t *testing.T, b *bundle) (anyKey, aliceOnly string) {
	t.Helper()
	var err error
	if anyKey, _, err = b.e.CreateServiceKey(t.Context(), "backend", nil); err != nil {
		t.Fatal(err)
	}
	if aliceOnly, _, err = b.e.CreateServiceKey(t.Context(), "alice's app", []string{"alice"}); err != nil {
		t.Fatal(err)
	}
	return anyKey, aliceOnly
}

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

// TestServe_ServiceKeyNamesTheProfile: a service key acts on the profile
// named by the X-Mnemo-Profile header, the profile query parameter or the
// body's profile field, on every route; naming none, or two different
// ones, is a 400.
func TestServe_ServiceKeyNamesTheProfile(t *testing.T) {
	b := setup(t, opts{})
	svc, _ := serviceKeys(t, b)
	var out struct{ ID string }
	if r := b.doWith("POST", "/v1/memories", svc, map[string]any{"content": "alice's walrus note"}, header("X-Mnemo-Profile", "alice")); r.status != 201 {
		t.Fatalf("create by header: %d %s", r.status, r.body)
	} else {
		r.json(t, &out)
	}
	aliceID := out.ID
	b.must(201, "POST", "/v1/memories?profile=bob", svc, map[string]any{"content": "bob's walrus note"}, &out)
	bobID := out.ID
	// A profile that has no key of its own: the service creates it.
	b.must(201, "POST", "/v1/memories", svc, map[string]any{"content": "carol's walrus note", "profile": "carol", "session": "s1"}, &out)
	carolID := out.ID
	b.must(201, "POST", "/v1/memories", svc, map[string]any{"memories": []map[string]any{
		{"content": "carol's second note", "profile": "carol"}, {"content": "carol's third note"}}}, nil)
	b.must(201, "POST", "/v1/memories", svc, map[string]any{"profile": "carol", "memories": []map[string]any{{"content": "carol's fourth note"}}}, nil)

	for _, c := range []struct{ profile, id string }{{"alice", aliceID}, {"bob", bobID}, {"carol", carolID}} {
		if m, err := b.e.Get(t.Context(), c.profile, c.id); err != nil || m.Profile != c.profile {
			t.Errorf("%s's memory %s: %+v, %v", c.profile, c.id, m, err)
		}
	}
	if n, _ := b.e.Count(t.Context(), "carol"); n != 4 {
		t.Errorf("carol holds %d memories, want 4", n)
	}
	// The profile keys see what the service wrote for them.
	b.must(200, "GET", "/v1/memories/"+aliceID, b.alice, nil, nil)
	b.must(404, "GET", "/v1/memories/"+aliceID, b.bob, nil, nil)

	var rec recallOut
	for _, via := range []struct {
		path string
		body map[string]any
		h    http.Header
	}{
		{"/v1/recall", map[string]any{"query": "walrus note", "min_relevance": 0, "profile": "carol"}, nil},
		{"/v1/recall", map[string]any{"query": "walrus note", "min_relevance": 0}, header("X-Mnemo-Profile", "carol")},
		{"/v1/recall?profile=carol", map[string]any{"query": "walrus note", "min_relevance": 0}, nil},
	} {
		r := b.doWith("POST", via.path, svc, via.body, via.h)
		if r.status != 200 {
			t.Fatalf("recall %s %v: %d %s", via.path, via.h, r.status, r.body)
		}
		rec = recallOut{}
		r.json(t, &rec)
		if ids := resultIDs(rec.Results); len(ids) == 0 || ids[0] != carolID || slices.Contains(ids, aliceID) || slices.Contains(ids, bobID) {
			t.Errorf("recall for carol via %s %v = %v", via.path, via.h, ids)
		}
	}
	var lr struct{ Memories []mnemo.Memory }
	b.must(200, "GET", "/v1/memories?profile=bob", svc, nil, &lr)
	if len(lr.Memories) != 1 || lr.Memories[0].ID != bobID {
		t.Errorf("bob's list = %+v", lr.Memories)
	}
	var sr struct{ Results []result }
	b.must(200, "GET", "/v1/search/lexical?q=walrus&profile=alice", svc, nil, &sr)
	if ids := resultIDs(sr.Results); !slices.Equal(ids, []string{aliceID}) {
		t.Errorf("alice's lexical search = %v", ids)
	}
	var set map[string]any
	b.must(200, "PATCH", "/v1/settings", svc, map[string]any{"profile": "carol", "keyword_weight": 0.5}, &set)
	b.must(200, "GET", "/v1/settings?profile=carol", svc, nil, &set)
	if set["keyword_weight"] != 0.5 {
		t.Errorf("carol's settings = %v", set)
	}
	b.must(200, "GET", "/v1/settings", b.alice, nil, &set)
	if set["keyword_weight"] == 0.5 {
		t.Error("the PATCH for carol changed alice's settings")
	}
	b.must(200, "PATCH", "/v1/memories/"+carolID+"?profile=carol", svc, map[string]any{"importance": 0.9}, nil)
	b.must(200, "PATCH", "/v1/memories/"+carolID, svc, map[string]any{"importance": 0.8, "profile": "carol"}, nil)
	b.must(404, "PATCH", "/v1/memories/"+carolID, svc, map[string]any{"importance": 0.1, "profile": "bob"}, nil)
	if m, _ := b.e.Get(t.Context(), "carol", carolID); m.Importance != 0.8 {
		t.Errorf("carol's importance = %v, want 0.8", m.Importance)
	}
	var del struct{ Deleted int }
	b.must(200, "DELETE", "/v1/memories?profile=carol&session=s1", svc, nil, &del)
	if del.Deleted != 1 {
		t.Errorf("deleted %d of carol's session s1, want 1", del.Deleted)
	}
	b.must(400, "DELETE", "/v1/profile", svc, nil, nil)
	var pd struct {
		Profile  string
		Memories int
		Keys     int
	}
	b.must(200, "DELETE", "/v1/profile?profile=carol", svc, nil, &pd)
	if pd.Profile != "carol" || pd.Memories != 3 || pd.Keys != 0 {
		t.Errorf("DELETE /v1/profile?profile=carol = %+v, want carol's 3 memories and no key", pd)
	}
	// Deleting a profile keeps the service key that named it.
	b.must(200, "GET", "/v1/memories?profile=alice", svc, nil, nil)
}

// TestServe_ServiceKeyRefusals: a service key's request that names no
// profile, names two, or names one the key may not act on is refused on
// every route, and changes nothing; a service key cannot read /metrics.
func TestServe_ServiceKeyRefusals(t *testing.T) {
	b := setup(t, opts{})
	svc, aliceOnly := serviceKeys(t, b)
	bobID := b.create(b.bob, map[string]any{"content": "bob's note", "session": "s1"})
	routes := []struct {
		method, path string
		body         map[string]any
	}{
		{"POST", "/v1/memories", map[string]any{"content": "x"}},
		{"GET", "/v1/memories", nil},
		{"GET", "/v1/memories/" + bobID, nil},
		{"PATCH", "/v1/memories/" + bobID, map[string]any{"content": "hijacked"}},
		{"DELETE", "/v1/memories/" + bobID, nil},
		{"DELETE", "/v1/memories?session=s1", nil},
		{"DELETE", "/v1/profile", nil},
		{"POST", "/v1/recall", map[string]any{"query": "note"}},
		{"GET", "/v1/search/lexical?q=note", nil},
		{"GET", "/v1/search/dense?q=note", nil},
		{"GET", "/v1/settings", nil},
		{"PATCH", "/v1/settings", map[string]any{"keyword_weight": 0}},
	}
	for _, rt := range routes {
		r := b.do(rt.method, rt.path, svc, rt.body)
		if r.status != 400 || !strings.Contains(r.errMsg(t), "X-Mnemo-Profile") {
			t.Errorf("%s %s naming no profile: %d %s, want 400 saying how to name it", rt.method, rt.path, r.status, r.body)
		}
		r = b.doWith(rt.method, rt.path, aliceOnly, rt.body, header("X-Mnemo-Profile", "bob"))
		if r.status != 403 || !strings.Contains(r.errMsg(t), `"bob"`) {
			t.Errorf("%s %s by alice's service key naming bob: %d %s, want 403", rt.method, rt.path, r.status, r.body)
		}
		sep := "?"
		if strings.Contains(rt.path, "?") {
			sep = "&"
		}
		r = b.doWith(rt.method, rt.path+sep+"profile=alice", svc, rt.body, header("X-Mnemo-Profile", "bob"))
		if r.status != 400 || !strings.Contains(r.errMsg(t), "different profiles") {
			t.Errorf("%s %s naming bob and alice: %d %s, want 400", rt.method, rt.path, r.status, r.body)
		}
		if rt.body != nil {
			body := map[string]any{"profile": "alice"}
			for k, v := range rt.body {
				body[k] = v
			}
			r = b.doWith(rt.method, rt.path, svc, body, header("X-Mnemo-Profile", "bob"))
			if r.status != 400 || !strings.Contains(r.errMsg(t), "differs") {
				t.Errorf("%s %s naming bob in the header and alice in the body: %d %s, want 400", rt.method, rt.path, r.status, r.body)
			}
		}
	}
	for _, bad := range []http.Header{header("X-Mnemo-Profile", " "), header("X-Mnemo-Profile", "bob", "X-Mnemo-Profile", "bob"),
		header("X-Mnemo-Profile", "bad\xffname")} {
		if r := b.doWith("GET", "/v1/memories", svc, nil, bad); r.status != 400 {
			t.Errorf("GET /v1/memories with %v: %d %s, want 400", bad, r.status, r.body)
		}
	}
	b.must(400, "GET", "/v1/memories?profile=", svc, nil, nil)
	if m, err := b.e.Get(t.Context(), "bob", bobID); err != nil || m.Content != "bob's note" {
		t.Errorf("bob's memory after the refusals: %+v, %v", m, err)
	}
	if n, _ := b.e.Count(t.Context(), "bob"); n != 1 {
		t.Errorf("bob holds %d memories, want 1", n)
	}
	if n, _ := b.e.Count(t.Context(), "alice"); n != 0 {
		t.Errorf("alice holds %d memories, want 0", n)
	}
	b.must(403, "GET", "/metrics", svc, nil, nil)
}

// TestServe_NamingOwnProfile: a profile key may name its own profile (a
// client written for service keys works with it); single-user mode acts on
// the profile a request names.
func TestServe_NamingOwnProfile(t *testing.T) {
	t.Parallel()
	t.Run("ProfileKey", func(t *testing.T) {
		b := setup(t, opts{})
		id := b.create(b.alice, map[string]any{"content": "alice names herself", "profile": "alice"})
		b.must(200, "GET", "/v1/memories/"+id+"?profile=alice", b.alice, nil, nil)
		if r := b.doWith("GET", "/v1/memories/"+id, b.alice, nil, header("X-Mnemo-Profile", "alice")); r.status != 200 {
			t.Errorf("GET naming alice in the header: %d %s", r.status, r.body)
		}
	})
	t.Run("SingleUser", func(t *testing.T) {
		b := setup(t, opts{singleUser: true, cfg: func(c *httpapi.Config) { c.Profile = "me" }})
		b.create("", map[string]any{"content": "for me"})
		id := b.create("", map[string]any{"content": "for a tester", "profile": "tester"})
		if _, err := b.e.Get(t.Context(), "tester", id); err != nil {
			t.Errorf("single-user write naming tester: %v", err)
		}
		var lr struct{ Memories []mnemo.Memory }
		b.must(200, "GET", "/v1/memories?profile=tester", "", nil, &lr)
		if len(lr.Memories) != 1 || lr.Memories[0].ID != id {
			t.Errorf("tester's list = %+v", lr.Memories)
		}
	})
}

// TestServe_MCPServiceKey: over MCP, a service key's tool calls name their
// profile by the profile argument (or the X-Mnemo-Profile header of the
// connection's requests); a key for alice alone is refused bob; a profile
// key is refused another profile.
func TestServe_MCPServiceKey(t *testing.T) {
	b := setup(t, opts{})
	svc, aliceOnly := serviceKeys(t, b)
	cs := b.mcpClient(svc)
	var st mcpserver.StoreOutput
	callTool(t, cs, mcpserver.ToolStore, map[string]any{"content": "carol's MCP walrus", "profile": "carol"}, &st)
	if m, err := b.e.Get(t.Context(), "carol", st.ID); err != nil || m.Content != "carol's MCP walrus" {
		t.Fatalf("stored for carol: %+v, %v", m, err)
	}
	var rec mcpserver.RecallOutput
	callTool(t, cs, mcpserver.ToolRecall, map[string]any{"query": "walrus", "profile": "carol", "min_relevance": 0}, &rec)
	if len(rec.Results) != 1 || rec.Results[0].ID != st.ID {
		t.Errorf("carol's recall = %+v", rec.Results)
	}
	callTool(t, cs, mcpserver.ToolRecall, map[string]any{"query": "walrus", "profile": "bob", "min_relevance": 0}, &rec)
	if len(rec.Results) != 0 {
		t.Errorf("bob's recall holds carol's memory: %+v", rec.Results)
	}
	for _, c := range []struct {
		cs   *mcp.ClientSession
		args map[string]any
		want string
	}{
		{cs, map[string]any{"content": "x"}, "X-Mnemo-Profile"},
		{b.mcpClient(aliceOnly), map[string]any{"content": "x", "profile": "bob"}, `"bob"`},
		{b.mcpClient(b.alice), map[string]any{"content": "x", "profile": "bob"}, "own profile"},
	} {
		res := callTool(t, c.cs, mcpserver.ToolStore, c.args, nil)
		if !res.IsError || !strings.Contains(textOf(res), c.want) {
			t.Errorf("store %v: error %v %q, want one saying %s", c.args, res.IsError, textOf(res), c.want)
		}
	}
	if n, _ := b.e.Count(t.Context(), "bob"); n != 0 {
		t.Errorf("bob holds %d memories after refused calls", n)
	}
	callTool(t, cs, mcpserver.ToolForget, map[string]any{"id": st.ID, "profile": "carol"}, nil)
	if n, _ := b.e.Count(t.Context(), "carol"); n != 0 {
		t.Errorf("carol holds %d memories after memory_forget", n)
	}

	// The connection's header names the profile for every call.
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	hs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: b.ts.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{key: svc, base: withHeader{"X-Mnemo-Profile", "dave", http.DefaultTransport}}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	callTool(t, hs, mcpserver.ToolStore, map[string]any{"content": "dave's note"}, &st)
	if _, err := b.e.Get(t.Context(), "dave", st.ID); err != nil {
		t.Errorf("the header's profile was not used: %v", err)
	}
	res := callTool(t, hs, mcpserver.ToolStore, map[string]any{"content": "x", "profile": "erin"}, nil)
	if !res.IsError || !strings.Contains(textOf(res), "differs") {
		t.Errorf("argument erin with header dave: %v %q", res.IsError, textOf(res))
	}
}

// withHeader sets one request header.
type withHeader struct {
	name, value string
	base        http.RoundTripper
}

func (h withHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return h.base.RoundTrip(r)
}

func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestServe_MetadataFilter: metadata equality filters on recall (body),
// list and the search legs (metadata.KEY=VALUE), with actor and time
// filters on list; bad filters are 400s naming them.
func TestServe_MetadataFilter(t *testing.T) {
	b := setup(t, opts{})
	mk := func(content, actor, occurred string, md map[string]any) string {
		m := map[string]any{"content": content, "actor": actor, "occurred_at": occurred}
		if md != nil {
			m["metadata"] = md
		}
		return b.create(b.alice, m)
	}
	c1 := mk("the walrus at the zoo", "Caroline", "2023-05-08T10:00:00Z", map[string]any{"speaker": "Caroline", "n": 2, "pinned": true})
	c2 := mk("a walrus painting", "Caroline", "2023-06-08T10:00:00Z", map[string]any{"speaker": "Caroline", "n": "2"})
	m1 := mk("walrus facts", "Melanie", "2023-05-09T10:00:00Z", map[string]any{"speaker": "Melanie"})
	n1 := mk("walrus without metadata", "", "2023-05-10T10:00:00Z", nil)
	b.create(b.bob, map[string]any{"content": "bob's walrus", "metadata": map[string]any{"speaker": "Caroline"}})

	recallIDs := func(md map[string]any) []string {
		t.Helper()
		var rec recallOut
		b.must(200, "POST", "/v1/recall", b.alice, map[string]any{"query": "walrus", "min_relevance": 0, "limit": 10, "metadata": md}, &rec)
		return slices.Sorted(slices.Values(resultIDs(rec.Results)))
	}
	sorted := func(ids ...string) []string { return slices.Sorted(slices.Values(ids)) }
	for _, c := range []struct {
		md   map[string]any
		want []string
	}{
		{map[string]any{"speaker": "Caroline"}, sorted(c1, c2)},
		{map[string]any{"n": 2}, sorted(c1)},
		{map[string]any{"n": "2"}, sorted(c2)},
		{map[string]any{"pinned": true}, sorted(c1)},
		{map[string]any{"speaker": nil}, sorted(n1)},
		{map[string]any{"speaker": "Caroline", "pinned": false}, nil},
	} {
		if got := recallIDs(c.md); !slices.Equal(got, c.want) {
			t.Errorf("recall metadata %v = %v, want %v", c.md, got, c.want)
		}
	}
	listIDs := func(params string) []string {
		t.Helper()
		var lr struct{ Memories []mnemo.Memory }
		b.must(200, "GET", "/v1/memories?"+params, b.alice, nil, &lr)
		var ids []string
		for _, m := range lr.Memories {
			ids = append(ids, m.ID)
		}
		return slices.Sorted(slices.Values(ids))
	}
	for params, want := range map[string][]string{
		"metadata.speaker=Caroline":                 sorted(c1, c2),
		"metadata.n=2":                              sorted(c1),
		"metadata.n=%222%22":                        sorted(c2),
		"metadata.speaker=null":                     sorted(n1),
		"metadata.speaker=Caroline&metadata.n=2":    sorted(c1),
		"actor=Melanie":                             sorted(m1),
		"actor=Caroline&after=2023-06-01T00:00:00Z": sorted(c2),
		"before=2023-05-09T12:00:00Z":               sorted(c1, m1),
	} {
		if got := listIDs(params); !slices.Equal(got, want) {
			t.Errorf("list ?%s = %v, want %v", params, got, want)
		}
	}
	for _, leg := range []string{"lexical", "dense"} {
		var sr struct{ Results []result }
		b.must(200, "GET", "/v1/search/"+leg+"?q=walrus&limit=10&metadata.speaker=Melanie", b.alice, nil, &sr)
		if got := resultIDs(sr.Results); !slices.Equal(got, []string{m1}) {
			t.Errorf("search %s metadata.speaker=Melanie = %v, want [%s]", leg, got, m1)
		}
	}
	for _, c := range []struct {
		method, path string
		body         any
		want         string
	}{
		{"POST", "/v1/recall", map[string]any{"query": "walrus", "metadata": map[string]any{"who": map[string]any{"a": 1}}}, "metadata.who"},
		{"POST", "/v1/recall", map[string]any{"query": "walrus", "metadata": map[string]any{"": "x"}}, "a key is empty"},
		{"POST", "/v1/recall", `{"query": "walrus", "metadata": ["speaker"]}`, "metadata"},
		{"GET", "/v1/memories?metadata.n=1&metadata.n=2", nil, "metadata.n is given 2 times"},
		{"GET", "/v1/memories?metadata.=x", nil, "a key is empty"},
		{"GET", "/v1/memories?metadata=x", nil, "unknown query parameter"},
		{"GET", "/v1/memories?after=yesterday", nil, "after"},
		{"GET", "/v1/search/dense?q=walrus&metadata.n=1&metadata.n=1", nil, "given 2 times"},
		{"DELETE", "/v1/memories", nil, "give session, project, actor, kind, after, before or metadata"},
		{"DELETE", "/v1/memories?metadata.x=%7B%7D&metadata.x=1", nil, "given 2 times"},
	} {
		r := b.do(c.method, c.path, b.alice, c.body)
		if r.status != 400 || !strings.Contains(r.errMsg(t), c.want) {
			t.Errorf("%s %s %v: %d %s, want 400 with %q", c.method, c.path, c.body, r.status, r.body, c.want)
		}
	}
	// Delete by the same filters: Caroline's memories that say so in
	// their metadata, before June.
	var del struct{ Deleted int }
	b.must(200, "DELETE", "/v1/memories?metadata.speaker=Caroline&actor=Caroline&before=2023-06-01T00:00:00Z", b.alice, nil, &del)
	if del.Deleted != 1 {
		t.Errorf("deleted %d, want 1 (c1)", del.Deleted)
	}
	if got := listIDs("limit=10"); !slices.Equal(got, sorted(c2, m1, n1)) {
		t.Errorf("after the delete: %v, want %v", got, sorted(c2, m1, n1))
	}
	if n, _ := b.e.Count(t.Context(), "bob"); n != 1 {
		t.Errorf("bob holds %d memories, want 1", n)
	}
}

// TestServe_Vocabulary: filters take the memory fields' names, each a
// string or a list; the old spellings (sessions, kinds, actors,
// sessionIds, text, camelCase settings) still work, say so in the
// Mnemo-Deprecated header, and may not be mixed with the new ones.
func TestServe_Vocabulary(t *testing.T) {
	b := setup(t, opts{})
	mk := func(content, session, actor, kind string) string {
		return b.create(b.alice, map[string]any{"content": content, "session": session, "actor": actor, "kind": kind})
	}
	s1 := mk("walrus one", "s1", "Caroline", "episodic")
	s2 := mk("walrus two", "s2", "Melanie", "semantic")
	s3 := mk("walrus three", "s3", "Caroline", "episodic")

	recall := func(body map[string]any) (resp, []string) {
		t.Helper()
		body["query"], body["min_relevance"] = "walrus", 0
		r := b.do("POST", "/v1/recall", b.alice, body)
		if r.status != 200 {
			t.Fatalf("recall %v: %d %s", body, r.status, r.body)
		}
		var rec recallOut
		r.json(t, &rec)
		return r, slices.Sorted(slices.Values(resultIDs(rec.Results)))
	}
	sorted := func(ids ...string) []string { return slices.Sorted(slices.Values(ids)) }
	for _, c := range []struct {
		body       map[string]any
		want       []string
		deprecated string
	}{
		{map[string]any{"session": "s1"}, sorted(s1), ""},
		{map[string]any{"session": ""}, sorted(s1, s2, s3), ""},  // "" is no filter
		{map[string]any{"session": nil}, sorted(s1, s2, s3), ""}, // as null
		{map[string]any{"session": []string{""}}, nil, ""},       // [""]: memories without a session
		{map[string]any{"actor": "", "kind": nil}, sorted(s1, s2, s3), ""},
		{map[string]any{"session": []string{"s1", "s2"}}, sorted(s1, s2), ""},
		{map[string]any{"actor": "Caroline"}, sorted(s1, s3), ""},
		{map[string]any{"kind": "semantic"}, sorted(s2), ""},
		{map[string]any{"kind": []string{"episodic"}, "actor": []string{"Caroline"}, "session": "s3"}, sorted(s3), ""},
		{map[string]any{"sessions": []string{"s2"}}, sorted(s2), "sessions (use session)"},
		{map[string]any{"kinds": []string{"semantic"}}, sorted(s2), "kinds (use kind)"},
		{map[string]any{"actors": []string{"Melanie"}}, sorted(s2), "actors (use actor)"},
		{map[string]any{"settings": map[string]any{"semanticWeight": 0}}, sorted(s1, s2, s3), "settings.semanticWeight (use settings.semantic_weight)"},
	} {
		r, got := recall(c.body)
		if !slices.Equal(got, c.want) {
			t.Errorf("recall %v = %v, want %v", c.body, got, c.want)
		}
		if h := r.header.Get("Mnemo-Deprecated"); h != c.deprecated {
			t.Errorf("recall %v: Mnemo-Deprecated %q, want %q", c.body, h, c.deprecated)
		}
	}
	for _, c := range []struct {
		path       string
		want       []string
		deprecated string
	}{
		{"/v1/search/lexical?q=walrus&session=s1,s2&kind=episodic", []string{s1}, ""},
		{"/v1/search/lexical?q=walrus&actor=Caroline&actor=Melanie&session=s2", []string{s2}, ""},
		{"/v1/search/dense?q=walrus&sessionIds=s3", []string{s3}, "sessionIds (use session)"},
		{"/v1/search/lexical?q=walrus&sessions=s3&kinds=episodic&actors=Caroline", []string{s3}, "sessions (use session), kinds (use kind), actors (use actor)"},
	} {
		var sr struct{ Results []result }
		r := b.must(200, "GET", c.path, b.alice, nil, &sr)
		if got := resultIDs(sr.Results); !slices.Equal(got, c.want) {
			t.Errorf("%s = %v, want %v", c.path, got, c.want)
		}
		if h := strings.Join(r.header.Values("Mnemo-Deprecated"), ", "); h != c.deprecated {
			t.Errorf("%s: Mnemo-Deprecated %q, want %q", c.path, h, c.deprecated)
		}
	}
	// text for content.
	var out struct{ ID string }
	r := b.must(201, "POST", "/v1/memories", b.alice, map[string]any{"text": "stored as text"}, &out)
	if m, err := b.e.Get(t.Context(), "alice", out.ID); err != nil || m.Content != "stored as text" || r.header.Get("Mnemo-Deprecated") != "text (use content)" {
		t.Errorf("text: %+v, %v, header %q", m, err, r.header.Get("Mnemo-Deprecated"))
	}
	b.must(201, "POST", "/v1/memories", b.alice, map[string]any{"memories": []map[string]any{{"text": "batch text"}, {"content": "batch content"}}}, nil)
	b.must(200, "PATCH", "/v1/memories/"+out.ID, b.alice, map[string]any{"text": "patched as text"}, nil)
	if m, _ := b.e.Get(t.Context(), "alice", out.ID); m.Content != "patched as text" {
		t.Errorf("PATCH text: content %q", m.Content)
	}
	// camelCase settings.
	var set map[string]any
	r = b.must(200, "PATCH", "/v1/settings", b.alice, map[string]any{"keywordWeight": 0.7, "neighbor_radius": 2}, &set)
	if set["keyword_weight"] != 0.7 || set["neighbor_radius"] != 2.0 || set["keywordWeight"] != nil ||
		r.header.Get("Mnemo-Deprecated") != "keywordWeight (use keyword_weight)" {
		t.Errorf("PATCH camelCase: %v, header %q", set, r.header.Get("Mnemo-Deprecated"))
	}
	b.must(200, "PATCH", "/v1/settings", b.alice, map[string]any{"keywordWeight": nil}, &set)
	if set["keyword_weight"] != 1.0 {
		t.Errorf("resetting keywordWeight: %v", set["keyword_weight"])
	}
	// Old and new spellings together, and wrong types.
	for _, c := range []struct {
		method, path string
		body         any
		want         string
	}{
		{"POST", "/v1/recall", map[string]any{"query": "x", "session": "s1", "sessions": []string{"s2"}}, "give session or its deprecated spelling sessions, not both"},
		{"POST", "/v1/recall", map[string]any{"query": "x", "actor": 3}, "actor must be a string or an array of strings, not number"},
		{"POST", "/v1/recall", map[string]any{"query": "x", "kind": "dream"}, `kind[0] = "dream"`},
		{"GET", "/v1/search/lexical?q=x&session=s1&sessionIds=s2", nil, "not both"},
		{"POST", "/v1/memories", map[string]any{"content": "a", "text": "b"}, "give content or its deprecated spelling text, not both"},
		{"PATCH", "/v1/settings", map[string]any{"keywordWeight": 1, "keyword_weight": 2}, "name the same setting"},
		{"POST", "/v1/recall", map[string]any{"query": "x", "settings": map[string]any{"minRelevance": 0.3}, "min_relevance": 0.1}, "name the same setting"},
		{"PATCH", "/v1/memories/" + out.ID, map[string]any{"content": "a", "text": "b"}, "not both"},
	} {
		r := b.do(c.method, c.path, b.alice, c.body)
		if r.status != 400 || !strings.Contains(r.errMsg(t), c.want) {
			t.Errorf("%s %s %v: %d %s, want 400 with %q", c.method, c.path, c.body, r.status, r.body, c.want)
		}
	}
}
