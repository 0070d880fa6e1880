//! The agent's planning tools (seed §20.6): plans for its own goals and
//! intentions, without creating a mission. They run the mission planner's
//! machinery (plan library, method library, validation) through
//! [`crate::bdi::plans`] and [`crate::missions::plan_library`].

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::{acting_as, answer, object, required_uuid, tool};
use crate::{
    auth::Principal,
    bdi::{
        self,
        rules::plans::StepStatus,
        steps::{StepReport, record_step},
    },
    error::ApiError,
    missions::plan_library::{self, MAX_SEARCH_LIMIT, OutcomeFilter},
    planning::Method,
    tools::{Group, Tool, ToolContext},
};

/// The optional `agent_id` every agent tool takes: it must name the caller.
pub(super) fn agent_arg() -> Value {
    json!({
        "type": "string",
        "description": "You (optional): an agent plans and acts only as itself; naming another agent is refused."
    })
}

/// A required text argument (the schema makes it required; this names it).
pub(super) fn text(args: &mut Map<String, Value>, field: &str) -> Result<String, ApiError> {
    match args.remove(field) {
        Some(Value::String(s)) => Ok(s),
        _ => Err(ApiError::invalid(field, format!("{field} must be text"))),
    }
}

/// An optional object argument (empty when absent).
pub(super) fn object_arg(args: &mut Map<String, Value>, field: &str) -> Map<String, Value> {
    match args.remove(field) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// An HTN method as `htn_decompose` reads it (`coordinator_core::planning::htn::Method`):
/// its subtasks are primitive tasks (a plan's task) or references to a compound task.
fn method_schema() -> Value {
    let compound = json!({
        "type": "object",
        "required": ["id", "compound"],
        "properties": {
            "id": { "type": "string", "description": "Sibling-local id." },
            "compound": { "type": "string", "description": "The compound task, e.g. \"review_cycle\"." },
            "depends_on": { "type": "array", "items": { "type": "string" } },
        },
        "additionalProperties": false,
    });
    let condition = json!({
        "type": "object",
        "required": ["key"],
        "properties": {
            "key": { "type": "string" },
            "equals": { "description": "The value the key must have." },
            "exists": { "type": ["boolean", "null"] },
        },
        "additionalProperties": false,
    });
    json!({
        "type": "object",
        "required": ["name", "task", "description", "subtasks"],
        "properties": {
            "name": { "type": "string", "description": "Unique name, e.g. \"quick-survey\"." },
            "task": { "type": "string", "description": "The compound task it decomposes." },
            "description": { "type": "string", "description": "What it is for." },
            "keywords": { "type": "array", "items": { "type": "string" } },
            "conditions": { "type": "array", "items": condition },
            "subtasks": {
                "type": "array",
                "items": { "anyOf": [compound, crate::tools::catalogue::task_schema()] },
            },
        },
        "additionalProperties": false,
    })
}

/// The tools of this group.
pub(super) fn tools() -> Vec<Tool> {
    vec![
        tool(
            Group::Planning,
            "plan_generate",
            "Plan a goal",
            "Make a structured plan for a goal of yours, as a mission with that goal would be \
             planned (a similar success of the plan library, else the best-matching method, else \
             research → draft → review), validated against the workspace's agents and \
             constraints.budget. Answers phases of steps (with dependencies, costs, the critical \
             path), risks (impact, likelihood, mitigation) and decision points, and the plan \
             itself. Creates nothing: commit to it with intention_commit and report its steps \
             with plan_execute_step.",
            object(
                json!({
                    "goal": { "type": "string", "minLength": 1, "description": "What to achieve." },
                    "constraints": { "type": "object", "description": "Limits and choices: budget (a number), and keys that method conditions and {placeholders} read (e.g. {\"review\": \"light\"})." },
                    "context": { "type": "object", "description": "Facts about the situation; read like constraints where no constraint has the key." },
                    "agent_id": agent_arg(),
                }),
                &["goal"],
            ),
            true,
            plan_generate,
        ),
        tool(
            Group::Planning,
            "plan_execute_step",
            "Report a plan step",
            "Report a step of the plan of one of your active intentions (plan_id is the \
             intention's id: an intention is the plan you committed to). An executing or \
             completed step is progress: it restarts the intention's stall clock and, with \
             progress, sets how far the intention is. A failed or pending step is recorded \
             without being progress, so a plan that keeps failing still stalls and gets \
             reconsidered.",
            object(
                json!({
                    "plan_id": { "type": "string", "format": "uuid", "description": "The intention the step belongs to." },
                    "step_id": { "type": "string", "minLength": 1, "description": "The step, as your plan names it." },
                    "status": { "type": "string", "enum": StepStatus::ALL.iter().map(|s| s.as_str()).collect::<Vec<_>>(), "description": "pending, executing, completed or failed." },
                    "progress": { "type": "number", "minimum": 0, "maximum": 1, "description": "The intention's progress after this step (executing or completed only; default unchanged)." },
                    "actual_duration": { "type": "string", "description": "How long it took, e.g. \"2h\"." },
                    "outcome": { "type": "string", "description": "What happened." },
                    "artifacts_produced": { "type": "array", "items": { "type": "string" }, "description": "Files, documents or links it produced." },
                    "notes": { "type": "string", "description": "Observations for later learning." },
                    "agent_id": agent_arg(),
                }),
                &["plan_id", "step_id", "status"],
            ),
            false,
            plan_execute_step,
        ),
        tool(
            Group::Planning,
            "htn_decompose",
            "Decompose a task",
            "Decompose a task with the HTN method library into ordered primitive subtasks, each \
             with preconditions (dependencies done, skills available, the method's conditions) \
             and effects. task names a method (\"research-report\"), a compound task \
             (\"review_cycle\"), or describes a goal (the best-matching method is used). \
             current_state is what method conditions and {placeholders} read (current_state.goal \
             fills {goal}). methods adds your own methods, tried after the library's.",
            object(
                json!({
                    "task": { "type": "string", "minLength": 1, "description": "A method, a compound task, or a goal in words." },
                    "current_state": { "type": "object", "description": "Facts the methods' conditions test, e.g. {\"review\": \"light\", \"goal\": \"…\"}." },
                    "methods": { "type": "array", "items": method_schema(), "description": "Extra methods: {name, task, description, keywords?, conditions?, subtasks}." },
                    "agent_id": agent_arg(),
                }),
                &["task", "current_state"],
            ),
            true,
            htn_decompose,
        ),
        tool(
            Group::Planning,
            "plan_library_search",
            "Search past plans",
            "Search the plan library — the workspace's finished missions as cases — for plans \
             similar to a query, most similar first, with their outcome and lessons. domain \
             prefers cases whose constraints name that domain. Adapt one with plan_adapt.",
            object(
                json!({
                    "query": { "type": "string", "minLength": 1, "description": "The goal you are planning." },
                    "domain": { "type": "string", "description": "The business domain (compared with the cases' constraints.domain)." },
                    "outcome": { "type": "string", "enum": ["success", "failure", "any"], "description": "Completed missions, failed ones, or both (default)." },
                    "limit": { "type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT, "description": "Most cases to return (default 5)." },
                    "agent_id": agent_arg(),
                }),
                &["query"],
            ),
            true,
            plan_library_search,
        ),
        tool(
            Group::Planning,
            "plan_adapt",
            "Adapt a past plan",
            "Adapt the plan of a plan-library case to a new context: the case's goal in its text \
             becomes new_context.goal, {placeholders} are filled from new_context's other keys \
             (budget is the budget), and the result is validated. Failed cases are consulted \
             (those you name, else similar ones) and any whose structure the plan repeats is a \
             risk. Answers the plan with its provenance; creates nothing.",
            object(
                json!({
                    "source_plan_id": { "type": "string", "format": "uuid", "description": "The case (case_id from plan_library_search)." },
                    "new_context": { "type": "object", "description": "goal (the new goal), budget, and any constraints." },
                    "negative_cases": { "type": "array", "items": { "type": "string" }, "description": "Ids of failed cases to consult." },
                    "agent_id": agent_arg(),
                }),
                &["source_plan_id", "new_context"],
            ),
            true,
            plan_adapt,
        ),
    ]
}

fn plan_generate<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        acting_as(who, &mut args, "agent_id")?;
        let goal = text(&mut args, "goal")?;
        let constraints = object_arg(&mut args, "constraints");
        let context = object_arg(&mut args, "context");
        let plan = bdi::plans::generate(
            cx.pool,
            cx.planning,
            who.workspace_id,
            &goal,
            &constraints,
            &context,
        )
        .await?;
        let mut out = answer(&plan)?;
        out["next_step"] = json!(
            "Commit to it with intention_commit, then report each step with plan_execute_step (plan_id = the intention's id)."
        );
        Ok(out)
    })
}

