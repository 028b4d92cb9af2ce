package vector

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
	"time"
	"unsafe"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/textindex"
)

// encodingMagic opens an encoded index; its last byte is the format's
// version.
var encodingMagic = [8]byte{'m', 'n', 'e', 'm', 'o', 'v', 'x', 7}

// rowFixed is the size of a row's fields after its id: five names, when
// it occurred (seconds and nanoseconds), its turn, importance, the
// inverse of its embedding's norm, and whether that is foreign.
const rowFixed = 5*4 + 8 + 4 + 8 + 8 + 4 + 1

// Bounds Decode enforces before it allocates.
const (
	maxEncodedDim = 1 << 16
	maxEncodedStr = 1 << 20
)

// littleEndian reports whether float32s are stored as the encoding lays
// them out, so they are read and written in bulk.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// ErrCorrupt reports an encoding Decode cannot read.
var ErrCorrupt = errors.New("corrupt vector index encoding")

// Encode writes x in a binary format Decode reads: the interned names, each
// row's id and scope, the embeddings (little-endian float32), then the
// graph (its nodes, their links, and the tombstones' vectors), then the
// full-text index when the index keeps one (appendText). It holds
// x's read lock throughout, so x does not change while it is written.
func (x *Index) Encode(w io.Writer) error { return x.encode(w, x.encodeIndex, x.encodeText) }

// EncodeIndex writes what Encode writes before the text section, which
// EncodeText writes: DecodeIndex and DecodeText read them, so that a
// reader needing no text (DecodeOptions.NoText) need not read past it.
// x must not change between the two calls.
func (x *Index) EncodeIndex(w io.Writer) error { return x.encode(w, x.encodeIndex) }

// EncodeText writes the text section Encode ends with (see EncodeIndex).
func (x *Index) EncodeText(w io.Writer) error { return x.encode(w, x.encodeText) }

// encode writes parts through one buffer under x's read lock.
func (x *Index) encode(w io.Writer, parts ...func(*bufio.Writer) error) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	bw := bufio.NewWriterSize(w, 1<<20)
	for _, part := range parts {
		if err := part(bw); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func (x *Index) encodeIndex(out *bufio.Writer) error {
	// The rows and the codes are checksummed on their own: a reader of the
	// codes alone (DecodeOptions.Codes) checks what it reads.
	sum := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(out, sum), 1<<16)
	var b []byte
	var err error
	b = append(b, encodingMagic[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(x.dim))
	b = binary.LittleEndian.AppendUint32(b, uint32(x.foreignDim))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(x.strList)))
	for _, s := range x.strList {
		b = appendString(b, s)
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(x.rows)))
	for i := range x.rows {
		r := &x.rows[i]
		b = appendString(b, r.id)
		for _, v := range [...]int32{r.project, r.session, r.actor, r.kindID, r.model} {
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		}
		b = binary.LittleEndian.AppendUint64(b, uint64(r.occurred.sec))
		b = binary.LittleEndian.AppendUint32(b, uint32(r.occurred.nsec))
		b = binary.LittleEndian.AppendUint64(b, uint64(r.seq))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(r.importance))
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x.norms[i]))
		f := byte(0)
		if r.foreign {
			f = 1
		}
		b = append(b, f)
		if b, err = flushAt(bw, b, 1<<16); err != nil {
			return err
		}
	}
	if b, err = flushAt(bw, b, 0); err != nil {
		return err
	}
	if err := x.encodeCodes(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	if _, err := out.Write(binary.LittleEndian.AppendUint32(nil, sum.Sum32())); err != nil {
		return err
	}
	if x.q == nil {
		if err := writeFloats(out, x.vecs[:len(x.rows)*x.dim]); err != nil {
			return err
		}
	} else {
		buf := make([]float32, x.dim)
		for s := range x.rows {
			v := buf
			if x.rows[s].model >= 0 {
				if v, err = x.vector(s, buf); err != nil {
					return err
				}
			} else {
				clear(v)
			}
			if err := writeFloats(out, v); err != nil {
				return err
			}
		}
	}
	return x.encodeGraph(out)
}

