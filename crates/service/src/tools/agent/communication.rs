//! Communication (seed 000 §20.2): ACL messages whose performatives have
//! effects, the caller's inbox, requests and conversations, and the
//! contract net. The caller is always the sender, proposer or initiator.

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::{acting_as, answer, body, me, object, required_uuid, tool, uuid_arg};
use crate::{
    auth::Principal,
    coordination::{
        contract_net::{self as cnet, OpenTender, ProposalBody},
        messages::{self, InboxAction, ItemStatus, Performative, SendMessage},
        performatives,
    },
    error::ApiError,
    store::messages::InboxFilter,
    tools::{Group, Tool, ToolContext},
};

fn uuid(description: &str) -> Value {
    json!({ "type": "string", "format": "uuid", "description": description })
}

fn performatives_enum() -> Value {
    let names: Vec<&str> = Performative::ALL.iter().map(|p| p.as_str()).collect();
    let mut all: Vec<Value> = names.into_iter().map(Value::from).collect();
    all.extend([json!("ACCEPT_PROPOSAL"), json!("REJECT_PROPOSAL")]);
    Value::Array(all)
}

/// The tools of this group.
pub(super) fn tools() -> Vec<Tool> {
    vec![
        tool(
            Group::Communication,
            "agent_message",
            "Send an ACL message",
            "Send a message to another agent (`to`: an agent id, `role:<role>` or `all`). The \
             performative has effects. INFORM with content {\"subject\", \"content\" (or \
             \"value\"), \"certainty\"?, \"category\"?} updates each recipient's belief (agreeing \
             content never lowers its certainty). REQUEST to one agent opens a request it must \
             AGREE to or REFUSE (reply_to the request); content may carry {\"task\": {title, \
             task_type, description, required_skills}} or {description, required_skills}; when \
             the request is linked to a task, AGREE adds that work to the mission as a child of \
             the requester's task, pinned to the agreeing agent. QUERY to one agent expects an \
             INFORM or FAILURE reply. CANCEL (reply_to your open request or query) withdraws it. \
             FAILURE (reply_to) says an agreed request or a query could not be done. PROPOSE, \
             ACCEPT_PROPOSAL and REJECT_PROPOSAL are the contract net's (use the contract_net_* \
             tools). With a task's token the message is linked to your task unless you name \
             mission_id or task_id.",
            object(
                json!({
                    "to": { "type": "string", "minLength": 1, "description": "An agent id, role:<role> or all." },
                    "performative": { "type": "string", "enum": performatives_enum(), "description": "The speech act (default INFORM)." },
                    "content": { "type": "object", "description": "The payload (a JSON object; see the description for what each performative reads)." },
                    "reply_to": uuid("The message this answers (AGREE, REFUSE, CANCEL, FAILURE and answering INFORMs name the REQUEST or QUERY)."),
                    "conversation_id": uuid("The conversation (default: that of reply_to, else your task's)."),
                    "subject": { "type": "string", "maxLength": 200, "description": "One line (a REQUEST's subject is the task's title)." },
                    "mission_id": uuid("Linked mission (default: your task's)."),
                    "task_id": uuid("Linked task (default: your task)."),
                    "category": { "type": "string", "enum": ["HANDOFF", "BLOCKED", "DECISION", "INFO"], "description": "RFC-001 category (needs a mission or task)." },
                    "from": { "type": "string", "description": "You (optional; naming another agent is refused)." },
                }),
                &["to", "performative", "content"],
            ),
            false,
            agent_message,
        ),
        tool(
            Group::Communication,
            "inbox",
            "Read my inbox",
            "List the messages sent to you, oldest first, with counts, and the requests and \
             queries waiting for your answer (reply with AGREE / REFUSE, or INFORM / FAILURE).",
            object(
                json!({
                    "unread": { "type": "boolean", "description": "Only messages not read yet." },
                    "unacked": { "type": "boolean", "description": "Only messages that need an ack and have none." },
                    "conversation_id": uuid("Only this conversation."),
                    "limit": { "type": "integer", "minimum": 1, "maximum": 500, "description": "Most messages (default 100)." },
                }),
                &[],
            ),
            true,
            inbox,
        ),
        tool(
            Group::Communication,
            "message_read",
            "Mark a message read",
            "Mark a message of your inbox read (again changes nothing).",
            object(
                json!({ "message_id": uuid("The message.") }),
                &["message_id"],
            ),
            false,
            message_read,
        ),
        tool(
            Group::Communication,
            "message_ack",
            "Acknowledge a message",
            "Acknowledge a message of your inbox (HANDOFF and BLOCKED need it). Acking twice is \
             refused.",
            object(
                json!({ "message_id": uuid("The message.") }),
                &["message_id"],
            ),
            false,
            message_ack,
        ),
        tool(
            Group::Communication,
            "conversation",
            "Read a conversation",
            "Read every message of a conversation as a reply tree.",
            object(
                json!({ "conversation_id": uuid("The conversation.") }),
                &["conversation_id"],
            ),
            true,
            conversation,
        ),
        tool(
            Group::Communication,
            "requests",
            "List my requests",
            "List the requests and queries you were asked or asked, newest first, with their \
             status (open, agreed, refused, cancelled, done, failed, answered).",
            object(
                json!({
                    "status": { "type": "string", "enum": ["open", "agreed", "refused", "cancelled", "done", "failed", "answered"], "description": "Only this status." },
                    "limit": { "type": "integer", "minimum": 1, "maximum": 500, "description": "Most (default 100)." },
                }),
                &[],
            ),
            true,
            requests,
        ),
        contract_net_initiate_tool(),
        contract_net_propose_tool(),
        contract_net_award_tool(),
    ]
}

