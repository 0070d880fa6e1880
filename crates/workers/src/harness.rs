//! The worker protocol's server side, shared by the reference workers: the
//! routes (`POST /v1/tasks`, `POST /v1/tasks/{attempt_id}/cancel`,
//! `GET /v1/stats`, `GET /healthz`), accepting and cancelling attempts, the
//! in-flight bookkeeping, heartbeats, result delivery with retries and the
//! counters behind the stats. A worker only says how to do a task
//! ([`Worker`]).
//!
//! - A dispatch whose callback URLs are not http(s) is refused with `422`
//!   while the coordinator still listens, instead of failing silently later.
//! - A dispatch of an attempt already running here is acknowledged and not
//!   started again; a cancel that overtook its dispatch is remembered (a
//!   bounded number of them) and the dispatch then acknowledged and dropped.
//! - While an attempt runs, a heartbeat goes out every period; a `409`
//!   answer means the attempt is no longer live, so the work is abandoned
//!   and nothing is reported.
//! - A cancel drops the attempt's work; a result that arrives anyway is
//!   never reported.
//! - A result is retried after transport errors and 5xx (another replica
//!   will answer), never after a 4xx.

use std::{
    collections::{HashMap, HashSet, VecDeque},
    future::Future,
    net::SocketAddr,
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use axum::{
    Json, Router,
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::{get, post},
};
use coordinator_llm::error_chain;
use coordinator_protocol::{Callback, DispatchRequest, Heartbeat, WorkerReport};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::{net::TcpListener, sync::watch};
use uuid::Uuid;

/// How many cancels of not-yet-seen attempts are remembered (a cancel can overtake its dispatch).
const EARLY_CANCELS_KEPT: usize = 1024;

/// Timeout of one result callback.
const CALLBACK_TIMEOUT: Duration = Duration::from_secs(10);

/// How a worker does tasks; the harness does everything else.
pub trait Worker: Send + Sync + 'static {
    /// What [`Worker::accept`] hands to [`Worker::run`] for one attempt.
    type Job: Send + 'static;
    /// What `GET /v1/stats` serves.
    type Stats: Serialize + Send + 'static;

    /// Sees every well-formed dispatch first, redeliveries included.
    fn arrived(&self, _req: &DispatchRequest) {}

    /// Decides what becomes of a newly accepted attempt.
    fn accept(&self, req: &DispatchRequest) -> Reply<Self::Job>;

    /// Does the task; `None` when it stopped without a result (counted as
    /// cancelled). The harness drops this future when the attempt is
    /// cancelled or found stale.
    fn run(
        &self,
        req: &DispatchRequest,
        job: Self::Job,
        attempt: &Attempt,
    ) -> impl Future<Output = Option<WorkerReport>> + Send;

    /// Called once per attempt just before its result is delivered.
    fn reporting(&self, _req: &DispatchRequest, _report: &WorkerReport) {}

    /// The stats, from the harness's counters and the worker's own.
    fn stats(&self, counters: &Counters) -> Self::Stats;
}

/// What becomes of an accepted dispatch.
#[derive(Debug)]
pub enum Reply<J> {
    /// Answer `200` with this report at once; nothing runs afterwards.
    Inline(WorkerReport),
    /// Answer `202` and never report (a hung worker, for fault injection).
    Silent,
    /// Answer `202` and run the job in the background.
    Run(Plan<J>),
}

/// A job to run in the background, and how its attempt is reported.
#[derive(Debug)]
pub struct Plan<J> {
    /// What [`Worker::run`] gets.
    pub job: J,
    /// Whether heartbeats go out while it runs (a silent attempt lets its lease run out).
    pub heartbeats: bool,
    /// How many times the result is posted (twice to inject a duplicate).
    pub deliveries: u32,
}

impl<J> Plan<J> {
    /// `job` with heartbeats, its result posted once.
    pub fn new(job: J) -> Self {
        Plan {
            job,
            heartbeats: true,
            deliveries: 1,
        }
    }
}

/// The running attempt, as [`Worker::run`] sees it.
#[derive(Debug)]
pub struct Attempt {
    cancel: watch::Receiver<bool>,
}

impl Attempt {
    /// Whether the coordinator cancelled the attempt.
    pub fn is_cancelled(&self) -> bool {
        *self.cancel.borrow()
    }
}

