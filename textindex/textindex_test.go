package textindex

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mnemo-dev/mnemo/internal/ftstoken"
)

// reference ranks every live document of docs by the SQLite store's BM25F
// (store/sqlitestore's goScorer, written out again): the index must return
// exactly its top k.
func reference(docs []Doc, live []bool, q Query, accept func(uint32) bool) []Hit {
	n := int64(0)
	var totals [NumFields]int64
	toks := make([][NumFields][]string, len(docs))
	for d, doc := range docs {
		for c, text := range doc.Fields {
			toks[d][c] = ftstoken.Tokens(text)
		}
		if !live[d] {
			continue
		}
		n++
		for c := range NumFields {
			totals[c] += int64(len(toks[d][c]))
		}
	}
	if n == 0 {
		return nil
	}
	var avgdl [NumFields]float64
	for c := range NumFields {
		avgdl[c] = float64(totals[c]) / float64(n)
	}
	idf := make([]float64, len(q.Tokens))
	for i, tok := range q.Tokens {
		df := int64(0)
		for d := range docs {
			if !live[d] {
				continue
			}
			for c := range NumFields {
				if q.Weights[c] != 0 && slices.Contains(toks[d][c], tok) {
					df++
					break
				}
			}
		}
		v := math.Log((float64(n-df) + 0.5) / (float64(df) + 0.5))
		if v <= 0 {
			v = 1e-6
		}
		idf[i] = v
	}
	classic := q.Weights == [NumFields]float64{Content: 1}
	var hits []Hit
	for d := range docs {
		if !live[d] || (accept != nil && !accept(uint32(d))) {
			continue
		}
		freq := make([][NumFields]float64, len(q.Tokens))
		var length [NumFields]float64
		for c := range NumFields {
			if q.Weights[c] == 0 {
				continue
			}
			length[c] = float64(len(toks[d][c]))
			for i, tok := range q.Tokens {
				for _, t := range toks[d][c] {
					if t == tok {
						freq[i][c]++
					}
				}
			}
		}
		matched, missing := 0, 0
		for i := range q.Tokens {
			if freq[i] != [NumFields]float64{} {
				matched++
			} else {
				missing++
			}
		}
		if matched == 0 || (q.All && missing > 0) {
			continue
		}
		score := 0.0
		if classic {
			D := length[Content]
			for i := range q.Tokens {
				f := freq[i][Content]
				score += idf[i] * ((f * (K1 + 1.0)) / (f + K1*(1-0.75+0.75*D/avgdl[Content])))
			}
		} else {
			var norm [NumFields]float64
			for c := range NumFields {
				norm[c] = 1.0
				if q.Weights[c] != 0 && FieldB[c] != 0 && avgdl[c] > 0 {
					norm[c] = 1 - FieldB[c] + FieldB[c]*length[c]/avgdl[c]
				}
			}
			for i := range q.Tokens {
				tf := 0.0
				for c := range NumFields {
					if q.Weights[c] != 0 {
						tf += q.Weights[c] * freq[i][c] / norm[c]
					}
				}
				score += idf[i] * (tf * (K1 + 1.0)) / (tf + K1)
			}
		}
		hits = append(hits, Hit{Doc: uint32(d), Score: score})
	}
	slices.SortFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := cmp.Compare(docs[a.Doc].Order, docs[b.Doc].Order); c != 0 {
			return c
		}
		return cmp.Compare(a.Doc, b.Doc)
	})
	if q.K > 0 && len(hits) > q.K {
		hits = hits[:q.K]
	}
	return hits
}

// vocabulary is Zipf-distributed words, some of them stemming alike.
var vocabulary = strings.Fields(`the run running runs caroline melanie support group painting paint painted
	camping camp lake beach school counselor adoption adopt pottery class dog dogs horse horses museum book books
	read reading guitar violin concert friend friends family kids children summer winter may june 2023 2022 monday
	tuesday wedding bracelet necklace hike hiking photo photos sunset bike bikes transgender pride parade`)

func randomText(r *rand.Rand, z *rand.Zipf, words int) string {
	var b strings.Builder
	for range words {
		b.WriteString(vocabulary[z.Uint64()])
		b.WriteByte(' ')
	}
	return b.String()
}

