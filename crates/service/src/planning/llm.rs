//! LLM plan generator over any OpenAI-compatible chat-completions API.
//!
//! [`LlmPlanner::plan`] asks a model (OpenAI, llama.cpp's server, vLLM, …) for a
//! plan in the [`PlanSpec`] wire format, parses the answer leniently (Markdown
//! fences, surrounding prose, a bare array of tasks), checks it with the caller's
//! validator and sends every problem back to the model for a bounded number of
//! repairs.
//!
//! Robustness matters more than elegance here: small local models answer
//! nonsense, servers time out or rate-limit, and some reject OpenAI's
//! `json_schema` response format. Every loop is bounded (retries, repairs, one
//! format fallback), every response body is read up to [`MAX_RESPONSE_BYTES`],
//! and nothing a server or model sends can panic.

use std::fmt;
use std::hash::BuildHasher;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};
use tracing::Instrument;

use super::spec::{PlanSpec, TaskSpec};
use super::validate::PlanProblem;

/// Largest response body read from the server; larger bodies are rejected, not buffered.
pub const MAX_RESPONSE_BYTES: usize = 1 << 20;

/// Longest wait honoured from a `Retry-After` header, and longest computed backoff.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);

/// Longest part of an error body kept in [`LlmError::Http`].
const BODY_EXCERPT_CHARS: usize = 500;

/// Longest previous answer echoed back to the model in a repair request.
const MAX_ECHOED_ANSWER_BYTES: usize = 32 * 1024;

/// Most problems listed in one repair request; the rest are summarised as a count.
const MAX_LISTED_PROBLEMS: usize = 40;

/// Most candidate start positions tried when digging a JSON value out of prose.
const MAX_JSON_CANDIDATES: usize = 8;

/// Problem codes for answers that could not be turned into a [`PlanSpec`] at all.
///
/// Validation problems keep the codes of [`super::validate::codes`].
pub mod codes {
    /// The answer was empty.
    pub const EMPTY_ANSWER: &str = "empty_answer";
    /// The answer contained no parseable JSON object or array.
    pub const NOT_JSON: &str = "not_json";
    /// The JSON was not `{"tasks": [...]}` or an array of tasks.
    pub const WRONG_SHAPE: &str = "wrong_shape";
    /// A plan or task object had a field the format does not define.
    pub const UNKNOWN_FIELD: &str = "unknown_field";
    /// A task was missing a required field or had a field of the wrong type.
    pub const INVALID_TASK: &str = "invalid_task";
    /// The model stopped at its token limit, so the answer is cut off.
    pub const TRUNCATED_ANSWER: &str = "truncated_answer";
    /// The validator rejected the plan without saying why.
    pub const REJECTED: &str = "rejected";
}

/// Which `response_format` to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResponseFormat {
    /// OpenAI structured output: `{"type":"json_schema","json_schema":{…}}`.
    JsonSchema,
    /// JSON mode plus a `schema` field, which llama.cpp turns into a grammar.
    JsonObject,
    /// `JsonSchema`, falling back to `JsonObject` for good once the server rejects it.
    #[default]
    Auto,
}

impl ResponseFormat {
    /// The configuration spelling: `json_schema`, `json_object` or `auto`.
    pub fn as_str(self) -> &'static str {
        match self {
            ResponseFormat::JsonSchema => "json_schema",
            ResponseFormat::JsonObject => "json_object",
            ResponseFormat::Auto => "auto",
        }
    }
}

impl fmt::Display for ResponseFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ResponseFormat {
    type Err = String;

    /// Parses `json_schema`, `json_object` or `auto` (case-insensitive).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "json_schema" => Ok(ResponseFormat::JsonSchema),
            "json_object" => Ok(ResponseFormat::JsonObject),
            "auto" => Ok(ResponseFormat::Auto),
            other => Err(format!(
                "unknown response format '{other}'; expected json_schema, json_object or auto"
            )),
        }
    }
}

/// The `response_format` actually sent on one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WireFormat {
    JsonSchema,
    JsonObject,
}

impl WireFormat {
    fn as_str(self) -> &'static str {
        match self {
            WireFormat::JsonSchema => "json_schema",
            WireFormat::JsonObject => "json_object",
        }
    }

    fn body(self, schema: &Ordered) -> Ordered {
        match self {
            WireFormat::JsonSchema => obj(vec![
                ("type", leaf(json!("json_schema"))),
                (
                    "json_schema",
                    obj(vec![
                        ("name", leaf(json!("plan"))),
                        // Not strict: OpenAI's strict mode forbids minItems, maxItems and
                        // the open `inputs` object, which the schema uses.
                        ("strict", leaf(json!(false))),
                        ("schema", schema.clone()),
                    ]),
                ),
            ]),
            // llama.cpp compiles `schema` into a grammar; OpenAI ignores the extra field.
            WireFormat::JsonObject => obj(vec![
                ("type", leaf(json!("json_object"))),
                ("schema", schema.clone()),
            ]),
        }
    }
}

/// How to reach the model and how patient to be with it.
#[derive(Clone)]
pub struct LlmConfig {
    /// API root including the version, e.g. `http://127.0.0.1:8000/v1` or `https://api.openai.com/v1`.
    pub base_url: String,
    /// Model name sent in every request.
    pub model: String,
    /// Bearer token; no `Authorization` header is sent when `None`.
    pub api_key: Option<String>,
    /// Limit for one HTTP call, from sending the request to reading the whole body.
    pub timeout: Duration,
    /// Extra attempts per call after a timeout, transport error, 429 or 5xx.
    pub max_retries: u32,
    /// First backoff delay; doubles on each retry (with jitter), capped at [`MAX_RETRY_DELAY`].
    pub retry_base: Duration,
    /// How many times a rejected plan is sent back to the model for correction.
    pub max_repairs: u32,
    /// Which `response_format` to request.
    pub response_format: ResponseFormat,
    /// Sampling temperature; low values make plans more repeatable.
    pub temperature: f64,
    /// Cap on tokens per answer, so a rambling model cannot run to its context limit.
    pub max_tokens: Option<u32>,
}

impl LlmConfig {
    /// A config with defaults: 60 s timeout, 2 retries from 500 ms, 2 repairs, `Auto`, temperature 0.2.
    pub fn new(base_url: impl Into<String>, model: impl Into<String>) -> Self {
        LlmConfig {
            base_url: base_url.into(),
            model: model.into(),
            api_key: None,
            timeout: Duration::from_secs(60),
            max_retries: 2,
            retry_base: Duration::from_millis(500),
            max_repairs: 2,
            response_format: ResponseFormat::Auto,
            temperature: 0.2,
            max_tokens: Some(4096),
        }
    }
}

impl fmt::Debug for LlmConfig {
    // Hand-written so the API key never reaches a log line through `{:?}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("retry_base", &self.retry_base)
            .field("max_repairs", &self.max_repairs)
            .field("response_format", &self.response_format)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .finish()
    }
}

/// What to plan: the goal plus everything the model should take into account.
#[derive(Debug, Clone, Copy)]
pub struct PlanRequest<'a> {
    /// The mission goal in the user's words.
    pub goal: &'a str,
    /// Mission constraints (budget, deadline, …) as JSON; `null` or `{}` when none.
    pub constraints: &'a Value,
    /// Feedback on a rejected plan or new instructions from the user.
    pub feedback: Option<&'a str>,
    /// The plan being revised, when replanning.
    pub previous_plan: Option<&'a PlanSpec>,
    /// Skill vocabulary of the available agents; tasks may only require these.
    pub skills: &'a [String],
    /// Fewest tasks the plan may have.
    pub min_tasks: usize,
    /// Most tasks the plan may have.
    pub max_tasks: usize,
}

/// `PlanRequest::new`'s constraints: JSON `null`.
static NO_CONSTRAINTS: Value = Value::Null;

impl<'a> PlanRequest<'a> {
    /// A request for `goal` with no constraints, feedback or skills and 3..=20 tasks.
    pub fn new(goal: &'a str) -> Self {
        PlanRequest {
            goal,
            constraints: &NO_CONSTRAINTS,
            feedback: None,
            previous_plan: None,
            skills: &[],
            min_tasks: 3,
            max_tasks: 20,
        }
    }
}

