//! SQL of running workflows: instance rows (the runner's state under a row
//! lock and a version), the projection of where their tokens wait (timers,
//! messages, signals, agent work), and the outbox of thrown messages and
//! signals.
//!
//! Lock order: one instance row at a time, except a parent before its
//! called child (cancelling a call). The pump takes rows with SKIP LOCKED,
//! so replicas never wait on each other's instances.

use serde::Serialize;
use serde_json::Value;
use sqlx::PgConnection;
use time::OffsetDateTime;
use uuid::Uuid;

/// An instance row.
#[derive(Debug, Clone)]
pub struct InstanceRow {
    /// Its id.
    pub id: Uuid,
    /// Its workspace.
    pub workspace_id: Uuid,
    /// The workflow.
    pub workflow_id: Uuid,
    /// The version it runs.
    pub version: i32,
    /// The process it runs.
    pub process_id: String,
    /// `running`, `completed`, `terminated` or `failed`.
    pub status: String,
    /// The runner's state.
    pub state: Value,
    /// The work handed out: token id → `{mission_id}` or `{human: {...}}`.
    pub work: Value,
    /// The caller's key for it.
    pub business_key: Option<String>,
    /// The calling instance, for a called process.
    pub parent_id: Option<Uuid>,
    /// The caller's waiting token.
    pub parent_token: Option<i64>,
    /// Optimistic version.
    pub row_version: i64,
    /// Who started it.
    pub created_by: String,
    /// The token that started it.
    pub created_token: Option<Uuid>,
    /// When.
    pub created_at: OffsetDateTime,
    /// Last change.
    pub updated_at: OffsetDateTime,
    /// When it ended.
    pub finished_at: Option<OffsetDateTime>,
}

/// A new instance.
#[derive(Debug)]
pub struct NewInstance<'a> {
    /// Its id (UUIDv7).
    pub id: Uuid,
    /// The workflow.
    pub workflow_id: Uuid,
    /// The version.
    pub version: i32,
    /// The process.
    pub process_id: &'a str,
    /// The status the first command left.
    pub status: &'a str,
    /// The runner's state.
    pub state: &'a Value,
    /// The work handed out.
    pub work: &'a Value,
    /// The caller's key.
    pub business_key: Option<&'a str>,
    /// The calling instance and its token.
    pub parent: Option<(Uuid, i64)>,
    /// Who starts it.
    pub created_by: &'a str,
    /// The token that starts it.
    pub created_token: Option<Uuid>,
}

/// Where one token waits.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TokenRow {
    /// The token.
    pub token: i64,
    /// Its node.
    pub node_id: String,
    /// What it waits for (`work`, `timer`, `message`, `signal`, `called`, `incident`, ...).
    pub wait: String,
    /// A timer's due time.
    #[serde(with = "time::serde::rfc3339::option")]
    pub due_at: Option<OffsetDateTime>,
    /// The message it waits for.
    pub message_name: Option<String>,
    /// The correlation key that message must carry.
    pub correlation: Option<String>,
    /// The signal it waits for.
    pub signal_name: Option<String>,
    /// The mission doing its agent task.
    pub mission_id: Option<Uuid>,
}

const COLUMNS: &str = "id, workspace_id, workflow_id, version, process_id, status, state, work, \
     business_key, parent_id, parent_token, row_version, created_by, created_token, created_at, \
     updated_at, finished_at";

/// Stores a new instance.
pub async fn insert(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    new: &NewInstance<'_>,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO workflow_instances (id, workspace_id, workflow_id, version, process_id,
             status, state, work, business_key, parent_id, parent_token, created_by,
             created_token, finished_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13,
                 CASE WHEN $6 = 'running' THEN NULL ELSE now() END)",
        new.id,
        workspace_id,
        new.workflow_id,
        new.version,
        new.process_id,
        new.status,
        new.state,
        new.work,
        new.business_key,
        new.parent.map(|p| p.0),
        new.parent.map(|p| p.1),
        new.created_by,
        new.created_token
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The instance, if it is in the workspace.
pub async fn get(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
) -> sqlx::Result<Option<InstanceRow>> {
    sqlx::query_as::<_, InstanceRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM workflow_instances WHERE id = $1 AND workspace_id = $2"
    )))
    .bind(id)
    .bind(workspace_id)
    .fetch_optional(conn)
    .await
}

