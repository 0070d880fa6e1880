//! The performance suite's report: figures in, `docs/performance.md` out.
//!
//! `coordinator bench --json-out FILE` writes the engine's figures
//! ([`EngineFigures`]); `cargo bench --bench planning` prints a last
//! `key=value` line; `scripts/perf-suite.sh` writes the machine's facts as
//! `key=value` lines. [`render`] turns them into the document, a pure
//! function so the page can be checked without running anything, and
//! `coordinator bench report` is its command line. Statements in the page
//! are either true whatever the numbers (how a phase measures) or derived
//! from the numbers of the same run, so regenerating never leaves prose that
//! contradicts the tables.

use std::{fmt::Write as _, path::PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

pub use super::env::Baseline;
pub use super::observe::TopStatement;
mod agent_tools;
mod counts;
mod jobqueue;
mod workflows;

use super::{
    idle::IdleReport,
    jobqueue::{JobQueueReport, SingleLatency},
    long::LongReport,
    memory::MemoryReport,
    streams::StreamReport,
    workflows::WorkflowReport,
};

/// `coordinator bench report` options.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// The engine's figures (`coordinator bench --json-out FILE`).
    #[arg(long = "from-bench")]
    pub bench: Option<PathBuf>,
    /// Output of `cargo bench --bench planning` (its `key=value` line is read).
    #[arg(long = "from-planning")]
    pub planning: Option<PathBuf>,
    /// Output of `cargo bench --bench agent_tools` (its `key=value` line is read).
    #[arg(long = "from-agent-tools")]
    pub agent_tools: Option<PathBuf>,
    /// Machine facts, one `key=value` per line (written by `scripts/perf-suite.sh`).
    #[arg(long = "from-machine")]
    pub machine: Option<PathBuf>,
    /// The command that produced the figures, quoted in the page.
    #[arg(long)]
    pub command: String,
    /// Mark the page as a shortened (`--quick`) run.
    #[arg(long)]
    pub quick: bool,
    /// A note on the conditions of the run (e.g. other load), quoted in the page.
    #[arg(long)]
    pub note: Option<String>,
}

/// The settings a bench run used (what the figures are figures of).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    /// Missions per throughput phase.
    pub missions: usize,
    /// Missions each throughput phase's replicas ran first, unmeasured
    /// (absent in older figures: none).
    #[serde(default)]
    pub warmup_missions: usize,
    /// Tasks per mission.
    pub tasks: usize,
    /// Steps of the sequential mission.
    pub chain: usize,
    /// Agents registered.
    pub agents: usize,
    /// Concurrency cap of each agent.
    pub agent_cap: i32,
    /// Length of the long run asked for, seconds (0: skipped).
    pub long_secs: u64,
    /// Missions in flight during the long run.
    pub long_inflight: usize,
    /// Seconds of tick timing per idle level.
    pub idle_secs: u64,
}

/// Throughput at one replica count.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Throughput {
    /// Replicas serving.
    pub replicas: usize,
    /// Tasks per second from the first approval to the last completion.
    pub tasks_per_s: f64,
    /// Seconds the phase took.
    pub secs: f64,
    /// Transactions that wrote (transaction ids assigned) per task, all
    /// replicas together; read-only polling does not count.
    #[serde(default)]
    pub write_txns_per_task: Option<f64>,
    /// WAL bytes written per task.
    #[serde(default)]
    pub wal_bytes_per_task: Option<f64>,
    /// Top-level statements per task (`pg_stat_statements`) over the measured
    /// replicas' whole life (start-up, a few dozen warm-up reads, the warm-up
    /// missions, the phase) divided by every task they ran, the bench's own
    /// polls left out.
    #[serde(default)]
    pub stmts_per_task: Option<f64>,
    /// Committed transactions per task (`pg_stat_database.xact_commit`) over
    /// the same span, the bench's own left out; read-only ones count too.
    #[serde(default)]
    pub commits_per_task: Option<f64>,
    /// Lock waiters, mean of samples: backends of the bench database waiting
    /// on a lock (`pg_stat_activity`, every 5 ms), averaged over the samples.
    #[serde(default)]
    pub lock_waiters_mean: Option<f64>,
    /// Share of those samples with at least one lock waiter (0–1).
    #[serde(default)]
    pub lock_wait_share: Option<f64>,
    /// CPU ms per task of the bench's own process (the replicas, the
    /// simulated workers and the clients) over the measured missions' span.
    #[serde(default)]
    pub bench_cpu_ms_per_task: Option<f64>,
    /// CPU ms per task of the database server's processes, same span.
    #[serde(default)]
    pub db_cpu_ms_per_task: Option<f64>,
    /// The statements that took the most time, most first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub top_statements: Vec<TopStatement>,
}

