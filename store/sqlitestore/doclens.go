package sqlitestore

import (
	"context"
	"database/sql"
	"time"

	"github.com/mnemo-dev/mnemo/internal/sqlitedb"
)

// docLengths keeps every memory's length in tokens in each field that the
// ranking normalises by length (fieldBs not 0: the content and the
// context) for the ranking function (sqlitedb.DocLengths), exact as of
// one change sequence. Looking each matching row's lengths up in FTS5's
// %_docsize table was half of the cost of ranking (OR queries of LoCoMo questions, ranked first: 10k
// memories 0.66 ms with lookups, 0.38 ms without; 100k 3.62 and 1.74 ms).
// After a write the copy is stale: queries go back to the lookups while a
// new copy loads in the background, at most once a second or 20 times as
// long as the last load took, whichever is longer (at 100k memories a load
// takes about 25 ms), so a steady stream of writes costs little.
type docLengths struct {
	blob    []byte // as of seq; never modified once published
	seq     int64
	loading bool
	next    time.Time // no load starts before
}

// lengths returns the lengths BLOB when it is exact as of seq, else nil,
// starting a load when none runs and the last is old enough (never in a
// one-shot store).
func (s *Store) lengths(seq int64) []byte {
	if s.rankFn == "" || s.oneShot {
		return nil
	}
	s.lensMu.Lock()
	defer s.lensMu.Unlock()
	l := &s.lens
	if l.blob != nil && l.seq == seq {
		return l.blob
	}
	if !l.loading && !time.Now().Before(l.next) && !s.closed.Load() {
		l.loading = true
		s.bg.Add(1)
		go s.loadLengths()
	}
	return nil
}

func (s *Store) loadLengths() {
	defer s.bg.Done()
	start := time.Now()
	blob, seq, err := s.readLengths(s.bgCtx)
	s.lensMu.Lock()
	defer s.lensMu.Unlock()
	l := &s.lens
	l.loading = false
	l.next = start.Add(max(time.Second, 20*time.Since(start)))
	if err != nil {
		return // the lookups go on; a later recall tries again
	}
	l.blob, l.seq = blob, seq
}

// readLengths reads the lengths and the change sequence they are exact
// for, in one read transaction.
func (s *Store) readLengths(ctx context.Context) ([]byte, int64, error) {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, err
	}
	defer tx.Rollback()
	var seq int64
	if err := tx.QueryRowContext(ctx, `SELECT value FROM counters WHERE name = 'seq'`).Scan(&seq); err != nil {
		return nil, 0, err
	}
	blob, err := sqlitedb.DocLengths(ctx, tx, "memories_lex", normalisedFields()...)
	if err != nil || blob == nil {
		return nil, 0, err
	}
	return blob, seq, nil
}

// normalisedFields are the fields the ranking normalises by length, in
// order: the lengths BLOB holds theirs (mnemo_bm25 reads it so).
func normalisedFields() []int {
	var out []int
	for c, b := range fieldBs {
		if b != 0 {
			out = append(out, c)
		}
	}
	return out
}
