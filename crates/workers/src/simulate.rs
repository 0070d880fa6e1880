//! The simulated reference worker: a real HTTP server speaking the worker
//! protocol (through the [`harness`](crate::harness)), doing no real work.
//! Latency and failures are deterministic functions of the seed and the
//! attempt id (or, with `roll_by_task`, of the goal, task key and attempt
//! number, which are the same in a rerun), so a run can be reproduced.
//!
//! Besides tasks it answers contract-net calls for proposals
//! (`POST /v1/cfp`) and takes pushed messages and events, counting them.

use std::{
    collections::{HashMap, HashSet},
    net::SocketAddr,
    sync::{Arc, Mutex, MutexGuard},
    time::{Duration, SystemTime},
};

use axum::{Json, Router, extract::State, http::StatusCode, routing::post};
use coordinator_core::domain::{FailureKind, ReportStatus};
use coordinator_protocol::{
    CallForProposals, DispatchRequest, Heartbeat, ProposalBody, WorkerReport,
};
use serde::Serialize;
use serde_json::json;
use tokio::net::TcpListener;
use uuid::Uuid;

use crate::harness::{self, Attempt, Counters, Plan, Reply, Server};

/// Heartbeat period while simulated work runs, so long work keeps its lease.
const HEARTBEAT_EVERY: Duration = Duration::from_secs(5);

/// Attempts to deliver one result (another replica may answer a retry).
const DELIVERY_ATTEMPTS: u32 = 6;

/// First delay between result deliveries; doubles each time.
const DELIVERY_BACKOFF: Duration = Duration::from_millis(100);

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
    /// Attempts stopped by a cancel before their result was reported.
    pub cancelled: u64,
    /// Attempts dropped because a heartbeat was answered `409` (stale).
    pub abandoned: u64,
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

/// What the simulation counts beyond the harness.
#[derive(Default)]
struct Own {
    stats: WorkerStats,
    /// Attempt ids received, to count redeliveries.
    seen: HashSet<Uuid>,
    /// When each attempt's first dispatch arrived (for latency benchmarks).
    arrivals: HashMap<Uuid, SystemTime>,
}

/// The simulation: its settings and counters.
struct Simulation {
    config: SimulationConfig,
    own: Mutex<Own>,
}

impl Simulation {
    fn own(&self) -> MutexGuard<'_, Own> {
        harness::lock(&self.own)
    }
}

/// One simulated attempt: the report it will send, after how long.
struct Job {
    report: WorkerReport,
    delay: Duration,
}

impl harness::Worker for Simulation {
    type Job = Job;
    type Stats = WorkerStats;

    fn arrived(&self, req: &DispatchRequest) {
        let mut own = self.own();
        own.arrivals
            .entry(req.attempt_id)
            .or_insert_with(SystemTime::now);
        if !own.seen.insert(req.attempt_id) {
            own.stats.duplicate_dispatches += 1;
        }
    }

    fn accept(&self, req: &DispatchRequest) -> Reply<Job> {
        let config = &self.config;
        let identity = if config.roll_by_task {
            task_identity(&req.goal, &req.task.key, req.attempt_number)
        } else {
            req.attempt_id.as_u128()
        };
        let roll = Roll::new(config.seed, Uuid::from_u128(identity));
        let fate = roll.fate(config);
        if fate.fails {
            self.own().stats.failed += 1;
        }
        let report = simulated_report(config, req, fate.fails);
        if config.inline {
            return Reply::Inline(report);
        }
        let delay = Duration::from_millis(
            config.latency_ms + (roll.latency_fraction * config.jitter_ms as f64) as u64,
        );
        let mut plan = Plan::new(Job { report, delay });
        match fate.fault {
            Fault::Hang => {
                self.own().stats.hung += 1;
                return Reply::Silent;
            }
            Fault::Late => {
                plan.job.delay = Duration::from_millis(config.late_ms);
                // A late worker stays silent (no heartbeats) so its lease runs out first.
                plan.heartbeats = false;
                self.own().stats.late += 1;
            }
            Fault::Duplicate => {
                plan.deliveries = 2;
                self.own().stats.duplicated += 1;
            }
            Fault::None => {}
        }
        Reply::Run(plan)
    }

    async fn run(
        &self,
        _req: &DispatchRequest,
        job: Job,
        _attempt: &Attempt,
    ) -> Option<WorkerReport> {
        tokio::time::sleep(job.delay).await;
        Some(job.report)
    }

