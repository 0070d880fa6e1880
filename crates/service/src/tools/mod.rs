//! The chat-platform tools: one registry of mission tools for a chat model.
//!
//! Each tool has a name, a description written for a model, a JSON Schema of
//! its arguments, the roles that may call it, and [`Tool::invoke`], which runs
//! the same use cases (and role checks) as the REST handlers in
//! [`crate::api::missions`]. Two surfaces serve this one registry: plain
//! function-calling schemas at `/v1/tools` ([`crate::api::tools`]) and the MCP
//! server at `/mcp` ([`crate::api::mcp`]).
//!
//! Results are compact JSON meant to be read by a model: ids, status, task
//! counts by state, and a `next_step` sentence saying which tool to call next.

use std::{collections::BTreeMap, sync::LazyLock};

use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use uuid::Uuid;

pub mod agent;
pub(crate) mod catalogue;
pub mod docs;

use crate::{
    auth::{Principal, Role},
    coordination::{governance, tool_access, tool_policy},
    domain::MissionStatus,
    error::ApiError,
    missions::{
        self, ApproveRequest, CreateMission, MissionView, PlanningConfig, ReviewRequest,
        edit::{self, Removal, UpdateMission},
        human::{self, ResolveRequest},
        plan_library::{MAX_SEARCH_LIMIT, OutcomeFilter, search_cases},
        replan::{self, InstructionsRequest, RejectPlanRequest},
        roles::{APPROVERS, WRITERS},
    },
    planning::PlanSpec,
    store::missions as store,
};

/// What a tool needs to run its use case: the database, the planner's
/// settings and the client for calls to workers. Each surface (REST, MCP)
/// builds one from its own state.
#[derive(Clone, Copy)]
pub struct ToolContext<'a> {
    /// The database.
    pub pool: &'a sqlx::PgPool,
    /// Planning settings (creating and replanning missions).
    pub planning: &'a PlanningConfig,
    /// Client for calls to workers (cancel notices).
    pub http: &'a crate::egress::Client,
    /// Seconds a tool call waiting for approval waits for a person, unless
    /// the task's policy says otherwise.
    pub approval_timeout_secs: u64,
    /// Ticks whenever events are written (long-polling tools wait on it).
    pub wake: &'a tokio::sync::watch::Receiver<u64>,
    /// Announces commits after them (see [`crate::store::event_notify`]).
    pub notifier: Option<&'a crate::store::event_notify::Notifier>,
}

/// Reads are open to every role, as `GET /v1/missions` is.
const READERS: &[Role] = Role::ALL;

/// Longest task output shown inline, in characters of JSON.
const MAX_OUTPUT_CHARS: usize = 4_000;

/// Runs an agent tool: the caller (already allowed by role) and its
/// arguments (already checked against the schema, nulls dropped).
pub type Handler = for<'a> fn(
    &'a ToolContext<'a>,
    &'a Principal,
    Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>>;

/// Which use case a tool runs.
#[derive(Clone, Copy)]
enum Kind {
    /// An agent tool, run by its own handler ([`agent`]).
    Agent(Handler),
    CreateMission,
    ApprovePlan,
    RejectPlan,
    MissionStatus,
    ListMissions,
    CancelMission,
    UpdateMission,
    DeleteMission,
    SendInstructions,
    ReviewResults,
    ResolveTask,
    PauseMission,
    ResumeMission,
    ContinueMission,
    ResolveDecision,
    ResolveToolApproval,
    SearchPlanLibrary,
}

/// One tool of the registry.
#[derive(Debug)]
pub struct Tool {
    /// Name a model calls it by.
    pub name: &'static str,
    /// Short title for people.
    pub title: &'static str,
    /// What it does and when to use it, for a model.
    pub description: &'static str,
    /// JSON Schema (an object schema) of its arguments.
    pub parameters: Value,
    /// Roles allowed to call it.
    pub roles: &'static [Role],
    /// True for tools that change nothing.
    pub read_only: bool,
    /// Part of the catalogue it belongs to.
    pub group: Group,
    kind: Kind,
}

impl std::fmt::Debug for Kind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Handlers are function pointers; which tool it is shows in `name`.
        f.write_str(match self {
            Kind::Agent(_) => "Agent(handler)",
            _ => "Mission",
        })
    }
}

