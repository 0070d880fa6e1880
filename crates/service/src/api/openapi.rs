//! The OpenAPI 3.1 document of the HTTP API, served at `/openapi.json`, and
//! an interactive reference for people at `/docs` (both without a token).
//!
//! Each slice registers its own operations: its `router()` is a
//! `utoipa_axum` [`OpenApiRouter`](utoipa_axum::router::OpenApiRouter) whose
//! `routes!(...)` add both the route and the handler's `#[utoipa::path]`, so a
//! route cannot exist without its documentation or the other way round.
//! [`ApiDoc`] holds only what is not an operation (info, shared components,
//! tags); [`finish`] applies the rules that hold for every operation once the
//! slices are merged. The integration test `openapi` checks the result
//! against the running service.

use axum::{Router, routing::get};
use serde_json::Value;
use utoipa::{
    Modify, OpenApi,
    openapi::{
        RefOr, Required,
        schema::Schema,
        security::{HttpAuthScheme, HttpBuilder, SecurityScheme},
    },
};
use utoipa_scalar::{Scalar, Servable};

use super::{
    AppState,
    doc::{BadRequest, ErrorBody, ErrorDetail, Forbidden, NotFound, Unauthorized, Unprocessable},
};

/// Where the interactive reference is served.
pub const DOCS_PATH: &str = "/docs";

/// The parts of the document that are not operations: info, the shared
/// error components, the security schemes and the tags.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Mission coordinator API",
        description = "Plans missions into task graphs, dispatches tasks to agents and reconciles \
            their results. Errors are always `{\"error\": {\"code\", \"message\", \"details\"}}` \
            with a stable `code`; any operation may also answer 413 (`payload_too_large`, bodies \
            over 1 MiB), 500 (`internal_error`) or 503 (`unavailable`) with that body."
    ),
    components(
        schemas(ErrorBody, ErrorDetail),
        responses(BadRequest, Unauthorized, Forbidden, NotFound, Unprocessable)
    ),
    modifiers(&SecuritySchemes),
    tags(
        (name = "missions", description = "Missions: plans, approval, progress, reviews and events."),
        (name = "agents", description = "The agent registry, and each agent's unified status."),
        (name = "messages", description = "FIPA-style ACL messages between agents: sending, inboxes (unread → read → acked) and conversations as reply trees."),
        (name = "bdi", description = "BDI state per agent (beliefs with a revision log, desires with the priority formula, goals by tier, intentions with commitment strategies), the BDI maintenance job, and missions' commitment strategies."),
        (name = "organisation", description = "The workspace's organisation spec (MOISE+ roles, groups, links, missions, norms), enforced by the scorer."),
        (name = "reservations", description = "Advisory reservations of work surfaces (scope patterns) with a TTL."),
        (name = "blackboard", description = "A mission's shared key/value state, versioned with compare-and-set (the agents' blackboard)."),
        (name = "attempts", description = "Worker callbacks, authenticated by the attempt's own token."),
        (name = "tokens", description = "API tokens of a workspace."),
        (name = "events", description = "The workspace's event log across missions, as pages or a live stream."),
        (name = "board", description = "The kanban bridge: mission tasks as cards in columns, and moving the cards that need a person."),
        (name = "webhooks", description = "Outbound webhooks: signed deliveries of workspace events to external tools, and their delivery logs; agents' event subscriptions are webhooks owned by an agent."),
        (name = "tools", description = "The chat tools in function-calling form, and a route to run each (the same tools as the MCP server at `/mcp`)."),
        (name = "workforce", description = "The human workforce: contractors (people, not contractor agents) with trust scores, work packages with auto-matching, and delegating a mission task to a person."),
        (name = "handoffs", description = "Agent ⇄ human handoffs: the context handed over with a task that changes hands."),
        (name = "governance", description = "Governance: the stakeholder profile, the governance check, and the decision queue that gates consequential actions and mission tasks."),
        (name = "contract-net", description = "Contract net: tenders (calls for proposals) that allocate a task to the best proposal instead of by scoring."),
        (name = "tool-approvals", description = "Tool-use approvals: a worker asks before a guarded tool call, the task's tool policy answers or escalates to a person, who approves or denies with a rationale; requests time out to the policy's default."),
        (name = "team-decisions", description = "Team decisions: a topic with options and evidence put to the mission's agents, votes within a window, commit by plurality with the orchestrator's tie-break, and the ADR rendered from the record."),
        (name = "timeline", description = "The mission timeline (plan, steps, tool calls, handoffs, decisions, approvals) and snapshots after milestones, both projected from the event log."),
        (name = "plan-library", description = "The plan library: finished missions as cases (goal, context, plan, outcome, lessons), searched by similarity; the planner reuses similar successes and avoids the structures of similar failures."),
        (name = "workflows", description = "BPMN 2.0 workflows: import documents from Camunda Modeler, bpmn.io or Signavio, validate them with element ids, author them node by node, and export them again with their diagrams."),
        (name = "health", description = "Probes for load balancers and orchestrators."),
    )
)]
pub struct ApiDoc;

