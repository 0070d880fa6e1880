#!/usr/bin/env bash
# Installs the real peers the integration tests drive, into folders of the
# project's own (idempotent; fast when already there):
#   .venv-mcp/              the official MCP Python SDK (mcp 1.x)
#   .venv-spiff/            SpiffWorkflow, the BPMN engine the token semantics
#                           are tested against (crates/bpmn/tests/differential.rs)
#   tests/js/node_modules/  eventsource (WHATWG SSE client) and playwright-core
#   /usr/bin/chromium       Debian's Chromium, for the board page test
# Prints nothing on success; tests that need a peer say so when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! .venv-mcp/bin/python -c 'import mcp' 2>/dev/null; then
  python3 -m venv .venv-mcp
  .venv-mcp/bin/pip install -q 'mcp==1.30.0' >&2
fi
if ! .venv-spiff/bin/python -c 'import SpiffWorkflow' 2>/dev/null; then
  python3 -m venv .venv-spiff
  .venv-spiff/bin/pip install -q 'spiffworkflow==3.2.0' >&2
fi
if [ ! -d tests/js/node_modules/eventsource ] || [ ! -d tests/js/node_modules/playwright-core ]; then
  (cd tests/js && npm ci --no-audit --no-fund --loglevel=error) >&2
fi
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q chromium >&2 || { apt-get update -q >&2 && apt-get install -y -q chromium >&2; }
fi
