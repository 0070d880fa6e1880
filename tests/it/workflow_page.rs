//! The workflow instance page (`/workflow?instance=…`): a BPMN diagram drawn
//! by the vendored bpmn-js viewer with the instance's completed, active and
//! waiting elements marked, driven in a real headless Chromium
//! (`tests/js/workflow-page.mjs`). Its screenshot is `docs/images/workflow-instance.png`.

use std::{collections::BTreeSet, time::Duration};

use serde_json::{Value, json};

use crate::{helpers::*, peers};

const PROCESS: &str = "bpmn-miwg-test-case-c.1.0";

fn ids(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_owned))
        .collect()
}

/// The instance once `ready` holds of it.
async fn instance_when(app: &TestApp, id: &str, ready: impl Fn(&Value) -> bool) -> Value {
    wait_until("the instance", || async {
        let (_, inst) = app.get(&format!("/v1/workflow-instances/{id}")).await;
        ready(&inst).then_some(inst)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_serves_the_viewer_under_the_boards_csp() {
    let app = spawn_app().await;
    let resp = app
        .http
        .get(format!("{}/workflow?instance=x", app.url))
        .send()
        .await
        .expect("page");
    assert_eq!(resp.status().as_u16(), 200);
    let csp = resp.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        csp.contains("script-src 'self'") && csp.contains("style-src 'self'"),
        "{csp}"
    );
    assert_eq!(resp.headers()["referrer-policy"], "no-referrer");
    let body = resp.text().await.expect("body");
    assert!(body.contains("/assets/bpmn-navigated-viewer.js"), "{body}");
    for (path, needle) in [
        ("/assets/bpmn-navigated-viewer.js", "bpmn.io/license"),
        ("/assets/diagram-js.css", ".djs-container"),
        ("/assets/bpmn-js.css", ".bjs-container"),
        ("/assets/workflow.js", "addMarker"),
        ("/assets/workflow.css", ".wf-active"),
    ] {
        let resp = app
            .http
            .get(format!("{}{path}", app.url))
            .send()
            .await
            .expect("asset");
        assert_eq!(resp.status().as_u16(), 200, "{path}");
        assert!(resp.text().await.unwrap().contains(needle), "{path}");
    }
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_workflow_instance_is_drawn_marked_and_followed_in_headless_chromium() {
    let (Some(js), Some(chromium)) = (peers::js_dir(), peers::chromium()) else {
        return;
    };
    let app = spawn_app().await;
    let xml =
        std::fs::read(peers::root().join("crates/bpmn/tests/miwg/C.1.0.bpmn")).expect("C.1.0");
    let w = import_workflow(&app, xml).await;
    let workflow = w["id"].as_str().expect("workflow id").to_owned();
    // The process's first start event (a message start: "Invoice received").
    let process = w["model"]["processes"]
        .as_array()
        .expect("processes")
        .iter()
        .find(|p| p["id"] == PROCESS)
        .expect("the engine process");
    let start_event = process["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .find(|n| n["kind"]["type"] == "start_event")
        .and_then(|n| n["id"].as_str())
        .expect("a start event")
        .to_owned();
    let (status, inst) = app
        .post(
            &format!("/v1/workflows/{workflow}/instances"),
            json!({"process_id": PROCESS, "start_event": start_event,
                   "variables": {"approved": true}}),
        )
        .await;
    assert_eq!(status.as_u16(), 201, "{inst}");
    let id = inst["id"].as_str().expect("instance id").to_owned();
    // It stops at the first person's task.
    let before = instance_when(&app, &id, |i| {
        i["human_tasks"].as_array().is_some_and(|t| !t.is_empty())
    })
    .await;
    let task = &before["human_tasks"][0];
    let first_node = task["node_id"].as_str().expect("node").to_owned();
    let task_token = task["token"].as_i64().expect("token");
    assert!(ids(&before["completed"]).contains(&start_event), "{before}");
    assert_eq!(ids(&before["active"]), BTreeSet::from([first_node.clone()]));

    let shot = peers::artifacts().join("workflow-instance.png");
    let _ = std::fs::remove_file(&shot);
    let s = peers::run_browser(
        &js,
        "workflow-page.mjs",
        &[
            &app.url,
            &app.token,
            &id,
            &task_token.to_string(),
            &shot,
            &chromium,
        ],
        Duration::from_secs(120),
    )
    .await;

    // The token left the address bar; the diagram was drawn.
    assert!(
        !s["urlAfterToken"].as_str().unwrap().contains("token"),
        "{s}"
    );
    assert!(s["shapes"].as_u64().unwrap_or(0) > 20, "{s}");
    // Before: the markers are the instance's, on the right elements.
    assert_eq!(s["statusBefore"], "running", "{s}");
    assert_eq!(
        ids(&s["before"]["completed"]),
        ids(&before["completed"]),
        "{s}"
    );
    assert_eq!(ids(&s["before"]["active"]), ids(&before["active"]), "{s}");
    assert_eq!(
        ids(&s["before"]["waiting"]),
        BTreeSet::from([first_node.clone()]),
        "{s}"
    );
    assert_eq!(s["before"]["incident"], json!([]), "{s}");
    assert_eq!(s["peopleBefore"], json!([first_node]), "{s}");
    // The bpmn.io watermark is there and visible (the licence's condition).
    assert_eq!(s["watermark"]["count"], 1, "{s}");
    assert_eq!(s["watermark"]["visible"], true, "{s}");
    assert_eq!(s["watermark"]["onTop"], true, "{s}");
    assert!(
        s["watermark"]["href"]
            .as_str()
            .unwrap_or_default()
            .contains("bpmn.io"),
        "{s}"
    );

    // After the person answered, the same document moved its markers.
    assert_eq!(s["completeStatus"], 200, "{s}");
    assert_eq!(s["sameDocument"], true, "{s}");
    assert!(s["updatedWithinMs"].as_u64().unwrap() < 6_000, "{s}");
    // It heard of the move on the event stream (the page does not poll).
    assert_eq!(s["liveBefore"], true, "{s}");
    assert!(
        s["lastEvent"]
            .as_str()
            .unwrap_or_default()
            .starts_with("workflow.advanced"),
        "{s}"
    );
    let after = instance_when(&app, &id, |i| {
        i["human_tasks"].as_array().is_some_and(|t| !t.is_empty())
    })
    .await;
    let second_node = after["human_tasks"][0]["node_id"]
        .as_str()
        .expect("node")
        .to_owned();
    assert_ne!(second_node, first_node, "{after}");
    assert!(ids(&after["completed"]).contains(&first_node), "{after}");
    assert_eq!(
        ids(&s["after"]["completed"]),
        ids(&after["completed"]),
        "{s}"
    );
    assert_eq!(ids(&s["after"]["active"]), ids(&after["active"]), "{s}");
    assert_eq!(
        ids(&s["after"]["waiting"]),
        BTreeSet::from([second_node.clone()]),
        "{s}"
    );
    assert_eq!(s["peopleAfter"], json!([second_node]), "{s}");
    assert_eq!(s["pollState"], "live", "{s}");
    assert_eq!(s["backLink"], "/", "{s}");
    // Nothing from elsewhere (the viewer is served by the service), no errors
    // (a CSP refusal would be one).
    assert_eq!(s["outside"], json!([]), "{s}");
    assert_eq!(s["pageErrors"], json!([]), "{s}");

    let png = std::fs::read(&shot).expect("screenshot saved");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000);
    // The screenshot in docs/board.md.
    // The documented screenshot is refreshed on request only, so a test
    // run leaves the tree as it was.
    if std::env::var("UPDATE_DOCS").as_deref() == Ok("1") {
        let docs = peers::root().join("docs/images");
        std::fs::create_dir_all(&docs).expect("docs/images");
        std::fs::copy(&shot, docs.join("workflow-instance.png")).expect("copy the screenshot");
    }
    app.stop().await;
}
