//! Intention routes: commit, list, change status, record progress, reconsider.

use super::*;

/// Commits to an intention with a commitment strategy.
///
/// Roles: admin, operator, or the agent itself.
#[utoipa::path(
    post,
    path = "/v1/agents/{agent_id}/intentions",
    tag = "bdi",
    operation_id = "commit_intention",
    params(("agent_id" = String, Path, description = "Agent id")),
    request_body = CommitIntention,
    responses(
        (status = 201, description = "Committed", body = IntentionView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The goal is no longer active (`invalid_state`)", body = doc::ErrorBody),
        (status = 422, description = "Unknown strategy or priority outside [0, 1] (`invalid_value`), unknown goal or desire", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
pub(crate) async fn commit_intention(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
    Json(req): Json<CommitIntention>,
) -> ApiResult<(StatusCode, Json<IntentionView>)> {
    require_writer(&who, &agent_id)?;
    let input = req.input()?;
    let mut tx = state.pool.begin().await?;
    let it =
        state::commit_intention(&mut tx, who.workspace_id, &agent_id, input, &who.actor()).await?;
    tx.commit().await?;
    Ok((StatusCode::CREATED, Json(it)))
}

/// An agent's intentions.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct IntentionList {
    /// Oldest first.
    pub intentions: Vec<IntentionView>,
}

/// An agent's intentions (`status=` to filter).
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/agents/{agent_id}/intentions",
    tag = "bdi",
    operation_id = "list_intentions",
    params(("agent_id" = String, Path, description = "Agent id"), StatusParams),
    responses(
        (status = 200, description = "Intentions", body = IntentionList),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
pub(crate) async fn list_intentions(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
    Query(p): Query<StatusParams>,
) -> ApiResult<Json<IntentionList>> {
    let mut conn = state.pool.acquire().await?;
    state::require_agent(&mut conn, who.workspace_id, &agent_id).await?;
    let intentions =
        store::list_intentions(&mut conn, who.workspace_id, &agent_id, p.status.as_deref()).await?;
    Ok(Json(IntentionList { intentions }))
}

/// Moves an intention: `active` ⇄ `suspended`, either → `dropped`, `active` → `achieved`.
///
/// Roles: admin, operator, or the agent itself.
#[utoipa::path(
    post,
    path = "/v1/agents/{agent_id}/intentions/{intention_id}/status",
    tag = "bdi",
    operation_id = "set_intention_status",
    params(
        ("agent_id" = String, Path, description = "Agent id"),
        ("intention_id" = Uuid, Path, description = "Intention id")
    ),
    request_body = IntentionStatusChange,
    responses(
        (status = 200, description = "Moved", body = IntentionView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "Illegal transition (`invalid_state`) or stale version (`version_conflict`)", body = doc::ErrorBody),
        (status = 422, description = "Unknown status (`invalid_value`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
pub(crate) async fn intention_status(
    State(state): State<AppState>,
    who: Principal,
    Path((agent_id, intention_id)): Path<(String, Uuid)>,
    Json(req): Json<IntentionStatusChange>,
) -> ApiResult<Json<IntentionView>> {
    require_writer(&who, &agent_id)?;
    let to: IntentionStatus = parse_value("status", &req.status)?;
    let mut tx = state.pool.begin().await?;
    let it = state::set_intention_status(
        &mut tx,
        who.workspace_id,
        &agent_id,
        intention_id,
        to,
        req.version,
        &who.actor(),
    )
    .await?;
    tx.commit().await?;
    Ok(Json(it))
}

/// `POST …/status` body of an intention.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IntentionStatusChange {
    /// The new status.
    #[schema(value_type = coordinator_core::bdi::IntentionStatus)]
    pub status: String,
    /// The version read; a different current version is a 409 `version_conflict`.
    #[serde(default)]
    pub version: Option<i64>,
}

/// `POST …/progress` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IntentionProgress {
    /// Fraction done, in [0, 1].
    #[schema(minimum = 0, maximum = 1)]
    pub progress: f64,
    /// The version read; a different current version is a 409 `version_conflict`.
    #[serde(default)]
    pub version: Option<i64>,
}

/// Records progress on an active intention (restarts its stall clock).
///
/// Roles: admin, operator, or the agent itself.
#[utoipa::path(
    post,
    path = "/v1/agents/{agent_id}/intentions/{intention_id}/progress",
    tag = "bdi",
    operation_id = "intention_progress",
    params(
        ("agent_id" = String, Path, description = "Agent id"),
        ("intention_id" = Uuid, Path, description = "Intention id")
    ),
    request_body = IntentionProgress,
    responses(
        (status = 200, description = "Recorded", body = IntentionView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "Not active (`invalid_state`) or stale version (`version_conflict`)", body = doc::ErrorBody),
        (status = 422, description = "Progress outside [0, 1] (`invalid_value`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
pub(crate) async fn intention_progress(
    State(state): State<AppState>,
    who: Principal,
    Path((agent_id, intention_id)): Path<(String, Uuid)>,
    Json(req): Json<IntentionProgress>,
) -> ApiResult<Json<IntentionView>> {
    require_writer(&who, &agent_id)?;
    let mut tx = state.pool.begin().await?;
    let it = state::record_progress(
        &mut tx,
        who.workspace_id,
        &agent_id,
        intention_id,
        req.progress,
        req.version,
        &who.actor(),
    )
    .await?;
    tx.commit().await?;
    Ok(Json(it))
}

/// `POST …/reconsider` body.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Reconsider {
    /// Current beliefs show it cannot be achieved.
    #[serde(default)]
    pub impossible: bool,
    /// An external blocker, or a resource conflict with a higher-priority intention.
    #[serde(default)]
    pub blocked: bool,
    /// Apply the verdict (suspend or drop the intention); default false: only answer.
    #[serde(default)]
    pub apply: bool,
}

/// `intention_reconsider`: keep, suspend or drop, by the strategy's thresholds (stall days 7 open-minded / 3 cautious; a competing desire above priority × 1.3 / 1.1; single-minded only drops when impossible).
///
/// Roles: admin, operator, or the agent itself.
#[utoipa::path(
    post,
    path = "/v1/agents/{agent_id}/intentions/{intention_id}/reconsider",
    tag = "bdi",
    operation_id = "reconsider_intention",
    params(
        ("agent_id" = String, Path, description = "Agent id"),
        ("intention_id" = Uuid, Path, description = "Intention id")
    ),
    request_body = Reconsider,
    responses(
        (status = 200, description = "The verdict", body = Reconsideration),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "Dropped or achieved already (`invalid_state`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
pub(crate) async fn reconsider(
    State(state): State<AppState>,
    who: Principal,
    Path((agent_id, intention_id)): Path<(String, Uuid)>,
    Json(req): Json<Reconsider>,
) -> ApiResult<Json<Reconsideration>> {
    require_writer(&who, &agent_id)?;
    let mut tx = state.pool.begin().await?;
    let r = state::reconsider_intention(
        &mut tx,
        who.workspace_id,
        &agent_id,
        intention_id,
        req.impossible,
        req.blocked,
        req.apply,
        &who.actor(),
    )
    .await?;
    tx.commit().await?;
    Ok(Json(r))
}
