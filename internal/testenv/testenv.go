// Package testenv finds what tests and benchmarks need from outside the
// repository: the shared evaluation datasets and the built-in model.
package testenv

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// Dataset returns the directory shared/datasets/name, found by walking up
// from the working directory (the repository's parent holds shared/); the
// test skips when there is none, unless CI=true, where a missing dataset
// fails it (quality gates must not pass by skipping).
func Dataset(tb testing.TB, name string) string {
	tb.Helper()
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		p := filepath.Join(dir, "shared", "datasets", name)
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			if os.Getenv("CI") == "true" {
				tb.Fatalf("dataset shared/datasets/%s not found above the working directory (CI=true: a missing dataset fails)", name)
			}
			tb.Skipf("dataset shared/datasets/%s not found above the working directory", name)
		}
		dir = parent
	}
}

// Home is mnemo's data directory by the CLI's rules: $MNEMO_HOME, else
// $XDG_DATA_HOME/mnemo, else ~/.local/share/mnemo.
func Home(tb testing.TB) string {
	tb.Helper()
	if h := os.Getenv("MNEMO_HOME"); h != "" {
		return h
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "mnemo")
	}
	u, err := os.UserHomeDir()
	if err != nil {
		tb.Fatal(err)
	}
	return filepath.Join(u, ".local", "share", "mnemo")
}

// Model loads an installed model file, path(Home) with load, or skips the
// test when load's error is missing, unless MNEMO_REQUIRE_MODEL=1 (CI),
// which makes it fail. (The loader is passed in so that the model's own
// package can use this one in its tests.)
func Model[M any](tb testing.TB, path func(home string) string, load func(string) (M, error), missing error) M {
	tb.Helper()
	p := path(Home(tb))
	m, err := load(p)
	if errors.Is(err, missing) && os.Getenv("MNEMO_REQUIRE_MODEL") != "1" {
		tb.Skipf("no model at %s (run ./scripts/setup.sh; MNEMO_REQUIRE_MODEL=1 makes this fail): %v", p, err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// SyncBuffer is a bytes.Buffer safe for concurrent writes and reads: a
// logger's or a subprocess's output that a test polls.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
