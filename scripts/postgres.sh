#!/usr/bin/env bash
# Installs what mnemo's PostgreSQL tests need, when missing: Debian's
# PostgreSQL 15 server and headers (postgresql-15, postgresql-server-dev-15,
# from the machine's own suites) and pgvector, built from Debian's pgvector
# source package (trixie's sources: bookworm has no pgvector package) with
# OPTFLAGS="" (no -march=native: the library runs on any amd64). Idempotent:
# nothing is done when vector.so is installed. Needs root and apt-get; the
# tests start their own throw-away clusters as the postgres user
# (internal/pgtest). The pinned source version is PGVECTOR_DEBIAN_VERSION.
set -euo pipefail
pgbin=/usr/lib/postgresql/15/bin
version="${PGVECTOR_DEBIAN_VERSION:-0.8.0-1}"
if [ -x "$pgbin/pg_config" ] && [ -f "$("$pgbin/pg_config" --pkglibdir)/vector.so" ]; then
	exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "postgres.sh: PostgreSQL 15 with pgvector is missing and this is not root with apt-get: install postgresql-15, postgresql-server-dev-15 and pgvector by hand" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# pg_config alone may come from postgresql-client-15, without the server
# or its headers.
headers() { [ -x "$pgbin/pg_config" ] && [ -f "$("$pgbin/pg_config" --includedir-server)/postgres.h" ]; }
if ! headers || [ ! -x "$pgbin/initdb" ] || ! command -v dpkg-source >/dev/null 2>&1 || ! command -v make >/dev/null 2>&1 || ! command -v gcc >/dev/null 2>&1; then
	echo "postgres.sh: installing PostgreSQL 15, its server headers and the build tools" >&2
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends postgresql-15 postgresql-server-dev-15 dpkg-dev make gcc libc6-dev >/dev/null
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# A private apt configuration holding only trixie's source index, so the
# machine's own sources and lists are left alone.
mkdir -p "$work/lists/partial" "$work/src"
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" >"$work/sources.list"
apt_opts=(-o "Dir::Etc::sourcelist=$work/sources.list" -o "Dir::Etc::sourceparts=-" -o "Dir::State::Lists=$work/lists" -o "APT::Sandbox::User=root")
echo "postgres.sh: building pgvector $version from Debian's source package" >&2
apt-get "${apt_opts[@]}" update -qq
(cd "$work/src" && apt-get "${apt_opts[@]}" source -qq --download-only "pgvector=$version" >/dev/null)
(cd "$work/src" && dpkg-source -q -x pgvector_*.dsc build >/dev/null)
make -s -C "$work/src/build" OPTFLAGS="" PG_CONFIG="$pgbin/pg_config" >/dev/null
make -s -C "$work/src/build" OPTFLAGS="" PG_CONFIG="$pgbin/pg_config" install >/dev/null
echo "postgres.sh: pgvector installed in $("$pgbin/pg_config" --pkglibdir)" >&2
