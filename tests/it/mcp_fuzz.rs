//! Seeded fuzzing of `/mcp`: JSON-RPC 2.0 over the streamable HTTP
//! transport, stateless (no `Mcp-Session-Id`). Malformed JSON, wrong types,
//! batches, unknown methods and tools, wrong argument types, oversized and
//! deeply nested bodies, calls without `initialize`, session headers,
//! notifications, wrong tokens, a stalled body, then seeded mutations of
//! valid messages. Never a 5xx or a hang; errors are JSON-RPC 2.0 errors
//! with the standard codes (or the documented HTTP refusals with the JSON
//! error body), the id is echoed, and refused calls leave no row behind.
//! What each test sends and asserts is in `docs/fuzzing.md` ("The live
//! streams and /mcp").

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::{helpers::*, stream_fuzz::harness::Rng};

/// The seed of the mutations.
const SEED: u64 = 0x5EED_0000_03C9;
/// Longest any one request may take to answer.
const LIMIT: Duration = Duration::from_secs(15);
/// The body limit of the API (`BODY_LIMIT`).
const BODY_LIMIT: usize = 1024 * 1024;
const BOTH: &str = "application/json, text/event-stream";

/// One answer of `/mcp`.
#[derive(Debug)]
struct Answer {
    status: u16,
    content_type: String,
    session: bool,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// A client that opens a connection per request: the server closes one
/// whose body it refused unread (413), and a pooled client would reuse it.
fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .expect("client")
}

/// POSTs `body` to `/mcp` with `token` and extra `headers`, within [`LIMIT`].
async fn post(
    http: &reqwest::Client,
    app: &TestApp,
    token: Option<&str>,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Answer {
    let mut req = http
        .post(format!("{}/mcp", app.url))
        .header("content-type", "application/json")
        .header("accept", BOTH)
        .body(body);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    tokio::time::timeout(LIMIT, async {
        let resp = req.send().await.expect("send");
        let status = resp.status().as_u16();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_owned()
        };
        let content_type = header("content-type");
        let session = resp.headers().contains_key("mcp-session-id");
        let body = resp.text().await.expect("body");
        Answer {
            status,
            content_type,
            session,
            body,
        }
    })
    .await
    .unwrap_or_else(|_| panic!("/mcp did not answer within {LIMIT:?}"))
}

