//! The workforce tools (seed 000 §20.3): contractors (people who take work
//! packages), their trust, work packages, handoffs; and `handoff_task`, an
//! agent handing its current task to another agent. Each runs the use case
//! its REST route runs (`coordination::workforce`, `coordination::handoffs`).

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::{answer, attempt, body, object, required_uuid, tool, uuid_arg};
use crate::{
    auth::Principal,
    coordination::{
        handoffs::{self, CreateHandoff, HandToAgent},
        workforce::{
            self as wf, AddContractor, AssignRequest, Availability, CreatePackage, PackageStatus,
            ProgressRequest, TransitionRequest, TrustRequest,
        },
    },
    error::ApiError,
    store::{handoffs::HandoffView, workforce::PackageFilter},
    tools::{Group, Tool, ToolContext},
};

const AVAILABILITY: [&str; 4] = ["full-time", "part-time", "on-call", "unavailable"];
const STATUSES: [&str; 7] = [
    "draft",
    "open",
    "assigned",
    "in_progress",
    "review",
    "completed",
    "cancelled",
];
const RATINGS: [&str; 6] = [
    "excellent",
    "good",
    "satisfactory",
    "neutral",
    "unsatisfactory",
    "poor",
];

fn skills_arg(what: &str) -> Value {
    json!({ "type": "array", "items": { "type": "string" }, "maxItems": 100, "description": what })
}

fn payload_list(what: &str) -> Value {
    json!({ "type": "array", "items": { "type": "object" }, "maxItems": 100, "description": what })
}

/// The tools of this group.
pub(super) fn tools() -> Vec<Tool> {
    vec![
        tool(
            Group::Workforce,
            "contractor_add",
            "Register a contractor",
            "Register a contractor: a PERSON who can take work packages (not an agent). They \
             start at trust 0.5. Returns the contractor with its id.",
            object(
                json!({
                    "name": { "type": "string", "minLength": 1, "maxLength": 200, "description": "Their name." },
                    "skills": skills_arg("Their skills, e.g. [\"python\", \"data-analysis\"]."),
                    "hourly_rate": { "type": "number", "minimum": 0, "description": "Hourly rate (default 0)." },
                    "availability": { "type": "string", "enum": AVAILABILITY, "description": "Default full-time." },
                    "contact": { "type": "string", "maxLength": 500, "description": "How to reach them." },
                }),
                &["name"],
            ),
            false,
            contractor_add,
        ),
        tool(
            Group::Workforce,
            "contractor_list",
            "List contractors",
            "List contractors, optionally only those having every skill of skill_filter, at \
             least min_trust (0–1) and a given availability.",
            object(
                json!({
                    "skill_filter": skills_arg("Only contractors with all of these skills."),
                    "min_trust": { "type": "number", "minimum": 0, "maximum": 1, "description": "Only contractors with at least this trust." },
                    "availability": { "type": "string", "enum": AVAILABILITY, "description": "Only this availability." },
                    "limit": { "type": "integer", "minimum": 1, "maximum": 500, "description": "At most this many (default 100)." },
                }),
                &[],
            ),
            true,
            contractor_list,
        ),
        tool(
            Group::Workforce,
            "contractor_trust_update",
            "Rate a contractor",
            "Rate a contractor's work: satisfactory or better raises trust by 0.1, unsatisfactory \
             or poor lowers it by 0.1, neutral keeps it (clamped to 0–1). Completing a work \
             package with work_package_update rates its contractor already; use this for other \
             work.",
            object(
                json!({
                    "contractor_id": { "type": "string", "format": "uuid", "description": "The contractor." },
                    "quality_rating": { "type": "string", "enum": RATINGS, "description": "How well they did." },
                    "reason": { "type": "string", "minLength": 1, "maxLength": 2000, "description": "Why." },
                    "work_package_id": { "type": "string", "format": "uuid", "description": "Their work package this is about." },
                }),
                &["contractor_id", "quality_rating", "reason"],
            ),
            false,
            contractor_trust_update,
        ),
        package_create_tool(),
        tool(
            Group::Workforce,
            "work_package_assign",
            "Assign a work package",
            "Assign an open work package to a contractor (default: the best-matching available \
             contractor now).",
            object(
                json!({
                    "work_package_id": { "type": "string", "format": "uuid", "description": "The package." },
                    "contractor_id": { "type": "string", "format": "uuid", "description": "The contractor (default: the best candidate)." },
                    "note": { "type": "string", "minLength": 1, "maxLength": 4000, "description": "A note to append." },
                    "version": { "type": "integer", "minimum": 1, "description": "The version you read (refused if it changed)." },
                }),
                &["work_package_id"],
            ),
            false,
            work_package_assign,
        ),
        package_update_tool(),
        tool(
            Group::Workforce,
            "work_package_list",
            "List work packages",
            "List work packages, optionally of one status, contractor, mission or task.",
            object(
                json!({
                    "status_filter": { "type": "string", "enum": STATUSES, "description": "Only packages in this status." },
                    "contractor_filter": { "type": "string", "format": "uuid", "description": "Only this contractor's packages." },
                    "mission_id": { "type": "string", "format": "uuid", "description": "Only packages of this mission." },
                    "task_id": { "type": "string", "format": "uuid", "description": "Only packages delegating this task." },
                    "limit": { "type": "integer", "minimum": 1, "maximum": 500, "description": "At most this many (default 100)." },
                }),
                &[],
            ),
            true,
            work_package_list,
        ),
        handoff_tool(),
        handoff_task_tool(),
    ]
}

