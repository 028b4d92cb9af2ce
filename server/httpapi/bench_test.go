package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/server/httpapi"
)

// BenchmarkRecallHTTP_10k times POST /v1/recall over a real listener on
// 127.0.0.1 against 10,000 memories of Zipf-distributed words (hashing
// embedder, an API key): with the HTTP path, which `mnemo bench` does not
// time.
func BenchmarkRecallHTTP_10k(b *testing.B) {
	ctx := b.Context()
	e, err := mnemo.Open(filepath.Join(b.TempDir(), "mnemo.db"), &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	r := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(r, 1.07, 1, 19_999) // words as often as in text
	sentence := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = fmt.Sprintf("w%x", z.Uint64())
		}
		return strings.Join(w, " ")
	}
	var ins []mnemo.Input
	for i := range 10_000 {
		ins = append(ins, mnemo.Input{Profile: "alice", Session: fmt.Sprint("s", i%100), Content: sentence(5 + r.IntN(20))})
	}
	if _, err := e.RememberBatch(ctx, ins); err != nil {
		b.Fatal(err)
	}
	key, _, err := e.CreateKey(ctx, "alice", "bench")
	if err != nil {
		b.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Engine: e, RequireKeys: true})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	b.Cleanup(ts.Close)
	bodies := make([][]byte, 64)
	for i := range bodies {
		bodies[i] = fmt.Appendf(nil, `{"query": %q, "limit": 10}`, "when did "+sentence(4))
	}
	post := func(body []byte) {
		req, err := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/recall", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := ts.Client().Do(req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, res.Body); err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("status %d", res.StatusCode)
		}
	}
	for _, body := range bodies { // warm: the index loaded, connections open
		post(body)
	}
	for i := 0; b.Loop(); i++ {
		post(bodies[i%len(bodies)])
	}
}

// BenchmarkListHTTP_10k times one page of GET /v1/memories (the
// inspector's Memories page: 50 memories and the count of all that match)
// over a real listener on 127.0.0.1 against 10,000 memories, walking the
// pages with the API's cursor; -bench ListHTTP_10k/session also filters
// by a session of 100 memories.
func BenchmarkListHTTP_10k(b *testing.B) {
	ctx := b.Context()
	e, err := mnemo.Open(filepath.Join(b.TempDir(), "mnemo.db"), &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	var ins []mnemo.Input
	for i := range 10_000 {
		ins = append(ins, mnemo.Input{Profile: "alice", Session: fmt.Sprint("s", i%100), Kind: []string{"episodic", "semantic"}[i%2],
			Content: fmt.Sprintf("memory %d of the list benchmark, about release %d", i, i%37)})
	}
	if _, err := e.RememberBatch(ctx, ins); err != nil {
		b.Fatal(err)
	}
	srv, err := httpapi.New(httpapi.Config{Engine: e, Profile: "alice"})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	b.Cleanup(ts.Close)
	for _, c := range []struct{ name, filter string }{{"all", ""}, {"session", "&session=s7"}, {"kind", "&kind=semantic"}} {
		b.Run(c.name, func(b *testing.B) {
			cursor := ""
			for b.Loop() {
				res, err := ts.Client().Get(ts.URL + "/v1/memories?limit=50&total=true" + c.filter + "&cursor=" + cursor)
				if err != nil {
					b.Fatal(err)
				}
				var page struct {
					Memories   []json.RawMessage
					NextCursor string `json:"next_cursor"`
					Total      int
				}
				if err := json.NewDecoder(res.Body).Decode(&page); err != nil {
					b.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != http.StatusOK || page.Total == 0 {
					b.Fatalf("status %d, total %d", res.StatusCode, page.Total)
				}
				cursor = page.NextCursor // the last page wraps to the first
			}
		})
	}
}
