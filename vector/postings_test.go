package vector

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// checkPostings fails unless every row is in exactly its own postings, at
// the position it records, and the postings hold nothing else.
func checkPostings(t *testing.T, x *Index) {
	t.Helper()
	total := 0
	for k, l := range x.posts {
		if len(l) == 0 {
			t.Fatalf("posting %+v is empty but kept", k)
		}
		total += len(l)
		for i, s := range l {
			if int(s) >= len(x.rows) {
				t.Fatalf("posting %+v holds slot %d of %d rows", k, s, len(x.rows))
			}
			r := &x.rows[s]
			if r.key(int(k.field)) != k || r.pos[k.field] != int32(i) {
				t.Fatalf("posting %+v[%d] = slot %d, whose row has key %+v at %d", k, i, s, r.key(int(k.field)), r.pos[k.field])
			}
		}
	}
	if total != nPostings*len(x.rows) {
		t.Fatalf("postings hold %d entries for %d rows", total, len(x.rows))
	}
}

func TestIndex_Postings(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	x := NewDim(2)
	for round := range 3000 {
		id := fmt.Sprintf("m%d", r.IntN(200))
		if r.IntN(3) == 0 {
			x.Delete(id, fmt.Sprintf("m%d", r.IntN(200)))
		} else {
			err := x.Upsert([]mnemotype.Memory{{ID: id, Project: fmt.Sprint("p", r.IntN(3)), Session: fmt.Sprint("s", r.IntN(9)),
				Kind: mnemotype.Kinds[r.IntN(len(mnemotype.Kinds))], Embedding: []float32{1, float32(r.IntN(5))}, EmbeddingModel: "m"}})
			if err != nil {
				t.Fatal(err)
			}
		}
		if round%97 == 0 || round > 2900 {
			checkPostings(t, x)
		}
	}
	checkPostings(t, x)
}
