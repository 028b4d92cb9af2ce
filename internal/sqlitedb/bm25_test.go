//go:build cgo && (sqlite_fts5 || fts5)

package sqlitedb

import (
	"database/sql"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

// ftsTable creates FTS5 table t (porter unicode61, like the memories')
// in a new database and fills it with rows of 1 to maxLen words drawn from
// word(rng) in one transaction.
func ftsTable(tb testing.TB, rows, maxLen int, seed uint64, word func(*rand.Rand) string) *sql.DB {
	tb.Helper()
	db, err := Open(filepath.Join(tb.TempDir(), "x.db"), Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61')`); err != nil {
		tb.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, seed+1))
	tx, err := db.Begin()
	if err != nil {
		tb.Fatal(err)
	}
	for range rows {
		var text []string
		for range 1 + rng.IntN(maxLen) {
			text = append(text, word(rng))
		}
		if _, err := tx.Exec(`INSERT INTO t(body) VALUES (?)`, strings.Join(text, " ")); err != nil {
			tb.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		tb.Fatal(err)
	}
	return db
}

// skewed draws from words with exponentially falling frequencies.
func skewed(words []string, scale float64) func(*rand.Rand) string {
	return func(rng *rand.Rand) string { return words[min(len(words)-1, int(rng.ExpFloat64()*scale))] }
}

// rowScores runs q, which selects (rowid, score), and returns the scores
// by rowid.
func rowScores(t *testing.T, db *sql.DB, q string, args ...any) map[int64]float64 {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	out := map[int64]float64{}
	for rows.Next() {
		var id int64
		var s float64
		if err := rows.Scan(&id, &s); err != nil {
			t.Fatal(err)
		}
		out[id] = s
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// phraseCounts is the counts BLOB of mnemo_bm25 for phrases of table t.
func phraseCounts(tb testing.TB, db *sql.DB, phrases []string) []byte {
	tb.Helper()
	blob := make([]byte, 8*len(phrases))
	for i, ph := range phrases {
		var n int64
		if err := db.QueryRow(`SELECT count(*) FROM t WHERE t MATCH ?`, ph).Scan(&n); err != nil {
			tb.Fatal(err)
		}
		binary.LittleEndian.PutUint64(blob[8*i:], uint64(n))
	}
	return blob
}

// TestRankFunction: mnemo_bm25 given the right document frequencies scores
// every row exactly as bm25() does (same float64, not merely close), over
// AND, OR and phrase queries with repeated and stemmed terms; given no
// counts, or a BLOB of the wrong size, it counts them itself like bm25().
// Wrong counts change the scores, so the BLOB is really what it uses.
func TestRankFunction(t *testing.T) {
	t.Parallel()
	// Short rows and skewed word frequencies: most query terms are in few
	// rows (an IDF above the floor), a few in most.
	words := strings.Fields("the a river stone rivers dune quartz basalt flowing cedar ember garnet heath fjord")
	db := ftsTable(t, 3000, 8, 3, skewed(words, 4))
	// Deleted rows must leave the totals and counts consistent too.
	if _, err := db.Exec(`DELETE FROM t WHERE rowid % 7 = 0`); err != nil {
		t.Fatal(err)
	}
	lens, err := DocLengths(t.Context(), db, "t", -1)
	if err != nil {
		t.Fatal(err)
	}
	if len(lens) == 0 {
		t.Fatal("DocLengths returned nothing")
	}
	wrongLens := append([]byte(nil), lens...) // every known length one more
	for i := 0; i < len(wrongLens); i += 2 {
		if v := binary.LittleEndian.Uint16(wrongLens[i:]); v != 0xFFFF {
			binary.LittleEndian.PutUint16(wrongLens[i:], v+1)
		}
	}
	for _, tc := range []struct {
		phrases []string
		op      string
	}{
		{[]string{`"quartz"`}, " "},
		{[]string{`"quartz"`, `"basalt"`}, " "},
		{[]string{`"quartz"`, `"basalt"`, `"cedar"`}, " OR "},
		{[]string{`"rivers"`, `"river"`, `"flowing"`}, " OR "},             // stems to the same term
		{[]string{`"ember"`, `"ember"`, `"dune"`}, " OR "},                 // a repeated phrase
		{[]string{`"garnet heath"`, `"fjord"`}, " OR "},                    // a two-token phrase
		{[]string{`"the"`, `"a"`, `"stone"`, `"dune"`, `"fjord"`}, " OR "}, // terms in most rows: IDF floor
	} {
		q := strings.Join(tc.phrases, tc.op)
		blob := phraseCounts(t, db, tc.phrases)
		wrong := make([]byte, len(blob)) // every count halved
		for i := 0; i < len(blob); i += 8 {
			binary.LittleEndian.PutUint64(wrong[i:], binary.LittleEndian.Uint64(blob[i:])/2+1)
		}
		// One query per variant: FTS5 keeps one auxiliary data slot per
		// function and cursor, so two calls in one query would share counts.
		scores := func(rank string, args ...any) map[int64]float64 {
			return rowScores(t, db, `SELECT rowid, `+rank+` FROM t WHERE t MATCH ?`, append(args, q)...)
		}
		want := scores("bm25(t)")
		if len(want) == 0 {
			t.Fatalf("%s matched nothing", q)
		}
		for _, v := range []struct {
			name string
			rank string
			args []any
		}{
			{"with counts", "mnemo_bm25(t, ?)", []any{blob}},
			{"without counts", "mnemo_bm25(t)", nil},
			{"with a short BLOB", "mnemo_bm25(t, ?)", []any{blob[:len(blob)-1]}},
			{"with an integer", "mnemo_bm25(t, 12)", nil},
			{"with counts and lengths", "mnemo_bm25(t, ?, ?)", []any{blob, lens}},
			{"with lengths cut short", "mnemo_bm25(t, ?, ?)", []any{blob, lens[:len(lens)/2+1]}},
			{"with lengths not a BLOB", "mnemo_bm25(t, ?, 7)", []any{blob}},
		} {
			got := scores(v.rank, v.args...)
			for rowid, w := range want {
				if g, ok := got[rowid]; !ok || g != w {
					t.Fatalf("%s row %d: bm25 %v, mnemo_bm25 %s %v", q, rowid, w, v.name, g)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("%s: %d rows scored %s, bm25 %d", q, len(got), v.name, len(want))
			}
		}
		differ := 0
		for rowid, g := range scores("mnemo_bm25(t, ?)", wrong) {
			if g != want[rowid] {
				differ++
			}
		}
		if differ == 0 {
			t.Errorf("%s: wrong counts changed no score (%d rows): the BLOB is not used", q, len(want))
		}
		differ = 0
		for rowid, g := range scores("mnemo_bm25(t, ?, ?)", blob, wrongLens) {
			if g != want[rowid] {
				differ++
			}
		}
		if differ == 0 {
			t.Errorf("%s: wrong lengths changed no score (%d rows): the lengths are not used", q, len(want))
		}
	}
}

// TestRankFunction_FilterPhrases: phrases with a negative count filter
// without scoring, so ("a" OR "b") AND ("a" OR "b" OR "c") ranks the rows
// matching a or b exactly as bm25() ranks "a" OR "b" OR "c".
func TestRankFunction_FilterPhrases(t *testing.T) {
	t.Parallel()
	db := ftsTable(t, 2000, 8, 7, skewed(strings.Fields("the a river stone dune quartz basalt cedar ember"), 3))
	all := []string{`"river"`, `"quartz"`, `"cedar"`, `"stone"`}
	filter := []string{`"quartz"`, `"cedar"`}
	blob := make([]byte, 8*len(filter)) // -1 each: not scored
	for i := range filter {
		binary.LittleEndian.PutUint64(blob[8*i:], uint64(1<<64-1))
	}
	blob = append(blob, phraseCounts(t, db, all)...)
	want := rowScores(t, db, `SELECT rowid, bm25(t) FROM t WHERE t MATCH ? AND rowid IN (SELECT rowid FROM t WHERE t MATCH ?)`,
		strings.Join(all, " OR "), strings.Join(filter, " OR "))
	got := rowScores(t, db, `SELECT rowid, mnemo_bm25(t, ?) FROM t WHERE t MATCH ?`, blob,
		"("+strings.Join(filter, " OR ")+") AND ("+strings.Join(all, " OR ")+")")
	if len(want) == 0 || len(got) != len(want) {
		t.Fatalf("%d rows filtered by mnemo_bm25's query, %d by the reference", len(got), len(want))
	}
	for id, w := range want {
		if got[id] != w {
			t.Fatalf("row %d: bm25 %v, mnemo_bm25 with filter phrases %v", id, w, got[id])
		}
	}
}

func BenchmarkRankFunction(b *testing.B) {
	db := ftsTable(b, 100_000, 20, 5, func(rng *rand.Rand) string { return fmt.Sprintf("w%d", int(rng.ExpFloat64()*300)) })
	phrases := []string{`"w2"`, `"w40"`, `"w300"`, `"w900"`}
	blob := phraseCounts(b, db, phrases)
	q := strings.Join(phrases[1:], " OR ")
	for _, tc := range []struct {
		name string
		rank string
		args []any
	}{
		{"bm25", "bm25(t)", []any{q}},
		{"mnemo_bm25", "mnemo_bm25(t, ?)", []any{blob[8:], q}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				rows, err := db.Query(`SELECT rowid, `+tc.rank+` FROM t WHERE t MATCH ? ORDER BY 2 LIMIT 30`, tc.args...)
				if err != nil {
					b.Fatal(err)
				}
				for rows.Next() {
				}
				rows.Close()
			}
		})
	}
}

// TestTextRankFunction: scoring a row's text gives what mnemo_bm25 (and so
// bm25()) gives inside the FTS5 query, to the bit, and NULL exactly for the
// rows the query does not match — over stemming, diacritics, punctuation,
// two-token and repeated phrases, AND and OR, and phrases without a token.
func TestTextRankFunction(t *testing.T) {
	t.Parallel()
	words := strings.Fields("the a river rivers running runs café cafe résumé e-mail email stone dune quartz basalt cedar ember fjord naïve")
	db := ftsTable(t, 3000, 12, 11, skewed(words, 5))
	if _, err := db.Exec(`INSERT INTO t(body) VALUES ('River, rivers... RIVER!'), ('x'), (''), ('e-mail: e mail; mail e')`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM t WHERE rowid % 11 = 0`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		terms []string
		all   bool
	}{
		{[]string{"quartz"}, false},
		{[]string{"quartz", "basalt"}, true},
		{[]string{"quartz", "basalt", "cedar"}, false},
		{[]string{"rivers", "running", "cafe"}, false}, // stemmed; diacritics folded
		{[]string{"river", "river", "dune"}, false},    // a repeated term
		{[]string{"e-mail", "naive"}, false},           // a two-token phrase
		{[]string{"e-mail", "stone"}, true},
		{[]string{"*", "quartz"}, true}, // a phrase without a token is left out
		{[]string{"*", "—"}, false},     // and a query of only those matches nothing
		{[]string{"the", "a", "fjord", "ember"}, false},
	} {
		phrases := make([]string, len(tc.terms))
		for i, term := range tc.terms {
			phrases[i] = `"` + strings.ReplaceAll(term, `"`, `""`) + `"`
		}
		op := " OR "
		if tc.all {
			op = " "
		}
		q := strings.Join(phrases, op)
		counts := phraseCounts(t, db, phrases)
		want := rowScores(t, db, `SELECT rowid, bm25(t) FROM t WHERE t MATCH ?`, q)
		if (len(want) == 0) != (tc.terms[0] == "*" && !tc.all) {
			t.Fatalf("%s matches %d rows", q, len(want))
		}
		rows, err := db.Query(`SELECT rowid, mnemo_bm25_text(body, ?, ?, ?, ?) FROM t`,
			[]byte(strings.Join(tc.terms, "\x00")), counts, tableStats(t, db, "t"), tc.all)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		n := 0
		for rows.Next() {
			var id int64
			var got sql.NullFloat64
			if err := rows.Scan(&id, &got); err != nil {
				t.Fatal(err)
			}
			w, match := want[id]
			switch {
			case match && !got.Valid:
				t.Fatalf("%s: row %d matches (bm25 %v), text scoring says it does not", q, id, w)
			case !match && got.Valid:
				t.Fatalf("%s: row %d does not match, text scoring gives %v", q, id, got.Float64)
			case match && got.Float64 != w:
				t.Fatalf("%s: row %d: bm25 %v, text scoring %v", q, id, w, got.Float64)
			}
			if match {
				n++
			}
		}
		rows.Close()
		if n != len(want) {
			t.Fatalf("%s: %d rows scored, %d match", q, n, len(want))
		}
	}
	// Bad arguments are errors, not scores.
	for _, args := range [][]any{
		{[]byte("quartz"), []byte{1, 2, 3}, 0},           // counts of the wrong size
		{[]byte("quartz\x00basalt"), make([]byte, 8), 0}, // one count for two terms
	} {
		var s sql.NullFloat64
		err := db.QueryRow(`SELECT mnemo_bm25_text('quartz', ?, ?, ?, ?)`, append(args[:2:2], tableStats(t, db, "t"), args[2])...).Scan(&s)
		if err == nil || !strings.Contains(err.Error(), "mnemo_bm25_text") {
			t.Errorf("args %v: %v, %v; want an error naming mnemo_bm25_text", args, s, err)
		}
	}
	var s sql.NullFloat64
	for _, st := range [][]byte{{0}, make([]byte, 16)} {
		if err := db.QueryRow(`SELECT mnemo_bm25_text('quartz', 'quartz', ?, ?, 0)`, make([]byte, 8), st).Scan(&s); err == nil || !strings.Contains(err.Error(), "count and total length") {
			t.Errorf("stats %x: %v, %v; want an error", st, s, err)
		}
	}
}

// tableStats is the stats BLOB of the ranking functions for FTS5 table
// name as a whole: its row count and total length, read from its averages
// record (what bm25() itself uses).
func tableStats(tb testing.TB, db *sql.DB, name string) []byte {
	tb.Helper()
	var rec []byte
	if err := db.QueryRow(`SELECT block FROM ` + name + `_data WHERE id = 1`).Scan(&rec); err != nil {
		tb.Fatal(err)
	}
	rows, k := varint(rec)
	tokens, k2 := varint(rec[k:])
	if k == 0 || k2 == 0 {
		tb.Fatalf("malformed averages record %x", rec)
	}
	return statsBlob(int64(rows), int64(tokens))
}

func statsBlob(rows, tokens int64) []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint64(b, uint64(rows))
	binary.LittleEndian.PutUint64(b[8:], uint64(tokens))
	return b
}