/// [`get`], holding the row until the transaction ends (any workspace when
/// `workspace_id` is `None`: the pump's own work). With `skip_locked`, a
/// row another transaction holds reads as none.
pub async fn lock(
    conn: &mut PgConnection,
    workspace_id: Option<Uuid>,
    id: Uuid,
    skip_locked: bool,
) -> sqlx::Result<Option<InstanceRow>> {
    let skip = if skip_locked { " SKIP LOCKED" } else { "" };
    sqlx::query_as::<_, InstanceRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM workflow_instances
         WHERE id = $1 AND ($2::uuid IS NULL OR workspace_id = $2)
         FOR NO KEY UPDATE{skip}"
    )))
    .bind(id)
    .bind(workspace_id)
    .fetch_optional(conn)
    .await
}

/// Writes a locked instance's new state.
pub async fn save(
    conn: &mut PgConnection,
    id: Uuid,
    status: &str,
    state: &Value,
    work: &Value,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE workflow_instances
         SET status = $2, state = $3, work = $4, row_version = row_version + 1,
             updated_at = now(),
             finished_at = CASE WHEN $2 = 'running' THEN NULL ELSE COALESCE(finished_at, now()) END
         WHERE id = $1",
        id,
        status,
        state,
        work
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Replaces the projection of where the instance's tokens wait.
pub async fn replace_tokens(
    conn: &mut PgConnection,
    instance_id: Uuid,
    workspace_id: Uuid,
    tokens: &[TokenRow],
) -> sqlx::Result<()> {
    sqlx::query!(
        "DELETE FROM workflow_tokens WHERE instance_id = $1",
        instance_id
    )
    .execute(&mut *conn)
    .await?;
    if tokens.is_empty() {
        return Ok(());
    }
    let col = |f: fn(&TokenRow) -> Option<String>| tokens.iter().map(f).collect::<Vec<_>>();
    sqlx::query!(
        "INSERT INTO workflow_tokens (instance_id, workspace_id, token, node_id, wait, due_at,
             message_name, correlation, signal_name, mission_id)
         SELECT $1, $2, * FROM UNNEST($3::bigint[], $4::text[], $5::text[], $6::timestamptz[],
             $7::text[], $8::text[], $9::text[], $10::uuid[])",
        instance_id,
        workspace_id,
        &tokens.iter().map(|t| t.token).collect::<Vec<_>>(),
        &tokens.iter().map(|t| t.node_id.clone()).collect::<Vec<_>>(),
        &tokens.iter().map(|t| t.wait.clone()).collect::<Vec<_>>(),
        &tokens.iter().map(|t| t.due_at).collect::<Vec<_>>() as &[Option<OffsetDateTime>],
        &col(|t| t.message_name.clone()) as &[Option<String>],
        &col(|t| t.correlation.clone()) as &[Option<String>],
        &col(|t| t.signal_name.clone()) as &[Option<String>],
        &tokens.iter().map(|t| t.mission_id).collect::<Vec<_>>() as &[Option<Uuid>]
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Where the instance's tokens wait, in token order.
pub async fn tokens(conn: &mut PgConnection, instance_id: Uuid) -> sqlx::Result<Vec<TokenRow>> {
    sqlx::query_as!(
        TokenRow,
        "SELECT token, node_id, wait, due_at, message_name, correlation, signal_name, mission_id
         FROM workflow_tokens WHERE instance_id = $1 ORDER BY token",
        instance_id
    )
    .fetch_all(conn)
    .await
}

/// A page of a workflow's instances (all workflows with `None`), newest first.
pub async fn list(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    workflow_id: Option<Uuid>,
    before: Option<Uuid>,
    limit: i64,
) -> sqlx::Result<Vec<InstanceRow>> {
    sqlx::query_as::<_, InstanceRow>(sqlx::AssertSqlSafe(format!(
        "SELECT {COLUMNS} FROM workflow_instances
         WHERE workspace_id = $1 AND ($2::uuid IS NULL OR workflow_id = $2)
           AND ($3::uuid IS NULL OR id < $3)
         ORDER BY id DESC LIMIT $4"
    )))
    .bind(workspace_id)
    .bind(workflow_id)
    .bind(before)
    .bind(limit)
    .fetch_all(conn)
    .await
}

/// Whether the workflow has any instance (it then cannot be deleted).
pub async fn any_for_workflow(conn: &mut PgConnection, workflow_id: Uuid) -> sqlx::Result<bool> {
    let n = sqlx::query_scalar!(
        "SELECT count(*) AS \"n!\" FROM (SELECT 1 FROM workflow_instances
         WHERE workflow_id = $1 LIMIT 1) x",
        workflow_id
    )
    .fetch_one(conn)
    .await?;
    Ok(n > 0)
}

/// Timers due at `now`: (workspace, instance, token), oldest first.
pub async fn due_timers(
    conn: &mut PgConnection,
    now: OffsetDateTime,
    limit: i64,
) -> sqlx::Result<Vec<(Uuid, Uuid, i64)>> {
    let rows = sqlx::query!(
        "SELECT workspace_id, instance_id, token FROM workflow_tokens
         WHERE due_at IS NOT NULL AND due_at <= $1 ORDER BY due_at LIMIT $2",
        now,
        limit
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.workspace_id, r.instance_id, r.token))
        .collect())
}

