package store

import "context"

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

// AllowReplica marks ctx's reads as a recall's, which a store may serve
// from a read replica (see WithConsistency). Reads not so marked (those a
// write depends on) go to the primary.
func AllowReplica(ctx context.Context) context.Context {
	return context.WithValue(ctx, replicaKey{}, true)
}

// ReplicaAllowed reports whether ctx's reads may go to a replica.
func ReplicaAllowed(ctx context.Context) bool {
	ok, _ := ctx.Value(replicaKey{}).(bool)
	return ok
}
