//! Agents authoring BPMN workflows through their tools (seed 000 §20,
//! tools 18–26), and another workspace seeing none of it.

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

/// Calls tool `name` with the admin token: (status, its result when 200,
/// else the error body).
async fn call_tool(app: &TestApp, name: &str, args: Value) -> (StatusCode, Value) {
    let (status, body) = app.post(&format!("/v1/tools/{name}"), args).await;
    let result = if status == StatusCode::OK {
        body["result"].clone()
    } else {
        body
    };
    (status, result)
}

/// Agents author through the tools; another workspace sees nothing.
#[tokio::test]
async fn the_workflow_tools_author_and_other_workspaces_see_nothing() {
    let app = spawn_app().await;
    let tool = |name: &'static str, args: Value| call_tool(&app, name, args);
    let (status, w) = tool("workflow_create", json!({ "name": "Onboarding" })).await;
    assert_eq!(status, StatusCode::OK, "{w}");
    let id = w["workflow_id"].as_str().expect("workflow_id").to_owned();
    let (_, lane) = tool(
        "bpmn_add_lane",
        json!({ "workflow_id": id, "pool_id": w_process(&app, &id).await, "name": "Legal", "role": "legal" }),
    )
    .await;
    assert!(lane["element_id"].is_string(), "{lane}");
    for (node, kind) in [("s", "startEvent"), ("t", "userTask"), ("e", "endEvent")] {
        let (status, r) = tool(
            "bpmn_add_node",
            json!({ "workflow_id": id, "id": node, "type": kind, "name": node, "lane": "Legal" }),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{r}");
    }
    tool(
        "bpmn_connect",
        json!({ "workflow_id": id, "id": "a", "source": "s", "target": "t" }),
    )
    .await;
    let (_, r) = tool(
        "bpmn_connect",
        json!({ "workflow_id": id, "id": "b", "source": "t", "target": "e" }),
    )
    .await;
    assert_eq!(r["valid"], true, "{r}");
    let (_, v) = tool("workflow_validate", json!({ "workflow_id": id })).await;
    assert_eq!(v["valid"], true, "{v}");
    let (_, s) = tool("workflow_status", json!({ "workflow_id": id })).await;
    assert_eq!(s["nodes"], 3, "{s}");
    assert_eq!(s["flows"], 2, "{s}");
    let (_, i) = tool("workflow_inspect", json!({ "workflow_id": id })).await;
    assert!(i["model"]["processes"].is_array(), "{i}");
    let (_, r) = tool(
        "bpmn_remove_node",
        json!({ "workflow_id": id, "element_id": "t" }),
    )
    .await;
    let warned: Vec<&str> = r["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|w| w["element"].as_str())
        .collect();
    assert_eq!(
        warned,
        ["s", "e"],
        "the start is a dead end, the end unreachable: {r}"
    );

    let other = other_workspace_token(&app).await;
    let (status, _) = app
        .request(
            Method::GET,
            &format!("/v1/workflows/{id}"),
            None,
            Some(&other),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, _) = app
        .request(
            Method::DELETE,
            &format!("/v1/workflows/{id}"),
            None,
            Some(&other),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, r) = tool("workflow_delete", json!({ "workflow_id": id })).await;
    assert_eq!(status, StatusCode::OK, "{r}");
    let (status, _) = app.get(&format!("/v1/workflows/{id}")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    app.stop().await;
}

/// The id of the workflow's first process.
async fn w_process(app: &TestApp, id: &str) -> String {
    let (_, w) = app.get(&format!("/v1/workflows/{id}")).await;
    w["model"]["processes"][0]["id"]
        .as_str()
        .expect("a process")
        .to_owned()
}

/// Agents run workflows through their tools: start, answer a person's
/// task, send the message it waits for, broadcast a signal, read it.
#[tokio::test]
async fn the_running_tools_start_answer_message_and_signal() {
    let app = spawn_app().await;
    let tool = |name: &'static str, args: Value| call_tool(&app, name, args);
    let xml = r#"<?xml version="1.0"?><definitions xmlns="http://www.omg.org/spec/BPMN/20100524/MODEL" id="d" targetNamespace="t">
      <message id="m" name="Go"/><signal id="sg" name="Stop"/>
      <process id="p" isExecutable="true"><startEvent id="s"/><userTask id="ask"/>
      <intermediateCatchEvent id="hear"><messageEventDefinition messageRef="m"/></intermediateCatchEvent>
      <intermediateCatchEvent id="halt"><signalEventDefinition signalRef="sg"/></intermediateCatchEvent>
      <endEvent id="e"/>
      <sequenceFlow id="f1" sourceRef="s" targetRef="ask"/><sequenceFlow id="f2" sourceRef="ask" targetRef="hear"/>
      <sequenceFlow id="f3" sourceRef="hear" targetRef="halt"/><sequenceFlow id="f4" sourceRef="halt" targetRef="e"/>
      </process></definitions>"#;
    let w = import_workflow(&app, xml.as_bytes().to_vec()).await;
    let (status, inst) = tool(
        "workflow_start",
        json!({ "workflow_id": w["id"], "variables": { "n": 1 } }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{inst}");
    let id = inst["instance_id"].clone();
    let token = inst["human_tasks"][0]["token"].clone();
    let (status, after) = tool(
        "workflow_complete_task",
        json!({ "instance_id": id, "token": token, "output": { "ok": true } }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{after}");
    assert_eq!(after["variables"]["ok"], true, "{after}");
    let (status, err) = tool("workflow_message", json!({ "name": "Nobody" })).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    let (_, to) = tool(
        "workflow_message",
        json!({ "name": "Go", "payload": { "x": 2 } }),
    )
    .await;
    assert_eq!(to["instance_id"], id, "{to}");
    let (_, sent) = tool("workflow_signal", json!({ "name": "Stop" })).await;
    assert_eq!(sent["delivered"], 1, "{sent}");
    let (_, done) = tool("workflow_instance", json!({ "instance_id": id })).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["variables"]["x"], 2, "{done}");
    app.stop().await;
}
