//! Planning core: plan types, an HTN method library with lexical goal matching,
//! decomposition and DAG validation.
//!
//! All of it is pure (no I/O, no async, no database), so it can be tested in
//! isolation; the LLM planner client that uses it lives in the service
//! (`coordinator_service::planning::llm`) and takes the validator as a callback.
//!
//! - [`spec`]: [`PlanSpec`], [`TaskSpec`], [`Criterion`], the plan wire format.
//! - [`htn`]: [`Method`]s as data and [`htn::decompose`], which expands compound tasks
//!   (`review_cycle`, `research_phase`, ...) until every task is primitive.
//! - [`templates`]: the built-in methods (JSON under `templates/`), saved routines
//!   ([`PlanTemplate`]) and [`TemplateLibrary`].
//! - [`matching`]: TF-IDF cosine matching of a goal against the root methods.
//! - [`validate`]: [`validate_plan`], which reports every problem with stable codes
//!   and derives execution order, critical path and total cost.
//! - [`cases`]: the plan library (case-based reasoning): similarity of a goal and
//!   context to finished missions, plan structure signatures, lessons, and the
//!   choice of a case to reuse and of negative cases to avoid.
//!
//! Entry points: [`plan_for_goal`] (match, then decompose; respects constraints),
//! [`match_only`] (so the caller can try an LLM planner before the generic method),
//! [`instantiate_generic`], and the constraint-free [`plan_from_templates`].

pub mod budget_fit;
pub mod cases;
pub mod constraint_keys;
pub mod discovered;
pub mod htn;
pub mod matching;
pub mod spec;
pub mod templates;
pub mod validate;

use serde::Serialize;
use serde_json::Value;

pub use htn::{
    CompoundRef, Condition, Decomposition, DecompositionError, DecompositionErrorInfo,
    DecompositionTrace, Expansion, MAX_DECOMPOSITION_DEPTH, MISSION_TASK, Method, Subtask,
};
pub use matching::{Candidate, DEFAULT_MATCH_THRESHOLD, MatchOutcome, TemplateScore};
pub use spec::{Criterion, PlanSpec, TaskSpec};
pub use templates::{
    GENERIC_TEMPLATE, PlanTemplate, TemplateLibrary, parse_methods, routine_from_plan,
};
pub use validate::{
    AgentCapability, PlanProblem, ValidatedPlan, ValidationContext, ValidationRules, validate_plan,
};

/// `PlanProvenance::planner` for a plan decomposed from a matched method.
pub const PLANNER_TEMPLATE: &str = "template";
/// `PlanProvenance::planner` for a plan from the generic fallback method.
pub const PLANNER_GENERIC: &str = "generic";
/// `PlanProvenance::planner` for a plan submitted as-is by the caller.
pub const PLANNER_EXPLICIT: &str = "explicit";
/// `PlanProvenance::planner` for a plan reused from a success case of the plan library.
pub const PLANNER_CASE: &str = "case";

