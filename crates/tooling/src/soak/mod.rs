//! `coordinator soak`: real replicas held under a steady, realistic load
//! for a configured time — slow, failing and hanging workers, missions
//! gated on a person's approval, plans rejected and made again, missions
//! cancelled in flight, and hundreds of event-stream subscribers — with
//! throughput, latencies, memory, connections and event-stream lag
//! measured window by window. It fails when memory or latency grows from
//! the early windows to the late ones, when a mission does not end, or when
//! the auditor finds a broken invariant.

use std::{
    process::ExitCode,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::{Duration, Instant},
};

use anyhow::Context;
use futures::future::join_all;
use serde_json::{Value, json};
use sqlx::PgPool;

use crate::{
    audit, auth,
    bench::{Api, create_database},
    chaos::{
        FLEET,
        fleet::{Fleet, ReplicaConfig},
        plan::{self, MissionSpec, Rng},
    },
    db,
    local_postgres::LocalPostgres,
    worker::simulate::{SimulatedWorker, SimulationConfig},
};

mod subscribers;
pub mod windows;

use windows::{Growth, Limits, Percentiles, Window};

/// `coordinator soak` options.
#[derive(Debug, Clone, clap::Args)]
pub struct SoakArgs {
    /// PostgreSQL server to use (a new database is created on it and dropped
    /// afterwards); without it a private PostgreSQL runs in a temporary directory.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Seconds of load; the drain and the audit come after.
    #[arg(long, default_value_t = 600)]
    pub duration_secs: u64,
    /// Seconds per measured window.
    #[arg(long, default_value_t = 30)]
    pub window_secs: u64,
    /// Coordinator processes (1–8).
    #[arg(long, default_value_t = 2)]
    pub replicas: usize,
    /// Event-stream subscribers, spread over the replicas.
    #[arg(long, default_value_t = 500)]
    pub subscribers: usize,
    /// Missions created per second.
    #[arg(long, default_value_t = 2.0)]
    pub missions_per_sec: f64,
    /// Seed of the missions, their fates and the worker faults (default: random, printed).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Fraction of attempts that report failure.
    #[arg(long, default_value_t = 0.08)]
    pub failure_rate: f64,
    /// Fraction of attempts that hang past the lease.
    #[arg(long, default_value_t = 0.02)]
    pub hang_rate: f64,
    /// Slowest extra worker latency, ms (each attempt takes 100 ms plus up to this).
    #[arg(long, default_value_t = 900)]
    pub worker_jitter_ms: u64,
    /// Lease (stall timeout) of the replicas, in seconds.
    #[arg(long, default_value_t = 5)]
    pub lease_secs: u64,
    /// Largest replica memory growth allowed, late windows over early.
    #[arg(long, default_value_t = 1.3)]
    pub max_rss_growth: f64,
    /// Largest p95 latency growth allowed, late windows over early.
    #[arg(long, default_value_t = 2.0)]
    pub max_latency_growth: f64,
    /// Seconds to wait, after the load, for every mission to end.
    #[arg(long, default_value_t = 180)]
    pub drain_secs: u64,
}

/// What happens to a mission after it is created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Runs on its own.
    Autonomous,
    /// Waits for a person's approval, given after 1–3 s, and for the
    /// review of its results, accepted.
    Gated,
    /// A person rejects the plan with feedback, approves the new one, and
    /// accepts the results.
    Replanned,
    /// Cancelled 1–3 s after it started.
    Cancelled,
}

impl Fate {
    /// 60 % autonomous, 15 % gated, 10 % replanned, 15 % cancelled.
    fn draw(rng: &mut Rng) -> Fate {
        match rng.range(0, 99) {
            0..=59 => Fate::Autonomous,
            60..=74 => Fate::Gated,
            75..=84 => Fate::Replanned,
            _ => Fate::Cancelled,
        }
    }
}

