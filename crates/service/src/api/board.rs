//! `/v1/board`: the kanban bridge — columns of cards, and card moves.

use axum::extract::State;
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{
    AppState, doc,
    extract::{Json, Path, Query},
};
use crate::{
    auth::{Principal, Role},
    board::{self, MoveCard},
    error::{ApiError, ApiResult},
    store::board::{self as cards, CardView},
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(show))
        .routes(routes!(card))
        .routes(routes!(move_card))
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

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct BoardParams {
    /// Only this mission's cards.
    mission: Option<Uuid>,
}

/// The board: every column in board order with its cards (at most 2000 in all), optionally of one mission.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/board",
    tag = "board",
    operation_id = "get_board",
    params(BoardParams),
    responses(
        (status = 200, description = "The board", body = Board),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized)
    ),
    security(("api_token" = []))
)]
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

/// Shows a card.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/board/cards/{id}",
    tag = "board",
    operation_id = "get_card",
    params(("id" = Uuid, Path, description = "Card id")),
    responses(
        (status = 200, description = "The card", body = CardView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
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

/// Moves a card by hand: a card in `needs_human` moved to `done` completes its task, to `ready` retries it; the coordinator moves all others.
///
/// Roles: admin, operator, stakeholder.
#[utoipa::path(
    post,
    path = "/v1/board/cards/{id}/move",
    tag = "board",
    operation_id = "move_card",
    params(("id" = Uuid, Path, description = "Card id")),
    request_body = MoveCard,
    responses(
        (status = 200, description = "Moved: the card after the move", body = CardView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The move is refused (`move_refused`: not from `needs_human`, not to `done` or `ready`, or not a mission task), the card changed since `version` (`version_conflict`), or the task changed meanwhile (`invalid_state`, `conflict`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
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

/// `GET /v1/board` answer.
#[derive(utoipa::ToSchema)]
pub struct Board {
    /// The mission asked for, or null for the whole workspace.
    pub mission_id: Option<Uuid>,
    /// Every column, in board order, even when empty.
    pub columns: Vec<BoardColumnCards>,
    /// True when there were more than 2000 cards and some are left out.
    pub truncated: bool,
}

/// One column of the board.
#[derive(utoipa::ToSchema)]
pub struct BoardColumnCards {
    /// The column.
    pub name: crate::domain::BoardColumn,
    /// Cards shown in it.
    #[schema(minimum = 0)]
    pub count: u64,
    /// Its cards, in plan order.
    pub cards: Vec<CardView>,
}

// Card moves' errors as the one JSON error body.
impl From<board::BoardError> for ApiError {
    fn from(e: board::BoardError) -> Self {
        use board::BoardError as E;
        let message = e.to_string();
        match e {
            E::Invalid(e) => e.into(),
            E::CardNotFound(_) => ApiError::NotFound(message),
            E::VersionConflict { .. } => ApiError::conflict("version_conflict", message),
            E::MoveRefused(_) => ApiError::conflict("move_refused", message),
            E::Resolve(e) => (*e).into(),
            E::Database(e) => e.into(),
            E::Unexpected(e) => ApiError::Unexpected(e),
        }
    }
}

#[cfg(test)]
mod error_tests {
    use axum::{http::StatusCode, response::IntoResponse};
    use uuid::Uuid;

    use super::{ApiError, board::BoardError};

    async fn status_and_code(e: BoardError) -> (StatusCode, String) {
        let r = ApiError::from(e).into_response();
        let status = r.status();
        let body = axum::body::to_bytes(r.into_body(), usize::MAX)
            .await
            .unwrap();
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        (status, v["error"]["code"].as_str().unwrap().to_owned())
    }

    #[tokio::test]
    async fn board_errors_keep_their_status_and_code() {
        assert_eq!(
            status_and_code(BoardError::MoveRefused("no".into())).await,
            (StatusCode::CONFLICT, "move_refused".to_owned())
        );
        assert_eq!(
            status_and_code(BoardError::CardNotFound(Uuid::nil())).await,
            (StatusCode::NOT_FOUND, "not_found".to_owned())
        );
    }
}
