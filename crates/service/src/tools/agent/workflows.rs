//! Workflows as agent tools (seed 000 §20, tools 18–26): create, delete,
//! status, inspect and validate a BPMN workflow, and author it node by node.
//! Each calls the same use case as its REST route (`/v1/workflows`).

use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use uuid::Uuid;

use coordinator_bpmn::edit::{Edit, NodeType};

use super::{answer, body, object, tool_for};
use crate::{
    auth::Principal,
    error::ApiError,
    tools::{Group, Tool, ToolContext},
    workflows::{self, AUTHORS, CreateWorkflow, WorkflowView},
};

fn workflow_id() -> Value {
    json!({ "type": "string", "format": "uuid", "description": "The workflow (workflow_id from workflow_create)." })
}

fn version_arg() -> Value {
    json!({ "type": "integer", "minimum": 1, "maximum": 2147483647, "description": "A version (default: the latest)." })
}

/// The tools of this group.
pub(super) fn tools() -> Vec<Tool> {
    vec![
        tool_for(
            AUTHORS,
            Group::Workflow,
            "workflow_create",
            "Create a workflow",
            "Create an empty BPMN 2.0 workflow (one executable process, no nodes); add nodes \
             with bpmn_add_node, connect them with bpmn_connect, map lanes to roles with \
             bpmn_add_lane, then check it with workflow_validate.",
            object(
                json!({
                    "name": { "type": "string", "minLength": 1, "maxLength": 200, "description": "Its name." },
                    "description": { "type": "string", "maxLength": 4000, "description": "What it is for." },
                    "business_id": { "type": "string", "minLength": 1, "maxLength": 128, "description": "The venture it belongs to." },
                }),
                &["name"],
            ),
            false,
            create,
        ),
        tool_for(
            AUTHORS,
            Group::Workflow,
            "workflow_delete",
            "Delete a workflow",
            "Delete a workflow with every version.",
            object(json!({ "workflow_id": workflow_id() }), &["workflow_id"]),
            false,
            delete,
        ),
        tool_for(
            AUTHORS,
            Group::Workflow,
            "workflow_status",
            "Workflow status",
            "A workflow's state in brief: latest version, whether it is frozen (an instance \
             started from it), whether it validates, and how many nodes and flows it has.",
            object(json!({ "workflow_id": workflow_id() }), &["workflow_id"]),
            true,
            status,
        ),
        tool_for(
            AUTHORS,
            Group::Workflow,
            "workflow_inspect",
            "Inspect a workflow",
            "A workflow's whole structure: processes with their nodes (id, name, kind), \
             sequence flows (source, target, condition), lanes and their roles, pools and \
             message flows.",
            object(
                json!({ "workflow_id": workflow_id(), "version": version_arg() }),
                &["workflow_id"],
            ),
            true,
            inspect,
        ),
        tool_for(
            AUTHORS,
            Group::Workflow,
            "workflow_validate",
            "Validate a workflow",
            "Validate a workflow: {valid, errors, warnings}, each finding with a code, a \
             message and the element id it is about.",
            object(
                json!({ "workflow_id": workflow_id(), "version": version_arg() }),
                &["workflow_id"],
            ),
            true,
            validate,
        ),
    ]
    .into_iter()
    .chain(authoring_tools())
    .collect()
}

