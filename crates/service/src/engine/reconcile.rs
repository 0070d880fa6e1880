//! Phase B of the tick: reclaim expired leases, and the safety-net sweeps
//! (promotions and mission completions normally happen in the completing
//! transaction; the sweeps catch anything that slipped past, e.g. a replica
//! that died between steps).

use sqlx::PgPool;
use uuid::Uuid;

use super::{
    EngineConfig, escalation,
    reports::{self, Origin, ReportError},
};
use crate::{
    domain::{FailureKind, MissionStatus, ReportStatus, TaskStatus},
    missions::finish::{FinishError, finish_mission_if_done},
    store::{agents, events, missions, tasks},
    worker::protocol::WorkerReport,
};
use coordinator_core::agents::{AgentStatus, PinRefusal};

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
            retry_after_secs: None,
        };
        match reports::apply_report(pool, cfg, row.attempt, &report, Origin::LeaseExpired).await {
            Ok(_) => reclaimed += 1,
            // Another replica reclaimed it, or its report arrived meanwhile.
            Err(ReportError::Stale { .. }) => {}
            Err(e) => tracing::warn!(attempt = %row.attempt, error = %e, "could not reclaim lease"),
        }
    }
    cfg.metrics.lease_expiries.add(reclaimed as u64);
    if reclaimed > 0 {
        tracing::info!(reclaimed, "reclaimed expired leases");
    }
    Ok(reclaimed)
}

/// At shutdown: the leases of `cut` (attempts whose dispatch was cut off,
/// so nobody knows whether the worker has them) expire now and are
/// reclaimed like any expired lease (an `infrastructure` failure, retried);
/// a planning lease this replica holds is given back with its attempt.
/// Attempts a worker accepted keep their leases: their reports may reach
/// any replica. Returns (tasks, missions) released.
pub async fn release_leases(
    pool: &PgPool,
    cfg: &EngineConfig,
    cut: &[Uuid],
) -> anyhow::Result<(usize, usize)> {
    let expired = sqlx::query!(
        "UPDATE orchestration_tasks SET lease_expires_at = now() - interval '1 millisecond'
         WHERE current_attempt_id = ANY($1) AND lease_owner = $2 AND status = 'running'",
        cut,
        cfg.replica_id
    )
    .execute(pool)
    .await?
    .rows_affected();
    if expired > 0 {
        reclaim_expired_leases(pool, cfg).await?;
    }
    let missions =
        crate::store::missions::release_planning_leases_of(pool, &cfg.replica_id).await?;
    Ok((expired as usize, missions as usize))
}

/// Executing missions one sweep looks at: its cost is bounded by this, not
/// by how many missions exist.
pub const SWEEP_WINDOW: i64 = 500;

/// Where the next sweep starts: sweeps walk the executing missions in id
/// order, a window at a time, and wrap around. Only a position; the
/// database decides everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct SweepCursor {
    after: Option<Uuid>,
}

/// Promotes ready tasks and finishes done missions that the completing
/// transactions did not (safety net), within the next window of executing
/// missions. Returns missions touched.
///
/// Each sweep costs the same whatever the number of idle missions; the
/// price is that a mission a crashed replica left behind is noticed within
/// `ceil(executing / SWEEP_WINDOW)` sweeps rather than one.
pub async fn sweep(
    pool: &PgPool,
    cfg: &EngineConfig,
    cursor: &mut SweepCursor,
) -> anyhow::Result<usize> {
    let after = cursor.after.unwrap_or(Uuid::nil());
    // The window: the next executing missions after the cursor
    // (orchestration_runs_executing, index-only).
    let window: Vec<Uuid> = sqlx::query_scalar!(
        "SELECT id FROM orchestration_runs
         WHERE status = 'executing' AND id > $1
         ORDER BY id
         LIMIT $2",
        after,
        SWEEP_WINDOW
    )
    .fetch_all(pool)
    .await?;
    cursor.after = if (window.len() as i64) < SWEEP_WINDOW {
        None
    } else {
        window.last().copied()
    };
    if window.is_empty() {
        return Ok(0);
    }
    // Probes each windowed mission's pending tasks
    // (orchestration_tasks_pending, index-only).
    let stuck = sqlx::query!(
        r#"SELECT r.id AS run_id, r.workspace_id FROM orchestration_runs r
           WHERE r.id = ANY($1) AND r.status = 'executing'
             AND EXISTS (
                   SELECT 1 FROM orchestration_tasks t
                   WHERE t.run_id = r.id AND t.status = 'pending'
                     AND NOT EXISTS (
                           SELECT 1 FROM orchestration_task_dependencies d
                           JOIN orchestration_tasks p ON p.id = d.depends_on_task_id
                           WHERE d.task_id = t.id AND p.status NOT IN ('succeeded', 'skipped')))
           ORDER BY r.id"#,
        &window
    )
    .fetch_all(pool)
    .await?;
    // Windowed missions with no open task (orchestration_tasks_open).
    let done = sqlx::query!(
        r#"SELECT r.id, r.workspace_id FROM orchestration_runs r
           WHERE r.id = ANY($1) AND r.status = 'executing'
             AND NOT EXISTS (
                   SELECT 1 FROM orchestration_tasks t
                   WHERE t.run_id = r.id AND t.status NOT IN ('succeeded', 'failed', 'cancelled', 'skipped'))
           ORDER BY r.id"#,
        &window
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
        let cancelled = match finish_mission_if_done(&mut tx, &mut run, &actor).await {
            Ok(cancelled) => cancelled,
            Err(FinishError::Db(e)) => return Err(e.into()),
            Err(e) => {
                tracing::warn!(mission = %run_id, error = %e, "sweep could not finish mission");
                Vec::new()
            }
        };
        if promoted > 0 {
            missions::notify_wake(&mut tx).await?;
        }
        tx.commit().await?;
        crate::worker::notify_cancelled(&cfg.worker_http, cancelled);
        touched += 1;
    }
    Ok(touched)
}

