//! Security: every `/v1` route (read from the served OpenAPI document, so new
//! routes are covered as they appear) refuses missing, bad and revoked
//! tokens; a token of one workspace neither sees nor changes another's data;
//! agent tokens speak only for their agent; attempt tokens only for their
//! attempt; oversized and deeply nested bodies are refused before any
//! handler runs; rate limits answer 429 with `Retry-After`; and secrets never
//! reach logs, events or any table.

use std::{
    collections::{BTreeMap, BTreeSet},
    net::SocketAddr,
    process::Stdio,
    time::{Duration, Instant},
};

use axum::http::StatusCode;
use coordinator::{api::rate_limit::RateLimit, auth, db};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use tokio::io::AsyncReadExt;
use uuid::Uuid;

use crate::helpers::*;

/// Methods an operation can have, as the document spells them.
const METHODS: &[&str] = &["get", "put", "post", "delete", "patch"];

/// `/v1` operations that need no token, with the reason. None today: the
/// public routes (`/healthz`, `/readyz`, `/metrics`, `/openapi.json`, the
/// board page) live outside `/v1`.
const PUBLIC_V1: &[(&str, &str, &str)] = &[];

/// Every `(METHOD, path, operation)` under `/v1` in the served document.
async fn v1_operations(app: &TestApp) -> Vec<(Method, String, Value)> {
    let (status, doc) = app.request(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(status, StatusCode::OK, "{doc}");
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        if !path.starts_with("/v1/") {
            continue;
        }
        for (method, op) in item.as_object().expect("path item") {
            if METHODS.contains(&method.as_str()) {
                let method = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
                ops.push((method, path.clone(), op.clone()));
            }
        }
    }
    assert!(ops.len() > 50, "the document lists the /v1 routes");
    ops
}

/// The security scheme an operation declares (`api_token`, `attempt_token`), if any.
fn scheme(op: &Value) -> Option<String> {
    op["security"]
        .as_array()?
        .iter()
        .filter_map(Value::as_object)
        .flat_map(|o| o.keys().cloned())
        .next()
}

/// `path` with each `{param}` replaced by `fill(segment before it, param)`.
fn fill_path(path: &str, mut fill: impl FnMut(&str, &str) -> String) -> String {
    let mut out = Vec::new();
    let mut previous = "";
    for segment in path.split('/') {
        match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(param) => out.push(fill(previous, param)),
            None => out.push(segment.to_owned()),
        }
        previous = segment;
    }
    out.join("/")
}

/// Whether the method may carry a body we should send.
fn has_body(method: &Method) -> bool {
    [Method::POST, Method::PUT, Method::PATCH].contains(method)
}

fn assert_error(status: StatusCode, body: &Value, code: &str, what: &str) {
    assert_eq!(body["error"]["code"], code, "{what}: {status} {body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| !m.is_empty()),
        "{what}: {body}"
    );
    assert!(body["error"].get("details").is_some(), "{what}: {body}");
}

