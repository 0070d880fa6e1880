//! Event stream costs, against the log the throughput phases wrote.
//!
//! A replica serving the API only reads the workspace's whole event log
//! three ways: as JSON pages (the baseline: the same rows through the same
//! query, without streaming), as one SSE stream, and as `clients` SSE streams
//! at once. Then `clients` streams wait at the end of the log while a mission
//! is created, and the time from sending the creating request to each stream
//! receiving `mission.created` is recorded, beside the request's own time.

use std::{
    net::SocketAddr,
    time::{Duration, Instant},
};

use anyhow::{Context, bail};
use futures::StreamExt;
use serde_json::{Value, json};
use sqlx::PgPool;

use super::{Api, chain_plan, percentile};
use crate::{
    api::{Application, Settings},
    client::sse::SseParser,
};

/// The stream phase's results.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct StreamReport {
    /// Events in the log.
    pub events: usize,
    /// Events per second read as JSON pages of 1,000.
    pub json_eps: f64,
    /// Events per second read by one SSE stream.
    pub sse_one_eps: f64,
    /// Streams read at once.
    pub clients: usize,
    /// Events per second delivered over all of them together.
    pub sse_many_eps: f64,
    /// Milliseconds from sending the request that writes an event to the
    /// waiting streams receiving it: p50, max.
    pub fanout_ms: (f64, f64),
    /// Milliseconds the writing request itself took (its answer follows the commit).
    pub request_ms: f64,
}

/// Reads `n` events from `/v1/events?after=after` as SSE.
async fn read_sse(api: &Api, after: i64, n: usize) -> anyhow::Result<()> {
    let mut resp = api
        .http
        .get(format!("{}/v1/events?after={after}", api.base))
        .bearer_auth(&api.token)
        .header("accept", "text/event-stream")
        .send()
        .await?;
    if !resp.status().is_success() {
        bail!("stream: {}", resp.status());
    }
    let mut parser = SseParser::new();
    let mut seen = 0;
    while seen < n {
        let chunk = resp.chunk().await?.context("stream ended early")?;
        seen += parser
            .push(&chunk)
            .map_err(|e| anyhow::anyhow!("{e}"))?
            .len();
    }
    Ok(())
}

/// Opens a stream at the end of the log and returns once it is connected
/// (its greeting arrived), with the response to read on.
async fn open_at_end(api: &Api, after: i64) -> anyhow::Result<reqwest::Response> {
    let mut resp = api
        .http
        .get(format!(
            "{}/v1/events?after={after}&kind=mission.created",
            api.base
        ))
        .bearer_auth(&api.token)
        .header("accept", "text/event-stream")
        .send()
        .await?;
    resp.chunk().await?.context("no greeting")?;
    Ok(resp)
}

/// Runs the phase on `pool`'s database with an API-only replica, on a
/// pool of its own, closed afterwards, so nothing of the replica's can
/// hold the bench's own connections after the phase. (Its event listener
/// and health watcher once outlived it on a shared pool and the workflow
/// phase timed out on the bench's pool; a stopped service now ends them,
/// and the separate pool keeps the phases apart regardless.)
pub async fn measure(
    bench_pool: &PgPool,
    token: &str,
    clients: usize,
) -> anyhow::Result<StreamReport> {
    let pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(8)
        .connect_with((*bench_pool.connect_options()).clone())
        .await?;
    let report = measure_on(&pool, token, clients).await;
    pool.close().await;
    report
}

async fn measure_on(pool: &PgPool, token: &str, clients: usize) -> anyhow::Result<StreamReport> {
    let mut settings = Settings::new(SocketAddr::from(([127, 0, 0, 1], 0)));
    settings.run_engine = false;
    // Every client is on loopback: the per-IP cap would measure itself, not the streams.
    settings.connections.max_connections_per_ip = settings.connections.max_connections;
    let app = Application::build(pool.clone(), settings).await?;
    let api = Api {
        http: reqwest::Client::new(),
        base: app.url(),
        token: token.to_owned(),
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let handle = tokio::spawn(app.run_until_stopped(async {
        let _ = stopped.await;
    }));
    let (events, last): (i64, Option<i64>) =
        sqlx::query_as("SELECT count(*), max(id) FROM orchestration_events")
            .fetch_one(pool)
            .await?;
    let events = usize::try_from(events)?;
    anyhow::ensure!(events > 0, "the log is empty");

    // Baseline: JSON pages.
    let started = Instant::now();
    let (mut after, mut read) = (0i64, 0usize);
    loop {
        let resp = api
            .http
            .get(format!("{}/v1/events?after={after}&limit=1000", api.base))
            .bearer_auth(&api.token)
            .send()
            .await?;
        let page: Value = resp.json().await?;
        let got = page["events"].as_array().map_or(0, Vec::len);
        if got == 0 {
            break;
        }
        read += got;
        after = page["next_after"].as_i64().context("next_after")?;
    }
    anyhow::ensure!(read == events, "pages gave {read} of {events} events");
    let json_eps = events as f64 / started.elapsed().as_secs_f64();

    let started = Instant::now();
    read_sse(&api, 0, events).await?;
    let sse_one_eps = events as f64 / started.elapsed().as_secs_f64();

    let started = Instant::now();
    let all = futures::future::join_all((0..clients).map(|_| read_sse(&api, 0, events))).await;
    for r in all {
        r?;
    }
    let sse_many_eps = (events * clients) as f64 / started.elapsed().as_secs_f64();

    // Fan-out: streams wait at the end; one write reaches them all.
    let last = last.unwrap_or(0);
    let mut waiting = Vec::with_capacity(clients);
    for _ in 0..clients {
        waiting.push(open_at_end(&api, last).await?);
    }
    // Streams can hear of the commit before the client has read the answer,
    // so both are timed from the moment the request is sent.
    let sent = Instant::now();
    let created = api
        .post(
            "/v1/missions",
            json!({"goal": "bench stream fan-out", "plan": chain_plan(3)}),
        )
        .await?;
    let request_ms = sent.elapsed().as_secs_f64() * 1000.0;
    anyhow::ensure!(created["id"].is_string(), "mission not created: {created}");
    let arrivals = futures::stream::iter(waiting)
        .map(|mut resp| async move {
            let mut parser = SseParser::new();
            loop {
                let chunk = resp.chunk().await?.context("stream ended")?;
                let events = parser.push(&chunk).map_err(|e| anyhow::anyhow!("{e}"))?;
                if !events.is_empty() {
                    return anyhow::Ok(Instant::now());
                }
            }
        })
        .buffer_unordered(clients.max(1))
        .collect::<Vec<_>>();
    let arrivals = tokio::time::timeout(Duration::from_secs(30), arrivals)
        .await
        .context("streams did not receive the new event within 30 s")?;
    let mut ms = Vec::with_capacity(arrivals.len());
    for a in arrivals {
        ms.push(a?.saturating_duration_since(sent).as_secs_f64() * 1000.0);
    }
    ms.sort_by(f64::total_cmp);
    let fanout_ms = (
        percentile(&ms, 50.0),
        ms.last().copied().unwrap_or(f64::NAN),
    );

    let _ = stop.send(());
    let _ = handle.await;
    Ok(StreamReport {
        events,
        json_eps,
        sse_one_eps,
        clients,
        sse_many_eps,
        fanout_ms,
        request_ms,
    })
}
