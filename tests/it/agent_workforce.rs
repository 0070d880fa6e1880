//! Agents act on the workforce and on governance through their tools
//! (`POST /v1/tools/{name}`), stakeholders through theirs; an agent hands its
//! running task to another agent, or raises a blocker that a stakeholder
//! resolves, from inside a real mission (attempt tokens, manual workers).

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;
use coordinator::worker::protocol::DispatchRequest;

/// A token of `role` (acting as `agent`, for agent tokens).
async fn token(app: &TestApp, role: &str, agent: Option<&str>) -> String {
    let (s, body) = app
        .post("/v1/tokens", json!({"role": role, "agent_id": agent}))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    body["token"].as_str().unwrap().to_owned()
}

/// The tool's answer: its `result` on success, else the error body.
fn unwrap((s, body): (StatusCode, Value)) -> (StatusCode, Value) {
    match s {
        StatusCode::OK => (s, body["result"].clone()),
        _ => (s, body),
    }
}

/// Calls a tool with a token.
async fn tool(app: &TestApp, token: &str, name: &str, args: Value) -> (StatusCode, Value) {
    unwrap(
        app.request(
            Method::POST,
            &format!("/v1/tools/{name}"),
            Some(args),
            Some(token),
        )
        .await,
    )
}

/// Calls a tool as a worker does: at the dispatch's `tools_url`, with its token.
async fn tool_of(
    app: &TestApp,
    d: &DispatchRequest,
    name: &str,
    args: Value,
) -> (StatusCode, Value) {
    let base = d
        .callback
        .tools_url
        .as_deref()
        .expect("dispatches carry tools_url");
    unwrap(
        call(
            &app.http,
            base,
            Method::POST,
            &format!("/{name}"),
            Some(args),
            Some(&d.callback.token),
        )
        .await,
    )
}

fn code(body: &Value) -> &str {
    body["error"]["code"].as_str().unwrap_or("")
}

