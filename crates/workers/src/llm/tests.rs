//! The LLM worker end to end, against a mock provider and a mock
//! coordinator: reports, heartbeats, cancels, refusals and retries.

use std::time::Instant;

use coordinator_core::domain::FailureKind;
use reqwest::StatusCode;
use serde_json::{Value, json};
use wiremock::{
    Mock, MockServer, ResponseTemplate,
    matchers::{header, method, path},
};

use super::*;
use crate::test_support::{
    self as support, coordinator, path_suffix, report_of, requests_to, wait_for,
};

const KEY: &str = "sk-secret-key-456";

fn dispatch(coordinator: &MockServer) -> DispatchRequest {
    support::dispatch(&coordinator.uri())
}

async fn send(worker: &LlmWorker, req: &DispatchRequest) -> StatusCode {
    support::send(&worker.url(), req).await
}

async fn wait_until(worker: &LlmWorker, what: impl Fn(&LlmWorkerStats) -> bool) {
    support::wait_until(|| what(&worker.stats())).await
}

fn config(provider: &MockServer) -> LlmWorkerConfig {
    LlmWorkerConfig {
        api_key: Some(KEY.into()),
        model: "test-model".into(),
        timeout_secs: 5,
        max_tokens: 256,
        prompt_price_per_1k: 0.5,
        completion_price_per_1k: 2.0,
        heartbeat_secs: 1,
        ..LlmWorkerConfig::new(format!("{}/v1", provider.uri()))
    }
}

fn completion(content: &str) -> Value {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "served-model-v1",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop"
        }],
        "usage": {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
    })
}

async fn provider_answering(template: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(template)
        .mount(&server)
        .await;
    server
}

async fn start(cfg: LlmWorkerConfig) -> LlmWorker {
    LlmWorker::spawn("127.0.0.1:0".parse().unwrap(), cfg)
        .await
        .unwrap()
}

/// Runs one dispatch against a provider answering `template` and returns the report.
async fn report_after(template: ResponseTemplate) -> WorkerReport {
    let provider = provider_answering(template).await;
    let coord = coordinator(200, 200).await;
    let worker = start(config(&provider)).await;
    assert_eq!(send(&worker, &dispatch(&coord)).await, StatusCode::ACCEPTED);
    let results = wait_for(&coord, "/result", 1).await;
    assert_eq!(results.len(), 1, "one result expected");
    report_of(&results[0])
}

/// The chat-completions calls the mock received: its POSTs (the GETs are
/// the client asking for the context size).
async fn posts(server: &MockServer) -> Vec<wiremock::Request> {
    server
        .received_requests()
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.method == wiremock::http::Method::POST)
        .collect()
}

#[tokio::test]
async fn happy_path_reports_the_answer_with_tokens_and_cost() {
    let provider = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .and(header("authorization", format!("Bearer {KEY}").as_str()))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(completion("Compost: mix browns and greens.")),
        )
        .expect(1)
        .mount(&provider)
        .await;
    let coord = coordinator(200, 200).await;
    let worker = start(config(&provider)).await;
    let req = dispatch(&coord);

    let started = Instant::now();
    assert_eq!(send(&worker, &req).await, StatusCode::ACCEPTED);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "202 must come at once"
    );

    let results = wait_for(&coord, "/result", 1).await;
    assert_eq!(results.len(), 1);
    assert!(results[0].url.path().contains(&req.attempt_id.to_string()));
    let report = report_of(&results[0]);
    assert_eq!(report.status, ReportStatus::Succeeded);
    let output = report.output.unwrap();
    assert_eq!(output["text"], "Compost: mix browns and greens.");
    assert_eq!(output["model"], "served-model-v1");
    assert_eq!(output["finish_reason"], "stop");
    assert_eq!(report.tokens, 150);
    assert!(
        (report.cost - (0.12 * 0.5 + 0.03 * 2.0)).abs() < 1e-9,
        "{}",
        report.cost
    );

    let calls = posts(&provider).await;
    assert_eq!(calls.len(), 1);
    let body: Value = serde_json::from_slice(&calls[0].body).unwrap();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["max_tokens"], 256);
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert!(
        messages[0]["content"]
            .as_str()
            .unwrap()
            .contains("writer-1")
    );
    let all = body["messages"].to_string();
    assert!(all.contains("Publish a short guide to composting at home"));
    assert!(all.contains("Draft the guide"));
    assert!(all.contains("balance browns and greens 3:1"));
    assert!(all.contains("under 250 words"));
    assert!(all.contains("apartment dwellers"));
    assert!(all.contains("keep it tight"));

    let stats = worker.stats();
    assert_eq!(
        (stats.received, stats.calls, stats.succeeded, stats.failed),
        (1, 1, 1, 0)
    );
    assert_eq!((stats.prompt_tokens, stats.completion_tokens), (120, 30));
    wait_until(&worker, |s| s.reported == 1).await;
    assert_eq!(worker.stats().reported, 1);
}