/// Dispatch latency under the burst of the first throughput phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dispatch {
    /// Dependency edges measured.
    pub edges: usize,
    /// Median, ms.
    pub p50_ms: f64,
    /// 95th percentile, ms.
    pub p95_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
}

/// The sequential mission's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chain {
    /// Steps in the chain.
    pub steps: usize,
    /// First start to last finish over the steps, ms.
    pub step_overhead_ms: f64,
    /// Median parent-to-child dispatch along the chain, ms.
    pub dispatch_p50_ms: f64,
}

/// Everything one `coordinator bench` run measured (`--json-out`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EngineFigures {
    /// What was run.
    pub settings: RunSettings,
    /// `server_version` of the PostgreSQL measured against.
    pub postgres_version: String,
    /// True if the bench started its own temporary PostgreSQL.
    pub temporary_postgres: bool,
    /// `/proc/loadavg` (1, 5, 15 min) when the bench started and ended.
    pub loadavg: (Option<String>, Option<String>),
    /// Wall-clock seconds of the whole bench.
    pub elapsed_secs: f64,
    /// The same-run baseline.
    pub baseline: Baseline,
    /// One entry per replica count, in the order run.
    pub throughput: Vec<Throughput>,
    /// Dispatch latency of the first throughput phase.
    pub dispatch: Dispatch,
    /// The sequential mission.
    pub chain: Chain,
    /// The stream phase, if run.
    pub streams: Option<StreamReport>,
    /// The idle-tick phase, if run.
    pub idle: Option<IdleReport>,
    /// The memory phase, if run.
    pub memory: Option<MemoryReport>,
    /// The long run, if run.
    pub long: Option<LongReport>,
    /// Our single-task latency on an idle system, if measured.
    #[serde(default)]
    pub single: Option<SingleLatency>,
    /// The job-queue baseline of the same run, if measured.
    #[serde(default)]
    pub job_queue: Option<JobQueueReport>,
    /// The workflow phase (token transitions), if run.
    #[serde(default)]
    pub workflows: Option<WorkflowReport>,
    /// The bench's last `key=value` line, verbatim.
    pub last_line: String,
}

/// Throughput at a replica count against the run's reference count.
#[derive(Debug, Clone, PartialEq)]
pub struct Scaling {
    /// Replicas serving.
    pub replicas: usize,
    /// The replica count the ratios are to (1 if it was run).
    pub reference: usize,
    /// Tasks per second.
    pub tasks_per_s: f64,
    /// Throughput over the reference's.
    pub speedup: f64,
    /// Speedup over the growth in replicas (1.0: each replica adds its full share).
    pub efficiency: f64,
}

/// The phase whose top statements are shown: the 1-replica one (else the
/// first), if it has any.
pub fn top_statements_phase(points: &[Throughput]) -> Option<&Throughput> {
    points
        .iter()
        .find(|t| t.replicas == 1)
        .or_else(|| points.first())
        .filter(|t| !t.top_statements.is_empty())
}

/// Replica scaling against 1 replica (or, without one, the smallest count run).
pub fn replica_scaling(points: &[Throughput]) -> Vec<Scaling> {
    let Some(reference) = points
        .iter()
        .find(|p| p.replicas == 1)
        .or_else(|| points.iter().min_by_key(|p| p.replicas))
    else {
        return Vec::new();
    };
    points
        .iter()
        .map(|p| {
            let speedup = p.tasks_per_s / reference.tasks_per_s;
            Scaling {
                replicas: p.replicas,
                reference: reference.replicas,
                tasks_per_s: p.tasks_per_s,
                speedup,
                efficiency: speedup * reference.replicas as f64 / p.replicas as f64,
            }
        })
        .collect()
}

