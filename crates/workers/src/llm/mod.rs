//! The LLM worker (`coordinator worker --llm-url … --model …`): a real HTTP
//! server speaking the worker protocol (through the
//! [`harness`](crate::harness)) that does each dispatched task as an agent:
//! a bounded, multi-turn function-calling conversation with any
//! OpenAI-compatible chat-completions server (OpenAI, llama.cpp's server,
//! vLLM, …) through the one client of `coordinator-llm`.
//!
//! - `POST /v1/tasks` answers `202` at once; the attempt runs in the
//!   background, its model calls at most `--concurrency` at a time (llama.cpp
//!   serves one request at a time).
//! - The model gets a prompt built from its role (the organisation's brief
//!   and the role's `--prompt-variants` text), the goal, the task, upstream
//!   outputs, the blackboard snapshot and the previous attempt's feedback
//!   ([`prompt`]); the agent tools the attempt may call (`callback.tools_url`,
//!   with the attempt token) plus `finish`; and at most `--max-turns` turns
//!   ([`agent_loop`]). `finish` or a plain answer ends the attempt with its
//!   result; a tool call answered `409` ends it without a report.
//! - While an attempt runs, a heartbeat goes to the coordinator every
//!   `--heartbeat-secs`; a `409` answer means the attempt is no longer live,
//!   so it is abandoned and nothing is reported.
//! - `POST /v1/tasks/{attempt_id}/cancel` stops an attempt: its call is dropped
//!   and its result, should one arrive, is never reported.
//! - Each call's `max_tokens` is what the model's context leaves after the
//!   conversation (estimated; see `coordinator_llm::context`), at most
//!   `--llm-max-tokens`. The context size is `--llm-context-tokens`, else
//!   what the provider reports, else what its first context-length error
//!   names; after such an error the call is sent once more, smaller.
//! - Provider failures (429, 5xx, timeouts, transport errors, other 4xx) are
//!   reported as `failed` with failure kind `infrastructure`; an empty answer
//!   or a used-up turn bound is a `quality` failure. The model is not retried
//!   here: the coordinator retries the task, honouring the provider's
//!   `Retry-After`. Tokens and cost are summed over every turn.
//!
//! Nothing the provider, the model or the coordinator sends can panic the
//! worker, every provider body is read up to [`MAX_RESPONSE_BYTES`], every
//! tool result fed back is capped, and the API key never appears in a log
//! line, a report or `{:?}` output.

use std::{
    fmt,
    net::SocketAddr,
    path::PathBuf,
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicBool, AtomicU32},
    },
    time::Duration,
};

use axum::Router;
use coordinator_core::domain::ReportStatus;
use coordinator_llm::{ChatClient, ClientOptions, completions_url};
use coordinator_protocol::{DispatchRequest, Heartbeat, WorkerReport};
use serde::Serialize;
use tokio::{net::TcpListener, sync::Semaphore};

use crate::harness::{self, Attempt, Counters, Plan, Reply, Server, ServerError};

mod agent_loop;
mod progress;
mod prompt;
mod report;
#[cfg(test)]
mod tests;
mod tools;

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

/// Fewest answer tokens asked for when the context is nearly full: room for
/// a short `finish` call.
const MIN_ANSWER_TOKENS: u32 = 64;

/// Model turns per attempt unless `--max-turns` says otherwise.
pub const DEFAULT_MAX_TURNS: u32 = 10;

