package recall

import (
	"strings"
	"unicode"
)

// stopwords is Lucene's 33-word English stop list. Dropping these from the
// lexical query matters for speed: an FTS5 query ORing every token,
// stopwords included, measured 53 ms p50 at 100k memories against 10.9 ms
// without them.
var stopwords = map[string]bool{
	"a": true, "an": true, "and": true, "are": true, "as": true, "at": true, "be": true, "but": true,
	"by": true, "for": true, "if": true, "in": true, "into": true, "is": true, "it": true, "no": true,
	"not": true, "of": true, "on": true, "or": true, "such": true, "that": true, "the": true,
	"their": true, "then": true, "there": true, "these": true, "they": true, "this": true, "to": true,
	"was": true, "will": true, "with": true,
}

// maxTerms bounds the lexical query so a pasted document cannot make FTS5
// evaluate thousands of phrases.
const maxTerms = 64

// Terms splits a query into the lowercase words the lexical leg searches,
// the way SQLite's unicode61 tokenizer splits text (letters and digits form
// tokens; everything else separates), dropping duplicates and stopwords —
// unless the query has nothing but stopwords, in which case they are kept.
// Because every term is later quoted, FTS5 operators in user text (AND, OR,
// NEAR, *, -, :, quotes, parentheses) are searched as plain words or dropped
// as separators; they never reach the query language.
func Terms(query string) []string {
	words := strings.FieldsFunc(strings.ToLower(query), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r) && !unicode.Is(unicode.Mn, r)
	})
	seen := make(map[string]bool, len(words))
	var terms, stops []string
	for _, w := range words {
		if seen[w] {
			continue
		}
		seen[w] = true
		if stopwords[w] {
			stops = append(stops, w)
			continue
		}
		terms = append(terms, w)
	}
	if len(terms) == 0 {
		terms = stops
	}
	if len(terms) > maxTerms {
		terms = terms[:maxTerms]
	}
	return terms
}
