//! The reference LLM worker as an agent, end to end: the real service, the
//! real LLM worker server, and a scripted OpenAI-compatible server
//! ([`crate::scripted_model`]) whose answers are a script of tool calls.

use std::{net::SocketAddr, time::Duration};

use coordinator::{
    api::Settings,
    worker::llm::{LlmWorker, LlmWorkerConfig},
};
use serde_json::{Value, json};

use crate::{helpers::*, scripted_model::*};

/// A mission of one research task (only the `researcher` agent has the skill).
fn one_task_plan() -> Value {
    json!({"tasks": [{"id": "notes", "title": "Take notes", "task_type": "research",
        "required_skills": ["research"], "depends_on": [],
        "success_criteria": [{"description": "done", "must_pass": true}],
        "estimated_cost": 0.01}]})
}

async fn worker_for(model: &ScriptedModel, max_turns: u32) -> LlmWorker {
    let mut cfg = LlmWorkerConfig::new(model.url.clone());
    cfg.model = "scripted".into();
    cfg.heartbeat_secs = 1;
    cfg.max_turns = max_turns;
    LlmWorker::spawn(SocketAddr::from(([127, 0, 0, 1], 0)), cfg)
        .await
        .expect("worker")
}

/// The service, allowing one-task plans, with `max_attempts` per task.
async fn service(max_attempts: i32) -> TestApp {
    let mut settings: Settings = test_settings();
    settings.planning.rules.min_tasks = 1;
    settings.planning.max_attempts = max_attempts;
    spawn_app_on(&fresh_database().await, settings).await
}

async fn events(app: &TestApp, mission: &str) -> Vec<Value> {
    let (_, page) = app
        .get(&format!("/v1/missions/{mission}/events?limit=1000"))
        .await;
    page["events"].as_array().cloned().unwrap_or_default()
}

/// my_task, blackboard_write, blackboard_read, then finish.
fn uses_the_blackboard(turn: usize, _: &Value) -> Value {
    match turn {
        0 => calling(turn, "my_task", json!({})),
        1 => calling(
            turn,
            "blackboard_write",
            json!({"key": "findings", "value": {"facts": ["browns", "greens"]}}),
        ),
        2 => calling(turn, "blackboard_read", json!({"key": "findings"})),
        _ => calling(
            turn,
            "finish",
            json!({"result": "Composting needs browns and greens.", "summary": "noted"}),
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_llm_worker_calls_agent_tools_and_finishes() {
    let model = ScriptedModel::spawn(uses_the_blackboard).await;
    let worker = worker_for(&model, 10).await;
    let app = service(3).await;
    app.register_fleet(&worker.url(), 1).await;
    let m = app
        .create_mission(
            json!({"goal": "Learn composting", "autonomy": "autonomous", "plan": one_task_plan()}),
        )
        .await;
    let id = m["id"].as_str().expect("id");
    let done = app.wait_for_status(id, &["completed", "failed"]).await;
    assert_eq!(done["status"], "completed", "{done}");
    let output = &done["tasks"][0]["output"];
    assert_eq!(
        output["text"], "Composting needs browns and greens.",
        "{output}"
    );
    assert_eq!(output["turns"], 4, "{output}");
    assert_eq!(output["tool_calls"], 3, "{output}");

    // The write happened as the agent, through its attempt token.
    let (status, entry) = app
        .get(&format!("/v1/missions/{id}/blackboard/findings"))
        .await;
    assert_eq!(status, 200, "{entry}");
    assert_eq!(entry["updated_by"], "agent:researcher", "{entry}");
    assert_eq!(entry["value"], json!({"facts": ["browns", "greens"]}));
    let events = events(&app, id).await;
    let written = events
        .iter()
        .find(|e| e["kind"] == "blackboard.written")
        .expect("a blackboard.written event");
    assert_eq!(written["actor"], "agent:researcher", "{written}");

    // The model saw each tool's result, the read one included.
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    let last = requests[3]["messages"].as_array().expect("messages");
    let tool_answers: Vec<&str> = last
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(tool_answers.len(), 3, "{last:?}");
    assert!(
        tool_answers[0].contains("Take notes"),
        "{}",
        tool_answers[0]
    );
    assert!(tool_answers[2].contains("greens"), "{}", tool_answers[2]);
    let offered: Vec<&str> = requests[0]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    for name in ["my_task", "blackboard_write", "blackboard_read", "finish"] {
        assert!(offered.contains(&name), "{name} not offered: {offered:?}");
    }
    app.stop().await;
}

/// Reads its task forever, never finishing.
fn never_finishes(turn: usize, _: &Value) -> Value {
    calling(turn, "my_task", json!({}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_never_finishes_fails_after_exactly_max_turns() {
    let model = ScriptedModel::spawn(never_finishes).await;
    let worker = worker_for(&model, 3).await;
    let app = service(1).await;
    app.register_fleet(&worker.url(), 1).await;
    let m = app
        .create_mission(
            json!({"goal": "Loop forever", "autonomy": "autonomous", "plan": one_task_plan()}),
        )
        .await;
    let id = m["id"].as_str().expect("id").to_owned();
    // The first attempt's failure, whatever the escalation ladder does next.
    let failure = wait_until("the attempt's failure", || async {
        events(&app, &id).await.into_iter().find(|e| {
            e["payload"]["error"]
                .as_str()
                .is_some_and(|err| err.contains("used all 3 turns"))
        })
    })
    .await;
    assert_eq!(failure["payload"]["failure_kind"], "quality", "{failure}");
    // Exactly three model calls for that attempt: conversations of 2, 4 and
    // 6 messages; a later request (another attempt) starts over at 2.
    let sizes: Vec<usize> = model
        .requests()
        .iter()
        .map(|r| r["messages"].as_array().map_or(0, Vec::len))
        .collect();
    assert!(sizes.len() >= 3, "{sizes:?}");
    assert_eq!(sizes[..3], [2, 4, 6], "{sizes:?}");
    if let Some(next) = sizes.get(3) {
        assert_eq!(*next, 2, "a fourth turn in one attempt: {sizes:?}");
    }
    assert!(worker.stats().failed >= 1);
    app.stop().await;
}

/// Answers in plain text, as a model without function calling does.
fn plain_text(_: usize, _: &Value) -> Value {
    saying("Browns and greens, three to one.")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_text_answer_is_the_result() {
    let model = ScriptedModel::spawn(plain_text).await;
    let worker = worker_for(&model, 10).await;
    let app = service(3).await;
    app.register_fleet(&worker.url(), 1).await;
    let m = app
        .create_mission(
            json!({"goal": "Compost", "autonomy": "autonomous", "plan": one_task_plan()}),
        )
        .await;
    let done = app
        .wait_for_status(m["id"].as_str().expect("id"), &["completed", "failed"])
        .await;
    assert_eq!(done["status"], "completed", "{done}");
    let output = &done["tasks"][0]["output"];
    assert_eq!(
        output["text"], "Browns and greens, three to one.",
        "{output}"
    );
    assert_eq!(output["turns"], 1, "{output}");
    assert_eq!(model.requests().len(), 1);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(worker.stats().calls, 1);
    app.stop().await;
}
