//! SQL of the human workforce: contractors (`workforce_contractors`), their
//! trust history, and work packages. Every query is confined to a workspace.
//! Lock order, after the mission's row: work package → contractor.

use serde::Serialize;
use serde_json::Value;
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

/// A contractor as the API shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ContractorView {
    /// Id.
    pub id: Uuid,
    /// Name.
    pub name: String,
    /// Skills (lower-case).
    pub skills: Vec<String>,
    /// Hourly rate.
    pub hourly_rate: f64,
    /// `full-time`, `part-time`, `on-call` or `unavailable`.
    pub availability: String,
    /// How to reach them.
    pub contact: String,
    /// Trust in [0, 1]; 0.5 for a newcomer.
    pub trust_score: f64,
    /// Guard for writes: pass it back to refuse a stale update.
    pub version: i64,
    /// Who registered them.
    pub created_by: String,
    /// When registered.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Last change.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
    /// Every trust change, oldest first (only on `GET /v1/contractors/{id}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trust_history: Option<Vec<TrustEntry>>,
}

/// A contractor row.
struct ContractorRow {
    id: Uuid,
    name: String,
    skills: Vec<String>,
    hourly_rate: f64,
    availability: String,
    contact: String,
    trust_score: f64,
    version: i64,
    created_by: String,
    created_at: OffsetDateTime,
    updated_at: OffsetDateTime,
}

impl From<ContractorRow> for ContractorView {
    fn from(r: ContractorRow) -> Self {
        ContractorView {
            id: r.id,
            name: r.name,
            skills: r.skills,
            hourly_rate: r.hourly_rate,
            availability: r.availability,
            contact: r.contact,
            trust_score: r.trust_score,
            version: r.version,
            created_by: r.created_by,
            created_at: r.created_at,
            updated_at: r.updated_at,
            trust_history: None,
        }
    }
}

/// One trust change.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct TrustEntry {
    /// Score before.
    pub previous_score: f64,
    /// Score after.
    pub new_score: f64,
    /// The rating that caused it.
    pub quality_rating: String,
    /// Why.
    pub reason: String,
    /// The package rated.
    pub work_package_id: Option<Uuid>,
    /// Who rated.
    pub created_by: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub timestamp: OffsetDateTime,
}

/// A contractor about to be registered.
#[derive(Debug)]
pub struct NewContractor<'a> {
    /// Name.
    pub name: &'a str,
    /// Skills, normalised.
    pub skills: &'a [String],
    /// Hourly rate.
    pub hourly_rate: f64,
    /// Availability.
    pub availability: &'a str,
    /// Contact.
    pub contact: &'a str,
}

/// Registers a contractor at trust 0.5.
pub async fn insert_contractor(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    c: NewContractor<'_>,
    actor: &str,
) -> sqlx::Result<ContractorView> {
    sqlx::query_as!(
        ContractorRow,
        r#"INSERT INTO workforce_contractors (id, workspace_id, name, skills, hourly_rate, availability, contact, created_by)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
           RETURNING id, name, skills, hourly_rate, availability, contact, trust_score, version,
                     created_by, created_at, updated_at"#,
        Uuid::now_v7(),
        workspace_id,
        c.name,
        c.skills,
        c.hourly_rate,
        c.availability,
        c.contact,
        actor
    )
    .fetch_one(conn)
    .await
    .map(ContractorView::from)
}

/// One contractor (without history); `lock` takes its row lock.
pub async fn get_contractor(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
    lock: bool,
) -> sqlx::Result<Option<ContractorView>> {
    if lock {
        return sqlx::query_as!(
            ContractorRow,
            r#"SELECT id, name, skills, hourly_rate, availability, contact, trust_score, version,
                      created_by, created_at, updated_at
               FROM workforce_contractors WHERE workspace_id = $1 AND id = $2 FOR UPDATE"#,
            workspace_id,
            id
        )
        .fetch_optional(conn)
        .await
        .map(|r| r.map(ContractorView::from));
    }
    sqlx::query_as!(
        ContractorRow,
        r#"SELECT id, name, skills, hourly_rate, availability, contact, trust_score, version,
                  created_by, created_at, updated_at
           FROM workforce_contractors WHERE workspace_id = $1 AND id = $2"#,
        workspace_id,
        id
    )
    .fetch_optional(conn)
    .await
    .map(|r| r.map(ContractorView::from))
}

