#!/usr/bin/env bash
# Checks mnemo's OpenAPI document the way its users' tools read it, so that
# a schema regression fails the build: Redocly's linter (recommended rules,
# all errors; scripts/openapi/redocly.yaml) must find no problem, and a
# TypeScript client typed by openapi-typescript's output
# (scripts/openapi/client.ts: a memory stored with nested metadata and no
# importance, a recall, a page of memories) must compile with tsc. The
# tools are pinned in scripts/openapi/package-lock.json and installed there
# with `npm ci` (from npm's cache when it holds them). The document is the
# one mnemo serves, printed by `mnemo openapi`. Needs Go, Node.js 20.19 or
# later and npm.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=scripts/openapi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go run ./cmd/mnemo openapi >"$tmp/openapi.json" # this checkout's, never a stale bin/mnemo
(cd "$dir" && npm ci --prefer-offline --no-audit --no-fund --loglevel=error)
bin="$dir/node_modules/.bin"
# Redocly's CLI reports usage and checks for updates unless told not to.
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true REDOCLY_SUPPRESS_NOTIFICATIONS=true
"$bin/redocly" lint --config "$dir/redocly.yaml" --format=stylish "$tmp/openapi.json"
mkdir -p "$dir/generated"
"$bin/openapi-typescript" "$tmp/openapi.json" --output "$dir/generated/mnemo.ts"
"$bin/tsc" --project "$dir/tsconfig.json"
echo "openapi-check: the document lints clean and the generated client compiles"
