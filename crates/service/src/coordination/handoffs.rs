//! Agent ⇄ human handoffs: the seed's payload (context summary, active
//! tasks, open decisions, artifacts), recorded as a row and a
//! `handoff.created` event on the task's mission, while the task changes
//! hands.
//!
//! `agent_to_human`: the task waits for a person (`awaiting_human`); a
//! running task's live attempt ends (its worker is told), since the agent is
//! giving the work up. `human_to_agent`: the task goes back to `queued`, the
//! receiving agent is hinted as the next owner (preferred while it has a
//! free slot) and gets a HANDOFF message carrying the payload.

use coordinator_protocol::EventKind;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use crate::{
    auth::{Principal, Role},
    coordination::messages::{self, Category, Outgoing, Performative, Recipient},
    domain::{TaskEvent, TaskStatus, text_enum},
    error::ApiError,
    missions::human::{self, HumanAction, Settlement},
    store::{
        events::{self, WorkspaceEvent},
        handoffs::{self as store, HandoffView, NewHandoff},
        messages as message_store,
    },
};

/// Which way work changes hands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// An agent gives the work to a person.
    AgentToHuman,
    /// A person gives the work back to an agent.
    HumanToAgent,
}

text_enum!(Direction {
    AgentToHuman => "agent_to_human",
    HumanToAgent => "human_to_agent",
});

/// What a handoff does to its task in `status`: `Ok(Some(event))` moves it,
/// `Ok(None)` leaves it (an agent handing over a task a person already has),
/// `Err` refuses the handoff.
pub fn task_move(direction: Direction, status: TaskStatus) -> Result<Option<TaskEvent>, String> {
    use TaskStatus as S;
    match (direction, status) {
        (Direction::AgentToHuman, S::Queued | S::RetryWait | S::Running) => {
            Ok(Some(TaskEvent::EscalateToHuman))
        }
        (Direction::AgentToHuman, S::AwaitingHuman) => Ok(None),
        (Direction::HumanToAgent, S::AwaitingHuman) => Ok(Some(TaskEvent::Requeue)),
        (Direction::AgentToHuman, s) => Err(format!(
            "a {s} task cannot be handed to a person (only queued, retry_wait, running or awaiting_human)"
        )),
        (Direction::HumanToAgent, s) => Err(format!(
            "a {s} task cannot be handed to an agent (only one awaiting a person)"
        )),
    }
}

/// Longest context summary, in characters.
pub const MAX_SUMMARY_CHARS: usize = 5_000;
/// Most entries in each payload list.
pub const MAX_ITEMS: usize = 100;

/// `POST /v1/handoffs` body: the seed's handoff payload, linked to a task.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateHandoff {
    /// `agent_to_human` or `human_to_agent`.
    pub direction: Direction,
    /// Who hands off: for `agent_to_human` an agent id (an agent token's own by
    /// default, and only its own); for `human_to_agent` a person (default: the caller).
    #[serde(default)]
    pub from: Option<String>,
    /// Who takes over: a person (`agent_to_human`) or an agent id (`human_to_agent`).
    pub to: String,
    /// The task that changes hands.
    pub task_id: Uuid,
    /// What the receiver needs to know (1–5000 characters).
    pub context_summary: String,
    /// `[{task_id, description, status, blockers}]` (objects, at most 100).
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub active_tasks: Vec<Value>,
    /// `[{decision_id, description, status}]` (objects, at most 100).
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub open_decisions: Vec<Value>,
    /// `[{name, path}]` (objects, at most 100).
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub artifacts: Vec<Value>,
}

/// Checks what can be checked without the database; the first problem found.
pub fn validate(h: &CreateHandoff) -> Result<(), ApiError> {
    let summary = h.context_summary.trim();
    if summary.is_empty() || summary.chars().count() > MAX_SUMMARY_CHARS {
        return Err(ApiError::invalid(
            "context_summary",
            format!("context_summary must be 1–{MAX_SUMMARY_CHARS} characters"),
        ));
    }
    let to = h.to.trim();
    if to.is_empty() || to.chars().count() > 128 {
        return Err(ApiError::invalid("to", "to must be 1–128 characters"));
    }
    if h.from
        .as_deref()
        .is_some_and(|f| f.trim().is_empty() || f.chars().count() > 128)
    {
        return Err(ApiError::invalid("from", "from must be 1–128 characters"));
    }
    for (field, items) in [
        ("active_tasks", &h.active_tasks),
        ("open_decisions", &h.open_decisions),
        ("artifacts", &h.artifacts),
    ] {
        if items.len() > MAX_ITEMS {
            return Err(ApiError::invalid(
                field,
                format!("at most {MAX_ITEMS} {field}"),
            ));
        }
        if !items.iter().all(Value::is_object) {
            return Err(ApiError::invalid(
                field,
                format!("each of {field} must be an object"),
            ));
        }
    }
    let size = serde_json::to_vec(&(&h.active_tasks, &h.open_decisions, &h.artifacts))
        .map_or(0, |v| v.len());
    if size > 64 * 1024 {
        return Err(ApiError::invalid(
            "active_tasks",
            "active_tasks, open_decisions and artifacts must be at most 64 KiB together",
        ));
    }
    Ok(())
}

