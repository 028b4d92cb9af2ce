package glove

import (
	"bytes"
	"unicode"
	"unicode/utf8"
)

// Tokenisation follows how the vocabulary looks. GloVe 6B was trained on
// lowercased, Penn-Treebank-tokenised Wikipedia and Gigaword; the npm package
// keeps the words made of ASCII letters and hyphens ("well-known",
// "state-of-the-art", "e-mail") plus a few dozen single punctuation marks, and
// drops every token with a digit, an apostrophe or a period ("n't", "'s",
// "u.s.", "1990s"). So:
//
//   - a word is a run of letters and digits, with apostrophes and hyphens kept
//     when they join two letters or digits; everything else separates words
//     (punctuation marks carry no topic and are not looked up);
//   - words are lowercased and common Latin accents are folded ("café" →
//     "cafe"), since the vocabulary is ASCII;
//   - clitics are split as the Treebank does and the clitic itself dropped
//     ("caroline's" → "caroline", "i'm" → "i"), except "n't", which becomes
//     "not" ("don't" → "do not", "can't" → "can not", "won't" → "will not");
//   - a hyphenated word is looked up whole and, when that fails, part by part
//     ("self-care" is a word, "dog-friendly" becomes "dog" "friendly");
//   - a capitalised word inside a sentence ("Caroline", "Sweden") is most
//     likely a name and weighs titleWeight (0.25 by default) times its SIF
//     weight: in one person's memories names recur everywhere and say little
//     about what a memory is about, and the lexical leg matches them exactly
//     (measured on locomo-dev: dense recall@10 0.422 → 0.491). All-capital
//     words ("JWT", "LGBTQ") are acronyms and keep their weight;
//   - a word still unknown (a number, a new name, a typo) is ignored. Giving
//     unknown words a fixed pseudo-random vector derived from their hash was
//     measured and rejected: recall@10 0.509 → 0.502 (scale 0.25), 0.482 (0.5).

// maxWordLen bounds the bytes of one word; longer runs are cut there (no
// vocabulary word is that long).
const maxWordLen = 64

// shape is a word's capitalisation in the original text.
type shape uint8

const (
	shapeLower   shape = iota // "dog", "3", or anything else
	shapeTitle                // "Caroline": an upper-case letter, then lower case
	shapeUpper                // "JWT", "LGBTQ": two or more letters, all upper case
	shapeInitial shape = 4    // flag: the word starts the text or a sentence
)

// scanWords calls fn with each lowercased word of text, in order, and its
// shape. buf is scratch space, returned for reuse; fn's word is only valid
// during the call.
func scanWords(text string, buf []byte, fn func(word []byte, s shape)) []byte {
	buf = buf[:0]
	initial := true      // no word since the start or the last sentence end
	upper, lower := 0, 0 // letters of the current word in each case
	firstUpper := false  // the current word starts with an upper-case letter
	flush := func() {
		if len(buf) > 0 {
			s := shapeLower
			switch {
			case upper >= 2 && lower == 0:
				s = shapeUpper
			case firstUpper && lower > 0:
				s = shapeTitle
			}
			if initial {
				s |= shapeInitial
			}
			fn(buf, s)
			buf = buf[:0]
			initial = false
		}
		upper, lower, firstUpper = 0, 0, false
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case 'a' <= c && c <= 'z':
				buf = append(buf, c)
				lower++
			case '0' <= c && c <= '9':
				buf = append(buf, c)
			case 'A' <= c && c <= 'Z':
				if len(buf) == 0 {
					firstUpper = true
				}
				buf = append(buf, c+('a'-'A'))
				upper++
			case c == '\'' || c == '-':
				if len(buf) > 0 && wordStartsAt(text, i) {
					buf = append(buf, c)
				} else {
					flush()
				}
			case c == '.' || c == '!' || c == '?' || c == '\n':
				flush()
				initial = true
			default:
				flush()
			}
		} else {
			r, size := utf8.DecodeRuneInString(text[i:])
			i += size
			switch {
			case r == '’' || r == '‘' || r == 'ʼ':
				if len(buf) > 0 && wordStartsAt(text, i) {
					buf = append(buf, '\'')
				} else {
					flush()
				}
			case r == '‐' || r == '‑':
				if len(buf) > 0 && wordStartsAt(text, i) {
					buf = append(buf, '-')
				} else {
					flush()
				}
			case unicode.Is(unicode.Mn, r):
				// A combining accent: dropped, as folding does.
			case unicode.IsLetter(r) || unicode.IsDigit(r):
				if unicode.IsUpper(r) {
					if len(buf) == 0 {
						firstUpper = true
					}
					upper++
				} else if unicode.IsLower(r) {
					lower++
				}
				if f := foldLatin(r); f != 0 {
					buf = append(buf, f)
				} else {
					buf = utf8.AppendRune(buf, unicode.ToLower(r))
				}
			case r == '…':
				flush()
				initial = true
			default:
				flush()
			}
		}
		if len(buf) >= maxWordLen {
			flush()
		}
	}
	flush()
	return buf
}

