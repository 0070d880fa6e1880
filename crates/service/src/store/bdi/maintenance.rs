//! SQL of the BDI maintenance cycle (stale intentions, desire re-sorting, belief conflicts, the cycle log) and of missions' commitment strategies.

use super::*;

/// Which agents a maintenance cycle covers: every agent of one workspace
/// (the job, which the schedule runs for each workspace in turn, and
/// `POST /v1/bdi/maintenance` for the caller's) or one agent (`bdi_cycle`).
/// Never more than a workspace: a cycle's counts are a workspace's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope<'a> {
    /// Every agent of the workspace.
    Workspace(Uuid),
    /// One agent.
    Agent(Uuid, &'a str),
}

fn scope_parts(scope: Scope<'_>) -> (Uuid, Option<&str>) {
    match scope {
        Scope::Workspace(w) => (w, None),
        Scope::Agent(w, a) => (w, Some(a)),
    }
}

/// Marks active intentions stalled past their strategy's threshold (seed
/// §7.2: open-minded 7 days, cautious 3; never single-minded) for
/// reconsideration, in the scope; returns them.
pub async fn mark_stale_intentions(
    conn: &mut PgConnection,
    scope: Scope<'_>,
) -> sqlx::Result<Vec<(Uuid, Uuid, String, String)>> {
    let (w, a) = scope_parts(scope);
    let rows = sqlx::query!(
        "UPDATE bdi_intentions SET needs_reconsideration = true, version = version + 1, updated_at = now()
         WHERE status = 'active' AND NOT needs_reconsideration
           AND workspace_id = $1 AND ($2::text IS NULL OR agent_id = $2)
           AND ((strategy = 'open-minded' AND last_progress_at < now() - interval '7 days')
             OR (strategy = 'cautious' AND last_progress_at < now() - interval '3 days'))
         RETURNING id, workspace_id, agent_id, strategy",
        w,
        a
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.workspace_id, r.id, r.agent_id, r.strategy))
        .collect())
}

/// Recomputes every active desire's priority with the seed's formula (§6.2)
/// and ranks each agent's active desires by it (1 = highest), in the scope;
/// returns how many rows changed.
pub async fn resort_desires(conn: &mut PgConnection, scope: Scope<'_>) -> sqlx::Result<u64> {
    let (w, a) = scope_parts(scope);
    let n = sqlx::query!(
        "WITH ranked AS (
             SELECT id,
                    base_priority * 0.30 + importance * 0.25 + urgency * 0.25
                      + strategic_alignment * 0.15 + dependency_status * 0.05 AS p
             FROM bdi_desires WHERE status = 'active'
               AND workspace_id = $1 AND ($2::text IS NULL OR agent_id = $2)),
         ordered AS (
             SELECT d.id, r.p,
                    row_number() OVER (PARTITION BY d.workspace_id, d.agent_id
                                       ORDER BY r.p DESC, d.created_at, d.id)::int AS rk
             FROM bdi_desires d JOIN ranked r ON r.id = d.id)
         UPDATE bdi_desires d SET priority = LEAST(1.0, GREATEST(0.0, o.p)), rank = o.rk
         FROM ordered o
         WHERE d.id = o.id AND (d.rank IS DISTINCT FROM o.rk OR d.priority <> LEAST(1.0, GREATEST(0.0, o.p)))",
        w,
        a
    )
    .execute(conn)
    .await?
    .rows_affected();
    Ok(n)
}

