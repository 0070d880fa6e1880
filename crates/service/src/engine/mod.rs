//! The coordinator engine: the tick every replica runs.
//!
//! Each replica loops: dispatch (claim ready tasks, send them to workers),
//! then reconcile (expired leases; periodic safety-net sweeps). It wakes on
//! its interval and at once on `LISTEN coordinator_wake`, which transactions
//! `NOTIFY` when a task finishes or a mission starts. A full batch is followed
//! by another claim at once. Replicas share nothing but the database.

pub mod claim;
pub mod dispatch;
pub mod escalation;
pub mod planning;
pub mod reconcile;
pub mod report_batch;
pub mod reports;
mod successes;
pub mod task_outcome;

use std::{
    collections::HashMap,
    sync::Arc,
    time::{Duration, Instant},
};

use sqlx::{PgPool, postgres::PgListener};
use tokio::{sync::watch, task::JoinSet};
use tracing::Instrument;
use uuid::Uuid;

use crate::{assignment::ScoreWeights, metrics::Phase, missions::PlanningConfig};

/// Tunables of the engine (all have sane defaults).
#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Names this replica in leases and events.
    pub replica_id: String,
    /// Base URL workers call back (`COORDINATOR_PUBLIC_URL`).
    pub public_url: String,
    /// Safety-net tick interval.
    pub tick_interval: Duration,
    /// How often the promotion/completion sweeps run.
    pub sweep_interval: Duration,
    /// Tasks claimed per transaction.
    pub batch_size: usize,
    /// An attempt with no heartbeat or report for this long is reclaimed.
    pub lease: Duration,
    /// Timeout of the dispatch request to a worker.
    pub dispatch_timeout: Duration,
    /// First retry delay.
    pub retry_base: Duration,
    /// Longest retry delay.
    pub retry_cap: Duration,
    /// Continuations per task before `continue` counts as failure.
    pub max_continuations: i32,
    /// Delay before a continuation is dispatched.
    pub continuation_delay: Duration,
    /// Scoring weights.
    pub weights: ScoreWeights,
    /// Client for calls to workers outside dispatch (cancel notices).
    pub worker_http: crate::egress::Client,
    /// Agents with this skill judge `must_pass` criteria that have no deterministic check.
    pub verifier_skill: String,
    /// The ladder may replan around a failed task (needs an LLM planner).
    pub escalation_replan: bool,
    /// Ladder replans per mission.
    pub max_escalation_replans: i32,
    /// Worker that runs contractors; `None`: no contractors are hired.
    pub contractor_url: Option<String>,
    /// A contractor is hired when the best roster agent's score (at zero
    /// load) is below this, or no roster agent can take the task at all.
    pub contractor_threshold: f64,
    /// Concurrency cap of each contractor.
    pub contractor_concurrency: i32,
    /// Dispatches in a row that may fail to reach an agent's endpoint before
    /// the agent is `unreachable` (skipped by scoring until it heartbeats or
    /// answers a probe).
    pub unreachable_after: i32,
    /// How often an unreachable agent's endpoint is probed (any HTTP answer
    /// brings it back).
    pub probe_interval: Duration,
    /// How long a tool-approval request waits for a person when the task's
    /// policy sets no timeout of its own.
    pub tool_approval_timeout: Duration,
    /// This replica's process-local metrics (shared by its clones).
    pub metrics: Arc<crate::metrics::Metrics>,
    /// At shutdown, how long in-flight dispatches (and HTTP requests) may
    /// still take before they are cut off and their leases released.
    pub shutdown_grace: Duration,
    /// Most reports applied in one transaction by the group commit
    /// ([`report_batch`]); 1 applies each report alone.
    pub report_batch: usize,
    /// How long the group commit waits for more reports once a batch has
    /// more than one (a lone report never waits); zero: never.
    pub report_linger: Duration,
    /// The replica's group commit, when started ([`report_batch::ReportQueue::start`]).
    pub reports: Option<report_batch::ReportQueue>,
    /// Wakes this replica's own engine after a report freed a slot or made
    /// work ready, instead of a NOTIFY to every replica (`None`: no engine
    /// runs here, so reports NOTIFY the others).
    pub local_wake: Option<Arc<tokio::sync::Notify>>,
    /// Announces the claims' and reports' event writes after their commits
    /// (`None`: the event log's trigger notifies inside them; see
    /// [`crate::store::event_notify`]).
    pub events_notifier: Option<crate::store::event_notify::Notifier>,
}

