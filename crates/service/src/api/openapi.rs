//! The OpenAPI 3.1 document of the HTTP API, served at `/openapi.json`, and
//! an interactive reference for people at `/docs` (both without a token).
//!
//! Each handler carries `#[utoipa::path]`; [`ApiDoc`] lists them. The types
//! here only describe bodies that handlers build with `json!`. The
//! integration test `openapi` fails when the routes and the document differ.

use std::collections::BTreeMap;

use axum::{Router, routing::get};
use serde_json::Value;
use utoipa::{
    Modify, OpenApi, ToResponse, ToSchema,
    openapi::{
        RefOr, Required,
        schema::Schema,
        security::{HttpAuthScheme, HttpBuilder, SecurityScheme},
    },
};
use utoipa_scalar::{Scalar, Servable};
use uuid::Uuid;

use super::{
    AppState, agents, attempts, bdi, board, contract_net, events, governance, handoffs, messages,
    missions, organisation, plan_library, reservations, team_decisions, timeline, tokens,
    tool_approvals, tools, webhooks, workforce,
};
use crate::{
    auth::Role,
    domain::{BoardColumn, TaskStatus},
    missions::MissionSummary,
    planning::PlanTemplate,
    store::{
        agents::AgentRow,
        board::CardView,
        events::EventView,
        webhooks::{DeliveryView, WebhookView},
    },
};

/// Where the interactive reference is served.
pub const DOCS_PATH: &str = "/docs";

/// The document: every operation of the API and the schemas they use.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Mission coordinator API",
        description = "Plans missions into task graphs, dispatches tasks to agents and reconciles \
            their results. Errors are always `{\"error\": {\"code\", \"message\", \"details\"}}` \
            with a stable `code`; any operation may also answer 413 (`payload_too_large`, bodies \
            over 1 MiB), 500 (`internal_error`) or 503 (`unavailable`) with that body."
    ),
    paths(
        super::healthz,
        super::readyz,
        agents::list,
        agents::register,
        agents::show,
        agents::heartbeat,
        agents::status,
        messages::send,
        messages::show,
        messages::conversation,
        messages::inbox,
        messages::read,
        messages::ack,
        organisation::show,
        organisation::put,
        organisation::remove,
        organisation::validate,
        organisation::verdicts,
        reservations::list,
        reservations::create,
        reservations::show,
        reservations::release,
        missions::list,
        missions::create,
        missions::show,
        missions::approve,
        missions::reject_plan,
        missions::instructions,
        missions::plan,
        missions::save_as_routine,
        missions::review,
        missions::cancel,
        missions::pause,
        missions::resume,
        missions::list_events,
        missions::resolve_task,
        missions::cancel_task,
        attempts::heartbeat,
        attempts::result,
        tokens::create,
        events::list,
        board::show,
        board::card,
        board::move_card,
        webhooks::list,
        webhooks::create,
        webhooks::show,
        webhooks::remove,
        webhooks::deliveries,
        webhooks::subscribe,
        webhooks::list_subscriptions,
        webhooks::unsubscribe,
        tools::list,
        tools::invoke,
        workforce::list_contractors,
        workforce::add_contractor,
        workforce::show_contractor,
        workforce::update_contractor,
        workforce::list_packages,
        workforce::create_package,
        workforce::show_package,
        workforce::transition,
        workforce::assign,
        workforce::progress,
        workforce::delegate,
        handoffs::create,
        handoffs::list,
        handoffs::show,
        governance::show_profile,
        governance::put_profile,
        governance::check,
        governance::list,
        governance::request,
        governance::show,
        governance::resolve,
        contract_net::list,
        contract_net::open,
        contract_net::show,
        contract_net::propose,
        contract_net::award,
        contract_net::set_allocation,
        bdi::put_belief,
        bdi::list_beliefs,
        bdi::belief_revisions,
        bdi::create_desire,
        bdi::list_desires,
        bdi::show_desire,
        bdi::drop_desire,
        bdi::create_goal,
        bdi::list_goals,
        bdi::goal_status,
        bdi::commit_intention,
        bdi::list_intentions,
        bdi::intention_status,
        bdi::intention_progress,
        bdi::reconsider,
        bdi::maintenance_status,
        bdi::run_maintenance,
        bdi::conflicts,
        bdi::show_commitment,
        bdi::put_commitment,
        tool_approvals::request,
        tool_approvals::poll,
        tool_approvals::report_call,
        tool_approvals::list,
        tool_approvals::show,
        tool_approvals::resolve,
        team_decisions::propose,
        team_decisions::list,
        team_decisions::show,
        team_decisions::vote,
        team_decisions::cancel,
        team_decisions::adr,
        timeline::timeline,
        timeline::snapshots,
        plan_library::search,
        plan_library::show,
    ),
    components(
        schemas(ErrorBody, ErrorDetail),
        responses(BadRequest, Unauthorized, Forbidden, NotFound, Unprocessable)
    ),
    modifiers(&SecuritySchemes, &OptionalBodies, &MalformedInput, &RateLimited),
    tags(
        (name = "missions", description = "Missions: plans, approval, progress, reviews and events."),
        (name = "agents", description = "The agent registry, and each agent's unified status."),
        (name = "messages", description = "FIPA-style ACL messages between agents: sending, inboxes (unread → read → acked) and conversations as reply trees."),
        (name = "bdi", description = "BDI state per agent (beliefs with a revision log, desires with the priority formula, goals by tier, intentions with commitment strategies), the BDI maintenance job, and missions' commitment strategies."),
        (name = "organisation", description = "The workspace's organisation spec (MOISE+ roles, groups, links, missions, norms), enforced by the scorer."),
        (name = "reservations", description = "Advisory reservations of work surfaces (scope patterns) with a TTL."),
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

/// The document as served.
pub fn document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}

