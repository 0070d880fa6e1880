//! SQL of governance: stakeholder profiles, the decision queue, and the
//! task writes of the governance gate.

use std::collections::BTreeMap;

use serde_json::Value;
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

use coordinator_core::governance::TaskFacts;

use crate::store::tasks::TaskRow;

/// A stakeholder profile row.
#[derive(Debug, Clone)]
pub struct ProfileRow {
    /// Workspace.
    pub workspace_id: Uuid,
    /// The stakeholder.
    pub stakeholder_id: String,
    /// `hands-on`, `strategic-only` or `exception-based`.
    pub decision_style: String,
    /// `conservative`, `moderate` or `aggressive`.
    pub risk_tolerance: String,
    /// Budget threshold (before the modifier).
    pub budget_threshold: Option<f64>,
    /// Its currency.
    pub budget_currency: String,
    /// Hiring threshold (before the modifier).
    pub hiring_threshold: Option<i32>,
    /// `always` or `never`.
    pub strategy_rule: String,
    /// Auto-approved categories.
    pub auto_approve_categories: Vec<String>,
    /// Free-form.
    pub communication_preferences: Value,
    /// Last changed by.
    pub updated_by: String,
    /// Write guard.
    pub version: i64,
    /// Last changed.
    pub updated_at: OffsetDateTime,
}

/// The workspace's profile.
pub async fn profile(
    conn: &mut PgConnection,
    workspace_id: Uuid,
) -> sqlx::Result<Option<ProfileRow>> {
    sqlx::query_as!(
        ProfileRow,
        "SELECT workspace_id, stakeholder_id, decision_style, risk_tolerance, budget_threshold,
                budget_currency, hiring_threshold, strategy_rule, auto_approve_categories,
                communication_preferences, updated_by, version, updated_at
         FROM stakeholder_profiles WHERE workspace_id = $1",
        workspace_id
    )
    .fetch_optional(conn)
    .await
}

/// The workspace's profile, locked for an update.
pub async fn lock_profile(
    conn: &mut PgConnection,
    workspace_id: Uuid,
) -> sqlx::Result<Option<ProfileRow>> {
    sqlx::query_as!(
        ProfileRow,
        "SELECT workspace_id, stakeholder_id, decision_style, risk_tolerance, budget_threshold,
                budget_currency, hiring_threshold, strategy_rule, auto_approve_categories,
                communication_preferences, updated_by, version, updated_at
         FROM stakeholder_profiles WHERE workspace_id = $1 FOR UPDATE",
        workspace_id
    )
    .fetch_optional(conn)
    .await
}

/// Profiles of several workspaces (for a claim batch).
pub async fn profiles_for(
    conn: &mut PgConnection,
    workspace_ids: &[Uuid],
) -> sqlx::Result<BTreeMap<Uuid, ProfileRow>> {
    let rows = sqlx::query_as!(
        ProfileRow,
        "SELECT workspace_id, stakeholder_id, decision_style, risk_tolerance, budget_threshold,
                budget_currency, hiring_threshold, strategy_rule, auto_approve_categories,
                communication_preferences, updated_by, version, updated_at
         FROM stakeholder_profiles WHERE workspace_id = ANY($1)",
        workspace_ids
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.workspace_id, r)).collect())
}

/// What [`upsert_profile`] writes.
pub struct NewProfile<'a> {
    /// Workspace.
    pub workspace_id: Uuid,
    /// Stakeholder.
    pub stakeholder_id: &'a str,
    /// Style.
    pub decision_style: &'a str,
    /// Risk tolerance.
    pub risk_tolerance: &'a str,
    /// Budget threshold.
    pub budget_threshold: Option<f64>,
    /// Currency.
    pub budget_currency: &'a str,
    /// Hiring threshold.
    pub hiring_threshold: Option<i32>,
    /// Strategy rule.
    pub strategy_rule: &'a str,
    /// Auto-approved categories.
    pub auto_approve_categories: &'a [String],
    /// Preferences.
    pub communication_preferences: &'a Value,
    /// Who writes it.
    pub updated_by: &'a str,
}