/// The `key=value` pairs of the last line of `text` that has `marker` in it.
pub fn last_key_values(text: &str, marker: &str) -> Option<Vec<(String, String)>> {
    let line = text.lines().rev().find(|l| l.contains(marker))?;
    Some(
        line.split_whitespace()
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect(),
    )
}

/// `key=value` lines (values may hold spaces; blank and `#` lines skipped).
pub fn parse_key_value_lines(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// The planning benchmark's key the others are ratios to.
const PLANNING_BASELINE: &str = "baseline_parse_20_us";

/// One planning case: (key, µs per operation).
#[derive(Debug, Clone, PartialEq)]
pub struct PlanningCase {
    /// Key without its `_us` suffix, e.g. `validate_200`.
    pub key: String,
    /// Microseconds per operation.
    pub us: f64,
}

/// The planning benchmark's figures parsed from its output.
#[derive(Debug, Clone, PartialEq)]
pub struct Planning {
    /// Cases in the order printed, the baseline first.
    pub cases: Vec<PlanningCase>,
    /// The `key=value` line, verbatim.
    pub line: String,
}

impl Planning {
    /// Parses the output of `cargo bench --bench planning`.
    pub fn parse(output: &str) -> Option<Planning> {
        let line = output
            .lines()
            .rev()
            .find(|l| l.contains(PLANNING_BASELINE))?;
        let kv = last_key_values(line, PLANNING_BASELINE)?;
        let cases: Vec<PlanningCase> = kv
            .iter()
            .filter(|(k, _)| k.ends_with("_us"))
            .filter_map(|(k, v)| {
                Some(PlanningCase {
                    key: k.strip_suffix("_us")?.to_owned(),
                    us: v.parse().ok()?,
                })
            })
            .collect();
        cases
            .iter()
            .any(|c| c.key == "baseline_parse_20")
            .then(|| Planning {
                cases,
                line: line.trim().to_owned(),
            })
    }

    /// µs per operation of a case.
    pub fn us(&self, key: &str) -> Option<f64> {
        self.cases.iter().find(|c| c.key == key).map(|c| c.us)
    }

    /// A case over the baseline.
    pub fn ratio(&self, key: &str) -> Option<f64> {
        Some(self.us(key)? / self.us("baseline_parse_20")?)
    }
}

/// Everything the page is made from.
#[derive(Debug, Clone)]
pub struct Suite {
    /// The command that produced the figures.
    pub command: String,
    /// A shortened run.
    pub quick: bool,
    /// Conditions of the run worth knowing (other load).
    pub note: Option<String>,
    /// Machine facts, `key=value`, in the order given.
    pub machine: Vec<(String, String)>,
    /// The planning benchmark, if run.
    pub planning: Option<Planning>,
    /// The engine benchmark, if run.
    pub engine: Option<EngineFigures>,
    /// The agent tool-call benchmark, if run.
    pub agent_tools: Option<agent_tools::AgentTools>,
}

/// `1234567.8` → `1,234,568` (decimals 0) or `1,234,567.80` (decimals 2).
pub fn num(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let s = format!("{:.*}", decimals, v.abs());
    let (int, frac) = s
        .split_once('.')
        .map_or((s.as_str(), None), |(i, f)| (i, Some(f)));
    let mut grouped = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(c);
    }
    let sign = if v < 0.0 && s.chars().any(|c| c.is_ascii_digit() && c != '0') {
        "-"
    } else {
        ""
    };
    match frac {
        Some(f) => format!("{sign}{grouped}.{f}"),
        None => format!("{sign}{grouped}"),
    }
}

/// A ratio as `1.23×`.
fn x(v: f64) -> String {
    if v.is_finite() {
        format!("{v:.2}×")
    } else {
        "–".into()
    }
}

/// Readable names of the machine keys the script writes.
fn machine_label(key: &str) -> &str {
    match key {
        "date" => "date (UTC)",
        "commit" => "git commit",
        "cpus" => "CPUs (`nproc`)",
        "cpu_model" => "CPU model",
        "memory" => "memory",
        "kernel" => "kernel",
        "rustc" => "rustc",
        "postgres_client" => "PostgreSQL binaries",
        "load_before" => "load average before the suite (1, 5, 15 min)",
        "load_after" => "load average after the suite",
        "planning_command" => "planning command",
        "agent_tools_command" => "agent tool-call command",
        "bench_command" => "engine command",
        other => other,
    }
}

