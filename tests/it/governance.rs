//! Governance: the check's math, the decision queue's permissions and
//! idempotency, the INFORM to the requester, and the gate before dispatch
//! with each of the four outcomes.

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

/// A new token of `role` (for `agent`, acting as `agent_id`).
pub async fn token(app: &TestApp, role: &str, agent_id: Option<&str>) -> String {
    let mut body = json!({ "role": role });
    if let Some(a) = agent_id {
        body["agent_id"] = json!(a);
    }
    let (status, created) = app.post("/v1/tokens", body).await;
    assert_eq!(status, StatusCode::CREATED, "{created}");
    created["token"].as_str().expect("token").to_owned()
}

async fn call(
    app: &TestApp,
    method: Method,
    path: &str,
    body: Option<Value>,
    token: &str,
) -> (StatusCode, Value) {
    app.request(method, path, body, Some(token)).await
}

async fn put_profile(app: &TestApp, token: &str, body: Value) -> Value {
    let (status, p) = call(
        app,
        Method::PUT,
        "/v1/governance/profile",
        Some(body),
        token,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{p}");
    p
}

async fn check(app: &TestApp, token: &str, body: Value) -> Value {
    let (status, c) = call(app, Method::POST, "/v1/governance/check", Some(body), token).await;
    assert_eq!(status, StatusCode::OK, "{c}");
    c
}

fn budget(cost: f64) -> Value {
    json!({ "action_type": "budget", "estimated_impact": { "estimated_cost": cost } })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_check_scales_thresholds_by_risk_and_honours_auto_approval() {
    let app = spawn_app().await;
    let owner = token(&app, "stakeholder", None).await;
    let operator = token(&app, "operator", None).await;
    // No profile yet: nothing needs approval.
    let c = check(&app, &operator, budget(1e9)).await;
    assert_eq!(c["requires_approval"], false, "{c}");

    let profile = |risk: &str, style: &str, version: Option<i64>| {
        json!({
            "stakeholder_id": "owner-001", "decision_style": style, "risk_tolerance": risk,
            "approval_thresholds": { "budget": { "amount": 10000 }, "hiring": { "headcount": 3 }, "strategy": "always" },
            "auto_approve_categories": ["operational_routine"], "version": version,
        })
    };
    let p = put_profile(
        &app,
        &owner,
        profile("conservative", "strategic-only", None),
    )
    .await;
    assert_eq!(p["risk_modifier"], 0.7);
    // Conservative: 10000 × 0.7 = 7000.
    let c = check(&app, &operator, budget(8000.0)).await;
    assert_eq!(c["requires_approval"], true, "{c}");
    assert_eq!(c["relevant_threshold"]["category"], "budget");
    assert!((c["relevant_threshold"]["value"].as_f64().unwrap() - 7000.0).abs() < 1e-9);
    assert_eq!(c["recommended_action"], "Submit to decision queue");
    assert_eq!(
        check(&app, &operator, budget(6999.0)).await["requires_approval"],
        false
    );

    // Moderate: 10000 as configured.
    let p = put_profile(
        &app,
        &owner,
        profile("moderate", "strategic-only", p["version"].as_i64()),
    )
    .await;
    assert_eq!(
        check(&app, &operator, budget(8000.0)).await["requires_approval"],
        false
    );
    assert_eq!(
        check(&app, &operator, budget(10001.0)).await["requires_approval"],
        true
    );

    // Aggressive: 10000 × 1.5 = 15000; hiring 3 × 1.5 = 4.5.
    let p = put_profile(
        &app,
        &owner,
        profile("aggressive", "strategic-only", p["version"].as_i64()),
    )
    .await;
    assert_eq!(
        check(&app, &operator, budget(14000.0)).await["requires_approval"],
        false
    );
    let c = check(&app, &operator, budget(15001.0)).await;
    assert_eq!(c["requires_approval"], true);
    assert!((c["relevant_threshold"]["value"].as_f64().unwrap() - 15000.0).abs() < 1e-9);
    let hire = |n: i64| json!({ "action_type": "hiring", "estimated_impact": { "headcount": n } });
    assert_eq!(
        check(&app, &operator, hire(4)).await["requires_approval"],
        false
    );
    assert_eq!(
        check(&app, &operator, hire(5)).await["requires_approval"],
        true
    );
    // Strategy always needs approval.
    let c = check(&app, &operator, json!({"action_type": "strategy"})).await;
    assert_eq!(c["requires_approval"], true, "{c}");

    // A stale version changes nothing.
    let (status, body) = call(
        &app,
        Method::PUT,
        "/v1/governance/profile",
        Some(profile("conservative", "hands-on", Some(1))),
        &owner,
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "version_conflict");
    let (_, shown) = call(&app, Method::GET, "/v1/governance/profile", None, &operator).await;
    assert_eq!(shown["risk_tolerance"], "aggressive", "{shown}");

    // Hands-on reviews everything except the auto-approved categories.
    put_profile(
        &app,
        &owner,
        profile("moderate", "hands-on", p["version"].as_i64()),
    )
    .await;
    let c = check(
        &app,
        &operator,
        json!({"action_type": "Operational-Routine", "estimated_impact": {"estimated_cost": 5}}),
    )
    .await;
    assert_eq!(c["requires_approval"], false, "{c}");
    assert_eq!(c["auto_approved"], true);
    let c = check(&app, &operator, json!({"action_type": "marketing"})).await;
    assert_eq!(c["requires_approval"], true, "{c}");
    // ...but a threshold is a hard limit even for an auto-approved category.
    let c = check(&app, &operator, json!({"action_type": "operational_routine", "estimated_impact": {"estimated_cost": 20000}})).await;
    assert_eq!(c["requires_approval"], true, "{c}");

    // Bad input is a 4xx and changes nothing; operators cannot set the profile.
    let (status, _) = call(
        &app,
        Method::PUT,
        "/v1/governance/profile",
        Some(json!({"decision_style": "hands-on", "risk_tolerance": "reckless"})),
        &owner,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, _) = call(
        &app,
        Method::PUT,
        "/v1/governance/profile",
        Some(profile("moderate", "hands-on", None)),
        &operator,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = call(
        &app,
        Method::POST,
        "/v1/governance/check",
        Some(budget(-1.0)),
        &operator,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    app.stop().await;
}

async fn inform_count(app: &TestApp, agent: &str, decision: &str) -> i64 {
    sqlx::query_scalar::<_, i64>(
        "SELECT count(*) FROM agent_messages m JOIN message_recipients r ON r.message_id = m.id
         WHERE r.agent_id = $1 AND m.performative = 'INFORM' AND m.content->>'decision_id' = $2",
    )
    .bind(agent)
    .bind(decision)
    .fetch_one(&app.pool)
    .await
    .expect("count")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_stakeholders_resolve_and_the_requester_gets_an_inform() {
    let app = spawn_app().await;
    let (status, body) = app
        .post(
            "/v1/agents",
            json!({"agent_id": "cfo", "role": "finance", "skills": ["finance"], "endpoint_url": "http://127.0.0.1:9"}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let owner = token(&app, "stakeholder", None).await;
    let operator = token(&app, "operator", None).await;
    let cfo = token(&app, "agent", Some("cfo")).await;
    put_profile(
        &app,
        &owner,
        json!({"decision_style": "strategic-only", "risk_tolerance": "moderate",
               "approval_thresholds": {"budget": {"amount": 10000}}}),
    )
    .await;

    let request = json!({
        "description": "Approve $25,000 marketing budget for Q2 campaign",
        "action_type": "budget", "estimated_impact": {"estimated_cost": 25000},
        "impact_analysis": {"financial": "25% of quarterly marketing budget"},
        "options": [
            {"label": "Approve full budget", "risk_level": "medium"},
            {"label": "Approve reduced budget", "risk_level": "low"},
            {"label": "Reject", "risk_level": "low"}
        ],
        "recommended_option": "Approve reduced budget"
    });
    let (status, d) = call(
        &app,
        Method::POST,
        "/v1/decisions",
        Some(request.clone()),
        &cfo,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{d}");
    assert_eq!(d["status"], "pending");
    assert_eq!(d["agent_id"], "cfo");
    let id = d["id"].as_str().unwrap().to_owned();

    // The review is enriched with the thresholds and risk tolerance.
    let (status, queue) = call(
        &app,
        Method::GET,
        "/v1/decisions?status=pending",
        None,
        &owner,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{queue}");
    let item = queue["decisions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["id"] == id.as_str())
        .expect("queued");
    assert_eq!(item["governance"]["risk_tolerance"], "moderate", "{item}");
    assert_eq!(
        item["governance"]["relevant_threshold"]["value"], 10000.0,
        "{item}"
    );
    assert!(
        item["governance"]["recommended_action"]
            .as_str()
            .unwrap()
            .contains("Approve reduced budget")
    );

    // An agent cannot request as another agent; bad input changes nothing.
    let mut other = request.clone();
    other["agent_id"] = json!("ceo");
    let (status, _) = call(&app, Method::POST, "/v1/decisions", Some(other), &cfo).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, _) = call(
        &app,
        Method::POST,
        "/v1/decisions",
        Some(json!({"description": "x", "recommended_option": "nope"})),
        &operator,
    )
    .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);

    let path = format!("/v1/decisions/{id}/resolve");
    let modified = json!({
        "outcome": "modified", "rationale": "Milestone gates: $10k initial",
        "conditions": ["Monthly progress reports required"],
        "modifications": {"budget": 10000, "release_schedule": "milestone-based"}
    });
    for t in [&operator, &app.token.clone(), &cfo] {
        let (status, body) = call(&app, Method::POST, &path, Some(modified.clone()), t).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    }
    assert_eq!(inform_count(&app, "cfo", &id).await, 0);
    // Bad input: modified without modifications; a stale version.
    let (status, _) = call(
        &app,
        Method::POST,
        &path,
        Some(json!({"outcome": "modified"})),
        &owner,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, body) = call(
        &app,
        Method::POST,
        &path,
        Some(json!({"outcome": "approved", "version": 99})),
        &owner,
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["error"]["code"], "version_conflict");

    let (status, resolved) = call(&app, Method::POST, &path, Some(modified.clone()), &owner).await;
    assert_eq!(status, StatusCode::OK, "{resolved}");
    assert_eq!(resolved["status"], "modified");
    assert_eq!(resolved["modifications"]["budget"], 10000);
    // The same resolution again: the same result, nothing new.
    let (status, again) = call(&app, Method::POST, &path, Some(modified), &owner).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["version"], resolved["version"]);
    // Another outcome: refused.
    let (status, body) = call(
        &app,
        Method::POST,
        &path,
        Some(json!({"outcome": "rejected"})),
        &owner,
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "decision_already_resolved");
    // Exactly one INFORM, carrying the resolution.
    assert_eq!(inform_count(&app, "cfo", &id).await, 1);
    let content: Value = sqlx::query_scalar(
        "SELECT m.content FROM agent_messages m WHERE m.performative = 'INFORM' AND m.content->>'decision_id' = $1",
    )
    .bind(&id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(content["outcome"], "modified", "{content}");
    assert_eq!(
        content["conditions"][0],
        "Monthly progress reports required"
    );

    // The chat tool resolves too, for stakeholders only.
    let (_, d2) = call(
        &app,
        Method::POST,
        "/v1/decisions",
        Some(json!({"description": "Hire two engineers", "action_type": "hiring"})),
        &cfo,
    )
    .await;
    let id2 = d2["id"].as_str().unwrap().to_owned();
    let args = json!({"decision_id": id2, "outcome": "approved", "rationale": "fine"});
    let (status, _) = call(
        &app,
        Method::POST,
        "/v1/tools/resolve_decision",
        Some(args.clone()),
        &operator,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (status, body) = call(
        &app,
        Method::POST,
        "/v1/tools/resolve_decision",
        Some(args),
        &owner,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(inform_count(&app, "cfo", &id2).await, 1);
    let (_, d2) = call(
        &app,
        Method::GET,
        &format!("/v1/decisions/{id2}"),
        None,
        &owner,
    )
    .await;
    assert_eq!(d2["status"], "approved", "{d2}");
    app.stop().await;
}

/// A plan of independent tasks, each costing more than the budget threshold.
fn gated_plan(keys: &[&str]) -> Value {
    let tasks: Vec<Value> = keys
        .iter()
        .map(|k| {
            json!({"id": k, "title": format!("Spend on {k}"), "task_type": "research",
                   "required_skills": ["research"], "estimated_cost": 5.0,
                   "inputs": {"channel": "ads"},
                   "success_criteria": [{"description": "done", "must_pass": true}]})
        })
        .collect();
    json!({ "tasks": tasks })
}

/// The open decision gating task `key` of the mission.
async fn decision_for(app: &TestApp, mission: &str, key: &str, token: &str) -> Value {
    let t = wait_task(app, mission, key, "awaiting_approval").await;
    wait_until(&format!("a decision for {key}"), || async {
        let (_, queue) = call(
            app,
            Method::GET,
            "/v1/decisions?status=pending",
            None,
            token,
        )
        .await;
        queue["decisions"]
            .as_array()?
            .iter()
            .find(|d| d["task_id"] == t["id"])
            .cloned()
    })
    .await
}

/// The dispatch of task `key`, waiting for it.
pub async fn dispatch_of(
    worker: &ManualWorker,
    key: &str,
) -> coordinator::worker::protocol::DispatchRequest {
    wait_until(&format!("dispatch of {key}"), || async {
        for i in 1..=worker.count() {
            let d = worker.dispatch(i).await;
            if d.task.key == key {
                return Some(d);
            }
        }
        None
    })
    .await
}

async fn events_of(app: &TestApp, mission: &str) -> Vec<Value> {
    let (_, page) = app
        .get(&format!("/v1/missions/{mission}/events?limit=1000"))
        .await;
    page["events"].as_array().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_outcome_moves_the_gated_task() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 10).await;
    let owner = token(&app, "stakeholder", None).await;
    put_profile(
        &app,
        &owner,
        json!({"decision_style": "strategic-only", "risk_tolerance": "moderate",
               "approval_thresholds": {"budget": {"amount": 1.0}}}),
    )
    .await;
    let mut plan = gated_plan(&["ok", "modify", "reject", "defer"]);
    // A cheap task downstream of the rejected one: it proceeds without it.
    plan["tasks"].as_array_mut().unwrap().push(json!({
        "id": "after", "title": "Report", "task_type": "research", "required_skills": ["research"],
        "depends_on": ["reject"], "estimated_cost": 0.01,
        "success_criteria": [{"description": "done", "must_pass": true}]}));
    let m = app
        .create_mission(json!({"goal": "Run the campaign", "autonomy": "autonomous", "plan": plan}))
        .await;
    let id = m["id"].as_str().unwrap().to_owned();
    let resolve = |d: &Value, body: Value| {
        let path = format!("/v1/decisions/{}/resolve", d["id"].as_str().unwrap());
        let owner = owner.clone();
        let app = &app;
        async move {
            let (status, r) = call(app, Method::POST, &path, Some(body), &owner).await;
            assert_eq!(status, StatusCode::OK, "{r}");
            r
        }
    };

    // Nothing gated is dispatched before a decision.
    let d_ok = decision_for(&app, &id, "ok", &owner).await;
    assert!(
        d_ok["governance_check"]["reason"]
            .as_str()
            .unwrap()
            .contains("Budget"),
        "{d_ok}"
    );
    assert_eq!(worker.count(), 0);

    // approved → dispatched.
    resolve(&d_ok, json!({"outcome": "approved"})).await;
    let sent = dispatch_of(&worker, "ok").await;
    assert_eq!(sent.task.inputs["governance"]["outcome"], "approved");

    // modified → dispatched with the modifications in its inputs.
    let d_mod = decision_for(&app, &id, "modify", &owner).await;
    resolve(&d_mod, json!({"outcome": "modified", "modifications": {"channel": "email", "budget_cap": 2.5}, "conditions": ["weekly report"]})).await;
    let sent = dispatch_of(&worker, "modify").await;
    assert_eq!(
        sent.task.inputs["channel"], "email",
        "{:?}",
        sent.task.inputs
    );
    assert_eq!(sent.task.inputs["budget_cap"], 2.5);
    assert_eq!(
        sent.task.inputs["governance"]["conditions"][0],
        "weekly report"
    );

    // rejected → skipped, a replan trigger, and dependents go on.
    let d_rej = decision_for(&app, &id, "reject", &owner).await;
    resolve(
        &d_rej,
        json!({"outcome": "rejected", "rationale": "too expensive"}),
    )
    .await;
    wait_task(&app, &id, "reject", "skipped").await;
    let events = events_of(&app, &id).await;
    assert!(
        events
            .iter()
            .any(|e| e["kind"] == "mission.replan_triggered"
                && e["payload"]["decision_id"] == d_rej["id"]),
        "no replan trigger in {events:?}"
    );
    dispatch_of(&worker, "after").await;

    // deferred → re-checked later: back to pending, task still waiting.
    let d_def = decision_for(&app, &id, "defer", &owner).await;
    let r = resolve(
        &d_def,
        json!({"outcome": "deferred", "recheck_after_ms": 200}),
    )
    .await;
    assert_eq!(r["status"], "deferred");
    let rechecked = wait_until("the deferred decision to be re-checked", || async {
        let (_, d) = call(
            &app,
            Method::GET,
            &format!("/v1/decisions/{}", d_def["id"].as_str().unwrap()),
            None,
            &owner,
        )
        .await;
        (d["status"] == "pending" && d["recheck_count"] == 1).then_some(d)
    })
    .await;
    assert_eq!(rechecked["governance_check"]["requires_approval"], true);
    assert_eq!(
        task(&app, &id, "defer").await["status"],
        "awaiting_approval"
    );
    assert!(
        events_of(&app, &id)
            .await
            .iter()
            .any(|e| e["kind"] == "decision.rechecked")
    );
    assert!(worker_has_not(&worker, "defer").await);

    // Deferred again after the stakeholder raised the threshold: the
    // re-check finds no approval needed and lets the task go.
    let (_, p) = call(&app, Method::GET, "/v1/governance/profile", None, &owner).await;
    put_profile(
        &app,
        &owner,
        json!({"decision_style": "strategic-only", "risk_tolerance": "moderate",
               "approval_thresholds": {"budget": {"amount": 100.0}}, "version": p["version"]}),
    )
    .await;
    resolve(
        &d_def,
        json!({"outcome": "deferred", "recheck_after_ms": 100}),
    )
    .await;
    dispatch_of(&worker, "defer").await;
    app.stop().await;
}

async fn worker_has_not(worker: &ManualWorker, key: &str) -> bool {
    for i in 1..=worker.count() {
        if worker.dispatch(i).await.task.key == key {
            return false;
        }
    }
    true
}
