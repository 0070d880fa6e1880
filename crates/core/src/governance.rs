//! Governance: the stakeholder profile, the governance check, and the
//! decision queue (request → review → resolve), wired into mission dispatch.
//!
//! The check (seed §11.3) compares an action against the workspace's
//! stakeholder profile. Numeric thresholds (budget, hiring) are scaled by the
//! risk tolerance (conservative ×0.7, moderate ×1.0, aggressive ×1.5) and are
//! hard limits: an auto-approved category does not bypass them. Then, in
//! order: an action an agent flags as exceptional needs approval; an
//! auto-approved category does not; a `strategy` action needs approval when
//! the profile says `strategy: always` (except for `exception-based`
//! stakeholders, who only see flagged exceptions and limits); a `hands-on`
//! stakeholder reviews everything else too.
//!
//! A decision is `pending` until a stakeholder resolves it `approved`,
//! `rejected`, `modified` (final) or `deferred`; a deferred decision is
//! re-checked at its `recheck_at` and goes back to `pending` (or is approved
//! when the rules no longer require approval).

use crate::numbers::human;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::domain::{IllegalTransition, text_enum};
use crate::invalid::Invalid;

/// How much a stakeholder wants to review (seed §11.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecisionStyle {
    /// Reviews every decision that is not auto-approved.
    HandsOn,
    /// Reviews strategic decisions and those over a threshold.
    StrategicOnly,
    /// Reviews only flagged exceptions and those over a numeric threshold.
    ExceptionBased,
}

text_enum!(DecisionStyle {
    HandsOn => "hands-on",
    StrategicOnly => "strategic-only",
    ExceptionBased => "exception-based",
});

/// How much autonomy agents get: scales the numeric thresholds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RiskTolerance {
    /// Thresholds ×0.7: more decisions need approval.
    Conservative,
    /// Thresholds as configured.
    Moderate,
    /// Thresholds ×1.5: agents have more autonomy.
    Aggressive,
}

text_enum!(RiskTolerance {
    Conservative => "conservative",
    Moderate => "moderate",
    Aggressive => "aggressive",
});

impl RiskTolerance {
    /// The factor applied to every numeric threshold.
    pub fn modifier(self) -> f64 {
        match self {
            RiskTolerance::Conservative => 0.7,
            RiskTolerance::Moderate => 1.0,
            RiskTolerance::Aggressive => 1.5,
        }
    }
}

/// Whether strategic actions always need approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrategyRule {
    /// Every `strategy` action needs approval.
    Always,
    /// Strategy actions follow the other rules only.
    Never,
}

text_enum!(StrategyRule {
    Always => "always",
    Never => "never",
});

/// The category of a budget action.
pub const BUDGET: &str = "budget";
/// The category of a hiring action.
pub const HIRING: &str = "hiring";
/// The category of a strategic action.
pub const STRATEGY: &str = "strategy";
/// The category of an action that declares none.
pub const OPERATIONAL: &str = "operational";

/// The rules a stakeholder profile sets (the pure part of [`ProfileRow`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Rules {
    /// Review style.
    pub decision_style: DecisionStyle,
    /// Threshold modifier.
    pub risk_tolerance: RiskTolerance,
    /// Budget limit per action (before the modifier).
    pub budget_threshold: Option<f64>,
    /// Headcount limit per action (before the modifier).
    pub hiring_threshold: Option<i32>,
    /// Strategic actions always reviewed?
    pub strategy: StrategyRule,
    /// Categories that need no review (numeric limits still apply).
    pub auto_approve_categories: Vec<String>,
}

/// An action about to be taken.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Action {
    /// `budget`, `hiring`, `strategy`, `operational` or any custom category.
    pub category: String,
    /// What it would cost.
    pub estimated_cost: Option<f64>,
    /// How many people it would hire.
    pub headcount: Option<i64>,
    /// The agent flags it as exceptional.
    pub exceptional: bool,
}

/// A threshold that decided a check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Threshold {
    /// `budget`, `hiring` or `strategy`.
    pub category: String,
    /// The threshold after the risk modifier (`null` for `strategy: always`).
    pub value: Option<f64>,
    /// The configured threshold.
    pub base: Option<f64>,
    /// The risk-tolerance modifier applied.
    pub modifier: f64,
}

