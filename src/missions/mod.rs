//! Mission use cases: create (plan, validate, store, start), approve, cancel,
//! review, and the mission view. HTTP handlers call these and only translate.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    auth::Principal,
    domain::{Autonomy, MissionEvent, MissionStatus},
    error::ApiError,
    planning::{
        AgentCapability, PlanProvenance, PlanSpec, TemplateLibrary, ValidationContext,
        ValidationRules, plan_from_templates, validate_plan,
    },
    store::{
        agents, attempts,
        missions::{self, MissionRow, NewMission, TransitionError},
        tasks,
    },
};

/// Longest goal accepted, in characters.
pub const MAX_GOAL_CHARS: usize = 10_000;

/// Planning settings shared by every request.
#[derive(Debug, Clone)]
pub struct PlanningConfig {
    /// The method library.
    pub library: std::sync::Arc<TemplateLibrary>,
    /// Minimum similarity for a template to be used.
    pub match_threshold: f64,
    /// Plan size bounds.
    pub rules: ValidationRules,
    /// Attempts per task.
    pub max_attempts: i32,
}

impl Default for PlanningConfig {
    fn default() -> Self {
        PlanningConfig {
            library: std::sync::Arc::new(TemplateLibrary::builtin()),
            match_threshold: crate::planning::DEFAULT_MATCH_THRESHOLD,
            rules: ValidationRules::default(),
            max_attempts: 3,
        }
    }
}

/// `POST /v1/missions` body.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CreateMission {
    /// What to achieve.
    pub goal: String,
    /// `approve` (default: a person approves the plan) or `autonomous`.
    #[serde(default)]
    pub autonomy: Option<Autonomy>,
    /// Spending limit for the whole mission.
    #[serde(default)]
    pub budget: Option<f64>,
    /// Free-form constraints (a JSON object).
    #[serde(default)]
    pub constraints: Option<Value>,
    /// Dispatch priority, -100..=100 (higher first; default 0).
    #[serde(default)]
    pub priority: Option<i32>,
    /// An explicit plan instead of planning from the goal.
    #[serde(default)]
    pub plan: Option<PlanSpec>,
}

