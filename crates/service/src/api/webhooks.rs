//! `/v1/webhooks`: outbound webhooks and their delivery logs.

use axum::{extract::State, http::StatusCode};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use super::{
    AppState, doc,
    extract::{Json, Path, Query},
};
use crate::{
    auth::{Principal, Role},
    error::{ApiError, ApiResult},
    store::webhooks::{self as store, WebhookView},
    webhooks::CreateWebhook,
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list, create))
        .routes(routes!(show, remove))
        .routes(routes!(deliveries))
        .routes(routes!(list_subscriptions, subscribe))
        .routes(routes!(unsubscribe))
}

/// `POST /v1/agents/{agent_id}/subscriptions` body: events matching every topic given are pushed to the agent.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Subscribe {
    /// Only this mission's events.
    #[serde(default)]
    pub mission_id: Option<Uuid>,
    /// Only events about agents of this role (their attempts, or naming them).
    #[serde(default)]
    pub role: Option<String>,
    /// Only these kinds; a trailing `*` matches a prefix (`task.*`). Empty: every kind.
    #[serde(default)]
    pub events: Vec<String>,
    /// HMAC-SHA256 key for the signature header, 16–256 characters (as for webhooks).
    #[schema(min_length = 16, max_length = 256)]
    pub secret: String,
}

/// Subscribes an agent to topics: matching events from now on are POSTed to `{endpoint_url}/v1/events`, signed and retried like webhook deliveries (see `GET /v1/webhooks/{id}/deliveries` for the log).
///
/// Roles: admin, operator, worker, or the agent's own token.
#[utoipa::path(
    post,
    path = "/v1/agents/{agent_id}/subscriptions",
    tag = "webhooks",
    operation_id = "subscribe_agent",
    params(("agent_id" = String, Path, description = "Agent id")),
    request_body = Subscribe,
    responses(
        (status = 201, description = "Subscribed", body = WebhookView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn subscribe(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
    Json(req): Json<Subscribe>,
) -> ApiResult<(StatusCode, Json<WebhookView>)> {
    who.require_self_or(&agent_id, &[Role::Admin, Role::Operator, Role::Worker])?;
    let n = req.secret.chars().count();
    if !(16..=256).contains(&n) {
        return Err(ApiError::invalid(
            "secret",
            "secret must be 16 to 256 characters",
        ));
    }
    if req.events.len() > 64 {
        return Err(ApiError::invalid("events", "at most 64 event kinds"));
    }
    if let Some(problem) = req
        .events
        .iter()
        .find_map(|k| crate::store::events::kind_pattern_problem(k))
    {
        return Err(ApiError::invalid("events", problem));
    }
    if req
        .role
        .as_deref()
        .is_some_and(|r| r.trim().is_empty() || r.len() > 64)
    {
        return Err(ApiError::invalid("role", "role must be 1–64 characters"));
    }
    // Deliveries to the agent's endpoint are webhook deliveries: the webhook
    // policy must admit it too.
    if let Some(agent) = crate::store::agents::get(&state.pool, who.workspace_id, &agent_id).await?
        && let Ok(url) = reqwest::Url::parse(&agent.endpoint_url)
    {
        state
            .webhook_http
            .policy()
            .admit(&url)
            .await
            .map_err(|why| {
                ApiError::invalid(
                    "agent_id",
                    format!("the agent's endpoint_url is refused for event deliveries: {why}"),
                )
            })?;
    }
    let topics = store::Topics {
        mission_id: req.mission_id,
        role: req.role,
        kinds: req.events,
    };
    let hook = store::subscribe(
        &state.pool,
        who.workspace_id,
        &agent_id,
        &topics,
        &req.secret,
        &who.actor(),
    )
    .await?
    .ok_or_else(|| ApiError::NotFound(format!("no agent '{agent_id}'")))?;
    Ok((StatusCode::CREATED, Json(hook)))
}

/// Lists an agent's event subscriptions (cancelled ones too, inactive).
///
/// Roles: admin, operator, worker, or the agent's own token.
#[utoipa::path(
    get,
    path = "/v1/agents/{agent_id}/subscriptions",
    tag = "webhooks",
    operation_id = "list_subscriptions",
    params(("agent_id" = String, Path, description = "Agent id")),
    responses(
        (status = 200, description = "The subscriptions", body = WebhookList),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn list_subscriptions(
    State(state): State<AppState>,
    who: Principal,
    Path(agent_id): Path<String>,
) -> ApiResult<Json<Value>> {
    who.require_self_or(&agent_id, &[Role::Admin, Role::Operator, Role::Worker])?;
    // An agent of another workspace is as unknown as one that never existed.
    if crate::store::agents::get(&state.pool, who.workspace_id, &agent_id)
        .await?
        .is_none()
    {
        return Err(ApiError::NotFound(format!("no agent '{agent_id}'")));
    }
    let hooks = store::subscriptions(&state.pool, who.workspace_id, &agent_id).await?;
    Ok(Json(json!({ "webhooks": hooks })))
}

/// Cancels an agent's event subscription.
///
/// Roles: admin, operator, worker, or the agent's own token.
#[utoipa::path(
    delete,
    path = "/v1/agents/{agent_id}/subscriptions/{id}",
    tag = "webhooks",
    operation_id = "unsubscribe_agent",
    params(
        ("agent_id" = String, Path, description = "Agent id"),
        ("id" = Uuid, Path, description = "Subscription id")
    ),
    responses(
        (status = 204, description = "Cancelled"),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn unsubscribe(
    State(state): State<AppState>,
    who: Principal,
    Path((agent_id, id)): Path<(String, Uuid)>,
) -> ApiResult<StatusCode> {
    who.require_self_or(&agent_id, &[Role::Admin, Role::Operator, Role::Worker])?;
    let owned = store::get(&state.pool, who.workspace_id, id)
        .await?
        .is_some_and(|h| h.agent_id.as_deref() == Some(agent_id.as_str()));
    if !owned || !store::deactivate(&state.pool, who.workspace_id, id).await? {
        return Err(ApiError::NotFound(format!(
            "no subscription {id} of agent '{agent_id}'"
        )));
    }
    Ok(StatusCode::NO_CONTENT)
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
    // `validate` parsed the URL; the address is judged against the webhook policy.
    if let Ok(url) = reqwest::Url::parse(&req.url) {
        state
            .webhook_http
            .policy()
            .admit(&url)
            .await
            // Well-formed, but the deployment's egress policy refuses it.
            .map_err(|why| ApiError::Unprocessable {
                code: "url_refused",
                message: format!("url refused: {why}"),
                details: serde_json::json!({ "field": "url" }),
            })?;
    }
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
        (status = 200, description = "Every webhook", body = WebhookList),
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
        (status = 200, description = "The latest deliveries", body = DeliveryList),
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

/// `GET /v1/webhooks` answer.
#[derive(utoipa::ToSchema)]
pub struct WebhookList {
    /// Every webhook of the workspace, newest first.
    pub webhooks: Vec<WebhookView>,
}

/// `GET /v1/webhooks/{id}/deliveries` answer.
#[derive(utoipa::ToSchema)]
pub struct DeliveryList {
    /// The latest deliveries, newest first.
    pub deliveries: Vec<crate::store::webhooks::DeliveryView>,
}
