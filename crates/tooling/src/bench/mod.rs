//! `coordinator bench`: the engine benchmark, end to end through HTTP.
//!
//! Against a private PostgreSQL 15 it starts itself — default durability, the
//! stock `max_connections = 100` and `pg_stat_statements` loaded
//! (`LocalPostgres::start_temporary_for_bench`) — or against `DATABASE_URL`,
//! always in a database of its own, with instant simulated workers, it
//! measures:
//! - throughput: missions of fan-out plans approved at once, for each replica
//!   count (tasks/s from the first approval to the last completion), on
//!   fresh replicas whose pools are sized so every phase fits a stock server;
//! - per task in each throughput phase: statements, commits, writing
//!   transactions, WAL bytes and lock waiters, with the bench's own queries
//!   left out, and the statements that took the most time (`observe`);
//! - dispatch latency: from a parent task's completion commit to its child's
//!   request arriving at the worker (p50/p95/p99);
//! - step overhead of one sequential mission (`--chain` steps);
//! - one task on an idle replica: `POST /approve` sent → its request at the
//!   worker (`jobqueue::single_latency`);
//! - tick cost with 10, 1,000 and 10,000 idle missions ([`idle`]);
//! - the coordinator's memory with 1,000 live attempts ([`memory`]);
//! - throughput over a long run, per window, and the claim cost ([`long`]);
//! - the job-queue baseline: graphile-worker 0.18 on the same server in the
//!   same run, as ratios ours ÷ theirs ([`jobqueue`], `--job-queue auto|off`;
//!   skipped with one line when node or `scripts/jobqueue-install.sh`'s
//!   install is missing);
//! - workflows: token transitions per second of `--workflow-instances`
//!   BPMN instances of a 20-node process, beside the plain engine's tasks
//!   per second of the same run ([`workflows`], last, in the main database).
//!
//! The idle, memory, long and job-queue phases run in databases of their own
//! on the same server, so no phase sees another's rows.
//!
//! With several replica counts it also reports replica scaling: throughput
//! over 1 replica's and per-replica efficiency ([`report::replica_scaling`]).
//! `--json-out FILE` writes every figure as JSON, from which `coordinator
//! bench report` renders `docs/performance.md` ([`report`]); the suite that
//! runs it all is `scripts/perf-suite.sh`.
//!
//! A baseline measured in the same run (one committed insert plus one HTTP
//! round trip to the worker: the least one dispatch step can cost) turns the
//! figures into ratios, so runs on different machines compare. The last line
//! is space-separated `key=value` figures.
//!
//! Layout: `env` holds the shared set-up (database, token, instant worker,
//! in-process replicas and their pool sizes), `observe` the database counts,
//! `throughput` the throughput, dispatch and chain sections, `jobqueue` the
//! baseline queue and our single-task latency, `workflows` the BPMN
//! instances' token transitions, `output` the printed report and the JSON
//! figures.

