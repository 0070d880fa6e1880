//! Throughput over a long run: does it decay as history piles up?
//!
//! One replica, instant workers, a fresh database. Missions (autonomous
//! fan-out plans) are fed continuously so that a fixed number are in flight;
//! completed tasks are counted per window afterwards from their
//! `finished_at`, so counting costs the run nothing. At the end of every
//! window the ready-queue claim query is probed (the engine's query, read
//! only: without `FOR UPDATE`, so it never holds back a claim) for its time
//! (fastest of seven) and the buffers it touches, with the queue's size on
//! disk and its dead rows: a claim that
//! has to step over dead index entries left by the churn gets slower here
//! first. The server's checkpoints and autovacuum runs so far, and the
//! tables autovacuum is working on at that moment, are read with them.

use std::time::{Duration, Instant};

use futures::{StreamExt, stream};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use super::{
    Api, BenchArgs,
    env::{Replica, instant_worker, mission_id},
    fanout_plan,
};
use crate::{auth, db, worker::simulate::SimulatedWorker};

/// One window's figures.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Window {
    /// Tasks completed per second in the window.
    pub tasks_per_s: f64,
    /// Time of the claim probe at the window's end (fastest of 7), µs.
    pub claim_us: f64,
    /// Buffers the claim probe touched.
    pub claim_buffers: i64,
    /// `task_queue` with its indexes, KiB.
    pub queue_kib: i64,
    /// Tasks stored in total (history) at the window's end (statistics).
    pub tasks_stored: i64,
    /// Dead rows in `task_queue` (statistics, approximate).
    pub queue_dead: i64,
    /// Autovacuum runs on `task_queue` so far.
    pub queue_vacuums: i64,
    /// Checkpoints the server ran so far (timed and requested).
    #[serde(default)]
    pub checkpoints: i64,
    /// Autovacuum runs on all the database's tables so far.
    #[serde(default)]
    pub vacuums: i64,
    /// The tables autovacuum workers were working on at the probe.
    #[serde(default)]
    pub vacuuming: Vec<String>,
}

/// The long run's results.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct LongReport {
    /// Full windows, in order.
    pub windows: Vec<Window>,
    /// Window length.
    pub window: Duration,
    /// The claim probe when the windows start (µs, buffers).
    pub claim_at_start: (f64, i64),
}

impl LongReport {
    /// Last window's throughput over the first's.
    pub fn decay_ratio(&self) -> f64 {
        match (self.windows.first(), self.windows.last()) {
            (Some(f), Some(l)) => l.tasks_per_s / f.tasks_per_s,
            _ => f64::NAN,
        }
    }
}

/// The engine's claim query (`engine::dispatch::claim_batch`) minus `FOR
/// UPDATE … SKIP LOCKED`, with the engine's window of 4 × batch.
const CLAIM_PROBE: &str = "SELECT q.task_id, q.run_id FROM task_queue q
     JOIN orchestration_runs r ON r.id = q.run_id AND r.status = 'executing'
     WHERE q.ready_at <= now()
     ORDER BY q.priority DESC, q.ready_at, q.task_id
     LIMIT 128";