#[tokio::test]
async fn slow_provider_gets_heartbeats_before_the_result() {
    let provider = provider_answering(
        ResponseTemplate::new(200)
            .set_body_json(completion("done"))
            .set_delay(Duration::from_millis(2500)),
    )
    .await;
    let coord = coordinator(200, 200).await;
    let worker = start(config(&provider)).await;
    assert_eq!(send(&worker, &dispatch(&coord)).await, StatusCode::ACCEPTED);
    wait_for(&coord, "/result", 1).await;

    let all = coord.received_requests().await.unwrap();
    let result_at = all
        .iter()
        .position(|r| r.url.path().ends_with("/result"))
        .expect("a result");
    let beats_before = all[..result_at]
        .iter()
        .filter(|r| r.url.path().ends_with("/heartbeat"))
        .count();
    assert!(
        beats_before >= 2,
        "only {beats_before} heartbeats before the result"
    );
    let beat: Heartbeat = serde_json::from_slice(&all[0].body).unwrap();
    assert!(beat.message.is_some());
    assert_eq!(report_of(&all[result_at]).status, ReportStatus::Succeeded);
}

#[tokio::test]
async fn rate_limited_provider_is_an_infrastructure_failure_with_retry_after() {
    let report = report_after(
        ResponseTemplate::new(429)
            .insert_header("retry-after", "7")
            .set_body_string("slow down"),
    )
    .await;
    assert_eq!(report.status, ReportStatus::Failed);
    assert_eq!(report.failure_kind, Some(FailureKind::Infrastructure));
    let error = report.error.unwrap();
    assert!(error.contains("429"), "{error}");
    assert!(error.contains("Retry-After: 7 s"), "{error}");
    assert_eq!(report.retry_after_secs, Some(7));
    let output = report.output.unwrap();
    assert_eq!(output["provider_status"], 429);
    assert_eq!(output["retry_after_secs"], 7);
}

#[tokio::test]
async fn server_error_is_an_infrastructure_failure() {
    let report = report_after(ResponseTemplate::new(500).set_body_string("boom")).await;
    assert_eq!(report.status, ReportStatus::Failed);
    assert_eq!(report.failure_kind, Some(FailureKind::Infrastructure));
    let error = report.error.unwrap();
    assert!(error.contains("500") && error.contains("boom"), "{error}");
    assert_eq!((report.tokens, report.cost), (0, 0.0));
}

#[tokio::test]
async fn bad_request_is_an_infrastructure_failure_without_the_key() {
    // A provider that echoes the key must not get it into the report.
    let report = report_after(
        ResponseTemplate::new(400)
            .set_body_string(format!("{{\"error\":\"bad model; key {KEY} ok\"}}")),
    )
    .await;
    assert_eq!(report.status, ReportStatus::Failed);
    assert_eq!(report.failure_kind, Some(FailureKind::Infrastructure));
    let error = report.error.unwrap();
    assert!(
        error.contains("400") && error.contains("bad model"),
        "{error}"
    );
    assert!(!error.contains(KEY), "{error}");
    assert!(error.contains("[redacted]"), "{error}");
}

