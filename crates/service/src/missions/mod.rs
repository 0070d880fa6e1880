//! Mission use cases: create (plan, validate, store, start), approve, cancel,
//! review, replan, and the mission view. HTTP handlers call these and only
//! translate.

pub mod attention;
pub mod commitment;
pub mod continuation;
pub mod discovered;
pub mod edit;
pub mod finish;
pub mod for_workflow;
pub mod human;
pub mod human_error;
pub mod plan_library;
pub mod planner;
pub mod replan;
pub mod roles;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    auth::Principal,
    domain::{Autonomy, IllegalTransition, MissionEvent, MissionStatus},
    planning::{
        PlanProvenance, PlanSpec, TemplateLibrary, ValidatedPlan, ValidationRules, llm::LlmPlanner,
    },
    store::{
        agents, attempts,
        event_notify::{self, Notifier},
        events::{self, NewEvent},
        missions::{self, MissionRow, NewMission, TransitionError},
        tasks,
    },
};
use attention::AttentionItem;
use coordinator_core::agents::PinRefusal;
use coordinator_core::domain::{Progress, outcome};
use coordinator_core::invalid::Invalid;
use planner::{PlanInput, Planned, PlanningError};

/// Why a mission use case (create, approve, cancel, pause, resume, review,
/// view) refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum MissionError {
    /// A request field is wrong.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// No such mission in the workspace.
    #[error("no mission {0}")]
    NotFound(Uuid),
    /// No acceptable plan.
    #[error(transparent)]
    Plan(#[from] PlanningError),
    /// The mission's lifecycle refuses the move.
    #[error(transparent)]
    IllegalTransition(#[from] IllegalTransition),
    /// The mission changed between reading and writing it.
    #[error("the mission changed while this request ran; retry")]
    Concurrent,
    /// Approval pins tasks to agents that cannot take them (each pin, and why).
    #[error("{}", .0.iter().map(|p| p.message.as_str()).collect::<Vec<_>>().join("; "))]
    InvalidAssignments(Vec<AssignmentProblem>),
    /// Rejecting results in review failed.
    #[error(transparent)]
    Review(Box<human::HumanActionError>),
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// Anything else.
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// Longest goal accepted, in characters.
pub const MAX_GOAL_CHARS: usize = 10_000;
/// A mission's goal.
pub const GOAL: coordinator_core::text::Text =
    coordinator_core::text::Text::required(MAX_GOAL_CHARS);

/// Planning settings shared by every request.
#[derive(Debug, Clone)]
pub struct PlanningConfig {
    /// The method library.
    pub library: std::sync::Arc<TemplateLibrary>,
    /// Minimum similarity for a template to be used.
    pub match_threshold: f64,
    /// Minimum similarity for a plan-library case to be reused (success) or avoided (failure).
    pub case_threshold: f64,
    /// Plan size bounds.
    pub rules: ValidationRules,
    /// Attempts per task.
    pub max_attempts: i32,
    /// The LLM planner, used when no method matches (None: generic method instead).
    pub llm: Option<std::sync::Arc<LlmPlanner>>,
    /// Planning attempts (LLM calls that fail on transport) before the mission fails.
    pub max_planning_attempts: i32,
    /// Contractors can be hired for tasks no roster agent can take (set from the engine).
    pub contractors: bool,
}

impl Default for PlanningConfig {
    fn default() -> Self {
        PlanningConfig {
            library: std::sync::Arc::new(TemplateLibrary::builtin()),
            match_threshold: crate::planning::DEFAULT_MATCH_THRESHOLD,
            case_threshold: crate::planning::cases::DEFAULT_CASE_THRESHOLD,
            rules: ValidationRules::default(),
            max_attempts: 3,
            llm: None,
            max_planning_attempts: 3,
            contractors: false,
        }
    }
}

/// `POST /v1/missions` body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
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
    /// How tasks get their agent: `score` (default, the deterministic scorer) or `tender` (contract net: a call for proposals per task).
    #[serde(default)]
    #[schema(schema_with = coordinator_core::contract_net::allocation_schema)]
    pub allocation: Option<String>,
    /// Proposal window of each tender in ms, 100 – 86400000 (default 30000); with `allocation: tender`.
    #[serde(default)]
    #[schema(minimum = 100, maximum = 86_400_000)]
    pub tender_window_ms: Option<i32>,
}

/// Creates a mission: plans (or takes the given plan), validates it, stores
/// mission, plan, tasks, edges, cards and events in one transaction, and
/// starts it at once in autonomous mode.
pub async fn create(
    pool: &PgPool,
    planning: &PlanningConfig,
    who: &Principal,
    req: CreateMission,
) -> Result<MissionView, MissionError> {
    GOAL.check("goal", &req.goal)?;
    let goal = req.goal.trim();
    if let Some(b) = req.budget {
        coordinator_core::numbers::check_money("budget", b)
            .map_err(|m| Invalid::new("budget", m))?;
    }
    use coordinator_core::domain::mission_edit::{MAX_PRIORITY, MIN_PRIORITY};
    let priority = req.priority.unwrap_or(0);
    if !(MIN_PRIORITY..=MAX_PRIORITY).contains(&priority) {
        return Err(Invalid::new(
            "priority",
            format!("priority must be between {MIN_PRIORITY} and {MAX_PRIORITY}"),
        )
        .into());
    }
    let constraints = req.constraints.unwrap_or_else(|| json!({}));
    if !constraints.is_object() {
        return Err(Invalid::new("constraints", "constraints must be a JSON object").into());
    }
    let known = coordinator_core::planning::constraint_keys::known_keys();
    if let Some((given, meant)) =
        coordinator_core::planning::constraint_keys::mistyped(&constraints, known)
    {
        return Err(Invalid::new(
            format!("constraints.{given}"),
            format!(
                "unknown constraint '{given}'; did you mean '{meant}'? (the planner reads: {})",
                known.iter().cloned().collect::<Vec<_>>().join(", ")
            ),
        )
        .into());
    }
    if constraints
        .get("human_escalation")
        .is_some_and(|v| !v.is_boolean())
    {
        return Err(Invalid::new(
            "constraints.human_escalation",
            "constraints.human_escalation must be true or false",
        )
        .into());
    }
    let autonomy = req.autonomy.unwrap_or(Autonomy::Approve);
    if let Some(a) = &req.allocation {
        coordinator_core::contract_net::check_allocation(a, req.tender_window_ms)?;
    } else if req.tender_window_ms.is_some() {
        return Err(Invalid::new(
            "tender_window_ms",
            "tender_window_ms goes with allocation: tender",
        )
        .into());
    }

    let planned = planner::plan(
        pool,
        planning,
        PlanInput {
            workspace_id: who.workspace_id,
            goal,
            constraints: &constraints,
            budget: req.budget,
            autonomy: autonomy.as_str(),
            explicit: req.plan,
            exclude: &[],
            allow_llm: true,
        },
    )
    .await?;

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
    if let Some(a) = &req.allocation {
        // Before the plan starts, so an autonomous mission's first claim already tenders.
        crate::store::contract_net::set_mission_allocation(
            &mut tx,
            who.workspace_id,
            id,
            a,
            req.tender_window_ms,
        )
        .await?;
    }
    let mut run = missions::lock(&mut tx, who.workspace_id, id)
        .await?
        .ok_or_else(|| anyhow::anyhow!("mission vanished inside its own transaction"))?;
    match planned {
        Planned::Ready {
            plan,
            provenance,
            details,
        } => {
            install_plan(
                &mut tx,
                planning,
                &mut run,
                &plan,
                &provenance,
                &details,
                &actor,
            )
            .await?;
            plan_ready(&mut tx, &mut run, &actor).await?;
        }
        Planned::NeedsLlm { match_outcome } => {
            request_llm_plan(&mut tx, &run, &match_outcome, None, &actor).await?;
        }
    }
    tx.commit().await?;
    view(pool, who.workspace_id, id).await
}

/// Stores a validated plan as the mission's next plan version: its new tasks
/// are added after the tasks already there (kept from an earlier version).
pub(crate) async fn install_plan(
    tx: &mut sqlx::PgConnection,
    cfg: &PlanningConfig,
    run: &mut MissionRow,
    plan: &ValidatedPlan,
    provenance: &PlanProvenance,
    details: &Value,
    actor: &str,
) -> Result<usize, MissionError> {
    let kept = tasks::list_for_mission(tx, run.id).await?;
    let existing: BTreeMap<String, Uuid> =
        kept.iter().map(|t| (t.task_key.clone(), t.id)).collect();
    let order_from = kept.iter().map(|t| t.task_order + 1).max().unwrap_or(0);
    let version = missions::store_plan(tx, run, plan, provenance, details, actor).await?;
    let added = tasks::insert_plan(
        tx,
        tasks::PlanTarget {
            workspace_id: run.workspace_id,
            run_id: run.id,
            plan_version: version,
            max_attempts: cfg.max_attempts,
            existing: &existing,
            order_from,
        },
        plan,
    )
    .await?;
    Ok(added)
}

/// Moves a mission whose plan is stored out of `planning`, starting it in
/// autonomous mode.
pub(crate) async fn plan_ready(
    tx: &mut sqlx::PgConnection,
    run: &mut MissionRow,
    actor: &str,
) -> Result<(), MissionError> {
    let autonomy = run.autonomy();
    missions::transition(tx, run, MissionEvent::PlanReady(autonomy), actor, None)
        .await
        .map_err(transition_error)?;
    if run.status() == MissionStatus::Executing {
        start_execution(tx, run, actor, true).await?;
    }
    Ok(())
}

/// Leaves the mission in `planning` for the engine's LLM planner, with
/// `feedback` for the model, and says why in the log.
pub(crate) async fn request_llm_plan(
    tx: &mut sqlx::PgConnection,
    run: &MissionRow,
    match_outcome: &crate::planning::MatchOutcome,
    feedback: Option<&str>,
    actor: &str,
) -> Result<(), MissionError> {
    missions::set_planning_feedback(tx, run.id, feedback).await?;
    events::append(
        tx,
        run.workspace_id,
        NewEvent::new(
            run.id,
            None,
            None,
            actor,
            &events::payloads::PlanRequested {
                planner: "llm".into(),
                reason: "no method scored above the match threshold; asking the LLM planner".into(),
                match_outcome: json!(match_outcome),
                feedback: feedback.map(str::to_owned),
            },
        ),
    )
    .await?;
    missions::notify_wake(tx).await?;
    Ok(())
}

/// Queues the mission's ready tasks; with `broadcast`, every replica's
/// dispatcher is woken at commit (else the caller announces the commit).
pub(crate) async fn start_execution(
    tx: &mut sqlx::PgConnection,
    run: &MissionRow,
    actor: &str,
    broadcast: bool,
) -> Result<(), MissionError> {
    tasks::promote_ready(tx, run.workspace_id, run.id, None, run.priority, actor).await?;
    if broadcast {
        missions::notify_wake(tx).await?;
    }
    Ok(())
}

pub(crate) fn transition_error(e: TransitionError) -> MissionError {
    match e {
        TransitionError::Illegal(i) => i.into(),
        TransitionError::Lost => MissionError::Concurrent,
        TransitionError::Db(e) => e.into(),
    }
}

/// A change that named the mission's version refused because the mission
/// moved on since (409 `version_conflict`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "mission {mission_id} is at version {current}, not {expected}: read it again and redo the change"
)]
pub struct StaleMission {
    /// The mission.
    pub mission_id: Uuid,
    /// The version the caller read.
    pub expected: i64,
    /// The version it is at.
    pub current: i64,
}

