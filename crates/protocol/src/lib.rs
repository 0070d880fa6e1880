//! The worker protocol: what the coordinator sends to a worker and what the
//! worker reports back (DESIGN.md, "Worker protocol"). Wire types only: the
//! service and the workers both speak them, neither owns them.
//!
//! - `POST {endpoint}/v1/tasks` with a [`DispatchRequest`]; the worker answers
//!   `202` (it will call back) or `200` with a [`WorkerReport`] at once.
//! - `POST {callback.heartbeat_url}` while working, `POST {callback.result_url}`
//!   with a [`WorkerReport`] when done, both with `Authorization: Bearer {callback.token}`
//!   (and the callback's `traceparent`, when it has one).
//! - `POST {endpoint}/v1/cfp` with a [`CallForProposals`] in a contract-net
//!   tender; the worker answers `200` with a [`ProposalBody`] or `204`.
//!
//! Also the kinds of events the coordinator logs ([`EventKind`]), which
//! clients filter and dispatch on.

pub mod agent_events;
pub mod event_payloads;
pub mod events;

pub use event_payloads::EventPayload;
pub use events::{EventArea, EventEntity, EventKind, UnknownEventKind};

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use coordinator_core::domain::{FailureKind, ReportStatus};

/// One dispatch of one task to one agent.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DispatchRequest {
    /// The attempt this dispatch is; reports name it.
    pub attempt_id: Uuid,
    /// 1 for the first dispatch of the task, then 2, 3…
    pub attempt_number: i32,
    /// The task.
    pub task_id: Uuid,
    /// The mission it belongs to.
    pub mission_id: Uuid,
    /// The agent chosen to do it.
    pub agent_id: String,
    /// The mission's goal, for context.
    pub goal: String,
    /// What to do.
    pub task: TaskPayload,
    /// Outputs of the tasks this one depends on.
    pub upstream: Vec<UpstreamOutput>,
    /// The workspace's organisation spec as it bears on this agent and task
    /// (absent when the workspace has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub organisation: Option<coordinator_core::organisation::OrgContext>,
    /// What the next attempt must take into account: why the previous one
    /// was not accepted, a handoff's context, or a blocker's decision.
    pub feedback: Option<String>,
    /// The mission's blackboard when the task was dispatched: the keys the
    /// task declares in `inputs.blackboard_keys`, or else the most recently
    /// written ones (up to [`BLACKBOARD_SNAPSHOT_KEYS`]); absent when empty.
    /// Read the rest with the `blackboard_*` tools.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub blackboard: BTreeMap<String, BlackboardValue>,
    /// When the coordinator stops waiting without a heartbeat.
    #[serde(with = "time::serde::rfc3339")]
    pub deadline: OffsetDateTime,
    /// Where and how to report.
    pub callback: Callback,
}

/// Most blackboard keys a dispatch carries.
pub const BLACKBOARD_SNAPSHOT_KEYS: usize = 50;

/// One key of a mission's blackboard, as a dispatch carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlackboardValue {
    /// The value.
    pub value: Value,
    /// Its version (pass it as `expected_version` to update it safely).
    pub version: i64,
}

/// The task as a worker sees it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskPayload {
    /// Plan-local key, e.g. `draft`.
    pub key: String,
    /// Short title.
    pub title: String,
    /// Kind of work, e.g. `research`.
    pub task_type: String,
    /// Full instructions.
    pub description: String,
    /// Skills it needs.
    pub required_skills: Vec<String>,
    /// Tools it needs.
    pub required_tools: Vec<String>,
    /// How the result will be judged.
    pub success_criteria: Value,
    /// Extra inputs from the plan.
    pub inputs: Value,
    /// The task's tool-use policy (from `inputs.tool_policy`; absent: any
    /// tool, auto-approved). Before a guarded call, ask
    /// [`Callback::tool_approvals_url`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_policy: Option<coordinator_core::tool_policy::ToolPolicy>,
}

/// The result of a finished upstream task.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UpstreamOutput {
    /// Its id.
    pub task_id: Uuid,
    /// Its plan-local key.
    pub key: String,
    /// Its title.
    pub title: String,
    /// What it produced.
    pub output: Option<Value>,
}

/// Where a worker reports, and the attempt's own bearer token.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Callback {
    /// `POST` here while working.
    pub heartbeat_url: String,
    /// `POST` a [`WorkerReport`] here when done.
    pub result_url: String,
    /// `POST` a tool-approval request here before a guarded tool call, then
    /// poll `{tool_approvals_url}/{id}` (absent from older coordinators).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_approvals_url: Option<String>,
    /// Bearer token valid for this attempt only. It also authenticates the
    /// agent's tool calls (`tools_url`, `mcp_url`) while the attempt is live.
    pub token: String,
    /// The agent tools this attempt may call, in OpenAI function-calling
    /// form: `GET` lists them, `POST {tools_url}/{name}` with the arguments
    /// object calls one (absent from older coordinators).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_url: Option<String>,
    /// The same tools over MCP (streamable HTTP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mcp_url: Option<String>,
    /// W3C `traceparent` of the dispatch (also sent as that header), present
    /// when the coordinator exports traces: send it back as the
    /// `traceparent` header of callbacks so they join the attempt's trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

/// What a worker reports about an attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkerReport {
    /// `succeeded`, `failed` or `continue`.
    pub status: ReportStatus,
    /// The result (or partial result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// `infrastructure` or `quality` (failures only; default `quality`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_kind: Option<FailureKind>,
    /// What the attempt cost, in the budget's currency.
    #[serde(default)]
    #[schema(minimum = 0)]
    pub cost: f64,
    /// Tokens the attempt used.
    #[serde(default)]
    #[schema(minimum = 0)]
    pub tokens: i64,
    /// For failures: wait at least this long before the next attempt (a
    /// provider's `Retry-After`); the failure still counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_secs: Option<u64>,
}

/// A heartbeat: optional progress for people watching.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = AttemptHeartbeat)]
pub struct Heartbeat {
    /// Fraction done, 0–1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<f64>,
    /// A short note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// What an agent's worker receives at `POST {endpoint}/v1/cfp`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CallForProposals {
    /// The tender.
    pub tender_id: Uuid,
    /// The agent asked.
    pub agent_id: String,
    /// The mission.
    pub mission_id: Uuid,
    /// The task.
    pub task_id: Uuid,
    /// What the work is.
    pub task: Value,
    /// Proposals after this are refused.
    #[serde(with = "time::serde::rfc3339")]
    pub deadline: OffsetDateTime,
    /// The award weights.
    pub criteria: Value,
}

/// A proposal: the API body, and what a worker answers to a CFP (`200`;
/// `204` declines).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProposalBody {
    /// The proposing agent (agent tokens: implied; others must name it).
    #[serde(default)]
    pub agent_id: Option<String>,
    /// Claimed match in [0, 1] (default: the coverage of the required
    /// skills by the agent's registered skills, which also caps it).
    #[serde(default)]
    pub capability_match: Option<f64>,
    /// Required skills it has.
    #[serde(default)]
    pub matched_skills: Vec<String>,
    /// Skills beyond those required.
    #[serde(default)]
    pub additional_skills: Vec<String>,
    /// Duration estimate (hours), non-negative.
    pub estimated_effort: f64,
    /// Cost estimate, non-negative.
    pub estimated_cost: f64,
    /// Confidence in [0, 1].
    pub confidence: f64,
    /// Conditions attached (at most 20, each 1–500 characters).
    #[serde(default)]
    pub conditions: Vec<String>,
}
