//! The job-queue section of the page: graphile-worker measured in the same
//! run on the same server, side by side with the engine's figures, as the
//! ratios issue 19's goals are stated in.

use std::fmt::Write as _;

use super::{EngineFigures, num, x};

/// Writes the section, if the run measured the baseline.
pub fn render(w: &mut String, e: &EngineFigures) {
    let Some(q) = &e.job_queue else {
        return;
    };
    let _ = writeln!(
        w,
        "### Job-queue baseline (graphile-worker {}, same server, same run)\n",
        q.version
    );
    let _ = writeln!(
        w,
        "After the engine phases, `benches/jobqueue/graphile.mjs` runs graphile-worker in \
         library mode (no-op tasks, concurrency {} like the bench's agents × cap, polling \
         and LISTEN at their defaults) in a fresh database of the same PostgreSQL. Its \
         throughput is {} jobs added in one `addJobs` call until the jobs table is empty; \
         its chain adds each job from the previous one; its latencies are from the add \
         call to the job's start. Our single-task figure is one 3-task mission at a time \
         on an idle 1-replica system, from sending `POST /approve` to the first task's \
         request at the worker. Ratios are ours ÷ theirs.\n",
        q.concurrency,
        num(q.jobs as f64, 0)
    );
    let _ = writeln!(
        w,
        "| figure | this service | graphile-worker | ratio | goal |\n| --- | ---: | ---: | ---: | --- |"
    );
    let tps = e.throughput.first().map_or(f64::NAN, |t| t.tasks_per_s);
    let _ = writeln!(
        w,
        "| end-to-end throughput (1 replica), tasks or jobs/s | {} | {} | {} | ≥ 1.00× |",
        num(tps, 0),
        num(q.jobs_per_s, 0),
        x(tps / q.jobs_per_s)
    );
    let step = e.chain.step_overhead_ms;
    let _ = writeln!(
        w,
        "| {}-step chain, ms per step | {} | {} | {} | ≤ 1.00× |",
        q.chain_steps,
        num(step, 2),
        num(q.chain_step_ms, 2),
        x(step / q.chain_step_ms)
    );
    let p95 = e.dispatch.p95_ms;
    let _ = writeln!(
        w,
        "| burst p95, ms (ours: parent commit → child at worker; theirs: add → start) | {} | {} | {} | bounded by ready ÷ dispatch rate |",
        num(p95, 2),
        num(q.burst_add_to_start_p95_ms, 2),
        x(p95 / q.burst_add_to_start_p95_ms)
    );
    if let Some(s) = &e.single {
        let _ = writeln!(
            w,
            "| single task on an idle system, p95 ms (ours: approve sent → at worker; theirs: add → start) | {} | {} | {} | ≤ 1.00× |",
            num(s.p95_ms, 2),
            num(q.single_add_to_start_p95_ms, 2),
            x(s.p95_ms / q.single_add_to_start_p95_ms)
        );
        let _ = writeln!(
            w,
            "| the same, p50 ms | {} | {} | {} | |",
            num(s.p50_ms, 2),
            num(q.single_add_to_start_p50_ms, 2),
            x(s.p50_ms / q.single_add_to_start_p50_ms)
        );
    }
    let _ = writeln!(w);
}