/// How the harness talks to the coordinator for one kind of worker.
#[derive(Debug, Clone)]
pub struct Settings {
    /// What the worker is called in logs, e.g. `LLM worker`.
    pub name: &'static str,
    /// Time between heartbeats while an attempt runs.
    pub heartbeat_every: Duration,
    /// What each heartbeat says.
    pub heartbeat: Heartbeat,
    /// Attempts to deliver one result before giving up (the lease then reclaims the task).
    pub delivery_attempts: u32,
    /// First delay between result deliveries; doubles each time.
    pub delivery_backoff: Duration,
}

/// What the harness has seen and done, for the stats.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct Counters {
    /// Well-formed dispatch requests received, redeliveries included.
    pub received: u64,
    /// Dispatches of an attempt already running here (not started again).
    pub duplicates: u64,
    /// Cancel requests received.
    pub cancel_requests: u64,
    /// Attempts cancelled before their result was reported.
    pub cancelled: u64,
    /// Attempts dropped because a heartbeat was answered `409`.
    pub abandoned: u64,
    /// Results the coordinator accepted.
    pub reported: u64,
    /// Results the coordinator refused with `409` (the attempt was stale).
    pub refused: u64,
    /// Results the coordinator refused with another 4xx.
    pub rejected: u64,
    /// Results never delivered: every retry failed.
    pub gave_up: u64,
}

/// The harness's in-flight bookkeeping.
#[derive(Default)]
struct Book {
    counters: Counters,
    /// Attempts accepted and not finished, with the switch that cancels them.
    live: HashMap<Uuid, watch::Sender<bool>>,
    /// Cancels that arrived before their dispatch, oldest first (bounded).
    early_cancels: VecDeque<Uuid>,
    early_cancel_set: HashSet<Uuid>,
}

impl Book {
    /// Cancels a live attempt, or remembers the cancel briefly; whether the attempt was live.
    fn cancel(&mut self, attempt_id: Uuid) -> bool {
        self.counters.cancel_requests += 1;
        if let Some(switch) = self.live.get(&attempt_id) {
            // send_replace never fails, even when the attempt's task already ended.
            switch.send_replace(true);
            return true;
        }
        // The cancel may have overtaken its dispatch; remember it briefly.
        if self.early_cancel_set.insert(attempt_id) {
            self.early_cancels.push_back(attempt_id);
            if self.early_cancels.len() > EARLY_CANCELS_KEPT
                && let Some(oldest) = self.early_cancels.pop_front()
            {
                self.early_cancel_set.remove(&oldest);
            }
        }
        false
    }

    /// Whether a cancel for `attempt_id` came first (and forgets it).
    fn take_early_cancel(&mut self, attempt_id: Uuid) -> bool {
        let found = self.early_cancel_set.remove(&attempt_id);
        if found {
            self.early_cancels.retain(|id| *id != attempt_id);
        }
        found
    }
}

/// Everything the handlers and the attempts share.
struct Shared<W> {
    worker: Arc<W>,
    settings: Settings,
    callbacks: reqwest::Client,
    book: Mutex<Book>,
}

impl<W> Shared<W> {
    fn book(&self) -> MutexGuard<'_, Book> {
        lock(&self.book)
    }
}

/// A running worker server; it stops when dropped.
pub struct Server<W: Worker> {
    addr: SocketAddr,
    shared: Arc<Shared<W>>,
    task: tokio::task::JoinHandle<()>,
}

impl<W: Worker> Server<W> {
    /// Serves `worker` on `listener` in the background, with `extra` routes
    /// (which must not overlap the harness's) beside the protocol's.
    pub fn start(
        listener: TcpListener,
        worker: Arc<W>,
        settings: Settings,
        extra: Router,
    ) -> Result<Self, ServerError> {
        let addr = listener.local_addr().map_err(ServerError::Listen)?;
        let callbacks = reqwest::Client::builder()
            .timeout(CALLBACK_TIMEOUT)
            .build()
            .map_err(ServerError::Client)?;
        let name = settings.name;
        let shared = Arc::new(Shared {
            worker,
            settings,
            callbacks,
            book: Mutex::new(Book::default()),
        });
        let app = router(shared.clone()).merge(extra);
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "{name} stopped");
            }
        });
        Ok(Server { addr, shared, task })
    }

    /// The base URL to register as an agent's `endpoint_url`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The harness's counters so far.
    pub fn counters(&self) -> Counters {
        self.shared.book().counters.clone()
    }

    /// The worker's stats so far (what `GET /v1/stats` serves).
    pub fn stats(&self) -> W::Stats {
        self.shared.worker.stats(&self.counters())
    }

    /// Waits until the server task ends (it runs until the process exits).
    pub async fn wait(mut self) -> anyhow::Result<()> {
        (&mut self.task).await?;
        Ok(())
    }
}

