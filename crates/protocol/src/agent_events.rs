//! Typed payloads of the events agents cause through their tools (the
//! `agents` area of the catalogue): the mission blackboard, discovered work,
//! requests and queries between agents,
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

/// `request.opened`: a REQUEST or QUERY to one agent became a work item.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RequestOpened {
    /// The REQUEST or QUERY message's id.
    pub request_id: Uuid,
    /// `request` or `query`.
    pub kind: String,
    /// Who asked (an actor string).
    pub requester: String,
    /// The agent asked.
    pub recipient: String,
    /// The message's subject.
    pub subject: String,
}

/// How a request or query was settled: the reply, who asked whom.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RequestSettled {
    /// The REQUEST or QUERY message's id.
    pub request_id: Uuid,
    /// `request` or `query`.
    pub kind: String,
    /// Who asked (an actor string).
    pub requester: String,
    /// The agent asked.
    pub recipient: String,
    /// The reply that settled it.
    pub message_id: Uuid,
}

/// `request.agreed`: the recipient agreed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RequestAgreed {
    /// Who, what and by which reply.
    #[serde(flatten)]
    pub settled: RequestSettled,
    /// The task the work became, when the request was within a mission.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub added_task: Option<String>,
}

/// `request.refused`: the recipient refused.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RequestRefused(pub RequestSettled);

/// `request.cancelled`: the requester withdrew it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RequestCancelled(pub RequestSettled);

/// `request.failed`: the recipient replied FAILURE.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RequestFailed(pub RequestSettled);

/// `request.answered`: an INFORM answered a query or reported agreed work done.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RequestAnswered {
    /// Who, what and by which reply.
    #[serde(flatten)]
    pub settled: RequestSettled,
    /// `answered` (a query) or `done` (an agreed request).
    pub status: String,
}

impl EventPayload for RequestOpened {
    const KIND: EventKind = EventKind::RequestOpened;
}

impl EventPayload for RequestAgreed {
    const KIND: EventKind = EventKind::RequestAgreed;
}

impl EventPayload for RequestRefused {
    const KIND: EventKind = EventKind::RequestRefused;
}

impl EventPayload for RequestCancelled {
    const KIND: EventKind = EventKind::RequestCancelled;
}

impl EventPayload for RequestFailed {
    const KIND: EventKind = EventKind::RequestFailed;
}

impl EventPayload for RequestAnswered {
    const KIND: EventKind = EventKind::RequestAnswered;
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

    fn settled() -> RequestSettled {
        RequestSettled {
            request_id: Uuid::nil(),
            kind: "request".into(),
            requester: "agent:a".into(),
            recipient: "b".into(),
            message_id: Uuid::nil(),
        }
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
            keys(&RequestOpened {
                request_id: Uuid::nil(),
                kind: "request".into(),
                requester: "agent:a".into(),
                recipient: "b".into(),
                subject: "s".into(),
            }),
            keys(&RequestAgreed {
                settled: settled(),
                added_task: Some("req-1".into()),
            }),
            keys(&RequestRefused(settled())),
            keys(&RequestCancelled(settled())),
            keys(&RequestFailed(settled())),
            keys(&RequestAnswered {
                settled: settled(),
                status: "answered".into(),
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
