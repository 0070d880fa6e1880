//! Failure handling: the escalation ladder, human resolution, verification,
//! budgets, progress checks, offline agents and review rejection.

use std::time::Duration;

use axum::http::StatusCode;
use coordinator::assignment::ScoreWeights;
use serde_json::{Value, json};

use crate::helpers::*;

async fn register(app: &TestApp, body: Value) {
    let (s, b) = app.post("/v1/agents", body).await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
}

fn agent(id: &str, skills: &[&str], tier: i32, url: &str) -> Value {
    json!({"agent_id": id, "role": "worker", "skills": skills, "model_tier": tier,
           "endpoint_url": url, "max_concurrency": 1})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ladder_tries_another_agent_then_a_higher_tier_then_a_person() {
    let mut settings = test_settings();
    // Past success would also steer retries; off, so the order is exact.
    settings.engine.weights = ScoreWeights::parse("past=0").unwrap();
    let app = spawn_app_on(&fresh_database().await, settings).await;
    let worker = ManualWorker::spawn().await;
    for (id, tier) in [("a1", 1), ("a2", 1), ("a3", 2)] {
        register(&app, agent(id, &["research"], tier, &worker.url)).await;
    }
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    let http = reqwest::Client::new();
    let mut agents = Vec::new();
    for n in 1..=9 {
        let d = worker.dispatch(n).await;
        assert_eq!(d.task.key, "a");
        agents.push(d.agent_id.clone());
        fail(&http, &d, &format!("failure {n}")).await;
    }
    // Three tries on the first agent, three on another, three on a higher tier.
    assert_eq!(
        agents,
        ["a1", "a1", "a1", "a2", "a2", "a2", "a3", "a3", "a3"]
    );
    let a = wait_task(&app, id, "a", "awaiting_human").await;
    let rungs: Vec<Value> = events(&app, id, "task.escalated")
        .await
        .iter()
        .map(|p| p["rung"].clone())
        .collect();
    assert_eq!(rungs, [json!("other_agent"), json!("higher_tier")]);
    let human = events(&app, id, "task.awaiting_human").await;
    assert_eq!(human.len(), 1);
    assert_eq!(human[0]["error"], "failure 9");
    let (column,): (String,) =
        sqlx::query_as("SELECT column_name FROM board_tasks WHERE source_id = $1::uuid")
            .bind(a["id"].as_str().unwrap())
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(column, "needs_human");
    // The mission waits for the person; nothing else is dispatched.
    let (_, mission) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(mission["status"], "executing");
    assert_eq!(worker.count(), 9);

    // Bad resolutions change nothing.
    let path = format!("/v1/missions/{id}/tasks/a/resolve");
    let (s, body) = app.post(&path, json!({"action": "teleport"})).await;
    assert!(s.is_client_error(), "{s} {body}");
    let (s, body) = app
        .post(&path, json!({"action": "retry", "output": {"x": 1}}))
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    let (s, body) = app
        .post(
            &format!("/v1/missions/{id}/tasks/b/resolve"),
            json!({"action": "complete"}),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT, "{body}");
    let (s, _) = app
        .post(
            &format!("/v1/missions/{id}/tasks/zzz/resolve"),
            json!({"action": "skip"}),
        )
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);

    // A person completes it by hand; the rest of the mission runs on.
    let (s, body) = app
        .post(
            &path,
            json!({"action": "complete", "output": {"text": "done by hand"}}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let b = worker.dispatch(10).await;
    assert_eq!(b.task.key, "b");
    assert_eq!(b.upstream[0].output, Some(json!({"text": "done by hand"})));
    succeed(&http, &b, json!("b"), 0.0).await;
    let c = worker.dispatch(11).await;
    succeed(&http, &c, json!("c"), 0.0).await;
    let done = app.wait_for_status(id, &["completed"]).await;
    assert_eq!(done["tasks"][0]["output"]["text"], "done by hand");
    // The score's parts are stored with the choice.
    let (details,): (Value,) = sqlx::query_as(
        "SELECT assignment_details FROM orchestration_tasks WHERE run_id = $1::uuid AND task_key = 'b'",
    )
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    for part in ["total", "fit", "trust", "capacity", "cost", "past"] {
        assert!(details[part].is_number(), "{part} missing in {details}");
    }
    app.stop().await;
}

/// Fails the task being dispatched `times` times, starting at dispatch `next`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_can_retry_skip_or_fail_an_escalated_task() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    // One capable agent: the ladder goes straight to a person.
    app.register_fleet(&worker.url, 1).await;
    let http = reqwest::Client::new();
    let mut next = 1;

    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    fail_times(&worker, &http, &mut next, 3, "a").await;
    wait_task(&app, id, "a", "awaiting_human").await;
    assert!(events(&app, id, "task.escalated").await.is_empty());
    // Retry: a fresh round of attempts, with the person's guidance.
    let (s, body) = app
        .post(
            &format!("/v1/missions/{id}/tasks/a/resolve"),
            json!({"action": "retry", "feedback": "use the 2024 figures"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let d = worker.dispatch(next).await;
    next += 1;
    assert_eq!(d.task.key, "a");
    assert_eq!(d.attempt_number, 4);
    assert_eq!(d.feedback.as_deref(), Some("use the 2024 figures"));
    succeed(&http, &d, json!("a"), 0.0).await;
    // Skip: dependents proceed without it.
    fail_times(&worker, &http, &mut next, 3, "b").await;
    wait_task(&app, id, "b", "awaiting_human").await;
    let (s, body) = app
        .post(
            &format!("/v1/missions/{id}/tasks/b/resolve"),
            json!({"action": "skip", "feedback": "not needed"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let c = worker.dispatch(next).await;
    next += 1;
    assert_eq!(c.task.key, "c");
    succeed(&http, &c, json!("c"), 0.0).await;
    let done = app.wait_for_status(id, &["completed"]).await;
    assert_eq!(done["tasks"][1]["status"], "skipped");

    // Fail: the mission fails and what is left is cancelled.
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    fail_times(&worker, &http, &mut next, 3, "a").await;
    wait_task(&app, id, "a", "awaiting_human").await;
    let (s, body) = app
        .post(
            &format!("/v1/missions/{id}/tasks/a/resolve"),
            json!({"action": "fail", "feedback": "source unavailable"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let done = app.wait_for_status(id, &["failed"]).await;
    let statuses: Vec<&str> = done["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["failed", "cancelled", "cancelled"]);
    assert_eq!(done["tasks"][0]["last_error"], "source unavailable");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_must_pass_check_retries_with_the_reasons() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let mut plan = chain_plan();
    plan["tasks"][0]["success_criteria"] = json!([
        {"description": "cites sources", "must_pass": true, "check": {"kind": "contains", "text": "sources"}},
        {"description": "short", "must_pass": false, "check": {"kind": "max_length", "chars": 5}}
    ]);
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": plan}))
        .await;
    let id = m["id"].as_str().unwrap();
    let http = reqwest::Client::new();
    let first = worker.dispatch(1).await;
    succeed(&http, &first, json!({"text": "an answer"}), 0.1).await;
    let second = worker.dispatch(2).await;
    assert_eq!(second.task.key, "a");
    let feedback = second.feedback.clone().unwrap_or_default();
    assert!(feedback.contains("cites sources"), "{feedback}");
    assert!(
        !feedback.contains("short"),
        "advisory criteria are not enforced: {feedback}"
    );
    let verdicts = events(&app, id, "task.verification_failed").await;
    assert_eq!(verdicts.len(), 1);
    assert_eq!(
        verdicts[0]["verdict"]["failed"].as_array().unwrap().len(),
        1
    );
    let (status, kind): (String, Option<String>) =
        sqlx::query_as("SELECT status, failure_kind FROM task_attempts WHERE id = $1")
            .bind(first.attempt_id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        (status.as_str(), kind.as_deref()),
        ("failed", Some("quality"))
    );
    succeed(&http, &second, json!({"text": "three sources"}), 0.1).await;
    let a = wait_task(&app, id, "a", "succeeded").await;
    assert_eq!(a["output"]["text"], "three sources");
    // Both attempts' costs count.
    let (_, mission) = app.get(&format!("/v1/missions/{id}")).await;
    assert!((mission["budget"]["spent"].as_f64().unwrap() - 0.2).abs() < 1e-9);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verifier_agent_judges_criteria_without_a_check() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    register(&app, agent("researcher", &["research"], 1, &worker.url)).await;
    register(&app, agent("judge", &["verification"], 1, &worker.url)).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    let http = reqwest::Client::new();
    let work = worker.dispatch(1).await;
    assert_eq!(work.agent_id, "researcher");
    succeed(&http, &work, json!({"text": "draft"}), 0.0).await;
    let check = worker.dispatch(2).await;
    assert_eq!(check.agent_id, "judge");
    assert_eq!(check.task.task_type, "verification");
    assert_eq!(check.task.inputs["candidate_output"]["text"], "draft");
    assert!(
        check.task.description.contains("done"),
        "{}",
        check.task.description
    );
    succeed(
        &http,
        &check,
        json!({"passed": false, "reasons": ["the summary is missing"]}),
        0.0,
    )
    .await;
    let again = worker.dispatch(3).await;
    assert_eq!(again.agent_id, "researcher");
    assert!(
        again
            .feedback
            .as_deref()
            .unwrap_or("")
            .contains("the summary is missing"),
        "{:?}",
        again.feedback
    );
    succeed(&http, &again, json!({"text": "draft with summary"}), 0.0).await;
    let check = worker.dispatch(4).await;
    assert_eq!(check.agent_id, "judge");
    succeed(&http, &check, json!("PASS"), 0.0).await;
    let a = wait_task(&app, id, "a", "succeeded").await;
    assert_eq!(a["output"]["text"], "draft with summary");
    let (_, body) = app
        .post(&format!("/v1/missions/{id}/cancel"), json!({}))
        .await;
    assert_eq!(body["status"], "cancelled");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn budget_admission_and_the_80_percent_warning() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let mut plan = chain_plan();
    // a → b, a → c (optional).
    plan["tasks"][2]["depends_on"] = json!(["a"]);
    plan["tasks"][2]["optional"] = json!(true);
    let m = app
        .create_mission(
            json!({"goal": "chain", "autonomy": "autonomous", "plan": plan, "budget": 0.03}),
        )
        .await;
    let id = m["id"].as_str().unwrap();
    let http = reqwest::Client::new();
    let a = worker.dispatch(1).await;
    // Far over the estimate: 0.025 of 0.03 spent.
    succeed(&http, &a, json!("a"), 0.025).await;
    let b = wait_task(&app, id, "b", "awaiting_human").await;
    assert!(b["last_error"].as_str().unwrap().contains("budget"), "{b}");
    assert_eq!(task(&app, id, "c").await["status"], "skipped");
    let warning = events(&app, id, "mission.budget_warning").await;
    assert_eq!(warning.len(), 1, "the warning fires once");
    assert_eq!(warning[0]["optional_tasks_dropped"], 1);
    assert_eq!(events(&app, id, "task.budget_refused").await.len(), 1);
    assert_eq!(worker.count(), 1, "nothing over budget was dispatched");
    // A person settles it.
    let (s, body) = app
        .post(
            &format!("/v1/missions/{id}/tasks/b/resolve"),
            json!({"action": "skip"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    app.wait_for_status(id, &["completed"]).await;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_attempt_gets_a_progress_check_then_fails_as_infrastructure() {
    let mut settings = test_settings();
    settings.engine.lease = Duration::from_secs(2);
    let app = spawn_app_on(&fresh_database().await, settings).await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    let first = worker.dispatch(1).await;
    worker
        .wait_for_progress_check(&first.attempt_id.to_string())
        .await;
    // Still the same attempt when it is asked: the check comes first.
    let (status,): (String,) = sqlx::query_as("SELECT status FROM task_attempts WHERE id = $1")
        .bind(first.attempt_id)
        .fetch_one(&app.pool)
        .await
        .unwrap();
    assert!(status == "dispatching" || status == "running", "{status}");
    let second = worker.dispatch(2).await;
    assert_eq!(second.task.key, "a");
    let (status, kind): (String, Option<String>) =
        sqlx::query_as("SELECT status, failure_kind FROM task_attempts WHERE id = $1")
            .bind(first.attempt_id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(
        (status.as_str(), kind.as_deref()),
        ("expired", Some("infrastructure"))
    );
    let checks = events(&app, id, "attempt.progress_check").await;
    assert!(!checks.is_empty());
    assert_eq!(checks[0]["key"], "a");
    // One check per silence, not one per tick.
    assert_eq!(worker.progress_checks(), checks.len());
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_that_stops_heartbeating_goes_offline_and_its_task_moves_on() {
    let app = spawn_app().await;
    let silent = ManualWorker::spawn().await;
    let backup = ManualWorker::spawn().await;
    let mut flaky = agent("a-flaky", &["research"], 1, &silent.url);
    flaky["heartbeat_timeout_secs"] = json!(1);
    register(&app, flaky).await;
    // Busy at first, so the flaky agent gets the task.
    let mut spare = agent("b-spare", &["research"], 1, &backup.url);
    spare["trust"] = json!(0.0);
    register(&app, spare).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    let first = silent.dispatch(1).await;
    assert_eq!(first.agent_id, "a-flaky");
    // No agent heartbeat: within its timeout plus a sweep it is offline and
    // the task runs elsewhere.
    let moved = backup.dispatch(1).await;
    assert_eq!(moved.task.key, "a");
    let (_, flaky) = app.get("/v1/agents/a-flaky").await;
    assert_eq!(flaky["status"], "offline");
    assert_eq!(flaky["running_count"], 0);
    let (error,): (Option<String>,) =
        sqlx::query_as("SELECT error FROM task_attempts WHERE id = $1")
            .bind(first.attempt_id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert!(error.unwrap_or_default().contains("offline"));
    // A heartbeat brings it back.
    let (s, _) = app
        .request(
            reqwest::Method::POST,
            "/v1/agents/a-flaky/heartbeat",
            None,
            Some(&app.token),
        )
        .await;
    assert_eq!(s, StatusCode::NO_CONTENT);
    let (_, flaky) = app.get("/v1/agents/a-flaky").await;
    assert_ne!(flaky["status"], "offline");
    let (s, _) = app
        .request(
            reqwest::Method::POST,
            "/v1/agents/nobody/heartbeat",
            None,
            Some(&app.token),
        )
        .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let _ = id;
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejecting_results_in_review_reopens_the_named_tasks_and_those_after_them() {
    let app = spawn_app().await;
    let worker = spawn_worker(5).await;
    app.register_fleet(&worker.url(), 2).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "approve", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    let (s, _) = app
        .post(&format!("/v1/missions/{id}/approve"), json!({}))
        .await;
    assert_eq!(s, StatusCode::OK);
    app.wait_for_status(id, &["awaiting_review"]).await;
    let review = format!("/v1/missions/{id}/review");
    // Refused: no feedback, no tasks, unknown task.
    let (s, _) = app
        .post(&review, json!({"decision": "reject", "tasks": ["b"]}))
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, _) = app
        .post(&review, json!({"decision": "reject", "feedback": "redo"}))
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, _) = app
        .post(
            &review,
            json!({"decision": "reject", "feedback": "redo", "tasks": ["zzz"]}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);
    let (_, still) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(still["status"], "awaiting_review");

    let (s, body) = app
        .post(
            &review,
            json!({"decision": "reject", "feedback": "b misses the 2024 data", "tasks": ["b"]}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let reopened: Vec<Value> = events(&app, id, "task.reopened")
        .await
        .iter()
        .map(|p| p["key"].clone())
        .collect();
    assert_eq!(reopened, [json!("b"), json!("c")]);
    app.wait_for_status(id, &["awaiting_review"]).await;
    let (_, done) = app.get(&format!("/v1/missions/{id}")).await;
    let attempts: Vec<i64> = done["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["attempts"].as_i64().unwrap())
        .collect();
    assert_eq!(attempts, [1, 2, 2], "a kept its result; b and c ran again");
    let (feedback,): (Option<String>,) = sqlx::query_as(
        "SELECT feedback FROM orchestration_tasks WHERE run_id = $1::uuid AND task_key = 'b'",
    )
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert!(feedback.unwrap_or_default().contains("2024"));
    let (s, body) = app.post(&review, json!({"decision": "accept"})).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "completed");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contractors_are_hired_for_work_nobody_can_do_and_retired_with_the_mission() {
    let worker = ManualWorker::spawn().await;
    let mut settings = test_settings();
    settings.engine.contractor_url = Some(worker.url.clone());
    let app = spawn_app_on(&fresh_database().await, settings).await;
    app.register_fleet(&worker.url, 1).await;
    let mut plan = chain_plan();
    // Nobody on the roster translates.
    plan["tasks"][1]["required_skills"] = json!(["translation"]);
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": plan}))
        .await;
    let id = m["id"].as_str().unwrap();
    let http = reqwest::Client::new();
    let a = worker.dispatch(1).await;
    assert_eq!(a.agent_id, "researcher", "the roster comes first");
    succeed(&http, &a, json!("a"), 0.0).await;
    let b = worker.dispatch(2).await;
    assert!(b.agent_id.starts_with("contractor-"), "{}", b.agent_id);
    let hired = events(&app, id, "agent.contractor_hired").await;
    assert_eq!(hired.len(), 1);
    assert_eq!(hired[0]["skills"], json!(["translation"]));
    let (_, contractor) = app.get(&format!("/v1/agents/{}", b.agent_id)).await;
    assert_eq!(contractor["kind"], "contractor");
    succeed(&http, &b, json!("b"), 0.0).await;
    let c = worker.dispatch(3).await;
    assert_eq!(c.agent_id, "researcher");
    succeed(&http, &c, json!("c"), 0.0).await;
    app.wait_for_status(id, &["completed"]).await;
    let (_, contractor) = app.get(&format!("/v1/agents/{}", b.agent_id)).await;
    assert_eq!(contractor["status"], "offline", "retired with its mission");
    let retired = events(&app, id, "agent.contractors_retired").await;
    assert_eq!(retired[0]["agents"], json!([b.agent_id]));
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continuation_goes_back_to_the_same_agent_without_counting_a_failure() {
    let mut settings = test_settings();
    settings.engine.continuation_delay = Duration::from_millis(50);
    let app = spawn_app_on(&fresh_database().await, settings).await;
    let worker = ManualWorker::spawn().await;
    let mut strong = agent("a-strong", &["research"], 1, &worker.url);
    strong["trust"] = json!(0.9);
    let mut weak = agent("b-weak", &["research"], 1, &worker.url);
    weak["trust"] = json!(0.1);
    register(&app, strong).await;
    register(&app, weak).await;
    // Two roots run at once, one on each agent.
    let mut plan = chain_plan();
    plan["tasks"][1]["depends_on"] = json!([]);
    plan["tasks"][2]["depends_on"] = json!(["a", "b"]);
    let m = app
        .create_mission(json!({"goal": "two roots", "autonomy": "autonomous", "plan": plan}))
        .await;
    let id = m["id"].as_str().unwrap();
    let http = reqwest::Client::new();
    let first = worker.dispatch(1).await;
    let second = worker.dispatch(2).await;
    let (on_strong, on_weak) = if first.agent_id == "a-strong" {
        (first, second)
    } else {
        (second, first)
    };
    assert_eq!(on_weak.agent_id, "b-weak");
    succeed(&http, &on_strong, json!("done"), 0.0).await;
    // The strong agent is free and would win a fresh choice; the
    // continuation still goes back to the agent that asked for it.
    let (s, _) = report(
        &http,
        &on_weak,
        &on_weak.callback.token,
        json!({"status": "continue", "output": {"progress": "half"}}),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let next = worker.dispatch(3).await;
    assert_eq!(next.task.key, on_weak.task.key);
    assert_eq!(next.agent_id, "b-weak");
    let t = task(&app, id, &on_weak.task.key).await;
    assert_eq!(t["attempts"], 2);
    let (failures,): (i32,) =
        sqlx::query_as("SELECT failure_count FROM orchestration_tasks WHERE id = $1::uuid")
            .bind(t["id"].as_str().unwrap())
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(failures, 0);
    assert_eq!(events(&app, id, "task.continued").await.len(), 1);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_task_stops_its_worker_and_everything_after_it() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 2).await;
    // a → b, and c on its own.
    let mut plan = chain_plan();
    plan["tasks"][2]["depends_on"] = json!([]);
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": plan}))
        .await;
    let id = m["id"].as_str().unwrap();
    let http = reqwest::Client::new();
    let first = worker.dispatch(1).await;
    let second = worker.dispatch(2).await;
    let (a, c) = if first.task.key == "a" {
        (first, second)
    } else {
        (second, first)
    };
    let (s, body) = app
        .post(
            &format!("/v1/missions/{id}/tasks/a/cancel"),
            json!({"reason": "wrong source"}),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    worker.wait_for_cancel(&a.attempt_id.to_string()).await;
    let statuses: Vec<(&str, &str)> = body["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["key"].as_str().unwrap(), t["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        statuses,
        [("a", "cancelled"), ("b", "cancelled"), ("c", "running")]
    );
    // The cancelled attempt's report is stale; a second cancel is refused.
    let (s, _) = report(
        &http,
        &a,
        &a.callback.token,
        json!({"status": "succeeded", "output": "late"}),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT);
    let (s, _) = app
        .post(&format!("/v1/missions/{id}/tasks/a/cancel"), json!({}))
        .await;
    assert_eq!(s, StatusCode::CONFLICT);
    let (_, researcher) = app.get("/v1/agents/researcher").await;
    assert_eq!(researcher["running_count"], 1, "a's slot was released");
    succeed(&http, &c, json!("c"), 0.0).await;
    let done = app.wait_for_status(id, &["completed"]).await;
    assert_eq!(done["tasks"][2]["status"], "succeeded");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_relayed_retry_after_delays_the_retry_and_still_counts_the_failure() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    let http = reqwest::Client::new();
    let d = worker.dispatch(1).await;
    let before = time::OffsetDateTime::now_utc();
    let (s, body) = report(
        &http,
        &d,
        &d.callback.token,
        json!({"status": "failed", "error": "provider said 429", "failure_kind": "infrastructure",
               "retry_after_secs": 30}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    let (next, failures): (time::OffsetDateTime, i32) = sqlx::query_as(
        "SELECT next_attempt_at, failure_count FROM orchestration_tasks
         WHERE run_id = $1::uuid AND task_key = 'a'",
    )
    .bind(id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    // The test backoff is at most 200 ms; the provider asked for 30 s.
    assert!(
        next - before >= time::Duration::seconds(29),
        "{}",
        next - before
    );
    assert_eq!(failures, 1, "a rate-limited attempt is still a failure");
    assert_eq!(worker.count(), 1);
    app.stop().await;
}
