//! Searching the plan library: the workspace's finished missions as cases
//! (see [`crate::planning::cases`]), ranked by similarity to a goal. Both
//! `GET /v1/plan-library/search` and the `search_plan_library` and
//! `plan_library_search` tools run it. [`adapt_case`] adapts a case's plan
//! to a new context for an agent (`plan_adapt`).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use coordinator_core::{
    bdi::plans::{self, PlanOutline, SimilarFailure},
    invalid::Invalid,
};

use super::{
    PlanningConfig,
    planner::{self, PlanningError},
};
use crate::{
    planning::{PLANNER_CASE, PlanProblem, PlanSpec, cases, htn::Placeholders},
    store::plan_cases::{self, PlanCaseRow},
};

/// Most results one search returns.
pub const MAX_SEARCH_LIMIT: usize = 100;

/// Most recent cases a search scores (newest first).
const SEARCH_SCAN_LIMIT: i64 = 2_000;

/// Which cases a search looks at.
#[derive(Debug, Clone, Copy, Default, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeFilter {
    /// Completed missions only.
    Success,
    /// Failed missions (negative cases) only.
    Failure,
    /// Both (the default).
    #[default]
    Any,
}

/// One search hit.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CaseHit {
    /// Case id.
    pub id: Uuid,
    /// The mission it was learned from.
    pub mission_id: Uuid,
    /// Its goal.
    pub goal: String,
    /// Similarity to the query, 0–1.
    pub score: f64,
    /// Completed (true) or failed (false).
    pub success: bool,
    /// Structure signature of its plan.
    pub structure: String,
    /// Which planner made its plan.
    pub planner: Option<String>,
    /// The method (or `case:<id>`) its plan came from.
    pub template: Option<String>,
    /// Outcome facts.
    pub outcome: Value,
    /// Lessons.
    pub lessons: Vec<String>,
    /// When it was recorded.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// The search itself (REST and the `search_plan_library` tool): the
/// workspace's most recent cases of the wanted outcome, ranked against the
/// goal (and context), the `limit` best.
pub async fn search_cases(
    pool: &sqlx::PgPool,
    workspace_id: Uuid,
    goal: &str,
    context: Option<&Value>,
    outcome: OutcomeFilter,
    limit: usize,
) -> Result<Vec<CaseHit>, sqlx::Error> {
    let success = match outcome {
        OutcomeFilter::Success => Some(true),
        OutcomeFilter::Failure => Some(false),
        OutcomeFilter::Any => None,
    };
    let rows = plan_cases::recent(pool, workspace_id, success, SEARCH_SCAN_LIMIT).await?;
    Ok(rank(rows, goal, context, limit))
}

/// Scores `rows` against the query and keeps the `limit` best (score desc, then id).
fn rank(rows: Vec<PlanCaseRow>, goal: &str, context: Option<&Value>, limit: usize) -> Vec<CaseHit> {
    let mut hits: Vec<CaseHit> = rows
        .into_iter()
        .map(|r| CaseHit {
            score: cases::score(goal, context, &r.goal, &r.context),
            id: r.id,
            mission_id: r.mission_id,
            goal: r.goal,
            success: r.success,
            structure: r.structure,
            planner: r.planner,
            template: r.template,
            outcome: r.outcome,
            lessons: r.lessons,
            created_at: r.created_at,
        })
        .collect();
    hits.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| a.id.cmp(&b.id)));
    hits.truncate(limit);
    hits
}

