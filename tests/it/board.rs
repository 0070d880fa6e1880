//! The kanban bridge: board columns, card moves that mean something, and
//! signed, retried webhook deliveries an external board can follow.

use std::time::Duration;

use axum::http::StatusCode;
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use wiremock::{
    Mock, MockServer, ResponseTemplate,
    matchers::{method, path},
};

use crate::helpers::*;

/// The mission's board: column name → cards.
async fn board(app: &TestApp, mission: &str) -> Value {
    let (s, b) = app.get(&format!("/v1/board?mission={mission}")).await;
    assert_eq!(s, StatusCode::OK, "{b}");
    b
}

fn card<'a>(board: &'a Value, key: &str) -> (&'a str, &'a Value) {
    for col in board["columns"].as_array().unwrap() {
        for c in col["cards"].as_array().unwrap() {
            if c["task_key"] == key {
                return (col["name"].as_str().unwrap(), c);
            }
        }
    }
    panic!("no card {key} in {board}")
}

async fn move_card(app: &TestApp, card: &Value, body: Value) -> (StatusCode, Value) {
    app.post(
        &format!("/v1/board/cards/{}/move", card["id"].as_str().unwrap()),
        body,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cards_follow_their_tasks_and_only_meaningful_moves_are_taken() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let http = reqwest::Client::new();
    let mut next = 1;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();

    // The board has every column, in order, and a card per task.
    let b = board(&app, id).await;
    let names: Vec<&str> = b["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "backlog",
            "ready",
            "in_progress",
            "needs_human",
            "review",
            "done",
            "failed"
        ]
    );
    let d = worker.dispatch(next).await;
    let b = board(&app, id).await;
    let (col, a) = card(&b, "a");
    assert_eq!(col, "in_progress");
    assert_eq!(a["assignee"], d.agent_id.as_str());
    assert_eq!(a["attempt"], 1);
    assert_eq!(a["mission_id"], id);
    assert_eq!(a["links"]["mission"], format!("/v1/missions/{id}"));
    // The engine's cards do not move by hand.
    let (s, body) = move_card(&app, a, json!({"to": "done"})).await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "move_refused");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("needs_human")
    );

    // After every attempt fails the card needs a person.
    fail(&http, &d, "no").await;
    next += 1;
    fail_times(&worker, &http, &mut next, 2, "a").await;
    wait_task(&app, id, "a", "awaiting_human").await;
    let b = board(&app, id).await;
    let (col, a) = card(&b, "a");
    assert_eq!(col, "needs_human");
    assert_eq!(a["attempt"], 3);
    assert_eq!(
        a["links"]["resolve"],
        format!("/v1/missions/{id}/tasks/a/resolve")
    );
    let (col, later) = card(&b, "c");
    assert_eq!(col, "backlog");
    let (s, body) = move_card(&app, later, json!({"to": "ready"})).await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");

    // Refusals change nothing: a stale version, an unknown column, a move to review.
    let version = a["version"].as_i64().unwrap();
    let (s, body) = move_card(&app, a, json!({"to": "ready", "version": version - 1})).await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "version_conflict");
    let (s, body) = move_card(&app, a, json!({"to": "sideways"})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    let (s, body) = move_card(&app, a, json!({"to": "review"})).await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("done"));
    let (s, _) = app
        .post(
            &format!("/v1/board/cards/{}/move", uuid::Uuid::nil()),
            json!({"to": "done"}),
        )
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    assert_eq!(card(&board(&app, id).await, "a").1["version"], version);

    // Moving it to ready retries it, with the mover's guidance.
    let (s, moved) = move_card(
        &app,
        a,
        json!({"to": "ready", "version": version, "feedback": "try the other source"}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{moved}");
    let d = worker.dispatch(next).await;
    next += 1;
    assert_eq!(d.task.key, "a");
    assert_eq!(d.feedback.as_deref(), Some("try the other source"));
    succeed(&http, &d, json!("a done"), 0.0).await;

    // Moving a card that needs a person to done completes it with the output given.
    fail_times(&worker, &http, &mut next, 3, "b").await;
    wait_task(&app, id, "b", "awaiting_human").await;
    let b = board(&app, id).await;
    let (_, b_card) = card(&b, "b");
    let (s, moved) = move_card(
        &app,
        b_card,
        json!({"to": "done", "output": "written by hand"}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{moved}");
    assert_eq!(moved["column"], "done");
    let t = task(&app, id, "b").await;
    assert_eq!(t["status"], "succeeded");
    let d = worker.dispatch(next).await;
    assert_eq!(d.task.key, "c");
    let from_b = d
        .upstream
        .iter()
        .find(|u| u.key == "b")
        .expect("b upstream");
    assert_eq!(from_b.output, Some(json!("written by hand")));
}

type HmacSha256 = Hmac<Sha256>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_deliver_signed_card_changes_and_retry_failures() {
    let receiver = MockServer::start().await;
    // The receiver is down for its first two requests.
    Mock::given(method("POST"))
        .and(path("/hook"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(2)
        .with_priority(1)
        .mount(&receiver)
        .await;
    Mock::given(method("POST"))
        .and(path("/hook"))
        .respond_with(ResponseTemplate::new(204))
        .with_priority(2)
        .mount(&receiver)
        .await;
    let mut settings = test_settings();
    settings.webhook_retry.base = Duration::from_millis(50);
    let app = spawn_app_on(&fresh_database().await, settings).await;
    let secret = "a-very-secret-secret";

    // Bad hooks are refused and nothing is stored.
    for (bad, field) in [
        (json!({"url": "ftp://x", "secret": secret}), "url"),
        (
            json!({"url": format!("{}/hook", receiver.uri()), "secret": "short"}),
            "secret",
        ),
        (
            json!({"url": format!("{}/hook", receiver.uri()), "secret": secret, "events": ["Nope!"]}),
            "events",
        ),
    ] {
        let (s, body) = app.post("/v1/webhooks", bad).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(body["error"]["details"]["field"], field);
    }
    let (_, hooks) = app.get("/v1/webhooks").await;
    assert_eq!(hooks["webhooks"].as_array().unwrap().len(), 0);

    let (s, hook) = app
        .post(
            "/v1/webhooks",
            json!({"url": format!("{}/hook", receiver.uri()), "secret": secret}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{hook}");
    assert_eq!(hook["events"], json!(["task.*"]));
    assert!(hook.get("secret").is_none(), "the secret is never shown");
    let hook_id = hook["id"].as_str().unwrap().to_owned();

    let worker = spawn_worker(5).await;
    app.register_fleet(&worker.url(), 4).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    app.wait_for_status(id, &["completed"]).await;
    let expected: Vec<i64> = sqlx::query_scalar(
        "SELECT id FROM orchestration_events WHERE kind LIKE 'task.%' ORDER BY id",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();

    // Every card change is delivered once (plus the two refused tries), signed.
    let log = wait_until("every delivery to succeed", || async {
        let (_, log) = app.get(&format!("/v1/webhooks/{hook_id}/deliveries")).await;
        let all = log["deliveries"].as_array().unwrap().clone();
        (all.len() == expected.len() && all.iter().all(|d| d["status"] == "delivered"))
            .then_some(all)
    })
    .await;
    let attempts: i64 = log.iter().map(|d| d["attempts"].as_i64().unwrap()).sum();
    assert_eq!(attempts, expected.len() as i64 + 2, "two retries: {log:?}");
    assert!(log.iter().any(|d| d["attempts"].as_i64().unwrap() > 1));
    assert!(log.iter().all(|d| d["last_status"] == 204));

    let requests = receiver.received_requests().await.unwrap();
    assert_eq!(requests.len(), expected.len() + 2);
    let mut delivered_events = Vec::new();
    for r in &requests {
        let ts = r
            .headers
            .get("x-coordinator-timestamp")
            .unwrap()
            .to_str()
            .unwrap();
        let sig = r
            .headers
            .get("x-coordinator-signature")
            .unwrap()
            .to_str()
            .unwrap();
        let mut mac = HmacSha256::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(format!("{ts}.").as_bytes());
        mac.update(&r.body);
        let want = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
        assert_eq!(
            sig,
            want,
            "signature of {}",
            String::from_utf8_lossy(&r.body)
        );
        let body: Value = serde_json::from_slice(&r.body).unwrap();
        assert_eq!(
            r.headers
                .get("x-coordinator-event")
                .unwrap()
                .to_str()
                .unwrap(),
            body["event"]["kind"].as_str().unwrap()
        );
        assert_eq!(body["webhook_id"], hook_id.as_str());
        assert_eq!(body["card"]["task_id"], body["event"]["task_id"]);
        delivered_events.push(body["event"]["id"].as_i64().unwrap());
    }
    delivered_events.sort_unstable();
    delivered_events.dedup();
    assert_eq!(delivered_events, expected);

    // A deleted hook stops; its log stays readable.
    let (s, _) = app
        .request(
            reqwest::Method::DELETE,
            &format!("/v1/webhooks/{hook_id}"),
            None,
            Some(&app.token),
        )
        .await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (_, shown) = app.get(&format!("/v1/webhooks/{hook_id}")).await;
    assert_eq!(shown["active"], false);
    let (s, _) = app
        .get(&format!("/v1/webhooks/{}/deliveries", uuid::Uuid::nil()))
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}
