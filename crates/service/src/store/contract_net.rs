//! SQL of the contract net: tenders, proposals, and the task and queue
//! writes of an award.

use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

/// A tender row.
#[derive(Debug, Clone)]
pub struct TenderRow {
    /// Id.
    pub id: Uuid,
    /// Workspace.
    pub workspace_id: Uuid,
    /// Mission.
    pub mission_id: Uuid,
    /// Task.
    pub task_id: Uuid,
    /// Who opened it.
    pub initiator: String,
    /// The work.
    pub description: String,
    /// Skills filter.
    pub required_skills: Vec<String>,
    /// Agents asked.
    pub eligible_agents: Vec<String>,
    /// Proposal deadline.
    pub deadline: OffsetDateTime,
    /// The deadline has passed (by the database's clock).
    pub past_deadline: bool,
    /// `open`, `awarded` or `no_proposals`.
    pub status: String,
    /// Winner.
    pub winner_agent_id: Option<String>,
    /// Closed at.
    pub closed_at: Option<OffsetDateTime>,
    /// Write guard.
    pub version: i64,
    /// Opened.
    pub created_at: OffsetDateTime,
}

/// What [`insert_tender`] writes.
pub struct NewTender<'a> {
    /// Id.
    pub id: Uuid,
    /// Workspace.
    pub workspace_id: Uuid,
    /// Mission.
    pub mission_id: Uuid,
    /// Task.
    pub task_id: Uuid,
    /// Who opens it.
    pub initiator: &'a str,
    /// The work.
    pub description: &'a str,
    /// Skills filter.
    pub required_skills: &'a [String],
    /// Agents asked.
    pub eligible_agents: &'a [String],
    /// Window from now, in ms.
    pub window_ms: i32,
}

/// Opens a tender; `None` when the task already has an open one.
pub async fn insert_tender(
    conn: &mut PgConnection,
    t: NewTender<'_>,
) -> sqlx::Result<Option<TenderRow>> {
    sqlx::query_as!(
        TenderRow,
        r#"INSERT INTO tenders (id, workspace_id, mission_id, task_id, initiator, description,
                               required_skills, eligible_agents, deadline)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now() + make_interval(secs => $9::float8 / 1000.0))
           ON CONFLICT (task_id) WHERE status = 'open' DO NOTHING
           RETURNING id, workspace_id, mission_id, task_id, initiator, description, required_skills,
                     eligible_agents, deadline, deadline <= clock_timestamp() AS "past_deadline!",
                     status, winner_agent_id, closed_at, version, created_at"#,
        t.id,
        t.workspace_id,
        t.mission_id,
        t.task_id,
        t.initiator,
        t.description,
        t.required_skills,
        t.eligible_agents,
        f64::from(t.window_ms)
    )
    .fetch_optional(conn)
    .await
}

/// One tender.
pub async fn get_tender(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
) -> sqlx::Result<Option<TenderRow>> {
    sqlx::query_as!(
        TenderRow,
        r#"SELECT id, workspace_id, mission_id, task_id, initiator, description, required_skills,
                  eligible_agents, deadline, deadline <= clock_timestamp() AS "past_deadline!",
                  status, winner_agent_id, closed_at, version, created_at
           FROM tenders WHERE workspace_id = $1 AND id = $2"#,
        workspace_id,
        id
    )
    .fetch_optional(conn)
    .await
}

/// One tender, locked.
pub async fn lock_tender(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
) -> sqlx::Result<Option<TenderRow>> {
    sqlx::query_as!(
        TenderRow,
        r#"SELECT id, workspace_id, mission_id, task_id, initiator, description, required_skills,
                  eligible_agents, deadline, deadline <= clock_timestamp() AS "past_deadline!",
                  status, winner_agent_id, closed_at, version, created_at
           FROM tenders WHERE workspace_id = $1 AND id = $2 FOR UPDATE"#,
        workspace_id,
        id
    )
    .fetch_optional(conn)
    .await
}

