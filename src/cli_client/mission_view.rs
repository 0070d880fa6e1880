//! A mission as `mission show` prints it: its fields, honest progress by
//! outcome, what waits for a person, and its tasks.

use super::{
    operator::needs_you,
    table::{Table, datetime, fields, gauge, money, or_dash, truncate},
};
use crate::client::Mission;

/// The progress by outcome: "4 of 11 done · 2 failed · 5 cancelled"; the
/// percentage is of what succeeded, so a failed mission never shows 100 %.
pub(super) fn progress_text(m: &Mission) -> String {
    let p = m.progress.outcomes();
    let mut text = format!(
        "{} {} of {} done ({}%)",
        gauge(p.done, p.total, 20),
        p.done,
        p.total,
        p.percent
    );
    for (n, what) in [
        (p.failed, "failed"),
        (p.cancelled, "cancelled"),
        (p.skipped, "skipped"),
        (p.waiting, "waiting for a person"),
        (p.remaining, "to go"),
    ] {
        if n > 0 {
            text.push_str(&format!(" · {n} {what}"));
        }
    }
    text
}

pub(super) fn mission_text(m: &Mission) -> String {
    let budget = match m.budget.limit {
        Some(limit) => format!("{} spent of {}", money(m.budget.spent), money(limit)),
        None => format!("{} spent (no limit)", money(m.budget.spent)),
    };
    let mut text = fields(&[
        ("mission", m.id.to_string()),
        ("title", m.title.clone().unwrap_or_default()),
        ("goal", m.goal.clone()),
        ("status", format!("{} ({} mode)", m.status, m.autonomy)),
        ("labels", m.labels.join(", ")),
        (
            "plan",
            format!(
                "version {} by the {} planner",
                m.plan_version,
                or_dash(m.planner.as_deref())
            ),
        ),
        ("progress", progress_text(m)),
        ("budget", budget),
        (
            "deadline",
            m.deadline.map(|t| datetime(Some(t))).unwrap_or_default(),
        ),
        ("critical", m.critical_path.join(" → ")),
        ("created", datetime(m.created_at)),
        (
            "started",
            m.started_at.map(|t| datetime(Some(t))).unwrap_or_default(),
        ),
        (
            "finished",
            m.finished_at.map(|t| datetime(Some(t))).unwrap_or_default(),
        ),
        ("detail", m.status_detail.clone().unwrap_or_default()),
        ("failure", m.failure_reason.clone().unwrap_or_default()),
        (
            "archived",
            m.archived_at.map(|t| datetime(Some(t))).unwrap_or_default(),
        ),
    ]);
    if !m.attention.is_empty() {
        text.push_str("\nNeeds you:\n");
        text.push_str(&needs_you(&m.attention));
    }
    if !m.tasks.is_empty() {
        let mut t = Table::new(&[
            "KEY",
            "TITLE",
            "STATUS",
            "AGENT",
            "ATTEMPTS",
            "COST",
            "LAST ERROR",
        ]);
        for task in &m.tasks {
            t.row(vec![
                task.key.clone(),
                truncate(&task.title, 40),
                task.status.clone(),
                or_dash(task.assigned_agent_id.as_deref()),
                task.attempts.to_string(),
                money(task.actual_cost),
                or_dash(
                    task.last_error
                        .as_deref()
                        .map(|e| truncate(e, 50))
                        .as_deref(),
                ),
            ]);
        }
        text.push('\n');
        text.push_str(&t.render());
    }
    text
}

#[cfg(test)]
pub(super) mod fixture {
    use serde_json::json;
    use uuid::Uuid;

    use crate::client::Mission;

    /// A mission with one task, as the service would send it.
    pub(in crate::cli_client) fn mission() -> Mission {
        let task_id = Uuid::from_u128(7);
        serde_json::from_value(json!({
            "id": Uuid::from_u128(1), "goal": "Write a report", "autonomy": "approve",
            "status": "executing", "plan_version": 1, "planner": "template",
            "budget": {"limit": 5.0, "spent": 1.5},
            "progress": {"total": 4, "finished": 1, "done": 1, "remaining": 3, "percent": 25,
                         "by_status": {}},
            "critical_path": ["scope", "draft"],
            "tasks": [{"id": task_id, "key": "scope", "title": "Scope the report",
                       "status": "succeeded", "assigned_agent_id": "planner", "attempts": 1,
                       "actual_cost": 0.5}],
            "created_at": "2025-06-01T12:00:00Z"
        }))
        .expect("mission")
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{fixture::mission, *};

    #[test]
    fn a_mission_as_text() {
        let text = mission_text(&mission());
        assert!(
            text.contains("status    executing (approve mode)\n"),
            "{text}"
        );
        assert!(text.contains("budget    1.50 spent of 5.00\n"), "{text}");
        assert!(text.contains("critical  scope → draft\n"), "{text}");
        assert!(text.contains("1 of 4 done (25%) · 3 to go"), "{text}");
        assert!(!text.contains("finished"), "{text}");
        assert!(
            text.contains("scope  Scope the report  succeeded  planner  1         0.50"),
            "{text}"
        );
    }

    #[test]
    fn a_failed_mission_never_shows_100_percent() {
        let mut m = mission();
        m.status = "failed".into();
        m.progress = serde_json::from_value(json!({
            "total": 11, "finished": 11, "percent": 36, "done": 4, "failed": 2,
            "cancelled": 5, "skipped": 0, "waiting": 0, "remaining": 0, "by_status": {}
        }))
        .expect("progress");
        let text = progress_text(&m);
        assert!(
            text.ends_with("4 of 11 done (36%) · 2 failed · 5 cancelled"),
            "{text}"
        );
        // From a service that sends only the counts by status, the same.
        m.progress = serde_json::from_value(json!({
            "total": 11, "finished": 11, "percent": 100,
            "by_status": {"succeeded": 4, "failed": 2, "cancelled": 5}
        }))
        .expect("progress");
        assert_eq!(progress_text(&m), text);
    }
}
