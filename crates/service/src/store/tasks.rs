//! Tasks, their dependencies, the ready queue and their board cards.
//!
//! Every task transition here is a guarded write (version or status) that
//! also writes its event and its board card, in the caller's transaction.
//! Callers hold the mission's row lock (see `missions::lock`).

use std::collections::BTreeMap;

use serde_json::Value;
use sqlx::PgConnection;
use time::OffsetDateTime;
use uuid::Uuid;

use super::events::{EventKind, EventPayload, payloads};
use crate::{
    domain::{TaskEvent, TaskStatus},
    planning::ValidatedPlan,
};

/// A task row.
#[derive(Debug, Clone)]
pub struct TaskRow {
    /// Id.
    pub id: Uuid,
    /// Workspace.
    pub workspace_id: Uuid,
    /// Mission.
    pub run_id: Uuid,
    /// Plan-local key.
    pub task_key: String,
    /// Position in the plan.
    pub task_order: i32,
    /// Title.
    pub title: String,
    /// Kind of work.
    pub task_type: String,
    /// Instructions.
    pub description: String,
    /// Skills needed.
    pub required_skills: Vec<String>,
    /// Tools needed.
    pub required_tools: Vec<String>,
    /// Criteria (JSON array).
    pub success_criteria: Value,
    /// Inputs (JSON object).
    pub inputs: Value,
    /// Result, once succeeded.
    pub output: Option<Value>,
    /// Status (see [`TaskStatus`]).
    pub status: String,
    /// Agent of the latest attempt.
    pub assigned_agent_id: Option<String>,
    /// Agent chosen at approval; the dispatcher uses only this one.
    pub pinned_agent_id: Option<String>,
    /// Score of that choice.
    pub assignment_score: Option<f64>,
    /// Attempts so far.
    pub attempt_count: i32,
    /// Failed attempts so far.
    pub failure_count: i32,
    /// Continuations so far.
    pub continuation_count: i32,
    /// Attempts allowed.
    pub max_attempts: i32,
    /// When a retry is due.
    pub next_attempt_at: Option<OffsetDateTime>,
    /// The attempt that counts.
    pub current_attempt_id: Option<Uuid>,
    /// When the live attempt's lease runs out.
    pub lease_expires_at: Option<OffsetDateTime>,
    /// Latest error.
    pub last_error: Option<String>,
    /// Feedback for the next attempt.
    pub feedback: Option<String>,
    /// Planned cost.
    pub estimated_cost: f64,
    /// Cost so far.
    pub actual_cost: f64,
    /// May be dropped without failing the mission.
    pub optional: bool,
    /// Guard for writes.
    pub version: i64,
    /// When it started first.
    pub started_at: Option<OffsetDateTime>,
    /// When it ended.
    pub finished_at: Option<OffsetDateTime>,
    /// Last rung of the escalation ladder reached (see [`crate::domain::Rung`]).
    pub escalation_step: Option<String>,
    /// Agents that may not take it any more.
    pub excluded_agents: Vec<String>,
    /// Lowest model tier allowed.
    pub min_model_tier: i32,
    /// A result waits for a verifier's verdict.
    pub verify_pending: bool,
    /// The result being verified.
    pub candidate_output: Option<Value>,
    /// The agent a continuation goes back to.
    pub continue_agent_id: Option<String>,
}

impl TaskRow {
    /// The parsed status.
    pub fn status(&self) -> TaskStatus {
        self.status.parse().unwrap_or(TaskStatus::Failed)
    }

    /// The parsed escalation rung.
    pub fn rung(&self) -> Option<crate::domain::Rung> {
        self.escalation_step.as_deref().and_then(|s| s.parse().ok())
    }

    /// The parsed success criteria (invalid ones are ignored: plans were validated).
    pub fn criteria(&self) -> Vec<crate::planning::Criterion> {
        serde_json::from_value(self.success_criteria.clone()).unwrap_or_default()
    }
}

