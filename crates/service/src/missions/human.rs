//! Human gates on tasks: settling a task the escalation ladder handed to a
//! person, and reopening tasks when a reviewer rejects a mission's results.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::{MissionView, locked, transition_error, view};
use crate::{
    auth::Principal,
    domain::{MissionEvent, MissionStatus, TaskEvent, TaskStatus},
    missions::finish::finish_mission_if_done,
    store::{
        agents,
        attempts::{self, Cancelled},
        events::payloads,
        missions::{self, MissionRow},
        tasks::{self, Change, TaskRow},
    },
};

use coordinator_core::invalid::Invalid;

pub use super::human_error::HumanActionError;
use super::human_error::check_feedback;

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
#[schema(as = ResolveTaskRequest)]
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

/// Finds a task of the mission by id or key.
async fn task_of(
    conn: &mut PgConnection,
    run: &MissionRow,
    task: &str,
) -> Result<TaskRow, HumanActionError> {
    let rows = tasks::list_for_mission(conn, run.id).await?;
    let id = task.parse::<Uuid>().ok();
    rows.into_iter()
        .find(|t| Some(t.id) == id || t.task_key == task)
        .ok_or_else(|| HumanActionError::TaskNotFound {
            mission: run.id,
            task: task.to_owned(),
        })
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
    http: &crate::egress::Client,
    who: &Principal,
    id: Uuid,
    task: &str,
    req: ResolveRequest,
) -> Result<MissionView, HumanActionError> {
    check_feedback(req.feedback.as_deref())?;
    if req.output.is_some() && req.action != HumanAction::Complete {
        return Err(Invalid::new("output", "output is only taken with action 'complete'").into());
    }
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let mut run = locked(&mut tx, who, id).await?;
    let t = task_of(&mut tx, &run, task).await?;
    if t.status() == TaskStatus::Failed {
        // Retrying or skipping a failed task continues its failed mission
        // (when it is the only failed one; `continue` takes several).
        let (retry, skip) = match req.action {
            HumanAction::Retry => (vec![t.task_key.clone()], Vec::new()),
            HumanAction::Skip => (Vec::new(), vec![t.task_key.clone()]),
            HumanAction::Complete | HumanAction::Fail => {
                return Err(HumanActionError::WrongState(format!(
                    "task '{}' failed; it can be retried or skipped, not {}",
                    t.task_key,
                    if req.action == HumanAction::Fail {
                        "failed again"
                    } else {
                        "completed by hand"
                    }
                )));
            }
        };
        let continuation = super::continuation::ContinueRequest {
            retry,
            skip,
            feedback: req.feedback,
            version: None,
        };
        super::continuation::continue_locked(&mut tx, &mut run, &continuation, &actor).await?;
        missions::notify_wake(&mut tx).await?;
        tx.commit().await?;
        return Ok(view(pool, who.workspace_id, id).await?);
    }
    let cancelled = settle(
        &mut tx,
        &mut run,
        &t,
        Settlement {
            action: req.action,
            output: req.output,
            feedback: req.feedback,
            via: None,
        },
        &actor,
    )
    .await?;
    missions::notify_wake(&mut tx).await?;
    tx.commit().await?;
    crate::worker::notify_cancelled(http, cancelled);
    Ok(view(pool, who.workspace_id, id).await?)
}

/// How a task waiting for a person is settled, and by what.
#[derive(Debug, Clone)]
pub struct Settlement {
    /// What the person does.
    pub action: HumanAction,
    /// The result, for `complete`.
    pub output: Option<Value>,
    /// Guidance for the next attempt (`retry`) or the reason (others).
    pub feedback: Option<String>,
    /// What settled it when not a direct resolve (a work package, a handoff), for the event.
    pub via: Option<Value>,
}

