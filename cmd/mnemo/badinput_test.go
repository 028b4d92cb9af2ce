package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/server/httpapi"
	"github.com/mnemo-dev/mnemo/server/mcpserver"
)

// badInput is one entry of the catalogue: a bad input to one surface and
// the field its error must name.
type badInput struct {
	name string
	// CLI: args to mnemo (exit 2 expected, the message on stderr).
	args []string
	// HTTP: a request with profile me's key (a 4xx expected).
	method, path, body string
	// MCP: a tool call in profile me (a tool error expected).
	tool    string
	mcpArgs map[string]any
	// field must appear in the error message.
	field string
}

// TestBadInput_Catalogue sends every bad input of the catalogue through
// its surface — the CLI, the HTTP API, MCP — on one database holding one
// memory and stored settings, and checks that each is refused with an
// error naming the field at fault, and that nothing was written: the
// profile's memories and settings are as they were.
func TestBadInput_Catalogue(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	stored := strings.TrimSpace(c.ok("add", "--profile", "me", "--session", "s1", "the one memory"))
	c.ok("settings", "set", "--profile", "me", "semantic_weight=0.7")
	badLines := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(badLines, []byte(`{"content": "x", "timestamp": "NaN"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	lines := func(name, line string) string {
		path := filepath.Join(t.TempDir(), name+".jsonl")
		if err := os.WriteFile(path, []byte(line+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}

	e, err := mnemo.Open(c.env["MNEMO_DB"], &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	ctx := t.Context()
	key, _, err := e.CreateKey(ctx, "me", "catalogue")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Engine: e, RequireKeys: true, MaxBodyBytes: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	ct, st := mcp.NewInMemoryTransports()
	ss, err := mcpserver.New(e, mcpserver.Fixed("me"), nil).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "catalogue", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	long := strings.Repeat("a", 257)
	tooMany := `{"query": "x", "exclude": [` + strings.Repeat(`"i",`, mnemo.MaxListItems) + `"i"]}`
	catalogue := []badInput{
		// The CLI.
		{name: "AddImportanceAbove1", args: []string{"add", "--importance", "2", "x"}, field: "importance"},
		{name: "AddImportanceNaN", args: []string{"add", "--importance", "NaN", "x"}, field: "importance"},
		{name: "AddKind", args: []string{"add", "--kind", "dream", "x"}, field: "kind"},
		{name: "AddAt", args: []string{"add", "--at", "yesterday", "x"}, field: "--at"},
		{name: "AddAtYear0", args: []string{"add", "--at", "0000-01-01T00:00:00Z", "x"}, field: "created_at"},
		{name: "AddOccurredAt", args: []string{"add", "--occurred-at", "last tuesday", "x"}, field: "--occurred-at"},
		{name: "AddSeq", args: []string{"add", "--seq", "-1", "x"}, field: "seq"},
		{name: "AddActor", args: []string{"add", "--actor", long, "x"}, field: "actor"},
		{name: "AddMetadataArray", args: []string{"add", "--metadata", "[1]", "x"}, field: "metadata"},
		{name: "AddMetadataMalformed", args: []string{"add", "--metadata", "{bad", "x"}, field: "metadata"},
		{name: "AddIDDotDot", args: []string{"add", "--id", "..", "x"}, field: "id"},
		{name: "AddIDControl", args: []string{"add", "--id", "a\x07b", "x"}, field: "id"},
		{name: "AddContentUTF8", args: []string{"add", "bad \xff text"}, field: "content"},
		{name: "AddContentEmpty", args: []string{"add", "  "}, field: "content"},
		{name: "AddProjectUTF8", args: []string{"add", "--project", "p\xff", "x"}, field: "project"},
		{name: "AddNoProfile", args: []string{"add", "--profile", "", "x"}, field: "profile"},
		{name: "RecallZeroWeights", args: []string{"recall", "--weights", "lexical=0,dense=0", "x"}, field: "weights"},
		{name: "RecallUnknownLeg", args: []string{"recall", "--weights", "sparse=1", "x"}, field: "weights"},
		{name: "RecallWeightNaN", args: []string{"recall", "--weights", "lexical=NaN", "x"}, field: "weight"},
		{name: "RecallLimit", args: []string{"recall", "--limit", "0", "x"}, field: "limit"},
		{name: "RecallAfter", args: []string{"recall", "--after", "soon", "x"}, field: "--after"},
		{name: "RecallKind", args: []string{"recall", "--kind", "dream", "x"}, field: "kind"},
		{name: "RecallQueryEmpty", args: []string{"recall", " "}, field: "query"},
		{name: "SettingsNegative", args: []string{"settings", "set", "keyword_weight=-1"}, field: "keyword_weight"},
		{name: "SettingsNaN", args: []string{"settings", "set", "rrf_k=NaN"}, field: "rrf_k"},
		{name: "SettingsStrategy", args: []string{"settings", "set", "strategy=bogus"}, field: "strategy"},
		{name: "SettingsUnknown", args: []string{"settings", "set", "nosuchkey=1"}, field: "nosuchkey"},
		{name: "SettingsAllZero", args: []string{"settings", "set", "keyword_weight=0", "semantic_weight=0"}, field: "weights"},
		{name: "ImportNaNTimestamp", args: []string{"import", badLines}, field: "timestamp"},
		{name: "GetIDUTF8", args: []string{"get", "a\xffb"}, field: "id"},
		{name: "AddProfileTrailingSpace", args: []string{"add", "--profile", "me ", "x"}, field: "profile"},
		{name: "AddProfileLeadingSpace", args: []string{"add", "--profile", " me", "x"}, field: "profile"},
		{name: "AddProfileFormatChar", args: []string{"add", "--profile", "m\u200be", "x"}, field: "profile"},
		{name: "RecallProfileSpace", args: []string{"recall", "--profile", "me ", "x"}, field: "profile"},
		{name: "ListProfileSpace", args: []string{"list", "--profile", "me "}, field: "profile"},
		{name: "ExportProfileSpace", args: []string{"export", "--profile", "me "}, field: "profile"},
		{name: "GetProfileSpace", args: []string{"get", "--profile", "me ", stored}, field: "profile"},
		{name: "DeleteProfileSpace", args: []string{"delete", "--profile", "me ", stored}, field: "profile"},
		{name: "UpdateProfileSpace", args: []string{"update", "--profile", "me ", stored, "--importance", "0.1"}, field: "profile"},
		{name: "SettingsProfileSpace", args: []string{"settings", "set", "--profile", "me ", "keyword_weight=2"}, field: "profile"},
		{name: "KeysCreateProfileSpace", args: []string{"keys", "create", "--profile", "me "}, field: "profile"},
		{name: "ImportProfileSpace", args: []string{"import", "--profile", "me ", lines("plain", `{"content": "x"}`)}, field: "profile"},
		{name: "ImportLineProfileNumber", args: []string{"import", lines("numeric", `{"content": "x", "profile": 5}`)}, field: "profile"},

		// The HTTP API.
		{name: "HTTPImportance", method: "POST", path: "/v1/memories", body: `{"content": "x", "importance": 2}`, field: "importance"},
		{name: "HTTPImportanceString", method: "POST", path: "/v1/memories", body: `{"content": "x", "importance": "high"}`, field: "importance"},
		{name: "HTTPKind", method: "POST", path: "/v1/memories", body: `{"content": "x", "kind": "dream"}`, field: "kind"},
		{name: "HTTPCreatedAt", method: "POST", path: "/v1/memories", body: `{"content": "x", "created_at": "yesterday"}`, field: "created_at"},
		{name: "HTTPCreatedAtYear0", method: "POST", path: "/v1/memories", body: `{"content": "x", "created_at": "0000-06-01T00:00:00Z"}`, field: "created_at"},
		{name: "HTTPOccurredAt", method: "POST", path: "/v1/memories", body: `{"content": "x", "occurred_at": "May 2023"}`, field: "occurred_at"},
		{name: "HTTPSeq", method: "POST", path: "/v1/memories", body: `{"content": "x", "seq": -1}`, field: "seq"},
		{name: "HTTPActor", method: "POST", path: "/v1/memories", body: `{"content": "x", "actor": "` + long + `"}`, field: "actor"},
		{name: "HTTPMetadata", method: "POST", path: "/v1/memories", body: `{"content": "x", "metadata": [1]}`, field: "metadata"},
		{name: "HTTPIDDotDot", method: "POST", path: "/v1/memories", body: `{"content": "x", "id": ".."}`, field: "id"},
		{name: "HTTPContentEmpty", method: "POST", path: "/v1/memories", body: `{"content": ""}`, field: "content"},
		{name: "HTTPContentMissing", method: "POST", path: "/v1/memories", body: `{"session": "s1"}`, field: "content"},
		{name: "HTTPContentUTF8", method: "POST", path: "/v1/memories", body: "{\"content\": \"bad \xff\"}", field: "content"},
		{name: "HTTPUnknownField", method: "POST", path: "/v1/memories", body: `{"content": "x", "colour": "red"}`, field: "colour"},
		{name: "HTTPProfileInBody", method: "POST", path: "/v1/memories", body: `{"content": "x", "profile": "other"}`, field: "profile"},
		{name: "HTTPEmbeddingDim", method: "POST", path: "/v1/memories", body: `{"content": "x", "embedding": [1, 2, 3]}`, field: "embedding"},
		{name: "HTTPBatchItem", method: "POST", path: "/v1/memories", body: `{"memories": [{"content": "ok"}, {"content": "x", "importance": -1}]}`, field: "memories[1]"},
		{name: "HTTPBatchTime", method: "POST", path: "/v1/memories", body: `{"memories": [{"content": "ok"}, {"content": "x", "occurred_at": "soon"}]}`, field: "memories[1].occurred_at"},
		{name: "HTTPBodyTooLarge", method: "POST", path: "/v1/memories", body: `{"content": "` + strings.Repeat("x", 70<<10) + `"}`, field: "body"},
		{name: "HTTPPatchImportance", method: "PATCH", path: "/v1/memories/" + stored, body: `{"importance": 3}`, field: "importance"},
		{name: "HTTPPatchKind", method: "PATCH", path: "/v1/memories/" + stored, body: `{"kind": "dream"}`, field: "kind"},
		{name: "HTTPPatchOccurredAt", method: "PATCH", path: "/v1/memories/" + stored, body: `{"occurred_at": "+10000-01-01T00:00:00Z"}`, field: "occurred_at"},
		{name: "HTTPPatchNothing", method: "PATCH", path: "/v1/memories/" + stored, body: `{}`, field: "content"},
		{name: "HTTPRecallZeroWeights", method: "POST", path: "/v1/recall", body: `{"query": "x", "weights": {"lexical": 0, "dense": 0}}`, field: "weights"},
		{name: "HTTPRecallUnknownLeg", method: "POST", path: "/v1/recall", body: `{"query": "x", "weights": {"sparse": 1}}`, field: "weights"},
		{name: "HTTPRecallLimit", method: "POST", path: "/v1/recall", body: `{"query": "x", "limit": 100000}`, field: "limit"},
		{name: "HTTPRecallAfter", method: "POST", path: "/v1/recall", body: `{"query": "x", "after": "soon"}`, field: "after"},
		{name: "HTTPRecallKinds", method: "POST", path: "/v1/recall", body: `{"query": "x", "kinds": ["dream"]}`, field: "kinds"},
		{name: "HTTPRecallSetting", method: "POST", path: "/v1/recall", body: `{"query": "x", "settings": {"rrf_k": 0}}`, field: "rrf_k"},
		{name: "HTTPRecallQueryEmpty", method: "POST", path: "/v1/recall", body: `{"query": "  "}`, field: "query"},
		{name: "HTTPRecallTooManyExcluded", method: "POST", path: "/v1/recall", body: tooMany, field: "exclude"},
		{name: "HTTPSettingsNegative", method: "PATCH", path: "/v1/settings", body: `{"keyword_weight": -1}`, field: "keyword_weight"},
		{name: "HTTPSettingsAllZero", method: "PATCH", path: "/v1/settings", body: `{"keyword_weight": 0, "semantic_weight": 0}`, field: "weights"},
		{name: "HTTPSettingsStrategy", method: "PATCH", path: "/v1/settings", body: `{"strategy": "bogus"}`, field: "strategy"},
		{name: "HTTPSettingsUnknown", method: "PATCH", path: "/v1/settings", body: `{"nosuchkey": 1}`, field: "nosuchkey"},
		{name: "HTTPSettingsFraction", method: "PATCH", path: "/v1/settings", body: `{"fetch_multiplier": 2.5}`, field: "fetch_multiplier"},
		{name: "HTTPListLimit", method: "GET", path: "/v1/memories?limit=0", field: "limit"},
		{name: "HTTPListTypo", method: "GET", path: "/v1/memories?sesion=s1", field: "sesion"},
		{name: "HTTPListCursor", method: "GET", path: "/v1/memories?cursor=garbage", field: "cursor"},
		{name: "HTTPSearchBefore", method: "GET", path: "/v1/search/lexical?q=x&before=soon", field: "before"},
		{name: "HTTPProfileSpaceInBody", method: "POST", path: "/v1/memories", body: `{"content": "x", "profile": "me "}`, field: "profile"},
		{name: "HTTPProfileSpaceInQuery", method: "POST", path: "/v1/memories?profile=me+", body: `{"content": "x"}`, field: "profile"},
		{name: "HTTPRecallProfileSpace", method: "POST", path: "/v1/recall", body: `{"query": "x", "profile": "me "}`, field: "profile"},
		{name: "HTTPPostUnknownParam", method: "POST", path: "/v1/memories?Profile=bob", body: `{"content": "x"}`, field: "Profile"},
		{name: "HTTPPatchUnknownParam", method: "PATCH", path: "/v1/memories/" + stored + "?dry_run=1", body: `{"importance": 0.1}`, field: "dry_run"},
		{name: "HTTPRecallUnknownParam", method: "POST", path: "/v1/recall?limit=1", body: `{"query": "x"}`, field: "limit"},
		{name: "HTTPSettingsUnknownParam", method: "PATCH", path: "/v1/settings?scope=all", body: `{"keyword_weight": 2}`, field: "scope"},
		{name: "HTTPGetUnknownParam", method: "GET", path: "/v1/memories/" + stored + "?fields=content", field: "fields"},

		// MCP.
		{name: "MCPImportance", tool: mcpserver.ToolStore, mcpArgs: map[string]any{"content": "x", "importance": 3}, field: "importance"},
		{name: "MCPKind", tool: mcpserver.ToolStore, mcpArgs: map[string]any{"content": "x", "kind": "dream"}, field: "kind"},
		{name: "MCPOccurredAt", tool: mcpserver.ToolStore, mcpArgs: map[string]any{"content": "x", "occurred_at": "May 2023"}, field: "occurred_at"},
		{name: "MCPActor", tool: mcpserver.ToolStore, mcpArgs: map[string]any{"content": "x", "actor": long}, field: "actor"},
		{name: "MCPIDDotDot", tool: mcpserver.ToolStore, mcpArgs: map[string]any{"content": "x", "id": ".."}, field: "id"},
		{name: "MCPContentEmpty", tool: mcpserver.ToolStore, mcpArgs: map[string]any{"content": " "}, field: "content"},
		{name: "MCPContentWrongType", tool: mcpserver.ToolStore, mcpArgs: map[string]any{"content": 5}, field: "content"},
		{name: "MCPSameIDOtherContent", tool: mcpserver.ToolStore, mcpArgs: map[string]any{"content": "another text", "id": stored}, field: "content"},
		{name: "MCPRecallLimit", tool: mcpserver.ToolRecall, mcpArgs: map[string]any{"query": "x", "limit": 5000}, field: "limit"},
		{name: "MCPRecallAfter", tool: mcpserver.ToolRecall, mcpArgs: map[string]any{"query": "x", "after": "soon"}, field: "after"},
		{name: "MCPRecallQueryEmpty", tool: mcpserver.ToolRecall, mcpArgs: map[string]any{"query": ""}, field: "query"},
		{name: "MCPForgetNoID", tool: mcpserver.ToolForget, mcpArgs: map[string]any{"id": ""}, field: "id"},
		{name: "MCPProfileSpace", tool: mcpserver.ToolStore, mcpArgs: map[string]any{"content": "x", "profile": "me "}, field: "profile"},
	}
	if len(catalogue) < 60 {
		t.Fatalf("the catalogue holds %d bad inputs, want at least 60", len(catalogue))
	}

	state := func() string {
		t.Helper()
		n, err := e.Count(ctx, "me")
		if err != nil {
			t.Fatal(err)
		}
		set, err := e.Settings(ctx, "me")
		if err != nil {
			t.Fatal(err)
		}
		m, err := e.Get(ctx, "me", stored)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(set)
		return fmt.Sprintf("%d memories, settings %s, the memory %q %s %g", n, b, m.Content, m.Kind, m.Importance)
	}
	before := state()
	for _, bc := range catalogue {
		var msg string
		switch {
		case bc.args != nil:
			args := append([]string{bc.args[0], "--profile", "me"}, bc.args[1:]...)
			if bc.name == "AddNoProfile" {
				args = bc.args
			}
			code, _, errs := c.run("", args...)
			if code != 2 {
				t.Errorf("%s: mnemo %q exit %d (%s), want 2", bc.name, bc.args, code, errs)
			}
			msg = errs
		case bc.method != "":
			req, err := http.NewRequestWithContext(ctx, bc.method, ts.URL+bc.path, strings.NewReader(bc.body))
			if err != nil {
				t.Fatal(err)
			}
			if bc.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			req.Header.Set("Authorization", "Bearer "+key)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			var body struct{ Error, Code string }
			if res.StatusCode < 400 || res.StatusCode >= 500 || json.Unmarshal(b, &body) != nil || body.Error == "" {
				t.Errorf("%s: %s %s: %d %s, want a 4xx with an error message", bc.name, bc.method, bc.path, res.StatusCode, b)
			}
			msg = body.Error
		default:
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: bc.tool, Arguments: bc.mcpArgs})
			switch {
			case err != nil:
				msg = err.Error() // refused by the SDK's schema validation
			case !res.IsError:
				t.Errorf("%s: %s %v succeeded", bc.name, bc.tool, bc.mcpArgs)
			default:
				for _, ct := range res.Content {
					if tc, ok := ct.(*mcp.TextContent); ok {
						msg += tc.Text
					}
				}
			}
		}
		if !strings.Contains(msg, bc.field) {
			t.Errorf("%s: error %q does not name %q", bc.name, msg, bc.field)
		}
		if after := state(); after != before {
			t.Fatalf("%s wrote: before %s, after %s", bc.name, before, after)
		}
	}
}