/// The answer of a governance check (seed §11.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct CheckResult {
    /// Whether the action must go through the decision queue.
    pub requires_approval: bool,
    /// Why, for a person.
    pub reason: String,
    /// The category the action was judged as.
    pub category: String,
    /// The threshold that decided it, if one did.
    pub relevant_threshold: Option<Threshold>,
    /// `Submit to decision queue` or `Proceed`.
    pub recommended_action: String,
    /// The category is one the stakeholder auto-approves.
    pub auto_approved: bool,
    /// The profile's risk tolerance (`null` without a profile).
    pub risk_tolerance: Option<RiskTolerance>,
    /// The profile's decision style (`null` without a profile).
    pub decision_style: Option<DecisionStyle>,
}

/// Normalises a category name: trimmed, lower case, `-`/space as `_`.
pub fn normalize_category(c: &str) -> String {
    let c = c.trim().to_lowercase().replace(['-', ' '], "_");
    if c.is_empty() { OPERATIONAL.into() } else { c }
}

/// Judges `action` against `rules` (`None`: no profile, nothing needs approval).
pub fn check(rules: Option<&Rules>, action: &Action) -> CheckResult {
    let category = normalize_category(&action.category);
    let Some(rules) = rules else {
        return verdict(
            false,
            "no stakeholder profile is set: nothing requires approval".into(),
            category,
            None,
            false,
            None,
        );
    };
    let m = rules.risk_tolerance.modifier();
    let done = |required: bool, reason: String, threshold: Option<Threshold>, auto: bool| {
        let mut v = verdict(
            required,
            reason,
            category.clone(),
            threshold,
            auto,
            Some(rules),
        );
        v.auto_approved = auto;
        v
    };
    if let (Some(cost), Some(base)) = (action.estimated_cost, rules.budget_threshold) {
        let limit = base * m;
        if cost > limit {
            return done(
                true,
                format!(
                    "Budget {} exceeds threshold of {} ({} × {} for {} risk tolerance)",
                    human(cost),
                    human(limit),
                    human(base),
                    human(m),
                    rules.risk_tolerance
                ),
                Some(Threshold {
                    category: BUDGET.into(),
                    value: Some(limit),
                    base: Some(base),
                    modifier: m,
                }),
                false,
            );
        }
    }
    if let (Some(n), Some(base)) = (action.headcount, rules.hiring_threshold) {
        let limit = f64::from(base) * m;
        if n as f64 > limit {
            return done(
                true,
                format!(
                    "Headcount {n} exceeds hiring threshold of {} ({base} × {})",
                    human(limit),
                    human(m)
                ),
                Some(Threshold {
                    category: HIRING.into(),
                    value: Some(limit),
                    base: Some(f64::from(base)),
                    modifier: m,
                }),
                false,
            );
        }
    }
    if action.exceptional {
        return done(
            true,
            "the action is flagged as exceptional".into(),
            None,
            false,
        );
    }
    if rules
        .auto_approve_categories
        .iter()
        .any(|c| normalize_category(c) == category)
    {
        return done(
            false,
            format!("category '{category}' is auto-approved"),
            None,
            true,
        );
    }
    if category == STRATEGY
        && rules.strategy == StrategyRule::Always
        && rules.decision_style != DecisionStyle::ExceptionBased
    {
        return done(
            true,
            "strategic decisions always require approval".into(),
            Some(Threshold {
                category: STRATEGY.into(),
                value: None,
                base: None,
                modifier: m,
            }),
            false,
        );
    }
    if rules.decision_style == DecisionStyle::HandsOn {
        return done(
            true,
            "a hands-on stakeholder reviews every decision that is not auto-approved".into(),
            None,
            false,
        );
    }
    done(
        false,
        "within every threshold of the stakeholder profile".into(),
        None,
        false,
    )
}

