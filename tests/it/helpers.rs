//! Test harness: a real PostgreSQL (DATABASE_URL, or a throwaway cluster from
//! the local binaries shared by this test binary), a fresh database per test,
//! the real service on 127.0.0.1, and real HTTP workers.

use std::{
    future::Future,
    net::SocketAddr,
    sync::{Arc, Mutex, OnceLock},
    time::Duration,
};

use axum::{Json, Router, http::StatusCode, routing::post};
use coordinator::{
    api::{Application, Settings},
    auth, db,
    local_postgres::LocalPostgres,
    worker::{
        protocol::DispatchRequest,
        simulate::{SimulatedWorker, SimulationConfig},
    },
};
use serde_json::{Value, json};
use sqlx::{Connection, Executor, PgConnection, PgPool};
use tokio::sync::oneshot;

static SERVER: OnceLock<String> = OnceLock::new();

/// URL of a server where tests may create databases.
fn server_url() -> String {
    if let Ok(url) = std::env::var("DATABASE_URL") {
        return url;
    }
    SERVER
        .get_or_init(|| {
            // Started on a thread with its own runtime, so it outlives every
            // test's runtime; it stops when this process exits (its stdin
            // pipe closes) and removes its directory.
            std::thread::spawn(|| {
                let rt = tokio::runtime::Runtime::new().expect("runtime");
                let pg = rt.block_on(LocalPostgres::start_throwaway()).expect(
                    "starting a throwaway PostgreSQL (set DATABASE_URL to use another server)",
                );
                let url = pg.url().to_owned();
                std::mem::forget(pg);
                url
            })
            .join()
            .expect("cluster thread")
        })
        .clone()
}

/// A fresh, migrated database; returns its URL.
pub async fn fresh_database() -> String {
    let base = server_url();
    let mut conn = PgConnection::connect(&base)
        .await
        .expect("connect to test server");
    let name = format!("t_{}", uuid::Uuid::new_v4().simple());
    conn.execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .await
        .expect("create test database");
    conn.close().await.ok();
    let mut url = reqwest::Url::parse(&base).expect("database url");
    url.set_path(&format!("/{name}"));
    let url = url.to_string();
    let pool = db::connect(&url, 2).await.expect("connect");
    db::migrate(&pool).await.expect("migrate");
    pool.close().await;
    url
}

/// A running service.
pub struct TestApp {
    /// API base URL.
    pub url: String,
    /// Admin token of the default workspace.
    pub token: String,
    /// The service's pool (for assertions on the database).
    pub pool: PgPool,
    /// HTTP client.
    pub http: reqwest::Client,
    /// Base URL of the metrics listener (`/metrics` without a token), if any.
    pub metrics_url: Option<String>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

/// Test defaults: fast ticks and retries.
pub fn test_settings() -> Settings {
    let mut s = Settings::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    s.engine.tick_interval = Duration::from_millis(100);
    s.engine.sweep_interval = Duration::from_millis(500);
    s.engine.retry_base = Duration::from_millis(50);
    s.engine.retry_cap = Duration::from_millis(200);
    // Most tests point webhooks and agent subscriptions at receivers on
    // loopback, which the webhook egress policy refuses by default; the
    // egress tests (`egress.rs`) start from `Settings::new` defaults instead.
    s.egress.webhook_networks = coordinator::egress::parse_networks("127.0.0.0/8").expect("a CIDR");
    s
}

/// Starts the service on a fresh database with test defaults.
pub async fn spawn_app() -> TestApp {
    spawn_app_on(&fresh_database().await, test_settings()).await
}

/// Starts `n` replicas with test defaults on one fresh database.
pub async fn spawn_replicas(n: usize) -> Vec<TestApp> {
    let db = fresh_database().await;
    let mut apps = Vec::with_capacity(n);
    for _ in 0..n {
        apps.push(spawn_app_on(&db, test_settings()).await);
    }
    apps
}

/// Starts the service on `db_url` with `settings` (replicas share a URL).
pub async fn spawn_app_on(db_url: &str, settings: Settings) -> TestApp {
    let pool = db::connect(db_url, 10).await.expect("connect");
    let token = "test-admin-token-0123456789abcdef0123456789".to_owned();
    auth::ensure_bootstrap(&pool, Some(&token))
        .await
        .expect("bootstrap");
    let app = Application::build(pool.clone(), settings)
        .await
        .expect("build app");
    let url = app.url();
    let metrics_url = app.metrics_url();
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(app.run_until_stopped(async {
        let _ = rx.await;
    }));
    TestApp {
        url,
        token,
        pool,
        http: reqwest::Client::new(),
        metrics_url,
        stop: Some(tx),
        task: Some(task),
    }
}

impl TestApp {
    /// Stops the service and waits for it.
    pub async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }

    /// `GET` with the admin token; returns (status, body).
    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.request(reqwest::Method::GET, path, None, Some(&self.token))
            .await
    }

    /// `POST` with the admin token; returns (status, body).
    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.request(reqwest::Method::POST, path, Some(body), Some(&self.token))
            .await
    }

    /// Any request, with an optional bearer token.
    pub async fn request(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        token: Option<&str>,
    ) -> (StatusCode, Value) {
        call(&self.http, &self.url, method, path, body, token).await
    }

    /// Registers agents covering every skill at `endpoint`, each with `cap` slots.
    pub async fn register_fleet(&self, endpoint: &str, cap: i32) {
        for (id, skills) in [
            ("planner", vec!["planning", "analysis"]),
            ("researcher", vec!["research", "analysis"]),
            ("writer", vec!["writing", "planning"]),
            ("engineer", vec!["coding", "testing"]),
            ("reviewer", vec!["review", "testing", "analysis"]),
        ] {
            let (status, body) = self
                .post(
                    "/v1/agents",
                    json!({"agent_id": id, "role": id, "skills": skills, "tools": [],
                           "endpoint_url": endpoint, "max_concurrency": cap}),
                )
                .await;
            assert_eq!(status, StatusCode::CREATED, "{body}");
        }
    }

    /// Creates a mission; panics unless 201.
    pub async fn create_mission(&self, body: Value) -> Value {
        let (status, mission) = self.post("/v1/missions", body).await;
        assert_eq!(status, StatusCode::CREATED, "{mission}");
        mission
    }

    /// Waits (up to 30 s) until the mission's status is one of `statuses`; returns the mission.
    pub async fn wait_for_status(&self, id: &str, statuses: &[&str]) -> Value {
        self.wait_for_status_within(id, statuses, Duration::from_secs(30))
            .await
    }

    /// Like [`Self::wait_for_status`] with a longer deadline (real models are slow).
    pub async fn wait_for_status_within(
        &self,
        id: &str,
        statuses: &[&str],
        limit: Duration,
    ) -> Value {
        let path = format!("/v1/missions/{id}");
        wait_until_within(
            &format!("mission {id} to reach {statuses:?}"),
            limit,
            || async {
                let (_, m) = self.get(&path).await;
                statuses
                    .contains(&m["status"].as_str().unwrap_or(""))
                    .then_some(m)
            },
        )
        .await
    }
}

/// Polls `check` until it yields `Some`, failing the test after 30 s.
pub async fn wait_until<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    wait_until_within(what, Duration::from_secs(30), check).await
}

