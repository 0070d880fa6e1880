//! What every measured section of `coordinator bench` shares: the database,
//! the admin token, the instant worker, and in-process replicas started and
//! stopped around a section.

use std::{
    net::SocketAddr,
    time::{Duration, Instant},
};

use anyhow::Context;
use futures::{StreamExt, stream};
use serde_json::json;
use sqlx::PgPool;
use tokio::{sync::oneshot, task::JoinHandle};
use uuid::Uuid;

use super::{
    Api, BenchArgs, create_database, median,
    observe::{COMPLETION_SQL, Completion, Observer},
};
use crate::{
    api::{Application, Settings},
    auth, db,
    local_postgres::LocalPostgres,
    worker::simulate::{SimulatedWorker, SimulationConfig},
};

/// The simulated worker every benchmark phase dispatches to: it answers at
/// once, inline, at no cost, so the figures are the coordinator's own.
pub(crate) async fn instant_worker() -> anyhow::Result<SimulatedWorker> {
    SimulatedWorker::spawn(
        SocketAddr::from(([127, 0, 0, 1], 0)),
        SimulationConfig {
            latency_ms: 0,
            inline: true,
            cost_per_task: 0.0,
            ..SimulationConfig::default()
        },
    )
    .await
}

/// One in-process replica serving on a free local port until [`Replica::stop`].
pub(crate) struct Replica {
    /// Its base URL.
    pub(crate) base: String,
    handle: JoinHandle<anyhow::Result<()>>,
    stop: oneshot::Sender<()>,
    /// Its pool, closed at stop: a stopped replica's pool otherwise stays
    /// open (whatever still holds a handle keeps its connections), and the
    /// phases' replicas together would exhaust a stock server.
    pool: PgPool,
}

impl Replica {
    /// Starts a replica on a pool of `connections` to `url`.
    pub(crate) async fn start(url: &str, connections: u32) -> anyhow::Result<Replica> {
        let mut settings = Settings::new(SocketAddr::from(([127, 0, 0, 1], 0)));
        // Clients and workers are all on loopback: the per-IP cap is not under test.
        settings.connections.max_connections_per_ip = settings.connections.max_connections;
        let pool = db::connect(url, connections).await?;
        let app = Application::build(pool.clone(), settings).await?;
        let base = app.url();
        let (stop, stopped) = oneshot::channel::<()>();
        let handle = tokio::spawn(app.run_until_stopped(async {
            let _ = stopped.await;
        }));
        Ok(Replica {
            base,
            handle,
            stop,
            pool,
        })
    }

    /// Asks the replica to stop and waits until it has.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.handle.await;
        self.pool.close().await;
    }

    /// Stops several replicas: all are asked first, so they shut down together.
    pub(crate) async fn stop_all(replicas: Vec<Replica>) {
        let mut handles = Vec::with_capacity(replicas.len());
        for r in replicas {
            let _ = r.stop.send(());
            handles.push((r.handle, r.pool));
        }
        for (h, pool) in handles {
            let _ = h.await;
            pool.close().await;
        }
    }
}

/// The shared setup of a benchmark run (a context instead of long argument lists).
pub(crate) struct BenchEnv {
    /// The PostgreSQL server; the idle, memory and long phases create
    /// databases of their own on it.
    pub(crate) server_url: String,
    /// The private PostgreSQL, when no `--database-url` was given.
    pub(crate) server: Option<LocalPostgres>,
    /// The benchmark's main database.
    pub(crate) url: String,
    /// A pool on [`Self::url`].
    pub(crate) pool: PgPool,
    /// One connection to [`Self::server_url`]'s own database, for reading
    /// server-wide counters outside the bench database.
    pub(crate) server_pool: PgPool,
    /// `SHOW server_version`.
    pub(crate) postgres_version: String,
    /// The admin token.
    pub(crate) token: String,
    /// The instant worker all agents point at.
    pub(crate) worker: SimulatedWorker,
    /// The client every API call goes through.
    pub(crate) http: reqwest::Client,
    /// Counts statements, commits and lock waiters of the throughput phases.
    pub(crate) observer: Option<Observer>,
    /// The server's `max_connections` minus `superuser_reserved_connections`.
    pub(crate) usable_connections: u32,
}

