#!/usr/bin/env bash
# The demo: builds the coordinator and runs `coordinator demo` (embedded
# PostgreSQL, the service, simulated workers, one mission). Extra arguments go
# to the demo, e.g. --failure-rate 0.2 or --data-dir DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/ensure-postgres.sh
cargo run --quiet -- demo "$@"
