package ftstoken_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo/internal/ftstoken"
	"github.com/mnemo-dev/mnemo/internal/ftstoken/internal/fts5ref"
)

// trickyCases are inputs where a tokenizer is easy to get wrong; the
// expected tokens are FTS5's, asked for when the test runs. FuzzTokenize
// seeds from them too.
var trickyCases = []struct{ name, text string }{
	// Folding and diacritics.
	{"accents", "café naïve Ångström ÀÉÎÕÜ àéîõü Æsir œuvre Øresund Łódź đ ħ ŧ ÿ Ÿ"},
	{"sharp s", "ß straße STRASSE ẞ"},
	{"ligatures", "ﬁnance ﬂuid ﬀ Ĳssel"},
	{"turkish i", "İstanbul ıssız I ı i̇"},
	{"greek sigma", "ΣΟΦΟΣ σοφός ς Σ ὈΔΥΣΣΕΎΣ"},
	{"greek accents", "ἀρχή Ἀθῆναι ῼ ᾳ ΐ"},
	{"cyrillic", "Москва ЁЖИК ёжик Ѐ"},
	{"deseret", "𐐀𐐁 𐐨"},
	{"fullwidth", "ＡＢＣ１２３ ｆｕｌｌ"},
	{"dotless and fold-to-ascii", "ǅ ǈ ǋ Ǳ ǲ ǳ ſ K Å"},
	{"combining inside", "cafe\u0301 e\u0301\u0301x a\u0300b n\u0303o"},
	{"combining at start", "\u0301cafe \u0308a \u0300"},
	{"combining alone", "\u0301 \u0300\u0301\u0302"},
	{"combining not diacritic", "x\u20dd a\u0345b a\u0332b a\u0350b a\u036fb"},
	{"combining after digit", "1\u0301 9\u0308x"},
	// Scripts without case.
	{"cjk", "東京都 日本語のテキスト 中文，标点。"},
	{"hangul", "한국어 텍스트"},
	{"arabic hebrew", "مرحبا بالعالم ٣٤٥ שלום"},
	{"thai devanagari", "สวัสดี नमस्ते"},
	{"emoji", "I ❤️ pizza 🍕🍕 👩‍👩‍👧 👍🏽 flag 🇫🇷"},
	{"private use and unassigned", "\ue000\uf8ff \U000f0000 \U0010fffd \U000e0080 \u0378 \U0003fffd"},
	// Digits and mixed tokens.
	{"versions", "v2.3 p17 COVID-19 3.14159 1,000,000 ipv6 x86_64"},
	{"other numbers", "Ⅻ ⅻ ²³ ½ x² ①"},
	{"apostrophes", "don't O’Reilly rock ’n’ roll it's students' work"},
	{"punctuation", "e-mail snake_case foo@bar.com http://example.com/a?b=c #tag $5 100%"},
	{"whitespace", "\t\n\r\v\fa\u00a0nbsp\u2003em\u3000ideo zero\u200bwidth\u200djoiner\u2028line"},
	{"empty", ""},
	{"only separators", " ,.;:!? -- \t\n"},
	// NUL bytes and invalid UTF-8.
	{"nul", "a\x00b \x00 ab\x00\x00cd\x00"},
	{"invalid bytes", "\xff ab\xffcd \xfe\xff \xc0\xaf \x80\xbf"},
	{"stray continuation", "a\xaa \xaa \xb5x \x80 \xbf"},
	{"truncated sequences", "\xc3 \xc3( \xe2\x82 \xf0\x9f\x98 caf\xc3"},
	{"surrogates and nonchars", "\xed\xa0\x80a \xed\xbf\xbf \xef\xbf\xbe \xef\xbf\xbfb \xf0\x9f\xbf\xbe"},
	{"overlong", "\xc1\xbf \xe0\x80\xaf \xe0\x82\x80 \xf0\x80\x80\x80 \xf0\x80\x82\x80x"},
	{"past U+10FFFF", "\xf4\x90\x80\x80 \xf7\xbf\xbf\xbf a\xf5\x80\x80\x80b \xf8\x88\x80\x80\x80 \xfc\x84\x80\x80\x80\x80"},
	{"long sequences", "\xc2\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80abc \xe1\xbf\xbf\xbf\xbf\xbf\xbf"},
	// Lengths around the stemmer's limits.
	{"two bytes", "is as ed es ss yy"},
	{"stem at 64 bytes", strings.Repeat("x", 60) + "ness"},
	{"no stem at 65 bytes", strings.Repeat("x", 61) + "ness"},
	{"no stem at 65 bytes folded", strings.Repeat("X", 61) + "NESS"},
	{"stem at 64 bytes with 2-byte letters", strings.Repeat("ж", 27) + "xabilities"},
	{"no stem at 65 bytes with 2-byte letters", strings.Repeat("ж", 28) + "abilities"},
	{"stem after folding to 64 bytes", strings.Repeat("É", 60) + "NESS"},
	{"diacritic dropped to 64 bytes", strings.Repeat("x", 60) + "ne\u0301\u0301ss"},
	// Lengths around FTS5's term limit.
	{"32768 bytes", strings.Repeat("a", 32768)},
	{"32769 bytes", strings.Repeat("a", 32769) + " b"},
	{"100000 bytes folded", strings.Repeat("Ab", 50000) + " c"},
	{"cut within a 2-byte character", "a" + strings.Repeat("ж", 17000) + " b"},
	{"cut within a 3-byte character", "a" + strings.Repeat("中", 11000) + " b"},
	{"3-byte characters up to the limit", "ab" + strings.Repeat("中", 11000)},
	{"cut within a 4-byte character", "ab" + strings.Repeat("𝐀", 9000)},
	{"cut within a folded character", "a" + strings.Repeat("Ж", 17000)},
	{"long token of drops", "a" + strings.Repeat("\u0301", 40000) + "b"},
	// The Porter stemmer.
	{"porter classics", "caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated troubled sized hopping tanned falling hissing fizzed failing filing happy sky"},
	{"porter step 2", "relational conditional rational valenci hesitanci digitizer conformabli radicalli differentli vileli analogousli vietnamization predication operator feudalism decisiveness hopefulness callousness formaliti sensitiviti sensibiliti"},
	{"porter step 3", "triplicate formative formalize electriciti electrical hopeful goodness"},
	{"porter step 4", "revival allowance inference airliner gyroscopic adjustable defensible irritant replacement adjustment dependent adoption homologou communism activate angulariti homologous effective bowdlerize"},
	{"porter step 5", "probate rate cease controll roll generalizations generalization hopefully formality"},
	{"porter short words", "sss ies sses eed ing ying eing aed aing ied bed bing yes eyes bees boy toys"},
	{"porter y", "say sayed saying played flying by y yy yyy syzygy"},
	{"porter digits and bytes", "2ing abc123ing 1sses 9ational naïvety caféing résumés größes"},
}

