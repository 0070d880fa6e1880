//! SQL of BDI state (beliefs, desires, goals, intentions) and of the BDI
//! maintenance job (cycles, belief conflict reports).

use serde::{Deserialize, Serialize};
use sqlx::PgConnection;
use time::{Date, OffsetDateTime};
use uuid::Uuid;

/// A belief as stored and shown.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct BeliefView {
    /// Id.
    pub id: Uuid,
    /// Holder.
    pub agent_id: String,
    /// `environment`, `self`, `agent` or `case`.
    pub category: String,
    /// What it is about.
    pub subject: String,
    /// What the agent holds true.
    pub content: String,
    /// Certainty in [0, 1].
    pub certainty: f64,
    /// A revision with equal certainty and different content was flagged.
    pub conflict: bool,
    /// Optimistic version.
    pub version: i64,
    /// Created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Last changed.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// One entry of a belief's revision log.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct RevisionView {
    /// Id (increasing).
    pub id: i64,
    /// The belief.
    pub belief_id: Uuid,
    /// `created`, `corroborated`, `revised`, `rejected` or `conflict`.
    pub outcome: String,
    /// Content before.
    pub old_content: Option<String>,
    /// Content offered.
    pub new_content: String,
    /// Certainty before.
    pub old_certainty: Option<f64>,
    /// Certainty offered.
    pub new_certainty: f64,
    /// Why (from the writer).
    pub reason: String,
    /// Who wrote it.
    pub actor: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// A desire as stored and shown.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DesireView {
    /// Id.
    pub id: Uuid,
    /// Holder.
    pub agent_id: String,
    /// What is desired.
    pub description: String,
    /// `terminal` or `instrumental`.
    pub kind: String,
    /// Formula component (weight 0.30).
    pub base_priority: f64,
    /// Formula component (weight 0.25).
    pub importance: f64,
    /// Formula component (weight 0.25).
    pub urgency: f64,
    /// Formula component (weight 0.15).
    pub strategic_alignment: f64,
    /// Formula component (weight 0.05).
    pub dependency_status: f64,
    /// The computed priority.
    pub priority: f64,
    /// 1 = the agent's top active desire (set by the maintenance job).
    pub rank: Option<i32>,
    /// Desires this instrumental one serves.
    pub serves: Vec<Uuid>,
    /// Scarce resources it needs.
    pub resources: Vec<String>,
    /// Strategic direction.
    pub strategy: Option<String>,
    /// Desires its achievement rules out.
    pub incompatible_with: Vec<Uuid>,
    /// `active` or `dropped`.
    pub status: String,
    /// Optimistic version.
    pub version: i64,
    /// Created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// The seed's drop record (§6.4).
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct DropRecord {
    /// The dropped desire.
    pub desire_id: Uuid,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub dropped_at: OffsetDateTime,
    /// Why.
    pub reason: String,
    /// Instrumental desires that served a dropped one.
    pub related_desires_affected: Vec<Uuid>,
    /// Desires dropped because of this one.
    pub cascaded_drops: Vec<Uuid>,
    /// For a cascaded drop: the desire whose drop caused it.
    pub cascade_of: Option<Uuid>,
}

/// A goal as stored and shown.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct GoalView {
    /// Id.
    pub id: Uuid,
    /// Holder.
    pub agent_id: String,
    /// What to reach.
    pub description: String,
    /// `strategic`, `tactical` or `operational`.
    pub tier: String,
    /// Parent goal.
    pub parent_goal_id: Option<Uuid>,
    /// The desire it realises.
    pub desire_id: Option<Uuid>,
    /// How to tell it is reached.
    pub success_criteria: String,
    /// Deadline.
    #[serde(with = "time::serde::rfc3339::option")]
    pub deadline: Option<OffsetDateTime>,
    /// `active`, `achieved` or `abandoned`.
    pub status: String,
    /// Optimistic version.
    pub version: i64,
    /// Created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// An intention as stored and shown.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct IntentionView {
    /// Id.
    pub id: Uuid,
    /// Holder.
    pub agent_id: String,
    /// What is intended.
    pub description: String,
    /// The goal pursued.
    pub goal_id: Option<Uuid>,
    /// The desire committed to.
    pub desire_id: Option<Uuid>,
    /// `single-minded`, `open-minded` or `cautious`.
    pub strategy: String,
    /// Priority (the desire's when linked).
    pub priority: f64,
    /// Fraction done, in [0, 1].
    pub progress: f64,
    /// `active`, `suspended`, `dropped` or `achieved`.
    pub status: String,
    /// Stalled past its strategy's threshold (set by the maintenance job).
    pub needs_reconsideration: bool,
    /// Last progress update.
    #[serde(with = "time::serde::rfc3339")]
    pub last_progress_at: OffsetDateTime,
    /// Optimistic version.
    pub version: i64,
    /// Created.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

