package textindex

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"sync"
)

// encodingVersion is the first byte of an encoded index.
const encodingVersion = 2

// The encoding (AppendBinary) is laid out so that a reader may take the
// documents and the list of tokens at once and each token's postings when
// a search first needs them (Open):
//
//	version byte
//	blocks     each token's postings, one block a token, in token order
//	head       the documents (order, lengths, tombstone), then each token,
//	           its bounds, its number of postings, its block's size and
//	           CRC-32C
//	uint32     the head's CRC-32C (little-endian)
//	uint64     the head's size (little-endian)
//
// A block holds the postings (document numbers as gaps, packed counts),
// then the overflowing counts (the posting's place in the block, then its
// counts in each field). Numbers are varints.
const tailSize = 4 + 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// block is where a term's postings are in its index's encoding: n
// postings in size bytes from off, whose CRC-32C is sum; pending until
// they are read.
type block struct {
	off          int64
	n, size, sum uint32
	pending      bool
}

// lazy is the source of a lazily read index's pending terms (Open), or of
// a decoded one's (Decode, which reads them all before it returns).
type lazy struct {
	mu   sync.Mutex
	r    io.ReaderAt
	data []byte // the encoding, when in memory
	err  error  // the first term that could not be read
}

// AppendBinary appends the index's encoding to b. The postings of a
// lazily read index are read first: when one cannot be (Err), its token
// is written without postings, which Decode and Open reject.
func (x *Index) AppendBinary(b []byte) []byte {
	b = append(b, encodingVersion)
	sizes := make([]uint32, len(x.terms))
	sums := make([]uint32, len(x.terms))
	for id := range x.terms {
		t := x.term(int32(id))
		from := len(b)
		prev := uint32(0)
		var overs []int
		for i, d := range t.docs {
			b = binary.AppendUvarint(b, uint64(d-prev))
			b = binary.AppendUvarint(b, uint64(t.tfs[i]))
			prev = d
			if overflows(t.tfs[i]) {
				overs = append(overs, i)
			}
		}
		b = binary.AppendUvarint(b, uint64(len(overs)))
		for _, i := range overs {
			b = binary.AppendUvarint(b, uint64(i))
			for _, n := range t.over[t.docs[i]] {
				b = binary.AppendUvarint(b, uint64(n))
			}
		}
		sizes[id] = uint32(len(b) - from)
		sums[id] = crc32.Checksum(b[from:], castagnoli)
	}
	head := len(b)
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
		b = binary.AppendUvarint(b, uint64(sizes[id]))
		b = binary.LittleEndian.AppendUint32(b, sums[id])
	}
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[head:], castagnoli))
	return binary.LittleEndian.AppendUint64(b, uint64(len(b)-4-head))
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

// Decode reads an index encoded by AppendBinary whole. Every number is
// checked — each posting's document exists and follows the one before,
// its counts are within its token's bounds and its document's lengths,
// every overflowing count is listed — and so are the checksums, so a
// corrupt encoding is an error, never a wrong search.
func Decode(data []byte) (*Index, error) {
	x, err := open(&lazy{data: data}, int64(len(data)))
	if err != nil {
		return nil, err
	}
	for id := range x.terms {
		x.term(int32(id))
	}
	if err := x.Err(); err != nil {
		return nil, err
	}
	x.lazy = nil
	return x, nil
}

// Open reads an index encoded by AppendBinary from the size bytes of r:
// the documents and tokens at once, each token's postings when first
// needed (a search of the token, a write, AppendBinary). It checks what
// Decode checks, a token's postings as they are read: a token whose
// postings cannot be read (r fails, or they are corrupt) is searched as
// if it had none, and Err reports it from then on. r must hold the same
// bytes for as long as the index is used.
func Open(r io.ReaderAt, size int64) (*Index, error) {
	return open(&lazy{r: r}, size)
}

// read returns the n bytes of l's encoding at off.
func (l *lazy) read(off int64, n int64) ([]byte, error) {
	if l.data != nil {
		return l.data[off : off+n], nil
	}
	b := make([]byte, n)
	if _, err := l.r.ReadAt(b, off); err != nil {
		return nil, fmt.Errorf("full-text index: %w", err)
	}
	return b, nil
}

