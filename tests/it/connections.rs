//! Connection hygiene over real sockets: the per-IP cap keeps idle floods
//! from starving other clients, slowloris and idle keep-alive connections
//! are closed on time, SSE streams are not, and memory comes back.

use std::{
    io::{ErrorKind, Read},
    net::SocketAddr,
    process::Stdio,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use coordinator::api::connections::{ConnectionLimits, raise_fd_limit};
use tokio::{
    io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader},
    net::{TcpSocket, TcpStream},
    process::Command,
};

use crate::helpers::*;

/// A connection from `from` (bound explicitly, so the server sees that IP) to `to`.
async fn connect_from(from: [u8; 4], to: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("socket");
    socket
        .bind(SocketAddr::from((from, 0)))
        .expect("bind client address");
    socket.connect(to).await.expect("connect")
}

/// Whether the server has closed `stream` (EOF or reset), without blocking.
fn is_closed(stream: &std::net::TcpStream) -> bool {
    let mut buf = [0u8; 512];
    loop {
        match (&*stream).read(&mut buf) {
            Ok(0) => return true,
            // Bytes the server sent (a response): keep reading to see what follows.
            Ok(_) => continue,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(_) => return true,
        }
    }
}

/// How long after now the server closes `stream`, or None if it is still
/// open after `limit`.
async fn closed_within(stream: &std::net::TcpStream, limit: Duration) -> Option<Duration> {
    let started = Instant::now();
    while started.elapsed() < limit {
        if is_closed(stream) {
            return Some(started.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    None
}

fn addr_of(url: &str) -> SocketAddr {
    url.trim_start_matches("http://")
        .parse()
        .expect("socket address")
}

/// `GET /healthz` from a client bound to `from`: the time to the full answer.
async fn healthz_from(from: [u8; 4], to: SocketAddr) -> Duration {
    let started = Instant::now();
    let mut stream = connect_from(from, to).await;
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .await
        .expect("send");
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut answer))
        .await
        .expect("healthz answered in time")
        .expect("read");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with(r#"{"status":"ok"}"#), "{answer}");
    started.elapsed()
}

/// Resident memory of process `pid`, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}

/// Settings with short timeouts for the timing tests.
fn short_timeouts(header: Duration, idle: Duration) -> coordinator::api::Settings {
    let mut settings = test_settings();
    settings.connections = ConnectionLimits {
        header_read_timeout: header,
        idle_timeout: idle,
        ..ConnectionLimits::default()
    };
    settings
}

const HELD: usize = 2000;
const PER_IP_CAP: usize = 1500;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_flood_from_one_ip_hits_its_cap_and_another_ip_is_served_at_once() {
    // 2,000 client sockets here plus the service's own in its process.
    let limit = raise_fd_limit().unwrap_or(u64::MAX);
    assert!(
        limit > 2 * HELD as u64 + 200,
        "open-file limit {limit} too low for this test"
    );
    let db = fresh_database().await;
    // A separate process, so its resident memory is the service's alone.
    let mut child = Command::new(env!("CARGO_BIN_EXE_coordinator"))
        .args(["serve", "--listen", "127.0.0.1:0", "--no-engine"])
        .args(["--max-connections-per-ip", &PER_IP_CAP.to_string()])
        // Long enough that the held connections stay for the whole test.
        .args([
            "--header-read-timeout-secs",
            "120",
            "--idle-timeout-secs",
            "120",
        ])
        .env("DATABASE_URL", &db)
        .env(
            "COORDINATOR_BOOTSTRAP_TOKEN",
            "connections-test-admin-token-0123",
        )
        .env_remove("RUST_LOG")
        .env_remove("COORDINATOR_LOG")
        .env_remove("COORDINATOR_LOG_FORMAT")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn serve");
    let pid = child.id().expect("pid");
    let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let url = announced_url(&mut lines, str::to_owned).await;
    let log: Arc<Mutex<Vec<String>>> = Arc::default();
    let store = log.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            store.lock().expect("lock").push(line);
        }
    });
    let server = addr_of(&url);
    for _ in 0..5 {
        healthz_from([127, 0, 0, 2], server).await;
    }
    let baseline = rss_kib(pid);

    let mut held = Vec::with_capacity(HELD);
    for _ in 0..HELD {
        let stream = connect_from([127, 0, 0, 1], server).await;
        held.push(stream.into_std().expect("std stream"));
    }
    // Those beyond the per-IP cap are closed at once; the others stay open.
    let over = HELD - PER_IP_CAP;
    let closed = wait_until_within(
        "the connections over the cap to be closed",
        Duration::from_secs(10),
        || {
            let closed = held.iter().filter(|s| is_closed(s)).count();
            async move { (closed >= over).then_some(closed) }
        },
    )
    .await;
    assert_eq!(
        closed, over,
        "exactly the connections over the cap are closed"
    );

    // Another client IP is served promptly while the flood is held.
    let mut latencies = Vec::new();
    for _ in 0..20 {
        latencies.push(healthz_from([127, 0, 0, 2], server).await);
    }
    let worst = latencies.iter().max().copied().unwrap_or_default();
    assert!(
        worst < Duration::from_millis(100),
        "healthz from 127.0.0.2 took {worst:?}"
    );

    // One more from the flooding IP is closed at once.
    let extra = connect_from([127, 0, 0, 1], server)
        .await
        .into_std()
        .expect("std stream");
    let refused_in = closed_within(&extra, Duration::from_secs(1))
        .await
        .expect("the 2,001st connection from 127.0.0.1 was closed within 1 s");
    let still_open = held.iter().filter(|s| !is_closed(s)).count();
    assert_eq!(
        still_open, PER_IP_CAP,
        "the connections under the cap are held"
    );
    let peak = rss_kib(pid);

    // The refusals are logged, but not once per connection.
    let reports = log
        .lock()
        .expect("lock")
        .iter()
        .filter(|l| l.contains("connections refused or failed"))
        .count();
    assert!(
        (1..=2).contains(&reports),
        "{reports} report lines for {} refusals",
        over + 1
    );

    latencies.sort();
    let median = latencies[latencies.len() / 2];
    drop(held);
    drop(extra);
    let settle = Instant::now();
    let after = wait_until_within(
        "resident memory back within 10 %",
        Duration::from_secs(15),
        || {
            let now = rss_kib(pid);
            async move { (now * 10 <= baseline * 11).then_some(now) }
        },
    )
    .await;
    println!(
        "connections figures: {HELD} held from 127.0.0.1 (per-IP cap {PER_IP_CAP}, {over} closed at once); \
         healthz from 127.0.0.2 worst {worst:?} of {} (median {:?}); 2,001st seen closed {refused_in:?} after its connect returned; \
         VmRSS baseline {baseline} KiB, peak {peak} KiB, after close {after} KiB ({:.1} %) within {:?}",
        latencies.len(),
        median,
        after as f64 * 100.0 / baseline as f64 - 100.0,
        settle.elapsed(),
    );
    // Still serving after the flood, from the flooding IP too.
    healthz_from([127, 0, 0, 1], server).await;
}

