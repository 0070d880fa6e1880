//! The egress policy (issue 27 item 1): webhooks reach public addresses
//! only, agent endpoints only the listed networks, judged on the resolved
//! address when connecting; redirects are not followed; a refused call
//! connects to nothing and records "refused by egress policy".
//!
//! Receivers are real sockets on 127.0.0.1 and 127.0.0.2; names resolve
//! through the policy's host stub (`egress::Hosts`), which a test rewires
//! between registration and delivery like a DNS change.

use std::net::IpAddr;

use axum::http::StatusCode;
use coordinator::egress::{self, Hosts};
use serde_json::{Value, json};
use wiremock::{
    Mock, MockServer, ResponseTemplate,
    matchers::{method, path},
};

use crate::helpers::*;

const SECRET: &str = "a-very-secret-secret";

/// Test settings with the built-in egress defaults (no loopback webhooks).
fn strict_settings() -> coordinator::api::Settings {
    let mut s = test_settings();
    s.egress = egress::Settings::default();
    s
}

/// A mock server listening on `ip` (127.0.0.2 is loopback too on Linux).
async fn receiver_on(ip: [u8; 4]) -> MockServer {
    let listener = std::net::TcpListener::bind((IpAddr::from(ip), 0)).expect("bind receiver");
    MockServer::builder().listener(listener).start().await
}

fn ip(s: &str) -> IpAddr {
    s.parse().expect("an address")
}

