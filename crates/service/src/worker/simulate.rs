//! The simulated reference worker: a real HTTP server speaking the worker
//! protocol, doing no real work. Latency and failures are deterministic
//! functions of the seed and the attempt id (or, with `roll_by_task`, of the
//! goal, task key and attempt number, which are the same in a rerun), so a
//! run can be reproduced.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    Json, Router,
    extract::{Path, State},
    http::StatusCode,
    response::IntoResponse,
    routing::{get, post},
};
use serde::Serialize;
use serde_json::json;
use tokio::net::TcpListener;
use uuid::Uuid;

use super::protocol::{DispatchRequest, Heartbeat, WorkerReport};
use crate::{
    coordination::contract_net::{CallForProposals, ProposalBody},
    domain::{FailureKind, ReportStatus},
};

/// How the simulated worker behaves.
#[derive(Debug, Clone, clap::Args)]
pub struct SimulationConfig {
    /// Simulated work time per task, in milliseconds.
    #[arg(long = "latency-ms", env = "WORKER_LATENCY_MS", default_value_t = 200)]
    pub latency_ms: u64,
    /// Extra random latency of up to this many milliseconds.
    #[arg(long = "jitter-ms", env = "WORKER_JITTER_MS", default_value_t = 0)]
    pub jitter_ms: u64,
    /// Fraction of attempts that fail (0–1).
    #[arg(long, env = "WORKER_FAILURE_RATE", default_value_t = 0.0)]
    pub failure_rate: f64,
    /// Fraction of attempts accepted and then never reported (the lease must reclaim them).
    #[arg(long, default_value_t = 0.0)]
    pub hang_rate: f64,
    /// Fraction of attempts whose result is posted twice.
    #[arg(long, default_value_t = 0.0)]
    pub duplicate_rate: f64,
    /// Fraction of attempts reported only after `--late-ms` (past the lease: must be refused).
    #[arg(long, default_value_t = 0.0)]
    pub late_rate: f64,
    /// Delay of late reports, in milliseconds.
    #[arg(long, default_value_t = 5_000)]
    pub late_ms: u64,
    /// Seed for the deterministic latency and failure pattern.
    #[arg(long, env = "WORKER_SEED", default_value_t = 1)]
    pub seed: u64,
    /// Answer `200` with the result at once instead of `202` and a callback.
    #[arg(long)]
    pub inline: bool,
    /// Simulated cost reported per task.
    #[arg(long, default_value_t = 0.01)]
    pub cost_per_task: f64,
    /// Draw each attempt's faults from (goal, task key, attempt number)
    /// instead of the attempt id, so a rerun with the same seed and goals
    /// meets the same faults (attempt ids are new in every run).
    #[arg(long)]
    pub roll_by_task: bool,
}

impl Default for SimulationConfig {
    fn default() -> Self {
        SimulationConfig {
            latency_ms: 200,
            jitter_ms: 0,
            failure_rate: 0.0,
            hang_rate: 0.0,
            duplicate_rate: 0.0,
            late_rate: 0.0,
            late_ms: 5_000,
            seed: 1,
            inline: false,
            cost_per_task: 0.01,
            roll_by_task: false,
        }
    }
}

/// What the worker has seen, for tests and demos.
#[derive(Debug, Default, Clone, Serialize)]
pub struct WorkerStats {
    /// Dispatch requests received.
    pub received: u64,
    /// Requests for an attempt id already received (must stay 0).
    pub duplicate_dispatches: u64,
    /// Results accepted by the coordinator.
    pub reports_accepted: u64,
    /// Results refused by the coordinator (stale attempts).
    pub reports_refused: u64,
    /// Cancel requests received.
    pub cancels: u64,
    /// Attempts accepted and never reported (fault injection).
    pub hung: u64,
    /// Attempts reported late (fault injection).
    pub late: u64,
    /// Attempts whose result was posted twice (fault injection).
    pub duplicated: u64,
    /// Attempts reported as failed (fault injection).
    pub failed: u64,
    /// Calls for proposals answered.
    pub cfps: u64,
    /// ACL messages pushed to it (`POST /v1/messages`).
    pub messages: u64,
    /// Subscribed events delivered to it (`POST /v1/events`).
    pub events: u64,
}

#[derive(Default)]
struct Shared {
    stats: WorkerStats,
    seen: HashMap<Uuid, u32>,
    /// When each attempt's first dispatch arrived (for latency benchmarks).
    arrivals: HashMap<Uuid, std::time::SystemTime>,
    cancelled: std::collections::HashSet<Uuid>,
}

