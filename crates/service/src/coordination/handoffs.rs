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
//! `agent_to_agent` (an attempt token, seed 004's "handoff allowed if a
//! better owner is available"): the caller's attempt ends without counting
//! as a failure, the running task goes back to `queued` pinned to the
//! receiver (named, or the best-scoring agent of a role; see
//! `coordinator_core::handoffs`) with the summary as its next dispatch's
//! `feedback`, and the receiver gets the HANDOFF message too. The chain of
//! handoffs of a task is `GET /v1/handoffs?task=`.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use coordinator_core::{
    assignment::{AgentProfile, ScoreWeights, TaskNeeds},
    handoffs::{Prospect, Target, choose_receiver},
    invalid::Invalid,
    organisation::Deontic,
    text::Text,
};

use crate::{
    auth::{Principal, Role},
    coordination::messages::{self, Category, MessageError, Outgoing, Performative, Recipient},
    domain::{TaskEvent, TaskStatus, text_enum},
    missions::human::{self, HumanAction, Settlement},
    store::{
        attempts::Cancelled,
        events::{self, WorkspaceEvent, payloads},
        handoffs::{self as store, HandoffView, NewHandoff},
        messages as message_store,
        missions::MissionRow,
        tasks::TaskRow,
    },
};

pub use coordinator_core::handoffs::Refusal;

