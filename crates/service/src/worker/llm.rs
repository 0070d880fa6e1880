//! The LLM worker (`coordinator worker --llm-url … --model …`): a real HTTP
//! server speaking the worker protocol that turns each dispatched task into
//! one chat-completions call against any OpenAI-compatible server (OpenAI,
//! llama.cpp's server, vLLM, …) and reports the answer.
//!
//! - `POST /v1/tasks` answers `202` at once; the call runs in the background,
//!   at most `--concurrency` at a time (llama.cpp serves one request at a time).
//! - While a task waits for a slot or for the model, a heartbeat goes to the
//!   coordinator every `--heartbeat-secs`; a `409` answer means the attempt is
//!   no longer live, so the call is abandoned and nothing is reported.
//! - `POST /v1/tasks/{attempt_id}/cancel` stops an attempt: its call is dropped
//!   and its result, should one arrive, is never reported.
//! - Provider failures (429, 5xx, timeouts, transport errors, other 4xx) are
//!   reported as `failed` with failure kind `infrastructure`; an empty answer
//!   is a `quality` failure.
//!
//! Nothing the provider, the model or the coordinator sends can panic the
//! worker, every provider body is read up to [`MAX_RESPONSE_BYTES`], and the
//! API key never appears in a log line, a report or `{:?}` output.

use std::{
    borrow::Cow,
    collections::{HashMap, HashSet, VecDeque},
    fmt,
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
use serde_json::{Value, json};
use tokio::{
    net::TcpListener,
    sync::{Semaphore, watch},
};
use uuid::Uuid;

use super::protocol::{DispatchRequest, Heartbeat, WorkerReport};
use crate::domain::{FailureKind, ReportStatus};

/// Largest provider response body read; a larger one is a failed call, not buffered.
pub const MAX_RESPONSE_BYTES: usize = 2 << 20;

/// Most bytes of one upstream task's output quoted to the model.
pub const MAX_UPSTREAM_BYTES: usize = 4 * 1024;

/// Most bytes of the success criteria, the inputs or the feedback quoted to the model.
const MAX_FIELD_BYTES: usize = 16 * 1024;

/// Longest part of a provider's error body kept in a report.
const BODY_EXCERPT_CHARS: usize = 500;

/// Attempts to deliver one result before giving up (the lease then reclaims the task).
const RESULT_ATTEMPTS: u32 = 5;

/// First delay between result deliveries; doubles each time.
const RESULT_RETRY_BASE: Duration = Duration::from_millis(200);

/// Timeout of one callback (heartbeat or result) request.
const CALLBACK_TIMEOUT: Duration = Duration::from_secs(10);

/// How many cancels of not-yet-seen attempts are remembered (a cancel can overtake its dispatch).
const EARLY_CANCELS_KEPT: usize = 1024;

/// Sampling temperature: low, so answers to the same task stay close.
const TEMPERATURE: f64 = 0.2;

/// How the LLM worker reaches its model.
#[derive(Clone, clap::Args)]
pub struct LlmWorkerConfig {
    /// OpenAI-compatible API root, e.g. http://127.0.0.1:8000/v1 (`/chat/completions` is appended unless already there).
    #[arg(long = "llm-url", env = "WORKER_LLM_URL")]
    pub llm_url: String,
    /// Model name sent with every call.
    #[arg(long, env = "WORKER_LLM_MODEL", default_value = "gpt-4o-mini")]
    pub model: String,
    /// Bearer token for the provider; no `Authorization` header when absent.
    #[arg(
        long = "llm-api-key",
        env = "WORKER_LLM_API_KEY",
        hide_env_values = true
    )]
    pub api_key: Option<String>,
    /// Per-call timeout, seconds.
    #[arg(long = "llm-timeout-secs", default_value_t = 120)]
    pub timeout_secs: u64,
    /// Most tokens per answer.
    #[arg(long = "llm-max-tokens", default_value_t = 1024)]
    pub max_tokens: u32,
    /// Price per 1,000 prompt tokens, to report cost.
    #[arg(long, default_value_t = 0.0)]
    pub prompt_price_per_1k: f64,
    /// Price per 1,000 completion tokens, to report cost.
    #[arg(long, default_value_t = 0.0)]
    pub completion_price_per_1k: f64,
    /// Heartbeat interval while waiting for the model, seconds.
    #[arg(long, default_value_t = 5)]
    pub heartbeat_secs: u64,
    /// Concurrent model calls (llama.cpp serves one at a time).
    #[arg(long, default_value_t = 1)]
    pub concurrency: usize,
}

impl LlmWorkerConfig {
    /// A config for `llm_url` with the command-line defaults.
    pub fn new(llm_url: impl Into<String>) -> Self {
        LlmWorkerConfig {
            llm_url: llm_url.into(),
            model: "gpt-4o-mini".to_owned(),
            api_key: None,
            timeout_secs: 120,
            max_tokens: 1024,
            prompt_price_per_1k: 0.0,
            completion_price_per_1k: 0.0,
            heartbeat_secs: 5,
            concurrency: 1,
        }
    }

    /// What one call with this usage costs, in the prices' currency.
    pub fn cost(&self, prompt_tokens: u64, completion_tokens: u64) -> f64 {
        let cost = prompt_tokens as f64 / 1000.0 * self.prompt_price_per_1k
            + completion_tokens as f64 / 1000.0 * self.completion_price_per_1k;
        // A negative or NaN price must not turn into a refund.
        if cost.is_finite() { cost.max(0.0) } else { 0.0 }
    }

    /// The API key, when one is set and not blank.
    fn key(&self) -> Option<&str> {
        self.api_key.as_deref().filter(|k| !k.trim().is_empty())
    }
}

impl fmt::Debug for LlmWorkerConfig {
    // Hand-written so the API key never reaches a log line through `{:?}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmWorkerConfig")
            .field("llm_url", &self.llm_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("timeout_secs", &self.timeout_secs)
            .field("max_tokens", &self.max_tokens)
            .field("prompt_price_per_1k", &self.prompt_price_per_1k)
            .field("completion_price_per_1k", &self.completion_price_per_1k)
            .field("heartbeat_secs", &self.heartbeat_secs)
            .field("concurrency", &self.concurrency)
            .finish()
    }
}