impl EngineConfig {
    /// Defaults for a replica whose workers call back at `public_url`.
    pub fn new(public_url: impl Into<String>) -> Self {
        EngineConfig {
            replica_id: default_replica_id(),
            public_url: public_url.into(),
            tick_interval: Duration::from_secs(1),
            sweep_interval: Duration::from_secs(5),
            batch_size: 32,
            lease: Duration::from_secs(60),
            dispatch_timeout: Duration::from_secs(10),
            retry_base: Duration::from_secs(1),
            retry_cap: Duration::from_secs(60),
            max_continuations: 10,
            continuation_delay: reports::DEFAULT_CONTINUATION_DELAY,
            weights: ScoreWeights::default(),
            worker_http: crate::egress::Client::default_agents(),
            verifier_skill: "verification".into(),
            escalation_replan: false,
            max_escalation_replans: 1,
            contractor_url: None,
            contractor_threshold: 0.0,
            contractor_concurrency: 4,
            unreachable_after: 3,
            probe_interval: Duration::from_secs(30),
            tool_approval_timeout: Duration::from_secs(
                crate::coordination::tool_policy::DEFAULT_TIMEOUT_SECS,
            ),
            metrics: Arc::default(),
            shutdown_grace: Duration::from_secs(10),
            report_batch: 32,
            report_linger: report_batch::DEFAULT_LINGER,
            reports: None,
            local_wake: None,
            events_notifier: None,
        }
    }

    /// Begins one of the engine's hot transactions (claims, reports): its
    /// event writes are announced by [`EngineConfig::committed`].
    pub(crate) async fn begin(
        &self,
        pool: &PgPool,
    ) -> sqlx::Result<sqlx::Transaction<'static, sqlx::Postgres>> {
        crate::store::event_notify::begin(pool, self.events_notifier.as_ref()).await
    }

    /// [`EngineConfig::begin`] on a connection the caller keeps.
    pub(crate) async fn begin_on<'c>(
        &self,
        conn: &'c mut sqlx::PgConnection,
    ) -> sqlx::Result<sqlx::Transaction<'c, sqlx::Postgres>> {
        crate::store::event_notify::begin_on(conn, self.events_notifier.as_ref()).await
    }

    /// After the commit of a transaction from [`EngineConfig::begin`].
    pub(crate) fn committed(&self) {
        if let Some(n) = &self.events_notifier {
            n.committed();
        }
    }
}

/// `host-pid-xxxx`: unique per process, readable in events.
pub fn default_replica_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_owned())
        .unwrap_or_else(|_| "host".into());
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    format!("{host}-{}-{}", std::process::id(), &suffix[..4])
}

/// The tick loop of one replica.
pub struct Engine {
    pool: PgPool,
    cfg: Arc<EngineConfig>,
    planning: Arc<PlanningConfig>,
    http: crate::egress::Client,
}

impl Engine {
    /// An engine over `pool`.
    pub fn new(
        pool: PgPool,
        cfg: EngineConfig,
        planning: Arc<PlanningConfig>,
        http: crate::egress::Client,
    ) -> Self {
        Engine {
            pool,
            cfg: Arc::new(cfg),
            planning,
            http,
        }
    }