// TestTokenize_Tricky: on each tricky input, this package's tokens are
// FTS5's.
func TestTokenize_Tricky(t *testing.T) {
	t.Parallel()
	ref := reference(t)
	for _, tc := range trickyCases {
		t.Run(tc.name, func(t *testing.T) {
			compare(t.Context(), t, ref, []string{tc.text})
		})
	}
}

// TestTokenize_API: the ways of getting the tokens agree with each other.
func TestTokenize_API(t *testing.T) {
	t.Parallel()
	var tok ftstoken.Tokenizer
	for _, tc := range trickyCases {
		t.Run(tc.name, func(t *testing.T) {
			want := tokenize(&tok, tc.text).Tokens
			if got := ftstoken.Tokens(tc.text); !slices.Equal(got, want) {
				t.Errorf("Tokens = %q, want %q", got, want)
			}
			prefix := []string{"kept"}
			if got := tok.AppendTokens(prefix, tc.text); !slices.Equal(got, append(prefix, want...)) {
				t.Errorf("AppendTokens = %q, want %q after the prefix", got, want)
			}
			var got []string
			ftstoken.Tokenize(tc.text, func(token string, pos int) {
				if pos != len(got) {
					t.Fatalf("position %d after %d tokens", pos, len(got))
				}
				got = append(got, token)
			})
			if !slices.Equal(got, want) {
				t.Errorf("Tokenize = %q, want %q", got, want)
			}
			if n := tok.Count(tc.text); n != len(want) {
				t.Errorf("Count = %d, want %d", n, len(want))
			}
		})
	}
}

// TestTokenize_PorterRules: words made of every suffix the stemmer knows
// after stems of every measure and ending, and every short word over
// letters that steer its conditions, stem as FTS5 stems them.
func TestTokenize_PorterRules(t *testing.T) {
	t.Parallel()
	suffixes := []string{
		"s", "es", "ies", "sses", "ss", "eed", "ed", "ing", "at", "bl", "iz", "y", "e", "l", "ll",
		"ational", "tional", "enci", "anci", "izer", "logi", "bli", "alli", "entli", "eli", "ousli",
		"ization", "ation", "ator", "alism", "iveness", "fulness", "ousness", "aliti", "iviti", "biliti",
		"ical", "ness", "icate", "iciti", "ful", "ative", "alize",
		"al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "sion",
		"tion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
	}
	stems := []string{
		"", "b", "a", "y", "ab", "ba", "by", "yb", "ay", "bab", "bay", "tr", "tree", "hop", "fil", "fizz",
		"cont", "bow", "box", "oat", "abab", "trouble", "conflat", "valen", "sens", "relat", "geni",
		"xyz", "aaa", "bbb", "ss", "s", "t", "rest", "tent", "2", "é", "ab1", "BaB",
	}
	var words []string
	for _, s := range stems {
		for _, x := range suffixes {
			words = append(words, s+x)
			for _, y := range []string{"s", "es", "ed", "ing", "y", "e"} {
				words = append(words, s+x+y)
			}
		}
	}
	// Every word of 3 to 5 letters over an alphabet of vowels, 'y' and
	// the consonants the rules test.
	const alphabet = "aeysltz"
	var grow func(w string)
	grow = func(w string) {
		if len(w) >= 3 {
			words = append(words, w)
		}
		if len(w) < 5 {
			for _, c := range alphabet {
				grow(w + string(c))
			}
		}
	}
	grow("")
	// One text per 1000 words, so a mismatch names few.
	ref := reference(t)
	var texts []string
	for len(words) > 0 {
		n := min(len(words), 1000)
		texts = append(texts, strings.Join(words[:n], " "))
		words = words[n:]
	}
	compare(t.Context(), t, ref, texts)
}

// TestTokenize_Reference: the reference itself sees what the tests rely
// on: FTS5 stores every position (an empty token would show as a missing
// one) and cuts terms to MaxTokenSize bytes.
func TestTokenize_Reference(t *testing.T) {
	t.Parallel()
	ref := reference(t)
	docs, err := ref.Tokenize(t.Context(), tokenizeOption, []string{"Running DOGS", strings.Repeat("a", ftstoken.MaxTokenSize+10)})
	if err != nil {
		t.Fatal(err)
	}
	want := []fts5ref.Doc{{Tokens: []string{"run", "dog"}, Len: 2}, {Tokens: []string{strings.Repeat("a", ftstoken.MaxTokenSize)}, Len: 1}}
	for i := range want {
		if m := mismatch(want[i], docs[i]); m != "" {
			t.Errorf("document %d: %s", i, m)
		}
	}
}
