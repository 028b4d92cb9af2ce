package store

import (
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
	case k.Role == RoleProfile && strings.TrimSpace(k.Profile) == "":
		return mnemotype.Invalidf("profile is required")
	case k.Role != RoleProfile && k.Profile != "":
		return mnemotype.Invalidf("a %s key is bound to no one profile: profile must be empty", k.Role)
	case k.Role != RoleService && len(k.Profiles) > 0:
		return mnemotype.Invalidf("only a service key lists profiles")
	case slices.ContainsFunc(k.Profiles, func(p string) bool { return strings.TrimSpace(p) == "" }):
		return mnemotype.Invalidf("a service key's profiles must not be empty")
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
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("embedding of %d bytes is not a float32 vector", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}
