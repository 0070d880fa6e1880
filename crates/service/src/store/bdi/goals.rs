//! SQL of goals: insert, lock, status changes, list.

use super::*;

/// A goal to insert.
pub struct NewGoal<'a> {
    /// Holder.
    pub agent_id: &'a str,
    /// What.
    pub description: &'a str,
    /// Tier.
    pub tier: &'a str,
    /// Parent.
    pub parent_goal_id: Option<Uuid>,
    /// Desire.
    pub desire_id: Option<Uuid>,
    /// Criteria.
    pub success_criteria: &'a str,
    /// Deadline.
    pub deadline: Option<OffsetDateTime>,
}

/// Inserts a goal.
pub async fn insert_goal(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    g: NewGoal<'_>,
) -> sqlx::Result<GoalView> {
    sqlx::query_as!(
        GoalView,
        "INSERT INTO bdi_goals (id, workspace_id, agent_id, description, tier, parent_goal_id, desire_id,
                                success_criteria, deadline)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         RETURNING id, agent_id, description, tier, parent_goal_id, desire_id, success_criteria, deadline,
                   status, version, created_at",
        Uuid::new_v4(),
        workspace_id,
        g.agent_id,
        g.description,
        g.tier,
        g.parent_goal_id,
        g.desire_id,
        g.success_criteria,
        g.deadline
    )
    .fetch_one(conn)
    .await
}

/// Locks one of the agent's goals.
pub async fn lock_goal(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    id: Uuid,
) -> sqlx::Result<Option<GoalView>> {
    sqlx::query_as!(
        GoalView,
        "SELECT id, agent_id, description, tier, parent_goal_id, desire_id, success_criteria, deadline,
                status, version, created_at
         FROM bdi_goals WHERE workspace_id = $1 AND agent_id = $2 AND id = $3 FOR UPDATE",
        workspace_id,
        agent_id,
        id
    )
    .fetch_optional(conn)
    .await
}

/// Moves a goal, guarded by its version; `None` when stale.
pub async fn set_goal_status(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
    version: i64,
    status: &str,
) -> sqlx::Result<Option<GoalView>> {
    sqlx::query_as!(
        GoalView,
        "UPDATE bdi_goals SET status = $4, version = version + 1, updated_at = now()
         WHERE workspace_id = $1 AND id = $2 AND version = $3
         RETURNING id, agent_id, description, tier, parent_goal_id, desire_id, success_criteria, deadline,
                   status, version, created_at",
        workspace_id,
        id,
        version,
        status
    )
    .fetch_optional(conn)
    .await
}

/// The agent's goals, oldest first.
pub async fn list_goals(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
) -> sqlx::Result<Vec<GoalView>> {
    sqlx::query_as!(
        GoalView,
        "SELECT id, agent_id, description, tier, parent_goal_id, desire_id, success_criteria, deadline,
                status, version, created_at
         FROM bdi_goals WHERE workspace_id = $1 AND agent_id = $2 ORDER BY created_at, id LIMIT 1000",
        workspace_id,
        agent_id
    )
    .fetch_all(conn)
    .await
}