/// Readable names of the planning cases.
fn planning_label(key: &str) -> String {
    match key {
        "baseline_parse_20" => "baseline: parse a 20-task plan".into(),
        "plan_20" => "match + HTN decomposition + validation, 20-task plan".into(),
        "match" => "match alone (goal vs. every root method)".into(),
        "validate_20" => "validation, 20 nodes".into(),
        "validate_200" => "validation, 200 nodes".into(),
        "validate_2000" => "validation, 2,000 nodes".into(),
        other => other.replace('_', " "),
    }
}

/// Renders `docs/performance.md`.
pub fn render(s: &Suite) -> String {
    let mut o = String::new();
    let w = &mut o;
    let _ = writeln!(w, "# Performance\n");
    let _ = writeln!(
        w,
        "<!-- Generated by `coordinator bench report` (src/bench/report.rs) from a run of \
         `scripts/perf-suite.sh`; rerun the suite instead of editing by hand. -->\n"
    );
    if s.quick {
        let _ = writeln!(
            w,
            "**Quick run.** These figures come from the suite's shortened mode \
             (`--quick`: shorter long run, fewer missions, shorter timing budgets); \
             the full suite is `scripts/perf-suite.sh` without flags.\n"
        );
    }
    let _ = writeln!(
        w,
        "Every figure below was measured in one run of one command, on the machine \
         described here; each benchmark also measures a baseline in the same run and \
         reports ratios to it, so runs on different machines (or the same machine under \
         different load) compare by their ratios rather than their absolute figures. \
         Earlier hand-recorded runs, the ranges seen over many runs, and the A/B \
         comparisons of past changes are in [performance-history.md](performance-history.md).\n"
    );
    let _ = writeln!(w, "Command:\n\n```\n{}\n```\n", s.command);
    render_machine(w, s);
    if let Some(p) = &s.planning {
        render_planning(w, p);
    }
    if let Some(e) = &s.engine {
        render_engine(w, e);
    }
    if let Some(a) = &s.agent_tools {
        agent_tools::render(w, a);
    }
    o
}

fn render_machine(w: &mut String, s: &Suite) {
    let _ = writeln!(w, "## Machine and run\n");
    let _ = writeln!(w, "| fact | value |\n| --- | --- |");
    for (k, v) in &s.machine {
        let _ = writeln!(w, "| {} | {} |", machine_label(k), cell(v));
    }
    if let Some(e) = &s.engine {
        let _ = writeln!(
            w,
            "| PostgreSQL server measured | {} ({}) |",
            cell(&e.postgres_version),
            if e.temporary_postgres {
                "a temporary cluster the bench started, default durability (fsync on)"
            } else {
                "an existing server, in a database of the bench's own"
            }
        );
        let _ = writeln!(
            w,
            "| load average at the engine bench's start / end | {} / {} |",
            e.loadavg.0.as_deref().unwrap_or("–"),
            e.loadavg.1.as_deref().unwrap_or("–")
        );
        let _ = writeln!(
            w,
            "| engine bench wall-clock time | {} s |",
            num(e.elapsed_secs, 0)
        );
    }
    let _ = writeln!(w);
    if let Some(note) = &s.note {
        let _ = writeln!(w, "Conditions: {note}\n");
    }
}

/// Table cells cannot hold `|` or newlines.
fn cell(v: &str) -> String {
    v.replace('|', "\\|").replace('\n', " ")
}

