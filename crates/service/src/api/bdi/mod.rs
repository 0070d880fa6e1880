//! BDI state per agent under `/v1/agents/{agent_id}/…` (beliefs, desires,
//! goals, intentions), the BDI maintenance job under `/v1/bdi/…`, and a
//! mission's commitment strategy (`/v1/missions/{id}/commitment`).
//!
//! Enum-valued fields are taken as text and parsed here so that an unknown
//! value (a strategy `reckless`) is a 422 `invalid_value`, like a number
//! outside [0, 1] (a certainty 1.4).

use std::str::FromStr;
use utoipa_axum::{router::OpenApiRouter, routes};

use axum::{extract::State, http::StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::json;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

use super::{
    AppState, doc,
    extract::{Json, Path, Query},
};
use crate::{
    auth::{Principal, Role},
    bdi::{
        missions as bdi_missions,
        rules::{
            BeliefCategory, BeliefOutcome, CommitmentStrategy, DesireConflict, DesireKind,
            GoalStatus, GoalTier, IntentionStatus, PriorityInputs,
        },
        runtime::{self, CycleOutcome},
        state::{self, BeliefWrite, DesireCreate, GoalCreate, IntentionCreate, Reconsideration},
    },
    domain::UnknownValue,
    error::{ApiError, ApiResult},
    store::bdi::{
        self as store, BeliefView, ConflictView, CycleView, DesireView, DropRecord, GoalView,
        IntentionView, RevisionView,
    },
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_beliefs, put_belief))
        .routes(routes!(belief_revisions))
        .routes(routes!(list_desires, create_desire))
        .routes(routes!(show_desire))
        .routes(routes!(drop_desire))
        .routes(routes!(list_goals, create_goal))
        .routes(routes!(goal_status))
        .routes(routes!(list_intentions, commit_intention))
        .routes(routes!(intention_status))
        .routes(routes!(intention_progress))
        .routes(routes!(reconsider))
        .routes(routes!(maintenance_status, run_maintenance))
        .routes(routes!(conflicts))
        .routes(routes!(show_commitment, put_commitment))
}

/// Parses an enum value from text; an unknown one is a 422 naming the choices.
fn parse_value<T: FromStr<Err = UnknownValue>>(field: &str, s: &str) -> Result<T, ApiError> {
    s.parse()
        .map_err(|e: UnknownValue| ApiError::Unprocessable {
            code: "invalid_value",
            message: format!("{field}: {e}"),
            details: json!({ "field": field, "value": s, "expected": e.expected }),
        })
}

/// Writers: the agent itself, or an admin/operator.
fn require_writer(who: &Principal, agent_id: &str) -> Result<(), ApiError> {
    who.require_self_or(agent_id, &[Role::Admin, Role::Operator])
}

mod beliefs;
pub use beliefs::*;
mod desires;
pub use desires::*;
mod goals;
pub use goals::*;
mod intentions;
pub use intentions::*;
mod maintenance;
pub use maintenance::*;
mod missions;
pub use missions::*;
