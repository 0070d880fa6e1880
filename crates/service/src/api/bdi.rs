//! BDI state per agent under `/v1/agents/{agent_id}/…` (beliefs, desires,
//! goals, intentions), the BDI maintenance job under `/v1/bdi/…`, and a
//! mission's commitment strategy (`/v1/missions/{id}/commitment`).
//!
//! Enum-valued fields are taken as text and parsed here so that an unknown
//! value (a strategy `reckless`) is a 422 `invalid_value`, like a number
//! outside [0, 1] (a certainty 1.4).

use std::str::FromStr;

use axum::{
    Router,
    extract::State,
    http::StatusCode,
    routing::{get, post},
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

use super::{
    AppState,
    extract::{Json, Path, Query},
    openapi as doc,
};
use crate::{
    auth::{Principal, Role},
    bdi::{
        missions as bdi_missions,
        rules::{
            BeliefCategory, BeliefOutcome, CommitmentStrategy, DesireConflict, DesireKind,
            GoalStatus, GoalTier, IntentionStatus, PriorityInputs,
        },
        runtime::{self, CycleOutcome},
        state::{self, BeliefWrite, DesireCreate, GoalCreate, IntentionCreate, Reconsideration},
    },
    domain::UnknownValue,
    error::{ApiError, ApiResult},
    store::bdi::{
        self as store, BeliefView, ConflictView, CycleView, DesireView, DropRecord, GoalView,
        IntentionView, RevisionView,
    },
};

/// Routes of this resource.
pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/v1/agents/{agent_id}/beliefs",
            get(list_beliefs).put(put_belief),
        )
        .route(
            "/v1/agents/{agent_id}/beliefs/{belief_id}/revisions",
            get(belief_revisions),
        )
        .route(
            "/v1/agents/{agent_id}/desires",
            get(list_desires).post(create_desire),
        )
        .route(
            "/v1/agents/{agent_id}/desires/{desire_id}",
            get(show_desire),
        )
        .route(
            "/v1/agents/{agent_id}/desires/{desire_id}/drop",
            post(drop_desire),
        )
        .route(
            "/v1/agents/{agent_id}/goals",
            get(list_goals).post(create_goal),
        )
        .route(
            "/v1/agents/{agent_id}/goals/{goal_id}/status",
            post(goal_status),
        )
        .route(
            "/v1/agents/{agent_id}/intentions",
            get(list_intentions).post(commit_intention),
        )
        .route(
            "/v1/agents/{agent_id}/intentions/{intention_id}/status",
            post(intention_status),
        )
        .route(
            "/v1/agents/{agent_id}/intentions/{intention_id}/progress",
            post(intention_progress),
        )
        .route(
            "/v1/agents/{agent_id}/intentions/{intention_id}/reconsider",
            post(reconsider),
        )
        .route(
            "/v1/bdi/maintenance",
            get(maintenance_status).post(run_maintenance),
        )
        .route("/v1/bdi/conflicts", get(conflicts))
        .route(
            "/v1/missions/{id}/commitment",
            get(show_commitment).put(put_commitment),
        )
}

/// Parses an enum value from text; an unknown one is a 422 naming the choices.
fn parse_value<T: FromStr<Err = UnknownValue>>(field: &str, s: &str) -> Result<T, ApiError> {
    s.parse()
        .map_err(|e: UnknownValue| ApiError::Unprocessable {
            code: "invalid_value",
            message: format!("{field}: {e}"),
            details: json!({ "field": field, "value": s, "expected": e.expected }),
        })
}

/// Writers: the agent itself, or an admin/operator.
fn require_writer(who: &Principal, agent_id: &str) -> Result<(), ApiError> {
    who.require_self_or(agent_id, &[Role::Admin, Role::Operator])
}

// ---------------------------------------------------------------- beliefs

