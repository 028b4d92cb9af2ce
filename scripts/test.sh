#!/usr/bin/env bash
# Runs mnemo's whole test suite from a clean clone: installs what it needs
# first (Go modules, gcc, the built-in embedder's model, via setup.sh;
# PostgreSQL 15 and pgvector, via postgres.sh; Chromium for the
# inspector's browser tests, via chromium.sh), then
# vets and runs every test with the race detector on the cgo SQLite driver
# (-tags sqlite_fts5, what setup.sh builds) after checking the OpenAPI
# document with a linter and a generated client (openapi-check.sh), then the SQLite store and
# embedding cache again on the pure-Go driver (what a plain `go build`
# links), then the retrieval quality gates (too slow under -race) in a pass
# of their own, and last every fuzz target for a bounded time
# (scripts/fuzz.sh). The gates must run here, so a missing model fails
# instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
# PostgreSQL 15 with pgvector for the Postgres tests (internal/pgtest starts
# throw-away clusters); without it they skip, except under CI=true.
if ! ./scripts/postgres.sh; then
	[ "${CI:-}" = true ] && exit 1
	echo "test.sh: no PostgreSQL 15 with pgvector: the Postgres tests will skip" >&2
fi
# Debian's Chromium for the inspector's browser tests (server/ui); without
# it they skip, except under CI=true.
if ! ./scripts/chromium.sh; then
	[ "${CI:-}" = true ] && exit 1
	echo "test.sh: no chromium: the inspector's browser tests will skip" >&2
fi
export MNEMO_REQUIRE_MODEL=1
go vet -tags sqlite_fts5 ./...
go vet ./...
go vet -tags bench1m ./vector # the million-row benchmarks, built but not run here
./scripts/openapi-check.sh     # the OpenAPI document lints clean and a generated client compiles
go test -tags sqlite_fts5 -race -count=1 ./...
go test -count=1 ./internal/sqlitedb/... ./internal/ftstoken/... ./store/... ./dense/... ./embed/cache/...
go test -tags sqlite_fts5 -count=1 -run 'QualityGate' ./...
./scripts/fuzz.sh
