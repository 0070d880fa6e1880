//! Applying what happened to an attempt: a worker's report (callback or
//! inline answer), a failed dispatch, or an expired lease. One function, so
//! every path obeys the same rules: stale reports are refused, duplicates
//! have one effect, and the task, its event, its card, the agent's slot, the
//! mission's spend, promotions and mission completion all change in one
//! transaction under the mission's lock.

use std::time::Duration;

use serde_json::json;
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

use super::EngineConfig;
use crate::{
    auth::hash_token,
    domain::{
        AttemptStatus, FailureKind, MissionEvent, MissionStatus, ReportDecision, ReportStatus,
        TaskEvent, TaskStatus, attempt::retry_delay, decide_report,
    },
    store::{
        agents, attempts,
        events::kind,
        missions::{self, MissionRow},
        tasks::{self, Change},
    },
    worker::protocol::WorkerReport,
};

/// Where a report comes from.
#[derive(Debug, Clone, Copy)]
pub enum Origin<'a> {
    /// A worker's callback, authenticated by the attempt's token.
    Worker {
        /// The bearer token presented.
        token: &'a str,
    },
    /// The worker answered the dispatch request with the result at once.
    Inline,
    /// The dispatch request itself failed.
    DispatchFailed,
    /// Reconcile found the attempt's lease expired.
    LeaseExpired,
    /// The worker answered the dispatch 429/503: requeue after `retry_after`,
    /// counting no failure.
    Busy {
        /// How long the worker asked us to wait.
        retry_after: Duration,
    },
}

/// What applying a report did.
#[derive(Debug, Clone, PartialEq)]
pub enum Applied {
    /// The report changed the task to this status.
    Applied(TaskStatus),
    /// The same report was applied before; nothing changed.
    Duplicate,
}

/// Why a report was refused; nothing changed.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// No such attempt.
    #[error("no attempt {0}")]
    NotFound(Uuid),
    /// The token is not this attempt's.
    #[error("this token is not valid for attempt {0}")]
    BadToken(Uuid),
    /// The attempt no longer counts (finished differently, expired, cancelled or superseded).
    #[error("attempt {attempt} is stale: it is {attempt_status} and its task is {task_status}")]
    Stale {
        /// The attempt.
        attempt: Uuid,
        /// Its status.
        attempt_status: String,
        /// Its task's status.
        task_status: String,
    },
    /// The database failed.
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    /// A guarded write found the row changed (cannot happen under the mission lock).
    #[error("lost a race applying the report: {0}")]
    Race(&'static str),
}

