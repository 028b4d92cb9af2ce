package postgres

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestBlock_RoundTrip: a block of postings decodes to what was encoded,
// for random counts and lengths up to their bounds.
func TestBlock_RoundTrip(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		block := r.Int64N(1 << 40)
		var ps []posting
		for rid := block << blockShift; rid < (block+1)<<blockShift; rid++ {
			if r.IntN(3) > 0 {
				continue
			}
			var tf [numFields]int
			for c := range tf {
				tf[c] = []int{0, 1, 2, r.IntN(tfMax + 1)}[r.IntN(4)]
			}
			ps = append(ps, posting{rid: rid, tf: packTF(tf), content: r.Uint32(), context: []uint32{0, 7, 1<<32 - 1}[r.IntN(3)]})
		}
		got, err := decodeBlock(nil, block, encodeBlock(ps))
		if err != nil || !slices.Equal(got, ps) {
			t.Fatalf("block %d: decoded %v, %v; want %v", block, got, err, ps)
		}
	}
}

// TestPackTF_Saturates: counts above 65535 are kept as 65535, the others
// exactly, each in its field.
func TestPackTF_Saturates(t *testing.T) {
	t.Parallel()
	got := unpackTF(packTF([numFields]int{3, 0, 70000, 65535}))
	if got != [numFields]float64{3, 0, 65535, 65535} {
		t.Errorf("unpackTF(packTF(3, 0, 70000, 65535)) = %v", got)
	}
}

// TestBuildEntry counts each token per field and each field's length.
func TestBuildEntry(t *testing.T) {
	t.Parallel()
	e := buildEntry([numFields]string{"Running runs ran", "Caroline", "Monday 8 May 2023", "Caroline runs"})
	if e.lens != [numFields]int32{3, 1, 4, 2} {
		t.Errorf("lens %v", e.lens)
	}
	i := slices.Index(e.lexemes, "run")
	if i < 0 || unpackTF(e.tf[i]) != [numFields]float64{2, 0, 0, 1} || !e.inContent(i) {
		t.Errorf("run: lexemes %v, counts %v", e.lexemes, unpackTF(e.tf[max(i, 0)]))
	}
	if j := slices.Index(e.lexemes, "carolin"); j < 0 || e.inContent(j) {
		t.Errorf("carolin: in content %v (lexemes %v)", j >= 0 && e.inContent(j), e.lexemes)
	}
}

// FuzzParseLSN: the Mnemo-Consistency header a client sends is parsed as
// a pg_lsn without panicking; what parses prints back as itself.
func FuzzParseLSN(f *testing.F) {
	for _, s := range []string{"0/0", "16/B374D848", "FFFFFFFF/FFFFFFFF", "", "/", "1/", "g/1", "1/2/3", "100000000/0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := parseLSN(s)
		if !ok {
			return
		}
		back, ok2 := parseLSN(formatLSN(v))
		if !ok2 || back != v {
			t.Fatalf("parseLSN(%q) = %x, which prints as %q and reads back as %x", s, v, formatLSN(v), back)
		}
	})
}
