//! `coordinator demo`: the first thing a newcomer runs. Embedded PostgreSQL,
//! the service, a fleet of simulated workers registered as agents, one
//! mission submitted over the REST API and followed live until it finishes.

use std::{
    net::SocketAddr,
    path::PathBuf,
    process::ExitCode,
    time::{Duration, Instant},
};

use anyhow::Context;
use coordinator_service::store::events::EventKind;
use serde_json::{Value, json};

use crate::{
    api::{Application, Settings},
    auth::{self, Role},
    db::{Database, DatabaseArgs},
    missions::MissionView,
    worker::simulate::{SimulatedWorker, SimulationConfig},
};

/// `coordinator demo` options.
#[derive(Debug, Clone, clap::Args)]
pub struct DemoArgs {
    /// PostgreSQL URL; without it the private PostgreSQL in --data-dir is used.
    #[arg(long, env = "DATABASE_URL", hide_env_values = true)]
    pub database_url: Option<String>,
    /// Directory of the private PostgreSQL.
    #[arg(long, env = "COORDINATOR_DATA_DIR", default_value = "./.coordinator")]
    pub data_dir: PathBuf,
    /// The mission's goal.
    #[arg(
        long,
        default_value = "Research the state of solid-state batteries for electric cars and write a report"
    )]
    pub goal: String,
    /// Simulated work time per task, in milliseconds.
    #[arg(long, default_value_t = 400)]
    pub latency_ms: u64,
    /// Fraction of attempts that fail (they are retried).
    #[arg(long, default_value_t = 0.0)]
    pub failure_rate: f64,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 120)]
    pub timeout_secs: u64,
}

/// The demo fleet: (agent id, role, skills). Together they cover every skill
/// the built-in templates use.
const FLEET: &[(&str, &str, &[&str])] = &[
    ("planner", "planner", &["planning", "analysis"]),
    ("researcher", "researcher", &["research", "analysis"]),
    ("writer", "writer", &["writing", "planning"]),
    ("engineer", "engineer", &["coding", "testing"]),
    ("reviewer", "reviewer", &["review", "testing", "analysis"]),
];

/// Runs the demo; exit code 0 when the mission completes.
pub async fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let db = Database::open(&DatabaseArgs {
        database_url: args.database_url.clone(),
        data_dir: args.data_dir.clone(),
        pool_size: Some(10),
        replicas: 1,
        db_connect_timeout_secs: coordinator_service::db::DEFAULT_CONNECT_WAIT_SECS,
    })
    .await?;
    // A workspace of its own, so runs never see each other's agents.
    let run_tag = &uuid::Uuid::new_v4().simple().to_string()[..6];
    let workspace = format!("demo-{run_tag}");
    let token = auth::generate_token();
    {
        let mut conn = db.pool.acquire().await?;
        let ws = auth::workspace_by_name(&mut conn, &workspace).await?;
        auth::insert_token(&mut conn, ws, Role::Admin, "demo", None, &token).await?;
    }

    let mut settings = Settings::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    settings.engine.tick_interval = Duration::from_millis(250);
    let app = Application::build(db.pool.clone(), settings).await?;
    let api = app.url();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until_stopped(async {
        let _ = stop_rx.await;
    }));
    // One simulated worker per agent: a real fleet of HTTP servers.
    let mut workers = Vec::with_capacity(FLEET.len());
    for i in 0..FLEET.len() {
        workers.push(
            SimulatedWorker::spawn(
                SocketAddr::from(([127, 0, 0, 1], 0)),
                SimulationConfig {
                    latency_ms: args.latency_ms,
                    jitter_ms: args.latency_ms / 2,
                    failure_rate: args.failure_rate,
                    seed: 7 + i as u64,
                    ..SimulationConfig::default()
                },
            )
            .await?,
        );
    }
    println!("coordinator demo");
    println!("  service  {api}   (workspace '{workspace}')");
    println!(
        "  workers  {} simulated workers, ~{} ms per task",
        workers.len(),
        args.latency_ms
    );

    let http = reqwest::Client::new();
    let client = Client {
        http: &http,
        base: &api,
        token: &token,
    };
    for ((id, role, skills), worker) in FLEET.iter().zip(&workers) {
        client
            .post(
                "/v1/agents",
                json!({
                    "agent_id": format!("{id}-{run_tag}"), "role": role, "skills": skills,
                    "tools": [], "endpoint_url": worker.url(), "max_concurrency": 2,
                }),
            )
            .await
            .with_context(|| format!("registering agent {id}"))?;
    }
    println!(
        "  agents   {}",
        FLEET
            .iter()
            .map(|(id, ..)| *id)
            .collect::<Vec<_>>()
            .join(", ")
    );

    let mission: MissionView = serde_json::from_value(
        client
            .post(
                "/v1/missions",
                json!({ "goal": args.goal, "autonomy": "autonomous" }),
            )
            .await?,
    )?;
    println!("\nmission {}\n  goal     {}", mission.id, mission.goal);
    println!(
        "  plan     {} tasks by the {} planner; critical path: {}\n",
        mission.tasks.len(),
        mission.planner.as_deref().unwrap_or("?"),
        mission.critical_path.join(" → ")
    );

    let outcome = follow(
        &client,
        &mission,
        started,
        Duration::from_secs(args.timeout_secs),
    )
    .await;
    let final_view: Option<MissionView> = client
        .get(&format!("/v1/missions/{}", mission.id))
        .await
        .ok()
        .and_then(|v| serde_json::from_value(v).ok());
    let _ = stop_tx.send(());
    let _ = server.await;
    let (received, duplicates) = workers.iter().fold((0, 0), |(r, d), w| {
        let s = w.stats();
        (r + s.received, d + s.duplicate_dispatches)
    });
    drop(workers);
    db.close().await?;

    let view = final_view.context("could not read the mission at the end")?;
    outcome?;
    let attempts: i32 = view.tasks.iter().map(|t| t.attempts).sum();
    println!("\nsummary");
    println!("  status    {}", view.status);
    println!(
        "  tasks     {} ({} attempts, {} dispatches received by workers, {} duplicate)",
        view.tasks.len(),
        attempts,
        received,
        duplicates
    );
    println!("  cost      {:.2}", view.budget.spent);
    println!("  time      {:.1} s", started.elapsed().as_secs_f64());
    for t in &view.tasks {
        println!(
            "    {:<20} {:<9} by {}",
            truncate(&t.key, 20),
            t.status,
            t.assigned_agent_id.as_deref().unwrap_or("-")
        );
    }
    Ok(if view.status == "completed" {
        ExitCode::SUCCESS
    } else {
        eprintln!(
            "the mission did not complete: {}",
            view.failure_reason.unwrap_or(view.status)
        );
        ExitCode::FAILURE
    })
}

