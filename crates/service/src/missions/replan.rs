//! Changing a mission's plan: rejecting a proposed plan, new instructions
//! while it runs, reading earlier plan versions, and saving a finished
//! mission's structure as a routine.
//!
//! BDI commitment: a committed plan is only remade on these explicit
//! triggers, never on ticks. Completed and running tasks are untouched; only
//! tasks that have not started are replaced, and `plan_version` increments.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use super::{
    MissionError, MissionView, PlanningConfig, install_plan, locked, plan_ready,
    planner::{self, PlanInput, Planned, PlanningError},
    request_llm_plan, transition_error, view,
};
use crate::{
    auth::Principal,
    domain::{MissionEvent, MissionStatus, TaskStatus},
    planning::{Criterion, PlanProvenance, PlanSpec, PlanTemplate, TaskSpec, routine_from_plan},
    store::{
        events::{self, NewEvent, payloads},
        missions::{self, MissionRow, PlanRecord},
        tasks::{self, TaskRow},
        templates,
    },
};

use coordinator_core::{invalid::Invalid, text::Text};
use coordinator_protocol::agent_events::PlanExtended;

/// Why changing a mission's plan (reject, instructions, plan versions,
/// routines, replanning around a task) was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum ReplanError {
    /// A request field is wrong.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// No such mission in the workspace.
    #[error("no mission {0}")]
    NotFound(Uuid),
    /// The mission has no such plan version (`None`: no plan yet).
    #[error("{}", match .version {
        Some(v) => format!("mission {} has no plan version {v}", .mission),
        None => format!("mission {} has no plan yet", .mission),
    })]
    NoPlanVersion {
        /// The mission.
        mission: Uuid,
        /// The version asked for.
        version: Option<i32>,
    },
    /// The mission is not in a state that allows the change.
    #[error("{0}")]
    WrongState(String),
    /// Replanning a running mission from instructions needs an LLM or a plan.
    #[error(
        "replanning a running mission from instructions needs an LLM planner (COORDINATOR_LLM_BASE_URL) or an explicit plan in the request"
    )]
    NeedsLlm,
    /// A routine of that name exists.
    #[error("a routine named '{0}' already exists")]
    RoutineExists(String),
    /// No acceptable plan.
    #[error(transparent)]
    Plan(#[from] PlanningError),
    /// Locking, moving or viewing the mission failed.
    #[error(transparent)]
    Mission(#[from] MissionError),
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// Anything else.
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// Longest feedback or instructions accepted, in characters.
pub const MAX_FEEDBACK_CHARS: usize = 5_000;

/// `POST /v1/missions/{id}/reject-plan` body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RejectPlanRequest {
    /// What is wrong with the plan (kept on the event, given to the LLM planner).
    #[schema(min_length = 1, max_length = 5000, pattern = r"\S")]
    pub feedback: String,
    /// A replacement plan, instead of asking the planner again.
    #[serde(default)]
    pub plan: Option<PlanSpec>,
}

/// `POST /v1/missions/{id}/instructions` body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct InstructionsRequest {
    /// What should change.
    #[schema(min_length = 1, max_length = 5000, pattern = r"\S")]
    pub instructions: String,
    /// The new plan for the work not started yet (may depend on kept tasks by key).
    #[serde(default)]
    pub plan: Option<PlanSpec>,
}

/// A routine's name: 1–100 letters, digits, spaces, `-` or `_`, no surrounding spaces.
pub const ROUTINE_NAME_PATTERN: &str = "^[A-Za-z0-9_-]([A-Za-z0-9 _-]{0,98}[A-Za-z0-9_-])?$";

/// Feedback on a plan, or instructions for the rest of a mission.
pub const FEEDBACK: Text = Text::required(MAX_FEEDBACK_CHARS);

fn check_text(field: &str, text: &str) -> Result<(), Invalid> {
    FEEDBACK.check(field, text)
}

/// True for tasks a new plan may replace (not started).
fn replaceable(t: &TaskRow) -> bool {
    t.attempt_count == 0
        && matches!(
            t.status(),
            TaskStatus::Pending | TaskStatus::Queued | TaskStatus::AwaitingApproval
        )
}

/// The kept tasks of a mission as plan tasks (depending on each other by key).
pub async fn kept_specs(conn: &mut PgConnection, run_id: Uuid) -> sqlx::Result<Vec<TaskSpec>> {
    specs(conn, run_id, |t| !replaceable(t)).await
}

