//! The operator's day on the server side (issue 28): progress that counts
//! only what succeeded, missions that say what was left undone, failure
//! reasons that name the task, one list of what waits for a person,
//! continuing a failed mission, a raised budget taking back what the old
//! one refused, and agents that cannot be reached leaving the rotation.

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

/// Kinds of the mission's attention items.
async fn attention(app: &TestApp, id: &str) -> Vec<Value> {
    let (s, body) = app.get(&format!("/v1/attention?mission_id={id}")).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    body["items"].as_array().unwrap().clone()
}

/// A chain mission whose first task failed for good (three failed attempts,
/// dispatches 1–3 of a fresh worker, then a person chose `fail`); returns its id.
async fn failed_chain(app: &TestApp, worker: &ManualWorker, http: &reqwest::Client) -> String {
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap().to_owned();
    // Each test has its own worker: dispatches 1–3 are this task's attempts.
    let mut next = 1;
    fail_times(worker, http, &mut next, 3, "a").await;
    wait_task(app, &id, "a", "awaiting_human").await;
    let items = attention(app, &id).await;
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0]["kind"], "human_task");
    assert_eq!(items[0]["task_key"], "a");
    assert!(
        items[0]["command"]
            .as_str()
            .unwrap()
            .starts_with(&format!("coordinator task resolve {id} a ")),
        "{items:?}"
    );
    let (s, body) = app
        .post(
            &format!("/v1/missions/{id}/tasks/a/resolve"),
            json!({"action": "fail", "feedback": "the source is down"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    app.wait_for_status(&id, &["failed"]).await;
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_mission_names_its_task_and_never_reads_done() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let http = reqwest::Client::new();
    let id = failed_chain(&app, &worker, &http).await;
    let (_, m) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(
        m["failure_reason"],
        "task 'a' failed after 3 attempts (last error: the source is down)"
    );
    let p = &m["progress"];
    assert_eq!(
        (
            p["done"].as_u64(),
            p["failed"].as_u64(),
            p["cancelled"].as_u64()
        ),
        (Some(0), Some(1), Some(2)),
        "{p}"
    );
    assert_eq!(p["finished"], 3);
    assert_eq!(p["percent"], 0, "only success counts as done: {p}");
    assert_eq!(
        m["status_detail"],
        "failed: task 'a' failed after 3 attempts (last error: the source is down); 2 tasks were cancelled with it"
    );
    assert!(m["attention"].as_array().unwrap().is_empty(), "{m}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_continues_a_failed_mission_where_it_stopped() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let http = reqwest::Client::new();
    let id = failed_chain(&app, &worker, &http).await;
    let (_, before) = app.get(&format!("/v1/missions/{id}")).await;
    let version = before["version"].as_i64().unwrap();

    // Refused, changing nothing: a task that did not fail, a failed task
    // left out, a stale version, a mission that did not fail.
    let path = format!("/v1/missions/{id}/continue");
    let (s, body) = app.post(&path, json!({"retry": ["b"]})).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let problems = body["error"]["details"]["problems"].to_string();
    assert!(problems.contains("task 'b' is cancelled"), "{problems}");
    assert!(problems.contains("'a' not named"), "{problems}");
    let (s, body) = app
        .post(&path, json!({"retry": ["a"], "version": version - 1}))
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "version_conflict");
    let (s, body) = app.post(&path, json!({"retry": ["a"], "nope": 1})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    let (_, same) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(same["version"], version);
    assert_eq!(same["status"], "failed");

    // Retry with guidance: the mission executes again, the tasks its
    // failure cancelled come back, and the retried task gets the feedback.
    let (s, body) = app
        .post(
            &path,
            json!({"retry": ["a"], "feedback": "use the mirror", "version": version}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "executing");
    assert!(body["failure_reason"].is_null(), "{body}");
    let statuses: Vec<&str> = body["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert!(matches!(statuses[0], "queued" | "running"), "{statuses:?}");
    assert_eq!(&statuses[1..], ["pending", "pending"]);
    assert_eq!(events(&app, &id, "task.restored").await.len(), 2);
    let changed = events(&app, &id, "mission.status_changed").await;
    let last = changed.last().unwrap();
    assert_eq!(
        (last["from"].as_str(), last["to"].as_str()),
        (Some("failed"), Some("executing"))
    );

    // The retry is dispatch 4 (numbered, not counted: it may already be in).
    for (next, key) in (4..).zip(["a", "b", "c"]) {
        let d = worker.dispatch(next).await;
        assert_eq!(d.task.key, key);
        if key == "a" {
            assert_eq!(d.feedback.as_deref(), Some("use the mirror"));
        }
        succeed(&http, &d, json!(key), 0.0).await;
    }
    let done = app.wait_for_status(&id, &["completed"]).await;
    assert_eq!(done["progress"]["percent"], 100);
    assert_eq!(done["status_detail"], "completed: 3 tasks done");
    assert!(done["finished_at"].is_string());
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skipping_the_only_failed_task_by_resolve_continues_the_mission() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let http = reqwest::Client::new();
    let id = failed_chain(&app, &worker, &http).await;
    let (s, body) = app
        .post(
            &format!("/v1/missions/{id}/tasks/a/resolve"),
            json!({"action": "complete"}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    let (s, body) = app
        .post(
            &format!("/v1/missions/{id}/tasks/a/resolve"),
            json!({"action": "skip", "feedback": "we have it already"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    for (next, key) in (4..).zip(["b", "c"]) {
        let d = worker.dispatch(next).await;
        assert_eq!(d.task.key, key);
        succeed(&http, &d, json!(key), 0.0).await;
    }
    let done = app.wait_for_status(&id, &["completed"]).await;
    assert_eq!(done["status_detail"], "completed, but 1 task was skipped");
    assert_eq!(done["progress"]["percent"], 66);
    let changed = events(&app, &id, "mission.status_changed").await;
    assert_eq!(
        changed.last().unwrap()["reason"],
        "1 task was skipped",
        "the completion event says what was left undone"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mission_with_cancelled_tasks_says_so_when_it_completes() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let http = reqwest::Client::new();
    let mut plan = chain_plan();
    // a → b → c and a → d: cancelling b takes c with it; d still runs.
    plan["tasks"].as_array_mut().unwrap().push(json!({
        "id": "d", "title": "Step d", "task_type": "research",
        "required_skills": ["research"], "depends_on": ["a"],
        "success_criteria": [{"description": "done", "must_pass": true}],
        "estimated_cost": 0.01}));
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": plan}))
        .await;
    let id = m["id"].as_str().unwrap();
    let a = worker.dispatch(1).await;
    let (s, body) = app
        .post(
            &format!("/v1/missions/{id}/tasks/b/cancel"),
            json!({"reason": "not needed"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    succeed(&http, &a, json!("a"), 0.0).await;
    let d = worker.dispatch(2).await;
    assert_eq!(d.task.key, "d");
    succeed(&http, &d, json!("d"), 0.0).await;
    let done = app.wait_for_status(id, &["completed"]).await;
    assert_eq!(done["progress"]["percent"], 50);
    assert_eq!(done["progress"]["cancelled"], 2);
    assert_eq!(
        done["status_detail"],
        "completed, but 2 tasks were cancelled"
    );
    let changed = events(&app, id, "mission.status_changed").await;
    assert_eq!(changed.last().unwrap()["reason"], "2 tasks were cancelled");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_that_waits_for_a_person_is_listed_with_its_command() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let http = reqwest::Client::new();
    // An approve-mode plan waiting for approval.
    let waiting = app
        .create_mission(json!({"goal": "chain", "autonomy": "approve", "plan": chain_plan()}))
        .await;
    let waiting_id = waiting["id"].as_str().unwrap();
    assert_eq!(waiting["attention"][0]["kind"], "plan_approval");
    assert_eq!(
        waiting["attention"][0]["command"],
        format!("coordinator mission approve {waiting_id}")
    );
    // A task the budget refused.
    let m = app
        .create_mission(
            json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan(), "budget": 0.03}),
        )
        .await;
    let id = m["id"].as_str().unwrap();
    let a = worker.dispatch(1).await;
    succeed(&http, &a, json!("a"), 0.025).await;
    wait_task(&app, id, "b", "awaiting_human").await;

    let (s, all) = app.get("/v1/attention").await;
    assert_eq!(s, StatusCode::OK, "{all}");
    let kinds: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["plan_approval", "budget"], "oldest first: {all}");
    let budget = &all["items"][1];
    assert_eq!(budget["task_key"], "b");
    assert!(
        budget["summary"]
            .as_str()
            .unwrap()
            .contains("raise the budget to at least 0.04"),
        "{budget}"
    );
    assert_eq!(
        budget["command"],
        format!("coordinator mission edit {id} --budget 0.04")
    );
    let (s, body) = app.get("/v1/attention?mission_id=nope").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    let (s, body) = app.get("/v1/attention?kind=x").await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");

    // Raising the budget takes the refused task back: it runs, and the
    // mission finishes without anyone resolving it by hand.
    let (_, now) = app.get(&format!("/v1/missions/{id}")).await;
    let (s, body) = app
        .request(
            Method::PATCH,
            &format!("/v1/missions/{id}"),
            Some(json!({"budget": 0.06, "version": now["version"]})),
            Some(&app.token),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let b = worker.dispatch(2).await;
    assert_eq!(b.task.key, "b");
    succeed(&http, &b, json!("b"), 0.01).await;
    let c = worker.dispatch(3).await;
    succeed(&http, &c, json!("c"), 0.01).await;
    app.wait_for_status(id, &["completed"]).await;
    assert!(attention(&app, id).await.is_empty());
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_cannot_be_reached_leaves_the_rotation_until_it_heartbeats() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    // A port nothing listens on: every dispatch to it is refused.
    let dead = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", l.local_addr().unwrap())
    };
    let register = |id: &'static str, url: String| {
        let app = &app;
        async move {
            let (s, body) = app
                .post(
                    "/v1/agents",
                    json!({"agent_id": id, "role": "worker", "skills": ["research"],
                           "endpoint_url": url, "max_concurrency": 1}),
                )
                .await;
            assert_eq!(s, StatusCode::CREATED, "{body}");
        }
    };
    register("ghost", dead).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    wait_until("the ghost agent to be unreachable", || async {
        let (_, g) = app.get("/v1/agents/ghost").await;
        (g["status"] == "unreachable").then_some(())
    })
    .await;
    let attempts: i64 =
        sqlx::query_scalar("SELECT count(*) FROM task_attempts WHERE agent_id = 'ghost'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(attempts, 3, "unreachable after the third refused dispatch");
    let announced: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM orchestration_events WHERE kind = 'agent.unreachable'
           AND payload->>'agent_id' = 'ghost'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(announced, 1);

    // Another agent takes the task; the unreachable one is not chosen again.
    register("steady", worker.url.clone()).await;
    let (_, steady) = app.get("/v1/agents/steady").await;
    let registered_seen = steady["last_seen_at"].clone();
    if task(&app, id, "a").await["status"] == "awaiting_human" {
        let (s, body) = app
            .post(
                &format!("/v1/missions/{id}/tasks/a/resolve"),
                json!({"action": "retry"}),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{body}");
    }
    let http = reqwest::Client::new();
    for (n, key) in [(1, "a"), (2, "b"), (3, "c")] {
        let d = worker.dispatch(n).await;
        assert_eq!((d.agent_id.as_str(), d.task.key.as_str()), ("steady", key));
        succeed(&http, &d, json!(key), 0.0).await;
    }
    app.wait_for_status(id, &["completed"]).await;
    let (_, steady) = app.get("/v1/agents/steady").await;
    assert_ne!(
        steady["last_seen_at"], registered_seen,
        "LAST SEEN moves with reports"
    );
    let again: i64 =
        sqlx::query_scalar("SELECT count(*) FROM task_attempts WHERE agent_id = 'ghost'")
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(again, 3);
    // A heartbeat brings it back.
    let (s, body) = app.post("/v1/agents/ghost/heartbeat", json!({})).await;
    assert!(s.is_success(), "{s} {body}");
    let (_, ghost) = app.get("/v1/agents/ghost").await;
    assert_eq!(ghost["status"], "idle", "{ghost}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_agent_comes_back_when_its_endpoint_answers_a_probe() {
    let mut settings = test_settings();
    settings.engine.probe_interval = std::time::Duration::from_millis(200);
    let app = spawn_app_on(&fresh_database().await, settings).await;
    let addr = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let (s, body) = app
        .post(
            "/v1/agents",
            json!({"agent_id": "ghost", "role": "worker", "skills": ["research"],
                   "endpoint_url": format!("http://{addr}"), "max_concurrency": 1}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    app.create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    wait_until("the ghost agent to be unreachable", || async {
        let (_, g) = app.get("/v1/agents/ghost").await;
        (g["status"] == "unreachable").then_some(())
    })
    .await;
    // Probes of a port nothing listens on leave it unreachable.
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    let (_, g) = app.get("/v1/agents/ghost").await;
    assert_eq!(g["status"], "unreachable");
    // Something answers on its address now (a 404 is an answer): the next
    // probe brings it back, with an event, and it takes the task.
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    let server = tokio::spawn(async move {
        axum::serve(listener, axum::Router::new()).await.unwrap();
    });
    wait_until("the ghost agent to answer a probe", || async {
        let (_, g) = app.get("/v1/agents/ghost").await;
        (g["status"] != "unreachable").then_some(())
    })
    .await;
    let back: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM orchestration_events WHERE kind = 'agent.reachable'
           AND payload->>'agent_id' = 'ghost'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(back, 1);
    server.abort();
    app.stop().await;
}
