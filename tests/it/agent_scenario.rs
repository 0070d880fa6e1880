//! Agents coordinating one mission through their tools, end to end: two
//! reference LLM workers (one per agent) against one scripted
//! OpenAI-compatible model. Agent `alpha` reserves a scope, writes the
//! blackboard, REQUESTs work of `beta`, adds a discovered task and hands its
//! task to `beta`; `beta` AGREEs (the request becomes a task it completes)
//! and finishes the handed-over task; `alpha` raises a blocker on the
//! discovered task that a stakeholder resolves; the mission completes and
//! the event log names the agent behind every step.

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    sync::{Arc, Mutex},
};

use axum::http::StatusCode;
use coordinator::{
    api::Settings,
    worker::llm::{LlmWorker, LlmWorkerConfig},
};
use reqwest::Method;
use serde_json::{Value, json};

use crate::{helpers::*, scripted_model::*};

/// Who is asked and about what, read from the prompt the worker built.
fn speaker(body: &Value) -> (String, String, bool) {
    let system = texts(body, "system").concat();
    let user = texts(body, "user").concat();
    let between = |text: &str, start: &str, end: &str| {
        text.split_once(start)
            .and_then(|(_, rest)| rest.split_once(end))
            .map(|(s, _)| s.to_owned())
            .unwrap_or_default()
    };
    let agent = between(&system, "You are agent `", "`");
    let key = between(&user, "\nKey: ", "\n");
    let feedback = user.contains("## Feedback from before this attempt");
    (agent, key, feedback)
}

/// The first open request waiting for an answer in an `inbox` answer.
fn waiting_request(answer: &Value) -> Option<String> {
    answer["awaiting_your_answer"][0]["id"]
        .as_str()
        .map(str::to_owned)
}

/// The model's side of the scenario: what each agent does on each task.
fn script(turn: usize, body: &Value) -> Value {
    let (agent, key, feedback) = speaker(body);
    let finish = |result: &str| calling(turn, "finish", json!({ "result": result }));
    match (agent.as_str(), key.as_str(), feedback) {
        ("alpha", "survey", _) => match turn {
            0 => calling(turn, "my_task", json!({})),
            1 => calling(
                turn,
                "reserve_scope",
                json!({"scope": "customer-db", "note": "the survey reads it"}),
            ),
            2 => calling(
                turn,
                "blackboard_write",
                json!({"key": "survey", "value": {"segments": ["smb", "enterprise"]}}),
            ),
            3 => calling(
                turn,
                "agent_message",
                json!({"to": "beta", "performative": "REQUEST",
                       "subject": "Write a brief per segment",
                       "content": {"description": "One paragraph per segment of the survey.",
                                   "required_skills": ["research"]}}),
            ),
            4 => calling(
                turn,
                "add_subtasks",
                json!({"reason": "the survey's figures need checking before anyone uses them",
                       "tasks": [{"id": "fact_check", "title": "Check the survey's figures",
                                  "task_type": "research", "required_skills": ["research"],
                                  "success_criteria": [{"description": "checked", "must_pass": true}]}]}),
            ),
            _ => calling(
                turn,
                "handoff_task",
                json!({"to_agent": "beta",
                       "context_summary": "The segments are on the blackboard under `survey`; summarise them."}),
            ),
        },
        ("beta", "survey", true) => match turn {
            0 => calling(turn, "inbox", json!({})),
            1 => match waiting_request(&last_tool_answer(body)) {
                Some(request) => calling(
                    turn,
                    "agent_message",
                    json!({"to": "alpha", "performative": "AGREE", "reply_to": request,
                           "content": {"text": "I will write the briefs."}}),
                ),
                None => saying("no request in the inbox"),
            },
            2 => calling(turn, "blackboard_read", json!({"key": "survey"})),
            _ => finish("Two segments: smb and enterprise."),
        },
        ("alpha", "fact_check", false) => calling(
            turn,
            "raise_blocker",
            json!({"description": "Which source should the figures be checked against?",
                   "options": [{"label": "Public data", "description": "Free, a year old"},
                               {"label": "Buy a report", "description": "Current, costs money"}],
                   "recommended_option": "Public data"}),
        ),
        ("alpha", "fact_check", true) => finish("Checked against public data: the figures hold."),
        ("beta", "draft", _) => finish("Draft: what each segment needs from us."),
        (_, key, _) if key.starts_with("req-") => {
            finish("Briefs: smb wants price, enterprise wants SSO.")
        }
        _ => saying(&format!("unexpected: agent {agent}, task {key}")),
    }
}

