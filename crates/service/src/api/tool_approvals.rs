//! `/v1` routes of tool-use approvals (see
//! [`crate::coordination::tool_policy`]): a worker asks and polls with its
//! attempt's own token; people list and resolve with API tokens.

use axum::{
    extract::State,
    http::{StatusCode, request::Parts},
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{
    AppState, doc,
    extract::{Json, Path, Query, bearer},
    page::Limit,
};
use crate::{
    auth::Principal,
    coordination::tool_policy::{
        self as policy, ApprovalRequest, ApprovalStatus, ApprovalView, ResolveApproval,
        ToolCallReport,
    },
    error::{ApiError, ApiResult},
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(request))
        .routes(routes!(poll))
        .routes(routes!(report_call))
        .routes(routes!(list))
        .routes(routes!(show))
        .routes(routes!(resolve))
}

/// The raw bearer token of a worker callback (checked against the attempt's).
struct AttemptToken(String);

impl axum::extract::FromRequestParts<AppState> for AttemptToken {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &AppState) -> Result<Self, Self::Rejection> {
        Ok(AttemptToken(bearer(parts)?.to_owned()))
    }
}

/// Asks whether a tool call may be made. The task's tool policy answers at
/// once (`status` `approved` or `denied`, resolver `policy`) or leaves the
/// request `pending` for a person; poll it by its id until `granted` is set.
#[utoipa::path(
    post,
    path = "/v1/attempts/{id}/tool-approvals",
    tag = "tool-approvals",
    operation_id = "request_tool_approval",
    params(("id" = Uuid, Path, description = "Attempt id")),
    request_body = ApprovalRequest,
    responses(
        (status = 201, description = "Judged (pending, approved or denied)", body = ApprovalView),
        (status = 200, description = "A retry of a request already made with this id", body = ApprovalView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 409, description = "The attempt is no longer live (`stale_attempt`) or `id` was used otherwise (`approval_id_reused`)", body = doc::ErrorBody)
    ),
    security(("attempt_token" = []))
)]
async fn request(
    State(state): State<AppState>,
    AttemptToken(token): AttemptToken,
    Path(id): Path<Uuid>,
    Json(req): Json<ApprovalRequest>,
) -> ApiResult<(StatusCode, Json<ApprovalView>)> {
    let timeout = state.engine.tool_approval_timeout.as_secs();
    let (view, created) =
        policy::request_approval(&state.pool, timeout, id, Some(&token), req).await?;
    let code = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((code, Json(view)))
}

/// The worker polls its request for the verdict (`granted`: `null` while
/// pending). An overdue request times out here, with the policy's default.
#[utoipa::path(
    get,
    path = "/v1/attempts/{id}/tool-approvals/{approval_id}",
    tag = "tool-approvals",
    operation_id = "poll_tool_approval",
    params(
        ("id" = Uuid, Path, description = "Attempt id"),
        ("approval_id" = Uuid, Path, description = "Tool-approval id")
    ),
    responses(
        (status = 200, description = "The request", body = ApprovalView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("attempt_token" = []))
)]
async fn poll(
    State(state): State<AppState>,
    AttemptToken(token): AttemptToken,
    Path((id, approval_id)): Path<(Uuid, Uuid)>,
) -> ApiResult<Json<ApprovalView>> {
    Ok(Json(
        policy::poll(&state.pool, id, &token, approval_id).await?,
    ))
}

/// Reports a tool call the worker made, for the mission's timeline
/// (event `tool.called`).
#[utoipa::path(
    post,
    path = "/v1/attempts/{id}/tool-calls",
    tag = "tool-approvals",
    operation_id = "report_tool_call",
    params(("id" = Uuid, Path, description = "Attempt id")),
    request_body = ToolCallReport,
    responses(
        (status = 200, description = "Recorded", body = super::attempts::ReportAccepted),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 409, description = "The attempt is no longer live (`stale_attempt`)", body = doc::ErrorBody)
    ),
    security(("attempt_token" = []))
)]
async fn report_call(
    State(state): State<AppState>,
    AttemptToken(token): AttemptToken,
    Path(id): Path<Uuid>,
    Json(req): Json<ToolCallReport>,
) -> ApiResult<Json<Value>> {
    policy::report_call(&state.pool, id, &token, req).await?;
    Ok(Json(json!({ "accepted": true })))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct ListParams {
    /// Only requests with this status.
    #[param(inline)]
    status: Option<ApprovalStatus>,
    /// At most this many (1–500, default 100).
    #[serde(default)]
    #[param(inline)]
    limit: Limit<100, 500>,
}

/// Tool-approval requests of the workspace.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ApprovalList {
    /// Newest first.
    pub tool_approvals: Vec<ApprovalView>,
}

