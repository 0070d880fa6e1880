//! Phase B of the tick: reclaim expired leases, and the safety-net sweeps
//! (promotions and mission completions normally happen in the completing
//! transaction; the sweeps catch anything that slipped past, e.g. a replica
//! that died between steps).

use sqlx::PgPool;

use super::{
    EngineConfig,
    reports::{self, Origin, ReportError},
};
use crate::{
    domain::{FailureKind, ReportStatus},
    store::{missions, tasks},
    worker::protocol::WorkerReport,
};

/// Fails every attempt whose lease ran out as `infrastructure` (retried like
/// any failure). Returns how many were reclaimed.
pub async fn reclaim_expired_leases(pool: &PgPool, cfg: &EngineConfig) -> anyhow::Result<usize> {
    let expired = sqlx::query!(
        r#"SELECT current_attempt_id AS "attempt!" FROM orchestration_tasks
           WHERE status = 'running' AND lease_expires_at < now() AND current_attempt_id IS NOT NULL
           ORDER BY lease_expires_at
           LIMIT 100"#
    )
    .fetch_all(pool)
    .await?;
    let mut reclaimed = 0;
    for row in expired {
        let report = WorkerReport {
            status: ReportStatus::Failed,
            output: None,
            error: Some(
                "the attempt's lease expired with no report (worker or replica lost)".into(),
            ),
            failure_kind: Some(FailureKind::Infrastructure),
            cost: 0.0,
            tokens: 0,
        };
        match reports::apply_report(pool, cfg, row.attempt, &report, Origin::LeaseExpired).await {
            Ok(_) => reclaimed += 1,
            // Another replica reclaimed it, or its report arrived meanwhile.
            Err(ReportError::Stale { .. }) => {}
            Err(e) => tracing::warn!(attempt = %row.attempt, error = %e, "could not reclaim lease"),
        }
    }
    if reclaimed > 0 {
        tracing::info!(reclaimed, "reclaimed expired leases");
    }
    Ok(reclaimed)
}

/// Promotes ready tasks and finishes done missions that the completing
/// transactions did not (safety net). Returns missions touched.
pub async fn sweep(pool: &PgPool, cfg: &EngineConfig) -> anyhow::Result<usize> {
    // Walks executing missions in id order (orchestration_runs_executing)
    // and probes each one's pending tasks (orchestration_tasks_pending,
    // index-only); missions in other states are never read.
    let stuck = sqlx::query!(
        r#"SELECT r.id AS run_id, r.workspace_id FROM orchestration_runs r
           WHERE r.status = 'executing'
             AND EXISTS (
                   SELECT 1 FROM orchestration_tasks t
                   WHERE t.run_id = r.id AND t.status = 'pending'
                     AND NOT EXISTS (
                           SELECT 1 FROM orchestration_task_dependencies d
                           JOIN orchestration_tasks p ON p.id = d.depends_on_task_id
                           WHERE d.task_id = t.id AND p.status NOT IN ('succeeded', 'skipped')))
           ORDER BY r.id
           LIMIT 100"#
    )
    .fetch_all(pool)
    .await?;
    // Merge anti-join of orchestration_runs_executing against
    // orchestration_tasks_open: both index-only, neither sees history.
    let done = sqlx::query!(
        r#"SELECT r.id, r.workspace_id FROM orchestration_runs r
           WHERE r.status = 'executing'
             AND NOT EXISTS (
                   SELECT 1 FROM orchestration_tasks t
                   WHERE t.run_id = r.id AND t.status NOT IN ('succeeded', 'failed', 'cancelled', 'skipped'))
           LIMIT 100"#
    )
    .fetch_all(pool)
    .await?;
    let actor = format!("engine:{}", cfg.replica_id);
    let mut touched = 0;
    for (run_id, workspace_id) in stuck
        .iter()
        .map(|r| (r.run_id, r.workspace_id))
        .chain(done.iter().map(|r| (r.id, r.workspace_id)))
    {
        let mut tx = pool.begin().await?;
        let Some(mut run) = missions::lock(&mut tx, workspace_id, run_id).await? else {
            continue;
        };
        let promoted =
            tasks::promote_ready(&mut tx, workspace_id, run_id, None, run.priority, &actor).await?;
        let cancelled = match reports::finish_mission_if_done(&mut tx, &mut run, &actor).await {
            Ok(cancelled) => cancelled,
            Err(ReportError::Db(e)) => return Err(e.into()),
            Err(e) => {
                tracing::warn!(mission = %run_id, error = %e, "sweep could not finish mission");
                Vec::new()
            }
        };
        if promoted > 0 {
            missions::notify_wake(&mut tx).await?;
        }
        tx.commit().await?;
        super::dispatch::notify_cancelled(&cfg.worker_http, cancelled);
        touched += 1;
    }
    Ok(touched)
}