/// What feeding and steering the missions did.
#[derive(Default)]
struct Steering {
    created: AtomicU64,
    approved: AtomicU64,
    replanned: AtomicU64,
    cancelled: AtomicU64,
    /// Results accepted in review.
    reviewed: AtomicU64,
    /// Requests that failed (each is retried only where noted).
    errors: AtomicU64,
}

fn check(args: &SoakArgs) -> anyhow::Result<()> {
    anyhow::ensure!((1..=8).contains(&args.replicas), "--replicas must be 1–8");
    anyhow::ensure!(args.window_secs >= 5, "--window-secs must be at least 5");
    anyhow::ensure!(
        args.duration_secs >= args.window_secs,
        "--duration-secs must be at least one window"
    );
    anyhow::ensure!(
        args.missions_per_sec > 0.0 && args.missions_per_sec <= 100.0,
        "--missions-per-sec must be above 0 and at most 100"
    );
    anyhow::ensure!(
        args.subscribers <= 5000,
        "--subscribers must be at most 5000"
    );
    for (name, rate) in [
        ("--failure-rate", args.failure_rate),
        ("--hang-rate", args.hang_rate),
    ] {
        anyhow::ensure!((0.0..=1.0).contains(&rate), "{name} must be 0–1");
    }
    Ok(())
}

/// Runs the soak and prints its windows, verdict and figures; exit 0 only
/// when nothing grew past its limit, every mission ended and the audit is clean.
pub async fn run(args: SoakArgs) -> anyhow::Result<ExitCode> {
    check(&args)?;
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64 >> 11)
            .unwrap_or(1)
    });
    println!("soak: seed {seed}");
    let dir = std::env::temp_dir().join(format!(
        "coordinator-soak-{}-{}",
        std::process::id(),
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let (url, embedded, external) = match &args.database_url {
        Some(base) => {
            let (name, url) = create_database(base).await?;
            (url, None, Some((base.clone(), name)))
        }
        None => {
            let pg = LocalPostgres::start_temporary().await?;
            (pg.url().to_owned(), Some(pg), None)
        }
    };
    let result = soak(&args, seed, &url, &dir).await;
    if let Some(pg) = embedded {
        pg.stop().await?;
    }
    if let Some((base, name)) = external {
        use sqlx::{Connection, Executor};
        let mut conn = sqlx::PgConnection::connect(&base).await?;
        conn.execute(sqlx::AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {name} WITH (FORCE)"
        )))
        .await?;
        conn.close().await?;
    }
    if matches!(result, Ok(ExitCode::SUCCESS)) {
        let _ = std::fs::remove_dir_all(&dir);
    } else {
        eprintln!("soak: kept the replica logs in {}", dir.display());
    }
    result
}

