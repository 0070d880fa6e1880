//! A scripted OpenAI-compatible chat-completions server (axum on
//! 127.0.0.1) whose answers are a script of tool calls: the model side of
//! the LLM worker's tests, mocked only at its HTTP boundary.

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
};

use axum::{Json, Router, extract::State, routing::post};
use serde_json::{Value, json};

/// What the scripted model answers on turn `n` (0-based: the number of
/// assistant turns already in the conversation) of the conversation `body`.
pub type Script = Arc<dyn Fn(usize, &Value) -> Value + Send + Sync>;

/// A scripted OpenAI-compatible chat-completions server.
pub struct ScriptedModel {
    /// Its base URL (`http://127.0.0.1:<port>/v1`).
    pub url: String,
    /// Every request body received, in order.
    requests: Arc<Mutex<Vec<Value>>>,
    task: tokio::task::JoinHandle<()>,
}

impl ScriptedModel {
    /// Serves `script` on a free port.
    pub async fn spawn(script: impl Fn(usize, &Value) -> Value + Send + Sync + 'static) -> Self {
        let script: Script = Arc::new(script);
        let requests: Arc<Mutex<Vec<Value>>> = Arc::default();
        let app = Router::new()
            .route("/v1/chat/completions", post(answer))
            .with_state((script, requests.clone()));
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .expect("bind");
        let url = format!("http://{}/v1", listener.local_addr().expect("addr"));
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.ok();
        });
        ScriptedModel {
            url,
            requests,
            task,
        }
    }

    /// Every request body received so far, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().expect("lock").clone()
    }
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(
    State((script, requests)): State<(Script, Arc<Mutex<Vec<Value>>>)>,
    Json(body): Json<Value>,
) -> Json<Value> {
    requests.lock().expect("lock").push(body.clone());
    let turn = body["messages"]
        .as_array()
        .map_or(0, |m| m.iter().filter(|m| m["role"] == "assistant").count());
    Json(script(turn, &body))
}

/// A chat completion calling `name` with `args`.
pub fn calling(turn: usize, name: &str, args: Value) -> Value {
    json!({
        "model": "scripted",
        "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": [
            {"id": format!("call_{turn}"), "type": "function",
             "function": {"name": name, "arguments": args.to_string()}}
        ]}, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 5}
    })
}

/// A chat completion answering `text`.
pub fn saying(text: &str) -> Value {
    json!({
        "model": "scripted",
        "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 5}
    })
}

/// The text of every message of `role` in a request body.
pub fn texts<'a>(body: &'a Value, role: &str) -> Vec<&'a str> {
    body["messages"]
        .as_array()
        .map(|m| {
            m.iter()
                .filter(|m| m["role"] == role)
                .filter_map(|m| m["content"].as_str())
                .collect()
        })
        .unwrap_or_default()
}

/// The last tool answer of a request body, parsed as JSON (Null if none or not JSON).
pub fn last_tool_answer(body: &Value) -> Value {
    texts(body, "tool")
        .last()
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or(Value::Null)
}
