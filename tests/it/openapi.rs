//! The OpenAPI document: well-formed, in step with the routes (each slice
//! registers route and operation together), true to what the running service answers, and its docs page.

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
};

use axum::http::StatusCode;
use serde_json::{Value, json};

use crate::helpers::*;

/// HTTP methods a route or an operation can have, as the document spells them.
const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Source folders whose routers are not the coordinator's: the reference
/// workers serve their own protocol (`/v1/tasks`…) in their own processes.
const OTHER_SERVICES: &[&str] = &["crates/workers/src"];

/// Stands in for every path parameter when probing.
const ANY_ID: &str = "00000000-0000-4000-8000-000000000000";

async fn fetch_document(app: &TestApp) -> Value {
    let (status, doc) = app
        .request(reqwest::Method::GET, "/openapi.json", None, None)
        .await;
    assert_eq!(status, StatusCode::OK, "{doc}");
    doc
}

/// Every (method, path, operation) of the document.
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            if METHODS.contains(&method.as_str()) {
                ops.push((method.to_uppercase(), path.clone(), op.clone()));
            }
        }
    }
    ops
}

/// Follows a `$ref` inside the document.
fn resolve<'a>(doc: &'a Value, value: &'a Value) -> &'a Value {
    match value.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let target = r
                .strip_prefix('#')
                .and_then(|p| doc.pointer(p))
                .unwrap_or_else(|| panic!("unresolvable $ref {r}"));
            resolve(doc, target)
        }
        None => value,
    }
}

fn collect_refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("$ref", Value::String(r)) => out.push(r.clone()),
                    _ => collect_refs(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, out)),
        _ => {}
    }
}

/// The `{name}`s of a path template.
fn path_params(path: &str) -> BTreeSet<String> {
    path.split('/')
        .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
        .map(str::to_owned)
        .collect()
}

/// Checks `value` against a schema of the document (the JSON Schema subset
/// utoipa emits: $ref, oneOf/anyOf/allOf, type, enum, required, properties,
/// additionalProperties, items). Returns what does not match, with where.
fn check_schema(doc: &Value, schema: &Value, value: &Value, at: &str) -> Result<(), String> {
    let schema = resolve(doc, schema);
    if let Some(options) = schema.get("oneOf").or_else(|| schema.get("anyOf")) {
        let options = options.as_array().expect("oneOf is an array");
        let errors: Vec<String> = options
            .iter()
            .filter_map(|s| check_schema(doc, s, value, at).err())
            .collect();
        if errors.len() == options.len() {
            return Err(format!("{at}: matches no alternative: {errors:?}"));
        }
    }
    if let Some(all) = schema.get("allOf").and_then(Value::as_array) {
        for s in all {
            check_schema(doc, s, value, at)?;
        }
    }
    if let Some(types) = schema.get("type") {
        let types: Vec<&str> = match types {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => vec![],
        };
        let fits = |t: &str| match t {
            "null" => value.is_null(),
            "boolean" => value.is_boolean(),
            "integer" => value.is_i64() || value.is_u64(),
            "number" => value.is_number(),
            "string" => value.is_string(),
            "array" => value.is_array(),
            "object" => value.is_object(),
            _ => true,
        };
        if !types.iter().any(|t| fits(t)) {
            return Err(format!("{at}: {value} is not of type {types:?}"));
        }
    }
    if let Some(allowed) = schema.get("enum").and_then(Value::as_array)
        && !allowed.contains(value)
    {
        return Err(format!("{at}: {value} is not one of {allowed:?}"));
    }
    if let Value::Object(map) = value {
        for key in schema["required"].as_array().into_iter().flatten() {
            let key = key.as_str().expect("required names");
            if !map.contains_key(key) {
                return Err(format!("{at}: required property '{key}' is missing"));
            }
        }
        let properties = schema["properties"].as_object();
        for (key, v) in map {
            let here = format!("{at}.{key}");
            match (
                properties.and_then(|p| p.get(key)),
                schema.get("additionalProperties"),
            ) {
                (Some(s), _) => check_schema(doc, s, v, &here)?,
                (None, Some(Value::Bool(false))) => {
                    return Err(format!("{here}: not in the schema"));
                }
                (None, Some(s @ Value::Object(_))) => check_schema(doc, s, v, &here)?,
                // Undocumented extra fields in an answer are drift too.
                (None, _) if properties.is_some() => {
                    return Err(format!("{here}: not in the schema"));
                }
                (None, _) => {}
            }
        }
    }
    if let (Value::Array(items), Some(item_schema)) = (value, schema.get("items")) {
        for (i, v) in items.iter().enumerate() {
            check_schema(doc, item_schema, v, &format!("{at}[{i}]"))?;
        }
    }
    Ok(())
}