/// Every task of a mission as plan tasks, finished, running and not started.
pub async fn all_specs(conn: &mut PgConnection, run_id: Uuid) -> sqlx::Result<Vec<TaskSpec>> {
    specs(conn, run_id, |_| true).await
}

async fn specs(
    conn: &mut PgConnection,
    run_id: Uuid,
    keep: impl Fn(&TaskRow) -> bool,
) -> sqlx::Result<Vec<TaskSpec>> {
    let rows = tasks::list_for_mission(conn, run_id).await?;
    let edges = tasks::edges_for_mission(conn, run_id).await?;
    let key_of: BTreeMap<Uuid, String> = rows.iter().map(|t| (t.id, t.task_key.clone())).collect();
    Ok(rows
        .iter()
        .filter(|t| keep(t))
        .map(|t| TaskSpec {
            id: t.task_key.clone(),
            title: t.title.clone(),
            task_type: t.task_type.clone(),
            description: t.description.clone(),
            required_skills: t.required_skills.clone(),
            required_tools: t.required_tools.clone(),
            depends_on: edges
                .iter()
                .filter(|(task, _)| *task == t.id)
                .filter_map(|(_, on)| key_of.get(on).cloned())
                .collect(),
            success_criteria: serde_json::from_value::<Vec<Criterion>>(t.success_criteria.clone())
                .unwrap_or_default(),
            estimated_cost: t.estimated_cost,
            optional: t.optional,
            inputs: t.inputs.clone(),
        })
        .collect())
}

/// Kept tasks first, then the new plan's tasks that are not kept already.
pub fn union(kept: &[TaskSpec], plan: PlanSpec) -> PlanSpec {
    let mut tasks = kept.to_vec();
    tasks.extend(
        plan.tasks
            .into_iter()
            .filter(|t| !kept.iter().any(|k| k.id == t.id)),
    );
    PlanSpec { tasks }
}

/// Rejects the plan of a mission waiting for approval and makes a new one:
/// the caller's plan, else the next-best method not used yet, else the LLM
/// planner, else the generic method (once).
pub async fn reject_plan(
    pool: &PgPool,
    cfg: &PlanningConfig,
    who: &Principal,
    id: Uuid,
    req: RejectPlanRequest,
) -> Result<MissionView, ReplanError> {
    check_text("feedback", &req.feedback)?;
    let run = missions::get(pool, who.workspace_id, id)
        .await?
        .ok_or(ReplanError::NotFound(id))?;
    if run.status() != MissionStatus::AwaitingApproval {
        return Err(ReplanError::WrongState(format!(
            "only a plan awaiting approval can be rejected; the mission is {}",
            run.status
        )));
    }
    replace_plan(pool, cfg, who, run, req.plan, &req.feedback, "feedback").await
}

/// Applies new instructions: before approval like a rejection; while
/// executing (or paused), the work not started yet is planned again around
/// what is done or running.
pub async fn instructions(
    pool: &PgPool,
    cfg: &PlanningConfig,
    who: &Principal,
    id: Uuid,
    req: InstructionsRequest,
) -> Result<MissionView, ReplanError> {
    check_text("instructions", &req.instructions)?;
    let run = missions::get(pool, who.workspace_id, id)
        .await?
        .ok_or(ReplanError::NotFound(id))?;
    match run.status() {
        MissionStatus::AwaitingApproval | MissionStatus::Executing | MissionStatus::Paused => {}
        other => {
            return Err(ReplanError::WrongState(format!(
                "a mission that is {other} cannot take new instructions"
            )));
        }
    }
    if run.status() != MissionStatus::AwaitingApproval && req.plan.is_none() && cfg.llm.is_none() {
        return Err(ReplanError::NeedsLlm);
    }
    replace_plan(
        pool,
        cfg,
        who,
        run,
        req.plan,
        &req.instructions,
        "instructions",
    )
    .await
}

