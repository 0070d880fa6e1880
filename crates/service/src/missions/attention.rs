//! "Needs you": everything that waits for a person (a plan to approve,
//! results to review, a task handed to a person or refused by the budget, a
//! pending decision, a tool call to approve), each with the verbs that
//! settle it and the CLI command to run. The board's Approvals panel,
//! `mission show`, `mission watch` and `coordinator inbox` all read this.

use serde::{Deserialize, Serialize};
use sqlx::PgPool;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::store::attention::{self, AttentionRow};
use coordinator_core::numbers::{count, human};

/// What kind of wait an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AttentionKind {
    /// An approve-mode plan waits for approval.
    PlanApproval,
    /// An approve-mode mission's results wait for review.
    ResultsReview,
    /// A task was handed to a person (escalation, handoff, delegation).
    HumanTask,
    /// A task's estimated cost does not fit the budget left.
    Budget,
    /// A governance decision (a blocker, a gate) is pending.
    Decision,
    /// An agent's tool call waits for approval.
    ToolApproval,
}

/// One thing that waits for a person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AttentionItem {
    /// What kind of wait.
    pub kind: AttentionKind,
    /// The mission (absent for a decision outside any mission).
    pub mission_id: Option<Uuid>,
    /// The mission's title, else its goal (at most 200 characters).
    pub mission_title: Option<String>,
    /// The task, when it is about one.
    pub task_id: Option<Uuid>,
    /// Its key.
    pub task_key: Option<String>,
    /// The decision or tool approval id, for those kinds.
    pub id: Option<Uuid>,
    /// One sentence: what waits and why.
    pub summary: String,
    /// Since when.
    #[serde(with = "time::serde::rfc3339")]
    pub since: OffsetDateTime,
    /// The verbs that settle it (for the REST action of its kind).
    pub actions: Vec<String>,
    /// The CLI command that settles it (`A|B` marks a choice).
    pub command: String,
}

/// `GET /v1/attention` answer.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AttentionList {
    /// Oldest first (at most 500).
    pub items: Vec<AttentionItem>,
}

/// Longest mission title or detail quoted in an item, in characters.
const MAX_QUOTE_CHARS: usize = 200;

/// Everything in the workspace (or one mission) that waits for a person.
pub async fn list(
    pool: &PgPool,
    workspace_id: Uuid,
    mission_id: Option<Uuid>,
) -> sqlx::Result<Vec<AttentionItem>> {
    let mut conn = pool.acquire().await?;
    let rows = attention::list(&mut conn, workspace_id, mission_id).await?;
    Ok(rows.into_iter().map(item).collect())
}

/// What waits for a person in one mission.
pub async fn for_mission(
    pool: &PgPool,
    workspace_id: Uuid,
    mission_id: Uuid,
) -> sqlx::Result<Vec<AttentionItem>> {
    list(pool, workspace_id, Some(mission_id)).await
}

/// `text` cut to [`MAX_QUOTE_CHARS`], with an ellipsis when cut.
fn quote(text: &str) -> String {
    let text = text.trim();
    if text.chars().count() <= MAX_QUOTE_CHARS {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(MAX_QUOTE_CHARS).collect();
    cut.push('…');
    cut
}

fn verbs(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| (*s).to_owned()).collect()
}

/// A budget that fits `estimate` on top of what is spent (or the old limit,
/// if higher), rounded up to a cent.
fn budget_to_fit(limit: Option<f64>, spent: f64, estimate: f64) -> f64 {
    let floor = limit.unwrap_or(0.0).max(spent);
    // Less a hair, so 0.03 + 0.01 (4.000000000000001 cents) asks for 0.04.
    ((floor + estimate.max(0.0)) * 100.0 - 1e-6).ceil() / 100.0
}

