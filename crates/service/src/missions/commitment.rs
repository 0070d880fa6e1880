//! Missions are intentions: each explicit replanning trigger (a task failed
//! after every escalation, new instructions, the budget warning) calls
//! [`consult`], which asks the mission's commitment strategy
//! ([`coordinator_core::bdi::mission_reconsiders`]) and writes a
//! `mission.reconsidered` event with the strategy and the verdict, in the
//! trigger's transaction. The strategy itself is set and shown by the BDI
//! routes (`crate::bdi::missions`).

use sqlx::PgConnection;

use coordinator_core::bdi::{self as rules, CommitmentStrategy, MissionTrigger, Verdict};

use crate::store::{bdi as store, events, missions::MissionRow};

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
