//! `/v1` routes of governance: the stakeholder profile, the governance
//! check, and the decision queue (see [`crate::coordination::governance`]).

use axum::{extract::State, http::StatusCode};
use serde::Deserialize;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{
    AppState, doc,
    extract::{Json, Path, Query},
    page::Limit,
};
use crate::{
    auth::Principal,
    coordination::governance::{
        self as gov, CheckRequest, CheckResult, DecisionRequest, DecisionReview, DecisionView,
        ProfileRequest, ProfileView, ResolveRequest,
    },
    error::{ApiError, ApiResult},
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(show_profile, put_profile))
        .routes(routes!(check))
        .routes(routes!(list, request))
        .routes(routes!(show))
        .routes(routes!(resolve))
}

/// Shows the workspace's stakeholder profile.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/governance/profile",
    tag = "governance",
    operation_id = "get_governance_profile",
    responses(
        (status = 200, description = "The profile", body = ProfileView),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn show_profile(
    State(state): State<AppState>,
    who: Principal,
) -> ApiResult<Json<ProfileView>> {
    Ok(Json(gov::get_profile(&state.pool, &who).await?))
}

/// Creates or replaces the workspace's stakeholder profile (decision style,
/// risk tolerance, thresholds, auto-approved categories).
///
/// Roles: admin, stakeholder.
#[utoipa::path(
    put,
    path = "/v1/governance/profile",
    tag = "governance",
    operation_id = "put_governance_profile",
    request_body = ProfileRequest,
    responses(
        (status = 200, description = "The stored profile", body = ProfileView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 409, description = "`version` is stale (`version_conflict`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn put_profile(
    State(state): State<AppState>,
    who: Principal,
    Json(req): Json<ProfileRequest>,
) -> ApiResult<Json<ProfileView>> {
    Ok(Json(gov::put_profile(&state.pool, &who, req).await?))
}

/// Checks whether an action needs a stakeholder's approval (writes nothing).
///
/// Roles: any token of the workspace.
#[utoipa::path(
    post,
    path = "/v1/governance/check",
    tag = "governance",
    operation_id = "governance_check",
    request_body = CheckRequest,
    responses(
        (status = 200, description = "The verdict", body = CheckResult),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized)
    ),
    security(("api_token" = []))
)]
async fn check(
    State(state): State<AppState>,
    who: Principal,
    Json(req): Json<CheckRequest>,
) -> ApiResult<Json<CheckResult>> {
    Ok(Json(gov::check_action(&state.pool, &who, req).await?))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct ListParams {
    /// Only decisions with this status (`pending`, `approved`, `rejected`, `deferred`, `modified`).
    #[param(value_type = Option<coordinator_core::governance::DecisionStatus>)]
    status: Option<String>,
    /// At most this many (1–500, default 100).
    #[serde(default)]
    #[param(inline)]
    limit: Limit<100, 500>,
}

/// The decision queue, newest first, each enriched with its age, its
/// recommended option (with its risk), the current profile's thresholds,
/// risk tolerance and a recommendation; with totals per status.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/decisions",
    tag = "governance",
    operation_id = "list_decisions",
    params(ListParams),
    responses(
        (status = 200, description = "Decisions", body = DecisionQueue),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized)
    ),
    security(("api_token" = []))
)]
async fn list(
    State(state): State<AppState>,
    who: Principal,
    Query(p): Query<ListParams>,
) -> ApiResult<Json<DecisionQueue>> {
    let limit = p.limit.get()?;
    let (decisions, totals) =
        gov::list_decisions(&state.pool, &who, p.status.as_deref(), limit).await?;
    Ok(Json(DecisionQueue { decisions, totals }))
}

/// The decision queue, newest first, with the workspace's totals.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct DecisionQueue {
    /// Decisions, each with its age, its recommended option and the
    /// governance context it is judged in.
    pub decisions: Vec<DecisionReview>,
    /// How many decisions the workspace has of each status (all of them).
    pub totals: gov::DecisionTotals,
}