/// What an answer must be.
#[derive(Debug, Clone)]
enum Expect {
    /// 400, -32700, id null.
    Parse,
    /// 400, -32600, this id.
    Invalid(Value),
    /// 200, -32601, this id.
    NoMethod(Value),
    /// 200, -32602, this id.
    Params(Value),
    /// 202 and no body (a notification).
    Accepted,
    /// 200, a tool result with `isError` and this error code, this id.
    ToolError(Value, &'static str),
    /// 200, a result, this id.
    Result(Value),
    /// This status with the JSON error body of this code.
    Http(u16, &'static str),
}

/// Checks `a` against `expect`; returns the JSON body.
fn check(what: &str, a: &Answer, expect: &Expect) -> Value {
    let body = a.json();
    let ctx = format!("{what}: {} {:.400}", a.status, a.body);
    assert!(a.status < 500, "never a 5xx: {ctx}");
    assert!(
        !a.session,
        "a stateless server sends no Mcp-Session-Id: {ctx}"
    );
    let rpc_error = |status: u16, code: i64, id: &Value| {
        assert_eq!(a.status, status, "{ctx}");
        assert!(a.content_type.starts_with("application/json"), "{ctx}");
        assert_eq!(body["jsonrpc"], "2.0", "{ctx}");
        assert_eq!(body["error"]["code"], code, "{ctx}");
        assert!(body["error"]["message"].is_string(), "{ctx}");
        assert!(body.get("result").is_none(), "{ctx}");
        assert_eq!(&body["id"], id, "the id is echoed: {ctx}");
    };
    match expect {
        Expect::Parse => rpc_error(400, -32700, &Value::Null),
        Expect::Invalid(id) => rpc_error(400, -32600, id),
        Expect::NoMethod(id) => rpc_error(200, -32601, id),
        Expect::Params(id) => rpc_error(200, -32602, id),
        Expect::Accepted => {
            assert_eq!(a.status, 202, "{ctx}");
            assert!(a.body.is_empty(), "a notification gets no body: {ctx}");
        }
        Expect::ToolError(id, code) => {
            assert_eq!(a.status, 200, "{ctx}");
            assert_eq!(&body["id"], id, "{ctx}");
            assert_eq!(body["result"]["isError"], true, "{ctx}");
            assert_eq!(
                body["result"]["structuredContent"]["error"]["code"], *code,
                "{ctx}"
            );
        }
        Expect::Result(id) => {
            assert_eq!(a.status, 200, "{ctx}");
            assert_eq!(&body["id"], id, "{ctx}");
            assert!(body["result"].is_object(), "{ctx}");
            assert_ne!(body["result"]["isError"], true, "{ctx}");
        }
        Expect::Http(status, code) => {
            assert_eq!(a.status, *status, "{ctx}");
            assert_eq!(body["error"]["code"], *code, "{ctx}");
            assert!(body["error"]["message"].is_string(), "{ctx}");
            assert!(body["error"].get("details").is_some(), "{ctx}");
        }
    }
    body
}

/// A request object.
fn rpc(id: Value, method: &str, params: Value) -> Value {
    let mut m = json!({"jsonrpc": "2.0", "id": id, "method": method});
    if !params.is_null() {
        m["params"] = params;
    }
    m
}

/// A `tools/call` of `name` with `arguments`.
fn call_tool(id: i64, name: &str, arguments: Value) -> Value {
    rpc(
        json!(id),
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
}

fn bytes(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("json")
}

/// Rows of every table: refused calls must leave them as they were.
async fn row_counts(app: &TestApp) -> BTreeMap<String, i64> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT table_name::text FROM information_schema.tables
         WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 1",
    )
    .fetch_all(&app.pool)
    .await
    .expect("tables");
    let mut counts = BTreeMap::new();
    for t in tables {
        let n: i64 =
            sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM \"{t}\"")))
                .fetch_one(&app.pool)
                .await
                .expect("count");
        counts.insert(t, n);
    }
    counts
}

/// One case: what it is, the body, what must come back.
type Case = (String, Vec<u8>, Expect);