/// Refuses a change guarded by `expected` (when given) unless `run` is still
/// at that version.
pub(crate) fn check_version(run: &MissionRow, expected: Option<i64>) -> Result<(), StaleMission> {
    match expected {
        Some(expected) if expected != run.version => Err(StaleMission {
            mission_id: run.id,
            expected,
            current: run.version,
        }),
        _ => Ok(()),
    }
}

pub(crate) async fn locked(
    tx: &mut sqlx::PgConnection,
    who: &Principal,
    id: Uuid,
) -> Result<MissionRow, MissionError> {
    missions::lock(tx, who.workspace_id, id)
        .await?
        .ok_or(MissionError::NotFound(id))
}

/// `POST /v1/missions/{id}/approve` body (optional).
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApproveRequest {
    /// Task key → agent id: run these tasks on these agents.
    #[serde(default)]
    pub assignments: BTreeMap<String, String>,
}

/// Approves the plan of a mission in `awaiting_approval` (optionally pinning
/// tasks to agents) and starts it. With `notifier`, the commit is announced
/// after it (see [`crate::store::event_notify`]): approvals arriving
/// together do not queue on NOTIFY's commit lock.
pub async fn approve(
    pool: &PgPool,
    notifier: Option<&Notifier>,
    who: &Principal,
    id: Uuid,
    req: ApproveRequest,
) -> Result<MissionView, MissionError> {
    let actor = who.actor();
    let mut tx = event_notify::begin(pool, notifier).await?;
    let mut run = locked(&mut tx, who, id).await?;
    if !req.assignments.is_empty() {
        check_assignments(&mut tx, who, id, &req.assignments).await?;
        tasks::pin_agents(&mut tx, id, &req.assignments).await?;
    }
    missions::transition(&mut tx, &mut run, MissionEvent::Approve, &actor, None)
        .await
        .map_err(transition_error)?;
    start_execution(&mut tx, &run, &actor, notifier.is_none()).await?;
    tx.commit().await?;
    if let Some(n) = notifier {
        n.work_ready();
    }
    view(pool, who.workspace_id, id).await
}

