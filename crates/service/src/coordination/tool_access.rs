//! Whether an agent may make a tool call, judged when it calls (not only
//! when work is assigned): the organisation spec's grants and norms on
//! tools for the agent's role, a norm that now prohibits its role from the
//! task it works on, and the task's tool-use policy (`inputs.tool_policy`),
//! whose `allowed_tools` and `auto_approve` apply to agent tools that change
//! something just as they apply to a worker's own tools. A refusal is a 403
//! naming the role and the norm, with a `tool.refused` event; a call the
//! policy sends to a person answers "pending approval" with the approval's
//! id, and the same call made again once it is approved goes ahead.

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use sqlx::PgPool;
use uuid::Uuid;

use coordinator_core::organisation::{Deontic, ToolAccess};
use coordinator_protocol::agent_events::ToolRefused;

use super::tool_policy::{self, ApprovalRequest, ApprovalStatus, ToolApprovalError};
use crate::{
    auth::Principal,
    store::{
        agents,
        events::{self, WorkspaceEvent},
        organisation, tasks,
    },
};

/// One tool call, as the gate sees it.
#[derive(Debug, Clone, Copy)]
pub struct Call<'a> {
    /// The tool.
    pub tool: &'a str,
    /// Its catalogue group.
    pub group: &'a str,
    /// Whether it changes nothing.
    pub read_only: bool,
    /// Its (checked) arguments.
    pub arguments: &'a Map<String, Value>,
}

/// Why a call may not go ahead.
#[derive(Debug, thiserror::Error)]
pub enum AccessError {
    /// The spec or the task's policy refuses it (403); the reason names the
    /// role and the norm, or the policy's reasons.
    #[error("{0}")]
    Refused(String),
    /// Asking the task's policy failed (e.g. the attempt ended meanwhile).
    #[error(transparent)]
    Approval(#[from] ToolApprovalError),
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
}

/// What the gate decided when it did not refuse.
#[derive(Debug)]
pub enum Gate {
    /// Go ahead.
    Proceed,
    /// A person must approve this call first: the answer to give the agent.
    Pending(Value),
}

/// Judges `call` by the agent `who`; `Err` is the refusal to return.
pub async fn check(
    pool: &PgPool,
    approval_timeout_secs: u64,
    who: &Principal,
    call: Call<'_>,
) -> Result<Gate, AccessError> {
    let Some(agent_id) = who.agent_id.as_deref() else {
        return Ok(Gate::Proceed);
    };
    let mut conn = pool.acquire().await?;
    let spec = organisation::get(&mut conn, who.workspace_id).await?;
    let task = match who.attempt {
        Some(scope) => Some(tasks::get(&mut conn, scope.task_id).await?),
        None => None,
    };
    drop(conn);
    if let Some(spec) = spec.map(|s| s.spec) {
        let role = agents::get(pool, who.workspace_id, agent_id)
            .await?
            .map(|a| a.role)
            .unwrap_or_default();
        let mut refusal = match spec.tool_access(&role, call.tool, call.group) {
            ToolAccess::Allowed => None,
            ToolAccess::Refused { reason, norm } => Some((reason, norm)),
        };
        if refusal.is_none()
            && !call.read_only
            && let Some(t) = &task
            && spec.verdict(&role, &t.task_type, &t.task_key) == Deontic::Prohibited
        {
            let goals = spec.goals_for(&t.task_type, &t.task_key);
            let norm = spec
                .norms_for(&role, &goals)
                .into_iter()
                .find(|n| n.modality == coordinator_core::organisation::Modality::Prohibition)
                .map(|n| n.id.clone());
            let reason = match &norm {
                Some(n) => format!(
                    "norm '{n}' now prohibits role '{role}' from task '{}'; it may only read until the task moves on",
                    t.task_key
                ),
                None => format!(
                    "the organisation spec now prohibits role '{role}' from task '{}' (closed world); it may only read",
                    t.task_key
                ),
            };
            refusal = Some((reason, norm));
        }
        if let Some((reason, norm)) = refusal {
            return Err(refuse(pool, who, agent_id, &role, call.tool, reason, norm).await);
        }
    }
    let (Some(scope), Some(task)) = (who.attempt, task) else {
        return Ok(Gate::Proceed);
    };
    if call.read_only || task.inputs.get("tool_policy").is_none() {
        return Ok(Gate::Proceed);
    }
    let arguments = Value::Object(call.arguments.clone());
    let req = ApprovalRequest {
        id: Some(call_id(scope.attempt_id, call.tool, &arguments)),
        tool: call.tool.to_owned(),
        arguments: Some(arguments),
        paths: Vec::new(),
        diff_lines: 0,
        tokens: 0,
        files_changed: 0,
    };
    let (view, _) =
        tool_policy::request_approval(pool, approval_timeout_secs, scope.attempt_id, None, req)
            .await?;
    match view.status {
        ApprovalStatus::Approved => Ok(Gate::Proceed),
        ApprovalStatus::TimedOut if view.granted == Some(true) => Ok(Gate::Proceed),
        ApprovalStatus::Pending => Ok(Gate::Pending(json!({
            "status": "pending_approval",
            "approval_id": view.id,
            "tool": call.tool,
            "next_step": "A person must approve this call. Make the same call again (same arguments) once it is approved; until then carry on with other work.",
        }))),
        _ => Err(AccessError::Refused(format!(
            "the task's tool policy refuses '{}': {}",
            call.tool,
            view.rationale.unwrap_or_else(|| view.reasons.join("; "))
        ))),
    }
}

/// The approval id of one exact call of one attempt: the same call asked
/// again finds its approval instead of opening another.
fn call_id(attempt: Uuid, tool: &str, arguments: &Value) -> Uuid {
    let digest = Sha256::new()
        .chain_update(attempt.as_bytes())
        .chain_update(tool.as_bytes())
        .chain_update(arguments.to_string().as_bytes())
        .finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

/// Records the refusal (its own transaction: the call changes nothing else)
/// and returns the 403.
async fn refuse(
    pool: &PgPool,
    who: &Principal,
    agent_id: &str,
    role: &str,
    tool: &str,
    reason: String,
    norm: Option<String>,
) -> AccessError {
    let payload = ToolRefused {
        tool: tool.to_owned(),
        agent_id: agent_id.to_owned(),
        role: role.to_owned(),
        reason: reason.clone(),
        norm,
    };
    let actor = who.actor();
    let mission = who.attempt.map(|a| a.mission_id);
    let task = who.attempt.map(|a| a.task_id);
    let recorded = async {
        let mut conn = pool.acquire().await?;
        events::record(
            &mut conn,
            who.workspace_id,
            WorkspaceEvent::new(mission, task, &actor, &payload),
        )
        .await
    }
    .await;
    if let Err(e) = recorded {
        tracing::warn!(error = %e, tool, agent_id, "could not record a refused tool call");
    }
    AccessError::Refused(reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_has_one_approval_id() {
        let a = Uuid::now_v7();
        let args = json!({"key": "k", "value": 1});
        assert_eq!(call_id(a, "t", &args), call_id(a, "t", &args));
        assert_ne!(call_id(a, "t", &args), call_id(a, "u", &args));
        assert_ne!(
            call_id(a, "t", &args),
            call_id(a, "t", &json!({"key": "k", "value": 2}))
        );
        assert_ne!(call_id(a, "t", &args), call_id(Uuid::now_v7(), "t", &args));
    }
}