/// Loads one task (caller holds the mission lock, so it cannot move under us).
pub async fn get(conn: &mut PgConnection, task_id: Uuid) -> sqlx::Result<TaskRow> {
    sqlx::query_as!(
        TaskRow,
        r#"SELECT id, workspace_id, run_id, task_key, task_order, title, task_type, description,
                  required_skills, required_tools, success_criteria, inputs, output, status,
                  assigned_agent_id, pinned_agent_id, assignment_score, attempt_count, failure_count,
                  continuation_count, max_attempts, next_attempt_at, current_attempt_id,
                  lease_expires_at, last_error, feedback, estimated_cost, actual_cost, optional,
                  version, started_at, finished_at, escalation_step, excluded_agents,
                  min_model_tier, verify_pending, candidate_output, continue_agent_id
           FROM orchestration_tasks WHERE id = $1"#,
        task_id
    )
    .fetch_one(conn)
    .await
}

/// Loads several tasks, in id order.
pub async fn get_many(conn: &mut PgConnection, ids: &[Uuid]) -> sqlx::Result<Vec<TaskRow>> {
    sqlx::query_as!(
        TaskRow,
        r#"SELECT id, workspace_id, run_id, task_key, task_order, title, task_type, description,
                  required_skills, required_tools, success_criteria, inputs, output, status,
                  assigned_agent_id, pinned_agent_id, assignment_score, attempt_count, failure_count,
                  continuation_count, max_attempts, next_attempt_at, current_attempt_id,
                  lease_expires_at, last_error, feedback, estimated_cost, actual_cost, optional,
                  version, started_at, finished_at, escalation_step, excluded_agents,
                  min_model_tier, verify_pending, candidate_output, continue_agent_id
           FROM orchestration_tasks WHERE id = ANY($1) ORDER BY id"#,
        ids
    )
    .fetch_all(conn)
    .await
}

/// All tasks of a mission in plan order.
pub async fn list_for_mission(conn: &mut PgConnection, run_id: Uuid) -> sqlx::Result<Vec<TaskRow>> {
    sqlx::query_as!(
        TaskRow,
        r#"SELECT id, workspace_id, run_id, task_key, task_order, title, task_type, description,
                  required_skills, required_tools, success_criteria, inputs, output, status,
                  assigned_agent_id, pinned_agent_id, assignment_score, attempt_count, failure_count,
                  continuation_count, max_attempts, next_attempt_at, current_attempt_id,
                  lease_expires_at, last_error, feedback, estimated_cost, actual_cost, optional,
                  version, started_at, finished_at, escalation_step, excluded_agents,
                  min_model_tier, verify_pending, candidate_output, continue_agent_id
           FROM orchestration_tasks WHERE run_id = $1 ORDER BY task_order"#,
        run_id
    )
    .fetch_all(conn)
    .await
}

/// `(task, depends_on)` edges of a mission.
pub async fn edges_for_mission(
    conn: &mut PgConnection,
    run_id: Uuid,
) -> sqlx::Result<Vec<(Uuid, Uuid)>> {
    let rows = sqlx::query!(
        "SELECT task_id, depends_on_task_id FROM orchestration_task_dependencies
         WHERE run_id = $1 ORDER BY task_id, depends_on_task_id",
        run_id
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.task_id, r.depends_on_task_id))
        .collect())
}