/// Why one pin of an approval cannot be honoured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AssignmentProblem {
    /// The task key named.
    pub task: String,
    /// The agent named.
    pub agent_id: String,
    /// `unknown_task`, or why the agent cannot take it: `unknown_agent`,
    /// `retired`, `prohibited` (by the organisation spec), `incapable`
    /// (lacks skills or tools) or `offline`.
    pub reason: String,
    /// The same, for a person.
    pub message: String,
}

/// Every pin names a task of the plan and an agent that can take it now:
/// one that exists, is not retired or offline, whose role the organisation
/// spec does not prohibit from the task, and that has its skills and tools.
/// A pin the claim could never honour would leave the task queued forever.
async fn check_assignments(
    tx: &mut sqlx::PgConnection,
    who: &Principal,
    id: Uuid,
    assignments: &BTreeMap<String, String>,
) -> Result<(), MissionError> {
    use coordinator_core::agents::{AgentStatus, PinTarget, pin_refusal};
    use coordinator_core::organisation::Deontic;
    let rows = tasks::list_for_mission(tx, id).await?;
    let spec = crate::store::organisation::get(tx, who.workspace_id).await?;
    let mut problems = Vec::new();
    for (key, agent_id) in assignments {
        let problem = |reason: &str, message: String| AssignmentProblem {
            task: key.clone(),
            agent_id: agent_id.clone(),
            reason: reason.to_owned(),
            message,
        };
        let Some(task) = rows.iter().find(|t| &t.task_key == key) else {
            problems.push(problem(
                "unknown_task",
                format!("no task '{key}' in the plan"),
            ));
            continue;
        };
        let agent = agents::pin_target(tx, who.workspace_id, agent_id).await?;
        let target = agent.as_ref().map(|a| {
            let needs =
                crate::assignment::TaskNeeds::of(&task.required_skills, &task.required_tools);
            PinTarget {
                status: a.status.parse().unwrap_or(AgentStatus::Offline),
                prohibited: spec.as_ref().is_some_and(|s| {
                    s.spec.verdict(&a.role, &task.task_type, &task.task_key) == Deontic::Prohibited
                }),
                capable: crate::assignment::capable(needs, &a.skills, &a.tools),
            }
        });
        let Some(refusal) = pin_refusal(target) else {
            continue;
        };
        let role = agent.as_ref().map(|a| a.role.as_str()).unwrap_or("");
        let message = match refusal {
            PinRefusal::UnknownAgent => format!("no agent '{agent_id}'"),
            PinRefusal::Retired => format!("agent '{agent_id}' is retired"),
            PinRefusal::Offline => format!("agent '{agent_id}' is offline"),
            PinRefusal::Unreachable => format!(
                "agent '{agent_id}' is unreachable (its endpoint refused or timed out repeatedly)"
            ),
            PinRefusal::Prohibited => format!(
                "the organisation spec prohibits agent '{agent_id}' (role '{role}') from task '{key}'"
            ),
            PinRefusal::Incapable => {
                format!("agent '{agent_id}' lacks the skills or tools task '{key}' needs")
            }
        };
        problems.push(problem(refusal.as_str(), message));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(MissionError::InvalidAssignments(problems))
    }
}

