//! SQL of BDI state (beliefs, desires, goals, intentions) and of the BDI
//! maintenance job (cycles, belief conflict reports).

use serde::{Deserialize, Serialize};
use sqlx::PgConnection;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

/// A belief as stored and shown.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BeliefView {
    /// Id.
    pub id: Uuid,
    /// Holder.
    pub agent_id: String,
    /// `environment`, `self`, `agent` or `case`.
    pub category: String,
    /// What it is about.
    pub subject: String,
    /// What the agent holds true.
    pub content: String,
    /// Certainty in [0, 1].
    pub certainty: f64,
    /// A revision with equal certainty and different content was flagged.
    pub conflict: bool,
    /// Optimistic version.
    pub version: i64,
    /// Created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Last changed.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// One entry of a belief's revision log.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RevisionView {
    /// Id (increasing).
    pub id: i64,
    /// The belief.
    pub belief_id: Uuid,
    /// `created`, `corroborated`, `revised`, `rejected` or `conflict`.
    pub outcome: String,
    /// Content before.
    pub old_content: Option<String>,
    /// Content offered.
    pub new_content: String,
    /// Certainty before.
    pub old_certainty: Option<f64>,
    /// Certainty offered.
    pub new_certainty: f64,
    /// Why (from the writer).
    pub reason: String,
    /// Who wrote it.
    pub actor: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// A desire as stored and shown.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DesireView {
    /// Id.
    pub id: Uuid,
    /// Holder.
    pub agent_id: String,
    /// What is desired.
    pub description: String,
    /// `terminal` or `instrumental`.
    pub kind: String,
    /// Formula component (weight 0.30).
    pub base_priority: f64,
    /// Formula component (weight 0.25).
    pub importance: f64,
    /// Formula component (weight 0.25).
    pub urgency: f64,
    /// Formula component (weight 0.15).
    pub strategic_alignment: f64,
    /// Formula component (weight 0.05).
    pub dependency_status: f64,
    /// The computed priority.
    pub priority: f64,
    /// 1 = the agent's top active desire (set by the maintenance job).
    pub rank: Option<i32>,
    /// Desires this instrumental one serves.
    pub serves: Vec<Uuid>,
    /// Scarce resources it needs.
    pub resources: Vec<String>,
    /// Strategic direction.
    pub strategy: Option<String>,
    /// Desires its achievement rules out.
    pub incompatible_with: Vec<Uuid>,
    /// `active` or `dropped`.
    pub status: String,
    /// Optimistic version.
    pub version: i64,
    /// Created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// The seed's drop record (§6.4).
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DropRecord {
    /// The dropped desire.
    pub desire_id: Uuid,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub dropped_at: OffsetDateTime,
    /// Why.
    pub reason: String,
    /// Instrumental desires that served a dropped one.
    pub related_desires_affected: Vec<Uuid>,
    /// Desires dropped because of this one.
    pub cascaded_drops: Vec<Uuid>,
    /// For a cascaded drop: the desire whose drop caused it.
    pub cascade_of: Option<Uuid>,
}

/// A goal as stored and shown.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct GoalView {
    /// Id.
    pub id: Uuid,
    /// Holder.
    pub agent_id: String,
    /// What to reach.
    pub description: String,
    /// `strategic`, `tactical` or `operational`.
    pub tier: String,
    /// Parent goal.
    pub parent_goal_id: Option<Uuid>,
    /// The desire it realises.
    pub desire_id: Option<Uuid>,
    /// How to tell it is reached.
    pub success_criteria: String,
    /// Deadline.
    #[serde(with = "time::serde::rfc3339::option")]
    pub deadline: Option<OffsetDateTime>,
    /// `active`, `achieved` or `abandoned`.
    pub status: String,
    /// Optimistic version.
    pub version: i64,
    /// Created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// An intention as stored and shown.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct IntentionView {
    /// Id.
    pub id: Uuid,
    /// Holder.
    pub agent_id: String,
    /// What is intended.
    pub description: String,
    /// The goal pursued.
    pub goal_id: Option<Uuid>,
    /// The desire committed to.
    pub desire_id: Option<Uuid>,
    /// `single-minded`, `open-minded` or `cautious`.
    pub strategy: String,
    /// Priority (the desire's when linked).
    pub priority: f64,
    /// Fraction done, in [0, 1].
    pub progress: f64,
    /// `active`, `suspended`, `dropped` or `achieved`.
    pub status: String,
    /// Stalled past its strategy's threshold (set by the maintenance job).
    pub needs_reconsideration: bool,
    /// Last progress update.
    #[serde(with = "time::serde::rfc3339")]
    pub last_progress_at: OffsetDateTime,
    /// Optimistic version.
    pub version: i64,
    /// Created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// A belief conflict report.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConflictView {
    /// Id.
    pub id: i64,
    /// The agent holding both beliefs.
    pub agent_id: String,
    /// Their common subject.
    pub subject: String,
    /// Belief A.
    pub belief_a: Uuid,
    /// Belief B.
    pub belief_b: Uuid,
    /// A's content.
    pub content_a: String,
    /// B's content.
    pub content_b: String,
    /// A's certainty.
    pub certainty_a: f64,
    /// B's certainty.
    pub certainty_b: f64,
    /// Detected at.
    #[serde(with = "time::serde::rfc3339")]
    pub detected_at: OffsetDateTime,
    /// The cycle that found it.
    pub cycle_id: Option<i64>,
}

/// The audit record of one maintenance cycle.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CycleView {
    /// Id.
    pub id: i64,
    /// Started.
    #[serde(with = "time::serde::rfc3339")]
    pub started_at: OffsetDateTime,
    /// Finished.
    #[serde(with = "time::serde::rfc3339")]
    pub finished_at: OffsetDateTime,
    /// Which replica ran it.
    pub replica: String,
    /// Intentions marked for reconsideration.
    pub intentions_pruned: i32,
    /// Active desires re-prioritised and re-ranked.
    pub desires_resorted: i32,
    /// High-certainty beliefs compared.
    pub beliefs_scanned: i32,
    /// Chunks (of up to 50 subjects) processed.
    pub belief_chunks: i32,
    /// New conflict reports.
    pub conflicts_found: i32,
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
