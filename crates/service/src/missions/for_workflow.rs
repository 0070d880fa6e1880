//! Missions that do one task of a running workflow: created inside the
//! workflow instance's own transaction (so a task is handed out exactly
//! once, or not at all if the transaction rolls back), autonomous, with an
//! explicit one-task plan validated as any plan is.

use serde_json::Value;
use uuid::Uuid;

use super::{MissionError, PlanningConfig, install_plan, plan_ready, planner};
use crate::{
    domain::Autonomy,
    planning::{AgentCapability, PlanProvenance, PlanSpec},
    store::missions::{self, NewMission},
};

/// What the mission is made of.
#[derive(Debug)]
pub struct WorkflowTask<'a> {
    /// The mission's workspace.
    pub workspace_id: Uuid,
    /// The token the mission is created in the name of.
    pub created_by: Uuid,
    /// Who creates it, for the events (`workflow:<instance>`).
    pub actor: &'a str,
    /// The mission's goal (the task's name and its workflow).
    pub goal: &'a str,
    /// The one-task plan.
    pub plan: PlanSpec,
    /// The mission's constraints (where it comes from).
    pub constraints: &'a Value,
}

/// Creates and starts the mission inside `tx`; returns its id.
pub async fn create_in(
    tx: &mut sqlx::PgConnection,
    cfg: &PlanningConfig,
    agents: &[AgentCapability],
    task: WorkflowTask<'_>,
) -> Result<Uuid, MissionError> {
    // A workflow hands out one task at a time: the plan-size floor that
    // keeps planners from under-planning a goal does not apply.
    let mut one_task = cfg.clone();
    one_task.rules.min_tasks = 1;
    let (plan, _) =
        planner::validate_for_budget(&one_task, agents, None, task.plan, "workflow", false)?;
    let mut provenance = PlanProvenance::explicit();
    provenance.reason = "one task of a running workflow".into();
    let id = Uuid::now_v7();
    missions::insert(
        tx,
        NewMission {
            id,
            workspace_id: task.workspace_id,
            goal: task.goal,
            autonomy: Autonomy::Autonomous,
            priority: 0,
            budget_limit: None,
            constraints: task.constraints,
            created_by: task.created_by,
        },
        task.actor,
    )
    .await?;
    let mut run = missions::lock(tx, task.workspace_id, id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("mission vanished inside its own transaction"))?;
    install_plan(
        tx,
        cfg,
        &mut run,
        &plan,
        &provenance,
        &Value::Null,
        task.actor,
    )
    .await?;
    plan_ready(tx, &mut run, task.actor).await?;
    Ok(id)
}

/// Cancels a workflow task's mission inside the instance's transaction,
/// when the workflow no longer waits for it (an interrupting boundary, a
/// terminate end, the instance cancelled): its open task is cancelled, its
/// live attempt ended (a later report is refused as stale) and the agent's
/// slot given back. A mission that has already ended is left as it is.
pub async fn cancel_in(
    tx: &mut sqlx::PgConnection,
    workspace_id: Uuid,
    mission_id: Uuid,
    actor: &str,
) -> Result<(), MissionError> {
    use crate::{
        domain::MissionEvent,
        store::{agents, attempts, tasks},
    };
    let Some(mut run) = missions::lock(tx, workspace_id, mission_id).await? else {
        return Ok(());
    };
    if missions::transition(tx, &mut run, MissionEvent::Cancel, actor, None)
        .await
        .is_err()
    {
        // Already completed, failed or cancelled: nothing to stop.
        return Ok(());
    }
    tasks::cancel_all_open(
        tx,
        workspace_id,
        mission_id,
        actor,
        "the workflow withdrew the task",
    )
    .await?;
    for a in attempts::cancel_live(tx, mission_id, None).await? {
        agents::release_slot(tx, workspace_id, &a.agent_id).await?;
    }
    Ok(())
}
