//! Saved routines (`plan_templates`): methods made from finished missions.

use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::planning::PlanTemplate;

/// The workspace's routines, oldest first (later ones win on name clashes).
pub async fn routines(pool: &PgPool, workspace_id: Uuid) -> sqlx::Result<Vec<PlanTemplate>> {
    let rows = sqlx::query_scalar!(
        "SELECT body FROM plan_templates WHERE workspace_id = $1 AND source = 'routine' ORDER BY created_at",
        workspace_id
    )
    .fetch_all(pool)
    .await?;
    // A body that no longer parses (an older format) is skipped, not fatal.
    Ok(rows
        .into_iter()
        .filter_map(|body| serde_json::from_value(body).ok())
        .collect())
}

/// Stores a routine; `None` if the name is taken in this workspace.
pub async fn insert_routine(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    routine: &PlanTemplate,
    source_run_id: Uuid,
) -> sqlx::Result<Option<Uuid>> {
    let body = serde_json::to_value(routine).unwrap_or_default();
    sqlx::query_scalar!(
        "INSERT INTO plan_templates (id, workspace_id, name, description, keywords, source, source_run_id, body)
         VALUES ($1, $2, $3, $4, $5, 'routine', $6, $7)
         ON CONFLICT (workspace_id, name) DO NOTHING
         RETURNING id",
        Uuid::now_v7(),
        workspace_id,
        routine.name,
        routine.description,
        &routine.keywords,
        source_run_id,
        body
    )
    .fetch_optional(conn)
    .await
}