/// Creates or replaces the profile (bumping its version).
pub async fn upsert_profile(
    conn: &mut PgConnection,
    p: NewProfile<'_>,
) -> sqlx::Result<ProfileRow> {
    sqlx::query_as!(
        ProfileRow,
        "INSERT INTO stakeholder_profiles (workspace_id, stakeholder_id, decision_style, risk_tolerance,
                budget_threshold, budget_currency, hiring_threshold, strategy_rule,
                auto_approve_categories, communication_preferences, updated_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         ON CONFLICT (workspace_id) DO UPDATE SET
             stakeholder_id = EXCLUDED.stakeholder_id, decision_style = EXCLUDED.decision_style,
             risk_tolerance = EXCLUDED.risk_tolerance, budget_threshold = EXCLUDED.budget_threshold,
             budget_currency = EXCLUDED.budget_currency, hiring_threshold = EXCLUDED.hiring_threshold,
             strategy_rule = EXCLUDED.strategy_rule,
             auto_approve_categories = EXCLUDED.auto_approve_categories,
             communication_preferences = EXCLUDED.communication_preferences,
             updated_by = EXCLUDED.updated_by,
             version = stakeholder_profiles.version + 1, updated_at = now()
         RETURNING workspace_id, stakeholder_id, decision_style, risk_tolerance, budget_threshold,
                   budget_currency, hiring_threshold, strategy_rule, auto_approve_categories,
                   communication_preferences, updated_by, version, updated_at",
        p.workspace_id,
        p.stakeholder_id,
        p.decision_style,
        p.risk_tolerance,
        p.budget_threshold,
        p.budget_currency,
        p.hiring_threshold,
        p.strategy_rule,
        p.auto_approve_categories,
        p.communication_preferences,
        p.updated_by
    )
    .fetch_one(conn)
    .await
}

/// A decision row.
#[derive(Debug, Clone)]
pub struct DecisionRow {
    /// Id.
    pub id: Uuid,
    /// Workspace.
    pub workspace_id: Uuid,
    /// Requester (actor).
    pub requester: String,
    /// Requesting agent.
    pub requester_agent_id: Option<String>,
    /// Mission.
    pub mission_id: Option<Uuid>,
    /// Task.
    pub task_id: Option<Uuid>,
    /// Category.
    pub category: String,
    /// What is decided.
    pub description: String,
    /// Impact notes.
    pub impact_analysis: Value,
    /// Options.
    pub options: Value,
    /// Recommended option.
    pub recommended_option: Option<String>,
    /// Cost at stake.
    pub estimated_cost: Option<f64>,
    /// Headcount at stake.
    pub headcount: Option<i32>,
    /// Check snapshot.
    pub governance_check: Value,
    /// Status.
    pub status: String,
    /// Resolver.
    pub resolver: Option<String>,
    /// Rationale.
    pub rationale: Option<String>,
    /// Conditions.
    pub conditions: Value,
    /// Modifications.
    pub modifications: Value,
    /// Resolved at.
    pub resolved_at: Option<OffsetDateTime>,
    /// Re-check due.
    pub recheck_at: Option<OffsetDateTime>,
    /// Re-checks so far.
    pub recheck_count: i32,
    /// Write guard.
    pub version: i64,
    /// Created.
    pub created_at: OffsetDateTime,
    /// `governance` (the gate, an agent's request) or `blocker` (an agent blocked inside its task).
    pub topic: String,
    /// The option label the resolver chose.
    pub chosen_option: Option<String>,
}

/// What [`insert_decision`] writes.
pub struct NewDecision<'a> {
    /// Id.
    pub id: Uuid,
    /// Workspace.
    pub workspace_id: Uuid,
    /// Requester (actor).
    pub requester: &'a str,
    /// Requesting agent.
    pub requester_agent_id: Option<&'a str>,
    /// Mission.
    pub mission_id: Option<Uuid>,
    /// Task.
    pub task_id: Option<Uuid>,
    /// Category.
    pub category: &'a str,
    /// What is decided.
    pub description: &'a str,
    /// Impact notes.
    pub impact_analysis: &'a Value,
    /// Options.
    pub options: &'a Value,
    /// Recommended option.
    pub recommended_option: Option<&'a str>,
    /// Cost at stake.
    pub estimated_cost: Option<f64>,
    /// Headcount at stake.
    pub headcount: Option<i32>,
    /// Check snapshot.
    pub governance_check: &'a Value,
    /// `governance` or `blocker`.
    pub topic: &'a str,
}

