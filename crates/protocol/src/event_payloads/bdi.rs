//! Payloads of the BDI events: agents' beliefs, desires, goals and
//! intentions (workspace events), and missions as intentions (mission
//! events).

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use coordinator_core::bdi::{
    BeliefOutcome, CommitmentStrategy, DesireConflict, DesireKind, GoalStatus, GoalTier,
    IntentionStatus, MissionTrigger, Verdict,
};

payload_kind! {
    BdiBeliefRevised => BdiBeliefRevised,
    BdiBeliefConflict => BdiBeliefConflict,
    BdiDesireCreated => BdiDesireCreated,
    BdiDesireDropped => BdiDesireDropped,
    BdiGoalCreated => BdiGoalCreated,
    BdiGoalUpdated => BdiGoalUpdated,
    BdiIntentionCommitted => BdiIntentionCommitted,
    BdiIntentionUpdated => BdiIntentionUpdated,
    BdiIntentionReconsidered => BdiIntentionReconsidered,
    BdiIntentionStale => BdiIntentionStale,
    MissionReconsidered => MissionReconsidered,
    MissionCommitmentSet => MissionCommitmentSet,
}

/// `bdi.belief.revised`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BdiBeliefRevised {
    /// The agent.
    pub agent_id: String,
    /// The belief.
    pub belief_id: Uuid,
    /// Its category.
    pub category: String,
    /// Its subject.
    pub subject: String,
    /// What the revision rule did.
    pub outcome: BeliefOutcome,
    /// Its certainty after.
    pub certainty: f64,
    /// Whether it is in conflict after.
    pub conflict: bool,
}

/// Two beliefs found in conflict.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BeliefPair {
    /// One belief.
    pub belief_a: Uuid,
    /// The other.
    pub belief_b: Uuid,
}

/// `bdi.belief.conflict`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BdiBeliefConflict {
    /// The agent.
    pub agent_id: String,
    /// The subject the beliefs share.
    pub subject: String,
    /// The conflicting pairs found.
    pub pairs: Vec<BeliefPair>,
}

/// `bdi.desire.created`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BdiDesireCreated {
    /// The agent.
    pub agent_id: String,
    /// The desire.
    pub desire_id: Uuid,
    /// `terminal` or `instrumental`.
    pub kind: DesireKind,
    /// Its priority.
    pub priority: f64,
    /// Its conflicts with the agent's active desires.
    pub conflicts: Vec<DesireConflict>,
}

/// `bdi.desire.dropped`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BdiDesireDropped {
    /// The agent.
    pub agent_id: String,
    /// The desire dropped directly.
    pub desire_id: Uuid,
    /// Why.
    pub reason: String,
    /// Desires it served, affected by the drop.
    pub related_desires_affected: Vec<Uuid>,
    /// Desires dropped with it (the cascade).
    pub cascaded_drops: Vec<Uuid>,
}

/// `bdi.goal.created`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BdiGoalCreated {
    /// The agent.
    pub agent_id: String,
    /// The goal.
    pub goal_id: Uuid,
    /// Its tier.
    pub tier: GoalTier,
    /// Its parent goal, if any.
    pub parent_goal_id: Option<Uuid>,
}

/// `bdi.goal.updated`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BdiGoalUpdated {
    /// The agent.
    pub agent_id: String,
    /// The goal.
    pub goal_id: Uuid,
    /// The status before.
    pub from: GoalStatus,
    /// The status after.
    pub to: GoalStatus,
}

/// `bdi.intention.committed`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BdiIntentionCommitted {
    /// The agent.
    pub agent_id: String,
    /// The intention.
    pub intention_id: Uuid,
    /// Its commitment strategy.
    pub strategy: CommitmentStrategy,
    /// Its priority.
    pub priority: f64,
}

/// `bdi.intention.updated`: a status change (`from`, `to`) or progress
/// (`progress`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BdiIntentionUpdated {
    /// The agent.
    pub agent_id: String,
    /// The intention.
    pub intention_id: Uuid,
    /// The status before (on a status change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<IntentionStatus>,
    /// The status after (on a status change).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<IntentionStatus>,
    /// The progress recorded, in [0, 1].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<f64>,
}

/// `bdi.intention.reconsidered`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BdiIntentionReconsidered {
    /// The agent.
    pub agent_id: String,
    /// The intention.
    pub intention_id: Uuid,
    /// Its commitment strategy.
    pub strategy: CommitmentStrategy,
    /// `keep`, `suspend` or `drop`.
    pub verdict: Verdict,
    /// Why.
    pub reasons: Vec<String>,
    /// Whether the verdict was applied.
    pub applied: bool,
}

/// `bdi.intention.stale` (written by the maintenance cycle).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BdiIntentionStale {
    /// The agent.
    pub agent_id: String,
    /// The intention.
    pub intention_id: Uuid,
    /// Its commitment strategy (as stored).
    pub strategy: String,
}

/// `mission.reconsidered`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MissionReconsidered {
    /// What asked for replanning.
    pub trigger: MissionTrigger,
    /// The mission's effective strategy.
    pub strategy: CommitmentStrategy,
    /// Whether the strategy was set explicitly (else derived from autonomy).
    pub explicit: bool,
    /// `drop` the current plan (replan) or `keep` it.
    pub verdict: Verdict,
    /// Whether the mission replans.
    pub replan: bool,
}

/// `mission.commitment_set`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MissionCommitmentSet {
    /// The mission's effective strategy after.
    pub strategy: CommitmentStrategy,
    /// Whether it was set explicitly (else cleared, derived from autonomy).
    pub explicit: bool,
}