/// The most `--max-turns` may be: each turn resends the whole conversation.
pub const MAX_MAX_TURNS: u32 = 100;

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
    /// Most tokens per answer (lowered to what the context leaves).
    #[arg(long = "llm-max-tokens", default_value_t = 1024)]
    pub max_tokens: u32,
    /// The model's context size in tokens; without it the provider is
    /// asked (llama.cpp's `/props`, vLLM's `/v1/models`) or its first
    /// context-length error says.
    #[arg(long = "llm-context-tokens", env = "WORKER_LLM_CONTEXT_TOKENS")]
    pub context_tokens: Option<u32>,
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
    /// Most model turns per attempt (1–100); an attempt that has not called
    /// `finish` by then fails.
    #[arg(long, env = "WORKER_MAX_TURNS", default_value_t = DEFAULT_MAX_TURNS)]
    pub max_turns: u32,
    /// A JSON (`.json`) or TOML file mapping a role name (or an agent id, or
    /// `default`) to extra system-prompt text for that role's attempts.
    #[arg(long, env = "WORKER_PROMPT_VARIANTS")]
    pub prompt_variants: Option<PathBuf>,
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
            context_tokens: None,
            prompt_price_per_1k: 0.0,
            completion_price_per_1k: 0.0,
            heartbeat_secs: 5,
            concurrency: 1,
            max_turns: DEFAULT_MAX_TURNS,
            prompt_variants: None,
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
            .field("context_tokens", &self.context_tokens)
            .field("prompt_price_per_1k", &self.prompt_price_per_1k)
            .field("completion_price_per_1k", &self.completion_price_per_1k)
            .field("heartbeat_secs", &self.heartbeat_secs)
            .field("concurrency", &self.concurrency)
            .field("max_turns", &self.max_turns)
            .field("prompt_variants", &self.prompt_variants)
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
    /// Chat-completions calls started (one per turn, and a repeat without
    /// tools when the provider refuses them).
    pub calls: u64,
    /// Coordinator tools called by the model.
    pub tool_calls: u64,
    /// Attempts reported as `succeeded`.
    pub succeeded: u64,
    /// Attempts that ended in a `failed` report (provider error, empty
    /// answer, turn bound reached).
    pub failed: u64,
    /// Results the coordinator accepted.
    pub reported: u64,
    /// Results the coordinator refused with `409` (the attempt was stale).
    pub refused: u64,
    /// Results never delivered: another 4xx, or every retry failed.
    pub undelivered: u64,
    /// Attempts cancelled by the coordinator before their result was reported.
    pub cancelled: u64,
    /// Attempts dropped because a heartbeat or a tool call was answered `409`.
    pub abandoned: u64,
    /// Of those, the ones a tool call found stale (the harness counts them as
    /// cancelled; [`harness::Worker::stats`] moves them to `abandoned`).
    #[serde(skip)]
    stale: u64,
    /// Attempts the agent ended itself by handing its task over or raising a
    /// blocker (a tool answered `attempt_ended: true`); nothing is reported.
    pub handed_on: u64,
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

/// The model side of the worker: the clients, the call slots, its counters.
struct ModelWorker {
    config: LlmWorkerConfig,
    client: ChatClient,
    /// Calls the coordinator's tool routes.
    tools_http: reqwest::Client,
    /// Extra system text per role.
    variants: prompt::PromptVariants,
    /// Set once the provider refused `tools`, so later calls go without them.
    no_tools: AtomicBool,
    /// The context size the provider reported or its error named (0: not known).
    learnt_context: AtomicU32,
    /// Whether the provider was already asked for its context size.
    probed: AtomicBool,
    slots: Semaphore,
    /// The counters only the model side knows (the rest are the harness's).
    own: Mutex<LlmWorkerStats>,
}

impl ModelWorker {
    fn own(&self) -> MutexGuard<'_, LlmWorkerStats> {
        harness::lock(&self.own)
    }
}

impl harness::Worker for ModelWorker {
    type Job = ();
    type Stats = LlmWorkerStats;

    fn accept(&self, _req: &DispatchRequest) -> Reply<()> {
        Reply::Run(Plan::new(()))
    }

    async fn run(&self, req: &DispatchRequest, (): (), attempt: &Attempt) -> Option<WorkerReport> {
        self.work(req, attempt).await
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
        let own = self.own().clone();
        LlmWorkerStats {
            received: counters.received,
            duplicates: counters.duplicates,
            reported: counters.reported,
            refused: counters.refused,
            undelivered: counters.rejected + counters.gave_up,
            // An attempt a tool call found stale ended without a report, which
            // the harness counts as cancelled; it was abandoned.
            // So did one the agent ended itself (a handoff, a blocker): it
            // was handed on.
            cancelled: counters
                .cancelled
                .saturating_sub(own.stale)
                .saturating_sub(own.handed_on),
            abandoned: counters.abandoned + own.stale,
            ..own
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
        let variants = match &config.prompt_variants {
            Some(path) => prompt::PromptVariants::load(path).map_err(LlmWorkerError::Config)?,
            None => prompt::PromptVariants::default(),
        };
        let tools_http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()?;
        let settings = harness::Settings {
            name: "LLM worker",
            heartbeat_every: Duration::from_secs(config.heartbeat_secs),
            heartbeat: Heartbeat {
                progress: None,
                message: Some(format!("working with {}", config.model)),
            },
            delivery_attempts: RESULT_ATTEMPTS,
            delivery_backoff: RESULT_RETRY_BASE,
        };
        let worker = Arc::new(ModelWorker {
            slots: Semaphore::new(config.concurrency),
            config,
            client,
            tools_http,
            variants,
            no_tools: AtomicBool::new(false),
            learnt_context: AtomicU32::new(0),
            probed: AtomicBool::new(false),
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
            max_turns = worker.config.max_turns,
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
    if config.max_turns == 0 || config.max_turns > MAX_MAX_TURNS {
        return Err(LlmWorkerError::Config(format!(
            "--max-turns must be between 1 and {MAX_MAX_TURNS}"
        )));
    }
    if config.max_tokens == 0 {
        return Err(LlmWorkerError::Config(
            "--llm-max-tokens must be at least 1".into(),
        ));
    }
    if config.context_tokens == Some(0) {
        return Err(LlmWorkerError::Config(
            "--llm-context-tokens must be at least 1".into(),
        ));
    }
    Ok(())
}
