//! `/v1` routes of team decisions (see
//! [`crate::coordination::team_decisions`]): propose, vote, cancel, show,
//! and the ADR of a committed decision as markdown.

use axum::{
    extract::State,
    http::{StatusCode, header},
    response::IntoResponse,
};
use serde::Serialize;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{
    AppState, doc,
    extract::{Json, Path},
};
use crate::{
    auth::Principal,
    coordination::team_decisions::{
        self as td, CancelRequest, ProposeRequest, TeamDecisionView, VoteRequest,
    },
    error::ApiResult,
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, propose))
        .routes(routes!(show))
        .routes(routes!(vote))
        .routes(routes!(cancel))
        .routes(routes!(adr))
}

/// Puts a decision to the mission's team: a topic, options, evidence, the
/// eligible agents (default: those assigned to the mission's tasks) and a
/// voting window; a blocked task may raise it (`task_id`).
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    post,
    path = "/v1/missions/{id}/team-decisions",
    tag = "team-decisions",
    operation_id = "propose_team_decision",
    params(("id" = Uuid, Path, description = "Mission id")),
    request_body = ProposeRequest,
    responses(
        (status = 201, description = "Open for votes", body = TeamDecisionView),
        (status = 200, description = "A retry of a proposal already made with this id", body = TeamDecisionView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "`id` used otherwise (`team_decision_id_reused`)", body = doc::ErrorBody),
        (status = 422, description = "Nobody could vote (`no_eligible_agents`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn propose(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<ProposeRequest>,
) -> ApiResult<(StatusCode, Json<TeamDecisionView>)> {
    let (view, created) = td::propose(&state.pool, &who, id, req).await?;
    let code = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((code, Json(view)))
}

/// A mission's team decisions.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct TeamDecisionList {
    /// Oldest first.
    pub team_decisions: Vec<TeamDecisionView>,
}

/// The mission's team decisions, oldest first, with their votes (decisions
/// whose window has closed are committed first).
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/missions/{id}/team-decisions",
    tag = "team-decisions",
    operation_id = "list_team_decisions",
    params(("id" = Uuid, Path, description = "Mission id")),
    responses(
        (status = 200, description = "Decisions", body = TeamDecisionList),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn list(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<TeamDecisionList>> {
    let team_decisions = td::list(&state.pool, &who, id).await?;
    Ok(Json(TeamDecisionList { team_decisions }))
}

/// Shows a team decision with its votes.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/team-decisions/{id}",
    tag = "team-decisions",
    operation_id = "get_team_decision",
    params(("id" = Uuid, Path, description = "Team decision id")),
    responses(
        (status = 200, description = "The decision", body = TeamDecisionView),
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
) -> ApiResult<Json<TeamDecisionView>> {
    Ok(Json(td::get(&state.pool, &who, id).await?))
}

/// An eligible agent votes as itself, or changes its vote while the
/// decision is open. The last eligible vote commits the decision.
///
/// Roles: agent (as itself).
#[utoipa::path(
    post,
    path = "/v1/team-decisions/{id}/votes",
    tag = "team-decisions",
    operation_id = "vote_team_decision",
    params(("id" = Uuid, Path, description = "Team decision id")),
    request_body = VoteRequest,
    responses(
        (status = 200, description = "Counted (and maybe committed)", body = TeamDecisionView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, description = "Not an agent token, or an agent not eligible", body = doc::ErrorBody),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The decision is closed (`invalid_state`): committed, cancelled, or its window passed", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn vote(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<VoteRequest>,
) -> ApiResult<Json<TeamDecisionView>> {
    Ok(Json(td::vote(&state.pool, &who, id, req).await?))
}

/// Withdraws an open decision, with a reason.
///
/// Roles: its proposer, admin, operator.
#[utoipa::path(
    post,
    path = "/v1/team-decisions/{id}/cancel",
    tag = "team-decisions",
    operation_id = "cancel_team_decision",
    params(("id" = Uuid, Path, description = "Team decision id")),
    request_body = CancelRequest,
    responses(
        (status = 200, description = "Cancelled", body = TeamDecisionView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "Already closed (`invalid_state`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn cancel(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<CancelRequest>,
) -> ApiResult<Json<TeamDecisionView>> {
    Ok(Json(td::cancel(&state.pool, &who, id, req).await?))
}

/// The decision's ADR: markdown rendered from the committed record.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/team-decisions/{id}/adr",
    tag = "team-decisions",
    operation_id = "get_team_decision_adr",
    params(("id" = Uuid, Path, description = "Team decision id")),
    responses(
        (status = 200, description = "The ADR", body = String, content_type = "text/markdown"),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "Not committed (`team_decision_not_committed`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn adr(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<impl IntoResponse> {
    let md = td::adr(&state.pool, &who, id).await?;
    Ok(([(header::CONTENT_TYPE, "text/markdown; charset=utf-8")], md))
}

// ---- How team decision errors reach the client: status, code and details
// of the one JSON error body.

use serde_json::{Value, json};

use crate::{coordination::team_decisions::TeamDecisionError, error::ApiError};

impl From<TeamDecisionError> for ApiError {
    fn from(e: TeamDecisionError) -> Self {
        let message = e.to_string();
        let conflict = |code| ApiError::Conflict {
            code,
            message: message.clone(),
            details: Value::Null,
        };
        match e {
            TeamDecisionError::Invalid(e) => e.into(),
            TeamDecisionError::Forbidden(_) | TeamDecisionError::NotEligible { .. } => {
                ApiError::Forbidden(message)
            }
            TeamDecisionError::NotFound { .. } => ApiError::NotFound(message),
            TeamDecisionError::IdReused { .. } => conflict("team_decision_id_reused"),
            TeamDecisionError::NoEligibleAgents => ApiError::Unprocessable {
                code: "no_eligible_agents",
                message,
                details: json!({ "field": "eligible_agents" }),
            },
            TeamDecisionError::ConcurrentUpdate(_) => conflict("concurrent_update"),
            TeamDecisionError::IllegalTransition(e) => e.into(),
            TeamDecisionError::NotCommitted { .. } => conflict("team_decision_not_committed"),
            TeamDecisionError::Database(e) => e.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::response::IntoResponse;
    use uuid::Uuid;

    use super::*;

    /// The status and the body's `error` object a client gets for `e`.
    async fn rendered(e: ApiError) -> (StatusCode, Value) {
        let response = e.into_response();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("an error body is small");
        let body: Value = serde_json::from_slice(&body).expect("an error body is JSON");
        (status, body["error"].clone())
    }

    #[tokio::test]
    async fn team_decision_errors_keep_their_status_code_and_details() {
        let id = Uuid::nil();
        let (status, error) = rendered(
            TeamDecisionError::NotCommitted {
                id,
                status: "open".into(),
            }
            .into(),
        )
        .await;
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(error["code"], "team_decision_not_committed");
        assert_eq!(
            error["message"],
            format!("team decision {id} is open; only a committed one has an ADR")
        );
        let (status, error) = rendered(TeamDecisionError::NoEligibleAgents.into()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(error["code"], "no_eligible_agents");
        assert_eq!(error["details"], json!({ "field": "eligible_agents" }));
        let refused = td::TeamDecisionStatus::Committed
            .next(td::TeamDecisionEvent::Vote)
            .expect_err("a committed decision takes no votes");
        let (status, error) = rendered(TeamDecisionError::from(refused).into()).await;
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(error["code"], "invalid_state");
    }
}
