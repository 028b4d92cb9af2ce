package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/server/mcpserver"
)

func openEngine(t *testing.T) *mnemo.Engine {
	t.Helper()
	e, err := mnemo.Open(filepath.Join(t.TempDir(), "mnemo.db"), &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// connect runs srv on one end of an in-memory transport and returns a
// client session on the other.
func connect(t *testing.T, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and decodes its structured output into out.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if out != nil && !res.IsError {
		b, err := json.Marshal(res.StructuredContent)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s structured output %s: %v", tool, b, err)
		}
	}
	return res
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

// roundTrip stores, recalls and forgets through cs and checks the engine
// saw it in profile.
func roundTrip(t *testing.T, e *mnemo.Engine, cs *mcp.ClientSession, profile string) {
	t.Helper()
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
		if tl.InputSchema == nil {
			t.Errorf("tool %s has no input schema", tl.Name)
		}
	}
	if strings.Join(names, ",") != "memory_forget,memory_recall,memory_store" {
		t.Errorf("tools = %v", names)
	}

	var st mcpserver.StoreOutput
	res := call(t, cs, mcpserver.ToolStore, map[string]any{"content": "Deployed Threadline v2.3 with the JWT auth fix",
		"session": "s1", "project": "threadline", "kind": "semantic", "importance": 0.9, "metadata": map[string]any{"src": "mcp"}}, &st)
	if res.IsError || st.ID == "" || !strings.Contains(textOf(res), st.ID) {
		t.Fatalf("memory_store = %+v (%s)", st, textOf(res))
	}
	m, err := e.Get(ctx, profile, st.ID)
	if err != nil || m.Session != "s1" || m.Project != "threadline" || m.Kind != "semantic" || m.Importance != 0.9 ||
		string(m.Metadata) != `{"src":"mcp"}` {
		t.Fatalf("stored memory = %+v, %v", m, err)
	}
	call(t, cs, mcpserver.ToolStore, map[string]any{"content": "bought groceries for the weekend", "session": "s2"}, nil)

	var rc mcpserver.RecallOutput
	res = call(t, cs, mcpserver.ToolRecall, map[string]any{"query": "Threadline JWT auth"}, &rc)
	if res.IsError || len(rc.Results) == 0 || rc.Results[0].ID != st.ID || rc.Results[0].Legs["lexical"] != 1 {
		t.Fatalf("memory_recall = %+v (%s)", rc, textOf(res))
	}
	if txt := textOf(res); !strings.Contains(txt, "1. ["+st.ID+"]") || !strings.Contains(txt, "JWT auth fix") {
		t.Errorf("readable text = %q", txt)
	}
	if rc.Results[0].Relevance < mnemo.DefaultMinRelevance || rc.Results[0].Relevance > 1 {
		t.Errorf("relevance %v", rc.Results[0].Relevance)
	}
	// Nothing in session s2 is relevant: nothing rather than the groceries;
	// with min_relevance 0, the groceries.
	res = call(t, cs, mcpserver.ToolRecall, map[string]any{"query": "Threadline JWT auth", "session": "s2"}, &rc)
	if len(rc.Results) != 0 || textOf(res) != "No relevant memories." {
		t.Errorf("session-scoped recall of what s2 lacks: %+v (%s)", rc.Results, textOf(res))
	}
	res = call(t, cs, mcpserver.ToolRecall, map[string]any{"query": "Threadline JWT auth", "session": "s2", "limit": 1, "min_relevance": 0}, &rc)
	for _, r := range rc.Results {
		if r.Session != "s2" {
			t.Errorf("session-scoped recall returned %+v", r)
		}
	}
	if len(rc.Results) != 1 {
		t.Errorf("limit 1 with min_relevance 0 returned %d", len(rc.Results))
	}

	var fg mcpserver.ForgetOutput
	if res := call(t, cs, mcpserver.ToolForget, map[string]any{"id": st.ID}, &fg); res.IsError || fg.Forgotten != st.ID {
		t.Fatalf("memory_forget = %+v (%s)", fg, textOf(res))
	}
	if _, err := e.Get(ctx, profile, st.ID); !errors.Is(err, mnemo.ErrNotFound) {
		t.Errorf("forgotten memory still there: %v", err)
	}
	if res := call(t, cs, mcpserver.ToolForget, map[string]any{"id": st.ID}, nil); !res.IsError || !strings.Contains(textOf(res), "not found") {
		t.Errorf("forgetting twice: %+v %q", res.IsError, textOf(res))
	}
}

func TestMCP_InMemoryRoundTrip(t *testing.T) {
	t.Parallel()
	e := openEngine(t)
	var mu sync.Mutex
	calls := map[string]int{}
	srv := mcpserver.New(e, mcpserver.Fixed("alice"), &mcpserver.Options{OnCall: func(tool string, _ time.Duration, _ error) {
		mu.Lock()
		calls[tool]++
		mu.Unlock()
	}})
	roundTrip(t, e, connect(t, srv), "alice")
	if n, _ := e.Count(t.Context(), "alice"); n != 1 {
		t.Errorf("alice holds %d memories, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls[mcpserver.ToolStore] != 2 || calls[mcpserver.ToolRecall] != 3 || calls[mcpserver.ToolForget] != 2 {
		t.Errorf("OnCall saw %v", calls)
	}
}

func TestMCP_StreamableHTTPRoundTrip(t *testing.T) {
	t.Parallel()
	e := openEngine(t)
	srv := mcpserver.New(e, mcpserver.Fixed("alice"), nil)
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: ts.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	roundTrip(t, e, cs, "alice")
}

func TestMCP_ToolErrors(t *testing.T) {
	t.Parallel()
	e := openEngine(t)
	other, err := e.Remember(t.Context(), mnemo.Input{Profile: "bob", Content: "bob's secret plan"})
	if err != nil {
		t.Fatal(err)
	}
	cs := connect(t, mcpserver.New(e, mcpserver.Fixed("alice"), nil))
	cases := []struct {
		name string
		tool string
		args map[string]any
		want string
	}{
		{"EmptyContent", mcpserver.ToolStore, map[string]any{"content": "  "}, "content is empty"},
		{"BadKind", mcpserver.ToolStore, map[string]any{"content": "x", "kind": "dream"}, "kind"},
		{"ImportanceRange", mcpserver.ToolStore, map[string]any{"content": "x", "importance": 2}, "importance"},
		{"EmptyQuery", mcpserver.ToolRecall, map[string]any{"query": ""}, "query is empty"},
		{"LimitRange", mcpserver.ToolRecall, map[string]any{"query": "x", "limit": 5000}, "limit"},
		{"MinRelevanceRange", mcpserver.ToolRecall, map[string]any{"query": "x", "min_relevance": 2}, "min_relevance"},
		{"OtherProfilesID", mcpserver.ToolForget, map[string]any{"id": other.ID}, "memory not found"},
		{"EmptyID", mcpserver.ToolForget, map[string]any{"id": ""}, "id is empty"},
		{"IDAndSession", mcpserver.ToolForget, map[string]any{"id": "x", "session": "s1"}, "not both"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
			if err != nil {
				t.Fatalf("protocol error: %v", err)
			}
			if !res.IsError || !strings.Contains(textOf(res), c.want) {
				t.Errorf("IsError = %v, text %q; want an error mentioning %q", res.IsError, textOf(res), c.want)
			}
		})
	}
	// A missing required argument is rejected by the schema.
	if res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: mcpserver.ToolStore, Arguments: map[string]any{}}); err == nil && !res.IsError {
		t.Error("memory_store without content succeeded")
	}
	if _, err := e.Get(t.Context(), "bob", other.ID); err != nil {
		t.Errorf("bob's memory was touched: %v", err)
	}
	if n, _ := e.Count(t.Context(), "alice"); n != 0 {
		t.Errorf("alice holds %d memories after failed calls", n)
	}
}

