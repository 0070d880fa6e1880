//! Payloads of the mission, plan, task and attempt events, and of the
//! governance events that move tasks and missions, the contract net's and
//! the organisation spec's.
//!
//! Task-transition payloads get the task's new `status` added by the store
//! when written, so the structs here do not carry it (except
//! [`TaskDispatched`], written in bulk by SQL).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use coordinator_core::domain::{Autonomy, FailureKind, MissionStatus, Rung, TaskStatus};
use coordinator_core::governance::Threshold;
use coordinator_core::organisation::DefaultModality;

payload_kind! {
    MissionCreated => MissionCreated,
    MissionStatusChanged => MissionStatusChanged,
    MissionBudgetWarning => MissionBudgetWarning,
    MissionUpdated => MissionUpdated,
    MissionDeleted => MissionDeleted,
    PlanRequested => PlanRequested,
    PlanLlmCall => PlanLlmCall,
    PlanCreated => PlanCreated,
    PlanFailed => PlanFailed,
    PlanReplaced => PlanReplaced,
    RoutineSaved => RoutineSaved,
    ContractorHired => ContractorHired,
    ContractorsRetired => ContractorsRetired,
    TaskDispatched => TaskDispatched,
    TaskSucceeded => TaskSucceeded,
    TaskRetryScheduled => TaskRetryScheduled,
    TaskDeferred => TaskDeferred,
    TaskContinued => TaskContinued,
    TaskVerificationFailed => TaskVerificationFailed,
    TaskVerifying => TaskVerifying,
    TaskEscalated => TaskEscalated,
    TaskAwaitingHuman => TaskAwaitingHuman,
    TaskResolved => TaskResolved,
    TaskSkipped => TaskSkipped,
    TaskBudgetRefused => TaskBudgetRefused,
    TaskReopened => TaskReopened,
    TaskRestored => TaskRestored,
    TaskFailed => TaskFailed,
    TaskCancelled => TaskCancelled,
    AttemptProgressCheck => AttemptProgressCheck,
    TaskQueued => TaskQueued,
    TaskAwaitingApproval => TaskAwaitingApproval,
    TaskApproved => TaskApproved,
    MissionReplanTriggered => MissionReplanTriggered,
    TenderOpened => TenderOpened,
    TenderProposalReceived => TenderProposalReceived,
    TenderAwarded => TenderAwarded,
    TenderNoProposals => TenderNoProposals,
    MissionAllocationChanged => MissionAllocationChanged,
    OrgSpecUpdated => OrgSpecUpdated,
    OrgSpecRemoved => OrgSpecRemoved,
}

// ---------------------------------------------------------------- missions

/// `mission.created`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MissionCreated {
    /// The mission's goal.
    pub goal: String,
    /// How much it may do without asking.
    pub autonomy: Autonomy,
    /// Dispatch priority.
    pub priority: i32,
    /// Budget limit, if any.
    pub budget: Option<f64>,
}

/// `mission.status_changed`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MissionStatusChanged {
    /// The status before.
    pub from: MissionStatus,
    /// The status after.
    pub to: MissionStatus,
    /// Why, when given.
    pub reason: Option<String>,
}

/// `mission.budget_warning`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MissionBudgetWarning {
    /// The budget limit.
    pub limit: Option<f64>,
    /// Spent so far.
    pub spent: f64,
    /// The share of the limit that triggers the warning.
    pub share: f64,
    /// Optional tasks not started that were dropped.
    pub optional_tasks_dropped: usize,
    /// What dispatch prefers from now on.
    pub prefer: String,
}

/// `mission.updated`: a person changed what is safe to change about a
/// mission, or archived it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MissionUpdated {
    /// The mission's version after the change.
    pub version: i64,
    /// Each changed field (`title`, `priority`, `budget`, `deadline`,
    /// `labels`, `archived_at`), with its old and new value.
    pub changes: std::collections::BTreeMap<String, crate::agent_events::FieldChange>,
}