/// The tools that change a workflow's graph (§20, tools 23–26).
fn authoring_tools() -> Vec<Tool> {
    let node_types: Vec<&str> = NodeType::ALL.iter().map(|t| t.as_str()).collect();
    vec![
        tool_for(
            AUTHORS,
            Group::Workflow,
            "bpmn_add_node",
            "Add a workflow node",
            "Add a node to a workflow: an event, a task, a gateway, a subprocess or a call \
             activity. Tasks in a lane go to agents of the lane's role.",
            object(
                json!({
                    "workflow_id": workflow_id(),
                    "id": { "type": "string", "minLength": 1, "maxLength": 128, "pattern": "^[A-Za-z_][A-Za-z0-9_.-]*$", "description": "The node's id, unique in the workflow." },
                    "type": { "type": "string", "enum": node_types, "description": "What it is." },
                    "name": { "type": "string", "maxLength": 500, "description": "Its label." },
                    "description": { "type": "string", "maxLength": 4000, "description": "Documentation." },
                    "lane": { "type": "string", "description": "A lane (id or name) to put it in." },
                    "definition": { "type": "string", "minLength": 1, "maxLength": 4096, "description": "What the type needs: timerEvent an ISO 8601 duration (PT5M), date or cycle (R3/PT1H); messageEvent, sendTask, receiveTask the message name; signalEvent the signal name; errorEvent the error code; scriptTask `name = expression`; callActivity the called process id." },
                    "process_id": { "type": "string", "description": "The process (default: the first executable one)." },
                }),
                &["workflow_id", "id", "type", "name"],
            ),
            false,
            add_node,
        ),
        tool_for(
            AUTHORS,
            Group::Workflow,
            "bpmn_remove_node",
            "Remove a workflow node",
            "Remove a node with the flows into and out of it and its boundary events.",
            object(
                json!({
                    "workflow_id": workflow_id(),
                    "element_id": { "type": "string", "minLength": 1, "description": "The node's id." },
                }),
                &["workflow_id", "element_id"],
            ),
            false,
            remove_node,
        ),
        tool_for(
            AUTHORS,
            Group::Workflow,
            "bpmn_connect",
            "Connect workflow nodes",
            "Connect two nodes of the same process with a sequence flow; a flow out of an \
             exclusive or inclusive gateway takes a condition such as ${amount > 1000} or \
             = approved (docs/workflows.md).",
            object(
                json!({
                    "workflow_id": workflow_id(),
                    "id": { "type": "string", "minLength": 1, "maxLength": 128, "pattern": "^[A-Za-z_][A-Za-z0-9_.-]*$", "description": "The flow's id, unique in the workflow." },
                    "source": { "type": "string", "minLength": 1, "description": "The node it leaves." },
                    "target": { "type": "string", "minLength": 1, "description": "The node it enters." },
                    "condition": { "type": "string", "minLength": 1, "maxLength": 4096, "description": "When to take it." },
                }),
                &["workflow_id", "id", "source", "target"],
            ),
            false,
            connect,
        ),
        tool_for(
            AUTHORS,
            Group::Workflow,
            "bpmn_add_lane",
            "Add a workflow lane",
            "Add a lane to a pool (or process), mapped to an organisation role: its tasks go \
             to that role's agents. Answers the lane's id.",
            object(
                json!({
                    "workflow_id": workflow_id(),
                    "pool_id": { "type": "string", "minLength": 1, "description": "The pool (participant) or process." },
                    "name": { "type": "string", "minLength": 1, "maxLength": 200, "description": "Its label." },
                    "role": { "type": "string", "minLength": 1, "maxLength": 128, "description": "The organisation role whose agents do its tasks." },
                }),
                &["workflow_id", "pool_id", "name", "role"],
            ),
            false,
            add_lane,
        ),
    ]
}

type Answer<'a> = BoxFuture<'a, Result<Value, ApiError>>;

fn create<'a>(cx: &'a ToolContext<'a>, who: &'a Principal, args: Map<String, Value>) -> Answer<'a> {
    Box::pin(async move {
        let req: CreateWorkflow = body(args)?;
        let view = workflows::create(cx.pool, who, req).await?;
        Ok(brief(&view, None))
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Which {
    workflow_id: Uuid,
    #[serde(default)]
    version: Option<i32>,
}

impl Which {
    /// A version, when named, is 1 or more.
    fn check_version(&self) -> Result<(), ApiError> {
        match self.version {
            Some(v) if v < 1 => Err(ApiError::invalid("version", "version must be 1 or more")),
            _ => Ok(()),
        }
    }
}

fn delete<'a>(cx: &'a ToolContext<'a>, who: &'a Principal, args: Map<String, Value>) -> Answer<'a> {
    Box::pin(async move {
        let w: Which = body(args)?;
        workflows::delete(cx.pool, who.workspace_id, w.workflow_id).await?;
        Ok(json!({ "workflow_id": w.workflow_id, "deleted": true }))
    })
}