/// The hand-written cases: malformed JSON, wrong shapes and types, batches,
/// then [`routing_cases`].
fn shape_cases(rng: &mut Rng) -> Vec<Case> {
    let mut cases: Vec<Case> = Vec::new();
    let mut add =
        |what: &str, body: Vec<u8>, expect: Expect| cases.push((what.to_owned(), body, expect));
    let list = bytes(&rpc(json!(1), "tools/list", Value::Null));
    // Truncated at seeded points, and bodies that are not JSON at all.
    for _ in 0..12 {
        let cut = rng.below(list.len() - 1);
        add(
            &format!("truncated at {cut}"),
            list[..cut].to_vec(),
            Expect::Parse,
        );
    }
    for junk in [
        "",
        " ",
        "{",
        "}",
        "nul",
        "{\"jsonrpc\": \"2.0\",}",
        "{'a': 1}",
        "\u{feff}{}",
    ] {
        add(
            &format!("not JSON {junk:?}"),
            junk.as_bytes().to_vec(),
            Expect::Parse,
        );
    }
    add(
        "invalid UTF-8",
        b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"\xff\"}".to_vec(),
        Expect::Parse,
    );
    let deep = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
    add("nested 10,000 deep", deep.into_bytes(), Expect::Parse);
    // JSON, but not one request object.
    let null = Value::Null;
    for v in [
        json!([]),
        json!([rpc(json!(1), "ping", null.clone())]),
        json!([1, 2]),
        json!("ping"),
        json!(5),
        json!(null),
        json!(true),
    ] {
        add(
            &format!("not an object {v:.40}"),
            bytes(&v),
            Expect::Invalid(Value::Null),
        );
    }
    for id in [
        json!(null),
        json!(1.5),
        json!(true),
        json!({}),
        json!([1]),
        json!(18446744073709551615u64),
    ] {
        let v = json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
        add(&format!("id {id}"), bytes(&v), Expect::Invalid(Value::Null));
    }
    for version in [json!("1.0"), json!("2"), json!(2.0), json!(null)] {
        let v = json!({"jsonrpc": version, "id": 4, "method": "ping"});
        add(
            &format!("jsonrpc {version}"),
            bytes(&v),
            Expect::Invalid(json!(4)),
        );
    }
    add(
        "no jsonrpc",
        bytes(&json!({"id": 5, "method": "ping"})),
        Expect::Invalid(json!(5)),
    );
    for method in [json!(5), json!(null), json!(["ping"])] {
        let v = json!({"jsonrpc": "2.0", "id": "m", "method": method});
        add(
            &format!("method {method}"),
            bytes(&v),
            Expect::Invalid(json!("m")),
        );
    }
    add(
        "no method",
        bytes(&json!({"jsonrpc": "2.0", "id": 6})),
        Expect::Invalid(json!(6)),
    );
    add(
        "a response",
        bytes(&json!({"jsonrpc": "2.0", "id": 7, "result": {}})),
        Expect::Invalid(json!(7)),
    );
    add(
        "params a string",
        bytes(&json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": "x"})),
        Expect::Invalid(json!(8)),
    );
    cases.extend(routing_cases());
    cases
}

/// Well-formed requests the server must route as they say: unknown
/// methods, served ones with params that do not fit, notifications, sizes.
fn routing_cases() -> Vec<Case> {
    let mut cases: Vec<Case> = Vec::new();
    let mut add =
        |what: &str, body: Vec<u8>, expect: Expect| cases.push((what.to_owned(), body, expect));
    // Methods this server does not have.
    for (i, method) in [
        "frobnicate",
        "",
        "TOOLS/LIST",
        "tools/cal",
        "sampling/createMessage",
        "resources/read",
        "tools/list/",
        "😀",
    ]
    .iter()
    .enumerate()
    {
        add(
            &format!("method {method:?}"),
            bytes(&rpc(json!(100 + i), method, Value::Null)),
            Expect::NoMethod(json!(100 + i)),
        );
    }
    // Served methods whose params do not fit.
    for (i, (method, params)) in [
        ("tools/call", json!({})),
        ("tools/call", json!({"name": 5})),
        (
            "tools/call",
            json!({"name": "mission_status", "arguments": [1]}),
        ),
        (
            "tools/call",
            json!({"name": "mission_status", "arguments": "x"}),
        ),
        ("tools/call", json!([1, 2])),
        ("tools/call", json!(null)),
        ("initialize", json!({})),
        ("initialize", json!({"protocolVersion": 5})),
    ]
    .into_iter()
    .enumerate()
    {
        let v =
            json!({"jsonrpc": "2.0", "id": format!("p{i}"), "method": method, "params": params});
        add(
            &format!("{method} with {params}"),
            bytes(&v),
            Expect::Params(json!(format!("p{i}"))),
        );
    }
    // Notifications: never a body, whatever they say.
    for v in [
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
        json!({"jsonrpc": "2.0", "method": "notifications/whatever", "params": {"a": [1]}}),
        json!({"jsonrpc": "2.0", "method": "tools/call", "params": {"name": 5}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized", "params": "x"}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized", "params": [1]}),
    ] {
        add(&format!("notification {v}"), bytes(&v), Expect::Accepted);
    }
    // Over the body limit: 413 with the JSON error body.
    let big = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {"x": "y".repeat(BODY_LIMIT + 1)}});
    add(
        "a body over 1 MiB",
        bytes(&big),
        Expect::Http(413, "payload_too_large"),
    );
    cases
}

