//! Set-based task transitions: many tasks of many missions moved by one
//! statement, with their attempts, board cards, mission spend and events
//! (consecutive sequence numbers per mission) written by the same
//! statement. This is how a batch of reports applies its common case, so
//! one round trip carries the whole batch instead of a dozen per report.
//!
//! Callers hold the missions' row locks (`missions::lock_for_attempts`), as
//! for every task transition (see `tasks`).

use std::collections::HashMap;

use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

use super::events::EventKind;
use crate::domain::TaskStatus;

/// One attempt whose success ends its task (see [`succeed_many`]).
#[derive(Debug, Clone)]
pub struct Success {
    /// The attempt that succeeded.
    pub attempt_id: Uuid,
    /// Its task.
    pub task_id: Uuid,
    /// The task's version as read under the mission lock (the guard).
    pub task_version: i64,
    /// The task's output.
    pub output: Option<Value>,
    /// The attempt's report, as stored.
    pub report: Value,
    /// What the attempt cost (finite, not negative).
    pub cost: f64,
    /// Tokens it used.
    pub tokens: i64,
    /// The `task_succeeded` event's payload (with its `status`).
    pub payload: Value,
    /// Who caused it.
    pub actor: String,
}

/// Ends every attempt `succeeded` (only if still live), moves its task
/// `succeeded` (only at the version read), adds the costs to the missions'
/// spend, moves the cards and appends one `task_succeeded` event per task.
/// Returns the attempts ended and the tasks moved: both equal
/// `successes.len()` unless something changed under the caller's locks.
pub async fn succeed_many(
    conn: &mut PgConnection,
    successes: &[Success],
) -> sqlx::Result<(i64, i64)> {
    let n = successes.len();
    let (mut attempts, mut tasks, mut versions) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let (mut outputs, mut reports, mut costs, mut tokens, mut payloads, mut actors) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for s in successes {
        attempts.push(s.attempt_id);
        tasks.push(s.task_id);
        versions.push(s.task_version);
        // A JSON null in an array parameter is SQL NULL, as `output` wants.
        outputs.push(s.output.clone().unwrap_or(Value::Null));
        reports.push(s.report.clone());
        costs.push(s.cost);
        tokens.push(s.tokens);
        payloads.push(s.payload.clone());
        actors.push(s.actor.clone());
    }
    let r = sqlx::query!(
        r#"WITH input AS (
               SELECT * FROM UNNEST($1::uuid[], $2::uuid[], $3::bigint[], $4::jsonb[], $5::jsonb[],
                                    $6::float8[], $7::bigint[], $8::jsonb[], $9::text[])
                        WITH ORDINALITY
                        AS u(attempt_id, task_id, version, output, report, cost, tokens, payload, actor, n)
           ),
           ended AS (
               UPDATE task_attempts a
               SET status = 'succeeded', failure_kind = NULL, report = i.report, error = NULL,
                   cost = i.cost, tokens = i.tokens, finished_at = now()
               FROM input i
               WHERE a.id = i.attempt_id AND a.task_id = i.task_id
                 AND a.status IN ('dispatching', 'running')
               RETURNING a.id
           ),
           done AS (
               UPDATE orchestration_tasks t
               SET status = 'succeeded', output = NULLIF(i.output, 'null'::jsonb),
                   actual_cost = t.actual_cost + i.cost, lease_owner = NULL, lease_expires_at = NULL,
                   verify_pending = false, candidate_output = NULL, finished_at = now(),
                   version = t.version + 1, updated_at = now()
               FROM input i
               WHERE t.id = i.task_id AND t.version = i.version
               RETURNING t.id, t.run_id, t.workspace_id, t.assigned_agent_id, t.attempt_count,
                         t.actual_cost, i.attempt_id, i.cost, i.payload, i.actor, i.n
           ),
           cards AS (
               UPDATE board_tasks b SET column_name = $10, assignee = d.assigned_agent_id,
                      attempt_number = d.attempt_count, cost = d.actual_cost,
                      version = b.version + 1, updated_at = now()
               FROM done d
               WHERE b.source_type = 'orchestration' AND b.source_id = d.id
           ),
           per_run AS (
               SELECT run_id, count(*) AS events, sum(cost) AS cost FROM done GROUP BY run_id
           ),
           runs AS (
               UPDATE orchestration_runs r
               SET event_seq = r.event_seq + p.events, budget_spent = r.budget_spent + p.cost,
                   updated_at = now()
               FROM per_run p WHERE r.id = p.run_id
               RETURNING r.id, r.event_seq - p.events AS base
           ),
           events AS (
               INSERT INTO orchestration_events (workspace_id, run_id, seq, task_id, attempt_id, kind, actor, payload)
               SELECT d.workspace_id, d.run_id,
                      r.base + row_number() OVER (PARTITION BY d.run_id ORDER BY d.n),
                      d.id, d.attempt_id, $11, d.actor, d.payload
               FROM done d JOIN runs r ON r.id = d.run_id
           )
           SELECT (SELECT count(*) FROM ended) AS "ended!", (SELECT count(*) FROM done) AS "moved!""#,
        &attempts,
        &tasks,
        &versions,
        &outputs,
        &reports,
        &costs,
        &tokens,
        &payloads,
        &actors,
        TaskStatus::Succeeded.board_column().as_str(),
        EventKind::TaskSucceeded.as_str(),
    )
    .fetch_one(conn)
    .await?;
    Ok((r.ended, r.moved))
}