// encodeCodes writes each row's scale, the CRC-32C of its float32s and its
// int8 codes (see quant.go).
func (x *Index) encodeCodes(bw *bufio.Writer) error {
	if x.dim == 0 {
		return nil
	}
	b := make([]byte, 0, 1<<16)
	codes := make([]int8, x.dim)
	zero := floatSum(make([]float32, x.dim)) // a row without embedding
	for s := range x.rows {
		var sc float32
		var sum uint32
		if q := x.q; q != nil {
			copy(codes, q.codes[s*x.dim:(s+1)*x.dim])
			sc = q.scale[s]
			switch {
			case q.orig[s] >= 0:
				sum = q.sums[s]
			case x.rows[s].model >= 0:
				sum = floatSum(q.fresh[x.rows[s].id])
			default:
				sum = zero
			}
		} else {
			v := x.vecs[s*x.dim : (s+1)*x.dim]
			sc, sum = quantize(v, codes), floatSum(v)
		}
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(sc))
		b = binary.LittleEndian.AppendUint32(b, sum)
		for _, c := range codes {
			b = append(b, byte(c))
		}
		var err error
		if b, err = flushAt(bw, b, 1<<16-x.dim-8); err != nil {
			return err
		}
	}
	_, err := flushAt(bw, b, 0)
	return err
}

func (x *Index) encodeText(bw *bufio.Writer) error {
	b, text := x.appendText(nil)
	if x.text != nil {
		if err := x.text.Err(); err != nil {
			return err // postings it could not read are not in text
		}
	}
	if _, err := bw.Write(b); err != nil {
		return err
	}
	_, err := bw.Write(text)
	return err
}

// appendText appends the text section but its last part to b: a flag,
// then with a text index each row's document and text hash, whether the
// text is incomplete, the length of the text index's own encoding, and the
// CRC-32C of these (from the flag on); it returns the text index's
// encoding (the last part), which carries its own checksums. A reader of
// the section (OpenText) thus checks all it reads without reading all.
func (x *Index) appendText(b []byte) (_, text []byte) {
	if x.text == nil {
		return append(b, 0), nil
	}
	start := len(b)
	b = append(b, 1)
	for i := range x.rows {
		b = binary.LittleEndian.AppendUint32(b, uint32(x.rows[i].doc))
		b = binary.LittleEndian.AppendUint64(b, x.rows[i].textHash)
	}
	broken := byte(0)
	if x.textBroken {
		broken = 1
	}
	b = append(b, broken)
	text = x.text.AppendBinary(nil)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(text)))
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli)), text
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeGraph writes the graph section.
func (x *Index) encodeGraph(bw *bufio.Writer) error {
	var b []byte
	var err error
	g := x.graph
	if g == nil || len(g.nodes) == 0 {
		b = binary.LittleEndian.AppendUint32(b, 0)
		_, err = flushAt(bw, b, 0)
		return err
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(g.nodes)))
	b = binary.LittleEndian.AppendUint32(b, uint32(g.entry))
	b = binary.LittleEndian.AppendUint32(b, uint32(g.top))
	for _, n := range g.nodes {
		b = binary.LittleEndian.AppendUint32(b, uint32(n.slot))
		b = append(b, n.level)
		if b, err = flushAt(bw, b, 1<<16); err != nil {
			return err
		}
	}
	for _, v := range g.l0 {
		b = binary.LittleEndian.AppendUint32(b, uint32(v))
		if b, err = flushAt(bw, b, 1<<16); err != nil {
			return err
		}
	}
	for n, gn := range g.nodes {
		if gn.level == 0 {
			continue
		}
		for _, v := range g.up[int32(n)] {
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		}
		if b, err = flushAt(bw, b, 1<<16); err != nil {
			return err
		}
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(g.ghosts)))
	for n, gn := range g.nodes {
		if gn.slot >= 0 {
			continue
		}
		b = binary.LittleEndian.AppendUint32(b, uint32(n))
		for _, f := range g.ghosts[int32(n)] {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
		}
		if b, err = flushAt(bw, b, 1<<16); err != nil {
			return err
		}
	}
	_, err = flushAt(bw, b, 0)
	return err
}

// flushAt writes b to bw once it holds at least min bytes, and returns
// the buffer to fill next (b emptied once written).
func flushAt(bw *bufio.Writer, b []byte, min int) ([]byte, error) {
	if len(b) < min {
		return b, nil
	}
	_, err := bw.Write(b)
	return b[:0], err
}

// writeFloats writes vs as little-endian float32s.
func writeFloats(bw *bufio.Writer, vs []float32) error {
	if littleEndian && len(vs) > 0 {
		_, err := bw.Write(unsafe.Slice((*byte)(unsafe.Pointer(&vs[0])), len(vs)*4))
		return err
	}
	var b [4]byte
	for _, v := range vs {
		binary.LittleEndian.PutUint32(b[:], math.Float32bits(v))
		if _, err := bw.Write(b[:]); err != nil {
			return err
		}
	}
	return nil
}

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// Decode reads an index Encode wrote, of size bytes: a count that could
// not fit in them, or bytes left over, is ErrCorrupt (never a large
// allocation). Decode reads exactly size bytes from r, so the caller may
// read what follows.
func Decode(r io.Reader, size int64) (*Index, error) {
	return DecodeWith(r, size, DecodeOptions{})
}