/// The task's latest tender, locked.
pub async fn lock_latest_for_task(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    task_id: Uuid,
) -> sqlx::Result<Option<TenderRow>> {
    sqlx::query_as!(
        TenderRow,
        r#"SELECT id, workspace_id, mission_id, task_id, initiator, description, required_skills,
                  eligible_agents, deadline, deadline <= clock_timestamp() AS "past_deadline!",
                  status, winner_agent_id, closed_at, version, created_at
           FROM tenders WHERE workspace_id = $1 AND task_id = $2
           ORDER BY created_at DESC, id LIMIT 1 FOR UPDATE"#,
        workspace_id,
        task_id
    )
    .fetch_optional(conn)
    .await
}

/// Tenders of a workspace, newest first.
pub async fn list_tenders(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    mission_id: Option<Uuid>,
    status: Option<&str>,
    limit: i64,
) -> sqlx::Result<Vec<TenderRow>> {
    sqlx::query_as!(
        TenderRow,
        r#"SELECT id, workspace_id, mission_id, task_id, initiator, description, required_skills,
                  eligible_agents, deadline, deadline <= clock_timestamp() AS "past_deadline!",
                  status, winner_agent_id, closed_at, version, created_at
           FROM tenders
           WHERE workspace_id = $1 AND ($2::uuid IS NULL OR mission_id = $2)
             AND ($3::text IS NULL OR status = $3)
           ORDER BY created_at DESC, id LIMIT $4"#,
        workspace_id,
        mission_id,
        status,
        limit
    )
    .fetch_all(conn)
    .await
}

/// What [`close_tender`] writes.
pub struct Close<'a> {
    /// Workspace.
    pub workspace_id: Uuid,
    /// Tender.
    pub id: Uuid,
    /// The version read.
    pub version: i64,
    /// `awarded` or `no_proposals`.
    pub status: &'a str,
    /// Winner.
    pub winner: Option<&'a str>,
    /// Winning proposal.
    pub winning_proposal: Option<Uuid>,
    /// Ranking and criteria.
    pub details: &'a Value,
    /// Who closes it.
    pub actor: &'a str,
}

/// Closes an open tender, guarded by version and status; `None` if it moved.
pub async fn close_tender(
    conn: &mut PgConnection,
    c: Close<'_>,
) -> sqlx::Result<Option<TenderRow>> {
    sqlx::query_as!(
        TenderRow,
        r#"UPDATE tenders
           SET status = $4, winner_agent_id = $5, winning_proposal = $6, award_details = $7,
               closed_by = $8, closed_at = now(), version = version + 1
           WHERE workspace_id = $1 AND id = $2 AND version = $3 AND status = 'open'
           RETURNING id, workspace_id, mission_id, task_id, initiator, description, required_skills,
                     eligible_agents, deadline, deadline <= clock_timestamp() AS "past_deadline!",
                     status, winner_agent_id, closed_at, version, created_at"#,
        c.workspace_id,
        c.id,
        c.version,
        c.status,
        c.winner,
        c.winning_proposal,
        c.details,
        c.actor
    )
    .fetch_optional(conn)
    .await
}

/// A proposal row.
#[derive(Debug, Clone)]
pub struct ProposalRow {
    /// Id.
    pub id: Uuid,
    /// Tender.
    pub tender_id: Uuid,
    /// Proposer.
    pub agent_id: String,
    /// Capability match (capped).
    pub capability_match: f64,
    /// Matched skills.
    pub matched_skills: Vec<String>,
    /// Extra skills.
    pub additional_skills: Vec<String>,
    /// Duration estimate.
    pub estimated_effort: f64,
    /// Cost estimate.
    pub estimated_cost: f64,
    /// Confidence.
    pub confidence: f64,
    /// Conditions.
    pub conditions: Vec<String>,
    /// `api` or `endpoint`.
    pub via: String,
    /// Received.
    pub submitted_at: OffsetDateTime,
}

/// What [`insert_proposal`] writes.
pub struct NewProposal<'a> {
    /// Id.
    pub id: Uuid,
    /// Tender.
    pub tender_id: Uuid,
    /// Workspace.
    pub workspace_id: Uuid,
    /// Proposer.
    pub agent_id: &'a str,
    /// Capability match (capped).
    pub capability_match: f64,
    /// Matched skills.
    pub matched_skills: &'a [String],
    /// Extra skills.
    pub additional_skills: &'a [String],
    /// Duration estimate.
    pub estimated_effort: f64,
    /// Cost estimate.
    pub estimated_cost: f64,
    /// Confidence.
    pub confidence: f64,
    /// Conditions.
    pub conditions: &'a [String],
    /// `api` or `endpoint`.
    pub via: &'a str,
    /// Who submitted it.
    pub submitted_by: &'a str,
}

