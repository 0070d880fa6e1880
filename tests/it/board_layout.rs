//! The board tells the truth at a glance: a crowded mission (a 10,000-
//! character goal, long task keys and titles, a task waiting for a person, a
//! failed task, cancelled and done ones) laid out in a real headless Chromium
//! at 1280, 1400, 1920 and 390 px (`tests/js/board-layout.mjs`): nothing may
//! stick out of its column or pane, failed and cancelled cards are told
//! apart, progress counts outcomes, and the Approvals panel lists the task
//! that waits for a person. Screenshots go to `test-artifacts/board-layout/`.

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::{helpers::*, peers};

/// A research task of the plan.
fn task(key: &str, title: &str, deps: &[&str]) -> Value {
    json!({"id": key, "title": title, "task_type": "research",
           "required_skills": ["research"], "depends_on": deps,
           "success_criteria": [{"description": "done", "must_pass": true}],
           "estimated_cost": 0.01})
}

const LONG_KEY: &str = "audience_research.background_and_competitor_landscape_overview";
const ERROR: &str = "the vendor API answered 503 Service Unavailable for \
    https://vendor.example.invalid/api/v2/campaigns/0f1e2d3c4b5a69788796a5b4c3d2e1f0/assets?include=everything&format=verbose \
    after three tries; the person gave up on the optional extras";

/// Nine tasks: gather and LONG_KEY succeed; `needs_a_person` fails three
/// times and waits for a person (with `final_report` behind it); the
/// optional `optional_extras` is handed to a person who fails it; the
/// running `side_branch` is cancelled and with it three tasks downstream.
fn plan() -> Value {
    let long_title = "Gather sources on the audience, the competitors and the channels, \
                      and summarise what each of them says about launch announcements";
    let mut extras = task("optional_extras", "Collect optional extras", &[]);
    extras["optional"] = json!(true);
    json!({"tasks": [
        task("gather", long_title, &[]),
        task(LONG_KEY, "Background research on the audience", &["gather"]),
        task("needs_a_person", "Check the legal wording of the announcement", &[]),
        task("final_report", "Write the final report", &[LONG_KEY, "needs_a_person"]),
        extras,
        task("side_branch", "Explore a side branch", &[]),
        task("side_branch.followup_one", "First follow-up of the side branch", &["side_branch"]),
        task("side_branch.followup_two", "Second follow-up of the side branch", &["side_branch"]),
        task("postmortem", "Postmortem of the side branch",
             &["side_branch.followup_one", "side_branch.followup_two"]),
    ]})
}

/// A goal of exactly 10,000 characters: words, and one unbroken run.
fn long_goal() -> String {
    let mut goal = String::from("Launch the new CLI: ");
    goal.push_str(&"x".repeat(300));
    while goal.chars().count() < 10_000 {
        goal.push_str(" write a blog post announcing our new command-line interface,");
    }
    goal.chars().take(10_000).collect()
}

