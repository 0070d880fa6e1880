//! The planner loop: ask, parse, validate, send the problems back; and the
//! planner's own call policy on top of the shared client (the one
//! `json_schema` → `json_object` fallback, the one smaller retry after a
//! context-length error, and its error codes).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use coordinator_llm::{
    CallError, ChatClient, ChatRequest, ClientOptions, Completion, OrderedJson, RetryPolicy, Usage,
    WireFormat, completions_url,
    context::{context_limit_in, is_context_error},
    error_chain, excerpt,
};
use tracing::Instrument;

use super::fit::{Conversation, MIN_PLAN_TOKENS};
use super::parse::{parse_plan, problem};
use super::prompts::repair_prompt;
use super::schema::request_schema;
use super::{
    LlmConfig, LlmError, LlmPlan, MAX_RESPONSE_BYTES, MAX_RETRY_DELAY, PlanRequest, ResponseFormat,
    codes, summarize_problems,
};
use crate::planning::{spec::PlanSpec, validate::PlanProblem};

/// Generates plans with an OpenAI-compatible chat-completions API; cheap to clone.
#[derive(Debug, Clone)]
pub struct LlmPlanner {
    pub(super) client: ChatClient,
    cfg: Arc<LlmConfig>,
    /// Set once an `Auto` server rejected `json_schema`; shared by all clones.
    json_object_only: Arc<AtomicBool>,
    /// The context size a context-length error named (0: none yet); shared
    /// by all clones.
    named_context: Arc<AtomicU32>,
    /// The context size the server reported when asked (0: it did not).
    reported_context: Arc<AtomicU32>,
    /// Whether the server was already asked for its context size.
    probed: Arc<AtomicBool>,
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
            named_context: Arc::new(AtomicU32::new(0)),
            reported_context: Arc::new(AtomicU32::new(0)),
            probed: Arc::new(AtomicBool::new(false)),
        })
    }

    /// The configuration this planner was built with.
    pub fn config(&self) -> &LlmConfig {
        &self.cfg
    }

    /// The context size requests are fitted to: what a server's error named,
    /// else the configured size, else what the server reported; `None`
    /// when none is known yet.
    pub fn context_tokens(&self) -> Option<u32> {
        let known = |n: u32| (n > 0).then_some(n);
        // The server's own refusal beats the setting, which beats its report.
        known(self.named_context.load(Ordering::Relaxed))
            .or(self.cfg.context_tokens)
            .or_else(|| known(self.reported_context.load(Ordering::Relaxed)))
    }

    /// Asks the server for its context size once, when none is configured.
    async fn learn_context(&self) {
        if self.cfg.context_tokens.is_some() || self.probed.swap(true, Ordering::Relaxed) {
            return;
        }
        if let Some(n) = self.client.discover_context(&self.cfg.model).await {
            tracing::info!(model = %self.cfg.model, context_tokens = n, "the LLM server reported its context size");
            self.reported_context.store(n, Ordering::Relaxed);
        }
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
        self.learn_context().await;
        let schema = request_schema(request);
        let mut convo = Conversation::new(request);
        let mut calls = 0u32;
        let mut usage = Usage::default();
        let mut round = 0u32;
        loop {
            let result = self.call(&convo, &schema, round, &mut calls).await?;
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
            convo.rejected(&result.content, repair_prompt(&problems));
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

    /// One chat completion, with retries, at most one `json_schema` →
    /// `json_object` fallback and at most one smaller request after the
    /// server said the request does not fit its context. The requests the
    /// server refused for their format or size do not count against the
    /// retries; `calls` counts every request sent.
    async fn call(
        &self,
        convo: &Conversation<'_>,
        schema: &OrderedJson,
        round: u32,
        calls: &mut u32,
    ) -> Result<CallResult, LlmError> {
        let mut format = self.initial_format();
        let mut fell_back = false;
        let mut shrunk = false;
        // Attempts that count against the retries, before a fallback.
        let mut spent = 0u32;
        loop {
            let can_fall_back = self.cfg.response_format == ResponseFormat::Auto
                && format == WireFormat::JsonSchema
                && !fell_back;
            let response_format = format.body("plan", schema);
            let fitted = convo.fit(self.context_tokens(), self.cfg.max_tokens, shrunk);
            tracing::debug!(
                prompt_estimate = fitted.prompt_estimate,
                max_tokens = ?fitted.max_tokens,
                methods = fitted.shape.methods,
                rounds = fitted.shape.rounds,
                echo_bytes = fitted.shape.echo_bytes,
                "planning request fitted to the context"
            );
            let body = ChatRequest {
                model: &self.cfg.model,
                messages: &fitted.messages,
                temperature: self.cfg.temperature,
                max_tokens: fitted.max_tokens,
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
                    is_context_error(e) || (can_fall_back && e.rejects_response_format())
                })
                .instrument(span)
                .await;
            *calls = calls.saturating_add(call.attempts);
            let err = match call.result {
                Ok(completion) => return into_result(completion, format),
                Err(err) => err,
            };
            if is_context_error(&err) {
                let asked = fitted
                    .prompt_estimate
                    .saturating_add(fitted.max_tokens.unwrap_or(MIN_PLAN_TOKENS));
                if shrunk {
                    return Err(LlmError::ContextExceeded {
                        limit: self.context_tokens(),
                        prompt_estimate: fitted.prompt_estimate,
                        body_excerpt: error_excerpt(&err),
                    });
                }
                self.learn_context_from(&err, asked);
                shrunk = true;
                spent = spent.saturating_add(call.attempts.saturating_sub(1));
                continue;
            }
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

    /// Remembers the context size a context-length error names; when it
    /// names none, assumes three quarters of the known size, or of what was
    /// `asked` (prompt estimate plus answer cap), so the retry is smaller.
    fn learn_context_from(&self, err: &CallError, asked: u32) {
        let named = match err {
            CallError::Status { body, .. } => context_limit_in(body),
            _ => None,
        };
        let limit = named.unwrap_or_else(|| {
            let base = self.context_tokens().unwrap_or(asked).min(asked);
            (base / 4).saturating_mul(3).max(MIN_PLAN_TOKENS)
        });
        self.named_context.store(limit, Ordering::Relaxed);
        tracing::warn!(
            model = %self.cfg.model,
            context_tokens = limit,
            named = named.is_some(),
            error = %err,
            "the request did not fit the model's context; retrying once smaller"
        );
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

/// The start of a failed call's error body (or its message).
fn error_excerpt(err: &CallError) -> String {
    match err {
        CallError::Status { body, .. } => excerpt(body),
        other => other.to_string(),
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
