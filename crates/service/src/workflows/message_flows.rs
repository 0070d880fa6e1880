//! Message flows between pools as ACL messages between the lanes' agents.
//!
//! When a node sends a message (a send task done, a message throw or end
//! event), each message flow drawn from it becomes an `INFORM` to every
//! agent of the receiving side's role: the lane of the node the flow ends
//! on, else the pool's (its `coordinator:role`, else its name). It is sent
//! from the agent that did the send task, else from the workflow itself,
//! in the instance's own transaction, so it is sent exactly when the
//! instance moves. The BPMN message still goes to the outbox and
//! correlates with waiting instances as before; the ACL message is what
//! tells the agents of the receiving lane (or a black-box pool such as a
//! customer) that it came.

use serde_json::{Map, Value, json};
use sqlx::PgConnection;
use uuid::Uuid;

use coordinator_bpmn::Definitions;

use super::WorkflowError;
use crate::{
    coordination::messages::{self, MessageError, Outgoing, Performative, Recipient},
    store::workflow_instances::{self as store, InstanceRow},
};

/// Largest payload carried in the ACL message's content; a larger one is
/// left out (the receiving instance's variables hold it).
const MAX_PAYLOAD: usize = 48 * 1024;

/// What was sent.
#[derive(Debug, Clone, Copy)]
pub struct Sending<'a> {
    /// The sending token.
    pub token: u64,
    /// The sending node.
    pub from_node: &'a str,
    /// The message's name.
    pub message: &'a str,
    /// Its content.
    pub payload: &'a Value,
}

/// Sends one ACL message along each message flow leaving the sending node;
/// a flow whose side has no role or no agent is skipped (and logged).
pub async fn send_along_flows(
    tx: &mut PgConnection,
    defs: &Definitions,
    row: &InstanceRow,
    work: &Map<String, Value>,
    s: Sending<'_>,
) -> Result<usize, WorkflowError> {
    let routes = defs.message_routes(s.from_node);
    if routes.is_empty() {
        return Ok(0);
    }
    // A send task's message comes from the agent that did it.
    let mission = work
        .get(&s.token.to_string())
        .and_then(|w| w["mission_id"].as_str())
        .and_then(|m| m.parse::<Uuid>().ok());
    let (task_id, from_agent) = match mission {
        Some(m) => store::mission_task_agent(tx, m)
            .await?
            .map_or((None, None), |(t, a)| (Some(t), a)),
        None => (None, None),
    };
    let payload_len = serde_json::to_vec(s.payload).map_or(usize::MAX, |v| v.len());
    let payload = if payload_len <= MAX_PAYLOAD {
        s.payload.clone()
    } else {
        json!({ "omitted": format!("{payload_len} bytes; read the receiving instance's variables") })
    };
    let mut sent = 0;
    for route in routes {
        let Some(role) = route.to_role.clone() else {
            tracing::info!(flow = %route.flow.id, "message flow to a side with no role or name: no ACL message");
            continue;
        };
        let subject = route
            .flow
            .name
            .as_deref()
            .map(coordinator_bpmn::one_line)
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| s.message.to_owned());
        let out = Outgoing {
            id: None,
            from_agent: from_agent.clone(),
            sender: from_agent
                .as_ref()
                .map_or_else(|| format!("workflow:{}", row.id), |a| format!("agent:{a}")),
            to: Recipient::Role(role.clone()),
            performative: Performative::Inform,
            category: None,
            // One thread per instance: every message its flows carry.
            conversation_id: Some(row.id),
            reply_to: None,
            mission_id: mission,
            task_id,
            subject: subject.chars().take(200).collect(),
            content: json!({
                "message": s.message,
                "payload": payload,
                "correlation_key": row.business_key,
                "workflow": {
                    "instance_id": row.id,
                    "workflow_id": row.workflow_id,
                    "version": row.version,
                    "message_flow": route.flow.id,
                    "from_node": s.from_node,
                    "from_role": defs.role_of_node(s.from_node),
                    "to_node": route.to_node,
                    "to_pool": route.to_pool.map(|p| p.id.as_str()),
                    "to_role": role,
                }
            }),
        };
        match messages::send(&mut *tx, row.workspace_id, out).await {
            Ok(_) => sent += 1,
            Err(MessageError::Database(e)) => return Err(e.into()),
            Err(e) => {
                tracing::info!(flow = %route.flow.id, role = %role, error = %e, "message flow not sent as an ACL message");
            }
        }
    }
    Ok(sent)
}