/// Who may hand off which way, and as whom: returns the `from` party.
fn sender(who: &Principal, h: &CreateHandoff) -> Result<String, ApiError> {
    match h.direction {
        Direction::AgentToHuman => {
            who.require(&[Role::Admin, Role::Operator, Role::Agent])?;
            match (&who.agent_id, h.from.as_deref().map(str::trim)) {
                (Some(me), Some(from)) if from != me => Err(ApiError::Forbidden(format!(
                    "an agent token may only hand off as itself ('{me}'), not as '{from}'"
                ))),
                (Some(me), _) => Ok(me.clone()),
                (None, Some(from)) => Ok(from.to_owned()),
                (None, None) => Err(ApiError::invalid(
                    "from",
                    "name the agent handing off in 'from'",
                )),
            }
        }
        Direction::HumanToAgent => {
            who.require(&[Role::Admin, Role::Operator, Role::Stakeholder])?;
            Ok(h.from
                .as_deref()
                .map(str::trim)
                .map(str::to_owned)
                .unwrap_or_else(|| who.actor()))
        }
    }
}

/// Makes a handoff: moves the task (see the module doc), writes the handoff
/// and its event, and for `human_to_agent` sends the HANDOFF message, all in
/// one transaction.
pub async fn create(
    pool: &PgPool,
    http: &reqwest::Client,
    who: &Principal,
    h: CreateHandoff,
) -> Result<HandoffView, ApiError> {
    let from = sender(who, &h)?;
    validate(&h)?;
    let to = h.to.trim().to_owned();
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let (mut run, t) = human::lock_task(&mut tx, who.workspace_id, h.task_id)
        .await?
        .ok_or_else(|| ApiError::Unprocessable {
            code: "unknown_task",
            message: format!("task_id names no task {}", h.task_id),
            details: json!({ "task_id": h.task_id }),
        })?;
    if h.direction == Direction::AgentToHuman
        && !message_store::agent_exists(&mut tx, who.workspace_id, &from).await?
    {
        return Err(ApiError::Unprocessable {
            code: "unknown_agent",
            message: format!("no agent '{from}' is registered to hand off"),
            details: json!({ "from": from }),
        });
    }
    if run.status().is_terminal() {
        return Err(ApiError::conflict(
            "invalid_state",
            format!(
                "the mission is {}; its tasks cannot change hands",
                run.status
            ),
        ));
    }
    let status_from = t.status();
    let event = task_move(h.direction, status_from).map_err(|message| ApiError::Conflict {
        code: "invalid_state",
        message,
        details: json!({ "entity": "task", "status": status_from }),
    })?;
    let id = Uuid::now_v7();
    let via = json!({ "handoff_id": id, "direction": h.direction, "from": from, "to": to });
    let (status_to, cancelled, message_id) = match event {
        None => (status_from, Vec::new(), None),
        Some(TaskEvent::Requeue) => {
            let cancelled = human::settle(
                &mut tx,
                &mut run,
                &t,
                Settlement {
                    action: HumanAction::Retry,
                    output: None,
                    // Guidance for the next attempt, within the feedback limit.
                    feedback: Some(
                        format!("Handed back by {from}: {}", h.context_summary.trim())
                            .chars()
                            .take(crate::missions::replan::MAX_FEEDBACK_CHARS)
                            .collect(),
                    ),
                    via: Some(via.clone()),
                },
                &actor,
            )
            .await?;
            let sent = messages::send(
                &mut tx,
                who.workspace_id,
                Outgoing {
                    id: None,
                    from_agent: None,
                    sender: actor.clone(),
                    to: Recipient::Agent(to.clone()),
                    performative: Performative::Request,
                    category: Some(Category::Handoff),
                    conversation_id: None,
                    reply_to: None,
                    mission_id: Some(run.id),
                    task_id: Some(t.id),
                    subject: format!("Handoff: task '{}'", t.task_key)
                        .chars()
                        .take(200)
                        .collect(),
                    content: json!({
                        "handoff_id": id,
                        "direction": h.direction,
                        "from": from,
                        "to": to,
                        "context_summary": h.context_summary.trim(),
                        "active_tasks": h.active_tasks,
                        "open_decisions": h.open_decisions,
                        "artifacts": h.artifacts,
                    }),
                },
            )
            .await?;
            store::hint_agent(&mut tx, t.id, &to).await?;
            (TaskStatus::Queued, cancelled, Some(sent.id))
        }
        Some(_) => {
            let (_, live) = human::hand_to_person(
                &mut tx,
                &run,
                &t,
                &actor,
                crate::store::events::payloads::TaskAwaitingHuman {
                    reason: Some("handed off".into()),
                    via: Some(via.clone()),
                    ..Default::default()
                },
            )
            .await?;
            (TaskStatus::AwaitingHuman, live, None)
        }
    };
    let view = store::insert(
        &mut tx,
        who.workspace_id,
        NewHandoff {
            id,
            direction: h.direction.as_str(),
            from: &from,
            to: &to,
            mission_id: run.id,
            task_id: t.id,
            context_summary: h.context_summary.trim(),
            active_tasks: Value::Array(h.active_tasks),
            open_decisions: Value::Array(h.open_decisions),
            artifacts: Value::Array(h.artifacts),
            task_status_from: status_from.as_str(),
            task_status_to: status_to.as_str(),
            message_id,
        },
        &actor,
    )
    .await?;
    events::record(
        &mut tx,
        who.workspace_id,
        WorkspaceEvent {
            mission_id: Some(run.id),
            task_id: Some(t.id),
            kind: EventKind::HandoffCreated,
            actor: &actor,
            payload: json!({
                "handoff_id": id, "direction": h.direction, "from": from, "to": to,
                "key": t.task_key, "task_status_from": status_from, "task_status_to": status_to,
                "message_id": message_id,
                // Agent-keyed, so an agent's event filter finds its handoffs.
                "agent_id": if h.direction == Direction::AgentToHuman { &from } else { &to },
            }),
        },
    )
    .await?;
    crate::store::missions::notify_wake(&mut tx).await?;
    tx.commit().await?;
    crate::worker::notify_cancelled(http, cancelled);
    Ok(view)
}

