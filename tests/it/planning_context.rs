//! The LLM planner against a small model's context: a scripted
//! OpenAI-compatible server (axum on 127.0.0.1) that, like llama.cpp's
//! servers at their default `n_ctx` of 4,096, refuses with HTTP 400 and
//! llama-cpp-python's error text any request whose prompt plus `max_tokens`
//! exceeds its context. The planner must retry smaller and succeed, and a
//! model that never gives a valid plan must leave the mission with the
//! generic method's plan, not `failed`.

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{Json, Router, extract::State, http::StatusCode, routing::post};
use coordinator::planning::llm::{LlmConfig, LlmPlanner, ResponseFormat};
use serde_json::{Value, json};

use crate::helpers::*;

/// The scripted server's context size, llama.cpp's default.
const CONTEXT: u64 = 4096;

/// A goal no built-in method matches.
const ODD_GOAL: &str = "Zorble the frobnitz quux";

/// What the scripted model answers to an accepted request.
type Answer = Arc<dyn Fn(&Value) -> Value + Send + Sync>;

/// One request as the server saw it: its body and the status it answered.
#[derive(Debug, Clone)]
struct Seen {
    body: Value,
    status: u16,
}

/// A chat-completions server with a 4,096-token context.
struct SmallModel {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    task: tokio::task::JoinHandle<()>,
}

impl SmallModel {
    async fn spawn(answer: impl Fn(&Value) -> Value + Send + Sync + 'static) -> Self {
        let answer: Answer = Arc::new(answer);
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let app = Router::new()
            .route("/v1/chat/completions", post(complete))
            .with_state((answer, seen.clone()));
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .expect("bind");
        let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.ok();
        });
        SmallModel { url, seen, task }
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }
}

impl Drop for SmallModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The prompt's tokens as a real tokenizer would roughly count them: four
/// bytes of message text a token, plus a few per message.
fn prompt_tokens(body: &Value) -> u64 {
    body["messages"].as_array().map_or(0, |messages| {
        messages
            .iter()
            .map(|m| m["content"].as_str().map_or(0, |c| c.len() as u64 / 4) + 4)
            .sum()
    })
}

async fn complete(
    State((answer, seen)): State<(Answer, Arc<Mutex<Vec<Seen>>>)>,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    let prompt = prompt_tokens(&body);
    // An absent max_tokens is the rest of the context.
    let completion = body["max_tokens"].as_u64().unwrap_or(CONTEXT);
    let (status, reply) = if prompt + completion > CONTEXT {
        (
            StatusCode::BAD_REQUEST,
            json!({"error": {
                "message": format!(
                    "This model's maximum context length is {CONTEXT} tokens. However, you requested {} tokens ({prompt} in the messages, {completion} in the completion). Please reduce the length of the messages or completion.",
                    prompt + completion
                ),
                "type": "invalid_request_error", "param": "messages",
                "code": "context_length_exceeded"
            }}),
        )
    } else {
        (StatusCode::OK, answer(&body))
    };
    seen.lock().expect("lock").push(Seen {
        body,
        status: status.as_u16(),
    });
    (status, Json(reply))
}

