package httpapi_test

import (
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/server/mcpserver"
)

// TestServe_ProfileNameWithSurroundingSpaceIsRefused: a service key's
// request naming "bob " — in a body, a query parameter or an MCP argument —
// is a 400 naming the profile on every route, and nothing reaches bob.
func TestServe_ProfileNameWithSurroundingSpaceIsRefused(t *testing.T) {
	b := setup(t, opts{})
	svc, _ := serviceKeys(t, b)
	bobID := b.create(b.bob, map[string]any{"content": "bob's own walrus note"})
	const planted = "planted walrus note"
	for _, name := range []string{"bob ", " bob", "bob\t", "bob\n", "\u00a0bob", "bob\u200b", "\ufeffbob", "bo\x00b", "bo\x7fb"} {
		q := "?profile=" + url.QueryEscape(name)
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"POST", "/v1/memories", map[string]any{"content": planted, "profile": name}},
			{"POST", "/v1/memories", map[string]any{"memories": []map[string]any{{"content": planted, "profile": name}}}},
			{"POST", "/v1/memories" + q, map[string]any{"content": planted}},
			{"GET", "/v1/memories" + q, nil},
			{"GET", "/v1/memories/" + bobID + q, nil},
			{"PATCH", "/v1/memories/" + bobID, map[string]any{"content": planted, "profile": name}},
			{"PATCH", "/v1/memories/" + bobID + q, map[string]any{"content": planted}},
			{"DELETE", "/v1/memories/" + bobID + q, nil},
			{"DELETE", "/v1/memories" + q + "&session=s1", nil},
			{"POST", "/v1/recall", map[string]any{"query": "walrus note", "profile": name}},
			{"POST", "/v1/recall" + q, map[string]any{"query": "walrus note"}},
			{"GET", "/v1/search/lexical" + q + "&q=walrus", nil},
			{"GET", "/v1/settings" + q, nil},
			{"PATCH", "/v1/settings", map[string]any{"keyword_weight": 0.5, "profile": name}},
			{"DELETE", "/v1/profile" + q, nil},
		} {
			r := b.do(c.method, c.path, svc, c.body)
			if r.status != http.StatusBadRequest || !strings.Contains(r.errMsg(t), "profile") {
				t.Errorf("%s %s naming %q: %d %s, want a 400 naming the profile", c.method, c.path, name, r.status, r.body)
			}
		}
		cs := b.mcpClient(svc)
		for _, call := range []struct {
			tool string
			args map[string]any
		}{
			{mcpserver.ToolStore, map[string]any{"content": planted, "profile": name}},
			{mcpserver.ToolRecall, map[string]any{"query": "walrus note", "profile": name}},
			{mcpserver.ToolForget, map[string]any{"id": bobID, "profile": name}},
		} {
			if res := callTool(t, cs, call.tool, call.args, nil); !res.IsError || !strings.Contains(textOf(res), "profile") {
				t.Errorf("MCP %s naming %q: error %v %q, want an error naming the profile", call.tool, name, res.IsError, textOf(res))
			}
		}
	}
	m, err := b.e.Get(t.Context(), "bob", bobID)
	if err != nil || m.Content != "bob's own walrus note" {
		t.Errorf("bob's memory after the refused requests: %+v, %v", m, err)
	}
	if n, _ := b.e.Count(t.Context(), "bob"); n != 1 {
		t.Errorf("bob holds %d memories, want 1", n)
	}
	var rec recallOut
	b.must(200, "POST", "/v1/recall", b.bob, map[string]any{"query": "planted walrus note", "min_relevance": 0}, &rec)
	if ids := resultIDs(rec.Results); !slices.Equal(ids, []string{bobID}) {
		t.Errorf("bob's recall = %v, want his own memory only", ids)
	}
	ps, err := b.e.Profiles(t.Context())
	if err != nil || len(ps) != 1 || ps[0].Profile != "bob" {
		t.Errorf("profiles holding memories = %+v, %v; want bob alone", ps, err)
	}
}

