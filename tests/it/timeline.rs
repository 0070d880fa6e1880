//! The mission timeline and snapshots: entries in order with every
//! category the mission produced, and snapshots that equal a replay of the
//! log to their `seq`, the last one the live task statuses.

use std::collections::BTreeMap;

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_timeline_and_snapshots_project_the_event_log() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    let http = reqwest::Client::new();
    let first = worker.dispatch(1).await;
    // A tool call and an auto-approved request on the way.
    let (s, _) = app
        .request(
            Method::POST,
            &format!("/v1/attempts/{}/tool-approvals", first.attempt_id),
            Some(json!({"tool": "search"})),
            Some(&first.callback.token),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED);
    let (s, _) = app
        .request(
            Method::POST,
            &format!("/v1/attempts/{}/tool-calls", first.attempt_id),
            Some(json!({"tool": "search"})),
            Some(&first.callback.token),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    succeed(&http, &first, json!({"n": 1}), 0.0).await;
    let second = worker.dispatch(2).await;
    succeed(&http, &second, json!({"n": 2}), 0.0).await;
    let third = worker.dispatch(3).await;
    succeed(&http, &third, json!({"n": 3}), 0.0).await;
    app.wait_for_status(id, &["completed"]).await;

    let (s, t) = app.get(&format!("/v1/missions/{id}/timeline")).await;
    assert_eq!(s, StatusCode::OK, "{t}");
    let entries = t["entries"].as_array().unwrap();
    let seqs: Vec<i64> = entries.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    let mut sorted = seqs.clone();
    sorted.sort_unstable();
    assert_eq!(seqs, sorted, "in seq order");
    let cats: Vec<&str> = entries
        .iter()
        .map(|e| e["category"].as_str().unwrap())
        .collect();
    assert_eq!(cats[0], "plan");
    assert_eq!(cats.iter().filter(|c| **c == "step_started").count(), 3);
    assert_eq!(cats.iter().filter(|c| **c == "step_finished").count(), 3);
    assert_eq!(cats.iter().filter(|c| **c == "tool_call").count(), 1);
    assert_eq!(cats.iter().filter(|c| **c == "approval").count(), 2);
    let step_started = cats.iter().position(|c| *c == "step_started").unwrap();
    let tool_call = cats.iter().position(|c| *c == "tool_call").unwrap();
    let step_finished = cats.iter().position(|c| *c == "step_finished").unwrap();
    assert!(
        step_started < tool_call && tool_call < step_finished,
        "{cats:?}"
    );

    let (s, snaps) = app.get(&format!("/v1/missions/{id}/snapshots")).await;
    assert_eq!(s, StatusCode::OK, "{snaps}");
    let snaps = snaps["snapshots"].as_array().unwrap();
    let milestones: Vec<&str> = snaps
        .iter()
        .map(|s| s["milestone"].as_str().unwrap())
        .collect();
    assert_eq!(
        milestones,
        vec![
            "plan.created",
            "task.succeeded",
            "task.succeeded",
            "task.succeeded"
        ]
    );
    // Each snapshot is the log replayed (here, independently in SQL) to its seq.
    for snap in snaps {
        let seq = snap["seq"].as_i64().unwrap();
        let rows: Vec<(Option<uuid::Uuid>, String, Value)> = sqlx::query_as(
            "SELECT task_id, kind, payload FROM orchestration_events
             WHERE run_id = $1::uuid AND seq <= $2 ORDER BY seq",
        )
        .bind(id)
        .bind(seq)
        .fetch_all(&app.pool)
        .await
        .unwrap();
        let mut replay = coordinator::timeline::Replay::new();
        for (task, kind, payload) in &rows {
            replay.apply(kind, *task, payload);
        }
        assert_eq!(
            snap["state"],
            serde_json::to_value(&replay).unwrap(),
            "seq {seq}"
        );
    }
    // The last snapshot equals the live task statuses.
    let live: BTreeMap<String, String> =
        sqlx::query_as("SELECT id::text, status FROM orchestration_tasks WHERE run_id = $1::uuid")
            .bind(id)
            .fetch_all(&app.pool)
            .await
            .unwrap()
            .into_iter()
            .collect();
    let last: BTreeMap<String, String> =
        serde_json::from_value(snaps.last().unwrap()["state"]["tasks"].clone()).unwrap();
    assert_eq!(last, live);
    assert_eq!(live.len(), 3);

    let (s, _) = app
        .get(&format!("/v1/missions/{}/timeline", uuid::Uuid::new_v4()))
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    app.stop().await;
}
