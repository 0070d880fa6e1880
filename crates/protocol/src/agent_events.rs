//! Typed payloads of the events agents cause through their tools (the
//! `agents` area of the catalogue): the mission blackboard, discovered work,
//! handoffs between agents, requests and queries between agents, refused
//! tool calls and plan steps; and the registry's own (an agent changed or
//! retired, a pin to an agent that cannot take work).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use coordinator_core::agents::PinRefusal;
use coordinator_core::domain::Rung;

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

/// One field of an agent (or a mission) before and after a change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldChange {
    /// The value before.
    pub from: Value,
    /// The value after.
    pub to: Value,
}

/// `agent.updated`: an agent's description or status was changed (a workspace event).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AgentUpdated {
    /// The agent.
    pub agent_id: String,
    /// Its version after the change.
    pub version: i64,
    /// Each changed field, by name, with its old and new value.
    pub changes: BTreeMap<String, FieldChange>,
}

/// `agent.unreachable`: dispatches to an agent's endpoint failed to arrive
/// several times in a row (a workspace event).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AgentUnreachable {
    /// The agent.
    pub agent_id: String,
    /// Dispatches in a row that did not reach it.
    pub failures: i32,
    /// The last one's error.
    pub error: String,
}

/// `agent.reachable`: an unreachable agent's endpoint answered a probe (a
/// workspace event).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AgentReachable {
    /// The agent.
    pub agent_id: String,
    /// Its status now (`idle` or `working`).
    pub status: String,
}

/// `agent.retired`: an operator retired an agent (a workspace event).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AgentRetired {
    /// The agent.
    pub agent_id: String,
    /// Its version after retirement.
    pub version: i64,
    /// Its status before.
    pub previous_status: String,
    /// Attempts it still held, left to finish (or time out and move on).
    pub live_attempts: i64,
}

/// `task.pin_unavailable`: a waiting task's pinned agent cannot take it, so
/// the pin is dropped and the escalation ladder decides (`rung` it climbed,
/// if any, and the `outcome`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TaskPinUnavailable {
    /// The task's key.
    pub key: String,
    /// The agent it was pinned to.
    pub agent_id: String,
    /// Why that agent cannot take it.
    pub reason: PinRefusal,
    /// The rung the ladder climbed (none when it dropped the task or had nothing left).
    pub rung: Option<Rung>,
    /// What became of the task: `unpinned` (another agent will take it),
    /// `skipped` (optional), `replanned`, `awaiting_human`, or `waiting`
    /// (nothing on the ladder could help; any capable agent may take it).
    pub outcome: String,
}

impl EventPayload for AgentUpdated {
    const KIND: EventKind = EventKind::AgentUpdated;
}

impl EventPayload for AgentUnreachable {
    const KIND: EventKind = EventKind::AgentUnreachable;
}

impl EventPayload for AgentReachable {
    const KIND: EventKind = EventKind::AgentReachable;
}

impl EventPayload for AgentRetired {
    const KIND: EventKind = EventKind::AgentRetired;
}

impl EventPayload for TaskPinUnavailable {
    const KIND: EventKind = EventKind::TaskPinUnavailable;
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

/// `tool.refused`: the organisation spec refused an agent's tool call.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolRefused {
    /// The tool.
    pub tool: String,
    /// The caller.
    pub agent_id: String,
    /// Its role.
    pub role: String,
    /// Why, naming the role and the norm.
    pub reason: String,
    /// The norm that refused it, if one did.
    pub norm: Option<String>,
}

impl EventPayload for ToolRefused {
    const KIND: EventKind = EventKind::ToolRefused;
}

impl EventPayload for BlackboardWritten {
    const KIND: EventKind = EventKind::BlackboardWritten;
}

impl EventPayload for BlackboardDeleted {
    const KIND: EventKind = EventKind::BlackboardDeleted;
}

#[cfg(test)]
pub(crate) mod tests {
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

    /// A fully populated sample of every payload here, for the catalogue
    /// test in `event_payloads::tests`.
    pub(crate) fn samples() -> Vec<(EventKind, BTreeSet<String>)> {
        vec![
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
            keys(&ToolRefused {
                tool: "t".into(),
                agent_id: "a".into(),
                role: "r".into(),
                reason: "no".into(),
                norm: None,
            }),
            keys(&PlanExtended {
                anchor: "a".into(),
                placement: "successor".into(),
                added: vec!["x".into()],
                reason: "r".into(),
                previous_plan_version: 1,
                needs_approval: false,
            }),
            keys(&AgentUpdated {
                agent_id: "a".into(),
                version: 2,
                changes: BTreeMap::new(),
            }),
            keys(&AgentUnreachable {
                agent_id: "a".into(),
                failures: 3,
                error: "e".into(),
            }),
            keys(&AgentReachable {
                agent_id: "a".into(),
                status: "idle".into(),
            }),
            keys(&AgentRetired {
                agent_id: "a".into(),
                version: 3,
                previous_status: "idle".into(),
                live_attempts: 1,
            }),
            keys(&TaskPinUnavailable {
                key: "k".into(),
                agent_id: "a".into(),
                reason: PinRefusal::Offline,
                rung: Some(Rung::OtherAgent),
                outcome: "unpinned".into(),
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
        ]
    }
}