impl BenchEnv {
    /// Starts (or connects to) PostgreSQL, migrates a database of the
    /// benchmark's own (never the user's data) and starts the worker.
    pub(crate) async fn start(args: &BenchArgs) -> anyhow::Result<BenchEnv> {
        let (server_url, server) = match &args.database_url {
            Some(base) => (base.clone(), None),
            None => {
                let pg = LocalPostgres::start_temporary_for_bench().await?;
                (pg.url().to_owned(), Some(pg))
            }
        };
        // Always a database of its own, so the observer can read the
        // server-wide views from the server's database without its reads
        // landing in the bench database's counters.
        let url = create_database(&server_url).await?.1;
        let pool = db::connect(&url, POOL).await?;
        let server_pool = db::connect(&server_url, 1).await?;
        db::migrate(&pool).await?;
        let postgres_version: String = sqlx::query_scalar("SHOW server_version")
            .fetch_one(&pool)
            .await?;
        let token = auth::generate_token();
        auth::ensure_bootstrap(&pool, Some(&token)).await?;
        let worker = instant_worker().await?;
        let (max, reserved) = db::connection_limits(&pool).await?;
        let usable_connections = max.saturating_sub(reserved);
        let observer = match Observer::start(&server_url, &url).await {
            Ok(o) => {
                o.self_check(&pool).await?;
                Some(o)
            }
            Err(e) => {
                eprintln!("note: no statement, commit or lock counts: {e:#}");
                None
            }
        };
        Ok(BenchEnv {
            server_url,
            server,
            url,
            pool,
            server_pool,
            postgres_version,
            token,
            worker,
            http: reqwest::Client::new(),
            observer,
            usable_connections,
        })
    }

    /// The pool size of each of `replicas` in-process replicas: an equal
    /// share of the server's connections after the bench's own
    /// ([`BENCH_CONNECTIONS`]), at most the service's default pool and at
    /// least 2, so the phases fit a stock server (`max_connections = 100`).
    /// Each replica also holds one listener connection outside its pool.
    /// (`db::pool_size_for` sizes a served replica the same way, but keeps
    /// only 10 connections aside, fewer than the bench holds itself.)
    pub(crate) fn replica_pool(&self, replicas: usize) -> u32 {
        replica_pool_size(self.usable_connections, replicas)
    }

    /// An admin client of the replica at `base`.
    pub(crate) fn api(&self, base: String) -> Api {
        Api {
            http: self.http.clone(),
            base,
            token: self.token.clone(),
        }
    }

    /// Registers `--agents` agents (`bench-N`) at the instant worker.
    pub(crate) async fn register_agents(&self, api: &Api, args: &BenchArgs) -> anyhow::Result<()> {
        for i in 0..args.agents {
            api.post(
                "/v1/agents",
                json!({"agent_id": format!("bench-{i}"), "role": "bench", "skills": ["research"],
                       "endpoint_url": self.worker.url(), "max_concurrency": args.agent_cap}),
            )
            .await?;
        }
        Ok(())
    }

    /// The baseline: medians of one committed insert and one HTTP round trip
    /// to the worker, the least one dispatch step can cost.
    pub(crate) async fn baseline(&self) -> anyhow::Result<Baseline> {
        let mut commits = Vec::new();
        let mut rtts = Vec::new();
        for i in 0..200 {
            let t = Instant::now();
            sqlx::query("INSERT INTO workspaces (id, name) VALUES ($1, $2)")
                .bind(Uuid::now_v7())
                .bind(format!("bench-baseline-{i}"))
                .execute(&self.pool)
                .await?;
            commits.push(t.elapsed().as_secs_f64() * 1000.0);
            let t = Instant::now();
            self.http
                .get(format!("{}/healthz", self.worker.url()))
                .send()
                .await?
                .error_for_status()?;
            rtts.push(t.elapsed().as_secs_f64() * 1000.0);
        }
        let commit_ms = median(commits);
        let http_ms = median(rtts);
        Ok(Baseline {
            commit_ms,
            http_ms,
            total_ms: commit_ms + http_ms,
        })
    }