/// The item a stored row says: its summary, verbs and command.
fn item(r: AttentionRow) -> AttentionItem {
    let mission = r.mission_id.map(|m| m.to_string()).unwrap_or_default();
    let key = r.task_key.clone().unwrap_or_default();
    let id = r.item_id.map(|i| i.to_string()).unwrap_or_default();
    let detail = r.detail.as_deref().map(quote);
    let (kind, summary, actions, command) = match r.kind.as_str() {
        "plan_approval" => (
            AttentionKind::PlanApproval,
            format!(
                "The plan ({}) waits for approval.",
                count(r.amount.unwrap_or(0.0) as usize, "task", "tasks")
            ),
            verbs(&["approve", "reject"]),
            format!("coordinator mission approve {mission}"),
        ),
        "results_review" => (
            AttentionKind::ResultsReview,
            "The results wait for review: accept them, or name the tasks to redo.".to_owned(),
            verbs(&["accept", "reject"]),
            format!("coordinator mission review {mission} --accept"),
        ),
        "budget" => {
            let estimate = r.amount.unwrap_or(0.0);
            let fit = budget_to_fit(r.budget_limit, r.budget_spent, estimate);
            (
                AttentionKind::Budget,
                format!(
                    "Task '{key}' (estimated {}) does not fit the budget ({} of {} spent or committed): \
                     raise the budget to at least {}, or skip or fail the task.",
                    human(estimate),
                    human(r.budget_spent),
                    human(r.budget_limit.unwrap_or(0.0)),
                    human(fit)
                ),
                verbs(&["raise_budget", "skip", "fail"]),
                format!("coordinator mission edit {mission} --budget {}", human(fit)),
            )
        }
        "decision" => (
            AttentionKind::Decision,
            match (&r.task_key, &detail) {
                (Some(k), Some(d)) => format!("Task '{k}' waits for a decision: {d}"),
                (None, Some(d)) => format!("A decision waits: {d}"),
                (_, None) => "A decision waits.".to_owned(),
            },
            verbs(&["approved", "rejected", "deferred", "modified"]),
            format!(
                "coordinator decision resolve {id} --outcome approved|rejected|deferred|modified"
            ),
        ),
        "tool_approval" => (
            AttentionKind::ToolApproval,
            format!(
                "A tool call ({}) in task '{key}' waits for approval.",
                detail.as_deref().unwrap_or("unknown tool")
            ),
            verbs(&["approved", "denied"]),
            format!("coordinator tool-approval resolve {id} --outcome approved|denied"),
        ),
        _ => (
            AttentionKind::HumanTask,
            match &detail {
                Some(d) => format!("Task '{key}' waits for a person: {d}"),
                None => format!("Task '{key}' waits for a person."),
            },
            verbs(&["complete", "retry", "skip", "fail"]),
            format!("coordinator task resolve {mission} {key} --action complete|retry|skip|fail"),
        ),
    };
    AttentionItem {
        kind,
        mission_id: r.mission_id,
        mission_title: r.mission_name.as_deref().map(quote),
        task_id: r.task_id,
        task_key: r.task_key,
        id: r.item_id,
        summary,
        since: r.since,
        actions,
        command,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kind: &str) -> AttentionRow {
        AttentionRow {
            kind: kind.to_owned(),
            mission_id: Some(Uuid::nil()),
            mission_name: Some("x".repeat(500)),
            task_id: Some(Uuid::nil()),
            task_key: Some("draft".to_owned()),
            item_id: None,
            detail: Some("model timed out".to_owned()),
            amount: Some(0.3),
            budget_limit: Some(1.0),
            budget_spent: 0.9,
            since: OffsetDateTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn a_budget_item_says_how_much_budget_fits() {
        let i = item(row("budget"));
        assert_eq!(i.kind, AttentionKind::Budget);
        assert!(i.summary.contains("at least 1.3"), "{}", i.summary);
        assert!(i.command.ends_with("--budget 1.3"), "{}", i.command);
        assert_eq!(budget_to_fit(None, 0.0, 0.015), 0.02);
        assert_eq!(budget_to_fit(Some(5.0), 1.0, 0.5), 5.5);
        assert_eq!(budget_to_fit(Some(0.03), 0.025, 0.01), 0.04);
    }

    #[test]
    fn a_human_task_quotes_why_it_waits_and_how_to_settle_it() {
        let i = item(row("human_task"));
        assert_eq!(
            i.summary,
            "Task 'draft' waits for a person: model timed out"
        );
        assert!(i.command.starts_with("coordinator task resolve "));
        assert_eq!(i.actions, ["complete", "retry", "skip", "fail"]);
        assert_eq!(
            i.mission_title.unwrap().chars().count(),
            MAX_QUOTE_CHARS + 1
        );
    }

    #[test]
    fn every_kind_has_verbs_and_a_command() {
        for k in [
            "plan_approval",
            "results_review",
            "human_task",
            "budget",
            "decision",
            "tool_approval",
        ] {
            let i = item(row(k));
            assert!(!i.actions.is_empty(), "{k}");
            assert!(i.command.starts_with("coordinator "), "{k}");
            assert_eq!(
                serde_json::to_value(i.kind).unwrap(),
                serde_json::json!(k),
                "{k}"
            );
        }
    }
}
