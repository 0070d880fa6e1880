//! SQL of team decisions and their votes. Closing a decision (commit or
//! cancel) is guarded by `status = 'open'` and `version`, so the last voter,
//! a reader closing an overdue window and a canceller cannot all win.

use serde_json::Value;
use sqlx::PgConnection;
use time::OffsetDateTime;
use uuid::Uuid;

/// A vote as stored; pure, so the ADR rendering in the core can read it.
pub use coordinator_core::team_decisions::VoteRow;

/// A team decision row.
#[derive(Debug, Clone)]
pub struct TeamDecisionRow {
    /// Id.
    pub id: Uuid,
    /// Workspace.
    pub workspace_id: Uuid,
    /// Mission.
    pub mission_id: Uuid,
    /// Task that raised it.
    pub task_id: Option<Uuid>,
    /// Who proposed it (actor).
    pub proposer: String,
    /// What is decided.
    pub topic: String,
    /// `[{label, description}]`.
    pub options: Value,
    /// Evidence, one item per entry.
    pub evidence: Vec<String>,
    /// The proposer's recommendation (breaks ties).
    pub recommended_option: Option<String>,
    /// Agents that may vote.
    pub eligible: Vec<String>,
    /// When voting ends.
    pub closes_at: OffsetDateTime,
    /// `open`, `committed` or `cancelled`.
    pub status: String,
    /// The chosen option.
    pub committed_option: Option<String>,
    /// Whether the orchestrator rule broke a tie.
    pub tie_broken: bool,
    /// Votes per option at commit.
    pub tally: Value,
    /// Why it closed so.
    pub rationale: Option<String>,
    /// The ADR (markdown), once committed.
    pub adr: Option<String>,
    /// Who closed it.
    pub closed_by: Option<String>,
    /// When.
    pub closed_at: Option<OffsetDateTime>,
    /// Write guard.
    pub version: i64,
    /// Proposed.
    pub created_at: OffsetDateTime,
}

/// What [`insert`] writes.
pub struct NewTeamDecision<'a> {
    /// Id.
    pub id: Uuid,
    /// Workspace.
    pub workspace_id: Uuid,
    /// Mission.
    pub mission_id: Uuid,
    /// Task.
    pub task_id: Option<Uuid>,
    /// Proposer.
    pub proposer: &'a str,
    /// Topic.
    pub topic: &'a str,
    /// Options.
    pub options: &'a Value,
    /// Evidence.
    pub evidence: &'a [String],
    /// Recommendation.
    pub recommended_option: Option<&'a str>,
    /// Voters.
    pub eligible: &'a [String],
    /// Window, in seconds.
    pub window_secs: f64,
}

/// Inserts a decision; `None` when the id is taken.
pub async fn insert(
    conn: &mut PgConnection,
    d: NewTeamDecision<'_>,
) -> sqlx::Result<Option<TeamDecisionRow>> {
    sqlx::query_as!(
        TeamDecisionRow,
        "INSERT INTO team_decisions (id, workspace_id, mission_id, task_id, proposer, topic, options,
                evidence, recommended_option, eligible, closes_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now() + make_interval(secs => $11))
         ON CONFLICT (id) DO NOTHING
         RETURNING id, workspace_id, mission_id, task_id, proposer, topic, options, evidence,
                   recommended_option, eligible, closes_at, status, committed_option, tie_broken,
                   tally, rationale, adr, closed_by, closed_at, version, created_at",
        d.id,
        d.workspace_id,
        d.mission_id,
        d.task_id,
        d.proposer,
        d.topic,
        d.options,
        d.evidence,
        d.recommended_option,
        d.eligible,
        d.window_secs
    )
    .fetch_optional(conn)
    .await
}

/// One decision of a workspace, optionally locked for an update.
pub async fn get(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
    lock: bool,
) -> sqlx::Result<Option<TeamDecisionRow>> {
    if lock {
        return sqlx::query_as!(
            TeamDecisionRow,
            "SELECT id, workspace_id, mission_id, task_id, proposer, topic, options, evidence,
                    recommended_option, eligible, closes_at, status, committed_option, tie_broken,
                    tally, rationale, adr, closed_by, closed_at, version, created_at
             FROM team_decisions WHERE id = $1 AND workspace_id = $2 FOR UPDATE",
            id,
            workspace_id
        )
        .fetch_optional(conn)
        .await;
    }
    sqlx::query_as!(
        TeamDecisionRow,
        "SELECT id, workspace_id, mission_id, task_id, proposer, topic, options, evidence,
                recommended_option, eligible, closes_at, status, committed_option, tie_broken,
                tally, rationale, adr, closed_by, closed_at, version, created_at
         FROM team_decisions WHERE id = $1 AND workspace_id = $2",
        id,
        workspace_id
    )
    .fetch_optional(conn)
    .await
}

/// A mission's decisions, oldest first.
pub async fn list_for_mission(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    mission_id: Uuid,
) -> sqlx::Result<Vec<TeamDecisionRow>> {
    sqlx::query_as!(
        TeamDecisionRow,
        "SELECT id, workspace_id, mission_id, task_id, proposer, topic, options, evidence,
                recommended_option, eligible, closes_at, status, committed_option, tie_broken,
                tally, rationale, adr, closed_by, closed_at, version, created_at
         FROM team_decisions WHERE workspace_id = $1 AND mission_id = $2
         ORDER BY created_at, id",
        workspace_id,
        mission_id
    )
    .fetch_all(conn)
    .await
}

