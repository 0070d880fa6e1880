#!/usr/bin/env bash
# Regenerates .sqlx/ (the offline query data that lets the crate build with no
# database). Run it after changing any sqlx::query! macro, with DATABASE_URL
# pointing at a scratch database (the migrations are applied to it first).
set -euo pipefail
cd "$(dirname "$0")/.."
: "${DATABASE_URL:?set DATABASE_URL to a scratch database, e.g. postgres://user@127.0.0.1/coordinator_dev}"
cargo run --quiet -- migrate
rm -rf .sqlx && mkdir -p .sqlx
# Touch the crate roots so every macro expands again and writes its data.
touch src/lib.rs src/main.rs tests/it/main.rs
SQLX_OFFLINE=false SQLX_OFFLINE_DIR="$PWD/.sqlx" cargo check --all-targets --quiet
echo "wrote $(ls .sqlx | wc -l) query files to .sqlx/"
