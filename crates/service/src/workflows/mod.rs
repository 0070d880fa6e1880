//! Workflow use cases: import BPMN 2.0 XML, create an empty workflow,
//! inspect, validate, edit (add or remove a node, connect, add a lane),
//! export and delete. The REST routes and the agent tools (seed 000 §20,
//! tools 18–26) both call these, so they accept and refuse the same things.
//!
//! Versions: every import of a new document is a new version; an edit
//! rewrites the latest version unless it is frozen (an instance started from
//! it), in which case the edit makes the next version.

pub mod delivery;
pub mod instances;
pub mod message_flows;
pub mod pump;
pub mod timer_starts;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

use coordinator_bpmn::{
    Definitions,
    edit::{self, Edit, EditError},
    validate::{self, Report},
};
use coordinator_core::{invalid::Invalid, text::Text};

use crate::{
    auth::{Principal, Role},
    store::{
        workflow_timer_starts::TimerStartRow,
        workflows::{self as store, NewWorkflow, VersionRow, WorkflowRow},
    },
};

/// Who authors, starts and steers workflows: people who run missions, and
/// agents (seed 000 §20 gives agents the workflow tools). REST and tools
/// check the same list.
pub const AUTHORS: &[Role] = &[Role::Admin, Role::Operator, Role::Agent];

/// Who answers a task waiting for a person.
pub const ANSWERERS: &[Role] = &[Role::Admin, Role::Operator, Role::Stakeholder, Role::Agent];

/// Largest document an import takes (the API's body limit may be lower).
pub const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;

/// A workflow's name.
pub const NAME: Text = Text::required(200).without_control().trimmed();
/// A workflow's description.
pub const DESCRIPTION: Text = Text::optional(4000);
/// A venture id.
pub const BUSINESS_ID: Text = Text::required(128).without_control().trimmed();

