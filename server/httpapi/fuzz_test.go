package httpapi_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/server/httpapi"
)

// The fuzz targets below send arbitrary bodies and parameters to the
// handlers and check what every answer must satisfy: never a 5xx; an error
// is a JSON body with a message and a code; a refused request writes
// nothing; an accepted memory reads back exactly as sent. They run on the
// seed corpus in every `go test`, and for a bounded time in
// scripts/test.sh.

// fuzzServer is a Server on a fresh database with one key, shared by the
// iterations of one fuzz target.
type fuzzServer struct {
	e   *mnemo.Engine
	srv *httpapi.Server
	key string
}

func newFuzzServer(f *testing.F) *fuzzServer {
	f.Helper()
	e, err := mnemo.Open(filepath.Join(f.TempDir(), "mnemo.db"), &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close() })
	key, _, err := e.CreateKey(f.Context(), "alice", "fuzz")
	if err != nil {
		f.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Engine: e, RequireKeys: true, MaxBodyBytes: 64 << 10})
	if err != nil {
		f.Fatal(err)
	}
	return &fuzzServer{e: e, srv: srv, key: key}
}

// do serves one request in process and checks the answer's envelope.
func (s *fuzzServer) do(t testing.TB, method, target, body string) (int, []byte) {
	t.Helper()
	var rd *strings.Reader
	if body != "" || method != "GET" {
		rd = strings.NewReader(body)
	}
	var req *http.Request
	if rd != nil {
		req = httptest.NewRequestWithContext(t.Context(), method, target, rd)
		req.Header.Set("Content-Type", "application/json")
	} else {
		req = httptest.NewRequestWithContext(t.Context(), method, target, nil)
	}
	req.Header.Set("Authorization", "Bearer "+s.key)
	w := httptest.NewRecorder()
	s.srv.ServeHTTP(w, req)
	if w.Code >= 500 {
		t.Fatalf("%s %s %q: status %d: %s", method, target, body, w.Code, w.Body)
	}
	if w.Code >= 400 {
		var e struct{ Error, Code string }
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == "" || e.Code == "" {
			t.Fatalf("%s %s %q: status %d with body %s: want {error, code}", method, target, body, w.Code, w.Body)
		}
	}
	return w.Code, w.Body.Bytes()
}