use std::{
    path::PathBuf,
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use serde_json::{Value, json};
use sqlx::{Connection, Executor};
use uuid::Uuid;

use crate::db;

mod cpu;
mod env;
pub mod idle;
pub mod jobqueue;
pub mod long;
pub mod memory;
mod observe;
mod output;
pub mod report;
pub mod streams;
mod throughput;
pub mod workflows;

use env::BenchEnv;

/// `coordinator bench` options.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchArgs {
    /// Instead of benchmarking: render the performance page from saved figures.
    #[command(subcommand)]
    pub command: Option<BenchCommand>,
    /// PostgreSQL server to use (a new database is created on it); without it
    /// a temporary private PostgreSQL with default durability is started.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Missions per throughput phase.
    #[arg(long, default_value_t = 200)]
    pub missions: usize,
    /// Missions each throughput phase's fresh replicas run first, unmeasured,
    /// so the measured missions run on warm replicas: pools at size, each
    /// connection's statements prepared and planned (0: none).
    #[arg(long, default_value_t = 50)]
    pub warmup_missions: usize,
    /// Tasks per mission (fan-out: a root, parallel middle tasks, a sink; 3–20).
    #[arg(long, default_value_t = 5)]
    pub tasks: usize,
    /// Steps of the sequential mission for step overhead (3–20).
    #[arg(long, default_value_t = 20)]
    pub chain: usize,
    /// Replica counts to measure throughput for, e.g. `1,2`.
    #[arg(long, value_delimiter = ',', default_values_t = [1usize, 2])]
    pub replicas: Vec<usize>,
    /// Agents registered (all at one instant worker).
    #[arg(long, default_value_t = 8)]
    pub agents: usize,
    /// Concurrency cap of each agent.
    #[arg(long, default_value_t = 32)]
    pub agent_cap: i32,
    /// Concurrent API calls used to create and approve missions.
    #[arg(long, default_value_t = 8)]
    pub client_concurrency: usize,
    /// Idle-mission counts to time an engine tick at, e.g. `10,1000,10000`.
    #[arg(long, value_delimiter = ',', default_values_t = [10usize, 1_000, 10_000])]
    pub idle_levels: Vec<usize>,
    /// Seconds spent timing ticks at each idle level.
    #[arg(long, default_value_t = 2)]
    pub idle_secs: u64,
    /// Live attempts to hold for the memory measurement.
    #[arg(long, default_value_t = 1_000)]
    pub live_attempts: usize,
    /// Length of the long run (continuous feeding), in seconds; 0 skips it.
    #[arg(long, default_value_t = 30)]
    pub long_secs: u64,
    /// Window over which the long run reports throughput, in seconds.
    #[arg(long, default_value_t = 10)]
    pub long_window_secs: u64,
    /// Missions kept in flight during the long run.
    #[arg(long, default_value_t = 32)]
    pub long_inflight: usize,
    /// Concurrent SSE clients in the stream phase; 0 skips it.
    #[arg(long, default_value_t = 16)]
    pub stream_clients: usize,
    /// Also write every figure as JSON to this file (input of `bench report`).
    #[arg(long)]
    pub json_out: Option<PathBuf>,
    /// Measure the job-queue baseline (graphile-worker, same server) after
    /// the engine phases: `auto` skips it when node or the package is missing.
    #[arg(long, value_enum, default_value_t = jobqueue::JobQueueMode::Auto)]
    pub job_queue: jobqueue::JobQueueMode,
    /// Instances of the 20-node user-task process driven to their end in the
    /// workflow phase (token transitions per second); 0 skips the phase.
    #[arg(long, default_value_t = 1_000)]
    pub workflow_instances: usize,
    /// Concurrent clients completing the workflow instances' tasks.
    #[arg(long, default_value_t = 64)]
    pub workflow_clients: usize,
    /// Instances of the same process made of service tasks (each task a
    /// mission); 0 skips that variant.
    #[arg(long, default_value_t = 100)]
    pub workflow_service_instances: usize,
}

/// `coordinator bench` subcommands.
#[derive(Debug, Clone, clap::Subcommand)]
pub enum BenchCommand {
    /// Print `docs/performance.md` rendered from saved figures (see `scripts/perf-suite.sh`).
    Report(report::ReportArgs),
}

/// `/proc/loadavg`'s three load averages, if readable (Linux).
fn loadavg() -> Option<String> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    Some(
        text.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
    )
}

fn task(id: String, deps: Vec<String>) -> Value {
    json!({"id": id, "title": "bench step", "task_type": "research", "required_skills": ["research"],
           "depends_on": deps, "success_criteria": [{"description": "done", "must_pass": true}]})
}

/// Root → `n - 2` parallel tasks → sink.
fn fanout_plan(n: usize) -> Value {
    let middle: Vec<String> = (1..n - 1).map(|i| format!("m{i}")).collect();
    let mut tasks = vec![task("root".into(), vec![])];
    tasks.extend(middle.iter().map(|m| task(m.clone(), vec!["root".into()])));
    tasks.push(task("sink".into(), middle));
    json!({ "tasks": tasks })
}

/// `n` tasks in a line.
fn chain_plan(n: usize) -> Value {
    let tasks: Vec<Value> = (0..n)
        .map(|i| {
            let deps = if i == 0 {
                vec![]
            } else {
                vec![format!("s{}", i - 1)]
            };
            task(format!("s{i}"), deps)
        })
        .collect();
    json!({ "tasks": tasks })
}