/// Adds the two bearer schemes operations refer to by name.
struct SecuritySchemes;

impl Modify for SecuritySchemes {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "api_token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "An API token of a workspace (`coordinator token create`, or POST /v1/tokens); \
                         its role decides what it may do.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "attempt_token",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The token of one attempt, sent to the worker in the dispatch's `callback.token`.",
                    ))
                    .build(),
            ),
        );
    }
}

/// Every operation that reads a path or query parameter, a header or a body
/// answers 400 when it cannot parse it (the extractors in `extract`, before
/// the handler runs), so the document says so even where a handler's own
/// annotation only lists the errors it returns itself.
struct MalformedInput;

impl Modify for MalformedInput {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            for operation in operations_mut(item) {
                let reads_input = operation.request_body.is_some()
                    || operation.parameters.as_ref().is_some_and(|p| !p.is_empty());
                if reads_input && !operation.responses.responses.contains_key("400") {
                    operation.responses.responses.insert(
                        "400".to_owned(),
                        RefOr::Ref(utoipa::openapi::Ref::from_response_name("BadRequest")),
                    );
                }
                // Input may be well-formed yet break a rule no schema
                // states, or hold what cannot be stored (`contract`): 422.
                if reads_input && !operation.responses.responses.contains_key("422") {
                    operation.responses.responses.insert(
                        "422".to_owned(),
                        RefOr::Ref(utoipa::openapi::Ref::from_response_name("Unprocessable")),
                    );
                }
            }
        }
    }
}

/// The operations of a path item (the methods the API uses).
fn operations_mut(
    item: &mut utoipa::openapi::PathItem,
) -> impl Iterator<Item = &mut utoipa::openapi::path::Operation> {
    [
        &mut item.get,
        &mut item.post,
        &mut item.put,
        &mut item.patch,
        &mut item.delete,
    ]
    .into_iter()
    .flatten()
}

/// Every `/v1` route but the worker callbacks is rate-limited per token
/// (per client IP without a valid one; `api::rate_limit`), so any of them
/// may answer 429 `rate_limited` with `Retry-After`.
struct RateLimited;

impl Modify for RateLimited {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{
            Object, Ref, Type, content::Content, header::HeaderBuilder, response::ResponseBuilder,
        };
        let response = ResponseBuilder::new()
            .description("Over the rate limit (`rate_limited`): retry after `Retry-After` seconds.")
            .header(
                "Retry-After",
                HeaderBuilder::new()
                    .schema(Some(Object::with_type(Type::Integer)))
                    .description(Some(
                        "Seconds to wait before the next request (at least 1).",
                    ))
                    .build(),
            )
            .content(
                "application/json",
                Content::new(Some(Ref::from_schema_name("ErrorBody"))),
            )
            .build();
        let components = openapi.components.get_or_insert_with(Default::default);
        components
            .responses
            .insert("TooManyRequests".to_owned(), RefOr::T(response));
        for (path, item) in openapi.paths.paths.iter_mut() {
            if !path.starts_with("/v1/") || super::rate_limit::is_exempt(path) {
                continue;
            }
            for operation in operations_mut(item) {
                operation.responses.responses.insert(
                    "429".to_owned(),
                    RefOr::Ref(Ref::from_response_name("TooManyRequests")),
                );
            }
        }
    }
}

/// Optional bodies are left out, never sent as `null` (the handlers reject
/// `null`): describe them as their type alone, not "the type or null".
struct OptionalBodies;