func (s *fuzzServer) count(t testing.TB) int {
	t.Helper()
	n, err := s.e.Count(t.Context(), "alice")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func FuzzCreateMemories(f *testing.F) {
	for _, seed := range []string{
		`{"content": "Deployed Threadline v2.3"}`,
		`{"content": "x", "session": "s1", "actor": "Caroline", "occurred_at": "2023-05-08T13:56:00Z", "seq": 3}`,
		`{"content": "x", "created_at": "9999-12-31T23:59:59.999999999Z", "importance": 1, "kind": "semantic"}`,
		`{"content": "x", "created_at": "0000-01-01T00:00:00Z"}`,
		`{"content": "x", "importance": 1e400}`,
		`{"content": "x", "importance": "NaN"}`,
		`{"content": "x", "metadata": {"a": [1, {"b": null}]}, "id": "conv-26/D1:3"}`,
		`{"content": "x", "id": ".."}`,
		`{"memories": [{"content": "a"}, {"content": "b", "occurred_at": "May 2023"}]}`,
		`{"memories": [{"content": "a", "id": "d"}, {"content": "b", "id": "d"}]}`,
		`{"memories": []}`,
		`{"content": "x", "embedding": [1, 2, 3]}`,
		`{"content": "x", "profile": "bob"}`,
		`{"content": "\u0000 nul"}`,
		`{"content": "x"} trailing`,
		`[{"content": "x"}]`,
		`{"CONTENT": "case"}`,
		`{"content": "x", "seq": 1.5}`,
		`{"content": "x", "seq": -1}`,
		`{"content": "x", "actor": "` + strings.Repeat("a", 300) + `"}`,
	} {
		f.Add(seed)
	}
	s := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, body string) {
		before := s.count(t)
		code, out := s.do(t, "POST", "/v1/memories", body)
		switch {
		case code == http.StatusCreated:
		case code == http.StatusOK: // a replay: nothing new
			if n := s.count(t); n != before {
				t.Fatalf("a replayed write changed the count %d → %d", before, n)
			}
			return
		case code >= 400:
			if n := s.count(t); n != before {
				t.Fatalf("status %d for %q, yet the count went %d → %d", code, body, before, n)
			}
			return
		default:
			t.Fatalf("status %d for %q", code, body)
		}
		// Accepted: every memory reads back as the server's decoder read it.
		type sent struct {
			Content    string
			CreatedAt  *time.Time `json:"created_at"`
			OccurredAt *time.Time `json:"occurred_at"`
			Actor      string
		}
		var req struct {
			sent
			Memories []sent
		}
		if err := json.Unmarshal([]byte(body), &req); err != nil {
			t.Fatalf("accepted %q, which does not decode: %v", body, err)
		}
		var ids struct {
			ID  string
			IDs []string
		}
		if err := json.Unmarshal(out, &ids); err != nil {
			t.Fatal(err)
		}
		mems := req.Memories
		if mems == nil {
			mems, ids.IDs = []sent{req.sent}, []string{ids.ID}
		}
		if len(ids.IDs) != len(mems) {
			t.Fatalf("%d ids for %d memories", len(ids.IDs), len(mems))
		}
		for i, m := range mems {
			code, got := s.do(t, "GET", "/v1/memories/"+url.PathEscape(ids.IDs[i]), "")
			if code != http.StatusOK {
				t.Fatalf("GET of created %q: %d %s", ids.IDs[i], code, got)
			}
			var stored mnemo.Memory
			if err := json.Unmarshal(got, &stored); err != nil {
				t.Fatal(err)
			}
			if stored.Content != m.Content || stored.Actor != m.Actor {
				t.Fatalf("sent content %q actor %q, stored %q %q", m.Content, m.Actor, stored.Content, stored.Actor)
			}
			if m.CreatedAt != nil && !stored.CreatedAt.Equal(*m.CreatedAt) {
				t.Fatalf("sent created_at %v, stored %v", m.CreatedAt, stored.CreatedAt)
			}
			if m.OccurredAt != nil && !stored.OccurredAt.Equal(*m.OccurredAt) {
				t.Fatalf("sent occurred_at %v, stored %v", m.OccurredAt, stored.OccurredAt)
			}
		}
	})
}

func FuzzRecallBody(f *testing.F) {
	for _, seed := range []string{
		`{"query": "threadline auth"}`,
		`{"query": "x", "sessions": ["s1"], "kinds": ["semantic"], "exclude": ["a", "b"], "limit": 5}`,
		`{"query": "x", "actors": ["Caroline", ""], "after": "2023-05-01T00:00:00Z", "before": "2023-06-01T00:00:00Z"}`,
		`{"query": "x", "after": "2023-06-01T00:00:00Z", "before": "2023-05-01T00:00:00Z"}`,
		`{"query": "x", "weights": {"lexical": 0, "dense": 0}}`,
		`{"query": "x", "weights": {"lexical": 1e309}}`,
		`{"query": "x", "weights": {"sparse": 1}}`,
		`{"query": "x", "strategy": "rrf", "k": -1}`,
		`{"query": "x", "settings": {"normalization": "zscore", "neighbor_radius": 11}}`,
		`{"query": "x", "settings": {"keyword_weight": "NaN"}}`,
		`{"query": "\"unbalanced AND (", "trace": true}`,
		`{"query": "title:x OR y* NEAR(a b)"}`,
		`{"query": "   "}`,
		`{"query": "x", "limit": 100000}`,
		`{"query": "x", "profile": "bob"}`,
		`{"query": "walrus", "metadata": {"mood": "happy", "n": 2, "ok": true, "gone": null}}`,
		`{"query": "walrus", "session": "s1", "kind": ["episodic"], "actor": ["Caroline", ""]}`,
		`{"query": "walrus", "session": 3, "actor": {"a": 1}}`,
		`{"query": "walrus", "session": "s1", "sessions": ["s2"]}`,
		`{"query": "walrus", "metadata": {"n": 1e400}}`,
		`{"query": "walrus", "metadata": {"": {"nested": []}}}`,
	} {
		f.Add(seed)
	}
	s := newFuzzServer(f)
	for _, c := range []string{"Threadline auth fix deployed", "the walrus painting in May", "x y z"} {
		s.do(f, "POST", "/v1/memories", `{"content": "`+c+`", "session": "s1", "actor": "Caroline", "metadata": {"mood": "happy", "n": 2}}`)
	}
	f.Fuzz(func(t *testing.T, body string) {
		before := s.count(t)
		code, out := s.do(t, "POST", "/v1/recall", body)
		if code == http.StatusOK {
			var res httpapi.RecallResponse
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("200 with %s: %v", out, err)
			}
			for _, r := range res.Results {
				if r.Score != r.Score || r.Rank < 1 {
					t.Fatalf("result %+v", r)
				}
			}
		} else if code != http.StatusBadRequest && code != http.StatusRequestEntityTooLarge {
			t.Fatalf("status %d for %q", code, body)
		}
		if n := s.count(t); n != before {
			t.Fatalf("a recall changed the count %d → %d", before, n)
		}
	})
}