/// Probes the endpoints of unreachable agents (a GET of the base URL, at
/// most once per `probe_interval` per agent across replicas): any HTTP
/// answer, whatever its status, means the worker is there again, and the
/// agent takes work (`agent.reachable`). Returns how many came back.
pub async fn probe_unreachable(pool: &PgPool, cfg: &EngineConfig) -> anyhow::Result<usize> {
    let due = agents::claim_probes(pool, cfg.probe_interval.as_secs_f64(), 20).await?;
    let probes = due.into_iter().map(|d| {
        let http = cfg.worker_http.clone();
        async move {
            let answered = http
                .get(d.endpoint_url.trim_end_matches('/'))
                .timeout(std::time::Duration::from_secs(5))
                .send()
                .await
                .is_ok();
            (d, answered)
        }
    });
    let actor = format!("engine:{}", cfg.replica_id);
    let mut back = 0;
    for (d, answered) in futures::future::join_all(probes).await {
        if !answered {
            continue;
        }
        let mut tx = pool.begin().await?;
        if let Some(status) = agents::mark_reachable(&mut tx, d.workspace_id, &d.agent_id).await? {
            events::record(
                &mut tx,
                d.workspace_id,
                events::WorkspaceEvent::new(
                    None,
                    None,
                    &actor,
                    &coordinator_protocol::agent_events::AgentReachable {
                        agent_id: d.agent_id.clone(),
                        status,
                    },
                ),
            )
            .await?;
            back += 1;
        }
        tx.commit().await?;
    }
    Ok(back)
}

/// Asks attempts that have been silent for half the stall timeout (the
/// lease) how they are doing: an `attempt.progress_check` event and a
/// `POST {worker}/v1/tasks/{attempt}/progress` to the worker, once per
/// silence (a heartbeat re-arms it). Returns how many were checked.
pub async fn progress_checks(pool: &PgPool, cfg: &EngineConfig) -> anyhow::Result<usize> {
    let half = cfg.lease.as_secs_f64() / 2.0;
    let due = sqlx::query!(
        r#"SELECT t.id, t.workspace_id, t.run_id, t.task_key, t.current_attempt_id AS "attempt!",
                  a.worker_url, a.last_heartbeat_at, a.dispatched_at
           FROM orchestration_tasks t
           JOIN task_attempts a ON a.id = t.current_attempt_id
           WHERE t.status = 'running' AND t.progress_checked_at IS NULL
             AND t.lease_expires_at < now() + make_interval(secs => $1)
             AND t.lease_expires_at >= now()
           ORDER BY t.lease_expires_at
           LIMIT 100"#,
        half
    )
    .fetch_all(pool)
    .await?;
    let actor = format!("engine:{}", cfg.replica_id);
    let mut checked = 0;
    for row in due {
        let mut tx = pool.begin().await?;
        if missions::lock(&mut tx, row.workspace_id, row.run_id)
            .await?
            .is_none()
        {
            continue;
        }
        let marked = sqlx::query!(
            "UPDATE orchestration_tasks SET progress_checked_at = now()
             WHERE id = $1 AND current_attempt_id = $2 AND status = 'running'
               AND progress_checked_at IS NULL",
            row.id,
            row.attempt
        )
        .execute(&mut *tx)
        .await?;
        if marked.rows_affected() != 1 {
            // Another replica checked it, or it finished meanwhile.
            continue;
        }
        let last_sign = row.last_heartbeat_at.unwrap_or(row.dispatched_at);
        let silent = (time::OffsetDateTime::now_utc() - last_sign).as_seconds_f64();
        events::append(
            &mut tx,
            row.workspace_id,
            events::NewEvent::new(
                row.run_id,
                Some(row.id),
                Some(row.attempt),
                &actor,
                &events::payloads::AttemptProgressCheck {
                    key: row.task_key.clone(),
                    silent_secs: silent.round(),
                    stall_timeout_secs: cfg.lease.as_secs(),
                },
            ),
        )
        .await?;
        tx.commit().await?;
        checked += 1;
        let http = cfg.worker_http.clone();
        let url = format!(
            "{}/v1/tasks/{}/progress",
            row.worker_url.trim_end_matches('/'),
            row.attempt
        );
        tokio::spawn(async move {
            if let Err(e) = http
                .post(&url)
                .timeout(std::time::Duration::from_secs(5))
                .send()
                .await
            {
                tracing::debug!(%url, error = %e, "progress check not delivered");
            }
        });
    }
    cfg.metrics.progress_checks.add(checked as u64);
    Ok(checked)
}

