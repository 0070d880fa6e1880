//! Chat tools: the function-calling surface at `/v1/tools` and the MCP server
//! at `/mcp`, driven by the official MCP Python SDK.

use std::time::Duration;

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};

use crate::{helpers::*, peers};

const TOOLS: &[&str] = &[
    "create_mission",
    "approve_plan",
    "reject_plan",
    "mission_status",
    "list_missions",
    "cancel_mission",
    "send_instructions",
    "update_mission",
    "delete_mission",
    "review_results",
    "resolve_task",
    "pause_mission",
    "resume_mission",
    "continue_mission",
    "resolve_tool_approval",
    "search_plan_library",
    // Workflow authoring is for people's chat models too (docs/workflows.md).
    "workflow_create",
    "workflow_delete",
    "workflow_status",
    "workflow_inspect",
    "workflow_validate",
    "bpmn_add_node",
    "bpmn_remove_node",
    "bpmn_connect",
    "bpmn_add_lane",
    "workflow_start",
    "workflow_instance",
    "workflow_complete_task",
    "workflow_message",
    "workflow_signal",
];

fn tool_names(list: &Value) -> Vec<String> {
    list["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["function"]["name"].as_str().expect("name").to_owned())
        .collect()
}

fn assert_error(body: &Value, code: &str, field: Option<&str>) {
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(body["error"]["message"].is_string(), "{body}");
    if let Some(field) = field {
        assert_eq!(body["error"]["details"]["field"], field, "{body}");
    }
}

async fn call(app: &TestApp, tool: &str, args: Value) -> Value {
    let (status, body) = app.post(&format!("/v1/tools/{tool}"), args).await;
    assert_eq!(status, StatusCode::OK, "{tool}: {body}");
    body["result"].clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn function_tools_create_approve_and_follow_a_mission() {
    let app = spawn_app().await;
    let worker = spawn_worker(10).await;
    app.register_fleet(&worker.url(), 2).await;

    let (status, list) = app.get("/v1/tools").await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let names = tool_names(&list);
    for tool in TOOLS {
        assert!(names.iter().any(|n| n == tool), "{tool} missing: {names:?}");
    }
    for t in list["tools"].as_array().unwrap() {
        assert_eq!(t["type"], "function");
        assert!(!t["function"]["description"].as_str().unwrap().is_empty());
        assert_eq!(t["function"]["parameters"]["type"], "object", "{t}");
        assert!(t["function"]["parameters"]["properties"].is_object(), "{t}");
    }

    let created = call(
        &app,
        "create_mission",
        json!({"goal": "Compare Postgres, MySQL and SQLite for an embedded use case"}),
    )
    .await;
    assert_eq!(created["status"], "awaiting_approval", "{created}");
    assert!(
        created["next_step"]
            .as_str()
            .unwrap()
            .contains("approve_plan")
    );
    let tasks = created["tasks"].as_array().unwrap().len();
    assert!(tasks >= 2, "{created}");
    assert_eq!(created["progress"]["total"], tasks);
    assert_eq!(created["progress"]["by_status"]["pending"], tasks);
    let id = created["mission_id"].as_str().unwrap().to_owned();
    // The tool and the REST route show the same mission.
    let (_, rest) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(rest["status"], "awaiting_approval");

    let approved = call(&app, "approve_plan", json!({"mission_id": id})).await;
    assert_eq!(approved["status"], "executing", "{approved}");

    let review = wait_until("the results to await review", || async {
        let m = call(&app, "mission_status", json!({"mission_id": id})).await;
        (m["status"] != "executing").then_some(m)
    })
    .await;
    assert_eq!(review["status"], "awaiting_review", "{review}");
    assert!(
        review["next_step"]
            .as_str()
            .unwrap()
            .contains("review_results")
    );
    let accepted = call(
        &app,
        "review_results",
        json!({"mission_id": id, "decision": "accept"}),
    )
    .await;
    assert_eq!(accepted["status"], "completed", "{accepted}");

    let done = call(
        &app,
        "mission_status",
        json!({"mission_id": id, "include_outputs": true}),
    )
    .await;
    assert_eq!(done["progress"]["percent"], 100, "{done}");
    assert_eq!(done["progress"]["by_status"]["succeeded"], tasks);
    for t in done["tasks"].as_array().unwrap() {
        assert!(t["output"].is_object(), "{t}");
        assert!(t["agent"].is_string(), "{t}");
    }
    let (_, rest) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(rest["status"], "completed");

    let listed = call(&app, "list_missions", json!({"status": "completed"})).await;
    assert_eq!(listed["count"], 1, "{listed}");
    assert_eq!(listed["missions"][0]["mission_id"], id.as_str());

    // The finished mission is a case the plan library finds by its goal.
    let goal = rest["goal"].as_str().unwrap().to_owned();
    let found = call(&app, "search_plan_library", json!({"goal": goal})).await;
    assert_eq!(found["count"], 1, "{found}");
    assert_eq!(found["cases"][0]["mission_id"], id.as_str());
    assert_eq!(found["cases"][0]["success"], true);
    assert_eq!(found["cases"][0]["score"], 1.0);
    let none = call(
        &app,
        "search_plan_library",
        json!({"goal": goal, "outcome": "failure"}),
    )
    .await;
    assert_eq!(none["count"], 0, "{none}");
    let (status, body) = app
        .post("/v1/tools/search_plan_library", json!({"goal": "  "}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert_error(&body, "invalid_request", Some("goal"));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_tool_calls_are_json_errors_and_change_nothing() {
    let app = spawn_app().await;

    let (status, body) = app.post("/v1/tools/launch_rocket", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_error(&body, "not_found", None);

    for (args, field) in [
        (json!({}), "goal"),
        (json!({"goal": "   "}), "goal"),
        (json!({"goal": 42}), "goal"),
        (json!({"goal": "x", "colour": "red"}), "colour"),
        (json!({"goal": "x", "autonomy": "reckless"}), "autonomy"),
        (json!({"goal": "x", "priority": 500}), "priority"),
        (
            json!({"goal": "x", "plan": {"tasks": [{"id": "a"}]}}),
            "plan",
        ),
        (json!(["goal"]), "body"),
    ] {
        let (status, body) = app.post("/v1/tools/create_mission", args.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{args}: {body}");
        assert_error(&body, "invalid_request", Some(field));
    }
    let resp = app
        .http
        .post(format!("{}/v1/tools/create_mission", app.url))
        .bearer_auth(&app.token)
        .header("content-type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    assert_error(&resp.json().await.unwrap(), "invalid_json", None);

    let (status, body) = app
        .post(
            "/v1/tools/mission_status",
            json!({"mission_id": "not-an-id"}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_error(&body, "invalid_request", Some("mission_id"));
    let (status, body) = app
        .post(
            "/v1/tools/approve_plan",
            json!({"mission_id": uuid::Uuid::now_v7()}),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

    // Nothing was created by any of it.
    let (_, missions) = app.get("/v1/missions").await;
    assert_eq!(missions["missions"], json!([]), "{missions}");

    // A stakeholder sees and may call only the tools its role allows.
    let (status, body) = app.post("/v1/tokens", json!({"role": "stakeholder"})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let stakeholder = body["token"].as_str().unwrap().to_owned();
    let (status, body) = app
        .request(
            Method::POST,
            "/v1/tools/create_mission",
            Some(json!({"goal": "Write a poem"})),
            Some(&stakeholder),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    assert_error(&body, "forbidden", None);
    let (status, list) = app
        .request(Method::GET, "/v1/tools", None, Some(&stakeholder))
        .await;
    assert_eq!(status, StatusCode::OK);
    let names = tool_names(&list);
    assert!(names.iter().any(|n| n == "approve_plan"), "{names:?}");
    assert!(names.iter().any(|n| n == "mission_status"), "{names:?}");
    assert!(!names.iter().any(|n| n == "create_mission"), "{names:?}");
    let (_, missions) = app.get("/v1/missions").await;
    assert_eq!(missions["missions"], json!([]));

    let (status, body) = app.request(Method::GET, "/v1/tools", None, None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_error(&body, "unauthorized", None);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_needs_a_token_and_speaks_only_post() {
    let app = spawn_app().await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}});
    let (status, body) = app
        .request(Method::POST, "/mcp", Some(init.clone()), None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_error(&body, "unauthorized", None);
    let (status, body) = app
        .request(
            Method::POST,
            "/mcp",
            Some(init),
            Some("cot_not-a-real-token"),
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_error(&body, "unauthorized", None);
    let (status, body) = app
        .request(Method::GET, "/mcp", None, Some(&app.token))
        .await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{body}");

    // Stateless, plain JSON: no session for a replica to remember.
    let resp = app
        .http
        .post(format!("{}/mcp", app.url))
        .bearer_auth(&app.token)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    assert!(resp.headers().get("mcp-session-id").is_none());
    let content_type = resp.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["result"]["protocolVersion"], "2025-06-18", "{body}");
    assert_eq!(body["result"]["serverInfo"]["name"], "coordinator");
    // A later request needs no session either.
    let resp = app
        .http
        .post(format!("{}/mcp", app.url))
        .bearer_auth(&app.token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(
        body["result"]["tools"].as_array().unwrap().len(),
        TOOLS.len(),
        "{body}"
    );
    app.stop().await;
}

/// The MCP transport's own refusals come back as the JSON error body with
/// their status, like every other route: too large, deeply nested, a wrong
/// content type or `Accept`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_refusals_are_json_error_bodies() {
    let app = spawn_app().await;
    // A fresh connection each: the server closes one whose body it cut short,
    // and a pooled client would send the next request on it.
    let post = |content_type: &'static str, accept: &'static str, body: String| {
        reqwest::Client::new()
            .post(format!("{}/mcp", app.url))
            .bearer_auth(&app.token)
            .header("content-type", content_type)
            .header("accept", accept)
            .body(body)
    };
    let both = "application/json, text/event-stream";
    let big = format!(
        "{{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/list\", \"params\": {{\"x\": \"{}\"}}}}",
        "y".repeat(2 * 1024 * 1024)
    );
    let deep = format!(
        "{{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"tools/list\", \"params\": {{\"x\": {}{}}}}}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let cases = [
        ("oversized", post("application/json", both, big)),
        ("deeply nested", post("application/json", both, deep)),
        ("not JSON", post("text/plain", both, "hello".into())),
        (
            "wrong accept",
            post("application/json", "text/html", "{}".into()),
        ),
    ];
    for (what, request) in cases {
        let resp = request.send().await.expect("request");
        let status = resp.status().as_u16();
        let text = resp.text().await.expect("body");
        assert!((400..500).contains(&status), "{what}: {status} {text:.200}");
        let body: Value = serde_json::from_str(&text)
            .unwrap_or_else(|_| panic!("{what}: not JSON: {status} {text:.200}"));
        // Our error body, or a JSON-RPC error from the MCP server itself.
        assert!(
            body["error"]["code"].is_string() || body["error"]["code"].is_i64(),
            "{what}: {body}"
        );
    }
    let (status, _) = app.get("/healthz").await;
    assert_eq!(status, StatusCode::OK);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_python_sdk_creates_approves_and_follows_a_mission() {
    let Some(python) = peers::mcp_python() else {
        return;
    };
    let app = spawn_app().await;
    let worker = spawn_worker(10).await;
    app.register_fleet(&worker.url(), 2).await;

    let script = peers::root().join("tests/mcp/client.py");
    let run = tokio::process::Command::new(python)
        .arg(script)
        .arg(format!("{}/mcp", app.url))
        .arg(&app.token)
        .arg("60")
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the MCP client finished within 120 s")
        .expect("the MCP client ran");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "client failed: {stderr}");
    let summary: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("summary is not JSON ({e}): {stderr}"));

    assert_eq!(summary["server"], "coordinator", "{summary}");
    assert!(summary["protocol_version"].is_string());
    assert!(
        summary["instructions"]
            .as_str()
            .unwrap()
            .contains("create_mission")
    );
    let tools: Vec<&str> = summary["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    for tool in TOOLS {
        assert!(tools.contains(tool), "{tool} missing: {tools:?}");
    }
    assert_eq!(summary["schemas_are_objects"], true);
    assert_eq!(
        summary["created"]["status"], "awaiting_approval",
        "{summary}"
    );
    assert!(
        summary["created"]["next_step"]
            .as_str()
            .unwrap()
            .contains("approve_plan")
    );
    assert_eq!(summary["approved_status"], "executing");
    let seen: Vec<&str> = summary["statuses_seen"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    assert_eq!(seen.first(), Some(&"awaiting_approval"), "{seen:?}");
    assert!(seen.contains(&"awaiting_review"), "{seen:?}");
    assert_eq!(seen.last(), Some(&"completed"), "{seen:?}");
    assert_eq!(summary["accepted_is_error"], false);
    assert_eq!(summary["final"]["status"], "completed", "{summary}");
    assert_eq!(summary["final"]["progress"]["percent"], 100);
    assert_eq!(summary["final"]["task_statuses"], json!(["succeeded"]));
    assert_eq!(summary["listed"].as_array().unwrap().len(), 1);

    // Tool failures come back as readable tool results, not transport errors.
    assert_eq!(summary["missing_argument"]["is_error"], true);
    let text = summary["missing_argument"]["text"].as_str().unwrap();
    assert!(text.contains("mission_id"), "{text}");
    assert_eq!(summary["approve_twice"]["is_error"], true);
    let text = summary["approve_twice"]["text"].as_str().unwrap();
    assert!(text.contains("invalid_state"), "{text}");

    // The mission the client made is the one the REST API shows.
    let id = summary["listed"][0].as_str().unwrap();
    let (_, mission) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(mission["status"], "completed");
    app.stop().await;
}
