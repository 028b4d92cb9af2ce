package postgres

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestVersionAtLeast(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		v    string
		want bool
	}{
		{"0.8.0", true}, {"0.8.1", true}, {"0.10.0", true}, {"1.0", true}, {"0.7.4", false}, {"0.5.0", false},
		{"0", false}, {"", false}, {"x.y", false}, {"0.8", true},
	} {
		if got := versionAtLeast(c.v, minVectorVersion); got != c.want {
			t.Errorf("versionAtLeast(%q) = %v, want %v", c.v, got, c.want)
		}
	}
}

// TestSortPrefix: sortPrefix leaves the k first elements of any slice in
// order, as a full sort would, round after round.
func TestSortPrefix(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 500 {
		n := r.IntN(300)
		xs := make([]int, n)
		for i := range xs {
			xs[i] = r.IntN(50)*1000 + i // distinct: a total order, as the store's comparators are
		}
		want := slices.Clone(xs)
		slices.Sort(want)
		sorted := 0
		for k := 1 + r.IntN(5); ; k += 1 + r.IntN(2*k) {
			sorted = sortPrefix(xs, sorted, k, cmp.Compare[int])
			if sorted != min(k, n) || !slices.Equal(xs[:sorted], want[:sorted]) {
				t.Fatalf("trial %d, k %d: prefix %v, want %v", trial, k, xs[:sorted], want[:min(k, n)])
			}
			if k >= n {
				break
			}
		}
		got := slices.Clone(xs)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: elements lost or duplicated", trial)
		}
	}
}

// TestEntryBuilder_TokenizeAllKeepsItsTexts: a call of tokenizeAll that
// passes the bound keeps every text it was given, those seen before
// included, so that buildAll never tokenizes one again.
func TestEntryBuilder_TokenizeAllKeepsItsTexts(t *testing.T) {
	t.Parallel()
	a := strings.Repeat("alpha ", maxSeenBytes*3/4/6)
	c := strings.Repeat("gamma ", maxSeenBytes*3/8/6)
	var b entryBuilder
	b.tokenizeAll([]string{a})
	b.tokenizeAll([]string{a, c, "delta"})
	for _, text := range []string{a, c, "delta"} {
		if _, ok := b.seen[text]; !ok {
			t.Errorf("a text of %d bytes given to the last call is not kept", len(text))
		}
	}
	if b.held != len(a)+len(c)+len("delta") {
		t.Errorf("held %d bytes, want %d", b.held, len(a)+len(c)+len("delta"))
	}
}
