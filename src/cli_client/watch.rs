//! `coordinator mission watch`: a mission's events live, one line each,
//! the progress as it moves, and the command to run when something waits
//! for a person; the exit code says how the mission ended.

use std::{
    collections::{HashMap, HashSet},
    process::ExitCode,
};

use serde_json::Value;
use uuid::Uuid;

use super::{
    CliError, CliResult, EXIT_MISSION_FAILED,
    mission_view::progress_text,
    out,
    table::{clock, truncate},
};
use crate::client::{Client, Event, Mission, is_terminal_status, sse::ReconnectPolicy};

/// Task kinds after which the progress may have moved.
const PROGRESS_KINDS: &[&str] = &[
    "task.succeeded",
    "task.failed",
    "task.skipped",
    "task.cancelled",
    "task.resolved",
    "task.reopened",
    "plan.created",
    "plan.replaced",
];

/// Kinds after which something may wait for a person.
const ATTENTION_KINDS: &[&str] = &[
    "task.awaiting_human",
    "task.awaiting_approval",
    "task.budget_refused",
    "decision.requested",
    "decision.rechecked",
    "tool.approval_requested",
    "mission.budget_warning",
];

/// What `watch` knows about the mission's tasks.
struct Follow {
    mission: Mission,
    /// Task id → title.
    titles: HashMap<Uuid, String>,
    /// Task id → agent of its latest dispatch.
    agents: HashMap<Uuid, String>,
    /// The last progress printed.
    shown: Option<(usize, usize)>,
    /// A refresh failed (and was reported) already.
    refresh_failed: bool,
    /// The waits whose command was printed already.
    hinted: HashSet<String>,
}

impl Follow {
    fn new(mission: Mission) -> Follow {
        let mut f = Follow {
            mission: Mission::default(),
            titles: HashMap::new(),
            agents: HashMap::new(),
            shown: None,
            refresh_failed: false,
            hinted: HashSet::new(),
        };
        f.update(mission);
        f
    }

    fn update(&mut self, mission: Mission) {
        for t in &mission.tasks {
            self.titles.insert(t.id, t.title.clone());
            if let Some(a) = &t.assigned_agent_id {
                self.agents.entry(t.id).or_insert_with(|| a.clone());
            }
        }
        self.mission = mission;
    }

    /// Re-reads the mission; a failure only costs the progress line (the
    /// events keep coming), so it is reported once and otherwise ignored.
    async fn refresh(&mut self, api: &Client, id: &str) -> bool {
        match api.mission(id).await {
            Ok(m) => {
                self.update(m);
                true
            }
            Err(e) => {
                if !std::mem::replace(&mut self.refresh_failed, true) {
                    eprintln!("warning: could not read the mission for progress: {e}");
                }
                false
            }
        }
    }

    /// The command lines for what waits for a person now and was not
    /// shown yet: the mission's attention items, or (from a service that
    /// lists none) the task that `ev` left waiting.
    fn hints(&mut self, ev: &Event) -> Vec<String> {
        let mut lines = Vec::new();
        for item in &self.mission.attention {
            let key = format!(
                "{}:{}",
                item.kind,
                item.id
                    .or(item.task_id)
                    .map(|u| u.to_string())
                    .unwrap_or_default()
            );
            let command = item.command.as_deref().unwrap_or_default();
            if !command.is_empty() && self.hinted.insert(key) {
                lines.push(format!("{}: {command}", item.summary));
            }
        }
        if !self.mission.attention.is_empty() {
            return lines;
        }
        let waiting = ev.task_id.and_then(|id| {
            self.mission
                .tasks
                .iter()
                .find(|t| t.id == id && t.status == "awaiting_human")
        });
        if let Some(task) = waiting
            && self.hinted.insert(format!("task:{}", task.id))
        {
            let mission = self.mission.id;
            let key = &task.key;
            let why = if ev.kind == "task.budget_refused" {
                format!(
                    "the budget refused task {key}: raise it with coordinator mission edit {mission} --budget N, or"
                )
            } else {
                format!("task {key} waits for a person:")
            };
            lines.push(format!(
                "{why} coordinator task resolve {mission} {key} --action complete|retry|skip|fail"
            ));
        }
        lines
    }

    /// The progress line, if it changed since the last one printed.
    fn progress_line(&mut self) -> Option<String> {
        let now = (self.mission.progress.finished, self.mission.progress.total);
        if self.shown == Some(now) {
            return None;
        }
        self.shown = Some(now);
        Some(format!(
            "{}  progress {}\n",
            " ".repeat(8),
            progress_text(&self.mission)
        ))
    }

