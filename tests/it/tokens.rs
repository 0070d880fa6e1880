//! API tokens: listed without their secrets, revoked with immediate effect
//! (requests, event streams, MCP), expiring, a long enough bootstrap token,
//! confined to their workspace; and event actors that name the whole token.

use std::{
    process::Stdio,
    time::{Duration, Instant},
};

use coordinator::auth::{self, Role};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::helpers::{TestApp, chain_plan, fresh_database, spawn_app};

/// Mints a token through `POST /v1/tokens` with the admin token; (id, secret).
async fn mint(app: &TestApp, body: Value) -> (Uuid, String) {
    let (status, t) = app.post("/v1/tokens", body).await;
    assert_eq!(status, StatusCode::CREATED, "{t}");
    (
        t["id"].as_str().and_then(|s| s.parse().ok()).expect("id"),
        t["token"].as_str().expect("secret").to_owned(),
    )
}

/// `GET path` with `token`.
async fn get_as(app: &TestApp, token: &str, path: &str) -> (StatusCode, Value) {
    app.request(Method::GET, path, None, Some(token)).await
}

/// The listed token `id`, if the page holds it.
fn listed(page: &Value, id: Uuid) -> Option<Value> {
    page["tokens"]
        .as_array()?
        .iter()
        .find(|t| t["id"] == id.to_string())
        .cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_list_shows_name_role_and_last_use_but_never_a_secret() {
    let app = spawn_app().await;
    let (id, secret) = mint(&app, json!({"role": "operator", "name": "ci deploys"})).await;
    let (_, before) = app.get("/v1/tokens").await;
    let row = listed(&before, id).expect("the new token is listed");
    assert_eq!(row["name"], "ci deploys", "{row}");
    assert_eq!(row["role"], "operator", "{row}");
    assert_eq!(row["last_used_at"], Value::Null, "never used yet: {row}");
    assert_eq!(row["expires_at"], Value::Null, "{row}");
    assert!(row["created_at"].is_string(), "{row}");

    let (status, _) = get_as(&app, &secret, "/v1/missions").await;
    assert_eq!(status, StatusCode::OK);
    let (status, page) = app.get("/v1/tokens").await;
    assert_eq!(status, StatusCode::OK, "{page}");
    let used = listed(&page, id).expect("listed");
    assert!(used["last_used_at"].is_string(), "marked used: {used}");
    // Used again within the minute: not written again.
    let (status, _) = get_as(&app, &secret, "/v1/missions").await;
    assert_eq!(status, StatusCode::OK);
    let (_, again) = app.get("/v1/tokens").await;
    assert_eq!(
        listed(&again, id).expect("listed")["last_used_at"],
        used["last_used_at"]
    );

    // Never the secret, nor its hash, nor any field that could carry one.
    let text = page.to_string();
    let hash: String = auth::hash_token(&secret)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    for leaked in [secret.as_str(), app.token.as_str(), hash.as_str(), "cot_"] {
        assert!(!text.contains(leaked), "the list shows {leaked}: {text}");
    }
    for t in page["tokens"].as_array().expect("tokens") {
        let mut keys: Vec<&str> = t
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        assert_eq!(
            keys,
            [
                "agent_id",
                "created_at",
                "expires_at",
                "id",
                "last_used_at",
                "name",
                "revoked_at",
                "role"
            ],
            "{t}"
        );
    }

    // Pages: newest first, one at a time, then no cursor.
    let (_, first) = app.get("/v1/tokens?limit=1").await;
    assert_eq!(first["tokens"][0]["id"], id.to_string(), "{first}");
    let cursor = first["next_cursor"].as_str().expect("a next page");
    let (_, second) = app
        .get(&format!("/v1/tokens?limit=1&cursor={cursor}"))
        .await;
    assert_eq!(second["tokens"][0]["name"], "bootstrap", "{second}");
    let (_, last) = app
        .get(&format!(
            "/v1/tokens?limit=1&cursor={}",
            second["tokens"][0]["id"].as_str().expect("id")
        ))
        .await;
    assert_eq!(last["tokens"], json!([]), "{last}");
    assert_eq!(last["next_cursor"], Value::Null, "{last}");
    let (status, body) = app.get("/v1/tokens?limit=501").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");

    // Admins only.
    for path in ["/v1/tokens".to_owned(), format!("/v1/tokens/{id}")] {
        let (status, body) = get_as(&app, &secret, &path).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {body}");
    }
    let (status, body) = app
        .request(
            Method::DELETE,
            &format!("/v1/tokens/{id}"),
            None,
            Some(&secret),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_names_and_expiries_are_refused_and_create_nothing() {
    let app = spawn_app().await;
    let count = || async {
        let (n,): (i64,) = sqlx::query_as("SELECT count(*) FROM api_tokens")
            .fetch_one(&app.pool)
            .await
            .expect("count");
        n
    };
    let before = count().await;
    for (body, field) in [
        (json!({"role": "operator", "name": "x".repeat(129)}), "name"),
        (json!({"role": "operator", "name": "  "}), "name"),
        (
            json!({"role": "operator", "expires_in_secs": 0}),
            "expires_in_secs",
        ),
        (
            json!({"role": "operator", "expires_in_secs": 11u64 * 366 * 24 * 3600}),
            "expires_in_secs",
        ),
    ] {
        let (status, answer) = app.post("/v1/tokens", body.clone()).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{body}: {answer}");
        assert_eq!(answer["error"]["code"], "invalid_request", "{answer}");
        assert_eq!(answer["error"]["details"]["field"], field, "{answer}");
    }
    let (status, answer) = app
        .post(
            "/v1/tokens",
            json!({"role": "operator", "expires_at": "2030-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "unknown field: {answer}");
    assert_eq!(count().await, before, "a refused request made a token");
    let (_, ok) = app
        .post(
            "/v1/tokens",
            json!({"role": "operator", "name": "x".repeat(128), "expires_in_secs": 3600}),
        )
        .await;
    assert!(ok["expires_at"].is_string(), "{ok}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_revoked_token_gets_401_at_once_everywhere() {
    let app = spawn_app().await;
    let (id, secret) = mint(&app, json!({"role": "operator", "name": "leaked"})).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}});
    let mcp = |token: String, body: Value| {
        let http = app.http.clone();
        let url = format!("{}/mcp", app.url);
        async move {
            http.post(url)
                .bearer_auth(token)
                .header("accept", "application/json, text/event-stream")
                .json(&body)
                .send()
                .await
                .expect("mcp")
                .status()
                .as_u16()
        }
    };
    assert_eq!(mcp(secret.clone(), init.clone()).await, 200);
    let (status, _) = get_as(&app, &secret, "/v1/missions").await;
    assert_eq!(status, StatusCode::OK);

    let (status, body) = app
        .request(
            Method::DELETE,
            &format!("/v1/tokens/{id}"),
            None,
            Some(&app.token),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let (status, body) = get_as(&app, &secret, "/v1/missions").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(body["error"]["code"], "unauthorized", "{body}");
    assert_eq!(mcp(secret.clone(), init).await, 401, "MCP refuses it too");

    // Gone from the list, still resolvable (an actor must stay readable).
    let (_, page) = app.get("/v1/tokens").await;
    assert!(listed(&page, id).is_none(), "{page}");
    let (_, all) = app.get("/v1/tokens?include_revoked=true").await;
    let row = listed(&all, id).expect("listed with include_revoked");
    assert!(row["revoked_at"].is_string(), "{row}");
    let (status, one) = app.get(&format!("/v1/tokens/{id}")).await;
    assert_eq!(status, StatusCode::OK, "{one}");
    assert_eq!(one["name"], "leaked", "{one}");
    assert!(one["revoked_at"].is_string(), "{one}");

    // Again: nothing changes; unknown: 404; not an id: 400.
    let (status, _) = app
        .request(
            Method::DELETE,
            &format!("/v1/tokens/{id}"),
            None,
            Some(&app.token),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (_, after) = app.get(&format!("/v1/tokens/{id}")).await;
    assert_eq!(after["revoked_at"], one["revoked_at"]);
    let (status, body) = app
        .request(
            Method::DELETE,
            &format!("/v1/tokens/{}", Uuid::now_v7()),
            None,
            Some(&app.token),
        )
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    let (status, _) = app
        .request(Method::DELETE, "/v1/tokens/nope", None, Some(&app.token))
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // An admin may revoke its own token: it stops working at once.
    let (admin_id, admin) = mint(&app, json!({"role": "admin", "name": "short-lived admin"})).await;
    let (status, _) = app
        .request(
            Method::DELETE,
            &format!("/v1/tokens/{admin_id}"),
            None,
            Some(&admin),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    let (status, _) = get_as(&app, &admin, "/v1/tokens").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    app.stop().await;
}

/// Opens `GET path` as an event stream with `token` and reads its greeting.
async fn open_stream(app: &TestApp, token: &str, path: &str) -> reqwest::Response {
    let mut resp = app
        .http
        .get(format!("{}{path}", app.url))
        .bearer_auth(token)
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("stream");
    assert_eq!(resp.status().as_u16(), 200, "{path}");
    let first = tokio::time::timeout(Duration::from_secs(5), resp.chunk())
        .await
        .expect("the greeting in time")
        .expect("a chunk")
        .expect("not ended");
    assert!(
        String::from_utf8_lossy(&first).contains("stream open"),
        "{first:?}"
    );
    resp
}

/// Reads `resp` until it ends; how long that took, or `None` after `limit`.
async fn time_to_end(mut resp: reqwest::Response, limit: Duration) -> Option<Duration> {
    let start = Instant::now();
    tokio::time::timeout(limit, async {
        // Ok(None) is a clean end; an error is the connection closing.
        while let Ok(Some(_)) = resp.chunk().await {}
    })
    .await
    .ok()
    .map(|()| start.elapsed())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revoking_a_token_ends_its_open_event_streams() {
    let app = spawn_app().await;
    let (id, secret) = mint(&app, json!({"role": "stakeholder", "name": "dashboard"})).await;
    let (_, keeper) = mint(&app, json!({"role": "stakeholder", "name": "kept"})).await;
    app.register_fleet("http://127.0.0.1:9", 1).await;
    let mission = app
        .create_mission(json!({"goal": "watched", "plan": chain_plan()}))
        .await;
    let mission_path = format!(
        "/v1/missions/{}/events",
        mission["id"].as_str().expect("id")
    );
    let workspace = open_stream(&app, &secret, "/v1/events?after=0").await;
    let of_mission = open_stream(&app, &secret, &mission_path).await;
    let kept = open_stream(&app, &keeper, "/v1/events?after=0").await;

    let revoked_at = Instant::now();
    let (status, body) = app
        .request(
            Method::DELETE,
            &format!("/v1/tokens/{id}"),
            None,
            Some(&app.token),
        )
        .await;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    let deadline = Duration::from_secs(5);
    let (a, b) = tokio::join!(
        time_to_end(workspace, deadline),
        time_to_end(of_mission, deadline)
    );
    let a = a.expect("the workspace stream ended within 5 s of the revocation");
    let b = b.expect("the mission stream ended within 5 s of the revocation");
    eprintln!(
        "streams ended {:?} and {:?} after the revocation (revoke call took {:?})",
        a,
        b,
        revoked_at.elapsed() - a.max(b)
    );
    // The other token's stream is still open after the same wait.
    assert_eq!(
        time_to_end(kept, Duration::from_secs(3)).await,
        None,
        "an unrevoked token's stream ended"
    );
    // The client's reconnect is refused.
    let resp = app
        .http
        .get(format!("{}/v1/events", app.url))
        .bearer_auth(&secret)
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("reconnect");
    assert_eq!(resp.status().as_u16(), 401);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expired_token_gets_401_and_its_stream_ends_when_it_expires() {
    let app = spawn_app().await;
    // Expired already (written straight to the database).
    let mut conn = app.pool.acquire().await.expect("conn");
    let ws: (Uuid,) = sqlx::query_as("SELECT id FROM workspaces WHERE name = 'default'")
        .fetch_one(&mut *conn)
        .await
        .expect("workspace");
    let old = auth::generate_token();
    let past = time::OffsetDateTime::now_utc() - Duration::from_secs(1);
    auth::insert_token_until(
        &mut conn,
        ws.0,
        Role::Operator,
        "old",
        None,
        &old,
        Some(past),
    )
    .await
    .expect("token");
    drop(conn);
    let (status, body) = get_as(&app, &old, "/v1/missions").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    assert_eq!(body["error"]["code"], "unauthorized", "{body}");

    // Expires while its stream is open.
    let (id, secret) = mint(&app, json!({"role": "operator", "expires_in_secs": 3})).await;
    let (_, row) = app.get(&format!("/v1/tokens/{id}")).await;
    assert!(row["expires_at"].is_string(), "{row}");
    let stream = open_stream(&app, &secret, "/v1/events?after=0").await;
    let ended = time_to_end(stream, Duration::from_secs(8))
        .await
        .expect("the stream ended once the token expired");
    eprintln!("stream of a 3 s token ended {ended:?} after it opened");
    let (status, _) = get_as(&app, &secret, "/v1/missions").await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_made_in_the_same_millisecond_are_different_actors() {
    let app = spawn_app().await;
    let ws: (Uuid,) = sqlx::query_as("SELECT id FROM workspaces WHERE name = 'default'")
        .fetch_one(&app.pool)
        .await
        .expect("workspace");
    app.register_fleet("http://127.0.0.1:9", 1).await;
    // Two UUIDv7 ids of one millisecond: the same 48 timestamp bits, so the
    // same first 8 hex digits (the actor of old), different random bits.
    let ms = u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_millis(),
    )
    .expect("ms");
    let ids = [
        uuid::Builder::from_unix_timestamp_millis(ms, &[1; 10]).into_uuid(),
        uuid::Builder::from_unix_timestamp_millis(ms, &[2; 10]).into_uuid(),
    ];
    assert_eq!(
        ids[0].simple().to_string()[..8],
        ids[1].simple().to_string()[..8]
    );
    let mut actors = Vec::new();
    for (n, id) in ids.iter().enumerate() {
        let secret = auth::generate_token();
        sqlx::query(
            "INSERT INTO api_tokens (id, workspace_id, name, role, token_hash)
             VALUES ($1, $2, $3, 'operator', $4)",
        )
        .bind(id)
        .bind(ws.0)
        .bind(format!("operator {n}"))
        .bind(auth::hash_token(&secret))
        .execute(&app.pool)
        .await
        .expect("token");
        let (status, mission) = app
            .request(
                Method::POST,
                "/v1/missions",
                Some(json!({"goal": format!("mission {n}"), "plan": chain_plan()})),
                Some(&secret),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{mission}");
        let (_, events) = app
            .get(&format!(
                "/v1/missions/{}/events",
                mission["id"].as_str().expect("id")
            ))
            .await;
        let created = events["events"]
            .as_array()
            .and_then(|e| e.iter().find(|e| e["kind"] == "mission.created"))
            .unwrap_or_else(|| panic!("no mission.created: {events}"));
        let actor = created["actor"].as_str().expect("actor").to_owned();
        assert_eq!(actor, format!("operator:{id}"), "the full token id");
        // The actor resolves to the token and its name.
        let (status, token) = app.get(&format!("/v1/tokens/{id}")).await;
        assert_eq!(status, StatusCode::OK, "{token}");
        assert_eq!(token["name"], format!("operator {n}"), "{token}");
        actors.push(actor);
    }
    assert_ne!(actors[0], actors[1], "two tokens, one actor");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_workspace_admin_cannot_list_or_revoke_another_workspaces_tokens() {
    let app = spawn_app().await;
    let mut conn = app.pool.acquire().await.expect("conn");
    let ws_b = auth::workspace_by_name(&mut conn, "tokens-b")
        .await
        .expect("workspace");
    let b_admin = auth::generate_token();
    let b_admin_id = auth::insert_token(&mut conn, ws_b, Role::Admin, "b admin", None, &b_admin)
        .await
        .expect("token");
    drop(conn);
    let (status, b_op) = app
        .request(
            Method::POST,
            "/v1/tokens",
            Some(json!({"role": "operator", "name": "B-SECRET-NAME"})),
            Some(&b_admin),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{b_op}");
    let b_op_id: Uuid = b_op["id"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .expect("id");
    let b_op_secret = b_op["token"].as_str().expect("secret").to_owned();

    let (_, a_list) = app.get("/v1/tokens?include_revoked=true").await;
    let text = a_list.to_string();
    for b in [
        b_admin_id.to_string(),
        b_op_id.to_string(),
        "B-SECRET-NAME".into(),
    ] {
        assert!(!text.contains(&b), "A's list shows B's {b}: {text}");
    }
    for id in [b_admin_id, b_op_id] {
        let (status, body) = app.get(&format!("/v1/tokens/{id}")).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
        let (status, body) = app
            .request(
                Method::DELETE,
                &format!("/v1/tokens/{id}"),
                None,
                Some(&app.token),
            )
            .await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
    }
    // B's tokens still work; B sees its own.
    let (status, _) = get_as(&app, &b_op_secret, "/v1/missions").await;
    assert_eq!(status, StatusCode::OK, "A's DELETE revoked B's token");
    let (_, b_list) = get_as(&app, &b_admin, "/v1/tokens").await;
    assert!(listed(&b_list, b_op_id).is_some(), "{b_list}");
    assert_eq!(
        b_list["tokens"].as_array().map(Vec::len),
        Some(2),
        "{b_list}"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bootstrap_tokens_shorter_than_32_characters_are_refused() {
    let db = fresh_database().await;
    let pool = coordinator::db::connect(&db, 2).await.expect("connect");
    let short = "a-31-character-admin-token-0123";
    assert_eq!(short.len(), 31);
    let e = auth::ensure_bootstrap(&pool, Some(short))
        .await
        .expect_err("a 31-character bootstrap token is refused");
    assert!(e.to_string().contains("at least 32"), "{e}");
    let (n,): (i64,) = sqlx::query_as("SELECT count(*) FROM api_tokens")
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(n, 0, "a refused bootstrap made a token");
    let long = format!("{short}4");
    assert_eq!(
        auth::ensure_bootstrap(&pool, Some(&long))
            .await
            .expect("32 is enough"),
        auth::Bootstrap::FromEnvironment
    );
    pool.close().await;

    // `serve` refuses it at startup, before it listens.
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_coordinator"))
        .args(["serve", "--listen", "127.0.0.1:0", "--no-engine"])
        .env("DATABASE_URL", &db)
        .env("COORDINATOR_BOOTSTRAP_TOKEN", short)
        .env_remove("COORDINATOR_CONFIG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .expect("serve exits in time")
        .expect("serve ran");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "serve started: {stderr}");
    assert!(stderr.contains("at least 32"), "{stderr}");
    assert!(
        !stderr.contains(short),
        "the refused secret is echoed: {stderr}"
    );
}
