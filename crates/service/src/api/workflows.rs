//! `/v1/workflows`: BPMN 2.0 workflows: import, create, inspect, validate,
//! edit, export and delete (see `docs/workflows.md`). Handlers translate;
//! [`crate::workflows`] decides.

use axum::{
    extract::{DefaultBodyLimit, State},
    http::{StatusCode, header},
    response::IntoResponse,
};
use serde::Deserialize;
use serde_json::json;
use utoipa_axum::{router::OpenApiRouter, routes};
use uuid::Uuid;

use coordinator_bpmn::edit::{Edit, EditError, NodeType};

use super::{
    AppState, doc,
    extract::{Json, Path, Query, Xml},
    page::Limit,
};
use crate::{
    auth::Principal,
    error::{ApiError, ApiResult},
    workflows::{
        self, AUTHORS, CreateWorkflow, MAX_DOCUMENT_BYTES, WorkflowError, WorkflowList,
        WorkflowView,
    },
};

/// Routes of this resource.
pub fn router() -> OpenApiRouter<AppState> {
    // Documents may be larger than the API's JSON limit.
    let documents = OpenApiRouter::new()
        .routes(routes!(import))
        .routes(routes!(validate_document))
        .routes(routes!(import_version))
        .layer(DefaultBodyLimit::max(MAX_DOCUMENT_BYTES));
    OpenApiRouter::new()
        .routes(routes!(create, list))
        .routes(routes!(show, delete))
        .routes(routes!(export))
        .routes(routes!(validation))
        .routes(routes!(add_node))
        .routes(routes!(remove_node))
        .routes(routes!(connect))
        .routes(routes!(add_lane))
        .merge(documents)
}

impl From<WorkflowError> for ApiError {
    fn from(e: WorkflowError) -> Self {
        match e {
            WorkflowError::Invalid(i) => i.into(),
            WorkflowError::Import(i) => import_error(&i),
            WorkflowError::Edit(e) => edit_error(e),
            WorkflowError::NotFound(m) => ApiError::NotFound(m),
            WorkflowError::NotRunnable(report) => ApiError::Unprocessable {
                code: "invalid_workflow",
                message: "the workflow has validation errors; fix them before running it".into(),
                details: report,
            },
            WorkflowError::Refused(m) => ApiError::Conflict {
                code: "instance_state",
                message: m,
                details: serde_json::Value::Null,
            },
            WorkflowError::InUse(m) => ApiError::Conflict {
                code: "workflow_in_use",
                message: m,
                details: serde_json::Value::Null,
            },
            WorkflowError::Run(m) => ApiError::Unexpected(anyhow::anyhow!(m)),
            WorkflowError::Stored(e) => ApiError::Unexpected(e.into()),
            WorkflowError::Db(e) => e.into(),
        }
    }
}

/// Unreadable XML is a 400 (as malformed JSON is); XML that is not a BPMN
/// 2.0 document, or one the importer refuses, a 422.
fn import_error(e: &coordinator_bpmn::ImportError) -> ApiError {
    let details = json!({ "field": "body", "position": e.position() });
    if e.is_malformed() {
        ApiError::BadRequest {
            code: "malformed_xml",
            message: e.to_string(),
            details,
        }
    } else {
        ApiError::Unprocessable {
            code: "invalid_bpmn",
            message: e.to_string(),
            details,
        }
    }
}

fn edit_error(e: EditError) -> ApiError {
    let details = json!({ "field": e.field() });
    match e {
        EditError::Stale { .. } => ApiError::Conflict {
            code: "version_conflict",
            message: e.to_string(),
            details,
        },
        EditError::DuplicateId(_) => ApiError::Conflict {
            code: "duplicate_element",
            message: e.to_string(),
            details,
        },
        _ => ApiError::Unprocessable {
            code: e.code(),
            message: e.to_string(),
            details,
        },
    }
}