// DecodeOptions tune Decode.
type DecodeOptions struct {
	// Codes, for DecodeIndex, reads the embeddings' int8 codes and
	// stops there: the index is coded (quant.go, Coded), and reads the
	// float32 embeddings of a search's best candidates from Codes.R, which
	// holds the encoding at Codes.Off and must not change while the index
	// is used. The graph is left out (as with NoGraph), and the encoding
	// past the codes is neither read nor checked.
	Codes *Source
	// Text, with Codes, is the text section EncodeText wrote (Size bytes
	// at Off in R), opened lazily as OpenText opens it, while the index's
	// map from ids is built; an index that is not coded (no embedding)
	// ignores it.
	Text *Source
	// NoGraph reads past the graph instead of building it: every
	// embedded row goes on the tail (searches scan exactly), for a
	// process that answers a call or two, to which decoding a large graph
	// costs more than walking it saves.
	NoGraph bool
	// NoText reads past the full-text index: the index decoded keeps no
	// text (TextLeftOut reports it).
	NoText bool
}

// Source is where an encoding is (DecodeOptions.Codes and Text).
type Source struct {
	R         io.ReaderAt
	Off, Size int64
}

// DecodeWith is Decode with options (Codes aside, which applies to
// DecodeIndex alone).
func DecodeWith(r io.Reader, size int64, opt DecodeOptions) (*Index, error) {
	opt.Codes = nil
	d := decoder{r: r, left: size}
	x, err := decodeIndex(&d, opt)
	if err != nil {
		return nil, err
	}
	x.decodeText(&d, opt.NoText, nil)
	d.done()
	if d.err != nil {
		return nil, d.err
	}
	return x, nil
}

// DecodeIndex reads an index EncodeIndex wrote, of size bytes, as Decode
// reads Encode's (opt.NoText does not apply: DecodeText reads the text).
// With opt.Codes it stops after the codes, leaving r there, when the
// index holds any embedding (Coded).
func DecodeIndex(r io.Reader, size int64, opt DecodeOptions) (*Index, error) {
	d := decoder{r: r, left: size}
	x, err := decodeIndex(&d, opt)
	if err != nil {
		return nil, err
	}
	if opt.Codes != nil && x.q != nil {
		x.q.off = opt.Codes.Off + d.consumed(size)
		return x, nil
	}
	d.done()
	if d.err != nil {
		return nil, d.err
	}
	return x, nil
}

// DecodeText reads the text section EncodeText wrote, of size bytes, into
// x, just decoded by DecodeIndex from what EncodeIndex wrote with it. With
// skip, it reads the section's first byte only and leaves its text out
// (TextLeftOut), as DecodeOptions.NoText does.
func (x *Index) DecodeText(r io.Reader, size int64, skip bool) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.text != nil || x.textLeftOut {
		return errors.New("vector: DecodeText on an index with text")
	}
	if skip {
		var flag [1]byte
		if _, err := io.ReadFull(r, flag[:]); err != nil || size < 1 {
			return fmt.Errorf("%w: no text section", ErrCorrupt)
		}
		switch {
		case flag[0] > 1:
			return fmt.Errorf("%w: text flag %d", ErrCorrupt, flag[0])
		case flag[0] == 0 && size != 1:
			return fmt.Errorf("%w: %d bytes after the text section", ErrCorrupt, size-1)
		}
		x.textLeftOut = flag[0] == 1
		return nil
	}
	d := decoder{r: r, left: size}
	x.decodeText(&d, false, nil)
	d.done()
	return d.err
}

// OpenText is DecodeText for the section of size bytes at off in r, the
// full-text index read lazily (textindex.Open): the postings of each
// token are read from r when a search or a write first needs them. r
// must hold the same bytes for as long as x is used; a token whose
// postings cannot be read then leaves x without text (HasText), and the
// searches it was in are not answered (SearchText's ok).
func (x *Index) OpenText(r io.ReaderAt, off, size int64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.openText(r, off, size)
}

// openText is OpenText, x not yet shared or under its write lock.
func (x *Index) openText(r io.ReaderAt, off, size int64) error {
	if x.text != nil || x.textLeftOut {
		return errors.New("vector: OpenText on an index with text")
	}
	d := decoder{r: io.NewSectionReader(r, off, size), left: size}
	x.decodeText(&d, false, &Source{R: r, Off: off, Size: size})
	d.done()
	return d.err
}

