//! SQL of beliefs: lock by key, insert, update, their revision history, list.

use super::*;

/// Locks the agent's belief on (category, subject), if any.
pub async fn lock_belief_by_key(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    category: &str,
    subject: &str,
) -> sqlx::Result<Option<BeliefView>> {
    sqlx::query_as!(
        BeliefView,
        "SELECT id, agent_id, category, subject, content, certainty, conflict, version, created_at, updated_at
         FROM bdi_beliefs WHERE workspace_id = $1 AND agent_id = $2 AND category = $3 AND subject = $4
         FOR UPDATE",
        workspace_id,
        agent_id,
        category,
        subject
    )
    .fetch_optional(conn)
    .await
}

/// Inserts a belief; `None` when a concurrent writer inserted the same key first.
pub async fn insert_belief(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    category: &str,
    subject: &str,
    content: &str,
    certainty: f64,
) -> sqlx::Result<Option<BeliefView>> {
    sqlx::query_as!(
        BeliefView,
        "INSERT INTO bdi_beliefs (id, workspace_id, agent_id, category, subject, content, certainty)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (workspace_id, agent_id, category, subject) DO NOTHING
         RETURNING id, agent_id, category, subject, content, certainty, conflict, version, created_at, updated_at",
        Uuid::new_v4(),
        workspace_id,
        agent_id,
        category,
        subject,
        content,
        certainty
    )
    .fetch_optional(conn)
    .await
}

/// Writes a belief's new state, guarded by its version; `None` when stale.
pub async fn update_belief(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
    version: i64,
    content: &str,
    certainty: f64,
    conflict: bool,
) -> sqlx::Result<Option<BeliefView>> {
    sqlx::query_as!(
        BeliefView,
        "UPDATE bdi_beliefs SET content = $4, certainty = $5, conflict = $6, version = version + 1, updated_at = now()
         WHERE workspace_id = $1 AND id = $2 AND version = $3
         RETURNING id, agent_id, category, subject, content, certainty, conflict, version, created_at, updated_at",
        workspace_id,
        id,
        version,
        content,
        certainty,
        conflict
    )
    .fetch_optional(conn)
    .await
}

/// A revision log entry to write.
pub struct NewRevision<'a> {
    /// The belief.
    pub belief_id: Uuid,
    /// What happened.
    pub outcome: &'a str,
    /// Before.
    pub old: Option<(&'a str, f64)>,
    /// Offered.
    pub new_content: &'a str,
    /// Offered.
    pub new_certainty: f64,
    /// Why.
    pub reason: &'a str,
    /// Who.
    pub actor: &'a str,
}

/// Appends to a belief's revision log.
pub async fn insert_revision(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    r: NewRevision<'_>,
) -> sqlx::Result<RevisionView> {
    sqlx::query_as!(
        RevisionView,
        "INSERT INTO bdi_belief_revisions
           (workspace_id, belief_id, outcome, old_content, new_content, old_certainty, new_certainty, reason, actor)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         RETURNING id, belief_id, outcome, old_content, new_content, old_certainty, new_certainty, reason, actor, created_at",
        workspace_id,
        r.belief_id,
        r.outcome,
        r.old.map(|o| o.0),
        r.new_content,
        r.old.map(|o| o.1),
        r.new_certainty,
        r.reason,
        r.actor
    )
    .fetch_one(conn)
    .await
}

/// The agent's beliefs, by subject.
pub async fn list_beliefs(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    category: Option<&str>,
    subject: Option<&str>,
) -> sqlx::Result<Vec<BeliefView>> {
    sqlx::query_as!(
        BeliefView,
        "SELECT id, agent_id, category, subject, content, certainty, conflict, version, created_at, updated_at
         FROM bdi_beliefs
         WHERE workspace_id = $1 AND agent_id = $2 AND ($3::text IS NULL OR category = $3)
           AND ($4::text IS NULL OR subject = $4)
         ORDER BY subject, category, id LIMIT 1000",
        workspace_id,
        agent_id,
        category,
        subject
    )
    .fetch_all(conn)
    .await
}

/// A belief's revision log, oldest first; `None` when the belief is not the agent's.
pub async fn revisions(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    belief_id: Uuid,
) -> sqlx::Result<Option<Vec<RevisionView>>> {
    let exists = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM bdi_beliefs WHERE workspace_id = $1 AND agent_id = $2 AND id = $3) AS "e!""#,
        workspace_id,
        agent_id,
        belief_id
    )
    .fetch_one(&mut *conn)
    .await?;
    if !exists {
        return Ok(None);
    }
    sqlx::query_as!(
        RevisionView,
        "SELECT id, belief_id, outcome, old_content, new_content, old_certainty, new_certainty, reason, actor, created_at
         FROM bdi_belief_revisions WHERE workspace_id = $1 AND belief_id = $2 ORDER BY id",
        workspace_id,
        belief_id
    )
    .fetch_all(conn)
    .await
    .map(Some)
}
