//! The one error type HTTP handlers return, and its JSON body.
//!
//! Every error reaches the client as `{"error": {"code", "message", "details"}}`
//! with a stable `code`. Unexpected errors are logged once, here, and the
//! client sees only a generic message.

use axum::{
    Json,
    http::{HeaderValue, StatusCode, header},
    response::{IntoResponse, Response},
};
use serde_json::{Value, json};

use crate::domain::{IllegalTransition, UnknownValue};

/// An error answered to an API client.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: the request cannot be understood.
    #[error("{message}")]
    BadRequest {
        /// Stable machine-readable code.
        code: &'static str,
        /// What is wrong, for a person.
        message: String,
        /// Structured detail (field names, problems…).
        details: Value,
    },
    /// 401: no valid credentials.
    #[error("{0}")]
    Unauthorized(String),
    /// 403: valid credentials, not allowed.
    #[error("{0}")]
    Forbidden(String),
    /// 404: no such thing (in this workspace).
    #[error("{0}")]
    NotFound(String),
    /// 409: the state does not allow it, or someone else got there first.
    #[error("{message}")]
    Conflict {
        /// Stable machine-readable code.
        code: &'static str,
        /// What is in the way.
        message: String,
        /// Structured detail.
        details: Value,
    },
    /// 413: the body is too large.
    #[error("{0}")]
    PayloadTooLarge(String),
    /// 415: the body is not sent as JSON (missing or other `Content-Type`).
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// 422: well-formed but invalid (e.g. a plan that fails validation).
    #[error("{message}")]
    Unprocessable {
        /// Stable machine-readable code.
        code: &'static str,
        /// Summary for a person.
        message: String,
        /// Every problem found.
        details: Value,
    },
    /// 429: this credential sent too many requests; retry after the wait.
    #[error("too many requests; retry after {retry_after_secs} s")]
    RateLimited {
        /// Whole seconds to wait (the `Retry-After` header), at least 1.
        retry_after_secs: u64,
    },
    /// 503: a dependency (the database) is unavailable.
    #[error("{0}")]
    Unavailable(String),
    /// 500: a bug or an unexpected failure.
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

impl ApiError {
    /// A 400 with `invalid_request` and the offending field named.
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        ApiError::BadRequest {
            code: "invalid_request",
            message: message.into(),
            details: json!({ "field": field }),
        }
    }

    /// A 409 for a state that does not allow the operation.
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        ApiError::Conflict {
            code,
            message: message.into(),
            details: Value::Null,
        }
    }

    fn parts(&self) -> (StatusCode, &'static str, Value) {
        match self {
            ApiError::BadRequest { code, details, .. } => {
                (StatusCode::BAD_REQUEST, code, details.clone())
            }
            ApiError::Unauthorized(_) => (StatusCode::UNAUTHORIZED, "unauthorized", Value::Null),
            ApiError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden", Value::Null),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found", Value::Null),
            ApiError::Conflict { code, details, .. } => {
                (StatusCode::CONFLICT, code, details.clone())
            }
            ApiError::PayloadTooLarge(_) => (
                StatusCode::PAYLOAD_TOO_LARGE,
                "payload_too_large",
                Value::Null,
            ),
            ApiError::UnsupportedMediaType(_) => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "unsupported_media_type",
                Value::Null,
            ),
            ApiError::Unprocessable { code, details, .. } => {
                (StatusCode::UNPROCESSABLE_ENTITY, code, details.clone())
            }
            ApiError::RateLimited { retry_after_secs } => (
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limited",
                json!({ "retry_after_secs": retry_after_secs }),
            ),
            ApiError::Unavailable(_) => {
                (StatusCode::SERVICE_UNAVAILABLE, "unavailable", Value::Null)
            }
            ApiError::Unexpected(_) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal_error",
                Value::Null,
            ),
        }
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> Self {
        match &e {
            // The server going away under a statement (shut down, crashed,
            // failing over, out of connections, or a standby refusing a
            // write before the pool moves on): nothing the caller did.
            _ if crate::db::unavailable(&e) => {
                tracing::warn!(error = %e, "database unavailable");
                ApiError::Unavailable("the database is unavailable; try again shortly".into())
            }
            // PostgreSQL refuses NUL characters in text (22021) and `\u0000` in
            // jsonb (22P05); only user input carries them. The request is
            // well-formed JSON the document allows, but cannot be stored: 422.
            sqlx::Error::Database(db)
                if matches!(db.code().as_deref(), Some("22021" | "22P05")) =>
            {
                ApiError::Unprocessable {
                    code: "unstorable_value",
                    message: "text must not contain NUL characters (\\u0000)".into(),
                    details: Value::Null,
                }
            }
            _ => ApiError::Unexpected(e.into()),
        }
    }
}