/// Settles task `t` (which must be `awaiting_human`) inside the caller's
/// transaction, which holds the lock of its mission `run`: moves it, writes
/// its event, promotes dependents and finishes the mission when nothing is
/// left. Returns the attempts whose workers must be told they were cancelled
/// (after commit). Work packages and handoffs settle tasks through this too.
pub async fn settle(
    tx: &mut PgConnection,
    run: &mut MissionRow,
    t: &TaskRow,
    s: Settlement,
    actor: &str,
) -> Result<Vec<Cancelled>, HumanActionError> {
    check_feedback(s.feedback.as_deref())?;
    if t.status() != TaskStatus::AwaitingHuman {
        return Err(HumanActionError::WrongState(format!(
            "task '{}' is {}; only a task awaiting a person can be resolved",
            t.task_key, t.status
        )));
    }
    let event = match s.action {
        HumanAction::Complete => TaskEvent::CompleteByHuman,
        HumanAction::Retry => TaskEvent::Requeue,
        HumanAction::Skip => TaskEvent::Skip,
        HumanAction::Fail => TaskEvent::FailedFinally,
    };
    let to = t
        .status()
        .next(event)
        .map_err(|e| HumanActionError::WrongState(e.to_string()))?;
    let output = match s.action {
        HumanAction::Complete => Some(s.output.clone().unwrap_or(Value::Null)),
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
        s.feedback
    )
    .execute(&mut *tx)
    .await?;
    if updated.rows_affected() != 1 {
        return Err(HumanActionError::TaskChanged);
    }
    if to == TaskStatus::Queued {
        tasks::enqueue(
            &mut *tx,
            run.workspace_id,
            run.id,
            t.id,
            run.priority,
            time::OffsetDateTime::now_utc(),
        )
        .await?;
    }
    let payload = payloads::TaskResolved {
        key: t.task_key.clone(),
        action: json!(s.action),
        feedback: s.feedback.clone(),
        to,
        via: s.via.clone(),
    };
    tasks::record(&mut *tx, Change::event(t, to, actor, None, &payload)).await?;
    if to.satisfies_dependents() {
        tasks::promote_ready(
            &mut *tx,
            run.workspace_id,
            run.id,
            Some(t.id),
            run.priority,
            actor,
        )
        .await?;
    }
    let cancelled = if to.is_terminal() {
        finish_mission_if_done(&mut *tx, run, actor)
            .await
            .map_err(|e| HumanActionError::Unexpected(anyhow::anyhow!("{e}")))?
    } else {
        Vec::new()
    };
    Ok(cancelled)
}

/// Hands task `t` to a person (delegation to a work package, or an agent's
/// handoff): `queued`/`retry_wait` leave the ready queue, a `running` task's
/// live attempt ends (returned, so its worker can be told after commit), and
/// the task waits in `awaiting_human` for the person to settle it. A task
/// already waiting for a person stays as it is (returns `Ok(false)` then).
/// The caller holds the lock of the task's mission.
pub async fn hand_to_person(
    tx: &mut PgConnection,
    run: &MissionRow,
    t: &TaskRow,
    actor: &str,
    payload: payloads::TaskAwaitingHuman,
) -> Result<(bool, Vec<Cancelled>), HumanActionError> {
    if t.status() == TaskStatus::AwaitingHuman {
        return Ok((false, Vec::new()));
    }
    let to = t.status().next(TaskEvent::EscalateToHuman)?;
    let updated = sqlx::query!(
        "UPDATE orchestration_tasks
         SET status = 'awaiting_human', escalation_step = 'human',
             lease_owner = NULL, lease_expires_at = NULL,
             version = version + 1, updated_at = now()
         WHERE id = $1 AND version = $2",
        t.id,
        t.version
    )
    .execute(&mut *tx)
    .await?;
    if updated.rows_affected() != 1 {
        return Err(HumanActionError::TaskChanged);
    }
    sqlx::query!("DELETE FROM task_queue WHERE task_id = $1", t.id)
        .execute(&mut *tx)
        .await?;
    let live = if t.status() == TaskStatus::Running {
        let live = attempts::cancel_live(&mut *tx, run.id, Some(&[t.id])).await?;
        for a in &live {
            agents::release_slot(&mut *tx, run.workspace_id, &a.agent_id).await?;
        }
        live
    } else {
        Vec::new()
    };
    let payload = payloads::TaskAwaitingHuman {
        key: t.task_key.clone(),
        actions: payloads::TaskAwaitingHuman::actions(),
        ..payload
    };
    tasks::record(&mut *tx, Change::event(t, to, actor, None, &payload)).await?;
    Ok((true, live))
}

