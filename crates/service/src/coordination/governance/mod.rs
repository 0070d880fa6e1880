//! Governance use cases: the workspace's profile, checks of an action
//! against it, decisions and their resolution, and the dispatcher's gate.
//! The rules (styles, risk modifiers, thresholds, the check and the decision
//! lifecycle) are pure and live in the core (`coordinator_core::governance`,
//! re-exported here).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

use super::messages::{self, Category, Outgoing, Performative, Recipient};
use crate::{
    auth::{Principal, Role},
    domain::{IllegalTransition, TaskEvent, TaskStatus, UnknownValue},
    store::{
        events::{self, EventPayload, WorkspaceEvent, payloads},
        governance::{self as store, DecisionRow, NewDecision, ProfileRow},
        missions::{self, MissionRow},
        tasks::{self, Change, TaskRow},
    },
};

pub use coordinator_core::governance::*;
use coordinator_core::invalid::Invalid;

/// Why a governance use case (profile, check, decision) refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum GovernanceError {
    /// A request field is wrong.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// A status filter names no status.
    #[error(transparent)]
    UnknownValue(#[from] UnknownValue),
    /// The caller's role may not do this.
    #[error("{0}")]
    Forbidden(#[from] crate::auth::Forbidden),
    /// The workspace has no stakeholder profile.
    #[error("no stakeholder profile is set")]
    NoProfile,
    /// No such decision in the workspace.
    #[error("no decision {0}")]
    DecisionNotFound(Uuid),
    /// The profile or decision changed since the version the caller read.
    #[error("the {what} changed meanwhile; reload it and try again")]
    VersionConflict {
        /// `profile` or `decision`.
        what: &'static str,
        /// The version there is now.
        current: Option<i64>,
    },
    /// A client-chosen decision id was used for a different request.
    #[error("decision {0} was already requested with different content")]
    DecisionIdReused(Uuid),
    /// The decision was inserted by someone else meanwhile.
    #[error("the decision already exists")]
    DecisionExists,
    /// The requesting agent is not registered.
    #[error("no agent '{0}' is registered")]
    UnknownAgent(String),
    /// The linked mission does not exist.
    #[error("mission_id names no mission {0}")]
    UnknownMission(Uuid),
    /// A final decision cannot take another outcome.
    #[error("decision {id} is already {status}; it cannot become {requested}")]
    AlreadyResolved {
        /// The decision.
        id: Uuid,
        /// Its status.
        status: String,
        /// The outcome asked for.
        requested: Outcome,
        /// The lifecycle's refusal.
        transition: IllegalTransition,
    },
    /// The gated task moved while the decision was applied.
    #[error("the task changed meanwhile; try again")]
    TaskChanged,
    /// A blocker is raised from a running task only.
    #[error("task '{key}' is {status}; a blocker is raised from the running task of your attempt")]
    NotRunning {
        /// The task's key.
        key: String,
        /// Its status.
        status: String,
    },
    /// The caller's attempt is no longer live.
    #[error("attempt {attempt_id} is no longer live; it cannot raise a blocker")]
    StaleAttempt {
        /// The attempt.
        attempt_id: Uuid,
    },
    /// Moving the blocked task back to the queue failed.
    #[error(transparent)]
    TaskMove(#[from] Box<crate::missions::human::HumanActionError>),
    /// A lifecycle refused a move.
    #[error(transparent)]
    IllegalTransition(#[from] IllegalTransition),
    /// Replanning around a rejected task failed.
    #[error(transparent)]
    Replan(#[from] Box<crate::missions::replan::ReplanError>),
    /// Telling the requester (a message) failed.
    #[error(transparent)]
    Message(#[from] crate::coordination::messages::MessageError),
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// Anything else.
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

impl GovernanceError {
    /// The caller must hold one of `roles`.
    pub(crate) fn require(who: &Principal, roles: &[Role]) -> Result<(), GovernanceError> {
        who.require(roles).map_err(GovernanceError::from)
    }
}

pub mod profile;
pub use profile::*;
mod checks;
pub use checks::*;
pub mod decisions;
pub use decisions::*;
mod gate;
pub use gate::*;
mod blockers;
pub use blockers::*;
