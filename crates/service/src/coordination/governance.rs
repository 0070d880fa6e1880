//! Governance use cases: the workspace's profile, checks of an action
//! against it, decisions and their resolution, and the dispatcher's gate.
//! The rules (styles, risk modifiers, thresholds, the check and the decision
//! lifecycle) are pure and live in the core (`coordinator_core::governance`,
//! re-exported here).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};
use time::OffsetDateTime;
use uuid::Uuid;

use super::messages::{self, Category, Outgoing, Performative, Recipient};
use crate::{
    auth::{Principal, Role},
    domain::{TaskEvent, TaskStatus},
    error::ApiError,
    store::{
        events::{self, WorkspaceEvent, kind as core_kind},
        governance::{self as store, DecisionRow, NewDecision, ProfileRow},
        missions::{self, MissionRow},
        tasks::{self, Change, TaskRow},
    },
};

pub use coordinator_core::governance::*;

/// Event kinds written by governance.
pub mod kind {
    /// The stakeholder profile was created or changed.
    pub const PROFILE_UPDATED: &str = "governance.profile_updated";
    /// A decision entered the queue.
    pub const DECISION_REQUESTED: &str = "decision.requested";
    /// A stakeholder (or a re-check) resolved a decision.
    pub const DECISION_RESOLVED: &str = "decision.resolved";
    /// A deferred decision was checked again and is pending once more.
    pub const DECISION_RECHECKED: &str = "decision.rechecked";
    /// A task waits for a governance decision before dispatch.
    pub const TASK_AWAITING_APPROVAL: &str = "task.awaiting_approval";
    /// A governance decision let a task go (approved or modified).
    pub const TASK_APPROVED: &str = "task.approved";
    /// A rejected task asks for the remaining work to be planned around it.
    pub const REPLAN_TRIGGERED: &str = "mission.replan_triggered";
}

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
    #[serde(default)]
    pub approval_thresholds: ThresholdsRequest,
    /// Categories that need no review (numeric thresholds still apply).
    #[serde(default)]
    pub auto_approve_categories: Vec<String>,
    /// Free-form (frequency, channels…), kept for clients.
    #[serde(default)]
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

fn check_len(field: &str, s: &str, max: usize) -> Result<(), ApiError> {
    if s.trim().is_empty() || s.chars().count() > max {
        return Err(ApiError::invalid(
            field,
            format!("{field} must be 1–{max} characters"),
        ));
    }
    Ok(())
}

fn check_amount(field: &str, v: f64) -> Result<(), ApiError> {
    if !v.is_finite() || v < 0.0 {
        return Err(ApiError::invalid(
            field,
            format!("{field} must be a non-negative number"),
        ));
    }
    Ok(())
}

/// The workspace's profile; 404 when none is set.
pub async fn get_profile(pool: &PgPool, who: &Principal) -> Result<ProfileView, ApiError> {
    let mut conn = pool.acquire().await?;
    store::profile(&mut conn, who.workspace_id)
        .await?
        .map(|p| p.view())
        .ok_or_else(|| ApiError::NotFound("no stakeholder profile is set".into()))
}

/// Creates or replaces the workspace's stakeholder profile.
pub async fn put_profile(
    pool: &PgPool,
    who: &Principal,
    req: ProfileRequest,
) -> Result<ProfileView, ApiError> {
    who.require(&[Role::Admin, Role::Stakeholder])?;
    let stakeholder = req.stakeholder_id.clone().unwrap_or_else(|| who.actor());
    check_len("stakeholder_id", &stakeholder, 128)?;
    let budget = req.approval_thresholds.budget.as_ref();
    if let Some(b) = budget {
        check_amount("approval_thresholds.budget.amount", b.amount)?;
        if let Some(c) = &b.currency {
            check_len("approval_thresholds.budget.currency", c, 8)?;
        }
    }
    if let Some(h) = &req.approval_thresholds.hiring
        && h.headcount < 0
    {
        return Err(ApiError::invalid(
            "approval_thresholds.hiring.headcount",
            "headcount must be non-negative",
        ));
    }
    if req.auto_approve_categories.len() > 50 {
        return Err(ApiError::invalid(
            "auto_approve_categories",
            "at most 50 categories",
        ));
    }
    for c in &req.auto_approve_categories {
        check_len("auto_approve_categories", c, 64)?;
    }
    let prefs = req.communication_preferences.clone().unwrap_or(json!({}));
    if !prefs.is_object() {
        return Err(ApiError::invalid(
            "communication_preferences",
            "communication_preferences must be a JSON object",
        ));
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
        WorkspaceEvent {
            mission_id: None,
            task_id: None,
            kind: kind::PROFILE_UPDATED,
            actor: &actor,
            payload: json!({ "profile": view }),
        },
    )
    .await?;
    tx.commit().await?;
    Ok(view)
}

