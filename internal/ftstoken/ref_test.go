package ftstoken_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mnemo-dev/mnemo/internal/ftstoken"
	"github.com/mnemo-dev/mnemo/internal/ftstoken/internal/fts5ref"
)

// tokenizeOption is the FTS5 tokenizer this package reproduces, as mnemo's
// tables declare it.
const tokenizeOption = "porter unicode61"

// reference opens an FTS5 reference database in a fresh directory.
func reference(tb testing.TB) *fts5ref.DB {
	tb.Helper()
	db, err := fts5ref.Open(filepath.Join(tb.TempDir(), "ref.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	return db
}

// tokenize is what this package makes of text, in the reference's terms.
func tokenize(tok *ftstoken.Tokenizer, text string) fts5ref.Doc {
	var d fts5ref.Doc
	tok.Tokenize(text, func(token []byte, pos int) {
		if pos != len(d.Tokens) { // shows as a mismatch
			d.Tokens = append(d.Tokens, fmt.Sprintf("<position %d after %d tokens>", pos, len(d.Tokens)))
		}
		d.Tokens = append(d.Tokens, string(token))
	})
	d.Len = len(d.Tokens)
	return d
}

// mismatch describes how got differs from FTS5's want, or returns "".
func mismatch(want, got fts5ref.Doc) string {
	if want.Len != len(want.Tokens) {
		return fmt.Sprintf("FTS5 counts %d tokens but stores %d", want.Len, len(want.Tokens))
	}
	for i := 0; i < len(want.Tokens) || i < len(got.Tokens); i++ {
		switch {
		case i >= len(got.Tokens):
			return fmt.Sprintf("%d tokens, FTS5 %d: FTS5's next is %s at position %d", len(got.Tokens), len(want.Tokens), quote(want.Tokens[i]), i)
		case i >= len(want.Tokens):
			return fmt.Sprintf("%d tokens, FTS5 %d: the extra one is %s at position %d", len(got.Tokens), len(want.Tokens), quote(got.Tokens[i]), i)
		case got.Tokens[i] != want.Tokens[i]:
			return fmt.Sprintf("position %d: %s, FTS5 %s", i, quote(got.Tokens[i]), quote(want.Tokens[i]))
		}
	}
	return ""
}

// quote quotes a token, shortening a long one.
func quote(s string) string {
	if len(s) > 80 {
		return fmt.Sprintf("%q…(%d bytes)", s[:40], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// excerpt shortens a text for a failure message.
func excerpt(s string) string {
	if len(s) <= 120 {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q…(%d bytes)", s[:120], len(s))
}

// compare tokenizes texts with FTS5 and with this package and reports
// every text whose tokens differ (up to a limit). It returns the number of
// tokens compared.
func compare(ctx context.Context, t testing.TB, ref *fts5ref.DB, texts []string) int {
	t.Helper()
	want, err := ref.Tokenize(ctx, tokenizeOption, texts)
	if err != nil {
		t.Fatalf("FTS5 (%s): %v", ref.Driver(), err)
	}
	var tok ftstoken.Tokenizer
	bad, n := 0, 0
	for i, text := range texts {
		n += want[i].Len
		if m := mismatch(want[i], tokenize(&tok, text)); m != "" {
			bad++
			if bad <= 20 {
				t.Errorf("%s: %s", excerpt(text), m)
			}
		}
	}
	if bad > 20 {
		t.Errorf("… %d texts differ in all", bad)
	}
	if bad > 0 {
		if v, err := ref.Version(ctx); err == nil && v != ftstoken.TablesVersion {
			t.Errorf("the tables come from SQLite %s, the linked one is %s: run go generate in internal/ftstoken", ftstoken.TablesVersion, v)
		}
	}
	return n
}