/// Inserts a validated plan's tasks (all `pending`), edges and board cards.
/// Tasks whose key is in `existing` are already stored (kept from an earlier
/// plan version) and are skipped; new tasks may depend on them by key. New
/// tasks are ordered after `order_from`.
pub async fn insert_plan(
    conn: &mut PgConnection,
    target: PlanTarget<'_>,
    plan: &ValidatedPlan,
) -> sqlx::Result<usize> {
    let PlanTarget {
        workspace_id,
        run_id,
        plan_version,
        max_attempts,
        existing,
        order_from,
    } = target;
    let mut ids: BTreeMap<String, Uuid> = existing.clone();
    let new_tasks: Vec<_> = plan
        .plan
        .tasks
        .iter()
        .filter(|t| !existing.contains_key(&t.id))
        .collect();
    for (order, t) in (order_from..).zip(new_tasks.iter()) {
        let id = Uuid::now_v7();
        let criteria = serde_json::to_value(&t.success_criteria).unwrap_or(Value::Null);
        sqlx::query!(
            "INSERT INTO orchestration_tasks
               (id, workspace_id, run_id, task_key, task_order, title, task_type, description,
                required_skills, required_tools, success_criteria, inputs, status,
                max_attempts, estimated_cost, optional, plan_version)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'pending', $13, $14, $15, $16)",
            id,
            workspace_id,
            run_id,
            t.id,
            order,
            t.title,
            t.task_type,
            t.description,
            &t.required_skills,
            &t.required_tools,
            criteria,
            t.inputs,
            max_attempts,
            t.estimated_cost,
            t.optional,
            plan_version
        )
        .execute(&mut *conn)
        .await?;
        sqlx::query!(
            "INSERT INTO board_tasks (id, workspace_id, source_type, source_id, run_id, title, column_name)
             VALUES ($1, $2, 'orchestration', $3, $4, $5, 'backlog')",
            Uuid::now_v7(),
            workspace_id,
            id,
            run_id,
            t.title
        )
        .execute(&mut *conn)
        .await?;
        ids.insert(t.id.clone(), id);
    }
    for t in &new_tasks {
        let Some(task) = ids.get(&t.id).copied() else {
            continue;
        };
        for dep in &t.depends_on {
            if let Some(dep) = ids.get(dep).copied() {
                sqlx::query!(
                    "INSERT INTO orchestration_task_dependencies (workspace_id, run_id, task_id, depends_on_task_id)
                     VALUES ($1, $2, $3, $4)",
                    workspace_id,
                    run_id,
                    task,
                    dep
                )
                .execute(&mut *conn)
                .await?;
            }
        }
    }
    Ok(new_tasks.len())
}

/// Where a plan's tasks go.
pub struct PlanTarget<'a> {
    /// Workspace.
    pub workspace_id: Uuid,
    /// Mission.
    pub run_id: Uuid,
    /// The plan version the new tasks belong to.
    pub plan_version: i32,
    /// Attempts allowed per task.
    pub max_attempts: i32,
    /// Tasks already stored, by key.
    pub existing: &'a BTreeMap<String, Uuid>,
    /// `task_order` of the first new task.
    pub order_from: i32,
}

/// Deletes the tasks of a mission that have not started (pending, or queued
/// and never attempted), with their cards, queue rows and edges, so a new plan
/// can replace them. Started and finished tasks stay. Returns how many went.
pub async fn remove_unstarted(conn: &mut PgConnection, run_id: Uuid) -> sqlx::Result<u64> {
    let gone = sqlx::query_scalar!(
        "DELETE FROM orchestration_tasks
         WHERE run_id = $1 AND attempt_count = 0 AND status IN ('pending', 'queued', 'awaiting_approval')
         RETURNING id",
        run_id
    )
    .fetch_all(&mut *conn)
    .await?;
    sqlx::query!(
        "DELETE FROM board_tasks WHERE source_type = 'orchestration' AND source_id = ANY($1)",
        &gone
    )
    .execute(&mut *conn)
    .await?;
    Ok(gone.len() as u64)
}

/// Pins tasks (by key) to agents; returns the keys that matched no task.
pub async fn pin_agents(
    conn: &mut PgConnection,
    run_id: Uuid,
    pins: &BTreeMap<String, String>,
) -> sqlx::Result<Vec<String>> {
    let mut unknown = Vec::new();
    for (key, agent) in pins {
        let r = sqlx::query!(
            "UPDATE orchestration_tasks SET pinned_agent_id = $3, version = version + 1, updated_at = now()
             WHERE run_id = $1 AND task_key = $2 AND status = 'pending'",
            run_id,
            key,
            agent
        )
        .execute(&mut *conn)
        .await?;
        if r.rows_affected() == 0 {
            unknown.push(key.clone());
        }
    }
    Ok(unknown)
}