fn version_conflict(what: &str, current: Option<i64>) -> ApiError {
    ApiError::Conflict {
        code: "version_conflict",
        message: format!("the {what} changed meanwhile; reload it and try again"),
        details: json!({ "current_version": current }),
    }
}

/// `POST /v1/governance/check` body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckRequest {
    /// The action's category: `budget`, `hiring`, `strategy`, `operational` or a custom one.
    pub action_type: String,
    /// Free-form details of the action (kept for the decision, not judged).
    #[serde(default)]
    pub action_details: Option<Value>,
    /// What the action would cost or hire.
    #[serde(default)]
    pub estimated_impact: Option<Impact>,
    /// The agent flags the action as exceptional.
    #[serde(default)]
    pub exceptional: bool,
}

/// The measurable impact of an action.
#[derive(Debug, Clone, Default, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Impact {
    /// Cost, non-negative.
    #[serde(default)]
    pub estimated_cost: Option<f64>,
    /// People hired, non-negative.
    #[serde(default)]
    pub headcount: Option<i64>,
}

fn action_of(
    action_type: &str,
    impact: Option<&Impact>,
    exceptional: bool,
) -> Result<Action, ApiError> {
    check_len("action_type", action_type, 64)?;
    let impact = impact.cloned().unwrap_or_default();
    if let Some(c) = impact.estimated_cost {
        check_amount("estimated_impact.estimated_cost", c)?;
    }
    if impact.headcount.is_some_and(|h| h < 0) {
        return Err(ApiError::invalid(
            "estimated_impact.headcount",
            "headcount must be non-negative",
        ));
    }
    Ok(Action {
        category: action_type.to_owned(),
        estimated_cost: impact.estimated_cost,
        headcount: impact.headcount,
        exceptional,
    })
}

/// Runs the governance check against the workspace's profile (writes nothing).
pub async fn check_action(
    pool: &PgPool,
    who: &Principal,
    req: CheckRequest,
) -> Result<CheckResult, ApiError> {
    let action = action_of(
        &req.action_type,
        req.estimated_impact.as_ref(),
        req.exceptional,
    )?;
    let mut conn = pool.acquire().await?;
    let profile = store::profile(&mut conn, who.workspace_id).await?;
    Ok(check(profile.map(|p| p.rules()).as_ref(), &action))
}

/// One option of a decision.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionOption {
    /// Short name (unique within the decision).
    pub label: String,
    /// What it means.
    #[serde(default)]
    pub description: String,
    /// `low`, `medium` or `high`.
    #[serde(default)]
    pub risk_level: Option<String>,
}

/// `POST /v1/decisions` body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionRequest {
    /// Client-chosen id, for idempotent retries.
    #[serde(default)]
    pub id: Option<Uuid>,
    /// The requesting agent (agent tokens: themselves, implied).
    #[serde(default)]
    pub agent_id: Option<String>,
    /// What is to be decided (1–2000 characters).
    pub description: String,
    /// The action's category (default `operational`).
    #[serde(default)]
    pub action_type: Option<String>,
    /// What the action would cost or hire.
    #[serde(default)]
    pub estimated_impact: Option<Impact>,
    /// Financial, strategic and risk notes (a JSON object).
    #[serde(default)]
    pub impact_analysis: Option<Value>,
    /// The choices (at most 10).
    #[serde(default)]
    pub options: Vec<DecisionOption>,
    /// The label of the option the requester recommends.
    #[serde(default)]
    pub recommended_option: Option<String>,
    /// Linked mission.
    #[serde(default)]
    pub mission_id: Option<Uuid>,
    /// The agent flags it as exceptional.
    #[serde(default)]
    pub exceptional: bool,
}

