//! Authentication, roles, tenant isolation and bad input: clear 4xx, JSON
//! bodies, nothing changed.

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

fn assert_error(body: &Value, code: &str) {
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{body}"
    );
    assert!(body["error"].get("details").is_some(), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_without_a_valid_token_are_refused() {
    let app = spawn_app().await;
    for token in [None, Some("nope"), Some("")] {
        let (status, body) = app.request(Method::GET, "/v1/missions", None, token).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{token:?}");
        assert_error(&body, "unauthorized");
        let (status, _) = app
            .request(
                Method::POST,
                "/v1/missions",
                Some(json!({"goal": "x"})),
                token,
            )
            .await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    // Health probes need no token.
    let (status, _) = app.request(Method::GET, "/healthz", None, None).await;
    assert_eq!(status, StatusCode::OK);
    let (status, body) = app.request(Method::GET, "/readyz", None, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (n,): (i64,) = sqlx::query_as("SELECT count(*) FROM orchestration_runs")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(n, 0);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn roles_and_workspaces_are_enforced() {
    let app = spawn_app().await;
    let worker = spawn_worker(10).await;
    app.register_fleet(&worker.url(), 1).await;
    let m = app
        .create_mission(json!({"goal": "Compare three vendors and recommend one"}))
        .await;
    let id = m["id"].as_str().unwrap();

    let (status, body) = app.post("/v1/tokens", json!({"role": "stakeholder"})).await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let stakeholder = body["token"].as_str().unwrap().to_owned();
    let (status, body) = app.post("/v1/tokens", json!({"role": "worker"})).await;
    assert_eq!(status, StatusCode::CREATED);
    let worker_token = body["token"].as_str().unwrap().to_owned();

    // A stakeholder may read and approve but not create missions or tokens.
    let (status, body) = app
        .request(
            Method::POST,
            "/v1/missions",
            Some(json!({"goal": "x"})),
            Some(&stakeholder),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_error(&body, "forbidden");
    let (status, _) = app
        .request(
            Method::POST,
            "/v1/tokens",
            Some(json!({"role": "admin"})),
            Some(&stakeholder),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = app
        .request(
            Method::POST,
            &format!("/v1/missions/{id}/cancel"),
            None,
            Some(&worker_token),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = app
        .request(
            Method::POST,
            &format!("/v1/missions/{id}/approve"),
            None,
            Some(&stakeholder),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // A token of another workspace sees nothing of this one.
    let other_token = other_workspace_token(&app).await;
    let (status, body) = app
        .request(
            Method::GET,
            &format!("/v1/missions/{id}"),
            None,
            Some(&other_token),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_error(&body, "not_found");
    let (status, _) = app
        .request(
            Method::POST,
            &format!("/v1/missions/{id}/cancel"),
            None,
            Some(&other_token),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (_, list) = app
        .request(Method::GET, "/v1/missions", None, Some(&other_token))
        .await;
    assert_eq!(list["missions"].as_array().unwrap().len(), 0);
    let (_, agents) = app
        .request(Method::GET, "/v1/agents", None, Some(&other_token))
        .await;
    assert_eq!(agents["agents"].as_array().unwrap().len(), 0);
    // Its own agent ids do not collide with ours.
    let (status, _) = app
        .request(
            Method::POST,
            "/v1/agents",
            Some(json!({"agent_id": "planner", "role": "r", "endpoint_url": "http://127.0.0.1:9"})),
            Some(&other_token),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_a_clear_4xx_and_changes_nothing() {
    let app = spawn_app().await;
    let worker = spawn_worker(10).await;
    app.register_fleet(&worker.url(), 1).await;

    let cases: Vec<(Method, &str, Option<Value>, StatusCode, &str)> = vec![
        (
            Method::POST,
            "/v1/missions",
            Some(json!({"goal": "   "})),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            Method::POST,
            "/v1/missions",
            Some(json!({"goal": "x", "autonomy": "yolo"})),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            Method::POST,
            "/v1/missions",
            Some(json!({"goal": "x", "budget": -1})),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            Method::POST,
            "/v1/missions",
            Some(json!({"goal": "x", "constraints": [1]})),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            Method::POST,
            "/v1/missions",
            Some(json!({"goal": "x", "surprise": true})),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            Method::POST,
            "/v1/missions",
            Some(json!({"goal": "x".repeat(10_001)})),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            Method::GET,
            "/v1/missions/not-a-uuid",
            None,
            StatusCode::BAD_REQUEST,
            "invalid_path",
        ),
        (
            Method::GET,
            "/v1/missions/00000000-0000-0000-0000-000000000000",
            None,
            StatusCode::NOT_FOUND,
            "not_found",
        ),
        (
            Method::GET,
            "/v1/missions?status=done",
            None,
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            Method::GET,
            "/v1/missions?limit=0",
            None,
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            Method::POST,
            "/v1/agents",
            Some(json!({"agent_id": "planner", "role": "r", "endpoint_url": "http://127.0.0.1:9"})),
            StatusCode::CONFLICT,
            "agent_exists",
        ),
        (
            Method::POST,
            "/v1/agents",
            Some(json!({"agent_id": "bad id", "role": "r", "endpoint_url": "http://x"})),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            Method::POST,
            "/v1/agents",
            Some(json!({"agent_id": "ok", "role": "r", "endpoint_url": "ftp://x"})),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            Method::POST,
            "/v1/agents",
            Some(
                json!({"agent_id": "ok", "role": "r", "endpoint_url": "http://127.0.0.1:9", "max_concurrency": 0}),
            ),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
        (
            Method::GET,
            "/v1/nothing-here",
            None,
            StatusCode::NOT_FOUND,
            "not_found",
        ),
        (
            Method::DELETE,
            "/v1/missions",
            None,
            StatusCode::METHOD_NOT_ALLOWED,
            "method_not_allowed",
        ),
        (
            Method::POST,
            "/v1/attempts/00000000-0000-0000-0000-000000000000/result",
            Some(json!({"status": "succeeded"})),
            // An unknown attempt answers like a wrong token (no id oracle).
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        ),
        (
            Method::POST,
            "/v1/missions/00000000-0000-0000-0000-000000000000/review",
            Some(json!({"decision": "maybe"})),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        ),
    ];
    for (method, path, body, status, code) in cases {
        let (got, resp) = app
            .request(method.clone(), path, body, Some(&app.token))
            .await;
        assert_eq!(got, status, "{method} {path}: {resp}");
        assert_error(&resp, code);
    }

    // Malformed JSON and a missing content type.
    let resp = app
        .http
        .post(format!("{}/v1/missions", app.url))
        .bearer_auth(&app.token)
        .header("content-type", "application/json")
        .body("{\"goal\": ")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    assert_error(&resp.json::<Value>().await.unwrap(), "invalid_json");
    let resp = app
        .http
        .post(format!("{}/v1/missions", app.url))
        .bearer_auth(&app.token)
        .body("{\"goal\": \"x\"}")
        .send()
        .await
        .unwrap();
    // Without a JSON Content-Type: 415, the status for a body in the wrong format.
    assert_eq!(resp.status().as_u16(), 415);
    // An oversized body.
    let big = json!({"goal": "x", "constraints": {"blob": "y".repeat(2 * 1024 * 1024)}});
    let (status, body) = app.post("/v1/missions", big).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");

    let (n,): (i64,) = sqlx::query_as("SELECT count(*) FROM orchestration_runs")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(n, 0);
    let (agents,): (i64,) = sqlx::query_as("SELECT count(*) FROM agents")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(agents, 5);
    app.stop().await;
}