async fn agent(app: &TestApp, id: &str, role: &str, skills: &[&str], url: &str) {
    let (s, body) = app
        .post(
            "/v1/agents",
            json!({"agent_id": id, "role": role, "skills": skills,
                   "endpoint_url": url, "max_concurrency": 1}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
}

async fn count(app: &TestApp, path: &str, key: &str) -> usize {
    let (s, body) = app.get(path).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    body[key].as_array().map_or(0, Vec::len)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_manage_the_workforce_and_stakeholders_govern_through_tools() {
    let app = spawn_app().await;
    agent(
        &app,
        "alpha",
        "researcher",
        &["research"],
        "http://127.0.0.1:9",
    )
    .await;
    agent(
        &app,
        "beta",
        "researcher",
        &["research"],
        "http://127.0.0.1:9",
    )
    .await;
    let alpha = token(&app, "agent", Some("alpha")).await;
    let stakeholder = token(&app, "stakeholder", None).await;

    // Contractors: bad arguments and the wrong role change nothing.
    for bad in [
        json!({"name": 3}),
        json!({"name": "Jane", "colour": "red"}),
        json!({}),
    ] {
        let (s, body) = tool(&app, &alpha, "contractor_add", bad).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    }
    let (s, body) = tool(
        &app,
        &stakeholder,
        "contractor_add",
        json!({"name": "Jane"}),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(count(&app, "/v1/contractors", "contractors").await, 0);
    let (s, c) = tool(
        &app,
        &alpha,
        "contractor_add",
        json!({"name": "Jane Smith", "skills": ["python", "data-analysis"], "hourly_rate": 85,
               "availability": "part-time", "contact": "jane@example.com"}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{c}");
    assert_eq!(c["trust_score"], 0.5);
    let contractor = c["contractor_id"].as_str().unwrap().to_owned();
    let (s, list) = tool(
        &app,
        &alpha,
        "contractor_list",
        json!({"skill_filter": ["python"], "min_trust": 0.5}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{list}");
    assert_eq!(list["count"], 1);
    let (_, list) = tool(
        &app,
        &alpha,
        "contractor_list",
        json!({"skill_filter": ["rust"]}),
    )
    .await;
    assert_eq!(list["count"], 0, "{list}");

    // A work package through its whole life, by an agent.
    let (s, p) = tool(
        &app,
        &alpha,
        "work_package_create",
        json!({"title": "Analytics dashboard", "required_skills": ["python"], "priority": "high",
               "deadline": "2026-04-01", "budget": 15000, "open": true}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{p}");
    assert_eq!(p["status"], "open");
    assert_eq!(p["candidates"][0]["contractor_id"], contractor.as_str());
    let package = p["work_package_id"].as_str().unwrap().to_owned();
    let (s, p) = tool(
        &app,
        &alpha,
        "work_package_assign",
        json!({"work_package_id": package}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{p}");
    assert_eq!(p["status"], "assigned");
    assert_eq!(p["contractor_id"], contractor.as_str());
    // A deliverable needs a status to move to; nothing changes.
    let (s, body) = tool(
        &app,
        &alpha,
        "work_package_update",
        json!({"work_package_id": package, "deliverable": {"url": "x"}}),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    let (s, p) = tool(
        &app,
        &alpha,
        "work_package_update",
        json!({"work_package_id": package, "progress": 20, "notes": "schema drafted"}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{p}");
    assert_eq!(
        (p["status"].as_str(), p["progress"].as_i64()),
        (Some("assigned"), Some(20))
    );
    for step in [
        json!({"status": "in_progress"}),
        json!({"status": "review", "deliverable": {"url": "https://dash.example"}}),
        json!({"status": "completed", "quality_rating": "good", "reason": "on time"}),
    ] {
        let mut args = step.clone();
        args["work_package_id"] = json!(package);
        let (s, p) = tool(&app, &alpha, "work_package_update", args).await;
        assert_eq!(s, StatusCode::OK, "{p}");
        assert_eq!(p["status"], step["status"]);
    }
    let (_, c) = app.get(&format!("/v1/contractors/{contractor}")).await;
    assert!(
        (c["trust_score"].as_f64().unwrap() - 0.6).abs() < 1e-9,
        "{c}"
    );
    let (s, t) = tool(
        &app,
        &alpha,
        "contractor_trust_update",
        json!({"contractor_id": contractor, "quality_rating": "poor", "reason": "missed a call",
               "work_package_id": package}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{t}");
    assert!(
        (t["trust_score"].as_f64().unwrap() - 0.5).abs() < 1e-9,
        "{t}"
    );
    assert_eq!(t["change"]["quality_rating"], "poor");
    let (s, body) = tool(
        &app,
        &alpha,
        "contractor_trust_update",
        json!({"contractor_id": contractor, "quality_rating": "stellar", "reason": "x"}),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    let (_, c) = app.get(&format!("/v1/contractors/{contractor}")).await;
    assert_eq!(c["trust_history"].as_array().unwrap().len(), 2, "{c}");
    let (s, list) = tool(
        &app,
        &alpha,
        "work_package_list",
        json!({"status_filter": "completed", "contractor_filter": contractor}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{list}");
    assert_eq!(list["count"], 1);

    // Governance: the stakeholder sets the profile; agents may not.
    let profile = json!({"stakeholder_id": "owner-001", "business_id": "biz1",
        "decision_style": "strategic-only", "risk_tolerance": "moderate",
        "approval_thresholds": {"budget": {"amount": 10000, "currency": "USD"}}});
    let (s, body) = tool(&app, &alpha, "stakeholder_profile", profile.clone()).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
    let (s, body) = tool(
        &app,
        &stakeholder,
        "stakeholder_profile",
        json!({"decision_style": "sometimes", "risk_tolerance": "moderate"}),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    let (s, body) = tool(&app, &stakeholder, "stakeholder_profile", profile).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(body["stakeholder_id"], "owner-001");
    let (s, check) = tool(
        &app,
        &alpha,
        "governance_check",
        json!({"business_id": "biz1", "action_type": "budget",
               "estimated_impact": {"estimated_cost": 25000}}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{check}");
    assert_eq!(check["requires_approval"], true);

    // An agent requests a decision as itself only.
    let request = json!({"business_id": "biz1", "description": "Approve $25,000 for Q2",
        "action_type": "budget", "estimated_impact": {"estimated_cost": 25000},
        "options": [{"label": "Full", "description": "All of it", "risk_level": "medium"},
                    {"label": "Reduced", "description": "60%", "risk_level": "low"}],
        "recommended_option": "Reduced"});
    let mut as_beta = request.clone();
    as_beta["agent_id"] = json!("beta");
    let (s, body) = tool(&app, &alpha, "decision_request", as_beta).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
    let mut bad = request.clone();
    bad["recommended_option"] = json!("Everything");
    let (s, body) = tool(&app, &alpha, "decision_request", bad).await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["error"]["code"], "unknown_option", "{body}");
    assert_eq!(count(&app, "/v1/decisions", "decisions").await, 0);
    let (s, d) = tool(&app, &alpha, "decision_request", request).await;
    assert_eq!(s, StatusCode::OK, "{d}");
    assert_eq!(
        (d["agent_id"].as_str(), d["status"].as_str()),
        (Some("alpha"), Some("pending"))
    );
    let decision = d["decision_id"].as_str().unwrap().to_owned();

    // The stakeholder reviews and resolves it; agents cannot.
    let (s, body) = tool(&app, &alpha, "decision_review", json!({})).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
    let (s, review) = tool(
        &app,
        &stakeholder,
        "decision_review",
        json!({"business_id": "biz1"}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{review}");
    assert_eq!(review["count"], 1);
    assert_eq!(
        review["decisions"][0]["governance"]["requires_approval_now"],
        true
    );
    let resolve =
        json!({"decision_id": decision, "outcome": "approved", "rationale": "milestones"});
    let (s, body) = tool(&app, &alpha, "decision_resolve", resolve.clone()).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
    let mut other = resolve.clone();
    other["resolver"] = json!("someone-else");
    let (s, body) = tool(&app, &stakeholder, "decision_resolve", other).await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
    let mut wrong = resolve.clone();
    wrong["option"] = json!("Everything");
    let (s, body) = tool(&app, &stakeholder, "decision_resolve", wrong).await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    let (_, d) = app.get(&format!("/v1/decisions/{decision}")).await;
    assert_eq!(d["status"], "pending", "nothing changed: {d}");
    let (s, d) = tool(&app, &stakeholder, "decision_resolve", resolve).await;
    assert_eq!(s, StatusCode::OK, "{d}");
    assert_eq!(d["status"], "approved");
    assert_eq!(
        d["chosen_option"], "Reduced",
        "the recommended option by default"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_hands_its_task_to_another_agent_and_the_mission_completes() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    for id in ["alpha", "beta"] {
        agent(&app, id, "researcher", &["research"], &worker.url).await;
    }
    agent(&app, "gamma", "writer", &["writing"], &worker.url).await;
    agent(&app, "delta", "researcher", &["research"], &worker.url).await;
    sqlx::query("UPDATE agents SET status = 'offline' WHERE agent_id = 'delta'")
        .execute(&app.pool)
        .await
        .unwrap();
    let m = app
        .create_mission(
            json!({"goal": "hand it on", "autonomy": "autonomous", "plan": chain_plan()}),
        )
        .await;
    let id = m["id"].as_str().unwrap().to_owned();
    let d1 = worker.dispatch(1).await;
    assert_eq!(d1.task.key, "a");
    let holder = d1.agent_id.clone();
    let other = if holder == "alpha" { "beta" } else { "alpha" };

    // Refusals, each with a reason, and nothing changes.
    let summary = "Three sources found; the summary is left.";
    for (to, status, want) in [
        (
            holder.as_str(),
            StatusCode::UNPROCESSABLE_ENTITY,
            "handoff_to_self",
        ),
        (
            "nobody",
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown_recipient",
        ),
        (
            "gamma",
            StatusCode::UNPROCESSABLE_ENTITY,
            "recipient_unable",
        ),
        ("delta", StatusCode::CONFLICT, "recipient_offline"),
    ] {
        let (s, body) = tool_of(
            &app,
            &d1,
            "handoff_task",
            json!({"to_agent": to, "context_summary": summary}),
        )
        .await;
        assert_eq!((s, code(&body)), (status, want), "{to}: {body}");
    }
    for bad in [
        json!({"to_agent": other, "to_role": "researcher", "context_summary": summary}),
        json!({"to_agent": other}),
        json!({"to_agent": other, "context_summary": summary, "urgent": true}),
    ] {
        let (s, body) = tool_of(&app, &d1, "handoff_task", bad).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    }
    // An agent token outside a task has no task to hand on.
    let holder_token = token(&app, "agent", Some(&holder)).await;
    let (s, body) = tool(
        &app,
        &holder_token,
        "handoff_task",
        json!({"to_agent": other, "context_summary": summary}),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
    // `handoff` may not speak for another agent.
    let (s, body) = tool_of(
        &app,
        &d1,
        "handoff",
        json!({"direction": "agent_to_agent", "from": other, "to": other, "context_summary": summary}),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(task(&app, &id, "a").await["status"], "running");
    assert_eq!(
        count(
            &app,
            &format!("/v1/handoffs?task={}", d1.task_id),
            "handoffs"
        )
        .await,
        0
    );

    // The handoff: the attempt ends, the task goes to the other agent with the summary.
    let (s, h) = tool_of(
        &app,
        &d1,
        "handoff_task",
        json!({"to_agent": other, "context_summary": summary,
               "artifacts": [{"name": "sources", "path": "blackboard:sources"}]}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{h}");
    assert_eq!(h["direction"], "agent_to_agent");
    assert_eq!(
        (h["from"].as_str(), h["to"].as_str()),
        (Some(holder.as_str()), Some(other))
    );
    assert_eq!(h["attempt_id"], d1.attempt_id.to_string());
    let d2 = worker.dispatch(2).await;
    assert_eq!((d2.task.key.as_str(), d2.agent_id.as_str()), ("a", other));
    let feedback = d2.feedback.clone().unwrap_or_default();
    assert!(
        feedback.contains(summary) && feedback.contains(&holder),
        "{feedback}"
    );
    let (s, body) = report(
        &app.http,
        &d1,
        &d1.callback.token,
        json!({"status": "succeeded", "output": {"late": true}}),
    )
    .await;
    assert_eq!(
        s,
        StatusCode::CONFLICT,
        "the handed-off attempt is stale: {body}"
    );
    let (s, body) = tool_of(&app, &d1, "my_task", json!({})).await;
    assert_eq!(s, StatusCode::CONFLICT, "its token acts no more: {body}");
    let (status, error, failures): (String, Option<String>, i32) = sqlx::query_as(
        "SELECT a.status, a.error, t.failure_count FROM task_attempts a
         JOIN orchestration_tasks t ON t.id = a.task_id WHERE a.id = $1",
    )
    .bind(d1.attempt_id)
    .fetch_one(&app.pool)
    .await
    .unwrap();
    assert_eq!(status, "cancelled");
    assert!(error.unwrap_or_default().contains("handed off"));
    assert_eq!(failures, 0, "a handoff is no failure");
    succeed(&app.http, &d2, json!({"text": "summary"}), 0.01).await;

    // Task b goes to the best researcher but its holder: by role.
    let d3 = worker.dispatch(3).await;
    assert_eq!(d3.task.key, "b");
    let b_holder = d3.agent_id.clone();
    let b_other = if b_holder == "alpha" { "beta" } else { "alpha" };
    let (s, h) = tool_of(
        &app,
        &d3,
        "handoff_task",
        json!({"to_role": "researcher", "context_summary": "Over to you."}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{h}");
    assert_eq!(
        h["to"], b_other,
        "delta is offline and the caller is excluded"
    );
    let d4 = worker.dispatch(4).await;
    assert_eq!((d4.task.key.as_str(), d4.agent_id.as_str()), ("b", b_other));
    succeed(&app.http, &d4, json!({"text": "b"}), 0.01).await;

    // Task c through the seed's `handoff` tool, agent_to_agent.
    let d5 = worker.dispatch(5).await;
    assert_eq!(d5.task.key, "c");
    let c_other = if d5.agent_id == "alpha" {
        "beta"
    } else {
        "alpha"
    };
    let (s, h) = tool_of(
        &app,
        &d5,
        "handoff",
        json!({"direction": "agent_to_agent", "to": c_other, "context_summary": "Finish it."}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{h}");
    let d6 = worker.dispatch(6).await;
    assert_eq!((d6.task.key.as_str(), d6.agent_id.as_str()), ("c", c_other));
    succeed(&app.http, &d6, json!({"text": "c"}), 0.01).await;
    app.wait_for_status(&id, &["completed"]).await;

    // The chain of handoffs of task a, and its log.
    let (_, chain) = app.get(&format!("/v1/handoffs?task={}", d1.task_id)).await;
    assert_eq!(chain["handoffs"].as_array().unwrap().len(), 1, "{chain}");
    assert_eq!(chain["handoffs"][0]["task_status_from"], "running");
    assert_eq!(chain["handoffs"][0]["task_status_to"], "queued");
    let kinds: Vec<(String,)> =
        sqlx::query_as("SELECT kind FROM orchestration_events WHERE task_id = $1 ORDER BY id")
            .bind(d1.task_id)
            .fetch_all(&app.pool)
            .await
            .unwrap();
    let kinds: Vec<&str> = kinds.iter().map(|k| k.0.as_str()).collect();
    assert!(
        kinds.contains(&"task.handed_off") && kinds.contains(&"handoff.created"),
        "{kinds:?}"
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_agent_waits_for_a_stakeholder_and_gets_the_choice_as_feedback() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    agent(&app, "alpha", "researcher", &["research"], &worker.url).await;
    let stakeholder = token(&app, "stakeholder", None).await;
    let m = app
        .create_mission(
            json!({"goal": "decide it", "autonomy": "autonomous", "plan": chain_plan()}),
        )
        .await;
    let id = m["id"].as_str().unwrap().to_owned();
    let d1 = worker.dispatch(1).await;
    let options = json!([
        {"label": "Use REST", "description": "The documented API", "risk_level": "low"},
        {"label": "Scrape", "description": "Faster, fragile", "risk_level": "high"},
    ]);
    for bad in [
        json!({"description": "Which source?", "options": []}),
        json!({"description": "Which source?", "options": options, "recommended_option": "FTP"}),
        json!({"description": " ", "options": options}),
        json!({"description": "Which source?", "options": [{"label": "A", "colour": "red"}]}),
    ] {
        let semantic = bad.get("recommended_option").is_some();
        let (s, body) = tool_of(&app, &d1, "raise_blocker", bad).await;
        let expected = if semantic {
            StatusCode::UNPROCESSABLE_ENTITY
        } else {
            StatusCode::BAD_REQUEST
        };
        assert_eq!(s, expected, "{body}");
    }
    assert_eq!(task(&app, &id, "a").await["status"], "running");
    assert_eq!(count(&app, "/v1/decisions", "decisions").await, 0);

    let (s, d) = tool_of(
        &app,
        &d1,
        "raise_blocker",
        json!({"description": "Which source should the research use?", "options": options,
               "recommended_option": "Use REST"}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{d}");
    assert_eq!(
        (d["topic"].as_str(), d["status"].as_str()),
        (Some("blocker"), Some("pending"))
    );
    assert_eq!(d["task_id"], d1.task_id.to_string());
    let decision = d["decision_id"].as_str().unwrap().to_owned();
    assert_eq!(task(&app, &id, "a").await["status"], "awaiting_human");
    let (s, body) = report(
        &app.http,
        &d1,
        &d1.callback.token,
        json!({"status": "failed", "error": "late"}),
    )
    .await;
    assert_eq!(
        s,
        StatusCode::CONFLICT,
        "the blocked attempt is stale: {body}"
    );

    // A deferral keeps the task waiting; a bad option changes nothing.
    let (s, review) = tool(&app, &stakeholder, "decision_review", json!({})).await;
    assert_eq!(s, StatusCode::OK, "{review}");
    assert_eq!(review["decisions"][0]["topic"], "blocker");
    let (s, body) = tool(
        &app,
        &stakeholder,
        "decision_resolve",
        json!({"decision_id": decision, "outcome": "approved", "option": "FTP"}),
    )
    .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    let (s, body) = tool(
        &app,
        &stakeholder,
        "decision_resolve",
        json!({"decision_id": decision, "outcome": "deferred", "recheck_after_ms": 3600000}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert_eq!(task(&app, &id, "a").await["status"], "awaiting_human");
    assert_eq!(worker.count(), 1);

    // Resolved: the task comes back with the chosen option as feedback.
    let (s, d) = tool(
        &app,
        &stakeholder,
        "decision_resolve",
        json!({"decision_id": decision, "outcome": "approved", "option": "Scrape",
               "rationale": "We need it this week", "conditions": ["Cache every page"]}),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{d}");
    assert_eq!(d["chosen_option"], "Scrape");
    let d2 = worker.dispatch(2).await;
    assert_eq!((d2.task.key.as_str(), d2.agent_id.as_str()), ("a", "alpha"));
    let feedback = d2.feedback.clone().unwrap_or_default();
    assert!(
        feedback.contains("Scrape")
            && feedback.contains("approved")
            && feedback.contains("Cache every page"),
        "{feedback}"
    );
    let failures: (i32,) =
        sqlx::query_as("SELECT failure_count FROM orchestration_tasks WHERE id = $1")
            .bind(d1.task_id)
            .fetch_one(&app.pool)
            .await
            .unwrap();
    assert_eq!(failures.0, 0, "a blocker is no failure");
    succeed(&app.http, &d2, json!({"text": "a"}), 0.01).await;
    for n in [3, 4] {
        let d = worker.dispatch(n).await;
        succeed(&app.http, &d, json!({"text": n}), 0.01).await;
    }
    app.wait_for_status(&id, &["completed"]).await;
    app.stop().await;
}
