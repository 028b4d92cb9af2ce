package textindex

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
)

// encodingVersion is the first byte of an encoded index.
const encodingVersion = 1

// AppendBinary appends the index's encoding to b: its documents (order,
// lengths, tombstone), then each token's postings (document numbers as
// gaps, packed counts) and bounds, then the overflowing counts, all as
// varints.
func (x *Index) AppendBinary(b []byte) []byte {
	b = append(b, encodingVersion)
	b = binary.AppendUvarint(b, uint64(len(x.docs)))
	for i := range x.docs {
		d := &x.docs[i]
		b = binary.AppendVarint(b, d.order)
		for _, n := range d.lens {
			b = binary.AppendUvarint(b, uint64(n))
		}
		if d.dead {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	tokens := make([]string, len(x.terms))
	for s, id := range x.ids {
		tokens[id] = s
	}
	b = binary.AppendUvarint(b, uint64(len(x.terms)))
	for id := range x.terms {
		t := &x.terms[id]
		b = binary.AppendUvarint(b, uint64(len(tokens[id])))
		b = append(b, tokens[id]...)
		for c := range NumFields {
			b = binary.AppendUvarint(b, uint64(t.maxTF[c]))
			b = binary.AppendUvarint(b, uint64(t.minLen[c]))
		}
		b = binary.AppendUvarint(b, uint64(len(t.docs)))
		prev := uint32(0)
		for i, d := range t.docs {
			b = binary.AppendUvarint(b, uint64(d-prev))
			b = binary.AppendUvarint(b, uint64(t.tfs[i]))
			prev = d
		}
	}
	b = binary.AppendUvarint(b, uint64(len(x.over)))
	keys := slices.SortedFunc(maps.Keys(x.over), func(a, b overKey) int { // the same index, the same bytes
		return cmp.Or(cmp.Compare(a.term, b.term), cmp.Compare(a.doc, b.doc))
	})
	for _, k := range keys {
		tf := x.over[k]
		b = binary.AppendUvarint(b, uint64(k.term))
		b = binary.AppendUvarint(b, uint64(k.doc))
		for _, n := range tf {
			b = binary.AppendUvarint(b, uint64(n))
		}
	}
	return b
}

var errCorrupt = errors.New("corrupt full-text index")

// decoder reads varints, remembering the first error.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s", errCorrupt, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) uvarint(max uint64, what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("%s: truncated", what)
		return 0
	}
	d.b = d.b[n:]
	if v > max {
		d.fail("%s = %d, above %d", what, v, max)
		return 0
	}
	return v
}

