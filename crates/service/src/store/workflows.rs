//! SQL of BPMN workflows: a workflow row per named line of versions, and
//! its versions (the semantic model as JSON, the imported document when
//! there was one). Versions only grow; a frozen version (an instance started
//! from it) is never rewritten.

use serde::Serialize;
use serde_json::Value;
use sqlx::PgConnection;
use time::OffsetDateTime;
use uuid::Uuid;

/// A workflow, without its model.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct WorkflowRow {
    /// Workflow id.
    pub id: Uuid,
    /// Display name.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// The venture it belongs to, if any.
    pub business_id: Option<String>,
    /// The newest version.
    pub latest_version: i32,
    /// Who created it.
    pub created_by: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Last new or changed version.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// One version of a workflow.
#[derive(Debug, Clone)]
pub struct VersionRow {
    /// Its number, from 1.
    pub version: i32,
    /// The semantic model (`coordinator_bpmn::Definitions` as JSON).
    pub model: Value,
    /// The document it was imported from, if it was.
    pub source_xml: Option<String>,
    /// An instance started from it: edits make a new version.
    pub frozen: bool,
    /// Who made it.
    pub created_by: String,
    /// When.
    pub created_at: OffsetDateTime,
}

/// What a new workflow is made of.
#[derive(Debug)]
pub struct NewWorkflow<'a> {
    /// Workflow id (UUIDv7).
    pub id: Uuid,
    /// Display name.
    pub name: &'a str,
    /// What it is for.
    pub description: &'a str,
    /// The venture, if any.
    pub business_id: Option<&'a str>,
    /// Version 1's model.
    pub model: &'a Value,
    /// Version 1's document, when imported.
    pub source_xml: Option<&'a str>,
    /// Who creates it.
    pub created_by: &'a str,
}

/// Stores a workflow and its version 1.
pub async fn insert(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    new: &NewWorkflow<'_>,
) -> sqlx::Result<WorkflowRow> {
    let row = sqlx::query_as!(
        WorkflowRow,
        "INSERT INTO workflows (id, workspace_id, name, description, business_id, created_by)
         VALUES ($1, $2, $3, $4, $5, $6)
         RETURNING id, name, description, business_id, latest_version, created_by,
                   created_at, updated_at",
        new.id,
        workspace_id,
        new.name,
        new.description,
        new.business_id,
        new.created_by
    )
    .fetch_one(&mut *conn)
    .await?;
    sqlx::query!(
        "INSERT INTO workflow_versions (workflow_id, version, model, source_xml, created_by)
         VALUES ($1, 1, $2, $3, $4)",
        new.id,
        new.model,
        new.source_xml,
        new.created_by
    )
    .execute(conn)
    .await?;
    Ok(row)
}

/// The workflow, if it is in the workspace.
pub async fn get(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
) -> sqlx::Result<Option<WorkflowRow>> {
    sqlx::query_as!(
        WorkflowRow,
        "SELECT id, name, description, business_id, latest_version, created_by,
                created_at, updated_at
         FROM workflows WHERE id = $1 AND workspace_id = $2",
        id,
        workspace_id
    )
    .fetch_optional(conn)
    .await
}

/// [`get`], holding the row until the transaction ends: edits and new
/// versions of one workflow apply one at a time.
pub async fn lock(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
) -> sqlx::Result<Option<WorkflowRow>> {
    sqlx::query_as!(
        WorkflowRow,
        "SELECT id, name, description, business_id, latest_version, created_by,
                created_at, updated_at
         FROM workflows WHERE id = $1 AND workspace_id = $2
         FOR NO KEY UPDATE",
        id,
        workspace_id
    )
    .fetch_optional(conn)
    .await
}

/// The workflow, locked against edits (`FOR SHARE`) but not against other
/// starts: an instance of a version freezes it by existing, so a start
/// writes nothing shared, and an edit (which takes the row `FOR NO KEY
/// UPDATE`) waits for starts in flight and then sees their instances.
pub async fn lock_shared(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
) -> sqlx::Result<Option<WorkflowRow>> {
    sqlx::query_as!(
        WorkflowRow,
        "SELECT id, name, description, business_id, latest_version, created_by,
                created_at, updated_at
         FROM workflows WHERE id = $1 AND workspace_id = $2
         FOR SHARE",
        id,
        workspace_id
    )
    .fetch_optional(conn)
    .await
}