/// Which part of the catalogue a tool belongs to. Organisation roles grant
/// tools by name or by group (`group:communication`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// A person's mission tools (create, approve, review, …).
    Mission,
    /// Messages, requests and the contract net (seed 000 §20.2).
    Communication,
    /// Contractors, work packages and handoffs (§20.3).
    Workforce,
    /// Stakeholder profiles, decisions and governance checks (§20.4).
    Stakeholder,
    /// Plans, HTN decomposition and the plan library (§20.6).
    Planning,
    /// Desires and intention reconsideration (§20.7).
    Desire,
    /// Beliefs, goals, intentions and the BDI cycle (§20.8).
    Bdi,
    /// The agent's own task: blackboard, discovered work, handoff to an
    /// agent, blocker decisions, the mission's events.
    Task,
    /// BPMN workflows: create, inspect, validate and author (§20, tools 18–26).
    Workflow,
}

impl Group {
    /// The group's name in grants and docs.
    pub fn as_str(self) -> &'static str {
        match self {
            Group::Mission => "mission",
            Group::Communication => "communication",
            Group::Workforce => "workforce",
            Group::Stakeholder => "stakeholder",
            Group::Planning => "planning",
            Group::Desire => "desire",
            Group::Bdi => "bdi",
            Group::Task => "task",
            Group::Workflow => "workflow",
        }
    }
}

static TOOLS: LazyLock<Vec<Tool>> = LazyLock::new(|| {
    let mut tools = catalogue::build();
    tools.extend(agent::build());
    tools
});

/// Every tool, in a stable order.
pub fn all() -> &'static [Tool] {
    &TOOLS
}

/// The tool called `name`.
pub fn find(name: &str) -> Option<&'static Tool> {
    all().iter().find(|t| t.name == name)
}

/// The tools a caller with `role` may call (the ones worth showing a model).
pub fn visible_to(role: Role) -> impl Iterator<Item = &'static Tool> {
    all().iter().filter(move |t| t.allows(role))
}

/// The tools `who` may call: by role, and for an attempt token only those
/// that make sense inside one mission.
pub fn visible_for(who: &Principal) -> impl Iterator<Item = &'static Tool> {
    let scoped = who.attempt.is_some();
    visible_to(who.role).filter(move |t| !(scoped && t.name == "list_missions"))
}

impl Tool {
    /// Whether `role` may call it.
    pub fn allows(&self, role: Role) -> bool {
        self.roles.contains(&role)
    }

