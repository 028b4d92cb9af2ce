package store

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mnemo-dev/mnemo/mnemotype"
)

// This file holds what every implementation of Store does alike.

// Validate reports why k cannot be stored (an ErrInvalid error), or nil.
func (k APIKey) Validate() error {
	switch {
	case strings.TrimSpace(k.ID) == "":
		return mnemotype.Invalidf("key id is empty")
	case k.Role != RoleProfile && k.Role != RoleService && k.Role != RoleAdmin:
		return mnemotype.Invalidf("key role %q: must be %q (a profile key), %q or %q", k.Role, RoleProfile, RoleService, RoleAdmin)
	case k.Role == RoleProfile && k.Profile != DeletedProfile && mnemotype.CheckProfile(k.Profile) != nil:
		return mnemotype.CheckProfile(k.Profile)
	case k.Role != RoleProfile && k.Profile != "":
		return mnemotype.Invalidf("a %s key is bound to no one profile: profile must be empty", k.Role)
	case k.Role != RoleService && len(k.Profiles) > 0:
		return mnemotype.Invalidf("only a service key lists profiles")
	case slices.ContainsFunc(k.Profiles, func(p string) bool { return mnemotype.CheckProfile(p) != nil }):
		return mnemotype.Invalidf("a service key's profiles must each be a valid profile name")
	case strings.TrimSpace(k.Hash) == "":
		return mnemotype.Invalidf("key hash is empty")
	}
	return nil
}

// Apply changes m as p asks (its set fields; an embedding when
// p.EmbeddingModel is set) and checks the result: an ErrInvalid error
// naming the field when it is not a valid memory. It does not check p's
// conditions (IfContent, IfEmbeddingModel) nor number the turn.
func (p UpdateParams) Apply(m *mnemotype.Memory) error {
	if p.Content != nil {
		m.Content = *p.Content
	}
	if p.Kind != nil {
		m.Kind = *p.Kind
	}
	if p.Project != nil {
		m.Project = *p.Project
	}
	if p.Session != nil {
		m.Session = *p.Session
	}
	if p.Actor != nil {
		m.Actor = *p.Actor
	}
	if p.Seq != nil {
		m.Seq = *p.Seq
	}
	if p.OccurredAt != nil {
		m.OccurredAt = *p.OccurredAt
	}
	if p.Importance != nil {
		m.Importance = *p.Importance
	}
	if p.Metadata != nil {
		m.Metadata = *p.Metadata
	}
	if p.EmbeddingModel != "" {
		m.Embedding, m.EmbeddingModel = p.Embedding, p.EmbeddingModel
	}
	if err := m.Validate(); err != nil {
		return err
	}
	if p.OccurredAt != nil {
		return mnemotype.CheckTime("occurred_at", m.OccurredAt)
	}
	return nil
}

// EncodeVector encodes v as little-endian float32s, the form the stores
// keep embeddings in.
func EncodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

// DecodeVector decodes EncodeVector's form.
func DecodeVector(b []byte) ([]float32, error) {
	return DecodeVectorInto(make([]float32, 0, len(b)/4), b)
}

// SameVector reports whether a and b hold the same floats, bit for bit
// (the round trip an embedding's storage must keep).
func SameVector(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// DecodeVectorInto is DecodeVector appending to dst (dst[:0] reuses its
// memory).
func DecodeVectorInto(dst []float32, b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("embedding of %d bytes is not a float32 vector", len(b))
	}
	for i := 0; i < len(b); i += 4 {
		dst = append(dst, math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))
	}
	return dst, nil
}

// Rows is a result set as database/sql and pgx both give it.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// NeighborRow is one row of a Neighbors query: the neighbour's id, the id
// of the memory it is near, the absolute difference of their Seq, the
// neighbour's Seq.
type NeighborRow struct {
	ID, Of   string
	Abs, Seq int64
}

// ReadNeighbors reads the rows of a Neighbors query (NeighborRow's
// columns) and returns them as SortNeighbors does.
func ReadNeighbors(rows Rows) ([]Neighbor, error) {
	var ns []NeighborRow
	for rows.Next() {
		var n NeighborRow
		if err := rows.Scan(&n.ID, &n.Of, &n.Abs, &n.Seq); err != nil {
			return nil, fmt.Errorf("neighbours: %w", err)
		}
		ns = append(ns, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("neighbours: %w", err)
	}
	return SortNeighbors(ns), nil
}

// SortNeighbors returns the rows of a Neighbors query in the order
// Store.Neighbors promises (by the memory's id in byte order, then
// distance, then Seq, then id), whatever order or collation they came in;
// a distance is at least 1 (two turns may share a number).
func SortNeighbors(ns []NeighborRow) []Neighbor {
	slices.SortFunc(ns, func(a, b NeighborRow) int {
		return cmp.Or(strings.Compare(a.Of, b.Of), cmp.Compare(a.Abs, b.Abs), cmp.Compare(a.Seq, b.Seq), strings.Compare(a.ID, b.ID))
	})
	out := make([]Neighbor, len(ns))
	for i, n := range ns {
		out[i] = Neighbor{ID: n.ID, Of: n.Of, Distance: max(1, int(n.Abs))}
	}
	return out
}