    /// One line for `ev`: time, kind, task title, and what the payload says.
    fn line(&mut self, ev: &Event) -> String {
        let p = &ev.payload;
        let s = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("");
        let task = ev.task_id.map(|id| {
            self.titles
                .get(&id)
                .cloned()
                .unwrap_or_else(|| s("key").to_owned())
        });
        if let (Some(id), "task.dispatched") = (ev.task_id, ev.kind.as_str())
            && !s("agent_id").is_empty()
        {
            self.agents.insert(id, s("agent_id").to_owned());
        }
        let agent = ev
            .task_id
            .and_then(|id| self.agents.get(&id))
            .cloned()
            .unwrap_or_else(|| "?".to_owned());
        let detail = match ev.kind.as_str() {
            "mission.created" => truncate(s("goal"), 60),
            "mission.status_changed" => {
                let reason = s("reason");
                if reason.is_empty() {
                    format!("{} → {}", s("from"), s("to"))
                } else {
                    format!("{} → {}: {}", s("from"), s("to"), truncate(reason, 60))
                }
            }
            "plan.created" => format!(
                "version {}: {} tasks by the {} planner",
                p.get("plan_version").unwrap_or(&Value::Null),
                // A count (or, in older logs, the task list).
                p.get("tasks")
                    .and_then(|t| t.as_u64().or_else(|| t.as_array().map(|a| a.len() as u64)))
                    .unwrap_or(0),
                p.pointer("/provenance/planner")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
            ),
            "task.dispatched" => format!(
                "→ {agent} (attempt {})",
                p.get("attempt").unwrap_or(&Value::Null)
            ),
            "task.succeeded" => format!("by {agent}"),
            "task.retry_scheduled" => format!(
                "attempt {} by {agent} failed: {}",
                p.get("attempt").unwrap_or(&Value::Null),
                truncate(s("error"), 60)
            ),
            "task.failed" | "task.awaiting_human" => truncate(s("error"), 70),
            "task.escalated" => format!("rung {}", s("rung")),
            "task.skipped" | "task.cancelled" | "task.deferred" => truncate(s("reason"), 70),
            "task.resolved" => s("action").to_owned(),
            _ => String::new(),
        };
        let mut line = match task {
            Some(title) => format!(
                "{}  {:<24}  {:<36}  {detail}",
                clock(ev.created_at),
                ev.kind,
                truncate(&title, 36)
            ),
            None => format!("{}  {:<24}  {detail}", clock(ev.created_at), ev.kind),
        };
        line.truncate(line.trim_end().len());
        line.push('\n');
        line
    }
}

/// Follows the mission's SSE stream until the mission ends.
pub(super) async fn watch(api: &Client, id: &str, after: i64, json: bool) -> CliResult {
    let mission = api.mission(id).await?;
    let mut follow = Follow::new(mission);
    if !json {
        out(&format!(
            "mission {}: {}\nstatus {}\n",
            follow.mission.id,
            truncate(&follow.mission.goal, 70),
            follow.mission.status
        ))?;
        if let Some(line) = follow.progress_line() {
            out(&line)?;
        }
    }
    let mut stream = api.mission_events(id, after.max(0), ReconnectPolicy::default());
    while let Some(next) = stream.next().await {
        let sse = next?;
        let ev: Event = match serde_json::from_str(&sse.data) {
            Ok(ev) => ev,
            Err(e) => {
                eprintln!("warning: skipped an event that is not JSON ({e})");
                continue;
            }
        };
        if json {
            out(&format!("{}\n", sse.data.trim()))?;
        } else {
            if ev.task_id.is_some_and(|t| !follow.titles.contains_key(&t)) {
                // A replan added tasks since we last looked.
                follow.refresh(api, id).await;
            }
            out(&follow.line(&ev))?;
            if ATTENTION_KINDS.contains(&ev.kind.as_str()) && follow.refresh(api, id).await {
                for hint in follow.hints(&ev) {
                    eprintln!("{hint}");
                }
            }
            if PROGRESS_KINDS.contains(&ev.kind.as_str())
                && follow.refresh(api, id).await
                && let Some(line) = follow.progress_line()
            {
                out(&line)?;
            }
        }
        if ev.kind != "mission.status_changed" {
            continue;
        }
        let to = ev.payload.get("to").and_then(Value::as_str).unwrap_or("");
        if is_terminal_status(to) {
            // The event is the truth; the mission adds the failure reason if we can read it.
            follow.refresh(api, id).await;
            let reason = follow.mission.failure_reason.clone().or_else(|| {
                ev.payload
                    .get("reason")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            });
            return Ok(finish(id, to, reason.as_deref(), json));
        }
        // Only a wait that is still on (not one replayed from the log) needs a person.
        if !json && follow.refresh(api, id).await && follow.mission.status == to {
            match to {
                "awaiting_approval" => {
                    eprintln!("the plan awaits approval: coordinator mission approve {id}")
                }
                "awaiting_review" => {
                    eprintln!("the results await review: coordinator mission review {id} --accept")
                }
                _ => {}
            }
        }
    }
    // The service ended the stream for good (204): report where things are.
    let mission = api.mission(id).await?;
    if mission.is_terminal() {
        return Ok(finish(
            id,
            &mission.status,
            mission.failure_reason.as_deref(),
            json,
        ));
    }
    Err(CliError::Failed(format!(
        "the event stream ended while the mission is {}",
        mission.status
    )))
}