/// Asserts an answer matches what the document says `method path` answers with `status`.
fn assert_documented_answer(
    doc: &Value,
    method: &str,
    path: &str,
    status: StatusCode,
    body: &Value,
) {
    let op = &doc["paths"][path][method.to_lowercase()];
    assert!(op.is_object(), "{method} {path} is not documented");
    let code = status.as_u16().to_string();
    let response = op["responses"].get(&code).unwrap_or_else(|| {
        panic!("{method} {path} answered {code}, which is not documented: {body}")
    });
    let response = resolve(doc, response);
    match response["content"]["application/json"].get("schema") {
        Some(schema) => {
            if let Err(e) = check_schema(doc, schema, body, "body") {
                panic!("{method} {path} {code} does not match the document: {e}\n{body:#}");
            }
        }
        None => assert!(
            body.is_null(),
            "{method} {path} {code} documents no body but sent {body}"
        ),
    }
}

/// Rust sources under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("dir entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The text between the parenthesis at `open` and its match.
fn balanced(text: &str, open: usize) -> &str {
    let mut depth = 0;
    for (i, c) in text[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return &text[open + 1..open + i];
                }
            }
            _ => {}
        }
    }
    panic!("unbalanced parentheses after {}", &text[open..]);
}

/// Methods of a route's method router, e.g. `get(list).post(create)`:
/// identifiers directly followed by `(` outside any parenthesis. `any(h)`
/// (e.g. the MCP endpoint) answers every method, so it stands for all of them.
fn chain_methods(chain: &str) -> Vec<String> {
    let mut methods = Vec::new();
    let (mut depth, mut ident) = (0, String::new());
    for c in chain.chars() {
        match c {
            '(' => {
                if depth == 0 {
                    let name = ident.rsplit("::").next().unwrap_or("").to_owned();
                    if METHODS.contains(&name.as_str()) {
                        methods.push(name.to_uppercase());
                    } else if name == "any" {
                        methods.extend(METHODS.iter().map(|m| m.to_uppercase()));
                    }
                }
                depth += 1;
                ident.clear();
            }
            ')' => depth -= 1,
            c if c.is_alphanumeric() || c == '_' || c == ':' => ident.push(c),
            _ => ident.clear(),
        }
    }
    methods
}

/// The service's source files (every crate but the reference workers'),
/// without comment lines, with their paths relative to the repository.
fn service_sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("crates"), &mut files);
    files
        .into_iter()
        .filter_map(|file| {
            let rel = file
                .strip_prefix(root)
                .expect("under the crate")
                .to_string_lossy()
                .replace('\\', "/");
            if OTHER_SERVICES.iter().any(|d| rel.starts_with(d)) {
                return None;
            }
            let text = std::fs::read_to_string(&file)
                .expect("read source")
                .lines()
                .filter(|l| !l.trim_start().starts_with("//"))
                .collect::<Vec<_>>()
                .join("\n");
            Some((rel, text))
        })
        .collect()
}