fn plan_execute_step<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let agent = acting_as(who, &mut args, "agent_id")?;
        let intention_id = required_uuid(&mut args, "plan_id")?;
        let status: StepStatus = text(&mut args, "status")?.parse()?;
        let opt = |args: &mut Map<String, Value>, f: &str| match args.remove(f) {
            Some(Value::String(s)) => Some(s),
            _ => None,
        };
        let step = StepReport {
            intention_id,
            step_id: text(&mut args, "step_id")?,
            status,
            progress: args.get("progress").and_then(Value::as_f64),
            actual_duration: opt(&mut args, "actual_duration"),
            outcome: opt(&mut args, "outcome"),
            notes: opt(&mut args, "notes"),
            artifacts_produced: args
                .get("artifacts_produced")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default(),
        };
        let step_id = step.step_id.clone();
        let mut tx = cx.pool.begin().await?;
        let intention = record_step(&mut tx, who.workspace_id, &agent, step, &who.actor()).await?;
        tx.commit().await?;
        Ok(json!({
            "recorded": true,
            "step_id": step_id,
            "status": status,
            "progress_counted": status.is_progress(),
            "intention": intention,
        }))
    })
}

fn htn_decompose<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        acting_as(who, &mut args, "agent_id")?;
        let task = text(&mut args, "task")?;
        let state = object_arg(&mut args, "current_state");
        let methods: Vec<Method> = match args.remove("methods") {
            Some(v) => serde_json::from_value(v).map_err(|e| {
                ApiError::invalid("methods", format!("methods are not valid methods: {e}"))
            })?,
            None => Vec::new(),
        };
        let d = bdi::plans::decompose(
            cx.pool,
            cx.planning,
            who.workspace_id,
            &task,
            &state,
            methods,
        )
        .await?;
        answer(&d)
    })
}