/// Cancels a mission: every open task is cancelled, live attempts are ended
/// (reports on them are then refused as stale) and their slots released.
pub async fn cancel(
    pool: &PgPool,
    http: &crate::egress::Client,
    who: &Principal,
    id: Uuid,
) -> Result<MissionView, MissionError> {
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let mut run = locked(&mut tx, who, id).await?;
    missions::transition(&mut tx, &mut run, MissionEvent::Cancel, &actor, None)
        .await
        .map_err(transition_error)?;
    tasks::cancel_all_open(&mut tx, who.workspace_id, id, &actor, "mission cancelled").await?;
    let cancelled = attempts::cancel_live(&mut tx, id, None).await?;
    for a in &cancelled {
        agents::release_slot(&mut tx, who.workspace_id, &a.agent_id).await?;
    }
    tx.commit().await?;
    crate::worker::notify_cancelled(http, cancelled);
    view(pool, who.workspace_id, id).await
}

/// Pauses an executing mission: nothing new is dispatched; live attempts finish.
pub async fn pause(pool: &PgPool, who: &Principal, id: Uuid) -> Result<MissionView, MissionError> {
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let mut run = locked(&mut tx, who, id).await?;
    missions::transition(&mut tx, &mut run, MissionEvent::Pause, &actor, None)
        .await
        .map_err(transition_error)?;
    tx.commit().await?;
    view(pool, who.workspace_id, id).await
}

