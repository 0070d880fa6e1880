//! What every measured section of `coordinator bench` shares: the database,
//! the admin token, the instant worker, and in-process replicas started and
//! stopped around a section.

use std::{net::SocketAddr, time::Instant};

use anyhow::Context;
use serde_json::json;
use sqlx::PgPool;
use tokio::{sync::oneshot, task::JoinHandle};
use uuid::Uuid;

use super::{Api, BenchArgs, create_database, median};
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
}

impl Replica {
    /// Starts a replica on a pool of `connections` to `url`.
    pub(crate) async fn start(url: &str, connections: u32) -> anyhow::Result<Replica> {
        let mut settings = Settings::new(SocketAddr::from(([127, 0, 0, 1], 0)));
        // Clients and workers are all on loopback: the per-IP cap is not under test.
        settings.connections.max_connections_per_ip = settings.connections.max_connections;
        let app = Application::build(db::connect(url, connections).await?, settings).await?;
        let base = app.url();
        let (stop, stopped) = oneshot::channel::<()>();
        let handle = tokio::spawn(app.run_until_stopped(async {
            let _ = stopped.await;
        }));
        Ok(Replica { base, handle, stop })
    }

    /// Asks the replica to stop and waits until it has.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(());
        let _ = self.handle.await;
    }

    /// Stops several replicas: all are asked first, so they shut down together.
    pub(crate) async fn stop_all(replicas: Vec<Replica>) {
        let mut handles = Vec::with_capacity(replicas.len());
        for r in replicas {
            let _ = r.stop.send(());
            handles.push(r.handle);
        }
        for h in handles {
            let _ = h.await;
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
    /// `SHOW server_version`.
    pub(crate) postgres_version: String,
    /// The admin token.
    pub(crate) token: String,
    /// The instant worker all agents point at.
    pub(crate) worker: SimulatedWorker,
    /// The client every API call goes through.
    pub(crate) http: reqwest::Client,
}

impl BenchEnv {
    /// Starts (or connects to) PostgreSQL, migrates a database of the
    /// benchmark's own (never the user's data) and starts the worker.
    pub(crate) async fn start(args: &BenchArgs) -> anyhow::Result<BenchEnv> {
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
        let worker = instant_worker().await?;
        Ok(BenchEnv {
            server_url,
            server,
            url,
            pool,
            postgres_version,
            token,
            worker,
            http: reqwest::Client::new(),
        })
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
        self.pool.close().await;
        if let Some(pg) = self.server {
            pg.stop().await?;
        }
        Ok(())
    }
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
