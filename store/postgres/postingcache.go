package postgres

import (
	"container/list"
	"sync"
	"unsafe"
)

// postingCache keeps decoded posting lists of the full-text index between
// queries, each under the version its term had when it was read (column
// ver of lex_terms, drawn from sequence lex_versions by every write that
// changes one of the term's blocks, never reused). A query reads its
// terms' versions and uses a list only under the same version: what the
// cache returns is what the database holds in the query's snapshot, so
// processes never diverge. Version 0 (no version: a row written by no
// writer that knows of versions) is never cached. Least recently used
// lists are dropped past the byte budget.
type postingCache struct {
	mu     sync.Mutex
	budget int64
	used   int64
	ll     *list.List // front: most recently used
	m      map[postingKey]*list.Element
}

type postingKey struct{ profile, term string }

type postingEntry struct {
	key postingKey
	ver int64
	ps  []posting
}

// DefaultPostingCache is the byte budget of a store's posting cache.
const DefaultPostingCache = 64 << 20

func newPostingCache(budget int64) *postingCache {
	if budget <= 0 {
		return nil
	}
	return &postingCache{budget: budget, ll: list.New(), m: map[postingKey]*list.Element{}}
}

func (e *postingEntry) size() int64 {
	return int64(len(e.ps))*int64(unsafe.Sizeof(posting{})) + int64(len(e.key.profile)+len(e.key.term)) + 96
}

// get returns the list of term in profile at version ver, if cached. The
// list is shared: callers only read it.
func (c *postingCache) get(profile, term string, ver int64) ([]posting, bool) {
	if c == nil || ver == 0 {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.m[postingKey{profile, term}]
	if !ok || el.Value.(*postingEntry).ver != ver {
		return nil, false
	}
	c.ll.MoveToFront(el)
	return el.Value.(*postingEntry).ps, true
}

// put caches ps, the whole list of term in profile at version ver.
func (c *postingCache) put(profile, term string, ver int64, ps []posting) {
	if c == nil || ver == 0 {
		return
	}
	e := &postingEntry{key: postingKey{profile, term}, ver: ver, ps: ps}
	if e.size() > c.budget/8 {
		return // one list may not crowd out the rest
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.m[e.key]; ok {
		old := el.Value.(*postingEntry)
		if old.ver > ver {
			return // a newer version is there
		}
		c.used -= old.size()
		c.ll.Remove(el)
	}
	c.m[e.key] = c.ll.PushFront(e)
	c.used += e.size()
	for c.used > c.budget {
		last := c.ll.Back()
		old := last.Value.(*postingEntry)
		c.ll.Remove(last)
		delete(c.m, old.key)
		c.used -= old.size()
	}
}
