//! `GET /v1/missions/{id}/timeline` and `/snapshots`: projections of the
//! mission's event log (see [`crate::timeline`]).

use axum::extract::State;
use serde::Serialize;
use sqlx::PgPool;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{
    AppState, doc,
    extract::{Json, Path},
};
use crate::{
    auth::Principal,
    error::{ApiError, ApiResult},
    store::{events, missions},
    timeline::{self, Entry, Snapshot},
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(timeline))
        .routes(routes!(snapshots))
}

/// Every event of the mission, in `seq` order.
async fn mission_log(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
) -> Result<Vec<events::EventView>, ApiError> {
    missions::get(pool, who.workspace_id, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no mission {id}")))?;
    let mut all = Vec::new();
    let mut after = 0;
    loop {
        let page = events::list_for_mission(pool, who.workspace_id, id, after, 1000).await?;
        let Some(last) = page.last().and_then(|e| e.seq) else {
            break;
        };
        after = last;
        let done = page.len() < 1000;
        all.extend(page);
        if done {
            break;
        }
    }
    Ok(all)
}

/// A mission's timeline.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Timeline {
    /// Entries in `seq` order.
    pub entries: Vec<Entry>,
}

/// A mission's snapshots.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Snapshots {
    /// One per milestone, in `seq` order.
    pub snapshots: Vec<Snapshot>,
}

/// The mission's timeline: plan created, steps started and finished, tool
/// calls, handoffs, decisions and approvals, in order.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/missions/{id}/timeline",
    tag = "timeline",
    operation_id = "get_mission_timeline",
    params(("id" = Uuid, Path, description = "Mission id")),
    responses(
        (status = 200, description = "The timeline", body = Timeline),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn timeline(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<Timeline>> {
    let log = mission_log(&state.pool, &who, id).await?;
    Ok(Json(Timeline {
        entries: timeline::entries(&log),
    }))
}

/// The mission's state after each milestone (plan created, each task
/// finished), each the event log replayed up to its `seq`.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/missions/{id}/snapshots",
    tag = "timeline",
    operation_id = "get_mission_snapshots",
    params(("id" = Uuid, Path, description = "Mission id")),
    responses(
        (status = 200, description = "The snapshots", body = Snapshots),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn snapshots(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<Snapshots>> {
    let log = mission_log(&state.pool, &who, id).await?;
    Ok(Json(Snapshots {
        snapshots: timeline::snapshots(&log),
    }))
}
