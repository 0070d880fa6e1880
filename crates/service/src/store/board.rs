//! Board cards (`board_tasks`): the kanban mirror of mission tasks. Cards
//! are written by the task transitions themselves (see [`super::tasks::record`]),
//! in the same statement as the task's event; this module only reads them.

use serde::Serialize;
use serde_json::{Value, json};
use sqlx::PgExecutor;
use time::OffsetDateTime;
use uuid::Uuid;

/// A card as the board shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct CardView {
    /// Card id.
    pub id: Uuid,
    /// Column (`backlog`, `ready`, `in_progress`, `needs_human`, `review`, `done`, `failed`).
    #[schema(value_type = crate::domain::BoardColumn)]
    pub column: String,
    /// Task title.
    pub title: String,
    /// Where it came from (`orchestration` for mission tasks).
    pub source_type: String,
    /// The mission.
    pub mission_id: Option<Uuid>,
    /// The mission's goal.
    pub mission_goal: Option<String>,
    /// The task.
    pub task_id: Option<Uuid>,
    /// The task's key within its plan.
    pub task_key: Option<String>,
    /// Agent working on it (or who last did).
    pub assignee: Option<String>,
    /// Attempts so far.
    pub attempt: i32,
    /// Money spent on it.
    pub cost: f64,
    /// Bumped on every change (the optimistic-lock token for moves).
    pub version: i64,
    /// Last change.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    /// Related API addresses by name: `move` always; `mission` and `events` for
    /// mission tasks; `resolve` while the card is in `needs_human`.
    #[schema(value_type = std::collections::BTreeMap<String, String>)]
    pub links: Value,
}

struct Row {
    id: Uuid,
    column_name: String,
    title: String,
    source_type: String,
    run_id: Option<Uuid>,
    goal: Option<String>,
    source_id: Option<Uuid>,
    task_key: Option<String>,
    assignee: Option<String>,
    attempt_number: i32,
    cost: f64,
    version: i64,
    updated_at: OffsetDateTime,
}

impl From<Row> for CardView {
    fn from(r: Row) -> Self {
        let mut links = serde_json::Map::new();
        links.insert(
            "move".into(),
            json!(format!("/v1/board/cards/{}/move", r.id)),
        );
        if let Some(run) = r.run_id {
            links.insert("mission".into(), json!(format!("/v1/missions/{run}")));
            links.insert("events".into(), json!(format!("/v1/missions/{run}/events")));
            if let (Some(key), "needs_human") = (&r.task_key, r.column_name.as_str()) {
                links.insert(
                    "resolve".into(),
                    json!(format!("/v1/missions/{run}/tasks/{key}/resolve")),
                );
            }
        }
        CardView {
            id: r.id,
            column: r.column_name,
            title: r.title,
            source_type: r.source_type,
            mission_id: r.run_id,
            mission_goal: r.goal,
            task_id: r.source_id,
            task_key: r.task_key,
            assignee: r.assignee,
            attempt: r.attempt_number,
            cost: r.cost,
            version: r.version,
            updated_at: r.updated_at,
            links: Value::Object(links),
        }
    }
}

/// The workspace's cards (optionally one mission's), in plan order.
pub async fn list(
    db: impl PgExecutor<'_>,
    workspace_id: Uuid,
    mission_id: Option<Uuid>,
    limit: i64,
) -> sqlx::Result<Vec<CardView>> {
    let rows = sqlx::query_as!(
        Row,
        r#"SELECT b.id, b.column_name, b.title, b.source_type, b.run_id, r.goal AS "goal?",
                  b.source_id, t.task_key AS "task_key?", b.assignee, b.attempt_number, b.cost,
                  b.version, b.updated_at
           FROM board_tasks b
           LEFT JOIN orchestration_runs r ON r.id = b.run_id
           LEFT JOIN orchestration_tasks t ON t.id = b.source_id
           WHERE b.workspace_id = $1 AND ($2::uuid IS NULL OR b.run_id = $2)
           ORDER BY r.created_at DESC NULLS LAST, b.run_id, t.task_order, b.created_at
           LIMIT $3"#,
        workspace_id,
        mission_id,
        limit
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(CardView::from).collect())
}

/// One card.
pub async fn get(
    db: impl PgExecutor<'_>,
    workspace_id: Uuid,
    card_id: Uuid,
) -> sqlx::Result<Option<CardView>> {
    Ok(by_ids(db, workspace_id, &[card_id], &[]).await?.pop())
}

/// Cards by card id or by task id, for webhook bodies and moves.
pub async fn by_ids(
    db: impl PgExecutor<'_>,
    workspace_id: Uuid,
    card_ids: &[Uuid],
    task_ids: &[Uuid],
) -> sqlx::Result<Vec<CardView>> {
    let rows = sqlx::query_as!(
        Row,
        r#"SELECT b.id, b.column_name, b.title, b.source_type, b.run_id, r.goal AS "goal?",
                  b.source_id, t.task_key AS "task_key?", b.assignee, b.attempt_number, b.cost,
                  b.version, b.updated_at
           FROM board_tasks b
           LEFT JOIN orchestration_runs r ON r.id = b.run_id
           LEFT JOIN orchestration_tasks t ON t.id = b.source_id
           WHERE b.workspace_id = $1 AND (b.id = ANY($2) OR b.source_id = ANY($3))"#,
        workspace_id,
        card_ids,
        task_ids
    )
    .fetch_all(db)
    .await?;
    Ok(rows.into_iter().map(CardView::from).collect())
}
