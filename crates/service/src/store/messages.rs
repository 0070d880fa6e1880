//! SQL of agent messages and inboxes.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::PgConnection;
use time::OffsetDateTime;
use uuid::Uuid;

use coordinator_core::messages::{Outgoing, Recipient};

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

/// Writes a message and its inbox entries (queued for push); `None` when a
/// concurrent send with the same id won.
pub async fn insert(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    n: NewMessage<'_>,
) -> sqlx::Result<Option<MessageView>> {
    let view = sqlx::query_as!(
        MessageView,
        r#"INSERT INTO agent_messages (id, workspace_id, conversation_id, reply_to, from_agent, sender,
               addressed_to, performative, category, mission_id, task_id, subject, content,
               requires_ack, created_by)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $6)
           ON CONFLICT (id) DO NOTHING
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
    .fetch_optional(&mut *conn)
    .await?;
    let Some(view) = view else {
        return Ok(None);
    };
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
    Ok(Some(view))
}

/// One entry of an agent's inbox: the message and how far the agent got.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct InboxEntry {
    /// The message.
    pub message: MessageView,
    /// `unread`, `read` or `acked`.
    pub state: String,
    /// When it was first read.
    #[serde(with = "time::serde::rfc3339::option")]
    pub read_at: Option<OffsetDateTime>,
    /// When it was acknowledged.
    #[serde(with = "time::serde::rfc3339::option")]
    pub acked_at: Option<OffsetDateTime>,
    /// Push to the agent's endpoint: `none`, `pending`, `delivered`, `failed` or `unsupported`.
    pub push_state: String,
}

/// Which inbox entries to list.
#[derive(Debug, Clone, Default)]
pub struct InboxFilter {
    /// Only entries in this state.
    pub state: Option<String>,
    /// Only entries that need an ack and have none yet.
    pub unacked: bool,
    /// Only messages of this conversation.
    pub conversation_id: Option<Uuid>,
}

/// An agent's inbox, oldest first.
pub async fn inbox(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    f: &InboxFilter,
    limit: i64,
) -> sqlx::Result<Vec<InboxEntry>> {
    entries(conn, workspace_id, agent_id, f, limit, None).await
}

/// One entry of an agent's inbox.
pub async fn inbox_entry(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    message_id: Uuid,
    f: &InboxFilter,
) -> sqlx::Result<Option<InboxEntry>> {
    Ok(
        entries(conn, workspace_id, agent_id, f, 1, Some(message_id))
            .await?
            .pop(),
    )
}

async fn entries(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    f: &InboxFilter,
    limit: i64,
    only: Option<Uuid>,
) -> sqlx::Result<Vec<InboxEntry>> {
    let rows = sqlx::query!(
        r#"SELECT m.id, m.conversation_id, m.reply_to, COALESCE(m.from_agent, m.sender) AS "from!",
                  m.from_agent, m.addressed_to, m.performative, m.category, m.mission_id, m.task_id,
                  m.subject, m.content, m.requires_ack, m.created_at,
                  r.state, r.read_at, r.acked_at, r.push_state
           FROM message_recipients r JOIN agent_messages m ON m.id = r.message_id
           WHERE r.workspace_id = $1 AND r.agent_id = $2
             AND ($3::text IS NULL OR r.state = $3)
             AND (NOT $4 OR (m.requires_ack AND r.state <> 'acked'))
             AND ($5::uuid IS NULL OR m.conversation_id = $5)
             AND ($7::uuid IS NULL OR m.id = $7)
           ORDER BY m.created_at, m.id
           LIMIT $6"#,
        workspace_id,
        agent_id,
        f.state.as_deref(),
        f.unacked,
        f.conversation_id,
        limit,
        only
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| InboxEntry {
            message: MessageView {
                id: r.id,
                conversation_id: r.conversation_id,
                reply_to: r.reply_to,
                from: r.from,
                from_agent: r.from_agent,
                to: r.addressed_to,
                performative: r.performative,
                category: r.category,
                mission_id: r.mission_id,
                task_id: r.task_id,
                subject: r.subject,
                content: r.content,
                requires_ack: r.requires_ack,
                created_at: r.created_at,
            },
            state: r.state,
            read_at: r.read_at,
            acked_at: r.acked_at,
            push_state: r.push_state,
        })
        .collect())
}

/// Counts of an agent's inbox.
#[derive(Debug, Clone, Default, Serialize, Deserialize, utoipa::ToSchema)]
pub struct InboxCounts {
    /// Not read yet.
    pub unread: i64,
    /// Needing an ack that has not come.
    pub unacked: i64,
    /// Every entry.
    pub total: i64,
}