/// Inserts a decision; `None` when the task already has an open one.
pub async fn insert_decision(
    conn: &mut PgConnection,
    d: NewDecision<'_>,
) -> sqlx::Result<Option<DecisionRow>> {
    sqlx::query_as!(
        DecisionRow,
        "INSERT INTO governance_decisions (id, workspace_id, requester, requester_agent_id, mission_id,
                task_id, category, description, impact_analysis, options, recommended_option,
                estimated_cost, headcount, governance_check, topic)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
         ON CONFLICT (task_id) WHERE task_id IS NOT NULL AND status IN ('pending', 'deferred') DO NOTHING
         RETURNING id, workspace_id, requester, requester_agent_id, mission_id, task_id, category,
                   description, impact_analysis, options, recommended_option, estimated_cost,
                   headcount, governance_check, status, resolver, rationale, conditions,
                   modifications, resolved_at, recheck_at, recheck_count, version, created_at,
                   topic, chosen_option",
        d.id,
        d.workspace_id,
        d.requester,
        d.requester_agent_id,
        d.mission_id,
        d.task_id,
        d.category,
        d.description,
        d.impact_analysis,
        d.options,
        d.recommended_option,
        d.estimated_cost,
        d.headcount,
        d.governance_check,
        d.topic
    )
    .fetch_optional(conn)
    .await
}

/// One decision.
pub async fn get_decision(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
) -> sqlx::Result<Option<DecisionRow>> {
    sqlx::query_as!(
        DecisionRow,
        "SELECT id, workspace_id, requester, requester_agent_id, mission_id, task_id, category,
                description, impact_analysis, options, recommended_option, estimated_cost,
                headcount, governance_check, status, resolver, rationale, conditions,
                modifications, resolved_at, recheck_at, recheck_count, version, created_at,
                   topic, chosen_option
         FROM governance_decisions WHERE workspace_id = $1 AND id = $2",
        workspace_id,
        id
    )
    .fetch_optional(conn)
    .await
}

/// The mission of a decision: `None` if no such decision, `Some(None)` if it has none.
pub async fn decision_mission(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
) -> sqlx::Result<Option<Option<Uuid>>> {
    sqlx::query_scalar!(
        "SELECT mission_id FROM governance_decisions WHERE workspace_id = $1 AND id = $2",
        workspace_id,
        id
    )
    .fetch_optional(conn)
    .await
}

/// One decision, locked.
pub async fn lock_decision(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
) -> sqlx::Result<Option<DecisionRow>> {
    sqlx::query_as!(
        DecisionRow,
        "SELECT id, workspace_id, requester, requester_agent_id, mission_id, task_id, category,
                description, impact_analysis, options, recommended_option, estimated_cost,
                headcount, governance_check, status, resolver, rationale, conditions,
                modifications, resolved_at, recheck_at, recheck_count, version, created_at,
                   topic, chosen_option
         FROM governance_decisions WHERE workspace_id = $1 AND id = $2 FOR UPDATE",
        workspace_id,
        id
    )
    .fetch_optional(conn)
    .await
}