fn contractor_add<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let req: AddContractor = body(args)?;
        let c = wf::add_contractor(cx.pool, who, req).await?;
        let mut out = answer(&c)?;
        out["contractor_id"] = json!(c.id);
        Ok(out)
    })
}

fn contractor_list<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let skills: Vec<String> = match args.get("skill_filter") {
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|_| ApiError::invalid("skill_filter", "skill_filter must be strings"))?,
            None => Vec::new(),
        };
        let availability = args
            .get("availability")
            .and_then(Value::as_str)
            .map(str::parse::<Availability>)
            .transpose()?;
        let min_trust = args.get("min_trust").and_then(Value::as_f64);
        let limit = args.get("limit").and_then(Value::as_i64).unwrap_or(100);
        let list = wf::contractors(cx.pool, who, &skills, min_trust, availability, limit).await?;
        Ok(json!({ "count": list.len(), "contractors": list }))
    })
}

fn contractor_trust_update<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let id = required_uuid(&mut args, "contractor_id")?;
        let req: TrustRequest = body(args)?;
        let c = wf::update_trust(cx.pool, who, id, req).await?;
        let change = c
            .trust_history
            .as_ref()
            .and_then(|h| h.last())
            .map(answer)
            .transpose()?;
        Ok(
            json!({ "contractor_id": c.id, "name": c.name, "trust_score": c.trust_score, "change": change }),
        )
    })
}

fn package_create_tool() -> Tool {
    tool(
        Group::Workforce,
        "work_package_create",
        "Create a work package",
        "Create a work package for a contractor (a person) to do. It starts as a draft; with \
         open: true it opens at once and the answer lists candidate contractors (skill overlap \
         × trust, available, trust at least 0.5), best first.",
        object(
            json!({
                "title": { "type": "string", "minLength": 1, "maxLength": 200, "description": "Title." },
                "description": { "type": "string", "maxLength": 10000, "description": "What to do." },
                "required_skills": skills_arg("Skills needed."),
                "priority": { "type": "string", "enum": ["low", "normal", "high", "critical"], "description": "Default normal." },
                "deadline": { "type": "string", "description": "Due date, YYYY-MM-DD." },
                "budget": { "type": "number", "minimum": 0, "description": "Budget." },
                "open": { "type": "boolean", "description": "Open it now and match candidates (default false)." },
            }),
            &["title"],
        ),
        false,
        work_package_create,
    )
}