/// Agent work whose mission ended: (instance, token, mission status, the
/// mission's failure reason, its task's output).
#[derive(Debug, Clone)]
pub struct FinishedWork {
    /// The workspace.
    pub workspace_id: Uuid,
    /// The instance.
    pub instance_id: Uuid,
    /// The token waiting for it.
    pub token: i64,
    /// `completed`, `failed` or `cancelled`.
    pub status: String,
    /// Why it failed.
    pub failure_reason: Option<String>,
    /// The task's output.
    pub output: Option<Value>,
}

/// Work tokens whose missions ended.
pub async fn finished_work(conn: &mut PgConnection, limit: i64) -> sqlx::Result<Vec<FinishedWork>> {
    sqlx::query_as!(
        FinishedWork,
        "SELECT w.workspace_id, w.instance_id, w.token, r.status, r.failure_reason,
                (SELECT t.output FROM orchestration_tasks t WHERE t.run_id = r.id
                 ORDER BY t.task_order LIMIT 1) AS output
         FROM workflow_tokens w JOIN orchestration_runs r ON r.id = w.mission_id
         WHERE w.mission_id IS NOT NULL AND r.status IN ('completed', 'failed', 'cancelled')
         LIMIT $1",
        limit
    )
    .fetch_all(conn)
    .await
}

/// Whether any token waits for an agent task's mission.
pub async fn agent_work_out(conn: &mut PgConnection) -> sqlx::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM workflow_tokens WHERE mission_id IS NOT NULL) AS "out!""#
    )
    .fetch_one(conn)
    .await
}

/// Called instances that ended while their caller still waits: (workspace,
/// parent, parent token, child status, child state).
pub async fn finished_children(
    conn: &mut PgConnection,
    limit: i64,
) -> sqlx::Result<Vec<(Uuid, Uuid, i64, String, Value)>> {
    let rows = sqlx::query!(
        "SELECT c.workspace_id, c.parent_id AS \"parent_id!\",
                c.parent_token AS \"parent_token!\", c.status, c.state
         FROM workflow_tokens w
         JOIN workflow_instances c ON c.parent_id = w.instance_id AND c.parent_token = w.token
         WHERE w.wait = 'called' AND c.status <> 'running'
         LIMIT $1",
        limit
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            (
                r.workspace_id,
                r.parent_id,
                r.parent_token,
                r.status,
                r.state,
            )
        })
        .collect())
}

/// The running child an instance's token called, if any.
pub async fn child_of(
    conn: &mut PgConnection,
    parent_id: Uuid,
    token: i64,
) -> sqlx::Result<Option<Uuid>> {
    sqlx::query_scalar!(
        "SELECT id FROM workflow_instances
         WHERE parent_id = $1 AND parent_token = $2 AND status = 'running'",
        parent_id,
        token
    )
    .fetch_optional(conn)
    .await
}