    /// The tool in OpenAI function-calling form.
    pub fn function_schema(&self) -> Value {
        json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            }
        })
    }

    /// Checks the caller's role and the arguments, then runs the tool.
    /// `args` is the arguments object (`null` counts as no arguments).
    pub async fn invoke(
        &self,
        cx: &ToolContext<'_>,
        who: &Principal,
        args: Value,
    ) -> Result<Value, ApiError> {
        who.require(self.roles)?;
        let mut args = check_arguments(&self.parameters, args)?;
        confine_to_mission(who, self, &args)?;
        if who.role == Role::Agent {
            let call = tool_access::Call {
                tool: self.name,
                group: self.group.as_str(),
                read_only: self.read_only,
                arguments: &args,
            };
            if let tool_access::Gate::Pending(approval) =
                tool_access::check(cx.pool, cx.approval_timeout_secs, who, call).await?
            {
                return Ok(approval);
            }
        }
        match self.kind {
            Kind::Agent(handler) => handler(cx, who, args).await,
            Kind::CreateMission => {
                let req: CreateMission = request(args)?;
                let view = missions::create(cx.pool, cx.planning, who, req).await?;
                Ok(mission_result(&view, false))
            }
            Kind::ApprovePlan => {
                let id = mission_id(&mut args)?;
                let req: ApproveRequest = request(args)?;
                let view = missions::approve(cx.pool, cx.notifier, who, id, req).await?;
                Ok(mission_result(&view, false))
            }
            Kind::RejectPlan => {
                let id = mission_id(&mut args)?;
                let req: RejectPlanRequest = request(args)?;
                let view = replan::reject_plan(cx.pool, cx.planning, who, id, req).await?;
                Ok(mission_result(&view, false))
            }
            Kind::MissionStatus => {
                let id = mission_id(&mut args)?;
                let outputs = args
                    .get("include_outputs")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let view = missions::view(cx.pool, who.workspace_id, id).await?;
                Ok(mission_result(&view, outputs))
            }
            Kind::ListMissions => list_missions(cx, who, &args).await,
            Kind::CancelMission => {
                let id = mission_id(&mut args)?;
                let view = missions::cancel(cx.pool, cx.http, who, id).await?;
                Ok(mission_result(&view, false))
            }
            Kind::UpdateMission => {
                let id = mission_id(&mut args)?;
                let req = update_request(args)?;
                let view = edit::update(cx.pool, who, id, req).await?;
                Ok(mission_result(&view, false))
            }
            Kind::DeleteMission => {
                let id = mission_id(&mut args)?;
                let archive = args
                    .get("archive")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                Ok(match edit::remove(cx.pool, who, id, archive).await? {
                    Removal::Deleted => json!({
                        "mission_id": id,
                        "deleted": true,
                        "next_step": "The mission and its tasks, attempts and events are gone; a mission.deleted event in the workspace log records it.",
                    }),
                    Removal::Archived(view) => mission_result(&view, false),
                })
            }
            Kind::SendInstructions => {
                let id = mission_id(&mut args)?;
                let req: InstructionsRequest = request(args)?;
                let view = replan::instructions(cx.pool, cx.planning, who, id, req).await?;
                Ok(mission_result(&view, false))
            }
            Kind::ReviewResults => {
                let id = mission_id(&mut args)?;
                let req: ReviewRequest = request(args)?;
                let view = missions::review(cx.pool, who, id, req).await?;
                Ok(mission_result(&view, false))
            }
            Kind::ResolveTask => {
                let id = mission_id(&mut args)?;
                let task = match args.remove("task") {
                    Some(Value::String(t)) => t,
                    _ => return Err(ApiError::invalid("task", "task is required")),
                };
                let req: ResolveRequest = request(args)?;
                let view = human::resolve(cx.pool, cx.http, who, id, &task, req).await?;
                Ok(mission_result(&view, false))
            }
            Kind::PauseMission => {
                let id = mission_id(&mut args)?;
                let view = missions::pause(cx.pool, who, id).await?;
                Ok(mission_result(&view, false))
            }
            Kind::ResumeMission => {
                let id = mission_id(&mut args)?;
                let view = missions::resume(cx.pool, cx.http, who, id).await?;
                Ok(mission_result(&view, false))
            }
            Kind::ContinueMission => {
                let id = mission_id(&mut args)?;
                let req: crate::missions::continuation::ContinueRequest = request(args)?;
                let view =
                    crate::missions::continuation::continue_failed(cx.pool, who, id, req).await?;
                Ok(mission_result(&view, false))
            }
            Kind::ResolveDecision => {
                let id = args
                    .remove("decision_id")
                    .and_then(|v| v.as_str().and_then(|s| s.parse::<Uuid>().ok()))
                    .ok_or_else(|| {
                        ApiError::invalid("decision_id", "decision_id must be a decision's id")
                    })?;
                let req: governance::ResolveRequest = request(args)?;
                let replan = cx.planning.llm.is_some();
                let d = governance::resolve(cx.pool, replan, who, id, req).await?;
                Ok(serde_json::to_value(d).unwrap_or_default())
            }
            Kind::ResolveToolApproval => {
                let id = args
                    .remove("approval_id")
                    .and_then(|v| v.as_str().and_then(|s| s.parse::<Uuid>().ok()))
                    .ok_or_else(|| {
                        ApiError::invalid("approval_id", "approval_id must be a tool approval's id")
                    })?;
                let req: tool_policy::ResolveApproval = request(args)?;
                let a = tool_policy::resolve(cx.pool, who, id, req).await?;
                Ok(serde_json::to_value(a).unwrap_or_default())
            }
            Kind::SearchPlanLibrary => search_plan_library(cx, who, &args).await,
        }
    }
}

/// An attempt token acts inside its mission only: a tool naming another
/// mission, or listing all of them, is refused.
fn confine_to_mission(
    who: &Principal,
    tool: &Tool,
    args: &Map<String, Value>,
) -> Result<(), ApiError> {
    let Some(scope) = who.attempt else {
        return Ok(());
    };
    if tool.name == "list_missions" {
        return Err(crate::auth::Forbidden(format!(
            "an attempt token acts inside mission {} only; mission_status shows it",
            scope.mission_id
        ))
        .into());
    }
    match args.get("mission_id").and_then(Value::as_str) {
        Some(id) if id.parse::<Uuid>().ok() != Some(scope.mission_id) => {
            Err(crate::auth::Forbidden(format!(
                "an attempt token acts inside mission {} only, not {id}",
                scope.mission_id
            ))
            .into())
        }
        _ => Ok(()),
    }
}

