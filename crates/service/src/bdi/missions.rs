//! Missions are intentions. A mission's commitment strategy is its explicit
//! `commitment_strategy` (set with `PUT /v1/missions/{id}/commitment`) or,
//! when unset, derived from its autonomy ([`CommitmentStrategy::for_mission`]:
//! approve → cautious, autonomous → open-minded).
//!
//! The coordinator never replans on ordinary ticks; each explicit trigger
//! (a task failed after every escalation, new instructions, the budget
//! warning) calls [`consult`], which asks [`rules::mission_reconsiders`] and
//! writes a `mission.reconsidered` event with the strategy and the verdict,
//! in the trigger's transaction.

use sqlx::PgConnection;
use uuid::Uuid;

use super::{
    rules::{self, CommitmentStrategy, MissionTrigger, Verdict},
    state::BdiError,
};
use crate::{
    domain::Autonomy,
    store::{bdi as store, events, missions::MissionRow},
};

/// A mission's effective strategy, and whether it was set explicitly.
pub async fn strategy_of(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    mission_id: Uuid,
) -> Result<Option<(CommitmentStrategy, bool)>, BdiError> {
    let Some((autonomy, explicit)) =
        store::mission_commitment(conn, workspace_id, mission_id).await?
    else {
        return Ok(None);
    };
    let autonomy: Autonomy = autonomy.parse()?;
    let explicit: Option<CommitmentStrategy> = explicit.map(|s| s.parse()).transpose()?;
    Ok(Some((
        CommitmentStrategy::for_mission(autonomy, explicit),
        explicit.is_some(),
    )))
}

/// Consults the mission's strategy on an explicit replanning trigger and
/// records the verdict (`keep` or `drop` the current plan) as a
/// `mission.reconsidered` event. Returns whether to replan.
pub async fn consult(
    conn: &mut PgConnection,
    run: &MissionRow,
    trigger: MissionTrigger,
    actor: &str,
) -> sqlx::Result<bool> {
    let explicit = store::mission_commitment(&mut *conn, run.workspace_id, run.id)
        .await?
        .and_then(|(_, s)| s)
        .and_then(|s| s.parse::<CommitmentStrategy>().ok());
    let strategy = CommitmentStrategy::for_mission(run.autonomy(), explicit);
    let replan = rules::mission_reconsiders(strategy, trigger);
    // "drop" the current plan (replan) or "keep" it.
    let verdict = if replan { Verdict::Drop } else { Verdict::Keep };
    events::record(
        conn,
        run.workspace_id,
        events::WorkspaceEvent::new(
            Some(run.id),
            None,
            actor,
            &events::payloads::MissionReconsidered {
                trigger,
                strategy,
                explicit: explicit.is_some(),
                verdict,
                replan,
            },
        ),
    )
    .await?;
    Ok(replan)
}