/// Puts a decision in the queue (an agent token requests as itself and gets
/// an INFORM when it is resolved).
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    post,
    path = "/v1/decisions",
    tag = "governance",
    operation_id = "request_decision",
    request_body = DecisionRequest,
    responses(
        (status = 201, description = "Queued", body = DecisionView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 409, description = "`id` reused with other content (`decision_id_reused`)", body = doc::ErrorBody),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
async fn request(
    State(state): State<AppState>,
    who: Principal,
    Json(req): Json<DecisionRequest>,
) -> ApiResult<(StatusCode, Json<DecisionView>)> {
    let d = gov::request_decision(&state.pool, &who, req).await?;
    Ok((StatusCode::CREATED, Json(d)))
}

/// Shows a decision with its governance context.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/decisions/{id}",
    tag = "governance",
    operation_id = "get_decision",
    params(("id" = Uuid, Path, description = "Decision id")),
    responses(
        (status = 200, description = "The decision", body = DecisionReview),
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
) -> ApiResult<Json<DecisionReview>> {
    Ok(Json(gov::get_decision(&state.pool, &who, id).await?))
}

/// Resolves a decision: `approved`, `rejected`, `deferred` or `modified`,
/// with rationale, conditions and the `option` chosen. A gated mission task
/// moves with it (queued, skipped with a replan trigger, still waiting, or
/// queued with the modifications in its inputs); a blocker's task goes back
/// to the queue with the outcome as feedback (or waits, if deferred); a
/// requesting agent gets an INFORM.
///
/// Roles: stakeholder only.
#[utoipa::path(
    post,
    path = "/v1/decisions/{id}/resolve",
    tag = "governance",
    operation_id = "resolve_decision",
    params(("id" = Uuid, Path, description = "Decision id")),
    request_body = ResolveRequest,
    responses(
        (status = 200, description = "Resolved (or already resolved the same way)", body = DecisionView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "Already resolved otherwise (`decision_already_resolved`) or `version` stale (`version_conflict`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn resolve(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<ResolveRequest>,
) -> ApiResult<Json<DecisionView>> {
    let replan = state.planning.llm.is_some();
    Ok(Json(
        gov::resolve(&state.pool, replan, &who, id, req).await?,
    ))
}

// The governance use cases' errors as the one JSON error body.
impl From<gov::GovernanceError> for ApiError {
    fn from(e: gov::GovernanceError) -> Self {
        use gov::GovernanceError as E;
        use serde_json::{Value, json};
        let message = e.to_string();
        match e {
            E::Invalid(e) => e.into(),
            E::UnknownValue(e) => e.into(),
            E::Forbidden(e) => e.into(),
            E::NoProfile | E::DecisionNotFound(_) => ApiError::NotFound(message),
            E::VersionConflict { current, .. } => ApiError::Conflict {
                code: "version_conflict",
                message,
                details: json!({ "current_version": current }),
            },
            E::DecisionIdReused(_) => ApiError::conflict("decision_id_reused", message),
            E::DecisionExists => ApiError::conflict("decision_exists", message),
            E::UnknownAgent(a) => ApiError::Unprocessable {
                code: "unknown_agent",
                message,
                details: json!({ "agent_id": a }),
            },
            E::UnknownMission(m) => ApiError::Unprocessable {
                code: "unknown_mission",
                message,
                details: json!({ "mission_id": m }),
            },
            E::AlreadyResolved {
                status,
                requested,
                transition,
                ..
            } => ApiError::Conflict {
                code: "decision_already_resolved",
                message,
                details: json!({ "status": status, "requested": requested, "transition": transition.to_string() }),
            },
            E::TaskChanged => ApiError::Conflict {
                code: "conflict",
                message,
                details: Value::Null,
            },
            E::NotRunning { status, .. } => ApiError::Conflict {
                code: "invalid_state",
                message,
                details: json!({ "entity": "task", "status": status }),
            },
            E::StaleAttempt { attempt_id } => ApiError::Conflict {
                code: "stale_attempt",
                message,
                details: json!({ "attempt_id": attempt_id }),
            },
            E::TaskMove(e) => (*e).into(),
            E::IllegalTransition(e) => e.into(),
            E::Replan(e) => (*e).into(),
            E::Message(e) => e.into(),
            E::Database(e) => e.into(),
            E::Unexpected(e) => ApiError::Unexpected(e),
        }
    }
}

#[cfg(test)]
mod error_tests {
    use axum::{http::StatusCode, response::IntoResponse};
    use uuid::Uuid;

    use super::{ApiError, gov::GovernanceError};

    async fn status_and_code(e: GovernanceError) -> (StatusCode, String) {
        let r = ApiError::from(e).into_response();
        let status = r.status();
        let body = axum::body::to_bytes(r.into_body(), usize::MAX)
            .await
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        (status, v["error"]["code"].as_str().unwrap().to_owned())
    }

    #[tokio::test]
    async fn governance_errors_keep_their_status_and_code() {
        assert_eq!(
            status_and_code(GovernanceError::VersionConflict {
                what: "profile",
                current: Some(2)
            })
            .await,
            (StatusCode::CONFLICT, "version_conflict".to_owned())
        );
        assert_eq!(
            status_and_code(GovernanceError::UnknownMission(Uuid::nil())).await,
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                "unknown_mission".to_owned()
            )
        );
        assert_eq!(
            status_and_code(GovernanceError::DecisionNotFound(Uuid::nil())).await,
            (StatusCode::NOT_FOUND, "not_found".to_owned())
        );
    }
}
