//! A task's outcome after an attempt, shared by report handling
//! ([`super::reports`]) and the escalation ladder ([`super::escalation`]):
//! back to the queue for another attempt ([`retry`]) or failed for good
//! ([`fail`]), and the error every report path returns.

use serde_json::Value;
use sqlx::PgConnection;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    domain::{FailureKind, TaskEvent, TaskStatus},
    store::{
        events::{EventKind, EventPayload, payloads},
        missions::MissionRow,
        tasks::{self, Change},
    },
};

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

/// Why a task goes back to wait for another attempt.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) enum RetryKind {
    /// The worker asked to continue.
    Continuation,
    /// A counted failure.
    Failure,
    /// A busy worker.
    Deferred,
    /// A verifier must judge the result.
    Verify,
    /// The escalation ladder: another agent or a higher tier.
    Escalated,
}

/// A retry to schedule.
pub(crate) struct Retry {
    pub why: RetryKind,
    pub due: OffsetDateTime,
    pub cost: f64,
    pub error: Option<String>,
    pub failure_kind: Option<FailureKind>,
    /// Feedback for the next attempt (replaces the previous one when set).
    pub feedback: Option<String>,
    /// The result a verifier must judge.
    pub candidate: Option<Value>,
    /// Extra event details.
    pub detail: Value,
    /// For continuations: the agent that asked (it gets the next attempt).
    pub continue_agent: Option<String>,
}

impl Retry {
    pub(crate) fn new(
        why: RetryKind,
        due: OffsetDateTime,
        cost: f64,
        error: Option<String>,
    ) -> Self {
        Retry {
            why,
            due,
            cost,
            error,
            failure_kind: None,
            feedback: None,
            candidate: None,
            detail: Value::Null,
            continue_agent: None,
        }
    }
}

/// Puts a running task back in the queue, due at `r.due`.
pub(crate) async fn retry(
    conn: &mut PgConnection,
    task: &tasks::TaskRow,
    run: &MissionRow,
    attempt_id: Uuid,
    r: Retry,
    actor: &str,
) -> Result<(), ReportError> {
    let to = task
        .status()
        .next(TaskEvent::ScheduleRetry)
        .map_err(|_| ReportError::Race("task status"))?;
    let (failures, continuations) = match r.why {
        RetryKind::Continuation => (0, 1),
        RetryKind::Failure => (1, 0),
        RetryKind::Deferred | RetryKind::Verify | RetryKind::Escalated => (0, 0),
    };
    let verify_pending = r.why == RetryKind::Verify;
    let updated = sqlx::query!(
        "UPDATE orchestration_tasks
         SET status = 'retry_wait', failure_count = failure_count + $3,
             continuation_count = continuation_count + $4, next_attempt_at = $5,
             last_error = COALESCE($6, last_error), actual_cost = actual_cost + $7,
             feedback = COALESCE($8, feedback), verify_pending = $9,
             candidate_output = CASE WHEN $9 THEN $10::jsonb ELSE NULL END,
             continue_agent_id = $11,
             lease_owner = NULL, lease_expires_at = NULL, version = version + 1, updated_at = now()
         WHERE id = $1 AND version = $2",
        task.id,
        task.version,
        failures,
        continuations,
        r.due,
        r.error,
        r.cost,
        r.feedback,
        verify_pending,
        r.candidate,
        r.continue_agent
    )
    .execute(&mut *conn)
    .await?;
    if updated.rows_affected() != 1 {
        return Err(ReportError::Race("task version"));
    }
    tasks::enqueue(
        conn,
        task.workspace_id,
        task.run_id,
        task.id,
        run.priority,
        r.due,
    )
    .await?;
    let (event, payload) = match r.why {
        RetryKind::Continuation => payloads::TaskContinued {
            key: task.task_key.clone(),
            turn: task.continuation_count + 1,
            due: r.due.unix_timestamp(),
        }
        .to_event(),
        RetryKind::Deferred => payloads::TaskDeferred {
            key: task.task_key.clone(),
            attempt: task.attempt_count,
            reason: r.error.clone(),
            due: r.due.unix_timestamp(),
        }
        .to_event(),
        RetryKind::Verify => payloads::TaskVerifying {
            key: task.task_key.clone(),
            attempt: task.attempt_count,
            detail: r.detail.clone(),
        }
        .to_event(),
        // The escalation built `detail` from a `payloads::TaskEscalated`.
        RetryKind::Escalated => (EventKind::TaskEscalated, r.detail.clone()),
        RetryKind::Failure => payloads::TaskRetryScheduled {
            key: task.task_key.clone(),
            attempt: task.attempt_count,
            failures: task.failure_count + 1,
            max_attempts: task.max_attempts,
            failure_kind: r.failure_kind,
            error: r.error.clone(),
            feedback: r.feedback.clone(),
            due: r.due.unix_timestamp(),
        }
        .to_event(),
    };
    tasks::record(
        conn,
        Change::of(task, to, event, actor, Some(attempt_id), payload),
    )
    .await?;
    Ok(())
}

/// Fails a task for good (the last rung of the ladder).
pub(crate) async fn fail(
    conn: &mut PgConnection,
    task: &tasks::TaskRow,
    attempt_id: Option<Uuid>,
    cost: f64,
    error: &str,
    failure_kind: Option<FailureKind>,
    actor: &str,
) -> Result<(), ReportError> {
    let to = task
        .status()
        .next(TaskEvent::FailedFinally)
        .map_err(|_| ReportError::Race("task status"))?;
    let counted = i32::from(task.status() == TaskStatus::Running);
    let r = sqlx::query!(
        "UPDATE orchestration_tasks
         SET status = 'failed', failure_count = failure_count + $5, last_error = $3,
             actual_cost = actual_cost + $4, lease_owner = NULL, lease_expires_at = NULL,
             finished_at = now(), version = version + 1, updated_at = now()
         WHERE id = $1 AND version = $2",
        task.id,
        task.version,
        error,
        cost,
        counted
    )
    .execute(&mut *conn)
    .await?;
    if r.rows_affected() != 1 {
        return Err(ReportError::Race("task version"));
    }
    tasks::record(
        conn,
        Change::event(
            task,
            to,
            actor,
            attempt_id,
            &payloads::TaskFailed {
                key: task.task_key.clone(),
                attempts: task.attempt_count,
                failure_kind,
                error: Some(error.to_owned()),
                escalation: task.escalation_step.clone(),
            },
        ),
    )
    .await?;
    Ok(())
}
