//! The webhook pump: queue deliveries for new events, send the due ones.
//! Runs on every replica that runs the engine; the database shares the work.

use std::time::Duration;

use sqlx::PgPool;
use time::OffsetDateTime;
use tokio::sync::watch;

use super::{DELIVERY_HEADER, EVENT_HEADER, RetryPolicy, SIGNATURE_HEADER, TIMESTAMP_HEADER, sign};
use crate::store::webhooks::{self, DueDelivery};

/// Events examined per hook per pass.
const SCAN: i64 = 500;
/// Deliveries sent per pass.
const BATCH: i64 = 50;
/// How long a claimed delivery is hidden from other replicas.
const LEASE_SECS: f64 = 60.0;
/// Longest wait between passes when nothing wakes the pump.
const IDLE: Duration = Duration::from_secs(1);
/// Time a receiver has to answer.
const TIMEOUT: Duration = Duration::from_secs(10);

/// How the pump behaves.
#[derive(Debug, Clone)]
pub struct PumpConfig {
    /// Retry spacing and limit.
    pub retry: RetryPolicy,
    /// Client for the POSTs.
    pub http: reqwest::Client,
}

/// Runs passes until `stop` turns true; wakes on engine notifications.
pub async fn run(
    pool: PgPool,
    cfg: PumpConfig,
    mut wake: watch::Receiver<u64>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        if *stop.borrow() {
            return;
        }
        wake.borrow_and_update();
        if let Err(e) = pass(&pool, &cfg).await {
            tracing::warn!(error = %e, "webhook pass failed");
        }
        tokio::select! {
            _ = wake.changed() => {}
            _ = stop.changed() => {}
            _ = tokio::time::sleep(IDLE) => {}
        }
    }
}

/// One pass: queue, then send what is due (concurrently).
pub async fn pass(pool: &PgPool, cfg: &PumpConfig) -> sqlx::Result<usize> {
    webhooks::fan_out(pool, SCAN).await?;
    let due = webhooks::claim_due(pool, BATCH, LEASE_SECS).await?;
    let n = due.len();
    let sends = due.into_iter().map(|d| async move {
        let outcome = send(&cfg.http, &d).await;
        let (delivered, status, error) = match outcome {
            Ok(status) if (200..300).contains(&status) => (true, Some(status), None),
            Ok(status) => (
                false,
                Some(status),
                Some(format!("receiver answered {status}")),
            ),
            Err(e) => (false, None, Some(e)),
        };
        let retry = if delivered {
            None
        } else {
            cfg.retry.next_wait(d.attempts + 1).map(|w| w.as_secs_f64())
        };
        if let Err(e) =
            webhooks::record_try(pool, d.id, delivered, status, error.as_deref(), retry).await
        {
            // The lease runs out and the delivery is tried again.
            tracing::warn!(delivery = d.id, error = %e, "recording a webhook try failed");
        }
    });
    futures::future::join_all(sends).await;
    Ok(n)
}

async fn send(http: &reqwest::Client, d: &DueDelivery) -> Result<i32, String> {
    let body = serde_json::to_vec(&d.body).map_err(|e| e.to_string())?;
    let ts = OffsetDateTime::now_utc().unix_timestamp();
    let res = http
        .post(&d.url)
        .timeout(TIMEOUT)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header(SIGNATURE_HEADER, sign(&d.secret, ts, &body))
        .header(TIMESTAMP_HEADER, ts.to_string())
        .header(EVENT_HEADER, &d.event_kind)
        .header(DELIVERY_HEADER, d.id.to_string())
        .body(body)
        .send()
        .await
        .map_err(|e| format!("request failed: {e}"))?;
    Ok(i32::from(res.status().as_u16()))
}