/// Every `(METHOD, path)` registered with a plain axum `.route("/literal",
/// get(a).post(b))` (across lines too). Documented operations are registered
/// by the slices' `routes!(...)` instead, which takes the path and method
/// from the handler's `#[utoipa::path]`; what is left here is meant to be
/// outside the document (probes for Prometheus, MCP, the web board, the
/// document itself).
fn plain_routes() -> BTreeSet<(String, String)> {
    let mut routes = BTreeSet::new();
    for (rel, text) in service_sources() {
        assert!(
            !text.contains(".nest("),
            "{rel} nests a router; this test reads full route paths only, so register routes with their full path"
        );
        for (at, _) in text.match_indices(".route(") {
            let args = balanced(&text, at + ".route".len());
            let (path, chain) = args
                .split_once(',')
                .unwrap_or_else(|| panic!("{rel}: cannot read .route({args})"));
            let path = path
                .trim()
                .strip_prefix('"')
                .and_then(|p| p.strip_suffix('"'))
                .unwrap_or_else(|| panic!("{rel}: route path {path} is not a string literal"));
            let methods = chain_methods(chain);
            assert!(!methods.is_empty(), "{rel}: no method in .route({args})");
            for m in methods {
                routes.insert((m, path.to_owned()));
            }
        }
    }
    routes
}

/// How many handlers carry `#[utoipa::path(...)]` in the service's source.
fn annotated_handlers() -> usize {
    service_sources()
        .iter()
        .map(|(_, text)| text.matches("#[utoipa::path(").count())
        .sum()
}