/// Drives the mission into the crowded state; returns its id.
async fn crowded_mission(app: &TestApp, worker: &ManualWorker) -> String {
    let m = app
        .create_mission(json!({"goal": long_goal(), "autonomy": "autonomous", "plan": plan()}))
        .await;
    let id = m["id"].as_str().unwrap().to_owned();
    let http = reqwest::Client::new();
    // gather, LONG_KEY, three tries of needs_a_person, optional_extras, side_branch.
    for n in 1..=7 {
        let d = worker.dispatch(n).await;
        match d.task.key.as_str() {
            "gather" | LONG_KEY => succeed(&http, &d, json!({"text": "done"}), 0.01).await,
            "needs_a_person" => fail(&http, &d, "the legal team did not answer in time").await,
            "optional_extras" => {
                // The agent hands it to a person, who gives up on it.
                let (s, t) = app
                    .post(
                        "/v1/tokens",
                        json!({"role": "agent", "agent_id": d.agent_id}),
                    )
                    .await;
                assert_eq!(s, StatusCode::CREATED, "{t}");
                let (s, h) = app
                    .request(
                        reqwest::Method::POST,
                        "/v1/handoffs",
                        Some(json!({"direction": "agent_to_human", "to": "operator",
                                    "task_id": d.task_id.to_string(),
                                    "context_summary": "The vendor API keeps failing."})),
                        Some(t["token"].as_str().unwrap()),
                    )
                    .await;
                assert_eq!(s, StatusCode::CREATED, "{h}");
                let (s, r) = app
                    .post(
                        &format!("/v1/missions/{id}/tasks/optional_extras/resolve"),
                        json!({"action": "fail", "feedback": ERROR}),
                    )
                    .await;
                assert_eq!(s, StatusCode::OK, "{r}");
            }
            "side_branch" => {
                let (s, r) = app
                    .post(
                        &format!("/v1/missions/{id}/tasks/side_branch/cancel"),
                        json!({"reason": "not worth it"}),
                    )
                    .await;
                assert_eq!(s, StatusCode::OK, "{r}");
            }
            other => panic!("unexpected dispatch of {other}"),
        }
    }
    wait_task(app, &id, "needs_a_person", "awaiting_human").await;
    wait_task(app, &id, LONG_KEY, "succeeded").await;
    wait_task(app, &id, "optional_extras", "failed").await;
    let (_, m) = app.get(&format!("/v1/missions/{id}")).await;
    let statuses: Vec<(&str, &str)> = m["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["key"].as_str().unwrap(), t["status"].as_str().unwrap()))
        .collect();
    assert_eq!(m["status"], "executing", "{statuses:?}");
    assert_eq!(
        statuses,
        [
            ("gather", "succeeded"),
            (LONG_KEY, "succeeded"),
            ("needs_a_person", "awaiting_human"),
            ("final_report", "pending"),
            ("optional_extras", "failed"),
            ("side_branch", "cancelled"),
            ("side_branch.followup_one", "cancelled"),
            ("side_branch.followup_two", "cancelled"),
            ("postmortem", "cancelled"),
        ]
    );
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crowded_mission_fits_the_board_at_every_width_in_headless_chromium() {
    let (Some(js), Some(chromium)) = (peers::js_dir(), peers::chromium()) else {
        return;
    };
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 4).await;
    let id = crowded_mission(&app, &worker).await;
    // A second, ordinary mission, so the list has more than one entry.
    app.create_mission(
        json!({"goal": "A short goal", "autonomy": "approve", "plan": chain_plan()}),
    )
    .await;

    let dir = peers::artifacts().join("board-layout");
    std::fs::create_dir_all(&dir).expect("create test-artifacts/board-layout");
    let s = peers::run_browser(
        &js,
        "board-layout.mjs",
        &[&app.url, &app.token, &id, &dir, &chromium],
        Duration::from_secs(180),
    )
    .await;

    // Nothing sticks out, at any width.
    let problems: Vec<String> = s["problems"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(width, list)| {
            list.as_array()
                .unwrap()
                .iter()
                .map(move |p| format!("{width} px: {}", p.as_str().unwrap_or_default()))
        })
        .collect();
    assert!(
        problems.is_empty(),
        "{} layout problems:\n{}",
        problems.len(),
        problems.join("\n")
    );
    for width in ["1280", "1400", "1920", "390"] {
        let png = std::fs::read(dir.join(format!("board-{width}.png"))).expect("screenshot");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{width}");
    }

    let page = &s["pages"]["1400"];
    assert_eq!(page["errors"], json!([]), "{page}");
    // The heading is clamped, and opens on request.
    assert_eq!(page["headingClamped"], true, "{page}");
    assert!(s["expanded"].as_f64().unwrap_or(0.0) > 160.0, "{s}");
    // The graph zooms and pans, still inside its pane.
    assert_ne!(s["zoom"]["before"], s["zoom"]["after"], "{s}");
    assert_eq!(s["zoom"]["problems"], json!([]), "{s}");

    // Failed and cancelled told apart, each card with its attempts and last error.
    let cards = page["cards"].as_array().unwrap();
    let card = |key: &str| {
        cards
            .iter()
            .find(|c| c["key"] == key)
            .unwrap_or_else(|| panic!("no card {key}: {page}"))
    };
    assert_eq!(card("optional_extras")["badge"], "failed", "{page}");
    assert_eq!(card("side_branch")["badge"], "cancelled", "{page}");
    assert_ne!(
        card("optional_extras")["colour"],
        card("side_branch")["colour"],
        "{page}"
    );
    assert_eq!(card("optional_extras")["error"], ERROR, "{page}");
    assert_eq!(card("needs_a_person")["attempts"], "3 attempts", "{page}");
    assert_eq!(card("gather")["attempts"], "1 attempt", "{page}");
    // Honest progress: what succeeded, what failed, what was cancelled.
    assert_eq!(
        page["progress"], "2 of 9 done · 1 failed · 4 cancelled · 1 waiting for a person · 1 to do",
        "{page}"
    );
    assert_eq!(
        page["progressBar"],
        json!(["done", "failed", "cancelled", "waiting", "remaining"]),
        "{page}"
    );
    // The task waiting for a person is in the Approvals panel, with its actions.
    assert_eq!(page["approvalsEmptyShown"], false, "{page}");
    let human = page["approvals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["kind"] == "human_task")
        .unwrap_or_else(|| panic!("no human task in the approvals: {page}"));
    assert_eq!(human["task"], "needs_a_person", "{page}");
    for verb in ["Complete", "Retry", "Skip", "Fail"] {
        assert!(
            human["buttons"]
                .as_array()
                .unwrap()
                .iter()
                .any(|b| b == verb),
            "{verb}: {page}"
        );
    }
    app.stop().await;
}
