//! Extractors whose rejections are JSON errors, and the caller's identity.

use axum::{
    extract::{FromRequest, FromRequestParts, Request},
    http::{StatusCode, header, request::Parts},
    response::{IntoResponse, Response},
};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::json;

use std::net::SocketAddr;

use axum::extract::ConnectInfo;

use super::{AppState, rate_limit::Key};
use crate::{
    auth::{self, Principal},
    error::ApiError,
};

/// A JSON body; a body not sent as JSON is a 415, malformed input a 400
/// (413 if too large) with our error body, whose `details` name the field
/// at fault and, where serde says, the fields it expected.
pub struct Json<T>(pub T);

impl<S, T> FromRequest<S> for Json<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !is_json(req.headers()) {
            return Err(ApiError::UnsupportedMediaType(
                "send the body as JSON with Content-Type: application/json".into(),
            ));
        }
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|r| {
                if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::PayloadTooLarge("the request body is too large".into())
                } else {
                    // The body could not be read (it stalled, or the client went away).
                    ApiError::BadRequest {
                        code: "invalid_json",
                        message: r.body_text(),
                        details: serde_json::Value::Null,
                    }
                }
            })?;
        parse_body(&bytes).map(Json)
    }
}

/// An XML body (a BPMN document): `application/xml`, `text/xml` or any
/// `…+xml`; another `Content-Type` is a 415, a body over the limit a 413.
pub struct Xml(pub axum::body::Bytes);

impl<S: Send + Sync> FromRequest<S> for Xml {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !is_xml(req.headers()) {
            return Err(ApiError::UnsupportedMediaType(
                "send the document as XML with Content-Type: application/xml".into(),
            ));
        }
        axum::body::Bytes::from_request(req, state)
            .await
            .map(Xml)
            .map_err(|r| {
                if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::PayloadTooLarge("the request body is too large".into())
                } else {
                    ApiError::BadRequest {
                        code: "malformed_xml",
                        message: r.body_text(),
                        details: serde_json::Value::Null,
                    }
                }
            })
    }
}

fn is_xml(headers: &axum::http::HeaderMap) -> bool {
    let essence = content_type(headers);
    essence == "application/xml" || essence == "text/xml" || essence.ends_with("+xml")
}

/// The `Content-Type`'s media type, lowercased, without parameters.
fn content_type(headers: &axum::http::HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|ct| ct.split(';').next())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// `application/json` or any `application/…+json`, as axum's own extractor accepts.
fn is_json(headers: &axum::http::HeaderMap) -> bool {
    let essence = content_type(headers);
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Deserializes a body, saying where it went wrong. A number with no
/// fraction (`2379.0`) is read as the integer it is: JSON Schema, and so
/// the OpenAPI document, counts it as one, and serde would refuse it for an
/// integer field.
pub fn parse_body<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
        ApiError::undeserializable("Failed to parse the request body as JSON", ".", &e)
    })?;
    // Every body is an object; serde would also read a struct from an
    // array of its fields in order (`[null, null]`), which no client means.
    if !value.is_object() {
        return Err(ApiError::BadRequest {
            code: "invalid_request",
            message: "the body must be a JSON object".into(),
            details: serde_json::json!({ "field": "body" }),
        });
    }
    if let Err(path) = integral_floats_as_integers(&mut value, "") {
        // Valid JSON the document allows, but not storable: 422.
        return Err(ApiError::Unprocessable {
            code: "unstorable_value",
            message: format!(
                "{path}: numbers must lie within ±1e308 (larger ones do not survive storage as JSON)"
            ),
            details: serde_json::json!({ "field": path }),
        });
    }
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        ApiError::undeserializable(
            "Failed to deserialize the JSON body into the target type",
            &path,
            &e.into_inner(),
        )
    })
}

/// An optional body: none (or only whitespace) is `T::default()`; one that
/// is sent is read as [`parse_body`] reads any body.
pub fn parse_optional_body<T: DeserializeOwned + Default>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    parse_body(bytes)
}

