package postgres

import (
	"runtime"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/mnemo-dev/mnemo/internal/ftstoken"
)

// The fields of the full-text index.
const (
	fieldContent = iota
	fieldActor
	fieldTime
	fieldContext
	numFields
)

// fieldNames name the fields in errors.
var fieldNames = [numFields]string{"content", "actor", "time", "context"}

// A posting's counts of its token in the four fields (tf), packed 16 bits
// each, content lowest, each saturating at 65535.
const tfMax = 1<<16 - 1

// packTF packs four fields' counts.
func packTF(tf [numFields]int) int64 {
	var v uint64
	for c := numFields - 1; c >= 0; c-- {
		v = v<<16 | uint64(min(tf[c], tfMax))
	}
	return int64(v)
}

// unpackTF is packTF's inverse.
func unpackTF(v int64) [numFields]float64 {
	var out [numFields]float64
	u := uint64(v)
	for c := range numFields {
		out[c] = float64(u & tfMax)
		u >>= 16
	}
	return out
}

// fieldMask selects the packed counts of the fields with a weight.
func fieldMask(weights [numFields]float64) int64 {
	var m uint64
	for c := range numFields {
		if weights[c] > 0 {
			m |= tfMax << (16 * c)
		}
	}
	return int64(m)
}

// maxLexemeBytes bounds an indexed token: a B-tree entry must fit in a
// third of a page. Longer tokens (32 KiB at most) are cut, in documents and
// queries alike.
const maxLexemeBytes = 2000

// lexeme returns tok as the store indexes it: at most maxLexemeBytes, and
// valid UTF-8 (a token cut may end inside a character; PostgreSQL text
// must be valid).
func lexeme(tok []byte) string {
	tok = tok[:min(len(tok), maxLexemeBytes)]
	for len(tok) > 0 && !utf8.Valid(tok) {
		tok = tok[:len(tok)-1]
	}
	return string(tok)
}

// termTokens tokenizes a query term as documents are tokenized.
func termTokens(tk *ftstoken.Tokenizer, term string) []string {
	var toks []string
	tk.Tokenize(term, func(tok []byte, _ int) {
		if lx := lexeme(tok); lx != "" {
			toks = append(toks, lx)
		}
	})
	return toks
}

// entry is a memory's index entry: its fields' lengths, and its distinct
// lexemes (sorted) with their packed counts.
type entry struct {
	lens    [numFields]int32
	lexemes []string
	tf      []int64
}

// buildEntry tokenizes a memory's fields.
func buildEntry(fields [numFields]string) entry {
	var b entryBuilder
	var parts [numFields][]string
	for f, text := range fields {
		parts[f] = []string{text}
	}
	return b.build(parts)
}

// entryBuilder builds index entries, tokenizing each text once: a turn's
// content is indexed in its own entry and again in the context of each of
// the turns after it (a field of several parts joined by a line break
// tokenizes as its parts do, one after the other: a line break separates
// tokens).
type entryBuilder struct {
	tk   ftstoken.Tokenizer
	seen map[string]*textTokens
	// held is the bytes of the texts seen keeps.
	held int
}

// maxSeenBytes bounds the texts an entryBuilder keeps between calls (one
// call of tokenizeAll keeps all of its own).
const maxSeenBytes = 16 << 20

// textTokens is a text's tokens as an entry counts them: how many, and
// each distinct lexeme with its count.
type textTokens struct {
	n      int32
	lex    []string
	counts []int32
}

// tokens returns text's tokens, tokenizing it at its first use.
func (b *entryBuilder) tokens(text string) *textTokens {
	if t, ok := b.seen[text]; ok {
		return t
	}
	t := tokenize(&b.tk, text)
	b.keep(text, t)
	return t
}

// keep adds text's tokens t to the texts seen.
func (b *entryBuilder) keep(text string, t *textTokens) {
	if b.held += len(text); b.held > maxSeenBytes {
		clear(b.seen) // a rebuild's whole profile
		b.held = len(text)
	}
	if b.seen == nil {
		b.seen = map[string]*textTokens{}
	}
	b.seen[text] = t
}

// tokenize counts text's tokens with tk.
func tokenize(tk *ftstoken.Tokenizer, text string) *textTokens {
	t := &textTokens{}
	at := map[string]int{}
	tk.Tokenize(text, func(tok []byte, _ int) {
		t.n++
		lx := lexeme(tok)
		if lx == "" {
			return
		}
		i, ok := at[lx]
		if !ok {
			i = len(t.lex)
			at[lx] = i
			t.lex, t.counts = append(t.lex, lx), append(t.counts, 0)
		}
		t.counts[i]++
	})
	return t
}

