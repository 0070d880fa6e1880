//! Human gates on tasks: settling a task the escalation ladder handed to a
//! person, and reopening tasks when a reviewer rejects a mission's results.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::{MissionView, locked, replan::MAX_FEEDBACK_CHARS, transition_error, view};
use crate::{
    auth::Principal,
    domain::{MissionEvent, MissionStatus, TaskEvent, TaskStatus},
    engine::reports::finish_mission_if_done,
    error::ApiError,
    store::{
        events::kind,
        missions::{self, MissionRow},
        tasks::{self, Change, TaskRow},
    },
};

/// What a person does with a task waiting for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum HumanAction {
    /// Mark it done, with the output the person supplies.
    Complete,
    /// Put it back in the queue for a fresh set of attempts (the ladder starts over).
    Retry,
    /// Do without it; dependents proceed.
    Skip,
    /// Give up on it: the mission fails (unless the task is optional).
    Fail,
}

/// `POST /v1/missions/{id}/tasks/{task}/resolve` body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveRequest {
    /// `complete`, `retry`, `skip` or `fail`.
    pub action: HumanAction,
    /// The result, for `complete`.
    #[serde(default)]
    pub output: Option<Value>,
    /// Guidance for the next attempt (`retry`) or the reason (others).
    #[serde(default)]
    pub feedback: Option<String>,
}

fn check_feedback(feedback: Option<&str>) -> Result<(), ApiError> {
    if feedback.is_some_and(|f| f.chars().count() > MAX_FEEDBACK_CHARS) {
        return Err(ApiError::invalid(
            "feedback",
            format!("feedback is longer than {MAX_FEEDBACK_CHARS} characters"),
        ));
    }
    Ok(())
}

/// Finds a task of the mission by id or key.
async fn task_of(
    conn: &mut PgConnection,
    run: &MissionRow,
    task: &str,
) -> Result<TaskRow, ApiError> {
    let rows = tasks::list_for_mission(conn, run.id).await?;
    let id = task.parse::<Uuid>().ok();
    rows.into_iter()
        .find(|t| Some(t.id) == id || t.task_key == task)
        .ok_or_else(|| ApiError::NotFound(format!("mission {} has no task '{task}'", run.id)))
}

/// `roots` and every task that depends on one of them, directly or not
/// (`edges` are `(task, depends_on)` pairs).
fn downstream(edges: &[(Uuid, Uuid)], mut set: BTreeSet<Uuid>) -> BTreeSet<Uuid> {
    loop {
        let more: Vec<Uuid> = edges
            .iter()
            .filter(|(task, on)| set.contains(on) && !set.contains(task))
            .map(|(task, _)| *task)
            .collect();
        if more.is_empty() {
            return set;
        }
        set.extend(more);
    }
}