/// Creates an empty workflow: one executable process, no nodes yet.
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    post,
    path = "/v1/workflows",
    tag = "workflows",
    operation_id = "create_workflow",
    request_body = CreateWorkflow,
    responses(
        (status = 201, description = "Created", body = WorkflowView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
async fn create(
    State(state): State<AppState>,
    who: Principal,
    Json(req): Json<CreateWorkflow>,
) -> ApiResult<(StatusCode, Json<WorkflowView>)> {
    who.require(AUTHORS)?;
    let view = workflows::create(&state.pool, &who, req).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// A page of workflows or of their instances.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub(super) struct ListParams {
    /// Page size, 1–200 (default 50).
    #[serde(default)]
    #[param(inline)]
    pub(super) limit: Limit<50, 200>,
    /// The `next_cursor` of the previous page.
    pub(super) cursor: Option<Uuid>,
}

/// Lists the workspace's workflows, newest first, a page at a time.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/workflows",
    tag = "workflows",
    operation_id = "list_workflows",
    params(ListParams),
    responses(
        (status = 200, description = "One page", body = WorkflowList),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized)
    ),
    security(("api_token" = []))
)]
async fn list(
    State(state): State<AppState>,
    who: Principal,
    Query(p): Query<ListParams>,
) -> ApiResult<Json<WorkflowList>> {
    let limit = p.limit.get()?;
    Ok(Json(
        workflows::list(&state.pool, who.workspace_id, p.cursor, limit).await?,
    ))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct ImportParams {
    /// Display name (default: the document's first named process).
    #[param(min_length = 1, max_length = 200)]
    name: Option<String>,
}

/// Imports a BPMN 2.0 document (as Camunda Modeler, bpmn.io, Signavio and
/// others write it) as a new workflow, with what validation says of it.
///
/// The document is stored as it arrived beside its semantic model; diagram
/// interchange and vendor extensions are kept and exported again. Invalid
/// models are stored too (as drafts): the answer's `validation` says what
/// to fix. Unreadable XML: 400 `malformed_xml`; XML that is not BPMN 2.0:
/// 422 `invalid_bpmn`.
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    post,
    path = "/v1/workflows/import",
    tag = "workflows",
    operation_id = "import_workflow",
    params(ImportParams),
    request_body(content = String, content_type = "application/xml", description = "A BPMN 2.0 document (`definitions`), UTF-8 or as its XML declaration says, up to 16 MiB"),
    responses(
        (status = 201, description = "Imported", body = WorkflowView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 413, description = "The document is over 16 MiB", body = doc::ErrorBody),
        (status = 415, description = "Not sent as XML", body = doc::ErrorBody),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
async fn import(
    State(state): State<AppState>,
    who: Principal,
    Query(p): Query<ImportParams>,
    Xml(body): Xml,
) -> ApiResult<(StatusCode, Json<WorkflowView>)> {
    who.require(AUTHORS)?;
    let view = workflows::import(&state.pool, &who, p.name.as_deref(), &body).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// Validates a BPMN 2.0 document without storing it: `{valid, errors,
/// warnings}`, each finding with its code, message and element id.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    post,
    path = "/v1/workflows/validate",
    tag = "workflows",
    operation_id = "validate_workflow_document",
    request_body(content = String, content_type = "application/xml", description = "A BPMN 2.0 document"),
    responses(
        (status = 200, description = "What validation says", body = Object),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 413, description = "The document is over 16 MiB", body = doc::ErrorBody),
        (status = 415, description = "Not sent as XML", body = doc::ErrorBody),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
async fn validate_document(_who: Principal, Xml(body): Xml) -> ApiResult<Json<serde_json::Value>> {
    let report = workflows::validate_document(&body)?;
    Ok(Json(json!(report)))
}

/// Imports a document as the next version of a workflow; instances keep
/// the version they started with.
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    post,
    path = "/v1/workflows/{id}/versions",
    tag = "workflows",
    operation_id = "import_workflow_version",
    params(("id" = Uuid, Path, description = "Workflow id")),
    request_body(content = String, content_type = "application/xml", description = "A BPMN 2.0 document"),
    responses(
        (status = 201, description = "The new version", body = WorkflowView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 413, description = "The document is over 16 MiB", body = doc::ErrorBody),
        (status = 415, description = "Not sent as XML", body = doc::ErrorBody),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
async fn import_version(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Xml(body): Xml,
) -> ApiResult<(StatusCode, Json<WorkflowView>)> {
    who.require(AUTHORS)?;
    let view = workflows::import_version(&state.pool, &who, id, &body).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct VersionParams {
    /// A version (default: the latest).
    #[param(minimum = 1, maximum = 2147483647)]
    version: Option<i32>,
}

impl VersionParams {
    fn get(&self) -> Result<Option<i32>, ApiError> {
        match self.version {
            Some(v) if v < 1 => Err(ApiError::invalid("version", "version must be 1 or more")),
            v => Ok(v),
        }
    }
}

/// Shows a workflow: its semantic model (processes, nodes, flows, lanes,
/// collaborations) and what validation says, for the latest version or
/// the one asked for.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/workflows/{id}",
    tag = "workflows",
    operation_id = "get_workflow",
    params(("id" = Uuid, Path, description = "Workflow id"), VersionParams),
    responses(
        (status = 200, description = "The workflow", body = WorkflowView),
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
    Query(p): Query<VersionParams>,
) -> ApiResult<Json<WorkflowView>> {
    Ok(Json(
        workflows::show(&state.pool, who.workspace_id, id, p.get()?).await?,
    ))
}

/// Deletes a workflow with every version.
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    delete,
    path = "/v1/workflows/{id}",
    tag = "workflows",
    operation_id = "delete_workflow",
    params(("id" = Uuid, Path, description = "Workflow id")),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn delete(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
) -> ApiResult<StatusCode> {
    who.require(AUTHORS)?;
    workflows::delete(&state.pool, who.workspace_id, id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Exports a version as BPMN 2.0 XML that Camunda Modeler and bpmn.io open:
/// the diagram as imported, new nodes laid out.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/workflows/{id}/bpmn",
    tag = "workflows",
    operation_id = "export_workflow",
    params(("id" = Uuid, Path, description = "Workflow id"), VersionParams),
    responses(
        (status = 200, description = "The document", body = String, content_type = "application/xml"),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn export(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Query(p): Query<VersionParams>,
) -> ApiResult<impl IntoResponse> {
    let xml = workflows::export(&state.pool, who.workspace_id, id, p.get()?).await?;
    Ok((
        [(header::CONTENT_TYPE, "application/xml; charset=utf-8")],
        xml,
    ))
}

/// What validation says of a stored version: `{valid, errors, warnings}`.
///
/// Roles: any token of the workspace.
#[utoipa::path(
    get,
    path = "/v1/workflows/{id}/validation",
    tag = "workflows",
    operation_id = "validate_workflow",
    params(("id" = Uuid, Path, description = "Workflow id"), VersionParams),
    responses(
        (status = 200, description = "What validation says", body = Object),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 404, response = doc::NotFound)
    ),
    security(("api_token" = []))
)]
async fn validation(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Query(p): Query<VersionParams>,
) -> ApiResult<Json<serde_json::Value>> {
    let report = workflows::validate(&state.pool, who.workspace_id, id, p.get()?).await?;
    Ok(Json(json!(report)))
}

/// `POST /v1/workflows/{id}/nodes`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddNode {
    /// The node's id: an XML name, unique in the document.
    #[schema(min_length = 1, max_length = 128)]
    pub id: String,
    /// What it is.
    #[serde(rename = "type")]
    pub node_type: NodeType,
    /// Its label.
    #[schema(max_length = 500)]
    pub name: String,
    /// Documentation.
    #[serde(default)]
    #[schema(max_length = 4000)]
    pub description: Option<String>,
    /// A lane (id or name) to put it in.
    #[serde(default)]
    pub lane: Option<String>,
    /// What the type needs: an ISO 8601 duration, date or cycle for
    /// `timerEvent`; the message name for `messageEvent`, `sendTask` and
    /// `receiveTask`; the signal name for `signalEvent`; the error code for
    /// `errorEvent`; `name = expression` for `scriptTask`; the called process
    /// id for `callActivity`. Other types take none.
    #[serde(default)]
    #[schema(min_length = 1, max_length = 4096)]
    pub definition: Option<String>,
    /// The process to add it to (default: the first executable one).
    #[serde(default)]
    pub process_id: Option<String>,
    /// The latest version you read (409 `version_conflict` if it moved on).
    #[serde(default)]
    #[schema(minimum = 1)]
    pub version: Option<i32>,
}

/// Adds a node (a task, event, gateway, subprocess or call activity).
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    post,
    path = "/v1/workflows/{id}/nodes",
    tag = "workflows",
    operation_id = "add_workflow_node",
    params(("id" = Uuid, Path, description = "Workflow id")),
    request_body = AddNode,
    responses(
        (status = 200, description = "The workflow after the edit", body = WorkflowView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The id is taken (`duplicate_element`) or the workflow moved on (`version_conflict`)", body = doc::ErrorBody),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
async fn add_node(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<AddNode>,
) -> ApiResult<Json<WorkflowView>> {
    who.require(AUTHORS)?;
    let change = Edit::AddNode {
        process: req.process_id,
        id: req.id,
        node_type: req.node_type,
        name: req.name,
        description: req.description,
        lane: req.lane,
        definition: req.definition,
    };
    edit(&state, &who, id, req.version, change).await
}

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
struct EditParams {
    /// The latest version you read (409 `version_conflict` if it moved on).
    #[param(minimum = 1, maximum = 2147483647)]
    version: Option<i32>,
}

/// Removes a node with the flows into and out of it (and its boundary events).
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    delete,
    path = "/v1/workflows/{id}/nodes/{node_id}",
    tag = "workflows",
    operation_id = "remove_workflow_node",
    params(
        ("id" = Uuid, Path, description = "Workflow id"),
        ("node_id" = String, Path, description = "The node's id"),
        EditParams
    ),
    responses(
        (status = 200, description = "The workflow after the edit", body = WorkflowView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The workflow moved on (`version_conflict`)", body = doc::ErrorBody),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
async fn remove_node(
    State(state): State<AppState>,
    who: Principal,
    Path((id, node_id)): Path<(Uuid, String)>,
    Query(p): Query<EditParams>,
) -> ApiResult<Json<WorkflowView>> {
    who.require(AUTHORS)?;
    edit(
        &state,
        &who,
        id,
        p.version,
        Edit::RemoveNode { id: node_id },
    )
    .await
}

/// `POST /v1/workflows/{id}/flows`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Connect {
    /// The flow's id (default: made from source and target).
    #[serde(default)]
    #[schema(min_length = 1, max_length = 128)]
    pub id: Option<String>,
    /// The node it leaves.
    pub source: String,
    /// The node it enters (in the same process or subprocess).
    pub target: String,
    /// A condition in the expression language (`docs/workflows.md`), e.g.
    /// `${amount > 1000}` or `= approved`.
    #[serde(default)]
    pub condition: Option<String>,
    /// Its label.
    #[serde(default)]
    pub name: Option<String>,
    /// The latest version you read (409 `version_conflict` if it moved on).
    #[serde(default)]
    #[schema(minimum = 1)]
    pub version: Option<i32>,
}

/// Connects two nodes with a sequence flow.
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    post,
    path = "/v1/workflows/{id}/flows",
    tag = "workflows",
    operation_id = "connect_workflow_nodes",
    params(("id" = Uuid, Path, description = "Workflow id")),
    request_body = Connect,
    responses(
        (status = 200, description = "The workflow after the edit", body = WorkflowView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The id is taken (`duplicate_element`) or the workflow moved on (`version_conflict`)", body = doc::ErrorBody),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
async fn connect(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<Connect>,
) -> ApiResult<Json<WorkflowView>> {
    who.require(AUTHORS)?;
    let change = Edit::Connect {
        id: req.id,
        source: req.source,
        target: req.target,
        condition: req.condition,
        name: req.name,
    };
    edit(&state, &who, id, req.version, change).await
}

/// `POST /v1/workflows/{id}/lanes`.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddLane {
    /// The lane's id (default: made from its name).
    #[serde(default)]
    #[schema(min_length = 1, max_length = 128)]
    pub id: Option<String>,
    /// The pool (participant) or process to add it to (default: the first executable process).
    #[serde(default)]
    pub pool_id: Option<String>,
    /// Its label.
    #[schema(min_length = 1, max_length = 200)]
    pub name: String,
    /// The organisation role whose agents do its tasks.
    #[schema(min_length = 1, max_length = 128)]
    pub role: String,
    /// The latest version you read (409 `version_conflict` if it moved on).
    #[serde(default)]
    #[schema(minimum = 1)]
    pub version: Option<i32>,
}

/// Adds a lane, mapped to an organisation role: tasks in it go to that role's agents.
///
/// Roles: admin, operator, agent.
#[utoipa::path(
    post,
    path = "/v1/workflows/{id}/lanes",
    tag = "workflows",
    operation_id = "add_workflow_lane",
    params(("id" = Uuid, Path, description = "Workflow id")),
    request_body = AddLane,
    responses(
        (status = 200, description = "The workflow after the edit", body = WorkflowView),
        (status = 400, response = doc::BadRequest),
        (status = 401, response = doc::Unauthorized),
        (status = 403, response = doc::Forbidden),
        (status = 404, response = doc::NotFound),
        (status = 409, description = "The id is taken (`duplicate_element`) or the workflow moved on (`version_conflict`)", body = doc::ErrorBody),
        (status = 422, response = doc::Unprocessable)
    ),
    security(("api_token" = []))
)]
async fn add_lane(
    State(state): State<AppState>,
    who: Principal,
    Path(id): Path<Uuid>,
    Json(req): Json<AddLane>,
) -> ApiResult<Json<WorkflowView>> {
    who.require(AUTHORS)?;
    let change = Edit::AddLane {
        pool: req.pool_id,
        id: req.id,
        name: req.name,
        role: req.role,
    };
    edit(&state, &who, id, req.version, change).await
}

async fn edit(
    state: &AppState,
    who: &Principal,
    id: Uuid,
    version: Option<i32>,
    change: Edit,
) -> ApiResult<Json<WorkflowView>> {
    if version.is_some_and(|v| v < 1) {
        return Err(ApiError::invalid("version", "version must be 1 or more"));
    }
    Ok(Json(
        workflows::apply_edit(&state.pool, who, id, version, change).await?,
    ))
}
