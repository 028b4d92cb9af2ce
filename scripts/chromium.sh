#!/usr/bin/env bash
# Installs what the inspector's browser tests (server/ui) need, when
# missing: Debian's chromium package, headless, driven over CDP by
# chromedp. Idempotent: nothing is done when chromium is on PATH. Needs
# root and apt-get; without them it says so and fails, and the browser
# tests skip (except under CI=true, where they fail).
set -euo pipefail
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "chromium.sh: chromium is missing and this is not root with apt-get: install Debian's chromium package by hand" >&2
	exit 1
fi
echo "chromium.sh: installing Debian's chromium for the inspector's browser tests" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
