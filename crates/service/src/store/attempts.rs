//! Attempts: one row per dispatch, with its own secret token.
//!
//! A partial unique index keeps at most one live attempt per task; finishing
//! an attempt is guarded by its status, so a report can end it only once.

use serde_json::Value;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::domain::{AttemptStatus, FailureKind};

/// An attempt, as report handling needs it.
#[derive(Debug, Clone)]
pub struct AttemptRow {
    /// Id.
    pub id: Uuid,
    /// Workspace.
    pub workspace_id: Uuid,
    /// Mission.
    pub run_id: Uuid,
    /// Task.
    pub task_id: Uuid,
    /// 1-based number within the task.
    pub attempt_number: i32,
    /// Agent doing it.
    pub agent_id: String,
    /// Worker URL it was sent to.
    pub worker_url: String,
    /// sha256 of its token.
    pub token_hash: Vec<u8>,
    /// Status.
    pub status: String,
    /// The report that ended it, if any.
    pub report: Option<Value>,
    /// `work`, or `verify` for a verifier judging another attempt's result.
    pub purpose: String,
}

impl AttemptRow {
    /// The parsed status.
    pub fn status(&self) -> AttemptStatus {
        self.status.parse().unwrap_or(AttemptStatus::Expired)
    }
}

/// Loads an attempt, with whether its workspace has an online verifier
/// (an agent with `verifier_skill`): report handling needs both, in one
/// round trip.
pub async fn get_for_report(
    conn: &mut PgConnection,
    id: Uuid,
    verifier_skill: &str,
) -> sqlx::Result<Option<(AttemptRow, bool)>> {
    let row = sqlx::query!(
        r#"SELECT a.id, a.workspace_id, a.run_id, a.task_id, a.attempt_number, a.agent_id,
                  a.worker_url, a.token_hash, a.status, a.report, a.purpose,
                  EXISTS (
                      SELECT 1 FROM agents g
                      WHERE g.workspace_id = a.workspace_id AND g.kind = 'roster' AND g.status NOT IN ('offline', 'unreachable', 'retired')
                        AND EXISTS (SELECT 1 FROM unnest(g.skills) s WHERE lower(s) = lower($2))
                  ) AS "verifier!"
           FROM task_attempts a WHERE a.id = $1"#,
        id,
        verifier_skill
    )
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|r| {
        (
            AttemptRow {
                id: r.id,
                workspace_id: r.workspace_id,
                run_id: r.run_id,
                task_id: r.task_id,
                attempt_number: r.attempt_number,
                agent_id: r.agent_id,
                worker_url: r.worker_url,
                token_hash: r.token_hash,
                status: r.status,
                report: r.report,
                purpose: r.purpose,
            },
            r.verifier,
        )
    }))
}

/// [`get_for_report`] for several attempts at once (unknown ones left out).
pub async fn get_for_reports(
    conn: &mut PgConnection,
    ids: &[Uuid],
    verifier_skill: &str,
) -> sqlx::Result<Vec<(AttemptRow, bool)>> {
    let rows = sqlx::query!(
        r#"SELECT a.id, a.workspace_id, a.run_id, a.task_id, a.attempt_number, a.agent_id,
                  a.worker_url, a.token_hash, a.status, a.report, a.purpose,
                  EXISTS (
                      SELECT 1 FROM agents g
                      WHERE g.workspace_id = a.workspace_id AND g.kind = 'roster' AND g.status NOT IN ('offline', 'unreachable', 'retired')
                        AND EXISTS (SELECT 1 FROM unnest(g.skills) s WHERE lower(s) = lower($2))
                  ) AS "verifier!"
           FROM task_attempts a WHERE a.id = ANY($1)"#,
        ids,
        verifier_skill
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            (
                AttemptRow {
                    id: r.id,
                    workspace_id: r.workspace_id,
                    run_id: r.run_id,
                    task_id: r.task_id,
                    attempt_number: r.attempt_number,
                    agent_id: r.agent_id,
                    worker_url: r.worker_url,
                    token_hash: r.token_hash,
                    status: r.status,
                    report: r.report,
                    purpose: r.purpose,
                },
                r.verifier,
            )
        })
        .collect())
}

