//! `GET /v1/plan-library/search` and `/v1/plan-library/cases/{id}`: the
//! workspace's finished missions as cases (see [`crate::planning::cases`]).

use axum::extract::State;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{
    AppState, doc,
    extract::{Json, Path, Query},
};
use crate::{
    auth::Principal,
    error::{ApiError, ApiResult},
    missions::plan_library::{CaseHit, MAX_SEARCH_LIMIT, OutcomeFilter, search_cases},
    store::plan_cases::{self, PlanCaseRow},
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(search))
        .routes(routes!(show))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct SearchParams {
    /// The goal to find similar cases for (required).
    #[param(required = true, min_length = 1, pattern = r"\S")]
    goal: Option<String>,
    /// The context to compare, as a JSON object `{constraints?, budget?, autonomy?}`;
    /// without it cases are scored by the goal alone.
    context: Option<String>,
    /// Most results, 1–100 (default 10).
    #[param(value_type = Option<i64>, minimum = 1, maximum = 100)]
    limit: Option<String>,
    /// `success`, `failure` or `any` (default).
    #[param(inline)]
    outcome: Option<OutcomeFilter>,
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