#[tokio::test]
async fn empty_answer_is_a_quality_failure() {
    let report = report_after(ResponseTemplate::new(200).set_body_json(completion("  \n"))).await;
    assert_eq!(report.status, ReportStatus::Failed);
    assert_eq!(report.failure_kind, Some(FailureKind::Quality));
    assert_eq!(report.tokens, 150, "the tokens were spent all the same");
}

#[tokio::test]
async fn timeout_and_garbage_are_infrastructure_failures() {
    let mut cfg_provider = provider_answering(
        ResponseTemplate::new(200)
            .set_body_json(completion("late"))
            .set_delay(Duration::from_millis(2500)),
    )
    .await;
    let coord = coordinator(200, 200).await;
    let worker = start(LlmWorkerConfig {
        timeout_secs: 1,
        heartbeat_secs: 5,
        ..config(&cfg_provider)
    })
    .await;
    send(&worker, &dispatch(&coord)).await;
    let results = wait_for(&coord, "/result", 1).await;
    let report = report_of(&results[0]);
    assert_eq!(report.failure_kind, Some(FailureKind::Infrastructure));
    assert!(report.error.unwrap().contains("timed out"));

    cfg_provider = provider_answering(ResponseTemplate::new(200).set_body_string("<html>")).await;
    let coord = coordinator(200, 200).await;
    let worker = start(config(&cfg_provider)).await;
    send(&worker, &dispatch(&coord)).await;
    let report = report_of(&wait_for(&coord, "/result", 1).await[0]);
    assert_eq!(report.failure_kind, Some(FailureKind::Infrastructure));
    assert!(report.error.unwrap().contains("not JSON"));
}

#[tokio::test]
async fn unreachable_provider_is_an_infrastructure_failure() {
    // Bind then drop a listener so the port is (almost certainly) closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let coord = coordinator(200, 200).await;
    let worker = start(LlmWorkerConfig::new(format!(
        "http://127.0.0.1:{port}/v1/chat/completions"
    )))
    .await;
    send(&worker, &dispatch(&coord)).await;
    let report = report_of(&wait_for(&coord, "/result", 1).await[0]);
    assert_eq!(report.failure_kind, Some(FailureKind::Infrastructure));
    assert!(report.error.unwrap().contains("could not reach"));
}

#[tokio::test]
async fn stale_heartbeat_abandons_the_call_without_reporting() {
    let provider = provider_answering(
        ResponseTemplate::new(200)
            .set_body_json(completion("too late"))
            .set_delay(Duration::from_millis(2500)),
    )
    .await;
    let coord = coordinator(409, 200).await;
    let worker = start(config(&provider)).await;
    send(&worker, &dispatch(&coord)).await;
    wait_until(&worker, |s| s.abandoned == 1).await;
    // Past the provider's answer: still nothing reported, no more beats.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert!(requests_to(&coord, "/result").await.is_empty());
    assert_eq!(requests_to(&coord, "/heartbeat").await.len(), 1);
    let stats = worker.stats();
    assert_eq!(
        (stats.abandoned, stats.succeeded, stats.reported),
        (1, 0, 0)
    );
}