// decodeIndex reads what encodeIndex wrote.
func decodeIndex(d *decoder, opt DecodeOptions) (*Index, error) {
	d.startSum()
	if magic := d.next(len(encodingMagic)); d.err == nil && string(magic) != string(encodingMagic[:]) {
		return nil, fmt.Errorf("%w: not a vector index (or another version of its format)", ErrCorrupt)
	}
	dim, foreignDim := int(d.u32()), int(d.u32())
	if dim > maxEncodedDim || foreignDim > maxEncodedDim {
		return nil, fmt.Errorf("%w: dimension %d", ErrCorrupt, dim)
	}
	x := NewDim(dim)
	nStr := d.count(4)
	for range nStr {
		if s := d.str(); d.err == nil {
			x.intern(s)
		}
	}
	if d.err == nil && len(x.strList) != nStr {
		return nil, fmt.Errorf("%w: a name is interned twice", ErrCorrupt)
	}
	ref := func(v int32, optional bool) int32 {
		if (v < 0 && !(optional && v == -1)) || int(v) >= nStr {
			d.fail("name %d of %d", v, nStr)
		}
		return v
	}
	nRows := d.count(4 + rowFixed + 4*dim)
	// The embeddings first: one large allocation without pointers, so the
	// garbage collector's next goal is far enough off that the rows, names
	// and maps below are decoded without a collection.
	coded := opt.Codes != nil && nRows > 0 && dim > 0
	if !coded {
		x.vecs = make([]float32, nRows*dim)
	}
	x.rows, x.norms = make([]row, 0, nRows), make([]float32, 0, nRows)
	x.slot = make(map[string]int, nRows)
	var lists [nPostings][][]int32
	for f := range lists {
		lists[f] = make([][]int32, nStr)
	}
	le := binary.LittleEndian
	for range nRows {
		id := d.str()
		b := d.next(rowFixed) // the row's fields after its id, read at once
		if b == nil {
			return nil, d.err
		}
		i32 := func(at int) int32 { return int32(le.Uint32(b[at:])) }
		r := row{id: id, project: ref(i32(0), false), session: ref(i32(4), false), actor: ref(i32(8), false),
			kindID: ref(i32(12), false), model: ref(i32(16), true), node: -1, tail: -1, doc: -1}
		r.occurred = instant{int64(le.Uint64(b[20:])), i32(28)}
		r.seq = int64(le.Uint64(b[32:]))
		r.importance = math.Float64frombits(le.Uint64(b[40:]))
		norm := math.Float32frombits(le.Uint32(b[48:]))
		f := b[52]
		r.foreign = f == 1
		if d.err != nil {
			return nil, d.err
		}
		if f > 1 || r.occurred.nsec < 0 || r.occurred.nsec >= int32(time.Second) || r.seq < 0 || math.IsNaN(r.importance) || math.IsInf(r.importance, 0) {
			return nil, fmt.Errorf("%w: row %q", ErrCorrupt, id)
		}
		if r.model >= 0 && (dim == 0 || !(norm > 0) || math.IsInf(float64(norm), 0)) {
			return nil, fmt.Errorf("%w: row %q has an unusable embedding", ErrCorrupt, id)
		}
		s := len(x.rows)
		r.kind = mnemotype.Kind(x.strList[r.kindID])
		x.keyBytes += int64(len(id)) + strHeader + mapEntry
		// The postings, by value: the names' numbers are dense.
		for f := range nPostings {
			k := r.key(f)
			r.pos[f] = int32(len(lists[f][k.value]))
			lists[f][k.value] = append(lists[f][k.value], int32(s))
		}
		x.rows, x.norms = append(x.rows, r), append(x.norms, norm)
		x.count(&x.rows[s], 1)
	}
	for f := range nPostings {
		for v, l := range lists[f] {
			if len(l) > 0 {
				x.posts[postingKey{uint8(f), int32(v)}] = l
			}
			if f == postSession && !slices.IsSortedFunc(l, func(a, b int32) int { return cmp.Compare(x.rows[a].seq, x.rows[b].seq) }) {
				x.markUnordered(int32(v))
			}
		}
	}
	x.foreignDim = foreignDim
	// The map from ids is built on another CPU while the embeddings are
	// read: the two take about as long.
	dup := make(chan string, 1)
	defer func() {
		for range dup { // the goroutine is done before x is returned
		}
	}()
	go func() {
		defer close(dup)
		for s := range x.rows {
			id := x.rows[s].id
			if x.slot[id] = s; len(x.slot) == s {
				dup <- id
				return
			}
		}
	}()
	if coded {
		x.q = &quant{codes: make([]int8, nRows*dim), scale: make([]float32, nRows), sums: make([]uint32, nRows), orig: make([]int32, nRows),
			fresh: map[string][]float32{}, src: opt.Codes.R}
	}
	x.readCodes(d)
	if coded {
		if d.err == nil {
			x.graphLeftOut = true
			for s := range x.rows {
				x.q.orig[s] = int32(s)
				if x.rows[s].model >= 0 {
					x.toTail(s)
				}
			}
		}
		// The text is opened while the map is built: it writes the rows'
		// documents, the map reads their ids.
		var textErr error
		if t := opt.Text; t != nil && d.err == nil {
			textErr = x.openText(t.R, t.Off, t.Size)
		}
		if id, ok := <-dup; ok {
			return nil, fmt.Errorf("%w: row %q twice", ErrCorrupt, id)
		}
		if d.err != nil {
			return nil, d.err
		}
		if textErr != nil {
			return nil, textErr
		}
		return x, nil
	}
	if len(x.vecs) > 0 {
		b := unsafe.Slice((*byte)(unsafe.Pointer(&x.vecs[0])), len(x.vecs)*4)
		d.fill(b)
		if !littleEndian {
			for i := range x.vecs {
				x.vecs[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[i*4:]))
			}
		}
	}
	if opt.NoGraph {
		x.skipGraph(d)
	} else {
		x.decodeGraph(d)
	}
	if id, ok := <-dup; ok {
		return nil, fmt.Errorf("%w: row %q twice", ErrCorrupt, id)
	}
	if d.err != nil {
		return nil, d.err
	}
	return x, nil
}

