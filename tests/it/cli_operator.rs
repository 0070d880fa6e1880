//! The operator's commands against the real service: pause and resume,
//! settle a task that waits for a person (retry, complete, cancel), see
//! what waits in `mission show` and `inbox`, reject a plan, raise decisions.

use serde_json::json;

use crate::{
    cli::cli,
    helpers::{ManualWorker, chain_plan, fail_times, spawn_app, succeed, wait_task},
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_settles_a_mission_from_the_cli() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let http = reqwest::Client::new();
    let (url, token) = (app.url.as_str(), app.token.as_str());
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().expect("id").to_owned();
    let mut next = 1;

    // Pause and resume.
    let paused = cli(url, token, &["mission", "pause", &id]).await.ok();
    assert_eq!(
        paused.stdout,
        format!("mission {id} paused; status paused\n")
    );
    let resumed = cli(url, token, &["mission", "resume", &id]).await.ok();
    assert_eq!(
        resumed.stdout,
        format!("mission {id} resumed; status executing\n")
    );

    // Task a fails every attempt and waits for a person: `show` says why.
    fail_times(&worker, &http, &mut next, 3, "a").await;
    wait_task(&app, &id, "a", "awaiting_human").await;
    let shown = cli(url, token, &["mission", "show", &id]).await.ok().stdout;
    assert!(shown.contains("LAST ERROR"), "{shown}");
    let row = shown
        .lines()
        .find(|l| l.starts_with("a "))
        .unwrap_or_else(|| panic!("no row for a: {shown}"));
    assert!(row.contains("awaiting_human"), "{row}");
    assert!(row.contains(" 3 "), "attempts: {row}");
    assert!(shown.contains("0 of 3 done (0%)"), "{shown}");
    assert!(shown.contains("1 waiting for a person"), "{shown}");
    assert!(shown.contains("Needs you:"), "{shown}");
    assert!(shown.contains("coordinator task"), "{shown}");

    inbox_lists_task_a(url, token, &id).await;

    // Retry it with guidance: the next dispatch carries it.
    let retried = cli(
        url,
        token,
        &[
            "task",
            "retry",
            &id,
            "a",
            "--feedback",
            "use the other source",
        ],
    )
    .await
    .ok();
    assert!(
        retried.stdout.starts_with("task a sent to run again;"),
        "{retried:#?}"
    );
    let d = worker.dispatch(next).await;
    next += 1;
    assert_eq!(d.task.key, "a");
    assert_eq!(d.feedback.as_deref(), Some("use the other source"));

    // It fails again; a person completes it with a result.
    crate::helpers::fail(&http, &d, "no").await;
    fail_times(&worker, &http, &mut next, 2, "a").await;
    wait_task(&app, &id, "a", "awaiting_human").await;
    let done = cli(
        url,
        token,
        &[
            "task",
            "resolve",
            &id,
            "a",
            "--action",
            "complete",
            "--output",
            r#"{"summary": "by hand"}"#,
        ],
    )
    .await
    .ok();
    assert!(done.stdout.starts_with("task a completed;"), "{done:#?}");
    let t = wait_task(&app, &id, "a", "succeeded").await;
    assert_eq!(t["output"]["summary"], "by hand", "{t}");

    // b runs; c is cancelled by hand and the mission finishes without it.
    let d = worker.dispatch(next).await;
    assert_eq!(d.task.key, "b");
    let cancelled = cli(
        url,
        token,
        &[
            "task",
            "cancel",
            &id,
            "c",
            "--reason",
            "not needed",
            "--json",
        ],
    )
    .await
    .ok()
    .json();
    assert_eq!(cancelled["id"], id.as_str());
    succeed(&http, &d, json!("b done"), 0.0).await;
    let finished = app.wait_for_status(&id, &["completed"]).await;
    assert_eq!(finished["progress"]["percent"], 66, "{finished}");
    let shown = cli(url, token, &["mission", "show", &id]).await.ok().stdout;
    assert!(shown.contains("2 of 3 done (66%) · 1 cancelled"), "{shown}");
    assert!(!shown.contains("100%"), "{shown}");

    // Unknown commands and bad input are usage errors, not calls.
    let bad = cli(
        url,
        token,
        &["task", "resolve", &id, "a", "--action", "finish"],
    )
    .await;
    assert_eq!(bad.code, 2, "{bad:#?}");
    let bad = cli(
        url,
        token,
        &["task", "complete", &id, "a", "--output", "{oops"],
    )
    .await;
    assert_eq!(bad.code, 2, "{bad:#?}");
    app.stop().await;
}

