//! Pure planning core: plan types, a template library with lexical goal matching,
//! and DAG validation.
//!
//! Nothing here does I/O, async work or database access, so it can be tested in
//! isolation and reused by the HTTP layer, the dispatcher and offline tools alike.
//!
//! - [`spec`]: [`PlanSpec`], [`TaskSpec`], [`Criterion`], the plan wire format.
//! - [`templates`]: built-in plan templates (JSON under `templates/`) and [`TemplateLibrary`].
//! - [`matching`]: TF-IDF cosine matching of a goal against template descriptions.
//! - [`validate`]: [`validate_plan`], which reports every problem with stable codes
//!   and derives execution order, critical path and total cost.
//!
//! [`plan_from_templates`] is the one entry point that turns a goal into a plan.

pub mod matching;
pub mod spec;
pub mod templates;
pub mod validate;

use serde::Serialize;

pub use matching::{DEFAULT_MATCH_THRESHOLD, MatchOutcome, TemplateScore};
pub use spec::{Criterion, PlanSpec, TaskSpec};
pub use templates::{GENERIC_TEMPLATE, PlanTemplate, TemplateLibrary};
pub use validate::{
    AgentCapability, PlanProblem, ValidatedPlan, ValidationContext, ValidationRules, validate_plan,
};

/// `PlanProvenance::planner` for a plan instantiated from a matched template.
pub const PLANNER_TEMPLATE: &str = "template";
/// `PlanProvenance::planner` for a plan from the generic fallback method.
pub const PLANNER_GENERIC: &str = "generic";
/// `PlanProvenance::planner` for a plan submitted as-is by the caller.
pub const PLANNER_EXPLICIT: &str = "explicit";

/// How a plan came to be, recorded on the mission's planning event.
#[derive(Debug, Clone, Serialize)]
pub struct PlanProvenance {
    /// `"template"`, `"generic"` or `"explicit"`.
    pub planner: &'static str,
    /// Name of the template the plan was instantiated from, if any.
    pub template: Option<String>,
    /// The matching scores behind the choice, when matching ran.
    pub match_outcome: Option<MatchOutcome>,
    /// One sentence explaining the choice, for people reading the event log.
    pub reason: String,
}

impl PlanProvenance {
    /// Provenance for a plan the caller submitted explicitly.
    pub fn explicit() -> Self {
        PlanProvenance {
            planner: PLANNER_EXPLICIT,
            template: None,
            match_outcome: None,
            reason: "plan submitted explicitly by the caller".to_owned(),
        }
    }
}

/// Produce a plan for a goal from the template library: best template above threshold, else the generic method.
pub fn plan_from_templates(
    library: &TemplateLibrary,
    goal: &str,
    threshold: f64,
) -> (PlanSpec, PlanProvenance) {
    let outcome = library.match_goal(goal, threshold);
    let chosen = outcome
        .best
        .as_ref()
        .and_then(|best| library.get(&best.template).map(|t| (t, best.score)));
    if let Some((template, score)) = chosen {
        let provenance = PlanProvenance {
            planner: PLANNER_TEMPLATE,
            template: Some(template.name.clone()),
            reason: format!(
                "goal matched template '{}' with score {score:.3} (threshold {threshold:.3})",
                template.name
            ),
            match_outcome: Some(outcome),
        };
        return (template.instantiate(goal), provenance);
    }

    let generic = library.generic();
    let reason = match outcome.scores.first() {
        Some(top) if top.score > 0.0 => format!(
            "no template scored above threshold {threshold:.3} (best was '{}' at {:.3}); \
             used the generic research -> draft -> review method",
            top.template, top.score
        ),
        _ => "no template shares any words with the goal; \
              used the generic research -> draft -> review method"
            .to_owned(),
    };
    let provenance = PlanProvenance {
        planner: PLANNER_GENERIC,
        template: Some(generic.name.clone()),
        match_outcome: Some(outcome),
        reason,
    };
    (generic.instantiate(goal), provenance)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matched_goal_uses_the_template() {
        let library = TemplateLibrary::builtin();
        let goal = "Implement rate limiting in the API and get it reviewed";
        let (plan, provenance) = plan_from_templates(&library, goal, DEFAULT_MATCH_THRESHOLD);
        assert_eq!(provenance.planner, PLANNER_TEMPLATE);
        assert_eq!(provenance.template.as_deref(), Some("build-and-review"));
        assert!(provenance.reason.contains("build-and-review"));
        let outcome = provenance.match_outcome.as_ref().unwrap();
        assert_eq!(outcome.best.as_ref().unwrap().template, "build-and-review");
        assert_eq!(
            plan,
            library.get("build-and-review").unwrap().instantiate(goal)
        );
        assert!(plan.tasks[0].title.contains(goal));
    }

    #[test]
    fn unmatched_goal_falls_back_to_generic() {
        let library = TemplateLibrary::builtin();
        let (plan, provenance) =
            plan_from_templates(&library, "asdf qwerty", DEFAULT_MATCH_THRESHOLD);
        assert_eq!(provenance.planner, PLANNER_GENERIC);
        assert_eq!(provenance.template.as_deref(), Some(GENERIC_TEMPLATE));
        assert!(provenance.reason.contains("generic"));
        assert_eq!(provenance.match_outcome.as_ref().unwrap().best, None);
        assert_eq!(plan.tasks.len(), 3);
        assert_eq!(plan.tasks[0].title, "Research: asdf qwerty");
    }

    #[test]
    fn threshold_above_one_always_falls_back() {
        let library = TemplateLibrary::builtin();
        let goal = "Research solar panels and write a report";
        let (_, provenance) = plan_from_templates(&library, goal, 1.0);
        assert_eq!(provenance.planner, PLANNER_GENERIC);
        assert!(
            provenance.reason.contains("research-report"),
            "{}",
            provenance.reason
        );
    }

    #[test]
    fn provenance_serializes_for_the_event_log() {
        let library = TemplateLibrary::builtin();
        let (_, provenance) = plan_from_templates(&library, "asdf", DEFAULT_MATCH_THRESHOLD);
        let value = serde_json::to_value(&provenance).unwrap();
        assert_eq!(value["planner"], "generic");
        assert!(value["match_outcome"]["scores"].is_array());
        let explicit = serde_json::to_value(PlanProvenance::explicit()).unwrap();
        assert_eq!(explicit["planner"], "explicit");
        assert!(explicit["template"].is_null());
    }
}
