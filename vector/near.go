package vector

import "time"

// NearRow is a memory near another in its session (Near).
type NearRow struct {
	// ID is the neighbour, Of the memory it is near; Abs is the difference
	// of their turns, Seq the neighbour's turn.
	ID, Of   string
	Abs, Seq int64
}

// MaxNearSession is the largest session Near reads: it visits every turn
// of each session it is asked about, which costs more than the store's
// indexed lookup in a longer one.
const MaxNearSession = 4096

// Near returns, for each of ids held in a session (not the empty one),
// the memories of that session whose turn is within radius of its own,
// itself aside, that pass f, in no order (each id counted once); the
// turns are memories' Seq, which are never negative. ok is false when a session
// holds more than MaxNearSession memories (ask the store).
func (x *Index) Near(f Filter, ids []string, radius int) (rows []NearRow, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if radius <= 0 || len(ids) == 0 {
		return nil, true
	}
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
		if len(x.posts[postingKey{postSession, sess}]) > MaxNearSession {
			return nil, false
		}
		bySession[sess] = append(bySession[sess], s)
	}
	if len(bySession) == 0 {
		return nil, true
	}
	c := x.compile(f)
	if c.none {
		return nil, true
	}
	r := int64(radius)
	for sess, hits := range bySession {
		for _, t := range x.posts[postingKey{postSession, sess}] {
			n := &x.rows[t]
			matched := false
			for _, h := range hits {
				if int(t) == h {
					continue
				}
				d := n.seq - x.rows[h].seq
				if d < 0 {
					d = -d
				}
				if d > r {
					continue
				}
				if !matched {
					if !c.match(int(t), n) {
						break
					}
					matched = true
				}
				rows = append(rows, NearRow{ID: n.id, Of: x.rows[h].id, Abs: d, Seq: n.seq})
			}
		}
	}
	return rows, true
}

// Signal is what an index holds of a memory's signals: when it occurred
// and its importance.
type Signal struct {
	Occurred   time.Time
	Importance float64
}

// Signals returns the signals of those of ids the index holds.
func (x *Index) Signals(ids []string) map[string]Signal {
	x.mu.RLock()
	defer x.mu.RUnlock()
	out := make(map[string]Signal, len(ids))
	for _, id := range ids {
		if s, ok := x.slot[id]; ok {
			r := &x.rows[s]
			out[id] = Signal{Occurred: time.Unix(r.occurred.sec, int64(r.occurred.nsec)).UTC(), Importance: r.importance}
		}
	}
	return out
}
