//! Missions edited (`PATCH /v1/missions/{id}`) and removed (`DELETE`), over
//! REST, the chat tools and the command line.

use std::{process::Stdio, time::Duration};

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};
use tokio::process::Command;
use uuid::Uuid;

use crate::helpers::*;

async fn patch(app: &TestApp, id: &str, body: Value) -> (StatusCode, Value) {
    app.request(
        Method::PATCH,
        &format!("/v1/missions/{id}"),
        Some(body),
        Some(&app.token),
    )
    .await
}

async fn delete(app: &TestApp, path: &str, token: &str) -> (StatusCode, Value) {
    app.request(Method::DELETE, path, None, Some(token)).await
}

async fn token(app: &TestApp, body: Value) -> String {
    let (s, b) = app.post("/v1/tokens", body).await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    b["token"].as_str().expect("token").to_owned()
}

/// `(kind, run_id, payload)` of every event of `kind`, oldest first.
async fn events_of(app: &TestApp, kind: &str) -> Vec<(Option<Uuid>, Value)> {
    sqlx::query_as("SELECT run_id, payload FROM orchestration_events WHERE kind = $1 ORDER BY id")
        .bind(kind)
        .fetch_all(&app.pool)
        .await
        .expect("events")
}

/// Rows of `table` whose `column` is the mission.
async fn rows(app: &TestApp, table: &str, column: &str, id: Uuid) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT count(*) FROM {table} WHERE {column} = $1"
    )))
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .expect("count")
}

/// A mission waiting for approval (live, nothing running).
async fn waiting_mission(app: &TestApp) -> (String, Value) {
    let m = app
        .create_mission(
            json!({"goal": "Write the quarterly report", "plan": chain_plan(), "budget": 5}),
        )
        .await;
    assert_eq!(m["status"], "awaiting_approval", "{m}");
    (m["id"].as_str().expect("id").to_owned(), m)
}

/// The editable fields of a mission, to compare before and after.
fn editable(m: &Value) -> Value {
    json!([
        m["title"],
        m["priority"],
        m["budget"],
        m["deadline"],
        m["labels"],
        m["version"]
    ])
}

