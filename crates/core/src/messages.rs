//! The agent message envelope (FIPA ACL performatives, categories,
//! recipients) and the inbox lifecycle. Pure: the service sends, stores and
//! pushes messages (`coordination::messages`).

use serde_json::Value;
use uuid::Uuid;

use crate::domain::{IllegalTransition, text_enum};

/// The speech act of a message (FIPA ACL).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Performative {
    /// Asks the receiver to do something: a work item it must AGREE to or REFUSE.
    Request,
    /// States a fact: it updates the recipient's beliefs.
    Inform,
    /// Asks for information: an INFORM or FAILURE reply is expected.
    Query,
    /// Offers to do something under conditions (the contract net's CFP and bids).
    Propose,
    /// Accepts a proposal (`ACCEPT_PROPOSAL`).
    Accept,
    /// Declines a proposal (`REJECT_PROPOSAL`).
    Reject,
    /// Confirms something provisional.
    Confirm,
    /// Cancels an earlier request or commitment.
    Cancel,
    /// Agrees to do what a REQUEST asked.
    Agree,
    /// Refuses what a REQUEST asked.
    Refuse,
    /// Says that an agreed request or a query could not be done.
    Failure,
}

impl Performative {
    /// Every value, in declaration order.
    pub const ALL: &'static [Performative] = &[
        Performative::Request,
        Performative::Inform,
        Performative::Query,
        Performative::Propose,
        Performative::Accept,
        Performative::Reject,
        Performative::Confirm,
        Performative::Cancel,
        Performative::Agree,
        Performative::Refuse,
        Performative::Failure,
    ];

    /// Every name accepted on input: the stored names and FIPA's long names
    /// of the contract-net answers.
    const NAMES: &'static [&'static str] = &[
        "REQUEST",
        "INFORM",
        "QUERY",
        "PROPOSE",
        "ACCEPT",
        "REJECT",
        "CONFIRM",
        "CANCEL",
        "AGREE",
        "REFUSE",
        "FAILURE",
        "ACCEPT_PROPOSAL",
        "REJECT_PROPOSAL",
    ];

    /// The value as stored in the database and shown in the API (`ACCEPT`
    /// and `REJECT` keep their stored names; `ACCEPT_PROPOSAL` and
    /// `REJECT_PROPOSAL` parse to them).
    pub fn as_str(self) -> &'static str {
        match self {
            Performative::Request => "REQUEST",
            Performative::Inform => "INFORM",
            Performative::Query => "QUERY",
            Performative::Propose => "PROPOSE",
            Performative::Accept => "ACCEPT",
            Performative::Reject => "REJECT",
            Performative::Confirm => "CONFIRM",
            Performative::Cancel => "CANCEL",
            Performative::Agree => "AGREE",
            Performative::Refuse => "REFUSE",
            Performative::Failure => "FAILURE",
        }
    }
}

impl std::str::FromStr for Performative {
    type Err = crate::domain::UnknownValue;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ACCEPT_PROPOSAL" => Ok(Performative::Accept),
            "REJECT_PROPOSAL" => Ok(Performative::Reject),
            _ => Performative::ALL
                .iter()
                .copied()
                .find(|p| p.as_str() == s)
                .ok_or_else(|| crate::domain::UnknownValue {
                    kind: "Performative",
                    value: s.to_owned(),
                    expected: Performative::NAMES,
                }),
        }
    }
}

impl std::fmt::Display for Performative {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for Performative {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Performative {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

// In the OpenAPI document: a string limited to the names accepted.
impl utoipa::PartialSchema for Performative {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .enum_values(Some(Performative::NAMES.iter().copied()))
            .into()
    }
}

impl utoipa::ToSchema for Performative {
    fn name() -> std::borrow::Cow<'static, str> {
        std::borrow::Cow::Borrowed("Performative")
    }
}

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

// ------------------------------------------------------- performatives' effects

/// What a REQUEST or QUERY opened: something its recipient must answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemKind {
    /// A REQUEST: work the recipient must AGREE to or REFUSE.
    Request,
    /// A QUERY: it expects an INFORM or FAILURE reply.
    Query,
}

text_enum!(ItemKind as "RequestKind", {
    Request => "request",
    Query => "query",
});

/// Where a request or query is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemStatus {
    /// Waiting for the recipient's answer.
    Open,
    /// The recipient agreed to the request (it may still report done or failed).
    Agreed,
    /// The recipient refused the request.
    Refused,
    /// The requester withdrew it.
    Cancelled,
    /// The recipient reported the agreed work done (an INFORM reply).
    Done,
    /// The recipient reported that it could not do it (a FAILURE reply).
    Failed,
    /// The recipient answered the query (an INFORM reply).
    Answered,
}

