//go:build !(cgo && (sqlite_fts5 || fts5))

package sqlitedb

import (
	"database/sql"
	"errors"
	"net/url"
	"strings"

	"modernc.org/sqlite" // registers the "sqlite" driver
)

// Driver names the SQLite driver of this build.
const Driver = "modernc.org/sqlite (pure Go)"

// RankFunction is empty: this build has no ranking function of its own, so
// FTS5's bm25() ranks.
const RankFunction = ""

func open(uri string, o Options) (*sql.DB, error) {
	q := url.Values{}
	for _, p := range o.Pragmas {
		name, value, _ := strings.Cut(p, "=")
		q.Add("_pragma", name+"("+value+")")
	}
	if o.Immediate {
		q.Set("_txlock", "immediate")
	}
	if o.ReadOnly {
		q.Set("mode", "ro")
	}
	return sql.Open("sqlite", uri+"?"+q.Encode())
}

// Code returns the extended SQLite result code carried by err, if err (or
// an error it wraps) comes from the driver.
func Code(err error) (int, bool) {
	var se *sqlite.Error
	if errors.As(err, &se) && se != nil {
		return se.Code(), true
	}
	return 0, false
}