func randomDoc(r *rand.Rand, z *rand.Zipf, order int64) Doc {
	var d Doc
	d.Order = order
	d.Fields[Content] = randomText(r, z, 1+r.IntN(30))
	if r.IntN(4) > 0 {
		d.Fields[Actor] = []string{"Caroline", "Melanie", "user", "assistant"}[r.IntN(4)]
	}
	d.Fields[Time] = []string{"Monday 8 May 2023", "Tuesday 9 May 2023", "Sunday 2 June 2022", ""}[r.IntN(4)]
	if r.IntN(3) > 0 {
		d.Fields[Context] = randomText(r, z, r.IntN(40))
	}
	if r.IntN(200) == 0 { // a count past laneMax in a field
		d.Fields[Content] += strings.Repeat("horse ", 300)
	}
	return d
}

func randomQuery(r *rand.Rand, z *rand.Zipf) Query {
	var q Query
	seen := map[string]bool{}
	for range 1 + r.IntN(6) {
		w := vocabulary[z.Uint64()]
		if r.IntN(8) == 0 {
			w = "absent"
		}
		tok, ok := Token(w)
		if ok && !seen[tok] {
			seen[tok] = true
			q.Tokens = append(q.Tokens, tok)
		}
	}
	q.All = r.IntN(4) == 0
	switch r.IntN(4) {
	case 0:
		q.Weights = [NumFields]float64{Content: 1}
	case 1:
		q.Weights = [NumFields]float64{1, 0.6, 0.6, 0.3}
	default:
		for c := range NumFields {
			if r.IntN(3) > 0 {
				q.Weights[c] = float64(r.IntN(5)) * 0.25
			}
		}
		if q.Weights == ([NumFields]float64{}) {
			q.Weights[Context] = 0.5
		}
	}
	q.K = []int{0, 1, 3, 10, 50}[r.IntN(5)]
	return q
}

// TestSearch_MatchesReference checks, over random corpora with deletions,
// re-additions and compactions, that every search returns the reference's
// top k exactly: the same documents in the same order, with bit-equal
// scores.
func TestSearch_MatchesReference(t *testing.T) {
	t.Parallel()
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(seed, 7))
			z := rand.NewZipf(r, 1.1, 2, uint64(len(vocabulary)-1))
			x := New()
			var docs []Doc
			var live []bool
			for step := range 1000 {
				switch {
				case r.IntN(5) == 0 && x.Len() > 0: // delete one
					d := r.IntN(len(docs))
					x.Delete(uint32(d))
					live[d] = false
				case r.IntN(300) == 0: // compact: renumber the reference too
					remap := x.Compact()
					var nd []Doc
					var nl []bool
					for old, n := range remap {
						if n >= 0 {
							if int(n) != len(nd) {
								t.Fatalf("remap %d → %d, want %d", old, n, len(nd))
							}
							nd, nl = append(nd, docs[old]), append(nl, true)
						}
					}
					docs, live = nd, nl
				default:
					doc := randomDoc(r, z, int64(r.IntN(step+1)))
					if got := x.Add(doc); int(got) != len(docs) {
						t.Fatalf("Add = %d, want %d", got, len(docs))
					}
					docs, live = append(docs, doc), append(live, true)
				}
				if step%10 != 0 {
					continue
				}
				q := randomQuery(r, z)
				var f Filter
				var accept func(uint32) bool
				switch r.IntN(3) {
				case 1:
					mod := uint32(2 + r.IntN(5))
					accept = func(d uint32) bool { return d%mod == 0 }
					f.Accept = accept
				case 2: // a scope listed, with documents Accept refuses
					// (a twentieth of the documents is mostly read by
					// document, a third mostly by term)
					share := []int{20, 3}[r.IntN(2)]
					for d := range uint32(len(docs)) {
						if r.IntN(share) == 0 {
							f.Docs = append(f.Docs, d)
						}
					}
					in := map[uint32]bool{}
					for _, d := range f.Docs {
						if r.IntN(4) > 0 {
							in[d] = true
						}
					}
					accept = func(d uint32) bool { return in[d] }
					f.Accept = accept
					switch r.IntN(3) {
					case 1: // in any order
						r.Shuffle(len(f.Docs), func(i, j int) { f.Docs[i], f.Docs[j] = f.Docs[j], f.Docs[i] })
					case 2: // exactly the documents kept, without Accept
						f.Docs = slices.DeleteFunc(f.Docs, func(d uint32) bool { return !in[d] })
						if f.Docs == nil {
							f.Docs = []uint32{}
						}
						f.Accept = nil
					}
				}
				want := reference(docs, live, q, accept)
				got := x.Search(q, f)
				if !slices.Equal(got, want) {
					t.Fatalf("step %d, query %+v:\n got %v\nwant %v", step, q, got, want)
				}
				all := q
				all.K = 0
				wantN := len(reference(docs, live, all, accept))
				limit := r.IntN(5)
				if limit > 0 {
					wantN = min(wantN, limit)
				}
				if n := x.Count(q, f, limit); n != wantN {
					t.Fatalf("step %d: Count(%+v, limit %d) = %d, want %d", step, q, limit, n, wantN)
				}
				// SearchEither: the AND query's hits when at least min
				// documents hold every term, else the OR query's.
				and, or := q, q
				and.All, or.All = true, false
				every := and
				every.K = 0
				min := r.IntN(4)
				wantAll := len(reference(docs, live, every, accept)) >= min
				wantEither := reference(docs, live, or, accept)
				if wantAll {
					wantEither = reference(docs, live, and, accept)
				}
				if got, all := x.SearchEither(q, f, min); all != wantAll || !slices.Equal(got, wantEither) {
					t.Fatalf("step %d, query %+v, min %d: SearchEither = %v (all %v),\nwant %v (all %v)", step, q, min, got, all, wantEither, wantAll)
				}
			}
			var want [NumFields]int64
			n := 0
			for d, doc := range docs {
				if !live[d] {
					continue
				}
				n++
				for c := range NumFields {
					want[c] += int64(len(ftstoken.Tokens(doc.Fields[c])))
				}
			}
			if x.Len() != n || x.Totals() != want {
				t.Fatalf("Len, Totals = %d, %v; want %d, %v", x.Len(), x.Totals(), n, want)
			}
		})
	}
}

