package sqlitestore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mnemo-dev/mnemo/internal/ftstoken"
	"github.com/mnemo-dev/mnemo/internal/sqlitedb"
	"github.com/mnemo-dev/mnemo/mnemotype"
	"github.com/mnemo-dev/mnemo/textindex"
)

// The full-text index (memories_lex) is contentless: the store writes it
// next to every change of a memory, in the same transaction. Its columns:
//
//	content  the memory's content
//	actor    who said or did it
//	time     when it happened, in words ("Monday 8 May 2023")
//	context  the previous turns of its session (Options.ContextTurns)
//	scope    where it is, as tokens:
//	         p<profile id> k<kind> s<session id, 0 without> a<actor id, 0 without> [j<project id>]
//
// with the ids of table profiles and scope_names. The fields are given as
// tokens (ftsText), made in Go as FTS5's 'porter unicode61' tokenizer
// makes them; queries are tokenized likewise (MatchExpr). A query selects one
// profile's rows, or one session's, inside FTS5, without reading other
// rows of the table. The scope column is given as it is: its tokens are
// lower-case ASCII letters and digits, which the 'ascii' tokenizer keeps
// whole, as the porter stemmer would have left them (too short, ending in
// a digit). User terms are confined to the other columns, so a word such
// as "p7" in a memory or a query never meets them.
//
// Each profile keeps its own BM25 statistics in its row of profiles: docs
// (memories indexed) and each field's total length in tokens (as FTS5
// counts it: ftsText.n when a row is written, its size record when one is
// taken out), and seq, a counter advanced by every change of the profile's
// index. Document frequencies are counted per profile and cached by seq
// (see lexical.go): a profile's scores never depend on another profile's
// memories.

// Columns of memories_lex; the fields are the columns before ftsScope.
const (
	ftsContent = iota
	ftsActor
	ftsTime
	ftsContext
	ftsScope
	ftsFields = ftsScope
)

// fieldNames are the field columns' names, by column.
var fieldNames = [ftsFields]string{"content", "actor", "time", "context"}

// kindNumbers numbers the kinds for the scope column.
var kindNumbers = map[mnemotype.Kind]int{mnemotype.KindEpisodic: 1, mnemotype.KindSemantic: 2, mnemotype.KindIdentity: 3}

// Scope-name fields of table scope_names.
const (
	fieldProject = "project"
	fieldSession = "session"
	fieldActor   = "actor"
)

// DefaultContextTurns is how many previous turns of its session a memory
// is indexed with in a new database (Options.ContextTurns 0).
const DefaultContextTurns = 1

// newWriteIndexer returns the indexer of a write transaction, with the
// context turns the database is indexed with (another process may have
// rebuilt it with another number since this store opened), and the
// numbers of profiles and names remembered as of the database's count of
// profile deletions (a deleted profile's name gets a new number).
func (s *Store) newWriteIndexer(ctx context.Context, tx *sql.Tx) (*indexer, error) {
	var turns int
	var gen int64
	if err := tx.QueryRowContext(ctx, `SELECT max(0, (SELECT value FROM counters WHERE name = 'context_turns')),
		coalesce((SELECT value FROM counters WHERE name = 'profile_deletions'), 0)`).Scan(&turns, &gen); err != nil {
		return nil, fmt.Errorf("read the index's counters: %w", err)
	}
	s.ids.at(gen)
	ix := newIndexer(tx, turns, s.ids)
	ix.gen = gen
	return ix, nil
}

// queryer is what reading helpers run through: the reader pool, a read
// transaction or the writer's transaction.
type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// profileStats is a profile's row of table profiles: its number, index
// sequence, memories indexed and each field's total length.
type profileStats struct {
	id, seq, docs int64
	tokens        [ftsFields]int64
}

const profileCols = `id, seq, docs, content_tokens, actor_tokens, time_tokens, context_tokens`

func (p *profileStats) dest() []any {
	return []any{&p.id, &p.seq, &p.docs, &p.tokens[ftsContent], &p.tokens[ftsActor], &p.tokens[ftsTime], &p.tokens[ftsContext]}
}

