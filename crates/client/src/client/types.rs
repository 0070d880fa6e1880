//! The request and response bodies the client sends and reads: agents,
//! missions (with progress and tasks), events, reviews and tokens. Response
//! types keep the fields they do not name (`extra`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use time::OffsetDateTime;
use uuid::Uuid;

/// An agent in the registry.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Agent {
    /// Id, unique in the workspace.
    pub agent_id: String,
    /// Role.
    pub role: String,
    /// `roster` or `contractor`.
    pub kind: String,
    /// Skills.
    pub skills: Vec<String>,
    /// Tools.
    pub tools: Vec<String>,
    /// Model name.
    pub model: Option<String>,
    /// Model tier.
    pub model_tier: i32,
    /// Worker base URL.
    pub endpoint_url: String,
    /// Concurrency cap.
    pub max_concurrency: i32,
    /// Live attempts.
    pub running_count: i32,
    /// Trust in [0, 1].
    pub trust: f64,
    /// Cost per task.
    pub cost_per_task: f64,
    /// `idle`, `working`, `blocked`, `done`, `offline` or `retired`.
    pub status: String,
    /// Heartbeat promise in seconds.
    pub heartbeat_timeout_secs: Option<i32>,
    /// Last heartbeat.
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_seen_at: Option<OffsetDateTime>,
    /// Registered.
    #[serde(with = "time::serde::rfc3339::option")]
    pub created_at: Option<OffsetDateTime>,
    /// Fields this client does not name.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `POST /v1/agents` body.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RegisterAgent {
    /// Id.
    pub agent_id: String,
    /// Role.
    pub role: String,
    /// Skills.
    pub skills: Vec<String>,
    /// Tools.
    pub tools: Vec<String>,
    /// Worker base URL.
    pub endpoint_url: String,
    /// Concurrency cap.
    pub max_concurrency: i32,
    /// Model name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Model tier.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model_tier: Option<i32>,
    /// Trust in [0, 1].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust: Option<f64>,
    /// Cost per task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_per_task: Option<f64>,
    /// Heartbeat promise in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub heartbeat_timeout_secs: Option<i32>,
}

/// A mission in a list.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct MissionSummary {
    /// Id.
    pub id: Uuid,
    /// Goal.
    pub goal: String,
    /// Short name, if one was given.
    pub title: Option<String>,
    /// Version (what an edit guards on).
    pub version: i64,
    /// `approve` or `autonomous`.
    pub autonomy: String,
    /// Status.
    pub status: String,
    /// Priority.
    pub priority: i32,
    /// Plan version.
    pub plan_version: i32,
    /// Labels.
    pub labels: Vec<String>,
    /// When it should be done.
    #[serde(with = "time::serde::rfc3339::option")]
    pub deadline: Option<OffsetDateTime>,
    /// Created.
    #[serde(with = "time::serde::rfc3339::option")]
    pub created_at: Option<OffsetDateTime>,
    /// Finished.
    #[serde(with = "time::serde::rfc3339::option")]
    pub finished_at: Option<OffsetDateTime>,
    /// Archived (listed only when archived missions are asked for).
    #[serde(with = "time::serde::rfc3339::option")]
    pub archived_at: Option<OffsetDateTime>,
    /// Fields this client does not name.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A page of `GET /v1/missions`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct MissionPage {
    /// Newest first.
    pub missions: Vec<MissionSummary>,
    /// Cursor of the next page, if there may be one.
    pub next_cursor: Option<Uuid>,
}

/// Filters of `GET /v1/missions`.
#[derive(Debug, Clone, Default)]
pub struct MissionFilter {
    /// Only this status.
    pub status: Option<String>,
    /// Page size.
    pub limit: Option<u32>,
    /// Continue after this mission.
    pub cursor: Option<Uuid>,
    /// Include archived missions.
    pub archived: bool,
}

