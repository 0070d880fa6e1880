//! Agents talk through their tools (`POST /v1/tools/{name}`): performatives
//! with effects (beliefs, requests, tasks), acting only as themselves.

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

async fn agent_token(app: &TestApp, agent: &str) -> String {
    let (s, b) = app
        .post("/v1/tokens", json!({"role": "agent", "agent_id": agent}))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    b["token"].as_str().expect("token").to_owned()
}

/// Calls a tool as the token's agent: (status, its result, or the error body).
async fn tool(app: &TestApp, token: &str, name: &str, args: Value) -> (StatusCode, Value) {
    let (s, b) = app
        .request(
            Method::POST,
            &format!("/v1/tools/{name}"),
            Some(args),
            Some(token),
        )
        .await;
    match b.get("result") {
        Some(r) => (s, r.clone()),
        None => (s, b),
    }
}

async fn messages(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM agent_messages")
        .fetch_one(&app.pool)
        .await
        .expect("count")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inform_revises_beliefs_and_never_lowers_a_corroborated_one() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let researcher = agent_token(&app, "researcher").await;
    let inform = |certainty: f64| {
        json!({"to": "writer", "performative": "INFORM", "subject": "market",
               "content": {"subject": "market", "content": "growing", "certainty": certainty}})
    };
    let (s, b) = tool(&app, &researcher, "agent_message", inform(0.9)).await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(b["effects"]["beliefs"][0]["agent_id"], "writer", "{b}");
    assert_eq!(b["effects"]["beliefs"][0]["outcome"], "created");
    assert_eq!(b["effects"]["beliefs"][0]["certainty"], 0.9);
    let (s, b) = tool(&app, &researcher, "agent_message", inform(0.3)).await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(b["effects"]["beliefs"][0]["outcome"], "corroborated");
    assert_eq!(b["effects"]["beliefs"][0]["certainty"], 0.9, "{b}");
    let stored: f64 = sqlx::query_scalar(
        "SELECT certainty FROM bdi_beliefs WHERE agent_id = 'writer' AND subject = 'market'",
    )
    .fetch_one(&app.pool)
    .await
    .expect("belief");
    assert_eq!(stored, 0.9);

    // Acting as another agent is refused, and bad arguments change nothing.
    let before = messages(&app).await;
    let mut as_writer = inform(0.5);
    as_writer["from"] = json!("writer");
    let (s, b) = tool(&app, &researcher, "agent_message", as_writer).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{b}");
    let (s, b) = tool(
        &app,
        &researcher,
        "agent_message",
        json!({"to": "writer", "performative": "SHOUT", "content": {}}),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{b}");
    let (s, b) = tool(
        &app,
        &researcher,
        "agent_message",
        json!({"to": "writer", "performative": "INFORM", "content": {"subject": "market", "content": "up", "certainty": 2}}),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{b}");
    assert_eq!(b["error"]["details"]["field"], "content.certainty", "{b}");
    let (s, b) = tool(
        &app,
        &researcher,
        "agent_message",
        json!({"to": "writer", "performative": "AGREE", "content": {}}),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
    assert_eq!(b["error"]["code"], "nothing_to_answer", "{b}");
    let (s, b) = tool(
        &app,
        &researcher,
        "contract_net_propose",
        json!({"cfp_id": uuid::Uuid::new_v4(), "proposer": "writer", "estimated_effort": 2, "confidence": 0.5}),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{b}");
    assert_eq!(messages(&app).await, before);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuse_and_cancel_close_requests_and_only_the_right_agent_may() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let researcher = agent_token(&app, "researcher").await;
    let writer = agent_token(&app, "writer").await;
    let request = json!({"to": "writer", "performative": "REQUEST", "subject": "Draft it",
                         "content": {"description": "a draft"}});
    let (s, first) = tool(&app, &researcher, "agent_message", request.clone()).await;
    assert_eq!(s, StatusCode::OK, "{first}");
    assert_eq!(first["effects"]["request"]["status"], "open", "{first}");
    let first_id = first["message_id"].clone();
    let (_, second) = tool(&app, &researcher, "agent_message", request).await;
    let second_id = second["message_id"].clone();

    // The writer sees both waiting for its answer.
    let (s, inbox) = tool(&app, &writer, "inbox", json!({})).await;
    assert_eq!(s, StatusCode::OK, "{inbox}");
    assert_eq!(
        inbox["awaiting_your_answer"].as_array().map(Vec::len),
        Some(2),
        "{inbox}"
    );

    // Only the recipient answers; only the requester cancels.
    let (s, b) = tool(
        &app,
        &researcher,
        "agent_message",
        json!({"to": "writer", "performative": "REFUSE", "reply_to": first_id, "content": {}}),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{b}");
    let (s, b) = tool(
        &app,
        &writer,
        "agent_message",
        json!({"to": "researcher", "performative": "REFUSE", "reply_to": first_id, "content": {"reason": "busy"}}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(b["effects"]["request"]["status"], "refused", "{b}");
    let (s, b) = tool(
        &app,
        &writer,
        "agent_message",
        json!({"to": "researcher", "performative": "AGREE", "reply_to": first_id, "content": {}}),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT, "{b}");
    assert_eq!(b["error"]["code"], "request_settled");
    let (s, b) = tool(
        &app,
        &writer,
        "agent_message",
        json!({"to": "researcher", "performative": "CANCEL", "reply_to": second_id, "content": {}}),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{b}");
    let (s, b) = tool(
        &app,
        &researcher,
        "agent_message",
        json!({"to": "writer", "performative": "CANCEL", "reply_to": second_id, "content": {}}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(b["effects"]["request"]["status"], "cancelled", "{b}");
    let (s, list) = tool(&app, &researcher, "requests", json!({})).await;
    assert_eq!(s, StatusCode::OK, "{list}");
    let statuses: Vec<&str> = list["requests"]
        .as_array()
        .expect("requests")
        .iter()
        .filter_map(|r| r["status"].as_str())
        .collect();
    assert_eq!(statuses.len(), 2, "{list}");
    assert!(statuses.contains(&"refused") && statuses.contains(&"cancelled"));
    let kinds: Vec<String> = sqlx::query_scalar(
        "SELECT kind FROM orchestration_events WHERE kind LIKE 'request.%' ORDER BY id",
    )
    .fetch_all(&app.pool)
    .await
    .expect("events");
    assert_eq!(
        kinds,
        [
            "request.opened",
            "request.opened",
            "request.refused",
            "request.cancelled"
        ]
    );

    // A query is answered by an INFORM reply in its conversation.
    let (_, q) = tool(
        &app,
        &researcher,
        "agent_message",
        json!({"to": "writer", "performative": "QUERY", "subject": "deadline?", "content": {}}),
    )
    .await;
    let (s, b) = tool(
        &app,
        &writer,
        "agent_message",
        json!({"to": "researcher", "performative": "INFORM", "reply_to": q["message_id"], "content": {"text": "Friday"}}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(b["effects"]["request"]["status"], "answered", "{b}");
    assert_eq!(b["conversation_id"], q["conversation_id"]);
    let (s, conv) = tool(
        &app,
        &writer,
        "conversation",
        json!({"conversation_id": q["conversation_id"]}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{conv}");
    assert_eq!(conv["message_count"], 2, "{conv}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agree_within_a_mission_adds_the_work_as_a_task() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let m = app
        .create_mission(json!({"goal": "report", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().expect("id").to_owned();
    let d = worker.dispatch(1).await;
    assert_eq!(d.agent_id, "researcher");
    let attempt = d.callback.token.clone();
    let writer = agent_token(&app, "writer").await;

    // With the attempt token, the request is linked to the researcher's task.
    let (s, req) = tool(
        &app,
        &attempt,
        "agent_message",
        json!({"to": "writer", "performative": "REQUEST", "subject": "Write the summary",
               "content": {"task": {"task_type": "writing", "description": "two paragraphs",
                                    "required_skills": ["writing"]}}}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{req}");
    assert_eq!(
        req["effects"]["request"]["mission_id"],
        id.as_str(),
        "{req}"
    );
    let (s, agreed) = tool(
        &app,
        &writer,
        "agent_message",
        json!({"to": "researcher", "performative": "AGREE", "reply_to": req["message_id"], "content": {}}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{agreed}");
    assert_eq!(agreed["effects"]["request"]["status"], "agreed", "{agreed}");
    let key = agreed["effects"]["added_task"]
        .as_str()
        .expect("added task")
        .to_owned();
    let (_, mission) = app.get(&format!("/v1/missions/{id}")).await;
    let task = mission["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| t["key"] == key.as_str())
        .cloned()
        .expect("the agreed work is a task");
    assert_eq!(task["title"], "Write the summary", "{task}");
    assert_eq!(task["task_type"], "writing");
    let (_, page) = app
        .get(&format!("/v1/missions/{id}/events?limit=1000"))
        .await;
    let events = page["events"].as_array().expect("events");
    let extended = events
        .iter()
        .find(|e| e["kind"] == "plan.extended")
        .expect("plan.extended");
    assert_eq!(extended["payload"]["added"], json!([key]), "{extended}");
    assert_eq!(extended["payload"]["placement"], "child");
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "request.agreed" && e["payload"]["added_task"] == key.as_str())
    );
    app.stop().await;
}