/// Counts of an agent's inbox.
pub async fn inbox_counts(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
) -> sqlx::Result<InboxCounts> {
    let r = sqlx::query!(
        r#"SELECT count(*) FILTER (WHERE r.state = 'unread') AS "unread!",
                  count(*) FILTER (WHERE m.requires_ack AND r.state <> 'acked') AS "unacked!",
                  count(*) AS "total!"
           FROM message_recipients r JOIN agent_messages m ON m.id = r.message_id
           WHERE r.workspace_id = $1 AND r.agent_id = $2"#,
        workspace_id,
        agent_id
    )
    .fetch_one(conn)
    .await?;
    Ok(InboxCounts {
        unread: r.unread,
        unacked: r.unacked,
        total: r.total,
    })
}

/// The state of one inbox entry, locked for update; `None` if the message is not in that inbox.
pub async fn lock_entry(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    message_id: Uuid,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar!(
        "SELECT state FROM message_recipients
         WHERE workspace_id = $1 AND agent_id = $2 AND message_id = $3
         FOR UPDATE",
        workspace_id,
        agent_id,
        message_id
    )
    .fetch_optional(conn)
    .await
}

/// Moves an inbox entry to `state`, stamping read/ack times.
pub async fn set_entry_state(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    message_id: Uuid,
    state: &str,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE message_recipients
         SET state = $4,
             read_at = COALESCE(read_at, now()),
             acked_at = CASE WHEN $4 = 'acked' THEN now() ELSE acked_at END
         WHERE workspace_id = $1 AND agent_id = $2 AND message_id = $3",
        workspace_id,
        agent_id,
        message_id,
        state
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// One recipient of a message and its state.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RecipientState {
    /// The recipient.
    pub agent_id: String,
    /// `unread`, `read` or `acked`.
    pub state: String,
    /// Push state.
    pub push_state: String,
    /// Push attempts so far.
    pub push_attempts: i32,
    /// Why the last push failed, if it did.
    pub push_last_error: Option<String>,
}

/// Every recipient of a message.
pub async fn recipients(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    message_id: Uuid,
) -> sqlx::Result<Vec<RecipientState>> {
    sqlx::query_as!(
        RecipientState,
        "SELECT agent_id, state, push_state, push_attempts, push_last_error
         FROM message_recipients WHERE workspace_id = $1 AND message_id = $2
         ORDER BY agent_id",
        workspace_id,
        message_id
    )
    .fetch_all(conn)
    .await
}

/// Every message of a conversation, oldest first.
pub async fn conversation(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    conversation_id: Uuid,
    limit: i64,
) -> sqlx::Result<Vec<MessageView>> {
    sqlx::query_as!(
        MessageView,
        r#"SELECT id, conversation_id, reply_to, COALESCE(from_agent, sender) AS "from!", from_agent,
                  addressed_to AS "to", performative, category, mission_id, task_id, subject, content,
                  requires_ack, created_at
           FROM agent_messages WHERE workspace_id = $1 AND conversation_id = $2
           ORDER BY created_at, id
           LIMIT $3"#,
        workspace_id,
        conversation_id,
        limit
    )
    .fetch_all(conn)
    .await
}

/// A push to send: the entry and where to.
#[derive(Debug, Clone)]
pub struct DuePush {
    /// Message.
    pub message_id: Uuid,
    /// Workspace.
    pub workspace_id: Uuid,
    /// Recipient.
    pub agent_id: String,
    /// Its worker base URL.
    pub endpoint_url: String,
    /// Attempts before this one.
    pub attempts: i32,
}

/// Claims up to `limit` due pushes, hiding them from other replicas for
/// `lease_secs` (a replica that dies mid-push leaves them to be retried).
pub async fn claim_due_pushes(
    pool: &sqlx::PgPool,
    limit: i64,
    lease_secs: f64,
) -> sqlx::Result<Vec<DuePush>> {
    sqlx::query_as!(
        DuePush,
        r#"WITH due AS (
               SELECT message_id, agent_id FROM message_recipients
               WHERE push_state = 'pending' AND push_next_at <= now()
               ORDER BY push_next_at
               LIMIT $1
               FOR UPDATE SKIP LOCKED
           )
           UPDATE message_recipients r
           SET push_next_at = now() + make_interval(secs => $2)
           FROM due, agents a
           WHERE r.message_id = due.message_id AND r.agent_id = due.agent_id
             AND a.workspace_id = r.workspace_id AND a.agent_id = r.agent_id
           RETURNING r.message_id, r.workspace_id, r.agent_id, a.endpoint_url, r.push_attempts AS attempts"#,
        limit,
        lease_secs
    )
    .fetch_all(pool)
    .await
}

