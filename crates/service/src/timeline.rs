//! The mission timeline and its snapshots: pure projections of a mission's
//! event log (seed: "Observability" and "Persistence Requirements").
//!
//! - [`entries`] maps events to timeline entries (plan, step started, step
//!   finished, tool call, handoff, decision, approval), in `seq` order;
//!   other events are not on the timeline.
//! - [`Replay`] folds events into the mission's state (mission status, plan
//!   version, each task's status). A task event names the task's new status
//!   in `payload.status`; the common kinds are also mapped by name, which is
//!   how `tests/it/proof.rs` replays the log too.
//! - [`snapshots`] is the state after each milestone: `plan.created` and
//!   each task's terminal event. Each is exactly a replay of the log up to
//!   its `seq`, so it can be reproduced at any time.

use std::collections::BTreeMap;

use coordinator_protocol::EventKind;
use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use crate::store::events::EventView;

/// What kind of timeline entry an event is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = TimelineCategory)]
pub enum Category {
    /// A plan was created or replaced.
    Plan,
    /// A step (task) was dispatched to an agent.
    StepStarted,
    /// A step reached an end: succeeded, failed, cancelled or skipped.
    StepFinished,
    /// A tool call was reported.
    ToolCall,
    /// Work changed hands.
    Handoff,
    /// A decision was proposed, voted, committed or cancelled, or a governance decision moved.
    Decision,
    /// An approval was asked or given: tool calls, plans, governance gates.
    Approval,
}

/// The category of an event kind; `None` when it is not on the timeline
/// (or is no kind this coordinator writes).
pub fn category(kind: &str) -> Option<Category> {
    use EventKind as K;
    Some(match EventKind::parse(kind)? {
        K::PlanCreated | K::PlanReplaced => Category::Plan,
        K::TaskDispatched => Category::StepStarted,
        K::TaskSucceeded | K::TaskFailed | K::TaskCancelled | K::TaskSkipped => {
            Category::StepFinished
        }
        K::ToolCalled => Category::ToolCall,
        K::HandoffCreated => Category::Handoff,
        K::TeamDecisionProposed
        | K::TeamDecisionVoted
        | K::TeamDecisionCommitted
        | K::TeamDecisionCancelled
        | K::DecisionRequested
        | K::DecisionResolved
        | K::DecisionRechecked => Category::Decision,
        K::ToolApprovalRequested | K::ToolApprovalResolved => Category::Approval,
        K::TaskAwaitingApproval | K::TaskApproved => Category::Approval,
        _ => return None,
    })
}

/// One entry of the timeline.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Entry {
    /// The event's position in the mission's log.
    pub seq: i64,
    /// What kind of entry.
    pub category: Category,
    /// The event kind.
    pub kind: String,
    /// The task, if any.
    pub task_id: Option<Uuid>,
    /// Who caused it.
    pub actor: String,
    /// The event's details.
    pub payload: Value,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub at: time::OffsetDateTime,
}

/// The timeline entries of `events` (in `seq` order).
pub fn entries(events: &[EventView]) -> Vec<Entry> {
    let mut out: Vec<Entry> = events
        .iter()
        .filter_map(|e| {
            Some(Entry {
                seq: e.seq?,
                category: category(&e.kind)?,
                kind: e.kind.clone(),
                task_id: e.task_id,
                actor: e.actor.clone(),
                payload: e.payload.clone(),
                at: e.created_at,
            })
        })
        .collect();
    out.sort_by_key(|e| e.seq);
    out
}

/// The status a task has after an event of this kind, when the kind says.
pub fn task_status_of_kind(kind: &str) -> Option<&'static str> {
    use EventKind as K;
    Some(match EventKind::parse(kind)? {
        K::TaskQueued => "queued",
        K::TaskDispatched => "running",
        K::TaskSucceeded => "succeeded",
        K::TaskRetryScheduled | K::TaskContinued => "retry_wait",
        K::TaskFailed => "failed",
        K::TaskCancelled => "cancelled",
        K::TaskSkipped => "skipped",
        _ => return None,
    })
}

/// The mission's state, replayed from its log.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Replay {
    /// Mission status (`planning` before any status change).
    pub mission_status: String,
    /// Latest plan version.
    pub plan_version: i64,
    /// Each task seen in the log, with its status.
    pub tasks: BTreeMap<Uuid, String>,
}

impl Replay {
    /// The state before any event.
    pub fn new() -> Self {
        Replay {
            mission_status: "planning".into(),
            ..Replay::default()
        }
    }

    /// Applies one event.
    pub fn apply(&mut self, kind: &str, task_id: Option<Uuid>, payload: &Value) {
        if kind == EventKind::MissionStatusChanged.as_str()
            && let Some(to) = payload["to"].as_str()
        {
            self.mission_status = to.to_owned();
        }
        if kind == EventKind::PlanCreated.as_str()
            && let Some(v) = payload["plan_version"].as_i64()
        {
            self.plan_version = v;
        }
        // Only task events move tasks: other events about a task (tool
        // approvals, decisions) may carry a status of their own.
        if let Some(task) = task_id
            && kind.starts_with("task.")
            && let Some(s) = payload["status"]
                .as_str()
                .or_else(|| task_status_of_kind(kind))
        {
            self.tasks.insert(task, s.to_owned());
        }
    }