/// The run between creating the database and removing it.
async fn soak(
    args: &SoakArgs,
    seed: u64,
    url: &str,
    dir: &std::path::Path,
) -> anyhow::Result<ExitCode> {
    let pool = db::connect(url, 4).await?;
    db::migrate(&pool).await?;
    let token = auth::generate_token();
    auth::ensure_bootstrap(&pool, Some(&token)).await?;
    let worker = SimulatedWorker::spawn(
        std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        SimulationConfig {
            latency_ms: 100,
            jitter_ms: args.worker_jitter_ms,
            failure_rate: args.failure_rate,
            hang_rate: args.hang_rate,
            seed,
            roll_by_task: true,
            ..SimulationConfig::default()
        },
    )
    .await?;
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
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    register_agents(&urls[0], &token, &http, &worker.url()).await?;
    let (tally, streams) = subscribers::start(args.subscribers, &urls, &token);
    println!(
        "soak: {} replicas, {} subscribers, {} missions/s for {} s in {} s windows; logs in {}",
        args.replicas,
        args.subscribers,
        args.missions_per_sec,
        args.duration_secs,
        args.window_secs,
        dir.display()
    );

    let count = (args.duration_secs as f64 * args.missions_per_sec).ceil() as usize;
    let specs = plan::missions(seed, count, 4, 12);
    let steering = Arc::new(Steering::default());
    let t0 = Instant::now();
    let feeder = tokio::spawn(feed(
        specs,
        seed,
        urls.clone(),
        token.clone(),
        http.clone(),
        steering.clone(),
        args.missions_per_sec,
    ));
    let windows = measure(args, &pool, &fleet, &tally, t0).await;
    let _ = feeder.await;
    let drained = drain(&pool, Duration::from_secs(args.drain_secs)).await;
    for s in &streams {
        s.abort();
    }
    let reconnects = tally.reconnects.load(Ordering::Relaxed);
    fleet.stop().await;
    let stats = worker.stats();
    drop(worker);
    let report = audit::audit(&pool).await?;
    pool.close().await;

    let growth = windows::growth(
        &windows,
        Limits {
            rss_growth: args.max_rss_growth,
            latency_growth: args.max_latency_growth,
        },
    );
    let grew: Vec<&Growth> = growth.iter().filter(|g| !g.ok()).collect();
    let passed = drained && report.is_clean() && grew.is_empty() && !growth.is_empty();
    for g in &growth {
        println!(
            "{:<28} early {:>10.1}  late {:>10.1}  ratio {:>5.2} (limit {:.2}) {}",
            g.figure,
            g.early,
            g.late,
            g.ratio,
            g.limit,
            if g.ok() { "ok" } else { "GREW" }
        );
    }
    if growth.is_empty() {
        println!("too few windows for a verdict on growth (at least four are needed)");
    }
    println!("{}", report.summary());
    if !drained {
        println!("not every mission ended within --drain-secs");
    }
    println!(
        "workers: {} dispatches, {} failed, {} hung, {} cancels; subscribers reconnected {} times",
        stats.received, stats.failed, stats.hung, stats.cancels, reconnects
    );
    println!("{}", if passed { "PASS" } else { "FAIL" });
    println!(
        "{}",
        figures(seed, &windows, &steering, report.missions, drained, &grew)
    );
    Ok(if passed {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The fleet of `coordinator chaos` twice, plus planners (a rejected plan
/// is made again by the template planner, whose plans start with a
/// planning task).
async fn register_agents(
    base: &str,
    token: &str,
    http: &reqwest::Client,
    endpoint: &str,
) -> anyhow::Result<()> {
    let api = Api {
        http: http.clone(),
        base: base.to_owned(),
        token: token.to_owned(),
    };
    let roster = FLEET
        .iter()
        .map(|(role, skills)| (*role, skills.to_vec()))
        .chain([("planner", vec!["planning", "analysis"])]);
    for (role, skills) in roster {
        for copy in 0..2 {
            api.post(
                "/v1/agents",
                json!({"agent_id": format!("{role}-{copy}"), "role": role, "skills": skills,
                       "tools": [], "endpoint_url": endpoint, "max_concurrency": 4}),
            )
            .await?;
        }
    }
    Ok(())
}

/// Creates the missions at a steady pace and steers each to its fate.
async fn feed(
    specs: Vec<MissionSpec>,
    seed: u64,
    urls: Vec<String>,
    token: String,
    http: reqwest::Client,
    steering: Arc<Steering>,
    per_sec: f64,
) {
    let mut rng = Rng::new(seed, 0x50a4);
    let start = tokio::time::Instant::now();
    let mut steps = Vec::with_capacity(specs.len());
    for (i, spec) in specs.into_iter().enumerate() {
        tokio::time::sleep_until(start + Duration::from_secs_f64(i as f64 / per_sec)).await;
        let fate = Fate::draw(&mut rng);
        let pause = Duration::from_millis(rng.range(1000, 3000) as u64);
        let api = Api {
            http: http.clone(),
            base: urls[i % urls.len()].clone(),
            token: token.clone(),
        };
        steps.push(tokio::spawn(steer(
            api,
            spec,
            fate,
            pause,
            steering.clone(),
        )));
    }
    join_all(steps).await;
}

/// Creates one mission and does to it what its fate says.
async fn steer(api: Api, spec: MissionSpec, fate: Fate, pause: Duration, s: Arc<Steering>) {
    let autonomy = match fate {
        Fate::Gated | Fate::Replanned => "approve",
        Fate::Autonomous | Fate::Cancelled => "autonomous",
    };
    let body = json!({"goal": spec.goal, "autonomy": autonomy, "plan": spec.plan,
                      "constraints": {"human_escalation": false}});
    let id = match api.post("/v1/missions", body).await {
        Ok(m) => m["id"].as_str().unwrap_or_default().to_owned(),
        Err(_) => {
            s.errors.fetch_add(1, Ordering::Relaxed);
            return;
        }
    };
    s.created.fetch_add(1, Ordering::Relaxed);
    tokio::time::sleep(pause).await;
    match fate {
        Fate::Autonomous => {}
        Fate::Gated => {
            if act(&api, &id, "approve", json!({}), &s.approved, &s).await {
                accept_results(&api, &id, &s).await;
            }
        }
        Fate::Replanned => {
            let feedback = json!({"feedback": "Start by scoping the work, then do it."});
            act(&api, &id, "reject-plan", feedback, &s.replanned, &s).await;
            // The new plan is made by a replica's engine: approve it once it
            // waits (the first tries may find it still being made).
            let path = format!("/v1/missions/{id}/approve");
            let mut approved = false;
            // (A loaded replica may take a while to make it.)
            for _ in 0..120 {
                tokio::time::sleep(Duration::from_millis(500)).await;
                if api.post(&path, json!({})).await.is_ok() {
                    s.approved.fetch_add(1, Ordering::Relaxed);
                    approved = true;
                    break;
                }
            }
            if approved {
                accept_results(&api, &id, &s).await;
            } else {
                s.errors.fetch_add(1, Ordering::Relaxed);
            }
        }
        Fate::Cancelled => {
            act(&api, &id, "cancel", json!({}), &s.cancelled, &s).await;
        }
    }
}

/// The second gate of an approve-mode mission: once it waits in
/// `awaiting_review`, a person accepts the results (checked every second,
/// for at most ten minutes; a mission that ends otherwise needs nothing).
async fn accept_results(api: &Api, id: &str, s: &Steering) {
    for _ in 0..600 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let status = match api.get(&format!("/v1/missions/{id}")).await {
            Ok(m) => m["status"].as_str().unwrap_or_default().to_owned(),
            Err(_) => continue,
        };
        match status.as_str() {
            "awaiting_review" => {
                let accept = json!({"decision": "accept", "feedback": "Looks right."});
                act(api, id, "review", accept, &s.reviewed, s).await;
                return;
            }
            "completed" | "failed" | "cancelled" => return,
            _ => {}
        }
    }
}

/// One person's action on mission `id`; counts it in `done`, or as an error.
async fn act(api: &Api, id: &str, path: &str, body: Value, done: &AtomicU64, s: &Steering) -> bool {
    match api.post(&format!("/v1/missions/{id}/{path}"), body).await {
        Ok(_) => {
            done.fetch_add(1, Ordering::Relaxed);
            true
        }
        Err(_) => {
            s.errors.fetch_add(1, Ordering::Relaxed);
            false
        }
    }
}

/// Measures a window every `--window-secs` until the load ends.
async fn measure(
    args: &SoakArgs,
    pool: &PgPool,
    fleet: &Fleet,
    tally: &subscribers::Tally,
    t0: Instant,
) -> Vec<Window> {
    let every = Duration::from_secs(args.window_secs);
    let mut windows = Vec::new();
    let mut from = time::OffsetDateTime::now_utc();
    let mut events_before = 0;
    println!(
        "{:>6} {:>7} {:>22} {:>22} {:>22} {:>9} {:>8} {:>5} {:>5}",
        "secs",
        "tasks/s",
        "ready→dispatch ms",
        "report→dispatch ms",
        "event lag ms",
        "events",
        "RSS MiB",
        "conns",
        "subs"
    );
    while t0.elapsed() + Duration::from_millis(100) < Duration::from_secs(args.duration_secs) {
        tokio::time::sleep(every).await;
        let to = time::OffsetDateTime::now_utc();
        let (ready, chain, succeeded) =
            windows::latencies(pool, from, to).await.unwrap_or_default();
        let events = tally.events.load(Ordering::Relaxed);
        let w = Window {
            at_secs: t0.elapsed().as_secs_f64(),
            tasks_per_s: succeeded as f64 / (to - from).as_seconds_f64(),
            ready_to_dispatch: Percentiles::of(ready),
            report_to_dispatch: Percentiles::of(chain),
            event_lag: Percentiles::of(tally.take_lags()),
            events_delivered: events - events_before,
            rss_kib: fleet
                .pids()
                .into_iter()
                .map(windows::rss_kib)
                .max()
                .unwrap_or(0),
            connections: windows::connections(pool).await.unwrap_or(-1),
            subscribers: tally.connected.load(Ordering::Relaxed),
        };
        let p = |p: &Percentiles| format!("{:.0}/{:.0}/{:.0}", p.p50, p.p95, p.p99);
        println!(
            "{:>6.0} {:>7.1} {:>22} {:>22} {:>22} {:>9} {:>8.1} {:>5} {:>5}",
            w.at_secs,
            w.tasks_per_s,
            p(&w.ready_to_dispatch),
            p(&w.report_to_dispatch),
            p(&w.event_lag),
            w.events_delivered,
            w.rss_kib as f64 / 1024.0,
            w.connections,
            w.subscribers
        );
        windows.push(w);
        from = to;
        events_before = events;
    }
    windows
}

/// Waits until every mission has ended (at most `limit`).
async fn drain(pool: &PgPool, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        let open: Result<i64, _> =
            sqlx::query_scalar("SELECT count(*) FROM orchestration_runs WHERE status <> ALL($1)")
                .bind(&audit::TERMINAL[..])
                .fetch_one(pool)
                .await;
        if open.is_ok_and(|n| n == 0) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    false
}

/// The last line: space-separated `key=value` figures.
fn figures(
    seed: u64,
    windows: &[Window],
    s: &Steering,
    missions: i64,
    drained: bool,
    grew: &[&Growth],
) -> String {
    let last = windows.last().cloned().unwrap_or_default();
    let max = |f: &dyn Fn(&Window) -> f64| windows.iter().map(f).fold(f64::NAN, f64::max);
    let mean = |f: &dyn Fn(&Window) -> f64| {
        windows.iter().map(f).sum::<f64>() / windows.len().max(1) as f64
    };
    [
        format!("seed={seed}"),
        format!("windows={}", windows.len()),
        format!("missions={missions}"),
        format!("created={}", s.created.load(Ordering::Relaxed)),
        format!("approved={}", s.approved.load(Ordering::Relaxed)),
        format!("replanned={}", s.replanned.load(Ordering::Relaxed)),
        format!("cancelled={}", s.cancelled.load(Ordering::Relaxed)),
        format!("reviewed={}", s.reviewed.load(Ordering::Relaxed)),
        format!("request_errors={}", s.errors.load(Ordering::Relaxed)),
        format!("drained={drained}"),
        format!("tasks_per_s={:.1}", mean(&|w| w.tasks_per_s)),
        format!(
            "ready_to_dispatch_p95_ms_max={:.0}",
            max(&|w| w.ready_to_dispatch.p95)
        ),
        format!(
            "report_to_dispatch_p95_ms_max={:.0}",
            max(&|w| w.report_to_dispatch.p95)
        ),
        format!("event_lag_p95_ms_max={:.0}", max(&|w| w.event_lag.p95)),
        format!("rss_mib_last={:.1}", last.rss_kib as f64 / 1024.0),
        format!("connections_max={:.0}", max(&|w| w.connections as f64)),
        format!("subscribers_last={}", last.subscribers),
        format!(
            "grew={}",
            if grew.is_empty() {
                "none".to_owned()
            } else {
                grew.iter().map(|g| g.figure).collect::<Vec<_>>().join(",")
            }
        ),
    ]
    .join(" ")
}
