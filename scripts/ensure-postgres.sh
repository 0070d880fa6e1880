#!/usr/bin/env bash
# Makes sure PostgreSQL server binaries (initdb, postgres) are on this machine,
# unless DATABASE_URL points at a server already. Installs Debian's
# postgresql package when run as root; otherwise says what to do.
set -euo pipefail
[ -n "${DATABASE_URL:-}" ] && exit 0
if command -v initdb >/dev/null 2>&1 && command -v postgres >/dev/null 2>&1; then exit 0; fi
if compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "PostgreSQL server binaries not found: installing Debian's postgresql package" >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
else
  echo "PostgreSQL server binaries not found. Install PostgreSQL (e.g. 'sudo apt-get install postgresql') or set DATABASE_URL." >&2
  exit 1
fi