/// `PUT /v1/agents/{agent_id}/beliefs` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PutBelief {
    /// `environment`, `self`, `agent` or `case`.
    pub category: String,
    /// What it is about (1–256 bytes); one belief per (category, subject).
    pub subject: String,
    /// What the agent holds true (1–4000 bytes).
    pub content: String,
    /// Certainty in [0, 1].
    pub certainty: f64,
    /// Why (logged with the revision; at most 1000 bytes).
    #[serde(default)]
    pub reason: Option<String>,
}

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
async fn put_belief(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
    Json(req): Json<PutBelief>,
) -> ApiResult<(StatusCode, Json<BeliefWritten>)> {
    require_writer(&who, &agent_id)?;
    let category: BeliefCategory = parse_value("category", &req.category)?;
    let mut tx = state.pool.begin().await?;
    let (outcome, belief, revision) = state::update_belief(
        &mut tx,
        who.workspace_id,
        &agent_id,
        BeliefWrite {
            category,
            subject: req.subject,
            content: req.content,
            certainty: req.certainty,
            reason: req.reason.unwrap_or_default(),
        },
        &who.actor(),
    )
    .await?;
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
struct BeliefParams {
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
async fn list_beliefs(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
    Query(p): Query<BeliefParams>,
) -> ApiResult<Json<BeliefList>> {
    let mut conn = state.pool.acquire().await?;
    state::require_agent(&mut conn, who.workspace_id, &agent_id).await?;
    let beliefs = store::list_beliefs(
        &mut conn,
        who.workspace_id,
        &agent_id,
        p.category.map(|c| c.as_str()),
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
async fn belief_revisions(
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

// ---------------------------------------------------------------- desires

/// `POST /v1/agents/{agent_id}/desires` body: the priority formula's components, each in [0, 1].
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateDesire {
    /// What is desired (1–4000 bytes).
    pub description: String,
    /// `terminal` or `instrumental`.
    pub kind: String,
    /// Weight 0.30.
    pub base_priority: f64,
    /// Weight 0.25.
    pub importance: f64,
    /// Weight 0.25.
    pub urgency: f64,
    /// Weight 0.15.
    pub strategic_alignment: f64,
    /// Weight 0.05 (default 1: all dependencies met).
    #[serde(default)]
    pub dependency_status: Option<f64>,
    /// For an instrumental desire: the active desires it serves (at least one).
    #[serde(default)]
    pub serves: Vec<Uuid>,
    /// Scarce resources it needs (resource conflicts).
    #[serde(default)]
    pub resources: Vec<String>,
    /// Strategic direction (strategy conflicts with a different one).
    #[serde(default)]
    pub strategy: Option<String>,
    /// Active desires its achievement rules out (goal conflicts).
    #[serde(default)]
    pub incompatible_with: Vec<Uuid>,
}

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
async fn create_desire(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
    Json(req): Json<CreateDesire>,
) -> ApiResult<(StatusCode, Json<DesireCreated>)> {
    require_writer(&who, &agent_id)?;
    let kind: DesireKind = parse_value("kind", &req.kind)?;
    let mut tx = state.pool.begin().await?;
    let (desire, conflicts) = state::create_desire(
        &mut tx,
        who.workspace_id,
        &agent_id,
        DesireCreate {
            description: req.description,
            kind,
            inputs: PriorityInputs {
                base_priority: req.base_priority,
                importance: req.importance,
                urgency: req.urgency,
                strategic_alignment: req.strategic_alignment,
                dependency_status: req.dependency_status.unwrap_or(1.0),
            },
            serves: req.serves,
            resources: req.resources,
            strategy: req.strategy,
            incompatible_with: req.incompatible_with,
        },
        &who.actor(),
    )
    .await?;
    tx.commit().await?;
    Ok((
        StatusCode::CREATED,
        Json(DesireCreated { desire, conflicts }),
    ))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct StatusParams {
    /// Only this status.
    status: Option<String>,
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
async fn list_desires(
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
async fn show_desire(
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
    /// Why (1–1000 bytes).
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
async fn drop_desire(
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

// ---------------------------------------------------------------- goals

/// `POST /v1/agents/{agent_id}/goals` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateGoal {
    /// What to reach (1–4000 bytes).
    pub description: String,
    /// `strategic`, `tactical` or `operational`.
    pub tier: String,
    /// Parent goal of the same agent, at this tier or above.
    #[serde(default)]
    pub parent_goal_id: Option<Uuid>,
    /// The desire it realises.
    #[serde(default)]
    pub desire_id: Option<Uuid>,
    /// How to tell it is reached.
    #[serde(default)]
    pub success_criteria: Option<String>,
    /// Deadline (RFC 3339).
    #[serde(default, with = "time::serde::rfc3339::option")]
    pub deadline: Option<OffsetDateTime>,
}

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
async fn create_goal(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
    Json(req): Json<CreateGoal>,
) -> ApiResult<(StatusCode, Json<GoalView>)> {
    require_writer(&who, &agent_id)?;
    let tier: GoalTier = parse_value("tier", &req.tier)?;
    let mut tx = state.pool.begin().await?;
    let goal = state::create_goal(
        &mut tx,
        who.workspace_id,
        &agent_id,
        GoalCreate {
            description: req.description,
            tier,
            parent_goal_id: req.parent_goal_id,
            desire_id: req.desire_id,
            success_criteria: req.success_criteria.unwrap_or_default(),
            deadline: req.deadline,
        },
        &who.actor(),
    )
    .await?;
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
async fn list_goals(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
) -> ApiResult<Json<GoalList>> {
    let mut conn = state.pool.acquire().await?;
    state::require_agent(&mut conn, who.workspace_id, &agent_id).await?;
    let goals = store::list_goals(&mut conn, who.workspace_id, &agent_id).await?;
    Ok(Json(GoalList { goals }))
}

/// A status change.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetStatus {
    /// The new status.
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
async fn goal_status(
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

// ---------------------------------------------------------------- intentions

/// `POST /v1/agents/{agent_id}/intentions` body (`intention_commit`).
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CommitIntention {
    /// What is intended (1–4000 bytes).
    pub description: String,
    /// `single-minded`, `open-minded` (default) or `cautious`.
    #[serde(default)]
    pub strategy: Option<String>,
    /// The goal pursued.
    #[serde(default)]
    pub goal_id: Option<Uuid>,
    /// The active desire committed to: the intention takes its priority.
    #[serde(default)]
    pub desire_id: Option<Uuid>,
    /// Priority in [0, 1] when no desire is named (default 0.5).
    #[serde(default)]
    pub priority: Option<f64>,
}

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
async fn commit_intention(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
    Json(req): Json<CommitIntention>,
) -> ApiResult<(StatusCode, Json<IntentionView>)> {
    require_writer(&who, &agent_id)?;
    let strategy = match &req.strategy {
        Some(s) => parse_value("strategy", s)?,
        None => CommitmentStrategy::OpenMinded,
    };
    let mut tx = state.pool.begin().await?;
    let it = state::commit_intention(
        &mut tx,
        who.workspace_id,
        &agent_id,
        IntentionCreate {
            description: req.description,
            goal_id: req.goal_id,
            desire_id: req.desire_id,
            strategy,
            priority: req.priority,
        },
        &who.actor(),
    )
    .await?;
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
async fn list_intentions(
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
    request_body = SetStatus,
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
async fn intention_status(
    State(state): State<AppState>,
    who: Principal,
    Path((agent_id, intention_id)): Path<(String, Uuid)>,
    Json(req): Json<SetStatus>,
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

/// `POST …/progress` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct IntentionProgress {
    /// Fraction done, in [0, 1].
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
async fn intention_progress(
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
async fn reconsider(
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

// ---------------------------------------------------------------- maintenance

/// The maintenance job's status.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MaintenanceStatus {
    /// Seconds between scheduled cycles on each replica.
    pub interval_secs: u32,
    /// The last cycle that ran (any replica), with its counts per phase.
    pub last_cycle: Option<CycleView>,
}

/// The BDI maintenance job: its interval and the last cycle's time and results.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/bdi/maintenance",
    tag = "bdi",
    operation_id = "bdi_maintenance_status",
    responses(
        (status = 200, description = "Status", body = MaintenanceStatus),
        (status = 401, response = doc::Unauthorized)
    ),
    security(("api_token" = []))
)]
async fn maintenance_status(
    State(state): State<AppState>,
    _who: Principal,
) -> ApiResult<Json<MaintenanceStatus>> {
    let mut conn = state.pool.acquire().await?;
    let last_cycle = store::last_cycle(&mut conn).await?;
    Ok(Json(MaintenanceStatus {
        interval_secs: state.bdi_interval_secs,
        last_cycle,
    }))
}

/// Runs a BDI maintenance cycle now (intention pruning, desire re-sorting, belief conflict detection). Only one replica runs a cycle at a time: while another runs, this is a 409 `maintenance_running`.
///
/// Roles: admin, operator.
#[utoipa::path(
    post,
    path = "/v1/bdi/maintenance",
    tag = "bdi",
    operation_id = "run_bdi_maintenance",
    responses(
        (status = 200, description = "The cycle's audit record", body = CycleView),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 409, description = "A cycle is running on some replica (`maintenance_running`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn run_maintenance(
    State(state): State<AppState>,
    who: Principal,
) -> ApiResult<Json<CycleView>> {
    who.require(&[Role::Admin, Role::Operator])?;
    match runtime::run_once(&state.pool, &state.engine.replica_id).await? {
        CycleOutcome::Ran(c) => Ok(Json(c)),
        CycleOutcome::Busy => Err(ApiError::conflict(
            "maintenance_running",
            "a BDI maintenance cycle is running on some replica; try again shortly",
        )),
    }
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct ConflictParams {
    /// UTC day, `YYYY-MM-DD` (default today).
    day: Option<String>,
}

/// A day's belief conflict reports.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConflictReport {
    /// The UTC day.
    pub day: String,
    /// Conflicts found that day, in order found.
    pub conflicts: Vec<ConflictView>,
}

/// Belief conflicts the maintenance job found on a day: same agent and subject, both certainties above 0.7, contradictory content.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/bdi/conflicts",
    tag = "bdi",
    operation_id = "bdi_conflicts",
    params(ConflictParams),
    responses(
        (status = 200, description = "The day's report", body = ConflictReport),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized)
    ),
    security(("api_token" = []))
)]
async fn conflicts(
    State(state): State<AppState>,
    who: Principal,
    Query(p): Query<ConflictParams>,
) -> ApiResult<Json<ConflictReport>> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    let day = match p.day {
        Some(d) => Date::parse(&d, format)
            .map_err(|_| ApiError::invalid("day", "day must be a date YYYY-MM-DD"))?,
        None => OffsetDateTime::now_utc().date(),
    };
    let mut conn = state.pool.acquire().await?;
    let conflicts = store::conflicts_on(&mut conn, who.workspace_id, day).await?;
    Ok(Json(ConflictReport {
        day: day.format(format).unwrap_or_default(),
        conflicts,
    }))
}

// ---------------------------------------------------------------- missions

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
async fn show_commitment(
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
async fn put_commitment(
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
        crate::store::events::WorkspaceEvent {
            mission_id: Some(id),
            task_id: None,
            kind: "mission.commitment_set",
            actor: &who.actor(),
            payload: json!({ "strategy": strategy, "explicit": explicit }),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(Json(Commitment {
        mission_id: id,
        strategy,
        explicit,
    }))
}
