#!/usr/bin/env bash
# The test command. Integration tests use DATABASE_URL if set, otherwise they
# start a throwaway PostgreSQL cluster from the local binaries (installed
# here if missing). The real peers some tests drive (MCP Python SDK,
# eventsource, Chromium) are installed by scripts/test-peers.sh, and those
# tests fail rather than skip when run from here. Extra arguments go to cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-postgres.sh
scripts/test-peers.sh
export COORDINATOR_REQUIRE_PEERS=1
cargo test "$@"
