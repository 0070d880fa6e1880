//! `/v1/tokens`: admins mint, list and revoke their workspace's API tokens.

use axum::{extract::State, http::StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};
use time::OffsetDateTime;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{
    AppState, doc,
    extract::{Json, Path, Query},
    page::Limit,
};
use crate::{
    auth::{self, Principal, Role, TokenView},
    error::{ApiError, ApiResult},
};

/// Longest a token may live: `expires_in_secs` up to ten years.
const MAX_EXPIRES_IN_SECS: u64 = 10 * 366 * 24 * 3600;
/// Longest token name, in characters.
const MAX_NAME: usize = 128;
/// A token's name.
pub const NAME: coordinator_core::text::Text = coordinator_core::text::Text::required(MAX_NAME);

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(show, revoke))
}

/// `POST /v1/tokens` body.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
struct CreateToken {
    /// What the token may do.
    role: Role,
    /// A name to recognise it by, 1–128 characters (default: `{role} token`).
    #[serde(default)]
    name: Option<String>,
    /// Required for role `agent`: the agent the token acts as.
    #[serde(default)]
    agent_id: Option<String>,
    /// The token stops working this many seconds from now (1 to ten years);
    /// absent: it never expires.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 316_224_000)]
    expires_in_secs: Option<u64>,
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
    let name = match req.name {
        Some(n) if NAME.check("name", &n).is_err() => {
            return Err(ApiError::invalid("name", NAME.describe("name")));
        }
        Some(n) => n,
        None => format!("{} token", req.role),
    };
    let expires_at = match req.expires_in_secs {
        None => None,
        Some(secs) if (1..=MAX_EXPIRES_IN_SECS).contains(&secs) => {
            Some(OffsetDateTime::now_utc() + std::time::Duration::from_secs(secs))
        }
        Some(_) => {
            return Err(ApiError::invalid(
                "expires_in_secs",
                format!("expires_in_secs must be between 1 and {MAX_EXPIRES_IN_SECS} (ten years)"),
            ));
        }
    };
    let secret = auth::generate_token();
    let mut conn = state.pool.acquire().await?;
    let id = auth::insert_token_until(
        &mut conn,
        who.workspace_id,
        req.role,
        &name,
        req.agent_id.as_deref(),
        &secret,
        expires_at,
    )
    .await?;
    let expires_at = expires_at
        .map(|t| t.format(&time::format_description::well_known::Rfc3339))
        .transpose()
        .map_err(anyhow::Error::from)?;
    Ok((
        StatusCode::CREATED,
        Json(json!({
            "id": id, "role": req.role, "name": name, "token": secret, "expires_at": expires_at
        })),
    ))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct ListParams {
    /// Page size, 1–500 (default 100).
    #[serde(default)]
    #[param(inline)]
    limit: Limit<100, 500>,
    /// The `next_cursor` of the previous page.
    cursor: Option<Uuid>,
    /// Also list revoked tokens (default: only live and expired ones).
    #[serde(default)]
    include_revoked: bool,
}

/// One page of the workspace's tokens, newest first.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct TokenList {
    /// The tokens: never a secret or its hash.
    pub tokens: Vec<TokenView>,
    /// Pass as `cursor` for the next page; null on the last one.
    pub next_cursor: Option<Uuid>,
}

/// Lists the workspace's API tokens, newest first, a page at a time: id,
/// role, name, agent, created, last used (to the minute), expiry. Secrets
/// are never shown again.
///
/// Roles: admin.
#[utoipa::path(
    get,
    path = "/v1/tokens",
    tag = "tokens",
    operation_id = "list_tokens",
    params(ListParams),
    responses(
        (status = 200, description = "One page", body = TokenList),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden)
    ),
    security(("api_token" = []))
)]
async fn list(
    State(state): State<AppState>,
    who: Principal,
    Query(p): Query<ListParams>,
) -> ApiResult<Json<TokenList>> {
    who.require(&[Role::Admin])?;
    let limit = p.limit.get()?;
    let tokens = auth::list_tokens(
        &state.pool,
        who.workspace_id,
        p.include_revoked,
        p.cursor,
        coordinator_core::paging::probe(limit),
    )
    .await?;
    let (tokens, next_cursor) = coordinator_core::paging::split(tokens, limit, |t| t.id);
    Ok(Json(TokenList {
        tokens,
        next_cursor,
    }))
}

/// Shows one token of the workspace, revoked ones too: resolves an event's
/// actor (`<role>:<token id>`) to the token's name.
///
/// Roles: admin.
#[utoipa::path(
    get,
    path = "/v1/tokens/{id}",
    tag = "tokens",
    operation_id = "get_token",
    params(("id" = Uuid, Path, description = "Token id")),
    responses(
        (status = 200, description = "The token (never its secret)", body = TokenView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn show(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<TokenView>> {
    who.require(&[Role::Admin])?;
    auth::get_token(&state.pool, who.workspace_id, id)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::NotFound(format!("no token {id}")))
}

/// Revokes a token of the workspace: from now on it gets 401, and streams
/// it opened end within a few seconds. Revoking the token making this call
/// is allowed (it stops working at once). Revoking again changes nothing.
///
/// Roles: admin.
#[utoipa::path(
    delete,
    path = "/v1/tokens/{id}",
    tag = "tokens",
    operation_id = "revoke_token",
    params(("id" = Uuid, Path, description = "Token id")),
    responses(
        (status = 204, description = "Revoked"),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn revoke(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    who.require(&[Role::Admin])?;
    if !auth::revoke_token(&state.pool, who.workspace_id, id).await? {
        return Err(ApiError::NotFound(format!("no token {id}")));
    }
    tracing::info!(token_id = %id, by = %who.actor(), "token revoked");
    Ok(StatusCode::NO_CONTENT)
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
    /// When it stops working (null: never).
    pub expires_at: Option<OffsetDateTime>,
}