/// `mission.deleted`: a finished mission was deleted (a workspace event,
/// written without the mission's id as `run_id` so the cascade keeps it).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MissionDeleted {
    /// The mission that was.
    pub mission_id: Uuid,
    /// Its goal.
    pub goal: String,
    /// Its title, if it had one.
    pub title: Option<String>,
    /// Its status when deleted (`completed`, `failed` or `cancelled`).
    pub status: MissionStatus,
}

/// `plan.requested`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlanRequested {
    /// The planner asked (`llm`).
    pub planner: String,
    /// Why it was asked.
    pub reason: String,
    /// How the plan-library methods scored.
    pub match_outcome: Value,
    /// Feedback for the planner, if any.
    pub feedback: Option<String>,
}

/// `plan.llm_call`: `outcome` `plan` with `usage`, or `error` with `code`,
/// `error` and `attempt`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlanLlmCall {
    /// `plan` or `error`.
    pub outcome: String,
    /// Model, tokens, latency, calls, repairs, response format (on `plan`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Value>,
    /// Error code (on `error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Error message (on `error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Planning attempt number (on `error`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<i32>,
}

/// `plan.created`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlanCreated {
    /// The new plan version.
    pub plan_version: i32,
    /// Which planner and method produced it, and why.
    pub provenance: Value,
    /// How many tasks it has.
    pub tasks: usize,
    /// Task keys on the critical path.
    pub critical_path: Vec<String>,
    /// Estimated total cost.
    pub estimated_cost: f64,
    /// Planner details (score, runner-up, trace, LLM usage, plan-library case).
    pub details: Value,
}

/// `plan.failed`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlanFailed {
    /// Error code.
    pub code: String,
    /// Why planning gave up.
    pub reason: String,
    /// The problems found, if any.
    pub problems: Value,
}

/// `plan.replaced`: exactly one of `feedback`, `instructions` or `escalation`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlanReplaced {
    /// A reviewer's rejection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    /// New instructions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// The feedback the escalation ladder gave the planner.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<String>,
    /// The plan version replaced.
    pub previous_plan_version: i32,
    /// Tasks removed (not started).
    pub tasks_removed: u64,
    /// Tasks kept.
    pub tasks_kept: usize,
}

/// `routine.saved`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RoutineSaved {
    /// The routine's name.
    pub name: String,
    /// Keywords it matches on.
    pub keywords: Vec<String>,
    /// How many tasks it has.
    pub tasks: usize,
}

/// `agent.contractor_hired`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContractorHired {
    /// The task it was hired for.
    pub key: String,
    /// The new agent.
    pub agent_id: String,
    /// Its skills.
    pub skills: Vec<String>,
    /// Its tools.
    pub tools: Vec<String>,
    /// The score below which a contractor is hired.
    pub threshold: f64,
    /// Its role in the organisation spec.
    pub role: String,
}

/// `agent.contractors_retired`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ContractorsRetired {
    /// The agents taken offline.
    pub agents: Vec<String>,
}

// ------------------------------------------------------------------- tasks

/// `task.dispatched` (written in bulk; carries its own `status`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskDispatched {
    /// The task's key.
    pub key: String,
    /// The agent chosen.
    pub agent_id: String,
    /// The attempt number.
    pub attempt: i32,
    /// The agent's score (total and parts).
    pub score: Value,
    /// `work` or `verify`.
    pub purpose: String,
    /// `running`.
    pub status: TaskStatus,
}

/// `task.succeeded`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskSucceeded {
    /// The task's key.
    pub key: String,
    /// The attempt number.
    pub attempt: i32,
    /// What the attempt cost.
    pub cost: f64,
    /// Tokens it used.
    pub tokens: i64,
    /// The verification outcome.
    pub verification: Value,
}

/// `task.retry_scheduled`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskRetryScheduled {
    /// The task's key.
    pub key: String,
    /// The attempt that failed.
    pub attempt: i32,
    /// Failures so far on this rung.
    pub failures: i32,
    /// Attempts allowed.
    pub max_attempts: i32,
    /// `quality` or `infrastructure`.
    pub failure_kind: Option<FailureKind>,
    /// What went wrong.
    pub error: Option<String>,
    /// Feedback for the next attempt.
    pub feedback: Option<String>,
    /// When the retry is due (unix seconds).
    pub due: i64,
}

