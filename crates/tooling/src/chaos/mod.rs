//! `coordinator chaos`: several real coordinator processes against one
//! PostgreSQL while simulated workers fail, hang, answer twice and answer
//! late; every few seconds one coordinator is SIGKILLed and restarted, and
//! once PostgreSQL itself is restarted. Afterwards the auditor
//! ([`crate::audit`]) reads the database and the last line gives the
//! figures as space-separated `key=value`.
//!
//! What a seed reproduces: the missions (goals, plan shapes, sizes,
//! skills), the order in which replicas are killed, and each attempt's fault
//! (the workers draw it from the goal, task key and attempt number, not the
//! attempt id: see [`crate::worker::simulate::task_identity`]). Which
//! attempts exist depends on timing (a kill or a lease expiry adds one), so
//! the `fault_plan` figure fingerprints the first attempts' faults, which a
//! rerun with the same seed shares exactly.
//!
//! The database is a fresh one: a private PostgreSQL in a temporary
//! directory (the only way PostgreSQL can be restarted mid-run), or a new
//! database on the `DATABASE_URL` server, dropped afterwards unless `--keep`.

use std::{
    net::SocketAddr,
    path::PathBuf,
    process::ExitCode,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use futures::{StreamExt, stream};
use serde_json::json;
use sqlx::{Connection, Executor, PgPool};

use crate::{
    audit::{self, AuditReport},
    auth,
    bench::{Api, create_database},
    db,
    local_postgres::LocalPostgres,
    worker::simulate::{SimulatedWorker, SimulationConfig},
};

pub mod failover;
pub mod fleet;
pub mod plan;

use failover::{Pair, Replication};
use fleet::{Fleet, ReplicaConfig};
use plan::MissionSpec;

/// `coordinator chaos` options.
#[derive(Debug, Clone, clap::Args)]
pub struct ChaosArgs {
    /// PostgreSQL server to use (a new database is created on it, dropped
    /// afterwards unless --keep); without it a private PostgreSQL is started
    /// in a temporary directory (needed for the PostgreSQL restart).
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Seconds of chaos (feeding missions and killing replicas); the drain
    /// and the audit come after.
    #[arg(long, default_value_t = 120)]
    pub duration_secs: u64,
    /// Coordinator processes (1–8).
    #[arg(long, default_value_t = 3)]
    pub replicas: usize,
    /// Missions fed, spread over the first two thirds of the run.
    #[arg(long, default_value_t = 300)]
    pub missions: usize,
    /// Fewest tasks per mission (at least 3).
    #[arg(long, default_value_t = 5)]
    pub tasks_min: usize,
    /// Most tasks per mission (at most 20).
    #[arg(long, default_value_t = 20)]
    pub tasks_max: usize,
    /// Seconds between SIGKILLs of a replica (0: never).
    #[arg(long, default_value_t = 5)]
    pub kill_every_secs: u64,
    /// Restart PostgreSQL once, mid-run (the default; embedded PostgreSQL only).
    #[arg(long, overrides_with = "no_pg_restart")]
    pub pg_restart: bool,
    /// Do not restart PostgreSQL.
    #[arg(long, overrides_with = "pg_restart")]
    pub no_pg_restart: bool,
    /// Fail over instead of restarting PostgreSQL: a streaming standby runs
    /// beside the private primary, the replicas get both in a multi-host
    /// DATABASE_URL, and halfway through the primary is SIGKILLed and the
    /// standby promoted. `async` may lose the last acknowledged commits
    /// (counted as lost missions); `sync` must lose none.
    #[arg(long, value_enum, conflicts_with = "database_url")]
    pub failover: Option<Replication>,
    /// With --failover: stop the primary's WAL senders this long before
    /// the primary dies, so the standby is behind (async loses what it
    /// missed; sync makes those commits wait and loses nothing).
    #[arg(long, default_value_t = 0, requires = "failover")]
    pub standby_lag_ms: u64,
    /// Seed of the missions, the kill order and the worker faults (default: random, printed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Fraction of attempts that report failure.
    #[arg(long, default_value_t = 0.10)]
    pub failure_rate: f64,
    /// Fraction of attempts that hang past the lease.
    #[arg(long, default_value_t = 0.05)]
    pub hang_rate: f64,
    /// Fraction of attempts whose result is posted twice.
    #[arg(long, default_value_t = 0.05)]
    pub duplicate_rate: f64,
    /// Fraction of attempts that report after their lease ran out.
    #[arg(long, default_value_t = 0.05)]
    pub late_rate: f64,
    /// Lease (stall timeout) of the replicas, in seconds.
    #[arg(long, default_value_t = 3)]
    pub lease_secs: u64,
    /// Concurrency cap of each of the 12 simulated agents.
    #[arg(long, default_value_t = 3)]
    pub agent_cap: i32,
    /// Seconds to wait, after the chaos, for every mission to end.
    #[arg(long, default_value_t = 180)]
    pub drain_secs: u64,
    /// Keep the database (and the run directory with the replica logs).
    #[arg(long)]
    pub keep: bool,
}

/// The simulated fleet: (role, skills); each registered twice, so every
/// skill of [`plan::SKILLS`] has four agents and "another agent" exists.
pub(crate) const FLEET: [(&str, [&str; 2]); 6] = [
    ("researcher", ["research", "analysis"]),
    ("analyst", ["analysis", "writing"]),
    ("writer", ["writing", "review"]),
    ("engineer", ["coding", "testing"]),
    ("reviewer", ["review", "research"]),
    ("tester", ["testing", "coding"]),
];

/// What feeding the missions did.
#[derive(Debug, Default)]
struct Fed {
    /// Missions created (answered 201, or found after an ambiguous error).
    created: usize,
    /// Goals of the missions answered 201 (a failover may lose some).
    acked: Vec<String>,
    /// Requests retried after an error.
    retries: usize,
    /// Missions found committed after the request errored.
    recovered: usize,
    /// Missions that could not be created: (goal, last error).
    failed: Vec<(String, String)>,
}

/// A random seed when none is given (time and pid through splitmix).
fn random_seed() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    plan::Rng::new(nanos, u64::from(std::process::id())).next_u64() >> 11
}