fn contract_net_initiate_tool() -> Tool {
    tool(
        Group::Communication,
        "contract_net_initiate",
        "Call for proposals",
        "Open a tender (call for proposals) for a pending or queued task of the mission you \
         work in (needs your task's token): every online agent able to do it gets a PROPOSE \
         notice and may answer with contract_net_propose before the deadline. The seed's \
         `task` and `criteria` map to an existing task (task_id; add it first with \
         add_subtasks if needed) and the service's fixed award weights. Returns the tender, \
         whose id is the cfp_id.",
        object(
            json!({
                "task_id": uuid("The task to tender (pending or queued, of your mission)."),
                "window_ms": { "type": "integer", "minimum": 100, "maximum": 86_400_000, "description": "Proposal window in ms (default: the mission's)." },
                "initiator": { "type": "string", "description": "You (optional; naming another agent is refused)." },
            }),
            &["task_id"],
        ),
        false,
        contract_net_initiate,
    )
}

fn contract_net_propose_tool() -> Tool {
    tool(
        Group::Communication,
        "contract_net_propose",
        "Propose for a tender",
        "Answer a call for proposals you received (its cfp_id is the tender id in the PROPOSE \
         message). capabilities_match: {matched_skills, additional_skills, match_percentage \
         (0–1)}; estimated_effort: hours, or {duration_hours, cost_estimate}; confidence 0–1; \
         conditions you attach. One proposal per agent; late proposals are refused.",
        object(
            json!({
                "cfp_id": uuid("The tender."),
                "proposer": { "type": "string", "description": "You (optional; naming another agent is refused)." },
                "capabilities_match": { "type": "object", "description": "{matched_skills: [...], additional_skills: [...], match_percentage: 0–1}." },
                "estimated_effort": { "description": "Hours (a number), or {duration_hours, cost_estimate}." },
                "estimated_cost": { "type": "number", "minimum": 0, "description": "Cost estimate (or estimated_effort.cost_estimate)." },
                "confidence": { "type": "number", "minimum": 0, "maximum": 1, "description": "How sure you are." },
                "conditions": { "type": "array", "items": { "type": "string" }, "description": "Conditions (at most 20)." },
            }),
            &["cfp_id", "estimated_effort", "confidence"],
        ),
        false,
        contract_net_propose,
    )
}

fn contract_net_award_tool() -> Tool {
    tool(
        Group::Communication,
        "contract_net_award",
        "Award a tender",
        "Award a tender you initiated now: the best-scored proposal wins (capability 0.35, \
         effort 0.25, confidence 0.25, conditions 0.15), the task is pinned to the winner, \
         and ACCEPT / REJECT messages go to the proposers. winning_proposal_id, if given, must \
         be the best-scored proposal (the award follows the scores). The task itself is the \
         work package.",
        object(
            json!({
                "cfp_id": uuid("The tender."),
                "winning_proposal_id": uuid("The proposal you expect to win (checked)."),
            }),
            &["cfp_id"],
        ),
        false,
        contract_net_award,
    )
}

fn agent_message<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let own = acting_as(who, &mut args, "from")?;
        let mut req: SendMessage = body(args)?;
        req.from = Some(own);
        let out = messages::compose(who, req)?;
        let spoken = performatives::speak(cx.pool, cx.planning, who, out).await?;
        let next_step = match &spoken.effects.request {
            Some(r) if r.status == "open" && r.kind == "request" => {
                "The recipient must AGREE or REFUSE; requests shows where it is."
            }
            Some(r) if r.status == "open" => "An INFORM or FAILURE reply is expected.",
            Some(_) => "The request is settled; requests shows it.",
            None => "Delivered; replies arrive in your inbox.",
        };
        Ok(json!({
            "message_id": spoken.message.id,
            "conversation_id": spoken.message.conversation_id,
            "performative": spoken.message.performative,
            "recipients": spoken.recipients,
            "effects": spoken.effects,
            "replay": spoken.replay,
            "next_step": next_step,
        }))
    })
}