/// Tool calls whose arguments are wrong, for every tool `tools/list`
/// shows: each property with a value of another type, each required one
/// missing, unknown names and tools, oversized and deeply nested values.
fn tool_cases(tools: &[Value]) -> Vec<Case> {
    let mut cases = Vec::new();
    let mut id = 1000;
    let mut add = |what: String, name: &str, arguments: Value, code: &'static str| {
        id += 1;
        cases.push((
            what,
            bytes(&call_tool(id, name, arguments)),
            Expect::ToolError(json!(id), code),
        ));
    };
    let wrong = |schema: &Value| match schema["type"].as_str() {
        Some("string") => json!(5),
        Some("integer") => json!(1.5),
        Some("number") => json!("1"),
        Some("boolean") => json!("yes"),
        Some("object") => json!([1]),
        Some("array") => json!({"a": 1}),
        _ => Value::Null,
    };
    for tool in tools {
        let name = tool["name"].as_str().expect("a tool name");
        let schema = &tool["inputSchema"];
        let required: Vec<&str> = schema["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let props = schema["properties"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        for (prop, prop_schema) in &props {
            let bad = wrong(prop_schema);
            if bad.is_null() {
                continue;
            }
            let mut args = serde_json::Map::new();
            for r in &required {
                args.insert((*r).to_owned(), json!(uuid::Uuid::now_v7().to_string()));
            }
            args.insert(prop.clone(), bad.clone());
            add(
                format!("{name}.{prop} = {bad}"),
                name,
                Value::Object(args),
                "invalid_request",
            );
        }
        if !required.is_empty() {
            add(
                format!("{name} without arguments"),
                name,
                json!({}),
                "invalid_request",
            );
        }
        add(
            format!("{name} with an unknown argument"),
            name,
            json!({"colour": "red"}),
            "invalid_request",
        );
    }
    for name in [
        "nope",
        "",
        "CREATE_MISSION",
        "create_mission ",
        "😀",
        &"t".repeat(10_000),
    ] {
        add(
            format!("unknown tool {name:.20}"),
            name,
            json!({}),
            "not_found",
        );
    }
    let near_limit = "g".repeat(BODY_LIMIT - 4096);
    add(
        "a goal of 1 MiB".into(),
        "create_mission",
        json!({"goal": near_limit}),
        "invalid_request",
    );
    let nested = (0..100).fold(json!(1), |v, _| json!([v]));
    add(
        "a goal nested 100 deep".into(),
        "create_mission",
        json!({"goal": nested}),
        "invalid_request",
    );
    // Regression: beyond ±1e308 jsonb gives a number back as a decimal serde
    // cannot read; through MCP such a mission failed with internal_error.
    for constraints in [
        json!({"x": 1.7976931348623157e308}),
        json!({"a": [{"b": -1.7976931348623157e308}]}),
    ] {
        add(
            format!("create_mission constraints {constraints}"),
            "create_mission",
            json!({"goal": "g", "constraints": constraints}),
            "unstorable_value",
        );
    }
    cases
}

