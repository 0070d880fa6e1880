//! The planner against a mock chat-completions server: repairs, retries,
//! timeouts, the format fallback, redaction and the requests it sends.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wiremock::matchers::{body_partial_json, method, path};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use super::*;
use crate::planning::validate::{
    AgentCapability, ValidationContext, ValidationRules, validate_plan,
};

const COMPLETIONS: &str = "/v1/chat/completions";

/// Answers with the given responses in order, repeating the last one.
struct Sequence {
    responses: Vec<ResponseTemplate>,
    next: AtomicUsize,
}

impl Sequence {
    fn new(responses: Vec<ResponseTemplate>) -> Self {
        Sequence {
            responses,
            next: AtomicUsize::new(0),
        }
    }
}

impl Respond for Sequence {
    fn respond(&self, _: &Request) -> ResponseTemplate {
        let i = self.next.fetch_add(1, Ordering::SeqCst);
        self.responses[i.min(self.responses.len() - 1)].clone()
    }
}

fn completion(content: &str) -> ResponseTemplate {
    completion_with(content, "stop")
}

fn completion_with(content: &str, finish_reason: &str) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "test-model-2024",
        "choices": [{
            "index": 0,
            "message": { "role": "assistant", "content": content },
            "finish_reason": finish_reason
        }],
        "usage": { "prompt_tokens": 100, "completion_tokens": 40, "total_tokens": 140 }
    }))
}

fn task_json(id: &str, deps: &[&str]) -> Value {
    json!({
        "id": id,
        "title": format!("Task {id}"),
        "task_type": "research",
        "description": "do it",
        "required_skills": ["research"],
        "required_tools": [],
        "depends_on": deps,
        "success_criteria": [{ "description": "done", "must_pass": true }],
        "estimated_cost": 0.1,
        "optional": false,
        "inputs": {}
    })
}

fn good_plan() -> String {
    json!({ "tasks": [task_json("a", &[]), task_json("b", &["a"]), task_json("c", &["b"])] })
        .to_string()
}

fn cyclic_plan() -> String {
    json!({ "tasks": [task_json("a", &[]), task_json("b", &["c"]), task_json("c", &["b"])] })
        .to_string()
}

fn config(server: &MockServer) -> LlmConfig {
    let mut cfg = LlmConfig::new(format!("{}/v1", server.uri()), "test-model");
    cfg.timeout = Duration::from_secs(5);
    cfg.retry_base = Duration::from_millis(10);
    cfg
}

/// The service's real validator with one agent that has every skill used here.
fn full_validator(plan: &PlanSpec) -> Result<(), Vec<PlanProblem>> {
    let rules = ValidationRules::default();
    let agents = [AgentCapability {
        skills: vec!["research".to_owned(), "writing".to_owned()],
        tools: vec![],
    }];
    let ctx = ValidationContext {
        rules: &rules,
        budget: None,
        agents: &agents,
    };
    validate_plan(plan.clone(), &ctx).map(|_| ())
}

fn skills() -> Vec<String> {
    vec!["research".to_owned(), "writing".to_owned()]
}

async fn bodies(server: &MockServer) -> Vec<Value> {
    server
        .received_requests()
        .await
        .unwrap()
        .iter()
        .filter(|r| r.method == wiremock::http::Method::POST)
        .map(|r| r.body_json::<Value>().unwrap())
        .collect()
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
async fn well_formed_reply_validates_first_time() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(COMPLETIONS))
        .respond_with(completion(&good_plan()))
        .mount(&server)
        .await;
    let mut cfg = config(&server);
    cfg.api_key = Some("sk-secret".to_owned());
    let planner = LlmPlanner::new(cfg).unwrap();
    let skills = skills();
    let constraints = json!({ "budget": 5.0 });
    let request = PlanRequest {
        constraints: &constraints,
        skills: &skills,
        ..PlanRequest::new("Write a report on solar panels")
    };
    let out = planner.plan(&request, &full_validator).await.unwrap();

    assert_eq!(out.plan.tasks.len(), 3);
    assert_eq!(out.calls, 1);
    assert_eq!(out.repairs, 0);
    assert_eq!(out.prompt_tokens, 100);
    assert_eq!(out.completion_tokens, 40);
    assert_eq!(out.model, "test-model-2024");
    assert_eq!(out.response_format, "json_schema");

    let requests = posts(&server).await;
    assert_eq!(requests.len(), 1);
    assert_eq!(
        requests[0].headers.get("authorization").unwrap(),
        "Bearer sk-secret"
    );
    let body: Value = requests[0].body_json().unwrap();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(body["response_format"]["json_schema"]["name"], "plan");
    let schema = &body["response_format"]["json_schema"]["schema"];
    assert_eq!(schema["properties"]["tasks"]["maxItems"], 20);
    assert_eq!(
        schema["properties"]["tasks"]["items"]["properties"]["required_skills"]["items"]["enum"],
        json!(["research", "writing"])
    );
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    let system = messages[0]["content"].as_str().unwrap();
    assert!(system.contains("[\"research\",\"writing\"]"), "{system}");
    let user = messages[1]["content"].as_str().unwrap();
    assert!(
        user.contains("solar panels") && user.contains("\"budget\""),
        "{user}"
    );
}

