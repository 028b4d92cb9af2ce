package vector_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/textindex"
	"github.com/mnemo-dev/mnemo/vector"
)

var textWords = strings.Fields("river stone dune quartz basalt cedar ember fjord garnet heath zebra walrus caroline melanie paint camp")

func randomWords(r *rand.Rand, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = textWords[int(r.ExpFloat64()*4)%len(textWords)]
	}
	return strings.Join(w, " ")
}

// textRef is what an index keeping text must hold: each live memory and
// its document.
type textRef struct {
	mems map[string]mnemotype.Memory
	docs map[string]textindex.Doc
}

// search ranks the live memories in f with a text index built afresh.
func (r *textRef) search(q textindex.Query, f vector.Filter, ref *refIndex) []mnemotype.Hit {
	fresh := textindex.New()
	var ids []string
	for _, id := range slices.Sorted(mapsKeys(r.docs)) {
		fresh.Add(r.docs[id])
		ids = append(ids, id)
	}
	accept := func(d uint32) bool { return ref.in(r.mems[ids[d]], f) }
	var hits []mnemotype.Hit
	for _, h := range fresh.Search(q, textindex.Filter{Accept: accept}) {
		hits = append(hits, mnemotype.Hit{ID: ids[h.Doc], Score: h.Score})
	}
	return hits
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestIndex_Text: an index keeping text, through random upserts (new
// texts and unchanged ones), deletes (moving rows) and compactions of its
// text index, searches as a text index built afresh from its live
// memories, inside every kind of filter; encoded and decoded, it searches
// the same; decoded without its text, or given a memory without text, it
// says it has none.
func TestIndex_Text(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(4, 5))
	x := vector.New()
	x.EnableText()
	ref := &textRef{mems: map[string]mnemotype.Memory{}, docs: map[string]textindex.Doc{}}
	vref := newRef()
	order := int64(0)
	check := func(step int, x *vector.Index) {
		t.Helper()
		toks := []string{}
		for range 1 + r.IntN(3) {
			tok, _ := textindex.Token(textWords[r.IntN(len(textWords))])
			toks = append(toks, tok)
		}
		q := textindex.Query{Tokens: toks, Weights: [textindex.NumFields]float64{1, 1, 1, 0.5}, K: []int{0, 5, 20}[r.IntN(3)], All: r.IntN(4) == 0}
		var f vector.Filter
		switch r.IntN(5) {
		case 1:
			f.Sessions = []string{fmt.Sprint("s", r.IntN(8))}
		case 2:
			f.Project = []string{"apollo", "zeus"}[r.IntN(2)]
		case 3:
			f.Kinds = []mnemotype.Kind{mnemotype.KindSemantic}
			f.Exclude = slices.Collect(func(yield func(string) bool) {
				for id := range ref.mems {
					if r.IntN(3) == 0 && !yield(id) {
						return
					}
				}
			})
		case 4:
			f.Only = []string{}
			for id := range ref.mems {
				if r.IntN(10) == 0 {
					f.Only = append(f.Only, id)
				}
			}
		}
		got, ok := x.SearchText(vector.TextQuery{Query: q, Filter: f})
		if !ok {
			t.Fatalf("step %d: no text index", step)
		}
		want := ref.search(q, f, vref)
		if q.K > 0 && len(want) > q.K {
			want = want[:q.K]
		}
		if !slices.Equal(got, want) {
			t.Fatalf("step %d, %+v in %+v:\n got %v\nwant %v", step, q, f, got, want)
		}
		if n, _ := x.CountText(vector.TextQuery{Query: q, Filter: f}, 0); q.K == 0 && n != len(want) {
			t.Fatalf("step %d: CountText = %d, want %d", step, n, len(want))
		}
	}
	for step := range 4000 {
		switch {
		case r.IntN(3) == 0 && len(ref.mems) > 0:
			ids := slices.Sorted(mapsKeys(ref.mems))
			id := ids[r.IntN(len(ids))]
			x.Delete(id)
			delete(ref.mems, id)
			delete(ref.docs, id)
			delete(vref.rows, id)
		default:
			id := fmt.Sprint("m", r.IntN(1500))
			m := mem(id, session(fmt.Sprint("s", r.IntN(8))), project([]string{"", "apollo", "zeus"}[r.IntN(3)]),
				kind(mnemotype.Kinds[r.IntN(3)]))
			doc, again := ref.docs[id]
			if !again || r.IntN(2) == 0 { // a new text; else the same again
				order++
				doc = textindex.Doc{Order: order, Fields: [textindex.NumFields]string{randomWords(r, 1+r.IntN(12)), "", "Monday 8 May 2023", randomWords(r, r.IntN(6))}}
			}
			if err := x.UpsertText([]mnemotype.Memory{m}, []textindex.Doc{doc}); err != nil {
				t.Fatal(err)
			}
			ref.mems[id], ref.docs[id] = m, doc
			vref.upsert([]mnemotype.Memory{m})
		}
		if step%20 == 0 {
			check(step, x)
		}
	}
	y := reencode(t, x, vector.DecodeOptions{})
	for i := range 50 {
		check(i, y)
	}
	if d := vector.Diff(x, y, 5); len(d) > 0 {
		t.Fatalf("decoded differs: %v", d)
	}
	z := reencode(t, x, vector.DecodeOptions{NoText: true})
	if z.HasText() || !z.TextLeftOut() || z.Len() != x.Len() {
		t.Errorf("decoded without text: HasText %v, TextLeftOut %v, %d memories of %d", z.HasText(), z.TextLeftOut(), z.Len(), x.Len())
	}
	if d := vector.Diff(x, z, 5); len(d) != 1 || !strings.Contains(d[0], "full-text index in the first only") {
		t.Errorf("Diff with an index without text: %v", d)
	}
	// In two sections (a snapshot's): the same bytes as Encode's, read
	// back alike; the text section skipped after its first byte.
	var index, text, whole bytes.Buffer
	if err := errors.Join(x.EncodeIndex(&index), x.EncodeText(&text), x.Encode(&whole)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(slices.Clip(index.Bytes()), text.Bytes()...), whole.Bytes()) {
		t.Error("EncodeIndex then EncodeText differ from Encode")
	}
	for _, skip := range []bool{false, true} {
		w, err := vector.DecodeIndex(bytes.NewReader(index.Bytes()), int64(index.Len()), vector.DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.DecodeText(bytes.NewReader(text.Bytes()[:1+(text.Len()-1)*btoi(!skip)]), int64(text.Len()), skip); err != nil {
			t.Fatalf("DecodeText (skip %v): %v", skip, err)
		}
		if d := vector.Diff(x, w, 5); skip != (len(d) > 0) || w.TextLeftOut() != skip || w.HasText() == skip {
			t.Errorf("decoded in sections (skip %v): TextLeftOut %v, Diff %v", skip, w.TextLeftOut(), d)
		}
		if err := w.DecodeText(bytes.NewReader(text.Bytes()), int64(text.Len()), false); err == nil {
			t.Error("DecodeText twice")
		}
	}
	// Opened lazily, at an offset in a file: it searches as x, takes
	// writes, and encodes as x; a corrupt block leaves it without text.
	for _, corrupt := range []bool{false, true} {
		const at = 13
		file := append(bytes.Repeat([]byte{7}, at), text.Bytes()...)
		if corrupt {
			file[at+1+12*x.Len()+1+8+4+1] ^= 0xff // the first token's postings
		}
		o, err := vector.DecodeIndex(bytes.NewReader(index.Bytes()), int64(index.Len()), vector.DecodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := o.OpenText(bytes.NewReader(file), at, int64(text.Len())); err != nil {
			t.Fatal(err)
		}
		// A row's text hash changed (the front of the section, which its
		// checksum alone covers): neither reader takes it.
		front := slices.Clone(file)
		front[at+1+4] ^= 0x01
		for lazily, read := range map[bool]func(*vector.Index) error{
			true: func(w *vector.Index) error { return w.OpenText(bytes.NewReader(front), at, int64(text.Len())) },
			false: func(w *vector.Index) error {
				return w.DecodeText(bytes.NewReader(front[at:]), int64(text.Len()), false)
			},
		} {
			w, err := vector.DecodeIndex(bytes.NewReader(index.Bytes()), int64(index.Len()), vector.DecodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := read(w); !errors.Is(err, vector.ErrCorrupt) {
				t.Errorf("a section with a changed hash read (lazily %v): %v, want ErrCorrupt", lazily, err)
			}
		}
		if err := o.OpenText(bytes.NewReader(file), at, int64(text.Len())); err == nil {
			t.Error("OpenText twice")
		}
		err = o.EncodeText(io.Discard) // reads every token's postings
		if corrupt {
			_, ok := o.SearchText(vector.TextQuery{Query: textindex.Query{Tokens: []string{"river"}, Weights: [4]float64{1}}})
			if err == nil || ok || o.HasText() {
				t.Errorf("a corrupt text index opened lazily: EncodeText %v, searched %v, HasText %v", err, ok, o.HasText())
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for i := range 50 {
			check(i, o)
		}
		if d := vector.Diff(x, o, 5); len(d) > 0 {
			t.Fatalf("opened lazily, differs: %v", d)
		}
	}
	if _, err := vector.DecodeIndex(bytes.NewReader(whole.Bytes()), int64(whole.Len()), vector.DecodeOptions{}); !errors.Is(err, vector.ErrCorrupt) {
		t.Errorf("DecodeIndex of a whole encoding = %v, want ErrCorrupt (bytes after the index)", err)
	}
	some := slices.Sorted(mapsKeys(ref.mems))[0]
	if err := y.UpsertText([]mnemotype.Memory{ref.mems[some]}, []textindex.Doc{{Order: 1, Fields: [textindex.NumFields]string{"another text"}}}); err != nil {
		t.Fatal(err)
	}
	if d := vector.Diff(x, y, 5); len(d) == 0 || !strings.Contains(strings.Join(d, "; "), some+": indexed text differs") {
		t.Errorf("Diff after a text changed: %v", d)
	}
	if err := y.Upsert([]mnemotype.Memory{mem("no-text")}); err != nil {
		t.Fatal(err)
	}
	if _, ok := y.SearchText(vector.TextQuery{Query: textindex.Query{Tokens: []string{"river"}, Weights: [4]float64{1}}}); ok || y.HasText() {
		t.Error("searched a text index missing a memory's text")
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
