//go:build cgo && (sqlite_fts5 || fts5)

package sqlitedb

/*
// SQLite's own symbols, compiled into the binary by go-sqlite3.
extern int sqlite3_config(int, ...);
// 9 is SQLITE_CONFIG_MEMSTATUS.
static int mnemo_memstatus_off(void) { return sqlite3_config(9, 0); }
*/
import "C"

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"net/url"
	"sync"

	"github.com/mattn/go-sqlite3"
)

// memstatusOff turns off SQLite's memory statistics before the library
// initialises (sqlite3_config refuses afterwards). They are on by default
// and put a process-wide mutex around every allocation: two FTS5 queries
// on two connections ran slower together than one after the other (2.85
// against 2.6 ms; 2.24 ms with the statistics off). The setting is the C
// library's process state, hence the package-level Once.
var memstatusOff = sync.OnceFunc(func() { C.mnemo_memstatus_off() })

// Driver names the SQLite driver of this build.
const Driver = "github.com/mattn/go-sqlite3 (cgo)"

func open(uri string, o Options) (*sql.DB, error) {
	memstatusOff()
	if err := registerRank(); err != nil {
		return nil, err
	}
	pragmas := o.Pragmas
	drv := &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		for _, p := range pragmas {
			if _, err := c.Exec("PRAGMA "+p, nil); err != nil {
				return fmt.Errorf("PRAGMA %s: %w", p, err)
			}
		}
		return nil
	}}
	q := url.Values{}
	if o.Immediate {
		q.Set("_txlock", "immediate")
	}
	if o.ReadOnly {
		q.Set("mode", "ro")
	}
	dsn := uri
	if len(q) > 0 {
		dsn += "?" + q.Encode()
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

// Code returns the extended SQLite result code carried by err, if err (or
// an error it wraps) comes from the driver.
func Code(err error) (int, bool) {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return int(se.ExtendedCode), true
	}
	var sp *sqlite3.Error
	if errors.As(err, &sp) && sp != nil {
		return int(sp.ExtendedCode), true
	}
	return 0, false
}