#[tokio::test]
async fn cycle_is_sent_back_and_repaired() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(COMPLETIONS))
        .respond_with(Sequence::new(vec![
            completion(&cyclic_plan()),
            completion(&good_plan()),
        ]))
        .mount(&server)
        .await;
    let planner = LlmPlanner::new(config(&server)).unwrap();
    let skills = skills();
    let request = PlanRequest {
        skills: &skills,
        ..PlanRequest::new("goal")
    };
    let out = planner.plan(&request, &full_validator).await.unwrap();
    assert_eq!(out.calls, 2);
    assert_eq!(out.repairs, 1);
    assert_eq!(out.prompt_tokens, 200);
    assert_eq!(out.completion_tokens, 80);

    let bodies = bodies(&server).await;
    let messages = bodies[1]["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(messages[2]["content"], cyclic_plan());
    let repair = messages[3]["content"].as_str().unwrap();
    assert!(repair.contains("[cycle]"), "{repair}");
    assert!(repair.contains("b -> c -> b"), "{repair}");
}

#[tokio::test]
async fn never_valid_gives_invalid_plan_after_all_repairs() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(COMPLETIONS))
        .respond_with(completion(&cyclic_plan()))
        .mount(&server)
        .await;
    let mut cfg = config(&server);
    cfg.max_repairs = 3;
    let planner = LlmPlanner::new(cfg).unwrap();
    let skills = skills();
    let request = PlanRequest {
        skills: &skills,
        ..PlanRequest::new("goal")
    };
    let err = planner.plan(&request, &full_validator).await.unwrap_err();
    match &err {
        LlmError::InvalidPlan { problems, attempts } => {
            assert_eq!(*attempts, 4);
            assert_eq!(problems[0].code, "cycle");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(err.code(), "llm_invalid_plan");
    assert!(err.to_string().contains("[cycle]"), "{err}");
    assert_eq!(posts(&server).await.len(), 4);
    // The conversation grows by one answer and one repair request per round.
    let bodies = bodies(&server).await;
    assert_eq!(bodies[3]["messages"].as_array().unwrap().len(), 8);
}

#[tokio::test]
async fn slow_server_is_retried_then_times_out() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(COMPLETIONS))
        .respond_with(completion(&good_plan()).set_delay(Duration::from_millis(1000)))
        .mount(&server)
        .await;
    let mut cfg = config(&server);
    cfg.timeout = Duration::from_millis(200);
    cfg.max_retries = 2;
    let planner = LlmPlanner::new(cfg).unwrap();
    let started = Instant::now();
    let err = planner
        .plan(&PlanRequest::new("goal"), &|_| Ok(()))
        .await
        .unwrap_err();
    assert!(
        matches!(err, LlmError::Timeout { attempts: 3, .. }),
        "{err:?}"
    );
    assert_eq!(err.code(), "llm_timeout");
    assert!(started.elapsed() < Duration::from_secs(3));
    assert_eq!(posts(&server).await.len(), 3);
}

