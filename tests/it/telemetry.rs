//! Traces: the real binary exports spans over OTLP (to a collector stand-in
//! at its HTTP boundary), sends `traceparent` to workers and joins a
//! callback's `traceparent`; and graceful shutdown.

use std::{
    process::Stdio,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{Json, Router, http::HeaderMap, routing::post};
use coordinator::worker::protocol::DispatchRequest;
use reqwest::StatusCode;
use serde_json::{Value, json};
use tokio::{
    io::{AsyncBufReadExt, BufReader},
    process::Command,
};

use crate::helpers::*;

/// An OTLP/HTTP collector stand-in: keeps every JSON export request.
async fn collector() -> (String, Arc<Mutex<Vec<Value>>>) {
    let got: Arc<Mutex<Vec<Value>>> = Arc::default();
    let store = got.clone();
    let app = Router::new().route(
        "/v1/traces",
        post(move |Json(body): Json<Value>| {
            let store = store.clone();
            async move {
                store.lock().expect("lock").push(body);
                Json(json!({}))
            }
        }),
    );
    (serve(app).await, got)
}

/// Dispatches received, each with its `traceparent` header.
type Received = Arc<Mutex<Vec<(DispatchRequest, Option<String>)>>>;

/// A worker that accepts every dispatch (202) and keeps it with its
/// `traceparent` header.
async fn recording_worker() -> (String, Received) {
    let got: Received = Arc::default();
    let store = got.clone();
    let app = Router::new().route(
        "/v1/tasks",
        post(
            move |headers: HeaderMap, Json(req): Json<DispatchRequest>| {
                let store = store.clone();
                async move {
                    let tp = headers
                        .get("traceparent")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    store.lock().expect("lock").push((req, tp));
                    (
                        axum::http::StatusCode::ACCEPTED,
                        Json(json!({"accepted": true})),
                    )
                }
            },
        ),
    );
    (serve(app).await, got)
}

async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// Every span of every export, flattened, with the resource's service name.
fn spans(exports: &[Value]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for export in exports {
        for rs in export["resourceSpans"].as_array().into_iter().flatten() {
            let service = attr(&rs["resource"], "service.name").unwrap_or_default();
            for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
                for span in ss["spans"].as_array().into_iter().flatten() {
                    out.push((service.clone(), span.clone()));
                }
            }
        }
    }
    out
}