/// What a task transition writes besides the task row.
pub struct Change<'a> {
    /// The task.
    pub task_id: Uuid,
    /// Its mission.
    pub run_id: Uuid,
    /// Its workspace.
    pub workspace_id: Uuid,
    /// The status it moved to.
    pub to: TaskStatus,
    /// Event kind.
    pub kind: EventKind,
    /// Who caused it.
    pub actor: &'a str,
    /// The attempt involved, if any.
    pub attempt_id: Option<Uuid>,
    /// Event details.
    pub payload: Value,
}

impl<'a> Change<'a> {
    /// A change of `task` with a typed event payload, written under its kind.
    pub fn event<P: EventPayload>(
        task: &TaskRow,
        to: TaskStatus,
        actor: &'a str,
        attempt_id: Option<Uuid>,
        payload: &P,
    ) -> Change<'a> {
        let (kind, payload) = payload.to_event();
        Change::of(task, to, kind, actor, attempt_id, payload)
    }

    /// A change of `task` (its ids taken from the row).
    pub fn of(
        task: &TaskRow,
        to: TaskStatus,
        kind: EventKind,
        actor: &'a str,
        attempt_id: Option<Uuid>,
        payload: Value,
    ) -> Change<'a> {
        Change {
            task_id: task.id,
            run_id: task.run_id,
            workspace_id: task.workspace_id,
            to,
            kind,
            actor,
            attempt_id,
            payload,
        }
    }
}

