//! Desire routes: add, list, show and drop an agent's desires.

use super::*;

/// A created desire and the conflicts found.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DesireCreated {
    /// The desire, with its computed priority.
    pub desire: DesireView,
    /// Conflicts with the agent's active desires (reported, not refused).
    pub conflicts: Vec<DesireConflict>,
}

/// Creates a desire. Its priority is `0.30·base_priority + 0.25·importance + 0.25·urgency + 0.15·strategic_alignment + 0.05·dependency_status`; conflicts (resource, goal, strategy) with active desires are reported.
///
/// Roles: admin, operator, or the agent itself.
#[utoipa::path(
    post,
    path = "/v1/agents/{agent_id}/desires",
    tag = "bdi",
    operation_id = "create_desire",
    params(("agent_id" = String, Path, description = "Agent id")),
    request_body = CreateDesire,
    responses(
        (status = 201, description = "Created", body = DesireCreated),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 422, description = "A component outside [0, 1] or an unknown kind (`invalid_value`), an unknown served desire (`unknown_desire`), serves on a terminal desire (`invalid_desire`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
pub(crate) async fn create_desire(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
    Json(req): Json<CreateDesire>,
) -> ApiResult<(StatusCode, Json<DesireCreated>)> {
    require_writer(&who, &agent_id)?;
    let input = req.input()?;
    let mut tx = state.pool.begin().await?;
    let (desire, conflicts) =
        state::create_desire(&mut tx, who.workspace_id, &agent_id, input, &who.actor()).await?;
    tx.commit().await?;
    Ok((
        StatusCode::CREATED,
        Json(DesireCreated { desire, conflicts }),
    ))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct StatusParams {
    /// Only this status.
    pub(crate) status: Option<String>,
}

/// An agent's desires.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DesireList {
    /// Highest priority first.
    pub desires: Vec<DesireView>,
}

/// An agent's desires, highest priority first (`status=active` or `dropped` to filter).
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/agents/{agent_id}/desires",
    tag = "bdi",
    operation_id = "list_desires",
    params(("agent_id" = String, Path, description = "Agent id"), StatusParams),
    responses(
        (status = 200, description = "Desires", body = DesireList),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
pub(crate) async fn list_desires(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
    Query(p): Query<StatusParams>,
) -> ApiResult<Json<DesireList>> {
    let mut conn = state.pool.acquire().await?;
    state::require_agent(&mut conn, who.workspace_id, &agent_id).await?;
    let desires =
        store::list_desires(&mut conn, who.workspace_id, &agent_id, p.status.as_deref()).await?;
    Ok(Json(DesireList { desires }))
}

/// A desire with its drop record.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DesireDetail {
    /// The desire.
    pub desire: DesireView,
    /// Its drop record, once dropped.
    pub drop_record: Option<DropRecord>,
}

/// One desire, with its drop record when dropped.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/agents/{agent_id}/desires/{desire_id}",
    tag = "bdi",
    operation_id = "get_desire",
    params(
        ("agent_id" = String, Path, description = "Agent id"),
        ("desire_id" = Uuid, Path, description = "Desire id")
    ),
    responses(
        (status = 200, description = "The desire", body = DesireDetail),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
pub(crate) async fn show_desire(
    State(state): State<AppState>,
    who: Principal,
    Path((agent_id, desire_id)): Path<(String, Uuid)>,
) -> ApiResult<Json<DesireDetail>> {
    let mut conn = state.pool.acquire().await?;
    let desire = store::list_desires(&mut conn, who.workspace_id, &agent_id, None)
        .await?
        .into_iter()
        .find(|d| d.id == desire_id)
        .ok_or_else(|| ApiError::NotFound(format!("no desire {desire_id} of '{agent_id}'")))?;
    let drop_record = store::drop_record(&mut conn, who.workspace_id, desire_id).await?;
    Ok(Json(DesireDetail {
        desire,
        drop_record,
    }))
}

/// `POST …/desires/{desire_id}/drop` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DropDesire {
    /// Why (1–1000 characters).
    pub reason: String,
    /// The version read; a different current version is a 409 `version_conflict`.
    #[serde(default)]
    pub version: Option<i64>,
}

/// Drops a desire. Instrumental desires left serving only dropped desires are dropped with it (the cascade); each gets a drop record.
///
/// Roles: admin, operator, or the agent itself.
#[utoipa::path(
    post,
    path = "/v1/agents/{agent_id}/desires/{desire_id}/drop",
    tag = "bdi",
    operation_id = "drop_desire",
    params(
        ("agent_id" = String, Path, description = "Agent id"),
        ("desire_id" = Uuid, Path, description = "Desire id")
    ),
    request_body = DropDesire,
    responses(
        (status = 200, description = "The drop record", body = DropRecord),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "Already dropped (`invalid_state`) or a stale version (`version_conflict`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
pub(crate) async fn drop_desire(
    State(state): State<AppState>,
    who: Principal,
    Path((agent_id, desire_id)): Path<(String, Uuid)>,
    Json(req): Json<DropDesire>,
) -> ApiResult<Json<DropRecord>> {
    require_writer(&who, &agent_id)?;
    let mut tx = state.pool.begin().await?;
    let record = state::drop_desire(
        &mut tx,
        who.workspace_id,
        &agent_id,
        desire_id,
        &req.reason,
        req.version,
        &who.actor(),
    )
    .await?;
    tx.commit().await?;
    Ok(Json(record))
}
