// Package ftstoken is a TEMPORARY placeholder on branch h14-lex, replaced by
// the real port of FTS5's porter unicode61 tokenizer before merging.
package ftstoken

import (
	"strings"
	"unicode"
)

// Tokens is a placeholder.
func Tokens(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}
