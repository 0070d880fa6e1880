//! Choosing and validating a plan for a mission: an explicit plan, a similar
//! success case of the plan library, the best HTN method above the match
//! threshold (skipping methods whose plans have the shape of a similar failed
//! case), an LLM (asynchronously, by the engine), or the documented generic
//! method — and validating whatever comes out against the workspace's agents
//! and the budget.

use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use super::PlanningConfig;
use crate::{
    planning::{
        AgentCapability, Decomposition, MatchOutcome, PLANNER_CASE, PLANNER_GENERIC,
        PLANNER_TEMPLATE, PlanProblem, PlanProvenance, PlanSpec, TemplateLibrary, TemplateScore,
        ValidatedPlan, ValidationContext,
        cases::{self, CaseChoice},
        llm::MethodHint,
        validate_plan,
    },
    store::{agents, plan_cases, templates},
};
use coordinator_core::{
    numbers::human,
    planning::{
        budget_fit::{self, fit_to_budget},
        validate::codes,
    },
};

/// Why no plan could be made for a mission.
#[derive(Debug, thiserror::Error)]
pub enum PlanningError {
    /// The plan fails validation; every problem is listed.
    #[error("{}", invalid_plan_message(.problems))]
    Invalid {
        /// Which planner made it (`explicit`, `template`, …).
        planner: String,
        /// Every problem found.
        problems: Vec<PlanProblem>,
        /// For a plan over its budget: the budget, the plan's cost, the
        /// smallest budget it needs (without its optional tasks) and those tasks.
        budget_advice: Option<Value>,
    },
    /// A matched method could not be decomposed for this goal.
    #[error("method '{template}' could not be decomposed: {reason}")]
    Decomposition {
        /// The method.
        template: String,
        /// Why.
        reason: String,
        /// The decomposition's own detail.
        info: Value,
    },
    /// Every fitting method was tried and no LLM planner is configured.
    #[error(
        "every method that fits this goal was already tried and no LLM planner is configured; submit a plan explicitly or cancel the mission"
    )]
    NoAlternative {
        /// The methods already tried.
        tried: Vec<String>,
    },
    /// The database failed.
    #[error(transparent)]
    Database(#[from] sqlx::Error),
    /// Anything else.
    #[error(transparent)]
    Unexpected(#[from] anyhow::Error),
}

fn invalid_plan_message(problems: &[PlanProblem]) -> String {
    format!(
        "the plan is not valid ({} problem{}): {}",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" },
        problems
            .iter()
            .map(|p| p.message.as_str())
            .collect::<Vec<_>>()
            .join("; ")
    )
}

/// What planning produced.
#[derive(Debug)]
pub enum Planned {
    /// A validated plan, ready to store.
    Ready {
        /// The plan.
        plan: ValidatedPlan,
        /// How it was made.
        provenance: PlanProvenance,
        /// Extra facts for the `plan.created` event (decomposition trace, LLM usage…).
        details: Value,
    },
    /// No method matched and an LLM is configured: the engine plans it.
    NeedsLlm {
        /// The scores that did not reach the threshold.
        match_outcome: MatchOutcome,
    },
}

/// What to plan.
pub struct PlanInput<'a> {
    /// Workspace (its agents and routines).
    pub workspace_id: Uuid,
    /// The goal.
    pub goal: &'a str,
    /// Constraints (method conditions and placeholders read them).
    pub constraints: &'a Value,
    /// Budget the plan must fit.
    pub budget: Option<f64>,
    /// `approve` or `autonomous` (part of the context cases are compared on).
    pub autonomy: &'a str,
    /// A plan given by the caller.
    pub explicit: Option<PlanSpec>,
    /// Methods (and `case:<id>` cases) not to use again (a rejected plan's source).
    pub exclude: &'a [String],
    /// Whether to hand over to the LLM when nothing matches.
    pub allow_llm: bool,
}

/// The workspace's view for validation: its agents' capabilities, plus
/// "anything" when contractors can be hired.
pub async fn capabilities(
    pool: &PgPool,
    cfg: &PlanningConfig,
    workspace_id: Uuid,
) -> Result<Vec<AgentCapability>, PlanningError> {
    let mut caps: Vec<AgentCapability> = agents::capabilities(pool, workspace_id)
        .await?
        .into_iter()
        .map(|(skills, tools)| AgentCapability { skills, tools })
        .collect();
    if cfg.contractors {
        caps.push(AgentCapability::any());
    }
    Ok(caps)
}