/// Why a handoff failed.
#[derive(Debug, thiserror::Error)]
pub enum HandoffError {
    /// A field of the request is wrong.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The caller's role may not hand off this way.
    #[error("{0}")]
    Forbidden(#[from] crate::auth::Forbidden),
    /// An agent token named another agent as `from`.
    #[error("an agent token may only hand off as itself ('{me}'), not as '{from}'")]
    NotYours {
        /// The token's agent.
        me: String,
        /// The agent named.
        from: String,
    },
    /// `task_id` names no task.
    #[error("task_id names no task {task_id}")]
    UnknownTask {
        /// The named task.
        task_id: Uuid,
    },
    /// The agent handing off is not registered.
    #[error("no agent '{from}' is registered to hand off")]
    UnknownAgent {
        /// The named agent.
        from: String,
    },
    /// The task's mission has ended.
    #[error("the mission is {status}; its tasks cannot change hands")]
    MissionOver {
        /// The mission's status.
        status: String,
    },
    /// The task's state does not allow this direction.
    #[error("{reason}")]
    WrongTaskState {
        /// Why, for a person.
        reason: String,
        /// The task's status.
        status: TaskStatus,
    },
    /// No such handoff in the workspace.
    #[error("no handoff {id}")]
    NotFound {
        /// The handoff.
        id: Uuid,
    },
    /// Moving the task (the missions use case) failed.
    #[error(transparent)]
    TaskMove(#[from] crate::missions::human::HumanActionError),
    /// Sending the HANDOFF message failed.
    #[error(transparent)]
    Message(#[from] MessageError),
    /// The receiver cannot take the task (itself, unknown, offline, unable, prohibited).
    #[error(transparent)]
    Refused(#[from] Refusal),
    /// The caller's attempt is no longer live: the task is not its to hand off.
    #[error("attempt {attempt_id} is no longer live; its task cannot be handed off")]
    StaleAttempt {
        /// The attempt.
        attempt_id: Uuid,
    },
    /// The task moved while the handoff was written.
    #[error("the task changed meanwhile; try again")]
    TaskChanged,
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// Which way work changes hands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// An agent gives the work to a person.
    AgentToHuman,
    /// A person gives the work back to an agent.
    HumanToAgent,
    /// An agent gives its running task to another agent.
    AgentToAgent,
}

text_enum!(Direction {
    AgentToHuman => "agent_to_human",
    HumanToAgent => "human_to_agent",
    AgentToAgent => "agent_to_agent",
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
        (Direction::AgentToAgent, S::Running) => Ok(Some(TaskEvent::HandOff)),
        (Direction::AgentToHuman, s) => Err(format!(
            "a {s} task cannot be handed to a person (only queued, retry_wait, running or awaiting_human)"
        )),
        (Direction::HumanToAgent, s) => Err(format!(
            "a {s} task cannot be handed to an agent (only one awaiting a person)"
        )),
        (Direction::AgentToAgent, s) => Err(format!(
            "a {s} task cannot be handed to another agent (only the running task of your attempt)"
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
    /// `agent_to_human`, `human_to_agent` or `agent_to_agent` (with the attempt token of the task's dispatch).
    pub direction: Direction,
    /// Who hands off: for `agent_to_human` and `agent_to_agent` an agent id (an agent
    /// token's own by default, and only its own); for `human_to_agent` a person (default: the caller).
    #[serde(default)]
    pub from: Option<String>,
    /// Who takes over: a person (`agent_to_human`) or an agent id (`human_to_agent`, `agent_to_agent`).
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

/// The context handed over.
pub const CONTEXT_SUMMARY: Text = Text::required(MAX_SUMMARY_CHARS);
/// Who hands over or takes over: an agent id or a person's name.
pub const PARTY: Text = Text::required(128);

/// Checks what can be checked without the database; the first problem found.
pub fn validate(h: &CreateHandoff) -> Result<(), Invalid> {
    CONTEXT_SUMMARY.check("context_summary", &h.context_summary)?;
    PARTY.check("to", &h.to)?;
    if let Some(from) = &h.from {
        PARTY.check("from", from)?;
    }
    check_lists(&h.active_tasks, &h.open_decisions, &h.artifacts)
}

/// The payload's lists: objects, at most [`MAX_ITEMS`] each, 64 KiB together.
fn check_lists(
    active_tasks: &[Value],
    open_decisions: &[Value],
    artifacts: &[Value],
) -> Result<(), Invalid> {
    for (field, items) in [
        ("active_tasks", active_tasks),
        ("open_decisions", open_decisions),
        ("artifacts", artifacts),
    ] {
        if items.len() > MAX_ITEMS {
            return Err(Invalid::new(field, format!("at most {MAX_ITEMS} {field}")));
        }
        if !items.iter().all(Value::is_object) {
            return Err(Invalid::new(
                field,
                format!("each of {field} must be an object"),
            ));
        }
    }
    let size =
        serde_json::to_vec(&(active_tasks, open_decisions, artifacts)).map_or(0, |v| v.len());
    if size > 64 * 1024 {
        return Err(Invalid::new(
            "active_tasks",
            "active_tasks, open_decisions and artifacts must be at most 64 KiB together",
        ));
    }
    Ok(())
}

/// Who may hand off which way, and as whom: returns the `from` party.
fn sender(who: &Principal, h: &CreateHandoff) -> Result<String, HandoffError> {
    let require = |roles: &[Role]| who.require(roles).map_err(HandoffError::from);
    match h.direction {
        Direction::AgentToAgent => {
            require(&[Role::Agent])?;
            let me = who.agent_id.clone().unwrap_or_default();
            match h.from.as_deref().map(str::trim) {
                Some(from) if from != me => Err(HandoffError::NotYours {
                    me,
                    from: from.to_owned(),
                }),
                _ => Ok(me),
            }
        }
        Direction::AgentToHuman => {
            require(&[Role::Admin, Role::Operator, Role::Agent])?;
            match (&who.agent_id, h.from.as_deref().map(str::trim)) {
                (Some(me), Some(from)) if from != me => Err(HandoffError::NotYours {
                    me: me.clone(),
                    from: from.to_owned(),
                }),
                (Some(me), _) => Ok(me.clone()),
                (None, Some(from)) => Ok(from.to_owned()),
                (None, None) => {
                    // Required of every caller but an agent (who hands off its own).
                    Err(Invalid::unprocessable(
                        "from_required",
                        "from",
                        "name the agent handing off in 'from'",
                    )
                    .into())
                }
            }
        }
        Direction::HumanToAgent => {
            require(&[Role::Admin, Role::Operator, Role::Stakeholder])?;
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
    http: &crate::egress::Client,
    who: &Principal,
    h: CreateHandoff,
) -> Result<HandoffView, HandoffError> {
    let from = sender(who, &h)?;
    validate(&h)?;
    if h.direction == Direction::AgentToAgent {
        return create_to_agent(pool, who, h).await;
    }
    let to = h.to.trim().to_owned();
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let (mut run, t, event) = load(&mut tx, who.workspace_id, &h, &from).await?;
    let parties = Parties {
        id: Uuid::now_v7(),
        from: &from,
        to: &to,
        actor: &actor,
    };
    let moved = move_task(&mut tx, &parties, &h, &mut run, &t, event).await?;
    let view = record(&mut tx, &parties, h, &run, &t, &moved).await?;
    crate::store::missions::notify_wake(&mut tx).await?;
    tx.commit().await?;
    crate::worker::notify_cancelled(http, moved.cancelled);
    Ok(view)
}

/// Who hands what to whom, and the handoff's id.
struct Parties<'a> {
    id: Uuid,
    from: &'a str,
    to: &'a str,
    actor: &'a str,
}

impl Parties<'_> {
    /// How the task's own log names the handoff.
    fn via(&self, direction: Direction) -> Value {
        json!({ "handoff_id": self.id, "direction": direction, "from": self.from, "to": self.to })
    }
}

/// What moving the task did.
struct Moved {
    /// The task's status after the handoff.
    status_to: TaskStatus,
    /// Attempts whose workers must be told (after commit).
    cancelled: Vec<Cancelled>,
    /// The HANDOFF message (`human_to_agent`, `agent_to_agent`).
    message_id: Option<Uuid>,
    /// The attempt that ended (`agent_to_agent`).
    attempt_id: Option<Uuid>,
}

/// Locks the task and its mission and checks the handoff may happen:
/// the agent handing off exists, the mission is live and the task's state
/// allows this direction. Returns what to do with the task.
async fn load(
    tx: &mut PgConnection,
    workspace_id: Uuid,
    h: &CreateHandoff,
    from: &str,
) -> Result<(MissionRow, TaskRow, Option<TaskEvent>), HandoffError> {
    let (run, t) = human::lock_task(&mut *tx, workspace_id, h.task_id)
        .await
        .map_err(HandoffError::TaskMove)?
        .ok_or(HandoffError::UnknownTask { task_id: h.task_id })?;
    if h.direction == Direction::AgentToHuman
        && !message_store::agent_exists(&mut *tx, workspace_id, from).await?
    {
        return Err(HandoffError::UnknownAgent {
            from: from.to_owned(),
        });
    }
    if run.status().is_terminal() {
        return Err(HandoffError::MissionOver { status: run.status });
    }
    let status = t.status();
    let event = task_move(h.direction, status)
        .map_err(|reason| HandoffError::WrongTaskState { reason, status })?;
    Ok((run, t, event))
}

/// Moves the task: back to the queue with a HANDOFF message and a hint for
/// the receiving agent, or to a person (ending a live attempt).
async fn move_task(
    tx: &mut PgConnection,
    p: &Parties<'_>,
    h: &CreateHandoff,
    run: &mut MissionRow,
    t: &TaskRow,
    event: Option<TaskEvent>,
) -> Result<Moved, HandoffError> {
    let via = p.via(h.direction);
    match event {
        None => Ok(Moved {
            status_to: t.status(),
            cancelled: Vec::new(),
            message_id: None,
            attempt_id: None,
        }),
        Some(TaskEvent::Requeue) => {
            let settlement = Settlement {
                action: HumanAction::Retry,
                output: None,
                // Guidance for the next attempt, within the feedback limit.
                feedback: Some(
                    format!("Handed back by {}: {}", p.from, h.context_summary.trim())
                        .chars()
                        .take(crate::missions::replan::MAX_FEEDBACK_CHARS)
                        .collect(),
                ),
                via: Some(via),
            };
            let cancelled = human::settle(&mut *tx, run, t, settlement, p.actor)
                .await
                .map_err(HandoffError::TaskMove)?;
            let sent =
                messages::send(&mut *tx, run.workspace_id, handoff_message(p, h, run, t)).await?;
            store::hint_agent(&mut *tx, t.id, p.to).await?;
            Ok(Moved {
                status_to: TaskStatus::Queued,
                cancelled,
                message_id: Some(sent.id),
                attempt_id: None,
            })
        }
        Some(_) => {
            let payload = crate::store::events::payloads::TaskAwaitingHuman {
                reason: Some("handed off".into()),
                via: Some(via.clone()),
                ..Default::default()
            };
            let (_, live) = human::hand_to_person(&mut *tx, run, t, p.actor, payload)
                .await
                .map_err(HandoffError::TaskMove)?;
            Ok(Moved {
                status_to: TaskStatus::AwaitingHuman,
                cancelled: live,
                message_id: None,
                attempt_id: None,
            })
        }
    }
}

/// The HANDOFF message to the receiving agent, carrying the payload.
fn handoff_message(p: &Parties<'_>, h: &CreateHandoff, run: &MissionRow, t: &TaskRow) -> Outgoing {
    Outgoing {
        id: None,
        // An agent handing to an agent speaks as itself.
        from_agent: (h.direction == Direction::AgentToAgent).then(|| p.from.to_owned()),
        sender: p.actor.to_owned(),
        to: Recipient::Agent(p.to.to_owned()),
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
            "handoff_id": p.id,
            "direction": h.direction,
            "from": p.from,
            "to": p.to,
            "context_summary": h.context_summary.trim(),
            "active_tasks": h.active_tasks,
            "open_decisions": h.open_decisions,
            "artifacts": h.artifacts,
        }),
    }
}

/// Writes the handoff row and its `handoff.created` event.
async fn record(
    tx: &mut PgConnection,
    p: &Parties<'_>,
    h: CreateHandoff,
    run: &MissionRow,
    t: &TaskRow,
    moved: &Moved,
) -> Result<HandoffView, HandoffError> {
    let status_from = t.status();
    let view = store::insert(
        &mut *tx,
        run.workspace_id,
        NewHandoff {
            id: p.id,
            direction: h.direction.as_str(),
            from: p.from,
            to: p.to,
            mission_id: run.id,
            task_id: t.id,
            context_summary: h.context_summary.trim(),
            active_tasks: Value::Array(h.active_tasks),
            open_decisions: Value::Array(h.open_decisions),
            artifacts: Value::Array(h.artifacts),
            task_status_from: status_from.as_str(),
            task_status_to: moved.status_to.as_str(),
            message_id: moved.message_id,
            attempt_id: moved.attempt_id,
        },
        p.actor,
    )
    .await?;
    events::record(
        &mut *tx,
        run.workspace_id,
        WorkspaceEvent::new(
            Some(run.id),
            Some(t.id),
            p.actor,
            &payloads::HandoffCreated {
                handoff_id: p.id,
                direction: h.direction.as_str().to_owned(),
                from: p.from.to_owned(),
                to: p.to.to_owned(),
                key: t.task_key.clone(),
                task_status_from: status_from,
                task_status_to: moved.status_to,
                message_id: moved.message_id,
                // Agent-keyed, so an agent's event filter finds its handoffs.
                agent_id: if h.direction == Direction::AgentToHuman {
                    p.from
                } else {
                    p.to
                }
                .to_owned(),
                attempt_id: moved.attempt_id,
            },
        ),
    )
    .await?;
    Ok(view)
}

/// `handoff_task`: the caller hands the task of its attempt to another agent.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HandToAgent {
    /// The agent to take over (this or `to_role`).
    #[serde(default)]
    pub to_agent: Option<String>,
    /// A role whose best-scoring online agent takes over (this or `to_agent`).
    #[serde(default)]
    pub to_role: Option<String>,
    /// What the receiver needs to know (1–5000 characters); its dispatch's `feedback`.
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

/// `POST /v1/handoffs` with `agent_to_agent`: the same as [`hand_to_agent`]
/// naming `to`, for the task of the caller's attempt only.
async fn create_to_agent(
    pool: &PgPool,
    who: &Principal,
    h: CreateHandoff,
) -> Result<HandoffView, HandoffError> {
    let scope = who.attempt.ok_or_else(attempt_needed)?;
    if scope.task_id != h.task_id {
        return Err(crate::auth::Forbidden(format!(
            "this attempt token acts for task {} only, not {}",
            scope.task_id, h.task_id
        ))
        .into());
    }
    let req = HandToAgent {
        to_agent: Some(h.to.trim().to_owned()),
        to_role: None,
        context_summary: h.context_summary,
        active_tasks: h.active_tasks,
        open_decisions: h.open_decisions,
        artifacts: h.artifacts,
    };
    hand_to_agent(pool, who, req).await
}

fn attempt_needed() -> HandoffError {
    crate::auth::Forbidden::from(
        "handing a task to another agent needs the attempt token of the task's dispatch",
    )
    .into()
}

/// Hands the caller's running task to another agent (see the module doc),
/// in one transaction under the mission's lock: the receiver is chosen and
/// checked, the attempt ends, the task is queued pinned to the receiver
/// (version guarded) with its `task.handed_off` event, the HANDOFF message
/// goes out and the handoff is recorded.
pub async fn hand_to_agent(
    pool: &PgPool,
    who: &Principal,
    req: HandToAgent,
) -> Result<HandoffView, HandoffError> {
    who.require(&[Role::Agent])?;
    let scope = who.attempt.ok_or_else(attempt_needed)?;
    let from = who.agent_id.clone().ok_or_else(attempt_needed)?;
    let target = target_of(&req)?;
    let summary = req.context_summary.trim();
    if summary.is_empty() || summary.chars().count() > MAX_SUMMARY_CHARS {
        return Err(Invalid::new(
            "context_summary",
            format!("context_summary must be 1–{MAX_SUMMARY_CHARS} characters"),
        )
        .into());
    }
    check_lists(&req.active_tasks, &req.open_decisions, &req.artifacts)?;
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let (run, t) = human::lock_task(&mut tx, who.workspace_id, scope.task_id)
        .await?
        .ok_or(HandoffError::UnknownTask {
            task_id: scope.task_id,
        })?;
    if run.status().is_terminal() {
        return Err(HandoffError::MissionOver { status: run.status });
    }
    let status = t.status();
    task_move(Direction::AgentToAgent, status)
        .map_err(|reason| HandoffError::WrongTaskState { reason, status })?;
    let (to, score) = receiver(&mut tx, &run, &t, &from, target).await?;
    let ended = store::end_attempt(
        &mut tx,
        t.id,
        scope.attempt_id,
        &format!("handed off to agent '{to}'"),
    )
    .await?
    .ok_or(HandoffError::StaleAttempt {
        attempt_id: scope.attempt_id,
    })?;
    crate::store::agents::release_slot(&mut tx, run.workspace_id, &ended).await?;
    let feedback: String = format!("Handed over by agent '{from}': {summary}")
        .chars()
        .take(crate::missions::replan::MAX_FEEDBACK_CHARS)
        .collect();
    if !store::requeue_pinned(&mut tx, t.id, t.version, &to, &feedback).await? {
        return Err(HandoffError::TaskChanged);
    }
    let now = time::OffsetDateTime::now_utc();
    crate::store::tasks::enqueue(&mut tx, run.workspace_id, run.id, t.id, run.priority, now)
        .await?;
    let id = Uuid::now_v7();
    let payload = coordinator_protocol::agent_events::TaskHandedOff {
        key: t.task_key.clone(),
        handoff_id: id,
        from: from.clone(),
        to: to.clone(),
        to_role: match target {
            Target::Role(r) => Some(r.to_owned()),
            Target::Agent(_) => None,
        },
        score,
        attempt_id: scope.attempt_id,
        context_summary: summary.to_owned(),
    };
    crate::store::tasks::record(
        &mut tx,
        crate::store::tasks::Change::event(
            &t,
            TaskStatus::Queued,
            &actor,
            Some(scope.attempt_id),
            &payload,
        ),
    )
    .await?;
    let h = CreateHandoff {
        direction: Direction::AgentToAgent,
        from: Some(from.clone()),
        to: to.clone(),
        task_id: t.id,
        context_summary: summary.to_owned(),
        active_tasks: req.active_tasks,
        open_decisions: req.open_decisions,
        artifacts: req.artifacts,
    };
    let parties = Parties {
        id,
        from: &from,
        to: &to,
        actor: &actor,
    };
    let sent = messages::send(
        &mut tx,
        run.workspace_id,
        handoff_message(&parties, &h, &run, &t),
    )
    .await?;
    let moved = Moved {
        status_to: TaskStatus::Queued,
        cancelled: Vec::new(),
        message_id: Some(sent.id),
        attempt_id: Some(scope.attempt_id),
    };
    let view = record(&mut tx, &parties, h, &run, &t, &moved).await?;
    crate::store::missions::notify_wake(&mut tx).await?;
    tx.commit().await?;
    Ok(view)
}

/// Exactly one of `to_agent` and `to_role`.
fn target_of(req: &HandToAgent) -> Result<Target<'_>, Invalid> {
    fn named(s: &Option<String>) -> Option<&str> {
        s.as_deref().map(str::trim).filter(|s| !s.is_empty())
    }
    match (named(&req.to_agent), named(&req.to_role)) {
        (Some(a), None) if a.chars().count() <= 128 => Ok(Target::Agent(a)),
        (None, Some(r)) if r.chars().count() <= 128 => Ok(Target::Role(r)),
        (Some(_), Some(_)) => Err(Invalid::new(
            "to_agent",
            "name the receiver by to_agent or by to_role, not both",
        )),
        (Some(_), None) => Err(Invalid::new(
            "to_agent",
            "to_agent must be 1–128 characters",
        )),
        (None, Some(_)) => Err(Invalid::new("to_role", "to_role must be 1–128 characters")),
        (None, None) => Err(Invalid::new(
            "to_agent",
            "name the receiver: to_agent (an agent id) or to_role (a role)",
        )),
    }
}

/// The receiving agent and its score, judged by the dispatcher's filters:
/// the mission's prospects, with the organisation spec's verdict for the
/// task. Scored with the default weights (the engine's configured weights
/// decide dispatch; here they only rank a role's agents).
async fn receiver(
    conn: &mut PgConnection,
    run: &MissionRow,
    t: &TaskRow,
    from: &str,
    target: Target<'_>,
) -> Result<(String, f64), HandoffError> {
    let spec = crate::store::organisation::get(&mut *conn, run.workspace_id).await?;
    let prospects: Vec<Prospect> = store::prospects(&mut *conn, run.workspace_id, run.id)
        .await?
        .into_iter()
        .map(|a| Prospect {
            online: a.status != "offline",
            profile: AgentProfile {
                deontic: spec.as_ref().map_or(Deontic::Unconstrained, |s| {
                    s.spec.verdict(&a.role, &t.task_type, &t.task_key)
                }),
                agent_id: a.agent_id,
                skills: a.skills,
                tools: a.tools,
                trust: a.trust,
                cost_per_task: a.cost_per_task,
                max_concurrency: a.max_concurrency,
                running: a.running_count,
                model_tier: a.model_tier,
                history: Default::default(),
                role: a.role,
            },
        })
        .collect();
    let needs = TaskNeeds {
        required_skills: &t.required_skills,
        required_tools: &t.required_tools,
        task_type: &t.task_type,
        excluded: &t.excluded_agents,
        min_tier: t.min_model_tier,
    };
    Ok(choose_receiver(
        from,
        target,
        &prospects,
        needs,
        &ScoreWeights::default(),
    )?)
}

/// One handoff.
pub async fn get(pool: &PgPool, who: &Principal, id: Uuid) -> Result<HandoffView, HandoffError> {
    store::get(pool, who.workspace_id, id)
        .await?
        .ok_or(HandoffError::NotFound { id })
}

/// Handoffs, optionally of one task or mission.
pub async fn list(
    pool: &PgPool,
    who: &Principal,
    task: Option<Uuid>,
    mission: Option<Uuid>,
    limit: i64,
) -> Result<Vec<HandoffView>, HandoffError> {
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