/// A mission with its tasks.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Mission {
    /// Id.
    pub id: Uuid,
    /// Goal.
    pub goal: String,
    /// Short name, if one was given.
    pub title: Option<String>,
    /// Version (what an edit guards on).
    pub version: i64,
    /// `approve` or `autonomous`.
    pub autonomy: String,
    /// Status.
    pub status: String,
    /// Priority.
    pub priority: i32,
    /// Current plan version.
    pub plan_version: i32,
    /// Planner of the current plan.
    pub planner: Option<String>,
    /// Budget limit and spend.
    pub budget: Budget,
    /// When it should be done.
    #[serde(with = "time::serde::rfc3339::option")]
    pub deadline: Option<OffsetDateTime>,
    /// Labels.
    pub labels: Vec<String>,
    /// Why it failed.
    pub failure_reason: Option<String>,
    /// How it ended (or stands), in one sentence for people.
    pub status_detail: Option<String>,
    /// What in it waits for a person, with the command that settles each.
    pub attention: Vec<AttentionItem>,
    /// Task counts.
    pub progress: Progress,
    /// Task keys on the critical path.
    pub critical_path: Vec<String>,
    /// Tasks in plan order.
    pub tasks: Vec<Task>,
    /// Created.
    #[serde(with = "time::serde::rfc3339::option")]
    pub created_at: Option<OffsetDateTime>,
    /// Started executing.
    #[serde(with = "time::serde::rfc3339::option")]
    pub started_at: Option<OffsetDateTime>,
    /// Finished.
    #[serde(with = "time::serde::rfc3339::option")]
    pub finished_at: Option<OffsetDateTime>,
    /// Archived.
    #[serde(with = "time::serde::rfc3339::option")]
    pub archived_at: Option<OffsetDateTime>,
    /// Fields this client does not name.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Mission {
    /// Whether the mission can change no more.
    pub fn is_terminal(&self) -> bool {
        is_terminal_status(&self.status)
    }
}

/// Whether a mission status is final.
pub fn is_terminal_status(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

/// Budget limit and spend.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Budget {
    /// Limit, if any.
    pub limit: Option<f64>,
    /// Spent so far.
    pub spent: f64,
}

/// Task counts of a mission.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Progress {
    /// All tasks.
    pub total: usize,
    /// Terminal tasks.
    pub finished: usize,
    /// Tasks that succeeded (absent from older services: see [`Progress::outcomes`]).
    pub done: Option<usize>,
    /// Tasks that failed.
    pub failed: Option<usize>,
    /// Tasks that were cancelled.
    pub cancelled: Option<usize>,
    /// Tasks that were skipped.
    pub skipped: Option<usize>,
    /// Tasks that wait for a person.
    pub waiting: Option<usize>,
    /// Tasks still to run (pending, queued, running, retry_wait).
    pub remaining: Option<usize>,
    /// Percent that succeeded.
    pub percent: u32,
    /// Count per status.
    pub by_status: BTreeMap<String, usize>,
}

/// A mission's tasks by outcome, and the share that succeeded.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Outcomes {
    /// Succeeded.
    pub done: usize,
    /// Failed.
    pub failed: usize,
    /// Cancelled.
    pub cancelled: usize,
    /// Skipped.
    pub skipped: usize,
    /// Waiting for a person.
    pub waiting: usize,
    /// Still to run.
    pub remaining: usize,
    /// All tasks.
    pub total: usize,
    /// Percent that succeeded (floor).
    pub percent: usize,
}

impl Progress {
    /// The counts by outcome: the service's own, or (from a service that
    /// sends only `by_status`) counted here the same way.
    pub fn outcomes(&self) -> Outcomes {
        let status = |names: &[&str]| -> usize {
            names
                .iter()
                .map(|n| self.by_status.get(*n).copied().unwrap_or(0))
                .sum()
        };
        let done = self.done.unwrap_or_else(|| status(&["succeeded"]));
        let total = self.total;
        let terminal = ["succeeded", "failed", "cancelled", "skipped"];
        let waiting = ["awaiting_human", "awaiting_approval"];
        Outcomes {
            done,
            failed: self.failed.unwrap_or_else(|| status(&["failed"])),
            cancelled: self.cancelled.unwrap_or_else(|| status(&["cancelled"])),
            skipped: self.skipped.unwrap_or_else(|| status(&["skipped"])),
            waiting: self.waiting.unwrap_or_else(|| status(&waiting)),
            remaining: self.remaining.unwrap_or_else(|| {
                let known: usize = self
                    .by_status
                    .iter()
                    .filter(|(k, _)| {
                        terminal.contains(&k.as_str()) || waiting.contains(&k.as_str())
                    })
                    .map(|(_, n)| n)
                    .sum();
                total.saturating_sub(known)
            }),
            total,
            percent: (done * 100).checked_div(total).unwrap_or(0),
        }
    }
}

