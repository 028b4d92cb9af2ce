package ftstoken_test

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// encode writes the value c as FTS5 writes a character (FTS5_WRITE_UTF8):
// UTF-8, surrogates included, values past U+10FFFF in four bytes holding
// their low 21 bits. It lets a test send FTS5 any value up to 0x1FFFFF.
func encode(b *strings.Builder, c uint32) {
	switch {
	case c < 0x80:
		b.WriteByte(byte(c))
	case c < 0x800:
		b.Write([]byte{0xC0 | byte(c>>6&0x1F), 0x80 | byte(c&0x3F)})
	case c < 0x10000:
		b.Write([]byte{0xE0 | byte(c>>12&0x0F), 0x80 | byte(c>>6&0x3F), 0x80 | byte(c&0x3F)})
	default:
		b.Write([]byte{0xF0 | byte(c>>18&0x07), 0x80 | byte(c>>12&0x3F), 0x80 | byte(c>>6&0x3F), 0x80 | byte(c&0x3F)})
	}
}

// TestTokenize_EveryCodePoint: every value from 0 to 0x10FFFF, and every
// 257th one up to 0x1FFFFF, surrogates and non-characters included, is
// tokenized as FTS5 tokenizes it alone and inside a word.
func TestTokenize_EveryCodePoint(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("slow: 1.1 million code points through FTS5")
	}
	var values []uint32
	for c := uint32(0); c <= 0x10FFFF; c++ {
		values = append(values, c)
	}
	for c := uint32(0x110000); c <= 0x1FFFFF; c += 257 {
		values = append(values, c)
	}
	var texts []string
	const perText = 4096
	for len(values) > 0 {
		var b strings.Builder
		for _, c := range values[:min(perText, len(values))] {
			b.WriteByte(' ')
			encode(&b, c)
			b.WriteString(" b")
			encode(&b, c)
			b.WriteByte('c')
		}
		texts = append(texts, b.String())
		values = values[min(perText, len(values)):]
	}
	ref := reference(t)
	n := compare(t.Context(), t, ref, texts)
	t.Logf("%d texts, %d tokens compared with FTS5 (%s)", len(texts), n, ref.Driver())
}

// TestTokenize_MalformedUTF8: random byte sequences from 0x80 up, a lead
// byte followed by any number of continuation bytes (values overflowing 32
// bits, overlong forms, values past U+10FFFF, stray continuation bytes),
// alone and inside words, are read as FTS5 reads them.
func TestTokenize_MalformedUTF8(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	var texts []string
	for range 200 {
		var b strings.Builder
		for range 100 {
			if rng.IntN(2) == 0 {
				b.WriteByte(' ')
			}
			if rng.IntN(3) == 0 {
				b.WriteByte("aZ9e"[rng.IntN(4)])
			}
			b.WriteByte(byte(0x80 + rng.IntN(0x80)))
			for range rng.IntN(10) {
				b.WriteByte(byte(0x80 + rng.IntN(0x40)))
			}
			if rng.IntN(3) == 0 {
				b.WriteByte("bY8s"[rng.IntN(4)])
			}
		}
		texts = append(texts, b.String())
	}
	compare(t.Context(), t, reference(t), texts)
}
