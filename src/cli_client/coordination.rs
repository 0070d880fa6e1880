//! `coordinator agent send|inbox|read|ack|thread|reserve|release|reservations|status`:
//! the RFC-001 coordination commands (messages, reservations, the unified
//! status view). The answers are the service's own message and reservation
//! views, shared with the server types.

use std::process::ExitCode;

use serde_json::{Map, Value, json};

use super::{
    CliError, CliResult, out, out_json, parse_json_flag,
    table::{Table, datetime, fields, or_dash, truncate},
};
use crate::{
    api::{
        messages::{Conversation, Inbox, SentMessage},
        reservations::{ReservationList, ReservationStatus},
    },
    client::Client,
    coordination::messages::ThreadNode,
    store::messages::InboxEntry,
};

/// `coordinator agent send`.
#[derive(Debug, clap::Args)]
pub struct SendArgs {
    /// Recipient: an agent id, `role:<role>` or `all`.
    pub to: String,
    /// Sending agent (an agent token sends as itself).
    #[arg(long)]
    pub from: Option<String>,
    /// REQUEST, INFORM (default), QUERY, PROPOSE, ACCEPT, REJECT, CONFIRM or CANCEL.
    #[arg(long, short = 'p')]
    pub performative: Option<String>,
    /// HANDOFF, BLOCKED, DECISION or INFO (needs --mission or --task).
    #[arg(long, short = 'c')]
    pub category: Option<String>,
    /// Subject line.
    #[arg(long, short = 's')]
    pub subject: Option<String>,
    /// Text body (stored as `content.body`).
    #[arg(long, short = 'b')]
    pub body: Option<String>,
    /// Content as a JSON object (merged with --body, --action and --urgency).
    #[arg(long, value_name = "JSON")]
    pub content: Option<String>,
    /// For BLOCKED: the action requested (`content.requested_action`).
    #[arg(long)]
    pub action: Option<String>,
    /// For BLOCKED: low, normal, high or critical (`content.urgency`).
    #[arg(long)]
    pub urgency: Option<String>,
    /// Linked mission.
    #[arg(long)]
    pub mission: Option<String>,
    /// Linked task.
    #[arg(long)]
    pub task: Option<String>,
    /// The message this answers (joins its conversation).
    #[arg(long)]
    pub reply_to: Option<String>,
    /// Conversation id.
    #[arg(long)]
    pub conversation: Option<String>,
    /// Message id, for an idempotent retry.
    #[arg(long)]
    pub id: Option<String>,
}

/// `coordinator agent reserve`.
#[derive(Debug, clap::Args)]
pub struct ReserveArgs {
    /// Scope: a name or a pattern (`*`, `?`), e.g. `src/api/*`.
    pub scope: String,
    /// Holder (an agent token reserves for itself).
    #[arg(long)]
    pub agent: Option<String>,
    /// Seconds to hold it [service default: 900].
    #[arg(long, value_name = "SECS")]
    pub ttl: Option<i64>,
    /// Linked mission.
    #[arg(long)]
    pub mission: Option<String>,
    /// Linked task.
    #[arg(long)]
    pub task: Option<String>,
    /// Why.
    #[arg(long)]
    pub note: Option<String>,
}

fn put(map: &mut Map<String, Value>, key: &str, v: Option<String>) {
    if let Some(v) = v {
        map.insert(key.to_owned(), Value::String(v));
    }
}

