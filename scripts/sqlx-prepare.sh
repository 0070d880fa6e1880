#!/usr/bin/env bash
# Regenerates .sqlx/ (the offline query data that lets the crate build with no
# database) against a live database. Run it after changing any sqlx::query!.
# Uses DATABASE_URL if set, otherwise a throwaway cluster from scripts/pg.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${DATABASE_URL:-}" ]; then
  eval "$(scripts/pg.sh start)"
  trap 'scripts/pg.sh stop' EXIT
fi
# The macros check queries against the schema, so apply the migrations first.
cargo run --quiet -- migrate
rm -rf .sqlx && mkdir -p .sqlx
# Touch every crate root so the macros expand again and write their data.
touch src/lib.rs src/main.rs tests/it/main.rs
SQLX_OFFLINE=false SQLX_OFFLINE_DIR="$PWD/.sqlx" cargo check --all-targets --quiet
echo "wrote $(ls .sqlx | wc -l) query files to .sqlx/"
