//! The soak's event-stream subscribers: many clients of the workspace
//! stream (`GET /v1/events`), spread over the replicas, each reconnecting
//! with `Last-Event-ID` when its stream ends, as an `EventSource` would.
//! Every one counts what it receives; the first few also time each event
//! from its write to its arrival.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, AtomicUsize, Ordering},
    },
    time::Duration,
};

use time::OffsetDateTime;
use tokio::task::JoinHandle;

/// How many subscribers time their events (the rest only count them).
const TIMED: usize = 20;
/// Subscribers sharing one source address.
const PER_ADDRESS: usize = 100;

/// What the subscribers share with the soak.
#[derive(Default)]
pub struct Tally {
    /// Events received, all subscribers together.
    pub events: AtomicU64,
    /// Subscribers with an open stream right now.
    pub connected: AtomicUsize,
    /// Streams that ended and were opened again.
    pub reconnects: AtomicU64,
    /// Write-to-arrival times (ms) since the last [`Tally::take_lags`].
    lags: Mutex<Vec<f64>>,
}

impl Tally {
    /// The lag samples gathered since the last call.
    pub fn take_lags(&self) -> Vec<f64> {
        self.lags
            .lock()
            .map(|mut l| std::mem::take(&mut *l))
            .unwrap_or_default()
    }
}

/// Starts `count` subscribers over `urls` (round robin) with `token`.
pub fn start(count: usize, urls: &[String], token: &str) -> (Arc<Tally>, Vec<JoinHandle<()>>) {
    let tally = Arc::new(Tally::default());
    // Subscribers are many clients, not one: each hundred connects from an
    // address of its own on the loopback network (127.0.1.x), so the
    // replicas' per-address connection cap sees them as a crowd would.
    let clients: Vec<reqwest::Client> = (0..count.div_ceil(PER_ADDRESS))
        .map(|k| {
            reqwest::Client::builder()
                .pool_max_idle_per_host(0)
                .local_address(std::net::IpAddr::from([127, 0, 1, (k % 250 + 1) as u8]))
                .build()
                .unwrap_or_default()
        })
        .collect();
    let handles = (0..count)
        .map(|i| {
            let url = format!("{}/v1/events", urls[i % urls.len()]);
            let http = clients[i / PER_ADDRESS].clone();
            let (tally, token) = (tally.clone(), token.to_owned());
            tokio::spawn(subscribe(http, url, token, tally, i < TIMED))
        })
        .collect();
    (tally, handles)
}

/// One subscriber, until aborted.
async fn subscribe(
    http: reqwest::Client,
    url: String,
    token: String,
    tally: Arc<Tally>,
    timed: bool,
) {
    let mut last_id: Option<String> = None;
    loop {
        let mut req = http
            .get(&url)
            .bearer_auth(&token)
            .header("accept", "text/event-stream");
        if let Some(id) = &last_id {
            req = req.header("last-event-id", id);
        }
        if let Ok(mut resp) = req.send().await
            && resp.status().is_success()
        {
            tally.connected.fetch_add(1, Ordering::Relaxed);
            let mut buf = String::new();
            while let Ok(Some(chunk)) = resp.chunk().await {
                buf.push_str(&String::from_utf8_lossy(&chunk));
                while let Some(end) = buf.find("\n\n") {
                    let block: String = buf.drain(..end + 2).collect();
                    read_event(&block, &mut last_id, &tally, timed);
                }
            }
            tally.connected.fetch_sub(1, Ordering::Relaxed);
        }
        tally.reconnects.fetch_add(1, Ordering::Relaxed);
        // The stream's own `retry:` is a second.
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Counts one SSE block (and times it), remembering its id.
fn read_event(block: &str, last_id: &mut Option<String>, tally: &Tally, timed: bool) {
    let mut data = None;
    for line in block.lines() {
        if let Some(id) = line.strip_prefix("id:") {
            *last_id = Some(id.trim().to_owned());
        } else if let Some(d) = line.strip_prefix("data:") {
            data = Some(d.trim_start());
        }
    }
    let Some(data) = data else {
        // A keep-alive comment.
        return;
    };
    tally.events.fetch_add(1, Ordering::Relaxed);
    if !timed {
        return;
    }
    let written = serde_json::from_str::<serde_json::Value>(data)
        .ok()
        .and_then(|v| {
            OffsetDateTime::parse(
                v["created_at"].as_str()?,
                &time::format_description::well_known::Rfc3339,
            )
            .ok()
        });
    if let Some(written) = written {
        let lag = (OffsetDateTime::now_utc() - written).as_seconds_f64() * 1000.0;
        if let Ok(mut lags) = tally.lags.lock() {
            lags.push(lag);
        }
    }
}
