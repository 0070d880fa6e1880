//! Governance tools (seed 000 §20.2's `decision_request` and §20.4): agents
//! check an action against the stakeholder profile and raise decisions
//! (from anywhere, or as a blocker from inside their task); the stakeholder
//! sets the profile, reviews the queue and resolves decisions with its own
//! token. The seed's `business_id` arguments are accepted and ignored: there
//! are no businesses, the workspace is the unit of governance.

use futures::future::BoxFuture;
use serde_json::{Map, Value, json};

use super::{
    STAKEHOLDERS, acting_as, answer, attempt, body, object, required_uuid, tool, tool_for,
};
use crate::{
    auth::{Forbidden, Principal},
    coordination::governance::{
        self as gov, BlockerRequest, CheckRequest, DecisionRequest, DecisionView, ProfileRequest,
        ResolveRequest,
    },
    error::ApiError,
    tools::{Group, Tool, ToolContext},
};

fn business_arg() -> Value {
    json!({ "type": "string", "description": "Ignored: the workspace is the unit of governance (there are no businesses)." })
}

fn options_arg(min: u64) -> Value {
    json!({
        "type": "array",
        "minItems": min,
        "maxItems": 10,
        "description": "The choices, with distinct labels.",
        "items": {
            "type": "object",
            "properties": {
                "label": { "type": "string", "description": "Short name." },
                "description": { "type": "string", "description": "What it means." },
                "risk_level": { "type": "string", "enum": ["low", "medium", "high"] },
            },
            "required": ["label"],
            "additionalProperties": false,
        },
    })
}

fn impact_arg() -> Value {
    json!({ "type": "object", "description": "Financial, strategic and risk notes, e.g. {\"financial\": \"25% of the quarter's budget\"}." })
}

/// The tools of this group.
pub(super) fn tools() -> Vec<Tool> {
    vec![
        decision_request_tool(),
        governance_check_tool(),
        raise_blocker_tool(),
        tool_for(
            STAKEHOLDERS,
            Group::Stakeholder,
            "stakeholder_profile",
            "Set the stakeholder profile",
            "Set the workspace's governance profile: your decision style, risk tolerance, \
             approval thresholds ({budget: {amount, currency}, hiring: {headcount}, strategy: \
             always|never}) and the categories agents may act on without you. It replaces the \
             previous profile (pass version to refuse if someone changed it meanwhile).",
            object(
                json!({
                    "stakeholder_id": { "type": "string", "minLength": 1, "maxLength": 128, "description": "Who you are (default: your token)." },
                    "business_id": business_arg(),
                    "decision_style": { "type": "string", "enum": ["hands-on", "strategic-only", "exception-based"] },
                    "risk_tolerance": { "type": "string", "enum": ["conservative", "moderate", "aggressive"] },
                    "approval_thresholds": { "type": "object", "description": "{budget: {amount, currency}, hiring: {headcount}, strategy: always|never}." },
                    "auto_approve_categories": { "type": "array", "items": { "type": "string" }, "description": "Categories that need no review (thresholds still apply)." },
                    "communication_preferences": { "type": "object", "description": "Free-form: frequency, channels…" },
                    "version": { "type": "integer", "minimum": 1, "description": "The profile version you read." },
                }),
                &["decision_style", "risk_tolerance"],
            ),
            false,
            stakeholder_profile,
        ),
        tool_for(
            STAKEHOLDERS,
            Group::Stakeholder,
            "decision_review",
            "Review pending decisions",
            "The decisions waiting for you (or of another status), newest first, each with its \
             age, its impact analysis, its options and the recommended one with its risk level, \
             and the governance context: the relevant threshold, your risk tolerance, whether \
             the current profile would still require approval, and a recommended action; with \
             the workspace's totals per status. Blockers (topic blocker) hold an agent's task \
             until you resolve them.",
            object(
                json!({
                    "business_id": business_arg(),
                    "stakeholder_id": { "type": "string", "description": "Ignored: the workspace has one profile." },
                    "status": { "type": "string", "enum": ["pending", "deferred", "approved", "rejected", "modified"], "description": "Default pending." },
                    "limit": { "type": "integer", "minimum": 1, "maximum": 500, "description": "At most this many (default 50)." },
                }),
                &[],
            ),
            true,
            decision_review,
        ),
        decision_resolve_tool(),
    ]
}