/// The built-in methods plus the workspace's saved routines.
pub async fn library(
    pool: &PgPool,
    cfg: &PlanningConfig,
    workspace_id: Uuid,
) -> Result<TemplateLibrary, PlanningError> {
    let routines = templates::routines(pool, workspace_id).await?;
    Ok(if routines.is_empty() {
        (*cfg.library).clone()
    } else {
        (*cfg.library).clone().with_extra(routines)
    })
}

/// Validates a plan from any source; problems become a 422 listing each.
pub fn validate(
    cfg: &PlanningConfig,
    agents: &[AgentCapability],
    budget: Option<f64>,
    plan: PlanSpec,
    planner: &str,
) -> Result<ValidatedPlan, PlanningError> {
    validate_plan(
        plan,
        &ValidationContext {
            rules: &cfg.rules,
            budget,
            agents,
        },
    )
    .map_err(|problems| invalid_plan(planner, &problems))
}

/// The error for an invalid plan (a 422 listing each problem).
pub fn invalid_plan(planner: &str, problems: &[PlanProblem]) -> PlanningError {
    PlanningError::Invalid {
        planner: planner.to_owned(),
        problems: problems.to_vec(),
        budget_advice: None,
    }
}

/// Validates `plan` under `budget`. A plan whose only problem is its cost
/// is, in `approve` autonomy, trimmed of optional tasks (most expensive
/// first) until it fits, and offered for approval with a note saying what
/// was dropped; otherwise the refusal says the smallest budget the plan
/// needs without its optional tasks.
pub fn validate_for_budget(
    cfg: &PlanningConfig,
    agents: &[AgentCapability],
    budget: Option<f64>,
    plan: PlanSpec,
    planner: &str,
    approve: bool,
) -> Result<(ValidatedPlan, Option<String>), PlanningError> {
    let original = plan.clone();
    let err = match validate(cfg, agents, budget, plan, planner) {
        Ok(v) => return Ok((v, None)),
        Err(e) => e,
    };
    let (Some(limit), PlanningError::Invalid { problems, .. }) = (budget, &err) else {
        return Err(err);
    };
    if !problems.iter().all(|p| p.code == codes::OVER_BUDGET) {
        return Err(err);
    }
    let fit = fit_to_budget(&original, limit);
    if approve && let Some((trimmed, dropped)) = &fit.trimmed {
        let v = match validate(cfg, agents, budget, trimmed.clone(), planner) {
            Ok(v) => v,
            Err(e) => {
                let why = Some(e.to_string());
                return Err(over_budget(planner, problems, &original, &fit, limit, why));
            }
        };
        let note = format!(
            "the plan costs {} and the budget is {}: dropped optional task{} {} (the rest costs {}) for approval; raise the budget to run all of it",
            human(fit.plan_cost),
            human(limit),
            if dropped.len() == 1 { "" } else { "s" },
            dropped.join(", "),
            human(budget_fit::cost(trimmed)),
        );
        return Ok((v, Some(note)));
    }
    Err(over_budget(planner, problems, &original, &fit, limit, None))
}

/// The refusal of a plan over its budget, with the smallest budget it needs.
fn over_budget(
    planner: &str,
    problems: &[PlanProblem],
    original: &PlanSpec,
    fit: &coordinator_core::planning::budget_fit::BudgetFit,
    limit: f64,
    trimmed_problems: Option<String>,
) -> PlanningError {
    let optional: Vec<&str> = original
        .tasks
        .iter()
        .filter(|t| t.optional)
        .map(|t| t.id.as_str())
        .collect();
    let advice = match (optional.is_empty(), &fit.trimmed, trimmed_problems) {
        (true, _, _) => format!(
            "every task is required, so the plan needs a budget of at least {}",
            human(fit.minimum_budget)
        ),
        (false, None, _) => format!(
            "even without its optional tasks ({}) it needs a budget of at least {}",
            optional.join(", "),
            human(fit.minimum_budget)
        ),
        (false, Some(_), Some(why)) => format!(
            "without its optional tasks ({}) it would need {}, but that plan is not valid on its own: {why}",
            optional.join(", "),
            human(fit.minimum_budget)
        ),
        (false, Some(_), None) => format!(
            "without its optional tasks ({}) it needs at least {}; in approve mode that plan is offered for approval instead",
            optional.join(", "),
            human(fit.minimum_budget)
        ),
    };
    let problems = problems
        .iter()
        .map(|p| PlanProblem {
            message: format!("{}; {advice}", p.message),
            ..p.clone()
        })
        .collect();
    PlanningError::Invalid {
        planner: planner.to_owned(),
        problems,
        budget_advice: Some(json!({
            "budget": limit,
            "plan_cost": fit.plan_cost,
            "minimum_budget": fit.minimum_budget,
            "optional_tasks": optional,
        })),
    }
}

