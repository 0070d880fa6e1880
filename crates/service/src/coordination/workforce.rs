//! The human workforce: contractors (people, not the mission-scoped
//! contractor *agents* of the registry), their trust, and work packages
//! delegated to them — with the package lifecycle, auto-matching and the
//! trust formula as pure functions, and the use cases that apply them.
//!
//! Package lifecycle: `draft → open → assigned → in_progress → review →
//! completed`, with `review → in_progress` for rework, and any status that is
//! not terminal → `cancelled`. Entering `open` computes the candidates
//! (proposed, not assigned); `assigned` takes a named contractor or the best
//! candidate. Entering `completed` needs a quality rating and updates the
//! contractor's trust. A package delegating a mission task completes that
//! task with its deliverable; cancelling it returns the task to the queue.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

use crate::{
    auth::Principal,
    domain::text_enum,
    error::ApiError,
    missions::human::{self, HumanAction, Settlement},
    store::{
        attempts::Cancelled,
        events::{self, WorkspaceEvent},
        missions::{self as mission_store, MissionRow},
        tasks::TaskRow,
        workforce::{
            self as store, ContractorFilter, ContractorView, NewContractor, NewPackage,
            PackageChange, PackageFilter, PackageView, TrustChange,
        },
    },
};

/// Event kinds written by the workforce.
pub mod kind {
    /// A contractor was registered.
    pub const CONTRACTOR_ADDED: &str = "contractor.added";
    /// A contractor's details or availability changed.
    pub const CONTRACTOR_UPDATED: &str = "contractor.updated";
    /// A contractor's trust changed (payload: previous, new, rating, work package).
    pub const CONTRACTOR_TRUST_UPDATED: &str = "contractor.trust_updated";
    /// A work package was created (in `draft`).
    pub const WORK_PACKAGE_CREATED: &str = "work_package.created";
    /// A work package changed status (payload: from, to, candidates on `open`).
    pub const WORK_PACKAGE_STATUS: &str = "work_package.status_changed";
    /// A work package's progress or notes changed.
    pub const WORK_PACKAGE_PROGRESS: &str = "work_package.progress";
}

/// Where a work package is in its lifecycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PackageStatus {
    /// Being defined; not yet available.
    Draft,
    /// Available for assignment; auto-matching ran.
    Open,
    /// A contractor was selected; awaiting start.
    Assigned,
    /// Being worked on.
    InProgress,
    /// Submitted for quality review.
    Review,
    /// Accepted; trust updated. Terminal.
    Completed,
    /// Dropped. Terminal.
    Cancelled,
}

text_enum!(PackageStatus {
    Draft => "draft",
    Open => "open",
    Assigned => "assigned",
    InProgress => "in_progress",
    Review => "review",
    Completed => "completed",
    Cancelled => "cancelled",
});

/// A package transition the lifecycle does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IllegalPackageTransition {
    /// The status it was in.
    pub from: PackageStatus,
    /// The status asked for.
    pub to: PackageStatus,
}

impl From<IllegalPackageTransition> for ApiError {
    fn from(e: IllegalPackageTransition) -> Self {
        ApiError::Conflict {
            code: "illegal_transition",
            message: format!("a work package cannot go from {} to {}", e.from, e.to),
            details: json!({ "from": e.from, "to": e.to }),
        }
    }
}

impl PackageStatus {
    /// True once nothing can change any more.
    pub fn is_terminal(self) -> bool {
        matches!(self, PackageStatus::Completed | PackageStatus::Cancelled)
    }

    /// Checks the move to `to`.
    pub fn next(self, to: PackageStatus) -> Result<PackageStatus, IllegalPackageTransition> {
        use PackageStatus as S;
        let ok = match (self, to) {
            (S::Draft, S::Open)
            | (S::Open, S::Assigned)
            | (S::Assigned, S::InProgress)
            | (S::InProgress, S::Review)
            | (S::Review, S::Completed)
            // A reviewer sends the work back.
            | (S::Review, S::InProgress) => true,
            (s, S::Cancelled) => !s.is_terminal(),
            _ => false,
        };
        if ok {
            Ok(to)
        } else {
            Err(IllegalPackageTransition { from: self, to })
        }
    }
}

/// A contractor's availability.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Availability {
    /// Full time.
    FullTime,
    /// Part time.
    PartTime,
    /// Called in when needed.
    OnCall,
    /// Not taking work: never matched or assigned.
    Unavailable,
}

text_enum!(Availability {
    FullTime => "full-time",
    PartTime => "part-time",
    OnCall => "on-call",
    Unavailable => "unavailable",
});

/// How well a completed package was done.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QualityRating {
    /// Above expectations.
    Excellent,
    /// Good.
    Good,
    /// Meets expectations.
    Satisfactory,
    /// No evidence either way: trust unchanged.
    Neutral,
    /// Below expectations.
    Unsatisfactory,
    /// Far below expectations.
    Poor,
}

text_enum!(QualityRating {
    Excellent => "excellent",
    Good => "good",
    Satisfactory => "satisfactory",
    Neutral => "neutral",
    Unsatisfactory => "unsatisfactory",
    Poor => "poor",
});

impl QualityRating {
    /// The seed's quality adjustment: +1 satisfactory or above, −1 below, 0 neutral.
    pub fn adjustment(self) -> i8 {
        match self {
            QualityRating::Excellent | QualityRating::Good | QualityRating::Satisfactory => 1,
            QualityRating::Neutral => 0,
            QualityRating::Unsatisfactory | QualityRating::Poor => -1,
        }
    }
}

