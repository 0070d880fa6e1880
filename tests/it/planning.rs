//! Planning end to end: the LLM planner behind an OpenAI-compatible HTTP
//! mock, plan rejection, instructions, reassignment, plan history, routines.

use std::time::Duration;

use axum::http::StatusCode;
use coordinator::planning::llm::{LlmConfig, LlmPlanner, ResponseFormat};
use serde_json::{Value, json};
use wiremock::{
    Mock, MockServer, ResponseTemplate,
    matchers::{body_string_contains, method, path},
};

use crate::helpers::*;

/// A goal no built-in method matches.
const ODD_GOAL: &str = "Zorble the frobnitz quux";

fn completion(content: &Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-test", "object": "chat.completion", "model": "mock-model",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content.to_string()}}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 80, "total_tokens": 200}
    }))
}

fn llm_plan(cyclic: bool) -> Value {
    let mut plan = chain_plan();
    if cyclic {
        plan["tasks"][0]["depends_on"] = json!(["c"]);
    }
    plan
}

async fn app_with_llm(server: &MockServer, tweak: impl FnOnce(&mut LlmConfig)) -> TestApp {
    let mut cfg = LlmConfig::new(format!("{}/v1", server.uri()), "mock-model");
    cfg.response_format = ResponseFormat::JsonObject;
    cfg.retry_base = Duration::from_millis(20);
    tweak(&mut cfg);
    let mut settings = test_settings();
    settings.planning.llm = Some(std::sync::Arc::new(LlmPlanner::new(cfg).unwrap()));
    settings.planning.max_planning_attempts = 1;
    spawn_app_on(&fresh_database().await, settings).await
}

async fn events_of(app: &TestApp, id: &str, kind: &str) -> Vec<Value> {
    let (_, page) = app.get(&format!("/v1/missions/{id}/events")).await;
    page["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == kind)
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_llm_plans_a_goal_no_method_matches() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(completion(&llm_plan(false)))
        .mount(&server)
        .await;
    let app = app_with_llm(&server, |_| {}).await;
    let worker = spawn_worker(5).await;
    app.register_fleet(&worker.url(), 2).await;
    let m = app
        .create_mission(json!({"goal": ODD_GOAL, "autonomy": "autonomous"}))
        .await;
    assert_eq!(m["status"], "planning");
    let id = m["id"].as_str().unwrap();
    let done = app.wait_for_status(id, &["completed", "failed"]).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["planner"], "llm");
    assert_eq!(done["tasks"].as_array().unwrap().len(), 3);
    let calls = events_of(&app, id, "plan.llm_call").await;
    assert_eq!(calls.len(), 1);
    let usage = &calls[0]["payload"]["usage"];
    assert_eq!(usage["model"], "mock-model");
    assert_eq!(usage["prompt_tokens"], 120);
    assert_eq!(usage["repairs"], 0);
    assert!(usage["latency_ms"].is_u64());
    assert_eq!(events_of(&app, id, "plan.requested").await.len(), 1);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cyclic_llm_plan_is_repaired() {
    let server = MockServer::start().await;
    // The repair request carries the validator's problem; answer it properly.
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_string_contains("- [cycle]"))
        .respond_with(completion(&llm_plan(false)))
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(completion(&llm_plan(true)))
        .with_priority(2)
        .mount(&server)
        .await;
    let app = app_with_llm(&server, |_| {}).await;
    let worker = spawn_worker(5).await;
    app.register_fleet(&worker.url(), 2).await;
    let m = app.create_mission(json!({"goal": ODD_GOAL})).await;
    let id = m["id"].as_str().unwrap();
    let ready = app
        .wait_for_status(id, &["awaiting_approval", "failed"])
        .await;
    assert_eq!(ready["status"], "awaiting_approval", "{ready}");
    let calls = events_of(&app, id, "plan.llm_call").await;
    assert_eq!(calls[0]["payload"]["usage"]["repairs"], 1);
    assert_eq!(calls[0]["payload"]["usage"]["calls"], 2);
    app.stop().await;
}

