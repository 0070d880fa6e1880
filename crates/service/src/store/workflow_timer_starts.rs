//! SQL of timer start events' schedule: one row per timer start event of a
//! workflow's latest version, taken when due with SKIP LOCKED.

use serde::Serialize;
use sqlx::PgConnection;
use time::OffsetDateTime;
use uuid::Uuid;

/// A timer start event's schedule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct TimerStartRow {
    /// The workflow.
    pub workflow_id: Uuid,
    /// Its workspace.
    pub workspace_id: Uuid,
    /// The version an occurrence starts (the latest when scheduled).
    pub version: i32,
    /// The process started.
    pub process_id: String,
    /// The timer start event.
    pub start_event: String,
    /// `timeDate`, `timeDuration` or `timeCycle`.
    pub kind: String,
    /// Its definition as written.
    pub definition: String,
    /// When it next starts an instance.
    #[serde(with = "time::serde::rfc3339")]
    pub due_at: OffsetDateTime,
    /// Occurrences spent so far.
    pub fired: i32,
}

/// The workflow's schedule, by process and start event.
pub async fn of_workflow(
    conn: &mut PgConnection,
    workflow_id: Uuid,
) -> sqlx::Result<Vec<TimerStartRow>> {
    sqlx::query_as!(
        TimerStartRow,
        "SELECT workflow_id, workspace_id, version, process_id, start_event, kind, definition,
                due_at, fired
         FROM workflow_timer_starts WHERE workflow_id = $1
         ORDER BY process_id, start_event",
        workflow_id
    )
    .fetch_all(conn)
    .await
}

/// Replaces the workflow's schedule with `rows`.
pub async fn replace(
    conn: &mut PgConnection,
    workflow_id: Uuid,
    rows: &[TimerStartRow],
) -> sqlx::Result<()> {
    sqlx::query!(
        "DELETE FROM workflow_timer_starts WHERE workflow_id = $1",
        workflow_id
    )
    .execute(&mut *conn)
    .await?;
    for r in rows {
        sqlx::query!(
            "INSERT INTO workflow_timer_starts
                 (workflow_id, workspace_id, version, process_id, start_event, kind, definition,
                  due_at, fired)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            r.workflow_id,
            r.workspace_id,
            r.version,
            r.process_id,
            r.start_event,
            r.kind,
            r.definition,
            r.due_at,
            r.fired
        )
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Takes the earliest due row no other transaction holds, locked until the
/// caller's transaction ends.
pub async fn take_due(
    conn: &mut PgConnection,
    now: OffsetDateTime,
) -> sqlx::Result<Option<TimerStartRow>> {
    sqlx::query_as!(
        TimerStartRow,
        "SELECT workflow_id, workspace_id, version, process_id, start_event, kind, definition,
                due_at, fired
         FROM workflow_timer_starts WHERE due_at <= $1
         ORDER BY due_at LIMIT 1 FOR UPDATE SKIP LOCKED",
        now
    )
    .fetch_optional(conn)
    .await
}

/// Moves a row to its next occurrence, or deletes it when `next` is `None`.
pub async fn advance(
    conn: &mut PgConnection,
    row: &TimerStartRow,
    next: Option<(OffsetDateTime, i32)>,
) -> sqlx::Result<()> {
    match next {
        Some((due_at, fired)) => {
            sqlx::query!(
                "UPDATE workflow_timer_starts SET due_at = $4, fired = $5
                 WHERE workflow_id = $1 AND process_id = $2 AND start_event = $3",
                row.workflow_id,
                row.process_id,
                row.start_event,
                due_at,
                fired
            )
            .execute(conn)
            .await?;
        }
        None => {
            sqlx::query!(
                "DELETE FROM workflow_timer_starts
                 WHERE workflow_id = $1 AND process_id = $2 AND start_event = $3",
                row.workflow_id,
                row.process_id,
                row.start_event
            )
            .execute(conn)
            .await?;
        }
    }
    Ok(())
}