#[tokio::test]
async fn json_schema_rejection_falls_back_and_is_remembered() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(COMPLETIONS))
        .and(body_partial_json(
            json!({ "response_format": { "type": "json_schema" } }),
        ))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({
            "error": { "message": "response_format json_schema not supported" }
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(COMPLETIONS))
        .and(body_partial_json(
            json!({ "response_format": { "type": "json_object" } }),
        ))
        .respond_with(completion(&good_plan()))
        .mount(&server)
        .await;
    let planner = LlmPlanner::new(config(&server)).unwrap();
    assert_eq!(planner.current_response_format(), "json_schema");
    let skills = skills();
    let request = PlanRequest {
        skills: &skills,
        ..PlanRequest::new("goal")
    };
    let out = planner.plan(&request, &full_validator).await.unwrap();
    assert_eq!(out.response_format, "json_object");
    assert_eq!(out.calls, 2);

    // A clone shares what was learned, and goes straight to json_object.
    let clone = planner.clone();
    assert_eq!(clone.current_response_format(), "json_object");
    let out = clone.plan(&request, &full_validator).await.unwrap();
    assert_eq!(out.calls, 1);
    let bodies = bodies(&server).await;
    let formats: Vec<&str> = bodies
        .iter()
        .map(|b| b["response_format"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(formats, ["json_schema", "json_object", "json_object"]);
    assert!(bodies[1]["response_format"]["schema"]["properties"]["tasks"].is_object());
    // The fallback retries the same conversation.
    assert_eq!(bodies[0]["messages"], bodies[1]["messages"]);
}

#[tokio::test]
async fn a_fallback_after_a_retry_keeps_only_the_retries_left() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(COMPLETIONS))
        .and(body_partial_json(
            json!({ "response_format": { "type": "json_schema" } }),
        ))
        .respond_with(Sequence::new(vec![
            ResponseTemplate::new(503),
            ResponseTemplate::new(400).set_body_string("response_format json_schema not supported"),
        ]))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path(COMPLETIONS))
        .and(body_partial_json(
            json!({ "response_format": { "type": "json_object" } }),
        ))
        .respond_with(ResponseTemplate::new(500).set_body_string("boom"))
        .mount(&server)
        .await;
    let planner = LlmPlanner::new(config(&server)).unwrap();
    let err = planner
        .plan(&PlanRequest::new("goal"), &|_| Ok(()))
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Http { status: 500, .. }), "{err:?}");
    // The 503 counts against max_retries = 2, the refused request does not:
    // json_object gets the one retry left.
    let bodies = bodies(&server).await;
    let formats: Vec<&str> = bodies
        .iter()
        .map(|b| b["response_format"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        formats,
        ["json_schema", "json_schema", "json_object", "json_object"]
    );
}

#[tokio::test]
async fn rate_limit_honours_retry_after() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(COMPLETIONS))
        .respond_with(Sequence::new(vec![
            ResponseTemplate::new(429)
                .insert_header("Retry-After", "1")
                .set_body_string("slow down"),
            completion(&good_plan()),
        ]))
        .mount(&server)
        .await;
    let planner = LlmPlanner::new(config(&server)).unwrap();
    let started = Instant::now();
    let out = planner
        .plan(&PlanRequest::new("goal"), &|_| Ok(()))
        .await
        .unwrap();
    let elapsed = started.elapsed();
    assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(4), "{elapsed:?}");
    assert_eq!(out.calls, 2);
    assert_eq!(out.repairs, 0);
}

#[tokio::test]
async fn fenced_content_with_prose_is_parsed() {
    let server = MockServer::start().await;
    let content = format!(
        "Sure! Here is the plan {{as requested}}:\n```json\n{}\n```\nLet me know if you need changes.",
        good_plan()
    );
    Mock::given(method("POST"))
        .and(path(COMPLETIONS))
        .respond_with(completion(&content))
        .mount(&server)
        .await;
    let planner = LlmPlanner::new(config(&server)).unwrap();
    let out = planner
        .plan(&PlanRequest::new("goal"), &full_validator)
        .await
        .unwrap();
    assert_eq!(out.plan.tasks.len(), 3);
    assert_eq!(out.calls, 1);
}

#[tokio::test]
async fn nonsense_content_is_repaired_then_invalid() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(COMPLETIONS))
        .respond_with(completion(
            "I am a small model {{ banana ] \u{1F34C} tasks: yes",
        ))
        .mount(&server)
        .await;
    let planner = LlmPlanner::new(config(&server)).unwrap();
    let err = planner
        .plan(&PlanRequest::new("goal"), &full_validator)
        .await
        .unwrap_err();
    match &err {
        LlmError::InvalidPlan { problems, attempts } => {
            assert_eq!(*attempts, 3);
            assert_eq!(problems.len(), 1);
            assert_eq!(problems[0].code, codes::NOT_JSON);
        }
        other => panic!("unexpected {other:?}"),
    }
    let bodies = bodies(&server).await;
    assert_eq!(bodies.len(), 3);
    let repair = bodies[1]["messages"][3]["content"].as_str().unwrap();
    assert!(repair.contains("[not_json]"), "{repair}");
}

