//! `/v1` routes of the human workforce: contractors (people, distinct from
//! contractor agents), work packages, and delegating a mission task.

use axum::{extract::State, http::StatusCode};
use serde::{Deserialize, Serialize};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{
    AppState, doc,
    extract::{Json, Path, Query},
};
use crate::{
    auth::Principal,
    coordination::workforce::{
        self as wf, AddContractor, AssignRequest, Availability, CreatePackage, PackageStatus,
        ProgressRequest, TransitionRequest, TrustRequest, UpdateContractor,
    },
    error::{ApiError, ApiResult},
    store::workforce::{ContractorView, PackageFilter, PackageView},
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_contractors, add_contractor))
        .routes(routes!(show_contractor, update_contractor))
        .routes(routes!(update_trust))
        .routes(routes!(list_packages, create_package))
        .routes(routes!(show_package))
        .routes(routes!(transition))
        .routes(routes!(assign))
        .routes(routes!(progress))
        .routes(routes!(delegate))
}

/// Most rows one listing answers.
const MAX_LIST: i64 = 500;

/// A list of contractors.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct ContractorList {
    /// The contractors, oldest first.
    pub contractors: Vec<ContractorView>,
}

/// A list of work packages.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct PackageList {
    /// The packages, oldest first.
    pub work_packages: Vec<PackageView>,
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct ContractorParams {
    /// Comma-separated skills; only contractors having all of them.
    skills: Option<String>,
    /// Only contractors with at least this trust (0–1).
    #[param(minimum = 0, maximum = 1)]
    min_trust: Option<f64>,
    /// Only contractors with this availability.
    #[param(inline)]
    availability: Option<Availability>,
    /// At most this many (1–500, default 500).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
}

fn limit(l: Option<i64>) -> ApiResult<i64> {
    match l {
        None => Ok(MAX_LIST),
        Some(l) if (1..=MAX_LIST).contains(&l) => Ok(l),
        Some(_) => Err(ApiError::invalid(
            "limit",
            format!("limit must be between 1 and {MAX_LIST}"),
        )),
    }
}