/// Creates a mission: plans (or takes the given plan), validates it, stores
/// mission, plan, tasks, edges, cards and events in one transaction, and
/// starts it at once in autonomous mode.
pub async fn create(
    pool: &PgPool,
    planning: &PlanningConfig,
    who: &Principal,
    req: CreateMission,
) -> Result<MissionView, ApiError> {
    let goal = req.goal.trim();
    if goal.is_empty() {
        return Err(ApiError::invalid("goal", "goal must not be empty"));
    }
    if goal.chars().count() > MAX_GOAL_CHARS {
        return Err(ApiError::invalid(
            "goal",
            format!("goal is longer than {MAX_GOAL_CHARS} characters"),
        ));
    }
    if let Some(b) = req.budget
        && (!b.is_finite() || b < 0.0)
    {
        return Err(ApiError::invalid(
            "budget",
            "budget must be a non-negative number",
        ));
    }
    let priority = req.priority.unwrap_or(0);
    if !(-100..=100).contains(&priority) {
        return Err(ApiError::invalid(
            "priority",
            "priority must be between -100 and 100",
        ));
    }
    let constraints = req.constraints.unwrap_or_else(|| json!({}));
    if !constraints.is_object() {
        return Err(ApiError::invalid(
            "constraints",
            "constraints must be a JSON object",
        ));
    }
    let autonomy = req.autonomy.unwrap_or(Autonomy::Approve);

    let (plan, provenance) = match req.plan {
        Some(plan) => (plan, PlanProvenance::explicit()),
        None => plan_from_templates(&planning.library, goal, planning.match_threshold),
    };
    let agents: Vec<AgentCapability> = agents::capabilities(pool, who.workspace_id)
        .await?
        .into_iter()
        .map(|(skills, tools)| AgentCapability { skills, tools })
        .collect();
    let validated = validate_plan(
        plan,
        &ValidationContext {
            rules: &planning.rules,
            budget: req.budget,
            agents: &agents,
        },
    )
    .map_err(|problems| ApiError::Unprocessable {
        code: "plan_invalid",
        message: format!(
            "the plan is not valid ({} problem{}): {}",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" },
            problems
                .iter()
                .map(|p| p.message.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        ),
        details: json!({ "planner": provenance.planner, "problems": problems }),
    })?;

    let actor = who.actor();
    let id = Uuid::now_v7();
    let mut tx = pool.begin().await?;
    missions::insert(
        &mut tx,
        NewMission {
            id,
            workspace_id: who.workspace_id,
            goal,
            autonomy,
            priority,
            budget_limit: req.budget,
            constraints: &constraints,
            created_by: who.token_id,
        },
        &actor,
    )
    .await?;
    let mut run = missions::lock(&mut tx, who.workspace_id, id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("mission vanished inside its own transaction"))?;
    let plan_version =
        missions::store_plan(&mut tx, &mut run, &validated, &provenance, &actor).await?;
    tasks::insert_plan(
        &mut tx,
        who.workspace_id,
        id,
        plan_version,
        &validated,
        planning.max_attempts,
    )
    .await?;
    missions::transition(
        &mut tx,
        &mut run,
        MissionEvent::PlanReady(autonomy),
        &actor,
        None,
    )
    .await
    .map_err(transition_error)?;
    if run.status() == MissionStatus::Executing {
        start_execution(&mut tx, &run, &actor).await?;
    }
    tx.commit().await?;
    view(pool, who.workspace_id, id).await
}

async fn start_execution(
    tx: &mut sqlx::PgConnection,
    run: &MissionRow,
    actor: &str,
) -> Result<(), ApiError> {
    tasks::promote_ready(tx, run.workspace_id, run.id, None, run.priority, actor).await?;
    missions::notify_wake(tx).await?;
    Ok(())
}

fn transition_error(e: TransitionError) -> ApiError {
    match e {
        TransitionError::Illegal(i) => i.into(),
        TransitionError::Lost => ApiError::conflict(
            "concurrent_update",
            "the mission changed while this request ran; retry",
        ),
        TransitionError::Db(e) => e.into(),
    }
}

async fn locked(
    tx: &mut sqlx::PgConnection,
    who: &Principal,
    id: Uuid,
) -> Result<MissionRow, ApiError> {
    missions::lock(tx, who.workspace_id, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no mission {id}")))
}

/// Approves the plan of a mission in `awaiting_approval` and starts it.
pub async fn approve(pool: &PgPool, who: &Principal, id: Uuid) -> Result<MissionView, ApiError> {
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let mut run = locked(&mut tx, who, id).await?;
    missions::transition(&mut tx, &mut run, MissionEvent::Approve, &actor, None)
        .await
        .map_err(transition_error)?;
    start_execution(&mut tx, &run, &actor).await?;
    tx.commit().await?;
    view(pool, who.workspace_id, id).await
}

/// Cancels a mission: every open task is cancelled, live attempts are ended
/// (reports on them are then refused as stale) and their slots released.
pub async fn cancel(pool: &PgPool, who: &Principal, id: Uuid) -> Result<MissionView, ApiError> {
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let mut run = locked(&mut tx, who, id).await?;
    missions::transition(&mut tx, &mut run, MissionEvent::Cancel, &actor, None)
        .await
        .map_err(transition_error)?;
    tasks::cancel_all_open(&mut tx, who.workspace_id, id, &actor, "mission cancelled").await?;
    for (_, agent) in attempts::cancel_live_for_mission(&mut tx, id).await? {
        agents::release_slot(&mut tx, who.workspace_id, &agent).await?;
    }
    tx.commit().await?;
    view(pool, who.workspace_id, id).await
}

/// `POST /v1/missions/{id}/review` body.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewRequest {
    /// `accept` or `reject`.
    pub decision: String,
    /// Why (kept on the event).
    #[serde(default)]
    pub feedback: Option<String>,
}

/// Accepts the results of a mission in `awaiting_review` (approve mode).
pub async fn review(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
    req: ReviewRequest,
) -> Result<MissionView, ApiError> {
    let event = match req.decision.as_str() {
        "accept" => MissionEvent::AcceptResults,
        "reject" => {
            return Err(ApiError::Unprocessable {
                code: "not_supported",
                message: "rejecting results (reopening tasks with feedback) is not supported yet; accept the results or cancel the mission".into(),
                details: Value::Null,
            });
        }
        other => {
            return Err(ApiError::invalid(
                "decision",
                format!("decision must be 'accept' or 'reject', not '{other}'"),
            ));
        }
    };
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let mut run = locked(&mut tx, who, id).await?;
    missions::transition(&mut tx, &mut run, event, &actor, req.feedback.as_deref())
        .await
        .map_err(transition_error)?;
    tx.commit().await?;
    view(pool, who.workspace_id, id).await
}

/// A mission as the API shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MissionView {
    /// Id.
    pub id: Uuid,
    /// Goal.
    pub goal: String,
    /// `approve` or `autonomous`.
    pub autonomy: String,
    /// Lifecycle status.
    pub status: String,
    /// Dispatch priority.
    pub priority: i32,
    /// Current plan version.
    pub plan_version: i32,
    /// Planner of the current plan.
    pub planner: Option<String>,
    /// Budget limit and spend.
    pub budget: BudgetView,
    /// Constraints.
    pub constraints: Value,
    /// Why it failed.
    pub failure_reason: Option<String>,
    /// Task counts by status, plus total and percent done.
    pub progress: Progress,
    /// Task keys on the critical path.
    pub critical_path: Vec<String>,
    /// Tasks in plan order.
    pub tasks: Vec<TaskView>,
    /// Created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Started executing.
    #[serde(with = "time::serde::rfc3339::option")]
    pub started_at: Option<OffsetDateTime>,
    /// Finished.
    #[serde(with = "time::serde::rfc3339::option")]
    pub finished_at: Option<OffsetDateTime>,
}

