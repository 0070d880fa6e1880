//! The planner loop: ask, parse, validate, send the problems back; and the
//! planner's own call policy on top of the shared client (the one
//! `json_schema` → `json_object` fallback, and its error codes).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use coordinator_llm::{
    CallError, ChatClient, ChatMessage, ChatRequest, ClientOptions, Completion, OrderedJson,
    RetryPolicy, Usage, WireFormat, completions_url, error_chain, excerpt, truncate_bytes,
};
use tracing::Instrument;

use super::parse::{parse_plan, problem};
use super::prompts::{repair_prompt, system_prompt, user_prompt};
use super::schema::request_schema;
use super::{
    LlmConfig, LlmError, LlmPlan, MAX_RESPONSE_BYTES, MAX_RETRY_DELAY, PlanRequest, ResponseFormat,
    codes, summarize_problems,
};
use crate::planning::{spec::PlanSpec, validate::PlanProblem};

/// Longest previous answer echoed back to the model in a repair request.
const MAX_ECHOED_ANSWER_BYTES: usize = 32 * 1024;

/// Generates plans with an OpenAI-compatible chat-completions API; cheap to clone.
#[derive(Debug, Clone)]
pub struct LlmPlanner {
    pub(super) client: ChatClient,
    cfg: Arc<LlmConfig>,
    /// Set once an `Auto` server rejected `json_schema`; shared by all clones.
    json_object_only: Arc<AtomicBool>,
}

/// The answer of one call (with its retries and fallback), and the format that got it.
#[derive(Debug)]
struct CallResult {
    /// Model, finish reason and usage (its content is taken out into `content`).
    completion: Completion,
    /// The answer's text (a server that sent none fails the call).
    content: String,
    format: WireFormat,
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
        let url = completions_url(&cfg.base_url, "base_url").map_err(LlmError::Config)?;
        let options = ClientOptions {
            api_key: cfg.api_key.clone(),
            timeout: cfg.timeout,
            connect_timeout: cfg.timeout,
            max_response_bytes: MAX_RESPONSE_BYTES,
        };
        let client = ChatClient::new(url, options).map_err(|e| {
            LlmError::Config(format!("cannot build HTTP client: {}", error_chain(&e)))
        })?;
        Ok(LlmPlanner {
            client,
            cfg: Arc::new(cfg),
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
            ChatMessage::system(system_prompt(request)),
            ChatMessage::user(user_prompt(request)),
        ];
        let mut calls = 0u32;
        let mut usage = Usage::default();
        let mut round = 0u32;
        loop {
            let result = self.call(&messages, &schema, round, &mut calls).await?;
            usage.add(result.completion.usage);
            let mut problems = match check(&result.content, validate) {
                Ok(plan) => {
                    tracing::info!(
                        model = %self.cfg.model,
                        calls,
                        repairs = round,
                        prompt_tokens = usage.prompt_tokens,
                        completion_tokens = usage.completion_tokens,
                        "LLM plan accepted"
                    );
                    return Ok(LlmPlan {
                        plan,
                        model: result
                            .completion
                            .model
                            .unwrap_or_else(|| self.cfg.model.clone()),
                        prompt_tokens: usage.prompt_tokens,
                        completion_tokens: usage.completion_tokens,
                        latency_ms: millis(started.elapsed()),
                        calls,
                        repairs: round,
                        response_format: result.format.as_str(),
                    });
                }
                Err(problems) => problems,
            };
            if result.completion.truncated() {
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
            messages.push(ChatMessage::assistant(truncate_bytes(
                &result.content,
                MAX_ECHOED_ANSWER_BYTES,
            )));
            messages.push(ChatMessage::user(repair_prompt(&problems)));
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

    /// One chat completion, with retries and at most one `json_schema` →
    /// `json_object` fallback. The request the server refused for its format
    /// does not count against the retries; `calls` counts every request sent.
    async fn call(
        &self,
        messages: &[ChatMessage],
        schema: &OrderedJson,
        round: u32,
        calls: &mut u32,
    ) -> Result<CallResult, LlmError> {
        let mut format = self.initial_format();
        let mut fell_back = false;
        // Attempts that count against the retries, before a fallback.
        let mut spent = 0u32;
        loop {
            let can_fall_back = self.cfg.response_format == ResponseFormat::Auto
                && format == WireFormat::JsonSchema
                && !fell_back;
            let response_format = format.body("plan", schema);
            let body = ChatRequest {
                model: &self.cfg.model,
                messages,
                temperature: self.cfg.temperature,
                max_tokens: self.cfg.max_tokens,
                response_format: Some(&response_format),
                tools: None,
                tool_choice: None,
            };
            let policy = RetryPolicy {
                max_retries: self.cfg.max_retries.saturating_sub(spent),
                base: self.cfg.retry_base,
                max_delay: MAX_RETRY_DELAY,
            };
            let span = tracing::info_span!("llm_round", round, format = format.as_str());
            let call = self
                .client
                .complete(&body, &policy, |e| {
                    can_fall_back && e.rejects_response_format()
                })
                .instrument(span)
                .await;
            *calls = calls.saturating_add(call.attempts);
            let err = match call.result {
                Ok(completion) => return into_result(completion, format),
                Err(err) => err,
            };
            if can_fall_back && err.rejects_response_format() {
                // Remembered for every clone, so later calls skip the doomed request.
                self.json_object_only.store(true, Ordering::Relaxed);
                format = WireFormat::JsonObject;
                fell_back = true;
                spent = spent.saturating_add(call.attempts.saturating_sub(1));
                tracing::info!(
                    model = %self.cfg.model,
                    error = %err,
                    "server rejected json_schema; using json_object from now on"
                );
                continue;
            }
            return Err(self.final_error(err, spent.saturating_add(call.attempts)));
        }
    }

    /// Turns the last failed attempt into the error the caller sees.
    fn final_error(&self, err: CallError, attempts: u32) -> LlmError {
        match err {
            CallError::Timeout(_) => LlmError::Timeout {
                attempts,
                timeout: self.cfg.timeout,
            },
            CallError::Transport(message) => LlmError::Transport(message),
            CallError::BadResponse(message) => LlmError::BadResponse(message),
            CallError::Status { status, body, .. } => LlmError::Http {
                status: status.as_u16(),
                body_excerpt: excerpt(&body),
            },
        }
    }
}

/// A completion with text, or the bad response a textless one is to the planner.
fn into_result(mut completion: Completion, format: WireFormat) -> Result<CallResult, LlmError> {
    match completion.content.take() {
        Some(content) => Ok(CallResult {
            completion,
            content,
            format,
        }),
        None => Err(LlmError::BadResponse(
            "choices[0].message.content is missing or null".to_owned(),
        )),
    }
}

/// The answer parsed and validated, or every problem with it.
fn check(
    content: &str,
    validate: &(dyn Fn(&PlanSpec) -> Result<(), Vec<PlanProblem>> + Sync),
) -> Result<PlanSpec, Vec<PlanProblem>> {
    parse_plan(content).and_then(|plan| match validate(&plan) {
        Ok(()) => Ok(plan),
        Err(problems) if problems.is_empty() => Err(vec![problem(
            codes::REJECTED,
            "the plan was rejected without a reason".to_owned(),
            None,
        )]),
        Err(problems) => Err(problems),
    })
}

/// Milliseconds, saturating instead of truncating absurd durations.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