/// Takes the `mission_id` argument (already checked to be a UUID).
fn mission_id(args: &mut Map<String, Value>) -> Result<Uuid, ApiError> {
    args.remove("mission_id")
        .and_then(|v| v.as_str().and_then(|s| s.parse().ok()))
        .ok_or_else(|| ApiError::invalid("mission_id", "mission_id must be a mission's id"))
}

/// The `update_mission` arguments as the `PATCH` body they mirror. A model
/// cannot send `null` (the registry drops it as "not given"), so `clear`
/// names the fields to remove instead.
fn update_request(mut args: Map<String, Value>) -> Result<UpdateMission, ApiError> {
    let clear = match args.remove("clear") {
        Some(Value::Array(names)) => names,
        _ => Vec::new(),
    };
    // A name cleared twice is cleared once.
    let mut cleared: Vec<&str> = Vec::new();
    for name in &clear {
        let name = name.as_str().unwrap_or_default();
        if cleared.contains(&name) {
            continue;
        }
        cleared.push(name);
        if !matches!(name, "title" | "budget" | "deadline") {
            return Err(ApiError::invalid(
                "clear",
                format!("clear names title, budget or deadline, not '{name}'"),
            ));
        }
        if args.contains_key(name) {
            return Err(ApiError::invalid(
                name,
                format!("'{name}' is both given and cleared; do one or the other"),
            ));
        }
        args.insert(name.to_owned(), Value::Null);
    }
    request(args)
}

/// Turns the remaining arguments into the REST request body they mirror, so
/// a tool and its REST route accept the same things.
fn request<T: DeserializeOwned>(args: Map<String, Value>) -> Result<T, ApiError> {
    // Plans are nested deeply enough that serde's message alone would not say
    // where the problem is.
    if let Some(plan) = args.get("plan") {
        serde_json::from_value::<PlanSpec>(plan.clone())
            .map_err(|e| ApiError::invalid("plan", format!("plan is not valid: {e}")))?;
    }
    serde_path_to_error::deserialize(Value::Object(args)).map_err(|e| {
        let path = e.path().to_string();
        ApiError::undeserializable("invalid arguments", &path, &e.into_inner())
    })
}

async fn list_missions(
    cx: &ToolContext<'_>,
    who: &Principal,
    args: &Map<String, Value>,
) -> Result<Value, ApiError> {
    let status = args
        .get("status")
        .and_then(Value::as_str)
        .map(str::parse::<MissionStatus>)
        .transpose()?;
    let limit = args.get("limit").and_then(Value::as_i64).unwrap_or(20);
    let cursor = args
        .get("cursor")
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<Uuid>().ok());
    // Archived missions stay out, as in `GET /v1/missions`.
    let rows = store::list(
        cx.pool,
        who.workspace_id,
        status,
        cursor,
        coordinator_core::paging::probe(limit),
        false,
    )
    .await?;
    let (rows, next_cursor) = coordinator_core::paging::split(rows, limit, |r| r.id);
    let missions: Vec<Value> = rows
        .into_iter()
        .map(|r| {
            json!({
                "mission_id": r.id,
                "goal": r.goal,
                "title": r.title,
                "labels": r.labels,
                "status": r.status,
                "autonomy": r.autonomy,
                "plan_version": r.plan_version,
                "created_at": rfc3339(r.created_at),
                "finished_at": r.finished_at.map(rfc3339),
            })
        })
        .collect();
    let next_step = match (missions.is_empty(), next_cursor) {
        (true, _) => "No missions match; create_mission starts one.".to_owned(),
        (false, Some(c)) => format!(
            "Newest first. More exist: call list_missions with cursor \"{c}\". Call mission_status with a mission_id for its tasks."
        ),
        (false, None) => {
            "Newest first. Call mission_status with a mission_id for its tasks.".to_owned()
        }
    };
    Ok(json!({
        "count": missions.len(),
        "missions": missions,
        "next_cursor": next_cursor,
        "next_step": next_step,
    }))
}