/// The stored hash of an attempt's token, to authenticate its callbacks.
pub async fn token_hash(pool: &PgPool, id: Uuid) -> sqlx::Result<Option<Vec<u8>>> {
    sqlx::query_scalar!("SELECT token_hash FROM task_attempts WHERE id = $1", id)
        .fetch_optional(pool)
        .await
}

/// How an attempt ended.
pub struct Finish<'a> {
    /// Final status.
    pub status: AttemptStatus,
    /// Failure class, for failures.
    pub failure_kind: Option<FailureKind>,
    /// The report (kept to recognise duplicates).
    pub report: Option<&'a Value>,
    /// Error text.
    pub error: Option<&'a str>,
    /// Cost.
    pub cost: f64,
    /// Tokens.
    pub tokens: i64,
}

/// What an attempt's end changes of its agent ([`release`]).
pub struct Settle<'a> {
    /// Workspace.
    pub workspace_id: Uuid,
    /// Its agent, whose slot is released.
    pub agent_id: &'a str,
    /// The task's type, for the agent's past success.
    pub task_type: &'a str,
    /// Success or failure for past success (`None`: not counted).
    pub outcome: Option<bool>,
    /// Whether the agent's endpoint answered (LAST SEEN moves), could not be
    /// reached (counted towards `unreachable`), or neither is known.
    pub reach: Reach,
    /// Dispatches in a row that may fail to arrive before the agent is `unreachable`.
    pub unreachable_after: i32,
}

/// What an attempt's end says about its agent's endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The worker answered (a report, an inline result, a busy answer).
    Answered,
    /// The dispatch never reached the worker (refused, timed out).
    Unreachable,
    /// Nothing is known (a lease expired, the agent went offline).
    Unknown,
}

/// Ends a live attempt (status, failure kind, report, cost, tokens) and adds
/// its cost to the mission's spend, in one statement; false when the
/// attempt was no longer live (the caller rolls back). The agent's side
/// ([`release`]) is a separate statement so a report can run it last: the
/// agent's row is hot (every claim and report of the agent updates it), and
/// a row lock is held until the commit.
pub async fn end(
    conn: &mut PgConnection,
    f: Finish<'_>,
    attempt_id: Uuid,
    run_id: Uuid,
) -> sqlx::Result<bool> {
    debug_assert!(!f.status.is_live());
    let n = sqlx::query_scalar!(
        r#"WITH a AS (
               UPDATE task_attempts
               SET status = $2, failure_kind = $3, report = $4, error = $5, cost = $6, tokens = $7,
                   finished_at = now()
               WHERE id = $1 AND status IN ('dispatching', 'running')
               RETURNING id
           ),
           spend AS (
               UPDATE orchestration_runs SET budget_spent = budget_spent + $6, updated_at = now()
               WHERE id = $8 AND $6 <> 0 AND EXISTS (SELECT 1 FROM a)
           )
           SELECT count(*) AS "n!" FROM a"#,
        attempt_id,
        f.status.as_str(),
        f.failure_kind.map(|k| k.as_str()),
        f.report,
        f.error,
        f.cost,
        f.tokens,
        run_id
    )
    .fetch_one(conn)
    .await?;
    Ok(n == 1)
}

