//! The LLM worker (`coordinator worker --llm-url … --model …`): a real HTTP
//! server speaking the worker protocol (through the
//! [`harness`](crate::harness)) that turns each dispatched task into one
//! chat-completions call against any OpenAI-compatible server (OpenAI,
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
//!   is a `quality` failure. The model is not retried here: the coordinator
//!   retries the task, honouring the provider's `Retry-After`.
//!
//! Nothing the provider, the model or the coordinator sends can panic the
//! worker, every provider body is read up to [`MAX_RESPONSE_BYTES`], and the
//! API key never appears in a log line, a report or `{:?}` output.

use std::{
    fmt,
    net::SocketAddr,
    sync::{Arc, Mutex, MutexGuard},
    time::Duration,
};

use axum::Router;
use coordinator_core::domain::{FailureKind, ReportStatus};
use coordinator_llm::{
    CallError, ChatClient, ChatRequest, ClientOptions, Completion, completions_url,
};
use coordinator_protocol::{DispatchRequest, Heartbeat, WorkerReport};
use serde::Serialize;
use serde_json::json;
use tokio::{net::TcpListener, sync::Semaphore};

use crate::harness::{self, Attempt, Counters, Plan, Reply, Server, ServerError};

mod prompt;
#[cfg(test)]
mod tests;

/// Largest provider response body read; a larger one is a failed call, not buffered.
pub const MAX_RESPONSE_BYTES: usize = 2 << 20;

/// Most bytes of one upstream task's output quoted to the model.
pub const MAX_UPSTREAM_BYTES: usize = 4 * 1024;

/// Attempts to deliver one result before giving up (the lease then reclaims the task).
const RESULT_ATTEMPTS: u32 = 5;

/// First delay between result deliveries; doubles each time.
const RESULT_RETRY_BASE: Duration = Duration::from_millis(200);

/// Limit for opening a connection to the provider.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

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
}

impl fmt::Debug for LlmWorkerConfig {
    // Hand-written so the API key never reaches a log line through `{:?}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmWorkerConfig")
            .field("llm_url", &self.llm_url)
            .field("model", &self.model)
            .field("api_key", &coordinator_llm::redacted(&self.api_key))
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

/// The model side of the worker: the client, the call slots, its counters.
struct ModelWorker {
    config: LlmWorkerConfig,
    client: ChatClient,
    slots: Semaphore,
    /// The counters only the model side knows (the rest are the harness's).
    own: Mutex<LlmWorkerStats>,
}

impl ModelWorker {
    fn own(&self) -> MutexGuard<'_, LlmWorkerStats> {
        harness::lock(&self.own)
    }

    /// Sends the task to the model and reads the answer, all within the per-call timeout.
    async fn call_model(&self, req: &DispatchRequest) -> Result<Completion, CallError> {
        let messages = prompt::build_messages(req);
        let body = ChatRequest {
            model: &self.config.model,
            messages: &messages,
            temperature: TEMPERATURE,
            max_tokens: Some(self.config.max_tokens),
            response_format: None,
        };
        self.client.send(&body).await
    }
}

impl harness::Worker for ModelWorker {
    type Job = ();
    type Stats = LlmWorkerStats;

    fn accept(&self, _req: &DispatchRequest) -> Reply<()> {
        Reply::Run(Plan::new(()))
    }

    async fn run(&self, req: &DispatchRequest, (): (), attempt: &Attempt) -> Option<WorkerReport> {
        // The permit lives only for the call, so the model slot is free again
        // before the (possibly slow) result delivery.
        let _permit = self.slots.acquire().await.ok()?;
        if attempt.is_cancelled() {
            return None;
        }
        self.own().calls += 1;
        let outcome = self.call_model(req).await;
        if let Ok(done) = &outcome {
            // Spent whatever happens to the answer next.
            let mut own = self.own();
            own.prompt_tokens += done.usage.prompt_tokens;
            own.completion_tokens += done.usage.completion_tokens;
        }
        Some(report_for(&self.config, outcome))
    }

    fn reporting(&self, req: &DispatchRequest, report: &WorkerReport) {
        match report.status {
            ReportStatus::Succeeded => self.own().succeeded += 1,
            _ => self.own().failed += 1,
        }
        if let Some(error) = &report.error {
            tracing::warn!(attempt_id = %req.attempt_id, error = %error, "task failed");
        }
    }