#[derive(Clone)]
struct WorkerState {
    config: Arc<SimulationConfig>,
    shared: Arc<Mutex<Shared>>,
    http: reqwest::Client,
}

/// A running simulated worker.
pub struct SimulatedWorker {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    task: tokio::task::JoinHandle<()>,
}

impl SimulatedWorker {
    /// Binds `listen` (port 0 for any) and serves in the background.
    pub async fn spawn(listen: SocketAddr, config: SimulationConfig) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(listen).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Mutex::new(Shared::default()));
        let app = router(WorkerState {
            config: Arc::new(config),
            shared: shared.clone(),
            http: reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()?,
        });
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "simulated worker stopped");
            }
        });
        Ok(SimulatedWorker { addr, shared, task })
    }

    /// The base URL to register as an agent's `endpoint_url`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What it has seen so far.
    pub fn stats(&self) -> WorkerStats {
        lock(&self.shared).stats.clone()
    }

    /// When each attempt's dispatch arrived, by attempt id.
    pub fn arrivals(&self) -> HashMap<Uuid, std::time::SystemTime> {
        lock(&self.shared).arrivals.clone()
    }

    /// Waits until the server task ends (it runs until the process exits).
    pub async fn wait(mut self) -> anyhow::Result<()> {
        (&mut self.task).await?;
        Ok(())
    }
}

impl Drop for SimulatedWorker {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    // A panic while holding this lock cannot leave the counters inconsistent
    // in a way that matters; keep serving.
    shared.lock().unwrap_or_else(|p| p.into_inner())
}

fn router(state: WorkerState) -> Router {
    Router::new()
        .route("/v1/tasks", post(accept_task))
        .route("/v1/tasks/{attempt_id}/cancel", post(cancel_task))
        .route("/v1/cfp", post(answer_cfp))
        .route("/v1/messages", post(take_message))
        .route("/v1/events", post(take_event))
        .route("/v1/stats", get(stats))
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .with_state(state)
}

/// Takes a pushed ACL message: counted and acknowledged with 202 (the
/// simulation does not act on messages; the inbox keeps them).
async fn take_message(State(state): State<WorkerState>) -> StatusCode {
    lock(&state.shared).stats.messages += 1;
    StatusCode::ACCEPTED
}

/// Takes a subscribed event delivery: counted and acknowledged.
async fn take_event(State(state): State<WorkerState>) -> StatusCode {
    lock(&state.shared).stats.events += 1;
    StatusCode::OK
}

async fn stats(State(state): State<WorkerState>) -> Json<WorkerStats> {
    Json(lock(&state.shared).stats.clone())
}