/// Records a push outcome: `delivered`, `unsupported`, `failed`, or
/// `pending` again with the next try at `retry_in_secs`.
pub async fn record_push(
    pool: &sqlx::PgPool,
    p: &DuePush,
    state: &str,
    retry_in_secs: f64,
    error: Option<&str>,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE message_recipients
         SET push_state = $3, push_attempts = push_attempts + 1,
             push_next_at = CASE WHEN $3 = 'pending' THEN now() + make_interval(secs => $4) END,
             push_last_error = $5
         WHERE message_id = $1 AND agent_id = $2 AND push_state = 'pending'",
        p.message_id,
        p.agent_id,
        state,
        retry_in_secs,
        error
    )
    .execute(pool)
    .await?;
    Ok(())
}

// ---------------------------------------------------- requests and queries

/// A request or query as the API shows it.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RequestView {
    /// The REQUEST or QUERY message's id.
    pub id: Uuid,
    /// `request` or `query`.
    pub kind: String,
    /// Its conversation.
    pub conversation_id: Uuid,
    /// Who asked (`agent:<id>`, or the person or coordinator).
    pub requester: String,
    /// The agent asked.
    pub recipient: String,
    /// Linked mission.
    pub mission_id: Option<Uuid>,
    /// Linked task (the requester's).
    pub task_id: Option<Uuid>,
    /// Subject.
    pub subject: String,
    /// What was asked.
    pub content: Value,
    /// `open`, `agreed`, `refused`, `cancelled`, `done`, `failed` or `answered`.
    pub status: String,
    /// The message that last moved it.
    pub settled_by: Option<Uuid>,
    /// Key of the task an AGREE added to the mission.
    pub added_task: Option<String>,
    /// Asked.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Last change.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// Opens a request or query for the message `view` (addressed to `recipient`).
pub async fn insert_request(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    view: &MessageView,
    kind: &str,
    requester: &str,
    recipient: &str,
) -> sqlx::Result<RequestView> {
    sqlx::query_as!(
        RequestView,
        r#"INSERT INTO agent_requests (id, workspace_id, kind, conversation_id, requester, recipient,
               mission_id, task_id, subject, content)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
           RETURNING id, kind, conversation_id, requester, recipient, mission_id, task_id, subject,
                     content, status, settled_by, added_task, created_at, updated_at"#,
        view.id,
        workspace_id,
        kind,
        view.conversation_id,
        requester,
        recipient,
        view.mission_id,
        view.task_id,
        view.subject,
        view.content,
    )
    .fetch_one(conn)
    .await
}

/// The request or query opened by message `id`, locked for update.
pub async fn lock_request(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
) -> sqlx::Result<Option<RequestView>> {
    sqlx::query_as!(
        RequestView,
        r#"SELECT id, kind, conversation_id, requester, recipient, mission_id, task_id, subject,
                  content, status, settled_by, added_task, created_at, updated_at
           FROM agent_requests WHERE workspace_id = $1 AND id = $2
           FOR UPDATE"#,
        workspace_id,
        id
    )
    .fetch_optional(conn)
    .await
}

/// Moves a request or query to `status`, naming the message that did it.
pub async fn settle_request(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
    status: &str,
    settled_by: Uuid,
    added_task: Option<&str>,
) -> sqlx::Result<RequestView> {
    sqlx::query_as!(
        RequestView,
        r#"UPDATE agent_requests
           SET status = $3, settled_by = $4, added_task = COALESCE($5, added_task), updated_at = now()
           WHERE workspace_id = $1 AND id = $2
           RETURNING id, kind, conversation_id, requester, recipient, mission_id, task_id, subject,
                     content, status, settled_by, added_task, created_at, updated_at"#,
        workspace_id,
        id,
        status,
        settled_by,
        added_task
    )
    .fetch_one(conn)
    .await
}

/// Requests and queries an agent was asked or asked (as `agent:<id>`),
/// newest first; only those in `status` when given.
pub async fn requests_of(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    status: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<RequestView>> {
    sqlx::query_as!(
        RequestView,
        r#"SELECT id, kind, conversation_id, requester, recipient, mission_id, task_id, subject,
                  content, status, settled_by, added_task, created_at, updated_at
           FROM agent_requests
           WHERE workspace_id = $1 AND (recipient = $2 OR requester = 'agent:' || $2)
             AND ($3::text IS NULL OR status = $3)
           ORDER BY created_at DESC, id
           LIMIT $4"#,
        workspace_id,
        agent_id,
        status,
        limit
    )
    .fetch_all(conn)
    .await
}
