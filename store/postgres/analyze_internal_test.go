package postgres

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mnemo-dev/mnemo/internal/pgtest"
	"github.com/mnemo-dev/mnemo/mnemotype"
)

// TestAnalysis_BesideIndexBuild: the analysis a store runs after a load,
// started while an HNSW index of memory_vectors is being built (CREATE
// INDEX CONCURRENTLY, which holds a lock on the table ANALYZE needs, and
// waits for the snapshots older than its own), never waits for the build:
// the build succeeds, PostgreSQL detects no deadlock, and the tables the
// analysis could not have then are analyzed after a later write.
func TestAnalysis_BesideIndexBuild(t *testing.T) {
	t.Parallel()
	c := pgtest.Start(t)
	ctx := t.Context()
	admin, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	// A deadlock is found within a tenth of a second of a wait.
	if _, err := admin.Exec(ctx, `ALTER SYSTEM SET deadlock_timeout = '100ms'`); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, `SELECT pg_reload_conf()`); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, c.DSN("postgres"), Options{Schema: "ix"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.vec == nil {
		t.Fatalf("no table of vectors: %s", s.noVectors)
	}
	r := rand.New(rand.NewPCG(5, 5))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	memories := func(profile string, n int) []mnemotype.Memory {
		out := make([]mnemotype.Memory, n)
		for i := range out {
			v := make([]float32, 16)
			for j := range v {
				v[j] = float32(r.NormFloat64())
			}
			out[i] = mnemotype.Memory{ID: fmt.Sprintf("%s%05d", profile, i), Profile: profile, Content: "memory", Kind: mnemotype.KindEpisodic,
				Importance: mnemotype.DefaultImportance, CreatedAt: t0, OccurredAt: t0, AccessedAt: t0, Embedding: v, EmbeddingModel: "m"}
		}
		return out
	}
	// Fewer than analyzeMin: no analysis yet.
	if err := s.Insert(ctx, memories("a", 600)); err != nil {
		t.Fatal(err)
	}
	analyzing := func() bool {
		s.analyzeMu.Lock()
		defer s.analyzeMu.Unlock()
		return s.analyzing
	}
	if analyzing() {
		t.Fatal("an analysis after 600 memories inserted")
	}
	analyses := func() int64 {
		t.Helper()
		var n int64
		if err := admin.QueryRow(ctx, `SELECT analyze_count FROM pg_stat_user_tables WHERE relid = 'ix.memory_vectors'::regclass`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := analyses()

	// A transaction holding a writer's lock on the table holds the build
	// in its first wait, after it took its own lock on the table.
	blocker, err := pgx.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Close(ctx)
	tx, err := blocker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `LOCK TABLE ix.memory_vectors IN ROW EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	type result struct {
		ix  []VectorIndex
		err error
	}
	built := make(chan result, 1)
	go func() {
		ix, err := s.IndexVectors(ctx, 500, nil)
		built <- result{ix, err}
	}()
	waitFor := func(what, sql string) {
		t.Helper()
		for {
			var ok bool
			if err := admin.QueryRow(ctx, sql).Scan(&ok); err != nil {
				t.Fatal(err)
			}
			if ok {
				return
			}
			select {
			case res := <-built:
				t.Fatalf("IndexVectors returned %+v, %v before %s", res.ix, res.err, what)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	waitFor("the build waited for the writing transaction", `SELECT EXISTS (SELECT 1 FROM pg_stat_progress_create_index
		WHERE relid = 'ix.memory_vectors'::regclass AND phase = 'waiting for writers before build')`)

	// A load of analyzeMin memories starts the analysis, which either
	// ends or waits (for the lock the build holds) longer than
	// deadlock_timeout: PostgreSQL's check of that wait has passed, and
	// a cycle closed later is broken by cancelling the build.
	if err := s.Insert(ctx, memories("b", analyzeMin)); err != nil {
		t.Fatal(err)
	}
	for analyzing() {
		var waits bool
		if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
			WHERE NOT l.granted AND a.query ILIKE '%ANALYZE%' AND l.waitstart < clock_timestamp() - interval '300 ms')`).Scan(&waits); err != nil {
			t.Fatal(err)
		}
		if waits {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	res := <-built
	if res.err != nil || len(res.ix) != 1 || !res.ix[0].Built {
		t.Fatalf("IndexVectors beside the analysis = %+v, %v; want one index built", res.ix, res.err)
	}
	for analyzing() {
		time.Sleep(10 * time.Millisecond)
	}
	if log, err := c.ServerLog(); err != nil {
		t.Fatal(err)
	} else if strings.Contains(log, "deadlock detected") {
		t.Fatal("PostgreSQL detected a deadlock (the server's log has its statements)")
	}
	// The analysis the build kept from memory_vectors runs after the next
	// write.
	if err := s.Insert(ctx, memories("c", 1)); err != nil {
		t.Fatal(err)
	}
	for analyzing() {
		time.Sleep(10 * time.Millisecond)
	}
	if after := analyses(); after <= before {
		t.Fatalf("memory_vectors analyzed %d times before the load, %d after it and a later write; want more", before, after)
	}
}
