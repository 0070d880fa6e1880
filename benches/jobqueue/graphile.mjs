// The job-queue baseline of `coordinator bench` (issue 19): graphile-worker,
// in-process (library mode), no-op tasks, polling/LISTEN defaults, in a fresh
// database of the bench's own PostgreSQL. Prints ONE JSON line on stdout:
//
//   single: add → start of one job at a time on an idle worker (p50/p95);
//   chain:  `--chain` steps where each job adds the next: ms per step, from
//           the first step's start to the last step's end, over the steps
//           (the bench's own step overhead is measured the same way);
//   burst:  `--jobs` no-op jobs added in ONE call (`addJobs`), jobs/s from the
//           call to the moment the jobs table is empty (every completion
//           committed), and add → start p50/p95 over the burst.
//
// Usage: node graphile.mjs --url URL [--jobs N] [--chain K] [--single S] [--concurrency C]

import { performance } from "node:perf_hooks";
import { parseArgs } from "node:util";
import { Logger, makeWorkerUtils, run } from "graphile-worker";

const { values } = parseArgs({
  options: {
    url: { type: "string" },
    jobs: { type: "string", default: "1000" },
    chain: { type: "string", default: "20" },
    single: { type: "string", default: "200" },
    concurrency: { type: "string", default: "256" },
  },
});
if (!values.url) {
  console.error("graphile.mjs: --url is required");
  process.exit(2);
}
const jobs = Number(values.jobs);
const chainSteps = Number(values.chain);
const singles = Number(values.single);
const concurrency = Number(values.concurrency);

// Start times of running jobs by label; resolvers waiting for a label to start or end.
const started = new Map();
const ended = new Map();
const waiters = new Map();

function notify(key) {
  const w = waiters.get(key);
  if (w) {
    waiters.delete(key);
    w();
  }
}

// Register before causing the event: it may happen before the add returns.
function waitFor(key) {
  return new Promise((resolve) => waiters.set(key, resolve));
}

// Per-job INFO lines would cost more than the jobs: only warnings and errors, on stderr.
const logger = new Logger(() => (level, message) => {
  if (level === "error" || level === "warning") console.error(message);
});

const taskList = {
  // A no-op job: it only notes when it started and ended.
  noop: async (payload) => {
    started.set(payload.key, performance.now());
    notify(`start:${payload.key}`);
    ended.set(payload.key, performance.now());
    notify(`end:${payload.key}`);
  },
  // A chain step: adds the next step before it ends, like a parent releasing its child.
  step: async (payload, helpers) => {
    const key = `chain:${payload.step}`;
    started.set(key, performance.now());
    if (payload.step + 1 < chainSteps) {
      await helpers.addJob("step", { step: payload.step + 1 });
    }
    ended.set(key, performance.now());
    notify(`end:${key}`);
  },
};

function percentile(sorted, p) {
  if (sorted.length === 0) return null;
  const rank = Math.round((p / 100) * (sorted.length - 1));
  return sorted[Math.min(rank, sorted.length - 1)];
}

async function jobsLeft(utils) {
  return utils.withPgClient(async (client) => {
    const { rows } = await client.query("SELECT count(*)::int AS n FROM graphile_worker.jobs");
    return rows[0].n;
  });
}

async function main() {
  const utils = await makeWorkerUtils({ connectionString: values.url, logger });
  await utils.migrate();
  const runner = await run({
    connectionString: values.url,
    concurrency,
    noHandleSignals: true,
    taskList,
    logger,
  });
  try {
    // Chain: one step at a time, each added by the previous one.
    const chainDone = waitFor(`end:chain:${chainSteps - 1}`);
    await utils.addJob("step", { step: 0 });
    await chainDone;
    const chainMs =
      (ended.get(`chain:${chainSteps - 1}`) - started.get("chain:0")) / chainSteps;

    // Single jobs on an idle worker, one after the other.
    const single = [];
    for (let i = 0; i < singles; i++) {
      const key = `single:${i}`;
      const t0 = performance.now();
      const done = waitFor(`end:${key}`);
      await utils.addJob("noop", { key });
      await done;
      single.push(started.get(key) - t0);
    }
    single.sort((a, b) => a - b);

    // Burst: every job in one call, timed until the table is empty.
    const specs = [];
    for (let i = 0; i < jobs; i++) {
      specs.push({ identifier: "noop", payload: { key: `burst:${i}` } });
    }
    const t0 = performance.now();
    await utils.addJobs(specs);
    while ((await jobsLeft(utils)) > 0) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const secs = (performance.now() - t0) / 1000;
    const burst = [];
    for (let i = 0; i < jobs; i++) {
      const s = started.get(`burst:${i}`);
      if (s !== undefined) burst.push(s - t0);
    }
    burst.sort((a, b) => a - b);
    const out = {
      version: "0.18.0",
      concurrency,
      jobs,
      jobs_per_s: jobs / secs,
      burst_secs: secs,
      burst_add_to_start_p50_ms: percentile(burst, 50),
      burst_add_to_start_p95_ms: percentile(burst, 95),
      chain_steps: chainSteps,
      chain_step_ms: chainMs,
      single_jobs: singles,
      single_add_to_start_p50_ms: percentile(single, 50),
      single_add_to_start_p95_ms: percentile(single, 95),
    };
    console.log(JSON.stringify(out));
  } finally {
    await runner.stop();
    await utils.release();
  }
}

main().catch((e) => {
  console.error(`graphile.mjs: ${e?.stack ?? e}`);
  process.exit(1);
});