#[tokio::test]
async fn slowloris_connections_are_closed_at_the_header_timeout() {
    let header = Duration::from_secs(1);
    let app = spawn_app_on(
        &fresh_database().await,
        short_timeouts(header, Duration::from_secs(60)),
    )
    .await;
    let server = addr_of(&app.url);
    let started = Instant::now();
    let mut slow = Vec::new();
    for _ in 0..100 {
        let mut stream = connect_from([127, 0, 0, 1], server).await;
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\n")
            .await
            .expect("first line");
        slow.push(stream);
    }
    // Trickling another header line does not buy more time.
    tokio::time::sleep(Duration::from_millis(400)).await;
    for stream in &mut slow {
        stream.write_all(b"host: x\r\n").await.expect("second line");
    }
    let slow: Vec<_> = slow
        .into_iter()
        .map(|s| s.into_std().expect("std stream"))
        .collect();
    let mut last = Duration::ZERO;
    for stream in &slow {
        let left = (header + Duration::from_millis(1500)).saturating_sub(started.elapsed());
        closed_within(stream, left)
            .await
            .expect("a slowloris connection was closed within the header timeout (+1.5 s)");
        last = last.max(started.elapsed());
    }
    assert!(
        last >= header - Duration::from_millis(100),
        "closed by the timeout, not before: {last:?}"
    );
    println!(
        "connections figures: 100 slowloris connections, header timeout {header:?}: all closed by {last:?}"
    );
    // A well-behaved client is unaffected.
    healthz_from([127, 0, 0, 1], server).await;
    app.stop().await;
}