/// One chunk of (workspace, agent, subject) groups that hold at least two
/// beliefs above the conflict certainty, in the scope, after `after` in key order.
pub async fn conflict_candidates(
    conn: &mut PgConnection,
    scope: Scope<'_>,
    after: Option<&(Uuid, String, String)>,
    limit: i64,
) -> sqlx::Result<Vec<(Uuid, String, String)>> {
    let (w, a, s) = match after {
        Some((w, a, s)) => (Some(*w), Some(a.as_str()), Some(s.as_str())),
        None => (None, None, None),
    };
    let (sw, sa) = scope_parts(scope);
    let rows = sqlx::query!(
        r#"SELECT workspace_id, agent_id, subject FROM bdi_beliefs
           WHERE certainty > $4
             AND ($1::uuid IS NULL OR (workspace_id, agent_id, subject) > ($1, $2::text, $3::text))
             AND workspace_id = $6 AND ($7::text IS NULL OR agent_id = $7)
           GROUP BY workspace_id, agent_id, subject HAVING count(*) > 1
           ORDER BY workspace_id, agent_id, subject LIMIT $5"#,
        w,
        a,
        s,
        coordinator_core::bdi::CONFLICT_CERTAINTY,
        limit,
        sw,
        sa
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.workspace_id, r.agent_id, r.subject))
        .collect())
}

/// The beliefs of one (workspace, agent, subject) group above the conflict certainty.
pub async fn group_beliefs(
    conn: &mut PgConnection,
    key: &(Uuid, String, String),
) -> sqlx::Result<Vec<BeliefView>> {
    sqlx::query_as!(
        BeliefView,
        "SELECT id, agent_id, category, subject, content, certainty, conflict, version, created_at, updated_at
         FROM bdi_beliefs WHERE workspace_id = $1 AND agent_id = $2 AND subject = $3 AND certainty > $4
         ORDER BY id",
        key.0,
        key.1,
        key.2,
        coordinator_core::bdi::CONFLICT_CERTAINTY
    )
    .fetch_all(conn)
    .await
}

/// Records a conflict report for today; false when the pair was reported today already.
pub async fn insert_conflict(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    a: &BeliefView,
    b: &BeliefView,
) -> sqlx::Result<bool> {
    let n = sqlx::query!(
        "INSERT INTO bdi_conflicts (workspace_id, agent_id, subject, belief_a, belief_b, content_a, content_b,
                                    certainty_a, certainty_b, detected_on)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, (now() AT TIME ZONE 'UTC')::date)
         ON CONFLICT (workspace_id, belief_a, belief_b, detected_on) DO NOTHING",
        workspace_id,
        a.agent_id,
        a.subject,
        a.id,
        b.id,
        a.content,
        b.content,
        a.certainty,
        b.certainty
    )
    .execute(conn)
    .await?
    .rows_affected();
    Ok(n == 1)
}

/// Ties today's unattributed conflict reports in the scope to the cycle that found them.
pub async fn attribute_conflicts(
    conn: &mut PgConnection,
    cycle_id: i64,
    since: OffsetDateTime,
    scope: Scope<'_>,
) -> sqlx::Result<()> {
    let (w, a) = scope_parts(scope);
    sqlx::query!(
        "UPDATE bdi_conflicts SET cycle_id = $1 WHERE cycle_id IS NULL AND detected_at >= $2
           AND workspace_id = $3 AND ($4::text IS NULL OR agent_id = $4)",
        cycle_id,
        since,
        w,
        a
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// The counts of a finished cycle.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CycleCounts {
    /// Intentions marked.
    pub intentions_pruned: i32,
    /// Desires changed.
    pub desires_resorted: i32,
    /// Beliefs compared.
    pub beliefs_scanned: i32,
    /// Chunks.
    pub belief_chunks: i32,
    /// New conflicts.
    pub conflicts_found: i32,
}

/// Writes the audit record of the job's cycle over a workspace.
pub async fn insert_cycle(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    started_at: OffsetDateTime,
    replica: &str,
    c: CycleCounts,
) -> sqlx::Result<CycleView> {
    sqlx::query_as!(
        CycleView,
        "INSERT INTO bdi_cycles (started_at, replica, intentions_pruned, desires_resorted, beliefs_scanned,
                                 belief_chunks, conflicts_found, workspace_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         RETURNING id, started_at, finished_at, replica, intentions_pruned, desires_resorted, beliefs_scanned,
                   belief_chunks, conflicts_found",
        started_at,
        replica,
        c.intentions_pruned,
        c.desires_resorted,
        c.beliefs_scanned,
        c.belief_chunks,
        c.conflicts_found,
        workspace_id
    )
    .fetch_one(conn)
    .await
}

/// An agent's own cycle (`bdi_cycle`): its audit record, with what each phase did.
pub async fn insert_agent_cycle(
    conn: &mut PgConnection,
    started_at: OffsetDateTime,
    replica: &str,
    (workspace_id, agent_id): (Uuid, &str),
    c: CycleCounts,
    phases: &serde_json::Value,
) -> sqlx::Result<i64> {
    sqlx::query_scalar!(
        "INSERT INTO bdi_cycles (started_at, replica, intentions_pruned, desires_resorted, beliefs_scanned,
                                 belief_chunks, conflicts_found, workspace_id, agent_id, phases)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         RETURNING id",
        started_at,
        replica,
        c.intentions_pruned,
        c.desires_resorted,
        c.beliefs_scanned,
        c.belief_chunks,
        c.conflicts_found,
        workspace_id,
        agent_id,
        phases
    )
    .fetch_one(conn)
    .await
}

