//! Wrong credentials, other workspaces' missions, read-only roles and
//! attempt tokens on the streams: 401/403/404 as documented, and no event
//! of one workspace (or, for an attempt token, of another mission) delivered.

use std::time::Instant;

use axum::http::{HeaderValue, StatusCode};
use coordinator::auth::{self, Role};
use serde_json::json;
use uuid::Uuid;

use super::harness::*;
use crate::helpers::*;

// ----------------------------------------------------------------- tokens

/// Opens `path` with the `Authorization` header `auth` (None: without one);
/// returns the status and, unless 200, the body (a 200 stream is dropped).
async fn ask_with(app: &TestApp, path: &str, auth: Option<&[u8]>) -> (u16, String) {
    let mut req = app
        .http
        .get(format!("{}{path}", app.url))
        .header("accept", "text/event-stream");
    if let Some(value) = auth {
        req = req.header(
            "authorization",
            HeaderValue::from_bytes(value).expect("a header value"),
        );
    }
    let resp = tokio::time::timeout(LIMIT, req.send())
        .await
        .unwrap_or_else(|_| panic!("{path}: no answer within {LIMIT:?}"))
        .expect("send");
    let status = resp.status().as_u16();
    if status == 200 {
        return (status, String::new());
    }
    let body = tokio::time::timeout(LIMIT, resp.text())
        .await
        .expect("a body in time")
        .expect("body");
    (status, body)
}