/// One handoff.
pub async fn get(pool: &PgPool, who: &Principal, id: Uuid) -> Result<HandoffView, ApiError> {
    store::get(pool, who.workspace_id, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no handoff {id}")))
}

/// Handoffs, optionally of one task or mission.
pub async fn list(
    pool: &PgPool,
    who: &Principal,
    task: Option<Uuid>,
    mission: Option<Uuid>,
    limit: i64,
) -> Result<Vec<HandoffView>, ApiError> {
    Ok(store::list(pool, who.workspace_id, task, mission, limit).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handoff() -> CreateHandoff {
        CreateHandoff {
            direction: Direction::AgentToHuman,
            from: None,
            to: "human-operator-1".into(),
            task_id: Uuid::nil(),
            context_summary: "Negotiations stalled on payment terms".into(),
            active_tasks: vec![json!({"task_id": "t-001", "status": "in_progress"})],
            open_decisions: vec![json!({"decision_id": "dec-005", "status": "pending"})],
            artifacts: vec![json!({"name": "matrix", "path": "a/b.xlsx"})],
        }
    }

    #[test]
    fn tasks_move_the_way_the_handoff_goes() {
        use TaskStatus as S;
        for s in [S::Queued, S::RetryWait, S::Running] {
            let e = task_move(Direction::AgentToHuman, s).unwrap().unwrap();
            assert_eq!(s.next(e), Ok(S::AwaitingHuman));
        }
        assert_eq!(
            task_move(Direction::AgentToHuman, S::AwaitingHuman),
            Ok(None)
        );
        let e = task_move(Direction::HumanToAgent, S::AwaitingHuman)
            .unwrap()
            .unwrap();
        assert_eq!(S::AwaitingHuman.next(e), Ok(S::Queued));
        for s in S::ALL {
            if *s != S::AwaitingHuman {
                assert!(task_move(Direction::HumanToAgent, *s).is_err(), "{s}");
            }
        }
        for s in [
            S::Pending,
            S::Succeeded,
            S::Failed,
            S::Cancelled,
            S::Skipped,
            S::AwaitingApproval,
        ] {
            assert!(task_move(Direction::AgentToHuman, s).is_err(), "{s}");
        }
    }

    #[test]
    fn payload_is_checked() {
        assert!(validate(&handoff()).is_ok());
        let mut h = handoff();
        h.context_summary = "  ".into();
        assert!(validate(&h).is_err());
        let mut h = handoff();
        h.artifacts = vec![json!("not an object")];
        assert!(validate(&h).is_err());
        let mut h = handoff();
        h.open_decisions = vec![json!({}); MAX_ITEMS + 1];
        assert!(validate(&h).is_err());
        let mut h = handoff();
        h.to = String::new();
        assert!(validate(&h).is_err());
    }
}
