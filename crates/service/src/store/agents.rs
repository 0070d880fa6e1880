//! The agent registry.
//!
//! `running_count` is raised when an attempt is created, guarded by
//! `max_concurrency`, so no agent ever holds more live attempts than its
//! cap, whatever the replica count. It is lowered when the attempt ends: in
//! the same transaction on the rare paths (failures, cancels, expired
//! leases), and, for attempts whose worker answered, through
//! `agent_slot_returns`, which the next claim on the agent (or the engine's
//! periodic [`fold_returns`]) folds in; readers subtract what is pending.

use std::collections::BTreeMap;

use serde::Serialize;
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

use coordinator_core::{assignment::AgentProfile, organisation::Deontic};

/// An agent as stored and shown.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct AgentRow {
    /// Stable, unique id within the workspace.
    pub agent_id: String,
    /// Role (free text, e.g. `researcher`).
    pub role: String,
    /// A name for people, if given.
    pub display_name: Option<String>,
    /// `roster` or `contractor`.
    pub kind: String,
    /// Skills.
    pub skills: Vec<String>,
    /// Tools.
    pub tools: Vec<String>,
    /// Model name, if any.
    pub model: Option<String>,
    /// Model tier (higher is stronger).
    pub model_tier: i32,
    /// Worker base URL.
    pub endpoint_url: String,
    /// Concurrency cap.
    pub max_concurrency: i32,
    /// Live attempts now.
    pub running_count: i32,
    /// Trust in [0, 1].
    pub trust: f64,
    /// Cost per task.
    pub cost_per_task: f64,
    /// `idle`, `working`, `blocked`, `done`, `offline` or `retired`.
    #[schema(value_type = coordinator_core::agents::AgentStatus)]
    pub status: String,
    /// Heartbeat promise in seconds (`None`: not monitored).
    pub heartbeat_timeout_secs: Option<i32>,
    /// The version of its description: each PATCH and retirement adds one
    /// (its load and heartbeats do not), and a PATCH may name it to guard
    /// against a concurrent change.
    pub version: i64,
    /// Last heartbeat.
    #[serde(with = "time::serde::rfc3339::option")]
    pub last_seen_at: Option<OffsetDateTime>,
    /// When it was retired, if it is.
    #[serde(with = "time::serde::rfc3339::option")]
    pub retired_at: Option<OffsetDateTime>,
    /// Registered.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// A registration.
pub struct NewAgent<'a> {
    /// Id.
    pub agent_id: &'a str,
    /// Role.
    pub role: &'a str,
    /// Name for people.
    pub display_name: Option<&'a str>,
    /// Skills.
    pub skills: &'a [String],
    /// Tools.
    pub tools: &'a [String],
    /// Model.
    pub model: Option<&'a str>,
    /// Tier.
    pub model_tier: i32,
    /// Worker URL.
    pub endpoint_url: &'a str,
    /// Cap.
    pub max_concurrency: i32,
    /// Trust.
    pub trust: f64,
    /// Cost.
    pub cost_per_task: f64,
    /// Heartbeat promise in seconds.
    pub heartbeat_timeout_secs: Option<i32>,
}

/// Registers an agent; `None` if the id is taken (the caller answers 409).
pub async fn insert(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    a: NewAgent<'_>,
) -> sqlx::Result<Option<AgentRow>> {
    sqlx::query_as!(
        AgentRow,
        r#"INSERT INTO agents (workspace_id, agent_id, role, skills, tools, model, model_tier,
                               endpoint_url, max_concurrency, trust, cost_per_task, last_seen_at,
                               heartbeat_timeout_secs, display_name)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, now(), $12, $13)
           ON CONFLICT (workspace_id, agent_id) DO NOTHING
           RETURNING agent_id, role, display_name, kind, skills, tools, model, model_tier, endpoint_url,
                     max_concurrency, running_count, trust, cost_per_task, status, heartbeat_timeout_secs,
                     profile_version AS version, last_seen_at, retired_at, created_at"#,
        workspace_id,
        a.agent_id,
        a.role,
        a.skills,
        a.tools,
        a.model,
        a.model_tier,
        a.endpoint_url,
        a.max_concurrency,
        a.trust,
        a.cost_per_task,
        a.heartbeat_timeout_secs,
        a.display_name
    )
    .fetch_optional(conn)
    .await
}