/// Lists contractors (people), filtered by skills, minimum trust and availability.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/contractors",
    tag = "workforce",
    operation_id = "list_contractors",
    params(ContractorParams),
    responses(
        (status = 200, description = "The contractors", body = ContractorList),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized)
    ),
    security(("api_token" = []))
)]
async fn list_contractors(
    State(state): State<AppState>,
    who: Principal,
    Query(p): Query<ContractorParams>,
) -> ApiResult<Json<ContractorList>> {
    let skills: Vec<String> = p
        .skills
        .as_deref()
        .map(|s| {
            s.split(',')
                .filter(|x| !x.trim().is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let contractors = wf::contractors(
        &state.pool,
        &who,
        &skills,
        p.min_trust,
        p.availability,
        limit(p.limit)?,
    )
    .await?;
    Ok(Json(ContractorList { contractors }))
}

/// Registers a contractor (a person who takes work packages) at trust 0.5.
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    post,
    path = "/v1/contractors",
    tag = "workforce",
    operation_id = "add_contractor",
    request_body = AddContractor,
    responses(
        (status = 201, description = "Registered", body = ContractorView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden)
    ),
    security(("api_token" = []))
)]
async fn add_contractor(
    State(state): State<AppState>,
    who: Principal,
    Json(req): Json<AddContractor>,
) -> ApiResult<(StatusCode, Json<ContractorView>)> {
    let c = wf::add_contractor(&state.pool, &who, req).await?;
    Ok((StatusCode::CREATED, Json(c)))
}

/// Shows a contractor with their trust history.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/contractors/{id}",
    tag = "workforce",
    operation_id = "get_contractor",
    params(("id" = Uuid, Path, description = "Contractor id")),
    responses(
        (status = 200, description = "The contractor, with `trust_history`", body = ContractorView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn show_contractor(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<ContractorView>> {
    Ok(Json(wf::contractor(&state.pool, &who, id).await?))
}

/// Updates a contractor's details or availability; trust changes only through ratings.
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    patch,
    path = "/v1/contractors/{id}",
    tag = "workforce",
    operation_id = "update_contractor",
    params(("id" = Uuid, Path, description = "Contractor id")),
    request_body = UpdateContractor,
    responses(
        (status = 200, description = "Updated", body = ContractorView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The contractor changed since `version` (`version_conflict`) or meanwhile (`concurrent_update`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn update_contractor(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<UpdateContractor>,
) -> ApiResult<Json<ContractorView>> {
    Ok(Json(
        wf::update_contractor(&state.pool, &who, id, req).await?,
    ))
}

/// Rates a contractor outside a package's completion: trust moves by ±0.1 (clamped to 0–1; `neutral` keeps it) and the change joins the trust history.
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    post,
    path = "/v1/contractors/{id}/trust",
    tag = "workforce",
    operation_id = "update_contractor_trust",
    params(("id" = Uuid, Path, description = "Contractor id")),
    request_body = TrustRequest,
    responses(
        (status = 200, description = "Rated: the contractor, with `trust_history`", body = ContractorView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The contractor changed meanwhile (`concurrent_update`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn update_trust(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<TrustRequest>,
) -> ApiResult<Json<ContractorView>> {
    Ok(Json(wf::update_trust(&state.pool, &who, id, req).await?))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct PackageParams {
    /// Only packages in this status.
    #[param(inline)]
    status: Option<PackageStatus>,
    /// Only packages assigned to this contractor.
    contractor: Option<Uuid>,
    /// Only packages delegating this task.
    task: Option<Uuid>,
    /// Only packages of this mission.
    mission: Option<Uuid>,
    /// At most this many (1–500, default 500).
    #[param(minimum = 1, maximum = 500)]
    limit: Option<i64>,
}

/// Lists work packages, filtered by status, contractor, task or mission.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/work-packages",
    tag = "workforce",
    operation_id = "list_work_packages",
    params(PackageParams),
    responses(
        (status = 200, description = "The packages", body = PackageList),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized)
    ),
    security(("api_token" = []))
)]
async fn list_packages(
    State(state): State<AppState>,
    who: Principal,
    Query(p): Query<PackageParams>,
) -> ApiResult<Json<PackageList>> {
    let filter = PackageFilter {
        status: p.status.map(|s| s.as_str().to_owned()),
        contractor_id: p.contractor,
        task_id: p.task,
        mission_id: p.mission,
    };
    let work_packages = wf::packages(&state.pool, &who, &filter, limit(p.limit)?).await?;
    Ok(Json(PackageList { work_packages }))
}

/// Creates a work package in `draft` (or `open`, running auto-matching, with `open: true`).
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    post,
    path = "/v1/work-packages",
    tag = "workforce",
    operation_id = "create_work_package",
    request_body = CreatePackage,
    responses(
        (status = 201, description = "Created", body = PackageView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden)
    ),
    security(("api_token" = []))
)]
async fn create_package(
    State(state): State<AppState>,
    who: Principal,
    Json(req): Json<CreatePackage>,
) -> ApiResult<(StatusCode, Json<PackageView>)> {
    let p = wf::create_package(&state.pool, &state.http, &who, req).await?;
    Ok((StatusCode::CREATED, Json(p)))
}

/// Shows a work package with its candidates, notes and status history.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/work-packages/{id}",
    tag = "workforce",
    operation_id = "get_work_package",
    params(("id" = Uuid, Path, description = "Work package id")),
    responses(
        (status = 200, description = "The package", body = PackageView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn show_package(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<PackageView>> {
    Ok(Json(wf::package(&state.pool, &who, id).await?))
}

/// Moves a work package through its lifecycle: draft → open → assigned → in_progress → review → completed (needs `quality_rating`; updates trust; a delegated task completes), review → in_progress, any non-terminal → cancelled (a delegated task is queued again).
///
/// Roles: admin, operator, agent; stakeholders may move to `in_progress` (rework), `completed` or `cancelled` from `review`.
#[utoipa::path(
    post,
    path = "/v1/work-packages/{id}/transition",
    tag = "workforce",
    operation_id = "transition_work_package",
    params(("id" = Uuid, Path, description = "Work package id")),
    request_body = TransitionRequest,
    responses(
        (status = 200, description = "Moved (or, for a repeated final move, unchanged)", body = PackageView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The lifecycle forbids it (`illegal_transition`, details `from` and `to`), the package changed since `version` (`version_conflict`), it was completed with another rating (`already_completed`), no contractor matches (`no_candidate`), the contractor is unavailable (`contractor_unavailable`), or something changed meanwhile (`concurrent_update`, `invalid_state`, `conflict`)", body = doc::ErrorBody),
        (status = 422, description = "`contractor_id` names no contractor (`unknown_contractor`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn transition(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<TransitionRequest>,
) -> ApiResult<Json<PackageView>> {
    Ok(Json(
        wf::transition(&state.pool, &state.http, &who, id, req).await?,
    ))
}

/// Assigns an open work package to a contractor (default: the best candidate now).
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    post,
    path = "/v1/work-packages/{id}/assign",
    tag = "workforce",
    operation_id = "assign_work_package",
    params(("id" = Uuid, Path, description = "Work package id")),
    request_body = AssignRequest,
    responses(
        (status = 200, description = "Assigned", body = PackageView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "Not open (`illegal_transition`), stale `version` (`version_conflict`), no contractor matches (`no_candidate`), or the contractor is unavailable (`contractor_unavailable`)", body = doc::ErrorBody),
        (status = 422, description = "`contractor_id` names no contractor (`unknown_contractor`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn assign(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<AssignRequest>,
) -> ApiResult<Json<PackageView>> {
    Ok(Json(
        wf::assign(&state.pool, &state.http, &who, id, req).await?,
    ))
}

/// Records progress (0–100) or a timestamped note on a work package, without moving it.
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    post,
    path = "/v1/work-packages/{id}/progress",
    tag = "workforce",
    operation_id = "work_package_progress",
    params(("id" = Uuid, Path, description = "Work package id")),
    request_body = ProgressRequest,
    responses(
        (status = 200, description = "Recorded", body = PackageView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The package is completed or cancelled (`invalid_state`), or changed since `version` (`version_conflict`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn progress(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<ProgressRequest>,
) -> ApiResult<Json<PackageView>> {
    Ok(Json(wf::record_progress(&state.pool, &who, id, req).await?))
}

/// Delegates a mission task to a person: creates a work package linked to it (opened, with candidates, unless `open: false`) and moves the task to `awaiting_human`; the task completes with the package's deliverable when the package completes, and is queued again if it is cancelled.
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    post,
    path = "/v1/missions/{id}/tasks/{task}/delegate",
    tag = "workforce",
    operation_id = "delegate_task",
    params(
        ("id" = Uuid, Path, description = "Mission id"),
        ("task" = String, Path, description = "Task key or id")
    ),
    request_body = CreatePackage,
    responses(
        (status = 201, description = "Delegated: the work package", body = PackageView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The task is not queued, retry_wait or awaiting_human, or the mission has ended (`invalid_state`); the task has a live package already (`already_delegated`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn delegate(
    State(state): State<AppState>,
    who: Principal,
    Path((id, task)): Path<(Uuid, String)>,
    Json(req): Json<CreatePackage>,
) -> ApiResult<(StatusCode, Json<PackageView>)> {
    let p = wf::delegate_task(&state.pool, &state.http, &who, id, &task, req).await?;
    Ok((StatusCode::CREATED, Json(p)))
}

// The workforce use cases' errors as the one JSON error body.
impl From<wf::WorkforceError> for ApiError {
    fn from(e: wf::WorkforceError) -> Self {
        use serde_json::json;
        use wf::WorkforceError as E;
        let message = e.to_string();
        match e {
            E::Invalid(e) => e.into(),
            E::Forbidden(e) => e.into(),
            E::UnknownValue(e) => e.into(),
            E::ContractorNotFound(_) | E::PackageNotFound(_) | E::MissionNotFound(_) => {
                ApiError::NotFound(message)
            }
            E::VersionConflict { id, now, .. } => ApiError::Conflict {
                code: "version_conflict",
                message,
                details: json!({ "id": id, "version": now }),
            },
            E::LostRace => ApiError::conflict("concurrent_update", message),
            E::AlreadyDelegated { task_id } => ApiError::Conflict {
                code: "already_delegated",
                message,
                details: json!({ "task_id": task_id }),
            },
            E::MissionFinished(_) => ApiError::conflict("invalid_state", message),
            E::NotDelegable { status, .. } => ApiError::Conflict {
                code: "invalid_state",
                message,
                details: json!({ "entity": "task", "status": status }),
            },
            E::AlreadyCompleted { id, rating } => ApiError::Conflict {
                code: "already_completed",
                message,
                details: json!({ "id": id, "quality_rating": rating }),
            },
            E::PackageFinished { status, .. } => ApiError::Conflict {
                code: "invalid_state",
                message,
                details: json!({ "entity": "work_package", "status": status }),
            },
            E::UnknownContractor(c) => ApiError::Unprocessable {
                code: "unknown_contractor",
                message,
                details: json!({ "contractor_id": c }),
            },
            E::ContractorUnavailable(c) => ApiError::Conflict {
                code: "contractor_unavailable",
                message,
                details: json!({ "contractor_id": c }),
            },
            E::NoCandidate { required_skills } => ApiError::Conflict {
                code: "no_candidate",
                message,
                details: json!({ "required_skills": required_skills }),
            },
            E::IllegalTransition(e) => ApiError::Conflict {
                code: "illegal_transition",
                message,
                details: json!({ "from": e.from, "to": e.to }),
            },
            E::Human(e) => (*e).into(),
            E::Database(e) => e.into(),
            E::Unexpected(e) => ApiError::Unexpected(e),
        }
    }
}

#[cfg(test)]
mod error_tests {
    use axum::{http::StatusCode, response::IntoResponse};
    use uuid::Uuid;

    use super::{ApiError, PackageStatus, wf::WorkforceError};

    async fn status_and_code(e: WorkforceError) -> (StatusCode, String) {
        let r = ApiError::from(e).into_response();
        let status = r.status();
        let body = axum::body::to_bytes(r.into_body(), usize::MAX)
            .await
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        (status, v["error"]["code"].as_str().unwrap().to_owned())
    }

    #[tokio::test]
    async fn workforce_errors_keep_their_status_and_code() {
        assert_eq!(
            status_and_code(WorkforceError::UnknownContractor(Uuid::nil())).await,
            (
                StatusCode::UNPROCESSABLE_ENTITY,
                "unknown_contractor".to_owned()
            )
        );
        assert_eq!(
            status_and_code(WorkforceError::IllegalTransition(
                super::wf::IllegalPackageTransition {
                    from: PackageStatus::Draft,
                    to: PackageStatus::Completed,
                }
            ))
            .await,
            (StatusCode::CONFLICT, "illegal_transition".to_owned())
        );
        assert_eq!(
            status_and_code(WorkforceError::LostRace).await,
            (StatusCode::CONFLICT, "concurrent_update".to_owned())
        );
    }
}
