//! Missions (`orchestration_runs`) and their stored plans.
//!
//! A mission's row lock (`lock`) is what serializes every transition that
//! touches the mission: task completions, promotions, claims and cancels.
//! It is `FOR NO KEY UPDATE`: the foreign-key checks of rows inserted for
//! the mission elsewhere (`FOR KEY SHARE`) do not wait for it, and no
//! transition changes a mission's id.
//! Lock order everywhere: missions (by id), then agents (by id).

use serde_json::Value;
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

use super::events::{self, NewEvent, payloads};
pub use super::mission_row::MissionRow;
use crate::{
    domain::{Autonomy, IllegalTransition, MissionEvent, MissionStatus},
    planning::{PlanProvenance, ValidatedPlan},
};

/// A mission to insert.
pub struct NewMission<'a> {
    /// Id (uuid v7: time-ordered, so it doubles as the list cursor).
    pub id: Uuid,
    /// Workspace.
    pub workspace_id: Uuid,
    /// Goal.
    pub goal: &'a str,
    /// Autonomy.
    pub autonomy: Autonomy,
    /// Priority.
    pub priority: i32,
    /// Budget.
    pub budget_limit: Option<f64>,
    /// Constraints object.
    pub constraints: &'a Value,
    /// Creator's token id.
    pub created_by: Uuid,
}

/// Inserts a mission in `planning` and writes `mission.created`.
pub async fn insert(conn: &mut PgConnection, m: NewMission<'_>, actor: &str) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO orchestration_runs
           (id, workspace_id, goal, autonomy, status, priority, budget_limit, constraints, created_by)
         VALUES ($1, $2, $3, $4, 'planning', $5, $6, $7, $8)",
        m.id,
        m.workspace_id,
        m.goal,
        m.autonomy.as_str(),
        m.priority,
        m.budget_limit,
        m.constraints,
        m.created_by
    )
    .execute(&mut *conn)
    .await?;
    events::append(
        conn,
        m.workspace_id,
        NewEvent::new(
            m.id,
            None,
            None,
            actor,
            &payloads::MissionCreated {
                goal: m.goal.to_owned(),
                autonomy: m.autonomy,
                priority: m.priority,
                budget: m.budget_limit,
            },
        ),
    )
    .await?;
    Ok(())
}

/// Locks a mission's row (`FOR NO KEY UPDATE`) for the rest of the
/// transaction and returns it.
pub async fn lock(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
) -> sqlx::Result<Option<MissionRow>> {
    sqlx::query_as!(
        MissionRow,
        "SELECT id, workspace_id, goal, autonomy, status, priority, plan_version, budget_limit,
                budget_spent, constraints, planner, failure_reason, version, created_at, updated_at,
                started_at, finished_at, escalation_replans, budget_warned,
                title, deadline, labels, archived_at
         FROM orchestration_runs WHERE id = $1 AND workspace_id = $2 FOR NO KEY UPDATE",
        id,
        workspace_id
    )
    .fetch_optional(conn)
    .await
}

/// Locks the mission of an attempt (for report handling) and returns it.
pub async fn lock_for_attempt(
    conn: &mut PgConnection,
    attempt_id: Uuid,
) -> sqlx::Result<Option<MissionRow>> {
    sqlx::query_as!(
        MissionRow,
        "SELECT id, workspace_id, goal, autonomy, status, priority, plan_version, budget_limit,
                budget_spent, constraints, planner, failure_reason, version, created_at, updated_at,
                started_at, finished_at, escalation_replans, budget_warned,
                title, deadline, labels, archived_at
         FROM orchestration_runs
         WHERE id = (SELECT run_id FROM task_attempts WHERE id = $1)
         FOR NO KEY UPDATE",
        attempt_id
    )
    .fetch_optional(conn)
    .await
}

/// Locks the missions of `attempt_ids` in id order (the global lock
/// order), for a batch of reports. Unknown attempts are left out.
pub async fn lock_for_attempts(
    conn: &mut PgConnection,
    attempt_ids: &[Uuid],
) -> sqlx::Result<Vec<MissionRow>> {
    sqlx::query_as!(
        MissionRow,
        "SELECT id, workspace_id, goal, autonomy, status, priority, plan_version, budget_limit,
                budget_spent, constraints, planner, failure_reason, version, created_at, updated_at,
                started_at, finished_at, escalation_replans, budget_warned,
                title, deadline, labels, archived_at
         FROM orchestration_runs
         WHERE id IN (SELECT run_id FROM task_attempts WHERE id = ANY($1))
         ORDER BY id
         FOR NO KEY UPDATE",
        attempt_ids
    )
    .fetch_all(conn)
    .await
}

