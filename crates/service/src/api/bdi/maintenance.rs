//! The BDI maintenance routes: run the cycle now, read its status, list belief conflicts.

use super::*;

/// The maintenance job's status.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MaintenanceStatus {
    /// Seconds between scheduled cycles on each replica.
    pub interval_secs: u32,
    /// The job's last cycle over this workspace (by any replica), with its
    /// counts per phase; none before the first (the schedule skips
    /// workspaces without intentions, desires or beliefs).
    pub last_cycle: Option<CycleView>,
}

/// The BDI maintenance job: its interval and its last cycle over this workspace, with the cycle's time and results.
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
pub(crate) async fn maintenance_status(
    State(state): State<AppState>,
    who: Principal,
) -> ApiResult<Json<MaintenanceStatus>> {
    let mut conn = state.pool.acquire().await?;
    let last_cycle = store::last_cycle(&mut conn, who.workspace_id).await?;
    Ok(Json(MaintenanceStatus {
        interval_secs: state.bdi_interval_secs,
        last_cycle,
    }))
}

/// Runs a BDI maintenance cycle over this workspace now (intention pruning, desire re-sorting, belief conflict detection). One cycle runs at a time across replicas and workspaces: while another runs, this is a 409 `maintenance_running`.
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
pub(crate) async fn run_maintenance(
    State(state): State<AppState>,
    who: Principal,
) -> ApiResult<Json<CycleView>> {
    who.require(&[Role::Admin, Role::Operator])?;
    let covers = runtime::Covers::One(who.workspace_id);
    match runtime::run_once(&state.pool, &state.engine.replica_id, covers).await? {
        CycleOutcome::Ran(mut records) => records.pop().map(Json).ok_or_else(|| {
            ApiError::Unexpected(anyhow::anyhow!(
                "a cycle over one workspace wrote no record"
            ))
        }),
        CycleOutcome::Busy => Err(ApiError::conflict(
            "maintenance_running",
            "a BDI maintenance cycle is running on some replica; try again shortly",
        )),
    }
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(crate) struct ConflictParams {
    /// UTC day, `YYYY-MM-DD` (default today).
    #[param(format = Date)]
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
pub(crate) async fn conflicts(
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
