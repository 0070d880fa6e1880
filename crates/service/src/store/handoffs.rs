//! SQL of handoffs: the context handed between an agent and a person (or
//! another agent), one row per handoff, linked to its task, and the task and
//! attempt changes of a handoff between agents. Every query is confined to a
//! workspace.

use serde::Serialize;
use serde_json::Value;
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

/// A handoff as the API shows it (the seed's payload plus its links).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct HandoffView {
    /// Id.
    pub id: Uuid,
    /// `agent_to_human`, `human_to_agent` or `agent_to_agent`.
    pub direction: String,
    /// Who handed off (an agent id, or a person).
    pub from: String,
    /// Who takes over (a person, or an agent id).
    pub to: String,
    /// The mission of the task.
    pub mission_id: Uuid,
    /// The task that changed hands.
    pub task_id: Uuid,
    /// What the receiver needs to know.
    pub context_summary: String,
    /// `[{task_id, description, status, blockers}]`.
    #[schema(value_type = Vec<Object>)]
    pub active_tasks: Value,
    /// `[{decision_id, description, status}]`.
    #[schema(value_type = Vec<Object>)]
    pub open_decisions: Value,
    /// `[{name, path}]`.
    #[schema(value_type = Vec<Object>)]
    pub artifacts: Value,
    /// The task's status before.
    pub task_status_from: String,
    /// The task's status after.
    pub task_status_to: String,
    /// The HANDOFF message sent to the receiving agent (`human_to_agent`, `agent_to_agent`).
    pub message_id: Option<Uuid>,
    /// The attempt the handing agent worked in, which ended (`agent_to_agent`).
    pub attempt_id: Option<Uuid>,
    /// Who made the request (token actor).
    pub created_by: String,
    /// When (the seed's `timestamp`).
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// A handoff about to be written.
#[derive(Debug)]
pub struct NewHandoff<'a> {
    /// Id.
    pub id: Uuid,
    /// Direction.
    pub direction: &'a str,
    /// From.
    pub from: &'a str,
    /// To.
    pub to: &'a str,
    /// Mission.
    pub mission_id: Uuid,
    /// Task.
    pub task_id: Uuid,
    /// Summary.
    pub context_summary: &'a str,
    /// Active tasks (array).
    pub active_tasks: Value,
    /// Open decisions (array).
    pub open_decisions: Value,
    /// Artifacts (array).
    pub artifacts: Value,
    /// Task status before.
    pub task_status_from: &'a str,
    /// Task status after.
    pub task_status_to: &'a str,
    /// Message sent.
    pub message_id: Option<Uuid>,
    /// The attempt that ended.
    pub attempt_id: Option<Uuid>,
}

/// Writes a handoff.
pub async fn insert(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    h: NewHandoff<'_>,
    actor: &str,
) -> sqlx::Result<HandoffView> {
    sqlx::query_as!(
        HandoffView,
        r#"INSERT INTO handoffs (id, workspace_id, direction, from_party, to_party, mission_id, task_id,
                                 context_summary, active_tasks, open_decisions, artifacts,
                                 task_status_from, task_status_to, message_id, created_by, attempt_id)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
           RETURNING id, direction, from_party AS "from", to_party AS "to", mission_id, task_id,
                     context_summary, active_tasks, open_decisions, artifacts, task_status_from,
                     task_status_to, message_id, attempt_id, created_by, created_at"#,
        h.id,
        workspace_id,
        h.direction,
        h.from,
        h.to,
        h.mission_id,
        h.task_id,
        h.context_summary,
        h.active_tasks,
        h.open_decisions,
        h.artifacts,
        h.task_status_from,
        h.task_status_to,
        h.message_id,
        actor,
        h.attempt_id
    )
    .fetch_one(conn)
    .await
}

/// One handoff.
pub async fn get(pool: &PgPool, workspace_id: Uuid, id: Uuid) -> sqlx::Result<Option<HandoffView>> {
    sqlx::query_as!(
        HandoffView,
        r#"SELECT id, direction, from_party AS "from", to_party AS "to", mission_id, task_id,
                  context_summary, active_tasks, open_decisions, artifacts, task_status_from,
                  task_status_to, message_id, attempt_id, created_by, created_at
           FROM handoffs WHERE workspace_id = $1 AND id = $2"#,
        workspace_id,
        id
    )
    .fetch_optional(pool)
    .await
}

