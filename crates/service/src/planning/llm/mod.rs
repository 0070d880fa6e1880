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
//!
//! The HTTP side (timeouts, retries honouring `Retry-After`, capped bodies,
//! key redaction, usage) is the shared `coordinator-llm` client; this module
//! keeps what is the planner's own, one phase per file:
//! - [`prompts`](self::prompts): the system, user and repair prompts;
//! - [`fit`](self::fit): the conversation sized to the model's context
//!   (fewer example methods, older rounds and a shorter echo of the last
//!   answer when it does not fit, and the answer cap that is left);
//! - [`schema`](self::schema): the plan's JSON Schema, narrowed to a request;
//! - [`parse`](self::parse): the answer → [`PlanSpec`], or its problems;
//! - [`planner`](self::planner): the repair loop and the `json_schema` →
//!   `json_object` fallback.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::spec::PlanSpec;
use super::validate::PlanProblem;

mod fit;
mod parse;
mod planner;
mod prompts;
mod schema;
#[cfg(test)]
mod tests;

pub use planner::LlmPlanner;
pub use schema::plan_json_schema;

/// Largest response body read from the server; larger bodies are rejected, not buffered.
pub const MAX_RESPONSE_BYTES: usize = 1 << 20;

/// Longest wait honoured from a `Retry-After` header, and longest computed backoff.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(30);

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
    /// The cap actually sent is lowered to what the context leaves after the prompt.
    pub max_tokens: Option<u32>,
    /// The model's context size in tokens, when known; `None`: asked of the
    /// server (llama.cpp's `/props`, vLLM's `/v1/models`) or learnt from its
    /// first context-length error.
    pub context_tokens: Option<u32>,
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
            context_tokens: None,
        }
    }
}

impl fmt::Debug for LlmConfig {
    // Hand-written so the API key never reaches a log line through `{:?}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmConfig")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &coordinator_llm::redacted(&self.api_key))
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("retry_base", &self.retry_base)
            .field("max_repairs", &self.max_repairs)
            .field("response_format", &self.response_format)
            .field("temperature", &self.temperature)
            .field("max_tokens", &self.max_tokens)
            .field("context_tokens", &self.context_tokens)
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
    /// The coordinator's methods closest to the goal, best first, shown as
    /// examples; fewer are sent when the context is small.
    pub methods: &'a [MethodHint],
}

/// One method shown to the model as an example of a plan's shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MethodHint {
    /// The method's name.
    pub name: String,
    /// Its tasks on one line: ids, titles and what each comes after.
    pub outline: String,
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
            methods: &[],
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
    /// The request did not fit the model's context even after one smaller retry.
    #[error(
        "the request does not fit the model's context{} even with fewer methods and a smaller answer (prompt about {prompt_estimate} tokens): {body_excerpt}",
        limit.map(|n| format!(" of {n} tokens")).unwrap_or_default()
    )]
    ContextExceeded {
        /// The context size, when known.
        limit: Option<u32>,
        /// The estimated prompt tokens of the last request.
        prompt_estimate: u32,
        /// Start of the server's error, with the API key removed.
        body_excerpt: String,
    },
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
            LlmError::ContextExceeded { .. } => "llm_context_exceeded",
            LlmError::BadResponse(_) => "llm_bad_response",
            LlmError::InvalidPlan { .. } => "llm_invalid_plan",
        }
    }

    /// Whether the model itself cannot give a plan (nonsense, no valid plan,
    /// a request that does not fit it), so planning falls back to the
    /// generic method; other errors are the server's and may pass.
    pub fn is_model_failure(&self) -> bool {
        matches!(
            self,
            LlmError::InvalidPlan { .. }
                | LlmError::ContextExceeded { .. }
                | LlmError::BadResponse(_)
        )
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
