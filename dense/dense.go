// Package dense provides mnemo's dense retrieval: cosine similarity between
// a query embedding and the embeddings stored for a profile, inside a
// scope. The recall pipeline consumes it through a small port (recall.Dense:
// Search and Score, both taking a Query); this package holds the port's
// in-process implementations over a store:
//
//   - Catalog keeps each profile's embeddings in memory (package vector),
//     caught up with the store's change feed before every call, under a byte
//     budget with least-recently-used eviction; loading is streamed in pages
//     and done once per profile however many callers wait for it. With
//     Options.Dir it keeps a snapshot of each large index on disk, which a
//     new process restores and catches up from (snapshot.go). With
//     Options.Text each index also keeps the profile's full-text index
//     (package textindex), and the catalog answers the store's lexical
//     searches and neighbour lookups in process (text.go).
//   - Scan keeps nothing: it reads the embeddings it needs from the store on
//     every call, for one-shot processes that score a small pool.
//
// A store that ranks by embeddings itself (pgvector) implements the same
// port; package densetest is the conformance suite every implementation
// runs.
package dense

import (
	"cmp"
	"slices"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/vector"
)

// Query is one dense retrieval.
type Query struct {
	// Vector is the query embedding, made by Model.
	Vector []float32
	Model  string
	// Scope confines the retrieval: a memory outside it is never returned.
	// Search honours every field; Score reads only the profile.
	Scope mnemotype.Scope
	// K is how many hits Search returns at most.
	K int
	// Serial keeps the search on the calling goroutine, for a caller that
	// keeps the other CPUs busy itself.
	Serial bool
	// How, when not nil, is where Search says how it found its hits (for
	// the recall's trace).
	How *How
}

// How says how a dense search found its hits (vector.How: by walking an
// approximate index, with Ef candidates, or by scoring the scope's
// embeddings exactly; Scanned counts the memories scored exactly, -1 when
// not known).
type How = vector.How

// Tell stores h where q asks for it (q.How), if it does.
func (q Query) Tell(h How) {
	if q.How != nil {
		*q.How = h
	}
}

// sortHits orders hits best first, ties by id.
func sortHits(h []mnemotype.Hit) {
	slices.SortFunc(h, func(a, b mnemotype.Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
}