// TestSearch_LongDocument: a document longer than the packed lengths hold
// (65,535 tokens) scores with its true length.
func TestSearch_LongDocument(t *testing.T) {
	t.Parallel()
	docs := []Doc{
		{Order: 1, Fields: [NumFields]string{"river stone"}},
		{Order: 2, Fields: [NumFields]string{strings.Repeat("river ", 70_000), "", "", strings.Repeat("stone ", 66_000)}},
		{Order: 3, Fields: [NumFields]string{"stone dune", "", "", "river"}},
	}
	x := New()
	for _, d := range docs {
		x.Add(d)
	}
	live := []bool{true, true, true}
	for _, q := range []Query{
		{Tokens: []string{"river", "stone"}, Weights: [NumFields]float64{1, 1, 1, 0.5}},
		{Tokens: []string{"river"}, Weights: [NumFields]float64{Content: 1}},
	} {
		if got, want := x.Search(q, Filter{}), reference(docs, live, q, nil); !slices.Equal(got, want) {
			t.Errorf("%+v: %v, want %v", q, got, want)
		}
	}
}

// TestSearch_ScopeOfACommonTerm: an OR query inside a listed scope, read
// term by term, where one term's postings far outnumber the listed
// documents (its cursor then moves from one listed document to the next)
// and the others' do not, answers as the reference does, with and without
// Accept, and so does SearchEither.
func TestSearch_ScopeOfACommonTerm(t *testing.T) {
	t.Parallel()
	x := New()
	var docs []Doc
	var live []bool
	for i := range 3000 {
		text := "river"
		if i%9 == 0 {
			text += " stone"
		}
		if i%31 == 0 {
			text += " dune river"
		}
		d := Doc{Order: int64(i), Fields: [NumFields]string{text}}
		x.Add(d)
		docs, live = append(docs, d), append(live, true)
	}
	for d := uint32(0); d < 3000; d += 50 {
		x.Delete(d) // tombstones, listed too
		live[d] = false
	}
	var listed []uint32
	in := map[uint32]bool{}
	for d := uint32(0); d < 3000; d += 20 {
		listed = append(listed, d)
		in[d] = true
	}
	accept := func(d uint32) bool { return in[d] }
	for _, q := range []Query{
		{Tokens: []string{"river", "stone", "dune", "absent"}, Weights: [NumFields]float64{Content: 1}, K: 10},
		{Tokens: []string{"dune", "river", "stone", "absent"}, Weights: [NumFields]float64{Content: 1}, K: 0},
	} {
		want := reference(docs, live, q, accept)
		if len(want) == 0 {
			t.Fatal("the reference finds nothing")
		}
		for _, f := range []Filter{{Docs: listed}, {Docs: listed, Accept: accept}} {
			if got := x.Search(q, f); !slices.Equal(got, want) {
				t.Errorf("%+v, Accept %v:\n got %v\nwant %v", q, f.Accept != nil, got, want)
			}
			if got, all := x.SearchEither(q, f, 1); all || !slices.Equal(got, want) {
				t.Errorf("SearchEither(%+v), Accept %v: all %v,\n got %v\nwant %v", q, f.Accept != nil, all, got, want)
			}
		}
	}
}