/// Rewrites every float with no fractional part that fits an `i64` (or a
/// `u64`) as that integer, in place. Refuses (with the number's path) one
/// beyond ±1e308: PostgreSQL's `jsonb` gives such a number back as a
/// decimal too long for serde to read, so storing it would break every
/// later read.
fn integral_floats_as_integers(value: &mut serde_json::Value, path: &str) -> Result<(), String> {
    use serde_json::Value;
    let at = |key: &dyn std::fmt::Display| {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    };
    match value {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if f.is_nan() || f.abs() > 1e308 {
                return Err(if path.is_empty() {
                    "body".into()
                } else {
                    path.to_owned()
                });
            }
            // 2^63 and 2^64 as floats: the first values past each range.
            if f.fract() == 0.0
                && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f)
            {
                *value = Value::from(f as i64);
            } else if f.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&f) {
                *value = Value::from(f as u64);
            }
            Ok(())
        }
        Value::Array(items) => items
            .iter_mut()
            .enumerate()
            .try_for_each(|(i, v)| integral_floats_as_integers(v, &format!("{path}[{i}]"))),
        Value::Object(fields) => fields
            .iter_mut()
            .try_for_each(|(k, v)| integral_floats_as_integers(v, &at(k))),
        _ => Ok(()),
    }
}

/// A raw body, for routes whose JSON body is optional: one that is sent
/// needs a JSON `Content-Type` (else 415). Too large is a 413 with our
/// error body (axum's own rejection is plain text).
pub struct RawBody(pub axum::body::Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let json = is_json(req.headers());
        let body = axum::body::Bytes::from_request(req, state)
            .await
            .map(RawBody)
            .map_err(|r| {
                if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::PayloadTooLarge("the request body is too large".into())
                } else {
                    ApiError::BadRequest {
                        code: "invalid_request",
                        message: r.body_text(),
                        details: serde_json::Value::Null,
                    }
                }
            })?;
        // The body may be left out; one that is sent is JSON and says so.
        if !body.0.iter().all(u8::is_ascii_whitespace) && !json {
            return Err(ApiError::UnsupportedMediaType(
                "send the body as JSON with Content-Type: application/json (or send none)".into(),
            ));
        }
        Ok(body)
    }
}

impl<T: Serialize> IntoResponse for Json<T> {
    fn into_response(self) -> Response {
        axum::Json(self.0).into_response()
    }
}

/// Path parameters; a malformed one (e.g. not a UUID) is a 400.
pub struct Path<T>(pub T);

impl<S, T> FromRequestParts<S> for Path<T>
where
    T: DeserializeOwned + Send,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match axum::extract::Path::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Path(v)) => Ok(Path(v)),
            Err(r) => {
                let text = r.body_text();
                // Name the segment that is not an id, in words a person reads.
                if text.contains("UUID parsing failed") {
                    let raw = axum::extract::RawPathParams::from_request_parts(parts, state).await;
                    let bad = raw.ok().and_then(|raw| {
                        raw.iter()
                            .find(|(_, v)| v.parse::<uuid::Uuid>().is_err())
                            .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    });
                    if let Some((name, value)) = bad {
                        return Err(ApiError::BadRequest {
                            code: "invalid_path",
                            message: format!("'{value}' is not a valid id (a UUID)"),
                            details: json!({ "field": name }),
                        });
                    }
                }
                Err(ApiError::BadRequest {
                    code: "invalid_path",
                    message: crate::error::plain_words(&text),
                    details: serde_json::Value::Null,
                })
            }
        }
    }
}

/// Query parameters; malformed ones are a 400.
pub struct Query<T>(pub T);

impl<S, T> FromRequestParts<S> for Query<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Query(v)| Query(v))
            .map_err(|r| {
                let text = crate::error::plain_words(&r.body_text());
                // serde names unknown keys and the allowed ones: pass them on.
                let expected = crate::error::expected_names(&text);
                let details = if expected.is_empty() {
                    serde_json::Value::Null
                } else {
                    json!({ "expected": expected })
                };
                ApiError::BadRequest {
                    code: "invalid_query",
                    message: text,
                    details,
                }
            })
    }
}