fn verdict(
    required: bool,
    reason: String,
    category: String,
    threshold: Option<Threshold>,
    auto: bool,
    rules: Option<&Rules>,
) -> CheckResult {
    CheckResult {
        requires_approval: required,
        reason,
        category,
        relevant_threshold: threshold,
        recommended_action: if required {
            "Submit to decision queue".into()
        } else {
            "Proceed".into()
        },
        auto_approved: auto,
        risk_tolerance: rules.map(|r| r.risk_tolerance),
        decision_style: rules.map(|r| r.decision_style),
    }
}

/// Where a decision is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecisionStatus {
    /// Waiting for a stakeholder.
    Pending,
    /// The action proceeds as proposed (final).
    Approved,
    /// The action is denied (final).
    Rejected,
    /// Postponed: re-checked later.
    Deferred,
    /// Approved with modifications (final).
    Modified,
}

text_enum!(DecisionStatus {
    Pending => "pending",
    Approved => "approved",
    Rejected => "rejected",
    Deferred => "deferred",
    Modified => "modified",
});

/// How a stakeholder resolves a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Proceed as proposed.
    Approved,
    /// Deny; the agent must find alternatives.
    Rejected,
    /// Postpone; re-checked later.
    Deferred,
    /// Proceed with the modifications given.
    Modified,
}

text_enum!(Outcome as "DecisionOutcome", {
    Approved => "approved",
    Rejected => "rejected",
    Deferred => "deferred",
    Modified => "modified",
});

impl Outcome {
    /// The status it leaves the decision in.
    pub fn status(self) -> DecisionStatus {
        match self {
            Outcome::Approved => DecisionStatus::Approved,
            Outcome::Rejected => DecisionStatus::Rejected,
            Outcome::Deferred => DecisionStatus::Deferred,
            Outcome::Modified => DecisionStatus::Modified,
        }
    }
}

/// What resolving does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolution {
    /// Move to this status.
    Apply(DecisionStatus),
    /// Already resolved this way: nothing changes (an idempotent retry).
    AlreadyDone,
}

impl DecisionStatus {
    /// True once nothing can change it.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            DecisionStatus::Approved | DecisionStatus::Rejected | DecisionStatus::Modified
        )
    }

    /// The effect of resolving with `outcome`: open decisions take any
    /// outcome, a repeat of the same outcome changes nothing, a different
    /// outcome on a final decision is refused.
    pub fn resolve(self, outcome: Outcome) -> Result<Resolution, IllegalTransition> {
        if self == outcome.status() && (self.is_final() || self == DecisionStatus::Deferred) {
            return Ok(Resolution::AlreadyDone);
        }
        match self {
            DecisionStatus::Pending | DecisionStatus::Deferred => {
                Ok(Resolution::Apply(outcome.status()))
            }
            _ => Err(IllegalTransition {
                entity: "decision",
                from: self.as_str(),
                event: outcome.as_str(),
            }),
        }
    }

    /// A deferred decision comes back for review.
    pub fn recheck(self) -> Result<DecisionStatus, IllegalTransition> {
        match self {
            DecisionStatus::Deferred => Ok(DecisionStatus::Pending),
            _ => Err(IllegalTransition {
                entity: "decision",
                from: self.as_str(),
                event: "recheck",
            }),
        }
    }
}

/// What the dispatcher knows about a ready task beyond its row.
#[derive(Debug, Clone)]
pub struct TaskFacts {
    /// Declared category (`action_category`, else `inputs.action_category`).
    pub action_category: Option<String>,
    /// `inputs.headcount`, if a number.
    pub headcount: Option<i64>,
    /// `inputs.exceptional`.
    pub exceptional: bool,
    /// Set once a decision let it go.
    pub approved_by_decision: Option<Uuid>,
    /// Effective allocation: `score` or `tender`.
    pub allocation: String,
    /// The mission's tender window.
    pub tender_window_ms: i32,
}

/// What a decision is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecisionTopic {
    /// An action judged against the profile: the dispatch gate, or an agent's request.
    Governance,
    /// An agent blocked inside its task (seed 004's `Decision(topic=blocker)`):
    /// its task waits, and goes back to the queue with the resolution.
    Blocker,
}