    /// Stops the worker, closes the pool and stops the private PostgreSQL.
    pub(crate) async fn stop(self) -> anyhow::Result<()> {
        drop(self.worker);
        if let Some(o) = self.observer {
            o.stop(&self.url).await;
        }
        self.pool.close().await;
        self.server_pool.close().await;
        if let Some(pg) = self.server {
            pg.stop().await?;
        }
        Ok(())
    }
}

/// Connections of the bench's main pool.
const POOL: u32 = 10;

/// Connections the bench keeps for itself besides the replicas: its main
/// pool, the observer's three (admin, poller, sampler), a phase's fresh
/// database and spare for `psql`.
pub(crate) const BENCH_CONNECTIONS: u32 = POOL + 3 + 1 + 6;

/// See [`BenchEnv::replica_pool`]: `usable` is `max_connections` minus the
/// superuser reserve; each replica's listener connection is counted too.
pub(crate) fn replica_pool_size(usable: u32, replicas: usize) -> u32 {
    let replicas = replicas.max(1) as u32;
    (usable.saturating_sub(BENCH_CONNECTIONS) / replicas)
        .saturating_sub(1)
        .clamp(2, db::DEFAULT_POOL_SIZE)
}

/// Reads a mission id out of a create-mission answer.
pub(crate) fn mission_id(m: &serde_json::Value) -> anyhow::Result<Uuid> {
    m["id"]
        .as_str()
        .and_then(|s| s.parse::<Uuid>().ok())
        .context("mission id")
}

/// The in-run baseline: one committed insert plus one HTTP round trip.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Baseline {
    /// Median committed insert, ms.
    pub commit_ms: f64,
    /// Median HTTP round trip to the worker, ms.
    pub http_ms: f64,
    /// Their sum: the least one dispatch step can cost, ms.
    pub total_ms: f64,
}

/// Waits until every mission's work is done (approve-mode missions stop at
/// the review gate, which counts as done here).
pub(crate) async fn wait_completed(
    pool: &PgPool,
    runs: &[Uuid],
    limit: Duration,
) -> anyhow::Result<()> {
    let wait = Completion::new(runs.len(), limit);
    loop {
        let counts: (i64, i64) = sqlx::query_as(COMPLETION_SQL)
            .bind(runs)
            .fetch_one(pool)
            .await?;
        if wait.done(counts)? {
            return Ok(());
        }
        tokio::time::sleep(Completion::POLL).await;
    }
}

/// Opens the replicas' pool connections with cheap reads, as the creating
/// of missions used to, so the measured part does not pay for connecting.
pub(super) async fn warm_up(env: &BenchEnv, replicas: &[Replica]) -> anyhow::Result<()> {
    let per = env.replica_pool(replicas.len()) as usize;
    let reads: Vec<anyhow::Result<()>> = stream::iter(0..per * replicas.len())
        .map(|i| {
            let api = env.api(replicas[i % replicas.len()].base.clone());
            async move {
                api.http
                    .get(format!("{}/v1/agents", api.base))
                    .bearer_auth(&api.token)
                    .send()
                    .await?
                    .error_for_status()?;
                Ok(())
            }
        })
        .buffer_unordered(per * replicas.len())
        .collect()
        .await;
    reads.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replica_pools_fit_a_stock_server_with_the_bench_beside_them() {
        // Stock PostgreSQL: 100 connections, 3 reserved for superusers.
        for replicas in 1..=8 {
            let size = replica_pool_size(97, replicas);
            let total = (size + 1) * replicas as u32 + BENCH_CONNECTIONS;
            assert!(total <= 97, "{replicas} replicas × {size}: {total}");
            assert!(size >= 2);
        }
        assert_eq!(replica_pool_size(97, 1), db::DEFAULT_POOL_SIZE);
        assert_eq!(replica_pool_size(297, 3), db::DEFAULT_POOL_SIZE);
        assert_eq!(replica_pool_size(10, 2), 2);
    }
}
