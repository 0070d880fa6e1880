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
    coordination::organisation,
    error::{ApiError, ApiResult},
    store::{
        agents::{self, AgentRow, NewAgent},
        messages, reservations,
    },
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, register))
        .routes(routes!(show))
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

/// `POST /v1/agents` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct RegisterAgent {
    /// Unique id in the workspace: 1–128 letters, digits, `.`, `_`, `:` or `-`,
    /// starting with a letter or digit.
    agent_id: String,
    /// Role, free text of 1–64 characters (e.g. `researcher`).
    role: String,
    /// Skills (at most 100, each 1–64 characters).
    #[serde(default)]
    skills: Vec<String>,
    /// Tools (at most 100, each 1–64 characters).
    #[serde(default)]
    tools: Vec<String>,
    /// Worker base URL (http or https); tasks are sent to `{endpoint_url}/v1/tasks`. No userinfo, query string or fragment; its address must be inside the service's agent networks (`--agent-networks`, loopback by default).
    endpoint_url: String,
    /// Most tasks at once.
    #[serde(default = "one")]
    #[schema(minimum = 1, maximum = 10000, default = 1)]
    max_concurrency: i32,
    /// Model name, if any.
    #[serde(default)]
    model: Option<String>,
    /// Model tier, 0–10 (higher is stronger; default 1).
    #[serde(default)]
    #[schema(minimum = 0, maximum = 10)]
    model_tier: Option<i32>,
    /// Trust in [0, 1] (default 0.5).
    #[serde(default)]
    #[schema(minimum = 0, maximum = 1)]
    trust: Option<f64>,
    /// Cost per task, non-negative (default 0).
    #[serde(default)]
    #[schema(minimum = 0)]
    cost_per_task: Option<f64>,
    /// Promise a heartbeat at least this often; silent longer, the agent goes offline.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 86400)]
    heartbeat_timeout_secs: Option<i32>,
}

fn one() -> i32 {
    1
}

fn valid_agent_id(id: &str) -> bool {
    let mut chars = id.chars();
    id.len() <= 128
        && chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'))
}

fn check_names(field: &str, names: &[String]) -> ApiResult<()> {
    if names.len() > 100 {
        return Err(ApiError::invalid(field, format!("at most 100 {field}")));
    }
    if let Some(bad) = names.iter().find(|s| s.trim().is_empty() || s.len() > 64) {
        return Err(ApiError::invalid(
            field,
            format!("each of {field} must be 1–64 characters (got '{bad}')"),
        ));
    }
    Ok(())
}

