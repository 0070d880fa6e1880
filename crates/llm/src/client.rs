//! [`ChatClient`]: one chat-completions call within a per-call timeout, its
//! body read up to a cap, and retries with backoff and jitter that honour
//! `Retry-After`.

use std::{
    fmt,
    hash::BuildHasher,
    sync::Arc,
    time::{Duration, Instant},
};

use tracing::Instrument;

use crate::{
    context::{context_from_models, context_from_props},
    error::{CallError, REDACTED},
    retry_after,
    wire::{ChatRequest, Completion, parse_completion},
};

/// Longest wait for a server's report of its context size.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Largest report of a server's context size read (llama.cpp's `/props`
/// holds its chat template, a few kilobytes).
const PROBE_MAX_BYTES: usize = 256 * 1024;

/// How a [`ChatClient`] reaches its server and bounds each call.
#[derive(Clone)]
pub struct ClientOptions {
    /// Bearer token; no `Authorization` header is sent when it is `None` or blank.
    pub api_key: Option<String>,
    /// Limit for one call, from sending the request to reading the whole body.
    pub timeout: Duration,
    /// Limit for opening a connection.
    pub connect_timeout: Duration,
    /// Largest response body read; a larger one is a failed call, not buffered.
    pub max_response_bytes: usize,
}

impl fmt::Debug for ClientOptions {
    // Hand-written so the API key never reaches a log line through `{:?}`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientOptions")
            .field("api_key", &redacted(&self.api_key))
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish()
    }
}

/// `[redacted]` for a set key, for hand-written `Debug` impls of configs.
pub fn redacted(key: &Option<String>) -> Option<&'static str> {
    key.as_ref().map(|_| REDACTED)
}

/// Retries of one call: how many, and how long to wait between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Extra attempts after a timeout, transport error, 429 or 5xx.
    pub max_retries: u32,
    /// First backoff delay; doubles on each retry (with jitter).
    pub base: Duration,
    /// Longest wait between attempts, computed or asked for by `Retry-After`.
    pub max_delay: Duration,
}

/// One call's outcome, and how many HTTP requests it took.
#[derive(Debug)]
pub struct Call {
    /// The completion, or why the last attempt failed.
    pub result: Result<Completion, CallError>,
    /// HTTP requests sent, retries included.
    pub attempts: u32,
}

/// A chat-completions client for one endpoint; cheap to clone.
#[derive(Debug, Clone)]
pub struct ChatClient {
    http: reqwest::Client,
    url: reqwest::Url,
    options: Arc<ClientOptions>,
}

impl ChatClient {
    /// A client posting to `url` (see [`completions_url`]).
    pub fn new(url: reqwest::Url, options: ClientOptions) -> Result<Self, reqwest::Error> {
        // No client-wide timeout: each call is bounded as a whole, body included.
        let http = reqwest::Client::builder()
            .connect_timeout(options.connect_timeout)
            .build()?;
        Ok(ChatClient {
            http,
            url,
            options: Arc::new(options),
        })
    }

    /// The chat-completions URL it posts to.
    pub fn url(&self) -> &reqwest::Url {
        &self.url
    }

    /// The API key, when one is set and not blank.
    pub fn key(&self) -> Option<&str> {
        self.options
            .api_key
            .as_deref()
            .filter(|k| !k.trim().is_empty())
    }

    /// The context size the server reports for `model`, asked once with a
    /// short limit: llama.cpp's `GET /props`, then `GET /v1/models` (vLLM's
    /// `max_model_len`). `None` when neither says (llama-cpp-python, OpenAI)
    /// or the server cannot be asked; the caller then learns the size from
    /// a context-length error.
    pub async fn discover_context(&self, model: &str) -> Option<u32> {
        let base = self.url.as_str().trim_end_matches("/chat/completions");
        let root = base.trim_end_matches('/').trim_end_matches("/v1");
        if let Some(props) = self.get_json(&format!("{root}/props")).await
            && let Some(n) = context_from_props(&props)
        {
            return Some(n);
        }
        let models = self.get_json(&format!("{base}/models")).await?;
        context_from_models(&models, model)
    }

    /// A small JSON document from the server (its key sent), or `None` on any
    /// failure: a probe must never fail the call it serves.
    async fn get_json(&self, url: &str) -> Option<serde_json::Value> {
        let limit = self.options.timeout.min(PROBE_TIMEOUT);
        let probe = async {
            let mut builder = self.http.get(url);
            if let Some(key) = self.key() {
                builder = builder.bearer_auth(key);
            }
            let mut response = builder.send().await.ok()?;
            if !response.status().is_success() {
                return None;
            }
            let (bytes, complete) = read_capped(&mut response, PROBE_MAX_BYTES, limit)
                .await
                .ok()?;
            complete.then(|| serde_json::from_slice(&bytes).ok())?
        };
        tokio::time::timeout(limit, probe).await.ok()?
    }

