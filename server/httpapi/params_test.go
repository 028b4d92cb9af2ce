package httpapi_test

import (
	"strings"
	"testing"
)

// TestServe_UnknownQueryParameters: a query parameter a route does not
// read is a 400 naming it on every method, public routes included; the
// inspector's pages take any (their script reads them) and an unknown
// path stays a 404.
func TestServe_UnknownQueryParameters(t *testing.T) {
	b := setup(t, opts{})
	id := b.create(b.alice, map[string]any{"content": "a note"})
	for _, c := range []struct {
		method, path string
		body         any
		status       int
		names        string
	}{
		{"POST", "/v1/memories?Profile=bob", map[string]any{"content": "x"}, 400, "Profile"},
		{"PATCH", "/v1/memories/" + id + "?dry_run=1", map[string]any{"importance": 0.2}, 400, "dry_run"},
		{"POST", "/v1/recall?limit=3", map[string]any{"query": "note"}, 400, "limit"},
		{"PATCH", "/v1/settings?scope=all", map[string]any{"keyword_weight": 2}, 400, "scope"},
		{"GET", "/v1/memories/" + id + "?fields=content", nil, 400, "fields"},
		{"GET", "/v1/memories?sesion=s1", nil, 400, "sesion"},
		{"GET", "/healthz?verbose=1", nil, 400, "verbose"},
		{"GET", "/v1/memories?session=s1&metadata.source=x", nil, 200, ""},
		{"GET", "/nowhere?x=1", nil, 404, ""},
	} {
		r := b.do(c.method, c.path, b.alice, c.body)
		if r.status != c.status || c.names != "" && !strings.Contains(r.errMsg(t), c.names) {
			t.Errorf("%s %s: %d %s, want %d naming %q", c.method, c.path, r.status, r.body, c.status, c.names)
		}
	}
	if m, _ := b.e.Get(t.Context(), "alice", id); m.Importance != 0.5 {
		t.Errorf("the refused PATCH changed the memory: importance %v", m.Importance)
	}
	if r := b.do("GET", "/ui/recall?q=note&weights=lexical:1", "", nil); r.status != 200 || !strings.Contains(string(r.body), "<html") {
		t.Errorf("an inspector deep link: %d", r.status)
	}
}