/// Answers a contract-net call for proposals with a proposal derived from
/// the settings alone (deterministic): full match of the required skills,
/// effort = the simulated latency in seconds, cost = the simulated cost,
/// confidence = 1 - failure rate, no conditions.
async fn answer_cfp(
    State(state): State<WorkerState>,
    Json(cfp): Json<CallForProposals>,
) -> Json<ProposalBody> {
    lock(&state.shared).stats.cfps += 1;
    let c = &state.config;
    let matched: Vec<String> = cfp.task["required_skills"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    Json(ProposalBody {
        agent_id: Some(cfp.agent_id),
        capability_match: Some(1.0),
        matched_skills: matched,
        additional_skills: Vec::new(),
        estimated_effort: c.latency_ms as f64 / 1000.0,
        estimated_cost: c.cost_per_task.max(0.0),
        confidence: (1.0 - c.failure_rate).clamp(0.0, 1.0),
        conditions: Vec::new(),
    })
}

async fn cancel_task(State(state): State<WorkerState>, Path(_attempt): Path<Uuid>) -> StatusCode {
    lock(&state.shared).stats.cancels += 1;
    StatusCode::OK
}

async fn accept_task(
    State(state): State<WorkerState>,
    Json(req): Json<DispatchRequest>,
) -> axum::response::Response {
    {
        let mut shared = lock(&state.shared);
        shared.stats.received += 1;
        shared
            .arrivals
            .entry(req.attempt_id)
            .or_insert_with(std::time::SystemTime::now);
        let seen = shared.seen.entry(req.attempt_id).or_insert(0);
        *seen += 1;
        if *seen > 1 {
            shared.stats.duplicate_dispatches += 1;
        }
    }
    let identity = if state.config.roll_by_task {
        task_identity(&req.goal, &req.task.key, req.attempt_number)
    } else {
        req.attempt_id.as_u128()
    };
    let roll = Roll::new(state.config.seed, Uuid::from_u128(identity));
    let fate = roll.fate(&state.config);
    if fate.fails {
        lock(&state.shared).stats.failed += 1;
    }
    let report = simulated_report(&state.config, &req, fate.fails);
    if state.config.inline {
        return (StatusCode::OK, Json(report)).into_response();
    }
    let mut delay = Duration::from_millis(
        state.config.latency_ms + (roll.latency_fraction * state.config.jitter_ms as f64) as u64,
    );
    let late = match fate.fault {
        Fault::Hang => {
            lock(&state.shared).stats.hung += 1;
            return (StatusCode::ACCEPTED, Json(json!({"accepted": true}))).into_response();
        }
        Fault::Late => {
            delay = Duration::from_millis(state.config.late_ms);
            lock(&state.shared).stats.late += 1;
            true
        }
        Fault::Duplicate => {
            lock(&state.shared).stats.duplicated += 1;
            false
        }
        Fault::None => false,
    };
    let twice = fate.fault == Fault::Duplicate;
    let times = if twice { 2 } else { 1 };
    // A late worker stays silent (no heartbeats) so its lease runs out first.
    tokio::spawn(work_then_report(state, req, report, delay, times, !late));
    (StatusCode::ACCEPTED, Json(json!({"accepted": true}))).into_response()
}

async fn work_then_report(
    state: WorkerState,
    req: DispatchRequest,
    report: WorkerReport,
    delay: Duration,
    times: u32,
    heartbeats: bool,
) {
    // Heartbeat at least every 5 s so long simulated work keeps its lease.
    let mut remaining = delay;
    let beat = Duration::from_secs(5);
    while remaining > beat && heartbeats {
        tokio::time::sleep(beat).await;
        remaining -= beat;
        let _ = req
            .callback
            .authorize(state.http.post(&req.callback.heartbeat_url))
            .json(&Heartbeat::default())
            .send()
            .await;
    }
    tokio::time::sleep(remaining).await;
    if lock(&state.shared).cancelled.contains(&req.attempt_id) {
        // Cancelled while working: stop without reporting.
        return;
    }
    for _ in 0..times {
        post_result(&state, &req, &report).await;
    }
}

async fn post_result(state: &WorkerState, req: &DispatchRequest, report: &WorkerReport) {
    // Retry transport errors and 5xx (another replica will answer); a 4xx is final.
    for attempt in 0..6u32 {
        let sent = req
            .callback
            .authorize(state.http.post(&req.callback.result_url))
            .json(report)
            .send()
            .await;
        match sent {
            Ok(resp) if resp.status().is_success() => {
                lock(&state.shared).stats.reports_accepted += 1;
                return;
            }
            Ok(resp) if resp.status().is_client_error() => {
                lock(&state.shared).stats.reports_refused += 1;
                return;
            }
            Ok(resp) => tracing::warn!(status = %resp.status(), "result callback failed; retrying"),
            Err(e) => tracing::warn!(error = %e, "result callback failed; retrying"),
        }
        tokio::time::sleep(Duration::from_millis(100 * 2u64.pow(attempt))).await;
    }
}

fn simulated_report(config: &SimulationConfig, req: &DispatchRequest, fails: bool) -> WorkerReport {
    if fails {
        return WorkerReport {
            status: ReportStatus::Failed,
            output: None,
            error: Some(format!(
                "simulated failure of '{}' (seed {})",
                req.task.title, config.seed
            )),
            failure_kind: Some(FailureKind::Quality),
            cost: config.cost_per_task,
            tokens: 100,
            retry_after_secs: None,
        };
    }
    let mut output = json!({
        "summary": format!("Simulated result of '{}' by {}", req.task.title, req.agent_id),
        "task": req.task.key,
        "used_upstream": req.upstream.iter().map(|u| u.key.clone()).collect::<Vec<_>>(),
        "attempt": req.attempt_number,
    });
    // Asked to verify another result: a simulated verifier approves it.
    if req.task.task_type == "verification" {
        output["passed"] = json!(true);
        output["reasons"] = json!([]);
    }
    WorkerReport {
        status: ReportStatus::Succeeded,
        output: Some(output),
        error: None,
        failure_kind: None,
        cost: config.cost_per_task,
        tokens: 1000,
        retry_after_secs: None,
    }
}

/// A fault injected into one attempt's delivery (besides a failed result).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// Answered normally.
    None,
    /// Accepted and never reported.
    Hang,
    /// Reported twice.
    Duplicate,
    /// Reported after `late_ms`, silently.
    Late,
}

