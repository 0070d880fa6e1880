//! The traps a new operator fell into (issue 28, item 7), each pinned by a
//! test that failed before: token commands that made a database of their
//! own, pages with a `next_cursor` to nowhere, a "more:" hint that lost the
//! filters, float noise and unbounded money, Rust type names in errors,
//! "a operator token", 400 for a body that is not JSON, unknown event kinds
//! accepted, and colour codes in logs that go to a file.

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;

use crate::{
    cli::{cli, command, run},
    helpers::{chain_plan, spawn_app},
};

/// A new token of `role` through the API.
async fn token(app: &crate::helpers::TestApp, role: &str) -> String {
    let (s, body) = app.post("/v1/tokens", json!({ "role": role })).await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    body["token"].as_str().expect("token").to_owned()
}

#[tokio::test]
async fn token_commands_never_create_a_database() {
    let dir = std::env::temp_dir().join(format!("no-db-{}", uuid::Uuid::new_v4()));
    let refused = run(&[
        "token",
        "create",
        "--role",
        "operator",
        "--data-dir",
        dir.to_str().expect("path"),
    ])
    .await;
    assert_eq!(refused.code, 1, "{refused:#?}");
    assert!(refused.stdout.is_empty(), "no token printed: {refused:#?}");
    assert!(refused.stderr.contains("never create"), "{refused:#?}");
    assert!(refused.stderr.contains("--url"), "{refused:#?}");
    assert!(!dir.exists(), "a database directory was made: {dir:?}");

    // With a database named, it says which one it used (without the password).
    let db_url = crate::helpers::fresh_database().await;
    let made = run(&[
        "token",
        "bootstrap",
        "--role",
        "operator",
        "--database-url",
        &db_url,
    ])
    .await
    .ok();
    let shown = db_url.rsplit_once('@').map_or(db_url.as_str(), |(_, h)| h);
    assert!(
        made.stderr.contains(&format!("of the database at {shown}")),
        "{made:#?}"
    );
}