/// Trust of a newcomer.
pub const INITIAL_TRUST: f64 = 0.5;
/// Trust step per rating.
pub const TRUST_STEP: f64 = 0.1;
/// Lowest trust auto-matching proposes.
pub const MATCH_MIN_TRUST: f64 = 0.5;

/// `current + adjustment × 0.1`, clamped to [0, 1] and rounded to 1e-9 so
/// repeated steps stay exact (0.5 + 0.1 + 0.1 is 0.7, not 0.7000000000000001).
pub fn updated_trust(current: f64, rating: QualityRating) -> f64 {
    let raw = current + f64::from(rating.adjustment()) * TRUST_STEP;
    (raw.clamp(0.0, 1.0) * 1e9).round() / 1e9
}

/// What matching needs to know of a contractor.
#[derive(Debug, Clone)]
pub struct Profile {
    /// Id.
    pub id: Uuid,
    /// Name.
    pub name: String,
    /// Skills (normalised).
    pub skills: Vec<String>,
    /// Trust.
    pub trust: f64,
    /// Availability as stored.
    pub availability: String,
}

/// A proposed contractor for a package.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Candidate {
    /// The contractor.
    pub contractor_id: Uuid,
    /// Their name.
    pub name: String,
    /// Share of the required skills they have, (0, 1].
    pub skill_overlap: f64,
    /// Their trust.
    pub trust_score: f64,
    /// `skill_overlap × trust_score`.
    pub score: f64,
}

/// The seed's auto-matching: every contractor with some of the required
/// skills, trust ≥ 0.5 and not `unavailable`, scored `overlap × trust`,
/// best first (ties by contractor id). No required skills: no candidates.
pub fn match_candidates(required: &[String], pool: &[Profile]) -> Vec<Candidate> {
    let needed: std::collections::BTreeSet<&str> = required.iter().map(String::as_str).collect();
    if needed.is_empty() {
        return Vec::new();
    }
    let mut out: Vec<Candidate> = pool
        .iter()
        .filter(|c| {
            c.trust >= MATCH_MIN_TRUST && c.availability != Availability::Unavailable.as_str()
        })
        .filter_map(|c| {
            let have = c
                .skills
                .iter()
                .map(String::as_str)
                .filter(|s| needed.contains(s))
                .collect::<std::collections::BTreeSet<_>>()
                .len();
            let overlap = have as f64 / needed.len() as f64;
            (overlap > 0.0).then(|| Candidate {
                contractor_id: c.id,
                name: c.name.clone(),
                skill_overlap: round9(overlap),
                trust_score: c.trust,
                score: round9(overlap * c.trust),
            })
        })
        .collect();
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.contractor_id.cmp(&b.contractor_id))
    });
    out
}

fn round9(x: f64) -> f64 {
    (x * 1e9).round() / 1e9
}

/// Trims, lower-cases and de-duplicates skill names; refuses bad ones.
pub fn normalise_skills(field: &str, skills: &[String]) -> Result<Vec<String>, ApiError> {
    if skills.len() > 100 {
        return Err(ApiError::invalid(field, format!("at most 100 {field}")));
    }
    let mut out: Vec<String> = Vec::with_capacity(skills.len());
    for s in skills {
        let s = s.trim().to_lowercase();
        if s.is_empty() || s.chars().count() > 64 {
            return Err(ApiError::invalid(
                field,
                format!("each of {field} must be 1–64 characters"),
            ));
        }
        if !out.contains(&s) {
            out.push(s);
        }
    }
    Ok(out)
}

fn check_text(field: &str, value: &str, max: usize, required: bool) -> Result<(), ApiError> {
    if required && value.trim().is_empty() {
        return Err(ApiError::invalid(
            field,
            format!("{field} must not be empty"),
        ));
    }
    if value.chars().count() > max {
        return Err(ApiError::invalid(
            field,
            format!("{field} must be at most {max} characters"),
        ));
    }
    Ok(())
}

fn check_money(field: &str, value: Option<f64>) -> Result<(), ApiError> {
    if value.is_some_and(|v| !v.is_finite() || v < 0.0) {
        return Err(ApiError::invalid(
            field,
            format!("{field} must be a non-negative number"),
        ));
    }
    Ok(())
}

fn check_json_size(field: &str, value: &Value) -> Result<(), ApiError> {
    if serde_json::to_vec(value).map_or(0, |v| v.len()) > 64 * 1024 {
        return Err(ApiError::invalid(
            field,
            format!("{field} must be at most 64 KiB"),
        ));
    }
    Ok(())
}

fn version_conflict(entity: &str, id: Uuid, given: i64, now: i64) -> ApiError {
    ApiError::Conflict {
        code: "version_conflict",
        message: format!(
            "{entity} {id} changed since version {given} (now {now}); reload and try again"
        ),
        details: json!({ "id": id, "version": now }),
    }
}

fn lost_race() -> ApiError {
    ApiError::conflict(
        "concurrent_update",
        "the work package changed while this request ran; retry",
    )
}

// ---------------------------------------------------------------- contractors