// TestServe_EveryRouteActsOnTheNamedProfile is a property test: for any
// name, either every route and MCP refuse it (a 400 naming the profile,
// nothing stored), or a memory written under it through the body is read
// back under exactly that name through the query, the header, a recall
// and MCP, and under no other profile.
func TestServe_EveryRouteActsOnTheNamedProfile(t *testing.T) {
	b := setup(t, opts{})
	svc, _ := serviceKeys(t, b)
	cs := b.mcpClient(svc)
	rng := rand.New(rand.NewPCG(7, 11))
	pieces := []string{"a", "b", "Z", "0", " ", "  ", "\t", "\n", "\r", "\u00a0", "\u2028", "\u200b", "\ufeff", "\u202e",
		"\u0301", "é", "日", "😀", "-", "_", "/", "%", "?", "#", "&", "+", "=", ".", "\x7f", "\x1b", "\x00"}
	names := []string{"bob ", " bob", "a b", "a\u00a0b", "é", "a/b", "a?b=c&d", "%41", "."}
	for range 120 {
		var sb strings.Builder
		for range rng.IntN(6) {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		names = append(names, sb.String())
	}
	var stored []string // ids written under accepted names
	for i, name := range names {
		content := "note number " + strconv.Itoa(i) + " for the property of names"
		r := b.do("POST", "/v1/memories", svc, map[string]any{"content": content, "profile": name})
		if mnemotype.CheckProfile(name) != nil {
			if r.status != http.StatusBadRequest || !strings.Contains(r.errMsg(t), "profile") {
				t.Errorf("POST naming the refused %q in the body: %d %s", name, r.status, r.body)
			}
			q := "?profile=" + url.QueryEscape(name)
			if name == "" {
				continue // an empty parameter is refused as such, below
			}
			if r := b.do("GET", "/v1/memories"+q, svc, nil); r.status != http.StatusBadRequest {
				t.Errorf("GET ?profile=%q: %d %s", name, r.status, r.body)
			}
			if r := b.do("POST", "/v1/recall"+q, svc, map[string]any{"query": "note"}); r.status != http.StatusBadRequest {
				t.Errorf("POST /v1/recall?profile=%q: %d %s", name, r.status, r.body)
			}
			if res := callTool(t, cs, mcpserver.ToolStore, map[string]any{"content": content, "profile": name}, nil); !res.IsError {
				t.Errorf("MCP store naming the refused %q succeeded", name)
			}
			continue
		}
		if r.status != http.StatusCreated {
			t.Fatalf("POST naming the accepted %q: %d %s", name, r.status, r.body)
		}
		var out struct{ ID string }
		r.json(t, &out)
		stored = append(stored, out.ID)
		if m, err := b.e.Get(t.Context(), name, out.ID); err != nil || m.Profile != name {
			t.Fatalf("memory written for %q: %+v, %v", name, m, err)
		}
		q := "?profile=" + url.QueryEscape(name)
		b.must(200, "GET", "/v1/memories/"+out.ID+q, svc, nil, nil)
		var page struct {
			Memories []struct{ ID, Profile string }
		}
		if r := b.doWith("GET", "/v1/memories", svc, nil, header("X-Mnemo-Profile", name)); r.status != 200 {
			t.Fatalf("list for %q by header: %d %s", name, r.status, r.body)
		} else {
			r.json(t, &page)
		}
		if !slices.ContainsFunc(page.Memories, func(m struct{ ID, Profile string }) bool { return m.ID == out.ID && m.Profile == name }) {
			t.Errorf("list for %q by header lacks %s: %+v", name, out.ID, page.Memories)
		}
		var rec recallOut
		b.must(200, "POST", "/v1/recall", svc, map[string]any{"query": "property of names", "profile": name, "min_relevance": 0, "limit": 50}, &rec)
		if !slices.Contains(resultIDs(rec.Results), out.ID) {
			t.Errorf("recall for %q lacks %s: %v", name, out.ID, resultIDs(rec.Results))
		}
		var mr mcpserver.RecallOutput
		callTool(t, cs, mcpserver.ToolRecall, map[string]any{"query": "property of names", "profile": name, "min_relevance": 0, "limit": 50}, &mr)
		if !slices.ContainsFunc(mr.Results, func(h mcpserver.Recalled) bool { return h.ID == out.ID }) {
			t.Errorf("MCP recall for %q lacks %s", name, out.ID)
		}
	}
	// Every memory is in exactly one profile: the one it was written for.
	ps, err := b.e.Profiles(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, p := range ps {
		if err := mnemotype.CheckProfile(p.Profile); err != nil {
			t.Errorf("a profile holding memories has a refused name: %v", err)
		}
		total += p.Memories
	}
	if total != len(stored) {
		t.Errorf("%d memories stored in all, want %d", total, len(stored))
	}
	if len(stored) == 0 || len(stored) == len(names) {
		t.Errorf("%d of %d names accepted: the generator should give both kinds", len(stored), len(names))
	}
}

// TestServe_MCPProfileQueryParameter: /mcp?profile=P names the profile of
// every tool call of the connection, as the X-Mnemo-Profile header does,
// with a service key and in single-user mode; naming two different ones
// is refused.
func TestServe_MCPProfileQueryParameter(t *testing.T) {
	for _, mode := range []string{"service key", "single-user"} {
		t.Run(mode, func(t *testing.T) {
			b := setup(t, opts{singleUser: mode == "single-user"})
			var base http.RoundTripper = http.DefaultTransport
			if mode == "service key" {
				svc, _ := serviceKeys(t, b)
				base = bearer{key: svc, base: base}
			}
			connect := func(endpoint string, rt http.RoundTripper) (*mcp.ClientSession, error) {
				c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
				return c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: rt}}, nil)
			}
			cs, err := connect(b.ts.URL+"/mcp?profile=carol", base)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			var st mcpserver.StoreOutput
			if res := callTool(t, cs, mcpserver.ToolStore, map[string]any{"content": "carol's note by the query"}, &st); res.IsError {
				t.Fatalf("store: %s", textOf(res))
			}
			if m, err := b.e.Get(t.Context(), "carol", st.ID); err != nil || m.Profile != "carol" {
				t.Errorf("stored %+v, %v: want carol's", m, err)
			}
			if res := callTool(t, cs, mcpserver.ToolStore, map[string]any{"content": "x", "profile": "dave"}, nil); !res.IsError ||
				!strings.Contains(textOf(res), "differs") {
				t.Errorf("argument dave on /mcp?profile=carol: %v %q", res.IsError, textOf(res))
			}
			if s, err := connect(b.ts.URL+"/mcp?profile=carol", withHeader{"X-Mnemo-Profile", "dave", base}); err == nil {
				s.Close()
				t.Error("?profile=carol with the header naming dave: connected, want a refusal")
			}
			if s, err := connect(b.ts.URL+"/mcp?profile=carol&session=s1", base); err == nil {
				s.Close()
				t.Error("/mcp with an unknown query parameter: connected, want a refusal")
			}
		})
	}
}
