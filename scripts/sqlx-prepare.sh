#!/usr/bin/env bash
# Regenerates .sqlx/ (the offline query data that lets the crate build with no
# database). Run it after changing any sqlx::query! macro, with DATABASE_URL
# pointing at a PostgreSQL server where you may create databases. It creates
# a scratch database, applies migrations/ with psql, lets the macros check
# every query against it and write .sqlx/, then drops it.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DATABASE_URL:?set DATABASE_URL to a PostgreSQL server URL, e.g. postgres://user@127.0.0.1/postgres}"
db="coordinator_prepare_$$"
url=$(python3 -c 'import sys, urllib.parse as u; p = u.urlparse(sys.argv[1]); print(p._replace(path="/" + sys.argv[2]).geturl())' "$DATABASE_URL" "$db")
psql "$DATABASE_URL" -qc "CREATE DATABASE $db"
trap 'psql "$DATABASE_URL" -qc "DROP DATABASE IF EXISTS $db"' EXIT
for f in migrations/*.sql; do
  psql "$url" -q -v ON_ERROR_STOP=1 -f "$f" >/dev/null
done
rm -rf .sqlx && mkdir -p .sqlx
# Touch the crate roots so every macro expands again and writes its data.
touch src/lib.rs src/main.rs crates/*/src/lib.rs tests/it/main.rs
DATABASE_URL="$url" SQLX_OFFLINE=false SQLX_OFFLINE_DIR="$PWD/.sqlx" cargo check --workspace --all-targets --quiet
echo "wrote $(ls .sqlx | wc -l) query files to .sqlx/"
