//! Coordinator memory with many live attempts.
//!
//! A separate `coordinator serve` process (this same binary) runs against a
//! fresh database, so its resident set holds only the service, not the
//! benchmark. Its agents point at a worker that answers every dispatch with
//! `202 Accepted` and never reports, so every dispatched attempt stays live.
//! The child's `VmRSS` is read from `/proc/<pid>/status` once it is up with
//! its agents registered, and again once the target number of attempts is
//! live and the dispatches have settled.

use std::{
    net::{Ipv4Addr, SocketAddr, TcpListener},
    process::Stdio,
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use futures::{StreamExt, stream};
use serde_json::{Value, json};
use sqlx::PgPool;

use super::{Api, task};
use crate::{
    auth, db,
    worker::simulate::{SimulatedWorker, SimulationConfig},
};

/// The memory phase's results.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct MemoryReport {
    /// The child's RSS once serving, agents registered, nothing running.
    pub rss_idle_kib: u64,
    /// The child's RSS with `half` attempts live.
    pub rss_half_kib: u64,
    /// Live attempts at the halfway measurement.
    pub half: usize,
    /// The child's RSS with `live` attempts live.
    pub rss_live_kib: u64,
    /// Live attempts when measured.
    pub live: usize,
    /// Database connections the child held at that point.
    pub child_connections: i64,
}

impl MemoryReport {
    /// (live − idle) / live attempts.
    pub fn kib_per_attempt(&self) -> f64 {
        (self.rss_live_kib as f64 - self.rss_idle_kib as f64) / self.live.max(1) as f64
    }

    /// (live − half) / (live − half attempts): what one more attempt costs
    /// once the pools and buffers that any load grows are already there.
    pub fn marginal_kib_per_attempt(&self) -> f64 {
        (self.rss_live_kib as f64 - self.rss_half_kib as f64)
            / (self.live.saturating_sub(self.half)).max(1) as f64
    }
}

/// `VmRSS` of a process, in KiB.
fn rss_kib(pid: u32) -> anyhow::Result<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .context("no VmRSS line in /proc/<pid>/status")
}

/// A port nobody listens on right now (the child binds it a moment later).
fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

/// `n` tasks with no dependencies: all ready at once.
fn parallel_plan(n: usize) -> Value {
    let tasks: Vec<Value> = (0..n).map(|i| task(format!("p{i}"), vec![])).collect();
    json!({ "tasks": tasks })
}

async fn live_attempts(pool: &PgPool) -> anyhow::Result<i64> {
    Ok(sqlx::query_scalar(
        "SELECT count(*) FROM task_attempts WHERE status IN ('dispatching', 'running')",
    )
    .fetch_one(pool)
    .await?)
}

/// Creates missions `range` (autonomous, `per_mission` parallel tasks each,
/// `target` tasks in all).
async fn start_missions(
    api: &Api,
    range: std::ops::Range<usize>,
    per_mission: usize,
    target: usize,
) -> anyhow::Result<()> {
    let created: Vec<anyhow::Result<Value>> = stream::iter(range)
        .map(|i| async move {
            // Plans need at least three tasks; a few extra only wait in the queue.
            let plan = parallel_plan(per_mission.min(target - i * per_mission).max(3));
            api.post(
                "/v1/missions",
                json!({"goal": format!("memory mission {i}"), "autonomy": "autonomous", "plan": plan}),
            )
            .await
        })
        .buffer_unordered(8)
        .collect()
        .await;
    created.into_iter().try_for_each(|c| c.map(|_| ()))
}

/// Waits until `want` attempts are live and have reached the worker, then
/// lets the dispatch tasks end and their connections go idle. Returns the
/// live attempts.
async fn wait_live(pool: &PgPool, worker: &SimulatedWorker, want: usize) -> anyhow::Result<usize> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let live = live_attempts(pool).await? as usize;
        if live >= want && worker.stats().received as usize >= want {
            break;
        }
        if Instant::now() > deadline {
            bail!("only {live} attempts live after 120 s (wanted {want})");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    Ok(live_attempts(pool).await? as usize)
}

/// Runs the phase against the fresh, migrated database at `url`.
pub async fn measure(url: &str, target: usize) -> anyhow::Result<MemoryReport> {
    // One connection, so counting the others counts exactly the child's.
    let pool = db::connect(url, 1).await?;
    let token = auth::generate_token();
    auth::ensure_bootstrap(&pool, Some(&token)).await?;
    let worker = SimulatedWorker::spawn(
        SocketAddr::from(([127, 0, 0, 1], 0)),
        SimulationConfig {
            hang_rate: 1.0,
            cost_per_task: 0.0,
            ..SimulationConfig::default()
        },
    )
    .await?;

    let listen = SocketAddr::from(([127, 0, 0, 1], free_port()?));
    let exe = std::env::current_exe().context("locating the coordinator binary")?;
    let mut child = tokio::process::Command::new(exe)
        .args(["serve", "--listen", &listen.to_string()])
        // Nothing may be reclaimed while we measure.
        .args(["--lease-secs", "3600"])
        .env("DATABASE_URL", url)
        .env("COORDINATOR_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .context("starting `coordinator serve`")?;
    let pid = child.id().context("the child exited at once")?;
    let result = async {
        let http = reqwest::Client::new();
        let base = format!("http://{listen}");
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match http.get(format!("{base}/healthz")).send().await {
                Ok(r) if r.status().is_success() => break,
                _ if Instant::now() > deadline => bail!("`coordinator serve` did not come up"),
                _ => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
        let api = Api {
            http,
            base,
            token: token.clone(),
        };
        let agents = target.div_ceil(100).max(1);
        let cap = target.div_ceil(agents);
        for i in 0..agents {
            api.post(
                "/v1/agents",
                json!({"agent_id": format!("mem-{i}"), "role": "bench", "skills": ["research"],
                       "endpoint_url": worker.url(), "max_concurrency": cap}),
            )
            .await?;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let rss_idle_kib = rss_kib(pid)?;

        let per_mission = 20;
        let missions = target.div_ceil(per_mission);
        eprintln!(
            "[memory] child pid {pid}: {rss_idle_kib} KiB idle; starting {missions} missions × {per_mission} parallel tasks in two halves…"
        );
        let halfway = missions / 2;
        start_missions(&api, 0..halfway, per_mission, target).await?;
        let half = wait_live(&pool, &worker, (halfway * per_mission).min(target)).await?;
        let rss_half_kib = rss_kib(pid)?;
        start_missions(&api, halfway..missions, per_mission, target).await?;
        let live = wait_live(&pool, &worker, target).await?;
        let rss_live_kib = rss_kib(pid)?;
        let child_connections: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
        )
        .fetch_one(&pool)
        .await?;
        Ok(MemoryReport {
            rss_idle_kib,
            rss_half_kib,
            half,
            rss_live_kib,
            live,
            child_connections,
        })
    }
    .await;
    // The database is thrown away afterwards, so a hard stop is fine.
    let _ = child.start_kill();
    let _ = child.wait().await;
    pool.close().await;
    result
}
