//! Missions end to end: planning, dependency order, approval, cancellation.

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;

fn time(v: &Value) -> time::OffsetDateTime {
    time::OffsetDateTime::parse(
        v.as_str().expect("timestamp"),
        &time::format_description::well_known::Rfc3339,
    )
    .expect("rfc3339")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mission_runs_to_completion_in_dependency_order() {
    let app = spawn_app().await;
    let worker = spawn_worker(20).await;
    app.register_fleet(&worker.url(), 2).await;
    let mission = app
        .create_mission(json!({
            "goal": "Research the state of solid-state batteries and write a report",
            "autonomy": "autonomous"
        }))
        .await;
    assert_eq!(mission["status"], "executing");
    assert_eq!(mission["plan_version"], 1);
    assert_eq!(mission["planner"], "template");
    let id = mission["id"].as_str().unwrap();
    let done = app.wait_for_status(id, &["completed", "failed"]).await;
    assert_eq!(done["status"], "completed", "{done}");

    let tasks = done["tasks"].as_array().unwrap();
    assert!(tasks.len() >= 3);
    let by_id = |tid: &Value| tasks.iter().find(|t| t["id"] == *tid).unwrap();
    let mut edges = 0;
    for t in tasks {
        assert_eq!(t["status"], "succeeded");
        assert!(t["assigned_agent_id"].is_string());
        for dep in t["depends_on"].as_array().unwrap() {
            edges += 1;
            let d = by_id(dep);
            assert!(
                time(&t["started_at"]) >= time(&d["finished_at"]),
                "{} started before its dependency {} finished",
                t["key"],
                d["key"]
            );
            // The worker saw the upstream output it depends on.
            let used = t["output"]["used_upstream"].as_array().unwrap();
            assert!(
                used.contains(&d["key"]),
                "{} did not receive {}",
                t["key"],
                d["key"]
            );
        }
    }
    assert!(edges > 0, "the plan should have dependencies");
    assert_eq!(done["progress"]["percent"], 100);
    assert_eq!(worker.stats().duplicate_dispatches, 0);

    // The event log is gap-free and ends with the completion.
    let (_, page) = app.get(&format!("/v1/missions/{id}/events")).await;
    let events = page["events"].as_array().unwrap();
    for (i, e) in events.iter().enumerate() {
        assert_eq!(e["seq"], i as i64 + 1);
    }
    let last = events.last().unwrap();
    assert_eq!(last["kind"], "mission.status_changed");
    assert_eq!(last["payload"]["to"], "completed");

    // Every board card is in the done column, written with its task.
    let cards: Vec<(String,)> =
        sqlx::query_as("SELECT column_name FROM board_tasks WHERE run_id = $1::uuid")
            .bind(id)
            .fetch_all(&app.pool)
            .await
            .unwrap();
    assert_eq!(cards.len(), tasks.len());
    assert!(cards.iter().all(|(c,)| c == "done"), "{cards:?}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_mode_waits_for_approval_and_review() {
    let app = spawn_app().await;
    let worker = spawn_worker(10).await;
    app.register_fleet(&worker.url(), 2).await;
    let mission = app
        .create_mission(
            json!({"goal": "Compare Postgres, MySQL and SQLite for an embedded use case"}),
        )
        .await;
    assert_eq!(mission["status"], "awaiting_approval");
    assert!(
        mission["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["status"] == "pending")
    );
    let id = mission["id"].as_str().unwrap();

    // Nothing is queued, so nothing can be dispatched, before approval.
    let (queued,): (i64,) = sqlx::query_as("SELECT count(*) FROM task_queue")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(queued, 0);

    let (status, approved) = app
        .post(&format!("/v1/missions/{id}/approve"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{approved}");
    assert_eq!(approved["status"], "executing");
    // Approving twice is a state conflict.
    let (status, err) = app
        .post(&format!("/v1/missions/{id}/approve"), json!({}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(err["error"]["code"], "invalid_state");

    app.wait_for_status(id, &["awaiting_review"]).await;
    let (status, body) = app
        .post(
            &format!("/v1/missions/{id}/review"),
            json!({"decision": "accept"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "completed");
    assert!(worker.stats().received >= 3);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cyclic_and_malformed_plans_are_rejected_and_change_nothing() {
    let app = spawn_app().await;
    let worker = spawn_worker(10).await;
    app.register_fleet(&worker.url(), 1).await;

    let mut plan = chain_plan();
    plan["tasks"][0]["depends_on"] = json!(["c"]);
    let (status, err) = app
        .post(
            "/v1/missions",
            json!({"goal": "cyclic", "autonomy": "autonomous", "plan": plan}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert_eq!(err["error"]["code"], "plan_invalid");
    let problems = err["error"]["details"]["problems"].as_array().unwrap();
    let cycle = problems
        .iter()
        .find(|p| p["code"] == "cycle")
        .expect("a cycle problem");
    let msg = cycle["message"].as_str().unwrap();
    for key in ["a", "b", "c"] {
        assert!(msg.contains(key), "cycle message should name {key}: {msg}");
    }

    // Unknown dependency and a task without a must_pass criterion: both reported.
    let mut plan = chain_plan();
    plan["tasks"][2]["depends_on"] = json!(["nope"]);
    plan["tasks"][1]["success_criteria"] = json!([{"description": "nice", "must_pass": false}]);
    let (status, err) = app
        .post("/v1/missions", json!({"goal": "bad", "plan": plan}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let codes: Vec<&str> = err["error"]["details"]["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["code"].as_str().unwrap())
        .collect();
    assert!(codes.contains(&"unknown_dependency"), "{codes:?}");
    assert!(codes.contains(&"missing_must_pass"), "{codes:?}");

    // A plan needing a skill no agent has.
    let mut plan = chain_plan();
    plan["tasks"][0]["required_skills"] = json!(["astrophysics"]);
    let (status, err) = app
        .post("/v1/missions", json!({"goal": "x", "plan": plan}))
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(err["error"]["message"].as_str().unwrap().contains("a"));

    // Structurally malformed (unknown field, wrong type): 400.
    let mut plan = chain_plan();
    plan["tasks"][0]["dependson"] = json!([]);
    let (status, err) = app
        .post("/v1/missions", json!({"goal": "x", "plan": plan}))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{err}");
    assert_eq!(err["error"]["code"], "invalid_request");

    // Nothing was stored.
    let (_, list) = app.get("/v1/missions").await;
    assert_eq!(list["missions"].as_array().unwrap().len(), 0);
    let (n,): (i64,) = sqlx::query_as("SELECT count(*) FROM orchestration_tasks")
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(n, 0);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_explicit_plan_runs_in_order() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 3).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    assert_eq!(m["planner"], "explicit");
    let http = reqwest::Client::new();
    for (n, key) in [(1, "a"), (2, "b"), (3, "c")] {
        let d = worker.dispatch(n).await;
        assert_eq!(
            d.task.key, key,
            "tasks must be dispatched in dependency order"
        );
        // Nothing else is dispatched while this one runs.
        assert_eq!(worker.count(), n);
        let token = d.callback.token.clone();
        let (status, body) = report(
            &http,
            &d,
            &token,
            json!({"status": "succeeded", "output": {"k": key}, "cost": 0.5}),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        if key != "a" {
            assert_eq!(d.upstream.len(), 1);
            assert!(d.upstream[0].output.is_some());
        }
    }
    let done = app
        .wait_for_status(m["id"].as_str().unwrap(), &["completed"])
        .await;
    assert_eq!(done["budget"]["spent"], 1.5);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_stops_the_mission_and_refuses_later_reports() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    let d = worker.dispatch(1).await;
    let (status, body) = app
        .post(&format!("/v1/missions/{id}/cancel"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "cancelled");
    assert!(
        body["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["status"] == "cancelled")
    );

    // The worker is told to stop, and a late report is refused.
    worker.wait_for_cancel(&d.attempt_id.to_string()).await;
    let http = reqwest::Client::new();
    let token = d.callback.token.clone();
    let (status, err) = report(&http, &d, &token, json!({"status": "succeeded"})).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(err["error"]["code"], "stale_attempt");
    // The agent's slot was given back.
    let (_, agent) = app.get("/v1/agents/researcher").await;
    assert_eq!(agent["running_count"], 0);
    // Cancelling again is a conflict.
    let (status, _) = app
        .post(&format!("/v1/missions/{id}/cancel"), json!({}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_mission_dispatches_nothing_new_until_resumed() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 2).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    let a = worker.dispatch(1).await;
    let (status, body) = app
        .post(&format!("/v1/missions/{id}/pause"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "paused");
    // The live attempt still finishes.
    let http = reqwest::Client::new();
    let (s, _) = report(&http, &a, &a.callback.token, json!({"status": "succeeded"})).await;
    assert_eq!(s, StatusCode::OK);
    let (_, paused) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(paused["tasks"][1]["status"], "queued");
    // A paused mission's ready work stays out of the claim queue.
    let (queued,): (i64,) =
        sqlx::query_as("SELECT count(*) FROM task_queue WHERE run_id = $1::uuid")
            .bind(id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(queued, 0);
    // Absence can only be observed over time: several engine ticks (100 ms) and wake-ups pass.
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    assert_eq!(worker.count(), 1, "a paused mission must not dispatch");
    let (status, _) = app
        .post(&format!("/v1/missions/{id}/pause"), json!({}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT);

    let (status, body) = app
        .post(&format!("/v1/missions/{id}/resume"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "executing");
    let b = worker.dispatch(2).await;
    assert_eq!(b.task.key, "b");
    app.stop().await;
}