fn plan_library_search<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        acting_as(who, &mut args, "agent_id")?;
        let query = text(&mut args, "query")?;
        let query = query.trim();
        if query.is_empty() {
            return Err(ApiError::invalid("query", "query must not be blank"));
        }
        let context = args
            .get("domain")
            .and_then(Value::as_str)
            .map(|d| json!({ "constraints": { "domain": d } }));
        let outcome = match args.get("outcome").and_then(Value::as_str) {
            Some("success") => OutcomeFilter::Success,
            Some("failure") => OutcomeFilter::Failure,
            _ => OutcomeFilter::Any,
        };
        let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(5) as usize;
        let hits = plan_library::search_cases(
            cx.pool,
            who.workspace_id,
            query,
            context.as_ref(),
            outcome,
            limit.clamp(1, MAX_SEARCH_LIMIT),
        )
        .await?;
        let cases: Vec<Value> = hits
            .iter()
            .map(|h| {
                json!({
                    "case_id": h.id,
                    "mission_id": h.mission_id,
                    "goal": h.goal,
                    "similarity": (h.score * 1000.0).round() / 1000.0,
                    "success": h.success,
                    "planner": h.planner,
                    "source": h.template,
                    "structure": h.structure,
                    "lessons": h.lessons,
                })
            })
            .collect();
        Ok(json!({
            "count": cases.len(),
            "cases": cases,
            "next_step": if cases.is_empty() {
                "No finished mission resembles this yet; plan_generate plans it from the method library."
            } else {
                "Most similar first. plan_adapt adapts a case's plan to your context; a failed case's lessons say what to avoid."
            },
        }))
    })
}

fn plan_adapt<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        acting_as(who, &mut args, "agent_id")?;
        let case_id = required_uuid(&mut args, "source_plan_id")?;
        let new_context = object_arg(&mut args, "new_context");
        let negatives = args
            .get("negative_cases")
            .and_then(Value::as_array)
            .map(|ids| {
                ids.iter()
                    .map(|v| {
                        v.as_str().and_then(|s| s.parse().ok()).ok_or_else(|| {
                            ApiError::invalid("negative_cases", "negative_cases must be case ids")
                        })
                    })
                    .collect::<Result<Vec<uuid::Uuid>, ApiError>>()
            })
            .transpose()?
            .unwrap_or_default();
        let adapted = plan_library::adapt_case(
            cx.pool,
            cx.planning,
            who.workspace_id,
            case_id,
            &new_context,
            &negatives,
        )
        .await?;
        answer(&adapted)
    })
}
