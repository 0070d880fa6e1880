//! Seeded fuzzing of the live event streams: `GET /v1/events` and
//! `GET /v1/missions/{id}/events` with `Accept: text/event-stream` (the only
//! routes that stream). Bad cursors, subscribers that stop reading,
//! thousands that vanish mid-stream, and tokens that must not get a stream.
//! The seed is fixed, so a failure replays; every request has a deadline.
//! What each test sends and asserts is in `docs/fuzzing.md` ("The live
//! streams and /mcp").

mod crowd;
pub mod harness;
mod tokens;

use std::{collections::BTreeMap, time::Instant};

use axum::http::HeaderValue;

use crate::helpers::*;
use harness::*;

// ------------------------------------------------------------ bad cursors

/// Cursor values: the edges by hand, then seeded random ones.
fn cursor_values(rng: &mut Rng, max_id: i64) -> Vec<Vec<u8>> {
    let mut values: Vec<Vec<u8>> = [
        "-1",
        "-9223372036854775808",
        "0",
        "1",
        "-0",
        "+3",
        " 3 ",
        "3.0",
        "1e3",
        "0x10",
        "9223372036854775807",
        "9223372036854775808",
        "18446744073709551616",
        "99999999999999999999999999",
        "abc",
        "",
        " ",
        "null",
        "NaN",
        "٣",
        "３",
        "😀",
        "00000000000000000000000000001",
        "1,2",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    for n in [max_id, max_id - 1, max_id / 2, max_id + 1, max_id + 1000] {
        values.push(n.to_string().into_bytes());
    }
    values.push("x".repeat(10_240).into_bytes());
    values.push("9".repeat(10_240).into_bytes());
    // Not UTF-8 (a header may carry such bytes).
    values.push(vec![0xff, 0xfe, b'1']);
    let fragments = [
        "0",
        "1",
        "7",
        "9",
        "-",
        "+",
        " ",
        "e",
        ".",
        "x",
        "٣",
        "３",
        "😀",
        "\u{202e}",
        "%",
        "&",
        "=",
        "#",
        "\\",
        "\"",
        "9223372036854775807",
        "18446744073709551615",
    ];
    for _ in 0..40 {
        let mut v = String::new();
        for _ in 0..1 + rng.below(8) {
            let fragment: &&str = rng.pick(&fragments);
            v.push_str(fragment);
        }
        if rng.below(10) == 0 {
            v = v.repeat(10_240 / v.len().max(1) + 1);
        }
        values.push(v.into_bytes());
    }
    values
}

/// Percent-encodes every byte but letters and digits.
fn encode(bytes: &[u8]) -> String {
    bytes
        .iter()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (*b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// How a cursor is sent.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Shape {
    /// `Last-Event-ID: v`.
    Header,
    /// `?after=v`.
    Query,
    /// Both, the same value.
    Both,
    /// `Last-Event-ID: v` then `Last-Event-ID: 1`: the first counts.
    TwoHeaders,
}

/// Which stream a route serves.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Route {
    Workspace,
    Mission,
}

/// What the service should make of `v` sent as `shape` on `route`: Err for
/// a 400, else the cursor in force (None: no cursor).
fn expected_cursor(_route: Route, shape: Shape, v: &[u8]) -> Result<Option<i64>, ()> {
    let header = || {
        std::str::from_utf8(v)
            .ok()
            .and_then(|s| s.trim().parse::<i64>().ok())
            .filter(|n| *n >= 0)
            .ok_or(())
    };
    let query = || {
        let n = std::str::from_utf8(v)
            .ok()
            .and_then(|s| s.parse::<i64>().ok())
            .ok_or(())?;
        // Both routes refuse a negative `after` (the mission route read it as 0).
        if n < 0 { Err(()) } else { Ok(n) }
    };
    match shape {
        Shape::Header | Shape::TwoHeaders => header().map(Some),
        Shape::Query => query().map(Some),
        Shape::Both => {
            query()?;
            header().map(Some)
        }
    }
}

/// Sends `v` as `shape` and checks the answer: the 400 exactly when it
/// should be, else a stream whose first event is the one after the cursor.
#[allow(clippy::too_many_arguments)]
async fn try_cursor(
    app: &TestApp,
    path: &str,
    route: Route,
    shape: Shape,
    v: &[u8],
    next_after: &BTreeMap<i64, i64>,
    tally: &mut BTreeMap<u16, usize>,
) {
    let what = format!("{path} {shape:?} {:.40}", String::from_utf8_lossy(v));
    let url = match shape {
        Shape::Query | Shape::Both => format!("{}{path}?after={}", app.url, encode(v)),
        _ => format!("{}{path}", app.url),
    };
    let mut req = app
        .http
        .get(url)
        .bearer_auth(&app.token)
        .header("accept", "text/event-stream");
    let value = HeaderValue::from_bytes(v).expect("a header value");
    match shape {
        Shape::Header | Shape::Both => req = req.header("last-event-id", value),
        Shape::TwoHeaders => {
            req = req
                .header("last-event-id", value)
                .header("last-event-id", "1")
        }
        Shape::Query => {}
    }
    let mut resp = tokio::time::timeout(LIMIT, req.send())
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {LIMIT:?}"))
        .expect("send");
    let status = resp.status().as_u16();
    *tally.entry(status).or_default() += 1;
    let expected = expected_cursor(route, shape, v);
    if status != 200 {
        let body = tokio::time::timeout(LIMIT, resp.text())
            .await
            .unwrap_or_else(|_| panic!("{what}: body not sent within {LIMIT:?}"))
            .expect("body");
        assert!(
            (400..500).contains(&status),
            "{what}: never a 5xx: {status} {body:.300}"
        );
        assert_json_error(&what, status, &body);
        assert_eq!(
            expected,
            Err(()),
            "{what}: refused a cursor it documents: {body:.300}"
        );
        return;
    }
    let content_type = resp.headers()["content-type"]
        .to_str()
        .unwrap_or("")
        .to_owned();
    assert!(
        content_type.starts_with("text/event-stream"),
        "{what}: {content_type}"
    );
    let Ok(cursor) = expected else {
        panic!("{what}: a stream for a cursor that should be refused");
    };
    // The next event after the cursor, where the log has one the cursor can name.
    let Some(&first) = cursor.and_then(|c| next_after.get(&c)) else {
        let mut buf = Vec::new();
        let greeted = tokio::time::timeout(LIMIT, async {
            while !buf.windows(GREETING.len()).any(|w| w == GREETING) {
                match resp.chunk().await {
                    Ok(Some(c)) => buf.extend_from_slice(&c),
                    _ => return false,
                }
            }
            true
        })
        .await;
        assert_eq!(greeted, Ok(true), "{what}: the stream did not greet");
        return;
    };
    let events = read_until(&mut resp, LIMIT, |e| !e.is_empty()).await;
    assert_eq!(
        events[0].0, first,
        "{what}: the first event after the cursor"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_cursors_get_a_json_400_or_the_right_stream_never_a_5xx_or_a_hang() {
    let started = Instant::now();
    let app = spawn_app().await;
    let (ws, run) = quiet_mission(&app).await;
    let seq = last_seq(&app, run).await;
    write_events(&app, ws, Some(run), seq + 1, 30, 16).await;
    write_events(&app, ws, None, 0, 30, 16).await;
    // The event each in-range cursor should resume with (ids in commit order, seqs).
    let order: Vec<i64> =
        sqlx::query_scalar("SELECT id FROM orchestration_events ORDER BY xid, id")
            .fetch_all(&app.pool)
            .await
            .expect("ids");
    let max_id = *order.iter().max().expect("events");
    let mut by_id: BTreeMap<i64, i64> = (0..order.len())
        .skip(1)
        .map(|i| (order[i - 1], order[i]))
        .collect();
    by_id.insert(0, order[0]);
    let max_seq = last_seq(&app, run).await;
    let by_seq: BTreeMap<i64, i64> = (0..max_seq).map(|s| (s, s + 1)).collect();

    let mut rng = Rng::new(SEED);
    let values = cursor_values(&mut rng, max_id);
    let routes = [
        ("/v1/events".to_owned(), Route::Workspace, &by_id),
        (
            format!("/v1/missions/{run}/events"),
            Route::Mission,
            &by_seq,
        ),
    ];
    let mut tally = BTreeMap::new();
    for (path, route, next_after) in &routes {
        for v in &values {
            for shape in [Shape::Header, Shape::Query, Shape::Both, Shape::TwoHeaders] {
                if shape != Shape::Query && HeaderValue::from_bytes(v).is_err() {
                    continue;
                }
                try_cursor(&app, path, *route, shape, v, next_after, &mut tally).await;
            }
        }
    }
    assert!(tally.get(&200).is_some_and(|n| *n > 50), "{tally:?}");
    assert!(tally.get(&400).is_some_and(|n| *n > 50), "{tally:?}");

    // Regression: a filter PostgreSQL cannot compare (a NUL character) is a
    // 422 `unstorable_value` before the stream starts, as on the JSON page; it
    // was a 200 whose stream ended at once, so an EventSource reconnected for ever.
    for (query, field) in [
        ("agent=%00", "agent"),
        ("role=%00", "role"),
        ("agent=a%00b", "agent"),
    ] {
        for accept in ["text/event-stream", "application/json"] {
            let resp = app
                .http
                .get(format!("{}/v1/events?{query}", app.url))
                .bearer_auth(&app.token)
                .header("accept", accept)
                .send()
                .await
                .expect("send");
            let status = resp.status().as_u16();
            let body = resp.text().await.expect("body");
            assert_eq!(status, 422, "{query} as {accept}: {body:.300}");
            let v = assert_json_error(query, status, &body);
            if accept == "text/event-stream" {
                assert_eq!(v["error"]["details"]["field"], field, "{body}");
            }
        }
    }
    println!(
        "stream_fuzz figures: cursors={} answers={tally:?} secs={:.1}",
        values.len(),
        started.elapsed().as_secs_f64()
    );
    app.stop().await;
}