/// A decision as the API shows it.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct DecisionView {
    /// Id.
    pub id: Uuid,
    /// Who asked (actor).
    pub requester: String,
    /// The requesting agent, if an agent asked.
    pub agent_id: Option<String>,
    /// Linked mission.
    pub mission_id: Option<Uuid>,
    /// Linked task (for a governance gate before dispatch).
    pub task_id: Option<Uuid>,
    /// Category judged.
    pub category: String,
    /// What is to be decided.
    pub description: String,
    /// Impact notes.
    pub impact_analysis: Value,
    /// Choices.
    pub options: Value,
    /// Recommended option's label.
    pub recommended_option: Option<String>,
    /// Cost at stake.
    pub estimated_cost: Option<f64>,
    /// Headcount at stake.
    pub headcount: Option<i32>,
    /// The check that sent it here.
    pub governance_check: Value,
    /// `pending`, `approved`, `rejected`, `deferred` or `modified`.
    pub status: DecisionStatus,
    /// Who resolved it.
    pub resolver: Option<String>,
    /// Why.
    pub rationale: Option<String>,
    /// Conditions attached.
    pub conditions: Value,
    /// Modifications (for `modified`).
    pub modifications: Value,
    /// When resolved.
    #[serde(with = "time::serde::rfc3339::option")]
    pub resolved_at: Option<OffsetDateTime>,
    /// When a deferred decision is checked again.
    #[serde(with = "time::serde::rfc3339::option")]
    pub recheck_at: Option<OffsetDateTime>,
    /// Re-checks so far.
    pub recheck_count: i32,
    /// Write guard.
    pub version: i64,
    /// Requested.
    #[serde(with = "time::serde::rfc3339")]
    pub created_at: OffsetDateTime,
}

impl DecisionRow {
    /// The parsed status.
    pub fn status(&self) -> DecisionStatus {
        self.status.parse().unwrap_or(DecisionStatus::Pending)
    }

    /// The API view.
    pub fn view(&self) -> DecisionView {
        DecisionView {
            id: self.id,
            requester: self.requester.clone(),
            agent_id: self.requester_agent_id.clone(),
            mission_id: self.mission_id,
            task_id: self.task_id,
            category: self.category.clone(),
            description: self.description.clone(),
            impact_analysis: self.impact_analysis.clone(),
            options: self.options.clone(),
            recommended_option: self.recommended_option.clone(),
            estimated_cost: self.estimated_cost,
            headcount: self.headcount,
            governance_check: self.governance_check.clone(),
            status: self.status(),
            resolver: self.resolver.clone(),
            rationale: self.rationale.clone(),
            conditions: self.conditions.clone(),
            modifications: self.modifications.clone(),
            resolved_at: self.resolved_at,
            recheck_at: self.recheck_at,
            recheck_count: self.recheck_count,
            version: self.version,
            created_at: self.created_at,
        }
    }
}

/// A decision under review, with the governance context (seed §11.5).
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct DecisionReview {
    /// The decision.
    #[serde(flatten)]
    pub decision: DecisionView,
    /// Thresholds, risk tolerance and the recommendation of the current profile.
    pub governance: Value,
}

fn review(d: &DecisionRow, profile: Option<&ProfileRow>) -> DecisionReview {
    let rules = profile.map(|p| p.rules());
    let now = check(rules.as_ref(), &stored_action(d));
    let recommended = match (&d.recommended_option, now.requires_approval) {
        (Some(opt), _) => format!("requester recommends '{opt}'"),
        (None, false) => "the current profile would not require approval: approve".into(),
        (None, true) => "review against the threshold shown".into(),
    };
    DecisionReview {
        decision: d.view(),
        governance: json!({
            "stakeholder_id": profile.map(|p| p.stakeholder_id.clone()),
            "decision_style": rules.as_ref().map(|r| r.decision_style),
            "risk_tolerance": rules.as_ref().map(|r| r.risk_tolerance),
            "risk_modifier": rules.as_ref().map(|r| r.risk_tolerance.modifier()),
            "approval_thresholds": profile.map(|p| p.view().approval_thresholds),
            "relevant_threshold": now.relevant_threshold,
            "requires_approval_now": now.requires_approval,
            "reason": now.reason,
            "recommended_action": recommended,
        }),
    }
}

fn stored_action(d: &DecisionRow) -> Action {
    Action {
        category: d.category.clone(),
        estimated_cost: d.estimated_cost,
        headcount: d.headcount.map(i64::from),
        exceptional: d
            .governance_check
            .get("exceptional")
            .and_then(Value::as_bool)
            .unwrap_or(false),
    }
}