/// Probes the claim query and the queue's state.
async fn probe(pool: &PgPool) -> anyhow::Result<Window> {
    // The fastest of seven: the engine runs beside the probe on the same
    // cores, and the fastest run is the one least disturbed by it.
    let mut fastest = f64::INFINITY;
    for _ in 0..7 {
        let t = Instant::now();
        sqlx::query(CLAIM_PROBE).fetch_all(pool).await?;
        fastest = fastest.min(t.elapsed().as_secs_f64() * 1e6);
    }
    let plan: Value = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) {CLAIM_PROBE}"
    )))
    .fetch_one(pool)
    .await?;
    let node = &plan[0]["Plan"];
    let buffers = node["Shared Hit Blocks"].as_i64().unwrap_or(0)
        + node["Shared Read Blocks"].as_i64().unwrap_or(0);
    let (queue_bytes, tasks, dead, vacuums): (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT pg_total_relation_size('task_queue'),
                (SELECT n_live_tup FROM pg_stat_user_tables WHERE relname = 'orchestration_tasks'),
                n_dead_tup, autovacuum_count
         FROM pg_stat_user_tables WHERE relname = 'task_queue'",
    )
    .fetch_one(pool)
    .await?;
    // What the server does beside the engine: a step in throughput that
    // the claim probe does not explain shows up here.
    let (checkpoints, all_vacuums, vacuuming): (i64, i64, Vec<String>) = sqlx::query_as(
        "SELECT (SELECT checkpoints_timed + checkpoints_req FROM pg_stat_bgwriter),
                (SELECT COALESCE(sum(autovacuum_count), 0)::bigint FROM pg_stat_user_tables),
                ARRAY(SELECT regexp_replace(query, '^autovacuum: (VACUUM |ANALYZE )+(public\\.)?', '')
                      FROM pg_stat_activity
                      WHERE backend_type = 'autovacuum worker' AND datname = current_database()
                      ORDER BY 1)",
    )
    .fetch_one(pool)
    .await?;
    Ok(Window {
        tasks_per_s: f64::NAN,
        claim_us: fastest,
        claim_buffers: buffers,
        queue_kib: queue_bytes / 1024,
        tasks_stored: tasks,
        queue_dead: dead,
        queue_vacuums: vacuums,
        checkpoints,
        vacuums: all_vacuums,
        vacuuming,
    })
}

/// Which of `ids` are still running. Looks only at the bench's in-flight
/// missions by primary key: counting live missions over the whole table
/// would scan the growing history every few milliseconds and make the
/// benchmark itself the cause of any decay.
async fn still_live(pool: &PgPool, ids: &[Uuid]) -> anyhow::Result<Vec<Uuid>> {
    Ok(sqlx::query_scalar(
        "SELECT id FROM orchestration_runs WHERE id = ANY($1) AND status IN ('planning', 'executing')",
    )
    .bind(ids)
    .fetch_all(pool)
    .await?)
}

/// Runs for `--long-secs` (after a short warm-up) in the fresh, migrated database at `url`.
pub async fn run(url: &str, args: &BenchArgs) -> anyhow::Result<LongReport> {
    let window = Duration::from_secs(args.long_window_secs.max(1));
    let windows = (args.long_secs / window.as_secs()).max(1) as usize;
    let pool = db::connect(url, 4).await?;
    let token = auth::generate_token();
    auth::ensure_bootstrap(&pool, Some(&token)).await?;
    let worker = instant_worker().await?;
    let replica = Replica::start(url, 20).await?;
    let api = Api {
        http: reqwest::Client::new(),
        base: replica.base.clone(),
        token,
    };
    // The replica is stopped and the pool closed whatever the run did.
    let result = async {
        register_agents(&api, &worker, args).await?;
        let fed = feed(&pool, &api, args, window, windows).await?;
        tally(&pool, fed, window, windows).await
    }
    .await;
    replica.stop().await;
    pool.close().await;
    result
}

/// Registers `--agents` agents (`long-N`) at the instant worker.
async fn register_agents(
    api: &Api,
    worker: &SimulatedWorker,
    args: &BenchArgs,
) -> anyhow::Result<()> {
    for i in 0..args.agents {
        api.post(
            "/v1/agents",
            json!({"agent_id": format!("long-{i}"), "role": "bench", "skills": ["research"],
                   "endpoint_url": worker.url(), "max_concurrency": args.agent_cap}),
        )
        .await?;
    }
    Ok(())
}

/// What feeding recorded: when the first window began (database clock), and
/// a probe at the start of the windows and at the end of each.
struct Fed {
    t0: time::OffsetDateTime,
    samples: Vec<Window>,
}

