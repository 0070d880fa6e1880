#!/usr/bin/env bash
# The whole performance suite in one command: builds the release binary once,
# runs the planning benchmark, the engine benchmark (throughput at 1, 2 and
# 3 replicas, dispatch latency, step overhead, idle ticks, memory at 1,000 live
# attempts, a 10-minute long run with its decay ratio, event streams; per
# throughput phase the statements, commits, WAL bytes and lock waiters per
# task; then the job-queue baseline, graphile-worker on the same server in
# the same run, installed by scripts/jobqueue-install.sh) and the
# agent tool-call benchmark (REST and MCP against GET /healthz), then
# rewrites docs/performance.md from the figures (`coordinator bench report`)
# with the machine's facts and this command. Raw outputs are kept in --out.
#
#   scripts/perf-suite.sh             # full suite, ~15–20 min on 2 cores
#   scripts/perf-suite.sh --quick     # 60 s long run, 100 missions, short budgets
#
# Options: --quick; --out DIR (raw outputs; default $CARGO_TARGET_DIR/perf-suite/<time>);
# --no-doc (do not rewrite docs/performance.md); --skip-planning (no planning
# benchmark); --skip-agent-tools (no agent tool-call benchmark);
# --skip-job-queue (no graphile-worker baseline, no npm);
# --note TEXT (conditions of the run, quoted in the page, e.g. other load);
# --database-url URL (a new database on that server, not a temporary PostgreSQL).
# Environment overrides: PERF_MISSIONS, PERF_LONG_SECS, PERF_REPLICAS, PERF_LIVE_ATTEMPTS.
set -euo pipefail
cd "$(dirname "$0")/.."

invocation="scripts/perf-suite.sh"
for a in "$@"; do invocation+=" $(printf '%q' "$a")"; done

quick=0 out_dir="" write_doc=1 note="" db_url="" planning=1 agent_tools=1 job_queue=auto
usage() { sed -n '2,/^set -/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --out) out_dir=${2:?--out needs a directory}; shift ;;
    --no-doc) write_doc=0 ;;
    --skip-planning) planning=0 ;;
    --skip-agent-tools) agent_tools=0 ;;
    --skip-job-queue) job_queue=off ;;
    --note) note=${2:?--note needs a text}; shift ;;
    --database-url) db_url=${2:?--database-url needs a URL}; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "perf-suite: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

target_dir=${CARGO_TARGET_DIR:-target}
out_dir=${out_dir:-$target_dir/perf-suite/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out_dir"

if [ "$quick" = 1 ]; then
  missions=${PERF_MISSIONS:-100} long_secs=${PERF_LONG_SECS:-60} idle_secs=1 planning_flags="-- --quick"
else
  missions=${PERF_MISSIONS:-200} long_secs=${PERF_LONG_SECS:-600} idle_secs=2 planning_flags=""
fi
replicas=${PERF_REPLICAS:-1,2,3}
live=${PERF_LIVE_ATTEMPTS:-1000}

# The bench's own temporary PostgreSQL unless a server is named explicitly: an
# inherited DATABASE_URL (e.g. the test server) must not change what is measured.
unset DATABASE_URL
[ -n "$db_url" ] && export DATABASE_URL="$db_url"
scripts/ensure-postgres.sh

bin="$target_dir/release/coordinator"
planning_cmd="cargo bench --bench planning $planning_flags"
agent_tools_cmd="cargo bench --bench agent_tools $planning_flags"
bench_args=(bench --missions "$missions" --replicas "$replicas" --long-secs "$long_secs"
  --live-attempts "$live" --idle-secs "$idle_secs" --job-queue "$job_queue" --json-out "$out_dir/bench.json")
bench_cmd="coordinator ${bench_args[*]/#$out_dir\//}"

commit=$(git rev-parse --short HEAD)
# The page this run rewrites does not make the tree dirty.
if [ -n "$(git status --porcelain --untracked-files=no -- . ':!docs/performance.md')" ]; then
  commit+=" (with uncommitted changes)"
fi
{
  echo "date=$(date -u '+%Y-%m-%d %H:%M')"
  echo "commit=$commit"
  echo "cpus=$(nproc)"
  echo "cpu_model=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || echo unknown)"
  echo "memory=$(awk '/^MemTotal:/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
  echo "kernel=$(uname -sr)"
  echo "rustc=$(rustc -V)"
  echo "load_before=$(cut -d' ' -f1-3 /proc/loadavg)"
  [ "$planning" = 1 ] && echo "planning_command=$planning_cmd"
  [ "$agent_tools" = 1 ] && echo "agent_tools_command=$agent_tools_cmd"
  echo "bench_command=$bench_cmd"
} >"$out_dir/machine.txt"

echo "perf-suite: building the release binary…" >&2
cargo build --release --quiet --bin coordinator

if [ "$planning" = 1 ]; then
  echo "perf-suite: planning benchmark…" >&2
  # shellcheck disable=SC2086 # planning_flags is empty or two words on purpose.
  cargo bench --quiet --bench planning $planning_flags | tee "$out_dir/planning.txt"
fi

if [ "$job_queue" = auto ]; then
  # The baseline the engine is compared with in the same run (skipped by the
  # bench, never failed, if this cannot install it).
  scripts/jobqueue-install.sh || echo "perf-suite: job-queue install failed; the bench will skip the baseline" >&2
fi

echo "perf-suite: engine benchmark (${long_secs} s long run)…" >&2
"$bin" "${bench_args[@]}" 2> >(tee "$out_dir/bench.log" >&2) | tee "$out_dir/bench.txt"

if [ "$agent_tools" = 1 ]; then
  echo "perf-suite: agent tool-call benchmark…" >&2
  # shellcheck disable=SC2086 # planning_flags is empty or two words on purpose.
  cargo bench --quiet --bench agent_tools $planning_flags | tee "$out_dir/agent_tools.txt"
fi

echo "load_after=$(cut -d' ' -f1-3 /proc/loadavg)" >>"$out_dir/machine.txt"

report_args=(bench report --command "$invocation" --from-machine "$out_dir/machine.txt"
  --from-bench "$out_dir/bench.json")
[ "$planning" = 1 ] && report_args+=(--from-planning "$out_dir/planning.txt")
[ "$agent_tools" = 1 ] && report_args+=(--from-agent-tools "$out_dir/agent_tools.txt")
[ "$quick" = 1 ] && report_args+=(--quick)
[ -n "$note" ] && report_args+=(--note "$note")
"$bin" "${report_args[@]}" >"$out_dir/performance.md"
if [ "$write_doc" = 1 ]; then
  cp "$out_dir/performance.md" docs/performance.md
  echo "perf-suite: wrote docs/performance.md (raw outputs in $out_dir)" >&2
else
  echo "perf-suite: page in $out_dir/performance.md" >&2
fi
