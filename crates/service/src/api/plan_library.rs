//! `GET /v1/plan-library/search` and `/v1/plan-library/cases/{id}`: the
//! workspace's finished missions as cases (see [`crate::planning::cases`]).

use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use time::OffsetDateTime;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{
    AppState, doc,
    extract::{Json, Path, Query},
};
use crate::{
    auth::Principal,
    error::{ApiError, ApiResult},
    planning::cases,
    store::plan_cases::{self, PlanCaseRow},
};

/// Most results one search returns.
pub const MAX_SEARCH_LIMIT: usize = 100;

/// Most recent cases a search scores (newest first).
const SEARCH_SCAN_LIMIT: i64 = 2_000;

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(search))
        .routes(routes!(show))
}

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

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct SearchParams {
    /// The goal to find similar cases for (required).
    goal: Option<String>,
    /// The context to compare, as a JSON object `{constraints?, budget?, autonomy?}`;
    /// without it cases are scored by the goal alone.
    context: Option<String>,
    /// Most results, 1–100 (default 10).
    limit: Option<String>,
    /// `success`, `failure` or `any` (default).
    #[param(inline)]
    outcome: Option<OutcomeFilter>,
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

/// Search results.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct CaseHits {
    /// Most similar first (ties by id).
    pub cases: Vec<CaseHit>,
}

/// Cases similar to a goal (and context), with scores.
///
/// Score: `0.8 · goal cosine + 0.2 · context overlap` with a context, the goal
/// cosine alone without one (see `docs/plan-library.md`). Missing goal: 422
/// `goal_required`; bad limit: 422 `invalid_limit`; context not a JSON
/// object: 422 `invalid_context`.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/plan-library/search",
    tag = "plan-library",
    operation_id = "search_plan_library",
    params(SearchParams),
    responses(
        (status = 200, description = "Similar cases", body = CaseHits),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
async fn search(
    State(state): State<AppState>,
    who: Principal,
    Query(p): Query<SearchParams>,
) -> ApiResult<Json<CaseHits>> {
    let goal = p.goal.as_deref().map(str::trim).unwrap_or_default();
    if goal.is_empty() {
        return Err(unprocessable(
            "goal_required",
            "give the goal to search for: ?goal=...",
            "goal",
        ));
    }
    let limit = match p.limit.as_deref() {
        None => 10,
        Some(raw) => raw
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=MAX_SEARCH_LIMIT).contains(n))
            .ok_or_else(|| {
                unprocessable(
                    "invalid_limit",
                    format!("limit must be a whole number from 1 to {MAX_SEARCH_LIMIT}"),
                    "limit",
                )
            })?,
    };
    let context = match p.context.as_deref() {
        None => None,
        Some(raw) => match serde_json::from_str::<Value>(raw) {
            Ok(v @ Value::Object(_)) => Some(v),
            _ => {
                return Err(unprocessable(
                    "invalid_context",
                    "context must be a JSON object such as {\"constraints\": {...}, \"autonomy\": \"approve\"}",
                    "context",
                ));
            }
        },
    };
    Ok(Json(CaseHits {
        cases: search_cases(
            &state.pool,
            who.workspace_id,
            goal,
            context.as_ref(),
            p.outcome.unwrap_or_default(),
            limit,
        )
        .await?,
    }))
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
) -> Result<Vec<CaseHit>, ApiError> {
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

/// A 422 naming the offending query parameter.
fn unprocessable(code: &'static str, message: impl Into<String>, field: &str) -> ApiError {
    ApiError::Unprocessable {
        code,
        message: message.into(),
        details: json!({ "field": field }),
    }
}

/// One case, with its plan and context.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/plan-library/cases/{id}",
    tag = "plan-library",
    operation_id = "get_plan_case",
    params(("id" = Uuid, Path, description = "Case id")),
    responses(
        (status = 200, description = "The case", body = PlanCaseRow),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn show(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<PlanCaseRow>> {
    plan_cases::get(&state.pool, who.workspace_id, id)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::NotFound(format!("no plan-library case {id}")))
}

#[cfg(test)]
mod tests {
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
