//! The human workforce: contractors (people, not the mission-scoped
//! contractor *agents* of the registry), their trust, and work packages
//! delegated to them — with the package lifecycle, auto-matching and the
//! trust formula as pure functions, and the use cases that apply them.
//!
//! Package lifecycle: `draft → open → assigned → in_progress → review →
//! completed`, with `review → in_progress` for rework, and any status that is
//! not terminal → `cancelled`. Entering `open` computes the candidates
//! (proposed, not assigned); `assigned` takes a named contractor or the best
//! candidate. Entering `completed` needs a quality rating and updates the
//! contractor's trust. A package delegating a mission task completes that
//! task with its deliverable; cancelling it returns the task to the queue.
//!
//! Who may: admins, operators and agents (seed §20.3 gives agents the
//! workforce tools) manage contractors and packages; stakeholders may only
//! review a package in `review` (rework, complete or cancel it). The checks
//! live here so a REST route and its tool refuse alike.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::{
    auth::{Principal, Role},
    domain::{UnknownValue, text_enum},
    missions::human::{self, HumanAction, HumanActionError, Settlement},
    store::{
        attempts::Cancelled,
        events::{self, WorkspaceEvent, payloads},
        missions::{self as mission_store, MissionRow},
        tasks::TaskRow,
        workforce::{
            self as store, ContractorFilter, ContractorView, NewContractor, NewPackage,
            PackageChange, PackageFilter, PackageView, TrustChange,
        },
    },
};

pub use coordinator_core::workforce::*;
use coordinator_core::{invalid::Invalid, text::Text};

/// Why a workforce use case (contractors, work packages, delegation) refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum WorkforceError {
    /// A request field is wrong.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The caller's role may not do this.
    #[error("{0}")]
    Forbidden(#[from] crate::auth::Forbidden),
    /// A stored status is not one this build knows.
    #[error(transparent)]
    UnknownValue(#[from] UnknownValue),
    /// No such contractor in the workspace.
    #[error("no contractor {0}")]
    ContractorNotFound(Uuid),
    /// No such work package in the workspace.
    #[error("no work package {0}")]
    PackageNotFound(Uuid),
    /// No such mission in the workspace.
    #[error("no mission {0}")]
    MissionNotFound(Uuid),
    /// The contractor or package changed since the version the caller read.
    #[error("{entity} {id} changed since version {given} (now {now}); reload and try again")]
    VersionConflict {
        /// `contractor` or `work package`.
        entity: &'static str,
        /// Its id.
        id: Uuid,
        /// The version the caller named.
        given: i64,
        /// The version there is now.
        now: i64,
    },
    /// Another writer got there first while this request ran.
    #[error("the work package changed while this request ran; retry")]
    LostRace,
    /// The task already has a live work package.
    #[error("the task already has a work package that is not completed or cancelled")]
    AlreadyDelegated {
        /// The task.
        task_id: Option<Uuid>,
    },
    /// The delegated task's mission is finished.
    #[error("the mission is {0}; its tasks cannot change")]
    MissionFinished(String),
    /// The task is in a status that cannot be delegated.
    #[error(
        "task '{key}' is {status}; only a queued, retry_wait or awaiting_human task can be delegated"
    )]
    NotDelegable {
        /// The task's key.
        key: String,
        /// Its status.
        status: String,
    },
    /// A completed package was completed again with another rating.
    #[error("work package {id} was completed with rating '{}' already", .rating.as_deref().unwrap_or(""))]
    AlreadyCompleted {
        /// The package.
        id: Uuid,
        /// Its rating.
        rating: Option<String>,
    },
    /// A terminal package takes no more progress.
    #[error("work package {id} is {status}; it no longer changes")]
    PackageFinished {
        /// The package.
        id: Uuid,
        /// Its status.
        status: PackageStatus,
    },
    /// The named contractor does not exist.
    #[error("no contractor {0}")]
    UnknownContractor(Uuid),
    /// The named contractor is not taking work.
    #[error("contractor {0} is unavailable")]
    ContractorUnavailable(Uuid),
    /// No contractor matches the package's skills.
    #[error("no contractor matches this package; name one in contractor_id")]
    NoCandidate {
        /// The package's skills.
        required_skills: Vec<String>,
    },
    /// The package lifecycle refuses the move.
    #[error(transparent)]
    IllegalTransition(#[from] IllegalPackageTransition),
    /// Handing the delegated task to a person, or settling it, failed.
    #[error(transparent)]
    Human(#[from] Box<HumanActionError>),
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// Anything else.
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

impl From<HumanActionError> for WorkforceError {
    fn from(e: HumanActionError) -> Self {
        WorkforceError::Human(Box::new(e))
    }
}

/// Who manages contractors and work packages.
pub(crate) const MANAGERS: &[Role] = &[Role::Admin, Role::Operator, Role::Agent];

/// The caller must manage the workforce.
fn require_manager(who: &Principal) -> Result<(), WorkforceError> {
    Ok(who.require(MANAGERS)?)
}

/// A contractor's name.
pub const CONTRACTOR_NAME: Text = Text::required(200);
/// How to reach a contractor.
pub const CONTACT: Text = Text::optional(500);
/// Why a contractor's trust changes.
pub const TRUST_REASON: Text = Text::required(2000);
/// A work package's title.
pub const TITLE: Text = Text::required(200);
/// A work package's description.
pub const DESCRIPTION: Text = Text::optional(10_000);
/// A progress note.
pub const NOTE: Text = Text::required(4000);
/// Why a work package moves.
pub const REASON: Text = Text::optional(2000);
/// One skill name.
pub const SKILL: Text = Text::required(coordinator_core::workforce::MAX_SKILL_CHARS);
/// How many skills a contractor or package may name.
pub const MAX_SKILLS: usize = coordinator_core::workforce::MAX_SKILLS;

fn check_money(field: &str, value: Option<f64>) -> Result<(), Invalid> {
    if value.is_some_and(|v| !v.is_finite() || v < 0.0) {
        return Err(Invalid::new(
            field,
            format!("{field} must be a non-negative number"),
        ));
    }
    Ok(())
}

fn check_json_size(field: &str, value: &Value) -> Result<(), Invalid> {
    if serde_json::to_vec(value).map_or(0, |v| v.len()) > 64 * 1024 {
        return Err(Invalid::new(
            field,
            format!("{field} must be at most 64 KiB"),
        ));
    }
    Ok(())
}

fn version_conflict(entity: &'static str, id: Uuid, given: i64, now: i64) -> WorkforceError {
    WorkforceError::VersionConflict {
        entity,
        id,
        given,
        now,
    }
}

fn lost_race() -> WorkforceError {
    WorkforceError::LostRace
}

mod contractors;
pub use contractors::*;
mod packages;
pub use packages::*;
