//! SQL of intentions: insert, lock, status and progress changes, list.

use super::*;

/// An intention to insert.
pub struct NewIntention<'a> {
    /// Holder.
    pub agent_id: &'a str,
    /// What.
    pub description: &'a str,
    /// Goal.
    pub goal_id: Option<Uuid>,
    /// Desire.
    pub desire_id: Option<Uuid>,
    /// Strategy.
    pub strategy: &'a str,
    /// Priority.
    pub priority: f64,
}

/// Inserts an intention.
pub async fn insert_intention(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    i: NewIntention<'_>,
) -> sqlx::Result<IntentionView> {
    sqlx::query_as!(
        IntentionView,
        "INSERT INTO bdi_intentions (id, workspace_id, agent_id, description, goal_id, desire_id, strategy, priority)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         RETURNING id, agent_id, description, goal_id, desire_id, strategy, priority, progress, status,
                   needs_reconsideration, last_progress_at, version, created_at",
        Uuid::new_v4(),
        workspace_id,
        i.agent_id,
        i.description,
        i.goal_id,
        i.desire_id,
        i.strategy,
        i.priority
    )
    .fetch_one(conn)
    .await
}

/// Locks one of the agent's intentions.
pub async fn lock_intention(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    id: Uuid,
) -> sqlx::Result<Option<IntentionView>> {
    sqlx::query_as!(
        IntentionView,
        "SELECT id, agent_id, description, goal_id, desire_id, strategy, priority, progress, status,
                needs_reconsideration, last_progress_at, version, created_at
         FROM bdi_intentions WHERE workspace_id = $1 AND agent_id = $2 AND id = $3 FOR UPDATE",
        workspace_id,
        agent_id,
        id
    )
    .fetch_optional(conn)
    .await
}

/// Moves an intention, guarded by its version; `None` when stale. Any move
/// settles a pending reconsideration.
pub async fn set_intention_status(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
    version: i64,
    status: &str,
) -> sqlx::Result<Option<IntentionView>> {
    sqlx::query_as!(
        IntentionView,
        "UPDATE bdi_intentions SET status = $4, needs_reconsideration = false, version = version + 1,
                updated_at = now(),
                -- Resuming restarts the stall clock.
                last_progress_at = CASE WHEN $4 = 'active' THEN now() ELSE last_progress_at END
         WHERE workspace_id = $1 AND id = $2 AND version = $3
         RETURNING id, agent_id, description, goal_id, desire_id, strategy, priority, progress, status,
                   needs_reconsideration, last_progress_at, version, created_at",
        workspace_id,
        id,
        version,
        status
    )
    .fetch_optional(conn)
    .await
}

/// Records progress, guarded by its version; `None` when stale.
pub async fn set_progress(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
    version: i64,
    progress: f64,
) -> sqlx::Result<Option<IntentionView>> {
    sqlx::query_as!(
        IntentionView,
        "UPDATE bdi_intentions SET progress = $4, last_progress_at = now(), needs_reconsideration = false,
                version = version + 1, updated_at = now()
         WHERE workspace_id = $1 AND id = $2 AND version = $3
         RETURNING id, agent_id, description, goal_id, desire_id, strategy, priority, progress, status,
                   needs_reconsideration, last_progress_at, version, created_at",
        workspace_id,
        id,
        version,
        progress
    )
    .fetch_optional(conn)
    .await
}

/// The agent's intentions, oldest first.
pub async fn list_intentions(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    status: Option<&str>,
) -> sqlx::Result<Vec<IntentionView>> {
    sqlx::query_as!(
        IntentionView,
        "SELECT id, agent_id, description, goal_id, desire_id, strategy, priority, progress, status,
                needs_reconsideration, last_progress_at, version, created_at
         FROM bdi_intentions WHERE workspace_id = $1 AND agent_id = $2 AND ($3::text IS NULL OR status = $3)
         ORDER BY created_at, id LIMIT 1000",
        workspace_id,
        agent_id,
        status
    )
    .fetch_all(conn)
    .await
}

/// Seconds since a timestamp, by the database clock.
pub async fn seconds_since(conn: &mut PgConnection, at: OffsetDateTime) -> sqlx::Result<f64> {
    sqlx::query_scalar!(
        r#"SELECT EXTRACT(EPOCH FROM (now() - $1::timestamptz))::float8 AS "s!""#,
        at
    )
    .fetch_one(conn)
    .await
}