#[tokio::test]
async fn cancel_before_the_answer_reports_nothing() {
    let provider = provider_answering(
        ResponseTemplate::new(200)
            .set_body_json(completion("unwanted"))
            .set_delay(Duration::from_millis(1500)),
    )
    .await;
    let coord = coordinator(200, 200).await;
    let worker = start(config(&provider)).await;
    let req = dispatch(&coord);
    send(&worker, &req).await;
    wait_until(&worker, |s| s.calls == 1).await;
    let resp = reqwest::Client::new()
        .post(format!(
            "{}/v1/tasks/{}/cancel",
            worker.url(),
            req.attempt_id
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.json::<Value>().await.unwrap()["cancelled"], true);
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert!(requests_to(&coord, "/result").await.is_empty());
    let stats = worker.stats();
    assert_eq!(
        (stats.cancelled, stats.succeeded, stats.reported),
        (1, 0, 0)
    );
}

#[tokio::test]
async fn cancel_overtaking_its_dispatch_still_counts() {
    let provider =
        provider_answering(ResponseTemplate::new(200).set_body_json(completion("x"))).await;
    let coord = coordinator(200, 200).await;
    let worker = start(config(&provider)).await;
    let req = dispatch(&coord);
    reqwest::Client::new()
        .post(format!(
            "{}/v1/tasks/{}/cancel",
            worker.url(),
            req.attempt_id
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(send(&worker, &req).await, StatusCode::ACCEPTED);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(posts(&provider).await.is_empty());
    assert_eq!(worker.stats().cancelled, 1);
}

#[tokio::test]
async fn refused_report_is_counted_and_not_retried() {
    let provider =
        provider_answering(ResponseTemplate::new(200).set_body_json(completion("ok"))).await;
    let coord = coordinator(200, 409).await;
    let worker = start(config(&provider)).await;
    send(&worker, &dispatch(&coord)).await;
    wait_until(&worker, |s| s.refused == 1).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(requests_to(&coord, "/result").await.len(), 1);
    let stats = worker.stats();
    assert_eq!(
        (stats.refused, stats.reported, stats.undelivered),
        (1, 0, 0)
    );
}

#[tokio::test]
async fn report_is_retried_after_a_server_error() {
    let provider =
        provider_answering(ResponseTemplate::new(200).set_body_json(completion("ok"))).await;
    let coord = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path_suffix("/result"))
        .respond_with(ResponseTemplate::new(503))
        .up_to_n_times(2)
        .with_priority(1)
        .mount(&coord)
        .await;
    Mock::given(method("POST"))
        .and(path_suffix("/result"))
        .respond_with(ResponseTemplate::new(200))
        .mount(&coord)
        .await;
    let worker = start(config(&provider)).await;
    send(&worker, &dispatch(&coord)).await;
    wait_until(&worker, |s| s.reported == 1).await;
    assert_eq!(requests_to(&coord, "/result").await.len(), 3);
    assert_eq!(worker.stats().reported, 1);
}

#[tokio::test]
async fn duplicate_dispatch_calls_the_model_once() {
    let provider = provider_answering(
        ResponseTemplate::new(200)
            .set_body_json(completion("once"))
            .set_delay(Duration::from_millis(300)),
    )
    .await;
    let coord = coordinator(200, 200).await;
    let worker = start(config(&provider)).await;
    let req = dispatch(&coord);
    send(&worker, &req).await;
    send(&worker, &req).await;
    wait_until(&worker, |s| s.reported == 1).await;
    assert_eq!(posts(&provider).await.len(), 1);
    assert_eq!(worker.stats().duplicates, 1);
}

#[tokio::test]
async fn invalid_dispatches_are_refused_and_health_and_stats_answer() {
    let provider = MockServer::start().await;
    let coord = coordinator(200, 200).await;
    let worker = start(config(&provider)).await;
    let http = reqwest::Client::new();
    let status = http
        .post(format!("{}/v1/tasks", worker.url()))
        .json(&json!({"attempt_id": "nope"}))
        .send()
        .await
        .unwrap()
        .status();
    assert!(status.is_client_error(), "{status}");
    let mut req = dispatch(&coord);
    req.callback.result_url = "not a url".into();
    assert_eq!(send(&worker, &req).await, StatusCode::UNPROCESSABLE_ENTITY);
    let health = http
        .get(format!("{}/healthz", worker.url()))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), StatusCode::OK);
    let stats: Value = http
        .get(format!("{}/v1/stats", worker.url()))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(stats["received"], 0);
    assert_eq!(stats["calls"], 0);
}

