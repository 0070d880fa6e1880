//! `/v1/agents`: the agent registry.

use axum::{extract::State, http::StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    AppState, doc,
    extract::{Json, Path},
};
use crate::{
    auth::{Principal, Role},
    coordination::agents::{self as use_case, AgentError, RegisterAgent, UpdateAgent},
    error::{ApiError, ApiResult},
    store::{
        agents::{self, AgentRow},
        messages, reservations,
    },
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, register))
        .routes(routes!(show, update, retire))
        .routes(routes!(heartbeat))
        .routes(routes!(status))
}

/// Everything an agent holds and owes, in one view (RFC-001's unified status).
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct AgentStatus {
    /// The agent.
    pub agent: AgentRow,
    /// Unfinished tasks assigned to it.
    pub tasks: Vec<agents::HeldTask>,
    /// Inbox counts.
    pub inbox: messages::InboxCounts,
    /// Unread messages, oldest first (at most 100).
    pub unread: Vec<messages::InboxEntry>,
    /// Messages needing its ack (`BLOCKED`, `HANDOFF`) it has not given, oldest first (at most 100).
    pub unacked: Vec<messages::InboxEntry>,
    /// Reservations it holds now.
    pub reservations: Vec<reservations::ReservationView>,
}

/// The agent's unified status: the tasks it holds, its unread and un-acked messages, and its live reservations.
///
/// Roles: admin, operator, stakeholder, worker, or the agent's own token.
#[utoipa::path(
    get,
    path = "/v1/agents/{agent_id}/status",
    tag = "agents",
    operation_id = "get_agent_status",
    params(("agent_id" = String, Path, description = "Agent id")),
    responses(
        (status = 200, description = "The status", body = AgentStatus),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn status(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
) -> ApiResult<Json<AgentStatus>> {
    who.require_self_or(
        &agent_id,
        &[Role::Admin, Role::Operator, Role::Stakeholder, Role::Worker],
    )?;
    let agent = agents::get(&state.pool, who.workspace_id, &agent_id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no agent '{agent_id}'")))?;
    // One snapshot, so the parts agree with each other.
    let mut tx = state.pool.begin().await?;
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .execute(&mut *tx)
        .await?;
    let ws = who.workspace_id;
    let tasks = agents::held_tasks(&mut tx, ws, &agent_id).await?;
    let inbox = messages::inbox_counts(&mut tx, ws, &agent_id).await?;
    let unread_filter = messages::InboxFilter {
        state: Some("unread".into()),
        ..Default::default()
    };
    let unread = messages::inbox(&mut tx, ws, &agent_id, &unread_filter, 100).await?;
    let unacked_filter = messages::InboxFilter {
        unacked: true,
        ..Default::default()
    };
    let unacked = messages::inbox(&mut tx, ws, &agent_id, &unacked_filter, 100).await?;
    let now = reservations::now(&mut tx).await?;
    let filter = reservations::ReservationFilter {
        state: Some("active".into()),
        agent_id: Some(agent_id.clone()),
        ..Default::default()
    };
    let held = reservations::list(&mut tx, ws, &filter, 500)
        .await?
        .into_iter()
        .filter(|r| r.expires_at > now)
        .collect();
    tx.commit().await?;
    Ok(Json(AgentStatus {
        agent,
        tasks,
        inbox,
        unread,
        unacked,
        reservations: held,
    }))
}

/// Registers an agent.
///
/// Roles: admin, operator, worker.
#[utoipa::path(
    post,
    path = "/v1/agents",
    tag = "agents",
    operation_id = "register_agent",
    request_body = RegisterAgent,
    responses(
        (status = 201, description = "Registered", body = AgentRow),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 409, description = "An agent with this id is already registered (`agent_exists`), or the organisation spec's cardinality for its role is reached (`role_full`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn register(
    State(state): State<AppState>,
    who: Principal,
    Json(req): Json<RegisterAgent>,
) -> ApiResult<(StatusCode, Json<AgentRow>)> {
    let row = use_case::register(&state.pool, &state.http, &who, req).await?;
    Ok((StatusCode::CREATED, Json(row)))
}

/// Changes an agent in place: any of its role, display name, skills, tools, endpoint, concurrency cap, model, tier, trust, cost, heartbeat promise and status, each validated as at registration (the endpoint against the agent egress policy, the role against the organisation spec's cardinality). An `agent.updated` event names each changed field; a request that changes nothing writes nothing.
///
/// Give `version` (as read) to refuse the change if someone else changed the agent since. An agent token may change only its own agent's `display_name`, `max_concurrency` and `status`, and cannot bring itself back from `retired`. Setting `status` to `offline` takes the agent out of rotation until its next heartbeat; from `retired`, an operator's new status brings it back.
///
/// Roles: admin, operator, or the agent's own token (its own fields).
#[utoipa::path(
    patch,
    path = "/v1/agents/{agent_id}",
    tag = "agents",
    operation_id = "update_agent",
    params(("agent_id" = String, Path, description = "Agent id")),
    request_body = UpdateAgent,
    responses(
        (status = 200, description = "The agent as changed", body = AgentRow),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The agent changed since the `version` given (`version_conflict`), the organisation spec's cardinality for the role is reached (`role_full`), or an agent tried to bring itself back from retirement (`agent_retired`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn update(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
    Json(req): Json<UpdateAgent>,
) -> ApiResult<Json<AgentRow>> {
    Ok(Json(
        use_case::update(&state.pool, &state.http, &who, &agent_id, req).await?,
    ))
}

/// Retires an agent: it stays, with its history, but takes no new work; its live attempts finish (or time out and move on), tasks waiting pinned to it go to the escalation ladder, and its heartbeats are refused (409). An `agent.retired` event is written; retiring a retired agent changes nothing. An operator brings it back with `PATCH` of its status.
///
/// Roles: admin, operator.
#[utoipa::path(
    delete,
    path = "/v1/agents/{agent_id}",
    tag = "agents",
    operation_id = "retire_agent",
    params(("agent_id" = String, Path, description = "Agent id")),
    responses(
        (status = 200, description = "The agent, retired", body = AgentRow),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn retire(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
) -> ApiResult<Json<AgentRow>> {
    Ok(Json(use_case::retire(&state.pool, &who, &agent_id).await?))
}

/// Lists the agents of the workspace.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/agents",
    tag = "agents",
    operation_id = "list_agents",
    responses(
        (status = 200, description = "Every agent", body = AgentList),
        (status = 401, response = doc::Unauthorized)
    ),
    security(("api_token" = []))
)]
async fn list(State(state): State<AppState>, who: Principal) -> ApiResult<Json<Value>> {
    let rows = agents::list(&state.pool, who.workspace_id).await?;
    Ok(Json(json!({ "agents": rows })))
}

/// Shows one agent.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/agents/{agent_id}",
    tag = "agents",
    operation_id = "get_agent",
    params(("agent_id" = String, Path, description = "Agent id")),
    responses(
        (status = 200, description = "The agent", body = AgentRow),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn show(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
) -> ApiResult<Json<AgentRow>> {
    agents::get(&state.pool, who.workspace_id, &agent_id)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::NotFound(format!("no agent '{agent_id}'")))
}

/// `POST /v1/agents/{agent_id}/heartbeat` body (optional).
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = AgentHeartbeat)]
struct Heartbeat {
    /// The state the agent reports: `idle`, `working`, `blocked` or `done` (RFC-001). Informational: dispatch only skips `offline` and `retired` agents, and the engine sets `working`/`idle` as attempts start and end.
    #[serde(default)]
    #[schema(schema_with = reportable_statuses)]
    status: Option<String>,
}

