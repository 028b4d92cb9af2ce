package sqlitestore

import (
	"context"
	"database/sql"
	"sync"
)

// maxCachedStmts bounds a stmtCache: the statements the store runs have a
// few dozen shapes (a scope's conditions are parameters); beyond the bound
// a statement is prepared for its one use, as database/sql would.
const maxCachedStmts = 512

// stmtCache prepares each distinct statement once: database/sql then keeps
// it prepared on every connection it runs on, so a recall's dozen queries
// skip SQLite's parse and plan (a tenth of a recall's CPU time before).
//
// Preparing takes a connection of the pool. A query inside a read
// transaction already holds one, and waiting there for another deadlocks
// once every connection is held by such a transaction; so a transaction's
// query that misses the cache runs unprepared and has the statement
// prepared in the background, for the next time.
type stmtCache struct {
	db      *sql.DB
	mu      sync.Mutex
	m       map[string]*sql.Stmt
	warming map[string]bool // being prepared in the background
	closed  bool
	bg      sync.WaitGroup
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, m: map[string]*sql.Stmt{}, warming: map[string]bool{}}
}

// cached returns query's statement when it is prepared, else nil, having
// it prepared in the background (unless the cache is full or closed).
func (c *stmtCache) cached(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok || c.closed || c.warming[query] || len(c.m)+len(c.warming) >= maxCachedStmts {
		return st
	}
	c.warming[query] = true
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		st, err := c.db.PrepareContext(context.Background(), query)
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.warming, query)
		if err != nil {
			return // run unprepared; a later miss tries again
		}
		if c.closed {
			st.Close()
			return
		}
		c.m[query] = st
	}()
	return nil
}

// get returns query's prepared statement, or nil when the cache is full.
func (c *stmtCache) get(ctx context.Context, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	st, ok := c.m[query]
	full := len(c.m) >= maxCachedStmts
	c.mu.Unlock()
	if ok || full {
		return st, nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if prev, ok := c.m[query]; ok { // prepared meanwhile by another caller
		st.Close()
		return prev, nil
	}
	c.m[query] = st
	return st, nil
}

// close closes the statements, after those being prepared.
func (c *stmtCache) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.bg.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.m {
		st.Close()
		delete(c.m, q)
	}
}

// QueryContext runs query on the pool through its cached statement.
func (c *stmtCache) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := c.get(ctx, query)
	if err != nil || st == nil {
		if err != nil {
			return nil, err
		}
		return c.db.QueryContext(ctx, query, args...)
	}
	return st.QueryContext(ctx, args...)
}

// QueryRowContext is QueryContext for one row.
func (c *stmtCache) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := c.get(ctx, query)
	if err != nil || st == nil {
		// database/sql reports a failed prepare through the row's Scan.
		return c.db.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// cachedTx runs a read transaction's queries through the cache's
// statements, bound to the transaction's connection.
type cachedTx struct {
	tx *sql.Tx
	c  *stmtCache
}

func (t cachedTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := t.c.cached(query); st != nil {
		return t.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return t.tx.QueryContext(ctx, query, args...)
}

func (t cachedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := t.c.cached(query); st != nil {
		return t.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, query, args...)
}
