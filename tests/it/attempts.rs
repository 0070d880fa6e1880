//! Worker reports: stale attempts, duplicates, tokens, leases.

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::json;

use crate::helpers::*;

async fn count(app: &TestApp, sql: &'static str, id: &str) -> i64 {
    let (n,): (i64,) = sqlx::query_as(sql)
        .bind(id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_report_has_one_effect() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    let d = worker.dispatch(1).await;
    let http = reqwest::Client::new();
    let token = d.callback.token.clone();
    let body = json!({"status": "succeeded", "output": {"answer": 42}, "cost": 0.25, "tokens": 10});
    let (s1, r1) = report(&http, &d, &token, body.clone()).await;
    assert_eq!(s1, StatusCode::OK, "{r1}");
    assert_eq!(r1["duplicate"], false);
    let (s2, r2) = report(&http, &d, &token, body.clone()).await;
    assert_eq!(s2, StatusCode::OK, "{r2}");
    assert_eq!(r2["duplicate"], true);

    // One success event, one spend, one promotion of the next task.
    let succeeded = count(&app, "SELECT count(*) FROM orchestration_events WHERE run_id = $1::uuid AND kind = 'task.succeeded'", id).await;
    assert_eq!(succeeded, 1);
    let queued_b = count(&app, "SELECT count(*) FROM orchestration_events e JOIN orchestration_tasks t ON t.id = e.task_id WHERE e.run_id = $1::uuid AND e.kind = 'task.queued' AND t.task_key = 'b'", id).await;
    assert_eq!(queued_b, 1);
    let (_, mission) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(mission["budget"]["spent"], 0.25);

    // The same attempt reporting something different is refused.
    let (s3, r3) = report(
        &http,
        &d,
        &token,
        json!({"status": "failed", "error": "changed my mind"}),
    )
    .await;
    assert_eq!(s3, StatusCode::CONFLICT, "{r3}");
    assert_eq!(r3["error"]["code"], "stale_attempt");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stale_attempt_report_is_refused_and_changes_nothing() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    let http = reqwest::Client::new();

    // Attempt 1 fails; the task is retried as attempt 2.
    let first = worker.dispatch(1).await;
    let t1 = first.callback.token.clone();
    let (s, _) = report(
        &http,
        &first,
        &t1,
        json!({"status": "failed", "error": "flaky"}),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let second = worker.dispatch(2).await;
    assert_eq!(second.task_id, first.task_id);
    assert_eq!(second.attempt_number, 2);
    assert_ne!(second.attempt_id, first.attempt_id);

    let before = count(
        &app,
        "SELECT count(*) FROM orchestration_events WHERE run_id = $1::uuid",
        id,
    )
    .await;
    // A late success from attempt 1 is stale: 409, nothing changes.
    let (s, err) = report(
        &http,
        &first,
        &t1,
        json!({"status": "succeeded", "output": "late"}),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT, "{err}");
    assert_eq!(err["error"]["code"], "stale_attempt");
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM orchestration_events WHERE run_id = $1::uuid",
            id
        )
        .await,
        before
    );
    let (_, mission) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(mission["tasks"][0]["status"], "running");
    assert!(mission["tasks"][0]["output"].is_null());

    // Attempt 2's token cannot report for attempt 1, nor the other way round.
    let t2 = second.callback.token.clone();
    let (s, _) = report(&http, &first, &t2, json!({"status": "succeeded"})).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, _) = report(&http, &second, &t1, json!({"status": "succeeded"})).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    // An attempt that does not exist answers exactly like a wrong token, on
    // every callback route, so the routes reveal no attempt ids.
    let unknown = uuid::Uuid::now_v7();
    for (route, existing, body) in [
        (
            "result",
            second.callback.result_url.clone(),
            json!({"status": "succeeded"}),
        ),
        (
            "heartbeat",
            second.callback.heartbeat_url.clone(),
            json!({}),
        ),
    ] {
        let missing = existing.replace(&second.attempt_id.to_string(), &unknown.to_string());
        let mut answers = Vec::new();
        for (url, id) in [(existing, second.attempt_id), (missing, unknown)] {
            let resp = http
                .post(&url)
                .bearer_auth(&t1)
                .json(&body)
                .send()
                .await
                .expect("callback");
            let status = resp.status().as_u16();
            let body: serde_json::Value = resp.json().await.expect("json body");
            let message = body["error"]["message"]
                .as_str()
                .expect("message")
                .replace(&id.to_string(), "<id>");
            answers.push((status, body["error"]["code"].clone(), message));
        }
        assert_eq!(
            answers[0], answers[1],
            "{route}: existing vs unknown attempt"
        );
        assert_eq!(answers[0].0, 401, "{route}");
    }
    // A heartbeat on the stale attempt is refused too.
    let resp = http
        .post(&first.callback.heartbeat_url)
        .bearer_auth(&t1)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 409);

    // The current attempt still counts.
    let (s, _) = report(&http, &second, &t2, json!({"status": "succeeded"})).await;
    assert_eq!(s, StatusCode::OK);
    let (_, mission) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(mission["tasks"][0]["status"], "succeeded");
    assert_eq!(mission["tasks"][0]["attempts"], 2);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_lease_is_reclaimed_and_retried() {
    let mut settings = test_settings();
    settings.engine.lease = Duration::from_secs(1);
    let app = spawn_app_on(&fresh_database().await, settings).await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    // The worker accepts and goes silent; the lease runs out; the task is redispatched.
    let first = worker.dispatch(1).await;
    let second = worker.dispatch(2).await;
    assert_eq!(second.task_id, first.task_id);
    let status: (String, Option<String>) =
        sqlx::query_as("SELECT status, failure_kind FROM task_attempts WHERE id = $1")
            .bind(first.attempt_id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(status, ("expired".into(), Some("infrastructure".into())));
    // Heartbeats keep a lease alive: attempt 2 survives several lease periods.
    let http = reqwest::Client::new();
    for _ in 0..4 {
        let resp = http
            .post(&second.callback.heartbeat_url)
            .bearer_auth(&second.callback.token)
            .json(&json!({"progress": 0.5}))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        tokio::time::sleep(Duration::from_millis(400)).await;
    }
    assert_eq!(
        worker.count(),
        2,
        "a heartbeating attempt must not be reclaimed"
    );
    let (s, _) = report(
        &http,
        &second,
        &second.callback.token,
        json!({"status": "succeeded"}),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let (_, mission) = app
        .get(&format!("/v1/missions/{}", m["id"].as_str().unwrap()))
        .await;
    assert_eq!(mission["tasks"][0]["status"], "succeeded");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_keeps_failing_fails_the_mission() {
    let mut settings = test_settings();
    settings.planning.max_attempts = 2;
    let app = spawn_app_on(&fresh_database().await, settings).await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let m = app
        .create_mission(
            json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan(),
                       "constraints": {"human_escalation": false}}),
        )
        .await;
    let http = reqwest::Client::new();
    for n in 1..=2 {
        let d = worker.dispatch(n).await;
        let (s, _) = report(
            &http,
            &d,
            &d.callback.token,
            json!({"status": "failed", "error": format!("failure {n}")}),
        )
        .await;
        assert_eq!(s, StatusCode::OK);
    }
    let done = app
        .wait_for_status(m["id"].as_str().unwrap(), &["failed"])
        .await;
    assert!(done["failure_reason"].as_str().unwrap().contains("failed"));
    let statuses: Vec<&str> = done["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["failed", "cancelled", "cancelled"]);
    let (_, agent) = app.get("/v1/agents/researcher").await;
    assert_eq!(agent["running_count"], 0);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_worker_defers_the_task_without_counting_a_failure() {
    use std::sync::{
        Arc, Mutex,
        atomic::{AtomicUsize, Ordering},
    };

    use axum::{Json, Router, http::HeaderValue, response::IntoResponse, routing::post};
    use coordinator::worker::protocol::DispatchRequest;

    let mut settings = test_settings();
    // One counted failure would fail the task (and the mission) at once.
    settings.planning.max_attempts = 1;
    let app = spawn_app_on(&fresh_database().await, settings).await;

    // Busy (429, Retry-After: 1) on the first request, then accepting.
    let hits = Arc::new(AtomicUsize::new(0));
    let accepted: Arc<Mutex<Vec<(std::time::Instant, DispatchRequest)>>> = Arc::default();
    let first_hit: Arc<Mutex<Option<std::time::Instant>>> = Arc::default();
    let router = {
        let (hits, accepted, first_hit) = (hits.clone(), accepted.clone(), first_hit.clone());
        Router::new().route(
            "/v1/tasks",
            post(move |Json(req): Json<DispatchRequest>| {
                let (hits, accepted, first_hit) =
                    (hits.clone(), accepted.clone(), first_hit.clone());
                async move {
                    if hits.fetch_add(1, Ordering::SeqCst) == 0 {
                        *first_hit.lock().unwrap() = Some(std::time::Instant::now());
                        let mut resp = StatusCode::TOO_MANY_REQUESTS.into_response();
                        resp.headers_mut()
                            .insert("retry-after", HeaderValue::from_static("1"));
                        return resp;
                    }
                    accepted
                        .lock()
                        .unwrap()
                        .push((std::time::Instant::now(), req));
                    StatusCode::ACCEPTED.into_response()
                }
            }),
        )
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    app.register_fleet(&url, 1).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();

    let (at, d) = wait_until("the dispatch after the busy answer", || async {
        accepted.lock().unwrap().first().cloned()
    })
    .await;
    let waited = at - first_hit.lock().unwrap().unwrap();
    assert!(
        waited >= Duration::from_millis(900),
        "Retry-After was not honoured: {waited:?}"
    );
    assert_eq!(d.attempt_number, 2);
    let (status, failures): (String, i32) = sqlx::query_as(
        "SELECT a.status, t.failure_count FROM task_attempts a JOIN orchestration_tasks t ON t.id = a.task_id
         WHERE a.task_id = $1 AND a.attempt_number = 1",
    )
    .bind(d.task_id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!((status.as_str(), failures), ("cancelled", 0));
    assert_eq!(
        count(&app, "SELECT count(*) FROM orchestration_events WHERE run_id = $1::uuid AND kind = 'task.deferred'", id).await,
        1
    );
    let http = reqwest::Client::new();
    let (s, _) = report(&http, &d, &d.callback.token, json!({"status": "succeeded"})).await;
    assert_eq!(s, StatusCode::OK);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_a_mission_fails_the_workers_of_its_live_attempts_are_told_to_stop() {
    let mut settings = test_settings();
    settings.planning.max_attempts = 1;
    let app = spawn_app_on(&fresh_database().await, settings).await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 2).await;
    // Two independent roots run at once; one fails for good.
    let mut plan = chain_plan();
    plan["tasks"][1]["depends_on"] = json!([]);
    plan["tasks"][2]["depends_on"] = json!(["a", "b"]);
    let m = app
        .create_mission(
            json!({"goal": "two roots", "autonomy": "autonomous", "plan": plan,
                               "constraints": {"human_escalation": false}}),
        )
        .await;
    let first = worker.dispatch(1).await;
    let second = worker.dispatch(2).await;
    let http = reqwest::Client::new();
    let (s, _) = report(
        &http,
        &first,
        &first.callback.token,
        json!({"status": "failed", "error": "no"}),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    app.wait_for_status(m["id"].as_str().unwrap(), &["failed"])
        .await;
    // The other live attempt was cancelled and its worker told.
    worker.wait_for_cancel(&second.attempt_id.to_string()).await;
    let (s, _) = report(
        &http,
        &second,
        &second.callback.token,
        json!({"status": "succeeded"}),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT);
    app.stop().await;
}