fn render_planning(w: &mut String, p: &Planning) {
    let _ = writeln!(w, "## Planning\n");
    let _ = writeln!(
        w,
        "`cargo bench --bench planning` (release build): best batch mean per figure. \
         Baseline: parsing the 20-task plan from JSON (`serde_json`), which every request \
         with a plan does anyway. Validation figures subtract the cost of cloning the plan, \
         which the benchmark does because `validate_plan` takes the plan by value.\n"
    );
    let _ = writeln!(
        w,
        "| case | µs/op | ops/s | × baseline |\n| --- | ---: | ---: | ---: |"
    );
    for c in &p.cases {
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} |",
            planning_label(&c.key),
            num(c.us, 2),
            num(1e6 / c.us, 0),
            p.ratio(&c.key).map_or("–".into(), |r| format!("{r:.2}"))
        );
    }
    let _ = writeln!(w, "\n```\n{}\n```\n", p.line);
    let _ = writeln!(w, "What it means (from this run's figures):\n");
    if let Some(r) = p.ratio("plan_20") {
        let _ = writeln!(
            w,
            "- Planning a 20-task mission from the template library costs {} parsing its plan.",
            x(r)
        );
    }
    if let (Some(a), Some(b), Some(c)) = (
        p.us("validate_20"),
        p.us("validate_200"),
        p.us("validate_2000"),
    ) {
        let _ = writeln!(
            w,
            "- Validation grows {} from 20 to 200 nodes and {} from 200 to 2,000 \
             (10× the nodes each step, so 10× is linear growth). Cycle detection uses \
             petgraph's toposort and, only when a cycle exists, Kosaraju SCCs, neither \
             recursive, so deep graphs cannot overflow the stack.",
            x(b / a),
            x(c / b)
        );
    }
    let _ = writeln!(
        w,
        "- The LLM planner's cost is the model's; it runs beside the tick, never inside a \
         request or a transaction, and is not measured here.\n"
    );
}

fn render_engine(w: &mut String, e: &EngineFigures) {
    let st = &e.settings;
    let b = e.baseline.total_ms;
    let _ = writeln!(w, "## Engine\n");
    let _ = writeln!(
        w,
        "`coordinator bench`, end to end through HTTP with instant simulated workers: \
         {} missions × {} tasks (fan-out plans) per throughput phase{}, {} agents × cap {}, \
         a {}-step chain. The idle, memory and long phases each run in a database of \
         their own.\n",
        num(st.missions as f64, 0),
        st.tasks,
        if st.warmup_missions > 0 {
            format!(
                " (each phase's fresh replicas first run {} more, unmeasured, so the \
                 measured ones meet warm connections and prepared statements)",
                num(st.warmup_missions as f64, 0)
            )
        } else {
            String::new()
        },
        st.agents,
        st.agent_cap,
        st.chain
    );
    let _ = writeln!(
        w,
        "Baseline (same run): one committed insert ({} ms) + one HTTP round trip to the \
         worker ({} ms) = **{} ms**, the least one dispatch step can cost.\n",
        num(e.baseline.commit_ms, 3),
        num(e.baseline.http_ms, 3),
        num(b, 3)
    );
    let _ = writeln!(w, "Last line of the run:\n\n```\n{}\n```\n", e.last_line);

    let _ = writeln!(w, "### Throughput and latency\n");
    let scaling = replica_scaling(&e.throughput);
    let reference = scaling.first().map_or(1, |p| p.reference);
    let _ = writeln!(
        w,
        "| replicas | tasks/s | seconds | × {reference} replica | per-replica efficiency |\n\
         | ---: | ---: | ---: | ---: | ---: |"
    );
    for (p, t) in scaling.iter().zip(&e.throughput) {
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} |",
            p.replicas,
            num(p.tasks_per_s, 0),
            num(t.secs, 2),
            x(p.speedup),
            x(p.efficiency)
        );
    }
    let _ = writeln!(w);
    counts::render(w, &e.throughput);
    let more: Vec<&Scaling> = scaling.iter().filter(|p| p.replicas > reference).collect();
    if !more.is_empty() {
        let gained = more.iter().any(|p| p.speedup > 1.05);
        let lost = more.iter().any(|p| p.speedup < 0.95);
        let verdict = match (gained, lost) {
            (true, false) => "added throughput",
            (false, true) => "lowered throughput",
            (false, false) => "left throughput about where it was (within ±5 %)",
            (true, true) => "changed throughput both ways",
        };
        let _ = writeln!(
            w,
            "More replicas {verdict} in this run. Replicas share one PostgreSQL (and here \
             the machine's cores with it and with the benchmark); how much they wait on \
             each other's locks is the lock-waiter column above, where it was measured \
             (see `docs/scaling.md`).\n"
        );
    }
    let d = &e.dispatch;
    let _ = writeln!(
        w,
        "| figure | ms | × baseline |\n| --- | ---: | ---: |\n\
         | dispatch latency p50 (parent commit → child at worker, {} edges, first phase) | {} | {} |\n\
         | dispatch latency p95 | {} | {} |\n\
         | dispatch latency p99 | {} | {} |\n\
         | step overhead, {}-step sequential mission | {} | {} |\n\
         | dispatch p50 along the chain | {} | {} |\n",
        num(d.edges as f64, 0),
        num(d.p50_ms, 2),
        x(d.p50_ms / b),
        num(d.p95_ms, 2),
        x(d.p95_ms / b),
        num(d.p99_ms, 2),
        x(d.p99_ms / b),
        e.chain.steps,
        num(e.chain.step_overhead_ms, 2),
        x(e.chain.step_overhead_ms / b),
        num(e.chain.dispatch_p50_ms, 2),
        x(e.chain.dispatch_p50_ms / b),
    );
    if let Some(first) = e.throughput.first() {
        let burst = (st.missions * st.tasks) as f64;
        let half_drain_ms = burst / 2.0 / first.tasks_per_s * 1000.0;
        let _ = writeln!(
            w,
            "The burst latency is mostly queueing: {} tasks are released at once, and half \
             of them leaving at the measured {} tasks/s takes {} ms, against a p50 of {} ms. \
             A chain step is two transactions (report, claim) and an HTTP call by design; \
             its overhead over the baseline is round trips to the database.\n",
            num(burst, 0),
            num(first.tasks_per_s, 0),
            num(half_drain_ms, 0),
            num(d.p50_ms, 0)
        );
    }
    jobqueue::render(w, e);
    if let Some(idle) = &e.idle {
        render_idle(w, idle, b);
    }
    if let Some(m) = &e.memory {
        render_memory(w, m);
    }
    if let Some(l) = &e.long {
        render_long(w, l, st);
    }
    if let Some(st) = &e.streams {
        render_streams(w, st);
    }
    if let Some(wf) = &e.workflows {
        workflows::render(w, wf, b);
    }
}

