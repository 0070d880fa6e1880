//! Work packages: create, assign, progress, review and close, with their lifecycle events.

use super::*;

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

fn package_spec(req: &CreatePackage, task: Option<&TaskRow>) -> Result<PackageSpec, Invalid> {
    let title = req
        .title
        .clone()
        .or_else(|| task.map(|t| t.title.chars().take(200).collect()))
        .unwrap_or_default();
    TITLE.check("title", &title)?;
    let description = req
        .description
        .clone()
        .or_else(|| task.map(|t| t.description.clone()))
        .unwrap_or_default();
    DESCRIPTION.check("description", &description)?;
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
                .map_err(|_| Invalid::new("deadline", "deadline must be a date, YYYY-MM-DD"))
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
) -> Result<PackageView, WorkforceError> {
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
    .ok_or(WorkforceError::AlreadyDelegated {
        task_id: link.map(|l| l.1),
    })?;
    events::record(
        &mut *tx,
        who.workspace_id,
        WorkspaceEvent::new(
            p.mission_id,
            p.task_id,
            actor,
            &payloads::WorkPackageCreated {
                work_package_id: p.id,
                title: p.title.clone(),
                required_skills: p.required_skills.clone(),
            },
        ),
    )
    .await?;
    Ok(p)
}

/// Creates a package in `draft` (and opens it when asked).
pub async fn create_package(
    pool: &PgPool,
    http: &crate::egress::Client,
    who: &Principal,
    req: CreatePackage,
) -> Result<PackageView, WorkforceError> {
    require_manager(who)?;
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
    crate::worker::notify_cancelled(http, cancelled);
    Ok(p)
}