/// All agents of a workspace by id.
pub async fn list(pool: &PgPool, workspace_id: Uuid) -> sqlx::Result<Vec<AgentRow>> {
    sqlx::query_as!(
        AgentRow,
        r#"SELECT agent_id, role, display_name, kind, skills, tools, model, model_tier, endpoint_url,
                  max_concurrency, running AS "running_count!", trust, cost_per_task,
                  CASE WHEN status = 'working' AND running = 0 THEN 'idle' ELSE status END AS "status!",
                  heartbeat_timeout_secs, profile_version AS version, last_seen_at, retired_at, created_at
           FROM agents,
                LATERAL (SELECT GREATEST(running_count - agent_pending_slots(workspace_id, agent_id), 0) AS running) p
           WHERE workspace_id = $1 ORDER BY agent_id"#,
        workspace_id
    )
    .fetch_all(pool)
    .await
}

/// One agent.
pub async fn get(
    pool: &PgPool,
    workspace_id: Uuid,
    agent_id: &str,
) -> sqlx::Result<Option<AgentRow>> {
    sqlx::query_as!(
        AgentRow,
        r#"SELECT agent_id, role, display_name, kind, skills, tools, model, model_tier, endpoint_url,
                  max_concurrency, running AS "running_count!", trust, cost_per_task,
                  CASE WHEN status = 'working' AND running = 0 THEN 'idle' ELSE status END AS "status!",
                  heartbeat_timeout_secs, profile_version AS version, last_seen_at, retired_at, created_at
           FROM agents,
                LATERAL (SELECT GREATEST(running_count - agent_pending_slots(workspace_id, agent_id), 0) AS running) p
           WHERE workspace_id = $1 AND agent_id = $2"#,
        workspace_id,
        agent_id
    )
    .fetch_optional(pool)
    .await
}

/// An agent that could take work when the claim read it (not locked: the
/// claim's [`take_slots`] is what enforces the cap).
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Workspace.
    pub workspace_id: Uuid,
    /// For contractors: the only mission it works for.
    pub mission_id: Option<Uuid>,
    /// Worker URL.
    pub endpoint_url: String,
    /// Scoring view.
    pub profile: AgentProfile,
}

/// Every online roster agent with a free slot in the given workspaces, and
/// the contractors of `missions`, in key order. Read without locks, so
/// replicas claiming at once never wait on each other here.
pub async fn free_candidates(
    conn: &mut PgConnection,
    workspaces: &[Uuid],
    missions: &[Uuid],
) -> sqlx::Result<Vec<Candidate>> {
    // Past success per task type comes along as JSON ({type: [succeeded,
    // failed]}), so locking the candidates stays one round trip.
    let rows = sqlx::query!(
        r#"SELECT a.workspace_id, a.agent_id, a.role, a.skills, a.tools, a.trust, a.cost_per_task,
                  a.max_concurrency, p.running AS "running_count!", a.endpoint_url, a.model_tier, a.mission_id,
                  (SELECT jsonb_object_agg(s.task_type, jsonb_build_array(s.succeeded, s.failed))
                   FROM agent_task_stats s
                   WHERE s.workspace_id = a.workspace_id AND s.agent_id = a.agent_id) AS history
           FROM agents a,
                LATERAL (SELECT GREATEST(a.running_count - agent_pending_slots(a.workspace_id, a.agent_id), 0)
                                AS running) p
           WHERE a.workspace_id = ANY($1) AND a.status NOT IN ('offline', 'unreachable', 'retired')
             AND (a.kind = 'roster' OR (a.kind = 'contractor' AND a.mission_id = ANY($2)))
             AND p.running < a.max_concurrency
           ORDER BY a.workspace_id, a.agent_id"#,
        workspaces,
        missions
    )
    .fetch_all(&mut *conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| Candidate {
            workspace_id: r.workspace_id,
            mission_id: r.mission_id,
            endpoint_url: r.endpoint_url,
            profile: AgentProfile {
                history: parse_history(r.history),
                agent_id: r.agent_id,
                skills: r.skills,
                tools: r.tools,
                trust: r.trust,
                cost_per_task: r.cost_per_task,
                max_concurrency: r.max_concurrency,
                running: r.running_count,
                model_tier: r.model_tier,
                role: r.role,
                deontic: Deontic::Unconstrained,
            },
        })
        .collect())
}