    /// Runs until `shutdown` turns true; then stops claiming and waits (up to
    /// the dispatch timeout) for requests already being sent.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let mut listener = match PgListener::connect_with(&self.pool).await {
            Ok(mut l) => match l.listen("coordinator_wake").await {
                Ok(()) => Some(l),
                Err(e) => {
                    tracing::warn!(error = %e, "LISTEN failed; relying on the interval tick");
                    None
                }
            },
            Err(e) => {
                tracing::warn!(error = %e, "LISTEN connection failed; relying on the interval tick");
                None
            }
        };
        let mut interval = tokio::time::interval(self.cfg.tick_interval);
        interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut in_flight = InFlight::default();
        let mut last_sweep: Option<Instant> = None;
        let mut sweep_cursor = reconcile::SweepCursor::default();
        // A wake-up (NOTIFY: work became ready or a slot came free) only
        // claims; the reconcile phases run on the interval. Every commit that
        // finishes an attempt wakes every replica, so running them per wake
        // made each replica's housekeeping grow with the report rate, and
        // each added replica slowed the others.
        let mut housekeeping_due = true;
        // Workflow tokens wait for agent tasks' missions: the workflows are
        // moved on wake-ups too (a report ending one wakes every replica).
        let mut workflow_work_out = false;
        // LLM planning runs beside the tick (a model may take seconds), one mission at a time.
        let mut planner: Option<tokio::task::JoinHandle<()>> = None;
        tracing::info!(replica = %self.cfg.replica_id, "engine started");
        loop {
            if *shutdown.borrow() {
                break;
            }
            if self.planning.llm.is_some() && planner.as_ref().is_none_or(|h| h.is_finished()) {
                let (pool, cfg, planning) =
                    (self.pool.clone(), self.cfg.clone(), self.planning.clone());
                planner = Some(tokio::spawn(async move {
                    loop {
                        match planning::plan_one(&pool, &cfg, &planning).await {
                            Ok(true) => continue,
                            Ok(false) => break,
                            Err(e) => {
                                tracing::warn!(error = %e, "LLM planning failed");
                                break;
                            }
                        }
                    }
                }));
            }
            // One trace per tick, a child span per phase (see `telemetry`).
            let tick = tracing::info_span!("engine.tick", replica = %self.cfg.replica_id);
            let phase = |name: &'static str| tracing::info_span!(parent: &tick, "engine.phase", otel.name = name, phase = name);
            let started = Instant::now();
            let span = phase("tick.dispatch");
            self.dispatch_all(&mut in_flight, &span)
                .instrument(span.clone())
                .await;
            self.cfg.metrics.tick_phase(Phase::Dispatch, started);
            in_flight.reap();
            if housekeeping_due {
                workflow_work_out = self
                    .housekeeping(&tick, &mut last_sweep, &mut sweep_cursor)
                    .await;
            } else if workflow_work_out {
                workflow_work_out = self.move_workflows(&tick).await;
            }
            drop(tick);
            tokio::select! {
                _ = interval.tick() => housekeeping_due = true,
                _ = local(&self.cfg.local_wake) => housekeeping_due = false,
                woke = recv(&mut listener) => {
                    housekeeping_due = false;
                    if let Err(e) = woke {
                        tracing::warn!(error = %e, "LISTEN connection lost; reconnecting");
                        tokio::time::sleep(self.cfg.tick_interval).await;
                    } else if let Some(l) = listener.as_mut() {
                        // Wakes that arrived meanwhile are answered by the
                        // one claim that follows.
                        while l.next_buffered().is_some() {}
                    }
                }
                _ = shutdown.changed() => {}
            }
        }
        self.wind_down(planner, in_flight).await;
        tracing::info!(replica = %self.cfg.replica_id, "engine stopped");
    }

    /// Graceful stop, after claiming has stopped: in-flight dispatches get
    /// the grace period; those still unanswered are cut off and, with the
    /// planning lease this replica may hold, released at once so another
    /// replica takes them over now rather than when the lease runs out.
    async fn wind_down(
        &self,
        planner: Option<tokio::task::JoinHandle<()>>,
        mut in_flight: InFlight,
    ) {
        // A planning round cut short rolls back; its mission is released below.
        if let Some(p) = planner {
            p.abort();
        }
        let grace = self.cfg.shutdown_grace;
        let cut = match tokio::time::timeout(grace, in_flight.drain()).await {
            Ok(()) => Vec::new(),
            Err(_) => in_flight.abort().await,
        };
        if !cut.is_empty() {
            tracing::warn!(
                dispatches = cut.len(),
                grace_secs = grace.as_secs_f64(),
                "dispatches still in flight after the grace period; releasing their leases"
            );
        }
        match reconcile::release_leases(&self.pool, &self.cfg, &cut).await {
            Ok((tasks, missions)) if tasks + missions > 0 => {
                tracing::info!(tasks, missions, "released leases at shutdown");
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "could not release leases at shutdown; they will expire")
            }
        }
    }

    /// The periodic sweeps: offline agents, reservations, overdue approvals,
    /// voting windows, missions left behind, deferred decisions.
    async fn sweep(&self, sweep_cursor: &mut reconcile::SweepCursor) {
        if let Err(e) = reconcile::offline_agents(&self.pool, &self.cfg).await {
            tracing::warn!(error = %e, "offline-agent check failed");
        }
        if let Err(e) = reconcile::probe_unreachable(&self.pool, &self.cfg).await {
            tracing::warn!(error = %e, "unreachable-agent probe failed");
        }
        if let Err(e) = reconcile::expire_reservations(&self.pool).await {
            tracing::warn!(error = %e, "reservation expiry sweep failed");
        }
        // Timeouts and voting windows settle even if nobody reads them.
        if let Err(e) = reconcile::settle_overdue_approvals(&self.pool).await {
            tracing::warn!(error = %e, "tool-approval timeout sweep failed");
        }
        if let Err(e) = reconcile::close_voting_windows(&self.pool).await {
            tracing::warn!(error = %e, "voting-window sweep failed");
        }
        if let Err(e) = reconcile::sweep(&self.pool, &self.cfg, sweep_cursor).await {
            tracing::warn!(error = %e, "sweep failed");
        }
        // Governance: deferred decisions whose re-check is due.
        let actor = format!("engine:{}", self.cfg.replica_id);
        if let Err(e) = crate::coordination::governance::recheck_deferred(&self.pool, &actor).await
        {
            tracing::warn!(error = %e, "decision re-check failed");
        }
    }

    /// The interval's phases: expired leases, progress checks, tender
    /// solicitation, and the sweeps when `sweep_interval` has passed.
    /// Moves running workflows (due timers, finished tasks and calls,
    /// thrown messages and signals, timer starts); whether tokens still wait
    /// for agent tasks' missions.
    async fn move_workflows(&self, tick: &tracing::Span) -> bool {
        let actor = format!("engine:{}", self.cfg.replica_id);
        let span = tracing::info_span!(parent: tick, "engine.phase", otel.name = "tick.workflows", phase = "tick.workflows");
        match crate::workflows::pump::run(
            &self.pool,
            &self.planning,
            self.cfg.events_notifier.as_ref(),
            &actor,
        )
        .instrument(span)
        .await
        {
            Ok(p) => p.agent_work_out,
            Err(e) => {
                tracing::warn!(error = %e, "moving workflows failed");
                false
            }
        }
    }

    /// The interval's phases; whether workflow tokens wait for agent tasks.
    async fn housekeeping(
        &self,
        tick: &tracing::Span,
        last_sweep: &mut Option<Instant>,
        sweep_cursor: &mut reconcile::SweepCursor,
    ) -> bool {
        let phase = |name: &'static str| tracing::info_span!(parent: tick, "engine.phase", otel.name = name, phase = name);
        let started = Instant::now();
        if let Err(e) = reconcile::reclaim_expired_leases(&self.pool, &self.cfg)
            .instrument(phase("tick.reconcile"))
            .await
        {
            tracing::warn!(error = %e, "reconcile failed");
        }
        // Slots reports gave back to agents no claim has locked since: their
        // rows (running count, status, LAST SEEN) catch up within a tick.
        if let Err(e) = crate::store::agents::fold_returns(&self.pool)
            .instrument(phase("tick.reconcile"))
            .await
        {
            tracing::warn!(error = %e, "folding agents' returned slots failed");
        }
        self.cfg.metrics.tick_phase(Phase::Reconcile, started);
        let started = Instant::now();
        if let Err(e) = reconcile::progress_checks(&self.pool, &self.cfg)
            .instrument(phase("tick.progress_checks"))
            .await
        {
            tracing::warn!(error = %e, "progress checks failed");
        }
        self.cfg.metrics.tick_phase(Phase::ProgressChecks, started);
        let workflow_work_out = self.move_workflows(tick).await;
        let started = Instant::now();
        // Contract net: ask the workers of newly opened tenders for proposals.
        if let Err(e) = crate::coordination::contract_net::solicit(
            &self.pool,
            &self.http,
            self.cfg.dispatch_timeout,
        )
        .instrument(phase("tick.contract_net"))
        .await
        {
            tracing::warn!(error = %e, "CFP solicitation failed");
        }
        self.cfg.metrics.tick_phase(Phase::ContractNet, started);
        if last_sweep.is_none_or(|t| t.elapsed() >= self.cfg.sweep_interval) {
            let started = Instant::now();
            *last_sweep = Some(started);
            self.sweep(sweep_cursor)
                .instrument(phase("tick.sweep"))
                .await;
            self.cfg.metrics.tick_phase(Phase::Sweep, started);
        }
        workflow_work_out
    }

    /// Claims batches until one comes back short, sending each dispatch
    /// concurrently; a short claim that lost tasks to another replica's
    /// claim (agents it held) is tried again after a moment, a few times.
    async fn dispatch_all(&self, in_flight: &mut InFlight, phase: &tracing::Span) {
        let mut retries = 0;
        loop {
            let claimed = match dispatch::claim(&self.pool, &self.cfg).await {
                Ok(c) => c,
                Err(e) => {
                    tracing::warn!(error = %e, "claim failed");
                    return;
                }
            };
            let full = claimed.dispatches.len() >= self.cfg.batch_size;
            for d in claimed.dispatches {
                let (pool, cfg, http) = (self.pool.clone(), self.cfg.clone(), self.http.clone());
                // Each attempt is a trace of its own (dispatch, worker call,
                // callbacks), linked to the tick that claimed it.
                let span = dispatch::span(&d);
                span.follows_from(phase);
                let attempt = d.request.attempt_id;
                in_flight.spawn(
                    attempt,
                    async move { dispatch::send(&pool, &cfg, &http, d).await }.instrument(span),
                );
            }
            if full {
                continue;
            }
            if !claimed.contended || retries == CONTENDED_RETRIES {
                return;
            }
            retries += 1;
            tokio::time::sleep(CONTENDED_PAUSE).await;
        }
    }
}

