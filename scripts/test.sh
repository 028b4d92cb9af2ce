#!/usr/bin/env bash
# Runs mnemo's whole test suite from a clean clone: installs what it needs
# first (Go modules and the built-in embedder's model, via setup.sh), then
# vets and runs every test with the race detector, then the retrieval
# quality gates (too slow under -race) in a pass of their own. The gates
# must run here, so a missing model fails instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
export MNEMO_REQUIRE_MODEL=1
go vet ./...
go test -race -count=1 ./...
go test -count=1 -run 'QualityGate' ./...
