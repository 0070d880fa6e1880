//! `plan_execute_step` (seed §8.5): an agent reports a step of the plan of
//! one of its intentions. The intention is the plan (the service keeps no
//! separate plan rows), so an executing or completed step is progress on it
//! ([`super::state::record_progress`], which restarts its stall clock), and a
//! failed or pending one is recorded without being progress. The step itself
//! is a `plan.step_recorded` event for the learning phase.

use coordinator_protocol::agent_events::PlanStepRecorded;
use sqlx::PgConnection;
use uuid::Uuid;

use coordinator_core::{invalid::Invalid, text::Text};

use super::{
    rules::{self, IntentionStatus, plans::StepStatus},
    state::{BdiError, lock_intention, out_of_range, record_progress},
};
use crate::store::{
    bdi::IntentionView,
    events::{self, WorkspaceEvent},
};

/// Most artifacts one step report lists.
pub const MAX_ARTIFACTS: usize = 50;

/// A step report.
#[derive(Debug, Clone)]
pub struct StepReport {
    /// The intention whose plan it belongs to.
    pub intention_id: Uuid,
    /// The step, in the agent's naming (1–200 characters).
    pub step_id: String,
    /// Its state now.
    pub status: StepStatus,
    /// The intention's progress after this step, in [0, 1] (default: unchanged).
    pub progress: Option<f64>,
    /// How long it took (at most 100 characters).
    pub actual_duration: Option<String>,
    /// What happened (at most 4000 characters).
    pub outcome: Option<String>,
    /// What it produced (at most 50, each 1–500 characters).
    pub artifacts_produced: Vec<String>,
    /// Observations (at most 4000 characters).
    pub notes: Option<String>,
}

/// A step's id, in the agent's naming.
pub const STEP_ID: Text = Text::required(200);
/// How long a step took.
pub const DURATION: Text = Text::required(100);
/// One artifact a step produced.
pub const ARTIFACT: Text = Text::required(500);
/// A step's outcome, or notes on it.
pub const OUTCOME: Text = Text::required(4000);

fn check_optional(field: &str, v: &Option<String>, rule: Text) -> Result<(), Invalid> {
    v.as_deref().map_or(Ok(()), |v| rule.check(field, v))
}

/// Records a step of one of the agent's active intentions (409 for one that
/// is not active, 404 for one it does not have).
pub async fn record_step(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    step: StepReport,
    actor: &str,
) -> Result<IntentionView, BdiError> {
    STEP_ID.check("step_id", &step.step_id)?;
    check_optional("actual_duration", &step.actual_duration, DURATION)?;
    check_optional("outcome", &step.outcome, OUTCOME)?;
    check_optional("notes", &step.notes, OUTCOME)?;
    if step.artifacts_produced.len() > MAX_ARTIFACTS {
        return Err(Invalid::new(
            "artifacts_produced",
            format!("at most {MAX_ARTIFACTS} artifacts"),
        )
        .into());
    }
    ARTIFACT.check_each("artifacts_produced", &step.artifacts_produced)?;
    if let Some(p) = step.progress
        && !rules::unit_interval(p)
    {
        return Err(out_of_range("progress", p));
    }
    if step.progress.is_some() && !step.status.is_progress() {
        return Err(Invalid::new(
            "progress",
            format!(
                "a {} step is not progress: report progress with an executing or completed step",
                step.status
            ),
        )
        .into());
    }
    let id = step.intention_id;
    let it = lock_intention(&mut *conn, workspace_id, agent_id, id).await?;
    if it.status != IntentionStatus::Active.as_str() {
        return Err(BdiError::WrongState {
            entity: "intention",
            status: it.status.clone(),
            message: format!(
                "intention {id} is {}; only an active one executes steps",
                it.status
            ),
        });
    }
    let it = if step.status.is_progress() {
        let progress = step.progress.unwrap_or(it.progress);
        record_progress(
            &mut *conn,
            workspace_id,
            agent_id,
            id,
            progress,
            None,
            actor,
        )
        .await?
    } else {
        it
    };
    let payload = PlanStepRecorded {
        agent_id: agent_id.to_owned(),
        intention_id: id,
        step_id: step.step_id,
        status: step.status.as_str().to_owned(),
        progress: it.progress,
        actual_duration: step.actual_duration,
        outcome: step.outcome,
        artifacts_produced: step.artifacts_produced,
        notes: step.notes,
    };
    events::record(
        &mut *conn,
        workspace_id,
        WorkspaceEvent::new(None, None, actor, &payload),
    )
    .await?;
    Ok(it)
}
