//! Choosing and validating a plan for a mission: an explicit plan, the best
//! HTN method above the match threshold, an LLM (asynchronously, by the
//! engine), or the documented generic method — and validating whatever comes
//! out against the workspace's agents and the budget.

use serde_json::{Value, json};
use sqlx::PgPool;
use uuid::Uuid;

use super::PlanningConfig;
use crate::{
    error::ApiError,
    planning::{
        AgentCapability, MatchOutcome, PLANNER_GENERIC, PLANNER_TEMPLATE, PlanProblem,
        PlanProvenance, PlanSpec, TemplateLibrary, ValidatedPlan, ValidationContext, validate_plan,
    },
    store::{agents, templates},
};

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
    /// A plan given by the caller.
    pub explicit: Option<PlanSpec>,
    /// Methods not to use again (a rejected plan's method).
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
) -> Result<Vec<AgentCapability>, ApiError> {
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
) -> Result<TemplateLibrary, ApiError> {
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
) -> Result<ValidatedPlan, ApiError> {
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

/// The 422 for an invalid plan.
pub fn invalid_plan(planner: &str, problems: &[PlanProblem]) -> ApiError {
    ApiError::Unprocessable {
        code: "plan_invalid",
        message: format!(
            "the plan is not valid ({} problem{}): {}",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" },
            problems
                .iter()
                .map(|p| p.message.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        ),
        details: json!({ "planner": planner, "problems": problems }),
    }
}

/// Plans synchronously when it can (explicit, template, generic); says so
/// when the LLM must take over.
pub async fn plan(
    pool: &PgPool,
    cfg: &PlanningConfig,
    input: PlanInput<'_>,
) -> Result<Planned, ApiError> {
    let agents = capabilities(pool, cfg, input.workspace_id).await?;
    if let Some(explicit) = input.explicit {
        let plan = validate(cfg, &agents, input.budget, explicit, "explicit")?;
        return Ok(Planned::Ready {
            plan,
            provenance: PlanProvenance::explicit(),
            details: Value::Null,
        });
    }
    let library = library(pool, cfg, input.workspace_id).await?;
    let outcome = library.match_goal_with(input.goal, input.constraints, cfg.match_threshold);
    // The best method not excluded, among those above the threshold.
    let chosen = outcome
        .scores
        .iter()
        .filter(|s| s.score >= cfg.match_threshold && s.score > 0.0)
        .find(|s| !input.exclude.contains(&s.template))
        .cloned();
    if let Some(best) = chosen {
        let decomposition = library
            .decompose(&best.template, input.goal, input.constraints)
            .map_err(|e| ApiError::Unprocessable {
                code: "plan_decomposition_failed",
                message: format!("method '{}' could not be decomposed: {e}", best.template),
                details: json!(e.info()),
            })?;
        let plan = validate(
            cfg,
            &agents,
            input.budget,
            decomposition.plan,
            PLANNER_TEMPLATE,
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
                "goal matched method '{}' with score {:.3} (threshold {:.3}{})",
                best.template,
                best.score,
                cfg.match_threshold,
                if input.exclude.is_empty() {
                    String::new()
                } else {
                    format!("; not reusing {}", input.exclude.join(", "))
                }
            ),
            match_outcome: Some(outcome),
        };
        return Ok(Planned::Ready {
            plan,
            provenance,
            details: json!({ "score": best.score, "runner_up": runner_up, "decomposition": decomposition.trace }),
        });
    }
    if input.allow_llm && cfg.llm.is_some() {
        return Ok(Planned::NeedsLlm {
            match_outcome: outcome,
        });
    }
    let generic = library.generic().name.clone();
    if input.exclude.contains(&generic) {
        return Err(ApiError::Unprocessable {
            code: "no_alternative_plan",
            message: "every method that fits this goal was already tried and no LLM planner is configured; submit a plan explicitly or cancel the mission".into(),
            details: json!({ "tried": input.exclude }),
        });
    }
    let decomposition = library
        .decompose(&generic, input.goal, input.constraints)
        .map_err(|e| ApiError::Unexpected(anyhow::anyhow!("generic method: {e}")))?;
    let plan = validate(
        cfg,
        &agents,
        input.budget,
        decomposition.plan,
        PLANNER_GENERIC,
    )?;
    let reason = match outcome.scores.first() {
        Some(top) if top.score > 0.0 => format!(
            "no method scored above {:.3} (best was '{}' at {:.3}) and no LLM planner is configured; used the generic research → draft → review method",
            cfg.match_threshold, top.template, top.score
        ),
        _ => "no method shares words with the goal and no LLM planner is configured; used the generic research → draft → review method".into(),
    };
    Ok(Planned::Ready {
        plan,
        provenance: PlanProvenance {
            planner: PLANNER_GENERIC,
            template: Some(generic),
            match_outcome: Some(outcome),
            reason,
        },
        details: Value::Null,
    })
}