/// Why a case could not be adapted.
#[derive(Debug, thiserror::Error)]
pub enum AdaptError {
    /// A request field is wrong.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The workspace has no such case.
    #[error("no plan-library case {0}")]
    NotFound(Uuid),
    /// The case's stored plan is not a plan this build reads.
    #[error("case {case_id} has an unreadable plan: {why}")]
    Unreadable {
        /// The case.
        case_id: Uuid,
        /// Why.
        why: String,
    },
    /// Validation could not run (the database, say).
    #[error(transparent)]
    Planning(#[from] PlanningError),
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// A failed case consulted while adapting (seed §8.4 "negative cases").
#[derive(Debug, Serialize)]
pub struct NegativeConsulted {
    /// The case.
    pub case_id: Uuid,
    /// Its goal.
    pub goal: String,
    /// Similarity of its goal to the new goal.
    pub similarity: f64,
    /// Whether the adapted plan has its structure (the shape that failed).
    pub same_structure: bool,
    /// What went wrong there.
    pub lessons: Vec<String>,
}

/// `plan_adapt`'s answer: the adapted plan with its provenance.
#[derive(Debug, Serialize)]
pub struct AdaptedPlan {
    /// The case adapted.
    pub source_case: Uuid,
    /// Its goal.
    pub source_goal: String,
    /// Whether its mission completed.
    pub source_success: bool,
    /// The goal adapted to.
    pub goal: String,
    /// Similarity of the two goals, in [0, 1].
    pub similarity: f64,
    /// Overlap of the two contexts, in [0, 1].
    pub context_overlap: f64,
    /// What was changed, one line per kind of change.
    pub adaptations: Vec<String>,
    /// Whether the adapted plan validates against the workspace's agents and the budget.
    pub valid: bool,
    /// Every validation problem (empty when valid).
    pub problems: Vec<PlanProblem>,
    /// Phases, steps, risks and decision points.
    #[serde(flatten)]
    pub outline: PlanOutline,
    /// The failed cases consulted.
    pub negative_cases: Vec<NegativeConsulted>,
    /// The adapted plan.
    pub plan: PlanSpec,
}

/// Adapts a case's plan to a new context (seed §8.4): the case's goal in its
/// text becomes `new_context.goal`, `{key}` placeholders are filled from the
/// other keys (`budget` is the budget), the result is validated, and failed
/// cases are consulted — those named, else the similar ones the planner
/// would avoid — noting any whose structure the adapted plan repeats.
/// Nothing is written.
pub async fn adapt_case(
    pool: &sqlx::PgPool,
    cfg: &PlanningConfig,
    workspace_id: Uuid,
    case_id: Uuid,
    new_context: &serde_json::Map<String, Value>,
    negative_ids: &[Uuid],
) -> Result<AdaptedPlan, AdaptError> {
    let row = plan_cases::get(pool, workspace_id, case_id)
        .await?
        .ok_or(AdaptError::NotFound(case_id))?;
    let spec: PlanSpec =
        serde_json::from_value(row.plan.clone()).map_err(|e| AdaptError::Unreadable {
            case_id,
            why: e.to_string(),
        })?;
    let goal = match new_context.get("goal") {
        None => row.goal.clone(),
        Some(Value::String(g)) if !g.trim().is_empty() && g.len() <= 4000 => g.trim().to_owned(),
        Some(_) => {
            return Err(Invalid::new(
                "new_context",
                "new_context.goal must be 1–4000 bytes of text",
            )
            .into());
        }
    };
    let budget = match new_context.get("budget") {
        None => None,
        Some(b) => Some(
            b.as_f64()
                .filter(|b| b.is_finite() && *b >= 0.0)
                .ok_or_else(|| {
                    Invalid::new(
                        "new_context",
                        "new_context.budget must be a non-negative number",
                    )
                })?,
        ),
    };
    let mut constraints = new_context.clone();
    constraints.remove("goal");
    constraints.remove("budget");
    let constraints = Value::Object(constraints);
    let (adapted, mut adaptations) = cases::adapt(spec, &row.goal, &goal);
    let placeholders = Placeholders::new(&goal, &constraints);
    let before = adapted.clone();
    let adapted = PlanSpec {
        tasks: adapted
            .tasks
            .into_iter()
            .map(|t| placeholders.fill_task(t))
            .collect(),
    };
    let filled = adapted
        .tasks
        .iter()
        .zip(&before.tasks)
        .filter(|(a, b)| a != b)
        .count();
    if filled > 0 {
        adaptations.push(format!(
            "filled placeholders from the new context in {filled} tasks"
        ));
    }
    let agents = planner::capabilities(pool, cfg, workspace_id).await?;
    let (valid, problems, critical_path) =
        match planner::validate(cfg, &agents, budget, adapted.clone(), PLANNER_CASE) {
            Ok(v) => (true, Vec::new(), v.critical_path),
            Err(PlanningError::Invalid { problems, .. }) => (false, problems, Vec::new()),
            Err(e) => return Err(e.into()),
        };
    let ctx = cases::context_of(&constraints, budget, None);
    let negative_cases =
        consult_negatives(pool, cfg, workspace_id, &goal, &ctx, &adapted, negative_ids).await?;
    let failures: Vec<SimilarFailure> = negative_cases
        .iter()
        .filter(|n| n.same_structure)
        .map(|n| SimilarFailure {
            case_id: n.case_id.to_string(),
            similarity: n.similarity,
        })
        .collect();
    Ok(AdaptedPlan {
        source_case: row.id,
        similarity: cases::goal_similarity(&goal, &row.goal),
        context_overlap: cases::context_overlap(&ctx, &row.context),
        source_goal: row.goal,
        source_success: row.success,
        goal,
        adaptations,
        valid,
        problems,
        outline: plans::outline(&adapted, &critical_path, budget, &failures),
        negative_cases,
        plan: adapted,
    })
}

/// The failed cases to consult: those named (each must be a failed case of
/// the workspace), else the similar failures [`cases::choose`] finds.
async fn consult_negatives(
    pool: &sqlx::PgPool,
    cfg: &PlanningConfig,
    workspace_id: Uuid,
    goal: &str,
    ctx: &Value,
    adapted: &PlanSpec,
    named: &[Uuid],
) -> Result<Vec<NegativeConsulted>, AdaptError> {
    let ids: Vec<Uuid> = if named.is_empty() {
        let stored = plan_cases::candidates(pool, workspace_id, cases::CASE_SCAN_LIMIT).await?;
        cases::choose(&stored, goal, ctx, cfg.case_threshold)
            .negatives
            .into_iter()
            .map(|n| n.case_id)
            .collect()
    } else {
        named.to_vec()
    };
    let structure = cases::structure_signature(adapted);
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let row = plan_cases::get(pool, workspace_id, id)
            .await?
            .ok_or(AdaptError::NotFound(id))?;
        if row.success {
            return Err(Invalid::new(
                "negative_cases",
                format!("case {id} completed: it is not a negative case"),
            )
            .into());
        }
        out.push(NegativeConsulted {
            case_id: row.id,
            similarity: cases::goal_similarity(goal, &row.goal),
            same_structure: row.structure == structure,
            goal: row.goal,
            lessons: row.lessons,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn row(n: u128, goal: &str) -> PlanCaseRow {
        PlanCaseRow {
            id: Uuid::from_u128(n),
            mission_id: Uuid::from_u128(100 + n),
            goal: goal.into(),
            context: json!({}),
            plan: json!({ "tasks": [] }),
            structure: String::new(),
            planner: None,
            template: None,
            success: true,
            outcome: json!({}),
            lessons: vec![],
            created_at: OffsetDateTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn rank_orders_by_score_then_id_and_truncates() {
        let rows = vec![
            row(3, "Plan a wedding"),
            row(2, "Research batteries and write a report"),
            row(1, "Research batteries and write a report"),
        ];
        let hits = rank(rows, "Research batteries and write a report", None, 2);
        assert_eq!(hits.len(), 2);
        assert_eq!(hits[0].id, Uuid::from_u128(1));
        assert_eq!(hits[1].id, Uuid::from_u128(2));
        assert!((hits[0].score - 1.0).abs() < 1e-9);
    }
}