/// Reports how the mission ended; 0 if it completed.
fn finish(id: &str, status: &str, reason: Option<&str>, json: bool) -> ExitCode {
    if status == "completed" {
        if !json {
            eprintln!("mission {id} completed");
        }
        return ExitCode::SUCCESS;
    }
    match reason {
        Some(r) if !r.is_empty() => eprintln!("mission {id} {status}: {r}"),
        _ => eprintln!("mission {id} {status}"),
    }
    if status == "failed" && !json {
        eprintln!(
            "to go on, retry or skip each failed task: coordinator mission continue {id} --retry TASK_KEY"
        );
    }
    ExitCode::from(EXIT_MISSION_FAILED)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{super::mission_view::fixture::mission, *};

    #[test]
    fn watch_lines_name_the_task_and_agent() {
        let mut f = Follow::new(mission());
        let task = Some(Uuid::from_u128(7));
        let ev = |kind: &str, payload: Value| Event {
            kind: kind.into(),
            task_id: task,
            payload,
            created_at: Some(time::macros::datetime!(2025-06-01 12:00:05 UTC)),
            ..Event::default()
        };
        let line = f.line(&ev(
            "task.dispatched",
            json!({"key": "scope", "agent_id": "writer", "attempt": 2}),
        ));
        assert_eq!(
            line,
            format!(
                "12:00:05  task.dispatched           {:<36}  → writer (attempt 2)\n",
                "Scope the report"
            )
        );
        let line = f.line(&ev("task.succeeded", json!({"key": "scope"})));
        assert!(line.ends_with("by writer\n"), "{line}");
        let mut status = ev(
            "mission.status_changed",
            json!({"from": "executing", "to": "completed"}),
        );
        status.task_id = None;
        let line = f.line(&status);
        assert!(line.contains("mission.status_changed"), "{line}");
        assert_eq!(
            line,
            "12:00:05  mission.status_changed    executing → completed\n"
        );
        let mut plan = ev(
            "plan.created",
            json!({"plan_version": 1, "tasks": 4,
            "provenance": {"planner": "template"}}),
        );
        plan.task_id = None;
        assert!(
            f.line(&plan)
                .ends_with("version 1: 4 tasks by the template planner\n")
        );
        assert!(f.progress_line().is_some());
        assert!(
            f.progress_line().is_none(),
            "unchanged progress is not repeated"
        );
    }

    #[test]
    fn watch_prints_the_command_for_what_waits() {
        let mut m = mission();
        m.tasks[0].status = "awaiting_human".into();
        let mut f = Follow::new(m.clone());
        let ev = Event {
            kind: "task.awaiting_human".into(),
            task_id: Some(Uuid::from_u128(7)),
            ..Event::default()
        };
        let hints = f.hints(&ev);
        assert_eq!(hints.len(), 1, "{hints:?}");
        assert!(
            hints[0]
                .contains("coordinator task resolve 00000000-0000-0000-0000-000000000001 scope"),
            "{hints:?}"
        );
        assert!(f.hints(&ev).is_empty(), "shown once");
        // The service's own attention items win, each shown once.
        m.attention = vec![
            serde_json::from_value(json!({
                "kind": "budget", "task_id": Uuid::from_u128(7),
                "summary": "the budget refused task scope",
                "command": "coordinator mission edit 1 --budget 9"
            }))
            .expect("item"),
        ];
        let mut f = Follow::new(m);
        let hints = f.hints(&ev);
        assert_eq!(
            hints,
            ["the budget refused task scope: coordinator mission edit 1 --budget 9"]
        );
        assert!(f.hints(&ev).is_empty());
    }
}
