//! The report of `coordinator bench`: the readable lines, the last line of
//! `key=value` figures, and the JSON figures of `--json-out`. Each section
//! prints its lines and appends its figures to the last line, in the order
//! the report has always had (scripts parse the last line).

use std::{path::Path, time::Instant};

use anyhow::Context;

use super::{
    BenchArgs, Measured, idle::IdleReport, loadavg, long::LongReport, memory::MemoryReport, report,
    streams::StreamReport,
};

/// Prints the report and returns its last line (already printed).
pub(crate) fn print(args: &BenchArgs, m: &Measured) -> String {
    let mut line = print_engine(args, m);
    if let Some(st) = &m.streams {
        print_streams(st, &mut line);
    }
    if let Some(idle) = &m.idle {
        print_idle(idle, m.baseline.total_ms, &mut line);
    }
    if let Some(memory) = &m.memory {
        print_memory(memory, &mut line);
    }
    if let Some(long) = &m.long {
        print_long(long, &mut line);
    }
    print_job_queue(m, &mut line);
    if let Some(w) = &m.workflows {
        super::workflows::print(w, m.baseline.total_ms, &mut line);
    }
    let last_line = line.join(" ");
    println!("{last_line}");
    last_line
}

/// The header, baseline, throughput, replica scaling, dispatch and chain
/// lines; returns the last line's figures so far.
fn print_engine(args: &BenchArgs, m: &Measured) -> Vec<String> {
    let baseline_ms = m.baseline.total_ms;
    let (commit_ms, http_ms) = (m.baseline.commit_ms, m.baseline.http_ms);
    let d = &m.dispatch;
    let (p50, p95, p99) = (d.p50_ms, d.p95_ms, d.p99_ms);
    let step_overhead_ms = m.chain.step_overhead_ms;
    println!(
        "coordinator bench: {} missions × {} tasks per phase, {} agents × cap {}, instant workers",
        args.missions, args.tasks, args.agents, args.agent_cap
    );
    println!(
        "baseline: commit {commit_ms:.3} ms + worker HTTP round trip {http_ms:.3} ms = {baseline_ms:.3} ms"
    );
    for t in &m.throughput {
        let (r, tps, secs) = (t.replicas, t.tasks_per_s, t.secs);
        println!(
            "throughput, {r} replica(s): {tps:.0} tasks/s ({secs:.2} s){}",
            cost_text(t)
        );
    }
    print_top_statements(&m.throughput);
    let scaling = report::replica_scaling(&m.throughput);
    let reference = scaling.first().map_or(1, |s| s.reference);
    for s in scaling.iter().filter(|s| s.replicas != reference) {
        println!(
            "replica scaling, {} replicas: {:.2}× the throughput of {reference} ({:.2} per-replica efficiency)",
            s.replicas, s.speedup, s.efficiency
        );
    }
    println!(
        "dispatch latency (parent commit → child at worker), {} edges: p50 {p50:.2} ms ({:.1}× baseline), p95 {p95:.2} ms, p99 {p99:.2} ms",
        d.edges,
        p50 / baseline_ms
    );
    println!(
        "{}-step sequential mission: {step_overhead_ms:.2} ms per step ({:.1}× baseline); chain dispatch p50 {:.2} ms",
        args.chain,
        step_overhead_ms / baseline_ms,
        m.chain.dispatch_p50_ms
    );
    let mut line = vec![format!(
        "tasks_per_s={:.0}",
        m.throughput.first().map_or(f64::NAN, |t| t.tasks_per_s)
    )];
    for t in &m.throughput {
        line.push(format!("tasks_per_s_{}r={:.0}", t.replicas, t.tasks_per_s));
        if let (Some(x), Some(w)) = (t.write_txns_per_task, t.wal_bytes_per_task) {
            line.push(format!("write_txns_per_task_{}r={x:.1}", t.replicas));
            line.push(format!("wal_bytes_per_task_{}r={w:.0}", t.replicas));
        }
        let r = t.replicas;
        if let Some(v) = t.stmts_per_task {
            line.push(format!("stmts_per_task_{r}r={v:.1}"));
        }
        if let Some(v) = t.commits_per_task {
            line.push(format!("commits_per_task_{r}r={v:.1}"));
        }
        if let (Some(v), Some(share)) = (t.lock_waiters_mean, t.lock_wait_share) {
            line.push(format!("lock_waiters_{r}r={v:.2}"));
            line.push(format!("lock_wait_share_{r}r={share:.2}"));
        }
        if let Some(v) = t.bench_cpu_ms_per_task {
            line.push(format!("cpu_ms_per_task_{r}r={v:.3}"));
        }
        if let Some(v) = t.db_cpu_ms_per_task {
            line.push(format!("db_cpu_ms_per_task_{r}r={v:.3}"));
        }
    }
    for s in scaling.iter().filter(|s| s.replicas != reference) {
        line.push(format!(
            "tasks_per_s_{}r_x_{reference}r={:.2}",
            s.replicas, s.speedup
        ));
        line.push(format!(
            "replica_efficiency_{}r={:.2}",
            s.replicas, s.efficiency
        ));
    }
    line.extend([
        format!("dispatch_p50_ms={p50:.2}"),
        format!("dispatch_p95_ms={p95:.2}"),
        format!("dispatch_p99_ms={p99:.2}"),
        format!("step_overhead_ms={step_overhead_ms:.2}"),
        format!("baseline_ms={baseline_ms:.3}"),
        format!("dispatch_p50_x_baseline={:.1}", p50 / baseline_ms),
        format!(
            "step_overhead_x_baseline={:.1}",
            step_overhead_ms / baseline_ms
        ),
    ]);
    line
}

