//! Goal routes: adopt a goal, list them, change a goal's status.

use super::*;

/// Creates a goal.
///
/// Roles: admin, operator, or the agent itself.
#[utoipa::path(
    post,
    path = "/v1/agents/{agent_id}/goals",
    tag = "bdi",
    operation_id = "create_goal",
    params(("agent_id" = String, Path, description = "Agent id")),
    request_body = CreateGoal,
    responses(
        (status = 201, description = "Created", body = GoalView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The parent goal is no longer active (`invalid_state`)", body = doc::ErrorBody),
        (status = 422, description = "Unknown tier (`invalid_value`), a tier above its parent's (`invalid_tier`), unknown parent or desire", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
pub(crate) async fn create_goal(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
    Json(req): Json<CreateGoal>,
) -> ApiResult<(StatusCode, Json<GoalView>)> {
    require_writer(&who, &agent_id)?;
    let input = req.input()?;
    let mut tx = state.pool.begin().await?;
    let goal =
        state::create_goal(&mut tx, who.workspace_id, &agent_id, input, &who.actor()).await?;
    tx.commit().await?;
    Ok((StatusCode::CREATED, Json(goal)))
}

/// An agent's goals.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct GoalList {
    /// Oldest first.
    pub goals: Vec<GoalView>,
}

/// An agent's goals.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/agents/{agent_id}/goals",
    tag = "bdi",
    operation_id = "list_goals",
    params(("agent_id" = String, Path, description = "Agent id")),
    responses(
        (status = 200, description = "Goals", body = GoalList),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
pub(crate) async fn list_goals(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
) -> ApiResult<Json<GoalList>> {
    let mut conn = state.pool.acquire().await?;
    state::require_agent(&mut conn, who.workspace_id, &agent_id).await?;
    let goals = store::list_goals(&mut conn, who.workspace_id, &agent_id).await?;
    Ok(Json(GoalList { goals }))
}

/// `POST …/status` body of a goal.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetStatus {
    /// The new status.
    #[schema(value_type = coordinator_core::bdi::GoalStatus)]
    pub status: String,
    /// The version read; a different current version is a 409 `version_conflict`.
    #[serde(default)]
    pub version: Option<i64>,
}

/// Moves a goal: `active` → `achieved` or `abandoned` (both final).
///
/// Roles: admin, operator, or the agent itself.
#[utoipa::path(
    post,
    path = "/v1/agents/{agent_id}/goals/{goal_id}/status",
    tag = "bdi",
    operation_id = "set_goal_status",
    params(
        ("agent_id" = String, Path, description = "Agent id"),
        ("goal_id" = Uuid, Path, description = "Goal id")
    ),
    request_body = SetStatus,
    responses(
        (status = 200, description = "Moved", body = GoalView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "Illegal transition (`invalid_state`) or stale version (`version_conflict`)", body = doc::ErrorBody),
        (status = 422, description = "Unknown status (`invalid_value`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
pub(crate) async fn goal_status(
    State(state): State<AppState>,
    who: Principal,
    Path((agent_id, goal_id)): Path<(String, Uuid)>,
    Json(req): Json<SetStatus>,
) -> ApiResult<Json<GoalView>> {
    require_writer(&who, &agent_id)?;
    let to: GoalStatus = parse_value("status", &req.status)?;
    let mut tx = state.pool.begin().await?;
    let goal = state::set_goal_status(
        &mut tx,
        who.workspace_id,
        &agent_id,
        goal_id,
        to,
        req.version,
        &who.actor(),
    )
    .await?;
    tx.commit().await?;
    Ok(Json(goal))
}
