//! `coordinator bench`: the engine benchmark, end to end through HTTP.
//!
//! Against a private PostgreSQL with default durability (or `DATABASE_URL`,
//! in a database of its own), with instant simulated workers, it measures:
//! - throughput: missions of fan-out plans approved at once, for each replica
//!   count (tasks/s from the first approval to the last completion);
//! - dispatch latency: from a parent task's completion commit to its child's
//!   request arriving at the worker (p50/p95/p99);
//! - step overhead of one sequential mission (`--chain` steps);
//! - tick cost with 10, 1,000 and 10,000 idle missions ([`idle`]);
//! - the coordinator's memory with 1,000 live attempts ([`memory`]);
//! - throughput over a long run, per window, and the claim cost ([`long`]).
//!
//! The last three run in databases of their own on the same server, so no
//! phase sees another's rows.
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

use std::{
    net::SocketAddr,
    path::PathBuf,
    time::{Duration, Instant, SystemTime},
};

use anyhow::{Context, bail};
use futures::{StreamExt, stream};
use serde_json::{Value, json};
use sqlx::{Connection, Executor, PgPool};
use uuid::Uuid;

use crate::{
    api::{Application, Settings},
    auth, db,
    local_postgres::LocalPostgres,
    worker::simulate::{SimulatedWorker, SimulationConfig},
};