/// The weak oracle for any answer: never a 5xx; a 202 has no body; a
/// JSON-RPC answer is well formed, uses only the standard codes, echoes a
/// usable id, and no tool result is an internal error; anything else is a
/// 413 with the JSON error body.
fn check_any(what: &str, request: &[u8], a: &Answer) {
    let ctx = format!("{what}: {} {:.400}", a.status, a.body);
    assert!(a.status < 500, "never a 5xx: {ctx}");
    assert!(!a.session, "{ctx}");
    if a.status == 202 {
        assert!(a.body.is_empty(), "{ctx}");
        return;
    }
    let body: Value = serde_json::from_str(&a.body).unwrap_or_else(|_| panic!("not JSON: {ctx}"));
    if body.get("jsonrpc").is_none() {
        // Sent as JSON to a valid token: only the size limit is an HTTP refusal.
        assert_eq!(a.status, 413, "{ctx}");
        assert!(
            body["error"]["code"].is_string() && body["error"]["message"].is_string(),
            "{ctx}"
        );
        return;
    }
    assert_eq!(body["jsonrpc"], "2.0", "{ctx}");
    assert!(
        body.get("result").is_some() != body.get("error").is_some(),
        "one of result and error: {ctx}"
    );
    if let Some(code) = body["error"]["code"].as_i64() {
        assert!(
            [-32700, -32600, -32601, -32602].contains(&code),
            "a standard code: {ctx}"
        );
    }
    assert_ne!(
        body["result"]["structuredContent"]["error"]["code"], "internal_error",
        "{ctx}"
    );
    // The id of a request that got as far as having one is echoed.
    let sent: Value = serde_json::from_slice(request).unwrap_or(Value::Null);
    let usable = sent["id"].is_string() || sent["id"].is_i64();
    if usable && sent["jsonrpc"] == "2.0" && sent["method"].is_string() {
        assert_eq!(body["id"], sent["id"], "the id is echoed: {ctx}");
    }
}

/// initialize, the initialized notification, tools/list and one
/// create_mission, as a client would after the storm; returns the tools.
async fn normal_session(app: &TestApp, http: &reqwest::Client) -> Vec<Value> {
    let init = rpc(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "fuzz", "version": "1"}}),
    );
    let a = post(http, app, Some(&app.token), &[], bytes(&init)).await;
    let body = check("initialize", &a, &Expect::Result(json!(1)));
    assert_eq!(
        body["result"]["serverInfo"]["name"], "coordinator",
        "{body}"
    );
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let version = [("mcp-protocol-version", "2025-06-18")];
    let a = post(http, app, Some(&app.token), &version, bytes(&note)).await;
    check("initialized", &a, &Expect::Accepted);
    let a = post(
        http,
        app,
        Some(&app.token),
        &version,
        bytes(&rpc(json!(2), "tools/list", Value::Null)),
    )
    .await;
    let body = check("tools/list", &a, &Expect::Result(json!(2)));
    let tools = body["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        tools.iter().any(|t| t["name"] == "create_mission"),
        "{body}"
    );
    let before: i64 = sqlx::query_scalar("SELECT count(*) FROM orchestration_runs")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    let create = call_tool(
        3,
        "create_mission",
        json!({"goal": "after the storm", "autonomy": "approve"}),
    );
    let a = post(http, app, Some(&app.token), &version, bytes(&create)).await;
    let body = check("create_mission", &a, &Expect::Result(json!(3)));
    let id = body["result"]["structuredContent"]["mission_id"]
        .as_str()
        .expect("mission_id");
    let after: i64 = sqlx::query_scalar("SELECT count(*) FROM orchestration_runs")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(after, before + 1, "the one mission {id}");
    tools
}

/// An app with agents (so missions can be planned) and one quiet mission.
async fn app_with_a_mission() -> (TestApp, String) {
    let app = spawn_app().await;
    app.register_fleet("http://127.0.0.1:9", 1).await;
    let m = app
        .create_mission(json!({"goal": "fuzz mcp", "autonomy": "approve", "plan": chain_plan()}))
        .await;
    let id = m["id"].as_str().expect("id").to_owned();
    (app, id)
}

