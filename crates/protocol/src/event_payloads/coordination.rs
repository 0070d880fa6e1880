//! Payloads of the workspace's coordination events: the governance profile
//! and decisions, contractors, work packages and handoffs, messages and
//! reservations, team decisions and tools. Most are workspace events that
//! name a mission only when they are about one.
//!
//! Statuses and other values read back from a row are strings here (the
//! row's own text), so the payload is exactly what the row holds.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use coordinator_core::domain::TaskStatus;
use coordinator_core::messages::{Category, Performative};
use coordinator_core::team_decisions::TeamOption;
use coordinator_core::workforce::{Candidate, PackageStatus, QualityRating};

payload_kind! {
    GovernanceProfileUpdated => GovernanceProfileUpdated,
    DecisionRequested => DecisionRequested,
    DecisionResolved => DecisionResolved,
    DecisionRechecked => DecisionRechecked,
    ContractorAdded => ContractorAdded,
    ContractorUpdated => ContractorUpdated,
    ContractorTrustUpdated => ContractorTrustUpdated,
    WorkPackageCreated => WorkPackageCreated,
    WorkPackageStatusChanged => WorkPackageStatusChanged,
    WorkPackageProgress => WorkPackageProgress,
    HandoffCreated => HandoffCreated,
    MessageSent => MessageSent,
    MessageAcked => MessageAcked,
    ReservationCreated => ReservationCreated,
    ReservationReleased => ReservationReleased,
    ReservationExpired => ReservationExpired,
    TeamDecisionProposed => TeamDecisionProposed,
    TeamDecisionVoted => TeamDecisionVoted,
    TeamDecisionCommitted => TeamDecisionCommitted,
    TeamDecisionCancelled => TeamDecisionCancelled,
    ToolApprovalRequested => ToolApprovalRequested,
    ToolApprovalResolved => ToolApprovalResolved,
    ToolCalled => ToolCalled,
}

// -------------------------------------------------------------- governance

/// `governance.profile_updated` (a workspace event).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GovernanceProfileUpdated {
    /// The profile as `GET /v1/governance/profile` shows it (a service view).
    pub profile: Value,
}

/// A governance decision as its `decision.*` events carry it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DecisionSnapshot {
    /// The decision.
    pub decision_id: Uuid,
    /// Its status (`pending`, `approved`, `rejected`, `deferred` or `modified`).
    pub status: String,
    /// Its category.
    pub category: String,
    /// The agent that asked, if an agent did.
    pub agent_id: Option<String>,
    /// What is decided.
    pub description: String,
    /// The governance check's snapshot.
    pub governance_check: Value,
    /// Who resolved it.
    pub resolver: Option<String>,
    /// Why.
    pub rationale: Option<String>,
    /// Conditions attached by the stakeholder.
    pub conditions: Value,
    /// Modifications made by the stakeholder.
    pub modifications: Value,
    /// When a deferred decision is checked again (`time`'s serde form, as
    /// the log has always held it).
    pub recheck_at: Option<OffsetDateTime>,
}

/// `decision.requested`: the decision as it entered the queue.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DecisionRequested(pub DecisionSnapshot);

/// `decision.resolved`: the decision as resolved.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DecisionResolved(pub DecisionSnapshot);

/// `decision.rechecked`: the deferred decision, pending again.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DecisionRechecked(pub DecisionSnapshot);

// --------------------------------------------------------------- workforce

/// `contractor.added` (a workspace event).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContractorAdded {
    /// The contractor.
    pub contractor_id: Uuid,
    /// Their name.
    pub name: String,
    /// Their skills (lower-case).
    pub skills: Vec<String>,
    /// Their trust (0.5 for a newcomer).
    pub trust_score: f64,
}

/// `contractor.updated` (a workspace event).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContractorUpdated {
    /// The contractor.
    pub contractor_id: Uuid,
    /// Their availability after (`full-time`, `part-time`, `on-call`, `unavailable`).
    pub availability: String,
    /// Their skills after.
    pub skills: Vec<String>,
}