/// Puts a decision in the queue (seed §11.4).
pub async fn request_decision(
    pool: &PgPool,
    who: &Principal,
    req: DecisionRequest,
) -> Result<DecisionView, ApiError> {
    who.require(&[Role::Admin, Role::Operator, Role::Agent])?;
    check_len("description", &req.description, 2000)?;
    let action = action_of(
        req.action_type.as_deref().unwrap_or(OPERATIONAL),
        req.estimated_impact.as_ref(),
        req.exceptional,
    )?;
    if req.options.len() > 10 {
        return Err(ApiError::invalid("options", "at most 10 options"));
    }
    for o in &req.options {
        check_len("options.label", &o.label, 200)?;
        if o.description.chars().count() > 2000 {
            return Err(ApiError::invalid(
                "options.description",
                "an option's description must be at most 2000 characters",
            ));
        }
    }
    if let Some(r) = &req.recommended_option
        && !req.options.iter().any(|o| &o.label == r)
    {
        return Err(ApiError::invalid(
            "recommended_option",
            "recommended_option must be the label of one of the options",
        ));
    }
    let impact = req.impact_analysis.clone().unwrap_or(json!({}));
    if !impact.is_object() {
        return Err(ApiError::invalid(
            "impact_analysis",
            "impact_analysis must be a JSON object",
        ));
    }
    let agent_id = match (&who.agent_id, &req.agent_id) {
        (Some(me), Some(named)) if me != named => {
            return Err(ApiError::Forbidden(
                "an agent token can only request decisions as itself".into(),
            ));
        }
        (Some(me), _) => Some(me.clone()),
        (None, named) => named.clone(),
    };
    let id = req.id.unwrap_or_else(Uuid::new_v4);
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    if let Some(existing) = store::get_decision(&mut tx, who.workspace_id, id).await? {
        return if existing.description == req.description && existing.requester_agent_id == agent_id
        {
            Ok(existing.view())
        } else {
            Err(ApiError::conflict(
                "decision_id_reused",
                format!("decision {id} was already requested with different content"),
            ))
        };
    }
    if let Some(a) = &agent_id
        && !crate::store::messages::agent_exists(&mut tx, who.workspace_id, a).await?
    {
        return Err(ApiError::Unprocessable {
            code: "unknown_agent",
            message: format!("no agent '{a}' is registered"),
            details: json!({ "agent_id": a }),
        });
    }
    if let Some(m) = req.mission_id
        && !crate::store::messages::mission_exists(&mut tx, who.workspace_id, m).await?
    {
        return Err(ApiError::Unprocessable {
            code: "unknown_mission",
            message: format!("mission_id names no mission {m}"),
            details: json!({ "mission_id": m }),
        });
    }
    let profile = store::profile(&mut tx, who.workspace_id).await?;
    let mut checked = serde_json::to_value(check(profile.map(|p| p.rules()).as_ref(), &action))
        .unwrap_or_default();
    checked["exceptional"] = json!(action.exceptional);
    let options = serde_json::to_value(&req.options).unwrap_or(json!([]));
    let row = store::insert_decision(
        &mut tx,
        NewDecision {
            id,
            workspace_id: who.workspace_id,
            requester: &actor,
            requester_agent_id: agent_id.as_deref(),
            mission_id: req.mission_id,
            task_id: None,
            category: &normalize_category(&action.category),
            description: &req.description,
            impact_analysis: &impact,
            options: &options,
            recommended_option: req.recommended_option.as_deref(),
            estimated_cost: action.estimated_cost,
            headcount: action
                .headcount
                .map(|h| i32::try_from(h).unwrap_or(i32::MAX)),
            governance_check: &checked,
        },
    )
    .await?
    .ok_or_else(|| ApiError::conflict("decision_exists", "the decision already exists"))?;
    decision_event(&mut tx, &row, kind::DECISION_REQUESTED, &actor).await?;
    tx.commit().await?;
    Ok(row.view())
}

async fn decision_event(
    conn: &mut PgConnection,
    d: &DecisionRow,
    kind: &str,
    actor: &str,
) -> sqlx::Result<()> {
    events::record(
        conn,
        d.workspace_id,
        WorkspaceEvent {
            mission_id: d.mission_id,
            task_id: d.task_id,
            kind,
            actor,
            payload: json!({
                "decision_id": d.id, "status": d.status, "category": d.category,
                "agent_id": d.requester_agent_id, "description": d.description,
                "governance_check": d.governance_check, "resolver": d.resolver,
                "rationale": d.rationale, "conditions": d.conditions,
                "modifications": d.modifications, "recheck_at": d.recheck_at,
            }),
        },
    )
    .await
}

