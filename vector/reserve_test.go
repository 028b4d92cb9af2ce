package vector

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// TestIndex_Reserve: an index that reserved room for the memories it is
// then given row by row page after page grows none of its slices, and
// encodes to the same bytes as one that did not reserve.
func TestIndex_Reserve(t *testing.T) {
	t.Parallel()
	const n, page, dim = 300, 64, 8
	rng := rand.New(rand.NewPCG(1, 2))
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	mems := make([]mnemotype.Memory, n)
	for i := range mems {
		m := mnemotype.Memory{ID: fmt.Sprintf("m%03d", i), Profile: "p", Kind: mnemotype.KindEpisodic, Session: fmt.Sprintf("s%d", i%7),
			Importance: mnemotype.DefaultImportance, CreatedAt: at, AccessedAt: at, OccurredAt: at.Add(time.Duration(i) * time.Minute)}
		if i%5 != 1 { // the first memory has an embedding, some others none
			m.Embedding, m.EmbeddingModel = make([]float32, dim), "m"
			for j := range m.Embedding {
				m.Embedding[j] = rng.Float32() - 0.5
			}
		}
		mems[i] = m
	}
	for _, tc := range []struct {
		name string
		make func() *Index
	}{{"dimension from the first embedding", New}, {"dimension given", func() *Index { return NewDim(dim) }}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reserved, plain := tc.make(), tc.make()
			reserved.Reserve(n)
			var rowsCap, vecsCap int
			for lo := 0; lo < n; lo += page {
				batch := mems[lo:min(lo+page, n)]
				for _, x := range []*Index{reserved, plain} {
					if err := x.Upsert(batch); err != nil {
						t.Fatal(err)
					}
				}
				if lo == 0 {
					rowsCap, vecsCap = cap(reserved.rows), cap(reserved.vecs)
					if rowsCap < n || vecsCap < n*dim {
						t.Fatalf("after Reserve(%d) and a page: room for %d rows and %d floats", n, rowsCap, vecsCap)
					}
				}
			}
			if cap(reserved.rows) != rowsCap || cap(reserved.vecs) != vecsCap {
				t.Errorf("slices grew after Reserve: rows %d → %d, floats %d → %d", rowsCap, cap(reserved.rows), vecsCap, cap(reserved.vecs))
			}
			var a, b bytes.Buffer
			if err := reserved.Encode(&a); err != nil {
				t.Fatal(err)
			}
			if err := plain.Encode(&b); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Error("the index that reserved room encodes differently")
			}
		})
	}
}