/// A throughput phase's cost per task in the database, for its line.
fn cost_text(t: &report::Throughput) -> String {
    let mut parts = Vec::new();
    if let Some(v) = t.stmts_per_task {
        parts.push(format!("{v:.1} statements"));
    }
    if let Some(v) = t.commits_per_task {
        parts.push(format!("{v:.1} commits"));
    }
    if let (Some(x), Some(w)) = (t.write_txns_per_task, t.wal_bytes_per_task) {
        parts.push(format!("{x:.1} writing transactions, {w:.0} WAL bytes"));
    }
    let mut text = if parts.is_empty() {
        String::new()
    } else {
        format!("; per task {}", parts.join(", "))
    };
    if let (Some(mean), Some(share)) = (t.lock_waiters_mean, t.lock_wait_share) {
        text.push_str(&format!(
            "; lock waiters, mean of samples {mean:.2} ({:.0} % of samples with one)",
            share * 100.0
        ));
    }
    if let Some(cpu) = t.bench_cpu_ms_per_task {
        text.push_str(&format!("; CPU per task {cpu:.3} ms in this process"));
        if let Some(db) = t.db_cpu_ms_per_task {
            text.push_str(&format!(", {db:.3} ms in the database"));
        }
    }
    text
}

/// The 1-replica phase's top statements (or the first phase's), by total time.
fn print_top_statements(points: &[report::Throughput]) {
    let Some(t) = report::top_statements_phase(points) else {
        return;
    };
    println!(
        "top statements by total time, {} replica(s) (calls per task, mean ms, share of time):",
        t.replicas
    );
    for s in &t.top_statements {
        println!(
            "  {:>6.2} {:>8.3} ms {:>5.1} %  {}",
            s.calls_per_task,
            s.mean_ms,
            s.time_share * 100.0,
            s.query
        );
    }
}

/// The event-log line.
fn print_streams(st: &StreamReport, line: &mut Vec<String>) {
    println!(
        "event log, {} events: JSON pages {:.0} events/s (the stream baseline); one SSE stream {:.0} events/s ({:.2}× pages); {} streams at once {:.0} events/s in all ({:.2}× pages); a new event reached {} waiting streams in p50 {:.1} ms, max {:.1} ms from sending the request that wrote it ({:.1} ms for its own answer)",
        st.events,
        st.json_eps,
        st.sse_one_eps,
        st.sse_one_eps / st.json_eps,
        st.clients,
        st.sse_many_eps,
        st.sse_many_eps / st.json_eps,
        st.clients,
        st.fanout_ms.0,
        st.fanout_ms.1,
        st.request_ms
    );
    line.extend([
        format!("stream_one_x_pages={:.2}", st.sse_one_eps / st.json_eps),
        format!("stream_many_x_pages={:.2}", st.sse_many_eps / st.json_eps),
        format!("stream_fanout_p50_ms={:.1}", st.fanout_ms.0),
    ]);
}