/// Applies a report to an attempt (see the module docs).
pub async fn apply_report(
    pool: &PgPool,
    cfg: &EngineConfig,
    attempt_id: Uuid,
    report: &WorkerReport,
    origin: Origin<'_>,
) -> Result<Applied, ReportError> {
    let mut tx = pool.begin().await?;
    let found = attempts::get(&mut tx, attempt_id)
        .await?
        .ok_or(ReportError::NotFound(attempt_id))?;
    if let Origin::Worker { token } = origin
        && hash_token(token) != found.token_hash
    {
        return Err(ReportError::BadToken(attempt_id));
    }
    let Some(mut run) = missions::lock(&mut tx, found.workspace_id, found.run_id).await? else {
        return Err(ReportError::NotFound(attempt_id));
    };
    // Re-read under the mission lock: this is the state we decide on.
    let attempt = attempts::get(&mut tx, attempt_id)
        .await?
        .ok_or(ReportError::NotFound(attempt_id))?;
    let task = tasks::get(&mut tx, attempt.task_id).await?;
    let report_json = serde_json::to_value(report).unwrap_or_default();
    let is_current =
        task.current_attempt_id == Some(attempt.id) && task.status() == TaskStatus::Running;
    match decide_report(
        attempt.status(),
        is_current,
        attempt.report.as_ref(),
        &report_json,
    ) {
        ReportDecision::Duplicate => return Ok(Applied::Duplicate),
        ReportDecision::Stale => {
            return Err(ReportError::Stale {
                attempt: attempt.id,
                attempt_status: attempt.status,
                task_status: task.status,
            });
        }
        ReportDecision::Apply => {}
    }

    let actor = match origin {
        Origin::Worker { .. } | Origin::Inline => format!("agent:{}", attempt.agent_id),
        Origin::DispatchFailed | Origin::LeaseExpired | Origin::Busy { .. } => {
            format!("engine:{}", cfg.replica_id)
        }
    };
    let cost = if report.cost.is_finite() {
        report.cost.max(0.0)
    } else {
        0.0
    };
    let busy = match origin {
        Origin::Busy { retry_after } => Some(retry_after),
        _ => None,
    };
    let (attempt_status, failure_kind) = match (report.status, origin) {
        (_, Origin::Busy { .. }) => (AttemptStatus::Cancelled, None),
        (ReportStatus::Succeeded, _) => (AttemptStatus::Succeeded, None),
        (ReportStatus::Continue, _) => (AttemptStatus::Continued, None),
        (ReportStatus::Failed, Origin::LeaseExpired) => {
            (AttemptStatus::Expired, Some(FailureKind::Infrastructure))
        }
        (ReportStatus::Failed, Origin::DispatchFailed) => {
            (AttemptStatus::Failed, Some(FailureKind::Infrastructure))
        }
        (ReportStatus::Failed, _) => (
            AttemptStatus::Failed,
            Some(report.failure_kind.unwrap_or(FailureKind::Quality)),
        ),
    };
    let finished = attempts::finish(
        &mut tx,
        attempt.id,
        attempts::Finish {
            status: attempt_status,
            failure_kind,
            report: Some(&report_json),
            error: report.error.as_deref(),
            cost,
            tokens: report.tokens.max(0),
        },
    )
    .await?;
    if !finished {
        return Err(ReportError::Race("attempt"));
    }
    agents::release_slot(&mut tx, attempt.workspace_id, &attempt.agent_id).await?;
    missions::add_spend(&mut tx, run.id, cost).await?;

    let new_status = match report.status {
        _ if busy.is_some() => {
            let due = OffsetDateTime::now_utc() + busy.unwrap_or_default();
            retry(
                &mut tx,
                &task,
                &run,
                attempt.id,
                RetryKind::Deferred,
                due,
                cost,
                report,
                None,
                &actor,
            )
            .await?;
            TaskStatus::RetryWait
        }
        ReportStatus::Succeeded => {
            succeed(&mut tx, &task, attempt.id, report, cost, &actor).await?;
            tasks::promote_ready(
                &mut tx,
                run.workspace_id,
                run.id,
                Some(task.id),
                run.priority,
                &actor,
            )
            .await?;
            TaskStatus::Succeeded
        }
        ReportStatus::Continue if task.continuation_count < cfg.max_continuations => {
            let due = OffsetDateTime::now_utc() + cfg.continuation_delay;
            retry(
                &mut tx,
                &task,
                &run,
                attempt.id,
                RetryKind::Continuation,
                due,
                cost,
                report,
                failure_kind,
                &actor,
            )
            .await?;
            TaskStatus::RetryWait
        }
        // Only failures count against max_attempts: continuations and
        // deferrals by a busy worker do not.
        _ if task.failure_count + 1 < task.max_attempts => {
            let failures = (task.failure_count + 1) as u32;
            let jitter = (attempt.id.as_u128() % 1000) as f64 / 1000.0;
            let delay = retry_delay(failures, cfg.retry_base, cfg.retry_cap, jitter);
            let due = OffsetDateTime::now_utc() + delay;
            retry(
                &mut tx,
                &task,
                &run,
                attempt.id,
                RetryKind::Failure,
                due,
                cost,
                report,
                failure_kind,
                &actor,
            )
            .await?;
            TaskStatus::RetryWait
        }
        _ => {
            fail(
                &mut tx,
                &task,
                attempt.id,
                cost,
                report,
                failure_kind,
                &actor,
            )
            .await?;
            TaskStatus::Failed
        }
    };
    let cancelled = if new_status.is_terminal() {
        finish_mission_if_done(&mut tx, &mut run, &actor).await?
    } else {
        Vec::new()
    };
    missions::notify_wake(&mut tx).await?;
    tx.commit().await?;
    super::dispatch::notify_cancelled(&cfg.worker_http, cancelled);
    Ok(Applied::Applied(new_status))
}

async fn succeed(
    conn: &mut PgConnection,
    task: &tasks::TaskRow,
    attempt_id: Uuid,
    report: &WorkerReport,
    cost: f64,
    actor: &str,
) -> Result<(), ReportError> {
    let to = task
        .status()
        .next(TaskEvent::Succeeded)
        .map_err(|_| ReportError::Race("task status"))?;
    let r = sqlx::query!(
        "UPDATE orchestration_tasks
         SET status = 'succeeded', output = $3, actual_cost = actual_cost + $4, lease_owner = NULL,
             lease_expires_at = NULL, finished_at = now(), version = version + 1, updated_at = now()
         WHERE id = $1 AND version = $2",
        task.id,
        task.version,
        report.output,
        cost
    )
    .execute(&mut *conn)
    .await?;
    if r.rows_affected() != 1 {
        return Err(ReportError::Race("task version"));
    }
    tasks::record(
        conn,
        Change::of(task, to, kind::TASK_SUCCEEDED, actor, Some(attempt_id), json!({ "key": task.task_key, "attempt": task.attempt_count, "cost": cost, "tokens": report.tokens })),
    )
    .await?;
    Ok(())
}

#[derive(Clone, Copy, PartialEq)]
enum RetryKind {
    Continuation,
    Failure,
    Deferred,
}