    /// Sends one request and reads the reply, all within the per-call timeout;
    /// no retries.
    pub async fn send(&self, body: &ChatRequest<'_>) -> Result<Completion, CallError> {
        let limit = self.options.timeout;
        let cap = self.options.max_response_bytes;
        let exchange = async {
            let mut builder = self.http.post(self.url.clone()).json(body);
            if let Some(key) = self.key() {
                // bearer_auth marks the header sensitive, so reqwest never prints it.
                builder = builder.bearer_auth(key);
            }
            let mut response = builder
                .send()
                .await
                .map_err(|e| CallError::from_reqwest(&e, limit))?;
            let status = response.status();
            let retry_after = retry_after::from_headers(response.headers());
            let (bytes, complete) = read_capped(&mut response, cap, limit).await?;
            if !status.is_success() {
                return Err(CallError::Status {
                    status,
                    retry_after,
                    body: String::from_utf8_lossy(&bytes).into_owned(),
                });
            }
            if !complete {
                return Err(CallError::BadResponse(format!(
                    "response body is larger than {cap} bytes"
                )));
            }
            parse_completion(&bytes).map_err(CallError::BadResponse)
        };
        let outcome = match tokio::time::timeout(limit, exchange).await {
            Ok(outcome) => outcome,
            Err(_) => Err(CallError::Timeout(limit)),
        };
        outcome.map_err(|e| e.redacted(self.key()))
    }

    /// Sends `body` until it succeeds, fails for good, `give_up` says to stop
    /// (checked first, on every failure), or `policy` allows no more retries.
    /// A `Retry-After` is honoured up to the policy's longest wait.
    pub async fn complete(
        &self,
        body: &ChatRequest<'_>,
        policy: &RetryPolicy,
        give_up: impl Fn(&CallError) -> bool,
    ) -> Call {
        let mut attempt = 0u32;
        loop {
            attempt = attempt.saturating_add(1);
            let span = tracing::info_span!("llm_call", model = %body.model, attempt);
            let started = Instant::now();
            let outcome = self.send(body).instrument(span.clone()).await;
            let latency_ms = millis(started.elapsed());
            let err = match outcome {
                Ok(completion) => {
                    span.in_scope(|| tracing::debug!(latency_ms, "LLM call ok"));
                    return Call {
                        result: Ok(completion),
                        attempts: attempt,
                    };
                }
                Err(err) => err,
            };
            span.in_scope(|| tracing::warn!(latency_ms, error = %err, "LLM call failed"));
            if give_up(&err) || !err.is_retryable() || attempt > policy.max_retries {
                return Call {
                    result: Err(err),
                    attempts: attempt,
                };
            }
            let delay = match err.retry_after() {
                Some(wait) => wait.min(policy.max_delay),
                None => backoff(policy.base, attempt, policy.max_delay),
            };
            tracing::info!(
                model = %body.model,
                attempt,
                delay_ms = millis(delay),
                "retrying LLM call"
            );
            tokio::time::sleep(delay).await;
        }
    }
}

/// `{base_url}/chat/completions`, accepting a base URL that already ends in
/// it; errors name the setting (`setting`) the URL came from.
pub fn completions_url(base_url: &str, setting: &str) -> Result<reqwest::Url, String> {
    let base = base_url.trim().trim_end_matches('/');
    let full = if base.ends_with("/chat/completions") {
        base.to_owned()
    } else {
        format!("{base}/chat/completions")
    };
    let url = reqwest::Url::parse(&full)
        .map_err(|e| format!("{setting} '{base_url}' is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("{setting} '{base_url}' must use http or https"));
    }
    Ok(url)
}

/// Exponential backoff for retry number `attempt` (1-based), with jitter in
/// [d/2, d], capped at `max`.
pub fn backoff(base: Duration, attempt: u32, max: Duration) -> Duration {
    let factor = 1u32
        .checked_shl(attempt.saturating_sub(1))
        .unwrap_or(u32::MAX);
    let full = base.saturating_mul(factor).min(max);
    // Jitter keeps many clients that failed together from retrying in lockstep.
    let half = full / 2;
    let span = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX).max(1);
    let random = std::collections::hash_map::RandomState::new().hash_one(Instant::now());
    half + Duration::from_nanos(random % span)
}

/// Reads at most `cap` bytes of the body; the flag says whether the body ended within the cap.
async fn read_capped(
    response: &mut reqwest::Response,
    cap: usize,
    limit: Duration,
) -> Result<(Vec<u8>, bool), CallError> {
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| CallError::from_reqwest(&e, limit))?
    {
        let room = cap.saturating_sub(bytes.len());
        if chunk.len() > room {
            bytes.extend_from_slice(&chunk[..room]);
            return Ok((bytes, false));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok((bytes, true))
}

/// Milliseconds, saturating instead of truncating absurd durations.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
#[path = "client_tests.rs"]
mod tests;