    fn stats(&self, counters: &Counters) -> WorkerStats {
        WorkerStats {
            received: counters.received,
            reports_accepted: counters.reported,
            reports_refused: counters.refused + counters.rejected,
            cancels: counters.cancel_requests,
            cancelled: counters.cancelled,
            abandoned: counters.abandoned,
            ..self.own().stats.clone()
        }
    }
}

/// A running simulated worker.
pub struct SimulatedWorker {
    server: Server<Simulation>,
    simulation: Arc<Simulation>,
}

impl SimulatedWorker {
    /// Binds `listen` (port 0 for any) and serves in the background.
    pub async fn spawn(listen: SocketAddr, config: SimulationConfig) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(listen).await?;
        let simulation = Arc::new(Simulation {
            config,
            own: Mutex::new(Own::default()),
        });
        let settings = harness::Settings {
            name: "simulated worker",
            heartbeat_every: HEARTBEAT_EVERY,
            heartbeat: Heartbeat::default(),
            delivery_attempts: DELIVERY_ATTEMPTS,
            delivery_backoff: DELIVERY_BACKOFF,
        };
        let extra = extra_routes(simulation.clone());
        let server = Server::start(listener, simulation.clone(), settings, extra)?;
        Ok(SimulatedWorker { server, simulation })
    }

    /// The base URL to register as an agent's `endpoint_url`.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// What it has seen so far.
    pub fn stats(&self) -> WorkerStats {
        self.server.stats()
    }

    /// When each attempt's dispatch arrived, by attempt id.
    pub fn arrivals(&self) -> HashMap<Uuid, SystemTime> {
        self.simulation.own().arrivals.clone()
    }

    /// Waits until the server task ends (it runs until the process exits).
    pub async fn wait(self) -> anyhow::Result<()> {
        self.server.wait().await
    }
}

/// The routes beyond the task protocol: contract net, messages, events.
fn extra_routes(simulation: Arc<Simulation>) -> Router {
    Router::new()
        .route("/v1/cfp", post(answer_cfp))
        .route("/v1/messages", post(take_message))
        .route("/v1/events", post(take_event))
        .with_state(simulation)
}

/// Takes a pushed ACL message: counted and acknowledged with 202 (the
/// simulation does not act on messages; the inbox keeps them).
async fn take_message(State(sim): State<Arc<Simulation>>) -> StatusCode {
    sim.own().stats.messages += 1;
    StatusCode::ACCEPTED
}

/// Takes a subscribed event delivery: counted and acknowledged.
async fn take_event(State(sim): State<Arc<Simulation>>) -> StatusCode {
    sim.own().stats.events += 1;
    StatusCode::OK
}