/// Finds a task of the workspace by id and locks its mission (lock order:
/// mission first); the task is read after the lock, so it cannot move.
pub async fn lock_task(
    tx: &mut PgConnection,
    workspace_id: Uuid,
    task_id: Uuid,
) -> Result<Option<(MissionRow, TaskRow)>, HumanActionError> {
    let Some(run_id) = sqlx::query_scalar!(
        "SELECT run_id FROM orchestration_tasks WHERE id = $1 AND workspace_id = $2",
        task_id,
        workspace_id
    )
    .fetch_optional(&mut *tx)
    .await?
    else {
        return Ok(None);
    };
    let Some(run) = missions::lock(&mut *tx, workspace_id, run_id).await? else {
        return Ok(None);
    };
    let t = tasks::get(&mut *tx, task_id).await?;
    Ok(Some((run, t)))
}

/// Finds a task of a locked mission by id or key (404 otherwise).
pub async fn task_of_mission(
    conn: &mut PgConnection,
    run: &MissionRow,
    task: &str,
) -> Result<TaskRow, HumanActionError> {
    task_of(conn, run, task).await
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
) -> Result<MissionView, HumanActionError> {
    if feedback.trim().is_empty() {
        return Err(Invalid::new(
            "feedback",
            "rejecting results needs feedback saying what to change",
        )
        .into());
    }
    check_feedback(Some(feedback))?;
    if named.is_empty() {
        return Err(
            Invalid::new("tasks", "name the tasks to redo (keys or ids) in 'tasks'").into(),
        );
    }
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let mut run = locked(&mut tx, who, id).await?;
    if run.status() != MissionStatus::AwaitingReview {
        return Err(HumanActionError::WrongState(format!(
            "only results awaiting review can be rejected; the mission is {}",
            run.status
        )));
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
        return Err(HumanActionError::InvalidTasks(problems));
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
            return Err(HumanActionError::ReopenRaced);
        }
        tasks::record(
            &mut tx,
            Change::event(
                t,
                to,
                &actor,
                None,
                &payloads::TaskReopened {
                    key: t.task_key.clone(),
                    named: roots.contains(&t.id),
                    feedback: feedback.to_owned(),
                },
            ),
        )
        .await?;
    }
    tasks::promote_ready(&mut tx, run.workspace_id, id, None, run.priority, &actor).await?;
    missions::notify_wake(&mut tx).await?;
    tx.commit().await?;
    Ok(view(pool, who.workspace_id, id).await?)
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
    http: &crate::egress::Client,
    who: &Principal,
    id: Uuid,
    task: &str,
    req: CancelTaskRequest,
) -> Result<MissionView, HumanActionError> {
    check_feedback(req.reason.as_deref())?;
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let mut run = locked(&mut tx, who, id).await?;
    if run.status().is_terminal() {
        return Err(HumanActionError::WrongState(format!(
            "the mission is {}; its tasks cannot change",
            run.status
        )));
    }
    let t = task_of(&mut tx, &run, task).await?;
    if t.status().is_terminal() {
        return Err(HumanActionError::WrongState(format!(
            "task '{}' is {} already",
            t.task_key, t.status
        )));
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
        .map_err(|e| HumanActionError::Unexpected(anyhow::anyhow!("{e}")))?;
    missions::notify_wake(&mut tx).await?;
    tx.commit().await?;
    crate::worker::notify_cancelled(http, live.into_iter().chain(cancelled).collect());
    Ok(view(pool, who.workspace_id, id).await?)
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