#[tokio::test]
async fn no_auth_header_without_key_and_4xx_is_not_retried() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(COMPLETIONS))
        .respond_with(ResponseTemplate::new(401).set_body_string("bad key sk-secret"))
        .mount(&server)
        .await;
    let mut cfg = config(&server);
    cfg.response_format = ResponseFormat::JsonObject;
    let planner = LlmPlanner::new(cfg).unwrap();
    let err = planner
        .plan(&PlanRequest::new("goal"), &|_| Ok(()))
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Http { status: 401, .. }), "{err:?}");
    assert_eq!(err.code(), "llm_http");
    let requests = posts(&server).await;
    assert_eq!(requests.len(), 1);
    assert!(requests[0].headers.get("authorization").is_none());
    let body: Value = requests[0].body_json().unwrap();
    assert_eq!(body["response_format"]["type"], "json_object");
}

#[tokio::test]
async fn echoed_api_key_is_redacted_from_errors() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(COMPLETIONS))
        .respond_with(ResponseTemplate::new(403).set_body_string("key sk-secret refused"))
        .mount(&server)
        .await;
    let mut cfg = config(&server);
    cfg.api_key = Some("sk-secret".to_owned());
    let planner = LlmPlanner::new(cfg).unwrap();
    let err = planner
        .plan(&PlanRequest::new("goal"), &|_| Ok(()))
        .await
        .unwrap_err();
    assert!(!err.to_string().contains("sk-secret"), "{err}");
    assert!(!format!("{planner:?}").contains("sk-secret"));
}

#[tokio::test]
async fn server_errors_are_retried_then_reported() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(COMPLETIONS))
        .respond_with(Sequence::new(vec![
            ResponseTemplate::new(503),
            completion(&good_plan()),
        ]))
        .mount(&server)
        .await;
    let planner = LlmPlanner::new(config(&server)).unwrap();
    let out = planner
        .plan(&PlanRequest::new("goal"), &|_| Ok(()))
        .await
        .unwrap();
    assert_eq!(out.calls, 2);

    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(COMPLETIONS))
        .respond_with(ResponseTemplate::new(500).set_body_string("boom"))
        .mount(&server)
        .await;
    let planner = LlmPlanner::new(config(&server)).unwrap();
    let err = planner
        .plan(&PlanRequest::new("goal"), &|_| Ok(()))
        .await
        .unwrap_err();
    assert!(
        matches!(err, LlmError::Http { status: 500, ref body_excerpt } if body_excerpt == "boom")
    );
    assert_eq!(posts(&server).await.len(), 3);
}

#[tokio::test]
async fn unusable_responses_are_bad_response() {
    let oversized = "x".repeat(MAX_RESPONSE_BYTES + 10);
    for template in [
        ResponseTemplate::new(200).set_body_string("<html>proxy error</html>"),
        ResponseTemplate::new(200).set_body_json(json!({ "choices": [] })),
        ResponseTemplate::new(200)
            .set_body_json(json!({ "choices": [{ "message": { "content": null } }] })),
        ResponseTemplate::new(200).set_body_string(oversized.clone()),
    ] {
        let server = MockServer::start().await;
        Mock::given(method("POST"))
            .and(path(COMPLETIONS))
            .respond_with(template)
            .mount(&server)
            .await;
        let planner = LlmPlanner::new(config(&server)).unwrap();
        let err = planner
            .plan(&PlanRequest::new("goal"), &|_| Ok(()))
            .await
            .unwrap_err();
        assert!(matches!(err, LlmError::BadResponse(_)), "{err:?}");
        assert_eq!(err.code(), "llm_bad_response");
        assert_eq!(posts(&server).await.len(), 1);
    }
}