/// Reads a mission without locking it.
pub async fn get(pool: &PgPool, workspace_id: Uuid, id: Uuid) -> sqlx::Result<Option<MissionRow>> {
    sqlx::query_as!(
        MissionRow,
        "SELECT id, workspace_id, goal, autonomy, status, priority, plan_version, budget_limit,
                budget_spent, constraints, planner, failure_reason, version, created_at, updated_at,
                started_at, finished_at, escalation_replans, budget_warned,
                title, deadline, labels, archived_at
         FROM orchestration_runs WHERE id = $1 AND workspace_id = $2",
        id,
        workspace_id
    )
    .fetch_optional(pool)
    .await
}

/// A page of missions, newest first, optionally by status, after a cursor
/// id; archived missions only with `archived`.
pub async fn list(
    pool: &PgPool,
    workspace_id: Uuid,
    status: Option<MissionStatus>,
    before: Option<Uuid>,
    limit: i64,
    archived: bool,
) -> sqlx::Result<Vec<MissionRow>> {
    sqlx::query_as!(
        MissionRow,
        "SELECT id, workspace_id, goal, autonomy, status, priority, plan_version, budget_limit,
                budget_spent, constraints, planner, failure_reason, version, created_at, updated_at,
                started_at, finished_at, escalation_replans, budget_warned,
                title, deadline, labels, archived_at
         FROM orchestration_runs
         WHERE workspace_id = $1 AND ($2::text IS NULL OR status = $2)
           AND ($3::uuid IS NULL OR id < $3)
           AND ($5 OR archived_at IS NULL)
         ORDER BY id DESC
         LIMIT $4",
        workspace_id,
        status.map(|s| s.as_str()),
        before,
        limit,
        archived
    )
    .fetch_all(pool)
    .await
}

/// Clears what a mission's failure left on its row (reason, end time) once
/// a person continued it. The caller holds the mission lock.
pub async fn clear_failure(conn: &mut PgConnection, run: &mut MissionRow) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE orchestration_runs SET failure_reason = NULL, finished_at = NULL WHERE id = $1",
        run.id
    )
    .execute(conn)
    .await?;
    run.failure_reason = None;
    run.finished_at = None;
    Ok(())
}

