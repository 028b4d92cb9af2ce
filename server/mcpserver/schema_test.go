package mcpserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/server/mcpserver"
)

// httpSession connects the SDK's client to srv over streamable HTTP on
// 127.0.0.1.
func httpSession(t *testing.T, srv *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(t.Context(), &mcp.StreamableClientTransport{Endpoint: ts.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestMCP_ArgumentsHavePlainTypes: every argument and output field is
// described by one JSON type (the filters that take a string or a list
// excepted), never as a type or null, which clients such as the MCP
// Inspector render as a text box and send as a string; the optional
// numbers say their range and default.
func TestMCP_ArgumentsHavePlainTypes(t *testing.T) {
	t.Parallel()
	cs := httpSession(t, mcpserver.New(openEngine(t), mcpserver.Fixed("me"), nil))
	tools, err := cs.ListTools(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	type prop struct {
		Type        any    `json:"type"`
		Description string `json:"description"`
	}
	type schema struct {
		Properties map[string]prop `json:"properties"`
	}
	stringOrList := map[string]bool{"memory_recall.session": true, "memory_recall.actor": true}
	described := map[string][]string{
		"memory_store.importance":     {"number", "[0, 1]", "default 0.5"},
		"memory_store.seq":            {"integer", "1 or more", "default"},
		"memory_recall.limit":         {"integer", "[1, 1000]", "default 5"},
		"memory_recall.min_relevance": {"number", "[0, 1]", "default"},
	}
	seen := 0
	for _, tl := range tools.Tools {
		for which, sc := range map[string]any{"input": tl.InputSchema, "output": tl.OutputSchema} {
			js, err := json.Marshal(sc)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(js), `"null"`) {
				t.Errorf("%s's %s schema allows null: %s", tl.Name, which, js)
			}
			var s schema
			if err := json.Unmarshal(js, &s); err != nil {
				t.Fatal(err)
			}
			for name, p := range s.Properties {
				field := tl.Name + "." + name
				typ, plain := p.Type.(string)
				if !plain && !(which == "input" && stringOrList[field]) {
					t.Errorf("%s %s: type %v, want one JSON type", which, field, p.Type)
				}
				if want, ok := described[field]; ok && which == "input" {
					seen++
					if typ != want[0] {
						t.Errorf("%s: type %v, want %s", field, p.Type, want[0])
					}
					for _, w := range want[1:] {
						if !strings.Contains(p.Description, w) {
							t.Errorf("%s: description %q does not say %q", field, p.Description, w)
						}
					}
				}
			}
		}
	}
	if seen != len(described) {
		t.Errorf("found %d of the %d arguments checked", seen, len(described))
	}
}

// TestMCP_RecallLimit: memory_recall's limit is an integer in [1, 1000];
// absent, 5. Any other number, 0 included, is refused with a message
// naming limit and its range.
func TestMCP_RecallLimit(t *testing.T) {
	t.Parallel()
	e := openEngine(t)
	for i := range 8 {
		if _, err := e.Remember(t.Context(), mnemo.Input{Profile: "me", Content: fmt.Sprintf("note %d about the harbour ferry", i)}); err != nil {
			t.Fatal(err)
		}
	}
	cs := httpSession(t, mcpserver.New(e, mcpserver.Fixed("me"), nil))
	for _, c := range []struct {
		limit any // nil: not given
		want  int // results; -1: refused
	}{{nil, mcpserver.DefaultRecallLimit}, {1, 1}, {7, 7}, {1000, 8}, {0, -1}, {-1, -1}, {1001, -1}} {
		args := map[string]any{"query": "harbour ferry", "min_relevance": 0}
		if c.limit != nil {
			args["limit"] = c.limit
		}
		var out mcpserver.RecallOutput
		res := call(t, cs, mcpserver.ToolRecall, args, &out)
		switch msg := textOf(res); {
		case c.want < 0 && (!res.IsError || msg != fmt.Sprintf("limit = %v: must be an integer in [1, 1000]", c.limit)):
			t.Errorf("limit %v: IsError %v, message %q; want refused, naming limit and its range", c.limit, res.IsError, msg)
		case c.want >= 0 && (res.IsError || len(out.Results) != c.want):
			t.Errorf("limit %v: IsError %v (%s), %d results, want %d", c.limit, res.IsError, msg, len(out.Results), c.want)
		}
	}
}