#[tokio::test]
async fn concurrency_one_serialises_calls() {
    let provider = provider_answering(
        ResponseTemplate::new(200)
            .set_body_json(completion("one at a time"))
            .set_delay(Duration::from_millis(400)),
    )
    .await;
    let coord = coordinator(200, 200).await;
    let worker = start(config(&provider)).await;
    let started = Instant::now();
    send(&worker, &dispatch(&coord)).await;
    send(&worker, &dispatch(&coord)).await;
    wait_until(&worker, |s| s.reported == 2).await;
    assert!(started.elapsed() >= Duration::from_millis(800));
    assert_eq!(worker.stats().calls, 2);
}

#[tokio::test]
async fn spawn_refuses_unusable_configs() {
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    for cfg in [
        LlmWorkerConfig::new("ftp://example.invalid/v1"),
        LlmWorkerConfig::new("not a url"),
        LlmWorkerConfig {
            heartbeat_secs: 0,
            ..LlmWorkerConfig::new("http://127.0.0.1:1/v1")
        },
        LlmWorkerConfig {
            concurrency: 0,
            ..LlmWorkerConfig::new("http://127.0.0.1:1/v1")
        },
        LlmWorkerConfig {
            timeout_secs: 0,
            ..LlmWorkerConfig::new("http://127.0.0.1:1/v1")
        },
    ] {
        assert!(LlmWorker::spawn(addr, cfg).await.is_err());
    }
}

#[test]
fn debug_hides_the_key_and_cost_is_never_negative() {
    let cfg = LlmWorkerConfig {
        api_key: Some(KEY.into()),
        prompt_price_per_1k: -1.0,
        ..LlmWorkerConfig::new("http://h/v1")
    };
    assert!(!format!("{cfg:?}").contains(KEY));
    assert_eq!(cfg.cost(1000, 1000), 0.0);
}

/// A provider answering each call with the next answer of a script (the
/// last one again once the script runs out).
struct Script {
    answers: Vec<Value>,
    next: std::sync::atomic::AtomicUsize,
}

impl wiremock::Respond for Script {
    fn respond(&self, _req: &wiremock::Request) -> ResponseTemplate {
        let i = self.next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let answer = self.answers.get(i).or(self.answers.last()).cloned();
        ResponseTemplate::new(200).set_body_json(answer.unwrap_or_default())
    }
}

async fn scripted_provider(answers: Vec<Value>) -> MockServer {
    provider_answering_with(Script {
        answers,
        next: Default::default(),
    })
    .await
}

async fn provider_answering_with(responder: impl wiremock::Respond + 'static) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(responder)
        .mount(&server)
        .await;
    server
}

/// An answer calling `calls` (id, name, arguments text).
fn tool_turn(calls: &[(&str, &str, &str)]) -> Value {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| {
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
        })
        .collect();
    json!({
        "model": "served-model-v1",
        "choices": [{"message": {"role": "assistant", "content": null, "tool_calls": calls},
                     "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 10}
    })
}

/// A coordinator that also serves the tools `my_task` (answers) and
/// `blackboard_write` (answers `blackboard_status`) at `/v1/tools`.
async fn coordinator_with_tools(blackboard_status: u16) -> MockServer {
    let coord = coordinator(200, 200).await;
    let function = |name: &str| {
        json!({"type": "function", "function": {"name": name, "description": "d",
               "parameters": {"type": "object", "properties": {}}}})
    };
    Mock::given(method("GET"))
        .and(path("/v1/tools"))
        .and(header(
            "authorization",
            format!("Bearer {}", support::TOKEN).as_str(),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"tools": [
            function("my_task"), function("blackboard_write"), function("finish"), {"type": "other"}
        ]})))
        .mount(&coord)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/tools/my_task"))
        .and(header(
            "authorization",
            format!("Bearer {}", support::TOKEN).as_str(),
        ))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"result": {"key": "draft"}})))
        .mount(&coord)
        .await;
    let body = if blackboard_status == 409 {
        json!({"error": {"code": "invalid_state", "message": "the attempt has ended", "details": null}})
    } else {
        json!({"error": {"code": "forbidden", "message": "not your mission", "details": null}})
    };
    Mock::given(method("POST"))
        .and(path("/v1/tools/blackboard_write"))
        .respond_with(ResponseTemplate::new(blackboard_status).set_body_json(body))
        .mount(&coord)
        .await;
    coord
}