/// Sends `method path` with a raw `Authorization` header value (or none).
async fn raw(
    app: &TestApp,
    method: Method,
    path: &str,
    authorization: Option<&str>,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = app.http.request(method, format!("{}{path}", app.url));
    if let Some(a) = authorization {
        req = req.header("authorization", a);
    }
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.expect("request");
    let status = StatusCode::from_u16(resp.status().as_u16()).expect("status");
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// Mints a token of `role` with the admin token `admin`; returns (id, secret).
async fn mint(app: &TestApp, admin: &str, role: &str, agent: Option<&str>) -> (Uuid, String) {
    mint_at(&app.http, &app.url, admin, role, agent).await
}

/// [`mint`] on the service at `base`.
async fn mint_at(
    http: &reqwest::Client,
    base: &str,
    admin: &str,
    role: &str,
    agent: Option<&str>,
) -> (Uuid, String) {
    let mut body = json!({"role": role});
    if let Some(a) = agent {
        body["agent_id"] = json!(a);
    }
    let (status, t) = call(
        http,
        base,
        Method::POST,
        "/v1/tokens",
        Some(body),
        Some(admin),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{t}");
    (
        t["id"].as_str().and_then(|s| s.parse().ok()).expect("id"),
        t["token"].as_str().expect("secret").to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_v1_route_refuses_missing_malformed_unknown_and_revoked_tokens() {
    let app = spawn_app().await;
    let (revoked_id, revoked) = mint(&app, &app.token, "operator", None).await;
    let (status, _) = app
        .request(Method::GET, "/v1/missions", None, Some(&revoked))
        .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "the token works before it is revoked"
    );
    sqlx::query("UPDATE api_tokens SET revoked_at = now() WHERE id = $1")
        .bind(revoked_id)
        .execute(&app.pool)
        .await
        .expect("revoke");
    let revoked_header = format!("Bearer {revoked}");
    let unknown = format!("Bearer {}", auth::generate_token());

    let (status, doc) = app.request(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(status, StatusCode::OK);
    let ops = v1_operations(&app).await;
    for (method, path, op) in &ops {
        let public = PUBLIC_V1
            .iter()
            .any(|(m, p, _)| *m == method.as_str() && p == path);
        assert!(!public || scheme(op).is_none(), "{method} {path}");
        if public {
            continue;
        }
        let scheme = scheme(op).unwrap_or_else(|| {
            panic!("{method} {path} declares no security and is not listed in PUBLIC_V1")
        });
        let url = fill_path(path, |_, _| Uuid::new_v4().to_string());
        // A well-formed body, so a refusal cannot come from body validation.
        let body = has_body(method).then(|| {
            body_schema(op)
                .map(|s| example(&doc, s, "", &BTreeMap::new(), 0))
                .unwrap_or_else(|| json!({}))
        });
        let mut cases: Vec<(&str, Option<&str>)> = vec![
            ("no token", None),
            ("basic scheme", Some("Basic dXNlcjpwYXNz")),
            ("empty bearer", Some("Bearer ")),
            ("unknown token", Some(unknown.as_str())),
        ];
        if scheme == "api_token" {
            cases.push(("revoked token", Some(revoked_header.as_str())));
        } else {
            // Attempt routes take attempt tokens only: an API token is unknown there.
            cases.push((
                "API token on an attempt route",
                Some("Bearer test-admin-token-0123456789abcdef0123456789"),
            ));
        }
        for (what, authorization) in cases {
            let (status, body) = raw(&app, method.clone(), &url, authorization, body.clone()).await;
            let what = format!("{method} {path} with {what}");
            // Attempt routes answer an unknown attempt exactly like a wrong
            // token: 401, so they reveal nothing about which ids exist.
            assert_eq!(status, StatusCode::UNAUTHORIZED, "{what}: {body}");
            assert_error(status, &body, "unauthorized", &what);
        }
    }
    // Nothing was written by any of those requests.
    for table in [
        "orchestration_runs",
        "agents",
        "agent_messages",
        "webhooks",
        "reservations",
    ] {
        let (n,): (i64,) =
            sqlx::query_as(sqlx::AssertSqlSafe(format!("SELECT count(*) FROM {table}")))
                .fetch_one(&app.pool)
                .await
                .expect("count");
        assert_eq!(n, 0, "{table}");
    }
    app.stop().await;
}

/// Ids of workspace B's resources, keyed `segment/{param}` (the path segment
/// before the parameter, e.g. `missions/{id}`, `tasks/{task}`).
type Ids = BTreeMap<String, String>;

/// The key of `{param}` after `segment` in [`Ids`].
fn id_key(segment: &str, param: &str) -> String {
    format!("{segment}/{{{param}}}")
}

/// A minimal value for `schema`: required properties only, ids taken from
/// `fields` by property name (so a body points at workspace B's resources).
fn example(
    doc: &Value,
    schema: &Value,
    name: &str,
    fields: &BTreeMap<&str, Value>,
    depth: usize,
) -> Value {
    if let Some(v) = fields.get(name) {
        return v.clone();
    }
    if depth > 8 {
        return Value::Null;
    }
    let schema = match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => doc
            .pointer(r.trim_start_matches('#'))
            .unwrap_or(&Value::Null),
        None => schema,
    };
    // An object's own properties come first: its `allOf`/`anyOf`/`if` are
    // rules between them (`api::contract`), not alternative shapes.
    let own_properties = schema.get("properties").is_some();
    for key in ["oneOf", "anyOf"] {
        if own_properties {
            break;
        }
        if let Some(first) = schema[key]
            .as_array()
            .and_then(|v| v.iter().find(|s| s["type"] != "null"))
        {
            return example(doc, first, name, fields, depth + 1);
        }
    }
    if let Some(parts) = schema["allOf"].as_array().filter(|_| !own_properties) {
        let mut out = serde_json::Map::new();
        for part in parts {
            if let Value::Object(o) = example(doc, part, name, fields, depth + 1) {
                out.extend(o);
            }
        }
        return Value::Object(out);
    }
    if let Some(first) = schema["enum"].as_array().and_then(|e| e.first()) {
        return first.clone();
    }
    let ty = match &schema["type"] {
        Value::Array(types) => types
            .iter()
            .find(|t| *t != "null")
            .cloned()
            .unwrap_or(Value::Null),
        t => t.clone(),
    };
    match ty
        .as_str()
        .unwrap_or(if schema.get("properties").is_some() {
            "object"
        } else {
            ""
        }) {
        "object" => {
            let mut out = serde_json::Map::new();
            let required: BTreeSet<&str> = schema["required"]
                .as_array()
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if let Some(props) = schema["properties"].as_object() {
                for (prop, sub) in props {
                    if required.contains(prop.as_str()) || fields.contains_key(prop.as_str()) {
                        out.insert(prop.clone(), example(doc, sub, prop, fields, depth + 1));
                    }
                }
            }
            Value::Object(out)
        }
        "array" => {
            let min = schema["minItems"].as_u64().unwrap_or(0).max(1);
            Value::Array(
                (0..min)
                    .map(|_| example(doc, &schema["items"], name, fields, depth + 1))
                    .collect(),
            )
        }
        "integer" => json!(1),
        "number" => json!(1.0),
        "boolean" => json!(false),
        "string" => match schema["format"].as_str() {
            Some("uuid") => json!(Uuid::new_v4()),
            Some("date-time") => json!("2030-01-01T00:00:00Z"),
            Some("date") => json!("2030-01-01"),
            _ => json!("x"),
        },
        _ => json!({}),
    }
}

/// Whether an answer is an object of empty lists (`{"webhooks": []}`).
fn text_is_empty_list(v: &Value) -> bool {
    v.as_object().is_some_and(|o| {
        !o.is_empty()
            && o.values()
                .all(|x| x.as_array().is_some_and(Vec::is_empty) || !x.is_array() && !x.is_object())
            && o.values().any(|x| x.is_array())
    })
}

/// The request body schema of an operation, if it has one.
fn body_schema(op: &Value) -> Option<&Value> {
    op["requestBody"]["content"]["application/json"].get("schema")
}

/// Resources of workspace B made through its own API, in dependency order:
/// (collection route, key of the id it answers).
const B_RESOURCES: &[(&str, &str, &str)] = &[
    (
        "put",
        "/v1/agents/{agent_id}/beliefs",
        "beliefs/{belief_id}",
    ),
    (
        "post",
        "/v1/agents/{agent_id}/desires",
        "desires/{desire_id}",
    ),
    ("post", "/v1/agents/{agent_id}/goals", "goals/{goal_id}"),
    (
        "post",
        "/v1/agents/{agent_id}/intentions",
        "intentions/{intention_id}",
    ),
    (
        "post",
        "/v1/agents/{agent_id}/subscriptions",
        "subscriptions/{id}",
    ),
    ("post", "/v1/tenders", "tenders/{id}"),
    ("post", "/v1/decisions", "decisions/{id}"),
    ("post", "/v1/handoffs", "handoffs/{id}"),
    ("post", "/v1/reservations", "reservations/{id}"),
    (
        "post",
        "/v1/missions/{id}/team-decisions",
        "team-decisions/{id}",
    ),
    ("post", "/v1/contractors", "contractors/{id}"),
    ("post", "/v1/webhooks", "webhooks/{id}"),
    ("post", "/v1/work-packages", "work-packages/{id}"),
];

/// Ids that cannot be made through B's API without running the engine
/// (which would change B's rows during the test), with the reason; the
/// routes are still called, with an id that exists nowhere.
const UNMATERIALISED: &[(&str, &str)] = &[(
    "tool-approvals/{id}",
    "tool approvals are requested by a live attempt through its callback",
)];

/// Routes that run a job shared by all workspaces: the tables of other
/// workspaces they may touch, and why that is acceptable.
const SYSTEM_WIDE: &[(&str, &str, &[&str], &str)] = &[(
    "POST",
    "/v1/bdi/maintenance",
    &["bdi_desires"],
    "runs the scheduled BDI housekeeping now; re-sorting desire priorities is \
     idempotent and what the scheduler does every --bdi-interval-secs anyway",
)];

/// The first `id` in an answer: top level or one object down.
fn answer_id(v: &Value) -> Option<String> {
    let id = |o: &Value| match &o["id"] {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    id(v).or_else(|| {
        v.as_object()?
            .values()
            .find_map(|o| o.is_object().then(|| id(o)).flatten())
    })
}

/// Workspace B: an admin token and one of everything with an id, made
/// through B's own token. Returns (B's workspace id, B's admin token, ids).
async fn workspace_b(app: &TestApp, doc: &Value) -> (Uuid, String, Ids) {
    let mut conn = app.pool.acquire().await.expect("conn");
    let ws = auth::workspace_by_name(&mut conn, "workspace-b")
        .await
        .expect("workspace");
    let b_token = auth::generate_token();
    let b_token_id =
        auth::insert_token(&mut conn, ws, auth::Role::Admin, "b admin", None, &b_token)
            .await
            .expect("token");
    drop(conn);
    let b = |method: Method, path: String, body: Option<Value>| {
        let t = b_token.clone();
        async move {
            let (status, v) = app.request(method.clone(), &path, body, Some(&t)).await;
            assert!(status.is_success(), "B: {method} {path}: {status} {v}");
            v
        }
    };
    let mut ids = Ids::new();
    ids.insert("tokens/{id}".into(), b_token_id.to_string());
    let agent = "b-agent";
    b(
        Method::POST,
        "/v1/agents".into(),
        Some(
            json!({"agent_id": agent, "role": "researcher", "skills": ["research"],
                    "endpoint_url": "http://127.0.0.1:9", "max_concurrency": 2}),
        ),
    )
    .await;
    ids.insert("agents/{agent_id}".into(), agent.into());
    let mission = b(
        Method::POST,
        "/v1/missions".into(),
        Some(json!({"goal": "B-SECRET-GOAL", "autonomy": "autonomous", "plan": chain_plan()})),
    )
    .await;
    let mission_id = mission["id"].as_str().expect("mission id").to_owned();
    let mission_uuid: Uuid = mission_id.parse().expect("uuid");
    ids.insert("missions/{id}".into(), mission_id.clone());
    ids.insert("tasks/{task}".into(), "a".into());
    b(
        Method::PUT,
        format!("/v1/missions/{mission_id}/blackboard/b-secret"),
        Some(json!({"value": "B-SECRET-VALUE"})),
    )
    .await;
    ids.insert("blackboard/{key}".into(), "b-secret".into());
    let (task_id,): (Uuid,) = sqlx::query_as(
        "SELECT id FROM orchestration_tasks WHERE run_id = $1 ORDER BY created_at LIMIT 1",
    )
    .bind(mission_uuid)
    .fetch_one(&app.pool)
    .await
    .expect("task id");
    let message = b(
        Method::POST,
        "/v1/messages".into(),
        Some(json!({"from": agent, "to": agent, "performative": "INFORM",
                    "content": {"text": "B-SECRET-MESSAGE"}})),
    )
    .await;
    let message_id = answer_id(&message).expect("message id");
    ids.insert("messages/{id}".into(), message_id.clone());
    ids.insert("inbox/{message_id}".into(), message_id);
    if let Some(c) = message["conversation_id"].as_str() {
        ids.insert("conversations/{id}".into(), c.into());
    }

    // The rest from the document's schemas, pointing at B's agent, mission and task.
    let mut fields: BTreeMap<&str, Value> = BTreeMap::new();
    for key in ["agent_id", "from", "to", "agent", "holder", "proposer"] {
        fields.insert(key, json!(agent));
    }
    fields.insert("mission_id", json!(mission_id));
    fields.insert("task_id", json!(task_id));
    fields.insert("url", json!("http://127.0.0.1:9/hook"));
    fields.insert("endpoint_url", json!("http://127.0.0.1:9/hook"));
    fields.insert("eligible_agents", json!([agent]));
    fields.insert("kind", json!("terminal"));
    fields.insert("tier", json!("strategic"));
    fields.insert("scope", json!("file:/b-secret"));
    fields.insert("direction", json!("agent_to_human"));
    fields.insert("category", json!("environment"));
    fields.insert("title", json!("B-SECRET-TITLE"));
    fields.insert("secret", json!("b-secret-signing-key-0123456789"));
    fields.insert("options", json!([{"label": "yes"}, {"label": "no"}]));
    let mut failures = Vec::new();
    for (method, route, key) in B_RESOURCES {
        let op = &doc["paths"][*route][*method];
        let body = body_schema(op)
            .map(|s| example(doc, s, "", &fields, 0))
            .unwrap_or_else(|| json!({}));
        let path = fill_path(route, |segment, param| ids[&id_key(segment, param)].clone());
        let method = Method::from_bytes(method.to_uppercase().as_bytes()).expect("method");
        let (status, v) = app
            .request(method.clone(), &path, Some(body.clone()), Some(&b_token))
            .await;
        match answer_id(&v).filter(|_| status.is_success()) {
            Some(id) => {
                ids.insert((*key).into(), id);
            }
            None => failures.push(format!("{method} {path} {body}: {status} {v}")),
        }
    }
    assert!(failures.is_empty(), "B's resources: {failures:#?}");

    // Rows made by the service itself: board cards (one per task) and a
    // plan-library case (normally written when a mission finishes).
    let (card,): (Uuid,) =
        sqlx::query_as("SELECT id FROM board_tasks WHERE workspace_id = $1 LIMIT 1")
            .bind(ws)
            .fetch_one(&app.pool)
            .await
            .expect("a board card of B");
    ids.insert("cards/{id}".into(), card.to_string());
    let case = Uuid::new_v4();
    sqlx::query(
        "INSERT INTO plan_cases (id, workspace_id, run_id, goal, plan, structure, success)
         VALUES ($1, $2, $3, 'B-SECRET-CASE', '{}', 'sequential', true)",
    )
    .bind(case)
    .bind(ws)
    .bind(mission_uuid)
    .execute(&app.pool)
    .await
    .expect("plan case");
    ids.insert("cases/{id}".into(), case.to_string());
    ids.insert(
        "revisions/{belief_id}".into(),
        ids["beliefs/{belief_id}"].clone(),
    );
    // Tools are global; this one reads the mission named in its arguments.
    ids.insert("tools/{name}".into(), "mission_status".into());
    // A workflow with an instance waiting at a person's task.
    let workflow = b(
        Method::POST,
        "/v1/workflows".into(),
        Some(json!({"name": "B-SECRET-WORKFLOW"})),
    )
    .await;
    let workflow_id = workflow["id"].as_str().expect("workflow id").to_owned();
    for (node, kind) in [
        ("b_start", "startEvent"),
        ("b_task", "userTask"),
        ("b_end", "endEvent"),
    ] {
        b(
            Method::POST,
            format!("/v1/workflows/{workflow_id}/nodes"),
            Some(json!({"id": node, "type": kind, "name": node})),
        )
        .await;
    }
    for (flow, from, to) in [("b_f1", "b_start", "b_task"), ("b_f2", "b_task", "b_end")] {
        b(
            Method::POST,
            format!("/v1/workflows/{workflow_id}/flows"),
            Some(json!({"id": flow, "source": from, "target": to})),
        )
        .await;
    }
    let instance = b(
        Method::POST,
        format!("/v1/workflows/{workflow_id}/instances"),
        Some(json!({"variables": {"secret": "B-SECRET-VARIABLE"}})),
    )
    .await;
    ids.insert("workflows/{id}".into(), workflow_id);
    ids.insert("nodes/{node_id}".into(), "b_task".into());
    ids.insert(
        "workflow-instances/{id}".into(),
        instance["id"].as_str().expect("instance id").to_owned(),
    );
    ids.insert(
        "tokens/{token}".into(),
        instance["human_tasks"][0]["token"].to_string(),
    );
    for (key, _why) in UNMATERIALISED {
        ids.insert((*key).into(), Uuid::new_v4().to_string());
    }
    (ws, b_token, ids)
}

/// A digest of every row of workspace B in every table that has a
/// `workspace_id` column.
async fn snapshot(pool: &PgPool, ws: Uuid) -> BTreeMap<String, String> {
    let tables: Vec<(String,)> = sqlx::query_as(
        "SELECT table_name::text FROM information_schema.columns
         WHERE column_name = 'workspace_id' AND table_schema = 'public' ORDER BY 1",
    )
    .fetch_all(pool)
    .await
    .expect("tables");
    let mut out = BTreeMap::new();
    for (table,) in tables {
        let (digest,): (Option<String>,) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM {table} t WHERE workspace_id = $1"
        )))
        .bind(ws)
        .fetch_one(pool)
        .await
        .expect("digest");
        out.insert(table, digest.unwrap_or_default());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_of_one_workspace_neither_sees_nor_changes_another() {
    // No engine: nothing but these requests may change B's rows.
    let mut settings = test_settings();
    settings.run_engine = false;
    let app = spawn_app_on(&fresh_database().await, settings).await;
    let (status, doc) = app.request(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(status, StatusCode::OK);
    let (ws, _b_token, ids) = workspace_b(&app, &doc).await;
    let mut before = snapshot(&app.pool, ws).await;
    let unmaterialised: BTreeSet<&str> = UNMATERIALISED.iter().map(|(k, _)| *k).collect();
    let b_values: Vec<String> = ids
        .iter()
        .filter(|(k, v)| {
            v.len() > 3 && !unmaterialised.contains(k.as_str()) && k.as_str() != "tools/{name}"
        })
        .map(|(_, v)| v.clone())
        .collect();
    let mut fields: BTreeMap<&str, Value> = BTreeMap::new();
    for key in [
        "agent_id",
        "from",
        "to",
        "agent",
        "holder",
        "assignee",
        "recipient",
    ] {
        fields.insert(key, json!(ids["agents/{agent_id}"]));
    }
    fields.insert("mission_id", json!(ids["missions/{id}"]));
    fields.insert("message_id", json!(ids["messages/{id}"]));
    for (key, value) in [
        ("category", json!("environment")),
        ("kind", json!("terminal")),
        ("tier", json!("strategic")),
        ("status", json!("active")),
        ("secret", json!("a-secret-signing-key-0123456789")),
        ("options", json!([{"label": "yes"}, {"label": "no"}])),
    ] {
        fields.insert(key, value);
    }

    let ops: Vec<_> = v1_operations(&app)
        .await
        .into_iter()
        .filter(|(_, _, op)| scheme(op).as_deref() == Some("api_token"))
        .collect();
    // Every path parameter needs one of B's ids: a new route's parameter
    // fails here until `workspace_b` creates the resource.
    let mut missing = BTreeSet::new();
    for (_, path, _) in &ops {
        fill_path(path, |segment, param| {
            let key = id_key(segment, param);
            if !ids.contains_key(&key) {
                missing.insert(format!("{key} (in {path})"));
            }
            String::new()
        });
    }
    assert!(missing.is_empty(), "no id of workspace B for: {missing:#?}");
    let mut refusals: BTreeMap<u16, usize> = BTreeMap::new();
    for (method, path, op) in ops {
        let url = fill_path(&path, |segment, param| ids[&id_key(segment, param)].clone());
        let body = has_body(&method).then(|| {
            let mut body = body_schema(&op)
                .map(|s| example(&doc, s, "", &fields, 0))
                .unwrap_or_else(|| json!({}));
            // Values the schemas do not spell out (free strings checked by
            // the handler), so the request reaches the workspace check.
            let extra = match path.as_str() {
                "/v1/tools/{name}" => json!({"mission_id": ids["missions/{id}"]}),
                "/v1/board/cards/{id}/move" => json!({"to": "ready"}),
                "/v1/work-packages/{id}/transition" => json!({"to": "open"}),
                "/v1/work-packages/{id}/progress" => json!({"progress": 50}),
                "/v1/missions/{id}/allocation" => json!({"allocation": "tender"}),
                "/v1/missions/{id}/review" => json!({"decision": "accept"}),
                // Its document schema is the governance one (same name).
                "/v1/missions/{id}/tasks/{task}/resolve" => json!({"action": "skip"}),
                _ => json!({}),
            };
            if let (Value::Object(b), Value::Object(e)) = (&mut body, extra) {
                if path == "/v1/missions/{id}/tasks/{task}/resolve" {
                    b.clear();
                }
                b.extend(e);
            }
            body
        });
        let (status, answer) = app
            .request(method.clone(), &url, body.clone(), Some(&app.token))
            .await;
        let what = format!("{method} {url} body {body:?}: {status} {answer}");
        let text = answer.to_string();
        // Error messages may echo the ids asked for; successes must not hold any.
        if status.is_success() {
            for v in &b_values {
                assert!(!text.contains(v.as_str()), "reveals B's {v}: {what}");
            }
        }
        assert!(!text.contains("B-SECRET"), "reveals B's data: {what}");
        // A's token is valid: a 401 would hide whether isolation works.
        assert_ne!(status, StatusCode::UNAUTHORIZED, "{what}");
        assert!(!status.is_server_error(), "{what}");
        // Anything aimed at one of B's resources is refused (404 or 403 for
        // the ids, 4xx for bodies naming B's things). A list read through B's
        // agent id may answer 200 with nothing in it: checked above that it
        // holds nothing of B's.
        if path.contains('{') && !(method == Method::GET && text_is_empty_list(&answer)) {
            assert!(status.is_client_error(), "{what}");
        }
        if path.contains('{') {
            *refusals.entry(status.as_u16()).or_insert(0) += 1;
            // SECURITY_DEBUG=1 lists the other answers, to fix bodies when a
            // new route lowers the share of 404/403 below.
            if std::env::var_os("SECURITY_DEBUG").is_some()
                && ![404, 403].contains(&status.as_u16())
            {
                eprintln!("{what}");
            }
        }
        // Checked after every request, so a failure names the route.
        let now = snapshot(&app.pool, ws).await;
        let changed: Vec<&String> = now
            .keys()
            .filter(|t| now.get(*t) != before.get(*t))
            .collect();
        if let Some((_, _, allowed, _)) = SYSTEM_WIDE
            .iter()
            .find(|(m, p, _, _)| *m == method.as_str() && *p == path)
        {
            assert!(
                changed.iter().all(|t| allowed.contains(&t.as_str())),
                "B's {changed:?} changed by {what}"
            );
            before = now;
            continue;
        }
        assert!(changed.is_empty(), "B's {changed:?} changed by {what}");
    }
    assert_eq!(snapshot(&app.pool, ws).await, before, "B's rows changed");
    // Most refusals must come from the workspace check (404/403), not from
    // bodies the handlers could not even parse.
    let found = refusals.get(&404).copied().unwrap_or(0) + refusals.get(&403).copied().unwrap_or(0);
    let total: usize = refusals.values().sum();
    eprintln!("answers to B's ids: {refusals:?}");
    assert!(found * 10 >= total * 9, "too few 404/403: {refusals:?}");
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_and_deeply_nested_bodies_are_refused_before_the_handler() {
    let app = spawn_app().await;
    // 2 MiB of valid JSON on a route that would otherwise create a mission.
    let big = json!({"goal": "x".repeat(2 * 1024 * 1024)});
    let (status, body) = app.post("/v1/missions", big).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
    assert_error(status, &body, "payload_too_large", "oversized body");
    // 10,000 nested arrays in a field that takes any JSON: refused fast
    // (serde_json's depth limit), the server stays up.
    let deep = format!(
        "{{\"goal\": \"x\", \"constraints\": {}{}}}",
        "[".repeat(10_000),
        "]".repeat(10_000)
    );
    let started = Instant::now();
    // A fresh connection: the server closes the one whose body it cut short.
    let resp = reqwest::Client::new()
        .post(format!("{}/v1/missions", app.url))
        .bearer_auth(&app.token)
        .header("content-type", "application/json")
        .body(deep)
        .send()
        .await
        .expect("deep request");
    assert_eq!(resp.status().as_u16(), 400);
    let body: Value = resp.json().await.expect("json error");
    assert_error(StatusCode::BAD_REQUEST, &body, "invalid_json", "deep body");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "refused quickly"
    );
    let (status, _) = app.get("/healthz").await;
    assert_eq!(status, StatusCode::OK, "still alive");
    let (n,): (i64,) = sqlx::query_as("SELECT count(*) FROM orchestration_runs")
        .fetch_one(&app.pool)
        .await
        .expect("count");
    assert_eq!(n, 0, "no mission was created");

    // Routes that read their body raw (optional or non-JSON bodies) refuse an
    // oversized one with the same JSON error, not axum's plain text.
    let raw_routes = [
        "/v1/tools/list_missions".to_owned(),
        format!("/v1/attempts/{}/heartbeat", uuid::Uuid::now_v7()),
        "/v1/agents/nobody/heartbeat".to_owned(),
    ];
    for path in raw_routes {
        let resp = reqwest::Client::new()
            .post(format!("{}{path}", app.url))
            .bearer_auth(&app.token)
            .header("content-type", "application/json")
            .body(format!("{{\"x\": \"{}\"}}", "y".repeat(2 * 1024 * 1024)))
            .send()
            .await
            .expect("oversized request");
        let status = StatusCode::from_u16(resp.status().as_u16()).expect("status");
        let text = resp.text().await.expect("body");
        let body: Value = serde_json::from_str(&text)
            .unwrap_or_else(|_| panic!("{path}: not a JSON error body: {text:.200}"));
        assert_error(status, &body, "payload_too_large", &path);
    }
    app.stop().await;
}

/// An app whose API allows `burst` requests then `per_sec` per second.
async fn limited_app(per_sec: f64, burst: u32) -> TestApp {
    let mut settings = test_settings();
    settings.rate_limit = RateLimit { per_sec, burst };
    spawn_app_on(&fresh_database().await, settings).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_over_the_rate_limit_get_429_with_retry_after() {
    // One request per 5 s after a burst of 5, so a slow machine cannot
    // refill the bucket between the requests below.
    let app = limited_app(0.2, 5).await;
    let (_, other) = mint(&app, &app.token, "operator", None).await;
    // The mint above used one request of the admin token's burst.
    for i in 0..4 {
        let (status, body) = app.get("/v1/missions").await;
        assert_eq!(status, StatusCode::OK, "request {i}: {body}");
    }
    let resp = app
        .http
        .get(format!("{}/v1/missions", app.url))
        .bearer_auth(&app.token)
        .send()
        .await
        .expect("request");
    assert_eq!(resp.status().as_u16(), 429);
    let retry_after: u64 = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("integer Retry-After");
    assert!((1..=5).contains(&retry_after), "{retry_after}");
    let body: Value = resp.json().await.expect("json");
    assert_error(
        StatusCode::TOO_MANY_REQUESTS,
        &body,
        "rate_limited",
        "limited",
    );

    // Another token has its own bucket; probes are never limited.
    let (status, _) = app
        .request(Method::GET, "/v1/missions", None, Some(&other))
        .await;
    assert_eq!(status, StatusCode::OK);
    for _ in 0..10 {
        let (status, _) = app.request(Method::GET, "/healthz", None, None).await;
        assert_eq!(status, StatusCode::OK);
    }

    // After the wait the admin token passes again.
    let waited = Instant::now();
    wait_until_within(
        "the admin token to pass again",
        Duration::from_secs(10),
        || async {
            let (status, _) = app.get("/v1/missions").await;
            (status == StatusCode::OK).then_some(())
        },
    )
    .await;
    assert!(waited.elapsed() <= Duration::from_secs(retry_after + 1));

    // Anonymous clients share a bucket per IP: guessing tokens is limited too.
    let mut refused = None;
    for i in 0..20 {
        let (status, body) = app
            .request(Method::GET, "/v1/missions", None, Some("guess"))
            .await;
        if status == StatusCode::TOO_MANY_REQUESTS {
            refused = Some((i, body));
            break;
        }
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let (i, body) = refused.expect("token guessing is rate limited");
    assert!(i <= 6, "limited after the burst, at request {i}");
    assert_error(
        StatusCode::TOO_MANY_REQUESTS,
        &body,
        "rate_limited",
        "guessing",
    );
    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agent_tokens_cannot_act_as_another_agent() {
    // No engine: nothing but these requests may change the workspace's rows.
    let mut settings = test_settings();
    settings.run_engine = false;
    let app = spawn_app_on(&fresh_database().await, settings).await;
    for id in ["alice", "bob"] {
        let (status, body) = app
            .post(
                "/v1/agents",
                json!({"agent_id": id, "role": "researcher", "skills": ["research"],
                       "endpoint_url": "http://127.0.0.1:9", "max_concurrency": 1}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let (_, alice) = mint(&app, &app.token, "agent", Some("alice")).await;
    let (status, doc) = app.request(Method::GET, "/openapi.json", None, None).await;
    assert_eq!(status, StatusCode::OK);
    // A task to bid on, hand off or reserve for.
    let m = app
        .create_mission(
            json!({"goal": "impersonation", "autonomy": "autonomous", "plan": chain_plan()}),
        )
        .await;
    let (task_id,): (Uuid,) = sqlx::query_as(
        "SELECT id FROM orchestration_tasks WHERE run_id = $1 ORDER BY created_at LIMIT 1",
    )
    .bind(
        m["id"]
            .as_str()
            .and_then(|s| s.parse::<Uuid>().ok())
            .expect("mission id"),
    )
    .fetch_one(&app.pool)
    .await
    .expect("task");
    let (status, tender) = app.post("/v1/tenders", json!({"task_id": task_id})).await;
    assert_eq!(status, StatusCode::CREATED, "{tender}");
    let tender = answer_id(&tender).expect("tender id");
    let before = snapshot(&app.pool, default_workspace(&app.pool).await).await;

    // Every write under /v1/agents/{agent_id}/… as bob, with alice's token.
    let mut fields: BTreeMap<&str, Value> = BTreeMap::new();
    for key in ["agent_id", "from", "agent", "holder", "sender", "voter"] {
        fields.insert(key, json!("bob"));
    }
    fields.insert("to", json!("alice"));
    let mut checked = 0;
    for (method, path, op) in v1_operations(&app).await {
        if method == Method::GET || !path.starts_with("/v1/agents/{agent_id}") {
            continue;
        }
        let url = fill_path(&path, |_, param| {
            if param == "agent_id" {
                "bob".into()
            } else {
                Uuid::new_v4().to_string()
            }
        });
        let body = has_body(&method).then(|| {
            body_schema(&op)
                .map(|s| example(&doc, s, "", &fields, 0))
                .unwrap_or_else(|| json!({}))
        });
        let (status, answer) = app
            .request(method.clone(), &url, body.clone(), Some(&alice))
            .await;
        assert_eq!(
            status,
            StatusCode::FORBIDDEN,
            "{method} {path} as bob with alice's token, body {body:?}: {answer}"
        );
        checked += 1;
    }
    assert!(checked >= 10, "{checked} agent routes checked");

    // Routes that name the acting agent in the body: messages as sender,
    // bids, decisions requested, reservations held, handoffs given.
    fields.insert("task_id", json!(task_id));
    fields.insert("mission_id", json!(m["id"]));
    fields.insert("direction", json!("agent_to_human"));
    fields.insert("to", json!("alice"));
    for path in [
        "/v1/messages".to_owned(),
        format!("/v1/tenders/{tender}/proposals"),
        "/v1/decisions".to_owned(),
        "/v1/reservations".to_owned(),
        "/v1/handoffs".to_owned(),
    ] {
        let template = if path.starts_with("/v1/tenders/") {
            "/v1/tenders/{id}/proposals"
        } else {
            path.as_str()
        };
        let body = body_schema(&doc["paths"][template]["post"])
            .map(|s| example(&doc, s, "", &fields, 0))
            .expect("a body schema");
        let (status, answer) = app
            .request(Method::POST, &path, Some(body.clone()), Some(&alice))
            .await;
        assert_eq!(
            status,
            StatusCode::FORBIDDEN,
            "POST {path} {body}: {answer}"
        );
    }
    let after = snapshot(&app.pool, default_workspace(&app.pool).await).await;
    let changed: Vec<_> = after
        .iter()
        .filter(|(t, d)| before.get(*t) != Some(*d) && t.as_str() != "api_tokens")
        .collect();
    assert!(changed.is_empty(), "refused requests changed {changed:?}");
    app.stop().await;
}

async fn default_workspace(pool: &PgPool) -> Uuid {
    let (id,): (Uuid,) = sqlx::query_as("SELECT id FROM workspaces WHERE name = 'default'")
        .fetch_one(pool)
        .await
        .expect("default workspace");
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attempt_tokens_only_work_for_their_own_attempt() {
    let app = spawn_app().await;
    let worker = ManualWorker::spawn().await;
    app.register_fleet(&worker.url, 2).await;
    let m = app
        .create_mission(
            json!({"goal": "parallel", "autonomy": "autonomous", "plan": parallel_plan(3)}),
        )
        .await;
    assert!(m["id"].is_string(), "{m}");
    let first = worker.dispatch(1).await;
    let second = worker.dispatch(2).await;
    let status_of = |attempt: Uuid| {
        let pool = app.pool.clone();
        async move {
            let (s,): (String,) = sqlx::query_as("SELECT status FROM task_attempts WHERE id = $1")
                .bind(attempt)
                .fetch_one(&pool)
                .await
                .expect("attempt");
            s
        }
    };
    let second_id: Uuid = second.attempt_id;
    let before = status_of(second_id).await;
    // The first attempt's token on the second attempt's callbacks.
    for (url, body) in [
        (
            &second.callback.result_url,
            json!({"status": "succeeded", "output": {"x": 1}, "cost": 0.0}),
        ),
        (&second.callback.heartbeat_url, json!({"progress": 0.5})),
    ] {
        let resp = app
            .http
            .post(url.as_str())
            .bearer_auth(&first.callback.token)
            .json(&body)
            .send()
            .await
            .expect("callback");
        assert_eq!(resp.status().as_u16(), 401, "{url}");
    }
    // An API admin token is not an attempt token either.
    let resp = app
        .http
        .post(second.callback.result_url.as_str())
        .bearer_auth(&app.token)
        .json(&json!({"status": "succeeded", "output": {"x": 1}, "cost": 0.0}))
        .send()
        .await
        .expect("callback");
    assert_eq!(resp.status().as_u16(), 401);
    assert_eq!(status_of(second_id).await, before, "attempt unchanged");
    // Its own token still works.
    succeed(&app.http, &second, json!({"x": 1}), 0.0).await;
    assert_ne!(
        status_of(second_id).await,
        before,
        "its own token is accepted"
    );
    app.stop().await;
}

/// Everything the binary wrote to stderr, read on a task.
fn drain(mut stderr: tokio::process::ChildStderr) -> tokio::task::JoinHandle<String> {
    tokio::spawn(async move {
        let mut out = Vec::new();
        let _ = stderr.read_to_end(&mut out).await;
        String::from_utf8_lossy(&out).into_owned()
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_reach_logs_events_or_tables() {
    let db_url = fresh_database().await;
    let bootstrap = "bootstrap-secret-5a1f0c9e7d3b8a4f6e2d1c0b";
    let api_key = "sk-llm-secret-4e8a2b6c0d1f";
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let listen = SocketAddr::from(([127, 0, 0, 1], port));
    let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_coordinator"));
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("COORDINATOR_") || name == "DATABASE_URL" || name == "RUST_LOG" {
            cmd.env_remove(name.as_ref());
        }
    }
    cmd.args([
        "--log-format",
        "json",
        "--log",
        "debug",
        "serve",
        "--listen",
        &listen.to_string(),
        "--tick-ms",
        "100",
        "--database-url",
        &db_url,
        "--llm-base-url",
        "http://127.0.0.1:9/v1",
        "--llm-api-key",
        api_key,
    ])
    .env("COORDINATOR_BOOTSTRAP_TOKEN", bootstrap)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::piped())
    .kill_on_drop(true);
    let mut child = cmd.spawn().expect("spawn serve");
    let logs = drain(child.stderr.take().expect("stderr"));
    let url = format!("http://{listen}");
    let http = reqwest::Client::new();
    wait_until("serve to answer /readyz", || async {
        let r = http.get(format!("{url}/readyz")).send().await.ok()?;
        r.status().is_success().then_some(())
    })
    .await;
    let pool = db::connect(&db_url, 2).await.expect("connect");
    let (_, minted) = mint_at(&http, &url, bootstrap, "operator", None).await;
    let worker = ManualWorker::spawn().await;
    let (status, body) = call(
        &http,
        &url,
        Method::POST,
        "/v1/agents",
        Some(
            json!({"agent_id": "r", "role": "researcher", "skills": ["research"],
                        "endpoint_url": worker.url, "max_concurrency": 1}),
        ),
        Some(&minted),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let (status, m) = call(
        &http,
        &url,
        Method::POST,
        "/v1/missions",
        Some(json!({"goal": "parallel", "autonomy": "autonomous", "plan": parallel_plan(3)})),
        Some(&minted),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{m}");
    let d = worker.dispatch(1).await;
    let attempt_token = d.callback.token.clone();
    // A failed callback with the token in a bad request, then the real one.
    let _ = http
        .post(d.callback.result_url.as_str())
        .bearer_auth(&attempt_token)
        .json(&json!({"status": "bogus"}))
        .send()
        .await;
    succeed(&http, &d, json!({"answer": 42}), 0.01).await;
    // The agent takes one task at a time: a second dispatch means the first
    // report went all the way through.
    let second = worker.dispatch(2).await;
    let (status, _) = call(
        &http,
        &url,
        Method::GET,
        &format!("/v1/missions/{}/events", m["id"].as_str().expect("id")),
        None,
        Some(&minted),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    child.start_kill().expect("stop serve");
    let _ = child.wait().await;
    let logs = logs.await.expect("logs");
    assert!(
        logs.contains("coordinator listening on"),
        "logs were captured: {logs}"
    );
    let secrets = [
        bootstrap,
        api_key,
        minted.as_str(),
        attempt_token.as_str(),
        second.callback.token.as_str(),
    ];
    for secret in secrets {
        assert!(!logs.contains(secret), "a secret is in the logs");
    }
    // No table holds any of them in the clear (events included).
    let tables: Vec<(String,)> = sqlx::query_as(
        "SELECT table_name::text FROM information_schema.tables
         WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
    )
    .fetch_all(&pool)
    .await
    .expect("tables");
    let (events,): (i64,) = sqlx::query_as("SELECT count(*) FROM orchestration_events")
        .fetch_one(&pool)
        .await
        .expect("events");
    assert!(events > 0, "events were written");
    for (table,) in tables {
        for secret in secrets {
            let (n,): (i64,) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                "SELECT count(*) FROM {table} t WHERE strpos(t::text, $1) > 0"
            )))
            .bind(secret)
            .fetch_one(&pool)
            .await
            .expect("scan");
            assert_eq!(n, 0, "a secret is stored in {table}");
        }
    }
    pool.close().await;
}

/// An API token of `role` in the workspace `name` (created if needed),
/// straight in the database; returns its secret.
async fn token_in(pool: &PgPool, name: &str, role: auth::Role, agent: Option<&str>) -> String {
    let mut conn = pool.acquire().await.expect("conn");
    let ws = auth::workspace_by_name(&mut conn, name)
        .await
        .expect("workspace");
    let secret = auth::generate_token();
    auth::insert_token(&mut conn, ws, role, "test", agent, &secret)
        .await
        .expect("token");
    secret
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_workspace_stakeholders_resolve_and_only_eligible_agents_vote() {
    let mut settings = test_settings();
    settings.run_engine = false;
    let app = spawn_app_on(&fresh_database().await, settings).await;
    for id in ["cfo", "planner"] {
        let (status, body) = app
            .post(
                "/v1/agents",
                json!({"agent_id": id, "role": id, "skills": ["research"],
                       "endpoint_url": "http://127.0.0.1:9"}),
            )
            .await;
        assert_eq!(status, StatusCode::CREATED, "{body}");
    }
    let (_, stakeholder) = mint(&app, &app.token, "stakeholder", None).await;
    let (_, operator) = mint(&app, &app.token, "operator", None).await;
    let (_, cfo) = mint(&app, &app.token, "agent", Some("cfo")).await;
    let (_, planner) = mint(&app, &app.token, "agent", Some("planner")).await;
    // Same role and same agent name, another workspace.
    let other_stakeholder = token_in(&app.pool, "other", auth::Role::Stakeholder, None).await;
    let other_cfo = token_in(&app.pool, "other", auth::Role::Agent, Some("cfo")).await;

    let (status, d) = app
        .request(
            Method::POST,
            "/v1/decisions",
            Some(
                json!({"description": "Approve the budget", "action_type": "budget",
                        "estimated_impact": {"estimated_cost": 25000},
                        "options": [{"label": "Approve"}, {"label": "Reject"}],
                        "recommended_option": "Approve"}),
            ),
            Some(&cfo),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{d}");
    let path = format!("/v1/decisions/{}", d["id"].as_str().expect("id"));
    let (_, before) = app.get(&path).await;
    let resolve = json!({"outcome": "approved", "rationale": "fine"});
    for (who, token, expected) in [
        ("admin", app.token.as_str(), StatusCode::FORBIDDEN),
        ("operator", operator.as_str(), StatusCode::FORBIDDEN),
        ("the requesting agent", cfo.as_str(), StatusCode::FORBIDDEN),
        (
            "another workspace's stakeholder",
            other_stakeholder.as_str(),
            StatusCode::NOT_FOUND,
        ),
    ] {
        let (status, body) = app
            .request(
                Method::POST,
                &format!("{path}/resolve"),
                Some(resolve.clone()),
                Some(token),
            )
            .await;
        assert_eq!(status, expected, "{who}: {body}");
    }
    let (_, after) = app.get(&path).await;
    assert_eq!(after, before, "the decision is unchanged");
    assert_eq!(after["status"], "pending");

    // A team decision: only its eligible agents of this workspace vote.
    let (_, m) = app
        .post(
            "/v1/missions",
            json!({"goal": "vote", "autonomy": "autonomous", "plan": chain_plan()}),
        )
        .await;
    let (status, td) = app
        .post(
            &format!(
                "/v1/missions/{}/team-decisions",
                m["id"].as_str().expect("mission")
            ),
            json!({"topic": "Ship it?", "options": [{"label": "yes"}, {"label": "no"}],
                   "eligible_agents": ["cfo"], "window_secs": 300}),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED, "{td}");
    let td_path = format!("/v1/team-decisions/{}", td["id"].as_str().expect("id"));
    let (_, td_before) = app.get(&td_path).await;
    for (who, token, expected) in [
        (
            "a non-eligible agent",
            planner.as_str(),
            StatusCode::FORBIDDEN,
        ),
        ("a stakeholder", stakeholder.as_str(), StatusCode::FORBIDDEN),
        ("the admin", app.token.as_str(), StatusCode::FORBIDDEN),
        (
            "the same agent name in another workspace",
            other_cfo.as_str(),
            StatusCode::NOT_FOUND,
        ),
    ] {
        let (status, body) = app
            .request(
                Method::POST,
                &format!("{td_path}/votes"),
                Some(json!({"option": "yes"})),
                Some(token),
            )
            .await;
        assert_eq!(status, expected, "{who}: {body}");
    }
    let (_, td_after) = app.get(&td_path).await;
    assert_eq!(td_after, td_before, "no vote was counted");

    // The rightful callers succeed, so the refusals above are meaningful.
    let (status, body) = app
        .request(
            Method::POST,
            &format!("{td_path}/votes"),
            Some(json!({"option": "yes"})),
            Some(&cfo),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = app
        .request(
            Method::POST,
            &format!("{path}/resolve"),
            Some(resolve),
            Some(&stakeholder),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    app.stop().await;
}
