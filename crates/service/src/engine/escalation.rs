//! The escalation ladder, applied: what the engine does when a task has
//! failed every allowed attempt (see [`crate::domain::escalation`] for the
//! pure rule). Runs inside the report's transaction, under the mission lock.

use std::collections::BTreeSet;

use sqlx::PgConnection;
use time::OffsetDateTime;
use uuid::Uuid;

use coordinator_core::agents::PinRefusal;
use coordinator_protocol::agent_events::TaskPinUnavailable;

use super::{
    EngineConfig,
    task_outcome::{self, ReportError, Retry, RetryKind},
};
use crate::{
    assignment::{TaskNeeds, capable},
    coordination::organisation,
    domain::{
        Escalation, FailureKind, LadderState, MissionStatus, Rung, TaskEvent, TaskStatus, escalate,
    },
    store::{
        agents,
        events::{self, EventPayload, payloads},
        missions::MissionRow,
        tasks::{self, Change, TaskRow},
    },
};

/// The failure that exhausted the task's attempts.
pub struct Failed {
    /// The attempt that failed last.
    pub attempt_id: Uuid,
    /// Its class.
    pub kind: FailureKind,
    /// What went wrong.
    pub error: String,
    /// Feedback for a next attempt (verification reasons).
    pub feedback: Option<String>,
    /// What the attempt cost.
    pub cost: f64,
}

/// Takes the next rung of the ladder for `task` and returns its new status.
pub async fn escalate_task(
    conn: &mut PgConnection,
    cfg: &EngineConfig,
    run: &mut MissionRow,
    task: &TaskRow,
    f: Failed,
    actor: &str,
) -> Result<TaskStatus, ReportError> {
    let Ladder {
        state,
        excluded,
        top_tried,
    } = ladder(conn, cfg, run, task).await?;
    match escalate(&state) {
        Escalation::Climb(rung @ (Rung::OtherAgent | Rung::HigherTier)) => {
            let min_tier = if rung == Rung::HigherTier {
                top_tried + 1
            } else {
                task.min_model_tier
            };
            let mut r = Retry::new(
                RetryKind::Escalated,
                OffsetDateTime::now_utc(),
                f.cost,
                Some(f.error.clone()),
            );
            r.feedback = f.feedback;
            // Written by the retry as its `task.escalated` payload.
            r.detail = payloads::TaskEscalated {
                key: task.task_key.clone(),
                rung,
                excluded_agents: Some(excluded.clone()),
                min_model_tier: Some(min_tier),
                error: Some(f.error.clone()),
                failure_kind: Some(f.kind),
            }
            .to_event()
            .1;
            task_outcome::retry(conn, task, run, f.attempt_id, r, actor).await?;
            // A fresh set of attempts on the new rung; a pin to the agent
            // that failed would defeat it.
            sqlx::query!(
                "UPDATE orchestration_tasks
                 SET escalation_step = $2, excluded_agents = $3, min_model_tier = $4,
                     failure_count = 0, pinned_agent_id = NULL
                 WHERE id = $1",
                task.id,
                rung.as_str(),
                &excluded,
                min_tier
            )
            .execute(&mut *conn)
            .await?;
            Ok(TaskStatus::RetryWait)
        }
        Escalation::DropOptional => {
            supersede(
                conn,
                task,
                &f,
                None,
                actor,
                &payloads::TaskSkipped {
                    key: task.task_key.clone(),
                    reason: "optional task failed on every rung that could help; dropped".into(),
                    error: Some(f.error.clone()),
                    decision_id: None,
                },
            )
            .await?;
            tasks::promote_ready(
                conn,
                run.workspace_id,
                run.id,
                Some(task.id),
                run.priority,
                actor,
            )
            .await?;
            Ok(TaskStatus::Skipped)
        }
        Escalation::Climb(Rung::Replan) => {
            let feedback = format!(
                "Task '{}' ({}) failed after every attempt, on other agents and higher tiers too. Last error: {}. \
                 Replan the remaining work around it: do not depend on '{}'; if its purpose is still needed, \
                 reach it with different tasks.",
                task.task_key, task.title, f.error, task.task_key
            );
            // Missions are intentions: the trigger is logged with the
            // strategy's verdict (every strategy replans on this one).
            crate::missions::commitment::consult(
                conn,
                run,
                coordinator_core::bdi::MissionTrigger::TaskFailedAfterEscalations,
                actor,
            )
            .await?;
            replan_around_task(conn, run, task, f, &feedback, actor).await
        }
        Escalation::Climb(Rung::Human) => {
            to_human(conn, task, &f, &excluded, actor).await?;
            Ok(TaskStatus::AwaitingHuman)
        }
        Escalation::Fail => {
            task_outcome::fail(
                conn,
                task,
                Some(f.attempt_id),
                f.cost,
                &f.error,
                Some(f.kind),
                actor,
            )
            .await?;
            Ok(TaskStatus::Failed)
        }
    }
}

