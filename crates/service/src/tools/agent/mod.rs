//! The agent tools: what an agent (an agent token, or the attempt token its
//! dispatch carries) may do in the service, each defined once here and
//! served by the same registry as the mission tools ([`super`]), so `/mcp`
//! and `/v1/tools` offer an agent exactly these.
//!
//! Each group lives in its own file and exposes `tools()`; a tool is a
//! [`Tool`] whose `kind` is an agent handler. Handlers call the same use cases
//! as the REST routes, so a tool and its route accept and refuse the same
//! things. The caller is the token's agent: an argument naming another agent
//! (`from`, `agent_id`, `proposer`, …) is refused unless it names the caller.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use super::{Group, Kind, Tool};
use crate::{
    auth::{AttemptScope, Forbidden, Principal, Role},
    error::ApiError,
};

mod bdi;
mod communication;
mod planning;
mod reservations;
mod stakeholder;
mod task;
mod workflow_runs;
mod workflows;
mod workforce;

/// Agent tools are for agent tokens (and attempt tokens, which act as one).
pub(crate) const AGENTS: &[Role] = &[Role::Agent];

/// The stakeholder's own tools (seed §20.4: profile, review, resolve) are
/// for stakeholder tokens only: agents raise decisions, people settle them.
pub(crate) const STAKEHOLDERS: &[Role] = &[Role::Stakeholder];

/// Every agent tool, grouped as seed 000 §20 groups them.
pub(super) fn build() -> Vec<Tool> {
    [
        task::tools(),
        communication::tools(),
        reservations::tools(),
        planning::tools(),
        bdi::tools(),
        workforce::tools(),
        stakeholder::tools(),
        workflows::tools(),
        workflow_runs::tools(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// A tool of this catalogue for other `roles` than agents (the stakeholder's).
#[allow(clippy::too_many_arguments)]
pub(crate) fn tool_for(
    roles: &'static [Role],
    group: Group,
    name: &'static str,
    title: &'static str,
    description: &'static str,
    parameters: Value,
    read_only: bool,
    handler: super::Handler,
) -> Tool {
    Tool {
        roles,
        ..tool(
            group,
            name,
            title,
            description,
            parameters,
            read_only,
            handler,
        )
    }
}

/// An agent tool: its handler, and the fields every tool has.
pub(crate) fn tool(
    group: Group,
    name: &'static str,
    title: &'static str,
    description: &'static str,
    parameters: Value,
    read_only: bool,
    handler: super::Handler,
) -> Tool {
    Tool {
        name,
        title,
        description,
        parameters,
        roles: AGENTS,
        read_only,
        group,
        kind: Kind::Agent(handler),
    }
}

/// An object schema of `properties`, with `required` names and nothing else.
pub(crate) fn object(properties: Value, required: &[&str]) -> Value {
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// The agent the caller acts as (agent and attempt tokens always have one).
pub(crate) fn me(who: &Principal) -> Result<&str, ApiError> {
    who.agent_id
        .as_deref()
        .ok_or_else(|| Forbidden::from("only an agent's token can call agent tools").into())
}

/// The caller's agent, checking that an argument naming an agent (if given)
/// names the caller: an agent acts only as itself.
pub(crate) fn acting_as(
    who: &Principal,
    args: &mut Map<String, Value>,
    field: &str,
) -> Result<String, ApiError> {
    let own = me(who)?.to_owned();
    match args.remove(field) {
        Some(Value::String(named)) if named != own => Err(Forbidden(format!(
            "this token acts as agent '{own}'; '{field}' cannot name '{named}'"
        ))
        .into()),
        _ => Ok(own),
    }
}

/// The task the caller works on: attempt tokens only.
pub(crate) fn attempt(who: &Principal) -> Result<AttemptScope, ApiError> {
    who.attempt.ok_or_else(|| {
        Forbidden::from(
            "this tool acts on the caller's current task: call it with the attempt token of a dispatch",
        )
        .into()
    })
}

/// The mission a call is about: the `mission_id` argument, or for an attempt
/// token its own mission (which the registry has already checked any
/// `mission_id` against).
pub(crate) fn mission_of(who: &Principal, args: &mut Map<String, Value>) -> Result<Uuid, ApiError> {
    match args.remove("mission_id") {
        Some(v) => v
            .as_str()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| ApiError::invalid("mission_id", "mission_id must be a mission's id")),
        // Optional for an attempt token, required of others: the caller
        // decides, which no schema states (422).
        None => who.attempt.map(|a| a.mission_id).ok_or_else(|| ApiError::Unprocessable {
            code: "mission_required",
            message: "mission_id is required outside a task (an agent token has no mission of its own)"
                .into(),
            details: json!({ "field": "mission_id" }),
        }),
    }
}

/// A UUID argument, if present.
pub(crate) fn uuid_arg(
    args: &mut Map<String, Value>,
    field: &str,
) -> Result<Option<Uuid>, ApiError> {
    match args.remove(field) {
        None => Ok(None),
        Some(v) => v
            .as_str()
            .and_then(|s| s.parse().ok())
            .map(Some)
            .ok_or_else(|| ApiError::invalid(field, format!("{field} must be a UUID"))),
    }
}

/// A required UUID argument (the schema makes it required; this names it).
pub(crate) fn required_uuid(args: &mut Map<String, Value>, field: &str) -> Result<Uuid, ApiError> {
    uuid_arg(args, field)?.ok_or_else(|| ApiError::invalid(field, format!("{field} is required")))
}

/// The remaining arguments as the request body of the REST route the tool
/// mirrors.
pub(crate) fn body<T: DeserializeOwned>(args: Map<String, Value>) -> Result<T, ApiError> {
    super::request(args)
}

/// A serialisable answer as the tool's JSON result.
pub(crate) fn answer<T: serde::Serialize>(value: &T) -> Result<Value, ApiError> {
    serde_json::to_value(value).map_err(|e| ApiError::Unexpected(e.into()))
}