/// What the LLM worker has done, for tests, demos and `GET /v1/stats`.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct LlmWorkerStats {
    /// Dispatch requests received (duplicates included).
    pub received: u64,
    /// Dispatches of an attempt already running here (not started again).
    pub duplicates: u64,
    /// Chat-completions calls started.
    pub calls: u64,
    /// Calls that produced an answer, reported as `succeeded`.
    pub succeeded: u64,
    /// Calls that ended in a `failed` report (provider error or empty answer).
    pub failed: u64,
    /// Results the coordinator accepted.
    pub reported: u64,
    /// Results the coordinator refused with `409` (the attempt was stale).
    pub refused: u64,
    /// Results never delivered: another 4xx, or every retry failed.
    pub undelivered: u64,
    /// Attempts cancelled by the coordinator before their result was reported.
    pub cancelled: u64,
    /// Attempts dropped because a heartbeat was answered `409`.
    pub abandoned: u64,
    /// Prompt tokens the provider reported.
    pub prompt_tokens: u64,
    /// Completion tokens the provider reported.
    pub completion_tokens: u64,
}

/// Why the worker could not start.
#[derive(Debug, thiserror::Error)]
pub enum LlmWorkerError {
    /// A setting that cannot work.
    #[error("invalid LLM worker configuration: {0}")]
    Config(String),
    /// The listen address could not be bound.
    #[error("could not listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// An HTTP client could not be built.
    #[error("could not build the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
}

#[derive(Default)]
struct Shared {
    stats: LlmWorkerStats,
    /// Attempts accepted and not finished, with the switch that cancels them.
    live: HashMap<Uuid, watch::Sender<bool>>,
    /// Cancels that arrived before their dispatch, oldest first (bounded).
    early_cancels: VecDeque<Uuid>,
    early_cancel_set: HashSet<Uuid>,
}

#[derive(Clone)]
struct WorkerState {
    config: Arc<LlmWorkerConfig>,
    completions_url: reqwest::Url,
    shared: Arc<Mutex<Shared>>,
    slots: Arc<Semaphore>,
    /// For the provider: no client-wide timeout, the call is bounded as a whole.
    llm: reqwest::Client,
    /// For the coordinator's callbacks.
    callbacks: reqwest::Client,
}

/// A running LLM worker.
pub struct LlmWorker {
    addr: SocketAddr,
    shared: Arc<Mutex<Shared>>,
    task: tokio::task::JoinHandle<()>,
}

impl LlmWorker {
    /// Checks the config, binds `listen` (port 0 for any) and serves in the background.
    pub async fn spawn(listen: SocketAddr, config: LlmWorkerConfig) -> anyhow::Result<Self> {
        Ok(Self::start(listen, config).await?)
    }

    async fn start(listen: SocketAddr, config: LlmWorkerConfig) -> Result<Self, LlmWorkerError> {
        let completions_url = completions_url(&config.llm_url)?;
        if config.model.trim().is_empty() {
            return Err(LlmWorkerError::Config("--model must not be empty".into()));
        }
        // Zero would make every call time out at once, or spin the heartbeat timer.
        if config.timeout_secs == 0 {
            return Err(LlmWorkerError::Config(
                "--llm-timeout-secs must be at least 1".into(),
            ));
        }
        if config.heartbeat_secs == 0 {
            return Err(LlmWorkerError::Config(
                "--heartbeat-secs must be at least 1".into(),
            ));
        }
        if config.concurrency == 0 || config.concurrency > Semaphore::MAX_PERMITS {
            return Err(LlmWorkerError::Config(
                "--concurrency must be at least 1".into(),
            ));
        }
        if config.max_tokens == 0 {
            return Err(LlmWorkerError::Config(
                "--llm-max-tokens must be at least 1".into(),
            ));
        }
        let listener = TcpListener::bind(listen)
            .await
            .map_err(|source| LlmWorkerError::Bind {
                addr: listen,
                source,
            })?;
        let addr = listener
            .local_addr()
            .map_err(|source| LlmWorkerError::Bind {
                addr: listen,
                source,
            })?;
        let shared = Arc::new(Mutex::new(Shared::default()));
        let state = WorkerState {
            slots: Arc::new(Semaphore::new(config.concurrency)),
            config: Arc::new(config),
            completions_url,
            shared: shared.clone(),
            llm: reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(10))
                .build()?,
            callbacks: reqwest::Client::builder()
                .timeout(CALLBACK_TIMEOUT)
                .build()?,
        };
        tracing::info!(
            %addr,
            url = %state.completions_url,
            model = %state.config.model,
            concurrency = state.config.concurrency,
            "LLM worker listening"
        );
        let app = router(state);
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "LLM worker stopped");
            }
        });
        Ok(LlmWorker { addr, shared, task })
    }

    /// The base URL to register as an agent's `endpoint_url`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What it has done so far.
    pub fn stats(&self) -> LlmWorkerStats {
        lock(&self.shared).stats.clone()
    }

    /// Waits until the server task ends (it runs until the process exits).
    pub async fn wait(mut self) -> anyhow::Result<()> {
        (&mut self.task).await?;
        Ok(())
    }
}

impl Drop for LlmWorker {
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
        .route("/v1/stats", get(stats))
        .route("/healthz", get(|| async { Json(json!({"status": "ok"})) }))
        .with_state(state)
}

async fn stats(State(state): State<WorkerState>) -> Json<LlmWorkerStats> {
    Json(lock(&state.shared).stats.clone())
}

async fn cancel_task(
    State(state): State<WorkerState>,
    Path(attempt_id): Path<Uuid>,
) -> Json<Value> {
    let mut shared = lock(&state.shared);
    let found = match shared.live.get(&attempt_id) {
        Some(switch) => {
            // send_replace never fails, even when the attempt's task already ended.
            switch.send_replace(true);
            true
        }
        None => {
            // The cancel may have overtaken its dispatch; remember it briefly.
            if shared.early_cancel_set.insert(attempt_id) {
                shared.early_cancels.push_back(attempt_id);
                if shared.early_cancels.len() > EARLY_CANCELS_KEPT
                    && let Some(oldest) = shared.early_cancels.pop_front()
                {
                    shared.early_cancel_set.remove(&oldest);
                }
            }
            false
        }
    };
    drop(shared);
    tracing::info!(%attempt_id, found, "cancel received");
    Json(json!({ "cancelled": found }))
}

async fn accept_task(
    State(state): State<WorkerState>,
    Json(req): Json<DispatchRequest>,
) -> axum::response::Response {
    // Refuse callbacks we could never reach, while the coordinator still
    // listens, instead of failing silently later.
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
    let attempt_id = req.attempt_id;
    let (switch, cancel) = watch::channel(false);
    {
        let mut shared = lock(&state.shared);
        shared.stats.received += 1;
        if shared.live.contains_key(&attempt_id) {
            // A redelivered dispatch: the first one is already working on it.
            shared.stats.duplicates += 1;
            return accepted();
        }
        if shared.early_cancel_set.remove(&attempt_id) {
            shared.early_cancels.retain(|id| *id != attempt_id);
            shared.stats.cancelled += 1;
            return accepted();
        }
        shared.live.insert(attempt_id, switch);
    }
    tracing::info!(
        %attempt_id,
        task = %req.task.key,
        agent = %req.agent_id,
        "task accepted"
    );
    let guard = LiveGuard {
        shared: state.shared.clone(),
        attempt_id,
    };
    tokio::spawn(run_attempt(state, req, cancel, guard));
    accepted()
}

