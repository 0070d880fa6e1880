//! `/v1/missions`: create, list, show, edit, delete, approve, review, cancel, events.

use axum::{
    extract::State,
    http::StatusCode,
    response::{IntoResponse, Response},
};
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
    auth::Principal,
    domain::MissionStatus,
    error::{ApiError, ApiResult},
    missions::{
        self, ApproveRequest, CreateMission, MissionSummary, MissionView, ReviewRequest,
        continuation::{self, ContinueRequest},
        edit::{self, Removal, UpdateMission},
        human::{CancelTaskRequest, ResolveRequest},
        replan::{self, InstructionsRequest, RejectPlanRequest, SaveRoutineRequest},
        roles::{APPROVERS, WRITERS},
    },
    store::{events, missions as store},
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(show, update, remove))
        .routes(routes!(approve))
        .routes(routes!(reject_plan))
        .routes(routes!(instructions))
        .routes(routes!(plan))
        .routes(routes!(save_as_routine))
        .routes(routes!(review))
        .routes(routes!(cancel))
        .routes(routes!(pause))
        .routes(routes!(resume))
        .routes(routes!(continue_failed))
        .routes(routes!(list_events))
        .routes(routes!(resolve_task))
        .routes(routes!(cancel_task))
}

/// Creates a mission: plans it (or takes the given plan) and, in autonomous mode, starts it.
///
/// Roles: admin, operator.
#[utoipa::path(
    post,
    path = "/v1/missions",
    tag = "missions",
    operation_id = "create_mission",
    request_body = CreateMission,
    responses(
        (status = 201, description = "Created", body = MissionView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
async fn create(
    State(state): State<AppState>,
    who: Principal,
    Json(req): Json<CreateMission>,
) -> ApiResult<(StatusCode, Json<MissionView>)> {
    who.require(WRITERS)?;
    let view = missions::create(&state.pool, &state.planning, &who, req).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct ListParams {
    /// Only missions with this status.
    #[param(value_type = Option<MissionStatus>)]
    status: Option<String>,
    /// Page size, 1–500 (default 50).
    #[serde(default)]
    #[param(inline)]
    limit: Limit<50, 500>,
    /// The `next_cursor` of the previous page.
    cursor: Option<Uuid>,
    /// Also list archived missions (default false: they are left out).
    #[serde(default)]
    archived: bool,
}

/// Lists missions, newest first, a page at a time; archived missions only with `?archived=true`.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/missions",
    tag = "missions",
    operation_id = "list_missions",
    params(ListParams),
    responses(
        (status = 200, description = "One page", body = MissionList),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized)
    ),
    security(("api_token" = []))
)]
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
    let limit = p.limit.get()?;
    let rows = store::list(
        &state.pool,
        who.workspace_id,
        status,
        p.cursor,
        coordinator_core::paging::probe(limit),
        p.archived,
    )
    .await?;
    let (rows, next_cursor) = coordinator_core::paging::split(rows, limit, |r| r.id);
    let missions: Vec<MissionSummary> = rows.into_iter().map(Into::into).collect();
    Ok(Json(
        json!({ "missions": missions, "next_cursor": next_cursor }),
    ))
}