/// Stores a proposal.
pub async fn insert_proposal(
    conn: &mut PgConnection,
    p: NewProposal<'_>,
) -> sqlx::Result<ProposalRow> {
    sqlx::query_as!(
        ProposalRow,
        "INSERT INTO tender_proposals (id, tender_id, workspace_id, agent_id, capability_match,
                matched_skills, additional_skills, estimated_effort, estimated_cost, confidence,
                conditions, via, submitted_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
         RETURNING id, tender_id, agent_id, capability_match, matched_skills, additional_skills,
                   estimated_effort, estimated_cost, confidence, conditions, via, submitted_at",
        p.id,
        p.tender_id,
        p.workspace_id,
        p.agent_id,
        p.capability_match,
        p.matched_skills,
        p.additional_skills,
        p.estimated_effort,
        p.estimated_cost,
        p.confidence,
        p.conditions,
        p.via,
        p.submitted_by
    )
    .fetch_one(conn)
    .await
}

/// An agent's skills, its row share-locked first: a claim locks agents
/// before tenders, so a proposal must too (its foreign key would otherwise
/// wait on the agent while holding the tender).
pub async fn lock_agent_skills(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
) -> sqlx::Result<Option<Vec<String>>> {
    sqlx::query_scalar!(
        "SELECT skills FROM agents WHERE workspace_id = $1 AND agent_id = $2 FOR KEY SHARE",
        workspace_id,
        agent_id
    )
    .fetch_optional(conn)
    .await
}

/// A tender's proposals, oldest first.
pub async fn proposals(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    tender_id: Uuid,
) -> sqlx::Result<Vec<ProposalRow>> {
    sqlx::query_as!(
        ProposalRow,
        "SELECT id, tender_id, agent_id, capability_match, matched_skills, additional_skills,
                estimated_effort, estimated_cost, confidence, conditions, via, submitted_at
         FROM tender_proposals WHERE workspace_id = $1 AND tender_id = $2
         ORDER BY submitted_at, agent_id",
        workspace_id,
        tender_id
    )
    .fetch_all(conn)
    .await
}

/// An agent's proposal on a tender.
pub async fn proposal_of(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    tender_id: Uuid,
    agent_id: &str,
) -> sqlx::Result<Option<ProposalRow>> {
    sqlx::query_as!(
        ProposalRow,
        "SELECT id, tender_id, agent_id, capability_match, matched_skills, additional_skills,
                estimated_effort, estimated_cost, confidence, conditions, via, submitted_at
         FROM tender_proposals WHERE workspace_id = $1 AND tender_id = $2 AND agent_id = $3",
        workspace_id,
        tender_id,
        agent_id
    )
    .fetch_optional(conn)
    .await
}