fn accepted() -> axum::response::Response {
    (StatusCode::ACCEPTED, Json(json!({"accepted": true}))).into_response()
}

fn is_http_url(url: &str) -> bool {
    reqwest::Url::parse(url).is_ok_and(|u| matches!(u.scheme(), "http" | "https"))
}

/// Removes an attempt from the live set when its task ends, however it ends.
struct LiveGuard {
    shared: Arc<Mutex<Shared>>,
    attempt_id: Uuid,
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        lock(&self.shared).live.remove(&self.attempt_id);
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
    Called(Result<Completion, CallError>),
    Cancelled,
    Stale,
    NoSlot,
}

async fn run_attempt(
    state: WorkerState,
    req: DispatchRequest,
    cancel: watch::Receiver<bool>,
    _guard: LiveGuard,
) {
    let attempt_id = req.attempt_id;
    let work = async {
        // The permit lives inside this block, so the model slot is free again
        // before the (possibly slow) result delivery.
        let Ok(_permit) = state.slots.clone().acquire_owned().await else {
            return None;
        };
        if *cancel.borrow() {
            return None;
        }
        lock(&state.shared).stats.calls += 1;
        Some(call_model(&state, &req).await)
    };
    // Heartbeats cover the wait for a slot too, so a queued task keeps its lease.
    let ending = tokio::select! {
        outcome = work => outcome.map_or(Ending::NoSlot, Ending::Called),
        () = heartbeat_until_stale(&state, &req) => Ending::Stale,
        () = cancelled(cancel.clone()) => Ending::Cancelled,
    };
    let outcome = match ending {
        Ending::Called(outcome) => {
            if let Ok(done) = &outcome {
                // Spent whatever happens to the answer next.
                let mut shared = lock(&state.shared);
                shared.stats.prompt_tokens += done.prompt_tokens;
                shared.stats.completion_tokens += done.completion_tokens;
            }
            outcome
        }
        Ending::Stale => {
            lock(&state.shared).stats.abandoned += 1;
            tracing::info!(%attempt_id, "coordinator says the attempt is stale; call abandoned");
            return;
        }
        Ending::Cancelled | Ending::NoSlot => {
            lock(&state.shared).stats.cancelled += 1;
            tracing::info!(%attempt_id, "attempt cancelled; nothing reported");
            return;
        }
    };
    if *cancel.borrow() {
        // Cancelled just as the answer came in: the coordinator no longer wants it.
        lock(&state.shared).stats.cancelled += 1;
        tracing::info!(%attempt_id, "attempt cancelled; answer discarded");
        return;
    }
    let report = report_for(&state.config, outcome);
    {
        let mut shared = lock(&state.shared);
        match report.status {
            ReportStatus::Succeeded => shared.stats.succeeded += 1,
            _ => shared.stats.failed += 1,
        }
    }
    if let Some(error) = &report.error {
        tracing::warn!(%attempt_id, error = %error, "task failed");
    }
    post_result(&state, &req, &report).await;
}

