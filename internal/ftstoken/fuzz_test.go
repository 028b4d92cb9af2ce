package ftstoken_test

import "testing"

// FuzzTokenize: on any string, this package's tokens are FTS5's. The seeds
// are the tricky cases (those under 1 KiB) and testdata/fuzz/FuzzTokenize.
func FuzzTokenize(f *testing.F) {
	for _, tc := range trickyCases {
		if len(tc.text) < 1024 {
			f.Add(tc.text)
		}
	}
	ref := reference(f)
	f.Fuzz(func(t *testing.T, text string) {
		compare(t.Context(), t, ref, []string{text})
	})
}