fn check(args: &ChaosArgs) -> anyhow::Result<()> {
    anyhow::ensure!((1..=8).contains(&args.replicas), "--replicas must be 1–8");
    anyhow::ensure!(args.missions >= 1, "--missions must be at least 1");
    anyhow::ensure!(
        3 <= args.tasks_min && args.tasks_min <= args.tasks_max && args.tasks_max <= 20,
        "--tasks-min and --tasks-max must satisfy 3 ≤ min ≤ max ≤ 20"
    );
    anyhow::ensure!(
        args.duration_secs >= 1,
        "--duration-secs must be at least 1"
    );
    anyhow::ensure!(
        (1..=600).contains(&args.lease_secs),
        "--lease-secs must be 1–600"
    );
    anyhow::ensure!(
        (1..=1000).contains(&args.agent_cap),
        "--agent-cap must be 1–1000"
    );
    for (name, rate) in [
        ("--failure-rate", args.failure_rate),
        ("--hang-rate", args.hang_rate),
        ("--duplicate-rate", args.duplicate_rate),
        ("--late-rate", args.late_rate),
    ] {
        anyhow::ensure!((0.0..=1.0).contains(&rate), "{name} must be 0–1");
    }
    anyhow::ensure!(
        args.hang_rate + args.duplicate_rate + args.late_rate <= 1.0,
        "hang, duplicate and late rates must add up to at most 1"
    );
    Ok(())
}

/// The worker settings of a run (faults keyed by task, see the module doc).
pub fn simulation(args: &ChaosArgs, seed: u64) -> SimulationConfig {
    SimulationConfig {
        latency_ms: 50,
        jitter_ms: 150,
        failure_rate: args.failure_rate,
        hang_rate: args.hang_rate,
        duplicate_rate: args.duplicate_rate,
        late_rate: args.late_rate,
        // Well past the lease, so the attempt is reclaimed before it reports.
        late_ms: args.lease_secs * 1000 + 2000,
        seed,
        roll_by_task: true,
        ..SimulationConfig::default()
    }
}

