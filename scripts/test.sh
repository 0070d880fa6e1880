#!/usr/bin/env bash
# The test command. Integration tests use DATABASE_URL if set, otherwise they
# start a throwaway PostgreSQL cluster from the local binaries (installed
# here if missing). The real peers some tests drive (MCP Python SDK,
# eventsource, Chromium) are installed by scripts/test-peers.sh, and those
# tests fail rather than skip when run from here.
#
# The real-model tests run against llama.cpp with SmolLM2-135M, started here
# by scripts/llama-server.sh (the first run builds llama.cpp: about 5 minutes
# on 2 cores). To use another OpenAI-compatible server instead, set
# COORDINATOR_TEST_LLM_URL (its /v1 root), COORDINATOR_TEST_LLM_MODEL and,
# if it needs one, COORDINATOR_TEST_LLM_API_KEY. If the server cannot serve,
# this stops before any test runs and says why.
#
# Extra arguments go to cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."
# A full disk fails every test after it with errors that do not say so
# (PostgreSQL cannot write): warn first. A build and a run need ~12 GB.
free_kib=$(df -Pk . | awk 'NR == 2 { print $4 }')
if [ "${free_kib:-0}" -lt $((12 * 1024 * 1024)) ]; then
  echo "WARNING: only $((free_kib / 1024 / 1024)) GiB free here; the build and the test databases need about 12 GiB" >&2
fi
scripts/ensure-postgres.sh
scripts/test-peers.sh
if [ -z "${COORDINATOR_TEST_LLM_URL:-}" ]; then
  echo "== real LLM server for the real-model tests (llama.cpp + SmolLM2-135M)" >&2
  port="${COORDINATOR_TEST_LLM_PORT:-8765}"
  if ! url=$(scripts/llama-server.sh "$port"); then
    echo "FAILED: the llama.cpp server for the real-model tests cannot serve (see above)" >&2
    exit 1
  fi
  pid=$(cat .venv-llm/server.pid)
  trap 'kill "$pid" 2>/dev/null || true' EXIT
  export COORDINATOR_TEST_LLM_URL="$url" COORDINATOR_TEST_LLM_PID="$pid"
  export COORDINATOR_TEST_LLM_LOG="$PWD/.venv-llm/server.log"
  echo "llama.cpp server at $url (pid $pid)" >&2
else
  echo "== real-model tests against $COORDINATOR_TEST_LLM_URL" >&2
fi
export COORDINATOR_REQUIRE_PEERS=1
cargo test --workspace "$@"