/// A validated plan from the model, with what it cost to get it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LlmPlan {
    /// The plan; it passed the caller's validator.
    pub plan: PlanSpec,
    /// Model name reported by the server (often more precise than the requested one).
    pub model: String,
    /// Prompt tokens summed over all calls (0 where the server reported no usage).
    pub prompt_tokens: u64,
    /// Completion tokens summed over all calls (0 where the server reported no usage).
    pub completion_tokens: u64,
    /// Wall-clock time of the whole `plan` call, including retries and repairs.
    pub latency_ms: u64,
    /// HTTP requests sent, including retries and a format fallback.
    pub calls: u32,
    /// Repair rounds needed (0 when the first answer was valid).
    pub repairs: u32,
    /// The `response_format` of the call that produced the plan: `json_schema` or `json_object`.
    pub response_format: &'static str,
}

/// Why no plan came back.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    /// The configuration cannot work (bad URL, empty model, zero timeout, …).
    #[error("invalid LLM configuration: {0}")]
    Config(String),
    /// Every attempt of a call ran past the per-call timeout.
    #[error("LLM call timed out after {attempts} attempt(s) of {timeout:?} each")]
    Timeout {
        /// Attempts made.
        attempts: u32,
        /// The per-call limit.
        timeout: Duration,
    },
    /// The server answered with an error status that was not retried or kept recurring.
    #[error("LLM server answered HTTP {status}: {body_excerpt}")]
    Http {
        /// HTTP status code.
        status: u16,
        /// Start of the response body, with the API key removed.
        body_excerpt: String,
    },
    /// The server could not be reached or the connection broke.
    #[error("could not reach the LLM server: {0}")]
    Transport(String),
    /// The server answered 2xx but not with a usable chat completion.
    #[error("unusable response from the LLM server: {0}")]
    BadResponse(String),
    /// The model never produced a plan that parsed and validated.
    #[error(
        "the model produced no valid plan in {attempts} attempt(s); last problems: {}",
        summarize_problems(problems)
    )]
    InvalidPlan {
        /// Problems with the last answer.
        problems: Vec<PlanProblem>,
        /// Answers received (1 + repairs).
        attempts: u32,
    },
}

impl LlmError {
    /// Stable machine-readable code for API responses and metrics.
    pub fn code(&self) -> &'static str {
        match self {
            LlmError::Config(_) => "llm_config",
            LlmError::Timeout { .. } => "llm_timeout",
            LlmError::Http { .. } => "llm_http",
            LlmError::Transport(_) => "llm_transport",
            LlmError::BadResponse(_) => "llm_bad_response",
            LlmError::InvalidPlan { .. } => "llm_invalid_plan",
        }
    }
}

/// `code: message` for the first few problems, for error messages and logs.
fn summarize_problems(problems: &[PlanProblem]) -> String {
    const SHOWN: usize = 5;
    let mut out = problems
        .iter()
        .take(SHOWN)
        .map(|p| format!("[{}] {}", p.code, p.message))
        .collect::<Vec<_>>()
        .join("; ");
    if problems.len() > SHOWN {
        out.push_str(&format!("; and {} more", problems.len() - SHOWN));
    }
    if out.is_empty() {
        out.push_str("none reported");
    }
    out
}

/// Generates plans with an OpenAI-compatible chat-completions API; cheap to clone.
#[derive(Debug, Clone)]
pub struct LlmPlanner {
    client: reqwest::Client,
    cfg: Arc<LlmConfig>,
    url: reqwest::Url,
    /// Set once an `Auto` server rejected `json_schema`; shared by all clones.
    json_object_only: Arc<AtomicBool>,
}

/// The chat-completions request body; fields serialize in this order.
#[derive(Debug, Serialize)]
struct ChatRequest<'a> {
    model: &'a str,
    messages: &'a [ChatMessage],
    temperature: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    response_format: Ordered,
}

/// One chat message as sent to the server.
#[derive(Debug, Clone, Serialize)]
struct ChatMessage {
    role: &'static str,
    content: String,
}

/// A successful chat completion, reduced to what planning needs.
#[derive(Debug)]
struct Completion {
    status: u16,
    content: String,
    truncated: bool,
    model: Option<String>,
    prompt_tokens: u64,
    completion_tokens: u64,
}

/// The outcome of one call (with its retries and fallback).
#[derive(Debug)]
struct CallResult {
    completion: Completion,
    format: WireFormat,
}

/// Why one HTTP attempt failed, before deciding whether to retry.
#[derive(Debug)]
enum AttemptError {
    Timeout,
    Transport(String),
    Status {
        status: u16,
        body: String,
        retry_after: Option<Duration>,
    },
    BadResponse(String),
}

