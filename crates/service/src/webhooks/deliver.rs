//! The outbound pump: queue webhook deliveries for new events and send the
//! due ones, and push agent messages to the recipients' worker endpoints.
//! Runs on every replica that runs the engine; the database shares the work.

use std::time::Duration;

use sqlx::PgPool;
use time::OffsetDateTime;
use tokio::sync::watch;

use super::{DELIVERY_HEADER, EVENT_HEADER, RetryPolicy, SIGNATURE_HEADER, TIMESTAMP_HEADER, sign};
use crate::{
    coordination::messages::PushedMessage,
    egress::{REFUSED, SendError},
    store::{
        messages::{self as messages, DuePush},
        webhooks::{self, DueDelivery},
    },
};

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
    /// Client for message pushes to agent endpoints (agent egress policy).
    pub http: crate::egress::Client,
    /// Client for webhook deliveries (webhook egress policy).
    pub webhook_http: crate::egress::Client,
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
            // Every event-writing commit wakes every replica's pump: a short
            // pause lets a burst of them share one pass instead of one pass
            // (three statements) per commit per replica.
            _ = wake.changed() => tokio::time::sleep(COALESCE).await,
            _ = stop.changed() => {}
            _ = tokio::time::sleep(IDLE) => {}
        }
    }
}

/// How long a woken pump waits for more events before its pass.
const COALESCE: Duration = Duration::from_millis(20);

/// One pass: webhooks, then message pushes.
pub async fn pass(pool: &PgPool, cfg: &PumpConfig) -> sqlx::Result<usize> {
    let hooks = webhook_pass(pool, cfg).await?;
    let pushes = push_pass(pool, cfg).await?;
    Ok(hooks + pushes)
}

/// Pushes due messages to their recipients' endpoints (`POST
/// {endpoint}/v1/messages`). A 404, 405 or 501 means the worker takes no
/// pushes: the message stays in the inbox for it to poll, and is not retried.
pub async fn push_pass(pool: &PgPool, cfg: &PumpConfig) -> sqlx::Result<usize> {
    let due = messages::claim_due_pushes(pool, BATCH, LEASE_SECS).await?;
    let n = due.len();
    let sends = due.into_iter().map(|p| async move {
        let outcome = push(pool, &cfg.http, &p).await;
        let (state, wait, error) = match outcome {
            Ok(s) if (200..300).contains(&s) => ("delivered", 0.0, None),
            Ok(s @ (404 | 405 | 501)) => {
                ("unsupported", 0.0, Some(format!("endpoint answered {s}")))
            }
            other => {
                let error = match other {
                    Ok(s) => format!("endpoint answered {s}"),
                    Err(e) => e,
                };
                match cfg.retry.next_wait(p.attempts + 1) {
                    Some(w) => ("pending", w.as_secs_f64(), Some(error)),
                    None => ("failed", 0.0, Some(error)),
                }
            }
        };
        if let Err(e) = messages::record_push(pool, &p, state, wait, error.as_deref()).await {
            tracing::warn!(message = %p.message_id, error = %e, "recording a message push failed");
        }
    });
    futures::future::join_all(sends).await;
    Ok(n)
}

async fn push(pool: &PgPool, http: &crate::egress::Client, p: &DuePush) -> Result<u16, String> {
    let mut conn = pool.acquire().await.map_err(|e| e.to_string())?;
    let message = messages::get(&mut conn, p.workspace_id, p.message_id)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("the message is gone")?;
    drop(conn);
    let body = PushedMessage {
        agent_id: p.agent_id.clone(),
        message,
    };
    let res = http
        .post(&format!("{}/v1/messages", p.endpoint_url))
        .timeout(TIMEOUT)
        .json(&body)
        .send()
        .await
        .map_err(|e| match e {
            SendError::Refused => REFUSED.to_owned(),
            e => format!("request failed: {e}"),
        })?;
    Ok(res.status().as_u16())
}

/// Webhooks: queue, then send what is due (concurrently).
async fn webhook_pass(pool: &PgPool, cfg: &PumpConfig) -> sqlx::Result<usize> {
    webhooks::fan_out(pool, SCAN).await?;
    let due = webhooks::claim_due(pool, BATCH, LEASE_SECS).await?;
    let n = due.len();
    let sends = due.into_iter().map(|d| async move {
        let outcome = send(&cfg.webhook_http, &d).await;
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

async fn send(http: &crate::egress::Client, d: &DueDelivery) -> Result<i32, String> {
    let body = serde_json::to_vec(&d.body).map_err(|e| e.to_string())?;
    let ts = OffsetDateTime::now_utc().unix_timestamp();
    let res = http
        .post(&d.url)
        .timeout(TIMEOUT)
        .header("content-type", "application/json")
        .header(SIGNATURE_HEADER, &sign(&d.secret, ts, &body))
        .header(TIMESTAMP_HEADER, &ts.to_string())
        .header(EVENT_HEADER, &d.event_kind)
        .header(DELIVERY_HEADER, &d.id.to_string())
        .body(body)
        .send()
        .await
        .map_err(|e| match e {
            // Nothing was sent: the log says so and nothing about the port.
            SendError::Refused => REFUSED.to_owned(),
            e => format!("request failed: {e}"),
        })?;
    Ok(i32::from(res.status().as_u16()))
}
