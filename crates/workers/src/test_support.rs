//! Fixtures the workers' tests share: a dispatch, a mock coordinator, and
//! bounded waits on what it received.

use std::time::{Duration, Instant};

use coordinator_protocol::{Callback, DispatchRequest, TaskPayload, UpstreamOutput, WorkerReport};
use reqwest::StatusCode;
use serde_json::json;
use time::OffsetDateTime;
use uuid::Uuid;
use wiremock::{
    Mock, MockServer, Request, ResponseTemplate,
    matchers::{header, method},
};

/// The attempt's bearer token in every fixture dispatch.
pub const TOKEN: &str = "attempt-token-123";

/// A dispatch (attempt 2, with upstream output, inputs and feedback) whose
/// callbacks point at `coordinator`.
pub fn dispatch(coordinator: &str) -> DispatchRequest {
    let attempt_id = Uuid::new_v4();
    DispatchRequest {
        attempt_id,
        attempt_number: 2,
        task_id: Uuid::new_v4(),
        mission_id: Uuid::new_v4(),
        agent_id: "writer-1".into(),
        goal: "Publish a short guide to composting at home".into(),
        task: TaskPayload {
            key: "draft".into(),
            title: "Draft the guide".into(),
            task_type: "writing".into(),
            description: "Write a 200-word draft using the research notes.".into(),
            required_skills: vec!["writing".into()],
            required_tools: vec![],
            success_criteria: json!(["mentions browns and greens", "under 250 words"]),
            inputs: json!({"audience": "apartment dwellers"}),
            tool_policy: None,
        },
        upstream: vec![UpstreamOutput {
            task_id: Uuid::new_v4(),
            key: "research".into(),
            title: "Research composting".into(),
            output: Some(json!({"text": "Notes: balance browns and greens 3:1."})),
        }],
        organisation: None,
        feedback: Some("Too long last time; keep it tight.".into()),
        blackboard: Default::default(),
        deadline: OffsetDateTime::now_utc() + time::Duration::minutes(5),
        callback: Callback {
            heartbeat_url: format!("{coordinator}/v1/attempts/{attempt_id}/heartbeat"),
            result_url: format!("{coordinator}/v1/attempts/{attempt_id}/result"),
            token: TOKEN.into(),
            tool_approvals_url: None,
            tools_url: None,
            mcp_url: None,
            traceparent: None,
        },
    }
}

/// A coordinator answering heartbeats and results with the given statuses.
pub async fn coordinator(heartbeat_status: u16, result_status: u16) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path_suffix("/heartbeat"))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(ResponseTemplate::new(heartbeat_status))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path_suffix("/result"))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .respond_with(ResponseTemplate::new(result_status).set_body_json(json!({})))
        .mount(&server)
        .await;
    server
}

/// Matches requests whose path ends in `suffix`.
pub fn path_suffix(suffix: &'static str) -> impl wiremock::Match {
    move |req: &Request| req.url.path().ends_with(suffix)
}

/// What `server` received on paths ending in `suffix`.
pub async fn requests_to(server: &MockServer, suffix: &str) -> Vec<Request> {
    server
        .received_requests()
        .await
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.url.path().ends_with(suffix))
        .collect()
}

/// Waits (bounded) until `server` has received `n` requests ending in `suffix`.
pub async fn wait_for(server: &MockServer, suffix: &str, n: usize) -> Vec<Request> {
    let start = Instant::now();
    loop {
        let got = requests_to(server, suffix).await;
        if got.len() >= n || start.elapsed() > Duration::from_secs(8) {
            return got;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Waits (bounded) until `done` holds.
pub async fn wait_until(done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() && start.elapsed() < Duration::from_secs(8) {
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Dispatches `req` to the worker at `url`.
pub async fn send(url: &str, req: &DispatchRequest) -> StatusCode {
    reqwest::Client::new()
        .post(format!("{url}/v1/tasks"))
        .json(req)
        .send()
        .await
        .unwrap()
        .status()
}

/// Cancels `attempt_id` at the worker at `url`.
pub async fn cancel(url: &str, attempt_id: Uuid) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{url}/v1/tasks/{attempt_id}/cancel"))
        .send()
        .await
        .unwrap()
}

/// The report a result callback carried.
pub fn report_of(req: &Request) -> WorkerReport {
    serde_json::from_slice(&req.body).unwrap()
}