/// Decisions of a workspace, newest first.
pub async fn list_decisions(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    status: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<DecisionRow>> {
    sqlx::query_as!(
        DecisionRow,
        "SELECT id, workspace_id, requester, requester_agent_id, mission_id, task_id, category,
                description, impact_analysis, options, recommended_option, estimated_cost,
                headcount, governance_check, status, resolver, rationale, conditions,
                modifications, resolved_at, recheck_at, recheck_count, version, created_at,
                   topic, chosen_option
         FROM governance_decisions
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

/// How many decisions of the workspace have each status.
pub async fn decision_totals(
    conn: &mut PgConnection,
    workspace_id: Uuid,
) -> sqlx::Result<Vec<(String, i64)>> {
    let rows = sqlx::query!(
        r#"SELECT status, count(*) AS "n!" FROM governance_decisions
           WHERE workspace_id = $1 GROUP BY status"#,
        workspace_id
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|r| (r.status, r.n)).collect())
}

/// What [`resolve_decision`] writes.
pub struct Resolve<'a> {
    /// Workspace.
    pub workspace_id: Uuid,
    /// Decision.
    pub id: Uuid,
    /// The version read.
    pub version: i64,
    /// New status.
    pub status: &'a str,
    /// Resolver.
    pub resolver: &'a str,
    /// Rationale.
    pub rationale: Option<&'a str>,
    /// Conditions.
    pub conditions: &'a Value,
    /// Modifications.
    pub modifications: &'a Value,
    /// Re-check due (deferred).
    pub recheck_at: Option<OffsetDateTime>,
    /// The option label chosen (approved or modified).
    pub chosen_option: Option<&'a str>,
}

/// Writes a resolution, guarded by version; `None` if the row moved.
pub async fn resolve_decision(
    conn: &mut PgConnection,
    r: Resolve<'_>,
) -> sqlx::Result<Option<DecisionRow>> {
    sqlx::query_as!(
        DecisionRow,
        "UPDATE governance_decisions
         SET status = $4, resolver = $5, rationale = $6, conditions = $7, modifications = $8,
             recheck_at = $9, chosen_option = $10, resolved_at = now(), version = version + 1,
             updated_at = now()
         WHERE workspace_id = $1 AND id = $2 AND version = $3
         RETURNING id, workspace_id, requester, requester_agent_id, mission_id, task_id, category,
                   description, impact_analysis, options, recommended_option, estimated_cost,
                   headcount, governance_check, status, resolver, rationale, conditions,
                   modifications, resolved_at, recheck_at, recheck_count, version, created_at,
                   topic, chosen_option",
        r.workspace_id,
        r.id,
        r.version,
        r.status,
        r.resolver,
        r.rationale,
        r.conditions,
        r.modifications,
        r.recheck_at,
        r.chosen_option
    )
    .fetch_optional(conn)
    .await
}

/// Deferred decisions whose re-check is due, across workspaces (engine sweep).
pub async fn due_rechecks(
    pool: &PgPool,
    limit: i64,
) -> sqlx::Result<Vec<(Uuid, Uuid, Option<Uuid>)>> {
    let rows = sqlx::query!(
        "SELECT workspace_id, id, mission_id FROM governance_decisions
         WHERE status = 'deferred' AND recheck_at <= now()
         ORDER BY recheck_at LIMIT $1",
        limit
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.workspace_id, r.id, r.mission_id))
        .collect())
}

/// A due deferred decision, locked; `None` if another replica has it or it moved.
pub async fn lock_due_decision(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
) -> sqlx::Result<Option<DecisionRow>> {
    sqlx::query_as!(
        DecisionRow,
        "SELECT id, workspace_id, requester, requester_agent_id, mission_id, task_id, category,
                description, impact_analysis, options, recommended_option, estimated_cost,
                headcount, governance_check, status, resolver, rationale, conditions,
                modifications, resolved_at, recheck_at, recheck_count, version, created_at,
                   topic, chosen_option
         FROM governance_decisions
         WHERE workspace_id = $1 AND id = $2 AND status = 'deferred' AND recheck_at <= now()
         FOR UPDATE SKIP LOCKED",
        workspace_id,
        id
    )
    .fetch_optional(conn)
    .await
}

/// A re-checked decision goes back to review with the fresh check.
pub async fn reopen_decision(
    conn: &mut PgConnection,
    d: &DecisionRow,
    status: &str,
    check: &Value,
) -> sqlx::Result<Option<DecisionRow>> {
    sqlx::query_as!(
        DecisionRow,
        "UPDATE governance_decisions
         SET status = $4, governance_check = $5, recheck_at = NULL, recheck_count = recheck_count + 1,
             version = version + 1, updated_at = now()
         WHERE workspace_id = $1 AND id = $2 AND version = $3
         RETURNING id, workspace_id, requester, requester_agent_id, mission_id, task_id, category,
                   description, impact_analysis, options, recommended_option, estimated_cost,
                   headcount, governance_check, status, resolver, rationale, conditions,
                   modifications, resolved_at, recheck_at, recheck_count, version, created_at,
                   topic, chosen_option",
        d.workspace_id,
        d.id,
        d.version,
        status,
        check
    )
    .fetch_optional(conn)
    .await
}

