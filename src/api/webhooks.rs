//! `/v1/webhooks`: outbound webhooks and their delivery logs.

use axum::{Router, extract::State, http::StatusCode, routing::get};
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::{
    AppState,
    extract::{Json, Path, Query},
    openapi as doc,
};
use crate::{
    auth::{Principal, Role},
    error::{ApiError, ApiResult},
    store::webhooks::{self as store, WebhookView},
    webhooks::CreateWebhook,
};

/// Routes of this resource.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/v1/webhooks", get(list).post(create))
        .route("/v1/webhooks/{id}", get(show).delete(remove))
        .route("/v1/webhooks/{id}/deliveries", get(deliveries))
}

const MANAGERS: &[Role] = &[Role::Admin, Role::Operator];

/// Creates a webhook: matching events from now on are POSTed to its URL, signed with its secret.
///
/// Roles: admin, operator.
#[utoipa::path(
    post,
    path = "/v1/webhooks",
    tag = "webhooks",
    operation_id = "create_webhook",
    request_body = CreateWebhook,
    responses(
        (status = 201, description = "Created", body = WebhookView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden)
    ),
    security(("api_token" = []))
)]
async fn create(
    State(state): State<AppState>,
    who: Principal,
    Json(req): Json<CreateWebhook>,
) -> ApiResult<(StatusCode, Json<WebhookView>)> {
    who.require(MANAGERS)?;
    let kinds = req.validate()?;
    let hook = store::create(
        &state.pool,
        who.workspace_id,
        &req.url,
        &kinds,
        &req.secret,
        &who.actor(),
    )
    .await?;
    Ok((StatusCode::CREATED, Json(hook)))
}

/// Lists the workspace's webhooks, newest first (deleted ones too, inactive).
///
/// Roles: admin, operator.
#[utoipa::path(
    get,
    path = "/v1/webhooks",
    tag = "webhooks",
    operation_id = "list_webhooks",
    responses(
        (status = 200, description = "Every webhook", body = doc::WebhookList),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden)
    ),
    security(("api_token" = []))
)]
async fn list(State(state): State<AppState>, who: Principal) -> ApiResult<Json<Value>> {
    who.require(MANAGERS)?;
    let hooks = store::list(&state.pool, who.workspace_id).await?;
    Ok(Json(json!({ "webhooks": hooks })))
}

/// Shows a webhook.
///
/// Roles: admin, operator.
#[utoipa::path(
    get,
    path = "/v1/webhooks/{id}",
    tag = "webhooks",
    operation_id = "get_webhook",
    params(("id" = Uuid, Path, description = "Webhook id")),
    responses(
        (status = 200, description = "The webhook", body = WebhookView),
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
) -> ApiResult<Json<WebhookView>> {
    who.require(MANAGERS)?;
    store::get(&state.pool, who.workspace_id, id)
        .await?
        .map(Json)
        .ok_or_else(|| ApiError::NotFound(format!("no webhook {id}")))
}

/// Deletes a webhook: it goes inactive, its pending deliveries fail, its delivery log stays.
///
/// Roles: admin, operator.
#[utoipa::path(
    delete,
    path = "/v1/webhooks/{id}",
    tag = "webhooks",
    operation_id = "delete_webhook",
    params(("id" = Uuid, Path, description = "Webhook id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn remove(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    who.require(MANAGERS)?;
    if store::deactivate(&state.pool, who.workspace_id, id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::NotFound(format!("no webhook {id}")))
    }
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct DeliveryParams {
    /// Most deliveries, 1–1000 (default 100).
    #[param(minimum = 1, maximum = 1000)]
    limit: Option<i64>,
}

/// A webhook's delivery log, newest first.
///
/// Roles: admin, operator.
#[utoipa::path(
    get,
    path = "/v1/webhooks/{id}/deliveries",
    tag = "webhooks",
    operation_id = "list_webhook_deliveries",
    params(("id" = Uuid, Path, description = "Webhook id"), DeliveryParams),
    responses(
        (status = 200, description = "The latest deliveries", body = doc::DeliveryList),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn deliveries(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Query(p): Query<DeliveryParams>,
) -> ApiResult<Json<Value>> {
    who.require(MANAGERS)?;
    let limit = p.limit.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::invalid(
            "limit",
            "limit must be between 1 and 1000",
        ));
    }
    if store::get(&state.pool, who.workspace_id, id)
        .await?
        .is_none()
    {
        return Err(ApiError::NotFound(format!("no webhook {id}")));
    }
    let log = store::deliveries(&state.pool, id, limit).await?;
    Ok(Json(json!({ "deliveries": log })))
}
