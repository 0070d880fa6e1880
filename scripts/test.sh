#!/usr/bin/env bash
# The test command. Integration tests use DATABASE_URL if set, otherwise they
# start a throwaway PostgreSQL cluster from the local binaries (installed
# here if missing). Extra arguments go to cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-postgres.sh
cargo test "$@"