/// Why a mission transition did not happen.
#[derive(Debug, thiserror::Error)]
pub enum TransitionError {
    /// The lifecycle does not allow it.
    #[error(transparent)]
    Illegal(#[from] IllegalTransition),
    /// Someone else changed the mission first (version guard).
    #[error("the mission changed concurrently")]
    Lost,
    /// The database failed.
    #[error(transparent)]
    Db(#[from] sqlx::Error),
}

/// Applies a lifecycle event to a locked mission: a version-guarded write
/// plus its event. Updates `run` in place.
pub async fn transition(
    conn: &mut PgConnection,
    run: &mut MissionRow,
    event: MissionEvent,
    actor: &str,
    reason: Option<&str>,
) -> Result<MissionStatus, TransitionError> {
    let from = run.status();
    let to = from.next(event)?;
    let updated = sqlx::query!(
        r#"UPDATE orchestration_runs
           SET status = $3, version = version + 1, updated_at = now(),
               started_at = CASE WHEN $3 = 'executing' THEN COALESCE(started_at, now()) ELSE started_at END,
               finished_at = CASE WHEN $4 THEN now() ELSE finished_at END,
               failure_reason = COALESCE($5, failure_reason)
           WHERE id = $1 AND version = $2
           RETURNING version, started_at, finished_at"#,
        run.id,
        run.version,
        to.as_str(),
        to.is_terminal(),
        if to == MissionStatus::Failed { reason } else { None }
    )
    .fetch_optional(&mut *conn)
    .await?
    .ok_or(TransitionError::Lost)?;
    run.version = updated.version;
    run.started_at = updated.started_at;
    run.finished_at = updated.finished_at;
    run.status = to.as_str().to_owned();
    if let (MissionStatus::Failed, Some(r)) = (to, reason) {
        run.failure_reason = Some(r.to_owned());
    }
    events::append(
        conn,
        run.workspace_id,
        NewEvent::new(
            run.id,
            None,
            None,
            actor,
            &payloads::MissionStatusChanged {
                from,
                to,
                reason: reason.map(str::to_owned),
            },
        ),
    )
    .await?;
    // The ready queue holds only what may be claimed now: a mission that
    // stops executing takes its rows out (so paused or replanning missions
    // cost claims nothing), and puts them back when it executes again.
    if from == MissionStatus::Executing && to != MissionStatus::Executing {
        sqlx::query!("DELETE FROM task_queue WHERE run_id = $1", run.id)
            .execute(&mut *conn)
            .await?;
    } else if to == MissionStatus::Executing && from != MissionStatus::Executing {
        sqlx::query!(
            "INSERT INTO task_queue (task_id, workspace_id, run_id, priority, ready_at)
             SELECT id, workspace_id, run_id, $2, COALESCE(next_attempt_at, now())
             FROM orchestration_tasks
             WHERE run_id = $1 AND status IN ('queued', 'retry_wait')
             ON CONFLICT (task_id) DO NOTHING",
            run.id,
            run.priority
        )
        .execute(&mut *conn)
        .await?;
    }
    if matches!(to, MissionStatus::Completed | MissionStatus::Failed) {
        // The plan library learns from every finished mission, atomically
        // with its end; a cancelled one says nothing about its plan.
        super::plan_cases::record(conn, run, to == MissionStatus::Completed).await?;
    }
    if to.is_terminal() {
        // Contractors are mission-scoped: they end with their mission.
        let retired = super::agents::retire_contractors(conn, run.workspace_id, run.id).await?;
        if !retired.is_empty() {
            events::append(
                conn,
                run.workspace_id,
                NewEvent::new(
                    run.id,
                    None,
                    None,
                    actor,
                    &payloads::ContractorsRetired {
                        agents: retired.clone(),
                    },
                ),
            )
            .await?;
        }
    }
    Ok(to)
}

/// Stores a plan version (kept forever, so earlier plans stay queryable),
/// sets it as the mission's current plan and writes `plan.created`.
pub async fn store_plan(
    conn: &mut PgConnection,
    run: &mut MissionRow,
    plan: &ValidatedPlan,
    provenance: &PlanProvenance,
    details: &Value,
    actor: &str,
) -> sqlx::Result<i32> {
    let version = run.plan_version + 1;
    let spec = serde_json::to_value(&plan.plan).unwrap_or(Value::Null);
    let provenance_json = serde_json::to_value(provenance).unwrap_or(Value::Null);
    sqlx::query!(
        "INSERT INTO orchestration_plans
           (workspace_id, run_id, plan_version, planner, provenance, spec, critical_path, estimated_cost)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        run.workspace_id,
        run.id,
        version,
        provenance.planner,
        provenance_json,
        spec,
        &plan.critical_path,
        plan.total_estimated_cost
    )
    .execute(&mut *conn)
    .await?;
    let new_version = sqlx::query_scalar!(
        "UPDATE orchestration_runs SET plan_version = $3, planner = $4, version = version + 1, updated_at = now()
         WHERE id = $1 AND version = $2 RETURNING version",
        run.id,
        run.version,
        version,
        provenance.planner
    )
    .fetch_one(&mut *conn)
    .await?;
    run.version = new_version;
    run.plan_version = version;
    run.planner = Some(provenance.planner.to_owned());
    events::append(
        conn,
        run.workspace_id,
        NewEvent::new(
            run.id,
            None,
            None,
            actor,
            &payloads::PlanCreated {
                plan_version: version,
                provenance: provenance_json.clone(),
                tasks: plan.plan.tasks.len(),
                critical_path: plan.critical_path.clone(),
                estimated_cost: plan.total_estimated_cost,
                details: details.clone(),
            },
        ),
    )
    .await?;
    Ok(version)
}

/// A stored plan version.
#[derive(Debug, Clone, serde::Serialize, utoipa::ToSchema)]
pub struct PlanRecord {
    /// Version (1, 2, …).
    pub plan_version: i32,
    /// Which planner made it.
    pub planner: String,
    /// How it was made.
    pub provenance: Value,
    /// The plan as stored.
    pub spec: Value,
    /// Task keys on the critical path.
    pub critical_path: Vec<String>,
    /// Sum of estimated costs.
    pub estimated_cost: f64,
    /// When it was made.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// One plan version of a mission (`None` for the current one).
pub async fn get_plan(
    pool: &PgPool,
    workspace_id: Uuid,
    run_id: Uuid,
    version: Option<i32>,
) -> sqlx::Result<Option<PlanRecord>> {
    sqlx::query_as!(
        PlanRecord,
        "SELECT p.plan_version, p.planner, p.provenance, p.spec, p.critical_path, p.estimated_cost, p.created_at
         FROM orchestration_plans p JOIN orchestration_runs r ON r.id = p.run_id
         WHERE p.run_id = $1 AND p.workspace_id = $2
           AND p.plan_version = COALESCE($3, r.plan_version)",
        run_id,
        workspace_id,
        version
    )
    .fetch_optional(pool)
    .await
}

/// Methods used by any plan version of a mission (so a rejected one is not reused).
pub async fn methods_used(conn: &mut PgConnection, run_id: Uuid) -> sqlx::Result<Vec<String>> {
    let rows = sqlx::query_scalar!(
        r#"SELECT DISTINCT provenance->>'template' AS "template!" FROM orchestration_plans
           WHERE run_id = $1 AND provenance->>'template' IS NOT NULL"#,
        run_id
    )
    .fetch_all(conn)
    .await?;
    Ok(rows)
}

/// Records what the next plan must take into account, and frees the planning lease.
pub async fn set_planning_feedback(
    conn: &mut PgConnection,
    run_id: Uuid,
    feedback: Option<&str>,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE orchestration_runs SET planning_feedback = $2, planning_lease_owner = NULL,
                planning_lease_expires_at = NULL, planning_attempts = 0, updated_at = now()
         WHERE id = $1",
        run_id,
        feedback
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// A mission claimed for (LLM) planning.
#[derive(Debug, Clone)]
pub struct PlanningClaim {
    /// Mission.
    pub id: Uuid,
    /// Workspace.
    pub workspace_id: Uuid,
    /// Goal.
    pub goal: String,
    /// Constraints.
    pub constraints: Value,
    /// Budget.
    pub budget_limit: Option<f64>,
    /// Feedback or instructions for this plan.
    pub planning_feedback: Option<String>,
    /// How many times planning was tried (including this one).
    pub planning_attempts: i32,
}

/// Claims one mission waiting in `planning` whose planning lease is free or
/// expired (`SKIP LOCKED`: replicas take different missions).
pub async fn claim_for_planning(
    pool: &PgPool,
    owner: &str,
    lease_secs: f64,
) -> sqlx::Result<Option<PlanningClaim>> {
    sqlx::query_as!(
        PlanningClaim,
        "UPDATE orchestration_runs r
         SET planning_lease_owner = $1, planning_lease_expires_at = now() + make_interval(secs => $2),
             planning_attempts = planning_attempts + 1, updated_at = now()
         WHERE r.id = (
             SELECT id FROM orchestration_runs
             WHERE status = 'planning'
               AND (planning_lease_expires_at IS NULL OR planning_lease_expires_at < now())
             ORDER BY planning_lease_expires_at NULLS FIRST, id
             LIMIT 1
             FOR UPDATE SKIP LOCKED)
         RETURNING r.id, r.workspace_id, r.goal, r.constraints, r.budget_limit, r.planning_feedback,
                   r.planning_attempts",
        owner,
        lease_secs
    )
    .fetch_optional(pool)
    .await
}

/// Gives up a planning lease so another attempt can start after `delay`.
pub async fn release_planning_lease(
    conn: &mut PgConnection,
    run_id: Uuid,
    delay: std::time::Duration,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE orchestration_runs SET planning_lease_owner = NULL,
                planning_lease_expires_at = now() + make_interval(secs => $2), updated_at = now()
         WHERE id = $1",
        run_id,
        delay.as_secs_f64()
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Gives back every planning lease `owner` holds (a replica shutting down),
/// with the planning attempt it counted. Returns missions released.
pub async fn release_planning_leases_of(pool: &PgPool, owner: &str) -> sqlx::Result<u64> {
    Ok(sqlx::query!(
        "UPDATE orchestration_runs
         SET planning_lease_owner = NULL, planning_lease_expires_at = NULL,
             planning_attempts = greatest(planning_attempts - 1, 0), updated_at = now()
         WHERE planning_lease_owner = $1 AND status = 'planning'",
        owner
    )
    .execute(pool)
    .await?
    .rows_affected())
}

/// Whether this replica still holds the planning lease of a locked mission.
pub async fn holds_planning_lease(
    conn: &mut PgConnection,
    run_id: Uuid,
    owner: &str,
) -> sqlx::Result<bool> {
    Ok(sqlx::query_scalar!(
        r#"SELECT (status = 'planning' AND planning_lease_owner = $2) AS "held!" FROM orchestration_runs WHERE id = $1"#,
        run_id,
        owner
    )
    .fetch_optional(conn)
    .await?
    .unwrap_or(false))
}

/// The critical path of the mission's current plan.
pub async fn critical_path(
    pool: &PgPool,
    run_id: Uuid,
    plan_version: i32,
) -> sqlx::Result<Vec<String>> {
    Ok(sqlx::query_scalar!(
        "SELECT critical_path FROM orchestration_plans WHERE run_id = $1 AND plan_version = $2",
        run_id,
        plan_version
    )
    .fetch_optional(pool)
    .await?
    .unwrap_or_default())
}

/// Wakes every replica's dispatcher when the transaction commits.
pub async fn notify_wake(conn: &mut PgConnection) -> sqlx::Result<()> {
    sqlx::query!("SELECT pg_notify('coordinator_wake', '')")
        .execute(conn)
        .await?;
    Ok(())
}

/// A mission's editable fields as they are to be stored.
pub struct MissionFields<'a> {
    /// Short name, or none.
    pub title: Option<&'a str>,
    /// Dispatch priority.
    pub priority: i32,
    /// Spending limit, or none.
    pub budget_limit: Option<f64>,
    /// Deadline, or none.
    pub deadline: Option<OffsetDateTime>,
    /// Labels.
    pub labels: &'a [String],
}

/// Writes the edited fields of a locked mission (version-guarded) and gives
/// its queued tasks the new priority, since the ready queue orders by the
/// priority copied into each row. Returns the new version, `None` when the
/// mission changed since it was read.
pub async fn update_fields(
    conn: &mut PgConnection,
    run: &MissionRow,
    to: &MissionFields<'_>,
) -> sqlx::Result<Option<i64>> {
    let version = sqlx::query_scalar!(
        "UPDATE orchestration_runs
         SET title = $3, priority = $4, budget_limit = $5, deadline = $6, labels = $7,
             version = version + 1, updated_at = now()
         WHERE id = $1 AND version = $2
         RETURNING version",
        run.id,
        run.version,
        to.title,
        to.priority,
        to.budget_limit,
        to.deadline,
        to.labels
    )
    .fetch_optional(&mut *conn)
    .await?;
    if version.is_some() && to.priority != run.priority {
        sqlx::query!(
            "UPDATE task_queue SET priority = $2 WHERE run_id = $1",
            run.id,
            to.priority
        )
        .execute(&mut *conn)
        .await?;
    }
    Ok(version)
}

/// Archives a locked mission (version-guarded): it stays, with its history,
/// but the list leaves it out. Returns the new version and when, `None`
/// when the mission changed since it was read.
pub async fn archive(
    conn: &mut PgConnection,
    run: &MissionRow,
) -> sqlx::Result<Option<(i64, OffsetDateTime)>> {
    let row = sqlx::query!(
        r#"UPDATE orchestration_runs
           SET archived_at = now(), version = version + 1, updated_at = now()
           WHERE id = $1 AND version = $2
           RETURNING version, archived_at AS "archived_at!""#,
        run.id,
        run.version
    )
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|r| (r.version, r.archived_at)))
}

/// Deletes a mission and, through the foreign keys' cascades, its plans,
/// tasks, edges, attempts, events, board cards, blackboard, tenders,
/// decisions, handoffs and tool approvals. Messages, reservations, work
/// packages and agent requests stay with their mission cleared; plan-library
/// cases have no foreign key and stay (a lesson outlives its mission).
/// Returns whether a row went.
pub async fn delete(conn: &mut PgConnection, workspace_id: Uuid, id: Uuid) -> sqlx::Result<bool> {
    let done = sqlx::query!(
        "DELETE FROM orchestration_runs WHERE id = $1 AND workspace_id = $2",
        id,
        workspace_id
    )
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}