/// The idle-tick lines and the paused-queue claim.
fn print_idle(idle: &IdleReport, baseline_ms: f64, line: &mut Vec<String>) {
    let first = idle.levels.first().map_or(f64::NAN, |l| l.tick_us);
    for l in &idle.levels {
        println!(
            "idle tick, {} idle missions: {:.0} µs (claim {:.0}, leases {:.0}, sweep {:.0}; {:.2}× the {}-mission tick, {:.2}× baseline)",
            l.missions,
            l.tick_us,
            l.claim_us,
            l.lease_us,
            l.sweep_us,
            l.tick_us / first,
            idle.levels[0].missions,
            l.tick_us / 1000.0 / baseline_ms
        );
        line.push(format!("idle_tick_us_{}={:.0}", l.missions, l.tick_us));
    }
    for l in &idle.levels {
        line.push(format!("idle_sweep_us_{}={:.0}", l.missions, l.sweep_us));
    }
    for l in &idle.levels {
        line.push(format!("idle_hot_us_{}={:.0}", l.missions, l.hot_us));
    }
    if let (Some(f), Some(l)) = (idle.levels.first(), idle.levels.last()) {
        println!(
            "claim + lease reclaim alone (every tick between sweeps): {:.0} µs at {} missions, {:.0} µs at {} ({:.2}×)",
            f.hot_us,
            f.missions,
            l.hot_us,
            l.missions,
            l.hot_us / f.hot_us
        );
        line.push(format!("idle_tick_growth={:.2}", l.tick_us / f.tick_us));
        line.push(format!("idle_sweep_growth={:.2}", l.sweep_us / f.sweep_us));
        line.push(format!("idle_hot_growth={:.2}", l.hot_us / f.hot_us));
        let (queued, claim_us) = idle.paused_queued_claim;
        println!(
            "claim with {queued} ready tasks of paused missions in the queue: {claim_us:.0} µs ({:.1}× the idle claim)",
            claim_us / l.claim_us
        );
        line.push(format!("paused_queued_claim_us_{queued}={claim_us:.0}"));
    }
}

/// The coordinator memory line.
fn print_memory(m: &MemoryReport, line: &mut Vec<String>) {
    println!(
        "coordinator RSS (separate `serve` process): {} KiB idle, {} KiB with {} live attempts, {} KiB with {} ({} DB connections): {:.2} KiB per live attempt overall, {:.2} KiB marginal (second half)",
        m.rss_idle_kib,
        m.rss_half_kib,
        m.half,
        m.rss_live_kib,
        m.live,
        m.child_connections,
        m.kib_per_attempt(),
        m.marginal_kib_per_attempt()
    );
    line.extend([
        format!("rss_kib_idle={}", m.rss_idle_kib),
        format!("rss_kib_{}_live={}", m.half, m.rss_half_kib),
        format!("rss_kib_{}_live={}", m.live, m.rss_live_kib),
        format!("kib_per_live_attempt={:.2}", m.kib_per_attempt()),
        format!(
            "kib_per_live_attempt_marginal={:.2}",
            m.marginal_kib_per_attempt()
        ),
    ]);
}

/// The long run's per-window lines and its decay.
fn print_long(l: &LongReport, line: &mut Vec<String>) {
    for (i, w) in l.windows.iter().enumerate() {
        println!(
            "long run, window {} ({} s): {:.0} tasks/s; claim probe {:.0} µs, {} buffers; queue {} KiB, {} dead rows, {} autovacuums; {} tasks stored; {} checkpoints, {} autovacuums in all, vacuuming [{}]",
            i + 1,
            l.window.as_secs(),
            w.tasks_per_s,
            w.claim_us,
            w.claim_buffers,
            w.queue_kib,
            w.queue_dead,
            w.queue_vacuums,
            w.tasks_stored,
            w.checkpoints,
            w.vacuums,
            w.vacuuming.join(", ")
        );
    }
    if let (Some(f), Some(z)) = (l.windows.first(), l.windows.last()) {
        println!(
            "long run: last window / first = {:.2} (throughput), {:.2} (claim probe time); claim probe at the start {:.0} µs, {} buffers",
            l.decay_ratio(),
            z.claim_us / f.claim_us,
            l.claim_at_start.0,
            l.claim_at_start.1
        );
        line.extend([
            format!("long_secs={}", l.window.as_secs() * l.windows.len() as u64),
            format!("long_first_tps={:.0}", f.tasks_per_s),
            format!("long_last_tps={:.0}", z.tasks_per_s),
            format!("long_decay_ratio={:.2}", l.decay_ratio()),
            format!("long_claim_us_first={:.0}", f.claim_us),
            format!("long_claim_us_last={:.0}", z.claim_us),
            format!("long_claim_ratio={:.2}", z.claim_us / f.claim_us),
        ]);
    }
}

