//! Contractors: adding agents from outside the roster, listing them, and updating their terms and trust.

use super::*;

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
) -> Result<ContractorView, WorkforceError> {
    require_manager(who)?;
    CONTRACTOR_NAME.check("name", &req.name)?;
    let skills = normalise_skills("skills", &req.skills)?;
    check_money("hourly_rate", req.hourly_rate)?;
    let contact = req.contact.unwrap_or_default();
    CONTACT.check("contact", &contact)?;
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
        WorkspaceEvent::new(
            None,
            None,
            &actor,
            &payloads::ContractorAdded {
                contractor_id: c.id,
                name: c.name.clone(),
                skills: c.skills.clone(),
                trust_score: c.trust_score,
            },
        ),
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
) -> Result<ContractorView, WorkforceError> {
    let mut conn = pool.acquire().await?;
    let mut c = store::get_contractor(&mut conn, who.workspace_id, id, false)
        .await?
        .ok_or(WorkforceError::ContractorNotFound(id))?;
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
) -> Result<Vec<ContractorView>, WorkforceError> {
    let skills = normalise_skills("skills", skills)?;
    if min_trust.is_some_and(|t| !(0.0..=1.0).contains(&t)) {
        return Err(Invalid::new("min_trust", "min_trust must be between 0 and 1").into());
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
) -> Result<ContractorView, WorkforceError> {
    require_manager(who)?;
    if let Some(n) = &req.name {
        CONTRACTOR_NAME.check("name", n)?;
    }
    let skills = req
        .skills
        .as_deref()
        .map(|s| normalise_skills("skills", s))
        .transpose()?;
    check_money("hourly_rate", req.hourly_rate)?;
    if let Some(c) = &req.contact {
        CONTACT.check("contact", c)?;
    }
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let current = store::get_contractor(&mut tx, who.workspace_id, id, true)
        .await?
        .ok_or(WorkforceError::ContractorNotFound(id))?;
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
        WorkspaceEvent::new(
            None,
            None,
            &actor,
            &payloads::ContractorUpdated {
                contractor_id: id,
                availability: c.availability.clone(),
                skills: c.skills.clone(),
            },
        ),
    )
    .await?;
    tx.commit().await?;
    Ok(c)
}

/// `POST /v1/contractors/{id}/trust` body: a rating outside a package's
/// completion (seed §20.3's `contractor_trust_update`).
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TrustRequest {
    /// How well the contractor did.
    pub quality_rating: QualityRating,
    /// Why (1–2000 characters; kept on the trust history).
    pub reason: String,
    /// The contractor's work package the rating is about.
    #[serde(default)]
    pub work_package_id: Option<Uuid>,
}

/// Rates a contractor: trust moves by the seed's formula (±0.1, clamped)
/// and the change joins its history. A named package must be theirs.
pub async fn update_trust(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
    req: TrustRequest,
) -> Result<ContractorView, WorkforceError> {
    require_manager(who)?;
    TRUST_REASON.check("reason", &req.reason)?;
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    if let Some(p) = req.work_package_id {
        let package = store::get_package(&mut tx, who.workspace_id, p, false).await?;
        if package.is_none_or(|p| p.contractor_id != Some(id)) {
            return Err(Invalid::unprocessable(
                "unknown_work_package",
                "work_package_id",
                "work_package_id must name a work package of this contractor",
            )
            .into());
        }
    }
    rate_contractor(
        &mut tx,
        who.workspace_id,
        id,
        req.work_package_id,
        req.quality_rating,
        Some(req.reason.trim()),
        &actor,
    )
    .await?;
    let mut c = store::get_contractor(&mut tx, who.workspace_id, id, false)
        .await?
        .ok_or(WorkforceError::ContractorNotFound(id))?;
    tx.commit().await?;
    c.trust_history = Some(store::trust_history(pool, who.workspace_id, id).await?);
    Ok(c)
}