    fn stats(&self, counters: &Counters) -> LlmWorkerStats {
        LlmWorkerStats {
            received: counters.received,
            duplicates: counters.duplicates,
            reported: counters.reported,
            refused: counters.refused,
            undelivered: counters.rejected + counters.gave_up,
            cancelled: counters.cancelled,
            abandoned: counters.abandoned,
            ..self.own().clone()
        }
    }
}

/// A running LLM worker.
pub struct LlmWorker {
    server: Server<ModelWorker>,
}

impl LlmWorker {
    /// Checks the config, binds `listen` (port 0 for any) and serves in the background.
    pub async fn spawn(listen: SocketAddr, config: LlmWorkerConfig) -> anyhow::Result<Self> {
        Ok(Self::start(listen, config).await?)
    }

    async fn start(listen: SocketAddr, config: LlmWorkerConfig) -> Result<Self, LlmWorkerError> {
        let url = completions_url(&config.llm_url, "--llm-url").map_err(LlmWorkerError::Config)?;
        check(&config)?;
        let listener = TcpListener::bind(listen)
            .await
            .map_err(|source| LlmWorkerError::Bind {
                addr: listen,
                source,
            })?;
        let options = ClientOptions {
            api_key: config.api_key.clone(),
            timeout: Duration::from_secs(config.timeout_secs),
            connect_timeout: CONNECT_TIMEOUT,
            max_response_bytes: MAX_RESPONSE_BYTES,
        };
        let client = ChatClient::new(url, options)?;
        let settings = harness::Settings {
            name: "LLM worker",
            heartbeat_every: Duration::from_secs(config.heartbeat_secs),
            heartbeat: Heartbeat {
                progress: None,
                message: Some(format!("waiting for {}", config.model)),
            },
            delivery_attempts: RESULT_ATTEMPTS,
            delivery_backoff: RESULT_RETRY_BASE,
        };
        let worker = Arc::new(ModelWorker {
            slots: Semaphore::new(config.concurrency),
            config,
            client,
            own: Mutex::new(LlmWorkerStats::default()),
        });
        let server = Server::start(listener, worker.clone(), settings, Router::new()).map_err(
            |e| match e {
                ServerError::Listen(source) => LlmWorkerError::Bind {
                    addr: listen,
                    source,
                },
                ServerError::Client(e) => LlmWorkerError::Client(e),
            },
        )?;
        tracing::info!(
            url = %server.url(),
            provider = %worker.client.url(),
            model = %worker.config.model,
            concurrency = worker.config.concurrency,
            "LLM worker listening"
        );
        Ok(LlmWorker { server })
    }

    /// The base URL to register as an agent's `endpoint_url`.
    pub fn url(&self) -> String {
        self.server.url()
    }

    /// What it has done so far.
    pub fn stats(&self) -> LlmWorkerStats {
        self.server.stats()
    }

    /// Waits until the server task ends (it runs until the process exits).
    pub async fn wait(self) -> anyhow::Result<()> {
        self.server.wait().await
    }
}

/// Refuses settings that cannot work.
fn check(config: &LlmWorkerConfig) -> Result<(), LlmWorkerError> {
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
    Ok(())
}

/// Turns a call's outcome into the report sent to the coordinator.
fn report_for(cfg: &LlmWorkerConfig, outcome: Result<Completion, CallError>) -> WorkerReport {
    match outcome {
        Ok(done) => {
            let cost = cfg.cost(done.usage.prompt_tokens, done.usage.completion_tokens);
            let tokens = i64::try_from(done.usage.total()).unwrap_or(i64::MAX);
            // No text at all (e.g. only a refusal or tool calls) is an empty answer.
            let content = done.content.unwrap_or_default();
            if content.trim().is_empty() {
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
                    "text": content,
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
                // The client already took the API key out of every error text.
                error: Some(err.to_string()),
                failure_kind: Some(FailureKind::Infrastructure),
                cost: 0.0,
                tokens: 0,
                retry_after_secs: err.retry_after().map(|d| d.as_secs()),
            }
        }
    }
}
