//! Papercuts a new user meets in the first hour (issue 23): each test fails
//! on the behaviour that was there before.

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_does_not_fit_names_the_field_and_the_expected_ones() {
    let app = spawn_app().await;
    let worker = spawn_worker(10).await;
    app.register_fleet(&worker.url(), 1).await;

    // A misnamed field at the top.
    let (s, body) = app
        .request(
            Method::PUT,
            "/v1/agents/researcher/beliefs",
            Some(json!({"beliefs": [], "subject": "s", "content": "c", "certainty": 0.5})),
            Some(&app.token),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    let e = &body["error"];
    assert_eq!(e["code"], "invalid_request", "{body}");
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("unknown field `beliefs`")),
        "{body}"
    );
    assert_eq!(e["details"]["field"], "beliefs", "{body}");
    let expected: Vec<&str> = e["details"]["expected"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for f in ["category", "subject", "content", "certainty", "reason"] {
        assert!(expected.contains(&f), "{f} not in {expected:?}");
    }

    // A wrong type deep in a plan names its path.
    let (s, body) = app
        .post(
            "/v1/missions",
            json!({"goal": "g", "plan": {"tasks": [{"id": "a", "title": "A", "task_type": "research",
                                                    "estimated_cost": "cheap"}]}}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(
        body["error"]["details"]["field"], "plan.tasks[0].estimated_cost",
        "{body}"
    );

    // The same through a tool's arguments.
    let (s, body) = app
        .post(
            "/v1/tools/create_mission",
            json!({"goal": "g", "autonomy": 7}),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["error"]["details"].is_object(), "{body}");

    // Nothing was created.
    let (_, list) = app.get("/v1/missions").await;
    assert_eq!(list["missions"].as_array().map(Vec::len), Some(0), "{list}");
    app.stop().await;
}

/// A token of `role`.
async fn token(app: &TestApp, role: &str) -> String {
    let (s, created) = app.post("/v1/tokens", json!({ "role": role })).await;
    assert_eq!(s, StatusCode::CREATED, "{created}");
    created["token"].as_str().expect("token").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thresholds_read_rounded_and_refusals_read_as_sentences() {
    let app = spawn_app().await;
    let owner = token(&app, "stakeholder").await;
    let operator = token(&app, "operator").await;
    let (s, p) = app
        .request(
            Method::PUT,
            "/v1/governance/profile",
            Some(
                json!({"decision_style": "strategic-only", "risk_tolerance": "conservative",
                        "approval_thresholds": {"hiring": {"headcount": 3}}}),
            ),
            Some(&owner),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{p}");
    // 3 × 0.7 is 2.0999999999999996 in floating point.
    let (s, c) = app
        .request(
            Method::POST,
            "/v1/governance/check",
            Some(json!({"action_type": "hiring", "estimated_impact": {"headcount": 3}})),
            Some(&operator),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{c}");
    assert_eq!(c["requires_approval"], true, "{c}");
    let reason = c["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("threshold of 2.1 (3 × 0.7)"), "{reason}");
    assert!(!reason.contains("2.0999"), "{reason}");
    // JSON keeps the exact figure.
    assert!(
        c["relevant_threshold"]["value"]
            .as_f64()
            .is_some_and(|v| v < 2.1),
        "{c}"
    );

    // A decision resolved one way cannot be resolved another: said in English.
    let (s, d) = app
        .request(
            Method::POST,
            "/v1/decisions",
            Some(json!({"description": "Hire a contractor"})),
            Some(&operator),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{d}");
    let path = format!("/v1/decisions/{}/resolve", d["id"].as_str().expect("id"));
    let (s, body) = app
        .request(
            Method::POST,
            &path,
            Some(json!({"outcome": "approved"})),
            Some(&owner),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let (s, body) = app
        .request(
            Method::POST,
            &path,
            Some(json!({"outcome": "rejected"})),
            Some(&owner),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    assert_eq!(
        body["error"]["details"]["transition"], "cannot reject a decision that is approved",
        "{body}"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn decision_lists_carry_totals_ages_and_the_recommended_option() {
    let app = spawn_app().await;
    let owner = token(&app, "stakeholder").await;
    let operator = token(&app, "operator").await;
    let options = json!([
        {"label": "Approve full budget", "description": "Fund it all", "risk_level": "medium"},
        {"label": "Approve reduced budget", "description": "60 % with milestones", "risk_level": "low"},
    ]);
    let mut ids = Vec::new();
    for n in 0..3 {
        let (s, d) = app
            .request(
                Method::POST,
                "/v1/decisions",
                Some(json!({"description": format!("Marketing budget {n}"),
                            "impact_analysis": {"financial": "25 % of the quarter"},
                            "options": options, "recommended_option": "Approve reduced budget"})),
                Some(&operator),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{d}");
        ids.push(d["id"].as_str().expect("id").to_owned());
    }
    for (id, outcome) in [(&ids[0], "approved"), (&ids[1], "rejected")] {
        let (s, body) = app
            .request(
                Method::POST,
                &format!("/v1/decisions/{id}/resolve"),
                Some(json!({"outcome": outcome})),
                Some(&owner),
            )
            .await;
        assert_eq!(s, StatusCode::OK, "{body}");
    }
    // One page of the pending ones, with the totals of them all.
    let (s, queue) = app.get("/v1/decisions?status=pending&limit=1").await;
    assert_eq!(s, StatusCode::OK, "{queue}");
    assert_eq!(
        queue["totals"],
        json!({"total": 3, "pending": 1, "approved": 1, "rejected": 1, "modified": 0, "deferred": 0}),
        "{queue}"
    );
    let d = &queue["decisions"][0];
    assert_eq!(
        d["recommended"],
        json!({"label": "Approve reduced budget", "description": "60 % with milestones", "risk_level": "low"}),
        "{d}"
    );
    assert!(
        d["age_secs"].as_i64().is_some_and(|a| (0..60).contains(&a)),
        "{d}"
    );
    assert!(d["age"].as_str().is_some_and(|a| a.ends_with(" s")), "{d}");
    assert_eq!(
        d["impact_analysis"]["financial"], "25 % of the quarter",
        "{d}"
    );
    // The stakeholder's tool carries the same.
    let (s, review) = app
        .request(
            Method::POST,
            "/v1/tools/decision_review",
            Some(json!({})),
            Some(&owner),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{review}");
    assert_eq!(review["result"]["totals"]["pending"], 1, "{review}");
    assert_eq!(
        review["result"]["decisions"][0]["recommended"]["risk_level"], "low",
        "{review}"
    );
    app.stop().await;
}

/// `coordinator migrate` with `DATABASE_URL` set: exit code and stderr.
async fn migrate_with(url: &str, wait_secs: &str) -> (i32, String) {
    let out = tokio::time::timeout(
        std::time::Duration::from_secs(60),
        tokio::process::Command::new(env!("CARGO_BIN_EXE_coordinator"))
            .arg("migrate")
            .env("DATABASE_URL", url)
            .env("COORDINATOR_DB_CONNECT_TIMEOUT_SECS", wait_secs)
            .env_remove("COORDINATOR_CONFIG")
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the command finished in time")
    .expect("the command ran");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_database_is_named_with_its_cause_and_a_hint() {
    // Nothing listens on port 1: refused, retried for the configured second, then said.
    let started = std::time::Instant::now();
    let (code, stderr) = migrate_with("postgres://alice:s3cret@127.0.0.1:1/orders", "1").await;
    assert_ne!(code, 0, "{stderr}");
    for want in [
        "127.0.0.1:1",
        "database orders, user alice",
        "connection refused",
        "COORDINATOR_DB_CONNECT_TIMEOUT_SECS",
        "hint:",
    ] {
        assert!(stderr.contains(want), "{want} missing from: {stderr}");
    }
    assert!(!stderr.contains("s3cret"), "the password leaked: {stderr}");
    assert!(!stderr.contains("pool timed out"), "{stderr}");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "it gave up late"
    );

    // A database that does not exist is said at once, not retried.
    let mut url = reqwest::Url::parse(&fresh_database().await).expect("url");
    url.set_path("/no_such_database_here");
    let (code, stderr) = migrate_with(url.as_str(), "30").await;
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("does not exist"), "{stderr}");
    assert!(stderr.contains("createdb"), "{stderr}");
    assert!(
        !stderr.contains("tried "),
        "a refusal is not retried: {stderr}"
    );
}

/// A plan of three required tasks (0.01 each) and one optional one (0.05).
fn plan_with_an_optional_task() -> Value {
    let task = |id: &str, deps: &[&str], cost: f64, optional: bool| {
        json!({"id": id, "title": format!("Step {id}"), "task_type": "research",
               "required_skills": ["research"], "depends_on": deps, "optional": optional,
               "success_criteria": [{"description": "done", "must_pass": true}],
               "estimated_cost": cost})
    };
    json!({"tasks": [
        task("a", &[], 0.01, false),
        task("extra", &["a"], 0.05, true),
        task("b", &["extra"], 0.01, false),
        task("c", &["b"], 0.01, false),
    ]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_too_small_says_what_it_needs_or_offers_a_trimmed_plan() {
    let app = spawn_app().await;
    let worker = spawn_worker(10).await;
    app.register_fleet(&worker.url(), 1).await;

    // Every task required: the refusal says the smallest budget that runs it.
    let (s, body) = app
        .post(
            "/v1/missions",
            json!({"goal": "g", "autonomy": "autonomous", "plan": chain_plan(), "budget": 0.02}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let budget = &body["error"]["details"]["budget"];
    let near = |v: &Value, want: f64| v.as_f64().is_some_and(|v| (v - want).abs() < 1e-9);
    assert!(near(&budget["minimum_budget"], 0.03), "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("needs a budget of at least 0.03")),
        "{body}"
    );

    // Autonomous with an optional task: refused, naming it and the minimum.
    let (s, body) = app
        .post(
            "/v1/missions",
            json!({"goal": "g", "autonomy": "autonomous", "plan": plan_with_an_optional_task(),
                   "budget": 0.04}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(
        body["error"]["details"]["budget"]["optional_tasks"],
        json!(["extra"]),
        "{body}"
    );
    assert!(
        near(&body["error"]["details"]["budget"]["minimum_budget"], 0.03),
        "{body}"
    );
    let (_, list) = app.get("/v1/missions").await;
    assert_eq!(list["missions"].as_array().map(Vec::len), Some(0), "{list}");

    // Approve mode: the plan without its optional task waits for approval.
    let m = app
        .create_mission(json!({"goal": "g", "autonomy": "approve",
                               "plan": plan_with_an_optional_task(), "budget": 0.04}))
        .await;
    let id = m["id"].as_str().expect("id");
    let m = app.wait_for_status(id, &["awaiting_approval"]).await;
    let keys: Vec<&str> = m["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .filter_map(|t| t["key"].as_str())
        .collect();
    assert_eq!(keys.len(), 3, "{keys:?}");
    assert!(!keys.contains(&"extra"), "{keys:?}");
    let (_, page) = app.get(&format!("/v1/missions/{id}/events")).await;
    let created = page["events"]
        .as_array()
        .expect("events")
        .iter()
        .find(|e| e["kind"] == "plan.created")
        .cloned()
        .expect("plan.created");
    let reason = created["payload"]["provenance"]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(reason.contains("dropped optional task extra"), "{created}");
    app.stop().await;
}