/// An LLM worker for one agent, talking to the scripted model.
async fn worker(model: &ScriptedModel) -> LlmWorker {
    let mut cfg = LlmWorkerConfig::new(model.url.clone());
    cfg.model = "scripted".into();
    cfg.heartbeat_secs = 1;
    LlmWorker::spawn(SocketAddr::from(([127, 0, 0, 1], 0)), cfg)
        .await
        .expect("worker")
}

/// The whole workspace log, oldest first.
async fn workspace_log(app: &TestApp) -> Vec<Value> {
    let mut all = Vec::new();
    let mut after = 0;
    loop {
        let (status, page) = app
            .get(&format!("/v1/events?after={after}&limit=500"))
            .await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let events = page["events"].as_array().cloned().unwrap_or_default();
        if events.is_empty() {
            return all;
        }
        after = page["next_after"].as_i64().expect("next_after");
        all.extend(events);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_coordinate_a_mission_through_their_tools() {
    // Turns the script did not foresee (it answers them in plain text).
    let unforeseen = Arc::new(Mutex::new(Vec::<String>::new()));
    let seen = unforeseen.clone();
    let model = ScriptedModel::spawn(move |turn, body| {
        let answer = script(turn, body);
        if let Some(text) = answer["choices"][0]["message"]["content"].as_str() {
            seen.lock()
                .expect("lock")
                .push(format!("turn {turn}: {text}"));
        }
        answer
    })
    .await;
    let (worker_a, worker_b) = (worker(&model).await, worker(&model).await);
    let mut settings: Settings = test_settings();
    settings.planning.rules.min_tasks = 1;
    let app = spawn_app_on(&fresh_database().await, settings).await;
    for (id, role, skills, url) in [
        ("alpha", "researcher", json!(["research"]), worker_a.url()),
        (
            "beta",
            "writer",
            json!(["research", "writing"]),
            worker_b.url(),
        ),
    ] {
        let (s, body) = app
            .post(
                "/v1/agents",
                json!({"agent_id": id, "role": role, "skills": skills,
                       "endpoint_url": url, "max_concurrency": 1}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{body}");
    }
    let (s, stakeholder) = app.post("/v1/tokens", json!({"role": "stakeholder"})).await;
    assert_eq!(s, StatusCode::CREATED, "{stakeholder}");
    let stakeholder = stakeholder["token"].as_str().expect("token").to_owned();

    let criteria = json!([{"description": "done", "must_pass": true}]);
    let plan = json!({"tasks": [
        {"id": "survey", "title": "Survey the customer segments", "task_type": "research",
         "required_skills": ["research"], "success_criteria": criteria},
        {"id": "draft", "title": "Draft the segment messages", "task_type": "writing",
         "required_skills": ["writing"], "depends_on": ["survey"], "success_criteria": criteria},
    ]});
    let m = app
        .create_mission(
            json!({"goal": "Know our customer segments", "autonomy": "autonomous",
                               "plan": plan}),
        )
        .await;
    let id = m["id"].as_str().expect("id").to_owned();

    // alpha's blocker on the task it discovered waits for a stakeholder.
    let decision = wait_until("alpha's blocker", || async {
        let (_, page) = app.get("/v1/decisions?status=pending").await;
        page["decisions"]
            .as_array()
            .and_then(|d| d.iter().find(|d| d["topic"] == "blocker").cloned())
    })
    .await;
    assert_eq!(decision["agent_id"], "alpha", "{decision}");
    assert_eq!(
        task(&app, &id, "fact_check").await["status"],
        "awaiting_human"
    );
    let (s, resolved) = app
        .request(
            Method::POST,
            "/v1/tools/decision_resolve",
            Some(json!({"decision_id": decision["id"], "outcome": "approved",
                        "option": "Public data", "rationale": "Free and good enough"})),
            Some(&stakeholder),
        )
        .await;
    assert_eq!(s, StatusCode::OK, "{resolved}");

    let done = app.wait_for_status(&id, &["completed", "failed"]).await;
    assert_eq!(done["status"], "completed", "{done}");
    let tasks: BTreeMap<String, Value> = done["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| (t["key"].as_str().unwrap_or_default().to_owned(), t.clone()))
        .collect();
    let requested = tasks
        .keys()
        .find(|k| k.starts_with("req-"))
        .cloned()
        .unwrap_or_else(|| panic!("no task from the agreed request: {done}"));
    // Who finished what: beta the handed-over survey and the work it agreed
    // to (alpha, idle and the better fit for research, would have taken it
    // but for the pin the AGREE set).
    for (key, agent) in [
        ("survey", "beta"),
        ("draft", "beta"),
        ("fact_check", "alpha"),
        (requested.as_str(), "beta"),
    ] {
        let t = &tasks[key];
        assert_eq!(t["status"], "succeeded", "{key}: {t}");
        assert_eq!(t["assigned_agent_id"], agent, "{key}: {t}");
    }
    assert!(
        tasks["fact_check"]["output"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("public data")),
        "{}",
        tasks["fact_check"]
    );

    // The log: each step, with the agent who took it as the actor.
    let log = workspace_log(&app).await;
    let by = |kind: &str, actor: &str| {
        log.iter()
            .find(|e| e["kind"] == kind && e["actor"] == actor)
            .cloned()
            .unwrap_or_else(|| {
                let kinds: Vec<String> = log
                    .iter()
                    .map(|e| format!("{} by {}", e["kind"], e["actor"]))
                    .collect();
                panic!("no {kind} by {actor} in {kinds:#?}")
            })
    };
    let reserved = by("reservation.created", "agent:alpha");
    assert_eq!(reserved["payload"]["scope"], "customer-db", "{reserved}");
    let written = by("blackboard.written", "agent:alpha");
    assert_eq!(written["payload"]["key"], "survey", "{written}");
    let opened = by("request.opened", "agent:alpha");
    assert_eq!(opened["payload"]["recipient"], "beta", "{opened}");
    let agreed = by("request.agreed", "agent:beta");
    assert_eq!(
        agreed["payload"]["added_task"],
        requested.as_str(),
        "{agreed}"
    );
    let extended = by("plan.extended", "agent:alpha");
    assert_eq!(extended["payload"]["anchor"], "survey", "{extended}");
    by("plan.extended", "agent:beta");
    let handed = by("task.handed_off", "agent:alpha");
    assert_eq!(
        (
            handed["payload"]["from"].as_str(),
            handed["payload"]["to"].as_str()
        ),
        (Some("alpha"), Some("beta")),
        "{handed}"
    );
    let raised = by("decision.requested", "agent:alpha");
    assert_eq!(raised["payload"]["category"], "operational", "{raised}");
    assert!(
        log.iter().any(|e| e["kind"] == "mission.status_changed"
            && e["payload"]["to"] == "completed"
            && e["mission_id"] == id.as_str()),
        "the mission's completion is logged"
    );

    // Each agent's attempts ended by itself (handoff, blocker) reported nothing.
    assert_eq!(worker_a.stats().handed_on, 2, "{:?}", worker_a.stats());
    assert_eq!(worker_b.stats().handed_on, 0, "{:?}", worker_b.stats());
    let unforeseen = unforeseen.lock().expect("lock").clone();
    assert!(unforeseen.is_empty(), "{unforeseen:?}");
    app.stop().await;
}