text_enum!(ItemStatus as "RequestStatus", {
    Open => "open",
    Agreed => "agreed",
    Refused => "refused",
    Cancelled => "cancelled",
    Done => "done",
    Failed => "failed",
    Answered => "answered",
});

/// An open (or settled) request or query, as the rules see it.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkItem {
    /// The REQUEST or QUERY message's id (also the item's id).
    pub id: Uuid,
    /// Request or query.
    pub kind: ItemKind,
    /// Who asked, as an actor string (`agent:<id>`, `operator:…`).
    pub requester: String,
    /// The agent asked.
    pub recipient: String,
    /// Where it is.
    pub status: ItemStatus,
    /// Linked mission.
    pub mission_id: Option<Uuid>,
    /// Linked task (the requester's task: new work is placed under it).
    pub task_id: Option<Uuid>,
    /// The request's subject.
    pub subject: String,
    /// The request's content (may carry a `task` spec).
    pub content: Value,
}

/// A belief an INFORM asks its recipients to hold.
#[derive(Debug, Clone, PartialEq)]
pub struct InformedBelief {
    /// Category (default `environment`: facts about the world).
    pub category: crate::bdi::BeliefCategory,
    /// What it is about.
    pub subject: String,
    /// What is believed (a JSON `value` is kept as its JSON text).
    pub content: String,
    /// How sure the sender is (default 1: the sender states it as true).
    pub certainty: f64,
}

/// What sending a message does besides delivering it.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    /// Every recipient revises its belief (INFORM).
    ReviseBelief(InformedBelief),
    /// The message opens a request or query addressed to one agent.
    Open(ItemKind),
    /// The message settles the request or query it replies to.
    Close {
        /// The item (the REQUEST or QUERY message's id).
        id: Uuid,
        /// Its new status.
        status: ItemStatus,
    },
    /// An agreed request within a mission adds its work to the mission, as
    /// a child of the requester's task, pinned to the agreeing agent.
    AddTask {
        /// The request.
        request_id: Uuid,
        /// The mission.
        mission_id: Uuid,
        /// The requester's task the work is placed under.
        anchor_task: Uuid,
        /// The new task (boxed: it dwarfs the other effects).
        task: Box<crate::planning::TaskSpec>,
    },
}

/// Why a message breaks the conversation's protocol.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProtocolError {
    /// A field is wrong (400).
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// Only the agent a request or query was addressed to may answer it (403).
    #[error("{performative} answers {kind} {id}, which was addressed to '{recipient}'")]
    NotAddressee {
        /// The answer's performative.
        performative: Performative,
        /// Request or query.
        kind: ItemKind,
        /// The item.
        id: Uuid,
        /// Its recipient.
        recipient: String,
    },
    /// Only the requester may cancel (403).
    #[error("only '{requester}', who sent {kind} {id}, may cancel it")]
    NotRequester {
        /// Request or query.
        kind: ItemKind,
        /// The item.
        id: Uuid,
        /// Who sent it.
        requester: String,
    },
    /// The item is not in a state this answer applies to (409).
    #[error("{kind} {id} is {status}; {performative} {needs}")]
    WrongState {
        /// The answer's performative.
        performative: Performative,
        /// Request or query.
        kind: ItemKind,
        /// The item.
        id: Uuid,
        /// Its status.
        status: ItemStatus,
        /// What the answer needs, in words.
        needs: &'static str,
    },
}

use crate::invalid::Invalid;