/// A belief conflict report.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ConflictView {
    /// Id.
    pub id: i64,
    /// The agent holding both beliefs.
    pub agent_id: String,
    /// Their common subject.
    pub subject: String,
    /// Belief A.
    pub belief_a: Uuid,
    /// Belief B.
    pub belief_b: Uuid,
    /// A's content.
    pub content_a: String,
    /// B's content.
    pub content_b: String,
    /// A's certainty.
    pub certainty_a: f64,
    /// B's certainty.
    pub certainty_b: f64,
    /// Detected at.
    #[serde(with = "time::serde::rfc3339")]
    pub detected_at: OffsetDateTime,
    /// The cycle that found it.
    pub cycle_id: Option<i64>,
}

/// The audit record of one maintenance cycle.
#[derive(Debug, Clone, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CycleView {
    /// Id.
    pub id: i64,
    /// Started.
    #[serde(with = "time::serde::rfc3339")]
    pub started_at: OffsetDateTime,
    /// Finished.
    #[serde(with = "time::serde::rfc3339")]
    pub finished_at: OffsetDateTime,
    /// Which replica ran it.
    pub replica: String,
    /// Intentions marked for reconsideration.
    pub intentions_pruned: i32,
    /// Active desires re-prioritised and re-ranked.
    pub desires_resorted: i32,
    /// High-certainty beliefs compared.
    pub beliefs_scanned: i32,
    /// Chunks (of up to 50 subjects) processed.
    pub belief_chunks: i32,
    /// New conflict reports.
    pub conflicts_found: i32,
}

// ---------------------------------------------------------------- beliefs

/// Locks the agent's belief on (category, subject), if any.
pub async fn lock_belief_by_key(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    category: &str,
    subject: &str,
) -> sqlx::Result<Option<BeliefView>> {
    sqlx::query_as!(
        BeliefView,
        "SELECT id, agent_id, category, subject, content, certainty, conflict, version, created_at, updated_at
         FROM bdi_beliefs WHERE workspace_id = $1 AND agent_id = $2 AND category = $3 AND subject = $4
         FOR UPDATE",
        workspace_id,
        agent_id,
        category,
        subject
    )
    .fetch_optional(conn)
    .await
}

/// Inserts a belief; `None` when a concurrent writer inserted the same key first.
pub async fn insert_belief(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    category: &str,
    subject: &str,
    content: &str,
    certainty: f64,
) -> sqlx::Result<Option<BeliefView>> {
    sqlx::query_as!(
        BeliefView,
        "INSERT INTO bdi_beliefs (id, workspace_id, agent_id, category, subject, content, certainty)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (workspace_id, agent_id, category, subject) DO NOTHING
         RETURNING id, agent_id, category, subject, content, certainty, conflict, version, created_at, updated_at",
        Uuid::new_v4(),
        workspace_id,
        agent_id,
        category,
        subject,
        content,
        certainty
    )
    .fetch_optional(conn)
    .await
}

/// Writes a belief's new state, guarded by its version; `None` when stale.
pub async fn update_belief(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
    version: i64,
    content: &str,
    certainty: f64,
    conflict: bool,
) -> sqlx::Result<Option<BeliefView>> {
    sqlx::query_as!(
        BeliefView,
        "UPDATE bdi_beliefs SET content = $4, certainty = $5, conflict = $6, version = version + 1, updated_at = now()
         WHERE workspace_id = $1 AND id = $2 AND version = $3
         RETURNING id, agent_id, category, subject, content, certainty, conflict, version, created_at, updated_at",
        workspace_id,
        id,
        version,
        content,
        certainty,
        conflict
    )
    .fetch_optional(conn)
    .await
}

