package store

import (
	"context"
	"sync"
)

type consistencyKey struct{}

// WithConsistency returns ctx carrying token, a position a write returned
// (a Positioner's): a store with read replicas serves the reads made under
// it from a copy that has replayed that position, so they see the write
// and every write before it (read-your-writes).
func WithConsistency(ctx context.Context, token string) context.Context {
	if token == "" {
		return ctx
	}
	return context.WithValue(ctx, consistencyKey{}, token)
}

// ConsistencyFrom returns the token ctx carries ("" for none).
func ConsistencyFrom(ctx context.Context) string {
	s, _ := ctx.Value(consistencyKey{}).(string)
	return s
}

// Positioner is a store whose reads may be served by copies that lag its
// writes (the Postgres store with read replicas). Position returns a token
// for what has been written so far ("" when every read sees every write
// anyway); a read under WithConsistency(ctx, token) sees all of it.
type Positioner interface {
	Position(ctx context.Context) (string, error)
}

type replicaKey struct{}

// AllowReplica marks ctx's reads as one recall's, which a store may serve
// from a read replica (see WithConsistency); the first read chooses the
// replica and the others read the same copy. Reads not so marked (those a
// write depends on, and recalls of callers that cannot send a consistency
// token) go to the primary.
func AllowReplica(ctx context.Context) context.Context {
	return context.WithValue(ctx, replicaKey{}, &ReplicaChoice{})
}

// ReplicaChoice is the copy of the database one recall reads.
type ReplicaChoice struct {
	mu sync.Mutex
	v  any
}

// ReplicaChoiceFrom returns ctx's choice, nil when its reads may not go to
// a replica.
func ReplicaChoiceFrom(ctx context.Context) *ReplicaChoice {
	c, _ := ctx.Value(replicaKey{}).(*ReplicaChoice)
	return c
}

// Choose returns the choice, made by choose on first use.
func (c *ReplicaChoice) Choose(choose func() any) any {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.v == nil {
		c.v = choose()
	}
	return c.v
}
