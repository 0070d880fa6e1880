//! SQL of desires: insert, lock, list, and drops with their records.

use super::*;

/// A desire to insert.
pub struct NewDesire<'a> {
    /// Id.
    pub id: Uuid,
    /// Holder.
    pub agent_id: &'a str,
    /// What.
    pub description: &'a str,
    /// Kind.
    pub kind: &'a str,
    /// Formula components.
    pub inputs: coordinator_core::bdi::PriorityInputs,
    /// The formula's value.
    pub priority: f64,
    /// Served desires.
    pub serves: &'a [Uuid],
    /// Resources.
    pub resources: &'a [String],
    /// Direction.
    pub strategy: Option<&'a str>,
    /// Ruled-out desires.
    pub incompatible_with: &'a [Uuid],
}

/// Inserts a desire.
pub async fn insert_desire(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    d: NewDesire<'_>,
) -> sqlx::Result<DesireView> {
    sqlx::query_as!(
        DesireView,
        "INSERT INTO bdi_desires (id, workspace_id, agent_id, description, kind, base_priority, importance,
                                  urgency, strategic_alignment, dependency_status, priority, serves, resources,
                                  strategy, incompatible_with)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
         RETURNING id, agent_id, description, kind, base_priority, importance, urgency, strategic_alignment,
                   dependency_status, priority, rank, serves, resources, strategy, incompatible_with, status,
                   version, created_at",
        d.id,
        workspace_id,
        d.agent_id,
        d.description,
        d.kind,
        d.inputs.base_priority,
        d.inputs.importance,
        d.inputs.urgency,
        d.inputs.strategic_alignment,
        d.inputs.dependency_status,
        d.priority,
        d.serves,
        d.resources,
        d.strategy,
        d.incompatible_with
    )
    .fetch_one(conn)
    .await
}

/// All desires of an agent (every status), locked, highest priority first:
/// creation and drops serialise on them.
pub async fn lock_desires(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
) -> sqlx::Result<Vec<DesireView>> {
    sqlx::query_as!(
        DesireView,
        "SELECT id, agent_id, description, kind, base_priority, importance, urgency, strategic_alignment,
                dependency_status, priority, rank, serves, resources, strategy, incompatible_with, status,
                version, created_at
         FROM bdi_desires WHERE workspace_id = $1 AND agent_id = $2
         ORDER BY priority DESC, id FOR UPDATE",
        workspace_id,
        agent_id
    )
    .fetch_all(conn)
    .await
}

/// The agent's desires, highest priority first.
pub async fn list_desires(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    status: Option<&str>,
) -> sqlx::Result<Vec<DesireView>> {
    sqlx::query_as!(
        DesireView,
        "SELECT id, agent_id, description, kind, base_priority, importance, urgency, strategic_alignment,
                dependency_status, priority, rank, serves, resources, strategy, incompatible_with, status,
                version, created_at
         FROM bdi_desires WHERE workspace_id = $1 AND agent_id = $2 AND ($3::text IS NULL OR status = $3)
         ORDER BY priority DESC, created_at, id LIMIT 1000",
        workspace_id,
        agent_id,
        status
    )
    .fetch_all(conn)
    .await
}

/// Marks an active desire dropped, guarded by its version; false when stale.
pub async fn drop_desire(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
    version: i64,
) -> sqlx::Result<bool> {
    let n = sqlx::query!(
        "UPDATE bdi_desires SET status = 'dropped', rank = NULL, version = version + 1, updated_at = now()
         WHERE workspace_id = $1 AND id = $2 AND version = $3 AND status = 'active'",
        workspace_id,
        id,
        version
    )
    .execute(conn)
    .await?
    .rows_affected();
    Ok(n == 1)
}

/// Writes a drop record.
pub async fn insert_drop(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    r: &DropRecord,
    actor: &str,
) -> sqlx::Result<DropRecord> {
    sqlx::query_as!(
        DropRecord,
        "INSERT INTO bdi_desire_drops (workspace_id, desire_id, reason, related_desires_affected,
                                       cascaded_drops, cascade_of, actor)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         RETURNING desire_id, dropped_at, reason, related_desires_affected, cascaded_drops, cascade_of",
        workspace_id,
        r.desire_id,
        r.reason,
        &r.related_desires_affected,
        &r.cascaded_drops,
        r.cascade_of,
        actor
    )
    .fetch_one(conn)
    .await
}

/// A desire's drop record, if it was dropped.
pub async fn drop_record(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    desire_id: Uuid,
) -> sqlx::Result<Option<DropRecord>> {
    sqlx::query_as!(
        DropRecord,
        "SELECT desire_id, dropped_at, reason, related_desires_affected, cascaded_drops, cascade_of
         FROM bdi_desire_drops WHERE workspace_id = $1 AND desire_id = $2",
        workspace_id,
        desire_id
    )
    .fetch_optional(conn)
    .await
}
