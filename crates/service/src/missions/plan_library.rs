//! Searching the plan library: the workspace's finished missions as cases
//! (see [`crate::planning::cases`]), ranked by similarity to a goal. Both
//! `GET /v1/plan-library/search` and the `search_plan_library` tool run it.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::{
    planning::cases,
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
