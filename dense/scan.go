package dense

import (
	"context"
	"fmt"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
	"github.com/mnemo-dev/mnemo/vector"
)

// ScanStore is what a Scan reads.
type ScanStore interface {
	Get(ctx context.Context, p store.GetParams) ([]mnemotype.Memory, error)
	InScope(ctx context.Context, scope mnemotype.Scope, ids []string) ([]string, error)
	EmbeddingDim(ctx context.Context, profile string) (int, error)
}

// scanPage is how many embeddings a Scan reads from the store at once.
const scanPage = 512

// Scan is the dense port read from the store on every call, holding
// nothing in between: Score reads the embeddings of the ids asked, Search
// every embedding in the scope (a page at a time, so its memory is
// bounded but its time grows with the scope). It suits a one-shot process
// that scores a small pool (`mnemo recollect`), where loading a profile's
// index would cost more than the recall.
type Scan struct {
	st ScanStore
}

// NewScan returns a Scan over st.
func NewScan(st ScanStore) *Scan { return &Scan{st: st} }

// Search implements the dense port.
func (s *Scan) Search(ctx context.Context, q Query) ([]mnemotype.Hit, error) {
	if err := s.check(ctx, q); err != nil || q.K <= 0 {
		return nil, err
	}
	ids, err := s.st.InScope(ctx, q.Scope, nil)
	if err != nil {
		return nil, fmt.Errorf("dense scan: %w", err)
	}
	var best []mnemotype.Hit
	err = s.scorePages(ctx, q, ids, func(hits []mnemotype.Hit) {
		if best = append(best, hits...); len(best) > 2*q.K {
			sortHits(best)
			best = best[:q.K]
		}
	})
	if err != nil {
		return nil, err
	}
	sortHits(best)
	return best[:min(len(best), q.K)], nil
}

// scorePages scores ids a page at a time, handing each page's hits to add.
func (s *Scan) scorePages(ctx context.Context, q Query, ids []string, add func([]mnemotype.Hit)) error {
	for len(ids) > 0 {
		page := ids[:min(len(ids), scanPage)]
		ids = ids[len(page):]
		hits, err := s.score(ctx, q, page)
		if err != nil {
			return err
		}
		add(hits)
	}
	return nil
}

// Score implements the dense port.
func (s *Scan) Score(ctx context.Context, q Query, ids []string) ([]mnemotype.Hit, error) {
	if err := s.check(ctx, q); err != nil {
		return nil, err
	}
	var out []mnemotype.Hit
	if err := s.scorePages(ctx, q, ids, func(hits []mnemotype.Hit) { out = append(out, hits...) }); err != nil {
		return nil, err
	}
	sortHits(out)
	return out, nil
}

// check refuses a query of another dimension than the profile's
// embeddings.
func (s *Scan) check(ctx context.Context, q Query) error {
	if q.Scope.Profile == "" {
		return mnemotype.Invalidf("dense retrieval: profile is required")
	}
	d, err := s.st.EmbeddingDim(ctx, q.Scope.Profile)
	if err != nil {
		return fmt.Errorf("dense scan: %w", err)
	}
	if d != 0 && d != len(q.Vector) {
		return fmt.Errorf("query vector has %d dimensions, memories have %d: %w", len(q.Vector), d, mnemotype.ErrDimensionMismatch)
	}
	return nil
}

// score reads ids' embeddings and scores those made by q.Model.
func (s *Scan) score(ctx context.Context, q Query, ids []string) ([]mnemotype.Hit, error) {
	mems, err := s.st.Get(ctx, store.GetParams{Profile: q.Scope.Profile, IDs: ids, WithEmbedding: true})
	if err != nil {
		return nil, fmt.Errorf("dense scan: %w", err)
	}
	out := make([]mnemotype.Hit, 0, len(mems))
	for _, m := range mems {
		if m.EmbeddingModel != q.Model {
			continue
		}
		if sc, ok := vector.Cosine(q.Vector, m.Embedding); ok {
			out = append(out, mnemotype.Hit{ID: m.ID, Score: sc})
		}
	}
	return out, nil
}
