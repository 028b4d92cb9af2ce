package httpapi_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/mnemo-dev/mnemo/server/httpapi"
)

// openAPIDoc is the served document, decoded, with a validator of its
// schemas.
type openAPIDoc struct {
	t     *testing.T
	paths map[string]map[string]any
	// responses and defs are components.responses and components.schemas,
	// the latter with references rewritten to point into a $defs.
	responses map[string]any
	defs      map[string]any
}

func loadOpenAPI(t *testing.T, b *bundle) *openAPIDoc {
	t.Helper()
	r := b.must(200, "GET", "/openapi.json", "", nil, nil)
	var doc struct {
		Paths      map[string]map[string]any
		Components struct {
			Responses map[string]any
			Schemas   map[string]any
		}
	}
	// Schemas refer to each other as #/components/schemas/X; a schema
	// validated on its own finds them in its $defs.
	body := strings.ReplaceAll(string(r.body), `"#/components/schemas/`, `"#/$defs/`)
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	return &openAPIDoc{t: t, paths: doc.Paths, responses: doc.Components.Responses, defs: doc.Components.Schemas}
}

// operation returns the documented operation, nil when there is none.
func (d *openAPIDoc) operation(method, path string) map[string]any {
	op, _ := d.paths[path][strings.ToLower(method)].(map[string]any)
	return op
}

// response returns the documented response of an operation for status,
// its $ref resolved; nil when undocumented.
func (d *openAPIDoc) response(method, path string, status int) map[string]any {
	op := d.operation(method, path)
	if op == nil {
		return nil
	}
	res, _ := op["responses"].(map[string]any)[strconv.Itoa(status)].(map[string]any)
	if ref, ok := res["$ref"].(string); ok {
		res, _ = d.responses[strings.TrimPrefix(ref, "#/components/responses/")].(map[string]any)
	}
	return res
}