/// Governance and allocation facts of ready tasks (for a claim batch).
pub async fn task_facts(
    conn: &mut PgConnection,
    task_ids: &[Uuid],
) -> sqlx::Result<BTreeMap<Uuid, TaskFacts>> {
    let rows = sqlx::query!(
        r#"SELECT t.id, COALESCE(t.action_category, t.inputs->>'action_category') AS action_category,
                  CASE WHEN jsonb_typeof(t.inputs->'headcount') = 'number'
                       THEN trunc((t.inputs->>'headcount')::numeric)::bigint END AS headcount,
                  COALESCE(t.inputs->'exceptional' = 'true'::jsonb, false) AS "exceptional!",
                  t.approved_by_decision,
                  COALESCE(t.allocation, r.allocation) AS "allocation!", r.tender_window_ms
           FROM orchestration_tasks t JOIN orchestration_runs r ON r.id = t.run_id
           WHERE t.id = ANY($1)"#,
        task_ids
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            (
                r.id,
                TaskFacts {
                    action_category: r.action_category,
                    headcount: r.headcount,
                    exceptional: r.exceptional,
                    approved_by_decision: r.approved_by_decision,
                    allocation: r.allocation,
                    tender_window_ms: r.tender_window_ms,
                },
            )
        })
        .collect())
}

/// Moves a ready task to `awaiting_approval` and out of the queue (version guarded).
pub async fn hold_task(conn: &mut PgConnection, t: &TaskRow) -> sqlx::Result<bool> {
    let r = sqlx::query!(
        "UPDATE orchestration_tasks SET status = 'awaiting_approval', version = version + 1, updated_at = now()
         WHERE id = $1 AND workspace_id = $2 AND version = $3",
        t.id,
        t.workspace_id,
        t.version
    )
    .execute(&mut *conn)
    .await?;
    if r.rows_affected() != 1 {
        return Ok(false);
    }
    sqlx::query!("DELETE FROM task_queue WHERE task_id = $1", t.id)
        .execute(conn)
        .await?;
    Ok(true)
}

/// Lets an approved task go: back to `queued`, marked cleared, with the
/// modifications merged into its inputs and the decision under
/// `inputs.governance` (version guarded).
pub async fn release_task(
    conn: &mut PgConnection,
    t: &TaskRow,
    decision_id: Uuid,
    modifications: &Value,
    governance: &Value,
) -> sqlx::Result<bool> {
    let r = sqlx::query!(
        "UPDATE orchestration_tasks
         SET status = 'queued', approved_by_decision = $4,
             inputs = CASE WHEN jsonb_typeof(inputs) = 'object' THEN inputs ELSE '{}'::jsonb END
                      || $5::jsonb || jsonb_build_object('governance', $6::jsonb),
             version = version + 1, updated_at = now()
         WHERE id = $1 AND workspace_id = $2 AND version = $3 AND status = 'awaiting_approval'",
        t.id,
        t.workspace_id,
        t.version,
        decision_id,
        modifications,
        governance
    )
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}

/// Skips a rejected task (version guarded).
pub async fn skip_task(conn: &mut PgConnection, t: &TaskRow, reason: &str) -> sqlx::Result<bool> {
    let r = sqlx::query!(
        "UPDATE orchestration_tasks
         SET status = 'skipped', last_error = $4, finished_at = now(), version = version + 1, updated_at = now()
         WHERE id = $1 AND workspace_id = $2 AND version = $3 AND status = 'awaiting_approval'",
        t.id,
        t.workspace_id,
        t.version,
        reason
    )
    .execute(conn)
    .await?;
    Ok(r.rows_affected() == 1)
}
