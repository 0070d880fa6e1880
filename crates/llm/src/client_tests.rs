//! The client against a mock server: retries, `Retry-After`, timeouts, caps
//! and redaction.

use std::sync::atomic::{AtomicUsize, Ordering};

use reqwest::StatusCode;
use serde_json::{Value, json};
use wiremock::{
    Mock, MockServer, Request, Respond, ResponseTemplate,
    matchers::{method, path},
};

use super::*;
use crate::wire::ChatMessage;

const KEY: &str = "sk-secret-key-456";

/// Answers with the given responses in order, repeating the last one.
struct Sequence {
    responses: Vec<ResponseTemplate>,
    next: AtomicUsize,
}

impl Respond for Sequence {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let i = self.next.fetch_add(1, Ordering::SeqCst);
        self.responses[i.min(self.responses.len() - 1)].clone()
    }
}

async fn server(responses: Vec<ResponseTemplate>) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(Sequence {
            responses,
            next: AtomicUsize::new(0),
        })
        .mount(&server)
        .await;
    server
}

fn ok(content: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "model": "served",
        "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2}
    }))
}

fn client(server: &MockServer, key: Option<&str>) -> ChatClient {
    let url = completions_url(&format!("{}/v1", server.uri()), "url").unwrap();
    ChatClient::new(
        url,
        ClientOptions {
            api_key: key.map(str::to_owned),
            timeout: Duration::from_millis(500),
            connect_timeout: Duration::from_secs(1),
            max_response_bytes: 1024,
        },
    )
    .unwrap()
}

const POLICY: RetryPolicy = RetryPolicy {
    max_retries: 2,
    base: Duration::from_millis(5),
    max_delay: Duration::from_secs(3),
};

async fn complete(client: &ChatClient, policy: &RetryPolicy) -> Call {
    let messages = [ChatMessage::user("hi")];
    let body = ChatRequest {
        model: "m",
        messages: &messages,
        temperature: 0.2,
        max_tokens: Some(16),
        response_format: None,
        tools: None,
        tool_choice: None,
    };
    client.complete(&body, policy, |_| false).await
}

#[tokio::test]
async fn a_server_error_is_retried_and_the_key_sent() {
    let server = server(vec![ResponseTemplate::new(503), ok("fine")]).await;
    let call = complete(&client(&server, Some(KEY)), &POLICY).await;
    let done = call.result.unwrap();
    assert_eq!(call.attempts, 2);
    assert_eq!(done.content.as_deref(), Some("fine"));
    assert_eq!(done.model.as_deref(), Some("served"));
    assert_eq!(done.usage.total(), 5);
    let requests = server.received_requests().await.unwrap();
    assert_eq!(
        requests[0].headers.get("authorization").unwrap(),
        &format!("Bearer {KEY}")
    );
    let body: Value = requests[0].body_json().unwrap();
    assert_eq!(body["max_tokens"], 16);
    assert!(body.get("response_format").is_none());
}

#[tokio::test]
async fn retry_after_is_honoured_up_to_the_longest_wait() {
    let limited = ResponseTemplate::new(429).insert_header("Retry-After", "1");
    let server = server(vec![limited.clone(), ok("x")]).await;
    let started = Instant::now();
    let call = complete(&client(&server, None), &POLICY).await;
    assert!(call.result.is_ok());
    assert!(started.elapsed() >= Duration::from_secs(1));

    let server = self::server(vec![
        ResponseTemplate::new(429).insert_header("Retry-After", "3600"),
        ok("x"),
    ])
    .await;
    let started = Instant::now();
    let short = RetryPolicy {
        max_delay: Duration::from_millis(50),
        ..POLICY
    };
    assert!(
        complete(&client(&server, None), &short)
            .await
            .result
            .is_ok()
    );
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test]
async fn final_errors_stop_at_once_and_give_up_is_asked_first() {
    let server = server(vec![
        ResponseTemplate::new(401).set_body_string(format!("key {KEY}")),
    ])
    .await;
    let call = complete(&client(&server, Some(KEY)), &POLICY).await;
    assert_eq!(call.attempts, 1);
    let err = call.result.unwrap_err();
    assert!(matches!(err, CallError::Status { status, .. } if status == StatusCode::UNAUTHORIZED));
    assert!(!err.to_string().contains(KEY), "{err}");

    let server = self::server(vec![
        ResponseTemplate::new(500).set_body_string("response_format?"),
    ])
    .await;
    let messages = [ChatMessage::user("hi")];
    let body = ChatRequest {
        model: "m",
        messages: &messages,
        temperature: 0.0,
        max_tokens: None,
        response_format: None,
        tools: None,
        tool_choice: None,
    };
    let call = client(&server, None)
        .complete(&body, &POLICY, CallError::rejects_response_format)
        .await;
    assert_eq!(call.attempts, 1);
    assert!(call.result.unwrap_err().rejects_response_format());
}

