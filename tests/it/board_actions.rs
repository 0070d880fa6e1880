//! The board's "needs you" actions clicked for real in a headless Chromium
//! (`tests/js/board-actions.mjs`), with this test playing the worker: a
//! budget raised from the Approvals panel takes back the task the old one
//! refused, which then runs; a failed mission says why under its heading and
//! is continued from the board (Retry or Skip per failed task), executing
//! again until it completes. Screenshots go to `test-artifacts/board-actions/`.

use std::{process::Stdio, time::Duration};

use axum::http::StatusCode;
use serde_json::json;

use crate::{helpers::*, peers};

/// How long the worker holds a task before reporting, so the open page
/// shows it in progress (events reach the page well within this).
const HOLD: Duration = Duration::from_millis(1500);
const FEEDBACK: &str = "use the mirror";

/// A chain mission whose task `a` failed for good: three failed attempts,
/// then a person failed it (`b` and `c` were cancelled with it).
async fn failed_mission(app: &TestApp, worker: &ManualWorker, http: &reqwest::Client) -> String {
    let m = app
        .create_mission(json!({"goal": "A chain that fails at its first step",
                               "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap().to_owned();
    // The first mission of a fresh worker: dispatches 1–3.
    let mut next = 1;
    fail_times(worker, http, &mut next, 3, "a").await;
    wait_task(app, &id, "a", "awaiting_human").await;
    let (s, body) = app
        .post(
            &format!("/v1/missions/{id}/tasks/a/resolve"),
            json!({"action": "fail", "feedback": "the source is down"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    app.wait_for_status(&id, &["failed"]).await;
    id
}

/// A chain mission whose budget (0.03) refused `b` after `a` spent 0.025.
async fn refused_mission(app: &TestApp, worker: &ManualWorker, http: &reqwest::Client) -> String {
    let m = app
        .create_mission(
            json!({"goal": "A chain on a tight budget", "autonomy": "autonomous",
                               "plan": chain_plan(), "budget": 0.03}),
        )
        .await;
    let id = m["id"].as_str().unwrap().to_owned();
    let a = worker.dispatch(4).await;
    assert_eq!(a.task.key, "a");
    succeed(http, &a, json!("a"), 0.025).await;
    wait_task(app, &id, "b", "awaiting_human").await;
    let (_, items) = app.get(&format!("/v1/attention?mission_id={id}")).await;
    assert_eq!(items["items"][0]["kind"], "budget", "{items}");
    id
}

/// The worker's side while the page acts: `b` and `c` of the budget mission
/// once the budget is raised, then `a`, `b`, `c` of the continued one.
async fn play_worker(worker: &ManualWorker, http: &reqwest::Client, first: usize) {
    for (n, key) in (first..).zip(["b", "c", "a", "b", "c"]) {
        // Each waits on a click in a browser that may start slowly on a
        // loaded machine: a longer limit than the 30 s of `dispatch`.
        let d = worker.dispatch_within(n, Duration::from_secs(120)).await;
        assert_eq!(d.task.key, key, "dispatch #{n}");
        if n == first + 2 {
            // The retried task carries the person's guidance.
            assert_eq!(d.feedback.as_deref(), Some(FEEDBACK));
        }
        tokio::time::sleep(HOLD).await;
        succeed(http, &d, json!(key), 0.01).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_raises_a_budget_and_continues_a_failed_mission_in_headless_chromium() {
    let (Some(js), Some(chromium)) = (peers::js_dir(), peers::chromium()) else {
        return;
    };
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let http = reqwest::Client::new();
    // One after the other, so the dispatches come in a known order.
    let failed = failed_mission(&app, &worker, &http).await;
    let refused = refused_mission(&app, &worker, &http).await;
    let (_, before) = app.get(&format!("/v1/missions/{failed}")).await;

    let dir = peers::artifacts().join("board-actions");
    std::fs::create_dir_all(&dir).expect("create test-artifacts/board-actions");
    let node = tokio::process::Command::new("node")
        .arg(js.join("board-actions.mjs"))
        .arg(&app.url)
        .arg(&app.token)
        .arg(&refused)
        .arg(&failed)
        .arg("0.06")
        .arg(FEEDBACK)
        .arg(&dir)
        .arg(&chromium)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("run node")
        .wait_with_output();
    tokio::pin!(node);
    let worker_side = play_worker(&worker, &http, 5);
    // The page ends only after the worker's last report: if it ends first,
    // it failed, and its summary says where.
    let out = tokio::time::timeout(Duration::from_secs(240), async {
        let early = tokio::select! {
            out = &mut node => Some(out),
            () = worker_side => None,
        };
        match early {
            Some(out) => out,
            None => node.await,
        }
    })
    .await
    .expect("the browser run finished within 4 minutes")
    .expect("node output");
    let s = peers::summary(&out);
    assert_eq!(s["pageErrors"], json!([]), "{s}");

    // The budget item: what waits and why, the budget that fits, its command.
    let b = &s["budget"];
    assert_eq!(b["status"], "executing", "{b}");
    assert_eq!(b["task"], "b", "{b}");
    assert_eq!(b["count"], "1", "{b}");
    let what = b["facts"]["what"].as_str().unwrap_or_default();
    assert!(what.contains("raise the budget to at least 0.04"), "{b}");
    assert_eq!(
        b["facts"]["command"],
        format!("coordinator mission edit {refused} --budget 0.04"),
        "{b}"
    );
    assert_eq!(b["prefilled"], "0.04", "{b}");
    assert_eq!(
        b["buttons"],
        json!(["Raise budget", "Skip task", "Fail task"]),
        "{b}"
    );
    // Raised: the refused task ran (seen in progress, then done), the item
    // left the panel, and the mission completed within the new limit.
    let seen_b = b["seen"]["columns"]["b"].as_array().unwrap();
    assert_eq!(seen_b.first(), Some(&json!("needs_human")), "{b}");
    assert!(seen_b.contains(&json!("in_progress")), "{b}");
    assert_eq!(seen_b.last(), Some(&json!("done")), "{b}");
    let columns = &b["seen"]["columns"];
    assert_eq!(
        columns["c"].as_array().unwrap().last(),
        Some(&json!("done"))
    );
    assert_eq!(
        b["seen"]["statuses"],
        json!(["executing", "completed"]),
        "{b}"
    );
    assert_eq!(b["countAfter"], "0", "{b}");
    assert!(
        b["budgetLine"]
            .as_str()
            .unwrap_or_default()
            .ends_with("limit $0.06"),
        "{b}"
    );
    assert_eq!(b["detailAfter"], "completed: 3 tasks done", "{b}");
    assert_eq!(b["error"], false, "{b}");
    let (_, m) = app.get(&format!("/v1/missions/{refused}")).await;
    assert_eq!(m["status"], "completed", "{m}");
    assert_eq!(m["budget"]["limit"], 0.06, "{m}");

    // The failed mission says why under its heading (the service's own
    // sentence, naming the task and its last error), once.
    let f = &s["failed"];
    assert_eq!(f["detail"], before["status_detail"], "{f}");
    assert_eq!(
        f["detail"],
        "failed: task 'a' failed after 3 attempts (last error: the source is down); \
         2 tasks were cancelled with it",
        "{f}"
    );
    assert_eq!(f["detailShown"], true, "{f}");
    assert_eq!(f["failureShown"], false, "{f}");
    assert_eq!(f["progress"], "0 of 3 done · 1 failed · 2 cancelled", "{f}");
    assert_eq!(f["runActionsShown"], false, "{f}");
    assert_eq!(
        f["approvalsEmpty"],
        "Nothing in this mission waits for a person. It failed: continue it above, or leave it.",
        "{f}"
    );
    // It offers Retry (chosen) or Skip for the one failed task.
    assert_eq!(
        f["choices"],
        json!([{"task": "a", "options": ["retry*", "skip"],
                "error": "3 attempts, last error: the source is down"}]),
        "{f}"
    );
    // Continued: executing again (a retried, b and c back from cancelled),
    // then completed.
    assert_eq!(
        f["seen"]["statuses"],
        json!(["failed", "executing", "completed"]),
        "{f}"
    );
    let columns = &f["seen"]["columns"];
    assert_eq!(
        columns["a"].as_array().unwrap().first(),
        Some(&json!("failed"))
    );
    assert!(
        columns["a"]
            .as_array()
            .unwrap()
            .contains(&json!("in_progress")),
        "{f}"
    );
    for key in ["a", "b", "c"] {
        assert_eq!(
            columns[key].as_array().unwrap().last(),
            Some(&json!("done")),
            "{key}: {f}"
        );
    }
    assert_eq!(f["detailAfter"], "completed: 3 tasks done", "{f}");
    assert_eq!(f["progressAfter"], "3 of 3 done", "{f}");
    assert_eq!(f["feedbackCleared"], true, "{f}");
    assert_eq!(f["error"], false, "{f}");
    let (_, m) = app.get(&format!("/v1/missions/{failed}")).await;
    assert_eq!(m["status"], "completed", "{m}");
    for shot in [
        "budget-before",
        "budget-after",
        "failed-before",
        "failed-after",
    ] {
        let png = std::fs::read(dir.join(format!("{shot}.png"))).expect("screenshot");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{shot}");
    }
    app.stop().await;
}