/// The decision queue, optionally of one status, newest first, with the
/// governance context of the current profile.
pub async fn list_decisions(
    pool: &PgPool,
    who: &Principal,
    status: Option<&str>,
    limit: i64,
) -> Result<Vec<DecisionReview>, ApiError> {
    let status = status
        .map(|s| s.parse::<DecisionStatus>())
        .transpose()?
        .map(|s| s.as_str());
    let mut conn = pool.acquire().await?;
    let profile = store::profile(&mut conn, who.workspace_id).await?;
    let rows = store::list_decisions(&mut conn, who.workspace_id, status, limit).await?;
    Ok(rows.iter().map(|d| review(d, profile.as_ref())).collect())
}

/// One decision with its governance context.
pub async fn get_decision(
    pool: &PgPool,
    who: &Principal,
    id: Uuid,
) -> Result<DecisionReview, ApiError> {
    let mut conn = pool.acquire().await?;
    let d = store::get_decision(&mut conn, who.workspace_id, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no decision {id}")))?;
    let profile = store::profile(&mut conn, who.workspace_id).await?;
    Ok(review(&d, profile.as_ref()))
}

/// `POST /v1/decisions/{id}/resolve` body.
#[derive(Debug, Clone, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ResolveRequest {
    /// `approved`, `rejected`, `deferred` or `modified`.
    pub outcome: Outcome,
    /// Why (at most 4000 characters).
    #[serde(default)]
    pub rationale: Option<String>,
    /// Conditions attached (at most 20, each 1–500 characters).
    #[serde(default)]
    pub conditions: Vec<String>,
    /// For `modified` only: a non-empty JSON object; for a mission task its
    /// keys are merged into the task's inputs before dispatch.
    #[serde(default)]
    pub modifications: Option<Value>,
    /// For `deferred` only: check again after this many milliseconds
    /// (100 ms – 30 days; default one hour).
    #[serde(default)]
    pub recheck_after_ms: Option<i64>,
    /// The decision version being resolved (409 `version_conflict` if stale).
    #[serde(default)]
    pub version: Option<i64>,
}

/// What a resolution sets.
struct Settlement<'a> {
    outcome: Outcome,
    rationale: Option<&'a str>,
    conditions: Value,
    modifications: Value,
    recheck_at: Option<OffsetDateTime>,
}

const DEFAULT_RECHECK_MS: i64 = 3_600_000;