/// How a plan came to be, recorded on the mission's planning event.
///
/// Deliberately just these four fields: callers build it with struct literals. The
/// chosen method's score and the runner-up are in `match_outcome`; the decomposition
/// summary is in `reason`, and structured in [`GoalPlan::trace`].
#[derive(Debug, Clone, Serialize)]
pub struct PlanProvenance {
    /// `"template"`, `"generic"`, `"explicit"`, `"case"` or `"llm"`.
    pub planner: &'static str,
    /// Name of the root method the plan was decomposed from, if any; `case:<id>` for a reused case.
    pub template: Option<String>,
    /// The matching scores behind the choice (best, runner-up, all), when matching ran.
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

/// A plan from [`plan_for_goal_traced`], with how it was decomposed.
#[derive(Debug, Clone, Serialize)]
pub struct GoalPlan {
    /// The decomposed plan, not yet validated.
    pub plan: PlanSpec,
    /// How the plan came to be.
    pub provenance: PlanProvenance,
    /// Which methods expanded which compound tasks; `None` only if a broken custom
    /// generic method was replaced by the built-in one.
    pub trace: Option<DecompositionTrace>,
}

/// Scores `goal` against the root methods whose conditions hold on `constraints`, without planning.
pub fn match_only(
    library: &TemplateLibrary,
    goal: &str,
    constraints: &Value,
    threshold: f64,
) -> MatchOutcome {
    library.match_goal_with(goal, constraints, threshold)
}

/// Matches `goal`, decomposes the best method above `threshold`, else uses the generic method.
///
/// `Err` only when the matched method cannot be decomposed (a broken custom method,
/// say); the caller decides whether to fall back, as [`plan_from_templates`] does.
pub fn plan_for_goal(
    library: &TemplateLibrary,
    goal: &str,
    constraints: &Value,
    threshold: f64,
) -> Result<(PlanSpec, PlanProvenance), DecompositionError> {
    plan_for_goal_traced(library, goal, constraints, threshold).map(|g| (g.plan, g.provenance))
}

/// [`plan_for_goal`], also returning the structured decomposition trace.
pub fn plan_for_goal_traced(
    library: &TemplateLibrary,
    goal: &str,
    constraints: &Value,
    threshold: f64,
) -> Result<GoalPlan, DecompositionError> {
    let outcome = match_only(library, goal, constraints, threshold);
    let Some(best) = outcome.best.clone() else {
        let reason = no_match_reason(&outcome, threshold);
        return Ok(generic_plan(
            library,
            goal,
            constraints,
            Some(outcome),
            reason,
        ));
    };
    let decomposition = library.decompose(&best.template, goal, constraints)?;
    let runner_up = match &outcome.runner_up {
        Some(r) => format!("; runner-up '{}' at {:.3}", r.template, r.score),
        None => String::new(),
    };
    let words = outcome
        .candidates
        .first()
        .filter(|c| c.method == best.template && !c.matched_words.is_empty())
        .map(|c| format!(" on the words {}", quoted(&c.matched_words)))
        .unwrap_or_default();
    let reason = format!(
        "goal matched method '{}' with score {:.3}{words} (threshold {threshold:.3}{runner_up}); {}",
        best.template,
        best.score,
        trace_summary(&decomposition.trace),
    );
    Ok(GoalPlan {
        plan: decomposition.plan,
        provenance: PlanProvenance {
            planner: PLANNER_TEMPLATE,
            template: Some(best.template),
            match_outcome: Some(outcome),
            reason,
        },
        trace: Some(decomposition.trace),
    })
}

/// The generic research -> draft -> review plan for `goal`, without matching.
pub fn instantiate_generic(library: &TemplateLibrary, goal: &str) -> (PlanSpec, PlanProvenance) {
    let planned = generic_plan(
        library,
        goal,
        &Value::Null,
        None,
        "used the generic research -> draft -> review method".to_owned(),
    );
    (planned.plan, planned.provenance)
}

/// Produce a plan for a goal with no constraints: best method above threshold, else the generic method.
///
/// Never fails: if the matched method cannot be decomposed, the generic method is
/// used and the error (code and message) is given in the provenance's reason.
pub fn plan_from_templates(
    library: &TemplateLibrary,
    goal: &str,
    threshold: f64,
) -> (PlanSpec, PlanProvenance) {
    let constraints = Value::Null;
    match plan_for_goal(library, goal, &constraints, threshold) {
        Ok(planned) => planned,
        Err(error) => {
            let outcome = match_only(library, goal, &constraints, threshold);
            let method = outcome
                .best
                .as_ref()
                .map_or("?", |b| b.template.as_str())
                .to_owned();
            let reason = format!(
                "goal matched method '{method}', but it could not be decomposed \
                 ({}: {error}); used the generic research -> draft -> review method",
                error.code()
            );
            let planned = generic_plan(library, goal, &constraints, Some(outcome), reason);
            (planned.plan, planned.provenance)
        }
    }
}

/// One line on how a plan was decomposed, e.g. "decomposed into 8 tasks, depth 1: review = review_cycle via review-cycle-gated".
fn trace_summary(trace: &DecompositionTrace) -> String {
    let mut summary = format!(
        "decomposed into {} tasks, depth {}",
        trace.task_count, trace.depth
    );
    if !trace.expansions.is_empty() {
        let steps: Vec<String> = trace.expansions.iter().map(ToString::to_string).collect();
        summary.push_str(": ");
        summary.push_str(&steps.join(", "));
    }
    summary
}

/// Explains why no method was chosen.
/// `'a', 'b', 'c'`.
fn quoted(words: &[String]) -> String {
    words
        .iter()
        .map(|w| format!("'{w}'"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn no_match_reason(outcome: &MatchOutcome, threshold: f64) -> String {
    match outcome.scores.first() {
        Some(top) if top.score > 0.0 => format!(
            "no method scored above threshold {threshold:.3} (best was '{}' at {:.3}); \
             used the generic research -> draft -> review method",
            top.template, top.score
        ),
        _ => "no method shares any words with the goal; \
              used the generic research -> draft -> review method"
            .to_owned(),
    }
}

/// Decomposes the library's generic method, or the built-in one if a replacement is broken.
fn generic_plan(
    library: &TemplateLibrary,
    goal: &str,
    constraints: &Value,
    match_outcome: Option<MatchOutcome>,
    reason: String,
) -> GoalPlan {
    let generic = library.generic();
    let (plan, trace, reason) = match htn::decompose(library.methods(), generic, goal, constraints)
    {
        Ok(d) => (d.plan, Some(d.trace), reason),
        Err(error) => {
            // The shipped generic method is all primitive and unconditional (a test
            // checks), so it always decomposes; only a custom replacement can fail.
            let builtin = TemplateLibrary::builtin();
            let fallback = htn::decompose(builtin.methods(), builtin.generic(), goal, &Value::Null)
                .map(|d| d.plan)
                .unwrap_or_else(|e| panic!("built-in generic method must decompose: {e}"));
            let reason = format!(
                "{reason}; the custom generic method failed ({}: {error}), so the built-in one was used",
                error.code()
            );
            (fallback, None, reason)
        }
    };
    GoalPlan {
        plan,
        provenance: PlanProvenance {
            planner: PLANNER_GENERIC,
            template: Some(generic.name.clone()),
            match_outcome,
            reason,
        },
        trace,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fleet() -> Vec<AgentCapability> {
        [
            "research", "analysis", "writing", "review", "coding", "testing", "planning",
        ]
        .iter()
        .map(|s| AgentCapability {
            skills: vec![(*s).to_owned()],
            tools: vec![],
        })
        .collect()
    }

    fn assert_valid(plan: &PlanSpec) {
        let fleet = fleet();
        let rules = ValidationRules::default();
        let ctx = ValidationContext {
            rules: &rules,
            budget: Some(2.0),
            agents: &fleet,
        };
        if let Err(problems) = validate_plan(plan.clone(), &ctx) {
            panic!("plan does not validate: {problems:#?}");
        }
    }

    #[test]
    fn matched_goal_uses_the_method() {
        let library = TemplateLibrary::builtin();
        let goal = "Implement rate limiting in the API and get it reviewed";
        let (plan, provenance) = plan_from_templates(&library, goal, DEFAULT_MATCH_THRESHOLD);
        assert_eq!(provenance.planner, PLANNER_TEMPLATE);
        assert_eq!(
            provenance.template.as_deref(),
            Some("code-change-with-review")
        );
        assert!(provenance.reason.contains("code-change-with-review"));
        let outcome = provenance.match_outcome.as_ref().unwrap();
        let best = outcome.best.as_ref().unwrap();
        assert_eq!(best.template, "code-change-with-review");
        assert!(best.score > DEFAULT_MATCH_THRESHOLD);
        let runner_up = outcome.runner_up.as_ref().unwrap();
        assert!(
            provenance.reason.contains(&runner_up.template),
            "{}",
            provenance.reason
        );
        assert!(
            provenance
                .reason
                .contains("depth 1: review = code_review_cycle via code-review-standard"),
            "{}",
            provenance.reason
        );
        assert_eq!(
            plan,
            library
                .decompose("code-change-with-review", goal, &json!({}))
                .unwrap()
                .plan
        );
        assert!(plan.tasks[0].description.contains(goal));
        assert_valid(&plan);
    }

    #[test]
    fn plan_for_goal_respects_constraints() {
        let library = TemplateLibrary::builtin();
        let goal = "Research the state of solid-state batteries and write a report";
        let (plain, _) =
            plan_for_goal(&library, goal, &json!({}), DEFAULT_MATCH_THRESHOLD).unwrap();
        let constraints = json!({ "depth": "deep", "approver": "Dana" });
        let (deep, provenance) =
            plan_for_goal(&library, goal, &constraints, DEFAULT_MATCH_THRESHOLD).unwrap();
        assert_eq!(provenance.template.as_deref(), Some("research-report"));
        let traced =
            plan_for_goal_traced(&library, goal, &constraints, DEFAULT_MATCH_THRESHOLD).unwrap();
        assert_eq!(traced.plan, deep);
        let trace = traced.trace.unwrap();
        let methods: Vec<&str> = trace.expansions.iter().map(|x| x.method.as_str()).collect();
        assert_eq!(
            methods,
            [
                "research-phase-deep",
                "review-cycle-gated",
                "quality-gate-sign-off"
            ]
        );
        assert_eq!(trace.depth, 2);
        assert!(
            provenance.reason.contains("depth 2"),
            "{}",
            provenance.reason
        );
        assert!(deep.tasks.len() > plain.tasks.len());
        assert_valid(&plain);
        assert_valid(&deep);
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
        assert_eq!(plan.tasks[0].title, "Research");
        assert_eq!((plan.clone(), provenance.planner), {
            let (p, prov) = instantiate_generic(&library, "asdf qwerty");
            (p, prov.planner)
        });
        assert_valid(&plan);
    }

    #[test]
    fn match_only_lets_the_caller_decide_before_falling_back() {
        let library = TemplateLibrary::builtin();
        let miss = match_only(
            &library,
            "Plan my sister's wedding",
            &json!({}),
            DEFAULT_MATCH_THRESHOLD,
        );
        assert_eq!(miss.best, None);
        let hit = match_only(
            &library,
            "Write a postmortem for last night's database outage",
            &json!({ "domain": "software" }),
            DEFAULT_MATCH_THRESHOLD,
        );
        assert_eq!(hit.best.unwrap().template, "incident-postmortem");
        let (plan, provenance) = instantiate_generic(&library, "Plan my sister's wedding");
        assert_eq!(provenance.planner, PLANNER_GENERIC);
        assert!(provenance.match_outcome.is_none());
        assert_eq!(plan.tasks.len(), 3);
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

    /// A library whose best match for "rotate the keys" cannot be decomposed.
    fn broken_library() -> TemplateLibrary {
        let broken: Method = serde_json::from_value(json!({
            "name": "key-rotation",
            "task": "mission",
            "description": "Rotate the encryption keys",
            "keywords": ["rotate", "keys", "rotation"],
            "subtasks": [
                { "id": "a", "title": "A {goal}", "task_type": "coding" },
                { "id": "b", "compound": "no_such_task", "depends_on": ["a"] }
            ]
        }))
        .unwrap();
        TemplateLibrary::builtin().with_methods(vec![broken])
    }

    #[test]
    fn undecomposable_method_is_an_error_or_a_recorded_fallback() {
        let library = broken_library();
        let goal = "Rotate the encryption keys";
        let err = plan_for_goal(&library, goal, &json!({}), DEFAULT_MATCH_THRESHOLD).unwrap_err();
        assert_eq!(err.code(), htn::codes::NO_APPLICABLE_METHOD);
        assert!(err.to_string().contains("no_such_task"), "{err}");

        let (plan, provenance) = plan_from_templates(&library, goal, DEFAULT_MATCH_THRESHOLD);
        assert_eq!(provenance.planner, PLANNER_GENERIC);
        assert!(
            provenance.reason.contains("key-rotation"),
            "{}",
            provenance.reason
        );
        assert!(
            provenance.reason.contains("no_applicable_method"),
            "{}",
            provenance.reason
        );
        assert_eq!(plan.tasks.len(), 3);
    }

    #[test]
    fn broken_custom_generic_falls_back_to_the_builtin_one() {
        let mut generic = TemplateLibrary::builtin().generic().clone();
        generic.subtasks.push(Subtask::Compound(CompoundRef {
            id: "x".into(),
            compound: "nowhere".into(),
            depends_on: vec![],
        }));
        let library = TemplateLibrary::builtin().with_methods(vec![generic]);
        let (plan, provenance) = instantiate_generic(&library, "G");
        assert_eq!(
            plan,
            instantiate_generic(&TemplateLibrary::builtin(), "G").0
        );
        assert!(
            provenance.reason.contains("built-in"),
            "{}",
            provenance.reason
        );
    }

    #[test]
    fn planning_is_deterministic() {
        let goal = "Compare Postgres, MySQL and SQLite for our embedded use case";
        let constraints = json!({ "depth": "deep" });
        let run = || {
            let library = TemplateLibrary::builtin();
            let (plan, provenance) =
                plan_for_goal(&library, goal, &constraints, DEFAULT_MATCH_THRESHOLD).unwrap();
            (plan, serde_json::to_string(&provenance).unwrap())
        };
        let first = run();
        assert_eq!(first, run());
        assert!(first.1.contains("vendor-evaluation"));
    }

    #[test]
    fn provenance_serializes_for_the_event_log() {
        let library = TemplateLibrary::builtin();
        let (_, provenance) = plan_from_templates(&library, "asdf", DEFAULT_MATCH_THRESHOLD);
        let value = serde_json::to_value(&provenance).unwrap();
        assert_eq!(value["planner"], "generic");
        assert!(value["match_outcome"]["scores"].is_array());
        assert_eq!(value.as_object().unwrap().len(), 4);
        let (_, provenance) = plan_from_templates(
            &library,
            "Which logging framework should we choose: log4j vs logback?",
            DEFAULT_MATCH_THRESHOLD,
        );
        let value = serde_json::to_value(&provenance).unwrap();
        assert_eq!(value["template"], "vendor-evaluation");
        let outcome = &value["match_outcome"];
        assert!(outcome["best"]["score"].as_f64().unwrap() > DEFAULT_MATCH_THRESHOLD);
        assert!(outcome["runner_up"]["template"].is_string());
        assert!(outcome["skipped"].is_array());
        let traced = plan_for_goal_traced(
            &library,
            "Which logging framework should we choose: log4j vs logback?",
            &json!({}),
            DEFAULT_MATCH_THRESHOLD,
        )
        .unwrap();
        let value = serde_json::to_value(&traced).unwrap();
        assert_eq!(value["trace"]["method"], "vendor-evaluation");
        assert!(value["trace"]["expansions"].is_array());
        let explicit = serde_json::to_value(PlanProvenance::explicit()).unwrap();
        assert_eq!(explicit["planner"], "explicit");
        assert!(explicit["template"].is_null());
    }
}
