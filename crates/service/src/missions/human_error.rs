//! Why a person's action on a task was refused or failed, shared by the
//! human gates ([`super::human`]) and continuing a failed mission
//! ([`super::continuation`]).

use uuid::Uuid;

use super::{MissionError, StaleMission, replan::MAX_FEEDBACK_CHARS};
use crate::domain::IllegalTransition;
use coordinator_core::invalid::Invalid;

/// Why a person's action on a task (resolve, cancel, reject results,
/// hand to a person) was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum HumanActionError {
    /// A request field is wrong.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The mission has no such task.
    #[error("mission {mission} has no task '{task}'")]
    TaskNotFound {
        /// The mission.
        mission: Uuid,
        /// The task as named (key or id).
        task: String,
    },
    /// The mission or task is not in a state that allows the action.
    #[error("{0}")]
    WrongState(String),
    /// Some named tasks cannot be redone.
    #[error("{}", .0.join("; "))]
    InvalidTasks(Vec<String>),
    /// The task changed between reading and writing it.
    #[error("the task changed meanwhile; reload and try again")]
    TaskChanged,
    /// The mission is no longer at the version the caller read.
    #[error(transparent)]
    VersionConflict(#[from] StaleMission),
    /// A task to reopen changed between reading and writing it.
    #[error("a task changed meanwhile; reload and try again")]
    ReopenRaced,
    /// The task's lifecycle refuses the move.
    #[error(transparent)]
    IllegalTransition(#[from] IllegalTransition),
    /// Reading, locking or moving the mission failed.
    #[error(transparent)]
    Mission(#[from] MissionError),
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// Anything else.
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// Refuses feedback longer than the limit.
pub(super) fn check_feedback(feedback: Option<&str>) -> Result<(), HumanActionError> {
    if feedback.is_some_and(|f| f.chars().count() > MAX_FEEDBACK_CHARS) {
        return Err(Invalid::new(
            "feedback",
            format!("feedback is longer than {MAX_FEEDBACK_CHARS} characters"),
        )
        .into());
    }
    Ok(())
}
