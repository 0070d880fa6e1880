//! The agent message envelope (FIPA ACL performatives, categories,
//! recipients) and the inbox lifecycle. Pure: the service sends, stores and
//! pushes messages (`coordination::messages`).

use serde_json::Value;
use uuid::Uuid;

use crate::domain::{IllegalTransition, text_enum};

/// The speech act of a message (FIPA ACL).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Performative {
    /// Asks the receiver to do something.
    Request,
    /// States a fact.
    Inform,
    /// Asks for information.
    Query,
    /// Offers to do something under conditions.
    Propose,
    /// Accepts a proposal.
    Accept,
    /// Declines a proposal.
    Reject,
    /// Confirms something provisional.
    Confirm,
    /// Cancels an earlier request or commitment.
    Cancel,
}

text_enum!(Performative {
    Request => "REQUEST",
    Inform => "INFORM",
    Query => "QUERY",
    Propose => "PROPOSE",
    Accept => "ACCEPT",
    Reject => "REJECT",
    Confirm => "CONFIRM",
    Cancel => "CANCEL",
});

/// The coordination category of RFC-001.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Category {
    /// Work changes hands: needs an ack and a single next owner.
    Handoff,
    /// A hard blocker: needs an ack, a requested action and an urgency.
    Blocked,
    /// A decision record with its rationale.
    Decision,
    /// Non-blocking context.
    Info,
}

text_enum!(Category as "MessageCategory", {
    Handoff => "HANDOFF",
    Blocked => "BLOCKED",
    Decision => "DECISION",
    Info => "INFO",
});

impl Category {
    /// Whether recipients must acknowledge it.
    pub fn requires_ack(self) -> bool {
        matches!(self, Category::Handoff | Category::Blocked)
    }
}

/// Where a message is in one recipient's inbox.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InboxState {
    /// Not opened yet.
    Unread,
    /// Opened.
    Read,
    /// Acknowledged: terminal.
    Acked,
}

text_enum!(InboxState {
    Unread => "unread",
    Read => "read",
    Acked => "acked",
});

/// What a recipient does to an inbox entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InboxAction {
    /// Marks it read.
    Read,
    /// Acknowledges it (reading it too).
    Ack,
}

impl InboxState {
    /// The state after `action`; `Ok(None)` when nothing changes (reading
    /// twice is harmless); acking twice is refused (the entry is terminal).
    pub fn apply(self, action: InboxAction) -> Result<Option<InboxState>, IllegalTransition> {
        match (self, action) {
            (InboxState::Unread, InboxAction::Read) => Ok(Some(InboxState::Read)),
            (InboxState::Read | InboxState::Acked, InboxAction::Read) => Ok(None),
            (InboxState::Unread | InboxState::Read, InboxAction::Ack) => {
                Ok(Some(InboxState::Acked))
            }
            (InboxState::Acked, InboxAction::Ack) => Err(IllegalTransition {
                entity: "message",
                from: self.as_str(),
                event: "ack",
            }),
        }
    }
}

/// Who a message is addressed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recipient {
    /// One agent.
    Agent(String),
    /// Every agent of a role (except the sender).
    Role(String),
    /// Every agent of the workspace (except the sender).
    All,
}

impl Recipient {
    /// Parses `agent-id`, `role:<role>` or `all` (also `broadcast`).
    pub fn parse(s: &str) -> Result<Recipient, String> {
        let s = s.trim();
        if s.is_empty() {
            return Err("'to' must name an agent, 'role:<role>' or 'all'".into());
        }
        if s == "all" || s == "broadcast" {
            return Ok(Recipient::All);
        }
        if let Some(role) = s.strip_prefix("role:") {
            let role = role.trim();
            if role.is_empty() || role.len() > 64 {
                return Err("a role must be 1–64 characters".into());
            }
            return Ok(Recipient::Role(role.to_owned()));
        }
        Ok(Recipient::Agent(s.to_owned()))
    }

    /// The stored form: `agent:<id>`, `role:<role>` or `all`.
    pub fn stored(&self) -> String {
        match self {
            Recipient::Agent(a) => format!("agent:{a}"),
            Recipient::Role(r) => format!("role:{r}"),
            Recipient::All => "all".into(),
        }
    }
}

/// A message about to be sent.
#[derive(Debug, Clone)]
pub struct Outgoing {
    /// Client-chosen id, for idempotent retries (a new one otherwise).
    pub id: Option<Uuid>,
    /// The sending agent; `None` for the coordinator or a person.
    pub from_agent: Option<String>,
    /// Who sent it, as an actor string (`agent:…`, `coordinator`, `stakeholder:…`).
    pub sender: String,
    /// Addressee.
    pub to: Recipient,
    /// Speech act.
    pub performative: Performative,
    /// RFC-001 category, if any.
    pub category: Option<Category>,
    /// Conversation: inherited from `reply_to`, else the task's id, else new.
    pub conversation_id: Option<Uuid>,
    /// The message answered.
    pub reply_to: Option<Uuid>,
    /// Linked mission.
    pub mission_id: Option<Uuid>,
    /// Linked task.
    pub task_id: Option<Uuid>,
    /// One-line subject.
    pub subject: String,
    /// Performative-specific payload (an object).
    pub content: Value,
}

/// Allowed values of a BLOCKED message's `content.urgency`.
pub const URGENCIES: &[&str] = &["low", "normal", "high", "critical"];
