package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestLoad_Short is the CI version of the load run: 50 concurrent clients
// mixing writes and recalls against an in-process server on 127.0.0.1 for
// 3 s (1 s with -short), with zero errors allowed.
func TestLoad_Short(t *testing.T) {
	d := 3 * time.Second
	if testing.Short() {
		d = time.Second
	}
	var log bytes.Buffer
	rep, err := run(t.Context(), config{Clients: 50, Duration: d, WriteRatio: 0.3, SearchRate: 0.2, Seed: 500, Embedder: "hash"}, &log)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	var out bytes.Buffer
	printReport(&out, rep)
	t.Logf("\n%s", out.String())
	if rep.Errors != 0 {
		t.Errorf("%d of %d requests failed; first: %s", rep.Errors, rep.Requests, rep.FirstError)
	}
	for _, op := range []string{"write", "recall", "search_lexical"} {
		if s := rep.Ops[op]; s == nil || s.Count == 0 {
			t.Errorf("no %s requests were made", op)
		}
	}
	if want := 500 + rep.Ops["write"].Count; rep.Memories != want {
		t.Errorf("%d memories stored, want %d (seed + acknowledged writes)", rep.Memories, want)
	}
	if !strings.Contains(out.String(), "p99 ms") {
		t.Errorf("report:\n%s", out.String())
	}
}

func TestLoad_RefusesRemoteTargets(t *testing.T) {
	for _, u := range []string{"http://192.0.2.1:7077", "http://example.com", "http://10.0.0.1"} {
		if _, err := run(t.Context(), config{URL: u, Clients: 1, Duration: time.Millisecond}, &bytes.Buffer{}); err == nil ||
			!strings.Contains(err.Error(), "loopback") {
			t.Errorf("run(%s) = %v, want a refusal", u, err)
		}
	}
}