/// Replans a running mission around a task the escalation ladder gave up
/// on: the work not started is dropped and the LLM planner asked for a new
/// plan around what is kept, with `feedback` saying why. Runs in the
/// caller's transaction, under the mission lock.
pub(crate) async fn replan_around(
    conn: &mut PgConnection,
    run: &mut MissionRow,
    feedback: &str,
    actor: &str,
) -> Result<(), ReplanError> {
    let kept = kept_specs(conn, run.id).await?.len();
    missions::transition(conn, run, MissionEvent::Replan, actor, Some(feedback))
        .await
        .map_err(transition_error)?;
    let removed = tasks::remove_unstarted(conn, run.id).await?;
    events::append(
        conn,
        run.workspace_id,
        NewEvent::new(
            run.id,
            None,
            None,
            actor,
            &payloads::PlanReplaced {
                feedback: None,
                instructions: None,
                escalation: Some(feedback.to_owned()),
                previous_plan_version: run.plan_version,
                tasks_removed: removed,
                tasks_kept: kept,
            },
        ),
    )
    .await?;
    let no_match = crate::planning::MatchOutcome::from_scores(Vec::new(), Vec::new(), 1.0);
    Ok(request_llm_plan(conn, run, &no_match, Some(feedback), actor).await?)
}

async fn replace_plan(
    pool: &PgPool,
    cfg: &PlanningConfig,
    who: &Principal,
    run: MissionRow,
    explicit: Option<PlanSpec>,
    feedback: &str,
    field: &str,
) -> Result<MissionView, ReplanError> {
    let id = run.id;
    let used = {
        let mut conn = pool.acquire().await?;
        missions::methods_used(&mut conn, id).await?
    };
    apply(pool, cfg, who, id, explicit, feedback, field, &used, None).await
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn apply(
    pool: &PgPool,
    cfg: &PlanningConfig,
    who: &Principal,
    id: Uuid,
    explicit: Option<PlanSpec>,
    feedback: &str,
    field: &str,
    used: &[String],
    extended: Option<Extension<'_>>,
) -> Result<MissionView, ReplanError> {
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let mut run = locked(&mut tx, who, id).await?;
    let kept = kept_specs(&mut tx, id).await?;
    let planned = match explicit {
        Some(plan) => {
            let agents = planner::capabilities(pool, cfg, who.workspace_id).await?;
            let plan = planner::validate(
                cfg,
                &agents,
                run.budget_limit,
                union(&kept, plan),
                "explicit",
            )?;
            Planned::Ready {
                plan,
                provenance: PlanProvenance::explicit(),
                details: Value::Null,
            }
        }
        None if !kept.is_empty() => {
            // Running missions are replanned by the LLM, around the kept tasks.
            Planned::NeedsLlm {
                match_outcome: crate::planning::MatchOutcome::from_scores(
                    Vec::new(),
                    Vec::new(),
                    cfg.match_threshold,
                ),
            }
        }
        None => {
            planner::plan(
                pool,
                cfg,
                PlanInput {
                    workspace_id: who.workspace_id,
                    goal: &run.goal,
                    constraints: &run.constraints,
                    budget: run.budget_limit,
                    autonomy: &run.autonomy,
                    explicit: None,
                    exclude: used,
                    allow_llm: true,
                },
            )
            .await?
        }
    };
    missions::transition(&mut tx, &mut run, MissionEvent::Replan, &actor, None)
        .await
        .map_err(transition_error)?;
    if field == "instructions" {
        // Missions are intentions: new instructions are an explicit trigger
        // every strategy answers; logged with the strategy.
        crate::missions::commitment::consult(
            &mut tx,
            &run,
            coordinator_core::bdi::MissionTrigger::Instructions,
            &actor,
        )
        .await?;
    }
    let removed = tasks::remove_unstarted(&mut tx, id).await?;
    events::append(
        &mut tx,
        run.workspace_id,
        NewEvent::new(
            id,
            None,
            None,
            &actor,
            &payloads::PlanReplaced {
                feedback: (field == "feedback").then(|| feedback.to_owned()),
                instructions: (field == "instructions").then(|| feedback.to_owned()),
                escalation: None,
                previous_plan_version: run.plan_version,
                tasks_removed: removed,
                tasks_kept: kept.len(),
            },
        ),
    )
    .await?;
    if let Some(ext) = &extended {
        let task = who.attempt.map(|a| a.task_id);
        events::append(
            &mut tx,
            run.workspace_id,
            NewEvent::new(id, task, None, &actor, ext.event),
        )
        .await?;
    }
    match planned {
        Planned::Ready {
            plan,
            provenance,
            details,
        } => {
            install_plan(&mut tx, cfg, &mut run, &plan, &provenance, &details, &actor).await?;
            // Pinned before the commit, so no claim can take an added task first.
            if let Some(Extension {
                event,
                pin: Some(agent),
            }) = &extended
            {
                for key in &event.added {
                    tasks::pin_unstarted(&mut tx, id, key, agent).await?;
                }
            }
            plan_ready(&mut tx, &mut run, &actor).await?;
        }
        Planned::NeedsLlm { match_outcome } => {
            request_llm_plan(&mut tx, &run, &match_outcome, Some(feedback), &actor).await?;
        }
    }
    tx.commit().await?;
    Ok(view(pool, who.workspace_id, id).await?)
}

/// Work an agent added to its mission (see [`super::discovered`]): the event
/// to write and the agent every added task is pinned to, if any.
pub(super) struct Extension<'a> {
    /// The `plan.extended` event.
    pub event: &'a PlanExtended,
    /// Pin every added task to this agent (an AGREE pins to the agreeing one).
    pub pin: Option<&'a str>,
}