/// What the ladder may do for a task: its state, the agents to leave out
/// from now on (excluded before, or failed it), and the highest tier tried.
struct Ladder {
    state: LadderState,
    excluded: Vec<String>,
    top_tried: i32,
}

/// Reads what the ladder needs: the agents that failed the task, and the
/// online (not offline, not retired) agents the organisation spec allows
/// and that are able to do it.
async fn ladder(
    conn: &mut PgConnection,
    cfg: &EngineConfig,
    run: &MissionRow,
    task: &TaskRow,
) -> Result<Ladder, ReportError> {
    let tried = sqlx::query!(
        r#"SELECT DISTINCT a.agent_id, COALESCE(g.model_tier, 0) AS "tier!"
           FROM task_attempts a
           LEFT JOIN agents g ON g.workspace_id = a.workspace_id AND g.agent_id = a.agent_id
           WHERE a.task_id = $1 AND a.purpose = 'work' AND a.status IN ('failed', 'expired')"#,
        task.id
    )
    .fetch_all(&mut *conn)
    .await?;
    let online = agents::online(conn, task.workspace_id).await?;
    let online = organisation::not_prohibited(conn, task, online).await?;
    let needs = TaskNeeds::of(&task.required_skills, &task.required_tools);
    let able: Vec<_> = online
        .iter()
        .filter(|a| capable(needs, &a.skills, &a.tools))
        .collect();
    let mut excluded: BTreeSet<String> = task.excluded_agents.iter().cloned().collect();
    excluded.extend(tried.iter().map(|t| t.agent_id.clone()));
    let top_tried = tried.iter().map(|t| t.tier).max().unwrap_or(0);
    let state = LadderState {
        reached: task.rung(),
        optional: task.optional,
        other_agent: able
            .iter()
            .any(|a| !excluded.contains(&a.agent_id) && a.model_tier >= task.min_model_tier),
        higher_tier: able.iter().any(|a| a.model_tier > top_tried),
        replan: may_replan(cfg, run),
        human: run
            .constraints
            .get("human_escalation")
            .and_then(|v| v.as_bool())
            .unwrap_or(true),
    };
    Ok(Ladder {
        state,
        excluded: excluded.into_iter().collect(),
        top_tried,
    })
}

