//! Continuing a failed mission: a person retries or skips each task that
//! failed for good, the tasks the failure cancelled come back, and the
//! mission executes again from where it stopped (what succeeded stays).

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::json;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::{
    MissionView, check_version, finish::MISSION_FAILED_REASON, human_error::HumanActionError,
    locked, transition_error, view,
};
use crate::{
    auth::Principal,
    domain::{MissionEvent, MissionStatus, TaskEvent, TaskStatus},
    store::{
        events::payloads,
        missions::{self, MissionRow},
        tasks::{self, Change, TaskRow},
    },
};
use coordinator_core::invalid::Invalid;

/// `POST /v1/missions/{id}/continue` body.
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = ContinueMissionRequest)]
pub struct ContinueRequest {
    /// Failed tasks (keys or ids) to run again, with a fresh set of attempts.
    #[serde(default)]
    pub retry: Vec<String>,
    /// Failed tasks (keys or ids) to do without; their dependents proceed.
    #[serde(default)]
    pub skip: Vec<String>,
    /// Guidance for the retried tasks' next attempts (at most 4000 characters).
    #[serde(default)]
    pub feedback: Option<String>,
    /// The mission's `version` as read: 409 `version_conflict` if it changed since.
    #[serde(default)]
    pub version: Option<i64>,
}

/// What happens to one failed task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Choice {
    Retry,
    Skip,
}

/// Continues a failed mission (see the module docs).
pub async fn continue_failed(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
    req: ContinueRequest,
) -> Result<MissionView, HumanActionError> {
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let mut run = locked(&mut tx, who, id).await?;
    check_version(&run, req.version)?;
    continue_locked(&mut tx, &mut run, &req, &actor).await?;
    missions::notify_wake(&mut tx).await?;
    tx.commit().await?;
    Ok(view(pool, who.workspace_id, id).await?)
}

/// The continuation inside the caller's transaction, which holds the lock of
/// `run`. `resolve` with `retry`/`skip` on a failed task comes here too.
pub(super) async fn continue_locked(
    tx: &mut PgConnection,
    run: &mut MissionRow,
    req: &ContinueRequest,
    actor: &str,
) -> Result<(), HumanActionError> {
    if let Some(f) = &req.feedback {
        super::human_error::check_feedback(Some(f))?;
    }
    if run.status() != MissionStatus::Failed {
        return Err(HumanActionError::WrongState(format!(
            "only a failed mission can be continued; this one is {}",
            run.status
        )));
    }
    let rows = tasks::list_for_mission(&mut *tx, run.id).await?;
    if !rows.iter().any(|t| t.status() == TaskStatus::Failed) {
        return Err(HumanActionError::WrongState(format!(
            "the mission failed without a failed task ({}): nothing to retry; create it again",
            run.failure_reason
                .as_deref()
                .unwrap_or("no reason recorded")
        )));
    }
    let choices = choose(&rows, req)?;
    for t in &rows {
        if let Some(choice) = choices.iter().find(|(id, _)| *id == t.id).map(|c| c.1) {
            settle_failed(&mut *tx, t, choice, req.feedback.as_deref(), actor).await?;
        }
    }
    let reason = format!(
        "continued by a person: {} retried, {} skipped",
        choices.iter().filter(|c| c.1 == Choice::Retry).count(),
        choices.iter().filter(|c| c.1 == Choice::Skip).count()
    );
    let restored = tasks::restore_cancelled(
        &mut *tx,
        run.workspace_id,
        run.id,
        MISSION_FAILED_REASON,
        actor,
    )
    .await?;
    tracing::info!(mission = %run.id, restored, "failed mission continued");
    missions::transition(&mut *tx, run, MissionEvent::Continue, actor, Some(&reason))
        .await
        .map_err(transition_error)?;
    missions::clear_failure(&mut *tx, run).await?;
    tasks::promote_ready(
        &mut *tx,
        run.workspace_id,
        run.id,
        None,
        run.priority,
        actor,
    )
    .await?;
    // Everything may already be settled (every failed task skipped, nothing
    // else left): then the mission finishes now.
    let cancelled = super::finish::finish_mission_if_done(&mut *tx, run, actor)
        .await
        .map_err(|e| HumanActionError::Unexpected(anyhow::anyhow!("{e}")))?;
    debug_assert!(
        cancelled.is_empty(),
        "a continued mission cancelled attempts"
    );
    Ok(())
}