#[tokio::test]
async fn pages_are_exact_and_the_more_hint_keeps_the_filters() {
    let app = spawn_app().await;
    app.register_fleet("http://127.0.0.1:9", 1).await;
    for _ in 0..3 {
        app.create_mission(json!({"goal": "chain", "plan": chain_plan()}))
            .await;
    }
    // A last page that is exactly full has no next page.
    let (_, page) = app.get("/v1/missions?limit=3").await;
    assert_eq!(page["missions"].as_array().map(Vec::len), Some(3));
    assert!(page["next_cursor"].is_null(), "{page}");
    let (_, page) = app.get("/v1/missions?limit=2").await;
    let next = page["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_owned();
    let (_, last) = app
        .get(&format!("/v1/missions?limit=2&cursor={next}"))
        .await;
    assert_eq!(last["missions"].as_array().map(Vec::len), Some(1));
    assert!(last["next_cursor"].is_null(), "{last}");
    let (_, tokens) = app.get("/v1/tokens?limit=1").await;
    assert!(
        tokens["next_cursor"].is_null(),
        "one token, one page: {tokens}"
    );

    // The CLI's hint for the next page keeps --status and --limit.
    let listed = cli(
        &app.url,
        &app.token,
        &[
            "mission",
            "list",
            "--status",
            "awaiting_approval",
            "--limit",
            "2",
        ],
    )
    .await
    .ok();
    assert!(
        listed.stderr.contains(&format!(
            "more: coordinator mission list --status awaiting_approval --limit 2 --cursor {next}"
        )),
        "{listed:#?}"
    );
    app.stop().await;
}

#[tokio::test]
async fn money_is_bounded_and_printed_for_people() {
    let app = spawn_app().await;
    app.register_fleet("http://127.0.0.1:9", 1).await;
    for budget in [json!(1e308), json!(-1), json!(1_000_000_001.0)] {
        let (s, body) = app
            .post(
                "/v1/missions",
                json!({"goal": "chain", "plan": chain_plan(), "budget": budget}),
            )
            .await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{budget}: {body}");
        assert_eq!(body["error"]["details"]["field"], "budget", "{body}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("1000000000"), "{message}");
    }
    let mut cheap = chain_plan();
    for task in cheap["tasks"].as_array_mut().expect("tasks") {
        task["estimated_cost"] = json!(0.004);
    }
    let m = app
        .create_mission(json!({"goal": "chain", "plan": cheap, "budget": 0.015}))
        .await;
    let id = m["id"].as_str().expect("id");
    let (s, body) = app
        .request(
            reqwest::Method::PATCH,
            &format!("/v1/missions/{id}"),
            Some(json!({"budget": 1e308})),
            Some(&app.token),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["details"]["field"], "budget", "{body}");
    // JSON stays exact; the text shows what was set, not a rounding of it.
    assert_eq!(m["budget"]["limit"], 0.015);
    let shown = cli(&app.url, &app.token, &["mission", "show", id])
        .await
        .ok()
        .stdout;
    assert!(shown.contains("0.00 spent of 0.015"), "{shown}");
    app.stop().await;
}

#[tokio::test]
async fn errors_speak_the_apis_words() {
    let app = spawn_app().await;
    let message = |body: &Value| {
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };

    let (s, body) = app.get("/v1/missions?status=done").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    let m = message(&body);
    assert!(m.contains("unknown mission status 'done'"), "{m}");
    assert!(m.contains("expected one of: planning"), "{m}");
    assert!(!m.contains("MissionStatus"), "{m}");

    let (s, body) = app.post("/v1/missions", json!([])).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    let m = message(&body);
    assert!(!m.contains("CreateMission") && !m.contains("struct"), "{m}");
    assert!(m.contains("JSON object"), "{m}");

    let (s, body) = app.get("/v1/missions/x").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(message(&body), "'x' is not a valid id (a UUID)");
    assert_eq!(body["error"]["details"]["field"], "id");

    let operator = token(&app, "operator").await;
    let (s, body) = app
        .request(
            reqwest::Method::POST,
            "/v1/tokens",
            Some(json!({"role": "operator"})),
            Some(&operator),
        )
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
    assert!(message(&body).starts_with("an operator token"), "{body}");
    app.stop().await;
}

#[tokio::test]
async fn a_body_that_is_not_json_is_a_415() {
    let app = spawn_app().await;
    let http = reqwest::Client::new();
    for content_type in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
    ] {
        let mut req = http
            .post(format!("{}/v1/missions", app.url))
            .bearer_auth(&app.token)
            .body(r#"{"goal": "g"}"#);
        if let Some(ct) = content_type {
            req = req.header("content-type", ct);
        }
        let resp = req.send().await.expect("send");
        assert_eq!(
            resp.status(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "{content_type:?}"
        );
        let body: Value = resp.json().await.expect("json");
        assert_eq!(body["error"]["code"], "unsupported_media_type", "{body}");
    }
    // An optional body too, when one is sent.
    let resp = http
        .post(format!(
            "{}/v1/missions/{}/approve",
            app.url,
            uuid::Uuid::nil()
        ))
        .bearer_auth(&app.token)
        .body(r#"{"reason": "x"}"#)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    // The document says so.
    let (_, doc) = app.get("/openapi.json").await;
    assert!(
        doc["paths"]["/v1/missions"]["post"]["responses"]["415"].is_object(),
        "415 is documented"
    );
    assert_eq!(doc["servers"][0]["url"], "/", "{}", doc["servers"]);
    app.stop().await;
}

#[tokio::test]
async fn unknown_event_kinds_are_refused_naming_what_is_allowed() {
    let app = spawn_app().await;
    // Shaped like a kind but none of the log's: 422 (`Task!` is a 400).
    let (s, body) = app.get("/v1/events?kind=bogus.kind").await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "unknown_event_kind", "{body}");
    let m = body["error"]["message"].as_str().unwrap_or_default();
    assert!(m.contains("'bogus.kind' is not an event kind"), "{m}");
    assert!(m.contains("task.*"), "{m}");
    let (s, body) = app
        .get("/v1/events?kind=task.*,mission.status_changed")
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");

    let (s, body) = app
        .post(
            "/v1/webhooks",
            json!({"url": "https://example.com/hook", "events": ["nonsense.kind"],
                   "secret": "0123456789abcdef"}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["details"]["field"], "events", "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("'nonsense.kind' is not an event kind"),
        "{body}"
    );
    // A mistyped constraint key is named with the key meant.
    let (s, body) = app
        .post(
            "/v1/missions",
            json!({"goal": "g", "constraints": {"depht": "deep"}}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        body["error"]["details"]["field"], "constraints.depht",
        "{body}"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("did you mean 'depth'"),
        "{body}"
    );
    // Unknown query keys are named, with the ones allowed.
    let (s, body) = app.get("/v1/missions?stauts=executing").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("stauts"),
        "{body}"
    );
    assert!(
        body["error"]["details"]["expected"]
            .as_array()
            .is_some_and(|e| e.iter().any(|k| k == "status")),
        "{body}"
    );
    app.stop().await;
}

#[tokio::test]
async fn logs_to_a_pipe_carry_no_colour_codes() {
    let db_url = crate::helpers::fresh_database().await;
    let mut child = command(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--database-url",
        &db_url,
        "--no-engine",
        "--log",
        "debug",
    ])
    .spawn()
    .expect("spawn serve");
    let mut stderr = child.stderr.take().expect("stderr");
    let mut text = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !String::from_utf8_lossy(&text).contains("listening on") {
        let n = tokio::time::timeout_at(deadline, stderr.read(&mut buf))
            .await
            .expect("serve started in time")
            .expect("read");
        assert!(n > 0, "serve exited: {}", String::from_utf8_lossy(&text));
        text.extend_from_slice(&buf[..n]);
    }
    child.kill().await.expect("kill");
    let text = String::from_utf8_lossy(&text);
    assert!(text.contains("DEBUG") || text.contains("INFO"), "{text}");
    assert!(!text.contains('\u{1b}'), "colour codes in a pipe: {text:?}");
}