fn status<'a>(cx: &'a ToolContext<'a>, who: &'a Principal, args: Map<String, Value>) -> Answer<'a> {
    Box::pin(async move {
        let w: Which = body(args)?;
        let view = workflows::show(cx.pool, who.workspace_id, w.workflow_id, None).await?;
        let counts = coordinator_bpmn::counts(
            &serde_json::from_value(view.model.clone())
                .map_err(|e| ApiError::Unexpected(e.into()))?,
        );
        let mut out = brief(&view, None);
        out["nodes"] = json!(counts.nodes);
        out["flows"] = json!(counts.flows);
        out["updated_at"] = json!(view.workflow.updated_at.unix_timestamp());
        Ok(out)
    })
}

fn inspect<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    args: Map<String, Value>,
) -> Answer<'a> {
    Box::pin(async move {
        let w: Which = body(args)?;
        w.check_version()?;
        let view = workflows::show(cx.pool, who.workspace_id, w.workflow_id, w.version).await?;
        answer(&view)
    })
}

fn validate<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    args: Map<String, Value>,
) -> Answer<'a> {
    Box::pin(async move {
        let w: Which = body(args)?;
        w.check_version()?;
        let report =
            workflows::validate(cx.pool, who.workspace_id, w.workflow_id, w.version).await?;
        answer(&report)
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AddNode {
    workflow_id: Uuid,
    id: String,
    #[serde(rename = "type")]
    node_type: NodeType,
    name: String,
    #[serde(default)]
    description: Option<String>,
    #[serde(default)]
    lane: Option<String>,
    #[serde(default)]
    definition: Option<String>,
    #[serde(default)]
    process_id: Option<String>,
}

fn add_node<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    args: Map<String, Value>,
) -> Answer<'a> {
    Box::pin(async move {
        let a: AddNode = body(args)?;
        let element = a.id.clone();
        let change = Edit::AddNode {
            process: a.process_id,
            id: a.id,
            node_type: a.node_type,
            name: a.name,
            description: a.description,
            lane: a.lane,
            definition: a.definition,
        };
        edit(cx, who, a.workflow_id, change, element).await
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RemoveNode {
    workflow_id: Uuid,
    element_id: String,
}

fn remove_node<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    args: Map<String, Value>,
) -> Answer<'a> {
    Box::pin(async move {
        let a: RemoveNode = body(args)?;
        let element = a.element_id.clone();
        edit(
            cx,
            who,
            a.workflow_id,
            Edit::RemoveNode { id: a.element_id },
            element,
        )
        .await
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Connect {
    workflow_id: Uuid,
    id: String,
    source: String,
    target: String,
    #[serde(default)]
    condition: Option<String>,
}

fn connect<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    args: Map<String, Value>,
) -> Answer<'a> {
    Box::pin(async move {
        let a: Connect = body(args)?;
        let element = a.id.clone();
        let change = Edit::Connect {
            id: Some(a.id),
            source: a.source,
            target: a.target,
            condition: a.condition,
            name: None,
        };
        edit(cx, who, a.workflow_id, change, element).await
    })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AddLane {
    workflow_id: Uuid,
    pool_id: String,
    name: String,
    role: String,
}

fn add_lane<'a>(
    cx: &'a ToolContext<'a>,
    who: &'a Principal,
    args: Map<String, Value>,
) -> Answer<'a> {
    Box::pin(async move {
        let a: AddLane = body(args)?;
        let element = coordinator_bpmn::edit::lane_id(&a.name);
        let change = Edit::AddLane {
            pool: Some(a.pool_id),
            id: Some(element.clone()),
            name: a.name,
            role: a.role,
        };
        edit(cx, who, a.workflow_id, change, element).await
    })
}

async fn edit(
    cx: &ToolContext<'_>,
    who: &Principal,
    id: Uuid,
    change: Edit,
    element: String,
) -> Result<Value, ApiError> {
    let view = workflows::apply_edit(cx.pool, who, id, None, change).await?;
    Ok(brief(&view, Some(&element)))
}

/// What an authoring tool answers: enough to go on, not the whole model
/// (workflow_inspect gives that).
fn brief(view: &WorkflowView, element: Option<&str>) -> Value {
    let mut out = json!({
        "workflow_id": view.workflow.id,
        "name": view.workflow.name,
        "version": view.version,
        "frozen": view.frozen,
        "valid": view.validation["valid"],
        "errors": view.validation["errors"],
        "warnings": view.validation["warnings"],
    });
    if let Some(e) = element {
        out["element_id"] = json!(e);
    }
    out
}
