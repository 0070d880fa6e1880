//! SQL of tool-use approvals: one row per request a worker makes before a
//! guarded tool call. Transitions are guarded by the status they leave
//! (`WHERE status = 'pending'`), so two resolvers, or a resolver and the
//! timeout, cannot both win.

use serde_json::Value;
use sqlx::PgConnection;
use time::OffsetDateTime;
use uuid::Uuid;

/// A tool-approval request row.
#[derive(Debug, Clone)]
pub struct ApprovalRow {
    /// Id.
    pub id: Uuid,
    /// Workspace.
    pub workspace_id: Uuid,
    /// Mission.
    pub run_id: Uuid,
    /// Task.
    pub task_id: Uuid,
    /// Attempt that asked.
    pub attempt_id: Uuid,
    /// Agent of the attempt.
    pub agent_id: String,
    /// Tool to be called.
    pub tool: String,
    /// Its arguments, as the worker described them.
    pub arguments: Value,
    /// Paths the call would touch.
    pub paths: Vec<String>,
    /// Size of the diff it would write, in lines.
    pub diff_lines: i64,
    /// Tokens it would use.
    pub tokens: i64,
    /// Files it would change.
    pub files_changed: i64,
    /// The policy's verdict.
    pub verdict: String,
    /// Why.
    pub reasons: Vec<String>,
    /// `pending`, `approved`, `denied` or `timed_out`.
    pub status: String,
    /// What a timeout means: `approved` or `denied`.
    pub timeout_outcome: String,
    /// When a pending request times out.
    pub expires_at: OffsetDateTime,
    /// Who resolved it (`policy`, `timeout` or an actor).
    pub resolver: Option<String>,
    /// Why it was resolved so.
    pub rationale: Option<String>,
    /// When.
    pub resolved_at: Option<OffsetDateTime>,
    /// When it was asked.
    pub created_at: OffsetDateTime,
}

/// The attempt a request names, as the approval use cases need it.
#[derive(Debug, Clone)]
pub struct AttemptFacts {
    /// Workspace.
    pub workspace_id: Uuid,
    /// Mission.
    pub run_id: Uuid,
    /// Task.
    pub task_id: Uuid,
    /// Agent.
    pub agent_id: String,
    /// sha256 of the attempt's token.
    pub token_hash: Vec<u8>,
    /// Attempt status.
    pub status: String,
    /// Seconds since dispatch.
    pub elapsed_secs: i64,
    /// The task's inputs (holding `tool_policy`).
    pub inputs: Value,
}

/// Loads an attempt with its task's inputs.
pub async fn attempt_facts(
    conn: &mut PgConnection,
    attempt_id: Uuid,
) -> sqlx::Result<Option<AttemptFacts>> {
    sqlx::query_as!(
        AttemptFacts,
        r#"SELECT a.workspace_id, a.run_id, a.task_id, a.agent_id, a.token_hash, a.status,
                  floor(extract(epoch FROM now() - a.dispatched_at))::bigint AS "elapsed_secs!",
                  t.inputs
           FROM task_attempts a JOIN orchestration_tasks t ON t.id = a.task_id
           WHERE a.id = $1"#,
        attempt_id
    )
    .fetch_optional(conn)
    .await
}

/// Tokens and files changed by the attempt's requests that were granted or
/// may still be (pending): what its budget has already spent or promised.
pub async fn attempt_usage(conn: &mut PgConnection, attempt_id: Uuid) -> sqlx::Result<(i64, i64)> {
    let r = sqlx::query!(
        r#"SELECT coalesce(sum(tokens), 0)::bigint AS "tokens!",
                  coalesce(sum(files_changed), 0)::bigint AS "files!"
           FROM tool_approval_requests
           WHERE attempt_id = $1
             AND (status IN ('pending', 'approved')
                  OR (status = 'timed_out' AND timeout_outcome = 'approved'))"#,
        attempt_id
    )
    .fetch_one(conn)
    .await?;
    Ok((r.tokens, r.files))
}

/// What [`insert`] writes.
pub struct NewApproval<'a> {
    /// Id.
    pub id: Uuid,
    /// The attempt.
    pub attempt: &'a AttemptFacts,
    /// Attempt id.
    pub attempt_id: Uuid,
    /// Tool.
    pub tool: &'a str,
    /// Arguments.
    pub arguments: &'a Value,
    /// Paths.
    pub paths: &'a [String],
    /// Diff lines.
    pub diff_lines: i64,
    /// Tokens.
    pub tokens: i64,
    /// Files changed.
    pub files_changed: i64,
    /// Verdict.
    pub verdict: &'a str,
    /// Reasons.
    pub reasons: &'a [String],
    /// Initial status.
    pub status: &'a str,
    /// Timeout outcome.
    pub timeout_outcome: &'a str,
    /// Seconds until a pending request times out.
    pub timeout_secs: f64,
    /// `policy` when the verdict settled it at once.
    pub resolver: Option<&'a str>,
    /// The policy's reasons, when it settled it.
    pub rationale: Option<&'a str>,
}