/// Writes a task transition's event and moves its board card, in one go.
/// The payload gets the new status as `status`, so the log replays exactly.
pub async fn record(conn: &mut PgConnection, mut c: Change<'_>) -> sqlx::Result<()> {
    if let Value::Object(m) = &mut c.payload {
        m.insert("status".into(), Value::String(c.to.as_str().into()));
    }
    // One statement: the card moves and the event is appended (its
    // sequence number bumped on the mission row the caller has locked).
    sqlx::query!(
        "WITH card AS (
             UPDATE board_tasks b SET column_name = $2, assignee = t.assigned_agent_id,
                    attempt_number = t.attempt_count, cost = t.actual_cost,
                    version = b.version + 1, updated_at = now()
             FROM orchestration_tasks t
             WHERE b.source_type = 'orchestration' AND b.source_id = $1 AND t.id = $1
         ),
         s AS (
             UPDATE orchestration_runs SET event_seq = event_seq + 1
             WHERE id = $3 AND workspace_id = $4
             RETURNING event_seq
         )
         INSERT INTO orchestration_events (workspace_id, run_id, seq, task_id, attempt_id, kind, actor, payload)
         SELECT $4, $3, s.event_seq, $1, $5, $6, $7, $8 FROM s",
        c.task_id,
        c.to.board_column().as_str(),
        c.run_id,
        c.workspace_id,
        c.attempt_id,
        c.kind.as_str(),
        c.actor,
        c.payload
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Adds a task to the ready queue, due at `ready_at`.
pub async fn enqueue(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    run_id: Uuid,
    task_id: Uuid,
    priority: i32,
    ready_at: OffsetDateTime,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO task_queue (task_id, workspace_id, run_id, priority, ready_at)
         SELECT $1, $2, $3, $4, $5
         -- Only executing missions queue work; resuming enqueues the rest.
         WHERE EXISTS (SELECT 1 FROM orchestration_runs WHERE id = $3 AND status = 'executing')
         ON CONFLICT (task_id) DO UPDATE SET ready_at = EXCLUDED.ready_at, priority = EXCLUDED.priority",
        task_id,
        workspace_id,
        run_id,
        priority,
        ready_at
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Moves every `pending` task of the mission whose dependencies are all
/// satisfied to `queued` (only dependents of `after` when given), enqueues
/// them, and records each. Returns how many moved.
pub async fn promote_ready(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    run_id: Uuid,
    after: Option<Uuid>,
    priority: i32,
    actor: &str,
) -> sqlx::Result<usize> {
    // The pure lifecycle allows exactly pending → queued here; the SQL status
    // guard is that rule.
    debug_assert!(TaskStatus::Pending.next(TaskEvent::DependenciesMet).is_ok());
    // One statement: promote, enqueue (executing missions only), move the
    // cards, and append the events with consecutive sequence numbers.
    let promoted = sqlx::query_scalar!(
        r#"WITH promoted AS (
               UPDATE orchestration_tasks t
               SET status = 'queued', version = version + 1, updated_at = now()
               WHERE t.run_id = $1 AND t.status = 'pending'
                 AND ($2::uuid IS NULL OR t.id IN (
                       SELECT task_id FROM orchestration_task_dependencies WHERE depends_on_task_id = $2))
                 AND NOT EXISTS (
                       SELECT 1 FROM orchestration_task_dependencies d
                       JOIN orchestration_tasks p ON p.id = d.depends_on_task_id
                       WHERE d.task_id = t.id AND p.status NOT IN ('succeeded', 'skipped'))
               RETURNING t.id, t.task_key, t.task_order, t.assigned_agent_id, t.attempt_count, t.actual_cost
           ),
           queued AS (
               INSERT INTO task_queue (task_id, workspace_id, run_id, priority, ready_at)
               SELECT id, $3, $1, $4, now() FROM promoted
               WHERE EXISTS (SELECT 1 FROM orchestration_runs WHERE id = $1 AND status = 'executing')
               ON CONFLICT (task_id) DO UPDATE SET ready_at = EXCLUDED.ready_at, priority = EXCLUDED.priority
           ),
           cards AS (
               UPDATE board_tasks b SET column_name = $6, assignee = p.assigned_agent_id,
                      attempt_number = p.attempt_count, cost = p.actual_cost,
                      version = b.version + 1, updated_at = now()
               FROM promoted p
               WHERE b.source_type = 'orchestration' AND b.source_id = p.id
           ),
           n AS (SELECT count(*) AS n FROM promoted),
           seq AS (
               UPDATE orchestration_runs r SET event_seq = r.event_seq + n.n
               FROM n WHERE r.id = $1 AND n.n > 0
               RETURNING r.event_seq - n.n AS base
           ),
           events AS (
               INSERT INTO orchestration_events (workspace_id, run_id, seq, task_id, kind, actor, payload)
               SELECT $3, $1, seq.base + row_number() OVER (ORDER BY p.task_order, p.id), p.id, $7, $5,
                      jsonb_build_object('key', p.task_key, 'status', $8::text)
               FROM promoted p CROSS JOIN seq
           )
           SELECT n AS "n!" FROM n"#,
        run_id,
        after,
        workspace_id,
        priority,
        actor,
        TaskStatus::Queued.board_column().as_str(),
        EventKind::TaskQueued.as_str(),
        TaskStatus::Queued.as_str()
    )
    .fetch_one(&mut *conn)
    .await?;
    Ok(promoted as usize)
}

/// Cancels every non-terminal task of a mission, drops them from the queue and
/// records each. Returns the cancelled task ids.
pub async fn cancel_all_open(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    run_id: Uuid,
    actor: &str,
    reason: &str,
) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query!("DELETE FROM task_queue WHERE run_id = $1", run_id)
        .execute(&mut *conn)
        .await?;
    let cancelled = sqlx::query_scalar!(
        "UPDATE orchestration_tasks
         SET status = 'cancelled', lease_owner = NULL, lease_expires_at = NULL,
             finished_at = now(), version = version + 1, updated_at = now()
         WHERE run_id = $1 AND status NOT IN ('succeeded', 'failed', 'cancelled', 'skipped')
         RETURNING id",
        run_id
    )
    .fetch_all(&mut *conn)
    .await?;
    for id in &cancelled {
        let (kind, payload) = payloads::TaskCancelled {
            key: None,
            reason: reason.to_owned(),
            named: None,
        }
        .to_event();
        record(
            conn,
            Change {
                task_id: *id,
                run_id,
                workspace_id,
                to: TaskStatus::Cancelled,
                kind,
                actor,
                attempt_id: None,
                payload,
            },
        )
        .await?;
    }
    Ok(cancelled)
}