// readProfile returns name's row; ok is false when the profile has never
// held a memory.
func readProfile(ctx context.Context, q queryer, name string) (p profileStats, ok bool, err error) {
	err = q.QueryRowContext(ctx, `SELECT `+profileCols+` FROM profiles WHERE name = ?`, name).Scan(p.dest()...)
	if errors.Is(err, sql.ErrNoRows) {
		return p, false, nil
	}
	if err != nil {
		return p, false, fmt.Errorf("read profile %q: %w", name, err)
	}
	return p, true, nil
}

// timeWords renders when a memory occurred as its time field holds it.
func timeWords(t time.Time) string { return textindex.TimeWords(t) }

// indexer writes index rows inside one write transaction, numbering the
// profiles and scope names it meets (once each), adding up each profile's
// change of statistics, and re-indexing the turns whose context changed;
// flush writes what it added up.
type indexer struct {
	tx       *sql.Tx
	known    *scopeIDs
	turns    int // context turns
	profiles map[string]int64
	names    map[scopeKey]int64
	delta    map[int64]*statsDelta
	// after are the (profile, session, seq) whose next turns must be
	// re-indexed: their context holds it.
	after map[turnKey]bool
	// sessions are the sessions Insert wrote to in this transaction.
	sessions map[sessionKey]*sessionTurns
	stmts    map[string]*sql.Stmt
	tk       ftstoken.Tokenizer
	// days holds the time field of the days met, by year*10000 +
	// month*100 + day.
	days map[int64]ftsText
	// gen is the count of profile deletions when the transaction began.
	gen int64
}

type sessionKey struct{ profile, session string }

// sessionTurns is what an Insert transaction knows of a session: the
// highest seq stored before it (stored) and since (last), and the content
// of the turns it inserted, by seq in insertion order. A new turn whose
// context holds no turn stored before the transaction takes its context
// from here instead of reading it back, and one numbered after every
// stored turn has no later turn to re-index.
type sessionTurns struct {
	stored, last int64
	added        map[int64][]ftsText
}

type scopeKey struct {
	profile     int64
	field, name string
}

type turnKey struct {
	profile, session string
	seq              int64
}

type statsDelta struct {
	docs   int64
	tokens [ftsFields]int64
}

// newIndexer returns an indexer writing in tx with turns context turns;
// known, when not nil, holds numbers of names already committed.
func newIndexer(tx *sql.Tx, turns int, known *scopeIDs) *indexer {
	return &indexer{tx: tx, turns: turns, known: known, profiles: map[string]int64{}, names: map[scopeKey]int64{},
		delta: map[int64]*statsDelta{}, after: map[turnKey]bool{}, sessions: map[sessionKey]*sessionTurns{}, stmts: map[string]*sql.Stmt{},
		days: map[int64]ftsText{}}
}

// stmt returns query prepared in the transaction, once per indexer (the
// transaction closes it).
func (ix *indexer) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st, ok := ix.stmts[query]; ok {
		return st, nil
	}
	st, err := ix.tx.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	ix.stmts[query] = st
	return st, nil
}

// session returns what the transaction knows of m's session, reading the
// highest stored seq on first use.
func (ix *indexer) session(ctx context.Context, m *mnemotype.Memory) (*sessionTurns, error) {
	k := sessionKey{m.Profile, m.Session}
	if st, ok := ix.sessions[k]; ok {
		return st, nil
	}
	q, err := ix.stmt(ctx, `SELECT coalesce(max(session_seq), 0) FROM memories WHERE profile = ? AND session = ?`)
	if err != nil {
		return nil, err
	}
	st := &sessionTurns{added: map[int64][]ftsText{}}
	if err := q.QueryRowContext(ctx, m.Profile, m.Session).Scan(&st.stored); err != nil {
		return nil, err
	}
	st.last = st.stored
	ix.sessions[k] = st
	return st, nil
}

// numberTurn gives a new memory without a seq the next one of its session
// and notes the seq of every new memory; call it before the memory's row
// is inserted, then addNew after.
func (ix *indexer) numberTurn(ctx context.Context, m *mnemotype.Memory) error {
	st, err := ix.session(ctx, m)
	if err != nil {
		return err
	}
	if m.Seq == 0 {
		m.Seq = st.last + 1
	}
	st.last = max(st.last, m.Seq)
	return nil
}