/// A task waiting (`queued` or `retry_wait`) pinned to an agent that cannot
/// take it (offline, retired or gone) would wait forever: the pin is
/// dropped, `task.pin_unavailable` says why, and the ladder decides as for
/// a task that failed on that agent — another agent or a higher tier (the
/// scorer picks among the online agents), drop it if optional, replan
/// around it, or a person. When no rung can help, it waits unpinned, so
/// any capable agent (the pinned one back, too) takes it. The pinned agent
/// is not excluded: it did not fail the task. The caller holds the
/// mission's lock; returns the task's new status.
pub async fn pin_unavailable(
    conn: &mut PgConnection,
    cfg: &EngineConfig,
    run: &mut MissionRow,
    task: &TaskRow,
    reason: PinRefusal,
    actor: &str,
) -> Result<TaskStatus, ReportError> {
    let agent_id = task.pinned_agent_id.clone().unwrap_or_default();
    let Ladder {
        state, top_tried, ..
    } = ladder(conn, cfg, run, task).await?;
    let step = escalate(&state);
    let (rung, outcome) = match step {
        Escalation::Climb(r @ (Rung::OtherAgent | Rung::HigherTier)) => (Some(r), "unpinned"),
        Escalation::DropOptional => (None, "skipped"),
        Escalation::Climb(Rung::Replan) => (Some(Rung::Replan), "replanned"),
        Escalation::Climb(Rung::Human) => (Some(Rung::Human), "awaiting_human"),
        Escalation::Fail => (None, "waiting"),
    };
    let min_tier = match step {
        Escalation::Climb(Rung::HigherTier) => top_tried + 1,
        _ => task.min_model_tier,
    };
    let r = sqlx::query!(
        "UPDATE orchestration_tasks
         SET pinned_agent_id = NULL, min_model_tier = $3,
             escalation_step = COALESCE($4, escalation_step),
             version = version + 1, updated_at = now()
         WHERE id = $1 AND version = $2",
        task.id,
        task.version,
        min_tier,
        // A higher tier is a rung taken; another agent is only the scorer
        // choosing again (the task did not fail), so it stays available.
        rung.filter(|r| *r == Rung::HigherTier).map(|r| r.as_str())
    )
    .execute(&mut *conn)
    .await?;
    if r.rows_affected() != 1 {
        return Err(ReportError::Race("task version"));
    }
    events::append(
        conn,
        run.workspace_id,
        events::NewEvent::new(
            run.id,
            Some(task.id),
            None,
            actor,
            &TaskPinUnavailable {
                key: task.task_key.clone(),
                agent_id: agent_id.clone(),
                reason,
                rung,
                outcome: outcome.to_owned(),
            },
        ),
    )
    .await?;
    let task = tasks::get(conn, task.id).await?;
    let why = format!("its pinned agent {agent_id} is {reason}");
    match step {
        Escalation::Climb(Rung::OtherAgent | Rung::HigherTier) | Escalation::Fail => {
            Ok(task.status())
        }
        Escalation::DropOptional => {
            set_aside(conn, &task, &format!("optional task dropped: {why}"), actor).await?;
            tasks::promote_ready(
                conn,
                run.workspace_id,
                run.id,
                Some(task.id),
                run.priority,
                actor,
            )
            .await?;
            Ok(TaskStatus::Skipped)
        }
        Escalation::Climb(Rung::Replan) => {
            set_aside(conn, &task, &format!("replanned around: {why}"), actor).await?;
            let feedback = format!(
                "Task '{}' ({}) has no agent: {why}, and no other agent can do it. Replan the remaining \
                 work around it: do not depend on '{}'; if its purpose is still needed, reach it with \
                 tasks the available agents can do.",
                task.task_key, task.title, task.task_key
            );
            sqlx::query!(
                "UPDATE orchestration_runs SET escalation_replans = escalation_replans + 1 WHERE id = $1",
                run.id
            )
            .execute(&mut *conn)
            .await?;
            run.escalation_replans += 1;
            crate::missions::replan::replan_around(conn, run, &feedback, actor)
                .await
                .map_err(|_| ReportError::Race("replan"))?;
            Ok(TaskStatus::Skipped)
        }
        Escalation::Climb(Rung::Human) => {
            let payload = payloads::TaskAwaitingHuman {
                key: task.task_key.clone(),
                rung: Some(Rung::Human),
                reason: Some(why),
                attempts: Some(task.attempt_count),
                actions: payloads::TaskAwaitingHuman::actions(),
                ..Default::default()
            };
            crate::missions::human::hand_to_person(conn, run, &task, actor, payload)
                .await
                .map_err(|_| ReportError::Race("task status"))?;
            Ok(TaskStatus::AwaitingHuman)
        }
    }
}

/// Waiting → skipped (the ladder dropped it, or replans around it): out of
/// the ready queue, with a `task.skipped` event.
async fn set_aside(
    conn: &mut PgConnection,
    task: &TaskRow,
    reason: &str,
    actor: &str,
) -> Result<(), ReportError> {
    let to = task
        .status()
        .next(TaskEvent::Skip)
        .map_err(|_| ReportError::Race("task status"))?;
    let r = sqlx::query!(
        "UPDATE orchestration_tasks
         SET status = 'skipped', finished_at = now(), version = version + 1, updated_at = now()
         WHERE id = $1 AND version = $2",
        task.id,
        task.version
    )
    .execute(&mut *conn)
    .await?;
    if r.rows_affected() != 1 {
        return Err(ReportError::Race("task version"));
    }
    sqlx::query!("DELETE FROM task_queue WHERE task_id = $1", task.id)
        .execute(&mut *conn)
        .await?;
    tasks::record(
        conn,
        Change::event(
            task,
            to,
            actor,
            None,
            &payloads::TaskSkipped {
                key: task.task_key.clone(),
                reason: reason.to_owned(),
                error: None,
                decision_id: None,
            },
        ),
    )
    .await?;
    Ok(())
}

