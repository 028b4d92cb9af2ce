//go:build cgo && (sqlite_fts5 || fts5)

package sqlitedb

import (
	"database/sql"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
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
	lens, err := DocLengths(t.Context(), db, "t")
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

// TestRankFunction_Fields: with weights and bs, mnemo_bm25 is BM25F over
// the fields, as computed here from FTS5's own record of every token
// instance (an fts5vocab table) and every column's length; a field of
// weight 0 adds nothing, and the default weights give the first field's
// BM25.
func TestRankFunction_Fields(t *testing.T) {
	t.Parallel()
	db, err := Open(filepath.Join(t.TempDir(), "x.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE VIRTUAL TABLE f USING fts5(body, who, ctx, tag, content='', contentless_delete=1, tokenize='porter unicode61')`,
		`CREATE VIRTUAL TABLE fv USING fts5vocab(f, 'instance')`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	words := strings.Fields("river stone quartz basalt cedar ember garnet heath fjord karl mel") // stems of themselves
	pick := skewed(words, 4)
	rng := rand.New(rand.NewPCG(11, 12))
	text := func(n int) string {
		var w []string
		for range n {
			w = append(w, pick(rng))
		}
		return strings.Join(w, " ")
	}
	const rows = 800
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	for id := 1; id <= rows; id++ {
		if _, err := tx.Exec(`INSERT INTO f(rowid, body, who, ctx, tag) VALUES (?, ?, ?, ?, 't1')`, id, text(1+rng.IntN(12)), text(rng.IntN(2)), text(rng.IntN(20))); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// Per field: total length; per row and field: length; per term, row and field: hits.
	const nf = 3
	lens := map[int64][nf]float64{}
	var totals [nf]int64
	rs, err := db.Query(`SELECT id, sz FROM f_docsize`)
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		var id int64
		var sz []byte
		if err := rs.Scan(&id, &sz); err != nil {
			t.Fatal(err)
		}
		var l [nf]float64
		for c := range nf {
			n, _ := ColumnSize(sz, c)
			l[c] = float64(n)
			totals[c] += int64(n)
		}
		lens[id] = l
	}
	rs.Close()
	hits := map[string]map[int64][nf]float64{}
	rs, err = db.Query(`SELECT term, doc, col FROM fv`)
	if err != nil {
		t.Fatal(err)
	}
	cols := map[string]int{"body": 0, "who": 1, "ctx": 2}
	for rs.Next() {
		var term, col string
		var doc int64
		if err := rs.Scan(&term, &doc, &col); err != nil {
			t.Fatal(err)
		}
		c, ok := cols[col]
		if !ok {
			continue
		}
		if hits[term] == nil {
			hits[term] = map[int64][nf]float64{}
		}
		h := hits[term][doc]
		h[c]++
		hits[term][doc] = h
	}
	rs.Close()
	stats := binary.LittleEndian.AppendUint64(nil, rows)
	for _, n := range totals {
		stats = binary.LittleEndian.AppendUint64(stats, uint64(n))
	}
	f64s := func(v ...float64) []byte {
		var b []byte
		for _, x := range v {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
		}
		return b
	}
	for _, tc := range []struct {
		w, b [nf]float64
	}{
		{[nf]float64{1, 0, 0}, [nf]float64{0.75, 0.75, 0.75}},
		{[nf]float64{1, 0.5, 0.2}, [nf]float64{0.75, 0, 0.75}},
		{[nf]float64{2, 1, 0}, [nf]float64{0.5, 0, 0}},
	} {
		for _, terms := range [][]string{{"quartz"}, {"karl", "river"}, {"fjord", "mel", "ember"}} {
			var counts []byte
			var phrases []string
			for _, term := range terms {
				counts = binary.LittleEndian.AppendUint64(counts, uint64(len(hits[term])))
				phrases = append(phrases, `"`+term+`"`)
			}
			filter := binary.LittleEndian.AppendUint64(nil, 1<<64-1)
			var scored []string
			for c, name := range []string{"body", "who", "ctx"} {
				if tc.w[c] != 0 {
					scored = append(scored, name)
				}
			}
			q := `tag:"t1" AND {` + strings.Join(scored, " ") + `}:(` + strings.Join(phrases, " OR ") + `)`
			got := rowScores(t, db, `SELECT rowid, mnemo_bm25(f, ?, NULL, ?, ?, ?) FROM f WHERE f MATCH ?`,
				append(filter, counts...), stats, f64s(tc.w[:]...), f64s(tc.b[:]...), q)
			if len(got) == 0 {
				t.Fatalf("%s matches nothing", q)
			}
			// The lengths of the fields with b > 0, given: the same scores;
			// given wrong (one more each): other scores, so they are used.
			var normalised []int
			for c := range nf {
				if tc.b[c] != 0 {
					normalised = append(normalised, c)
				}
			}
			lengths, err := DocLengths(t.Context(), db, "f", normalised...)
			if err != nil {
				t.Fatal(err)
			}
			withLengths := rowScores(t, db, `SELECT rowid, mnemo_bm25(f, ?, ?, ?, ?, ?) FROM f WHERE f MATCH ?`,
				append(filter, counts...), lengths, stats, f64s(tc.w[:]...), f64s(tc.b[:]...), q)
			if !maps.Equal(withLengths, got) {
				t.Fatalf("weights %v b %v, %q: scores with the lengths given differ from those looked up", tc.w, tc.b, terms)
			}
			for i := 0; i < len(lengths); i += 2 {
				if v := binary.LittleEndian.Uint16(lengths[i:]); v != 0xFFFF {
					binary.LittleEndian.PutUint16(lengths[i:], v+1)
				}
			}
			wrong := rowScores(t, db, `SELECT rowid, mnemo_bm25(f, ?, ?, ?, ?, ?) FROM f WHERE f MATCH ?`,
				append(filter, counts...), lengths, stats, f64s(tc.w[:]...), f64s(tc.b[:]...), q)
			if maps.Equal(wrong, got) {
				t.Fatalf("weights %v b %v, %q: wrong lengths change no score", tc.w, tc.b, terms)
			}
			for id, g := range got {
				want := 0.0
				for _, term := range terms {
					n := float64(len(hits[term]))
					idf := math.Log((rows - n + 0.5) / (n + 0.5))
					if idf <= 0 {
						idf = 1e-6
					}
					tf := 0.0
					for c := range nf {
						if tc.w[c] != 0 {
							tf += tc.w[c] * hits[term][id][c] / (1 - tc.b[c] + tc.b[c]*lens[id][c]/(float64(totals[c])/rows))
						}
					}
					want += idf * (tf * 2.2) / (tf + 1.2)
				}
				if math.Abs(-g-want) > 1e-12*math.Max(1, want) {
					t.Fatalf("weights %v b %v, %q: row %d scores %v, BM25F %v", tc.w, tc.b, terms, id, -g, want)
				}
			}
		}
	}
	// Malformed statistics or weights are errors, not scores.
	for _, args := range [][]any{{stats[:12], nil}, {stats, f64s(1, 2)}} {
		var s sql.NullFloat64
		err := db.QueryRow(`SELECT mnemo_bm25(f, ?, NULL, ?, ?) FROM f WHERE f MATCH 'quartz' LIMIT 1`, make([]byte, 8), args[0], args[1]).Scan(&s)
		if err == nil || !strings.Contains(err.Error(), "mnemo_bm25") {
			t.Errorf("stats %x weights %v: %v, %v; want an error naming mnemo_bm25", args[0], args[1], s, err)
		}
	}
}
