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

/// The tools the caller may call, in OpenAI function-calling form.
async fn list(who: Principal) -> Json<Value> {
    let tools: Vec<Value> = tools::visible_to(who.role)
        .map(tools::Tool::function_schema)
        .collect();
    Json(json!({ "tools": tools }))
}

/// Runs a tool with the body as its arguments object (an empty body is `{}`).
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
