//! Typed payloads of the events agents cause through their tools (the
//! `agents` area of the catalogue): the mission blackboard, discovered work,
//! handoffs between agents and refused tool calls.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use crate::event_payloads::EventPayload;
use crate::events::EventKind;

/// `blackboard.written`: a key of the mission's blackboard was written.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BlackboardWritten {
    /// The key.
    pub key: String,
    /// Its version after the write (1 for a new key).
    pub version: i64,
    /// The value written.
    pub value: Value,
    /// The version the writer said it read, when the write was a compare-and-set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_version: Option<i64>,
}

/// `blackboard.deleted`: a key of the mission's blackboard was deleted.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BlackboardDeleted {
    /// The key.
    pub key: String,
    /// Its version after the delete (the tombstone's).
    pub version: i64,
    /// The version the deleter said it read, when it was a compare-and-set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_version: Option<i64>,
}

/// `plan.extended`: an agent added the work it discovered to its mission.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlanExtended {
    /// Key of the task the new ones were placed around (the agent's task).
    pub anchor: String,
    /// `successor` or `child`.
    pub placement: String,
    /// Keys of the tasks added.
    pub added: Vec<String>,
    /// Why, in the agent's words.
    pub reason: String,
    /// The plan version before the change (the new one is one more).
    pub previous_plan_version: i32,
    /// True when the mission waits for a person to approve the change.
    pub needs_approval: bool,
}

/// `task.handed_off`: an agent handed its running task to another agent;
/// its attempt ended (not a failure) and the task is queued for the receiver.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskHandedOff {
    /// The task's key.
    pub key: String,
    /// The handoff (`GET /v1/handoffs/{id}`).
    pub handoff_id: Uuid,
    /// The agent that handed it off.
    pub from: String,
    /// The agent that receives it (the task is pinned to it).
    pub to: String,
    /// The role asked for, when the receiver was chosen by role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to_role: Option<String>,
    /// The receiver's assignment score for the task.
    pub score: f64,
    /// The attempt that ended.
    pub attempt_id: Uuid,
    /// What the receiver needs to know (also its dispatch's `feedback`).
    pub context_summary: String,
}

impl EventPayload for TaskHandedOff {
    const KIND: EventKind = EventKind::TaskHandedOff;
}

impl EventPayload for PlanExtended {
    const KIND: EventKind = EventKind::PlanExtended;
}

impl EventPayload for BlackboardWritten {
    const KIND: EventKind = EventKind::BlackboardWritten;
}

impl EventPayload for BlackboardDeleted {
    const KIND: EventKind = EventKind::BlackboardDeleted;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn keys<P: EventPayload>(p: &P) -> (EventKind, BTreeSet<String>) {
        let (kind, v) = p.to_event();
        let keys = v
            .as_object()
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        (kind, keys)
    }

    /// Every field a fully populated payload writes is in the catalogue, and
    /// every catalogued field is one it writes.
    #[test]
    fn payload_fields_match_the_catalogue() {
        let samples = vec![
            keys(&BlackboardWritten {
                key: "k".into(),
                version: 2,
                value: Value::Null,
                expected_version: Some(1),
            }),
            keys(&BlackboardDeleted {
                key: "k".into(),
                version: 3,
                expected_version: Some(2),
            }),
            keys(&PlanExtended {
                anchor: "a".into(),
                placement: "successor".into(),
                added: vec!["x".into()],
                reason: "r".into(),
                previous_plan_version: 1,
                needs_approval: false,
            }),
            keys(&TaskHandedOff {
                key: "k".into(),
                handoff_id: Uuid::nil(),
                from: "a".into(),
                to: "b".into(),
                to_role: Some("writer".into()),
                score: 0.5,
                attempt_id: Uuid::nil(),
                context_summary: "s".into(),
            }),
        ];
        for (kind, fields) in samples {
            let mut listed: BTreeSet<String> = kind
                .payload_fields()
                .iter()
                .map(|f| f.to_string())
                .collect();
            // Task transitions get `status` when they are recorded.
            listed.remove("status");
            assert_eq!(fields, listed, "{kind}");
        }
    }
}