/// A minimal admin client of one replica (also used by `coordinator chaos`).
pub(crate) struct Api {
    pub(crate) http: reqwest::Client,
    pub(crate) base: String,
    pub(crate) token: String,
}

impl Api {
    /// GETs `path`; any non-2xx answer is an error naming the status.
    pub(crate) async fn get(&self, path: &str) -> anyhow::Result<Value> {
        self.send(path, self.http.get(format!("{}{path}", self.base)))
            .await
    }

    /// POSTs `body`; any non-2xx answer is an error naming the status.
    pub(crate) async fn post(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        let req = self.http.post(format!("{}{path}", self.base)).json(&body);
        self.send(path, req).await
    }

    /// Sends `req` with the token; the JSON answer, or an error naming `path` and the status.
    async fn send(&self, path: &str, req: reqwest::RequestBuilder) -> anyhow::Result<Value> {
        let resp = req.bearer_auth(&self.token).send().await?;
        let status = resp.status();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        if !status.is_success() {
            bail!("{path}: {status} {body}");
        }
        Ok(body)
    }
}

/// Percentile (0–100) of sorted values.
fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// Median of unsorted values.
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    percentile(&v, 50.0)
}

/// Creates an empty database on the server at `base`: (name, URL).
pub(crate) async fn create_database(base: &str) -> anyhow::Result<(String, String)> {
    let name = format!("coordinator_bench_{}", Uuid::new_v4().simple());
    let mut conn = sqlx::PgConnection::connect(base)
        .await
        .context("connecting to the PostgreSQL server")?;
    conn.execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .await?;
    conn.close().await?;
    let mut url = reqwest::Url::parse(base)?;
    url.set_path(&format!("/{name}"));
    Ok((name, url.to_string()))
}

/// Runs `phase` in a fresh, migrated database on the server at `base`, then
/// drops that database.
async fn in_fresh_database<T, F, Fut>(base: &str, phase: F) -> anyhow::Result<T>
where
    F: FnOnce(String) -> Fut,
    Fut: Future<Output = anyhow::Result<T>>,
{
    let (name, url) = create_database(base).await?;
    let pool = db::connect(&url, 1).await?;
    db::migrate(&pool).await?;
    pool.close().await;
    let result = phase(url).await;
    let mut conn = sqlx::PgConnection::connect(base).await?;
    // FORCE: a killed child process may still hold connections.
    conn.execute(sqlx::AssertSqlSafe(format!(
        "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
    )))
    .await?;
    conn.close().await?;
    result
}

/// Every figure a run measured, section by section (the report's input).
pub(crate) struct Measured {
    baseline: env::Baseline,
    throughput: Vec<report::Throughput>,
    dispatch: report::Dispatch,
    chain: report::Chain,
    streams: Option<streams::StreamReport>,
    idle: Option<idle::IdleReport>,
    memory: Option<memory::MemoryReport>,
    long: Option<long::LongReport>,
    single: Option<jobqueue::SingleLatency>,
    job_queue: Option<jobqueue::JobQueueReport>,
    workflows: Option<workflows::WorkflowReport>,
}

/// Runs the benchmark and prints its report (or, with `report`, renders the page).
pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    if let Some(BenchCommand::Report(r)) = &args.command {
        return report::run(r);
    }
    let started = Instant::now();
    let load_start = loadavg();
    check(&args)?;
    let env = BenchEnv::start(&args).await?;
    let measured = measure(&env, &args).await?;
    let last_line = output::print(&args, &measured);
    if let Some(path) = &args.json_out {
        let run = output::RunContext {
            postgres_version: env.postgres_version.clone(),
            temporary_postgres: env.server.is_some(),
            load_start,
            started,
        };
        output::write_json(path, &args, run, measured, last_line)?;
    }
    env.stop().await
}

