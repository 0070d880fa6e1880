//! Extractors whose rejections are JSON errors, and the caller's identity.

use axum::{
    extract::{FromRequest, FromRequestParts, Request, rejection::JsonRejection},
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

/// A JSON body; malformed input is a 400 (413 if too large) with our error body.
pub struct Json<T>(pub T);

impl<S, T> FromRequest<S> for Json<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(Json(v)),
            Err(rejection) => Err(json_rejection(rejection)),
        }
    }
}

fn json_rejection(r: JsonRejection) -> ApiError {
    let text = r.body_text();
    match r {
        JsonRejection::JsonDataError(_) => ApiError::BadRequest {
            code: "invalid_request",
            message: text,
            details: serde_json::Value::Null,
        },
        JsonRejection::MissingJsonContentType(_) => ApiError::BadRequest {
            code: "unsupported_media_type",
            message: "send the body as JSON with Content-Type: application/json".into(),
            details: serde_json::Value::Null,
        },
        _ if r.status() == StatusCode::PAYLOAD_TOO_LARGE => {
            ApiError::PayloadTooLarge("the request body is too large".into())
        }
        _ => ApiError::BadRequest {
            code: "invalid_json",
            message: text,
            details: serde_json::Value::Null,
        },
    }
}

/// A raw body, for routes whose body is optional or not JSON. Too large is
/// a 413 with our error body (axum's own rejection is plain text).
pub struct RawBody(pub axum::body::Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        axum::body::Bytes::from_request(req, state)
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
            })
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
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|axum::extract::Path(v)| Path(v))
            .map_err(|r| ApiError::BadRequest {
                code: "invalid_path",
                message: r.body_text(),
                details: serde_json::Value::Null,
            })
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
            .map_err(|r| ApiError::BadRequest {
                code: "invalid_query",
                message: r.body_text(),
                details: serde_json::Value::Null,
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
