//! Why a call produced no completion, and the text helpers that keep error
//! messages short, on one line and free of the API key.

use std::{fmt, time::Duration};

use reqwest::StatusCode;

use crate::format::rejects_response_format;

/// Longest part of an error body kept in a message.
pub const BODY_EXCERPT_CHARS: usize = 500;

/// What replaces the API key wherever a server echoes it back.
pub const REDACTED: &str = "[redacted]";

/// Why one call produced no completion. Every text in it has the API key
/// removed.
#[derive(Debug, Clone, PartialEq)]
pub enum CallError {
    /// No complete answer within the per-call limit.
    Timeout(Duration),
    /// The server could not be reached or the connection broke (the error and its causes).
    Transport(String),
    /// The server answered with an error status.
    Status {
        /// The status.
        status: StatusCode,
        /// How long the server asked to wait (its `Retry-After`), uncapped.
        retry_after: Option<Duration>,
        /// The body as text, up to the client's size cap.
        body: String,
    },
    /// The server answered 2xx but not with a usable chat completion.
    BadResponse(String),
}

impl CallError {
    /// Classifies a reqwest error; `limit` is the per-call timeout it ran under.
    pub fn from_reqwest(err: &reqwest::Error, limit: Duration) -> Self {
        if err.is_timeout() {
            CallError::Timeout(limit)
        } else {
            CallError::Transport(error_chain(err))
        }
    }

    /// What the server asked to wait before trying again, if it said.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            CallError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }

    /// Whether trying the same request again may help: timeouts, transport
    /// errors, 429 and 5xx.
    pub fn is_retryable(&self) -> bool {
        match self {
            CallError::Timeout(_) | CallError::Transport(_) => true,
            CallError::Status { status, .. } => {
                *status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error()
            }
            CallError::BadResponse(_) => false,
        }
    }

    /// Whether the server refused the request's `response_format`.
    pub fn rejects_response_format(&self) -> bool {
        match self {
            CallError::Status { status, body, .. } => {
                rejects_response_format(status.as_u16(), body)
            }
            _ => false,
        }
    }

    /// Whether the server refused the request for its `tools` or
    /// `tool_choice` (a model or server without function calling): a 400,
    /// 404, 422 or 501 whose body speaks of tools or functions.
    pub fn rejects_tools(&self) -> bool {
        match self {
            CallError::Status { status, body, .. } => {
                matches!(status.as_u16(), 400 | 404 | 422 | 501) && {
                    let body = body.to_ascii_lowercase();
                    body.contains("tool") || body.contains("function")
                }
            }
            _ => false,
        }
    }

    /// The same error with `key` removed from every text in it.
    pub fn redacted(self, key: Option<&str>) -> Self {
        match self {
            CallError::Transport(why) => CallError::Transport(redact(&why, key)),
            CallError::Status {
                status,
                retry_after,
                body,
            } => CallError::Status {
                status,
                retry_after,
                body: redact(&body, key),
            },
            CallError::BadResponse(why) => CallError::BadResponse(redact(&why, key)),
            timeout @ CallError::Timeout(_) => timeout,
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
                body,
            } => {
                write!(f, "LLM provider answered HTTP {status}")?;
                if let Some(wait) = retry_after {
                    write!(f, " (Retry-After: {} s)", wait.as_secs())?;
                }
                let excerpt = excerpt(body);
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

impl std::error::Error for CallError {}

/// `error: cause: cause …`, because "error sending request" alone does not say why.
pub fn error_chain(err: &dyn std::error::Error) -> String {
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

/// The start of an error body, on one line, at most [`BODY_EXCERPT_CHARS`]
/// characters (and `…` when cut).
pub fn excerpt(body: &str) -> String {
    let flat = body.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut text: String = flat.chars().take(BODY_EXCERPT_CHARS).collect();
    if flat.chars().nth(BODY_EXCERPT_CHARS).is_some() {
        text.push('…');
    }
    text
}

/// `text` with the API key replaced by [`REDACTED`], should a server echo it back.
pub fn redact(text: &str, key: Option<&str>) -> String {
    match key.filter(|k| !k.trim().is_empty()) {
        Some(key) => text.replace(key, REDACTED),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_are_one_line_and_bounded() {
        assert_eq!(excerpt("  a\n\tb  "), "a b");
        let long = "x".repeat(BODY_EXCERPT_CHARS + 1);
        let cut = excerpt(&long);
        assert_eq!(cut.chars().count(), BODY_EXCERPT_CHARS + 1);
        assert!(cut.ends_with('…'));
        assert_eq!(
            excerpt(&"é".repeat(BODY_EXCERPT_CHARS)).chars().count(),
            500
        );
    }

    #[test]
    fn keys_are_redacted_everywhere_and_blank_keys_ignored() {
        let err = CallError::Status {
            status: StatusCode::BAD_REQUEST,
            retry_after: None,
            body: "bad key sk-1 here".into(),
        }
        .redacted(Some("sk-1"));
        let text = err.to_string();
        assert!(!text.contains("sk-1") && text.contains(REDACTED), "{text}");
        assert_eq!(redact("a b", Some(" ")), "a b");
        assert_eq!(
            CallError::Transport("x sk-1".into()).redacted(Some("sk-1")),
            CallError::Transport(format!("x {REDACTED}"))
        );
    }

    #[test]
    fn statuses_say_retry_after_and_which_are_retried() {
        let limited = CallError::Status {
            status: StatusCode::TOO_MANY_REQUESTS,
            retry_after: Some(Duration::from_secs(7)),
            body: "slow down".into(),
        };
        assert_eq!(
            limited.to_string(),
            "LLM provider answered HTTP 429 Too Many Requests (Retry-After: 7 s): slow down"
        );
        assert!(limited.is_retryable());
        assert_eq!(limited.retry_after(), Some(Duration::from_secs(7)));
        let bad = CallError::Status {
            status: StatusCode::UNAUTHORIZED,
            retry_after: None,
            body: String::new(),
        };
        assert!(!bad.is_retryable());
        assert_eq!(
            bad.to_string(),
            "LLM provider answered HTTP 401 Unauthorized"
        );
        assert!(CallError::Timeout(Duration::from_secs(1)).is_retryable());
        assert!(!CallError::BadResponse("x".into()).is_retryable());
    }

    #[test]
    fn a_refusal_of_tools_is_recognised() {
        let refusal = |status: u16, body: &str| CallError::Status {
            status: StatusCode::from_u16(status).unwrap(),
            retry_after: None,
            body: body.into(),
        };
        assert!(refusal(400, "{\"error\": \"This model does not support Tools\"}").rejects_tools());
        assert!(refusal(422, "unknown field `tool_choice`").rejects_tools());
        assert!(!refusal(400, "bad model name").rejects_tools());
        assert!(!refusal(500, "tool crashed").rejects_tools());
        assert!(!CallError::Transport("tools".into()).rejects_tools());
    }
}