/// Settles a task in `awaiting_human`.
pub async fn resolve(
    pool: &PgPool,
    http: &reqwest::Client,
    who: &Principal,
    id: Uuid,
    task: &str,
    req: ResolveRequest,
) -> Result<MissionView, ApiError> {
    check_feedback(req.feedback.as_deref())?;
    if req.output.is_some() && req.action != HumanAction::Complete {
        return Err(ApiError::invalid(
            "output",
            "output is only taken with action 'complete'",
        ));
    }
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let mut run = locked(&mut tx, who, id).await?;
    let t = task_of(&mut tx, &run, task).await?;
    if t.status() != TaskStatus::AwaitingHuman {
        return Err(ApiError::conflict(
            "invalid_state",
            format!(
                "task '{}' is {}; only a task awaiting a person can be resolved",
                t.task_key, t.status
            ),
        ));
    }
    let event = match req.action {
        HumanAction::Complete => TaskEvent::CompleteByHuman,
        HumanAction::Retry => TaskEvent::Requeue,
        HumanAction::Skip => TaskEvent::Skip,
        HumanAction::Fail => TaskEvent::FailedFinally,
    };
    let to = t
        .status()
        .next(event)
        .map_err(|e| ApiError::conflict("invalid_state", e.to_string()))?;
    let output = match req.action {
        HumanAction::Complete => Some(req.output.clone().unwrap_or(Value::Null)),
        _ => None,
    };
    let updated = sqlx::query!(
        "UPDATE orchestration_tasks
         SET status = $3,
             output = CASE WHEN $3 = 'succeeded' THEN $4::jsonb ELSE output END,
             feedback = CASE WHEN $3 = 'queued' THEN COALESCE($5, feedback) ELSE feedback END,
             last_error = CASE WHEN $3 = 'failed' THEN COALESCE($5, last_error) ELSE last_error END,
             -- A retry starts the ladder over: fresh attempts, any agent.
             failure_count = CASE WHEN $3 = 'queued' THEN 0 ELSE failure_count END,
             escalation_step = CASE WHEN $3 = 'queued' THEN NULL ELSE escalation_step END,
             excluded_agents = CASE WHEN $3 = 'queued' THEN '{}' ELSE excluded_agents END,
             min_model_tier = CASE WHEN $3 = 'queued' THEN 0 ELSE min_model_tier END,
             finished_at = CASE WHEN $3 IN ('succeeded', 'skipped', 'failed') THEN now() ELSE finished_at END,
             version = version + 1, updated_at = now()
         WHERE id = $1 AND version = $2",
        t.id,
        t.version,
        to.as_str(),
        output,
        req.feedback
    )
    .execute(&mut *tx)
    .await?;
    if updated.rows_affected() != 1 {
        return Err(ApiError::conflict(
            "conflict",
            "the task changed meanwhile; reload and try again",
        ));
    }
    if to == TaskStatus::Queued {
        tasks::enqueue(
            &mut tx,
            run.workspace_id,
            run.id,
            t.id,
            run.priority,
            time::OffsetDateTime::now_utc(),
        )
        .await?;
    }
    tasks::record(
        &mut tx,
        Change::of(
            &t,
            to,
            kind::TASK_RESOLVED,
            &actor,
            None,
            json!({ "key": t.task_key, "action": req.action, "feedback": req.feedback, "to": to }),
        ),
    )
    .await?;
    if to.satisfies_dependents() {
        tasks::promote_ready(
            &mut tx,
            run.workspace_id,
            run.id,
            Some(t.id),
            run.priority,
            &actor,
        )
        .await?;
    }
    let cancelled = if to.is_terminal() {
        finish_mission_if_done(&mut tx, &mut run, &actor)
            .await
            .map_err(|e| ApiError::Unexpected(anyhow::anyhow!("{e}")))?
    } else {
        Vec::new()
    };
    missions::notify_wake(&mut tx).await?;
    tx.commit().await?;
    crate::engine::dispatch::notify_cancelled(http, cancelled);
    view(pool, who.workspace_id, id).await
}

/// Rejects a mission's results in review: the named tasks (by key or id)
/// and every task downstream of them are reopened with the feedback, and the
/// mission executes again. Earlier results stay on their attempts.
pub async fn reject_results(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
    feedback: &str,
    named: &[String],
) -> Result<MissionView, ApiError> {
    if feedback.trim().is_empty() {
        return Err(ApiError::invalid(
            "feedback",
            "rejecting results needs feedback saying what to change",
        ));
    }
    check_feedback(Some(feedback))?;
    if named.is_empty() {
        return Err(ApiError::invalid(
            "tasks",
            "name the tasks to redo (keys or ids) in 'tasks'",
        ));
    }
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let mut run = locked(&mut tx, who, id).await?;
    if run.status() != MissionStatus::AwaitingReview {
        return Err(ApiError::conflict(
            "invalid_state",
            format!(
                "only results awaiting review can be rejected; the mission is {}",
                run.status
            ),
        ));
    }
    let rows = tasks::list_for_mission(&mut tx, id).await?;
    let mut roots = BTreeSet::new();
    let mut problems = Vec::new();
    for n in named {
        let as_id = n.parse::<Uuid>().ok();
        match rows
            .iter()
            .find(|t| Some(t.id) == as_id || &t.task_key == n)
        {
            Some(t) if t.status() == TaskStatus::Succeeded => {
                roots.insert(t.id);
            }
            Some(t) => problems.push(format!(
                "task '{}' is {}; only succeeded tasks can be redone",
                t.task_key, t.status
            )),
            None => problems.push(format!("no task '{n}' in this mission")),
        }
    }
    if !problems.is_empty() {
        return Err(ApiError::Unprocessable {
            code: "invalid_tasks",
            message: problems.join("; "),
            details: json!({ "problems": problems }),
        });
    }
    // Everything downstream used the old results: redo it too.
    let edges = tasks::edges_for_mission(&mut tx, id).await?;
    let reopen = downstream(&edges, roots.clone());
    missions::transition(
        &mut tx,
        &mut run,
        MissionEvent::RejectResults,
        &actor,
        Some(feedback),
    )
    .await
    .map_err(transition_error)?;
    for t in rows.iter().filter(|t| reopen.contains(&t.id)) {
        // Tasks downstream that never ran (skipped, say) stay as they are.
        let Ok(to) = t.status().next(TaskEvent::Reopen) else {
            continue;
        };
        let note = if roots.contains(&t.id) {
            format!("A reviewer rejected this result: {feedback}")
        } else {
            format!(
                "A task upstream was redone after review ({feedback}); redo this one with its new output."
            )
        };
        let updated = sqlx::query!(
            "UPDATE orchestration_tasks
             SET status = 'pending', output = NULL, feedback = $3, failure_count = 0,
                 continuation_count = 0, escalation_step = NULL, excluded_agents = '{}',
                 min_model_tier = 0, finished_at = NULL, version = version + 1, updated_at = now()
             WHERE id = $1 AND version = $2",
            t.id,
            t.version,
            note
        )
        .execute(&mut *tx)
        .await?;
        if updated.rows_affected() != 1 {
            return Err(ApiError::conflict(
                "conflict",
                "a task changed meanwhile; reload and try again",
            ));
        }
        tasks::record(
            &mut tx,
            Change::of(
                t,
                to,
                kind::TASK_REOPENED,
                &actor,
                None,
                json!({ "key": t.task_key, "named": roots.contains(&t.id), "feedback": feedback }),
            ),
        )
        .await?;
    }
    tasks::promote_ready(&mut tx, run.workspace_id, id, None, run.priority, &actor).await?;
    missions::notify_wake(&mut tx).await?;
    tx.commit().await?;
    view(pool, who.workspace_id, id).await
}