/// `task.deferred`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskDeferred {
    /// The task's key.
    pub key: String,
    /// The attempt that was deferred.
    pub attempt: i32,
    /// The worker's reason.
    pub reason: Option<String>,
    /// When it is due again (unix seconds).
    pub due: i64,
}

/// `task.continued`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskContinued {
    /// The task's key.
    pub key: String,
    /// The continuation turn.
    pub turn: i32,
    /// When the next attempt is due (unix seconds).
    pub due: i64,
}

/// `task.verification_failed`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskVerificationFailed {
    /// The task's key.
    pub key: String,
    /// The failed checks or the verifier's verdict.
    pub verdict: Value,
}

/// `task.verifying`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskVerifying {
    /// The task's key.
    pub key: String,
    /// The attempt whose result is being verified.
    pub attempt: i32,
    /// What waits for the verifier (`unchecked`).
    pub detail: Value,
}

/// `task.escalated`. The `replan` rung leaves out `excluded_agents` and
/// `min_model_tier`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskEscalated {
    /// The task's key.
    pub key: String,
    /// The rung climbed to.
    pub rung: Rung,
    /// Agents excluded from now on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded_agents: Option<Vec<String>>,
    /// The lowest model tier allowed from now on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_model_tier: Option<i32>,
    /// The last failure's error.
    pub error: Option<String>,
    /// The last failure's kind.
    pub failure_kind: Option<FailureKind>,
}

/// What a person may do with a task in `awaiting_human`.
pub const HUMAN_ACTIONS: [&str; 4] = ["complete", "retry", "skip", "fail"];

/// `task.awaiting_human`: from the escalation ladder (`rung`, `error`,
/// `failure_kind`, `attempts`, `excluded_agents`), or handed to a person
/// (`reason`, and `via` a handoff or `work_package_id` a delegation).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TaskAwaitingHuman {
    /// The task's key.
    pub key: String,
    /// `human` (from the ladder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rung: Option<Rung>,
    /// The last failure's error (from the ladder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The last failure's kind (from the ladder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_kind: Option<FailureKind>,
    /// Attempts made (from the ladder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<i32>,
    /// Agents excluded (from the ladder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded_agents: Option<Vec<String>>,
    /// Why it was handed to a person.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The handoff that did it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<Value>,
    /// The work package it was delegated to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_package_id: Option<Uuid>,
    /// What the person may do ([`HUMAN_ACTIONS`]).
    pub actions: Vec<String>,
}

impl TaskAwaitingHuman {
    /// [`HUMAN_ACTIONS`], owned.
    pub fn actions() -> Vec<String> {
        HUMAN_ACTIONS.iter().map(|a| (*a).to_owned()).collect()
    }
}

/// `task.resolved`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskResolved {
    /// The task's key.
    pub key: String,
    /// `complete`, `retry`, `skip` or `fail`.
    pub action: Value,
    /// The person's feedback.
    pub feedback: Option<String>,
    /// The task's status after.
    pub to: TaskStatus,
    /// Where the resolution came from (a decision, a handoff…), when not the API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<Value>,
}

/// `task.skipped`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskSkipped {
    /// The task's key.
    pub key: String,
    /// Why.
    pub reason: String,
    /// The last failure's error (when the ladder dropped it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The governance decision that rejected it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_id: Option<Uuid>,
}

/// `task.budget_refused`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskBudgetRefused {
    /// The task's key.
    pub key: String,
    /// Its estimated cost.
    pub estimated_cost: f64,
    /// The budget limit.
    pub limit: Option<f64>,
    /// Spent so far.
    pub spent: f64,
    /// What happens to it (`skipped` or `awaiting_human`).
    pub then: String,
    /// Why.
    pub reason: String,
}

/// `task.reopened`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskReopened {
    /// The task's key.
    pub key: String,
    /// Whether the reviewer named it (else it is downstream of one named).
    pub named: bool,
    /// The reviewer's feedback.
    pub feedback: String,
}

/// `task.restored`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskRestored {
    /// The task's key.
    pub key: String,
    /// Why it came back.
    pub reason: String,
}