// TestRankFunction_Stats: given a subset's statistics, mnemo_bm25 scores
// the rows of that subset of a two-column table (the second column only
// selecting the subset) exactly as bm25() scores them in a table holding
// that subset alone — the scores of one tenant's rows do not depend on the
// other rows of the table. The lengths BLOB, when given, agrees.
func TestRankFunction_Stats(t *testing.T) {
	t.Parallel()
	db, err := Open(filepath.Join(t.TempDir(), "x.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE VIRTUAL TABLE mixed USING fts5(body, tag, content='', contentless_delete=1, tokenize='porter unicode61')`,
		`CREATE VIRTUAL TABLE alone USING fts5(body, tokenize='porter unicode61')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	words := strings.Fields("the a river stone rivers dune quartz basalt flowing cedar ember garnet heath fjord")
	pick := skewed(words, 4)
	rng := rand.New(rand.NewPCG(9, 10))
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for id := int64(1); id <= 3000; id++ {
		var text []string
		for range 1 + rng.IntN(9) {
			text = append(text, pick(rng))
		}
		body := strings.Join(text, " ")
		tag := "t1 k3"
		if rng.IntN(3) > 0 { // most rows belong to the other tenant, with other word frequencies
			tag, body = "t2 k3", body+" quartz quartz cedar"
		}
		if _, err := tx.Exec(`INSERT INTO mixed(rowid, body, tag) VALUES (?, ?, ?)`, id, body, tag); err != nil {
			t.Fatal(err)
		}
		if tag == "t1 k3" {
			if _, err := tx.Exec(`INSERT INTO alone(rowid, body) VALUES (?, ?)`, id, body); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	stats := tableStats(t, db, "alone")
	lens, err := DocLengths(t.Context(), db, "alone", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`"quartz"`, `"river" OR "cedar" OR "fjord"`, `"stone" "dune"`, `"the" OR "basalt"`} {
		var counts []byte
		for _, ph := range strings.Fields(strings.ReplaceAll(q, " OR ", " ")) {
			var n int64
			if err := db.QueryRow(`SELECT count(*) FROM alone WHERE alone MATCH ?`, ph).Scan(&n); err != nil {
				t.Fatal(err)
			}
			counts = binary.LittleEndian.AppendUint64(counts, uint64(n))
		}
		filtered := append(binary.LittleEndian.AppendUint64(nil, 1<<64-1), counts...) // the tag phrase filters
		want := rowScores(t, db, `SELECT rowid, bm25(alone) FROM alone WHERE alone MATCH ?`, q)
		for _, lengths := range [][]byte{nil, lens} {
			got := rowScores(t, db, `SELECT rowid, mnemo_bm25(mixed, ?, ?, ?) FROM mixed WHERE mixed MATCH ?`,
				filtered, lengths, stats, `tag:"t1" AND {body}:(`+q+`)`)
			if len(want) == 0 || len(got) != len(want) {
				t.Fatalf("%s: %d rows in the subset, %d alone", q, len(got), len(want))
			}
			for id, w := range want {
				if got[id] != w {
					t.Fatalf("%s (lengths %v): row %d: bm25 alone %v, mnemo_bm25 with the subset's stats %v", q, lengths != nil, id, w, got[id])
				}
			}
		}
	}
}