fn render_idle(w: &mut String, idle: &IdleReport, baseline_ms: f64) {
    let _ = writeln!(w, "### Tick cost with idle missions\n");
    let _ = writeln!(
        w,
        "Idle missions are written straight into the schema in the shapes an idle fleet \
         has (50 % executing with two tasks on a worker that never answers, 10 % executing \
         with a task awaiting a human, 20 % awaiting approval, 20 % paused); then the \
         engine's phase functions are timed as one pass of the tick loop calls them \
         (`claim_batch`, `reclaim_expired_leases`, `sweep`; medians, µs).\n"
    );
    let _ = writeln!(
        w,
        "| idle missions | full pass | claim | lease reclaim | sweep | claim + lease alone | full pass × baseline |\n\
         | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for l in &idle.levels {
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} | {} |",
            num(l.missions as f64, 0),
            num(l.tick_us, 0),
            num(l.claim_us, 0),
            num(l.lease_us, 0),
            num(l.sweep_us, 0),
            num(l.hot_us, 0),
            x(l.tick_us / 1000.0 / baseline_ms)
        );
    }
    if let (Some(f), Some(l)) = (idle.levels.first(), idle.levels.last())
        && idle.levels.len() > 1
    {
        let _ = writeln!(
            w,
            "| {} / {} | {} | {} | {} | {} | {} | |",
            num(l.missions as f64, 0),
            num(f.missions as f64, 0),
            x(l.tick_us / f.tick_us),
            x(l.claim_us / f.claim_us),
            x(l.lease_us / f.lease_us),
            x(l.sweep_us / f.sweep_us),
            x(l.hot_us / f.hot_us)
        );
        let _ = writeln!(
            w,
            "\n- What every tick pays (claim + lease reclaim) changes {} from {} to {} idle \
             missions.\n- The sweep runs once per `sweep_interval`, not per tick, and looks \
             at the next {} executing missions after a per-replica cursor \
             (`engine::reconcile::SWEEP_WINDOW`); here it grows {}.",
            x(l.hot_us / f.hot_us),
            num(f.missions as f64, 0),
            num(l.missions as f64, 0),
            crate::engine::reconcile::SWEEP_WINDOW,
            x(l.sweep_us / f.sweep_us)
        );
        let (queued, claim_us) = idle.paused_queued_claim;
        let _ = writeln!(
            w,
            "- With {} ready tasks of paused missions (kept out of the ready queue while \
             paused) the claim takes {} µs, {} the idle claim at {} missions.\n",
            num(queued as f64, 0),
            num(claim_us, 0),
            x(claim_us / l.claim_us),
            num(l.missions as f64, 0)
        );
    } else {
        let _ = writeln!(w);
    }
}

