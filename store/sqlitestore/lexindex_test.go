package sqlitestore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/store"
)

// TestIndex_WritesEqualARebuild is the index's invariant, as a property:
// after any sequence of batched inserts (turns in and out of order, with
// and without a seq), updates (content, session, seq, actor, time) and
// deletes, every row's field lengths and every profile's statistics are
// those of the index rebuilt from the memories as they are. A context
// field missing a turn, or holding a stale one, changes a length.
func TestIndex_WritesEqualARebuild(t *testing.T) {
	t.Parallel()
	for seed := range uint64(8) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			// No context, one turn, two turns.
			s, err := Open(ctx, filepath.Join(t.TempDir(), "mnemo.db"), Options{ContextTurns: []int{-1, 1, 2}[seed%3]})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			rng := rand.New(rand.NewPCG(seed, 7))
			words := []string{"walrus", "support", "group", "pottery", "zumba", "lake", "camping", "painting", "yes", "friday"}
			text := func() string {
				out := ""
				for range 1 + rng.IntN(6) {
					out += words[rng.IntN(len(words))] + " "
				}
				return out
			}
			var ids []string
			t0 := time.Date(2023, 5, 8, 0, 0, 0, 0, time.UTC)
			n := 0
			for step := 0; step < 60; step++ {
				switch op := rng.IntN(10); {
				case op < 6 || len(ids) < 3:
					batch := make([]mnemotype.Memory, 1+rng.IntN(5))
					for i := range batch {
						n++
						at := t0.Add(time.Duration(n) * time.Hour)
						m := mnemotype.Memory{ID: fmt.Sprintf("m%d", n), Profile: []string{"alice", "bob"}[rng.IntN(2)],
							Session: []string{"", "s1", "s2", "s3"}[rng.IntN(4)], Actor: []string{"", "A", "B"}[rng.IntN(3)],
							Kind: mnemotype.KindEpisodic, Content: text(), Importance: 0.5, CreatedAt: at, AccessedAt: at, OccurredAt: at}
						if rng.IntN(3) == 0 {
							m.Seq = int64(1 + rng.IntN(12))
						}
						batch[i] = m
						ids = append(ids, m.Profile+"/"+m.ID)
					}
					if err := s.Insert(ctx, batch); err != nil {
						t.Fatal(err)
					}
				case op < 9:
					pid := ids[rng.IntN(len(ids))]
					profile, id := splitPID(pid)
					p := store.UpdateParams{Profile: profile, ID: id}
					switch rng.IntN(5) {
					case 0:
						c := text()
						p.Content = &c
					case 1:
						sess := []string{"", "s1", "s2", "s3"}[rng.IntN(4)]
						p.Session = &sess
					case 2:
						sq := int64(rng.IntN(12))
						p.Seq = &sq
					case 3:
						a := []string{"", "A", "C"}[rng.IntN(3)]
						p.Actor = &a
					case 4:
						at := t0.AddDate(0, rng.IntN(12), 0)
						p.OccurredAt = &at
					}
					if _, err := s.Update(ctx, p); err != nil && !errors.Is(err, mnemotype.ErrNotFound) {
						t.Fatal(err)
					}
				default:
					profile, id := splitPID(ids[rng.IntN(len(ids))])
					var err error
					switch rng.IntN(12) {
					case 0:
						_, err = s.DeleteMatching(ctx, store.DeleteParams{Profile: profile, Session: []string{"s1", "s2", "s3"}[rng.IntN(3)]})
					case 1:
						_, err = s.DeleteProfile(ctx, profile)
					default:
						err = s.Delete(ctx, profile, id)
					}
					if err != nil && !errors.Is(err, mnemotype.ErrNotFound) {
						t.Fatal(err)
					}
				}
			}
			written := indexState(t, s)
			turns, err := indexedTurns(ctx, s.w)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.w.ExecContext(ctx, `UPDATE counters SET value = -1 WHERE name = 'context_turns'`); err != nil {
				t.Fatal(err)
			}
			tx, err := s.w.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := ensureIndex(ctx, tx, turns); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			rebuilt := indexState(t, s)
			if !maps.Equal(written, rebuilt) {
				for k, v := range rebuilt {
					if written[k] != v {
						t.Errorf("%s: written %s, rebuilt %s", k, written[k], v)
					}
				}
				for k, v := range written {
					if _, ok := rebuilt[k]; !ok {
						t.Errorf("%s: written %s, not in the rebuilt index", k, v)
					}
				}
			}
		})
	}
}

func splitPID(pid string) (string, string) {
	for i := range pid {
		if pid[i] == '/' {
			return pid[:i], pid[i+1:]
		}
	}
	return pid, ""
}

// indexState renders every indexed row's field lengths (by memory id) and
// every profile's statistics (but its seq, which counts changes).
func indexState(t *testing.T, s *Store) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	rows, err := s.w.QueryContext(ctx, `SELECT m.profile, m.id, d.sz FROM memories_fts_docsize d JOIN memories m ON m.rid = d.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var profile, id string
		var sz []byte
		if err := rows.Scan(&profile, &id, &sz); err != nil {
			t.Fatal(err)
		}
		lens, err := sizeRecord(sz, 0)
		if err != nil {
			t.Fatal(err)
		}
		out[profile+"/"+id] = fmt.Sprint(lens)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var fts, mems int
	if err := s.w.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM memories_fts_docsize), (SELECT count(*) FROM memories)`).Scan(&fts, &mems); err != nil {
		t.Fatal(err)
	}
	out["rows"] = fmt.Sprintf("%d indexed, %d memories", fts, mems)
	for _, name := range []string{"alice", "bob"} {
		p, _, err := readProfile(ctx, s.w, name)
		if err != nil {
			t.Fatal(err)
		}
		out["profile "+name] = fmt.Sprint(p.docs, p.tokens)
	}
	return out
}

// indexedTurns returns how many previous turns of its session each
// memory's context field holds: what the database's index was built with.
func indexedTurns(ctx context.Context, q queryer) (int, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT max(0, value) FROM counters WHERE name = 'context_turns'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("read the index's context turns: %w", err)
	}
	return n, nil
}