/// A span's (or resource's) attribute as a string.
fn attr(node: &Value, key: &str) -> Option<String> {
    node["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| {
            let v = &a["value"];
            v["stringValue"]
                .as_str()
                .map(str::to_owned)
                .or_else(|| v["intValue"].as_str().map(str::to_owned))
                .or_else(|| v["intValue"].as_i64().map(|i| i.to_string()))
                .unwrap_or_else(|| v.to_string())
        })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_are_exported_and_trace_context_crosses_the_worker_boundary() {
    let db = fresh_database().await;
    let (otlp, exports) = collector().await;
    let (worker, dispatches) = recording_worker().await;
    let token = "telemetry-test-admin-token-0123456789abcdef";
    let mut child = Command::new(env!("CARGO_BIN_EXE_coordinator"))
        .args(["serve", "--listen", "127.0.0.1:0", "--tick-ms", "100"])
        .env("DATABASE_URL", &db)
        .env("COORDINATOR_BOOTSTRAP_TOKEN", token)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &otlp)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
        .env("OTEL_BSP_SCHEDULE_DELAY", "100")
        .env_remove("OTEL_SERVICE_NAME")
        .env_remove("RUST_LOG")
        .env_remove("COORDINATOR_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn serve");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let url = announced_url(&mut lines, str::to_owned).await;
    // Keep draining stderr so the child never blocks on a full pipe.
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let log_store = log.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            log_store.lock().expect("lock").push(line);
        }
    });

    let http = reqwest::Client::new();
    let post = |path: &str, body: Value| {
        http.post(format!("{url}{path}"))
            .bearer_auth(token)
            .json(&body)
            .send()
    };
    let r = post(
        "/v1/agents",
        json!({"agent_id": "researcher", "role": "researcher", "skills": ["research"],
               "endpoint_url": worker, "max_concurrency": 2}),
    )
    .await
    .expect("register");
    assert_eq!(r.status(), StatusCode::CREATED);
    let r = post(
        "/v1/missions",
        json!({"goal": "traced chain", "autonomy": "autonomous", "plan": chain_plan()}),
    )
    .await
    .expect("create");
    assert_eq!(r.status(), StatusCode::CREATED);
    let mission: Value = r.json().await.expect("mission");
    let mission_id = mission["id"].as_str().expect("id").to_owned();

    // Work the chain as a worker: each callback echoes the dispatch's traceparent.
    for n in 1..=3 {
        let (d, header) = wait_until(&format!("dispatch #{n}"), || async {
            dispatches.lock().expect("lock").get(n - 1).cloned()
        })
        .await;
        assert!(
            header.is_some(),
            "dispatch #{n} carried no traceparent header"
        );
        assert_eq!(header, d.callback.traceparent, "header and body agree");
        succeed(&http, &d, json!({"step": n}), 0.0).await;
    }
    wait_until("the mission to complete", || async {
        let m: Value = http
            .get(format!("{url}/v1/missions/{mission_id}"))
            .bearer_auth(token)
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        (m["status"] == "completed").then_some(())
    })
    .await;

    // A graceful stop flushes what is left.
    let pid = child.id().expect("pid").to_string();
    let term = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(term.success());
    let status = tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .expect("serve stopped in time")
        .expect("wait");
    assert!(
        status.success(),
        "{status:?}: {:?}",
        log.lock().expect("lock")
    );

    let exported = exports.lock().expect("lock").clone();
    let all = spans(&exported);
    assert!(!all.is_empty(), "no spans exported");
    assert!(all.iter().all(|(service, _)| service == "coordinator"));
    let named = |name: &str| -> Vec<Value> {
        all.iter()
            .filter(|(_, s)| s["name"] == name)
            .map(|(_, s)| s.clone())
            .collect()
    };
    for phase in [
        "engine.tick",
        "tick.dispatch",
        "tick.reconcile",
        "tick.sweep",
    ] {
        assert!(!named(phase).is_empty(), "no {phase} span");
    }
    let dispatched = dispatches.lock().expect("lock").clone();
    for (d, header) in &dispatched {
        let header = header.as_deref().expect("traceparent");
        let parts: Vec<&str> = header.split('-').collect();
        let (trace, parent) = (parts[1], parts[2]);
        // The attempt's root span carries its ids.
        let root = named("dispatch")
            .into_iter()
            .find(|s| s["traceId"] == trace)
            .unwrap_or_else(|| panic!("no dispatch span in trace {trace}"));
        assert_eq!(
            attr(&root, "mission_id").as_deref(),
            Some(mission_id.as_str())
        );
        assert_eq!(attr(&root, "task_id"), Some(d.task_id.to_string()));
        assert_eq!(attr(&root, "attempt_id"), Some(d.attempt_id.to_string()));
        assert_eq!(attr(&root, "attempt").as_deref(), Some("1"));
        assert_eq!(attr(&root, "agent_id").as_deref(), Some("researcher"));
        // The header names the worker call span, a child of the dispatch.
        let call = named("POST /v1/tasks")
            .into_iter()
            .find(|s| s["spanId"] == parent)
            .expect("the traceparent names the worker call span");
        assert_eq!(call["traceId"], trace);
        assert_eq!(call["parentSpanId"], root["spanId"]);
        assert_eq!(
            attr(&call, "http.response.status_code").as_deref(),
            Some("202")
        );
        // The callback joined the same trace, under the worker call.
        let callback = named("POST /v1/attempts/{id}/result")
            .into_iter()
            .find(|s| s["traceId"] == trace)
            .expect("the callback's request span is in the dispatch's trace");
        assert_eq!(callback["parentSpanId"], parent);
        let applied = named("report.apply")
            .into_iter()
            .find(|s| s["traceId"] == trace && s["parentSpanId"] == callback["spanId"])
            .expect("the report is applied inside the callback span");
        assert_eq!(attr(&applied, "task_id"), Some(d.task_id.to_string()));
        assert_eq!(attr(&applied, "origin").as_deref(), Some("callback"));
    }
}

/// A worker whose first dispatch request hangs until the test releases it
/// (never, here); later ones are accepted at once.
async fn hanging_worker(
    answer_after: Option<Duration>,
) -> (String, Arc<Mutex<Vec<DispatchRequest>>>) {
    let got: Arc<Mutex<Vec<DispatchRequest>>> = Arc::default();
    let store = got.clone();
    let app = Router::new().route(
        "/v1/tasks",
        post(move |Json(req): Json<DispatchRequest>| {
            let store = store.clone();
            async move {
                let first = {
                    let mut got = store.lock().expect("lock");
                    got.push(req);
                    got.len() == 1
                };
                if first {
                    match answer_after {
                        Some(wait) => tokio::time::sleep(wait).await,
                        None => std::future::pending::<()>().await,
                    }
                }
                (
                    axum::http::StatusCode::ACCEPTED,
                    Json(json!({"accepted": true})),
                )
            }
        }),
    );
    (serve(app).await, got)
}