// readCodes reads the rows' codes (encodeCodes) into x.q when it is set,
// and the checksum of all read so far.
func (x *Index) readCodes(d *decoder) {
	if x.dim > 0 {
		for s := range x.rows {
			b := d.next(8 + x.dim)
			if b == nil {
				return
			}
			sc := math.Float32frombits(binary.LittleEndian.Uint32(b))
			if !(sc >= 0) || math.IsInf(float64(sc), 0) || (sc == 0 && x.rows[s].model >= 0) {
				d.fail("row %q: codes of scale %v", x.rows[s].id, sc)
				return
			}
			if q := x.q; q != nil {
				q.scale[s], q.sums[s] = sc, binary.LittleEndian.Uint32(b[4:])
				copy(q.codes[s*x.dim:(s+1)*x.dim], unsafe.Slice((*int8)(unsafe.Pointer(&b[8])), x.dim))
			}
		}
	}
	crc := d.endSum()
	if sum := d.u32(); d.err == nil && sum != crc {
		d.fail("checksum mismatch in the rows or codes")
	}
}

// skipGraph reads past the graph Encode wrote after the embeddings and
// puts every embedded row on the tail.
func (x *Index) skipGraph(d *decoder) {
	nNodes := d.count(4 + 1 + (graphM0+1)*4)
	x.graphLeftOut = nNodes > 0
	if nNodes > 0 {
		d.discard(8)
		var upper int64
		for range nNodes {
			d.discard(4)
			if l := d.u8(); l > graphMaxLevel {
				d.fail("graph node level %d", l)
			} else {
				upper += int64(l) * (graphM + 1) * 4
			}
		}
		d.discard(int64(nNodes)*(graphM0+1)*4 + upper)
		d.discard(int64(d.count(4+4*x.dim)) * int64(4+4*x.dim))
	}
	if d.err == nil {
		for s := range x.rows {
			if x.rows[s].model >= 0 {
				x.toTail(s)
			}
		}
	}
}

