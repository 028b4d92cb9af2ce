package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestParseVariant(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want variant
		err  bool
	}{
		{in: "new=bin/mnemo", want: variant{Name: "new", Bin: "bin/mnemo"}},
		{in: "one=bin/mnemo:GOMAXPROCS=1,GOGC=400", want: variant{Name: "one", Bin: "bin/mnemo", Env: []string{"GOMAXPROCS=1", "GOGC=400"}}},
		{in: "bin/mnemo", err: true},
		{in: "=bin/mnemo", err: true},
		{in: "x=", err: true},
		{in: "x=bin/mnemo:GOGC", err: true},
	} {
		got, err := parseVariant(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("parseVariant(%q) error %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if !tc.err && (got.Name != tc.want.Name || got.Bin != tc.want.Bin || !slices.Equal(got.Env, tc.want.Env)) {
			t.Errorf("parseVariant(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

// TestCompare: every question goes to every server, the order alternating
// from one question to the next; the scoped pass names each question's
// session; answers that differ are counted; a server's error stops the run
// with its name.
func TestCompare(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var calls []string // server:query:sessions
	server := func(name string, ids func(q string) []string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var body struct {
				Query    string   `json:"query"`
				Sessions []string `json:"sessions"`
			}
			if r.URL.Path != "/v1/recall" || json.NewDecoder(r.Body).Decode(&body) != nil {
				http.Error(w, "bad request", http.StatusBadRequest)
				return
			}
			mu.Lock()
			calls = append(calls, fmt.Sprintf("%s:%s:%s", name, body.Query, strings.Join(body.Sessions, ",")))
			mu.Unlock()
			var res struct {
				Results []map[string]string `json:"results"`
			}
			for _, id := range ids(body.Query) {
				res.Results = append(res.Results, map[string]string{"id": id})
			}
			json.NewEncoder(w).Encode(res)
		}))
		t.Cleanup(s.Close)
		return s
	}
	a := server("a", func(q string) []string { return []string{"m1", "m2"} })
	b := server("b", func(q string) []string {
		if q == "q2" {
			return []string{"m2", "m1"}
		}
		return []string{"m1", "m2"}
	})
	targets := []target{{"a", a.URL}, {"b", b.URL}}
	passes, err := compare(t.Context(), http.DefaultClient, targets, []string{"q1", "q2"}, 2, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(passes) != 2 || passes[0].Name != "unscoped" || passes[1].Name != "one session" {
		t.Fatalf("passes %+v", passes)
	}
	for _, p := range passes {
		if p.Same != 0.5 {
			t.Errorf("%s: the same answers for %v of the questions, want 0.5 (q2 differs)", p.Name, p.Same)
		}
		for i, s := range p.Stats {
			if s.N != 4 {
				t.Errorf("%s, %s: %d timed recalls, want 2 questions × 2 rounds", p.Name, targets[i].Name, s.N)
			}
		}
	}
	// Three rounds (one untimed) of two questions, two passes.
	if len(calls) != 3*2*2*2 {
		t.Fatalf("%d calls, want 24: %v", len(calls), calls)
	}
	want := []string{"a:q1:", "b:q1:", "b:q2:", "a:q2:", "b:q1:", "a:q1:", "a:q2:", "b:q2:"}
	if !slices.Equal(calls[:8], want) {
		t.Errorf("first calls %v, want %v (alternating)", calls[:8], want)
	}
	if got := calls[12]; got != "a:q1:0" {
		t.Errorf("first scoped call %q, want a:q1:0 (question 1 in session 0)", got)
	}
	if got := calls[14]; got != "b:q2:37" {
		t.Errorf("second scoped question's call %q, want b:q2:37", got)
	}

	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"boom"}`, http.StatusInternalServerError)
	}))
	defer broken.Close()
	_, err = compare(t.Context(), http.DefaultClient, []target{{"a", a.URL}, {"broken", broken.URL}}, []string{"q1"}, 1, 0)
	if err == nil || !strings.Contains(err.Error(), "broken") || !strings.Contains(err.Error(), "500") {
		t.Errorf("a failing server: error %v, want one naming it and its status", err)
	}
}

func TestReadQuestions(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "q.jsonl")
	os.WriteFile(good, []byte("{\"text\": \"one\"}\n\n{\"query\": \"two\"}\n"), 0o600)
	qs, err := readQuestions(good)
	if err != nil || !slices.Equal(qs, []string{"one", "two"}) {
		t.Fatalf("readQuestions = %v, %v", qs, err)
	}
	for _, bad := range []string{"{\"text\": \"one\"}\nnot json\n", "{\"other\": 1}\n"} {
		p := filepath.Join(dir, "bad.jsonl")
		os.WriteFile(p, []byte(bad), 0o600)
		if _, err := readQuestions(p); err == nil || !strings.Contains(err.Error(), "bad.jsonl:") {
			t.Errorf("%q: error %v, want one naming the file and line", bad, err)
		}
	}
}