/// Plans synchronously when it can (explicit, template, generic); says so
/// when the LLM must take over.
pub async fn plan(
    pool: &PgPool,
    cfg: &PlanningConfig,
    input: PlanInput<'_>,
) -> Result<Planned, PlanningError> {
    let agents = capabilities(pool, cfg, input.workspace_id).await?;
    let approve = input.autonomy == "approve";
    if let Some(explicit) = input.explicit {
        let (plan, note) =
            validate_for_budget(cfg, &agents, input.budget, explicit, "explicit", approve)?;
        let mut provenance = PlanProvenance::explicit();
        if let Some(note) = note {
            provenance.reason = format!("{}; {note}", provenance.reason);
        }
        return Ok(Planned::Ready {
            plan,
            provenance,
            details: Value::Null,
        });
    }
    // The plan library first: reuse a similar success, note similar failures.
    let ctx = cases::context_of(input.constraints, input.budget, Some(input.autonomy));
    let stored: Vec<cases::Case> =
        plan_cases::candidates(pool, input.workspace_id, cases::CASE_SCAN_LIMIT)
            .await?
            .into_iter()
            .filter(|c| !input.exclude.contains(&cases::case_key(c.id)))
            .collect();
    let choice = cases::choose(&stored, input.goal, &ctx, cfg.case_threshold);
    let mut case_note = None;
    if let Some(reuse) = &choice.reuse
        && let Some(row) = plan_cases::get(pool, input.workspace_id, reuse.case_id).await?
    {
        match reuse_case(cfg, &agents, &input, &row.to_case(), reuse.score, &choice) {
            Ok(ready) => return Ok(ready),
            // A case that no longer fits (agents or budget changed) is not an
            // error: planning goes on from the methods, and says why.
            Err(note) => case_note = Some(note),
        }
    }

    let library = library(pool, cfg, input.workspace_id).await?;
    let outcome = library.match_goal_with(input.goal, input.constraints, cfg.match_threshold);
    let (chosen, avoided) = choose_method(&library, cfg, &input, &outcome, &choice)?;
    let case_reason = case_reason(&choice, &avoided, case_note.as_deref());
    if let Some((best, decomposition)) = chosen {
        let (plan, budget_note) = validate_for_budget(
            cfg,
            &agents,
            input.budget,
            decomposition.plan,
            PLANNER_TEMPLATE,
            approve,
        )?;
        let runner_up = outcome
            .scores
            .iter()
            .find(|s| s.template != best.template)
            .cloned();
        let provenance = PlanProvenance {
            planner: PLANNER_TEMPLATE,
            template: Some(best.template.clone()),
            reason: format!(
                "goal matched method '{}' with score {:.3} (threshold {:.3}{}){case_reason}",
                best.template,
                best.score,
                cfg.match_threshold,
                if input.exclude.is_empty() {
                    String::new()
                } else {
                    format!("; not reusing {}", input.exclude.join(", "))
                }
            ) + &budget_note.map(|n| format!("; {n}")).unwrap_or_default(),
            match_outcome: Some(outcome),
        };
        let details = json!({ "score": best.score, "runner_up": runner_up, "decomposition": decomposition.trace });
        return Ok(Planned::Ready {
            plan,
            provenance,
            details: with_case_details(details, &choice, &avoided, case_note.as_deref()),
        });
    }
    if input.allow_llm && cfg.llm.is_some() {
        return Ok(Planned::NeedsLlm {
            match_outcome: outcome,
        });
    }
    if input.exclude.contains(&library.generic().name) {
        return Err(PlanningError::NoAlternative {
            tried: input.exclude.to_vec(),
        });
    }
    let (generic, decomposition) = generic_plan(&library, input.goal, input.constraints)?;
    // The generic method is the last resort: used even in a failed case's
    // shape, but the log says so.
    let generic_structure = cases::structure_signature(&decomposition.plan);
    let generic_note = choice
        .negatives
        .iter()
        .find(|n| n.structure == generic_structure)
        .map(|n| {
            format!(
                "; its plan has the structure of failed case {}, but no other method is left",
                n.case_id
            )
        })
        .unwrap_or_default();
    let (plan, budget_note) = validate_for_budget(
        cfg,
        &agents,
        input.budget,
        decomposition.plan,
        PLANNER_GENERIC,
        approve,
    )?;
    let reason = match outcome.scores.first() {
        Some(top) if top.score > 0.0 => format!(
            "no method scored above {:.3} (best was '{}' at {:.3}) and no LLM planner is configured; used the generic research → draft → review method",
            cfg.match_threshold, top.template, top.score
        ),
        _ => "no method shares words with the goal and no LLM planner is configured; used the generic research → draft → review method".into(),
    };
    let budget_note = budget_note.map(|n| format!("; {n}")).unwrap_or_default();
    let reason = format!("{reason}{case_reason}{generic_note}{budget_note}");
    Ok(Planned::Ready {
        plan,
        provenance: PlanProvenance {
            planner: PLANNER_GENERIC,
            template: Some(generic),
            match_outcome: Some(outcome),
            reason,
        },
        details: with_case_details(Value::Null, &choice, &avoided, case_note.as_deref()),
    })
}

