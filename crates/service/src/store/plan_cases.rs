//! SQL of the plan library (`plan_cases`): a finished mission is recorded as a
//! case inside its terminal transition's transaction (see
//! [`super::missions::transition`]); the planner and the search read them back.
//! Every query is scoped to one workspace.

use serde::Serialize;
use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

use super::mission_row::MissionRow;
use crate::planning::{
    PlanSpec,
    cases::{self, Case, TaskRecord},
};

/// A stored case, as the API shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PlanCaseRow {
    /// Case id.
    pub id: Uuid,
    /// The mission it was learned from.
    pub mission_id: Uuid,
    /// The mission's goal.
    pub goal: String,
    /// `{constraints, budget?, autonomy}` of the mission.
    pub context: Value,
    /// The plan (a `PlanSpec`).
    pub plan: Value,
    /// Structure signature of the plan (task types and typed edges).
    pub structure: String,
    /// Which planner made the plan.
    pub planner: Option<String>,
    /// The method (or `case:<id>`) it came from.
    pub template: Option<String>,
    /// Completed (true) or failed (false: a negative case).
    pub success: bool,
    /// `{status, tasks_total, tasks_succeeded, tasks_failed, tasks_skipped, estimated_cost, total_cost, duration_secs, failure_reason, plan_version}`.
    pub outcome: Value,
    /// What the mission teaches.
    pub lessons: Vec<String>,
    /// When it was recorded (the mission's end).
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl PlanCaseRow {
    /// The fields choosing and scoring need.
    pub fn to_case(&self) -> Case {
        Case {
            id: self.id,
            goal: self.goal.clone(),
            context: self.context.clone(),
            plan: self.plan.clone(),
            structure: self.structure.clone(),
            success: self.success,
            created_at: self.created_at,
        }
    }
}

/// Records a mission that just became `completed` (`success`) or `failed` as
/// a case; returns its id. Nothing is recorded for a mission that never got a
/// plan (it failed while planning): there is no solution to learn from.
pub async fn record(
    conn: &mut PgConnection,
    run: &MissionRow,
    success: bool,
) -> sqlx::Result<Option<Uuid>> {
    let Some(plan) = sqlx::query!(
        r#"SELECT spec, planner, provenance->>'template' AS template
           FROM orchestration_plans WHERE run_id = $1 AND workspace_id = $2 AND plan_version = $3"#,
        run.id,
        run.workspace_id,
        run.plan_version
    )
    .fetch_optional(&mut *conn)
    .await?
    else {
        return Ok(None);
    };
    let tasks: Vec<TaskRecord> = sqlx::query!(
        r#"SELECT t.task_key, t.status, t.estimated_cost, t.actual_cost,
                  -- A task that succeeded in the end may have cleared its
                  -- error: the last failed attempt still says what went wrong.
                  COALESCE(t.last_error,
                           (SELECT a.error FROM task_attempts a
                            WHERE a.task_id = t.id AND a.status IN ('failed', 'expired')
                            ORDER BY a.attempt_number DESC LIMIT 1)) AS last_error,
                  (SELECT count(*) FROM task_attempts a
                   WHERE a.task_id = t.id AND a.purpose = 'work' AND a.status <> 'cancelled') AS "attempts!",
                  (SELECT count(*) FROM task_attempts a
                   WHERE a.task_id = t.id AND a.purpose = 'work' AND a.status IN ('failed', 'expired')) AS "failures!"
           FROM orchestration_tasks t
           WHERE t.run_id = $1 AND t.workspace_id = $2
           ORDER BY t.task_order"#,
        run.id,
        run.workspace_id
    )
    .fetch_all(&mut *conn)
    .await?
    .into_iter()
    .map(|r| TaskRecord {
        key: r.task_key,
        status: r.status,
        attempts: r.attempts,
        failures: r.failures,
        last_error: r.last_error,
        estimated_cost: r.estimated_cost,
        actual_cost: r.actual_cost,
    })
    .collect();
    // A stored plan that no longer parses (an older wire format) still
    // records the outcome, with an empty signature nothing will match.
    let structure = serde_json::from_value::<PlanSpec>(plan.spec.clone())
        .map(|p| cases::structure_signature(&p))
        .unwrap_or_default();
    let count = |status: &str| tasks.iter().filter(|t| t.status == status).count();
    let duration = match (run.started_at, run.finished_at) {
        (Some(start), Some(end)) => Some((end - start).as_seconds_f64().max(0.0)),
        _ => None,
    };
    let outcome = json!({
        "status": run.status,
        "tasks_total": tasks.len(),
        "tasks_succeeded": count("succeeded"),
        "tasks_failed": count("failed"),
        "tasks_skipped": count("skipped"),
        "estimated_cost": tasks.iter().map(|t| t.estimated_cost).sum::<f64>(),
        "total_cost": run.budget_spent,
        "duration_secs": duration,
        "failure_reason": run.failure_reason,
        "plan_version": run.plan_version,
    });
    let lessons = cases::lessons_from(
        &tasks,
        if success {
            None
        } else {
            run.failure_reason.as_deref()
        },
    );
    let context = cases::context_of(&run.constraints, run.budget_limit, Some(&run.autonomy));
    let id = Uuid::now_v7();
    let inserted = sqlx::query_scalar!(
        "INSERT INTO plan_cases
           (id, workspace_id, run_id, goal, context, plan, structure, planner, template, success, outcome, lessons)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
         ON CONFLICT (run_id) DO NOTHING
         RETURNING id",
        id,
        run.workspace_id,
        run.id,
        run.goal,
        context,
        plan.spec,
        structure,
        Some(plan.planner),
        plan.template,
        success,
        outcome,
        &lessons
    )
    .fetch_optional(&mut *conn)
    .await?;
    Ok(inserted)
}