/// A contractor's trust history, oldest first.
pub async fn trust_history(
    pool: &PgPool,
    workspace_id: Uuid,
    contractor_id: Uuid,
) -> sqlx::Result<Vec<TrustEntry>> {
    sqlx::query_as!(
        TrustEntry,
        r#"SELECT previous_score, new_score, quality_rating, reason, work_package_id, created_by,
                  created_at AS timestamp
           FROM trust_history WHERE workspace_id = $1 AND contractor_id = $2 ORDER BY id"#,
        workspace_id,
        contractor_id
    )
    .fetch_all(pool)
    .await
}

/// Which contractors a listing wants.
#[derive(Debug, Default)]
pub struct ContractorFilter<'a> {
    /// Having every one of these skills.
    pub skills: &'a [String],
    /// Trust at least this.
    pub min_trust: Option<f64>,
    /// With this availability.
    pub availability: Option<&'a str>,
}

/// Contractors of the workspace matching `f`, oldest first.
pub async fn list_contractors(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    f: ContractorFilter<'_>,
    limit: i64,
) -> sqlx::Result<Vec<ContractorView>> {
    sqlx::query_as!(
        ContractorRow,
        r#"SELECT id, name, skills, hourly_rate, availability, contact, trust_score, version,
                  created_by, created_at, updated_at
           FROM workforce_contractors
           WHERE workspace_id = $1 AND skills @> $2
             AND ($3::float8 IS NULL OR trust_score >= $3)
             AND ($4::text IS NULL OR availability = $4)
           ORDER BY created_at, id
           LIMIT $5"#,
        workspace_id,
        f.skills,
        f.min_trust,
        f.availability,
        limit
    )
    .fetch_all(conn)
    .await
    .map(|rs| rs.into_iter().map(ContractorView::from).collect())
}

/// Contractors that could match a package needing `skills`: a superset of
/// the candidates (the pure matcher decides), so the pool read stays small.
pub async fn match_pool(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    skills: &[String],
) -> sqlx::Result<Vec<ContractorView>> {
    sqlx::query_as!(
        ContractorRow,
        r#"SELECT id, name, skills, hourly_rate, availability, contact, trust_score, version,
                  created_by, created_at, updated_at
           FROM workforce_contractors
           WHERE workspace_id = $1 AND skills && $2 AND availability <> 'unavailable'
             AND trust_score >= 0.5
           ORDER BY id"#,
        workspace_id,
        skills
    )
    .fetch_all(conn)
    .await
    .map(|rs| rs.into_iter().map(ContractorView::from).collect())
}

/// Changes what a contractor update names; returns the row, or `None` when
/// `version` no longer matches.
#[allow(clippy::too_many_arguments)]
pub async fn update_contractor(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
    version: i64,
    name: Option<&str>,
    skills: Option<&[String]>,
    hourly_rate: Option<f64>,
    availability: Option<&str>,
    contact: Option<&str>,
) -> sqlx::Result<Option<ContractorView>> {
    sqlx::query_as!(
        ContractorRow,
        r#"UPDATE workforce_contractors
           SET name = COALESCE($4, name), skills = COALESCE($5, skills),
               hourly_rate = COALESCE($6, hourly_rate), availability = COALESCE($7, availability),
               contact = COALESCE($8, contact), version = version + 1, updated_at = now()
           WHERE workspace_id = $1 AND id = $2 AND version = $3
           RETURNING id, name, skills, hourly_rate, availability, contact, trust_score, version,
                     created_by, created_at, updated_at"#,
        workspace_id,
        id,
        version,
        name,
        skills,
        hourly_rate,
        availability,
        contact
    )
    .fetch_optional(conn)
    .await
    .map(|r| r.map(ContractorView::from))
}

/// A trust change about to be written.
#[derive(Debug)]
pub struct TrustChange<'a> {
    /// The contractor (locked by the caller).
    pub contractor_id: Uuid,
    /// The version the caller read.
    pub version: i64,
    /// Score before.
    pub previous: f64,
    /// Score after.
    pub new: f64,
    /// The rating.
    pub rating: &'a str,
    /// Why.
    pub reason: &'a str,
    /// The package rated, if the rating is about one.
    pub work_package_id: Option<Uuid>,
}