#[tokio::test]
async fn webhooks_refuse_every_internal_address_form_at_creation() {
    let mut settings = strict_settings();
    settings.run_engine = false;
    let app = spawn_app_on(&fresh_database().await, settings).await;
    for url in [
        "http://127.0.0.1:9/hook",
        "http://localhost:9/hook",
        "http://2130706433:9/hook",
        "http://127.1:9/hook",
        "http://0x7f.1:9/hook",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]:9/hook",
        "http://[::ffff:127.0.0.1]:9/hook",
        "http://0.0.0.0:9/hook",
        "http://10.0.0.1/hook",
        "http://user:pass@example.com/hook",
        "http://no-such-host.invalid/hook",
    ] {
        let (s, body) = app
            .post("/v1/webhooks", json!({"url": url, "secret": SECRET}))
            .await;
        // Credentials break the URL's own rules (400); an address is
        // refused by this deployment's policy (422 `url_refused`).
        let (status, code) = if url.contains('@') {
            (StatusCode::BAD_REQUEST, "invalid_request")
        } else {
            (StatusCode::UNPROCESSABLE_ENTITY, "url_refused")
        };
        assert_eq!(s, status, "{url}: {body}");
        assert_eq!(body["error"]["code"], code, "{url}");
        assert_eq!(body["error"]["details"]["field"], "url", "{url}");
        let message = body["error"]["message"].as_str().unwrap_or("");
        assert!(
            message.contains("egress policy")
                || message.contains("credentials")
                || message.contains("does not resolve"),
            "{url}: the message says why: {message}"
        );
    }
    let (_, hooks) = app.get("/v1/webhooks").await;
    assert_eq!(hooks["webhooks"], json!([]), "nothing was stored");

    // A public address is accepted (no connection is made at creation).
    let (s, body) = app
        .post(
            "/v1/webhooks",
            json!({"url": "http://93.184.215.14/hook", "secret": SECRET}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{body}");

    // An agent's subscription delivers to its endpoint: the webhook policy
    // (public only here) refuses a loopback agent.
    let (s, body) = app
        .post(
            "/v1/agents",
            json!({"agent_id": "local", "role": "r", "skills": [], "tools": [],
                   "endpoint_url": "http://127.0.0.1:9", "max_concurrency": 1}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    let (s, body) = app
        .post("/v1/agents/local/subscriptions", json!({"secret": SECRET}))
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST, "{body}");
    assert_eq!(body["error"]["details"]["field"], "agent_id");
    app.stop().await;
}

#[tokio::test]
async fn redirects_are_not_followed() {
    // The redirect target: it must never hear from the service.
    let target = receiver_on([127, 0, 0, 1]).await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&target)
        .await;
    Mock::given(method("GET"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&target)
        .await;
    let receiver = receiver_on([127, 0, 0, 2]).await;
    for code in [302, 307] {
        Mock::given(method("POST"))
            .and(path(format!("/r{code}")))
            .respond_with(
                ResponseTemplate::new(code)
                    .insert_header("location", format!("{}/stolen", target.uri()).as_str()),
            )
            .mount(&receiver)
            .await;
    }
    let mut settings = strict_settings();
    settings.egress.webhook_networks = egress::parse_networks("127.0.0.2/32").expect("cidr");
    settings.webhook_retry.max_attempts = 1;
    let app = spawn_app_on(&fresh_database().await, settings).await;
    let mut hooks = Vec::new();
    for code in [302, 307] {
        let (s, hook) = app
            .post(
                "/v1/webhooks",
                json!({"url": format!("{}/r{code}", receiver.uri()), "secret": SECRET}),
            )
            .await;
        assert_eq!(s, StatusCode::CREATED, "{hook}");
        hooks.push((code, hook["id"].as_str().unwrap_or_default().to_owned()));
    }
    // 127.0.0.1 is outside this webhook policy: the target could not be a hook itself.
    let (s, _) = app
        .post(
            "/v1/webhooks",
            json!({"url": format!("{}/stolen", target.uri()), "secret": SECRET}),
        )
        .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY);

    let worker = spawn_worker(5).await;
    app.register_fleet(&worker.url(), 4).await;
    let m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    app.wait_for_status(m["id"].as_str().unwrap_or_default(), &["completed"])
        .await;
    for (code, id) in &hooks {
        let log = wait_until(&format!("the {code} hook's deliveries to fail"), || async {
            let (_, log) = app.get(&format!("/v1/webhooks/{id}/deliveries")).await;
            let all = log["deliveries"].as_array().cloned().unwrap_or_default();
            (!all.is_empty() && all.iter().all(|d| d["status"] == "failed")).then_some(all)
        })
        .await;
        for d in &log {
            assert_eq!(d["last_status"], *code, "{d}");
            assert_eq!(d["last_error"], format!("receiver answered {code}"), "{d}");
        }
    }
    let redirected = receiver.received_requests().await.unwrap_or_default();
    assert!(
        redirected.len() >= 2,
        "the receiver saw both hooks' deliveries"
    );
    let stolen = target.received_requests().await.unwrap_or_default();
    assert_eq!(
        stolen.len(),
        0,
        "the redirect target saw a request: {stolen:?}"
    );
    app.stop().await;
}

#[tokio::test]
async fn agent_endpoints_are_checked_at_registration() {
    let mut settings = strict_settings();
    settings.run_engine = false;
    let hosts = Hosts::default();
    hosts.set("pod.test", vec![ip("10.42.0.7")]);
    hosts.set("worker.test", vec![ip("127.0.0.1")]);
    settings.egress.hosts = hosts;
    let app = spawn_app_on(&fresh_database().await, settings).await;
    let register = |endpoint: &str| {
        app.post(
            "/v1/agents",
            json!({"agent_id": "a1", "role": "r", "skills": [], "tools": [],
                   "endpoint_url": endpoint, "max_concurrency": 1}),
        )
    };
    for (endpoint, why) in [
        ("http://10.0.0.1:9", "egress policy"),
        ("http://8.8.8.8", "egress policy"),
        ("http://169.254.169.254", "cloud metadata"),
        ("http://[fe80::1]:9", "link-local"),
        ("http://pod.test:9", "resolves to 10.42.0.7"),
        ("http://no-such-host.invalid:9", "does not resolve"),
        (
            "http://127.0.0.1:9/internal/admin/export?q=",
            "query string",
        ),
        ("http://127.0.0.1:9/internal/admin/export?", "query string"),
        ("http://127.0.0.1:9/internal/admin/export#", "fragment"),
        ("http://user:pass@127.0.0.1:9", "credentials"),
    ] {
        let (s, body) = register(endpoint).await;
        // The URL's own rules are 400; the policy's refusal of its address 422.
        let (status, code) = if matches!(why, "query string" | "fragment" | "credentials") {
            (StatusCode::BAD_REQUEST, "invalid_request")
        } else {
            (StatusCode::UNPROCESSABLE_ENTITY, "url_refused")
        };
        assert_eq!(s, status, "{endpoint}: {body}");
        assert_eq!(body["error"]["code"], code);
        assert_eq!(
            body["error"]["details"]["field"], "endpoint_url",
            "{endpoint}"
        );
        let message = body["error"]["message"].as_str().unwrap_or("");
        assert!(message.contains(why), "{endpoint}: {message}");
    }
    let (_, agents) = app.get("/v1/agents").await;
    assert_eq!(agents["agents"], json!([]), "nothing was stored");
    // Loopback (the default agent network), by address or by name, is accepted.
    let (s, body) = register("http://worker.test:9").await;
    assert_eq!(s, StatusCode::CREATED, "{body}");
    app.stop().await;
}

/// Waits for an attempt whose error mentions the egress policy.
async fn refused_attempt(app: &TestApp) -> String {
    wait_until("a dispatch refused by the egress policy", || async {
        sqlx::query_scalar::<_, String>(
            "SELECT error FROM task_attempts WHERE error LIKE '%refused by egress policy%' LIMIT 1",
        )
        .fetch_optional(&app.pool)
        .await
        .ok()
        .flatten()
    })
    .await
}

#[tokio::test]
async fn a_name_that_moves_outside_the_networks_is_refused_at_dispatch() {
    // The worker the name will point at after the "DNS change".
    let receiver = receiver_on([127, 0, 0, 2]).await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(202))
        .mount(&receiver)
        .await;
    let port = receiver.address().port();
    let hosts = Hosts::default();
    hosts.set("worker.test", vec![ip("127.0.0.1")]);
    let mut settings = strict_settings();
    settings.egress.agent_networks = egress::parse_networks("127.0.0.1/32").expect("cidr");
    settings.egress.hosts = hosts.clone();
    let app = spawn_app_on(&fresh_database().await, settings).await;
    // Allowed at registration: the name resolves to 127.0.0.1.
    app.register_fleet(&format!("http://worker.test:{port}"), 2)
        .await;
    // Now it resolves to 127.0.0.2, outside the agent networks.
    hosts.set("worker.test", vec![ip("127.0.0.2")]);
    let _m = app
        .create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let error = refused_attempt(&app).await;
    assert_eq!(
        error,
        format!("dispatch to http://worker.test:{port}/v1/tasks refused by egress policy")
    );
    let seen = receiver.received_requests().await.unwrap_or_default();
    assert_eq!(
        seen.len(),
        0,
        "the receiver heard from the service: {seen:?}"
    );
    app.stop().await;
}