#[allow(clippy::too_many_arguments)]
async fn retry(
    conn: &mut PgConnection,
    task: &tasks::TaskRow,
    run: &MissionRow,
    attempt_id: Uuid,
    why: RetryKind,
    due: OffsetDateTime,
    cost: f64,
    report: &WorkerReport,
    failure_kind: Option<FailureKind>,
    actor: &str,
) -> Result<(), ReportError> {
    let to = task
        .status()
        .next(TaskEvent::ScheduleRetry)
        .map_err(|_| ReportError::Race("task status"))?;
    let (failures, continuations) = match why {
        RetryKind::Continuation => (0, 1),
        RetryKind::Failure => (1, 0),
        RetryKind::Deferred => (0, 0),
    };
    let r = sqlx::query!(
        "UPDATE orchestration_tasks
         SET status = 'retry_wait', failure_count = failure_count + $3,
             continuation_count = continuation_count + $4, next_attempt_at = $5,
             last_error = COALESCE($6, last_error), actual_cost = actual_cost + $7,
             lease_owner = NULL, lease_expires_at = NULL, version = version + 1, updated_at = now()
         WHERE id = $1 AND version = $2",
        task.id,
        task.version,
        failures,
        continuations,
        due,
        report.error,
        cost
    )
    .execute(&mut *conn)
    .await?;
    if r.rows_affected() != 1 {
        return Err(ReportError::Race("task version"));
    }
    tasks::enqueue(
        conn,
        task.workspace_id,
        task.run_id,
        task.id,
        run.priority,
        due,
    )
    .await?;
    let (event, payload) = match why {
        RetryKind::Continuation => (
            kind::TASK_CONTINUED,
            json!({ "key": task.task_key, "turn": task.continuation_count + 1, "due": due.unix_timestamp() }),
        ),
        RetryKind::Deferred => (
            kind::TASK_DEFERRED,
            json!({ "key": task.task_key, "attempt": task.attempt_count, "reason": report.error, "due": due.unix_timestamp() }),
        ),
        RetryKind::Failure => (
            kind::TASK_RETRY_SCHEDULED,
            json!({
                "key": task.task_key, "attempt": task.attempt_count, "max_attempts": task.max_attempts,
                "failure_kind": failure_kind, "error": report.error, "due": due.unix_timestamp(),
            }),
        ),
    };
    tasks::record(
        conn,
        Change::of(task, to, event, actor, Some(attempt_id), payload),
    )
    .await?;
    Ok(())
}

async fn fail(
    conn: &mut PgConnection,
    task: &tasks::TaskRow,
    attempt_id: Uuid,
    cost: f64,
    report: &WorkerReport,
    failure_kind: Option<FailureKind>,
    actor: &str,
) -> Result<(), ReportError> {
    let to = task
        .status()
        .next(TaskEvent::FailedFinally)
        .map_err(|_| ReportError::Race("task status"))?;
    let r = sqlx::query!(
        "UPDATE orchestration_tasks
         SET status = 'failed', failure_count = failure_count + 1, last_error = $3,
             actual_cost = actual_cost + $4, lease_owner = NULL, lease_expires_at = NULL,
             finished_at = now(), version = version + 1, updated_at = now()
         WHERE id = $1 AND version = $2",
        task.id,
        task.version,
        report.error,
        cost
    )
    .execute(&mut *conn)
    .await?;
    if r.rows_affected() != 1 {
        return Err(ReportError::Race("task version"));
    }
    tasks::record(
        conn,
        Change::of(task, to, kind::TASK_FAILED, actor, Some(attempt_id), json!({ "key": task.task_key, "attempts": task.attempt_count, "failure_kind": failure_kind, "error": report.error })),
    )
    .await?;
    Ok(())
}

/// Moves an executing mission on once none of its tasks is open: a failed
/// required task fails it (cancelling what is left), otherwise it completes
/// (or waits for review in approve mode). Caller holds the mission lock.
/// Returns the live attempts it cancelled: tell their workers after commit.
pub async fn finish_mission_if_done(
    conn: &mut PgConnection,
    run: &mut MissionRow,
    actor: &str,
) -> Result<Vec<attempts::Cancelled>, ReportError> {
    if run.status() != MissionStatus::Executing {
        return Ok(Vec::new());
    }
    let (open, failed) = tasks::open_and_failed(conn, run.id).await?;
    if failed > 0 {
        // The escalation ladder (other agent, higher tier, replan, human)
        // comes with the engine; until then a task that fails for good fails
        // its mission, and what is left is cancelled.
        tasks::cancel_all_open(conn, run.workspace_id, run.id, actor, "mission failed").await?;
        let live = attempts::cancel_live_for_mission(conn, run.id).await?;
        for a in &live {
            agents::release_slot(conn, run.workspace_id, &a.agent_id).await?;
        }
        let reason = format!("{failed} task(s) failed after every allowed attempt");
        missions::transition(conn, run, MissionEvent::Fail, actor, Some(&reason))
            .await
            .map_err(|_| ReportError::Race("mission"))?;
        return Ok(live);
    } else if open == 0 {
        missions::transition(
            conn,
            run,
            MissionEvent::AllTasksDone(run.autonomy()),
            actor,
            None,
        )
        .await
        .map_err(|_| ReportError::Race("mission"))?;
    }
    Ok(Vec::new())
}

/// The continuation delay default.
pub const DEFAULT_CONTINUATION_DELAY: Duration = Duration::from_secs(1);