fn work_package_create<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let req: CreatePackage = body(args)?;
        let p = wf::create_package(cx.pool, cx.http, who, req).await?;
        let mut out = answer(&p)?;
        out["work_package_id"] = json!(p.id);
        Ok(out)
    })
}

fn work_package_assign<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let id = required_uuid(&mut args, "work_package_id")?;
        let req: AssignRequest = body(args)?;
        answer(&wf::assign(cx.pool, cx.http, who, id, req).await?)
    })
}

fn package_update_tool() -> Tool {
    tool(
        Group::Workforce,
        "work_package_update",
        "Update a work package",
        "Record progress or a note on a work package, or move it through its lifecycle with \
         status: draft → open → assigned → in_progress → review → completed (needs \
         quality_rating, which updates the contractor's trust; a delegated mission task \
         completes with the deliverable), review → in_progress for rework, anything not \
         finished → cancelled.",
        object(
            json!({
                "work_package_id": { "type": "string", "format": "uuid", "description": "The package." },
                "status": { "type": "string", "enum": STATUSES, "description": "Move to this status (omit to only record progress or notes)." },
                "progress": { "type": "integer", "minimum": 0, "maximum": 100, "description": "Percent done." },
                "notes": { "type": "string", "minLength": 1, "maxLength": 4000, "description": "A note to append." },
                "deliverable": { "description": "What was delivered (moving to review or completed)." },
                "quality_rating": { "type": "string", "enum": RATINGS, "description": "Required when completing." },
                "reason": { "type": "string", "maxLength": 2000, "description": "Why (kept with the rating and events)." },
                "version": { "type": "integer", "minimum": 1, "description": "The version you read (refused if it changed)." },
            }),
            &["work_package_id"],
        ),
        false,
        work_package_update,
    )
}

fn work_package_update<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let id = required_uuid(&mut args, "work_package_id")?;
        let progress = args
            .get("progress")
            .and_then(Value::as_i64)
            .map(|p| i32::try_from(p).unwrap_or(i32::MAX));
        let note = args.get("notes").and_then(Value::as_str).map(str::to_owned);
        let version = args.get("version").and_then(Value::as_i64);
        let Some(status) = args.get("status").and_then(Value::as_str) else {
            for only_with_status in ["deliverable", "quality_rating", "reason"] {
                if args.contains_key(only_with_status) {
                    return Err(ApiError::invalid(
                        only_with_status,
                        format!("{only_with_status} is only taken with a status to move to"),
                    ));
                }
            }
            let req = ProgressRequest {
                progress,
                note,
                version,
            };
            return answer(&wf::record_progress(cx.pool, who, id, req).await?);
        };
        let req = TransitionRequest {
            to: status.parse::<PackageStatus>()?,
            version,
            contractor_id: None,
            progress,
            note,
            deliverable: args.get("deliverable").cloned(),
            quality_rating: args
                .get("quality_rating")
                .and_then(Value::as_str)
                .map(str::parse)
                .transpose()?,
            reason: args
                .get("reason")
                .and_then(Value::as_str)
                .map(str::to_owned),
        };
        answer(&wf::transition(cx.pool, cx.http, who, id, req).await?)
    })
}

fn work_package_list<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let status = args
            .get("status_filter")
            .and_then(Value::as_str)
            .map(str::parse::<PackageStatus>)
            .transpose()?;
        let filter = PackageFilter {
            status: status.map(|s| s.as_str().to_owned()),
            contractor_id: uuid_arg(&mut args, "contractor_filter")?,
            task_id: uuid_arg(&mut args, "task_id")?,
            mission_id: uuid_arg(&mut args, "mission_id")?,
        };
        let limit = args.get("limit").and_then(Value::as_i64).unwrap_or(100);
        let list = wf::packages(cx.pool, who, &filter, limit).await?;
        Ok(json!({ "count": list.len(), "work_packages": list }))
    })
}