// tokenizeAll tokenizes the texts not seen yet, on every core, and keeps
// them (a write's contents: its entries and the contexts that hold them
// are built from these).
func (b *entryBuilder) tokenizeAll(texts []string) {
	var todo []string
	fresh := map[string]bool{}
	had := map[string]*textTokens{} // the call's texts seen before
	for _, t := range texts {
		if tt, ok := b.seen[t]; ok {
			had[t] = tt
		} else if !fresh[t] {
			fresh[t] = true
			todo = append(todo, t)
		}
	}
	size := 0
	for _, t := range todo {
		size += len(t)
	}
	if b.held+size > maxSeenBytes {
		// Room made before, keeping the call's texts (its entries are
		// built from them): the bound holds between calls.
		clear(b.seen)
		b.held = 0
		for t, tt := range had {
			b.seen[t] = tt
			b.held += len(t)
		}
	}
	out := make([]*textTokens, len(todo))
	inParallel(len(todo), func(lo, hi int) {
		var tk ftstoken.Tokenizer
		for i := lo; i < hi; i++ {
			out[i] = tokenize(&tk, todo[i])
		}
	})
	if b.seen == nil {
		b.seen = make(map[string]*textTokens, len(todo))
	}
	for i, t := range todo {
		b.seen[t] = out[i]
	}
	b.held += size
}

// buildAll returns the entries of memories whose fields are the parts
// given, built on every core: the texts are tokenized first (tokenizeAll),
// then only read.
func (b *entryBuilder) buildAll(fields [][numFields][]string) []entry {
	var texts []string
	for _, f := range fields {
		for _, parts := range f {
			texts = append(texts, parts...)
		}
	}
	b.tokenizeAll(texts)
	out := make([]entry, len(fields))
	inParallel(len(fields), func(lo, hi int) {
		var tk ftstoken.Tokenizer
		get := func(text string) *textTokens {
			if t, ok := b.seen[text]; ok {
				return t
			}
			return tokenize(&tk, text) // not reached: tokenizeAll kept every text
		}
		for i := lo; i < hi; i++ {
			out[i] = buildFrom(fields[i], get)
		}
	})
	return out
}

// inParallelMin is the least number of items worth a goroutine each.
const inParallelMin = 256

// inParallel calls fn over [0, n) in chunks, one goroutine per core (fn
// once, on this goroutine, for small n).
func inParallel(n int, fn func(lo, hi int)) {
	parts := min(runtime.GOMAXPROCS(0), n/inParallelMin)
	if parts <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + parts - 1) / parts
	for lo := 0; lo < n; lo += chunk {
		wg.Go(func() { fn(lo, min(lo+chunk, n)) })
	}
	wg.Wait()
}

// build returns the entry of a memory whose fields are the parts given
// (each field its parts joined by line breaks).
func (b *entryBuilder) build(fields [numFields][]string) entry {
	return buildFrom(fields, b.tokens)
}

// buildFrom builds an entry from the tokens of its fields' parts (get).
func buildFrom(fields [numFields][]string, get func(string) *textTokens) entry {
	var d entry
	counts := make(map[string]*[numFields]int, 64)
	for f, parts := range fields {
		for _, text := range parts {
			t := get(text)
			d.lens[f] += t.n
			for i, lx := range t.lex {
				c := counts[lx]
				if c == nil {
					c = new([numFields]int)
					counts[lx] = c
				}
				c[f] += int(t.counts[i])
			}
		}
	}
	d.lexemes = make([]string, 0, len(counts))
	for lx := range counts {
		d.lexemes = append(d.lexemes, lx)
	}
	slices.Sort(d.lexemes)
	d.tf = make([]int64, len(d.lexemes))
	for i, lx := range d.lexemes {
		d.tf[i] = packTF(*counts[lx])
	}
	return d
}

// inContent reports whether lexeme i of d occurs in the content.
func (d *entry) inContent(i int) bool { return d.tf[i]&tfMax != 0 }

// phraseCounts counts the occurrences of phrase ph (tokens at consecutive
// positions of one field) in each of fields.
func phraseCounts(tk *ftstoken.Tokenizer, fields [numFields]string, ph []string) [numFields]float64 {
	var out [numFields]float64
	var toks []string
	for f, text := range fields {
		toks = toks[:0]
		tk.Tokenize(text, func(tok []byte, _ int) { toks = append(toks, lexeme(tok)) })
		for p := 0; p+len(ph) <= len(toks); p++ {
			if slices.Equal(toks[p:p+len(ph)], ph) {
				out[f]++
			}
		}
	}
	return out
}