// scopeIDs remembers the numbers of profiles and scope names committed to
// the database, which never change, so that a write numbers a name it has
// met before without a query. Safe for concurrent use.
type scopeIDs struct {
	mu       sync.Mutex
	profiles map[string]int64
	names    map[scopeKey]int64
	// gen is the count of profile deletions the numbers are valid for.
	gen int64
}

// at forgets every number when the database has deleted profiles since
// they were learnt (gen is its count of deletions).
func (c *scopeIDs) at(gen int64) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		clear(c.profiles)
		clear(c.names)
		c.gen = gen
	}
}

func newScopeIDs() *scopeIDs {
	return &scopeIDs{profiles: map[string]int64{}, names: map[scopeKey]int64{}}
}

// learn records the numbers ix used, once its transaction has committed.
func (c *scopeIDs) learn(ix *indexer) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if ix.gen != c.gen {
		return // numbered before a profile deletion this store has seen since
	}
	maps.Copy(c.profiles, ix.profiles)
	maps.Copy(c.names, ix.names)
}

func (c *scopeIDs) profile(name string) (int64, bool) {
	if c == nil {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.profiles[name]
	return id, ok
}

func (c *scopeIDs) name(k scopeKey) (int64, bool) {
	if c == nil {
		return 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.names[k]
	return id, ok
}

// profileID returns name's number, creating its row if needed.
func (ix *indexer) profileID(ctx context.Context, name string) (int64, error) {
	if id, ok := ix.profiles[name]; ok {
		return id, nil
	}
	id, ok := ix.known.profile(name)
	if !ok {
		var err error
		if id, err = ix.number(ctx, `SELECT id FROM profiles WHERE name = ?`, `INSERT INTO profiles(name) VALUES (?)`, name); err != nil {
			return 0, fmt.Errorf("number profile %q: %w", name, err)
		}
	}
	ix.profiles[name] = id
	return id, nil
}

// nameID returns the number of a project, session or actor name of a
// profile, creating its row if needed; "" is 0.
func (ix *indexer) nameID(ctx context.Context, profile int64, field, name string) (int64, error) {
	if name == "" {
		return 0, nil
	}
	k := scopeKey{profile, field, name}
	if id, ok := ix.names[k]; ok {
		return id, nil
	}
	id, ok := ix.known.name(k)
	if !ok {
		var err error
		if id, err = ix.number(ctx, `SELECT id FROM scope_names WHERE profile_id = ? AND field = ? AND name = ?`,
			`INSERT INTO scope_names(profile_id, field, name) VALUES (?, ?, ?)`, profile, field, name); err != nil {
			return 0, fmt.Errorf("number %s %q: %w", field, name, err)
		}
	}
	ix.names[k] = id
	return id, nil
}

// number returns the id of the row that find selects by args, inserting
// it with insert (the same args) when there is none.
func (ix *indexer) number(ctx context.Context, find, insert string, args ...any) (int64, error) {
	var id int64
	err := ix.tx.QueryRowContext(ctx, find, args...).Scan(&id)
	if !errors.Is(err, sql.ErrNoRows) {
		return id, err
	}
	res, err := ix.tx.ExecContext(ctx, insert, args...)
	if err != nil {
		return 0, mapErr(err)
	}
	return res.LastInsertId()
}

// hasScopeToken reports whether the tokenizer finds in t a token of the
// scope column's form: one of its prefix letters, then digits.
func hasScopeToken(t string) bool {
	for _, tok := range ftstoken.Tokens(t) {
		if len(tok) >= 2 && strings.ContainsRune("pksaj", rune(tok[0])) && strings.Trim(tok[1:], "0123456789") == "" {
			return true
		}
	}
	return false
}

// scopeText renders the scope column of a memory of profile pid. Its
// tokens are those hasScopeToken recognises.
func (ix *indexer) scopeText(ctx context.Context, pid int64, m *mnemotype.Memory) (string, error) {
	session, err := ix.nameID(ctx, pid, fieldSession, m.Session)
	if err != nil {
		return "", err
	}
	actor, err := ix.nameID(ctx, pid, fieldActor, m.Actor)
	if err != nil {
		return "", err
	}
	s := "p" + strconv.FormatInt(pid, 10) + " k" + strconv.Itoa(kindNumbers[m.Kind]) +
		" s" + strconv.FormatInt(session, 10) + " a" + strconv.FormatInt(actor, 10)
	if m.Project != "" {
		project, err := ix.nameID(ctx, pid, fieldProject, m.Project)
		if err != nil {
			return "", err
		}
		s += " j" + strconv.FormatInt(project, 10)
	}
	return s, nil
}

// contextText is the context field of a memory: the content of the turns
// of its session whose seq is within ix.turns before its own, oldest
// first, one per line, read through q (contextSQL prepared). Memories
// without a session have none.
func contextText(ctx context.Context, q *sql.Stmt, turns int, m *mnemotype.Memory) (string, error) {
	if turns <= 0 || m.Session == "" {
		return "", nil
	}
	rows, err := q.QueryContext(ctx, m.Profile, m.Session, m.Seq-int64(turns), m.Seq)
	if err != nil {
		return "", fmt.Errorf("read the turns before memory %s: %w", m.ID, err)
	}
	defer rows.Close()
	var parts []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return "", fmt.Errorf("read the turns before memory %s: %w", m.ID, err)
		}
		parts = append(parts, c)
	}
	return strings.Join(parts, "\n"), rows.Err()
}