/// Pins a task to the tender's winner. Not a status transition, so no
/// version bump: the caller holds the mission (and, in a claim, the queue
/// row), and a claim's version guard must still match its own read.
pub async fn pin_task(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    task_id: Uuid,
    agent_id: &str,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE orchestration_tasks SET pinned_agent_id = $3, updated_at = now()
         WHERE workspace_id = $1 AND id = $2",
        workspace_id,
        task_id,
        agent_id
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Moves a task's queue entry to `ready_at` (the tender's deadline), at most
/// [`RECHECK_SECS`] ahead, if it has one.
pub async fn push_queue_entry(
    conn: &mut PgConnection,
    task_id: Uuid,
    ready_at: Option<OffsetDateTime>,
) -> sqlx::Result<()> {
    // Never further than RECHECK_SECS ahead: the early wake when the last
    // proposal arrives skips a queue row someone holds, and this bound turns
    // such a lost wake into a short delay instead of a wait for the deadline.
    sqlx::query!(
        "UPDATE task_queue SET ready_at = LEAST(COALESCE($2, now()), now() + make_interval(secs => $3))
         WHERE task_id = $1",
        task_id,
        ready_at,
        RECHECK_SECS
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Longest wait before a held task's tender is looked at again.
pub const RECHECK_SECS: f64 = 2.0;

/// Makes a task's queue entry due now, unless a claim holds it (which then
/// sees the tender as it is anyway).
pub async fn wake_queue_entry(conn: &mut PgConnection, task_id: Uuid) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE task_queue SET ready_at = now()
         WHERE task_id = (SELECT task_id FROM task_queue WHERE task_id = $1 FOR UPDATE SKIP LOCKED)",
        task_id
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// Marks a task as allocated by tender.
pub async fn set_task_allocation(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    task_id: Uuid,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE orchestration_tasks SET allocation = 'tender', updated_at = now()
         WHERE workspace_id = $1 AND id = $2",
        workspace_id,
        task_id
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// A mission's tender window.
pub async fn mission_window(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    mission_id: Uuid,
) -> sqlx::Result<i32> {
    sqlx::query_scalar!(
        "SELECT tender_window_ms FROM orchestration_runs WHERE workspace_id = $1 AND id = $2",
        workspace_id,
        mission_id
    )
    .fetch_one(conn)
    .await
}

/// Sets a mission's allocation (and window); returns the window in force.
pub async fn set_mission_allocation(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    mission_id: Uuid,
    allocation: &str,
    window_ms: Option<i32>,
) -> sqlx::Result<i32> {
    sqlx::query_scalar!(
        "UPDATE orchestration_runs
         SET allocation = $3, tender_window_ms = COALESCE($4, tender_window_ms), updated_at = now()
         WHERE workspace_id = $1 AND id = $2
         RETURNING tender_window_ms",
        workspace_id,
        mission_id,
        allocation,
        window_ms
    )
    .fetch_one(conn)
    .await
}

/// A tender whose workers are to be asked, with their endpoints.
#[derive(Debug, Clone)]
pub struct Solicitation {
    /// Workspace.
    pub workspace_id: Uuid,
    /// Tender.
    pub tender_id: Uuid,
    /// Mission.
    pub mission_id: Uuid,
    /// Task.
    pub task_id: Uuid,
    /// What the work is.
    pub task: Value,
    /// Deadline.
    pub deadline: OffsetDateTime,
    /// `(agent_id, endpoint_url)` of each eligible agent.
    pub endpoints: Vec<(String, String)>,
}

/// Claims up to `limit` open tenders not yet solicited (across workspaces,
/// for the engine) and marks them solicited, so each is solicited once.
pub async fn claim_unsolicited(pool: &PgPool, limit: i64) -> sqlx::Result<Vec<Solicitation>> {
    let mut tx = pool.begin().await?;
    let rows = sqlx::query!(
        "UPDATE tenders SET solicited_at = now()
         WHERE id IN (SELECT id FROM tenders WHERE status = 'open' AND solicited_at IS NULL
                      ORDER BY created_at LIMIT $1 FOR UPDATE SKIP LOCKED)
         RETURNING id, workspace_id, mission_id, task_id, eligible_agents, deadline",
        limit
    )
    .fetch_all(&mut *tx)
    .await?;
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let task = sqlx::query!(
            "SELECT task_key, title, description, task_type, required_skills, required_tools, estimated_cost
             FROM orchestration_tasks WHERE workspace_id = $1 AND id = $2",
            r.workspace_id,
            r.task_id
        )
        .fetch_optional(&mut *tx)
        .await?;
        let Some(task) = task else { continue };
        let endpoints = sqlx::query!(
            "SELECT agent_id, endpoint_url FROM agents
             WHERE workspace_id = $1 AND agent_id = ANY($2) ORDER BY agent_id",
            r.workspace_id,
            &r.eligible_agents
        )
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .map(|a| (a.agent_id, a.endpoint_url))
        .collect();
        out.push(Solicitation {
            workspace_id: r.workspace_id,
            tender_id: r.id,
            mission_id: r.mission_id,
            task_id: r.task_id,
            task: json!({
                "key": task.task_key, "title": task.title, "description": task.description,
                "task_type": task.task_type, "required_skills": task.required_skills,
                "required_tools": task.required_tools, "estimated_cost": task.estimated_cost,
            }),
            deadline: r.deadline,
            endpoints,
        });
    }
    tx.commit().await?;
    Ok(out)
}
