//! Workers, as the service sees them: the protocol it speaks with them, and
//! the notices it sends them outside any request of theirs (cancels).
//!
//! The wire types live in `coordinator-protocol` (re-exported here as
//! [`protocol`], so `crate::worker::protocol::…` paths keep working); the
//! reference workers (`coordinator worker --simulate` and `--llm-url …`) live
//! in `coordinator-workers`, which does not depend on the service.

pub use coordinator_protocol as protocol;

use crate::store::attempts;

/// Tells the workers of cancelled attempts to stop (`POST {endpoint}/v1/tasks/{attempt}/cancel`),
/// in the background and best effort: their later reports are refused as stale anyway.
pub fn notify_cancelled(http: &crate::egress::Client, cancelled: Vec<attempts::Cancelled>) {
    for a in cancelled {
        let http = http.clone();
        tokio::spawn(async move {
            let url = format!(
                "{}/v1/tasks/{}/cancel",
                a.worker_url.trim_end_matches('/'),
                a.id
            );
            if let Err(e) = http
                .post(&url)
                .timeout(std::time::Duration::from_secs(5))
                .send()
                .await
            {
                tracing::debug!(attempt = %a.id, error = %e, "cancel notification failed");
            }
        });
    }
}