#[tokio::test]
async fn slow_servers_time_out_and_every_retry_is_spent() {
    let server = server(vec![ok("late").set_delay(Duration::from_secs(3))]).await;
    let started = Instant::now();
    let call = complete(&client(&server, None), &POLICY).await;
    assert_eq!(call.attempts, 3);
    assert!(matches!(call.result, Err(CallError::Timeout(_))));
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn oversized_and_garbage_bodies_are_bad_responses_not_retried() {
    for template in [
        ResponseTemplate::new(200).set_body_string("x".repeat(2000)),
        ResponseTemplate::new(200).set_body_string("<html>"),
    ] {
        let server = server(vec![template]).await;
        let call = complete(&client(&server, None), &POLICY).await;
        assert_eq!(call.attempts, 1);
        assert!(matches!(call.result, Err(CallError::BadResponse(_))));
    }
}

#[tokio::test]
async fn no_auth_header_without_a_key_and_unreachable_is_transport() {
    let server = server(vec![ok("x")]).await;
    complete(&client(&server, Some("  ")), &POLICY)
        .await
        .result
        .unwrap();
    let requests = server.received_requests().await.unwrap();
    assert!(requests[0].headers.get("authorization").is_none());

    // Bind then drop a listener so the port is very likely closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = completions_url(&format!("http://127.0.0.1:{port}/v1"), "url").unwrap();
    let options = ClientOptions {
        api_key: None,
        timeout: Duration::from_secs(2),
        connect_timeout: Duration::from_secs(1),
        max_response_bytes: 1024,
    };
    let call = complete(
        &ChatClient::new(url, options).unwrap(),
        &RetryPolicy {
            max_retries: 0,
            ..POLICY
        },
    )
    .await;
    let err = call.result.unwrap_err();
    assert!(matches!(err, CallError::Transport(_)), "{err:?}");
    assert!(err.to_string().contains("could not reach"), "{err}");
}

#[test]
fn completions_url_accepts_both_forms_and_names_the_setting() {
    for base in ["http://h:1/v1/", "http://h:1/v1/chat/completions"] {
        assert_eq!(
            completions_url(base, "base_url").unwrap().as_str(),
            "http://h:1/v1/chat/completions"
        );
    }
    assert_eq!(
        completions_url("ftp://x/v1", "--llm-url").unwrap_err(),
        "--llm-url 'ftp://x/v1' must use http or https"
    );
    assert!(
        completions_url("not a url", "base_url")
            .unwrap_err()
            .starts_with("base_url 'not a url' is not a URL")
    );
}

#[test]
fn backoff_grows_and_is_capped() {
    let base = Duration::from_millis(100);
    let max = Duration::from_secs(30);
    for attempt in 1..5u32 {
        let full = base * 2u32.pow(attempt - 1);
        let d = backoff(base, attempt, max);
        assert!(d >= full / 2 && d <= full, "{attempt}: {d:?}");
    }
    assert!(backoff(base, u32::MAX, max) <= max);
    assert!(backoff(Duration::MAX, 3, max) <= max);
}

#[test]
fn debug_hides_the_key() {
    let options = ClientOptions {
        api_key: Some(KEY.into()),
        timeout: Duration::from_secs(1),
        connect_timeout: Duration::from_secs(1),
        max_response_bytes: 1,
    };
    assert!(!format!("{options:?}").contains(KEY));
    let url = completions_url("http://h/v1", "url").unwrap();
    assert!(!format!("{:?}", ChatClient::new(url, options).unwrap()).contains(KEY));
}
