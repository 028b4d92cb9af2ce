package vector

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// encodingMagic opens an encoded index; its last byte is the format's
// version.
var encodingMagic = [8]byte{'m', 'n', 'e', 'm', 'o', 'v', 'x', 1}

// Bounds Decode enforces before it allocates.
const (
	maxEncodedDim = 1 << 16
	maxEncodedStr = 1 << 20
)

// ErrCorrupt reports an encoding Decode cannot read.
var ErrCorrupt = errors.New("corrupt vector index encoding")

// Encode writes x in a binary format Decode reads: the interned names, each
// row's id and scope, then the embeddings (little-endian float32). It holds
// x's read lock throughout, so x does not change while it is written.
func (x *Index) Encode(w io.Writer) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	bw := bufio.NewWriterSize(w, 1<<20)
	var b []byte
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
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(r.invNorm))
		f := byte(0)
		if r.foreign {
			f = 1
		}
		b = append(b, f)
		if len(b) >= 1<<16 {
			if _, err := bw.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	for _, v := range x.vecs[:len(x.rows)*x.dim] {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
		if len(b) >= 1<<16 {
			if _, err := bw.Write(b); err != nil {
				return err
			}
			b = b[:0]
		}
	}
	if _, err := bw.Write(b); err != nil {
		return err
	}
	return bw.Flush()
}

func appendString(b []byte, s string) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// Decode reads an index Encode wrote. size bounds what the encoding can
// hold (the bytes available to read): a count that could not fit is
// ErrCorrupt rather than an allocation. Decode reads exactly the encoding,
// so the caller may read what follows it.
func Decode(r io.Reader, size int64) (*Index, error) {
	d := decoder{r: r, left: size}
	var magic [8]byte
	d.read(magic[:])
	if d.err == nil && magic != encodingMagic {
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
	nRows := d.count(4 + 5*4 + 8 + 4 + 4 + 1 + 4*dim)
	x.rows = make([]row, 0, nRows)
	for range nRows {
		id := d.str()
		r := row{id: id, project: ref(d.i32(), false), session: ref(d.i32(), false), actor: ref(d.i32(), false),
			kindID: ref(d.i32(), false), model: ref(d.i32(), true)}
		r.occurred = instant{int64(d.u64()), int32(d.u32())}
		r.invNorm = math.Float32frombits(d.u32())
		var f [1]byte
		d.read(f[:])
		r.foreign = f[0] == 1
		if d.err != nil {
			return nil, d.err
		}
		if f[0] > 1 || r.occurred.nsec < 0 || r.occurred.nsec >= int32(time.Second) {
			return nil, fmt.Errorf("%w: row %q", ErrCorrupt, id)
		}
		if r.model >= 0 && (dim == 0 || !(r.invNorm > 0) || math.IsInf(float64(r.invNorm), 0)) {
			return nil, fmt.Errorf("%w: row %q has an unusable embedding", ErrCorrupt, id)
		}
		if _, dup := x.slot[id]; dup {
			return nil, fmt.Errorf("%w: row %q twice", ErrCorrupt, id)
		}
		r.kind = mnemotype.Kind(x.strList[r.kindID])
		s := len(x.rows)
		x.slot[id] = s
		x.keyBytes += int64(len(id)) + strHeader + mapEntry
		x.rows = append(x.rows, r)
		x.count(&x.rows[s], 1)
		x.post(s)
	}
	x.foreignDim = foreignDim
	x.vecs = make([]float32, nRows*dim)
	buf := make([]byte, 1<<16)
	for i := 0; i < len(x.vecs) && d.err == nil; {
		n := min(len(buf)/4, len(x.vecs)-i)
		d.read(buf[:n*4])
		for j := range n {
			x.vecs[i+j] = math.Float32frombits(binary.LittleEndian.Uint32(buf[j*4:]))
		}
		i += n
	}
	if d.err != nil {
		return nil, d.err
	}
	return x, nil
}

// decoder reads little-endian values, remembering the first error.
type decoder struct {
	r    io.Reader
	left int64 // bytes the encoding may still hold
	err  error
	b    [8]byte
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrCorrupt}, args...)...)
	}
}

func (d *decoder) read(p []byte) {
	if d.err != nil {
		clear(p)
		return
	}
	if d.left -= int64(len(p)); d.left < 0 {
		d.fail("truncated")
		clear(p)
		return
	}
	if _, err := io.ReadFull(d.r, p); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			d.fail("truncated")
		} else if d.err == nil {
			d.err = err
		}
		clear(p)
	}
}

func (d *decoder) u32() uint32 { d.read(d.b[:4]); return binary.LittleEndian.Uint32(d.b[:4]) }
func (d *decoder) i32() int32  { return int32(d.u32()) }
func (d *decoder) u64() uint64 { d.read(d.b[:8]); return binary.LittleEndian.Uint64(d.b[:8]) }

// count reads a count of items of at least each bytes apiece, failing
// when they could not fit in what is left.
func (d *decoder) count(each int) int {
	n := int64(d.u32())
	if d.err == nil && n*int64(each) > d.left {
		d.fail("%d items cannot fit in %d bytes", n, d.left)
	}
	if d.err != nil {
		return 0
	}
	return int(n)
}

func (d *decoder) str() string {
	n := d.u32()
	if d.err == nil && (n > maxEncodedStr || int64(n) > d.left) {
		d.fail("a name of %d bytes", n)
	}
	if d.err != nil {
		return ""
	}
	p := make([]byte, n)
	d.read(p)
	return string(p)
}