/// How long a dispatcher waits before claiming again after its claim left
/// tasks to another replica's claim: about that claim's commit.
const CONTENDED_PAUSE: Duration = Duration::from_millis(2);
/// Claims tried again that way per wake-up.
const CONTENDED_RETRIES: u32 = 8;

/// Dispatches being sent, by attempt.
#[derive(Default)]
struct InFlight {
    tasks: JoinSet<()>,
    attempts: HashMap<tokio::task::Id, Uuid>,
}

impl InFlight {
    fn spawn(&mut self, attempt: Uuid, send: impl Future<Output = ()> + Send + 'static) {
        let handle = self.tasks.spawn(send);
        self.attempts.insert(handle.id(), attempt);
    }

    /// Forgets the finished ones.
    fn reap(&mut self) {
        while let Some(done) = self.tasks.try_join_next_with_id() {
            self.forget(done);
        }
    }

    /// Waits for all of them.
    async fn drain(&mut self) {
        while let Some(done) = self.tasks.join_next_with_id().await {
            self.forget(done);
        }
    }

    /// Cuts the rest off; returns their attempts.
    async fn abort(&mut self) -> Vec<Uuid> {
        self.tasks.abort_all();
        // Ones that finished meanwhile are not cut off.
        while let Some(done) = self.tasks.join_next_with_id().await {
            if done.is_ok() {
                self.forget(done);
            }
        }
        self.attempts.drain().map(|(_, a)| a).collect()
    }

    fn forget(&mut self, done: Result<(tokio::task::Id, ()), tokio::task::JoinError>) {
        let id = match done {
            Ok((id, ())) => id,
            Err(e) => e.id(),
        };
        self.attempts.remove(&id);
    }
}

/// Waits for this replica's own reports to wake the engine (never without).
async fn local(wake: &Option<Arc<tokio::sync::Notify>>) {
    match wake {
        Some(w) => w.notified().await,
        None => std::future::pending().await,
    }
}

async fn recv(listener: &mut Option<PgListener>) -> Result<(), sqlx::Error> {
    match listener {
        Some(l) => l.recv().await.map(|_| ()),
        None => std::future::pending().await,
    }
}