/// `POST /v1/missions/{id}/tasks/{task}/cancel` body (optional).
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelTaskRequest {
    /// Why (kept on the events).
    #[serde(default)]
    pub reason: Option<String>,
}

/// Cancels one task and every task downstream of it that has not finished:
/// their live attempts end (workers are told; later reports are stale) and
/// the rest of the mission runs on.
pub async fn cancel_task(
    pool: &PgPool,
    http: &reqwest::Client,
    who: &Principal,
    id: Uuid,
    task: &str,
    req: CancelTaskRequest,
) -> Result<MissionView, ApiError> {
    check_feedback(req.reason.as_deref())?;
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let mut run = locked(&mut tx, who, id).await?;
    if run.status().is_terminal() {
        return Err(ApiError::conflict(
            "invalid_state",
            format!("the mission is {}; its tasks cannot change", run.status),
        ));
    }
    let t = task_of(&mut tx, &run, task).await?;
    if t.status().is_terminal() {
        return Err(ApiError::conflict(
            "invalid_state",
            format!("task '{}' is {} already", t.task_key, t.status),
        ));
    }
    let edges = tasks::edges_for_mission(&mut tx, id).await?;
    let doomed: Vec<Uuid> = downstream(&edges, BTreeSet::from([t.id]))
        .into_iter()
        .collect();
    let reason = req
        .reason
        .clone()
        .unwrap_or_else(|| format!("task '{}' was cancelled", t.task_key));
    let live = tasks::cancel_tasks(&mut tx, &run, &doomed, &actor, &reason, t.id).await?;
    let cancelled = finish_mission_if_done(&mut tx, &mut run, &actor)
        .await
        .map_err(|e| ApiError::Unexpected(anyhow::anyhow!("{e}")))?;
    missions::notify_wake(&mut tx).await?;
    tx.commit().await?;
    crate::engine::dispatch::notify_cancelled(http, live.into_iter().chain(cancelled).collect());
    view(pool, who.workspace_id, id).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downstream_follows_every_path_and_nothing_else() {
        let ids: Vec<Uuid> = (0..5).map(|i| Uuid::from_u128(i + 1)).collect();
        let (a, b, c, d, e) = (ids[0], ids[1], ids[2], ids[3], ids[4]);
        // a → b → d, a → c → d, e alone.
        let edges = vec![(b, a), (c, a), (d, b), (d, c)];
        assert_eq!(
            downstream(&edges, BTreeSet::from([a])),
            BTreeSet::from([a, b, c, d])
        );
        assert_eq!(
            downstream(&edges, BTreeSet::from([c])),
            BTreeSet::from([c, d])
        );
        assert_eq!(downstream(&edges, BTreeSet::from([e])), BTreeSet::from([e]));
    }
}
