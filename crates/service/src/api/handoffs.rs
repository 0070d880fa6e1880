//! `/v1` routes of handoffs: context handed between an agent and a person
//! with the task that changes hands.

use axum::{extract::State, http::StatusCode};
use serde::{Deserialize, Serialize};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{
    AppState, doc,
    extract::{Json, Path, Query},
    page::Limit,
};
use crate::{
    auth::Principal,
    coordination::handoffs::{self, CreateHandoff},
    error::{ApiError, ApiResult},
    store::handoffs::HandoffView,
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(show))
}

/// A list of handoffs.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct HandoffList {
    /// The handoffs, oldest first.
    pub handoffs: Vec<HandoffView>,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct ListParams {
    /// Only this task's handoffs.
    task: Option<Uuid>,
    /// Only this mission's handoffs.
    mission: Option<Uuid>,
    /// At most this many (1–500, default 500).
    #[serde(default)]
    #[param(inline)]
    limit: Limit<500, 500>,
}

/// Hands a task between an agent and a person, or between agents, with its context: `agent_to_human` moves the task to `awaiting_human` (ending a live attempt), `human_to_agent` queues it again for the named agent and sends that agent a HANDOFF message, `agent_to_agent` ends the caller's attempt (not a failure) and queues its running task pinned to the agent `to`, with the summary as the next dispatch's feedback.
///
/// Roles: `agent_to_human` admin, operator, agent (as itself only); `human_to_agent` admin, operator, stakeholder; `agent_to_agent` the attempt token of the task's dispatch.
#[utoipa::path(
    post,
    path = "/v1/handoffs",
    tag = "handoffs",
    operation_id = "create_handoff",
    request_body = CreateHandoff,
    responses(
        (status = 201, description = "Handed off", body = HandoffView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 409, description = "The task's status does not allow this direction, or the mission has ended (`invalid_state`); the task changed meanwhile (`conflict`, `concurrent_update`); the attempt ended (`stale_attempt`); the receiving agent is offline (`recipient_offline`) or prohibited from the task (`recipient_prohibited`)", body = doc::ErrorBody),
        (status = 422, description = "`task_id` names no task (`unknown_task`), `from` no agent (`unknown_agent`), or `to` no agent (`unknown_recipient`); `to` is the caller (`handoff_to_self`) or cannot do the task (`recipient_unable`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn create(
    State(state): State<AppState>,
    who: Principal,
    Json(req): Json<CreateHandoff>,
) -> ApiResult<(StatusCode, Json<HandoffView>)> {
    let h = handoffs::create(&state.pool, &state.http, &who, req).await?;
    Ok((StatusCode::CREATED, Json(h)))
}

/// Lists handoffs, optionally of one task or mission.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/handoffs",
    tag = "handoffs",
    operation_id = "list_handoffs",
    params(ListParams),
    responses(
        (status = 200, description = "The handoffs", body = HandoffList),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized)
    ),
    security(("api_token" = []))
)]
async fn list(
    State(state): State<AppState>,
    who: Principal,
    Query(p): Query<ListParams>,
) -> ApiResult<Json<HandoffList>> {
    let limit = p.limit.get()?;
    let handoffs = handoffs::list(&state.pool, &who, p.task, p.mission, limit).await?;
    Ok(Json(HandoffList { handoffs }))
}

/// Shows a handoff.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/handoffs/{id}",
    tag = "handoffs",
    operation_id = "get_handoff",
    params(("id" = Uuid, Path, description = "Handoff id")),
    responses(
        (status = 200, description = "The handoff", body = HandoffView),
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
) -> ApiResult<Json<HandoffView>> {
    Ok(Json(handoffs::get(&state.pool, &who, id).await?))
}

// ---- How handoff errors reach the client: status, code and details of
// the one JSON error body.

use serde_json::{Value, json};

use crate::coordination::handoffs::{HandoffError, Refusal};