/// The statuses an agent may report: those [`AgentStatus::reportable`] allows.
fn reportable_statuses() -> utoipa::openapi::Object {
    let names: Vec<&str> = coordinator_core::agents::AgentStatus::ALL
        .iter()
        .filter(|s| s.reportable())
        .map(|s| s.as_str())
        .collect();
    coordinator_core::domain::string_enum(&names)
}

/// Records that the agent is alive (an offline agent comes back; a retired one does not), optionally with the state it reports.
///
/// Agent tokens may only speak for their own agent.
///
/// Roles: admin, operator, worker, or the agent's own token.
#[utoipa::path(
    post,
    path = "/v1/agents/{agent_id}/heartbeat",
    tag = "agents",
    operation_id = "agent_heartbeat",
    params(("agent_id" = String, Path, description = "Agent id")),
    request_body(content = Option<Heartbeat>, description = "Optional: the state the agent reports"),
    responses(
        (status = 204, description = "Recorded"),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The agent is retired (`agent_retired`): only an operator brings it back", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn heartbeat(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
    super::extract::RawBody(body): super::extract::RawBody,
) -> ApiResult<StatusCode> {
    let beat: Heartbeat = super::extract::parse_optional_body(&body)?;
    use_case::heartbeat(&state.pool, &who, &agent_id, beat.status.as_deref()).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// `GET /v1/agents` answer.
#[derive(utoipa::ToSchema)]
pub struct AgentList {
    /// Every agent of the workspace.
    pub agents: Vec<AgentRow>,
}

impl From<AgentError> for ApiError {
    fn from(e: AgentError) -> Self {
        let message = e.to_string();
        match e {
            AgentError::Invalid(e) => e.into(),
            AgentError::Forbidden(e) => e.into(),
            AgentError::NotFound(_) => ApiError::NotFound(message),
            AgentError::Exists(agent_id) => ApiError::Conflict {
                code: "agent_exists",
                message,
                details: json!({ "agent_id": agent_id }),
            },
            AgentError::Organisation(e) => e.into(),
            AgentError::VersionConflict {
                agent_id,
                expected,
                current,
            } => ApiError::Conflict {
                code: "version_conflict",
                message,
                details: json!({ "agent_id": agent_id, "expected": expected, "current": current }),
            },
            AgentError::Retired(agent_id) => ApiError::Conflict {
                code: "agent_retired",
                message,
                details: json!({ "agent_id": agent_id }),
            },
            AgentError::Database(e) => e.into(),
        }
    }
}