// documented4xx lists the 4xx statuses an operation documents.
func (d *openAPIDoc) documented4xx(method, path string) []int {
	var out []int
	for code := range d.operation(method, path)["responses"].(map[string]any) {
		if n, err := strconv.Atoi(code); err == nil && n >= 400 && n < 500 {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// validate checks a JSON value against schema (a schema of the document).
func (d *openAPIDoc) validate(schema any, body []byte) error {
	root := map[string]any{"$defs": d.defs}
	if m, ok := schema.(map[string]any); ok {
		maps.Copy(root, m)
	}
	js, err := json.Marshal(root)
	if err != nil {
		return err
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(js, &s); err != nil {
		return fmt.Errorf("the documented schema: %w", err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		return fmt.Errorf("the documented schema: %w", err)
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("body %s: %w", body, err)
	}
	return rs.Validate(v)
}

// check fails t unless the answer r to method path (a documented path,
// such as /v1/memories/{id}) is a documented response whose body fits its
// schema.
func (d *openAPIDoc) check(what, method, path string, r resp) {
	d.t.Helper()
	doc := d.response(method, path, r.status)
	if doc == nil {
		d.t.Errorf("%s: %s %s answered %d, which the document does not list: %s", what, method, path, r.status, r.body)
		return
	}
	content, _ := doc["content"].(map[string]any)
	if len(content) == 0 {
		if len(r.body) > 0 && r.status != 200 {
			d.t.Errorf("%s: %s %s %d answered a body the document does not describe: %s", what, method, path, r.status, r.body)
		}
		return
	}
	mt, _, _ := mime.ParseMediaType(r.header.Get("Content-Type"))
	media, ok := content[mt].(map[string]any)
	if !ok {
		d.t.Errorf("%s: %s %s %d answered %s; the document has %v", what, method, path, r.status, mt, slices.Sorted(maps.Keys(content)))
		return
	}
	if mt != "application/json" {
		return
	}
	if err := d.validate(media["schema"], r.body); err != nil {
		d.t.Errorf("%s: %s %s %d: the body does not fit the documented schema: %v\n%s", what, method, path, r.status, err, r.body)
	}
}

// call is one request of the contract tests: to url, a concrete URL of
// the documented path.
type call struct {
	what         string
	method, path string
	url          string
	key          string
	body         any
	header       http.Header
	status       int
}

// TestOpenAPI_EveryAnswerIsDocumented sends every route the requests that
// make it answer each of its statuses, success and refusal, and checks
// that every answer is a documented response whose body fits the
// documented schema (required fields present, enums, types), and that the
// 4xx statuses each route documents are those it answers.
func TestOpenAPI_EveryAnswerIsDocumented(t *testing.T) {
	b := setup(t, opts{cfg: func(c *httpapi.Config) {
		c.MaxBodyBytes, c.MaxRecallBodyBytes, c.EvalDatasets = 16<<10, 32<<10, "../../eval/testdata"
	}})
	ctx := t.Context()
	admin, _, err := b.e.CreateAdminKey(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	carol, _, err := b.e.CreateKey(ctx, "carol", "leaving")
	if err != nil {
		t.Fatal(err)
	}
	d := loadOpenAPI(t, b)
	id := b.create(b.alice, map[string]any{"id": "m1", "content": "the ferry to the harbour leaves at nine", "session": "s1"})
	big := `{"content": "` + strings.Repeat("x", 40<<10) + `"}`
	plain := http.Header{"Content-Type": {"text/plain"}}
	var calls []call
	// Every /v1 route: a query that is not UTF-8, no key, an admin key.
	type route struct {
		method, path, url string
		body              any
	}
	routes := []route{
		{"POST", "/v1/memories", "/v1/memories", map[string]any{"content": "a note"}},
		{"GET", "/v1/memories", "/v1/memories", nil},
		{"DELETE", "/v1/memories", "/v1/memories?session=none", nil},
		{"DELETE", "/v1/profile", "/v1/profile", nil},
		{"GET", "/v1/memories/{id}", "/v1/memories/" + id, nil},
		{"PATCH", "/v1/memories/{id}", "/v1/memories/" + id, map[string]any{"importance": 0.6}},
		{"DELETE", "/v1/memories/{id}", "/v1/memories/" + id, nil},
		{"POST", "/v1/recall", "/v1/recall", map[string]any{"query": "ferry"}},
		{"GET", "/v1/search/lexical", "/v1/search/lexical?q=ferry", nil},
		{"GET", "/v1/search/dense", "/v1/search/dense?q=ferry", nil},
		{"GET", "/v1/settings", "/v1/settings", nil},
		{"PATCH", "/v1/settings", "/v1/settings", map[string]any{"min_relevance": 0.1}},
	}
	for _, r := range routes {
		sep := "?"
		if strings.Contains(r.url, "?") {
			sep = "&"
		}
		calls = append(calls,
			call{"query not UTF-8", r.method, r.path, r.url + sep + "x=%ff", b.alice, r.body, nil, 400},
			call{"no key", r.method, r.path, r.url, "", r.body, nil, 401},
			call{"an admin key", r.method, r.path, r.url, admin, r.body, nil, 403})
		if r.body != nil {
			calls = append(calls,
				call{"too large", r.method, r.path, r.url, b.alice, big, nil, 413},
				call{"not JSON", r.method, r.path, r.url, b.alice, r.body, plain, 415})
		}
		if strings.Contains(r.path, "{id}") {
			calls = append(calls, call{"unknown id", r.method, r.path, "/v1/memories/nope", b.alice, r.body, nil, 404})
		}
	}
	calls = append(calls,
		// Successes, each with the body the document describes.
		call{"one memory, metadata of any JSON, no importance", "POST", "/v1/memories", "/v1/memories", b.alice,
			map[string]any{"content": "the ferry is late on Sundays", "metadata": map[string]any{"a": 1, "b": map[string]any{"c": "x"}}}, nil, 201},
		call{"a batch", "POST", "/v1/memories", "/v1/memories", b.alice,
			map[string]any{"memories": []any{map[string]any{"content": "one"}, map[string]any{"content": "two", "session": "s1"}}}, nil, 201},
		call{"a replay", "POST", "/v1/memories", "/v1/memories", b.alice,
			map[string]any{"id": "m1", "content": "the ferry to the harbour leaves at nine", "session": "s1"}, nil, 200},
		call{"an id taken by another memory", "POST", "/v1/memories", "/v1/memories", b.alice,
			map[string]any{"id": "m1", "content": "something else"}, nil, 409},
		call{"a page", "GET", "/v1/memories", "/v1/memories?limit=2", b.alice, nil, nil, 200},
		call{"a memory", "GET", "/v1/memories/{id}", "/v1/memories/" + id, b.alice, nil, nil, 200},
		call{"a change", "PATCH", "/v1/memories/{id}", "/v1/memories/" + id, b.alice, map[string]any{"metadata": map[string]any{"n": []any{1, 2}}}, nil, 200},
		call{"a traced recall", "POST", "/v1/recall", "/v1/recall", b.alice,
			map[string]any{"query": "ferry harbour", "trace": true, "min_relevance": 0, "settings": map[string]any{"neighbor_radius": 1}}, nil, 200},
		call{"the lexical leg", "GET", "/v1/search/lexical", "/v1/search/lexical?q=ferry", b.alice, nil, nil, 200},
		call{"the dense leg", "GET", "/v1/search/dense", "/v1/search/dense?q=ferry", b.alice, nil, nil, 200},
		call{"settings", "GET", "/v1/settings", "/v1/settings", b.alice, nil, nil, 200},
		call{"a settings change", "PATCH", "/v1/settings", "/v1/settings", b.alice, map[string]any{"autocut": 1}, nil, 200},
		call{"a settings reset", "PATCH", "/v1/settings", "/v1/settings", b.alice, map[string]any{"autocut": nil}, nil, 200},
		call{"a filtered delete", "DELETE", "/v1/memories", "/v1/memories?session=none", b.alice, nil, nil, 200},
		call{"a deletion", "DELETE", "/v1/memories/{id}", "/v1/memories/" + id, b.alice, nil, nil, 204},
		call{"a profile's deletion", "DELETE", "/v1/profile", "/v1/profile", carol, nil, nil, 200},
		call{"health", "GET", "/healthz", "/healthz", "", nil, nil, 200},
		call{"health, query not UTF-8", "GET", "/healthz", "/healthz?x=%ff", "", nil, nil, 400},
		call{"readiness", "GET", "/readyz", "/readyz", "", nil, nil, 200},
		call{"readiness, query not UTF-8", "GET", "/readyz", "/readyz?x=%ff", "", nil, nil, 400},
		call{"the document", "GET", "/openapi.json", "/openapi.json", "", nil, nil, 200},
		call{"the document, query not UTF-8", "GET", "/openapi.json", "/openapi.json?x=%ff", "", nil, nil, 400},
		call{"metrics", "GET", "/metrics", "/metrics", admin, nil, nil, 200},
		call{"metrics, query not UTF-8", "GET", "/metrics", "/metrics?x=%ff", admin, nil, nil, 400},
		call{"metrics without a key", "GET", "/metrics", "/metrics", "", nil, nil, 401},
		call{"metrics for a profile key", "GET", "/metrics", "/metrics", b.alice, nil, nil, 403},
		call{"the datasets", "GET", "/v1/eval/datasets", "/v1/eval/datasets", admin, nil, nil, 200},
		call{"the datasets, query not UTF-8", "GET", "/v1/eval/datasets", "/v1/eval/datasets?x=%ff", admin, nil, nil, 400},
		call{"the datasets without a key", "GET", "/v1/eval/datasets", "/v1/eval/datasets", "", nil, nil, 401},
		call{"the datasets for a profile key", "GET", "/v1/eval/datasets", "/v1/eval/datasets", b.alice, nil, nil, 403},
		call{"an evaluation", "POST", "/v1/eval", "/v1/eval", admin, map[string]any{"dataset": "tiny", "config": []string{"lexical"}, "resamples": 100}, nil, 200},
		call{"an evaluation of a path", "POST", "/v1/eval", "/v1/eval", admin, map[string]any{"dataset": "../tiny"}, nil, 400},
		call{"an evaluation of no dataset", "POST", "/v1/eval", "/v1/eval", admin, map[string]any{"dataset": "nope"}, nil, 404},
		call{"an evaluation without a key", "POST", "/v1/eval", "/v1/eval", "", map[string]any{"dataset": "tiny"}, nil, 401},
		call{"an evaluation for a profile key", "POST", "/v1/eval", "/v1/eval", b.alice, map[string]any{"dataset": "tiny"}, nil, 403},
		call{"an evaluation too large", "POST", "/v1/eval", "/v1/eval", admin, big, nil, 413},
		call{"an evaluation not JSON", "POST", "/v1/eval", "/v1/eval", admin, map[string]any{"dataset": "tiny"}, plain, 415},
	)
	// MCP: alice's session, then what the transport and mnemo refuse.
	accept := http.Header{"Accept": {"application/json, text/event-stream"}}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	r := b.doWith("POST", "/mcp", b.alice, init, accept)
	sid := r.header.Get("Mcp-Session-Id")
	if r.status != 200 || sid == "" {
		t.Fatalf("initialize: %d, session %q: %s", r.status, sid, r.body)
	}
	d.check("initialize", "POST", "/mcp", r)
	with := func(h http.Header, kv ...string) http.Header {
		out := h.Clone()
		for i := 0; i+1 < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	note := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	stream := http.Header{"Accept": {"text/event-stream"}}
	calls = append(calls,
		call{"a notification", "POST", "/mcp", "/mcp", b.alice, note, with(accept, "Mcp-Session-Id", sid), 202},
		call{"not UTF-8", "POST", "/mcp", "/mcp", b.alice, "{\"jsonrpc\":\"2.0\",\"method\":\"\xff\"}", accept, 400},
		call{"no key", "POST", "/mcp", "/mcp", "", init, accept, 401},
		call{"an admin key", "POST", "/mcp", "/mcp", admin, init, accept, 403},
		call{"another key's session", "POST", "/mcp", "/mcp", b.bob, note, with(accept, "Mcp-Session-Id", sid), 403},
		call{"an unknown session", "POST", "/mcp", "/mcp", b.alice, note, with(accept, "Mcp-Session-Id", "nope"), 404},
		call{"too large", "POST", "/mcp", "/mcp", b.alice, `{"jsonrpc":"2.0","method":"` + strings.Repeat("x", 20<<10) + `"}`, accept, 413},
		call{"not JSON", "POST", "/mcp", "/mcp", b.alice, init, with(accept, "Content-Type", "text/plain"), 415},
		call{"no session", "GET", "/mcp", "/mcp", b.alice, nil, stream, 400},
		call{"no key", "GET", "/mcp", "/mcp", "", nil, with(stream, "Mcp-Session-Id", sid), 401},
		call{"another key's session", "GET", "/mcp", "/mcp", b.bob, nil, with(stream, "Mcp-Session-Id", sid), 403},
		call{"an unknown session", "GET", "/mcp", "/mcp", b.alice, nil, with(stream, "Mcp-Session-Id", "nope"), 404},
		call{"no session", "DELETE", "/mcp", "/mcp", b.alice, nil, nil, 400},
		call{"no key", "DELETE", "/mcp", "/mcp", "", nil, http.Header{"Mcp-Session-Id": {sid}}, 401},
		call{"another key's session", "DELETE", "/mcp", "/mcp", b.bob, nil, http.Header{"Mcp-Session-Id": {sid}}, 403},
		call{"an unknown session", "DELETE", "/mcp", "/mcp", b.alice, nil, http.Header{"Mcp-Session-Id": {"nope"}}, 404},
		call{"the end of the session", "DELETE", "/mcp", "/mcp", b.alice, nil, http.Header{"Mcp-Session-Id": {sid}}, 204},
	)
	answered := map[string]map[int]bool{}
	for _, c := range calls {
		r := b.doWith(c.method, c.url, c.key, c.body, c.header)
		if r.status != c.status {
			t.Errorf("%s: %s %s answered %d, want %d: %s", c.what, c.method, c.url, r.status, c.status, r.body)
			continue
		}
		d.check(c.what, c.method, c.path, r)
		op := c.method + " " + c.path
		if answered[op] == nil {
			answered[op] = map[int]bool{}
		}
		answered[op][r.status] = true
	}
	// Answers no request can provoke at will, each shown by its own test.
	unprovoked := map[string][]int{
		"POST /v1/eval": {409}, // another evaluation running: TestEval_OneAtATime
	}
	for _, rt := range b.srv.Routes() {
		method, path, _ := strings.Cut(rt, " ")
		got := slices.Clone(unprovoked[rt])
		for code := range answered[rt] {
			if code >= 400 && code < 500 {
				got = append(got, code)
			}
		}
		slices.Sort(got)
		if want := d.documented4xx(method, path); !slices.Equal(got, want) || len(got) == 0 {
			t.Errorf("%s: documents the 4xx statuses %v; the requests made it answer %v", rt, want, got)
		}
	}
	// The memory stored with metadata and without importance reads back
	// as sent, with the documented default.
	var page struct {
		Memories []struct {
			Content    string
			Importance float64
			Metadata   map[string]any
		}
	}
	b.must(200, "GET", "/v1/memories", b.alice, nil, &page)
	found := false
	for _, m := range page.Memories {
		if m.Content == "the ferry is late on Sundays" {
			found = true
			if want := map[string]any{"a": 1.0, "b": map[string]any{"c": "x"}}; m.Importance != 0.5 || !reflect.DeepEqual(m.Metadata, want) {
				t.Errorf("stored importance %v, metadata %v; want 0.5 and %v", m.Importance, m.Metadata, want)
			}
		}
	}
	if !found {
		t.Error("the memory stored with metadata is not listed")
	}
}

// TestOpenAPI_RequiredRequestFieldsAreTheServers: for every request body,
// a body of its required fields alone (one optional field where it
// requires none) succeeds, so what the document leaves optional the
// server defaults; a body lacking one required field is refused with a
// message naming it.
func TestOpenAPI_RequiredRequestFieldsAreTheServers(t *testing.T) {
	b := setup(t, opts{cfg: func(c *httpapi.Config) { c.EvalDatasets = "../../eval/testdata" }})
	d := loadOpenAPI(t, b)
	id := b.create(b.alice, map[string]any{"content": "the ferry leaves at nine"})
	sample := map[string]any{"content": "the ferry is late", "query": "ferry", "memories": []any{map[string]any{"content": "one"}},
		"dataset": "tiny"}
	alone := map[string]map[string]any{ // where no field is required
		"MemoryPatch": {"importance": 0.3}, "SettingsPatch": {"min_relevance": 0.1},
	}
	admin, _, err := b.e.CreateAdminKey(t.Context(), "ops")
	if err != nil {
		t.Fatal(err)
	}
	keyFor := map[string]string{"/v1/eval": admin} // the admin routes' key; the others act as alice
	seen := 0
	for path, ops := range d.paths {
		for method, op := range ops {
			o, ok := op.(map[string]any)
			if !ok || o["requestBody"] == nil || path == "/mcp" {
				continue
			}
			schema := o["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"].(map[string]any)
			if one, ok := schema["oneOf"].([]any); ok {
				schema = one[0].(map[string]any) // one memory; the batch's memories are the same
			}
			name := strings.TrimPrefix(schema["$ref"].(string), "#/$defs/")
			s := d.defs[name].(map[string]any)
			url := strings.ReplaceAll(path, "{id}", id)
			method = strings.ToUpper(method)
			body := map[string]any{}
			var required []string
			req, _ := s["required"].([]any)
			for _, f := range req {
				required = append(required, f.(string))
				v, ok := sample[f.(string)]
				if !ok {
					t.Fatalf("%s: no sample value for the required %s", name, f)
				}
				body[f.(string)] = v
			}
			if len(required) == 0 {
				if body = alone[name]; body == nil {
					t.Fatalf("%s requires nothing: give it one optional field", name)
				}
			}
			seen++
			key := cmp.Or(keyFor[path], b.alice)
			r := b.do(method, url, key, body)
			if r.status >= 300 {
				t.Errorf("%s %s with %s's required fields alone (%v): %d %s", method, path, name, body, r.status, r.body)
			}
			d.check("required fields alone", method, path, r)
			for _, f := range required {
				less := maps.Clone(body)
				delete(less, f)
				r := b.do(method, url, key, less)
				if r.status != 400 || !strings.Contains(r.errMsg(t), f) {
					t.Errorf("%s %s without the required %s: %d %s, want a 400 naming it", method, path, f, r.status, r.body)
				}
			}
		}
	}
	if seen != 5 {
		t.Errorf("checked %d request bodies, want 5", seen)
	}
}
