//! Belief routes: record (revise) a belief, list them, read a belief's revisions.

use super::*;

/// A belief write's result.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BeliefWritten {
    /// `created`, `corroborated`, `revised` (higher certainty won), `rejected` (lower certainty, belief kept) or `conflict` (equal certainty, different content: kept and flagged).
    pub outcome: BeliefOutcome,
    /// The belief after the write.
    pub belief: BeliefView,
    /// The revision log entry written.
    pub revision: RevisionView,
}

/// Writes a belief under the revision rule: a contradicting write with higher certainty replaces it, a lower one is rejected, an equal one flags a conflict. Every write is logged.
///
/// Roles: admin, operator, or the agent itself.
#[utoipa::path(
    put,
    path = "/v1/agents/{agent_id}/beliefs",
    tag = "bdi",
    operation_id = "put_belief",
    params(("agent_id" = String, Path, description = "Agent id")),
    request_body = PutBelief,
    responses(
        (status = 201, description = "A new belief", body = BeliefWritten),
        (status = 200, description = "An existing belief was revised (see `outcome`)", body = BeliefWritten),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 422, description = "Certainty outside [0, 1] or an unknown category (`invalid_value`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
pub(crate) async fn put_belief(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
    Json(req): Json<PutBelief>,
) -> ApiResult<(StatusCode, Json<BeliefWritten>)> {
    require_writer(&who, &agent_id)?;
    let input = req.input()?;
    let mut tx = state.pool.begin().await?;
    let (outcome, belief, revision) =
        state::update_belief(&mut tx, who.workspace_id, &agent_id, input, &who.actor()).await?;
    tx.commit().await?;
    let code = if outcome == BeliefOutcome::Created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((
        code,
        Json(BeliefWritten {
            outcome,
            belief,
            revision,
        }),
    ))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct BeliefParams {
    /// Only this category.
    #[param(inline)]
    category: Option<BeliefCategory>,
    /// Only this subject.
    subject: Option<String>,
}

/// An agent's beliefs.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BeliefList {
    /// By subject.
    pub beliefs: Vec<BeliefView>,
}

/// An agent's beliefs, by subject.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/agents/{agent_id}/beliefs",
    tag = "bdi",
    operation_id = "list_beliefs",
    params(("agent_id" = String, Path, description = "Agent id"), BeliefParams),
    responses(
        (status = 200, description = "Beliefs", body = BeliefList),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
pub(crate) async fn list_beliefs(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
    Query(p): Query<BeliefParams>,
) -> ApiResult<Json<BeliefList>> {
    let mut conn = state.pool.acquire().await?;
    let beliefs = crate::bdi::evaluate::beliefs(
        &mut conn,
        who.workspace_id,
        &agent_id,
        p.category,
        p.subject.as_deref(),
    )
    .await?;
    Ok(Json(BeliefList { beliefs }))
}

/// A belief's revision log.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RevisionList {
    /// Oldest first.
    pub revisions: Vec<RevisionView>,
}

/// A belief's revision log: every write, with the old and offered values and the outcome.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/agents/{agent_id}/beliefs/{belief_id}/revisions",
    tag = "bdi",
    operation_id = "belief_revisions",
    params(
        ("agent_id" = String, Path, description = "Agent id"),
        ("belief_id" = Uuid, Path, description = "Belief id")
    ),
    responses(
        (status = 200, description = "Revisions", body = RevisionList),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
pub(crate) async fn belief_revisions(
    State(state): State<AppState>,
    who: Principal,
    Path((agent_id, belief_id)): Path<(String, Uuid)>,
) -> ApiResult<Json<RevisionList>> {
    let mut conn = state.pool.acquire().await?;
    let revisions = store::revisions(&mut conn, who.workspace_id, &agent_id, belief_id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no belief {belief_id} of '{agent_id}'")))?;
    Ok(Json(RevisionList { revisions }))
}
