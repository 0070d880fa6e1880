//! Timer start events: the clock starts instances. Each new latest version
//! of a workflow replaces its schedule; every replica's tick starts the
//! instances due, each occurrence once.

use sqlx::PgConnection;
use time::OffsetDateTime;
use uuid::Uuid;

use coordinator_bpmn::{
    Definitions,
    run::{
        schedule,
        timer::{self, TimerKind},
    },
    validate,
};

use super::{
    WorkflowError,
    instances::{RunContext, StartInstance, start_in},
};
use crate::store::workflow_timer_starts::{self as store, TimerStartRow};

/// Replaces the schedule of `workflow_id` with the timer start events of
/// its new latest `version`, inside the caller's transaction. A start event
/// whose definition did not change keeps its due time and count (editing
/// another node does not postpone a cycle); a version that cannot run has
/// no schedule.
pub async fn schedule(
    tx: &mut PgConnection,
    workspace_id: Uuid,
    workflow_id: Uuid,
    version: i32,
    defs: &Definitions,
    now: OffsetDateTime,
) -> Result<(), WorkflowError> {
    let before = store::of_workflow(tx, workflow_id).await?;
    let runnable = validate::validate(defs).valid;
    let rows: Vec<TimerStartRow> = schedule::timer_starts(defs)
        .into_iter()
        .filter(|_| runnable)
        .filter_map(|t| {
            let kept = before.iter().find(|b| {
                b.process_id == t.process_id
                    && b.start_event == t.start_event
                    && b.kind == t.kind.to_string()
                    && b.definition == t.text
            });
            let (due_at, fired) = match kept {
                Some(b) => (b.due_at, b.fired),
                None => (t.spec.first_due(now)?, 0),
            };
            Some(TimerStartRow {
                workflow_id,
                workspace_id,
                version,
                process_id: t.process_id,
                start_event: t.start_event,
                kind: t.kind.to_string(),
                definition: t.text,
                due_at,
                fired,
            })
        })
        .collect();
    if before.is_empty() && rows.is_empty() {
        return Ok(());
    }
    store::replace(tx, workflow_id, &rows).await?;
    Ok(())
}

/// Starts the instance of the due occurrence `row` (taken by the caller's
/// transaction) and moves the row to its next occurrence, both in `tx`:
/// whether the instance started (false when its version could not start:
/// the occurrence is spent and logged, so a broken workflow does not stall
/// the clock).
pub async fn fire(
    tx: &mut PgConnection,
    cx: &RunContext<'_>,
    row: &TimerStartRow,
    now: OffsetDateTime,
) -> Result<bool, WorkflowError> {
    let req = StartInstance {
        process_id: Some(row.process_id.clone()),
        start_event: Some(row.start_event.clone()),
        version: Some(row.version),
        ..StartInstance::default()
    };
    let mut sp = sqlx::Connection::begin(&mut *tx).await?;
    let started = match start_in(&mut sp, cx, row.workspace_id, row.workflow_id, req, None).await {
        Ok(_) => {
            sp.commit().await?;
            true
        }
        Err(WorkflowError::Db(e)) => return Err(e.into()),
        Err(e) => {
            sp.rollback().await?;
            tracing::warn!(workflow = %row.workflow_id, start_event = %row.start_event, error = %e, "a timer start event could not start its process");
            false
        }
    };
    let fired = u32::try_from(row.fired).unwrap_or(0).saturating_add(1);
    let next = row
        .kind
        .parse::<TimerKind>()
        .ok()
        .and_then(|kind| timer::parse(kind, &row.definition).ok())
        .and_then(|spec| spec.next_after(row.due_at, fired, now))
        .and_then(|(due, fired)| i32::try_from(fired).ok().map(|f| (due, f)));
    store::advance(tx, row, next).await?;
    Ok(started)
}