/// Which failed task gets which choice; every failed required task must get
/// one, and only failed tasks may.
fn choose(
    rows: &[TaskRow],
    req: &ContinueRequest,
) -> Result<Vec<(Uuid, Choice)>, HumanActionError> {
    let mut problems = Vec::new();
    let mut chosen: Vec<(Uuid, Choice)> = Vec::new();
    let named = req
        .retry
        .iter()
        .map(|n| (n, Choice::Retry))
        .chain(req.skip.iter().map(|n| (n, Choice::Skip)));
    for (n, choice) in named {
        let as_id = n.parse::<Uuid>().ok();
        match rows
            .iter()
            .find(|t| Some(t.id) == as_id || &t.task_key == n)
        {
            None => problems.push(format!("no task '{n}' in this mission")),
            Some(t) if t.status() != TaskStatus::Failed => problems.push(format!(
                "task '{}' is {}; only failed tasks are retried or skipped",
                t.task_key, t.status
            )),
            Some(t) if chosen.iter().any(|(id, _)| *id == t.id) => {
                problems.push(format!("task '{}' is named twice", t.task_key))
            }
            Some(t) => chosen.push((t.id, choice)),
        }
    }
    let chosen_ids: BTreeSet<Uuid> = chosen.iter().map(|c| c.0).collect();
    let left: Vec<&str> = rows
        .iter()
        .filter(|t| t.status() == TaskStatus::Failed && !t.optional && !chosen_ids.contains(&t.id))
        .map(|t| t.task_key.as_str())
        .collect();
    if !left.is_empty() {
        problems.push(format!(
            "retry or skip every failed task: {} not named",
            left.iter()
                .map(|k| format!("'{k}'"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if chosen.is_empty() && problems.is_empty() {
        return Err(Invalid::new("retry", "name the failed tasks to retry or skip").into());
    }
    if !problems.is_empty() {
        return Err(HumanActionError::InvalidTasks(problems));
    }
    Ok(chosen)
}

/// Moves one failed task: back to the queue with a fresh ladder, or skipped.
async fn settle_failed(
    tx: &mut PgConnection,
    t: &TaskRow,
    choice: Choice,
    feedback: Option<&str>,
    actor: &str,
) -> Result<(), HumanActionError> {
    let (event, action) = match choice {
        Choice::Retry => (TaskEvent::Requeue, "retry"),
        Choice::Skip => (TaskEvent::Skip, "skip"),
    };
    let to = t.status().next(event)?;
    let updated = sqlx::query!(
        "UPDATE orchestration_tasks
         SET status = $3,
             feedback = CASE WHEN $3 = 'queued' THEN COALESCE($4, feedback) ELSE feedback END,
             failure_count = 0, escalation_step = NULL, excluded_agents = '{}',
             min_model_tier = 0, next_attempt_at = NULL, lease_owner = NULL,
             lease_expires_at = NULL,
             finished_at = CASE WHEN $3 = 'skipped' THEN now() ELSE NULL END,
             version = version + 1, updated_at = now()
         WHERE id = $1 AND version = $2 AND status = 'failed'",
        t.id,
        t.version,
        to.as_str(),
        feedback
    )
    .execute(&mut *tx)
    .await?;
    if updated.rows_affected() != 1 {
        return Err(HumanActionError::TaskChanged);
    }
    let payload = payloads::TaskResolved {
        key: t.task_key.clone(),
        action: json!(action),
        feedback: feedback.map(str::to_owned),
        to,
        via: Some(json!({ "continued": "failed mission" })),
    };
    tasks::record(&mut *tx, Change::event(t, to, actor, None, &payload)).await?;
    Ok(())
}
