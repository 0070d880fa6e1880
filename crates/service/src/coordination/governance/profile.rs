//! The stakeholder profile: read it, and replace it under optimistic locking.

use super::*;

/// `PUT /v1/governance/profile` body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfileRequest {
    /// Who the stakeholder is (default: the caller).
    #[serde(default)]
    pub stakeholder_id: Option<String>,
    /// `hands-on`, `strategic-only` or `exception-based`.
    pub decision_style: DecisionStyle,
    /// `conservative` (×0.7), `moderate` (×1.0) or `aggressive` (×1.5).
    pub risk_tolerance: RiskTolerance,
    /// Thresholds; omitted ones set no rule.
    #[serde(default, deserialize_with = "coordinator_core::objects::object")]
    pub approval_thresholds: ThresholdsRequest,
    /// Categories that need no review (numeric thresholds still apply).
    #[serde(default)]
    pub auto_approve_categories: Vec<String>,
    /// Free-form (frequency, channels…), kept for clients: a JSON object.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub communication_preferences: Option<Value>,
    /// The profile version being replaced (409 `version_conflict` if stale).
    #[serde(default)]
    pub version: Option<i64>,
}

/// Approval thresholds of a profile.
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ThresholdsRequest {
    /// Budget per action.
    #[serde(default)]
    pub budget: Option<BudgetThreshold>,
    /// Headcount per action.
    #[serde(default)]
    pub hiring: Option<HiringThreshold>,
    /// `always` (default) or `never`.
    #[serde(default)]
    pub strategy: Option<StrategyRule>,
}

/// A budget threshold.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BudgetThreshold {
    /// Amount, non-negative.
    pub amount: f64,
    /// Currency (default `USD`).
    #[serde(default)]
    pub currency: Option<String>,
}

/// A hiring threshold.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct HiringThreshold {
    /// Headcount, non-negative.
    pub headcount: i32,
}

/// The stakeholder profile as the API shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ProfileView {
    /// Who the stakeholder is.
    pub stakeholder_id: String,
    /// Review style.
    pub decision_style: DecisionStyle,
    /// Risk tolerance.
    pub risk_tolerance: RiskTolerance,
    /// Its threshold modifier.
    pub risk_modifier: f64,
    /// Thresholds (before the modifier).
    pub approval_thresholds: Value,
    /// Auto-approved categories.
    pub auto_approve_categories: Vec<String>,
    /// Communication preferences.
    pub communication_preferences: Value,
    /// Write guard.
    pub version: i64,
    /// Last changed by.
    pub updated_by: String,
    /// Last changed.
    #[serde(with = "time::serde::rfc3339")]
    pub updated_at: OffsetDateTime,
}

impl ProfileRow {
    /// The pure rules of the profile.
    pub fn rules(&self) -> Rules {
        Rules {
            decision_style: self
                .decision_style
                .parse()
                .unwrap_or(DecisionStyle::HandsOn),
            risk_tolerance: self
                .risk_tolerance
                .parse()
                .unwrap_or(RiskTolerance::Conservative),
            budget_threshold: self.budget_threshold,
            hiring_threshold: self.hiring_threshold,
            strategy: self.strategy_rule.parse().unwrap_or(StrategyRule::Always),
            auto_approve_categories: self.auto_approve_categories.clone(),
        }
    }

    /// The API view.
    pub fn view(&self) -> ProfileView {
        let rules = self.rules();
        ProfileView {
            stakeholder_id: self.stakeholder_id.clone(),
            decision_style: rules.decision_style,
            risk_tolerance: rules.risk_tolerance,
            risk_modifier: rules.risk_tolerance.modifier(),
            approval_thresholds: json!({
                "budget": self.budget_threshold.map(|a| json!({"amount": a, "currency": self.budget_currency})),
                "hiring": self.hiring_threshold.map(|h| json!({"headcount": h})),
                "strategy": rules.strategy,
            }),
            auto_approve_categories: self.auto_approve_categories.clone(),
            communication_preferences: self.communication_preferences.clone(),
            version: self.version,
            updated_by: self.updated_by.clone(),
            updated_at: self.updated_at,
        }
    }
}

/// An action category that needs no review.
pub const CATEGORY: coordinator_core::text::Text = coordinator_core::text::Text::required(64);
/// Most categories that need no review.
pub const MAX_CATEGORIES: usize = 50;
/// A budget threshold's currency.
pub const CURRENCY: coordinator_core::text::Text = coordinator_core::text::Text::required(8);
/// Who a profile's stakeholder is.
pub const STAKEHOLDER_ID: coordinator_core::text::Text =
    coordinator_core::text::Text::required(128);