/// The generic method (research → draft → review) decomposed for `goal`:
/// the last resort when nothing matches, and the fallback when the LLM
/// planner gives no valid plan. Returns the method's name with it.
pub fn generic_plan(
    library: &TemplateLibrary,
    goal: &str,
    constraints: &Value,
) -> Result<(String, Decomposition), PlanningError> {
    let generic = library.generic().name.clone();
    let decomposition = library
        .decompose(&generic, goal, constraints)
        .map_err(|e| PlanningError::Unexpected(anyhow::anyhow!("generic method: {e}")))?;
    Ok((generic, decomposition))
}

/// Most methods shown to the LLM planner as examples: a few close ones keep
/// the prompt small enough for a model with a 4,096-token context.
pub const EXAMPLE_METHODS: usize = 3;

/// Longest task title quoted in a method's outline.
const OUTLINE_TITLE_BYTES: usize = 60;

/// The [`EXAMPLE_METHODS`] methods closest to `goal` (sharing at least one
/// word with it), each as a one-line outline of its tasks for the model.
pub fn method_hints(
    library: &TemplateLibrary,
    cfg: &PlanningConfig,
    goal: &str,
    constraints: &Value,
) -> Vec<MethodHint> {
    let outcome = library.match_goal_with(goal, constraints, cfg.match_threshold);
    outcome
        .closest(EXAMPLE_METHODS)
        .into_iter()
        // A method that cannot be decomposed for this goal is no example.
        .filter_map(|s| {
            let plan = library.decompose(&s.template, goal, constraints).ok()?.plan;
            Some(MethodHint {
                name: s.template.clone(),
                outline: outline(&plan),
            })
        })
        .collect()
}