// contextSQL reads the turns of a memory's context (see contextText).
const contextSQL = `SELECT content FROM memories WHERE profile = ? AND session = ?
	AND session_seq >= ? AND session_seq < ? ORDER BY session_seq, rid`

// add indexes memory m stored under rowid rid, and marks the turns after
// it for re-indexing.
func (ix *indexer) add(ctx context.Context, rid int64, m *mnemotype.Memory) error {
	q, err := ix.stmt(ctx, contextSQL)
	if err != nil {
		return err
	}
	cx, err := contextText(ctx, q, ix.turns, m)
	if err != nil {
		return err
	}
	if err := ix.index(ctx, rid, m, tokenized(&ix.tk, m.Content), tokenized(&ix.tk, cx)); err != nil {
		return err
	}
	ix.touch(m)
	return nil
}

// addNew indexes memory m, just inserted under rowid rid by Insert after
// numberTurn, its content tokenized as content, taking its context from
// the turns this transaction inserted when no stored turn can be part of
// it, and marking the turns after it for re-indexing only when stored
// turns follow it.
func (ix *indexer) addNew(ctx context.Context, rid int64, m *mnemotype.Memory, content ftsText) error {
	if ix.turns <= 0 || m.Session == "" {
		return ix.index(ctx, rid, m, content, ftsText{})
	}
	st, err := ix.session(ctx, m)
	if err != nil {
		return err
	}
	var cx ftsText
	if st.stored < m.Seq-int64(ix.turns) {
		var parts []ftsText
		for s := m.Seq - int64(ix.turns); s < m.Seq; s++ {
			parts = append(parts, st.added[s]...)
		}
		cx = joinTexts(parts)
	} else {
		q, err := ix.stmt(ctx, contextSQL)
		if err != nil {
			return err
		}
		raw, err := contextText(ctx, q, ix.turns, m)
		if err != nil {
			return err
		}
		cx = tokenized(&ix.tk, raw)
	}
	if err := ix.index(ctx, rid, m, content, cx); err != nil {
		return err
	}
	st.added[m.Seq] = append(st.added[m.Seq], content)
	later := st.stored > m.Seq // a stored turn may follow it
	for s := m.Seq + 1; s <= m.Seq+int64(ix.turns) && !later; s++ {
		later = len(st.added[s]) > 0 // a turn inserted before it follows it
	}
	if later {
		ix.touch(m)
	}
	return nil
}

