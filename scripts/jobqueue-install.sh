#!/usr/bin/env bash
# Installs the job-queue baseline of `coordinator bench` (issue 19):
# graphile-worker, pinned by benches/jobqueue/package-lock.json, into
# benches/jobqueue/node_modules (gitignored). Idempotent: nothing is done when
# the installed tree already matches the lock file. Without node or npm it
# says so and exits 0: the bench then skips the baseline (it never fails for it).
#
#   scripts/jobqueue-install.sh
set -euo pipefail
cd "$(dirname "$0")/../benches/jobqueue"

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "jobqueue-install: no node/npm on PATH; coordinator bench will skip the job-queue baseline" >&2
  exit 0
fi
# npm writes the installed tree's lock next to the packages: equal to ours means up to date.
if [ -f node_modules/.package-lock.json ] && [ -f node_modules/graphile-worker/package.json ] &&
  node -e '
    const a = require("./package-lock.json").packages, b = require("./node_modules/.package-lock.json").packages;
    const v = (p) => Object.fromEntries(Object.entries(p).filter(([k]) => k).map(([k, x]) => [k, x.version]));
    process.exit(JSON.stringify(v(a)) === JSON.stringify(v(b)) ? 0 : 1);'; then
  echo "jobqueue-install: graphile-worker $(node -p 'require("./node_modules/graphile-worker/package.json").version') already installed in $(pwd)/node_modules" >&2
  exit 0
fi
echo "jobqueue-install: npm ci --no-audit --no-fund in $(pwd) (graphile-worker from the npm registry, pinned by package-lock.json)…" >&2
npm ci --no-audit --no-fund --loglevel=error
echo "jobqueue-install: installed graphile-worker $(node -p 'require("./node_modules/graphile-worker/package.json").version')" >&2