// wordStartsAt reports whether text[i:] starts with a letter or digit.
func wordStartsAt(text string, i int) bool {
	if i >= len(text) {
		return false
	}
	c := text[i]
	if c < utf8.RuneSelf {
		return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	r, _ := utf8.DecodeRuneInString(text[i:])
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// foldLatin maps an accented Latin letter to its lowercase ASCII base letter,
// or returns 0.
func foldLatin(r rune) byte {
	if r < 0xC0 || r > 0x17F {
		return 0
	}
	// U+00C0–U+017F (Latin-1 Supplement and Latin Extended-A), lowercased and
	// stripped of accents; 0 for non-letters.
	const fold = "aaaaaaaceeeeiiiidnooooo\x00ouuuuytsaaaaaaaceeeeiiiidnooooo\x00ouuuuyty" +
		"aaaaaaccccccccddddeeeeeeeeeegggggggghhhhiiiiiiiiiiiijjkkkllllllllllnnnnnnnnnoooooooorrrrrrssssssssttttttuuuuuuuuuuuuwwyyyzzzzzzs"
	return fold[r-0xC0]
}

// Clitics the Treebank splits off and the vocabulary drops.
var clitics = [][]byte{[]byte("s"), []byte("re"), []byte("m"), []byte("ll"), []byte("ve"), []byte("d")}

var (
	wordNot = []byte("not")
	// Treebank stems of "n't" contractions that are not the verb itself.
	ntStems = map[string][]byte{"ca": []byte("can"), "wo": []byte("will"), "sha": []byte("shall"), "ai": []byte("is")}
)

// addWord adds word's vectors to acc and reports whether any part of it was
// known.
func (m *Model) addWord(word []byte, w float32, acc []float32) bool {
	if bytes.IndexByte(word, '\'') < 0 && bytes.IndexByte(word, '-') < 0 {
		if i := m.lookup(word); i >= 0 {
			m.add(i, w, acc)
			return true
		}
		return false
	}
	if k := bytes.LastIndexByte(word, '\''); k >= 0 {
		base, suffix := word[:k], word[k+1:]
		if string(suffix) == "t" && len(base) > 1 && base[len(base)-1] == 'n' {
			base = base[:len(base)-1]
			if s, ok := ntStems[string(base)]; ok {
				base = s
			}
			found := m.addWord(base, w, acc)
			return m.addWord(wordNot, w, acc) || found
		}
		for _, c := range clitics {
			if bytes.Equal(suffix, c) {
				return m.addWord(base, w, acc)
			}
		}
	}
	if i := m.lookup(word); i >= 0 { // a hyphenated vocabulary word
		m.add(i, w, acc)
		return true
	}
	found := false
	for part := range bytes.FieldsFuncSeq(word, isJoiner) {
		if m.addWord(part, w, acc) {
			found = true
		}
	}
	return found
}

func isJoiner(r rune) bool { return r == '\'' || r == '-' }