/// `contractor.trust_updated` (a workspace event; also the `trust` of the
/// `work_package.status_changed` that rated them).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContractorTrustUpdated {
    /// The contractor.
    pub contractor_id: Uuid,
    /// Trust before.
    pub previous_score: f64,
    /// Trust after.
    pub new_score: f64,
    /// The rating that moved it.
    pub quality_rating: QualityRating,
    /// The package rated, if the rating was for one.
    pub work_package_id: Option<Uuid>,
}

/// `work_package.created`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkPackageCreated {
    /// The package.
    pub work_package_id: Uuid,
    /// Its title.
    pub title: String,
    /// The skills it needs.
    pub required_skills: Vec<String>,
}

/// `work_package.status_changed`: `candidates` on `open`, `contractor_id`
/// on `assigned`, `trust` and `quality_rating` on a rated completion, `task`
/// when a delegated task followed, `reason` when given.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkPackageStatusChanged {
    /// The package.
    pub work_package_id: Uuid,
    /// The status before.
    pub from: PackageStatus,
    /// The status after.
    pub to: PackageStatus,
    /// The contractors matched, best first (on `open`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidates: Option<Vec<Candidate>>,
    /// The contractor chosen (on `assigned`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contractor_id: Option<Uuid>,
    /// The trust change of the rating (on a rated completion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<ContractorTrustUpdated>,
    /// The rating (on a rated completion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quality_rating: Option<QualityRating>,
    /// What happened to the delegated task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<DelegatedTask>,
    /// Why, when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// A delegated task after its package completed or was cancelled: settled
/// (`action`) or left alone (`untouched`, no longer waiting for a person).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DelegatedTask {
    /// The task.
    pub id: Uuid,
    /// Its key.
    pub key: String,
    /// Its status, when it was left alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untouched: Option<String>,
    /// `complete` or `retry`, when it was settled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
}

/// `work_package.progress` (a workspace event).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct WorkPackageProgress {
    /// The package.
    pub work_package_id: Uuid,
    /// Its progress (percent).
    pub progress: i32,
    /// The note added, if any.
    pub note: Option<String>,
    /// The mission of its delegated task, if any.
    pub mission_id: Option<Uuid>,
}

/// `handoff.created`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HandoffCreated {
    /// The handoff.
    pub handoff_id: Uuid,
    /// `agent_to_human` or `human_to_agent`.
    pub direction: String,
    /// Who handed the work over.
    pub from: String,
    /// Who received it.
    pub to: String,
    /// The task's key.
    pub key: String,
    /// The task's status before.
    pub task_status_from: TaskStatus,
    /// The task's status after.
    pub task_status_to: TaskStatus,
    /// The HANDOFF message (`human_to_agent`).
    pub message_id: Option<Uuid>,
    /// The agent's side of the handoff, so an agent's event filter finds it.
    pub agent_id: String,
    /// For `agent_to_agent`: the attempt the handoff ended.
    pub attempt_id: Option<Uuid>,
}

// ---------------------------------------------------- messages, reservations

/// `message.sent`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MessageSent {
    /// The message.
    pub message_id: Uuid,
    /// Its conversation.
    pub conversation_id: Uuid,
    /// The sending agent, or the coordinator or person that sent it.
    pub from: String,
    /// The sending agent, when an agent sent it.
    pub agent_id: Option<String>,
    /// What the sender addressed: `agent:<id>`, `role:<role>` or `all`.
    pub to: String,
    /// The agents it reached.
    pub recipients: Vec<String>,
    /// Its speech act.
    pub performative: Performative,
    /// Its RFC-001 category, if any.
    pub category: Option<Category>,
    /// Its subject.
    pub subject: String,
}

/// `message.acked`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MessageAcked {
    /// The message.
    pub message_id: Uuid,
    /// The recipient that acked.
    pub agent_id: String,
    /// The message's category (`HANDOFF`, `BLOCKED`…), if any.
    pub category: Option<String>,
    /// Its conversation.
    pub conversation_id: Uuid,
}

/// A reservation as every `reservation.*` event names it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReservationFields {
    /// The reservation.
    pub reservation_id: Uuid,
    /// The scope pattern.
    pub scope: String,
    /// The holder.
    pub agent_id: String,
    /// Its state after (`active`, `released` or `expired`).
    pub state: String,
    /// When it stops holding (RFC 3339).
    pub expires_at: Option<String>,
}

