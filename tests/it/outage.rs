//! The database going away for 30 s under a running replica, and coming
//! back on its own: while it is away `/readyz` says so, requests answer 503
//! within the pool's timeout and an open event stream stays open; once it
//! is back every long-lived loop works again without a restart — the tick
//! and its LISTEN wake-up, the event stream (the same connection), the
//! webhook pump, the BDI schedule and retention — and the metrics count
//! the outage.

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use coordinator::{local_postgres::LocalPostgres, retention::RetentionConfig};
use serde_json::{Value, json};
use wiremock::{
    Mock, MockServer, ResponseTemplate,
    matchers::{method, path},
};

use crate::helpers::*;

/// How long the database stays away.
const OUTAGE: Duration = Duration::from_secs(30);

/// One figure of a Prometheus text scrape.
fn figure(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

async fn scrape(http: &reqwest::Client, metrics_url: &str) -> String {
    http.get(format!("{metrics_url}/metrics"))
        .send()
        .await
        .expect("scrape")
        .text()
        .await
        .expect("text")
}

/// Reads the workspace's event stream into `seen` until the test ends,
/// failing if the connection ends: it must outlive the outage.
fn follow_stream(app: &TestApp) -> tokio::sync::watch::Receiver<Vec<Value>> {
    let (tx, rx) = tokio::sync::watch::channel(Vec::new());
    let req = app
        .http
        .get(format!("{}/v1/events", app.url))
        .bearer_auth(&app.token)
        .header("accept", "text/event-stream");
    tokio::spawn(async move {
        let mut resp = req.send().await.expect("stream");
        assert_eq!(resp.status(), StatusCode::OK);
        let mut buf = String::new();
        while let Ok(Some(chunk)) = resp.chunk().await {
            buf.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = buf.find("\n\n") {
                let block: String = buf.drain(..end + 2).collect();
                if let Some(data) = block.lines().find_map(|l| l.strip_prefix("data:"))
                    && let Ok(v) = serde_json::from_str::<Value>(data.trim_start())
                {
                    tx.send_modify(|seen| seen.push(v));
                }
            }
        }
        // Dropping the sender marks the stream as ended.
    });
    rx
}

async fn readyz(app: &TestApp) -> StatusCode {
    app.request(reqwest::Method::GET, "/readyz", None, None)
        .await
        .0
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_loop_survives_the_database_going_away_for_30_seconds() {
    let dir = std::env::temp_dir().join(format!("coordinator-outage-{}", uuid::Uuid::new_v4()));
    let pg = LocalPostgres::start(&dir).await.expect("postgres");
    let url = pg.url().to_owned();
    let setup = coordinator::db::connect(&url, 1).await.expect("pool");
    coordinator::db::migrate(&setup).await.expect("migrate");
    setup.close().await;
    let receiver = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/hook"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&receiver)
        .await;
    let mut settings = test_settings();
    settings.bdi_interval_secs = 1;
    settings.retention = RetentionConfig {
        max_age: Some(Duration::from_secs(3600)),
        every_secs: 1,
    };
    settings.metrics_listen = Some(std::net::SocketAddr::from(([127, 0, 0, 1], 0)));
    let app = spawn_app_on(&url, settings).await;
    let metrics_url = app.metrics_url.clone().expect("metrics listener");
    let worker = spawn_worker(5).await;
    app.register_fleet(&worker.url(), 4).await;
    let (s, hook) = app
        .post(
            "/v1/webhooks",
            json!({"url": format!("{}/hook", receiver.uri()), "secret": "a-very-secret-secret",
                   "events": ["mission.*"]}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{hook}");
    let hook_id = hook["id"].as_str().expect("hook id").to_owned();
    // BDI state, so the schedule has a workspace to maintain.
    let (s, b) = app
        .request(
            reqwest::Method::PUT,
            "/v1/agents/planner/beliefs",
            Some(json!({"category": "environment", "subject": "market",
                        "content": "steady", "certainty": 0.7, "reason": "seed"})),
            Some(&app.token),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    let stream = follow_stream(&app);
    let first = app
        .create_mission(json!({"goal": "before", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    app.wait_for_status(first["id"].as_str().expect("id"), &["completed"])
        .await;
    assert_eq!(readyz(&app).await, StatusCode::OK);

    // The database goes away.
    pg.stop().await.expect("stop postgres");
    let gone = Instant::now();
    let status = wait_until_within(
        "/readyz to say not ready",
        Duration::from_secs(10),
        || async {
            let s = readyz(&app).await;
            (s == StatusCode::SERVICE_UNAVAILABLE).then_some(s)
        },
    )
    .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    // Liveness does not depend on the database: nothing restarts the replica.
    let (s, _) = app
        .request(reqwest::Method::GET, "/healthz", None, None)
        .await;
    assert_eq!(s, StatusCode::OK);
    // A request answers 503, within the pool's 10 s acquire timeout.
    let asked = Instant::now();
    let (s, body) = app.get("/v1/missions").await;
    assert_eq!(s, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    assert_eq!(body["error"]["code"], "unavailable", "{body}");
    assert!(
        asked.elapsed() < Duration::from_secs(12),
        "{:?}",
        asked.elapsed()
    );
    let http = reqwest::Client::new();
    wait_until_within(
        "coordinator_db_up to be 0",
        Duration::from_secs(10),
        || async {
            let text = scrape(&http, &metrics_url).await;
            (figure(&text, "coordinator_db_up") == Some(0.0)).then_some(())
        },
    )
    .await;
    tokio::time::sleep(OUTAGE.saturating_sub(gone.elapsed())).await;
    assert!(
        stream.has_changed().is_ok(),
        "the event stream ended during the outage"
    );

    // It comes back on the same address; nothing is restarted.
    let pg = LocalPostgres::start(&dir).await.expect("restart postgres");
    assert_eq!(pg.url(), url, "PostgreSQL came back elsewhere");
    wait_until_within("/readyz to say ready", Duration::from_secs(15), || async {
        (readyz(&app).await == StatusCode::OK).then_some(())
    })
    .await;
    let restarted: String = sqlx::query_scalar("SELECT now()::text")
        .fetch_one(&app.pool)
        .await
        .expect("the pool is back");
    let back = app
        .create_mission(json!({"goal": "after", "autonomy": "autonomous", "plan": chain_plan()}));
    let back = back.await;
    let back_id = back["id"].as_str().expect("id").to_owned();
    app.wait_for_status(&back_id, &["completed"]).await;
    // The same stream connection delivers the new mission's events.
    let mut seen = stream.clone();
    tokio::time::timeout(
        Duration::from_secs(30),
        seen.wait_for(|events| {
            events.iter().any(|e| {
                e["mission_id"] == back_id.as_str()
                    && e["kind"] == "mission.status_changed"
                    && e["payload"]["to"] == "completed"
            })
        }),
    )
    .await
    .expect("the stream delivered the new mission within 30 s")
    .expect("the stream is still open");
    // The engine's and the streams' LISTEN connections are back.
    wait_until("both LISTEN connections to be back", || async {
        let n: i64 =
            sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE query ILIKE 'LISTEN%'")
                .fetch_one(&app.pool)
                .await
                .ok()?;
        (n >= 2).then_some(())
    })
    .await;
    // The webhook pump delivers the new mission's events.
    wait_until("the new mission's webhook deliveries", || async {
        let (_, log) = app.get(&format!("/v1/webhooks/{hook_id}/deliveries")).await;
        let delivered = log["deliveries"]
            .as_array()?
            .iter()
            .filter(|d| d["status"] == "delivered")
            .count();
        let wanted: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM orchestration_events WHERE kind LIKE 'mission.%'",
        )
        .fetch_one(&app.pool)
        .await
        .ok()?;
        (delivered as i64 == wanted).then_some(())
    })
    .await;
    // The BDI schedule runs again.
    wait_until("a BDI cycle after the outage", || async {
        let n: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM bdi_cycles WHERE started_at > $1::timestamptz",
        )
        .bind(&restarted)
        .fetch_one(&app.pool)
        .await
        .ok()?;
        (n > 0).then_some(())
    })
    .await;
    // Retention runs again: an event made old now is pruned.
    sqlx::query(
        "UPDATE orchestration_events SET created_at = now() - interval '2 hours' WHERE run_id = $1::uuid",
    )
    .bind(&back_id)
    .execute(&app.pool)
    .await
    .expect("age the events");
    wait_until("retention to prune after the outage", || async {
        let n: i64 =
            sqlx::query_scalar("SELECT count(*) FROM orchestration_events WHERE run_id = $1::uuid")
                .bind(&back_id)
                .fetch_one(&app.pool)
                .await
                .ok()?;
        (n == 0).then_some(())
    })
    .await;
    // The metrics saw one outage, and the database up again.
    let text = scrape(&http, &metrics_url).await;
    assert_eq!(figure(&text, "coordinator_db_up"), Some(1.0), "{text}");
    assert_eq!(
        figure(&text, "coordinator_db_outages_total"),
        Some(1.0),
        "{text}"
    );
    app.stop().await;
    pg.stop().await.expect("stop postgres");
    let _ = std::fs::remove_dir_all(&dir);
}
