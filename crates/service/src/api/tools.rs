//! `/v1/tools`: the chat tools of [`crate::tools`] as plain function-calling
//! schemas, and a route to invoke each one.

use axum::extract::State;
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{
    AppState, doc,
    extract::{Json, Path},
};
use crate::{
    auth::Principal,
    error::{ApiError, ApiResult},
    tools,
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(invoke))
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
        (status = 200, description = "The tools", body = ToolList),
        (status = 401, response = doc::Unauthorized)
    ),
    security(("api_token" = []))
)]
async fn list(who: Principal) -> Json<Value> {
    let tools: Vec<Value> = tools::visible_for(&who)
        .map(super::contract::function_schema)
        .collect();
    Json(json!({ "tools": tools }))
}

/// Runs a chat tool with the body as its arguments object (an empty body means no arguments).
///
/// The document lists this route once per tool (`POST /v1/tools/<name>`,
/// with the tool's own argument schema; `api::contract`).
///
/// Roles: those of the tool (see `GET /v1/tools` and docs/tools.md).
#[utoipa::path(
    post,
    path = "/v1/tools/{name}",
    tag = "tools",
    operation_id = "invoke_tool",
    params(("name" = String, Path, description = "Tool name, e.g. `create_mission`")),
    request_body(content = Option<ToolArguments>, description = "Optional; the tool's arguments as its `parameters` schema describes them"),
    responses(
        (status = 200, description = "The tool ran", body = ToolResult),
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
    super::extract::RawBody(body): super::extract::RawBody,
) -> ApiResult<Json<Value>> {
    let tool = tools::find(&name).ok_or_else(|| ApiError::NotFound(format!("no tool '{name}'")))?;
    let args: Value = if body.iter().all(u8::is_ascii_whitespace) {
        // As for every route whose body is required (the document says so
        // for a tool with required arguments): no body is a 415.
        if tool.parameters["required"]
            .as_array()
            .is_some_and(|r| !r.is_empty())
        {
            return Err(ApiError::UnsupportedMediaType(format!(
                "send the arguments of '{name}' as a JSON body with Content-Type: application/json"
            )));
        }
        Value::Null
    } else {
        // As any body: an object, integral floats read as integers.
        super::extract::parse_body::<Value>(&body)?
    };
    let result = tool.invoke(&state.tools(), &who, args).await?;
    Ok(Json(json!({ "result": result })))
}

impl From<crate::coordination::tool_access::AccessError> for ApiError {
    fn from(e: crate::coordination::tool_access::AccessError) -> Self {
        use crate::coordination::tool_access::AccessError;
        match e {
            AccessError::Refused(reason) => ApiError::Forbidden(reason),
            AccessError::Approval(e) => e.into(),
            AccessError::Database(e) => e.into(),
        }
    }
}

/// `GET /v1/tools` answer.
#[derive(utoipa::ToSchema)]
pub struct ToolList {
    /// The tools the caller's role may call; pass them to the model as they are.
    pub tools: Vec<FunctionTool>,
}

/// A tool in OpenAI function-calling form.
#[derive(utoipa::ToSchema)]
pub struct FunctionTool {
    /// Always `function`.
    #[schema(rename = "type")]
    pub kind: FunctionKind,
    /// The function.
    pub function: FunctionSpec,
}

/// The only kind of tool.
#[derive(utoipa::ToSchema)]
#[schema(rename_all = "snake_case")]
pub enum FunctionKind {
    /// A function the model may call.
    Function,
}

/// A function a model may call.
#[derive(utoipa::ToSchema)]
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
#[derive(utoipa::ToSchema)]
pub struct ToolArguments(pub std::collections::BTreeMap<String, Value>);

/// `POST /v1/tools/{name}` answer.
#[derive(utoipa::ToSchema)]
pub struct ToolResult {
    /// The tool's result, compact JSON for a model (e.g. the mission with a `next_step` sentence).
    #[schema(value_type = Object)]
    pub result: Value,
}