/// A revision log entry to write.
pub struct NewRevision<'a> {
    /// The belief.
    pub belief_id: Uuid,
    /// What happened.
    pub outcome: &'a str,
    /// Before.
    pub old: Option<(&'a str, f64)>,
    /// Offered.
    pub new_content: &'a str,
    /// Offered.
    pub new_certainty: f64,
    /// Why.
    pub reason: &'a str,
    /// Who.
    pub actor: &'a str,
}

/// Appends to a belief's revision log.
pub async fn insert_revision(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    r: NewRevision<'_>,
) -> sqlx::Result<RevisionView> {
    sqlx::query_as!(
        RevisionView,
        "INSERT INTO bdi_belief_revisions
           (workspace_id, belief_id, outcome, old_content, new_content, old_certainty, new_certainty, reason, actor)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         RETURNING id, belief_id, outcome, old_content, new_content, old_certainty, new_certainty, reason, actor, created_at",
        workspace_id,
        r.belief_id,
        r.outcome,
        r.old.map(|o| o.0),
        r.new_content,
        r.old.map(|o| o.1),
        r.new_certainty,
        r.reason,
        r.actor
    )
    .fetch_one(conn)
    .await
}

/// The agent's beliefs, by subject.
pub async fn list_beliefs(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    category: Option<&str>,
    subject: Option<&str>,
) -> sqlx::Result<Vec<BeliefView>> {
    sqlx::query_as!(
        BeliefView,
        "SELECT id, agent_id, category, subject, content, certainty, conflict, version, created_at, updated_at
         FROM bdi_beliefs
         WHERE workspace_id = $1 AND agent_id = $2 AND ($3::text IS NULL OR category = $3)
           AND ($4::text IS NULL OR subject = $4)
         ORDER BY subject, category, id LIMIT 1000",
        workspace_id,
        agent_id,
        category,
        subject
    )
    .fetch_all(conn)
    .await
}

/// A belief's revision log, oldest first; `None` when the belief is not the agent's.
pub async fn revisions(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    belief_id: Uuid,
) -> sqlx::Result<Option<Vec<RevisionView>>> {
    let exists = sqlx::query_scalar!(
        r#"SELECT EXISTS (SELECT 1 FROM bdi_beliefs WHERE workspace_id = $1 AND agent_id = $2 AND id = $3) AS "e!""#,
        workspace_id,
        agent_id,
        belief_id
    )
    .fetch_one(&mut *conn)
    .await?;
    if !exists {
        return Ok(None);
    }
    sqlx::query_as!(
        RevisionView,
        "SELECT id, belief_id, outcome, old_content, new_content, old_certainty, new_certainty, reason, actor, created_at
         FROM bdi_belief_revisions WHERE workspace_id = $1 AND belief_id = $2 ORDER BY id",
        workspace_id,
        belief_id
    )
    .fetch_all(conn)
    .await
    .map(Some)
}

// ---------------------------------------------------------------- desires

/// A desire to insert.
pub struct NewDesire<'a> {
    /// Id.
    pub id: Uuid,
    /// Holder.
    pub agent_id: &'a str,
    /// What.
    pub description: &'a str,
    /// Kind.
    pub kind: &'a str,
    /// Formula components.
    pub inputs: coordinator_core::bdi::PriorityInputs,
    /// The formula's value.
    pub priority: f64,
    /// Served desires.
    pub serves: &'a [Uuid],
    /// Resources.
    pub resources: &'a [String],
    /// Direction.
    pub strategy: Option<&'a str>,
    /// Ruled-out desires.
    pub incompatible_with: &'a [Uuid],
}