fn render_memory(w: &mut String, m: &MemoryReport) {
    let _ = writeln!(w, "### Memory with live attempts\n");
    let _ = writeln!(
        w,
        "A separate `coordinator serve` process against a fresh database, its agents \
         pointing at a worker that answers every dispatch `202` and never reports; `VmRSS` \
         from `/proc/<pid>/status`.\n"
    );
    let _ = writeln!(
        w,
        "| state | RSS | × idle |\n| --- | ---: | ---: |\n\
         | serving, agents registered, nothing running | {} KiB | 1.00× |\n\
         | {} live attempts | {} KiB | {} |\n\
         | {} live attempts ({} DB connections) | {} KiB | {} |\n",
        num(m.rss_idle_kib as f64, 0),
        num(m.half as f64, 0),
        num(m.rss_half_kib as f64, 0),
        x(m.rss_half_kib as f64 / m.rss_idle_kib as f64),
        num(m.live as f64, 0),
        m.child_connections,
        num(m.rss_live_kib as f64, 0),
        x(m.rss_live_kib as f64 / m.rss_idle_kib as f64),
    );
    let _ = writeln!(
        w,
        "{} KiB per live attempt if all growth is charged to them; the second half added \
         {} KiB each. The engine holds nothing per live attempt once the worker answered \
         202 (the attempt lives in the database), so growth is the pools load opens \
         (database and HTTP connections, allocator arenas).\n",
        num(m.kib_per_attempt(), 2),
        num(m.marginal_kib_per_attempt(), 2)
    );
}

fn render_long(w: &mut String, l: &LongReport, st: &RunSettings) {
    let _ = writeln!(w, "### Throughput over a long run\n");
    let secs = l.window.as_secs() * l.windows.len() as u64;
    let _ = writeln!(
        w,
        "One replica, instant workers, {} fan-out missions kept in flight through the API \
         for {} s; tasks completed per {} s window. At each window's end the claim query is \
         probed read-only (fastest of seven, buffers touched) and the ready queue's size, \
         dead rows and autovacuum runs are read, with the server's checkpoints and \
         autovacuum runs on all tables so far and the tables autovacuum is working on at \
         that moment.\n",
        st.long_inflight,
        num(secs as f64, 0),
        l.window.as_secs()
    );
    let _ = writeln!(
        w,
        "| window | tasks/s | × first | claim probe µs | buffers | queue KiB | dead rows | autovacuums | tasks stored | checkpoints | autovacuums, all tables | vacuuming at the end |\n\
         | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
    );
    let first = l.windows.first().map_or(f64::NAN, |f| f.tasks_per_s);
    for (i, win) in l.windows.iter().enumerate() {
        let _ = writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            i + 1,
            num(win.tasks_per_s, 0),
            x(win.tasks_per_s / first),
            num(win.claim_us, 0),
            win.claim_buffers,
            num(win.queue_kib as f64, 0),
            num(win.queue_dead as f64, 0),
            win.queue_vacuums,
            num(win.tasks_stored as f64, 0),
            win.checkpoints,
            win.vacuums,
            if win.vacuuming.is_empty() {
                "–".to_owned()
            } else {
                win.vacuuming.join(", ")
            }
        );
    }
    if let (Some(f), Some(z)) = (l.windows.first(), l.windows.last()) {
        let min = l
            .windows
            .iter()
            .map(|w| w.tasks_per_s)
            .fold(f64::INFINITY, f64::min);
        let max = l
            .windows
            .iter()
            .map(|w| w.tasks_per_s)
            .fold(f64::NEG_INFINITY, f64::max);
        let (qmin, qmax) = l.windows.iter().fold((i64::MAX, i64::MIN), |(a, b), w| {
            (a.min(w.queue_kib), b.max(w.queue_kib))
        });
        let _ = writeln!(
            w,
            "\nDecay (last window / first): **{}** in throughput, {} in claim probe time \
             (probe at the start: {} µs, {} buffers). Windows ranged {}–{} tasks/s while the \
             history grew from {} to {} tasks stored; the ready queue stayed between {} and {} \
             KiB. The embedded cluster runs with `autovacuum_naptime=5s`: a task transition \
             changes `status`, which partial indexes cover, so it is never a HOT update and \
             leaves dead index entries until vacuum (operators of their own PostgreSQL should \
             set the same, see `deploy/README.md`).\n",
            x(l.decay_ratio()),
            x(z.claim_us / f.claim_us),
            num(l.claim_at_start.0, 0),
            l.claim_at_start.1,
            num(min, 0),
            num(max, 0),
            num(f.tasks_stored as f64, 0),
            num(z.tasks_stored as f64, 0),
            num(qmin as f64, 0),
            num(qmax as f64, 0),
        );
    }
}