#[tokio::test]
async fn an_idle_keep_alive_connection_is_closed_after_the_idle_timeout() {
    let idle = Duration::from_secs(1);
    let app = spawn_app_on(
        &fresh_database().await,
        short_timeouts(Duration::from_secs(10), idle),
    )
    .await;
    let server = addr_of(&app.url);
    let mut stream = connect_from([127, 0, 0, 1], server).await;
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .expect("send");
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&answer).ends_with(r#"{"status":"ok"}"#) {
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
            .await
            .expect("answer in time")
            .expect("read");
        assert!(n > 0, "closed before answering");
        answer.extend_from_slice(&buf[..n]);
    }
    let stream = stream.into_std().expect("std stream");
    let took = closed_within(&stream, Duration::from_secs(5))
        .await
        .expect("the idle connection was closed");
    assert!(
        took >= idle - Duration::from_millis(100) && took < idle + Duration::from_millis(1500),
        "closed after the idle timeout: {took:?}"
    );
    println!(
        "connections figures: idle keep-alive connection (idle timeout {idle:?}) closed after {took:?}"
    );

    // A graceful stop closes idle connections at once instead of waiting out the grace.
    let mut idle_ones = Vec::new();
    for _ in 0..10 {
        idle_ones.push(connect_from([127, 0, 0, 1], server).await);
    }
    let started = Instant::now();
    app.stop().await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "stop took {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_live_sse_stream_outlives_the_idle_and_header_timeouts() {
    let short = Duration::from_secs(1);
    let app = spawn_app_on(&fresh_database().await, short_timeouts(short, short)).await;
    let server = addr_of(&app.url);
    let mut stream = connect_from([127, 0, 0, 1], server).await;
    let request = format!(
        "GET /v1/events HTTP/1.1\r\nhost: x\r\naccept: text/event-stream\r\nauthorization: Bearer {}\r\n\r\n",
        app.token
    );
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout(Duration::from_secs(5), stream.read(&mut buf))
            .await
            .expect("stream head in time")
            .expect("read");
        assert!(n > 0, "closed before the stream started");
        head.extend_from_slice(&buf[..n]);
    }
    let head = String::from_utf8_lossy(&head).to_lowercase();
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    // Three times the timeouts, with no event and no keep-alive comment (every 15 s).
    let stream = stream.into_std().expect("std stream");
    assert_eq!(
        closed_within(&stream, 3 * short).await,
        None,
        "the SSE stream was cut while live"
    );
    // A graceful stop still ends it.
    app.stop().await;
    assert!(
        closed_within(&stream, Duration::from_secs(5))
            .await
            .is_some(),
        "the stream ended with the service"
    );
}

#[tokio::test]
async fn a_stalled_request_body_gets_a_json_error_at_the_body_timeout() {
    let mut settings = test_settings();
    settings.connections.body_timeout = Duration::from_secs(1);
    let app = spawn_app_on(&fresh_database().await, settings).await;
    let mut stream = connect_from([127, 0, 0, 1], addr_of(&app.url)).await;
    let request = format!(
        "POST /v1/missions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
         content-length: 100\r\nauthorization: Bearer {}\r\n\r\n{{\"goal\": ",
        app.token
    );
    let started = Instant::now();
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut answer))
        .await
        .expect("answered and closed within 5 s")
        .expect("read");
    let took = started.elapsed();
    assert!(
        answer.starts_with("HTTP/1.1 400"),
        "a 400, not a hang: {answer}"
    );
    let body = &answer[answer.find("\r\n\r\n").expect("head end") + 4..];
    let body: serde_json::Value = serde_json::from_str(body).expect("JSON error body");
    assert_eq!(body["error"]["code"], "invalid_json", "{body}");
    assert!(
        took >= Duration::from_millis(900),
        "at the timeout, not before: {took:?}"
    );
    println!("connections figures: stalled body (body timeout 1s) answered 400 after {took:?}");
    // Nothing was created.
    let (n,): (i64,) = sqlx::query_as("SELECT count(*) FROM orchestration_runs")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(n, 0);
    app.stop().await;
}
