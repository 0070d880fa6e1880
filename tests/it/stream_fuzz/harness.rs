//! What the stream fuzzers share: a seeded generator, fixtures that write
//! events straight into the log, an SSE reader, raw connections from chosen
//! source addresses, and probes of the process's sockets and descriptors.

use std::{
    net::{Ipv4Addr, SocketAddr},
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::http::StatusCode;
use coordinator::auth::{self, Role};
use serde_json::{Value, json};
use tokio::{
    io::AsyncReadExt,
    net::{TcpSocket, TcpStream},
};
use uuid::Uuid;

use crate::helpers::*;

/// The seed of every case below.
pub(crate) const SEED: u64 = 0x5EED_57EA_0F22;
/// Longest any one request may take to answer (or a stream to greet).
pub(crate) const LIMIT: Duration = Duration::from_secs(10);
/// Events a stream reads per database round trip (`PAGE` in `api/stream.rs`).
pub(crate) const PAGE: usize = 200;
/// What a stream sends first.
pub(crate) const GREETING: &[u8] = b": stream open";

/// xorshift64*: small, and the same sequence on every machine.
pub struct Rng(u64);

impl Rng {
    /// A generator starting at `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    /// One of `items`.
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

// ---------------------------------------------------------------- fixtures

/// A mission that stays put (approve mode, agents nobody can reach), so the
/// test is the only writer of its events. Returns (workspace, mission).
pub(crate) async fn quiet_mission(app: &TestApp) -> (Uuid, Uuid) {
    app.register_fleet("http://127.0.0.1:9", 1).await;
    let m = app
        .create_mission(
            json!({"goal": "fuzz the streams", "autonomy": "approve", "plan": chain_plan()}),
        )
        .await;
    let run: Uuid = m["id"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("mission id");
    let ws = sqlx::query_scalar("SELECT workspace_id FROM orchestration_runs WHERE id = $1")
        .bind(run)
        .fetch_one(&app.pool)
        .await
        .expect("the mission's workspace");
    (ws, run)
}

/// The mission's last `seq`.
pub(crate) async fn last_seq(app: &TestApp, run: Uuid) -> i64 {
    sqlx::query_scalar("SELECT coalesce(max(seq), 0) FROM orchestration_events WHERE run_id = $1")
        .bind(run)
        .fetch_one(&app.pool)
        .await
        .expect("last seq")
}

/// Writes `n` events in one transaction (so one wake-up), of mission `run`
/// with seqs from `first_seq` or of the workspace alone, each carrying `pad`
/// filler bytes; returns their ids, in order.
pub(crate) async fn write_events(
    app: &TestApp,
    ws: Uuid,
    run: Option<Uuid>,
    first_seq: i64,
    n: i64,
    pad: i32,
) -> Vec<i64> {
    let mut ids: Vec<i64> = sqlx::query_scalar(
        "INSERT INTO orchestration_events (workspace_id, run_id, seq, kind, actor, payload)
         SELECT $1, $2, CASE WHEN $2::uuid IS NULL THEN NULL ELSE $3 + g - 1 END,
                'fuzz.filler', 'fuzz', jsonb_build_object('n', g, 'pad', repeat('x', $5))
         FROM generate_series(1, $4::bigint) g ORDER BY g
         RETURNING id",
    )
    .bind(ws)
    .bind(run)
    .bind(first_seq)
    .bind(n)
    .bind(pad)
    .fetch_all(&app.pool)
    .await
    .expect("write events");
    ids.sort_unstable();
    ids
}

/// A token of `role` in `ws`, valid until `expires` (None: for ever).
pub(crate) async fn token(
    app: &TestApp,
    ws: Uuid,
    role: Role,
    expires: Option<time::OffsetDateTime>,
) -> (Uuid, String) {
    let mut conn = app.pool.acquire().await.expect("a connection");
    let secret = auth::generate_token();
    let id = auth::insert_token_until(&mut conn, ws, role, "fuzz", None, &secret, expires)
        .await
        .expect("insert token");
    (id, secret)
}

// ------------------------------------------------------------ SSE reading

/// Splits SSE text into events (id, data), keeping an unfinished one.
#[derive(Default)]
pub(crate) struct SseParser {
    buf: Vec<u8>,
}

impl SseParser {
    /// The events completed by `bytes`; comments (keep-alive, greeting) are skipped.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<(i64, Value)> {
        self.buf.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
            let block: Vec<u8> = self.buf.drain(..end + 2).collect();
            let block = String::from_utf8(block).expect("a stream is UTF-8");
            let (mut id, mut data) = (None, String::new());
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("id:") {
                    id = Some(v.trim().parse::<i64>().expect("an SSE id is an integer"));
                } else if let Some(v) = line.strip_prefix("data:") {
                    data.push_str(v.trim_start());
                }
            }
            if !data.is_empty() {
                let id = id.expect("every event has an id");
                events.push((id, serde_json::from_str(&data).expect("data is JSON")));
            }
        }
        events
    }
}