func FuzzPatchSettings(f *testing.F) {
	for _, seed := range []string{
		`{"keyword_weight": 1.5}`,
		`{"keyword_weight": 0, "semantic_weight": 0}`,
		`{"strategy": "rrf", "rrf_k": 10}`,
		`{"rrf_k": 0}`,
		`{"fetch_multiplier": 2.5}`,
		`{"importance_mode": "sideways"}`,
		`{"exact_match_bonus": true}`,
		`{"neighbor_radius": 3, "neighbor_share": 0.2, "context_field_weight": 0}`,
		`{"keyword_weight": "1"}`,
		`{"keywordweight": 1}`,
		`{}`,
		`null`,
		`{"keyword_weight": 1e999}`,
	} {
		f.Add(seed)
	}
	s := newFuzzServer(f)
	f.Fuzz(func(t *testing.T, body string) {
		_, before := s.do(t, "GET", "/v1/settings", "")
		code, out := s.do(t, "PATCH", "/v1/settings", body)
		_, after := s.do(t, "GET", "/v1/settings", "")
		switch code {
		case http.StatusOK:
			if !bytes.Equal(bytes.TrimSpace(out), bytes.TrimSpace(after)) {
				t.Fatalf("PATCH answered %s, GET then %s", out, after)
			}
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
			if !bytes.Equal(before, after) {
				t.Fatalf("a refused PATCH %q changed the settings:\n%s\n%s", body, before, after)
			}
		default:
			t.Fatalf("status %d for %q", code, body)
		}
	})
}

func FuzzListCursor(f *testing.F) {
	for _, seed := range []struct{ cursor, limit string }{
		{"", ""},
		{"MTc5NTQzNzU4NTg0MTI0OTcwMDow", "2"},
		{"not base64!", "1"},
		{"AAAA", "0"},
		{"", "1001"},
		{"", "-1"},
		{"%zz", "x"},
	} {
		f.Add(seed.cursor, seed.limit)
	}
	s := newFuzzServer(f)
	for i := range 5 {
		s.do(f, "POST", "/v1/memories", `{"content": "memory `+string(rune('a'+i))+`"}`)
	}
	_, page := s.do(f, "GET", "/v1/memories?limit=2", "")
	var first struct {
		NextCursor string `json:"next_cursor"`
	}
	if err := json.Unmarshal(page, &first); err != nil || first.NextCursor == "" {
		f.Fatalf("first page %s", page)
	}
	f.Add(first.NextCursor, "2")
	f.Add(first.NextCursor[:len(first.NextCursor)-1], "2")
	f.Fuzz(func(t *testing.T, cursor, limit string) {
		q := url.Values{}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		if limit != "" {
			q.Set("limit", limit)
		}
		code, out := s.do(t, "GET", "/v1/memories?"+q.Encode(), "")
		if code != http.StatusOK && code != http.StatusBadRequest {
			t.Fatalf("cursor %q limit %q: status %d %s", cursor, limit, code, out)
		}
		if code == http.StatusOK {
			var page struct {
				Memories []mnemo.Memory
			}
			if err := json.Unmarshal(out, &page); err != nil {
				t.Fatal(err)
			}
			if len(page.Memories) > 5 {
				t.Fatalf("%d memories of 5", len(page.Memories))
			}
		}
	})
}