impl From<IllegalTransition> for ApiError {
    fn from(e: IllegalTransition) -> Self {
        ApiError::Conflict {
            code: "invalid_state",
            message: e.to_string(),
            details: json!({ "entity": e.entity, "status": e.from }),
        }
    }
}

impl From<coordinator_core::invalid::Invalid> for ApiError {
    fn from(e: coordinator_core::invalid::Invalid) -> Self {
        match e.unprocessable {
            Some(code) => ApiError::Unprocessable {
                code,
                message: e.message,
                details: json!({ "field": e.field }),
            },
            None => ApiError::BadRequest {
                code: "invalid_request",
                message: e.message,
                details: json!({ "field": e.field }),
            },
        }
    }
}

impl From<crate::auth::AuthError> for ApiError {
    fn from(e: crate::auth::AuthError) -> Self {
        match e {
            crate::auth::AuthError::Unauthorized(message) => ApiError::Unauthorized(message),
            crate::auth::AuthError::StaleAttempt {
                attempt_id,
                ref status,
            } => ApiError::Conflict {
                code: "stale_attempt",
                message: e.to_string(),
                details: json!({ "attempt_id": attempt_id, "attempt_status": status }),
            },
            crate::auth::AuthError::Database(e) => e.into(),
            crate::auth::AuthError::Unexpected(e) => ApiError::Unexpected(e),
        }
    }
}

impl From<crate::auth::Forbidden> for ApiError {
    fn from(e: crate::auth::Forbidden) -> Self {
        ApiError::Forbidden(e.0)
    }
}

impl From<UnknownValue> for ApiError {
    fn from(e: UnknownValue) -> Self {
        ApiError::BadRequest {
            code: "invalid_request",
            message: e.to_string(),
            details: json!({ "expected": e.expected }),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code, details) = self.parts();
        let message = match &self {
            ApiError::Unexpected(e) => {
                tracing::error!(error = ?e, "unexpected error");
                "internal error; it has been logged".to_owned()
            }
            other => other.to_string(),
        };
        let body = json!({ "error": { "code": code, "message": message, "details": details } });
        let mut response = (status, Json(body)).into_response();
        if status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let ApiError::RateLimited { retry_after_secs } = self {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
        }
        response
    }
}

/// Result type for handlers.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// The 400 for JSON that does not parse (`invalid_json`) or does not fit
    /// the type asked for (`invalid_request`, `details` naming the field path,
    /// the problem and, where serde lists them, the expected fields).
    /// `what` starts the message (e.g. "Failed to deserialize the JSON body
    /// into the target type").
    pub fn undeserializable(what: &str, path: &str, e: &serde_json::Error) -> ApiError {
        use serde_json::error::Category;
        let at = if path == "." || path.is_empty() {
            String::new()
        } else {
            format!("{path}: ")
        };
        match e.classify() {
            Category::Data => {
                let text = plain_words(&e.to_string());
                let mut details = json!({ "field": if at.is_empty() { "." } else { path } });
                let expected = expected_fields(&text);
                if !expected.is_empty() {
                    details["expected"] = json!(expected);
                }
                details["problem"] = json!(strip_position(&text));
                ApiError::BadRequest {
                    code: "invalid_request",
                    message: format!("{what}: {at}{text}"),
                    details,
                }
            }
            _ => ApiError::BadRequest {
                code: "invalid_json",
                message: format!("{what}: {at}{e}"),
                details: json!({ "line": e.line(), "column": e.column() }),
            },
        }
    }
}