/// The workspace's tool-approval requests, newest first
/// (`?status=pending`: the ones waiting for a person).
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/tool-approvals",
    tag = "tool-approvals",
    operation_id = "list_tool_approvals",
    params(ListParams),
    responses(
        (status = 200, description = "Requests", body = ApprovalList),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized)
    ),
    security(("api_token" = []))
)]
async fn list(
    State(state): State<AppState>,
    who: Principal,
    Query(p): Query<ListParams>,
) -> ApiResult<Json<ApprovalList>> {
    let limit = p.limit.get()?;
    let tool_approvals = policy::list(&state.pool, &who, p.status, limit).await?;
    Ok(Json(ApprovalList { tool_approvals }))
}

/// Shows a tool-approval request.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/tool-approvals/{id}",
    tag = "tool-approvals",
    operation_id = "get_tool_approval",
    params(("id" = Uuid, Path, description = "Tool-approval id")),
    responses(
        (status = 200, description = "The request", body = ApprovalView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn show(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<ApprovalView>> {
    Ok(Json(policy::get(&state.pool, &who, id).await?))
}

/// Approves or denies a pending request, with a rationale (logged as
/// `tool.approval_resolved`). The same outcome again is a no-op.
///
/// Roles: admin, operator, stakeholder.
#[utoipa::path(
    post,
    path = "/v1/tool-approvals/{id}/resolve",
    tag = "tool-approvals",
    operation_id = "resolve_tool_approval",
    params(("id" = Uuid, Path, description = "Tool-approval id")),
    request_body = ResolveApproval,
    responses(
        (status = 200, description = "Resolved (or already resolved the same way)", body = ApprovalView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "Resolved otherwise, by the policy or timed out (`approval_already_resolved`), or meanwhile (`concurrent_update`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn resolve(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<ResolveApproval>,
) -> ApiResult<Json<ApprovalView>> {
    Ok(Json(policy::resolve(&state.pool, &who, id, req).await?))
}

// ---- How tool approval errors reach the client: status, code and details
// of the one JSON error body.

use crate::coordination::tool_policy::ToolApprovalError;

impl From<ToolApprovalError> for ApiError {
    fn from(e: ToolApprovalError) -> Self {
        let message = e.to_string();
        let conflict = |code| ApiError::Conflict {
            code,
            message: message.clone(),
            details: Value::Null,
        };
        match e {
            ToolApprovalError::Invalid(e) => e.into(),
            ToolApprovalError::Forbidden(_) => ApiError::Forbidden(message),
            // An unknown attempt and a wrong token answer alike, so a
            // callback route tells nobody which attempt ids exist.
            ToolApprovalError::NoAttempt { attempt_id }
            | ToolApprovalError::WrongToken { attempt_id } => {
                ApiError::Unauthorized(ToolApprovalError::WrongToken { attempt_id }.to_string())
            }
            ToolApprovalError::NotFound { .. } | ToolApprovalError::NotOfAttempt { .. } => {
                ApiError::NotFound(message)
            }
            ToolApprovalError::StaleAttempt { .. } => conflict("stale_attempt"),
            ToolApprovalError::IdReused { .. } => conflict("approval_id_reused"),
            ToolApprovalError::IdTaken | ToolApprovalError::ResolvedMeanwhile { .. } => {
                conflict("concurrent_update")
            }
            ToolApprovalError::AlreadyResolved {
                status, resolver, ..
            } => ApiError::Conflict {
                code: "approval_already_resolved",
                message,
                details: json!({ "status": status, "resolver": resolver }),
            },
            ToolApprovalError::Database(e) => e.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::response::IntoResponse;

    use super::*;
    use crate::domain::IllegalTransition;

    /// The status and the body's `error` object a client gets for `e`.
    async fn rendered(e: ApiError) -> (StatusCode, Value, axum::http::HeaderMap) {
        let response = e.into_response();
        let status = response.status();
        let headers = response.headers().clone();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("an error body is small");
        let body: Value = serde_json::from_slice(&body).expect("an error body is JSON");
        (status, body["error"].clone(), headers)
    }

    #[tokio::test]
    async fn tool_approval_errors_keep_their_status_code_and_details() {
        let attempt_id = Uuid::nil();
        let (status, error, headers) =
            rendered(ToolApprovalError::WrongToken { attempt_id }.into()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert_eq!(error["code"], "unauthorized");
        assert!(headers.contains_key(axum::http::header::WWW_AUTHENTICATE));
        let (status, error, _) =
            rendered(ToolApprovalError::StaleAttempt { attempt_id }.into()).await;
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(error["code"], "stale_attempt");
        assert_eq!(
            error["message"],
            format!("attempt {attempt_id} is no longer live; stop working on it")
        );
        let refused = IllegalTransition {
            entity: "tool approval",
            from: "approved",
            event: "deny",
        };
        let (status, error, _) = rendered(
            ToolApprovalError::AlreadyResolved {
                refused,
                status: "approved".into(),
                resolver: Some("operator:1".into()),
            }
            .into(),
        )
        .await;
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(error["code"], "approval_already_resolved");
        assert_eq!(
            error["details"],
            json!({ "status": "approved", "resolver": "operator:1" })
        );
    }
}
