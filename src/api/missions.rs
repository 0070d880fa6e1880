//! `/v1/missions`: create, list, show, approve, review, cancel, events.

use axum::{
    Router,
    extract::State,
    http::StatusCode,
    routing::{get, post},
};
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::{
    AppState,
    extract::{Json, Path, Query},
};
use crate::{
    auth::{Principal, Role},
    domain::MissionStatus,
    error::{ApiError, ApiResult},
    missions::{
        self, ApproveRequest, CreateMission, MissionSummary, MissionView, ReviewRequest,
        human::{CancelTaskRequest, ResolveRequest},
        replan::{self, InstructionsRequest, RejectPlanRequest, SaveRoutineRequest},
    },
    store::{events, missions as store},
};

/// Routes of this resource.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/missions", get(list).post(create))
        .route("/v1/missions/{id}", get(show))
        .route("/v1/missions/{id}/approve", post(approve))
        .route("/v1/missions/{id}/reject-plan", post(reject_plan))
        .route("/v1/missions/{id}/instructions", post(instructions))
        .route("/v1/missions/{id}/plan", get(plan))
        .route("/v1/missions/{id}/save-as-routine", post(save_as_routine))
        .route("/v1/missions/{id}/review", post(review))
        .route("/v1/missions/{id}/cancel", post(cancel))
        .route("/v1/missions/{id}/pause", post(pause))
        .route("/v1/missions/{id}/resume", post(resume))
        .route("/v1/missions/{id}/events", get(list_events))
        .route("/v1/missions/{id}/tasks/{task}/resolve", post(resolve_task))
        .route("/v1/missions/{id}/tasks/{task}/cancel", post(cancel_task))
}

/// Roles that may change missions.
pub(crate) const WRITERS: &[Role] = &[Role::Admin, Role::Operator];
/// Roles that may approve plans, review results and settle tasks.
pub(crate) const APPROVERS: &[Role] = &[Role::Admin, Role::Operator, Role::Stakeholder];

