//! The built-in web board: served without a token, and driven end to end in
//! a real headless Chromium (`tests/js/board-page.mjs`; the Approvals panel
//! by `tests/js/board-approvals.mjs`).

use std::{collections::BTreeSet, time::Duration};

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::{helpers::*, peers};

/// `GET path` without a token: (status, headers, body).
async fn fetch(
    app: &TestApp,
    path: &str,
    if_none_match: Option<&str>,
) -> (u16, reqwest::header::HeaderMap, String) {
    let mut req = app.http.get(format!("{}{path}", app.url));
    if let Some(tag) = if_none_match {
        req = req.header("if-none-match", tag);
    }
    let resp = req.send().await.expect("request");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    (status, headers, resp.text().await.expect("body"))
}

fn header<'a>(headers: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_and_its_assets_are_served_without_a_token_and_unknown_paths_stay_json() {
    let app = spawn_app().await;

    let (status, headers, body) = fetch(&app, "/", None).await;
    assert_eq!(status, 200);
    assert_eq!(header(&headers, "content-type"), "text/html; charset=utf-8");
    assert_eq!(header(&headers, "cache-control"), "no-cache");
    assert!(header(&headers, "content-security-policy").contains("script-src 'self'"));
    assert!(body.contains("/assets/board.js") && body.contains("/assets/board.css"));

    // The entry module, the modules it imports (each preloaded by the page)
    // and the stylesheet.
    let js = "text/javascript; charset=utf-8";
    let mut assets = vec![
        ("/assets/board.js".to_owned(), js, "import "),
        ("/assets/stream.js".to_owned(), js, "text/event-stream"),
        (
            "/assets/board.css".to_owned(),
            "text/css; charset=utf-8",
            ".board",
        ),
    ];
    for preload in body.split("rel=\"modulepreload\" href=\"").skip(1) {
        let path = preload.split('"').next().unwrap_or_default().to_owned();
        assets.push((path, js, "export "));
    }
    assert!(assets.len() >= 8, "the page preloads its modules: {body}");
    for (path, content_type, needle) in assets {
        let path = path.as_str();
        let (status, headers, body) = fetch(&app, path, None).await;
        assert_eq!(status, 200, "{path}");
        assert_eq!(header(&headers, "content-type"), content_type, "{path}");
        assert_eq!(header(&headers, "x-content-type-options"), "nosniff");
        assert!(body.contains(needle), "{path}");
        // The browser's copy is revalidated, not downloaded again.
        let etag = header(&headers, "etag").to_owned();
        assert!(etag.starts_with('"'), "{path}: {etag}");
        let (status, _, body) = fetch(&app, path, Some(&etag)).await;
        assert_eq!((status, body.as_str()), (304, ""), "{path}");
    }

    // Only `/` and the known assets: everything else is still the JSON 404.
    for path in [
        "/nope",
        "/assets/nope.js",
        "/assets/../Cargo.toml",
        "/v1/nope",
    ] {
        let (status, headers, body) = fetch(&app, path, None).await;
        assert_eq!(status, 404, "{path}");
        assert!(header(&headers, "content-type").starts_with("application/json"));
        let body: Value = serde_json::from_str(&body).expect("json 404");
        assert_eq!(body["error"]["code"], "not_found", "{path}");
    }
    // The API itself still wants a token.
    let (status, _) = app
        .request(reqwest::Method::GET, "/v1/missions", None, None)
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_approves_watches_and_accepts_a_mission_in_headless_chromium() {
    let (Some(js), Some(chromium)) = (peers::js_dir(), peers::chromium()) else {
        return;
    };
    let app = spawn_app().await;
    // Slow enough that a card is seen in progress, fast enough for a short test.
    let worker = spawn_worker(400).await;
    app.register_fleet(&worker.url(), 2).await;
    let m = app
        .create_mission(
            json!({"goal": "Research the board in a browser", "autonomy": "approve",
                               "plan": chain_plan()}),
        )
        .await;
    let id = m["id"].as_str().unwrap().to_owned();
    app.wait_for_status(&id, &["awaiting_approval"]).await;

    let shot = peers::artifacts().join("board.png");
    let _ = std::fs::remove_file(&shot);
    let s = peers::run_browser(
        &js,
        "board-page.mjs",
        &[&app.url, &app.token, &id, &shot, &chromium],
        Duration::from_secs(180),
    )
    .await;

    // Asked for a token, refused a wrong one with the service's message.
    let (_, refused) = app
        .request(
            reqwest::Method::GET,
            "/v1/missions",
            None,
            Some("not-a-real-token"),
        )
        .await;
    assert_eq!(s["wrongToken"], refused["error"]["message"], "{s}");
    assert_eq!(s["tokenFormHidden"], true, "{s}");
    // The token was taken from the fragment and left the address bar.
    let url_after = s["urlAfterToken"].as_str().unwrap();
    assert!(!url_after.contains("token"), "{url_after}");
    // Before approval: three cards in backlog and the graph a → b → c.
    assert_eq!(s["listedStatus"], "awaiting_approval", "{s}");
    assert_eq!(s["statusBefore"], "awaiting_approval", "{s}");
    assert_eq!(s["backlogBefore"], json!(["a", "b", "c"]), "{s}");
    assert_eq!(s["dagNodes"], 3, "{s}");
    assert_eq!(s["dagEdges"], json!(["a->b", "b->c"]), "{s}");
    // After: every card done, the review step offered, then completed.
    assert_eq!(s["doneAfter"], json!(["a", "b", "c"]), "{s}");
    assert_eq!(s["statusAtReview"], "awaiting_review", "{s}");
    assert_eq!(s["statusAfter"], "completed", "{s}");
    assert_eq!(s["dagSucceeded"], 3, "{s}");

    // Live, not on reload: the same document showed the cards moving
    // through intermediate states, one board at a time.
    assert_eq!(s["sameDocument"], true, "{s}");
    let boards = s["boards"].as_array().unwrap();
    assert_eq!(
        boards.first().unwrap(),
        &json!({"a": "backlog", "b": "backlog", "c": "backlog"})
    );
    assert_eq!(
        boards.last().unwrap(),
        &json!({"a": "done", "b": "done", "c": "done"})
    );
    // c waits in backlog for b (400 ms of work) after a is done: a page that
    // follows the stream shows that middle state, one that reloads does not.
    assert!(
        boards
            .iter()
            .any(|b| b["a"] == "done" && b["c"] == "backlog"),
        "no board between start and end was shown: {s}"
    );
    assert!(boards.len() >= 3, "{s}");

    // The timeline: newest first, with the mission's story in it.
    let timeline = s["timeline"].as_array().unwrap();
    let seqs: Vec<i64> = timeline
        .iter()
        .map(|e| e["seq"].as_i64().unwrap())
        .collect();
    assert!(
        seqs.windows(2).all(|w| w[0] > w[1]),
        "newest first: {seqs:?}"
    );
    let kinds: BTreeSet<&str> = timeline
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    for kind in [
        "mission.created",
        "mission.status_changed",
        "task.dispatched",
        "task.succeeded",
    ] {
        assert!(kinds.contains(kind), "{kind} missing from {kinds:?}");
    }
    // A refused action shows the service's own message.
    let (status, refused) = app
        .post(&format!("/v1/missions/{id}/approve"), json!({}))
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{refused}");
    assert_eq!(s["refusal"], refused["error"]["message"], "{s}");
    assert_eq!(s["pageErrors"], json!([]), "{s}");

    // The service agrees, and the screenshot is a real PNG.
    let (_, mission) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(mission["status"], "completed", "{mission}");
    assert!(
        mission["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["status"] == "succeeded"),
        "{mission}"
    );
    let png = std::fs::read(&shot).expect("screenshot saved");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_approves_a_tool_call_in_the_approvals_panel_in_headless_chromium() {
    let (Some(js), Some(chromium)) = (peers::js_dir(), peers::chromium()) else {
        return;
    };
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    // Every tool call of task a needs a person.
    let mut plan = chain_plan();
    plan["tasks"][0]["inputs"] = json!({"tool_policy": {"auto_approve": false}});
    let m = app
        .create_mission(json!({"goal": "Approve a tool call on the board",
                               "autonomy": "autonomous", "plan": plan}))
        .await;
    let mission = m["id"].as_str().unwrap().to_owned();
    // The page opens first; the worker's request comes while it is open.
    let d = worker.dispatch(1).await;
    let rationale = "Reviewed the diff: a small, safe change";

    let shot = peers::artifacts().join("board-approvals.png");
    let _ = std::fs::remove_file(&shot);
    let s = peers::run_browser(
        &js,
        "board-approvals.mjs",
        &[
            &app.url,
            &app.token,
            &mission,
            &d.attempt_id.to_string(),
            &d.callback.token,
            &rationale,
            &shot,
            &chromium,
        ],
        Duration::from_secs(120),
    )
    .await;

    // The worker's request was left to a person, and the open page showed
    // it from the stream, with what is asked.
    assert_eq!(s["askedStatus"], 201, "{s}");
    assert_eq!(s["approvalStatus"], "pending", "{s}");
    let approval = s["approvalId"].as_str().expect("approval id").to_owned();
    assert_eq!(s["countBefore"], "0", "{s}");
    assert_eq!(s["sameDocument"], true, "{s}");
    assert_eq!(s["kind"], "tool", "{s}");
    assert_eq!(s["title"], "Tool call: write_file", "{s}");
    assert_eq!(s["facts"]["agent"], d.agent_id.as_str(), "{s}");
    assert_eq!(s["task"], "a", "{s}");
    assert_eq!(s["facts"]["verdict"], "needs approval", "{s}");
    assert_eq!(
        s["facts"]["reasons"], "the policy requires approval for every tool call",
        "{s}"
    );
    assert_eq!(s["facts"]["paths"], "src/lib.rs", "{s}");
    assert_eq!(s["missionCount"], "1", "{s}");
    assert_eq!(s["workspaceCount"], "1", "{s}");
    // Approving without a rationale showed the service's own refusal.
    let (status, refused) = app
        .post(
            &format!("/v1/tool-approvals/{approval}/resolve"),
            json!({"outcome": "approved", "rationale": ""}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
    assert_eq!(s["refusal"], refused["error"]["message"], "{s}");
    assert_eq!(s["stillShownAfterRefusal"], 1, "{s}");
    assert_eq!(s["missionCountAfter"], "0", "{s}");
    assert_eq!(s["pageErrors"], json!([]), "{s}");

    // The service agrees: approved, with the person's rationale and token.
    let token_id: uuid::Uuid =
        sqlx::query_scalar("SELECT id FROM api_tokens WHERE token_hash = $1")
            .bind(coordinator::auth::hash_token(&app.token))
            .fetch_one(&app.pool)
            .await
            .expect("the admin token");
    let (status, view) = app.get(&format!("/v1/tool-approvals/{approval}")).await;
    assert_eq!(status, StatusCode::OK, "{view}");
    assert_eq!(view["status"], "approved", "{view}");
    assert_eq!(view["granted"], true, "{view}");
    assert_eq!(view["rationale"], rationale, "{view}");
    assert_eq!(view["resolver"], format!("admin:{token_id}"), "{view}");
    // The worker's poll says the same.
    let (_, polled) = app
        .request(
            reqwest::Method::GET,
            &format!("/v1/attempts/{}/tool-approvals/{approval}", d.attempt_id),
            None,
            Some(&d.callback.token),
        )
        .await;
    assert_eq!(polled["granted"], true, "{polled}");
    let png = std::fs::read(&shot).expect("screenshot saved");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_docs_page_makes_no_outside_calls_in_headless_chromium() {
    let (Some(js), Some(chromium)) = (peers::js_dir(), peers::chromium()) else {
        return;
    };
    let app = spawn_app().await;
    let shot = peers::artifacts().join("docs-page.png");
    let _ = std::fs::remove_file(&shot);
    let s = peers::run_browser(
        &js,
        "docs-page.mjs",
        &[&app.url, &shot, &chromium],
        Duration::from_secs(120),
    )
    .await;
    // The page loaded its script and the document from the service...
    assert!(s["requests"].as_u64().unwrap_or(0) >= 3, "{s}");
    // ...and nothing from anywhere else, nor offers a button that would.
    assert_eq!(s["outside"], json!([]), "{s}");
    assert_eq!(s["buttons"], json!([]), "{s}");
    app.stop().await;
}