impl LlmPlanner {
    /// Checks the config and builds the HTTP client.
    pub fn new(cfg: LlmConfig) -> Result<Self, LlmError> {
        if cfg.model.trim().is_empty() {
            return Err(LlmError::Config("model is empty".to_owned()));
        }
        if cfg.timeout.is_zero() {
            return Err(LlmError::Config("timeout must be positive".to_owned()));
        }
        if !cfg.temperature.is_finite() || cfg.temperature < 0.0 {
            return Err(LlmError::Config(format!(
                "temperature must be a non-negative number, got {}",
                cfg.temperature
            )));
        }
        let url = completions_url(&cfg.base_url)?;
        let client = reqwest::Client::builder()
            .connect_timeout(cfg.timeout)
            .build()
            .map_err(|e| {
                LlmError::Config(format!("cannot build HTTP client: {}", error_chain(&e)))
            })?;
        Ok(LlmPlanner {
            client,
            cfg: Arc::new(cfg),
            url,
            json_object_only: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The configuration this planner was built with.
    pub fn config(&self) -> &LlmConfig {
        &self.cfg
    }

    /// The `response_format` the next call will start with: `json_schema` or `json_object`.
    pub fn current_response_format(&self) -> &'static str {
        self.initial_format().as_str()
    }

    /// Asks the model for a plan that passes `validate`, repairing it up to `max_repairs` times.
    ///
    /// `validate` checks a parsed plan (pass the service's full validator). Parse
    /// problems and validation problems alike are sent back to the model, which is
    /// asked for a corrected full plan; when no answer passes, the result is
    /// [`LlmError::InvalidPlan`] with the last answer's problems.
    pub async fn plan(
        &self,
        request: &PlanRequest<'_>,
        validate: &(dyn Fn(&PlanSpec) -> Result<(), Vec<PlanProblem>> + Sync),
    ) -> Result<LlmPlan, LlmError> {
        let started = Instant::now();
        let schema = request_schema(request);
        let mut messages = vec![
            ChatMessage {
                role: "system",
                content: system_prompt(request),
            },
            ChatMessage {
                role: "user",
                content: user_prompt(request),
            },
        ];
        let mut calls = 0u32;
        let mut prompt_tokens = 0u64;
        let mut completion_tokens = 0u64;
        let mut round = 0u32;
        loop {
            let result = self.call(&messages, &schema, round, &mut calls).await?;
            let completion = result.completion;
            prompt_tokens = prompt_tokens.saturating_add(completion.prompt_tokens);
            completion_tokens = completion_tokens.saturating_add(completion.completion_tokens);

            let outcome = parse_plan(&completion.content).and_then(|plan| match validate(&plan) {
                Ok(()) => Ok(plan),
                Err(problems) if problems.is_empty() => Err(vec![problem(
                    codes::REJECTED,
                    "the plan was rejected without a reason".to_owned(),
                    None,
                )]),
                Err(problems) => Err(problems),
            });
            let mut problems = match outcome {
                Ok(plan) => {
                    tracing::info!(
                        model = %self.cfg.model,
                        calls,
                        repairs = round,
                        prompt_tokens,
                        completion_tokens,
                        "LLM plan accepted"
                    );
                    return Ok(LlmPlan {
                        plan,
                        model: completion.model.unwrap_or_else(|| self.cfg.model.clone()),
                        prompt_tokens,
                        completion_tokens,
                        latency_ms: millis(started.elapsed()),
                        calls,
                        repairs: round,
                        response_format: result.format.as_str(),
                    });
                }
                Err(problems) => problems,
            };
            if completion.truncated {
                // Said first: the other problems are usually just symptoms of the cut.
                problems.insert(
                    0,
                    problem(
                        codes::TRUNCATED_ANSWER,
                        "the answer was cut off at the token limit; write a shorter plan \
                         with shorter descriptions"
                            .to_owned(),
                        None,
                    ),
                );
            }
            tracing::warn!(
                model = %self.cfg.model,
                round,
                problems = problems.len(),
                first = %summarize_problems(&problems[..problems.len().min(1)]),
                "LLM plan rejected"
            );
            if round >= self.cfg.max_repairs {
                return Err(LlmError::InvalidPlan {
                    problems,
                    attempts: round.saturating_add(1),
                });
            }
            round += 1;
            messages.push(ChatMessage {
                role: "assistant",
                content: truncate_bytes(&completion.content, MAX_ECHOED_ANSWER_BYTES).to_owned(),
            });
            messages.push(ChatMessage {
                role: "user",
                content: repair_prompt(&problems),
            });
        }
    }

    /// The format to start a call with, given the config and what `Auto` has learned.
    fn initial_format(&self) -> WireFormat {
        match self.cfg.response_format {
            ResponseFormat::JsonSchema => WireFormat::JsonSchema,
            ResponseFormat::JsonObject => WireFormat::JsonObject,
            ResponseFormat::Auto if self.json_object_only.load(Ordering::Relaxed) => {
                WireFormat::JsonObject
            }
            ResponseFormat::Auto => WireFormat::JsonSchema,
        }
    }

    /// One chat completion, with retries and at most one `json_schema` → `json_object` fallback.
    async fn call(
        &self,
        messages: &[ChatMessage],
        schema: &Ordered,
        round: u32,
        calls: &mut u32,
    ) -> Result<CallResult, LlmError> {
        let mut format = self.initial_format();
        let mut fell_back = false;
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            *calls = calls.saturating_add(1);
            let body = ChatRequest {
                model: &self.cfg.model,
                messages,
                temperature: self.cfg.temperature,
                max_tokens: self.cfg.max_tokens,
                response_format: format.body(schema),
            };
            let span = tracing::info_span!(
                "llm_call",
                model = %self.cfg.model,
                round,
                attempt,
                format = format.as_str(),
            );
            let started = Instant::now();
            let outcome = self.attempt(&body).instrument(span.clone()).await;
            let latency_ms = millis(started.elapsed());

            let err = match outcome {
                Ok(completion) => {
                    span.in_scope(|| {
                        tracing::debug!(status = completion.status, latency_ms, "LLM call ok")
                    });
                    return Ok(CallResult { completion, format });
                }
                Err(err) => err,
            };
            span.in_scope(|| match &err {
                AttemptError::Status { status, .. } => {
                    tracing::warn!(status, latency_ms, "LLM call failed")
                }
                other => tracing::warn!(latency_ms, error = ?other, "LLM call failed"),
            });

            if let AttemptError::Status { status, body, .. } = &err
                && self.cfg.response_format == ResponseFormat::Auto
                && format == WireFormat::JsonSchema
                && !fell_back
                && rejects_response_format(*status, body)
            {
                // Remembered for every clone, so later calls skip the doomed request.
                self.json_object_only.store(true, Ordering::Relaxed);
                format = WireFormat::JsonObject;
                fell_back = true;
                attempt -= 1;
                tracing::info!(
                    model = %self.cfg.model,
                    status,
                    "server rejected json_schema; using json_object from now on"
                );
                continue;
            }

            let retryable = match &err {
                AttemptError::Timeout | AttemptError::Transport(_) => true,
                AttemptError::Status { status, .. } => *status == 429 || *status >= 500,
                AttemptError::BadResponse(_) => false,
            };
            if !retryable || attempt > self.cfg.max_retries {
                return Err(self.final_error(err, attempt));
            }
            let delay = match &err {
                AttemptError::Status {
                    retry_after: Some(wait),
                    ..
                } => *wait,
                _ => backoff(self.cfg.retry_base, attempt),
            };
            tracing::info!(
                model = %self.cfg.model,
                attempt,
                delay_ms = millis(delay),
                "retrying LLM call"
            );
            tokio::time::sleep(delay).await;
        }
    }

    /// Sends one request and reads the reply, all within the per-call timeout.
    async fn attempt(&self, body: &ChatRequest<'_>) -> Result<Completion, AttemptError> {
        let exchange = async {
            let mut builder = self.client.post(self.url.clone()).json(body);
            if let Some(key) = self.cfg.api_key.as_deref().filter(|k| !k.is_empty()) {
                // bearer_auth marks the header sensitive, so reqwest never prints it.
                builder = builder.bearer_auth(key);
            }
            let mut response = builder.send().await.map_err(attempt_error)?;
            let status = response.status();
            let retry_after = crate::retry_after::from_headers(response.headers())
                .map(|wait| wait.min(MAX_RETRY_DELAY));
            let (bytes, complete) = read_capped(&mut response, MAX_RESPONSE_BYTES).await?;
            Ok((status, retry_after, bytes, complete))
        };
        let (status, retry_after, bytes, complete) =
            match tokio::time::timeout(self.cfg.timeout, exchange).await {
                Ok(result) => result?,
                Err(_) => return Err(AttemptError::Timeout),
            };
        if !status.is_success() {
            return Err(AttemptError::Status {
                status: status.as_u16(),
                body: String::from_utf8_lossy(&bytes).into_owned(),
                retry_after,
            });
        }
        if !complete {
            return Err(AttemptError::BadResponse(format!(
                "response body is larger than {MAX_RESPONSE_BYTES} bytes"
            )));
        }
        let mut completion = parse_completion(&bytes).map_err(AttemptError::BadResponse)?;
        completion.status = status.as_u16();
        Ok(completion)
    }

    /// Turns the last failed attempt into the error the caller sees.
    fn final_error(&self, err: AttemptError, attempts: u32) -> LlmError {
        match err {
            AttemptError::Timeout => LlmError::Timeout {
                attempts,
                timeout: self.cfg.timeout,
            },
            AttemptError::Transport(message) => LlmError::Transport(message),
            AttemptError::BadResponse(message) => LlmError::BadResponse(message),
            AttemptError::Status { status, body, .. } => LlmError::Http {
                status,
                body_excerpt: self.excerpt(&body),
            },
        }
    }

    /// The start of an error body, without the API key should the server echo it.
    fn excerpt(&self, body: &str) -> String {
        let mut text: String = body.trim().chars().take(BODY_EXCERPT_CHARS).collect();
        if let Some(key) = self.cfg.api_key.as_deref().filter(|k| !k.is_empty()) {
            text = text.replace(key, "[redacted]");
        }
        if body.trim().chars().nth(BODY_EXCERPT_CHARS).is_some() {
            text.push('…');
        }
        text
    }
}

/// `{base_url}/chat/completions`, accepting a base URL that already ends in it.
fn completions_url(base_url: &str) -> Result<reqwest::Url, LlmError> {
    let base = base_url.trim().trim_end_matches('/');
    let full = if base.ends_with("/chat/completions") {
        base.to_owned()
    } else {
        format!("{base}/chat/completions")
    };
    let url = reqwest::Url::parse(&full)
        .map_err(|e| LlmError::Config(format!("base_url '{base_url}' is not a URL: {e}")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(LlmError::Config(format!(
            "base_url '{base_url}' must use http or https"
        )));
    }
    Ok(url)
}

/// Whether a 400/422 body says the server does not accept our `response_format`.
fn rejects_response_format(status: u16, body: &str) -> bool {
    // llama-cpp-python's server answers a json_schema response_format with a
    // 500 whose body names the field (seen with 0.3.36), so 5xx counts too
    // when the body says so; 429 is load, never a format problem.
    if !(status == 400 || status == 422 || status >= 500) {
        return false;
    }
    let body = body.to_ascii_lowercase();
    body.contains("response_format") || body.contains("json_schema")
}

/// Exponential backoff for retry number `attempt` (1-based), with jitter in [d/2, d].
fn backoff(base: Duration, attempt: u32) -> Duration {
    let factor = 1u32
        .checked_shl(attempt.saturating_sub(1))
        .unwrap_or(u32::MAX);
    let full = base.saturating_mul(factor).min(MAX_RETRY_DELAY);
    // Jitter keeps many planners that failed together from retrying in lockstep.
    let half = full / 2;
    let span = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX).max(1);
    let random = std::collections::hash_map::RandomState::new().hash_one(Instant::now());
    half + Duration::from_nanos(random % span)
}

/// Reads at most `cap` bytes of the body; the flag says whether the body ended within the cap.
async fn read_capped(
    response: &mut reqwest::Response,
    cap: usize,
) -> Result<(Vec<u8>, bool), AttemptError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(attempt_error)? {
        let room = cap - bytes.len();
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            return Ok((bytes, false));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok((bytes, true))
}

/// Classifies a reqwest error, with its causes, which reqwest's own message omits.
fn attempt_error(err: reqwest::Error) -> AttemptError {
    if err.is_timeout() {
        AttemptError::Timeout
    } else {
        AttemptError::Transport(error_chain(&err))
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

/// Extracts content, finish reason, model and usage from a chat-completion body.
fn parse_completion(bytes: &[u8]) -> Result<Completion, String> {
    let envelope: Value = serde_json::from_slice(bytes).map_err(|e| {
        format!(
            "body is not JSON ({e}): {}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
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
        Some(Value::Null) | None => {
            return Err("choices[0].message.content is missing or null".to_owned());
        }
        Some(other) => {
            return Err(format!(
                "choices[0].message.content is not text but {}",
                json_kind(other)
            ));
        }
    };
    let truncated = choice.get("finish_reason").and_then(Value::as_str) == Some("length");
    let model = envelope
        .get("model")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(|m| truncate_bytes(m, 200).to_owned());
    let usage = envelope.get("usage");
    let tokens = |field: &str| {
        usage
            .and_then(|u| u.get(field))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    Ok(Completion {
        status: 200,
        content,
        truncated,
        model,
        prompt_tokens: tokens("prompt_tokens"),
        completion_tokens: tokens("completion_tokens"),
    })
}

/// Parses a model's answer into a plan, or lists everything wrong with it.
fn parse_plan(content: &str) -> Result<PlanSpec, Vec<PlanProblem>> {
    if content.trim().is_empty() {
        return Err(vec![problem(
            codes::EMPTY_ANSWER,
            "the answer was empty; reply with the plan as a JSON object".to_owned(),
            None,
        )]);
    }
    let value = extract_json(content).map_err(|e| {
        vec![problem(
            codes::NOT_JSON,
            format!(
                "the answer is not valid JSON ({e}); reply with only a JSON object \
                 of the form {{\"tasks\": [...]}}"
            ),
            None,
        )]
    })?;

    let mut problems = Vec::new();
    let tasks = match value {
        Value::Array(tasks) => tasks,
        Value::Object(mut object) => match object.remove("tasks") {
            Some(Value::Array(tasks)) => {
                for key in object.keys().take(10) {
                    problems.push(problem(
                        codes::UNKNOWN_FIELD,
                        format!(
                            "unknown top-level field `{}`; the plan object has only `tasks`",
                            truncate_bytes(key, 60)
                        ),
                        None,
                    ));
                }
                tasks
            }
            Some(other) => {
                return Err(vec![problem(
                    codes::WRONG_SHAPE,
                    format!("`tasks` must be an array, not {}", json_kind(&other)),
                    None,
                )]);
            }
            None => {
                let keys: Vec<&str> = object
                    .keys()
                    .take(10)
                    .map(|k| truncate_bytes(k, 60))
                    .collect();
                let hint = if object.contains_key("id") {
                    "it looks like a single task; put every task in the `tasks` array"
                } else {
                    "the plan must be an object with a `tasks` array"
                };
                return Err(vec![problem(
                    codes::WRONG_SHAPE,
                    format!(
                        "expected {{\"tasks\": [...]}} but the object has fields [{}]; {hint}",
                        keys.join(", ")
                    ),
                    None,
                )]);
            }
        },
        other => {
            return Err(vec![problem(
                codes::WRONG_SHAPE,
                format!(
                    "expected {{\"tasks\": [...]}} but the answer is {}",
                    json_kind(&other)
                ),
                None,
            )]);
        }
    };

    // Tasks are parsed one by one so each problem names its task.
    let mut parsed = Vec::with_capacity(tasks.len());
    for (i, task) in tasks.into_iter().enumerate() {
        let id = task
            .get("id")
            .and_then(Value::as_str)
            .map(|id| truncate_bytes(id, 100).to_owned());
        let label = match &id {
            Some(id) => format!("task #{} ('{id}')", i + 1),
            None => format!("task #{}", i + 1),
        };
        if !task.is_object() {
            problems.push(problem(
                codes::INVALID_TASK,
                format!("{label} must be an object, not {}", json_kind(&task)),
                id,
            ));
            continue;
        }
        match serde_json::from_value::<TaskSpec>(task) {
            Ok(task) => parsed.push(task),
            Err(e) => {
                let text = e.to_string();
                let code = if text.starts_with("unknown field") {
                    codes::UNKNOWN_FIELD
                } else {
                    codes::INVALID_TASK
                };
                problems.push(problem(code, format!("{label}: {text}"), id));
            }
        }
    }
    if problems.is_empty() {
        Ok(PlanSpec { tasks: parsed })
    } else {
        Err(problems)
    }
}

/// Finds the JSON object or array in an answer that may have fences or prose around it.
fn extract_json(content: &str) -> Result<Value, String> {
    let text = content.trim();
    let first_error = match serde_json::from_str::<Value>(text) {
        Ok(value) => return Ok(value),
        Err(e) => e.to_string(),
    };
    let mut scopes = Vec::with_capacity(2);
    if let Some(inner) = fenced_block(text) {
        scopes.push(inner.trim());
    }
    scopes.push(text);
    for scope in scopes {
        // Try each `{` or `[` in turn; trailing prose after a complete value is ignored.
        // A later candidate must look like a plan: in a broken answer such as
        // `{"tasks":[{"depends_on":[],"desc` the inner `[]` parses but is not the plan.
        let starts = scope
            .char_indices()
            .filter(|(_, c)| *c == '{' || *c == '[')
            .map(|(i, _)| i)
            .take(MAX_JSON_CANDIDATES);
        for (n, start) in starts.enumerate() {
            let mut values =
                serde_json::Deserializer::from_str(&scope[start..]).into_iter::<Value>();
            if let Some(Ok(value)) = values.next()
                && (n == 0 || looks_like_plan(&value))
            {
                return Ok(value);
            }
        }
    }
    Err(first_error)
}

/// Whether a value found in prose is plausibly the plan rather than a fragment of it.
fn looks_like_plan(value: &Value) -> bool {
    match value {
        Value::Object(object) => object.contains_key("tasks"),
        Value::Array(items) => items.first().is_some_and(Value::is_object),
        _ => false,
    }
}

/// The body of the first Markdown code fence, or everything after an unclosed one.
fn fenced_block(text: &str) -> Option<&str> {
    let open = text.find("```")?;
    let after = &text[open + 3..];
    // Skip the info string such as `json`.
    let body = match after.find('\n') {
        Some(newline) => &after[newline + 1..],
        None => after,
    };
    Some(match body.find("```") {
        Some(close) => &body[..close],
        None => body,
    })
}

/// A one-word description of a JSON value for problem messages.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Builds a problem; `PlanProblem`'s own constructors are private to the validator.
fn problem(code: &'static str, message: String, task_id: Option<String>) -> PlanProblem {
    PlanProblem {
        code,
        message,
        task_id,
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a character boundary.
fn truncate_bytes(s: &str, max: usize) -> &str {
    &s[..s.floor_char_boundary(max)]
}

/// Milliseconds, saturating instead of truncating absurd durations.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// JSON whose object keys serialize in the order given.
///
/// `serde_json::Value` sorts keys, but constrained decoders (llama.cpp grammars,
/// OpenAI structured output) generate fields in schema order, and a model should
/// write a task's `id` and `title` before its `depends_on`.
#[derive(Debug, Clone)]
enum Ordered {
    Leaf(Value),
    Object(Vec<(&'static str, Ordered)>),
}

impl Serialize for Ordered {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Ordered::Leaf(value) => value.serialize(serializer),
            Ordered::Object(entries) => {
                let mut map = serializer.serialize_map(Some(entries.len()))?;
                for (key, value) in entries {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
        }
    }
}

/// An ordered object from `(key, value)` pairs.
fn obj(entries: Vec<(&'static str, Ordered)>) -> Ordered {
    Ordered::Object(entries)
}

/// A leaf whose own key order does not matter.
fn leaf(value: Value) -> Ordered {
    Ordered::Leaf(value)
}

/// Fields of a task in the order a model should write them.
const TASK_FIELDS: [&str; 11] = [
    "id",
    "title",
    "task_type",
    "description",
    "required_skills",
    "required_tools",
    "depends_on",
    "success_criteria",
    "estimated_cost",
    "optional",
    "inputs",
];

/// The plan schema, optionally narrowed to a task count and a skill vocabulary.
///
/// `skills`: `None` allows any strings, `Some(&[])` forces an empty list, and a
/// non-empty list becomes an `enum` so a constrained model can only pick skills
/// that some agent has.
fn schema(min_tasks: Option<usize>, max_tasks: Option<usize>, skills: Option<&[&str]>) -> Ordered {
    let strings = || leaf(json!({ "type": "array", "items": { "type": "string" } }));
    let required_skills = match skills {
        None => strings(),
        Some([]) => leaf(json!({ "type": "array", "maxItems": 0 })),
        Some(list) => leaf(json!({ "type": "array", "items": { "type": "string", "enum": list } })),
    };
    let criterion = obj(vec![
        ("type", leaf(json!("object"))),
        (
            "properties",
            obj(vec![
                ("description", leaf(json!({ "type": "string" }))),
                ("must_pass", leaf(json!({ "type": "boolean" }))),
            ]),
        ),
        ("required", leaf(json!(["description", "must_pass"]))),
        ("additionalProperties", leaf(json!(false))),
    ]);
    let task = obj(vec![
        ("type", leaf(json!("object"))),
        (
            "properties",
            obj(vec![
                (
                    "id",
                    leaf(json!({ "type": "string", "description": "unique snake_case key" })),
                ),
                ("title", leaf(json!({ "type": "string" }))),
                (
                    "task_type",
                    leaf(json!({
                        "type": "string",
                        "description": "research, writing, review, coding or analysis"
                    })),
                ),
                ("description", leaf(json!({ "type": "string" }))),
                ("required_skills", required_skills),
                ("required_tools", strings()),
                ("depends_on", strings()),
                (
                    "success_criteria",
                    obj(vec![
                        ("type", leaf(json!("array"))),
                        ("items", criterion),
                        ("minItems", leaf(json!(1))),
                    ]),
                ),
                (
                    "estimated_cost",
                    leaf(json!({ "type": "number", "minimum": 0 })),
                ),
                ("optional", leaf(json!({ "type": "boolean" }))),
                ("inputs", leaf(json!({ "type": "object" }))),
            ]),
        ),
        // Every field is required so a grammar-constrained model always writes a whole task.
        ("required", leaf(json!(TASK_FIELDS))),
        ("additionalProperties", leaf(json!(false))),
    ]);
    let mut tasks = vec![("type", leaf(json!("array"))), ("items", task)];
    if let Some(min) = min_tasks {
        tasks.push(("minItems", leaf(json!(min))));
    }
    if let Some(max) = max_tasks {
        tasks.push(("maxItems", leaf(json!(max))));
    }
    obj(vec![
        ("type", leaf(json!("object"))),
        ("properties", obj(vec![("tasks", obj(tasks))])),
        ("required", leaf(json!(["tasks"]))),
        ("additionalProperties", leaf(json!(false))),
    ])
}

/// JSON Schema of the plan format (`{"tasks": [...]}`), for `response_format`.
///
/// As a `Value` its keys come out sorted; requests send the same schema with the
/// task fields in writing order.
pub fn plan_json_schema() -> Value {
    // Cannot fail: every key is a string and every leaf is already a `Value`.
    serde_json::to_value(schema(None, None, None)).expect("the plan schema is plain JSON")
}

/// The schema narrowed to this request's task count and skill vocabulary.
fn request_schema(request: &PlanRequest<'_>) -> Ordered {
    let sane = request.min_tasks <= request.max_tasks;
    let min = (sane && request.min_tasks > 0).then_some(request.min_tasks);
    let max = (sane && request.max_tasks > 0).then_some(request.max_tasks);
    let skills = skill_list(request.skills);
    schema(min, max, Some(&skills))
}

/// The skill vocabulary, trimmed, without blanks or duplicates, in the caller's order.
fn skill_list(skills: &[String]) -> Vec<&str> {
    let mut seen = std::collections::HashSet::new();
    skills
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty() && seen.insert(s.to_lowercase()))
        .collect()
}

/// Explains the plan format and the rules a plan must follow.
fn system_prompt(request: &PlanRequest<'_>) -> String {
    let skills = skill_list(request.skills);
    let skills_rule = if skills.is_empty() {
        "No skill list was given: leave required_skills empty [].".to_owned()
    } else {
        format!(
            "required_skills may contain only these skills: {}.",
            serde_json::to_string(&skills).unwrap_or_default()
        )
    };
    let count_rule = if request.min_tasks == request.max_tasks {
        format!("The plan has exactly {} tasks.", request.min_tasks)
    } else {
        format!(
            "The plan has between {} and {} tasks; simple goals need few tasks.",
            request.min_tasks, request.max_tasks
        )
    };
    format!(
        r#"You are the planner of a mission coordinator that hands tasks to AI agents. Break the user's goal into tasks that form a dependency graph.

Answer with one JSON object and nothing else: no prose, no Markdown. The shape:
{{"tasks": [{{"id": "gather_sources", "title": "Gather sources", "task_type": "research", "description": "Find and summarise ...", "required_skills": [], "required_tools": [], "depends_on": [], "success_criteria": [{{"description": "At least five relevant sources are listed", "must_pass": true}}], "estimated_cost": 0.1, "optional": false, "inputs": {{}}}}]}}

Task fields (use no others):
- id: unique snake_case key (lowercase letters, digits, underscores), e.g. "draft_report".
- title: short human-readable title.
- task_type: research, writing, review, coding or analysis.
- description: clear instructions for the agent doing the task.
- required_skills: skills the agent needs.
- required_tools: tools the agent needs; leave empty [] unless the constraints name tools.
- depends_on: ids of the tasks that must finish before this one starts.
- success_criteria: how the result is judged, as {{"description": ..., "must_pass": true or false}}.
- estimated_cost: non-negative number in the budget's unit.
- optional: true only if the mission can succeed without this task.
- inputs: a JSON object with task inputs, {{}} if none.

Rules:
1. {count_rule}
2. Task ids are unique and snake_case.
3. depends_on names only ids of other tasks in the plan, and there are no cycles: a task never depends on itself, directly or through other tasks.
4. At least one task has an empty depends_on; it is where the work starts.
5. Every task has at least one success criterion with "must_pass": true.
6. {skills_rule}
7. Tasks that do not need each other's results do not depend on each other, so they can run in parallel.
8. If the constraints give a budget, the estimated costs sum to less than it."#
    )
}

/// States the goal, constraints, plan under revision and feedback.
fn user_prompt(request: &PlanRequest<'_>) -> String {
    let mut text = format!("Goal:\n{}\n", request.goal.trim());
    let has_constraints = match request.constraints {
        Value::Null => false,
        Value::Object(map) => !map.is_empty(),
        _ => true,
    };
    if has_constraints {
        text.push_str("\nConstraints (JSON):\n");
        text.push_str(&serde_json::to_string_pretty(request.constraints).unwrap_or_default());
        text.push('\n');
    }
    if let Some(previous) = request.previous_plan {
        text.push_str("\nCurrent plan (JSON):\n");
        text.push_str(&serde_json::to_string(previous).unwrap_or_default());
        text.push_str(
            "\nRevise this plan. Return the complete revised plan: keep the tasks that still \
             fit, with their ids unchanged, and change, remove or add tasks as needed.\n",
        );
    }
    if let Some(feedback) = request.feedback.map(str::trim).filter(|f| !f.is_empty()) {
        text.push_str("\nFeedback and instructions:\n");
        text.push_str(feedback);
        text.push('\n');
    }
    text.push_str("\nReply with the plan as one JSON object {\"tasks\": [...]}.");
    text
}

/// Lists the problems with the last answer and asks for a full corrected plan.
fn repair_prompt(problems: &[PlanProblem]) -> String {
    let mut text = String::from("Your plan was rejected. Problems:\n");
    for p in problems.iter().take(MAX_LISTED_PROBLEMS) {
        text.push_str(&format!("- [{}] {}\n", p.code, p.message));
    }
    if problems.len() > MAX_LISTED_PROBLEMS {
        text.push_str(&format!(
            "- and {} more problems\n",
            problems.len() - MAX_LISTED_PROBLEMS
        ));
    }
    text.push_str(
        "Fix every problem and reply with the complete corrected plan as one JSON object \
         {\"tasks\": [...]}, with no other text.",
    );
    text
}

#[cfg(test)]
mod format_rejection_tests {
    use super::rejects_response_format;

    #[test]
    fn llama_cpp_python_rejects_json_schema_with_a_500() {
        // The body llama-cpp-python 0.3.36 sends for response_format json_schema.
        let body = r#"{"error":{"message":"1 validation error:\n {'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema'}","type":"internal_server_error"}}"#;
        assert!(rejects_response_format(500, body));
        assert!(rejects_response_format(
            400,
            "response_format json_schema not supported"
        ));
        assert!(!rejects_response_format(500, "out of memory"));
        assert!(!rejects_response_format(429, "response_format"));
        assert!(!rejects_response_format(401, "response_format"));
    }
}

#[cfg(test)]
mod tests {
    use super::super::validate::{
        AgentCapability, ValidationContext, ValidationRules, validate_plan,
    };
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use wiremock::matchers::{body_partial_json, method, path};
    use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

    const COMPLETIONS: &str = "/v1/chat/completions";

    /// Answers with the given responses in order, repeating the last one.
    struct Sequence {
        responses: Vec<ResponseTemplate>,
        next: AtomicUsize,
    }

    impl Sequence {
        fn new(responses: Vec<ResponseTemplate>) -> Self {
            Sequence {
                responses,
                next: AtomicUsize::new(0),
            }
        }
    }

    impl Respond for Sequence {
        fn respond(&self, _: &Request) -> ResponseTemplate {
            let i = self.next.fetch_add(1, Ordering::SeqCst);
            self.responses[i.min(self.responses.len() - 1)].clone()
        }
    }

    fn completion(content: &str) -> ResponseTemplate {
        completion_with(content, "stop")
    }

    fn completion_with(content: &str, finish_reason: &str) -> ResponseTemplate {
        ResponseTemplate::new(200).set_body_json(json!({
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "test-model-2024",
            "choices": [{
                "index": 0,
                "message": { "role": "assistant", "content": content },
                "finish_reason": finish_reason
            }],
            "usage": { "prompt_tokens": 100, "completion_tokens": 40, "total_tokens": 140 }
        }))
    }

    fn task_json(id: &str, deps: &[&str]) -> Value {
        json!({
            "id": id,
            "title": format!("Task {id}"),
            "task_type": "research",
            "description": "do it",
            "required_skills": ["research"],
            "required_tools": [],
            "depends_on": deps,
            "success_criteria": [{ "description": "done", "must_pass": true }],
            "estimated_cost": 0.1,
            "optional": false,
            "inputs": {}
        })
    }

    fn good_plan() -> String {
        json!({ "tasks": [task_json("a", &[]), task_json("b", &["a"]), task_json("c", &["b"])] })
            .to_string()
    }

    fn cyclic_plan() -> String {
        json!({ "tasks": [task_json("a", &[]), task_json("b", &["c"]), task_json("c", &["b"])] })
            .to_string()
    }

    fn config(server: &MockServer) -> LlmConfig {
        let mut cfg = LlmConfig::new(format!("{}/v1", server.uri()), "test-model");
        cfg.timeout = Duration::from_secs(5);
        cfg.retry_base = Duration::from_millis(10);
        cfg
    }

    /// The service's real validator with one agent that has every skill used here.
    fn full_validator(plan: &PlanSpec) -> Result<(), Vec<PlanProblem>> {
        let rules = ValidationRules::default();
        let agents = [AgentCapability {
            skills: vec!["research".to_owned(), "writing".to_owned()],
            tools: vec![],
        }];
        let ctx = ValidationContext {
            rules: &rules,
            budget: None,
            agents: &agents,
        };
        validate_plan(plan.clone(), &ctx).map(|_| ())
    }

    fn skills() -> Vec<String> {
        vec!["research".to_owned(), "writing".to_owned()]
    }

    async fn bodies(server: &MockServer) -> Vec<Value> {
        server
            .received_requests()
            .await
            .unwrap()
            .iter()
            .map(|r| r.body_json::<Value>().unwrap())
            .collect()
    }

    #[tokio::test]
    async fn well_formed_reply_validates_first_time() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(COMPLETIONS))
            .respond_with(completion(&good_plan()))
            .mount(&server)
            .await;
        let mut cfg = config(&server);
        cfg.api_key = Some("sk-secret".to_owned());
        let planner = LlmPlanner::new(cfg).unwrap();
        let skills = skills();
        let constraints = json!({ "budget": 5.0 });
        let request = PlanRequest {
            constraints: &constraints,
            skills: &skills,
            ..PlanRequest::new("Write a report on solar panels")
        };
        let out = planner.plan(&request, &full_validator).await.unwrap();

        assert_eq!(out.plan.tasks.len(), 3);
        assert_eq!(out.calls, 1);
        assert_eq!(out.repairs, 0);
        assert_eq!(out.prompt_tokens, 100);
        assert_eq!(out.completion_tokens, 40);
        assert_eq!(out.model, "test-model-2024");
        assert_eq!(out.response_format, "json_schema");

        let requests = server.received_requests().await.unwrap();
        assert_eq!(requests.len(), 1);
        assert_eq!(
            requests[0].headers.get("authorization").unwrap(),
            "Bearer sk-secret"
        );
        let body: Value = requests[0].body_json().unwrap();
        assert_eq!(body["model"], "test-model");
        assert_eq!(body["response_format"]["type"], "json_schema");
        assert_eq!(body["response_format"]["json_schema"]["name"], "plan");
        let schema = &body["response_format"]["json_schema"]["schema"];
        assert_eq!(schema["properties"]["tasks"]["maxItems"], 20);
        assert_eq!(
            schema["properties"]["tasks"]["items"]["properties"]["required_skills"]["items"]["enum"],
            json!(["research", "writing"])
        );
        let messages = body["messages"].as_array().unwrap();
        assert_eq!(messages[0]["role"], "system");
        let system = messages[0]["content"].as_str().unwrap();
        assert!(system.contains("[\"research\",\"writing\"]"), "{system}");
        let user = messages[1]["content"].as_str().unwrap();
        assert!(
            user.contains("solar panels") && user.contains("\"budget\""),
            "{user}"
        );
    }

    #[tokio::test]
    async fn cycle_is_sent_back_and_repaired() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(COMPLETIONS))
            .respond_with(Sequence::new(vec![
                completion(&cyclic_plan()),
                completion(&good_plan()),
            ]))
            .mount(&server)
            .await;
        let planner = LlmPlanner::new(config(&server)).unwrap();
        let skills = skills();
        let request = PlanRequest {
            skills: &skills,
            ..PlanRequest::new("goal")
        };
        let out = planner.plan(&request, &full_validator).await.unwrap();
        assert_eq!(out.calls, 2);
        assert_eq!(out.repairs, 1);
        assert_eq!(out.prompt_tokens, 200);
        assert_eq!(out.completion_tokens, 80);

        let bodies = bodies(&server).await;
        let messages = bodies[1]["messages"].as_array().unwrap();
        assert_eq!(messages.len(), 4);
        assert_eq!(messages[2]["role"], "assistant");
        assert_eq!(messages[2]["content"], cyclic_plan());
        let repair = messages[3]["content"].as_str().unwrap();
        assert!(repair.contains("[cycle]"), "{repair}");
        assert!(repair.contains("b -> c -> b"), "{repair}");
    }

    #[tokio::test]
    async fn never_valid_gives_invalid_plan_after_all_repairs() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(COMPLETIONS))
            .respond_with(completion(&cyclic_plan()))
            .mount(&server)
            .await;
        let mut cfg = config(&server);
        cfg.max_repairs = 3;
        let planner = LlmPlanner::new(cfg).unwrap();
        let skills = skills();
        let request = PlanRequest {
            skills: &skills,
            ..PlanRequest::new("goal")
        };
        let err = planner.plan(&request, &full_validator).await.unwrap_err();
        match &err {
            LlmError::InvalidPlan { problems, attempts } => {
                assert_eq!(*attempts, 4);
                assert_eq!(problems[0].code, "cycle");
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(err.code(), "llm_invalid_plan");
        assert!(err.to_string().contains("[cycle]"), "{err}");
        assert_eq!(server.received_requests().await.unwrap().len(), 4);
        // The conversation grows by one answer and one repair request per round.
        let bodies = bodies(&server).await;
        assert_eq!(bodies[3]["messages"].as_array().unwrap().len(), 8);
    }

    #[tokio::test]
    async fn slow_server_is_retried_then_times_out() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(COMPLETIONS))
            .respond_with(completion(&good_plan()).set_delay(Duration::from_millis(1000)))
            .mount(&server)
            .await;
        let mut cfg = config(&server);
        cfg.timeout = Duration::from_millis(200);
        cfg.max_retries = 2;
        let planner = LlmPlanner::new(cfg).unwrap();
        let started = Instant::now();
        let err = planner
            .plan(&PlanRequest::new("goal"), &|_| Ok(()))
            .await
            .unwrap_err();
        assert!(
            matches!(err, LlmError::Timeout { attempts: 3, .. }),
            "{err:?}"
        );
        assert_eq!(err.code(), "llm_timeout");
        assert!(started.elapsed() < Duration::from_secs(3));
        assert_eq!(server.received_requests().await.unwrap().len(), 3);
    }

    #[tokio::test]
    async fn json_schema_rejection_falls_back_and_is_remembered() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(COMPLETIONS))
            .and(body_partial_json(
                json!({ "response_format": { "type": "json_schema" } }),
            ))
            .respond_with(ResponseTemplate::new(400).set_body_json(json!({
                "error": { "message": "response_format json_schema not supported" }
            })))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path(COMPLETIONS))
            .and(body_partial_json(
                json!({ "response_format": { "type": "json_object" } }),
            ))
            .respond_with(completion(&good_plan()))
            .mount(&server)
            .await;
        let planner = LlmPlanner::new(config(&server)).unwrap();
        assert_eq!(planner.current_response_format(), "json_schema");
        let skills = skills();
        let request = PlanRequest {
            skills: &skills,
            ..PlanRequest::new("goal")
        };
        let out = planner.plan(&request, &full_validator).await.unwrap();
        assert_eq!(out.response_format, "json_object");
        assert_eq!(out.calls, 2);

        // A clone shares what was learned, and goes straight to json_object.
        let clone = planner.clone();
        assert_eq!(clone.current_response_format(), "json_object");
        let out = clone.plan(&request, &full_validator).await.unwrap();
        assert_eq!(out.calls, 1);
        let bodies = bodies(&server).await;
        let formats: Vec<&str> = bodies
            .iter()
            .map(|b| b["response_format"]["type"].as_str().unwrap())
            .collect();
        assert_eq!(formats, ["json_schema", "json_object", "json_object"]);
        assert!(bodies[1]["response_format"]["schema"]["properties"]["tasks"].is_object());
        // The fallback retries the same conversation.
        assert_eq!(bodies[0]["messages"], bodies[1]["messages"]);
    }

    #[tokio::test]
    async fn rate_limit_honours_retry_after() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(COMPLETIONS))
            .respond_with(Sequence::new(vec![
                ResponseTemplate::new(429)
                    .insert_header("Retry-After", "1")
                    .set_body_string("slow down"),
                completion(&good_plan()),
            ]))
            .mount(&server)
            .await;
        let planner = LlmPlanner::new(config(&server)).unwrap();
        let started = Instant::now();
        let out = planner
            .plan(&PlanRequest::new("goal"), &|_| Ok(()))
            .await
            .unwrap();
        let elapsed = started.elapsed();
        assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");
        assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
        assert_eq!(out.calls, 2);
        assert_eq!(out.repairs, 0);
    }

    #[tokio::test]
    async fn fenced_content_with_prose_is_parsed() {
        let server = MockServer::start().await;
        let content = format!(
            "Sure! Here is the plan {{as requested}}:\n```json\n{}\n```\nLet me know if you need changes.",
            good_plan()
        );
        Mock::given(method("POST"))
            .and(path(COMPLETIONS))
            .respond_with(completion(&content))
            .mount(&server)
            .await;
        let planner = LlmPlanner::new(config(&server)).unwrap();
        let out = planner
            .plan(&PlanRequest::new("goal"), &full_validator)
            .await
            .unwrap();
        assert_eq!(out.plan.tasks.len(), 3);
        assert_eq!(out.calls, 1);
    }

    #[tokio::test]
    async fn nonsense_content_is_repaired_then_invalid() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(COMPLETIONS))
            .respond_with(completion(
                "I am a small model {{ banana ] \u{1F34C} tasks: yes",
            ))
            .mount(&server)
            .await;
        let planner = LlmPlanner::new(config(&server)).unwrap();
        let err = planner
            .plan(&PlanRequest::new("goal"), &full_validator)
            .await
            .unwrap_err();
        match &err {
            LlmError::InvalidPlan { problems, attempts } => {
                assert_eq!(*attempts, 3);
                assert_eq!(problems.len(), 1);
                assert_eq!(problems[0].code, codes::NOT_JSON);
            }
            other => panic!("unexpected {other:?}"),
        }
        let bodies = bodies(&server).await;
        assert_eq!(bodies.len(), 3);
        let repair = bodies[1]["messages"][3]["content"].as_str().unwrap();
        assert!(repair.contains("[not_json]"), "{repair}");
    }

    #[tokio::test]
    async fn no_auth_header_without_key_and_4xx_is_not_retried() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(COMPLETIONS))
            .respond_with(ResponseTemplate::new(401).set_body_string("bad key sk-secret"))
            .mount(&server)
            .await;
        let mut cfg = config(&server);
        cfg.response_format = ResponseFormat::JsonObject;
        let planner = LlmPlanner::new(cfg).unwrap();
        let err = planner
            .plan(&PlanRequest::new("goal"), &|_| Ok(()))
            .await
            .unwrap_err();
        assert!(matches!(err, LlmError::Http { status: 401, .. }), "{err:?}");
        assert_eq!(err.code(), "llm_http");
        let requests = server.received_requests().await.unwrap();
        assert_eq!(requests.len(), 1);
        assert!(requests[0].headers.get("authorization").is_none());
        let body: Value = requests[0].body_json().unwrap();
        assert_eq!(body["response_format"]["type"], "json_object");
    }

    #[tokio::test]
    async fn echoed_api_key_is_redacted_from_errors() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(COMPLETIONS))
            .respond_with(ResponseTemplate::new(403).set_body_string("key sk-secret refused"))
            .mount(&server)
            .await;
        let mut cfg = config(&server);
        cfg.api_key = Some("sk-secret".to_owned());
        let planner = LlmPlanner::new(cfg).unwrap();
        let err = planner
            .plan(&PlanRequest::new("goal"), &|_| Ok(()))
            .await
            .unwrap_err();
        assert!(!err.to_string().contains("sk-secret"), "{err}");
        assert!(!format!("{planner:?}").contains("sk-secret"));
    }

    #[tokio::test]
    async fn server_errors_are_retried_then_reported() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(COMPLETIONS))
            .respond_with(Sequence::new(vec![
                ResponseTemplate::new(503),
                completion(&good_plan()),
            ]))
            .mount(&server)
            .await;
        let planner = LlmPlanner::new(config(&server)).unwrap();
        let out = planner
            .plan(&PlanRequest::new("goal"), &|_| Ok(()))
            .await
            .unwrap();
        assert_eq!(out.calls, 2);

        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(COMPLETIONS))
            .respond_with(ResponseTemplate::new(500).set_body_string("boom"))
            .mount(&server)
            .await;
        let planner = LlmPlanner::new(config(&server)).unwrap();
        let err = planner
            .plan(&PlanRequest::new("goal"), &|_| Ok(()))
            .await
            .unwrap_err();
        assert!(
            matches!(err, LlmError::Http { status: 500, ref body_excerpt } if body_excerpt == "boom")
        );
        assert_eq!(server.received_requests().await.unwrap().len(), 3);
    }

    #[tokio::test]
    async fn unusable_responses_are_bad_response() {
        let oversized = "x".repeat(MAX_RESPONSE_BYTES + 10);
        for template in [
            ResponseTemplate::new(200).set_body_string("<html>proxy error</html>"),
            ResponseTemplate::new(200).set_body_json(json!({ "choices": [] })),
            ResponseTemplate::new(200)
                .set_body_json(json!({ "choices": [{ "message": { "content": null } }] })),
            ResponseTemplate::new(200).set_body_string(oversized.clone()),
        ] {
            let server = MockServer::start().await;
            Mock::given(method("POST"))
                .and(path(COMPLETIONS))
                .respond_with(template)
                .mount(&server)
                .await;
            let planner = LlmPlanner::new(config(&server)).unwrap();
            let err = planner
                .plan(&PlanRequest::new("goal"), &|_| Ok(()))
                .await
                .unwrap_err();
            assert!(matches!(err, LlmError::BadResponse(_)), "{err:?}");
            assert_eq!(err.code(), "llm_bad_response");
            assert_eq!(server.received_requests().await.unwrap().len(), 1);
        }
    }

    #[tokio::test]
    async fn unreachable_server_is_transport_error() {
        // Bind then drop a listener so the port is very likely closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut cfg = LlmConfig::new(format!("http://127.0.0.1:{port}/v1"), "m");
        cfg.max_retries = 1;
        cfg.retry_base = Duration::from_millis(1);
        let planner = LlmPlanner::new(cfg).unwrap();
        let err = planner
            .plan(&PlanRequest::new("goal"), &|_| Ok(()))
            .await
            .unwrap_err();
        assert!(matches!(err, LlmError::Transport(_)), "{err:?}");
        assert_eq!(err.code(), "llm_transport");
    }

    #[tokio::test]
    async fn truncated_answer_asks_for_a_shorter_plan() {
        let server = MockServer::start().await;
        let cut = &good_plan()[..40];
        Mock::given(method("POST"))
            .and(path(COMPLETIONS))
            .respond_with(Sequence::new(vec![
                completion_with(cut, "length"),
                completion(&good_plan()),
            ]))
            .mount(&server)
            .await;
        let planner = LlmPlanner::new(config(&server)).unwrap();
        let out = planner
            .plan(&PlanRequest::new("goal"), &|_| Ok(()))
            .await
            .unwrap();
        assert_eq!(out.repairs, 1);
        let bodies = bodies(&server).await;
        let repair = bodies[1]["messages"][3]["content"].as_str().unwrap();
        assert!(repair.starts_with("Your plan was rejected. Problems:\n- [truncated_answer]"));
    }

    #[tokio::test]
    async fn replanning_request_carries_previous_plan_and_feedback() {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(COMPLETIONS))
            .respond_with(completion(&good_plan()))
            .mount(&server)
            .await;
        let planner = LlmPlanner::new(config(&server)).unwrap();
        let previous: PlanSpec = serde_json::from_str(&good_plan()).unwrap();
        let request = PlanRequest {
            feedback: Some("Task b failed: the API was down. Task a is completed; keep it."),
            previous_plan: Some(&previous),
            ..PlanRequest::new("goal")
        };
        planner.plan(&request, &|_| Ok(())).await.unwrap();
        let bodies = bodies(&server).await;
        let user = bodies[0]["messages"][1]["content"].as_str().unwrap();
        assert!(user.contains("Current plan (JSON)") && user.contains("\"id\":\"b\""));
        assert!(user.contains("the API was down"));
    }

    #[test]
    fn parse_accepts_bare_array_and_reports_unknown_fields() {
        let bare = json!([task_json("a", &[])]).to_string();
        assert_eq!(parse_plan(&bare).unwrap().tasks[0].id, "a");

        let mut typo = task_json("a", &[]);
        typo["deps"] = json!(["b"]);
        let problems =
            parse_plan(&json!({ "tasks": [typo, 7], "notes": "x" }).to_string()).unwrap_err();
        let codes_seen: Vec<&str> = problems.iter().map(|p| p.code).collect();
        assert_eq!(
            codes_seen,
            [
                codes::UNKNOWN_FIELD,
                codes::UNKNOWN_FIELD,
                codes::INVALID_TASK
            ]
        );
        assert!(problems[1].message.contains("task #1 ('a')"));
        assert!(problems[1].message.contains("deps"));
        assert_eq!(problems[1].task_id.as_deref(), Some("a"));

        let single = task_json("a", &[]).to_string();
        let problems = parse_plan(&single).unwrap_err();
        assert_eq!(problems[0].code, codes::WRONG_SHAPE);
        assert!(problems[0].message.contains("single task"));

        for (answer, code) in [
            ("   ", codes::EMPTY_ANSWER),
            ("\"just a string\"", codes::WRONG_SHAPE),
            ("{\"tasks\": {}}", codes::WRONG_SHAPE),
            ("no json here", codes::NOT_JSON),
        ] {
            assert_eq!(parse_plan(answer).unwrap_err()[0].code, code, "{answer}");
        }
    }

    #[test]
    fn extract_json_handles_fences_prose_and_garbage() {
        let v = json!({ "tasks": [] });
        for text in [
            "{\"tasks\": []}",
            "```json\n{\"tasks\": []}\n```",
            "```\n{\"tasks\": []}",
            "Plan: {\"tasks\": []} hope this helps {",
            "{oops} and then {\"tasks\": []}",
            "[oops] and then {\"tasks\": []}",
        ] {
            assert_eq!(extract_json(text).unwrap(), v, "{text}");
        }
        assert!(extract_json("{{{{[[[[").is_err());
        assert!(extract_json(&"[".repeat(100_000)).is_err());
        assert!(extract_json(&"{\"a\":".repeat(10_000)).is_err());
        // A cut-off answer does not yield one of its inner fragments.
        assert!(extract_json("{\"tasks\":[{\"depends_on\":[],\"desc").is_err());
        assert_eq!(extract_json("Note [1]: x").unwrap(), json!([1]));
        assert!(extract_json("```").is_err());
        assert!(extract_json("é```é").is_err());
    }

    #[test]
    fn config_is_checked_and_urls_are_built() {
        let ok = LlmPlanner::new(LlmConfig::new("http://127.0.0.1:8000/v1/", "m")).unwrap();
        assert_eq!(ok.url.as_str(), "http://127.0.0.1:8000/v1/chat/completions");
        let full = LlmConfig::new("https://api.openai.com/v1/chat/completions", "m");
        assert_eq!(
            LlmPlanner::new(full).unwrap().url.as_str(),
            "https://api.openai.com/v1/chat/completions"
        );
        for cfg in [
            LlmConfig::new("not a url", "m"),
            LlmConfig::new("ftp://x/v1", "m"),
            LlmConfig::new("http://x/v1", " "),
            LlmConfig {
                timeout: Duration::ZERO,
                ..LlmConfig::new("http://x/v1", "m")
            },
            LlmConfig {
                temperature: f64::NAN,
                ..LlmConfig::new("http://x/v1", "m")
            },
        ] {
            let err = LlmPlanner::new(cfg).unwrap_err();
            assert_eq!(err.code(), "llm_config");
        }
        let cfg = LlmConfig {
            api_key: Some("sk-secret".to_owned()),
            ..LlmConfig::new("http://x/v1", "m")
        };
        assert!(!format!("{cfg:?}").contains("sk-secret"));
    }

    #[test]
    fn response_format_parses() {
        for f in [
            ResponseFormat::JsonSchema,
            ResponseFormat::JsonObject,
            ResponseFormat::Auto,
        ] {
            assert_eq!(f.as_str().parse::<ResponseFormat>().unwrap(), f);
        }
        assert!("yaml".parse::<ResponseFormat>().is_err());
        assert_eq!(ResponseFormat::default(), ResponseFormat::Auto);
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        let base = Duration::from_millis(100);
        for attempt in 1..5u32 {
            let full = base * 2u32.pow(attempt - 1);
            let d = backoff(base, attempt);
            assert!(d >= full / 2 && d <= full, "{attempt}: {d:?}");
        }
        assert!(backoff(base, u32::MAX) <= MAX_RETRY_DELAY);
        assert!(backoff(Duration::MAX, 3) <= MAX_RETRY_DELAY);
    }

    #[test]
    fn schema_is_narrowed_to_the_request() {
        let schema = plan_json_schema();
        assert_eq!(schema["required"], json!(["tasks"]));
        let request = PlanRequest {
            min_tasks: 2,
            max_tasks: 5,
            ..PlanRequest::new("g")
        };
        // Sent with task fields in writing order, not serde_json's sorted order.
        let text = serde_json::to_string(&request_schema(&request)).unwrap();
        let at = |key: &str| text.find(&format!("\"{key}\":")).unwrap();
        assert!(
            at("id") < at("title") && at("title") < at("depends_on"),
            "{text}"
        );
        assert!(at("depends_on") < at("success_criteria") && at("success_criteria") < at("inputs"));
        let narrowed: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(narrowed["properties"]["tasks"]["minItems"], 2);
        assert_eq!(narrowed["properties"]["tasks"]["maxItems"], 5);
        assert_eq!(
            narrowed["properties"]["tasks"]["items"]["properties"]["required_skills"]["maxItems"],
            0
        );
        // Every field of the schema is one TaskSpec accepts.
        let fields: Vec<&String> = schema["properties"]["tasks"]["items"]["properties"]
            .as_object()
            .unwrap()
            .keys()
            .collect();
        let mut sample = serde_json::Map::new();
        for f in fields {
            sample.insert(f.clone(), task_json("a", &[])[f].clone());
        }
        serde_json::from_value::<TaskSpec>(Value::Object(sample)).unwrap();
    }

    #[test]
    fn plan_future_is_send() {
        fn assert_send<T: Send>(_: &T) {}
        let planner = LlmPlanner::new(LlmConfig::new("http://x/v1", "m")).unwrap();
        let request = PlanRequest::new("g");
        let validate = |_: &PlanSpec| Ok(());
        let future = planner.plan(&request, &validate);
        assert_send(&future);
    }
}