async fn search_plan_library(
    cx: &ToolContext<'_>,
    who: &Principal,
    args: &Map<String, Value>,
) -> Result<Value, ApiError> {
    let goal = args
        .get("goal")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .ok_or_else(|| ApiError::invalid("goal", "goal must not be blank"))?;
    let outcome = match args.get("outcome").and_then(Value::as_str) {
        Some("success") => OutcomeFilter::Success,
        Some("failure") => OutcomeFilter::Failure,
        _ => OutcomeFilter::Any,
    };
    let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(5) as usize;
    let hits = search_cases(
        cx.pool,
        who.workspace_id,
        goal,
        None,
        outcome,
        limit.clamp(1, MAX_SEARCH_LIMIT),
    )
    .await?;
    let cases: Vec<Value> = hits
        .into_iter()
        .map(|h| {
            json!({
                "case_id": h.id,
                "mission_id": h.mission_id,
                "goal": h.goal,
                "score": (h.score * 1000.0).round() / 1000.0,
                "success": h.success,
                "lessons": h.lessons,
            })
        })
        .collect();
    let next_step = if cases.is_empty() {
        "No finished mission resembles this goal yet; create_mission plans it from the method library."
    } else {
        "Most similar first. A success case scoring at least the case threshold (0.75 by default) is reused by the planner when you create_mission with a goal like it; its lessons say what went wrong before."
    };
    Ok(json!({ "count": cases.len(), "cases": cases, "next_step": next_step }))
}

fn rfc3339(t: time::OffsetDateTime) -> Value {
    t.format(&time::format_description::well_known::Rfc3339)
        .map(Value::String)
        .unwrap_or(Value::Null)
}

/// A mission as a model reads it: status, counts, tasks by key, what next.
pub fn mission_result(v: &MissionView, include_outputs: bool) -> Value {
    let key_of: BTreeMap<Uuid, &str> = v.tasks.iter().map(|t| (t.id, t.key.as_str())).collect();
    let tasks: Vec<Value> = v
        .tasks
        .iter()
        .map(|t| {
            let mut task = json!({
                "key": t.key,
                "title": t.title,
                "status": t.status,
                "agent": t.assigned_agent_id,
                "depends_on": t.depends_on.iter().filter_map(|d| key_of.get(d)).collect::<Vec<_>>(),
                "attempts": t.attempts,
            });
            if let Some(error) = &t.last_error {
                task["last_error"] = json!(error);
            }
            if include_outputs && let Some(output) = &t.output {
                task["output"] = shorten(output);
            }
            task
        })
        .collect();
    json!({
        "mission_id": v.id,
        "goal": v.goal,
        "title": v.title,
        "version": v.version,
        "status": v.status,
        "autonomy": v.autonomy,
        "plan_version": v.plan_version,
        "planner": v.planner,
        "progress": v.progress,
        "budget": v.budget,
        "deadline": v.deadline.map(rfc3339),
        "labels": v.labels,
        "archived_at": v.archived_at.map(rfc3339),
        "failure_reason": v.failure_reason,
        "tasks": tasks,
        "created_at": rfc3339(v.created_at),
        "finished_at": v.finished_at.map(rfc3339),
        "next_step": next_step(v),
    })
}

/// A task output, or its beginning when it is too long to show inline.
fn shorten(output: &Value) -> Value {
    let text = output.to_string();
    if text.chars().count() <= MAX_OUTPUT_CHARS {
        return output.clone();
    }
    let preview: String = text.chars().take(MAX_OUTPUT_CHARS).collect();
    json!({ "truncated": true, "preview": preview })
}