/// The workspace's most recent cases for choosing, newest first, without
/// their plans (`plan` is null: only a reused case's plan is read, by [`get`]).
pub async fn candidates(pool: &PgPool, workspace_id: Uuid, limit: i64) -> sqlx::Result<Vec<Case>> {
    let rows = sqlx::query!(
        "SELECT id, goal, context, structure, success, created_at
         FROM plan_cases
         WHERE workspace_id = $1
         ORDER BY created_at DESC, id DESC
         LIMIT $2",
        workspace_id,
        limit
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| Case {
            id: r.id,
            goal: r.goal,
            context: r.context,
            plan: Value::Null,
            structure: r.structure,
            success: r.success,
            created_at: r.created_at,
        })
        .collect())
}

/// The workspace's most recent cases, newest first; `success` filters by outcome.
pub async fn recent(
    pool: &PgPool,
    workspace_id: Uuid,
    success: Option<bool>,
    limit: i64,
) -> sqlx::Result<Vec<PlanCaseRow>> {
    sqlx::query_as!(
        PlanCaseRow,
        "SELECT id, run_id AS mission_id, goal, context, plan, structure, planner, template, success,
                outcome, lessons, created_at
         FROM plan_cases
         WHERE workspace_id = $1 AND ($2::boolean IS NULL OR success = $2)
         ORDER BY created_at DESC, id DESC
         LIMIT $3",
        workspace_id,
        success,
        limit
    )
    .fetch_all(pool)
    .await
}

/// One case of the workspace.
pub async fn get(pool: &PgPool, workspace_id: Uuid, id: Uuid) -> sqlx::Result<Option<PlanCaseRow>> {
    sqlx::query_as!(
        PlanCaseRow,
        "SELECT id, run_id AS mission_id, goal, context, plan, structure, planner, template, success,
                outcome, lessons, created_at
         FROM plan_cases WHERE id = $1 AND workspace_id = $2",
        id,
        workspace_id
    )
    .fetch_optional(pool)
    .await
}