/// A chat completion whose text is `content`, cut at the token limit when `cut`.
fn completion(content: &str, cut: bool) -> Value {
    json!({
        "model": "small-model",
        "choices": [{"index": 0, "finish_reason": if cut { "length" } else { "stop" },
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 900, "completion_tokens": 300}
    })
}

/// A service planning with the small model, its max_tokens left at the
/// default (4,096: the whole context) and no context size configured.
async fn app_with(model: &SmallModel) -> TestApp {
    let mut cfg = LlmConfig::new(&model.url, "small-model");
    cfg.response_format = ResponseFormat::JsonObject;
    cfg.retry_base = Duration::from_millis(20);
    cfg.max_repairs = 1;
    assert_eq!(cfg.max_tokens, Some(4096));
    assert_eq!(cfg.context_tokens, None);
    let mut settings = test_settings();
    settings.planning.llm = Some(Arc::new(LlmPlanner::new(cfg).expect("planner")));
    settings.planning.max_planning_attempts = 1;
    spawn_app_on(&fresh_database().await, settings).await
}

async fn events_of(app: &TestApp, id: &str, kind: &str) -> Vec<Value> {
    let (_, page) = app.get(&format!("/v1/missions/{id}/events")).await;
    page["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["kind"] == kind)
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_too_big_for_the_context_is_retried_smaller_and_plans() {
    let model = SmallModel::spawn(|_| completion(&chain_plan().to_string(), false)).await;
    let app = app_with(&model).await;
    let worker = spawn_worker(5).await;
    app.register_fleet(&worker.url(), 2).await;
    let m = app.create_mission(json!({"goal": ODD_GOAL})).await;
    assert_eq!(m["status"], "planning");
    let id = m["id"].as_str().expect("id");
    let ready = app
        .wait_for_status(id, &["awaiting_approval", "failed"])
        .await;
    assert_eq!(ready["status"], "awaiting_approval", "{ready}");
    assert_eq!(ready["planner"], "llm");
    let seen = model.seen();
    // The first request asked for the whole context as its answer and was
    // refused; the retry asked for what the named limit leaves, and fit.
    assert_eq!(
        seen.iter().map(|s| s.status).collect::<Vec<_>>(),
        [400, 200]
    );
    assert_eq!(seen[0].body["max_tokens"], 4096);
    let retry = &seen[1].body;
    let cap = retry["max_tokens"].as_u64().expect("max_tokens");
    assert!(cap >= 256 && prompt_tokens(retry) + cap <= CONTEXT, "{cap}");
    let calls = events_of(&app, id, "plan.llm_call").await;
    assert_eq!(calls[0]["payload"]["outcome"], "plan");
    assert_eq!(calls[0]["payload"]["usage"]["calls"], 2);
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_never_plans_leaves_the_generic_plan_for_a_person() {
    // It rambles to its answer cap every time: the repair round must echo
    // that answer within the context, and the mission must not fail.
    let model = SmallModel::spawn(|body| {
        let cap = body["max_tokens"].as_u64().unwrap_or(CONTEXT).min(3000) as usize;
        completion(
            &"I think the plan is to zorble. ".repeat(cap * 4 / 31),
            true,
        )
    })
    .await;
    let app = app_with(&model).await;
    let worker = spawn_worker(5).await;
    app.register_fleet(&worker.url(), 2).await;
    let m = app.create_mission(json!({"goal": ODD_GOAL})).await;
    let id = m["id"].as_str().expect("id");
    let ready = app
        .wait_for_status(id, &["awaiting_approval", "failed"])
        .await;
    // An `approve` mission waits for a person with the generic plan.
    assert_eq!(ready["status"], "awaiting_approval", "{ready}");
    assert_eq!(ready["planner"], "generic");
    assert!(events_of(&app, id, "plan.failed").await.is_empty());
    let created = events_of(&app, id, "plan.created").await;
    let fallback = &created[0]["payload"]["details"]["fallback"];
    assert_eq!(fallback["from"], "llm", "{created:?}");
    assert_eq!(fallback["to"], "generic");
    assert_eq!(fallback["code"], "llm_invalid_plan", "{fallback}");
    let reason = created[0]["payload"]["provenance"]["reason"]
        .as_str()
        .expect("reason");
    assert!(
        reason.contains("LLM planner gave no usable plan") && reason.contains("generic"),
        "{reason}"
    );
    // One refusal taught the limit; the repair round, long echo and all, fit.
    let seen = model.seen();
    assert_eq!(
        seen.iter().map(|s| s.status).collect::<Vec<_>>(),
        [400, 200, 200],
        "{:?}",
        seen.iter()
            .map(|s| &s.body["max_tokens"])
            .collect::<Vec<_>>()
    );
    let repair = &seen[2].body;
    assert_eq!(repair["messages"].as_array().expect("messages").len(), 4);
    app.stop().await;
}