/// Budget limit and spend.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BudgetView {
    /// Limit, if any.
    pub limit: Option<f64>,
    /// Spent so far.
    pub spent: f64,
}

/// Task counts.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Progress {
    /// All tasks.
    pub total: usize,
    /// Terminal tasks.
    pub finished: usize,
    /// Percent of tasks terminal.
    pub percent: u32,
    /// Count per status (only statuses present).
    pub by_status: BTreeMap<String, usize>,
}

/// A task as the API shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskView {
    /// Id.
    pub id: Uuid,
    /// Plan-local key.
    pub key: String,
    /// Title.
    pub title: String,
    /// Kind of work.
    pub task_type: String,
    /// Instructions.
    pub description: String,
    /// Status.
    pub status: String,
    /// Skills needed.
    pub required_skills: Vec<String>,
    /// Tools needed.
    pub required_tools: Vec<String>,
    /// Agent of the latest attempt.
    pub assigned_agent_id: Option<String>,
    /// Score of that choice.
    pub assignment_score: Option<f64>,
    /// Ids of the tasks it depends on.
    pub depends_on: Vec<Uuid>,
    /// Success criteria.
    pub success_criteria: Value,
    /// Attempts so far.
    pub attempts: i32,
    /// Planned cost.
    pub estimated_cost: f64,
    /// Cost so far.
    pub actual_cost: f64,
    /// Result.
    pub output: Option<Value>,
    /// Latest error.
    pub last_error: Option<String>,
    /// Started.
    #[serde(with = "time::serde::rfc3339::option")]
    pub started_at: Option<OffsetDateTime>,
    /// Finished.
    #[serde(with = "time::serde::rfc3339::option")]
    pub finished_at: Option<OffsetDateTime>,
}

/// The full view of one mission (tasks, edges, progress).
pub async fn view(pool: &PgPool, workspace_id: Uuid, id: Uuid) -> Result<MissionView, ApiError> {
    let run = missions::get(pool, workspace_id, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no mission {id}")))?;
    let mut conn = pool.acquire().await?;
    let rows = tasks::list_for_mission(&mut conn, id).await?;
    let edges = tasks::edges_for_mission(&mut conn, id).await?;
    drop(conn);
    let critical_path = missions::critical_path(pool, id, run.plan_version).await?;
    let mut deps: BTreeMap<Uuid, Vec<Uuid>> = BTreeMap::new();
    for (task, on) in edges {
        deps.entry(task).or_default().push(on);
    }
    let mut progress = Progress {
        total: rows.len(),
        ..Progress::default()
    };
    for t in &rows {
        *progress.by_status.entry(t.status.clone()).or_default() += 1;
        if t.status().is_terminal() {
            progress.finished += 1;
        }
    }
    progress.percent = (progress.finished * 100)
        .checked_div(progress.total)
        .unwrap_or(0) as u32;
    let tasks = rows
        .into_iter()
        .map(|t| TaskView {
            depends_on: deps.remove(&t.id).unwrap_or_default(),
            id: t.id,
            key: t.task_key,
            title: t.title,
            task_type: t.task_type,
            description: t.description,
            status: t.status,
            required_skills: t.required_skills,
            required_tools: t.required_tools,
            assigned_agent_id: t.assigned_agent_id,
            assignment_score: t.assignment_score,
            success_criteria: t.success_criteria,
            attempts: t.attempt_count,
            estimated_cost: t.estimated_cost,
            actual_cost: t.actual_cost,
            output: t.output,
            last_error: t.last_error,
            started_at: t.started_at,
            finished_at: t.finished_at,
        })
        .collect();
    Ok(MissionView {
        id: run.id,
        goal: run.goal,
        autonomy: run.autonomy,
        status: run.status,
        priority: run.priority,
        plan_version: run.plan_version,
        planner: run.planner,
        budget: BudgetView {
            limit: run.budget_limit,
            spent: run.budget_spent,
        },
        constraints: run.constraints,
        failure_reason: run.failure_reason,
        progress,
        critical_path,
        tasks,
        created_at: run.created_at,
        started_at: run.started_at,
        finished_at: run.finished_at,
    })
}

/// A mission in a list (no tasks).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MissionSummary {
    /// Id.
    pub id: Uuid,
    /// Goal.
    pub goal: String,
    /// Autonomy.
    pub autonomy: String,
    /// Status.
    pub status: String,
    /// Priority.
    pub priority: i32,
    /// Plan version.
    pub plan_version: i32,
    /// Created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Finished.
    #[serde(with = "time::serde::rfc3339::option")]
    pub finished_at: Option<OffsetDateTime>,
}

impl From<MissionRow> for MissionSummary {
    fn from(r: MissionRow) -> Self {
        MissionSummary {
            id: r.id,
            goal: r.goal,
            autonomy: r.autonomy,
            status: r.status,
            priority: r.priority,
            plan_version: r.plan_version,
            created_at: r.created_at,
            finished_at: r.finished_at,
        }
    }
}