/// `reservation.created` (also a renewal of a held one).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReservationCreated {
    /// The reservation.
    #[serde(flatten)]
    pub reservation: ReservationFields,
    /// Whether the holder's reservation of the same scope was renewed.
    pub renewed: bool,
}

/// `reservation.released`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReservationReleased {
    /// The reservation.
    #[serde(flatten)]
    pub reservation: ReservationFields,
}

/// `reservation.expired`: taken over (`taken_over_by`, `by_agent`) or swept
/// (`swept`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReservationExpired {
    /// The reservation.
    #[serde(flatten)]
    pub reservation: ReservationFields,
    /// The reservation that took its scope over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taken_over_by: Option<Uuid>,
    /// The agent that took it over.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_agent: Option<String>,
    /// `true` when the reconcile sweep expired it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swept: Option<bool>,
}

// ------------------------------------------------------------------- team

/// `team_decision.proposed`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TeamDecisionProposed {
    /// The decision.
    pub team_decision_id: Uuid,
    /// Its topic.
    pub topic: String,
    /// Its options.
    pub options: Vec<TeamOption>,
    /// The evidence offered.
    pub evidence: Vec<String>,
    /// The proposer's recommendation, if any.
    pub recommended_option: Option<String>,
    /// The agents that may vote.
    pub eligible_agents: Vec<String>,
    /// When the vote closes (unix seconds).
    pub closes_at: i64,
}

/// `team_decision.voted`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TeamDecisionVoted {
    /// The decision.
    pub team_decision_id: Uuid,
    /// The voter.
    pub agent_id: String,
    /// The option voted for.
    pub option: String,
    /// Why, if given.
    pub rationale: Option<String>,
}

/// `team_decision.committed`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TeamDecisionCommitted {
    /// The decision.
    pub team_decision_id: Uuid,
    /// Its topic.
    pub topic: String,
    /// The option chosen.
    pub committed_option: String,
    /// Whether the orchestrator rule broke a tie.
    pub tie_broken: bool,
    /// Votes per option.
    pub tally: BTreeMap<String, usize>,
    /// The ADR (Markdown).
    pub adr: String,
}

/// `team_decision.cancelled`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TeamDecisionCancelled {
    /// The decision.
    pub team_decision_id: Uuid,
    /// Why it was withdrawn.
    pub reason: String,
}

/// `tool.approval_requested`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolApprovalRequested {
    /// The request.
    pub approval_id: Uuid,
    /// The asking agent.
    pub agent_id: String,
    /// The tool.
    pub tool: String,
    /// Paths the call touches.
    pub paths: Vec<String>,
    /// Diff lines it would write.
    pub diff_lines: i64,
    /// Tokens it would use.
    pub tokens: i64,
    /// Files it would change.
    pub files_changed: i64,
    /// The policy's verdict (`auto_approved`, `needs_approval`, `denied`).
    pub verdict: String,
    /// The verdict's reasons.
    pub reasons: Vec<String>,
    /// The request's status after the policy (`approved`, `pending`, `denied`).
    pub approval_status: String,
}

/// `tool.approval_resolved`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolApprovalResolved {
    /// The request.
    pub approval_id: Uuid,
    /// The asking agent.
    pub agent_id: String,
    /// The tool.
    pub tool: String,
    /// The request's status (`approved`, `denied`, `timed_out`).
    pub approval_status: String,
    /// Whether the call may go ahead (null while pending, which a resolved
    /// request never is).
    pub granted: Option<bool>,
    /// Who resolved it (`policy`, `timeout` or a person).
    pub resolver: Option<String>,
    /// Why.
    pub rationale: Option<String>,
}

/// `tool.called`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolCalled {
    /// The agent that made the call.
    pub agent_id: String,
    /// The tool.
    pub tool: String,
    /// The approval it was made under, if any.
    pub approval_id: Option<Uuid>,
    /// Whether it worked.
    pub ok: bool,
    /// What it did, if said.
    pub summary: Option<String>,
    /// How long it took, if said.
    pub duration_ms: Option<i64>,
}
