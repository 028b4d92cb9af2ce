package glove

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"strings"
)

// The model file is little-endian and laid out as:
//
//	header      headerSize bytes (see header)
//	component   dim × float32           the unit common component to remove
//	weights     vocab × float32         SIF weight a/(a+p(w)) of each word
//	scales      vocab × float32         dequantisation scale of each vector
//	vectors     vocab × dim × (1|4)     int8 (× scale) or float32 (scale 1)
//	offsets     (vocab+1) × uint32      word i is blob[offsets[i]:offsets[i+1]]
//	blob        blobLen bytes           the words, concatenated, lowercase UTF-8
//	table       slots × uint32          open-addressing hash table, linear
//	                                    probing on fnv1a64(word); entry = index+1,
//	                                    0 = empty; slots is a power of two
//	crc         uint32                  CRC-32C of every preceding byte
//
// Words are stored in decreasing frequency order. Nothing is decoded at load
// time: sections are read in place with encoding/binary.

const (
	fileMagic   = "MNGLOVE\x00"
	fileVersion = 1
	headerSize  = 96
	nameSize    = 24
)

// Precision is how word vectors are stored in a model file.
type Precision uint32

// Precisions.
const (
	// Int8 stores each vector as int8 components times a per-word float32
	// scale (max |component| / 127): a quarter of the size of Float32.
	Int8 Precision = 1
	// Float32 stores vectors unquantised.
	Float32 Precision = 4
)

// String returns "int8" or "float32".
func (p Precision) String() string {
	switch p {
	case Int8:
		return "int8"
	case Float32:
		return "float32"
	default:
		return fmt.Sprintf("precision(%d)", uint32(p))
	}
}

func (p Precision) valid() bool { return p == Int8 || p == Float32 }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// header is the fixed-size start of a model file.
type header struct {
	dim       uint32
	vocab     uint32
	precision Precision
	slots     uint32
	blobLen   uint32
	sifA      float32
	srcVocab  uint32 // vocabulary size of the source, the N of the Zipf estimate
	name      string

	// Runtime parameters of the embedding function, kept with the vectors so
	// that one file defines one model.
	titleWeight float32 // weight multiplier of capitalised words inside a sentence

	// Conversion parameters, for the record.
	abttWords uint32 // words whose mean and principal components were removed
	abttDims  uint32 // principal components removed from every word vector
}

func (h *header) marshal() []byte {
	b := make([]byte, headerSize)
	copy(b, fileMagic)
	le := binary.LittleEndian
	le.PutUint32(b[8:], fileVersion)
	le.PutUint32(b[12:], h.dim)
	le.PutUint32(b[16:], h.vocab)
	le.PutUint32(b[20:], uint32(h.precision))
	le.PutUint32(b[24:], h.slots)
	le.PutUint32(b[28:], h.blobLen)
	le.PutUint32(b[32:], math.Float32bits(h.sifA))
	le.PutUint32(b[36:], h.srcVocab)
	copy(b[40:40+nameSize], h.name)
	le.PutUint32(b[64:], math.Float32bits(h.titleWeight))
	le.PutUint32(b[72:], h.abttWords)
	le.PutUint32(b[76:], h.abttDims)
	return b
}

func (h *header) unmarshal(b []byte) error {
	if len(b) < headerSize || string(b[:8]) != fileMagic {
		return fmt.Errorf("not a mnemo glove model file")
	}
	le := binary.LittleEndian
	if v := le.Uint32(b[8:]); v != fileVersion {
		return fmt.Errorf("model file version %d, want %d", v, fileVersion)
	}
	h.dim = le.Uint32(b[12:])
	h.vocab = le.Uint32(b[16:])
	h.precision = Precision(le.Uint32(b[20:]))
	h.slots = le.Uint32(b[24:])
	h.blobLen = le.Uint32(b[28:])
	h.sifA = math.Float32frombits(le.Uint32(b[32:]))
	h.srcVocab = le.Uint32(b[36:])
	h.name = strings.TrimRight(string(b[40:40+nameSize]), "\x00")
	h.titleWeight = math.Float32frombits(le.Uint32(b[64:]))
	h.abttWords = le.Uint32(b[72:])
	h.abttDims = le.Uint32(b[76:])
	switch {
	case h.dim == 0 || h.dim > 4096:
		return fmt.Errorf("dimension %d out of range", h.dim)
	case h.vocab == 0 || h.vocab > 1<<26:
		return fmt.Errorf("vocabulary size %d out of range", h.vocab)
	case !h.precision.valid():
		return fmt.Errorf("unknown precision %d", uint32(h.precision))
	case h.slots < h.vocab || h.slots&(h.slots-1) != 0:
		return fmt.Errorf("hash table size %d invalid for vocabulary %d", h.slots, h.vocab)
	case h.name == "":
		return fmt.Errorf("model name missing")
	case !(h.titleWeight >= 0 && h.titleWeight <= 1):
		return fmt.Errorf("title weight %v out of range", h.titleWeight)
	}
	return nil
}

// layout holds the byte offsets of a file's sections.
type layout struct {
	component, weights, scales, vectors, offsets, blob, table, crc, size int
}

func (h *header) layout() layout {
	var l layout
	dim, n := int(h.dim), int(h.vocab)
	l.component = headerSize
	l.weights = l.component + 4*dim
	l.scales = l.weights + 4*n
	l.vectors = l.scales + 4*n
	l.offsets = l.vectors + n*dim*int(h.precision)
	l.blob = l.offsets + 4*(n+1)
	l.table = l.blob + int(h.blobLen)
	l.crc = l.table + 4*int(h.slots)
	l.size = l.crc + 4
	return l
}

// fnv1a is the 64-bit FNV-1a hash of b, the model file's table hash.
func fnv1a(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

// tableSlots returns the hash table size for n words: a power of two with a
// load factor of at most 1/2.
func tableSlots(n int) int {
	s := 1
	for s < 2*n {
		s <<= 1
	}
	return s
}
