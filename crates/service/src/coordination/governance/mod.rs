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
        events::{self, EventKind, WorkspaceEvent},
        governance::{self as store, DecisionRow, NewDecision, ProfileRow},
        missions::{self, MissionRow},
        tasks::{self, Change, TaskRow},
    },
};

pub use coordinator_core::governance::*;

mod profile;
pub use profile::*;
mod checks;
pub use checks::*;
mod decisions;
pub use decisions::*;
mod gate;
pub use gate::*;
