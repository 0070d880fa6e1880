//! Running workflows over HTTP: start an instance, read it, cancel it,
//! answer a person's task, fix an incident, correlate a message, broadcast
//! a signal (see `docs/workflows.md`). Handlers translate;
//! [`crate::workflows::instances`] decides.

use axum::{extract::State, http::StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use coordinator_bpmn::run::Command;

use super::{
    AppState, doc,
    extract::{Json, Path, Query},
    workflows::ListParams,
};
use crate::{
    auth::Principal,
    error::ApiResult,
    workflows::{
        ANSWERERS, AUTHORS, delivery,
        instances::{self, InstanceList, InstanceView, StartInstance},
    },
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(start, list))
        .routes(routes!(show))
        .routes(routes!(cancel))
        .routes(routes!(complete))
        .routes(routes!(fail))
        .routes(routes!(retry))
        .routes(routes!(set_variables))
        .routes(routes!(message))
        .routes(routes!(signal))
}

/// Starts an instance of the workflow's latest version (or `version`),
/// which freezes that version. A version with validation errors is refused
/// with 422 `invalid_workflow` and the report.
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    post,
    path = "/v1/workflows/{id}/instances",
    tag = "workflows",
    operation_id = "start_workflow_instance",
    params(("id" = Uuid, Path, description = "Workflow id")),
    request_body = StartInstance,
    responses(
        (status = 201, description = "Started", body = InstanceView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The process or start event cannot start (`instance_state`)", body = doc::ErrorBody),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
async fn start(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<StartInstance>,
) -> ApiResult<(StatusCode, Json<InstanceView>)> {
    who.require(AUTHORS)?;
    if req.version.is_some_and(|v| v < 1) {
        return Err(crate::error::ApiError::invalid(
            "version",
            "version must be 1 or more",
        ));
    }
    let view = instances::start(
        &state.pool,
        &state.planning,
        state.engine.events_notifier.as_ref(),
        &who,
        id,
        req,
    )
    .await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// Lists a workflow's instances, newest first.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/workflows/{id}/instances",
    tag = "workflows",
    operation_id = "list_workflow_instances",
    params(("id" = Uuid, Path, description = "Workflow id"), ListParams),
    responses(
        (status = 200, description = "One page", body = InstanceList),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn list(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Query(p): Query<ListParams>,
) -> ApiResult<Json<InstanceList>> {
    let limit = p.limit.get()?;
    Ok(Json(
        instances::list(&state.pool, who.workspace_id, Some(id), p.cursor, limit).await?,
    ))
}

/// An instance: status, variables, where its tokens wait, active and
/// completed nodes, incidents, tasks waiting for a person, and its history.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/workflow-instances/{id}",
    tag = "workflows",
    operation_id = "get_workflow_instance",
    params(("id" = Uuid, Path, description = "Instance id")),
    responses(
        (status = 200, description = "The instance", body = InstanceView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn show(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<InstanceView>> {
    Ok(Json(
        instances::show(&state.pool, who.workspace_id, id).await?,
    ))
}

/// Cancels a running instance: its work is withdrawn, its timers and
/// subscriptions dropped, its called processes cancelled.
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    post,
    path = "/v1/workflow-instances/{id}/cancel",
    tag = "workflows",
    operation_id = "cancel_workflow_instance",
    params(("id" = Uuid, Path, description = "Instance id")),
    responses(
        (status = 200, description = "The instance, terminated", body = InstanceView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "It has already ended (`instance_state`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn cancel(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<Json<InstanceView>> {
    who.require(AUTHORS)?;
    let view = instances::command(
        &state.pool,
        &state.planning,
        state.engine.events_notifier.as_ref(),
        &who,
        id,
        Command::Cancel,
    )
    .await?;
    Ok(Json(view))
}

/// A token id from the path: a whole number (400 otherwise).
fn token_of(raw: &str) -> Result<u64, crate::error::ApiError> {
    raw.parse::<u64>()
        .ok()
        .filter(|t| *t <= i64::MAX as u64)
        .ok_or_else(|| crate::error::ApiError::invalid("token", "token must be a whole number"))
}

/// `POST .../tokens/{token}/complete`.
#[derive(Debug, Default, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CompleteTask {
    /// The task's output: an object's keys become process variables (a form's fields).
    #[serde(default)]
    #[schema(value_type = Object)]
    pub output: Value,
}

/// Completes the task a token waits for (a person's task, or an agent's by hand).
///
/// Roles: admin, operator, stakeholder, agent.
#[utoipa::path(
    post,
    path = "/v1/workflow-instances/{id}/tokens/{token}/complete",
    tag = "workflows",
    operation_id = "complete_workflow_task",
    params(("id" = Uuid, Path, description = "Instance id"), ("token" = String, Path, description = "The token waiting for the task (a whole number)", pattern = "^[0-9]{1,18}$")),
    request_body = CompleteTask,
    responses(
        (status = 200, description = "The instance after it moved on", body = InstanceView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The token does not wait for a task (`instance_state`)", body = doc::ErrorBody),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
async fn complete(
    State(state): State<AppState>,
    who: Principal,
    Path((id, token)): Path<(Uuid, String)>,
    Json(req): Json<CompleteTask>,
) -> ApiResult<Json<InstanceView>> {
    who.require(ANSWERERS)?;
    let cmd = Command::Complete {
        token: token_of(&token)?,
        output: req.output,
    };
    Ok(Json(
        instances::command(
            &state.pool,
            &state.planning,
            state.engine.events_notifier.as_ref(),
            &who,
            id,
            cmd,
        )
        .await?,
    ))
}

/// `POST .../tokens/{token}/fail`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FailTask {
    /// The BPMN error code error boundary events match on.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 200)]
    pub error_code: Option<String>,
    /// What went wrong.
    #[schema(min_length = 1, max_length = 4000)]
    pub message: String,
}

/// Fails the task a token waits for with a BPMN error: an error boundary
/// event catches it, else the instance stops at an incident.
///
/// Roles: admin, operator, stakeholder, agent.
#[utoipa::path(
    post,
    path = "/v1/workflow-instances/{id}/tokens/{token}/fail",
    tag = "workflows",
    operation_id = "fail_workflow_task",
    params(("id" = Uuid, Path, description = "Instance id"), ("token" = String, Path, description = "The token waiting for the task (a whole number)", pattern = "^[0-9]{1,18}$")),
    request_body = FailTask,
    responses(
        (status = 200, description = "The instance after it moved on", body = InstanceView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The token does not wait for a task (`instance_state`)", body = doc::ErrorBody),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
async fn fail(
    State(state): State<AppState>,
    who: Principal,
    Path((id, token)): Path<(Uuid, String)>,
    Json(req): Json<FailTask>,
) -> ApiResult<Json<InstanceView>> {
    who.require(ANSWERERS)?;
    coordinator_core::text::Text::required(4000).check("message", &req.message)?;
    let cmd = Command::Fail {
        token: token_of(&token)?,
        error_code: req.error_code,
        message: req.message,
    };
    Ok(Json(
        instances::command(
            &state.pool,
            &state.planning,
            state.engine.events_notifier.as_ref(),
            &who,
            id,
            cmd,
        )
        .await?,
    ))
}

/// Goes on from an incident (after fixing what caused it, e.g. a variable).
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    post,
    path = "/v1/workflow-instances/{id}/tokens/{token}/retry",
    tag = "workflows",
    operation_id = "retry_workflow_token",
    params(("id" = Uuid, Path, description = "Instance id"), ("token" = String, Path, description = "The token at the incident (a whole number)", pattern = "^[0-9]{1,18}$")),
    responses(
        (status = 200, description = "The instance after it moved on", body = InstanceView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The token is not at an incident (`instance_state`)", body = doc::ErrorBody)
    ),
    security(("api_token" = []))
)]
async fn retry(
    State(state): State<AppState>,
    who: Principal,
    Path((id, token)): Path<(Uuid, String)>,
) -> ApiResult<Json<InstanceView>> {
    who.require(AUTHORS)?;
    let cmd = Command::Retry {
        token: token_of(&token)?,
    };
    Ok(Json(
        instances::command(
            &state.pool,
            &state.planning,
            state.engine.events_notifier.as_ref(),
            &who,
            id,
            cmd,
        )
        .await?,
    ))
}

/// `POST .../variables`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetVariables {
    /// Variables to set (keys of the object).
    #[schema(value_type = Object)]
    pub variables: Map<String, Value>,
}

/// Sets process variables, e.g. to fix what stopped a token at an incident.
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    post,
    path = "/v1/workflow-instances/{id}/variables",
    tag = "workflows",
    operation_id = "set_workflow_variables",
    params(("id" = Uuid, Path, description = "Instance id")),
    request_body = SetVariables,
    responses(
        (status = 200, description = "The instance", body = InstanceView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "It has ended (`instance_state`)", body = doc::ErrorBody),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
async fn set_variables(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<SetVariables>,
) -> ApiResult<Json<InstanceView>> {
    who.require(AUTHORS)?;
    let cmd = Command::SetVariables {
        variables: req.variables,
    };
    Ok(Json(
        instances::command(
            &state.pool,
            &state.planning,
            state.engine.events_notifier.as_ref(),
            &who,
            id,
            cmd,
        )
        .await?,
    ))
}

/// `POST /v1/workflow-messages`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Message {
    /// The message name (as the model's message definition names it).
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    /// The correlation key a waiting token may require.
    #[serde(default)]
    #[schema(max_length = 200)]
    pub correlation_key: Option<String>,
    /// Its content: an object's keys become process variables.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub payload: Value,
}

/// Where a message went.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Delivered {
    /// The instance that took it.
    pub instance_id: Uuid,
}

/// Correlates a message to the first instance of the workspace with a token
/// waiting for it (and, if the token asks, this correlation key); when none
/// waits, it starts the newest workflow with a message start event for it
/// (the key becomes the business key). Neither: 422 `no_subscriber`.
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    post,
    path = "/v1/workflow-messages",
    tag = "workflows",
    operation_id = "correlate_workflow_message",
    request_body = Message,
    responses(
        (status = 200, description = "Delivered", body = Delivered),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
async fn message(
    State(state): State<AppState>,
    who: Principal,
    Json(req): Json<Message>,
) -> ApiResult<Json<Delivered>> {
    who.require(AUTHORS)?;
    let to = delivery::correlate(
        &state.pool,
        &state.planning,
        state.engine.events_notifier.as_ref(),
        &who,
        &req.name,
        req.correlation_key.as_deref(),
        req.payload,
    )
    .await?;
    match to {
        Some(instance_id) => Ok(Json(Delivered { instance_id })),
        None => Err(crate::error::ApiError::Unprocessable {
            code: "no_subscriber",
            message: format!(
                "no instance waits for message '{}' with this correlation key",
                req.name
            ),
            details: serde_json::json!({ "field": "name" }),
        }),
    }
}

/// `POST /v1/workflow-signals`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Signal {
    /// The signal name.
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    /// Its content: an object's keys become process variables.
    #[serde(default)]
    #[schema(value_type = Object)]
    pub payload: Value,
}

/// How many instances took a signal.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Broadcast {
    /// Instances that took it.
    pub delivered: usize,
}

/// Broadcasts a signal to every instance of the workspace waiting for it.
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    post,
    path = "/v1/workflow-signals",
    tag = "workflows",
    operation_id = "broadcast_workflow_signal",
    request_body = Signal,
    responses(
        (status = 200, description = "Broadcast", body = Broadcast),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
async fn signal(
    State(state): State<AppState>,
    who: Principal,
    Json(req): Json<Signal>,
) -> ApiResult<Json<Broadcast>> {
    who.require(AUTHORS)?;
    let delivered = delivery::broadcast(
        &state.pool,
        &state.planning,
        state.engine.events_notifier.as_ref(),
        &who,
        &req.name,
        req.payload,
    )
    .await?;
    Ok(Json(Broadcast { delivered }))
}
