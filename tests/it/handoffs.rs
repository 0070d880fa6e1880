//! Agent ⇄ human handoffs: the task changes hands with its context, the
//! handoff is an event on the task, and the receiving agent gets a HANDOFF.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;

/// A token of `role` (acting as `agent`, for agent tokens).
async fn token(app: &TestApp, role: &str, agent: Option<&str>) -> String {
    let (s, body) = app
        .post("/v1/tokens", json!({"role": role, "agent_id": agent}))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    body["token"].as_str().unwrap().to_owned()
}

fn payload(direction: &str, task_id: &str, to: &str) -> Value {
    json!({
        "direction": direction,
        "to": to,
        "task_id": task_id,
        "context_summary": "Vendor negotiations stalled on payment terms.",
        "active_tasks": [{"task_id": task_id, "description": "Negotiate", "status": "in_progress",
                          "blockers": ["Vendor requires NET-15"]}],
        "open_decisions": [{"decision_id": "dec-005", "description": "Approve NET-15", "status": "pending"}],
        "artifacts": [{"name": "Vendor comparison", "path": "artifacts/vendors.xlsx"}],
    })
}

async fn handoff(app: &TestApp, token: &str, body: Value) -> (StatusCode, Value) {
    app.request(
        reqwest::Method::POST,
        "/v1/handoffs",
        Some(body),
        Some(token),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_hands_a_running_task_to_a_person_who_hands_it_back() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    for id in ["alpha", "beta"] {
        let (s, body) = app
            .post(
                "/v1/agents",
                json!({"agent_id": id, "role": "researcher", "skills": ["research"],
                       "endpoint_url": worker.url, "max_concurrency": 1}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{body}");
    }
    let m = app
        .create_mission(
            json!({"goal": "hand it over", "autonomy": "autonomous", "plan": chain_plan()}),
        )
        .await;
    let id = m["id"].as_str().unwrap();
    let d = worker.dispatch(1).await;
    assert_eq!(d.task.key, "a");
    let task_id = d.task_id.to_string();
    let holder = d.agent_id.clone();
    let other = if holder == "alpha" { "beta" } else { "alpha" };
    let agent_token = token(&app, "agent", Some(&holder)).await;

    // An agent cannot hand off as another agent, nor hand work to an agent.
    let mut as_other = payload("agent_to_human", &task_id, "operator-1");
    as_other["from"] = json!(other);
    let (s, body) = handoff(&app, &agent_token, as_other).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
    let (s, body) = handoff(
        &app,
        &agent_token,
        payload("human_to_agent", &task_id, other),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
    // Bad input changes nothing either.
    let mut empty = payload("agent_to_human", &task_id, "operator-1");
    empty["context_summary"] = json!(" ");
    let (s, body) = handoff(&app, &agent_token, empty).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(task(&app, id, "a").await["status"], "running");

    // The agent hands its running task to a person: the attempt ends.
    let (s, h) = handoff(
        &app,
        &agent_token,
        payload("agent_to_human", &task_id, "operator-1"),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{h}");
    assert_eq!(h["from"], holder.as_str());
    assert_eq!(h["to"], "operator-1");
    assert_eq!(h["task_status_from"], "running");
    assert_eq!(h["task_status_to"], "awaiting_human");
    assert_eq!(h["open_decisions"][0]["decision_id"], "dec-005");
    assert_eq!(h["artifacts"][0]["path"], "artifacts/vendors.xlsx");
    assert_eq!(task(&app, id, "a").await["status"], "awaiting_human");
    worker.wait_for_cancel(&d.attempt_id.to_string()).await;
    let (s, body) = report(
        &app.http,
        &d,
        &d.callback.token,
        json!({"status": "succeeded", "output": {"late": true}}),
    )
    .await;
    assert_eq!(
        s,
        StatusCode::CONFLICT,
        "a report of the ended attempt is stale: {body}"
    );
    let logged: Vec<(String, Value)> = sqlx::query_as(
        "SELECT kind, payload FROM orchestration_events
         WHERE run_id = $1::uuid AND task_id = $2::uuid AND kind = 'handoff.created'",
    )
    .bind(id)
    .bind(&task_id)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert_eq!(logged[0].1["handoff_id"], h["id"]);
    assert_eq!(logged[0].1["direction"], "agent_to_human");

    // Handing it to a person again changes nothing but is recorded; a
    // stakeholder hands it back to the other agent.
    let stakeholder = token(&app, "stakeholder", None).await;
    let (s, body) = handoff(&app, &stakeholder, payload("agent_to_human", &task_id, "x")).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
    let (s, back) = handoff(
        &app,
        &stakeholder,
        payload("human_to_agent", &task_id, other),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{back}");
    assert_eq!(back["task_status_from"], "awaiting_human");
    assert_eq!(back["task_status_to"], "queued");
    let message_id = back["message_id"].as_str().unwrap().to_owned();
    let inbox: Vec<(String, String, Option<String>, Option<uuid::Uuid>)> = sqlx::query_as(
        "SELECT r.agent_id, r.state, m.category, m.task_id
         FROM message_recipients r JOIN agent_messages m ON m.id = r.message_id
         WHERE r.message_id = $1::uuid",
    )
    .bind(&message_id)
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert_eq!(inbox.len(), 1, "{inbox:?}");
    assert_eq!(inbox[0].0, other);
    assert_eq!(inbox[0].1, "unread");
    assert_eq!(inbox[0].2.as_deref(), Some("HANDOFF"));
    assert_eq!(inbox[0].3.map(|u| u.to_string()), Some(task_id.clone()));
    let content: Value =
        sqlx::query_scalar("SELECT content FROM agent_messages WHERE id = $1::uuid")
            .bind(&message_id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        content["context_summary"],
        "Vendor negotiations stalled on payment terms."
    );

    // The task goes back to the agents, the receiving one first.
    let d2 = worker.dispatch(2).await;
    assert_eq!(d2.task.key, "a");
    assert_eq!(d2.agent_id, other);
    assert!(
        d2.feedback
            .as_deref()
            .unwrap_or("")
            .contains("Vendor negotiations"),
        "{:?}",
        d2.feedback
    );
    // A task that is not waiting for a person cannot be handed back.
    let (s, body) = handoff(
        &app,
        &stakeholder,
        payload("human_to_agent", &task_id, other),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "invalid_state");

    let (s, list) = app.get(&format!("/v1/handoffs?task={task_id}")).await;
    assert_eq!(s, StatusCode::OK, "{list}");
    let directions: Vec<&str> = list["handoffs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["direction"].as_str().unwrap())
        .collect();
    assert_eq!(directions, ["agent_to_human", "human_to_agent"]);
    let (s, one) = app
        .get(&format!("/v1/handoffs/{}", back["id"].as_str().unwrap()))
        .await;
    assert_eq!(s, StatusCode::OK, "{one}");
    assert_eq!(one, back);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handoffs_refuse_unknown_parties_and_changes_nothing() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let m = app
        .create_mission(json!({"goal": "refusals", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    let d = worker.dispatch(1).await;
    let task_id = d.task_id.to_string();

    // An operator must name the agent; unknown agents and tasks are 422.
    let (s, body) = handoff(&app, &app.token, payload("agent_to_human", &task_id, "op")).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "from_required", "{body}");
    let mut ghost = payload("agent_to_human", &task_id, "op");
    ghost["from"] = json!("ghost");
    let (s, body) = handoff(&app, &app.token, ghost).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "unknown_agent");
    let mut nowhere = payload(
        "agent_to_human",
        "00000000-0000-4000-8000-000000000000",
        "op",
    );
    nowhere["from"] = json!(d.agent_id);
    let (s, body) = handoff(&app, &app.token, nowhere).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "unknown_task");
    // A pending task cannot be handed to a person.
    let c = task(&app, id, "c").await;
    let mut pending = payload("agent_to_human", c["id"].as_str().unwrap(), "op");
    pending["from"] = json!(d.agent_id);
    let (s, body) = handoff(&app, &app.token, pending).await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "invalid_state");

    // Handing a person's task to an unknown agent is refused whole: the task stays with the person.
    let mut give = payload("agent_to_human", &task_id, "op");
    give["from"] = json!(d.agent_id);
    let (s, body) = handoff(&app, &app.token, give).await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    let (s, body) = handoff(
        &app,
        &app.token,
        payload("human_to_agent", &task_id, "ghost"),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "unknown_recipient");
    assert_eq!(task(&app, id, "a").await["status"], "awaiting_human");
    let (_, list) = app.get(&format!("/v1/handoffs?task={task_id}")).await;
    assert_eq!(list["handoffs"].as_array().unwrap().len(), 1);
    let (s, body) = app
        .get("/v1/handoffs/00000000-0000-4000-8000-000000000000")
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{body}");
    app.stop().await;
}