/// Inserts a desire.
pub async fn insert_desire(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    d: NewDesire<'_>,
) -> sqlx::Result<DesireView> {
    sqlx::query_as!(
        DesireView,
        "INSERT INTO bdi_desires (id, workspace_id, agent_id, description, kind, base_priority, importance,
                                  urgency, strategic_alignment, dependency_status, priority, serves, resources,
                                  strategy, incompatible_with)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
         RETURNING id, agent_id, description, kind, base_priority, importance, urgency, strategic_alignment,
                   dependency_status, priority, rank, serves, resources, strategy, incompatible_with, status,
                   version, created_at",
        d.id,
        workspace_id,
        d.agent_id,
        d.description,
        d.kind,
        d.inputs.base_priority,
        d.inputs.importance,
        d.inputs.urgency,
        d.inputs.strategic_alignment,
        d.inputs.dependency_status,
        d.priority,
        d.serves,
        d.resources,
        d.strategy,
        d.incompatible_with
    )
    .fetch_one(conn)
    .await
}

/// All desires of an agent (every status), locked, highest priority first:
/// creation and drops serialise on them.
pub async fn lock_desires(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
) -> sqlx::Result<Vec<DesireView>> {
    sqlx::query_as!(
        DesireView,
        "SELECT id, agent_id, description, kind, base_priority, importance, urgency, strategic_alignment,
                dependency_status, priority, rank, serves, resources, strategy, incompatible_with, status,
                version, created_at
         FROM bdi_desires WHERE workspace_id = $1 AND agent_id = $2
         ORDER BY priority DESC, id FOR UPDATE",
        workspace_id,
        agent_id
    )
    .fetch_all(conn)
    .await
}

/// The agent's desires, highest priority first.
pub async fn list_desires(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    status: Option<&str>,
) -> sqlx::Result<Vec<DesireView>> {
    sqlx::query_as!(
        DesireView,
        "SELECT id, agent_id, description, kind, base_priority, importance, urgency, strategic_alignment,
                dependency_status, priority, rank, serves, resources, strategy, incompatible_with, status,
                version, created_at
         FROM bdi_desires WHERE workspace_id = $1 AND agent_id = $2 AND ($3::text IS NULL OR status = $3)
         ORDER BY priority DESC, created_at, id LIMIT 1000",
        workspace_id,
        agent_id,
        status
    )
    .fetch_all(conn)
    .await
}

/// Marks an active desire dropped, guarded by its version; false when stale.
pub async fn drop_desire(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
    version: i64,
) -> sqlx::Result<bool> {
    let n = sqlx::query!(
        "UPDATE bdi_desires SET status = 'dropped', rank = NULL, version = version + 1, updated_at = now()
         WHERE workspace_id = $1 AND id = $2 AND version = $3 AND status = 'active'",
        workspace_id,
        id,
        version
    )
    .execute(conn)
    .await?
    .rows_affected();
    Ok(n == 1)
}

/// Writes a drop record.
pub async fn insert_drop(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    r: &DropRecord,
    actor: &str,
) -> sqlx::Result<DropRecord> {
    sqlx::query_as!(
        DropRecord,
        "INSERT INTO bdi_desire_drops (workspace_id, desire_id, reason, related_desires_affected,
                                       cascaded_drops, cascade_of, actor)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         RETURNING desire_id, dropped_at, reason, related_desires_affected, cascaded_drops, cascade_of",
        workspace_id,
        r.desire_id,
        r.reason,
        &r.related_desires_affected,
        &r.cascaded_drops,
        r.cascade_of,
        actor
    )
    .fetch_one(conn)
    .await
}

/// A desire's drop record, if it was dropped.
pub async fn drop_record(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    desire_id: Uuid,
) -> sqlx::Result<Option<DropRecord>> {
    sqlx::query_as!(
        DropRecord,
        "SELECT desire_id, dropped_at, reason, related_desires_affected, cascaded_drops, cascade_of
         FROM bdi_desire_drops WHERE workspace_id = $1 AND desire_id = $2",
        workspace_id,
        desire_id
    )
    .fetch_optional(conn)
    .await
}

// ---------------------------------------------------------------- goals

