//! `/v1/attempts/{id}/…`: worker callbacks, authenticated by the attempt's
//! own bearer token (not an API token).

use axum::{extract::State, http::request::Parts};
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{
    AppState, doc,
    extract::{Json, Path, bearer},
};
use crate::{
    auth::hash_token,
    engine::reports::{self, Applied, Origin, ReportError},
    error::{ApiError, ApiResult},
    store::attempts,
    worker::protocol::{Heartbeat, WorkerReport},
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(heartbeat))
        .routes(routes!(result))
}

/// The raw bearer token of the request.
struct AttemptToken(String);

impl axum::extract::FromRequestParts<AppState> for AttemptToken {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, Self::Rejection> {
        Ok(AttemptToken(bearer(parts)?.to_owned()))
    }
}

impl From<ReportError> for ApiError {
    fn from(e: ReportError) -> Self {
        match e {
            // An unknown attempt and a wrong token answer alike, so a
            // callback route tells nobody which attempt ids exist.
            ReportError::NotFound(id) | ReportError::BadToken(id) => {
                ApiError::Unauthorized(ReportError::BadToken(id).to_string())
            }
            ReportError::Stale {
                attempt,
                ref attempt_status,
                ref task_status,
            } => ApiError::Conflict {
                code: "stale_attempt",
                message: e.to_string(),
                details: json!({ "attempt_id": attempt, "attempt_status": attempt_status, "task_status": task_status }),
            },
            ReportError::Race(_) => ApiError::conflict("concurrent_update", e.to_string()),
            ReportError::Db(db) => db.into(),
        }
    }
}

/// Reports the outcome of an attempt (a worker's callback).
#[utoipa::path(
    post,
    path = "/v1/attempts/{id}/result",
    tag = "attempts",
    operation_id = "report_attempt_result",
    params(("id" = Uuid, Path, description = "Attempt id")),
    request_body = WorkerReport,
    responses(
        (status = 200, description = "Recorded (or a duplicate of a recorded report)", body = ReportAccepted),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 409, description = "The attempt is no longer live (`stale_attempt`) or another update won (`concurrent_update`)", body = doc::ErrorBody)
    ),
    security(("attempt_token" = []))
)]
async fn result(
    State(state): State<AppState>,
    AttemptToken(token): AttemptToken,
    Path(id): Path<Uuid>,
    Json(report): Json<WorkerReport>,
) -> ApiResult<Json<Value>> {
    if !report.cost.is_finite() || report.cost < 0.0 {
        return Err(ApiError::invalid(
            "cost",
            "cost must be a non-negative number",
        ));
    }
    if report.tokens < 0 {
        return Err(ApiError::invalid("tokens", "tokens must not be negative"));
    }
    let applied = reports::apply_report(
        &state.pool,
        &state.engine,
        id,
        &report,
        Origin::Worker { token: &token },
    )
    .await?;
    Ok(Json(match applied {
        Applied::Applied(status) => {
            json!({ "accepted": true, "duplicate": false, "task_status": status })
        }
        Applied::Duplicate => json!({ "accepted": true, "duplicate": true }),
    }))
}

/// Extends the lease of a live attempt (a worker's callback while working).
#[utoipa::path(
    post,
    path = "/v1/attempts/{id}/heartbeat",
    tag = "attempts",
    operation_id = "attempt_heartbeat",
    params(("id" = Uuid, Path, description = "Attempt id")),
    request_body(content = Option<Heartbeat>, description = "Optional progress; the body may be empty"),
    responses(
        (status = 200, description = "Lease extended", body = HeartbeatAck),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 409, description = "The attempt is no longer live: stop working on it (`stale_attempt`)", body = doc::ErrorBody)
    ),
    security(("attempt_token" = []))
)]
async fn heartbeat(
    State(state): State<AppState>,
    AttemptToken(token): AttemptToken,
    Path(id): Path<Uuid>,
    super::extract::RawBody(body): super::extract::RawBody,
) -> ApiResult<Json<Value>> {
    // The body is optional; when present it must be a valid heartbeat.
    if !body.iter().all(u8::is_ascii_whitespace) {
        super::extract::parse_body::<Heartbeat>(&body)?;
    }
    let stored = attempts::token_hash(&state.pool, id).await?;
    if stored.as_deref() != Some(hash_token(&token).as_slice()) {
        return Err(ReportError::BadToken(id).into());
    }
    let live = attempts::heartbeat(&state.pool, id, state.engine.lease.as_secs_f64()).await?;
    if !live {
        return Err(ApiError::conflict(
            "stale_attempt",
            format!("attempt {id} is no longer live; stop working on it"),
        ));
    }
    Ok(Json(
        json!({ "ok": true, "lease_seconds": state.engine.lease.as_secs() }),
    ))
}

/// `POST /v1/attempts/{id}/result` answer.
#[derive(utoipa::ToSchema)]
pub struct ReportAccepted {
    /// Always true: the report is recorded.
    pub accepted: bool,
    /// True when the same report was applied before (nothing changed).
    pub duplicate: bool,
    /// The task's status after the report (absent for duplicates).
    pub task_status: Option<crate::domain::TaskStatus>,
}

/// `POST /v1/attempts/{id}/heartbeat` answer.
#[derive(utoipa::ToSchema)]
pub struct HeartbeatAck {
    /// Always true.
    pub ok: bool,
    /// The lease the heartbeat extended, in seconds: beat again well before it ends.
    pub lease_seconds: u64,
}