func TestMCP_ProfileFuncRefuses(t *testing.T) {
	t.Parallel()
	e := openEngine(t)
	deny := func(context.Context, *mcp.CallToolRequest, string) (string, error) {
		return "", errors.New("API key required")
	}
	cs := connect(t, mcpserver.New(e, deny, nil))
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: mcpserver.ToolStore, Arguments: map[string]any{"content": "x"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(textOf(res), "API key required") {
		t.Errorf("result = %v %q", res.IsError, textOf(res))
	}
}

// TestMCP_FixedProfileArgument: on a Fixed profile, every tool accepts
// its own profile as the profile argument and refuses another, storing,
// recalling and forgetting nothing of it.
func TestMCP_FixedProfileArgument(t *testing.T) {
	t.Parallel()
	e := openEngine(t)
	if _, err := e.Remember(t.Context(), mnemo.Input{Profile: "bob", Content: "bob's walrus", ID: "b1"}); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, mcpserver.New(e, mcpserver.Fixed("alice"), nil))
	call := func(tool string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := call(mcpserver.ToolStore, map[string]any{"content": "alice's walrus", "profile": "alice"}); res.IsError {
		t.Fatalf("naming its own profile: %q", textOf(res))
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{mcpserver.ToolStore, map[string]any{"content": "x", "profile": "bob"}},
		{mcpserver.ToolRecall, map[string]any{"query": "walrus", "profile": "bob"}},
		{mcpserver.ToolForget, map[string]any{"id": "b1", "profile": "bob"}},
	} {
		if res := call(c.tool, c.args); !res.IsError || !strings.Contains(textOf(res), `profile "bob"`) {
			t.Errorf("%s naming bob: %v %q", c.tool, res.IsError, textOf(res))
		}
	}
	if n, _ := e.Count(t.Context(), "bob"); n != 1 {
		t.Errorf("bob holds %d memories, want 1", n)
	}
	if n, _ := e.Count(t.Context(), "alice"); n != 1 {
		t.Errorf("alice holds %d memories, want 1", n)
	}
}

// TestMCP_ForgetSession: memory_forget with a session forgets that session
// of the caller's profile alone and says how many.
func TestMCP_ForgetSession(t *testing.T) {
	t.Parallel()
	e := openEngine(t)
	for _, in := range []mnemo.Input{
		{Profile: "alice", Session: "s1", Content: "one"}, {Profile: "alice", Session: "s1", Content: "two"},
		{Profile: "alice", Session: "s2", Content: "three"}, {Profile: "bob", Session: "s1", Content: "bob's"},
	} {
		if _, err := e.Remember(t.Context(), in); err != nil {
			t.Fatal(err)
		}
	}
	cs := connect(t, mcpserver.New(e, mcpserver.Fixed("alice"), nil))
	var fg mcpserver.ForgetOutput
	if res := call(t, cs, mcpserver.ToolForget, map[string]any{"session": "s1"}, &fg); res.IsError || fg.Count != 2 || !strings.Contains(textOf(res), "2 memories") {
		t.Fatalf("memory_forget session s1 = %+v (%s)", fg, textOf(res))
	}
	for profile, want := range map[string]int{"alice": 1, "bob": 1} {
		if n, _ := e.Count(t.Context(), profile); n != want {
			t.Errorf("%s holds %d memories, want %d", profile, n, want)
		}
	}
}

// TestMCP_RecallFilters: memory_recall's actor, time and metadata filters
// hold, and a bad metadata filter is an error naming it.
func TestMCP_RecallFilters(t *testing.T) {
	t.Parallel()
	e := openEngine(t)
	for _, in := range []mnemo.Input{
		{ID: "c1", Content: "walrus at the zoo", Actor: "Caroline", Session: "s1", Metadata: json.RawMessage(`{"mood": "happy", "n": 2}`)},
		{ID: "c2", Content: "walrus painting", Actor: "Caroline", Session: "s2", Metadata: json.RawMessage(`{"mood": "sad"}`)},
		{ID: "m1", Content: "walrus facts", Actor: "Melanie", Session: "s1", Metadata: json.RawMessage(`{"mood": "happy"}`)},
	} {
		in.Profile = "me"
		if _, err := e.Remember(t.Context(), in); err != nil {
			t.Fatal(err)
		}
	}
	cs := connect(t, mcpserver.New(e, mcpserver.Fixed("me"), nil))
	recall := func(args map[string]any) (*mcp.CallToolResult, []string) {
		t.Helper()
		args["query"], args["min_relevance"] = "walrus", 0
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: mcpserver.ToolRecall, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		var out mcpserver.RecallOutput
		js, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(js, &out)
		var ids []string
		for _, r := range out.Results {
			ids = append(ids, r.ID)
		}
		return res, slices.Sorted(slices.Values(ids))
	}
	for _, c := range []struct {
		args map[string]any
		want []string
	}{
		{map[string]any{"metadata": map[string]any{"mood": "happy"}}, []string{"c1", "m1"}},
		{map[string]any{"metadata": map[string]any{"mood": "happy", "n": 2}}, []string{"c1"}},
		{map[string]any{"metadata": map[string]any{"mood": "happy"}, "actors": []string{"Melanie"}}, []string{"m1"}},
		{map[string]any{"actor": "Caroline"}, []string{"c1", "c2"}},
		{map[string]any{"actor": []string{"Melanie", "Caroline"}, "session": "s1"}, []string{"c1", "m1"}},
		{map[string]any{"session": []string{"s2", "s1"}, "metadata": map[string]any{"mood": "sad"}}, []string{"c2"}},
	} {
		if res, got := recall(c.args); res.IsError || !slices.Equal(got, c.want) {
			t.Errorf("recall %v = %v (%q), want %v", c.args, got, textOf(res), c.want)
		}
	}
	if res, _ := recall(map[string]any{"metadata": map[string]any{"mood": []any{"happy"}}}); !res.IsError || !strings.Contains(textOf(res), "metadata.mood") {
		t.Errorf("an array value: %v %q", res.IsError, textOf(res))
	}
	if res, _ := recall(map[string]any{"actor": "Melanie", "actors": []string{"Caroline"}}); !res.IsError || !strings.Contains(textOf(res), "not both") {
		t.Errorf("actor and actors: %v %q", res.IsError, textOf(res))
	}
	if res, _ := recall(map[string]any{"session": 3}); !res.IsError {
		t.Errorf("a number for session: %q", textOf(res))
	}
}
