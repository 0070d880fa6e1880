//! The worker protocol: what the coordinator sends to a worker and what the
//! worker reports back (DESIGN.md, "Worker protocol").
//!
//! - `POST {endpoint}/v1/tasks` with a [`DispatchRequest`]; the worker answers
//!   `202` (it will call back) or `200` with a [`WorkerReport`] at once.
//! - `POST {callback.heartbeat_url}` while working, `POST {callback.result_url}`
//!   with a [`WorkerReport`] when done, both with `Authorization: Bearer {callback.token}`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::domain::{FailureKind, ReportStatus};

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
    pub organisation: Option<crate::coordination::organisation::OrgContext>,
    /// Why the previous attempt was not accepted, if it was not.
    pub feedback: Option<String>,
    /// When the coordinator stops waiting without a heartbeat.
    #[serde(with = "time::serde::rfc3339")]
    pub deadline: OffsetDateTime,
    /// Where and how to report.
    pub callback: Callback,
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
    pub tool_policy: Option<crate::coordination::tool_policy::ToolPolicy>,
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
    /// Bearer token valid for this attempt only.
    pub token: String,
    /// W3C `traceparent` of the dispatch (also sent as that header), present
    /// when the coordinator exports traces: send it back as the
    /// `traceparent` header of callbacks so they join the attempt's trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traceparent: Option<String>,
}

impl Callback {
    /// `builder` with the attempt's token and, when there is one, its
    /// `traceparent`: how a callback request should start.
    pub fn authorize(&self, builder: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let builder = builder.bearer_auth(&self.token);
        match &self.traceparent {
            Some(tp) => builder.header("traceparent", tp),
            None => builder,
        }
    }
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
    pub cost: f64,
    /// Tokens the attempt used.
    #[serde(default)]
    pub tokens: i64,
    /// For failures: wait at least this long before the next attempt (a
    /// provider's `Retry-After`); the failure still counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_secs: Option<u64>,
}

/// A heartbeat: optional progress for people watching.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Heartbeat {
    /// Fraction done, 0–1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<f64>,
    /// A short note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}
