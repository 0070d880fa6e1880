//! The request a worker gets for a claimed attempt (pure: built from what
//! the claim read).

use std::collections::BTreeMap;

use serde_json::json;
use time::OffsetDateTime;
use uuid::Uuid;

use super::{EngineConfig, Locked};
use crate::{
    coordination::{
        organisation::{OrgContext, OrgSpec},
        tool_policy::ToolPolicy,
    },
    store::{agents, tasks},
    worker::protocol::{Callback, DispatchRequest, TaskPayload, UpstreamOutput},
};

/// The request a worker gets for one claimed attempt.
#[allow(clippy::too_many_arguments)]
pub(super) fn dispatch_request(
    cfg: &EngineConfig,
    locked: &Locked,
    task: &tasks::TaskRow,
    agent: &agents::Candidate,
    attempt_id: Uuid,
    token: String,
    upstream: Vec<UpstreamOutput>,
    blackboard: BTreeMap<String, coordinator_protocol::BlackboardValue>,
    deadline: OffsetDateTime,
) -> DispatchRequest {
    let base = cfg.public_url.trim_end_matches('/');
    DispatchRequest {
        attempt_id,
        attempt_number: task.attempt_count + 1,
        task_id: task.id,
        mission_id: task.run_id,
        agent_id: agent.profile.agent_id.clone(),
        goal: locked
            .runs
            .get(&task.run_id)
            .map(|r| r.goal.clone())
            .unwrap_or_default(),
        task: if task.verify_pending {
            verification_payload(task, &cfg.verifier_skill)
        } else {
            TaskPayload {
                key: task.task_key.clone(),
                title: task.title.clone(),
                task_type: task.task_type.clone(),
                description: task.description.clone(),
                required_skills: task.required_skills.clone(),
                required_tools: task.required_tools.clone(),
                success_criteria: task.success_criteria.clone(),
                inputs: task.inputs.clone(),
                // A malformed policy is not sent; the coordinator
                // denies every request of such a task.
                tool_policy: ToolPolicy::of_inputs(&task.inputs).ok().flatten(),
            }
        },
        upstream,
        organisation: locked
            .coordination
            .org
            .get(&task.workspace_id)
            .map(|spec| org_context(spec, &agent.profile.role, task)),
        feedback: task.feedback.clone(),
        blackboard,
        deadline,
        callback: Callback {
            heartbeat_url: format!("{base}/v1/attempts/{attempt_id}/heartbeat"),
            result_url: format!("{base}/v1/attempts/{attempt_id}/result"),
            tool_approvals_url: Some(format!("{base}/v1/attempts/{attempt_id}/tool-approvals")),
            token,
            tools_url: Some(format!("{base}/v1/tools")),
            mcp_url: Some(format!("{base}/mcp")),
            traceparent: None,
        },
    }
}

/// The organisation context a worker gets with a task.
fn org_context(spec: &OrgSpec, role: &str, task: &tasks::TaskRow) -> OrgContext {
    let task_type = if task.verify_pending {
        "verification"
    } else {
        &task.task_type
    };
    spec.context_for(role, task_type, &task.task_key)
}

/// What a verifier agent is asked: judge the candidate result against the
/// criteria, answer `{"passed": bool, "reasons": [...]}`.
fn verification_payload(task: &tasks::TaskRow, skill: &str) -> TaskPayload {
    let criteria: Vec<String> = task
        .criteria()
        .iter()
        .filter(|c| c.must_pass && c.check.is_none())
        .map(|c| format!("- {}", c.description))
        .collect();
    TaskPayload {
        key: task.task_key.clone(),
        title: format!("Verify: {}", task.title),
        task_type: "verification".into(),
        description: format!(
            "Judge whether the result in inputs.candidate_output meets every criterion below. \
             Answer only with JSON: {{\"passed\": true or false, \"reasons\": [\"...\"]}}, \
             giving a reason for every unmet criterion.\n\nThe task was: {}\n{}\n\nCriteria:\n{}",
            task.title,
            task.description,
            criteria.join("\n")
        ),
        required_skills: vec![skill.to_owned()],
        required_tools: Vec::new(),
        success_criteria: task.success_criteria.clone(),
        inputs: json!({ "candidate_output": task.candidate_output, "task_inputs": task.inputs }),
        tool_policy: None,
    }
}
