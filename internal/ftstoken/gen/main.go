// Command gen writes ftstoken's Unicode tables (tables.go) by asking
// SQLite's FTS5 how its unicode61 tokenizer (remove_diacritics=1, token
// categories "L* N* Co", the defaults that 'porter unicode61' uses) treats
// every code point: it indexes, for each code point c from U+0000 to
// U+10FFFF (surrogates, U+FFFE and U+FFFF left out: FTS5 reads them as
// U+FFFD), the document c alone and the document "b"+c+"c", and reads the
// stored terms back through an fts5vocab table of type 'instance'. c alone
// gives a token if and only if c starts a token, and that token is c
// folded; "b"+c+"c" gives one token "b"+fold(c)+"c" if c continues a token
// and the two tokens "b" and "c" if it separates.
//
// Run it with go generate in internal/ftstoken. It fails, writing nothing,
// if SQLite answers in a way the tables cannot hold.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"go/format"
	"log"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/mnemo-dev/mnemo/internal/ftstoken/internal/fts5ref"
)

// The table layout, shared with ../tables.go's readers: a code point c
// below limit has the property value stage2[stage1[c/blockSize]*blockSize
// + c%blockSize]; every code point from limit on starts a token and folds
// to itself.
const (
	blockSize = 64
	maxRune   = 0x10FFFF
	// Property bits (see ../tokenize.go).
	propStart = 0x8000 // starts a token (and continues one)
	propCont  = 0x4000 // continues a token
	foldMask  = 0x3FFF // index into folds; 0 for a code point that folds to itself
)

func main() {
	out := flag.String("o", "tables.go", "the Go file to write")
	flag.Parse()
	if err := run(context.Background(), *out); err != nil {
		log.Fatal(err)
	}
}

// point is what FTS5 does with one code point.
type point struct {
	start, cont bool // starts a token; continues one
	fold        rune // its folded form inside a token; -1 when dropped
}

func run(ctx context.Context, out string) error {
	dir, err := os.MkdirTemp("", "ftstoken-gen")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db, err := fts5ref.Open(filepath.Join(dir, "gen.db"))
	if err != nil {
		return err
	}
	defer db.Close()
	version, err := db.Version(ctx)
	if err != nil {
		return err
	}
	points, err := ask(ctx, db)
	if err != nil {
		return err
	}
	src, err := render(points, version)
	if err != nil {
		return err
	}
	return os.WriteFile(out, src, 0o644)
}

// skipped reports whether FTS5 cannot be asked about c: it reads a
// surrogate, U+FFFE and U+FFFF as U+FFFD.
func skipped(c rune) bool {
	return !utf8.ValidRune(c) || c == 0xFFFE || c == 0xFFFF
}

// ask returns what FTS5 does with every code point.
func ask(ctx context.Context, db *fts5ref.DB) ([]point, error) {
	points := make([]point, maxRune+1)
	const chunk = 1 << 16
	for lo := rune(0); lo <= maxRune; lo += chunk {
		var docs []string
		var cps []rune
		for c := lo; c < lo+chunk; c++ {
			if skipped(c) {
				continue
			}
			s := string(c)
			docs = append(docs, s, "b"+s+"c")
			cps = append(cps, c)
		}
		res, err := db.Tokenize(ctx, "unicode61", docs)
		if err != nil {
			return nil, fmt.Errorf("code points from %U: %w", lo, err)
		}
		for i, c := range cps {
			p, err := classify(c, res[2*i], res[2*i+1])
			if err != nil {
				return nil, err
			}
			points[c] = p
		}
	}
	return points, nil
}

// classify reads a code point's properties from the tokens of its two
// documents.
func classify(c rune, alone, inWord fts5ref.Doc) (point, error) {
	p := point{fold: -1}
	switch len(alone.Tokens) {
	case 0:
	case 1:
		p.start = true
		f, err := oneRune(alone.Tokens[0])
		if err != nil {
			return p, fmt.Errorf("%U alone: %w", c, err)
		}
		p.fold = f
	default:
		return p, fmt.Errorf("%U alone gives the tokens %q", c, alone.Tokens)
	}
	switch t := inWord.Tokens; {
	case len(t) == 1 && len(t[0]) >= 2 && strings.HasPrefix(t[0], "b") && strings.HasSuffix(t[0], "c"):
		p.cont = true
		f, err := oneRune(t[0][1 : len(t[0])-1])
		if err != nil {
			return p, fmt.Errorf("%U in a word: %w", c, err)
		}
		if p.start && f != p.fold {
			return p, fmt.Errorf("%U folds to %q alone and to %q in a word", c, alone.Tokens[0], t[0])
		}
		p.fold = f
	case len(t) == 2 && t[0] == "b" && t[1] == "c" && !p.start:
	default:
		return p, fmt.Errorf("%U in a word gives the tokens %q", c, t)
	}
	if c < utf8.RuneSelf && p.cont {
		want := c
		if 'A' <= c && c <= 'Z' {
			want += 'a' - 'A'
		}
		if !p.start || p.fold != want {
			return p, fmt.Errorf("ASCII %q: starts a token %v, folds to %q; want a token character folding to %q", c, p.start, p.fold, want)
		}
	}
	return p, nil
}

// oneRune returns the code point s holds, or -1 when s is empty.
func oneRune(s string) (rune, error) {
	if s == "" {
		return -1, nil
	}
	r, n := utf8.DecodeRuneInString(s)
	if r == utf8.RuneError && n <= 1 || n != len(s) {
		return 0, fmt.Errorf("folds to %q, not one code point", s)
	}
	return r, nil
}

