//! SQL of the attention list: everything in a workspace that waits for a
//! person, read in one statement from where each kind of wait lives (mission
//! status, task status, pending decisions and tool approvals).

use sqlx::PgConnection;
use time::OffsetDateTime;
use uuid::Uuid;

/// One thing that waits for a person, as stored.
#[derive(Debug, Clone)]
pub struct AttentionRow {
    /// `plan_approval`, `results_review`, `human_task`, `budget`, `decision` or `tool_approval`.
    pub kind: String,
    /// The mission it belongs to (a decision may belong to none).
    pub mission_id: Option<Uuid>,
    /// The mission's title, else its goal.
    pub mission_name: Option<String>,
    /// The task, when it is about one.
    pub task_id: Option<Uuid>,
    /// Its key.
    pub task_key: Option<String>,
    /// The decision or tool approval, for those kinds.
    pub item_id: Option<Uuid>,
    /// What the row says about itself: a task's last error, a decision's
    /// description, a tool call's tool and agent.
    pub detail: Option<String>,
    /// Tasks in the plan (plan approval), or the task's estimated cost (budget).
    pub amount: Option<f64>,
    /// The mission's budget limit.
    pub budget_limit: Option<f64>,
    /// What the mission has spent.
    pub budget_spent: f64,
    /// Since when it waits.
    pub since: OffsetDateTime,
}

/// Most items one list returns.
pub const MAX_ITEMS: i64 = 500;

/// What waits for a person in the workspace (or one mission), oldest first.
/// A task that waits on a pending decision is listed once, as the decision.
pub async fn list(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    mission_id: Option<Uuid>,
) -> sqlx::Result<Vec<AttentionRow>> {
    sqlx::query_as!(
        AttentionRow,
        r#"WITH runs AS (
               SELECT id, COALESCE(title, goal) AS name, status, updated_at,
                      budget_limit, budget_spent
               FROM orchestration_runs
               WHERE workspace_id = $1 AND ($2::uuid IS NULL OR id = $2)
                 AND status NOT IN ('completed', 'cancelled')
           )
           SELECT kind AS "kind!", mission_id, mission_name,
                  task_id, task_key, item_id, detail, amount, budget_limit,
                  budget_spent AS "budget_spent!", since AS "since!"
           FROM (
               SELECT CASE r.status WHEN 'awaiting_approval' THEN 'plan_approval' ELSE 'results_review' END AS kind,
                      r.id AS mission_id, r.name AS mission_name, NULL::uuid AS task_id,
                      NULL::text AS task_key, NULL::uuid AS item_id, NULL::text AS detail,
                      (SELECT count(*) FROM orchestration_tasks t WHERE t.run_id = r.id)::float8 AS amount,
                      r.budget_limit, r.budget_spent, r.updated_at AS since
               FROM runs r WHERE r.status IN ('awaiting_approval', 'awaiting_review')
             UNION ALL
               SELECT CASE WHEN (SELECT e.kind FROM orchestration_events e
                                 WHERE e.run_id = t.run_id AND e.task_id = t.id
                                 ORDER BY e.seq DESC LIMIT 1) = 'task.budget_refused'
                           THEN 'budget' ELSE 'human_task' END,
                      r.id, r.name, t.id, t.task_key, NULL, t.last_error, t.estimated_cost,
                      r.budget_limit, r.budget_spent, t.updated_at
               FROM runs r JOIN orchestration_tasks t ON t.run_id = r.id
               WHERE t.status = 'awaiting_human'
                 AND NOT EXISTS (SELECT 1 FROM governance_decisions d
                                 WHERE d.task_id = t.id AND d.status = 'pending')
             UNION ALL
               SELECT 'decision', d.mission_id, COALESCE(r.title, r.goal), d.task_id,
                      (SELECT t.task_key FROM orchestration_tasks t WHERE t.id = d.task_id),
                      d.id, d.description, d.estimated_cost, r.budget_limit,
                      COALESCE(r.budget_spent, 0), d.created_at
               FROM governance_decisions d LEFT JOIN orchestration_runs r ON r.id = d.mission_id
               WHERE d.workspace_id = $1 AND d.status = 'pending'
                 AND ($2::uuid IS NULL OR d.mission_id = $2)
             UNION ALL
               SELECT 'tool_approval', r.id, r.name, a.task_id,
                      (SELECT t.task_key FROM orchestration_tasks t WHERE t.id = a.task_id),
                      a.id, a.tool || ' by ' || a.agent_id, NULL, r.budget_limit, r.budget_spent,
                      a.created_at
               FROM tool_approval_requests a JOIN runs r ON r.id = a.run_id
               WHERE a.workspace_id = $1 AND a.status = 'pending'
           ) items
           ORDER BY since, mission_id, task_key NULLS FIRST
           LIMIT $3"#,
        workspace_id,
        mission_id,
        MAX_ITEMS
    )
    .fetch_all(conn)
    .await
}
