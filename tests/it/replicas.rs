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
        sqlx::query_as("SELECT coalesce(sum(running_count - agent_pending_slots(workspace_id, agent_id)), 0)::bigint FROM agents")
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

/// Live attempts of the one agent, and the slots its row says are taken.
async fn live_and_held(app: &TestApp) -> (i64, i64) {
    sqlx::query_as(
        "SELECT (SELECT count(*) FROM task_attempts WHERE status IN ('dispatching', 'running')),
                (SELECT (running_count - agent_pending_slots(workspace_id, agent_id))::bigint
                 FROM agents WHERE agent_id = 'solo')",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

/// `n` replicas race for the slots of one agent with cap 2 while 24 tasks
/// are ready. The claim reads agents without locking them and takes slots
/// with one guarded increment just before its writes, so this is the race
/// that could over-admit: every slot a report frees is contended by every
/// replica (the report's NOTIFY wakes them all). Attempts are reported one
/// at a time, so an over-admitted attempt would stay live and be seen. The
/// interleaving is up to the scheduler here; the test below forces it.
async fn racing_replicas_never_exceed_a_cap(n: usize) {
    const CAP: i64 = 2;
    const TASKS: usize = 24;
    let apps = spawn_replicas(n).await;
    let worker = ManualWorker::spawn().await;
    let (status, body) = apps[0]
        .post(
            "/v1/agents",
            json!({"agent_id": "solo", "role": "solo", "skills": ["research"], "tools": [],
                   "endpoint_url": worker.url, "max_concurrency": CAP}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let mut missions = Vec::new();
    for i in 0..TASKS / 4 {
        let m = apps[i % n]
            .create_mission(
                json!({"goal": format!("race {i}"), "autonomy": "autonomous", "plan": parallel_plan(4)}),
            )
            .await;
        missions.push(m["id"].as_str().unwrap().to_owned());
    }
    let http = reqwest::Client::new();
    for k in 1..=TASKS {
        let d = worker.dispatch(k).await;
        // The next dispatch (if any task is left) can only come after a
        // report; until then the agent must hold exactly what it was given.
        if k as i64 >= CAP || k == TASKS {
            let (live, held) = live_and_held(&apps[0]).await;
            assert!(
                live <= CAP,
                "{live} live attempts on an agent with cap {CAP} (dispatch #{k})"
            );
            assert_eq!(
                live, held,
                "slots held must match live attempts (dispatch #{k})"
            );
        }
        if (k as i64) < CAP {
            continue;
        }
        // Report the oldest live attempt, freeing one slot for everyone.
        let oldest = worker.dispatch(k + 1 - CAP as usize).await;
        let token = oldest.callback.token.clone();
        let (s, r) = report(&http, &oldest, &token, json!({"status": "succeeded"})).await;
        assert_eq!(s, StatusCode::OK, "{r}");
        drop(d);
    }
    // The last CAP - 1 attempts are still live: report them too.
    for k in TASKS + 2 - CAP as usize..=TASKS {
        let d = worker.dispatch(k).await;
        let (s, r) = report(
            &http,
            &d,
            &d.callback.token.clone(),
            json!({"status": "succeeded"}),
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{r}");
    }
    for id in &missions {
        let m = apps[0].wait_for_status(id, &["completed", "failed"]).await;
        assert_eq!(m["status"], "completed", "{m}");
    }
    assert_eq!(worker.count(), TASKS, "one dispatch per task, none doubled");
    assert_eq!(
        live_and_held(&apps[0]).await,
        (0, 0),
        "every slot given back"
    );
    let replicas: i64 =
        sqlx::query_scalar("SELECT count(DISTINCT dispatched_by) FROM task_attempts")
            .fetch_one(&apps[0].pool)
            .await
            .unwrap();
    eprintln!("{TASKS} tasks dispatched by {replicas} of {n} replicas");
    for app in apps {
        app.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_replicas_racing_for_slots_never_exceed_a_cap() {
    racing_replicas_never_exceed_a_cap(2).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_replicas_racing_for_slots_never_exceed_a_cap() {
    racing_replicas_never_exceed_a_cap(3).await;
}

/// The guarded increment of the claim, raced deterministically: a claim
/// that read an agent's free slots before another claim took them waits on
/// the row, then is granted only what is left (never more than the cap).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_racing_another_for_slots_gets_only_what_is_left() {
    use coordinator::store::agents;
    let app = spawn_app().await;
    let ws = register_solo(&app, "http://127.0.0.1:9/", 3).await;
    let ids = vec!["solo".to_owned()];
    // Both claims saw 3 free slots; the first takes 2.
    let mut first = app.pool.begin().await.unwrap();
    let granted = agents::take_slots(&mut first, &[ws], &ids, &[2])
        .await
        .unwrap();
    assert_eq!(granted.iter().map(|g| g.slots).collect::<Vec<_>>(), [2]);
    // The second asks for 2 while the first has not committed: it must wait.
    let pool = app.pool.clone();
    let second = tokio::spawn(async move {
        let mut tx = pool.begin().await.unwrap();
        let granted = agents::take_slots(&mut tx, &[ws], &["solo".to_owned()], &[2])
            .await
            .unwrap();
        tx.commit().await.unwrap();
        granted
    });
    wait_until("the second claim to wait on the agent's row", || async {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap();
        (waiting > 0).then_some(())
    })
    .await;
    first.commit().await.unwrap();
    let granted = second.await.unwrap();
    assert_eq!(
        granted.iter().map(|g| g.slots).collect::<Vec<_>>(),
        [1],
        "only the one slot left"
    );
    // Full now: a third claim is granted nothing and does not fail.
    let mut third = app.pool.begin().await.unwrap();
    assert!(
        agents::take_slots(&mut third, &[ws], &ids, &[1])
            .await
            .unwrap()
            .is_empty()
    );
    third.rollback().await.unwrap();
    let held: i32 = sqlx::query_scalar(
        "SELECT running_count - agent_pending_slots(workspace_id, agent_id) FROM agents WHERE agent_id = 'solo'",
    )
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert_eq!(held, 3);
    app.stop().await;
}

/// A claim never waits for another replica's claim on an agent's row: it
/// leaves that agent's tasks queued, says it was contended (so its
/// dispatcher claims again shortly), and takes them once the row is free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_skips_an_agent_another_claim_holds_and_says_so() {
    use coordinator::engine::{EngineConfig, dispatch};
    let mut settings = test_settings();
    settings.run_engine = false;
    let app = spawn_app_on(&fresh_database().await, settings).await;
    register_solo(&app, "http://127.0.0.1:9/", 4).await;
    let m = app
        .create_mission(json!({"goal": "skip", "autonomy": "autonomous", "plan": parallel_plan(3)}))
        .await;
    let mission = m["id"].as_str().unwrap().to_owned();
    let cfg = EngineConfig::new(app.url.clone());
    wait_until("the mission's tasks to be queued", || async {
        let queued: i64 = sqlx::query_scalar("SELECT count(*) FROM task_queue")
            .fetch_one(&app.pool)
            .await
            .unwrap();
        (queued == 3).then_some(())
    })
    .await;
    // Another replica's claim holds the agent's row.
    let mut other = app.pool.begin().await.unwrap();
    sqlx::query("SELECT 1 FROM agents WHERE agent_id = 'solo' FOR NO KEY UPDATE")
        .execute(&mut *other)
        .await
        .unwrap();
    let claimed = tokio::time::timeout(Duration::from_secs(10), dispatch::claim(&app.pool, &cfg))
        .await
        .expect("the claim waited on the agent another claim holds")
        .unwrap();
    assert!(claimed.dispatches.is_empty(), "{claimed:?}");
    assert!(
        claimed.contended,
        "a claim that lost its tasks to another must say so"
    );
    let (queued, running): (i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM task_queue),
                (SELECT count(*) FROM orchestration_tasks WHERE status = 'running')",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!((queued, running), (3, 0), "the skipped tasks stay queued");
    other.rollback().await.unwrap();
    // Free again: the next claim takes them all, uncontended.
    let claimed = dispatch::claim(&app.pool, &cfg).await.unwrap();
    assert_eq!(claimed.dispatches.len(), 3, "{claimed:?}");
    assert!(!claimed.contended);
    assert!(
        claimed
            .dispatches
            .iter()
            .all(|d| d.request.mission_id.to_string() == mission)
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_folding_returned_slots_at_once_count_each_return_once() {
    use coordinator::store::{
        agents,
        attempts::{self, Answered},
    };
    let app = spawn_app().await;
    let ws = register_solo(&app, "http://127.0.0.1:9/", 3).await;
    let ids = vec!["solo".to_owned()];
    let take = |n: i32| {
        let (pool, ids) = (app.pool.clone(), ids.clone());
        async move {
            let mut tx = pool.begin().await.unwrap();
            let g = agents::take_slots(&mut tx, &[ws], &ids, &[n])
                .await
                .unwrap();
            (tx, g.iter().map(|g| g.slots).sum::<i32>())
        }
    };
    let give_back = |n: i32| {
        let pool = app.pool.clone();
        async move {
            let mut conn = pool.acquire().await.unwrap();
            let back = [Answered {
                workspace_id: ws,
                agent_id: "solo".into(),
                slots: n,
            }];
            attempts::release_answered(&mut conn, &back, &[], false)
                .await
                .unwrap();
        }
    };
    let (tx, got) = take(3).await;
    tx.commit().await.unwrap();
    assert_eq!(got, 3, "full");
    // One slot comes back. Two claims race for it: the first folds it
    // and takes it; the second waits on the row, then finds the return
    // already folded (not counted twice) and the agent full.
    give_back(1).await;
    let (first, got) = take(1).await;
    assert_eq!(got, 1);
    let second = tokio::spawn(take(1));
    wait_until("the second claim to wait on the agent's row", || async {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()",
        )
        .fetch_one(&app.pool)
        .await
        .unwrap();
        (waiting > 0).then_some(())
    })
    .await;
    // A return committed while the second claim waits is newer than its
    // statement: left for the next fold, never over-admitted.
    give_back(1).await;
    first.commit().await.unwrap();
    let (tx, got) = second.await.unwrap();
    tx.commit().await.unwrap();
    assert!(got <= 1, "granted {got} with one slot free");
    let (tx, more) = take(3).await;
    tx.commit().await.unwrap();
    assert_eq!(got + more, 1, "the second return was granted exactly once");
    assert_eq!(solo_row_and_pending(&app).await, (3, 0));
    app.stop().await;
}
