package main

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/mnemo-dev/mnemo"
	"github.com/mnemo-dev/mnemo/embed"
)

// defaultReembedEvery is how often mnemo serve embeds the memories stored
// without an embedding (while the embedder was failing).
const defaultReembedEvery = time.Minute

// startBackfill runs backfill once now and then every interval until the
// returned stop function is called; stop waits for a run in progress to
// end (Reembed stops between batches when its context is cancelled). An
// interval ≤ 0 disables it.
func startBackfill(e *mnemo.Engine, every time.Duration, log *slog.Logger) (stop func()) {
	if every <= 0 {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		quiet := quietProfiles{}
		for {
			backfill(ctx, e, log, quiet)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// backfill embeds, in every profile that has some, the memories stored
// without an embedding, then builds the ANN indexes profiles need
// (indexVectors). Failures are logged: the next run tries again.
// Among servers sharing a database, one runs it at a time (Engine.Lead);
// the others skip their turn.
func backfill(ctx context.Context, e *mnemo.Engine, log *slog.Logger, quiet quietProfiles) {
	release, lead, err := e.Lead(ctx, "backfill")
	if err != nil || !lead {
		if err != nil && ctx.Err() == nil && !errors.Is(err, mnemo.ErrClosed) {
			log.Warn("reembed: cannot take the backfill's lease", "err", err)
		}
		return
	}
	defer release()
	counts, err := e.EmbeddingCounts(ctx, "")
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, mnemo.ErrClosed) {
			log.Warn("reembed: cannot list profiles", "err", err)
		}
		return
	}
	defer indexVectors(ctx, e, log, quiet)
	warmLarge(ctx, e, log, quiet)
	for _, c := range counts {
		if c.Dim != 0 || c.Count == 0 {
			continue
		}
		st, err := e.Reembed(ctx, mnemo.ReembedParams{Profile: c.Profile})
		if ctx.Err() != nil || errors.Is(err, mnemo.ErrClosed) {
			return
		}
		if errors.Is(err, embed.ErrUnavailable) {
			// The circuit is open: every profile would fail the same way
			// until the breaker's probe sees the provider answer.
			log.Info("reembed: the embedder is unavailable; memories stored without an embedding wait for the next run",
				"profile", c.Profile, "err", err)
			return
		}
		if err != nil {
			log.Warn("reembed: memories stored without an embedding are left for the next run",
				"profile", c.Profile, "embedded", st.Embedded, "failed", st.Failed, "err", err)
			continue
		}
		if st.Embedded > 0 {
			log.Info("reembed: embedded memories stored without an embedding", "profile", c.Profile,
				"model", st.Model, "embedded", st.Embedded)
		}
	}
}

// warmLarge loads, once per server, the in-process dense index of each
// profile large enough for a graph (on SQLite, or Postgres with
// dense=process; Engine.WarmIndexes), so that the graph grows in the
// background from the server's start rather than from the profile's
// first recall.
func warmLarge(ctx context.Context, e *mnemo.Engine, log *slog.Logger, quiet quietProfiles) {
	if _, done := quiet[warmedKey]; done {
		return
	}
	quiet[warmedKey] = 1
	warmed, err := e.WarmIndexes(ctx)
	if err != nil && ctx.Err() == nil && !errors.Is(err, mnemo.ErrClosed) {
		log.Warn("dense indexes: not all loaded at start; a profile's first recall loads it", "err", err)
	}
	if len(warmed) > 0 {
		log.Info("dense indexes loaded at start", "profiles", len(warmed))
	}
}

// warmedKey marks in quietProfiles that warmLarge ran.
const warmedKey = "\x00warmed"

// quietProfiles remembers how many embedded memories of each dimension
// each profile needing an ANN index held at the previous run.
type quietProfiles map[string]int

// ready reports whether profile, holding rows embedded memories of
// dimension dim, grew by fewer than max(100, 2%) of them since the
// previous run asked: its index is built once an import into it ends, not
// in the middle of it (a write to an indexed profile costs a few
// milliseconds more; building the index once costs less), while a profile
// that only trickles gets one.
func (q quietProfiles) ready(profile string, dim, rows int) bool {
	key := profile + "\x00" + strconv.Itoa(dim)
	prev, seen := q[key]
	q[key] = rows
	return seen && rows-prev < max(100, rows/50)
}

// indexVectors builds the ANN indexes profiles have grown into (Postgres
// with pgvector; see Engine.IndexVectors) once they are quiet, under
// backfill's lease.
func indexVectors(ctx context.Context, e *mnemo.Engine, log *slog.Logger, quiet quietProfiles) {
	start := time.Now()
	ix, _, err := e.IndexVectors(ctx, quiet.ready)
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, mnemo.ErrClosed) {
			log.Warn("index vectors: an ANN index is left for the next run", "err", err)
		}
		return
	}
	for _, x := range ix {
		if x.Built {
			log.Info("index vectors: built an HNSW index", "profile", x.Profile, "dim", x.Dim, "index", x.Name,
				"seconds", time.Since(start).Seconds())
		}
	}
}
