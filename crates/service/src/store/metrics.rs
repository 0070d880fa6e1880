//! SQL of `GET /metrics`: database-wide gauges computed at scrape time.
//!
//! PostgreSQL is the single source of truth, so these figures are the same
//! whichever replica is scraped. A handful of aggregate queries, one round
//! trip each, in one read-only transaction with a short statement timeout so
//! a slow scrape can never hold a connection for long. Counts are
//! database-wide (all workspaces); the only per-entity series, inbox depth
//! per agent, is capped at [`INBOX_TOP_AGENTS`] to bound cardinality.

use sqlx::PgPool;

/// Agents with the deepest inboxes that get their own series.
pub const INBOX_TOP_AGENTS: i64 = 100;

/// Trust histogram bucket bounds: tenths, `le` semantics.
pub const TRUST_BUCKETS: [f64; 10] = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0];

/// What the database says at one moment.
#[derive(Debug, Clone, Default)]
pub struct DbSnapshot {
    /// `(status, count)` of every task.
    pub tasks_by_status: Vec<(String, i64)>,
    /// `(status, count)` of every mission.
    pub missions_by_status: Vec<(String, i64)>,
    /// Queue rows whose `ready_at` has passed.
    pub queue_ready: i64,
    /// All queue rows (including retries and continuations not yet due).
    pub queue_total: i64,
    /// Governance decisions awaiting a person.
    pub governance_pending: i64,
    /// Tool approvals awaiting a person.
    pub tool_approvals_pending: i64,
    /// Team decisions whose vote is open.
    pub team_decisions_open: i64,
    /// Belief conflicts the BDI cycles have reported.
    pub belief_conflicts: i64,
    /// Highest event id: events written since the database was created.
    pub events_written: i64,
    /// Unread messages, all agents.
    pub inbox_unread_total: i64,
    /// `(workspace, agent, unread)` of the deepest inboxes, deepest first.
    pub inbox_top: Vec<(String, String, i64)>,
    /// Agents per trust tenth: index `i` counts trust in `((i)/10, (i+1)/10]`
    /// (index 0 also holds trust 0).
    pub trust_counts: [u64; 10],
    /// Sum of every agent's trust.
    pub trust_sum: f64,
    /// `(planner, succeeded, failed)` from the plan library's finished cases.
    pub plan_cases: Vec<(String, i64, i64)>,
}

/// Reads every database gauge; `timeout_ms` bounds each statement.
pub async fn snapshot(pool: &PgPool, timeout_ms: u32) -> Result<DbSnapshot, sqlx::Error> {
    let mut tx = pool.begin().await?;
    sqlx::query("SET TRANSACTION READ ONLY")
        .execute(&mut *tx)
        .await?;
    // Local to this transaction: the pooled connection keeps its default.
    sqlx::query("SELECT set_config('statement_timeout', $1, true)")
        .bind(timeout_ms.to_string())
        .execute(&mut *tx)
        .await?;
    let tasks_by_status = sqlx::query!(
        r#"SELECT status AS "status!", count(*) AS "n!" FROM orchestration_tasks GROUP BY status ORDER BY status"#
    )
    .fetch_all(&mut *tx)
    .await?
    .into_iter()
    .map(|r| (r.status, r.n))
    .collect();
    let missions_by_status = sqlx::query!(
        r#"SELECT status AS "status!", count(*) AS "n!" FROM orchestration_runs GROUP BY status ORDER BY status"#
    )
    .fetch_all(&mut *tx)
    .await?
    .into_iter()
    .map(|r| (r.status, r.n))
    .collect();
    let s = sqlx::query!(
        r#"SELECT
             (SELECT count(*) FROM task_queue WHERE ready_at <= now()) AS "queue_ready!",
             (SELECT count(*) FROM task_queue) AS "queue_total!",
             (SELECT count(*) FROM governance_decisions WHERE status = 'pending') AS "governance_pending!",
             (SELECT count(*) FROM tool_approval_requests WHERE status = 'pending') AS "tool_approvals_pending!",
             (SELECT count(*) FROM team_decisions WHERE status = 'open') AS "team_decisions_open!",
             (SELECT count(*) FROM bdi_conflicts) AS "belief_conflicts!",
             (SELECT coalesce(max(id), 0) FROM orchestration_events) AS "events_written!",
             (SELECT count(*) FROM message_recipients WHERE state = 'unread') AS "inbox_unread!",
             (SELECT coalesce(sum(trust), 0) FROM agents) AS "trust_sum!""#
    )
    .fetch_one(&mut *tx)
    .await?;
    let inbox_top = sqlx::query!(
        r#"SELECT workspace_id::text AS "workspace!", agent_id, count(*) AS "n!"
           FROM message_recipients WHERE state = 'unread'
           GROUP BY workspace_id, agent_id
           ORDER BY count(*) DESC, workspace_id, agent_id
           LIMIT $1"#,
        INBOX_TOP_AGENTS
    )
    .fetch_all(&mut *tx)
    .await?
    .into_iter()
    .map(|r| (r.workspace, r.agent_id, r.n))
    .collect();
    // numeric, not float: 0.3 * 10 is 3.0000000000000004 in float8.
    let trust_rows = sqlx::query!(
        r#"SELECT greatest(ceil(trust::numeric * 10), 1)::int AS "tenth!", count(*) AS "n!"
           FROM agents GROUP BY 1"#
    )
    .fetch_all(&mut *tx)
    .await?;
    let plan_cases = sqlx::query!(
        r#"SELECT coalesce(planner, 'unknown') AS "planner!",
                  count(*) FILTER (WHERE success) AS "ok!",
                  count(*) FILTER (WHERE NOT success) AS "failed!"
           FROM plan_cases GROUP BY 1 ORDER BY 1"#
    )
    .fetch_all(&mut *tx)
    .await?
    .into_iter()
    .map(|r| (r.planner, r.ok, r.failed))
    .collect();
    tx.rollback().await?;
    Ok(DbSnapshot {
        tasks_by_status,
        missions_by_status,
        queue_ready: s.queue_ready,
        queue_total: s.queue_total,
        governance_pending: s.governance_pending,
        tool_approvals_pending: s.tool_approvals_pending,
        team_decisions_open: s.team_decisions_open,
        belief_conflicts: s.belief_conflicts,
        events_written: s.events_written,
        inbox_unread_total: s.inbox_unread,
        inbox_top,
        trust_counts: trust_tenths(trust_rows.iter().map(|r| (r.tenth, r.n))),
        trust_sum: s.trust_sum,
        plan_cases,
    })
}

/// Per-tenth agent counts from `(ceil(trust * 10) clamped to >= 1, count)`
/// rows; out-of-range tenths (impossible under the trust CHECK) are clamped.
pub fn trust_tenths(rows: impl IntoIterator<Item = (i32, i64)>) -> [u64; 10] {
    let mut out = [0u64; 10];
    for (tenth, n) in rows {
        let i = (tenth.clamp(1, 10) - 1) as usize;
        out[i] += n.max(0) as u64;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_tenths_places_rows_by_upper_bound() {
        // tenth 1 is (0, 0.1] plus 0; tenth 10 is (0.9, 1.0].
        let got = trust_tenths([(1, 2), (5, 3), (10, 1), (0, 1), (11, 4)]);
        assert_eq!(got, [3, 0, 0, 0, 3, 0, 0, 0, 0, 5]);
    }
}