async fn create(
    State(state): State<AppState>,
    who: Principal,
    Json(req): Json<CreateMission>,
) -> ApiResult<(StatusCode, Json<MissionView>)> {
    who.require(WRITERS)?;
    let view = missions::create(&state.pool, &state.planning, &who, req).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListParams {
    status: Option<String>,
    limit: Option<i64>,
    cursor: Option<Uuid>,
}

async fn list(
    State(state): State<AppState>,
    who: Principal,
    Query(p): Query<ListParams>,
) -> ApiResult<Json<Value>> {
    let status = p
        .status
        .as_deref()
        .map(str::parse::<MissionStatus>)
        .transpose()?;
    let limit = p.limit.unwrap_or(50);
    if !(1..=500).contains(&limit) {
        return Err(ApiError::invalid(
            "limit",
            "limit must be between 1 and 500",
        ));
    }
    let rows = store::list(&state.pool, who.workspace_id, status, p.cursor, limit).await?;
    let next_cursor = (rows.len() as i64 == limit)
        .then(|| rows.last().map(|r| r.id))
        .flatten();
    let missions: Vec<MissionSummary> = rows.into_iter().map(Into::into).collect();
    Ok(Json(
        json!({ "missions": missions, "next_cursor": next_cursor }),
    ))
}

async fn show(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<MissionView>> {
    Ok(Json(
        missions::view(&state.pool, who.workspace_id, id).await?,
    ))
}

/// Parses an optional JSON body: empty means the default.
fn optional_body<T: serde::de::DeserializeOwned + Default>(body: &[u8]) -> ApiResult<T> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(|e| ApiError::BadRequest {
        code: "invalid_request",
        message: format!("invalid body: {e}"),
        details: Value::Null,
    })
}

async fn approve(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    body: axum::body::Bytes,
) -> ApiResult<Json<MissionView>> {
    who.require(APPROVERS)?;
    let req: ApproveRequest = optional_body(&body)?;
    Ok(Json(missions::approve(&state.pool, &who, id, req).await?))
}

async fn reject_plan(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<RejectPlanRequest>,
) -> ApiResult<Json<MissionView>> {
    who.require(APPROVERS)?;
    Ok(Json(
        replan::reject_plan(&state.pool, &state.planning, &who, id, req).await?,
    ))
}

async fn instructions(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<InstructionsRequest>,
) -> ApiResult<Json<MissionView>> {
    who.require(WRITERS)?;
    Ok(Json(
        replan::instructions(&state.pool, &state.planning, &who, id, req).await?,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanParams {
    version: Option<i32>,
}

async fn plan(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Query(p): Query<PlanParams>,
) -> ApiResult<Json<store::PlanRecord>> {
    Ok(Json(
        replan::plan_version(&state.pool, &who, id, p.version).await?,
    ))
}

async fn save_as_routine(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    body: axum::body::Bytes,
) -> ApiResult<(StatusCode, Json<Value>)> {
    who.require(WRITERS)?;
    let req: SaveRoutineRequest = optional_body(&body)?;
    let routine = replan::save_as_routine(&state.pool, &who, id, req).await?;
    Ok((StatusCode::CREATED, Json(json!({ "routine": routine }))))
}

async fn review(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<ReviewRequest>,
) -> ApiResult<Json<MissionView>> {
    who.require(APPROVERS)?;
    Ok(Json(missions::review(&state.pool, &who, id, req).await?))
}

async fn resolve_task(
    State(state): State<AppState>,
    who: Principal,
    Path((id, task)): Path<(Uuid, String)>,
    Json(req): Json<ResolveRequest>,
) -> ApiResult<Json<MissionView>> {
    who.require(APPROVERS)?;
    Ok(Json(
        missions::human::resolve(&state.pool, &state.http, &who, id, &task, req).await?,
    ))
}

async fn cancel_task(
    State(state): State<AppState>,
    who: Principal,
    Path((id, task)): Path<(Uuid, String)>,
    body: axum::body::Bytes,
) -> ApiResult<Json<MissionView>> {
    who.require(WRITERS)?;
    let req: CancelTaskRequest = optional_body(&body)?;
    Ok(Json(
        missions::human::cancel_task(&state.pool, &state.http, &who, id, &task, req).await?,
    ))
}

async fn cancel(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<MissionView>> {
    who.require(WRITERS)?;
    Ok(Json(
        missions::cancel(&state.pool, &state.http, &who, id).await?,
    ))
}

async fn pause(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<MissionView>> {
    who.require(WRITERS)?;
    Ok(Json(missions::pause(&state.pool, &who, id).await?))
}

async fn resume(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<MissionView>> {
    who.require(WRITERS)?;
    Ok(Json(
        missions::resume(&state.pool, &state.http, &who, id).await?,
    ))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EventParams {
    /// Only events with `seq` greater than this.
    after: Option<i64>,
    limit: Option<i64>,
}

async fn list_events(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Query(p): Query<EventParams>,
    headers: axum::http::HeaderMap,
) -> ApiResult<axum::response::Response> {
    use axum::response::IntoResponse;
    if crate::api::stream::wants_stream(&headers) {
        // Resume after Last-Event-ID (the per-mission seq), else ?after=.
        let resume = crate::api::stream::last_event_id(&headers)?;
        if store::get(&state.pool, who.workspace_id, id)
            .await?
            .is_none()
        {
            return Err(ApiError::NotFound(format!("no mission {id}")));
        }
        let after = resume.or(p.after).unwrap_or(0).max(0);
        return Ok(crate::api::stream::mission_events(
            state.pool.clone(),
            who.workspace_id,
            id,
            after,
            state.wake.clone(),
        )
        .into_response());
    }
    Ok(list_event_page(&state, &who, id, p).await?.into_response())
}

async fn list_event_page(
    state: &AppState,
    who: &Principal,
    id: Uuid,
    p: EventParams,
) -> ApiResult<Json<Value>> {
    let limit = p.limit.unwrap_or(500);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::invalid(
            "limit",
            "limit must be between 1 and 1000",
        ));
    }
    let after = p.after.unwrap_or(0).max(0);
    if store::get(&state.pool, who.workspace_id, id)
        .await?
        .is_none()
    {
        return Err(ApiError::NotFound(format!("no mission {id}")));
    }
    let events = events::list_for_mission(&state.pool, who.workspace_id, id, after, limit).await?;
    let next_after = events.last().map(|e| e.seq).unwrap_or(after);
    Ok(Json(json!({ "events": events, "next_after": next_after })))
}