/// Counts of a mission's tasks: (not terminal, failed and required).
pub async fn open_and_failed(conn: &mut PgConnection, run_id: Uuid) -> sqlx::Result<(i64, i64)> {
    let r = sqlx::query!(
        r#"SELECT count(*) FILTER (WHERE status NOT IN ('succeeded', 'failed', 'cancelled', 'skipped')) AS "open!",
                  count(*) FILTER (WHERE status = 'failed' AND NOT optional) AS "failed!"
           FROM orchestration_tasks WHERE run_id = $1"#,
        run_id
    )
    .fetch_one(conn)
    .await?;
    Ok((r.open, r.failed))
}

/// The required tasks of a mission that failed for good, in plan order.
pub async fn failed_required(
    conn: &mut PgConnection,
    run_id: Uuid,
) -> sqlx::Result<Vec<coordinator_core::domain::FailedTask>> {
    let rows = sqlx::query!(
        "SELECT task_key, attempt_count, last_error FROM orchestration_tasks
         WHERE run_id = $1 AND status = 'failed' AND NOT optional
         ORDER BY task_order, id",
        run_id
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| coordinator_core::domain::FailedTask {
            key: r.task_key,
            attempts: r.attempt_count,
            last_error: r.last_error,
        })
        .collect())
}

/// The task counts of a mission by outcome.
pub async fn progress(
    conn: &mut PgConnection,
    run_id: Uuid,
) -> sqlx::Result<coordinator_core::domain::Progress> {
    let statuses = sqlx::query_scalar!(
        "SELECT status FROM orchestration_tasks WHERE run_id = $1",
        run_id
    )
    .fetch_all(conn)
    .await?;
    Ok(coordinator_core::domain::Progress::tally(
        statuses.iter().filter_map(|s| s.parse::<TaskStatus>().ok()),
    ))
}

/// Brings back the tasks of a mission whose last event is their
/// cancellation for `reason` (the mission's failure): each waits on its
/// dependencies again, with its event. Returns how many.
pub async fn restore_cancelled(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    run_id: Uuid,
    reason: &str,
    actor: &str,
) -> sqlx::Result<usize> {
    let ids = sqlx::query_scalar!(
        r#"SELECT t.id AS "id!" FROM orchestration_tasks t
           WHERE t.run_id = $1 AND t.workspace_id = $2 AND t.status = 'cancelled'
             AND (SELECT e.kind = 'task.cancelled' AND e.payload->>'reason' = $3
                  FROM orchestration_events e
                  WHERE e.run_id = t.run_id AND e.task_id = t.id
                  ORDER BY e.seq DESC LIMIT 1)
           ORDER BY t.task_order, t.id"#,
        run_id,
        workspace_id,
        reason
    )
    .fetch_all(&mut *conn)
    .await?;
    let rows = get_many(&mut *conn, &ids).await?;
    for t in &rows {
        let to = TaskStatus::Cancelled
            .next(TaskEvent::Restore)
            .unwrap_or(TaskStatus::Pending);
        sqlx::query!(
            "UPDATE orchestration_tasks
             SET status = 'pending', finished_at = NULL, lease_owner = NULL,
                 lease_expires_at = NULL, version = version + 1, updated_at = now()
             WHERE id = $1 AND status = 'cancelled'",
            t.id
        )
        .execute(&mut *conn)
        .await?;
        let payload = payloads::TaskRestored {
            key: t.task_key.clone(),
            reason: "its mission was continued after failing".to_owned(),
        };
        record(&mut *conn, Change::event(t, to, actor, None, &payload)).await?;
    }
    Ok(rows.len())
}

/// The tasks of a mission that wait for a person because admission
/// refused them (their last event is `task.budget_refused`), in plan order.
pub async fn budget_refused(conn: &mut PgConnection, run_id: Uuid) -> sqlx::Result<Vec<TaskRow>> {
    let ids = sqlx::query_scalar!(
        r#"SELECT t.id AS "id!" FROM orchestration_tasks t
           WHERE t.run_id = $1 AND t.status = 'awaiting_human'
             AND (SELECT e.kind FROM orchestration_events e
                  WHERE e.run_id = t.run_id AND e.task_id = t.id
                  ORDER BY e.seq DESC LIMIT 1) = 'task.budget_refused'
           ORDER BY t.task_order, t.id"#,
        run_id
    )
    .fetch_all(&mut *conn)
    .await?;
    get_many(conn, &ids).await
}

