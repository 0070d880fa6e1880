//! Tool-use policies: the policy reaches the worker in its dispatch, the
//! worker asks before guarded calls with its attempt token, the policy
//! auto-approves, denies or escalates, people resolve by id (REST and the
//! chat tool) with a rationale, budgets add up per attempt, and an
//! unanswered request times out to the policy's default.

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};

use coordinator::worker::protocol::DispatchRequest;

use crate::{governance::token, helpers::*};

/// A chain plan whose first task carries `policy` as its tool policy.
fn plan_with_policy(policy: Value) -> Value {
    let mut plan = chain_plan();
    plan["tasks"][0]["inputs"] = json!({ "tool_policy": policy });
    plan
}

/// Starts a mission with `policy` on its first task; returns the first dispatch.
async fn dispatched(app: &TestApp, worker: &ManualWorker, policy: Value) -> DispatchRequest {
    app.register_fleet(&worker.url, 1).await;
    app.create_mission(
        json!({"goal": "chain", "autonomy": "autonomous", "plan": plan_with_policy(policy)}),
    )
    .await;
    worker.dispatch(1).await
}

/// Asks for an approval as the worker, with the attempt's token.
async fn ask(app: &TestApp, d: &DispatchRequest, body: Value) -> (StatusCode, Value) {
    let url = d
        .callback
        .tool_approvals_url
        .clone()
        .expect("tool_approvals_url");
    let path = url.strip_prefix(&app.url).expect("same server").to_owned();
    app.request(Method::POST, &path, Some(body), Some(&d.callback.token))
        .await
}

/// Polls a request as the worker.
async fn poll(app: &TestApp, d: &DispatchRequest, id: &str) -> (StatusCode, Value) {
    app.request(
        Method::GET,
        &format!("/v1/attempts/{}/tool-approvals/{id}", d.attempt_id),
        None,
        Some(&d.callback.token),
    )
    .await
}