/// A goal to insert.
pub struct NewGoal<'a> {
    /// Holder.
    pub agent_id: &'a str,
    /// What.
    pub description: &'a str,
    /// Tier.
    pub tier: &'a str,
    /// Parent.
    pub parent_goal_id: Option<Uuid>,
    /// Desire.
    pub desire_id: Option<Uuid>,
    /// Criteria.
    pub success_criteria: &'a str,
    /// Deadline.
    pub deadline: Option<OffsetDateTime>,
}

/// Inserts a goal.
pub async fn insert_goal(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    g: NewGoal<'_>,
) -> sqlx::Result<GoalView> {
    sqlx::query_as!(
        GoalView,
        "INSERT INTO bdi_goals (id, workspace_id, agent_id, description, tier, parent_goal_id, desire_id,
                                success_criteria, deadline)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         RETURNING id, agent_id, description, tier, parent_goal_id, desire_id, success_criteria, deadline,
                   status, version, created_at",
        Uuid::new_v4(),
        workspace_id,
        g.agent_id,
        g.description,
        g.tier,
        g.parent_goal_id,
        g.desire_id,
        g.success_criteria,
        g.deadline
    )
    .fetch_one(conn)
    .await
}

/// Locks one of the agent's goals.
pub async fn lock_goal(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    id: Uuid,
) -> sqlx::Result<Option<GoalView>> {
    sqlx::query_as!(
        GoalView,
        "SELECT id, agent_id, description, tier, parent_goal_id, desire_id, success_criteria, deadline,
                status, version, created_at
         FROM bdi_goals WHERE workspace_id = $1 AND agent_id = $2 AND id = $3 FOR UPDATE",
        workspace_id,
        agent_id,
        id
    )
    .fetch_optional(conn)
    .await
}

/// Moves a goal, guarded by its version; `None` when stale.
pub async fn set_goal_status(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
    version: i64,
    status: &str,
) -> sqlx::Result<Option<GoalView>> {
    sqlx::query_as!(
        GoalView,
        "UPDATE bdi_goals SET status = $4, version = version + 1, updated_at = now()
         WHERE workspace_id = $1 AND id = $2 AND version = $3
         RETURNING id, agent_id, description, tier, parent_goal_id, desire_id, success_criteria, deadline,
                   status, version, created_at",
        workspace_id,
        id,
        version,
        status
    )
    .fetch_optional(conn)
    .await
}

/// The agent's goals, oldest first.
pub async fn list_goals(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
) -> sqlx::Result<Vec<GoalView>> {
    sqlx::query_as!(
        GoalView,
        "SELECT id, agent_id, description, tier, parent_goal_id, desire_id, success_criteria, deadline,
                status, version, created_at
         FROM bdi_goals WHERE workspace_id = $1 AND agent_id = $2 ORDER BY created_at, id LIMIT 1000",
        workspace_id,
        agent_id
    )
    .fetch_all(conn)
    .await
}

// ---------------------------------------------------------------- intentions

/// An intention to insert.
pub struct NewIntention<'a> {
    /// Holder.
    pub agent_id: &'a str,
    /// What.
    pub description: &'a str,
    /// Goal.
    pub goal_id: Option<Uuid>,
    /// Desire.
    pub desire_id: Option<Uuid>,
    /// Strategy.
    pub strategy: &'a str,
    /// Priority.
    pub priority: f64,
}

/// Inserts an intention.
pub async fn insert_intention(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    i: NewIntention<'_>,
) -> sqlx::Result<IntentionView> {
    sqlx::query_as!(
        IntentionView,
        "INSERT INTO bdi_intentions (id, workspace_id, agent_id, description, goal_id, desire_id, strategy, priority)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
         RETURNING id, agent_id, description, goal_id, desire_id, strategy, priority, progress, status,
                   needs_reconsideration, last_progress_at, version, created_at",
        Uuid::new_v4(),
        workspace_id,
        i.agent_id,
        i.description,
        i.goal_id,
        i.desire_id,
        i.strategy,
        i.priority
    )
    .fetch_one(conn)
    .await
}

