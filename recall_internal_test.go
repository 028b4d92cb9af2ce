package mnemo

import "testing"

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
	}
}
