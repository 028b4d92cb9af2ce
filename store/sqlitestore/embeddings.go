package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/mnemo-dev/mnemo/store"
)

// EmbeddingCounts implements store.Store.
func (s *Store) EmbeddingCounts(ctx context.Context, profile string) ([]store.EmbeddingCount, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	q := `SELECT profile, coalesce(embedding_model, ''), coalesce(embedding_dim, 0), count(*) FROM memories`
	var args []any
	if profile != "" {
		q += ` WHERE profile = ?`
		args = append(args, profile)
	}
	q += ` GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`
	rows, err := s.rc.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("count embeddings: %w", err)
	}
	defer rows.Close()
	var out []store.EmbeddingCount
	for rows.Next() {
		var c store.EmbeddingCount
		if err := rows.Scan(&c.Profile, &c.Model, &c.Dim, &c.Count); err != nil {
			return nil, fmt.Errorf("count embeddings: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count embeddings: %w", err)
	}
	return out, nil
}

// EmbeddingDim implements store.Store through the partial index
// memories_recent_embedded.
func (s *Store) EmbeddingDim(ctx context.Context, profile string) (int, error) {
	if err := s.check(); err != nil {
		return 0, err
	}
	return embeddingDim(ctx, s.r, profile)
}

// embeddingDim is EmbeddingDim through q (a transaction of Insert's, say).
func embeddingDim(ctx context.Context, q queryer, profile string) (int, error) {
	var dim int
	err := q.QueryRowContext(ctx, `SELECT coalesce(embedding_dim, 0) FROM memories
		WHERE profile = ? AND embedding IS NOT NULL ORDER BY accessed_at DESC, id LIMIT 1`, profile).Scan(&dim)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("embedding dimension of profile %q: %w", profile, err)
	}
	return dim, nil
}