/// Registers an agent of `token`'s workspace at `endpoint`.
async fn foreign_agent(app: &TestApp, token: &str, endpoint: &str) {
    let (status, body) = call(
        &app.http,
        &app.url,
        reqwest::Method::POST,
        "/v1/agents",
        Some(
            json!({"agent_id": "far", "role": "far", "skills": ["research"],
                    "tools": [], "endpoint_url": endpoint, "max_concurrency": 1}),
        ),
        Some(token),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
}

/// Creates a mission in `token`'s workspace; returns its id.
async fn foreign_mission(app: &TestApp, token: &str, autonomy: &str) -> Uuid {
    let (status, m) = call(
        &app.http,
        &app.url,
        reqwest::Method::POST,
        "/v1/missions",
        Some(json!({"goal": "elsewhere", "autonomy": autonomy, "plan": chain_plan()})),
        Some(token),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{m}");
    m["id"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("mission id")
}

/// Authorization values that must all get 401: absent, malformed, unknown,
/// revoked, expired, and seeded garbage.
async fn wrong_credentials(app: &TestApp, ws: Uuid) -> Vec<Option<Vec<u8>>> {
    let (revoked_id, revoked) = token(app, ws, Role::Admin, None).await;
    sqlx::query("UPDATE api_tokens SET revoked_at = now() WHERE id = $1")
        .bind(revoked_id)
        .execute(&app.pool)
        .await
        .expect("revoke");
    let past = time::OffsetDateTime::now_utc() - time::Duration::hours(1);
    let (_, expired) = token(app, ws, Role::Admin, Some(past)).await;
    let unknown = auth::generate_token();
    let mut values: Vec<Option<Vec<u8>>> = vec![None];
    for v in [
        "Bearer".to_owned(),
        "Bearer ".to_owned(),
        "Basic dXNlcjpwYXNz".to_owned(),
        format!("Basic {}", app.token),
        format!("Bearer {unknown}"),
        format!("Bearer {}x", app.token),
        format!("Bearer {}", &app.token[..app.token.len() - 1]),
        format!("Bearer {revoked}"),
        format!("Bearer {expired}"),
        format!("Bearer {}", "a".repeat(10_240)),
        format!("Bearer {} {}", app.token, app.token),
        "Bearer cot_not-a-real-token".to_owned(),
    ] {
        values.push(Some(v.into_bytes()));
    }
    values.push(Some(b"Bearer \xff\xfe".to_vec()));
    let mut rng = Rng::new(SEED ^ 401);
    let alphabet = b"abcdefABCDEF0123456789_-.~+/=:%";
    for _ in 0..20 {
        let len = 1 + rng.below(80);
        let junk: Vec<u8> = (0..len).map(|_| *rng.pick(alphabet)).collect();
        let mut v = b"Bearer cot_".to_vec();
        v.extend(junk);
        values.push(Some(v));
    }
    values
}

/// Writes one event of a mission the engine may also be writing to (a
/// unique seq is retried); returns its id.
async fn mark(app: &TestApp, run: Uuid) -> i64 {
    let ws: Uuid = sqlx::query_scalar("SELECT workspace_id FROM orchestration_runs WHERE id = $1")
        .bind(run)
        .fetch_one(&app.pool)
        .await
        .expect("workspace");
    for _ in 0..5 {
        let seq = last_seq(app, run).await + 1;
        let written: Result<i64, _> = sqlx::query_scalar(
            "INSERT INTO orchestration_events (workspace_id, run_id, seq, kind, actor)
             VALUES ($1, $2, $3, 'fuzz.marker', 'fuzz') RETURNING id",
        )
        .bind(ws)
        .bind(run)
        .bind(seq)
        .fetch_one(&app.pool)
        .await;
        if let Ok(id) = written {
            return id;
        }
    }
    panic!("could not write a marker of {run}");
}

/// Regression: an attempt token's workspace stream is its mission's alone
/// (it carried every mission of the workspace); another mission is a 403,
/// as on the mission routes.
async fn attempt_token_streams_its_mission_only(
    app: &TestApp,
    attempt: &str,
    own: Uuid,
    other: Uuid,
) {
    let bearer = format!("Bearer {attempt}");
    for (path, expected) in [
        (format!("/v1/missions/{own}/events"), 200),
        (format!("/v1/events?mission={own}"), 200),
        (format!("/v1/missions/{other}/events"), 403),
        (format!("/v1/events?mission={other}"), 403),
        (format!("/v1/events?after=0&mission={other}"), 403),
    ] {
        let (status, body) = ask_with(app, &path, Some(bearer.as_bytes())).await;
        assert_eq!(status, expected, "attempt token on {path}: {body:.300}");
        if status != 200 {
            assert_eq!(
                assert_json_error(&path, status, &body)["error"]["code"],
                "forbidden"
            );
        }
    }
    // The whole log from the start, then the other mission writes, then its own.
    let mut resp = open(app, "/v1/events?after=0", attempt, None).await;
    mark(app, other).await;
    let marker = mark(app, own).await;
    let seen = read_until(&mut resp, LIMIT, |e| e.iter().any(|(id, _)| *id == marker)).await;
    assert!(seen.len() > 1, "its mission's history came too");
    for (id, event) in &seen {
        assert_eq!(
            event["mission_id"],
            own.to_string(),
            "event {id} of another mission: {event}"
        );
    }
    // The JSON page too (it listed every mission's events).
    let page: serde_json::Value = app
        .http
        .get(format!("{}/v1/events?after=0&limit=500", app.url))
        .bearer_auth(attempt)
        .send()
        .await
        .expect("page")
        .json()
        .await
        .expect("page json");
    let events = page["events"].as_array().expect("events");
    assert!(!events.is_empty(), "{page}");
    for e in events {
        assert_eq!(
            e["mission_id"],
            own.to_string(),
            "another mission on the page: {e}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_tokens_and_other_workspaces_get_no_stream_and_no_foreign_event() {
    let started = Instant::now();
    let app = spawn_app().await;
    let (ws, run) = quiet_mission(&app).await;
    let theirs = other_workspace_token(&app).await;
    let their_ws: Uuid = sqlx::query_scalar("SELECT id FROM workspaces WHERE name = 'elsewhere'")
        .fetch_one(&app.pool)
        .await
        .expect("the other workspace");
    let worker = ManualWorker::spawn().await;
    foreign_agent(&app, &theirs, &worker.url).await;
    let their_run = foreign_mission(&app, &theirs, "approve").await;
    let attempt_run = foreign_mission(&app, &theirs, "autonomous").await;
    let attempt = worker.dispatch(1).await.callback.token;
    let paths = [
        "/v1/events".to_owned(),
        "/v1/events?after=0".to_owned(),
        format!("/v1/missions/{run}/events"),
        format!("/v1/missions/{their_run}/events"),
    ];

    // Wrong credentials: 401 with the error body, on every stream.
    let credentials = wrong_credentials(&app, ws).await;
    for auth in &credentials {
        for path in &paths {
            let (status, body) = ask_with(&app, path, auth.as_deref()).await;
            let what = format!(
                "{path} with {:.40}",
                auth.as_deref()
                    .map(String::from_utf8_lossy)
                    .unwrap_or_default()
            );
            assert_eq!(status, 401, "{what}: {body:.300}");
            let v = assert_json_error(&what, status, &body);
            assert_eq!(v["error"]["code"], "unauthorized", "{what}");
        }
    }
    // Another workspace's mission is a 404, like one that does not exist.
    let ours = format!("Bearer {}", app.token);
    let theirs_auth = format!("Bearer {theirs}");
    for (auth, path) in [
        (&ours, format!("/v1/missions/{their_run}/events")),
        (&ours, format!("/v1/missions/{}/events", Uuid::now_v7())),
        (&theirs_auth, format!("/v1/missions/{run}/events")),
    ] {
        let (status, body) = ask_with(&app, &path, Some(auth.as_bytes())).await;
        assert_eq!(status, 404, "{path}: {body:.300}");
        assert_eq!(
            assert_json_error(&path, status, &body)["error"]["code"],
            "not_found"
        );
    }
    // Read-only roles may follow (the routes take any token of the workspace).
    for role in [Role::Stakeholder, Role::Worker] {
        let (_, viewer) = token(&app, ws, role, None).await;
        for path in [
            "/v1/events?after=0".to_owned(),
            format!("/v1/missions/{run}/events"),
        ] {
            let mut resp = open(&app, &path, &viewer, None).await;
            let first = read_until(&mut resp, LIMIT, |e| !e.is_empty()).await;
            assert_eq!(first[0].1["mission_id"], run.to_string(), "{role:?} {path}");
        }
    }
    attempt_token_streams_its_mission_only(&app, &attempt, attempt_run, their_run).await;

    // No event of one workspace reaches the other's stream: each reads its
    // whole log, then the other workspace writes, then its own marker; the
    // marker comes in commit order after anything foreign would have.
    for (token, mine, other) in [(&app.token, ws, their_ws), (&theirs, their_ws, ws)] {
        let own: Vec<i64> = sqlx::query_scalar(
            "SELECT id FROM orchestration_events WHERE workspace_id = $1 ORDER BY xid, id",
        )
        .bind(mine)
        .fetch_all(&app.pool)
        .await
        .expect("own events");
        let mut resp = open(&app, "/v1/events?after=0", token, None).await;
        let history = read_until(&mut resp, LIMIT, |e| e.len() >= own.len()).await;
        let history: Vec<i64> = history.iter().map(|(id, _)| *id).collect();
        assert_eq!(history, own, "the whole log of its own workspace, only");
        let foreign = write_events(&app, other, None, 0, 3, 16).await;
        let marker = write_events(&app, mine, None, 0, 1, 16).await;
        // Its own workspace may write meanwhile (a live mission): only
        // foreign events are wrong, up to the marker that follows them.
        let next = read_until(&mut resp, LIMIT, |e| {
            e.iter().any(|(id, _)| *id == marker[0])
        })
        .await;
        let leaked: Vec<i64> = next
            .iter()
            .map(|(id, _)| *id)
            .filter(|id| foreign.contains(id))
            .collect();
        assert!(
            leaked.is_empty(),
            "foreign events {leaked:?} reached the stream"
        );
    }
    println!(
        "stream_fuzz figures: credentials={} paths={} secs={:.1}",
        credentials.len(),
        paths.len(),
        started.elapsed().as_secs_f64()
    );
    app.stop().await;
}