impl FromRequestParts<AppState> for Principal {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        // Requests with an invalid token are charged to their client IP (so
        // guessing tokens is limited too), valid ones to their token. Those
        // without any Authorization header were charged by the middleware.
        let anonymous = || match parts.extensions.get::<ConnectInfo<SocketAddr>>() {
            Some(ConnectInfo(addr)) if parts.headers.contains_key(header::AUTHORIZATION) => {
                state.limiter.check(Key::Ip(addr.ip()))
            }
            _ => Ok(()),
        };
        let principal = match bearer(parts) {
            Ok(token) => auth::authenticate(&state.pool, token)
                .await
                .map_err(ApiError::from),
            Err(e) => Err(e),
        };
        match principal {
            Ok(p) => {
                state.limiter.check(Key::Token(p.token_id))?;
                confine_attempt(&p, parts.uri.path())?;
                Ok(p)
            }
            Err(e @ ApiError::Unauthorized(_)) => {
                anonymous()?;
                Err(e)
            }
            Err(e) => Err(e),
        }
    }
}

/// An attempt token acts inside its own mission: the mission list and
/// other missions' routes are refused with 403.
fn confine_attempt(p: &Principal, path: &str) -> Result<(), ApiError> {
    let Some(scope) = p.attempt else {
        return Ok(());
    };
    let Some(rest) = path.strip_prefix("/v1/missions") else {
        return Ok(());
    };
    let id = rest.trim_start_matches('/').split('/').next().unwrap_or("");
    if id.parse::<uuid::Uuid>().ok() == Some(scope.mission_id) {
        return Ok(());
    }
    Err(ApiError::Forbidden(format!(
        "an attempt token acts inside mission {} only",
        scope.mission_id
    )))
}

/// The bearer token of a request (401 if absent or malformed).
pub fn bearer(parts: &Parts) -> Result<&str, ApiError> {
    let header = match parts.headers.get(header::AUTHORIZATION) {
        None => None,
        Some(v) => Some(
            v.to_str()
                .map_err(|_| ApiError::Unauthorized("malformed Authorization header".into()))?,
        ),
    };
    auth::parse_bearer(header).map_err(ApiError::from)
}

/// The JSON body of a 404 for unknown routes.
pub async fn not_found() -> ApiError {
    ApiError::NotFound("no such route".into())
}

/// The JSON body of a 405 for known routes with the wrong method.
pub async fn method_not_allowed() -> Response {
    let body = json!({ "error": { "code": "method_not_allowed", "message": "this route does not support that method", "details": null } });
    (StatusCode::METHOD_NOT_ALLOWED, axum::Json(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize, PartialEq)]
    struct Body {
        version: i64,
        ttl: u32,
        share: f64,
        items: Vec<i32>,
    }

    #[test]
    fn integral_floats_read_as_integers_and_fractions_stay_refused() {
        let b: Body = parse_body(
            br#"{"version": 2379.0, "ttl": 3655.0, "share": 0.5, "items": [1.0, -2.0]}"#,
        )
        .expect("integral floats are integers");
        assert_eq!(
            b,
            Body {
                version: 2379,
                ttl: 3655,
                share: 0.5,
                items: vec![1, -2]
            }
        );
        let b: Body = parse_body(br#"{"version": 1, "ttl": 1, "share": 2.0, "items": []}"#)
            .expect("an integral float still fills a float field");
        assert_eq!(b.share, 2.0);
        assert!(
            parse_body::<Body>(br#"{"version": 1.5, "ttl": 1, "share": 0, "items": []}"#).is_err()
        );
        assert!(
            parse_body::<Body>(br#"{"version": 1e300, "ttl": 1, "share": 0, "items": []}"#)
                .is_err()
        );
        assert!(parse_body::<Body>(br#"{"version": 1} trailing"#).is_err());
        // A struct is never read from an array of its fields.
        assert!(parse_body::<Body>(br#"[1, 1, 0, []]"#).is_err());
        // Near f64::MAX anywhere in the body: refused, naming where (jsonb
        // would give it back as a decimal serde cannot read: a 500).
        let huge = br#"{"version": 1, "ttl": 1, "share": 1.7976931348623157e308, "items": []}"#;
        let Err(ApiError::Unprocessable { details, code, .. }) = parse_body::<Body>(huge) else {
            panic!("a number near f64::MAX is a 422");
        };
        assert_eq!(code, "unstorable_value");
        assert_eq!(details["field"], "share");
        let fine = br#"{"version": 1, "ttl": 1, "share": -1e308, "items": []}"#;
        assert!(parse_body::<Body>(fine).is_ok());
    }
}