impl From<HandoffError> for ApiError {
    fn from(e: HandoffError) -> Self {
        let message = e.to_string();
        match e {
            HandoffError::Invalid(e) => e.into(),
            HandoffError::Forbidden(_) | HandoffError::NotYours { .. } => {
                ApiError::Forbidden(message)
            }
            HandoffError::UnknownTask { task_id } => ApiError::Unprocessable {
                code: "unknown_task",
                message,
                details: json!({ "task_id": task_id }),
            },
            HandoffError::UnknownAgent { from } => ApiError::Unprocessable {
                code: "unknown_agent",
                message,
                details: json!({ "from": from }),
            },
            HandoffError::MissionOver { .. } => ApiError::Conflict {
                code: "invalid_state",
                message,
                details: Value::Null,
            },
            HandoffError::WrongTaskState { status, .. } => ApiError::Conflict {
                code: "invalid_state",
                message,
                details: json!({ "entity": "task", "status": status }),
            },
            HandoffError::NotFound { .. } => ApiError::NotFound(message),
            HandoffError::Refused(r) => refusal(r, message),
            HandoffError::StaleAttempt { attempt_id } => ApiError::Conflict {
                code: "stale_attempt",
                message,
                details: json!({ "attempt_id": attempt_id }),
            },
            HandoffError::TaskChanged => ApiError::conflict("concurrent_update", message),
            HandoffError::TaskMove(e) => e.into(),
            HandoffError::Message(e) => e.into(),
            HandoffError::Database(e) => e.into(),
        }
    }
}

/// A receiver that does not exist or names the caller is a bad request
/// (422); one that exists but cannot take the task now is a conflict (409).
fn refusal(r: Refusal, message: String) -> ApiError {
    let (conflict, code, details) = match &r {
        Refusal::ToSelf(a) => (false, "handoff_to_self", json!({ "to_agent": a })),
        Refusal::UnknownAgent(a) => (false, "unknown_recipient", json!({ "to_agent": a })),
        Refusal::Unable(a) => (false, "recipient_unable", json!({ "to_agent": a })),
        Refusal::Offline(a) => (true, "recipient_offline", json!({ "to_agent": a })),
        Refusal::Prohibited { agent, role } => (
            true,
            "recipient_prohibited",
            json!({ "to_agent": agent, "role": role }),
        ),
        Refusal::NoneInRole(role) => (true, "no_recipient", json!({ "to_role": role })),
    };
    if conflict {
        ApiError::Conflict {
            code,
            message,
            details,
        }
    } else {
        ApiError::Unprocessable {
            code,
            message,
            details,
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::response::IntoResponse;

    use super::*;
    use crate::domain::TaskStatus;

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
    async fn handoff_errors_keep_their_status_code_and_details() {
        let (status, error) = rendered(
            HandoffError::WrongTaskState {
                reason: "a succeeded task cannot be handed to a person".into(),
                status: TaskStatus::Succeeded,
            }
            .into(),
        )
        .await;
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(error["code"], "invalid_state");
        assert_eq!(
            error["details"],
            json!({ "entity": "task", "status": "succeeded" })
        );
        assert_eq!(
            error["message"],
            "a succeeded task cannot be handed to a person"
        );
        let task_id = Uuid::nil();
        let (status, error) = rendered(HandoffError::UnknownTask { task_id }.into()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(error["code"], "unknown_task");
        assert_eq!(error["details"], json!({ "task_id": task_id }));
        let (status, error) = rendered(
            HandoffError::NotYours {
                me: "a".into(),
                from: "b".into(),
            }
            .into(),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert_eq!(error["code"], "forbidden");
        let (status, error) =
            rendered(HandoffError::Refused(Refusal::ToSelf("a".into())).into()).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(error["code"], "handoff_to_self");
        let (status, error) =
            rendered(HandoffError::Refused(Refusal::Offline("b".into())).into()).await;
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(error["code"], "recipient_offline");
    }
}