fn render_streams(w: &mut String, st: &StreamReport) {
    let _ = writeln!(w, "### Event streams\n");
    let _ = writeln!(
        w,
        "An API-only replica reads the workspace's whole event log ({} events) as JSON \
         pages of 1,000 (the baseline: same rows, same commit-ordered query), as one SSE \
         stream, and as {} SSE streams at once; then {} streams wait at the end of the log \
         while a mission is created.\n",
        num(st.events as f64, 0),
        st.clients,
        st.clients
    );
    let _ = writeln!(
        w,
        "| reader | events/s | × pages |\n| --- | ---: | ---: |\n\
         | JSON pages (baseline) | {} | 1.00× |\n\
         | one SSE stream | {} | {} |\n\
         | {} SSE streams, all together | {} | {} |\n",
        num(st.json_eps, 0),
        num(st.sse_one_eps, 0),
        x(st.sse_one_eps / st.json_eps),
        st.clients,
        num(st.sse_many_eps, 0),
        x(st.sse_many_eps / st.json_eps)
    );
    let _ = writeln!(
        w,
        "A new event reached the {} waiting streams in p50 {} ms, max {} ms from sending \
         the request that wrote it; that request's own answer took {} ms (streams are \
         woken by the `coordinator_events` NOTIFY at the writer's commit).\n",
        st.clients,
        num(st.fanout_ms.0, 1),
        num(st.fanout_ms.1, 1),
        num(st.request_ms, 1)
    );
}

/// `coordinator bench report`: reads the files and prints the page.
pub fn run(args: &ReportArgs) -> anyhow::Result<()> {
    let read = |p: &PathBuf| {
        std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))
    };
    let engine = match &args.bench {
        Some(p) => Some(
            serde_json::from_str::<EngineFigures>(&read(p)?)
                .with_context(|| format!("parsing {}", p.display()))?,
        ),
        None => None,
    };
    let planning = match &args.planning {
        Some(p) => Some(Planning::parse(&read(p)?).with_context(|| {
            format!(
                "no `{PLANNING_BASELINE}=…` line in {} (is it the output of `cargo bench --bench planning`?)",
                p.display()
            )
        })?),
        None => None,
    };
    let agent_tools = match &args.agent_tools {
        Some(p) => Some(agent_tools::AgentTools::parse(&read(p)?).with_context(|| {
            format!(
                "no `{}=…` line in {} (is it the output of `cargo bench --bench agent_tools`?)",
                agent_tools::AGENT_TOOLS_MARKER,
                p.display()
            )
        })?),
        None => None,
    };
    let machine = match &args.machine {
        Some(p) => parse_key_value_lines(&read(p)?),
        None => Vec::new(),
    };
    print!(
        "{}",
        render(&Suite {
            command: args.command.clone(),
            quick: args.quick,
            note: args.note.clone(),
            machine,
            planning,
            engine,
            agent_tools,
        })
    );
    Ok(())
}

#[cfg(test)]
mod tests;
