//! Agent tool-call round trips: one agent, holding the attempt token of a
//! real dispatch, calls `blackboard_read` over REST (`POST /v1/tools/{name}`)
//! and over MCP (`POST /mcp`, JSON-RPC `tools/call`), against the plain
//! `GET /healthz` round trip measured in the same run as the baseline.
//!
//! Run: `cargo bench --bench agent_tools` (uses `DATABASE_URL` if set, else
//! starts a throwaway PostgreSQL from the local binaries; add `-- --quick`
//! for a short pass). Prints p50 and p95 per surface and each as a ratio to
//! the baseline; the last line is space-separated `key=value` figures.

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{Json, Router, http::StatusCode, routing::post};
use coordinator::{
    api::{Application, Settings},
    auth, db,
    local_postgres::LocalPostgres,
    worker::protocol::DispatchRequest,
};
use serde_json::{Value, json};

const ADMIN: &str = "bench-admin-token-0123456789abcdef0123456789";

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Runs `n` sequential requests built by `send`; returns sorted latencies in ms.
async fn measure<F, Fut>(n: usize, mut send: F) -> Vec<f64>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for _ in 0..n / 10 {
        send().await; // warm-up
    }
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        send().await;
        out.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    out.sort_by(f64::total_cmp);
    out
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let n = if quick { 200 } else { 2_000 };
    let _pg;
    let server = match std::env::var("DATABASE_URL") {
        Ok(url) => url,
        Err(_) => {
            let pg = LocalPostgres::start_throwaway().await?;
            let url = pg.url().to_owned();
            _pg = pg;
            url
        }
    };
    let name = format!("bench_tools_{}", uuid::Uuid::new_v4().simple());
    let admin_pool = db::connect(&server, 2).await?;
    sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
        .execute(&admin_pool)
        .await?;
    let mut url = reqwest::Url::parse(&server)?;
    url.set_path(&format!("/{name}"));
    let pool = db::connect(url.as_str(), 10).await?;
    db::migrate(&pool).await?;
    auth::ensure_bootstrap(&pool, Some(ADMIN)).await?;
    let app =
        Application::build(pool, Settings::new(SocketAddr::from(([127, 0, 0, 1], 0)))).await?;
    let base = app.url();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let running = tokio::spawn(app.run_until_stopped(async {
        let _ = stop_rx.await;
    }));

    // A worker that keeps every dispatch (and never reports), so the
    // attempt stays live while the agent calls its tools.
    let got: Arc<Mutex<Vec<DispatchRequest>>> = Arc::default();
    let keep = got.clone();
    let worker = Router::new().route(
        "/v1/tasks",
        post(move |Json(d): Json<DispatchRequest>| {
            let keep = keep.clone();
            async move {
                keep.lock().expect("lock").push(d);
                StatusCode::ACCEPTED
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let worker_url = format!("http://{}", listener.local_addr()?);
    tokio::spawn(async move { axum::serve(listener, worker).await });

    let http = reqwest::Client::new();
    let admin = |r: reqwest::RequestBuilder| r.bearer_auth(ADMIN);
    admin(http.post(format!("{base}/v1/agents")))
        .json(
            &json!({"agent_id": "bench-agent", "role": "researcher", "skills": ["research"],
                      "endpoint_url": worker_url, "max_concurrency": 4}),
        )
        .send()
        .await?
        .error_for_status()?;
    // Plans need a few tasks; only the first is dispatched (and held).
    let task = |id: &str, deps: &[&str]| {
        json!({"id": id, "title": format!("Hold {id}"), "task_type": "research",
               "required_skills": ["research"], "depends_on": deps,
               "success_criteria": [{"description": "ok", "must_pass": true}]})
    };
    let plan = json!({"tasks": [task("a", &[]), task("b", &["a"]), task("c", &["b"])]});
    admin(http.post(format!("{base}/v1/missions")))
        .json(&json!({"goal": "bench", "autonomy": "autonomous", "plan": plan}))
        .send()
        .await?
        .error_for_status()?;
    let deadline = Instant::now() + Duration::from_secs(30);
    let token = loop {
        if let Some(d) = got.lock().expect("lock").first() {
            break d.callback.token.clone();
        }
        anyhow::ensure!(Instant::now() < deadline, "no dispatch within 30 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let call = |path: &str, body: Value| {
        http.post(format!("{base}{path}"))
            .bearer_auth(&token)
            .header("accept", "application/json, text/event-stream")
            .json(&body)
    };
    call(
        "/v1/tools/blackboard_write",
        json!({"key": "k", "value": {"n": 1}}),
    )
    .send()
    .await?
    .error_for_status()?;
    // Check both surfaces answer before timing them.
    let mcp_body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": "blackboard_read", "arguments": {"key": "k"}}});
    let probe: Value = call("/mcp", mcp_body.clone()).send().await?.json().await?;
    anyhow::ensure!(
        probe["result"]["structuredContent"]["value"]["n"] == 1,
        "MCP tools/call did not answer as expected: {probe}"
    );

    let health = measure(n, || async {
        let r = http
            .get(format!("{base}/healthz"))
            .send()
            .await
            .expect("healthz");
        assert!(r.status().is_success());
        r.bytes().await.expect("body");
    })
    .await;
    let rest = measure(n, || async {
        let r = call("/v1/tools/blackboard_read", json!({"key": "k"}))
            .send()
            .await
            .expect("rest");
        assert!(r.status().is_success());
        r.bytes().await.expect("body");
    })
    .await;
    let mcp = measure(n, || async {
        let r = call("/mcp", mcp_body.clone()).send().await.expect("mcp");
        assert!(r.status().is_success());
        r.bytes().await.expect("body");
    })
    .await;

    let (h50, h95) = (percentile(&health, 0.5), percentile(&health, 0.95));
    println!("{n} sequential round trips each, one client, loopback");
    println!(
        "{:<28} {:>9} {:>9} {:>9} {:>9}",
        "surface", "p50 ms", "p95 ms", "p50 ×", "p95 ×"
    );
    let mut line = Vec::new();
    for (label, key, v) in [
        ("GET /healthz (baseline)", "healthz", &health),
        ("REST POST /v1/tools/{name}", "rest", &rest),
        ("MCP tools/call", "mcp", &mcp),
    ] {
        let (p50, p95) = (percentile(v, 0.5), percentile(v, 0.95));
        println!(
            "{label:<28} {p50:>9.3} {p95:>9.3} {:>9.2} {:>9.2}",
            p50 / h50,
            p95 / h95
        );
        line.push(format!(
            "{key}_p50_ms={p50:.3} {key}_p95_ms={p95:.3} {key}_p50_ratio={:.2}",
            p50 / h50
        ));
    }
    println!("{}", line.join(" "));
    let _ = stop_tx.send(());
    let _ = running.await;
    Ok(())
}
