//! Missions as intentions: read and set a mission's commitment strategy.

use super::*;

/// A mission's commitment strategy.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Commitment {
    /// The mission.
    pub mission_id: Uuid,
    /// The effective strategy.
    pub strategy: CommitmentStrategy,
    /// Set explicitly (otherwise derived from autonomy: approve → cautious, autonomous → open-minded).
    pub explicit: bool,
}

/// A mission's commitment strategy: missions are intentions, and their replanning triggers consult it.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/missions/{id}/commitment",
    tag = "bdi",
    operation_id = "get_mission_commitment",
    params(("id" = Uuid, Path, description = "Mission id")),
    responses(
        (status = 200, description = "The strategy", body = Commitment),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
pub(crate) async fn show_commitment(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<Commitment>> {
    let mut conn = state.pool.acquire().await?;
    let (strategy, explicit) = bdi_missions::strategy_of(&mut conn, who.workspace_id, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no mission {id}")))?;
    Ok(Json(Commitment {
        mission_id: id,
        strategy,
        explicit,
    }))
}

/// `PUT /v1/missions/{id}/commitment` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutCommitment {
    /// `single-minded`, `open-minded` or `cautious`; null derives it from autonomy again.
    #[schema(value_type = Option<coordinator_core::bdi::CommitmentStrategy>)]
    pub strategy: Option<String>,
}

/// Sets a mission's commitment strategy.
///
/// Roles: admin, operator.
#[utoipa::path(
    put,
    path = "/v1/missions/{id}/commitment",
    tag = "bdi",
    operation_id = "put_mission_commitment",
    params(("id" = Uuid, Path, description = "Mission id")),
    request_body = PutCommitment,
    responses(
        (status = 200, description = "The strategy", body = Commitment),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 422, description = "Unknown strategy (`invalid_value`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
pub(crate) async fn put_commitment(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<PutCommitment>,
) -> ApiResult<Json<Commitment>> {
    who.require(&[Role::Admin, Role::Operator])?;
    let explicit: Option<CommitmentStrategy> = req
        .strategy
        .as_deref()
        .map(|s| parse_value("strategy", s))
        .transpose()?;
    let mut tx = state.pool.begin().await?;
    if !store::set_mission_commitment(&mut tx, who.workspace_id, id, explicit.map(|s| s.as_str()))
        .await?
    {
        return Err(ApiError::NotFound(format!("no mission {id}")));
    }
    let (strategy, explicit) = bdi_missions::strategy_of(&mut tx, who.workspace_id, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no mission {id}")))?;
    crate::store::events::record(
        &mut tx,
        who.workspace_id,
        crate::store::events::WorkspaceEvent::new(
            Some(id),
            None,
            &who.actor(),
            &crate::store::events::payloads::MissionCommitmentSet { strategy, explicit },
        ),
    )
    .await?;
    tx.commit().await?;
    Ok(Json(Commitment {
        mission_id: id,
        strategy,
        explicit,
    }))
}