    /// Replays `events` with `seq <= upto`.
    pub fn up_to(events: &[EventView], upto: i64) -> Self {
        let mut r = Replay::new();
        for e in events.iter().filter(|e| e.seq.is_some_and(|s| s <= upto)) {
            r.apply(&e.kind, e.task_id, &e.payload);
        }
        r
    }
}

/// The mission's state after a milestone.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Snapshot {
    /// The milestone event's `seq`: the state is the log replayed up to it.
    pub seq: i64,
    /// The milestone: `plan.created` or a task's terminal event.
    pub milestone: String,
    /// The task, for a task milestone.
    pub task_id: Option<Uuid>,
    /// The state.
    pub state: Replay,
}

/// Whether an event is a milestone that gets a snapshot.
pub fn is_milestone(kind: &str) -> bool {
    matches!(
        kind,
        "plan.created" | "task.succeeded" | "task.failed" | "task.cancelled" | "task.skipped"
    )
}

/// The snapshots of a mission's log (events in `seq` order), one per milestone.
pub fn snapshots(events: &[EventView]) -> Vec<Snapshot> {
    let mut r = Replay::new();
    let mut out = Vec::new();
    for e in events {
        let Some(seq) = e.seq else { continue };
        r.apply(&e.kind, e.task_id, &e.payload);
        if is_milestone(&e.kind) {
            out.push(Snapshot {
                seq,
                milestone: e.kind.clone(),
                task_id: e.task_id,
                state: r.clone(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn ev(seq: i64, kind: &str, task: Option<Uuid>, payload: Value) -> EventView {
        EventView {
            id: seq,
            seq: Some(seq),
            mission_id: None,
            task_id: task,
            attempt_id: None,
            kind: kind.into(),
            actor: "t".into(),
            payload,
            created_at: time::OffsetDateTime::UNIX_EPOCH,
        }
    }

    fn log() -> (Vec<EventView>, Uuid, Uuid) {
        let (a, b) = (Uuid::from_u128(1), Uuid::from_u128(2));
        let events = vec![
            ev(1, "mission.created", None, json!({})),
            ev(2, "plan.created", None, json!({"plan_version": 1})),
            ev(
                3,
                "mission.status_changed",
                None,
                json!({"from": "planning", "to": "executing"}),
            ),
            ev(4, "task.queued", Some(a), json!({"status": "queued"})),
            ev(5, "task.dispatched", Some(a), json!({"agent_id": "x"})),
            ev(
                6,
                "tool.approval_requested",
                Some(a),
                json!({"approval_status": "pending"}),
            ),
            ev(7, "tool.called", Some(a), json!({"tool": "grep"})),
            ev(8, "task.succeeded", Some(a), json!({"status": "succeeded"})),
            ev(9, "task.queued", Some(b), json!({})),
            ev(
                10,
                "team_decision.committed",
                Some(b),
                json!({"status": "weird"}),
            ),
            ev(11, "task.failed", Some(b), json!({})),
        ];
        (events, a, b)
    }

    #[test]
    fn the_timeline_keeps_categorised_events_in_seq_order() {
        let (mut events, _, _) = log();
        events.reverse();
        let got: Vec<(i64, Category)> = entries(&events)
            .iter()
            .map(|e| (e.seq, e.category))
            .collect();
        assert_eq!(
            got,
            vec![
                (2, Category::Plan),
                (5, Category::StepStarted),
                (6, Category::Approval),
                (7, Category::ToolCall),
                (8, Category::StepFinished),
                (10, Category::Decision),
                (11, Category::StepFinished),
            ]
        );
        assert_eq!(category("handoff.created"), Some(Category::Handoff));
        assert_eq!(category("task.queued"), None);
    }

    #[test]
    fn snapshots_follow_milestones_and_equal_a_replay_to_their_seq() {
        let (events, a, b) = log();
        let snaps = snapshots(&events);
        let seqs: Vec<i64> = snaps.iter().map(|s| s.seq).collect();
        assert_eq!(seqs, vec![2, 8, 11]);
        assert_eq!(snaps[0].state.mission_status, "planning");
        assert_eq!(snaps[0].state.plan_version, 1);
        assert!(snaps[0].state.tasks.is_empty());
        assert_eq!(snaps[1].state.tasks[&a], "succeeded");
        assert_eq!(snaps[1].state.mission_status, "executing");
        assert!(!snaps[1].state.tasks.contains_key(&b));
        // A non-task event with a status does not move the task.
        assert_eq!(Replay::up_to(&events, 10).tasks[&b], "queued");
        assert_eq!(snaps[2].state.tasks[&b], "failed");
        for s in &snaps {
            assert_eq!(s.state, Replay::up_to(&events, s.seq));
        }
    }
}
