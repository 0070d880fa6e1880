//! Finishing a mission once none of its tasks is open. The engine calls it
//! after every task that ends; the use cases that end tasks by hand (cancel,
//! resolve, resume, governance decisions) call it too.

use sqlx::PgConnection;

use crate::{
    domain::{MissionEvent, MissionStatus, outcome},
    store::{
        agents, attempts,
        missions::{self, MissionRow},
        tasks,
    },
};

/// The reason on the events of the tasks a mission's failure cancels; a
/// person continuing the mission brings back exactly these.
pub const MISSION_FAILED_REASON: &str = "mission failed";

/// Why a mission could not be finished.
#[derive(Debug, thiserror::Error)]
pub enum FinishError {
    /// The database failed.
    #[error(transparent)]
    Db(#[from] sqlx::Error),
    /// The guarded mission write found the row changed (cannot happen under
    /// the mission lock the caller holds).
    #[error("lost a race finishing the mission")]
    Race,
}

/// Moves an executing mission on once none of its tasks is open: a failed
/// required task fails it (cancelling what is left), otherwise it completes
/// (or waits for review in approve mode). Caller holds the mission lock.
/// Returns the live attempts it cancelled: tell their workers after commit.
pub async fn finish_mission_if_done(
    conn: &mut PgConnection,
    run: &mut MissionRow,
    actor: &str,
) -> Result<Vec<attempts::Cancelled>, FinishError> {
    if run.status() != MissionStatus::Executing {
        return Ok(Vec::new());
    }
    let (open, failed) = tasks::open_and_failed(conn, run.id).await?;
    if failed > 0 {
        // Every rung of the escalation ladder was tried: the mission fails
        // and what is left is cancelled.
        tasks::cancel_all_open(conn, run.workspace_id, run.id, actor, MISSION_FAILED_REASON)
            .await?;
        let live = attempts::cancel_live(conn, run.id, None).await?;
        for a in &live {
            agents::release_slot(conn, run.workspace_id, &a.agent_id).await?;
        }
        let reason = outcome::failure_reason(&tasks::failed_required(conn, run.id).await?);
        missions::transition(conn, run, MissionEvent::Fail, actor, Some(&reason))
            .await
            .map_err(|_| FinishError::Race)?;
        return Ok(live);
    } else if open == 0 {
        // A mission that ends with tasks cancelled or skipped says so on
        // its event (and in its status detail), not only "completed".
        let undone = tasks::progress(conn, run.id).await?.left_undone();
        missions::transition(
            conn,
            run,
            MissionEvent::AllTasksDone(run.autonomy()),
            actor,
            undone.as_deref(),
        )
        .await
        .map_err(|_| FinishError::Race)?;
    }
    Ok(Vec::new())
}