/// Posts heartbeats until the coordinator answers `409`; other failures are
/// logged and the next beat tried (the lease allows for a few lost ones).
async fn heartbeat_until_stale(state: &WorkerState, req: &DispatchRequest) {
    let period = Duration::from_secs(state.config.heartbeat_secs);
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + period, period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let beat = Heartbeat {
        progress: None,
        message: Some(format!("waiting for {}", state.config.model)),
    };
    loop {
        ticks.tick().await;
        let sent = req
            .callback
            .authorize(state.callbacks.post(&req.callback.heartbeat_url))
            .timeout(period.max(Duration::from_secs(2)))
            .json(&beat)
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
async fn post_result(state: &WorkerState, req: &DispatchRequest, report: &WorkerReport) {
    let attempt_id = req.attempt_id;
    for attempt in 1..=RESULT_ATTEMPTS {
        let sent = req
            .callback
            .authorize(state.callbacks.post(&req.callback.result_url))
            .json(report)
            .send()
            .await;
        match sent {
            Ok(resp) if resp.status().is_success() => {
                lock(&state.shared).stats.reported += 1;
                return;
            }
            Ok(resp) if resp.status() == StatusCode::CONFLICT => {
                lock(&state.shared).stats.refused += 1;
                tracing::info!(%attempt_id, "result refused: the attempt is stale");
                return;
            }
            Ok(resp) if resp.status().is_client_error() => {
                // Bad token or a report the coordinator cannot read: resending
                // the same bytes cannot help.
                lock(&state.shared).stats.undelivered += 1;
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
        if attempt < RESULT_ATTEMPTS {
            tokio::time::sleep(RESULT_RETRY_BASE.saturating_mul(1 << (attempt - 1))).await;
        }
    }
    lock(&state.shared).stats.undelivered += 1;
    tracing::warn!(%attempt_id, "gave up delivering the result; the lease will reclaim the task");
}

/// The chat-completions request body.
#[derive(Debug, Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: &'a [ChatMessage],
    temperature: f64,
    max_tokens: u32,
}

/// One chat message as sent to the provider.
#[derive(Debug, Clone, PartialEq, Serialize)]
struct ChatMessage {
    role: &'static str,
    content: String,
}

/// A chat completion, reduced to what a report needs.
#[derive(Debug, Clone, PartialEq)]
struct Completion {
    content: String,
    model: Option<String>,
    finish_reason: Option<String>,
    prompt_tokens: u64,
    completion_tokens: u64,
}

/// Why a call produced no completion.
#[derive(Debug)]
enum CallError {
    Timeout(Duration),
    Transport(String),
    Status {
        status: StatusCode,
        retry_after: Option<Duration>,
        excerpt: String,
    },
    BadResponse(String),
}

impl CallError {
    /// What the coordinator should wait before trying this provider again, if it said.
    fn retry_after(&self) -> Option<Duration> {
        match self {
            CallError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

impl fmt::Display for CallError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CallError::Timeout(limit) => {
                write!(f, "LLM call timed out after {} s", limit.as_secs())
            }
            CallError::Transport(why) => write!(f, "could not reach the LLM provider: {why}"),
            CallError::Status {
                status,
                retry_after,
                excerpt,
            } => {
                write!(f, "LLM provider answered HTTP {status}")?;
                if let Some(wait) = retry_after {
                    write!(f, " (Retry-After: {} s)", wait.as_secs())?;
                }
                if !excerpt.is_empty() {
                    write!(f, ": {excerpt}")?;
                }
                Ok(())
            }
            CallError::BadResponse(why) => {
                write!(f, "unusable response from the LLM provider: {why}")
            }
        }
    }
}

/// Sends the task to the model and reads the answer, all within the per-call timeout.
async fn call_model(state: &WorkerState, req: &DispatchRequest) -> Result<Completion, CallError> {
    let cfg = &state.config;
    let messages = build_messages(req);
    let body = ChatRequest {
        model: &cfg.model,
        messages: &messages,
        temperature: TEMPERATURE,
        max_tokens: cfg.max_tokens,
    };
    let limit = Duration::from_secs(cfg.timeout_secs);
    let exchange = async {
        let mut builder = state.llm.post(state.completions_url.clone()).json(&body);
        if let Some(key) = cfg.key() {
            // bearer_auth marks the header sensitive, so reqwest never prints it.
            builder = builder.bearer_auth(key);
        }
        let mut response = builder.send().await.map_err(|e| call_error(&e, limit))?;
        let status = response.status();
        let retry_after = crate::retry_after::from_headers(response.headers());
        let (bytes, complete) = read_capped(&mut response, MAX_RESPONSE_BYTES, limit).await?;
        Ok::<_, CallError>((status, retry_after, bytes, complete))
    };
    let (status, retry_after, bytes, complete) = match tokio::time::timeout(limit, exchange).await {
        Ok(result) => result?,
        Err(_) => return Err(CallError::Timeout(limit)),
    };
    if !status.is_success() {
        return Err(CallError::Status {
            status,
            retry_after,
            excerpt: excerpt(&String::from_utf8_lossy(&bytes)),
        });
    }
    if !complete {
        return Err(CallError::BadResponse(format!(
            "response body is larger than {MAX_RESPONSE_BYTES} bytes"
        )));
    }
    parse_completion(&bytes).map_err(CallError::BadResponse)
}

/// Turns a call's outcome into the report sent to the coordinator.
fn report_for(cfg: &LlmWorkerConfig, outcome: Result<Completion, CallError>) -> WorkerReport {
    match outcome {
        Ok(done) => {
            let cost = cfg.cost(done.prompt_tokens, done.completion_tokens);
            let tokens = i64::try_from(done.prompt_tokens.saturating_add(done.completion_tokens))
                .unwrap_or(i64::MAX);
            if done.content.trim().is_empty() {
                return WorkerReport {
                    status: ReportStatus::Failed,
                    output: None,
                    error: Some(format!(
                        "the model returned an empty answer (finish_reason: {})",
                        done.finish_reason.as_deref().unwrap_or("none")
                    )),
                    failure_kind: Some(FailureKind::Quality),
                    cost,
                    tokens,
                    retry_after_secs: None,
                };
            }
            WorkerReport {
                status: ReportStatus::Succeeded,
                output: Some(json!({
                    "text": done.content,
                    "model": done.model.unwrap_or_else(|| cfg.model.clone()),
                    "finish_reason": done.finish_reason,
                })),
                error: None,
                failure_kind: None,
                cost,
                tokens,
                retry_after_secs: None,
            }
        }
        Err(err) => {
            // The provider's status and Retry-After also travel in `output`,
            // for people reading the attempt.
            let output = match &err {
                CallError::Status { status, .. } => Some(json!({
                    "provider_status": status.as_u16(),
                    "retry_after_secs": err.retry_after().map(|d| d.as_secs()),
                })),
                _ => None,
            };
            WorkerReport {
                status: ReportStatus::Failed,
                output,
                error: Some(redact(&err.to_string(), cfg.key())),
                failure_kind: Some(FailureKind::Infrastructure),
                cost: 0.0,
                tokens: 0,
                retry_after_secs: err.retry_after().map(|d| d.as_secs()),
            }
        }
    }
}

/// The system prompt and the task as one user message.
fn build_messages(req: &DispatchRequest) -> Vec<ChatMessage> {
    let system = format!(
        "You are agent `{agent}`, working on one task of a larger mission; other agents \
         handle the other tasks, so do only this one. Your answer is the task's result and \
         must satisfy every success criterion given. Answer concisely: give the result \
         itself, without preamble or remarks about yourself.",
        agent = req.agent_id
    );
    let system = match &req.organisation {
        Some(org) => format!("{system}\n\n{}", org.brief()),
        None => system,
    };
    let task = &req.task;
    let mut user = String::new();
    user.push_str("# Mission goal\n");
    user.push_str(req.goal.trim());
    user.push_str(&format!("\n\n# Your task: {}\n", task.title.trim()));
    user.push_str(&format!("Type: {}\n", task.task_type));
    user.push_str(&format!("Key: {}\n", task.key));
    if req.attempt_number > 1 {
        user.push_str(&format!("Attempt: {}\n", req.attempt_number));
    }
    user.push_str("\n## Description\n");
    user.push_str(task.description.trim());
    user.push_str("\n\n## Success criteria\n");
    user.push_str(&truncate(
        &render_criteria(&task.success_criteria),
        MAX_FIELD_BYTES,
    ));
    if !is_empty_value(&task.inputs) {
        user.push_str("\n\n## Inputs\n");
        user.push_str(&truncate(&render_value(&task.inputs), MAX_FIELD_BYTES));
    }
    if !req.upstream.is_empty() {
        user.push_str("\n\n## Outputs of the tasks this one builds on");
        for up in &req.upstream {
            user.push_str(&format!("\n\n### {} (`{}`)\n", up.title.trim(), up.key));
            match &up.output {
                Some(output) => {
                    user.push_str(&truncate(&render_value(output), MAX_UPSTREAM_BYTES));
                }
                None => user.push_str("(no output)"),
            }
        }
    }
    if let Some(feedback) = req.feedback.as_deref().filter(|f| !f.trim().is_empty()) {
        user.push_str("\n\n## Feedback on the previous attempt\n");
        user.push_str("The previous attempt was not accepted. Address this feedback:\n");
        user.push_str(&truncate(feedback.trim(), MAX_FIELD_BYTES));
    }
    vec![
        ChatMessage {
            role: "system",
            content: system,
        },
        ChatMessage {
            role: "user",
            content: user,
        },
    ]
}

fn is_empty_value(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::String(s) => s.trim().is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// Success criteria as text: a list as bullets, text as is, anything else as JSON.
fn render_criteria(criteria: &Value) -> String {
    if is_empty_value(criteria) {
        return "(none stated: do the task as described)".to_owned();
    }
    match criteria {
        Value::Array(items) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => format!("- {s}"),
                other => format!("- {other}"),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        other => render_value(other),
    }
}

/// A JSON value as text for the model: strings bare, a worker output's `text`
/// bare, everything else as pretty JSON.
fn render_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Object(o) if o.get("text").is_some_and(Value::is_string) => o
            .get("text")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        other => serde_json::to_string_pretty(other).unwrap_or_else(|_| other.to_string()),
    }
}

/// At most `max` bytes of `text`, cut at a character boundary, saying it was cut.
fn truncate(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!(
        "{}\n… [truncated: {} of {} bytes shown]",
        &text[..end],
        end,
        text.len()
    ))
}

/// `{base}/chat/completions`, accepting a base that already ends in it.
fn completions_url(base_url: &str) -> Result<reqwest::Url, LlmWorkerError> {
    let base = base_url.trim().trim_end_matches('/');
    let full = if base.ends_with("/chat/completions") {
        base.to_owned()
    } else {
        format!("{base}/chat/completions")
    };
    let url = reqwest::Url::parse(&full)
        .map_err(|e| LlmWorkerError::Config(format!("--llm-url '{base_url}' is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(LlmWorkerError::Config(format!(
            "--llm-url '{base_url}' must use http or https"
        )));
    }
    Ok(url)
}

