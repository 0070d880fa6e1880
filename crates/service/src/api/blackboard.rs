//! `/v1/missions/{id}/blackboard`: the state a mission's agents share, as
//! REST for people and for workers without MCP (agents reach the same use
//! cases through the `blackboard_*` tools).

use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{
    AppState, doc,
    extract::{Json, Path, Query},
    page::Limit,
};
use crate::{
    auth::{Principal, Role},
    coordination::blackboard::{self, BlackboardError},
    error::{ApiError, ApiResult},
    store::blackboard::Entry,
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(read, write, delete))
}

/// Who may change a blackboard: people running missions and agents.
const WRITERS: &[Role] = &[Role::Admin, Role::Operator, Role::Agent];

impl From<BlackboardError> for ApiError {
    fn from(e: BlackboardError) -> Self {
        let message = e.to_string();
        match e {
            BlackboardError::Invalid(e) => e.into(),
            BlackboardError::UnknownMission(_) | BlackboardError::NoKey { .. } => {
                ApiError::NotFound(message)
            }
            BlackboardError::VersionConflict {
                key,
                expected,
                current,
            } => ApiError::Conflict {
                code: "version_conflict",
                message,
                details: json!({ "key": key, "expected_version": expected, "current_version": current }),
            },
            BlackboardError::MissionFinished { mission, status } => ApiError::Conflict {
                code: "invalid_state",
                message,
                details: json!({ "mission_id": mission, "status": status }),
            },
            BlackboardError::Database(e) => e.into(),
        }
    }
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct ListParams {
    /// Only keys starting with this.
    prefix: Option<String>,
    /// Most keys (1–500, default 100).
    #[serde(default)]
    #[param(inline)]
    limit: Limit<100, 500>,
}

/// `GET /v1/missions/{id}/blackboard` answer.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct BlackboardList {
    /// The mission.
    pub mission_id: Uuid,
    /// Its live keys, by name.
    pub keys: Vec<Entry>,
}

/// `PUT /v1/missions/{id}/blackboard/{key}` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteKey {
    /// Any JSON value but null (at most 64 KiB).
    pub value: Value,
    /// Compare-and-set: write only if the key is at this version (0: it must not exist).
    #[serde(default)]
    #[schema(minimum = 0)]
    pub expected_version: Option<i64>,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct DeleteParams {
    /// Compare-and-set: delete only if the key is at this version.
    #[param(minimum = 0)]
    expected_version: Option<i64>,
}

/// Lists the live keys of a mission's blackboard (values and versions).
///
/// Roles: any token of the workspace (an attempt token: its own mission).
#[utoipa::path(
    get,
    path = "/v1/missions/{id}/blackboard",
    tag = "blackboard",
    operation_id = "list_blackboard",
    params(("id" = Uuid, Path, description = "Mission id"), ListParams),
    responses(
        (status = 200, description = "The keys", body = BlackboardList),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn list(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Query(p): Query<ListParams>,
) -> ApiResult<Json<BlackboardList>> {
    let limit = p.limit.get()?;
    let prefix = p.prefix.unwrap_or_default();
    let keys = blackboard::list(&state.pool, &who, id, &prefix, limit).await?;
    Ok(Json(BlackboardList {
        mission_id: id,
        keys,
    }))
}

/// Reads one key of a mission's blackboard.
///
/// Roles: any token of the workspace (an attempt token: its own mission).
#[utoipa::path(
    get,
    path = "/v1/missions/{id}/blackboard/{key}",
    tag = "blackboard",
    operation_id = "read_blackboard_key",
    params(("id" = Uuid, Path, description = "Mission id"), ("key" = String, Path, description = "Key")),
    responses(
        (status = 200, description = "The key", body = Entry),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn read(
    State(state): State<AppState>,
    who: Principal,
    Path((id, key)): Path<(Uuid, String)>,
) -> ApiResult<Json<Entry>> {
    Ok(Json(blackboard::read(&state.pool, &who, id, &key).await?))
}

/// Writes one key of a mission's blackboard; with `expected_version`, only if nobody changed it since that version (else 409 `version_conflict` with the current version).
///
/// Roles: admin, operator, agent (an attempt token: its own mission).
#[utoipa::path(
    put,
    path = "/v1/missions/{id}/blackboard/{key}",
    tag = "blackboard",
    operation_id = "write_blackboard_key",
    params(("id" = Uuid, Path, description = "Mission id"), ("key" = String, Path, description = "Key")),
    request_body = WriteKey,
    responses(
        (status = 200, description = "Written", body = Entry),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The key is at another version (`version_conflict`), or the mission has ended (`invalid_state`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn write(
    State(state): State<AppState>,
    who: Principal,
    Path((id, key)): Path<(Uuid, String)>,
    Json(req): Json<WriteKey>,
) -> ApiResult<Json<Entry>> {
    who.require(WRITERS)?;
    let entry =
        blackboard::write(&state.pool, &who, id, &key, req.value, req.expected_version).await?;
    Ok(Json(entry))
}

/// Deletes one key of a mission's blackboard (its version keeps counting).
///
/// Roles: admin, operator, agent (an attempt token: its own mission).
#[utoipa::path(
    delete,
    path = "/v1/missions/{id}/blackboard/{key}",
    tag = "blackboard",
    operation_id = "delete_blackboard_key",
    params(("id" = Uuid, Path, description = "Mission id"), ("key" = String, Path, description = "Key"), DeleteParams),
    responses(
        (status = 200, description = "Deleted: the tombstone", body = Entry),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The key is at another version (`version_conflict`), or the mission has ended (`invalid_state`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn delete(
    State(state): State<AppState>,
    who: Principal,
    Path((id, key)): Path<(Uuid, String)>,
    Query(p): Query<DeleteParams>,
) -> ApiResult<Json<Entry>> {
    who.require(WRITERS)?;
    let entry = blackboard::delete(&state.pool, &who, id, &key, p.expected_version).await?;
    Ok(Json(entry))
}
