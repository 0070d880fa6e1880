//! SQL of agent messages and inboxes.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::PgConnection;
use time::OffsetDateTime;
use uuid::Uuid;

use crate::coordination::messages::{Outgoing, Recipient};

/// A message as the API shows it.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct MessageView {
    /// Globally unique id.
    pub id: Uuid,
    /// The conversation (thread) it belongs to.
    pub conversation_id: Uuid,
    /// The message it answers.
    pub reply_to: Option<Uuid>,
    /// The sending agent, or the coordinator/person that sent it.
    pub from: String,
    /// The sending agent, when an agent sent it.
    pub from_agent: Option<String>,
    /// What the sender addressed: `agent:<id>`, `role:<role>` or `all`.
    pub to: String,
    /// `REQUEST`, `INFORM`, `QUERY`, `PROPOSE`, `ACCEPT`, `REJECT`, `CONFIRM` or `CANCEL`.
    pub performative: String,
    /// `HANDOFF`, `BLOCKED`, `DECISION` or `INFO`, if any.
    pub category: Option<String>,
    /// Linked mission.
    pub mission_id: Option<Uuid>,
    /// Linked task.
    pub task_id: Option<Uuid>,
    /// Subject.
    pub subject: String,
    /// Payload.
    pub content: Value,
    /// Whether recipients must ack it (`BLOCKED`, `HANDOFF`).
    pub requires_ack: bool,
    /// Sent.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// Whether `m` is the same message as the stored `v` (an idempotent resend).
pub fn same_message(v: &MessageView, m: &Outgoing) -> bool {
    v.from_agent == m.from_agent
        && v.to == m.to.stored()
        && v.performative == m.performative.as_str()
        && v.category.as_deref() == m.category.map(|c| c.as_str())
        && v.subject == m.subject
        && v.content == m.content
        && v.reply_to == m.reply_to
        && (m.task_id.is_none() || v.task_id == m.task_id)
}

/// One message by id.
pub async fn get(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
) -> sqlx::Result<Option<MessageView>> {
    sqlx::query_as!(
        MessageView,
        r#"SELECT id, conversation_id, reply_to, COALESCE(from_agent, sender) AS "from!", from_agent,
                  addressed_to AS "to", performative, category, mission_id, task_id, subject, content,
                  requires_ack, created_at
           FROM agent_messages WHERE workspace_id = $1 AND id = $2"#,
        workspace_id,
        id
    )
    .fetch_optional(conn)
    .await
}

/// Whether an agent is registered.
pub async fn agent_exists(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
) -> sqlx::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM agents WHERE workspace_id = $1 AND agent_id = $2) AS "e!""#,
        workspace_id,
        agent_id
    )
    .fetch_one(conn)
    .await
}

/// Whether a mission exists.
pub async fn mission_exists(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    mission_id: Uuid,
) -> sqlx::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM orchestration_runs WHERE workspace_id = $1 AND id = $2) AS "e!""#,
        workspace_id,
        mission_id
    )
    .fetch_one(conn)
    .await
}

/// The mission of a task, if the task exists.
pub async fn task_mission(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    task_id: Uuid,
) -> sqlx::Result<Option<Uuid>> {
    sqlx::query_scalar!(
        "SELECT run_id FROM orchestration_tasks WHERE workspace_id = $1 AND id = $2",
        workspace_id,
        task_id
    )
    .fetch_optional(conn)
    .await
}

/// The agent ids a recipient expands to (never the sender for a broadcast;
/// offline agents still get broadcasts in their inbox, to read when back).
pub async fn resolve_recipients(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    to: &Recipient,
    sender: Option<&str>,
) -> sqlx::Result<Vec<String>> {
    let (agent, role, all) = match to {
        Recipient::Agent(a) => (Some(a.as_str()), None, false),
        Recipient::Role(r) => (None, Some(r.as_str()), false),
        Recipient::All => (None, None, true),
    };
    sqlx::query_scalar!(
        "SELECT agent_id FROM agents
         WHERE workspace_id = $1
           AND (agent_id = $2 OR role = $3 OR $4)
           AND ($2::text IS NOT NULL OR agent_id IS DISTINCT FROM $5)
         ORDER BY agent_id",
        workspace_id,
        agent,
        role,
        all,
        sender
    )
    .fetch_all(conn)
    .await
}

/// What [`insert`] writes.
pub struct NewMessage<'a> {
    /// Id.
    pub id: Uuid,
    /// Resolved conversation.
    pub conversation_id: Uuid,
    /// Resolved mission.
    pub mission_id: Option<Uuid>,
    /// Whether acks are required.
    pub requires_ack: bool,
    /// Resolved recipients.
    pub recipients: &'a [String],
    /// The rest.
    pub m: &'a Outgoing,
}

/// Writes a message and its inbox entries (queued for push).
pub async fn insert(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    n: NewMessage<'_>,
) -> sqlx::Result<MessageView> {
    let view = sqlx::query_as!(
        MessageView,
        r#"INSERT INTO agent_messages (id, workspace_id, conversation_id, reply_to, from_agent, sender,
               addressed_to, performative, category, mission_id, task_id, subject, content,
               requires_ack, created_by)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $6)
           RETURNING id, conversation_id, reply_to, COALESCE(from_agent, sender) AS "from!", from_agent,
                     addressed_to AS "to", performative, category, mission_id, task_id, subject, content,
                     requires_ack, created_at"#,
        n.id,
        workspace_id,
        n.conversation_id,
        n.m.reply_to,
        n.m.from_agent.as_deref(),
        n.m.sender,
        n.m.to.stored(),
        n.m.performative.as_str(),
        n.m.category.map(|c| c.as_str()),
        n.mission_id,
        n.m.task_id,
        n.m.subject,
        n.m.content,
        n.requires_ack,
    )
    .fetch_one(&mut *conn)
    .await?;
    sqlx::query!(
        "INSERT INTO message_recipients (message_id, workspace_id, agent_id, push_state, push_next_at)
         SELECT $1, $2, a.agent_id, 'pending', now()
         FROM agents a WHERE a.workspace_id = $2 AND a.agent_id = ANY($3)",
        n.id,
        workspace_id,
        n.recipients
    )
    .execute(conn)
    .await?;
    Ok(view)
}