/// Answers a contract-net call for proposals with a proposal derived from
/// the settings alone (deterministic): full match of the required skills,
/// effort = the simulated latency in seconds, cost = the simulated cost,
/// confidence = 1 - failure rate, no conditions.
async fn answer_cfp(
    State(sim): State<Arc<Simulation>>,
    Json(cfp): Json<CallForProposals>,
) -> Json<ProposalBody> {
    sim.own().stats.cfps += 1;
    let c = &sim.config;
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

    /// A worker with `config` (latency 300 ms unless set) and a coordinator
    /// answering results with `result_statuses` in turn (then 200).
    async fn setup(
        config: SimulationConfig,
        result_statuses: &[u16],
    ) -> (SimulatedWorker, wiremock::MockServer) {
        use crate::test_support::{coordinator, path_suffix};
        use wiremock::{Mock, ResponseTemplate, matchers::method};
        let coord = coordinator(200, 200).await;
        for status in result_statuses {
            Mock::given(method("POST"))
                .and(path_suffix("/result"))
                .respond_with(ResponseTemplate::new(*status))
                .up_to_n_times(1)
                .with_priority(1)
                .mount(&coord)
                .await;
        }
        let worker = SimulatedWorker::spawn("127.0.0.1:0".parse().unwrap(), config)
            .await
            .unwrap();
        (worker, coord)
    }

    fn quick() -> SimulationConfig {
        SimulationConfig {
            latency_ms: 300,
            ..SimulationConfig::default()
        }
    }

    #[tokio::test]
    async fn a_result_is_reported_after_the_latency() {
        use crate::test_support::{dispatch, report_of, send, wait_for, wait_until};
        let (worker, coord) = setup(quick(), &[]).await;
        let req = dispatch(&coord.uri());
        assert_eq!(
            send(&worker.url(), &req).await,
            reqwest::StatusCode::ACCEPTED
        );
        let results = wait_for(&coord, "/result", 1).await;
        let report = report_of(&results[0]);
        assert_eq!(report.status, ReportStatus::Succeeded);
        let output = report.output.unwrap();
        assert_eq!(output["task"], "draft");
        assert_eq!(output["used_upstream"], json!(["research"]));
        wait_until(|| worker.stats().reports_accepted == 1).await;
        let stats = worker.stats();
        assert_eq!((stats.received, stats.duplicate_dispatches), (1, 0));
        assert!(worker.arrivals().contains_key(&req.attempt_id));
    }

    #[tokio::test]
    async fn inline_answers_with_the_report_at_once() {
        use crate::test_support::dispatch;
        let config = SimulationConfig {
            inline: true,
            ..quick()
        };
        let (worker, coord) = setup(config, &[]).await;
        let resp = reqwest::Client::new()
            .post(format!("{}/v1/tasks", worker.url()))
            .json(&dispatch(&coord.uri()))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), reqwest::StatusCode::OK);
        let report: WorkerReport = resp.json().await.unwrap();
        assert_eq!(report.status, ReportStatus::Succeeded);
        assert!(coord.received_requests().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_cancel_stops_the_work_and_nothing_is_reported() {
        use crate::test_support::{cancel, dispatch, requests_to, send};
        let config = SimulationConfig {
            latency_ms: 1000,
            ..quick()
        };
        let (worker, coord) = setup(config, &[]).await;
        let req = dispatch(&coord.uri());
        send(&worker.url(), &req).await;
        let resp = cancel(&worker.url(), req.attempt_id).await;
        assert_eq!(
            resp.json::<serde_json::Value>().await.unwrap()["cancelled"],
            true
        );
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(requests_to(&coord, "/result").await.is_empty());
        let stats = worker.stats();
        assert_eq!(
            (stats.cancels, stats.cancelled, stats.reports_accepted),
            (1, 1, 0)
        );
    }

    #[tokio::test]
    async fn duplicated_results_are_posted_twice_and_the_second_refused() {
        use crate::test_support::{dispatch, send, wait_until};
        let config = SimulationConfig {
            duplicate_rate: 1.0,
            ..quick()
        };
        // The first result is accepted, the second refused as stale.
        let (worker, coord) = setup(config, &[200, 409]).await;
        send(&worker.url(), &dispatch(&coord.uri())).await;
        wait_until(|| worker.stats().reports_refused == 1).await;
        let stats = worker.stats();
        assert_eq!(
            (
                stats.duplicated,
                stats.reports_accepted,
                stats.reports_refused
            ),
            (1, 1, 1)
        );
    }

    #[tokio::test]
    async fn hung_attempts_are_accepted_and_never_reported() {
        use crate::test_support::{dispatch, send};
        let config = SimulationConfig {
            hang_rate: 1.0,
            failure_rate: 1.0,
            ..quick()
        };
        let (worker, coord) = setup(config, &[]).await;
        assert_eq!(
            send(&worker.url(), &dispatch(&coord.uri())).await,
            reqwest::StatusCode::ACCEPTED
        );
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(coord.received_requests().await.unwrap().is_empty());
        let stats = worker.stats();
        assert_eq!((stats.hung, stats.failed), (1, 1));
    }

    #[tokio::test]
    async fn calls_for_proposals_are_answered_from_the_settings() {
        let config = SimulationConfig {
            failure_rate: 0.25,
            ..quick()
        };
        let (worker, _coord) = setup(config, &[]).await;
        let cfp = CallForProposals {
            tender_id: Uuid::new_v4(),
            agent_id: "a1".into(),
            mission_id: Uuid::new_v4(),
            task_id: Uuid::new_v4(),
            task: json!({"required_skills": ["research"]}),
            deadline: time::OffsetDateTime::now_utc(),
            criteria: json!({}),
        };
        let proposal: ProposalBody = reqwest::Client::new()
            .post(format!("{}/v1/cfp", worker.url()))
            .json(&cfp)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(proposal.agent_id.as_deref(), Some("a1"));
        assert_eq!(proposal.matched_skills, ["research"]);
        assert_eq!(
            (proposal.estimated_effort, proposal.confidence),
            (0.3, 0.75)
        );
        assert_eq!(worker.stats().cfps, 1);
    }
}
