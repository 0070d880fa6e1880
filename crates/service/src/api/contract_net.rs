//! `/v1` routes of the contract net: tenders (CFPs), proposals, awards, and
//! a mission's allocation setting (see [`crate::coordination::contract_net`]).

use axum::{extract::State, http::StatusCode};
use serde::Deserialize;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{
    AppState, doc,
    extract::{Json, Path, Query},
};
use crate::{
    auth::Principal,
    coordination::contract_net::{
        self as cnet, AllocationRequest, AllocationView, OpenTender, ProposalBody, ProposalView,
        TenderView,
    },
    error::ApiResult,
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, open))
        .routes(routes!(show))
        .routes(routes!(propose))
        .routes(routes!(award))
        .routes(routes!(set_allocation))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct ListParams {
    /// Only this mission's tenders.
    mission: Option<Uuid>,
    /// Only tenders with this status (`open`, `awarded`, `no_proposals`).
    #[param(value_type = Option<coordinator_core::contract_net::TenderStatus>)]
    status: Option<String>,
}

/// Lists tenders, newest first (at most 200), with proposals and rankings.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/tenders",
    tag = "contract-net",
    operation_id = "list_tenders",
    params(ListParams),
    responses(
        (status = 200, description = "Tenders", body = TenderList),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized)
    ),
    security(("api_token" = []))
)]
async fn list(
    State(state): State<AppState>,
    who: Principal,
    Query(p): Query<ListParams>,
) -> ApiResult<Json<TenderList>> {
    let tenders = cnet::list(&state.pool, &who, p.mission, p.status.as_deref()).await?;
    Ok(Json(TenderList { tenders }))
}

/// Tenders, newest first.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct TenderList {
    /// The tenders, with proposals and rankings.
    pub tenders: Vec<TenderView>,
}