#[tokio::test]
async fn each_edit_applies_with_one_event_and_a_version_guard() {
    let app = spawn_app().await;
    let worker = spawn_worker(10).await;
    app.register_fleet(&worker.url(), 2).await;
    let (id, created) = waiting_mission(&app).await;
    let v0 = created["version"]
        .as_i64()
        .expect("a mission shows its version");
    assert!(
        created["title"].is_null() && created["labels"] == json!([]),
        "{created}"
    );

    let (s, m) = patch(
        &app,
        &id,
        json!({"version": v0, "title": "  Q3 report ", "priority": 7, "budget": 8.5,
               "deadline": "2099-01-31T17:00:00Z", "labels": ["Finance", "q3", "finance"]}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{m}");
    assert_eq!(m["title"], "Q3 report");
    assert_eq!(m["priority"], 7);
    assert_eq!(m["budget"]["limit"], 8.5);
    assert_eq!(m["deadline"], "2099-01-31T17:00:00Z");
    assert_eq!(m["labels"], json!(["finance", "q3"]));
    assert_eq!(m["version"], v0 + 1);
    assert_eq!(m["status"], "awaiting_approval");

    let updates = events_of(&app, "mission.updated").await;
    assert_eq!(updates.len(), 1, "{updates:?}");
    let (run, payload) = &updates[0];
    assert_eq!(run.map(|r| r.to_string()), Some(id.clone()));
    assert_eq!(payload["version"], v0 + 1);
    let changes = &payload["changes"];
    assert_eq!(changes["title"], json!({"from": null, "to": "Q3 report"}));
    assert_eq!(changes["priority"], json!({"from": 0, "to": 7}));
    assert_eq!(changes["budget"], json!({"from": 5.0, "to": 8.5}));
    assert_eq!(
        changes["deadline"],
        json!({"from": null, "to": "2099-01-31T17:00:00Z"})
    );
    assert_eq!(
        changes["labels"],
        json!({"from": [], "to": ["finance", "q3"]})
    );
    // The event is in the mission's own log too.
    let (_, page) = app.get(&format!("/v1/missions/{id}/events")).await;
    assert!(
        page["events"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "mission.updated"),
        "{page}"
    );

    // A stale version changes nothing and says which version is current.
    let (s, b) = patch(&app, &id, json!({"version": v0, "title": "Other"})).await;
    assert_eq!(s, StatusCode::CONFLICT, "{b}");
    assert_eq!(b["error"]["code"], "version_conflict");
    assert_eq!(b["error"]["details"]["current"], v0 + 1);
    assert_eq!(b["error"]["details"]["expected"], v0);
    let (_, now) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(now["title"], "Q3 report");

    // Sending back what it has is no change: no event, no new version.
    let (s, same) = patch(&app, &id, json!({"title": "Q3 report", "priority": 7})).await;
    assert_eq!(s, StatusCode::OK, "{same}");
    assert_eq!(same["version"], v0 + 1);
    assert_eq!(events_of(&app, "mission.updated").await.len(), 1);

    // null clears; one event names only what changed.
    let (s, cleared) = patch(
        &app,
        &id,
        json!({"title": null, "deadline": null, "budget": null, "labels": []}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{cleared}");
    assert!(cleared["title"].is_null() && cleared["deadline"].is_null());
    assert!(cleared["budget"]["limit"].is_null());
    assert_eq!(cleared["labels"], json!([]));
    let updates = events_of(&app, "mission.updated").await;
    assert_eq!(updates.len(), 2);
    let names: Vec<&String> = updates[1].1["changes"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(names, ["budget", "deadline", "labels", "title"]);
    app.stop().await;
}

#[tokio::test]
async fn bad_edits_are_4xx_and_change_nothing() {
    let app = spawn_app().await;
    let worker = spawn_worker(10).await;
    app.register_fleet(&worker.url(), 2).await;
    let (id, before) = waiting_mission(&app).await;

    for (body, field) in [
        (json!({"title": "   "}), Some("title")),
        (json!({"title": "x".repeat(201)}), Some("title")),
        (json!({"title": "two\nlines"}), Some("title")),
        (json!({"priority": 101}), Some("priority")),
        (json!({"priority": -101}), Some("priority")),
        (json!({"budget": -1}), Some("budget")),
        (json!({"labels": ["ok", "not a slug"]}), Some("labels[1]")),
        (json!({"labels": ["x".repeat(65)]}), Some("labels[0]")),
        (
            json!({"labels": (0..21).map(|i| format!("l{i}")).collect::<Vec<_>>()}),
            Some("labels"),
        ),
        (
            json!({"deadline": "2001-01-01T00:00:00Z"}),
            Some("deadline"),
        ),
        (json!({"deadline": "next tuesday"}), None),
        (json!({"priority": "high"}), None),
        (json!({"goal": "a new goal"}), None),
        (json!({"title": "ok", "colour": "red"}), None),
    ] {
        let (s, b) = patch(&app, &id, body.clone()).await;
        // A deadline in the past depends on the clock, which no schema states: 422.
        let expected = if field == Some("deadline")
            && body["deadline"]
                .as_str()
                .is_some_and(|d| d.starts_with("2001"))
        {
            StatusCode::UNPROCESSABLE_ENTITY
        } else {
            StatusCode::BAD_REQUEST
        };
        assert_eq!(s, expected, "{body}: {b}");
        assert!(b["error"]["message"].is_string(), "{b}");
        if let Some(field) = field {
            assert_eq!(b["error"]["details"]["field"], field, "{body}: {b}");
        }
    }
    // A patch naming no field is a no-op (RFC 7396): the mission as it is.
    let (_, current) = app.get(&format!("/v1/missions/{id}")).await;
    let (s, b) = patch(&app, &id, json!({})).await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(b["version"], current["version"], "{b}");
    // Not a mission of this workspace, and not a role that edits.
    let (s, b) = patch(&app, &Uuid::now_v7().to_string(), json!({"title": "x"})).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{b}");
    let stakeholder = token(&app, json!({"role": "stakeholder"})).await;
    let (s, b) = app
        .request(
            Method::PATCH,
            &format!("/v1/missions/{id}"),
            Some(json!({"title": "x"})),
            Some(&stakeholder),
        )
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{b}");

    let (_, after) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(editable(&after), editable(&before));
    assert!(events_of(&app, "mission.updated").await.is_empty());
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn priority_reaches_queued_tasks_and_the_budget_stays_above_the_spend() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    // One slot: the researcher takes one task, the others wait in the queue.
    app.register_fleet(&worker.url, 1).await;
    let m = app
        .create_mission(
            json!({"goal": "Survey three markets", "autonomy": "autonomous",
                               "plan": parallel_plan(3), "budget": 10}),
        )
        .await;
    let id = m["id"].as_str().unwrap().to_owned();
    let run: Uuid = id.parse().unwrap();
    let first = worker.dispatch(1).await;
    let queued = |p: i32| {
        let pool = app.pool.clone();
        async move {
            sqlx::query_scalar::<_, i64>(
                "SELECT count(*) FROM task_queue WHERE run_id = $1 AND priority = $2",
            )
            .bind(run)
            .bind(p)
            .fetch_one(&pool)
            .await
            .expect("queue")
        }
    };
    wait_until("two tasks queued", || async {
        (queued(0).await == 2).then_some(())
    })
    .await;

    let (s, b) = patch(&app, &id, json!({"priority": 42})).await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(queued(42).await, 2, "queued rows take the new priority");
    assert_eq!(queued(0).await, 0);

    // Spend 0.5; a limit below it is refused and changes nothing.
    succeed(&app.http, &first, json!({"text": "one"}), 0.5).await;
    wait_until("the spend is recorded", || async {
        let (_, m) = app.get(&format!("/v1/missions/{id}")).await;
        (m["budget"]["spent"].as_f64() >= Some(0.5)).then_some(())
    })
    .await;
    let (s, b) = patch(&app, &id, json!({"budget": 0.25})).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
    assert_eq!(b["error"]["code"], "budget_below_spent");
    assert_eq!(b["error"]["details"]["spent"], 0.5);
    let (_, m) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(m["budget"]["limit"], 10.0);
    let (s, b) = patch(&app, &id, json!({"budget": 0.5})).await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(b["budget"]["limit"], 0.5);
    app.stop().await;
}

#[tokio::test]
async fn a_finished_mission_takes_a_title_and_labels_only_and_a_live_one_is_not_deleted() {
    let app = spawn_app().await;
    let worker = spawn_worker(10).await;
    app.register_fleet(&worker.url(), 2).await;
    let (id, _) = waiting_mission(&app).await;

    let (s, b) = delete(&app, &format!("/v1/missions/{id}"), &app.token).await;
    assert_eq!(s, StatusCode::CONFLICT, "{b}");
    assert_eq!(b["error"]["code"], "invalid_state");
    assert_eq!(b["error"]["details"]["status"], "awaiting_approval");
    let message = b["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("awaiting_approval") && message.contains("cancel it first"),
        "{message}"
    );
    let (s, b) = delete(&app, &format!("/v1/missions/{id}?archive=true"), &app.token).await;
    assert_eq!(s, StatusCode::CONFLICT, "{b}");
    let (s, _) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(s, StatusCode::OK, "the refused delete left it");

    let (s, b) = app
        .post(&format!("/v1/missions/{id}/cancel"), json!({}))
        .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    let (s, b) = patch(&app, &id, json!({"title": "Abandoned", "labels": ["old"]})).await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(b["title"], "Abandoned");
    for body in [
        json!({"priority": 3}),
        json!({"budget": 9}),
        json!({"deadline": "2099-01-01T00:00:00Z"}),
        json!({"title": "Again", "budget": null}),
    ] {
        let (s, b) = patch(&app, &id, body.clone()).await;
        assert_eq!(s, StatusCode::CONFLICT, "{body}: {b}");
        assert_eq!(b["error"]["code"], "invalid_state");
        assert_eq!(b["error"]["details"]["status"], "cancelled");
    }
    let (_, m) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(m["title"], "Abandoned", "a refused edit changes nothing");
    assert_eq!(m["budget"]["limit"], 5.0);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_takes_what_hangs_off_the_mission_and_logs_it_in_the_workspace() {
    let app = spawn_app().await;
    let worker = spawn_worker(10).await;
    app.register_fleet(&worker.url(), 2).await;
    let m = app
        .create_mission(
            json!({"goal": "Chain of three", "autonomy": "autonomous", "plan": chain_plan()}),
        )
        .await;
    let id = m["id"].as_str().unwrap().to_owned();
    let run: Uuid = id.parse().unwrap();
    // A message about the mission: it stays, no longer naming it.
    let researcher = token(&app, json!({"role": "agent", "agent_id": "researcher"})).await;
    let (s, sent) = app
        .request(
            Method::POST,
            "/v1/messages",
            Some(json!({"to": "writer", "subject": "notes", "mission_id": id})),
            Some(&researcher),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{sent}");
    app.wait_for_status(&id, &["completed"]).await;
    for (table, column) in [
        ("orchestration_tasks", "run_id"),
        ("task_attempts", "run_id"),
        ("orchestration_events", "run_id"),
        ("orchestration_plans", "run_id"),
        ("board_tasks", "run_id"),
    ] {
        assert!(rows(&app, table, column, run).await > 0, "{table} has rows");
    }

    let operator = token(&app, json!({"role": "operator"})).await;
    let (s, b) = delete(&app, &format!("/v1/missions/{id}"), &operator).await;
    assert_eq!(s, StatusCode::NO_CONTENT, "{b}");
    let (s, _) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    for (table, column) in [
        ("orchestration_runs", "id"),
        ("orchestration_tasks", "run_id"),
        ("orchestration_task_dependencies", "run_id"),
        ("task_attempts", "run_id"),
        ("orchestration_events", "run_id"),
        ("orchestration_plans", "run_id"),
        ("board_tasks", "run_id"),
        ("task_queue", "run_id"),
        ("agent_messages", "mission_id"),
    ] {
        assert_eq!(rows(&app, table, column, run).await, 0, "{table} is empty");
    }
    let kept: Option<Uuid> =
        sqlx::query_scalar("SELECT mission_id FROM agent_messages WHERE id = $1")
            .bind(sent["id"].as_str().unwrap().parse::<Uuid>().unwrap())
            .fetch_one(&app.pool)
            .await
            .expect("the message stays");
    assert_eq!(kept, None);
    // The plan library keeps its lesson.
    let cases: i64 = sqlx::query_scalar("SELECT count(*) FROM plan_cases WHERE run_id = $1")
        .bind(run)
        .fetch_one(&app.pool)
        .await
        .expect("cases");
    assert_eq!(cases, 1);

    let deleted = events_of(&app, "mission.deleted").await;
    assert_eq!(deleted.len(), 1, "{deleted:?}");
    let (event_run, payload) = &deleted[0];
    assert_eq!(
        *event_run, None,
        "a workspace event, out of the cascade's reach"
    );
    assert_eq!(
        payload,
        &json!({"mission_id": id, "goal": "Chain of three", "title": null, "status": "completed"})
    );
    let (s, b) = delete(&app, &format!("/v1/missions/{id}"), &operator).await;
    assert_eq!(s, StatusCode::NOT_FOUND, "{b}");
    app.stop().await;
}

#[tokio::test]
async fn archiving_hides_a_mission_from_the_list_until_asked_for() {
    let app = spawn_app().await;
    let worker = spawn_worker(10).await;
    app.register_fleet(&worker.url(), 2).await;
    let (kept, _) = waiting_mission(&app).await;
    let (id, _) = waiting_mission(&app).await;
    app.post(&format!("/v1/missions/{id}/cancel"), json!({}))
        .await;

    let (s, m) = delete(&app, &format!("/v1/missions/{id}?archive=true"), &app.token).await;
    assert_eq!(s, StatusCode::OK, "{m}");
    assert!(m["archived_at"].is_string(), "{m}");
    let version = m["version"].clone();
    let ids = |page: &Value| -> Vec<String> {
        page["missions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let (_, page) = app.get("/v1/missions").await;
    assert_eq!(ids(&page), [kept.as_str()]);
    let (_, page) = app.get("/v1/missions?archived=true").await;
    assert_eq!(ids(&page), [id.clone(), kept.clone()]);
    assert!(page["missions"][0]["archived_at"].is_string(), "{page}");
    let (s, shown) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(s, StatusCode::OK, "an archived mission is still there");
    assert_eq!(shown["archived_at"], m["archived_at"]);
    let updates = events_of(&app, "mission.updated").await;
    assert_eq!(updates.len(), 1);
    assert!(updates[0].1["changes"]["archived_at"]["to"].is_string());

    // Archiving it again changes nothing; deleting it still works.
    let (s, again) = delete(&app, &format!("/v1/missions/{id}?archive=true"), &app.token).await;
    assert_eq!(s, StatusCode::OK, "{again}");
    assert_eq!(again["version"], version);
    assert_eq!(events_of(&app, "mission.updated").await.len(), 1);
    let (s, _) = delete(&app, &format!("/v1/missions/{id}"), &app.token).await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    app.stop().await;
}

#[tokio::test]
async fn the_tools_edit_and_delete_for_operators_and_refuse_agents() {
    let app = spawn_app().await;
    let worker = spawn_worker(10).await;
    app.register_fleet(&worker.url(), 2).await;
    let (id, created) = waiting_mission(&app).await;
    let operator = token(&app, json!({"role": "operator"})).await;
    let agent = token(&app, json!({"role": "agent", "agent_id": "writer"})).await;
    let tool = |name: &str, token: &str, args: Value| {
        let path = format!("/v1/tools/{name}");
        let token = token.to_owned();
        let app = &app;
        async move {
            app.request(Method::POST, &path, Some(args), Some(&token))
                .await
        }
    };

    let (s, b) = tool(
        "update_mission",
        &operator,
        json!({"mission_id": id, "version": created["version"], "title": "Q3", "labels": ["a"],
               "priority": 5, "deadline": "2099-06-01T00:00:00Z"}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    let r = &b["result"];
    assert_eq!(r["title"], "Q3");
    assert_eq!(r["labels"], json!(["a"]));
    assert_eq!(r["deadline"], "2099-06-01T00:00:00Z");
    assert_eq!(r["version"], created["version"].as_i64().unwrap() + 1);
    let (s, b) = tool(
        "update_mission",
        &operator,
        json!({"mission_id": id, "clear": ["title", "deadline"]}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert!(b["result"]["title"].is_null() && b["result"]["deadline"].is_null());
    let (s, b) = tool(
        "update_mission",
        &operator,
        json!({"mission_id": id, "clear": ["title"], "title": "both"}),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{b}");
    let (s, b) = tool(
        "update_mission",
        &operator,
        json!({"mission_id": id, "version": 1, "title": "stale"}),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT, "{b}");
    assert_eq!(b["error"]["code"], "version_conflict");

    let (s, b) = tool("delete_mission", &operator, json!({"mission_id": id})).await;
    assert_eq!(s, StatusCode::CONFLICT, "{b}");
    assert_eq!(b["error"]["code"], "invalid_state");

    // An agent neither sees nor calls them.
    let (_, list) = app
        .request(Method::GET, "/v1/tools", None, Some(&agent))
        .await;
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    assert!(!names.contains(&"update_mission") && !names.contains(&"delete_mission"));
    let (s, b) = tool(
        "update_mission",
        &agent,
        json!({"mission_id": id, "title": "x"}),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{b}");
    let (s, b) = tool("delete_mission", &agent, json!({"mission_id": id})).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{b}");

    app.post(&format!("/v1/missions/{id}/cancel"), json!({}))
        .await;
    let (s, b) = tool(
        "delete_mission",
        &operator,
        json!({"mission_id": id, "archive": true}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert!(b["result"]["archived_at"].is_string(), "{b}");
    let (s, b) = tool("delete_mission", &operator, json!({"mission_id": id})).await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(b["result"]["deleted"], true);
    let (s, _) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    app.stop().await;
}

/// Runs `coordinator ARGS --url URL --token TOKEN` with no ambient
/// configuration; (exit code, stdout, stderr).
async fn cli(app: &TestApp, args: &[&str]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_coordinator"));
    for var in [
        "DATABASE_URL",
        "COORDINATOR_URL",
        "COORDINATOR_TOKEN",
        "COORDINATOR_LOG",
        "RUST_LOG",
    ] {
        cmd.env_remove(var);
    }
    cmd.args(args)
        .args(["--url", &app.url, "--token", &app.token])
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(Duration::from_secs(60), cmd.output())
        .await
        .expect("the command finished in time")
        .expect("the command ran");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_edits_archives_and_deletes_a_mission() {
    let app = spawn_app().await;
    let worker = spawn_worker(10).await;
    app.register_fleet(&worker.url(), 2).await;
    let (id, created) = waiting_mission(&app).await;
    let version = created["version"].to_string();

    let (code, out, err) = cli(
        &app,
        &[
            "mission",
            "edit",
            &id,
            "--title",
            "Q3 report",
            "--priority",
            "-5",
            "--budget",
            "7",
            "--deadline",
            "2099-03-01T09:00:00Z",
            "--label",
            "finance,q3",
            "--version",
            &version,
        ],
    )
    .await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("updated"), "{out}");
    let (_, m) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(
        editable(&m),
        json!(["Q3 report", -5, {"limit": 7.0, "spent": 0.0}, "2099-03-01T09:00:00Z",
               ["finance", "q3"], created["version"].as_i64().unwrap() + 1])
    );
    // The list and show name it by its title.
    let (code, out, _) = cli(&app, &["mission", "list"]).await;
    assert_eq!(code, 0);
    assert!(out.contains("Q3 report"), "{out}");
    let (_, out, _) = cli(&app, &["mission", "show", &id]).await;
    assert!(
        out.contains("Q3 report") && out.contains("finance, q3"),
        "{out}"
    );

    // Clearing, and a stale version refused with the service's message.
    let (code, out, err) = cli(
        &app,
        &[
            "mission",
            "edit",
            &id,
            "--no-title",
            "--no-deadline",
            "--json",
        ],
    )
    .await;
    assert_eq!(code, 0, "{out}{err}");
    let edited: Value = serde_json::from_str(&out).expect("json");
    assert!(edited["title"].is_null() && edited["deadline"].is_null());
    let (code, _, err) = cli(
        &app,
        &[
            "mission",
            "edit",
            &id,
            "--title",
            "x",
            "--version",
            &version,
        ],
    )
    .await;
    assert_ne!(code, 0);
    assert!(err.contains("version"), "{err}");
    let (code, _, _) = cli(&app, &["mission", "edit", &id]).await;
    assert_ne!(code, 0, "an edit names a field");

    // Delete refuses a live mission, then archives and deletes it.
    let (code, _, err) = cli(&app, &["mission", "delete", &id]).await;
    assert_ne!(code, 0);
    assert!(err.contains("cancel it first"), "{err}");
    app.post(&format!("/v1/missions/{id}/cancel"), json!({}))
        .await;
    let (code, out, err) = cli(&app, &["mission", "delete", &id, "--archive"]).await;
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("archived"), "{out}");
    let (_, out, _) = cli(&app, &["mission", "list"]).await;
    assert!(!out.contains(&id), "{out}");
    let (_, out, _) = cli(&app, &["mission", "list", "--archived"]).await;
    assert!(out.contains(&id), "{out}");
    let (code, out, err) = cli(&app, &["mission", "delete", &id, "--json"]).await;
    assert_eq!(code, 0, "{out}{err}");
    let gone: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(gone, json!({"mission_id": id, "deleted": true}));
    let (s, _) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    app.stop().await;
}