/// The effects of sending `m`, given the request or query its `reply_to`
/// names (`None` when it names none, or a message that opened nothing).
/// Checks the protocol: AGREE and REFUSE answer an open REQUEST addressed to
/// the sender; FAILURE answers an open QUERY or an agreed REQUEST addressed to
/// the sender; CANCEL of a request or query is the requester's, while it is
/// open. PROPOSE, ACCEPT, REJECT and CONFIRM change nothing here (the
/// contract net sends and records them).
pub fn effects(m: &Outgoing, replied: Option<&WorkItem>) -> Result<Vec<Effect>, ProtocolError> {
    let mut out = Vec::new();
    let one_agent = matches!(m.to, Recipient::Agent(_));
    match m.performative {
        Performative::Inform => {
            if let Some(belief) = informed_belief(&m.content)? {
                out.push(Effect::ReviseBelief(belief));
            }
            if let Some(item) = replied.filter(|i| answered_by(i, m)) {
                let status = match (item.kind, item.status) {
                    (ItemKind::Query, ItemStatus::Open) => Some(ItemStatus::Answered),
                    (ItemKind::Request, ItemStatus::Agreed) => Some(ItemStatus::Done),
                    _ => None,
                };
                if let Some(status) = status {
                    out.push(Effect::Close {
                        id: item.id,
                        status,
                    });
                }
            }
        }
        Performative::Request => {
            // A bad task spec is refused now, not when the recipient agrees.
            requested_task(Uuid::nil(), &m.subject, &m.content)?;
            if one_agent {
                out.push(Effect::Open(ItemKind::Request));
            }
        }
        Performative::Query if one_agent => out.push(Effect::Open(ItemKind::Query)),
        Performative::Agree | Performative::Refuse => {
            let item = answering(m, replied, ItemKind::Request)?;
            if item.status != ItemStatus::Open {
                return Err(wrong_state(m, item, "answers an open request only"));
            }
            if m.performative == Performative::Refuse {
                out.push(Effect::Close {
                    id: item.id,
                    status: ItemStatus::Refused,
                });
            } else {
                out.push(Effect::Close {
                    id: item.id,
                    status: ItemStatus::Agreed,
                });
                if let (Some(mission_id), Some(anchor_task)) = (item.mission_id, item.task_id) {
                    out.push(Effect::AddTask {
                        request_id: item.id,
                        mission_id,
                        anchor_task,
                        task: Box::new(requested_task(item.id, &item.subject, &item.content)?),
                    });
                }
            }
        }
        Performative::Failure => {
            let item = replied.ok_or_else(|| {
                Invalid::unprocessable(
                    "nothing_to_answer",
                    "reply_to",
                    "a FAILURE must reply_to the QUERY or agreed REQUEST it answers",
                )
            })?;
            let item = answering(m, Some(item), item.kind)?;
            match (item.kind, item.status) {
                (ItemKind::Query, ItemStatus::Open) | (ItemKind::Request, ItemStatus::Agreed) => {
                    out.push(Effect::Close {
                        id: item.id,
                        status: ItemStatus::Failed,
                    });
                }
                _ => {
                    return Err(wrong_state(
                        m,
                        item,
                        "answers an open query or an agreed request (REFUSE an open request)",
                    ));
                }
            }
        }
        Performative::Cancel => {
            if let Some(item) = replied {
                if item.requester != m.sender {
                    return Err(ProtocolError::NotRequester {
                        kind: item.kind,
                        id: item.id,
                        requester: item.requester.clone(),
                    });
                }
                if item.status != ItemStatus::Open {
                    return Err(wrong_state(m, item, "withdraws an open one only"));
                }
                out.push(Effect::Close {
                    id: item.id,
                    status: ItemStatus::Cancelled,
                });
            }
        }
        Performative::Query
        | Performative::Propose
        | Performative::Accept
        | Performative::Reject
        | Performative::Confirm => {}
    }
    Ok(out)
}

/// Whether `m` comes from the agent `item` was addressed to.
fn answered_by(item: &WorkItem, m: &Outgoing) -> bool {
    m.from_agent.as_deref() == Some(item.recipient.as_str())
}

/// The item an AGREE, REFUSE or FAILURE answers: it must be of `kind` and
/// addressed to the sender.
fn answering<'a>(
    m: &Outgoing,
    replied: Option<&'a WorkItem>,
    kind: ItemKind,
) -> Result<&'a WorkItem, ProtocolError> {
    let item = replied.filter(|i| i.kind == kind).ok_or_else(|| {
        Invalid::unprocessable(
            "nothing_to_answer",
            "reply_to",
            format!(
                "an {} must reply_to the {} it answers",
                m.performative,
                kind.as_str().to_uppercase()
            ),
        )
    })?;
    if !answered_by(item, m) {
        return Err(ProtocolError::NotAddressee {
            performative: m.performative,
            kind: item.kind,
            id: item.id,
            recipient: item.recipient.clone(),
        });
    }
    Ok(item)
}

fn wrong_state(m: &Outgoing, item: &WorkItem, needs: &'static str) -> ProtocolError {
    ProtocolError::WrongState {
        performative: m.performative,
        kind: item.kind,
        id: item.id,
        status: item.status,
        needs,
    }
}