/// Opens a stream with `token` (and `Last-Event-ID`); panics unless 200 in time.
pub(crate) async fn open(
    app: &TestApp,
    path: &str,
    token: &str,
    resume: Option<&str>,
) -> reqwest::Response {
    let mut req = app
        .http
        .get(format!("{}{path}", app.url))
        .bearer_auth(token)
        .header("accept", "text/event-stream");
    if let Some(id) = resume {
        req = req.header("last-event-id", id);
    }
    let resp = tokio::time::timeout(LIMIT, req.send())
        .await
        .unwrap_or_else(|_| panic!("{path}: no answer within {LIMIT:?}"))
        .expect("send");
    assert_eq!(resp.status(), StatusCode::OK, "{path}");
    resp
}

/// Reads `resp` until `done` holds for the events so far, within `limit`.
pub(crate) async fn read_until(
    resp: &mut reqwest::Response,
    limit: Duration,
    done: impl Fn(&[(i64, Value)]) -> bool,
) -> Vec<(i64, Value)> {
    let mut parser = SseParser::default();
    let mut events = Vec::new();
    let read = tokio::time::timeout(limit, async {
        while !done(&events) {
            let chunk = resp.chunk().await.expect("chunk").expect("stream ended");
            events.extend(parser.feed(&chunk));
        }
    })
    .await;
    assert!(read.is_ok(), "stream stalled after {} events", events.len());
    events
}

/// A subscriber that reads on its own and keeps what it got where the test sees it.
pub(crate) fn follow(
    mut resp: reqwest::Response,
) -> (Arc<Mutex<Vec<i64>>>, tokio::task::JoinHandle<()>) {
    let seen: Arc<Mutex<Vec<i64>>> = Arc::default();
    let out = seen.clone();
    let task = tokio::spawn(async move {
        let mut parser = SseParser::default();
        while let Ok(Some(chunk)) = resp.chunk().await {
            let events = parser.feed(&chunk);
            out.lock()
                .expect("lock")
                .extend(events.into_iter().map(|(id, _)| id));
        }
    });
    (seen, task)
}

/// Waits until `seen` holds `n` ids; returns them.
pub(crate) async fn wait_for_ids(
    what: &str,
    seen: &Mutex<Vec<i64>>,
    n: usize,
    limit: Duration,
) -> Vec<i64> {
    wait_until_within(what, limit, || async {
        let ids = seen.lock().expect("lock").clone();
        (ids.len() >= n).then_some(ids)
    })
    .await
}

/// A JSON error body `{"error": {"code", "message", "details"}}`.
pub(crate) fn assert_json_error(what: &str, status: u16, body: &str) -> Value {
    let v: Value = serde_json::from_str(body)
        .unwrap_or_else(|e| panic!("{what}: {status} is not JSON ({e}): {body:.300}"));
    let e = &v["error"];
    assert!(
        e["code"].is_string() && e["message"].is_string() && e.get("details").is_some(),
        "{what}: {status} is not the error body: {body:.300}"
    );
    v
}