/// Locks one of the agent's intentions.
pub async fn lock_intention(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    id: Uuid,
) -> sqlx::Result<Option<IntentionView>> {
    sqlx::query_as!(
        IntentionView,
        "SELECT id, agent_id, description, goal_id, desire_id, strategy, priority, progress, status,
                needs_reconsideration, last_progress_at, version, created_at
         FROM bdi_intentions WHERE workspace_id = $1 AND agent_id = $2 AND id = $3 FOR UPDATE",
        workspace_id,
        agent_id,
        id
    )
    .fetch_optional(conn)
    .await
}

/// Moves an intention, guarded by its version; `None` when stale. Any move
/// settles a pending reconsideration.
pub async fn set_intention_status(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
    version: i64,
    status: &str,
) -> sqlx::Result<Option<IntentionView>> {
    sqlx::query_as!(
        IntentionView,
        "UPDATE bdi_intentions SET status = $4, needs_reconsideration = false, version = version + 1,
                updated_at = now(),
                -- Resuming restarts the stall clock.
                last_progress_at = CASE WHEN $4 = 'active' THEN now() ELSE last_progress_at END
         WHERE workspace_id = $1 AND id = $2 AND version = $3
         RETURNING id, agent_id, description, goal_id, desire_id, strategy, priority, progress, status,
                   needs_reconsideration, last_progress_at, version, created_at",
        workspace_id,
        id,
        version,
        status
    )
    .fetch_optional(conn)
    .await
}

/// Records progress, guarded by its version; `None` when stale.
pub async fn set_progress(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
    version: i64,
    progress: f64,
) -> sqlx::Result<Option<IntentionView>> {
    sqlx::query_as!(
        IntentionView,
        "UPDATE bdi_intentions SET progress = $4, last_progress_at = now(), needs_reconsideration = false,
                version = version + 1, updated_at = now()
         WHERE workspace_id = $1 AND id = $2 AND version = $3
         RETURNING id, agent_id, description, goal_id, desire_id, strategy, priority, progress, status,
                   needs_reconsideration, last_progress_at, version, created_at",
        workspace_id,
        id,
        version,
        progress
    )
    .fetch_optional(conn)
    .await
}

/// The agent's intentions, oldest first.
pub async fn list_intentions(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    agent_id: &str,
    status: Option<&str>,
) -> sqlx::Result<Vec<IntentionView>> {
    sqlx::query_as!(
        IntentionView,
        "SELECT id, agent_id, description, goal_id, desire_id, strategy, priority, progress, status,
                needs_reconsideration, last_progress_at, version, created_at
         FROM bdi_intentions WHERE workspace_id = $1 AND agent_id = $2 AND ($3::text IS NULL OR status = $3)
         ORDER BY created_at, id LIMIT 1000",
        workspace_id,
        agent_id,
        status
    )
    .fetch_all(conn)
    .await
}

/// Seconds since a timestamp, by the database clock.
pub async fn seconds_since(conn: &mut PgConnection, at: OffsetDateTime) -> sqlx::Result<f64> {
    sqlx::query_scalar!(
        r#"SELECT EXTRACT(EPOCH FROM (now() - $1::timestamptz))::float8 AS "s!""#,
        at
    )
    .fetch_one(conn)
    .await
}

// ---------------------------------------------------------------- maintenance

/// Marks active intentions stalled past their strategy's threshold (seed
/// §7.2: open-minded 7 days, cautious 3; never single-minded) for
/// reconsideration, all workspaces; returns them.
pub async fn mark_stale_intentions(
    conn: &mut PgConnection,
) -> sqlx::Result<Vec<(Uuid, Uuid, String, String)>> {
    let rows = sqlx::query!(
        "UPDATE bdi_intentions SET needs_reconsideration = true, version = version + 1, updated_at = now()
         WHERE status = 'active' AND NOT needs_reconsideration
           AND ((strategy = 'open-minded' AND last_progress_at < now() - interval '7 days')
             OR (strategy = 'cautious' AND last_progress_at < now() - interval '3 days'))
         RETURNING id, workspace_id, agent_id, strategy"
    )
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|r| (r.workspace_id, r.id, r.agent_id, r.strategy))
        .collect())
}