/// serde's message in the API's words: no Rust type names (`expected
/// struct CreateMission with 8 elements` → `expected a JSON object`,
/// `UUID parsing failed: …` → `not a valid id (a UUID)`).
pub fn plain_words(text: &str) -> String {
    if let Some(i) = text.find("UUID parsing failed") {
        let end = text[i..].find(" at line ").map_or(text.len(), |j| i + j);
        return format!("{}not a valid id (a UUID){}", &text[..i], &text[end..]);
    }
    let mut out = text.to_owned();
    for (marker, words) in [
        ("expected struct ", "expected a JSON object"),
        ("expected a map", "expected a JSON object"),
        ("expected enum ", "expected one of the allowed values"),
        ("expected a sequence", "expected a JSON array"),
    ] {
        if let Some(i) = out.find(marker) {
            // The type name (and "with N elements") runs to the position or the end.
            let end = out[i..].find(" at line ").map_or(out.len(), |j| i + j);
            out = format!("{}{words}{}", &out[..i], &out[end..]);
        }
    }
    out.replace("invalid type: sequence", "invalid type: an array")
        .replace("invalid type: map", "invalid type: an object")
        .replace("invalid length", "wrong number of items:")
}

/// The names serde lists after "expected" (for the query extractor).
pub fn expected_names(text: &str) -> Vec<String> {
    expected_fields(text)
}

/// The names serde lists after "expected" in an unknown-field or
/// unknown-variant message (`expected one of `a`, `b``, `expected `a` or `b``).
fn expected_fields(text: &str) -> Vec<String> {
    let Some((_, after)) = text.split_once("expected ") else {
        return Vec::new();
    };
    after
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// serde_json's message without its " at line L column C" suffix.
fn strip_position(text: &str) -> &str {
    text.rsplit_once(" at line ").map_or(text, |(head, _)| head)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of<T: serde::de::DeserializeOwned>(body: &str) -> ApiError {
        let mut de = serde_json::Deserializer::from_str(body);
        let e = serde_path_to_error::deserialize::<_, T>(&mut de)
            .err()
            .expect("an error");
        let path = e.path().to_string();
        ApiError::undeserializable("Failed", &path, &e.into_inner())
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        subject: String,
        certainty: f64,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Outer {
        name: String,
        items: Vec<Inner>,
    }

    #[test]
    fn an_unknown_field_names_its_path_and_the_expected_fields() {
        let ApiError::BadRequest {
            code,
            message,
            details,
        } = error_of::<Outer>(r#"{"name": "n", "items": [{"subject": "s", "certainity": 1}]}"#)
        else {
            panic!("not a 400");
        };
        assert_eq!(code, "invalid_request");
        assert!(
            message.starts_with("Failed: items[0].certainity: unknown field `certainity`"),
            "{message}"
        );
        assert_eq!(details["field"], "items[0].certainity");
        assert_eq!(details["expected"], json!(["subject", "certainty"]));
        assert_eq!(
            details["problem"],
            "unknown field `certainity`, expected `subject` or `certainty`"
        );
    }

    #[test]
    fn a_wrong_type_and_a_missing_field_name_their_paths() {
        let ApiError::BadRequest { details, .. } = error_of::<Outer>(r#"{"name": 3, "items": []}"#)
        else {
            panic!("not a 400");
        };
        assert_eq!(details["field"], "name");
        assert!(details.get("expected").is_none(), "{details}");
        let ApiError::BadRequest { details, .. } = error_of::<Outer>(r#"{"name": "n"}"#) else {
            panic!("not a 400");
        };
        assert_eq!(details["field"], ".");
        assert_eq!(details["problem"], "missing field `items`");
    }

    #[test]
    fn broken_json_is_invalid_json_with_its_position() {
        let ApiError::BadRequest { code, details, .. } = error_of::<Outer>(r#"{"name": "#) else {
            panic!("not a 400");
        };
        assert_eq!(code, "invalid_json");
        assert_eq!(details["line"], 1);
    }
}