/// Asserts no table gained or lost a row since `before`.
async fn assert_rows_unchanged(app: &TestApp, before: &BTreeMap<String, i64>, what: &str) {
    let after = row_counts(app).await;
    let changed: Vec<String> = after
        .iter()
        .filter(|(t, n)| before.get(*t) != Some(*n))
        .map(|(t, n)| format!("{t}: {:?} -> {n}", before.get(t)))
        .collect();
    assert!(changed.is_empty(), "{what} left rows behind: {changed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_json_rpc_gets_the_standard_errors_and_leaves_no_row() {
    let started = Instant::now();
    let (app, mission) = app_with_a_mission().await;
    let http = client();
    let tools = {
        let a = post(
            &http,
            &app,
            Some(&app.token),
            &[],
            bytes(&rpc(json!(0), "tools/list", Value::Null)),
        )
        .await;
        check(
            "tools/list without initialize",
            &a,
            &Expect::Result(json!(0)),
        )["result"]["tools"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let before = row_counts(&app).await;
    let mut rng = Rng::new(SEED);
    let mut cases = shape_cases(&mut rng);
    cases.extend(tool_cases(&tools));
    for (what, body, expect) in &cases {
        let a = post(&http, &app, Some(&app.token), &[], body.clone()).await;
        check(what, &a, expect);
    }
    // No session exists: a client's session header changes nothing, and a
    // call needs no initialize first.
    let status = call_tool(1, "mission_status", json!({"mission_id": mission}));
    for session in [
        "abc",
        "00000000-0000-0000-0000-000000000000",
        &"s".repeat(4096),
        "",
    ] {
        let a = post(
            &http,
            &app,
            Some(&app.token),
            &[("mcp-session-id", session)],
            bytes(&status),
        )
        .await;
        check(
            &format!("session {session:.20}"),
            &a,
            &Expect::Result(json!(1)),
        );
    }
    // The MCP-Protocol-Version header: one rmcp knows, or 400 (the spec's answer).
    for (version, expect) in [
        ("2025-06-18", Expect::Result(json!(1))),
        ("2024-11-05", Expect::Result(json!(1))),
        ("1999-01-01", Expect::Http(400, "invalid_request")),
        ("latest", Expect::Http(400, "invalid_request")),
        ("", Expect::Http(400, "invalid_request")),
    ] {
        let headers = [("mcp-protocol-version", version)];
        let a = post(&http, &app, Some(&app.token), &headers, bytes(&status)).await;
        check(&format!("protocol version {version:?}"), &a, &expect);
    }
    assert_rows_unchanged(&app, &before, "refused calls").await;
    normal_session(&app, &http).await;
    println!(
        "mcp_fuzz figures: cases={} secs={:.1}",
        cases.len() + 9,
        started.elapsed().as_secs_f64()
    );
    app.stop().await;
}

// ------------------------------------------------------------- mutations

/// JSON pointers of every node of `v`.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                pointers(
                    child,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                pointers(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
    out.push(at);
}

/// A value of any kind, some of them hostile.
fn any_value(rng: &mut Rng) -> Value {
    match rng.below(14) {
        0 => Value::Null,
        1 => json!(rng.below(2) == 0),
        2 => json!(-1),
        3 => json!(1.5),
        4 => json!(1.7976931348623157e308),
        5 => json!(u64::MAX),
        6 => json!(""),
        7 => json!("x".repeat(1 + rng.below(300_000))),
        8 => json!([]),
        9 => json!({}),
        10 => (0..1 + rng.below(120)).fold(json!(0), |v, _| json!([v])),
        11 => json!("😀\u{0}\u{202e}"),
        12 => json!(uuid::Uuid::now_v7().to_string()),
        _ => json!({"name": "mission_status", "arguments": {"mission_id": 5}}),
    }
}

/// One seeded mutation of `msg`, as bytes.
fn mutate(rng: &mut Rng, mut msg: Value) -> Vec<u8> {
    for _ in 0..1 + rng.below(3) {
        let mut at = Vec::new();
        pointers(&msg, String::new(), &mut at);
        // Mostly inside the params, where the handlers look.
        let inside: Vec<String> = at
            .iter()
            .filter(|p| p.starts_with("/params"))
            .cloned()
            .collect();
        let target = if !inside.is_empty() && rng.below(3) > 0 {
            rng.pick(&inside).clone()
        } else {
            rng.pick(&at).clone()
        };
        match rng.below(6) {
            0 if !target.is_empty() => {
                let (parent, key) = target.rsplit_once('/').unwrap_or(("", ""));
                if let Some(Value::Object(m)) = msg.pointer_mut(parent) {
                    m.remove(&key.replace("~1", "/").replace("~0", "~"));
                }
            }
            1 | 2 => {
                let v = any_value(rng);
                if let Some(node) = msg.pointer_mut(&target) {
                    *node = v;
                }
            }
            3 => {
                let v = any_value(rng);
                if let Some(Value::Object(m)) = msg.pointer_mut(&target) {
                    m.insert(
                        ["id", "jsonrpc", "method", "params", "x/y", "_meta"][rng.below(6)].into(),
                        v,
                    );
                }
            }
            4 if rng.below(3) == 0 => msg = json!([msg]),
            _ => {}
        }
    }
    let mut out = bytes(&msg);
    match rng.below(12) {
        0 => out.truncate(rng.below(out.len())),
        1 => {
            let at = rng.below(out.len());
            out[at] = (rng.next_u64() & 0xff) as u8;
        }
        2 => out.extend_from_within(..),
        _ => {}
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seeded_mutations_of_valid_messages_never_break_the_server() {
    let started = Instant::now();
    let (app, mission) = app_with_a_mission().await;
    let http = client();
    let nobody = uuid::Uuid::now_v7().to_string();
    // Calls that read, or write to a mission that does not exist: however
    // they are mutated, none can create anything.
    let corpus = [
        rpc(
            json!(1),
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "f", "version": "1"}}),
        ),
        rpc(json!("two"), "ping", Value::Null),
        rpc(json!(3), "tools/list", json!({"cursor": "x"})),
        call_tool(4, "mission_status", json!({"mission_id": mission})),
        call_tool(5, "list_missions", json!({})),
        call_tool(6, "approve_plan", json!({"mission_id": nobody})),
        call_tool(
            7,
            "cancel_mission",
            json!({"mission_id": nobody, "reason": "r"}),
        ),
        call_tool(
            8,
            "update_mission",
            json!({"mission_id": nobody, "title": "t"}),
        ),
        call_tool(9, "delete_mission", json!({"mission_id": nobody})),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 4}}),
    ];
    let before = row_counts(&app).await;
    let mut rng = Rng::new(SEED ^ 0xABCD);
    let mut statuses: BTreeMap<u16, usize> = BTreeMap::new();
    for i in 0..400 {
        let base = rng.pick(&corpus).clone();
        let body = mutate(&mut rng, base);
        let a = post(&http, &app, Some(&app.token), &[], body.clone()).await;
        *statuses.entry(a.status).or_default() += 1;
        check_any(
            &format!("mutation {i}: {:.200}", String::from_utf8_lossy(&body)),
            &body,
            &a,
        );
    }
    assert_rows_unchanged(&app, &before, "mutated calls").await;
    normal_session(&app, &http).await;
    println!(
        "mcp_fuzz figures: mutations=400 statuses={statuses:?} secs={:.1}",
        started.elapsed().as_secs_f64()
    );
    app.stop().await;
}

