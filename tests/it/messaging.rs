//! The agent side of the coordination layer: registry rules, ACL messages
//! and inboxes, conversations, pushes, reservations, subscriptions and the
//! unified status view — each failure mode of RFC-001 included.

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;
use wiremock::{
    Mock, MockServer, ResponseTemplate,
    matchers::{method, path},
};

use crate::helpers::*;

async fn register(app: &TestApp, id: &str, role: &str, endpoint: &str) {
    let (s, b) = app
        .post(
            "/v1/agents",
            json!({"agent_id": id, "role": role, "skills": ["research"], "endpoint_url": endpoint}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
}

async fn agent_token(app: &TestApp, agent: &str) -> String {
    let (s, b) = app
        .post("/v1/tokens", json!({"role": "agent", "agent_id": agent}))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    b["token"].as_str().expect("token").to_owned()
}

async fn as_token(
    app: &TestApp,
    token: &str,
    m: Method,
    p: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    app.request(m, p, body, Some(token)).await
}

async fn message_count(app: &TestApp) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM agent_messages")
        .fetch_one(&app.pool)
        .await
        .expect("count")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_rules_and_every_send_failure_mode_change_nothing() {
    let app = spawn_app().await;
    register(&app, "ui-1", "ui", "http://127.0.0.1:9").await;
    register(&app, "graph-1", "graph", "http://127.0.0.1:9").await;

    // Duplicate agent_id: 409, the first registration stays.
    let (s, b) = app
        .post(
            "/v1/agents",
            json!({"agent_id": "ui-1", "role": "other", "endpoint_url": "http://127.0.0.1:9"}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "{b}");
    assert_eq!(b["error"]["code"], "agent_exists");
    let (_, a) = app.get("/v1/agents/ui-1").await;
    assert_eq!(a["role"], "ui");

    let ui = agent_token(&app, "ui-1").await;
    // An agent token can only send as itself…
    let (s, b) = as_token(
        &app,
        &ui,
        Method::POST,
        "/v1/messages",
        Some(json!({"from": "graph-1", "to": "ui-1", "subject": "spoof"})),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{b}");
    // …and only read its own inbox or heartbeat for itself.
    let (s, _) = as_token(&app, &ui, Method::GET, "/v1/agents/graph-1/inbox", None).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _) = as_token(
        &app,
        &ui,
        Method::POST,
        "/v1/agents/graph-1/heartbeat",
        None,
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN);

    // Unknown sender and unknown recipient: 422 with a code.
    let (s, b) = app
        .post("/v1/messages", json!({"from": "ghost", "to": "ui-1"}))
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
    assert_eq!(b["error"]["code"], "unknown_sender");
    let (s, b) = as_token(
        &app,
        &ui,
        Method::POST,
        "/v1/messages",
        Some(json!({"to": "ghost"})),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
    assert_eq!(b["error"]["code"], "unknown_recipient");
    let (s, b) = as_token(
        &app,
        &ui,
        Method::POST,
        "/v1/messages",
        Some(json!({"to": "role:nobody"})),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
    assert_eq!(b["error"]["code"], "no_recipients");

    // Missing linkage on categorised messages; BLOCKED needs action and urgency.
    for body in [
        json!({"to": "graph-1", "category": "HANDOFF", "subject": "take it"}),
        json!({"to": "graph-1", "category": "INFO"}),
        json!({"to": "graph-1", "category": "BLOCKED", "mission_id": Uuid::new_v4(),
               "content": {"requested_action": "x"}}),
        json!({"to": "role:graph", "category": "HANDOFF", "mission_id": Uuid::new_v4()}),
        json!({"to": "graph-1", "performative": "SHOUT"}),
        json!({"to": "graph-1", "content": "not an object"}),
    ] {
        let (s, b) = as_token(&app, &ui, Method::POST, "/v1/messages", Some(body.clone())).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body} → {b}");
        assert!(b["error"]["code"].is_string());
    }
    // Linkage that names nothing.
    let (s, b) = as_token(
        &app,
        &ui,
        Method::POST,
        "/v1/messages",
        Some(json!({"to": "graph-1", "category": "INFO", "task_id": Uuid::new_v4()})),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
    assert_eq!(b["error"]["code"], "unknown_task");
    assert_eq!(message_count(&app).await, 0, "refused sends wrote nothing");

    // Ack on an unknown message: 404; reading someone else's message: 404.
    let (s, _) = as_token(
        &app,
        &ui,
        Method::POST,
        &format!("/v1/agents/ui-1/inbox/{}/ack", Uuid::new_v4()),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);

    // An agent reports its own state with its heartbeat; offline is not reportable.
    let (s, _) = as_token(
        &app,
        &ui,
        Method::POST,
        "/v1/agents/ui-1/heartbeat",
        Some(json!({"status": "blocked"})),
    )
    .await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (_, a) = app.get("/v1/agents/ui-1").await;
    assert_eq!(a["status"], "blocked");
    assert!(a["last_seen_at"].is_string());
    let (s, b) = as_token(
        &app,
        &ui,
        Method::POST,
        "/v1/agents/ui-1/heartbeat",
        Some(json!({"status": "offline"})),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{b}");
    let (_, a) = app.get("/v1/agents/ui-1").await;
    assert_eq!(
        a["status"], "blocked",
        "a refused heartbeat changes nothing"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inbox_lifecycle_broadcast_threads_and_idempotent_resend() {
    let app = spawn_app().await;
    for (id, role) in [
        ("lead", "lead"),
        ("qa-1", "qa"),
        ("qa-2", "qa"),
        ("dev-1", "dev"),
    ] {
        register(&app, id, role, "http://127.0.0.1:9").await;
    }
    let lead = agent_token(&app, "lead").await;
    let qa1 = agent_token(&app, "qa-1").await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "approve", "plan": chain_plan()}))
        .await;
    let mission = m["id"].as_str().unwrap();

    // A BLOCKED message to a role reaches both QA agents, not the sender.
    let id = Uuid::new_v4();
    let body = json!({"id": id, "to": "role:qa", "category": "BLOCKED", "mission_id": mission,
                      "subject": "need fixtures",
                      "content": {"requested_action": "share fixtures", "urgency": "high"}});
    let (s, sent) = as_token(
        &app,
        &lead,
        Method::POST,
        "/v1/messages",
        Some(body.clone()),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{sent}");
    assert_eq!(sent["from"], "lead");
    assert_eq!(sent["requires_ack"], true);
    let recipients: Vec<&str> = sent["recipients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["agent_id"].as_str().unwrap())
        .collect();
    assert_eq!(recipients, ["qa-1", "qa-2"]);

    // Sending the same id again is a replay (200, same message); another body is a conflict.
    let (s, again) = as_token(&app, &lead, Method::POST, "/v1/messages", Some(body)).await;
    assert_eq!(s, StatusCode::OK, "{again}");
    assert_eq!(again["id"], sent["id"]);
    let (s, b) = as_token(
        &app,
        &lead,
        Method::POST,
        "/v1/messages",
        Some(json!({"id": id, "to": "qa-1", "subject": "different"})),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT, "{b}");
    assert_eq!(b["error"]["code"], "message_id_reused");
    assert_eq!(message_count(&app).await, 1);

    // unread → read → acked; reading again is harmless; acking again is 409.
    let inbox = "/v1/agents/qa-1/inbox";
    let (s, i) = as_token(
        &app,
        &qa1,
        Method::GET,
        &format!("{inbox}?state=unread"),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{i}");
    assert_eq!(i["counts"]["unread"], 1);
    assert_eq!(i["counts"]["unacked"], 1);
    let (s, e) = as_token(
        &app,
        &qa1,
        Method::POST,
        &format!("{inbox}/{id}/read"),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{e}");
    assert_eq!(e["state"], "read");
    let (s, e) = as_token(
        &app,
        &qa1,
        Method::POST,
        &format!("{inbox}/{id}/read"),
        None,
    )
    .await;
    assert_eq!((s, e["state"].as_str()), (StatusCode::OK, Some("read")));
    let (s, e) = as_token(&app, &qa1, Method::POST, &format!("{inbox}/{id}/ack"), None).await;
    assert_eq!(s, StatusCode::OK, "{e}");
    assert_eq!(e["state"], "acked");
    let (s, b) = as_token(&app, &qa1, Method::POST, &format!("{inbox}/{id}/ack"), None).await;
    assert_eq!(s, StatusCode::CONFLICT, "{b}");
    assert_eq!(b["error"]["code"], "already_acked");
    // qa-2 is untouched by qa-1's ack.
    let (_, i2) = app.get("/v1/agents/qa-2/inbox").await;
    assert_eq!(i2["messages"][0]["state"], "unread");
    // The ack is on the mission's log.
    let (_, evs) = app.get(&format!("/v1/missions/{mission}/events")).await;
    let kinds: Vec<&str> = evs["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    assert!(
        kinds.contains(&"message.sent") && kinds.contains(&"message.acked"),
        "{kinds:?}"
    );

    // A reply tree: two replies to the root, one reply to a reply.
    let (_, r1) = as_token(
        &app,
        &qa1,
        Method::POST,
        "/v1/messages",
        Some(json!({"to": "lead", "performative": "INFORM", "reply_to": id, "subject": "on it"})),
    )
    .await;
    let qa2 = agent_token(&app, "qa-2").await;
    let (_, r2) = as_token(
        &app,
        &qa2,
        Method::POST,
        "/v1/messages",
        Some(json!({"to": "lead", "performative": "PROPOSE", "reply_to": id})),
    )
    .await;
    let (s, r3) = as_token(
        &app,
        &lead,
        Method::POST,
        "/v1/messages",
        Some(json!({"to": "qa-2", "performative": "ACCEPT", "reply_to": r2["id"]})),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{r3}");
    assert_eq!(
        r1["conversation_id"], sent["conversation_id"],
        "replies inherit the thread"
    );
    let (s, conv) = app
        .get(&format!(
            "/v1/conversations/{}",
            sent["conversation_id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(s, StatusCode::OK, "{conv}");
    assert_eq!(conv["message_count"], 4);
    let root = &conv["threads"][0];
    assert_eq!(root["message"]["id"], id.to_string());
    assert_eq!(root["replies"].as_array().unwrap().len(), 2);
    assert_eq!(root["replies"][1]["replies"][0]["message"]["id"], r3["id"]);
    let (s, _) = app
        .get(&format!("/v1/conversations/{}", Uuid::new_v4()))
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);

    // Broadcast to all skips the sender.
    let (_, all) = as_token(
        &app,
        &lead,
        Method::POST,
        "/v1/messages",
        Some(json!({"to": "all", "subject": "standup"})),
    )
    .await;
    assert_eq!(all["recipients"].as_array().unwrap().len(), 3, "{all}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_and_subscribed_events_are_pushed_to_worker_endpoints() {
    let app = spawn_app().await;
    let receiver = MockServer::start().await;
    // Fails twice, then accepts: pushes are retried.
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(2)
        .mount(&receiver)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/messages"))
        .respond_with(ResponseTemplate::new(202))
        .mount(&receiver)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/events"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&receiver)
        .await;
    register(&app, "pushed", "ops", &receiver.uri()).await;
    register(&app, "poller", "ops", "http://127.0.0.1:9").await;

    // Subscribe `pushed` to reservation events about agents of role ops.
    let (s, sub) = app
        .post(
            "/v1/agents/pushed/subscriptions",
            json!({"role": "ops", "events": ["reservation.*"], "secret": "0123456789abcdef"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{sub}");
    assert_eq!(sub["agent_id"], "pushed");
    let (s, b) = app
        .post(
            "/v1/agents/ghost/subscriptions",
            json!({"secret": "0123456789abcdef"}),
        )
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{b}");

    let (s, sent) = app
        .post(
            "/v1/messages",
            json!({"from": "poller", "to": "pushed", "performative": "REQUEST",
                   "content": {"action": "rotate logs"}}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{sent}");
    let mid = sent["id"].as_str().unwrap().to_owned();
    let entry = wait_until("the push is delivered after two failures", || async {
        let (_, m) = app.get(&format!("/v1/messages/{mid}")).await;
        let r = m["recipients"][0].clone();
        (r["push_state"] == "delivered").then_some(r)
    })
    .await;
    assert_eq!(entry["push_attempts"], 3);
    let pushes: Vec<Value> = receiver
        .received_requests()
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.url.path() == "/v1/messages")
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect();
    assert_eq!(pushes.len(), 3);
    assert!(
        pushes
            .iter()
            .all(|p| p["agent_id"] == "pushed" && p["message"]["id"] == mid)
    );

    // A reservation by `poller` (role ops) reaches `pushed` through its subscription.
    let (s, r) = app
        .post(
            "/v1/reservations",
            json!({"scope": "deploy/*", "agent_id": "poller", "ttl_secs": 60}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{r}");
    let event = wait_until("the subscribed event is pushed", || async {
        receiver
            .received_requests()
            .await
            .unwrap()
            .into_iter()
            .find(|r| r.url.path() == "/v1/events")
            .map(|r| serde_json::from_slice::<Value>(&r.body).unwrap())
    })
    .await;
    assert_eq!(event["event"]["kind"], "reservation.created");
    assert_eq!(event["event"]["payload"]["scope"], "deploy/*");
    assert!(event["event"]["mission_id"].is_null());

    // Unsubscribe: 204, then it is inactive.
    let sub_id = sub["id"].as_str().unwrap();
    let (s, _) = app
        .request(
            Method::DELETE,
            &format!("/v1/agents/pushed/subscriptions/{sub_id}"),
            None,
            Some(&app.token),
        )
        .await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (_, subs) = app.get("/v1/agents/pushed/subscriptions").await;
    assert_eq!(subs["webhooks"][0]["active"], false);
    // Another workspace's agent is as unknown as one that never existed.
    let (s, b) = app.get("/v1/agents/ghost/subscriptions").await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{b}");
    let other = other_workspace_token(&app).await;
    let (s, b) = app
        .request(
            Method::GET,
            "/v1/agents/pushed/subscriptions",
            None,
            Some(&other),
        )
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{b}");
    assert_eq!(b["error"]["code"], "not_found", "{b}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reservations_conflict_expire_get_taken_over_and_show_in_status() {
    let app = spawn_app().await;
    register(&app, "ui-1", "ui", "http://127.0.0.1:9").await;
    register(&app, "graph-1", "graph", "http://127.0.0.1:9").await;
    let ui = agent_token(&app, "ui-1").await;
    let graph = agent_token(&app, "graph-1").await;

    let (s, held) = as_token(
        &app,
        &ui,
        Method::POST,
        "/v1/reservations",
        Some(json!({"scope": "src/api/*", "ttl_secs": 600, "note": "routes"})),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{held}");
    assert_eq!(held["agent_id"], "ui-1");
    assert_eq!(held["holds"], true);

    // An overlapping scope held by someone else: 409 naming the holder.
    let (s, b) = as_token(
        &app,
        &graph,
        Method::POST,
        "/v1/reservations",
        Some(json!({"scope": "src/api/mod.rs"})),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT, "{b}");
    assert_eq!(b["error"]["code"], "reservation_conflict");
    assert_eq!(b["error"]["details"]["holder"], "ui-1");
    assert_eq!(b["error"]["details"]["reservation_id"], held["id"]);
    // A disjoint scope is fine; reserving for another agent is not.
    let (s, _) = as_token(
        &app,
        &graph,
        Method::POST,
        "/v1/reservations",
        Some(json!({"scope": "src/graph/*"})),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);
    let (s, _) = as_token(
        &app,
        &graph,
        Method::POST,
        "/v1/reservations",
        Some(json!({"scope": "x", "agent_id": "ui-1"})),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    // Bad input changes nothing.
    for body in [json!({"scope": ""}), json!({"scope": "a", "ttl_secs": 0})] {
        let (s, _) = as_token(&app, &graph, Method::POST, "/v1/reservations", Some(body)).await;
        assert_eq!(s, StatusCode::BAD_REQUEST);
    }
    // The holder renews by reserving the same scope again.
    let (s, renewed) = as_token(
        &app,
        &ui,
        Method::POST,
        "/v1/reservations",
        Some(json!({"scope": "src/api/*", "ttl_secs": 900})),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{renewed}");
    assert_eq!(renewed["id"], held["id"]);

    // The unified status shows what ui-1 holds and owes.
    app.post(
        "/v1/messages",
        json!({"from": "graph-1", "to": "ui-1", "subject": "ping"}),
    )
    .await;
    let (s, st) = as_token(&app, &ui, Method::GET, "/v1/agents/ui-1/status", None).await;
    assert_eq!(s, StatusCode::OK, "{st}");
    assert_eq!(st["agent"]["agent_id"], "ui-1");
    assert_eq!(st["reservations"].as_array().unwrap().len(), 1);
    assert_eq!(st["reservations"][0]["scope"], "src/api/*");
    assert_eq!(st["inbox"]["unread"], 1);
    assert_eq!(st["unread"][0]["message"]["subject"], "ping");
    assert!(st["tasks"].as_array().unwrap().is_empty());

    // Stale takeover: make ui-1's reservation stale, then graph-1 takes the scope.
    sqlx::query("UPDATE reservations SET expires_at = now() - interval '1 second' WHERE id = $1")
        .bind(Uuid::parse_str(held["id"].as_str().unwrap()).unwrap())
        .execute(&app.pool)
        .await
        .unwrap();
    let (s, taken) = as_token(
        &app,
        &graph,
        Method::POST,
        "/v1/reservations",
        Some(json!({"scope": "src/api/mod.rs"})),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{taken}");
    let (_, old) = app
        .get(&format!(
            "/v1/reservations/{}",
            held["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(old["state"], "expired");
    assert_eq!(old["taken_over_by"], taken["id"]);
    // Releasing the expired one is a 409; only the holder may release.
    let (s, b) = as_token(
        &app,
        &ui,
        Method::POST,
        &format!("/v1/reservations/{}/release", held["id"].as_str().unwrap()),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT, "{b}");
    assert_eq!(b["error"]["code"], "reservation_not_active");
    let taken_id = taken["id"].as_str().unwrap();
    let (s, _) = as_token(
        &app,
        &ui,
        Method::POST,
        &format!("/v1/reservations/{taken_id}/release"),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, rel) = as_token(
        &app,
        &graph,
        Method::POST,
        &format!("/v1/reservations/{taken_id}/release"),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{rel}");
    assert_eq!(rel["state"], "released");

    // The sweep marks stale reservations expired without a takeover.
    let (_, g) = app.get("/v1/reservations?agent=graph-1&state=active").await;
    let graph_held = g["reservations"][0]["id"].as_str().unwrap().to_owned();
    sqlx::query("UPDATE reservations SET expires_at = now() - interval '1 second' WHERE id = $1")
        .bind(Uuid::parse_str(&graph_held).unwrap())
        .execute(&app.pool)
        .await
        .unwrap();
    wait_until("the sweep expires the stale reservation", || async {
        let (_, r) = app.get(&format!("/v1/reservations/{graph_held}")).await;
        (r["state"] == "expired").then_some(())
    })
    .await;
    let (_, overlap) = app.get("/v1/reservations?scope=src/api/*").await;
    assert_eq!(
        overlap["reservations"].as_array().unwrap().len(),
        2,
        "{overlap}"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_replicas_never_grant_overlapping_reservations() {
    let db = fresh_database().await;
    let a = spawn_app_on(&db, test_settings()).await;
    let b = spawn_app_on(&db, test_settings()).await;
    for i in 0..8 {
        register(&a, &format!("agent-{i}"), "dev", "http://127.0.0.1:9").await;
    }
    // Eight agents race for overlapping scopes through two replicas, many rounds.
    for round in 0..10 {
        let tries = (0..8).map(|i| {
            let app = if i % 2 == 0 { &a } else { &b };
            let scope = if i % 3 == 0 {
                format!("round-{round}/*")
            } else {
                format!("round-{round}/file-{i}")
            };
            let body = json!({"scope": scope, "agent_id": format!("agent-{i}")});
            async move { app.post("/v1/reservations", body).await }
        });
        let results = futures::future::join_all(tries).await;
        let granted: Vec<&Value> = results
            .iter()
            .filter(|(s, _)| *s == StatusCode::CREATED)
            .map(|(_, b)| b)
            .collect();
        assert!(
            results
                .iter()
                .all(|(s, _)| *s == StatusCode::CREATED || *s == StatusCode::CONFLICT),
            "{results:?}"
        );
        // Granted scopes never overlap one another.
        for (i, x) in granted.iter().enumerate() {
            for y in &granted[i + 1..] {
                let (sx, sy) = (x["scope"].as_str().unwrap(), y["scope"].as_str().unwrap());
                assert!(
                    !coordinator::coordination::reservations::scopes_overlap(sx, sy),
                    "round {round}: {sx} and {sy} both granted"
                );
            }
        }
        assert!(!granted.is_empty());
    }
    a.stop().await;
    b.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_worker_takes_pushed_messages_and_subscribed_events() {
    let app = spawn_app().await;
    let worker = spawn_worker(10).await;
    register(&app, "sim", "sim", &worker.url()).await;
    register(&app, "manual", "ops", "http://127.0.0.1:9").await;
    let (s, _) = app
        .post(
            "/v1/agents/sim/subscriptions",
            json!({"events": ["message.*"], "secret": "0123456789abcdef"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED);
    let (_, sent) = app
        .post(
            "/v1/messages",
            json!({"from": "manual", "to": "sim", "performative": "QUERY", "subject": "status?"}),
        )
        .await;
    let mid = sent["id"].as_str().unwrap().to_owned();
    wait_until(
        "the simulated worker took the push and the event",
        || async {
            let (_, m) = app.get(&format!("/v1/messages/{mid}")).await;
            let stats = worker.stats();
            (m["recipients"][0]["push_state"] == "delivered"
                && stats.messages == 1
                && stats.events >= 1)
                .then_some(())
        },
    )
    .await;
    // An endpoint without the route answers 404: the message stays in the inbox, unpushed.
    let manual = ManualWorker::spawn().await;
    register(&app, "manual-2", "ops", &manual.url).await;
    let (_, sent) = app
        .post("/v1/messages", json!({"from": "sim", "to": "manual-2"}))
        .await;
    let mid = sent["id"].as_str().unwrap().to_owned();
    let r = wait_until("the push is judged unsupported", || async {
        let (_, m) = app.get(&format!("/v1/messages/{mid}")).await;
        let r = m["recipients"][0].clone();
        (r["push_state"] == "unsupported").then_some(r)
    })
    .await;
    assert_eq!(
        r["push_attempts"], 1,
        "no retries for an endpoint without pushes"
    );
    assert_eq!(r["state"], "unread");
    app.stop().await;
}
