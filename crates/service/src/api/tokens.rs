//! `/v1/tokens`: admins mint API tokens for their workspace.

use axum::{extract::State, http::StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};

use super::{AppState, doc, extract::Json};
use crate::{
    auth::{self, Principal, Role},
    error::{ApiError, ApiResult},
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(create))
}

/// `POST /v1/tokens` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct CreateToken {
    /// What the token may do.
    role: Role,
    /// A name to recognise it by (default: `{role} token`).
    #[serde(default)]
    name: Option<String>,
    /// Required for role `agent`: the agent the token acts as.
    #[serde(default)]
    agent_id: Option<String>,
}

/// Creates an API token in the caller's workspace (admins only).
///
/// Roles: admin.
#[utoipa::path(
    post,
    path = "/v1/tokens",
    tag = "tokens",
    operation_id = "create_token",
    request_body = CreateToken,
    responses(
        (status = 201, description = "Created; the secret is shown only now", body = TokenCreated),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden)
    ),
    security(("api_token" = []))
)]
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

/// `POST /v1/tokens` answer. The secret is shown only here.
#[derive(utoipa::ToSchema)]
pub struct TokenCreated {
    /// Token id.
    pub id: uuid::Uuid,
    /// What the token may do.
    pub role: Role,
    /// Its name.
    pub name: String,
    /// The secret to send as `Authorization: Bearer …`; it cannot be read again.
    pub token: String,
}