/// `task.failed`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskFailed {
    /// The task's key.
    pub key: String,
    /// Attempts made.
    pub attempts: i32,
    /// The last failure's kind.
    pub failure_kind: Option<FailureKind>,
    /// The last failure's error.
    pub error: Option<String>,
    /// The ladder's last rung, if it climbed any.
    pub escalation: Option<String>,
}

/// `task.cancelled`: `key` and `named` when a person cancelled it with
/// others, only `reason` when its mission ended.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskCancelled {
    /// The task's key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// Why.
    pub reason: String,
    /// Whether it was the task named in the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub named: Option<bool>,
}

/// `attempt.progress_check`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AttemptProgressCheck {
    /// The task's key.
    pub key: String,
    /// Seconds since the attempt was last heard from.
    pub silent_secs: f64,
    /// The stall timeout.
    pub stall_timeout_secs: u64,
}

/// `task.queued` (written in bulk by SQL, with the new `status`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskQueued {
    /// The task's key.
    pub key: String,
}

// -------------------------------------------------------------- governance

/// `task.awaiting_approval`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskAwaitingApproval {
    /// The task's key.
    pub key: String,
    /// The decision it waits for.
    pub decision_id: Uuid,
    /// Why the check asked for approval.
    pub reason: String,
    /// The threshold that decided the check, if one did.
    pub relevant_threshold: Option<Threshold>,
}

/// `task.approved`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskApproved {
    /// The task's key.
    pub key: String,
    /// The decision that let it go.
    pub decision_id: Uuid,
    /// The decision's status (`approved` or `modified`).
    pub outcome: String,
    /// The modifications the stakeholder made.
    pub modifications: Value,
}

/// `mission.replan_triggered`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MissionReplanTriggered {
    /// The rejected task's key.
    pub key: String,
    /// The decision that rejected it.
    pub decision_id: Uuid,
    /// Why.
    pub reason: String,
    /// What triggered it (`governance_rejected`).
    pub trigger: String,
    /// Whether the remaining work is being planned again.
    pub replanning: bool,
}

// ------------------------------------------------------------ contract net

/// `tender.opened`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TenderOpened {
    /// The task's key.
    pub key: String,
    /// The tender (also the call for proposals' id).
    pub tender_id: Uuid,
    /// The agents asked.
    pub eligible_agents: Vec<String>,
    /// When proposals close (RFC 3339).
    pub deadline: String,
}

/// `tender.proposal_received`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TenderProposalReceived {
    /// The tender.
    pub tender_id: Uuid,
    /// The proposal.
    pub proposal_id: Uuid,
    /// The agent that proposed.
    pub agent_id: String,
    /// How it came (`endpoint` or `api`).
    pub via: String,
}

/// `tender.awarded`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TenderAwarded {
    /// The tender.
    pub tender_id: Uuid,
    /// The winner.
    pub agent_id: Option<String>,
    /// The proposals ranked, best first.
    pub ranking: Value,
    /// How many proposals there were.
    pub proposals: usize,
}

/// `tender.no_proposals` (the same fields as [`TenderAwarded`], without a winner).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TenderNoProposals {
    /// The tender.
    pub tender_id: Uuid,
    /// Always null.
    pub agent_id: Option<String>,
    /// The (empty) ranking.
    pub ranking: Value,
    /// How many proposals there were.
    pub proposals: usize,
}

/// `mission.allocation_changed`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MissionAllocationChanged {
    /// `scoring` or `contract_net`.
    pub allocation: String,
    /// The tender window.
    pub tender_window_ms: i32,
}

// ------------------------------------------------------------ organisation

/// `org_spec.updated` (a workspace event).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OrgSpecUpdated {
    /// The spec's new version.
    pub version: i64,
    /// Its name, if any.
    pub name: Option<String>,
    /// How many roles it has.
    pub roles: usize,
    /// How many norms it has.
    pub norms: usize,
    /// The modality of roles no norm names.
    pub default_modality: DefaultModality,
}

/// `org_spec.removed` (a workspace event; an empty payload).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct OrgSpecRemoved {}
