//! The kanban bridge: what moving a card on the board means.
//!
//! Cards mirror mission tasks and the engine moves them. A person may move a
//! card only where the move is a decision the coordinator understands: a
//! card that needs a person can go to `done` (completes the task with the
//! output given) or to `ready` (retries it with fresh attempts). Every other
//! move is refused with the reason.

use serde::Deserialize;
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::{
    auth::Principal,
    domain::BoardColumn,
    missions::human::{self, HumanAction, HumanActionError, ResolveRequest},
    store::board::{self, CardView},
};

/// Why moving a card was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum BoardError {
    /// A request field is wrong.
    #[error(transparent)]
    Invalid(#[from] coordinator_core::invalid::Invalid),
    /// No such card in the workspace.
    #[error("no card {0}")]
    CardNotFound(Uuid),
    /// The card changed since the version the caller read.
    #[error(
        "the card changed since version {given} (now {now}, in {column}); reload and try again"
    )]
    VersionConflict {
        /// The version the caller named.
        given: i64,
        /// The version now.
        now: i64,
        /// The column it is in now.
        column: String,
    },
    /// The move is not a decision the coordinator understands.
    #[error("{0}")]
    MoveRefused(String),
    /// Settling the card's task failed.
    #[error(transparent)]
    Resolve(#[from] Box<HumanActionError>),
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// Anything else.
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// `POST /v1/board/cards/{id}/move` body.
#[derive(Debug, Clone, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MoveCard {
    /// Target column: from `needs_human`, `done` completes the task and `ready` retries it.
    #[schema(value_type = crate::domain::BoardColumn)]
    pub to: String,
    /// The card version the mover saw; a newer card refuses the move (409).
    #[serde(default)]
    pub version: Option<i64>,
    /// The result, when moving to `done` (any JSON; default `{"completed_on": "board"}`).
    #[serde(default)]
    pub output: Option<Value>,
    /// Guidance for the retry, when moving to `ready`; a note otherwise.
    #[serde(default)]
    pub feedback: Option<String>,
}

/// What a move from `from` to `to` means, or why it is refused.
pub fn move_meaning(from: BoardColumn, to: BoardColumn) -> Result<HumanAction, String> {
    use BoardColumn::*;
    match (from, to) {
        (NeedsHuman, Done) => Ok(HumanAction::Complete),
        (NeedsHuman, Ready) => Ok(HumanAction::Retry),
        (NeedsHuman, _) => Err(format!(
            "a card that needs a person can move to done (complete it) or ready (retry it), not to {to}"
        )),
        (f, t) if f == t => Err(format!("the card is already in {t}")),
        (Done | Failed, _) => Err(format!(
            "the task is finished ({from}); finished tasks do not move"
        )),
        (f, _) => Err(format!(
            "the coordinator moves cards in {f}; only cards in needs_human can be moved by hand"
        )),
    }
}

/// Moves a card: resolves its task as the move means, or refuses with 409.
pub async fn move_card(
    pool: &PgPool,
    http: &crate::egress::Client,
    who: &Principal,
    card_id: Uuid,
    req: MoveCard,
) -> Result<CardView, BoardError> {
    let to: BoardColumn = req.to.parse().map_err(|_| {
        coordinator_core::invalid::Invalid::new(
            "to",
            "to must be a column: backlog, ready, in_progress, needs_human, review, done or failed",
        )
    })?;
    let card = board::get(pool, who.workspace_id, card_id)
        .await?
        .ok_or(BoardError::CardNotFound(card_id))?;
    let from: BoardColumn = card.column.parse().map_err(|_| {
        BoardError::Unexpected(anyhow::anyhow!("card {card_id} has an unknown column"))
    })?;
    if let Some(v) = req.version
        && v != card.version
    {
        return Err(BoardError::VersionConflict {
            given: v,
            now: card.version,
            column: card.column.clone(),
        });
    }
    let action = move_meaning(from, to).map_err(BoardError::MoveRefused)?;
    let (Some(mission), Some(key)) = (card.mission_id, card.task_key.clone()) else {
        return Err(BoardError::MoveRefused(
            "this card is not a mission task; nothing to decide".into(),
        ));
    };
    if action != HumanAction::Complete && req.output.is_some() {
        return Err(coordinator_core::invalid::Invalid::new(
            "output",
            "output is only taken when moving to done",
        )
        .into());
    }
    let resolve = ResolveRequest {
        action,
        output: match action {
            HumanAction::Complete => Some(
                req.output
                    .unwrap_or_else(|| json!({ "completed_on": "board" })),
            ),
            _ => None,
        },
        feedback: req.feedback,
    };
    human::resolve(pool, http, who, mission, &key, resolve)
        .await
        .map_err(Box::new)?;
    board::get(pool, who.workspace_id, card_id)
        .await?
        .ok_or(BoardError::CardNotFound(card_id))
}

#[cfg(test)]
mod tests {
    use super::*;
    use BoardColumn::*;

    #[test]
    fn only_needs_human_cards_move_and_only_to_done_or_ready() {
        assert_eq!(move_meaning(NeedsHuman, Done), Ok(HumanAction::Complete));
        assert_eq!(move_meaning(NeedsHuman, Ready), Ok(HumanAction::Retry));
        let all = [Backlog, Ready, InProgress, NeedsHuman, Review, Done, Failed];
        for from in all {
            for to in all {
                if from == NeedsHuman && matches!(to, Done | Ready) {
                    continue;
                }
                let reason = move_meaning(from, to).expect_err("refused");
                assert!(!reason.is_empty());
            }
        }
        assert!(
            move_meaning(InProgress, Done)
                .unwrap_err()
                .contains("only cards in needs_human")
        );
        assert!(move_meaning(Done, Ready).unwrap_err().contains("finished"));
    }
}
