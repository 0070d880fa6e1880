//! `/v1/webhooks`: outbound webhooks and their delivery logs.

use axum::{Router, extract::State, http::StatusCode, routing::get};
use serde::Deserialize;
use serde_json::{Value, json};
use uuid::Uuid;

use super::{
    AppState,
    extract::{Json, Path, Query},
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

async fn list(State(state): State<AppState>, who: Principal) -> ApiResult<Json<Value>> {
    who.require(MANAGERS)?;
    let hooks = store::list(&state.pool, who.workspace_id).await?;
    Ok(Json(json!({ "webhooks": hooks })))
}

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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct DeliveryParams {
    limit: Option<i64>,
}

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
