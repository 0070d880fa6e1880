//! BDI state per agent under `/v1/agents/{agent_id}/…` (beliefs, desires,
//! goals, intentions), the BDI maintenance job under `/v1/bdi/…`, and a
//! mission's commitment strategy (`/v1/missions/{id}/commitment`).
//!
//! Enum-valued fields are taken as text and parsed here so that an unknown
//! value (a strategy `reckless`) is a 422 `invalid_value`, like a number
//! outside [0, 1] (a certainty 1.4).

use std::str::FromStr;

use axum::{
    Router,
    extract::State,
    http::StatusCode,
    routing::{get, post},
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

use super::{
    AppState,
    extract::{Json, Path, Query},
    openapi as doc,
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
pub fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/v1/agents/{agent_id}/beliefs",
            get(list_beliefs).put(put_belief),
        )
        .route(
            "/v1/agents/{agent_id}/beliefs/{belief_id}/revisions",
            get(belief_revisions),
        )
        .route(
            "/v1/agents/{agent_id}/desires",
            get(list_desires).post(create_desire),
        )
        .route(
            "/v1/agents/{agent_id}/desires/{desire_id}",
            get(show_desire),
        )
        .route(
            "/v1/agents/{agent_id}/desires/{desire_id}/drop",
            post(drop_desire),
        )
        .route(
            "/v1/agents/{agent_id}/goals",
            get(list_goals).post(create_goal),
        )
        .route(
            "/v1/agents/{agent_id}/goals/{goal_id}/status",
            post(goal_status),
        )
        .route(
            "/v1/agents/{agent_id}/intentions",
            get(list_intentions).post(commit_intention),
        )
        .route(
            "/v1/agents/{agent_id}/intentions/{intention_id}/status",
            post(intention_status),
        )
        .route(
            "/v1/agents/{agent_id}/intentions/{intention_id}/progress",
            post(intention_progress),
        )
        .route(
            "/v1/agents/{agent_id}/intentions/{intention_id}/reconsider",
            post(reconsider),
        )
        .route(
            "/v1/bdi/maintenance",
            get(maintenance_status).post(run_maintenance),
        )
        .route("/v1/bdi/conflicts", get(conflicts))
        .route(
            "/v1/missions/{id}/commitment",
            get(show_commitment).put(put_commitment),
        )
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
