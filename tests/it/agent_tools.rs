//! Agents acting through their tools: the attempt token of a real dispatch
//! as the agent's identity (confined to its mission, refused once the
//! attempt ends), the mission blackboard with compare-and-set, and
//! discovered work added to the running mission.

use axum::http::StatusCode;
use reqwest::Method;
use serde_json::{Value, json};

use crate::helpers::*;

/// Calls tool `name` with `token`; returns (status, body).
async fn tool(app: &TestApp, token: &str, name: &str, args: Value) -> (StatusCode, Value) {
    app.request(
        Method::POST,
        &format!("/v1/tools/{name}"),
        Some(args),
        Some(token),
    )
    .await
}

/// Calls tool `name`, which must answer 200; returns its result.
async fn ok(app: &TestApp, token: &str, name: &str, args: Value) -> Value {
    let (status, body) = tool(app, token, name, args).await;
    assert_eq!(status, StatusCode::OK, "{name}: {body}");
    body["result"].clone()
}

async fn events_of(app: &TestApp, mission: &str, kind: &str) -> Vec<Value> {
    let (_, body) = app.get(&format!("/v1/missions/{mission}/events")).await;
    body["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["kind"] == kind)
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_token_acts_as_its_agent_inside_its_mission() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 2).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    let other = app
        .create_mission(json!({"goal": "other", "autonomy": "approve", "plan": chain_plan()}))
        .await;
    let other_id = other["id"].as_str().unwrap();

    let d = worker.dispatch(1).await;
    let token = d.callback.token.clone();
    assert!(token.starts_with("cat_"), "{token}");
    let tools_url = d.callback.tools_url.clone().expect("tools_url");
    assert!(tools_url.ends_with("/v1/tools"), "{tools_url}");
    assert!(
        d.callback
            .mcp_url
            .as_deref()
            .is_some_and(|u| u.ends_with("/mcp"))
    );

    // The tools it is offered are an agent's, within one mission.
    let (status, list) = app
        .request(Method::GET, "/v1/tools", None, Some(&token))
        .await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let names: Vec<&str> = list["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    for want in [
        "my_task",
        "blackboard_write",
        "blackboard_read",
        "add_subtasks",
        "mission_status",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
    for hidden in ["create_mission", "approve_plan", "list_missions"] {
        assert!(
            !names.contains(&hidden),
            "{hidden} offered to an attempt: {names:?}"
        );
    }

    let mine = ok(&app, &token, "my_task", json!({})).await;
    assert_eq!(mine["task"]["key"], "a", "{mine}");
    assert_eq!(mine["agent_id"], d.agent_id.as_str());
    assert_eq!(mine["mission_id"], id);

    // Confined to its mission, through tools and through REST.
    let (status, body) = tool(
        &app,
        &token,
        "mission_status",
        json!({"mission_id": other_id}),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = app
        .request(
            Method::GET,
            &format!("/v1/missions/{other_id}"),
            None,
            Some(&token),
        )
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = app
        .request(Method::GET, "/v1/missions", None, Some(&token))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
    let (status, body) = app
        .request(
            Method::GET,
            &format!("/v1/missions/{id}"),
            None,
            Some(&token),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");

    // The blackboard: writes, compare-and-set, reads; each write an event by the agent.
    let w1 = ok(
        &app,
        &token,
        "blackboard_write",
        json!({"key": "notes", "value": {"n": 1}, "expected_version": 0}),
    )
    .await;
    assert_eq!(w1["version"], 1, "{w1}");
    let (status, body) = tool(
        &app,
        &token,
        "blackboard_write",
        json!({"key": "notes", "value": {"n": 9}, "expected_version": 0}),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "version_conflict");
    assert_eq!(body["error"]["details"]["current_version"], 1);
    let w2 = ok(
        &app,
        &token,
        "blackboard_write",
        json!({"key": "notes", "value": {"n": 2}, "expected_version": 1}),
    )
    .await;
    assert_eq!(w2["version"], 2);
    let read = ok(&app, &token, "blackboard_read", json!({"key": "notes"})).await;
    assert_eq!(read["value"], json!({"n": 2}));
    assert_eq!(read["updated_by"], format!("agent:{}", d.agent_id));
    ok(
        &app,
        &token,
        "blackboard_write",
        json!({"key": "scratch", "value": "x"}),
    )
    .await;
    let gone = ok(
        &app,
        &token,
        "blackboard_delete",
        json!({"key": "scratch", "expected_version": 1}),
    )
    .await;
    assert!(gone["value"].is_null(), "{gone}");
    let listed = ok(&app, &token, "blackboard_list", json!({})).await;
    assert_eq!(listed["count"], 1, "{listed}");
    // A key deleted and written again keeps counting: no ABA on the version.
    let (status, body) = tool(
        &app,
        &token,
        "blackboard_write",
        json!({"key": "scratch", "value": 1, "expected_version": 0}),
    )
    .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    // Bad input is refused and changes nothing.
    let (status, body) = tool(
        &app,
        &token,
        "blackboard_write",
        json!({"key": "", "value": 1}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = tool(&app, &token, "blackboard_write", json!({"key": "k"})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let written = events_of(&app, id, "blackboard.written").await;
    assert_eq!(written.len(), 3, "{written:?}");
    assert!(
        written
            .iter()
            .all(|e| e["actor"] == format!("agent:{}", d.agent_id))
    );
    assert_eq!(events_of(&app, id, "blackboard.deleted").await.len(), 1);

    // Discovered work: a successor of the current task, in an autonomous mission at once.
    let extra = json!({"id": "extra", "title": "Check the sources", "task_type": "research",
                       "required_skills": ["research"],
                       "success_criteria": [{"description": "checked", "must_pass": true}],
                       "estimated_cost": 0.01});
    let (status, body) = tool(
        &app,
        &token,
        "add_subtasks",
        json!({"tasks": [extra.clone()], "reason": ""}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let (status, body) = tool(
        &app,
        &token,
        "add_subtasks",
        json!({"tasks": [{"id": "b", "title": "dup", "task_type": "research"}], "reason": "dup"}),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    let added = ok(
        &app,
        &token,
        "add_subtasks",
        json!({"tasks": [extra], "reason": "the sources disagree"}),
    )
    .await;
    let extra_task = added["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["key"] == "extra")
        .cloned()
        .expect("extra added");
    assert_eq!(extra_task["depends_on"], json!(["a"]), "{added}");
    assert_eq!(added["plan_version"], 2, "{added}");
    let extended = events_of(&app, id, "plan.extended").await;
    assert_eq!(extended.len(), 1);
    assert_eq!(extended[0]["payload"]["added"], json!(["extra"]));
    assert_eq!(extended[0]["actor"], format!("agent:{}", d.agent_id));

    // The next dispatches carry the blackboard; the finished attempt's token acts no more.
    succeed(&app.http, &d, json!({"text": "a done"}), 0.01).await;
    let (status, body) = tool(&app, &token, "my_task", json!({})).await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    assert_eq!(body["error"]["code"], "stale_attempt");
    let (status, body) = app
        .request(
            Method::PUT,
            &format!("/v1/missions/{id}/blackboard/k"),
            Some(json!({"value": 1})),
            Some(&token),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let mut seen = 0;
    for n in 2..=4 {
        let next = worker.dispatch(n).await;
        let notes = next
            .blackboard
            .get("notes")
            .expect("the snapshot carries the notes");
        assert_eq!(notes.version, 2);
        assert_eq!(notes.value, json!({"n": 2}));
        assert!(
            !next.blackboard.contains_key("scratch"),
            "deleted keys are not sent"
        );
        seen += 1;
        succeed(&app.http, &next, json!({"text": "done"}), 0.01).await;
    }
    assert_eq!(seen, 3);
    app.wait_for_status(id, &["completed"]).await;
    // Once finished, the blackboard can be read but not changed.
    let (status, body) = app
        .request(
            Method::PUT,
            &format!("/v1/missions/{id}/blackboard/k"),
            Some(json!({"value": 1})),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{body}");
    let (status, body) = app
        .request(
            Method::PUT,
            &format!("/v1/missions/{id}/blackboard/k"),
            Some(json!({"value": 1})),
            Some(&app.token),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let (status, body) = app.get(&format!("/v1/missions/{id}/blackboard")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["keys"].as_array().unwrap().len(), 1, "{body}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovered_work_waits_for_approval_in_an_approve_mission() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 2).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "approve", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap();
    let (status, body) = app
        .post(&format!("/v1/missions/{id}/approve"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let d = worker.dispatch(1).await;
    let child = json!({"id": "side", "title": "Side check", "task_type": "research",
                       "required_skills": ["research"],
                       "success_criteria": [{"description": "ok", "must_pass": true}]});
    let added = ok(
        &app,
        &d.callback.token,
        "add_subtasks",
        json!({"tasks": [child], "placement": "child", "reason": "found a gap"}),
    )
    .await;
    assert_eq!(added["status"], "awaiting_approval", "{added}");
    // A child holds back whatever waited for the current task.
    let b = added["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["key"] == "b")
        .cloned()
        .unwrap();
    let deps: Vec<&str> = b["depends_on"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    assert!(deps.contains(&"a") && deps.contains(&"side"), "{b}");
    let ev = events_of(&app, id, "plan.extended").await;
    assert_eq!(ev[0]["payload"]["needs_approval"], true);
    // The running task goes on; a person approves the change; everything finishes.
    succeed(&app.http, &d, json!({"text": "a"}), 0.0).await;
    let (status, body) = app
        .post(&format!("/v1/missions/{id}/approve"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let mut n = 2;
    loop {
        let view = app.get(&format!("/v1/missions/{id}")).await.1;
        if view["status"] != "executing" {
            break;
        }
        if worker.count() >= n {
            let next = worker.dispatch(n).await;
            succeed(&app.http, &next, json!({"text": "ok"}), 0.0).await;
            n += 1;
        } else {
            wait_until("a dispatch or the mission's end", || async {
                let v = app.get(&format!("/v1/missions/{id}")).await.1;
                (worker.count() >= n || v["status"] != "executing").then_some(())
            })
            .await;
        }
    }
    let done = app
        .wait_for_status(id, &["completed", "awaiting_review"])
        .await;
    assert_eq!(done["tasks"].as_array().unwrap().len(), 4, "{done}");
    app.stop().await;
}

/// Runs `tests/mcp/agent_client.py` with `script`; returns its outcomes.
async fn mcp_agent(python: &std::path::Path, app: &TestApp, script: Value) -> Vec<Value> {
    let run = tokio::process::Command::new(python)
        .arg(crate::peers::root().join("tests/mcp/agent_client.py"))
        .arg(format!("{}/mcp", app.url))
        .arg(script.to_string())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(180), run)
        .await
        .expect("the MCP client finished within 180 s")
        .expect("the MCP client ran");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "client failed: {stderr}");
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {stderr}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mcp_python_sdk_acts_as_an_agent_with_its_attempt_token() {
    let Some(python) = crate::peers::mcp_python() else {
        return;
    };
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 2).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap().to_owned();
    let d = worker.dispatch(1).await;
    let (_, op) = app.post("/v1/tokens", json!({"role": "operator"})).await;
    let (status, ag) = app
        .post(
            "/v1/tokens",
            json!({"role": "agent", "agent_id": d.agent_id}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{ag}");
    let extra = json!({"id": "extra", "title": "More", "task_type": "research",
                       "required_skills": ["research"],
                       "success_criteria": [{"description": "ok", "must_pass": true}]});
    let script = json!({
        "tokens": {"attempt": d.callback.token, "operator": op["token"], "agent": ag["token"]},
        "steps": [
            {"token": "attempt", "list": true},
            {"token": "operator", "list": true},
            {"token": "agent", "list": true},
            {"token": "attempt", "tool": "my_task"},
            {"token": "attempt", "tool": "blackboard_write", "arguments": {"key": "k", "value": 1, "expected_version": 0}},
            {"token": "attempt", "tool": "blackboard_write", "arguments": {"key": "k", "value": 2, "expected_version": 0}},
            {"token": "attempt", "tool": "reserve_scope", "arguments": {"scope": "docs/*"}},
            {"token": "attempt", "tool": "add_subtasks", "arguments": {"tasks": [extra], "reason": "found more"}},
            {"token": "agent", "tool": "blackboard_read", "arguments": {"key": "k", "mission_id": id}},
        ]
    });
    let out = mcp_agent(&python, &app, script).await;
    let names = |i: usize| -> Vec<String> {
        out[i]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{}", out[i]))
            .iter()
            .map(|t| t.as_str().unwrap().to_owned())
            .collect()
    };
    let (attempt, operator, agent) = (names(0), names(1), names(2));
    assert!(
        attempt.contains(&"blackboard_write".to_owned()),
        "{attempt:?}"
    );
    assert!(
        !attempt.contains(&"list_missions".to_owned()),
        "{attempt:?}"
    );
    assert!(
        operator.contains(&"create_mission".to_owned())
            && !operator.contains(&"blackboard_write".to_owned()),
        "{operator:?}"
    );
    assert_ne!(operator, agent);
    assert!(
        agent.contains(&"list_missions".to_owned()),
        "an agent token outside a task may list: {agent:?}"
    );
    assert_eq!(out[3]["ok"], true, "{}", out[3]);
    assert_eq!(out[3]["result"]["task"]["key"], "a");
    assert_eq!(out[4]["ok"], true, "{}", out[4]);
    assert_eq!(
        out[5]["ok"], false,
        "a stale version is refused: {}",
        out[5]
    );
    assert_eq!(
        out[5]["result"]["error"]["code"], "version_conflict",
        "{}",
        out[5]
    );
    assert_eq!(out[6]["ok"], true, "{}", out[6]);
    assert_eq!(out[7]["ok"], true, "{}", out[7]);
    assert_eq!(out[8]["ok"], true, "{}", out[8]);
    assert_eq!(out[8]["result"]["value"], 1);

    // Once the attempt has ended, its token is refused.
    succeed(&app.http, &d, json!({"text": "a"}), 0.0).await;
    let stale = mcp_agent(
        &python,
        &app,
        json!({
            "tokens": {"attempt": d.callback.token},
            "steps": [{"token": "attempt", "tool": "my_task"}]
        }),
    )
    .await;
    assert!(
        stale[0].get("refused").is_some() || stale[0]["ok"] == false,
        "{}",
        stale[0]
    );
    app.stop().await;
}

/// An agent token of `agent`.
async fn agent_token(app: &TestApp, agent: &str) -> String {
    let (s, b) = app
        .post("/v1/tokens", json!({"role": "agent", "agent_id": agent}))
        .await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    b["token"].as_str().expect("token").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_follows_its_mission_handles_its_inbox_releases_and_tenders() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 2).await;
    // A second research agent (the better fit: research is all it does).
    let (s, b) = app
        .post(
            "/v1/agents",
            json!({"agent_id": "scout", "role": "researcher", "skills": ["research"],
                   "endpoint_url": worker.url, "max_concurrency": 2}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().unwrap().to_owned();
    let d = worker.dispatch(1).await;
    assert_eq!(d.agent_id, "scout");
    let token = d.callback.token.clone();

    // mission_events: the log so far, filtered by kind prefix…
    let feed = ok(
        &app,
        &token,
        "mission_events",
        json!({"after": 0, "kinds": ["task.*"]}),
    )
    .await;
    let kinds: Vec<&str> = feed["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["kind"].as_str())
        .collect();
    assert!(
        !kinds.is_empty() && kinds.iter().all(|k| k.starts_with("task.")),
        "{kinds:?}"
    );
    let cursor = feed["next_after"].as_i64().expect("next_after");
    // …and a long poll that returns when something happens.
    let poll = {
        let (app_url, http, token) = (app.url.clone(), app.http.clone(), token.clone());
        tokio::spawn(async move {
            call(
                &http,
                &app_url,
                Method::POST,
                "/v1/tools/mission_events",
                Some(json!({"after": cursor, "wait_secs": 20, "kinds": ["blackboard.*"]})),
                Some(&token),
            )
            .await
        })
    };
    ok(
        &app,
        &token,
        "blackboard_write",
        json!({"key": "k", "value": 1}),
    )
    .await;
    let (s, woke) = poll.await.expect("poll");
    assert_eq!(s, StatusCode::OK, "{woke}");
    assert_eq!(
        woke["result"]["events"][0]["kind"], "blackboard.written",
        "{woke}"
    );

    // release_scope: what reserve_scope took; twice is refused.
    let held = ok(&app, &token, "reserve_scope", json!({"scope": "shared-db"})).await;
    let reservation = held["reservation_id"].clone();
    let released = ok(
        &app,
        &token,
        "release_scope",
        json!({"reservation_id": reservation}),
    )
    .await;
    assert_eq!(released["state"], "released", "{released}");
    let (s, again) = tool(
        &app,
        &token,
        "release_scope",
        json!({"reservation_id": reservation}),
    )
    .await;
    assert!(s.is_client_error(), "{s}: {again}");

    // message_read and message_ack on a message another agent sent.
    let researcher = agent_token(&app, "researcher").await;
    ok(
        &app,
        &researcher,
        "agent_message",
        json!({"to": "scout", "performative": "INFORM", "subject": "Source",
               "content": {"text": "the archive opens at nine"}}),
    )
    .await;
    let inbox = ok(&app, &token, "inbox", json!({"unread": true})).await;
    let message = inbox["messages"][0]["message"]["id"].clone();
    assert!(message.is_string(), "{inbox}");
    let read = ok(&app, &token, "message_read", json!({"message_id": message})).await;
    assert_eq!(read["state"], "read", "{read}");
    let acked = ok(&app, &token, "message_ack", json!({"message_id": message})).await;
    assert_eq!(acked["state"], "acked", "{acked}");
    let (s, twice) = tool(&app, &token, "message_ack", json!({"message_id": message})).await;
    assert!(s.is_client_error(), "{s}: {twice}");
    let unread = ok(&app, &token, "inbox", json!({"unread": true})).await;
    assert_eq!(
        unread["messages"].as_array().map(Vec::len),
        Some(0),
        "{unread}"
    );

    // contract_net_initiate for the next task, a proposal, contract_net_award.
    let b_id = task(&app, &id, "b").await["id"].clone();
    let tender = ok(
        &app,
        &token,
        "contract_net_initiate",
        json!({"task_id": b_id, "window_ms": 60000}),
    )
    .await;
    let cfp = tender["cfp_id"].clone();
    let proposal = ok(
        &app,
        &researcher,
        "contract_net_propose",
        json!({"cfp_id": cfp, "estimated_effort": 2, "confidence": 0.9}),
    )
    .await;
    let awarded = ok(
        &app,
        &token,
        "contract_net_award",
        json!({"cfp_id": cfp, "winning_proposal_id": proposal["proposal_id"]}),
    )
    .await;
    assert_eq!(awarded["status"], "awarded", "{awarded}");
    assert_eq!(awarded["winner_agent_id"], "researcher", "{awarded}");
    // The award pins the task: once a is done, b goes to the winner.
    succeed(&app.http, &d, json!({"text": "a"}), 0.0).await;
    let next = worker.dispatch(2).await;
    assert_eq!(
        (next.task.key.as_str(), next.agent_id.as_str()),
        ("b", "researcher")
    );
    app.stop().await;
}

/// Every agent tool of the catalogue is called as an agent by some test:
/// its name, quoted, in the agent tests or the MCP agent client.
#[test]
fn every_agent_tool_is_called_by_a_test() {
    let root = env!("CARGO_MANIFEST_DIR");
    let mut sources = String::new();
    let dir = std::path::Path::new(root).join("tests/it");
    for entry in std::fs::read_dir(&dir).expect("tests/it") {
        let path = entry.expect("entry").path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("agent_") || name == "tool_policy.rs" {
            sources.push_str(&std::fs::read_to_string(&path).expect("read"));
        }
    }
    sources.push_str(
        &std::fs::read_to_string(std::path::Path::new(root).join("tests/mcp/agent_client.py"))
            .expect("agent_client.py"),
    );
    let missing: Vec<&str> = coordinator::tools::all()
        .iter()
        .filter(|t| t.group != coordinator::tools::Group::Mission)
        .map(|t| t.name)
        .filter(|n| !sources.contains(&format!("\"{n}\"")) && !sources.contains(&format!("'{n}'")))
        .collect();
    assert!(missing.is_empty(), "agent tools no test calls: {missing:?}");
}