/// One version of a workflow (the caller has checked the workspace).
pub async fn version(
    conn: &mut PgConnection,
    workflow_id: Uuid,
    version: i32,
) -> sqlx::Result<Option<VersionRow>> {
    sqlx::query_as!(
        VersionRow,
        r#"SELECT v.version, v.model, v.source_xml,
                  (v.frozen OR EXISTS (SELECT 1 FROM workflow_instances i
                                       WHERE i.workflow_id = v.workflow_id
                                         AND i.version = v.version)) AS "frozen!",
                  v.created_by, v.created_at
           FROM workflow_versions v WHERE v.workflow_id = $1 AND v.version = $2"#,
        workflow_id,
        version
    )
    .fetch_optional(conn)
    .await
}

/// Adds the next version to a locked workflow; returns its number.
pub async fn add_version(
    conn: &mut PgConnection,
    workflow_id: Uuid,
    model: &Value,
    source_xml: Option<&str>,
    created_by: &str,
) -> sqlx::Result<i32> {
    let version = sqlx::query_scalar!(
        "UPDATE workflows SET latest_version = latest_version + 1, updated_at = now()
         WHERE id = $1 RETURNING latest_version",
        workflow_id
    )
    .fetch_one(&mut *conn)
    .await?;
    sqlx::query!(
        "INSERT INTO workflow_versions (workflow_id, version, model, source_xml, created_by)
         VALUES ($1, $2, $3, $4, $5)",
        workflow_id,
        version,
        model,
        source_xml,
        created_by
    )
    .execute(conn)
    .await?;
    Ok(version)
}

/// Rewrites an unfrozen version's model (an edit of a locked workflow's
/// latest version); false when the version is frozen after all: marked so,
/// or an instance runs it (starts hold the workflow's row `FOR SHARE` until
/// they commit, and the edit's lock waits for them, so none slips past).
pub async fn replace_model(
    conn: &mut PgConnection,
    workflow_id: Uuid,
    version: i32,
    model: &Value,
) -> sqlx::Result<bool> {
    let changed = sqlx::query!(
        "UPDATE workflow_versions v SET model = $3, source_xml = NULL
         WHERE v.workflow_id = $1 AND v.version = $2 AND NOT v.frozen
           AND NOT EXISTS (SELECT 1 FROM workflow_instances i
                           WHERE i.workflow_id = v.workflow_id AND i.version = v.version)",
        workflow_id,
        version,
        model
    )
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if changed == 1 {
        sqlx::query!(
            "UPDATE workflows SET updated_at = now() WHERE id = $1",
            workflow_id
        )
        .execute(conn)
        .await?;
    }
    Ok(changed == 1)
}

/// A page of the workspace's workflows, newest first, after `before`.
pub async fn list(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    before: Option<Uuid>,
    limit: i64,
) -> sqlx::Result<Vec<WorkflowRow>> {
    sqlx::query_as!(
        WorkflowRow,
        "SELECT id, name, description, business_id, latest_version, created_by,
                created_at, updated_at
         FROM workflows
         WHERE workspace_id = $1 AND ($2::uuid IS NULL OR id < $2)
         ORDER BY id DESC
         LIMIT $3",
        workspace_id,
        before,
        limit
    )
    .fetch_all(conn)
    .await
}

/// Deletes the workflow and every version; false when there was none.
pub async fn delete(conn: &mut PgConnection, workspace_id: Uuid, id: Uuid) -> sqlx::Result<bool> {
    let gone = sqlx::query!(
        "DELETE FROM workflows WHERE id = $1 AND workspace_id = $2",
        id,
        workspace_id
    )
    .execute(conn)
    .await?
    .rows_affected();
    Ok(gone == 1)
}

/// The newest workflow of the workspace whose latest version has a process
/// `process_id`: (workflow, version, model). A call activity's target.
pub async fn find_process(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    process_id: &str,
) -> sqlx::Result<Option<(Uuid, i32, Value)>> {
    let row = sqlx::query!(
        "SELECT w.id, v.version, v.model
         FROM workflows w
         JOIN workflow_versions v ON v.workflow_id = w.id AND v.version = w.latest_version
         WHERE w.workspace_id = $1
           AND v.model->'processes' @> jsonb_build_array(jsonb_build_object('id', $2::text))
         ORDER BY w.id DESC
         LIMIT 1",
        workspace_id,
        process_id
    )
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|r| (r.id, r.version, r.model)))
}

/// The workspace's workflows whose latest version declares a message named
/// `name`, newest first (at most 20): (workflow, model).
pub async fn with_message(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    name: &str,
) -> sqlx::Result<Vec<(Uuid, Value)>> {
    let rows = sqlx::query!(
        "SELECT w.id, v.model
         FROM workflows w
         JOIN workflow_versions v ON v.workflow_id = w.id AND v.version = w.latest_version
         WHERE w.workspace_id = $1
           AND v.model->'messages' @> jsonb_build_array(jsonb_build_object('name', $2::text))
         ORDER BY w.id DESC
         LIMIT 20",
        workspace_id,
        name
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.id, r.model)).collect())
}
