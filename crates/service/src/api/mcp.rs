//! `/mcp`: the chat tools of [`crate::tools`] as an MCP server (streamable
//! HTTP transport, rmcp), behind the same bearer tokens as `/v1`.
//!
//! The server is stateless and answers with plain JSON: no session lives in
//! a replica, so any replica can serve any request. Each request is
//! authenticated here; the principal and the state reach the tool handlers in
//! the request's extensions (rmcp hands the HTTP `Parts` to them).
//!
//! A body that is not one JSON-RPC 2.0 message this server can route gets
//! its JSON-RPC error before rmcp sees it (`-32700`, `-32600`, `-32602`; see
//! [`screen`]), and tool arguments are read under the REST routes' rules.

use std::sync::{Arc, LazyLock};

use axum::{
    Router,
    body::Body,
    extract::{Request, State},
    http::{Method, request::Parts},
    response::{IntoResponse, Response},
    routing::any,
};
use rmcp::{
    ErrorData, ServerHandler,
    model::{
        CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
        ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, ToolAnnotations,
    },
    service::{RequestContext, RoleServer},
    transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService, session::never::NeverSessionManager,
    },
};
use serde_json::{Map, Value, json};

use super::{AppState, BODY_LIMIT, extract};
use crate::{auth::Principal, error::ApiError, tools};

mod screen;

/// What a chat client is told about this server when it connects.
const INSTRUCTIONS: &str = "Mission coordinator: give it a goal (create_mission) and it plans a \
    graph of tasks and runs them on its agents. In approve mode, approve the plan (approve_plan) \
    and later review the results (review_results). Follow a mission with mission_status; every \
    result says what to do next in next_step.";

/// Routes of this resource.
pub fn router() -> Router<AppState> {
    Router::new().route("/mcp", any(serve))
}

/// The MCP service: stateless (no sessions), JSON responses, any `Host`
/// (the bearer token, not the host name, protects it).
static SERVICE: LazyLock<StreamableHttpService<ToolServer, NeverSessionManager>> =
    LazyLock::new(|| {
        StreamableHttpService::new(
            || Ok(ToolServer),
            Arc::new(NeverSessionManager::default()),
            StreamableHttpServerConfig::default()
                .with_legacy_session_mode(false)
                .with_json_response(true)
                .with_sse_keep_alive(None)
                .disable_allowed_hosts()
                .with_max_request_body_bytes(BODY_LIMIT),
        )
    });

async fn serve(State(state): State<AppState>, request: Request) -> Response {
    let (mut parts, body) = request.into_parts();
    let who = match authenticate(&state, &mut parts).await {
        Ok(who) => who,
        Err(e) => return e.into_response(),
    };
    // Stateless: there is no server-to-client stream to open (GET) and no
    // session to end (DELETE).
    if parts.method != Method::POST {
        let mut response = extract::method_not_allowed().await;
        response.headers_mut().insert(
            axum::http::header::ALLOW,
            axum::http::HeaderValue::from_static("POST"),
        );
        return response;
    }
    parts.extensions.insert(who);
    parts.extensions.insert(state);
    // Malformed JSON-RPC gets its JSON-RPC error here, not rmcp's 415 (see `screen`).
    let body = if screen::reads_body(&parts.headers) {
        let bytes = match screen::read_body(body, BODY_LIMIT).await {
            Ok(bytes) => bytes,
            Err(refusal) => return refusal,
        };
        if let Some(refusal) = screen::refusal(&bytes) {
            return refusal;
        }
        Body::from(bytes)
    } else {
        body
    };
    let response = SERVICE.handle(Request::from_parts(parts, body)).await;
    json_refusal(response.map(Body::new)).await
}

/// The MCP transport answers its own refusals (a body too large, not JSON,
/// a wrong `Accept`) in plain text; they become the one JSON error body with
/// the same status. JSON answers (results and JSON-RPC errors) pass as they are.
async fn json_refusal(response: Response) -> Response {
    let status = response.status();
    let is_json = response
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"));
    if !(status.is_client_error() || status.is_server_error()) || is_json {
        return response;
    }
    // A refusal's text is short; a bounded read keeps a huge one out of memory.
    let text = axum::body::to_bytes(response.into_body(), 4096)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_owned())
        .unwrap_or_default();
    let code = match status.as_u16() {
        413 => "payload_too_large",
        415 => "unsupported_media_type",
        406 => "not_acceptable",
        s if s >= 500 => "internal_error",
        _ => "invalid_request",
    };
    let message = if text.is_empty() {
        status.canonical_reason().unwrap_or("refused").to_owned()
    } else {
        text
    };
    let body = json!({ "error": { "code": code, "message": message, "details": null } });
    (status, axum::Json(body)).into_response()
}