/// `{type: [succeeded, failed]}` as a map (anything malformed is ignored).
fn parse_history(v: Option<serde_json::Value>) -> BTreeMap<String, (i64, i64)> {
    let Some(serde_json::Value::Object(m)) = v else {
        return BTreeMap::new();
    };
    m.into_iter()
        .filter_map(|(k, v)| {
            let a = v.as_array()?;
            Some((k, (a.first()?.as_i64()?, a.get(1)?.as_i64()?)))
        })
        .collect()
}

/// Every online roster agent of a workspace as the scorer sees it at zero
/// load (no locks): is anyone on the roster good enough for a task at all?
/// The mission's own contractors come along (flagged by `true`).
pub async fn roster_profiles(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    mission_id: Uuid,
) -> sqlx::Result<Vec<(AgentProfile, bool)>> {
    let rows = sqlx::query!(
        "SELECT agent_id, role, skills, tools, trust, cost_per_task, max_concurrency, model_tier,
                kind = 'contractor' AS \"contractor!\"
         FROM agents
         WHERE workspace_id = $1 AND status NOT IN ('offline', 'unreachable', 'retired')
           AND (kind = 'roster' OR mission_id = $2)
         ORDER BY agent_id",
        workspace_id,
        mission_id
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| {
            let profile = AgentProfile {
                agent_id: r.agent_id,
                skills: r.skills,
                tools: r.tools,
                trust: r.trust,
                cost_per_task: r.cost_per_task,
                max_concurrency: r.max_concurrency,
                running: 0,
                model_tier: r.model_tier,
                history: BTreeMap::new(),
                role: r.role,
                deontic: Deontic::Unconstrained,
            };
            (profile, r.contractor)
        })
        .collect())
}

/// What a contractor is hired with.
pub struct Hire<'a> {
    /// Workspace.
    pub workspace_id: Uuid,
    /// The mission it works for (and retires with).
    pub mission_id: Uuid,
    /// Skills (the task's).
    pub skills: &'a [String],
    /// Tools (the task's).
    pub tools: &'a [String],
    /// Worker that runs contractors.
    pub endpoint_url: &'a str,
    /// Its cap.
    pub max_concurrency: i32,
    /// Lowest tier the task allows.
    pub model_tier: i32,
    /// Its organisation role (`contractor` unless a spec says otherwise).
    pub role: &'a str,
}

/// Creates a mission-scoped contractor agent (caller holds the mission lock,
/// so the numbering is race-free) and returns it as a candidate.
pub async fn hire_contractor(conn: &mut PgConnection, h: Hire<'_>) -> sqlx::Result<Candidate> {
    let n: i64 = sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM agents WHERE workspace_id = $1 AND mission_id = $2"#,
        h.workspace_id,
        h.mission_id
    )
    .fetch_one(&mut *conn)
    .await?;
    let agent_id = format!(
        "contractor-{}-{}",
        &h.mission_id.simple().to_string()[..12],
        n + 1
    );
    sqlx::query!(
        "INSERT INTO agents (workspace_id, agent_id, role, kind, mission_id, skills, tools,
                             model_tier, endpoint_url, max_concurrency, last_seen_at)
         VALUES ($1, $2, $9, 'contractor', $3, $4, $5, $6, $7, $8, now())",
        h.workspace_id,
        agent_id,
        h.mission_id,
        h.skills,
        h.tools,
        h.model_tier,
        h.endpoint_url,
        h.max_concurrency,
        h.role
    )
    .execute(&mut *conn)
    .await?;
    Ok(Candidate {
        workspace_id: h.workspace_id,
        mission_id: Some(h.mission_id),
        endpoint_url: h.endpoint_url.to_owned(),
        profile: AgentProfile {
            agent_id,
            skills: h.skills.to_vec(),
            tools: h.tools.to_vec(),
            trust: 0.5,
            cost_per_task: 0.0,
            max_concurrency: h.max_concurrency,
            running: 0,
            model_tier: h.model_tier,
            history: BTreeMap::new(),
            role: h.role.to_owned(),
            deontic: Deontic::Unconstrained,
        },
    })
}

