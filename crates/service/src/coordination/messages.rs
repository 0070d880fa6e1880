//! FIPA-style ACL messages between agents: performatives, the coordination
//! categories of RFC-001, the per-recipient inbox lifecycle, and sending.
//!
//! A message is one row; each recipient has an inbox entry that moves
//! unread → read → acked. `BLOCKED` and `HANDOFF` need an ack; a categorised
//! message must name the mission or task it is about (the RFC's bead link).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

use coordinator_core::{invalid::Invalid, text::Text};

use crate::{
    auth::{Forbidden, Principal, Role},
    store::{
        events::{self, WorkspaceEvent, payloads},
        messages::{self as store, InboxEntry, MessageView},
    },
};

pub use coordinator_core::messages::*;

/// Why sending, reading or acking a message failed.
#[derive(Debug, thiserror::Error)]
pub enum MessageError {
    /// A field of the message is wrong.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The id names a message sent with other content.
    #[error("message {id} was already sent with different content")]
    IdReused {
        /// The message id.
        id: Uuid,
    },
    /// The same id is being sent by a concurrent request.
    #[error("message {id} is being sent concurrently; retry to get it")]
    SentConcurrently {
        /// The message id.
        id: Uuid,
    },
    /// The sending agent is not registered.
    #[error("no agent '{from}' is registered to send from")]
    UnknownSender {
        /// The named sender.
        from: String,
    },
    /// The one recipient agent is not registered.
    #[error("no agent '{to}' is registered to receive")]
    UnknownRecipient {
        /// The named agent.
        to: String,
    },
    /// A role or broadcast that matches no agent.
    #[error("no agent matches '{to}'")]
    NoRecipients {
        /// The recipient as stored (`role:qa`, `all`).
        to: String,
    },
    /// `reply_to` names no message.
    #[error("reply_to names no message {reply_to}")]
    UnknownReplyTo {
        /// The named message.
        reply_to: Uuid,
    },
    /// The linked mission or task is wrong.
    #[error(transparent)]
    Linkage(#[from] LinkageError),
    /// The message is not in this agent's inbox.
    #[error("no message {message_id} in the inbox of '{agent_id}'")]
    NotInInbox {
        /// The message.
        message_id: Uuid,
        /// The inbox's agent.
        agent_id: String,
    },
    /// Acking an entry that is already acked.
    #[error("message {message_id} was already acknowledged by '{agent_id}'")]
    AlreadyAcked {
        /// The message.
        message_id: Uuid,
        /// The inbox's agent.
        agent_id: String,
        /// The entry's state.
        state: InboxState,
    },
    /// The inbox's agent is not registered.
    #[error("no agent '{agent_id}'")]
    NoAgent {
        /// The named agent.
        agent_id: String,
    },
    /// The caller may not send this (another agent's name, another mission).
    #[error(transparent)]
    Forbidden(#[from] Forbidden),
    /// The message breaks its conversation's protocol (AGREE to no request, …).
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// An INFORM's belief could not be written.
    #[error(transparent)]
    Belief(Box<crate::bdi::state::BdiError>),
    /// An agreed request's work could not be added to the mission.
    #[error(transparent)]
    AddTask(Box<crate::missions::replan::ReplanError>),
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// A bug or an unexpected failure.
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

/// Why the mission or task a coordination record links to is refused.
#[derive(Debug, thiserror::Error)]
pub enum LinkageError {
    /// `task_id` names no task.
    #[error("task_id names no task {task_id}")]
    UnknownTask {
        /// The named task.
        task_id: Uuid,
    },
    /// `mission_id` names no mission.
    #[error("mission_id names no mission {mission_id}")]
    UnknownMission {
        /// The named mission.
        mission_id: Uuid,
    },
    /// `mission_id` and `task_id` disagree.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// `POST /v1/messages` body (and the `agent_message` tool's arguments).
#[derive(Debug, Clone, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SendMessage {
    /// Client-chosen id: sending the same id again with the same content returns the original (idempotent retry).
    #[serde(default)]
    pub id: Option<Uuid>,
    /// Sending agent. An agent token may only send as itself (and defaults to itself); other tokens may name any registered agent or leave it out to send as themselves.
    #[serde(default)]
    pub from: Option<String>,
    /// An agent id, `role:<role>` (every agent of that role but the sender) or `all` (alias `broadcast`).
    pub to: String,
    /// Speech act (default `INFORM`); `ACCEPT_PROPOSAL` and `REJECT_PROPOSAL` are accepted for `ACCEPT` and `REJECT`. Effects: see `docs/coordination.md`.
    #[serde(default)]
    pub performative: Option<Performative>,
    /// RFC-001 category. A categorised message must name `mission_id` or `task_id`; `HANDOFF` and `BLOCKED` must be acked; `HANDOFF` goes to one agent; `BLOCKED` needs `content.requested_action` and `content.urgency` (low, normal, high, critical).
    #[serde(default)]
    pub category: Option<Category>,
    /// Conversation (defaults: that of `reply_to`, else the task's id, else a new one).
    #[serde(default)]
    pub conversation_id: Option<Uuid>,
    /// The message this answers.
    #[serde(default)]
    pub reply_to: Option<Uuid>,
    /// Linked mission (an attempt token's own mission by default).
    #[serde(default)]
    pub mission_id: Option<Uuid>,
    /// Linked task, implying its mission (an attempt token's own task by default).
    #[serde(default)]
    pub task_id: Option<Uuid>,
    /// One-line subject (at most 200 bytes).
    #[serde(default)]
    pub subject: Option<String>,
    /// Performative-specific payload: a JSON object of at most 64 KiB.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub content: Option<Value>,
}

/// Who sends `req` for caller `who`: an agent token sends as its agent only
/// (403 naming another); admin, operator, stakeholder and worker tokens may
/// name any agent or send as themselves. An attempt token links the message
/// to its own task unless it names the mission or task, and may not name
/// another mission (a task of another mission is refused by [`confine`]).
pub fn compose(who: &Principal, req: SendMessage) -> Result<Outgoing, MessageError> {
    let from_agent = match (who.role, req.from) {
        (Role::Agent, from) => {
            let own = who
                .agent_id
                .clone()
                .ok_or_else(|| Forbidden::from("this token names no agent to send as"))?;
            if let Some(f) = from.filter(|f| *f != own) {
                return Err(Forbidden(format!(
                    "this agent token acts as '{own}'; it cannot send as '{f}'"
                ))
                .into());
            }
            Some(own)
        }
        (_, from) => {
            who.require(&[Role::Admin, Role::Operator, Role::Stakeholder, Role::Worker])?;
            from
        }
    };
    let to = Recipient::parse(&req.to).map_err(|e| Invalid::new("to", e))?;
    let sender = match &from_agent {
        Some(a) => format!("agent:{a}"),
        None => who.actor(),
    };
    let (mut mission_id, mut task_id) = (req.mission_id, req.task_id);
    if let Some(scope) = who.attempt {
        if mission_id.is_none() && task_id.is_none() {
            (mission_id, task_id) = (Some(scope.mission_id), Some(scope.task_id));
        }
        confine(who, mission_id)?;
    }
    Ok(Outgoing {
        id: req.id,
        from_agent,
        sender,
        to,
        performative: req.performative.unwrap_or(Performative::Inform),
        category: req.category,
        conversation_id: req.conversation_id,
        reply_to: req.reply_to,
        mission_id,
        task_id,
        subject: req.subject.unwrap_or_default(),
        content: req
            .content
            .unwrap_or_else(|| Value::Object(Default::default())),
    })
}

/// An attempt token acts inside its own mission only.
pub fn confine(who: &Principal, mission_id: Option<Uuid>) -> Result<(), Forbidden> {
    match (who.attempt, mission_id) {
        (Some(scope), Some(m)) if m != scope.mission_id => Err(Forbidden(format!(
            "an attempt token acts inside mission {} only, not {m}",
            scope.mission_id
        ))),
        _ => Ok(()),
    }
}

/// A message's subject.
pub const SUBJECT: Text = Text::optional(200);

/// Checks what can be checked without the database; the first problem found.
pub fn validate(m: &Outgoing) -> Result<(), Invalid> {
    SUBJECT.check("subject", &m.subject)?;
    if !m.content.is_object() {
        return Err(Invalid::new("content", "content must be a JSON object"));
    }
    if serde_json::to_vec(&m.content).map_or(0, |v| v.len()) > 64 * 1024 {
        return Err(Invalid::new("content", "content must be at most 64 KiB"));
    }
    if let Some(category) = m.category {
        if m.mission_id.is_none() && m.task_id.is_none() {
            return Err(Invalid::new(
                "mission_id",
                format!("a {category} message must name the mission_id or task_id it is about"),
            ));
        }
        match category {
            Category::Handoff if !matches!(m.to, Recipient::Agent(_)) => {
                return Err(Invalid::new(
                    "to",
                    "a HANDOFF must name one next owner, not a role or everyone",
                ));
            }
            Category::Blocked => {
                for field in ["requested_action", "urgency"] {
                    if m.content
                        .get(field)
                        .and_then(Value::as_str)
                        .is_none_or(|s| s.trim().is_empty())
                    {
                        return Err(Invalid::new(
                            format!("content.{field}"),
                            format!("a BLOCKED message must say content.{field}"),
                        ));
                    }
                }
                let urgency = m
                    .content
                    .get("urgency")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if !URGENCIES.contains(&urgency) {
                    return Err(Invalid::new(
                        "content.urgency",
                        format!("urgency must be one of {}", URGENCIES.join(", ")),
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Sends a message inside the caller's transaction: checks sender, recipients,
/// reply and linkage, writes the message, one inbox entry per recipient (to
/// be pushed to those with a worker endpoint) and a `message.sent` event.
/// Sending the same `id` again with the same content returns the original.
pub async fn send(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    m: Outgoing,
) -> Result<MessageView, MessageError> {
    validate(&m)?;
    let id = m.id.unwrap_or_else(Uuid::new_v4);
    if let Some(existing) = store::get(&mut *conn, workspace_id, id).await? {
        return if store::same_message(&existing, &m) {
            Ok(existing)
        } else {
            Err(MessageError::IdReused { id })
        };
    }
    if let Some(from) = &m.from_agent
        && !store::agent_exists(&mut *conn, workspace_id, from).await?
    {
        return Err(MessageError::UnknownSender { from: from.clone() });
    }
    let recipients =
        store::resolve_recipients(&mut *conn, workspace_id, &m.to, m.from_agent.as_deref()).await?;
    if recipients.is_empty() {
        return Err(match &m.to {
            Recipient::Agent(a) => MessageError::UnknownRecipient { to: a.clone() },
            other => MessageError::NoRecipients { to: other.stored() },
        });
    }
    let mut conversation_id = m.conversation_id;
    if let Some(parent) = m.reply_to {
        let Some(p) = store::get(&mut *conn, workspace_id, parent).await? else {
            return Err(MessageError::UnknownReplyTo { reply_to: parent });
        };
        match conversation_id {
            Some(c) if c != p.conversation_id => {
                return Err(Invalid::new(
                    "conversation_id",
                    "conversation_id differs from that of the message replied to",
                )
                .into());
            }
            _ => conversation_id = Some(p.conversation_id),
        }
    }
    let mission_id = resolve_linkage(&mut *conn, workspace_id, m.mission_id, m.task_id).await?;
    // RFC-001 threads default to the linked work item.
    let conversation_id = conversation_id.or(m.task_id).unwrap_or_else(Uuid::new_v4);
    let requires_ack = m.category.is_some_and(Category::requires_ack);
    let inserted = store::insert(
        &mut *conn,
        workspace_id,
        store::NewMessage {
            id,
            conversation_id,
            mission_id,
            requires_ack,
            recipients: &recipients,
            m: &m,
        },
    )
    .await?;
    let Some(view) = inserted else {
        // A concurrent send of the same id committed first: the first
        // check again decides between an idempotent replay and a conflict.
        return Err(MessageError::SentConcurrently { id });
    };
    events::record(
        &mut *conn,
        workspace_id,
        WorkspaceEvent::new(
            mission_id,
            m.task_id,
            &m.sender,
            &payloads::MessageSent {
                message_id: id,
                conversation_id,
                from: view.from.clone(),
                agent_id: m.from_agent.clone(),
                to: m.to.stored(),
                recipients,
                performative: m.performative,
                category: m.category,
                subject: m.subject.clone(),
            },
        ),
    )
    .await?;
    Ok(view)
}

/// Reads or acks a message in an agent's inbox, in the caller's transaction.
/// 404 `message_not_found` when the message is not in that inbox; 409
/// `already_acked` when acking a terminal entry.
pub async fn mark(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    message_id: Uuid,
    action: InboxAction,
    actor: &str,
) -> Result<InboxEntry, MessageError> {
    let not_found = || MessageError::NotInInbox {
        message_id,
        agent_id: agent_id.to_owned(),
    };
    let state: InboxState = store::lock_entry(&mut *conn, workspace_id, agent_id, message_id)
        .await?
        .ok_or_else(not_found)?
        .parse()
        .map_err(|e| MessageError::Unexpected(anyhow::anyhow!("stored inbox state: {e}")))?;
    match state.apply(action) {
        Ok(Some(next)) => {
            store::set_entry_state(
                &mut *conn,
                workspace_id,
                agent_id,
                message_id,
                next.as_str(),
            )
            .await?;
            if next == InboxState::Acked {
                let msg = store::get(&mut *conn, workspace_id, message_id)
                    .await?
                    .ok_or_else(not_found)?;
                events::record(
                    &mut *conn,
                    workspace_id,
                    WorkspaceEvent::new(
                        msg.mission_id,
                        msg.task_id,
                        actor,
                        &payloads::MessageAcked {
                            message_id,
                            agent_id: agent_id.to_owned(),
                            category: msg.category,
                            conversation_id: msg.conversation_id,
                        },
                    ),
                )
                .await?;
            }
        }
        Ok(None) => {}
        Err(_) => {
            return Err(MessageError::AlreadyAcked {
                message_id,
                agent_id: agent_id.to_owned(),
                state,
            });
        }
    }
    let f = store::InboxFilter::default();
    store::inbox_entry(&mut *conn, workspace_id, agent_id, message_id, &f)
        .await?
        .ok_or_else(not_found)
}

/// Reads or acks a message in `agent_id`'s inbox for caller `who` (the
/// agent's own token, or an admin or operator), in one transaction.
pub async fn mark_entry(
    pool: &sqlx::PgPool,
    who: &Principal,
    agent_id: &str,
    message_id: Uuid,
    action: InboxAction,
) -> Result<InboxEntry, MessageError> {
    who.require_self_or(agent_id, &[Role::Admin, Role::Operator])?;
    let mut tx = pool.begin().await?;
    let entry = mark(
        &mut tx,
        who.workspace_id,
        agent_id,
        message_id,
        action,
        &who.actor(),
    )
    .await?;
    tx.commit().await?;
    Ok(entry)
}

/// An agent's inbox page for caller `who` (the agent's own token, or an
/// admin, operator, stakeholder or worker): counts over the whole inbox and
/// the entries matching `filter`, oldest first.
pub async fn inbox(
    pool: &sqlx::PgPool,
    who: &Principal,
    agent_id: &str,
    filter: &store::InboxFilter,
    limit: i64,
) -> Result<(store::InboxCounts, Vec<InboxEntry>), MessageError> {
    who.require_self_or(
        agent_id,
        &[Role::Admin, Role::Operator, Role::Stakeholder, Role::Worker],
    )?;
    let mut conn = pool.acquire().await?;
    if !store::agent_exists(&mut conn, who.workspace_id, agent_id).await? {
        return Err(MessageError::NoAgent {
            agent_id: agent_id.to_owned(),
        });
    }
    let entries = store::inbox(&mut conn, who.workspace_id, agent_id, filter, limit).await?;
    let counts = store::inbox_counts(&mut conn, who.workspace_id, agent_id).await?;
    Ok((counts, entries))
}

/// Most messages one conversation answer holds.
pub const MAX_THREAD: i64 = 2000;

/// A conversation as a reply tree: how many messages it has (at most
/// [`MAX_THREAD`] are read) and its threads; `None` when it has none.
pub async fn conversation(
    pool: &sqlx::PgPool,
    who: &Principal,
    id: Uuid,
) -> Result<Option<(usize, Vec<ThreadNode>)>, MessageError> {
    let mut conn = pool.acquire().await?;
    let all = store::conversation(&mut conn, who.workspace_id, id, MAX_THREAD).await?;
    if all.is_empty() {
        return Ok(None);
    }
    Ok(Some((all.len(), thread(all))))
}

/// A message with the replies to it, recursively.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ThreadNode {
    /// The message.
    pub message: MessageView,
    /// Replies, oldest first.
    #[schema(no_recursion)]
    pub replies: Vec<ThreadNode>,
}

/// Builds the reply tree of a conversation from its messages (oldest first):
/// roots are messages that answer nothing in the conversation.
pub fn thread(messages: Vec<MessageView>) -> Vec<ThreadNode> {
    use std::collections::{HashMap, HashSet};
    let ids: HashSet<Uuid> = messages.iter().map(|m| m.id).collect();
    let mut children: HashMap<Uuid, Vec<MessageView>> = HashMap::new();
    let mut roots = Vec::new();
    for m in messages {
        match m.reply_to.filter(|p| ids.contains(p)) {
            Some(parent) => children.entry(parent).or_default().push(m),
            None => roots.push(m),
        }
    }
    fn build(m: MessageView, children: &mut HashMap<Uuid, Vec<MessageView>>) -> ThreadNode {
        let kids = children.remove(&m.id).unwrap_or_default();
        ThreadNode {
            replies: kids.into_iter().map(|k| build(k, children)).collect(),
            message: m,
        }
    }
    roots.into_iter().map(|r| build(r, &mut children)).collect()
}

/// Checks what a coordination record links to and returns its mission: a
/// task must exist (and implies its mission; a different `mission_id` is a
/// 400), a mission alone must exist (422 `unknown_task` / `unknown_mission`).
pub async fn resolve_linkage(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    mission_id: Option<Uuid>,
    task_id: Option<Uuid>,
) -> Result<Option<Uuid>, LinkageError> {
    if let Some(task) = task_id {
        let Some(task_mission) = store::task_mission(&mut *conn, workspace_id, task).await? else {
            return Err(LinkageError::UnknownTask { task_id: task });
        };
        if mission_id.is_some_and(|mi| mi != task_mission) {
            return Err(Invalid::new("mission_id", "task_id belongs to another mission").into());
        }
        return Ok(Some(task_mission));
    }
    if let Some(mi) = mission_id
        && !store::mission_exists(&mut *conn, workspace_id, mi).await?
    {
        return Err(LinkageError::UnknownMission { mission_id: mi });
    }
    Ok(mission_id)
}

/// A message as an agent's worker receives it at `POST {endpoint}/v1/messages`.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PushedMessage {
    /// The recipient.
    pub agent_id: String,
    /// The message.
    pub message: MessageView,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn msg() -> Outgoing {
        Outgoing {
            id: None,
            from_agent: Some("a".into()),
            sender: "agent:a".into(),
            to: Recipient::Agent("b".into()),
            performative: Performative::Inform,
            category: None,
            conversation_id: None,
            reply_to: None,
            mission_id: None,
            task_id: None,
            subject: "hi".into(),
            content: json!({}),
        }
    }

    #[test]
    fn inbox_lifecycle() {
        use InboxAction as A;
        use InboxState as S;
        assert_eq!(S::Unread.apply(A::Read), Ok(Some(S::Read)));
        assert_eq!(S::Read.apply(A::Read), Ok(None));
        assert_eq!(S::Unread.apply(A::Ack), Ok(Some(S::Acked)));
        assert_eq!(S::Read.apply(A::Ack), Ok(Some(S::Acked)));
        assert_eq!(S::Acked.apply(A::Read), Ok(None));
        assert!(S::Acked.apply(A::Ack).is_err());
    }

    #[test]
    fn recipients_parse() {
        assert_eq!(Recipient::parse("all"), Ok(Recipient::All));
        assert_eq!(Recipient::parse("broadcast"), Ok(Recipient::All));
        assert_eq!(
            Recipient::parse("role:qa"),
            Ok(Recipient::Role("qa".into()))
        );
        assert_eq!(Recipient::parse("bob"), Ok(Recipient::Agent("bob".into())));
        assert!(Recipient::parse(" ").is_err());
        assert!(Recipient::parse("role:").is_err());
    }

    #[test]
    fn categories_need_linkage_and_fields() {
        let mut m = msg();
        m.category = Some(Category::Info);
        assert!(validate(&m).is_err(), "INFO without linkage");
        m.mission_id = Some(Uuid::nil());
        assert!(validate(&m).is_ok());
        m.category = Some(Category::Handoff);
        m.to = Recipient::Role("qa".into());
        assert!(validate(&m).is_err(), "HANDOFF to a role");
        m.to = Recipient::Agent("b".into());
        assert!(validate(&m).is_ok());
        m.category = Some(Category::Blocked);
        assert!(validate(&m).is_err(), "BLOCKED without action/urgency");
        m.content = json!({"requested_action": "grant access", "urgency": "someday"});
        assert!(validate(&m).is_err(), "bad urgency");
        m.content = json!({"requested_action": "grant access", "urgency": "high"});
        assert!(validate(&m).is_ok());
        assert!(Category::Blocked.requires_ack() && Category::Handoff.requires_ack());
        assert!(!Category::Info.requires_ack() && !Category::Decision.requires_ack());
    }

    fn view(id: u128, reply_to: Option<u128>) -> MessageView {
        MessageView {
            id: Uuid::from_u128(id),
            conversation_id: Uuid::nil(),
            reply_to: reply_to.map(Uuid::from_u128),
            from: "a".into(),
            from_agent: Some("a".into()),
            to: "agent:b".into(),
            performative: "INFORM".into(),
            category: None,
            mission_id: None,
            task_id: None,
            subject: String::new(),
            content: json!({}),
            requires_ack: false,
            created_at: time::OffsetDateTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn thread_tree() {
        // 1 ← 2, 1 ← 3 ← 4; 5 answers a message outside the conversation.
        let tree = thread(vec![
            view(1, None),
            view(2, Some(1)),
            view(3, Some(1)),
            view(4, Some(3)),
            view(5, Some(99)),
        ]);
        assert_eq!(tree.len(), 2);
        assert_eq!(tree[0].message.id, Uuid::from_u128(1));
        let kids: Vec<u128> = tree[0]
            .replies
            .iter()
            .map(|n| n.message.id.as_u128())
            .collect();
        assert_eq!(kids, vec![2, 3]);
        assert_eq!(tree[0].replies[1].replies[0].message.id, Uuid::from_u128(4));
        assert_eq!(tree[1].message.id, Uuid::from_u128(5));
    }

    #[test]
    fn content_must_be_object() {
        let mut m = msg();
        m.content = json!("text");
        assert!(validate(&m).is_err());
    }
}
