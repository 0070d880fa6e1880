//! No request hangs past its deadline (`--request-timeout-secs`): one that
//! waits on a lock held for ever is answered 503 `unavailable`, its work is
//! dropped, and the service answers the next requests as before.

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::json;

use crate::helpers::*;

async fn retitle(app: &TestApp, id: &str) -> (StatusCode, serde_json::Value) {
    app.request(
        Method::PATCH,
        &format!("/v1/missions/{id}"),
        Some(json!({"title": "Tides"})),
        Some(&app.token),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_stuck_on_a_lock_is_answered_503_at_its_deadline() {
    let mut settings = test_settings();
    settings.run_engine = false;
    settings.connections.request_timeout = Duration::from_secs(2);
    let app = spawn_app_on(&fresh_database().await, settings).await;
    app.register_fleet("http://127.0.0.1:9", 1).await;
    let (s, m) = app
        .post(
            "/v1/missions",
            json!({"goal": "Write a note on tides", "autonomy": "approve"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{m}");
    let id = m["id"].as_str().expect("mission id").to_owned();

    // Someone holds the mission's row; an edit waits on it.
    let mut holder = app.pool.begin().await.expect("begin");
    sqlx::query("SELECT 1 FROM orchestration_runs WHERE id = $1::uuid FOR UPDATE")
        .bind(&id)
        .execute(&mut *holder)
        .await
        .expect("lock the mission");
    let started = Instant::now();
    let (s, body) = retitle(&app, &id).await;
    let took = started.elapsed();
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "unavailable", "{body}");
    assert!(
        took >= Duration::from_secs(2) && took < Duration::from_secs(10),
        "answered at the deadline, not before or much after: {took:?}"
    );
    holder.rollback().await.expect("release");

    // The dropped edit changed nothing, and the service carries on.
    let (s, after) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(s, StatusCode::OK, "{after}");
    assert!(
        after["title"].is_null(),
        "the timed-out edit was rolled back: {after}"
    );
    let (s, body) = retitle(&app, &id).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["title"], "Tides");
    app.stop().await;
}
