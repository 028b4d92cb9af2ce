package textindex

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mnemo-dev/mnemo/internal/ftstoken"
)

// TestHolds_MatchesTokens: Holds says what tokenizing the document's
// fields says, for every mask, through deletes and a compaction, and on
// an index opened lazily.
func TestHolds_MatchesTokens(t *testing.T) {
	t.Parallel()
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(seed, 11))
			z := rand.NewZipf(r, 1.1, 2, uint64(len(vocabulary)-1))
			x := New()
			var docs []Doc
			var live []bool
			for i := range 600 {
				docs, live = append(docs, randomDoc(r, z, int64(i))), append(live, true)
				x.Add(docs[i])
				if r.IntN(5) == 0 {
					d := r.IntN(len(docs))
					x.Delete(uint32(d))
					live[d] = false
				}
			}
			tokens := []string{"absent"}
			for _, w := range vocabulary {
				if tok, ok := Token(w); ok && !slices.Contains(tokens, tok) {
					tokens = append(tokens, tok)
				}
			}
			check := func(name string, x *Index, docs []Doc, live []bool) {
				t.Helper()
				for d, doc := range docs {
					var has [NumFields]map[string]bool
					for c, text := range doc.Fields {
						has[c] = map[string]bool{}
						ftstoken.Tokenize(text, func(tok string, _ int) { has[c][tok] = true })
					}
					for _, tok := range tokens {
						for mask := uint8(1); mask <= allFields; mask++ {
							want := false
							for c := range NumFields {
								want = want || (live[d] && mask&(1<<c) != 0 && has[c][tok])
							}
							if got := x.Holds(uint32(d), tok, mask); got != want {
								t.Fatalf("%s: Holds(%d, %q, %04b) = %v, want %v (live %v, %q)", name, d, tok, mask, got, want, live[d], doc.Fields)
							}
						}
					}
				}
				if x.Holds(uint32(len(docs)), tokens[1], allFields) {
					t.Fatalf("%s: a document past the last holds %q", name, tokens[1])
				}
			}
			check("added", x, docs, live)
			enc := x.AppendBinary(nil)
			y, err := Open(bytes.NewReader(enc), int64(len(enc)))
			if err != nil {
				t.Fatal(err)
			}
			check("opened lazily", y, docs, live)
			remap := x.Compact()
			var kept []Doc
			for old, n := range remap {
				if n >= 0 {
					kept = append(kept, docs[old])
				}
			}
			all := make([]bool, len(kept))
			for i := range all {
				all[i] = true
			}
			check("compacted", x, kept, all)
		})
	}
}
