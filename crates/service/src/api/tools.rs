//! `/v1/tools`: the chat tools of [`crate::tools`] as plain function-calling
//! schemas, and a route to invoke each one.

use axum::{
    Router,
    extract::State,
    routing::{get, post},
};
use serde_json::{Value, json};

use super::{
    AppState,
    extract::{Json, Path},
    openapi as doc,
};
use crate::{
    auth::Principal,
    error::{ApiError, ApiResult},
    tools,
};

/// Routes of this resource.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/tools", get(list))
        .route("/v1/tools/{name}", post(invoke))
}

/// The chat tools the caller's role may call, in OpenAI function-calling form.
///
/// Roles: any token of the workspace (each sees only the tools its role may call).
#[utoipa::path(
    get,
    path = "/v1/tools",
    tag = "tools",
    operation_id = "list_tools",
    responses(
        (status = 200, description = "The tools", body = doc::ToolList),
        (status = 401, response = doc::Unauthorized)
    ),
    security(("api_token" = []))
)]
async fn list(who: Principal) -> Json<Value> {
    let tools: Vec<Value> = tools::visible_to(who.role)
        .map(tools::Tool::function_schema)
        .collect();
    Json(json!({ "tools": tools }))
}

/// Runs a chat tool with the body as its arguments object (an empty body means no arguments).
///
/// Roles: those of the tool (see `GET /v1/tools` and docs/tools.md).
#[utoipa::path(
    post,
    path = "/v1/tools/{name}",
    tag = "tools",
    operation_id = "invoke_tool",
    params(("name" = String, Path, description = "Tool name, e.g. `create_mission`")),
    request_body(content = Option<doc::ToolArguments>, description = "Optional; the tool's arguments as its `parameters` schema describes them"),
    responses(
        (status = 200, description = "The tool ran", body = doc::ToolResult),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The mission's or task's status does not allow this (`invalid_state`)", body = doc::ErrorBody),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
async fn invoke(
    State(state): State<AppState>,
    who: Principal,
    Path(name): Path<String>,
    body: axum::body::Bytes,
) -> ApiResult<Json<Value>> {
    let tool = tools::find(&name).ok_or_else(|| ApiError::NotFound(format!("no tool '{name}'")))?;
    let args: Value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        serde_json::from_slice(&body).map_err(|e| ApiError::BadRequest {
            code: "invalid_json",
            message: format!("the body must be the tool's arguments as a JSON object: {e}"),
            details: Value::Null,
        })?
    };
    let result = tool.invoke(&state, &who, args).await?;
    Ok(Json(json!({ "result": result })))
}
