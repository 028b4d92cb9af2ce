package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mnemo-dev/mnemo/store"
)

// DefaultReplicaWait is how long a read carrying a consistency token waits
// for a replica to replay it before it goes to the primary.
const DefaultReplicaWait = time.Second

// replica is a streaming replica reads may go to.
type replica struct {
	pool *pgxpool.Pool
	// replayed is the highest replay position seen (LSNs only grow), so
	// that a token it covers costs no query.
	replayed atomic.Uint64
}

// openReplicas connects to the replicas' URLs (each with the primary's
// schema and session settings).
func (s *Store) openReplicas(ctx context.Context, urls []string, maxConns int32) error {
	for _, u := range urls {
		u, _, err := SplitSchema(u)
		if err != nil {
			return err
		}
		cfg, err := pgxpool.ParseConfig(u)
		if err != nil {
			return fmt.Errorf("replica: %w", err)
		}
		if maxConns > 0 {
			cfg.MaxConns = maxConns
		}
		for k, v := range s.pool.Config().ConnConfig.RuntimeParams {
			if k == "search_path" || k == "plan_cache_mode" {
				cfg.ConnConfig.RuntimeParams[k] = v
			}
		}
		pool, err := pgxpool.NewWithConfig(ctx, cfg)
		if err != nil {
			return fmt.Errorf("connect to replica: %w", err)
		}
		s.replicas = append(s.replicas, &replica{pool: pool})
	}
	return nil
}

// Position implements store.Positioner: the primary's WAL insert position,
// past every commit acknowledged so far (the write position may lag it
// under synchronous_commit off); "" without replicas: every read sees
// every write.
func (s *Store) Position(ctx context.Context) (string, error) {
	if err := s.check(); err != nil {
		return "", err
	}
	if len(s.replicas) == 0 {
		return "", nil
	}
	var lsn string
	if err := s.pool.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&lsn); err != nil {
		return "", fmt.Errorf("read the WAL position: %w", err)
	}
	return lsn, nil
}

// parseLSN reads a pg_lsn's text form (two hexadecimal halves).
func parseLSN(s string) (uint64, bool) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, false
	}
	h, err1 := strconv.ParseUint(hi, 16, 32)
	l, err2 := strconv.ParseUint(lo, 16, 32)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return h<<32 | l, true
}

// formatLSN prints v as a pg_lsn.
func formatLSN(v uint64) string {
	return strconv.FormatUint(v>>32, 16) + "/" + strconv.FormatUint(v&(1<<32-1), 16)
}

// reader returns where a read under ctx runs: the primary without
// replicas or for a read not a recall's (store.AllowReplica); else the
// replica the recall's first read chose (pick).
// HasReplicas reports whether the store sends reads to streaming
// replicas (Options.Replicas).
func (s *Store) HasReplicas() bool { return len(s.replicas) > 0 }

func (s *Store) reader(ctx context.Context) *pgxpool.Pool {
	ch := store.ReplicaChoiceFrom(ctx)
	if len(s.replicas) == 0 || ch == nil {
		return s.pool
	}
	return ch.Choose(func() any { return s.pick(ctx) }).(*pgxpool.Pool)
}

// pick chooses the next replica, once it has replayed the consistency
// token ctx carries (waiting up to ReplicaWait), else the primary. A
// malformed token, or a replica that fails to answer, sends the reads to
// the primary.
func (s *Store) pick(ctx context.Context) *pgxpool.Pool {
	r := s.replicas[int(s.nextReplica.Add(1))%len(s.replicas)]
	token := store.ConsistencyFrom(ctx)
	if token == "" {
		return r.pool
	}
	want, ok := parseLSN(token)
	if !ok {
		return s.pool
	}
	deadline := time.Now().Add(s.replicaWait)
	for {
		if r.replayed.Load() >= want {
			return r.pool
		}
		var lsn *string
		if err := r.pool.QueryRow(ctx, `SELECT pg_last_wal_replay_lsn()::text`).Scan(&lsn); err != nil || lsn == nil {
			return s.pool
		}
		if got, ok := parseLSN(*lsn); ok {
			for {
				old := r.replayed.Load()
				if got <= old || r.replayed.CompareAndSwap(old, got) {
					break
				}
			}
			if got >= want {
				return r.pool
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return s.pool
		}
		time.Sleep(2 * time.Millisecond)
	}
}