/// Releases an ended attempt's agent slot and, in the same statement,
/// counts the outcome for the agent and, with `broadcast`, notifies every
/// replica's dispatcher (delivered at commit; a replica whose own engine
/// claims next wakes it in-process instead). The agent's LAST SEEN and its count of undelivered
/// dispatches move with `reach`. Returns the failures in a row when this
/// end made the agent `unreachable`.
pub async fn release(
    conn: &mut PgConnection,
    s: Settle<'_>,
    broadcast: bool,
) -> sqlx::Result<Option<i32>> {
    sqlx::query_scalar!(
        r#"WITH slot AS (
               UPDATE agents SET running_count = GREATEST(running_count - 1, 0),
                      status = CASE
                          WHEN $5 = 'unreachable' AND dispatch_failures + 1 >= $6
                               AND status NOT IN ('offline', 'retired') THEN 'unreachable'
                          WHEN status = 'working' AND running_count = 1 THEN 'idle'
                          ELSE status END,
                      dispatch_failures = CASE $5 WHEN 'answered' THEN 0
                          WHEN 'unreachable' THEN dispatch_failures + 1
                          ELSE dispatch_failures END,
                      last_seen_at = CASE WHEN $5 = 'answered' THEN now() ELSE last_seen_at END,
                      version = version + 1, updated_at = now()
               WHERE workspace_id = $1 AND agent_id = $2
                 AND (running_count > 0 OR $5 <> 'unknown')
               RETURNING status, dispatch_failures
           ),
           stats AS (
               INSERT INTO agent_task_stats (workspace_id, agent_id, task_type, succeeded, failed)
               SELECT $1, $2, $3, CASE WHEN $4 THEN 1 ELSE 0 END, CASE WHEN $4 THEN 0 ELSE 1 END
               WHERE $4::bool IS NOT NULL
               ON CONFLICT (workspace_id, agent_id, task_type) DO UPDATE
               SET succeeded = agent_task_stats.succeeded + EXCLUDED.succeeded,
                   failed = agent_task_stats.failed + EXCLUDED.failed
           )
           -- Wakes every replica's dispatcher at commit (see missions::notify_wake).
           SELECT (SELECT dispatch_failures FROM slot
                   WHERE status = 'unreachable' AND $5 = 'unreachable' AND dispatch_failures = $6)
                  AS made_unreachable
           FROM (SELECT CASE WHEN $7 THEN pg_notify('coordinator_wake', '') END) AS woke"#,
        s.workspace_id,
        s.agent_id,
        s.task_type,
        s.outcome,
        match s.reach {
            Reach::Answered => "answered",
            Reach::Unreachable => "unreachable",
            Reach::Unknown => "unknown",
        },
        s.unreachable_after,
        broadcast
    )
    .fetch_one(conn)
    .await
}

/// Slots an agent gives back at once, all from attempts its worker answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answered {
    /// Workspace.
    pub workspace_id: Uuid,
    /// The agent.
    pub agent_id: String,
    /// Attempts that ended.
    pub slots: i32,
}

/// An agent's past success on one task type, to add to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tally {
    /// Workspace.
    pub workspace_id: Uuid,
    /// The agent.
    pub agent_id: String,
    /// The task type.
    pub task_type: String,
    /// Successes to add.
    pub succeeded: i32,
    /// Failures to add.
    pub failed: i32,
}

/// [`release`] for many attempts whose workers answered, in one statement
/// that locks nothing shared: `agents` (one row per agent) give their slots
/// back and `tallies` (one row per agent and task type) add to their past
/// success as rows of `agent_slot_returns`, which the next claim on each
/// agent folds in ([`crate::store::agents::take_slots`]). With `broadcast`,
/// every replica's dispatcher is woken at commit.
pub async fn release_answered(
    conn: &mut PgConnection,
    agents: &[Answered],
    tallies: &[Tally],
    broadcast: bool,
) -> sqlx::Result<()> {
    let a_ws: Vec<Uuid> = agents.iter().map(|a| a.workspace_id).collect();
    let a_id: Vec<String> = agents.iter().map(|a| a.agent_id.clone()).collect();
    let a_n: Vec<i32> = agents.iter().map(|a| a.slots).collect();
    let t_ws: Vec<Uuid> = tallies.iter().map(|t| t.workspace_id).collect();
    let t_id: Vec<String> = tallies.iter().map(|t| t.agent_id.clone()).collect();
    let t_type: Vec<String> = tallies.iter().map(|t| t.task_type.clone()).collect();
    let t_ok: Vec<i32> = tallies.iter().map(|t| t.succeeded).collect();
    let t_bad: Vec<i32> = tallies.iter().map(|t| t.failed).collect();
    sqlx::query!(
        r#"WITH returned AS (
               INSERT INTO agent_slot_returns (workspace_id, agent_id, slots, task_type, succeeded, failed)
               SELECT workspace_id, agent_id, n, NULL, 0, 0
               FROM UNNEST($1::uuid[], $2::text[], $3::int[]) AS u(workspace_id, agent_id, n)
               UNION ALL
               SELECT workspace_id, agent_id, 0, task_type, succeeded, failed
               FROM UNNEST($4::uuid[], $5::text[], $6::text[], $7::int[], $8::int[])
                    AS t(workspace_id, agent_id, task_type, succeeded, failed)
           )
           -- Wakes every replica's dispatcher at commit (see missions::notify_wake).
           SELECT CASE WHEN $9 THEN pg_notify('coordinator_wake', '') END AS woke"#,
        &a_ws,
        &a_id,
        &a_n,
        &t_ws,
        &t_id,
        &t_type,
        &t_ok,
        &t_bad,
        broadcast
    )
    .fetch_one(conn)
    .await?;
    Ok(())
}