/// Retires a mission's contractors (it ended); returns their ids.
pub async fn retire_contractors(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    mission_id: Uuid,
) -> sqlx::Result<Vec<String>> {
    sqlx::query_scalar!(
        "UPDATE agents SET status = 'offline', version = version + 1, updated_at = now()
         WHERE workspace_id = $1 AND kind = 'contractor' AND mission_id = $2 AND status NOT IN ('offline', 'unreachable', 'retired')
         RETURNING agent_id",
        workspace_id,
        mission_id
    )
    .fetch_all(conn)
    .await
}

/// An online agent as the escalation ladder sees it.
#[derive(Debug, Clone)]
pub struct LadderAgent {
    /// Id.
    pub agent_id: String,
    /// Organisation role.
    pub role: String,
    /// Skills.
    pub skills: Vec<String>,
    /// Tools.
    pub tools: Vec<String>,
    /// Model tier.
    pub model_tier: i32,
}

/// Every online roster agent of a workspace (whatever its load).
pub async fn online(conn: &mut PgConnection, workspace_id: Uuid) -> sqlx::Result<Vec<LadderAgent>> {
    sqlx::query_as!(
        LadderAgent,
        "SELECT agent_id, role, skills, tools, model_tier FROM agents
         WHERE workspace_id = $1 AND kind = 'roster' AND status NOT IN ('offline', 'unreachable', 'retired')
         ORDER BY agent_id",
        workspace_id
    )
    .fetch_all(conn)
    .await
}

/// What a heartbeat found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Beat {
    /// Recorded.
    Recorded,
    /// No such agent in the workspace.
    NoSuchAgent,
    /// The agent is retired: only an operator brings it back.
    Retired,
}

/// Records an agent's heartbeat, with the status it reports if any; an
/// offline or unreachable agent comes back `idle` (or `working`). A retired agent stays
/// retired and nothing is written.
pub async fn heartbeat(
    pool: &PgPool,
    workspace_id: Uuid,
    agent_id: &str,
    reported: Option<&str>,
) -> sqlx::Result<Beat> {
    let r = sqlx::query!(
        "UPDATE agents SET last_seen_at = now(), dispatch_failures = 0,
                status = COALESCE($3,
                         CASE WHEN status IN ('offline', 'unreachable') THEN
                              CASE WHEN running_count > 0 THEN 'working' ELSE 'idle' END
                         ELSE status END),
                version = version + CASE WHEN $3::text IS NULL OR $3 = status THEN 0 ELSE 1 END,
                updated_at = now()
         WHERE workspace_id = $1 AND agent_id = $2 AND status <> 'retired'",
        workspace_id,
        agent_id,
        reported
    )
    .execute(pool)
    .await?;
    if r.rows_affected() == 1 {
        return Ok(Beat::Recorded);
    }
    let exists = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM agents WHERE workspace_id = $1 AND agent_id = $2) AS "e!""#,
        workspace_id,
        agent_id
    )
    .fetch_one(pool)
    .await?;
    Ok(if exists {
        Beat::Retired
    } else {
        Beat::NoSuchAgent
    })
}

/// One agent, locked for a change (PATCH, retirement) until the caller's
/// transaction ends.
pub async fn lock(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
) -> sqlx::Result<Option<AgentRow>> {
    // Its pending returns first, so the row read (and written back) is current.
    take_slots(&mut *conn, &[workspace_id], &[agent_id.to_owned()], &[0]).await?;
    sqlx::query_as!(
        AgentRow,
        r#"SELECT agent_id, role, display_name, kind, skills, tools, model, model_tier, endpoint_url,
                  max_concurrency, running_count, trust, cost_per_task, status, heartbeat_timeout_secs,
                  profile_version AS version, last_seen_at, retired_at, created_at
           FROM agents WHERE workspace_id = $1 AND agent_id = $2
           FOR UPDATE"#,
        workspace_id,
        agent_id
    )
    .fetch_optional(conn)
    .await
}