// decodeGraph reads the graph Encode wrote after the embeddings, checking
// that every link names a node, every live node an embedded row of its
// own, and every tombstone has its vector; the embedded rows no node
// holds go on the tail.
func (x *Index) decodeGraph(d *decoder) {
	defer func() {
		if d.err != nil {
			return
		}
		for s := range x.rows {
			if r := &x.rows[s]; r.model >= 0 && r.node < 0 {
				x.toTail(s)
			}
		}
	}()
	nNodes := d.count(4 + 1 + (graphM0+1)*4)
	if nNodes == 0 {
		return
	}
	g := newGraph()
	g.entry, g.top = d.i32(), int(d.u32())
	g.nodes = make([]gnode, nNodes)
	maxLevel := 0
	for n := range g.nodes {
		slot, level := d.i32(), d.u8()
		if d.err != nil {
			return
		}
		if slot < -1 || int(slot) >= len(x.rows) || level > graphMaxLevel {
			d.fail("graph node %d: slot %d, level %d", n, slot, level)
			return
		}
		if slot >= 0 {
			r := &x.rows[slot]
			if r.model < 0 || r.node >= 0 {
				d.fail("graph node %d: row %d is not embedded or has another node", n, slot)
				return
			}
			r.node = int32(n)
			g.nodes[n] = gnode{slot: slot, level: level, inv: x.norms[slot]}
		} else {
			g.dead++
			g.nodes[n] = gnode{slot: slot, level: level, inv: 1}
		}
		maxLevel = max(maxLevel, int(level))
	}
	if g.entry < 0 || int(g.entry) >= nNodes || g.top != int(g.nodes[g.entry].level) || g.top != maxLevel {
		d.fail("graph entry %d at level %d", g.entry, g.top)
		return
	}
	// links checks a node's list at layer l: each link names a node linked
	// in that layer.
	links := func(ls []int32, m, l int) bool {
		if ls[0] < 0 || int(ls[0]) > m {
			return false
		}
		for _, nb := range ls[1 : 1+ls[0]] {
			if nb < 0 || int(nb) >= nNodes || int(g.nodes[nb].level) < l {
				return false
			}
		}
		return true
	}
	g.l0 = make([]int32, nNodes*(graphM0+1))
	d.fill(unsafe.Slice((*byte)(unsafe.Pointer(&g.l0[0])), len(g.l0)*4))
	if !littleEndian {
		b := unsafe.Slice((*byte)(unsafe.Pointer(&g.l0[0])), len(g.l0)*4)
		for i := range g.l0 {
			g.l0[i] = int32(binary.LittleEndian.Uint32(b[i*4:]))
		}
	}
	for n := range nNodes {
		if d.err == nil && !links(g.links(int32(n), 0), graphM0, 0) {
			d.fail("graph node %d: bad links", n)
		}
	}
	for n, gn := range g.nodes {
		if gn.level == 0 || d.err != nil {
			continue
		}
		up := make([]int32, int(gn.level)*(graphM+1))
		for i := range up {
			up[i] = d.i32()
		}
		g.up[int32(n)] = up
		for l := 1; l <= int(gn.level) && d.err == nil; l++ {
			if !links(g.links(int32(n), l), graphM, l) {
				d.fail("graph node %d: bad links at layer %d", n, l)
			}
		}
	}
	nGhosts := d.count(4 + 4*x.dim)
	if d.err == nil && nGhosts != g.dead {
		d.fail("%d tombstones, %d vectors", g.dead, nGhosts)
	}
	for range nGhosts {
		n := d.i32()
		if d.err != nil {
			return
		}
		if n < 0 || int(n) >= nNodes || g.nodes[n].slot >= 0 || g.ghosts[n] != nil {
			d.fail("graph tombstone %d", n)
			return
		}
		v := make([]float32, x.dim)
		for i := range v {
			v[i] = math.Float32frombits(d.u32())
		}
		g.ghosts[n] = v
	}
	if d.err == nil {
		x.graph = g
	}
}

// decodeText reads the text section Encode wrote after the graph,
// checking that the rows and the text index's live documents match one to
// one (every row has one unless the text was incomplete). With lazy (the
// section d reads), the text index is opened there, not read.
func (x *Index) decodeText(d *decoder, skip bool, lazy *Source) {
	d.startSum()
	switch flag := d.u8(); {
	case d.err != nil || flag == 0:
		return
	case flag != 1:
		d.fail("text flag %d", flag)
		return
	}
	docs := make([]int32, len(x.rows))
	hashes := make([]uint64, len(x.rows))
	for s := range x.rows {
		docs[s], hashes[s] = d.i32(), d.u64()
	}
	broken := d.u8()
	n := d.u64()
	crc := d.endSum()
	sum := d.u32()
	if d.err != nil {
		return
	}
	if crc != sum {
		d.fail("text section checksum mismatch")
		return
	}
	if broken > 1 || n > uint64(d.left+int64(len(d.buf)-d.pos)) {
		d.fail("text index of %d bytes", n)
		return
	}
	if skip {
		d.discard(int64(n))
		x.textLeftOut = true
		return
	}
	var t *textindex.Index
	var err error
	if lazy != nil {
		// The text index ends the section.
		rest := d.left + int64(len(d.buf)-d.pos)
		if int64(n) != rest {
			d.fail("text index of %d bytes in the last %d", n, rest)
			return
		}
		t, err = textindex.Open(io.NewSectionReader(lazy.R, lazy.Off+lazy.Size-rest, rest), rest)
		d.pos, d.left = len(d.buf), 0
	} else {
		blob := make([]byte, n)
		d.fill(blob)
		if d.err != nil {
			return
		}
		t, err = textindex.Decode(blob)
	}
	if err != nil {
		d.fail("%v", err)
		return
	}
	docSlot := make([]int32, t.Docs())
	for i := range docSlot {
		docSlot[i] = -1
	}
	held := 0
	for s, doc := range docs {
		switch {
		case doc == -1 && broken == 1:
		case doc < 0 || int(doc) >= len(docSlot) || !t.Live(uint32(doc)) || docSlot[doc] >= 0:
			d.fail("row %q: text document %d", x.rows[s].id, doc)
			return
		default:
			docSlot[doc] = int32(s)
			held++
		}
	}
	if held != t.Len() {
		d.fail("%d text documents for %d rows", t.Len(), held)
		return
	}
	for s := range x.rows {
		x.rows[s].doc, x.rows[s].textHash = docs[s], hashes[s]
	}
	x.text, x.docSlot, x.textBroken = t, docSlot, broken == 1
}