/// Refuses option values the plans and replica set-up cannot take.
fn check(args: &BenchArgs) -> anyhow::Result<()> {
    anyhow::ensure!((3..=20).contains(&args.tasks), "--tasks must be 3–20");
    anyhow::ensure!((3..=20).contains(&args.chain), "--chain must be 3–20");
    anyhow::ensure!(
        !args.replicas.is_empty() && args.replicas.iter().all(|r| (1..=8).contains(r)),
        "--replicas must be 1–8 each"
    );
    anyhow::ensure!(
        args.workflow_instances == 0 || args.workflow_clients > 0,
        "--workflow-clients must be at least 1"
    );
    Ok(())
}

/// Runs every section in order: the engine ones in the main database, then
/// the streams over the log they wrote, then idle, memory and the long run,
/// each in a fresh database (so no section sees another's rows), the job
/// queue, and last the workflows in the main database (so they change no
/// other section's figures).
async fn measure(env: &BenchEnv, args: &BenchArgs) -> anyhow::Result<Measured> {
    eprintln!("measuring the baseline…");
    let baseline = env.baseline().await?;
    let (throughput, dispatch) = throughput::measure(env, args).await?;
    let chain = throughput::chain(env, args).await?;
    let single = Some(jobqueue::single_latency(env).await?);
    let streams = measure_streams(env, args).await?;
    let idle = measure_idle(&env.server_url, args).await?;
    let memory = measure_memory(&env.server_url, args).await?;
    let long = measure_long(&env.server_url, args).await?;
    let job_queue = jobqueue::measure(&env.server_url, args).await?;
    let workflows = match args.workflow_instances {
        0 => None,
        _ => {
            // The plain engine's tasks/s of this run, beside which the
            // transitions are read: the 1-replica phase's, else the first's.
            let engine = throughput
                .iter()
                .find(|t| t.replicas == 1)
                .or_else(|| throughput.first())
                .map_or((0, f64::NAN), |t| (t.replicas, t.tasks_per_s));
            Some(workflows::measure(env, args, engine).await?)
        }
    };
    Ok(Measured {
        baseline,
        throughput,
        dispatch,
        chain,
        streams,
        idle,
        memory,
        long,
        single,
        job_queue,
        workflows,
    })
}

/// The event-log section ([`streams`]), unless `--stream-clients 0`.
async fn measure_streams(
    env: &BenchEnv,
    args: &BenchArgs,
) -> anyhow::Result<Option<streams::StreamReport>> {
    if args.stream_clients == 0 {
        return Ok(None);
    }
    eprintln!(
        "reading the event log as pages and as {} streams…",
        args.stream_clients
    );
    Ok(Some(
        streams::measure(&env.pool, &env.token, args.stream_clients).await?,
    ))
}

/// The idle-tick section ([`idle`]), unless `--idle-levels` is empty.
async fn measure_idle(
    server_url: &str,
    args: &BenchArgs,
) -> anyhow::Result<Option<idle::IdleReport>> {
    if args.idle_levels.is_empty() {
        return Ok(None);
    }
    eprintln!("timing engine ticks with idle missions…");
    let (levels, budget) = (
        args.idle_levels.clone(),
        Duration::from_secs(args.idle_secs),
    );
    Ok(Some(
        in_fresh_database(server_url, |url| async move {
            idle::measure(&url, &levels, budget).await
        })
        .await?,
    ))
}

/// The memory section ([`memory`]), unless `--live-attempts 0`.
async fn measure_memory(
    server_url: &str,
    args: &BenchArgs,
) -> anyhow::Result<Option<memory::MemoryReport>> {
    if args.live_attempts == 0 {
        return Ok(None);
    }
    eprintln!(
        "measuring coordinator memory with {} live attempts…",
        args.live_attempts
    );
    let target = args.live_attempts;
    Ok(Some(
        in_fresh_database(server_url, |url| async move {
            memory::measure(&url, target).await
        })
        .await?,
    ))
}

/// The long run ([`long`]), unless `--long-secs 0`.
async fn measure_long(
    server_url: &str,
    args: &BenchArgs,
) -> anyhow::Result<Option<long::LongReport>> {
    if args.long_secs == 0 {
        return Ok(None);
    }
    Ok(Some(
        in_fresh_database(server_url, |url| async move { long::run(&url, args).await }).await?,
    ))
}