/// Writes an agent's new description (`to`: the locked row with the
/// request applied) and bumps its version. An agent brought back from
/// `offline` or `retired` starts a fresh heartbeat window, so a monitored
/// one is not marked offline again by its old silence.
pub async fn update(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    to: &AgentRow,
) -> sqlx::Result<AgentRow> {
    sqlx::query_as!(
        AgentRow,
        r#"UPDATE agents
           SET role = $3, display_name = $4, skills = $5, tools = $6, endpoint_url = $7,
               max_concurrency = $8, model = $9, model_tier = $10, trust = $11,
               cost_per_task = $12, heartbeat_timeout_secs = $13,
               last_seen_at = CASE WHEN status IN ('offline', 'unreachable', 'retired') AND $14 NOT IN ('offline', 'unreachable', 'retired')
                                   THEN now() ELSE last_seen_at END,
               retired_at = CASE WHEN $14 = 'retired' THEN retired_at END,
               -- A new endpoint or a status an operator set starts the count over.
               dispatch_failures = CASE WHEN endpoint_url IS DISTINCT FROM $7 OR status <> $14
                                        THEN 0 ELSE dispatch_failures END,
               status = $14,
               profile_version = profile_version + 1, version = version + 1, updated_at = now()
           WHERE workspace_id = $1 AND agent_id = $2
           RETURNING agent_id, role, display_name, kind, skills, tools, model, model_tier, endpoint_url,
                     max_concurrency, running_count, trust, cost_per_task, status, heartbeat_timeout_secs,
                     profile_version AS version, last_seen_at, retired_at, created_at"#,
        workspace_id,
        to.agent_id,
        to.role,
        to.display_name,
        &to.skills,
        &to.tools,
        to.endpoint_url,
        to.max_concurrency,
        to.model,
        to.model_tier,
        to.trust,
        to.cost_per_task,
        to.heartbeat_timeout_secs,
        to.status
    )
    .fetch_one(conn)
    .await
}

/// Retires an agent (the caller holds its lock): `retired`, with the time,
/// and its version bumped.
pub async fn retire(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
) -> sqlx::Result<AgentRow> {
    sqlx::query_as!(
        AgentRow,
        r#"UPDATE agents
           SET status = 'retired', retired_at = now(),
               profile_version = profile_version + 1, version = version + 1, updated_at = now()
           WHERE workspace_id = $1 AND agent_id = $2
           RETURNING agent_id, role, display_name, kind, skills, tools, model, model_tier, endpoint_url,
                     max_concurrency, running_count, trust, cost_per_task, status, heartbeat_timeout_secs,
                     profile_version AS version, last_seen_at, retired_at, created_at"#,
        workspace_id,
        agent_id
    )
    .fetch_one(conn)
    .await
}

/// How many attempts an agent holds now (dispatching or running).
pub async fn live_attempts(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
) -> sqlx::Result<i64> {
    sqlx::query_scalar!(
        r#"SELECT count(*) AS "n!" FROM task_attempts
           WHERE workspace_id = $1 AND agent_id = $2 AND status IN ('dispatching', 'running')"#,
        workspace_id,
        agent_id
    )
    .fetch_one(conn)
    .await
}

/// Marks monitored agents that stopped heartbeating `offline`; returns them.
pub async fn mark_silent_offline(pool: &PgPool) -> sqlx::Result<Vec<(Uuid, String)>> {
    let rows = sqlx::query!(
        "UPDATE agents SET status = 'offline', version = version + 1, updated_at = now()
         WHERE heartbeat_timeout_secs IS NOT NULL AND status NOT IN ('offline', 'unreachable', 'retired')
           AND last_seen_at < now() - make_interval(secs => heartbeat_timeout_secs)
         RETURNING workspace_id, agent_id"
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.workspace_id, r.agent_id))
        .collect())
}