/// Marks agents that promised heartbeats and went silent `offline`, and
/// fails their live attempts as `infrastructure` so the tasks move on to
/// other agents. Returns how many attempts were moved.
pub async fn offline_agents(pool: &PgPool, cfg: &EngineConfig) -> anyhow::Result<usize> {
    let gone = agents::mark_silent_offline(pool).await?;
    let mut moved = 0;
    for (workspace_id, agent_id) in gone {
        tracing::warn!(%workspace_id, %agent_id, "agent stopped heartbeating; marked offline");
        let live = sqlx::query_scalar!(
            "SELECT id FROM task_attempts
             WHERE workspace_id = $1 AND agent_id = $2 AND status IN ('dispatching', 'running')",
            workspace_id,
            agent_id
        )
        .fetch_all(pool)
        .await?;
        for attempt in live {
            let report = WorkerReport {
                status: ReportStatus::Failed,
                output: None,
                error: Some(format!(
                    "agent {agent_id} went offline (no heartbeat within its timeout)"
                )),
                failure_kind: Some(FailureKind::Infrastructure),
                cost: 0.0,
                tokens: 0,
                retry_after_secs: None,
            };
            match reports::apply_report(pool, cfg, attempt, &report, Origin::AgentOffline).await {
                Ok(_) => moved += 1,
                Err(ReportError::Stale { .. }) => {}
                Err(e) => {
                    tracing::warn!(%attempt, error = %e, "could not move an offline agent's attempt")
                }
            }
        }
    }
    lost_pins(pool, cfg).await?;
    Ok(moved)
}

/// Waiting tasks one sweep hands to the ladder for a lost pin.
pub const LOST_PIN_BATCH: i64 = 100;

/// Hands every due task pinned to an agent that is offline, retired or gone
/// to the escalation ladder ([`escalation::pin_unavailable`]), each under
/// its mission's lock, re-checked there. Runs with the offline-agent check,
/// so a pin is released within a sweep of its agent going offline, being
/// retired, or of the task becoming ready after that. Returns how many.
///
/// [`escalation::pin_unavailable`]: super::escalation::pin_unavailable
pub async fn lost_pins(pool: &PgPool, cfg: &EngineConfig) -> anyhow::Result<usize> {
    let lost = {
        let mut conn = pool.acquire().await?;
        agents::lost_pins(&mut conn, LOST_PIN_BATCH).await?
    };
    let actor = format!("engine:{}", cfg.replica_id);
    let mut handled = 0;
    for pin in lost {
        let mut tx = pool.begin().await?;
        let Some(mut run) = missions::lock(&mut tx, pin.workspace_id, pin.run_id).await? else {
            continue;
        };
        let task = tasks::get(&mut tx, pin.task_id).await?;
        let waiting = matches!(task.status(), TaskStatus::Queued | TaskStatus::RetryWait);
        let Some(agent_id) = task.pinned_agent_id.clone().filter(|_| waiting) else {
            continue;
        };
        if run.status() != MissionStatus::Executing {
            continue;
        }
        let agent = agents::pin_target(&mut tx, pin.workspace_id, &agent_id).await?;
        let reason = match agent.map(|a| a.status.parse::<AgentStatus>()) {
            None => PinRefusal::UnknownAgent,
            Some(Ok(AgentStatus::Retired)) => PinRefusal::Retired,
            Some(Ok(AgentStatus::Offline)) => PinRefusal::Offline,
            // Back (or never gone): the pin holds.
            Some(_) => continue,
        };
        match escalation::pin_unavailable(&mut tx, cfg, &mut run, &task, reason, &actor).await {
            Ok(status) => {
                missions::notify_wake(&mut tx).await?;
                tx.commit().await?;
                tracing::info!(task = %task.id, %agent_id, %reason, %status, "pinned agent unavailable; the ladder took over");
                handled += 1;
            }
            Err(e) => tracing::warn!(task = %task.id, error = %e, "could not release a lost pin"),
        }
    }
    Ok(handled)
}