impl Modify for OptionalBodies {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for item in openapi.paths.paths.values_mut() {
            let operations = [&mut item.post, &mut item.put, &mut item.patch];
            for operation in operations.into_iter().flatten() {
                let Some(RefOr::T(body)) = operation.request_body.as_mut() else {
                    continue;
                };
                if body.required == Some(Required::True) {
                    continue;
                }
                for content in body.content.values_mut() {
                    let RefOr::T(content) = content else {
                        continue;
                    };
                    let inner = match &content.schema {
                        Some(RefOr::T(Schema::OneOf(one))) => one
                            .items
                            .iter()
                            .find(|s| matches!(s, RefOr::Ref(_)))
                            .cloned(),
                        _ => None,
                    };
                    if inner.is_some() {
                        content.schema = inner;
                    }
                }
            }
        }
    }
}

/// Applies the rules that hold for every operation, once every slice's
/// operations are in the document.
pub fn finish(doc: &mut utoipa::openapi::OpenApi) {
    OptionalBodies.modify(doc);
    MalformedInput.modify(doc);
    JsonBodies.modify(doc);
    RequestExamples.modify(doc);
    RateLimited.modify(doc);
    // The service's own base URL, so the docs page's examples call it.
    doc.servers = Some(vec![utoipa::openapi::Server::new("/")]);
}

/// Request bodies a person can send as they are: the docs page offers
/// them instead of bodies made up from the schemas (`"goal": ""`, which
/// the API refuses). The test `docs_run` sends each one to its route.
struct RequestExamples;

/// `(method, path, example body)` of the operations with an example.
fn request_examples() -> Vec<(&'static str, &'static str, Value)> {
    use serde_json::json;
    vec![
        (
            "post",
            "/v1/missions",
            json!({
            "goal": "Research the state of solid-state batteries and write a report",
            "autonomy": "approve", "budget": 5, "constraints": {"depth": "standard"}}),
        ),
        (
            "patch",
            "/v1/missions/{id}",
            json!({"title": "Battery report", "priority": 10, "labels": ["research"]}),
        ),
        (
            "post",
            "/v1/missions/{id}/approve",
            json!({"assignments": {}}),
        ),
        (
            "post",
            "/v1/missions/{id}/reject-plan",
            json!({"feedback": "Fewer steps, and cite primary sources"}),
        ),
        (
            "post",
            "/v1/missions/{id}/instructions",
            json!({"instructions": "Skip the survey; cite primary sources"}),
        ),
        (
            "post",
            "/v1/missions/{id}/review",
            json!({"decision": "accept"}),
        ),
        (
            "post",
            "/v1/missions/{id}/continue",
            json!({"retry": ["draft"], "feedback": "Use the 2024 figures"}),
        ),
        (
            "post",
            "/v1/missions/{id}/tasks/{task}/resolve",
            json!({"action": "retry", "feedback": "Cite primary sources"}),
        ),
        (
            "post",
            "/v1/missions/{id}/tasks/{task}/cancel",
            json!({"reason": "Not needed this quarter"}),
        ),
        (
            "post",
            "/v1/agents",
            json!({
            "agent_id": "writer-2", "role": "writer", "skills": ["writing"], "tools": [],
            "endpoint_url": "http://127.0.0.1:8091", "max_concurrency": 2}),
        ),
        ("patch", "/v1/agents/{agent_id}", json!({"trust": 0.8})),
        (
            "post",
            "/v1/agents/{agent_id}/heartbeat",
            json!({"status": "idle"}),
        ),
        (
            "post",
            "/v1/tokens",
            json!({"role": "operator", "name": "ops"}),
        ),
        (
            "post",
            "/v1/messages",
            json!({
            "to": "researcher", "from": "writer", "performative": "INFORM",
            "subject": "Draft ready", "content": {"body": "See the blackboard"}}),
        ),
        (
            "post",
            "/v1/reservations",
            json!({"scope": "src/api/*", "agent_id": "researcher", "ttl_secs": 600}),
        ),
        (
            "post",
            "/v1/tool-approvals/{id}/resolve",
            json!({"outcome": "approved", "rationale": "A read-only query"}),
        ),
        (
            "post",
            "/v1/decisions/{id}/resolve",
            json!({"outcome": "approved", "rationale": "Within budget"}),
        ),
    ]
}