// decoder reads little-endian values from a buffer it fills from r in
// large reads, remembering the first error. It never reads past the
// encoding's end (size bytes), so the caller may read what follows.
type decoder struct {
	r    io.Reader
	left int64  // bytes of the encoding not yet read from r
	buf  []byte // read from r; buf[pos:] is not yet consumed
	pos  int
	err  error
	// crc is the CRC-32C of the bytes consumed while summing, up to
	// buf[sumPos] (see sum).
	crc     uint32
	summing bool
	sumPos  int
}

// startSum starts the CRC-32C of the bytes consumed from now on.
func (d *decoder) startSum() { d.summing, d.crc, d.sumPos = true, 0, d.pos }

// sum adds the bytes consumed from the buffer since the last call to the
// CRC: once per refill, not once per value read.
func (d *decoder) sum() {
	if d.summing {
		d.crc = crc32.Update(d.crc, castagnoli, d.buf[d.sumPos:d.pos])
		d.sumPos = d.pos
	}
}

// endSum returns the CRC-32C of the bytes consumed since startSum.
func (d *decoder) endSum() uint32 {
	d.sum()
	d.summing = false
	return d.crc
}

// consumed returns how many bytes of an encoding of size bytes d has
// consumed.
func (d *decoder) consumed(size int64) int64 { return size - d.left - int64(len(d.buf)-d.pos) }

const decodeBuffer = 1 << 20

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
	}
}

// next returns the next n bytes (valid until the next call), or nil once
// the decoder has failed.
func (d *decoder) next(n int) []byte {
	if d.err != nil {
		return nil
	}
	if have := len(d.buf) - d.pos; have < n {
		if int64(n-have) > d.left {
			d.fail("truncated")
			return nil
		}
		d.sum() // before the consumed bytes go
		if cap(d.buf) < n {
			nb := make([]byte, have, max(n, decodeBuffer))
			copy(nb, d.buf[d.pos:])
			d.buf = nb
		} else {
			d.buf = d.buf[:copy(d.buf[:cap(d.buf)], d.buf[d.pos:])]
		}
		d.pos, d.sumPos = 0, 0
		more := int(min(int64(cap(d.buf)-have), d.left))
		if _, err := io.ReadFull(d.r, d.buf[have:have+more]); err != nil {
			d.readFailed(err)
			return nil
		}
		d.buf, d.left = d.buf[:have+more], d.left-int64(more)
	}
	b := d.buf[d.pos : d.pos+n]
	d.pos += n
	return b
}

func (d *decoder) readFailed(err error) {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		d.fail("truncated")
	} else if d.err == nil {
		d.err = err
	}
}

// fill reads exactly len(p) bytes into p: what the buffer holds, then
// straight from r.
func (d *decoder) fill(p []byte) {
	if d.err != nil {
		return
	}
	n := copy(p, d.buf[d.pos:])
	d.pos += n
	if rest := p[n:]; len(rest) > 0 {
		if int64(len(rest)) > d.left {
			d.fail("truncated")
			return
		}
		if _, err := io.ReadFull(d.r, rest); err != nil {
			d.readFailed(err)
			return
		}
		d.left -= int64(len(rest))
	}
	d.sum()
	if d.summing {
		d.crc = crc32.Update(d.crc, castagnoli, p[n:])
		d.sumPos = d.pos
	}
}

// discard reads past the next n bytes.
func (d *decoder) discard(n int64) {
	if d.err != nil || n <= 0 {
		return
	}
	have := int64(len(d.buf) - d.pos)
	if n <= have {
		d.pos += int(n)
		return
	}
	d.pos = len(d.buf)
	rest := n - have
	if rest > d.left {
		d.fail("truncated")
		return
	}
	if _, err := io.CopyN(io.Discard, d.r, rest); err != nil {
		d.readFailed(err)
		return
	}
	d.left -= rest
}