/// Every OpenAPI schema name the source defines, with the file defining it:
/// derived `ToSchema` types (renamed by `#[schema(as = …)]`) and
/// `text_enum!` types (renamed by `text_enum!(T as "…", …)`).
fn schema_names() -> Vec<(String, String)> {
    let mut names = Vec::new();
    for (rel, text) in service_sources() {
        let mut rest = text.as_str();
        while let Some(at) = rest.find("ToSchema") {
            let after = &rest[at..];
            // Only derives: `#[derive(…ToSchema…)]` followed by the item.
            let in_derive = rest[..at]
                .rfind("#[derive(")
                .is_some_and(|d| !rest[d..at].contains(']'));
            rest = &after["ToSchema".len()..];
            if !in_derive {
                continue;
            }
            let Some(item) = ["pub struct ", "pub enum ", "struct ", "enum "]
                .iter()
                .filter_map(|k| rest.find(k).map(|i| (i, k.len())))
                .min()
            else {
                continue;
            };
            let attrs = &rest[..item.0];
            let ident: String = rest[item.0 + item.1..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            let name = attrs
                .split("#[schema(as = ")
                .nth(1)
                .and_then(|a| a.split(')').next())
                .map_or(ident, |a| a.rsplit("::").next().unwrap_or(a).to_owned());
            names.push((name, rel.clone()));
        }
        for (at, _) in text.match_indices("text_enum!(") {
            let head: String = text[at + "text_enum!(".len()..]
                .chars()
                .take_while(|c| *c != '{')
                .collect();
            let name = match head.split_once(" as ") {
                Some((_, renamed)) => renamed
                    .trim()
                    .trim_end_matches(',')
                    .trim_matches('"')
                    .to_owned(),
                None => head.trim().to_owned(),
            };
            if !name.is_empty() && !name.starts_with('$') {
                names.push((name, rel.clone()));
            }
        }
    }
    names
}

/// Two types with one schema name would share one entry in the document:
/// the last one merged wins and the other's operations describe the wrong body.
#[test]
fn schema_names_are_unique() {
    let names = schema_names();
    assert!(
        names.iter().any(|(n, _)| n == "MissionStatus")
            && names.iter().any(|(n, _)| n == "ErrorBody"),
        "the schema scanner finds nothing: {names:?}"
    );
    let mut seen = std::collections::BTreeMap::new();
    let mut clashes = Vec::new();
    for (name, file) in &names {
        if let Some(first) = seen.insert(name.clone(), file.clone()) {
            clashes.push(format!("{name}: {first} and {file}"));
        }
    }
    assert!(
        clashes.is_empty(),
        "schema names defined twice (rename one with #[schema(as = …)] or text_enum!(T as \"…\", …)): {clashes:?}"
    );
}

#[tokio::test]
async fn document_is_openapi_3_and_complete() {
    let app = spawn_app().await;
    let doc = fetch_document(&app).await;
    let version = doc["openapi"].as_str().expect("openapi version");
    assert!(version.starts_with("3."), "OpenAPI {version}");

    let mut refs = Vec::new();
    collect_refs(&doc, &mut refs);
    assert!(!refs.is_empty());
    for r in &refs {
        let target = r.strip_prefix('#').and_then(|p| doc.pointer(p));
        assert!(target.is_some(), "$ref {r} does not resolve");
    }

    let tags: BTreeSet<&str> = doc["tags"]
        .as_array()
        .expect("tags")
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    let schemes = doc["components"]["securitySchemes"]
        .as_object()
        .expect("security schemes");
    let error_schema = json!({"$ref": "#/components/schemas/ErrorBody"});
    let mut operation_ids = BTreeSet::new();
    for (method, path, op) in operations(&doc) {
        let name = format!("{method} {path}");
        let id = op["operationId"]
            .as_str()
            .unwrap_or_else(|| panic!("{name}: no operationId"));
        assert!(
            operation_ids.insert(id.to_owned()),
            "{name}: operationId {id} is used twice"
        );
        assert!(
            op["summary"].is_string(),
            "{name}: no summary (a doc comment on the handler)"
        );
        for tag in op["tags"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: no tag"))
        {
            let tag = tag.as_str().expect("tag name");
            assert!(tags.contains(tag), "{name}: tag {tag} is not declared");
        }

        let responses = op["responses"].as_object().expect("responses");
        assert!(!responses.is_empty(), "{name}: no responses");
        for (code, response) in responses {
            let response = resolve(&doc, response);
            assert!(
                response["description"].is_string(),
                "{name} {code}: no description"
            );
            let content = response["content"].as_object();
            if code.starts_with('4') || code.starts_with('5') {
                let schema = &content.expect("error content")["application/json"]["schema"];
                assert_eq!(schema, &error_schema, "{name} {code}: errors use ErrorBody");
            } else if code != "204" {
                let content = content.unwrap_or_else(|| panic!("{name} {code}: no content"));
                for (media, c) in content {
                    assert!(c["schema"].is_object(), "{name} {code} {media}: no schema");
                }
            }
        }

        if let Some(body) = op.get("requestBody") {
            // JSON bodies, and the BPMN documents of the workflow imports (XML).
            let content = body["content"].as_object().expect("request content");
            assert!(!content.is_empty(), "{name}: request body without content");
            for (media, c) in content {
                assert!(
                    media == "application/json" || media == "application/xml",
                    "{name}: request body as {media}"
                );
                assert!(
                    c["schema"].is_object(),
                    "{name}: {media} body without a schema"
                );
            }
        }

        let declared: BTreeSet<String> = op["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|p| p["in"] == "path")
            .filter_map(|p| p["name"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(declared, path_params(&path), "{name}: path parameters");

        // Every /v1 operation needs a token; the probes need none.
        let security = op["security"].as_array();
        if path.starts_with("/v1/") {
            let security = security.unwrap_or_else(|| panic!("{name}: no security"));
            for requirement in security {
                for scheme in requirement.as_object().expect("requirement").keys() {
                    assert!(
                        schemes.contains_key(scheme),
                        "{name}: unknown scheme {scheme}"
                    );
                }
            }
        } else {
            assert!(security.is_none(), "{name}: should need no token");
        }
    }
    app.stop().await;
}

#[tokio::test]
async fn document_matches_the_routes() {
    let app = spawn_app().await;
    let doc = fetch_document(&app).await;
    let documented: BTreeSet<(String, String)> = operations(&doc)
        .into_iter()
        .map(|(m, p, _)| (m, p))
        .collect();
    assert!(
        documented.contains(&("GET".into(), "/v1/missions".into()))
            && documented.contains(&("POST".into(), "/v1/attempts/{id}/result".into())),
        "the document lacks core operations: {documented:?}"
    );

    // Every annotated handler is registered by some slice's `routes!`: a
    // handler documented but never routed would be missing here.
    // The tool gateway (one handler) is documented once per tool.
    let tool_operations = documented
        .iter()
        .filter(|(_, p)| p.starts_with("/v1/tools/") && !p.contains('{'))
        .count();
    assert!(tool_operations > 10, "the tools are documented one by one");
    assert_eq!(
        documented.len() - tool_operations + 1,
        annotated_handlers(),
        "operations in the document against #[utoipa::path] handlers in the source: \
         register each annotated handler with `routes!(...)` in its slice's router()"
    );

    // Routes registered outside the document are not API routes.
    let plain = plain_routes();
    assert!(
        plain.contains(&("GET".into(), "/metrics".into()))
            && plain.contains(&("POST".into(), "/mcp".into())),
        "the route scanner finds nothing: {plain:?}"
    );
    let undocumented: Vec<_> = plain
        .iter()
        .filter(|(_, p)| {
            p.starts_with("/v1/") || p.starts_with("/healthz") || p.starts_with("/readyz")
        })
        .filter(|r| !documented.contains(*r))
        .collect();
    assert!(
        undocumented.is_empty(),
        "API routes registered with a plain .route() and missing from the OpenAPI document \
         (add #[utoipa::path] and register the handler with routes!(...) in its slice): {undocumented:?}"
    );

    // The running service agrees: each operation reaches a handler (not the
    // fallbacks), answers a documented status with a documented body, wants
    // a JSON body exactly when the document requires one, and refuses a
    // missing token exactly when the document asks for one.
    for (method, path, op) in operations(&doc) {
        let name = format!("{method} {path}");
        let concrete = path_params(&path).iter().fold(path.clone(), |p, param| {
            p.replace(&format!("{{{param}}}"), ANY_ID)
        });
        let http_method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let (status, body) = app
            .request(http_method.clone(), &concrete, None, Some(&app.token))
            .await;
        assert_ne!(status, StatusCode::METHOD_NOT_ALLOWED, "{name}: {body}");
        assert!(
            !(status == StatusCode::NOT_FOUND && body["error"]["message"] == "no such route"),
            "{name}: no such route"
        );
        assert_documented_answer(&doc, &method, &path, status, &body);

        let wants_json = body["error"]["code"] == "unsupported_media_type";
        let requires_body = op["requestBody"]["required"] == true;
        assert_eq!(wants_json, requires_body, "{name}: body required? ({body})");

        let (status, body) = app.request(http_method, &concrete, None, None).await;
        let secured = op.get("security").is_some();
        assert_eq!(
            status == StatusCode::UNAUTHORIZED,
            secured,
            "{name} without a token: {status} {body}"
        );
        assert_documented_answer(&doc, &method, &path, status, &body);
    }
    app.stop().await;
}

#[tokio::test]
async fn answers_match_their_schemas() {
    let app = spawn_app().await;
    let doc = fetch_document(&app).await;
    let check = |method: &str, path: &str, status: StatusCode, body: &Value| {
        assert_documented_answer(&doc, method, path, status, body)
    };

    let (status, agent) = app
        .post(
            "/v1/agents",
            json!({"agent_id": "researcher", "role": "researcher", "skills": ["research"],
                   "endpoint_url": "http://127.0.0.1:9", "model": "m", "heartbeat_timeout_secs": 60}),
        )
        .await;
    check("POST", "/v1/agents", status, &agent);
    let (status, body) = app.get("/v1/agents").await;
    check("GET", "/v1/agents", status, &body);
    let (status, body) = app.get("/v1/agents/researcher").await;
    check("GET", "/v1/agents/{agent_id}", status, &body);
    let (status, body) = app
        .post(
            "/v1/agents",
            json!({"agent_id": "researcher", "role": "r", "endpoint_url": "http://127.0.0.1:9"}),
        )
        .await;
    check("POST", "/v1/agents", status, &body);

    // A hook made before the mission gets deliveries of its events; the
    // receiver is down, so they stay pending with an error.
    let (status, hook) = app
        .post(
            "/v1/webhooks",
            json!({"url": "http://127.0.0.1:9/hook", "secret": "a-very-secret-secret",
                   "events": ["mission.*", "task.*"]}),
        )
        .await;
    check("POST", "/v1/webhooks", status, &hook);
    let hook_id = hook["id"].as_str().expect("webhook id").to_owned();

    let (status, mission) = app
        .post(
            "/v1/missions",
            json!({"goal": "Study the schemas", "plan": chain_plan()}),
        )
        .await;
    check("POST", "/v1/missions", status, &mission);
    let id = mission["id"].as_str().expect("mission id").to_owned();
    let (status, body) = app.get("/v1/missions").await;
    assert_eq!(body["missions"].as_array().map(Vec::len), Some(1), "{body}");
    check("GET", "/v1/missions", status, &body);
    let (status, body) = app.get(&format!("/v1/missions/{id}")).await;
    check("GET", "/v1/missions/{id}", status, &body);
    let (status, body) = app.get(&format!("/v1/missions/{id}/plan")).await;
    check("GET", "/v1/missions/{id}/plan", status, &body);
    let (status, body) = app.get(&format!("/v1/missions/{id}/events")).await;
    assert!(
        !body["events"].as_array().expect("events").is_empty(),
        "{body}"
    );
    check("GET", "/v1/missions/{id}/events", status, &body);
    // The stream is the operation's other documented content.
    let stream = app
        .http
        .get(format!("{}/v1/missions/{id}/events", app.url))
        .bearer_auth(&app.token)
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("event stream");
    assert_eq!(stream.status().as_u16(), 200);
    let media = stream.headers()["content-type"]
        .to_str()
        .expect("content type")
        .to_owned();
    drop(stream);
    let documented =
        &doc["paths"]["/v1/missions/{id}/events"]["get"]["responses"]["200"]["content"];
    assert!(
        documented.get(&media).is_some(),
        "{media} is not documented: {documented}"
    );

    // The workspace log (in commit order: an event shows once every older
    // transaction is done), the board and the tools see the same mission.
    let (status, body) = wait_until("the mission's events in the workspace log", || async {
        let (status, body) = app.get(&format!("/v1/events?mission={id}")).await;
        (!body["events"].as_array()?.is_empty()).then_some((status, body))
    })
    .await;
    check("GET", "/v1/events", status, &body);
    let (status, body) = app.get("/v1/events?kind=task.*&limit=1").await;
    check("GET", "/v1/events", status, &body);
    let (status, body) = app.get("/v1/events?kind=Nope!").await;
    check("GET", "/v1/events", status, &body);
    let (status, board) = app.get(&format!("/v1/board?mission={id}")).await;
    check("GET", "/v1/board", status, &board);
    let card = board["columns"]
        .as_array()
        .expect("columns")
        .iter()
        .flat_map(|c| c["cards"].as_array().expect("cards"))
        .next()
        .unwrap_or_else(|| panic!("no card: {board}"))
        .clone();
    let card_id = card["id"].as_str().expect("card id");
    let (status, body) = app.get(&format!("/v1/board/cards/{card_id}")).await;
    check("GET", "/v1/board/cards/{id}", status, &body);
    let (status, body) = app
        .post(
            &format!("/v1/board/cards/{card_id}/move"),
            json!({"to": "done", "version": card["version"]}),
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    check("POST", "/v1/board/cards/{id}/move", status, &body);
    let (status, body) = app.get("/v1/tools").await;
    check("GET", "/v1/tools", status, &body);
    let (status, body) = app
        .post("/v1/tools/mission_status", json!({"mission_id": id}))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    check("POST", "/v1/tools/mission_status", status, &body);
    let (status, body) = app
        .request(
            reqwest::Method::POST,
            "/v1/tools/list_missions",
            None,
            Some(&app.token),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    check("POST", "/v1/tools/list_missions", status, &body);
    let (status, body) = app.post("/v1/tools/cancel_mission", json!({})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    check("POST", "/v1/tools/cancel_mission", status, &body);

    let (status, body) = app.get("/v1/webhooks").await;
    check("GET", "/v1/webhooks", status, &body);
    let (status, body) = app.get(&format!("/v1/webhooks/{hook_id}")).await;
    check("GET", "/v1/webhooks/{id}", status, &body);
    let deliveries = wait_until("a delivery to be logged", || async {
        let (status, body) = app.get(&format!("/v1/webhooks/{hook_id}/deliveries")).await;
        (!body["deliveries"].as_array()?.is_empty()).then_some((status, body))
    })
    .await;
    check(
        "GET",
        "/v1/webhooks/{id}/deliveries",
        deliveries.0,
        &deliveries.1,
    );
    let (status, body) = app
        .request(
            reqwest::Method::DELETE,
            &format!("/v1/webhooks/{hook_id}"),
            None,
            Some(&app.token),
        )
        .await;
    check("DELETE", "/v1/webhooks/{id}", status, &body);
    let (status, body) = app
        .post(
            &format!("/v1/missions/{id}/review"),
            json!({"decision": "accept"}),
        )
        .await;
    check("POST", "/v1/missions/{id}/review", status, &body);
    let (status, body) = app
        .post(
            &format!("/v1/missions/{id}/save-as-routine"),
            json!({"name": "schema-study"}),
        )
        .await;
    check("POST", "/v1/missions/{id}/save-as-routine", status, &body);
    let (status, body) = app
        .request(
            reqwest::Method::POST,
            &format!("/v1/missions/{id}/cancel"),
            None,
            Some(&app.token),
        )
        .await;
    check("POST", "/v1/missions/{id}/cancel", status, &body);

    let (status, body) = app
        .post("/v1/tokens", json!({"role": "operator", "name": "ops"}))
        .await;
    check("POST", "/v1/tokens", status, &body);
    let (status, body) = app.get("/healthz").await;
    check("GET", "/healthz", status, &body);
    let (status, body) = app.get("/readyz").await;
    check("GET", "/readyz", status, &body);
    app.stop().await;
}

#[tokio::test]
async fn docs_page_loads_the_document() {
    let app = spawn_app().await;
    let resp = app
        .http
        .get(format!("{}/docs", app.url))
        .send()
        .await
        .expect("docs page");
    assert_eq!(resp.status().as_u16(), 200);
    let content_type = resp.headers()["content-type"]
        .to_str()
        .expect("content type")
        .to_owned();
    assert!(content_type.starts_with("text/html"), "{content_type}");
    let html = resp.text().await.expect("html");
    assert!(html.contains(r#"data-url="/openapi.json""#), "{html}");
    assert!(
        html.contains("<title>Mission coordinator API</title>"),
        "{html}"
    );
    // Everything the page loads comes from the service itself (no CDN).
    assert!(!html.contains("https://"), "{html}");
    let js = app
        .http
        .get(format!("{}/docs/scalar.js", app.url))
        .send()
        .await
        .expect("scalar bundle");
    assert_eq!(js.status().as_u16(), 200);
    assert!(
        js.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/javascript")
    );
    assert!(js.bytes().await.unwrap().len() > 1_000_000);
    app.stop().await;
}

/// Catches a scanner that silently reads nothing from a multi-line chain.
#[test]
fn route_scanner_reads_chains() {
    assert_eq!(chain_methods(" get(list).post(create)"), ["GET", "POST"]);
    assert_eq!(
        chain_methods("\n  routing::get(|| async { Json(json!({})) })\n  .delete(remove)"),
        ["GET", "DELETE"]
    );
    assert_eq!(chain_methods(" any(serve)").len(), METHODS.len());
    let text = r#"x.route(
        "/v1/a/{id}",
        post(a).get(b),
    )"#;
    let at = text.find(".route(").expect("route");
    let args = balanced(text, at + ".route".len());
    assert!(args.trim_start().starts_with("\"/v1/a/{id}\""));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limited_routes_document_429_with_retry_after() {
    let app = spawn_app().await;
    let doc = fetch_document(&app).await;
    let mut limited = 0;
    for (method, path, op) in operations(&doc) {
        let documented = op["responses"].get("429").map(|r| resolve(&doc, r));
        let exempt = !path.starts_with("/v1/") || coordinator::api::rate_limit::is_exempt(&path);
        match documented {
            Some(r) => {
                assert!(!exempt, "{method} {path} is exempt but documents 429");
                assert!(
                    r["headers"]["Retry-After"].is_object(),
                    "{method} {path}: 429 without Retry-After"
                );
                limited += 1;
            }
            None => assert!(exempt, "{method} {path} can answer 429 but does not say so"),
        }
    }
    assert!(limited > 50, "{limited}");
    app.stop().await;
}