/// A task of a mission.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Task {
    /// Id.
    pub id: Uuid,
    /// Plan-local key.
    pub key: String,
    /// Title.
    pub title: String,
    /// Kind of work.
    pub task_type: String,
    /// Status.
    pub status: String,
    /// Agent of the latest attempt.
    pub assigned_agent_id: Option<String>,
    /// Attempts so far.
    pub attempts: i32,
    /// Cost so far.
    pub actual_cost: f64,
    /// Latest error.
    pub last_error: Option<String>,
    /// Fields this client does not name.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// An event of a mission's log.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Event {
    /// Global id.
    pub id: i64,
    /// Gap-free position in the mission.
    pub seq: i64,
    /// The mission.
    pub mission_id: Uuid,
    /// The task, if any.
    pub task_id: Option<Uuid>,
    /// The attempt, if any.
    pub attempt_id: Option<Uuid>,
    /// What happened (see docs/events.md).
    pub kind: String,
    /// Who caused it.
    pub actor: String,
    /// Details.
    pub payload: Value,
    /// When.
    #[serde(with = "time::serde::rfc3339::option")]
    pub created_at: Option<OffsetDateTime>,
    /// Fields this client does not name.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `POST /v1/missions/{id}/review` body.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Review {
    /// `accept` or `reject`.
    pub decision: String,
    /// Why (for a rejection).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    /// Keys of the tasks to redo (for a rejection).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<String>,
}

/// `POST /v1/tokens` body.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CreateToken {
    /// admin, operator, stakeholder, agent or worker.
    pub role: String,
    /// A label.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// For role agent: the agent it acts as.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Seconds until it stops working (absent: never).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expires_in_secs: Option<u64>,
}

/// One API token as `GET /v1/tokens` shows it (never the secret).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct TokenInfo {
    /// Token id (events name it as `<role>:<id>`).
    pub id: Uuid,
    /// Role.
    pub role: String,
    /// Label.
    pub name: String,
    /// For agent tokens: the agent.
    pub agent_id: Option<String>,
    /// When it was made.
    #[serde(with = "time::serde::rfc3339::option")]
    pub created_at: Option<OffsetDateTime>,
    /// When it last authenticated a request (to the minute).
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_used_at: Option<OffsetDateTime>,
    /// When it stops working.
    #[serde(with = "time::serde::rfc3339::option")]
    pub expires_at: Option<OffsetDateTime>,
    /// When it was revoked.
    #[serde(with = "time::serde::rfc3339::option")]
    pub revoked_at: Option<OffsetDateTime>,
    /// Fields this client does not name.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A token just created (the secret is shown only this once).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CreatedToken {
    /// Token id.
    pub id: Uuid,
    /// Role.
    pub role: String,
    /// Label.
    pub name: String,
    /// The secret.
    pub token: String,
    /// Fields this client does not name.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One thing that waits for a person (`GET /v1/attention`, `MissionView.attention`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct AttentionItem {
    /// `plan_approval`, `results_review`, `human_task`, `budget`, `decision` or `tool_approval`.
    pub kind: String,
    /// The mission it belongs to.
    pub mission_id: Option<Uuid>,
    /// The mission's title (or goal).
    pub mission_title: Option<String>,
    /// The task, if it is about one.
    pub task_id: Option<Uuid>,
    /// The task's key, if it is about one.
    pub task_key: Option<String>,
    /// The decision or tool-approval id.
    pub id: Option<Uuid>,
    /// What waits and why, in one sentence.
    pub summary: String,
    /// Since when it waits.
    #[serde(with = "time::serde::rfc3339::option")]
    pub since: Option<OffsetDateTime>,
    /// The verbs that settle it.
    pub actions: Vec<String>,
    /// The command line that settles it.
    pub command: Option<String>,
    /// Fields this client does not name.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `GET /v1/attention`: everything in the workspace waiting for a person.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Attention {
    /// Oldest first.
    pub items: Vec<AttentionItem>,
    /// Fields this client does not name.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `POST /v1/missions/{id}/continue` body: what to do with each failed task.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ContinueMission {
    /// Keys (or ids) of the failed tasks to run again.
    pub retry: Vec<String>,
    /// Keys (or ids) of the failed tasks to skip.
    pub skip: Vec<String>,
    /// Guidance for the next attempts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
    /// Continue only if the mission is still at this version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
}

/// `POST /v1/missions/{id}/tasks/{task}/resolve` body.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ResolveTask {
    /// `complete`, `retry`, `skip` or `fail`.
    pub action: String,
    /// The result, for `complete`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    /// Guidance for the next attempt (`retry`) or the reason (others).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub feedback: Option<String>,
}