fn decision_request_tool() -> Tool {
    tool(
        Group::Communication,
        "decision_request",
        "Ask a stakeholder to decide",
        "Put a decision in the stakeholder's queue (call governance_check first: it says \
         whether one is needed). Give the options and the one you recommend; you get an INFORM \
         message with the outcome. This does not stop your task: if you cannot go on without \
         the answer, use raise_blocker instead.",
        object(
            json!({
                "agent_id": { "type": "string", "description": "You (default); naming another agent is refused." },
                "business_id": business_arg(),
                "description": { "type": "string", "minLength": 1, "maxLength": 2000, "description": "What is to be decided." },
                "impact_analysis": impact_arg(),
                "options": options_arg(0),
                "recommended_option": { "type": "string", "description": "The label of the option you recommend." },
                "action_type": { "type": "string", "description": "budget, hiring, strategy, operational (default) or another category." },
                "estimated_impact": { "type": "object", "description": "{estimated_cost, headcount}." },
                "exceptional": { "type": "boolean", "description": "Flag it as exceptional." },
                "mission_id": { "type": "string", "format": "uuid", "description": "The mission it concerns (default: your current task's)." },
            }),
            &["description"],
        ),
        false,
        decision_request,
    )
}

fn decision_request<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let me = acting_as(who, &mut args, "agent_id")?;
        args.remove("business_id");
        args.insert("agent_id".into(), json!(me));
        if let (false, Some(scope)) = (args.contains_key("mission_id"), who.attempt) {
            args.insert("mission_id".into(), json!(scope.mission_id));
        }
        let req: DecisionRequest = body(args)?;
        let d = gov::request_decision(cx.pool, who, req).await?;
        decided(
            &d,
            "The decision is in the stakeholder's queue; you get an INFORM message when it is resolved.",
        )
    })
}

fn governance_check_tool() -> Tool {
    tool(
        Group::Stakeholder,
        "governance_check",
        "Check whether an action needs approval",
        "Check an action against the stakeholder's profile before you take it: answers \
         requires_approval, the reason and the relevant threshold. Writes nothing; if approval \
         is required, call decision_request (or raise_blocker from inside a task).",
        object(
            json!({
                "business_id": business_arg(),
                "action_type": { "type": "string", "minLength": 1, "maxLength": 64, "description": "budget, hiring, strategy, operational or another category." },
                "action_details": { "type": "object", "description": "What you intend to do (not judged)." },
                "estimated_impact": { "type": "object", "description": "{estimated_cost, headcount}." },
                "exceptional": { "type": "boolean", "description": "You consider it exceptional." },
            }),
            &["action_type"],
        ),
        true,
        governance_check,
    )
}

fn governance_check<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        args.remove("business_id");
        let req: CheckRequest = body(args)?;
        answer(&gov::check_action(cx.pool, who, req).await?)
    })
}

fn raise_blocker_tool() -> Tool {
    tool(
        Group::Task,
        "raise_blocker",
        "Ask a stakeholder to unblock my task",
        "You cannot go on with your task without a person's choice: describe the problem and \
         give the options (with the one you recommend). Your attempt ends at once without \
         counting as a failure (the answer says attempt_ended: true): stop working and do not report on it. The task waits until a \
         stakeholder resolves the decision, then comes back (to you if you are free) with the \
         outcome and the chosen option as its feedback.",
        object(
            json!({
                "description": { "type": "string", "minLength": 1, "maxLength": 2000, "description": "What blocks you and needs deciding." },
                "options": options_arg(1),
                "recommended_option": { "type": "string", "description": "The label of the option you recommend." },
                "impact_analysis": impact_arg(),
            }),
            &["description", "options"],
        ),
        false,
        raise_blocker,
    )
}