// index writes m's row of the full-text index, with its content and
// context tokenized as content and cx, and counts it in its profile's
// statistics.
func (ix *indexer) index(ctx context.Context, rid int64, m *mnemotype.Memory, content, cx ftsText) error {
	pid, err := ix.profileID(ctx, m.Profile)
	if err != nil {
		return err
	}
	scope, err := ix.scopeText(ctx, pid, m)
	if err != nil {
		return err
	}
	ins, err := ix.stmt(ctx, `INSERT INTO memories_lex(rowid, content, actor, time, context, scope) VALUES (?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return err
	}
	actor, at := tokenized(&ix.tk, m.Actor), ix.timeText(m.OccurredAt)
	if _, err := ins.ExecContext(ctx, rid, content.s, actor.s, at.s, cx.s, scope); err != nil {
		return fmt.Errorf("index memory %s: %w", m.ID, mapErr(err))
	}
	ix.change(pid, 1, [ftsFields]int64{ftsContent: content.n, ftsActor: actor.n, ftsTime: at.n, ftsContext: cx.n})
	return nil
}

// timeText is the time field of a memory that occurred at t, tokenized.
func (ix *indexer) timeText(t time.Time) ftsText {
	y, mo, d := t.UTC().Date()
	day := int64(y)*10000 + int64(mo)*100 + int64(d)
	if f, ok := ix.days[day]; ok {
		return f
	}
	f := tokenized(&ix.tk, timeWords(t))
	ix.days[day] = f
	return f
}

// ftsText is a field as the full-text index is given it: its tokens, as
// package ftstoken makes them (FTS5's 'porter unicode61' tokenizer, to
// the byte), separated by spaces, which the table's 'ascii' tokenizer
// splits back into the same tokens at the same positions; n counts them
// (the field's length for BM25). Tokenizing in Go lets a write tokenize
// its batch on another goroutine, beside the transaction (pretokenize).
type ftsText struct {
	s string
	n int64
}

// tokenized tokenizes text with tk.
func tokenized(tk *ftstoken.Tokenizer, text string) ftsText {
	var f ftsText
	var b []byte
	tk.Tokenize(text, func(tok []byte, _ int) {
		if f.n > 0 {
			b = append(b, ' ')
		}
		b = append(b, tok...)
		f.n++
	})
	f.s = string(b)
	return f
}

// joinTexts is the field holding parts one after the other.
func joinTexts(parts []ftsText) ftsText {
	var f ftsText
	ss := make([]string, 0, len(parts))
	for _, p := range parts {
		if p.n > 0 {
			ss = append(ss, p.s)
			f.n += p.n
		}
	}
	f.s = strings.Join(ss, " ")
	return f
}

// pretokenize tokenizes the contents of mems on a goroutine of its own,
// in order, sending each on the channel it returns (buffered for all of
// them, so the goroutine never waits); it stops early once stop is
// closed. It reads the contents before it returns: the caller may reuse
// mems as soon as it is done with the channel.
func pretokenize(mems []mnemotype.Memory, stop <-chan struct{}) <-chan ftsText {
	texts := make([]string, len(mems))
	for i := range mems {
		texts[i] = mems[i].Content
	}
	out := make(chan ftsText, len(texts))
	go func() {
		defer close(out)
		var tk ftstoken.Tokenizer
		for _, text := range texts {
			select {
			case <-stop:
				return
			default:
			}
			out <- tokenized(&tk, text)
		}
	}()
	return out
}

// fieldLengths is fieldLengths through the indexer's prepared statement.
func (ix *indexer) fieldLengths(ctx context.Context, rid int64) ([ftsFields]int64, error) {
	q, err := ix.stmt(ctx, fieldLengthsSQL)
	if err != nil {
		return [ftsFields]int64{}, err
	}
	return fieldLengths(ctx, q, rid)
}

// remove takes memory m, stored under rowid rid, out of the index and
// marks the turns after it for re-indexing.
func (ix *indexer) remove(ctx context.Context, rid int64, m *mnemotype.Memory) error {
	pid, err := ix.profileID(ctx, m.Profile)
	if err != nil {
		return err
	}
	lens, err := ix.fieldLengths(ctx, rid)
	if err != nil {
		return err
	}
	if _, err := ix.tx.ExecContext(ctx, `DELETE FROM memories_lex WHERE rowid = ?`, rid); err != nil {
		return fmt.Errorf("unindex row %d: %w", rid, mapErr(err))
	}
	for i := range lens {
		lens[i] = -lens[i]
	}
	ix.change(pid, -1, lens)
	ix.touch(m)
	return nil
}

// touch marks the turns whose context holds m for re-indexing.
func (ix *indexer) touch(m *mnemotype.Memory) {
	if ix.turns > 0 && m.Session != "" {
		ix.after[turnKey{m.Profile, m.Session, m.Seq}] = true
	}
}

func (ix *indexer) change(pid, docs int64, lens [ftsFields]int64) {
	d := ix.delta[pid]
	if d == nil {
		d = &statsDelta{}
		ix.delta[pid] = d
	}
	d.docs += docs
	for i, n := range lens {
		d.tokens[i] += n
	}
}

// flush re-indexes the turns whose context changed, then writes each
// touched profile's statistics and advances its seq.
func (ix *indexer) flush(ctx context.Context) error {
	after := ix.after
	// Re-indexing a turn leaves its content as it is: the turns after it
	// need nothing.
	ix.after = map[turnKey]bool{}
	done := map[int64]bool{}
	var redone []int64
	for k := range after {
		next, err := ix.turnsAfter(ctx, k)
		if err != nil {
			return err
		}
		for _, r := range next {
			if done[r.rid] {
				continue
			}
			done[r.rid] = true
			redone = append(redone, r.rid)
			if err := ix.remove(ctx, r.rid, &r.m); err != nil {
				return err
			}
			if err := ix.add(ctx, r.rid, &r.m); err != nil {
				return err
			}
		}
	}
	clear(ix.after)
	if err := ix.refeed(ctx, redone); err != nil {
		return err
	}
	for pid, d := range ix.delta {
		if _, err := ix.tx.ExecContext(ctx, `UPDATE profiles SET seq = seq + 1, docs = docs + ?, content_tokens = content_tokens + ?,
			actor_tokens = actor_tokens + ?, time_tokens = time_tokens + ?, context_tokens = context_tokens + ? WHERE id = ?`,
			d.docs, d.tokens[ftsContent], d.tokens[ftsActor], d.tokens[ftsTime], d.tokens[ftsContext], pid); err != nil {
			return fmt.Errorf("update profile statistics: %w", mapErr(err))
		}
	}
	clear(ix.delta)
	return nil
}

// refeed moves the re-indexed memories rids to the end of the change
// feed: what the index holds of them changed (store.ChangesParams.Text).
func (ix *indexer) refeed(ctx context.Context, rids []int64) error {
	if len(rids) == 0 {
		return nil
	}
	slices.Sort(rids)
	first, err := nextSeq(ctx, ix.tx, len(rids))
	if err != nil {
		return err
	}
	stmt, err := ix.stmt(ctx, `UPDATE memories SET seq = ? WHERE rid = ?`)
	if err != nil {
		return err
	}
	for i, rid := range rids {
		if _, err := stmt.ExecContext(ctx, first+int64(i), rid); err != nil {
			return fmt.Errorf("move re-indexed memory %d in the change feed: %w", rid, mapErr(err))
		}
	}
	return nil
}

// turnsAfter returns the memories whose context holds the turn k.
func (ix *indexer) turnsAfter(ctx context.Context, k turnKey) ([]ridMemory, error) {
	rows, err := ix.tx.QueryContext(ctx, `SELECT rid, id, profile, project, session, session_seq, actor, kind, content, occurred_at
		FROM memories WHERE profile = ? AND session = ? AND session_seq > ? AND session_seq <= ?`, k.profile, k.session, k.seq, k.seq+int64(ix.turns))
	if err != nil {
		return nil, fmt.Errorf("read the turns after %d: %w", k.seq, err)
	}
	return scanIndexRows(rows)
}

const fieldLengthsSQL = `SELECT sz FROM memories_lex_docsize WHERE id = ?`

// fieldLengths returns the length in tokens of each field of index row
// rid, as FTS5 recorded it (zeros when the row is not indexed), through q,
// fieldLengthsSQL prepared.
func fieldLengths(ctx context.Context, q *sql.Stmt, rid int64) ([ftsFields]int64, error) {
	var out [ftsFields]int64
	var sz []byte
	err := q.QueryRowContext(ctx, rid).Scan(&sz)
	if errors.Is(err, sql.ErrNoRows) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("read length of row %d: %w", rid, err)
	}
	return sizeRecord(sz, rid)
}

// sizeRecord decodes the field lengths of row rid from its FTS5 size
// record.
func sizeRecord(sz []byte, rid int64) ([ftsFields]int64, error) {
	var out [ftsFields]int64
	for c := range out {
		n, ok := sqlitedb.ColumnSize(sz, c)
		if !ok {
			return out, fmt.Errorf("read length of row %d: malformed size record", rid)
		}
		out[c] = int64(n)
	}
	return out, nil
}

// ridMemory is a memory with its rowid, as the index needs it.
type ridMemory struct {
	rid int64
	m   mnemotype.Memory
}

func scanIndexRows(rows *sql.Rows) ([]ridMemory, error) {
	defer rows.Close()
	var out []ridMemory
	for rows.Next() {
		var r ridMemory
		var kind, occurred string
		if err := rows.Scan(&r.rid, &r.m.ID, &r.m.Profile, &r.m.Project, &r.m.Session, &r.m.Seq, &r.m.Actor, &kind, &r.m.Content, &occurred); err != nil {
			return nil, err
		}
		r.m.Kind = mnemotype.Kind(kind)
		t, err := parseTime(occurred)
		if err != nil {
			return nil, err
		}
		r.m.OccurredAt = t
		out = append(out, r)
	}
	return out, rows.Err()
}

// ensureIndex rebuilds the index inside tx unless it was built with
// turns context turns: after migration 6, or when Options.ContextTurns
// changed.
func ensureIndex(ctx context.Context, tx *sql.Tx, turns int) error {
	var built int64
	if err := tx.QueryRowContext(ctx, `SELECT value FROM counters WHERE name = 'context_turns'`).Scan(&built); err != nil {
		return fmt.Errorf("read the index's context turns: %w", err)
	}
	if built == int64(turns) {
		return nil
	}
	if err := reindex(ctx, tx, turns); err != nil {
		return err
	}
	// Every memory's indexed context may have changed: all of them move to
	// the end of the change feed, in rowid order.
	var n int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM memories`).Scan(&n); err != nil {
		return fmt.Errorf("rebuild the full-text index: %w", err)
	}
	if n > 0 {
		first, err := nextSeq(ctx, tx, int(n))
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE memories SET seq = ? + r.n FROM (SELECT rid, row_number() OVER (ORDER BY rid) - 1 AS n FROM memories) r
			WHERE memories.rid = r.rid`, first); err != nil {
			return fmt.Errorf("rebuild the full-text index: %w", err)
		}
	}
	_, err := tx.ExecContext(ctx, `UPDATE counters SET value = ? WHERE name = 'context_turns'`, turns)
	return err
}

// reindex empties the full-text index and the profiles' statistics, then
// indexes every memory again with turns context turns.
func reindex(ctx context.Context, tx *sql.Tx, turns int) error {
	for _, q := range []string{
		`INSERT INTO memories_lex(memories_lex) VALUES ('delete-all')`,
		`UPDATE profiles SET seq = seq + 1, docs = 0, content_tokens = 0, actor_tokens = 0, time_tokens = 0, context_tokens = 0`,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("rebuild the full-text index: %w", err)
		}
	}
	ix := newIndexer(tx, turns, nil)
	for last := int64(-1 << 63); ; {
		rows, err := tx.QueryContext(ctx, `SELECT rid, id, profile, project, session, session_seq, actor, kind, content, occurred_at
			FROM memories WHERE rid > ? ORDER BY rid LIMIT 5000`, last)
		if err != nil {
			return fmt.Errorf("rebuild the full-text index: %w", err)
		}
		page, err := scanIndexRows(rows)
		if err != nil {
			return fmt.Errorf("rebuild the full-text index: %w", err)
		}
		if len(page) == 0 {
			break
		}
		for i := range page {
			if err := ix.add(ctx, page[i].rid, &page[i].m); err != nil {
				return fmt.Errorf("rebuild the full-text index: %w", err)
			}
		}
		last = page[len(page)-1].rid
	}
	clear(ix.after) // every row is indexed with its context as it is
	return ix.flush(ctx)
}