/// Checks an agent's base URL against its shape rules and the agent egress
/// policy (names are resolved now; again at every call).
async fn check_endpoint(state: &AppState, url: &reqwest::Url) -> ApiResult<()> {
    const FIELD: &str = "endpoint_url";
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ApiError::invalid(
            FIELD,
            "endpoint_url must not carry credentials (user:pass@); workers authenticate the service by the callback token",
        ));
    }
    // The service appends its own routes (`/v1/tasks`, …) to the base URL: a
    // query or fragment would swallow them and aim the call elsewhere.
    if url.query().is_some() {
        return Err(ApiError::invalid(
            FIELD,
            "endpoint_url must not have a query string: the service appends its own routes (/v1/tasks, …) to the base URL",
        ));
    }
    if url.fragment().is_some() {
        return Err(ApiError::invalid(
            FIELD,
            "endpoint_url must not have a fragment (#…): the service appends its own routes (/v1/tasks, …) to the base URL",
        ));
    }
    state
        .http
        .policy()
        .admit(url)
        .await
        .map_err(|why| ApiError::invalid(FIELD, format!("endpoint_url refused: {why}")))
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
    who.require(&[Role::Admin, Role::Operator, Role::Worker])?;
    if !valid_agent_id(&req.agent_id) {
        return Err(ApiError::invalid(
            "agent_id",
            "agent_id must be 1–128 characters: letters, digits, '.', '_', ':' or '-', starting with a letter or digit",
        ));
    }
    if req.role.trim().is_empty() || req.role.len() > 64 {
        return Err(ApiError::invalid("role", "role must be 1–64 characters"));
    }
    check_names("skills", &req.skills)?;
    check_names("tools", &req.tools)?;
    let url = reqwest::Url::parse(&req.endpoint_url).map_err(|e| {
        ApiError::invalid("endpoint_url", format!("endpoint_url is not a URL: {e}"))
    })?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
        return Err(ApiError::invalid(
            "endpoint_url",
            "endpoint_url must be an http(s) URL with a host",
        ));
    }
    check_endpoint(&state, &url).await?;
    if !(1..=10_000).contains(&req.max_concurrency) {
        return Err(ApiError::invalid(
            "max_concurrency",
            "max_concurrency must be between 1 and 10000",
        ));
    }
    let tier = req.model_tier.unwrap_or(1);
    if !(0..=10).contains(&tier) {
        return Err(ApiError::invalid(
            "model_tier",
            "model_tier must be between 0 and 10",
        ));
    }
    let trust = req.trust.unwrap_or(0.5);
    if !(0.0..=1.0).contains(&trust) {
        return Err(ApiError::invalid("trust", "trust must be between 0 and 1"));
    }
    let cost = req.cost_per_task.unwrap_or(0.0);
    if !cost.is_finite() || cost < 0.0 {
        return Err(ApiError::invalid(
            "cost_per_task",
            "cost_per_task must be a non-negative number",
        ));
    }
    if let Some(t) = req.heartbeat_timeout_secs
        && !(1..=86_400).contains(&t)
    {
        return Err(ApiError::invalid(
            "heartbeat_timeout_secs",
            "heartbeat_timeout_secs must be between 1 and 86400",
        ));
    }
    // The organisation spec may cap the role; the check and the insert share
    // the workspace's role lock.
    let mut tx = state.pool.begin().await?;
    organisation::admit_role(&mut tx, who.workspace_id, req.role.trim()).await?;
    let row = agents::insert(
        &mut tx,
        who.workspace_id,
        NewAgent {
            agent_id: &req.agent_id,
            role: req.role.trim(),
            skills: &req.skills,
            tools: &req.tools,
            model: req.model.as_deref(),
            model_tier: tier,
            endpoint_url: url.as_str().trim_end_matches('/'),
            max_concurrency: req.max_concurrency,
            trust,
            cost_per_task: cost,
            heartbeat_timeout_secs: req.heartbeat_timeout_secs,
        },
    )
    .await?
    .ok_or_else(|| ApiError::Conflict {
        code: "agent_exists",
        message: format!("an agent with id '{}' is already registered", req.agent_id),
        details: json!({ "agent_id": req.agent_id }),
    })?;
    tx.commit().await?;
    Ok((StatusCode::CREATED, Json(row)))
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
    /// The state the agent reports: `idle`, `working`, `blocked` or `done` (RFC-001). Informational: dispatch only skips `offline` agents, and the engine sets `working`/`idle` as attempts start and end.
    #[serde(default)]
    status: Option<String>,
}

/// Statuses an agent may report about itself (offline is the coordinator's verdict).
const REPORTABLE: &[&str] = &["idle", "working", "blocked", "done"];

/// Records that the agent is alive (an offline agent comes back), optionally with the state it reports.
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
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn heartbeat(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
    super::extract::RawBody(body): super::extract::RawBody,
) -> ApiResult<StatusCode> {
    who.require_self_or(&agent_id, &[Role::Admin, Role::Operator, Role::Worker])?;
    let beat: Heartbeat = if body.iter().all(u8::is_ascii_whitespace) {
        Heartbeat::default()
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| ApiError::invalid("body", format!("invalid heartbeat body: {e}")))?
    };
    if let Some(s) = &beat.status
        && !REPORTABLE.contains(&s.as_str())
    {
        return Err(ApiError::invalid(
            "status",
            format!("status must be one of {}", REPORTABLE.join(", ")),
        ));
    }
    if agents::heartbeat(
        &state.pool,
        who.workspace_id,
        &agent_id,
        beat.status.as_deref(),
    )
    .await?
    {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!("no agent '{agent_id}'")))
    }
}

/// `GET /v1/agents` answer.
#[derive(utoipa::ToSchema)]
pub struct AgentList {
    /// Every agent of the workspace.
    pub agents: Vec<AgentRow>,
}

#[cfg(test)]
mod tests {
    use super::valid_agent_id;

    #[test]
    fn agent_ids() {
        assert!(valid_agent_id("researcher-1"));
        assert!(valid_agent_id("team.a:writer_2"));
        assert!(!valid_agent_id(""));
        assert!(!valid_agent_id("-lead"));
        assert!(!valid_agent_id("has space"));
        assert!(!valid_agent_id(&"a".repeat(129)));
    }
}