/// What the caller should do next, in one or two sentences.
fn next_step(v: &MissionView) -> String {
    let waiting: Vec<&str> = v
        .tasks
        .iter()
        .filter(|t| t.status == "awaiting_human")
        .map(|t| t.key.as_str())
        .collect();
    let status = v.status.parse::<MissionStatus>().ok();
    match status {
        Some(MissionStatus::Planning) => {
            "The plan is being made; call mission_status again in a few seconds.".to_owned()
        }
        Some(MissionStatus::AwaitingApproval) => format!(
            "The plan ({}) awaits approval: show it to the user, then call approve_plan, \
             or reject_plan with feedback to get a different plan.",
            coordinator_core::numbers::count(v.progress.total, "task", "tasks")
        ),
        Some(MissionStatus::Executing | MissionStatus::Paused) if !waiting.is_empty() => format!(
            "Task(s) {} need a person: call resolve_task with action complete, retry, skip or fail.",
            waiting.join(", ")
        ),
        Some(MissionStatus::Executing) => format!(
            "Running: {}; call mission_status to follow progress.",
            v.progress.line()
        ),
        Some(MissionStatus::Paused) => {
            "The mission is paused: nothing new is dispatched; call resume_mission to continue."
                .to_owned()
        }
        Some(MissionStatus::AwaitingReview) => {
            "Every task finished and the results await review: read them with mission_status \
             (include_outputs: true), then call review_results with decision accept, or reject \
             with feedback."
                .to_owned()
        }
        Some(MissionStatus::Completed) => {
            "The mission completed; call mission_status with include_outputs: true to read the results."
                .to_owned()
        }
        Some(MissionStatus::Failed) => format!(
            "The mission failed: {}. Tell the user; continue_mission retries or skips the failed \
             tasks and goes on from there (what succeeded stays).",
            v.failure_reason.as_deref().unwrap_or("no reason recorded")
        ),
        Some(MissionStatus::Cancelled) => "The mission was cancelled.".to_owned(),
        None => "Call mission_status to follow it.".to_owned(),
    }
}

/// Checks `args` against a tool's object schema (top-level properties:
/// unknown and missing names, types, enums, bounds, UUIDs) so that a model
/// hears which argument is wrong. `null` stands for "not given".
fn check_arguments(schema: &Value, args: Value) -> Result<Map<String, Value>, ApiError> {
    let mut args = match args {
        Value::Null => Map::new(),
        Value::Object(map) => map,
        _ => {
            return Err(ApiError::invalid(
                "arguments",
                "the arguments must be a JSON object",
            ));
        }
    };
    let empty = Map::new();
    let properties = schema["properties"].as_object().unwrap_or(&empty);
    // Names first: an unknown one is refused even as `null`.
    for name in args.keys() {
        if !properties.contains_key(name) {
            let known: Vec<&str> = properties.keys().map(String::as_str).collect();
            return Err(ApiError::invalid(
                name,
                format!(
                    "unknown argument '{name}' (expected: {})",
                    if known.is_empty() {
                        "none".to_owned()
                    } else {
                        known.join(", ")
                    }
                ),
            ));
        }
    }
    args.retain(|_, v| !v.is_null());
    for name in schema["required"].as_array().into_iter().flatten() {
        if let Some(name) = name.as_str()
            && !args.contains_key(name)
        {
            return Err(ApiError::invalid(
                name,
                format!("missing required argument '{name}'"),
            ));
        }
    }
    for (name, value) in &args {
        check_value(name, &properties[name.as_str()], value)?;
    }
    Ok(args)
}