async fn events_of(app: &TestApp, mission: uuid::Uuid, kind: &str) -> Vec<Value> {
    let (status, page) = app
        .get(&format!("/v1/missions/{mission}/events?limit=500"))
        .await;
    assert_eq!(status, StatusCode::OK, "{page}");
    page["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["kind"] == kind)
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_policy_judges_each_call_and_people_resolve_escalations_by_id() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    let policy = json!({
        "allowed_tools": ["read_file", "write_file"],
        "sensitive": {"paths": ["migrations/**"], "max_diff_lines": 100}
    });
    let d = dispatched(&app, &worker, policy.clone()).await;
    // The worker got the policy and where to ask.
    let sent = serde_json::to_value(&d.task.tool_policy).unwrap();
    assert_eq!(sent["allowed_tools"], policy["allowed_tools"], "{sent}");
    assert_eq!(sent["sensitive"]["max_diff_lines"], 100);

    // Allowed and harmless: approved at once by the policy.
    let (s, ok) = ask(
        &app,
        &d,
        json!({"tool": "read_file", "paths": ["src/lib.rs"]}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{ok}");
    assert_eq!(ok["status"], "approved");
    assert_eq!(ok["verdict"], "auto_approved");
    assert_eq!(ok["granted"], true);
    assert_eq!(ok["resolver"], "policy");

    // Not on the list: denied, with the reason.
    let (s, no) = ask(&app, &d, json!({"tool": "shell"})).await;
    assert_eq!(s, StatusCode::CREATED, "{no}");
    assert_eq!(no["status"], "denied");
    assert_eq!(no["granted"], false);
    assert!(
        no["reasons"][0]
            .as_str()
            .unwrap()
            .contains("not in the allowed list"),
        "{no}"
    );

    // A protected path and a big diff: pending, however auto-approving the policy is.
    let (s, pending) = ask(
        &app,
        &d,
        json!({"tool": "write_file", "paths": ["migrations/001.sql"], "diff_lines": 150}),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{pending}");
    assert_eq!(pending["status"], "pending");
    assert_eq!(pending["granted"], Value::Null);
    assert_eq!(pending["reasons"].as_array().unwrap().len(), 2, "{pending}");
    let id = pending["id"].as_str().unwrap().to_owned();

    // It is listed for people, and the worker sees it pending.
    let (s, list) = app.get("/v1/tool-approvals?status=pending").await;
    assert_eq!(s, StatusCode::OK, "{list}");
    let ids: Vec<&str> = list["tool_approvals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec![id.as_str()]);
    let (s, seen) = poll(&app, &d, &id).await;
    assert_eq!(s, StatusCode::OK, "{seen}");
    assert_eq!(seen["status"], "pending");

    // Another token cannot ask or poll for this attempt; an agent cannot resolve.
    let (s, _) = app
        .request(
            Method::GET,
            &format!("/v1/attempts/{}/tool-approvals/{id}", d.attempt_id),
            None,
            Some(&app.token),
        )
        .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let agent = token(&app, "agent", Some("engineer")).await;
    let resolve = format!("/v1/tool-approvals/{id}/resolve");
    let body = json!({"outcome": "approved", "rationale": "schema change reviewed"});
    let (s, _) = app
        .request(Method::POST, &resolve, Some(body.clone()), Some(&agent))
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    // A rationale is required.
    let stakeholder = token(&app, "stakeholder", None).await;
    let (s, e) = app
        .request(
            Method::POST,
            &resolve,
            Some(json!({"outcome": "approved", "rationale": " "})),
            Some(&stakeholder),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{e}");

    // A stakeholder approves with a rationale; the worker sees it granted.
    let (s, done) = app
        .request(
            Method::POST,
            &resolve,
            Some(body.clone()),
            Some(&stakeholder),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{done}");
    assert_eq!(done["status"], "approved");
    assert_eq!(done["rationale"], "schema change reviewed");
    let (_, seen) = poll(&app, &d, &id).await;
    assert_eq!(seen["granted"], true, "{seen}");

    // The same outcome again changes nothing; the other outcome is refused.
    let (s, again) = app
        .request(Method::POST, &resolve, Some(body), Some(&stakeholder))
        .await;
    assert_eq!(s, StatusCode::OK, "{again}");
    assert_eq!(again["resolved_at"], done["resolved_at"]);
    let (s, e) = app
        .request(
            Method::POST,
            &resolve,
            Some(json!({"outcome": "denied", "rationale": "changed my mind"})),
            Some(&stakeholder),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "{e}");
    assert_eq!(e["error"]["code"], "approval_already_resolved");
    // A request the policy settled cannot be overruled either.
    let (s, _) = app
        .request(
            Method::POST,
            &format!("/v1/tool-approvals/{}/resolve", no["id"].as_str().unwrap()),
            Some(json!({"outcome": "approved", "rationale": "please"})),
            Some(&stakeholder),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT);

    // A retry of the same request id returns it without a second row.
    let retry = json!({"id": id, "tool": "write_file"});
    let (s, r) = ask(&app, &d, retry).await;
    assert_eq!(s, StatusCode::OK, "{r}");
    assert_eq!(r["status"], "approved");
    let (s, e) = ask(&app, &d, json!({"id": id, "tool": "read_file"})).await;
    assert_eq!(s, StatusCode::CONFLICT, "{e}");

    // The worker reports the call it made.
    let (s, r) = app
        .request(
            Method::POST,
            &format!("/v1/attempts/{}/tool-calls", d.attempt_id),
            Some(
                json!({"tool": "write_file", "approval_id": id, "ok": true, "summary": "wrote it"}),
            ),
            Some(&d.callback.token),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{r}");

    // Everything is on the mission's log, rationale included.
    let requested = events_of(&app, d.mission_id, "tool.approval_requested").await;
    assert_eq!(requested.len(), 3);
    let resolved = events_of(&app, d.mission_id, "tool.approval_resolved").await;
    assert_eq!(resolved.len(), 3, "two by the policy, one by a person");
    let by_person: Vec<&Value> = resolved
        .iter()
        .filter(|e| e["payload"]["approval_id"] == id.as_str())
        .collect();
    assert_eq!(by_person.len(), 1);
    assert_eq!(
        by_person[0]["payload"]["rationale"],
        "schema change reviewed"
    );
    assert_eq!(by_person[0]["payload"]["approval_status"], "approved");
    let called = events_of(&app, d.mission_id, "tool.called").await;
    assert_eq!(called.len(), 1);
    assert_eq!(called[0]["payload"]["tool"], "write_file");

    // Once the attempt is over, it can ask no more.
    succeed(&app.http, &d, json!({"ok": true}), 0.0).await;
    let (s, e) = ask(&app, &d, json!({"tool": "read_file"})).await;
    assert_eq!(s, StatusCode::CONFLICT, "{e}");
    assert_eq!(e["error"]["code"], "stale_attempt");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budgets_add_up_over_an_attempts_requests() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    let d = dispatched(
        &app,
        &worker,
        json!({"budget": {"max_tokens": 1000, "max_files_changed": 2}}),
    )
    .await;
    let (_, a) = ask(&app, &d, json!({"tool": "llm", "tokens": 600})).await;
    assert_eq!(a["status"], "approved", "{a}");
    // 600 + 400 = 1000: at the limit.
    let (_, b) = ask(
        &app,
        &d,
        json!({"tool": "llm", "tokens": 400, "files_changed": 2}),
    )
    .await;
    assert_eq!(b["status"], "approved", "{b}");
    // 1000 + 1 > 1000.
    let (_, c) = ask(&app, &d, json!({"tool": "llm", "tokens": 1})).await;
    assert_eq!(c["status"], "denied", "{c}");
    assert_eq!(
        c["reasons"][0],
        "token budget exceeded: 1000 used + 1 requested > 1000"
    );
    let (_, f) = ask(&app, &d, json!({"tool": "edit", "files_changed": 1})).await;
    assert_eq!(f["status"], "denied", "{f}");
    // Bad input changes nothing.
    let (s, e) = ask(&app, &d, json!({"tool": "llm", "tokens": -1})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{e}");
    let (s, e) = ask(&app, &d, json!({"tool": "llm", "colour": "red"})).await;
    assert!(s.is_client_error(), "{s} {e}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unanswered_request_times_out_to_the_policy_default() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    let d = dispatched(
        &app,
        &worker,
        json!({"auto_approve": false, "approval_timeout_secs": 1}),
    )
    .await;
    let (_, p) = ask(&app, &d, json!({"tool": "search"})).await;
    assert_eq!(p["status"], "pending", "{p}");
    assert_eq!(p["timeout_outcome"], "denied");
    let id = p["id"].as_str().unwrap().to_owned();
    let timed_out = wait_until("the request to time out", || async {
        let (_, seen) = poll(&app, &d, &id).await;
        (seen["status"] == "timed_out").then_some(seen)
    })
    .await;
    assert_eq!(timed_out["granted"], false);
    assert_eq!(timed_out["resolver"], "timeout");
    // Too late to resolve it.
    let (s, e) = app
        .post(
            &format!("/v1/tool-approvals/{id}/resolve"),
            json!({"outcome": "approved", "rationale": "late"}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "{e}");
    assert_eq!(
        events_of(&app, d.mission_id, "tool.approval_resolved")
            .await
            .len(),
        1
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_chat_tool_resolves_a_request_by_id() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    let d = dispatched(&app, &worker, json!({"auto_approve": false})).await;
    let (_, p) = ask(&app, &d, json!({"tool": "deploy"})).await;
    let id = p["id"].as_str().unwrap();
    let (s, body) = app
        .post(
            "/v1/tools/resolve_tool_approval",
            json!({"approval_id": id, "outcome": "denied", "rationale": "not on a Friday"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["status"], "denied");
    let (_, seen) = poll(&app, &d, id).await;
    assert_eq!(seen["granted"], false);
    assert_eq!(seen["rationale"], "not on a Friday");
    app.stop().await;
}