/// Sets a contractor's trust and appends the history row.
pub async fn apply_trust(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    c: TrustChange<'_>,
    actor: &str,
) -> sqlx::Result<bool> {
    let updated = sqlx::query!(
        "UPDATE workforce_contractors SET trust_score = $4, version = version + 1, updated_at = now()
         WHERE workspace_id = $1 AND id = $2 AND version = $3",
        workspace_id,
        c.contractor_id,
        c.version,
        c.new
    )
    .execute(&mut *conn)
    .await?;
    if updated.rows_affected() != 1 {
        return Ok(false);
    }
    sqlx::query!(
        "INSERT INTO trust_history (workspace_id, contractor_id, work_package_id, previous_score,
                                    new_score, quality_rating, reason, created_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
        workspace_id,
        c.contractor_id,
        c.work_package_id,
        c.previous,
        c.new,
        c.rating,
        c.reason,
        actor
    )
    .execute(conn)
    .await?;
    Ok(true)
}

/// A work package as the API shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct PackageView {
    /// Id.
    pub id: Uuid,
    /// Title.
    pub title: String,
    /// What to do.
    pub description: String,
    /// Skills needed (lower-case).
    pub required_skills: Vec<String>,
    /// `low`, `normal`, `high` or `critical`.
    pub priority: String,
    /// Due date (`YYYY-MM-DD`).
    pub deadline: Option<String>,
    /// Budget.
    pub budget: Option<f64>,
    /// `draft`, `open`, `assigned`, `in_progress`, `review`, `completed` or `cancelled`.
    pub status: String,
    /// The contractor assigned.
    pub contractor_id: Option<Uuid>,
    /// Percent done, 0–100.
    pub progress: i32,
    /// Progress notes `[{at, by, text}]`, oldest first.
    #[schema(value_type = Vec<Object>)]
    pub notes: Value,
    /// Auto-matched contractors `[{contractor_id, name, skill_overlap, trust_score, score}]`, best first (computed on entering `open`, refreshed by `assign`).
    #[schema(value_type = Vec<Object>)]
    pub candidates: Value,
    /// When each status was entered: `[{status, at, by}]`.
    #[schema(value_type = Vec<Object>)]
    pub status_history: Value,
    /// What was delivered (set on `review` or `completed`).
    pub deliverable: Option<Value>,
    /// The rating given on completion.
    pub quality_rating: Option<String>,
    /// The mission of a delegated task.
    pub mission_id: Option<Uuid>,
    /// The delegated task: it resumes when this package completes.
    pub task_id: Option<Uuid>,
    /// Guard for writes: pass it back to refuse a stale transition.
    pub version: i64,
    /// Who created it.
    pub created_by: String,
    /// When.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
    /// Last change.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

/// A package about to be created.
#[derive(Debug)]
pub struct NewPackage<'a> {
    /// Title.
    pub title: &'a str,
    /// Description.
    pub description: &'a str,
    /// Skills, normalised.
    pub required_skills: &'a [String],
    /// Priority.
    pub priority: &'a str,
    /// Due date.
    pub deadline: Option<time::Date>,
    /// Budget.
    pub budget: Option<f64>,
    /// Delegated task's mission.
    pub mission_id: Option<Uuid>,
    /// Delegated task.
    pub task_id: Option<Uuid>,
}

/// Creates a package in `draft`; `None` when the task already has a live one.
pub async fn insert_package(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    p: NewPackage<'_>,
    actor: &str,
) -> sqlx::Result<Option<PackageView>> {
    sqlx::query_as!(
        PackageView,
        r#"INSERT INTO work_packages (id, workspace_id, title, description, required_skills, priority,
                                      deadline, budget, mission_id, task_id, created_by, status_history)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11,
                   jsonb_build_array(jsonb_build_object('status', 'draft', 'at', now(), 'by', $11::text)))
           ON CONFLICT (task_id) WHERE task_id IS NOT NULL AND status NOT IN ('completed', 'cancelled') DO NOTHING
           RETURNING id, title, description, required_skills, priority, deadline::text AS deadline,
                     budget, status, contractor_id, progress, notes, candidates, status_history,
                     deliverable, quality_rating, mission_id, task_id, version, created_by,
                     created_at, updated_at"#,
        Uuid::now_v7(),
        workspace_id,
        p.title,
        p.description,
        p.required_skills,
        p.priority,
        p.deadline,
        p.budget,
        p.mission_id,
        p.task_id,
        actor
    )
    .fetch_optional(conn)
    .await
}