/// Capabilities of every agent that could take work in a workspace (for plan validation).
pub async fn capabilities(
    pool: &PgPool,
    workspace_id: Uuid,
) -> sqlx::Result<Vec<(Vec<String>, Vec<String>)>> {
    let rows = sqlx::query!(
        "SELECT skills, tools FROM agents
         WHERE workspace_id = $1 AND kind = 'roster' AND status NOT IN ('offline', 'unreachable', 'retired')",
        workspace_id
    )
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|r| (r.skills, r.tools)).collect())
}

/// What a pin to an agent needs to know of it.
#[derive(Debug, Clone)]
pub struct PinAgent {
    /// Organisation role.
    pub role: String,
    /// Status.
    pub status: String,
    /// Skills.
    pub skills: Vec<String>,
    /// Tools.
    pub tools: Vec<String>,
}

/// One agent as a pin sees it, if it exists.
pub async fn pin_target(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
) -> sqlx::Result<Option<PinAgent>> {
    sqlx::query_as!(
        PinAgent,
        "SELECT role, status, skills, tools FROM agents WHERE workspace_id = $1 AND agent_id = $2",
        workspace_id,
        agent_id
    )
    .fetch_optional(conn)
    .await
}

/// A ready task pinned to an agent that cannot take it.
#[derive(Debug, Clone)]
pub struct LostPin {
    /// Workspace.
    pub workspace_id: Uuid,
    /// Mission.
    pub run_id: Uuid,
    /// Task.
    pub task_id: Uuid,
}

/// Ready (due) tasks of executing missions pinned to an agent that is
/// offline, retired or gone, at most `limit`, longest waiting first. Read
/// from the queue, which holds only ready work, so the cost follows the
/// queue, not the history.
pub async fn lost_pins(conn: &mut PgConnection, limit: i64) -> sqlx::Result<Vec<LostPin>> {
    sqlx::query_as!(
        LostPin,
        "SELECT t.workspace_id, t.run_id, t.id AS task_id
         FROM task_queue q
         JOIN orchestration_tasks t ON t.id = q.task_id
         JOIN orchestration_runs r ON r.id = t.run_id AND r.status = 'executing'
         LEFT JOIN agents g ON g.workspace_id = t.workspace_id AND g.agent_id = t.pinned_agent_id
         WHERE q.ready_at <= now() AND t.pinned_agent_id IS NOT NULL
           AND (g.agent_id IS NULL OR g.status IN ('offline', 'unreachable', 'retired'))
         ORDER BY q.ready_at, t.id
         LIMIT $1",
        limit
    )
    .fetch_all(conn)
    .await
}

/// Slots granted to one agent by [`take_slots`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Granted {
    /// Workspace.
    pub workspace_id: Uuid,
    /// Agent.
    pub agent_id: String,
    /// Slots taken: between 1 and what was asked.
    pub slots: i32,
}