#[tokio::test]
async fn a_webhook_whose_name_moves_inside_is_refused_at_delivery() {
    let receiver = receiver_on([127, 0, 0, 2]).await;
    Mock::given(method("POST"))
        .respond_with(ResponseTemplate::new(204))
        .mount(&receiver)
        .await;
    let port = receiver.address().port();
    let hosts = Hosts::default();
    // A public address at creation (TEST-NET would be refused; this one is public).
    hosts.set("hooks.test", vec![ip("93.184.215.14")]);
    let mut settings = strict_settings();
    settings.egress.hosts = hosts.clone();
    settings.webhook_retry.max_attempts = 1;
    let app = spawn_app_on(&fresh_database().await, settings).await;
    let (s, hook) = app
        .post(
            "/v1/webhooks",
            json!({"url": format!("http://hooks.test:{port}/hook"), "secret": SECRET}),
        )
        .await;
    assert_eq!(s, StatusCode::CREATED, "{hook}");
    let id = hook["id"].as_str().unwrap_or_default().to_owned();
    // DNS rebinding: the name now points at a loopback receiver.
    hosts.set("hooks.test", vec![ip("127.0.0.2")]);
    let worker = spawn_worker(5).await;
    app.register_fleet(&worker.url(), 4).await;
    app.create_mission(json!({"goal": "chain", "autonomy": "autonomous", "plan": chain_plan()}))
        .await;
    let log: Vec<Value> = wait_until("the deliveries to fail", || async {
        let (_, log) = app.get(&format!("/v1/webhooks/{id}/deliveries")).await;
        let all = log["deliveries"].as_array().cloned().unwrap_or_default();
        (!all.is_empty() && all.iter().all(|d| d["status"] == "failed")).then_some(all)
    })
    .await;
    for d in &log {
        assert_eq!(d["last_error"], "refused by egress policy", "{d}");
        assert_eq!(
            d["last_status"],
            Value::Null,
            "no status: nothing connected"
        );
    }
    // Each delivery was tried once and is recorded: a connection would show here.
    let seen = receiver.received_requests().await.unwrap_or_default();
    assert_eq!(
        seen.len(),
        0,
        "the receiver heard from the service: {seen:?}"
    );
    app.stop().await;
}
