//! Sending, the second half of phase A: each claimed attempt's request goes
//! to its worker concurrently, outside the claim's transaction ([`super::claim`]
//! creates them); a failed send fails the attempt as `infrastructure`.

pub use super::claim::{Claimed, claim, claim_batch};

use sqlx::PgPool;
use tracing::Instrument;

use super::{
    EngineConfig,
    reports::{self, Origin},
};
use crate::{
    domain::{FailureKind, ReportStatus},
    worker::protocol::{DispatchRequest, WorkerReport},
};

/// A claimed attempt, ready to be sent.
#[derive(Debug, Clone)]
pub struct Dispatch {
    /// Worker base URL.
    pub endpoint_url: String,
    /// The request body.
    pub request: DispatchRequest,
    /// When the claim that produced it started (dispatch latency is measured from here).
    pub claimed_at: std::time::Instant,
}

/// The span of one attempt's dispatch: the root of the attempt's trace.
pub fn span(d: &Dispatch) -> tracing::Span {
    let r = &d.request;
    tracing::info_span!(
        parent: None,
        "dispatch",
        mission_id = %r.mission_id,
        task_id = %r.task_id,
        attempt_id = %r.attempt_id,
        attempt = r.attempt_number,
        agent_id = %r.agent_id,
        task_type = %r.task.task_type,
    )
}

/// Sends one dispatch to its worker and applies an immediate answer: `202`
/// means the worker will call back; `200` carries the result; anything else
/// (or no answer within the timeout) fails the attempt as `infrastructure`.
pub async fn send(pool: &PgPool, cfg: &EngineConfig, http: &crate::egress::Client, d: Dispatch) {
    let attempt_id = d.request.attempt_id;
    let url = format!("{}/v1/tasks", d.endpoint_url.trim_end_matches('/'));
    let started = std::time::Instant::now();
    let call = tracing::info_span!(
        "worker.http",
        otel.name = "POST /v1/tasks",
        otel.kind = "client",
        http.request.method = "POST",
        url.full = %url,
        http.response.status_code = tracing::field::Empty,
    );
    // The worker continues this trace and echoes it on its callbacks.
    let mut headers = reqwest::header::HeaderMap::new();
    crate::telemetry::inject(&call, &mut headers);
    let mut d = d;
    d.request.callback.traceparent = headers
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let sent = http
        .post(&url)
        .timeout(cfg.dispatch_timeout)
        .headers(headers)
        .json(&d.request)
        .send()
        .instrument(call.clone())
        .await;
    let answer = sent.as_ref().ok().map(|r| r.status().as_u16());
    if let Some(code) = answer {
        call.record("http.response.status_code", code);
    }
    cfg.metrics.worker_answered(d.claimed_at, started, answer);
    let outcome = match sent {
        Ok(resp) if resp.status() == reqwest::StatusCode::ACCEPTED => return,
        Ok(resp)
            if resp.status() == reqwest::StatusCode::TOO_MANY_REQUESTS
                || resp.status() == reqwest::StatusCode::SERVICE_UNAVAILABLE =>
        {
            let retry_after = retry_after(resp.headers());
            let mut report = transport_failure(format!(
                "worker busy ({}); retrying after {} ms",
                resp.status(),
                retry_after.as_millis()
            ));
            report.failure_kind = None;
            Some((report, Origin::Busy { retry_after }))
        }
        Ok(resp) if resp.status().is_success() => match resp.json::<WorkerReport>().await {
            Ok(report) => Some((report, Origin::Inline)),
            Err(e) => Some((
                transport_failure(format!("worker answered 200 without a valid report: {e}")),
                Origin::DispatchFailed,
            )),
        },
        Ok(resp) => Some((
            transport_failure(format!("worker answered {} to the dispatch", resp.status())),
            Origin::DispatchFailed,
        )),
        Err(crate::egress::SendError::Refused) => Some((
            transport_failure(format!("dispatch to {url} {}", crate::egress::REFUSED)),
            Origin::Unreachable,
        )),
        Err(e) => Some((
            transport_failure(format!("dispatch to {url} failed: {e}")),
            Origin::Unreachable,
        )),
    };
    if let Some((report, origin)) = outcome {
        if matches!(origin, Origin::DispatchFailed | Origin::Unreachable) {
            tracing::warn!(%attempt_id, error = report.error.as_deref().unwrap_or(""), "dispatch failed");
        }
        match reports::apply_report(pool, cfg, attempt_id, &report, origin).await {
            Ok(_) | Err(reports::ReportError::Stale { .. }) => {}
            Err(e) => {
                tracing::warn!(%attempt_id, error = %e, "could not record the dispatch outcome; the lease will expire")
            }
        }
    }
}

/// A busy worker's `Retry-After`, defaulting to 1 s and kept within 1–60 s.
fn retry_after(headers: &reqwest::header::HeaderMap) -> std::time::Duration {
    use std::time::Duration;
    crate::retry_after::from_headers(headers)
        .unwrap_or(Duration::from_secs(1))
        .clamp(Duration::from_secs(1), Duration::from_secs(60))
}

fn transport_failure(error: String) -> WorkerReport {
    WorkerReport {
        status: ReportStatus::Failed,
        output: None,
        error: Some(error),
        failure_kind: Some(FailureKind::Infrastructure),
        cost: 0.0,
        tokens: 0,
        retry_after_secs: None,
    }
}