/// Resolves a decision (stakeholder tokens only); for a gated mission task
/// also moves the task; the requesting agent gets an INFORM. Resolving again
/// with the same outcome returns the decision unchanged; a different outcome
/// on a final decision is 409.
pub async fn resolve(
    pool: &PgPool,
    replan_with_llm: bool,
    who: &Principal,
    id: Uuid,
    req: ResolveRequest,
) -> Result<DecisionView, ApiError> {
    who.require(&[Role::Stakeholder])?;
    if req
        .rationale
        .as_ref()
        .is_some_and(|r| r.chars().count() > 4000)
    {
        return Err(ApiError::invalid(
            "rationale",
            "rationale must be at most 4000 characters",
        ));
    }
    if req.conditions.len() > 20 {
        return Err(ApiError::invalid("conditions", "at most 20 conditions"));
    }
    for c in &req.conditions {
        check_len("conditions", c, 500)?;
    }
    let modifications = match (req.outcome, &req.modifications) {
        (Outcome::Modified, Some(Value::Object(m))) if !m.is_empty() => Value::Object(m.clone()),
        (Outcome::Modified, _) => {
            return Err(ApiError::invalid(
                "modifications",
                "a 'modified' outcome needs modifications: a non-empty JSON object",
            ));
        }
        (_, Some(_)) => {
            return Err(ApiError::invalid(
                "modifications",
                "modifications are only taken with outcome 'modified'",
            ));
        }
        (_, None) => json!({}),
    };
    let recheck_at = match (req.outcome, req.recheck_after_ms) {
        (Outcome::Deferred, ms) => {
            let ms = ms.unwrap_or(DEFAULT_RECHECK_MS);
            if !(100..=30 * 86_400_000).contains(&ms) {
                return Err(ApiError::invalid(
                    "recheck_after_ms",
                    "recheck_after_ms must be between 100 and 2592000000",
                ));
            }
            Some(OffsetDateTime::now_utc() + time::Duration::milliseconds(ms))
        }
        (_, Some(_)) => {
            return Err(ApiError::invalid(
                "recheck_after_ms",
                "recheck_after_ms is only taken with outcome 'deferred'",
            ));
        }
        (_, None) => None,
    };
    let actor = who.actor();
    let mut tx = pool.begin().await?;
    let mission = store::decision_mission(&mut tx, who.workspace_id, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no decision {id}")))?;
    // Lock order: the mission first (as dispatch does), then the decision.
    let mut run = match mission {
        Some(m) => missions::lock(&mut tx, who.workspace_id, m).await?,
        None => None,
    };
    let d = store::lock_decision(&mut tx, who.workspace_id, id)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no decision {id}")))?;
    let step = d.status().resolve(req.outcome).map_err(|e| ApiError::Conflict {
        code: "decision_already_resolved",
        message: format!("decision {id} is already {}; it cannot become {}", d.status, req.outcome),
        details: json!({ "status": d.status, "requested": req.outcome, "transition": e.to_string() }),
    })?;
    if step == Resolution::AlreadyDone {
        return Ok(d.view());
    }
    if let Some(v) = req.version
        && v != d.version
    {
        return Err(version_conflict("decision", Some(d.version)));
    }
    let d = settle(
        &mut tx,
        run.as_mut(),
        &d,
        Settlement {
            outcome: req.outcome,
            rationale: req.rationale.as_deref(),
            conditions: json!(req.conditions),
            modifications,
            recheck_at,
        },
        &actor,
        replan_with_llm,
    )
    .await?;
    tx.commit().await?;
    Ok(d.view())
}

/// Writes a resolution: the decision row (version guarded), its event, the
/// gated task's move, and the INFORM to the requesting agent.
async fn settle(
    conn: &mut PgConnection,
    run: Option<&mut MissionRow>,
    d: &DecisionRow,
    s: Settlement<'_>,
    actor: &str,
    replan_with_llm: bool,
) -> Result<DecisionRow, ApiError> {
    let status = s.outcome.status();
    let row = store::resolve_decision(
        conn,
        store::Resolve {
            workspace_id: d.workspace_id,
            id: d.id,
            version: d.version,
            status: status.as_str(),
            resolver: actor,
            rationale: s.rationale,
            conditions: &s.conditions,
            modifications: &s.modifications,
            recheck_at: s.recheck_at,
        },
    )
    .await?
    .ok_or_else(|| version_conflict("decision", Some(d.version)))?;
    decision_event(conn, &row, kind::DECISION_RESOLVED, actor).await?;
    if let (Some(task_id), Some(run)) = (row.task_id, run) {
        apply_to_task(conn, run, &row, task_id, actor, replan_with_llm).await?;
    }
    if let Some(agent) = &row.requester_agent_id {
        messages::send(
            conn,
            row.workspace_id,
            Outgoing {
                id: None,
                from_agent: None,
                sender: actor.to_owned(),
                to: Recipient::Agent(agent.clone()),
                performative: Performative::Inform,
                category: (row.mission_id.is_some() || row.task_id.is_some())
                    .then_some(Category::Decision),
                conversation_id: None,
                reply_to: None,
                mission_id: row.mission_id,
                task_id: row.task_id,
                subject: format!("Decision {}: {}", row.id, row.status),
                content: json!({
                    "decision_id": row.id, "outcome": row.status, "resolver": row.resolver,
                    "rationale": row.rationale, "conditions": row.conditions,
                    "modified_options": row.modifications, "resolved_at": row.resolved_at
                        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok()),
                    "recheck_at": row.recheck_at
                        .and_then(|t| t.format(&time::format_description::well_known::Rfc3339).ok()),
                }),
            },
        )
        .await?;
    }
    Ok(row)
}