// done fails unless the whole encoding was consumed.
func (d *decoder) done() {
	if d.err == nil && (d.left > 0 || d.pos < len(d.buf)) {
		d.fail("%d bytes after the encoding", d.left+int64(len(d.buf)-d.pos))
	}
}

func (d *decoder) u32() uint32 {
	if b := d.next(4); b != nil {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) i32() int32 { return int32(d.u32()) }

func (d *decoder) u64() uint64 {
	if b := d.next(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

func (d *decoder) u8() byte {
	if b := d.next(1); b != nil {
		return b[0]
	}
	return 0
}

// count reads a count of items of at least each bytes apiece, failing
// when they could not fit in what is left.
func (d *decoder) count(each int) int {
	n := int64(d.u32())
	if left := d.left + int64(len(d.buf)-d.pos); d.err == nil && n*int64(each) > left {
		d.fail("%d items cannot fit in %d bytes", n, left)
	}
	if d.err != nil {
		return 0
	}
	return int(n)
}

func (d *decoder) str() string {
	n := d.u32()
	if d.err == nil && n > maxEncodedStr {
		d.fail("a name of %d bytes", n)
	}
	return string(d.next(int(n)))
}

// Diff lists up to max differences between what a and b hold (memories,
// their scope, embedding model and embedding), in a's slot order then b's
// extra ids; none means they answer every search alike.
func Diff(a, b *Index, max int) []string {
	a.mu.RLock()
	defer a.mu.RUnlock()
	b.mu.RLock()
	defer b.mu.RUnlock()
	var out []string
	add := func(format string, args ...any) bool {
		out = append(out, fmt.Sprintf(format, args...))
		return len(out) < max
	}
	if a.dim != b.dim && a.embedded+b.embedded > 0 && !add("dimension %d, the other %d", a.dim, b.dim) {
		return out
	}
	name := func(x *Index, v int32) string {
		if v < 0 {
			return ""
		}
		return x.strList[v]
	}
	texts := a.text != nil && b.text != nil
	bufA, bufB := make([]float32, a.dim), make([]float32, b.dim)
	switch {
	case (a.text != nil) != (b.text != nil):
		if !add("a full-text index in %s only", map[bool]string{true: "the first", false: "the other"}[a.text != nil]) {
			return out
		}
	case texts && (a.text.Len() != b.text.Len() || a.text.Totals() != b.text.Totals() || a.textBroken != b.textBroken):
		if !add("full-text index: %d documents of lengths %v (incomplete %v), the other %d of %v (%v)", a.text.Len(), a.text.Totals(),
			a.textBroken, b.text.Len(), b.text.Totals(), b.textBroken) {
			return out
		}
	}
	for s := range a.rows {
		ra := &a.rows[s]
		t, ok := b.slot[ra.id]
		if !ok {
			if !add("%s: only in the first", ra.id) {
				return out
			}
			continue
		}
		rb := &b.rows[t]
		for _, f := range []struct {
			what   string
			va, vb string
		}{
			{"project", name(a, ra.project), name(b, rb.project)},
			{"session", name(a, ra.session), name(b, rb.session)},
			{"actor", name(a, ra.actor), name(b, rb.actor)},
			{"kind", string(ra.kind), string(rb.kind)},
			{"model", name(a, ra.model), name(b, rb.model)},
			{"occurred", fmt.Sprint(ra.occurred), fmt.Sprint(rb.occurred)},
			{"seq", fmt.Sprint(ra.seq), fmt.Sprint(rb.seq)},
			{"importance", fmt.Sprint(ra.importance), fmt.Sprint(rb.importance)},
			{"foreign", fmt.Sprint(ra.foreign), fmt.Sprint(rb.foreign)},
		} {
			if f.va != f.vb && !add("%s: %s %q, the other %q", ra.id, f.what, f.va, f.vb) {
				return out
			}
		}
		if texts && ((ra.doc >= 0) != (rb.doc >= 0) || ra.textHash != rb.textHash) && !add("%s: indexed text differs", ra.id) {
			return out
		}
		if ra.model >= 0 && rb.model >= 0 && a.dim == b.dim {
			va, errA := a.vector(s, bufA)
			vb, errB := b.vector(t, bufB)
			err := errors.Join(errA, errB)
			if err != nil && !add("%s: %v", ra.id, err) {
				return out
			}
			if err == nil && !slices.Equal(va, vb) && !add("%s: embedding differs", ra.id) {
				return out
			}
		}
	}
	for t := range b.rows {
		if _, ok := a.slot[b.rows[t].id]; !ok && !add("%s: only in the other", b.rows[t].id) {
			return out
		}
	}
	return out
}