fn check_value(name: &str, schema: &Value, value: &Value) -> Result<(), ApiError> {
    let fits = match schema["type"].as_str() {
        Some("string") => value.is_string(),
        Some("integer") => value.is_i64() || value.is_u64(),
        Some("number") => value.is_number(),
        Some("boolean") => value.is_boolean(),
        Some("object") => value.is_object(),
        Some("array") => value.is_array(),
        _ => true,
    };
    if !fits {
        return Err(ApiError::invalid(
            name,
            format!(
                "argument '{name}' must be of type {}",
                schema["type"].as_str().unwrap_or("any")
            ),
        ));
    }
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.contains(value)
    {
        let allowed: Vec<String> = allowed.iter().map(Value::to_string).collect();
        return Err(ApiError::invalid(
            name,
            format!("argument '{name}' must be one of {}", allowed.join(", ")),
        ));
    }
    if let Some(n) = value.as_f64() {
        let below = schema["minimum"].as_f64().is_some_and(|min| n < min);
        let above = schema["maximum"].as_f64().is_some_and(|max| n > max);
        if below || above {
            return Err(ApiError::invalid(
                name,
                format!(
                    "argument '{name}' must be between {} and {}",
                    schema["minimum"], schema["maximum"]
                ),
            ));
        }
    }
    if let Some(s) = value.as_str() {
        if schema["format"] == "uuid" && s.parse::<Uuid>().is_err() {
            return Err(ApiError::invalid(
                name,
                format!("argument '{name}' must be an id (a UUID), not '{s}'"),
            ));
        }
        if schema["minLength"]
            .as_u64()
            .is_some_and(|min| s.trim().len() < min as usize)
        {
            return Err(ApiError::invalid(
                name,
                format!("argument '{name}' must not be empty"),
            ));
        }
    }
    if let Some(items) = value.as_array()
        && schema["items"]["type"] == "string"
        && items.iter().any(|i| !i.is_string())
    {
        return Err(ApiError::invalid(
            name,
            format!("argument '{name}' must be a list of strings"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_an_object_schema_whose_required_names_exist() {
        let mut names: Vec<&str> = all().iter().map(|t| t.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), all().len(), "tool names are unique");
        for tool in all() {
            assert_eq!(tool.parameters["type"], "object", "{}", tool.name);
            let props = tool.parameters["properties"].as_object().unwrap();
            for r in tool.parameters["required"].as_array().unwrap() {
                assert!(
                    props.contains_key(r.as_str().unwrap()),
                    "{}: {r}",
                    tool.name
                );
            }
            assert!(!tool.description.is_empty());
        }
    }

    fn field(e: &ApiError) -> Value {
        match e {
            ApiError::BadRequest { details, .. } => details["field"].clone(),
            other => panic!("not a 400: {other:?}"),
        }
    }

    #[test]
    fn arguments_are_checked_by_name() {
        let schema = &find("create_mission").unwrap().parameters;
        let e = check_arguments(schema, json!({})).unwrap_err();
        assert_eq!(field(&e), "goal");
        let e = check_arguments(schema, json!({"goal": "x", "colour": "red"})).unwrap_err();
        assert_eq!(field(&e), "colour");
        let e = check_arguments(schema, json!({"goal": 3})).unwrap_err();
        assert_eq!(field(&e), "goal");
        let e = check_arguments(schema, json!({"goal": "  "})).unwrap_err();
        assert_eq!(field(&e), "goal");
        let e = check_arguments(schema, json!({"goal": "x", "autonomy": "yolo"})).unwrap_err();
        assert_eq!(field(&e), "autonomy");
        let e = check_arguments(schema, json!({"goal": "x", "priority": 101})).unwrap_err();
        assert_eq!(field(&e), "priority");
        let e = check_arguments(schema, json!({"goal": "x", "priority": 1.5})).unwrap_err();
        assert_eq!(field(&e), "priority");
        let e = check_arguments(schema, json!(["goal"])).unwrap_err();
        assert_eq!(field(&e), "arguments");
        // null means "not given".
        let ok = check_arguments(schema, json!({"goal": "x", "budget": null})).unwrap();
        assert!(!ok.contains_key("budget"));

        let schema = &find("mission_status").unwrap().parameters;
        let e = check_arguments(schema, json!({"mission_id": "m-1"})).unwrap_err();
        assert_eq!(field(&e), "mission_id");
    }

    #[test]
    fn a_field_cleared_twice_is_cleared_once() {
        let req = update_request(
            json!({"clear": ["title", "title"]})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        );
        assert!(req.is_ok(), "{:?}", req.err());
        let e = update_request(
            json!({"title": "x", "clear": ["title"]})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("both given and cleared"), "{e}");
    }

    #[test]
    fn a_bad_plan_is_blamed_on_the_plan() {
        let mut args = Map::new();
        args.insert("goal".into(), json!("x"));
        args.insert("plan".into(), json!({"tasks": [{"id": "a"}]}));
        let e = request::<CreateMission>(args).unwrap_err();
        assert_eq!(field(&e), "plan");
    }

    #[test]
    fn stakeholders_see_only_what_they_may_call() {
        let names: Vec<&str> = visible_to(Role::Stakeholder).map(|t| t.name).collect();
        assert!(names.contains(&"approve_plan") && names.contains(&"mission_status"));
        assert!(!names.contains(&"create_mission"));
        assert!(names.contains(&"resolve_decision"));
        // The stakeholder's own tools, not an agent's.
        assert!(names.contains(&"decision_resolve") && names.contains(&"decision_review"));
        assert!(!names.contains(&"contractor_add") && !names.contains(&"raise_blocker"));
        // Admins see every tool but the stakeholder's own decisions and the agents' tools.
        let agents_or_stakeholders = all()
            .iter()
            .filter(|t| t.roles == agent::AGENTS || t.roles == agent::STAKEHOLDERS)
            .count();
        assert_eq!(
            visible_to(Role::Admin).count(),
            all().len() - agents_or_stakeholders
        );
        assert!(!find("resolve_decision").unwrap().allows(Role::Admin));
        assert!(!find("decision_resolve").unwrap().allows(Role::Agent));
    }
}