/// Moves the task a decision gates: approved/modified → queued (modified
/// with the modifications merged into its inputs), rejected → skipped and a
/// replan trigger, deferred → stays waiting.
async fn apply_to_task(
    conn: &mut PgConnection,
    run: &mut MissionRow,
    d: &DecisionRow,
    task_id: Uuid,
    actor: &str,
    replan_with_llm: bool,
) -> Result<(), ApiError> {
    let t = tasks::get(conn, task_id).await?;
    if t.status() != TaskStatus::AwaitingApproval || t.workspace_id != d.workspace_id {
        // Cancelled with its mission meanwhile: the decision stands alone.
        return Ok(());
    }
    match d.status() {
        DecisionStatus::Approved | DecisionStatus::Modified => {
            let to = t.status().next(TaskEvent::Requeue)?;
            let governance = json!({
                "decision_id": d.id, "outcome": d.status, "conditions": d.conditions,
                "rationale": d.rationale,
            });
            if !store::release_task(conn, &t, d.id, &d.modifications, &governance).await? {
                return Err(ApiError::conflict(
                    "conflict",
                    "the task changed meanwhile; try again",
                ));
            }
            tasks::enqueue(
                conn,
                run.workspace_id,
                run.id,
                t.id,
                run.priority,
                OffsetDateTime::now_utc(),
            )
            .await?;
            tasks::record(
                conn,
                Change::of(
                    &t,
                    to,
                    kind::TASK_APPROVED,
                    actor,
                    None,
                    json!({ "key": t.task_key, "decision_id": d.id, "outcome": d.status, "modifications": d.modifications }),
                ),
            )
            .await?;
            missions::notify_wake(conn).await?;
        }
        DecisionStatus::Rejected => {
            let to = t.status().next(TaskEvent::Skip)?;
            let reason = format!(
                "governance decision {} rejected it: {}",
                d.id,
                d.rationale.as_deref().unwrap_or("no rationale given")
            );
            if !store::skip_task(conn, &t, &reason).await? {
                return Err(ApiError::conflict(
                    "conflict",
                    "the task changed meanwhile; try again",
                ));
            }
            tasks::record(
                conn,
                Change::of(
                    &t,
                    to,
                    core_kind::TASK_SKIPPED,
                    actor,
                    None,
                    json!({ "key": t.task_key, "decision_id": d.id, "reason": reason }),
                ),
            )
            .await?;
            replan_trigger(conn, run, &t, d, &reason, actor, replan_with_llm).await?;
        }
        DecisionStatus::Deferred | DecisionStatus::Pending => {}
    }
    Ok(())
}

/// A rejected task is a replan trigger (BDI: only explicit triggers remake a
/// plan). The trigger is always recorded; with an LLM planner the remaining
/// work is planned again around the rejected task, otherwise dependents go
/// on without it and the mission finishes as usual.
async fn replan_trigger(
    conn: &mut PgConnection,
    run: &mut MissionRow,
    t: &TaskRow,
    d: &DecisionRow,
    reason: &str,
    actor: &str,
    replan_with_llm: bool,
) -> Result<(), ApiError> {
    let replanning = replan_with_llm && run.status == "executing";
    events::append(
        conn,
        run.workspace_id,
        events::NewEvent {
            run_id: run.id,
            task_id: Some(t.id),
            attempt_id: None,
            kind: kind::REPLAN_TRIGGERED,
            actor,
            payload: json!({ "key": t.task_key, "decision_id": d.id, "reason": reason, "trigger": "governance_rejected", "replanning": replanning }),
        },
    )
    .await?;
    if replanning {
        // Missions are intentions: logged with the strategy's verdict (a
        // person's rejection outranks every commitment).
        crate::bdi::missions::consult(
            conn,
            run,
            crate::bdi::rules::MissionTrigger::GovernanceRejected,
            actor,
        )
        .await?;
        let feedback = format!(
            "A stakeholder rejected task '{}' ({}): {}. Replan the remaining work without it.",
            t.task_key,
            t.title,
            d.rationale.as_deref().unwrap_or("no rationale given")
        );
        return crate::missions::replan::replan_around(conn, run, &feedback, actor).await;
    }
    tasks::promote_ready(
        conn,
        run.workspace_id,
        run.id,
        Some(t.id),
        run.priority,
        actor,
    )
    .await?;
    crate::engine::reports::finish_mission_if_done(conn, run, actor)
        .await
        .map_err(|e| ApiError::Unexpected(anyhow::anyhow!("{e}")))?;
    missions::notify_wake(conn).await?;
    Ok(())
}

// ------------------------------------------------------------ engine hooks

