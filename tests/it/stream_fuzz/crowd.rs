//! Subscribers that stop reading, and a crowd of 2,000 that vanishes
//! mid-stream: the service stays responsive, holds at most a page for a
//! stalled one, and lets go of every vanished one.

use std::{
    collections::BTreeMap,
    net::{Ipv4Addr, SocketAddr},
    sync::Arc,
    time::{Duration, Instant},
};

use axum::http::StatusCode;
use futures::StreamExt;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};

use super::harness::*;
use crate::helpers::*;

// ------------------------------------------------------------ slow readers

/// A subscriber that reads the response head and the greeting, then stops
/// reading, with a small receive buffer so the server feels it at once.
async fn stalled(app: &TestApp, path: &str) -> (TcpStream, Vec<u8>) {
    let mut tcp = connect_from(Ipv4Addr::LOCALHOST, addr_of(app), Some(4096)).await;
    tcp.write_all(request_head(path, &app.token, "").as_bytes())
        .await
        .expect("send the request");
    let mut buf = Vec::new();
    assert!(
        read_to(&mut tcp, &mut buf, GREETING, LIMIT).await,
        "{path}: no greeting: {}",
        String::from_utf8_lossy(&buf)
    );
    assert!(
        buf.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&buf)
    );
    (tcp, buf)
}

/// Reads a stalled subscriber again until the event `last` arrives; returns
/// the ids it delivered after the greeting.
async fn resume(tcp: &mut TcpStream, head: Vec<u8>, last: i64) -> Vec<i64> {
    let split = head
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a response head")
        + 4;
    let mut dechunk = Dechunk::default();
    let mut parser = SseParser::default();
    let mut ids: Vec<i64> = parser
        .feed(&dechunk.feed(&head[split..]))
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let read = tokio::time::timeout(Duration::from_secs(40), async {
        let mut chunk = vec![0u8; 64 * 1024];
        while ids.last() != Some(&last) {
            let n = tcp.read(&mut chunk).await.expect("read");
            assert!(n > 0, "the stalled stream ended after {} events", ids.len());
            let body = dechunk.feed(&chunk[..n]);
            ids.extend(parser.feed(&body).into_iter().map(|(id, _)| id));
        }
    })
    .await;
    assert!(
        read.is_ok(),
        "the stalled stream did not resume ({} events)",
        ids.len()
    );
    ids
}

