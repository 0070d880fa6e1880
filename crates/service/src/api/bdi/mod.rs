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
        requests::{self, InvalidValue},
        rules::{
            BeliefCategory, BeliefOutcome, CommitmentStrategy, DesireConflict, GoalStatus,
            IntentionStatus,
        },
        runtime::{self, CycleOutcome},
        state::{self, Reconsideration},
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

impl From<InvalidValue> for ApiError {
    /// An unknown enum value is a 422 naming the choices.
    fn from(e: InvalidValue) -> Self {
        ApiError::Unprocessable {
            code: "invalid_value",
            message: e.to_string(),
            details: json!({ "field": e.field, "value": e.source.value, "expected": e.source.expected }),
        }
    }
}

/// Parses an enum value from text; an unknown one is a 422 naming the choices.
fn parse_value<T: FromStr<Err = UnknownValue>>(field: &'static str, s: &str) -> ApiResult<T> {
    Ok(requests::parse_value(field, s)?)
}

/// Writers: the agent itself, or an admin/operator.
fn require_writer(who: &Principal, agent_id: &str) -> Result<(), ApiError> {
    Ok(who.require_self_or(agent_id, &[Role::Admin, Role::Operator])?)
}

mod beliefs;
pub use crate::bdi::requests::{CommitIntention, CreateDesire, CreateGoal, PutBelief};
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

// The BDI use cases' errors as the one JSON error body.
impl From<crate::bdi::state::BdiError> for ApiError {
    fn from(e: crate::bdi::state::BdiError) -> Self {
        use crate::bdi::state::BdiError as E;
        use serde_json::{Value, json};
        let message = e.to_string();
        let unprocessable =
            |code: &'static str, message: String, details: Value| ApiError::Unprocessable {
                code,
                message,
                details,
            };
        match e {
            E::Invalid(e) => e.into(),
            E::OutOfRange { field, value } => unprocessable(
                "invalid_value",
                message,
                json!({ "field": field, "value": value }),
            ),
            E::InvalidDesire(_) => {
                unprocessable("invalid_desire", message, json!({ "field": "serves" }))
            }
            E::UnknownDesire { desire_id, .. } => {
                unprocessable("unknown_desire", message, json!({ "desire_id": desire_id }))
            }
            E::UnknownGoal { field, goal_id, .. } => {
                unprocessable("unknown_goal", message, json!({ field: goal_id }))
            }
            E::InvalidTier { tier, parent_tier } => unprocessable(
                "invalid_tier",
                message,
                json!({ "tier": tier, "parent_tier": parent_tier }),
            ),
            E::UnknownAgent(_) | E::NotFound { .. } => ApiError::NotFound(message),
            E::Stale { id, current, .. } => ApiError::Conflict {
                code: "version_conflict",
                message,
                details: json!({ "id": id, "version": current }),
            },
            E::WrongState { entity, status, .. } => ApiError::Conflict {
                code: "invalid_state",
                message,
                details: json!({ "entity": entity, "status": status }),
            },
            E::InactiveGoal { .. } => ApiError::conflict("invalid_state", message),
            E::UnknownValue(e) => e.into(),
            E::IllegalTransition(e) => e.into(),
            E::Database(e) => e.into(),
            E::Unexpected(e) => ApiError::Unexpected(e),
        }
    }
}

// An agent's planning errors (`plan_generate`, `htn_decompose`).
impl From<crate::bdi::plans::PlanError> for ApiError {
    fn from(e: crate::bdi::plans::PlanError) -> Self {
        use crate::bdi::plans::PlanError as E;
        match e {
            E::Invalid(e) => e.into(),
            E::Planning(e) => e.into(),
            E::Decomposition(e) => ApiError::Unprocessable {
                code: "plan_decomposition_failed",
                message: e.to_string(),
                details: serde_json::json!(e.info()),
            },
        }
    }
}

// Adapting a plan-library case (`plan_adapt`).
impl From<crate::missions::plan_library::AdaptError> for ApiError {
    fn from(e: crate::missions::plan_library::AdaptError) -> Self {
        use crate::missions::plan_library::AdaptError as E;
        let message = e.to_string();
        match e {
            E::Invalid(e) => e.into(),
            E::NotFound(_) => ApiError::NotFound(message),
            E::Unreadable { case_id, .. } => ApiError::Unprocessable {
                code: "case_unreadable",
                message,
                details: serde_json::json!({ "case_id": case_id }),
            },
            E::Planning(e) => e.into(),
            E::Database(e) => e.into(),
        }
    }
}

#[cfg(test)]
mod error_tests {
    use axum::{http::StatusCode, response::IntoResponse};
    use uuid::Uuid;

    use super::ApiError;
    use crate::bdi::state::BdiError;

    async fn status_and_body(e: BdiError) -> (StatusCode, serde_json::Value) {
        let r = ApiError::from(e).into_response();
        let status = r.status();
        let body = axum::body::to_bytes(r.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, serde_json::from_slice(&body).unwrap())
    }

    #[tokio::test]
    async fn bdi_errors_keep_their_status_code_and_details() {
        let (status, body) = status_and_body(BdiError::UnknownGoal {
            field: "parent_goal_id",
            goal_id: Uuid::nil(),
            agent_id: "a".into(),
        })
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        assert_eq!(body["error"]["code"], "unknown_goal");
        assert_eq!(
            body["error"]["details"]["parent_goal_id"],
            Uuid::nil().to_string()
        );
        let (status, body) = status_and_body(BdiError::Stale {
            what: "goal",
            id: Uuid::nil(),
            current: 3,
        })
        .await;
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(body["error"]["code"], "version_conflict");
        assert_eq!(body["error"]["details"]["version"], 3);
    }
}