/// `inbox` lists task a of mission `id` with a command this CLI takes.
async fn inbox_lists_task_a(url: &str, token: &str, id: &str) {
    // The workspace inbox lists it with the command to run.
    let inbox = cli(url, token, &["inbox", "--json"]).await.ok().json();
    let items = inbox["items"].as_array().expect("items");
    let item = items
        .iter()
        .find(|i| i["kind"] == "human_task" && i["task_key"] == "a")
        .unwrap_or_else(|| panic!("no human task in {inbox}"));
    assert_eq!(item["mission_id"], id);
    // Every command the service suggests is one this CLI takes (first choice of each `a|b`).
    for item in items {
        let command = item["command"].as_str().expect("command");
        let args: Vec<String> = command
            .split_whitespace()
            .map(|w| w.split('|').next().unwrap_or(w).to_owned())
            .collect();
        if let Err(e) = <coordinator::cli::Cli as clap::Parser>::try_parse_from(&args) {
            panic!("{command}: {e}");
        }
    }
    let table = cli(url, token, &["inbox"]).await.ok().stdout;
    assert!(table.contains("human_task"), "{table}");
    assert!(table.contains("$ coordinator "), "{table}");
}

#[tokio::test]
async fn plans_decisions_and_plumbing_from_the_cli() {
    let app = spawn_app().await;
    // Nothing is dispatched while the plan awaits approval.
    app.register_fleet("http://127.0.0.1:9", 1).await;
    let (url, token) = (app.url.as_str(), app.token.as_str());
    let m = app
        .create_mission(json!({"goal": "chain", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().expect("id").to_owned();
    assert_eq!(m["status"], "awaiting_approval");

    // Reject the plan with a replacement: it awaits approval again.
    let plan = std::env::temp_dir().join(format!("plan-{id}.json"));
    std::fs::write(&plan, chain_plan().to_string()).expect("write plan");
    let rejected = cli(
        url,
        token,
        &[
            "mission",
            "reject-plan",
            &id,
            "--feedback",
            "fewer steps",
            "--plan",
            plan.to_str().expect("path"),
        ],
    )
    .await
    .ok();
    assert_eq!(
        rejected.stdout,
        format!("mission {id} plan rejected; status awaiting_approval\n")
    );
    std::fs::remove_file(&plan).expect("remove plan");
    let (_, after) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(after["plan_version"], 2, "{after}");

    // A decision asked for through the CLI is listed there.
    let asked = cli(
        url,
        token,
        &[
            "decision",
            "request",
            "--data",
            r#"{"description": "Hire a translator", "mission_id": null}"#,
            "--json",
        ],
    )
    .await;
    // An operator-side request needs an agent to ask for; the refusal is the service's own words.
    if asked.code == 0 {
        let listed = cli(url, token, &["decision", "list"]).await.ok();
        assert!(
            listed.stdout.contains("pending") || listed.stdout.contains("approved"),
            "{listed:#?}"
        );
    } else {
        assert_eq!(asked.code, 1, "{asked:#?}");
        assert!(asked.stderr.contains("error: "), "{asked:#?}");
    }

    // Workspace plumbing goes through the same calls.
    let ran = cli(url, token, &["bdi", "maintenance"]).await.ok();
    assert!(ran.stdout.starts_with("BDI maintenance ran"), "{ran:#?}");
    let none = cli(url, token, &["tool-approval", "list"]).await.ok();
    assert!(none.stderr.contains("none"), "{none:#?}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_mission_is_continued_from_the_cli() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let http = reqwest::Client::new();
    let (url, token) = (app.url.as_str(), app.token.as_str());
    let m = app
        .create_mission(
            json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan(),
                               "constraints": {"human_escalation": false}}),
        )
        .await;
    let id = m["id"].as_str().expect("id").to_owned();
    let mut next = 1;
    fail_times(&worker, &http, &mut next, 3, "a").await;
    app.wait_for_status(&id, &["failed"]).await;

    // `watch` on a failed mission: exit 3, the reason, and how to go on.
    let watched = cli(url, token, &["mission", "watch", &id]).await;
    assert_eq!(watched.code, 3, "{watched:#?}");
    assert!(
        watched
            .stderr
            .contains(&format!("coordinator mission continue {id} --retry")),
        "{watched:#?}"
    );
    let shown = cli(url, token, &["mission", "show", &id]).await.ok().stdout;
    assert!(shown.contains("0 of 3 done (0%) · 1 failed"), "{shown}");
    assert!(!shown.contains("100%"), "{shown}");

    // Continue it: the failed task runs again and the mission finishes.
    let continued = cli(
        url,
        token,
        &[
            "mission",
            "continue",
            &id,
            "--retry",
            "a",
            "--feedback",
            "try again",
        ],
    )
    .await
    .ok();
    assert_eq!(
        continued.stdout,
        format!("mission {id} continued; status executing\n")
    );
    for key in ["a", "b", "c"] {
        let d = worker.dispatch(next).await;
        next += 1;
        assert_eq!(d.task.key, key);
        succeed(&http, &d, json!(format!("{key} done")), 0.0).await;
    }
    app.wait_for_status(&id, &["completed"]).await;
    // Neither flag is a usage error.
    let bad = cli(url, token, &["mission", "continue", &id]).await;
    assert_eq!(bad.code, 2, "{bad:#?}");
    app.stop().await;
}