fn with_tools(coord: &MockServer) -> DispatchRequest {
    let mut req = dispatch(coord);
    req.callback.tools_url = Some(format!("{}/v1/tools", coord.uri()));
    req
}

fn sent_bodies(requests: &[wiremock::Request]) -> Vec<Value> {
    requests
        .iter()
        .map(|r| serde_json::from_slice(&r.body).unwrap())
        .collect()
}

#[tokio::test]
async fn tool_calls_run_in_order_and_finish_ends_the_attempt() {
    let provider = scripted_provider(vec![
        tool_turn(&[
            ("c1", "my_task", "{}"),
            ("c2", "blackboard_write", r#"{"key": "k", "value": 1}"#),
            ("c3", "nope", "{}"),
        ]),
        tool_turn(&[(
            "c4",
            "finish",
            r#"{"result": "The guide, drafted.", "summary": "drafted it"}"#,
        )]),
        completion("never asked"),
    ])
    .await;
    let coord = coordinator_with_tools(403).await;
    let worker = start(config(&provider)).await;
    send(&worker, &with_tools(&coord)).await;
    let report = report_of(&wait_for(&coord, "/result", 1).await[0]);
    assert_eq!(report.status, ReportStatus::Succeeded, "{report:?}");
    let output = report.output.unwrap();
    assert_eq!(output["text"], "The guide, drafted.");
    assert_eq!(output["summary"], "drafted it");
    assert_eq!(
        (output["turns"].as_u64(), output["tool_calls"].as_u64()),
        (Some(2), Some(2))
    );
    // Tokens and cost over both turns.
    assert_eq!(report.tokens, 220);
    assert!(
        (report.cost - (0.2 * 0.5 + 0.02 * 2.0)).abs() < 1e-9,
        "{}",
        report.cost
    );

    let bodies = sent_bodies(&posts(&provider).await);
    assert_eq!(bodies.len(), 2);
    let offered: Vec<&str> = bodies[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(offered, ["my_task", "blackboard_write", "finish"]);
    assert_eq!(bodies[0]["tool_choice"], "auto");
    let second = bodies[1]["messages"].as_array().unwrap();
    assert_eq!(second.len(), 2 + 1 + 3, "{second:?}");
    assert_eq!(second[2]["role"], "assistant");
    assert_eq!(
        second[2]["tool_calls"][1]["function"]["name"],
        "blackboard_write"
    );
    let answers: Vec<(&str, &str)> = second[3..]
        .iter()
        .map(|m| {
            assert_eq!(m["role"], "tool");
            (
                m["tool_call_id"].as_str().unwrap(),
                m["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(answers[0], ("c1", r#"{"key":"draft"}"#));
    assert_eq!(
        answers[1],
        ("c2", "error (HTTP 403 forbidden): not your mission")
    );
    assert_eq!(answers[2].0, "c3");
    assert!(
        answers[2].1.starts_with("there is no tool `nope`"),
        "{}",
        answers[2].1
    );

    let calls = requests_to(&coord, "/blackboard_write").await;
    assert_eq!(
        serde_json::from_slice::<Value>(&calls[0].body).unwrap(),
        json!({"key": "k", "value": 1})
    );
    let stats = worker.stats();
    assert_eq!((stats.calls, stats.tool_calls, stats.succeeded), (2, 2, 1));
}

#[tokio::test]
async fn a_model_that_never_finishes_fails_after_exactly_max_turns() {
    // Not JSON, again and again: each refusal uses a turn.
    let provider = scripted_provider(vec![tool_turn(&[("c1", "finish", "{\"result\": ")])]).await;
    let coord = coordinator(200, 200).await;
    let worker = start(LlmWorkerConfig {
        max_turns: 3,
        ..config(&provider)
    })
    .await;
    // No tools_url: only `finish` is offered.
    send(&worker, &dispatch(&coord)).await;
    let report = report_of(&wait_for(&coord, "/result", 1).await[0]);
    assert_eq!(report.status, ReportStatus::Failed);
    assert_eq!(report.failure_kind, Some(FailureKind::Quality));
    let error = report.error.unwrap();
    assert!(error.contains("used all 3 turns"), "{error}");
    assert!(
        error.contains("turn 3: finish (refused: the arguments of `finish` are not JSON"),
        "{error}"
    );
    assert_eq!(report.tokens, 330);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let bodies = sent_bodies(&posts(&provider).await);
    assert_eq!(bodies.len(), 3);
    let offered = &bodies[0]["tools"];
    assert_eq!(offered.as_array().map(Vec::len), Some(1), "{offered}");
    assert!(
        bodies[0]["messages"][0]["content"]
            .as_str()
            .unwrap()
            .contains("at most 3 turns")
    );
}

#[tokio::test]
async fn a_tool_call_answered_409_stops_the_attempt_without_a_report() {
    let provider = scripted_provider(vec![
        tool_turn(&[("c1", "blackboard_write", r#"{"key": "k", "value": 1}"#)]),
        completion("never asked"),
    ])
    .await;
    let coord = coordinator_with_tools(409).await;
    let worker = start(config(&provider)).await;
    send(&worker, &with_tools(&coord)).await;
    wait_until(&worker, |s| s.abandoned == 1).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(requests_to(&coord, "/result").await.is_empty());
    assert_eq!(posts(&provider).await.len(), 1);
    let stats = worker.stats();
    assert_eq!(
        (stats.abandoned, stats.cancelled, stats.reported),
        (1, 0, 0)
    );
}

#[tokio::test]
async fn a_provider_refusing_tools_is_asked_again_without_them() {
    let provider = provider_answering_with(|req: &wiremock::Request| {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or_default();
        if body.get("tools").is_some() {
            ResponseTemplate::new(400).set_body_string("this model does not support tools")
        } else {
            ResponseTemplate::new(200).set_body_json(completion("plain answer"))
        }
    })
    .await;
    let coord = coordinator(200, 200).await;
    let worker = start(config(&provider)).await;
    send(&worker, &dispatch(&coord)).await;
    let report = report_of(&wait_for(&coord, "/result", 1).await[0]);
    assert_eq!(report.status, ReportStatus::Succeeded, "{report:?}");
    assert_eq!(report.output.unwrap()["text"], "plain answer");
    // Later attempts go without tools at once.
    send(&worker, &dispatch(&coord)).await;
    wait_for(&coord, "/result", 2).await;
    assert_eq!(posts(&provider).await.len(), 3);
    assert_eq!(worker.stats().calls, 3);
}

#[tokio::test]
async fn an_object_result_is_kept_and_an_unreachable_tool_list_offers_finish_only() {
    let provider = scripted_provider(vec![tool_turn(&[(
        "c1",
        "finish",
        r#"{"result": {"title": "Compost", "words": 180}}"#,
    )])])
    .await;
    let coord = coordinator(200, 200).await;
    let worker = start(config(&provider)).await;
    let mut req = dispatch(&coord);
    req.callback.tools_url = Some("http://127.0.0.1:1/v1/tools".into());
    send(&worker, &req).await;
    let report = report_of(&wait_for(&coord, "/result", 1).await[0]);
    let output = report.output.unwrap();
    assert_eq!(output["result"], json!({"title": "Compost", "words": 180}));
    assert_eq!(output["text"], r#"{"title":"Compost","words":180}"#);
    assert_eq!(output["turns"], 1);
}

#[tokio::test]
async fn prompt_variants_and_max_turns_are_checked_at_start() {
    let dir = std::env::temp_dir().join(format!("variants-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("v.toml");
    std::fs::write(&good, "writer-1 = \"Be brief.\"\n").unwrap();
    let bad = dir.join("v.json");
    std::fs::write(&bad, "[]").unwrap();
    let base = || LlmWorkerConfig::new("http://127.0.0.1:1/v1");
    let addr: SocketAddr = "127.0.0.1:0".parse().unwrap();
    for cfg in [
        LlmWorkerConfig {
            prompt_variants: Some(bad),
            ..base()
        },
        LlmWorkerConfig {
            max_turns: 0,
            ..base()
        },
        LlmWorkerConfig {
            max_turns: MAX_MAX_TURNS + 1,
            ..base()
        },
    ] {
        assert!(LlmWorker::spawn(addr, cfg).await.is_err());
    }

    let provider =
        provider_answering(ResponseTemplate::new(200).set_body_json(completion("ok"))).await;
    let coord = coordinator(200, 200).await;
    let worker = start(LlmWorkerConfig {
        prompt_variants: Some(good),
        ..config(&provider)
    })
    .await;
    send(&worker, &dispatch(&coord)).await;
    wait_for(&coord, "/result", 1).await;
    let bodies = sent_bodies(&posts(&provider).await);
    let system = bodies[0]["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("Be brief."), "{system}");
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test]
async fn a_call_too_big_for_the_context_is_sent_once_more_with_the_cap_it_leaves() {
    // llama-cpp-python's refusal whenever prompt estimate + max_tokens is over 1,000.
    let provider = provider_answering_with(|req: &wiremock::Request| {
        let body: Value = serde_json::from_slice(&req.body).unwrap_or_default();
        if body["max_tokens"].as_u64().unwrap_or(u64::MAX) > 600 {
            ResponseTemplate::new(400).set_body_json(json!({"error": {
                "message": "This model's maximum context length is 1000 tokens. However, you requested 1900 tokens (876 in the messages, 1024 in the completion). Please reduce the length of the messages or completion.",
                "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}))
        } else {
            ResponseTemplate::new(200).set_body_json(completion("short answer"))
        }
    })
    .await;
    let coord = coordinator(200, 200).await;
    let worker = start(LlmWorkerConfig {
        max_tokens: 1024,
        ..config(&provider)
    })
    .await;
    send(&worker, &dispatch(&coord)).await;
    let report = report_of(&wait_for(&coord, "/result", 1).await[0]);
    assert_eq!(report.status, ReportStatus::Succeeded, "{report:?}");
    let bodies = sent_bodies(&posts(&provider).await);
    assert_eq!(bodies.len(), 2);
    assert_eq!(bodies[0]["max_tokens"], 1024);
    let second = bodies[1]["max_tokens"].as_u64().unwrap();
    assert!((64..=600).contains(&second), "{second}");
    // Learnt: the next attempt fits at once.
    send(&worker, &dispatch(&coord)).await;
    wait_for(&coord, "/result", 2).await;
    assert_eq!(posts(&provider).await.len(), 3);
}

#[tokio::test]
async fn a_configured_context_caps_the_answer_from_the_first_call() {
    let provider =
        provider_answering(ResponseTemplate::new(200).set_body_json(completion("ok"))).await;
    let coord = coordinator(200, 200).await;
    let worker = start(LlmWorkerConfig {
        max_tokens: 4096,
        context_tokens: Some(2048),
        ..config(&provider)
    })
    .await;
    send(&worker, &dispatch(&coord)).await;
    wait_for(&coord, "/result", 1).await;
    let all = provider.received_requests().await.unwrap();
    // Configured: the provider is not asked for its context size.
    assert!(all.iter().all(|r| r.method == wiremock::http::Method::POST));
    let sent = sent_bodies(&all)[0]["max_tokens"].as_u64().unwrap();
    assert!(sent < 2048 && sent > 1000, "{sent}");
}