/// Why a workflow use case refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum WorkflowError {
    /// A request field is wrong.
    #[error(transparent)]
    Invalid(#[from] Invalid),
    /// The body is not a BPMN 2.0 document.
    #[error("{0}")]
    Import(#[from] coordinator_bpmn::ImportError),
    /// An edit the model refuses.
    #[error(transparent)]
    Edit(#[from] EditError),
    /// No such workflow (or version, or instance) in the workspace.
    #[error("{0}")]
    NotFound(String),
    /// The version has validation errors: it cannot run (the report).
    #[error("the workflow has validation errors; fix them before running it")]
    NotRunnable(Value),
    /// The instance cannot take the command in its state, or cannot start.
    #[error("{0}")]
    Refused(String),
    /// The workflow has instances: deleting it would pull their model away.
    #[error("{0}")]
    InUse(String),
    /// Running the instance failed in a way no request caused.
    #[error("{0}")]
    Run(String),
    /// The stored model no longer reads (a code change; never user input).
    #[error("stored workflow model does not read: {0}")]
    Stored(#[from] serde_json::Error),
    /// The database failed.
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// What `POST /v1/workflows` (and `workflow_create`) takes.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWorkflow {
    /// Display name (1–200 characters).
    pub name: String,
    /// What it is for (up to 4,000 characters).
    #[serde(default)]
    pub description: Option<String>,
    /// The venture it belongs to.
    #[serde(default)]
    pub business_id: Option<String>,
}

/// A workflow with one of its versions.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WorkflowView {
    /// The workflow.
    #[serde(flatten)]
    pub workflow: WorkflowRow,
    /// The version shown.
    pub version: i32,
    /// An instance started from this version: an edit makes a new one.
    pub frozen: bool,
    /// The version was imported from a document (kept as it arrived).
    pub imported: bool,
    /// The semantic model: processes with their nodes, flows and lanes,
    /// collaborations, messages, signals and errors.
    #[schema(value_type = Object)]
    pub model: Value,
    /// What validation says of this version.
    #[schema(value_type = Object)]
    pub validation: Value,
    /// When the workflow's timer start events next start an instance (of
    /// the latest version).
    pub timer_starts: Vec<TimerStartRow>,
}

/// A page of workflows.
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct WorkflowList {
    /// Newest first.
    pub workflows: Vec<WorkflowRow>,
    /// Pass as `cursor` for the next page; absent on the last.
    pub next_cursor: Option<Uuid>,
}

/// Creates an empty workflow: one executable process, no nodes yet.
pub async fn create(
    pool: &PgPool,
    who: &Principal,
    req: CreateWorkflow,
) -> Result<WorkflowView, WorkflowError> {
    NAME.check("name", &req.name)?;
    if let Some(d) = &req.description {
        DESCRIPTION.check("description", d)?;
    }
    if let Some(b) = &req.business_id {
        BUSINESS_ID.check("business_id", b)?;
    }
    let id = Uuid::now_v7();
    let defs = coordinator_bpmn::empty(&format!("Process_{}", id.simple()), &req.name);
    store_new(
        pool,
        who,
        id,
        &req.name,
        req.description.as_deref().unwrap_or(""),
        req.business_id.as_deref(),
        &defs,
        None,
    )
    .await
}

/// Imports a BPMN 2.0 document as a new workflow, named `name` or else
/// after the document (its first named process, or its definitions).
pub async fn import(
    pool: &PgPool,
    who: &Principal,
    name: Option<&str>,
    xml: &[u8],
) -> Result<WorkflowView, WorkflowError> {
    if let Some(n) = name {
        NAME.check("name", n)?;
    }
    let defs = read(xml)?;
    let name = name
        .map(str::to_owned)
        .unwrap_or_else(|| default_name(&defs));
    let source = String::from_utf8_lossy(xml);
    store_new(
        pool,
        who,
        Uuid::now_v7(),
        &name,
        "",
        None,
        &defs,
        Some(&source),
    )
    .await
}

/// Imports a document as the next version of an existing workflow.
pub async fn import_version(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
    xml: &[u8],
) -> Result<WorkflowView, WorkflowError> {
    let defs = read(xml)?;
    let model = serde_json::to_value(&defs)?;
    let mut tx = pool.begin().await?;
    store::lock(&mut tx, who.workspace_id, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    let source = String::from_utf8_lossy(xml);
    let version = store::add_version(&mut tx, id, &model, Some(&source), &who.actor()).await?;
    timer_starts::schedule(&mut tx, who.workspace_id, id, version, &defs, now()).await?;
    tx.commit().await?;
    show(pool, who.workspace_id, id, Some(version)).await
}

/// The workflow with its latest version, or the version asked for.
pub async fn show(
    pool: &PgPool,
    workspace_id: Uuid,
    id: Uuid,
    version: Option<i32>,
) -> Result<WorkflowView, WorkflowError> {
    let (workflow, row, defs) = load(pool, workspace_id, id, version).await?;
    let mut conn = pool.acquire().await?;
    let timer_starts = crate::store::workflow_timer_starts::of_workflow(&mut conn, id).await?;
    Ok(view(workflow, &row, &defs, timer_starts)?)
}

/// The version's model, exported as BPMN 2.0 XML.
pub async fn export(
    pool: &PgPool,
    workspace_id: Uuid,
    id: Uuid,
    version: Option<i32>,
) -> Result<String, WorkflowError> {
    let (_, _, defs) = load(pool, workspace_id, id, version).await?;
    Ok(coordinator_bpmn::export(&defs))
}

/// What validation says of a stored version.
pub async fn validate(
    pool: &PgPool,
    workspace_id: Uuid,
    id: Uuid,
    version: Option<i32>,
) -> Result<Report, WorkflowError> {
    let (_, _, defs) = load(pool, workspace_id, id, version).await?;
    Ok(validate::validate(&defs))
}

/// What validation says of a document, storing nothing.
pub fn validate_document(xml: &[u8]) -> Result<Report, WorkflowError> {
    Ok(validate::validate(&read(xml)?))
}

/// Applies one edit to the latest version (or, when that is frozen, to a
/// new version made from it). `expected_version`, when given, must be the
/// latest version (409 otherwise), so two authors cannot overwrite each other.
pub async fn apply_edit(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
    expected_version: Option<i32>,
    change: Edit,
) -> Result<WorkflowView, WorkflowError> {
    let mut tx = pool.begin().await?;
    let workflow = store::lock(&mut tx, who.workspace_id, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    if let Some(expected) = expected_version
        && expected != workflow.latest_version
    {
        return Err(EditError::Stale {
            expected,
            latest: workflow.latest_version,
        }
        .into());
    }
    let row = store::version(&mut tx, id, workflow.latest_version)
        .await?
        .ok_or_else(|| not_found(id))?;
    let mut defs: Definitions = serde_json::from_value(row.model)?;
    edit::apply(&mut defs, change)?;
    let model = serde_json::to_value(&defs)?;
    let version = if row.frozen || !store::replace_model(&mut tx, id, row.version, &model).await? {
        store::add_version(&mut tx, id, &model, None, &who.actor()).await?
    } else {
        row.version
    };
    timer_starts::schedule(&mut tx, who.workspace_id, id, version, &defs, now()).await?;
    tx.commit().await?;
    show(pool, who.workspace_id, id, Some(version)).await
}

/// A page of the workspace's workflows.
pub async fn list(
    pool: &PgPool,
    workspace_id: Uuid,
    cursor: Option<Uuid>,
    limit: i64,
) -> Result<WorkflowList, WorkflowError> {
    let mut conn = pool.acquire().await?;
    let rows = store::list(
        &mut conn,
        workspace_id,
        cursor,
        coordinator_core::paging::probe(limit),
    )
    .await?;
    let (workflows, next_cursor) = coordinator_core::paging::split(rows, limit, |r| r.id);
    Ok(WorkflowList {
        workflows,
        next_cursor,
    })
}

/// Deletes a workflow with every version; refused while it has instances.
pub async fn delete(pool: &PgPool, workspace_id: Uuid, id: Uuid) -> Result<(), WorkflowError> {
    let mut conn = pool.acquire().await?;
    if store::get(&mut conn, workspace_id, id).await?.is_some()
        && crate::store::workflow_instances::any_for_workflow(&mut conn, id).await?
    {
        return Err(WorkflowError::InUse(format!(
            "workflow {id} has instances; it cannot be deleted while they keep its versions"
        )));
    }
    if store::delete(&mut conn, workspace_id, id).await? {
        Ok(())
    } else {
        Err(not_found(id))
    }
}

fn read(xml: &[u8]) -> Result<Definitions, WorkflowError> {
    if xml.len() > MAX_DOCUMENT_BYTES {
        return Err(Invalid::new(
            "body",
            format!(
                "the document is {} bytes; the most an import takes is {MAX_DOCUMENT_BYTES}",
                xml.len()
            ),
        )
        .into());
    }
    Ok(coordinator_bpmn::import(xml)?)
}

/// The first named process, else the definitions' name, else its id.
fn default_name(defs: &Definitions) -> String {
    let name = defs
        .processes
        .iter()
        .filter_map(|p| p.name.as_deref())
        .chain(defs.name.as_deref())
        .map(coordinator_bpmn::one_line)
        .find(|n| !n.is_empty())
        .or_else(|| defs.id.clone())
        .unwrap_or_else(|| "Imported workflow".to_owned());
    name.chars().take(NAME.max).collect()
}

#[allow(clippy::too_many_arguments)]
async fn store_new(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
    name: &str,
    description: &str,
    business_id: Option<&str>,
    defs: &Definitions,
    source_xml: Option<&str>,
) -> Result<WorkflowView, WorkflowError> {
    let model = serde_json::to_value(defs)?;
    let mut tx = pool.begin().await?;
    let actor = who.actor();
    store::insert(
        &mut tx,
        who.workspace_id,
        &NewWorkflow {
            id,
            name,
            description,
            business_id,
            model: &model,
            source_xml,
            created_by: &actor,
        },
    )
    .await?;
    timer_starts::schedule(&mut tx, who.workspace_id, id, 1, defs, now()).await?;
    tx.commit().await?;
    show(pool, who.workspace_id, id, None).await
}

fn now() -> time::OffsetDateTime {
    time::OffsetDateTime::now_utc()
}

async fn load(
    pool: &PgPool,
    workspace_id: Uuid,
    id: Uuid,
    version: Option<i32>,
) -> Result<(WorkflowRow, VersionRow, Definitions), WorkflowError> {
    let mut conn = pool.acquire().await?;
    let workflow = store::get(&mut conn, workspace_id, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    let wanted = version.unwrap_or(workflow.latest_version);
    let row = store::version(&mut conn, id, wanted)
        .await?
        .ok_or_else(|| {
            WorkflowError::NotFound(format!(
                "workflow {id} has no version {wanted} (latest: {})",
                workflow.latest_version
            ))
        })?;
    let defs: Definitions = serde_json::from_value(row.model.clone())?;
    Ok((workflow, row, defs))
}

fn view(
    workflow: WorkflowRow,
    row: &VersionRow,
    defs: &Definitions,
    timer_starts: Vec<TimerStartRow>,
) -> Result<WorkflowView, serde_json::Error> {
    Ok(WorkflowView {
        version: row.version,
        frozen: row.frozen,
        imported: row.source_xml.is_some(),
        model: row.model.clone(),
        validation: serde_json::to_value(validate::validate(defs))?,
        timer_starts,
        workflow,
    })
}

fn not_found(id: Uuid) -> WorkflowError {
    WorkflowError::NotFound(format!("no workflow {id}"))
}