/// Delegates a mission task to a person: creates a package linked to the
/// task (opened at once unless `open: false`) and moves the task to
/// `awaiting_human` (from `queued` or `retry_wait`; one already waiting for
/// a person stays). A running or pending task is refused (409).
pub async fn delegate_task(
    pool: &PgPool,
    http: &crate::egress::Client,
    who: &Principal,
    mission: Uuid,
    task: &str,
    req: CreatePackage,
) -> Result<PackageView, WorkforceError> {
    require_manager(who)?;
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let run = mission_store::lock(&mut tx, who.workspace_id, mission)
        .await?
        .ok_or(WorkforceError::MissionNotFound(mission))?;
    if run.status().is_terminal() {
        return Err(WorkforceError::MissionFinished(run.status.clone()));
    }
    let t = human::task_of_mission(&mut tx, &run, task).await?;
    use crate::domain::TaskStatus as T;
    if !matches!(t.status(), T::Queued | T::RetryWait | T::AwaitingHuman) {
        return Err(WorkforceError::NotDelegable {
            key: t.task_key.clone(),
            status: t.status.clone(),
        });
    }
    let spec = package_spec(&req, Some(&t))?;
    let mut p = insert_package(&mut tx, who, &spec, Some((run.id, t.id)), &actor).await?;
    let (_, live) = human::hand_to_person(
        &mut tx,
        &run,
        &t,
        &actor,
        crate::store::events::payloads::TaskAwaitingHuman {
            reason: Some("delegated to a work package".into()),
            work_package_id: Some(p.id),
            ..Default::default()
        },
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
    crate::worker::notify_cancelled(http, cancelled);
    Ok(p)
}

/// Packages filtered by status, contractor, task or mission.
pub async fn packages(
    pool: &PgPool,
    who: &Principal,
    f: &PackageFilter,
    limit: i64,
) -> Result<Vec<PackageView>, WorkforceError> {
    let mut conn = pool.acquire().await?;
    Ok(store::list_packages(&mut conn, who.workspace_id, f, limit).await?)
}

/// One package.
pub async fn package(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
) -> Result<PackageView, WorkforceError> {
    let mut conn = pool.acquire().await?;
    store::get_package(&mut conn, who.workspace_id, id, false)
        .await?
        .ok_or(WorkforceError::PackageNotFound(id))
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

fn check_move(req: &TransitionRequest) -> Result<(), Invalid> {
    if req.progress.is_some_and(|p| !(0..=100).contains(&p)) {
        return Err(Invalid::new(
            "progress",
            "progress must be between 0 and 100",
        ));
    }
    if let Some(n) = &req.note {
        NOTE.check("note", n)?;
    }
    if let Some(r) = &req.reason {
        REASON.check("reason", r)?;
    }
    if let Some(d) = &req.deliverable {
        check_json_size("deliverable", d)?;
    }
    if req.contractor_id.is_some() && req.to != PackageStatus::Assigned {
        return Err(Invalid::new(
            "contractor_id",
            "contractor_id is only taken when moving to 'assigned'",
        ));
    }
    if req.deliverable.is_some()
        && !matches!(req.to, PackageStatus::Review | PackageStatus::Completed)
    {
        return Err(Invalid::new(
            "deliverable",
            "deliverable is only taken when moving to 'review' or 'completed'",
        ));
    }
    match (req.to, req.quality_rating) {
        (PackageStatus::Completed, None) => Err(Invalid::new(
            "quality_rating",
            "completing a work package needs a quality_rating",
        )),
        (to, Some(_)) if to != PackageStatus::Completed => Err(Invalid::new(
            "quality_rating",
            "quality_rating is only taken when moving to 'completed'",
        )),
        _ => Ok(()),
    }
}

/// A stakeholder reviews: it may only move a package in `review` to
/// `in_progress` (rework), `completed` or `cancelled` (or repeat that move).
fn stakeholder_may(to: PackageStatus, now: Option<&str>) -> Result<(), crate::auth::Forbidden> {
    if !matches!(
        to,
        PackageStatus::InProgress | PackageStatus::Completed | PackageStatus::Cancelled
    ) {
        return Err(crate::auth::Forbidden::from(
            "stakeholders may only review: move to in_progress, completed or cancelled",
        ));
    }
    match now {
        Some(s) if s != PackageStatus::Review.as_str() && s != to.as_str() => Err(
            crate::auth::Forbidden::from("stakeholders may only move a package that is in review"),
        ),
        _ => Ok(()),
    }
}

/// Moves a package through its lifecycle (see the module doc). Moving a
/// terminal package to the status it has already (completing it again with
/// the same rating, cancelling it again) is a no-op returning it unchanged.
pub async fn transition(
    pool: &PgPool,
    http: &crate::egress::Client,
    who: &Principal,
    id: Uuid,
    req: TransitionRequest,
) -> Result<PackageView, WorkforceError> {
    let reviewer = who.role == Role::Stakeholder;
    if reviewer {
        stakeholder_may(req.to, None)?;
    } else {
        require_manager(who)?;
    }
    check_move(&req)?;
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    // Lock order: the delegated task's mission first, then the package.
    let peek = store::get_package(&mut tx, who.workspace_id, id, false)
        .await?
        .ok_or(WorkforceError::PackageNotFound(id))?;
    let run = match peek.mission_id {
        Some(m) => mission_store::lock(&mut tx, who.workspace_id, m).await?,
        None => None,
    };
    let p = store::get_package(&mut tx, who.workspace_id, id, true)
        .await?
        .ok_or(WorkforceError::PackageNotFound(id))?;
    if reviewer {
        stakeholder_may(req.to, Some(&p.status))?;
    }
    let from: PackageStatus = p.status.parse()?;
    // A retried final move answers as the first one did, whatever version it names.
    if from == req.to && from.is_terminal() {
        let same_rating =
            req.quality_rating.map(QualityRating::as_str) == p.quality_rating.as_deref();
        if req.to == PackageStatus::Cancelled || same_rating {
            return Ok(p);
        }
        return Err(WorkforceError::AlreadyCompleted {
            id,
            rating: p.quality_rating.clone(),
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
    crate::worker::notify_cancelled(http, cancelled);
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
    /// A note to append (1–4000 characters).
    #[serde(default)]
    #[schema(min_length = 1, max_length = 4000, pattern = r"\S")]
    pub note: Option<String>,
}

/// Assigns an open package: `transition` to `assigned`.
pub async fn assign(
    pool: &PgPool,
    http: &crate::egress::Client,
    who: &Principal,
    id: Uuid,
    req: AssignRequest,
) -> Result<PackageView, WorkforceError> {
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
    #[schema(minimum = 0, maximum = 100)]
    pub progress: Option<i32>,
    /// A note to append (at most 4000 characters).
    #[serde(default)]
    #[schema(min_length = 1, max_length = 4000, pattern = r"\S")]
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
) -> Result<PackageView, WorkforceError> {
    require_manager(who)?;
    if req.progress.is_none() && req.note.is_none() {
        return Err(Invalid::new("progress", "give progress, a note, or both").into());
    }
    if req.progress.is_some_and(|p| !(0..=100).contains(&p)) {
        return Err(Invalid::new("progress", "progress must be between 0 and 100").into());
    }
    if let Some(n) = &req.note {
        NOTE.check("note", n)?;
    }
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let p = store::get_package(&mut tx, who.workspace_id, id, true)
        .await?
        .ok_or(WorkforceError::PackageNotFound(id))?;
    if let Some(v) = req.version
        && v != p.version
    {
        return Err(version_conflict("work package", id, v, p.version));
    }
    let status: PackageStatus = p.status.parse()?;
    if status.is_terminal() {
        return Err(WorkforceError::PackageFinished { id, status });
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
        WorkspaceEvent::new(
            None,
            updated.task_id,
            &actor,
            &payloads::WorkPackageProgress {
                work_package_id: id,
                progress: updated.progress,
                note: req.note.clone(),
                mission_id: updated.mission_id,
            },
        ),
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
) -> Result<(PackageView, Vec<Cancelled>), WorkforceError> {
    let from: PackageStatus = p.status.parse()?;
    let to = from.next(mv.to)?;
    let mut candidates = None;
    let mut contractor_id = None;
    let mut payload = payloads::WorkPackageStatusChanged {
        work_package_id: p.id,
        from,
        to,
        candidates: None,
        contractor_id: None,
        trust: None,
        quality_rating: None,
        task: None,
        reason: None,
    };
    match to {
        PackageStatus::Open => {
            let found = candidates_now(tx, who.workspace_id, &p.required_skills).await?;
            candidates = Some(json!(found));
            payload.candidates = Some(found);
        }
        PackageStatus::Assigned => {
            let chosen = match mv.contractor_id {
                Some(c) => {
                    let c = store::get_contractor(tx, who.workspace_id, c, false)
                        .await?
                        .ok_or(WorkforceError::UnknownContractor(c))?;
                    if c.availability == Availability::Unavailable.as_str() {
                        return Err(WorkforceError::ContractorUnavailable(c.id));
                    }
                    c.id
                }
                None => {
                    // Contractors change: match again rather than trust a stale list.
                    let found = candidates_now(tx, who.workspace_id, &p.required_skills).await?;
                    let top = found.first().map(|c| c.contractor_id);
                    candidates = Some(json!(found));
                    top.ok_or_else(|| WorkforceError::NoCandidate {
                        required_skills: p.required_skills.clone(),
                    })?
                }
            };
            // The seed's "notification" to a person: the event carries their contact.
            payload.contractor_id = Some(chosen);
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
            Some(p.id),
            rating,
            mv.reason.as_deref(),
            actor,
        )
        .await?;
        payload.trust = Some(trust);
        payload.quality_rating = Some(rating);
    }
    // A delegated task follows its package.
    if let (Some(run), Some(task_id)) = (run.as_mut(), updated.task_id)
        && matches!(to, PackageStatus::Completed | PackageStatus::Cancelled)
    {
        let (task, live) = follow_package(
            tx,
            who,
            run,
            task_id,
            &updated,
            to,
            mv.reason.clone(),
            actor,
        )
        .await?;
        payload.task = Some(task);
        cancelled = live;
    }
    payload.reason = mv.reason.clone();
    events::record(
        tx,
        who.workspace_id,
        // The mission log only when its row is locked (its sequence lives there).
        WorkspaceEvent::new(run.as_ref().map(|r| r.id), updated.task_id, actor, &payload),
    )
    .await?;
    Ok((updated, cancelled))
}

/// Moves a delegated task after its package completed (the task completes
/// with the deliverable) or was cancelled (the task is retried); a task no
/// longer waiting for a person is left alone. Returns the event's `task`
/// entry and the attempts whose workers must be told they were cancelled.
#[allow(clippy::too_many_arguments)]
async fn follow_package(
    tx: &mut PgConnection,
    who: &Principal,
    run: &mut MissionRow,
    task_id: Uuid,
    updated: &PackageView,
    to: PackageStatus,
    reason: Option<String>,
    actor: &str,
) -> Result<(payloads::DelegatedTask, Vec<Cancelled>), WorkforceError> {
    let t = crate::store::tasks::get(tx, task_id).await?;
    if t.workspace_id != who.workspace_id
        || t.status() != crate::domain::TaskStatus::AwaitingHuman
        || run.status().is_terminal()
    {
        let untouched = payloads::DelegatedTask {
            id: t.id,
            key: t.task_key,
            untouched: Some(t.status),
            action: None,
        };
        return Ok((untouched, Vec::new()));
    }
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
            feedback: reason,
            via: Some(json!({ "work_package_id": updated.id })),
        }
    } else {
        Settlement {
            action: HumanAction::Retry,
            output: None,
            feedback: reason,
            via: Some(json!({ "work_package_id": updated.id })),
        }
    };
    let cancelled = human::settle(tx, run, &t, settlement, actor).await?;
    mission_store::notify_wake(tx).await?;
    let action = if to == PackageStatus::Completed {
        "complete"
    } else {
        "retry"
    };
    let settled = payloads::DelegatedTask {
        id: t.id,
        key: t.task_key,
        untouched: None,
        action: Some(action.to_owned()),
    };
    Ok((settled, cancelled))
}

/// Auto-matching against the workspace's contractors as they are now.
async fn candidates_now(
    tx: &mut PgConnection,
    workspace_id: Uuid,
    skills: &[String],
) -> Result<Vec<Candidate>, WorkforceError> {
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
pub(super) async fn rate_contractor(
    tx: &mut PgConnection,
    workspace_id: Uuid,
    contractor_id: Uuid,
    work_package_id: Option<Uuid>,
    rating: QualityRating,
    reason: Option<&str>,
    actor: &str,
) -> Result<payloads::ContractorTrustUpdated, WorkforceError> {
    let c = store::get_contractor(tx, workspace_id, contractor_id, true)
        .await?
        .ok_or(WorkforceError::ContractorNotFound(contractor_id))?;
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
    let change = payloads::ContractorTrustUpdated {
        contractor_id,
        previous_score: c.trust_score,
        new_score: new,
        quality_rating: rating,
        work_package_id,
    };
    events::record(
        tx,
        workspace_id,
        WorkspaceEvent::new(None, None, actor, &change),
    )
    .await?;
    Ok(change)
}