/// Polls `check` until it yields `Some`, failing the test after `limit`.
pub async fn wait_until_within<T, F, Fut>(what: &str, limit: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A simulated worker with short latency.
pub async fn spawn_worker(latency_ms: u64) -> SimulatedWorker {
    SimulatedWorker::spawn(
        SocketAddr::from(([127, 0, 0, 1], 0)),
        SimulationConfig {
            latency_ms,
            ..SimulationConfig::default()
        },
    )
    .await
    .expect("worker")
}

/// A worker the test drives by hand: it accepts every dispatch (202), keeps
/// the request (with its callback token), and never reports on its own.
pub struct ManualWorker {
    /// Base URL.
    pub url: String,
    received: Arc<Mutex<Vec<DispatchRequest>>>,
    cancels: Arc<Mutex<Vec<String>>>,
    progress: Arc<Mutex<Vec<String>>>,
}

impl ManualWorker {
    /// Starts it.
    pub async fn spawn() -> ManualWorker {
        let received: Arc<Mutex<Vec<DispatchRequest>>> = Arc::default();
        let cancels: Arc<Mutex<Vec<String>>> = Arc::default();
        let store = received.clone();
        let cancel_store = cancels.clone();
        let progress: Arc<Mutex<Vec<String>>> = Arc::default();
        let progress_store = progress.clone();
        let app = Router::new()
            .route(
                "/v1/tasks",
                post(move |Json(req): Json<DispatchRequest>| {
                    let store = store.clone();
                    async move {
                        store.lock().expect("lock").push(req);
                        (StatusCode::ACCEPTED, Json(json!({"accepted": true})))
                    }
                }),
            )
            .route(
                "/v1/tasks/{attempt}/cancel",
                post(
                    move |axum::extract::Path(attempt): axum::extract::Path<String>| {
                        let store = cancel_store.clone();
                        async move {
                            store.lock().expect("lock").push(attempt);
                            StatusCode::OK
                        }
                    },
                ),
            )
            .route(
                "/v1/tasks/{attempt}/progress",
                post(
                    move |axum::extract::Path(attempt): axum::extract::Path<String>| {
                        let store = progress_store.clone();
                        async move {
                            store.lock().expect("lock").push(attempt);
                            StatusCode::OK
                        }
                    },
                ),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move { axum::serve(listener, app).await });
        ManualWorker {
            url,
            received,
            cancels,
            progress,
        }
    }

    /// Waits until the worker was told to cancel `attempt`.
    pub async fn wait_for_cancel(&self, attempt: &str) {
        wait_until(&format!("cancel of {attempt}"), || async {
            self.cancels
                .lock()
                .expect("lock")
                .iter()
                .any(|a| a == attempt)
                .then_some(())
        })
        .await
    }

    /// Waits until the worker was asked how `attempt` is progressing.
    pub async fn wait_for_progress_check(&self, attempt: &str) {
        wait_until(&format!("progress check of {attempt}"), || async {
            self.progress
                .lock()
                .expect("lock")
                .iter()
                .any(|a| a == attempt)
                .then_some(())
        })
        .await
    }

    /// Progress checks received so far.
    pub fn progress_checks(&self) -> usize {
        self.progress.lock().expect("lock").len()
    }

    /// Waits for the `n`-th dispatch (1-based) and returns it.
    pub async fn dispatch(&self, n: usize) -> DispatchRequest {
        self.dispatch_within(n, Duration::from_secs(30)).await
    }

    /// Waits up to `limit` for the `n`-th dispatch (1-based) and returns it.
    pub async fn dispatch_within(&self, n: usize, limit: Duration) -> DispatchRequest {
        wait_until_within(&format!("dispatch #{n}"), limit, || async {
            self.received.lock().expect("lock").get(n - 1).cloned()
        })
        .await
    }

    /// How many dispatches arrived.
    pub fn count(&self) -> usize {
        self.received.lock().expect("lock").len()
    }
}

/// Posts a worker report with an attempt token.
pub async fn report(
    http: &reqwest::Client,
    d: &DispatchRequest,
    token: &str,
    body: Value,
) -> (StatusCode, Value) {
    let mut request = http.post(&d.callback.result_url).bearer_auth(token);
    // As a worker should: the callback joins the trace of its dispatch.
    if let Some(tp) = &d.callback.traceparent {
        request = request.header("traceparent", tp);
    }
    let resp = request.json(&body).send().await.expect("report");
    let status = StatusCode::from_u16(resp.status().as_u16()).expect("status");
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// `n` independent research tasks (`t0`, `t1`, …), all ready at once.
pub fn parallel_plan(n: usize) -> Value {
    let tasks: Vec<Value> = (0..n)
        .map(|i| {
            json!({"id": format!("t{i}"), "title": format!("Part {i}"), "task_type": "research",
                   "required_skills": ["research"],
                   "success_criteria": [{"description": "done", "must_pass": true}],
                   "estimated_cost": 0.01})
        })
        .collect();
    json!({ "tasks": tasks })
}

/// A three-task plan: a → b → c.
pub fn chain_plan() -> Value {
    let task = |id: &str, deps: &[&str]| {
        json!({"id": id, "title": format!("Step {id}"), "task_type": "research",
               "required_skills": ["research"], "depends_on": deps,
               "success_criteria": [{"description": "done", "must_pass": true}],
               "estimated_cost": 0.01})
    };
    json!({"tasks": [task("a", &[]), task("b", &["a"]), task("c", &["b"])]})
}

/// A replica running in a runtime of its own, so a test can kill it outright
/// (every task of it stops at once, mid-whatever, like a crashed process).
pub struct IsolatedReplica {
    /// API base URL.
    pub url: String,
    runtime: Option<tokio::runtime::Runtime>,
}

impl IsolatedReplica {
    /// Starts a replica on `db_url` in its own runtime.
    pub async fn spawn(db_url: &str, settings: Settings) -> IsolatedReplica {
        let db_url = db_url.to_owned();
        let (runtime, url) = tokio::task::spawn_blocking(move || {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .enable_all()
                .build()
                .expect("runtime");
            let url = rt.block_on(async {
                let pool = db::connect(&db_url, 5).await.expect("connect");
                let app = Application::build(pool, settings).await.expect("build");
                let url = app.url();
                tokio::spawn(app.run_until_stopped(std::future::pending()));
                url
            });
            (rt, url)
        })
        .await
        .expect("replica thread");
        IsolatedReplica {
            url,
            runtime: Some(runtime),
        }
    }

    /// Kills it: its runtime stops without any graceful shutdown.
    pub fn kill(mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// Reports a failed attempt.
pub async fn fail(http: &reqwest::Client, d: &DispatchRequest, error: &str) {
    let (s, body) = report(
        http,
        d,
        &d.callback.token,
        json!({"status": "failed", "error": error}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
}

/// Reports a succeeded attempt.
pub async fn succeed(http: &reqwest::Client, d: &DispatchRequest, output: Value, cost: f64) {
    let (s, body) = report(
        http,
        d,
        &d.callback.token,
        json!({"status": "succeeded", "output": output, "cost": cost}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
}

/// The task with `key` in the mission view.
pub async fn task(app: &TestApp, id: &str, key: &str) -> Value {
    let (_, m) = app.get(&format!("/v1/missions/{id}")).await;
    m["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["key"] == key)
        .cloned()
        .unwrap_or_else(|| panic!("no task {key} in {m}"))
}

/// Waits for the task with `key` to reach `status`.
pub async fn wait_task(app: &TestApp, id: &str, key: &str, status: &str) -> Value {
    wait_until(&format!("task {key} to be {status}"), || async {
        let t = task(app, id, key).await;
        (t["status"] == status).then_some(t)
    })
    .await
}

/// Fails the next `times` dispatches, which must be of task `key`.
pub async fn fail_times(
    worker: &ManualWorker,
    http: &reqwest::Client,
    next: &mut usize,
    times: usize,
    key: &str,
) {
    for _ in 0..times {
        let d = worker.dispatch(*next).await;
        assert_eq!(d.task.key, key);
        fail(http, &d, "no").await;
        *next += 1;
    }
}

/// Any request to the service at `base`, with an optional bearer token;
/// returns (status, JSON body or null).
pub async fn call(
    http: &reqwest::Client,
    base: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
    token: Option<&str>,
) -> (StatusCode, Value) {
    let mut req = http.request(method, format!("{base}{path}"));
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.expect("request");
    let status = StatusCode::from_u16(resp.status().as_u16()).expect("status");
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// Reads a `serve` child's stderr until it announces its address (within
/// 60 s); `message` gives a line's message (the line itself in human logs).
pub async fn announced_url<R: tokio::io::AsyncBufRead + Unpin>(
    lines: &mut tokio::io::Lines<R>,
    message: impl Fn(&str) -> String,
) -> String {
    tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let line = lines
                .next_line()
                .await
                .expect("read stderr")
                .expect("serve exited before listening");
            if let Some(url) = message(&line).strip_prefix("coordinator listening on ") {
                return url.trim().to_owned();
            }
        }
    })
    .await
    .expect("serve started listening in time")
}

/// Payloads of the mission's events of `kind`, in order.
pub async fn events(app: &TestApp, id: &str, kind: &str) -> Vec<Value> {
    sqlx::query_scalar(
        "SELECT payload FROM orchestration_events WHERE run_id = $1::uuid AND kind = $2 ORDER BY seq",
    )
    .bind(id)
    .bind(kind)
    .fetch_all(&app.pool)
    .await
    .expect("read the mission's events")
}

/// Registers agent `solo` (skill `research`) at `endpoint` with cap `cap`;
/// returns its workspace.
pub async fn register_solo(app: &TestApp, endpoint: &str, cap: i32) -> uuid::Uuid {
    let (status, body) = app
        .post(
            "/v1/agents",
            json!({"agent_id": "solo", "role": "solo", "skills": ["research"], "tools": [],
                   "endpoint_url": endpoint, "max_concurrency": cap}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    sqlx::query_scalar("SELECT workspace_id FROM agents WHERE agent_id = 'solo'")
        .fetch_one(&app.pool)
        .await
        .unwrap()
}

/// Agent `solo`'s stored running count and the slots pending in its returns.
pub async fn solo_row_and_pending(app: &TestApp) -> (i32, i32) {
    sqlx::query_as(
        "SELECT running_count, agent_pending_slots(workspace_id, agent_id)
         FROM agents WHERE agent_id = 'solo'",
    )
    .fetch_one(&app.pool)
    .await
    .unwrap()
}

/// An admin token of another workspace ("elsewhere", made on first use).
pub async fn other_workspace_token(app: &TestApp) -> String {
    let mut conn = app.pool.acquire().await.unwrap();
    let other = coordinator::auth::workspace_by_name(&mut conn, "elsewhere")
        .await
        .unwrap();
    let token = coordinator::auth::generate_token();
    coordinator::auth::insert_token(
        &mut conn,
        other,
        coordinator::auth::Role::Admin,
        "elsewhere",
        None,
        &token,
    )
    .await
    .unwrap();
    token
}

/// Imports a BPMN document as a new workflow; panics unless 201.
pub async fn import_workflow(app: &TestApp, xml: Vec<u8>) -> Value {
    post_workflow_document(app, "/v1/workflows/import", xml).await
}

/// Imports a BPMN document as the next version of `workflow`; panics unless 201.
pub async fn import_workflow_version(app: &TestApp, workflow: &str, xml: Vec<u8>) -> Value {
    post_workflow_document(app, &format!("/v1/workflows/{workflow}/versions"), xml).await
}

async fn post_workflow_document(app: &TestApp, path: &str, xml: Vec<u8>) -> Value {
    let resp = app
        .http
        .post(format!("{}{path}", app.url))
        .bearer_auth(&app.token)
        .header("content-type", "application/xml")
        .body(xml)
        .send()
        .await
        .expect("import");
    let status = resp.status().as_u16();
    let body: Value = resp.json().await.unwrap_or(Value::Null);
    assert_eq!(status, 201, "{body}");
    body
}