/// Ids of a mission's open decisions whose window has closed.
pub async fn overdue(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    mission_id: Uuid,
) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar!(
        "SELECT id FROM team_decisions
         WHERE workspace_id = $1 AND mission_id = $2 AND status = 'open' AND closes_at <= now()
         ORDER BY closes_at",
        workspace_id,
        mission_id
    )
    .fetch_all(conn)
    .await
}

/// Open decisions of any workspace whose window has closed, earliest first,
/// at most `limit`: (workspace, decision). The partial index
/// `team_decisions_open` holds only open rows.
pub async fn overdue_everywhere(
    conn: &mut PgConnection,
    limit: i64,
) -> sqlx::Result<Vec<(Uuid, Uuid)>> {
    Ok(sqlx::query!(
        "SELECT workspace_id, id FROM team_decisions
         WHERE status = 'open' AND closes_at <= now()
         ORDER BY closes_at
         LIMIT $1",
        limit
    )
    .fetch_all(conn)
    .await?
    .into_iter()
    .map(|r| (r.workspace_id, r.id))
    .collect())
}

/// Whether the window of an open decision has closed (by the database's clock).
pub async fn window_closed(conn: &mut PgConnection, id: Uuid) -> sqlx::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT closes_at <= now() AS "closed!" FROM team_decisions WHERE id = $1"#,
        id
    )
    .fetch_one(conn)
    .await
}

/// The votes of a decision, by agent.
pub async fn votes(conn: &mut PgConnection, decision_id: Uuid) -> sqlx::Result<Vec<VoteRow>> {
    sqlx::query_as!(
        VoteRow,
        "SELECT agent_id, option, rationale, cast_at FROM team_decision_votes
         WHERE decision_id = $1 ORDER BY agent_id",
        decision_id
    )
    .fetch_all(conn)
    .await
}

/// Casts or changes a vote.
pub async fn upsert_vote(
    conn: &mut PgConnection,
    decision_id: Uuid,
    agent_id: &str,
    option: &str,
    rationale: Option<&str>,
) -> sqlx::Result<()> {
    sqlx::query!(
        "INSERT INTO team_decision_votes (decision_id, agent_id, option, rationale)
         VALUES ($1, $2, $3, $4)
         ON CONFLICT (decision_id, agent_id) DO UPDATE
             SET option = EXCLUDED.option, rationale = EXCLUDED.rationale, cast_at = now()",
        decision_id,
        agent_id,
        option,
        rationale
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// How a decision closes.
pub struct Close<'a> {
    /// `committed` or `cancelled`.
    pub status: &'a str,
    /// Chosen option (commit).
    pub committed_option: Option<&'a str>,
    /// Tie broken?
    pub tie_broken: bool,
    /// Tally.
    pub tally: &'a Value,
    /// Why.
    pub rationale: &'a str,
    /// The ADR (commit).
    pub adr: Option<&'a str>,
    /// Who.
    pub closed_by: &'a str,
    /// When (the ADR names the same instant).
    pub closed_at: OffsetDateTime,
}

/// Closes an open decision at `version`; `None` when someone else got there first.
pub async fn close(
    conn: &mut PgConnection,
    id: Uuid,
    version: i64,
    c: Close<'_>,
) -> sqlx::Result<Option<TeamDecisionRow>> {
    sqlx::query_as!(
        TeamDecisionRow,
        "UPDATE team_decisions
         SET status = $3, committed_option = $4, tie_broken = $5, tally = $6, rationale = $7,
             adr = $8, closed_by = $9, closed_at = $10, version = version + 1
         WHERE id = $1 AND version = $2 AND status = 'open'
         RETURNING id, workspace_id, mission_id, task_id, proposer, topic, options, evidence,
                   recommended_option, eligible, closes_at, status, committed_option, tie_broken,
                   tally, rationale, adr, closed_by, closed_at, version, created_at",
        id,
        version,
        c.status,
        c.committed_option,
        c.tie_broken,
        c.tally,
        c.rationale,
        c.adr,
        c.closed_by,
        c.closed_at
    )
    .fetch_optional(conn)
    .await
}

/// Agents assigned to tasks of the mission (the default electorate).
pub async fn mission_agents(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    mission_id: Uuid,
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar!(
        r#"SELECT DISTINCT assigned_agent_id AS "agent!" FROM orchestration_tasks
           WHERE workspace_id = $1 AND run_id = $2 AND assigned_agent_id IS NOT NULL
           ORDER BY 1"#,
        workspace_id,
        mission_id
    )
    .fetch_all(conn)
    .await
}

/// Whether the task belongs to the mission.
pub async fn task_in_mission(
    conn: &mut PgConnection,
    mission_id: Uuid,
    task_id: Uuid,
) -> sqlx::Result<bool> {
    sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM orchestration_tasks WHERE id = $1 AND run_id = $2) AS "ok!""#,
        task_id,
        mission_id
    )
    .fetch_one(conn)
    .await
}
