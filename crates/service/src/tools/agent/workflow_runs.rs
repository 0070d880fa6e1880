//! Running workflows as tools: start an instance, read it, answer a task
//! waiting for a person, send a message, broadcast a signal. Each calls the
//! same use case as its REST route (`/v1/workflows/{id}/instances`,
//! `/v1/workflow-instances`, `/v1/workflow-messages`, `/v1/workflow-signals`).

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use coordinator_bpmn::run::Command;

use super::{answer, body, object, tool_for};
use crate::{
    auth::Principal,
    error::ApiError,
    tools::{Group, Tool, ToolContext},
    workflows::{
        ANSWERERS, AUTHORS, delivery,
        instances::{self, InstanceView, StartInstance},
    },
};

type Answer<'a> = BoxFuture<'a, Result<Value, ApiError>>;

fn instance_id() -> Value {
    json!({ "type": "string", "format": "uuid", "description": "The instance (instance_id from workflow_start)." })
}

/// The tools of this group.
pub(super) fn tools() -> Vec<Tool> {
    vec![
        tool_for(
            AUTHORS,
            Group::Workflow,
            "workflow_start",
            "Start a workflow",
            "Start an instance of a workflow's latest version with variables (its gateways' \
             conditions read them). Agent tasks become missions; tasks for people wait in \
             human_tasks (answer them with workflow_complete_task). A workflow with validation \
             errors is refused with the report.",
            object(
                json!({
                    "workflow_id": { "type": "string", "format": "uuid", "description": "The workflow." },
                    "variables": { "type": "object", "description": "The instance's variables." },
                    "process_id": { "type": "string", "minLength": 1, "description": "The process (default: the executable one)." },
                    "start_event": { "type": "string", "minLength": 1, "description": "The start event (default: the none start event)." },
                    "business_key": { "type": "string", "minLength": 1, "maxLength": 200, "description": "Your key for it (an order number...)." },
                }),
                &["workflow_id"],
            ),
            false,
            start,
        ),
        tool_for(
            AUTHORS,
            Group::Workflow,
            "workflow_instance",
            "Show a workflow instance",
            "A running or ended instance: status, variables, where its tokens wait, active and \
             completed nodes, incidents and tasks waiting for a person.",
            object(json!({ "instance_id": instance_id() }), &["instance_id"]),
            true,
            show,
        ),
        tool_for(
            ANSWERERS,
            Group::Workflow,
            "workflow_complete_task",
            "Complete a workflow task",
            "Complete the task a token waits for (a task for a person, from human_tasks), with \
             an output whose keys become process variables.",
            object(
                json!({
                    "instance_id": instance_id(),
                    "token": { "type": "integer", "minimum": 0, "maximum": 9223372036854775807_i64, "description": "The token (human_tasks[].token)." },
                    "output": { "type": "object", "description": "The task's result (a form's values)." },
                }),
                &["instance_id", "token"],
            ),
            false,
            complete,
        ),
        tool_for(
            AUTHORS,
            Group::Workflow,
            "workflow_message",
            "Send a workflow message",
            "Deliver a message to the first instance waiting for it by name (and correlation \
             key, when the waiting event asks for one); the payload's keys become its variables.",
            object(
                json!({
                    "name": { "type": "string", "minLength": 1, "maxLength": 200, "description": "The message name." },
                    "correlation_key": { "type": "string", "maxLength": 200, "description": "The key the waiting instance expects." },
                    "payload": { "type": "object", "description": "Its content." },
                }),
                &["name"],
            ),
            false,
            message,
        ),
        tool_for(
            AUTHORS,
            Group::Workflow,
            "workflow_signal",
            "Broadcast a workflow signal",
            "Broadcast a signal to every instance of the workspace waiting for it; answers how \
             many took it.",
            object(
                json!({
                    "name": { "type": "string", "minLength": 1, "maxLength": 200, "description": "The signal name." },
                    "payload": { "type": "object", "description": "Its content." },
                }),
                &["name"],
            ),
            false,
            signal,
        ),
    ]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Start {
    workflow_id: Uuid,
    #[serde(default)]
    variables: Option<Map<String, Value>>,
    #[serde(default)]
    process_id: Option<String>,
    #[serde(default)]
    start_event: Option<String>,
    #[serde(default)]
    business_key: Option<String>,
}

fn start<'a>(cx: &'a ToolContext<'a>, who: &'a Principal, args: Map<String, Value>) -> Answer<'a> {
    Box::pin(async move {
        let a: Start = body(args)?;
        let req = StartInstance {
            variables: a.variables,
            process_id: a.process_id,
            start_event: a.start_event,
            business_key: a.business_key,
            version: None,
        };
        let view =
            instances::start(cx.pool, cx.planning, cx.notifier, who, a.workflow_id, req).await?;
        Ok(brief(&view))
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Which {
    instance_id: Uuid,
}

fn show<'a>(cx: &'a ToolContext<'a>, who: &'a Principal, args: Map<String, Value>) -> Answer<'a> {
    Box::pin(async move {
        let w: Which = body(args)?;
        let view = instances::show(cx.pool, who.workspace_id, w.instance_id).await?;
        answer(&view)
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Complete {
    instance_id: Uuid,
    token: u64,
    #[serde(default)]
    output: Value,
}

fn complete<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    args: Map<String, Value>,
) -> Answer<'a> {
    Box::pin(async move {
        let a: Complete = body(args)?;
        let cmd = Command::Complete {
            token: a.token,
            output: a.output,
        };
        let view =
            instances::command(cx.pool, cx.planning, cx.notifier, who, a.instance_id, cmd).await?;
        Ok(brief(&view))
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Message {
    name: String,
    #[serde(default)]
    correlation_key: Option<String>,
    #[serde(default)]
    payload: Value,
}

fn message<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    args: Map<String, Value>,
) -> Answer<'a> {
    Box::pin(async move {
        let m: Message = body(args)?;
        let to = delivery::correlate(
            cx.pool,
            cx.planning,
            cx.notifier,
            who,
            &m.name,
            m.correlation_key.as_deref(),
            m.payload,
        )
        .await?;
        match to {
            Some(id) => Ok(json!({ "instance_id": id })),
            None => Err(ApiError::Unprocessable {
                code: "no_subscriber",
                message: format!(
                    "no instance waits for message '{}' with this correlation key",
                    m.name
                ),
                details: json!({ "field": "name" }),
            }),
        }
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Signal {
    name: String,
    #[serde(default)]
    payload: Value,
}

fn signal<'a>(cx: &'a ToolContext<'a>, who: &'a Principal, args: Map<String, Value>) -> Answer<'a> {
    Box::pin(async move {
        let s: Signal = body(args)?;
        let delivered =
            delivery::broadcast(cx.pool, cx.planning, cx.notifier, who, &s.name, s.payload).await?;
        Ok(json!({ "delivered": delivered }))
    })
}

/// What a running tool answers: where the instance stands, not its history.
fn brief(view: &InstanceView) -> Value {
    json!({
        "instance_id": view.id,
        "workflow_id": view.workflow_id,
        "version": view.version,
        "status": view.status,
        "active": view.active,
        "human_tasks": view.human_tasks,
        "incidents": view.incidents,
        "variables": view.variables,
    })
}