/// Prints events as they happen until the mission is terminal.
async fn follow(
    client: &Client<'_>,
    mission: &MissionView,
    started: Instant,
    timeout: Duration,
) -> anyhow::Result<()> {
    let total = mission.tasks.len();
    let key_of = |id: &str| {
        mission
            .tasks
            .iter()
            .find(|t| t.id.to_string() == id)
            .map(|t| t.key.clone())
            .unwrap_or_else(|| "?".into())
    };
    let mut after = 0i64;
    let mut done = 0usize;
    let deadline = Instant::now() + timeout;
    loop {
        anyhow::ensure!(
            Instant::now() < deadline,
            "the mission did not finish within {timeout:?}"
        );
        let page = client
            .get(&format!("/v1/missions/{}/events?after={after}", mission.id))
            .await?;
        after = page["next_after"].as_i64().unwrap_or(after);
        for ev in page["events"].as_array().into_iter().flatten() {
            let t = started.elapsed().as_secs_f64();
            let task = ev["task_id"].as_str().map(key_of).unwrap_or_default();
            let p = &ev["payload"];
            match ev["kind"].as_str().and_then(EventKind::parse) {
                Some(EventKind::TaskDispatched) => println!(
                    "[{t:5.1}s] ▸ {task:<20} dispatched to {} (attempt {})",
                    p["agent_id"].as_str().unwrap_or("?"),
                    p["attempt"]
                ),
                Some(EventKind::TaskSucceeded) => {
                    done += 1;
                    println!("[{t:5.1}s] ✓ {task:<20} succeeded   {}", bar(done, total));
                }
                Some(EventKind::TaskRetryScheduled) => println!(
                    "[{t:5.1}s] ↻ {task:<20} failed, retry scheduled: {}",
                    p["error"].as_str().unwrap_or("")
                ),
                Some(EventKind::TaskFailed) => println!("[{t:5.1}s] ✗ {task:<20} failed for good"),
                Some(EventKind::MissionStatusChanged) => {
                    let to = p["to"].as_str().unwrap_or("");
                    println!("[{t:5.1}s] ● mission is {to}");
                    if matches!(to, "completed" | "failed" | "cancelled") {
                        return Ok(());
                    }
                }
                _ => {}
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn bar(done: usize, total: usize) -> String {
    let width = 20;
    let filled = (done * width).checked_div(total).unwrap_or(0);
    format!(
        "[{}{}] {done}/{total}",
        "█".repeat(filled),
        "░".repeat(width - filled)
    )
}

fn truncate(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(n - 1).collect::<String>())
    }
}

/// A tiny REST client for the demo.
struct Client<'a> {
    http: &'a reqwest::Client,
    base: &'a str,
    token: &'a str,
}

impl Client<'_> {
    async fn get(&self, path: &str) -> anyhow::Result<Value> {
        let resp = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(self.token)
            .send()
            .await?;
        Self::body(resp).await
    }

    async fn post(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        let resp = self
            .http
            .post(format!("{}{path}", self.base))
            .bearer_auth(self.token)
            .json(&body)
            .send()
            .await?;
        Self::body(resp).await
    }

    async fn body(resp: reqwest::Response) -> anyhow::Result<Value> {
        let status = resp.status();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        anyhow::ensure!(status.is_success(), "{status}: {body}");
        Ok(body)
    }
}