/// `agent send`.
pub(super) async fn send(api: &Client, a: SendArgs, as_json: bool) -> CliResult {
    let mut content = match &a.content {
        Some(text) => match parse_json_flag("--content", text)? {
            Value::Object(m) => m,
            _ => return Err(CliError::Usage("--content must be a JSON object".into())),
        },
        None => Map::new(),
    };
    put(&mut content, "body", a.body);
    put(&mut content, "requested_action", a.action);
    put(&mut content, "urgency", a.urgency);
    let mut req = Map::new();
    req.insert("to".into(), Value::String(a.to));
    put(&mut req, "from", a.from);
    put(
        &mut req,
        "performative",
        a.performative.map(|p| p.to_uppercase()),
    );
    put(&mut req, "category", a.category.map(|c| c.to_uppercase()));
    put(&mut req, "subject", a.subject);
    put(&mut req, "mission_id", a.mission);
    put(&mut req, "task_id", a.task);
    put(&mut req, "reply_to", a.reply_to);
    put(&mut req, "conversation_id", a.conversation);
    put(&mut req, "id", a.id);
    req.insert("content".into(), Value::Object(content));
    let sent: SentMessage = api.post(&["v1", "messages"], Some(&req)).await?;
    if as_json {
        out_json(&sent)?;
    } else {
        let to: Vec<&str> = sent
            .recipients
            .iter()
            .map(|r| r.agent_id.as_str())
            .collect();
        out(&format!(
            "sent {} {} to {} ({})\nconversation {}\n",
            sent.message.performative,
            sent.message.id,
            sent.message.to,
            to.join(", "),
            sent.message.conversation_id
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `agent inbox`.
pub(super) async fn inbox(
    api: &Client,
    agent: &str,
    state: Option<String>,
    unacked: bool,
    as_json: bool,
) -> CliResult {
    let mut q = Vec::new();
    if let Some(s) = state {
        q.push(("state", s));
    }
    if unacked {
        q.push(("unacked", "true".to_owned()));
    }
    let inbox: Inbox = api.get(&["v1", "agents", agent, "inbox"], &q).await?;
    if as_json {
        return out_json(&inbox).map(|_| ExitCode::SUCCESS);
    }
    let mut t = Table::new(&["ID", "STATE", "FROM", "ACT", "CATEGORY", "SUBJECT", "SENT"]);
    for e in &inbox.messages {
        let m = &e.message;
        let state = if m.requires_ack && e.state != "acked" {
            format!("{} (ack!)", e.state)
        } else {
            e.state.clone()
        };
        t.row(vec![
            m.id.to_string(),
            state,
            m.from.clone(),
            m.performative.clone(),
            or_dash(m.category.as_deref()),
            truncate(&m.subject, 40),
            datetime(Some(m.created_at)),
        ]);
    }
    let c = &inbox.counts;
    if t.is_empty() {
        eprintln!("no messages match");
    } else {
        out(&t.render())?;
    }
    eprintln!(
        "{}: {} unread, {} awaiting ack, {} in all",
        inbox.agent_id, c.unread, c.unacked, c.total
    );
    Ok(ExitCode::SUCCESS)
}

/// `agent read` / `agent ack`.
pub(super) async fn mark(
    api: &Client,
    agent: &str,
    message: &str,
    verb: &str,
    as_json: bool,
) -> CliResult {
    let e: InboxEntry = api
        .post::<_, Value>(&["v1", "agents", agent, "inbox", message, verb], None)
        .await?;
    if as_json {
        out_json(&e)?;
    } else {
        out(&entry_fields(&e))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn entry_fields(e: &InboxEntry) -> String {
    let m = &e.message;
    fields(&[
        ("message", m.id.to_string()),
        ("state", e.state.clone()),
        ("from", m.from.clone()),
        ("to", m.to.clone()),
        ("performative", m.performative.clone()),
        ("category", or_dash(m.category.as_deref())),
        ("subject", m.subject.clone()),
        ("content", m.content.to_string()),
        ("conversation", m.conversation_id.to_string()),
        ("sent", datetime(Some(m.created_at))),
    ])
}

/// `agent thread`.
pub(super) async fn thread(api: &Client, conversation: &str, as_json: bool) -> CliResult {
    let c: Conversation = api.get(&["v1", "conversations", conversation], &[]).await?;
    if as_json {
        return out_json(&c).map(|_| ExitCode::SUCCESS);
    }
    let mut text = format!(
        "conversation {} ({} messages)\n",
        c.conversation_id, c.message_count
    );
    fn walk(n: &ThreadNode, depth: usize, text: &mut String) {
        let m = &n.message;
        text.push_str(&format!(
            "{}{} {} → {}  {}{}\n",
            "  ".repeat(depth),
            m.performative,
            m.from,
            m.to,
            m.category
                .as_deref()
                .map(|c| format!("[{c}] "))
                .unwrap_or_default(),
            truncate(&m.subject, 60),
        ));
        for r in &n.replies {
            walk(r, depth + 1, text);
        }
    }
    for root in &c.threads {
        walk(root, 0, &mut text);
    }
    out(&text)?;
    Ok(ExitCode::SUCCESS)
}

/// `agent reserve`.
pub(super) async fn reserve(api: &Client, a: ReserveArgs, as_json: bool) -> CliResult {
    let mut req = Map::new();
    req.insert("scope".into(), Value::String(a.scope));
    put(&mut req, "agent_id", a.agent);
    put(&mut req, "mission_id", a.mission);
    put(&mut req, "task_id", a.task);
    put(&mut req, "note", a.note);
    if let Some(ttl) = a.ttl {
        req.insert("ttl_secs".into(), json!(ttl));
    }
    let r: ReservationStatus = api.post(&["v1", "reservations"], Some(&req)).await?;
    if as_json {
        out_json(&r)?;
    } else {
        out(&format!(
            "reserved {} for {} until {} ({})\n",
            r.reservation.scope,
            r.reservation.agent_id,
            datetime(Some(r.reservation.expires_at)),
            r.reservation.id
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `agent release`.
pub(super) async fn release(api: &Client, id: &str, as_json: bool) -> CliResult {
    let r: ReservationStatus = api
        .post::<_, Value>(&["v1", "reservations", id, "release"], None)
        .await?;
    if as_json {
        out_json(&r)?;
    } else {
        out(&format!(
            "released {} ({})\n",
            r.reservation.scope, r.reservation.id
        ))?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `agent reservations`.
pub(super) async fn reservations(
    api: &Client,
    query: Vec<(&str, String)>,
    as_json: bool,
) -> CliResult {
    let list: ReservationList = api.get(&["v1", "reservations"], &query).await?;
    if as_json {
        return out_json(&list).map(|_| ExitCode::SUCCESS);
    }
    if list.reservations.is_empty() {
        eprintln!("no reservations match");
        return Ok(ExitCode::SUCCESS);
    }
    out(&reservation_table(&list.reservations).render())?;
    Ok(ExitCode::SUCCESS)
}

fn reservation_table(rows: &[ReservationStatus]) -> Table {
    let mut t = Table::new(&["ID", "SCOPE", "AGENT", "STATE", "EXPIRES", "TASK", "NOTE"]);
    for r in rows {
        let v = &r.reservation;
        let state = if v.state == "active" && !r.holds {
            "stale".to_owned()
        } else {
            v.state.clone()
        };
        t.row(vec![
            v.id.to_string(),
            v.scope.clone(),
            v.agent_id.clone(),
            state,
            datetime(Some(v.expires_at)),
            v.task_id
                .map(|t| t.to_string())
                .unwrap_or_else(|| "-".into()),
            truncate(&v.note, 30),
        ]);
    }
    t
}

/// `agent status`: tasks held, unread and un-acked messages, live reservations.
pub(super) async fn status(api: &Client, agent: &str, as_json: bool) -> CliResult {
    let s: Value = api.get(&["v1", "agents", agent, "status"], &[]).await?;
    if as_json {
        return out_json(&s).map(|_| ExitCode::SUCCESS);
    }
    let str_of = |v: &Value| v.as_str().unwrap_or("-").to_owned();
    let mut text = fields(&[
        ("agent", str_of(&s["agent"]["agent_id"])),
        ("status", str_of(&s["agent"]["status"])),
        (
            "inbox",
            format!(
                "{} unread, {} awaiting ack",
                s["inbox"]["unread"], s["inbox"]["unacked"]
            ),
        ),
    ]);
    let mut tasks = Table::new(&["TASK", "MISSION", "KEY", "STATUS", "TITLE"]);
    for t in s["tasks"].as_array().into_iter().flatten() {
        tasks.row(vec![
            str_of(&t["task_id"]),
            str_of(&t["mission_id"]),
            str_of(&t["task_key"]),
            str_of(&t["status"]),
            truncate(&str_of(&t["title"]), 40),
        ]);
    }
    text.push_str(&format!(
        "\ntasks held: {}\n",
        s["tasks"].as_array().map_or(0, Vec::len)
    ));
    if !tasks.is_empty() {
        text.push_str(&tasks.render());
    }
    let mut owed = Table::new(&["MESSAGE", "FROM", "CATEGORY", "SUBJECT"]);
    for e in s["unacked"].as_array().into_iter().flatten() {
        owed.row(vec![
            str_of(&e["message"]["id"]),
            str_of(&e["message"]["from"]),
            str_of(&e["message"]["category"]),
            truncate(&str_of(&e["message"]["subject"]), 40),
        ]);
    }
    if !owed.is_empty() {
        text.push_str("\nawaiting ack:\n");
        text.push_str(&owed.render());
    }
    let mut held = Table::new(&["RESERVATION", "SCOPE", "EXPIRES"]);
    for r in s["reservations"].as_array().into_iter().flatten() {
        held.row(vec![
            str_of(&r["id"]),
            str_of(&r["scope"]),
            str_of(&r["expires_at"]),
        ]);
    }
    text.push_str(&format!(
        "\nreservations: {}\n",
        s["reservations"].as_array().map_or(0, Vec::len)
    ));
    if !held.is_empty() {
        text.push_str(&held.render());
    }
    out(&text)?;
    Ok(ExitCode::SUCCESS)
}