/// Skips the optional tasks of a mission that have not started (budget
/// warning), records each, and returns how many.
pub async fn skip_unstarted_optional(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    run_id: Uuid,
    actor: &str,
    reason: &str,
) -> sqlx::Result<usize> {
    debug_assert!(TaskStatus::Queued.next(TaskEvent::Skip).is_ok());
    let skipped = sqlx::query!(
        "UPDATE orchestration_tasks
         SET status = 'skipped', finished_at = now(), version = version + 1, updated_at = now()
         WHERE run_id = $1 AND optional AND attempt_count = 0 AND status IN ('pending', 'queued')
         RETURNING id, task_key",
        run_id
    )
    .fetch_all(&mut *conn)
    .await?;
    for t in &skipped {
        sqlx::query!("DELETE FROM task_queue WHERE task_id = $1", t.id)
            .execute(&mut *conn)
            .await?;
        let (kind, payload) = payloads::TaskSkipped {
            key: t.task_key.clone(),
            reason: reason.to_owned(),
            error: None,
            decision_id: None,
        }
        .to_event();
        record(
            conn,
            Change {
                task_id: t.id,
                run_id,
                workspace_id,
                to: TaskStatus::Skipped,
                kind,
                actor,
                attempt_id: None,
                payload,
            },
        )
        .await?;
    }
    Ok(skipped.len())
}

/// Cancels the given tasks of a mission that are not terminal, ends their
/// live attempts (slots released in agent order) and records each; returns
/// the attempts whose workers should be told. Caller holds the mission lock.
pub async fn cancel_tasks(
    conn: &mut PgConnection,
    run: &super::missions::MissionRow,
    ids: &[Uuid],
    actor: &str,
    reason: &str,
    named: Uuid,
) -> sqlx::Result<Vec<super::attempts::Cancelled>> {
    debug_assert!(TaskStatus::Running.next(TaskEvent::Cancel).is_ok());
    sqlx::query!("DELETE FROM task_queue WHERE task_id = ANY($1)", ids)
        .execute(&mut *conn)
        .await?;
    let cancelled = sqlx::query!(
        "UPDATE orchestration_tasks
         SET status = 'cancelled', lease_owner = NULL, lease_expires_at = NULL,
             finished_at = now(), version = version + 1, updated_at = now()
         WHERE run_id = $1 AND id = ANY($2)
           AND status NOT IN ('succeeded', 'failed', 'cancelled', 'skipped')
         RETURNING id, task_key",
        run.id,
        ids
    )
    .fetch_all(&mut *conn)
    .await?;
    let ids: Vec<Uuid> = cancelled.iter().map(|t| t.id).collect();
    let live = super::attempts::cancel_live(conn, run.id, Some(&ids)).await?;
    for a in &live {
        super::agents::release_slot(conn, run.workspace_id, &a.agent_id).await?;
    }
    for t in &cancelled {
        let (kind, payload) = payloads::TaskCancelled {
            key: Some(t.task_key.clone()),
            reason: reason.to_owned(),
            named: Some(t.id == named),
        }
        .to_event();
        record(
            conn,
            Change {
                task_id: t.id,
                run_id: run.id,
                workspace_id: run.workspace_id,
                to: TaskStatus::Cancelled,
                kind,
                actor,
                attempt_id: None,
                payload,
            },
        )
        .await?;
    }
    Ok(live)
}

/// Pins a task of a mission, by key, to an agent while it has not started
/// (the claim honours the pin); false when the task is past that.
pub async fn pin_unstarted(
    conn: &mut PgConnection,
    mission_id: Uuid,
    key: &str,
    agent_id: &str,
) -> sqlx::Result<bool> {
    let r = sqlx::query!(
        "UPDATE orchestration_tasks SET pinned_agent_id = $3, updated_at = now()
         WHERE run_id = $1 AND task_key = $2 AND status IN ('pending', 'queued')",
        mission_id,
        key,
        agent_id
    )
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}
