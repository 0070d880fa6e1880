//! Typed payloads of the events agents cause through their tools (the
//! `agents` area of the catalogue): the mission blackboard, discovered work,
//! handoffs between agents, refused tool calls and plan steps.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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

/// `plan.step_recorded`: an agent reported a step of one of its intentions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlanStepRecorded {
    /// The agent.
    pub agent_id: String,
    /// The intention whose plan the step belongs to.
    pub intention_id: uuid::Uuid,
    /// The step, in the agent's own naming.
    pub step_id: String,
    /// `pending`, `executing`, `completed` or `failed`.
    pub status: String,
    /// The intention's progress after the report.
    pub progress: f64,
    /// How long the step took, as the agent says it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actual_duration: Option<String>,
    /// What happened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// What it produced (files, documents, links).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub artifacts_produced: Vec<String>,
    /// Observations for the learning phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notes: Option<String>,
}

impl EventPayload for PlanStepRecorded {
    const KIND: EventKind = EventKind::PlanStepRecorded;
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
            keys(&PlanStepRecorded {
                agent_id: "a".into(),
                intention_id: uuid::Uuid::nil(),
                step_id: "s".into(),
                status: "completed".into(),
                progress: 0.5,
                actual_duration: Some("2h".into()),
                outcome: Some("done".into()),
                artifacts_produced: vec!["report.md".into()],
                notes: Some("n".into()),
            }),
        ];
        for (kind, fields) in samples {
            let listed: BTreeSet<String> = kind
                .payload_fields()
                .iter()
                .map(|f| f.to_string())
                .collect();
            assert_eq!(fields, listed, "{kind}");
        }
    }
}
