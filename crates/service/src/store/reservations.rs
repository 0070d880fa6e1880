//! SQL of reservations.

use serde::{Deserialize, Serialize};
use sqlx::PgConnection;
use time::OffsetDateTime;
use uuid::Uuid;

use coordinator_core::reservations::Reserve;

/// A reservation as stored and shown.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ReservationView {
    /// Id.
    pub id: Uuid,
    /// Workspace (not shown).
    #[serde(skip)]
    pub workspace_id: Uuid,
    /// The scope pattern.
    pub scope: String,
    /// The holder.
    pub agent_id: String,
    /// Linked mission.
    pub mission_id: Option<Uuid>,
    /// Linked task.
    pub task_id: Option<Uuid>,
    /// Why.
    pub note: String,
    /// `active`, `released` or `expired`. An `active` one past `expires_at` is stale: free to take over.
    pub state: String,
    /// Created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// When it stops holding.
    #[serde(with = "time::serde::rfc3339")]
    pub expires_at: OffsetDateTime,
    /// Released or expired at.
    #[serde(with = "time::serde::rfc3339::option")]
    pub ended_at: Option<OffsetDateTime>,
    /// For an expired one: the reservation that took its scope over.
    pub taken_over_by: Option<Uuid>,
    /// Optimistic version.
    pub version: i64,
}

/// Serialises reservation decisions of a workspace until the transaction ends.
pub async fn lock_workspace(conn: &mut PgConnection, workspace_id: Uuid) -> sqlx::Result<()> {
    // Namespace the key so it cannot collide with other advisory locks.
    sqlx::query!(
        "SELECT pg_advisory_xact_lock(hashtextextended('reservations:' || $1::text, 0))",
        workspace_id.to_string()
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The database's clock, so every replica judges expiry the same way.
pub async fn now(conn: &mut PgConnection) -> sqlx::Result<OffsetDateTime> {
    sqlx::query_scalar!(r#"SELECT now() AS "now!""#)
        .fetch_one(conn)
        .await
}

/// Every `active` reservation of the workspace (stale ones included).
pub async fn active(
    conn: &mut PgConnection,
    workspace_id: Uuid,
) -> sqlx::Result<Vec<ReservationView>> {
    sqlx::query_as!(
        ReservationView,
        "SELECT id, workspace_id, scope, agent_id, mission_id, task_id, note, state, created_at,
                expires_at, ended_at, taken_over_by, version
         FROM reservations WHERE workspace_id = $1 AND state = 'active'
         ORDER BY created_at, id",
        workspace_id
    )
    .fetch_all(conn)
    .await
}

/// Writes a new active reservation.
pub async fn insert(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
    r: &Reserve,
    mission_id: Option<Uuid>,
) -> sqlx::Result<ReservationView> {
    sqlx::query_as!(
        ReservationView,
        "INSERT INTO reservations (id, workspace_id, scope, agent_id, mission_id, task_id, note, expires_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(secs => $8))
         RETURNING id, workspace_id, scope, agent_id, mission_id, task_id, note, state, created_at,
                   expires_at, ended_at, taken_over_by, version",
        id,
        workspace_id,
        r.scope,
        r.agent_id,
        mission_id,
        r.task_id,
        r.note,
        r.ttl_secs as f64
    )
    .fetch_one(conn)
    .await
}

/// Extends an active reservation to `ttl_secs` from now.
pub async fn renew(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
    ttl_secs: i64,
) -> sqlx::Result<ReservationView> {
    sqlx::query_as!(
        ReservationView,
        "UPDATE reservations SET expires_at = now() + make_interval(secs => $3), version = version + 1
         WHERE workspace_id = $1 AND id = $2
         RETURNING id, workspace_id, scope, agent_id, mission_id, task_id, note, state, created_at,
                   expires_at, ended_at, taken_over_by, version",
        workspace_id,
        id,
        ttl_secs as f64
    )
    .fetch_one(conn)
    .await
}

/// Marks an active reservation expired (optionally naming its successor).
pub async fn expire(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
    successor: Option<Uuid>,
) -> sqlx::Result<ReservationView> {
    sqlx::query_as!(
        ReservationView,
        "UPDATE reservations SET state = 'expired', ended_at = now(), taken_over_by = $3, version = version + 1
         WHERE workspace_id = $1 AND id = $2 AND state = 'active'
         RETURNING id, workspace_id, scope, agent_id, mission_id, task_id, note, state, created_at,
                   expires_at, ended_at, taken_over_by, version",
        workspace_id,
        id,
        successor
    )
    .fetch_one(conn)
    .await
}

/// Locks one reservation.
pub async fn lock(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
) -> sqlx::Result<Option<ReservationView>> {
    sqlx::query_as!(
        ReservationView,
        "SELECT id, workspace_id, scope, agent_id, mission_id, task_id, note, state, created_at,
                expires_at, ended_at, taken_over_by, version
         FROM reservations WHERE workspace_id = $1 AND id = $2 FOR UPDATE",
        workspace_id,
        id
    )
    .fetch_optional(conn)
    .await
}

/// Marks an active reservation released.
pub async fn release(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
) -> sqlx::Result<ReservationView> {
    sqlx::query_as!(
        ReservationView,
        "UPDATE reservations SET state = 'released', ended_at = now(), version = version + 1
         WHERE workspace_id = $1 AND id = $2 AND state = 'active'
         RETURNING id, workspace_id, scope, agent_id, mission_id, task_id, note, state, created_at,
                   expires_at, ended_at, taken_over_by, version",
        workspace_id,
        id
    )
    .fetch_one(conn)
    .await
}

/// Marks every active reservation past its TTL expired (all workspaces).
pub async fn expire_due(conn: &mut PgConnection) -> sqlx::Result<Vec<ReservationView>> {
    sqlx::query_as!(
        ReservationView,
        "UPDATE reservations SET state = 'expired', ended_at = now(), version = version + 1
         WHERE id IN (SELECT id FROM reservations
                      WHERE state = 'active' AND expires_at <= now()
                      ORDER BY expires_at LIMIT 500 FOR UPDATE SKIP LOCKED)
         RETURNING id, workspace_id, scope, agent_id, mission_id, task_id, note, state, created_at,
                   expires_at, ended_at, taken_over_by, version"
    )
    .fetch_all(conn)
    .await
}

/// Which reservations to list.
#[derive(Debug, Clone, Default)]
pub struct ReservationFilter {
    /// Only this state.
    pub state: Option<String>,
    /// Only this holder.
    pub agent_id: Option<String>,
    /// Only this task's.
    pub task_id: Option<Uuid>,
}

/// Reservations, newest first (at most `limit`); stale active ones are shown
/// `active` with a past `expires_at` until the sweep marks them.
pub async fn list(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    f: &ReservationFilter,
    limit: i64,
) -> sqlx::Result<Vec<ReservationView>> {
    sqlx::query_as!(
        ReservationView,
        "SELECT id, workspace_id, scope, agent_id, mission_id, task_id, note, state, created_at,
                expires_at, ended_at, taken_over_by, version
         FROM reservations
         WHERE workspace_id = $1 AND ($2::text IS NULL OR state = $2)
           AND ($3::text IS NULL OR agent_id = $3) AND ($4::uuid IS NULL OR task_id = $4)
         ORDER BY created_at DESC, id
         LIMIT $5",
        workspace_id,
        f.state.as_deref(),
        f.agent_id.as_deref(),
        f.task_id,
        limit
    )
    .fetch_all(conn)
    .await
}
