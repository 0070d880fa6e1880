//! The mission row as read from `orchestration_runs`: a type of its own so
//! the store modules that read missions (plan cases, missions) share it
//! without importing each other.

use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::domain::{Autonomy, MissionStatus};

/// A mission row.
#[derive(Debug, Clone)]
pub struct MissionRow {
    /// Id.
    pub id: Uuid,
    /// Workspace.
    pub workspace_id: Uuid,
    /// What the user asked for.
    pub goal: String,
    /// `approve` or `autonomous`.
    pub autonomy: String,
    /// Lifecycle status.
    pub status: String,
    /// Dispatch priority (higher first).
    pub priority: i32,
    /// Current plan version.
    pub plan_version: i32,
    /// Budget, if any.
    pub budget_limit: Option<f64>,
    /// Spent so far.
    pub budget_spent: f64,
    /// User constraints.
    pub constraints: Value,
    /// Which planner made the current plan.
    pub planner: Option<String>,
    /// Why it failed.
    pub failure_reason: Option<String>,
    /// Guard for writes.
    pub version: i64,
    /// Created.
    pub created_at: OffsetDateTime,
    /// Last change.
    pub updated_at: OffsetDateTime,
    /// Started executing.
    pub started_at: Option<OffsetDateTime>,
    /// Reached a terminal status.
    pub finished_at: Option<OffsetDateTime>,
    /// Replans the escalation ladder triggered.
    pub escalation_replans: i32,
    /// The 80 % budget warning fired.
    pub budget_warned: bool,
    /// Short name for people (`None`: the goal is the name).
    pub title: Option<String>,
    /// When it should be done.
    pub deadline: Option<OffsetDateTime>,
    /// Slugs to group missions by.
    pub labels: Vec<String>,
    /// When it was archived (hidden from the list).
    pub archived_at: Option<OffsetDateTime>,
}

impl MissionRow {
    /// The parsed status.
    pub fn status(&self) -> MissionStatus {
        self.status.parse().unwrap_or(MissionStatus::Failed)
    }

    /// The parsed autonomy.
    pub fn autonomy(&self) -> Autonomy {
        self.autonomy.parse().unwrap_or(Autonomy::Approve)
    }
}