/// Running → skipped, because the ladder replaced or dropped the task.
/// Whether the mission may still be replanned around a task: replanning is
/// on (an LLM planner is configured), the mission executes, and it has
/// replans left.
pub fn may_replan(cfg: &EngineConfig, run: &MissionRow) -> bool {
    cfg.escalation_replan
        && run.escalation_replans < cfg.max_escalation_replans
        && run.status() == MissionStatus::Executing
}

/// Sets the task aside (`skipped`, with a `task.escalated` event on the
/// replan rung) and replans the mission's remaining work around it with
/// `feedback`; counts against the mission's replans. The caller has
/// consulted the mission's commitment.
pub async fn replan_around_task(
    conn: &mut PgConnection,
    run: &mut MissionRow,
    task: &TaskRow,
    f: Failed,
    feedback: &str,
    actor: &str,
) -> Result<TaskStatus, ReportError> {
    supersede(
        conn,
        task,
        &f,
        Some(Rung::Replan),
        actor,
        &payloads::TaskEscalated {
            key: task.task_key.clone(),
            rung: Rung::Replan,
            excluded_agents: None,
            min_model_tier: None,
            error: Some(f.error.clone()),
            failure_kind: Some(f.kind),
        },
    )
    .await?;
    sqlx::query!(
        "UPDATE orchestration_runs SET escalation_replans = escalation_replans + 1 WHERE id = $1",
        run.id
    )
    .execute(&mut *conn)
    .await?;
    run.escalation_replans += 1;
    crate::missions::replan::replan_around(conn, run, feedback, actor)
        .await
        .map_err(|_| ReportError::Race("replan"))?;
    Ok(TaskStatus::Skipped)
}

async fn supersede(
    conn: &mut PgConnection,
    task: &TaskRow,
    f: &Failed,
    rung: Option<Rung>,
    actor: &str,
    payload: &impl EventPayload,
) -> Result<(), ReportError> {
    let to = task
        .status()
        .next(TaskEvent::Supersede)
        .map_err(|_| ReportError::Race("task status"))?;
    let r = sqlx::query!(
        "UPDATE orchestration_tasks
         SET status = 'skipped', escalation_step = COALESCE($3, escalation_step),
             failure_count = failure_count + 1, last_error = $4, actual_cost = actual_cost + $5,
             lease_owner = NULL, lease_expires_at = NULL, finished_at = now(),
             version = version + 1, updated_at = now()
         WHERE id = $1 AND version = $2",
        task.id,
        task.version,
        rung.map(|r| r.as_str()),
        f.error,
        f.cost
    )
    .execute(&mut *conn)
    .await?;
    if r.rows_affected() != 1 {
        return Err(ReportError::Race("task version"));
    }
    tasks::record(
        conn,
        Change::event(task, to, actor, Some(f.attempt_id), payload),
    )
    .await?;
    Ok(())
}

/// Running → awaiting_human: a person completes, retries, skips or fails it.
async fn to_human(
    conn: &mut PgConnection,
    task: &TaskRow,
    f: &Failed,
    excluded: &[String],
    actor: &str,
) -> Result<(), ReportError> {
    let to = task
        .status()
        .next(TaskEvent::EscalateToHuman)
        .map_err(|_| ReportError::Race("task status"))?;
    let r = sqlx::query!(
        "UPDATE orchestration_tasks
         SET status = 'awaiting_human', escalation_step = 'human', excluded_agents = $3,
             failure_count = failure_count + 1, last_error = $4, actual_cost = actual_cost + $5,
             feedback = COALESCE($6, feedback), lease_owner = NULL, lease_expires_at = NULL,
             version = version + 1, updated_at = now()
         WHERE id = $1 AND version = $2",
        task.id,
        task.version,
        excluded,
        f.error,
        f.cost,
        f.feedback
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
            Some(f.attempt_id),
            &payloads::TaskAwaitingHuman {
                key: task.task_key.clone(),
                rung: Some(Rung::Human),
                error: Some(f.error.clone()),
                failure_kind: Some(f.kind),
                attempts: Some(task.attempt_count),
                excluded_agents: Some(excluded.to_vec()),
                actions: payloads::TaskAwaitingHuman::actions(),
                ..Default::default()
            },
        ),
    )
    .await?;
    Ok(())
}
