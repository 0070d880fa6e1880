//! An agent's planning use cases (seed §8.1–§8.2): a structured plan for a
//! goal without creating a mission (`plan_generate`), and an HTN
//! decomposition of one task against a current state (`htn_decompose`).
//!
//! Both use the mission planner's own machinery — the plan library, the
//! method library with the workspace's routines, validation — so an agent
//! gets the plan a mission with that goal would get. Neither calls an LLM nor
//! writes anything.

use serde::Serialize;
use serde_json::{Map, Value};
use sqlx::PgPool;
use uuid::Uuid;

use coordinator_core::invalid::Invalid;

use super::rules::plans::{self, HtnSubtask, PlanOutline, SimilarFailure};
use crate::{
    missions::{
        PlanningConfig,
        planner::{self, PlanInput, Planned, PlanningError},
    },
    planning::{DecompositionError, Expansion, Method, PlanSpec},
};

/// Autonomy a generated plan is compared with cases under: a mission's default.
const PLAN_AUTONOMY: &str = "approve";

/// Most methods a caller may add to one decomposition.
pub const MAX_EXTRA_METHODS: usize = 50;

/// Why an agent's planning request failed.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    /// A request field is wrong.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The planner refused (an invalid plan lists every problem).
    #[error(transparent)]
    Planning(#[from] PlanningError),
    /// The task could not be decomposed.
    #[error(transparent)]
    Decomposition(#[from] DecompositionError),
}

/// What `plan_generate` answers.
#[derive(Debug, Serialize)]
pub struct GeneratedPlan {
    /// The goal planned.
    pub goal: String,
    /// Which planner made it: `case`, `template` or `generic`.
    pub planner: &'static str,
    /// The method (or `case:<id>`) it came from.
    pub source: Option<String>,
    /// Why that planner and source, in one sentence.
    pub reason: String,
    /// Phases, steps, risks and decision points.
    #[serde(flatten)]
    pub outline: PlanOutline,
    /// The plan itself (a mission's `plan`, or `add_subtasks`' tasks).
    pub plan: PlanSpec,
    /// The planner's facts (decomposition trace, cases consulted).
    pub details: Value,
}

/// Plans `goal` as a mission would be planned (plan library, then methods,
/// then the generic method; never the LLM) and validates it against the
/// workspace's agents and `constraints.budget`, without creating anything.
/// `context` keys act as constraints too, unless a constraint has the key.
pub async fn generate(
    pool: &PgPool,
    cfg: &PlanningConfig,
    workspace_id: Uuid,
    goal: &str,
    constraints: &Map<String, Value>,
    context: &Map<String, Value>,
) -> Result<GeneratedPlan, PlanError> {
    let goal = goal.trim();
    super::state::DESCRIPTION.check("goal", goal)?;
    let mut merged = context.clone();
    merged.extend(constraints.clone());
    let merged = Value::Object(merged);
    let budget = merged.get("budget").and_then(Value::as_f64);
    if budget.is_some_and(|b| !b.is_finite() || b < 0.0) {
        return Err(Invalid::new("constraints", "budget must be a non-negative number").into());
    }
    let planned = planner::plan(
        pool,
        cfg,
        PlanInput {
            workspace_id,
            goal,
            constraints: &merged,
            budget,
            autonomy: PLAN_AUTONOMY,
            explicit: None,
            exclude: &[],
            allow_llm: false,
        },
    )
    .await?;
    let Planned::Ready {
        plan,
        provenance,
        details,
    } = planned
    else {
        return Err(PlanningError::Unexpected(anyhow::anyhow!(
            "the planner asked for an LLM although none was allowed"
        ))
        .into());
    };
    let failures = similar_failures(&details);
    let outline = plans::outline(&plan.plan, &plan.critical_path, budget, &failures);
    Ok(GeneratedPlan {
        goal: goal.to_owned(),
        planner: provenance.planner,
        source: provenance.template,
        reason: provenance.reason,
        outline,
        plan: plan.plan,
        details,
    })
}

/// The similar failed cases the planner noted in a plan's details.
fn similar_failures(details: &Value) -> Vec<SimilarFailure> {
    details["negative_cases"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| {
            Some(SimilarFailure {
                case_id: n["case_id"].as_str()?.to_owned(),
                similarity: n["score"].as_f64()?,
            })
        })
        .collect()
}

/// What `htn_decompose` answers.
#[derive(Debug, Serialize)]
pub struct Decomposed {
    /// The task asked for.
    pub task: String,
    /// The method decomposed.
    pub method: String,
    /// How it was chosen.
    pub chosen_because: String,
    /// The text `{goal}` placeholders were filled with.
    pub goal: String,
    /// The chosen method's conditions on the current state, in words.
    pub method_conditions: Vec<String>,
    /// Primitive subtasks in execution order.
    pub subtasks: Vec<HtnSubtask>,
    /// Which compound subtasks expanded into which methods.
    pub expansions: Vec<Expansion>,
    /// Deepest nesting reached.
    pub depth: usize,
}

/// Decomposes `task` against `state` (its keys are what method conditions
/// and `{placeholders}` read; `state.goal` fills `{goal}`, else the task
/// does). `task` may name a method, a compound task (its first method whose
/// conditions hold), or describe a goal (the best-matching root method, else
/// the generic one). `extra` methods are tried after the library's.
pub async fn decompose(
    pool: &PgPool,
    cfg: &PlanningConfig,
    workspace_id: Uuid,
    task: &str,
    state: &Map<String, Value>,
    extra: Vec<Method>,
) -> Result<Decomposed, PlanError> {
    let task = task.trim();
    super::state::DESCRIPTION.check("task", task)?;
    if extra.len() > MAX_EXTRA_METHODS {
        return Err(Invalid::new(
            "methods",
            format!("at most {MAX_EXTRA_METHODS} methods per call"),
        )
        .into());
    }
    // A primitive subtask's inputs are an object, as in any plan.
    let bad_inputs = extra.iter().flat_map(|m| &m.subtasks).any(
        |s| matches!(s, coordinator_core::planning::htn::Subtask::Primitive(t) if !t.inputs.is_object()),
    );
    if bad_inputs {
        return Err(Invalid::new("methods", "a subtask's inputs must be a JSON object").into());
    }
    let library = planner::library(pool, cfg, workspace_id)
        .await?
        .with_methods(extra);
    let state_value = Value::Object(state.clone());
    let goal = state
        .get("goal")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|g| !g.is_empty())
        .unwrap_or(task)
        .to_owned();
    let (method, chosen_because) = if let Some(m) = library.get(task) {
        (m.name.clone(), format!("`{task}` names this method"))
    } else if library.methods().iter().any(|m| m.task == task) {
        let candidates: Vec<&Method> = library
            .methods()
            .iter()
            .filter(|m| m.task == task)
            .collect();
        let Some(m) = candidates.iter().find(|m| m.applies(&state_value)) else {
            return Err(DecompositionError::NoApplicableMethod {
                task: task.to_owned(),
                subtask: task.to_owned(),
                candidates: candidates.len(),
            }
            .into());
        };
        (
            m.name.clone(),
            format!(
                "the first method of compound task `{task}` whose conditions hold on the state"
            ),
        )
    } else {
        let outcome = library.match_goal_with(task, &state_value, cfg.match_threshold);
        match outcome.best {
            Some(best) => (
                best.template.clone(),
                format!(
                    "the task's words matched this method with score {:.3} (threshold {:.3})",
                    best.score, cfg.match_threshold
                ),
            ),
            None => (
                library.generic().name.clone(),
                format!(
                    "no method matched the task's words above {:.3}: the generic method",
                    cfg.match_threshold
                ),
            ),
        }
    };
    let d = library.decompose(&method, &goal, &state_value)?;
    let conditions = library
        .get(&method)
        .map(|m| m.conditions.clone())
        .unwrap_or_default();
    Ok(Decomposed {
        task: task.to_owned(),
        method_conditions: conditions.iter().map(plans::describe_condition).collect(),
        subtasks: plans::htn_subtasks(&d.plan, &conditions),
        expansions: d.trace.expansions,
        depth: d.trace.depth,
        method,
        chosen_because,
        goal,
    })
}