/// Takes up to `n[i]` slots of agent `ids[i]` in workspace `workspaces[i]`,
/// as many as its cap still allows (agents that went offline, unreachable
/// or retired get none), and returns what each agent granted. Each agent's
/// pending returns (`agent_slot_returns`, written by reports) are folded in
/// first: its running count lowered, its tallies added, its LAST SEEN
/// moved; with `n[i] = 0` this only folds. The guarded increment cannot
/// over-admit: the rows are locked in key order and read at their latest
/// version, so a concurrent claim on another replica sees this one's slots
/// taken, and a return not yet visible here only leaves the count high.
/// Only agents granted something are returned.
pub async fn take_slots(
    conn: &mut PgConnection,
    workspaces: &[Uuid],
    ids: &[String],
    n: &[i32],
) -> sqlx::Result<Vec<Granted>> {
    sqlx::query_as!(
        Granted,
        r#"WITH input AS (
               SELECT * FROM UNNEST($1::uuid[], $2::text[], $3::int[]) AS u(workspace_id, agent_id, n)
           ),
           locked AS (
               SELECT a.workspace_id, a.agent_id, a.running_count, a.max_concurrency, a.status, i.n
               FROM agents a
               JOIN input i ON a.workspace_id = i.workspace_id AND a.agent_id = i.agent_id
               ORDER BY a.workspace_id, a.agent_id
               FOR NO KEY UPDATE OF a
           ),
           -- Only rows this statement deletes count: a return folded by a
           -- claim that committed meanwhile is skipped, one committed after
           -- this statement began stays for the next fold.
           returned AS (
               DELETE FROM agent_slot_returns r USING locked l
               WHERE r.workspace_id = l.workspace_id AND r.agent_id = l.agent_id
               RETURNING r.workspace_id, r.agent_id, r.slots, r.task_type, r.succeeded, r.failed, r.seen_at
           ),
           back AS (
               SELECT workspace_id, agent_id, sum(slots)::int AS slots, max(seen_at) AS seen_at
               FROM returned GROUP BY workspace_id, agent_id
           ),
           stats AS (
               INSERT INTO agent_task_stats (workspace_id, agent_id, task_type, succeeded, failed)
               SELECT workspace_id, agent_id, task_type, sum(succeeded), sum(failed)
               FROM returned WHERE task_type IS NOT NULL
               GROUP BY workspace_id, agent_id, task_type
               ORDER BY 1, 2, 3
               ON CONFLICT (workspace_id, agent_id, task_type) DO UPDATE
               SET succeeded = agent_task_stats.succeeded + EXCLUDED.succeeded,
                   failed = agent_task_stats.failed + EXCLUDED.failed
           ),
           cur AS (
               SELECT l.workspace_id, l.agent_id, b.seen_at, b.slots IS NOT NULL AS folded,
                      GREATEST(l.running_count - coalesce(b.slots, 0), 0) AS running,
                      CASE WHEN l.status IN ('offline', 'unreachable', 'retired') THEN 0
                           ELSE GREATEST(LEAST(l.n, l.max_concurrency
                                              - GREATEST(l.running_count - coalesce(b.slots, 0), 0)), 0)
                      END AS granted
               FROM locked l
               LEFT JOIN back b ON b.workspace_id = l.workspace_id AND b.agent_id = l.agent_id
           ),
           changed AS (
               UPDATE agents a SET running_count = c.running + c.granted,
                      status = CASE WHEN c.granted > 0 THEN 'working'
                                    WHEN a.status = 'working' AND c.running = 0 THEN 'idle'
                                    ELSE a.status END,
                      -- An answer from its worker: reachable, and seen then.
                      dispatch_failures = CASE WHEN c.folded THEN 0 ELSE a.dispatch_failures END,
                      last_seen_at = GREATEST(a.last_seen_at, c.seen_at),
                      version = a.version + 1, updated_at = now()
               FROM cur c
               WHERE a.workspace_id = c.workspace_id AND a.agent_id = c.agent_id
                 AND (c.granted > 0 OR c.folded)
               RETURNING a.workspace_id, a.agent_id, c.granted
           )
           SELECT workspace_id, agent_id, granted AS "slots!" FROM changed WHERE granted > 0"#,
        workspaces,
        ids,
        n
    )
    .fetch_all(conn)
    .await
}

/// Locks those of the given agents that no other transaction holds, in key
/// order, and returns them; the others are skipped, not waited for. A
/// claim takes slots only of the agents it could lock this way, so claims
/// on different replicas never queue on each other's agent rows (holding
/// their missions meanwhile, which reports then queue on).
pub async fn lock_unheld(
    conn: &mut PgConnection,
    workspaces: &[Uuid],
    ids: &[String],
) -> sqlx::Result<Vec<(Uuid, String)>> {
    let rows = sqlx::query!(
        r#"SELECT a.workspace_id, a.agent_id
           FROM agents a
           JOIN UNNEST($1::uuid[], $2::text[]) AS i(workspace_id, agent_id)
             ON a.workspace_id = i.workspace_id AND a.agent_id = i.agent_id
           ORDER BY a.workspace_id, a.agent_id
           FOR NO KEY UPDATE OF a SKIP LOCKED"#,
        workspaces,
        ids
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.workspace_id, r.agent_id))
        .collect())
}