pub(crate) fn check_len(field: &str, s: &str, max: usize) -> Result<(), Invalid> {
    if s.trim().is_empty() || s.chars().count() > max {
        return Err(Invalid::new(
            field,
            format!("{field} must be 1–{max} characters"),
        ));
    }
    Ok(())
}

pub(crate) fn check_amount(field: &str, v: f64) -> Result<(), Invalid> {
    if !v.is_finite() || v < 0.0 {
        return Err(Invalid::new(
            field,
            format!("{field} must be a non-negative number"),
        ));
    }
    Ok(())
}

/// The workspace's profile; 404 when none is set.
pub async fn get_profile(pool: &PgPool, who: &Principal) -> Result<ProfileView, GovernanceError> {
    let mut conn = pool.acquire().await?;
    store::profile(&mut conn, who.workspace_id)
        .await?
        .map(|p| p.view())
        .ok_or(GovernanceError::NoProfile)
}

/// Creates or replaces the workspace's stakeholder profile.
pub async fn put_profile(
    pool: &PgPool,
    who: &Principal,
    req: ProfileRequest,
) -> Result<ProfileView, GovernanceError> {
    GovernanceError::require(who, &[Role::Admin, Role::Stakeholder])?;
    let stakeholder = req.stakeholder_id.clone().unwrap_or_else(|| who.actor());
    STAKEHOLDER_ID.check("stakeholder_id", &stakeholder)?;
    let budget = req.approval_thresholds.budget.as_ref();
    if let Some(b) = budget {
        check_amount("approval_thresholds.budget.amount", b.amount)?;
        if let Some(c) = &b.currency {
            CURRENCY.check("approval_thresholds.budget.currency", c)?;
        }
    }
    if let Some(h) = &req.approval_thresholds.hiring
        && h.headcount < 0
    {
        return Err(Invalid::new(
            "approval_thresholds.hiring.headcount",
            "headcount must be non-negative",
        )
        .into());
    }
    if req.auto_approve_categories.len() > MAX_CATEGORIES {
        return Err(Invalid::new(
            "auto_approve_categories",
            format!("at most {MAX_CATEGORIES} categories"),
        )
        .into());
    }
    for c in &req.auto_approve_categories {
        CATEGORY.check("auto_approve_categories", c)?;
    }
    let prefs = req.communication_preferences.clone().unwrap_or(json!({}));
    if !prefs.is_object() {
        return Err(Invalid::new(
            "communication_preferences",
            "communication_preferences must be a JSON object",
        )
        .into());
    }
    let categories: Vec<String> = req
        .auto_approve_categories
        .iter()
        .map(|c| normalize_category(c))
        .collect();
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let current = store::lock_profile(&mut tx, who.workspace_id).await?;
    if let Some(v) = req.version
        && current.as_ref().map_or(0, |c| c.version) != v
    {
        return Err(version_conflict(
            "profile",
            current.as_ref().map(|c| c.version),
        ));
    }
    let row = store::upsert_profile(
        &mut tx,
        store::NewProfile {
            workspace_id: who.workspace_id,
            stakeholder_id: &stakeholder,
            decision_style: req.decision_style.as_str(),
            risk_tolerance: req.risk_tolerance.as_str(),
            budget_threshold: budget.map(|b| b.amount),
            budget_currency: budget.and_then(|b| b.currency.as_deref()).unwrap_or("USD"),
            hiring_threshold: req.approval_thresholds.hiring.as_ref().map(|h| h.headcount),
            strategy_rule: req
                .approval_thresholds
                .strategy
                .unwrap_or(StrategyRule::Always)
                .as_str(),
            auto_approve_categories: &categories,
            communication_preferences: &prefs,
            updated_by: &actor,
        },
    )
    .await?;
    let view = row.view();
    events::record(
        &mut tx,
        who.workspace_id,
        WorkspaceEvent::new(
            None,
            None,
            &actor,
            &payloads::GovernanceProfileUpdated {
                profile: serde_json::to_value(&view).unwrap_or_default(),
            },
        ),
    )
    .await?;
    tx.commit().await?;
    Ok(view)
}

pub(crate) fn version_conflict(what: &'static str, current: Option<i64>) -> GovernanceError {
    GovernanceError::VersionConflict { what, current }
}
