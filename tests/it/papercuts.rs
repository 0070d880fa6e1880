//! Papercuts a new user meets in the first hour (issue 23): each test fails
//! on the behaviour that was there before.

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_does_not_fit_names_the_field_and_the_expected_ones() {
    let app = spawn_app().await;
    let worker = spawn_worker(10).await;
    app.register_fleet(&worker.url(), 1).await;

    // A misnamed field at the top.
    let (s, body) = app
        .request(
            Method::PUT,
            "/v1/agents/researcher/beliefs",
            Some(json!({"beliefs": [], "subject": "s", "content": "c", "certainty": 0.5})),
            Some(&app.token),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    let e = &body["error"];
    assert_eq!(e["code"], "invalid_request", "{body}");
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown field `beliefs`")),
        "{body}"
    );
    assert_eq!(e["details"]["field"], "beliefs", "{body}");
    let expected: Vec<&str> = e["details"]["expected"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for f in ["category", "subject", "content", "certainty", "reason"] {
        assert!(expected.contains(&f), "{f} not in {expected:?}");
    }

    // A wrong type deep in a plan names its path.
    let (s, body) = app
        .post(
            "/v1/missions",
            json!({"goal": "g", "plan": {"tasks": [{"id": "a", "title": "A", "task_type": "research",
                                                    "estimated_cost": "cheap"}]}}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        body["error"]["details"]["field"], "plan.tasks[0].estimated_cost",
        "{body}"
    );

    // The same through a tool's arguments.
    let (s, body) = app
        .post(
            "/v1/tools/create_mission",
            json!({"goal": "g", "autonomy": 7}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"]["details"].is_object(), "{body}");

    // Nothing was created.
    let (_, list) = app.get("/v1/missions").await;
    assert_eq!(list["missions"].as_array().map(Vec::len), Some(0), "{list}");
    app.stop().await;
}