/// Folds the pending returns of every agent that has some (see
/// [`take_slots`]), for agents no claim has locked lately; the count folded.
pub async fn fold_returns(pool: &PgPool) -> sqlx::Result<usize> {
    let pending = sqlx::query!(
        "SELECT DISTINCT workspace_id, agent_id FROM agent_slot_returns
         ORDER BY workspace_id, agent_id LIMIT 1000"
    )
    .fetch_all(pool)
    .await?;
    if pending.is_empty() {
        return Ok(0);
    }
    let workspaces: Vec<Uuid> = pending.iter().map(|p| p.workspace_id).collect();
    let ids: Vec<String> = pending.into_iter().map(|p| p.agent_id).collect();
    let zeros = vec![0; ids.len()];
    let mut tx = pool.begin().await?;
    take_slots(&mut tx, &workspaces, &ids, &zeros).await?;
    tx.commit().await?;
    Ok(ids.len())
}

/// Gives back one slot when an attempt ends.
pub async fn release_slot(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE agents SET running_count = running_count - 1,
                status = CASE WHEN status = 'working' AND running_count = 1 THEN 'idle' ELSE status END,
                version = version + 1, updated_at = now()
         WHERE workspace_id = $1 AND agent_id = $2 AND running_count > 0",
        workspace_id,
        agent_id
    )
    .execute(conn)
    .await?;
    Ok(())
}

/// An unreachable agent whose endpoint is due a probe.
#[derive(Debug, Clone)]
pub struct ProbeDue {
    /// Workspace.
    pub workspace_id: Uuid,
    /// The agent.
    pub agent_id: String,
    /// Its worker base URL.
    pub endpoint_url: String,
}

/// Unreachable agents not probed (or changed) for `every`; each is marked
/// as probed now, so one replica probes it per period.
pub async fn claim_probes(pool: &PgPool, every: f64, limit: i64) -> sqlx::Result<Vec<ProbeDue>> {
    sqlx::query_as!(
        ProbeDue,
        r#"UPDATE agents SET updated_at = now()
           WHERE (workspace_id, agent_id) IN (
               SELECT workspace_id, agent_id FROM agents
               WHERE status = 'unreachable' AND updated_at < now() - make_interval(secs => $1)
               ORDER BY updated_at LIMIT $2
               FOR UPDATE SKIP LOCKED)
           RETURNING workspace_id, agent_id, endpoint_url"#,
        every,
        limit
    )
    .fetch_all(pool)
    .await
}

/// An unreachable agent answered: it takes work again. `None` if it was no
/// longer unreachable; else its status now.
pub async fn mark_reachable(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
) -> sqlx::Result<Option<String>> {
    sqlx::query_scalar!(
        "UPDATE agents
         SET status = CASE WHEN running_count > 0 THEN 'working' ELSE 'idle' END,
             dispatch_failures = 0, last_seen_at = now(), version = version + 1, updated_at = now()
         WHERE workspace_id = $1 AND agent_id = $2 AND status = 'unreachable'
         RETURNING status",
        workspace_id,
        agent_id
    )
    .fetch_optional(conn)
    .await
}

/// A task an agent holds, for its status view.
#[derive(Debug, Clone, Serialize, serde::Deserialize, utoipa::ToSchema)]
pub struct HeldTask {
    /// Task id.
    pub task_id: Uuid,
    /// Its mission.
    pub mission_id: Uuid,
    /// Key within the mission.
    pub task_key: String,
    /// Title.
    pub title: String,
    /// Task status.
    pub status: String,
    /// Attempts so far.
    pub attempt_count: i32,
    /// The live attempt, if any.
    pub current_attempt_id: Option<Uuid>,
}

/// Unfinished tasks assigned to an agent (at most 500), oldest first.
pub async fn held_tasks(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
) -> sqlx::Result<Vec<HeldTask>> {
    sqlx::query_as!(
        HeldTask,
        "SELECT id AS task_id, run_id AS mission_id, task_key, title, status, attempt_count, current_attempt_id
         FROM orchestration_tasks
         WHERE workspace_id = $1 AND assigned_agent_id = $2
           AND status NOT IN ('succeeded', 'failed', 'cancelled', 'skipped')
         ORDER BY created_at, id
         LIMIT 500",
        workspace_id,
        agent_id
    )
    .fetch_all(conn)
    .await
}