// -------------------------------------------------------- raw connections

/// A connection from `from` (so the server sees that IP) to `to`, with a
/// receive buffer of `rcvbuf` bytes if given.
pub(crate) async fn connect_from(from: Ipv4Addr, to: SocketAddr, rcvbuf: Option<u32>) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("socket");
    socket.bind(SocketAddr::from((from, 0))).expect("bind");
    if let Some(size) = rcvbuf {
        socket.set_recv_buffer_size(size).expect("SO_RCVBUF");
    }
    tokio::time::timeout(LIMIT, socket.connect(to))
        .await
        .expect("connected in time")
        .expect("connect")
}

/// A stream request's head.
pub(crate) fn request_head(path: &str, token: &str, extra: &str) -> String {
    format!(
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\
         Accept: text/event-stream\r\n{extra}\r\n"
    )
}

/// Reads from `tcp` into `buf` until it holds `marker`; false at EOF or after `limit`.
pub(crate) async fn read_to(
    tcp: &mut TcpStream,
    buf: &mut Vec<u8>,
    marker: &[u8],
    limit: Duration,
) -> bool {
    let found = |b: &[u8]| b.windows(marker.len()).any(|w| w == marker);
    tokio::time::timeout(limit, async {
        let mut chunk = [0u8; 4096];
        while !found(buf) {
            match tcp.read(&mut chunk).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        }
        true
    })
    .await
    .unwrap_or(false)
}

/// HTTP/1.1 chunked transfer coding, decoded as it comes.
#[derive(Default)]
pub(crate) struct Dechunk {
    raw: Vec<u8>,
}

impl Dechunk {
    /// The body bytes completed by `bytes`.
    pub(crate) fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
        self.raw.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(eol) = self.raw.windows(2).position(|w| w == b"\r\n") {
            let line = String::from_utf8_lossy(&self.raw[..eol]).to_string();
            let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
                .expect("a chunk size");
            if self.raw.len() < eol + 2 + size + 2 {
                break;
            }
            out.extend_from_slice(&self.raw[eol + 2..eol + 2 + size]);
            self.raw.drain(..eol + 2 + size + 2);
        }
        out
    }
}

/// Server-side connections of the listener at `port` whose client is in
/// 127.0.1.0/24, established or closed by the client but not yet by the
/// server (`CLOSE_WAIT`): what a leak of vanished subscribers would leave.
pub(crate) fn held_from_crowd(port: u16) -> usize {
    held(port, |ip| ip.octets()[..3] == [127, 0, 1])
}

/// Server-side connections of the listener at `port` from any client that
/// still hold a descriptor (`ESTABLISHED` or `CLOSE_WAIT`). Counted per
/// port, not per process: other tests share this process's descriptors.
pub(crate) fn held_by_service(port: u16) -> usize {
    held(port, |_| true)
}

fn held(port: u16, from: impl Fn(Ipv4Addr) -> bool) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").expect("read /proc/net/tcp");
    table
        .lines()
        .skip(1)
        .filter(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let (Some(local), Some(remote), Some(state)) = (cols.get(1), cols.get(2), cols.get(3))
            else {
                return false;
            };
            let port_of = |a: &str| {
                a.split(':')
                    .nth(1)
                    .and_then(|p| u16::from_str_radix(p, 16).ok())
            };
            let ip_of = |a: &str| {
                a.split(':')
                    .next()
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .map(|v| Ipv4Addr::from(v.to_ne_bytes()))
            };
            port_of(local) == Some(port)
                && ip_of(remote).is_some_and(&from)
                && matches!(*state, "01" | "08")
        })
        .count()
}

pub(crate) fn addr_of(app: &TestApp) -> SocketAddr {
    app.url
        .trim_start_matches("http://")
        .parse()
        .expect("the service's address")
}