/// A plan version of a mission (the current one when `version` is `None`).
pub async fn plan_version(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
    version: Option<i32>,
) -> Result<PlanRecord, ReplanError> {
    if missions::get(pool, who.workspace_id, id).await?.is_none() {
        return Err(ReplanError::NotFound(id));
    }
    missions::get_plan(pool, who.workspace_id, id, version)
        .await?
        .ok_or(ReplanError::NoPlanVersion {
            mission: id,
            version,
        })
}

/// `POST /v1/missions/{id}/save-as-routine` body.
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveRoutineRequest {
    /// Name of the routine (default: derived from the goal).
    #[serde(default)]
    pub name: Option<String>,
}

fn routine_name(goal: &str) -> String {
    let words: Vec<String> = goal
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(6)
        .map(str::to_lowercase)
        .collect();
    format!("routine-{}", words.join("-"))
}

/// Turns a completed mission's structure into a routine that matching uses
/// from then on.
pub async fn save_as_routine(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
    req: SaveRoutineRequest,
) -> Result<PlanTemplate, ReplanError> {
    let name = req.name.map(|n| n.trim().to_owned());
    if let Some(n) = &name
        && (n.is_empty()
            || n.len() > 100
            || !n
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | ' ')))
    {
        return Err(Invalid::new(
            "name",
            "name must be 1–100 characters: letters, digits, spaces, '-' or '_'",
        )
        .into());
    }
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let run = locked(&mut tx, who, id).await?;
    if run.status() != MissionStatus::Completed {
        return Err(ReplanError::WrongState(format!(
            "only a completed mission can be saved as a routine; this one is {}",
            run.status
        )));
    }
    let plan = PlanSpec {
        tasks: kept_specs(&mut tx, id).await?,
    };
    let name = name.unwrap_or_else(|| routine_name(&run.goal));
    let routine = routine_from_plan(&name, &run.goal, &plan);
    templates::insert_routine(&mut tx, who.workspace_id, &routine, id)
        .await?
        .ok_or_else(|| ReplanError::RoutineExists(name.clone()))?;
    events::append(
        &mut tx,
        who.workspace_id,
        NewEvent::new(
            id,
            None,
            None,
            &actor,
            &payloads::RoutineSaved {
                name: name.to_string(),
                keywords: routine.keywords.clone(),
                tasks: routine.tasks.len(),
            },
        ),
    )
    .await?;
    tx.commit().await?;
    Ok(routine)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn task(id: &str, deps: &[&str]) -> TaskSpec {
        TaskSpec {
            id: id.into(),
            title: id.into(),
            task_type: "research".into(),
            description: String::new(),
            required_skills: vec![],
            required_tools: vec![],
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
            success_criteria: vec![],
            estimated_cost: 0.0,
            optional: false,
            inputs: json!({}),
        }
    }

    #[test]
    fn union_keeps_done_work_and_adds_only_new_tasks() {
        let kept = vec![task("a", &[]), task("b", &["a"])];
        let plan = PlanSpec {
            tasks: vec![task("b", &[]), task("c", &["b"]), task("d", &["a", "c"])],
        };
        let u = union(&kept, plan);
        let ids: Vec<&str> = u.tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["a", "b", "c", "d"]);
        // The kept version of b wins over the plan's.
        assert_eq!(u.tasks[1].depends_on, ["a"]);
    }

    #[test]
    fn routine_names_come_from_the_goal() {
        assert_eq!(
            routine_name("Research: solid-state batteries, and write a report!"),
            "routine-research-solid-state-batteries-and-write"
        );
    }
}