impl Modify for RequestExamples {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        for (method, path, example) in request_examples() {
            let Some(item) = openapi.paths.paths.get_mut(path) else {
                continue;
            };
            let operation = match method {
                "post" => item.post.as_mut(),
                "put" => item.put.as_mut(),
                "patch" => item.patch.as_mut(),
                _ => None,
            };
            let Some(RefOr::T(body)) = operation.and_then(|o| o.request_body.as_mut()) else {
                continue;
            };
            if let Some(RefOr::T(content)) = body.content.get_mut("application/json") {
                content.example = Some(example);
            }
        }
    }
}

/// Every operation that takes a body answers 415 (`unsupported_media_type`)
/// to one sent without a JSON `Content-Type` (the extractors in `extract`).
struct JsonBodies;

impl Modify for JsonBodies {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::{Ref, content::Content, response::ResponseBuilder};
        let response = ResponseBuilder::new()
            .description(
                "The body was sent without `Content-Type: application/json` (`unsupported_media_type`).",
            )
            .content(
                "application/json",
                Content::new(Some(Ref::from_schema_name("ErrorBody"))),
            )
            .build();
        let components = openapi.components.get_or_insert_with(Default::default);
        components
            .responses
            .insert("UnsupportedMediaType".to_owned(), RefOr::T(response));
        for item in openapi.paths.paths.values_mut() {
            for operation in operations_mut(item) {
                if operation.request_body.is_some() {
                    operation.responses.responses.insert(
                        "415".to_owned(),
                        RefOr::Ref(Ref::from_response_name("UnsupportedMediaType")),
                    );
                }
            }
        }
    }
}

/// Routes serving `doc` (the whole, finished document) and the docs page.
pub fn router(doc: &Value) -> Router<AppState> {
    // Serialised once: the document does not change while the process runs.
    let json = axum::body::Bytes::from(doc.to_string());
    // The page loads the document from /openapi.json, so nothing is embedded in it.
    let docs: Router<AppState> = Scalar::with_url(DOCS_PATH, Value::Null)
        .custom_html(DOCS_HTML)
        .title("Mission coordinator API")
        .into();
    Router::new()
        .route(
            "/openapi.json",
            get(move || {
                let json = json.clone();
                async move {
                    (
                        [(axum::http::header::CONTENT_TYPE, "application/json")],
                        json,
                    )
                }
            }),
        )
        .route("/docs/scalar.js", get(scalar_js))
        .merge(docs)
}

/// Scalar's standalone bundle, served at `/docs/scalar.js` so the docs page
/// works without internet access.
///
/// Scalar's standalone bundle (@scalar/api-reference 1.52.0, MIT; see web/vendor/).
const SCALAR_JS: &[u8] = include_bytes!("../../web/vendor/scalar-api-reference-1.52.0.js");

async fn scalar_js() -> impl axum::response::IntoResponse {
    use axum::http::header;
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            // Versioned by the binary; a day is a fair cache.
            (header::CACHE_CONTROL, "public, max-age=86400"),
        ],
        SCALAR_JS,
    )
}

/// The Scalar page, pointed at the served document. It makes no call to
/// anywhere but this service: no web fonts, and the features that talk to
/// Scalar's own services (the "Ask AI" agent with its API registry, "Generate
/// MCP", the developer toolbar with "Deploy", telemetry) are turned off; on
/// 127.0.0.1 Scalar would otherwise turn the agent and MCP on by itself.
/// `tests/js/docs-page.mjs` fails on any request that leaves the host.
const DOCS_HTML: &str = r#"<!doctype html>
<html>
<head>
    <title>$title</title>
    <meta charset="utf-8"/>
    <meta name="viewport" content="width=device-width, initial-scale=1"/>
</head>
<body>
<noscript>This page needs JavaScript. The OpenAPI document is at <a href="/openapi.json">/openapi.json</a>.</noscript>
<script id="api-reference" data-url="/openapi.json" data-configuration='{"withDefaultFonts": false, "agent": {"disabled": true}, "mcp": {"disabled": true}, "showDeveloperTools": "never", "telemetry": false}'></script>
<script src="/docs/scalar.js"></script>
</body>
</html>
"#;
