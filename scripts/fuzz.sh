#!/usr/bin/env bash
# Fuzzes the HTTP API with schemathesis against the OpenAPI document the
# service serves, with an admin token (see docs/fuzzing.md). Long; not run in CI.
#
#   scripts/fuzz.sh [--quick] [--max-examples N] [--seed N] [--max-time SECS] [--checks LIST|all] [--include-path PATH]
#   COORDINATOR_BIN=path/to/coordinator scripts/fuzz.sh   # skip the build
#
# Installs schemathesis into .venv-fuzz on first use, builds the binary, starts
# a private PostgreSQL (or, with DATABASE_URL set, creates a fresh database on
# that server), a simulated worker and `coordinator serve`, seeds agents and
# missions so list and lookup routes have rows to return, runs schemathesis
# with the checks below in three passes (the seeded workspace's admin, one
# of its agents, and the admin of another workspace, whose reads of the
# seeded workspace fail the run), then audits the database. The last line is
#   operations=… requests=… failures=… server_errors=… schema_violations=… audit=ok|failed|skipped
# and the exit status is non-zero on any failure. Everything lives in a
# temporary directory (kept, and printed, when something failed).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
max_examples=""
seed=""
max_time=""
include_path=""
checks=not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,unsupported_method
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --max-examples) max_examples="$2"; shift ;;
    --seed) seed="$2"; shift ;;
    --max-time) max_time="$2"; shift ;;
    --checks) checks="$2"; shift ;;
    --include-path) include_path="$2"; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "unknown argument: $1" >&2; exit 2 ;;
  esac
  shift
done
# Bounded either way: examples per operation, quick mode far fewer.
if [ -z "$max_examples" ]; then
  if [ "$quick" = 1 ]; then max_examples=5; else max_examples=30; fi
fi

venv=.venv-fuzz
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/schemathesis" --version 2>/dev/null | grep -q '4\.32\.5'; then
  "$venv/bin/pip" install -q 'schemathesis==4.32.5' >&2
fi

# COORDINATOR_BIN fuzzes a binary built elsewhere (e.g. a release build) as is.
bin="${COORDINATOR_BIN:-}"
if [ -z "$bin" ]; then
  cargo build -q >&2
  bin="${CARGO_TARGET_DIR:-target}/debug/coordinator"
fi