/// Reads at most `cap` bytes of the body; the flag says whether the body ended within the cap.
async fn read_capped(
    response: &mut reqwest::Response,
    cap: usize,
    limit: Duration,
) -> Result<(Vec<u8>, bool), CallError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|e| call_error(&e, limit))? {
        let room = cap.saturating_sub(bytes.len());
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            return Ok((bytes, false));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok((bytes, true))
}

fn call_error(err: &reqwest::Error, limit: Duration) -> CallError {
    if err.is_timeout() {
        CallError::Timeout(limit)
    } else {
        CallError::Transport(error_chain(err))
    }
}

/// `error: cause: cause …`, because "error sending request" alone does not say why.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// The start of an error body, on one line.
fn excerpt(body: &str) -> String {
    let flat = body.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut text: String = flat.chars().take(BODY_EXCERPT_CHARS).collect();
    if flat.chars().nth(BODY_EXCERPT_CHARS).is_some() {
        text.push('…');
    }
    text
}

/// `text` with the API key removed, should a provider echo it back.
fn redact(text: &str, key: Option<&str>) -> String {
    match key {
        Some(key) => text.replace(key, "[redacted]"),
        None => text.to_owned(),
    }
}

/// Extracts content, finish reason, model and usage from a chat-completion body.
fn parse_completion(bytes: &[u8]) -> Result<Completion, String> {
    let envelope: Value = serde_json::from_slice(bytes).map_err(|e| {
        format!(
            "body is not JSON ({e}): {}",
            excerpt(&String::from_utf8_lossy(&bytes[..bytes.len().min(200)]))
        )
    })?;
    let choice = envelope
        .get("choices")
        .and_then(|c| c.get(0))
        .ok_or("no choices[0] in the response")?;
    let content = match choice.get("message").and_then(|m| m.get("content")) {
        Some(Value::String(text)) => text.clone(),
        // Some servers send content as a list of typed parts.
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(""),
        // No text at all (e.g. only a refusal or tool calls): an empty answer.
        Some(Value::Null) | None => String::new(),
        Some(other) => {
            return Err(format!(
                "choices[0].message.content is not text but {other}"
            ));
        }
    };
    let finish_reason = choice
        .get("finish_reason")
        .and_then(Value::as_str)
        .map(|r| truncate(r, 64).into_owned());
    let model = envelope
        .get("model")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(|m| truncate(m, 200).into_owned());
    let usage = envelope.get("usage");
    let tokens = |field: &str| {
        usage
            .and_then(|u| u.get(field))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    let (mut prompt_tokens, completion_tokens) =
        (tokens("prompt_tokens"), tokens("completion_tokens"));
    if prompt_tokens == 0 && completion_tokens == 0 {
        // Some servers report only the total; count it rather than nothing.
        prompt_tokens = tokens("total_tokens");
    }
    Ok(Completion {
        content,
        model,
        finish_reason,
        prompt_tokens,
        completion_tokens,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::protocol::{Callback, TaskPayload, UpstreamOutput};
    use std::time::Instant;
    use time::OffsetDateTime;
    use wiremock::{
        Mock, MockServer, Request, ResponseTemplate,
        matchers::{header, method, path},
    };

    const TOKEN: &str = "attempt-token-123";
    const KEY: &str = "sk-secret-key-456";

    fn dispatch(coordinator: &MockServer) -> DispatchRequest {
        let attempt_id = Uuid::new_v4();
        DispatchRequest {
            attempt_id,
            attempt_number: 2,
            task_id: Uuid::new_v4(),
            mission_id: Uuid::new_v4(),
            agent_id: "writer-1".into(),
            goal: "Publish a short guide to composting at home".into(),
            task: TaskPayload {
                key: "draft".into(),
                title: "Draft the guide".into(),
                task_type: "writing".into(),
                description: "Write a 200-word draft using the research notes.".into(),
                required_skills: vec!["writing".into()],
                required_tools: vec![],
                success_criteria: json!(["mentions browns and greens", "under 250 words"]),
                inputs: json!({"audience": "apartment dwellers"}),
                tool_policy: None,
            },
            upstream: vec![UpstreamOutput {
                task_id: Uuid::new_v4(),
                key: "research".into(),
                title: "Research composting".into(),
                output: Some(json!({"text": "Notes: balance browns and greens 3:1."})),
            }],
            organisation: None,
            feedback: Some("Too long last time; keep it tight.".into()),
            deadline: OffsetDateTime::now_utc() + time::Duration::minutes(5),
            callback: Callback {
                heartbeat_url: format!("{}/v1/attempts/{attempt_id}/heartbeat", coordinator.uri()),
                result_url: format!("{}/v1/attempts/{attempt_id}/result", coordinator.uri()),
                token: TOKEN.into(),
                tool_approvals_url: None,
                traceparent: None,
            },
        }
    }

    fn config(provider: &MockServer) -> LlmWorkerConfig {
        LlmWorkerConfig {
            api_key: Some(KEY.into()),
            model: "test-model".into(),
            timeout_secs: 5,
            max_tokens: 256,
            prompt_price_per_1k: 0.5,
            completion_price_per_1k: 2.0,
            heartbeat_secs: 1,
            ..LlmWorkerConfig::new(format!("{}/v1", provider.uri()))
        }
    }

    fn completion(content: &str) -> Value {
        json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "served-model-v1",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop"
            }],
            "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
        })
    }

    /// Mounts coordinator callbacks answering heartbeats and results with the given statuses.
    async fn coordinator(heartbeat_status: u16, result_status: u16) -> MockServer {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path_suffix("/heartbeat"))
            .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
            .respond_with(ResponseTemplate::new(heartbeat_status))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path_suffix("/result"))
            .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
            .respond_with(ResponseTemplate::new(result_status).set_body_json(json!({})))
            .mount(&server)
            .await;
        server
    }

    fn path_suffix(suffix: &'static str) -> impl wiremock::Match {
        move |req: &Request| req.url.path().ends_with(suffix)
    }

    async fn provider_answering(template: ResponseTemplate) -> MockServer {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(template)
            .mount(&server)
            .await;
        server
    }

    async fn requests_to(server: &MockServer, suffix: &str) -> Vec<Request> {
        server
            .received_requests()
            .await
            .unwrap_or_default()
            .into_iter()
            .filter(|r| r.url.path().ends_with(suffix))
            .collect()
    }

    /// Waits (bounded) until `server` has received `n` requests ending in `suffix`.
    async fn wait_for(server: &MockServer, suffix: &str, n: usize) -> Vec<Request> {
        let start = Instant::now();
        loop {
            let got = requests_to(server, suffix).await;
            if got.len() >= n || start.elapsed() > Duration::from_secs(8) {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    async fn wait_until(worker: &LlmWorker, what: impl Fn(&LlmWorkerStats) -> bool) {
        let start = Instant::now();
        while !what(&worker.stats()) && start.elapsed() < Duration::from_secs(8) {
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    async fn start(cfg: LlmWorkerConfig) -> LlmWorker {
        LlmWorker::spawn("127.0.0.1:0".parse().unwrap(), cfg)
            .await
            .unwrap()
    }

    async fn send(worker: &LlmWorker, req: &DispatchRequest) -> reqwest::StatusCode {
        reqwest::Client::new()
            .post(format!("{}/v1/tasks", worker.url()))
            .json(req)
            .send()
            .await
            .unwrap()
            .status()
    }

    fn report_of(req: &Request) -> WorkerReport {
        serde_json::from_slice(&req.body).unwrap()
    }

    /// Runs one dispatch against a provider answering `template` and returns the report.
    async fn report_after(template: ResponseTemplate) -> WorkerReport {
        let provider = provider_answering(template).await;
        let coord = coordinator(200, 200).await;
        let worker = start(config(&provider)).await;
        assert_eq!(send(&worker, &dispatch(&coord)).await, StatusCode::ACCEPTED);
        let results = wait_for(&coord, "/result", 1).await;
        assert_eq!(results.len(), 1, "one result expected");
        report_of(&results[0])
    }

    #[tokio::test]
    async fn happy_path_reports_the_answer_with_tokens_and_cost() {
        let provider = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .and(header("authorization", format!("Bearer {KEY}").as_str()))
            .respond_with(
                ResponseTemplate::new(200)
                    .set_body_json(completion("Compost: mix browns and greens.")),
            )
            .expect(1)
            .mount(&provider)
            .await;
        let coord = coordinator(200, 200).await;
        let worker = start(config(&provider)).await;
        let req = dispatch(&coord);

        let started = Instant::now();
        assert_eq!(send(&worker, &req).await, StatusCode::ACCEPTED);
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "202 must come at once"
        );

        let results = wait_for(&coord, "/result", 1).await;
        assert_eq!(results.len(), 1);
        assert!(results[0].url.path().contains(&req.attempt_id.to_string()));
        let report = report_of(&results[0]);
        assert_eq!(report.status, ReportStatus::Succeeded);
        let output = report.output.unwrap();
        assert_eq!(output["text"], "Compost: mix browns and greens.");
        assert_eq!(output["model"], "served-model-v1");
        assert_eq!(output["finish_reason"], "stop");
        assert_eq!(report.tokens, 150);
        assert!(
            (report.cost - (0.12 * 0.5 + 0.03 * 2.0)).abs() < 1e-9,
            "{}",
            report.cost
        );

        let calls = provider.received_requests().await.unwrap();
        assert_eq!(calls.len(), 1);
        let body: Value = serde_json::from_slice(&calls[0].body).unwrap();
        assert_eq!(body["model"], "test-model");
        assert_eq!(body["temperature"], 0.2);
        assert_eq!(body["max_tokens"], 256);
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages[0]["role"], "system");
        assert!(
            messages[0]["content"]
                .as_str()
                .unwrap()
                .contains("writer-1")
        );
        let all = body["messages"].to_string();
        assert!(all.contains("Publish a short guide to composting at home"));
        assert!(all.contains("Draft the guide"));
        assert!(all.contains("balance browns and greens 3:1"));
        assert!(all.contains("under 250 words"));
        assert!(all.contains("apartment dwellers"));
        assert!(all.contains("keep it tight"));

        let stats = worker.stats();
        assert_eq!(
            (stats.received, stats.calls, stats.succeeded, stats.failed),
            (1, 1, 1, 0)
        );
        assert_eq!((stats.prompt_tokens, stats.completion_tokens), (120, 30));
        wait_until(&worker, |s| s.reported == 1).await;
        assert_eq!(worker.stats().reported, 1);
    }

    #[tokio::test]
    async fn slow_provider_gets_heartbeats_before_the_result() {
        let provider = provider_answering(
            ResponseTemplate::new(200)
                .set_body_json(completion("done"))
                .set_delay(Duration::from_millis(2500)),
        )
        .await;
        let coord = coordinator(200, 200).await;
        let worker = start(config(&provider)).await;
        assert_eq!(send(&worker, &dispatch(&coord)).await, StatusCode::ACCEPTED);
        wait_for(&coord, "/result", 1).await;

        let all = coord.received_requests().await.unwrap();
        let result_at = all
            .iter()
            .position(|r| r.url.path().ends_with("/result"))
            .expect("a result");
        let beats_before = all[..result_at]
            .iter()
            .filter(|r| r.url.path().ends_with("/heartbeat"))
            .count();
        assert!(
            beats_before >= 2,
            "only {beats_before} heartbeats before the result"
        );
        let beat: Heartbeat = serde_json::from_slice(&all[0].body).unwrap();
        assert!(beat.message.is_some());
        assert_eq!(report_of(&all[result_at]).status, ReportStatus::Succeeded);
    }

    #[tokio::test]
    async fn rate_limited_provider_is_an_infrastructure_failure_with_retry_after() {
        let report = report_after(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "7")
                .set_body_string("slow down"),
        )
        .await;
        assert_eq!(report.status, ReportStatus::Failed);
        assert_eq!(report.failure_kind, Some(FailureKind::Infrastructure));
        let error = report.error.unwrap();
        assert!(error.contains("429"), "{error}");
        assert!(error.contains("Retry-After: 7 s"), "{error}");
        assert_eq!(report.retry_after_secs, Some(7));
        let output = report.output.unwrap();
        assert_eq!(output["provider_status"], 429);
        assert_eq!(output["retry_after_secs"], 7);
    }

    #[tokio::test]
    async fn server_error_is_an_infrastructure_failure() {
        let report = report_after(ResponseTemplate::new(500).set_body_string("boom")).await;
        assert_eq!(report.status, ReportStatus::Failed);
        assert_eq!(report.failure_kind, Some(FailureKind::Infrastructure));
        let error = report.error.unwrap();
        assert!(error.contains("500") && error.contains("boom"), "{error}");
        assert_eq!((report.tokens, report.cost), (0, 0.0));
    }

    #[tokio::test]
    async fn bad_request_is_an_infrastructure_failure_without_the_key() {
        // A provider that echoes the key must not get it into the report.
        let report = report_after(
            ResponseTemplate::new(400)
                .set_body_string(format!("{{\"error\":\"bad model; key {KEY} ok\"}}")),
        )
        .await;
        assert_eq!(report.status, ReportStatus::Failed);
        assert_eq!(report.failure_kind, Some(FailureKind::Infrastructure));
        let error = report.error.unwrap();
        assert!(
            error.contains("400") && error.contains("bad model"),
            "{error}"
        );
        assert!(!error.contains(KEY), "{error}");
        assert!(error.contains("[redacted]"), "{error}");
    }

    #[tokio::test]
    async fn empty_answer_is_a_quality_failure() {
        let report =
            report_after(ResponseTemplate::new(200).set_body_json(completion("  \n"))).await;
        assert_eq!(report.status, ReportStatus::Failed);
        assert_eq!(report.failure_kind, Some(FailureKind::Quality));
        assert_eq!(report.tokens, 150, "the tokens were spent all the same");
    }

    #[tokio::test]
    async fn timeout_and_garbage_are_infrastructure_failures() {
        let mut cfg_provider = provider_answering(
            ResponseTemplate::new(200)
                .set_body_json(completion("late"))
                .set_delay(Duration::from_millis(2500)),
        )
        .await;
        let coord = coordinator(200, 200).await;
        let worker = start(LlmWorkerConfig {
            timeout_secs: 1,
            heartbeat_secs: 5,
            ..config(&cfg_provider)
        })
        .await;
        send(&worker, &dispatch(&coord)).await;
        let results = wait_for(&coord, "/result", 1).await;
        let report = report_of(&results[0]);
        assert_eq!(report.failure_kind, Some(FailureKind::Infrastructure));
        assert!(report.error.unwrap().contains("timed out"));

        cfg_provider =
            provider_answering(ResponseTemplate::new(200).set_body_string("<html>")).await;
        let coord = coordinator(200, 200).await;
        let worker = start(config(&cfg_provider)).await;
        send(&worker, &dispatch(&coord)).await;
        let report = report_of(&wait_for(&coord, "/result", 1).await[0]);
        assert_eq!(report.failure_kind, Some(FailureKind::Infrastructure));
        assert!(report.error.unwrap().contains("not JSON"));
    }

    #[tokio::test]
    async fn unreachable_provider_is_an_infrastructure_failure() {
        // Bind then drop a listener so the port is (almost certainly) closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let coord = coordinator(200, 200).await;
        let worker = start(LlmWorkerConfig::new(format!(
            "http://127.0.0.1:{port}/v1/chat/completions"
        )))
        .await;
        send(&worker, &dispatch(&coord)).await;
        let report = report_of(&wait_for(&coord, "/result", 1).await[0]);
        assert_eq!(report.failure_kind, Some(FailureKind::Infrastructure));
        assert!(report.error.unwrap().contains("could not reach"));
    }

    #[tokio::test]
    async fn stale_heartbeat_abandons_the_call_without_reporting() {
        let provider = provider_answering(
            ResponseTemplate::new(200)
                .set_body_json(completion("too late"))
                .set_delay(Duration::from_millis(2500)),
        )
        .await;
        let coord = coordinator(409, 200).await;
        let worker = start(config(&provider)).await;
        send(&worker, &dispatch(&coord)).await;
        wait_until(&worker, |s| s.abandoned == 1).await;
        // Past the provider's answer: still nothing reported, no more beats.
        tokio::time::sleep(Duration::from_millis(2000)).await;
        assert!(requests_to(&coord, "/result").await.is_empty());
        assert_eq!(requests_to(&coord, "/heartbeat").await.len(), 1);
        let stats = worker.stats();
        assert_eq!(
            (stats.abandoned, stats.succeeded, stats.reported),
            (1, 0, 0)
        );
    }

    #[tokio::test]
    async fn cancel_before_the_answer_reports_nothing() {
        let provider = provider_answering(
            ResponseTemplate::new(200)
                .set_body_json(completion("unwanted"))
                .set_delay(Duration::from_millis(1500)),
        )
        .await;
        let coord = coordinator(200, 200).await;
        let worker = start(config(&provider)).await;
        let req = dispatch(&coord);
        send(&worker, &req).await;
        wait_until(&worker, |s| s.calls == 1).await;
        let resp = reqwest::Client::new()
            .post(format!(
                "{}/v1/tasks/{}/cancel",
                worker.url(),
                req.attempt_id
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(resp.json::<Value>().await.unwrap()["cancelled"], true);
        tokio::time::sleep(Duration::from_millis(2000)).await;
        assert!(requests_to(&coord, "/result").await.is_empty());
        let stats = worker.stats();
        assert_eq!(
            (stats.cancelled, stats.succeeded, stats.reported),
            (1, 0, 0)
        );
    }

    #[tokio::test]
    async fn cancel_overtaking_its_dispatch_still_counts() {
        let provider =
            provider_answering(ResponseTemplate::new(200).set_body_json(completion("x"))).await;
        let coord = coordinator(200, 200).await;
        let worker = start(config(&provider)).await;
        let req = dispatch(&coord);
        reqwest::Client::new()
            .post(format!(
                "{}/v1/tasks/{}/cancel",
                worker.url(),
                req.attempt_id
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(send(&worker, &req).await, StatusCode::ACCEPTED);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(provider.received_requests().await.unwrap().is_empty());
        assert_eq!(worker.stats().cancelled, 1);
    }

    #[tokio::test]
    async fn refused_report_is_counted_and_not_retried() {
        let provider =
            provider_answering(ResponseTemplate::new(200).set_body_json(completion("ok"))).await;
        let coord = coordinator(200, 409).await;
        let worker = start(config(&provider)).await;
        send(&worker, &dispatch(&coord)).await;
        wait_until(&worker, |s| s.refused == 1).await;
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(requests_to(&coord, "/result").await.len(), 1);
        let stats = worker.stats();
        assert_eq!(
            (stats.refused, stats.reported, stats.undelivered),
            (1, 0, 0)
        );
    }

    #[tokio::test]
    async fn report_is_retried_after_a_server_error() {
        let provider =
            provider_answering(ResponseTemplate::new(200).set_body_json(completion("ok"))).await;
        let coord = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path_suffix("/result"))
            .respond_with(ResponseTemplate::new(503))
            .up_to_n_times(2)
            .with_priority(1)
            .mount(&coord)
            .await;
        Mock::given(method("POST"))
            .and(path_suffix("/result"))
            .respond_with(ResponseTemplate::new(200))
            .mount(&coord)
            .await;
        let worker = start(config(&provider)).await;
        send(&worker, &dispatch(&coord)).await;
        wait_until(&worker, |s| s.reported == 1).await;
        assert_eq!(requests_to(&coord, "/result").await.len(), 3);
        assert_eq!(worker.stats().reported, 1);
    }

    #[tokio::test]
    async fn duplicate_dispatch_calls_the_model_once() {
        let provider = provider_answering(
            ResponseTemplate::new(200)
                .set_body_json(completion("once"))
                .set_delay(Duration::from_millis(300)),
        )
        .await;
        let coord = coordinator(200, 200).await;
        let worker = start(config(&provider)).await;
        let req = dispatch(&coord);
        send(&worker, &req).await;
        send(&worker, &req).await;
        wait_until(&worker, |s| s.reported == 1).await;
        assert_eq!(provider.received_requests().await.unwrap().len(), 1);
        assert_eq!(worker.stats().duplicates, 1);
    }

    #[tokio::test]
    async fn invalid_dispatches_are_refused_and_health_and_stats_answer() {
        let provider = MockServer::start().await;
        let coord = coordinator(200, 200).await;
        let worker = start(config(&provider)).await;
        let http = reqwest::Client::new();
        let status = http
            .post(format!("{}/v1/tasks", worker.url()))
            .json(&json!({"attempt_id": "nope"}))
            .send()
            .await
            .unwrap()
            .status();
        assert!(status.is_client_error(), "{status}");
        let mut req = dispatch(&coord);
        req.callback.result_url = "not a url".into();
        assert_eq!(send(&worker, &req).await, StatusCode::UNPROCESSABLE_ENTITY);
        let health = http
            .get(format!("{}/healthz", worker.url()))
            .send()
            .await
            .unwrap();
        assert_eq!(health.status(), StatusCode::OK);
        let stats: Value = http
            .get(format!("{}/v1/stats", worker.url()))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(stats["received"], 0);
        assert_eq!(stats["calls"], 0);
    }

    #[tokio::test]
    async fn concurrency_one_serialises_calls() {
        let provider = provider_answering(
            ResponseTemplate::new(200)
                .set_body_json(completion("one at a time"))
                .set_delay(Duration::from_millis(400)),
        )
        .await;
        let coord = coordinator(200, 200).await;
        let worker = start(config(&provider)).await;
        let started = Instant::now();
        send(&worker, &dispatch(&coord)).await;
        send(&worker, &dispatch(&coord)).await;
        wait_until(&worker, |s| s.reported == 2).await;
        assert!(started.elapsed() >= Duration::from_millis(800));
        assert_eq!(worker.stats().calls, 2);
    }

    #[tokio::test]
    async fn spawn_refuses_unusable_configs() {
        let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
        for cfg in [
            LlmWorkerConfig::new("ftp://example.invalid/v1"),
            LlmWorkerConfig::new("not a url"),
            LlmWorkerConfig {
                heartbeat_secs: 0,
                ..LlmWorkerConfig::new("http://127.0.0.1:1/v1")
            },
            LlmWorkerConfig {
                concurrency: 0,
                ..LlmWorkerConfig::new("http://127.0.0.1:1/v1")
            },
            LlmWorkerConfig {
                timeout_secs: 0,
                ..LlmWorkerConfig::new("http://127.0.0.1:1/v1")
            },
        ] {
            assert!(LlmWorker::spawn(addr, cfg).await.is_err());
        }
    }

    #[test]
    fn completions_url_accepts_both_forms() {
        assert_eq!(
            completions_url("http://h:1/v1/").unwrap().as_str(),
            "http://h:1/v1/chat/completions"
        );
        assert_eq!(
            completions_url("http://h:1/v1/chat/completions")
                .unwrap()
                .as_str(),
            "http://h:1/v1/chat/completions"
        );
    }

    #[test]
    fn upstream_outputs_are_truncated() {
        let mut req = dispatch_without_server();
        req.upstream[0].output = Some(json!("é".repeat(10_000)));
        let messages = build_messages(&req);
        let user = &messages[1].content;
        assert!(
            user.contains("[truncated: 4096 of 20000 bytes shown]"),
            "{user}"
        );
        assert!(user.len() < 8 * 1024);
    }

    fn dispatch_without_server() -> DispatchRequest {
        DispatchRequest {
            attempt_id: Uuid::new_v4(),
            attempt_number: 1,
            task_id: Uuid::new_v4(),
            mission_id: Uuid::new_v4(),
            agent_id: "a".into(),
            goal: "g".into(),
            task: TaskPayload {
                key: "k".into(),
                title: "t".into(),
                task_type: "research".into(),
                description: "d".into(),
                required_skills: vec![],
                required_tools: vec![],
                success_criteria: Value::Null,
                inputs: Value::Null,
                tool_policy: None,
            },
            upstream: vec![UpstreamOutput {
                task_id: Uuid::new_v4(),
                key: "u".into(),
                title: "U".into(),
                output: None,
            }],
            organisation: None,
            feedback: None,
            deadline: OffsetDateTime::now_utc(),
            callback: Callback {
                heartbeat_url: String::new(),
                result_url: String::new(),
                token: String::new(),
                tool_approvals_url: None,
                traceparent: None,
            },
        }
    }

    #[test]
    fn completion_parsing_tolerates_odd_servers() {
        let parts = json!({"choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"text": "b"}]}}]});
        let done = parse_completion(parts.to_string().as_bytes()).unwrap();
        assert_eq!(done.content, "ab");
        assert_eq!((done.prompt_tokens, done.completion_tokens), (0, 0));
        let null = json!({"choices": [{"message": {"content": null}, "finish_reason": "length"}], "usage": {"total_tokens": 9}});
        let done = parse_completion(null.to_string().as_bytes()).unwrap();
        assert_eq!(done.content, "");
        assert_eq!(done.prompt_tokens, 9);
        assert!(parse_completion(b"{}").is_err());
        assert!(parse_completion(b"\xff\xfe").is_err());
    }

    #[test]
    fn debug_hides_the_key_and_cost_is_never_negative() {
        let cfg = LlmWorkerConfig {
            api_key: Some(KEY.into()),
            prompt_price_per_1k: -1.0,
            ..LlmWorkerConfig::new("http://h/v1")
        };
        assert!(!format!("{cfg:?}").contains(KEY));
        assert_eq!(cfg.cost(1000, 1000), 0.0);
    }
}