/// Routes serving the document and the docs page.
pub fn router() -> Router<AppState> {
    // The page loads the document from /openapi.json, so nothing is embedded in it.
    let docs: Router<AppState> = Scalar::with_url(DOCS_PATH, Value::Null)
        .custom_html(DOCS_HTML)
        .title("Mission coordinator API")
        .into();
    Router::new()
        .route("/openapi.json", get(|| async { axum::Json(document()) }))
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

/// The Scalar page, pointed at the served document.
const DOCS_HTML: &str = r#"<!doctype html>
<html>
<head>
    <title>$title</title>
    <meta charset="utf-8"/>
    <meta name="viewport" content="width=device-width, initial-scale=1"/>
</head>
<body>
<noscript>This page needs JavaScript. The OpenAPI document is at <a href="/openapi.json">/openapi.json</a>.</noscript>
<script id="api-reference" data-url="/openapi.json" data-configuration='{"withDefaultFonts": false}'></script>
<script src="/docs/scalar.js"></script>
</body>
</html>
"#;

/// Every error response: `{"error": {"code", "message", "details"}}`.
#[derive(ToSchema)]
pub struct ErrorBody {
    /// What went wrong.
    pub error: ErrorDetail,
}

/// What went wrong.
#[derive(ToSchema)]
pub struct ErrorDetail {
    /// Stable machine-readable code, e.g. `invalid_request`, `not_found`, `invalid_state`.
    pub code: String,
    /// What is wrong, for a person.
    pub message: String,
    /// Structured detail (the offending field, every problem found…), or null.
    pub details: Value,
}

/// The request is malformed: bad JSON, a missing or invalid field (`details.field`
/// names it), a malformed path or query parameter.
#[derive(ToResponse)]
pub struct BadRequest(pub ErrorBody);

/// No valid bearer token (`unauthorized`).
#[derive(ToResponse)]
pub struct Unauthorized(pub ErrorBody);

/// The token's role may not do this (`forbidden`).
#[derive(ToResponse)]
pub struct Forbidden(pub ErrorBody);

/// No such thing in this workspace (`not_found`).
#[derive(ToResponse)]
pub struct NotFound(pub ErrorBody);

/// Well-formed but invalid, e.g. a plan that fails validation; `details` lists every problem.
#[derive(ToResponse)]
pub struct Unprocessable(pub ErrorBody);

/// `GET /healthz` and `GET /readyz` answer.
#[derive(ToSchema)]
pub struct Health {
    /// `ok` (alive) or `ready` (the database answers).
    pub status: String,
}

/// `GET /v1/agents` answer.
#[derive(ToSchema)]
pub struct AgentList {
    /// Every agent of the workspace.
    pub agents: Vec<AgentRow>,
}

/// `GET /v1/missions` answer: one page, newest first.
#[derive(ToSchema)]
pub struct MissionList {
    /// The missions of this page.
    pub missions: Vec<MissionSummary>,
    /// Pass as `cursor` for the next page; null when this page is the last.
    pub next_cursor: Option<Uuid>,
}

/// `GET /v1/missions/{id}/events` answer (JSON): one page, oldest first.
#[derive(ToSchema)]
pub struct EventPage {
    /// Events with `seq` greater than `after`.
    pub events: Vec<EventView>,
    /// Pass as `after` for the next page (the last `seq` seen).
    pub next_after: i64,
}

/// `POST /v1/missions/{id}/save-as-routine` answer.
#[derive(ToSchema)]
pub struct RoutineSaved {
    /// The stored routine; new missions whose goal matches it are planned from it.
    pub routine: PlanTemplate,
}

/// `POST /v1/tokens` answer. The secret is shown only here.
#[derive(ToSchema)]
pub struct TokenCreated {
    /// Token id.
    pub id: Uuid,
    /// What the token may do.
    pub role: Role,
    /// Its name.
    pub name: String,
    /// The secret to send as `Authorization: Bearer …`; it cannot be read again.
    pub token: String,
}

/// `POST /v1/attempts/{id}/result` answer.
#[derive(ToSchema)]
pub struct ReportAccepted {
    /// Always true: the report is recorded.
    pub accepted: bool,
    /// True when the same report was applied before (nothing changed).
    pub duplicate: bool,
    /// The task's status after the report (absent for duplicates).
    pub task_status: Option<TaskStatus>,
}

/// `POST /v1/attempts/{id}/heartbeat` answer.
#[derive(ToSchema)]
pub struct HeartbeatAck {
    /// Always true.
    pub ok: bool,
    /// The lease the heartbeat extended, in seconds: beat again well before it ends.
    pub lease_seconds: u64,
}

/// `GET /v1/events` answer (JSON): one page, in commit order.
#[derive(ToSchema)]
pub struct WorkspaceEventPage {
    /// Matching events after `after`.
    pub events: Vec<EventView>,
    /// Pass as `after` for the next page: an event `id` (it moves past filtered-out events too).
    pub next_after: i64,
}

/// `GET /v1/board` answer.
#[derive(ToSchema)]
pub struct Board {
    /// The mission asked for, or null for the whole workspace.
    pub mission_id: Option<Uuid>,
    /// Every column, in board order, even when empty.
    pub columns: Vec<BoardColumnCards>,
    /// True when there were more than 2000 cards and some are left out.
    pub truncated: bool,
}

/// One column of the board.
#[derive(ToSchema)]
pub struct BoardColumnCards {
    /// The column.
    pub name: BoardColumn,
    /// Cards shown in it.
    #[schema(minimum = 0)]
    pub count: u64,
    /// Its cards, in plan order.
    pub cards: Vec<CardView>,
}

/// `GET /v1/webhooks` answer.
#[derive(ToSchema)]
pub struct WebhookList {
    /// Every webhook of the workspace, newest first.
    pub webhooks: Vec<WebhookView>,
}

/// `GET /v1/webhooks/{id}/deliveries` answer.
#[derive(ToSchema)]
pub struct DeliveryList {
    /// The latest deliveries, newest first.
    pub deliveries: Vec<DeliveryView>,
}

/// `GET /v1/tools` answer.
#[derive(ToSchema)]
pub struct ToolList {
    /// The tools the caller's role may call; pass them to the model as they are.
    pub tools: Vec<FunctionTool>,
}

/// A tool in OpenAI function-calling form.
#[derive(ToSchema)]
pub struct FunctionTool {
    /// Always `function`.
    #[schema(rename = "type")]
    pub kind: FunctionKind,
    /// The function.
    pub function: FunctionSpec,
}

/// The only kind of tool.
#[derive(ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum FunctionKind {
    /// A function the model may call.
    Function,
}

/// A function a model may call.
#[derive(ToSchema)]
pub struct FunctionSpec {
    /// The tool's name, for `POST /v1/tools/{name}`.
    pub name: String,
    /// What it does and when to use it, written for a model.
    pub description: String,
    /// JSON Schema (an object schema) of its arguments.
    #[schema(value_type = Object)]
    pub parameters: Value,
}

/// `POST /v1/tools/{name}` body: the tool's arguments object (`null` values count as not given).
#[derive(ToSchema)]
pub struct ToolArguments(pub BTreeMap<String, Value>);

/// `POST /v1/tools/{name}` answer.
#[derive(ToSchema)]
pub struct ToolResult {
    /// The tool's result, compact JSON for a model (e.g. the mission with a `next_step` sentence).
    #[schema(value_type = Object)]
    pub result: Value,
}
