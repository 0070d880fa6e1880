//! Agents can be managed: changed in place (`PATCH /v1/agents/{id}`, every
//! field validated as at registration, version-guarded, an agent changing
//! only its own name, capacity and status), retired (`DELETE`: history kept,
//! no new work, heartbeats refused), pins that could never be honoured
//! refused at approval, and a waiting task whose pinned agent goes offline
//! handed to the escalation ladder.

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

async fn register(app: &TestApp, body: Value) {
    let (s, b) = app.post("/v1/agents", body).await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
}

fn agent(id: &str, role: &str, url: &str) -> Value {
    json!({"agent_id": id, "role": role, "skills": ["research"], "endpoint_url": url,
           "max_concurrency": 2})
}

async fn patch(app: &TestApp, id: &str, body: Value, token: &str) -> (StatusCode, Value) {
    app.request(
        Method::PATCH,
        &format!("/v1/agents/{id}"),
        Some(body),
        Some(token),
    )
    .await
}

async fn agent_token(app: &TestApp, agent: &str) -> String {
    let (s, b) = app
        .post("/v1/tokens", json!({"role": "agent", "agent_id": agent}))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    b["token"].as_str().expect("token").to_owned()
}

/// Payloads of the workspace's events of `kind`, oldest first.
async fn events(app: &TestApp, kind: &str) -> Vec<Value> {
    sqlx::query_scalar("SELECT payload FROM orchestration_events WHERE kind = $1 ORDER BY id")
        .bind(kind)
        .fetch_all(&app.pool)
        .await
        .expect("events")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn patch_changes_each_field_and_bad_input_changes_nothing() {
    let app = spawn_app().await;
    register(&app, agent("a1", "researcher", "http://127.0.0.1:9")).await;
    register(&app, agent("a2", "researcher", "http://127.0.0.1:9")).await;
    let (_, before) = app.get("/v1/agents/a1").await;
    assert_eq!(before["version"], 1);
    assert_eq!(before["display_name"], Value::Null);

    // Each field, one request at a time; each adds one to the version.
    let changes = [
        ("role", json!("analyst")),
        ("display_name", json!("Ada")),
        ("skills", json!(["research", "writing"])),
        ("tools", json!(["browser"])),
        ("endpoint_url", json!("http://127.0.0.1:10/")),
        ("max_concurrency", json!(5)),
        ("model", json!("m-large")),
        ("model_tier", json!(3)),
        ("trust", json!(0.9)),
        ("cost_per_task", json!(0.25)),
        ("heartbeat_timeout_secs", json!(60)),
        ("status", json!("blocked")),
    ];
    for (i, (field, value)) in changes.iter().enumerate() {
        let (s, b) = patch(&app, "a1", json!({ *field: value }), &app.token).await;
        assert_eq!(s, StatusCode::OK, "{field}: {b}");
        let want = if *field == "endpoint_url" {
            json!("http://127.0.0.1:10")
        } else {
            value.clone()
        };
        assert_eq!(b[*field], want, "{field}");
        assert_eq!(b["version"], json!(i as i64 + 2), "{field}");
    }
    // `null` clears what may be empty.
    let (s, b) = patch(
        &app,
        "a1",
        json!({"display_name": null, "heartbeat_timeout_secs": null}),
        &app.token,
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(b["display_name"], Value::Null);
    assert_eq!(b["heartbeat_timeout_secs"], Value::Null);
    let updated = events(&app, "agent.updated").await;
    assert_eq!(updated.len(), changes.len() + 1);
    assert_eq!(
        updated[0]["changes"]["role"],
        json!({"from": "researcher", "to": "analyst"})
    );
    // The same values again change nothing: no version, no event.
    let (_, now) = app.get("/v1/agents/a1").await;
    let (s, same) = patch(&app, "a1", json!({"role": "analyst"}), &app.token).await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(same["version"], now["version"]);
    assert_eq!(events(&app, "agent.updated").await.len(), updated.len());

    // Bad input: 400 naming the field, and nothing changes.
    for (body, field) in [
        (json!({"role": " "}), "role"),
        (json!({"display_name": ""}), "display_name"),
        (json!({"skills": [""]}), "skills"),
        (json!({"tools": ["x".repeat(65)]}), "tools"),
        (json!({"endpoint_url": "ftp://127.0.0.1"}), "endpoint_url"),
        (
            json!({"endpoint_url": "http://u:p@127.0.0.1"}),
            "endpoint_url",
        ),
        // Outside the agent networks (loopback only by default).
        (
            json!({"endpoint_url": "http://10.9.8.7:80"}),
            "endpoint_url",
        ),
        (json!({"max_concurrency": 0}), "max_concurrency"),
        (json!({"model_tier": 11}), "model_tier"),
        (json!({"trust": 1.5}), "trust"),
        (json!({"cost_per_task": -1}), "cost_per_task"),
        (
            json!({"heartbeat_timeout_secs": 0}),
            "heartbeat_timeout_secs",
        ),
        (json!({"status": "retired"}), "status"),
    ] {
        let (s, b) = patch(&app, "a1", body.clone(), &app.token).await;
        // The egress policy's refusal is 422; a malformed value is 400.
        let (status, code) = if body.to_string().contains("10.9.8.7") {
            (StatusCode::UNPROCESSABLE_ENTITY, "url_refused")
        } else {
            (StatusCode::BAD_REQUEST, "invalid_request")
        };
        assert_eq!(s, status, "{body}: {b}");
        assert_eq!(b["error"]["code"], code, "{body}");
        assert_eq!(b["error"]["details"]["field"], field, "{body}: {b}");
    }
    for body in [
        json!({"status": "asleep"}),
        json!({"agent_id": "renamed"}),
        json!({"max_concurrency": "many"}),
    ] {
        let (s, b) = patch(&app, "a1", body.clone(), &app.token).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body}: {b}");
    }
    let (_, after) = app.get("/v1/agents/a1").await;
    assert_eq!(after, now, "bad input changed nothing");
    // A patch naming no field is a no-op (RFC 7396): the agent as it is.
    let (s, b) = patch(&app, "a1", json!({}), &app.token).await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(b["version"], now["version"], "{b}");

    // Optimistic concurrency.
    let v = now["version"].as_i64().unwrap();
    let (s, b) = patch(
        &app,
        "a1",
        json!({"version": v - 1, "trust": 0.1}),
        &app.token,
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT, "{b}");
    assert_eq!(b["error"]["code"], "version_conflict");
    assert_eq!(b["error"]["details"]["current"], v);
    let (s, b) = patch(&app, "a1", json!({"version": v, "trust": 0.1}), &app.token).await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(b["version"], v + 1);
    let (s, _) = patch(&app, "nobody", json!({"trust": 0.1}), &app.token).await;
    assert_eq!(s, StatusCode::NOT_FOUND);

    // Agent tokens: their own agent, and only its name, capacity and status.
    let own = agent_token(&app, "a2").await;
    let (s, b) = patch(&app, "a1", json!({"max_concurrency": 1}), &own).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{b}");
    let (s, b) = patch(&app, "a2", json!({"role": "lead"}), &own).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{b}");
    let (s, b) = patch(&app, "a2", json!({"trust": 1.0, "status": "idle"}), &own).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{b}");
    let (s, b) = patch(
        &app,
        "a2",
        json!({"display_name": "Two", "max_concurrency": 4, "status": "blocked"}),
        &own,
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(b["max_concurrency"], 4);
    let (_, a1) = app.get("/v1/agents/a1").await;
    assert_eq!(a1["max_concurrency"], 5, "a2's token did not touch a1");
    let last = events(&app, "agent.updated").await.pop().unwrap();
    assert_eq!(last["agent_id"], "a2");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retired_agent_finishes_its_attempt_but_gets_no_new_work() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    let mut first = agent("first", "researcher", &worker.url);
    first["trust"] = json!(0.95);
    register(&app, first).await;
    let mut second = agent("second", "researcher", &worker.url);
    second["trust"] = json!(0.05);
    register(&app, second).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    let a = worker.dispatch(1).await;
    assert_eq!((a.task.key.as_str(), a.agent_id.as_str()), ("a", "first"));

    // Only operators retire.
    let own = agent_token(&app, "first").await;
    let (s, _) = app
        .request(Method::DELETE, "/v1/agents/first", None, Some(&own))
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, retired) = app
        .request(Method::DELETE, "/v1/agents/first", None, Some(&app.token))
        .await;
    assert_eq!(s, StatusCode::OK, "{retired}");
    assert_eq!(retired["status"], "retired");
    assert!(retired["retired_at"].is_string());
    let ev = events(&app, "agent.retired").await;
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0]["live_attempts"], 1);
    assert_eq!(ev[0]["previous_status"], "working");
    // Again: no change, no second event.
    let (s, again) = app
        .request(Method::DELETE, "/v1/agents/first", None, Some(&app.token))
        .await;
    assert_eq!(s, StatusCode::OK);
    assert_eq!(again["version"], retired["version"]);
    assert_eq!(events(&app, "agent.retired").await.len(), 1);

    // Its live attempt finishes; the next task goes to the other agent.
    succeed(&app.http, &a, json!({"text": "a done"}), 0.0).await;
    let b = worker.dispatch(2).await;
    assert_eq!((b.task.key.as_str(), b.agent_id.as_str()), ("b", "second"));
    let (_, first) = app.get("/v1/agents/first").await;
    assert_eq!(
        first["status"], "retired",
        "finishing work did not revive it"
    );
    assert_eq!(first["running_count"], 0);

    // Heartbeats do not bring it back; neither does its own PATCH.
    let (s, body) = app
        .request(Method::POST, "/v1/agents/first/heartbeat", None, Some(&own))
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "agent_retired");
    let (s, body) = patch(&app, "first", json!({"status": "idle"}), &own).await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    // History kept: still listed, still named by its attempt.
    let (_, list) = app.get("/v1/agents").await;
    assert!(
        list["agents"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["agent_id"] == "first")
    );
    let t = task(&app, id, "a").await;
    assert_eq!(t["assigned_agent_id"], "first");

    // An operator brings it back.
    let (s, body) = patch(&app, "first", json!({"status": "idle"}), &app.token).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["retired_at"], Value::Null);
    succeed(&app.http, &b, json!({"text": "b done"}), 0.0).await;
    let c = worker.dispatch(3).await;
    assert_eq!((c.task.key.as_str(), c.agent_id.as_str()), ("c", "first"));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approving_a_pin_the_claim_could_never_honour_is_refused_with_the_reason() {
    let app = spawn_app().await;
    let spec = json!({
        "name": "team",
        "roles": [{"id": "senior"}, {"id": "junior"}],
        "groups": [{"id": "team", "roles": ["senior", "junior"]}],
        "missions": [{"id": "m", "goals": [{"id": "g_research", "plan": ["research"]}]}],
        "norms": [{"id": "no-juniors", "role": "junior", "modality": "prohibition", "target": "g_research"}]
    });
    let (s, b) = app
        .request(
            Method::PUT,
            "/v1/org-spec",
            Some(json!({"spec": spec})),
            Some(&app.token),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    let url = "http://127.0.0.1:9";
    for (id, role) in [
        ("ok", "senior"),
        ("junior", "junior"),
        ("away", "senior"),
        ("gone", "senior"),
    ] {
        register(&app, agent(id, role, url)).await;
    }
    let (s, _) = patch(&app, "away", json!({"status": "offline"}), &app.token).await;
    assert_eq!(s, StatusCode::OK);
    let (s, _) = app
        .request(Method::DELETE, "/v1/agents/gone", None, Some(&app.token))
        .await;
    assert_eq!(s, StatusCode::OK);
    let m = app
        .create_mission(json!({"goal": "chain", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    for (agent_id, reason) in [
        ("junior", "prohibited"),
        ("away", "offline"),
        ("gone", "retired"),
        ("ghost", "unknown_agent"),
    ] {
        let (s, b) = app
            .post(
                &format!("/v1/missions/{id}/approve"),
                json!({"assignments": {"a": agent_id}}),
            )
            .await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{agent_id}: {b}");
        assert_eq!(b["error"]["code"], "invalid_assignments");
        let p = &b["error"]["details"]["problems"][0];
        assert_eq!(p["reason"], reason, "{b}");
        assert_eq!(p["agent_id"], agent_id);
        assert_eq!(p["task"], "a");
        assert!(
            b["error"]["message"].as_str().unwrap().contains(agent_id),
            "{b}"
        );
    }
    let (_, mission) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(
        mission["status"], "awaiting_approval",
        "refusals changed nothing"
    );
    let (s, b) = app
        .post(
            &format!("/v1/missions/{id}/approve"),
            json!({"assignments": {"a": "ok"}}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    app.stop().await;
}

/// Approves a chain a → b → c with `a` pinned to `other` and `b` to `pinned`,
/// a heartbeat-monitored agent that then goes silent while `a` runs.
async fn pin_then_go_silent(app: &TestApp, worker: &ManualWorker, other_skills: &[&str]) -> String {
    let mut pinned = agent("pinned", "researcher", &worker.url);
    pinned["heartbeat_timeout_secs"] = json!(1);
    register(app, pinned).await;
    let mut other = agent("other", "researcher", &worker.url);
    other["skills"] = json!(other_skills);
    register(app, other).await;
    let m = app
        .create_mission(json!({"goal": "chain", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap().to_owned();
    let a_on = if other_skills.contains(&"research") {
        "other"
    } else {
        "pinned"
    };
    let (s, b) = app
        .post(
            &format!("/v1/missions/{id}/approve"),
            json!({"assignments": {"a": a_on, "b": "pinned"}}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    let a = worker.dispatch(1).await;
    assert_eq!(a.task.key, "a");
    // No heartbeat: within its timeout and a sweep it is offline.
    wait_until("the pinned agent to go offline", || async {
        let (_, p) = app.get("/v1/agents/pinned").await;
        (p["status"] == "offline").then_some(())
    })
    .await;
    if a_on == "other" {
        succeed(&app.http, &a, json!({"text": "a done"}), 0.0).await;
    }
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_pinned_to_an_agent_that_went_offline_moves_to_another_agent() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    let id = pin_then_go_silent(&app, &worker, &["research"]).await;
    // b is ready, its pin cannot be honoured: the ladder hands it to `other`.
    let b = worker.dispatch(2).await;
    assert_eq!((b.task.key.as_str(), b.agent_id.as_str()), ("b", "other"));
    let lost = wait_until("task.pin_unavailable", || async {
        events(&app, "task.pin_unavailable").await.pop()
    })
    .await;
    assert_eq!(lost["key"], "b");
    assert_eq!(lost["agent_id"], "pinned");
    assert_eq!(lost["reason"], "offline");
    assert_eq!(lost["rung"], "other_agent");
    assert_eq!(lost["outcome"], "unpinned");
    let (pinned,): (Option<String>,) =
        sqlx::query_as("SELECT pinned_agent_id FROM orchestration_tasks WHERE run_id = $1::uuid AND task_key = 'b'")
            .bind(&id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(pinned, None);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_nobody_else_able_a_lost_pin_goes_to_a_person() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    // `other` cannot do research: nobody else can take b.
    let id = pin_then_go_silent(&app, &worker, &["writing"]).await;
    // a ran on `pinned`; going offline failed its attempt, so a waits for
    // a retry still pinned to `pinned`, which nobody can honour.
    let t = wait_task(&app, &id, "a", "awaiting_human").await;
    assert_eq!(t["status"], "awaiting_human");
    let lost = events(&app, "task.pin_unavailable").await;
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert_eq!(lost[0]["key"], "a");
    assert_eq!(lost[0]["outcome"], "awaiting_human");
    assert_eq!(lost[0]["rung"], "human");
    app.stop().await;
}