/// Resumes a paused mission: ready tasks are dispatched again, and a mission
/// whose work all finished while paused moves on.
pub async fn resume(
    pool: &PgPool,
    http: &crate::egress::Client,
    who: &Principal,
    id: Uuid,
) -> Result<MissionView, MissionError> {
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let mut run = locked(&mut tx, who, id).await?;
    missions::transition(&mut tx, &mut run, MissionEvent::Resume, &actor, None)
        .await
        .map_err(transition_error)?;
    start_execution(&mut tx, &run, &actor, true).await?;
    let cancelled = finish::finish_mission_if_done(&mut tx, &mut run, &actor)
        .await
        .map_err(|e| MissionError::Unexpected(anyhow::anyhow!("{e}")))?;
    tx.commit().await?;
    crate::worker::notify_cancelled(http, cancelled);
    view(pool, who.workspace_id, id).await
}

/// `POST /v1/missions/{id}/review` body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReviewRequest {
    /// `accept` or `reject`.
    #[schema(schema_with = review_decisions)]
    pub decision: String,
    /// Why (kept on the event; required to reject).
    #[serde(default)]
    pub feedback: Option<String>,
    /// With `reject`: the tasks to redo, by key or id (their dependents are redone too).
    #[serde(default)]
    pub tasks: Vec<String>,
}

/// The decisions a review takes (the match in [`review`] handles each).
pub const REVIEW_DECISIONS: [&str; 2] = ["accept", "reject"];

/// The schema of [`ReviewRequest::decision`].
fn review_decisions() -> utoipa::openapi::Object {
    coordinator_core::domain::string_enum(&REVIEW_DECISIONS)
}

