//! `/v1/reservations`: advisory reservations of work surfaces with a TTL.

use axum::{extract::State, http::StatusCode};
use serde::{Deserialize, Serialize};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{
    AppState, doc,
    extract::{Json, Path, Query},
    page::Limit,
};
use crate::{
    auth::{Principal, Role},
    coordination::reservations::{
        self, DEFAULT_TTL_SECS, ReservationState, Reserve, Reserved, scopes_overlap, seconds_left,
    },
    error::{ApiError, ApiResult},
    store::reservations::{self as store, ReservationFilter, ReservationView},
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(show))
        .routes(routes!(release))
}

/// `POST /v1/reservations` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateReservation {
    /// What to reserve: a name or a pattern (`*` any run of characters, `?` one), e.g. `src/api/*` or `kanban-surface`; 1–256 characters.
    pub scope: String,
    /// The holder. An agent token reserves for itself (and defaults to itself); other tokens must name the agent.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Seconds to hold it (1–604800, default 900). Reserving the same scope again as its holder renews it.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 604800, default = 900)]
    pub ttl_secs: Option<i64>,
    /// Linked mission.
    #[serde(default)]
    pub mission_id: Option<Uuid>,
    /// Linked task (implies its mission).
    #[serde(default)]
    pub task_id: Option<Uuid>,
    /// Why (at most 1000 bytes).
    #[serde(default)]
    pub note: Option<String>,
}

/// A reservation with how long it still holds.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReservationStatus {
    /// The reservation.
    #[serde(flatten)]
    pub reservation: ReservationView,
    /// Whether it holds now: active and not past `expires_at`.
    pub holds: bool,
    /// Seconds until it expires (0 once it no longer holds).
    pub expires_in_secs: i64,
}

fn status(r: ReservationView, now: time::OffsetDateTime) -> ReservationStatus {
    let holds = r.state == ReservationState::Active.as_str() && r.expires_at > now;
    let left = if holds {
        seconds_left(r.expires_at, now).max(0)
    } else {
        0
    };
    ReservationStatus {
        reservation: r,
        holds,
        expires_in_secs: left,
    }
}

/// Reserves a scope for an agent. An overlapping scope held by another agent is a 409 naming the holder; a stale one (past its TTL) is taken over and marked `expired`.
///
/// Roles: admin, operator, worker, or an agent for itself.
#[utoipa::path(
    post,
    path = "/v1/reservations",
    tag = "reservations",
    operation_id = "create_reservation",
    request_body = CreateReservation,
    responses(
        (status = 201, description = "Reserved", body = ReservationStatus),
        (status = 200, description = "The holder reserved the same scope again: renewed", body = ReservationStatus),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 409, description = "Another agent holds an overlapping scope (`reservation_conflict`; details name the holder, reservation, scope and expiry)", body = doc::ErrorBody),
        (status = 422, description = "Unknown agent, mission or task", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn create(
    State(state): State<AppState>,
    who: Principal,
    Json(req): Json<CreateReservation>,
) -> ApiResult<(StatusCode, Json<ReservationStatus>)> {
    let agent_id = match (&who.agent_id, req.agent_id) {
        (Some(own), None) if who.role == Role::Agent => own.clone(),
        (_, Some(a)) => a,
        // Required of every caller but an agent (who reserves for itself).
        (_, None) => {
            return Err(ApiError::Unprocessable {
                code: "agent_required",
                message: "agent_id is required".into(),
                details: serde_json::json!({ "field": "agent_id" }),
            });
        }
    };
    who.require_self_or(&agent_id, &[Role::Admin, Role::Operator, Role::Worker])?;
    let mut tx = state.pool.begin().await?;
    let done = reservations::reserve(
        &mut tx,
        who.workspace_id,
        Reserve {
            scope: req.scope,
            agent_id,
            ttl_secs: req.ttl_secs.unwrap_or(DEFAULT_TTL_SECS),
            mission_id: req.mission_id,
            task_id: req.task_id,
            note: req.note.unwrap_or_default(),
        },
        &who.actor(),
    )
    .await?;
    let now = store::now(&mut tx).await?;
    tx.commit().await?;
    Ok(match done {
        Reserved::Created(r) => (StatusCode::CREATED, Json(status(r, now))),
        Reserved::Renewed(r) => (StatusCode::OK, Json(status(r, now))),
    })
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct ListParams {
    /// Only this state.
    #[param(inline)]
    state: Option<ReservationState>,
    /// Only this holder.
    agent: Option<String>,
    /// Only reservations whose scope overlaps this name or pattern.
    scope: Option<String>,
    /// Only this task's.
    task: Option<Uuid>,
    /// Most rows (1–1000, default 200).
    #[serde(default)]
    #[param(inline)]
    limit: Limit<200, 1000>,
}

/// Reservations, newest first.
#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReservationList {
    /// The reservations.
    pub reservations: Vec<ReservationStatus>,
}

/// The reservation status view: who holds what, until when. Filter `state=active` for what is held now (stale ones show `holds: false` until the sweep marks them expired).
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/reservations",
    tag = "reservations",
    operation_id = "list_reservations",
    params(ListParams),
    responses(
        (status = 200, description = "Reservations", body = ReservationList),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized)
    ),
    security(("api_token" = []))
)]
async fn list(
    State(state): State<AppState>,
    who: Principal,
    Query(p): Query<ListParams>,
) -> ApiResult<Json<ReservationList>> {
    let limit = p.limit.get()?;
    if let Some(scope) = &p.scope {
        reservations::validate_scope(scope)?;
    }
    let mut conn = state.pool.acquire().await?;
    let filter = ReservationFilter {
        state: p.state.map(|s| s.as_str().to_owned()),
        agent_id: p.agent,
        task_id: p.task,
    };
    let now = store::now(&mut conn).await?;
    let rows = store::list(&mut conn, who.workspace_id, &filter, limit).await?;
    let reservations = rows
        .into_iter()
        .filter(|r| {
            p.scope
                .as_deref()
                .is_none_or(|s| scopes_overlap(s, &r.scope))
        })
        .map(|r| status(r, now))
        .collect();
    Ok(Json(ReservationList { reservations }))
}