/// Is a mission with this goal stored? (`None` when the database can't say.)
async fn stored(pool: &PgPool, goal: &str) -> Option<bool> {
    sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM orchestration_runs WHERE goal = $1)")
        .bind(goal)
        .fetch_one(pool)
        .await
        .ok()
}

/// How creating one mission went: Ok((retries, found committed after an
/// error)) or Err((retries, last error)).
type Created = Result<(usize, bool), (usize, String)>;

/// Creates one mission through the replicas, retrying on errors. There is
/// no idempotency key in the API, so before a retry the database must say
/// the failed request left no mission (its goal is unique in the run):
/// a retry never creates a duplicate.
async fn create_one(
    i: usize,
    spec: &MissionSpec,
    urls: &[String],
    token: &str,
    http: &reqwest::Client,
    pool: &PgPool,
) -> Created {
    let deadline = Instant::now() + Duration::from_secs(90);
    let body = json!({"goal": spec.goal, "autonomy": "autonomous", "plan": spec.plan,
                      // No person watches a chaos run: the escalation ladder ends in failure.
                      "constraints": {"human_escalation": false}});
    let mut tries = 0;
    loop {
        let api = Api {
            http: http.clone(),
            base: urls[(i + tries) % urls.len()].clone(),
            token: token.to_owned(),
        };
        let err = match api.post("/v1/missions", body.clone()).await {
            Ok(_) => return Ok((tries, false)),
            Err(e) => format!("{e:#}"),
        };
        // A request cut off by a kill may still have committed: give an
        // in-flight COMMIT time to land, then ask the database (waiting out
        // a PostgreSQL restart) before sending it again.
        loop {
            tokio::time::sleep(Duration::from_millis(500)).await;
            match stored(pool, &spec.goal).await {
                Some(true) => return Ok((tries, true)),
                Some(false) => break,
                None if Instant::now() > deadline => return Err((tries, err)),
                None => {}
            }
        }
        if Instant::now() > deadline {
            return Err((tries, err));
        }
        tries += 1;
    }
}