/// Handoffs of the workspace, oldest first, optionally of one task or mission.
pub async fn list(
    pool: &PgPool,
    workspace_id: Uuid,
    task_id: Option<Uuid>,
    mission_id: Option<Uuid>,
    limit: i64,
) -> sqlx::Result<Vec<HandoffView>> {
    sqlx::query_as!(
        HandoffView,
        r#"SELECT id, direction, from_party AS "from", to_party AS "to", mission_id, task_id,
                  context_summary, active_tasks, open_decisions, artifacts, task_status_from,
                  task_status_to, message_id, attempt_id, created_by, created_at
           FROM handoffs
           WHERE workspace_id = $1 AND ($2::uuid IS NULL OR task_id = $2)
             AND ($3::uuid IS NULL OR mission_id = $3)
           ORDER BY created_at, id
           LIMIT $4"#,
        workspace_id,
        task_id,
        mission_id,
        limit
    )
    .fetch_all(pool)
    .await
}

/// Hints the dispatcher to give a requeued task to `agent_id` first (the
/// continuation hint: preferred while it has a free slot, cleared on claim).
pub async fn hint_agent(
    conn: &mut PgConnection,
    task_id: Uuid,
    agent_id: &str,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE orchestration_tasks SET continue_agent_id = $2, version = version + 1, updated_at = now()
         WHERE id = $1",
        task_id,
        agent_id
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Ends a live attempt of a task because its agent gave the task up (handed
/// it to another agent, or raised a blocker): `cancelled`, with `why` as its
/// error, so it counts as no failure and a later report on it is stale.
/// Returns its agent, or `None` when the attempt is not live any more.
pub async fn end_attempt(
    conn: &mut PgConnection,
    task_id: Uuid,
    attempt_id: Uuid,
    why: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar!(
        "UPDATE task_attempts SET status = 'cancelled', error = $3, finished_at = now()
         WHERE id = $1 AND task_id = $2 AND status IN ('dispatching', 'running')
         RETURNING agent_id",
        attempt_id,
        task_id,
        why
    )
    .fetch_optional(conn)
    .await
}

/// Moves a running task (at `version`) back to `queued` for `agent_id`
/// only, with `feedback` for its next dispatch; false if the task moved.
/// The pin is the one approval's `assignments` set: only that agent may
/// claim it (the escalation ladder's `other_agent` rung clears it).
pub async fn requeue_pinned(
    conn: &mut PgConnection,
    task_id: Uuid,
    version: i64,
    agent_id: &str,
    feedback: &str,
) -> sqlx::Result<bool> {
    let r = sqlx::query!(
        "UPDATE orchestration_tasks
         SET status = 'queued', pinned_agent_id = $3, feedback = $4, continue_agent_id = NULL,
             lease_owner = NULL, lease_expires_at = NULL, version = version + 1, updated_at = now()
         WHERE id = $1 AND version = $2 AND status = 'running'",
        task_id,
        version,
        agent_id,
        feedback
    )
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// An agent that could receive a task of `mission_id`: the workspace's
/// roster and the mission's own contractors, online or not.
#[derive(Debug, Clone)]
pub struct ProspectRow {
    /// Id.
    pub agent_id: String,
    /// Organisation role.
    pub role: String,
    /// Skills.
    pub skills: Vec<String>,
    /// Tools.
    pub tools: Vec<String>,
    /// Trust.
    pub trust: f64,
    /// Cost per task.
    pub cost_per_task: f64,
    /// Slots.
    pub max_concurrency: i32,
    /// Slots taken.
    pub running_count: i32,
    /// Model tier.
    pub model_tier: i32,
    /// `idle`, `working`, `blocked`, `done` or `offline` (retired contractors are offline).
    pub status: String,
}

/// Every agent that might receive a task of the mission (see [`ProspectRow`]).
pub async fn prospects(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    mission_id: Uuid,
) -> sqlx::Result<Vec<ProspectRow>> {
    sqlx::query_as!(
        ProspectRow,
        r#"SELECT agent_id, role, skills, tools, trust, cost_per_task, max_concurrency,
                GREATEST(running_count - agent_pending_slots(workspace_id, agent_id), 0) AS "running_count!",
                model_tier, status
         FROM agents
         WHERE workspace_id = $1 AND (kind = 'roster' OR mission_id = $2)
         ORDER BY agent_id"#,
        workspace_id,
        mission_id
    )
    .fetch_all(conn)
    .await
}