fn handoff_tool() -> Tool {
    tool(
        Group::Workforce,
        "handoff",
        "Hand a task over with its context",
        "Hand a task over with everything the next owner needs (context_summary, active_tasks, \
         open_decisions, artifacts). agent_to_human: a person takes the task over (it waits for \
         them; a running attempt of yours ends). agent_to_agent (with the attempt token of the \
         task's dispatch): the agent named in `to` takes over your running task, as with \
         handoff_task. human_to_agent is for people. `from` is you (omit it).",
        object(
            json!({
                "direction": { "type": "string", "enum": ["agent_to_human", "human_to_agent", "agent_to_agent"], "description": "Which way the work goes." },
                "from": { "type": "string", "description": "Who hands off: your agent id (default)." },
                "to": { "type": "string", "minLength": 1, "maxLength": 128, "description": "Who takes over: a person, or an agent id for agent_to_agent." },
                "task_id": { "type": "string", "format": "uuid", "description": "The task (default: your current task)." },
                "context_summary": { "type": "string", "minLength": 1, "maxLength": 5000, "description": "What the next owner needs to know." },
                "active_tasks": payload_list("[{task_id, description, status, blockers}]"),
                "open_decisions": payload_list("[{decision_id, description, status}]"),
                "artifacts": payload_list("[{name, path}]"),
            }),
            &["direction", "to", "context_summary"],
        ),
        false,
        handoff,
    )
}

fn handoff<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        if !args.contains_key("task_id") {
            // Optional for an attempt token, required of others (422).
            let task = who
                .attempt
                .map(|a| a.task_id)
                .ok_or_else(|| ApiError::Unprocessable {
                    code: "task_required",
                    message: "task_id is required outside a task".into(),
                    details: json!({ "field": "task_id" }),
                })?;
            args.insert("task_id".into(), json!(task));
        }
        let req: CreateHandoff = body(args)?;
        let h = handoffs::create(cx.pool, cx.http, who, req).await?;
        handed(&h)
    })
}

fn handoff_task_tool() -> Tool {
    tool(
        Group::Task,
        "handoff_task",
        "Hand my task to another agent",
        "Hand your current task to an agent better placed to do it: name it (to_agent) or a \
         role whose best-scoring online agent should take it (to_role), and say what it needs \
         to know (context_summary; it reaches the agent as its dispatch's feedback). Your \
         attempt ends at once without counting as a failure (the answer says attempt_ended: \
         true): stop working on the task and do not report on it (a report is refused). Refused for yourself, an unknown or offline \
         agent, one that lacks the task's skills, or one the organisation spec prohibits.",
        object(
            json!({
                "to_agent": { "type": "string", "minLength": 1, "maxLength": 128, "description": "The agent to take over." },
                "to_role": { "type": "string", "minLength": 1, "maxLength": 128, "description": "Or: a role; its best-scoring online agent takes over." },
                "context_summary": { "type": "string", "minLength": 1, "maxLength": 5000, "description": "What the next agent needs to know: what is done, what is left, why you hand it over." },
                "active_tasks": payload_list("[{task_id, description, status, blockers}]"),
                "open_decisions": payload_list("[{decision_id, description, status}]"),
                "artifacts": payload_list("[{name, path}]"),
            }),
            &["context_summary"],
        ),
        false,
        handoff_task,
    )
}

fn handoff_task<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        attempt(who)?;
        let req: HandToAgent = body(args)?;
        let h = handoffs::hand_to_agent(cx.pool, who, req).await?;
        let mut out = handed(&h)?;
        out["attempt_ended"] = json!(true);
        Ok(out)
    })
}

/// A handoff as a model reads it, with what to do next.
fn handed(h: &HandoffView) -> Result<Value, ApiError> {
    let mut out = answer(h)?;
    out["handoff_id"] = json!(h.id);
    out["next_step"] = json!(match h.direction.as_str() {
        "agent_to_agent" => format!(
            "Agent '{}' takes the task over; your attempt has ended: stop working on it and do not report on it.",
            h.to
        ),
        "agent_to_human" => format!("'{}' takes the task over; stop working on it.", h.to),
        _ => format!("Agent '{}' gets the task back in the queue.", h.to),
    });
    Ok(out)
}