/// A mission whose tasks just succeeded, for [`promote_after_many`].
#[derive(Debug, Clone)]
pub struct Promotion {
    /// The mission.
    pub run_id: Uuid,
    /// Its workspace.
    pub workspace_id: Uuid,
    /// Its priority (the queue's).
    pub priority: i32,
    /// Who caused the promotions.
    pub actor: String,
}

/// Moves every `pending` dependent of `after` whose dependencies are all
/// satisfied to `queued`, enqueues it (executing missions only), moves its
/// card and appends its `task_queued` event; `runs` are the missions of
/// `after`, each with the actor its events name. One statement for all of them. Returns how many moved.
pub async fn promote_after_many(
    conn: &mut PgConnection,
    runs: &[Promotion],
    after: &[Uuid],
) -> sqlx::Result<i64> {
    let ids: Vec<Uuid> = runs.iter().map(|r| r.run_id).collect();
    let workspaces: Vec<Uuid> = runs.iter().map(|r| r.workspace_id).collect();
    let priorities: Vec<i32> = runs.iter().map(|r| r.priority).collect();
    let actors: Vec<String> = runs.iter().map(|r| r.actor.clone()).collect();
    sqlx::query_scalar!(
        r#"WITH input AS (
               SELECT * FROM UNNEST($1::uuid[], $2::uuid[], $3::int[], $5::text[])
                        AS u(run_id, workspace_id, priority, actor)
           ),
           promoted AS (
               UPDATE orchestration_tasks t
               SET status = 'queued', version = version + 1, updated_at = now()
               WHERE t.status = 'pending'
                 AND t.run_id IN (SELECT run_id FROM input)
                 AND t.id IN (SELECT task_id FROM orchestration_task_dependencies
                              WHERE depends_on_task_id = ANY($4))
                 AND NOT EXISTS (
                       SELECT 1 FROM orchestration_task_dependencies d
                       JOIN orchestration_tasks p ON p.id = d.depends_on_task_id
                       WHERE d.task_id = t.id AND p.status NOT IN ('succeeded', 'skipped'))
               RETURNING t.id, t.run_id, t.task_key, t.task_order, t.assigned_agent_id,
                         t.attempt_count, t.actual_cost
           ),
           queued AS (
               INSERT INTO task_queue (task_id, workspace_id, run_id, priority, ready_at)
               SELECT p.id, i.workspace_id, p.run_id, i.priority, now()
               FROM promoted p JOIN input i ON i.run_id = p.run_id
               WHERE EXISTS (SELECT 1 FROM orchestration_runs r WHERE r.id = p.run_id AND r.status = 'executing')
               ON CONFLICT (task_id) DO UPDATE SET ready_at = EXCLUDED.ready_at, priority = EXCLUDED.priority
           ),
           cards AS (
               UPDATE board_tasks b SET column_name = $6, assignee = p.assigned_agent_id,
                      attempt_number = p.attempt_count, cost = p.actual_cost,
                      version = b.version + 1, updated_at = now()
               FROM promoted p
               WHERE b.source_type = 'orchestration' AND b.source_id = p.id
           ),
           per_run AS (SELECT run_id, count(*) AS n FROM promoted GROUP BY run_id),
           seq AS (
               UPDATE orchestration_runs r SET event_seq = r.event_seq + p.n
               FROM per_run p WHERE r.id = p.run_id
               RETURNING r.id, r.workspace_id, r.event_seq - p.n AS base
           ),
           events AS (
               INSERT INTO orchestration_events (workspace_id, run_id, seq, task_id, kind, actor, payload)
               SELECT s.workspace_id, p.run_id,
                      s.base + row_number() OVER (PARTITION BY p.run_id ORDER BY p.task_order, p.id),
                      p.id, $7, i.actor, jsonb_build_object('key', p.task_key, 'status', $8::text)
               FROM promoted p JOIN seq s ON s.id = p.run_id JOIN input i ON i.run_id = p.run_id
           )
           SELECT count(*) AS "n!" FROM promoted"#,
        &ids,
        &workspaces,
        &priorities,
        after,
        &actors,
        TaskStatus::Queued.board_column().as_str(),
        EventKind::TaskQueued.as_str(),
        TaskStatus::Queued.as_str()
    )
    .fetch_one(conn)
    .await
}

/// For each of `runs`: its open tasks and its required tasks that failed
/// for good (a mission with neither open nor failed tasks is done).
pub async fn open_and_failed_many(
    conn: &mut PgConnection,
    runs: &[Uuid],
) -> sqlx::Result<HashMap<Uuid, (i64, i64)>> {
    let rows = sqlx::query!(
        r#"SELECT run_id,
                  count(*) FILTER (WHERE status NOT IN ('succeeded', 'failed', 'cancelled', 'skipped')) AS "open!",
                  count(*) FILTER (WHERE status = 'failed' AND NOT optional) AS "failed!"
           FROM orchestration_tasks WHERE run_id = ANY($1)
           GROUP BY run_id"#,
        runs
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.run_id, (r.open, r.failed)))
        .collect())
}
