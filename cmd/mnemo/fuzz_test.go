package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
	"github.com/mnemo-dev/mnemo/mnemotype"
)

// The fuzz targets below feed arbitrary input to the CLI's parsers of user
// input and check the promises of the import and the flags: every line is
// stored, already stored or rejected with its number; a re-run stores
// nothing twice; an accepted time is in years 0001-9999; a bad flag is a
// usage error (exit 2) naming it. They run on their seeds in every `go
// test`, and for a bounded time in scripts/test.sh.

func FuzzImportLines(f *testing.F) {
	for _, seed := range []string{
		`{"text": "I adopted a puppy", "speaker": "Caroline", "timestamp": "2023-05-08T13:56:00Z", "session": 3, "dia_id": "D3:1"}`,
		"{\"content\": \"a\"}\n{\"content\": \"a\"}\n\n{\"content\": \"b\", \"id\": \"x\"}\n{\"content\": \"c\", \"id\": \"x\"}",
		`{"content": "x", "created_at": "3000-01-01T00:00:00Z", "occurred_at": 1683554160.5}`,
		`{"content": "x", "timestamp": "NaN"}`,
		`{"content": "x", "timestamp": 1e300}`,
		`{"content": "x", "date": "2023-05-08"}`,
		`{"content": "x", "seq": 0}`,
		`{"content": "x", "turn": "7"}`,
		`{"content": "x", "importance": 2}`,
		`{"content": "x", "id": ".."}`,
		`{"content": "x", "id": "a\u0007b"}`,
		`{"content": "x", "metadata": [1]}`,
		`{"content": "x", "kind": "dream"}`,
		`{"content": "", "text": "fallback"}`,
		`{"content": 5}`,
		`[1, 2]`,
		`not json at all`,
		"{\"content\": \"bad utf8 \xff\"}",
		`{"content": "x", "profile": "other"}`,
		`{"content": "x", "actor": "` + strings.Repeat("a", 300) + `"}`,
	} {
		f.Add(seed)
	}
	e, err := mnemo.Open(filepath.Join(f.TempDir(), "mnemo.db"), &mnemo.Config{Embedder: embed.NewHash(embed.DefaultHashDim), AccessFlushInterval: -1})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close() })
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, data string) {
		profile := fmt.Sprintf("p%d", n.Add(1))
		lines := 0
		for l := range strings.SplitSeq(data, "\n") {
			if len(bytes.TrimSpace([]byte(l))) > 0 {
				lines++
			}
		}
		run := func() (*importer, string) {
			var stderr bytes.Buffer
			im := &importer{a: &app{stderr: &stderr, stdout: io.Discard}, e: e, profile: profile,
				progress: newProgress(io.Discard, 0), occurrences: map[[sha256.Size]byte]int{}, ids: map[string]int{}}
			if err := im.run(context.Background(), strings.NewReader(data)); err != nil {
				t.Fatalf("import %q: %v", data, err)
			}
			return im, stderr.String()
		}
		first, msgs := run()
		if got := first.stored + first.already + len(first.rejected); got != lines {
			t.Fatalf("%d lines, but %d stored + %d already + %d rejected", lines, first.stored, first.already, len(first.rejected))
		}
		for _, l := range first.rejected[:min(len(first.rejected), maxLineMessages)] {
			if !strings.Contains(msgs, fmt.Sprintf("line %d: rejected: ", l)) {
				t.Fatalf("line %d rejected without a message naming it: %q", l, msgs)
			}
		}
		if c, err := e.Count(t.Context(), profile); err != nil || c > first.stored+first.already {
			t.Fatalf("profile holds %d memories after %d stored and %d already stored (%v)", c, first.stored, first.already, err)
		}
		again, _ := run()
		if again.stored != 0 || again.already != first.stored+first.already || len(again.rejected) != len(first.rejected) {
			t.Fatalf("a re-run stored %d, found %d already and rejected %d; the first run stored %d, found %d and rejected %d",
				again.stored, again.already, len(again.rejected), first.stored, first.already, len(first.rejected))
		}
	})
}

func FuzzParseTime(f *testing.F) {
	for _, seed := range []string{
		"2023-05-08T13:56:00Z", "2023-05-08T13:56:00.123456789+02:00", "2023-05-08 13:56:00", "2023-05-08",
		"0001-01-01T00:00:00Z", "9999-12-31T23:59:59.999999999Z", "0000-12-31T23:59:59Z", "10000-01-01",
		"1683554160", "1683554160.5", "-62135596800", "253402300800", "NaN", "Inf", "-0", "1e400", "0x10", "",
		"2023-02-30", "2023-05-08T25:00:00Z", "May 8, 2023",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseTime("timestamp", s)
		if err != nil {
			if !errors.Is(err, mnemotype.ErrInvalid) || !strings.Contains(err.Error(), "timestamp") {
				t.Fatalf("parseTime(%q): %v, want an invalid-input error naming the field", s, err)
			}
			return
		}
		if y := got.Year(); y < mnemotype.MinYear || y > mnemotype.MaxYear {
			t.Fatalf("parseTime(%q) = %v: outside years 0001-9999", s, got)
		}
		if got.Location() != time.UTC {
			t.Fatalf("parseTime(%q) = %v: not UTC", s, got)
		}
		if want, err := time.Parse(time.RFC3339Nano, s); err == nil && !want.Equal(got) {
			t.Fatalf("parseTime(%q) = %v, want the RFC 3339 instant %v", s, got, want)
		}
	})
}

func FuzzRecallFlags(f *testing.F) {
	for _, seed := range []struct{ weights, exclude string }{
		{"lexical=1,dense=0.5", "a,b"},
		{"lexical=0,dense=0", ""},
		{"lexical=NaN", ""},
		{"lexical=inf", ""},
		{"dense=-1", ""},
		{"sparse=1", ""},
		{"lexical", ""},
		{"lexical=1,,dense=2", ",,,"},
		{"recency=5.0000001", "x"},
		{"", strings.Repeat("id,", 1000)},
		{"access=1e-320", "\xff"},
	} {
		f.Add(seed.weights, seed.exclude)
	}
	dir := f.TempDir()
	env := map[string]string{"MNEMO_HOME": dir, "MNEMO_DB": filepath.Join(dir, "mnemo.db"), "MNEMO_EMBEDDER": "hash"}
	for _, text := range []string{"Deployed Threadline with the JWT fix", "the staging database", "walrus"} {
		var out, errb bytes.Buffer
		a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }}
		if code := run(context.Background(), a, []string{"add", "--profile", "me", text}); code != 0 {
			f.Fatalf("add: exit %d: %s", code, errb.String())
		}
	}
	f.Fuzz(func(t *testing.T, weights, exclude string) {
		args := []string{"recall", "--profile", "me", "--json"}
		if weights != "" {
			args = append(args, "--weights", weights)
		}
		if exclude != "" {
			args = append(args, "--exclude", exclude)
		}
		var out, errb bytes.Buffer
		a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }}
		code := run(context.Background(), a, append(args, "Threadline JWT"))
		switch code {
		case 0:
		case 2:
			if msg := errb.String(); !strings.Contains(msg, "weight") && !strings.Contains(msg, "exclude") {
				t.Fatalf("--weights %q --exclude %q: exit 2 with %q, naming neither flag", weights, exclude, msg)
			}
		default:
			t.Fatalf("--weights %q --exclude %q: exit %d: %s", weights, exclude, code, errb.String())
		}
	})
}