func (d *decoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("%s: truncated", what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n > len(d.b) {
		d.fail("%s: truncated", what)
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

// Decode reads an index encoded by AppendBinary. Every number is checked —
// each posting's document exists and follows the one before, its counts
// are within its token's bounds and its document's lengths, every
// overflowing count is listed — so a corrupt encoding is an error, never a
// wrong search.
func Decode(data []byte) (*Index, error) {
	d := &decoder{b: data}
	if v := d.bytes(1, "version"); d.err == nil && v[0] != encodingVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", errCorrupt, v[0], encodingVersion)
	}
	x := New()
	// Each document takes at least 6 bytes, each posting 2: the counts
	// are bounded by the bytes left before anything is allocated.
	nd := d.uvarint(uint64(len(d.b)/6), "documents")
	x.docs = make([]doc, nd)
	for i := range x.docs {
		dc := &x.docs[i]
		dc.order = d.varint("order")
		for c := range NumFields {
			dc.lens[c] = uint32(d.uvarint(math.MaxUint32, "length"))
		}
		switch dead := d.bytes(1, "tombstone"); {
		case d.err != nil:
		case dead[0] == 1:
			dc.dead = true
			x.dead++
		case dead[0] == 0:
			x.live++
			for c := range NumFields {
				x.totals[c] += int64(dc.lens[c])
			}
		default:
			d.fail("tombstone byte %d", dead[0])
		}
	}
	nt := d.uvarint(uint64(len(d.b)/10), "tokens")
	x.terms = make([]term, 0, nt)
	for id := range int32(nt) {
		tok := string(d.bytes(int(d.uvarint(uint64(len(d.b)), "token length")), "token"))
		if _, dup := x.ids[tok]; dup && d.err == nil {
			d.fail("token %q twice", tok)
		}
		var t term
		for c := range NumFields {
			t.maxTF[c] = uint32(d.uvarint(math.MaxUint32, "bound"))
			t.minLen[c] = uint32(d.uvarint(math.MaxUint32, "bound"))
		}
		np := d.uvarint(uint64(len(d.b)/2), "postings")
		if np == 0 && d.err == nil {
			d.fail("token %q without postings", tok)
		}
		t.docs, t.tfs = make([]uint32, 0, np), make([]uint16, 0, np)
		prev := uint64(0)
		for i := range np {
			gap := d.uvarint(nd, "document gap")
			if i > 0 && gap == 0 && d.err == nil {
				d.fail("token %q: a document twice", tok)
			}
			prev += gap
			if prev >= nd && d.err == nil {
				d.fail("token %q: document %d of %d", tok, prev, nd)
			}
			t.docs = append(t.docs, uint32(prev))
			t.tfs = append(t.tfs, uint16(d.uvarint(math.MaxUint16, "counts")))
		}
		if d.err != nil {
			return nil, d.err
		}
		x.ids[tok] = id
		x.terms = append(x.terms, t)
		x.postings += len(t.docs)
	}
	no := d.uvarint(uint64(len(d.b)/6), "overflowing counts")
	for range no {
		k := overKey{term: int32(d.uvarint(nt, "token")), doc: uint32(d.uvarint(nd, "document"))}
		var tf [NumFields]uint32
		for c := range NumFields {
			tf[c] = uint32(d.uvarint(math.MaxUint32, "count"))
		}
		if d.err != nil {
			return nil, d.err
		}
		if _, dup := x.over[k]; dup {
			return nil, fmt.Errorf("%w: overflowing counts listed twice", errCorrupt)
		}
		x.over[k] = tf
	}
	if d.err != nil {
		return nil, d.err
	}
	x.setNorms()
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the end", errCorrupt, len(d.b))
	}
	if err := x.check(); err != nil {
		return nil, err
	}
	return x, nil
}

// check verifies what a search relies on: every overflowing posting's
// counts are listed, agree with its packed counts and are within its
// token's bounds, and its document's lengths are within them too.
func (x *Index) check() error {
	listed := 0
	for id := range x.terms {
		t := &x.terms[id]
		for i, d := range t.docs {
			p := t.tfs[i]
			tf := x.counts4(int32(id), t, i)
			if overflows(p) {
				over, ok := x.over[overKey{int32(id), d}]
				if !ok {
					return fmt.Errorf("%w: a posting's overflowing counts are missing", errCorrupt)
				}
				listed++
				for c := range NumFields {
					lane := uint32(p >> (laneBits * c) & laneMax)
					if (lane < laneMax && over[c] != lane) || (lane == laneMax && over[c] < laneMax) {
						return fmt.Errorf("%w: a posting's overflowing counts disagree with it", errCorrupt)
					}
				}
			}
			if tf == ([NumFields]uint32{}) {
				return fmt.Errorf("%w: a posting without a count", errCorrupt)
			}
			for c := range NumFields {
				if tf[c] > t.maxTF[c] || x.docs[d].lens[c] < t.minLen[c] || tf[c] > x.docs[d].lens[c] {
					return fmt.Errorf("%w: a posting outside its token's bounds or its document's lengths", errCorrupt)
				}
			}
		}
	}
	if listed != len(x.over) {
		return fmt.Errorf("%w: %d overflowing counts listed for %d postings", errCorrupt, len(x.over), listed)
	}
	return nil
}