impl<W: Worker> Drop for Server<W> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The listener's address could not be read.
    #[error("could not read the listening address: {0}")]
    Listen(std::io::Error),
    /// The callbacks' HTTP client could not be built.
    #[error("could not build the HTTP client: {0}")]
    Client(reqwest::Error),
}

/// Locks a worker's counters, poisoned or not: a panic while holding the
/// lock cannot leave counters inconsistent in a way that matters, so the
/// worker keeps serving.
pub fn lock<T>(counters: &Mutex<T>) -> MutexGuard<'_, T> {
    counters.lock().unwrap_or_else(|p| p.into_inner())
}

/// `builder` with the attempt's token and, when there is one, its
/// `traceparent`: how a callback request should start.
pub fn authorize(callback: &Callback, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    let builder = builder.bearer_auth(&callback.token);
    match &callback.traceparent {
        Some(tp) => builder.header("traceparent", tp),
        None => builder,
    }
}

fn router<W: Worker>(shared: Arc<Shared<W>>) -> Router {
    Router::new()
        .route("/v1/tasks", post(accept_task::<W>))
        .route("/v1/tasks/{attempt_id}/cancel", post(cancel_task::<W>))
        .route("/v1/stats", get(stats::<W>))
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .with_state(shared)
}

async fn stats<W: Worker>(State(shared): State<Arc<Shared<W>>>) -> Json<W::Stats> {
    let counters = shared.book().counters.clone();
    Json(shared.worker.stats(&counters))
}

async fn cancel_task<W: Worker>(
    State(shared): State<Arc<Shared<W>>>,
    Path(attempt_id): Path<Uuid>,
) -> Json<Value> {
    let found = shared.book().cancel(attempt_id);
    tracing::info!(%attempt_id, found, "cancel received");
    Json(json!({ "cancelled": found }))
}

async fn accept_task<W: Worker>(
    State(shared): State<Arc<Shared<W>>>,
    Json(req): Json<DispatchRequest>,
) -> Response {
    for (name, url) in [
        ("heartbeat_url", &req.callback.heartbeat_url),
        ("result_url", &req.callback.result_url),
    ] {
        if !is_http_url(url) {
            return (
                StatusCode::UNPROCESSABLE_ENTITY,
                Json(json!({
                    "error": "invalid_request",
                    "message": format!("callback.{name} is not an http(s) URL"),
                })),
            )
                .into_response();
        }
    }
    shared.worker.arrived(&req);
    let attempt_id = req.attempt_id;
    let (switch, cancel) = watch::channel(false);
    {
        let mut book = shared.book();
        book.counters.received += 1;
        if book.live.contains_key(&attempt_id) {
            // A redelivered dispatch: the first one is already working on it.
            book.counters.duplicates += 1;
            return accepted();
        }
        if book.take_early_cancel(attempt_id) {
            book.counters.cancelled += 1;
            return accepted();
        }
        book.live.insert(attempt_id, switch);
    }
    // Removes the attempt from the live set however it ends, here or in its task.
    let guard = LiveGuard {
        shared: shared.clone(),
        attempt_id,
    };
    let plan = match shared.worker.accept(&req) {
        Reply::Inline(report) => return (StatusCode::OK, Json(report)).into_response(),
        Reply::Silent => return accepted(),
        Reply::Run(plan) => plan,
    };
    tracing::debug!(
        %attempt_id,
        task = %req.task.key,
        agent = %req.agent_id,
        "task accepted"
    );
    tokio::spawn(run_attempt(shared, req, plan, cancel, guard));
    accepted()
}

fn accepted() -> Response {
    (StatusCode::ACCEPTED, Json(json!({"accepted": true}))).into_response()
}

fn is_http_url(url: &str) -> bool {
    reqwest::Url::parse(url).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
}

/// Removes an attempt from the live set when it ends, however it ends.
struct LiveGuard<W> {
    shared: Arc<Shared<W>>,
    attempt_id: Uuid,
}

impl<W> Drop for LiveGuard<W> {
    fn drop(&mut self) {
        self.shared.book().live.remove(&self.attempt_id);
    }
}

/// Resolves once the attempt is cancelled; never if it is not.
async fn cancelled(mut cancel: watch::Receiver<bool>) {
    if cancel.wait_for(|c| *c).await.is_err() {
        // The switch is gone only after the attempt ended: nothing can cancel it now.
        std::future::pending::<()>().await;
    }
}

