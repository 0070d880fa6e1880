//! Several coordinator replicas against one database.

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
