//! The agents' planning, desire and BDI tools (seed §20.6–§20.8), called as
//! an agent through `POST /v1/tools/{name}`: each acts on the caller's own
//! state, refuses another agent's id (403), and refuses bad arguments (400)
//! without changing anything.

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

async fn register(app: &TestApp, id: &str, skills: &[&str]) {
    let (s, b) = app
        .post(
            "/v1/agents",
            json!({"agent_id": id, "role": id, "skills": skills, "endpoint_url": "http://127.0.0.1:9"}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
}

async fn agent_token(app: &TestApp, agent: &str) -> String {
    let (s, b) = app
        .post("/v1/tokens", json!({"role": "agent", "agent_id": agent}))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    b["token"].as_str().expect("token").to_owned()
}

async fn tool(app: &TestApp, token: &str, name: &str, args: Value) -> (StatusCode, Value) {
    app.request(
        Method::POST,
        &format!("/v1/tools/{name}"),
        Some(args),
        Some(token),
    )
    .await
}

/// Calls a tool that must succeed; returns its result.
async fn ok(app: &TestApp, token: &str, name: &str, args: Value) -> Value {
    let (s, b) = tool(app, token, name, args).await;
    assert_eq!(s, StatusCode::OK, "{name}: {b}");
    b["result"].clone()
}

async fn count(app: &TestApp, sql: &str) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
        .fetch_one(&app.pool)
        .await
        .expect("count")
}

fn close(v: &Value, want: f64) -> bool {
    v.as_f64().is_some_and(|x| (x - want).abs() < 1e-9)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn beliefs_through_tools_are_corroborated_never_lowered_and_only_the_callers() {
    let app = spawn_app().await;
    register(&app, "cfo", &["research"]).await;
    register(&app, "cto", &["research"]).await;
    let cfo = agent_token(&app, "cfo").await;
    let belief = |content: &str, certainty: f64| {
        json!({"category": "environment", "subject": "market", "content": content,
               "certainty": certainty, "reason": "report"})
    };

    let b = ok(&app, &cfo, "belief_update", belief("Growing 15% YoY", 0.9)).await;
    assert_eq!(b["outcome"], "created");
    // Issue 18 item 3: a weak corroboration does not lower a strong belief.
    let b = ok(&app, &cfo, "belief_update", belief("growing 15% yoy", 0.3)).await;
    assert_eq!(b["outcome"], "corroborated");
    assert!(close(&b["belief"]["certainty"], 0.9), "{b}");
    assert_eq!(b["belief"]["content"], "Growing 15% YoY");
    assert_eq!(b["revision_log"].as_array().unwrap().len(), 2);
    // A stronger one raises it.
    let b = ok(&app, &cfo, "belief_update", belief("growing 15% YoY", 0.95)).await;
    assert!(close(&b["belief"]["certainty"], 0.95), "{b}");

    // Refusals change nothing.
    let revisions = "SELECT count(*) FROM bdi_belief_revisions";
    let before = count(&app, revisions).await;
    let mut other = belief("x", 0.99);
    other["agent_id"] = json!("cto");
    let (s, b) = tool(&app, &cfo, "belief_update", other).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{b}");
    let (s, b) = tool(&app, &cfo, "belief_update", belief("x", 1.4)).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{b}");
    assert_eq!(b["error"]["details"]["field"], "certainty");
    let mut rumour = belief("x", 0.5);
    rumour["category"] = json!("rumour");
    let (s, _) = tool(&app, &cfo, "belief_update", rumour).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let mut extra = belief("x", 0.5);
    extra["colour"] = json!("red");
    let (s, _) = tool(&app, &cfo, "belief_update", extra).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(count(&app, revisions).await, before);

    // belief_get reads the caller's own beliefs.
    let b = ok(&app, &cfo, "belief_get", json!({})).await;
    assert_eq!(b["count"], 1);
    let b = ok(&app, &cfo, "belief_get", json!({"category": "self"})).await;
    assert_eq!(b["count"], 0);
    let (s, _) = tool(&app, &cfo, "belief_get", json!({"agent_id": "cto"})).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    // Agent tools are for agents: the admin token cannot call them.
    let (s, _) = tool(&app, &app.token, "belief_get", json!({})).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn desires_goals_intentions_steps_and_the_cycle_as_an_agent() {
    let app = spawn_app().await;
    register(&app, "cfo", &["research"]).await;
    register(&app, "cto", &["research"]).await;
    let cfo = agent_token(&app, "cfo").await;
    let cto = agent_token(&app, "cto").await;

    // Desires: the formula's priority, a cascade on drop.
    let d = ok(
        &app,
        &cfo,
        "desire_create",
        json!({
        "description": "reach $1M ARR", "type": "terminal", "base_priority": 0.8,
        "importance": 0.6, "urgency": 0.4, "strategic_alignment": 1.0, "dependency_status": 0.5,
        "resources": ["budget"]}),
    )
    .await;
    assert!(close(&d["priority"], 0.665), "{d}");
    let terminal = d["desire_id"].as_str().unwrap().to_owned();
    let d = ok(
        &app,
        &cfo,
        "desire_create",
        json!({
        "description": "launch a campaign", "type": "instrumental", "base_priority": 0.9,
        "importance": 0.9, "urgency": 0.9, "strategic_alignment": 0.9, "serves": [terminal],
        "resources": ["budget"]}),
    )
    .await;
    assert_eq!(d["conflicts"][0]["kind"], "resource", "{d}");
    let instrumental = d["desire_id"].as_str().unwrap().to_owned();
    let desires = "SELECT count(*) FROM bdi_desires";
    let before = count(&app, desires).await;
    let (s, _) = tool(
        &app,
        &cfo,
        "desire_create",
        json!({
        "description": "x", "type": "rumour", "base_priority": 0.5, "importance": 0.5,
        "urgency": 0.5, "strategic_alignment": 0.5}),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let (s, _) = tool(
        &app,
        &cfo,
        "desire_create",
        json!({
        "description": "x", "type": "terminal", "base_priority": 0.5, "importance": 0.5,
        "urgency": 0.5, "strategic_alignment": 0.5, "agent_id": "cto"}),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    assert_eq!(count(&app, desires).await, before);
    let ranked = ok(&app, &cfo, "desire_evaluate", json!({})).await;
    assert_eq!(ranked["desires"][0]["desire_id"], instrumental.as_str());
    assert_eq!(ranked["desires"][1]["rank"], 2);
    let (s, _) = tool(&app, &cto, "desire_evaluate", json!({"agent_id": "cfo"})).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    // cto sees only its own (none).
    assert_eq!(
        ok(&app, &cto, "desire_evaluate", json!({})).await["count"],
        0
    );

    // Goals and intentions.
    let g = ok(
        &app,
        &cfo,
        "goal_create",
        json!({
        "description": "grow revenue", "tier": "strategic", "success_criteria": "ARR >= 1M",
        "desire_id": terminal}),
    )
    .await;
    let goal = g["goal_id"].as_str().unwrap().to_owned();
    let sub = ok(
        &app,
        &cfo,
        "goal_create",
        json!({
        "description": "sign 10 customers", "tier": "tactical", "parent_goal": goal}),
    )
    .await;
    assert_eq!(sub["goal"]["parent_goal_id"], goal.as_str());
    let (s, _) = tool(
        &app,
        &cfo,
        "goal_create",
        json!({"description": "x", "tier": "epic"}),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let e = ok(&app, &cfo, "goal_evaluate", json!({"goal_id": goal})).await;
    assert_eq!(e["status"], "on_track", "a sub-goal pursues it: {e}");
    let i = ok(
        &app,
        &cfo,
        "intention_commit",
        json!({
        "description": "run the campaign", "goal_id": goal, "desire_id": instrumental,
        "commitment_strategy": "cautious"}),
    )
    .await;
    assert_eq!(i["intention"]["strategy"], "cautious");
    let intention = i["intention_id"].as_str().unwrap().to_owned();

    // A completed step is progress; a failed one with progress is refused.
    let s1 = ok(
        &app,
        &cfo,
        "plan_execute_step",
        json!({
        "plan_id": intention, "step_id": "brief", "status": "completed", "progress": 0.4,
        "outcome": "brief written", "artifacts_produced": ["brief.md"]}),
    )
    .await;
    assert!(close(&s1["intention"]["progress"], 0.4), "{s1}");
    assert_eq!(s1["progress_counted"], true);
    let (s, b) = tool(
        &app,
        &cfo,
        "plan_execute_step",
        json!({
        "plan_id": intention, "step_id": "ads", "status": "failed", "progress": 0.9}),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{b}");
    let f = ok(
        &app,
        &cfo,
        "plan_execute_step",
        json!({
        "plan_id": intention, "step_id": "ads", "status": "failed", "notes": "no budget"}),
    )
    .await;
    assert!(close(&f["intention"]["progress"], 0.4));
    let (s, _) = tool(
        &app,
        &cto,
        "plan_execute_step",
        json!({
        "plan_id": intention, "step_id": "x", "status": "executing"}),
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND, "not an intention of cto");
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM orchestration_events WHERE kind = 'plan.step_recorded'"
        )
        .await,
        2
    );
    let e = ok(&app, &cfo, "goal_evaluate", json!({"goal_id": goal})).await;
    assert_eq!(e["status"], "on_track", "{e}");
    assert_eq!(e["intentions"][0], intention.as_str());

    // Reconsideration of every open intention: recommendations only.
    let r = ok(&app, &cfo, "intention_reconsider", json!({})).await;
    assert_eq!(r["count"], 1);
    assert_eq!(r["recommendations"][0]["verdict"], "keep", "{r}");
    let (s, _) = tool(&app, &cfo, "intention_reconsider", json!({"blocked": true})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let r = ok(
        &app,
        &cfo,
        "intention_reconsider",
        json!({"intention_id": intention, "blocked": true, "apply": true}),
    )
    .await;
    assert_eq!(r["recommendations"][0]["verdict"], "suspend");
    assert_eq!(r["recommendations"][0]["intention"]["status"], "suspended");
    let e = ok(&app, &cfo, "goal_evaluate", json!({"goal_id": goal})).await;
    assert_eq!(e["status"], "blocked", "{e}");

    // The cycle: maintenance for the caller, with its audit record.
    let c = ok(&app, &cfo, "bdi_cycle", json!({})).await;
    assert_eq!(c["agent_id"], "cfo");
    assert_eq!(c["phases"]["perceive"]["ran"], true);
    assert_eq!(c["phases"]["deliberate"]["desires_evaluated"], 2);
    assert_eq!(c["phases"]["plan"]["ran"], false);
    assert_eq!(
        count(
            &app,
            "SELECT count(*) FROM bdi_cycles WHERE agent_id = 'cfo'"
        )
        .await,
        1
    );
    let (_, m) = app.get("/v1/bdi/maintenance").await;
    assert!(
        m["last_cycle"].is_null(),
        "an agent's cycle is not the job's: {m}"
    );
    let (s, _) = tool(&app, &cfo, "bdi_cycle", json!({"agent_id": "cto"})).await;
    assert_eq!(s, StatusCode::FORBIDDEN);

    // Dropping the terminal desire cascades to the instrumental one.
    let (s, _) = tool(
        &app,
        &cfo,
        "desire_drop",
        json!({"desire_id": "nope", "reason": "x"}),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    let drop = ok(
        &app,
        &cfo,
        "desire_drop",
        json!({"desire_id": terminal, "reason": "market shrank"}),
    )
    .await;
    assert_eq!(drop["cascaded_drops"][0], instrumental.as_str(), "{drop}");
    let (s, _) = tool(
        &app,
        &cfo,
        "desire_drop",
        json!({"desire_id": terminal, "reason": "again"}),
    )
    .await;
    assert_eq!(s, StatusCode::CONFLICT);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planning_tools_plan_decompose_search_and_adapt_without_a_mission() {
    let app = spawn_app().await;
    let worker = spawn_worker(10).await;
    app.register_fleet(&worker.url(), 2).await;
    let planner = agent_token(&app, "planner").await;
    let missions = "SELECT count(*) FROM orchestration_runs";

    let goal = "Write a short report on battery recycling";
    let p = ok(&app, &planner, "plan_generate", json!({"goal": goal})).await;
    assert!(!p["phases"].as_array().unwrap().is_empty(), "{p}");
    assert_eq!(p["phases"][0]["phase"], 1);
    assert!(!p["plan"]["tasks"].as_array().unwrap().is_empty());
    // A budget the estimate nearly fills is a risk; one it exceeds is refused.
    let total = p["total_estimated_cost"].as_f64().unwrap();
    let p = ok(
        &app,
        &planner,
        "plan_generate",
        json!({
        "goal": goal, "constraints": {"budget": total * 1.1}}),
    )
    .await;
    assert!(
        p["risks"].as_array().unwrap().iter()
            .any(|r| r["impact"] == "high" && r["description"].as_str().unwrap().contains("budget")),
        "{p}"
    );
    let (s, b) = tool(
        &app,
        &planner,
        "plan_generate",
        json!({
        "goal": goal, "context": {"budget": total / 2.0}}),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
    assert_eq!(b["error"]["code"], "plan_invalid");
    assert_eq!(
        count(&app, missions).await,
        0,
        "plan_generate creates no mission"
    );
    let (s, _) = tool(&app, &planner, "plan_generate", json!({"goal": "  "})).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);

    let d = ok(
        &app,
        &planner,
        "htn_decompose",
        json!({
        "task": "review_cycle", "current_state": {"review": "light", "goal": "the report"}}),
    )
    .await;
    assert_eq!(d["method"], "review-cycle-light", "{d}");
    assert_eq!(d["subtasks"][0]["order"], 1);
    assert!(
        d["subtasks"][0]["preconditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p == "`review` is \"light\""),
        "{d}"
    );
    let d = ok(&app, &planner, "htn_decompose", json!({
        "task": "ship_it", "current_state": {},
        "methods": [{"name": "ship-fast", "task": "ship_it", "description": "ship",
                     "subtasks": [{"id": "build", "title": "Build", "task_type": "coding"},
                                  {"id": "test", "title": "Test", "task_type": "testing", "depends_on": ["build"]}]}]})).await;
    assert_eq!(d["method"], "ship-fast");
    assert_eq!(d["subtasks"][1]["preconditions"][0], "`build` is completed");
    let (s, b) = tool(
        &app,
        &planner,
        "htn_decompose",
        json!({
        "task": "x", "current_state": {}, "methods": [{"name": "broken"}]}),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{b}");
    let (s, b) = tool(
        &app,
        &planner,
        "htn_decompose",
        json!({
        "task": "review_cycle", "current_state": {}, "methods": [], "agent_id": "writer"}),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{b}");

    // A finished mission becomes a case to search and adapt.
    let m = app
        .create_mission(json!({"goal": goal, "autonomy": "autonomous"}))
        .await;
    let id = m["id"].as_str().unwrap().to_owned();
    app.wait_for_status(&id, &["completed"]).await;
    let missions_now = count(&app, missions).await;
    let found = ok(
        &app,
        &planner,
        "plan_library_search",
        json!({"query": goal}),
    )
    .await;
    assert_eq!(found["count"], 1, "{found}");
    assert!(close(&found["cases"][0]["similarity"], 1.0));
    let case = found["cases"][0]["case_id"].as_str().unwrap().to_owned();
    let none = ok(
        &app,
        &planner,
        "plan_library_search",
        json!({"query": goal, "outcome": "failure"}),
    )
    .await;
    assert_eq!(none["count"], 0);

    let new_goal = "Write a short report on sodium batteries";
    let a = ok(
        &app,
        &planner,
        "plan_adapt",
        json!({
        "source_plan_id": case, "new_context": {"goal": new_goal}}),
    )
    .await;
    assert_eq!(a["source_case"], case.as_str());
    assert_eq!(a["valid"], true, "{a}");
    assert!(!a["adaptations"].as_array().unwrap().is_empty(), "{a}");
    let text = a["plan"].to_string();
    assert!(text.contains("sodium batteries"), "{text}");
    let (s, _) = tool(
        &app,
        &planner,
        "plan_adapt",
        json!({
        "source_plan_id": uuid::Uuid::new_v4(), "new_context": {}}),
    )
    .await;
    assert_eq!(s, StatusCode::NOT_FOUND);
    let (s, _) = tool(
        &app,
        &planner,
        "plan_adapt",
        json!({
        "source_plan_id": case, "new_context": {}, "negative_cases": [case]}),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "a success is no negative case");
    assert_eq!(count(&app, missions).await, missions_now);
    app.stop().await;
}