// render writes the tables as Go source.
func render(points []point, version string) ([]byte, error) {
	// The code points FTS5 cannot be asked about are never looked up (the
	// tokenizer reads them as U+FFFD): give them a neighbour's value so
	// that they do not hold up the limit or add blocks.
	for c := range points {
		if skipped(rune(c)) {
			points[c] = points[c-1]
		}
	}
	limit := len(points)
	for limit > 0 && points[limit-1].start && points[limit-1].fold == rune(limit-1) {
		limit--
	}
	limit = (limit + blockSize - 1) / blockSize * blockSize

	var ascii [utf8.RuneSelf]byte
	for c := range ascii {
		if points[c].start {
			ascii[c] = byte(points[c].fold)
		}
	}

	folds := []rune{0} // index 0: folds to itself
	foldIndex := map[rune]int{}
	values := make([]uint16, limit)
	for c := 0; c < limit; c++ {
		p := points[c]
		var v uint16
		if p.start {
			v |= propStart
		}
		if p.cont {
			v |= propCont
		}
		if p.cont && p.fold != rune(c) {
			f := p.fold
			if f < 0 {
				f = 0 // dropped
			}
			k, ok := foldIndex[f]
			if !ok {
				k = len(folds)
				folds = append(folds, f)
				foldIndex[f] = k
			}
			if k > foldMask {
				return nil, fmt.Errorf("more than %d distinct folded forms", foldMask)
			}
			v |= uint16(k)
		}
		values[c] = v
	}

	var stage1 []int
	var stage2 [][]uint16
	blocks := map[string]int{}
	for lo := 0; lo < limit; lo += blockSize {
		b := values[lo : lo+blockSize]
		key := fmt.Sprint(b)
		k, ok := blocks[key]
		if !ok {
			k = len(stage2)
			stage2 = append(stage2, b)
			blocks[key] = k
		}
		stage1 = append(stage1, k)
	}
	if len(stage2) > 256 {
		return nil, fmt.Errorf("%d distinct blocks do not fit stage1's bytes", len(stage2))
	}

	var w bytes.Buffer
	fmt.Fprintf(&w, "// Code generated by go run ./gen (go generate); DO NOT EDIT.\n\n")
	fmt.Fprintf(&w, "// The tables below are SQLite %s's answers on how FTS5's unicode61\n", version)
	fmt.Fprintf(&w, "// tokenizer (remove_diacritics=1, categories \"L* N* Co\") treats each\n")
	fmt.Fprintf(&w, "// code point; gen/main.go says how they were asked.\n\n")
	fmt.Fprintf(&w, "package ftstoken\n\n")
	fmt.Fprintf(&w, "// sqliteVersion is the SQLite whose FTS5 the tables were read from.\n")
	fmt.Fprintf(&w, "const sqliteVersion = %q\n\n", version)
	fmt.Fprintf(&w, "// blockSize is the number of code points a stage1 entry covers.\n")
	fmt.Fprintf(&w, "const blockSize = %d\n\n", blockSize)
	fmt.Fprintf(&w, "// tableLimit is the first code point past the tables: from it on, every\n")
	fmt.Fprintf(&w, "// code point starts a token and folds to itself.\n")
	fmt.Fprintf(&w, "const tableLimit = %#x\n\n", limit)
	fmt.Fprintf(&w, "// asciiFold maps an ASCII byte to its folded form, or to 0 for a separator.\n")
	fmt.Fprintf(&w, "var asciiFold = [128]byte{")
	for c, f := range ascii {
		if c%16 == 0 {
			w.WriteString("\n")
		}
		fmt.Fprintf(&w, "%#02x, ", f)
	}
	fmt.Fprintf(&w, "\n}\n\n")
	fmt.Fprintf(&w, "// stage1 holds the stage2 block of each blockSize code points below tableLimit.\n")
	fmt.Fprintf(&w, "var stage1 = [%d]uint8{", len(stage1))
	for i, k := range stage1 {
		if i%24 == 0 {
			w.WriteString("\n")
		}
		fmt.Fprintf(&w, "%d, ", k)
	}
	fmt.Fprintf(&w, "\n}\n\n")
	fmt.Fprintf(&w, "// stage2 holds blocks of blockSize property values (propStart, propCont\n")
	fmt.Fprintf(&w, "// and an index into folds).\n")
	fmt.Fprintf(&w, "var stage2 = [%d]uint16{\n", len(stage2)*blockSize)
	for k, b := range stage2 {
		fmt.Fprintf(&w, "// block %d\n", k)
		for i, v := range b {
			fmt.Fprintf(&w, "%#04x,", v)
			if i%16 == 15 {
				w.WriteString("\n")
			} else {
				w.WriteString(" ")
			}
		}
	}
	fmt.Fprintf(&w, "}\n\n")
	fmt.Fprintf(&w, "// folds holds the folded forms the property values index; 0 drops the\n")
	fmt.Fprintf(&w, "// code point (index 0 is not used: it means the code point folds to itself).\n")
	fmt.Fprintf(&w, "var folds = [%d]rune{", len(folds))
	for i, f := range folds {
		if i%12 == 0 {
			w.WriteString("\n")
		}
		fmt.Fprintf(&w, "%#x, ", f)
	}
	fmt.Fprintf(&w, "\n}\n")
	src, err := format.Source(w.Bytes())
	if err != nil {
		return nil, fmt.Errorf("format tables: %w", err)
	}
	return src, nil
}