/// The chat-completions calls the mock received (the planner also GETs the
/// server's context size).
async fn posts(server: &MockServer) -> usize {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.method == wiremock::http::Method::POST)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_never_validates_falls_back_to_the_generic_method_and_says_why() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(completion(&llm_plan(true)))
        .mount(&server)
        .await;
    let app = app_with_llm(&server, |c| c.max_repairs = 1).await;
    let worker = spawn_worker(5).await;
    app.register_fleet(&worker.url(), 2).await;
    let m = app
        .create_mission(json!({"goal": ODD_GOAL, "autonomy": "autonomous"}))
        .await;
    let id = m["id"].as_str().unwrap();
    // Not failed: the generic method's plan runs, and its event says why.
    let done = app.wait_for_status(id, &["completed", "failed"]).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["planner"], "generic");
    assert!(events_of(&app, id, "plan.failed").await.is_empty());
    let created = events_of(&app, id, "plan.created").await;
    let fallback = &created[0]["payload"]["details"]["fallback"];
    assert_eq!(fallback["from"], "llm", "{created:?}");
    assert_eq!(fallback["code"], "llm_invalid_plan");
    assert!(
        fallback["reason"].as_str().unwrap().contains("cycle"),
        "{fallback}"
    );
    let reason = created[0]["payload"]["provenance"]["reason"]
        .as_str()
        .unwrap();
    assert!(reason.contains("fell back to the generic"), "{reason}");
    let calls = events_of(&app, id, "plan.llm_call").await;
    assert_eq!(calls[0]["payload"]["code"], "llm_invalid_plan");
    assert_eq!(posts(&server).await, 2);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_llm_that_times_out_is_retried_then_fails_the_mission() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(completion(&llm_plan(false)).set_delay(Duration::from_secs(3)))
        .mount(&server)
        .await;
    let app = app_with_llm(&server, |c| {
        c.timeout = Duration::from_millis(200);
        c.max_retries = 1;
    })
    .await;
    let worker = spawn_worker(5).await;
    app.register_fleet(&worker.url(), 2).await;
    let m = app.create_mission(json!({"goal": ODD_GOAL})).await;
    let id = m["id"].as_str().unwrap();
    let failed = app.wait_for_status(id, &["failed"]).await;
    assert!(
        failed["failure_reason"]
            .as_str()
            .unwrap()
            .contains("timed out"),
        "{failed}"
    );
    assert_eq!(
        events_of(&app, id, "plan.failed").await[0]["payload"]["code"],
        "llm_timeout"
    );
    // One call plus one retry.
    assert_eq!(posts(&server).await, 2);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejecting_a_plan_replans_with_the_next_best_method() {
    let app = spawn_app().await;
    let worker = spawn_worker(5).await;
    app.register_fleet(&worker.url(), 2).await;
    let m = app
        .create_mission(
            json!({"goal": "Research the state of solid-state batteries and write a report"}),
        )
        .await;
    let id = m["id"].as_str().unwrap();
    assert_eq!(m["plan_version"], 1);
    let (_, first) = app.get(&format!("/v1/missions/{id}/plan")).await;
    let first_method = first["provenance"]["template"].clone();

    let (status, body) = app
        .post(
            &format!("/v1/missions/{id}/reject-plan"),
            json!({"feedback": "too shallow; try another approach"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "awaiting_approval");
    assert_eq!(body["plan_version"], 2);
    let (_, second) = app.get(&format!("/v1/missions/{id}/plan")).await;
    assert_ne!(second["provenance"]["template"], first_method);
    // The first plan is still there.
    let (status, v1) = app.get(&format!("/v1/missions/{id}/plan?version=1")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v1["provenance"]["template"], first_method);
    let (status, _) = app.get(&format!("/v1/missions/{id}/plan?version=9")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    // Only the new plan's tasks exist, and the mission runs on approval.
    let keys: Vec<Value> = body["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["key"].clone())
        .collect();
    let planned: Vec<Value> = second["spec"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].clone())
        .collect();
    assert_eq!(keys, planned);
    assert_eq!(events_of(&app, id, "plan.replaced").await.len(), 1);
    let (status, _) = app
        .post(&format!("/v1/missions/{id}/approve"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    app.wait_for_status(id, &["awaiting_review"]).await;
    // Rejecting is only for plans awaiting approval.
    let (status, err) = app
        .post(
            &format!("/v1/missions/{id}/reject-plan"),
            json!({"feedback": "late"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{err}");
    let (status, _) = app
        .post(
            &format!("/v1/missions/{id}/reject-plan"),
            json!({"feedback": ""}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instructions_replan_the_work_not_started_and_keep_what_is_done() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 2).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    let http = reqwest::Client::new();
    // Task a is running; b and c have not started.
    let a = worker.dispatch(1).await;
    // Without an LLM, a running mission needs an explicit plan.
    let (status, err) = app
        .post(
            &format!("/v1/missions/{id}/instructions"),
            json!({"instructions": "add a fact check"}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(err["error"]["code"], "replan_needs_llm");

    let task = |id: &str, deps: &[&str]| {
        json!({"id": id, "title": id, "task_type": "research",
        "required_skills": ["research"], "depends_on": deps,
        "success_criteria": [{"description": "ok", "must_pass": true}]})
    };
    let new_plan = json!({"tasks": [task("fact_check", &["a"]), task("summary", &["fact_check"]), task("appendix", &["a"])]});
    let (status, body) = app
        .post(
            &format!("/v1/missions/{id}/instructions"),
            json!({"instructions": "add a fact check", "plan": new_plan}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["plan_version"], 2);
    let keys: Vec<&str> = body["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["a", "fact_check", "summary", "appendix"]);
    // The running task was left alone and still reports normally.
    assert_eq!(body["tasks"][0]["status"], "running");
    let (s, _) = report(
        &http,
        &a,
        &a.callback.token,
        json!({"status": "succeeded", "output": "A"}),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    // The next dispatches are the new tasks that depend on the kept one.
    let next = worker.dispatch(2).await;
    assert!(
        ["fact_check", "appendix"].contains(&next.task.key.as_str()),
        "{}",
        next.task.key
    );
    assert_eq!(next.upstream[0].key, "a");
    assert_eq!(next.upstream[0].output, Some(json!("A")));

    // A plan that breaks the kept structure is refused and changes nothing.
    let bad = json!({"tasks": [task("x", &["nope"])]});
    let (status, _) = app
        .post(
            &format!("/v1/missions/{id}/instructions"),
            json!({"instructions": "bad", "plan": bad}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    let (_, after) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(after["plan_version"], 2);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_can_reassign_tasks_to_other_agents() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 2).await;
    let (status, _) = app
        .post("/v1/agents", json!({"agent_id": "zz-backup", "role": "researcher", "skills": ["research", "writing", "review"],
                                   "endpoint_url": worker.url, "max_concurrency": 1, "trust": 0.1}))
        .await;
    assert_eq!(status, StatusCode::CREATED);
    let m = app
        .create_mission(json!({"goal": "chain", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();

    let (status, err) = app
        .post(
            &format!("/v1/missions/{id}/approve"),
            json!({"assignments": {"a": "writer"}}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{err}");
    assert_eq!(err["error"]["code"], "invalid_assignments");
    let (status, _) = app
        .post(
            &format!("/v1/missions/{id}/approve"),
            json!({"assignments": {"zz": "researcher"}}),
        )
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);

    // The scorer would pick "researcher" (specialist, more trusted); the pin wins.
    let (status, body) = app
        .post(
            &format!("/v1/missions/{id}/approve"),
            json!({"assignments": {"a": "zz-backup"}}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let d = worker.dispatch(1).await;
    assert_eq!(d.task.key, "a");
    assert_eq!(d.agent_id, "zz-backup");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_completed_mission_saved_as_a_routine_plans_the_next_similar_goal() {
    let app = spawn_app().await;
    let worker = spawn_worker(5).await;
    app.register_fleet(&worker.url(), 2).await;
    let goal = "Quarterly supplier audit for ACME";
    let m = app
        .create_mission(json!({"goal": goal, "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    // Only completed missions can be saved.
    let waiting = app
        .create_mission(json!({"goal": "not yet", "plan": chain_plan()}))
        .await;
    let (status, err) = app
        .post(
            &format!(
                "/v1/missions/{}/save-as-routine",
                waiting["id"].as_str().unwrap()
            ),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{err}");
    app.wait_for_status(id, &["completed"]).await;
    let (status, body) = app
        .post(
            &format!("/v1/missions/{id}/save-as-routine"),
            json!({"name": "supplier-audit"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    assert_eq!(body["routine"]["name"], "supplier-audit");
    let (status, err) = app
        .post(
            &format!("/v1/missions/{id}/save-as-routine"),
            json!({"name": "supplier-audit"}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{err}");

    let next = app
        .create_mission(json!({"goal": "Quarterly supplier audit for Globex"}))
        .await;
    assert_eq!(next["planner"], "template");
    let (_, plan) = app
        .get(&format!(
            "/v1/missions/{}/plan",
            next["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(plan["provenance"]["template"], "supplier-audit");
    let keys: Vec<&str> = next["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["key"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["a", "b", "c"]);
    assert!(
        next["tasks"][0]["title"]
            .as_str()
            .unwrap()
            .contains("Step a")
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ladder_replans_around_a_task_that_failed_everywhere() {
    let server = MockServer::start().await;
    let task = |id: &str, deps: &[&str]| {
        json!({"id": id, "title": id, "task_type": "research",
        "required_skills": ["research"], "depends_on": deps,
        "success_criteria": [{"description": "ok", "must_pass": true}]})
    };
    let new_plan = json!({"tasks": [task("alt_source", &[]), task("b2", &["alt_source"]), task("c2", &["b2"])]});
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_string_contains("failed after every attempt"))
        .respond_with(completion(&new_plan))
        .expect(1..)
        .mount(&server)
        .await;
    let app = app_with_llm(&server, |_| {}).await;
    let worker = ManualWorker::spawn().await;
    // One capable agent: no other agent or tier to try, so the ladder replans.
    app.register_fleet(&worker.url, 1).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    let http = reqwest::Client::new();
    for n in 1..=3 {
        let d = worker.dispatch(n).await;
        assert_eq!(d.task.key, "a");
        let (s, _) = report(
            &http,
            &d,
            &d.callback.token,
            json!({"status": "failed", "error": "source is down"}),
        )
        .await;
        assert_eq!(s, StatusCode::OK);
    }
    let next = worker.dispatch(4).await;
    assert_eq!(next.task.key, "alt_source");
    let (_, mission) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(mission["status"], "executing");
    assert_eq!(mission["plan_version"], 2);
    let keys: Vec<(&str, &str)> = mission["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["key"].as_str().unwrap(), t["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        keys,
        [
            ("a", "skipped"),
            ("alt_source", "running"),
            ("b2", "pending"),
            ("c2", "pending")
        ]
    );
    let escalated = events_of(&app, id, "task.escalated").await;
    assert_eq!(escalated.len(), 1);
    assert_eq!(escalated[0]["payload"]["rung"], "replan");
    let replaced = events_of(&app, id, "plan.replaced").await;
    assert!(
        replaced[0]["payload"]["escalation"]
            .as_str()
            .unwrap()
            .contains("source is down")
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_verifier_that_finds_the_design_wrong_replans_instead_of_retrying() {
    let server = MockServer::start().await;
    let task = |id: &str, deps: &[&str]| {
        json!({"id": id, "title": id, "task_type": "research",
        "required_skills": ["research"], "depends_on": deps,
        "success_criteria": [{"description": "ok", "must_pass": true}]})
    };
    let new_plan =
        json!({"tasks": [task("survey", &[]), task("b2", &["survey"]), task("c2", &["b2"])]});
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(body_string_contains("found the design of task 'a'"))
        .respond_with(completion(&new_plan))
        .expect(1..)
        .mount(&server)
        .await;
    let app = app_with_llm(&server, |_| {}).await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 1).await;
    let (s, b) = app
        .post(
            "/v1/agents",
            json!({"agent_id": "judge", "role": "verifier", "skills": ["verification"],
                   "endpoint_url": worker.url, "max_concurrency": 1}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    let http = reqwest::Client::new();
    let work = worker.dispatch(1).await;
    assert_eq!(work.task.key, "a");
    succeed(&http, &work, json!({"text": "a table of numbers"}), 0.0).await;
    let check = worker.dispatch(2).await;
    assert_eq!(check.agent_id, "judge");
    succeed(
        &http,
        &check,
        json!({"passed": false, "design_flawed": true,
               "reasons": ["the task asks for survey data nobody collected"]}),
        0.0,
    )
    .await;
    // Not a retry of 'a': the mission reconsidered and replanned around it.
    let next = worker.dispatch(3).await;
    assert_eq!(next.task.key, "survey");
    let (_, mission) = app.get(&format!("/v1/missions/{id}")).await;
    assert_eq!(mission["plan_version"], 2);
    let a = mission["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["key"] == "a")
        .unwrap()
        .clone();
    assert_eq!(a["status"], "skipped");
    assert_eq!(a["attempts"], 2, "the work and its verification; no retry");
    let reconsidered = events_of(&app, id, "mission.reconsidered").await;
    assert_eq!(reconsidered.len(), 1);
    assert_eq!(
        reconsidered[0]["payload"]["trigger"],
        "verifier_rejected_design"
    );
    assert_eq!(reconsidered[0]["payload"]["strategy"], "open-minded");
    assert_eq!(reconsidered[0]["payload"]["verdict"], "drop");
    let escalated = events_of(&app, id, "task.escalated").await;
    assert_eq!(escalated[0]["payload"]["rung"], "replan");
    app.stop().await;
}