fn raise_blocker<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let scope = attempt(who)?;
        let req: BlockerRequest = body(args)?;
        let d = gov::raise_blocker(cx.pool, who, scope, req).await?;
        let mut out = decided(
            &d,
            "Your attempt has ended: stop working on the task and do not report on it. It comes back with the stakeholder's decision as feedback.",
        )?;
        out["attempt_ended"] = json!(true);
        Ok(out)
    })
}

fn stakeholder_profile<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        args.remove("business_id");
        let req: ProfileRequest = body(args)?;
        answer(&gov::put_profile(cx.pool, who, req).await?)
    })
}

fn decision_review<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let status = args
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("pending");
        let limit = args.get("limit").and_then(Value::as_i64).unwrap_or(50);
        let (list, totals) = gov::list_decisions(cx.pool, who, Some(status), limit).await?;
        Ok(json!({
            "count": list.len(),
            "totals": totals,
            "decisions": list,
            "next_step": if list.is_empty() {
                "Nothing waits for you."
            } else {
                "Resolve each with decision_resolve: approved (optionally naming the option), rejected, deferred or modified."
            },
        }))
    })
}

fn decision_resolve_tool() -> Tool {
    tool_for(
        STAKEHOLDERS,
        Group::Stakeholder,
        "decision_resolve",
        "Resolve a decision",
        "Resolve a decision: approved (proceed; name the option chosen, default the \
         recommended one), rejected (the agent must find another way), deferred (checked again \
         later) or modified (approved with modified_options). A task waiting for the decision \
         moves on, and the requesting agent is told.",
        object(
            json!({
                "decision_id": { "type": "string", "format": "uuid", "description": "The decision." },
                "outcome": { "type": "string", "enum": ["approved", "rejected", "deferred", "modified"] },
                "resolver": { "type": "string", "description": "You (default: your token); naming someone else is refused." },
                "rationale": { "type": "string", "maxLength": 4000, "description": "Why." },
                "option": { "type": "string", "description": "For approved or modified: the label of the option chosen." },
                "conditions": { "type": "array", "items": { "type": "string" }, "maxItems": 20, "description": "Conditions attached." },
                "modified_options": { "type": "object", "description": "For modified: what changes (a non-empty object)." },
                "recheck_after_ms": { "type": "integer", "minimum": 100, "maximum": 2592000000u64, "description": "For deferred: check again after this long (default one hour)." },
                "version": { "type": "integer", "minimum": 1, "description": "The decision version you read." },
            }),
            &["decision_id", "outcome"],
        ),
        false,
        decision_resolve,
    )
}

fn decision_resolve<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    mut args: Map<String, Value>,
) -> BoxFuture<'a, Result<Value, ApiError>> {
    Box::pin(async move {
        let id = required_uuid(&mut args, "decision_id")?;
        if let Some(Value::String(named)) = args.remove("resolver")
            && named != who.actor()
        {
            return Err(Forbidden(format!(
                "this token resolves as '{}'; 'resolver' cannot name '{named}'",
                who.actor()
            ))
            .into());
        }
        if let Some(m) = args.remove("modified_options") {
            args.insert("modifications".into(), m);
        }
        let req: ResolveRequest = body(args)?;
        let replan = cx.planning.llm.is_some();
        let d = gov::resolve(cx.pool, replan, who, id, req).await?;
        decided(&d, "Resolved; the requesting agent is told.")
    })
}

/// A decision as a model reads it.
fn decided(d: &DecisionView, next: &str) -> Result<Value, ApiError> {
    let mut out = answer(d)?;
    out["decision_id"] = json!(d.id);
    out["next_step"] = json!(next);
    Ok(out)
}