/// What the simulation does with one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fate {
    /// The result says `failed`.
    pub fails: bool,
    /// How the result is (not) delivered.
    pub fault: Fault,
}

/// The fate of the attempt with this identity (an attempt id as `u128`, or
/// [`task_identity`] with `roll_by_task`): a pure function of the seed and
/// the rates, so a run's fault pattern can be computed ahead.
pub fn fate(config: &SimulationConfig, identity: u128) -> Fate {
    Roll::new(config.seed, Uuid::from_u128(identity)).fate(config)
}

/// A stable identity of attempt `attempt_number` of the task `key` of the
/// mission with `goal` (FNV-1a, 128 bits: the same in every run and build).
pub fn task_identity(goal: &str, key: &str, attempt_number: i32) -> u128 {
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013B;
    let mut h: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    let attempt = attempt_number.to_le_bytes();
    // Separators keep ("ab", "c") and ("a", "bc") apart.
    for part in [goal.as_bytes(), &[0xff], key.as_bytes(), &[0xff], &attempt] {
        for b in part {
            h ^= u128::from(*b);
            h = h.wrapping_mul(PRIME);
        }
    }
    h
}

/// Deterministic random draws for one attempt.
struct Roll {
    failure: f64,
    latency_fraction: f64,
    fault: f64,
}

impl Roll {
    fn new(seed: u64, attempt: Uuid) -> Roll {
        let (hi, lo) = attempt.as_u64_pair();
        let mut state = seed ^ hi.rotate_left(17) ^ lo;
        let mut next = || {
            // splitmix64: small, fast and good enough for simulation.
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            (z ^ (z >> 31)) as f64 / u64::MAX as f64
        };
        Roll {
            failure: next(),
            latency_fraction: next(),
            fault: next(),
        }
    }

    /// Faults are drawn in a fixed order from disjoint slices of one number,
    /// so the same seed gives the same pattern.
    fn fate(&self, cfg: &SimulationConfig) -> Fate {
        let f = self.fault;
        let fault = if f < cfg.hang_rate {
            Fault::Hang
        } else if f < cfg.hang_rate + cfg.duplicate_rate {
            Fault::Duplicate
        } else if f < cfg.hang_rate + cfg.duplicate_rate + cfg.late_rate {
            Fault::Late
        } else {
            Fault::None
        };
        Fate {
            fails: self.failure < cfg.failure_rate,
            fault,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rolls_are_deterministic_and_spread() {
        let id = Uuid::from_u128(42);
        let a = Roll::new(7, id);
        let b = Roll::new(7, id);
        assert_eq!(a.failure, b.failure);
        assert_ne!(Roll::new(8, id).failure, a.failure);
        let failures = (0..10_000u128)
            .filter(|i| Roll::new(1, Uuid::from_u128(*i)).failure < 0.1)
            .count();
        assert!((800..1200).contains(&failures), "{failures}");
    }

    #[test]
    fn task_identities_are_stable_and_distinct() {
        let a = task_identity("goal", "draft", 1);
        assert_eq!(a, task_identity("goal", "draft", 1));
        assert_ne!(a, task_identity("goal", "draft", 2));
        assert_ne!(a, task_identity("goal", "drafts", 1));
        assert_ne!(task_identity("ab", "c", 1), task_identity("a", "bc", 1));
        // Pinned (computed independently): a changed hash would silently
        // change the fault pattern of every seeded run.
        assert_eq!(
            task_identity("g", "k", 1),
            0x8404_0326_0265_9b40_e7f5_6f55_2a91_6304
        );
    }

    #[test]
    fn fates_follow_the_rates_in_a_fixed_order() {
        let cfg = SimulationConfig {
            failure_rate: 0.10,
            hang_rate: 0.05,
            duplicate_rate: 0.05,
            late_rate: 0.05,
            seed: 9,
            ..SimulationConfig::default()
        };
        let mut counts = HashMap::new();
        for i in 0..20_000u128 {
            *counts.entry(fate(&cfg, i).fault).or_insert(0) += 1;
        }
        for fault in [Fault::Hang, Fault::Duplicate, Fault::Late] {
            let n = counts.get(&fault).copied().unwrap_or(0);
            assert!((800..1200).contains(&n), "{fault:?}: {n}");
        }
        let none = SimulationConfig::default();
        assert!((0..1000u128).all(|i| fate(&none, i)
            == Fate {
                fails: false,
                fault: Fault::None
            }));
    }
}