/// `id (Title; after a, b); …` for each task of `plan`.
fn outline(plan: &PlanSpec) -> String {
    plan.tasks
        .iter()
        .map(|t| {
            let title = coordinator_llm::truncate_bytes(&t.title, OUTLINE_TITLE_BYTES);
            if t.depends_on.is_empty() {
                format!("{} ({title})", t.id)
            } else {
                format!("{} ({title}; after {})", t.id, t.depends_on.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// A chosen method with its decomposition (if any), and the methods skipped.
type ChosenMethod = (Option<(TemplateScore, Decomposition)>, Vec<Value>);

/// The best method not excluded, among those above the threshold, whose plan
/// does not have the shape of a similar failed case; with the methods
/// skipped for that shape (for the plan's reason and details).
fn choose_method(
    library: &TemplateLibrary,
    cfg: &PlanningConfig,
    input: &PlanInput<'_>,
    outcome: &MatchOutcome,
    choice: &CaseChoice,
) -> Result<ChosenMethod, PlanningError> {
    let mut avoided = Vec::new();
    for candidate in outcome
        .scores
        .iter()
        .filter(|s| s.score >= cfg.match_threshold && s.score > 0.0)
        .filter(|s| !input.exclude.contains(&s.template))
    {
        let decomposition = library
            .decompose(&candidate.template, input.goal, input.constraints)
            .map_err(|e| PlanningError::Decomposition {
                template: candidate.template.clone(),
                reason: e.to_string(),
                info: json!(e.info()),
            })?;
        let structure = cases::structure_signature(&decomposition.plan);
        if let Some(negative) = choice.negatives.iter().find(|n| n.structure == structure) {
            avoided.push(json!({
                "template": candidate.template,
                "negative_case": negative.case_id,
                "similarity": negative.score,
            }));
            continue;
        }
        return Ok((Some((candidate.clone(), decomposition)), avoided));
    }
    Ok((None, avoided))
}

/// Plans from a success case: its plan, adapted to the new goal and
/// revalidated; `Err` says why it cannot be used (for the provenance).
fn reuse_case(
    cfg: &PlanningConfig,
    agents: &[AgentCapability],
    input: &PlanInput<'_>,
    case: &cases::Case,
    score: f64,
    choice: &CaseChoice,
) -> Result<Planned, String> {
    let spec: PlanSpec = serde_json::from_value(case.plan.clone()).map_err(|e| {
        format!(
            "case {} (similarity {score:.3}) has an unreadable plan ({e})",
            case.id
        )
    })?;
    let (adapted, adaptations) = cases::adapt(spec, &case.goal, input.goal);
    let plan = validate(cfg, agents, input.budget, adapted, PLANNER_CASE).map_err(|e| {
        format!(
            "case {} (similarity {score:.3}) no longer validates: {e}",
            case.id
        )
    })?;
    let negatives = if choice.negatives.is_empty() {
        String::new()
    } else {
        format!(
            "; similar failed cases consulted: {}",
            case_ids(&choice.negatives)
        )
    };
    Ok(Planned::Ready {
        plan,
        provenance: PlanProvenance {
            planner: PLANNER_CASE,
            template: Some(cases::case_key(case.id)),
            match_outcome: None,
            reason: format!(
                "goal matched plan-library case {} with similarity {score:.3} (threshold {:.3}); reused its plan, revalidated{negatives}",
                case.id, cfg.case_threshold
            ),
        },
        details: json!({
            "source_case": case.id,
            "source_goal": case.goal,
            "similarity": score,
            "case_threshold": cfg.case_threshold,
            "adaptations": adaptations,
            "negative_cases": choice.negatives,
            "distrusted_cases": choice.distrusted,
        }),
    })
}

/// Comma-separated case ids.
fn case_ids(list: &[cases::ScoredCase]) -> String {
    list.iter()
        .map(|c| c.case_id.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What the plan library contributed to a method-made plan, for its reason
/// ("" when it had nothing to say).
fn case_reason(choice: &CaseChoice, avoided: &[Value], case_note: Option<&str>) -> String {
    let mut parts = Vec::new();
    if let Some(note) = case_note {
        parts.push(note.to_owned());
    }
    for a in avoided {
        parts.push(format!(
            "skipped method {} (its plan has the structure of failed case {})",
            a["template"], a["negative_case"]
        ));
    }
    if !choice.negatives.is_empty() {
        parts.push(format!(
            "similar failed cases consulted: {}",
            case_ids(&choice.negatives)
        ));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!("; {}", parts.join("; "))
    }
}

/// Adds the plan library's findings to a plan's details when there are any,
/// so the `plan.created` event shows which cases were consulted.
fn with_case_details(
    details: Value,
    choice: &CaseChoice,
    avoided: &[Value],
    case_note: Option<&str>,
) -> Value {
    if choice.negatives.is_empty() && avoided.is_empty() && case_note.is_none() {
        return details;
    }
    let mut map = match details {
        Value::Object(map) => map,
        Value::Null => serde_json::Map::new(),
        other => {
            let mut map = serde_json::Map::new();
            map.insert("details".into(), other);
            map
        }
    };
    map.insert("negative_cases".into(), json!(choice.negatives));
    map.insert("avoided_methods".into(), json!(avoided));
    if let Some(note) = case_note {
        map.insert("case_not_reused".into(), json!(note));
    }
    Value::Object(map)
}