/// `POST /v1/contractors` body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddContractor {
    /// Name, 1–200 characters.
    pub name: String,
    /// Skills (at most 100, each 1–64 characters; stored lower-case).
    #[serde(default)]
    pub skills: Vec<String>,
    /// Hourly rate, non-negative (default 0).
    #[serde(default)]
    pub hourly_rate: Option<f64>,
    /// Availability (default `full-time`).
    #[serde(default)]
    pub availability: Option<Availability>,
    /// How to reach them (at most 500 characters).
    #[serde(default)]
    pub contact: Option<String>,
}

/// Registers a contractor at trust 0.5.
pub async fn add_contractor(
    pool: &PgPool,
    who: &Principal,
    req: AddContractor,
) -> Result<ContractorView, ApiError> {
    check_text("name", &req.name, 200, true)?;
    let skills = normalise_skills("skills", &req.skills)?;
    check_money("hourly_rate", req.hourly_rate)?;
    let contact = req.contact.unwrap_or_default();
    check_text("contact", &contact, 500, false)?;
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let c = store::insert_contractor(
        &mut tx,
        who.workspace_id,
        NewContractor {
            name: req.name.trim(),
            skills: &skills,
            hourly_rate: req.hourly_rate.unwrap_or(0.0),
            availability: req.availability.unwrap_or(Availability::FullTime).as_str(),
            contact: contact.trim(),
        },
        &actor,
    )
    .await?;
    events::record(
        &mut tx,
        who.workspace_id,
        WorkspaceEvent {
            mission_id: None,
            task_id: None,
            kind: kind::CONTRACTOR_ADDED,
            actor: &actor,
            payload: json!({ "contractor_id": c.id, "name": c.name, "skills": c.skills, "trust_score": c.trust_score }),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(c)
}

/// A contractor with its trust history.
pub async fn contractor(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
) -> Result<ContractorView, ApiError> {
    let mut conn = pool.acquire().await?;
    let mut c = store::get_contractor(&mut conn, who.workspace_id, id, false)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no contractor {id}")))?;
    drop(conn);
    c.trust_history = Some(store::trust_history(pool, who.workspace_id, id).await?);
    Ok(c)
}

/// Contractors filtered by skills (all of them), minimum trust and availability.
pub async fn contractors(
    pool: &PgPool,
    who: &Principal,
    skills: &[String],
    min_trust: Option<f64>,
    availability: Option<Availability>,
    limit: i64,
) -> Result<Vec<ContractorView>, ApiError> {
    let skills = normalise_skills("skills", skills)?;
    if min_trust.is_some_and(|t| !(0.0..=1.0).contains(&t)) {
        return Err(ApiError::invalid(
            "min_trust",
            "min_trust must be between 0 and 1",
        ));
    }
    let mut conn = pool.acquire().await?;
    Ok(store::list_contractors(
        &mut conn,
        who.workspace_id,
        ContractorFilter {
            skills: &skills,
            min_trust,
            availability: availability.map(Availability::as_str),
        },
        limit,
    )
    .await?)
}

/// `PATCH /v1/contractors/{id}` body: only what is named changes.
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateContractor {
    /// The version read; a newer row refuses the update (409 `version_conflict`).
    #[serde(default)]
    pub version: Option<i64>,
    /// New name.
    #[serde(default)]
    pub name: Option<String>,
    /// New skills (replace the old ones).
    #[serde(default)]
    pub skills: Option<Vec<String>>,
    /// New hourly rate.
    #[serde(default)]
    pub hourly_rate: Option<f64>,
    /// New availability.
    #[serde(default)]
    pub availability: Option<Availability>,
    /// New contact.
    #[serde(default)]
    pub contact: Option<String>,
}

/// Updates a contractor's details or availability (trust changes only through ratings).
pub async fn update_contractor(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
    req: UpdateContractor,
) -> Result<ContractorView, ApiError> {
    if let Some(n) = &req.name {
        check_text("name", n, 200, true)?;
    }
    let skills = req
        .skills
        .as_deref()
        .map(|s| normalise_skills("skills", s))
        .transpose()?;
    check_money("hourly_rate", req.hourly_rate)?;
    if let Some(c) = &req.contact {
        check_text("contact", c, 500, false)?;
    }
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let current = store::get_contractor(&mut tx, who.workspace_id, id, true)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no contractor {id}")))?;
    if let Some(v) = req.version
        && v != current.version
    {
        return Err(version_conflict("contractor", id, v, current.version));
    }
    let c = store::update_contractor(
        &mut tx,
        who.workspace_id,
        id,
        current.version,
        req.name.as_deref().map(str::trim),
        skills.as_deref(),
        req.hourly_rate,
        req.availability.map(Availability::as_str),
        req.contact.as_deref().map(str::trim),
    )
    .await?
    .ok_or_else(lost_race)?;
    events::record(
        &mut tx,
        who.workspace_id,
        WorkspaceEvent {
            mission_id: None,
            task_id: None,
            kind: kind::CONTRACTOR_UPDATED,
            actor: &actor,
            payload: json!({ "contractor_id": id, "availability": c.availability, "skills": c.skills }),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(c)
}

// --------------------------------------------------------------- work packages

/// Priority of a work package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PackagePriority {
    /// Low.
    Low,
    /// Normal (default).
    Normal,
    /// High.
    High,
    /// Critical.
    Critical,
}

text_enum!(PackagePriority {
    Low => "low",
    Normal => "normal",
    High => "high",
    Critical => "critical",
});

/// `POST /v1/work-packages` body (also the optional body of a delegation).
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreatePackage {
    /// Title, 1–200 characters (a delegation defaults to the task's title).
    #[serde(default)]
    pub title: Option<String>,
    /// What to do, at most 10000 characters (a delegation defaults to the task's description).
    #[serde(default)]
    pub description: Option<String>,
    /// Skills needed (a delegation defaults to the task's).
    #[serde(default)]
    pub required_skills: Option<Vec<String>>,
    /// `low`, `normal` (default), `high` or `critical`.
    #[serde(default)]
    pub priority: Option<PackagePriority>,
    /// Due date, `YYYY-MM-DD`.
    #[serde(default)]
    pub deadline: Option<String>,
    /// Budget, non-negative.
    #[serde(default)]
    pub budget: Option<f64>,
    /// Open it at once (runs auto-matching). Default false; a delegation defaults to true.
    #[serde(default)]
    pub open: Option<bool>,
}

struct PackageSpec {
    title: String,
    description: String,
    skills: Vec<String>,
    priority: PackagePriority,
    deadline: Option<time::Date>,
    budget: Option<f64>,
}

fn package_spec(req: &CreatePackage, task: Option<&TaskRow>) -> Result<PackageSpec, ApiError> {
    let title = req
        .title
        .clone()
        .or_else(|| task.map(|t| t.title.chars().take(200).collect()))
        .unwrap_or_default();
    check_text("title", &title, 200, true)?;
    let description = req
        .description
        .clone()
        .or_else(|| task.map(|t| t.description.clone()))
        .unwrap_or_default();
    check_text("description", &description, 10_000, false)?;
    let skills = match (&req.required_skills, task) {
        (Some(s), _) => normalise_skills("required_skills", s)?,
        (None, Some(t)) => normalise_skills("required_skills", &t.required_skills)?,
        (None, None) => Vec::new(),
    };
    check_money("budget", req.budget)?;
    let deadline = req
        .deadline
        .as_deref()
        .map(|d| {
            time::Date::parse(d, &time::format_description::well_known::Iso8601::DATE)
                .map_err(|_| ApiError::invalid("deadline", "deadline must be a date, YYYY-MM-DD"))
        })
        .transpose()?;
    Ok(PackageSpec {
        title: title.trim().to_owned(),
        description,
        skills,
        priority: req.priority.unwrap_or(PackagePriority::Normal),
        deadline,
        budget: req.budget,
    })
}

async fn insert_package(
    tx: &mut PgConnection,
    who: &Principal,
    spec: &PackageSpec,
    link: Option<(Uuid, Uuid)>,
    actor: &str,
) -> Result<PackageView, ApiError> {
    let p = store::insert_package(
        &mut *tx,
        who.workspace_id,
        NewPackage {
            title: &spec.title,
            description: &spec.description,
            required_skills: &spec.skills,
            priority: spec.priority.as_str(),
            deadline: spec.deadline,
            budget: spec.budget,
            mission_id: link.map(|l| l.0),
            task_id: link.map(|l| l.1),
        },
        actor,
    )
    .await?
    .ok_or_else(|| ApiError::Conflict {
        code: "already_delegated",
        message: "the task already has a work package that is not completed or cancelled".into(),
        details: json!({ "task_id": link.map(|l| l.1) }),
    })?;
    events::record(
        &mut *tx,
        who.workspace_id,
        WorkspaceEvent {
            mission_id: p.mission_id,
            task_id: p.task_id,
            kind: kind::WORK_PACKAGE_CREATED,
            actor,
            payload: json!({ "work_package_id": p.id, "title": p.title, "required_skills": p.required_skills }),
        },
    )
    .await?;
    Ok(p)
}

/// Creates a package in `draft` (and opens it when asked).
pub async fn create_package(
    pool: &PgPool,
    http: &reqwest::Client,
    who: &Principal,
    req: CreatePackage,
) -> Result<PackageView, ApiError> {
    let spec = package_spec(&req, None)?;
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let mut p = insert_package(&mut tx, who, &spec, None, &actor).await?;
    let mut cancelled = Vec::new();
    if req.open.unwrap_or(false) {
        (p, cancelled) =
            apply_transition(&mut tx, who, None, p, Move::to(PackageStatus::Open), &actor).await?;
    }
    tx.commit().await?;
    crate::engine::dispatch::notify_cancelled(http, cancelled);
    Ok(p)
}

/// Delegates a mission task to a person: creates a package linked to the
/// task (opened at once unless `open: false`) and moves the task to
/// `awaiting_human` (from `queued` or `retry_wait`; one already waiting for
/// a person stays). A running or pending task is refused (409).
pub async fn delegate_task(
    pool: &PgPool,
    http: &reqwest::Client,
    who: &Principal,
    mission: Uuid,
    task: &str,
    req: CreatePackage,
) -> Result<PackageView, ApiError> {
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let run = mission_store::lock(&mut tx, who.workspace_id, mission)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no mission {mission}")))?;
    if run.status().is_terminal() {
        return Err(ApiError::conflict(
            "invalid_state",
            format!("the mission is {}; its tasks cannot change", run.status),
        ));
    }
    let t = human::task_of_mission(&mut tx, &run, task).await?;
    use crate::domain::TaskStatus as T;
    if !matches!(t.status(), T::Queued | T::RetryWait | T::AwaitingHuman) {
        return Err(ApiError::Conflict {
            code: "invalid_state",
            message: format!(
                "task '{}' is {}; only a queued, retry_wait or awaiting_human task can be delegated",
                t.task_key, t.status
            ),
            details: json!({ "entity": "task", "status": t.status }),
        });
    }
    let spec = package_spec(&req, Some(&t))?;
    let mut p = insert_package(&mut tx, who, &spec, Some((run.id, t.id)), &actor).await?;
    let (_, live) = human::hand_to_person(
        &mut tx,
        &run,
        &t,
        &actor,
        json!({ "reason": "delegated to a work package", "work_package_id": p.id }),
    )
    .await?;
    let mut cancelled = live;
    if req.open.unwrap_or(true) {
        let more;
        (p, more) = apply_transition(
            &mut tx,
            who,
            Some(run),
            p,
            Move::to(PackageStatus::Open),
            &actor,
        )
        .await?;
        cancelled.extend(more);
    }
    mission_store::notify_wake(&mut tx).await?;
    tx.commit().await?;
    crate::engine::dispatch::notify_cancelled(http, cancelled);
    Ok(p)
}

/// Packages filtered by status, contractor, task or mission.
pub async fn packages(
    pool: &PgPool,
    who: &Principal,
    f: &PackageFilter,
    limit: i64,
) -> Result<Vec<PackageView>, ApiError> {
    let mut conn = pool.acquire().await?;
    Ok(store::list_packages(&mut conn, who.workspace_id, f, limit).await?)
}

/// One package.
pub async fn package(pool: &PgPool, who: &Principal, id: Uuid) -> Result<PackageView, ApiError> {
    let mut conn = pool.acquire().await?;
    store::get_package(&mut conn, who.workspace_id, id, false)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no work package {id}")))
}

/// `POST /v1/work-packages/{id}/transition` body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TransitionRequest {
    /// The status to move to.
    pub to: PackageStatus,
    /// The version read; a newer package refuses the move (409 `version_conflict`).
    #[serde(default)]
    pub version: Option<i64>,
    /// For `assigned`: the contractor (default: the best candidate now).
    #[serde(default)]
    pub contractor_id: Option<Uuid>,
    /// New progress, 0–100.
    #[serde(default)]
    pub progress: Option<i32>,
    /// A progress note to append (at most 4000 characters).
    #[serde(default)]
    pub note: Option<String>,
    /// For `review`/`completed`: what was delivered (a delegated task's output).
    #[serde(default)]
    pub deliverable: Option<Value>,
    /// Required for `completed`: how well it was done (updates trust).
    #[serde(default)]
    pub quality_rating: Option<QualityRating>,
    /// Why (kept on the trust history and events; at most 2000 characters).
    #[serde(default)]
    pub reason: Option<String>,
}

/// One requested move, validated.
#[derive(Debug, Clone)]
struct Move {
    to: PackageStatus,
    contractor_id: Option<Uuid>,
    progress: Option<i32>,
    note: Option<String>,
    deliverable: Option<Value>,
    rating: Option<QualityRating>,
    reason: Option<String>,
}

impl Move {
    fn to(to: PackageStatus) -> Move {
        Move {
            to,
            contractor_id: None,
            progress: None,
            note: None,
            deliverable: None,
            rating: None,
            reason: None,
        }
    }
}

fn check_move(req: &TransitionRequest) -> Result<(), ApiError> {
    if req.progress.is_some_and(|p| !(0..=100).contains(&p)) {
        return Err(ApiError::invalid(
            "progress",
            "progress must be between 0 and 100",
        ));
    }
    if let Some(n) = &req.note {
        check_text("note", n, 4000, true)?;
    }
    if let Some(r) = &req.reason {
        check_text("reason", r, 2000, false)?;
    }
    if let Some(d) = &req.deliverable {
        check_json_size("deliverable", d)?;
    }
    if req.contractor_id.is_some() && req.to != PackageStatus::Assigned {
        return Err(ApiError::invalid(
            "contractor_id",
            "contractor_id is only taken when moving to 'assigned'",
        ));
    }
    if req.deliverable.is_some()
        && !matches!(req.to, PackageStatus::Review | PackageStatus::Completed)
    {
        return Err(ApiError::invalid(
            "deliverable",
            "deliverable is only taken when moving to 'review' or 'completed'",
        ));
    }
    match (req.to, req.quality_rating) {
        (PackageStatus::Completed, None) => Err(ApiError::invalid(
            "quality_rating",
            "completing a work package needs a quality_rating",
        )),
        (to, Some(_)) if to != PackageStatus::Completed => Err(ApiError::invalid(
            "quality_rating",
            "quality_rating is only taken when moving to 'completed'",
        )),
        _ => Ok(()),
    }
}

/// Moves a package through its lifecycle (see the module doc). Moving a
/// terminal package to the status it has already (completing it again with
/// the same rating, cancelling it again) is a no-op returning it unchanged.
pub async fn transition(
    pool: &PgPool,
    http: &reqwest::Client,
    who: &Principal,
    id: Uuid,
    req: TransitionRequest,
) -> Result<PackageView, ApiError> {
    check_move(&req)?;
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    // Lock order: the delegated task's mission first, then the package.
    let peek = store::get_package(&mut tx, who.workspace_id, id, false)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no work package {id}")))?;
    let run = match peek.mission_id {
        Some(m) => mission_store::lock(&mut tx, who.workspace_id, m).await?,
        None => None,
    };
    let p = store::get_package(&mut tx, who.workspace_id, id, true)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no work package {id}")))?;
    let from: PackageStatus = p.status.parse()?;
    // A retried final move answers as the first one did, whatever version it names.
    if from == req.to && from.is_terminal() {
        let same_rating =
            req.quality_rating.map(QualityRating::as_str) == p.quality_rating.as_deref();
        if req.to == PackageStatus::Cancelled || same_rating {
            return Ok(p);
        }
        return Err(ApiError::Conflict {
            code: "already_completed",
            message: format!(
                "work package {id} was completed with rating '{}' already",
                p.quality_rating.as_deref().unwrap_or("")
            ),
            details: json!({ "id": id, "quality_rating": p.quality_rating }),
        });
    }
    if let Some(v) = req.version
        && v != p.version
    {
        return Err(version_conflict("work package", id, v, p.version));
    }
    let mv = Move {
        to: req.to,
        contractor_id: req.contractor_id,
        progress: req.progress,
        note: req.note,
        deliverable: req.deliverable,
        rating: req.quality_rating,
        reason: req.reason,
    };
    let (p, cancelled) = apply_transition(&mut tx, who, run, p, mv, &actor).await?;
    tx.commit().await?;
    crate::engine::dispatch::notify_cancelled(http, cancelled);
    Ok(p)
}

/// `POST /v1/work-packages/{id}/assign` body.
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AssignRequest {
    /// The contractor (default: the best candidate now).
    #[serde(default)]
    pub contractor_id: Option<Uuid>,
    /// The version read (409 `version_conflict` if newer).
    #[serde(default)]
    pub version: Option<i64>,
    /// A note to append.
    #[serde(default)]
    pub note: Option<String>,
}

/// Assigns an open package: `transition` to `assigned`.
pub async fn assign(
    pool: &PgPool,
    http: &reqwest::Client,
    who: &Principal,
    id: Uuid,
    req: AssignRequest,
) -> Result<PackageView, ApiError> {
    transition(
        pool,
        http,
        who,
        id,
        TransitionRequest {
            to: PackageStatus::Assigned,
            version: req.version,
            contractor_id: req.contractor_id,
            progress: None,
            note: req.note,
            deliverable: None,
            quality_rating: None,
            reason: None,
        },
    )
    .await
}

/// `POST /v1/work-packages/{id}/progress` body.
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProgressRequest {
    /// Percent done, 0–100.
    #[serde(default)]
    pub progress: Option<i32>,
    /// A note to append (at most 4000 characters).
    #[serde(default)]
    pub note: Option<String>,
    /// The version read (409 `version_conflict` if newer).
    #[serde(default)]
    pub version: Option<i64>,
}

/// Records progress or a note on a package that is not terminal, without moving it.
pub async fn record_progress(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
    req: ProgressRequest,
) -> Result<PackageView, ApiError> {
    if req.progress.is_none() && req.note.is_none() {
        return Err(ApiError::invalid(
            "progress",
            "give progress, a note, or both",
        ));
    }
    if req.progress.is_some_and(|p| !(0..=100).contains(&p)) {
        return Err(ApiError::invalid(
            "progress",
            "progress must be between 0 and 100",
        ));
    }
    if let Some(n) = &req.note {
        check_text("note", n, 4000, true)?;
    }
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let p = store::get_package(&mut tx, who.workspace_id, id, true)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no work package {id}")))?;
    if let Some(v) = req.version
        && v != p.version
    {
        return Err(version_conflict("work package", id, v, p.version));
    }
    let status: PackageStatus = p.status.parse()?;
    if status.is_terminal() {
        return Err(ApiError::Conflict {
            code: "invalid_state",
            message: format!("work package {id} is {status}; it no longer changes"),
            details: json!({ "entity": "work_package", "status": status }),
        });
    }
    let updated = store::update_package(
        &mut tx,
        who.workspace_id,
        id,
        PackageChange {
            version: p.version,
            status: status.as_str(),
            status_changed: false,
            contractor_id: None,
            progress: req.progress,
            note: req.note.as_deref(),
            candidates: None,
            deliverable: None,
            quality_rating: None,
        },
        &actor,
    )
    .await?
    .ok_or_else(lost_race)?;
    // A workspace event even for a delegated package: the mission log's
    // sequence would need the mission's lock, taken before the package's.
    events::record(
        &mut tx,
        who.workspace_id,
        WorkspaceEvent {
            mission_id: None,
            task_id: updated.task_id,
            kind: kind::WORK_PACKAGE_PROGRESS,
            actor: &actor,
            payload: json!({ "work_package_id": id, "progress": updated.progress, "note": req.note, "mission_id": updated.mission_id }),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(updated)
}

/// Applies one allowed move inside the caller's transaction (which holds
/// the delegated task's mission lock, if any, and the package's row lock):
/// matching on `open`, contractor choice on `assigned`, trust and the
/// delegated task on `completed`, the task back to the queue on `cancelled`.
async fn apply_transition(
    tx: &mut PgConnection,
    who: &Principal,
    mut run: Option<MissionRow>,
    p: PackageView,
    mv: Move,
    actor: &str,
) -> Result<(PackageView, Vec<Cancelled>), ApiError> {
    let from: PackageStatus = p.status.parse()?;
    let to = from.next(mv.to)?;
    let mut candidates = None;
    let mut contractor_id = None;
    let mut payload = json!({ "work_package_id": p.id, "from": from, "to": to });
    match to {
        PackageStatus::Open => {
            let found = candidates_now(tx, who.workspace_id, &p.required_skills).await?;
            payload["candidates"] = json!(found);
            candidates = Some(json!(found));
        }
        PackageStatus::Assigned => {
            let chosen = match mv.contractor_id {
                Some(c) => {
                    let c = store::get_contractor(tx, who.workspace_id, c, false)
                        .await?
                        .ok_or_else(|| ApiError::Unprocessable {
                            code: "unknown_contractor",
                            message: format!("no contractor {c}"),
                            details: json!({ "contractor_id": c }),
                        })?;
                    if c.availability == Availability::Unavailable.as_str() {
                        return Err(ApiError::Conflict {
                            code: "contractor_unavailable",
                            message: format!("contractor {} is unavailable", c.id),
                            details: json!({ "contractor_id": c.id }),
                        });
                    }
                    c.id
                }
                None => {
                    // Contractors change: match again rather than trust a stale list.
                    let found = candidates_now(tx, who.workspace_id, &p.required_skills).await?;
                    let top = found.first().map(|c| c.contractor_id);
                    candidates = Some(json!(found));
                    top.ok_or_else(|| ApiError::Conflict {
                        code: "no_candidate",
                        message: "no contractor matches this package; name one in contractor_id"
                            .into(),
                        details: json!({ "required_skills": p.required_skills }),
                    })?
                }
            };
            // The seed's "notification" to a person: the event carries their contact.
            payload["contractor_id"] = json!(chosen);
            contractor_id = Some(chosen);
        }
        _ => {}
    }
    let rating = mv.rating.map(QualityRating::as_str);
    let progress = if to == PackageStatus::Completed {
        Some(100)
    } else {
        mv.progress
    };
    let updated = store::update_package(
        tx,
        who.workspace_id,
        p.id,
        PackageChange {
            version: p.version,
            status: to.as_str(),
            status_changed: true,
            contractor_id,
            progress,
            note: mv.note.as_deref(),
            candidates,
            deliverable: mv.deliverable.clone(),
            quality_rating: rating,
        },
        actor,
    )
    .await?
    .ok_or_else(lost_race)?;
    let mut cancelled = Vec::new();
    if to == PackageStatus::Completed
        && let (Some(rating), Some(cid)) = (mv.rating, updated.contractor_id)
    {
        let trust = rate_contractor(
            tx,
            who.workspace_id,
            cid,
            p.id,
            rating,
            mv.reason.as_deref(),
            actor,
        )
        .await?;
        payload["trust"] = trust;
        payload["quality_rating"] = json!(rating);
    }
    // A delegated task follows its package.
    if let (Some(run), Some(task_id)) = (run.as_mut(), updated.task_id)
        && matches!(to, PackageStatus::Completed | PackageStatus::Cancelled)
    {
        let t = crate::store::tasks::get(tx, task_id).await?;
        if t.workspace_id == who.workspace_id
            && t.status() == crate::domain::TaskStatus::AwaitingHuman
            && !run.status().is_terminal()
        {
            let settlement = if to == PackageStatus::Completed {
                Settlement {
                    action: HumanAction::Complete,
                    output: Some(json!({
                        "work_package_id": updated.id,
                        "contractor_id": updated.contractor_id,
                        "deliverable": updated.deliverable,
                        "notes": updated.notes,
                        "quality_rating": updated.quality_rating,
                    })),
                    feedback: mv.reason.clone(),
                    via: Some(json!({ "work_package_id": updated.id })),
                }
            } else {
                Settlement {
                    action: HumanAction::Retry,
                    output: None,
                    feedback: mv.reason.clone(),
                    via: Some(json!({ "work_package_id": updated.id })),
                }
            };
            cancelled = human::settle(tx, run, &t, settlement, actor).await?;
            payload["task"] = json!({ "id": t.id, "key": t.task_key, "action": if to == PackageStatus::Completed { "complete" } else { "retry" } });
            mission_store::notify_wake(tx).await?;
        } else {
            payload["task"] = json!({ "id": t.id, "key": t.task_key, "untouched": t.status });
        }
    }
    if let Some(r) = &mv.reason {
        payload["reason"] = json!(r);
    }
    events::record(
        tx,
        who.workspace_id,
        WorkspaceEvent {
            // The mission log only when its row is locked (its sequence lives there).
            mission_id: run.as_ref().map(|r| r.id),
            task_id: updated.task_id,
            kind: kind::WORK_PACKAGE_STATUS,
            actor,
            payload,
        },
    )
    .await?;
    Ok((updated, cancelled))
}

/// Auto-matching against the workspace's contractors as they are now.
async fn candidates_now(
    tx: &mut PgConnection,
    workspace_id: Uuid,
    skills: &[String],
) -> Result<Vec<Candidate>, ApiError> {
    let pool: Vec<Profile> = store::match_pool(tx, workspace_id, skills)
        .await?
        .into_iter()
        .map(|c| Profile {
            id: c.id,
            name: c.name,
            skills: c.skills,
            trust: c.trust_score,
            availability: c.availability,
        })
        .collect();
    Ok(match_candidates(skills, &pool))
}

/// Applies a rating to a contractor's trust and records it; returns the change.
async fn rate_contractor(
    tx: &mut PgConnection,
    workspace_id: Uuid,
    contractor_id: Uuid,
    work_package_id: Uuid,
    rating: QualityRating,
    reason: Option<&str>,
    actor: &str,
) -> Result<Value, ApiError> {
    let c = store::get_contractor(tx, workspace_id, contractor_id, true)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no contractor {contractor_id}")))?;
    let new = updated_trust(c.trust_score, rating);
    let written = store::apply_trust(
        tx,
        workspace_id,
        TrustChange {
            contractor_id,
            version: c.version,
            previous: c.trust_score,
            new,
            rating: rating.as_str(),
            reason: reason.unwrap_or(""),
            work_package_id,
        },
        actor,
    )
    .await?;
    if !written {
        return Err(lost_race());
    }
    let change = json!({
        "contractor_id": contractor_id, "previous_score": c.trust_score, "new_score": new,
        "quality_rating": rating, "work_package_id": work_package_id,
    });
    events::record(
        tx,
        workspace_id,
        WorkspaceEvent {
            mission_id: None,
            task_id: None,
            kind: kind::CONTRACTOR_TRUST_UPDATED,
            actor,
            payload: change.clone(),
        },
    )
    .await?;
    Ok(change)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(n: u128, skills: &[&str], trust: f64, availability: &str) -> Profile {
        Profile {
            id: Uuid::from_u128(n),
            name: format!("c{n}"),
            skills: skills.iter().map(|s| s.to_string()).collect(),
            trust,
            availability: availability.into(),
        }
    }

    fn skills(s: &[&str]) -> Vec<String> {
        s.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn lifecycle_follows_the_seed() {
        use PackageStatus as S;
        let path = [
            S::Draft,
            S::Open,
            S::Assigned,
            S::InProgress,
            S::Review,
            S::Completed,
        ];
        for w in path.windows(2) {
            assert_eq!(w[0].next(w[1]), Ok(w[1]));
        }
        assert_eq!(S::Review.next(S::InProgress), Ok(S::InProgress));
        for s in S::ALL {
            assert_eq!(s.next(S::Cancelled).is_ok(), !s.is_terminal(), "{s}");
        }
        for (from, to) in [
            (S::Draft, S::Completed),
            (S::Draft, S::Assigned),
            (S::Open, S::InProgress),
            (S::Completed, S::Open),
            (S::Cancelled, S::Open),
            (S::InProgress, S::Completed),
            (S::Open, S::Open),
            (S::Assigned, S::Draft),
        ] {
            assert_eq!(from.next(to), Err(IllegalPackageTransition { from, to }));
        }
    }

    #[test]
    fn trust_moves_by_a_tenth_and_is_clamped() {
        use QualityRating as Q;
        assert_eq!(updated_trust(0.5, Q::Satisfactory), 0.6);
        assert_eq!(
            updated_trust(updated_trust(0.5, Q::Good), Q::Excellent),
            0.7
        );
        assert_eq!(updated_trust(0.5, Q::Neutral), 0.5);
        assert_eq!(updated_trust(0.5, Q::Unsatisfactory), 0.4);
        assert_eq!(updated_trust(0.95, Q::Good), 1.0);
        assert_eq!(updated_trust(1.0, Q::Excellent), 1.0);
        assert_eq!(updated_trust(0.05, Q::Poor), 0.0);
        assert_eq!(updated_trust(0.0, Q::Poor), 0.0);
        // Many steps do not drift.
        let mut t = INITIAL_TRUST;
        for _ in 0..3 {
            t = updated_trust(t, Q::Poor);
        }
        assert_eq!(t, 0.2);
    }

    #[test]
    fn matching_scores_overlap_times_trust_and_excludes() {
        let pool = vec![
            profile(1, &["react", "typescript"], 0.5, "full-time"), // 2/3 × 0.5
            profile(2, &["react"], 0.9, "part-time"),               // 1/3 × 0.9
            profile(3, &["react", "typescript", "d3"], 0.4, "full-time"), // low trust
            profile(4, &["react", "typescript", "d3"], 0.9, "unavailable"),
            profile(5, &["cooking"], 1.0, "full-time"), // no overlap
            profile(6, &["typescript", "d3"], 0.5, "on-call"), // ties with 1
        ];
        let got = match_candidates(&skills(&["react", "typescript", "d3"]), &pool);
        let ids: Vec<u128> = got.iter().map(|c| c.contractor_id.as_u128()).collect();
        assert_eq!(ids, [1, 6, 2]);
        assert!((got[0].skill_overlap - 0.666666667).abs() < 1e-9);
        assert!((got[0].score - 0.333333333).abs() < 1e-9);
        assert!((got[2].score - 0.3).abs() < 1e-9);
        assert!(match_candidates(&[], &pool).is_empty());
    }

    #[test]
    fn skills_are_normalised() {
        assert_eq!(
            normalise_skills("s", &skills(&[" React", "react", "TS"])).unwrap(),
            ["react", "ts"]
        );
        assert!(normalise_skills("s", &skills(&[" "])).is_err());
    }

    #[test]
    fn ratings_adjust_as_the_seed_says() {
        assert_eq!(QualityRating::Satisfactory.adjustment(), 1);
        assert_eq!(QualityRating::Neutral.adjustment(), 0);
        assert_eq!(QualityRating::Unsatisfactory.adjustment(), -1);
    }
}
