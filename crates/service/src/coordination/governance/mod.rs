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
    domain::{TaskEvent, TaskStatus},
    error::ApiError,
    store::{
        events::{self, WorkspaceEvent, kind as core_kind},
        governance::{self as store, DecisionRow, NewDecision, ProfileRow},
        missions::{self, MissionRow},
        tasks::{self, Change, TaskRow},
    },
};

pub use coordinator_core::governance::*;

/// Event kinds written by governance.
pub mod kind {
    /// The stakeholder profile was created or changed.
    pub const PROFILE_UPDATED: &str = "governance.profile_updated";
    /// A decision entered the queue.
    pub const DECISION_REQUESTED: &str = "decision.requested";
    /// A stakeholder (or a re-check) resolved a decision.
    pub const DECISION_RESOLVED: &str = "decision.resolved";
    /// A deferred decision was checked again and is pending once more.
    pub const DECISION_RECHECKED: &str = "decision.rechecked";
    /// A task waits for a governance decision before dispatch.
    pub const TASK_AWAITING_APPROVAL: &str = "task.awaiting_approval";
    /// A governance decision let a task go (approved or modified).
    pub const TASK_APPROVED: &str = "task.approved";
    /// A rejected task asks for the remaining work to be planned around it.
    pub const REPLAN_TRIGGERED: &str = "mission.replan_triggered";
}

mod profile;
pub use profile::*;
mod checks;
pub use checks::*;
mod decisions;
pub use decisions::*;
mod gate;
pub use gate::*;
