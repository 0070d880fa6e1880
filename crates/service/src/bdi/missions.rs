//! Missions are intentions. A mission's commitment strategy is its explicit
//! `commitment_strategy` (set with `PUT /v1/missions/{id}/commitment`) or,
//! when unset, derived from its autonomy ([`CommitmentStrategy::for_mission`]:
//! approve → cautious, autonomous → open-minded).
//!
//! The coordinator never replans on ordinary ticks; each explicit trigger
//! consults the strategy ([`crate::missions::commitment::consult`]).

use sqlx::PgConnection;
use uuid::Uuid;

use super::{rules::CommitmentStrategy, state::BdiError};
use crate::{domain::Autonomy, store::bdi as store};

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