/// The governance gate before dispatch: a task the profile requires approval
/// for moves to `awaiting_approval`, out of the queue, with a decision in the
/// queue. Returns true when it was held. Runs in the claim's transaction,
/// which holds the task's queue row and its mission.
pub async fn gate_task(
    conn: &mut PgConnection,
    profile: &ProfileRow,
    facts: &TaskFacts,
    task: &TaskRow,
    actor: &str,
) -> anyhow::Result<bool> {
    if facts.approved_by_decision.is_some() {
        return Ok(false);
    }
    let action = Action {
        category: facts
            .action_category
            .clone()
            .unwrap_or_else(|| OPERATIONAL.into()),
        estimated_cost: Some(task.estimated_cost),
        headcount: facts.headcount,
        exceptional: facts.exceptional,
    };
    let result = check(Some(&profile.rules()), &action);
    if !result.requires_approval {
        return Ok(false);
    }
    let next = task.status().next(TaskEvent::AwaitApproval)?;
    let mut checked = serde_json::to_value(&result).unwrap_or_default();
    checked["exceptional"] = json!(action.exceptional);
    let decision = store::insert_decision(
        conn,
        NewDecision {
            id: Uuid::new_v4(),
            workspace_id: task.workspace_id,
            requester: actor,
            requester_agent_id: None,
            mission_id: Some(task.run_id),
            task_id: Some(task.id),
            category: &result.category,
            description: &format!(
                "Dispatch task '{}' ({}): {}",
                task.task_key, task.title, result.reason
            ),
            impact_analysis: &json!({ "financial": format!("estimated cost {}", task.estimated_cost) }),
            options: &json!([
                {"label": "Approve", "description": "Dispatch the task as planned"},
                {"label": "Reject", "description": "Skip the task and replan around it"},
            ]),
            recommended_option: None,
            estimated_cost: Some(task.estimated_cost),
            headcount: facts
                .headcount
                .map(|h| i32::try_from(h).unwrap_or(i32::MAX)),
            governance_check: &checked,
        },
    )
    .await?;
    let Some(decision) = decision else {
        // Another claim gated it already (unique open decision per task).
        return Ok(true);
    };
    anyhow::ensure!(
        store::hold_task(conn, task).await?,
        "task {} changed while claimed",
        task.id
    );
    tasks::record(
        conn,
        Change::of(
            task,
            next,
            kind::TASK_AWAITING_APPROVAL,
            actor,
            None,
            json!({ "key": task.task_key, "decision_id": decision.id, "reason": result.reason, "relevant_threshold": result.relevant_threshold }),
        ),
    )
    .await?;
    decision_event(conn, &decision, kind::DECISION_REQUESTED, actor).await?;
    Ok(true)
}

/// Re-checks deferred decisions that are due, oldest first: each goes back
/// to `pending` with a fresh check, or is approved when the current profile
/// no longer requires approval. Returns how many were re-checked.
pub async fn recheck_deferred(pool: &PgPool, actor: &str) -> anyhow::Result<usize> {
    let due = store::due_rechecks(pool, 32).await?;
    let mut done = 0;
    for (workspace_id, id, mission_id) in due {
        let mut tx = pool.begin().await?;
        let mut run = match mission_id {
            Some(m) => missions::lock(&mut tx, workspace_id, m).await?,
            None => None,
        };
        let Some(d) = store::lock_due_decision(&mut tx, workspace_id, id).await? else {
            continue;
        };
        let profile = store::profile(&mut tx, workspace_id).await?;
        let result = check(profile.map(|p| p.rules()).as_ref(), &stored_action(&d));
        if result.requires_approval {
            let next = d.status().recheck()?;
            let mut checked = serde_json::to_value(&result).unwrap_or_default();
            checked["exceptional"] = d
                .governance_check
                .get("exceptional")
                .cloned()
                .unwrap_or(json!(false));
            let row = store::reopen_decision(&mut tx, &d, next.as_str(), &checked)
                .await?
                .ok_or_else(|| anyhow::anyhow!("decision {id} changed while locked"))?;
            decision_event(&mut tx, &row, kind::DECISION_RECHECKED, actor).await?;
        } else {
            let reason = format!("re-checked: {}", result.reason);
            settle(
                &mut tx,
                run.as_mut(),
                &d,
                Settlement {
                    outcome: Outcome::Approved,
                    rationale: Some(&reason),
                    conditions: json!([]),
                    modifications: json!({}),
                    recheck_at: None,
                },
                actor,
                false,
            )
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        }
        tx.commit().await?;
        done += 1;
    }
    Ok(done)
}