/// Shows a mission with its tasks and progress.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/missions/{id}",
    tag = "missions",
    operation_id = "get_mission",
    params(("id" = Uuid, Path, description = "Mission id")),
    responses(
        (status = 200, description = "The mission", body = MissionView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn show(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<MissionView>> {
    Ok(Json(
        missions::view(&state.pool, who.workspace_id, id).await?,
    ))
}

/// Changes a mission in place: its title, priority, budget limit, deadline or labels. A `mission.updated` event names each changed field with its old and new value, and the mission's `version` goes up; a request that changes nothing writes nothing. A new priority reaches the mission's queued tasks at once.
///
/// Give `version` (as read) to refuse the change if the mission changed since (409 `version_conflict`, with the current version in `details`). A finished mission (completed, failed, cancelled) still takes a new title or labels, but not a new priority, budget or deadline (409 `invalid_state`). A budget below what is already spent is 422 `budget_below_spent`.
///
/// Roles: admin, operator.
#[utoipa::path(
    patch,
    path = "/v1/missions/{id}",
    tag = "missions",
    operation_id = "update_mission",
    params(("id" = Uuid, Path, description = "Mission id")),
    request_body = UpdateMission,
    responses(
        (status = 200, description = "The mission as changed", body = MissionView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The mission changed since the `version` given (`version_conflict`), or it is finished and the change is to its priority, budget or deadline (`invalid_state`)", body = doc::ErrorBody),
        (status = 422, description = "The budget is below what the mission already spent (`budget_below_spent`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn update(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<UpdateMission>,
) -> ApiResult<Json<MissionView>> {
    who.require(WRITERS)?;
    Ok(Json(edit::update(&state.pool, &who, id, req).await?))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct RemoveParams {
    /// Archive instead of deleting: the mission stays, with its history, but `GET /v1/missions` leaves it out unless `?archived=true`.
    #[serde(default)]
    archive: bool,
}

/// Removes a finished mission (completed, failed or cancelled; cancel a live one first): deletes it with its plans, tasks, attempts, events, board cards, blackboard, tenders, decisions and handoffs, or with `?archive=true` archives it instead.
///
/// A deletion writes a `mission.deleted` workspace event (it outlives the mission's own log); messages, reservations and work packages of the mission stay, no longer naming it, and its plan-library case stays. Archiving writes `mission.updated`; archiving an archived mission changes nothing.
///
/// Roles: admin, operator.
#[utoipa::path(
    delete,
    path = "/v1/missions/{id}",
    tag = "missions",
    operation_id = "delete_mission",
    params(("id" = Uuid, Path, description = "Mission id"), RemoveParams),
    responses(
        (status = 200, description = "Archived (with `?archive=true`): the mission", body = MissionView),
        (status = 204, description = "Deleted"),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The mission is not finished: cancel it first (`invalid_state`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn remove(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Query(p): Query<RemoveParams>,
) -> ApiResult<Response> {
    who.require(WRITERS)?;
    Ok(
        match edit::remove(&state.pool, &who, id, p.archive).await? {
            Removal::Deleted => StatusCode::NO_CONTENT.into_response(),
            Removal::Archived(view) => Json(*view).into_response(),
        },
    )
}

/// Parses an optional JSON body: empty means the default.
fn optional_body<T: serde::de::DeserializeOwned + Default>(body: &[u8]) -> ApiResult<T> {
    super::extract::parse_optional_body(body)
}

/// Approves the plan of a mission awaiting approval and starts it.
///
/// Roles: admin, operator, stakeholder.
#[utoipa::path(
    post,
    path = "/v1/missions/{id}/approve",
    tag = "missions",
    operation_id = "approve_mission",
    params(("id" = Uuid, Path, description = "Mission id")),
    request_body(content = Option<ApproveRequest>, description = "Optional; an empty body approves as planned"),
    responses(
        (status = 200, description = "Approved", body = MissionView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The mission's status does not allow this (`invalid_state`)", body = doc::ErrorBody),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
async fn approve(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    super::extract::RawBody(body): super::extract::RawBody,
) -> ApiResult<Json<MissionView>> {
    who.require(APPROVERS)?;
    let req: ApproveRequest = optional_body(&body)?;
    Ok(Json(
        missions::approve(
            &state.pool,
            state.engine.events_notifier.as_ref(),
            &who,
            id,
            req,
        )
        .await?,
    ))
}

/// Rejects the proposed plan: replans with the feedback, or takes a replacement plan.
///
/// Roles: admin, operator, stakeholder.
#[utoipa::path(
    post,
    path = "/v1/missions/{id}/reject-plan",
    tag = "missions",
    operation_id = "reject_plan",
    params(("id" = Uuid, Path, description = "Mission id")),
    request_body = RejectPlanRequest,
    responses(
        (status = 200, description = "Replanned", body = MissionView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The mission's status does not allow this (`invalid_state`)", body = doc::ErrorBody),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
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

/// Changes course mid-mission: replans the work not started yet.
///
/// Roles: admin, operator.
#[utoipa::path(
    post,
    path = "/v1/missions/{id}/instructions",
    tag = "missions",
    operation_id = "give_instructions",
    params(("id" = Uuid, Path, description = "Mission id")),
    request_body = InstructionsRequest,
    responses(
        (status = 200, description = "Replanned", body = MissionView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The mission's status does not allow this (`invalid_state`)", body = doc::ErrorBody),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
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

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct PlanParams {
    /// Plan version (default: the current one).
    version: Option<i32>,
}

/// Shows a plan version of a mission (default: the current one).
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/missions/{id}/plan",
    tag = "missions",
    operation_id = "get_plan",
    params(("id" = Uuid, Path, description = "Mission id"), PlanParams),
    responses(
        (status = 200, description = "The plan version", body = store::PlanRecord),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
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

/// Saves the mission's plan as a routine that plans future missions like it.
///
/// Roles: admin, operator.
#[utoipa::path(
    post,
    path = "/v1/missions/{id}/save-as-routine",
    tag = "missions",
    operation_id = "save_as_routine",
    params(("id" = Uuid, Path, description = "Mission id")),
    request_body(content = Option<SaveRoutineRequest>, description = "Optional; an empty body derives the name from the goal"),
    responses(
        (status = 201, description = "Saved", body = RoutineSaved),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The mission cannot be saved as a routine in its state, or the name is taken", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn save_as_routine(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    super::extract::RawBody(body): super::extract::RawBody,
) -> ApiResult<(StatusCode, Json<Value>)> {
    who.require(WRITERS)?;
    let req: SaveRoutineRequest = optional_body(&body)?;
    let routine = replan::save_as_routine(&state.pool, &who, id, req).await?;
    Ok((StatusCode::CREATED, Json(json!({ "routine": routine }))))
}

/// Accepts or rejects the results of a mission awaiting review.
///
/// Roles: admin, operator, stakeholder.
#[utoipa::path(
    post,
    path = "/v1/missions/{id}/review",
    tag = "missions",
    operation_id = "review_mission",
    params(("id" = Uuid, Path, description = "Mission id")),
    request_body = ReviewRequest,
    responses(
        (status = 200, description = "Reviewed", body = MissionView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The mission's status does not allow this (`invalid_state`)", body = doc::ErrorBody),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
async fn review(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<ReviewRequest>,
) -> ApiResult<Json<MissionView>> {
    who.require(APPROVERS)?;
    Ok(Json(missions::review(&state.pool, &who, id, req).await?))
}

/// Settles a task awaiting a person: complete, retry, skip or fail it.
///
/// Roles: admin, operator, stakeholder.
#[utoipa::path(
    post,
    path = "/v1/missions/{id}/tasks/{task}/resolve",
    tag = "missions",
    operation_id = "resolve_task",
    params(("id" = Uuid, Path, description = "Mission id"), ("task" = String, Path, description = "Task key or id")),
    request_body = ResolveRequest,
    responses(
        (status = 200, description = "Resolved", body = MissionView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The task is not awaiting a person (`invalid_state`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
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

/// Cancels a task and every unfinished task downstream of it; the rest runs on.
///
/// Roles: admin, operator.
#[utoipa::path(
    post,
    path = "/v1/missions/{id}/tasks/{task}/cancel",
    tag = "missions",
    operation_id = "cancel_task",
    params(("id" = Uuid, Path, description = "Mission id"), ("task" = String, Path, description = "Task key or id")),
    request_body(content = Option<CancelTaskRequest>, description = "Optional reason"),
    responses(
        (status = 200, description = "Cancelled", body = MissionView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The task or mission is already finished (`invalid_state`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn cancel_task(
    State(state): State<AppState>,
    who: Principal,
    Path((id, task)): Path<(Uuid, String)>,
    super::extract::RawBody(body): super::extract::RawBody,
) -> ApiResult<Json<MissionView>> {
    who.require(WRITERS)?;
    let req: CancelTaskRequest = optional_body(&body)?;
    Ok(Json(
        missions::human::cancel_task(&state.pool, &state.http, &who, id, &task, req).await?,
    ))
}

/// Cancels a mission: live attempts end and workers are told.
///
/// Roles: admin, operator.
#[utoipa::path(
    post,
    path = "/v1/missions/{id}/cancel",
    tag = "missions",
    operation_id = "cancel_mission",
    params(("id" = Uuid, Path, description = "Mission id")),
    responses(
        (status = 200, description = "Cancelled", body = MissionView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The mission's status does not allow this (`invalid_state`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
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

/// Pauses a mission: nothing new is dispatched; running attempts finish.
///
/// Roles: admin, operator.
#[utoipa::path(
    post,
    path = "/v1/missions/{id}/pause",
    tag = "missions",
    operation_id = "pause_mission",
    params(("id" = Uuid, Path, description = "Mission id")),
    responses(
        (status = 200, description = "Paused", body = MissionView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The mission's status does not allow this (`invalid_state`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn pause(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<MissionView>> {
    who.require(WRITERS)?;
    Ok(Json(missions::pause(&state.pool, &who, id).await?))
}

/// Resumes a paused mission.
///
/// Roles: admin, operator.
#[utoipa::path(
    post,
    path = "/v1/missions/{id}/resume",
    tag = "missions",
    operation_id = "resume_mission",
    params(("id" = Uuid, Path, description = "Mission id")),
    responses(
        (status = 200, description = "Resumed", body = MissionView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The mission's status does not allow this (`invalid_state`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
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

/// Continues a failed mission: every failed task is retried (a fresh set of
/// attempts, with optional feedback) or skipped, the tasks the failure
/// cancelled come back, and the mission executes again; what succeeded stays.
///
/// Roles: admin, operator.
#[utoipa::path(
    post,
    path = "/v1/missions/{id}/continue",
    tag = "missions",
    operation_id = "continue_mission",
    params(("id" = Uuid, Path, description = "Mission id")),
    request_body = ContinueRequest,
    responses(
        (status = 200, description = "Executing again", body = MissionView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The mission did not fail (`invalid_state`), or changed since `version` (`version_conflict`)", body = doc::ErrorBody),
        (status = 422, description = "A named task is unknown or did not fail, or a failed task is not named (`invalid_tasks`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn continue_failed(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<ContinueRequest>,
) -> ApiResult<Json<MissionView>> {
    who.require(WRITERS)?;
    Ok(Json(
        continuation::continue_failed(&state.pool, &who, id, req).await?,
    ))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct EventParams {
    /// Only events with `seq` greater than this.
    after: Option<i64>,
    /// Page size, 1–1000 (default 500; JSON pages only).
    #[serde(default)]
    #[param(inline)]
    limit: Limit<500, 1000>,
}

/// A mission's events, oldest first: a JSON page, or a live Server-Sent Events stream with `Accept: text/event-stream`.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/missions/{id}/events",
    tag = "missions",
    operation_id = "list_mission_events",
    params(("id" = Uuid, Path, description = "Mission id"), EventParams, ("Last-Event-ID" = Option<i64>, Header, description = "Streams only: resume after this `seq` (takes precedence over `after`)")),
    responses(
        (status = 200, description = "A page of events (JSON), or with `Accept: text/event-stream` a stream that never ends on its own: each event's `id` is its `seq`, `event` its `kind`, `data` the event as in a page (`EventView`); comments keep the connection alive every 15 s.", content(
            (EventPage = "application/json"),
            (String = "text/event-stream", example = "id: 1\nevent: mission.created\ndata: {\"id\":1,\"seq\":1,\"kind\":\"mission.created\",...}\n\n")
        )),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn list_events(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Query(p): Query<EventParams>,
    headers: axum::http::HeaderMap,
) -> ApiResult<Response> {
    if p.after.is_some_and(|a| a < 0) {
        return Err(ApiError::invalid("after", "after must be a seq (>= 0)"));
    }
    // Checked for pages too, where it is ignored: a malformed header is 400 either way.
    let resume = crate::api::stream::last_event_id(&headers)?;
    if crate::api::stream::wants_stream(&headers) {
        // Resume after Last-Event-ID (the per-mission seq), else ?after=.
        if store::get(&state.pool, who.workspace_id, id)
            .await?
            .is_none()
        {
            return Err(ApiError::NotFound(format!("no mission {id}")));
        }
        let after = resume.or(p.after).unwrap_or(0).max(0);
        return Ok(crate::api::stream::mission_events(
            state.pool.clone(),
            who.clone(),
            id,
            after,
            state.wake.clone(),
            state.stop.clone(),
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
    let limit = p.limit.get()?;
    let after = p.after.unwrap_or(0).max(0);
    if store::get(&state.pool, who.workspace_id, id)
        .await?
        .is_none()
    {
        return Err(ApiError::NotFound(format!("no mission {id}")));
    }
    let events = events::list_for_mission(&state.pool, who.workspace_id, id, after, limit).await?;
    let next_after = events.last().and_then(|e| e.seq).unwrap_or(after);
    Ok(Json(json!({ "events": events, "next_after": next_after })))
}

/// `GET /v1/missions` answer: one page, newest first.
#[derive(utoipa::ToSchema)]
pub struct MissionList {
    /// The missions of this page.
    pub missions: Vec<MissionSummary>,
    /// Pass as `cursor` for the next page; null when this page is the last.
    pub next_cursor: Option<Uuid>,
}

/// `GET /v1/missions/{id}/events` answer (JSON): one page, oldest first.
#[derive(utoipa::ToSchema)]
pub struct EventPage {
    /// Events with `seq` greater than `after`.
    pub events: Vec<crate::store::events::EventView>,
    /// Pass as `after` for the next page (the last `seq` seen).
    pub next_after: i64,
}

/// `POST /v1/missions/{id}/save-as-routine` answer.
#[derive(utoipa::ToSchema)]
pub struct RoutineSaved {
    /// The stored routine; new missions whose goal matches it are planned from it.
    pub routine: crate::planning::PlanTemplate,
}

// The mission use cases' errors as the one JSON error body.