/// The caller, through the same extractor as the REST routes (so MCP calls
/// count against the token's rate limit too).
async fn authenticate(state: &AppState, parts: &mut Parts) -> Result<Principal, ApiError> {
    <Principal as axum::extract::FromRequestParts<AppState>>::from_request_parts(parts, state).await
}

/// The MCP handler over the tool registry.
#[derive(Debug, Clone, Copy)]
pub struct ToolServer;

/// The caller and the state [`serve`] put on the request.
fn caller(context: &RequestContext<RoleServer>) -> Result<(Principal, AppState), ErrorData> {
    let parts = context
        .extensions
        .get::<Parts>()
        .ok_or_else(|| ErrorData::internal_error("request parts are missing", None))?;
    let who = parts.extensions.get::<Principal>().cloned();
    let state = parts.extensions.get::<AppState>().cloned();
    match (who, state) {
        (Some(who), Some(state)) => Ok((who, state)),
        _ => Err(ErrorData::internal_error(
            "the request was not authenticated",
            None,
        )),
    }
}

fn mcp_tool(tool: &tools::Tool) -> rmcp::model::Tool {
    let schema = super::contract::model_parameters(tool)
        .as_object()
        .cloned()
        .unwrap_or_default();
    let annotations = ToolAnnotations::with_title(tool.title)
        .read_only(tool.read_only)
        // Both end or erase what cannot be brought back.
        .destructive(matches!(tool.name, "cancel_mission" | "delete_mission"));
    rmcp::model::Tool::new(tool.name, tool.description, schema).with_annotations(annotations)
}

/// A tool error as a result the model can read (`isError: true`) carrying
/// the REST error body (code, message, details), so both surfaces say the same.
async fn error_result(e: ApiError) -> CallToolResult {
    let response = e.into_response();
    let status = response.status().as_u16();
    let body = axum::body::to_bytes(response.into_body(), BODY_LIMIT)
        .await
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .unwrap_or(Value::Null);
    let error = &body["error"];
    let text = format!(
        "Error ({}): {}",
        error["code"].as_str().unwrap_or("error"),
        error["message"].as_str().unwrap_or("the tool failed")
    );
    let mut result = CallToolResult::structured_error(json!({ "status": status, "error": error }));
    result.content = vec![ContentBlock::text(text)];
    result
}

/// Tool arguments read as `POST /v1/tools/{name}` reads its body
/// ([`extract::parse_body`]): a number beyond ±1e308 is refused naming where
/// it is (stored in jsonb it came back as a decimal serde cannot read, so a
/// mission created with one through MCP failed with an internal error), and
/// an integral float (`2.0`) is the integer it is.
fn read_as_rest_does(arguments: Map<String, Value>) -> Result<Value, ApiError> {
    let bytes = serde_json::to_vec(&Value::Object(arguments))
        .map_err(|e| ApiError::invalid("arguments", e.to_string()))?;
    extract::parse_body::<Value>(&bytes)
}

impl ServerHandler for ToolServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "coordinator",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let (who, _) = caller(&context)?;
        Ok(ListToolsResult::with_all_items(
            tools::visible_for(&who).map(mcp_tool).collect(),
        ))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        tools::find(name).map(mcp_tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let (who, state) = caller(&context)?;
        let Some(tool) = tools::find(&request.name) else {
            // An unknown tool is the model's mistake, not the transport's: say so readably.
            return Ok(error_result(ApiError::NotFound(format!(
                "no tool '{}'; list_tools shows the tools",
                request.name
            )))
            .await
            .into());
        };
        let args = match request.arguments.map(read_as_rest_does).transpose() {
            Ok(args) => args.unwrap_or(Value::Null),
            Err(e) => return Ok(error_result(e).await.into()),
        };
        let result = match tool.invoke(&state.tools(), &who, args).await {
            Ok(value) => CallToolResult::structured(value),
            Err(e) => error_result(e).await,
        };
        Ok(result.into())
    }
}
