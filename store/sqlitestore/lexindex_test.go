package sqlitestore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mnemo-dev/mnemo/internal/ftstoken"
	"github.com/mnemo-dev/mnemo/internal/sqlitedb"
	"github.com/mnemo-dev/mnemo/internal/testenv"
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
	rows, err := s.w.QueryContext(ctx, `SELECT m.profile, m.id, d.sz FROM memories_lex_docsize d JOIN memories m ON m.rid = d.id`)
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
	if err := s.w.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM memories_lex_docsize), (SELECT count(*) FROM memories)`).Scan(&fts, &mems); err != nil {
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

// TestFTSText_IndexesAsPorterUnicode61: the full-text index given fields
// as ftsText (Go's tokens, split again by FTS5's 'ascii' tokenizer) holds
// exactly what FTS5's 'porter unicode61' tokenizer made of the raw text
// (migration 6's table): the same terms at the same positions in the same
// columns, the same field lengths, and ftsText counts them as FTS5 does;
// and a term given through MatchExpr matches the rows it matched given
// raw. On edge cases (diacritics, scripts without case, tokens longer than
// the stemmer takes and than FTS5 keeps, cut inside a UTF-8 sequence,
// invalid UTF-8, separators of every kind) and on the LoCoMo corpus.
func TestFTSText_IndexesAsPorterUnicode61(t *testing.T) {
	t.Parallel()
	t.Run("edge cases", func(t *testing.T) {
		t.Parallel()
		texts := []string{
			"", " ", "Running runners ran; the RUNNING man's café (naïve) — ÉCOLE straße ﬁnance Ｆｕｌｌ",
			"東京で会いましょう 2024年 ΑΘΗΝΑ Москва ١٢٣", "a\x00b\tc\nd\re", "\xff\xfe broken \xc3 utf8 \xe2\x82",
			strings.Repeat("x", 63) + " " + strings.Repeat("generalizations", 5) + " " + strings.Repeat("é", 40000),
			"x" + strings.Repeat("é", 20000), "xy" + strings.Repeat("€", 12000), strings.Repeat("AB", 20000),
			"p1 k2 s3 a0 j4", "Monday 8 May 2023", `quotes "inside" and 'single' and back\slash`,
		}
		sameIndexes(t, texts, append(slices.Clone(texts), "running", "ECOLE", "cafe", "generalization", "x"+strings.Repeat("é", 20000)))
	})
	t.Run("locomo-dev", func(t *testing.T) {
		t.Parallel()
		var texts, queries []string
		dir := testenv.Dataset(t, "locomo-dev")
		for _, file := range []string{"corpus.jsonl", "queries.jsonl"} {
			f, err := os.Open(filepath.Join(dir, file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for dec := json.NewDecoder(f); dec.More(); {
				var rec struct{ Text string }
				if err := dec.Decode(&rec); err != nil {
					t.Fatal(err)
				}
				if file == "corpus.jsonl" {
					texts = append(texts, rec.Text)
				} else {
					queries = append(queries, strings.Fields(rec.Text)...)
				}
			}
		}
		if len(texts) < 1000 || len(queries) < 1000 {
			t.Fatalf("%d texts, %d query words", len(texts), len(queries))
		}
		sameIndexes(t, texts, queries[:1000])
	})
}

// sameIndexes indexes texts raw in a 'porter unicode61' table and as
// ftsText in an 'ascii' one, each in two columns (the text, and the text
// before it and the text, as joinTexts joins a context), and requires the
// same instances, the same size records, equal to ftsText's counts, and
// the same rows matching each of terms.
func sameIndexes(t *testing.T, texts, terms []string) {
	t.Helper()
	db, err := sqlitedb.Open(filepath.Join(t.TempDir(), "fts.db"), sqlitedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, q := range []string{
		`CREATE VIRTUAL TABLE raw USING fts5(a, b, content='', tokenize='porter unicode61')`,
		`CREATE VIRTUAL TABLE tok USING fts5(a, b, content='', tokenize='ascii')`,
		`CREATE VIRTUAL TABLE raw_v USING fts5vocab(raw, 'instance')`,
		`CREATE VIRTUAL TABLE tok_v USING fts5vocab(tok, 'instance')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	var tk ftstoken.Tokenizer
	counts := map[int][2]int64{}
	for i, text := range texts {
		prev := texts[max(i-1, 0)]
		a, b := tokenized(&tk, text), joinTexts([]ftsText{tokenized(&tk, prev), tokenized(&tk, text)})
		if _, err := db.Exec(`INSERT INTO raw(rowid, a, b) VALUES (?, ?, ?)`, i+1, text, prev+"\n"+text); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`INSERT INTO tok(rowid, a, b) VALUES (?, ?, ?)`, i+1, a.s, b.s); err != nil {
			t.Fatal(err)
		}
		counts[i+1] = [2]int64{a.n, b.n}
	}
	instances := func(table string) []string {
		rows, err := db.Query(`SELECT term, doc, col, offset FROM ` + table + ` ORDER BY term, doc, col, offset`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var term, col string
			var doc, off int64
			if err := rows.Scan(&term, &doc, &col, &off); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%q %d %s %d", term, doc, col, off))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	raw, tok := instances("raw_v"), instances("tok_v")
	if len(raw) < 2*len(texts) {
		t.Fatalf("only %d instances indexed for %d texts", len(raw), len(texts))
	}
	if !slices.Equal(raw, tok) {
		for i := range min(len(raw), len(tok)) {
			if raw[i] != tok[i] {
				t.Fatalf("instance %d: porter unicode61 %.200s, ascii on Go's tokens %.200s (%d and %d instances)", i, raw[i], tok[i], len(raw), len(tok))
			}
		}
		t.Fatalf("%d instances against %d", len(raw), len(tok))
	}
	for _, table := range []string{"raw", "tok"} {
		rows, err := db.Query(`SELECT id, sz FROM ` + table + `_docsize`)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for rows.Next() {
			var id int
			var sz []byte
			if err := rows.Scan(&id, &sz); err != nil {
				t.Fatal(err)
			}
			for c := range 2 {
				if got, ok := sqlitedb.ColumnSize(sz, c); !ok || int64(got) != counts[id][c] {
					t.Fatalf("%s row %d column %d: FTS5 counts %d tokens, ftsText %d", table, id, c, got, counts[id][c])
				}
			}
			n++
		}
		rows.Close()
		if n != len(texts) {
			t.Fatalf("%s: %d size records for %d rows", table, n, len(texts))
		}
	}
	matched := 0
	for _, term := range terms {
		if !hasToken(term) {
			continue
		}
		rowids := func(table, expr string) []int64 {
			rows, err := db.Query(`SELECT rowid FROM `+table+` WHERE `+table+` MATCH ? ORDER BY rowid`, expr)
			if err != nil {
				t.Fatalf("%s MATCH %q: %v", table, expr, err)
			}
			defer rows.Close()
			var out []int64
			for rows.Next() {
				var id int64
				if err := rows.Scan(&id); err != nil {
					t.Fatal(err)
				}
				out = append(out, id)
			}
			return out
		}
		want := rowids("raw", rawMatchExpr([]string{term}, false))
		if got := rowids("tok", MatchExpr(store.MatchQuery{Terms: []string{term}})); !slices.Equal(got, want) {
			t.Fatalf("term %.80q: rows %v through MatchExpr, %v given raw", term, got, want)
		}
		if len(want) > 0 {
			matched++
		}
	}
	if matched < len(terms)/4 {
		t.Fatalf("only %d of %d terms matched a row", matched, len(terms))
	}
}
