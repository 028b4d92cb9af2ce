#!/usr/bin/env bash
# Runs mnemo's whole test suite. Installs what it needs first (Go modules).
set -euo pipefail
cd "$(dirname "$0")/.."
go mod download
go vet ./...
go test -race -count=1 ./...
