//! Discovered work: an agent adds the tasks it found to its own mission, as
//! children of, or successors to, the task it works on. It is a replan
//! without an LLM: the extended plan ([`coordinator_core::planning::discovered`])
//! goes through the same validation (DAG, skills, budget admission) and
//! installation as an explicit plan; finished and running tasks are
//! untouched; `plan_version` goes up; `plan.extended` says who added what
//! and why. In `approve` autonomy the mission then waits for a person to
//! approve the changed plan; in `autonomous` it runs on at once.

use serde::Deserialize;
use sqlx::PgPool;
use uuid::Uuid;

use coordinator_core::invalid::Invalid;
use coordinator_core::planning::discovered::{self, Placement};
use coordinator_protocol::agent_events::PlanExtended;

use super::{
    MissionView, PlanningConfig,
    replan::{Extension, ReplanError, all_specs, apply},
};
use crate::{
    auth::Principal,
    domain::{Autonomy, MissionStatus},
    planning::TaskSpec,
    store::{missions, tasks},
};

/// Longest reason, in characters.
const MAX_REASON_CHARS: usize = 2_000;

/// What an agent adds.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddTasks {
    /// The new tasks, with fresh keys; `depends_on` may name existing tasks and each other.
    pub tasks: Vec<TaskSpec>,
    /// `successor` (default: a new task naming no dependency waits for the current task) or `child` (new tasks run now, and what waits for the current task waits for them too).
    #[serde(default)]
    pub placement: Placement,
    /// Why the work is needed (kept on the event, shown to whoever approves).
    pub reason: String,
}

/// Adds `req.tasks` to mission `mission` around task `anchor` (the caller's
/// own task), pinned to agent `pin` if given (in the same transaction, so no
/// other agent can claim one first). The mission must be executing or paused.
pub async fn add_tasks(
    pool: &PgPool,
    cfg: &PlanningConfig,
    who: &Principal,
    mission: Uuid,
    anchor: Uuid,
    req: AddTasks,
    pin: Option<&str>,
) -> Result<MissionView, ReplanError> {
    if req.reason.trim().is_empty() || req.reason.chars().count() > MAX_REASON_CHARS {
        return Err(Invalid::new(
            "reason",
            format!("reason must be 1–{MAX_REASON_CHARS} characters"),
        )
        .into());
    }
    let run = missions::get(pool, who.workspace_id, mission)
        .await?
        .ok_or(ReplanError::NotFound(mission))?;
    if !matches!(
        run.status(),
        MissionStatus::Executing | MissionStatus::Paused
    ) {
        return Err(ReplanError::WrongState(format!(
            "work can be added to an executing or paused mission; this one is {}",
            run.status
        )));
    }
    let (current, anchor_key) = {
        let mut conn = pool.acquire().await?;
        let anchor_key = tasks::list_for_mission(&mut conn, mission)
            .await?
            .into_iter()
            .find(|t| t.id == anchor)
            .map(|t| t.task_key)
            .ok_or_else(|| {
                Invalid::new("task", format!("mission {mission} has no task {anchor}"))
            })?;
        (all_specs(&mut conn, mission).await?, anchor_key)
    };
    let added: Vec<String> = req.tasks.iter().map(|t| t.id.clone()).collect();
    let plan = discovered::extend(&current, &anchor_key, req.tasks, req.placement)?;
    let event = PlanExtended {
        anchor: anchor_key,
        placement: match req.placement {
            Placement::Successor => "successor",
            Placement::Child => "child",
        }
        .to_owned(),
        added,
        reason: req.reason.trim().to_owned(),
        previous_plan_version: run.plan_version,
        needs_approval: run.autonomy.parse::<Autonomy>().ok() == Some(Autonomy::Approve),
    };
    apply(
        pool,
        cfg,
        who,
        mission,
        Some(plan),
        &event.reason,
        "discovered",
        &[],
        Some(Extension { event: &event, pin }),
    )
    .await
}