pub mod idle;
pub mod long;
pub mod memory;
pub mod report;
pub mod streams;

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
    /// POSTs `body`; any non-2xx answer is an error naming the status.
    pub(crate) async fn post(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        let resp = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await?;
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

/// Milliseconds from each parent's completion to its child's arrival at the worker.
async fn dispatch_latencies(
    pool: &PgPool,
    runs: &[Uuid],
    arrivals: &std::collections::HashMap<Uuid, SystemTime>,
) -> anyhow::Result<Vec<f64>> {
    let rows: Vec<(Uuid, time::OffsetDateTime)> = sqlx::query_as(
        "SELECT a.id, p.finished_at
         FROM orchestration_task_dependencies d
         JOIN orchestration_tasks p ON p.id = d.depends_on_task_id
         JOIN task_attempts a ON a.task_id = d.task_id AND a.attempt_number = 1
         WHERE d.run_id = ANY($1) AND p.finished_at IS NOT NULL",
    )
    .bind(runs)
    .fetch_all(pool)
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for (attempt, parent_done) in rows {
        if let Some(arrived) = arrivals.get(&attempt) {
            let arrived = time::OffsetDateTime::from(*arrived);
            out.push((arrived - parent_done).as_seconds_f64() * 1000.0);
        }
    }
    out.sort_by(f64::total_cmp);
    Ok(out)
}

/// Waits until every mission's work is done (approve-mode missions stop at
/// the review gate, which counts as done here).
async fn wait_completed(pool: &PgPool, runs: &[Uuid], limit: Duration) -> anyhow::Result<()> {
    let deadline = Instant::now() + limit;
    loop {
        let (done, failed): (i64, i64) = sqlx::query_as(
            "SELECT count(*) FILTER (WHERE status IN ('completed', 'awaiting_review')),
                    count(*) FILTER (WHERE status IN ('failed', 'cancelled'))
             FROM orchestration_runs WHERE id = ANY($1)",
        )
        .bind(runs)
        .fetch_one(pool)
        .await?;
        if failed > 0 {
            bail!("{failed} benchmark mission(s) failed");
        }
        if done as usize == runs.len() {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "only {done} of {} missions completed within {limit:?}",
                runs.len()
            );
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
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

/// Runs the benchmark and prints its report (or, with `report`, renders the page).
pub async fn run(args: BenchArgs) -> anyhow::Result<()> {
    if let Some(BenchCommand::Report(r)) = &args.command {
        return report::run(r);
    }
    let bench_started = Instant::now();
    let load_start = loadavg();
    anyhow::ensure!((3..=20).contains(&args.tasks), "--tasks must be 3–20");
    anyhow::ensure!((3..=20).contains(&args.chain), "--chain must be 3–20");
    anyhow::ensure!(
        !args.replicas.is_empty() && args.replicas.iter().all(|r| (1..=8).contains(r)),
        "--replicas must be 1–8 each"
    );

    // A database of its own: never the user's data.
    let (server_url, server) = match &args.database_url {
        Some(base) => (base.clone(), None),
        None => {
            let pg = LocalPostgres::start_temporary().await?;
            (pg.url().to_owned(), Some(pg))
        }
    };
    let url = if server.is_some() {
        server_url.clone()
    } else {
        create_database(&server_url).await?.1
    };
    let pool = db::connect(&url, 10).await?;
    db::migrate(&pool).await?;
    let postgres_version: String = sqlx::query_scalar("SHOW server_version")
        .fetch_one(&pool)
        .await?;
    let token = auth::generate_token();
    auth::ensure_bootstrap(&pool, Some(&token)).await?;

    let worker = SimulatedWorker::spawn(
        SocketAddr::from(([127, 0, 0, 1], 0)),
        SimulationConfig {
            latency_ms: 0,
            inline: true,
            cost_per_task: 0.0,
            ..SimulationConfig::default()
        },
    )
    .await?;
    let http = reqwest::Client::new();

    eprintln!("measuring the baseline…");
    // Baseline: one committed insert + one HTTP round trip to the worker.
    let mut commits = Vec::new();
    let mut rtts = Vec::new();
    for i in 0..200 {
        let t = Instant::now();
        sqlx::query("INSERT INTO workspaces (id, name) VALUES ($1, $2)")
            .bind(Uuid::now_v7())
            .bind(format!("bench-baseline-{i}"))
            .execute(&pool)
            .await?;
        commits.push(t.elapsed().as_secs_f64() * 1000.0);
        let t = Instant::now();
        http.get(format!("{}/healthz", worker.url()))
            .send()
            .await?
            .error_for_status()?;
        rtts.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let commit_ms = median(commits);
    let http_ms = median(rtts);
    let baseline_ms = commit_ms + http_ms;

    let mut throughput: Vec<(usize, f64, f64)> = Vec::new();
    let mut latencies = Vec::new();
    let mut registered = false;
    for &replicas in &args.replicas {
        let mut apps = Vec::new();
        let mut stops = Vec::new();
        for _ in 0..replicas {
            let app_pool = db::connect(&url, 20).await?;
            let app = Application::build(
                app_pool,
                Settings::new(SocketAddr::from(([127, 0, 0, 1], 0))),
            )
            .await?;
            let base = app.url();
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            apps.push((
                base,
                tokio::spawn(app.run_until_stopped(async {
                    let _ = rx.await;
                })),
            ));
            stops.push(tx);
        }
        let api = Api {
            http: http.clone(),
            base: apps[0].0.clone(),
            token: token.clone(),
        };
        if !registered {
            for i in 0..args.agents {
                api.post(
                    "/v1/agents",
                    json!({"agent_id": format!("bench-{i}"), "role": "bench", "skills": ["research"],
                           "endpoint_url": worker.url(), "max_concurrency": args.agent_cap}),
                )
                .await?;
            }
            registered = true;
        }
        eprintln!(
            "[{replicas} replica(s)] creating {} missions…",
            args.missions
        );
        let plan = fanout_plan(args.tasks);
        let ids: Vec<Uuid> = stream::iter(0..args.missions)
            .map(|i| {
                let (api, plan) = (&api, plan.clone());
                async move {
                    let m = api
                        .post(
                            "/v1/missions",
                            json!({"goal": format!("bench mission {i}"), "plan": plan}),
                        )
                        .await?;
                    m["id"]
                        .as_str()
                        .and_then(|s| s.parse::<Uuid>().ok())
                        .context("mission id")
                }
            })
            .buffer_unordered(args.client_concurrency)
            .collect::<Vec<anyhow::Result<Uuid>>>()
            .await
            .into_iter()
            .collect::<anyhow::Result<_>>()?;
        eprintln!("[{replicas} replica(s)] approving and running them…");
        let started = Instant::now();
        let approvals: Vec<anyhow::Result<Value>> = stream::iter(ids.iter().enumerate())
            .map(|(i, id)| {
                // Spread approvals over the replicas like a load balancer would.
                let base = apps[i % apps.len()].0.clone();
                let api = Api {
                    http: http.clone(),
                    base,
                    token: token.clone(),
                };
                async move {
                    api.post(&format!("/v1/missions/{id}/approve"), json!({}))
                        .await
                }
            })
            .buffer_unordered(args.client_concurrency)
            .collect()
            .await;
        for a in approvals {
            a?;
        }
        wait_completed(&pool, &ids, Duration::from_secs(600)).await?;
        let elapsed = started.elapsed().as_secs_f64();
        throughput.push((replicas, (ids.len() * args.tasks) as f64 / elapsed, elapsed));
        if replicas == args.replicas[0] {
            latencies = dispatch_latencies(&pool, &ids, &worker.arrivals()).await?;
        }
        for s in stops {
            let _ = s.send(());
        }
        for (_, handle) in apps {
            let _ = handle.await;
        }
    }

    eprintln!("running a {}-step sequential mission…", args.chain);
    // Step overhead: one sequential mission on one replica.
    let app = Application::build(
        db::connect(&url, 10).await?,
        Settings::new(SocketAddr::from(([127, 0, 0, 1], 0))),
    )
    .await?;
    let api = Api {
        http: http.clone(),
        base: app.url(),
        token: token.clone(),
    };
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let handle = tokio::spawn(app.run_until_stopped(async {
        let _ = rx.await;
    }));
    let m = api
        .post("/v1/missions", json!({"goal": "bench chain", "autonomy": "autonomous", "plan": chain_plan(args.chain)}))
        .await?;
    let chain_id: Uuid = m["id"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .context("mission id")?;
    wait_completed(&pool, &[chain_id], Duration::from_secs(120)).await?;
    let (span_ms,): (f64,) = sqlx::query_as(
        "SELECT extract(epoch FROM max(finished_at) - min(started_at))::float8 * 1000 FROM orchestration_tasks WHERE run_id = $1",
    )
    .bind(chain_id)
    .fetch_one(&pool)
    .await?;
    let step_overhead_ms = span_ms / args.chain as f64;
    let chain_latencies = dispatch_latencies(&pool, &[chain_id], &worker.arrivals()).await?;
    let _ = tx.send(());
    let _ = handle.await;

    let streams = if args.stream_clients == 0 {
        None
    } else {
        eprintln!(
            "reading the event log as pages and as {} streams…",
            args.stream_clients
        );
        Some(streams::measure(&pool, &token, args.stream_clients).await?)
    };

    let idle = if args.idle_levels.is_empty() {
        None
    } else {
        eprintln!("timing engine ticks with idle missions…");
        let (levels, budget) = (
            args.idle_levels.clone(),
            Duration::from_secs(args.idle_secs),
        );
        Some(
            in_fresh_database(&server_url, |url| async move {
                idle::measure(&url, &levels, budget).await
            })
            .await?,
        )
    };
    let memory = if args.live_attempts == 0 {
        None
    } else {
        eprintln!(
            "measuring coordinator memory with {} live attempts…",
            args.live_attempts
        );
        let target = args.live_attempts;
        Some(
            in_fresh_database(&server_url, |url| async move {
                memory::measure(&url, target).await
            })
            .await?,
        )
    };
    let long = if args.long_secs == 0 {
        None
    } else {
        let args = &args;
        Some(
            in_fresh_database(
                &server_url,
                |url| async move { long::run(&url, args).await },
            )
            .await?,
        )
    };

    let p = |v: &[f64], q| percentile(v, q);
    let (p50, p95, p99) = (
        p(&latencies, 50.0),
        p(&latencies, 95.0),
        p(&latencies, 99.0),
    );
    println!(
        "coordinator bench: {} missions × {} tasks per phase, {} agents × cap {}, instant workers",
        args.missions, args.tasks, args.agents, args.agent_cap
    );
    println!(
        "baseline: commit {commit_ms:.3} ms + worker HTTP round trip {http_ms:.3} ms = {baseline_ms:.3} ms"
    );
    for (r, tps, secs) in &throughput {
        println!("throughput, {r} replica(s): {tps:.0} tasks/s ({secs:.2} s)");
    }
    let throughput: Vec<report::Throughput> = throughput
        .iter()
        .map(|&(replicas, tasks_per_s, secs)| report::Throughput {
            replicas,
            tasks_per_s,
            secs,
        })
        .collect();
    let scaling = report::replica_scaling(&throughput);
    let reference = scaling.first().map_or(1, |s| s.reference);
    for s in scaling.iter().filter(|s| s.replicas != reference) {
        println!(
            "replica scaling, {} replicas: {:.2}× the throughput of {reference} ({:.2} per-replica efficiency)",
            s.replicas, s.speedup, s.efficiency
        );
    }
    println!(
        "dispatch latency (parent commit → child at worker), {} edges: p50 {p50:.2} ms ({:.1}× baseline), p95 {p95:.2} ms, p99 {p99:.2} ms",
        latencies.len(),
        p50 / baseline_ms
    );
    println!(
        "{}-step sequential mission: {step_overhead_ms:.2} ms per step ({:.1}× baseline); chain dispatch p50 {:.2} ms",
        args.chain,
        step_overhead_ms / baseline_ms,
        p(&chain_latencies, 50.0)
    );
    let mut line = vec![format!(
        "tasks_per_s={:.0}",
        throughput.first().map_or(f64::NAN, |t| t.tasks_per_s)
    )];
    for t in &throughput {
        line.push(format!("tasks_per_s_{}r={:.0}", t.replicas, t.tasks_per_s));
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
    if let Some(st) = &streams {
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
    if let Some(idle) = &idle {
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
    if let Some(m) = &memory {
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
    if let Some(l) = &long {
        for (i, w) in l.windows.iter().enumerate() {
            println!(
                "long run, window {} ({} s): {:.0} tasks/s; claim probe {:.0} µs, {} buffers; queue {} KiB, {} dead rows, {} autovacuums; {} tasks stored",
                i + 1,
                l.window.as_secs(),
                w.tasks_per_s,
                w.claim_us,
                w.claim_buffers,
                w.queue_kib,
                w.queue_dead,
                w.queue_vacuums,
                w.tasks_stored
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
    let last_line = line.join(" ");
    println!("{last_line}");

    if let Some(path) = &args.json_out {
        let figures = report::EngineFigures {
            settings: report::RunSettings {
                missions: args.missions,
                tasks: args.tasks,
                chain: args.chain,
                agents: args.agents,
                agent_cap: args.agent_cap,
                long_secs: args.long_secs,
                long_inflight: args.long_inflight,
                idle_secs: args.idle_secs,
            },
            postgres_version,
            temporary_postgres: server.is_some(),
            loadavg: (load_start, loadavg()),
            elapsed_secs: bench_started.elapsed().as_secs_f64(),
            baseline: report::Baseline {
                commit_ms,
                http_ms,
                total_ms: baseline_ms,
            },
            throughput,
            dispatch: report::Dispatch {
                edges: latencies.len(),
                p50_ms: p50,
                p95_ms: p95,
                p99_ms: p99,
            },
            chain: report::Chain {
                steps: args.chain,
                step_overhead_ms,
                dispatch_p50_ms: p(&chain_latencies, 50.0),
            },
            streams,
            idle,
            memory,
            long,
            last_line,
        };
        std::fs::write(path, serde_json::to_vec_pretty(&figures)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }

    drop(worker);
    pool.close().await;
    if let Some(pg) = server {
        pg.stop().await?;
    }
    Ok(())
}