text_enum!(DecisionTopic {
    Governance => "governance",
    Blocker => "blocker",
});

/// The option a resolution chose: the one `named` (a label of `labels`),
/// or for `approved` and `modified` the `recommended` one; `rejected` and
/// `deferred` choose none, so naming one with them is refused.
pub fn chosen_option(
    outcome: Outcome,
    named: Option<&str>,
    recommended: Option<&str>,
    labels: &[&str],
) -> Result<Option<String>, Invalid> {
    match (outcome, named) {
        (Outcome::Rejected | Outcome::Deferred, Some(_)) => Err(Invalid::new(
            "option",
            "an option is only chosen with outcome 'approved' or 'modified'",
        )),
        (Outcome::Rejected | Outcome::Deferred, None) => Ok(None),
        (_, Some(label)) if labels.contains(&label) => Ok(Some(label.to_owned())),
        (_, Some(_)) => Err(Invalid::new(
            "option",
            format!(
                "option must be the label of one of the decision's options: {}",
                labels.join(", ")
            ),
        )),
        (_, None) => Ok(recommended.map(str::to_owned)),
    }
}

/// What a resolved blocker tells the agent whose task waited for it: the
/// next dispatch's `feedback`.
pub fn blocker_feedback(
    description: &str,
    status: DecisionStatus,
    chosen: Option<&str>,
    rationale: Option<&str>,
    conditions: &[String],
) -> String {
    let mut out = format!("Your blocker \"{description}\" was resolved: {status}.");
    match (status, chosen) {
        (DecisionStatus::Rejected, _) => {
            out.push_str(" None of your options is accepted: find another way.");
        }
        (_, Some(label)) => out.push_str(&format!(" Chosen option: \"{label}\".")),
        (_, None) => out.push_str(" No option was named: proceed as you proposed."),
    }
    if let Some(r) = rationale.filter(|r| !r.trim().is_empty()) {
        out.push_str(&format!(" Rationale: {}.", r.trim().trim_end_matches('.')));
    }
    if !conditions.is_empty() {
        out.push_str(&format!(" Conditions: {}.", conditions.join("; ")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(style: DecisionStyle, risk: RiskTolerance) -> Rules {
        Rules {
            decision_style: style,
            risk_tolerance: risk,
            budget_threshold: Some(10_000.0),
            hiring_threshold: Some(3),
            strategy: StrategyRule::Always,
            auto_approve_categories: vec!["operational_routine".into(), "minor_procurement".into()],
        }
    }

    fn spend(category: &str, cost: f64) -> Action {
        Action {
            category: category.into(),
            estimated_cost: Some(cost),
            ..Action::default()
        }
    }

    #[test]
    fn risk_modifiers_scale_the_budget_threshold() {
        use RiskTolerance::*;
        let cases = [
            (Conservative, 6_999.0, false),
            (Conservative, 7_001.0, true),
            (Moderate, 9_999.0, false),
            (Moderate, 10_001.0, true),
            (Aggressive, 14_999.0, false),
            (Aggressive, 15_001.0, true),
        ];
        for (risk, cost, required) in cases {
            let r = check(
                Some(&rules(DecisionStyle::StrategicOnly, risk)),
                &spend(BUDGET, cost),
            );
            assert_eq!(r.requires_approval, required, "{risk} {cost}: {r:?}");
            if required {
                let t = r.relevant_threshold.unwrap();
                assert_eq!(t.category, BUDGET);
                assert!((t.value.unwrap() - 10_000.0 * risk.modifier()).abs() < 1e-9);
            }
        }
        assert_eq!(RiskTolerance::Conservative.modifier(), 0.7);
        assert_eq!(RiskTolerance::Moderate.modifier(), 1.0);
        assert_eq!(RiskTolerance::Aggressive.modifier(), 1.5);
    }

    #[test]
    fn hiring_threshold_with_modifier() {
        let a = Action {
            category: HIRING.into(),
            headcount: Some(4),
            ..Action::default()
        };
        let moderate = rules(DecisionStyle::StrategicOnly, RiskTolerance::Moderate);
        assert!(check(Some(&moderate), &a).requires_approval);
        let aggressive = rules(DecisionStyle::StrategicOnly, RiskTolerance::Aggressive);
        assert!(!check(Some(&aggressive), &a).requires_approval, "4 ≤ 4.5");
    }

    #[test]
    fn auto_approve_skips_review_but_not_limits() {
        let r = rules(DecisionStyle::HandsOn, RiskTolerance::Moderate);
        let ok = check(Some(&r), &spend("Operational-Routine", 50.0));
        assert!(!ok.requires_approval && ok.auto_approved, "{ok:?}");
        let over = check(Some(&r), &spend("minor_procurement", 20_000.0));
        assert!(over.requires_approval, "a limit is a hard limit");
        // Hands-on reviews any other category.
        assert!(check(Some(&r), &spend("marketing", 1.0)).requires_approval);
    }

    #[test]
    fn styles_and_strategy() {
        let strategic = rules(DecisionStyle::StrategicOnly, RiskTolerance::Moderate);
        assert!(check(Some(&strategic), &spend(STRATEGY, 0.0)).requires_approval);
        assert!(!check(Some(&strategic), &spend("marketing", 1.0)).requires_approval);
        let exception = rules(DecisionStyle::ExceptionBased, RiskTolerance::Moderate);
        assert!(!check(Some(&exception), &spend(STRATEGY, 0.0)).requires_approval);
        let flagged = Action {
            exceptional: true,
            ..spend("marketing", 1.0)
        };
        assert!(check(Some(&exception), &flagged).requires_approval);
        assert!(!check(None, &flagged).requires_approval, "no profile");
    }

    #[test]
    fn decision_lifecycle() {
        use DecisionStatus as S;
        use Outcome as O;
        for o in Outcome::ALL {
            assert_eq!(S::Pending.resolve(*o), Ok(Resolution::Apply(o.status())));
        }
        assert_eq!(
            S::Deferred.resolve(O::Approved),
            Ok(Resolution::Apply(S::Approved))
        );
        assert_eq!(
            S::Deferred.resolve(O::Deferred),
            Ok(Resolution::AlreadyDone)
        );
        assert_eq!(
            S::Approved.resolve(O::Approved),
            Ok(Resolution::AlreadyDone)
        );
        assert!(S::Approved.resolve(O::Rejected).is_err());
        assert!(S::Modified.resolve(O::Approved).is_err());
        assert!(S::Rejected.resolve(O::Deferred).is_err());
        assert_eq!(S::Deferred.recheck(), Ok(S::Pending));
        assert!(S::Pending.recheck().is_err());
    }
    #[test]
    fn a_resolution_chooses_a_named_or_the_recommended_option() {
        let labels = ["A", "B"];
        assert_eq!(
            chosen_option(Outcome::Approved, None, Some("B"), &labels),
            Ok(Some("B".into()))
        );
        assert_eq!(
            chosen_option(Outcome::Modified, Some("A"), Some("B"), &labels),
            Ok(Some("A".into()))
        );
        assert_eq!(
            chosen_option(Outcome::Approved, None, None, &labels),
            Ok(None)
        );
        assert_eq!(
            chosen_option(Outcome::Approved, Some("C"), None, &labels)
                .unwrap_err()
                .field,
            "option"
        );
        assert!(chosen_option(Outcome::Rejected, Some("A"), None, &labels).is_err());
        assert_eq!(
            chosen_option(Outcome::Rejected, None, Some("A"), &labels),
            Ok(None)
        );
    }

    #[test]
    fn blocker_feedback_names_the_outcome_and_the_option() {
        let f = blocker_feedback(
            "Which API?",
            DecisionStatus::Approved,
            Some("REST"),
            Some("simpler."),
            &["log calls".into()],
        );
        assert_eq!(
            f,
            "Your blocker \"Which API?\" was resolved: approved. Chosen option: \"REST\". \
             Rationale: simpler. Conditions: log calls."
        );
        let f = blocker_feedback("Q", DecisionStatus::Rejected, None, None, &[]);
        assert!(
            f.contains("rejected") && f.contains("find another way"),
            "{f}"
        );
    }
}
