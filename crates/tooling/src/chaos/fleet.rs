//! The coordinator replicas of a chaos run: real `coordinator serve`
//! processes (this same binary), one port each, killed with SIGKILL and
//! restarted on the same port.

use std::{
    net::{Ipv4Addr, SocketAddr, TcpListener},
    path::{Path, PathBuf},
    process::Stdio,
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use tokio::process::{Child, Command};

/// How long a replica may take to answer `/healthz` after a start.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// A replica that exited on its own is not restarted sooner than this after
/// its last start (it may be failing to reach a restarting PostgreSQL).
const REVIVE_PAUSE: Duration = Duration::from_secs(1);

/// What every replica is started with.
#[derive(Debug, Clone)]
pub struct ReplicaConfig {
    /// The binary (`std::env::current_exe()`).
    pub exe: PathBuf,
    /// The database.
    pub database_url: String,
    /// `--lease-secs`.
    pub lease_secs: u64,
    /// Where each replica's stderr goes (`replica-N.log`).
    pub log_dir: PathBuf,
}

struct Replica {
    listen: SocketAddr,
    child: Option<Child>,
    started: Instant,
}

/// The running replicas.
pub struct Fleet {
    config: ReplicaConfig,
    replicas: Vec<Replica>,
    /// Replicas that exited without being killed, and were restarted.
    pub crashes: u64,
    http: reqwest::Client,
}

/// A port nobody listens on right now (the replica binds it a moment later).
fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

fn spawn(config: &ReplicaConfig, index: usize, listen: SocketAddr) -> anyhow::Result<Child> {
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(config.log_dir.join(format!("replica-{index}.log")))
        .context("opening a replica log")?;
    let mut cmd = Command::new(&config.exe);
    cmd.args(["serve", "--listen", &listen.to_string()])
        // Short timings so hung and orphaned attempts recover within the run.
        .args(["--lease-secs", &config.lease_secs.to_string()])
        .args([
            "--tick-ms",
            "200",
            "--retry-base-ms",
            "200",
            "--retry-cap-ms",
            "2000",
        ])
        .args(["--pool-size", "8"])
        // The feeder polls hundreds of missions through one token: the run
        // tests the engine's invariants, not the API's rate limit.
        .args(["--rate-limit-per-sec", "0"])
        .env("DATABASE_URL", &config.database_url)
        .env("COORDINATOR_LOG", "warn")
        // The run's own settings, not whatever the caller's shell has.
        .env_remove("RUST_LOG")
        .env_remove("COORDINATOR_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .kill_on_drop(true);
    cmd.spawn().context("starting `coordinator serve`")
}

impl Fleet {
    /// Starts `count` replicas and waits until each answers `/healthz`.
    pub async fn start(config: ReplicaConfig, count: usize) -> anyhow::Result<Fleet> {
        let mut replicas = Vec::with_capacity(count);
        for i in 0..count {
            let listen = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()?));
            replicas.push(Replica {
                listen,
                child: Some(spawn(&config, i, listen)?),
                started: Instant::now(),
            });
        }
        let fleet = Fleet {
            config,
            replicas,
            crashes: 0,
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(2))
                .build()?,
        };
        for i in 0..count {
            fleet.wait_healthy(i).await?;
        }
        Ok(fleet)
    }

    /// The base URL of each replica (fixed for the run).
    pub fn urls(&self) -> Vec<String> {
        self.replicas
            .iter()
            .map(|r| format!("http://{}", r.listen))
            .collect()
    }

    /// The process id of each running replica.
    pub fn pids(&self) -> Vec<u32> {
        self.replicas
            .iter()
            .filter_map(|r| r.child.as_ref()?.id())
            .collect()
    }

    /// The log file of replica `index`.
    pub fn log_path(&self, index: usize) -> PathBuf {
        self.config.log_dir.join(format!("replica-{index}.log"))
    }

    /// Waits until replica `index` answers `/healthz`.
    pub async fn wait_healthy(&self, index: usize) -> anyhow::Result<()> {
        let url = format!("http://{}/healthz", self.replicas[index].listen);
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Ok(r) = self.http.get(&url).send().await
                && r.status().is_success()
            {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!(
                    "replica {index} did not answer /healthz within {START_TIMEOUT:?}; see {}",
                    self.log_path(index).display()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGKILLs replica `index` (no shutdown of any kind) and starts it again
    /// on the same port at once.
    pub async fn kill_and_restart(&mut self, index: usize) -> anyhow::Result<()> {
        let replica = &mut self.replicas[index];
        if let Some(mut child) = replica.child.take() {
            // tokio's kill is SIGKILL on Unix.
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
        replica.child = Some(spawn(&self.config, index, replica.listen)?);
        replica.started = Instant::now();
        Ok(())
    }

    /// Restarts replicas that exited on their own (e.g. while PostgreSQL
    /// was down), at most once per [`REVIVE_PAUSE`] each.
    pub fn revive_exited(&mut self) -> anyhow::Result<()> {
        for (i, replica) in self.replicas.iter_mut().enumerate() {
            let exited = match replica.child.as_mut() {
                Some(child) => child.try_wait()?.is_some(),
                None => true,
            };
            if exited && replica.started.elapsed() >= REVIVE_PAUSE {
                self.crashes += 1;
                replica.child = Some(spawn(&self.config, i, replica.listen)?);
                replica.started = Instant::now();
            }
        }
        Ok(())
    }

    /// Stops every replica (SIGKILL: the run is over, nothing is in flight).
    pub async fn stop(mut self) {
        for replica in &mut self.replicas {
            if let Some(mut child) = replica.child.take() {
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
        }
    }

    /// The directory of the replica logs.
    pub fn log_dir(&self) -> &Path {
        &self.config.log_dir
    }
}