// ------------------------------------------------------ tokens and bodies

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_tokens_and_other_workspaces_get_nothing_through_mcp() {
    let (app, mission) = app_with_a_mission().await;
    let http = client();
    let list = bytes(&rpc(json!(1), "tools/list", Value::Null));
    for token in [
        "",
        "cot_not-a-real-token",
        &format!("{}x", app.token),
        &"a".repeat(10_240),
    ] {
        let a = post(&http, &app, Some(token), &[], list.clone()).await;
        check(
            &format!("token {token:.20}"),
            &a,
            &Expect::Http(401, "unauthorized"),
        );
    }
    let a = post(&http, &app, None, &[], list.clone()).await;
    check("no token", &a, &Expect::Http(401, "unauthorized"));
    // Revoked and expired tokens of this workspace.
    let ws: uuid::Uuid = sqlx::query_scalar("SELECT workspace_id FROM orchestration_runs LIMIT 1")
        .fetch_one(&app.pool)
        .await
        .expect("workspace");
    let mut conn = app.pool.acquire().await.expect("a connection");
    let past = time::OffsetDateTime::now_utc() - time::Duration::minutes(1);
    for (name, expires) in [("revoked", None), ("expired", Some(past))] {
        let secret = coordinator::auth::generate_token();
        let id = coordinator::auth::insert_token_until(
            &mut conn,
            ws,
            coordinator::auth::Role::Admin,
            name,
            None,
            &secret,
            expires,
        )
        .await
        .expect("insert token");
        if expires.is_none() {
            sqlx::query("UPDATE api_tokens SET revoked_at = now() WHERE id = $1")
                .bind(id)
                .execute(&mut *conn)
                .await
                .expect("revoke");
        }
        let a = post(&http, &app, Some(&secret), &[], list.clone()).await;
        check(name, &a, &Expect::Http(401, "unauthorized"));
    }
    drop(conn);
    // Another workspace's admin: our mission does not exist for it.
    let theirs = other_workspace_token(&app).await;
    let status = call_tool(2, "mission_status", json!({"mission_id": mission}));
    let a = post(&http, &app, Some(&theirs), &[], bytes(&status)).await;
    check(
        "another workspace's mission",
        &a,
        &Expect::ToolError(json!(2), "not_found"),
    );
    let a = post(
        &http,
        &app,
        Some(&theirs),
        &[],
        bytes(&call_tool(3, "list_missions", json!({}))),
    )
    .await;
    let body = check("their list", &a, &Expect::Result(json!(3)));
    assert!(
        !body.to_string().contains(&mission),
        "no mission of ours: {body}"
    );
    // A stakeholder sees fewer tools and may not create.
    let stakeholder = {
        let (s, body) = app
            .post(
                "/v1/tokens",
                json!({"role": "stakeholder", "name": "viewer"}),
            )
            .await;
        assert_eq!(s.as_u16(), 201, "{body}");
        body["token"].as_str().expect("token").to_owned()
    };
    let before = row_counts(&app).await;
    let create = call_tool(4, "create_mission", json!({"goal": "not allowed"}));
    let a = post(&http, &app, Some(&stakeholder), &[], bytes(&create)).await;
    check(
        "stakeholder create",
        &a,
        &Expect::ToolError(json!(4), "forbidden"),
    );
    assert_rows_unchanged(&app, &before, "a refused create").await;
    app.stop().await;
}

/// Regression: a body that stops arriving was answered 500 (rmcp's "failed
/// to read request body"); it is the REST routes' 400 `invalid_json`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_mcp_body_is_a_400_not_a_500() {
    let mut settings = test_settings();
    settings.connections.body_timeout = Duration::from_secs(1);
    let app = spawn_app_on(&fresh_database().await, settings).await;
    let addr: std::net::SocketAddr = app.url.trim_start_matches("http://").parse().expect("addr");
    let mut tcp = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\n\
         Accept: {BOTH}\r\nContent-Length: 100\r\n\r\n{{\"jsonrpc\"",
        app.token
    );
    tcp.write_all(head.as_bytes()).await.expect("send");
    let mut answer = Vec::new();
    let read = tokio::time::timeout(LIMIT, tcp.read_to_end(&mut answer)).await;
    assert!(read.is_ok(), "answered within {LIMIT:?}");
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 400"), "{text}");
    assert!(text.contains("\"code\":\"invalid_json\""), "{text}");
    app.stop().await;
}