work=$(mktemp -d /tmp/coordinator-fuzz.XXXXXX)
# As root the private PostgreSQL runs as another user, which must reach its data dir.
chmod 755 "$work"
free_port() { "$venv/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port=$(free_port)
worker_port=$(free_port)
token="fuzz-admin-$(od -An -N12 -tx1 /dev/urandom | tr -d ' \n')"
base="http://127.0.0.1:$port"

# No rate limit: the run exercises the handlers, not the limiter (a 429 is
# documented on every /v1 route and tested in tests/it/security.rs).
# Loopback webhooks are refused by default; the seeded one points at 127.0.0.1.
serve_args=(serve --listen "127.0.0.1:$port" --bootstrap-token "$token" --rate-limit-per-sec 0 --webhook-networks 127.0.0.0/8)
db=""
if [ -n "${DATABASE_URL:-}" ]; then
  db="fuzz_$(date +%s)_$$"
  psql "$DATABASE_URL" -q -v ON_ERROR_STOP=1 -c "CREATE DATABASE $db" >&2
  db_url=$("$venv/bin/python" -c 'import sys, urllib.parse as u; p = u.urlparse(sys.argv[1]); print(p._replace(path="/" + sys.argv[2]).geturl())' "$DATABASE_URL" "$db")
  serve_args+=(--database-url "$db_url")
else
  db_url=""
  serve_args+=(--data-dir "$work/data")
fi

pids=()
ok=0
cleanup() {
  # Stop the service first (it stops the private PostgreSQL it started), then the worker.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -TERM "${pids[$i]}" 2>/dev/null || true
    wait "${pids[$i]}" 2>/dev/null || true
  done
  if [ "$ok" = 1 ]; then
    rm -rf "$work"
    if [ -n "${db:-}" ]; then psql "$DATABASE_URL" -q -c "DROP DATABASE IF EXISTS $db" >&2 || true; fi
  else
    echo "fuzz: logs and reports kept in $work${db:+, database $db kept}" >&2
  fi
}
trap cleanup EXIT

"$bin" worker --simulate --listen "127.0.0.1:$worker_port" --latency-ms 50 >"$work/worker.log" 2>&1 &
pids+=($!)
# Unset so the service uses only the flags above (never the caller's database by accident).
env -u DATABASE_URL "$bin" "${serve_args[@]}" >"$work/serve.log" 2>&1 &
pids+=($!)

ready=0
for _ in $(seq 1 240); do
  if curl -sf "$base/readyz" >/dev/null 2>&1; then ready=1; break; fi
  sleep 0.5
done
[ "$ready" = 1 ] || { echo "fuzz: the service did not become ready; see $work/serve.log" >&2; tail -n 20 "$work/serve.log" >&2; exit 1; }
if [ -z "$db_url" ]; then
  # The private server's address, as `coordinator serve` wrote it down.
  db_url=$("$venv/bin/python" -c 'import json,sys; s=json.load(open(sys.argv[1])); print("postgres://coordinator:%s@127.0.0.1:%d/coordinator" % (s["password"], s["port"]))' "$work/data/postgres.json")
fi

api() { # METHOD PATH [JSON] — prints the body, fails on a non-2xx status
  curl -sf -X "$1" "$base$2" -H "Authorization: Bearer $token" -H 'content-type: application/json' ${3:+-d "$3"}
}
for a in "planner planning,analysis" "researcher research,analysis" "writer writing,planning" \
         "engineer coding,testing" "reviewer review,testing,analysis"; do
  set -- $a
  api POST /v1/agents "{\"agent_id\":\"$1\",\"role\":\"$1\",\"skills\":[\"${2//,/\",\"}\"],\"tools\":[],\"endpoint_url\":\"http://127.0.0.1:$worker_port\",\"max_concurrency\":2}" >/dev/null
done
# A string only the seeded workspace holds: the intruder pass must never read it.
canary="cnry$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
canary_agent="$canary-agent"
api POST /v1/agents "{\"agent_id\":\"$canary_agent\",\"role\":\"$canary\",\"skills\":[\"$canary\"],\"tools\":[],\"endpoint_url\":\"http://127.0.0.1:$worker_port\",\"max_concurrency\":1}" >/dev/null
# One mission left waiting for approval, one run to completion by the worker, one cancelled.
approve_id=$(api POST /v1/missions "{\"goal\":\"Research the state of solid-state batteries ($canary) and write a report\",\"autonomy\":\"approve\",\"budget\":5}" \
  | "$venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["id"])')
api POST /v1/missions '{"goal":"Compare Postgres, MySQL and SQLite for our embedded use case","autonomy":"autonomous","budget":5}' >/dev/null
cancel_id=$(api POST /v1/missions '{"goal":"Write a short market analysis of e-bikes","autonomy":"approve","budget":5}' \
  | "$venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["id"])')
api POST "/v1/missions/$cancel_id/cancel" '{}' >/dev/null
api POST /v1/webhooks '{"url":"http://127.0.0.1:9/hook","events":["task.*"],"secret":"fuzz-secret-0123456789"}' >/dev/null
api POST /v1/tokens '{"role":"viewer","name":"fuzz-viewer"}' >/dev/null || true

# Three passes over the whole document: the admin of the seeded workspace;
# an agent of it (a restricted role: what it may not do is a 403); and the
# admin of a second workspace, whose path ids are sometimes the seeded
# workspace's, with the check `no_cross_workspace_read` (scripts/fuzz_hooks.py)
# failing any answer that carries the seeded workspace's canary.
agent_token=$(api POST /v1/tokens '{"role":"agent","agent_id":"writer","name":"fuzz-agent"}' \
  | "$venv/bin/python" -c 'import json,sys; print(json.load(sys.stdin)["token"])')
intruder_token=$(env -u DATABASE_URL "$bin" token bootstrap --workspace "fuzz-intruder" --role admin \
  --name fuzz-intruder --database-url "$db_url" 2>/dev/null | tail -n 1)
[ -n "$agent_token" ] && [ -n "$intruder_token" ] || { echo "fuzz: could not make the pass tokens" >&2; exit 1; }

operations=0 requests=0 failures=0 server_errors=0 schema_violations=0 st_status=0
run_pass() { # NAME TOKEN EXAMPLES [ENV=VALUE...]
  local name=$1 pass_token=$2 examples=$3; shift 3
  local st_args=(run "$base/openapi.json"
    -H "Authorization: Bearer $pass_token"
    --checks "$checks"
    --max-examples "$examples"
    --workers 2
    --request-timeout 30
    --generation-database none
    --suppress-health-check all
    --no-color
    --report junit,ndjson --report-dir "$work/report-$name"
  )
  [ -n "$seed" ] && st_args+=(--seed "$seed")
  [ -n "$max_time" ] && st_args+=(--max-time "$max_time")
  [ "$quick" = 1 ] && st_args+=(--phases examples,coverage,fuzzing)
  [ -n "$include_path" ] && st_args+=(--include-path "$include_path")
  echo "fuzz: pass $name: schemathesis ${st_args[*]//$pass_token/***}" >&2
  local status=0
  env PYTHONPATH=scripts SCHEMATHESIS_HOOKS=fuzz_hooks "$@" \
    "$venv/bin/schemathesis" --config-file scripts/schemathesis.toml "${st_args[@]}" \
    | tee "$work/schemathesis-$name.log" >&2 || status=$?
  [ "$status" = 0 ] || st_status=$status
  # Figures from the pass's summary: operations tested, test cases sent, and
  # the unique failures by schemathesis code (ST101/ST102 server errors,
  # ST108-ST111 responses that break their schema).
  local o r f se sv
  read -r o r f se sv < <(
    "$venv/bin/python" - "$work/schemathesis-$name.log" <<'PY'
import re, sys
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
def num(pattern):
    m = re.search(pattern, text, re.M)
    return int(m.group(1)) if m else 0
by_code = {c: int(n) for c, n in re.findall(r"^\s*\S*\s*(ST\d{3})\b[^:\n]*:\s*(\d+)\s*$", text, re.M)}
server = sum(by_code.get(c, 0) for c in ("ST101", "ST102"))
schema = sum(by_code.get(c, 0) for c in ("ST108", "ST109", "ST110", "ST111"))
total = max(sum(by_code.values()), num(r"^=+ (\d+) failures?\b"))
print(num(r"^\s*Tested:\s*(\d+)"), num(r"^\s*(\d+) generated"), total, server, schema)
PY
  )
  echo "fuzz: pass $name: operations=$o requests=$r failures=$f server_errors=$se schema_violations=$sv" >&2
  operations=$((o > operations ? o : operations))
  requests=$((requests + r)) failures=$((failures + f))
  server_errors=$((server_errors + se)) schema_violations=$((schema_violations + sv))
}
restricted_examples=$(( (max_examples + 1) / 2 ))
run_pass admin "$token" "$max_examples"
run_pass agent "$agent_token" "$restricted_examples"
run_pass intruder "$intruder_token" "$restricted_examples" \
  FUZZ_CANARY="$canary" FUZZ_FOREIGN_IDS="id=$cancel_id,id=$approve_id,agent_id=$canary_agent"

# Our own sweep, independent of schemathesis' sampling: every documented path
# answers each method it does not document with 405 and a JSON error (never 501).
method_failures=$("$venv/bin/python" - "$base" "$token" <<'PY'
import json, re, sys, urllib.error, urllib.request
base, token = sys.argv[1], sys.argv[2]
doc = json.load(urllib.request.urlopen(base + "/openapi.json"))
methods = ["GET", "POST", "PUT", "PATCH", "DELETE"]
sent = bad = 0
for path, item in doc["paths"].items():
    url = base + re.sub(r"\{[^}]+\}", "00000000-0000-4000-8000-000000000000", path)
    for m in methods:
        if m.lower() in item:
            continue
        req = urllib.request.Request(url, method=m, data=b"{}" if m != "GET" else None,
                                     headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
        try:
            status, body = urllib.request.urlopen(req).status, b""
        except urllib.error.HTTPError as e:
            status, body = e.code, e.read()
        sent += 1
        try:
            code = json.loads(body)["error"]["code"]
        except Exception:
            code = None
        if status != 405 or code != "method_not_allowed":
            bad += 1
            print(f"fuzz: {m} {path} answered {status} ({code}), expected 405", file=sys.stderr)
print(f"fuzz: {sent} undocumented methods sent, {bad} not answered 405", file=sys.stderr)
print(bad)
PY
)
failures=$((failures + method_failures))

audit=skipped
if "$bin" audit --help >/dev/null 2>&1; then
  if "$bin" audit --database-url "$db_url" >&2; then audit=ok; else audit=failed; fi
else
  echo "fuzz: warning: this build has no \`coordinator audit\`; the database was not audited" >&2
fi

status=0
if [ "$st_status" != 0 ] || [ "$failures" != 0 ] || [ "$audit" = failed ]; then status=1; else ok=1; fi
echo "operations=$operations requests=$requests failures=$failures server_errors=$server_errors schema_violations=$schema_violations audit=$audit"
exit "$status"