/// Opens a tender (CFP) for a pending or queued task: PROPOSE notices go to
/// every eligible agent, and their workers are asked at `POST {endpoint}/v1/cfp`.
///
/// Roles: admin, operator.
#[utoipa::path(
    post,
    path = "/v1/tenders",
    tag = "contract-net",
    operation_id = "open_tender",
    request_body = OpenTender,
    responses(
        (status = 201, description = "Opened", body = TenderView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The task is not pending or queued (`invalid_state`) or has an open tender (`tender_open`)", body = doc::ErrorBody),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
async fn open(
    State(state): State<AppState>,
    who: Principal,
    Json(req): Json<OpenTender>,
) -> ApiResult<(StatusCode, Json<TenderView>)> {
    let t = cnet::open_for_task(&state.pool, &who, req).await?;
    Ok((StatusCode::CREATED, Json(t)))
}

/// Shows a tender with its proposals and their ranking.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/tenders/{id}",
    tag = "contract-net",
    operation_id = "get_tender",
    params(("id" = Uuid, Path, description = "Tender id")),
    responses(
        (status = 200, description = "The tender", body = TenderView),
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
) -> ApiResult<Json<TenderView>> {
    Ok(Json(cnet::get(&state.pool, &who, id).await?))
}

/// Submits a proposal before the deadline (an agent token proposes as
/// itself; others name `agent_id`). The same proposal twice is one.
///
/// Roles: agent, worker, operator, admin.
#[utoipa::path(
    post,
    path = "/v1/tenders/{id}/proposals",
    tag = "contract-net",
    operation_id = "submit_proposal",
    params(("id" = Uuid, Path, description = "Tender id")),
    request_body = ProposalBody,
    responses(
        (status = 201, description = "Recorded", body = ProposalView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "Deadline passed or tender closed (`tender_closed`), or the agent already proposed differently (`proposal_exists`)", body = doc::ErrorBody),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
async fn propose(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(body): Json<ProposalBody>,
) -> ApiResult<(StatusCode, Json<ProposalView>)> {
    let p = cnet::propose(&state.pool, &who, id, body).await?;
    Ok((StatusCode::CREATED, Json(p)))
}

/// Awards a tender now by the weighted formula (ACCEPT to the winner, REJECT
/// to the others, the task pinned to the winner), or closes it as
/// `no_proposals`. Awarding a closed tender returns it unchanged.
///
/// Roles: admin, operator.
#[utoipa::path(
    post,
    path = "/v1/tenders/{id}/award",
    tag = "contract-net",
    operation_id = "award_tender",
    params(("id" = Uuid, Path, description = "Tender id")),
    responses(
        (status = 200, description = "The closed tender", body = TenderView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn award(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<TenderView>> {
    Ok(Json(cnet::award(&state.pool, &who, id).await?))
}

/// Sets how a mission's tasks are allocated: `score` (default) or `tender`,
/// and the tender window.
///
/// Roles: admin, operator.
#[utoipa::path(
    put,
    path = "/v1/missions/{id}/allocation",
    tag = "contract-net",
    operation_id = "set_mission_allocation",
    params(("id" = Uuid, Path, description = "Mission id")),
    request_body = AllocationRequest,
    responses(
        (status = 200, description = "The setting in force", body = AllocationView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The mission has ended (`invalid_state`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn set_allocation(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<AllocationRequest>,
) -> ApiResult<Json<AllocationView>> {
    Ok(Json(
        cnet::set_allocation(&state.pool, &who, id, req).await?,
    ))
}

// ---- How contract-net errors reach the client: status, code and details
// of the one JSON error body.

use serde_json::{Value, json};

use crate::{coordination::contract_net::TenderError, error::ApiError};

impl From<TenderError> for ApiError {
    fn from(e: TenderError) -> Self {
        let message = e.to_string();
        let conflict = |code, details| ApiError::Conflict {
            code,
            message: message.clone(),
            details,
        };
        match e {
            TenderError::Invalid(e) => e.into(),
            TenderError::UnknownStatus(e) => e.into(),
            TenderError::Forbidden(_) | TenderError::NotYours => ApiError::Forbidden(message),
            TenderError::NotFound { .. } => ApiError::NotFound(message),
            TenderError::TaskStarted { .. } | TenderError::MissionOver { .. } => {
                conflict("invalid_state", Value::Null)
            }
            TenderError::AlreadyOpen => conflict("tender_open", Value::Null),
            TenderError::AlreadyClosed => conflict("tender_closed", Value::Null),
            TenderError::VersionConflict => conflict("version_conflict", Value::Null),
            TenderError::NoEligibleAgents {
                required_skills,
                required_tools,
            } => ApiError::Unprocessable {
                code: "no_eligible_agents",
                message,
                details: json!({ "required_skills": required_skills, "required_tools": required_tools }),
            },
            TenderError::ProposalExists { proposal_id, .. } => {
                conflict("proposal_exists", json!({ "proposal_id": proposal_id }))
            }
            TenderError::Closed {
                status, deadline, ..
            } => conflict(
                "tender_closed",
                json!({ "status": status, "deadline": deadline }),
            ),
            TenderError::NotEligible {
                agent_id,
                eligible_agents,
            } => ApiError::Unprocessable {
                code: "not_eligible",
                message,
                details: json!({ "agent_id": agent_id, "eligible_agents": eligible_agents }),
            },
            TenderError::Message(e) => e.into(),
            TenderError::Database(e) => e.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::response::IntoResponse;

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
    async fn tender_errors_keep_their_status_code_and_details() {
        let tender_id = Uuid::nil();
        let (status, error) = rendered(
            TenderError::Closed {
                tender_id,
                status: "open".into(),
                deadline: "2026-01-01T00:00:00Z".into(),
            }
            .into(),
        )
        .await;
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(error["code"], "tender_closed");
        assert_eq!(
            error["message"],
            format!(
                "tender {tender_id} is past its deadline (deadline 2026-01-01T00:00:00Z); late proposals are refused"
            )
        );
        assert_eq!(
            error["details"],
            json!({ "status": "open", "deadline": "2026-01-01T00:00:00Z" })
        );
        let (status, error) = rendered(
            TenderError::NotEligible {
                agent_id: "bob".into(),
                eligible_agents: vec!["alice".into()],
            }
            .into(),
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(error["code"], "not_eligible");
        assert_eq!(
            error["details"],
            json!({ "agent_id": "bob", "eligible_agents": ["alice"] })
        );
        let (status, error) = rendered(
            TenderError::from(coordinator_core::contract_net::check_window(5).unwrap_err()).into(),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert_eq!(error["details"], json!({ "field": "window_ms" }));
    }
}