/// Recomputes every active desire's priority with the seed's formula (§6.2)
/// and ranks each agent's active desires by it (1 = highest); returns how
/// many rows changed.
pub async fn resort_desires(conn: &mut PgConnection) -> sqlx::Result<u64> {
    let n = sqlx::query!(
        "WITH ranked AS (
             SELECT id,
                    base_priority * 0.30 + importance * 0.25 + urgency * 0.25
                      + strategic_alignment * 0.15 + dependency_status * 0.05 AS p
             FROM bdi_desires WHERE status = 'active'),
         ordered AS (
             SELECT d.id, r.p,
                    row_number() OVER (PARTITION BY d.workspace_id, d.agent_id
                                       ORDER BY r.p DESC, d.created_at, d.id)::int AS rk
             FROM bdi_desires d JOIN ranked r ON r.id = d.id)
         UPDATE bdi_desires d SET priority = LEAST(1.0, GREATEST(0.0, o.p)), rank = o.rk
         FROM ordered o
         WHERE d.id = o.id AND (d.rank IS DISTINCT FROM o.rk OR d.priority <> LEAST(1.0, GREATEST(0.0, o.p)))"
    )
    .execute(conn)
    .await?
    .rows_affected();
    Ok(n)
}

/// One chunk of (workspace, agent, subject) groups that hold at least two
/// beliefs above the conflict certainty, after `after` in key order.
pub async fn conflict_candidates(
    conn: &mut PgConnection,
    after: Option<&(Uuid, String, String)>,
    limit: i64,
) -> sqlx::Result<Vec<(Uuid, String, String)>> {
    let (w, a, s) = match after {
        Some((w, a, s)) => (Some(*w), Some(a.as_str()), Some(s.as_str())),
        None => (None, None, None),
    };
    let rows = sqlx::query!(
        r#"SELECT workspace_id, agent_id, subject FROM bdi_beliefs
           WHERE certainty > $4
             AND ($1::uuid IS NULL OR (workspace_id, agent_id, subject) > ($1, $2::text, $3::text))
           GROUP BY workspace_id, agent_id, subject HAVING count(*) > 1
           ORDER BY workspace_id, agent_id, subject LIMIT $5"#,
        w,
        a,
        s,
        coordinator_core::bdi::CONFLICT_CERTAINTY,
        limit
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

/// Ties today's unattributed conflict reports to the cycle that found them.
pub async fn attribute_conflicts(
    conn: &mut PgConnection,
    cycle_id: i64,
    since: OffsetDateTime,
) -> sqlx::Result<()> {
    sqlx::query!(
        "UPDATE bdi_conflicts SET cycle_id = $1 WHERE cycle_id IS NULL AND detected_at >= $2",
        cycle_id,
        since
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

/// Writes a cycle's audit record.
pub async fn insert_cycle(
    conn: &mut PgConnection,
    started_at: OffsetDateTime,
    replica: &str,
    c: CycleCounts,
) -> sqlx::Result<CycleView> {
    sqlx::query_as!(
        CycleView,
        "INSERT INTO bdi_cycles (started_at, replica, intentions_pruned, desires_resorted, beliefs_scanned,
                                 belief_chunks, conflicts_found)
         VALUES ($1, $2, $3, $4, $5, $6, $7)
         RETURNING id, started_at, finished_at, replica, intentions_pruned, desires_resorted, beliefs_scanned,
                   belief_chunks, conflicts_found",
        started_at,
        replica,
        c.intentions_pruned,
        c.desires_resorted,
        c.beliefs_scanned,
        c.belief_chunks,
        c.conflicts_found
    )
    .fetch_one(conn)
    .await
}

/// The latest cycle.
pub async fn last_cycle(conn: &mut PgConnection) -> sqlx::Result<Option<CycleView>> {
    sqlx::query_as!(
        CycleView,
        "SELECT id, started_at, finished_at, replica, intentions_pruned, desires_resorted, beliefs_scanned,
                belief_chunks, conflicts_found
         FROM bdi_cycles ORDER BY id DESC LIMIT 1"
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