/// One package; `lock` takes its row lock.
pub async fn get_package(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
    lock: bool,
) -> sqlx::Result<Option<PackageView>> {
    if lock {
        return sqlx::query_as!(
            PackageView,
            r#"SELECT id, title, description, required_skills, priority, deadline::text AS deadline,
                      budget, status, contractor_id, progress, notes, candidates, status_history,
                      deliverable, quality_rating, mission_id, task_id, version, created_by,
                      created_at, updated_at
               FROM work_packages WHERE workspace_id = $1 AND id = $2 FOR UPDATE"#,
            workspace_id,
            id
        )
        .fetch_optional(conn)
        .await;
    }
    sqlx::query_as!(
        PackageView,
        r#"SELECT id, title, description, required_skills, priority, deadline::text AS deadline,
                  budget, status, contractor_id, progress, notes, candidates, status_history,
                  deliverable, quality_rating, mission_id, task_id, version, created_by,
                  created_at, updated_at
           FROM work_packages WHERE workspace_id = $1 AND id = $2"#,
        workspace_id,
        id
    )
    .fetch_optional(conn)
    .await
}

/// Which packages a listing wants.
#[derive(Debug, Default)]
pub struct PackageFilter {
    /// In this status.
    pub status: Option<String>,
    /// Assigned to this contractor.
    pub contractor_id: Option<Uuid>,
    /// Delegating this task.
    pub task_id: Option<Uuid>,
    /// Of this mission.
    pub mission_id: Option<Uuid>,
}

/// Packages of the workspace matching `f`, oldest first.
pub async fn list_packages(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    f: &PackageFilter,
    limit: i64,
) -> sqlx::Result<Vec<PackageView>> {
    sqlx::query_as!(
        PackageView,
        r#"SELECT id, title, description, required_skills, priority, deadline::text AS deadline,
                  budget, status, contractor_id, progress, notes, candidates, status_history,
                  deliverable, quality_rating, mission_id, task_id, version, created_by,
                  created_at, updated_at
           FROM work_packages
           WHERE workspace_id = $1
             AND ($2::text IS NULL OR status = $2)
             AND ($3::uuid IS NULL OR contractor_id = $3)
             AND ($4::uuid IS NULL OR task_id = $4)
             AND ($5::uuid IS NULL OR mission_id = $5)
           ORDER BY created_at, id
           LIMIT $6"#,
        workspace_id,
        f.status,
        f.contractor_id,
        f.task_id,
        f.mission_id,
        limit
    )
    .fetch_all(conn)
    .await
}

/// What a package transition writes.
#[derive(Debug)]
pub struct PackageChange<'a> {
    /// The version the caller read (under the row lock).
    pub version: i64,
    /// The new status (may equal the old one for a progress update).
    pub status: &'a str,
    /// Whether the status changes (appends to `status_history`).
    pub status_changed: bool,
    /// New contractor, if set.
    pub contractor_id: Option<Uuid>,
    /// New progress, if set.
    pub progress: Option<i32>,
    /// A note to append.
    pub note: Option<&'a str>,
    /// New candidates, if recomputed.
    pub candidates: Option<Value>,
    /// Deliverable, if given.
    pub deliverable: Option<Value>,
    /// Rating, if given.
    pub quality_rating: Option<&'a str>,
}

/// Applies a package change guarded by `version`; `None` if it moved meanwhile.
pub async fn update_package(
    conn: &mut PgConnection,
    workspace_id: Uuid,
    id: Uuid,
    c: PackageChange<'_>,
    actor: &str,
) -> sqlx::Result<Option<PackageView>> {
    sqlx::query_as!(
        PackageView,
        r#"UPDATE work_packages
           SET status = $4,
               status_history = CASE WHEN $5 THEN status_history || jsonb_build_array(
                   jsonb_build_object('status', $4::text, 'at', now(), 'by', $12::text))
                   ELSE status_history END,
               contractor_id = COALESCE($6, contractor_id),
               progress = COALESCE($7, progress),
               notes = CASE WHEN $8::text IS NULL THEN notes ELSE notes || jsonb_build_array(
                   jsonb_build_object('at', now(), 'by', $12::text, 'text', $8::text)) END,
               candidates = COALESCE($9, candidates),
               deliverable = COALESCE($10, deliverable),
               quality_rating = COALESCE($11, quality_rating),
               version = version + 1, updated_at = now()
           WHERE workspace_id = $1 AND id = $2 AND version = $3
           RETURNING id, title, description, required_skills, priority, deadline::text AS deadline,
                     budget, status, contractor_id, progress, notes, candidates, status_history,
                     deliverable, quality_rating, mission_id, task_id, version, created_by,
                     created_at, updated_at"#,
        workspace_id,
        id,
        c.version,
        c.status,
        c.status_changed,
        c.contractor_id,
        c.progress,
        c.note,
        c.candidates,
        c.deliverable,
        c.quality_rating,
        actor
    )
    .fetch_optional(conn)
    .await
}
