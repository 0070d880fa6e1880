//! `/v1/tokens`: admins mint API tokens for their workspace.

use axum::{Router, extract::State, http::StatusCode, routing::post};
use serde::Deserialize;
use serde_json::{Value, json};

use super::{AppState, extract::Json};
use crate::{
    auth::{self, Principal, Role},
    error::{ApiError, ApiResult},
};

/// Routes of this resource.
pub fn router() -> Router<AppState> {
    Router::new().route("/v1/tokens", post(create))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateToken {
    role: Role,
    #[serde(default)]
    name: Option<String>,
    /// Required for role `agent`: the agent the token acts as.
    #[serde(default)]
    agent_id: Option<String>,
}

async fn create(
    State(state): State<AppState>,
    who: Principal,
    Json(req): Json<CreateToken>,
) -> ApiResult<(StatusCode, Json<Value>)> {
    who.require(&[Role::Admin])?;
    if (req.role == Role::Agent) != req.agent_id.is_some() {
        return Err(ApiError::invalid(
            "agent_id",
            "agent_id is required for role 'agent' and only for it",
        ));
    }
    let name = req.name.unwrap_or_else(|| format!("{} token", req.role));
    let secret = auth::generate_token();
    let mut conn = state.pool.acquire().await?;
    let id = auth::insert_token(
        &mut conn,
        who.workspace_id,
        req.role,
        &name,
        req.agent_id.as_deref(),
        &secret,
    )
    .await?;
    Ok((
        StatusCode::CREATED,
        Json(json!({ "id": id, "role": req.role, "name": name, "token": secret })),
    ))
}