/// Feeds `specs` at a steady pace over `window`, a few requests at a time.
async fn feed(
    specs: Arc<Vec<MissionSpec>>,
    urls: Vec<String>,
    token: String,
    pool: PgPool,
    window: Duration,
) -> Fed {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()
        .unwrap_or_default();
    let start = tokio::time::Instant::now();
    let n = specs.len();
    let results: Vec<(String, Created)> = stream::iter(0..n)
        .map(|i| {
            let (specs, urls, token, http, pool) = (&specs, &urls, &token, &http, &pool);
            async move {
                tokio::time::sleep_until(start + window.mul_f64(i as f64 / n as f64)).await;
                let r = create_one(i, &specs[i], urls, token, http, pool).await;
                (specs[i].goal.clone(), r)
            }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    let mut fed = Fed::default();
    for (goal, r) in results {
        match r {
            Ok((tries, recovered)) => {
                if !recovered {
                    fed.acked.push(goal);
                }
                fed.created += 1;
                fed.retries += tries;
                fed.recovered += usize::from(recovered);
            }
            Err((tries, e)) => {
                fed.retries += tries;
                fed.failed.push((goal, e));
            }
        }
    }
    fed
}

/// Samples the cap invariant until `stop`; adds violations to `found`.
fn sample_caps(
    pool: PgPool,
    stop: Arc<AtomicBool>,
    found: Arc<AtomicU64>,
) -> tokio::task::JoinHandle<u64> {
    tokio::spawn(async move {
        let mut samples = 0;
        while !stop.load(Ordering::Relaxed) {
            // Errors (PostgreSQL restarting) skip a sample.
            if let Ok(n) = audit::cap_violations(&pool).await {
                found.fetch_add(n.max(0) as u64, Ordering::Relaxed);
                samples += 1;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        samples
    })
}

/// (missions, terminal) right now.
async fn progress(pool: &PgPool) -> sqlx::Result<(i64, i64)> {
    sqlx::query_as(
        "SELECT count(*), count(*) FILTER (WHERE status = ANY($1)) FROM orchestration_runs",
    )
    .bind(&audit::TERMINAL[..])
    .fetch_one(pool)
    .await
}

/// Where the run's database lives.
enum Server {
    /// A private PostgreSQL in the run directory (restartable).
    Embedded(Option<LocalPostgres>, PathBuf),
    /// A database created on the caller's server: (server URL, name).
    External(String, String),
    /// A private primary and its standby (`--failover`).
    Pair(Pair),
}

/// Runs the chaos and prints the report; exit 0 only when every mission
/// ended and every invariant held.
pub async fn run(args: ChaosArgs) -> anyhow::Result<ExitCode> {
    check(&args)?;
    let seed = args.seed.unwrap_or_else(random_seed);
    // A failover run has its own PostgreSQL event.
    let pg_restart = !args.no_pg_restart && args.failover.is_none();
    println!(
        "chaos: seed {seed} (rerun with --seed {seed} for the same missions, kill order and worker faults)"
    );
    let dir = std::env::temp_dir().join(format!(
        "coordinator-chaos-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let (url, mut server) = match &args.database_url {
        Some(base) => {
            let (name, url) = create_database(base).await?;
            if pg_restart {
                println!(
                    "chaos: DATABASE_URL is set, so PostgreSQL is not restarted (pg_restarts=0)"
                );
            }
            (url, Server::External(base.clone(), name))
        }
        None if args.failover.is_some() => {
            let replication = args.failover.unwrap_or(Replication::Async);
            let pair = Pair::start(&dir, replication).await?;
            println!(
                "chaos: a primary and a streaming standby ({} replication); the replicas use {}",
                replication.as_str(),
                redact(pair.url())
            );
            (pair.url().to_owned(), Server::Pair(pair))
        }
        None => {
            let data = dir.join("postgres");
            let pg = LocalPostgres::start(&data).await?;
            (pg.url().to_owned(), Server::Embedded(Some(pg), data))
        }
    };
    let result = chaos(&args, seed, pg_restart, &url, &mut server, &dir).await;
    // Clean up whatever happened; a failed run keeps its evidence.
    let keep = args.keep || !matches!(result, Ok(ExitCode::SUCCESS));
    match server {
        Server::Embedded(pg, _) => {
            if let Some(pg) = pg {
                pg.stop().await?;
            }
        }
        Server::External(base, name) if !keep => {
            let mut conn = sqlx::PgConnection::connect(&base).await?;
            conn.execute(sqlx::AssertSqlSafe(format!(
                "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
            )))
            .await?;
            conn.close().await?;
        }
        Server::External(..) => eprintln!("chaos: kept the database {url}"),
        Server::Pair(pair) => pair.stop().await?,
    }
    if keep {
        eprintln!("chaos: kept the run directory {}", dir.display());
    } else {
        let _ = std::fs::remove_dir_all(&dir);
    }
    result
}

/// The run itself, between creating the database and cleaning it up:
/// set-up, the chaos, the drain, the audit and the report.
async fn chaos(
    args: &ChaosArgs,
    seed: u64,
    pg_restart: bool,
    url: &str,
    server: &mut Server,
    dir: &std::path::Path,
) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let Setup {
        pool,
        token,
        worker,
        specs,
        faults,
    } = Setup::prepare(args, seed, url).await?;
    let mut fleet = start_fleet(args, url, dir, &token, &worker).await?;

    let stop = Arc::new(AtomicBool::new(false));
    let sampled = Arc::new(AtomicU64::new(0));
    let sampler = sample_caps(pool.clone(), stop.clone(), sampled.clone());
    let duration = Duration::from_secs(args.duration_secs);
    let feeder = tokio::spawn(feed(
        specs.clone(),
        fleet.urls(),
        token.clone(),
        pool.clone(),
        duration.mul_f64(2.0 / 3.0),
    ));

    let mut turmoil = Turmoil::run(args, seed, pg_restart, server, &mut fleet, &pool).await?;
    let (fed, drained) = turmoil.drain(args, &mut fleet, feeder, &pool).await?;
    stop.store(true, Ordering::Relaxed);
    let samples = sampler.await?;
    let crashes = fleet.crashes;
    fleet.stop().await;
    let stats = worker.stats();
    drop(worker);
    pool.close().await;

    let (report, duplicates, lost) = audit_database(url, &fed.acked).await?;
    let outcome = Outcome {
        seed,
        report,
        requested: specs.len(),
        fed,
        duplicates,
        lost,
        replication: args.failover,
        failovers: turmoil.failovers,
        resumed_secs: turmoil.resumed_secs,
        sampled_cap_violations: sampled.load(Ordering::Relaxed) as i64,
        samples,
        kills: turmoil.kills,
        pg_restarts: turmoil.pg_restarts,
        crashes,
        worker: stats,
        fault_plan: faults.fingerprint,
        drained,
        secs: started.elapsed().as_secs_f64(),
    };
    println!("{}", outcome.summary());
    println!("{}", outcome.figures());
    Ok(if outcome.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// What the run starts from: the migrated database, the admin token, the
/// misbehaving workers, and the seeded missions with their planned faults.
struct Setup {
    pool: PgPool,
    token: String,
    worker: SimulatedWorker,
    specs: Arc<Vec<MissionSpec>>,
    faults: plan::FaultPlan,
}

impl Setup {
    /// Migrates the database, starts the workers and draws the missions
    /// (printing what the seed planned).
    async fn prepare(args: &ChaosArgs, seed: u64, url: &str) -> anyhow::Result<Setup> {
        let pool = db::connect(url, 4).await?;
        db::migrate(&pool).await?;
        let token = auth::generate_token();
        auth::ensure_bootstrap(&pool, Some(&token)).await?;

        let sim = simulation(args, seed);
        let worker =
            SimulatedWorker::spawn(SocketAddr::from(([127, 0, 0, 1], 0)), sim.clone()).await?;
        let specs = Arc::new(plan::missions(
            seed,
            args.missions,
            args.tasks_min,
            args.tasks_max,
        ));
        let tasks: usize = specs.iter().map(|m| m.keys().len()).sum();
        let faults = plan::fault_plan(&sim, &specs);
        println!(
            "chaos: {} missions, {tasks} tasks; first attempts planned to fail {}, hang {}, answer twice {}, answer late {} (fault_plan={:016x})",
            specs.len(),
            faults.fails,
            faults.hangs,
            faults.duplicates,
            faults.lates,
            faults.fingerprint
        );
        Ok(Setup {
            pool,
            token,
            worker,
            specs,
            faults,
        })
    }
}

/// Starts the replica processes and registers the [`FLEET`] agents (twice)
/// at the workers.
async fn start_fleet(
    args: &ChaosArgs,
    url: &str,
    dir: &std::path::Path,
    token: &str,
    worker: &SimulatedWorker,
) -> anyhow::Result<Fleet> {
    let exe = std::env::current_exe().context("locating the coordinator binary")?;
    let fleet = Fleet::start(
        ReplicaConfig {
            exe,
            database_url: url.to_owned(),
            lease_secs: args.lease_secs,
            log_dir: dir.to_owned(),
        },
        args.replicas,
    )
    .await?;
    let urls = fleet.urls();
    println!(
        "chaos: {} replicas up ({}); logs in {}",
        urls.len(),
        urls.join(", "),
        fleet.log_dir().display()
    );
    let api = Api {
        http: reqwest::Client::new(),
        base: urls[0].clone(),
        token: token.to_owned(),
    };
    for copy in 0..2 {
        for (role, skills) in FLEET {
            api.post(
                "/v1/agents",
                json!({"agent_id": format!("{role}-{copy}"), "role": role, "skills": skills,
                       "tools": [], "endpoint_url": worker.url(), "max_concurrency": args.agent_cap}),
            )
            .await?;
        }
    }
    Ok(fleet)
}

/// The chaos phase's tally, and the clock its progress lines are told by
/// (the drain continues both).
struct Turmoil {
    /// When the chaos began.
    t0: Instant,
    /// When a progress line was last printed.
    last_report: Instant,
    kills: usize,
    pg_restarts: u32,
    failovers: u32,
    /// Seconds from the primary's death until a mission ended on the new one.
    resumed_secs: Option<f64>,
}

impl Turmoil {
    /// `--duration-secs` of chaos: kills on a fixed cadence, one PostgreSQL
    /// restart halfway, exited replicas revived, progress every 10 s.
    async fn run(
        args: &ChaosArgs,
        seed: u64,
        pg_restart: bool,
        server: &mut Server,
        fleet: &mut Fleet,
        pool: &PgPool,
    ) -> anyhow::Result<Turmoil> {
        let duration = Duration::from_secs(args.duration_secs);
        let kill_every = Duration::from_secs(args.kill_every_secs);
        let victims = plan::kill_victims(
            seed,
            args.replicas,
            (args.duration_secs / args.kill_every_secs.max(1)) as usize + 1,
        );
        let t0 = Instant::now();
        let mut turmoil = Turmoil {
            t0,
            last_report: t0,
            kills: 0,
            pg_restarts: 0,
            failovers: 0,
            resumed_secs: None,
        };
        let mut next_kill = (args.kill_every_secs > 0).then(|| t0 + kill_every);
        let embedded = matches!(server, Server::Embedded(..));
        let mut restart_pg_at = (pg_restart && embedded).then(|| t0 + duration / 2);
        let mut fail_over_at = matches!(server, Server::Pair(_)).then(|| t0 + duration / 2);
        // (when the primary died, missions ended by then) until one more ends.
        let mut waiting_since: Option<(Instant, i64)> = None;
        while t0.elapsed() < duration {
            tokio::time::sleep(Duration::from_millis(100)).await;
            fleet.revive_exited()?;
            if let Some(at) = next_kill
                && Instant::now() >= at
            {
                let victim = victims[turmoil.kills % victims.len()];
                fleet.kill_and_restart(victim).await?;
                turmoil.kills += 1;
                next_kill = Some(at + kill_every);
                eprintln!(
                    "[{:>5.1}s] SIGKILLed replica {victim} and restarted it",
                    t0.elapsed().as_secs_f64()
                );
            }
            if let Some(at) = restart_pg_at
                && Instant::now() >= at
                && let Server::Embedded(pg, data) = server
            {
                restart_pg_at = None;
                turmoil.restart_postgres(pg, data).await?;
            }
            if let Some(at) = fail_over_at
                && Instant::now() >= at
                && let Server::Pair(pair) = server
            {
                fail_over_at = None;
                let done = progress(pool).await.map(|(_, done)| done).unwrap_or(0);
                let died = turmoil
                    .fail_over(pair, Duration::from_millis(args.standby_lag_ms))
                    .await?;
                waiting_since = Some((died, done));
            }
            if let Some((since, before)) = waiting_since
                && let Ok((_, done)) = progress(pool).await
                && done > before
            {
                waiting_since = None;
                turmoil.resumed_secs = Some(since.elapsed().as_secs_f64());
                eprintln!(
                    "[{:>5.1}s] a mission ended on the new primary {:.1} s after the old one died",
                    t0.elapsed().as_secs_f64(),
                    since.elapsed().as_secs_f64()
                );
            }
            if turmoil.last_report.elapsed() >= Duration::from_secs(10) {
                turmoil.last_report = Instant::now();
                if let Ok((n, done)) = progress(pool).await {
                    eprintln!(
                        "[{:>5.1}s] {n} missions created, {done} ended",
                        t0.elapsed().as_secs_f64()
                    );
                }
            }
        }
        Ok(turmoil)
    }

    /// Stops the embedded PostgreSQL and starts it again on the same data
    /// directory (and, as the replicas need, the same address).
    async fn restart_postgres(
        &mut self,
        pg: &mut Option<LocalPostgres>,
        data: &std::path::Path,
    ) -> anyhow::Result<()> {
        let old = pg.take().context("PostgreSQL is not running")?;
        let old_url = old.url().to_owned();
        eprintln!(
            "[{:>5.1}s] stopping PostgreSQL…",
            self.t0.elapsed().as_secs_f64()
        );
        old.stop().await?;
        let new = LocalPostgres::start(data).await?;
        if new.url() != old_url {
            bail!("PostgreSQL came back on another address; the replicas cannot follow");
        }
        *pg = Some(new);
        self.pg_restarts += 1;
        eprintln!(
            "[{:>5.1}s] PostgreSQL restarted",
            self.t0.elapsed().as_secs_f64()
        );
        Ok(())
    }

    /// SIGKILLs the primary and promotes the standby.
    async fn fail_over(&mut self, pair: &mut Pair, lag: Duration) -> anyhow::Result<Instant> {
        eprintln!(
            "[{:>5.1}s] SIGKILLing the primary PostgreSQL{}…",
            self.t0.elapsed().as_secs_f64(),
            if lag.is_zero() {
                String::new()
            } else {
                format!(" after holding the standby back {} ms", lag.as_millis())
            }
        );
        let died = pair.fail_over(lag).await?;
        self.failovers += 1;
        eprintln!(
            "[{:>5.1}s] the standby is promoted",
            self.t0.elapsed().as_secs_f64()
        );
        Ok(died)
    }

    /// The drain: no more kills; crashed replicas still come back. Waits
    /// for the feeder, then (until `--drain-secs` run out) for every mission
    /// to end; returns what was fed and whether every mission ended.
    async fn drain(
        &mut self,
        args: &ChaosArgs,
        fleet: &mut Fleet,
        feeder: tokio::task::JoinHandle<Fed>,
        pool: &PgPool,
    ) -> anyhow::Result<(Fed, bool)> {
        eprintln!(
            "[{:>5.1}s] chaos over ({} kills, {} PostgreSQL restarts); waiting for every mission to end…",
            self.t0.elapsed().as_secs_f64(),
            self.kills,
            self.pg_restarts
        );
        let drain_deadline = Instant::now() + Duration::from_secs(args.drain_secs);
        let fed = loop {
            fleet.revive_exited()?;
            if feeder.is_finished() {
                break feeder.await?;
            }
            if Instant::now() > drain_deadline {
                feeder.abort();
                bail!("feeding the missions did not finish within --drain-secs");
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        while Instant::now() <= drain_deadline {
            fleet.revive_exited()?;
            if let Ok((n, done)) = progress(pool).await
                && n == done
                // After a failover some acknowledged missions may be gone.
                && (n as usize >= fed.created || self.failovers > 0)
            {
                return Ok((fed, true));
            }
            if self.last_report.elapsed() >= Duration::from_secs(10) {
                self.last_report = Instant::now();
                if let Ok((n, done)) = progress(pool).await {
                    eprintln!(
                        "[{:>5.1}s] {done} of {n} missions ended",
                        self.t0.elapsed().as_secs_f64()
                    );
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        Ok((fed, false))
    }
}

/// Audits the database once everything has stopped, through a fresh pool
/// (the run's saw PostgreSQL go away): the report, duplicate missions, and
/// missions answered 201 that the database no longer has.
async fn audit_database(url: &str, acked: &[String]) -> anyhow::Result<(AuditReport, i64, i64)> {
    let pool = db::connect(url, 2).await?;
    let report = audit::audit(&pool).await?;
    let duplicates: i64 =
        sqlx::query_scalar("SELECT count(*) - count(DISTINCT goal) FROM orchestration_runs")
            .fetch_one(&pool)
            .await?;
    let lost: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM unnest($1::text[]) AS g(goal)
         WHERE NOT EXISTS (SELECT 1 FROM orchestration_runs r WHERE r.goal = g.goal)",
    )
    .bind(acked)
    .fetch_one(&pool)
    .await?;
    pool.close().await;
    Ok((report, duplicates, lost))
}

/// `url` with its password masked, for printing.
fn redact(url: &str) -> String {
    match url
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
    {
        Some((userinfo, _)) => match userinfo.split_once(':') {
            Some((_, pw)) => url.replacen(pw, "****", 1),
            None => url.to_owned(),
        },
        None => url.to_owned(),
    }
}

/// Everything a run found.
struct Outcome {
    seed: u64,
    report: AuditReport,
    requested: usize,
    fed: Fed,
    duplicates: i64,
    /// Missions answered 201 that the database lost (a failover).
    lost: i64,
    replication: Option<Replication>,
    failovers: u32,
    resumed_secs: Option<f64>,
    sampled_cap_violations: i64,
    samples: u64,
    kills: usize,
    pg_restarts: u32,
    crashes: u64,
    worker: crate::worker::simulate::WorkerStats,
    fault_plan: u64,
    drained: bool,
    secs: f64,
}

impl Outcome {
    /// Cap violations seen during the run and at the end.
    fn cap_violations(&self) -> i64 {
        self.sampled_cap_violations + self.report.cap_violations
    }

    /// Asynchronous replication may lose the last acknowledged commits;
    /// nothing else may.
    fn loss_allowed(&self) -> bool {
        self.replication == Some(Replication::Async)
    }

    fn passed(&self) -> bool {
        self.fed.failed.is_empty()
            && (self.lost == 0 || self.loss_allowed())
            && self.report.missions + self.lost == self.requested as i64
            && self.report.terminal == self.report.missions
            && self.duplicates == 0
            && self.cap_violations() == 0
            && self.report.is_clean()
    }

    fn summary(&self) -> String {
        let w = &self.worker;
        let mut out = vec![
            format!(
                "chaos run of {:.0} s, seed {}: {} kills, {} PostgreSQL restarts, {} replica exits revived",
                self.secs, self.seed, self.kills, self.pg_restarts, self.crashes
            ),
            format!(
                "fed {} of {} missions ({} client retries, {} found committed after an error, {} duplicates)",
                self.fed.created,
                self.requested,
                self.fed.retries,
                self.fed.recovered,
                self.duplicates
            ),
            format!(
                "workers: {} dispatches, {} failed, {} hung, {} answered twice, {} answered late; {} reports accepted, {} refused",
                w.received,
                w.failed,
                w.hung,
                w.duplicated,
                w.late,
                w.reports_accepted,
                w.reports_refused
            ),
            format!(
                "agent caps sampled {} times during the run: {} violations",
                self.samples, self.sampled_cap_violations
            ),
            self.report.summary(),
        ];
        if let Some(replication) = self.replication {
            out.push(format!(
                "failover ({} replication): {} missions answered 201 were lost{}; a mission ended on the new primary {}",
                replication.as_str(),
                self.lost,
                if self.loss_allowed() {
                    " (allowed: asynchronous replication)"
                } else {
                    ""
                },
                self.resumed_secs
                    .map(|s| format!("{s:.1} s after the old one died"))
                    .unwrap_or_else(|| "only during the drain".into())
            ));
        }
        for (goal, e) in self.fed.failed.iter().take(5) {
            out.push(format!("not created: {goal}: {e}"));
        }
        if !self.drained {
            out.push("not every mission ended within --drain-secs".to_owned());
        }
        out.push(if self.passed() { "PASS" } else { "FAIL" }.to_owned());
        out.join("\n")
    }

    fn figures(&self) -> String {
        let r = &self.report;
        let w = &self.worker;
        [
            format!("seed={}", self.seed),
            format!("missions={}", self.requested),
            format!("created={}", self.fed.created),
            format!("terminal={}", r.terminal),
            format!(
                "completed={}",
                r.by_status.get("completed").copied().unwrap_or(0)
            ),
            format!("failed={}", r.by_status.get("failed").copied().unwrap_or(0)),
            format!("doubled={}", r.doubled),
            format!("doubled_events={}", r.doubled_events),
            format!("stale_accepted={}", r.stale_accepted),
            format!("cap_violations={}", self.cap_violations()),
            format!("event_gaps={}", r.event_gaps),
            format!("replay_mismatches={}", r.replay_mismatches),
            format!("slots_held={}", r.slots_held),
            format!("duplicate_missions={}", self.duplicates),
            format!("kills={}", self.kills),
            format!("pg_restarts={}", self.pg_restarts),
            format!("failovers={}", self.failovers),
            format!(
                "replication={}",
                self.replication.map_or("none", Replication::as_str)
            ),
            format!("lost_missions={}", self.lost),
            format!(
                "resumed_ms={}",
                self.resumed_secs.map_or(-1, |s| (s * 1000.0) as i64)
            ),
            format!("replica_exits={}", self.crashes),
            format!(
                "worker_faults={}",
                w.failed + w.hung + w.duplicated + w.late
            ),
            format!("reports_refused={}", w.reports_refused),
            format!("tasks={}", r.tasks),
            format!("attempts={}", r.attempts),
            format!("fault_plan={:016x}", self.fault_plan),
            format!("secs={:.0}", self.secs),
        ]
        .join(" ")
    }
}