/// Inserts a request; `None` when the id is taken (an idempotent retry, or a clash).
pub async fn insert(
    conn: &mut PgConnection,
    a: NewApproval<'_>,
) -> sqlx::Result<Option<ApprovalRow>> {
    sqlx::query_as!(
        ApprovalRow,
        "INSERT INTO tool_approval_requests (id, workspace_id, run_id, task_id, attempt_id, agent_id,
                tool, arguments, paths, diff_lines, tokens, files_changed, verdict, reasons, status,
                timeout_outcome, expires_at, resolver, rationale, resolved_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
                 now() + make_interval(secs => $17), $18, $19,
                 CASE WHEN $15 = 'pending' THEN NULL ELSE now() END)
         ON CONFLICT (id) DO NOTHING
         RETURNING id, workspace_id, run_id, task_id, attempt_id, agent_id, tool, arguments, paths,
                   diff_lines, tokens, files_changed, verdict, reasons, status, timeout_outcome,
                   expires_at, resolver, rationale, resolved_at, created_at",
        a.id,
        a.attempt.workspace_id,
        a.attempt.run_id,
        a.attempt.task_id,
        a.attempt_id,
        a.attempt.agent_id,
        a.tool,
        a.arguments,
        a.paths,
        a.diff_lines,
        a.tokens,
        a.files_changed,
        a.verdict,
        a.reasons,
        a.status,
        a.timeout_outcome,
        a.timeout_secs,
        a.resolver,
        a.rationale
    )
    .fetch_optional(conn)
    .await
}

/// One request, by id, within a workspace (`None`: any workspace).
pub async fn get(
    conn: &mut PgConnection,
    workspace_id: Option<Uuid>,
    id: Uuid,
) -> sqlx::Result<Option<ApprovalRow>> {
    sqlx::query_as!(
        ApprovalRow,
        "SELECT id, workspace_id, run_id, task_id, attempt_id, agent_id, tool, arguments, paths,
                diff_lines, tokens, files_changed, verdict, reasons, status, timeout_outcome,
                expires_at, resolver, rationale, resolved_at, created_at
         FROM tool_approval_requests WHERE id = $1 AND ($2::uuid IS NULL OR workspace_id = $2)",
        id,
        workspace_id
    )
    .fetch_optional(conn)
    .await
}

/// Requests of a workspace, newest first, optionally of one status.
pub async fn list(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    status: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<ApprovalRow>> {
    sqlx::query_as!(
        ApprovalRow,
        "SELECT id, workspace_id, run_id, task_id, attempt_id, agent_id, tool, arguments, paths,
                diff_lines, tokens, files_changed, verdict, reasons, status, timeout_outcome,
                expires_at, resolver, rationale, resolved_at, created_at
         FROM tool_approval_requests
         WHERE workspace_id = $1 AND ($2::text IS NULL OR status = $2)
         ORDER BY created_at DESC, id
         LIMIT $3",
        workspace_id,
        status,
        limit
    )
    .fetch_all(conn)
    .await
}

/// Resolves a pending request; `None` when it was no longer pending.
pub async fn resolve(
    conn: &mut PgConnection,
    id: Uuid,
    status: &str,
    resolver: &str,
    rationale: &str,
) -> sqlx::Result<Option<ApprovalRow>> {
    sqlx::query_as!(
        ApprovalRow,
        "UPDATE tool_approval_requests
         SET status = $2, resolver = $3, rationale = $4, resolved_at = now()
         WHERE id = $1 AND status = 'pending'
         RETURNING id, workspace_id, run_id, task_id, attempt_id, agent_id, tool, arguments, paths,
                   diff_lines, tokens, files_changed, verdict, reasons, status, timeout_outcome,
                   expires_at, resolver, rationale, resolved_at, created_at",
        id,
        status,
        resolver,
        rationale
    )
    .fetch_optional(conn)
    .await
}

/// Marks overdue pending requests of a workspace (or just request `only`)
/// `timed_out`; returns them, ordered by mission so their events lock
/// missions in one order.
pub async fn expire_overdue(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    only: Option<Uuid>,
    limit: i64,
) -> sqlx::Result<Vec<ApprovalRow>> {
    let mut rows = sqlx::query_as!(
        ApprovalRow,
        "UPDATE tool_approval_requests
         SET status = 'timed_out', resolver = 'timeout', resolved_at = now(),
             rationale = 'no decision before the timeout; the default outcome applies: ' || timeout_outcome
         WHERE id IN (
             SELECT id FROM tool_approval_requests
             WHERE workspace_id = $1 AND status = 'pending' AND expires_at <= now()
               AND ($2::uuid IS NULL OR id = $2)
             ORDER BY expires_at LIMIT $3 FOR UPDATE SKIP LOCKED)
           AND status = 'pending'
         RETURNING id, workspace_id, run_id, task_id, attempt_id, agent_id, tool, arguments, paths,
                   diff_lines, tokens, files_changed, verdict, reasons, status, timeout_outcome,
                   expires_at, resolver, rationale, resolved_at, created_at",
        workspace_id,
        only,
        limit
    )
    .fetch_all(conn)
    .await?;
    rows.sort_by_key(|r| (r.run_id, r.created_at));
    Ok(rows)
}

/// The workspace of each of the (at most `limit`) most overdue pending
/// requests, most overdue first, repeats included (the partial index
/// `tool_approval_requests_expiry` holds only pending rows, so this never
/// reads resolved history).
pub async fn overdue_workspaces(conn: &mut PgConnection, limit: i64) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar!(
        "SELECT workspace_id FROM tool_approval_requests
         WHERE status = 'pending' AND expires_at <= now()
         ORDER BY expires_at
         LIMIT $1",
        limit
    )
    .fetch_all(conn)
    .await
}
