package vector

import (
	"cmp"
	"slices"
	"sort"
	"time"
)

// NearRow is a memory near another in its session (Near).
type NearRow struct {
	// ID is the neighbour, Of the memory it is near; Abs is the difference
	// of their turns, Seq the neighbour's turn.
	ID, Of   string
	Abs, Seq int64
}

// MaxNearSession is the largest session Near reads: it keeps a session's
// rows ordered by turn, which costs a sort after a deletion in it.
const MaxNearSession = 1 << 16

// Near returns, for each of ids held in a session (not the empty one),
// the memories of that session whose turn is within radius of its own,
// itself aside, that pass f, in no order (each id counted once); the
// turns are memories' Seq, which are never negative. ok is false when a
// session holds more than MaxNearSession memories (ask the store).
func (x *Index) Near(f Filter, ids []string, radius int) (rows []NearRow, ok bool) {
	if radius <= 0 || len(ids) == 0 {
		return nil, true
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	for {
		rows, ok, sorted := x.near(f, ids, int64(radius))
		if sorted {
			return rows, ok
		}
		// A session's rows are out of turn order (a deletion or a turn
		// written before others): ordered under the write lock, once.
		x.mu.RUnlock()
		x.mu.Lock()
		x.sortSessions(ids)
		x.mu.Unlock()
		x.mu.RLock()
	}
}

// near is Near under the read lock; sorted is false (and nothing done)
// when a session it needs is not in turn order.
func (x *Index) near(f Filter, ids []string, r int64) (rows []NearRow, ok, sorted bool) {
	empty, hasEmpty := x.strs[""]
	bySession := map[int32][]int{}
	seen := make(map[int]bool, len(ids))
	for _, id := range ids {
		s, held := x.slot[id]
		if !held || seen[s] || (hasEmpty && x.rows[s].session == empty) {
			continue
		}
		seen[s] = true
		sess := x.rows[s].session
		l := x.posts[postingKey{postSession, sess}]
		if len(l) > MaxNearSession {
			return nil, false, true
		}
		if x.unordered[sess] {
			return nil, false, false
		}
		bySession[sess] = append(bySession[sess], s)
	}
	if len(bySession) == 0 {
		return nil, true, true
	}
	c := x.compile(f)
	if c.none {
		return nil, true, true
	}
	for sess, hits := range bySession {
		l := x.posts[postingKey{postSession, sess}]
		for _, h := range hits {
			seq := x.rows[h].seq
			i := sort.Search(len(l), func(i int) bool { return x.rows[l[i]].seq >= seq-r })
			for ; i < len(l) && x.rows[l[i]].seq <= seq+r; i++ {
				t := int(l[i])
				if t == h || !c.match(t, &x.rows[t]) {
					continue
				}
				d := x.rows[t].seq - seq
				if d < 0 {
					d = -d
				}
				rows = append(rows, NearRow{ID: x.rows[t].id, Of: x.rows[h].id, Abs: d, Seq: x.rows[t].seq})
			}
		}
	}
	return rows, true, true
}

// sortSessions orders by turn the rows of the sessions of ids (under the
// write lock), keeping each row's position in its posting.
func (x *Index) sortSessions(ids []string) {
	for _, id := range ids {
		s, held := x.slot[id]
		if !held {
			continue
		}
		sess := x.rows[s].session
		l := x.posts[postingKey{postSession, sess}]
		if len(l) > MaxNearSession || !x.unordered[sess] {
			continue
		}
		slices.SortFunc(l, func(a, b int32) int { return cmp.Or(cmp.Compare(x.rows[a].seq, x.rows[b].seq), cmp.Compare(a, b)) })
		for i, t := range l {
			x.rows[t].pos[postSession] = int32(i)
		}
		delete(x.unordered, sess)
	}
}

// Signal is what an index holds of a memory's signals: when it occurred
// and its importance.
type Signal struct {
	Occurred   time.Time
	Importance float64
}

// Signals calls f with the signals of each of ids the index holds, in the
// order of ids, under the index's read lock: f must not call the index.
func (x *Index) Signals(ids []string, f func(id string, s Signal)) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	for _, id := range ids {
		if s, ok := x.slot[id]; ok {
			r := &x.rows[s]
			f(id, Signal{Occurred: time.Unix(r.occurred.sec, int64(r.occurred.nsec)).UTC(), Importance: r.importance})
		}
	}
}