async fn task_row(pool: &sqlx::PgPool, task: uuid::Uuid) -> (String, Option<String>) {
    sqlx::query_as("SELECT status, lease_owner FROM orchestration_tasks WHERE id = $1")
        .bind(task)
        .fetch_one(pool)
        .await
        .expect("task")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_cuts_off_a_hung_dispatch_after_the_grace_and_releases_its_lease() {
    let db = fresh_database().await;
    let mut settings = test_settings();
    settings.engine.shutdown_grace = Duration::from_millis(800);
    // Far longer than the test: only the release can free the task in time.
    settings.engine.lease = Duration::from_secs(300);
    let first = spawn_app_on(&db, settings.clone()).await;
    let (worker, got) = hanging_worker(None).await;
    first.register_fleet(&worker, 2).await;
    first
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let d = wait_until("the first dispatch", || async {
        got.lock().expect("lock").first().cloned()
    })
    .await;
    let pool = first.pool.clone();
    let (status, owner) = task_row(&pool, d.task_id).await;
    assert_eq!((status.as_str(), owner.is_some()), ("running", true));

    let started = Instant::now();
    first.stop().await;
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(800) && took < Duration::from_secs(10),
        "the stop waited the grace period, then cut off: {took:?}"
    );
    // Released at once, not after the 300 s lease: failed as infrastructure
    // and back in line for a retry.
    let (attempt_status, error): (String, Option<String>) =
        sqlx::query_as("SELECT status, error FROM task_attempts WHERE id = $1")
            .bind(d.attempt_id)
            .fetch_one(&pool)
            .await
            .expect("attempt");
    assert_eq!(attempt_status, "expired");
    assert!(error.unwrap_or_default().contains("lease"));
    let (status, owner) = task_row(&pool, d.task_id).await;
    assert_ne!(status, "running");
    assert_eq!(owner, None);

    // Another replica takes the task over straight away.
    let second = spawn_app_on(&db, settings).await;
    let again = wait_until_within("the retry's dispatch", Duration::from_secs(20), || async {
        got.lock().expect("lock").get(1).cloned()
    })
    .await;
    assert_eq!(again.task_id, d.task_id);
    assert_eq!(again.attempt_number, 2);
    second.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_lets_a_dispatch_finish_within_the_grace() {
    let db = fresh_database().await;
    let mut settings = test_settings();
    settings.engine.shutdown_grace = Duration::from_secs(20);
    let app = spawn_app_on(&db, settings).await;
    let (worker, got) = hanging_worker(Some(Duration::from_millis(1500))).await;
    app.register_fleet(&worker, 2).await;
    app.create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let d = wait_until("the first dispatch", || async {
        got.lock().expect("lock").first().cloned()
    })
    .await;
    let pool = app.pool.clone();
    let started = Instant::now();
    app.stop().await;
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(15),
        "the stop ended once the dispatch was answered: {took:?}"
    );
    // The worker accepted it: the attempt lives on, its lease untouched.
    let (attempt_status,): (String,) =
        sqlx::query_as("SELECT status FROM task_attempts WHERE id = $1")
            .bind(d.attempt_id)
            .fetch_one(&pool)
            .await
            .expect("attempt");
    assert_eq!(attempt_status, "dispatching");
    let (status, owner) = task_row(&pool, d.task_id).await;
    assert_eq!((status.as_str(), owner.is_some()), ("running", true));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_gives_back_a_planning_lease_it_cut_short() {
    use coordinator::planning::llm::{LlmConfig, LlmPlanner, ResponseFormat};
    use wiremock::{
        Mock, MockServer, ResponseTemplate,
        matchers::{method, path},
    };
    // A model that takes far longer than the test.
    let llm = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(ResponseTemplate::new(200).set_delay(Duration::from_secs(300)))
        .mount(&llm)
        .await;
    let mut cfg = LlmConfig::new(format!("{}/v1", llm.uri()), "mock-model");
    cfg.response_format = ResponseFormat::JsonObject;
    let mut settings = test_settings();
    settings.planning.llm = Some(Arc::new(LlmPlanner::new(cfg).expect("planner")));
    settings.engine.shutdown_grace = Duration::from_millis(500);
    let db = fresh_database().await;
    let app = spawn_app_on(&db, settings).await;
    let m = app
        .create_mission(json!({"goal": "Zorble the frobnitz quux", "autonomy": "autonomous"}))
        .await;
    let id: uuid::Uuid = m["id"].as_str().expect("id").parse().expect("uuid");
    wait_until("the model to be called", || async {
        let calls = llm.received_requests().await.unwrap_or_default();
        (!calls.is_empty()).then_some(())
    })
    .await;
    let pool = app.pool.clone();
    let lease = || async {
        let row: (String, Option<String>, i32) = sqlx::query_as(
            "SELECT status, planning_lease_owner, planning_attempts FROM orchestration_runs WHERE id = $1",
        )
        .bind(id)
        .fetch_one(&pool)
        .await
        .expect("mission");
        row
    };
    let (status, owner, attempts) = lease().await;
    assert_eq!(
        (status.as_str(), owner.is_some(), attempts),
        ("planning", true, 1)
    );
    app.stop().await;
    // Free for the next replica now, and the cut-short round not counted.
    assert_eq!(lease().await, ("planning".to_owned(), None, 0));
}