/// The job's latest cycle over the workspace (agents' own cycles are not it).
pub async fn last_cycle(
    conn: &mut PgConnection,
    workspace_id: Uuid,
) -> sqlx::Result<Option<CycleView>> {
    sqlx::query_as!(
        CycleView,
        "SELECT id, started_at, finished_at, replica, intentions_pruned, desires_resorted, beliefs_scanned,
                belief_chunks, conflicts_found
         FROM bdi_cycles WHERE workspace_id = $1 AND agent_id IS NULL ORDER BY id DESC LIMIT 1",
        workspace_id
    )
    .fetch_optional(conn)
    .await
}

/// Conflict reports of a workspace for one UTC day.
pub async fn conflicts_on(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    day: Date,
) -> sqlx::Result<Vec<ConflictView>> {
    sqlx::query_as!(
        ConflictView,
        "SELECT id, agent_id, subject, belief_a, belief_b, content_a, content_b, certainty_a, certainty_b,
                detected_at, cycle_id
         FROM bdi_conflicts WHERE workspace_id = $1 AND detected_on = $2 ORDER BY id LIMIT 5000",
        workspace_id,
        day
    )
    .fetch_all(conn)
    .await
}

/// A mission's autonomy and explicit commitment strategy, locked.
pub async fn mission_commitment(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    mission_id: Uuid,
) -> sqlx::Result<Option<(String, Option<String>)>> {
    let r = sqlx::query!(
        "SELECT autonomy, commitment_strategy FROM orchestration_runs WHERE workspace_id = $1 AND id = $2",
        workspace_id,
        mission_id
    )
    .fetch_optional(conn)
    .await?;
    Ok(r.map(|r| (r.autonomy, r.commitment_strategy)))
}

/// Sets a mission's explicit commitment strategy (`None` derives it from autonomy again).
pub async fn set_mission_commitment(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    mission_id: Uuid,
    strategy: Option<&str>,
) -> sqlx::Result<bool> {
    let n = sqlx::query!(
        "UPDATE orchestration_runs SET commitment_strategy = $3, version = version + 1, updated_at = now()
         WHERE workspace_id = $1 AND id = $2",
        workspace_id,
        mission_id,
        strategy
    )
    .execute(conn)
    .await?
    .rows_affected();
    Ok(n == 1)
}

/// The workspaces with any BDI state (intentions, desires or beliefs), in id
/// order: the scheduled job's cycle covers each in turn.
pub async fn workspaces_with_state(conn: &mut PgConnection) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar!(
        "SELECT w.id FROM workspaces w
         WHERE EXISTS (SELECT 1 FROM bdi_intentions i WHERE i.workspace_id = w.id)
            OR EXISTS (SELECT 1 FROM bdi_desires d WHERE d.workspace_id = w.id)
            OR EXISTS (SELECT 1 FROM bdi_beliefs b WHERE b.workspace_id = w.id)
         ORDER BY w.id"
    )
    .fetch_all(conn)
    .await
}
