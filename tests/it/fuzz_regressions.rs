//! Regressions found by `scripts/fuzz.sh` (schemathesis against the served
//! OpenAPI document): each test replays what the fuzzer sent.

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::*;

fn kinds(body: &Value) -> Vec<String> {
    body["events"]
        .as_array()
        .unwrap_or_else(|| panic!("no events in {body}"))
        .iter()
        .map(|e| e["kind"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// `GET /v1/events?mission=…` or `?agent=…` answered 500 (a NULL `wanted`
/// column) as soon as the log held an event without a mission or without an
/// `agent_id` in its payload: the filter compared NULL, not false.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn event_filters_skip_events_without_a_mission_or_an_agent() {
    let app = spawn_app().await;
    app.register_fleet("http://127.0.0.1:9", 1).await;
    let mission = app
        .create_mission(
            json!({"goal": "Write a short report on tidal power", "autonomy": "approve"}),
        )
        .await;
    let id = mission["id"].as_str().expect("mission id").to_owned();
    let (status, body) = app
        .post(
            "/v1/reservations",
            json!({"scope": "docs/*", "agent_id": "planner", "ttl_secs": 60}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    // The shapes that produced NULL must be in the log, or this test proves nothing.
    let (no_mission, no_agent): (i64, i64) = sqlx::query_as(
        "SELECT count(*) FILTER (WHERE run_id IS NULL),
                count(*) FILTER (WHERE payload->>'agent_id' IS NULL AND attempt_id IS NULL)
         FROM orchestration_events",
    )
    .fetch_one(&app.pool)
    .await
    .expect("count events");
    assert!(no_mission > 0 && no_agent > 0, "{no_mission} {no_agent}");

    let (status, body) = app
        .get(&format!("/v1/events?mission={}", Uuid::new_v4()))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(kinds(&body).is_empty(), "{body}");

    // The feed shows events once every earlier transaction on the server
    // has committed (commit order): wait for the mission's to appear.
    let body = wait_until("the mission's events in the feed", || async {
        let (status, body) = app.get(&format!("/v1/events?mission={id}")).await;
        assert_eq!(status, StatusCode::OK, "{body}");
        kinds(&body)
            .contains(&"mission.created".to_owned())
            .then_some(body)
    })
    .await;
    assert!(
        body["events"]
            .as_array()
            .is_some_and(|events| events.iter().all(|e| e["mission_id"] == id.as_str()))
    );

    // The feed shows events once every earlier transaction has committed
    // (commit order), so the newest may take a moment to appear.
    let body = wait_until("the planner's events in the feed", || async {
        let (status, body) = app.get("/v1/events?agent=planner").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        (!kinds(&body).is_empty()).then_some(body)
    })
    .await;
    let planner = kinds(&body);
    assert!(planner.iter().all(|k| !k.starts_with("mission.")), "{body}");

    let (status, body) = app
        .get(&format!("/v1/events?mission={id}&agent=nobody&role=nobody"))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(kinds(&body).is_empty(), "{body}");
    app.stop().await;
}

/// A malformed path or query parameter is a 400 (`invalid_path` /
/// `invalid_query`) before any handler runs, so every operation that reads
/// one documents 400 — the fuzzer found a dozen that did not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_with_input_documents_400() {
    let app = spawn_app().await;
    let (status, doc) = app.request(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(status, StatusCode::OK);
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            let has_params = op["parameters"].as_array().is_some_and(|p| !p.is_empty());
            if has_params || op.get("requestBody").is_some() {
                checked += 1;
                assert!(
                    op["responses"].get("400").is_some(),
                    "{method} {path} can answer 400 but does not document it"
                );
            }
        }
    }
    assert!(checked > 50, "only {checked} operations with input");

    for (path, code) in [
        ("/v1/messages/null,null", "invalid_path"),
        ("/v1/missions/null,null/commitment", "invalid_path"),
        ("/v1/agents/planner/desires?nope=1", "invalid_query"),
    ] {
        let (status, body) = app.get(path).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
        assert_eq!(body["error"]["code"], code, "{path}: {body}");
    }
    app.stop().await;
}

/// A NUL character in a query parameter or a JSON string reached PostgreSQL,
/// which refuses it in text and jsonb: a 500 for what is bad input. Now a
/// 422 `unstorable_value`: the request is one the document allows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nul_characters_in_input_are_a_422() {
    let app = spawn_app().await;
    app.register_fleet("http://127.0.0.1:9", 1).await;
    let (status, body) = app.get("/v1/agents/reviewer/beliefs?subject=%00").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "unstorable_value", "{body}");

    let (status, body) = app
        .post(
            "/v1/missions",
            json!({"goal": "Write a report\u{0}on tidal power", "autonomy": "approve"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let (status, body) = app
        .request(
            Method::PUT,
            "/v1/agents/reviewer/beliefs",
            Some(json!({"category": "environment", "subject": "tides",
                        "content": "high\u{0}low", "certainty": 0.5})),
            Some(&app.token),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    // Nothing was stored.
    let (status, body) = app.get("/v1/missions").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["missions"].as_array().map(Vec::len), Some(0), "{body}");
    app.stop().await;
}

/// `--checks all` (seed 9001): `POST /v1/org-spec/validate` answered 200 to
/// `[null, null]`, a body its schema (an object) refuses; and the bodies
/// with integral floats for integer fields (`"version": 2379.0`) were
/// refused though JSON Schema counts them as integers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_document_and_the_handlers_agree_on_bodies_the_fuzzer_sent() {
    let app = spawn_app().await;
    let (s, body) = app.post("/v1/org-spec/validate", json!([null, null])).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["details"]["field"], "body", "{body}");
    let (s, body) = app.post("/v1/org-spec/validate", json!({})).await;
    assert_eq!(s, StatusCode::OK, "an object is judged: {body}");
    assert_eq!(body["valid"], false);

    app.register_fleet("http://127.0.0.1:9", 1).await;
    let (s, body) = app
        .post(
            "/v1/reservations",
            json!({"scope": "docs/*", "agent_id": "planner", "ttl_secs": 3655.0}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    let (s, body) = app
        .post(
            "/v1/reservations",
            json!({"scope": "notes/*", "agent_id": "planner", "ttl_secs": 60.5}),
        )
        .await;
    assert_eq!(
        s,
        StatusCode::BAD_REQUEST,
        "a fraction is no integer: {body}"
    );

    // A number near f64::MAX in free-form JSON was stored, then could not
    // be read back (jsonb prints it as a 309-digit decimal): every read of
    // the profile answered 500. It is refused on the way in (422: the
    // document allows any number there, storage does not).
    let huge = r#"{"decision_style": "exception-based", "risk_tolerance": "conservative",
                   "communication_preferences": {"x": 1.7976931348623157e308}}"#;
    let resp = app
        .http
        .put(format!("{}/v1/governance/profile", app.url))
        .bearer_auth(&app.token)
        .header("content-type", "application/json")
        .body(huge)
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status(), StatusCode::UNPROCESSABLE_ENTITY);
    let (s, body) = app.get("/v1/governance/profile").await;
    assert!(
        s == StatusCode::OK || s == StatusCode::NOT_FOUND,
        "{s} {body}"
    );
}

/// A cursor past the newest event (`after=N`, N above every id) replayed
/// the whole log from event 1 (found by the stream fuzzer); it now starts
/// at the end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_past_the_newest_event_does_not_replay_the_log() {
    let app = spawn_app().await;
    app.register_fleet("http://127.0.0.1:9", 1).await;
    let (s, body) = app
        .post(
            "/v1/missions",
            json!({"goal": "Write a short note on tides", "autonomy": "approve"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    // The commit-ordered feed shows an event once no older transaction is
    // still open, so the mission's events appear within a moment.
    wait_until("the mission's events in the feed", || async {
        let (s, body) = app.get("/v1/events?after=0").await;
        (s == StatusCode::OK && body["events"].as_array().is_some_and(|e| !e.is_empty()))
            .then_some(())
    })
    .await;
    let (s, body) = app.get("/v1/events?after=100000000").await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["events"], json!([]), "nothing is newer: {body}");
    app.stop().await;
}

/// The intruder pass of `scripts/fuzz.sh` (another workspace's admin):
/// `POST /v1/decisions` with a client-chosen id another workspace already
/// used broke the primary key, a 500. It is the 409 of a reused id, and
/// says nothing of the other workspace's decision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_id_of_another_workspace_is_a_409_not_a_500() {
    let app = spawn_app().await;
    let id = uuid::Uuid::new_v4();
    let body = json!({"id": id, "description": "Hire a contractor for the audit"});
    let (s, mine) = app.post("/v1/decisions", body.clone()).await;
    assert_eq!(s, StatusCode::CREATED, "{mine}");
    let theirs = crate::helpers::other_workspace_token(&app).await;
    let (s, answer) = app
        .request(Method::POST, "/v1/decisions", Some(body), Some(&theirs))
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "{answer}");
    assert_eq!(answer["error"]["code"], "decision_id_reused", "{answer}");
    assert!(
        !answer.to_string().contains("Hire a contractor"),
        "{answer}"
    );
    app.stop().await;
}