func open(l *lazy, size int64) (*Index, error) {
	if size < 1+tailSize {
		return nil, fmt.Errorf("%w: %d bytes", errCorrupt, size)
	}
	first, err := l.read(0, 1)
	if err != nil {
		return nil, err
	}
	if first[0] != encodingVersion {
		return nil, fmt.Errorf("%w: version %d, want %d", errCorrupt, first[0], encodingVersion)
	}
	tail, err := l.read(size-tailSize, tailSize)
	if err != nil {
		return nil, err
	}
	headSize := binary.LittleEndian.Uint64(tail[4:])
	if headSize > uint64(size-1-tailSize) {
		return nil, fmt.Errorf("%w: a head of %d bytes in %d", errCorrupt, headSize, size)
	}
	headOff := size - tailSize - int64(headSize)
	head, err := l.read(headOff, int64(headSize))
	if err != nil {
		return nil, err
	}
	if crc32.Checksum(head, castagnoli) != binary.LittleEndian.Uint32(tail) {
		return nil, fmt.Errorf("%w: the head's checksum does not match", errCorrupt)
	}
	d := &decoder{b: head}
	x := New()
	// Each document takes at least 6 bytes, each token 12: the counts are
	// bounded by the bytes left before anything is allocated.
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
	nt := d.uvarint(uint64(len(d.b)/12), "tokens")
	x.terms = make([]term, 0, nt)
	off := int64(1)
	for id := range int32(nt) {
		tok := string(d.bytes(int(d.uvarint(uint64(len(d.b)), "token length")), "token"))
		if _, dup := x.ids[tok]; dup && d.err == nil {
			d.fail("token %q twice", tok)
		}
		t := term{block: block{off: off, pending: true}}
		for c := range NumFields {
			t.maxTF[c] = uint32(d.uvarint(math.MaxUint32, "bound"))
			t.minLen[c] = uint32(d.uvarint(math.MaxUint32, "bound"))
		}
		// Each posting takes at least 2 bytes, and a block one more.
		t.block.n = uint32(d.uvarint(uint64(min(nd, math.MaxUint32)), "postings"))
		t.block.size = uint32(d.uvarint(uint64(min(headOff-off, math.MaxUint32)), "block size"))
		if sum := d.bytes(4, "block checksum"); d.err == nil {
			t.block.sum = binary.LittleEndian.Uint32(sum)
		}
		if d.err != nil {
			return nil, d.err
		}
		if t.block.n == 0 || int64(t.block.size) < 2*int64(t.block.n)+1 {
			return nil, fmt.Errorf("%w: token %q with %d postings in %d bytes", errCorrupt, tok, t.block.n, t.block.size)
		}
		off += int64(t.block.size)
		x.ids[tok] = id
		x.terms = append(x.terms, t)
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the head", errCorrupt, len(d.b))
	}
	if off != headOff {
		return nil, fmt.Errorf("%w: postings of %d bytes before a head at %d", errCorrupt, off-1, headOff)
	}
	x.setNorms()
	x.lazy = l
	return x, nil
}

// Err returns why a lazily read index (Open) could not read a token's
// postings, nil while it could read every one it needed.
func (x *Index) Err() error {
	if x.lazy == nil {
		return nil
	}
	x.lazy.mu.Lock()
	defer x.lazy.mu.Unlock()
	return x.lazy.err
}

// term returns term id, its postings read first when pending. Searches
// call it concurrently: a term is read under the lazy source's lock, and
// written by nothing else.
func (x *Index) term(id int32) *term {
	t := &x.terms[id]
	l := x.lazy
	if l == nil {
		return t
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if t.block.pending {
		t.block.pending = false
		if err := x.readTerm(l, t); err != nil {
			t.docs, t.tfs, t.over = nil, nil, nil
			if l.err == nil {
				l.err = err
			}
		}
	}
	return t
}

// readTerm reads t's postings from its block, checking them.
func (x *Index) readTerm(l *lazy, t *term) error {
	b, err := l.read(t.block.off, int64(t.block.size))
	if err != nil {
		return err
	}
	if crc32.Checksum(b, castagnoli) != t.block.sum {
		return fmt.Errorf("%w: a block's checksum does not match", errCorrupt)
	}
	d := &decoder{b: b}
	n, nd := int(t.block.n), uint64(len(x.docs))
	docs, tfs := make([]uint32, 0, n), make([]uint16, 0, n)
	prev := uint64(0)
	overflowing := 0
	for i := range n {
		gap := d.uvarint(nd, "document gap")
		if i > 0 && gap == 0 && d.err == nil {
			d.fail("a document twice")
		}
		prev += gap
		if prev >= nd && d.err == nil {
			d.fail("document %d of %d", prev, nd)
		}
		p := uint16(d.uvarint(math.MaxUint16, "counts"))
		if overflows(p) {
			overflowing++
		}
		docs = append(docs, uint32(prev))
		tfs = append(tfs, p)
	}
	var over map[uint32][NumFields]uint32
	if no := int(d.uvarint(uint64(n), "overflowing counts")); no != overflowing && d.err == nil {
		d.fail("%d overflowing counts listed for %d postings", no, overflowing)
	}
	last := -1
	for range overflowing {
		i := int(d.uvarint(uint64(n-1), "overflowing posting"))
		var tf [NumFields]uint32
		for c := range NumFields {
			tf[c] = uint32(d.uvarint(math.MaxUint32, "count"))
		}
		if d.err != nil {
			break
		}
		if i <= last || !overflows(tfs[i]) {
			d.fail("posting %d listed as overflowing", i)
			break
		}
		last = i
		for c := range NumFields {
			lane := uint32(tfs[i] >> (laneBits * c) & laneMax)
			if (lane < laneMax && tf[c] != lane) || (lane == laneMax && tf[c] < laneMax) {
				d.fail("a posting's overflowing counts disagree with it")
			}
		}
		if over == nil {
			over = make(map[uint32][NumFields]uint32, overflowing)
		}
		over[docs[i]] = tf
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("%d bytes after a block", len(d.b))
	}
	if d.err != nil {
		return d.err
	}
	t.docs, t.tfs, t.over = docs, tfs, over
	for i, dc := range docs {
		tf := t.counts(i)
		if tf == ([NumFields]uint32{}) {
			return fmt.Errorf("%w: a posting without a count", errCorrupt)
		}
		for c := range NumFields {
			if tf[c] > t.maxTF[c] || x.docs[dc].lens[c] < t.minLen[c] || tf[c] > x.docs[dc].lens[c] {
				return fmt.Errorf("%w: a posting outside its token's bounds or its document's lengths", errCorrupt)
			}
		}
	}
	x.postings += len(docs)
	x.overs += len(over)
	return nil
}
