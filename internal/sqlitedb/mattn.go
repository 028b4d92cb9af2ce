//go:build cgo && (sqlite_fts5 || fts5)

package sqlitedb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"

	"github.com/mattn/go-sqlite3"
)

// Driver names the SQLite driver of this build.
const Driver = "github.com/mattn/go-sqlite3 (cgo)"

func open(uri string, o Options) (*sql.DB, error) {
	pragmas := o.Pragmas
	drv := &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		for _, p := range pragmas {
			if _, err := c.Exec("PRAGMA "+p, nil); err != nil {
				return fmt.Errorf("PRAGMA %s: %w", p, err)
			}
		}
		return nil
	}}
	dsn := uri
	if o.Immediate {
		dsn += "?_txlock=immediate"
	}
	return sql.OpenDB(connector{dsn: dsn, drv: drv}), nil
}

// connector opens connections with drv without registering a driver name.
type connector struct {
	dsn string
	drv *sqlite3.SQLiteDriver
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return c.drv }
