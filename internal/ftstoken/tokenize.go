package ftstoken

// MaxTokenSize is the longest term FTS5 stores, in bytes
// (FTS5_MAX_TOKEN_SIZE). Its tokenizers do not cut tokens, but FTS5 cuts
// longer ones to this size, even within a UTF-8 sequence, when it indexes
// a document or looks a query term up; this package's tokens come cut.
const MaxTokenSize = 32768

// maxStemSize is the longest token the Porter stemmer stems, in bytes
// (FTS5_PORTER_MAX_TOKEN); it leaves longer ones, and ones shorter than 3
// bytes, as they are.
const maxStemSize = 64

// Property bits of a code point in the generated tables.
const (
	propStart = 0x8000 // starts a token (and continues one)
	propCont  = 0x4000 // continues a token: propStart, or a diacritic
	foldMask  = 0x3FFF // index into folds; 0 when it folds to itself
)

// Tokenizer tokenizes text as FTS5's 'porter unicode61' tokenizer does,
// reusing its buffer from call to call. The zero value is ready to use. A
// Tokenizer must not be used by two goroutines at once.
type Tokenizer struct {
	buf []byte
}

// Tokenize calls fn for each token of text, in order: the folded, stemmed
// term FTS5 stores for it, and its position (0, 1, 2, ...). token is valid
// only until fn returns; it must not be retained or modified (comparing it
// with string(token) == s does not allocate).
func (t *Tokenizer) Tokenize(text string, fn func(token []byte, pos int)) {
	buf := t.buf[:0]
	pos := 0
	i, n := 0, len(text)
	for {
		// Skip separators up to the first character of a token, and
		// fold that character into buf.
		for {
			if i >= n {
				t.buf = buf
				return
			}
			b := text[i]
			if b < 0x80 {
				i++
				if f := asciiFold[b]; f != 0 {
					buf = append(buf, f)
					break
				}
				continue
			}
			var c uint32
			c, i = decode(text, i)
			if v := prop(c); v&propStart != 0 {
				buf = appendFolded(buf, c, v)
				break
			}
		}
		// The token's other characters.
		for i < n {
			b := text[i]
			if b < 0x80 {
				f := asciiFold[b]
				if f == 0 {
					break
				}
				if len(buf) < MaxTokenSize {
					buf = append(buf, f)
				}
				i++
				continue
			}
			c, next := decode(text, i)
			i = next
			v := prop(c)
			if v&propCont == 0 {
				break
			}
			if len(buf) < MaxTokenSize {
				buf = appendFolded(buf, c, v)
			}
		}
		tok := buf
		switch {
		case len(tok) >= 3 && len(tok) <= maxStemSize:
			tok = stem(tok)
		case len(tok) > MaxTokenSize:
			tok = tok[:MaxTokenSize]
		}
		fn(tok, pos)
		pos++
		buf = tok[:0] // stem may have grown it
	}
}

// Tokenize calls fn for each token of text as FTS5's 'porter unicode61'
// tokenizer produces it for a document: the folded, stemmed term FTS5
// stores, and its position (0, 1, 2, ...). A Tokenizer does the same
// without allocating a string per token.
func Tokenize(text string, fn func(token string, pos int)) {
	var t Tokenizer
	t.Tokenize(text, func(tok []byte, pos int) { fn(string(tok), pos) })
}

// Tokens returns the tokens of text in order, as Tokenize produces them.
func Tokens(text string) []string {
	var t Tokenizer
	return t.AppendTokens(nil, text)
}

// AppendTokens appends the tokens of text to dst, in order, and returns the
// extended slice. The token at position p is dst[len(dst)+p] of the
// original dst.
func (t *Tokenizer) AppendTokens(dst []string, text string) []string {
	t.Tokenize(text, func(tok []byte, _ int) { dst = append(dst, string(tok)) })
	return dst
}

// Count returns the number of tokens of text: the document length FTS5's
// bm25() uses for a one-column row holding text.
func (t *Tokenizer) Count(text string) int {
	n := 0
	t.Tokenize(text, func([]byte, int) { n++ })
	return n
}

// decode reads the character at s[i] as FTS5 reads UTF-8 (its
// FTS5_READ_UTF8), returning it and the index past it. A lead byte from
// 0xC0 takes every continuation byte that follows, however many (the value
// shifting in 32 bits); a value below 0x80, a surrogate, U+FFFE or U+FFFF
// read that way becomes U+FFFD. A byte from 0x80 to 0xBF outside a sequence
// is the code point of the same value. Values past U+10FFFF stay as they
// are.
func decode(s string, i int) (uint32, int) {
	c := uint32(s[i])
	i++
	if c < 0xC0 {
		return c, i
	}
	switch {
	case c < 0xE0:
		c &= 0x1F
	case c < 0xF0:
		c &= 0x0F
	case c < 0xF8:
		c &= 0x07
	case c < 0xFC:
		c &= 0x03
	case c < 0xFE:
		c &= 0x01
	default:
		c = 0
	}
	for i < len(s) && s[i]&0xC0 == 0x80 {
		c = c<<6 + uint32(s[i]&0x3F)
		i++
	}
	if c < 0x80 || c&0xFFFFF800 == 0xD800 || c&0xFFFFFFFE == 0xFFFE {
		c = 0xFFFD
	}
	return c, i
}

// prop returns the property value of a code point read by decode.
func prop(c uint32) uint16 {
	if c >= tableLimit {
		return propStart | propCont
	}
	return stage2[int(stage1[c/blockSize])*blockSize+int(c%blockSize)]
}

// appendFolded appends c, of property value v, folded, as FTS5 writes it:
// nothing when it folds to 0, else in UTF-8, values past U+10FFFF in four
// bytes holding their low 21 bits.
func appendFolded(buf []byte, c uint32, v uint16) []byte {
	if k := v & foldMask; k != 0 {
		c = uint32(folds[k])
	}
	switch {
	case c == 0:
		return buf
	case c < 0x80:
		return append(buf, byte(c))
	case c < 0x800:
		return append(buf, 0xC0|byte(c>>6&0x1F), 0x80|byte(c&0x3F))
	case c < 0x10000:
		return append(buf, 0xE0|byte(c>>12&0x0F), 0x80|byte(c>>6&0x3F), 0x80|byte(c&0x3F))
	default:
		return append(buf, 0xF0|byte(c>>18&0x07), 0x80|byte(c>>12&0x3F), 0x80|byte(c>>6&0x3F), 0x80|byte(c&0x3F))
	}
}