fn inbox<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let agent = me(who)?.to_owned();
        let flag = |args: &Map<String, Value>, f: &str| {
            args.get(f).and_then(Value::as_bool).unwrap_or(false)
        };
        let filter = InboxFilter {
            state: flag(&args, "unread").then(|| "unread".to_owned()),
            unacked: flag(&args, "unacked"),
            conversation_id: uuid_arg(&mut args, "conversation_id")?,
        };
        let limit = args.get("limit").and_then(Value::as_i64).unwrap_or(100);
        let (counts, entries) = messages::inbox(cx.pool, who, &agent, &filter, limit).await?;
        let waiting: Vec<_> =
            performatives::requests(cx.pool, who, &agent, Some(ItemStatus::Open), 100)
                .await?
                .into_iter()
                .filter(|r| r.recipient == agent)
                .collect();
        Ok(json!({
            "agent_id": agent,
            "counts": counts,
            "messages": entries,
            "awaiting_your_answer": waiting,
        }))
    })
}

fn mark<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
    action: InboxAction,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let agent = me(who)?.to_owned();
        let id = required_uuid(&mut args, "message_id")?;
        let entry = messages::mark_entry(cx.pool, who, &agent, id, action).await?;
        answer(&entry)
    })
}

fn message_read<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    mark(cx, who, args, InboxAction::Read)
}

fn message_ack<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    mark(cx, who, args, InboxAction::Ack)
}

fn conversation<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let id = required_uuid(&mut args, "conversation_id")?;
        let (count, threads) = messages::conversation(cx.pool, who, id)
            .await?
            .ok_or_else(|| ApiError::NotFound(format!("no conversation {id}")))?;
        Ok(json!({ "conversation_id": id, "message_count": count, "threads": threads }))
    })
}

fn requests<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let agent = me(who)?.to_owned();
        let status = args
            .get("status")
            .and_then(Value::as_str)
            .map(str::parse::<ItemStatus>)
            .transpose()
            .map_err(|e| ApiError::invalid("status", e.to_string()))?;
        let limit = args.get("limit").and_then(Value::as_i64).unwrap_or(100);
        let list = performatives::requests(cx.pool, who, &agent, status, limit).await?;
        Ok(json!({ "agent_id": agent, "count": list.len(), "requests": list }))
    })
}

fn contract_net_initiate<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        acting_as(who, &mut args, "initiator")?;
        let req: OpenTender = body(args)?;
        let t = cnet::open_for_own_mission(cx.pool, who, req).await?;
        let mut v = answer(&t)?;
        v["cfp_id"] = json!(t.id);
        Ok(v)
    })
}

fn contract_net_propose<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let own = acting_as(who, &mut args, "proposer")?;
        let tender = required_uuid(&mut args, "cfp_id")?;
        let p = proposal(own, &args)?;
        let v = cnet::propose(cx.pool, who, tender, p).await?;
        let mut out = answer(&v)?;
        out["proposal_id"] = json!(v.id);
        Ok(out)
    })
}

/// The seed's proposal arguments as the REST proposal body.
fn proposal(agent: String, args: &Map<String, Value>) -> Result<ProposalBody, ApiError> {
    let caps = args.get("capabilities_match").cloned().unwrap_or(json!({}));
    let skills = |f: &str| -> Result<Vec<String>, ApiError> {
        match caps.get(f) {
            None => Ok(Vec::new()),
            Some(v) => serde_json::from_value(v.clone()).map_err(|_| {
                ApiError::invalid(
                    &format!("capabilities_match.{f}"),
                    format!("capabilities_match.{f} must be a list of strings"),
                )
            }),
        }
    };
    let effort = args.get("estimated_effort").cloned().unwrap_or(Value::Null);
    let (hours, cost_in_effort) = match &effort {
        Value::Number(n) => (n.as_f64(), None),
        Value::Object(o) => (
            o.get("duration_hours").and_then(Value::as_f64),
            o.get("cost_estimate").and_then(Value::as_f64),
        ),
        _ => (None, None),
    };
    let hours = hours.ok_or_else(|| {
        ApiError::invalid(
            "estimated_effort",
            "estimated_effort must be hours (a number) or {duration_hours, cost_estimate}",
        )
    })?;
    let conditions = match args.get("conditions") {
        None => Vec::new(),
        Some(v) => serde_json::from_value(v.clone())
            .map_err(|_| ApiError::invalid("conditions", "conditions must be a list of strings"))?,
    };
    Ok(ProposalBody {
        agent_id: Some(agent),
        capability_match: caps.get("match_percentage").and_then(Value::as_f64),
        matched_skills: skills("matched_skills")?,
        additional_skills: skills("additional_skills")?,
        estimated_effort: hours,
        estimated_cost: args
            .get("estimated_cost")
            .and_then(Value::as_f64)
            .or(cost_in_effort)
            .unwrap_or(0.0),
        confidence: args
            .get("confidence")
            .and_then(Value::as_f64)
            .unwrap_or(0.0),
        conditions,
    })
}

fn contract_net_award<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let tender = required_uuid(&mut args, "cfp_id")?;
        let expected = uuid_arg(&mut args, "winning_proposal_id")?;
        let t = cnet::award_own(cx.pool, who, tender, expected).await?;
        answer(&t)
    })
}
