package mnemo

import (
	"fmt"
	"strings"
	"testing"
)

// TestContentKey: contents are duplicates when their letters and digits,
// case folded, words in order, are the same; contents without any are
// compared whole.
func TestContentKey(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		same bool
	}{
		{"The deploy failed!", "the  deploy FAILED", true},
		{"The deploy failed.", "The deploy failed", true},
		{"Straße 5", "straße-5", true},
		{"deploy failed", "failed deploy", false},
		{"v2.3 released", "v23 released", false},
		{"🙂", "🙂", true},
		{"🙂", "👍", false},
		{"!!!", "🙂", false},
		{"", " ", true},
	} {
		if got := contentKey(tc.a) == contentKey(tc.b); got != tc.same {
			t.Errorf("contentKey(%q) == contentKey(%q): %v, want %v", tc.a, tc.b, got, tc.same)
		}
		if tc.same && contentHash(tc.a) != contentHash(tc.b) {
			t.Errorf("contentHash(%q) != contentHash(%q) for the same key", tc.a, tc.b)
		}
	}
}

// FuzzContentHash: contents with the same key have the same hash (the
// duplicates a recall collapses are looked up by it): a content, its key
// and variants of it in case and separators.
func FuzzContentHash(f *testing.F) {
	for _, s := range []string{"The deploy failed!", "Straße 5", "🙂", " ", "", "İstanbul ǅ ǈ", "a\xffb", "v2.3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		variants := []string{contentKey(s), strings.ToUpper(s), strings.ToLower(s), " " + s + "!", strings.ReplaceAll(s, " ", " -- ")}
		for _, v := range variants {
			if contentKey(v) == contentKey(s) && contentHash(v) != contentHash(s) {
				t.Fatalf("%q and %q: the same key %q, hashes %x and %x", s, v, contentKey(s), contentHash(s), contentHash(v))
			}
		}
	})
}

// TestKeptSettings: settings are kept by profile and version; another
// version is a miss; past maxKeptSettings profiles, what was kept is
// dropped (and read again when asked for).
func TestKeptSettings(t *testing.T) {
	t.Parallel()
	var k keptSettings
	s := DefaultSettings()
	s.RRFK = 20
	k.put("alice", 7, s)
	if got, ok := k.get("alice", 7); !ok || got != s {
		t.Fatalf("get(alice, 7) = %+v, %v", got, ok)
	}
	if _, ok := k.get("alice", 8); ok {
		t.Error("kept settings answered for another version")
	}
	if _, ok := k.get("bob", 7); ok {
		t.Error("kept settings answered for another profile")
	}
	for i := range maxKeptSettings {
		k.put(fmt.Sprint("p", i), 7, s)
	}
	if _, ok := k.get("alice", 7); ok {
		t.Error("alice's settings still kept past the bound")
	}
	if len(k.m) > maxKeptSettings {
		t.Errorf("%d profiles kept, bound %d", len(k.m), maxKeptSettings)
	}
}
