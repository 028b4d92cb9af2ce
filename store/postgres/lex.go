package postgres

import (
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mnemo-dev/mnemo/internal/ftstoken"
)

// The fields of the full-text index, as tsvector weight labels.
const (
	fieldContent = iota
	fieldActor
	fieldTime
	fieldContext
	numFields
)

// fieldLabels are the fields' weight labels, by field.
var fieldLabels = [numFields]byte{'A', 'B', 'C', 'D'}

// fieldNames name the fields in errors.
var fieldNames = [numFields]string{"content", "actor", "time", "context"}

// PostgreSQL's tsvector limits: positions 1-16383 (higher ones are stored
// as 16383), at most 256 positions per lexeme, lexemes under 2 KiB. A
// field past position 16383 (a memory of some 100 KiB of text) has its
// later occurrences counted once per term; BM25's term frequency
// saturates long before.
const (
	maxPos         = 16383
	maxPosPerTerm  = 256
	maxLexemeBytes = 2046
)

// lexeme returns tok as the store indexes it: valid UTF-8 (a token cut at
// the tokenizer's maximum size may end inside a character) and ok false
// when too long for a tsvector.
func lexeme(tok []byte) (string, bool) {
	for len(tok) > 0 && !utf8.Valid(tok) {
		tok = tok[:len(tok)-1]
	}
	return string(tok), len(tok) > 0 && len(tok) <= maxLexemeBytes
}

// termTokens tokenizes a query term as documents are tokenized; ok is
// false when a token cannot be indexed (the term then matches nothing).
func termTokens(tk *ftstoken.Tokenizer, term string) (toks []string, ok bool) {
	ok = true
	tk.Tokenize(term, func(tok []byte, _ int) {
		lx, fine := lexeme(tok)
		ok = ok && fine
		toks = append(toks, lx)
	})
	return toks, ok
}

// occurrence is one position of a lexeme in a memory's fields.
type occurrence struct {
	pos   int
	field int
}

// buildLex tokenizes a memory's fields and returns its tsvector in
// PostgreSQL's text form, with each field's length in tokens. Fields are
// one position apart, so that no phrase spans two of them.
func buildLex(tk *ftstoken.Tokenizer, fields [numFields]string) (string, [numFields]int32) {
	var lens [numFields]int32
	occ := map[string][]occurrence{}
	pos := 1
	for f, text := range fields {
		tk.Tokenize(text, func(tok []byte, _ int) {
			lens[f]++
			p := min(pos, maxPos)
			pos++
			lx, ok := lexeme(tok)
			if !ok {
				return
			}
			os := occ[lx]
			if len(os) >= maxPosPerTerm || (len(os) > 0 && os[len(os)-1].pos == p) {
				return
			}
			occ[lx] = append(os, occurrence{p, f})
		})
		pos++
	}
	keys := make([]string, 0, len(occ))
	for k := range occ {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		writeQuoted(&b, k)
		b.WriteByte(':')
		for j, o := range occ[k] {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(o.pos))
			b.WriteByte(fieldLabels[o.field])
		}
	}
	return b.String(), lens
}

// writeQuoted writes s as a quoted lexeme of tsvector and tsquery text:
// quotes doubled, backslashes escaped.
func writeQuoted(b *strings.Builder, s string) {
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\'':
			b.WriteString("''")
		case '\\':
			b.WriteString(`\\`)
		default:
			b.WriteByte(s[i])
		}
	}
	b.WriteByte('\'')
}

// tsquery renders terms (each a phrase of tokens) as tsquery text: any of
// them (or all when all), each token restricted to the weighted fields
// (labels, "" for every field).
func tsquery(phrases [][]string, all bool, labels string) string {
	var b strings.Builder
	for i, ph := range phrases {
		if i > 0 {
			if all {
				b.WriteString(" & ")
			} else {
				b.WriteString(" | ")
			}
		}
		b.WriteByte('(')
		for j, tok := range ph {
			if j > 0 {
				b.WriteString(" <-> ")
			}
			writeQuoted(&b, tok)
			if labels != "" {
				b.WriteByte(':')
				b.WriteString(labels)
			}
		}
		b.WriteByte(')')
	}
	return b.String()
}