/// How one attempt ended before reporting.
enum Ending {
    Done(WorkerReport),
    Cancelled,
    Stale,
}

async fn run_attempt<W: Worker>(
    shared: Arc<Shared<W>>,
    req: DispatchRequest,
    plan: Plan<W::Job>,
    cancel: watch::Receiver<bool>,
    _guard: LiveGuard<W>,
) {
    let attempt_id = req.attempt_id;
    let Plan {
        job,
        heartbeats,
        deliveries,
    } = plan;
    let attempt = Attempt {
        cancel: cancel.clone(),
    };
    let beats = async {
        if heartbeats {
            heartbeat_until_stale(&shared, &req).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    // Heartbeats cover the whole run (a wait for a model slot too), so a
    // queued task keeps its lease.
    let ending = tokio::select! {
        report = shared.worker.run(&req, job, &attempt) => {
            report.map_or(Ending::Cancelled, Ending::Done)
        }
        () = beats => Ending::Stale,
        () = cancelled(cancel.clone()) => Ending::Cancelled,
    };
    let report = match ending {
        Ending::Done(report) => report,
        Ending::Stale => {
            shared.book().counters.abandoned += 1;
            tracing::info!(%attempt_id, "coordinator says the attempt is stale; work abandoned");
            return;
        }
        Ending::Cancelled => {
            shared.book().counters.cancelled += 1;
            tracing::info!(%attempt_id, "attempt cancelled; nothing reported");
            return;
        }
    };
    if attempt.is_cancelled() {
        // Cancelled just as the result came in: the coordinator no longer wants it.
        shared.book().counters.cancelled += 1;
        tracing::info!(%attempt_id, "attempt cancelled; result discarded");
        return;
    }
    shared.worker.reporting(&req, &report);
    for _ in 0..deliveries {
        deliver(&shared, &req, &report).await;
    }
}

/// Posts heartbeats until the coordinator answers `409`; other failures are
/// logged and the next beat tried (the lease allows for a few lost ones).
async fn heartbeat_until_stale<W>(shared: &Shared<W>, req: &DispatchRequest) {
    let period = shared.settings.heartbeat_every;
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        let sent = authorize(
            &req.callback,
            shared.callbacks.post(&req.callback.heartbeat_url),
        )
        .timeout(period.max(Duration::from_secs(2)))
        .json(&shared.settings.heartbeat)
        .send()
        .await;
        match sent {
            Ok(resp) if resp.status() == StatusCode::CONFLICT => return,
            Ok(resp) if !resp.status().is_success() => {
                tracing::warn!(attempt_id = %req.attempt_id, status = %resp.status(), "heartbeat refused");
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(attempt_id = %req.attempt_id, error = %error_chain(&e), "heartbeat failed");
            }
        }
    }
}

/// Delivers a result: retries transport errors and 5xx, never a 4xx.
async fn deliver<W>(shared: &Shared<W>, req: &DispatchRequest, report: &WorkerReport) {
    let attempt_id = req.attempt_id;
    let attempts = shared.settings.delivery_attempts.max(1);
    for attempt in 1..=attempts {
        let sent = authorize(
            &req.callback,
            shared.callbacks.post(&req.callback.result_url),
        )
        .json(report)
        .send()
        .await;
        match sent {
            Ok(resp) if resp.status().is_success() => {
                shared.book().counters.reported += 1;
                return;
            }
            Ok(resp) if resp.status() == StatusCode::CONFLICT => {
                shared.book().counters.refused += 1;
                tracing::info!(%attempt_id, "result refused: the attempt is stale");
                return;
            }
            Ok(resp) if resp.status().is_client_error() => {
                // Bad token or a report the coordinator cannot read: resending
                // the same bytes cannot help.
                shared.book().counters.rejected += 1;
                tracing::warn!(%attempt_id, status = %resp.status(), "result rejected");
                return;
            }
            Ok(resp) => {
                tracing::warn!(%attempt_id, attempt, status = %resp.status(), "result delivery failed");
            }
            Err(e) => {
                tracing::warn!(%attempt_id, attempt, error = %error_chain(&e), "result delivery failed");
            }
        }
        if attempt < attempts {
            let factor = 2u32.saturating_pow(attempt - 1);
            tokio::time::sleep(shared.settings.delivery_backoff.saturating_mul(factor)).await;
        }
    }
    shared.book().counters.gave_up += 1;
    tracing::warn!(%attempt_id, "gave up delivering the result; the lease will reclaim the task");
}