#[tokio::test]
async fn unreachable_server_is_transport_error() {
    // Bind then drop a listener so the port is very likely closed.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut cfg = LlmConfig::new(format!("http://127.0.0.1:{port}/v1"), "m");
    cfg.max_retries = 1;
    cfg.retry_base = Duration::from_millis(1);
    let planner = LlmPlanner::new(cfg).unwrap();
    let err = planner
        .plan(&PlanRequest::new("goal"), &|_| Ok(()))
        .await
        .unwrap_err();
    assert!(matches!(err, LlmError::Transport(_)), "{err:?}");
    assert_eq!(err.code(), "llm_transport");
}

#[tokio::test]
async fn truncated_answer_asks_for_a_shorter_plan() {
    let server = MockServer::start().await;
    let cut = &good_plan()[..40];
    Mock::given(method("POST"))
        .and(path(COMPLETIONS))
        .respond_with(Sequence::new(vec![
            completion_with(cut, "length"),
            completion(&good_plan()),
        ]))
        .mount(&server)
        .await;
    let planner = LlmPlanner::new(config(&server)).unwrap();
    let out = planner
        .plan(&PlanRequest::new("goal"), &|_| Ok(()))
        .await
        .unwrap();
    assert_eq!(out.repairs, 1);
    let bodies = bodies(&server).await;
    let repair = bodies[1]["messages"][3]["content"].as_str().unwrap();
    assert!(repair.starts_with("Your plan was rejected. Problems:\n- [truncated_answer]"));
}

#[tokio::test]
async fn replanning_request_carries_previous_plan_and_feedback() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path(COMPLETIONS))
        .respond_with(completion(&good_plan()))
        .mount(&server)
        .await;
    let planner = LlmPlanner::new(config(&server)).unwrap();
    let previous: PlanSpec = serde_json::from_str(&good_plan()).unwrap();
    let request = PlanRequest {
        feedback: Some("Task b failed: the API was down. Task a is completed; keep it."),
        previous_plan: Some(&previous),
        ..PlanRequest::new("goal")
    };
    planner.plan(&request, &|_| Ok(())).await.unwrap();
    let bodies = bodies(&server).await;
    let user = bodies[0]["messages"][1]["content"].as_str().unwrap();
    assert!(user.contains("Current plan (JSON)") && user.contains("\"id\":\"b\""));
    assert!(user.contains("the API was down"));
}

#[test]
fn config_is_checked_and_urls_are_built() {
    let ok = LlmPlanner::new(LlmConfig::new("http://127.0.0.1:8000/v1/", "m")).unwrap();
    assert_eq!(
        ok.client.url().as_str(),
        "http://127.0.0.1:8000/v1/chat/completions"
    );
    let full = LlmConfig::new("https://api.openai.com/v1/chat/completions", "m");
    assert_eq!(
        LlmPlanner::new(full).unwrap().client.url().as_str(),
        "https://api.openai.com/v1/chat/completions"
    );
    for cfg in [
        LlmConfig::new("not a url", "m"),
        LlmConfig::new("ftp://x/v1", "m"),
        LlmConfig::new("http://x/v1", " "),
        LlmConfig {
            timeout: Duration::ZERO,
            ..LlmConfig::new("http://x/v1", "m")
        },
        LlmConfig {
            temperature: f64::NAN,
            ..LlmConfig::new("http://x/v1", "m")
        },
    ] {
        let err = LlmPlanner::new(cfg).unwrap_err();
        assert_eq!(err.code(), "llm_config");
    }
    let cfg = LlmConfig {
        api_key: Some("sk-secret".to_owned()),
        ..LlmConfig::new("http://x/v1", "m")
    };
    assert!(!format!("{cfg:?}").contains("sk-secret"));
}

#[test]
fn response_format_parses() {
    for f in [
        ResponseFormat::JsonSchema,
        ResponseFormat::JsonObject,
        ResponseFormat::Auto,
    ] {
        assert_eq!(f.as_str().parse::<ResponseFormat>().unwrap(), f);
    }
    assert!("yaml".parse::<ResponseFormat>().is_err());
    assert_eq!(ResponseFormat::default(), ResponseFormat::Auto);
}

#[test]
fn plan_future_is_send() {
    fn assert_send<T: Send>(_: &T) {}
    let planner = LlmPlanner::new(LlmConfig::new("http://x/v1", "m")).unwrap();
    let request = PlanRequest::new("g");
    let validate = |_: &PlanSpec| Ok(());
    let future = planner.plan(&request, &validate);
    assert_send(&future);
}