/// Keeps `--long-inflight` missions in flight through a warm-up and
/// `windows` windows, probing the claim query at every window boundary.
async fn feed(
    pool: &PgPool,
    api: &Api,
    args: &BenchArgs,
    window: Duration,
    windows: usize,
) -> anyhow::Result<Fed> {
    let plan = fanout_plan(args.tasks);
    let warmup = Duration::from_secs(3);
    let total = warmup + window * windows as u32;
    eprintln!(
        "[long] feeding {} missions in flight for {} s ({windows} windows of {} s after a {} s warm-up)…",
        args.long_inflight,
        total.as_secs(),
        window.as_secs(),
        warmup.as_secs()
    );
    let started = Instant::now();
    let mut t0: Option<time::OffsetDateTime> = None;
    let mut samples: Vec<Window> = Vec::new();
    let mut next_mark = warmup;
    let mut in_flight: Vec<Uuid> = Vec::new();
    while started.elapsed() < total {
        if started.elapsed() >= next_mark {
            if t0.is_none() {
                t0 = Some(sqlx::query_scalar("SELECT now()").fetch_one(pool).await?);
                samples.push(probe(pool).await?);
            } else {
                samples.push(probe(pool).await?);
                eprintln!(
                    "[long] window {}: claim probe {:.0} µs",
                    samples.len() - 1,
                    samples.last().map_or(f64::NAN, |s| s.claim_us)
                );
            }
            next_mark += window;
        }
        in_flight = still_live(pool, &in_flight).await?;
        let missing = args.long_inflight.saturating_sub(in_flight.len());
        if missing == 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
            continue;
        }
        let created = create_missions(api, &plan, missing, args.client_concurrency).await?;
        in_flight.extend(created);
    }
    samples.push(probe(pool).await?);
    let t0 = t0.ok_or_else(|| anyhow::anyhow!("the long run ended before its warm-up"))?;
    Ok(Fed { t0, samples })
}

/// Creates `count` autonomous missions of `plan`, `concurrency` at a time.
async fn create_missions(
    api: &Api,
    plan: &Value,
    count: usize,
    concurrency: usize,
) -> anyhow::Result<Vec<Uuid>> {
    let results: Vec<anyhow::Result<Value>> = stream::iter(0..count)
        .map(|_| {
            let plan = plan.clone();
            async move {
                api.post(
                    "/v1/missions",
                    json!({"goal": "long mission", "autonomy": "autonomous", "plan": plan}),
                )
                .await
            }
        })
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let mut ids = Vec::with_capacity(count);
    for r in results {
        ids.push(mission_id(&r?)?);
    }
    Ok(ids)
}

/// Checks that no mission failed and counts the tasks completed in each
/// window from their `finished_at` (so counting cost the run nothing).
async fn tally(
    pool: &PgPool,
    fed: Fed,
    window: Duration,
    windows: usize,
) -> anyhow::Result<LongReport> {
    let failed: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM orchestration_runs WHERE status IN ('failed', 'cancelled')",
    )
    .fetch_one(pool)
    .await?;
    anyhow::ensure!(failed == 0, "{failed} long-run mission(s) failed");
    let counts: Vec<(i32, i64)> = sqlx::query_as(
        "SELECT floor(extract(epoch FROM finished_at - $1) / $2)::int AS w, count(*)
         FROM orchestration_tasks
         WHERE status = 'succeeded' AND finished_at >= $1
         GROUP BY w ORDER BY w",
    )
    .bind(fed.t0)
    .bind(window.as_secs_f64())
    .fetch_all(pool)
    .await?;
    let per_window = |w: usize| {
        counts
            .iter()
            .find(|(i, _)| *i as usize == w)
            .map_or(0, |c| c.1)
    };
    let claim_at_start = fed
        .samples
        .first()
        .map_or((f64::NAN, 0), |s| (s.claim_us, s.claim_buffers));
    let mut samples = fed.samples.into_iter().skip(1);
    let windows = (0..windows)
        .map(|w| Window {
            tasks_per_s: per_window(w) as f64 / window.as_secs_f64(),
            ..samples.next().unwrap_or(Window {
                tasks_per_s: f64::NAN,
                claim_us: f64::NAN,
                claim_buffers: 0,
                queue_kib: 0,
                tasks_stored: 0,
                queue_dead: 0,
                queue_vacuums: 0,
                checkpoints: 0,
                vacuums: 0,
                vacuuming: Vec::new(),
            })
        })
        .collect();
    Ok(LongReport {
        windows,
        window,
        claim_at_start,
    })
}
