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
type stmtCache struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, m: map[string]*sql.Stmt{}}
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

func (c *stmtCache) close() {
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
	st, err := t.c.get(ctx, query)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return t.tx.QueryContext(ctx, query, args...)
	}
	return t.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
}

func (t cachedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := t.c.get(ctx, query)
	if err != nil || st == nil {
		return t.tx.QueryRowContext(ctx, query, args...)
	}
	return t.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
}