/// The most a stalled subscriber can have been sent of events of at least
/// `event_bytes` each: one page read ahead, plus what the kernel's send and
/// receive buffers and hyper's write buffer (under 1 MiB) hold.
fn stall_bound(event_bytes: usize) -> usize {
    let wmem_max: usize = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_wmem")
        .ok()
        .and_then(|s| s.split_whitespace().nth(2).and_then(|v| v.parse().ok()))
        .expect("tcp_wmem");
    let buffers = wmem_max + 64 * 1024 + 1024 * 1024;
    PAGE + buffers.div_ceil(event_bytes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_subscriber_holds_at_most_a_page_and_slows_no_one_else() {
    let started = Instant::now();
    let app = spawn_app().await;
    let (ws, run) = quiet_mission(&app).await;
    let seq0 = last_seq(&app, run).await;
    let mission_path = format!("/v1/missions/{run}/events?after={seq0}");
    // Two subscribers that stop reading after the greeting, two that keep up.
    let (mut stalled_ws, stalled_ws_head) = stalled(&app, "/v1/events").await;
    let (mut stalled_m, stalled_m_head) = stalled(&app, &mission_path).await;
    let (good_ws, good_ws_task) = follow(open(&app, "/v1/events", &app.token, None).await);
    let (good_m, good_m_task) = follow(open(&app, &mission_path, &app.token, None).await);

    // 2,000 events of 16 KiB (32 MiB) in 40 commits, /readyz asked after each.
    const PAD: i32 = 16 * 1024;
    let (batches, per_batch) = (40, 50);
    let mut written = Vec::new();
    let mut slowest = Duration::ZERO;
    for b in 0..batches {
        let first = seq0 + 1 + b * per_batch;
        written.extend(write_events(&app, ws, Some(run), first, per_batch, PAD).await);
        let asked = Instant::now();
        let ready = tokio::time::timeout(LIMIT, app.http.get(format!("{}/readyz", app.url)).send())
            .await
            .expect("/readyz answered in time")
            .expect("/readyz");
        assert_eq!(ready.status(), StatusCode::OK);
        slowest = slowest.max(asked.elapsed());
    }
    let total = written.len();
    // Those who read got everything, in order, without a gap.
    let limit = Duration::from_secs(40);
    let got_ws = wait_for_ids("the workspace subscriber", &good_ws, total, limit).await;
    assert_eq!(
        got_ws, written,
        "the workspace stream: every event once, in order"
    );
    let got_m = wait_for_ids("the mission subscriber", &good_m, total, limit).await;
    let seqs: Vec<i64> = (seq0 + 1..=seq0 + total as i64).collect();
    assert_eq!(got_m, seqs, "the mission stream: every seq once, in order");
    good_ws_task.abort();
    good_m_task.abort();

    // The stalled ones: prune what they have not read yet (as retention
    // would), write a few more, and let them read again. Only what the
    // service had already handed over can still arrive: had it buffered
    // the whole backlog for them, they would get all 2,000 pruned events.
    sqlx::query("DELETE FROM orchestration_events WHERE id = ANY($1)")
        .bind(&written)
        .execute(&app.pool)
        .await
        .expect("prune");
    let after = seq0 + 1 + total as i64;
    let tail = write_events(&app, ws, Some(run), after, 5, 16).await;
    let last = *tail.last().expect("tail");
    let bound = stall_bound(PAD as usize);
    let mut held_for = Vec::new();
    for (what, tcp, head, last) in [
        ("workspace", &mut stalled_ws, stalled_ws_head, last),
        ("mission", &mut stalled_m, stalled_m_head, after + 4),
    ] {
        let ids = resume(tcp, head, last).await;
        assert!(
            ids.windows(2).all(|w| w[0] < w[1]),
            "{what}: in order, no repeat"
        );
        let held = ids.len() - tail.len();
        assert!(
            ids.ends_with(&if what == "workspace" {
                tail.clone()
            } else {
                (after..after + 5).collect()
            }),
            "{what}: it carries on after the pruned events: {:?}",
            &ids[ids.len().saturating_sub(8)..]
        );
        assert!(
            held <= bound,
            "{what}: {held} of {total} events were held for a subscriber that read nothing \
             (bound: a page of {PAGE} plus the socket buffers, {bound})"
        );
        held_for.push(held);
    }
    println!(
        "stream_fuzz figures: slow_reader events={total} event_bytes={PAD} held_for_stalled={held_for:?} \
         bound={bound} slowest_readyz_ms={} secs={:.1}",
        slowest.as_millis(),
        started.elapsed().as_secs_f64()
    );
    app.stop().await;
}

// ---------------------------------------------------- a crowd that vanishes

/// How a subscriber of the crowd leaves.
#[derive(Debug, Clone, Copy)]
enum Vanish {
    /// Connects and closes without a byte.
    Silent,
    /// Sends half its request head.
    HalfHead,
    /// Sends its request, reads nothing.
    Unread,
    /// Reads a few bytes of the response head.
    HalfResponseHead,
    /// Reads the greeting (and whatever came with it), closes.
    AfterGreeting,
    /// Reads the greeting, then resets the connection (RST, not FIN).
    Reset,
}

const VANISHES: [Vanish; 6] = [
    Vanish::Silent,
    Vanish::HalfHead,
    Vanish::Unread,
    Vanish::HalfResponseHead,
    Vanish::AfterGreeting,
    Vanish::Reset,
];

/// One subscriber of the crowd, from 127.0.1.`host`; true if the service
/// answered it as it should (a 200 for those that read).
async fn vanish(to: SocketAddr, host: u8, how: Vanish, head: String) -> bool {
    let mut tcp = connect_from(Ipv4Addr::new(127, 0, 1, host), to, None).await;
    let bytes = head.as_bytes();
    match how {
        Vanish::Silent => return true,
        Vanish::HalfHead => {
            return tcp.write_all(&bytes[..bytes.len() / 2]).await.is_ok();
        }
        _ => tcp.write_all(bytes).await.expect("send the request"),
    }
    let mut buf = Vec::new();
    match how {
        Vanish::Unread => true,
        Vanish::HalfResponseHead => {
            read_to(&mut tcp, &mut buf, b"HTTP/1.1 ", LIMIT).await
                && read_to(&mut tcp, &mut buf, b"200", LIMIT).await
        }
        _ => {
            let greeted = read_to(&mut tcp, &mut buf, GREETING, LIMIT).await
                && buf.starts_with(b"HTTP/1.1 200");
            if matches!(how, Vanish::Reset) {
                tcp.set_zero_linger().expect("SO_LINGER 0");
            }
            greeted
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_thousand_subscribers_that_vanish_leave_the_service_serving() {
    let started = Instant::now();
    let app = spawn_app().await;
    let (ws, run) = quiet_mission(&app).await;
    let to = addr_of(&app);
    let port = to.port();
    // A subscriber from 127.0.0.1 that reads through the whole storm.
    let (witness, witness_task) = follow(open(&app, "/v1/events", &app.token, None).await);
    // The probe of held connections sees subscribers of the crowd's addresses.
    let mut probes = Vec::new();
    for _ in 0..3 {
        let mut tcp = connect_from(Ipv4Addr::new(127, 0, 1, 250), to, None).await;
        tcp.write_all(request_head("/v1/events", &app.token, "").as_bytes())
            .await
            .expect("send");
        assert!(read_to(&mut tcp, &mut Vec::new(), GREETING, LIMIT).await);
        probes.push(tcp);
    }
    assert_eq!(held_from_crowd(port), 3, "/proc/net/tcp shows held streams");
    drop(probes);
    // Events keep coming while the crowd comes and goes.
    let stop = Arc::new(tokio::sync::Notify::new());
    let producer = {
        let (pool, stop) = (app.pool.clone(), stop.clone());
        let app_like = (ws, pool);
        tokio::spawn(async move {
            let mut ids = Vec::new();
            loop {
                let batch: Vec<i64> = sqlx::query_scalar(
                    "INSERT INTO orchestration_events (workspace_id, kind, actor, payload)
                     SELECT $1, 'fuzz.filler', 'fuzz', jsonb_build_object('n', g)
                     FROM generate_series(1, 3) g ORDER BY g RETURNING id",
                )
                .bind(app_like.0)
                .fetch_all(&app_like.1)
                .await
                .expect("write events");
                ids.extend(batch);
                tokio::select! {
                    _ = stop.notified() => return ids,
                    _ = tokio::time::sleep(Duration::from_millis(200)) => {}
                }
            }
        })
    };
    let mut rng = Rng::new(SEED ^ 2000);
    let crowd: Vec<(u8, Vanish, String)> = (0..2000)
        .map(|i| {
            let how = *rng.pick(&VANISHES);
            let path = match rng.below(4) {
                0 => "/v1/events?after=0".to_owned(),
                1 => format!("/v1/missions/{run}/events"),
                2 => "/v1/events".to_owned(),
                _ => format!("/v1/events?kind=mission.*&after={}", rng.below(50)),
            };
            let extra = if rng.below(3) == 0 {
                format!("Last-Event-ID: {}\r\n", rng.below(20))
            } else {
                String::new()
            };
            // 20 addresses, so no one address nears the per-IP cap (256).
            (
                (i % 20 + 1) as u8,
                how,
                request_head(&path, &app.token, &extra),
            )
        })
        .collect();
    let answered: Vec<(Vanish, bool)> = futures::stream::iter(crowd)
        .map(|(host, how, head)| async move { (how, vanish(to, host, how, head).await) })
        .buffer_unordered(200)
        .collect()
        .await;
    let storm_secs = started.elapsed().as_secs_f64();
    let failed: Vec<&(Vanish, bool)> = answered.iter().filter(|(_, ok)| !ok).collect();
    assert!(
        failed.is_empty(),
        "{} of 2000 were not answered: {:?}",
        failed.len(),
        &failed[..failed.len().min(10)]
    );

    stop.notify_one();
    let produced = producer.await.expect("producer");
    // The witness got every event of the storm, in order, without a gap.
    let seen = wait_for_ids("the witness", &witness, produced.len(), LIMIT * 3).await;
    assert_eq!(seen, produced, "the witness: every event once, in order");
    witness_task.abort();
    // The service lets go of every vanished subscriber.
    let drained = Instant::now();
    wait_until_within(
        "the crowd's connections to close",
        Duration::from_secs(40),
        || async { (held_from_crowd(port) == 0).then_some(()) },
    )
    .await;
    let drain_secs = drained.elapsed().as_secs_f64();
    // Nor holds any other: what is left is the test client's own pool.
    let left = wait_until_within("the service's connections to close", LIMIT, || async {
        let n = held_by_service(port);
        (n <= 8).then_some(n)
    })
    .await;
    // It still answers, and a new subscriber gets what happens next.
    let (status, _) = app.get("/readyz").await;
    assert_eq!(status, StatusCode::OK);
    let mut fresh = open(&app, "/v1/events", &app.token, None).await;
    let news = write_events(&app, ws, None, 0, 1, 16).await;
    let got = read_until(&mut fresh, LIMIT, |e| !e.is_empty()).await;
    assert_eq!(got[0].0, news[0], "a new subscriber gets the next event");
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for (how, _) in &answered {
        *kinds.entry(format!("{how:?}")).or_default() += 1;
    }
    println!(
        "stream_fuzz figures: crowd=2000 {kinds:?} storm_secs={storm_secs:.1} drain_secs={drain_secs:.1} \
         held_after={left} witness_events={} secs={:.1}",
        produced.len(),
        started.elapsed().as_secs_f64()
    );
    app.stop().await;
}