/// Marks reservations past their TTL `expired` (with an event each), so the
/// status view and agents' status show them released without waiting for a
/// takeover.
pub async fn expire_reservations(pool: &PgPool) -> anyhow::Result<usize> {
    let mut tx = pool.begin().await?;
    let n = crate::coordination::reservations::expire_stale(&mut tx, "coordinator").await?;
    tx.commit().await?;
    Ok(n)
}

/// Overdue tool approvals or closed voting windows one sweep looks at: a
/// backlog (say, after an outage) drains over several sweeps instead of
/// holding one replica's tick.
pub const SETTLE_BATCH: i64 = 100;

/// Times out tool-approval requests past `expires_at` that nobody read,
/// across workspaces, through [`tool_policy::expire_overdue`] (the read
/// path's own function: same status, rationale and `tool.approval_resolved`
/// event). Concurrent replicas are safe: its update skips rows another
/// transaction holds and re-checks `status = 'pending'`, so each request
/// times out once. Returns how many this replica timed out.
///
/// [`tool_policy::expire_overdue`]: crate::coordination::tool_policy::expire_overdue
pub async fn settle_overdue_approvals(pool: &PgPool) -> anyhow::Result<usize> {
    let workspaces = {
        let mut conn = pool.acquire().await?;
        first_seen(crate::store::tool_approvals::overdue_workspaces(&mut conn, SETTLE_BATCH).await?)
    };
    let mut settled = 0;
    for workspace_id in workspaces {
        match crate::coordination::tool_policy::expire_overdue(pool, workspace_id, None).await {
            Ok(n) => settled += n,
            Err(e) => {
                tracing::warn!(%workspace_id, error = %e, "could not time out tool approvals")
            }
        }
    }
    if settled > 0 {
        tracing::info!(settled, "timed out overdue tool approvals");
    }
    Ok(settled)
}

/// Commits open team decisions whose voting window has closed, across
/// workspaces, through [`team_decisions::settle_if_due`] (the read path's
/// own function: same tally, orchestrator tie-break, ADR and
/// `team_decision.committed` event). Concurrent replicas are safe: it locks
/// the mission and the decision and commits only an open row at its
/// version, so one replica commits and the others find it closed. Returns
/// how many this replica committed.
///
/// [`team_decisions::settle_if_due`]: crate::coordination::team_decisions::settle_if_due
pub async fn close_voting_windows(pool: &PgPool) -> anyhow::Result<usize> {
    let due = {
        let mut conn = pool.acquire().await?;
        crate::store::team_decisions::overdue_everywhere(&mut conn, SETTLE_BATCH).await?
    };
    let mut committed = 0;
    for (workspace_id, id) in due {
        match crate::coordination::team_decisions::settle_if_due(pool, workspace_id, id).await {
            Ok(true) => committed += 1,
            Ok(false) => {}
            Err(e) => tracing::warn!(decision = %id, error = %e, "could not commit team decision"),
        }
    }
    if committed > 0 {
        tracing::info!(committed, "committed team decisions whose window closed");
    }
    Ok(committed)
}

/// Each id once, in the order first seen: one expiry round per workspace,
/// the most overdue workspace first.
fn first_seen(ids: Vec<Uuid>) -> Vec<Uuid> {
    let mut seen = std::collections::HashSet::new();
    ids.into_iter().filter(|id| seen.insert(*id)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_workspace_is_swept_once_most_overdue_first() {
        let (a, b, c) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        assert_eq!(first_seen(vec![b, a, b, c, a, b]), vec![b, a, c]);
        assert_eq!(first_seen(vec![]), Vec::<Uuid>::new());
    }
}
