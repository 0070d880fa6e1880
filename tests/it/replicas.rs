//! Several coordinator replicas against one database.

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::json;

use crate::helpers::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_never_dispatch_the_same_attempt_twice() {
    let db = fresh_database().await;
    // Two replicas, each with its own pool and engine, sharing one database.
    let a = spawn_app_on(&db, test_settings()).await;
    let b = spawn_app_on(&db, test_settings()).await;
    let worker = spawn_worker(5).await;
    a.register_fleet(&worker.url(), 3).await;

    let goals = [
        "Research the state of solid-state batteries and write a report",
        "Implement rate limiting in the API and get it reviewed",
        "Compare Postgres, MySQL and SQLite for our embedded use case",
    ];
    let mut ids = Vec::new();
    for i in 0..12 {
        // Alternate replicas for creation too.
        let app = if i % 2 == 0 { &a } else { &b };
        let m = app
            .create_mission(json!({"goal": goals[i % goals.len()], "autonomy": "autonomous"}))
            .await;
        ids.push(m["id"].as_str().unwrap().to_owned());
    }
    for id in &ids {
        let m = a.wait_for_status(id, &["completed", "failed"]).await;
        assert_eq!(m["status"], "completed", "{m}");
    }

    let stats = worker.stats();
    assert_eq!(stats.duplicate_dispatches, 0, "{stats:?}");
    let (tasks, attempts, max_per_task, replicas): (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM orchestration_tasks),
                (SELECT count(*) FROM task_attempts),
                (SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM task_attempts GROUP BY task_id) x),
                (SELECT count(DISTINCT dispatched_by) FROM task_attempts)",
    )
    .fetch_one(&a.pool)
    .await
    .unwrap();
    // No failures were simulated, so exactly one attempt per task, each
    // received exactly once by the worker.
    assert_eq!(attempts, tasks);
    assert_eq!(max_per_task, 1);
    assert_eq!(stats.received as i64, tasks);
    assert!(replicas >= 1);
    eprintln!("{tasks} tasks dispatched by {replicas} replica(s)");
    // Every slot was given back.
    let (held,): (i64,) =
        sqlx::query_as("SELECT coalesce(sum(running_count), 0)::bigint FROM agents")
            .fetch_one(&a.pool)
            .await
            .unwrap();
    assert_eq!(held, 0);
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_leased_by_a_killed_replica_finishes_on_another() {
    let db = fresh_database().await;
    let mut settings = test_settings();
    settings.engine.lease = Duration::from_secs(1);
    settings.engine.replica_id = "replica-a".into();
    let worker = ManualWorker::spawn().await;

    // Replica A alone: it claims the first task and dispatches it.
    let a = IsolatedReplica::spawn(&db, settings.clone()).await;
    // B serves the API for the test but runs no engine until A is dead.
    let mut api_only = test_settings();
    api_only.run_engine = false;
    let api = spawn_app_on(&db, api_only).await;
    api.register_fleet(&worker.url, 1).await;
    let m = api
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    let first = worker.dispatch(1).await;
    let (owner,): (Option<String>,) =
        sqlx::query_as("SELECT lease_owner FROM orchestration_tasks WHERE id = $1")
            .bind(first.task_id)
            .fetch_one(&api.pool)
            .await
            .unwrap();
    assert_eq!(owner.as_deref(), Some("replica-a"));
    assert!(a.url.starts_with("http://127.0.0.1:"));
    a.kill();

    // Replica B takes over: A's lease runs out, B reclaims and redispatches.
    let mut b_settings = test_settings();
    b_settings.engine.lease = Duration::from_secs(1);
    b_settings.engine.replica_id = "replica-b".into();
    let b = spawn_app_on(&db, b_settings).await;
    let second = worker.dispatch(2).await;
    assert_eq!(second.task_id, first.task_id);
    let http = reqwest::Client::new();
    let (s, _) = report(
        &http,
        &second,
        &second.callback.token,
        json!({"status": "succeeded"}),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    // A's attempt, should its worker still answer (through any live replica), is refused.
    let late = http
        .post(format!("{}/v1/attempts/{}/result", b.url, first.attempt_id))
        .bearer_auth(&first.callback.token)
        .json(&json!({"status": "succeeded"}))
        .send()
        .await
        .unwrap();
    assert_eq!(late.status().as_u16(), 409);
    for n in 3..=4 {
        let d = worker.dispatch(n).await;
        let (s, _) = report(&http, &d, &d.callback.token, json!({"status": "succeeded"})).await;
        assert_eq!(s, StatusCode::OK);
    }
    let done = b.wait_for_status(id, &["completed"]).await;
    assert_eq!(done["status"], "completed");
    let rows: Vec<(i32, String, String)> = sqlx::query_as(
        "SELECT attempt_number, status, dispatched_by FROM task_attempts WHERE task_id = $1 ORDER BY attempt_number",
    )
    .bind(first.task_id)
    .fetch_all(&b.pool)
    .await
    .unwrap();
    assert_eq!(
        rows,
        vec![
            (1, "expired".to_owned(), "replica-a".to_owned()),
            (2, "succeeded".to_owned(), "replica-b".to_owned())
        ]
    );
    api.stop().await;
    b.stop().await;
}
