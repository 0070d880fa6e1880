//! `/v1/board`: the kanban bridge — columns of cards, and card moves.

use axum::{
    Router,
    extract::State,
    routing::{get, post},
};
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::{
    AppState,
    extract::{Json, Path, Query},
};
use crate::{
    auth::{Principal, Role},
    board::{self, MoveCard},
    error::{ApiError, ApiResult},
    store::board::{self as cards, CardView},
};

/// Routes of this resource.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/board", get(show))
        .route("/v1/board/cards/{id}", get(card))
        .route("/v1/board/cards/{id}/move", post(move_card))
}

/// Columns in board order.
pub const COLUMNS: &[&str] = &[
    "backlog",
    "ready",
    "in_progress",
    "needs_human",
    "review",
    "done",
    "failed",
];
/// Most cards one board answer holds.
const MAX_CARDS: i64 = 2000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BoardParams {
    /// Only this mission's cards.
    mission: Option<Uuid>,
}

async fn show(
    State(state): State<AppState>,
    who: Principal,
    Query(p): Query<BoardParams>,
) -> ApiResult<Json<Value>> {
    let all = cards::list(&state.pool, who.workspace_id, p.mission, MAX_CARDS + 1).await?;
    let truncated = all.len() as i64 > MAX_CARDS;
    let columns: Vec<Value> = COLUMNS
        .iter()
        .map(|name| {
            let in_column: Vec<&CardView> = all
                .iter()
                .take(MAX_CARDS as usize)
                .filter(|c| c.column == *name)
                .collect();
            json!({ "name": name, "count": in_column.len(), "cards": in_column })
        })
        .collect();
    Ok(Json(
        json!({ "mission_id": p.mission, "columns": columns, "truncated": truncated }),
    ))
}

async fn card(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<CardView>> {
    cards::get(&state.pool, who.workspace_id, id)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::NotFound(format!("no card {id}")))
}

async fn move_card(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<MoveCard>,
) -> ApiResult<Json<CardView>> {
    who.require(&[Role::Admin, Role::Operator, Role::Stakeholder])?;
    Ok(Json(
        board::move_card(&state.pool, &state.http, &who, id, req).await?,
    ))
}
