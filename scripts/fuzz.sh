#!/usr/bin/env bash
# Runs every fuzz target of the module for a bounded time each
# (MNEMO_FUZZTIME, default 10s; go test's -fuzztime syntax), on the cgo
# SQLite driver. Plain `go test` already runs each target's seed corpus;
# this explores beyond it. A failure leaves the crashing input under the
# package's testdata/fuzz/ to commit with its fix.
#
# Go before 1.27 can fail a target with a bare "context deadline exceeded"
# as -fuzztime ends (golang/go#75804, a race in the fuzzing coordinator on a
# loaded machine): no input is written, nothing reproduces. Such a run, and
# only such a run, is retried once; a second one fails like any other.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${MNEMO_FUZZTIME:-10s}"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r file; do
	pkg="./$(dirname "${file#./}")"
	for target in $(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$file"); do
		for try in 1 2; do
			echo "fuzz $pkg $target ($fuzztime)"
			if go test -tags sqlite_fts5 -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" >"$log" 2>&1; then
				break
			fi
			if [ "$try" = 1 ] && grep -q '^    context deadline exceeded$' "$log" && ! grep -q 'Failing input written' "$log"; then
				echo "fuzz $target: the coordinator's deadline race (golang/go#75804), no failing input: once more"
				continue
			fi
			cat "$log"
			exit 1
		done
	done
done
