#!/usr/bin/env bash
# Runs every fuzz target of the module for a bounded time each
# (MNEMO_FUZZTIME, default 10s; go test's -fuzztime syntax), on the cgo
# SQLite driver. Plain `go test` already runs each target's seed corpus;
# this explores beyond it. A failure leaves the crashing input under the
# package's testdata/fuzz/ to commit with its fix.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${MNEMO_FUZZTIME:-10s}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r file; do
	pkg="./$(dirname "${file#./}")"
	for target in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file"); do
		echo "fuzz $pkg $target ($fuzztime)"
		go test -tags sqlite_fts5 -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" >"$log" 2>&1 || {
			cat "$log"
			exit 1
		}
	done
done