/// Shows one reservation.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/reservations/{id}",
    tag = "reservations",
    operation_id = "get_reservation",
    params(("id" = Uuid, Path, description = "Reservation id")),
    responses(
        (status = 200, description = "The reservation", body = ReservationStatus),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn show(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<ReservationStatus>> {
    let mut tx = state.pool.begin().await?;
    let r = store::lock(&mut tx, who.workspace_id, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no reservation {id}")))?;
    let now = store::now(&mut tx).await?;
    tx.commit().await?;
    Ok(Json(status(r, now)))
}

/// Releases a reservation. Releasing one that is no longer active is a 409 naming its state.
///
/// Roles: admin, operator, or the holder's own agent token.
#[utoipa::path(
    post,
    path = "/v1/reservations/{id}/release",
    tag = "reservations",
    operation_id = "release_reservation",
    params(("id" = Uuid, Path, description = "Reservation id")),
    responses(
        (status = 200, description = "Released", body = ReservationStatus),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "Already released or expired (`reservation_not_active`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn release(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<ReservationStatus>> {
    let holder = if who.role == Role::Agent {
        Some(who.agent_id.clone().unwrap_or_default())
    } else {
        who.require(&[Role::Admin, Role::Operator])?;
        None
    };
    let mut tx = state.pool.begin().await?;
    let r = reservations::release(
        &mut tx,
        who.workspace_id,
        id,
        holder.as_deref(),
        &who.actor(),
    )
    .await?;
    let now = store::now(&mut tx).await?;
    tx.commit().await?;
    Ok(Json(status(r, now)))
}

// ---- How reservation errors reach the client: status, code and details
// of the one JSON error body.

use serde_json::json;

use crate::coordination::reservations::{ReservationError, rfc3339};

impl From<ReservationError> for ApiError {
    fn from(e: ReservationError) -> Self {
        let message = e.to_string();
        match e {
            ReservationError::Invalid(e) => e.into(),
            ReservationError::UnknownAgent { agent_id } => ApiError::Unprocessable {
                code: "unknown_agent",
                message,
                details: json!({ "agent_id": agent_id }),
            },
            ReservationError::Linkage(e) => e.into(),
            ReservationError::Overlaps { held, .. } => ApiError::Conflict {
                code: "reservation_conflict",
                message,
                details: json!({
                    "holder": held.agent_id,
                    "reservation_id": held.id,
                    "scope": held.scope,
                    "expires_at": rfc3339(held.expires_at),
                }),
            },
            ReservationError::NotFound { .. } => ApiError::NotFound(message),
            ReservationError::NotYours { .. } => ApiError::Forbidden(message),
            ReservationError::NotActive { id, state } => ApiError::Conflict {
                code: "reservation_not_active",
                message,
                details: json!({ "reservation_id": id, "state": state }),
            },
            ReservationError::Database(e) => e.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use axum::response::IntoResponse;
    use serde_json::Value;

    use super::*;

    /// The status and the body's `error` object a client gets for `e`.
    async fn rendered(e: ApiError) -> (StatusCode, Value) {
        let response = e.into_response();
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("an error body is small");
        let body: Value = serde_json::from_slice(&body).expect("an error body is JSON");
        (status, body["error"].clone())
    }

    #[tokio::test]
    async fn reservation_errors_keep_their_status_code_and_details() {
        let id = Uuid::nil();
        let (status, error) = rendered(
            ReservationError::NotActive {
                id,
                state: "released".into(),
            }
            .into(),
        )
        .await;
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(error["code"], "reservation_not_active");
        assert_eq!(
            error["message"],
            format!("reservation {id} is released, not active")
        );
        assert_eq!(
            error["details"],
            json!({ "reservation_id": id, "state": "released" })
        );
        let (status, error) = rendered(
            ReservationError::NotYours {
                id,
                holder: "bob".into(),
            }
            .into(),
        )
        .await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert_eq!(error["code"], "forbidden");
        assert_eq!(error["details"], Value::Null);
    }
}