/// Accepts the results of a mission in `awaiting_review` (approve mode).
pub async fn review(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
    req: ReviewRequest,
) -> Result<MissionView, MissionError> {
    let event = match req.decision.as_str() {
        "accept" if !req.tasks.is_empty() => {
            return Err(Invalid::new("tasks", "tasks is only taken with decision 'reject'").into());
        }
        "accept" => MissionEvent::AcceptResults,
        "reject" => {
            let feedback = req.feedback.as_deref().unwrap_or("");
            return human::reject_results(pool, who, id, feedback, &req.tasks)
                .await
                .map_err(|e| MissionError::Review(Box::new(e)));
        }
        other => {
            return Err(Invalid::new(
                "decision",
                format!("decision must be 'accept' or 'reject', not '{other}'"),
            )
            .into());
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
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MissionView {
    /// Id.
    pub id: Uuid,
    /// Goal.
    pub goal: String,
    /// Short name for people, if one was given (`PATCH`); else the goal names it.
    pub title: Option<String>,
    /// Version of the mission row: give it to `PATCH` to refuse the change if the mission changed since.
    pub version: i64,
    /// `approve` or `autonomous`.
    #[schema(value_type = crate::domain::Autonomy)]
    pub autonomy: String,
    /// Lifecycle status.
    #[schema(value_type = crate::domain::MissionStatus)]
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
    /// When it should be done (informative).
    #[serde(with = "time::serde::rfc3339::option")]
    pub deadline: Option<OffsetDateTime>,
    /// Labels (slugs).
    pub labels: Vec<String>,
    /// Why it failed.
    pub failure_reason: Option<String>,
    /// Task counts by outcome; `percent` is the share that succeeded.
    pub progress: Progress,
    /// One sentence on where it stands: what it came to, or what is left.
    pub status_detail: Option<String>,
    /// What in this mission waits for a person, oldest first.
    pub attention: Vec<AttentionItem>,
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
    /// When it was archived (`DELETE ?archive=true`): left out of the list unless `?archived=true`.
    #[serde(with = "time::serde::rfc3339::option")]
    pub archived_at: Option<OffsetDateTime>,
}

/// Budget limit and spend.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BudgetView {
    /// Limit, if any.
    pub limit: Option<f64>,
    /// Spent so far.
    pub spent: f64,
}

/// A task as the API shows it.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
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
    #[schema(value_type = crate::domain::TaskStatus)]
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
pub async fn view(
    pool: &PgPool,
    workspace_id: Uuid,
    id: Uuid,
) -> Result<MissionView, MissionError> {
    let run = missions::get(pool, workspace_id, id)
        .await?
        .ok_or(MissionError::NotFound(id))?;
    let mut conn = pool.acquire().await?;
    let rows = tasks::list_for_mission(&mut conn, id).await?;
    let edges = tasks::edges_for_mission(&mut conn, id).await?;
    drop(conn);
    let critical_path = missions::critical_path(pool, id, run.plan_version).await?;
    let mut deps: BTreeMap<Uuid, Vec<Uuid>> = BTreeMap::new();
    for (task, on) in edges {
        deps.entry(task).or_default().push(on);
    }
    let progress = Progress::tally(rows.iter().map(|t| t.status()));
    let status_detail =
        outcome::status_detail(run.status(), &progress, run.failure_reason.as_deref());
    let attention = attention::for_mission(pool, workspace_id, id).await?;
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
        title: run.title,
        version: run.version,
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
        deadline: run.deadline,
        labels: run.labels,
        failure_reason: run.failure_reason,
        progress,
        status_detail,
        attention,
        critical_path,
        tasks,
        created_at: run.created_at,
        started_at: run.started_at,
        finished_at: run.finished_at,
        archived_at: run.archived_at,
    })
}

/// A mission in a list (no tasks).
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MissionSummary {
    /// Id.
    pub id: Uuid,
    /// Goal.
    pub goal: String,
    /// Short name, if one was given.
    pub title: Option<String>,
    /// Version of the mission row (what `PATCH` guards on).
    pub version: i64,
    /// Autonomy.
    #[schema(value_type = crate::domain::Autonomy)]
    pub autonomy: String,
    /// Status.
    #[schema(value_type = crate::domain::MissionStatus)]
    pub status: String,
    /// Priority.
    pub priority: i32,
    /// Plan version.
    pub plan_version: i32,
    /// Labels (slugs).
    pub labels: Vec<String>,
    /// When it should be done.
    #[serde(with = "time::serde::rfc3339::option")]
    pub deadline: Option<OffsetDateTime>,
    /// Created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Finished.
    #[serde(with = "time::serde::rfc3339::option")]
    pub finished_at: Option<OffsetDateTime>,
    /// When it was archived (listed only with `?archived=true`).
    #[serde(with = "time::serde::rfc3339::option")]
    pub archived_at: Option<OffsetDateTime>,
}

impl From<MissionRow> for MissionSummary {
    fn from(r: MissionRow) -> Self {
        MissionSummary {
            id: r.id,
            goal: r.goal,
            title: r.title,
            version: r.version,
            autonomy: r.autonomy,
            status: r.status,
            priority: r.priority,
            plan_version: r.plan_version,
            labels: r.labels,
            deadline: r.deadline,
            created_at: r.created_at,
            finished_at: r.finished_at,
            archived_at: r.archived_at,
        }
    }
}