/// Records a heartbeat and extends the task's lease. Two single-row
/// statements, no transaction: each holds one lock, so they cannot deadlock
/// with a report being applied. Returns false if the attempt is not live.
pub async fn heartbeat(pool: &PgPool, id: Uuid, lease_secs: f64) -> sqlx::Result<bool> {
    let task = sqlx::query_scalar!(
        "UPDATE task_attempts SET status = 'running', last_heartbeat_at = now(),
                accepted_at = COALESCE(accepted_at, now())
         WHERE id = $1 AND status IN ('dispatching', 'running')
         RETURNING task_id",
        id
    )
    .fetch_optional(pool)
    .await?;
    let Some(task) = task else { return Ok(false) };
    sqlx::query!(
        "UPDATE orchestration_tasks SET lease_expires_at = now() + make_interval(secs => $3),
                progress_checked_at = NULL
         WHERE id = $1 AND current_attempt_id = $2 AND status = 'running'",
        task,
        id,
        lease_secs
    )
    .execute(pool)
    .await?;
    Ok(true)
}

/// The mission of each of `ids` (unknown ids are left out), read without locks.
pub async fn missions_of(
    pool: &sqlx::PgPool,
    ids: &[Uuid],
) -> sqlx::Result<std::collections::HashMap<Uuid, Uuid>> {
    let rows = sqlx::query!(
        "SELECT id, run_id FROM task_attempts WHERE id = ANY($1)",
        ids
    )
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|r| (r.id, r.run_id)).collect())
}

/// A live attempt that was just cancelled (its worker should be told).
#[derive(Debug, Clone)]
pub struct Cancelled {
    /// The attempt.
    pub id: Uuid,
    /// Its agent (whose slot must be released).
    pub agent_id: String,
    /// Where its worker listens.
    pub worker_url: String,
}

/// Cancels the live attempts of a mission (only of `tasks` when given);
/// sorted by agent so slots are released in the global lock order.
pub async fn cancel_live(
    conn: &mut PgConnection,
    run_id: Uuid,
    tasks: Option<&[Uuid]>,
) -> sqlx::Result<Vec<Cancelled>> {
    let mut rows: Vec<Cancelled> = sqlx::query!(
        "UPDATE task_attempts SET status = 'cancelled', finished_at = now()
         WHERE run_id = $1 AND ($2::uuid[] IS NULL OR task_id = ANY($2))
           AND status IN ('dispatching', 'running')
         RETURNING id, agent_id, worker_url",
        run_id,
        tasks as _
    )
    .fetch_all(conn)
    .await?
    .into_iter()
    .map(|r| Cancelled {
        id: r.id,
        agent_id: r.agent_id,
        worker_url: r.worker_url,
    })
    .collect();
    rows.sort_by(|a, b| a.agent_id.cmp(&b.agent_id));
    Ok(rows)
}