/// The belief an INFORM's content states, if it names a `subject`:
/// `{"subject", "content" | "value", "certainty"?, "category"?}`.
pub fn informed_belief(content: &Value) -> Result<Option<InformedBelief>, Invalid> {
    let Some(subject) = content.get("subject") else {
        return Ok(None);
    };
    let subject = subject
        .as_str()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| {
            Invalid::new(
                "content.subject",
                "content.subject must be a non-empty string",
            )
        })?;
    let stated = match (content.get("content"), content.get("value")) {
        (Some(Value::String(s)), _) | (None, Some(Value::String(s))) => s.trim().to_owned(),
        (Some(v), _) | (None, Some(v)) if !v.is_null() => v.to_string(),
        _ => {
            return Err(Invalid::new(
                "content.content",
                "an INFORM about a subject must say content.content (or content.value)",
            ));
        }
    };
    if stated.is_empty() {
        return Err(Invalid::new(
            "content.content",
            "content.content must not be empty",
        ));
    }
    let certainty = match content.get("certainty") {
        None => 1.0,
        Some(c) => c
            .as_f64()
            .filter(|c| (0.0..=1.0).contains(c))
            .ok_or_else(|| {
                Invalid::new(
                    "content.certainty",
                    "content.certainty must be a number in [0, 1]",
                )
            })?,
    };
    let category = match content.get("category") {
        None => crate::bdi::BeliefCategory::Environment,
        Some(c) => c.as_str().and_then(|c| c.parse().ok()).ok_or_else(|| {
            Invalid::new(
                "content.category",
                "content.category must be environment, self, agent or case",
            )
        })?,
    };
    Ok(Some(InformedBelief {
        category,
        subject: subject.to_owned(),
        content: stated,
        certainty,
    }))
}

/// The certainty to write for an informed belief given the one held: a
/// corroborating INFORM (same content once normalised) never lowers it.
pub fn informed_certainty(held: Option<(&str, f64)>, content: &str, certainty: f64) -> f64 {
    match held {
        Some((old, old_certainty)) if !crate::bdi::contradicts(old, content) => {
            certainty.max(old_certainty)
        }
        _ => certainty,
    }
}

/// The task a REQUEST asks for: its `content.task` (a task spec; `id`,
/// `title` and `task_type` may be left out), or one made from the subject
/// and `content.description` / `task_type` / `required_skills`. A task
/// without a `must_pass` criterion gets "a non-empty result".
pub fn requested_task(
    request_id: Uuid,
    subject: &str,
    content: &Value,
) -> Result<crate::planning::TaskSpec, Invalid> {
    let simple = request_id.simple().to_string();
    let key = format!("req-{}", &simple[..8]);
    let title = if subject.trim().is_empty() {
        "Requested work".to_owned()
    } else {
        subject.trim().to_owned()
    };
    let mut spec = match content.get("task") {
        Some(Value::Object(t)) => {
            let mut t = t.clone();
            t.entry("id").or_insert_with(|| Value::String(key.clone()));
            t.entry("title")
                .or_insert_with(|| Value::String(title.clone()));
            t.entry("task_type")
                .or_insert_with(|| Value::String("request".into()));
            serde_json::from_value::<crate::planning::TaskSpec>(Value::Object(t)).map_err(|e| {
                Invalid::new("content.task", format!("content.task is not a task: {e}"))
            })?
        }
        Some(_) => {
            return Err(Invalid::new(
                "content.task",
                "content.task must be an object",
            ));
        }
        None => {
            let text = |f: &str| content.get(f).and_then(Value::as_str).map(str::to_owned);
            let skills = match content.get("required_skills") {
                None => Vec::new(),
                Some(v) => serde_json::from_value::<Vec<String>>(v.clone()).map_err(|_| {
                    Invalid::new(
                        "content.required_skills",
                        "content.required_skills must be a list of strings",
                    )
                })?,
            };
            crate::planning::TaskSpec {
                id: key,
                title,
                task_type: text("task_type").unwrap_or_else(|| "request".into()),
                description: text("description").unwrap_or_default(),
                required_skills: skills,
                required_tools: Vec::new(),
                depends_on: Vec::new(),
                success_criteria: Vec::new(),
                estimated_cost: 0.0,
                optional: false,
                inputs: Value::Object(Default::default()),
            }
        }
    };
    if !spec.success_criteria.iter().any(|c| c.must_pass) {
        spec.success_criteria.push(crate::verification::Criterion {
            description: "The requested work produced a result".into(),
            must_pass: true,
            check: Some(crate::verification::Check::NonEmpty),
        });
    }
    Ok(spec)
}

#[cfg(test)]
mod tests;
