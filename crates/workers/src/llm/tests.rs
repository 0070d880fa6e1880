//! The LLM worker end to end, against a mock provider and a mock
//! coordinator: reports, heartbeats, cancels, refusals and retries.

use std::time::Instant;

use reqwest::StatusCode;
use serde_json::Value;
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

    let calls = provider.received_requests().await.unwrap();
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
    assert!(provider.received_requests().await.unwrap().is_empty());
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
    assert_eq!(provider.received_requests().await.unwrap().len(), 1);
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