/// The task of a workflow task's mission and the agent it went to: what a
/// send task's message is sent from.
pub async fn mission_task_agent(
    conn: &mut PgConnection,
    mission_id: Uuid,
) -> sqlx::Result<Option<(Uuid, Option<String>)>> {
    let row = sqlx::query!(
        "SELECT id, assigned_agent_id FROM orchestration_tasks
         WHERE run_id = $1 ORDER BY task_order LIMIT 1",
        mission_id
    )
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|r| (r.id, r.assigned_agent_id)))
}

/// Instances of the workspace with a token waiting for message `name`
/// (with its correlation key), oldest first.
pub async fn message_waiters(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    name: &str,
) -> sqlx::Result<Vec<(Uuid, Option<String>)>> {
    let rows = sqlx::query!(
        "SELECT instance_id, correlation FROM workflow_tokens
         WHERE workspace_id = $1 AND message_name = $2 ORDER BY instance_id, token",
        workspace_id,
        name
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.instance_id, r.correlation))
        .collect())
}

/// Instances of the workspace with a token waiting for signal `name`.
pub async fn signal_waiters(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    name: &str,
) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar!(
        "SELECT DISTINCT instance_id FROM workflow_tokens
         WHERE workspace_id = $1 AND signal_name = $2 ORDER BY instance_id",
        workspace_id,
        name
    )
    .fetch_all(conn)
    .await
}

/// One thrown message or signal waiting to be delivered.
#[derive(Debug, Clone)]
pub struct OutboxRow {
    /// Its id.
    pub id: i64,
    /// The workspace.
    pub workspace_id: Uuid,
    /// `message` or `signal`.
    pub kind: String,
    /// The message or signal name.
    pub name: String,
    /// A message's correlation key.
    pub correlation: Option<String>,
    /// Its content.
    pub payload: Value,
    /// The instance that threw it.
    pub from_instance: Option<Uuid>,
}

/// Queues a thrown message (with its correlation key) or signal.
#[allow(clippy::too_many_arguments)]
pub async fn push_outbox(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    kind: &str,
    name: &str,
    correlation: Option<&str>,
    payload: &Value,
    from_instance: Uuid,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO workflow_outbox (workspace_id, kind, name, correlation, payload, from_instance)
         VALUES ($1, $2, $3, $4, $5, $6)",
        workspace_id,
        kind,
        name,
        correlation,
        payload,
        from_instance
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Takes the oldest queued item no other transaction holds; delete it by
/// committing (the row is deleted here).
pub async fn take_outbox(conn: &mut PgConnection) -> sqlx::Result<Option<OutboxRow>> {
    sqlx::query_as!(
        OutboxRow,
        "DELETE FROM workflow_outbox WHERE id = (
             SELECT id FROM workflow_outbox ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED)
         RETURNING id, workspace_id, kind, name, correlation, payload, from_instance"
    )
    .fetch_optional(conn)
    .await
}

impl<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow> for InstanceRow {
    fn from_row(row: &'r sqlx::postgres::PgRow) -> sqlx::Result<Self> {
        use sqlx::Row;
        Ok(InstanceRow {
            id: row.try_get("id")?,
            workspace_id: row.try_get("workspace_id")?,
            workflow_id: row.try_get("workflow_id")?,
            version: row.try_get("version")?,
            process_id: row.try_get("process_id")?,
            status: row.try_get("status")?,
            state: row.try_get("state")?,
            work: row.try_get("work")?,
            business_key: row.try_get("business_key")?,
            parent_id: row.try_get("parent_id")?,
            parent_token: row.try_get("parent_token")?,
            row_version: row.try_get("row_version")?,
            created_by: row.try_get("created_by")?,
            created_token: row.try_get("created_token")?,
            created_at: row.try_get("created_at")?,
            updated_at: row.try_get("updated_at")?,
            finished_at: row.try_get("finished_at")?,
        })
    }
}