/// Our single-task latency, the job-queue baseline and the ratios the
/// issue's goals are stated in (ours ÷ theirs).
fn print_job_queue(m: &Measured, line: &mut Vec<String>) {
    if let Some(s) = &m.single {
        println!(
            "single task on an idle replica ({} missions, POST /approve sent → first task at the worker): p50 {:.2} ms, p95 {:.2} ms",
            s.runs, s.p50_ms, s.p95_ms
        );
        line.push(format!("single_p50_ms={:.2}", s.p50_ms));
        line.push(format!("single_p95_ms={:.2}", s.p95_ms));
    }
    let Some(q) = &m.job_queue else {
        return;
    };
    println!(
        "job queue (graphile-worker {}, same server, concurrency {}): {:.0} jobs/s ({} no-op jobs added in one call); {}-step chain {:.2} ms per step; burst add → start p95 {:.2} ms; single job add → start p50 {:.2} ms, p95 {:.2} ms",
        q.version,
        q.concurrency,
        q.jobs_per_s,
        q.jobs,
        q.chain_steps,
        q.chain_step_ms,
        q.burst_add_to_start_p95_ms,
        q.single_add_to_start_p50_ms,
        q.single_add_to_start_p95_ms
    );
    let ours_tps = m.throughput.first().map_or(f64::NAN, |t| t.tasks_per_s);
    let ratios = [
        ("tasks_per_s_x_jobqueue", ours_tps / q.jobs_per_s),
        (
            "chain_step_x_jobqueue",
            m.chain.step_overhead_ms / q.chain_step_ms,
        ),
        (
            "dispatch_p95_x_jobqueue",
            m.dispatch.p95_ms / q.burst_add_to_start_p95_ms,
        ),
        (
            "single_p95_x_jobqueue",
            m.single
                .as_ref()
                .map_or(f64::NAN, |s| s.p95_ms / q.single_add_to_start_p95_ms),
        ),
    ];
    println!(
        "against the job queue (ours ÷ theirs): throughput {:.2}× (goal ≥ 1), chain step {:.2}× (goal ≤ 1), burst p95 {:.2}×, single-task p95 {:.2}× (goal ≤ 1)",
        ratios[0].1, ratios[1].1, ratios[2].1, ratios[3].1
    );
    line.push(format!("jobqueue_jobs_per_s={:.0}", q.jobs_per_s));
    line.push(format!("jobqueue_chain_step_ms={:.2}", q.chain_step_ms));
    for (key, v) in ratios {
        line.push(format!("{key}={v:.2}"));
    }
}

/// Where a run happened and how long it took, for the JSON figures.
pub(crate) struct RunContext {
    /// `SHOW server_version`.
    pub(crate) postgres_version: String,
    /// Whether the benchmark started its own PostgreSQL.
    pub(crate) temporary_postgres: bool,
    /// The load average when the benchmark started.
    pub(crate) load_start: Option<String>,
    /// When the benchmark started.
    pub(crate) started: Instant,
}

/// Writes every figure as JSON to `path` (the input of `bench report`).
pub(crate) fn write_json(
    path: &Path,
    args: &BenchArgs,
    run: RunContext,
    m: Measured,
    last_line: String,
) -> anyhow::Result<()> {
    let figures = report::EngineFigures {
        settings: report::RunSettings {
            missions: args.missions,
            warmup_missions: args.warmup_missions,
            tasks: args.tasks,
            chain: args.chain,
            agents: args.agents,
            agent_cap: args.agent_cap,
            long_secs: args.long_secs,
            long_inflight: args.long_inflight,
            idle_secs: args.idle_secs,
        },
        postgres_version: run.postgres_version,
        temporary_postgres: run.temporary_postgres,
        loadavg: (run.load_start, loadavg()),
        elapsed_secs: run.started.elapsed().as_secs_f64(),
        baseline: m.baseline,
        throughput: m.throughput,
        dispatch: m.dispatch,
        chain: m.chain,
        streams: m.streams,
        idle: m.idle,
        memory: m.memory,
        long: m.long,
        single: m.single,
        job_queue: m.job_queue,
        workflows: m.workflows,
        last_line,
    };
    std::fs::write(path, serde_json::to_vec_pretty(&figures)?)
        .with_context(|| format!("writing {}", path.display()))
}
